/*
 * The project .env as a home for secret values: checked before init writes
 * anything, made ignored by git in a way git honours (and verified), and
 * judged afterwards by doctor; see onboard.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/git.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"

#define GITIGNORE_HEADER "# agentstack: local secrets — never commit"
/* Where the values can go instead (init/adopt and secret set spell it differently). */
#define ELSEWHERE                                                                                  \
    "the OS keychain, or the file store (init/adopt --secrets keychain|file, secret set --store "  \
    "file)"

/* env_file relative to the project root: ".agentstack/.env" or ".env". */
static const char *env_rel(const struct bundle_paths *p)
{
    size_t n = strlen(p->project_root);
    if (strncmp(p->env_file, p->project_root, n) == 0 && p->env_file[n] == '/')
        return p->env_file + n + 1;
    return NULL;
}

/* Why git does not ignore a path, from the deciding rule (if any). */
static void why_not(const struct git_ignore *g, const char *rel, strbuf *out)
{
    const char *pat = g->rule.len ? strrchr(g->rule.buf, ':') : NULL;
    if (pat && pat[1] == '!')
        sb_addf(out, "the rule %s re-includes it", g->rule.buf);
    else if (g->rule.len)
        sb_addf(out, "the rule %s decides it", g->rule.buf);
    else
        sb_addf(out, "git tracks it, or a rule keeps it un-ignored (see git check-ignore -v %s)",
                rel);
}

int onb_dotenv_check(const struct bundle_paths *p, struct onb_dotenv_plan *pl, struct as_err *err)
{
    *pl = (struct onb_dotenv_plan){0};
    const char *rel = env_rel(p);
    if (!rel)
        return as_err_set(err, "%s is not inside the project %s", p->env_file, p->project_root);
    snprintf(pl->rule, sizeof pl->rule, "/%s", rel);
    struct stat st;
    /* A symlinked manifest dir puts the values wherever it points, and no
     * ignore rule on the link's path covers the file behind it. */
    if (strcmp(p->manifest_dir, p->project_root) != 0 && lstat(p->manifest_dir, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            char *r = realpath(p->manifest_dir, NULL);
            as_err_set(err,
                       "%s is a symlink (to %s) — refusing to put secret values behind it: git's "
                       "ignore rules do not follow a symlink, so %s/.env would not be ignored",
                       p->manifest_dir, r ? r : "nowhere", r ? r : p->manifest_dir);
            free(r);
            as_err_hint(err, "make .agentstack a real directory, or keep the values out of the "
                             "project: " ELSEWHERE);
            return -1;
        }
        if (!S_ISDIR(st.st_mode))
            return as_err_set(err, "%s is not a directory", p->manifest_dir);
    }
    if (lstat(p->env_file, &st) == 0 && !S_ISREG(st.st_mode)) {
        as_err_set(err, "%s is %s — refusing to write secret values through it", p->env_file,
                   S_ISLNK(st.st_mode) ? "a symlink" : "not a regular file");
        as_err_hint(err, "replace it with a regular file, or use " ELSEWHERE);
        return -1;
    }
    struct git_ignore g;
    if (git_ignore_check(p->project_root, rel, NULL, &g, err) < 0)
        return -1;
    pl->in_work_tree = g.in_work_tree;
    pl->ignored = g.ignored;
    if (!g.in_work_tree || g.ignored) {
        git_ignore_free(&g);
        return 0;
    }
    char *gi = xasprintf("%s/.gitignore", p->project_root);
    int rc = 0;
    if (lstat(gi, &st) == 0 && !S_ISREG(st.st_mode)) {
        rc = as_err_set(err,
                        "%s would not be ignored by git, and %s is %s, so no rule can be added "
                        "to it — refusing to put secret values there; nothing was written",
                        p->env_file, gi, S_ISLNK(st.st_mode) ? "a symlink" : "not a regular file");
        as_err_hint(err, "add %s to the project's ignore rules by hand, or use " ELSEWHERE,
                    pl->rule);
        goto out;
    }
    struct git_ignore w;
    if (git_ignore_check(p->project_root, rel, pl->rule, &w, err) < 0) {
        rc = -1;
        goto out;
    }
    pl->add_rule = w.ignored;
    git_ignore_free(&w);
    if (!pl->add_rule) {
        strbuf why = SB_INIT;
        why_not(&g, rel, &why);
        rc = as_err_set(err,
                        "%s would not be ignored by git (%s), not even with %s in %s — "
                        "refusing to put secret values where `git add` would commit them; "
                        "nothing was written",
                        p->env_file, why.buf, pl->rule, gi);
        as_err_hint(err, "remove that rule (or git rm --cached the file), or keep the values "
                         "out of the project: " ELSEWHERE);
        sb_release(&why);
    }
out:
    free(gi);
    git_ignore_free(&g);
    return rc;
}

int onb_dotenv_ignore(const struct bundle_paths *p, const struct onb_dotenv_plan *pl,
                      struct as_err *err)
{
    if (!pl->add_rule)
        return 0;
    char *gi = xasprintf("%s/.gitignore", p->project_root);
    strbuf old = SB_INIT, text = SB_INIT;
    bool existed = fs_exists(gi);
    int rc = -1;
    if (existed && fs_read_file(gi, SEC_DOTENV_MAX_BYTES, 1, &old, err) < 0)
        goto out;
    sb_add(&text, old.buf, old.len);
    if (text.len && text.buf[text.len - 1] != '\n')
        sb_addc(&text, '\n');
    sb_addf(&text, GITIGNORE_HEADER "\n%s\n", pl->rule);
    struct fs_write_opts o = {
        .mode = 0644, .symlinks = FS_SYMLINK_REFUSE, .contain_root = p->project_root};
    if (fs_write_atomic(gi, text.buf, text.len, &o, err) < 0)
        goto out;
    /* Verified with the rule in place: a .env is never written on a guess. */
    struct git_ignore g;
    if (git_ignore_check(p->project_root, pl->rule + 1, NULL, &g, err) < 0 || !g.ignored) {
        if (!as_err_isset(err))
            as_err_set(err,
                       "%s is still not ignored by git after adding %s to %s — nothing "
                       "was stored there",
                       p->env_file, pl->rule, gi);
        struct as_err e2 = AS_ERR_INIT;
        if (existed)
            fs_write_atomic(gi, old.buf, old.len, &o, &e2);
        else
            unlink(gi);
        git_ignore_free(&g);
        goto out;
    }
    git_ignore_free(&g);
    rc = 0;
out:
    free(gi);
    sb_release(&old);
    sb_release(&text);
    return rc;
}

int onb_dotenv_exposed(const char *env_file, size_t *values, strbuf *why, struct as_err *err)
{
    *values = 0;
    struct stat st;
    if (lstat(env_file, &st) < 0 || !S_ISREG(st.st_mode))
        return 0; /* absent; a symlink or special file is never read as a store */
    strvec names = STRVEC_INIT;
    if (sec_dotenv_names(env_file, &names, err) < 0)
        return -1;
    *values = names.n;
    strvec_clear(&names);
    if (!*values)
        return 0;
    /* Ask git about the file where it really is: through a symlinked
     * directory, git sees only the real path. */
    char *real = realpath(env_file, NULL);
    if (!real)
        return as_err_errno(err, "%s", env_file);
    char *slash = strrchr(real, '/');
    *slash = '\0';
    const char *dir = real[0] ? real : "/";
    struct git_ignore g;
    int rc = git_ignore_check(dir, slash + 1, NULL, &g, err);
    if (rc == 0 && g.in_work_tree && !g.ignored) {
        why_not(&g, slash + 1, why);
        rc = 1;
    }
    git_ignore_free(&g);
    free(real);
    return rc;
}
