/* txn — the write transaction and the re-pin behind every project edit; see txn.h. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/rand.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "library/pack.h"
#include "library/txn.h"

/* ---- re-pinning ---------------------------------------------------------------------- */

/* pin_build_lock keeps stale skill/server rows (an offline source must not
 * lose its pin); a removal names the rows that must go. */
static void drop_rows(struct lockfile *l, const strvec *skills, const strvec *servers)
{
    size_t w = 0;
    for (size_t i = 0; skills && i < l->skills.n; i++) {
        struct lock_skill *s = &l->skills.v[i];
        if (strvec_find(skills, s->name) < 0) {
            l->skills.v[w++] = *s;
            continue;
        }
        lock_skill_free(s);
    }
    if (skills)
        l->skills.n = w;
    w = 0;
    for (size_t i = 0; servers && i < l->servers.n; i++) {
        struct lock_server *s = &l->servers.v[i];
        if (strvec_find(servers, s->name) < 0) {
            l->servers.v[w++] = *s;
            continue;
        }
        lock_server_free(s);
    }
    if (servers)
        l->servers.n = w;
}

static int relock(struct library *lib, const struct bundle_paths *p, strbuf *summary,
                  const strvec *drop_skills, const strvec *drop_servers, struct as_err *err)
{
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    struct lockfile *old = NULL, *nl = NULL;
    pin_items items = VEC_INIT;
    mf_diags diags = VEC_INIT;
    strvec warnings = STRVEC_INIT;
    int rc = -1;
    if (manifest_snapshot_read(p, &snap, err) < 0)
        goto out;
    m = manifest_load_snapshot(p, &snap, err);
    if (!m)
        goto out;
    struct manifest_env env = {
        .library_has = lib_manifest_has, .library_ctx = lib, .check_paths = true};
    if (manifest_validate(m, &env, &diags)) {
        for (size_t i = 0; i < diags.n; i++) {
            if (diags.v[i].sev != MF_ERROR)
                continue;
            /* the fix as the hint: an error's message is one line (cli_error) */
            strbuf d = SB_INIT;
            mf_diag_message(&diags.v[i], &d);
            as_err_set(err, "refusing to lock: %s", d.buf);
            if (diags.v[i].fix)
                as_err_hint(err, "%s", diags.v[i].fix);
            sb_release(&d);
            break;
        }
        goto out;
    }
    if (snap.has_lock) {
        old = lockfile_parse(p->lock, snap.lock.buf, snap.lock.len, err);
        if (!old)
            goto out;
    }
    struct pin_opts po = {
        .home = lib->home, .library = lib_pin_lookup, .library_ctx = lib, .lock = old};
    if (pin_collect(m, &po, &items, err) < 0)
        goto out;
    for (size_t i = 0; i < items.n; i++) {
        if (items.v[i].state == PIN_FAILED) {
            as_err_set(err, "refusing to lock: %s", items.v[i].error);
            goto out;
        }
    }
    nl = pin_build_lock(&items, old, NULL);
    drop_rows(nl, drop_skills, drop_servers);
    bool written = false;
    if (lockfile_save(nl, p->lock, p->project_root, snap.lock.buf, snap.lock.len, snap.has_lock,
                      &written, err) < 0)
        goto out;
    pin_deposit(&items, lib->home, &warnings);
    if (summary) {
        size_t n =
            nl->skills.n + nl->servers.n + nl->instructions.n + nl->executables.n + nl->settings.n;
        sb_addf(summary, "%zu pin%s (%zu skill%s, %zu server%s)", n, n == 1 ? "" : "s",
                nl->skills.n, nl->skills.n == 1 ? "" : "s", nl->servers.n,
                nl->servers.n == 1 ? "" : "s");
    }
    rc = 0;
out:
    strvec_clear(&warnings);
    mf_diags_free(&diags);
    pin_items_free(&items);
    lockfile_free(old);
    lockfile_free(nl);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    return rc;
}

int lib_relock(struct library *lib, const struct bundle_paths *p, strbuf *summary,
               struct as_err *err)
{
    return relock(lib, p, summary, NULL, NULL, err);
}

/* ---- the transaction ------------------------------------------------------------------ */

toml_edit *lib_manifest_edit(const struct bundle_paths *p, struct as_err *err)
{
    strbuf text = SB_INIT;
    if (fs_read_file(p->manifest, LIB_MAX_FILE_BYTES, 0, &text, err) < 0) {
        sb_release(&text);
        return NULL;
    }
    toml_edit *ed = toml_edit_open(p->manifest, text.buf, text.len, err);
    sb_release(&text);
    return ed;
}

int lib_txn_begin(struct lib_txn *t, const struct bundle_paths *p, struct as_err *err)
{
    if (trust_check(p, &t->before, err) < 0)
        return -1;
    t->p = p;
    struct as_err e = AS_ERR_INIT;
    t->manifest_had = fs_read_file(p->manifest, LIB_MAX_FILE_BYTES, 0, &t->manifest_old, &e) == 0;
    as_err_clear(&e);
    t->lock_had = fs_read_file(p->lock, LIB_MAX_FILE_BYTES, 0, &t->lock_old, &e) == 0;
    return 0;
}

int lib_txn_aside(struct lib_txn *t, const char *path, struct as_err *err)
{
    char rnd[17];
    if (rand_hex(rnd, 8, err) < 0)
        return -1;
    char *aside = xasprintf("%s.agentstack-old-%s", path, rnd);
    if (rename(path, aside) != 0) {
        as_err_errno(err, "cannot move %s aside", path);
        free(aside);
        return -1;
    }
    struct lib_txn_moved m = {xstrdup(path), aside};
    vec_push(&t->moved, m);
    return 0;
}

int lib_txn_parents(struct lib_txn *t, const char *base, const char *path, struct as_err *err)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    size_t bl = strlen(base);
    char *top = NULL, *cur = xstrdup(dir);
    while (strlen(cur) > bl && !fs_exists(cur)) {
        free(top);
        top = xstrdup(cur);
        char *s2 = strrchr(cur, '/');
        if (!s2)
            break;
        *s2 = '\0';
    }
    free(cur);
    int rc = 0;
    if (top) {
        rc = fs_mkdirs(dir, 0755, err);
        if (rc == 0)
            strvec_push(&t->created, top);
    }
    free(top);
    free(dir);
    return rc;
}

int lib_txn_commit(struct lib_txn *t, struct library *lib, toml_edit *ed, const strvec *drop_skills,
                   const strvec *drop_servers, const char *undone, struct as_err *err)
{
    const struct bundle_paths *p = t->p;
    size_t len;
    const char *text = toml_edit_text(ed, &len);
    struct fs_write_opts o = {
        .mode = 0644, .symlinks = FS_SYMLINK_FOLLOW, .contain_root = p->project_root};
    t->manifest_written = true;
    if (fs_write_atomic(p->manifest, text, len, &o, err) < 0)
        return -1;
    if (relock(lib, p, &t->pins, drop_skills, drop_servers, err) < 0) {
        as_err_prefix(err, "%s", undone);
        return -1;
    }
    t->committed = true;
    return 0;
}

void lib_txn_done(const struct lib_txn *t, FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fprintf(f, "✓ pinned %s in %s\n", t->pins.buf, t->p->lock);
}

static void restore_file(const char *path, const strbuf *old, bool had, const char *root)
{
    struct as_err e = AS_ERR_INIT;
    if (had) {
        struct fs_write_opts o = {
            .mode = 0644, .symlinks = FS_SYMLINK_FOLLOW, .contain_root = root};
        fs_write_atomic(path, old->buf, old->len, &o, &e);
    } else {
        unlink(path);
    }
}

void lib_txn_end(struct lib_txn *t)
{
    struct as_err e = AS_ERR_INIT;
    if (t->p && !t->committed) {
        for (size_t i = t->created.n; i-- > 0;)
            fs_rmtree(t->created.v[i], &e);
        for (size_t i = t->moved.n; i-- > 0;)
            (void)rename(t->moved.v[i].aside, t->moved.v[i].from);
        if (t->manifest_written) {
            restore_file(t->p->manifest, &t->manifest_old, t->manifest_had, t->p->project_root);
            restore_file(t->p->lock, &t->lock_old, t->lock_had, t->p->project_root);
        }
    }
    for (size_t i = 0; i < t->moved.n; i++) {
        if (t->committed)
            fs_rmtree(t->moved.v[i].aside, &e);
        free(t->moved.v[i].from);
        free(t->moved.v[i].aside);
    }
    vec_free(&t->moved);
    strvec_clear(&t->created);
    sb_release(&t->manifest_old);
    sb_release(&t->lock_old);
    sb_release(&t->pins);
    trust_status_release(&t->before);
}

void lib_txn_warn_untrusted(const struct lib_txn *t, FILE *diag)
{
    if (t->before.state == TRUST_TRUSTED)
        fprintf(diag, "warning: the manifest and lock changed, so this project is no longer "
                      "trusted until you review it: agentstack trust .\n");
}

/* ---- shared by the edits --------------------------------------------------------------- */

int lib_pick_toolset(const struct manifest *m, const char *want, const char **out,
                     struct as_err *err)
{
    *out = NULL;
    if (want) {
        if (!manifest_toolset(m, want)) {
            as_err_set(err, "toolset '%s' is not declared in %s", want, m->path);
            as_err_hint(err, "declare [toolsets.%s], or leave --toolset out", want);
            return -1;
        }
        *out = want;
        return 0;
    }
    const struct mf_toolset *t = manifest_effective_toolset(m);
    if (t)
        *out = t->name;
    return 0;
}

void lib_say(FILE *f, const char *pre, const char *s, const char *post)
{
    strbuf b = SB_INIT;
    term_sanitize(&b, s, strlen(s));
    fprintf(f, "%s%s%s", pre, b.buf, post);
    sb_release(&b);
}

int lib_toolset_add(toml_edit *ed, const struct manifest *m, const char *ts, const char *list,
                    const char *name, struct as_err *err)
{
    const char *table = m->toolsets_legacy ? "profiles" : "toolsets";
    const toml_value *cur = toml_get_path(toml_edit_root(ed), table, ts, list, NULL);
    toml_value *arr = cur && cur->type == TOML_ARRAY ? toml_clone(cur) : toml_new(TOML_ARRAY);
    for (size_t i = 0; i < toml_len(arr); i++) {
        const toml_value *v = toml_at(arr, i);
        if (v->type == TOML_STRING && strcmp(v->u.str.s, name) == 0) {
            toml_free(arr);
            return 0; /* already there */
        }
    }
    toml_array_push(arr, toml_new_string(name));
    const char *path[] = {table, ts, list};
    int rc = toml_edit_set(ed, path, 3, arr, err);
    toml_free(arr);
    return rc < 0 ? -1 : 1;
}
