/*
 * The varlock layer (docs/secrets.md), see backends.h: one run of
 * `varlock load --format json-full --compact` in the manifest dir, only
 * when .env.schema still hashes to the digest the lock pinned.
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/proc.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "secrets/backends.h"

struct varlock {
    char *dir;
    char *pin;
    char *bin;
    int loaded;
    json_t *values; /* object NAME -> string, or NULL when the layer is dropped */
    char why[512];  /* why the layer was dropped (never a value) */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs varlock and collects stdout (bounded, with a deadline). */
static int run_varlock(struct varlock *v, strbuf *out)
{
    const char *argv[] = {v->bin, "load", "--format", "json-full", "--compact", NULL};
    struct proc p;
    proc_init(&p, argv);
    p.cwd = v->dir;
    p.in = PROC_NULL;
    p.out = PROC_PIPE;
    p.err = PROC_NULL;
    struct as_err err = AS_ERR_INIT;
    if (proc_start(&p, &err) < 0) {
        snprintf(v->why, sizeof v->why, "varlock did not start: %.400s", err.msg);
        return -1;
    }
    long long deadline = now_ms() + SEC_VARLOCK_TIMEOUT_MS;
    int failed = 0;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            snprintf(v->why, sizeof v->why, "varlock did not finish within %d s",
                     SEC_VARLOCK_TIMEOUT_MS / 1000);
            failed = 1;
            break;
        }
        struct pollfd pfd = {p.from_child, POLLIN, 0};
        int r = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        char buf[8192];
        ssize_t n = read(p.from_child, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        if (out->len + (size_t)n > SEC_VARLOCK_MAX_OUTPUT) {
            snprintf(v->why, sizeof v->why, "varlock printed more than %zu bytes",
                     SEC_VARLOCK_MAX_OUTPUT);
            explicit_bzero(buf, sizeof buf);
            failed = 1;
            break;
        }
        sb_add(out, buf, (size_t)n);
        explicit_bzero(buf, sizeof buf);
    }
    int status;
    if (failed) {
        status = proc_terminate(&p, 500);
    } else {
        status = proc_wait(&p);
    }
    proc_close_pipes(&p);
    if (failed)
        return -1;
    if (status != 0) {
        snprintf(v->why, sizeof v->why, "varlock exited with status %d", status);
        return -1;
    }
    return 0;
}

static void varlock_load(struct varlock *v)
{
    v->loaded = 1;
    char *schema = xasprintf("%s/.env.schema", v->dir);
    strbuf text = SB_INIT, out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    char hex[SHA256_HEX_LEN + 1];
    if (!v->pin || fs_read_file(schema, SEC_DOTENV_MAX_BYTES, 1, &text, &err) < 0) {
        snprintf(v->why, sizeof v->why, "%s cannot be read", schema);
        goto out;
    }
    sha256_hex(text.buf, text.len, hex);
    if (strcmp(hex, v->pin) != 0) {
        snprintf(v->why, sizeof v->why, "%s changed since it was pinned; not running varlock",
                 schema);
        goto out;
    }
    if (run_varlock(v, &out) < 0)
        goto out;
    json_error_t je;
    json_t *root = json_loadb(out.buf, out.len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        snprintf(v->why, sizeof v->why, "varlock printed no JSON object");
        json_decref(root);
        goto out;
    }
    v->values = json_object();
    const char *k;
    json_t *val;
    json_object_foreach(root, k, val)
    {
        if (json_is_object(val))
            val = json_object_get(val, "value");
        if (json_is_string(val)) {
            json_object_set_new(v->values, k,
                                json_stringn(json_string_value(val), json_string_length(val)));
            explicit_bzero((char *)json_string_value(val), json_string_length(val));
        }
    }
    json_decref(root);
out:
    free(schema);
    sb_release(&text);
    sb_release_secure(&out);
}

static enum sec_status varlock_lookup(void *ctx, const char *name, strbuf *out, struct as_err *err)
{
    (void)err;
    struct varlock *v = ctx;
    if (!v->loaded)
        varlock_load(v);
    if (!v->values)
        return SEC_MISSING; /* a failed varlock drops the layer */
    json_t *s = json_object_get(v->values, name);
    if (!json_is_string(s))
        return SEC_MISSING;
    sb_add(out, json_string_value(s), json_string_length(s));
    return SEC_FOUND;
}

static void wipe_json_strings(json_t *obj)
{
    const char *k;
    json_t *val;
    json_object_foreach(obj, k, val)
    {
        /* jansson owns the bytes; overwrite them in place before the free. */
        size_t n = json_string_length(val);
        char *p = (char *)json_string_value(val);
        if (p)
            explicit_bzero(p, n);
    }
}

static void varlock_release(void *ctx)
{
    struct varlock *v = ctx;
    if (v->values) {
        wipe_json_strings(v->values);
        json_decref(v->values);
    }
    free(v->dir);
    free(v->pin);
    free(v->bin);
    free(v);
}

struct sec_backend sec_backend_varlock(const char *manifest_dir, const char *schema_sha256,
                                       const char *varlock_bin)
{
    struct varlock *v = xcalloc(1, sizeof *v);
    v->dir = xstrdup(manifest_dir);
    v->pin = schema_sha256 ? xstrdup(schema_sha256) : NULL;
    v->bin = xstrdup(varlock_bin ? varlock_bin : "varlock");
    struct sec_backend b = {"varlock", varlock_lookup, varlock_release, v};
    return b;
}
