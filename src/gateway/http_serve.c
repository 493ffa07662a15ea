/*
 * `agentstack mcp --listen HOST:PORT`: the gateway over Streamable HTTP at
 * /mcp (docs/gateway.md, "Serving over HTTP").
 *
 * Why: a client that speaks MCP over HTTP (or wants one long-lived gateway
 * for several connections) should meet the same gateway stdio clients
 * meet: the same routing (gw_input), the same dispatch, policy and audit.
 * This file is only a transport in front of it.
 *
 * Guarantees:
 *  - Each HTTP session is its own gateway instance (struct gw: surface,
 *    lease, project binding, roots, jobs), created by an initialize POST
 *    and named by a random 128-bit Mcp-Session-Id; one session can never
 *    see or change another's state. A session's frames go in through
 *    gw_input and come out through its writer's sink, exactly as stdio's.
 *  - Every request shows `Authorization: Bearer <token>` (constant-time
 *    compare) before anything else happens: 401 otherwise, judged on its
 *    head before any of its body is read or waited for. A request whose
 *    Origin is not a loopback origin, or (on a loopback listener) whose Host
 *    is not a loopback name, is 403 (DNS rebinding). Only then are the path
 *    (404), the method (405), the session (400 missing, 404 unknown or
 *    ended) and MCP-Protocol-Version (400) judged.
 *  - Heads are parsed strictly (http_parse.h): no Transfer-Encoding, one
 *    Content-Length, heads ≤ 16 KiB and 64 fields, bodies ≤ 4 MiB.
 *  - One epoll loop, non-blocking sockets: a slow or stuck client holds
 *    only its own connection. A request must arrive whole within 10 s; at
 *    most 256 connections, of which at most 32 have not yet shown the token
 *    (a newcomer evicts the oldest of those); an answer a client does not
 *    read is capped at 16 MiB queued, then the connection is dropped.
 *  - At most 32 sessions; a new one evicts the least recently used idle
 *    session (no request in flight, no stream open), else 503.
 *  - SSE events carry per-session ids; the last 512 events (≤ 8 MiB) are
 *    kept so a GET with Last-Event-ID replays what followed on that stream.
 *  - SIGTERM/SIGINT/SIGHUP end every session as stdin EOF ends stdio's
 *    (drain ≤ 5 s, every upstream group stopped) and exit 0.
 */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/rand.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "gateway/control_ext.h"
#include "gateway/gw_int.h"
#include "gateway/http_int.h"

#define HS_MAX_CONNS 256
#define HS_MAX_PREAUTH 32
#define HS_MAX_SESSIONS 32
#define HS_REQ_MS 10000        /* a whole request, from its first byte */
#define HS_IDLE_MS 120000      /* a kept-alive connection with nothing to say */
#define HS_OUT_MAX (16u << 20) /* queued, unread answer bytes per connection */
#define HS_LOG_MAX 512
#define HS_LOG_BYTES (8u << 20)

struct hs;
struct hs_session;

struct hs_conn {
    struct hs *hs;
    struct hs_conn *prev, *next;
    int fd;
    strbuf in, out;
    size_t out_off;
    unsigned events;
    bool authed;      /* showed the token once (no longer counted as pre-auth) */
    bool busy;        /* a request is being answered */
    bool stream;      /* the answer is an SSE stream, ended by closing */
    bool close_after; /* close once out is written */
    bool dead;
    bool keep_alive;
    bool processing;   /* inside conn_process */
    bool want_process; /* a pipelined request to route from the loop (reap) */
    uint64_t timer;
    uint64_t req_by; /* when the request being read must be whole (0: none begun) */
    uint64_t seq;    /* accept order (eviction) */
};

struct hs_event {
    uint64_t seq;
    long stream; /* 0 the GET stream, else a POST's */
    char *data;
    size_t len;
};

struct hs_pending {
    json_t *id;
    long stream; /* > 0: an SSE answer; 0: application/json */
    struct hs_conn *c;
};

struct hs_session {
    struct hs *hs;
    struct hs_session *prev, *next;
    char id[33];
    struct gw gw;
    bool ended; /* DELETEd, evicted or shut down: 404 from then */
    bool done;  /* its instance stopped: freed at the next reap */
    uint64_t used;
    uint64_t seq;
    long next_stream;
    VEC(struct hs_event) log;
    size_t log_bytes;
    VEC(struct hs_pending) pend;
    struct hs_conn *get;
    uint64_t get_sent;
};

struct hs {
    struct gw_opts o;
    struct mcp_loop *loop;
    int lfd;
    bool loopback;
    char token[HTTP_TOKEN_MAX + 1];
    struct hs_conn *conns;
    size_t nconns, npreauth;
    uint64_t conn_seq;
    struct hs_session *sessions;
    size_t nsessions;
    bool reap_posted;
    bool stopping;
    uint64_t stop_timer;
    uint64_t req_ms; /* HS_REQ_MS, or AGENTSTACK_HTTP_REQUEST_MS when shorter (tests) */
};

static void conn_close(struct hs_conn *c);
static void conn_process(struct hs_conn *c);

/* ---- connections ------------------------------------------------------------ */

/* Posted work, from the loop: pipelined requests that waited, then
 * connections and sessions that are done (never freed from inside a
 * gateway call or a connection's own handler). */
static void reap(struct mcp_loop *loop, void *ctx);

static void post_reap(struct hs *hs)
{
    if (!hs->reap_posted) {
        hs->reap_posted = true;
        mcp_loop_post(hs->loop, reap, hs);
    }
}

static void conn_events(struct hs_conn *c)
{
    if (c->dead)
        return;
    unsigned want = MCP_EV_IN | (c->out_off < c->out.len ? MCP_EV_OUT : 0);
    if (want != c->events && mcp_loop_mod(c->hs->loop, c->fd, want) == 0)
        c->events = want;
}

static void conn_kill(struct hs_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    mcp_loop_del(c->hs->loop, c->fd);
    post_reap(c->hs);
}

static void conn_flush(struct hs_conn *c)
{
    while (!c->dead && c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.buf + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        conn_kill(c);
        return;
    }
    if (c->out_off == c->out.len) {
        sb_reset(&c->out);
        c->out_off = 0;
        if (c->close_after) {
            shutdown(c->fd, SHUT_WR);
            conn_kill(c);
            return;
        }
    } else if (c->out.len - c->out_off > HS_OUT_MAX) {
        conn_kill(c); /* a reader that stopped reading holds nothing more */
        return;
    }
    conn_events(c);
}

static void conn_write(struct hs_conn *c, const char *p, size_t n)
{
    if (c->dead)
        return;
    sb_add(&c->out, p, n);
    conn_flush(c);
}

static void on_deadline(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct hs_conn *c = ctx;
    c->timer = 0;
    conn_kill(c);
}

/* Reading a request: it must be whole HS_REQ_MS after its first byte (or,
 * before the token was ever shown, after the accept), however the bytes
 * trickle in; HS_IDLE_MS of silence between requests of a kept-alive
 * connection. Answering one: no deadline of its own (the upstreams'
 * budgets apply). */
static void conn_arm(struct hs_conn *c)
{
    if (c->timer)
        mcp_loop_timer_cancel(c->hs->loop, c->timer);
    c->timer = 0;
    if (c->dead || c->busy)
        return;
    uint64_t now = mcp_now_ms(), ms = HS_IDLE_MS;
    if (c->in.len || !c->authed) {
        if (!c->req_by)
            c->req_by = now + c->hs->req_ms;
        ms = c->req_by > now ? c->req_by - now : 0;
    }
    c->timer = mcp_loop_timer(c->hs->loop, ms, on_deadline, c);
}

static const char *reason(int st)
{
    switch (st) {
    case 200:
        return "OK";
    case 202:
        return "Accepted";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/* A whole answer with Content-Length; the connection then reads the next
 * request (or closes, when it asked to or the request was unusable). */
static void conn_respond(struct hs_conn *c, int st, const char *extra, const char *ctype,
                         const char *body, size_t blen)
{
    strbuf h = SB_INIT;
    sb_addf(&h, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n", st,
            reason(st), blen);
    if (ctype)
        sb_addf(&h, "Content-Type: %s\r\n", ctype);
    if (extra)
        sb_adds(&h, extra);
    if (!c->keep_alive)
        c->close_after = true;
    sb_adds(&h, c->close_after ? "Connection: close\r\n\r\n" : "\r\n");
    sb_add(&h, body, blen);
    c->busy = false;
    conn_write(c, h.buf, h.len);
    sb_release(&h);
    if (!c->dead && !c->close_after)
        conn_arm(c);
}

/* A JSON-RPC error body ("id": null) for an HTTP refusal. */
static void conn_refuse(struct hs_conn *c, int st, const char *extra, const char *why)
{
    json_t *e = mcp_error_new(NULL, st == 404 ? -32001 : -32000, why, NULL);
    strbuf b = SB_INIT;
    mcp_dump(e, &b);
    json_decref(e);
    conn_respond(c, st, extra, "application/json", b.buf, b.len);
    sb_release(&b);
}

static void sse_begin(struct hs_conn *c, const struct hs_session *s)
{
    strbuf h = SB_INIT;
    sb_addf(&h,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache, "
            "no-store\r\nMcp-Session-Id: %s\r\nConnection: close\r\n\r\n",
            s->id);
    c->stream = true;
    c->keep_alive = false; /* the body ends when the connection does */
    c->busy = true;
    conn_write(c, h.buf, h.len);
    sb_release(&h);
}

static void sse_write(struct hs_conn *c, const struct hs_event *e)
{
    strbuf b = SB_INIT;
    sb_addf(&b, "id: %llu\ndata: ", (unsigned long long)e->seq);
    sb_add(&b, e->data, e->len);
    sb_adds(&b, "\n\n");
    conn_write(c, b.buf, b.len);
    sb_release(&b);
}

/* ---- the event log (resumability) ----------------------------------------- */

static const struct hs_event *log_add(struct hs_session *s, long stream, const char *p, size_t n)
{
    while (s->log.n && (s->log.n >= HS_LOG_MAX || s->log_bytes + n > HS_LOG_BYTES)) {
        s->log_bytes -= s->log.v[0].len;
        free(s->log.v[0].data);
        memmove(s->log.v, s->log.v + 1, (s->log.n - 1) * sizeof *s->log.v);
        s->log.n--;
    }
    struct hs_event e = {++s->seq, stream, xmalloc(n + 1), n};
    memcpy(e.data, p, n);
    e.data[n] = '\0';
    s->log_bytes += n;
    vec_push(&s->log, e);
    return &s->log.v[s->log.n - 1];
}

static struct hs_event *log_find(struct hs_session *s, uint64_t seq)
{
    for (size_t i = 0; i < s->log.n; i++)
        if (s->log.v[i].seq == seq)
            return &s->log.v[i];
    return NULL;
}

static void log_replay(struct hs_session *s, struct hs_conn *c, long stream, uint64_t after)
{
    for (size_t i = 0; i < s->log.n && !c->dead; i++)
        if (s->log.v[i].stream == stream && s->log.v[i].seq > after)
            sse_write(c, &s->log.v[i]);
}

/* ---- session output: the sink of its writer ------------------------------ */

static json_t *response_id(const char *frame, size_t len)
{
    struct mcp_member m[MCP_RAW_KEYS];
    if (mcp_raw_valid(frame, len)) {
        int n = mcp_raw_members((struct mcp_span){frame, len}, m, MCP_RAW_KEYS);
        if (n < 0 || mcp_raw_get(m, (size_t)n, "method").p)
            return NULL;
        struct mcp_span id = mcp_raw_get(m, (size_t)n, "id");
        return id.p ? mcp_raw_tree(id.p, id.n) : NULL;
    }
    json_t *all = json_loadb(frame, len, 0, NULL);
    json_t *id = NULL;
    if (json_is_object(all) && !json_object_get(all, "method"))
        id = json_incref(json_object_get(all, "id"));
    json_decref(all);
    return id;
}

static void pending_drop(struct hs_session *s, size_t i)
{
    json_decref(s->pend.v[i].id);
    memmove(s->pend.v + i, s->pend.v + i + 1, (s->pend.n - i - 1) * sizeof *s->pend.v);
    s->pend.n--;
}

static void answer(struct hs_session *s, size_t i, const char *frame, size_t len)
{
    struct hs_pending p = s->pend.v[i];
    if (p.stream > 0) {
        const struct hs_event *e = log_add(s, p.stream, frame, len);
        if (p.c && !p.c->dead) {
            p.c->close_after = true; /* the stream ends once its answer is written */
            sse_write(p.c, e);
        }
    } else if (p.c) {
        char *extra = xasprintf("Mcp-Session-Id: %s\r\n", s->id);
        conn_respond(p.c, 200, extra, "application/json", frame, len);
        free(extra);
        if (!p.c->dead && p.c->in.len) {
            /* A pipelined request waited. Not from here: this runs inside
             * the gateway's reply, which must not take new input. */
            p.c->want_process = true;
            post_reap(s->hs);
        }
    }
    pending_drop(s, i);
}

static void session_sink(void *ctx, const char *frame, size_t len)
{
    struct hs_session *s = ctx;
    json_t *id = response_id(frame, len);
    if (id) {
        for (size_t i = 0; i < s->pend.n; i++)
            if (json_equal(s->pend.v[i].id, id)) {
                answer(s, i, frame, len);
                break;
            }
        /* no POST waits for it (its client went): a response is never
         * sent on the GET stream */
        json_decref(id);
        return;
    }
    const struct hs_event *e = log_add(s, 0, frame, len);
    if (s->get && !s->get->dead) {
        sse_write(s->get, e);
        s->get_sent = e->seq;
    }
}

/* ---- sessions -------------------------------------------------------------- */

static void session_stopped(struct gw *gw)
{
    struct hs_session *s = gw->owner;
    s->ended = true;
    if (gw->closing == 0 && !gw->jobs) {
        s->done = true;
        post_reap(s->hs);
    }
}

static void session_end(struct hs_session *s)
{
    if (s->ended)
        return;
    s->ended = true;
    if (s->get) {
        conn_flush(s->get);
        conn_kill(s->get);
    }
    gw_input_end(&s->gw); /* drain what runs, then stop its upstreams */
}

static struct hs_session *session_find(struct hs *hs, struct http_span id)
{
    if (!id.p || id.n != 32)
        return NULL;
    for (struct hs_session *s = hs->sessions; s; s = s->next)
        if (memcmp(s->id, id.p, 32) == 0)
            return s;
    return NULL;
}

static bool session_idle(const struct hs_session *s)
{
    return !s->ended && !s->pend.n && !s->get && !s->gw.jobs;
}

static struct hs_session *session_new(struct hs *hs, const char **why)
{
    if (hs->nsessions >= HS_MAX_SESSIONS) {
        struct hs_session *lru = NULL;
        for (struct hs_session *s = hs->sessions; s; s = s->next)
            if (session_idle(s) && (!lru || s->used < lru->used))
                lru = s;
        if (!lru) {
            *why = "every session is busy (at most 32)";
            return NULL;
        }
        gw_note("http: session %.8s… ended to make room (least recently used)", lru->id);
        session_end(lru);
    }
    struct hs_session *s = xcalloc(1, sizeof *s);
    struct as_err err = AS_ERR_INIT;
    if (rand_hex(s->id, 16, &err) < 0 || gw_setup(&s->gw, &hs->o, hs->loop, &err) < 0) {
        gw_note("http: a session could not start (%s)", err.msg);
        free(s);
        *why = "the session could not start";
        return NULL;
    }
    s->hs = hs;
    mcp_reader_init(&s->gw.rd, 1);
    mcp_writer_init_sink(&s->gw.w, session_sink, s);
    s->gw.on_stop = session_stopped;
    s->gw.owner = s;
    s->next = hs->sessions;
    if (hs->sessions)
        hs->sessions->prev = s;
    hs->sessions = s;
    hs->nsessions++;
    gw_start(&s->gw);
    return s;
}

static void session_free(struct hs_session *s)
{
    struct hs *hs = s->hs;
    if (s->prev)
        s->prev->next = s->next;
    else
        hs->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    hs->nsessions--;
    gw_teardown(&s->gw);
    for (size_t i = 0; i < s->pend.n; i++) {
        if (s->pend.v[i].c && !s->pend.v[i].c->dead)
            conn_kill(s->pend.v[i].c);
        json_decref(s->pend.v[i].id);
    }
    vec_free(&s->pend);
    for (size_t i = 0; i < s->log.n; i++)
        free(s->log.v[i].data);
    vec_free(&s->log);
    if (s->get)
        conn_kill(s->get);
    free(s);
}

/* Detaches c from whatever session waits on it (it is going away). */
static void conn_detach(struct hs_conn *c)
{
    for (struct hs_session *s = c->hs->sessions; s; s = s->next) {
        if (s->get == c)
            s->get = NULL;
        for (size_t i = 0; i < s->pend.n;) {
            if (s->pend.v[i].c != c) {
                i++;
                continue;
            }
            s->pend.v[i].c = NULL;
            if (s->pend.v[i].stream == 0)
                pending_drop(s, i); /* a JSON answer has nowhere to go now */
            else
                i++; /* an SSE answer is still logged, for a resuming GET */
        }
    }
}

static void maybe_stop(struct hs *hs)
{
    if (hs->stopping && !hs->sessions)
        mcp_loop_stop(hs->loop);
}

static void reap(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct hs *hs = ctx;
    hs->reap_posted = false;
    for (struct hs_conn *c = hs->conns; c; c = c->next)
        if (c->want_process && !c->dead) {
            c->want_process = false;
            conn_process(c); /* never closes c itself: dead ones are closed below */
        }
    for (struct hs_conn *c = hs->conns, *n; c; c = n) {
        n = c->next;
        if (c->dead)
            conn_close(c);
    }
    for (struct hs_session *s = hs->sessions, *n; s; s = n) {
        n = s->next;
        if (s->done)
            session_free(s);
    }
    maybe_stop(hs);
}

static void conn_close(struct hs_conn *c)
{
    struct hs *hs = c->hs;
    conn_detach(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        hs->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    hs->nconns--;
    if (!c->authed)
        hs->npreauth--;
    if (c->timer)
        mcp_loop_timer_cancel(hs->loop, c->timer);
    if (!c->dead)
        mcp_loop_del(hs->loop, c->fd);
    close(c->fd);
    sb_release(&c->in);
    sb_release(&c->out);
    free(c);
}

/* ---- requests ------------------------------------------------------------- */

static const char *const http_versions[] = {"2026-07-28", "2025-11-25", "2025-06-18",
                                            "2025-03-26", "2024-11-05", NULL};

static bool known_version(struct http_span v)
{
    for (size_t i = 0; http_versions[i]; i++)
        if (http_span_is(v, http_versions[i]))
            return true;
    return false;
}

static void respond_session(struct hs_conn *c, const struct hs_session *s, int st)
{
    char *extra = xasprintf("Mcp-Session-Id: %s\r\n", s->id);
    conn_respond(c, st, extra, NULL, "", 0);
    free(extra);
}

/* A notification the gateway will not answer ends the POST waiting on it. */
static void cancelled(struct hs_session *s, const json_t *msg)
{
    json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
    for (size_t i = 0; rid && i < s->pend.n; i++) {
        if (!json_equal(s->pend.v[i].id, rid))
            continue;
        struct hs_conn *pc = s->pend.v[i].c;
        pending_drop(s, i);
        if (pc) {
            pc->close_after = true;
            conn_flush(pc);
            conn_kill(pc);
        }
        return;
    }
}

static bool post_checks(struct hs_conn *c, const struct http_req *r, bool *sse)
{
    struct http_span ct = r->content_type;
    size_t n = 0;
    while (ct.p && n < ct.n && ct.p[n] != ';' && ct.p[n] != ' ')
        n++;
    if (!http_span_is((struct http_span){ct.p, n}, "application/json")) {
        conn_refuse(c, 415, NULL, "Unsupported Media Type: the body must be application/json");
        return false;
    }
    bool json_ok = http_accepts(r->accept, "application/json");
    bool sse_ok = http_accepts(r->accept, "text/event-stream");
    if (!json_ok && !sse_ok) {
        conn_refuse(c, 406, NULL,
                    "Not Acceptable: Accept must list application/json or text/event-stream");
        return false;
    }
    *sse = sse_ok && !json_ok;
    return true;
}

static struct hs_session *post_session(struct hs_conn *c, struct hs_session *s,
                                       const struct mcp_msg *m)
{
    if (s)
        return s;
    if (m->kind != MCP_REQUEST || strcmp(m->method, "initialize") != 0) {
        conn_refuse(c, 400, NULL,
                    "Bad Request: Mcp-Session-Id is required (a session starts with initialize)");
        return NULL;
    }
    const char *why = "the gateway is shutting down";
    if (!c->hs->stopping)
        s = session_new(c->hs, &why);
    if (!s) {
        char *msg = xasprintf("Service Unavailable: %s", why);
        conn_refuse(c, 503, NULL, msg);
        free(msg);
    }
    return s;
}

/* A body the stdio path would answer with an error (or not at all) is
 * answered here, 400, with the error the gateway would send: no POST is
 * left waiting for an answer that names no id. */
static bool post_parse(struct hs_conn *c, const char *body, size_t blen, struct mcp_msg *m)
{
    json_t *reply = NULL;
    enum mcp_parse_status st = mcp_parse(body, blen, m, &reply);
    if (st == MCP_PARSED)
        return true;
    if (st == MCP_UNREADABLE && !reply) {
        struct mcp_unreadable u;
        if (mcp_unreadable_read(body, blen, &u) == 0) {
            reply = mcp_error_new(u.id, MCP_PARSE_ERROR, "Parse error", NULL);
            mcp_unreadable_clear(&u);
        }
    }
    size_t k = 0;
    while (k < blen && (body[k] == ' ' || body[k] == '\t' || body[k] == '\r' || body[k] == '\n'))
        k++;
    if (k < blen && body[k] == '[') {
        json_decref(reply);
        reply = mcp_error_new(NULL, MCP_INVALID_REQUEST,
                              "Invalid request: batches are not accepted", NULL);
    }
    if (!reply)
        reply = mcp_error_new(NULL, MCP_PARSE_ERROR,
                              "Parse error: the body is not one JSON-RPC "
                              "message",
                              NULL);
    strbuf b = SB_INIT;
    mcp_dump(reply, &b);
    json_decref(reply);
    conn_respond(c, 400, NULL, "application/json", b.buf, b.len);
    sb_release(&b);
    return false;
}

static void route_post(struct hs_conn *c, const struct http_req *r, struct hs_session *s,
                       const char *body, size_t blen)
{
    bool sse = false;
    struct mcp_msg m;
    if (!post_checks(c, r, &sse) || !post_parse(c, body, blen, &m))
        return;
    s = post_session(c, s, &m);
    if (!s) {
        mcp_msg_clear(&m);
        return;
    }
    s->used = mcp_now_ms();
    if (m.kind != MCP_REQUEST) {
        gw_input(&s->gw, body, blen);
        if (m.kind == MCP_NOTIFICATION && strcmp(m.method, "notifications/cancelled") == 0)
            cancelled(s, m.root);
        respond_session(c, s, 202);
        mcp_msg_clear(&m);
        return;
    }
    for (size_t i = 0; i < s->pend.n; i++)
        if (json_equal(s->pend.v[i].id, m.id)) {
            conn_refuse(c, 400, NULL,
                        "Bad Request: a request with this id is still being answered");
            mcp_msg_clear(&m);
            return;
        }
    struct hs_pending p = {json_incref(m.id), sse ? ++s->next_stream : 0, c};
    vec_push(&s->pend, p);
    if (sse) {
        sse_begin(c, s);
        sse_write(c, log_add(s, p.stream, "", 0)); /* primes Last-Event-ID */
    }
    mcp_msg_clear(&m);
    gw_input(&s->gw, body, blen); /* may answer (and free c's wait) at once */
}

static void route_get(struct hs_conn *c, const struct http_req *r, struct hs_session *s)
{
    if (!http_accepts(r->accept, "text/event-stream")) {
        conn_refuse(c, 406, NULL, "Not Acceptable: a GET stream is text/event-stream");
        return;
    }
    uint64_t last = 0;
    const struct hs_event *e = NULL;
    if (r->last_event_id.p && r->last_event_id.n && r->last_event_id.n < 20) {
        char b[24];
        memcpy(b, r->last_event_id.p, r->last_event_id.n);
        b[r->last_event_id.n] = '\0';
        char *end = NULL;
        unsigned long long v = strtoull(b, &end, 10);
        if (end && !*end && b[0] >= '0' && b[0] <= '9') {
            last = v;
            e = log_find(s, last);
        }
    }
    if (e && e->stream > 0) {
        /* resuming a POST's stream: what followed, then its answer when it comes */
        long st = e->stream;
        sse_begin(c, s);
        log_replay(s, c, st, last);
        size_t i = 0;
        while (i < s->pend.n && s->pend.v[i].stream != st)
            i++;
        if (i < s->pend.n) {
            if (s->pend.v[i].c && s->pend.v[i].c != c)
                conn_kill(s->pend.v[i].c);
            s->pend.v[i].c = c;
        } else {
            c->close_after = true;
            conn_flush(c);
        }
        return;
    }
    if (s->get && !s->get->dead) {
        conn_refuse(c, 409, NULL, "Conflict: this session's GET stream is already open");
        return;
    }
    sse_begin(c, s);
    s->get = c;
    log_replay(s, c, 0, e ? last : s->get_sent);
    sse_write(c, log_add(s, 0, "", 0));
    s->get_sent = s->seq;
}

/* Who is asking, judged on the head alone, before any of the body is read:
 * false when c was answered (and will close). */
static bool gate(struct hs_conn *c, const struct http_req *r)
{
    struct hs *hs = c->hs;
    c->keep_alive = false; /* a refusal here closes the connection */
    if (!http_bearer_ok(r->authorization, hs->token)) {
        conn_refuse(c, 401, "WWW-Authenticate: Bearer realm=\"agentstack\"\r\n",
                    "Unauthorized: send Authorization: Bearer <the token of --token-file>");
        return false;
    }
    if (!c->authed) {
        c->authed = true;
        hs->npreauth--;
    }
    if (r->origin.p && !http_origin_loopback(r->origin)) {
        conn_refuse(c, 403, NULL, "Forbidden: the Origin is not a loopback origin");
        return false;
    }
    if (hs->loopback && r->host.p && !http_host_loopback(r->host)) {
        conn_refuse(c, 403, NULL, "Forbidden: the Host is not a loopback name");
        return false;
    }
    c->keep_alive = r->keep_alive;
    return true;
}

static void route(struct hs_conn *c, const struct http_req *r, const char *body, size_t blen)
{
    struct hs *hs = c->hs;
    struct http_span path = r->target;
    const char *q = memchr(path.p, '?', path.n);
    if (q)
        path.n = (size_t)(q - path.p);
    if (path.n != 4 || memcmp(path.p, "/mcp", 4) != 0) {
        conn_refuse(c, 404, NULL, "Not Found: the MCP endpoint is /mcp");
        return;
    }
    bool post = http_span_is(r->method, "POST"), get = http_span_is(r->method, "GET"),
         del = http_span_is(r->method, "DELETE");
    if (!post && !get && !del) {
        conn_refuse(c, 405, "Allow: GET, POST, DELETE\r\n", "Method Not Allowed");
        return;
    }
    if (r->protocol_version.p && !known_version(r->protocol_version)) {
        conn_refuse(c, 400, NULL, "Bad Request: unsupported MCP-Protocol-Version");
        return;
    }
    struct hs_session *s = NULL;
    if (r->session_id.p) {
        s = session_find(hs, r->session_id);
        if (!s || s->ended) {
            conn_refuse(c, 404, NULL,
                        "Not Found: no such session (start a new one with "
                        "initialize)");
            return;
        }
        s->used = mcp_now_ms();
    } else if (!post) {
        conn_refuse(c, 400, NULL, "Bad Request: Mcp-Session-Id is required");
        return;
    }
    if (post) {
        route_post(c, r, s, body, blen);
    } else if (get) {
        route_get(c, r, s);
    } else {
        session_end(s);
        respond_session(c, s, 200);
    }
}

/* ---- reading ------------------------------------------------------------- */

static void conn_process(struct hs_conn *c)
{
    if (c->processing)
        return; /* the loop below goes on once the current route returns */
    c->processing = true;
    while (!c->dead && !c->busy && !c->close_after && c->in.len) {
        struct http_req r;
        int st = 0;
        const char *why = NULL;
        enum http_parse_rc rc = http_parse_head(c->in.buf, c->in.len, &r, &st, &why);
        if (rc == HTTP_PARSE_MORE)
            break;
        if (rc == HTTP_PARSE_ERROR) {
            c->keep_alive = false;
            conn_refuse(c, st, NULL, why);
            break;
        }
        if (!gate(c, &r))
            break;
        size_t need = r.head_len + (size_t)(r.content_length > 0 ? r.content_length : 0);
        if (c->in.len < need)
            break;
        /* The request leaves c->in before it is routed: an answer written
         * from inside the route may go on to the next pipelined one. */
        strbuf cur = c->in;
        sb_init(&c->in, 0);
        sb_add(&c->in, cur.buf + need, cur.len - need);
        c->busy = true;
        c->req_by = 0; /* the next request's clock starts at its first byte */
        route(c, &r, cur.buf + r.head_len, need - r.head_len);
        sb_release(&cur);
    }
    c->processing = false;
    conn_arm(c);
}

static void on_conn(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    struct hs_conn *c = ctx;
    if (ev & MCP_EV_OUT)
        conn_flush(c);
    if (c->dead || !(ev & (MCP_EV_IN | MCP_EV_ERR)))
        return;
    for (int rounds = 0; rounds < 16; rounds++) {
        if (c->in.len >= HTTP_HEAD_MAX + HTTP_BODY_MAX) {
            conn_kill(c); /* more than one whole request waiting unread */
            return;
        }
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            sb_add(&c->in, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        conn_kill(c); /* EOF or error: an open stream or a waiting POST ends */
        return;
    }
    conn_process(c);
}

static void evict_preauth(struct hs *hs)
{
    struct hs_conn *old = NULL;
    for (struct hs_conn *c = hs->conns; c; c = c->next)
        if (!c->authed && !c->dead && (!old || c->seq < old->seq))
            old = c;
    if (old)
        conn_close(old);
}

static void on_accept(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)ev;
    struct hs *hs = ctx;
    for (int i = 0; i < 64; i++) {
        int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0)
            return;
        if (hs->stopping || hs->nconns >= HS_MAX_CONNS) {
            close(s);
            continue;
        }
        if (hs->npreauth >= HS_MAX_PREAUTH)
            evict_preauth(hs);
        int one = 1; /* an answer is one write: never held back for the next */
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct hs_conn *c = xcalloc(1, sizeof *c);
        c->hs = hs;
        c->fd = s;
        c->seq = ++hs->conn_seq;
        c->keep_alive = true;
        struct as_err err = AS_ERR_INIT;
        if (mcp_loop_add(loop, s, MCP_EV_IN, on_conn, c, &err) < 0) {
            close(s);
            free(c);
            continue;
        }
        c->events = MCP_EV_IN;
        c->next = hs->conns;
        if (hs->conns)
            hs->conns->prev = c;
        hs->conns = c;
        hs->nconns++;
        hs->npreauth++;
        conn_arm(c);
    }
}

/* ---- serve ------------------------------------------------------------------- */

static void stop_expired(struct mcp_loop *loop, void *ctx)
{
    struct hs *hs = ctx;
    hs->stop_timer = 0;
    gw_note("http: sessions did not finish in time; stopping");
    mcp_loop_stop(loop);
}

static void hs_stop(struct hs *hs)
{
    if (hs->stopping) {
        mcp_loop_stop(hs->loop); /* a second signal: no drain */
        return;
    }
    hs->stopping = true;
    if (hs->lfd >= 0) {
        mcp_loop_del(hs->loop, hs->lfd);
        close(hs->lfd);
        hs->lfd = -1;
    }
    for (struct hs_session *s = hs->sessions; s; s = s->next)
        session_end(s);
    hs->stop_timer =
        mcp_loop_timer(hs->loop, GW_DRAIN_MS + GW_KILL_GRACE_MS + 2500, stop_expired, hs);
    maybe_stop(hs);
}

static void on_signal(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)ev;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        gw_note("signal %u: shutting down", si.ssi_signo);
        hs_stop(ctx);
    }
}

static int hs_listen(struct hs *hs, struct as_err *err)
{
    struct sockaddr_storage sa;
    socklen_t salen = 0;
    if (http_listen_addr(hs->o.listen, hs->o.listen_any, &sa, &salen, err) < 0)
        return -1;
    hs->loopback = http_listen_addr(hs->o.listen, false, &sa, &salen, &(struct as_err){0}) == 0;
    int s = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        return as_err_errno(err, "cannot open a socket");
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, (struct sockaddr *)&sa, salen) < 0 || listen(s, 128) < 0) {
        as_err_errno(err, "cannot listen on %s", hs->o.listen);
        close(s);
        return -1;
    }
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (getsockname(s, (struct sockaddr *)&got, &gl) == 0) {
        if (got.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&got;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&got;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        }
    }
    if (mcp_loop_add(hs->loop, s, MCP_EV_IN, on_accept, hs, err) < 0) {
        close(s);
        return -1;
    }
    hs->lfd = s;
    gw_note("serving MCP over HTTP at http://%s%s%s:%u/mcp", got.ss_family == AF_INET6 ? "[" : "",
            host, got.ss_family == AF_INET6 ? "]" : "", port);
    return 0;
}

static void hs_free(struct hs *hs)
{
    /* Whatever ended the loop, upstream groups must not outlive us. */
    for (struct hs_session *s = hs->sessions; s; s = s->next)
        if (!s->gw.shutting_down)
            gw_shutdown(&s->gw);
    uint64_t until = mcp_now_ms() + 2000;
    for (;;) {
        bool closing = false;
        for (struct hs_session *s = hs->sessions; s; s = s->next)
            closing |= s->gw.closing > 0;
        if (!closing || mcp_now_ms() >= until)
            break;
        struct as_err e2 = AS_ERR_INIT;
        if (mcp_loop_run_once(hs->loop, 50, &e2) < 0)
            break;
    }
    while (hs->sessions)
        session_free(hs->sessions);
    while (hs->conns) {
        hs->conns->dead = true;
        mcp_loop_del(hs->loop, hs->conns->fd);
        conn_close(hs->conns);
    }
    if (hs->lfd >= 0) {
        mcp_loop_del(hs->loop, hs->lfd);
        close(hs->lfd);
    }
    if (hs->stop_timer)
        mcp_loop_timer_cancel(hs->loop, hs->stop_timer);
    explicit_bzero(hs->token, sizeof hs->token);
}

int gw_serve_http(const struct gw_opts *o, struct as_err *err)
{
    struct hs hs = {.o = *o, .lfd = -1, .req_ms = HS_REQ_MS};
    const char *rq = getenv("AGENTSTACK_HTTP_REQUEST_MS");
    if (rq && atoi(rq) > 0 && (uint64_t)atoi(rq) < HS_REQ_MS)
        hs.req_ms = (uint64_t)atoi(rq);
    if (!o->token_file || !*o->token_file) {
        as_err_set(err, "--listen needs --token-file FILE (the bearer token)");
        return 1;
    }
    if (http_token_load(o->token_file, hs.token, err) < 0)
        return 1;
    strbuf home = SB_INIT;
    if (home_dir(&home, err) < 0) {
        sb_release(&home);
        return 1;
    }
    gw_cm_sweep(home.buf); /* endpoint dirs of SIGKILLed gateways */
    sb_release(&home);
    hs.loop = mcp_loop_new(err);
    if (!hs.loop)
        return 1;
    mcp_loop_set_spin(hs.loop, GW_SPIN_US);
    if (hs_listen(&hs, err) < 0) {
        mcp_loop_free(hs.loop);
        explicit_bzero(hs.token, sizeof hs.token);
        return 1;
    }
    sigset_t sigs, old_sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &old_sigs);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    struct as_err aerr = AS_ERR_INIT;
    if (sfd >= 0 && mcp_loop_add(hs.loop, sfd, MCP_EV_IN, on_signal, &hs, &aerr) < 0) {
        close(sfd);
        sfd = -1;
    }
    int rc = mcp_loop_run(hs.loop, err) < 0 ? 1 : 0;
    hs_free(&hs);
    if (sfd >= 0) {
        mcp_loop_del(hs.loop, sfd);
        close(sfd);
    }
    sigprocmask(SIG_SETMASK, &old_sigs, NULL);
    mcp_loop_free(hs.loop);
    return rc;
}
