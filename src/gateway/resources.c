/*
 * Upstream resources, prompts and completions through the gateway
 * (docs/gateway.md, "Resources, prompts and completions").
 *
 * Why: an agent that reads a resource or gets a prompt through agentstack
 * must meet the same trust gate, fence, policy and audit as a tool call;
 * answering -32601 made clients go around the gateway to reach them.
 *
 * Guarantees:
 *  - Listings (resources/list, resources/templates/list, prompts/list) ask
 *    every served upstream that declares the capability (or has not started
 *    yet, so none is known), in parallel, and show only what [policy.tools]
 *    allows ("resource:<uri>", "prompt:<name>"); names become server__name,
 *    URIs agentstack://<server>/<percent-encoded original>. Pagination: our
 *    cursor names each upstream still holding pages with its own cursor; a
 *    cursor that does not decode, or names a server not served, is -32602.
 *  - resources/read, prompts/get and completion/complete go through
 *    gw_dispatch (fence, trust anchor, policy, secrets, audit): the reverse
 *    URI mapping refuses a URI that names no served server or does not
 *    decode to exactly one original (gw_uri_unmap).
 *  - Upstream text shown to the agent as a listing's name, title or
 *    description passes the hostile-text filter (one line).
 *  - resources/subscribe and unsubscribe are routed and checked like a read;
 *    what upstreams notify is notify.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "base/xalloc.h"
#include "gateway/gw_int.h"

#define URI_PREFIX "agentstack://"

/* ---- the URI mapping ------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void pct_encode(const char *s, size_t n, strbuf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c)) {
            sb_addc(out, (char)c);
        } else {
            sb_addc(out, '%');
            sb_addc(out, hex[c >> 4]);
            sb_addc(out, hex[c & 15]);
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1; /* lowercase hex is not the one spelling we write */
}

void gw_uri_map(const char *server, const char *uri, strbuf *out)
{
    sb_adds(out, URI_PREFIX);
    sb_adds(out, server);
    sb_addc(out, '/');
    pct_encode(uri, strlen(uri), out);
}

/* A URI template: literal parts encoded, {expressions} kept, so a client's
 * simple-string expansion produces a URI gw_uri_unmap accepts. */
static void template_map(const char *server, const char *t, strbuf *out)
{
    sb_adds(out, URI_PREFIX);
    sb_adds(out, server);
    sb_addc(out, '/');
    while (*t) {
        const char *open = strchr(t, '{');
        const char *close = open ? strchr(open, '}') : NULL;
        if (!close) {
            pct_encode(t, strlen(t), out);
            break;
        }
        pct_encode(t, (size_t)(open - t), out);
        sb_add(out, open, (size_t)(close - open + 1));
        t = close + 1;
    }
}

int gw_uri_unmap(const char *guri, strbuf *server, strbuf *uri, const char **why)
{
    size_t pl = strlen(URI_PREFIX);
    if (strncmp(guri, URI_PREFIX, pl) != 0) {
        *why = "it is not an agentstack:// URI this gateway listed";
        return -1;
    }
    const char *s = guri + pl, *slash = strchr(s, '/');
    if (!slash || slash == s) {
        *why = "it names no server";
        return -1;
    }
    sb_add(server, s, (size_t)(slash - s));
    if (!gw_tool_name_ok(server->buf)) {
        *why = "its server name is not one a manifest can declare";
        return -1;
    }
    const char *e = slash + 1;
    if (!*e) {
        *why = "it names no resource";
        return -1;
    }
    for (size_t i = 0; e[i]; i++) {
        unsigned char c = (unsigned char)e[i];
        if (c == '%') {
            int hi = hexval(e[i + 1]), lo = hi < 0 ? -1 : hexval(e[i + 2]);
            int v = hi * 16 + lo;
            if (hi < 0 || lo < 0 || v == 0 || unreserved((unsigned char)v)) {
                *why = "its percent-encoding is not the one the gateway writes";
                return -1;
            }
            sb_addc(uri, (char)v);
            i += 2;
        } else if (unreserved(c)) {
            sb_addc(uri, (char)c);
        } else {
            *why = "it holds a byte the gateway would have percent-encoded";
            return -1;
        }
    }
    return 0;
}

/* ---- capabilities ------------------------------------------------------------ */

/* 1 declares cap, 0 does not, -1 not started (unknown). */
static int up_declares(const struct gw_up *up, const char *cap)
{
    if (!up->client || mcp_client_state(up->client) != MCP_ST_READY)
        return -1;
    const json_t *caps = json_object_get(mcp_client_server_result(up->client), "capabilities");
    return json_is_object(json_object_get(caps, cap)) ? 1 : 0;
}

bool gw_caps_sub_offered(struct gw *gw, const char *cap, const char *sub)
{
    struct gw_surface *sf = gw->proj.resolved ? gw_surface_for(gw, false) : NULL;
    if (!sf || sf->gate != GW_GATE_OPEN)
        return false;
    for (size_t i = 0; i < sf->ups.n; i++) {
        const struct gw_up *up = sf->ups.v[i];
        int d = up_declares(up, cap);
        if (d < 0)
            return true;
        const json_t *caps = json_object_get(mcp_client_server_result(up->client), "capabilities");
        if (d == 1 && json_is_true(json_object_get(json_object_get(caps, cap), sub)))
            return true;
    }
    return false;
}

bool gw_caps_offered(struct gw *gw, const char *cap)
{
    /* Before the project is bound (auto mode, roots pending) nothing is
     * known, so nothing is advertised. */
    struct gw_surface *sf = gw->proj.resolved ? gw_surface_for(gw, false) : NULL;
    if (!sf || sf->gate != GW_GATE_OPEN)
        return false;
    for (size_t i = 0; i < sf->ups.n; i++)
        if (up_declares(sf->ups.v[i], cap) != 0)
            return true;
    return false;
}

/* ---- listings ------------------------------------------------------------------ */

struct lister;

struct lslot {
    struct lister *ls;
    struct gw_up *up;
    char *cursor;    /* the upstream's, or NULL for its first page */
    uint64_t handle; /* the request in flight, 0 once answered */
    json_t *items;
    char *next;
};

struct lister {
    struct gw *gw;
    struct job *j;
    struct gw_surface *sf;
    const char *method, *key, *cap;
    size_t left;
    VEC(struct lslot *) slots;
};

static void clean_str(json_t *dst, const json_t *src, const char *key)
{
    const char *v = json_string_value(json_object_get(src, key));
    if (!v)
        return;
    strbuf c = SB_INIT;
    gw_one_line(v, GW_DESC_MAX, &c);
    json_object_set_new(dst, key, json_string(c.buf));
    sb_release(&c);
}

/* One listed item, rewritten for the agent; NULL when hidden. */
static json_t *list_item(const struct pol_ruleset *rs, const char *key, const struct gw_up *up,
                         const json_t *it)
{
    json_t *o = json_object();
    strbuf subj = SB_INIT, full = SB_INIT;
    const char *name = json_string_value(json_object_get(it, "name"));
    bool ok = true;
    if (strcmp(key, "prompts") == 0) {
        ok = name && gw_tool_name_ok(name);
        if (ok) {
            sb_addf(&subj, "prompt:%s", name);
            sb_addf(&full, "%s__%s", up->name, name);
            json_object_set_new(o, "name", json_string(full.buf));
        }
        json_t *args = json_object_get(it, "arguments"), *a, *out = json_array();
        size_t i;
        json_array_foreach(args, i, a)
        {
            json_t *c = json_object();
            clean_str(c, a, "name");
            clean_str(c, a, "title");
            clean_str(c, a, "description");
            if (json_is_boolean(json_object_get(a, "required")))
                json_object_set(c, "required", json_object_get(a, "required"));
            json_array_append_new(out, c);
        }
        if (json_array_size(out))
            json_object_set_new(o, "arguments", out);
        else
            json_decref(out);
    } else {
        bool tmpl = strcmp(key, "resourceTemplates") == 0;
        const char *uri = json_string_value(json_object_get(it, tmpl ? "uriTemplate" : "uri"));
        ok = uri && *uri && name;
        if (ok) {
            sb_addf(&subj, "resource:%s", uri);
            if (tmpl)
                template_map(up->name, uri, &full);
            else
                gw_uri_map(up->name, uri, &full);
            json_object_set_new(o, tmpl ? "uriTemplate" : "uri", json_string(full.buf));
            strbuf n = SB_INIT, c = SB_INIT;
            gw_one_line(name, GW_DESC_MAX, &c);
            sb_addf(&n, "%s__%s", up->name, c.buf);
            json_object_set_new(o, "name", json_string(n.buf));
            sb_release(&n);
            sb_release(&c);
            clean_str(o, it, "mimeType");
            json_t *size = json_object_get(it, "size");
            if (json_is_integer(size))
                json_object_set(o, "size", size);
        }
    }
    if (ok && !pol_tool(rs, up->name, subj.buf, NULL))
        ok = false;
    if (ok) {
        clean_str(o, it, "title");
        clean_str(o, it, "description");
        json_t *ann = json_object_get(it, "annotations");
        if (json_is_object(ann))
            json_object_set(o, "annotations", ann);
    }
    sb_release(&subj);
    sb_release(&full);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *gw_res_view(const struct pol_ruleset *rs, const struct gw_up *up, const char *key,
                    const json_t *items)
{
    json_t *view = json_array(), *it;
    size_t k;
    json_array_foreach(items, k, it)
    {
        json_t *o = list_item(rs, key, up, it);
        if (o)
            json_array_append_new(view, o);
    }
    return view;
}

/* The next cursor: "server=cursor" pairs joined by '&', each side
 * percent-encoded. */
static void cursor_encode(const struct lister *ls, strbuf *out)
{
    for (size_t i = 0; i < ls->slots.n; i++) {
        const struct lslot *s = ls->slots.v[i];
        if (!s->next)
            continue;
        if (out->len)
            sb_addc(out, '&');
        pct_encode(s->up->name, strlen(s->up->name), out);
        sb_addc(out, '=');
        pct_encode(s->next, strlen(s->next), out);
    }
}

static int pct_decode(const char *s, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            if (!unreserved((unsigned char)s[i]))
                return -1;
            sb_addc(out, s[i]);
            continue;
        }
        int hi = i + 2 < n ? hexval(s[i + 1]) : -1, lo = hi < 0 ? -1 : hexval(s[i + 2]);
        if (hi < 0 || lo < 0 || hi * 16 + lo == 0)
            return -1;
        sb_addc(out, (char)(hi * 16 + lo));
        i += 2;
    }
    return 0;
}

static void lister_finish(struct lister *ls)
{
    struct gw *gw = ls->gw;
    json_t *r = json_object(), *all = json_array();
    for (size_t i = 0; i < ls->slots.n; i++) {
        struct lslot *s = ls->slots.v[i];
        json_t *view = gw_res_view(ls->sf->rs, s->up, ls->key, s->items);
        if (!s->cursor && s->items) /* what a list_changed is judged against */
            gw_nt_view_seen(s->up, ls->key, view, s->next != NULL);
        json_array_extend(all, view);
        json_decref(view);
    }
    json_object_set_new(r, ls->key, all);
    strbuf next = SB_INIT;
    cursor_encode(ls, &next);
    if (next.len)
        json_object_set_new(r, "nextCursor", json_string(next.buf));
    sb_release(&next);
    if (ls->j->modern) { /* a listing's cache hints, as tools/list gives them */
        json_object_set_new(r, "ttlMs", json_integer(0));
        json_object_set_new(r, "cacheScope", json_string("private"));
    }
    ls->j->result_ctx = NULL;
    gw_reply(gw, ls->j, r);
    gw_job_free(ls->j);
    for (size_t i = 0; i < ls->slots.n; i++) {
        struct lslot *s = ls->slots.v[i];
        json_decref(s->items);
        free(s->cursor);
        free(s->next);
        free(s);
    }
    vec_free(&ls->slots);
    gw_surface_unref(ls->sf);
    free(ls);
}

static void on_page(void *ctx, const struct mcp_reply *rep)
{
    struct lslot *s = ctx;
    struct lister *ls = s->ls;
    s->handle = 0;
    if (rep->status == MCP_OK && up_declares(s->up, ls->cap) == 1) {
        json_t *items = json_object_get(rep->result, ls->key);
        if (json_is_array(items))
            s->items = json_incref(items);
        const char *nc = json_string_value(json_object_get(rep->result, "nextCursor"));
        if (nc && *nc && (!s->cursor || strcmp(nc, s->cursor) != 0))
            s->next = xstrdup(nc);
    } else if (rep->status != MCP_OK && rep->status != MCP_E_RPC) {
        gw_note("upstream '%s': %s failed (%s)", s->up->name, ls->method,
                mcp_status_name(rep->status));
    }
    if (--ls->left == 0)
        lister_finish(ls);
}

static void list_error(struct gw *gw, struct job *j, const char *msg)
{
    gw_reply_error(gw, j, MCP_INVALID_PARAMS, msg, NULL);
    gw_job_free(j);
}

void gw_res_list(struct gw *gw, struct job *j)
{
    struct lister *ls = xcalloc(1, sizeof *ls);
    ls->gw = gw;
    ls->j = j;
    ls->method = j->method;
    if (strcmp(j->method, "prompts/list") == 0) {
        ls->key = "prompts";
        ls->cap = "prompts";
    } else {
        ls->key = strcmp(j->method, "resources/list") == 0 ? "resources" : "resourceTemplates";
        ls->cap = "resources";
    }
    ls->sf = gw_surface_for(gw, j->modern);
    gw_surface_ref(ls->sf);
    const json_t *cur = json_object_get(j->params, "cursor");
    const char *cs = json_string_value(cur);
    bool bad = cur && !json_is_null(cur) && (!cs || !*cs);
    for (size_t i = 0; !bad && ls->sf->gate == GW_GATE_OPEN && i < ls->sf->ups.n; i++) {
        struct gw_up *up = ls->sf->ups.v[i];
        char *from = NULL;
        if (cs) {
            /* Only the upstreams the cursor names, each at its own page. */
            bool named = false;
            for (const char *p = cs; *p && !named;) {
                const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
                const char *eq = memchr(p, '=', (size_t)(end - p));
                strbuf sv = SB_INIT, cv = SB_INIT;
                if (!eq || pct_decode(p, (size_t)(eq - p), &sv) < 0 ||
                    pct_decode(eq + 1, (size_t)(end - eq - 1), &cv) < 0 || !cv.len)
                    bad = true;
                else if (strcmp(sv.buf, up->name) == 0) {
                    named = true;
                    from = sb_detach(&cv, NULL);
                }
                sb_release(&sv);
                sb_release(&cv);
                p = amp ? amp + 1 : end;
            }
            if (!named)
                continue;
        }
        if (up_declares(up, ls->cap) == 0) {
            free(from);
            continue;
        }
        struct lslot *s = xcalloc(1, sizeof *s);
        s->ls = ls;
        s->up = up;
        s->cursor = from;
        vec_push(&ls->slots, s);
    }
    if (cs && !bad) {
        /* Every server the cursor names must be one served here. */
        for (const char *p = cs; *p && !bad;) {
            const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
            const char *eq = memchr(p, '=', (size_t)(end - p));
            strbuf sv = SB_INIT;
            bad = !eq || pct_decode(p, (size_t)(eq - p), &sv) < 0 || ls->sf->gate != GW_GATE_OPEN ||
                  !gw_surface_up(ls->sf, sv.buf);
            sb_release(&sv);
            p = amp ? amp + 1 : end;
        }
    }
    if (bad) {
        ls->j = NULL;
        for (size_t i = 0; i < ls->slots.n; i++) {
            free(ls->slots.v[i]->cursor);
            free(ls->slots.v[i]);
        }
        vec_free(&ls->slots);
        gw_surface_unref(ls->sf);
        free(ls);
        list_error(gw, j, "Invalid params: the cursor is not one this gateway gave");
        return;
    }
    /* Start what must start (pins re-proved); count before asking. */
    for (size_t i = 0; i < ls->slots.n;) {
        strbuf why = SB_INIT;
        if (gw_code_recheck(ls->slots.v[i]->up, &why) < 0 ||
            gw_up_ensure(ls->slots.v[i]->up, &why) < 0) {
            gw_note("upstream '%s' is left out of %s: %s", ls->slots.v[i]->up->name, j->method,
                    why.buf);
            free(ls->slots.v[i]->cursor);
            free(ls->slots.v[i]);
            ls->slots.v[i] = ls->slots.v[--ls->slots.n];
        } else {
            i++;
        }
        sb_release(&why);
    }
    ls->left = ls->slots.n + 1;
    for (size_t i = 0; i < ls->slots.n; i++) {
        struct lslot *s = ls->slots.v[i];
        json_t *p = json_object();
        if (s->cursor)
            json_object_set_new(p, "cursor", json_string(s->cursor));
        s->handle = mcp_client_request(s->up->client, j->method, p,
                                       s->up->http ? GW_HTTP_TIMEOUT_MS : gw->call_ms, on_page, s);
    }
    j->result_ctx = ls; /* for gw_res_list_cancel */
    if (--ls->left == 0)
        lister_finish(ls);
}

void gw_res_list_cancel(struct job *j)
{
    struct lister *ls = j->on_result ? NULL : j->result_ctx;
    if (!ls || ls->j != j)
        return;
    ls->left++; /* held: a cancelled page may be the last one */
    for (size_t i = 0; i < ls->slots.n; i++) {
        struct lslot *s = ls->slots.v[i];
        if (s->handle && s->up->client)
            mcp_client_cancel(s->up->client, s->handle, "gateway shutting down");
    }
    if (--ls->left == 0)
        lister_finish(ls);
}

/* ---- single requests: what gw_dispatch needs to know ------------------------------ */

/* "Invalid params: <what>[: <detail, one line>]" */
static int target_error(struct gw *gw, struct job *j, const char *what, const char *detail)
{
    strbuf m = SB_INIT;
    sb_addf(&m, "Invalid params: %s", what);
    if (detail) {
        sb_adds(&m, ": ");
        gw_one_line(detail, 200, &m);
    }
    gw_reply_error(gw, j, MCP_INVALID_PARAMS, m.buf, NULL);
    sb_release(&m);
    gw_job_free(j);
    return -1;
}

/* The upstream params of j (without _meta), the server and the policy
 * subject; -1 when j was answered (malformed or hostile). */
int gw_res_target(struct gw *gw, struct job *j)
{
    const json_t *p = j->params;
    strbuf S = SB_INIT, T = SB_INIT;
    json_t *args = json_object();
    const char *why = NULL;
    int rc = 0;
    if (j->kind == GW_KIND_RESOURCE || j->kind == GW_KIND_SUBSCRIBE ||
        j->kind == GW_KIND_UNSUBSCRIBE) {
        const char *uri = json_string_value(json_object_get(p, "uri"));
        free(j->name);
        j->name = xstrdup(uri ? uri : "");
        if (!uri)
            rc = target_error(gw, j, "the request needs a uri", NULL);
        else if (gw_uri_unmap(uri, &S, &T, &why) < 0)
            rc = target_error(gw, j, "refusing the resource URI", why);
        else
            json_object_set_new(args, "uri", json_string(T.buf));
        if (!rc) {
            j->server = sb_detach(&S, NULL);
            j->tool = xasprintf("resource:%s", T.buf);
        }
    } else if (j->kind == GW_KIND_PROMPT) {
        const char *name = json_string_value(json_object_get(p, "name"));
        free(j->name);
        j->name = xstrdup(name ? name : "");
        if (!name || !gw_split(name, &S, &T) || !gw_tool_name_ok(T.buf))
            rc = target_error(gw, j, "unknown prompt", name ? name : "(none)");
        else {
            json_object_set_new(args, "name", json_string(T.buf));
            json_t *a = json_object_get(p, "arguments");
            if (json_is_object(a))
                json_object_set(args, "arguments", a);
            j->server = sb_detach(&S, NULL);
            j->tool = xasprintf("prompt:%s", T.buf);
        }
    } else {
        const json_t *ref = json_object_get(p, "ref");
        const char *type = json_string_value(json_object_get(ref, "type"));
        json_t *nref = json_object();
        if (type && strcmp(type, "ref/prompt") == 0) {
            const char *name = json_string_value(json_object_get(ref, "name"));
            if (!name || !gw_split(name, &S, &T) || !gw_tool_name_ok(T.buf))
                rc = target_error(gw, j, "unknown prompt", name ? name : "(none)");
            else {
                json_object_set_new(nref, "type", json_string(type));
                json_object_set_new(nref, "name", json_string(T.buf));
                j->tool = xasprintf("prompt:%s", T.buf);
            }
        } else if (type && strcmp(type, "ref/resource") == 0) {
            const char *uri = json_string_value(json_object_get(ref, "uri"));
            if (!uri || gw_uri_unmap(uri, &S, &T, &why) < 0)
                rc = target_error(gw, j, "refusing the resource URI", why ? why : "it is missing");
            else {
                json_object_set_new(nref, "type", json_string(type));
                json_object_set_new(nref, "uri", json_string(T.buf));
                j->tool = xasprintf("resource:%s", T.buf);
            }
        } else {
            rc =
                target_error(gw, j, "completion/complete needs a ref/prompt or ref/resource", NULL);
        }
        if (!rc) {
            free(j->name);
            j->name = xstrdup(S.buf);
            json_object_set_new(args, "ref", json_incref(nref));
            json_t *arg = json_object_get(p, "argument");
            if (json_is_object(arg))
                json_object_set(args, "argument", arg);
            json_t *cx = json_object_get(p, "context");
            if (json_is_object(cx))
                json_object_set(args, "context", cx);
            j->server = sb_detach(&S, NULL);
        }
        json_decref(nref);
    }
    sb_release(&S);
    sb_release(&T);
    if (rc) {
        json_decref(args);
        return -1;
    }
    json_decref(j->args);
    j->args = args;
    if (j->kind == GW_KIND_SUBSCRIBE || j->kind == GW_KIND_UNSUBSCRIBE)
        return gw_sub_check(gw, j);
    return 0;
}

const char *gw_res_method(const struct job *j)
{
    return j->kind == GW_KIND_RESOURCE      ? "resources/read"
           : j->kind == GW_KIND_PROMPT      ? "prompts/get"
           : j->kind == GW_KIND_SUBSCRIBE   ? "resources/subscribe"
           : j->kind == GW_KIND_UNSUBSCRIBE ? "resources/unsubscribe"
                                            : "completion/complete";
}

json_t *gw_res_params(struct gw *gw, struct job *j)
{
    json_t *p = json_deep_copy(j->args);
    json_t *meta = gw_progress_meta(gw, j);
    if (meta)
        json_object_set_new(p, "_meta", meta);
    return p;
}

/* ---- answers ------------------------------------------------------------------ */

/* Rewrites every resource URI an answer names to the gateway's. */
static void map_uris(const char *server, json_t *v, int depth)
{
    if (depth > 16)
        return;
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) map_uris(server, e, depth + 1);
        return;
    }
    if (!json_is_object(v))
        return;
    const char *uri = json_string_value(json_object_get(v, "uri"));
    if (uri) {
        strbuf m = SB_INIT;
        gw_uri_map(server, uri, &m);
        json_object_set_new(v, "uri", json_string(m.buf));
        sb_release(&m);
    }
    static const char *const inner[] = {"contents", "messages", "content", "resource", NULL};
    for (size_t i = 0; inner[i]; i++) {
        json_t *c = json_object_get(v, inner[i]);
        if (c)
            map_uris(server, c, depth + 1);
    }
}

void gw_res_forward(struct gw *gw, struct job *j, const json_t *result, long long ms)
{
    static const char *const keep[][4] = {
        {"contents", "_meta", NULL, NULL},
        {"description", "messages", "_meta", NULL},
        {"completion", "_meta", NULL, NULL},
        {"_meta", NULL, NULL, NULL},
    };
    const char *const *k = keep[j->kind == GW_KIND_RESOURCE   ? 0
                                : j->kind == GW_KIND_PROMPT   ? 1
                                : j->kind == GW_KIND_COMPLETE ? 2
                                                              : 3];
    json_t *r = json_object();
    for (size_t i = 0; k[i]; i++) {
        json_t *v = json_object_get(result, k[i]);
        if (v)
            json_object_set_new(r, k[i], json_deep_copy(v));
    }
    if (j->kind == GW_KIND_PROMPT)
        clean_str(r, result, "description");
    if (j->kind != GW_KIND_COMPLETE)
        map_uris(j->server, r, 0);
    char rd[AUD_DIGEST_HEX + 1];
    aud_args_digest(gw->home, r, rd);
    char *dump = json_dumps(r, JSON_COMPACT);
    size_t len = dump ? strlen(dump) : 0;
    free(dump);
    bool big = len > (size_t)gw->max_result;
    gw_audit_result(gw, j, big ? "error" : "ok", big ? "result-too-large" : NULL, rd, ms);
    if (big) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the answer of %s (%zu bytes) exceeds the gateway's %lld-byte cap", j->server, len,
                 gw->max_result);
        gw_reply_error(gw, j, MCP_INTERNAL_ERROR, msg, NULL);
        json_decref(r);
        return;
    }
    if (j->kind == GW_KIND_SUBSCRIBE)
        gw_sub_accepted(gw, j);
    gw_reply(gw, j, r);
}

/* ---- logging -------------------------------------------------------------------------- */

static void level_sent(void *ctx, const struct mcp_reply *r)
{
    (void)ctx;
    (void)r;
}

void gw_set_level(struct gw *gw, struct job *j)
{
    const char *level = json_string_value(json_object_get(j->params, "level"));
    static const char *const levels[] = {"debug",    "info",  "notice",    "warning", "error",
                                         "critical", "alert", "emergency", NULL};
    bool ok = false;
    for (size_t i = 0; level && levels[i]; i++)
        ok |= strcmp(level, levels[i]) == 0;
    if (!ok) {
        list_error(gw, j, "Invalid params: level is not an RFC 5424 level name");
        return;
    }
    gw_nt_set_level(gw, level);
    struct gw_surface *sf = gw_surface_for(gw, j->modern);
    for (size_t i = 0; sf->gate == GW_GATE_OPEN && i < sf->ups.n; i++) {
        struct gw_up *up = sf->ups.v[i];
        if (up_declares(up, "logging") != 1)
            continue;
        json_t *p = json_object();
        json_object_set_new(p, "level", json_string(level));
        mcp_client_request(up->client, "logging/setLevel", p,
                           up->http ? GW_HTTP_TIMEOUT_MS : gw->call_ms, level_sent, NULL);
    }
    gw_reply(gw, j, json_object());
    gw_job_free(j);
}
