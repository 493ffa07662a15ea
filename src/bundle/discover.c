/* Project discovery (docs/manifest.md, docs/trust.md). */
#include "bundle/discover.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/home.h"

void bundle_paths_free(struct bundle_paths *p)
{
    free(p->start);
    free(p->base);
    free(p->manifest_dir);
    free(p->project_root);
    free(p->manifest);
    free(p->overlay);
    free(p->lock);
    free(p->lock_sig);
    free(p->env_file);
    memset(p, 0, sizeof *p);
}

int discover_abspath(const char *path, strbuf *out, struct as_err *err)
{
    strbuf raw = SB_INIT;
    if (!path || !*path)
        return as_err_set(err, "empty path");
    if (path[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return as_err_errno(err, "cannot determine the current directory");
        sb_adds(&raw, cwd);
        free(cwd);
        sb_addc(&raw, '/');
    }
    sb_adds(&raw, path);
    /* Lexical clean-up: "//", "/./" and trailing "/" removed, ".." pops. */
    sb_reset(out);
    const char *p = raw.buf;
    while (*p) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0)
            break;
        if (n == 1 && p[0] == '.') {
            /* skip */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(out->buf, '/');
            sb_setlen(out, slash ? (size_t)(slash - out->buf) : 0);
        } else {
            sb_addc(out, '/');
            sb_add(out, p, n);
        }
        p += n;
    }
    if (out->len == 0)
        sb_addc(out, '/');
    sb_release(&raw);
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *parent_of(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s || s == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(s - path));
}

static char *join(const char *dir, const char *name)
{
    if (strcmp(dir, "/") == 0)
        return xasprintf("/%s", name);
    return xasprintf("%s/%s", dir, name);
}

static bool lexists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* true if a is b or an ancestor of b (both absolute, clean). */
static bool is_same_or_ancestor(const char *a, const char *b)
{
    if (strcmp(a, "/") == 0)
        return true;
    size_t n = strlen(a);
    return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

/* Fills the raw absolute path and (if it resolves) the canonical one. */
static void both_forms(const char *path, strbuf *raw, strbuf *canon)
{
    struct as_err e = AS_ERR_INIT;
    sb_reset(raw);
    sb_reset(canon);
    if (discover_abspath(path, raw, &e) < 0)
        return;
    char *r = realpath(raw->buf, NULL);
    if (r) {
        sb_adds(canon, r);
        free(r);
    }
}

bool discover_is_home_or_ancestor(const char *dir)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        return false;
    strbuf hr = SB_INIT, hc = SB_INIT, dr = SB_INIT, dc = SB_INIT;
    both_forms(home, &hr, &hc);
    both_forms(dir, &dr, &dc);
    bool hit = false;
    const char *hs[2] = {hr.buf, hc.buf}, *ds[2] = {dr.buf, dc.buf};
    for (int i = 0; i < 2 && !hit; i++)
        for (int j = 0; j < 2 && !hit; j++)
            if (*hs[i] && *ds[j])
                hit = is_same_or_ancestor(ds[j], hs[i]);
    sb_release(&hr);
    sb_release(&hc);
    sb_release(&dr);
    sb_release(&dc);
    return hit;
}

static bool same_dir(const char *a, const char *b)
{
    strbuf ar = SB_INIT, ac = SB_INIT, br = SB_INIT, bc = SB_INIT;
    both_forms(a, &ar, &ac);
    both_forms(b, &br, &bc);
    bool hit = (*ar.buf && *br.buf && strcmp(ar.buf, br.buf) == 0) ||
               (*ac.buf && *bc.buf && strcmp(ac.buf, bc.buf) == 0);
    sb_release(&ar);
    sb_release(&ac);
    sb_release(&br);
    sb_release(&bc);
    return hit;
}

bool discover_is_machine_home(const char *dir)
{
    strbuf mh = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool hit = home_dir(&mh, &e) == 0 && same_dir(dir, mh.buf);
    sb_release(&mh);
    return hit;
}

/* Fills p for an absolute base and a chosen layout. */
static void fill(struct bundle_paths *p, const char *base, bool nested, bool found)
{
    p->base = xstrdup(base);
    p->nested = nested;
    p->found = found;
    p->manifest_dir = nested ? join(base, BUNDLE_DIR_NAME) : xstrdup(base);
    p->project_root = xstrdup(base);
    p->manifest = join(p->manifest_dir, BUNDLE_MANIFEST_NAME);
    p->overlay = join(p->manifest_dir, BUNDLE_OVERLAY_NAME);
    p->lock = join(p->manifest_dir, BUNDLE_LOCK_NAME);
    p->lock_sig = join(p->manifest_dir, BUNDLE_SIG_NAME);
    p->env_file = join(p->manifest_dir, ".env");
}

/* Which layout a base uses: 1 nested, 0 legacy, -1 none. */
static int layout_of(const char *base)
{
    char *dir = join(base, BUNDLE_DIR_NAME);
    char *nested = join(dir, BUNDLE_MANIFEST_NAME);
    char *legacy = join(base, BUNDLE_MANIFEST_NAME);
    int r = lexists(nested) ? 1 : lexists(legacy) ? 0 : -1;
    free(dir);
    free(nested);
    free(legacy);
    return r;
}

int discover_at(const char *dir, struct bundle_paths *p, struct as_err *err)
{
    memset(p, 0, sizeof *p);
    strbuf abs = SB_INIT;
    if (discover_abspath(dir, &abs, err) < 0)
        return -1;
    struct stat st;
    if (stat(abs.buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
        as_err_set(err, "no such directory: %s", dir);
        sb_release(&abs);
        return -1;
    }
    if (strcmp(base_name(abs.buf), BUNDLE_DIR_NAME) == 0) {
        /* DIR is the manifest dir itself. */
        char *base = parent_of(abs.buf);
        char *m = join(abs.buf, BUNDLE_MANIFEST_NAME);
        fill(p, base, true, lexists(m));
        free(m);
        free(base);
    } else {
        int l = layout_of(abs.buf);
        fill(p, abs.buf, l != 0, l >= 0);
    }
    p->start = xstrdup(abs.buf);
    sb_release(&abs);
    return 0;
}

int discover_walk(const char *start, struct bundle_paths *p, struct as_err *err)
{
    memset(p, 0, sizeof *p);
    strbuf cur = SB_INIT;
    if (discover_abspath(start, &cur, err) < 0)
        return -1;
    char *r = realpath(cur.buf, NULL);
    if (r) {
        sb_reset(&cur);
        sb_adds(&cur, r);
        free(r);
    }
    char *startabs = xstrdup(cur.buf);
    int found = 0;
    for (;;) {
        /* $HOME and its ancestors are never projects; the machine home is
         * checked before the file test so its manifest is never a project's. */
        if (discover_is_home_or_ancestor(cur.buf) || discover_is_machine_home(cur.buf))
            break;
        int l = layout_of(cur.buf);
        if (l >= 0) {
            fill(p, cur.buf, l == 1, true);
            found = 1;
            break;
        }
        if (strcmp(cur.buf, "/") == 0)
            break;
        char *up = parent_of(cur.buf);
        sb_reset(&cur);
        sb_adds(&cur, up);
        free(up);
    }
    sb_release(&cur);
    if (found)
        p->start = startabs;
    else
        free(startabs);
    return found;
}

int discover_project(const char *manifest_dir_opt, const char *cwd, struct bundle_paths *p,
                     struct as_err *err)
{
    if (manifest_dir_opt)
        return discover_at(manifest_dir_opt, p, err);
    char *own = NULL;
    if (!cwd) {
        own = getcwd(NULL, 0);
        if (!own)
            return as_err_errno(err, "cannot determine the current directory");
        cwd = own;
    }
    int rc = discover_walk(cwd, p, err);
    if (rc == 0) {
        /* None: commands use the cwd and fail to load; never pick up a
         * manifest the walk refused (the machine home's, say). */
        strbuf abs = SB_INIT;
        if (discover_abspath(cwd, &abs, err) == 0) {
            fill(p, abs.buf, true, false);
            p->start = xstrdup(abs.buf);
            rc = 0;
        } else {
            rc = -1;
        }
        sb_release(&abs);
    } else if (rc == 1) {
        rc = 0;
    }
    free(own);
    return rc;
}

int discover_require(const struct bundle_paths *p, struct as_err *err)
{
    if (p->found)
        return 0;
    const char *root = p->base ? p->base : (p->start ? p->start : ".");
    as_err_set(err,
               "no agentstack manifest in %s — expected .agentstack/agentstack.toml "
               "(preferred) or a root agentstack.toml; run `agentstack init` to create "
               "one, or pass `--manifest-dir DIR` to use another project",
               root);
    as_err_hint(err, "agentstack init");
    return -1;
}

int discover_trust_target(const char *path_opt, const char *manifest_dir_opt,
                          struct bundle_paths *p, struct as_err *err)
{
    memset(p, 0, sizeof *p);
    const char *given = path_opt ? path_opt : manifest_dir_opt;
    strbuf start = SB_INIT;
    if (given) {
        struct stat st;
        if (stat(given, &st) < 0 || !S_ISDIR(st.st_mode)) {
            sb_release(&start);
            return as_err_set(err, "no such directory: %s", given);
        }
        char *r = realpath(given, NULL);
        if (!r) {
            sb_release(&start);
            return as_err_set(err, "no such directory: %s", given);
        }
        sb_adds(&start, r);
        free(r);
    } else {
        char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return as_err_errno(err, "cannot determine the current directory");
        sb_adds(&start, cwd);
        free(cwd);
    }
    strbuf mh = SB_INIT;
    int rc = -1;
    if (home_dir(&mh, err) < 0)
        goto out;
    char *owner = parent_of(mh.buf);
    bool refused = same_dir(start.buf, mh.buf) || same_dir(start.buf, owner);
    free(owner);
    if (refused) {
        as_err_set(err,
                   "%s is the machine home (%s) — the machine layer is never gated; "
                   "trust applies to projects",
                   start.buf, mh.buf);
        as_err_hint(err, "run `agentstack trust .` inside a project directory");
        goto out;
    }
    rc = discover_walk(start.buf, p, err);
    if (rc == 0) {
        as_err_set(err, "no agentstack manifest at or above %s", start.buf);
        as_err_hint(err, "create one with `agentstack init`, or name the project: "
                         "`agentstack trust DIR`");
        rc = -1;
    } else if (rc == 1) {
        rc = 0;
    }
out:
    sb_release(&mh);
    sb_release(&start);
    return rc;
}

int discover_project_key(const char *base, strbuf *out)
{
    struct as_err e = AS_ERR_INIT;
    strbuf abs = SB_INIT;
    sb_reset(out);
    if (discover_abspath(base, &abs, &e) < 0) {
        sb_adds(out, base);
        return 0;
    }
    if (strcmp(base_name(abs.buf), BUNDLE_DIR_NAME) == 0) {
        char *up = parent_of(abs.buf);
        sb_reset(&abs);
        sb_adds(&abs, up);
        free(up);
    }
    char *r = realpath(abs.buf, NULL);
    sb_adds(out, r ? r : abs.buf);
    free(r);
    sb_release(&abs);
    return 0;
}

/* A path that may be a symlink must resolve inside root (the one
 * containment check, base/fs.h); the final object must be a regular file
 * (or a directory when want_dir). Missing is fine. */
static int check_entry(const char *path, const char *root, bool want_dir, struct as_err *err)
{
    strbuf out = SB_INIT;
    int rc = fs_contain(root, NULL, path, FS_CONTAIN_ABSOLUTE, &out, err);
    sb_release(&out);
    if (rc < 0) {
        if (!err->hint[0])
            as_err_hint(err, "replace the symlink with the real file or directory");
        return -1;
    }
    struct stat st;
    if (stat(path, &st) < 0)
        return errno == ENOENT ? 0 : as_err_errno(err, "%s", path);
    if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return as_err_set(err, "%s: is not a %s", path, want_dir ? "directory" : "regular file");
    return 0;
}

int discover_check_layout(const struct bundle_paths *p, struct as_err *err)
{
    const char *root = p->project_root;
    int rc = 0;
    if (p->nested)
        rc = check_entry(p->manifest_dir, root, true, err);
    if (rc == 0)
        rc = check_entry(p->manifest, root, false, err);
    if (rc == 0)
        rc = check_entry(p->overlay, root, false, err);
    if (rc == 0)
        rc = check_entry(p->lock, root, false, err);
    return rc;
}
