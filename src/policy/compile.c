/*
 * compile — machine ∩ project into one ruleset, the decisions every
 * enforcer asks, and the refusal text.
 *
 * Combination: per layer, no applicable deny may match and every applicable
 * allowlist must be hit (keys S and "*" both apply to server S; a server
 * named "*" only "*"); the machine layer is checked first and both layers
 * must allow, so the project can only narrow. Filesystem deny is a union of
 * both layers; filesystem write needs each non-empty layer list to cover the
 * workspace, and with no list anywhere the workspace stays read-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "policy/pol_internal.h"

static const char *const MACHINE_SUFFIX = " (machine policy — ~/.agentstack/agentstack.toml)";

struct pol_ruleset *pol_ruleset_alloc(void)
{
    struct pol_ruleset *rs = xcalloc(1, sizeof *rs);
    rs->version = POL_WIRE_VERSION;
    for (int d = 0; d < POL_NKEYED; d++)
        for (int l = 0; l < 2; l++) {
            rs->any.side[d][l].deny.first_malformed = -1;
        }
    for (int f = 0; f < 3; f++)
        for (int l = 0; l < 2; l++)
            rs->fs[f][l].first_malformed = -1;
    rs->gw_only.first_malformed = -1;
    return rs;
}

void pol_ruleset_free(struct pol_ruleset *rs)
{
    if (!rs)
        return;
    pol_arena_free(&rs->arena);
    free(rs);
}

struct pol_ruleset *pol_ruleset_deny_all(const char *reason)
{
    struct pol_ruleset *rs = pol_ruleset_alloc();
    rs->deny_all = pol_arena_strdup(&rs->arena, reason && *reason ? reason : "no ruleset");
    return rs;
}

/* ---- compile ------------------------------------------------------------ */

static int dim_nocase_deny(enum pol_dim d)
{
    return d == POL_TOOLS || d == POL_SECRETS;
}

static void side_from_key(struct pol_side *s, struct pol_arena *a, enum pol_dim dim,
                          const struct pol_key *k, int inherit)
{
    memset(s, 0, sizeof *s);
    s->inherit_any = (uint8_t)inherit;
    s->deny.first_malformed = -1;
    if (!k || !k->rules.n)
        return;
    /* small lists (the common case) stay on the stack */
    struct pol_item sden[32], salw[32];
    struct pol_item *den = k->rules.n <= 32 ? sden : xmalloc(k->rules.n * sizeof *den);
    struct pol_item *alw = k->rules.n <= 32 ? salw : xmalloc(k->rules.n * sizeof *alw);
    size_t nd = 0, na = 0;
    for (size_t i = 0; i < k->rules.n; i++) {
        const struct pol_rule *r = &k->rules.v[i];
        struct pol_item it = {r->canon, r->pat, r->port, 0};
        if (r->deny)
            den[nd++] = it;
        else
            alw[na++] = it;
    }
    pol_globset_build(&s->deny, a, den, nd, dim_nocase_deny(dim), POL_MAX_PATTERN);
    if (na) {
        s->allow = pol_arena_alloc(a, sizeof *s->allow);
        s->nallow = 1;
        pol_globset_build(&s->allow[0], a, alw, na, 0, POL_MAX_PATTERN);
    }
    if (den != sden)
        free(den);
    if (alw != salw)
        free(alw);
}

static const struct pol_key *find_key(const struct pol_layer *l, enum pol_dim d, const char *name)
{
    if (!l)
        return NULL;
    for (size_t i = 0; i < l->keyed[d].keys.n; i++)
        if (strcmp(l->keyed[d].keys.v[i].name, name) == 0)
            return &l->keyed[d].keys.v[i];
    return NULL;
}

void pol_ruleset_index_servers(struct pol_ruleset *rs)
{
    uint32_t cap = 8;
    while (cap < rs->nservers * 2)
        cap <<= 1;
    rs->srv_slot = pol_arena_alloc(&rs->arena, cap * sizeof *rs->srv_slot);
    memset(rs->srv_slot, 0, cap * sizeof *rs->srv_slot);
    rs->srv_mask = cap - 1;
    for (uint32_t i = 0; i < rs->nservers; i++) {
        uint64_t h = POL_FNV_INIT;
        for (const char *p = rs->servers[i].server; *p; p++)
            h = pol_fnv_step(h, (unsigned char)*p, 0);
        uint32_t at = (uint32_t)h & rs->srv_mask;
        while (rs->srv_slot[at])
            at = (at + 1) & rs->srv_mask;
        rs->srv_slot[at] = i + 1;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int expand_home(const char *g, const char *home, strbuf *out)
{
    const char *rest = NULL;
    if (g[0] == '~' && (g[1] == '\0' || g[1] == '/'))
        rest = g + 1;
    else if (strncmp(g, "${HOME}", 7) == 0 && (g[7] == '\0' || g[7] == '/'))
        rest = g + 7;
    else if (strncmp(g, "$HOME", 5) == 0 && (g[5] == '\0' || g[5] == '/'))
        rest = g + 5;
    if (!rest) {
        sb_adds(out, g);
        return 0;
    }
    if (!home || !*home)
        return -1;
    size_t hl = strlen(home);
    while (hl > 1 && home[hl - 1] == '/')
        hl--;
    sb_add(out, home, hl);
    sb_adds(out, rest);
    return 0;
}

static int fs_build(struct pol_globset *gs, struct pol_arena *a, const struct pol_layer *l, int f,
                    const char *home, struct as_err *err)
{
    const struct pol_fslist *fl = &l->fs[f];
    struct pol_item *items = xmalloc((fl->globs.n + 1) * sizeof *items);
    strvec keep = STRVEC_INIT;
    for (size_t i = 0; i < fl->globs.n; i++) {
        const struct pol_rule *r = &fl->globs.v[i];
        strbuf e = SB_INIT;
        if (f == 2 && expand_home(r->pat, home, &e) < 0) {
            sb_release(&e);
            free(items);
            strvec_clear(&keep);
            as_err_at(err, l->path, r->line, r->col,
                      "[policy.filesystem] deny glob \"%s\" needs $HOME, which is not set",
                      r->text);
            as_err_hint(err, "set HOME, or write the glob as an absolute path");
            return -1;
        }
        if (f != 2)
            sb_adds(&e, r->pat);
        const char *why;
        if (pol_fs_glob_check(e.buf, e.len, &why) < 0) {
            as_err_at(err, l->path, r->line, r->col,
                      "[policy.filesystem] deny glob \"%s\" expands to an invalid glob — %s",
                      r->text, why);
            as_err_hint(err, "check HOME, or write the glob as an absolute path");
            sb_release(&e);
            free(items);
            strvec_clear(&keep);
            return -1;
        }
        strvec_push_take(&keep, sb_detach(&e, NULL));
        items[i] = (struct pol_item){keep.v[i], keep.v[i], 0, 0};
    }
    pol_globset_build(gs, a, items, fl->globs.n, 0, POL_MAX_FS_PATTERN);
    strvec_clear(&keep);
    free(items);
    return 0;
}

struct pol_ruleset *pol_compile(const struct pol_layer *machine, const struct pol_layer *project,
                                const char *home, struct as_err *err)
{
    const struct pol_layer *lay[2] = {machine, project};
    struct pol_ruleset *rs = pol_ruleset_alloc();
    strvec names = STRVEC_INIT;
    for (int d = 0; d < POL_NKEYED; d++)
        for (int l = 0; l < 2; l++) {
            side_from_key(&rs->any.side[d][l], &rs->arena, (enum pol_dim)d,
                          find_key(lay[l], (enum pol_dim)d, "*"), 0);
            if (!lay[l])
                continue;
            for (size_t k = 0; k < lay[l]->keyed[d].keys.n; k++) {
                const char *n = lay[l]->keyed[d].keys.v[k].name;
                if (strcmp(n, "*") != 0)
                    strvec_push(&names, n);
            }
        }
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < names.n; i++) {
        if (u && strcmp(names.v[u - 1], names.v[i]) == 0) {
            free(names.v[i]);
            continue;
        }
        names.v[u++] = names.v[i];
    }
    names.n = u;
    rs->servers = pol_arena_alloc(&rs->arena, (u ? u : 1) * sizeof *rs->servers);
    rs->nservers = (uint32_t)u;
    for (size_t i = 0; i < u; i++) {
        struct pol_bucket *b = &rs->servers[i];
        memset(b, 0, sizeof *b);
        b->server = pol_arena_strdup(&rs->arena, names.v[i]);
        for (int d = 0; d < POL_NKEYED; d++)
            for (int l = 0; l < 2; l++)
                side_from_key(&b->side[d][l], &rs->arena, (enum pol_dim)d,
                              find_key(lay[l], (enum pol_dim)d, names.v[i]), 1);
    }
    strvec_clear(&names);
    pol_ruleset_index_servers(rs);
    /* Either layer may ask for confined servers; none can turn it off. */
    rs->isolation_by = machine && machine->isolation == POL_ISO_CONFINED   ? POL_BY_MACHINE
                       : project && project->isolation == POL_ISO_CONFINED ? POL_BY_PROJECT
                                                                           : POL_BY_NONE;
    for (int f = 0; f < 3; f++)
        for (int l = 0; l < 2; l++)
            if (lay[l] && fs_build(&rs->fs[f][l], &rs->arena, lay[l], f, home, err) < 0) {
                pol_ruleset_free(rs);
                return NULL;
            }
    return rs;
}

enum pol_isolation pol_isolation_of(const struct pol_ruleset *rs, enum pol_by *by)
{
    enum pol_by b = rs ? rs->isolation_by : POL_BY_SYSTEM;
    if (!rs || rs->deny_all || rs->version > POL_WIRE_VERSION)
        b = POL_BY_SYSTEM; /* a ruleset that decides nothing confines everything */
    if (by)
        *by = b;
    return b == POL_BY_NONE ? POL_ISO_HOST : POL_ISO_CONFINED;
}

int pol_ruleset_set_gateway_only(struct pol_ruleset *rs, const char *const *hosts, size_t n,
                                 struct as_err *err)
{
    struct pol_item *items = xmalloc((n + 1) * sizeof *items);
    char(*buf)[POL_HOST_MAX + 1] = xmalloc((n + 1) * sizeof *buf);
    for (size_t i = 0; i < n; i++) {
        const char *why;
        if (pol_host_normalize(hosts[i], strlen(hosts[i]), buf[i], &why) < 0) {
            as_err_set(err, "gateway-only host \"%s\": %s", hosts[i], why);
            free(items);
            free(buf);
            return -1;
        }
        items[i] = (struct pol_item){buf[i], buf[i], 0, 0};
    }
    pol_globset_build(&rs->gw_only, &rs->arena, items, n, 0, POL_MAX_PATTERN);
    free(items);
    free(buf);
    return 0;
}

/* ---- decisions ---------------------------------------------------------- */

const struct pol_bucket *pol_bucket_for(const struct pol_ruleset *rs, const char *server)
{
    if (!server || !rs->nservers || (server[0] == '*' && server[1] == '\0'))
        return &rs->any;
    uint64_t h = POL_FNV_INIT;
    for (const char *p = server; *p; p++)
        h = pol_fnv_step(h, (unsigned char)*p, 0);
    uint32_t at = (uint32_t)h & rs->srv_mask;
    uint32_t id1;
    while ((id1 = rs->srv_slot[at]) != 0) {
        if (strcmp(rs->servers[id1 - 1].server, server) == 0)
            return &rs->servers[id1 - 1];
        at = (at + 1) & rs->srv_mask;
    }
    return &rs->any;
}

static void fill(struct pol_decision *d, enum pol_dim dim, enum pol_by by, enum pol_why why,
                 const char *subject)
{
    memset(d, 0, sizeof *d);
    d->allow = why == POL_ALLOWED;
    d->dim = dim;
    d->by = by;
    d->why = why;
    d->subject = subject;
}

static int first_malformed(const struct pol_side *s, const char **pat)
{
    if (s->deny.first_malformed >= 0) {
        *pat = s->deny.g[s->deny.first_malformed].disp;
        return 1;
    }
    for (uint32_t i = 0; i < s->nallow; i++)
        if (s->allow[i].first_malformed >= 0) {
            *pat = s->allow[i].g[s->allow[i].first_malformed].disp;
            return 1;
        }
    return 0;
}

/* One layer's verdict; 1 allow, 0 deny (d filled). */
static int side_decide(const struct pol_side *own, const struct pol_side *any, const char *s,
                       size_t n, unsigned port, enum pol_by by, struct pol_decision *d)
{
    const struct pol_side *sides[2] = {own, own->inherit_any ? any : NULL};
    const char *bad;
    for (int i = 0; i < 2; i++)
        if (sides[i] && first_malformed(sides[i], &bad)) {
            d->allow = 0;
            d->by = by;
            d->why = POL_MALFORMED;
            d->pattern = bad;
            return 0;
        }
    const char *hit = NULL;
    for (int i = 0; i < 2; i++) {
        if (!sides[i] || !sides[i]->deny.n)
            continue;
        int32_t id = pol_globset_find(&sides[i]->deny, s, n, port, 0);
        if (id >= 0 && (!hit || strcmp(sides[i]->deny.g[id].disp, hit) < 0))
            hit = sides[i]->deny.g[id].disp;
    }
    if (hit) {
        d->allow = 0;
        d->by = by;
        d->why = POL_DENY_RULE;
        d->pattern = hit;
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        if (!sides[i])
            continue;
        for (uint32_t b = 0; b < sides[i]->nallow; b++) {
            const struct pol_globset *gs = &sides[i]->allow[b];
            if (pol_globset_find(gs, s, n, port, 1) < 0) {
                d->allow = 0;
                d->by = by;
                d->why = POL_NOT_ALLOWLISTED;
                d->allowlist = gs->disps;
                d->n_allow = gs->n;
                return 0;
            }
        }
    }
    return 1;
}

/* Deny-all and version checks shared by every decision; 1 when refused. */
static int refused_outright(const struct pol_ruleset *rs, enum pol_dim dim, const char *subject,
                            struct pol_decision *d)
{
    if (rs->deny_all) {
        fill(d, dim, POL_BY_SYSTEM, POL_UNAVAILABLE, subject);
        d->reason = rs->deny_all;
        return 1;
    }
    if (rs->version > POL_WIRE_VERSION) {
        fill(d, dim, POL_BY_SYSTEM, POL_VERSION, subject);
        d->version = rs->version;
        return 1;
    }
    return 0;
}

int pol_decide(const struct pol_ruleset *rs, enum pol_dim dim, const char *server,
               const char *subject, unsigned port, struct pol_decision *out)
{
    struct pol_decision tmp;
    struct pol_decision *d = out ? out : &tmp;
    if (!subject)
        subject = "";
    if (!rs || dim >= POL_NKEYED) {
        fill(d, dim, POL_BY_SYSTEM, POL_UNAVAILABLE, subject);
        d->reason = rs ? "not a keyed policy dimension" : "no ruleset";
        return 0;
    }
    if (refused_outright(rs, dim, subject, d))
        return 0;
    size_t n = strlen(subject);
    const char *s = subject;
    char host[POL_HOST_MAX + 1];
    if (dim == POL_TOOLS) {
        if (!pol_tool_subject_ok(s, n)) {
            fill(d, dim, POL_BY_SYSTEM, POL_BAD_SUBJECT, subject);
            return 0;
        }
    } else if (dim == POL_SECRETS) {
        if (!pol_ref_name_ok(s, n)) {
            fill(d, dim, POL_BY_SYSTEM, POL_BAD_SUBJECT, subject);
            return 0;
        }
    } else {
        const char *why;
        if (port > 65535 || pol_host_normalize(s, n, host, &why) < 0) {
            fill(d, dim, POL_BY_SYSTEM, POL_BAD_SUBJECT, subject);
            return 0;
        }
        s = host;
        n = strlen(host);
        if (rs->gw_only.n && pol_globset_find(&rs->gw_only, s, n, 0, 1) >= 0) {
            fill(d, dim, POL_BY_SYSTEM, POL_GATEWAY_ONLY, subject);
            return 0;
        }
    }
    fill(d, dim, POL_BY_NONE, POL_ALLOWED, subject);
    const struct pol_bucket *b = pol_bucket_for(rs, server);
    if (!side_decide(&b->side[dim][POL_MACHINE], &rs->any.side[dim][POL_MACHINE], s, n, port,
                     POL_BY_MACHINE, d))
        return 0;
    if (!side_decide(&b->side[dim][POL_PROJECT], &rs->any.side[dim][POL_PROJECT], s, n, port,
                     POL_BY_PROJECT, d))
        return 0;
    return 1;
}

int pol_fs_workspace_writable(const struct pol_ruleset *rs, struct pol_decision *out)
{
    struct pol_decision tmp;
    struct pol_decision *d = out ? out : &tmp;
    if (!rs) {
        fill(d, POL_FS_WRITE, POL_BY_SYSTEM, POL_UNAVAILABLE, "./");
        d->reason = "no ruleset";
        return 0;
    }
    if (refused_outright(rs, POL_FS_WRITE, "./", d))
        return 0;
    const struct pol_globset *w[2] = {&rs->fs[1][POL_MACHINE], &rs->fs[1][POL_PROJECT]};
    for (int l = 0; l < 2; l++)
        if (w[l]->first_malformed >= 0) {
            fill(d, POL_FS_WRITE, l ? POL_BY_PROJECT : POL_BY_MACHINE, POL_MALFORMED, "./");
            d->pattern = w[l]->g[w[l]->first_malformed].disp;
            return 0;
        }
    if (!w[0]->n && !w[1]->n) {
        fill(d, POL_FS_WRITE, POL_BY_DEFAULT, POL_DEFAULT_DENY, "./");
        return 0;
    }
    static const char *const spell[2] = {"./", "."};
    int failed = -1;
    for (int sp = 0; sp < 2; sp++) {
        int pass = 1;
        for (int l = 0; l < 2 && pass; l++)
            if (w[l]->n && pol_globset_find(w[l], spell[sp], strlen(spell[sp]), 0, 1) < 0) {
                pass = 0;
                if (sp == 0)
                    failed = l;
            }
        if (pass) {
            fill(d, POL_FS_WRITE, POL_BY_NONE, POL_ALLOWED, spell[sp]);
            return 1;
        }
    }
    fill(d, POL_FS_WRITE, failed ? POL_BY_PROJECT : POL_BY_MACHINE, POL_NOT_ALLOWLISTED, "./");
    d->allowlist = w[failed]->disps;
    d->n_allow = w[failed]->n;
    return 0;
}

int pol_fs_allowed(const struct pol_ruleset *rs, const char *const *spellings, size_t n,
                   struct pol_decision *out)
{
    struct pol_decision tmp;
    struct pol_decision *d = out ? out : &tmp;
    const char *subject = n ? spellings[0] : "";
    if (!rs) {
        fill(d, POL_FS_DENY, POL_BY_SYSTEM, POL_UNAVAILABLE, subject);
        d->reason = "no ruleset";
        return 0;
    }
    if (refused_outright(rs, POL_FS_DENY, subject, d))
        return 0;
    for (int l = 0; l < 2; l++) {
        const struct pol_globset *gs = &rs->fs[2][l];
        enum pol_by by = l ? POL_BY_PROJECT : POL_BY_MACHINE;
        if (gs->first_malformed >= 0) {
            fill(d, POL_FS_DENY, by, POL_MALFORMED, subject);
            d->pattern = gs->g[gs->first_malformed].disp;
            return 0;
        }
        int32_t best = -1;
        size_t which = 0;
        for (size_t i = 0; i < n; i++) {
            int32_t id = pol_globset_find(gs, spellings[i], strlen(spellings[i]), 0, 0);
            if (id >= 0 && (best < 0 || id < best)) {
                best = id;
                which = i;
            }
        }
        if (best >= 0) {
            fill(d, POL_FS_DENY, by, POL_DENY_RULE, spellings[which]);
            d->pattern = gs->g[best].disp;
            return 0;
        }
    }
    fill(d, POL_FS_DENY, POL_BY_NONE, POL_ALLOWED, subject);
    return 1;
}

/* The directory part of a glob before its first '*' (the "secrets/" of a
 * directory-scoped glob), as a length; 0 when the glob has none. */
static size_t literal_dir(const char *pat, size_t len)
{
    const char *star = memchr(pat, '*', len);
    size_t end = star ? (size_t)(star - pat) : len;
    while (end > 0 && pat[end - 1] != '/')
        end--;
    return end;
}

/* POL_MAY_DENY_NAMED: does query reach the directory d only through "**"? */
static int only_through_globstar(const char *q, const char *d, size_t dl)
{
    const char *gs = strstr(q, "**");
    if (!gs)
        return 0;
    size_t ql = (size_t)(gs - q);
    return !(ql >= dl && !strncmp(q, d, dl));
}

int pol_fs_may_deny(const struct pol_ruleset *rs, const char *const *queries, size_t n, int flags,
                    struct pol_decision *out)
{
    struct pol_decision tmp;
    struct pol_decision *d = out ? out : &tmp;
    const char *subject = n ? queries[0] : "";
    if (!rs) {
        fill(d, POL_FS_DENY, POL_BY_SYSTEM, POL_UNAVAILABLE, subject);
        d->reason = "no ruleset";
        return 0;
    }
    if (refused_outright(rs, POL_FS_DENY, subject, d))
        return 0;
    for (int l = 0; l < 2; l++) {
        const struct pol_globset *gs = &rs->fs[2][l];
        enum pol_by by = l ? POL_BY_PROJECT : POL_BY_MACHINE;
        if (gs->first_malformed >= 0) {
            fill(d, POL_FS_DENY, by, POL_MALFORMED, subject);
            d->pattern = gs->g[gs->first_malformed].disp;
            return 0;
        }
        for (uint32_t g = 0; g < gs->n; g++)
            for (size_t i = 0; i < n; i++) {
                size_t dl = literal_dir(gs->g[g].pat, gs->g[g].len);
                if ((flags & POL_MAY_DENY_NAMED) && dl &&
                    only_through_globstar(queries[i], gs->g[g].pat, dl))
                    continue;
                if (pol_glob_intersects(gs->g[g].pat, gs->g[g].len, queries[i],
                                        strlen(queries[i]))) {
                    fill(d, POL_FS_DENY, by, POL_DENY_RULE, queries[i]);
                    d->pattern = gs->g[g].disp;
                    return 0;
                }
            }
    }
    fill(d, POL_FS_DENY, POL_BY_NONE, POL_ALLOWED, subject);
    return 1;
}

/* Lexically normalizes an absolute path: no "//", ".", ".."; ".." at the root stays. */
static void lexical(const char *p, strbuf *out)
{
    sb_reset(out);
    size_t i = 0, n = strlen(p);
    while (i < n) {
        while (i < n && p[i] == '/')
            i++;
        size_t j = i;
        while (j < n && p[j] != '/')
            j++;
        size_t cl = j - i;
        if (cl == 0 || (cl == 1 && p[i] == '.')) {
            /* skip */
        } else if (cl == 2 && p[i] == '.' && p[i + 1] == '.') {
            while (out->len && out->buf[out->len - 1] != '/')
                out->len--;
            if (out->len)
                out->len--;
            out->buf[out->len] = '\0';
        } else {
            sb_addc(out, '/');
            sb_add(out, p + i, cl);
        }
        i = j;
    }
    if (!out->len)
        sb_addc(out, '/');
}

void pol_fs_spellings(const char *path, const char *workspace, const char *home, int with_basename,
                      strvec *out)
{
    strbuf e = SB_INIT, abs = SB_INIT, ws = SB_INIT, tmp = SB_INIT;
    if (expand_home(path, home, &e) < 0) {
        sb_reset(&e);
        sb_adds(&e, path);
    }
    if (e.buf[0] != '/' && workspace) {
        sb_addf(&tmp, "%s/%s", workspace, e.buf);
        lexical(tmp.buf, &abs);
    } else if (e.buf[0] == '/') {
        lexical(e.buf, &abs);
    } else {
        sb_addf(&tmp, "/%s", e.buf);
        lexical(tmp.buf, &abs);
        /* no workspace: keep the relative spelling as given, normalized */
        strvec_push(out, abs.buf + 1);
    }
    if (e.buf[0] == '/' || workspace)
        strvec_push(out, abs.buf);
    if (workspace && workspace[0] == '/') {
        lexical(workspace, &ws);
        if (strcmp(abs.buf, ws.buf) == 0)
            strvec_push(out, ".");
        else if (ws.len == 1)
            strvec_push(out, abs.buf + 1);
        else if (strncmp(abs.buf, ws.buf, ws.len) == 0 && abs.buf[ws.len] == '/')
            strvec_push(out, abs.buf + ws.len + 1);
    }
    if (with_basename && abs.len > 1) {
        const char *slash = strrchr(abs.buf, '/');
        strvec_push(out, slash + 1);
    }
    sb_release(&e);
    sb_release(&abs);
    sb_release(&ws);
    sb_release(&tmp);
}

/* ---- refusal text ------------------------------------------------------- */

const char *pol_by_name(enum pol_by by)
{
    switch (by) {
    case POL_BY_MACHINE:
        return "machine";
    case POL_BY_PROJECT:
        return "project";
    case POL_BY_DEFAULT:
        return "deny-by-default";
    case POL_BY_SYSTEM:
        return "system";
    default:
        return "";
    }
}

const char *pol_dim_display(enum pol_dim dim)
{
    static const char *const names[POL_NDIMS] = {
        "[policy.tools]",           "[policy.egress]",           "[policy.secrets]",
        "[policy.filesystem] read", "[policy.filesystem] write", "[policy.filesystem] deny",
    };
    return dim < POL_NDIMS ? names[dim] : "[policy]";
}

/* Subjects come from agents and hosts: show them without control bytes. */
static void add_clean(strbuf *out, const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < 200; p++, n++) {
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
            sb_addf(out, "\\x%02x", *p);
        else
            sb_addc(out, (char)*p);
    }
    if (strlen(s) > 200)
        sb_adds(out, "…");
}

static void add_list(strbuf *out, const struct pol_decision *d)
{
    for (size_t i = 0; i < d->n_allow; i++)
        sb_addf(out, "%s%s", i ? ", " : "", d->allowlist[i]);
}

static const char *bang(enum pol_dim dim)
{
    return dim < POL_NKEYED ? "!" : "";
}

static void system_text(const struct pol_decision *d, strbuf *out)
{
    switch (d->why) {
    case POL_VERSION:
        sb_addf(out,
                "compiled policy version %d is newer than this agentstack supports (%d) — "
                "denying everything; upgrade agentstack",
                d->version, POL_WIRE_VERSION);
        break;
    case POL_GATEWAY_ONLY:
        sb_adds(out, "denied: ");
        add_clean(out, d->subject);
        sb_adds(out, " is reachable only through the gateway relay (lockdown)");
        break;
    case POL_BAD_SUBJECT:
        sb_adds(out, "denied: \"");
        add_clean(out, d->subject);
        sb_adds(out, d->dim == POL_TOOLS     ? "\" is not a valid tool name"
                     : d->dim == POL_SECRETS ? "\" is not a valid ${REF} name"
                                             : "\" is not a canonical ASCII host "
                                               "(non-canonical host)");
        break;
    case POL_UNAVAILABLE:
        sb_addf(out, "policy unavailable — refusing to continue (%s)", d->reason);
        break;
    case POL_DEFAULT_DENY:
        sb_adds(out, "no [policy.filesystem] write scope covers the workspace (sandbox workspace "
                     "writes are deny-by-default)");
        break;
    case POL_LOCAL_ADDRESS:
        sb_adds(out, "refusing ");
        add_clean(out, d->subject);
        sb_addf(out, " (%s): a local address is reached only when [policy.egress] names it",
                d->reason);
        if (d->subject && strcmp(d->subject, "?") != 0) {
            sb_adds(out, " (e.g. \"");
            add_clean(out, d->subject);
            sb_adds(out, "\")");
        }
        break;
    default:
        break;
    }
}

void pol_decision_text(const struct pol_decision *d, strbuf *out)
{
    if (!d || d->allow)
        return;
    switch (d->why) {
    case POL_DENY_RULE:
        sb_addf(out, "denied by %s rule \"%s%s\"", pol_dim_display(d->dim), bang(d->dim),
                d->pattern);
        break;
    case POL_NOT_ALLOWLISTED:
        sb_addf(out, "not in the %s allowlist (", pol_dim_display(d->dim));
        add_list(out, d);
        sb_addc(out, ')');
        break;
    case POL_MALFORMED:
        sb_addf(out,
                "malformed %s pattern \"%s\" in the compiled ruleset — failing closed; fix the "
                "pattern in the manifest",
                pol_dim_display(d->dim), d->pattern);
        break;
    default:
        system_text(d, out);
        break;
    }
    if (d->by == POL_BY_MACHINE)
        sb_adds(out, MACHINE_SUFFIX);
}

void pol_decision_short(const struct pol_decision *d, strbuf *out)
{
    if (!d || d->allow)
        return;
    switch (d->why) {
    case POL_DENY_RULE:
        sb_addf(out, "denied by rule \"%s%s\"", bang(d->dim), d->pattern);
        break;
    case POL_NOT_ALLOWLISTED:
        sb_adds(out, "not in the allowlist (");
        add_list(out, d);
        sb_addc(out, ')');
        break;
    case POL_MALFORMED:
        sb_addf(out, "malformed pattern \"%s\" — failing closed", d->pattern);
        break;
    default:
        system_text(d, out);
        return;
    }
    if (d->by == POL_BY_MACHINE)
        sb_adds(out, " (machine policy)");
    else if (d->by == POL_BY_PROJECT)
        sb_adds(out, " (project policy)");
}
