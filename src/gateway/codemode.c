/*
 * Code mode (docs/gateway.md): the loopback endpoint a generated client
 * (tools_bindings) POSTs {name, arguments} to, and the bindings themselves.
 *
 * Why it is shaped like this: the endpoint is a second door into the same
 * upstreams, so it must be no wider than tools/call. Every request becomes a
 * job handed to gw_dispatch, the one dispatch point, on the gateway's own
 * event loop (no thread, no second policy path). The door exists only while
 * the current surface proxies something: it opens when a non-empty surface
 * becomes current and closes (file deleted) when that surface is swapped out
 * or the gateway exits. A request whose door closed before it reached
 * dispatch is refused rather than served by whatever surface came next.
 *
 * The token is 32 random bytes (hex), compared in constant time before any
 * of the body is read; the file holding it lives under $AGENTSTACK_HOME,
 * never in the project, 0600 in a 0700 directory. Bindings name
 * the file, never its contents.
 *
 * The same machinery serves the sandbox face: inside `run
 * --sandbox`/`--lockdown` the confined harness speaks MCP (Streamable HTTP,
 * one JSON-RPC request per POST /mcp, stateless in both eras) to this
 * gateway, which runs outside the sandbox. The run hands over a listening
 * socket and a token (AGENTSTACK_GATEWAY_FACE_FD/_TOKEN, honoured only with
 * --grant, so the face serves nothing but the run's frozen authority). Only
 * proxied tools are listed and called — never the control plane — and every
 * call goes through gw_dispatch like a stdio one (fence, trust anchor,
 * policy, secrets resolved here, audit with the run id).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/rand.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "gateway/gw_int.h"

#define CM_BODY_MAX (1024 * 1024)
#define CM_HEAD_MAX (16 * 1024)
#define CM_INFLIGHT_MAX 64
#define CM_CONN_MAX 256
/* Connections that have not shown a valid token yet: a flood of them evicts
 * its own oldest, never an authenticated one (all peers of a loopback
 * endpoint share 127.0.0.1, so per peer is per endpoint here). */
#define CM_PREAUTH_MAX 32
#define CM_HEAD_MS_DEFAULT 2000
#define CM_TOKEN_HEX 64
#define CM_IDLE_MS_DEFAULT 10000
#define FACE_BODY_MAX ((size_t)4 << 20)
#define FACE_ENV_FD "AGENTSTACK_GATEWAY_FACE_FD"
#define FACE_ENV_TOKEN "AGENTSTACK_GATEWAY_FACE_TOKEN"

struct gw_cm_conn {
    struct gw_cm *cm;
    int fd;
    unsigned epoch;  /* the endpoint generation that accepted it */
    strbuf in;       /* headers, then body */
    size_t head_len; /* bytes of headers incl. the blank line; 0 until seen */
    size_t body_len; /* Content-Length */
    bool counted;    /* holds one of the 64 in-flight slots */
    bool authed;     /* its headers carried the token */
    struct job *job; /* dispatched, not answered yet */
    strbuf out;
    size_t out_off;
    bool writing;
    bool busy;      /* inside conn_dispatch: a door closing must not free it */
    uint64_t timer; /* idle deadline while reading or writing; 0 while dispatched */
    json_t *rpc_id; /* sandbox face: the JSON-RPC id the answer carries */
    char *tool;     /* sandbox face: the tools/call name (for the unknown answer) */
    struct gw_cm_conn *next, *prev;
};

struct gw_cm {
    struct gw *gw;
    int lfd;        /* listening socket, -1 when closed */
    unsigned epoch; /* bumps every time the door opens or closes */
    char token[CM_TOKEN_HEX + 1];
    int port;
    char *dir, *path;      /* $AGENTSTACK_HOME/gateway/<id>/endpoint.json */
    struct gw_surface *sf; /* the surface the door was opened for (held) */
    size_t inflight, nconns, npreauth;
    uint64_t idle_ms; /* a connection that stalls this long is dropped */
    uint64_t head_ms; /* one that has not sent its headers by then is dropped */
    struct gw_cm_conn *conns;
    char *why_closed; /* why the last attempt to open failed */
    bool face;        /* the sandbox face, not the code-mode door */
};

/* ---- connections ------------------------------------------------------------------- */

static void conn_free(struct gw_cm_conn *c)
{
    struct gw_cm *cm = c->cm;
    if (c->prev)
        c->prev->next = c->next;
    else
        cm->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    cm->nconns--;
    if (!c->authed)
        cm->npreauth--;
    if (c->counted)
        cm->inflight--;
    if (c->timer)
        mcp_loop_timer_cancel(cm->gw->loop, c->timer);
    if (c->job) {
        /* The call finishes and is audited; its answer has nowhere to go. */
        c->job->http = NULL;
        c->job->cancelled = true;
    }
    mcp_loop_del(cm->gw->loop, c->fd);
    close(c->fd);
    json_decref(c->rpc_id);
    free(c->tool);
    sb_release(&c->in);
    sb_release(&c->out);
    free(c);
}

static void on_conn(struct mcp_loop *loop, int fd, unsigned ev, void *ctx);

/* A client that neither finishes its request nor reads its answer would hold
 * one of the CM_CONN_MAX slots for the gateway's life: it is dropped. */
static void on_idle(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw_cm_conn *c = ctx;
    c->timer = 0;
    conn_free(c);
}

/* Until its headers show the token a connection gets head_ms; after that,
 * idle_ms per stall while it sends its body or reads its answer. */
static void conn_arm(struct gw_cm_conn *c)
{
    struct mcp_loop *loop = c->cm->gw->loop;
    if (c->timer)
        mcp_loop_timer_cancel(loop, c->timer);
    c->timer = mcp_loop_timer(loop, c->authed ? c->cm->idle_ms : c->cm->head_ms, on_idle, c);
}

static void conn_disarm(struct gw_cm_conn *c)
{
    if (c->timer)
        mcp_loop_timer_cancel(c->cm->gw->loop, c->timer);
    c->timer = 0;
}

static void conn_flush(struct gw_cm_conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.buf + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->writing) {
                c->writing = true;
                mcp_loop_mod(c->cm->gw->loop, c->fd, MCP_EV_OUT);
                conn_arm(c);
            }
            return;
        }
        if (n <= 0)
            break;
        c->out_off += (size_t)n;
    }
    conn_free(c); /* one request per connection */
}

static const char *status_text(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 202:
        return "Accepted";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Payload Too Large";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

/* Answers with body (stolen; NULL = {"error": msg}) and closes after. */
static void conn_answer(struct gw_cm_conn *c, int code, const char *msg, json_t *body)
{
    if (code == 202) {
        sb_reset(&c->out);
        sb_adds(&c->out, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nCache-Control: no-store\r\n"
                         "Connection: close\r\n\r\n");
        c->out_off = 0;
        if (c->counted) {
            c->counted = false;
            c->cm->inflight--;
        }
        conn_flush(c);
        return;
    }
    if (!body) {
        body = json_object();
        json_object_set_new(body, "error", json_string(msg ? msg : status_text(code)));
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    size_t len = text ? strlen(text) : 0;
    sb_reset(&c->out);
    sb_addf(&c->out,
            "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            code, status_text(code), len);
    sb_add(&c->out, text ? text : "", len);
    free(text);
    c->out_off = 0;
    if (c->counted) {
        c->counted = false;
        c->cm->inflight--;
    }
    conn_flush(c);
}

/* Header value of name (case-insensitive) in the raw head, or NULL. */
static const char *header(const char *head, size_t head_len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *p = memchr(head, '\n', head_len); /* skip the request line */
    const char *end = head + head_len;
    while (p && p < end) {
        p++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            break;
        if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            const char *ve = eol;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

/* Reads the first line and headers; -1 after answering. Order of refusals:
 * malformed → 400, token → 401 (no body read yet), size → 413, load → 503. */
static int conn_head(struct gw_cm_conn *c)
{
    struct gw_cm *cm = c->cm;
    const char *h = c->in.buf;
    size_t hl = c->head_len;
    const char *eol = memchr(h, '\n', hl);
    size_t l0 = eol ? (size_t)(eol - h) : 0;
    if (cm->face && (l0 < 5 || strncmp(h, "POST ", 5) != 0)) {
        conn_answer(c, 405, "only POST /mcp is served here (stateless Streamable HTTP)", NULL);
        return -1;
    }
    if (l0 < 5 || strncmp(h, "POST ", 5) != 0) {
        conn_answer(c, 400, "only POST {\"name\",\"arguments\"} is served here", NULL);
        return -1;
    }
    if (cm->face && !(l0 > 10 && strncmp(h + 5, "/mcp", 4) == 0 && (h[9] == ' ' || h[9] == '?'))) {
        conn_answer(c, 404, "the MCP endpoint is POST /mcp", NULL);
        return -1;
    }
    size_t tl = 0;
    const char *tok = header(h, hl, "X-Agentstack-Token", &tl);
    if (!tok || tl != CM_TOKEN_HEX || c->epoch != cm->epoch || cm->lfd < 0 ||
        !ct_equal(tok, cm->token, CM_TOKEN_HEX)) {
        conn_answer(c, 401, "missing or wrong X-Agentstack-Token", NULL);
        return -1;
    }
    c->authed = true;
    cm->npreauth--;
    conn_arm(c); /* the body gets the idle limit, not the head deadline */
    if (header(h, hl, "Transfer-Encoding", &tl)) {
        conn_answer(c, 400, "send the body with a Content-Length", NULL);
        return -1;
    }
    const char *cl = header(h, hl, "Content-Length", &tl);
    if (!cl || tl == 0 || tl > 19) {
        conn_answer(c, 400, "a Content-Length is required", NULL);
        return -1;
    }
    unsigned long long n = 0;
    for (size_t i = 0; i < tl; i++) {
        if (cl[i] < '0' || cl[i] > '9') {
            conn_answer(c, 400, "bad Content-Length", NULL);
            return -1;
        }
        n = n * 10 + (unsigned)(cl[i] - '0');
    }
    if (n > (cm->face ? FACE_BODY_MAX : CM_BODY_MAX)) {
        conn_answer(c, 413, cm->face ? "request body over 4 MiB" : "request body over 1 MiB", NULL);
        return -1;
    }
    if (cm->inflight >= CM_INFLIGHT_MAX) {
        conn_answer(c, 503, "64 calls already in flight; retry shortly", NULL);
        return -1;
    }
    cm->inflight++;
    c->counted = true;
    c->body_len = (size_t)n;
    return 0;
}

static void face_dispatch(struct gw_cm_conn *c);

static void conn_dispatch(struct gw_cm_conn *c)
{
    if (c->cm->face) {
        face_dispatch(c);
        return;
    }
    struct gw_cm *cm = c->cm;
    struct gw *gw = cm->gw;
    json_error_t je;
    json_t *req = json_loadb(c->in.buf + c->head_len, c->body_len, JSON_REJECT_DUPLICATES, &je);
    const char *name = json_string_value(json_object_get(req, "name"));
    json_t *args = json_object_get(req, "arguments");
    if (!json_is_object(req) || !name || (args && !json_is_object(args) && !json_is_null(args))) {
        json_decref(req);
        conn_answer(c, 400, "the body must be {\"name\": string, \"arguments\": object}", NULL);
        return;
    }
    struct job *j = gw_job_add(gw, "tools/call");
    j->via_http = true;
    j->name = xstrdup(name);
    j->args = json_is_object(args) ? json_incref(args) : json_object();
    json_decref(req);
    /* Exactly what tools/call does before dispatch: fresh trust, then the
     * one dispatch point. A refresh that swapped the surface closed this
     * door: the request was admitted for a surface that is gone. */
    c->busy = true;
    gw_refresh(gw, false, false);
    c->busy = false;
    if (c->epoch != cm->epoch) {
        gw_job_free(j);
        conn_answer(c, 502, "the gateway's tool surface changed; read endpoint.json again", NULL);
        return;
    }
    c->job = j;
    j->http = c;
    conn_disarm(c);     /* the call has its own deadlines from here */
    gw_dispatch(gw, j); /* replies through gw_cm_reply, now or later */
}

static void face_reply(struct gw_cm_conn *c, struct job *j, json_t *result);

void gw_cm_reply(struct gw *gw, struct job *j, json_t *result)
{
    (void)gw;
    struct gw_cm_conn *c = j->http;
    j->http = NULL;
    if (!c) {
        json_decref(result);
        return;
    }
    c->job = NULL;
    if (c->cm->face) {
        face_reply(c, j, result);
        return;
    }
    if (!result) {
        conn_answer(c, 502, "the call failed", NULL);
        return;
    }
    if (j->unknown) {
        json_decref(result);
        conn_answer(c, 404, "not a proxied tool of this gateway", NULL);
        return;
    }
    if (json_is_true(json_object_get(result, "isError"))) {
        json_t *first = json_array_get(json_object_get(result, "content"), 0);
        const char *text = json_string_value(json_object_get(first, "text"));
        json_t *body = json_object();
        json_object_set_new(body, "error", json_string(text ? text : "the call failed"));
        json_decref(result);
        conn_answer(c, 502, NULL, body);
        return;
    }
    json_t *body = json_object();
    json_object_set_new(body, "result", result);
    conn_answer(c, 200, NULL, body);
}

static void on_conn(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)fd;
    struct gw_cm_conn *c = ctx;
    if (c->writing) {
        conn_flush(c);
        return;
    }
    if (c->job) {
        /* Waiting for the upstream; the client may only hang up. */
        if (ev & MCP_EV_ERR)
            conn_free(c);
        else {
            char b[256];
            ssize_t n = recv(c->fd, b, sizeof b, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                conn_free(c);
        }
        return;
    }
    for (;;) {
        char buf[16384];
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            conn_free(c);
            return;
        }
        sb_add(&c->in, buf, (size_t)n);
        if (!c->head_len) {
            char *e = memmem(c->in.buf, c->in.len, "\r\n\r\n", 4);
            if (!e && c->in.len > CM_HEAD_MAX) {
                conn_answer(c, 400, "request headers over 16 KiB", NULL);
                return;
            }
            if (!e)
                continue;
            c->head_len = (size_t)(e - c->in.buf) + 4;
            if (c->head_len > CM_HEAD_MAX) {
                conn_answer(c, 400, "request headers over 16 KiB", NULL);
                return;
            }
            if (conn_head(c) < 0)
                return;
        }
        if (c->in.len > c->head_len + c->body_len) {
            conn_answer(c, 400, "more bytes than Content-Length", NULL);
            return;
        }
        if (c->in.len == c->head_len + c->body_len) {
            conn_dispatch(c);
            return;
        }
    }
}

static void on_accept(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)ev;
    struct gw_cm *cm = ctx;
    for (;;) {
        int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0) {
            if (errno == EINTR)
                continue;
            return; /* EAGAIN, or a transient error: the next event retries */
        }
        /* Room for it: first by dropping the oldest connection that has not
         * shown a token (a flood of request lines evicts itself), then, when
         * every slot is authenticated, by refusing the newcomer. */
        if (cm->npreauth >= CM_PREAUTH_MAX || cm->nconns >= CM_CONN_MAX) {
            struct gw_cm_conn *old = NULL;
            for (struct gw_cm_conn *o = cm->conns; o; o = o->next)
                if (!o->authed && !o->writing && !o->busy)
                    old = o; /* the list is newest first: the last match is the oldest */
            if (old)
                conn_free(old);
        }
        if (cm->nconns >= CM_CONN_MAX) {
            close(s);
            continue;
        }
        struct gw_cm_conn *c = xcalloc(1, sizeof *c);
        c->cm = cm;
        c->fd = s;
        c->epoch = cm->epoch;
        sb_init(&c->in, 0);
        sb_init(&c->out, 0);
        struct as_err err = AS_ERR_INIT;
        if (mcp_loop_add(loop, s, MCP_EV_IN, on_conn, c, &err) < 0) {
            close(s);
            sb_release(&c->in);
            sb_release(&c->out);
            free(c);
            continue;
        }
        c->next = cm->conns;
        if (cm->conns)
            cm->conns->prev = c;
        cm->conns = c;
        cm->nconns++;
        cm->npreauth++;
        conn_arm(c);
        /* A client usually sends its request with the connect: read it now,
         * so it is judged before another newcomer could evict it. */
        on_conn(loop, s, MCP_EV_IN, c);
    }
}

/* ---- the door -------------------------------------------------------------------- */

static void door_close(struct gw_cm *cm)
{
    if (cm->lfd >= 0) {
        mcp_loop_del(cm->gw->loop, cm->lfd);
        close(cm->lfd);
        cm->lfd = -1;
        cm->epoch++;
    }
    if (cm->path) {
        unlink(cm->path);
        rmdir(cm->dir);
    }
    if (cm->sf)
        gw_surface_unref(cm->sf);
    cm->sf = NULL;
    /* Connections that have not reached dispatch are refused; calls in
     * flight finish (they hold their own surface). */
    for (struct gw_cm_conn *c = cm->conns, *n; c; c = n) {
        n = c->next;
        if (!c->job && !c->writing && !c->busy)
            conn_free(c);
    }
}

static int write_file(struct gw_cm *cm, struct as_err *err)
{
    strbuf tmp = SB_INIT;
    sb_addf(&tmp, "%s.tmp", cm->path);
    unlink(tmp.buf);
    int fd = open(tmp.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        as_err_errno(err, "%s", tmp.buf);
        sb_release(&tmp);
        return -1;
    }
    strbuf s = SB_INIT;
    sb_addf(&s, "{\"url\":\"http://127.0.0.1:%d/call\",\"token\":\"%s\"}\n", cm->port, cm->token);
    ssize_t n = write(fd, s.buf, s.len);
    int rc = 0;
    if (n != (ssize_t)s.len || fchmod(fd, 0600) != 0)
        rc = as_err_errno(err, "%s", tmp.buf);
    close(fd);
    if (rc == 0 && rename(tmp.buf, cm->path) != 0)
        rc = as_err_errno(err, "%s", cm->path);
    if (rc < 0)
        unlink(tmp.buf);
    explicit_bzero(s.buf, s.len);
    sb_release(&s);
    sb_release(&tmp);
    return rc;
}

static int door_open(struct gw_cm *cm, struct gw_surface *sf, struct as_err *err)
{
    struct gw *gw = cm->gw;
    if (rand_hex(cm->token, CM_TOKEN_HEX / 2, err) < 0)
        return -1;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        return as_err_errno(err, "code-mode endpoint socket");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t al = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &al) != 0) {
        as_err_errno(err, "code-mode endpoint on 127.0.0.1");
        close(s);
        return -1;
    }
    cm->port = ntohs(a.sin_port);
    if (!cm->dir) {
        strbuf d = SB_INIT;
        sb_addf(&d, "%s/gateway", gw->home);
        if (fs_private_dir(d.buf, err) < 0) { /* re-tightened, never a symlink */
            sb_release(&d);
            close(s);
            return -1;
        }
        sb_addf(&d, "/%ld", (long)getpid());
        cm->dir = sb_detach(&d, NULL);
        cm->path = xasprintf("%s/endpoint.json", cm->dir);
    }
    if (mkdir(cm->dir, 0700) != 0 && errno != EEXIST) {
        as_err_errno(err, "%s", cm->dir);
        close(s);
        return -1;
    }
    struct stat st;
    if (lstat(cm->dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        as_err_set(err, "%s: not a directory of this user", cm->dir);
        close(s);
        return -1;
    }
    chmod(cm->dir, 0700);
    if (mcp_loop_add(gw->loop, s, MCP_EV_IN, on_accept, cm, err) < 0) {
        close(s);
        return -1;
    }
    cm->lfd = s;
    cm->epoch++;
    if (write_file(cm, err) < 0) {
        door_close(cm);
        return -1;
    }
    cm->sf = sf;
    gw_surface_ref(sf);
    return 0;
}

static void face_close(struct gw_cm *cm);

/* How long a connection may stall mid-request or mid-answer before it is
 * dropped: 10 s, or AGENTSTACK_CODEMODE_IDLE_MS (tests shorten it to see a
 * slowloris client dropped without waiting). */
static uint64_t cm_idle_ms(void)
{
    const char *im = getenv("AGENTSTACK_CODEMODE_IDLE_MS");
    long v = im && *im ? atol(im) : 0;
    return v > 0 ? (uint64_t)v : CM_IDLE_MS_DEFAULT;
}

/* The head deadline: 2 s, never longer than the idle limit (so the tests'
 * short AGENTSTACK_CODEMODE_IDLE_MS shortens it too). */
static uint64_t cm_head_ms(uint64_t idle)
{
    return idle < CM_HEAD_MS_DEFAULT ? idle : CM_HEAD_MS_DEFAULT;
}

void gw_cm_sync(struct gw *gw)
{
    if (gw->shutting_down && gw->face)
        face_close(gw->face);
    struct gw_surface *sf = gw->shutting_down ? NULL : gw->cur;
    /* One endpoint.json per process: an HTTP session (docs/gateway.md,
     * "Serving over HTTP") opens none. */
    bool want = !gw->on_stop && sf && sf->gate == GW_GATE_OPEN && sf->ups.n > 0;
    struct gw_cm *cm = gw->cm;
    if (!cm) {
        if (!want)
            return;
        cm = gw->cm = xcalloc(1, sizeof *cm);
        cm->gw = gw;
        cm->lfd = -1;
        cm->idle_ms = cm_idle_ms();
        cm->head_ms = cm_head_ms(cm->idle_ms);
    }
    if (want && cm->lfd >= 0 && cm->sf == sf)
        return;
    door_close(cm);
    free(cm->why_closed);
    cm->why_closed = NULL;
    if (!want)
        return;
    struct as_err err = AS_ERR_INIT;
    if (door_open(cm, sf, &err) < 0) {
        cm->why_closed = xstrdup(err.msg);
        gw_note("code mode: the loopback endpoint could not start (%s)", err.msg);
    }
}

const char *gw_cm_path(const struct gw *gw)
{
    return gw->cm && gw->cm->lfd >= 0 ? gw->cm->path : NULL;
}

static void face_free(struct gw *gw);

void gw_cm_free(struct gw *gw)
{
    face_free(gw);
    struct gw_cm *cm = gw->cm;
    if (!cm)
        return;
    door_close(cm);
    while (cm->conns)
        conn_free(cm->conns);
    free(cm->dir);
    free(cm->path);
    free(cm->why_closed);
    explicit_bzero(cm->token, sizeof cm->token);
    free(cm);
    gw->cm = NULL;
}

/* ---- the sandbox face -------------------------------------------------------------- */

static json_t *rpc_new(json_t *id)
{
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    json_object_set(m, "id", id ? id : json_null());
    return m;
}

static json_t *rpc_result(json_t *id, json_t *result /* stolen */)
{
    json_t *m = rpc_new(id);
    json_object_set_new(m, "result", result);
    return m;
}

static json_t *rpc_error(json_t *id, int code, const char *msg)
{
    json_t *m = rpc_new(id);
    json_t *e = json_object();
    json_object_set_new(e, "code", json_integer(code));
    json_object_set_new(e, "message", json_string(msg));
    json_object_set_new(m, "error", e);
    return m;
}

/* Control-plane names and anything the surface does not proxy get the same
 * answer: the face is a window on the project's servers only. */
static json_t *face_unknown(const char *name)
{
    strbuf n = SB_INIT;
    gw_one_line(name, 200, &n);
    json_t *r = gw_error_result("'%s' is not a proxied tool for this project", n.buf);
    sb_release(&n);
    return r;
}

static void face_list_finish(struct gw *gw, struct job *j)
{
    struct gw_cm_conn *c = j->http;
    j->http = NULL;
    if (c) {
        c->job = NULL;
        json_t *tools = json_array();
        if (j->sf && j->sf->gate == GW_GATE_OPEN) {
            gw_toolvec v = {0};
            gw_surface_allowed(j->sf, &v);
            for (size_t i = 0; i < v.n; i++) {
                json_t *o = json_object();
                json_object_set_new(o, "name", json_string(v.v[i]->full));
                json_object_set_new(o, "description", json_string(v.v[i]->desc));
                json_object_set_new(o, "inputSchema", json_deep_copy(v.v[i]->schema));
                mcp_tool_for_version(o, v.v[i]->extra, MCP_VERSION_DEFAULT);
                json_array_append_new(tools, o);
            }
            vec_free(&v);
        }
        json_t *r = json_object();
        json_object_set_new(r, "tools", tools);
        conn_answer(c, 200, NULL, rpc_result(c->rpc_id, r));
    }
    (void)gw;
    gw_job_free(j);
}

static void face_reply(struct gw_cm_conn *c, struct job *j, json_t *result)
{
    if (!result) {
        conn_answer(c, 200, NULL, rpc_error(c->rpc_id, MCP_INTERNAL_ERROR, "the call failed"));
        return;
    }
    if (j->unknown) {
        json_decref(result);
        result = face_unknown(c->tool ? c->tool : "");
    }
    conn_answer(c, 200, NULL, rpc_result(c->rpc_id, result));
}

static void face_initialize(struct gw_cm_conn *c, const json_t *params)
{
    const char *pv = json_string_value(json_object_get(params, "protocolVersion"));
    json_t *r = json_object();
    json_object_set_new(r, "protocolVersion",
                        json_string(pv && mcp_version_known(pv) ? pv : MCP_VERSION_DEFAULT));
    json_t *tools = json_object();
    json_object_set_new(tools, "listChanged", json_false());
    json_t *caps = json_object();
    json_object_set_new(caps, "tools", tools);
    json_object_set_new(r, "capabilities", caps);
    json_t *info = json_object();
    json_object_set_new(info, "name", json_string("agentstack-gateway"));
    const char *ver = c->cm->gw->o.version;
    json_object_set_new(info, "version", json_string(ver ? ver : ""));
    json_object_set_new(r, "serverInfo", info);
    conn_answer(c, 200, NULL, rpc_result(c->rpc_id, r));
}

static void face_dispatch(struct gw_cm_conn *c)
{
    struct gw *gw = c->cm->gw;
    json_error_t je;
    json_t *req = json_loadb(c->in.buf + c->head_len, c->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!req) {
        conn_answer(c, 400, NULL, rpc_error(NULL, -32700, "parse error: not JSON"));
        return;
    }
    const char *method = json_string_value(json_object_get(req, "method"));
    const char *ver = json_string_value(json_object_get(req, "jsonrpc"));
    if (!json_is_object(req) || !method || !ver || strcmp(ver, "2.0") != 0) {
        json_decref(req);
        conn_answer(c, 400, NULL,
                    rpc_error(NULL, -32600, "one JSON-RPC 2.0 request per POST (no batches)"));
        return;
    }
    json_t *id = json_object_get(req, "id");
    if (!id) { /* a notification: stateless, nothing to keep */
        json_decref(req);
        conn_answer(c, 202, NULL, NULL);
        return;
    }
    c->rpc_id = json_incref(id);
    json_t *params = json_object_get(req, "params");
    if (strcmp(method, "initialize") == 0) {
        face_initialize(c, params);
    } else if (strcmp(method, "ping") == 0) {
        conn_answer(c, 200, NULL, rpc_result(c->rpc_id, json_object()));
    } else if (strcmp(method, "tools/list") == 0) {
        c->busy = true;
        gw_refresh(gw, false, false);
        c->busy = false;
        struct job *j = gw_job_add(gw, "tools/list");
        j->via_http = true;
        j->sf = gw_surface_for(gw, false);
        if (j->sf)
            gw_surface_ref(j->sf);
        j->http = c;
        c->job = j;
        conn_disarm(c);
        if (j->sf && j->sf->gate == GW_GATE_OPEN)
            gw_surface_discover(j->sf, face_list_finish, j);
        else
            face_list_finish(gw, j);
    } else if (strcmp(method, "tools/call") == 0) {
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        if (!name || (args && !json_is_object(args) && !json_is_null(args))) {
            conn_answer(c, 200, NULL,
                        rpc_error(c->rpc_id, MCP_INVALID_PARAMS,
                                  "tools/call needs {\"name\": string, \"arguments\": object}"));
        } else if (!strstr(name, "__")) {
            /* Control-plane names never contain "__": not served here. */
            conn_answer(c, 200, NULL, rpc_result(c->rpc_id, face_unknown(name)));
        } else {
            struct job *j = gw_job_add(gw, "tools/call");
            j->via_http = true;
            j->name = xstrdup(name);
            j->args = json_is_object(args) ? json_incref(args) : json_object();
            c->tool = xstrdup(name);
            c->busy = true;
            gw_refresh(gw, false, false);
            c->busy = false;
            c->job = j;
            j->http = c;
            conn_disarm(c);
            gw_dispatch(gw, j); /* replies through gw_cm_reply → face_reply */
        }
    } else {
        conn_answer(
            c, 200, NULL,
            rpc_error(c->rpc_id, MCP_METHOD_NOT_FOUND, "method not served by the sandbox face"));
    }
    json_decref(req);
}

static void face_close(struct gw_cm *cm)
{
    if (cm->lfd >= 0) {
        mcp_loop_del(cm->gw->loop, cm->lfd);
        close(cm->lfd);
        cm->lfd = -1;
        cm->epoch++;
    }
    for (struct gw_cm_conn *c = cm->conns, *n; c; c = n) {
        n = c->next;
        if (!c->job && !c->writing && !c->busy)
            conn_free(c);
    }
}

static void face_free(struct gw *gw)
{
    struct gw_cm *cm = gw->face;
    if (!cm)
        return;
    face_close(cm);
    while (cm->conns)
        conn_free(cm->conns);
    explicit_bzero(cm->token, sizeof cm->token);
    free(cm);
    gw->face = NULL;
}

static bool is_hex64(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return i == CM_TOKEN_HEX;
}

void gw_face_open(struct gw *gw)
{
    const char *fs = getenv(FACE_ENV_FD);
    const char *ts = getenv(FACE_ENV_TOKEN);
    char token[CM_TOKEN_HEX + 1] = "";
    bool tok_ok = ts && is_hex64(ts);
    if (tok_ok)
        memcpy(token, ts, sizeof token);
    char *end = NULL;
    long fd = fs && *fs ? strtol(fs, &end, 10) : -1;
    bool fd_named = fs != NULL;
    unsetenv(FACE_ENV_FD); /* nothing we spawn inherits the door */
    unsetenv(FACE_ENV_TOKEN);
    if (!fd_named)
        return;
    const char *why = NULL;
    int acc = 0;
    socklen_t al = sizeof acc;
    if (fd <= 2 || fd > 65535 || !end || *end)
        why = "the descriptor is not a number above 2";
    else if (getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) != 0 || !acc)
        why = "the descriptor is not a listening socket";
    else if (!tok_ok)
        why = "the token is not 64 lowercase hex digits";
    else if (!gw->grant)
        why = "it is served only with a --grant that proved itself";
    struct gw_cm *cm = NULL;
    if (!why) {
        fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        int fl = fcntl((int)fd, F_GETFL);
        fcntl((int)fd, F_SETFL, (fl < 0 ? 0 : fl) | O_NONBLOCK);
        cm = xcalloc(1, sizeof *cm);
        cm->gw = gw;
        cm->face = true;
        cm->lfd = (int)fd;
        cm->epoch = 1;
        memcpy(cm->token, token, sizeof cm->token);
        cm->idle_ms = cm_idle_ms();
        cm->head_ms = cm_head_ms(cm->idle_ms);
        struct as_err err = AS_ERR_INIT;
        if (mcp_loop_add(gw->loop, cm->lfd, MCP_EV_IN, on_accept, cm, &err) < 0) {
            gw_note("sandbox face: not served (%s)", err.msg);
            explicit_bzero(cm->token, sizeof cm->token);
            free(cm);
            cm = NULL;
            close((int)fd);
        }
    } else {
        gw_note("sandbox face: not served (%s)", why);
        if (fd > 2 && fd <= 65535 && end && !*end)
            close((int)fd);
    }
    explicit_bzero(token, sizeof token);
    gw->face = cm;
}

/* ---- tools_bindings --------------------------------------------------------------------- */

/* The shim is the same bytes on every gateway: where to call, and with which
 * token, is read from endpoint.json at call time, so no secret and no port
 * is ever part of what an agent copies into its workspace. */
static const char shim_ts[] =
    "// agentstack-shim.ts: static; reads the endpoint at every call so a restarted\n"
    "// gateway is picked up. Never print or commit the token it reads.\n"
    "import { readFileSync } from \"node:fs\";\n"
    "\n"
    "export async function call(name: string, input: unknown): Promise<unknown> {\n"
    "  const path = process.env.AGENTSTACK_CODEMODE_ENDPOINT;\n"
    "  if (!path) {\n"
    "    throw new Error(\"set AGENTSTACK_CODEMODE_ENDPOINT to the endpoint.json path "
    "tools_bindings names\");\n"
    "  }\n"
    "  const { url, token } = JSON.parse(readFileSync(path, \"utf8\"));\n"
    "  const res = await fetch(url, {\n"
    "    method: \"POST\",\n"
    "    headers: { \"content-type\": \"application/json\", \"x-agentstack-token\": token },\n"
    "    body: JSON.stringify({ name, arguments: input ?? {} }),\n"
    "  });\n"
    "  const body: any = await res.json().catch(() => ({}));\n"
    "  if (!res.ok) throw new Error(`${name}: ${body.error ?? \"HTTP \" + res.status}`);\n"
    "  return body.result;\n"
    "}\n";

static bool ts_ident(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '$'))
            return false;
    return true;
}

/* A JSON string literal is a valid TypeScript one. */
static void ts_quote(const char *s, strbuf *out)
{
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    sb_adds(out, t ? t : "\"\"");
    free(t);
    json_decref(j);
}

static void ts_key(const char *s, strbuf *out)
{
    if (ts_ident(s))
        sb_adds(out, s);
    else
        ts_quote(s, out);
}

static void ts_scalar(const char *type, strbuf *out)
{
    if (strcmp(type, "string") == 0)
        sb_adds(out, "string");
    else if (strcmp(type, "number") == 0 || strcmp(type, "integer") == 0)
        sb_adds(out, "number");
    else if (strcmp(type, "boolean") == 0)
        sb_adds(out, "boolean");
    else if (strcmp(type, "array") == 0)
        sb_adds(out, "unknown[]");
    else if (strcmp(type, "object") == 0)
        sb_adds(out, "Record<string, unknown>");
    else if (strcmp(type, "null") == 0)
        sb_adds(out, "null");
    else
        sb_adds(out, "unknown");
}

/* Shallow: one level of properties; anything deeper is unknown[]/Record. */
static void ts_type(const json_t *s, strbuf *out)
{
    const json_t *en = json_object_get(s, "enum");
    if (json_is_array(en) && json_array_size(en) > 0) {
        size_t i;
        const json_t *v;
        bool all = true;
        json_array_foreach(en, i, v) all = all && json_is_string(v);
        if (all) {
            json_array_foreach(en, i, v)
            {
                if (i)
                    sb_adds(out, " | ");
                ts_quote(json_string_value(v), out);
            }
            return;
        }
    }
    const json_t *t = json_object_get(s, "type");
    if (json_is_string(t)) {
        ts_scalar(json_string_value(t), out);
        return;
    }
    if (json_is_array(t) && json_array_size(t) > 0) {
        size_t i;
        const json_t *v;
        json_array_foreach(t, i, v)
        {
            if (i)
                sb_adds(out, " | ");
            ts_scalar(json_is_string(v) ? json_string_value(v) : "", out);
        }
        return;
    }
    sb_adds(out, "unknown");
}

static void ts_input(const json_t *schema, strbuf *out)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props) || json_object_size(props) == 0) {
        sb_adds(out, "Record<string, unknown>");
        return;
    }
    const json_t *req = json_object_get(schema, "required");
    sb_adds(out, "{ ");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        bool required = false;
        size_t i;
        const json_t *r;
        json_array_foreach(req, i, r) required =
            required || (json_is_string(r) && strcmp(json_string_value(r), k) == 0);
        ts_key(k, out);
        sb_adds(out, required ? ": " : "?: ");
        ts_type(v, out);
        sb_adds(out, "; ");
    }
    sb_adds(out, "}");
}

static int by_server_tool(const void *a, const void *b)
{
    const struct gw_tool *x = *(const struct gw_tool *const *)a;
    const struct gw_tool *y = *(const struct gw_tool *const *)b;
    int c = strcmp(x->server, y->server);
    return c ? c : strcmp(x->name, y->name);
}

/* A comment must not be able to end itself early. */
static void ts_comment(const char *s, strbuf *out)
{
    for (const char *p = s; *p; p++) {
        sb_addc(out, *p);
        if (p[0] == '*' && p[1] == '/')
            sb_addc(out, ' ');
    }
}

void gw_bindings_render(const struct gw_tool *const *tools, size_t n, const char *endpoint_path,
                        strbuf *out)
{
    const struct gw_tool **v = xcalloc(n + 1, sizeof *v);
    memcpy(v, tools, n * sizeof *v);
    qsort(v, n, sizeof *v, by_server_tool);
    sb_addf(out, "# Code-mode bindings: %zu proxied tool(s)\n\n", n);
    sb_adds(out, "Recipe: save the two files below next to your script (this tool writes "
                 "nothing), then\n\n");
    if (endpoint_path)
        sb_addf(out, "    export AGENTSTACK_CODEMODE_ENDPOINT='%s'\n\n", endpoint_path);
    else
        sb_adds(out,
                "    (no endpoint is open: this gateway proxies no upstream tool right now)\n\n");
    sb_adds(out,
            "and run it with a TypeScript runtime that has fetch (e.g. `npx tsx script.ts`):\n\n"
            "    import { codemode } from \"./client\";\n"
            "    const result = await codemode.server.tool({ /* input */ });\n\n"
            "Every call goes through this gateway: the same policy and the same audit as "
            "tools/call. endpoint.json holds a per-gateway token: never print or commit it. "
            "It exists while this gateway proxies upstream tools and is removed when the "
            "gateway exits or its tool set changes; a refusal comes back as an error.\n\n");
    sb_adds(out, "## client.ts\n\n```ts\n");
    sb_adds(out, "// Generated by agentstack tools_bindings. Calls go through the gateway.\n"
                 "import { call } from \"./agentstack-shim\";\n\n"
                 "export const codemode = {\n");
    for (size_t i = 0; i < n;) {
        const char *server = v[i]->server;
        sb_adds(out, "  ");
        ts_key(server, out);
        sb_adds(out, ": {\n");
        for (; i < n && strcmp(v[i]->server, server) == 0; i++) {
            const struct gw_tool *t = v[i];
            if (t->desc && *t->desc) {
                sb_adds(out, "    /** ");
                ts_comment(t->desc, out);
                sb_adds(out, " */\n");
            }
            sb_adds(out, "    ");
            ts_key(t->name, out);
            sb_adds(out, ": (input: ");
            ts_input(t->schema, out);
            sb_adds(out, "): Promise<unknown> => call(");
            ts_quote(t->full, out);
            sb_adds(out, ", input),\n");
        }
        sb_adds(out, "  },\n");
    }
    sb_adds(out, "};\n```\n\n## agentstack-shim.ts\n\n```ts\n");
    sb_adds(out, shim_ts);
    sb_adds(out, "```\n");
    free(v);
}
