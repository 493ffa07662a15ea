/* tomlmerge — [<location>.<name>] tables through the format-preserving
 * editor (docs/adapters.md). A new file is emitted in merge.h's new-file layout. */
#include <stdlib.h>
#include <string.h>

#include "adapters/merge.h"
#include "base/xalloc.h"

static bool blank_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    return true;
}

static const toml_value *lookup(toml_edit *ed, const char *const *path, size_t n)
{
    const toml_value *v = toml_edit_root(ed);
    for (size_t i = 0; v && i < n; i++)
        v = toml_get(v, path[i]);
    return v;
}

static bool standard_table(const toml_value *v)
{
    return v && v->type == TOML_TABLE && !v->is_inline && !v->implicit;
}

/* An array made only of tables. The emitter would write it as [[sections]];
 * the CLIs' hook tables want it inline (codex: PostToolUse = [{ … }]). */
static bool array_of_tables(const toml_value *v)
{
    if (v->type != TOML_ARRAY || !v->u.arr.n)
        return false;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (v->u.arr.items[i]->type != TOML_TABLE)
            return false;
    return true;
}

/* Adds the standard table at path: header, scalars and subtables through
 * the editor's table writer, then arrays of tables key by key (inline). */
static int set_new_table(toml_edit *ed, const char **path, size_t n, const toml_value *want,
                         struct as_err *err)
{
    bool any = false;
    for (size_t i = 0; i < want->u.tab.n && !any; i++)
        any = array_of_tables(want->u.tab.kv[i].val);
    if (!any)
        return toml_edit_set_table(ed, path, n, want, err);
    toml_value *head = toml_new(TOML_TABLE);
    for (size_t i = 0; i < want->u.tab.n; i++)
        if (!array_of_tables(want->u.tab.kv[i].val))
            toml_table_set(head, want->u.tab.kv[i].key, toml_clone(want->u.tab.kv[i].val));
    int rc = toml_edit_set_table(ed, path, n, head, err);
    toml_free(head);
    const char **kp = xcalloc(n + 2, sizeof(char *));
    memcpy(kp, path, n * sizeof(char *));
    for (size_t i = 0; rc == 0 && i < want->u.tab.n; i++) {
        if (!array_of_tables(want->u.tab.kv[i].val))
            continue;
        kp[n] = want->u.tab.kv[i].key;
        rc = toml_edit_set(ed, kp, n + 1, want->u.tab.kv[i].val, err);
    }
    free(kp);
    return rc ? -1 : 0;
}

/* Brings the table at path to want key by key, so comments and keys that did
 * not change keep their bytes (replacing the whole section would also drop
 * comment lines that sit at its end). */
static int upsert(toml_edit *ed, const char **path, size_t n, const toml_value *want, int depth,
                  struct as_err *err)
{
    const toml_value *have = lookup(ed, path, n);
    if (have && toml_equal(have, want))
        return 0;
    if (!standard_table(have) || depth > 8) {
        if (have && toml_edit_remove(ed, path, n, err) != 0)
            return -1;
        return set_new_table(ed, path, n, want, err);
    }
    const char **kp = xcalloc(n + 2, sizeof(char *));
    memcpy(kp, path, n * sizeof(char *));
    int rc = 0;
    /* Keys that are gone. */
    for (size_t i = 0; rc == 0; i++) {
        have = lookup(ed, path, n);
        if (!have || i >= have->u.tab.n)
            break;
        const char *k = have->u.tab.kv[i].key;
        if (toml_get(want, k))
            continue;
        kp[n] = k;
        rc = toml_edit_remove(ed, kp, n + 1, err);
        i = (size_t)-1; /* the table changed under us: rescan */
    }
    for (size_t i = 0; rc == 0 && i < want->u.tab.n; i++) {
        const toml_kv *kv = &want->u.tab.kv[i];
        kp[n] = kv->key;
        const toml_value *hv = lookup(ed, kp, n + 1);
        if (hv && toml_equal(hv, kv->val))
            continue;
        if (kv->val->type == TOML_TABLE && !kv->val->is_inline)
            rc = upsert(ed, kp, n + 1, kv->val, depth + 1, err);
        else if (hv && hv->type == TOML_TABLE && !hv->is_inline)
            rc = toml_edit_remove(ed, kp, n + 1, err) || toml_edit_set(ed, kp, n + 1, kv->val, err);
        else
            rc = toml_edit_set(ed, kp, n + 1, kv->val, err);
    }
    free(kp);
    return rc ? -1 : 0;
}

static bool listed(const struct adp_toml_entry *u, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(u[i].name, name) == 0)
            return true;
    return false;
}

int adp_toml_merge(const char *path, const char *text, size_t len, const char *location,
                   const struct adp_toml_entry *upserts, size_t n_upserts,
                   const char *const *removes, size_t n_removes, strbuf *out, struct as_err *err)
{
    if (len > ADP_INPUT_MAX)
        return as_err_set(err, "%s: exceeds the %zu-byte limit — not written", path, ADP_INPUT_MAX);
    if (blank_text(text, len)) {
        if (!n_upserts) {
            sb_add(out, text, len);
            return 0;
        }
        toml_value *root = toml_new(TOML_TABLE);
        toml_value *sec = toml_new(TOML_TABLE);
        for (size_t i = 0; i < n_upserts; i++)
            toml_table_set(sec, upserts[i].name, toml_clone(upserts[i].table));
        toml_table_set(root, location, sec);
        toml_emit(root, out);
        toml_free(root);
        return 0;
    }
    struct as_err perr = AS_ERR_INIT;
    toml_edit *ed = toml_edit_open(path, text, len, &perr);
    if (!ed) {
        as_err_at(err, perr.path[0] ? perr.path : path, perr.line, perr.col,
                  "existing config is not valid TOML: %s", perr.msg);
        as_err_hint(err, "fix the file by hand (or move it aside), then re-run — it was not "
                         "changed");
        return -1;
    }
    int rc = 0;
    const toml_value *sec = toml_get(toml_edit_root(ed), location);
    if (sec && sec->type != TOML_TABLE) {
        as_err_at(err, path, sec->line, sec->col,
                  "'%s' is a %s, not a table of servers — not written", location,
                  toml_type_name(sec->type));
        as_err_hint(err, "rename or remove the '%s' key by hand, then re-run", location);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n_removes; i++) {
        if (listed(upserts, n_upserts, removes[i]))
            continue;
        sec = toml_get(toml_edit_root(ed), location);
        if (!toml_get(sec, removes[i]))
            continue;
        const char *kp[2] = {location, removes[i]};
        rc = toml_edit_remove(ed, kp, 2, err);
    }
    for (size_t i = 0; rc == 0 && i < n_upserts; i++) {
        const char *kp[2] = {location, upserts[i].name};
        rc = upsert(ed, kp, 2, upserts[i].table, 0, err);
    }
    if (rc == 0) {
        size_t n;
        const char *t = toml_edit_text(ed, &n);
        sb_add(out, t, n);
    }
    toml_edit_free(ed);
    return rc;
}

int adp_toml_merge_root(const char *path, const char *text, size_t len, const toml_value *set,
                        const char *const *removes, size_t n_removes, strbuf *out,
                        struct as_err *err)
{
    if (len > ADP_INPUT_MAX)
        return as_err_set(err, "%s: exceeds the %zu-byte limit — not written", path, ADP_INPUT_MAX);
    struct as_err perr = AS_ERR_INIT;
    toml_edit *ed = toml_edit_open(path, text, len, &perr);
    if (!ed) {
        as_err_at(err, perr.path[0] ? perr.path : path, perr.line, perr.col,
                  "existing config is not valid TOML: %s", perr.msg);
        as_err_hint(err, "fix the file by hand (or move it aside), then re-run — it was not "
                         "changed");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_removes; i++) {
        if (set && toml_get(set, removes[i]))
            continue;
        const char *kp[1] = {removes[i]};
        rc = toml_edit_remove(ed, kp, 1, err);
    }
    for (size_t i = 0; rc == 0 && set && i < set->u.tab.n; i++) {
        const toml_kv *kv = &set->u.tab.kv[i];
        const char *kp[1] = {kv->key};
        const toml_value *have = toml_get(toml_edit_root(ed), kv->key);
        if (have && toml_equal(have, kv->val))
            continue;
        if (kv->val->type == TOML_TABLE)
            rc = upsert(ed, kp, 1, kv->val, 0, err);
        else if (standard_table(have))
            rc = toml_edit_remove(ed, kp, 1, err) || toml_edit_set(ed, kp, 1, kv->val, err);
        else
            rc = toml_edit_set(ed, kp, 1, kv->val, err);
    }
    if (rc == 0) {
        size_t n;
        const char *t = toml_edit_text(ed, &n);
        sb_add(out, t, n);
    }
    toml_edit_free(ed);
    return rc ? -1 : 0;
}
