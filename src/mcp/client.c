/*
 * The transport-independent MCP client — see mcp.h. Owns request ids,
 * timeouts, the handshake (server/discover and/or initialize), pagination,
 * answers to server->client requests, and the guarantee that every request
 * completes exactly once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "base/xalloc.h"
#include "mcp/client_int.h"

#define DEFAULT_TIMEOUT_MS 60000

static const char *const status_names[] = {
    "ok",       "rpc-error", "timeout",   "transport", "spawn-failed", "http-error",
    "protocol", "too-large", "cancelled", "closed",    "refused",
};

const char *mcp_status_name(enum mcp_status s)
{
    if ((size_t)s < sizeof status_names / sizeof status_names[0])
        return status_names[s];
    return "unknown";
}

/* ---- lifetime ---- */

struct mcp_client *mcp__client_new(struct mcp_loop *loop, const struct mcp_client_opts *o,
                                   const struct mcp_transport_ops *ops)
{
    struct mcp_client_opts d = {0};
    if (!o)
        o = &d;
    struct mcp_client *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->ops = ops;
    c->state = MCP_ST_IDLE;
    c->client_name = xstrdup(o->client_name ? o->client_name : "agentstack-gateway");
    c->client_version = xstrdup(o->client_version ? o->client_version : "0.1.0");
    c->want_version = xstrdup(o->protocol_version ? o->protocol_version : MCP_VERSION_DEFAULT);
    c->handshake = o->handshake;
    c->start_timeout_ms = o->start_timeout_ms > 0 ? o->start_timeout_ms : 10000;
    c->silence_ms = o->discover_silence_ms > 0 ? o->discover_silence_ms : 1500;
    c->kill_grace_ms = o->kill_grace_ms > 0 ? o->kill_grace_ms : 3000;
    c->max_frame = o->max_frame ? o->max_frame : MCP_UPSTREAM_FRAME_MAX;
    c->on_notification = o->on_notification;
    c->notify_ctx = o->notify_ctx;
    c->next_id = 1;
    c->exit_status = -1;
    sb_init(&c->stderr_head, 0);
    return c;
}

static void destroy(struct mcp_client *c);

void mcp__enter(struct mcp_client *c)
{
    c->busy++;
}

int mcp__leave(struct mcp_client *c)
{
    if (--c->busy == 0 && c->doomed) {
        destroy(c);
        return 1;
    }
    return 0;
}

enum mcp_client_state mcp_client_state(const struct mcp_client *c)
{
    return c->state;
}

const char *mcp_client_protocol_version(const struct mcp_client *c)
{
    return c->version;
}

int mcp_client_is_modern(const struct mcp_client *c)
{
    return c->modern;
}

const json_t *mcp_client_server_result(const struct mcp_client *c)
{
    return c->server_result;
}

const char *mcp_client_stderr_head(const struct mcp_client *c, size_t *len)
{
    if (len)
        *len = c->stderr_head.len;
    return c->stderr_head.buf;
}

long mcp_client_pid(const struct mcp_client *c)
{
    return c->pid;
}

int mcp_client_exit_status(const struct mcp_client *c)
{
    return c->exit_status;
}

const char *mcp_client_session_id(const struct mcp_client *c)
{
    return c->session_id;
}

/* ---- pending requests ---- */

static struct pending *find_live(const struct mcp_client *c, uint64_t id, struct pending ***linkp)
{
    for (struct pending **pp = (struct pending **)&c->live; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            if (linkp)
                *linkp = pp;
            return *pp;
        }
    }
    return NULL;
}

int mcp__pending(const struct mcp_client *c, uint64_t id)
{
    return find_live(c, id, NULL) != NULL;
}

static void pending_free(struct pending *p)
{
    if (p->raw)
        p->c->raw_pending--;
    if (p->msg)
        json_decref(p->msg);
    free(p->fail_msg);
    free(p);
}

/* Runs p's callback and frees it. p must already be off every list. */
static void finish(struct mcp_client *c, struct pending *p, const struct mcp_reply *r)
{
    if (p->timer)
        mcp_loop_timer_cancel(c->loop, p->timer);
    p->timer = 0;
    c->busy++;
    if (p->cb)
        p->cb(p->ctx, r);
    c->busy--;
    pending_free(p);
}

static void finish_status(struct mcp_client *c, struct pending *p, enum mcp_status st,
                          const char *msg, long http)
{
    struct mcp_reply r = {st, NULL, NULL, msg ? msg : mcp_status_name(st), http, NULL, 0};
    finish(c, p, &r);
}

static void limbo_unlink(struct mcp_client *c, struct pending *p)
{
    for (struct pending **pp = &c->limbo; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            return;
        }
}

static void send_cancelled(struct mcp_client *c, uint64_t id, const char *reason)
{
    if (c->state != MCP_ST_READY && c->state != MCP_ST_STARTING)
        return;
    json_t *params = json_object();
    json_object_set_new(params, "requestId", json_integer((json_int_t)id));
    if (reason)
        json_object_set_new(params, "reason", json_string(reason));
    json_t *n = mcp_notification_new("notifications/cancelled", params);
    c->ops->send(c, n, 0);
    json_decref(n);
}

static void req_timer_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct pending *p = ctx;
    struct mcp_client *c = p->c;
    p->timer = 0;
    mcp__enter(c);
    if (p->fail) {
        limbo_unlink(c, p);
        finish_status(c, p, p->fail, p->fail_msg, 0);
    } else {
        struct pending **link;
        if (find_live(c, p->id, &link) == p) {
            *link = p->next;
            if (p->sent) {
                /* The MCP spec asks the requester to cancel what it gave up on. */
                send_cancelled(c, p->id, "timeout");
                if (c->ops->abort)
                    c->ops->abort(c, p->id);
            }
            finish_status(c, p, MCP_E_TIMEOUT, "no answer within the time budget", 0);
        }
    }
    mcp__leave(c);
}

/* Takes p off the live list and completes it from the loop with st. */
static void defer_fail(struct mcp_client *c, struct pending *p, enum mcp_status st, const char *msg)
{
    struct pending **link;
    if (find_live(c, p->id, &link) == p)
        *link = p->next;
    if (p->timer)
        mcp_loop_timer_cancel(c->loop, p->timer);
    p->fail = st;
    free(p->fail_msg);
    p->fail_msg = xstrdup(msg ? msg : mcp_status_name(st));
    p->next = c->limbo;
    c->limbo = p;
    p->timer = mcp_loop_timer(c->loop, 0, req_timer_cb, p);
}

void mcp__fail_later(struct mcp_client *c, uint64_t id, enum mcp_status st, const char *msg)
{
    struct pending *p = find_live(c, id, NULL);
    if (p)
        defer_fail(c, p, st, msg);
}

/* Adds the modern era's per-request _meta. */
static void add_meta(struct mcp_client *c, json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    json_object_set_new(meta, MCP_META_VERSION, json_string(c->version));
    if (!json_object_get(meta, MCP_META_CAPS))
        json_object_set_new(meta, MCP_META_CAPS, json_object());
    json_t *info = json_object();
    json_object_set_new(info, "name", json_string(c->client_name));
    json_object_set_new(info, "version", json_string(c->client_version));
    json_object_set_new(meta, MCP_META_INFO, info);
}

static void send_pending(struct mcp_client *c, struct pending *p)
{
    if (c->modern && !p->internal) {
        json_t *params = json_object_get(p->msg, "params");
        if (json_is_object(params))
            add_meta(c, params);
    }
    p->sent = 1;
    json_t *msg = p->msg;
    p->msg = NULL;
    c->ops->send(c, msg, p->id);
    json_decref(msg);
}

static struct pending *new_request(struct mcp_client *c, const char *method, json_t *params,
                                   int timeout_ms, mcp_reply_fn cb, void *ctx, int internal)
{
    struct pending *p = xcalloc(1, sizeof *p);
    p->c = c;
    p->id = c->next_id++;
    p->cb = cb;
    p->ctx = ctx;
    p->internal = internal;
    p->msg =
        mcp_request_new(json_integer((json_int_t)p->id), method, params ? params : json_object());
    p->timer = mcp_loop_timer(c->loop, (uint64_t)(timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS),
                              req_timer_cb, p);
    /* Append so queued requests go out in the order they were made. */
    struct pending **pp = &c->live;
    while (*pp)
        pp = &(*pp)->next;
    *pp = p;
    return p;
}

uint64_t mcp_client_request(struct mcp_client *c, const char *method, json_t *params,
                            int timeout_ms, mcp_reply_fn cb, void *ctx)
{
    struct pending *p = new_request(c, method, params, timeout_ms, cb, ctx, 0);
    switch (c->state) {
    case MCP_ST_READY:
        send_pending(c, p);
        break;
    case MCP_ST_STARTING:
        break; /* sent when the handshake completes */
    case MCP_ST_IDLE:
        defer_fail(c, p, MCP_E_CLOSED, "upstream not started");
        break;
    case MCP_ST_DEAD:
        defer_fail(c, p, MCP_E_CLOSED, "upstream connection is down");
        break;
    default:
        defer_fail(c, p, MCP_E_CLOSED, "upstream is shut down");
        break;
    }
    return p->id;
}

uint64_t mcp_client_call_tool(struct mcp_client *c, const char *name, const json_t *arguments,
                              int timeout_ms, mcp_reply_fn cb, void *ctx)
{
    json_t *params = json_object();
    json_object_set_new(params, "name", json_string(name));
    json_object_set_new(params, "arguments",
                        json_is_object(arguments) ? json_deep_copy(arguments) : json_object());
    return mcp_client_request(c, "tools/call", params, timeout_ms, cb, ctx);
}

uint64_t mcp_client_call_tool_raw(struct mcp_client *c, const char *name, const json_t *arguments,
                                  int timeout_ms, mcp_reply_fn cb, void *ctx)
{
    uint64_t h;
    if (c->state == MCP_ST_READY && !c->modern && c->ops->send_raw) {
        /* The common case, written straight: no message tree to build,
         * copy, dump and free. Byte for byte what send() would write. */
        struct pending *p = xcalloc(1, sizeof *p);
        p->c = c;
        p->id = c->next_id++;
        p->cb = cb;
        p->ctx = ctx;
        p->timer = mcp_loop_timer(
            c->loop, (uint64_t)(timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS), req_timer_cb, p);
        struct pending **pp = &c->live;
        while (*pp)
            pp = &(*pp)->next;
        *pp = p;
        strbuf line;
        sb_init(&line, 256);
        sb_adds(&line, "{\"jsonrpc\":\"2.0\",\"id\":");
        mcp_json_int((long long)p->id, &line);
        sb_adds(&line, ",\"method\":\"tools/call\",\"params\":{\"name\":");
        mcp_json_str(name, strlen(name), &line);
        sb_adds(&line, ",\"arguments\":");
        if (json_is_object(arguments))
            mcp_dump(arguments, &line);
        else
            sb_adds(&line, "{}");
        sb_adds(&line, "}}");
        p->sent = 1;
        c->ops->send_raw(c, line.buf, line.len, p->id);
        sb_release(&line);
        h = p->id;
    } else {
        h = mcp_client_call_tool(c, name, arguments, timeout_ms, cb, ctx);
    }
    struct pending *p = find_live(c, h, NULL);
    if (p && !p->raw) {
        p->raw = 1;
        c->raw_pending++;
    }
    return h;
}

int mcp_client_notify(struct mcp_client *c, const char *method, json_t *params, struct as_err *err)
{
    if (c->state != MCP_ST_READY) {
        if (params)
            json_decref(params);
        return as_err_set(err, "upstream is not ready");
    }
    if (!params)
        params = json_object();
    if (c->modern && json_is_object(params))
        add_meta(c, params);
    json_t *n = mcp_notification_new(method, params);
    c->ops->send(c, n, 0);
    json_decref(n);
    return 0;
}

void mcp_client_cancel(struct mcp_client *c, uint64_t handle, const char *reason)
{
    struct pending *p = find_live(c, handle, NULL);
    if (!p)
        return;
    if (p->sent) {
        send_cancelled(c, p->id, reason);
        if (c->ops->abort)
            c->ops->abort(c, p->id);
    }
    defer_fail(c, p, MCP_E_CANCELLED, "cancelled");
}

/* Fails every live request from the loop. */
static void fail_all(struct mcp_client *c, enum mcp_status st, const char *msg, int internal_too)
{
    struct pending **pp = &c->live;
    while (*pp) {
        struct pending *p = *pp;
        if (p->internal && !internal_too) {
            pp = &p->next;
            continue;
        }
        defer_fail(c, p, st, msg); /* unlinks p */
    }
}

/* ---- incoming traffic ---- */

static void answer_server_request(struct mcp_client *c, struct mcp_msg *m)
{
    json_t *reply;
    if (strcmp(m->method, "ping") == 0) {
        reply = mcp_result_new(m->id, json_object());
    } else if (strcmp(m->method, "roots/list") == 0) {
        /* A gateway has no roots to offer upstream servers. */
        json_t *r = json_object();
        json_object_set_new(r, "roots", json_array());
        reply = mcp_result_new(m->id, r);
    } else {
        reply = mcp_error_new(m->id, MCP_METHOD_NOT_FOUND, "Method not found", NULL);
    }
    c->ops->send(c, reply, 0);
    json_decref(reply);
}

static int id_value(const json_t *id, uint64_t *out)
{
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        return -1;
    *out = (uint64_t)json_integer_value(id);
    return 0;
}

/* A line that is JSON but that the parser cannot hold (\u0000, an unpaired
 * surrogate, a number out of range, nesting too deep): the request it
 * answers fails now, naming why, instead of at its timeout; a request from
 * the server gets mcp_parse's parse error. */
static void on_unreadable(struct mcp_client *c, const char *data, size_t len, json_t *reply)
{
    struct mcp_unreadable u;
    if (mcp_unreadable_read(data, len, &u) < 0)
        return;
    uint64_t id;
    struct pending **link;
    struct pending *p;
    if (u.has_method) {
        if (reply && u.has_id && (c->state == MCP_ST_READY || c->state == MCP_ST_STARTING))
            c->ops->send(c, reply, 0);
    } else if (u.id && id_value(u.id, &id) == 0 && (p = find_live(c, id, &link)) && p->sent) {
        *link = p->next;
        char msg[160];
        snprintf(msg, sizeof msg, "unreadable message: %s", u.why);
        finish_status(c, p, MCP_E_PROTOCOL, msg, 0);
    }
    mcp_unreadable_clear(&u);
}

void mcp__on_line(struct mcp_client *c, const char *data, size_t len)
{
    struct mcp_msg m;
    if (c->raw_pending) {
        /* A success answer to a raw request goes back as the bytes it came
         * in; anything the raw reader cannot vouch for is parsed below. */
        uint64_t id;
        struct mcp_span res;
        struct pending **link;
        struct pending *p;
        if (mcp_raw_response(data, len, &id, &res) && (p = find_live(c, id, &link)) && p->sent &&
            p->raw) {
            *link = p->next;
            struct mcp_reply r = {MCP_OK, NULL, NULL, "ok", 0, res.p, res.n};
            finish(c, p, &r);
            return;
        }
    }
    /* Non-JSON lines and invalid messages on an upstream's stdout are
     * skipped: servers print banners, and nothing we could answer helps.
     * Well-formed JSON we cannot hold is a message, though. */
    json_t *reply = NULL;
    enum mcp_parse_status st = mcp_parse(data, len, &m, &reply);
    if (st == MCP_UNREADABLE)
        on_unreadable(c, data, len, reply);
    json_decref(reply);
    if (st != MCP_PARSED)
        return;
    if (m.kind == MCP_RESPONSE) {
        uint64_t id;
        struct pending **link;
        struct pending *p = id_value(m.id, &id) == 0 ? find_live(c, id, &link) : NULL;
        if (p && p->sent) {
            *link = p->next;
            struct mcp_reply r = {MCP_OK, NULL, NULL, "ok", 0, NULL, 0};
            if (m.error) {
                r.status = MCP_E_RPC;
                r.error = m.error;
                r.message = "the server answered with an error";
            } else {
                r.result = m.result;
            }
            finish(c, p, &r);
        }
    } else if (m.kind == MCP_REQUEST) {
        if (c->state == MCP_ST_READY || c->state == MCP_ST_STARTING)
            answer_server_request(c, &m);
    } else if (c->on_notification) {
        c->busy++;
        c->on_notification(c->notify_ctx, m.method, m.params);
        c->busy--;
    }
    mcp_msg_clear(&m);
}

void mcp__on_oversize(struct mcp_client *c, const json_t *id, size_t len)
{
    uint64_t v;
    if (!id || id_value(id, &v) < 0)
        return;
    struct pending **link;
    struct pending *p = find_live(c, v, &link);
    if (!p || !p->sent)
        return;
    *link = p->next;
    char msg[160];
    snprintf(msg, sizeof msg, "the answer (%zu bytes) exceeds the %zu-byte frame limit", len,
             c->max_frame);
    finish_status(c, p, MCP_E_TOO_LARGE, msg, 0);
}

void mcp__request_failed(struct mcp_client *c, uint64_t id, enum mcp_status st, const char *msg,
                         long http_status)
{
    struct pending **link;
    struct pending *p = find_live(c, id, &link);
    if (!p)
        return;
    *link = p->next;
    finish_status(c, p, st, msg, http_status);
}

/* ---- handshake ---- */

static void start_done(struct mcp_client *c, enum mcp_status st, const char *msg)
{
    mcp_loop_timer_cancel(c->loop, c->start_timer);
    mcp_loop_timer_cancel(c->loop, c->silence_timer);
    c->start_timer = c->silence_timer = 0;
    c->hs_discover = c->hs_init = 0;
    if (st == MCP_OK) {
        c->state = MCP_ST_READY;
        for (struct pending *p = c->live; p; p = p->next)
            if (!p->sent)
                send_pending(c, p);
    } else {
        c->state = MCP_ST_DEAD;
        fail_all(c, st, msg, 1);
        c->ops->drop(c, c->kill_grace_ms);
    }
    mcp_reply_fn cb = c->start_cb;
    c->start_cb = NULL;
    if (cb) {
        struct mcp_reply r = {st,   st == MCP_OK ? c->server_result : NULL,
                              NULL, msg ? msg : mcp_status_name(st),
                              0,    NULL,
                              0};
        c->busy++;
        cb(c->start_ctx, &r);
        c->busy--;
    }
}

static int remaining_ms(struct mcp_client *c)
{
    uint64_t now = mcp_now_ms();
    return c->start_deadline > now ? (int)(c->start_deadline - now) : 1;
}

static void init_reply(void *ctx, const struct mcp_reply *r);

/* Forgets a handshake request still in flight: no callback, and its late
 * answer is dropped like any answer to an unknown id. */
static void drop_handshake_request(struct mcp_client *c, uint64_t id)
{
    struct pending **link;
    struct pending *p = find_live(c, id, &link);
    if (p) {
        *link = p->next;
        p->cb = NULL;
        finish(c, p, NULL);
    }
}

static void send_initialize(struct mcp_client *c)
{
    /* No MCP-Protocol-Version header until the server has chosen one. */
    free(c->version);
    c->version = NULL;
    json_t *params = json_object();
    json_object_set_new(params, "protocolVersion", json_string(c->want_version));
    json_object_set_new(params, "capabilities", json_object());
    json_t *info = json_object();
    json_object_set_new(info, "name", json_string(c->client_name));
    json_object_set_new(info, "version", json_string(c->client_version));
    json_object_set_new(params, "clientInfo", info);
    struct pending *p = new_request(c, "initialize", params, remaining_ms(c), init_reply, c, 1);
    c->hs_init = p->id;
    send_pending(c, p);
}

static void init_reply(void *ctx, const struct mcp_reply *r)
{
    struct mcp_client *c = ctx;
    if (c->state != MCP_ST_STARTING || !c->hs_init)
        return;
    c->hs_init = 0;
    if (c->hs_discover) {
        /* initialize was answered first: a server that ignores discover */
        drop_handshake_request(c, c->hs_discover);
        c->hs_discover = 0;
    }
    if (r->status != MCP_OK) {
        char msg[160];
        if (r->status == MCP_E_RPC)
            snprintf(msg, sizeof msg, "initialize refused (JSON-RPC error %lld)",
                     (long long)json_integer_value(json_object_get(r->error, "code")));
        else
            snprintf(msg, sizeof msg, "initialize failed: %s", r->message);
        start_done(c, r->status == MCP_E_RPC ? MCP_E_PROTOCOL : r->status, msg);
        return;
    }
    const char *v = json_string_value(json_object_get(r->result, "protocolVersion"));
    if (!json_is_object(r->result) || !v) {
        start_done(c, MCP_E_PROTOCOL, "initialize answer has no protocolVersion");
        return;
    }
    /* Any version the server returns is accepted: the calls we make
     * are the same in every dated version. */
    free(c->version);
    c->version = xstrdup(v);
    c->modern = 0;
    if (c->server_result)
        json_decref(c->server_result);
    c->server_result = json_incref(r->result);
    json_t *n = mcp_notification_new("notifications/initialized", NULL);
    c->ops->send(c, n, 0);
    json_decref(n);
    start_done(c, MCP_OK, "ok");
}

static void discover_reply(void *ctx, const struct mcp_reply *r)
{
    struct mcp_client *c = ctx;
    if (c->state != MCP_ST_STARTING || !c->hs_discover)
        return;
    c->hs_discover = 0;
    mcp_loop_timer_cancel(c->loop, c->silence_timer);
    c->silence_timer = 0;
    if (r->status == MCP_OK) {
        json_t *vs = json_object_get(r->result, "supportedVersions");
        const char *best = NULL;
        size_t i;
        json_t *v;
        json_array_foreach(vs, i, v)
        {
            const char *s = json_string_value(v);
            if (s && mcp_version_known(s) && mcp_version_is_modern(s) &&
                (!best || strcmp(s, best) > 0))
                best = s;
        }
        if (best) {
            if (c->hs_init) {
                /* sent after the silence, and not answered first: this
                 * server only started slowly */
                drop_handshake_request(c, c->hs_init);
                c->hs_init = 0;
            }
            free(c->version);
            c->version = xstrdup(best);
            c->modern = 1;
            if (c->server_result)
                json_decref(c->server_result);
            c->server_result = json_incref(r->result);
            start_done(c, MCP_OK, "ok");
            return;
        }
    } else if (r->status != MCP_E_RPC && r->status != MCP_E_HTTP && r->status != MCP_E_PROTOCOL) {
        start_done(c, r->status, r->message);
        return;
    }
    /* "Method not found" and every other refusal mean a dated server; after
     * the silence its initialize is already on the way. */
    if (!c->hs_init)
        send_initialize(c);
}

static void silence_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct mcp_client *c = ctx;
    c->silence_timer = 0;
    mcp__enter(c);
    if (c->state == MCP_ST_STARTING && c->hs_discover && !c->hs_init) {
        /* A server that ignores unknown methods would never answer discover:
         * send initialize on the same pipe too, and keep discover pending.
         * Whichever is answered first decides. A server reads its input in
         * order, so one that understands discover answers it before it reads
         * initialize, however long it took to start; one that ignores it
         * answers only initialize. (Measured from the first byte sent, the
         * silence alone mistook a slow start for a dated server.) */
        send_initialize(c);
    }
    mcp__leave(c);
}

static void start_timeout_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct mcp_client *c = ctx;
    c->start_timer = 0;
    mcp__enter(c);
    if (c->state == MCP_ST_STARTING) {
        char msg[96];
        snprintf(msg, sizeof msg, "no handshake answer within %d ms", c->start_timeout_ms);
        start_done(c, MCP_E_TIMEOUT, msg);
    }
    mcp__leave(c);
}

static void start_fail_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct mcp_client *c = ctx;
    c->start_fail_timer = 0;
    mcp__enter(c);
    if (c->state == MCP_ST_STARTING)
        start_done(c, c->start_fail, c->start_fail_msg);
    free(c->start_fail_msg);
    c->start_fail_msg = NULL;
    mcp__leave(c);
}

int mcp_client_start(struct mcp_client *c, mcp_reply_fn cb, void *ctx, struct as_err *err)
{
    if (c->state != MCP_ST_IDLE && c->state != MCP_ST_DEAD)
        return as_err_set(err, "upstream client is already %s",
                          c->state == MCP_ST_READY ? "running" : "starting or closed");
    c->state = MCP_ST_STARTING;
    c->start_cb = cb;
    c->start_ctx = ctx;
    c->modern = 0;
    free(c->version);
    c->version = NULL;
    if (c->server_result)
        json_decref(c->server_result);
    c->server_result = NULL;
    c->start_deadline = mcp_now_ms() + (uint64_t)c->start_timeout_ms;
    struct as_err oe = AS_ERR_INIT;
    if (c->ops->open(c, &oe) < 0) {
        char buf[2048];
        as_err_str(&oe, buf, sizeof buf);
        c->start_fail = c->ops->open_fail;
        c->start_fail_msg = xstrdup(buf);
        c->start_fail_timer = mcp_loop_timer(c->loop, 0, start_fail_cb, c);
        return 0;
    }
    c->start_timer = mcp_loop_timer(c->loop, (uint64_t)c->start_timeout_ms, start_timeout_cb, c);
    if (c->handshake == MCP_HS_DISCOVER) {
        json_t *params = json_object();
        json_t *meta = json_object();
        json_object_set_new(meta, MCP_META_VERSION, json_string(MCP_VERSION_MODERN));
        json_object_set_new(meta, MCP_META_CAPS, json_object());
        json_t *info = json_object();
        json_object_set_new(info, "name", json_string(c->client_name));
        json_object_set_new(info, "version", json_string(c->client_version));
        json_object_set_new(meta, MCP_META_INFO, info);
        json_object_set_new(params, "_meta", meta);
        free(c->version);
        c->version = xstrdup(MCP_VERSION_MODERN); /* HTTP sends it as a header */
        struct pending *p =
            new_request(c, "server/discover", params, c->start_timeout_ms, discover_reply, c, 1);
        c->hs_discover = p->id;
        send_pending(c, p);
        if (c->state == MCP_ST_STARTING && c->hs_discover)
            c->silence_timer = mcp_loop_timer(c->loop, (uint64_t)c->silence_ms, silence_cb, c);
    } else {
        send_initialize(c);
    }
    return 0;
}

/* ---- listing ---- */

struct listop {
    struct mcp_client *c;
    mcp_reply_fn cb;
    void *ctx;
    json_t *tools;
    uint64_t deadline;
    int max_tools, max_pages, pages, truncated;
    strvec cursors;
};

static void list_finish(struct listop *op, const struct mcp_reply *r)
{
    if (op->cb)
        op->cb(op->ctx, r);
    json_decref(op->tools);
    strvec_clear(&op->cursors);
    free(op);
}

static void list_page(struct listop *op, const char *cursor);

static void list_reply(void *ctx, const struct mcp_reply *r)
{
    struct listop *op = ctx;
    if (r->status != MCP_OK) {
        list_finish(op, r);
        return;
    }
    op->pages++;
    json_t *tools = json_object_get(r->result, "tools");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        if ((int)json_array_size(op->tools) >= op->max_tools) {
            op->truncated = 1;
            break;
        }
        json_array_append(op->tools, t);
    }
    const char *next = json_string_value(json_object_get(r->result, "nextCursor"));
    int more = next && *next && !op->truncated;
    if (more && (op->pages >= op->max_pages || strvec_find(&op->cursors, next) >= 0)) {
        op->truncated = 1; /* a cursor loop or an endless listing */
        more = 0;
    }
    if (more && mcp_now_ms() >= op->deadline) {
        struct mcp_reply tr = {MCP_E_TIMEOUT, NULL, NULL, "listing exceeded its time budget", 0,
                               NULL,          0};
        list_finish(op, &tr);
        return;
    }
    if (more) {
        list_page(op, next);
        return;
    }
    json_t *res = json_object();
    json_object_set(res, "tools", op->tools);
    if (op->truncated)
        json_object_set_new(res, "truncated", json_true());
    struct mcp_reply ok = {MCP_OK, res, NULL, "ok", 0, NULL, 0};
    list_finish(op, &ok);
    json_decref(res);
}

static void list_page(struct listop *op, const char *cursor)
{
    json_t *params = json_object();
    if (cursor) {
        json_object_set_new(params, "cursor", json_string(cursor));
        strvec_push(&op->cursors, cursor);
    }
    uint64_t now = mcp_now_ms();
    int left = op->deadline > now ? (int)(op->deadline - now) : 1;
    mcp_client_request(op->c, "tools/list", params, left, list_reply, op);
}

void mcp_client_list_tools(struct mcp_client *c, int timeout_ms, int max_tools, int max_pages,
                           mcp_reply_fn cb, void *ctx)
{
    struct listop *op = xcalloc(1, sizeof *op);
    op->c = c;
    op->cb = cb;
    op->ctx = ctx;
    op->tools = json_array();
    op->max_tools = max_tools > 0 ? max_tools : 1000;
    op->max_pages = max_pages > 0 ? max_pages : 100;
    op->deadline = mcp_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS);
    list_page(op, NULL);
}

/* ---- failure and shutdown ---- */

void mcp__transport_failed(struct mcp_client *c, enum mcp_status st, const char *msg)
{
    if (c->state == MCP_ST_STARTING) {
        start_done(c, st, msg); /* fails everything and drops the transport */
        return;
    }
    if (c->state != MCP_ST_READY)
        return;
    c->state = MCP_ST_DEAD;
    fail_all(c, st, msg, 1);
    c->ops->drop(c, c->kill_grace_ms);
}

static void shut_cb_timer(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    mcp__closed(ctx);
}

void mcp__closed(struct mcp_client *c)
{
    c->shut_timer = 0;
    if (c->state != MCP_ST_CLOSING)
        return;
    c->state = MCP_ST_CLOSED;
    mcp_reply_fn cb = c->shut_cb;
    c->shut_cb = NULL;
    if (cb) {
        struct mcp_reply r = {MCP_OK, NULL, NULL, "closed", 0, NULL, 0};
        mcp__enter(c);
        cb(c->shut_ctx, &r);
        mcp__leave(c);
    }
}

void mcp_client_shutdown(struct mcp_client *c, int grace_ms, mcp_reply_fn cb, void *ctx)
{
    if (c->state == MCP_ST_CLOSING) {
        if (!c->shut_cb) {
            c->shut_cb = cb;
            c->shut_ctx = ctx;
        }
        return;
    }
    if (c->state == MCP_ST_CLOSED) {
        /* Already gone: still answer from the loop, never from this call. */
        c->state = MCP_ST_CLOSING;
        c->shut_cb = cb;
        c->shut_ctx = ctx;
        c->shut_timer = mcp_loop_timer(c->loop, 0, shut_cb_timer, c);
        return;
    }
    if (c->state == MCP_ST_STARTING) {
        mcp_loop_timer_cancel(c->loop, c->start_timer);
        mcp_loop_timer_cancel(c->loop, c->silence_timer);
        mcp_loop_timer_cancel(c->loop, c->start_fail_timer);
        c->start_timer = c->silence_timer = c->start_fail_timer = 0;
        if (c->start_cb) {
            /* The start callback still owes an answer: fail it like a request. */
            struct pending *p = xcalloc(1, sizeof *p);
            p->c = c;
            p->cb = c->start_cb;
            p->ctx = c->start_ctx;
            p->id = c->next_id++;
            p->next = c->live;
            c->live = p;
            c->start_cb = NULL;
        }
    }
    enum mcp_client_state was = c->state;
    c->state = MCP_ST_CLOSING;
    c->shut_cb = cb;
    c->shut_ctx = ctx;
    fail_all(c, MCP_E_CLOSED, "upstream is shut down", 1);
    if (was == MCP_ST_IDLE)
        c->shut_timer = mcp_loop_timer(c->loop, 0, shut_cb_timer, c);
    else
        c->ops->close(c, grace_ms > 0 ? grace_ms : 3000);
}

static void destroy(struct mcp_client *c)
{
    c->destroying = 1;
    c->state = MCP_ST_CLOSED;
    c->busy++;
    mcp_loop_timer_cancel(c->loop, c->start_timer);
    mcp_loop_timer_cancel(c->loop, c->silence_timer);
    mcp_loop_timer_cancel(c->loop, c->start_fail_timer);
    mcp_loop_timer_cancel(c->loop, c->shut_timer);
    if (c->start_cb) {
        struct mcp_reply r = {MCP_E_CLOSED, NULL, NULL, "upstream client freed", 0, NULL, 0};
        mcp_reply_fn cb = c->start_cb;
        c->start_cb = NULL;
        cb(c->start_ctx, &r);
    }
    while (c->live) {
        struct pending *p = c->live;
        c->live = p->next;
        finish_status(c, p, MCP_E_CLOSED, "upstream client freed", 0);
    }
    while (c->limbo) {
        struct pending *p = c->limbo;
        c->limbo = p->next;
        finish_status(c, p, p->fail, p->fail_msg, 0);
    }
    c->ops->destroy(c);
    free(c->client_name);
    free(c->client_version);
    free(c->want_version);
    free(c->version);
    free(c->start_fail_msg);
    free(c->session_id);
    if (c->server_result)
        json_decref(c->server_result);
    sb_release(&c->stderr_head);
    free(c);
}

void mcp_client_free(struct mcp_client *c)
{
    if (!c || c->destroying)
        return;
    if (c->busy) {
        c->doomed = 1;
        return;
    }
    destroy(c);
}
