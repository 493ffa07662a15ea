/*
 * wire — the compiled ruleset as JSON (docs/policy.md), for enforcers that run
 * in another process (the egress proxy, the sandbox's gateway face).
 *
 * Written by hand so equal rulesets give equal bytes: top-level fields in
 * the order version, defaults, servers, any, filesystem, gateway_only_hosts, isolation;
 * server names sorted byte-wise; lists sorted and deduplicated; empties
 * omitted. Reading is strict (unknown fields and wrong types are errors)
 * and fails closed: a newer version denies everything, and a pattern that
 * does not parse becomes a malformed rule that denies what it touches.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "policy/pol_internal.h"

static const char *const dim_key[POL_NKEYED] = {"tools", "egress", "secrets"};
static const char *const side_key[2] = {"machine", "bundle"};
static const char *const fs_key[3] = {"read", "write", "deny"};

/* ---- writing ------------------------------------------------------------ */

static void jstr(strbuf *out, const char *s)
{
    sb_addc(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_addf(out, "\\%c", *p);
        else if (*p == '\n')
            sb_adds(out, "\\n");
        else if (*p == '\t')
            sb_adds(out, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            sb_addf(out, "\\u%04x", *p);
        else
            sb_addc(out, (char)*p);
    }
    sb_addc(out, '"');
}

static void jlist(strbuf *out, const char *const *v, size_t n)
{
    sb_addc(out, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(out, ',');
        jstr(out, v[i]);
    }
    sb_addc(out, ']');
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_set(const void *a, const void *b)
{
    return pol_globset_cmp(*(const struct pol_globset *const *)a,
                           *(const struct pol_globset *const *)b);
}

/* Appends "<key>":{...} for one side when it has content; returns 1 if written. */
static int write_side(strbuf *out, const char *key, const struct pol_side *own,
                      const struct pol_side *any, int comma)
{
    const struct pol_side *sides[2] = {own, own->inherit_any ? any : NULL};
    size_t nd = 0, nb = 0;
    for (int i = 0; i < 2; i++)
        if (sides[i]) {
            nd += sides[i]->deny.n;
            nb += sides[i]->nallow;
        }
    if (!nd && !nb)
        return 0;
    const char **den = xmalloc((nd + 1) * sizeof *den);
    const struct pol_globset **bounds = xmalloc((nb + 1) * sizeof *bounds);
    size_t d = 0, b = 0;
    for (int i = 0; i < 2; i++) {
        if (!sides[i])
            continue;
        for (uint32_t k = 0; k < sides[i]->deny.n; k++)
            den[d++] = sides[i]->deny.g[k].disp;
        for (uint32_t k = 0; k < sides[i]->nallow; k++)
            bounds[b++] = &sides[i]->allow[k];
    }
    qsort(den, nd, sizeof *den, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < nd; i++)
        if (!u || strcmp(den[u - 1], den[i]) != 0)
            den[u++] = den[i];
    qsort(bounds, nb, sizeof *bounds, cmp_set);
    if (comma)
        sb_addc(out, ',');
    jstr(out, key);
    sb_adds(out, ":{");
    if (u) {
        sb_adds(out, "\"deny\":");
        jlist(out, den, u);
    }
    if (nb) {
        sb_adds(out, u ? ",\"allow_all_of\":[" : "\"allow_all_of\":[");
        for (size_t i = 0; i < nb; i++) {
            if (i)
                sb_addc(out, ',');
            jlist(out, bounds[i]->disps, bounds[i]->n);
        }
        sb_addc(out, ']');
    }
    sb_addc(out, '}');
    free(den);
    free(bounds);
    return 1;
}

/* Appends {dims...} for a bucket; returns 0 (and writes nothing) when empty. */
static int write_bucket(strbuf *out, const struct pol_bucket *bk, const struct pol_bucket *any)
{
    size_t mark = out->len;
    int any_dim = 0;
    sb_addc(out, '{');
    for (int dm = 0; dm < POL_NKEYED; dm++) {
        size_t dmark = out->len;
        if (any_dim)
            sb_addc(out, ',');
        jstr(out, dim_key[dm]);
        sb_adds(out, ":{");
        int w = 0;
        for (int l = 0; l < 2; l++)
            w += write_side(out, side_key[l], &bk->side[dm][l], &any->side[dm][l], w);
        if (!w) {
            sb_setlen(out, dmark);
            continue;
        }
        sb_addc(out, '}');
        any_dim = 1;
    }
    if (!any_dim) {
        sb_setlen(out, mark);
        return 0;
    }
    sb_addc(out, '}');
    return 1;
}

void pol_ruleset_to_json(const struct pol_ruleset *rs, strbuf *out)
{
    sb_addf(out, "{\"version\":%d", rs->version);
    sb_adds(out, ",\"defaults\":{\"tools\":\"allow\",\"egress\":\"allow\",\"secrets\":\"allow\","
                 "\"filesystem\":\"allow\"}");
    if (rs->deny_all) {
        /* a deny-all ruleset has no rules to carry; its readers must refuse too */
        sb_adds(out, ",\"unavailable\":");
        jstr(out, rs->deny_all);
        sb_addc(out, '}');
        return;
    }
    size_t mark = out->len;
    sb_adds(out, ",\"servers\":{");
    int ns = 0;
    for (uint32_t i = 0; i < rs->nservers; i++) {
        size_t smark = out->len;
        if (ns)
            sb_addc(out, ',');
        jstr(out, rs->servers[i].server);
        sb_addc(out, ':');
        if (!write_bucket(out, &rs->servers[i], &rs->any)) {
            sb_setlen(out, smark);
            continue;
        }
        ns++;
    }
    if (ns)
        sb_addc(out, '}');
    else
        sb_setlen(out, mark);
    mark = out->len;
    sb_adds(out, ",\"any\":");
    if (!write_bucket(out, &rs->any, &rs->any))
        sb_setlen(out, mark);
    mark = out->len;
    sb_adds(out, ",\"filesystem\":{");
    int nf = 0;
    for (int f = 0; f < 3; f++) {
        if (!rs->fs[f][0].n && !rs->fs[f][1].n)
            continue;
        if (nf++)
            sb_addc(out, ',');
        jstr(out, fs_key[f]);
        sb_adds(out, ":{");
        int w = 0;
        for (int l = 0; l < 2; l++) {
            if (!rs->fs[f][l].n)
                continue;
            if (w++)
                sb_addc(out, ',');
            jstr(out, side_key[l]);
            sb_addc(out, ':');
            jlist(out, rs->fs[f][l].disps, rs->fs[f][l].n);
        }
        sb_addc(out, '}');
    }
    if (nf)
        sb_addc(out, '}');
    else
        sb_setlen(out, mark);
    if (rs->gw_only.n) {
        sb_adds(out, ",\"gateway_only_hosts\":");
        jlist(out, rs->gw_only.disps, rs->gw_only.n);
    }
    if (rs->isolation_by == POL_BY_MACHINE || rs->isolation_by == POL_BY_PROJECT)
        sb_addf(out, ",\"isolation\":{\"servers\":\"confined\",\"by\":\"%s\"}",
                rs->isolation_by == POL_BY_MACHINE ? "machine" : "project");
    sb_addc(out, '}');
}

/* ---- reading ------------------------------------------------------------ */

static int only_keys(json_t *obj, const char *const *known, const char *where, struct as_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        int ok = 0;
        for (size_t i = 0; known[i]; i++)
            ok |= strcmp(k, known[i]) == 0;
        if (!ok)
            return as_err_set(err, "policy ruleset: unknown field \"%s\" in %s", k, where);
    }
    return 0;
}

/* Items from a JSON string array; malformed entries are kept, flagged. */
static int read_items(json_t *arr, int dim, const char *where, struct pol_item **items, size_t *n,
                      strvec *keep, struct as_err *err)
{
    if (!json_is_array(arr))
        return as_err_set(err, "policy ruleset: %s must be an array of strings", where);
    size_t cnt = json_array_size(arr);
    *items = xmalloc((cnt + 1) * sizeof **items);
    *n = 0;
    for (size_t i = 0; i < cnt; i++) {
        json_t *s = json_array_get(arr, i);
        if (!json_is_string(s))
            return as_err_set(err, "policy ruleset: %s must be an array of strings", where);
        const char *raw = json_string_value(s);
        size_t rl = json_string_length(s);
        struct pol_item it = {NULL, NULL, 0, 0};
        if (strlen(raw) != rl) {
            strvec_push(keep, "(pattern with NUL)");
            it.disp = it.pat = keep->v[keep->n - 1];
            it.malformed = 1;
        } else if (dim < POL_NKEYED) {
            char canon[POL_MAX_PATTERN + 1], pat[POL_MAX_PATTERN + 1];
            uint16_t port = 0;
            const char *why;
            if (rl <= POL_MAX_PATTERN &&
                pol_entry_parse((enum pol_dim)dim, raw, canon, pat, &port, &why) == 0) {
                strvec_push(keep, canon);
                it.disp = keep->v[keep->n - 1];
                strvec_push(keep, pat);
                it.pat = keep->v[keep->n - 1];
                it.port = port;
            } else {
                strvec_push(keep, raw);
                it.disp = it.pat = keep->v[keep->n - 1];
                it.malformed = 1;
            }
        } else {
            const char *why;
            strvec_push(keep, raw);
            it.disp = it.pat = keep->v[keep->n - 1];
            /* deny globs are stored $HOME-expanded; an unexpanded one would never match */
            if (pol_fs_glob_check(raw, rl, &why) < 0 ||
                (dim == POL_FS_DENY && (raw[0] == '~' || strncmp(raw, "$HOME", 5) == 0 ||
                                        strncmp(raw, "${HOME}", 7) == 0)))
                it.malformed = 1;
        }
        (*items)[(*n)++] = it;
    }
    return 0;
}

struct raw_side {
    struct pol_item *deny;
    size_t ndeny;
    struct pol_item **bounds;
    size_t *nbound;
    size_t nbounds;
};

static void raw_free(struct raw_side *r)
{
    free(r->deny);
    for (size_t i = 0; i < r->nbounds; i++)
        free(r->bounds[i]);
    free(r->bounds);
    free(r->nbound);
    memset(r, 0, sizeof *r);
}

static int read_side(json_t *obj, int dim, struct raw_side *r, strvec *keep, struct as_err *err)
{
    static const char *const known[] = {"deny", "allow_all_of", NULL};
    memset(r, 0, sizeof *r);
    if (!json_is_object(obj))
        return as_err_set(err, "policy ruleset: a layer must be an object");
    if (only_keys(obj, known, "a layer", err) < 0)
        return -1;
    json_t *d = json_object_get(obj, "deny");
    if (d && read_items(d, dim, "deny", &r->deny, &r->ndeny, keep, err) < 0)
        return -1;
    json_t *a = json_object_get(obj, "allow_all_of");
    if (a) {
        if (!json_is_array(a))
            return as_err_set(err, "policy ruleset: allow_all_of must be an array of arrays");
        size_t nb = json_array_size(a);
        r->bounds = xcalloc(nb + 1, sizeof *r->bounds);
        r->nbound = xcalloc(nb + 1, sizeof *r->nbound);
        for (size_t i = 0; i < nb; i++) {
            if (read_items(json_array_get(a, i), dim, "allow_all_of", &r->bounds[i], &r->nbound[i],
                           keep, err) < 0) {
                r->nbounds = i + 1;
                return -1;
            }
            r->nbounds = i + 1;
        }
    }
    return 0;
}

/* Builds a side from raw lists, leaving out what the "*" side already holds
 * (factoring the union back apart) when that side is fully contained. */
static void side_build(struct pol_side *s, struct pol_arena *a, int dim, struct raw_side *r,
                       const struct pol_side *any)
{
    memset(s, 0, sizeof *s);
    s->deny.first_malformed = -1;
    int nocase = dim == POL_TOOLS || dim == POL_SECRETS;
    struct pol_globset *tmp = xcalloc(r->nbounds + 1, sizeof *tmp);
    for (size_t i = 0; i < r->nbounds; i++)
        pol_globset_build(&tmp[i], a, r->bounds[i], r->nbound[i], 0, POL_MAX_PATTERN);
    struct pol_globset dset;
    pol_globset_build(&dset, a, r->deny, r->ndeny, nocase, POL_MAX_PATTERN);
    int inherit = any != NULL;
    /* "*" denies must all be present */
    for (uint32_t i = 0; inherit && any && i < any->deny.n; i++) {
        int found = 0;
        for (uint32_t j = 0; j < dset.n && !found; j++)
            found = strcmp(dset.g[j].disp, any->deny.g[i].disp) == 0;
        inherit = found;
    }
    /* each "*" bound must be present once */
    char *used = xcalloc(r->nbounds + 1, 1);
    for (uint32_t i = 0; inherit && any && i < any->nallow; i++) {
        int found = 0;
        for (size_t j = 0; j < r->nbounds && !found; j++)
            if (!used[j] && pol_globset_equal(&tmp[j], &any->allow[i]))
                found = 1, used[j] = 1;
        inherit = found;
    }
    if (!inherit)
        memset(used, 0, r->nbounds + 1);
    s->inherit_any = (uint8_t)inherit;
    /* own denies: those not supplied by "*" */
    struct pol_item *own = xmalloc((dset.n + 1) * sizeof *own);
    size_t no = 0;
    for (uint32_t j = 0; j < dset.n; j++) {
        int in_any = 0;
        for (uint32_t i = 0; inherit && i < any->deny.n && !in_any; i++)
            in_any = strcmp(dset.g[j].disp, any->deny.g[i].disp) == 0;
        if (!in_any)
            own[no++] = (struct pol_item){dset.g[j].disp, dset.g[j].pat, dset.g[j].port,
                                          dset.g[j].malformed};
    }
    pol_globset_build(&s->deny, a, own, no, nocase, POL_MAX_PATTERN);
    free(own);
    size_t nown = 0;
    for (size_t j = 0; j < r->nbounds; j++)
        nown += !used[j];
    if (nown) {
        s->allow = pol_arena_alloc(a, nown * sizeof *s->allow);
        for (size_t j = 0; j < r->nbounds; j++)
            if (!used[j])
                s->allow[s->nallow++] = tmp[j];
    }
    free(used);
    free(tmp);
}

static int read_bucket(json_t *obj, struct pol_bucket *b, const struct pol_bucket *any,
                       struct pol_arena *a, strvec *keep, struct as_err *err)
{
    static const char *const known_dims[] = {"tools", "egress", "secrets", NULL};
    static const char *const known_sides[] = {"machine", "bundle", NULL};
    if (!json_is_object(obj))
        return as_err_set(err, "policy ruleset: a server entry must be an object");
    if (only_keys(obj, known_dims, "a server entry", err) < 0)
        return -1;
    for (int dm = 0; dm < POL_NKEYED; dm++) {
        json_t *dobj = json_object_get(obj, dim_key[dm]);
        if (dobj && !json_is_object(dobj))
            return as_err_set(err, "policy ruleset: %s must be an object", dim_key[dm]);
        if (dobj && only_keys(dobj, known_sides, dim_key[dm], err) < 0)
            return -1;
        for (int l = 0; l < 2; l++) {
            json_t *sobj = dobj ? json_object_get(dobj, side_key[l]) : NULL;
            struct raw_side r;
            memset(&r, 0, sizeof r);
            if (sobj && read_side(sobj, dm, &r, keep, err) < 0) {
                raw_free(&r);
                return -1;
            }
            side_build(&b->side[dm][l], a, dm, &r, any ? &any->side[dm][l] : NULL);
            raw_free(&r);
        }
    }
    return 0;
}

static struct pol_ruleset *load(json_t *root, struct as_err *err)
{
    static const char *const known[] = {"version",     "defaults",   "servers",
                                        "any",         "filesystem", "gateway_only_hosts",
                                        "unavailable", "isolation",  NULL};
    static const char *const dflt_keys[] = {"tools", "egress", "secrets", "filesystem", NULL};
    if (!json_is_object(root)) {
        as_err_set(err, "policy ruleset: not a JSON object");
        return NULL;
    }
    json_t *ver = json_object_get(root, "version");
    if (!json_is_integer(ver)) {
        as_err_set(err, "policy ruleset: missing integer \"version\"");
        return NULL;
    }
    json_int_t v = json_integer_value(ver);
    if (v > POL_WIRE_VERSION) {
        struct pol_ruleset *rs = pol_ruleset_alloc();
        rs->version = v > 1000000 ? 1000000 : (int)v;
        return rs;
    }
    if (v < 1) {
        as_err_set(err, "policy ruleset: version %lld is invalid", (long long)v);
        return NULL;
    }
    if (only_keys(root, known, "the ruleset", err) < 0)
        return NULL;
    json_t *dflt = json_object_get(root, "defaults");
    if (dflt) {
        if (!json_is_object(dflt) || only_keys(dflt, dflt_keys, "defaults", err) < 0) {
            if (!as_err_isset(err))
                as_err_set(err, "policy ruleset: defaults must be an object");
            return NULL;
        }
        const char *k;
        json_t *val;
        json_object_foreach(dflt, k, val)
        {
            if (!json_is_string(val) || strcmp(json_string_value(val), "allow") != 0) {
                as_err_set(err, "policy ruleset: defaults.%s must be \"allow\"", k);
                return NULL;
            }
        }
    }
    json_t *unav = json_object_get(root, "unavailable");
    if (unav) {
        if (!json_is_string(unav)) {
            as_err_set(err, "policy ruleset: unavailable must be a string");
            return NULL;
        }
        return pol_ruleset_deny_all(json_string_value(unav));
    }
    struct pol_ruleset *rs = pol_ruleset_alloc();
    rs->version = (int)v;
    strvec keep = STRVEC_INIT;
    json_t *any = json_object_get(root, "any");
    if (any && read_bucket(any, &rs->any, NULL, &rs->arena, &keep, err) < 0)
        goto fail;
    json_t *servers = json_object_get(root, "servers");
    if (servers) {
        if (!json_is_object(servers)) {
            as_err_set(err, "policy ruleset: servers must be an object");
            goto fail;
        }
        size_t ns = json_object_size(servers);
        const char **names = xmalloc((ns + 1) * sizeof *names);
        size_t i = 0;
        const char *k;
        json_t *val;
        json_object_foreach(servers, k, val) names[i++] = k;
        qsort(names, ns, sizeof *names, cmp_str);
        rs->servers = pol_arena_alloc(&rs->arena, (ns + 1) * sizeof *rs->servers);
        for (i = 0; i < ns; i++) {
            struct pol_bucket *b = &rs->servers[rs->nservers];
            memset(b, 0, sizeof *b);
            if (!names[i][0] || strcmp(names[i], "*") == 0) {
                as_err_set(err, "policy ruleset: server name \"%s\" is not allowed", names[i]);
                free(names);
                goto fail;
            }
            b->server = pol_arena_strdup(&rs->arena, names[i]);
            if (read_bucket(json_object_get(servers, names[i]), b, &rs->any, &rs->arena, &keep,
                            err) < 0) {
                free(names);
                goto fail;
            }
            rs->nservers++;
        }
        free(names);
    }
    pol_ruleset_index_servers(rs);
    json_t *fs = json_object_get(root, "filesystem");
    if (fs) {
        static const char *const fk[] = {"read", "write", "deny", NULL};
        static const char *const sk[] = {"machine", "bundle", NULL};
        if (!json_is_object(fs) || only_keys(fs, fk, "filesystem", err) < 0) {
            if (!as_err_isset(err))
                as_err_set(err, "policy ruleset: filesystem must be an object");
            goto fail;
        }
        for (int f = 0; f < 3; f++) {
            json_t *fo = json_object_get(fs, fs_key[f]);
            if (!fo)
                continue;
            if (!json_is_object(fo) || only_keys(fo, sk, fs_key[f], err) < 0) {
                if (!as_err_isset(err))
                    as_err_set(err, "policy ruleset: filesystem.%s must be an object", fs_key[f]);
                goto fail;
            }
            for (int l = 0; l < 2; l++) {
                json_t *arr = json_object_get(fo, side_key[l]);
                if (!arr)
                    continue;
                struct pol_item *items = NULL;
                size_t n = 0;
                if (read_items(arr, POL_FS_READ + f, fs_key[f], &items, &n, &keep, err) < 0) {
                    free(items);
                    goto fail;
                }
                pol_globset_build(&rs->fs[f][l], &rs->arena, items, n, 0, POL_MAX_FS_PATTERN);
                free(items);
            }
        }
    }
    json_t *iso = json_object_get(root, "isolation");
    if (iso) {
        const char *sv = json_string_value(json_object_get(iso, "servers"));
        const char *by = json_string_value(json_object_get(iso, "by"));
        if (!json_is_object(iso) || json_object_size(iso) != 2 || !sv ||
            strcmp(sv, "confined") != 0 || !by ||
            (strcmp(by, "machine") != 0 && strcmp(by, "project") != 0)) {
            as_err_set(err, "policy ruleset: isolation must be {\"servers\": \"confined\", "
                            "\"by\": \"machine\"|\"project\"}");
            goto fail;
        }
        rs->isolation_by = strcmp(by, "machine") == 0 ? POL_BY_MACHINE : POL_BY_PROJECT;
    }
    json_t *gw = json_object_get(root, "gateway_only_hosts");
    if (gw) {
        if (!json_is_array(gw)) {
            as_err_set(err, "policy ruleset: gateway_only_hosts must be an array of strings");
            goto fail;
        }
        size_t n = json_array_size(gw);
        const char **hosts = xmalloc((n + 1) * sizeof *hosts);
        for (size_t i = 0; i < n; i++) {
            json_t *s = json_array_get(gw, i);
            if (!json_is_string(s)) {
                free(hosts);
                as_err_set(err, "policy ruleset: gateway_only_hosts must be an array of strings");
                goto fail;
            }
            hosts[i] = json_string_value(s);
        }
        int rc = pol_ruleset_set_gateway_only(rs, hosts, n, err);
        free(hosts);
        if (rc < 0) {
            as_err_prefix(err, "policy ruleset");
            goto fail;
        }
    }
    strvec_clear(&keep);
    return rs;
fail:
    strvec_clear(&keep);
    pol_ruleset_free(rs);
    return NULL;
}

struct pol_ruleset *pol_ruleset_from_json(const char *text, size_t len, struct as_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        as_err_set(err, "policy ruleset: line %d column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    struct pol_ruleset *rs = load(root, err);
    json_decref(root);
    return rs;
}
