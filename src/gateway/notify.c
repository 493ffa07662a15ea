/*
 * What upstreams notify, on its way to the client (docs/gateway.md,
 * "Notifications from upstreams"): progress, resource updates, list
 * changes and log messages.
 *
 * Why: an upstream is not trusted to speak to the client directly. A
 * notification passes only when it concerns something this client asked
 * for and the policy still lets it see, with names and URIs in the
 * gateway's namespace, upstream text cleaned and secrets masked, and at a
 * rate a hostile upstream cannot turn into a flood.
 *
 * Guarantees:
 *  - Every notification is dropped unless its upstream belongs to a
 *    surface this connection serves now (not one swapped out, re-gated, or
 *    whose trust anchor no longer holds).
 *  - notifications/progress reaches the client only under the client's own
 *    token, and only while the request that carried it is in flight at that
 *    very upstream; any other token is dropped.
 *  - notifications/resources/updated is forwarded only for a URI this
 *    client subscribed to at that server, that the current policy allows,
 *    mapped to agentstack://; unsubscribe forgets it at once, and a
 *    connection holds at most GW_MAX_SUBS subscriptions.
 *  - A list_changed for tools, resources or prompts makes the gateway list
 *    that upstream again (one listing in flight at a time, at most one more
 *    queued) and forwards one list_changed only when the policy-filtered
 *    view changed from what the client was shown.
 *  - notifications/message: RFC 5424 levels only, at or above the client's
 *    logging/setLevel; logger "<server>" or "<server>/<logger>"; every string
 *    (keys too) cleaned and masked with sec_mask; data cut at
 *    GW_LOG_DATA_MAX; at most GW_LOG_BURST messages at once per upstream,
 *    refilled at GW_LOG_RATE a second, the rest dropped with a note.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/sha256.h"
#include "base/xalloc.h"
#include "gateway/gw_int.h"
#include "secrets/secrets.h"
#include "trust/trust.h"

#define GW_MAX_SUBS 256
#define GW_LOG_BURST 50
#define GW_LOG_RATE 10 /* a second */
#define GW_LOG_DATA_MAX 16384
#define GW_LOG_DEPTH 16

enum { VIEW_TOOLS, VIEW_RESOURCES, VIEW_PROMPTS, VIEW_N };

struct gw_sub {
    char *server, *uri; /* the upstream's own URI */
};

struct gw_nt {
    VEC(struct gw_sub) subs;
    int min_level; /* index into levels[] */
};

struct view {
    struct gw_up *up;
    int kind;
    bool seen, more; /* a baseline exists; it had further pages */
    char digest[SHA256_HEX_LEN + 1];
    bool busy, again; /* a listing in flight; another owed */
};

struct gw_up_nt {
    bool said_dead;   /* the note on dropping a stale upstream's notifications */
    long long tokens; /* thousandths of a message */
    uint64_t last_ms;
    bool dropping;
    unsigned long dropped;
    struct view views[VIEW_N];
};

static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

static int level_index(const char *l)
{
    for (int i = 0; l && i < (int)(sizeof levels / sizeof *levels); i++)
        if (strcmp(l, levels[i]) == 0)
            return i;
    return -1;
}

static struct gw_nt *nt_of(struct gw *gw)
{
    if (!gw->nt)
        gw->nt = xcalloc(1, sizeof *gw->nt);
    return gw->nt;
}

static struct gw_up_nt *up_nt(struct gw_up *up)
{
    if (!up->nt) {
        up->nt = xcalloc(1, sizeof *up->nt);
        up->nt->tokens = GW_LOG_BURST * 1000LL;
        up->nt->last_ms = mcp_now_ms();
        for (int k = 0; k < VIEW_N; k++) {
            up->nt->views[k].up = up;
            up->nt->views[k].kind = k;
        }
    }
    return up->nt;
}

void gw_nt_up_free(struct gw_up *up)
{
    free(up->nt);
    up->nt = NULL;
}

void gw_nt_free(struct gw *gw)
{
    if (!gw->nt)
        return;
    for (size_t i = 0; i < gw->nt->subs.n; i++) {
        free(gw->nt->subs.v[i].server);
        free(gw->nt->subs.v[i].uri);
    }
    vec_free(&gw->nt->subs);
    free(gw->nt);
    gw->nt = NULL;
}

static void send_note(struct gw *gw, const char *method, json_t *params /* stolen */)
{
    json_t *n = mcp_notification_new(method, params);
    mcp_writer_send_json(&gw->w, n);
    json_decref(n);
}

/* NULL when up belongs to a surface this connection serves now, else why
 * not. Trust is re-checked at every request (project.c); in between, a
 * change to the manifest, its lock or the machine manifest that inotify has
 * seen holds notifications back until the next request has re-checked. */
static const char *up_dead(struct gw *gw, const struct gw_up *up)
{
    const struct gw_surface *sf = up->sf;
    if (!sf || sf->gate != GW_GATE_OPEN || gw->shutting_down || (sf != gw->cur && sf != gw->modern))
        return "it is no longer served on this connection";
    if (!sf->has_anchor)
        return NULL;
    gw_watch_drain(gw);
    if ((gw->ino_fd >= 0 && gw->ino_dirty) || gw->machine_dirty)
        return "the project changed; trust is re-checked at the next request";
    if (gw->last_state != TRUST_TRUSTED || strcmp(gw->last_digest, sf->anchor) != 0)
        return "the project is no longer trusted";
    return NULL;
}

static bool up_live(struct gw *gw, const struct gw_up *up)
{
    return up_dead(gw, up) == NULL;
}

json_t *gw_nt_caps(struct gw *gw, const char *cap)
{
    json_t *o = json_object();
    if (strcmp(cap, "resources") == 0 && gw_caps_sub_offered(gw, cap, "subscribe"))
        json_object_set_new(o, "subscribe", json_true());
    if (gw_caps_sub_offered(gw, cap, "listChanged"))
        json_object_set_new(o, "listChanged", json_true());
    return o;
}

/* ---- progress ---------------------------------------------------------------- */

json_t *gw_progress_meta(struct gw *gw, struct job *j)
{
    json_t *tok = json_object_get(json_object_get(j->params, "_meta"), "progressToken");
    if (!json_is_string(tok) && !json_is_integer(tok))
        return NULL;
    json_decref(j->client_ptoken);
    j->client_ptoken = json_incref(tok);
    snprintf(j->ptoken, sizeof j->ptoken, "agentstack-progress-%ld", ++gw->next_client_id);
    json_t *meta = json_object();
    json_object_set_new(meta, "progressToken", json_string(j->ptoken));
    return meta;
}

static void clean_member(json_t *dst, const json_t *src, const char *key)
{
    const char *v = json_string_value(json_object_get(src, key));
    if (!v)
        return;
    strbuf c = SB_INIT;
    gw_one_line(v, GW_DESC_MAX, &c);
    json_object_set_new(dst, key, json_string(c.buf));
    sb_release(&c);
}

static void on_progress(struct gw *gw, struct gw_up *up, const json_t *params)
{
    const char *tok = json_string_value(json_object_get(params, "progressToken"));
    json_t *progress = json_object_get(params, "progress");
    if (!tok || !json_is_number(progress))
        return;
    for (struct job *j = gw->jobs; j; j = j->next) {
        if (j->up != up || !j->client_ptoken || strcmp(j->ptoken, tok) != 0 || j->replied ||
            j->cancelled || j->via_http || j->on_result)
            continue;
        json_t *p = json_object();
        json_object_set(p, "progressToken", j->client_ptoken);
        json_object_set(p, "progress", progress);
        json_t *total = json_object_get(params, "total");
        if (json_is_number(total))
            json_object_set(p, "total", total);
        clean_member(p, params, "message");
        send_note(gw, "notifications/progress", p);
        return;
    }
}

/* ---- subscriptions ------------------------------------------------------------ */

static ssize_t sub_find(const struct gw_nt *nt, const char *server, const char *uri)
{
    for (size_t i = 0; i < nt->subs.n; i++)
        if (strcmp(nt->subs.v[i].server, server) == 0 && strcmp(nt->subs.v[i].uri, uri) == 0)
            return (ssize_t)i;
    return -1;
}

int gw_sub_check(struct gw *gw, struct job *j)
{
    struct gw_nt *nt = nt_of(gw);
    const char *uri = json_string_value(json_object_get(j->args, "uri"));
    ssize_t at = sub_find(nt, j->server, uri);
    if (j->kind == GW_KIND_UNSUBSCRIBE) {
        if (at >= 0) {
            free(nt->subs.v[at].server);
            free(nt->subs.v[at].uri);
            nt->subs.v[at] = nt->subs.v[--nt->subs.n];
        }
        return 0;
    }
    if (at < 0 && nt->subs.n >= GW_MAX_SUBS) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "Invalid params: this connection holds %d subscriptions already; unsubscribe "
                 "from one first",
                 GW_MAX_SUBS);
        gw_reply_error(gw, j, MCP_INVALID_PARAMS, msg, NULL);
        gw_job_free(j);
        return -1;
    }
    return 0;
}

void gw_sub_accepted(struct gw *gw, const struct job *j)
{
    struct gw_nt *nt = nt_of(gw);
    const char *uri = json_string_value(json_object_get(j->args, "uri"));
    if (j->cancelled || !uri || sub_find(nt, j->server, uri) >= 0 || nt->subs.n >= GW_MAX_SUBS)
        return;
    struct gw_sub s = {xstrdup(j->server), xstrdup(uri)};
    vec_push(&nt->subs, s);
}

static void on_updated(struct gw *gw, struct gw_up *up, const json_t *params)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    if (!uri || !gw->nt || sub_find(gw->nt, up->name, uri) < 0)
        return; /* never subscribed here (or forgotten) */
    strbuf subj = SB_INIT;
    sb_addf(&subj, "resource:%s", uri);
    bool allowed = pol_tool(up->sf->rs, up->name, subj.buf, NULL);
    sb_release(&subj);
    if (!allowed)
        return; /* the policy changed since the subscription */
    strbuf m = SB_INIT;
    gw_uri_map(up->name, uri, &m);
    json_t *p = json_object();
    json_object_set_new(p, "uri", json_string(m.buf));
    sb_release(&m);
    send_note(gw, "notifications/resources/updated", p);
}

/* ---- list_changed ----------------------------------------------------------------- */

static void digest_of(const json_t *view, bool more, char out[SHA256_HEX_LEN + 1])
{
    char *dump = json_dumps(view, JSON_COMPACT | JSON_SORT_KEYS);
    strbuf b = SB_INIT;
    sb_adds(&b, more ? "more:" : "last:");
    sb_adds(&b, dump ? dump : "");
    free(dump);
    sha256_hex(b.buf, b.len, out);
    sb_release(&b);
}

/* The tools of up the client's tools/list shows, as one JSON value. */
static void tools_digest(const struct gw_up *up, char out[SHA256_HEX_LEN + 1])
{
    json_t *a = json_array();
    for (size_t i = 0; i < up->tools.n; i++) {
        const struct gw_tool *t = &up->tools.v[i];
        if (!pol_tool(up->sf->rs, up->name, t->name, NULL))
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(t->full));
        json_object_set_new(o, "description", json_string(t->desc));
        json_object_set(o, "inputSchema", t->schema);
        if (t->extra)
            json_object_set(o, "extra", t->extra);
        json_array_append_new(a, o);
    }
    digest_of(a, false, out);
    json_decref(a);
}

static const char *const view_note[VIEW_N] = {"notifications/tools/list_changed",
                                              "notifications/resources/list_changed",
                                              "notifications/prompts/list_changed"};

static void relist(struct view *v);

static void relisted(void *ctx, const struct mcp_reply *r)
{
    struct view *v = ctx;
    struct gw_up *up = v->up;
    struct gw *gw = up->gw;
    v->busy = false;
    if (!up->sf)
        return; /* its surface is gone; the client is shutting down */
    bool changed = false;
    if (r->status == MCP_OK && v->kind == VIEW_TOOLS) {
        char before[SHA256_HEX_LEN + 1], after[SHA256_HEX_LEN + 1];
        tools_digest(up, before);
        gw_up_store_tools(up, r->result);
        tools_digest(up, after);
        changed = strcmp(before, after) != 0;
    } else if (r->status == MCP_OK) {
        const char *key = v->kind == VIEW_RESOURCES ? "resources" : "prompts";
        json_t *items = json_object_get(r->result, key);
        json_t *view = gw_res_view(up->sf->rs, up, key, json_is_array(items) ? items : NULL);
        const char *nc = json_string_value(json_object_get(r->result, "nextCursor"));
        bool more = nc && *nc;
        char d[SHA256_HEX_LEN + 1];
        digest_of(view, more, d);
        json_decref(view);
        changed = !v->seen || strcmp(d, v->digest) != 0;
        v->seen = true;
        v->more = more;
        memcpy(v->digest, d, sizeof d);
    } else if (r->status != MCP_E_CLOSED && r->status != MCP_E_CANCELLED) {
        gw_note("upstream '%s': listing again after its list_changed failed (%s)", up->name,
                mcp_status_name(r->status));
    }
    if (changed && up_live(gw, up))
        send_note(gw, view_note[v->kind], NULL);
    if (v->again) {
        v->again = false;
        relist(v);
    }
}

static void relist(struct view *v)
{
    struct gw_up *up = v->up;
    struct gw *gw = up->gw;
    if (v->busy) {
        v->again = true; /* coalesced: one more listing once this one is done */
        return;
    }
    if (!up->client || mcp_client_state(up->client) != MCP_ST_READY)
        return;
    v->busy = true;
    int budget = up->http ? GW_HTTP_TIMEOUT_MS : gw->call_ms;
    if (v->kind == VIEW_TOOLS)
        mcp_client_list_tools(up->client, budget, GW_MAX_TOOLS, GW_MAX_PAGES, relisted, v);
    else
        mcp_client_request(up->client,
                           v->kind == VIEW_RESOURCES ? "resources/list" : "prompts/list", NULL,
                           budget, relisted, v);
}

void gw_nt_view_seen(struct gw_up *up, const char *key, const json_t *view, bool more)
{
    int k = strcmp(key, "resources") == 0 ? VIEW_RESOURCES
            : strcmp(key, "prompts") == 0 ? VIEW_PROMPTS
                                          : -1;
    if (k < 0)
        return;
    struct view *v = &up_nt(up)->views[k];
    digest_of(view, more, v->digest);
    v->seen = true;
    v->more = more;
}

/* ---- log messages ------------------------------------------------------------------- */

static void mask_into(const struct gw_up *up, const char *s, size_t n, strbuf *out)
{
    struct sec_masked *v = xcalloc(up->secret_vals.n + 1, sizeof *v);
    for (size_t i = 0; i < up->secret_vals.n; i++)
        v[i] = (struct sec_masked){up->secret_names.v[i], up->secret_vals.v[i]};
    sec_mask(v, up->secret_vals.n, s, n, out);
    free(v);
}

/* Masked, cleaned (newlines kept), masked again: cleaning may join the
 * halves of a value that an escape sequence split. */
static json_t *safe_string(const struct gw_up *up, const char *s, size_t n)
{
    strbuf a = SB_INIT, b = SB_INIT, c = SB_INIT;
    mask_into(up, s, n, &a);
    gw_clean(a.buf ? a.buf : "", a.len, 1, &b);
    mask_into(up, b.buf ? b.buf : "", b.len, &c);
    json_t *r = json_stringn(c.buf ? c.buf : "", c.len);
    sb_release(&a);
    sb_release(&b);
    sb_release(&c);
    return r ? r : json_string("");
}

static json_t *safe_value(const struct gw_up *up, const json_t *v, int depth)
{
    if (depth > GW_LOG_DEPTH)
        return json_string("[agentstack: nested too deep]");
    if (json_is_string(v))
        return safe_string(up, json_string_value(v), json_string_length(v));
    if (json_is_array(v)) {
        json_t *a = json_array(), *e;
        size_t i;
        json_array_foreach(v, i, e) json_array_append_new(a, safe_value(up, e, depth + 1));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object(), *e;
        const char *k;
        json_object_foreach((json_t *)v, k, e)
        {
            json_t *key = safe_string(up, k, strlen(k));
            json_object_set_new(o, json_string_value(key), safe_value(up, e, depth + 1));
            json_decref(key);
        }
        return o;
    }
    return v ? json_deep_copy(v) : json_null();
}

/* The token bucket: true when this message may pass. */
static bool log_admit(struct gw_up *up)
{
    struct gw_up_nt *n = up_nt(up);
    uint64_t now = mcp_now_ms();
    n->tokens += (long long)(now - n->last_ms) * GW_LOG_RATE;
    if (n->tokens > GW_LOG_BURST * 1000LL)
        n->tokens = GW_LOG_BURST * 1000LL;
    n->last_ms = now;
    if (n->tokens < 1000) {
        if (!n->dropping)
            gw_note("upstream '%s' sends log messages faster than %d a second; dropping the "
                    "excess",
                    up->name, GW_LOG_RATE);
        n->dropping = true;
        n->dropped++;
        return false;
    }
    n->tokens -= 1000;
    if (n->dropping) {
        gw_note("upstream '%s': %lu log message(s) dropped", up->name, n->dropped);
        n->dropping = false;
        n->dropped = 0;
    }
    return true;
}

static void on_message(struct gw *gw, struct gw_up *up, const json_t *params)
{
    int lvl = level_index(json_string_value(json_object_get(params, "level")));
    if (lvl < 0 || lvl < (gw->nt ? gw->nt->min_level : 0) || !log_admit(up))
        return;
    json_t *p = json_object();
    json_object_set_new(p, "level", json_string(levels[lvl]));
    strbuf lg = SB_INIT, cut = SB_INIT;
    sb_adds(&lg, up->name);
    const char *ul = json_string_value(json_object_get(params, "logger"));
    if (ul && *ul) {
        gw_one_line(ul, 128, &cut);
        sb_addc(&lg, '/');
        mask_into(up, cut.buf ? cut.buf : "", cut.len, &lg);
    }
    json_object_set_new(p, "logger", json_string(lg.buf));
    sb_release(&lg);
    sb_release(&cut);
    json_t *data = safe_value(up, json_object_get(params, "data"), 0);
    char *dump = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len = dump ? strlen(dump) : 0;
    if (len > GW_LOG_DATA_MAX) {
        size_t k = GW_LOG_DATA_MAX;
        while (k > 0 && ((unsigned char)dump[k] & 0xC0) == 0x80)
            k--; /* a UTF-8 boundary */
        strbuf s = SB_INIT;
        sb_add(&s, dump, k);
        sb_addf(&s, " [agentstack: log data cut at %zu of %zu bytes]", k, len);
        json_decref(data);
        data = json_string(s.buf);
        sb_release(&s);
    }
    free(dump);
    json_object_set_new(p, "data", data ? data : json_null());
    send_note(gw, "notifications/message", p);
}

void gw_nt_set_level(struct gw *gw, const char *level)
{
    int l = level_index(level);
    if (l >= 0)
        nt_of(gw)->min_level = l;
}

/* ---- the one entry ------------------------------------------------------------------ */

void gw_up_notified(void *ctx, const char *method, json_t *params)
{
    struct gw_up *up = ctx;
    struct gw *gw = up->gw;
    if (!gw)
        return;
    if (strcmp(method, "notifications/progress") == 0) {
        on_progress(gw, up, params);
        return;
    }
    const char *dead = up_dead(gw, up);
    if (dead) {
        if (!up_nt(up)->said_dead)
            gw_note("upstream '%s': its notifications are dropped: %s", up->name, dead);
        up->nt->said_dead = true;
        return;
    }
    if (strcmp(method, "notifications/resources/updated") == 0)
        on_updated(gw, up, params);
    else if (strcmp(method, "notifications/message") == 0)
        on_message(gw, up, params);
    else if (strcmp(method, "notifications/tools/list_changed") == 0 && up->disc == 2)
        relist(&up_nt(up)->views[VIEW_TOOLS]);
    else if (strcmp(method, "notifications/resources/list_changed") == 0)
        relist(&up_nt(up)->views[VIEW_RESOURCES]);
    else if (strcmp(method, "notifications/prompts/list_changed") == 0)
        relist(&up_nt(up)->views[VIEW_PROMPTS]);
}
