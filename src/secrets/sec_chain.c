/*
 * The resolution chain and its first three backends — see secrets.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/vec.h"
#include "base/xalloc.h"
#include "secrets/secrets.h"

const char *sec_status_name(enum sec_status s)
{
    switch (s) {
    case SEC_FOUND:
        return "found";
    case SEC_MISSING:
        return "missing";
    case SEC_FAILED:
        return "failed";
    }
    return "failed";
}

/* ---- cache entries -------------------------------------------------------- */

struct cached {
    char *name;
    enum sec_status status;
    const char *source;
    char why[512];
    strbuf value; /* wiped on free */
};

struct sec_chain {
    VEC(struct sec_backend) b;
    VEC(struct cached) cache;
};

struct sec_chain *sec_chain_new(void)
{
    return xcalloc(1, sizeof(struct sec_chain));
}

void sec_chain_free(struct sec_chain *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->b.n; i++)
        if (c->b.v[i].release)
            c->b.v[i].release(c->b.v[i].ctx);
    vec_free(&c->b);
    for (size_t i = 0; i < c->cache.n; i++) {
        free(c->cache.v[i].name);
        sb_release_secure(&c->cache.v[i].value);
    }
    vec_free(&c->cache);
    free(c);
}

void sec_chain_append(struct sec_chain *c, const struct sec_backend *b)
{
    vec_push(&c->b, *b);
}

void sec_chain_insert_before(struct sec_chain *c, const char *before, const struct sec_backend *b)
{
    size_t at = c->b.n;
    for (size_t i = 0; i < c->b.n; i++)
        if (before && strcmp(c->b.v[i].name, before) == 0) {
            at = i;
            break;
        }
    vec_push(&c->b, *b); /* grow by one, then shift */
    memmove(&c->b.v[at + 1], &c->b.v[at], (c->b.n - 1 - at) * sizeof *c->b.v);
    c->b.v[at] = *b;
}

size_t sec_chain_count(const struct sec_chain *c)
{
    return c->b.n;
}

const char *sec_chain_name(const struct sec_chain *c, size_t i)
{
    return i < c->b.n ? c->b.v[i].name : NULL;
}

bool sec_name_ok(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

static struct cached *walk(struct sec_chain *c, const char *name)
{
    for (size_t i = 0; i < c->cache.n; i++)
        if (strcmp(c->cache.v[i].name, name) == 0)
            return &c->cache.v[i];
    struct cached e = {0};
    e.name = xstrdup(name);
    e.value = (strbuf)SB_INIT;
    e.status = SEC_MISSING;
    e.source = NULL;
    if (!sec_name_ok(name)) {
        e.status = SEC_FAILED;
        snprintf(e.why, sizeof e.why, "not a valid reference name");
    }
    for (size_t i = 0; sec_name_ok(name) && i < c->b.n; i++) {
        struct sec_backend *b = &c->b.v[i];
        struct as_err err = AS_ERR_INIT;
        strbuf v = SB_INIT;
        enum sec_status st = b->lookup(b->ctx, name, &v, &err);
        if (st == SEC_FOUND && memchr(v.buf, '\0', v.len)) {
            st = SEC_FAILED;
            as_err_set(&err, "the value contains a NUL byte");
        }
        if (st == SEC_FOUND) {
            e.status = SEC_FOUND;
            e.source = b->name;
            e.why[0] = '\0';
            e.value = v;
            break;
        }
        sb_release_secure(&v);
        /* Failed beats missing, but the walk goes on: a later layer may
         * still hold the value. The first failure is the one reported. */
        if (st == SEC_FAILED && e.status != SEC_FAILED) {
            e.status = SEC_FAILED;
            e.source = b->name;
            snprintf(e.why, sizeof e.why, "%.40s: %.400s", b->name,
                     err.msg[0] ? err.msg : "lookup failed");
        }
    }
    vec_push(&c->cache, e);
    return &c->cache.v[c->cache.n - 1];
}

enum sec_status sec_resolve(struct sec_chain *c, const char *name, strbuf *value,
                            struct sec_result *r)
{
    struct cached *e = walk(c, name);
    sb_reset(value);
    if (e->status == SEC_FOUND)
        sb_add(value, e->value.buf, e->value.len);
    if (r) {
        r->status = e->status;
        r->source = e->source;
        snprintf(r->why, sizeof r->why, "%s", e->why);
    }
    return e->status;
}

enum sec_status sec_locate(struct sec_chain *c, const char *name, struct sec_result *r)
{
    strbuf v = SB_INIT;
    enum sec_status s = sec_resolve(c, name, &v, r);
    sb_release_secure(&v);
    return s;
}

/* ---- env ------------------------------------------------------------------ */

static enum sec_status env_lookup(void *ctx, const char *name, strbuf *out, struct as_err *err)
{
    (void)ctx;
    (void)err;
    const char *v = getenv(name);
    if (!v)
        return SEC_MISSING;
    sb_adds(out, v);
    return SEC_FOUND;
}

struct sec_backend sec_backend_env(void)
{
    struct sec_backend b = {"env", env_lookup, NULL, NULL};
    return b;
}

/* ---- KEY=value files ------------------------------------------------------ */

void sec_dotenv_parse(const char *text, size_t len, sec_dotenv_fn fn, void *ctx)
{
    size_t i = 0;
    unsigned line = 0;
    while (i < len) {
        size_t s = i;
        while (i < len && text[i] != '\n')
            i++;
        size_t e = i;
        if (i < len)
            i++;
        line++;
        while (s < e && (text[s] == ' ' || text[s] == '\t' || text[s] == '\r'))
            s++;
        while (e > s && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r'))
            e--;
        if (s == e || text[s] == '#')
            continue;
        if (e - s > 7 && memcmp(text + s, "export", 6) == 0 &&
            (text[s + 6] == ' ' || text[s + 6] == '\t')) {
            s += 7;
            while (s < e && (text[s] == ' ' || text[s] == '\t'))
                s++;
        }
        const char *eq = memchr(text + s, '=', e - s);
        if (!eq)
            continue;
        size_t ks = s, ke = (size_t)(eq - text);
        size_t vs = ke + 1, ve = e;
        while (ke > ks && (text[ke - 1] == ' ' || text[ke - 1] == '\t'))
            ke--;
        while (vs < ve && (text[vs] == ' ' || text[vs] == '\t'))
            vs++;
        if (ke == ks)
            continue;
        if (ve - vs >= 2 && (text[vs] == '"' || text[vs] == '\'') && text[ve - 1] == text[vs]) {
            vs++;
            ve--;
        }
        if (fn(ctx, text + ks, ke - ks, text + vs, ve - vs, line))
            return;
    }
}

struct dotenv {
    char *path;
    int require_private;
    int loaded;
    enum sec_status state; /* SEC_FOUND: parsed; SEC_MISSING: no file; SEC_FAILED */
    char why[400];
    strbuf text; /* the file's bytes (holds values: wiped on free) */
};

struct find_ctx {
    const char *name;
    size_t nlen;
    const char *val;
    size_t vlen;
    int found;
};

static int find_cb(void *ctx, const char *key, size_t klen, const char *val, size_t vlen,
                   unsigned line)
{
    (void)line;
    struct find_ctx *f = ctx;
    if (klen == f->nlen && memcmp(key, f->name, klen) == 0) {
        /* Last assignment wins, as a shell sourcing the file would see it. */
        f->val = val;
        f->vlen = vlen;
        f->found = 1;
    }
    return 0;
}

static void dotenv_load(struct dotenv *d)
{
    d->loaded = 1;
    int fd = open(d->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            d->state = SEC_MISSING;
            return;
        }
        d->state = SEC_FAILED;
        snprintf(d->why, sizeof d->why, "cannot open %s: %s", d->path,
                 errno == ELOOP ? "it is a symlink" : strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        d->state = SEC_FAILED;
        snprintf(d->why, sizeof d->why, "%s is not a regular file", d->path);
        return;
    }
    if (d->require_private && (st.st_uid != geteuid() || (st.st_mode & 077))) {
        close(fd);
        d->state = SEC_FAILED;
        snprintf(d->why, sizeof d->why,
                 "%s is not private to you (mode %03o, owner %ld); fix: chmod 600 %s", d->path,
                 (unsigned)(st.st_mode & 0777), (long)st.st_uid, d->path);
        return;
    }
    if ((size_t)st.st_size > SEC_DOTENV_MAX_BYTES) {
        close(fd);
        d->state = SEC_FAILED;
        snprintf(d->why, sizeof d->why, "%s exceeds the %zu-byte limit", d->path,
                 SEC_DOTENV_MAX_BYTES);
        return;
    }
    sb_grow(&d->text, (size_t)st.st_size + 1);
    for (;;) {
        char buf[8192];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            d->state = SEC_FAILED;
            snprintf(d->why, sizeof d->why, "cannot read %s: %s", d->path, strerror(errno));
            explicit_bzero(buf, sizeof buf);
            close(fd);
            return;
        }
        if (n == 0)
            break;
        if (d->text.len + (size_t)n > SEC_DOTENV_MAX_BYTES) {
            d->state = SEC_FAILED;
            snprintf(d->why, sizeof d->why, "%s exceeds the %zu-byte limit", d->path,
                     SEC_DOTENV_MAX_BYTES);
            explicit_bzero(buf, sizeof buf);
            close(fd);
            return;
        }
        sb_add(&d->text, buf, (size_t)n);
        explicit_bzero(buf, (size_t)n);
    }
    close(fd);
    d->state = SEC_FOUND;
}

static enum sec_status dotenv_lookup(void *ctx, const char *name, strbuf *out, struct as_err *err)
{
    struct dotenv *d = ctx;
    if (!d->loaded)
        dotenv_load(d);
    if (d->state == SEC_MISSING)
        return SEC_MISSING;
    if (d->state == SEC_FAILED) {
        as_err_set(err, "%s", d->why);
        return SEC_FAILED;
    }
    struct find_ctx f = {name, strlen(name), NULL, 0, 0};
    sec_dotenv_parse(d->text.buf, d->text.len, find_cb, &f);
    if (!f.found)
        return SEC_MISSING;
    sb_add(out, f.val, f.vlen);
    return SEC_FOUND;
}

static void dotenv_release(void *ctx)
{
    struct dotenv *d = ctx;
    free(d->path);
    sb_release_secure(&d->text);
    free(d);
}

struct sec_backend sec_backend_dotenv(const char *name, const char *path, int require_private)
{
    struct dotenv *d = xcalloc(1, sizeof *d);
    d->path = xstrdup(path);
    d->require_private = require_private;
    d->text = (strbuf)SB_INIT;
    struct sec_backend b = {name, dotenv_lookup, dotenv_release, d};
    return b;
}

/* ---- the default chain ---------------------------------------------------- */

/* $AGENTSTACK_HOME, else ~/.agentstack; NULL when neither can be told. */
static char *home_store_path(void)
{
    const char *h = getenv("AGENTSTACK_HOME");
    if (h && *h) {
        if (h[0] == '/')
            return xasprintf("%s/secrets.env", h);
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd))
            return NULL;
        return xasprintf("%s/%s/secrets.env", cwd, h);
    }
    const char *home = getenv("HOME");
    if (home && *home)
        return xasprintf("%s/.agentstack/secrets.env", home);
    return NULL;
}

struct sec_chain *sec_chain_default(const char *project_dotenv)
{
    struct sec_chain *c = sec_chain_new();
    struct sec_backend env = sec_backend_env();
    sec_chain_append(c, &env);
    char *store = home_store_path();
    if (store) {
        struct sec_backend f = sec_backend_dotenv("file", store, 1);
        sec_chain_append(c, &f);
        free(store);
    }
    if (project_dotenv) {
        struct sec_backend p = sec_backend_dotenv(".env", project_dotenv, 0);
        sec_chain_append(c, &p);
    }
    return c;
}
