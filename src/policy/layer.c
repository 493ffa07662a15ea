/*
 * layer — one layer's rule lists (machine file or project manifest), built
 * from code or from the TOML value of a [policy] table, validated as they
 * are added so a typo or a URL-shaped host is an error at path:line:col and
 * never a silently empty rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "base/suggest.h"
#include "policy/pol_internal.h"

static const char *const keyed_name[POL_NKEYED] = {"tools", "egress", "secrets"};
static const char *const fs_name[3] = {"read", "write", "deny"};

struct pol_layer *pol_layer_new(enum pol_layer_id id, const char *path)
{
    struct pol_layer *l = xcalloc(1, sizeof *l);
    l->id = id;
    l->path = path ? xstrdup(path) : NULL;
    l->isolation = POL_ISO_UNSET;
    l->workflows.max_agents = l->workflows.max_wall_seconds = -1;
    l->workflows.max_concurrent = l->workflows.max_resident_result_bytes = -1;
    return l;
}

static void rule_free(struct pol_rule *r)
{
    free(r->text);
    free(r->canon);
    free(r->pat);
}

void pol_layer_free(struct pol_layer *l)
{
    if (!l)
        return;
    for (int d = 0; d < POL_NKEYED; d++) {
        for (size_t k = 0; k < l->keyed[d].keys.n; k++) {
            struct pol_key *key = &l->keyed[d].keys.v[k];
            for (size_t i = 0; i < key->rules.n; i++)
                rule_free(&key->rules.v[i]);
            vec_free(&key->rules);
            free(key->name);
        }
        vec_free(&l->keyed[d].keys);
    }
    for (int f = 0; f < 3; f++) {
        for (size_t i = 0; i < l->fs[f].globs.n; i++)
            rule_free(&l->fs[f].globs.v[i]);
        vec_free(&l->fs[f].globs);
    }
    strvec_clear(&l->require);
    strvec_clear(&l->forbid);
    strvec_clear(&l->allowed_sources);
    free(l->path);
    free(l);
}

struct pol_key *pol_layer_key(struct pol_layer *l, enum pol_dim dim, const char *key, unsigned line,
                              unsigned col)
{
    struct pol_keyed *kd = &l->keyed[dim];
    for (size_t i = 0; i < kd->keys.n; i++)
        if (strcmp(kd->keys.v[i].name, key) == 0)
            return &kd->keys.v[i];
    struct pol_key k = {xstrdup(key), line, col, VEC_INIT};
    vec_push(&kd->keys, k);
    return &kd->keys.v[kd->keys.n - 1];
}

/* Sets path:line:col on an already-set message. */
static void locate(struct as_err *err, const struct pol_layer *l, unsigned line, unsigned col)
{
    if (!err)
        return;
    snprintf(err->path, sizeof err->path, "%s", l->path ? l->path : "");
    err->line = line;
    err->col = col;
}

int pol_layer_add(struct pol_layer *l, enum pol_dim dim, const char *key, const char *entry,
                  unsigned line, unsigned col, struct as_err *err)
{
    const char *why = NULL;
    if (dim >= POL_FS_READ && dim <= POL_FS_DENY) {
        struct pol_fslist *fl = &l->fs[dim - POL_FS_READ];
        const char *name = fs_name[dim - POL_FS_READ];
        if (fl->globs.n >= POL_MAX_ENTRIES) {
            as_err_set(err, "[policy.filesystem] %s has more than %d globs", name, POL_MAX_ENTRIES);
            as_err_hint(err, "merge globs in [policy.filesystem] %s (e.g. \"secrets/**\")", name);
            locate(err, l, line, col);
            return -1;
        }
        if (pol_fs_glob_check(entry, strlen(entry), &why) < 0) {
            as_err_set(err, "[policy.filesystem] %s glob \"%s\" is invalid — %s", name, entry, why);
            as_err_hint(err, "edit [policy.filesystem] %s and rewrite \"%s\"", name, entry);
            locate(err, l, line, col);
            return -1;
        }
        struct pol_rule r = {xstrdup(entry), xstrdup(entry), xstrdup(entry), 0, 0, line, col};
        vec_push(&fl->globs, r);
        fl->present = 1;
        return 0;
    }
    if (dim >= POL_NKEYED || !key)
        return as_err_set(err, "internal: bad policy dimension");
    const char *dname = keyed_name[dim];
    if (!key[0] || strlen(key) > 1024) {
        as_err_set(err, "[policy.%s] has an empty or over-long server key", dname);
        as_err_hint(err, "name a server from the manifest, or \"*\" for every server");
        locate(err, l, line, col);
        return -1;
    }
    struct pol_keyed *kd = &l->keyed[dim];
    int is_new = 1;
    for (size_t i = 0; i < kd->keys.n; i++)
        is_new &= strcmp(kd->keys.v[i].name, key) != 0;
    if (is_new && kd->keys.n >= POL_MAX_KEYS) {
        as_err_set(err, "[policy.%s] has more than %d server keys", dname, POL_MAX_KEYS);
        as_err_hint(err, "use the \"*\" key for rules that apply to every server");
        locate(err, l, line, col);
        return -1;
    }
    const char *body = entry[0] == '!' ? entry + 1 : entry;
    char canon[POL_MAX_PATTERN + 1], pat[POL_MAX_PATTERN + 1];
    uint16_t port = 0;
    if (strlen(body) > POL_MAX_PATTERN) {
        why = "pattern longer than 512 bytes";
    } else if (pol_entry_parse(dim, body, canon, pat, &port, &why) == 0) {
        why = NULL;
    }
    if (why) {
        if (dim == POL_EGRESS) {
            as_err_set(err,
                       "[policy.egress] %s pattern \"%s\" is malformed (expected `host`, "
                       "`host:port`, `host:*`, or a bracketed IPv6 form) — %s",
                       key, entry, why);
            as_err_hint(err,
                        "edit [policy.egress] %s and rewrite \"%s\" as host, host:port, "
                        "host:*, or [ipv6]:port",
                        key, entry);
        } else {
            as_err_set(err, "[policy.%s] %s pattern \"%s\" is invalid — %s", dname, key, entry,
                       why);
            as_err_hint(err, "edit [policy.%s] %s and rewrite \"%s\"", dname, key, entry);
        }
        locate(err, l, line, col);
        return -1;
    }
    struct pol_key *k = pol_layer_key(l, dim, key, line, col);
    if (k->rules.n >= POL_MAX_ENTRIES) {
        as_err_set(err, "[policy.%s] %s has more than %d entries", dname, key, POL_MAX_ENTRIES);
        as_err_hint(err, "merge entries with a glob (e.g. \"get_*\")");
        locate(err, l, line, col);
        return -1;
    }
    struct pol_rule r = {xstrdup(entry),  xstrdup(canon), xstrdup(pat), port,
                         entry[0] == '!', line,           col};
    vec_push(&k->rules, r);
    return 0;
}

int pol_layer_is_empty(const struct pol_layer *l)
{
    if (!l)
        return 1;
    for (int d = 0; d < POL_NKEYED; d++)
        for (size_t k = 0; k < l->keyed[d].keys.n; k++)
            if (l->keyed[d].keys.v[k].rules.n)
                return 0;
    for (int f = 0; f < 3; f++)
        if (l->fs[f].globs.n)
            return 0;
    return l->isolation != POL_ISO_CONFINED;
}

/* ---- from TOML ---------------------------------------------------------- */

static const char *closest(const char *word, const char *const *cands)
{
    return suggest_closest(word, cands, SUGGEST_NULL_TERMINATED);
}

int pol_unknown_key(struct as_err *err, const char *path, const toml_kv *kv, const char *table,
                    const char *const *known)
{
    const char *sug = closest(kv->key, known);
    strbuf list = SB_INIT;
    for (size_t i = 0; known[i]; i++)
        sb_addf(&list, "%s%s", i ? ", " : "", known[i]);
    if (sug) {
        as_err_at(err, path, kv->line, kv->col, "unknown key '%s' in %s — did you mean '%s'?",
                  kv->key, table, sug);
        as_err_hint(err, "rename '%s' to '%s'", kv->key, sug);
    } else {
        as_err_at(err, path, kv->line, kv->col, "unknown key '%s' in %s", kv->key, table);
        as_err_hint(err, "remove '%s' (known keys: %s)", kv->key, list.buf);
    }
    sb_release(&list);
    return -1;
}

static int type_err(struct as_err *err, const char *path, const toml_value *v, const char *what,
                    const char *expected)
{
    as_err_at(err, path, v->line, v->col, "%s must be %s, not %s", what, expected,
              toml_type_name(v->type));
    as_err_hint(err, "write %s as %s", what, expected);
    return -1;
}

static int string_array(const toml_value *v, const char *path, const char *what, strvec *out,
                        struct as_err *err)
{
    if (v->type != TOML_ARRAY)
        return type_err(err, path, v, what, "an array of strings");
    for (size_t i = 0; i < toml_len(v); i++) {
        const toml_value *it = toml_at(v, i);
        if (it->type != TOML_STRING)
            return type_err(err, path, it, what, "an array of strings");
        if (strlen(it->u.str.s) != it->u.str.len) {
            as_err_at(err, path, it->line, it->col, "%s entry contains a NUL byte", what);
            return -1;
        }
        if (out)
            strvec_push(out, it->u.str.s);
    }
    return 0;
}

static int load_keyed(struct pol_layer *l, enum pol_dim dim, const toml_value *tab,
                      const char *path, struct as_err *err)
{
    char what[1200];
    snprintf(what, sizeof what, "[policy.%s]", keyed_name[dim]);
    if (tab->type != TOML_TABLE) {
        as_err_at(err, path, tab->line, tab->col,
                  "%s must be a table of server = [patterns], not %s", what,
                  toml_type_name(tab->type));
        as_err_hint(err, "write it as [policy.%s] with lines like \"*\" = [\"!delete_*\"]",
                    keyed_name[dim]);
        return -1;
    }
    for (size_t i = 0; i < toml_len(tab); i++) {
        const toml_kv *kv = toml_entry(tab, i);
        snprintf(what, sizeof what, "[policy.%s] %s", keyed_name[dim], kv->key);
        if (string_array(kv->val, path, what, NULL, err) < 0)
            return -1;
        if (!kv->key[0]) {
            as_err_at(err, path, kv->line, kv->col, "[policy.%s] has an empty server key",
                      keyed_name[dim]);
            as_err_hint(err, "name a server from the manifest, or \"*\" for every server");
            return -1;
        }
        pol_layer_key(l, dim, kv->key, kv->line, kv->col);
        for (size_t j = 0; j < toml_len(kv->val); j++) {
            const toml_value *it = toml_at(kv->val, j);
            if (pol_layer_add(l, dim, kv->key, it->u.str.s, it->line, it->col, err) < 0)
                return -1;
        }
    }
    return 0;
}

static int load_fs(struct pol_layer *l, const toml_value *tab, const char *path, struct as_err *err)
{
    static const char *const known[] = {"read", "write", "deny", NULL};
    if (tab->type != TOML_TABLE) {
        as_err_at(err, path, tab->line, tab->col,
                  "[policy.filesystem] must be a table with read/write/deny, not %s",
                  toml_type_name(tab->type));
        as_err_hint(err, "write it as [policy.filesystem] with deny = [\".env*\"]");
        return -1;
    }
    for (size_t i = 0; i < toml_len(tab); i++) {
        const toml_kv *kv = toml_entry(tab, i);
        int f = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(kv->key, fs_name[k]) == 0)
                f = k;
        if (f < 0)
            return pol_unknown_key(err, path, kv, "[policy.filesystem]", known);
        char what[64];
        snprintf(what, sizeof what, "[policy.filesystem] %s", fs_name[f]);
        if (string_array(kv->val, path, what, NULL, err) < 0)
            return -1;
        l->fs[f].present = 1;
        l->fs[f].line = kv->line;
        l->fs[f].col = kv->col;
        for (size_t j = 0; j < toml_len(kv->val); j++) {
            const toml_value *it = toml_at(kv->val, j);
            if (pol_layer_add(l, (enum pol_dim)(POL_FS_READ + f), NULL, it->u.str.s, it->line,
                              it->col, err) < 0)
                return -1;
        }
    }
    return 0;
}

static int load_workflows(struct pol_layer *l, const toml_value *tab, const char *path,
                          struct as_err *err)
{
    static const char *const known[] = {"max_agents", "max_wall_seconds", "max_concurrent",
                                        "max_resident_result_bytes", NULL};
    int64_t *slot[] = {&l->workflows.max_agents, &l->workflows.max_wall_seconds,
                       &l->workflows.max_concurrent, &l->workflows.max_resident_result_bytes};
    if (tab->type != TOML_TABLE)
        return type_err(err, path, tab, "[policy.workflows]", "a table");
    for (size_t i = 0; i < toml_len(tab); i++) {
        const toml_kv *kv = toml_entry(tab, i);
        int f = -1;
        for (int k = 0; known[k]; k++)
            if (strcmp(kv->key, known[k]) == 0)
                f = k;
        if (f < 0)
            return pol_unknown_key(err, path, kv, "[policy.workflows]", known);
        char what[96];
        snprintf(what, sizeof what, "[policy.workflows] %s", kv->key);
        if (kv->val->type != TOML_INTEGER)
            return type_err(err, path, kv->val, what, "a non-negative integer");
        if (kv->val->u.i < 0) {
            as_err_at(err, path, kv->val->line, kv->val->col, "%s must not be negative", what);
            as_err_hint(err, "set %s to 0 or more", what);
            return -1;
        }
        *slot[f] = kv->val->u.i;
    }
    return 0;
}

static int load_isolation(struct pol_layer *l, const toml_value *tab, const char *path,
                          struct as_err *err)
{
    static const char *const known[] = {"servers", NULL};
    if (tab->type != TOML_TABLE)
        return type_err(err, path, tab, "[policy.isolation]", "a table");
    for (size_t i = 0; i < toml_len(tab); i++) {
        const toml_kv *kv = toml_entry(tab, i);
        if (strcmp(kv->key, "servers") != 0)
            return pol_unknown_key(err, path, kv, "[policy.isolation]", known);
        const char *v = kv->val->type == TOML_STRING ? kv->val->u.str.s : NULL;
        if (v && strcmp(v, "confined") == 0)
            l->isolation = POL_ISO_CONFINED;
        else if (v && strcmp(v, "host") == 0)
            l->isolation = POL_ISO_HOST;
        else {
            as_err_at(err, path, kv->val->line, kv->val->col,
                      "[policy.isolation] servers must be \"confined\" or \"host\"");
            as_err_hint(err, "set servers = \"confined\" to run every stdio server in a jail of "
                             "its own");
            return -1;
        }
    }
    return 0;
}

struct pol_layer *pol_layer_from_toml(const toml_value *pt, const char *path, enum pol_layer_id id,
                                      struct as_err *err)
{
    static const char *const known[] = {"require",   "forbid",  "allowed_sources", "tools",
                                        "egress",    "secrets", "filesystem",      "workflows",
                                        "isolation", NULL};
    struct pol_layer *l = pol_layer_new(id, path);
    if (!pt)
        return l;
    if (pt->type != TOML_TABLE) {
        type_err(err, path, pt, "[policy]", "a table");
        goto fail;
    }
    for (size_t i = 0; i < toml_len(pt); i++) {
        const toml_kv *kv = toml_entry(pt, i);
        const char *k = kv->key;
        int rc;
        if (strcmp(k, "tools") == 0)
            rc = load_keyed(l, POL_TOOLS, kv->val, path, err);
        else if (strcmp(k, "egress") == 0)
            rc = load_keyed(l, POL_EGRESS, kv->val, path, err);
        else if (strcmp(k, "secrets") == 0)
            rc = load_keyed(l, POL_SECRETS, kv->val, path, err);
        else if (strcmp(k, "filesystem") == 0)
            rc = load_fs(l, kv->val, path, err);
        else if (strcmp(k, "workflows") == 0)
            rc = load_workflows(l, kv->val, path, err);
        else if (strcmp(k, "isolation") == 0)
            rc = load_isolation(l, kv->val, path, err);
        else if (strcmp(k, "require") == 0)
            rc = string_array(kv->val, path, "[policy] require", &l->require, err);
        else if (strcmp(k, "forbid") == 0)
            rc = string_array(kv->val, path, "[policy] forbid", &l->forbid, err);
        else if (strcmp(k, "allowed_sources") == 0)
            rc = string_array(kv->val, path, "[policy] allowed_sources", &l->allowed_sources, err);
        else
            rc = pol_unknown_key(err, path, kv, "[policy]", known);
        if (rc < 0)
            goto fail;
    }
    return l;
fail:
    pol_layer_free(l);
    return NULL;
}
