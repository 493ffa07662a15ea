/* pack — `add skill <source>` (docs/library.md); see pack.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/git.h"
#include "bundle/manifest.h"
#include "bundle/scan.h"
#include "bundle/skill_md.h"
#include "library/git.h"
#include "library/pack.h"
#include "library/txn.h"
#include "trust/trust.h"

void lib_skill_src_free(struct lib_skill_src *s)
{
    free(s->path);
    free(s->url);
    free(s->rev);
    free(s->subpath);
    free(s->skill);
    memset(s, 0, sizeof *s);
}

static bool spelled_path(const char *s)
{
    return strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strncmp(s, "./", 2) == 0 ||
           strncmp(s, "../", 3) == 0 || s[0] == '/' || strncmp(s, "~/", 2) == 0;
}

static bool shorthand_part(const char *s, size_t n)
{
    if (n == 0 || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

/* Credentials never ride in a URL: they would land in the manifest, the
 * lock and the store's recorded URL. */
static int url_credentials(const char *url, struct as_err *err)
{
    const char *a = strstr(url, "://");
    if (!a)
        return 0;
    a += 3;
    size_t auth = strcspn(a, "/");
    const char *at = memchr(a, '@', auth);
    if (!at)
        return 0;
    bool https = strncmp(url, "https://", 8) == 0;
    if (https || memchr(a, ':', (size_t)(at - a))) {
        as_err_set(err, "refusing a git URL with credentials in it — nothing fetched");
        as_err_hint(err, "drop the user:token@ part; use ssh or a git credential helper");
        return -1;
    }
    return 0;
}

/* https://github.com/o/r/tree/<ref>/<sub> and gitlab's /-/tree/<ref>/<sub>. */
static void tree_url(struct lib_skill_src *s)
{
    const char *hosts[] = {"https://github.com/", "https://gitlab.com/"};
    for (size_t h = 0; h < 2; h++) {
        size_t hl = strlen(hosts[h]);
        if (strncmp(s->url, hosts[h], hl) != 0)
            continue;
        char *t = strstr(s->url + hl, "/-/tree/");
        size_t skip = 8;
        if (!t) {
            t = strstr(s->url + hl, "/tree/");
            skip = 6;
        }
        if (!t)
            return;
        char *ref = t + skip;
        char *slash = strchr(ref, '/');
        free(s->rev);
        s->rev = slash ? xstrndup(ref, (size_t)(slash - ref)) : xstrdup(ref);
        if (slash && slash[1]) {
            free(s->subpath);
            s->subpath = xstrdup(slash + 1);
        }
        *t = '\0';
        return;
    }
}

int lib_skill_src_parse(const char *spec, struct lib_skill_src *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    if (!spec[0])
        return as_err_set(err, "add skill needs a source: a path (./dir) or a git URL");
    if (spelled_path(spec)) {
        if (strncmp(spec, "~/", 2) == 0) {
            const char *home = getenv("HOME");
            if (!home || !*home)
                return as_err_set(err, "cannot expand '%s': HOME is not set", spec);
            out->path = xasprintf("%s/%s", home, spec + 2);
        } else {
            out->path = xstrdup(spec);
        }
        return 0;
    }
    const char *s = strncmp(spec, "git:", 4) == 0 ? spec + 4 : spec;
    char *work = xstrdup(s);
    char *hash = strchr(work, '#');
    if (hash) {
        *hash = '\0';
        if (!hash[1]) {
            free(work);
            return as_err_set(err, "'%s': nothing after '#' (the git ref)", spec);
        }
        out->rev = xstrdup(hash + 1);
    }
    if (strncmp(work, "http://", 7) == 0) {
        free(work);
        lib_skill_src_free(out);
        as_err_set(err, "refusing plain http:// for a skill source — nothing fetched");
        as_err_hint(err, "use https:// (or ssh) for '%s'", spec);
        return -1;
    }
    bool remote = strstr(work, "://") || strncmp(work, "git@", 4) == 0;
    size_t wl = strlen(work);
    if (remote || (wl > 4 && strcmp(work + wl - 4, ".git") == 0)) {
        out->url = work;
        if (url_credentials(out->url, err) < 0) {
            lib_skill_src_free(out);
            return -1;
        }
        tree_url(out);
        return 0;
    }
    /* owner/repo[@skill] — GitHub; never a local path. */
    char *at = strrchr(work, '@');
    if (at) {
        *at = '\0';
        out->skill = xstrdup(at + 1);
    }
    const char *slash = strchr(work, '/');
    if (!slash || strchr(slash + 1, '/') || !shorthand_part(work, (size_t)(slash - work)) ||
        !shorthand_part(slash + 1, strlen(slash + 1)) || (out->skill && !out->skill[0])) {
        free(work);
        lib_skill_src_free(out);
        as_err_set(err, "'%s' is not a skill source", spec);
        as_err_hint(err, "give a path (./dir, ../dir, /abs, ~/dir), owner/repo[@skill]"
                         "[#ref] on GitHub, or a full git URL (https://, ssh://, "
                         "file://, git@host:repo)");
        return -1;
    }
    out->url = xasprintf("https://github.com/%s", work);
    free(work);
    return 0;
}

/* ---- finding skills in a checkout ------------------------------------------------------ */

struct find_ctx {
    strvec *found;
};

static int find_cb(const struct fs_entry *e, void *vctx, struct as_err *err)
{
    (void)err;
    struct find_ctx *c = vctx;
    const char *base = strrchr(e->rel, '/');
    base = base ? base + 1 : e->rel;
    if (S_ISDIR(e->mode) && (strcmp(base, ".git") == 0 || e->depth > 3))
        return 1;
    if (S_ISREG(e->mode) && strcmp(base, "SKILL.md") == 0) {
        size_t n = (size_t)(base - e->rel);
        strvec_push_take(c->found, n ? xstrndup(e->rel, n - 1) : xstrdup("."));
    }
    return 0;
}

static int find_skills(const char *root, strvec *out, struct as_err *err)
{
    struct find_ctx c = {out};
    return fs_walk(root, -1, find_cb, &c, err);
}

static bool rel_ok(const char *rel)
{
    return rel[0] != '/' && !strstr(rel, "..") && !strchr(rel, '\\');
}

/* The skill directory inside root: --subpath, else --skill/@skill as
 * skills/<s> or <s>, else the root, else the only skill found. */
static int pick_dir(const char *root, const struct lib_skill_src *s, char **rel, struct as_err *err)
{
    if (s->subpath) {
        if (!rel_ok(s->subpath))
            return as_err_set(err, "subpath '%s' must be relative and '..'-free", s->subpath);
        *rel = xstrdup(s->subpath);
        return 0;
    }
    if (s->skill) {
        for (size_t i = 0; i < 2; i++) {
            char *r = xasprintf("%s%s", i == 0 ? "skills/" : "", s->skill);
            char *md = xasprintf("%s/%s/SKILL.md", root, r);
            bool ok = rel_ok(r) && fs_exists(md);
            free(md);
            if (ok) {
                *rel = r;
                return 0;
            }
            free(r);
        }
        return as_err_set(err,
                          "no skill '%s' in the source (looked for skills/%s/SKILL.md and "
                          "%s/SKILL.md)",
                          s->skill, s->skill, s->skill);
    }
    char *md = xasprintf("%s/SKILL.md", root);
    bool at_root = fs_exists(md);
    free(md);
    if (at_root) {
        *rel = NULL;
        return 0;
    }
    strvec found = STRVEC_INIT;
    if (find_skills(root, &found, err) < 0) {
        strvec_clear(&found);
        return -1;
    }
    int rc = 0;
    if (found.n == 1) {
        *rel = xstrdup(found.v[0]);
    } else if (found.n == 0) {
        rc = as_err_set(err, "the source holds no SKILL.md");
    } else {
        strbuf names = SB_INIT;
        for (size_t i = 0; i < found.n && i < 8; i++)
            sb_addf(&names, "%s%s", i ? ", " : "", found.v[i]);
        rc = as_err_set(err, "the source holds %zu skills (%s%s) — pick one", found.n, names.buf,
                        found.n > 8 ? ", …" : "");
        as_err_hint(err, "pass --skill <name> or --subpath <dir>; --list shows them all");
        sb_release(&names);
    }
    strvec_clear(&found);
    return rc;
}

static int list_skills(const char *root, FILE *f, struct as_err *err)
{
    strvec found = STRVEC_INIT;
    if (find_skills(root, &found, err) < 0) {
        strvec_clear(&found);
        return -1;
    }
    fprintf(f, "Skills in the source (%zu):\n", found.n);
    for (size_t i = 0; i < found.n; i++) {
        char *dir = xasprintf("%s/%s", root, found.v[i]);
        struct skill_md md = {0};
        struct as_err e = AS_ERR_INIT;
        const char *b = strrchr(found.v[i], '/');
        lib_say(f, "  ", strcmp(found.v[i], ".") == 0 ? "(root)" : b ? b + 1 : found.v[i], "");
        lib_say(f, "  ", found.v[i], "");
        if (skill_md_read(dir, &md, &e) == 0 && md.description)
            lib_say(f, "  — ", md.description, "");
        fputc('\n', f);
        skill_md_free(&md);
        free(dir);
    }
    strvec_clear(&found);
    return 0;
}

/* ---- the install ------------------------------------------------------------------------- */

/* Flags and the source's own spelling must agree, never silently pick one. */
static int agree_flags(struct lib_skill_src *src, const struct lib_skill_opts *o,
                       struct as_err *err)
{
    const struct {
        const char *flag, *given;
        char **have;
    } agree[] = {{"--skill", o->skill, &src->skill},
                 {"--rev", o->rev, &src->rev},
                 {"--subpath", o->subpath, &src->subpath}};
    for (size_t i = 0; i < 3; i++) {
        if (!agree[i].given)
            continue;
        if (*agree[i].have && strcmp(*agree[i].have, agree[i].given) != 0) {
            as_err_set(err, "%s '%s' disagrees with the source's '%s'", agree[i].flag,
                       agree[i].given, *agree[i].have);
            as_err_hint(err, "give it once, either in the source or as %s", agree[i].flag);
            return -1;
        }
        free(*agree[i].have);
        *agree[i].have = xstrdup(agree[i].given);
    }
    return 0;
}

/* The default skill name: the last segment of where it came from, without
 * trailing slashes or a .git suffix. */
static char *name_from(const char *from)
{
    size_t n = strlen(from);
    while (n > 1 && from[n - 1] == '/')
        n--;
    const char *b = from + n;
    while (b > from && b[-1] != '/' && b[-1] != ':')
        b--;
    char *name = xstrndup(b, (size_t)(from + n - b));
    size_t nl = strlen(name);
    if (nl > 4 && strcmp(name + nl - 4, ".git") == 0)
        name[nl - 4] = '\0';
    return name;
}

/* The content scan: each finding shown, and a high one refuses the skill
 * unless --allow-flagged. */
static int scan_skill(const char *dir, const char *name, const struct lib_skill_opts *o,
                      struct scan_report *sr, struct as_err *err)
{
    char *item = xasprintf("skill '%s'", name);
    int sc = scan_tree(item, dir, name, sr, err);
    free(item);
    if (sc < 0)
        return -1;
    for (size_t i = 0; i < sr->v.n; i++) {
        strbuf line = SB_INIT;
        scan_finding_format(&sr->v.v[i], &line);
        lib_say(o->diag, sr->v.v[i].sev == SCAN_HIGH ? "✗ " : "⚠ ", line.buf, "\n");
        sb_release(&line);
    }
    if (scan_report_blocking(sr) && !o->allow_flagged) {
        as_err_set(err,
                   "skill '%s' failed the content scan (%zu high finding%s) — "
                   "nothing added",
                   name, sr->high, sr->high == 1 ? "" : "s");
        as_err_hint(err, "review the findings above; to add it anyway: --allow-flagged");
        return -1;
    }
    return 0;
}

/* The [skills.<name>] entry (NULL + err on a refusal). *copy_to is set
 * when the folder is copied under skills/. */
static toml_value *skill_entry(const struct bundle_paths *p, const struct lib_skill_src *src,
                               const char *commit, const char *rel, const char *dir,
                               const char *name, char **copy_to, struct as_err *err)
{
    toml_value *entry = toml_new(TOML_TABLE);
    size_t mdl = strlen(p->manifest_dir);
    if (src->url) {
        toml_table_set(entry, "git", toml_new_string(src->url));
        toml_table_set(entry, "rev", toml_new_string(commit));
        if (rel)
            toml_table_set(entry, "subpath", toml_new_string(rel));
    } else if (strncmp(dir, p->manifest_dir, mdl) == 0 && dir[mdl] == '/') {
        char *r = xasprintf("./%s", dir + mdl + 1);
        toml_table_set(entry, "path", toml_new_string(r));
        free(r);
    } else {
        *copy_to = xasprintf("%s/skills/%s", p->manifest_dir, name);
        char *r = xasprintf("./skills/%s", name);
        toml_table_set(entry, "path", toml_new_string(r));
        free(r);
        if (fs_exists(*copy_to)) {
            toml_free(entry);
            as_err_set(err, "%s already exists — nothing added", *copy_to);
            as_err_hint(err, "pass --name <other> or move it aside");
            return NULL;
        }
        strbuf safe = SB_INIT;
        int ok = fs_contain(p->manifest_dir, NULL, *copy_to + mdl + 1,
                            FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &safe, err);
        sb_release(&safe);
        if (ok < 0) {
            toml_free(entry);
            return NULL;
        }
    }
    return entry;
}

int lib_add_skill(struct library *lib, const struct bundle_paths *p, const char *spec,
                  const struct lib_skill_opts *o, struct as_err *err)
{
    struct lib_skill_src s;
    if (lib_skill_src_parse(spec, &s, err) < 0)
        return -1;
    struct manifest *m = NULL;
    strbuf commit = SB_INIT, root = SB_INIT, abs = SB_INIT;
    char *rel = NULL, *dir = NULL, *name = NULL, *copy_to = NULL;
    struct skill_md md = {0};
    struct scan_report sr;
    scan_report_init(&sr);
    toml_edit *ed = NULL;
    struct lib_txn t = LIB_TXN_INIT;
    int rc = -1;
    FILE *f = o->out;

    if (agree_flags(&s, o, err) < 0)
        goto out;
    m = manifest_load(p, err);
    if (!m)
        goto out;

    if (s.path) {
        if (s.rev) {
            as_err_set(err, "--rev applies to git sources, not the path '%s'", s.path);
            goto out;
        }
        if (discover_abspath(s.path, &abs, err) < 0)
            goto out;
        if (!fs_is_dir(abs.buf)) {
            as_err_set(err, "%s is not a directory", abs.buf);
            goto out;
        }
        sb_adds(&root, abs.buf);
    } else {
        if (lib_git_url_check(s.url, true, err) < 0 || git_check_url(s.url, err) < 0)
            goto out;
        if (lib_pack_policy_check(m, s.url, err) < 0)
            goto out;
        if (git_resolve(lib->home, s.url, s.rev, true, &commit, &root, err) < 0) {
            as_err_prefix(err, "cannot fetch %s%s%s — nothing added", s.url, s.rev ? "@" : "",
                          s.rev ? s.rev : "");
            goto out;
        }
        if (!commit.len) {
            as_err_set(err, "%s did not resolve to a commit — nothing added", s.url);
            goto out;
        }
    }
    if (o->list) {
        rc = list_skills(root.buf, f, err);
        goto out;
    }
    if (pick_dir(root.buf, &s, &rel, err) < 0)
        goto out;
    dir = rel ? xasprintf("%s/%s", root.buf, rel) : xstrdup(root.buf);
    if (skill_dir_check(dir, err) < 0 || skill_md_read(dir, &md, err) < 0)
        goto out;
    if (o->name) {
        name = xstrdup(o->name);
    } else if (s.skill) {
        name = xstrdup(s.skill);
    } else {
        name = name_from(rel ? rel : s.path ? abs.buf : s.url);
    }
    if (!skill_name_valid(name)) {
        as_err_set(err, "skill name '%s' is not valid: names are ^[a-z0-9][a-z0-9._-]{0,63}$",
                   name);
        as_err_hint(err, "pass --name <valid-name>");
        goto out;
    }
    if (manifest_skill(m, name)) {
        as_err_set(err, "[skills.%s] already exists in %s — nothing added", name, m->path);
        as_err_hint(err, "remove it first (agentstack remove %s --write) or pass --name", name);
        goto out;
    }
    const char *ts = NULL;
    if (lib_pick_toolset(m, o->toolset, &ts, err) < 0)
        goto out;
    char hex[SHA256_HEX_LEN + 1];
    if (digest_skill_tree(dir, hex, err) < 0)
        goto out;
    if (scan_skill(dir, name, o, &sr, err) < 0)
        goto out;

    /* The [skills.<n>] entry: git sources pinned at the resolved commit;
     * a folder inside the manifest dir is named in place, one outside is
     * copied under skills/ so the project carries it. */
    toml_value *entry = skill_entry(p, &s, commit.buf, rel, dir, name, &copy_to, err);
    if (!entry)
        goto out;
    ed = lib_manifest_edit(p, err);
    const char *kpath[] = {"skills", name};
    int er = ed ? toml_edit_set_table(ed, kpath, 2, entry, err) : -1;
    toml_free(entry);
    int joined = er < 0 || !ts ? 0 : lib_toolset_add(ed, m, ts, "skills", name, err);
    if (er < 0 || joined < 0)
        goto out;

    fprintf(f, "skill '%s' from ", name);
    lib_say(f, "", s.url ? s.url : abs.buf, "");
    if (s.url)
        fprintf(f, " @ %.12s", commit.buf);
    if (rel)
        lib_say(f, " #", rel, "");
    fputc('\n', f);
    if (md.description)
        lib_say(f, "  ", md.description, "\n");
    if (s.url)
        lib_say(f, "  + [skills.", name, "]  git, rev = the commit");
    else
        lib_say(f, "  + [skills.", name, copy_to ? "]  path = ./skills/" : "]  path (in place)");
    if (copy_to)
        lib_say(f, "", name, "  (copied into the project)");
    fputc('\n', f);
    if (joined)
        fprintf(f, "  + toolset '%s' skills += \"%s\"\n", ts, name);
    else if (ts)
        fprintf(f, "  toolset '%s' already lists \"%s\"\n", ts, name);
    fprintf(f, "  checksum %.12s…, %zu file%s scanned, %zu finding%s\n", hex, sr.files,
            sr.files == 1 ? "" : "s", sr.v.n, sr.v.n == 1 ? "" : "s");
    if (!o->write) {
        fprintf(f, "Dry run. Re-run with --write to add skill '%s'.\n", name);
        rc = 0;
        goto out;
    }

    /* Write: copy, manifest, lock — or none of them. */
    if (lib_txn_begin(&t, p, err) < 0)
        goto out;
    if (copy_to) {
        /* skills/ made here is recorded too: a rollback leaves no empty skills/. */
        if (lib_txn_parents(&t, p->manifest_dir, copy_to, err) < 0 ||
            lib_copy_tree(dir, copy_to, err) < 0)
            goto out;
        strvec_push(&t.created, copy_to);
    }
    if (lib_txn_commit(&t, lib, ed, NULL, NULL, "pinning the skill failed, so nothing was added",
                       err) < 0)
        goto out;
    lib_txn_done(&t, f, "✓ added skill '%s' (%s) — pinned %.12s…\n", name, s.url ? "git" : "path",
                 hex);
    fprintf(f, "next: agentstack trust .   then   agentstack apply --write\n");
    lib_txn_warn_untrusted(&t, o->diag);
    rc = 0;
out:
    lib_txn_end(&t);
    toml_edit_free(ed);
    scan_report_free(&sr);
    skill_md_free(&md);
    free(rel);
    free(dir);
    free(name);
    free(copy_to);
    sb_release(&commit);
    sb_release(&root);
    sb_release(&abs);
    manifest_free(m);
    lib_skill_src_free(&s);
    return rc;
}
