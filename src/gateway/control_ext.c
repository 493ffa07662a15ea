/*
 * agentstack_list, agentstack_explain, agentstack_search and agentstack_diff
 * (ext tier; docs/gateway.md): read-only views of the project for the agent. See
 * control_ext.h for what they guarantee; the gateway's trust gate decides
 * how much each may say (names and the trust note only, when untrusted).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/url.h"
#include "base/xalloc.h"
#include "bundle/lockfile.h"
#include "bundle/ref.h"
#include "gateway/control_ext.h"
#include "gateway/gw_int.h"
#include "policy/policy.h"
#include "trust/trust.h"

#define EXT_MAX_HITS 200

/* ---- shared helpers ------------------------------------------------------------ */

/* What the connection may say about the project: everything only when it is
 * served (trusted, or named explicitly); an auto-mode project that is not
 * trusted gets names only. */
static bool restricted(const struct gw *gw)
{
    if (gw->grant && !gw_grant_anchored(gw))
        return true; /* the bytes left the run's frozen consent */
    return gw->proj.gated && gw->last_state != TRUST_TRUSTED;
}

static json_t *clean_str(const char *s, size_t max)
{
    strbuf b = SB_INIT;
    gw_one_line(s ? s : "", max, &b);
    json_t *r = json_string(b.buf);
    sb_release(&b);
    return r;
}

/* A URL without userinfo, query or fragment: a token can hide in any of
 * them. An http(s) URL is read by base/url.h, and one it cannot read one
 * way only shows no more than its scheme (its userinfo cannot be told from
 * its host); another scheme (a git source's ssh://) loses everything up to
 * the last '@' of its authority. */
static json_t *clean_url(const char *url)
{
    if (!url)
        return json_null();
    bool https = strncasecmp(url, "https://", 8) == 0;
    bool web = https || strncasecmp(url, "http://", 7) == 0;
    struct url_authority a;
    const char *why;
    if (web && url_authority(url, &a, &why) < 0)
        return json_string(https ? "https://…" : "http://…");
    strbuf u = SB_INIT;
    const char *p = strstr(url, "://");
    const char *rest = p ? p + 3 : url;
    if (p)
        sb_add(&u, url, (size_t)(rest - url));
    size_t host_end = strcspn(rest, "/?#");
    const char *host = rest;
    for (size_t i = 0; i < host_end; i++)
        if (rest[i] == '@')
            host = rest + i + 1;
    sb_add(&u, host, (size_t)(rest + host_end - host));
    const char *path = rest + host_end;
    size_t pn = strcspn(path, "?#");
    sb_add(&u, path, pn);
    if (path[pn])
        sb_adds(&u, "?…");
    json_t *r = clean_str(u.buf, 400);
    sb_release(&u);
    return r;
}

static json_t *names_json(const strvec *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, clean_str(v->v[i], 128));
    return a;
}

static json_t *text_json(json_t *o)
{
    strbuf t = SB_INIT;
    gw_pretty(o, &t);
    json_decref(o);
    json_t *r = gw_text_result(t.buf, false);
    sb_release(&t);
    return r;
}

static const char *trust_word(const struct gw *gw)
{
    if (gw->grant)
        return gw_grant_anchored(gw) ? "served under the run's frozen grant"
                                     : "changed since the run's grant froze it";
    if (!gw->proj.gated)
        return "served (the connection names this project)";
    switch (gw->last_state) {
    case TRUST_TRUSTED:
        return "trusted";
    case TRUST_CHANGED:
        return "changed since trusted";
    case TRUST_UNTRUSTED:
        return "not trusted";
    default:
        return "unreadable";
    }
}

/* The project's model and its bytes, read fresh (so pins and trust are
 * judged on what is on disk now). */
struct ext_ctx {
    struct manifest_snapshot snap;
    struct manifest *m;
};

static int ctx_load(struct gw *gw, struct ext_ctx *c, struct as_err *err)
{
    manifest_snapshot_init(&c->snap);
    c->m = NULL;
    if (!gw->proj.found)
        return as_err_set(err, "no agentstack project is bound to this connection");
    if (manifest_snapshot_read(&gw->proj.paths, &c->snap, err) < 0)
        return -1;
    c->m = manifest_load_snapshot(&gw->proj.paths, &c->snap, err);
    return c->m ? 0 : -1;
}

static void ctx_release(struct ext_ctx *c)
{
    if (c->m)
        manifest_free(c->m);
    manifest_snapshot_release(&c->snap);
}

static json_t *err_result(const struct as_err *err)
{
    char buf[2300];
    return gw_error_result("%s", as_err_str(err, buf, sizeof buf));
}

static void add_note(struct gw *gw, json_t *o)
{
    strbuf note = SB_INIT;
    gw_trust_note(gw, gw->last_state, &note);
    json_object_set_new(o, "note", clean_str(note.buf, 1000));
    sb_release(&note);
}

static void add_head(struct gw *gw, const struct manifest *m, json_t *o)
{
    json_object_set_new(o, "project", clean_str(gw->proj.root, 1000));
    json_object_set_new(o, "manifest", clean_str(m->path, 1000));
    json_object_set_new(o, "trust", json_string(trust_word(gw)));
}

static json_t *toolsets_of(const struct manifest *m, const char *name, bool skill)
{
    json_t *a = json_array();
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        const strvec *v = skill ? &t->skills : &t->servers;
        if (strvec_find(v, name) >= 0 ||
            (skill && strvec_find(v, "*") >= 0 && manifest_skill(m, name) != NULL))
            json_array_append_new(a, clean_str(t->name, 128));
    }
    return a;
}

static bool in_any_toolset(const struct manifest *m, const char *name)
{
    for (size_t i = 0; i < m->toolsets.n; i++)
        if (strvec_find(&m->toolsets.v[i].servers, name) >= 0)
            return true;
    return false;
}

static json_t *keys_json(const mf_strmap *map)
{
    json_t *a = json_array();
    for (size_t i = 0; i < map->n; i++)
        json_array_append_new(a, clean_str(map->v[i].key, 128));
    return a;
}

static json_t *refs_json(const struct mf_server *s)
{
    strvec refs = STRVEC_INIT;
    ref_server_refs(s, &refs);
    json_t *a = names_json(&refs);
    strvec_clear(&refs);
    return a;
}

static const char *skip_why(const struct gw_surface *sf, const char *name)
{
    for (size_t i = 0; sf && i < sf->skipped.n; i++)
        if (strcmp(sf->skipped.v[i].name, name) == 0)
            return sf->skipped.v[i].why;
    return NULL;
}

/* One server's description: how it runs, secrets by name only. */
static json_t *server_json(const struct gw_surface *sf, const struct mf_server *s)
{
    json_t *e = json_object();
    json_object_set_new(e, "name", clean_str(s->name, 128));
    json_object_set_new(e, "type", json_string(s->type == MF_SERVER_HTTP ? "http" : "stdio"));
    if (s->type == MF_SERVER_HTTP) {
        json_object_set_new(e, "url", clean_url(s->url));
        json_object_set_new(e, "headers", keys_json(&s->headers));
    } else {
        strbuf cmd = SB_INIT;
        sb_adds(&cmd, s->command ? s->command : "");
        for (size_t k = 0; k < s->args.n; k++)
            sb_addf(&cmd, " %s", s->args.v[k]);
        json_object_set_new(e, "command", clean_str(cmd.buf, 400));
        sb_release(&cmd);
        json_object_set_new(e, "env", keys_json(&s->env));
    }
    json_object_set_new(e, "secrets", refs_json(s));
    bool open = sf && sf->gate == GW_GATE_OPEN;
    const struct gw_up *up = open ? gw_surface_up(sf, s->name) : NULL;
    json_object_set_new(e, "proxied", json_boolean(up != NULL));
    if (up && up->needs_login) {
        char *fix = xasprintf("agentstack auth login %s", s->name);
        json_object_set_new(e, "needs_login", json_string(fix)); /* docs/oauth.md */
        free(fix);
    }
    const char *why = skip_why(sf, s->name);
    if (why)
        json_object_set_new(e, "skipped", clean_str(why, 400));
    return e;
}

static json_t *skill_source_json(const struct mf_skill *k)
{
    json_t *src = json_object();
    switch (k->source) {
    case MF_SOURCE_GIT:
        json_object_set_new(src, "type", json_string("git"));
        json_object_set_new(src, "git", clean_url(k->git));
        json_object_set_new(src, "rev", k->rev ? clean_str(k->rev, 128) : json_null());
        if (k->subpath)
            json_object_set_new(src, "subpath", clean_str(k->subpath, 400));
        break;
    case MF_SOURCE_PATH:
        json_object_set_new(src, "type", json_string("path"));
        json_object_set_new(src, "path", clean_str(k->path, 400));
        break;
    default:
        json_object_set_new(src, "type", json_string("library"));
        break;
    }
    return src;
}

static json_t *declared_json(const struct mf_pos *pos)
{
    if (!pos->file)
        return json_null();
    strbuf b = SB_INIT;
    sb_addf(&b, "%s:%u", pos->file, pos->line);
    json_t *r = clean_str(b.buf, 1000);
    sb_release(&b);
    return r;
}

/* ---- agentstack_list ---------------------------------------------------------- */

json_t *gw_t_list(struct gw *gw, struct job *j, const json_t *args)
{
    (void)args;
    struct gw_surface *sf = gw_surface_for(gw, j->modern);
    struct as_err err = AS_ERR_INIT;
    struct ext_ctx c;
    if (ctx_load(gw, &c, &err) < 0) {
        ctx_release(&c);
        return err_result(&err);
    }
    const struct manifest *m = c.m;
    bool names_only = restricted(gw);
    json_t *o = json_object();
    add_head(gw, m, o);
    json_object_set_new(o, "default_toolset",
                        m->default_toolset ? clean_str(m->default_toolset, 128) : json_null());
    json_object_set_new(o, "lease",
                        gw->lease.active ? clean_str(gw->lease.profile, 128) : json_null());
    json_t *servers = json_array();
    json_t *skills = json_array();
    json_t *ts = json_array();
    for (size_t i = 0; i < m->servers.n; i++)
        json_array_append_new(servers, names_only ? clean_str(m->servers.v[i].name, 128)
                                                  : server_json(sf, &m->servers.v[i]));
    for (size_t i = 0; i < m->skills.n; i++) {
        const struct mf_skill *k = &m->skills.v[i];
        if (names_only) {
            json_array_append_new(skills, clean_str(k->name, 128));
            continue;
        }
        json_t *e = json_object();
        json_object_set_new(e, "name", clean_str(k->name, 128));
        json_object_set_new(e, "source", skill_source_json(k));
        json_array_append_new(skills, e);
    }
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        if (names_only) {
            json_array_append_new(ts, clean_str(t->name, 128));
            continue;
        }
        json_t *e = json_object();
        json_object_set_new(e, "name", clean_str(t->name, 128));
        json_object_set_new(e, "servers", names_json(&t->servers));
        json_object_set_new(e, "skills", names_json(&t->skills));
        json_array_append_new(ts, e);
    }
    json_object_set_new(o, "servers", servers);
    json_object_set_new(o, "skills", skills);
    json_object_set_new(o, "toolsets", ts);
    if (names_only)
        add_note(gw, o);
    else
        json_object_set_new(o, "secrets_note",
                            json_string("secrets are listed by reference name only; values "
                                        "are never read or shown here"));
    ctx_release(&c);
    return text_json(o);
}

/* ---- policy for explain -------------------------------------------------------- */

struct ext_policy {
    struct pol_layer *machine, *project;
    struct pol_ruleset *rs; /* owned, or NULL when borrowed */
    const struct pol_ruleset *use;
    bool frozen;
};

static int policy_load(struct gw *gw, const struct gw_surface *sf, const struct manifest *m,
                       struct ext_policy *p, struct as_err *err)
{
    memset(p, 0, sizeof *p);
    strbuf path = SB_INIT;
    if (pol_machine_path(&path, err) < 0) {
        sb_release(&path);
        return -1;
    }
    enum pol_machine_state st;
    p->machine = pol_machine_load(path.buf, &st, err);
    sb_release(&path);
    if (!p->machine)
        return -1;
    p->project = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, err);
    if (!p->project)
        return -1;
    if (sf && sf->gate == GW_GATE_OPEN && sf->rs) {
        /* The ruleset this connection enforces (a grant's frozen one included). */
        p->use = sf->rs;
        p->frozen = gw->grant != NULL;
        return 0;
    }
    p->rs = pol_compile(p->machine, p->project, getenv("HOME"), err);
    p->use = p->rs;
    return p->rs ? 0 : -1;
}

static void policy_release(struct ext_policy *p)
{
    if (p->machine)
        pol_layer_free(p->machine);
    if (p->project)
        pol_layer_free(p->project);
    if (p->rs)
        pol_ruleset_free(p->rs);
}

static json_t *decision_json(const struct pol_decision *d, int allow)
{
    json_t *o = json_object();
    json_object_set_new(o, "allow", json_boolean(allow));
    const char *layer = pol_by_name(d->by);
    json_object_set_new(o, "layer", json_string(layer && *layer ? layer : "none"));
    strbuf rule = SB_INIT;
    if (d->why == POL_DENY_RULE || d->why == POL_MALFORMED) {
        sb_addf(&rule, "!%s", d->pattern ? d->pattern : "");
    } else if (d->why == POL_NOT_ALLOWLISTED) {
        for (size_t i = 0; i < d->n_allow; i++)
            sb_addf(&rule, "%s%s", i ? ", " : "allowlist: ", d->allowlist[i]);
    }
    json_object_set_new(o, "rule", rule.len ? clean_str(rule.buf, 400) : json_null());
    sb_release(&rule);
    strbuf why = SB_INIT;
    if (allow)
        sb_adds(&why, "allowed: no rule of either layer objects");
    else
        pol_decision_text(d, &why);
    json_object_set_new(o, "why", clean_str(why.buf, 600));
    sb_release(&why);
    return o;
}

static json_t *rows_json(const struct ext_policy *p, const char *server)
{
    strbuf rows = SB_INIT;
    pol_explain_rows(p->machine, p->project, server, &rows);
    pol_isolation_row(p->machine, p->project, &rows); /* how its stdio servers run */
    json_t *a = json_array();
    const char *s = rows.buf;
    while (s && *s) {
        size_t n = strcspn(s, "\n");
        if (n) {
            strbuf line = SB_INIT;
            sb_add(&line, s, n);
            json_array_append_new(a, clean_str(line.buf, 600));
            sb_release(&line);
        }
        s += n;
        if (*s == '\n')
            s++;
    }
    sb_release(&rows);
    return a;
}

/* The host of an http URL (for the egress decision), or "" when it cannot
 * be read one way only (base/url.h). */
static void url_host(const char *url, strbuf *out)
{
    struct url_authority a;
    const char *why;
    if (url_authority(url, &a, &why) == 0)
        sb_adds(out, a.host);
}

/* ---- pins ------------------------------------------------------------------------ */

static int pins_load(struct gw *gw, const struct ext_ctx *c, struct trust_pins *pins,
                     struct as_err *err)
{
    return trust_verify_pins(c->m, gw->proj.paths.lock, c->snap.lock.buf, c->snap.lock.len,
                             c->snap.has_lock, gw->home, pins, err);
}

static json_t *pin_json(const struct trust_pins *pins, enum pin_kind kind, const char *name)
{
    for (size_t i = 0; pins && i < pins->results.n; i++) {
        const struct trust_pin_result *r = &pins->results.v[i];
        if (r->item->kind != kind || strcmp(r->item->name, name) != 0)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "status", json_string(pin_status_name(r->status)));
        json_object_set_new(o, "blocks", json_boolean(r->blocks));
        if (r->message && *r->message)
            json_object_set_new(o, "message", clean_str(r->message, 600));
        return o;
    }
    return json_null();
}

/* ---- agentstack_explain ------------------------------------------------------- */

static json_t *explain_server(struct gw *gw, const struct gw_surface *sf, const struct manifest *m,
                              const char *name, const struct ext_policy *pol,
                              const struct trust_pins *pins)
{
    const struct mf_server *s = manifest_server(m, name);
    json_t *o = json_object();
    json_object_set_new(o, "name", clean_str(name, 128));
    json_object_set_new(o, "kind", json_string("server"));
    json_object_set_new(o, "origin", json_string(s ? "manifest" : "library"));
    json_object_set_new(o, "declared", s ? declared_json(&s->pos) : json_null());
    if (s) {
        json_t *d = server_json(sf, s);
        json_object_del(d, "name");
        json_object_update(o, d);
        json_decref(d);
    } else {
        bool open = sf && sf->gate == GW_GATE_OPEN;
        json_object_set_new(o, "proxied", json_boolean(open && gw_surface_up(sf, name) != NULL));
        const char *why = skip_why(sf, name);
        if (why)
            json_object_set_new(o, "skipped", clean_str(why, 400));
    }
    json_object_set_new(o, "toolsets", toolsets_of(m, name, false));
    json_object_set_new(o, "pin", pin_json(pins, PIN_SERVER, name));
    json_t *p = json_object();
    json_object_set_new(p, "rows", rows_json(pol, name));
    if (pol->frozen)
        json_object_set_new(p, "ruleset", json_string("frozen by the run's grant"));
    if (s) {
        strvec refs = STRVEC_INIT;
        ref_server_refs(s, &refs);
        json_t *sec = json_array();
        for (size_t i = 0; i < refs.n; i++) {
            struct pol_decision d;
            int allow = pol_secret(pol->use, name, refs.v[i], &d);
            json_t *e = decision_json(&d, allow);
            json_object_set_new(e, "ref", clean_str(refs.v[i], 128));
            json_array_append_new(sec, e);
        }
        strvec_clear(&refs);
        json_object_set_new(p, "secrets", sec);
        if (s->type == MF_SERVER_HTTP) {
            strbuf host = SB_INIT;
            url_host(s->url, &host);
            if (host.len) {
                struct pol_decision d;
                int allow = pol_egress(pol->use, name, host.buf, 0, &d);
                json_t *e = decision_json(&d, allow);
                json_object_set_new(e, "host", clean_str(host.buf, 256));
                json_object_set_new(p, "egress", e);
            }
            sb_release(&host);
        }
    }
    json_object_set_new(o, "policy", p);
    (void)gw;
    return o;
}

static json_t *explain_tool(const struct gw_surface *sf, const struct manifest *m,
                            const char *server, const char *tool, const struct ext_policy *pol)
{
    json_t *o = json_object();
    strbuf full = SB_INIT;
    sb_addf(&full, "%s__%s", server, tool);
    json_object_set_new(o, "name", clean_str(full.buf, 260));
    sb_release(&full);
    json_object_set_new(o, "kind", json_string("tool"));
    json_object_set_new(o, "server", clean_str(server, 128));
    json_object_set_new(o, "tool", clean_str(tool, 128));
    const struct mf_server *s = manifest_server(m, server);
    json_object_set_new(o, "origin",
                        json_string(s                           ? "manifest"
                                    : in_any_toolset(m, server) ? "library"
                                                                : "undeclared"));
    bool open = sf && sf->gate == GW_GATE_OPEN;
    const struct gw_up *up = open ? gw_surface_up(sf, server) : NULL;
    json_object_set_new(o, "server_proxied", json_boolean(up != NULL));
    if (up && up->disc == 2) {
        bool seen = false;
        for (size_t i = 0; i < up->tools.n && !seen; i++)
            seen = strcmp(up->tools.v[i].name, tool) == 0;
        json_object_set_new(o, "listed_by_server", json_boolean(seen));
    }
    if (!gw_tool_name_ok(tool)) {
        json_object_set_new(o, "policy", json_null());
        json_object_set_new(o, "why", json_string("not a valid tool name"));
        return o;
    }
    struct pol_decision d;
    int allow = pol_tool(pol->use, server, tool, &d);
    json_t *p = decision_json(&d, allow);
    if (pol->frozen)
        json_object_set_new(p, "ruleset", json_string("frozen by the run's grant"));
    json_object_set_new(p, "rows", rows_json(pol, server));
    json_object_set_new(o, "policy", p);
    return o;
}

static json_t *explain_skill(const struct manifest *m, const struct mf_skill *k,
                             const struct trust_pins *pins)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", clean_str(k->name, 128));
    json_object_set_new(o, "kind", json_string("skill"));
    json_object_set_new(o, "origin", json_string("manifest"));
    json_object_set_new(o, "declared", declared_json(&k->pos));
    json_object_set_new(o, "source", skill_source_json(k));
    json_object_set_new(o, "toolsets", toolsets_of(m, k->name, true));
    json_object_set_new(o, "pin", pin_json(pins, PIN_SKILL, k->name));
    json_object_set_new(o, "policy",
                        json_string("skills are not governed by [policy]; the "
                                    "toolset fence and the lock pin decide what "
                                    "loads"));
    return o;
}

static json_t *explain_toolset(struct gw *gw, const struct manifest *m, const struct mf_toolset *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", clean_str(t->name, 128));
    json_object_set_new(o, "kind", json_string("toolset"));
    json_object_set_new(o, "declared", declared_json(&t->pos));
    json_object_set_new(o, "servers", names_json(&t->servers));
    json_object_set_new(o, "skills", names_json(&t->skills));
    json_object_set_new(
        o, "default", json_boolean(m->default_toolset && strcmp(m->default_toolset, t->name) == 0));
    json_object_set_new(o, "lease_open",
                        json_boolean(gw->lease.active && gw->lease.profile &&
                                     strcmp(gw->lease.profile, t->name) == 0));
    return o;
}

json_t *gw_t_explain(struct gw *gw, struct job *j, const json_t *args)
{
    const char *name = json_string_value(json_object_get(args, "name"));
    if (!name || !*name)
        return gw_error_result("agentstack_explain needs a name: a server, a server__tool, a "
                               "skill or a toolset from agentstack_list");
    struct gw_surface *sf = gw_surface_for(gw, j->modern);
    struct as_err err = AS_ERR_INIT;
    struct ext_ctx c;
    if (ctx_load(gw, &c, &err) < 0) {
        ctx_release(&c);
        return err_result(&err);
    }
    const struct manifest *m = c.m;
    strbuf srv = SB_INIT, tool = SB_INIT;
    const char *kind = NULL;
    if (gw_split(name, &srv, &tool))
        kind = "tool";
    else if (manifest_server(m, name) || in_any_toolset(m, name))
        kind = "server";
    else if (manifest_skill(m, name))
        kind = "skill";
    else if (manifest_toolset(m, name))
        kind = "toolset";
    json_t *r = NULL;
    if (!kind) {
        strbuf n = SB_INIT;
        gw_one_line(name, 200, &n);
        r = gw_error_result("nothing named '%s' in this project: give a server, a "
                            "server__tool, a skill or a toolset (see agentstack_list)",
                            n.buf);
        sb_release(&n);
    } else if (restricted(gw)) {
        json_t *o = json_object();
        json_object_set_new(o, "name", clean_str(name, 260));
        json_object_set_new(o, "kind", json_string(kind));
        json_object_set_new(o, "trust", json_string(trust_word(gw)));
        add_note(gw, o);
        r = text_json(o);
    } else if (strcmp(kind, "toolset") == 0) {
        r = text_json(explain_toolset(gw, m, manifest_toolset(m, name)));
    } else {
        struct trust_pins pins;
        bool have_pins = strcmp(kind, "tool") != 0 && pins_load(gw, &c, &pins, &err) == 0;
        struct ext_policy pol;
        if (strcmp(kind, "skill") == 0) {
            r = text_json(explain_skill(m, manifest_skill(m, name), have_pins ? &pins : NULL));
        } else if (policy_load(gw, sf, m, &pol, &err) < 0) {
            r = err_result(&err);
            policy_release(&pol);
        } else {
            json_t *o = strcmp(kind, "tool") == 0
                            ? explain_tool(sf, m, srv.buf, tool.buf, &pol)
                            : explain_server(gw, sf, m, name, &pol, have_pins ? &pins : NULL);
            policy_release(&pol);
            r = text_json(o);
        }
        if (have_pins)
            trust_pins_free(&pins);
    }
    sb_release(&srv);
    sb_release(&tool);
    ctx_release(&c);
    return r;
}

/* ---- agentstack_search -------------------------------------------------------- */

static bool icontains(const char *hay, const char *needle)
{
    if (!needle || !*needle)
        return true;
    size_t n = strlen(needle);
    for (const char *p = hay; p && *p; p++) {
        size_t k = 0;
        while (k < n && p[k] && tolower((unsigned char)p[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static void project_hit(json_t *a, const char *kind, const char *name, const char *q)
{
    if (!icontains(name, q) || json_array_size(a) >= EXT_MAX_HITS)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "name", clean_str(name, 128));
    json_array_append_new(a, o);
}

static json_t *library_hits(struct gw *gw, const struct manifest *m, const char *q, json_t *out)
{
    json_t *a = json_array();
    if (!gw->o.library_search) {
        json_object_set_new(out, "library_note",
                            json_string("the central library is not searched by this "
                                        "gateway"));
        return a;
    }
    strbuf js = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (gw->o.library_search(m, q, &js, &err) < 0) {
        char buf[2300];
        strbuf n = SB_INIT;
        sb_addf(&n, "the central library could not be read: %s", as_err_str(&err, buf, sizeof buf));
        json_object_set_new(out, "library_note", clean_str(n.buf, 1000));
        sb_release(&n);
        sb_release(&js);
        return a;
    }
    json_error_t je;
    json_t *hits = json_loads(js.buf ? js.buf : "[]", 0, &je);
    sb_release(&js);
    size_t i;
    json_t *h;
    json_array_foreach(hits, i, h)
    {
        if (json_array_size(a) >= EXT_MAX_HITS) {
            json_object_set_new(out, "library_truncated", json_integer((json_int_t)EXT_MAX_HITS));
            break;
        }
        json_t *o = json_object();
        json_object_set_new(o, "kind",
                            clean_str(json_string_value(json_object_get(h, "kind")), 32));
        json_object_set_new(o, "name",
                            clean_str(json_string_value(json_object_get(h, "name")), 128));
        const char *d = json_string_value(json_object_get(h, "description"));
        json_object_set_new(o, "description", d ? clean_str(d, 300) : json_null());
        const char *s = json_string_value(json_object_get(h, "source"));
        json_object_set_new(o, "source", s ? clean_str(s, 128) : json_null());
        json_object_set_new(o, "in_manifest",
                            json_boolean(json_is_true(json_object_get(h, "in_manifest"))));
        json_object_set_new(o, "installed_pack",
                            json_boolean(json_is_true(json_object_get(h, "installed_pack"))));
        json_array_append_new(a, o);
    }
    json_decref(hits);
    return a;
}

json_t *gw_t_search(struct gw *gw, struct job *j, const json_t *args)
{
    (void)j;
    const char *q = json_string_value(json_object_get(args, "query"));
    json_t *o = json_object();
    json_object_set_new(o, "query", clean_str(q ? q : "", 200));
    struct as_err err = AS_ERR_INIT;
    struct ext_ctx c;
    json_t *proj = json_array();
    if (ctx_load(gw, &c, &err) == 0) {
        const struct manifest *m = c.m;
        for (size_t i = 0; i < m->servers.n; i++)
            project_hit(proj, "server", m->servers.v[i].name, q);
        for (size_t i = 0; i < m->skills.n; i++)
            project_hit(proj, "skill", m->skills.v[i].name, q);
        for (size_t i = 0; i < m->toolsets.n; i++)
            project_hit(proj, "toolset", m->toolsets.v[i].name, q);
    } else {
        char buf[2300];
        json_object_set_new(o, "project_note", clean_str(as_err_str(&err, buf, sizeof buf), 1000));
    }
    json_object_set_new(o, "project", proj);
    json_object_set_new(o, "library", library_hits(gw, c.m, q, o));
    json_object_set_new(o, "not_searched",
                        json_string("the vendor catalog and the MCP Registry (offline); add "
                                    "a found item with the agentstack CLI"));
    if (gw->proj.found && restricted(gw))
        add_note(gw, o);
    ctx_release(&c);
    return text_json(o);
}

/* ---- agentstack_diff ---------------------------------------------------------- */

/* NULL = every kind; else the pin kind scope names (singular or plural). */
static bool scope_kind(const char *scope, int *kind)
{
    *kind = -1;
    if (!scope || !*scope || strcmp(scope, "all") == 0)
        return true;
    for (int k = PIN_SKILL; k <= PIN_BLUEPRINT; k++) {
        const char *n = pin_kind_name((enum pin_kind)k);
        size_t len = strlen(n);
        if (strcmp(scope, n) == 0 ||
            (strncmp(scope, n, len) == 0 && strcmp(scope + len, "s") == 0)) {
            *kind = k;
            return true;
        }
    }
    return false;
}

json_t *gw_t_diff(struct gw *gw, struct job *j, const json_t *args)
{
    (void)j;
    const char *scope = json_string_value(json_object_get(args, "scope"));
    int kind;
    if (!scope_kind(scope, &kind)) {
        strbuf n = SB_INIT, kinds = SB_INIT;
        gw_one_line(scope, 100, &n);
        for (int k = PIN_SKILL; k <= PIN_BLUEPRINT; k++)
            sb_addf(&kinds, ", %ss", pin_kind_name((enum pin_kind)k));
        json_t *r = gw_error_result("unknown scope '%s': use all%s", n.buf, kinds.buf);
        sb_release(&n);
        sb_release(&kinds);
        return r;
    }
    struct as_err err = AS_ERR_INIT;
    struct ext_ctx c;
    if (ctx_load(gw, &c, &err) < 0) {
        ctx_release(&c);
        return err_result(&err);
    }
    struct trust_pins pins;
    if (pins_load(gw, &c, &pins, &err) < 0) {
        ctx_release(&c);
        return err_result(&err);
    }
    bool names_only = restricted(gw);
    json_t *o = json_object();
    add_head(gw, c.m, o);
    json_object_set_new(o, "scope", json_string(kind < 0 ? "all" : scope));
    json_object_set_new(o, "lock",
                        json_string(pins.lock_unreadable ? "unreadable"
                                    : pins.lock_absent   ? "absent"
                                                         : "present"));
    if (pins.lock_unreadable && pins.lock_error && !names_only)
        json_object_set_new(o, "lock_error", clean_str(pins.lock_error, 600));
    json_t *pending = json_array();
    size_t matching = 0, blocking = 0;
    for (size_t i = 0; i < pins.results.n; i++) {
        const struct trust_pin_result *r = &pins.results.v[i];
        if (kind >= 0 && (int)r->item->kind != kind)
            continue;
        if (r->status == PIN_MATCHES) {
            matching++;
            continue;
        }
        if (r->blocks)
            blocking++;
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(pin_kind_name(r->item->kind)));
        json_object_set_new(e, "name", clean_str(r->item->name, 260));
        json_object_set_new(e, "status", json_string(pin_status_name(r->status)));
        json_object_set_new(e, "blocks", json_boolean(r->blocks));
        if (!names_only && r->message && *r->message)
            json_object_set_new(e, "message", clean_str(r->message, 600));
        json_array_append_new(pending, e);
    }
    size_t npending = json_array_size(pending);
    json_object_set_new(o, "pending", pending);
    json_object_set_new(o, "matching", json_integer((json_int_t)matching));
    bool trust_pending = gw->proj.gated && gw->last_state != TRUST_TRUSTED;
    json_object_set_new(o, "clean",
                        json_boolean(npending == 0 && !trust_pending && !pins.lock_unreadable));
    json_t *next = json_array();
    if (npending || pins.lock_unreadable)
        json_array_append_new(next, json_string("a person reviews the changes and runs "
                                                "`agentstack lock` to pin them"));
    if (trust_pending || (npending && gw->proj.gated)) {
        strbuf t = SB_INIT;
        sb_addf(&t, "a person reviews the project and runs `agentstack trust %s`", gw->proj.dir);
        json_array_append_new(next, clean_str(t.buf, 1000));
        sb_release(&t);
    }
    json_object_set_new(o, "next", next);
    json_object_set_new(o, "blocking", json_integer((json_int_t)blocking));
    if (names_only)
        add_note(gw, o);
    trust_pins_free(&pins);
    ctx_release(&c);
    return text_json(o);
}
