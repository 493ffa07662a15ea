/*
 * Writers for the KEY=value stores (the file store $AGENTSTACK_HOME/
 * secrets.env and a project's .env) and the value rules every store shares;
 * see backends.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/lock.h"
#include "base/xalloc.h"
#include "secrets/backends.h"

const char *sec_store_label(enum sec_store_kind k)
{
    switch (k) {
    case SEC_STORE_KEYCHAIN:
        return "the OS keychain";
    case SEC_STORE_FILE:
        return "the file store";
    case SEC_STORE_DOTENV:
        return "the project .env";
    }
    return "?";
}

int sec_value_check(enum sec_store_kind k, const char *value, size_t len, struct as_err *err)
{
    if (len == 0)
        return as_err_set(err, "the value is empty");
    if (memchr(value, '\0', len))
        return as_err_set(err, "the value contains a NUL byte (refused everywhere)");
    if (k != SEC_STORE_KEYCHAIN && (memchr(value, '\n', len) || memchr(value, '\r', len))) {
        as_err_set(err,
                   "the value contains a line break; %s is a KEY=value file with no "
                   "escapes, so it cannot hold one",
                   sec_store_label(k));
        as_err_hint(err, "store it in the OS keychain instead (agentstack secret set NAME)");
        return -1;
    }
    return 0;
}

int sec_file_store_path(strbuf *out, struct as_err *err)
{
    sb_reset(out);
    const char *h = getenv("AGENTSTACK_HOME");
    if (h && *h) {
        if (h[0] != '/') {
            char cwd[4096];
            if (!getcwd(cwd, sizeof cwd))
                return as_err_errno(err, "cannot locate $AGENTSTACK_HOME");
            sb_addf(out, "%s/", cwd);
        }
        sb_addf(out, "%s/secrets.env", h);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home)
        return as_err_set(err, "cannot locate the machine home: neither $AGENTSTACK_HOME nor "
                               "$HOME is set");
    sb_addf(out, "%s/.agentstack/secrets.env", home);
    return 0;
}

/* ---- reading the current file ------------------------------------------------ */

/* Reads path into text: 0 (text may be empty when absent), -1 + err. */
static int read_existing(const char *path, strbuf *text, bool *exists, struct as_err *err)
{
    *exists = false;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return as_err_errno(err, "cannot stat %s", path);
    }
    if (S_ISLNK(st.st_mode))
        return as_err_set(err, "%s is a symlink; refusing to write secrets through it", path);
    if (!S_ISREG(st.st_mode))
        return as_err_set(err, "%s is not a regular file", path);
    if (st.st_uid != geteuid())
        return as_err_set(err,
                          "%s is owned by uid %ld, not you; refusing to write secrets "
                          "into it",
                          path, (long)st.st_uid);
    *exists = true;
    if (fs_read_file(path, SEC_DOTENV_MAX_BYTES, 1, text, err) < 0)
        return -1;
    if (memchr(text->buf, '\0', text->len))
        return as_err_set(err, "%s contains a NUL byte; fix or remove it first", path);
    return 0;
}

struct span_ctx {
    const char *text;
    const char *name;
    size_t nlen;
    VEC(unsigned) lines; /* 1-based lines assigning name */
};

static int span_cb(void *ctx, const char *key, size_t klen, const char *val, size_t vlen,
                   unsigned line)
{
    (void)val;
    (void)vlen;
    struct span_ctx *s = ctx;
    if (klen == s->nlen && memcmp(key, s->name, klen) == 0)
        vec_push(&s->lines, line);
    return 0;
}

static bool line_listed(const unsigned *v, size_t n, unsigned line)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == line)
            return true;
    return false;
}

static bool needs_quotes(const char *v, size_t len)
{
    if (len == 0 || v[0] == ' ' || v[0] == '\t' || v[len - 1] == ' ' || v[len - 1] == '\t')
        return true;
    for (size_t i = 0; i < len; i++)
        if (v[i] == ' ' || v[i] == '\t' || v[i] == '#' || v[i] == '"' || v[i] == '\'')
            return true;
    return false;
}

static void add_assignment(strbuf *out, const char *name, const char *value, size_t len)
{
    sb_adds(out, name);
    sb_addc(out, '=');
    bool q = needs_quotes(value, len);
    if (q)
        sb_addc(out, '"');
    sb_add(out, value, len);
    if (q)
        sb_addc(out, '"');
}

/* Rebuilds text: lines assigning name are replaced by the new assignment
 * (first one) or dropped (the rest, or all when value is NULL). */
static void rewrite(const char *text, size_t tlen, const char *name, const char *value, size_t vlen,
                    strbuf *out, bool *touched)
{
    struct span_ctx s = {text, name, strlen(name), VEC_INIT};
    sec_dotenv_parse(text, tlen, span_cb, &s);
    *touched = s.lines.n > 0;
    const char *nl = memmem(text, tlen, "\r\n", 2) ? "\r\n" : "\n";
    size_t i = 0;
    unsigned line = 0;
    bool placed = false;
    while (i < tlen) {
        size_t b = i;
        while (i < tlen && text[i] != '\n')
            i++;
        size_t e = i; /* excludes '\n' */
        if (i < tlen)
            i++;
        line++;
        if (!line_listed(s.lines.v, s.lines.n, line)) {
            sb_add(out, text + b, i - b);
            continue;
        }
        if (value && !placed) {
            add_assignment(out, name, value, vlen);
            bool crlf = e > b && text[e - 1] == '\r';
            if (e < tlen || i > e)
                sb_adds(out, crlf ? "\r\n" : "\n");
            placed = true;
        }
    }
    if (value && !placed) {
        if (out->len && out->buf[out->len - 1] != '\n')
            sb_adds(out, nl);
        add_assignment(out, name, value, vlen);
        sb_adds(out, nl);
    }
    vec_free(&s.lines);
}

static int ensure_parent(const char *path, struct as_err *err)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = fs_mkdirs(dir, 0700, err);
    }
    free(dir);
    return rc;
}

static int write_private(const char *path, const strbuf *data, struct as_err *err)
{
    /* Exactly 0600 even over a looser existing file, and never through a
     * symlink planted at the path (fs_write_exact refuses it before any
     * chmod, so no target elsewhere is touched). */
    struct fs_write_opts o = {.mode = 0600, .symlinks = FS_SYMLINK_REFUSE};
    return fs_write_exact(path, data->buf, data->len, &o, err);
}

static int edit_file(const char *path, const char *name, const char *value, size_t vlen,
                     bool *existed, const char *lock_dir, struct as_err *err)
{
    struct as_lock lk = {-1};
    if (lock_dir) {
        if (fs_mkdirs(lock_dir, 0700, err) < 0 ||
            lock_acquire(&lk, lock_dir, LOCK_WAIT_MS, err) < 0)
            return -1;
    }
    strbuf text = SB_INIT, out = SB_INIT;
    bool exists = false, touched = false;
    int rc = -1;
    if (read_existing(path, &text, &exists, err) < 0)
        goto done;
    rewrite(text.buf, text.len, name, value, vlen, &out, &touched);
    if (existed)
        *existed = touched;
    if (!value && !touched) {
        rc = 0; /* nothing to remove: leave the file alone */
        goto done;
    }
    if (!exists && ensure_parent(path, err) < 0)
        goto done;
    rc = write_private(path, &out, err);
done:
    sb_release_secure(&text);
    sb_release_secure(&out);
    if (lock_dir)
        lock_release(&lk);
    return rc;
}

int sec_dotenv_set(const char *path, const char *name, const char *value, size_t len,
                   enum sec_store_kind k, const char *lock_dir, struct as_err *err)
{
    if (!sec_name_ok(name))
        return as_err_set(err, "'%s' is not a valid secret name ([A-Za-z_][A-Za-z0-9_]*)", name);
    if (sec_value_check(k, value, len, err) < 0)
        return -1;
    return edit_file(path, name, value, len, NULL, lock_dir, err);
}

int sec_dotenv_remove(const char *path, const char *name, bool *existed, const char *lock_dir,
                      struct as_err *err)
{
    if (existed)
        *existed = false;
    if (!sec_name_ok(name))
        return as_err_set(err, "'%s' is not a valid secret name ([A-Za-z_][A-Za-z0-9_]*)", name);
    return edit_file(path, name, NULL, 0, existed, lock_dir, err);
}

static int names_cb(void *ctx, const char *key, size_t klen, const char *val, size_t vlen,
                    unsigned line)
{
    (void)val;
    (void)vlen;
    (void)line;
    strvec *names = ctx;
    char *k = xstrndup(key, klen);
    if (sec_name_ok(k) && strvec_find(names, k) < 0)
        strvec_push_take(names, k);
    else
        free(k);
    return 0;
}

int sec_dotenv_names(const char *path, strvec *names, struct as_err *err)
{
    strbuf text = SB_INIT;
    bool exists = false;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return as_err_errno(err, "cannot stat %s", path);
    }
    if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode))
        return as_err_set(err, "%s is not a regular file", path);
    (void)exists;
    if (fs_read_file(path, SEC_DOTENV_MAX_BYTES, 1, &text, err) < 0) {
        sb_release_secure(&text);
        return -1;
    }
    sec_dotenv_parse(text.buf, text.len, names_cb, names);
    sb_release_secure(&text);
    return 0;
}

/* ---- .gitignore ------------------------------------------------------------- */

static bool listed(const char *text, size_t len, const char *rule)
{
    size_t rl = strlen(rule), i = 0;
    while (i < len) {
        size_t b = i;
        while (i < len && text[i] != '\n')
            i++;
        size_t e = i;
        if (i < len)
            i++;
        while (b < e && (text[b] == ' ' || text[b] == '\t'))
            b++;
        while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r'))
            e--;
        if (e - b == rl && memcmp(text + b, rule, rl) == 0)
            return true;
    }
    return false;
}

int sec_gitignore_env(const char *project_root, const char *rel, bool *added, struct as_err *err)
{
    *added = false;
    char *git = xasprintf("%s/.git", project_root);
    bool is_git = fs_exists(git);
    free(git);
    if (!is_git)
        return 0;
    char *path = xasprintf("%s/.gitignore", project_root);
    strbuf text = SB_INIT;
    int rc = 0;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            rc = as_err_set(err, "%s is not a regular file; add %s to it by hand", path, rel);
            goto out;
        }
        if (fs_read_file(path, SEC_DOTENV_MAX_BYTES, 1, &text, err) < 0) {
            rc = -1;
            goto out;
        }
    }
    const char *alts[] = {rel, rel + (rel[0] == '/'), ".env", "/.env", "**/.env"};
    for (size_t i = 0; i < sizeof alts / sizeof *alts; i++)
        if (listed(text.buf, text.len, alts[i]))
            goto out;
    if (text.len && text.buf[text.len - 1] != '\n')
        sb_addc(&text, '\n');
    sb_addf(&text, "# agentstack: local secrets — never commit\n%s\n", rel);
    struct fs_write_opts o = {
        .mode = 0644, .symlinks = FS_SYMLINK_REFUSE, .contain_root = project_root};
    if (fs_write_atomic(path, text.buf, text.len, &o, err) < 0) {
        rc = -1;
        goto out;
    }
    *added = true;
out:
    sb_release(&text);
    free(path);
    return rc;
}
