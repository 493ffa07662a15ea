/* sync — lib sync and the library step of up; see sync.h. */
#include "library/sync.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/scan.h"
#include "library/git.h"

#define SYNC_SCAN_MAX_BYTES ((size_t)2 << 20)

/* git with a NULL-terminated argument list. Returns the status or -1. */
static int gitv(const char *dir, strbuf *out, strbuf *errout, struct as_err *err, ...)
{
    const char *args[32];
    size_t n = 0;
    va_list ap;
    va_start(ap, err);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 31;)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    return lib_git(dir, args, out, errout, err);
}

void lib_secret_hits_free(lib_secret_hits *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].file);
        free(h->v[i].key);
        free(h->v[i].commit);
    }
    vec_free(h);
}

static void hit(lib_secret_hits *out, const char *file, const char *key, const char *commit,
                enum lsec_why why, bool unparsable)
{
    struct lib_secret_hit h = {xstrdup(file), xstrdup(key ? key : ""),
                               commit ? xstrdup(commit) : NULL, why, unparsable};
    vec_push(out, h);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static bool is_server_file(const char *rel)
{
    return strncmp(rel, "servers/", 8) == 0 && !strchr(rel + 8, '/') && ends_with(rel, ".toml");
}

static void add_findings(lib_secret_hits *out, const char *rel, const char *commit,
                         const lsec_findings *f)
{
    for (size_t i = 0; i < f->n; i++)
        hit(out, rel, f->v[i].key, commit, f->v[i].why, false);
}

/* Raw text, line by line: every form the one detector knows in free text
 * (name = value, export NAME=value, "name": "value", Authorization: Bearer
 * …, token prefixes, URL passwords). */
static void scan_lines(const char *rel, const char *commit, const char *data, size_t len,
                       lib_secret_hits *out)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && data[i] != '\n')
            continue;
        const char *line = data + start;
        size_t ll = i - start;
        start = i + 1;
        if (!ll || memchr(line, '\0', ll))
            continue;
        lsec_findings f = VEC_INIT;
        lsec_check_text(rel, line, ll, &f);
        add_findings(out, rel, commit, &f);
        lsec_findings_free(&f);
    }
}

static void scan_file_bytes(const char *rel, const char *data, size_t len, lib_secret_hits *out)
{
    if (ends_with(rel, ".json")) {
        json_error_t je;
        json_t *j = json_loadb(data, len, 0, &je);
        if (j) {
            lsec_findings f = VEC_INIT;
            lsec_check_json(j, &f);
            add_findings(out, rel, NULL, &f);
            lsec_findings_free(&f);
            json_decref(j);
            return;
        }
    }
    bool toml = ends_with(rel, ".toml");
    if (!toml) {
        if (memchr(data, '\0', len < 8192 ? len : 8192))
            return; /* binary */
        scan_lines(rel, NULL, data, len, out);
        return;
    }
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_parse(rel, data, len, &err);
    if (!t) {
        if (is_server_file(rel))
            hit(out, rel, "", NULL, LSEC_NONE, true);
        scan_lines(rel, NULL, data, len, out);
        return;
    }
    lsec_findings f = VEC_INIT;
    if (is_server_file(rel))
        lsec_check_server_table(t, &f);
    else
        lsec_check_toml(t, &f);
    add_findings(out, rel, NULL, &f);
    lsec_findings_free(&f);
    toml_free(t);
}

struct tree_ctx {
    lib_secret_hits *out;
};

static int tree_cb(const struct fs_entry *e, void *vctx, struct as_err *err)
{
    struct tree_ctx *c = vctx;
    const char *base = strrchr(e->rel, '/');
    base = base ? base + 1 : e->rel;
    if (S_ISDIR(e->mode))
        return (strcmp(base, ".git") == 0 || (e->depth == 1 && strcmp(base, ".trash") == 0)) ? 1
                                                                                             : 0;
    if (!S_ISREG(e->mode) || strcmp(base, ".git") == 0)
        return 0;
    strbuf data = SB_INIT;
    struct as_err e2 = AS_ERR_INIT;
    if (fs_read_file(e->path, SYNC_SCAN_MAX_BYTES, 1, &data, &e2) < 0) {
        if (is_server_file(e->rel))
            hit(c->out, e->rel, "", NULL, LSEC_NONE, true);
    } else {
        scan_file_bytes(e->rel, data.buf, data.len, c->out);
    }
    sb_release(&data);
    (void)err;
    return 0;
}

int lib_secret_scan_tree(const char *root, lib_secret_hits *out, struct as_err *err)
{
    struct tree_ctx c = {out};
    return fs_walk(root, 64, tree_cb, &c, err);
}

int lib_secret_scan_history(const char *root, const char *range, lib_secret_hits *out,
                            struct as_err *err)
{
    strbuf log = SB_INIT, e = SB_INIT;
    int st = gitv(root, &log, &e, err, "log", "-p", "-U0", "--no-color", "--no-ext-diff",
                  "--format=commit %H", range, "--", ".", NULL);
    if (st != 0) {
        if (st > 0) {
            strbuf last = SB_INIT;
            lib_git_last_line(e.buf, &last);
            as_err_set(err, "cannot read the outgoing history (%s): %s", range, last.buf);
            sb_release(&last);
        }
        sb_release(&log);
        sb_release(&e);
        return -1;
    }
    char commit[41] = "";
    char *file = NULL;
    size_t start = 0;
    for (size_t i = 0; i <= log.len; i++) {
        if (i < log.len && log.buf[i] != '\n')
            continue;
        const char *line = log.buf + start;
        size_t ll = i - start;
        start = i + 1;
        if (ll >= 47 && strncmp(line, "commit ", 7) == 0) {
            memcpy(commit, line + 7, 40);
            commit[40] = '\0';
        } else if (ll > 6 && strncmp(line, "+++ ", 4) == 0) {
            free(file);
            file = strncmp(line, "+++ b/", 6) == 0 ? xstrndup(line + 6, ll - 6) : NULL;
        } else if (ll > 1 && line[0] == '+' && file && strncmp(file, ".trash/", 7) != 0) {
            scan_lines(file, commit, line + 1, ll - 1, out);
        }
    }
    free(file);
    sb_release(&log);
    sb_release(&e);
    return 0;
}

/* ${REF} name for a finding: <SERVER>_TOKEN for an authorization header,
 * else the key upper-cased with non-alphanumerics as '_'. */
static void suggest_ref(const char *file, const char *key, strbuf *out)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    bool auth = strcasecmp(key, "authorization") == 0 || strcasecmp(key, "bearer") == 0;
    const char *src = key;
    strbuf stem = SB_INIT;
    if (auth || !*key || strcmp(key, "line") == 0 || strncmp(key, "args[", 5) == 0 ||
        strcmp(key, "url") == 0 || strcmp(key, "password") == 0 || strcmp(key, "username") == 0) {
        size_t n = strcspn(base, ".");
        sb_add(&stem, base, n);
        sb_adds(&stem, "_TOKEN");
        src = stem.buf;
    }
    for (const char *p = src; *p; p++) {
        if (*p == '-' && p == src)
            continue;
        if (*p == '-' && p[-1] == '-')
            continue;
        sb_addc(out, isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_');
    }
    if (!out->len || isdigit((unsigned char)out->buf[0])) {
        strbuf tmp = SB_INIT;
        sb_addf(&tmp, "SECRET_%s", out->buf);
        sb_reset(out);
        sb_adds(out, tmp.buf);
        sb_release(&tmp);
    }
    sb_release(&stem);
}

void lib_secret_report(FILE *f, const char *root, const lib_secret_hits *hits, bool history)
{
    if (!hits->n)
        return;
    const struct lib_secret_hit *first = &hits->v[0];
    for (size_t i = 0; i < hits->n; i++) {
        if (!hits->v[i].unparsable) {
            first = &hits->v[i];
            break;
        }
    }
    if (first->unparsable)
        fprintf(f, "error: refusing to sync — '%s' cannot be parsed as a server definition\n",
                first->file);
    else
        fprintf(f, "error: refusing to sync — '%s' looks like a literal secret\n", first->key);
    bool server = false;
    for (size_t i = 0; i < hits->n; i++)
        server = server || is_server_file(hits->v[i].file);
    if (history)
        fprintf(f, "refusing to sync — a secret in an earlier commit is still in the outgoing "
                   "history\n");
    else if (server)
        fprintf(f, "refusing to sync — a server definition holds a literal secret\n");
    else
        fprintf(f, "refusing to sync — a library file holds a literal secret\n");
    for (size_t i = 0; i < hits->n; i++) {
        const struct lib_secret_hit *h = &hits->v[i];
        if (h->commit)
            fprintf(f, "  commit %.8s ", h->commit);
        else
            fprintf(f, "  ");
        if (h->unparsable)
            fprintf(f, "%s: cannot be parsed as a server definition — fix it before syncing\n",
                    h->file);
        else if (h->why == LSEC_KEY_NAME || h->why == LSEC_USERINFO)
            fprintf(f,
                    "%s: '%s' has a literal value that looks like a secret — use ${REF} "
                    "instead\n",
                    h->file, h->key);
        else
            fprintf(f, "%s: '%s' has a value shaped like a secret (%s) — use ${REF} instead\n",
                    h->file, h->key, lsec_why_text(h->why));
    }
    if (!first->unparsable) {
        strbuf ref = SB_INIT;
        suggest_ref(first->file, first->key, &ref);
        fprintf(f, "✓ make it a ${REF} and it travels safely — values never leave the keychain:\n");
        if (strcasecmp(first->key, "authorization") == 0)
            fprintf(f, "    in %s write  %s = \"Bearer ${%s}\"\n", first->file, first->key,
                    ref.buf);
        else
            fprintf(f, "    in %s replace the value of '%s' with ${%s}\n", first->file, first->key,
                    ref.buf);
        fprintf(f, "    then on each machine:  agentstack secret set %s\n", ref.buf);
        sb_release(&ref);
    }
    if (history)
        fprintf(f,
                "  the secret is still in those commits: rewrite them (git -C %s rebase -i) "
                "and revoke the secret;\n  if it is already revoked: agentstack lib sync "
                "--allow-secrets\n",
                root);
    else
        fprintf(f, "  to sync anyway (not recommended): agentstack lib sync --allow-secrets\n");
}

/* ---- helpers ------------------------------------------------------------------------ */

static bool is_repo(const char *path)
{
    char *g = xasprintf("%s/.git", path);
    bool r = fs_exists(g);
    free(g);
    return r;
}

static bool dir_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n == 0;
}

/* .gitignore keeps .trash/ (and .DS_Store) out of every commit. */
static int ensure_gitignore(const char *path, struct as_err *err)
{
    char *f = xasprintf("%s/.gitignore", path);
    strbuf cur = SB_INIT;
    struct as_err e2 = AS_ERR_INIT;
    bool exists = fs_read_file(f, LIB_MAX_FILE_BYTES, 1, &cur, &e2) == 0;
    bool has_trash = false, has_ds = false;
    for (char *line = cur.buf; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if ((n == 7 && strncmp(line, ".trash/", 7) == 0) ||
            (n == 6 && strncmp(line, ".trash", 6) == 0) ||
            (n == 8 && strncmp(line, "/.trash/", 8) == 0))
            has_trash = true;
        if (n == 9 && strncmp(line, ".DS_Store", 9) == 0)
            has_ds = true;
        line = nl ? nl + 1 : NULL;
    }
    int rc = 0;
    if (!has_trash || !has_ds) {
        if (cur.len && cur.buf[cur.len - 1] != '\n')
            sb_addc(&cur, '\n');
        if (!has_ds)
            sb_adds(&cur, ".DS_Store\n");
        if (!has_trash)
            sb_adds(&cur, ".trash/\n");
        struct fs_write_opts o = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
        rc = fs_write_atomic(f, cur.buf, cur.len, &o, err);
    }
    (void)exists;
    sb_release(&cur);
    free(f);
    return rc;
}

/* .trash/ stays out of every commit even when a cloned library has no
 * .gitignore: .git/info/exclude is local and never dirties the tree. */
static int ensure_exclude(const char *path, struct as_err *err)
{
    char *f = xasprintf("%s/.git/info/exclude", path);
    strbuf cur = SB_INIT;
    struct as_err e2 = AS_ERR_INIT;
    (void)fs_read_file(f, LIB_MAX_FILE_BYTES, 1, &cur, &e2);
    int rc = 0;
    if (!strstr(cur.buf, "\n/.trash/\n") && strncmp(cur.buf, "/.trash/\n", 9) != 0) {
        if (cur.len && cur.buf[cur.len - 1] != '\n')
            sb_addc(&cur, '\n');
        sb_adds(&cur, "/.trash/\n");
        char *dir = xasprintf("%s/.git/info", path);
        rc = fs_mkdirs(dir, 0755, err);
        free(dir);
        struct fs_write_opts o = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
        if (rc == 0)
            rc = fs_write_atomic(f, cur.buf, cur.len, &o, err);
    }
    sb_release(&cur);
    free(f);
    return rc;
}

/* A clone whose remote HEAD names a branch that does not exist checks out
 * nothing; pick the remote's main, master, or first branch instead. */
static int checkout_default(const char *path, struct as_err *err)
{
    strbuf out = SB_INIT;
    struct as_err e2 = AS_ERR_INIT;
    if (gitv(path, &out, NULL, &e2, "rev-parse", "--verify", "-q", "HEAD", NULL) == 0) {
        sb_release(&out);
        return 0;
    }
    sb_reset(&out);
    if (gitv(path, &out, NULL, err, "for-each-ref", "--format=%(refname:strip=3)",
             "refs/remotes/origin", NULL) != 0) {
        sb_release(&out);
        return as_err_isset(err) ? -1 : 0;
    }
    char *pick = NULL;
    for (char *line = out.buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strcmp(line, "HEAD") != 0) {
            if (!pick || strcmp(line, "main") == 0 ||
                (strcmp(line, "master") == 0 && strcmp(pick, "main") != 0)) {
                free(pick);
                pick = xstrdup(line);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    sb_release(&out);
    if (!pick)
        return 0; /* an empty remote: nothing to check out yet */
    char *up = xasprintf("origin/%s", pick);
    const char *args[] = {"checkout", "-q", "-B", pick, "--track", up, NULL};
    int rc = lib_git_ok(path, args, NULL, err);
    free(up);
    free(pick);
    return rc;
}

static int porcelain(const char *path, strbuf *out, struct as_err *err)
{
    return gitv(path, out, NULL, err, "status", "--porcelain", "--untracked-files=all", NULL) == 0
               ? 0
               : (as_err_isset(err) ? -1 : as_err_set(err, "git status failed in %s", path));
}

/* Commits everything (add -A) when anything changed. *committed set. */
static int commit_all(const char *path, const char *msg, bool *committed, struct as_err *err)
{
    *committed = false;
    strbuf st = SB_INIT;
    if (porcelain(path, &st, err) < 0) {
        sb_release(&st);
        return -1;
    }
    bool dirty = st.len > 0;
    sb_release(&st);
    if (!dirty)
        return 0;
    const char *add[] = {"add", "-A", NULL};
    if (lib_git_ok(path, add, NULL, err) < 0)
        return -1;
    const char *commit[] = {"commit", "-q", "--no-verify", "-m", msg, NULL};
    if (lib_git_ok(path, commit, NULL, err) < 0)
        return -1;
    *committed = true;
    return 0;
}

static int gate_tree(const char *path, bool allow, FILE *diag, struct as_err *err)
{
    if (allow)
        return 0;
    lib_secret_hits hits = VEC_INIT;
    if (lib_secret_scan_tree(path, &hits, err) < 0) {
        lib_secret_hits_free(&hits);
        return -1;
    }
    int rc = 0;
    if (hits.n) {
        lib_secret_report(diag, path, &hits, false);
        rc = 1;
    }
    lib_secret_hits_free(&hits);
    return rc;
}

static char *origin_url(const char *path)
{
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (gitv(path, &out, NULL, &err, "remote", "get-url", "origin", NULL) != 0) {
        sb_release(&out);
        return NULL;
    }
    sb_rtrim(&out);
    return sb_detach(&out, NULL);
}

static int set_origin(const char *path, const char *url, struct as_err *err)
{
    if (lib_git_url_check(url, false, err) < 0)
        return -1;
    char *cur = origin_url(path);
    const char *args[] = {"remote", cur ? "set-url" : "add", "origin", url, NULL};
    free(cur);
    return lib_git_ok(path, args, NULL, err);
}

enum pull_class { PULL_UNRELATED, PULL_CONFLICT, PULL_NETWORK, PULL_OTHER };

static enum pull_class classify(const char *text)
{
    if (strstr(text, "unrelated histories"))
        return PULL_UNRELATED;
    if (strstr(text, "CONFLICT") || strstr(text, "could not apply") ||
        strstr(text, "Resolve all conflicts") || strstr(text, "Not possible to fast-forward") ||
        strstr(text, "diverging"))
        return PULL_CONFLICT;
    static const char *const net[] = {"Could not resolve host",
                                      "unable to access",
                                      "Connection refused",
                                      "Authentication failed",
                                      "Permission denied",
                                      "could not read Username",
                                      "does not appear to be a git repository",
                                      "Could not read from remote repository",
                                      "terminal prompts disabled",
                                      "timed out",
                                      "not found",
                                      "No such file or directory",
                                      "unable to connect",
                                      "Connection timed out"};
    for (size_t i = 0; i < sizeof net / sizeof *net; i++)
        if (strstr(text, net[i]))
            return PULL_NETWORK;
    return PULL_OTHER;
}

static const char *class_name(enum pull_class c)
{
    switch (c) {
    case PULL_UNRELATED:
        return "unrelated histories";
    case PULL_CONFLICT:
        return "conflict";
    case PULL_NETWORK:
        return "network or access";
    case PULL_OTHER:
        break;
    }
    return "git error";
}

static void class_hint(enum pull_class c, const char *path, const char *url, struct as_err *err)
{
    switch (c) {
    case PULL_UNRELATED:
        as_err_hint(err,
                    "%s holds a different library; point this one elsewhere "
                    "(agentstack lib sync --remote <url>) or start from it "
                    "(move %s aside, then agentstack up --library %s --write)",
                    url, path, url);
        break;
    case PULL_CONFLICT:
        as_err_hint(err,
                    "both machines changed the same file; resolve by hand: "
                    "git -C %s pull --rebase, fix, git rebase --continue, "
                    "then agentstack lib sync",
                    path);
        break;
    case PULL_NETWORK:
        as_err_hint(err,
                    "check the URL and your access to it (git -C %s remote -v); "
                    "re-point it with agentstack lib sync --remote <url>",
                    path);
        break;
    case PULL_OTHER:
        as_err_hint(err, "run git -C %s status to see what git needs", path);
        break;
    }
}

static int branch_of(const char *path, strbuf *out, struct as_err *err)
{
    int st = gitv(path, out, NULL, err, "symbolic-ref", "--short", "-q", "HEAD", NULL);
    sb_rtrim(out);
    if (st != 0 || !out->len) {
        if (!as_err_isset(err))
            as_err_set(err, "the library checkout at %s is not on a branch (detached HEAD)", path);
        as_err_hint(err, "git -C %s switch main", path);
        return -1;
    }
    return 0;
}

/* 1 when origin has the branch, 0 when not (first push), -1 + err. */
static int remote_has_branch(const char *path, const char *url, const char *branch,
                             struct as_err *err)
{
    strbuf out = SB_INIT, e = SB_INIT;
    char *ref = xasprintf("refs/heads/%s", branch);
    int st =
        gitv(path, &out, &e, err, "ls-remote", LIB_GIT_UPLOAD_PACK, "--heads", "origin", ref, NULL);
    free(ref);
    int rc;
    if (st == 0) {
        rc = out.len > 0;
    } else {
        if (st > 0) {
            strbuf last = SB_INIT;
            lib_git_last_line(e.buf, &last);
            enum pull_class c = classify(e.buf);
            as_err_set(err, "library pull failed (%s) from %s: %s", class_name(c), url, last.buf);
            class_hint(c, path, url, err);
            sb_release(&last);
        }
        rc = -1;
    }
    sb_release(&out);
    sb_release(&e);
    return rc;
}

static bool rebase_in_progress(const char *path)
{
    char *a = xasprintf("%s/.git/rebase-merge", path), *b = xasprintf("%s/.git/rebase-apply", path);
    bool r = fs_exists(a) || fs_exists(b);
    free(a);
    free(b);
    return r;
}

static char *rev_parse(const char *path, const char *rev)
{
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (gitv(path, &out, NULL, &err, "rev-parse", "--verify", "-q", rev, NULL) != 0) {
        sb_release(&out);
        return NULL;
    }
    sb_rtrim(&out);
    return sb_detach(&out, NULL);
}

/* Warn-only content scan of skills a pull changed. */
static void scan_pulled(const char *path, const char *before, FILE *diag)
{
    strbuf names = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (gitv(path, &names, NULL, &err, "diff", "--name-only", before, "HEAD", "--", "skills",
             NULL) != 0) {
        sb_release(&names);
        return;
    }
    strvec skills = STRVEC_INIT;
    for (char *line = names.buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "skills/", 7) == 0) {
            char *name = xstrndup(line + 7, strcspn(line + 7, "/"));
            if (strvec_find(&skills, name) < 0)
                strvec_push(&skills, name);
            free(name);
        }
        line = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < skills.n; i++) {
        char *dir = xasprintf("%s/skills/%s", path, skills.v[i]);
        if (fs_is_dir(dir)) {
            struct scan_report r;
            scan_report_init(&r);
            char *item = xasprintf("skill '%s'", skills.v[i]);
            char *disp = xasprintf("skills/%s", skills.v[i]);
            struct as_err e2 = AS_ERR_INIT;
            if (scan_tree(item, dir, disp, &r, &e2) == 0) {
                for (size_t k = 0; k < r.v.n; k++) {
                    strbuf line = SB_INIT;
                    scan_finding_format(&r.v.v[k], &line);
                    fprintf(diag, "⚠ pulled %s: %s\n", item, line.buf);
                    sb_release(&line);
                }
            }
            scan_report_free(&r);
            free(item);
            free(disp);
        }
        free(dir);
    }
    strvec_clear(&skills);
    sb_release(&names);
}

/* ---- init ----------------------------------------------------------------------------- */

int lib_sync_init_folder(const char *path, const char *remote, bool allow_secrets,
                         const char **action, FILE *diag, struct as_err *err)
{
    *action = "existing";
    if (is_repo(path)) {
        if (ensure_exclude(path, err) < 0)
            return -1;
        if (remote && set_origin(path, remote, err) < 0)
            return -1;
        return 0;
    }
    if (dir_empty(path)) {
        if (!remote) {
            as_err_set(err, "%s is empty: there is nothing to put under git yet", path);
            as_err_hint(err, "clone an existing library: agentstack lib sync --init --remote "
                             "<url>");
            return -1;
        }
        if (lib_git_url_check(remote, false, err) < 0)
            return -1;
        if (fs_mkdirs(path, 0755, err) < 0)
            return -1;
        strbuf e = SB_INIT;
        const char *args[] = {"clone", "-q", LIB_GIT_UPLOAD_PACK, "--", remote, path, NULL};
        int st = lib_git_net(NULL, args, NULL, &e, err);
        if (st != 0) {
            if (st > 0) {
                strbuf last = SB_INIT;
                lib_git_last_line(e.buf, &last);
                as_err_set(err, "git clone failed for %s: %s", remote, last.buf);
                sb_release(&last);
            }
            as_err_hint(err, "check the URL and your access to it; nothing was written to %s",
                        path);
            /* leave the folder as empty as it was */
            DIR *d = opendir(path);
            if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                    char *p = xasprintf("%s/%s", path, de->d_name);
                    struct as_err e2 = AS_ERR_INIT;
                    fs_rmtree(p, &e2);
                    free(p);
                }
                closedir(d);
            }
            sb_release(&e);
            return -1;
        }
        sb_release(&e);
        *action = "cloned";
        if (checkout_default(path, err) < 0)
            return -1;
        return ensure_exclude(path, err);
    }
    int g = gate_tree(path, allow_secrets, diag, err);
    if (g != 0)
        return g;
    const char *init[] = {"init", "-q", "--initial-branch=main", NULL};
    if (lib_git_ok(path, init, NULL, err) < 0)
        return -1;
    if (ensure_gitignore(path, err) < 0 || ensure_exclude(path, err) < 0)
        return -1;
    bool committed;
    if (commit_all(path, "agentstack library snapshot", &committed, err) < 0)
        return -1;
    if (remote && set_origin(path, remote, err) < 0)
        return -1;
    *action = "initialized";
    return 0;
}

/* ---- pull for up ------------------------------------------------------------------------ */

int lib_pull_ff(const char *path, int *pulled, struct as_err *err)
{
    *pulled = 0;
    char *url = origin_url(path);
    if (!url)
        return 0;
    int rc = -1;
    char *was = NULL;
    strbuf st = SB_INIT, br = SB_INIT, e = SB_INIT;
    if (porcelain(path, &st, err) < 0)
        goto out;
    if (st.len) {
        as_err_set(err, "the library at %s has local changes — nothing was pulled", path);
        as_err_hint(err,
                    "send them first with agentstack lib sync, or discard them "
                    "(git -C %s stash)",
                    path);
        goto out;
    }
    if (branch_of(path, &br, err) < 0)
        goto out;
    int has = remote_has_branch(path, url, br.buf, err);
    if (has < 0) {
        as_err_hint(err,
                    "check the URL (git -C %s remote -v) or re-point it: "
                    "agentstack up --library <url> --write",
                    path);
        goto out;
    }
    if (has == 0) {
        rc = 0;
        goto out;
    }
    was = rev_parse(path, "HEAD");
    int s = gitv(path, NULL, &e, err, "pull", "-q", LIB_GIT_UPLOAD_PACK, "--ff-only", "origin",
                 br.buf, NULL);
    if (s != 0) {
        if (s > 0) {
            strbuf last = SB_INIT;
            lib_git_last_line(e.buf, &last);
            as_err_set(err, "library pull failed from %s: %s", url, last.buf);
            sb_release(&last);
        }
        as_err_hint(err,
                    "fix 1: check the URL and your access (git -C %s remote -v); "
                    "fix 2: if both machines changed the library, run agentstack lib sync "
                    "to merge them",
                    path);
        goto out;
    }
    char *now = rev_parse(path, "HEAD");
    *pulled = !was || !now || strcmp(was, now) != 0;
    free(now);
    rc = 0;
out:
    free(was);
    free(url);
    sb_release(&st);
    sb_release(&br);
    sb_release(&e);
    return rc;
}

/* ---- lib sync -------------------------------------------------------------------------- */

static int sync_status(const char *path, FILE *out, struct as_err *err)
{
    strbuf st = SB_INIT;
    if (porcelain(path, &st, err) < 0) {
        sb_release(&st);
        return -1;
    }
    if (!st.len) {
        fprintf(out, "✓ working tree clean\n");
    } else {
        for (char *line = st.buf; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            fprintf(out, "  %s\n", line);
            line = nl ? nl + 1 : NULL;
        }
    }
    sb_release(&st);
    char *up = rev_parse(path, "@{u}");
    if (up) {
        strbuf cnt = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        if (gitv(path, &cnt, NULL, &e2, "rev-list", "--left-right", "--count", "HEAD...@{u}",
                 NULL) == 0) {
            unsigned a = 0, b = 0;
            if (sscanf(cnt.buf, "%u %u", &a, &b) == 2)
                fprintf(out, "%u ahead, %u behind the remote\n", a, b);
        }
        sb_release(&cnt);
        free(up);
    } else {
        char *url = origin_url(path);
        fprintf(out, url ? "no upstream yet — the next agentstack lib sync pushes\n"
                         : "no remote — add one: agentstack lib sync --remote <url>\n");
        free(url);
    }
    return 0;
}

int lib_sync(struct library *lib, const struct lib_sync_opts *o, struct as_err *err)
{
    struct lib_source *s = lib_first(lib);
    if (o->source) {
        long i = lib_source_find(lib, o->source);
        if (i < 0) {
            as_err_set(err, "no linked library named '%s'", o->source);
            as_err_hint(err, "agentstack lib sources");
            return -1;
        }
        s = &lib->sources.v[i];
    }
    if (!lib_git_available()) {
        as_err_set(err, "git is not installed: lib sync moves the library with git");
        as_err_hint(err, "install git (apt-get install git), then agentstack lib sync");
        return -1;
    }
    const char *path = s->path;
    if (o->init) {
        const char *action;
        int r = lib_sync_init_folder(path, o->remote, o->allow_secrets, &action, o->diag, err);
        if (r != 0)
            return r;
        if (strcmp(action, "cloned") == 0)
            fprintf(o->out, "✓ cloned %s into library '%s' (%s)\n", o->remote, s->name, path);
        else if (strcmp(action, "initialized") == 0)
            fprintf(o->out, "✓ library '%s' is now a git repository (%s)%s%s\n", s->name, path,
                    o->remote ? " with origin " : "", o->remote ? o->remote : "");
        else
            fprintf(o->out, "✓ library '%s' is already a git repository (%s)%s%s\n", s->name, path,
                    o->remote ? "; origin is now " : "", o->remote ? o->remote : "");
        fprintf(o->out, "next: agentstack lib sync%s%s\n", o->source ? " --source " : "",
                o->source ? o->source : "");
        return 0;
    }
    if (!fs_is_dir(path)) {
        as_err_set(err, "library '%s' has no folder at %s", s->name, path);
        as_err_hint(err, "create it with agentstack lib add …, or clone one: agentstack lib "
                         "sync --init --remote <url>");
        return -1;
    }
    if (!is_repo(path)) {
        as_err_set(err,
                   "library '%s' (%s) is not a git repository — a plain folder is fine; "
                   "opt in to syncing",
                   s->name, path);
        as_err_hint(err, "agentstack lib sync --init [--remote <url>] --source %s", s->name);
        return -1;
    }
    if (o->remote) {
        if (set_origin(path, o->remote, err) < 0)
            return -1;
        fprintf(o->out, "✓ origin is now %s\n", o->remote);
    }
    if (ensure_exclude(path, err) < 0)
        return -1;
    if (o->status)
        return sync_status(path, o->out, err);
    if (rebase_in_progress(path)) {
        as_err_set(err, "a rebase is in progress in %s — finish it before syncing", path);
        as_err_hint(err, "git -C %s rebase --continue (or --abort), then agentstack lib sync",
                    path);
        return -1;
    }
    int g = gate_tree(path, o->allow_secrets, o->diag, err);
    if (g != 0)
        return g;
    bool committed;
    if (commit_all(path, o->message ? o->message : "agentstack library sync", &committed, err) < 0)
        return -1;
    if (committed)
        fprintf(o->out, "✓ committed the library's changes\n");
    char *url = origin_url(path);
    if (!url) {
        fprintf(o->out, "✓ library '%s' committed locally; it has no remote to sync with\n",
                s->name);
        fprintf(o->out, "  add one: agentstack lib sync --remote <url>%s%s\n",
                o->source ? " --source " : "", o->source ? o->source : "");
        return 0;
    }
    int rc = -1;
    strbuf br = SB_INIT, e = SB_INIT;
    char *before = NULL, *range = NULL;
    if (branch_of(path, &br, err) < 0)
        goto out;
    int has = remote_has_branch(path, url, br.buf, err);
    if (has < 0)
        goto out;
    before = rev_parse(path, "HEAD");
    if (has) {
        int st = gitv(path, NULL, &e, err, "pull", "-q", LIB_GIT_UPLOAD_PACK, "--rebase", "origin",
                      br.buf, NULL);
        if (st != 0) {
            if (st > 0) {
                enum pull_class c = classify(e.buf);
                strbuf last = SB_INIT;
                lib_git_last_line(e.buf, &last);
                if (c == PULL_CONFLICT || rebase_in_progress(path)) {
                    struct as_err e2 = AS_ERR_INIT;
                    gitv(path, NULL, NULL, &e2, "rebase", "--abort", NULL);
                    c = PULL_CONFLICT;
                }
                as_err_set(err, "library pull failed (%s) from %s: %s", class_name(c), url,
                           last.buf);
                class_hint(c, path, url, err);
                sb_release(&last);
            }
            goto out;
        }
        if (before)
            scan_pulled(path, before, o->diag);
    }
    /* Outgoing history: what the push would publish. */
    char *upstream = xasprintf("origin/%s", br.buf);
    char *up_rev = rev_parse(path, "@{u}");
    char *or_rev = up_rev ? NULL : rev_parse(path, upstream);
    range = up_rev   ? xstrdup("@{u}..HEAD")
            : or_rev ? xasprintf("%s..HEAD", upstream)
                     : xstrdup("HEAD");
    free(up_rev);
    free(or_rev);
    free(upstream);
    char *head = rev_parse(path, "HEAD");
    bool has_head = head != NULL;
    free(head);
    if (!o->allow_secrets && has_head) {
        lib_secret_hits hits = VEC_INIT;
        if (lib_secret_scan_history(path, range, &hits, err) < 0) {
            lib_secret_hits_free(&hits);
            goto out;
        }
        if (hits.n) {
            lib_secret_report(o->diag, path, &hits, true);
            lib_secret_hits_free(&hits);
            rc = 1;
            goto out;
        }
        lib_secret_hits_free(&hits);
    }
    if (!has_head) {
        fprintf(o->out, "✓ library '%s' is empty — nothing to push yet\n", s->name);
        rc = 0;
        goto out;
    }
    sb_reset(&e);
    int st =
        gitv(path, NULL, &e, err, "push", "-q", LIB_GIT_RECEIVE_PACK, "-u", "origin", br.buf, NULL);
    if (st != 0) {
        if (st > 0) {
            enum pull_class c = classify(e.buf);
            strbuf last = SB_INIT;
            lib_git_last_line(e.buf, &last);
            as_err_set(err, "library push failed (%s) to %s: %s", class_name(c), url, last.buf);
            if (strstr(e.buf, "rejected") || strstr(e.buf, "non-fast-forward"))
                as_err_hint(err, "the remote moved meanwhile: run agentstack lib sync again");
            else
                class_hint(c, path, url, err);
            sb_release(&last);
        }
        goto out;
    }
    fprintf(o->out, "✓ library '%s' synced with %s (%s)\n", s->name, url, br.buf);
    fprintf(o->out, "  ${REF}s travel as text; secret values stay on each machine\n");
    rc = 0;
out:
    free(url);
    free(before);
    free(range);
    sb_release(&br);
    sb_release(&e);
    return rc;
}
