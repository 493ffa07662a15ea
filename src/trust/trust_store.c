/* trust store, trust.jsonl and the state check — see trust.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "audit/audit.h"
#include "bundle/home.h"
#include "trust/trust.h"

#define TRUST_JSON_MAX ((size_t)64 << 20)

const char *trust_state_name(enum trust_state s)
{
    switch (s) {
    case TRUST_TRUSTED:
        return "trusted";
    case TRUST_CHANGED:
        return "drifted";
    case TRUST_UNTRUSTED:
    default:
        return "untrusted";
    }
}

/* ---- trust.json --------------------------------------------------------- */

static bool valid_root(json_t *root)
{
    json_t *t = json_object_get(root, "trusted");
    if (!json_is_object(root) || !json_is_object(t))
        return false;
    const char *k;
    json_t *e;
    json_object_foreach(t, k, e)
    {
        const char *d = json_get_str(e, "digest");
        if (!json_is_object(e) || !d)
            return false;
    }
    return true;
}

int trust_store_load(struct trust_store *s, struct as_err *err)
{
    memset(s, 0, sizeof *s);
    strbuf p = SB_INIT;
    if (home_path(HOME_TRUST_JSON, &p, err) < 0) {
        sb_release(&p);
        return -1;
    }
    s->path = sb_detach(&p, NULL);
    struct as_err lerr = AS_ERR_INIT;
    if (fs_exists(s->path)) {
        json_t *root = json_load_path(s->path, TRUST_JSON_MAX, &lerr);
        if (root && valid_root(root)) {
            s->root = root;
            return 0;
        }
        json_decref(root);
        s->corrupt = true;
    }
    s->root = json_object();
    json_object_set_new(s->root, "trusted", json_object());
    return 0;
}

int trust_store_save(const struct trust_store *s, struct as_err *err)
{
    strbuf out = SB_INIT;
    json_dump_pretty(s->root, &out);
    strbuf dir = SB_INIT;
    int rc = home_ensure(HOME_ROOT_DIR, &dir, err);
    if (rc == 0) {
        struct fs_write_opts o = {.mode = HOME_FILE_MODE, .symlinks = FS_SYMLINK_REFUSE};
        rc = fs_write_atomic(s->path, out.buf, out.len, &o, err);
    }
    sb_release(&dir);
    sb_release(&out);
    return rc;
}

void trust_store_free(struct trust_store *s)
{
    json_decref(s->root);
    free(s->path);
    memset(s, 0, sizeof *s);
}

json_t *trust_store_entry(const struct trust_store *s, const char *key)
{
    return json_object_get(json_object_get(s->root, "trusted"), key);
}

const char *trust_store_digest(const struct trust_store *s, const char *key)
{
    return json_get_str(trust_store_entry(s, key), "digest");
}

int trust_lock(struct as_lock *l, struct as_err *err)
{
    strbuf dir = SB_INIT;
    int rc = home_ensure(HOME_ROOT_DIR, &dir, err);
    if (rc == 0)
        rc = lock_acquire(l, dir.buf, TRUST_LOCK_TIMEOUT_MS, err);
    sb_release(&dir);
    return rc;
}

/* ---- trust.jsonl -------------------------------------------------------- */

int trust_log(const char *action, const char *key, const char *digest, struct as_err *err)
{
    strbuf path = SB_INIT;
    if (home_ensure(HOME_TRUST_LOG, &path, err) < 0) {
        sb_release(&path);
        return -1;
    }
    json_t *rec = json_object();
    json_object_set_new(rec, "ts", json_integer((json_int_t)time(NULL)));
    json_object_set_new(rec, "action", json_string(action));
    /* A key that is not UTF-8 still gets a row rather than none. */
    json_t *k = json_string(key);
    json_object_set_new(rec, "project", k ? k : json_string("(non-UTF-8 path)"));
    json_object_set_new(rec, "digest", json_string(digest));
    struct aud_append_opts o = {.rotate_bytes = 0, .lock_timeout_ms = TRUST_LOCK_TIMEOUT_MS};
    int rc = aud_append(path.buf, rec, &o, err);
    json_decref(rec);
    sb_release(&path);
    return rc;
}

int trust_repin(const char *key, const char *old_digest, const char *new_digest, bool held,
                struct as_err *err)
{
    struct as_lock wl = {-1};
    if (!held && trust_lock(&wl, err) < 0)
        return -1;
    struct trust_store s;
    int rc = trust_store_load(&s, err);
    if (rc == 0) {
        json_t *e = trust_store_entry(&s, key);
        const char *d = json_get_str(e, "digest");
        if (!d || strcmp(d, old_digest) != 0 || strcmp(d, new_digest) == 0) {
            rc = 0;
        } else {
            json_object_set_new(e, "digest", json_string(new_digest));
            rc = trust_store_save(&s, err);
            if (rc == 0) {
                struct as_err lerr = AS_ERR_INIT;
                (void)trust_log("repin", key, new_digest, &lerr); /* best-effort */
                rc = 1;
            }
        }
        trust_store_free(&s);
    }
    if (!held)
        lock_release(&wl);
    return rc;
}

/* ---- the state check ---------------------------------------------------- */

void trust_status_release(struct trust_status *st)
{
    sb_release(&st->key);
}

int trust_check_snapshot(const struct bundle_paths *p, const struct manifest_snapshot *snap,
                         struct trust_status *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    sb_init(&out->key, 256);
    discover_project_key(p->base, &out->key);
    consent_digest_snapshot(snap, out->digest);
    struct trust_store s;
    if (trust_store_load(&s, err) < 0)
        return -1;
    json_t *e = trust_store_entry(&s, out->key.buf);
    const char *d = json_get_str(e, "digest");
    if (!d) {
        out->state = TRUST_UNTRUSTED;
    } else {
        snprintf(out->trusted_digest, sizeof out->trusted_digest, "%s", d);
        out->trusted_at = json_get_int(e, "trusted_at", 0);
        out->state =
            snap->has_manifest && strcmp(d, out->digest) == 0 ? TRUST_TRUSTED : TRUST_CHANGED;
    }
    trust_store_free(&s);
    return 0;
}

int trust_check(const struct bundle_paths *p, struct trust_status *out, struct as_err *err)
{
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    int rc = manifest_snapshot_read(p, &snap, err);
    if (rc == 0)
        rc = trust_check_snapshot(p, &snap, out, err);
    else
        memset(out, 0, sizeof *out);
    manifest_snapshot_release(&snap);
    return rc;
}

/* ---- pin verification --------------------------------------------------- */

void trust_pins_free(struct trust_pins *t)
{
    for (size_t i = 0; i < t->results.n; i++)
        free(t->results.v[i].message);
    vec_free(&t->results);
    pin_items_free(&t->items);
    free(t->lock_error);
    lockfile_free(t->lock);
    memset(t, 0, sizeof *t);
}

/* Which statuses block a grant (and activation). */
static void classify(struct trust_pin_result *r)
{
    const struct pin_item *it = r->item;
    enum pin_status st = r->status;
    r->blocks = false;
    r->advisory = false;
    if (st == PIN_MATCHES)
        return;
    if (st == PIN_UNAVAILABLE) {
        r->advisory = true; /* offline — pin unverified */
        return;
    }
    switch (it->kind) {
    case PIN_SERVER:
        /* Inline servers' bytes are in the manifest, so in the consent digest. */
        r->blocks = it->library;
        break;
    case PIN_SKILL:
        if (it->library && st == PIN_UNPINNED)
            r->advisory = true;
        else
            r->blocks = true;
        break;
    case PIN_INSTRUCTION:
    case PIN_VARIANT:
    case PIN_EXECUTABLE:
    case PIN_EXTENSION: /* unpinned, drifted, retargeted or unresolvable */
    case PIN_WORKFLOW:  /* … or role-changed */
    case PIN_BLUEPRINT:
        r->blocks = true;
        break;
    case PIN_SETTING:
        r->advisory = true; /* drift warns, never blocks */
        break;
    }
}

int trust_verify_pins(const struct manifest *m, const char *lock_path, const char *lock_data,
                      size_t lock_len, bool has_lock, const char *home, struct trust_pins *out,
                      struct as_err *err)
{
    return trust_verify_pins_lib(m, lock_path, lock_data, lock_len, has_lock, home, NULL, out, err);
}

int trust_verify_pins_lib(const struct manifest *m, const char *lock_path, const char *lock_data,
                          size_t lock_len, bool has_lock, const char *home,
                          const struct trust_library *lib, struct trust_pins *out,
                          struct as_err *err)
{
    memset(out, 0, sizeof *out);
    struct lockfile *lock = NULL;
    out->lock_absent = !has_lock;
    if (has_lock) {
        struct as_err lerr = AS_ERR_INIT;
        lock = lockfile_parse(lock_path, lock_data, lock_len, &lerr);
        if (!lock) {
            char buf[4096];
            out->lock_unreadable = true;
            out->lock_error = xstrdup(as_err_str(&lerr, buf, sizeof buf));
            out->blocking++;
        }
    }
    struct pin_opts o = {.home = home,
                         .lock = lock,
                         .library = lib ? lib->pin : NULL,
                         .library_ctx = lib ? lib->ctx : NULL};
    if (pin_collect(m, &o, &out->items, err) < 0) {
        lockfile_free(lock);
        return -1;
    }
    for (size_t i = 0; i < out->items.n; i++) {
        struct trust_pin_result r = {0};
        r.item = &out->items.v[i];
        r.status = pin_verify_item(lock, r.item);
        classify(&r);
        strbuf d = SB_INIT;
        pin_describe(lock, r.item, r.status, &d);
        r.message = sb_detach(&d, NULL);
        if (r.blocks)
            out->blocking++;
        vec_push(&out->results, r);
    }
    out->lock = lock;
    return 0;
}
