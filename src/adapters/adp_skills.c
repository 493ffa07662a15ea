/* skills — placing a toolset's skills in each CLI's skills directory
 * (`use`; docs/adapters.md): one symlink per skill, pointing at the skill's
 * resolved source. Only links we placed (the ledger's managed_skills) are
 * ever replaced or removed; a user's real directory or foreign link at the
 * same name is left alone and reported. Skill dirs are never recorded in the
 * undo history (the links are derived state). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/skill_md.h"

/* Where the link at path points, or NULL when it is not a symlink. */
static char *link_target(const char *path)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return xstrdup(buf);
}

/* A blocked skill is never delivered: a link of ours at its name goes. */
static void plan_blocked(const struct adp_skills_req *q, struct adp_skills_plan *p,
                         const char *name, const char *dst)
{
    char *cur = link_target(dst);
    if (cur && strvec_find(q->managed, name) >= 0) {
        strvec_pushf(&p->lines, "− unlinking skill '%s' — blocked by your trust decision", name);
        strvec_push(&p->unlink_names, name);
        strvec_push(&p->unlink_prev, cur);
    } else {
        strvec_pushf(&p->lines, "· skill '%s' not placed — blocked by your trust decision", name);
    }
    free(cur);
}

void adp_skills_plan(const struct adp_skills_req *q, struct adp_skills_plan *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < q->names.n; i++) {
        const char *name = q->names.v[i];
        const char *src = q->sources.v[i];
        const char *why = i < q->why.n ? q->why.v[i] : "";
        strbuf dst = SB_INIT;
        sb_addf(&dst, "%s/%s", q->dir, name);
        if (!skill_name_valid(name)) {
            strvec_pushf(&p->lines,
                         "✗ refusing to materialize skill '%s' — names are "
                         "^[a-z0-9][a-z0-9._-]{0,63}$",
                         name);
            p->failed++;
        } else if (!src[0] && strcmp(why, ADP_SKILL_BLOCKED) == 0) {
            plan_blocked(q, p, name, dst.buf);
        } else if (!src[0] && why[0]) {
            strvec_pushf(&p->lines, "✗ skill '%s' not placed — %s", name, why);
            p->failed++;
        } else if (!src[0]) {
            strvec_pushf(&p->lines, "✗ skill '%s' could not be resolved — nothing placed", name);
            p->failed++;
        } else {
            struct stat st;
            char *cur = link_target(dst.buf);
            bool ours = strvec_find(q->managed, name) >= 0;
            if (cur && strcmp(cur, src) == 0) {
                strvec_push(&p->placed, name);
            } else if (lstat(dst.buf, &st) == 0 && !(cur && ours)) {
                strvec_pushf(&p->lines,
                             "↳ skipping skill '%s' — %s is not ours (%s), left "
                             "alone",
                             name, dst.buf,
                             cur ? "a link placed by someone else" : "a real directory or file");
            } else {
                strvec_pushf(&p->lines, "+ linking skill '%s' → %s", name, src);
                strvec_push(&p->link_names, name);
                strvec_push(&p->link_srcs, src);
                strvec_push(&p->link_prev, cur ? cur : "");
                strvec_push(&p->placed, name);
            }
            free(cur);
        }
        sb_release(&dst);
    }
    for (size_t i = 0; i < q->managed->n; i++) {
        const char *name = q->managed->v[i];
        if (strvec_find(&q->names, name) >= 0)
            continue;
        strbuf dst = SB_INIT;
        sb_addf(&dst, "%s/%s", q->dir, name);
        char *cur = link_target(dst.buf);
        if (cur) {
            strvec_pushf(&p->lines, "− unlinking skill '%s'", name);
            strvec_push(&p->unlink_names, name);
            strvec_push(&p->unlink_prev, cur);
        }
        free(cur);
        sb_release(&dst);
    }
    if (!p->lines.n)
        strvec_push(&p->lines, "✓ skills up to date");
}

int adp_skills_write(const struct adp_skills_req *q, const struct adp_skills_plan *p,
                     struct as_err *err)
{
    if (p->link_names.n && fs_mkdirs(q->dir, 0755, err) != 0)
        return -1;
    if (q->contain_root && p->link_names.n && !fs_path_within(q->contain_root, q->dir)) {
        return as_err_set(err, "%s resolves outside the project %s — skills not placed", q->dir,
                          q->contain_root);
    }
    for (size_t i = 0; i < p->unlink_names.n; i++) {
        strbuf dst = SB_INIT;
        sb_addf(&dst, "%s/%s", q->dir, p->unlink_names.v[i]);
        struct stat st;
        if (lstat(dst.buf, &st) == 0 && S_ISLNK(st.st_mode) && unlink(dst.buf) != 0) {
            as_err_errno(err, "cannot unlink %s", dst.buf);
            sb_release(&dst);
            return -1;
        }
        sb_release(&dst);
    }
    for (size_t i = 0; i < p->link_names.n; i++) {
        strbuf dst = SB_INIT, tmp = SB_INIT;
        sb_addf(&dst, "%s/%s", q->dir, p->link_names.v[i]);
        sb_addf(&tmp, "%s/.%s.agentstack-tmp.%ld", q->dir, p->link_names.v[i], (long)getpid());
        unlink(tmp.buf);
        /* A new link replaces ours in one rename: no moment without the skill. */
        int rc = symlink(p->link_srcs.v[i], tmp.buf);
        if (rc == 0)
            rc = rename(tmp.buf, dst.buf);
        if (rc != 0) {
            as_err_errno(err, "cannot link %s", dst.buf);
            unlink(tmp.buf);
            sb_release(&dst);
            sb_release(&tmp);
            return -1;
        }
        sb_release(&dst);
        sb_release(&tmp);
    }
    return 0;
}

void adp_skills_plan_free(struct adp_skills_plan *p)
{
    strvec_clear(&p->lines);
    strvec_clear(&p->placed);
    strvec_clear(&p->link_names);
    strvec_clear(&p->link_srcs);
    strvec_clear(&p->unlink_names);
    strvec_clear(&p->link_prev);
    strvec_clear(&p->unlink_prev);
}

bool adp_skills_changes(const struct adp_skills_plan *p)
{
    return p->link_names.n || p->unlink_names.n;
}
