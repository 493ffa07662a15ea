/*
 * The egress proxy's event loop (see proxy.h). One epoll set holds the
 * listeners, the resolver's result pipe, the caller's wake fds and both
 * sockets of every connection. Connections live in a fixed slot table;
 * epoll tags carry the slot's generation so an event for a slot that was
 * closed and reused in the same batch is ignored.
 */
#include "egress/proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "policy/policy.h"
#include "egress/connect.h"

#define MAX_ADDRS 8
#define FDS_PER_TUNNEL 2 /* client, upstream */

/* One direction of a tunnel: bytes read from one socket and not yet
 * written to the other, b[off, off + len). Allocated at the first byte,
 * 64 KiB, grown (up to 1 MiB) each time a read fills it: a bulk transfer
 * then moves more per system call, while an idle or interactive tunnel
 * holds 64 KiB a direction at most. Freed when the tunnel closes.
 * (Copying through a buffer measured faster than splice(2) through a pipe
 * on the machines we bench; docs/performance.md, "Proxy throughput".) */
#define RELAY_BUF_START (64u << 10)
#define RELAY_BUF_MAX (1u << 20)
struct relay_buf {
    uint8_t *b;
    size_t cap, off, len;
};

enum cstate { C_FREE = 0, C_HEAD, C_RESOLVE, C_DIAL, C_REPLY, C_FLIGHT, C_RELAY };
enum tag { T_CLIENT = 0, T_UPSTREAM = 1, T_LISTENER = 2, T_MISC = 3 };

struct conn {
    enum cstate st;
    uint32_t gen;
    int cfd, ufd;
    uint32_t cev, uev; /* epoll interest currently registered */
    int creg, ureg;    /* registered in epoll */
    strbuf in;         /* client bytes: head, then first flight */
    strbuf cout;       /* bytes owed to the client (status lines) */
    size_t cout_off;
    strbuf uout; /* bytes owed upstream (flight / rewritten head) */
    size_t uout_off;
    struct sbx_request req;
    char host[SBX_HOST_MAX];
    int64_t deadline; /* ms, monotonic; 0 = none */
    int64_t last_active;
    struct relay_buf cu, uc; /* tunnel bytes client->upstream, upstream->client */
    int c_eof, u_eof, c_shut, u_shut;
    int recorded;
    struct sbx_verdict allow; /* the policy's allow, named in the final event */
    struct sbx_body body;     /* plain HTTP: where the one request forwarded ends */
    int body_done;            /* plain HTTP: it ended; later client bytes are dropped */
};

struct rjob {
    uint32_t slot, gen;
    char host[SBX_HOST_MAX];
    int port;
    int n;
    struct sockaddr_storage addrs[MAX_ADDRS];
    socklen_t lens[MAX_ADDRS];
    char err[160];
    sbx_resolve_fn fn;
    void *ctx;
    int wfd;
};

struct sbx_proxy {
    struct sbx_proxy_opts o;
    char *identity;
    strbuf auth; /* expected Proxy-Authorization value */
    int has_auth;
    int ep;
    int rpipe[2]; /* resolver results */
    int *listeners;
    size_t nlisteners;
    int listeners_paused;
    struct conn *conns;
    int nconns; /* slot table size */
    int active;
    int64_t next_scan;
    pthread_mutex_t jobs_mu;
    pthread_cond_t jobs_cv;
    int jobs_out; /* resolver threads still running */
    unsigned long accepted, refused_cap, allowed, denied;
    char **gw_hosts;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mktag(enum tag t, uint32_t idx, uint32_t gen)
{
    return (uint64_t)gen << 32 | (uint64_t)idx << 2 | (uint64_t)t;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- registration -------------------------------------------------------- */

static void reg(struct sbx_proxy *p, struct conn *c, int upstream, uint32_t ev)
{
    int fd = upstream ? c->ufd : c->cfd;
    int *isreg = upstream ? &c->ureg : &c->creg;
    uint32_t *cur = upstream ? &c->uev : &c->cev;
    if (fd < 0)
        return;
    if (*isreg && *cur == ev)
        return;
    struct epoll_event e = {.events = ev};
    e.data.u64 = mktag(upstream ? T_UPSTREAM : T_CLIENT, (uint32_t)(c - p->conns), c->gen);
    if (epoll_ctl(p->ep, *isreg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &e) == 0) {
        *isreg = 1;
        *cur = ev;
    }
}

/* Stops watching one socket: epoll reports HUP/ERR even for an empty
 * interest set, which would spin while a connection waits on something else. */
static void unreg(struct sbx_proxy *p, struct conn *c, int upstream)
{
    int fd = upstream ? c->ufd : c->cfd;
    int *isreg = upstream ? &c->ureg : &c->creg;
    if (fd >= 0 && *isreg)
        epoll_ctl(p->ep, EPOLL_CTL_DEL, fd, NULL);
    *isreg = 0;
    if (upstream)
        c->uev = 0;
    else
        c->cev = 0;
}

static void pause_listeners(struct sbx_proxy *p, int pause)
{
    if (p->listeners_paused == pause)
        return;
    for (size_t i = 0; i < p->nlisteners; i++) {
        if (p->listeners[i] < 0)
            continue;
        struct epoll_event e = {.events = pause ? 0 : EPOLLIN};
        e.data.u64 = mktag(T_LISTENER, (uint32_t)i, 0);
        epoll_ctl(p->ep, EPOLL_CTL_MOD, p->listeners[i], &e);
    }
    p->listeners_paused = pause;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void conn_close(struct sbx_proxy *p, struct conn *c)
{
    if (c->st == C_FREE)
        return;
    close_fd(&c->cfd);
    close_fd(&c->ufd);
    free(c->cu.b);
    free(c->uc.b);
    sb_release(&c->in);
    sb_release(&c->cout);
    sb_release(&c->uout);
    uint32_t gen = c->gen + 1;
    memset(c, 0, sizeof *c);
    c->gen = gen;
    c->cfd = c->ufd = -1;
    c->st = C_FREE;
    p->active--;
    pause_listeners(p, 0);
}

static void conn_init_slot(struct conn *c)
{
    memset(c, 0, sizeof *c);
    c->cfd = c->ufd = -1;
}

/* ---- evidence ------------------------------------------------------------ */

/* Records the connection's one event. Returns -1 when the write failed. */
static int record(struct sbx_proxy *p, struct conn *c, const struct sbx_verdict *v)
{
    if (c->recorded)
        return 0;
    c->recorded = 1;
    if (v->allowed)
        p->allowed++;
    else
        p->denied++;
    if (!p->o.record)
        return 0;
    struct sbx_egress_event ev = {
        .identity = p->identity,
        .host = c->host[0] ? c->host : c->req.host,
        .port = c->req.port,
        .kind = c->req.kind == SBX_REQ_HTTP ? "http" : "connect",
        .v = v,
    };
    return p->o.record(p->o.record_ctx, &ev);
}

static void verdict_deny(struct sbx_verdict *v, const char *layer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verdict_deny(struct sbx_verdict *v, const char *layer, const char *fmt, ...)
{
    memset(v, 0, sizeof *v);
    snprintf(v->layer, sizeof v->layer, "%s", layer);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->rule, sizeof v->rule, fmt, ap);
    va_end(ap);
}

/* Answers with a status line, then closes once it is written. */
static void reply_close(struct sbx_proxy *p, struct conn *c, const char *status)
{
    sb_reset(&c->cout);
    c->cout_off = 0;
    sb_adds(&c->cout, status);
    close_fd(&c->ufd);
    c->ureg = 0;
    c->st = C_REPLY;
    c->deadline = now_ms() + 5000;
    reg(p, c, 0, EPOLLOUT);
}

static void deny_reply(struct sbx_proxy *p, struct conn *c, const char *status,
                       const struct sbx_verdict *v)
{
    record(p, c, v);
    reply_close(p, c, status);
}

#define ST_400 "HTTP/1.1 400 Bad Request\r\n\r\n"
#define ST_403 "HTTP/1.1 403 Forbidden\r\n\r\n"
#define ST_407                                                                                     \
    "HTTP/1.1 407 Proxy Authentication Required\r\n"                                               \
    "Proxy-Authenticate: Basic realm=\"agentstack\"\r\n\r\n"
#define ST_502 "HTTP/1.1 502 Bad Gateway\r\n\r\n"
#define ST_200 "HTTP/1.1 200 Connection Established\r\n\r\n"

/* ---- resolution ---------------------------------------------------------- */

static int default_resolve(void *ctx, const char *host, int port, struct sockaddr_storage *addrs,
                           socklen_t *lens, int max, char *errbuf, size_t errsz)
{
    (void)ctx;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    char svc[8];
    snprintf(svc, sizeof svc, "%d", port);
    int rc = getaddrinfo(host, svc, &hints, &res);
    if (rc != 0) {
        snprintf(errbuf, errsz, "%s", rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -1;
    }
    int n = 0;
    for (struct addrinfo *ai = res; ai && n < max; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(struct sockaddr_storage))
            continue;
        memcpy(&addrs[n], ai->ai_addr, ai->ai_addrlen);
        lens[n] = ai->ai_addrlen;
        n++;
    }
    freeaddrinfo(res);
    if (n == 0)
        snprintf(errbuf, errsz, "no addresses");
    return n ? n : -1;
}

static void *resolve_thread(void *arg)
{
    struct rjob *j = arg;
    j->n = j->fn(j->ctx, j->host, j->port, j->addrs, j->lens, MAX_ADDRS, j->err, sizeof j->err);
    /* A pointer is smaller than PIPE_BUF, so the write is atomic. */
    ssize_t w;
    do
        w = write(j->wfd, &j, sizeof j);
    while (w < 0 && errno == EINTR);
    return NULL;
}

static void start_resolve(struct sbx_proxy *p, struct conn *c)
{
    struct rjob *j = xcalloc(1, sizeof *j);
    j->slot = (uint32_t)(c - p->conns);
    j->gen = c->gen;
    snprintf(j->host, sizeof j->host, "%s", c->host);
    j->port = c->req.port;
    j->fn = p->o.resolve ? p->o.resolve : default_resolve;
    j->ctx = p->o.resolve_ctx;
    j->wfd = p->rpipe[1];
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 * 1024);
    pthread_t t;
    pthread_mutex_lock(&p->jobs_mu);
    p->jobs_out++;
    pthread_mutex_unlock(&p->jobs_mu);
    c->st = C_RESOLVE;
    c->deadline = now_ms() + p->o.resolve_timeout_ms;
    unreg(p, c, 0); /* the client is not read again until the verdict */
    if (pthread_create(&t, &at, resolve_thread, j) != 0) {
        /* No thread: answer inline (bounded by the resolver's own timeouts). */
        resolve_thread(j);
    }
    pthread_attr_destroy(&at);
}

static void begin_dial(struct sbx_proxy *p, struct conn *c, struct sockaddr_storage *sa,
                       socklen_t len);

static void resolve_done(struct sbx_proxy *p, struct rjob *j)
{
    pthread_mutex_lock(&p->jobs_mu);
    p->jobs_out--;
    pthread_cond_broadcast(&p->jobs_cv);
    pthread_mutex_unlock(&p->jobs_mu);
    if (j->slot >= (uint32_t)p->nconns)
        goto out;
    struct conn *c = &p->conns[j->slot];
    if (c->gen != j->gen || c->st != C_RESOLVE)
        goto out; /* timed out or closed meanwhile */
    struct sbx_verdict v;
    if (j->n <= 0) {
        verdict_deny(&v, "proxy", "could not resolve '%s': %s", c->host, j->err);
        deny_reply(p, c, ST_403, &v);
        goto out;
    }
    struct sbx_verdict by_rule;
    by_rule.allowed = 1;
    for (int i = 0; i < j->n; i++) {
        const struct sockaddr *sa = (const struct sockaddr *)&j->addrs[i];
        if (!p->o.allow_local && pol_addr_local_class(sa))
            continue;
        if (p->o.decide_addr) {
            struct sbx_verdict av;
            memset(&av, 0, sizeof av);
            if (p->o.decide_addr(p->o.decide_ctx, p->identity, c->host, sa, c->req.port, &av) < 0 ||
                !av.allowed) {
                if (by_rule.allowed)
                    by_rule = av;
                continue;
            }
        }
        begin_dial(p, c, &j->addrs[i], j->lens[i]);
        goto out;
    }
    if (!by_rule.allowed) {
        /* An address a rule names: that rule is the reason, with its layer. */
        by_rule.allowed = 0;
        if (!by_rule.rule[0])
            snprintf(by_rule.rule, sizeof by_rule.rule, "denied by [policy.egress]");
        if (!by_rule.layer[0])
            snprintf(by_rule.layer, sizeof by_rule.layer, "machine");
        deny_reply(p, c, ST_403, &by_rule);
        goto out;
    }
    char list[160] = "";
    for (int i = 0; i < j->n && i < 3; i++) {
        char a[64];
        sbx_addr_str((struct sockaddr *)&j->addrs[i], a, sizeof a);
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", a);
    }
    verdict_deny(&v, "proxy",
                 "'%s' resolves only to non-global addresses (%s) — refused (SSRF guard)", c->host,
                 list);
    deny_reply(p, c, ST_403, &v);
out:
    free(j);
}

/* ---- the pipeline ---------------------------------------------------------- */

static void allow_verdict(struct sbx_verdict *v, const struct sbx_verdict *policy)
{
    memset(v, 0, sizeof *v);
    v->allowed = 1;
    snprintf(v->layer, sizeof v->layer, "%s", policy->layer[0] ? policy->layer : "default");
    snprintf(v->pattern, sizeof v->pattern, "%s", policy->pattern);
}

static int is_gateway_only(struct sbx_proxy *p, const char *host)
{
    for (char **h = p->gw_hosts; h && *h; h++)
        if (strcmp(*h, host) == 0)
            return 1;
    return 0;
}

static void process_head(struct sbx_proxy *p, struct conn *c, size_t hlen)
{
    const char *why = NULL;
    struct sbx_verdict v;
    if (sbx_parse_head(c->in.buf, hlen, &c->req, &why) < 0) {
        reply_close(p, c, ST_400);
        return;
    }
    if (p->has_auth && !sbx_head_auth_ok(c->in.buf, hlen, p->auth.buf)) {
        verdict_deny(&v, "proxy", "%s", SBX_RULE_CREDENTIALS);
        if (sbx_host_normalize(c->req.host, c->req.host_bracketed, c->host) < 0)
            c->host[0] = '\0';
        deny_reply(p, c, ST_407, &v);
        return;
    }
    if (sbx_host_normalize(c->req.host, c->req.host_bracketed, c->host) < 0) {
        c->host[0] = '\0';
        verdict_deny(&v, "proxy",
                     "non-canonical host '%.200s' refused (hosts are ASCII "
                     "letters, digits, '-', '_' and dots, or a bracketed IPv6 address)",
                     c->req.host);
        deny_reply(p, c, ST_403, &v);
        return;
    }
    if (p->o.lockdown && sbx_host_is_numeric(c->host)) {
        verdict_deny(&v, "proxy", "%s", SBX_RULE_LITERAL_IP);
        deny_reply(p, c, ST_403, &v);
        return;
    }
    if (is_gateway_only(p, c->host)) {
        verdict_deny(&v, "proxy",
                     "'%s' is a declared MCP server host: under lockdown it is "
                     "reachable only through the gateway relay",
                     c->host);
        deny_reply(p, c, ST_403, &v);
        return;
    }
    struct sbx_verdict pv;
    memset(&pv, 0, sizeof pv);
    pv.allowed = 1;
    if (p->o.decide) {
        pv.allowed = 0;
        if (p->o.decide(p->o.decide_ctx, p->identity, c->host, c->req.port, &pv) < 0)
            pv.allowed = 0; /* a failing decision is a deny */
        if (!pv.allowed) {
            if (!pv.rule[0])
                snprintf(pv.rule, sizeof pv.rule, "denied by [policy.egress]");
            if (!pv.layer[0])
                snprintf(pv.layer, sizeof pv.layer, "machine");
            deny_reply(p, c, ST_403, &pv);
            return;
        }
    }
    allow_verdict(&c->allow, &pv);
    start_resolve(p, c);
}

static void enter_relay(struct sbx_proxy *p, struct conn *c);
static void flight_check(struct sbx_proxy *p, struct conn *c, int stopped, int eof);

static void begin_dial(struct sbx_proxy *p, struct conn *c, struct sockaddr_storage *sa,
                       socklen_t len)
{
    struct sbx_verdict v;
    if (p->o.dial)
        p->o.dial(p->o.dial_ctx, sa, &len);
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        verdict_deny(&v, "proxy", "upstream connect failed (%s)", strerror(errno));
        deny_reply(p, c, ST_502, &v);
        return;
    }
    c->ufd = fd;
    c->ureg = 0;
    if (connect(fd, (struct sockaddr *)sa, len) < 0 && errno != EINPROGRESS) {
        verdict_deny(&v, "proxy", "upstream connect failed (%s)", strerror(errno));
        deny_reply(p, c, ST_502, &v);
        return;
    }
    c->st = C_DIAL;
    c->deadline = now_ms() + p->o.dial_timeout_ms;
    reg(p, c, 1, EPOLLOUT);
}

static void dial_done(struct sbx_proxy *p, struct conn *c)
{
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    struct sbx_verdict v;
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        soerr = errno;
    if (soerr) {
        verdict_deny(&v, "proxy", "upstream connect failed (%s)", strerror(soerr));
        deny_reply(p, c, ST_502, &v);
        return;
    }
    int one = 1;
    setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sb_reset(&c->uout);
    c->uout_off = 0;
    size_t hlen = c->req.head_len;
    if (c->req.kind == SBX_REQ_HTTP) {
        if (record(p, c, &c->allow) < 0) {
            reply_close(p, c, ST_502);
            return;
        }
        /* One request per connection: the head, then only the bytes of its
         * own body — what a client pipelines after it is never forwarded. */
        sbx_http_rewrite(c->in.buf, &c->req, c->host, &c->uout);
        sbx_body_init(&c->body, &c->req);
        size_t take = 0;
        int r = sbx_body_feed(&c->body, c->in.buf + hlen, c->in.len - hlen, &take);
        if (r < 0) {
            reply_close(p, c, ST_400);
            return;
        }
        sb_add(&c->uout, c->in.buf + hlen, take);
        c->body_done = r == 1;
        sb_release(&c->in);
        enter_relay(p, c);
        return;
    }
    /* CONNECT: nothing goes upstream until the first flight is judged. */
    memmove(c->in.buf, c->in.buf + hlen, c->in.len - hlen);
    sb_setlen(&c->in, c->in.len - hlen);
    sb_reset(&c->cout);
    c->cout_off = 0;
    sb_adds(&c->cout, ST_200);
    c->st = C_FLIGHT;
    c->deadline = now_ms() + p->o.flight_timeout_ms;
    unreg(p, c, 1);
    reg(p, c, 0, EPOLLIN | EPOLLOUT);
    flight_check(p, c, 0, 0);
}

/* Judges the first flight. stopped: no more bytes will complete the first
 * record (EOF, the deadline, or the cap); eof: the client really half-closed,
 * which the relay must carry on to the upstream. */
static void flight_check(struct sbx_proxy *p, struct conn *c, int stopped, int eof)
{
    struct sbx_hello h;
    struct sbx_verdict v;
    enum sbx_tls t = sbx_tls_client_hello((const uint8_t *)c->in.buf, c->in.len, &h);
    switch (t) {
    case SBX_TLS_NEED_MORE:
        if (!stopped && c->in.len < SBX_FLIGHT_MAX)
            return;
        if (c->in.len == 0) {
            if (p->o.lockdown) {
                verdict_deny(&v, "proxy", "%s", SBX_RULE_NON_TLS);
                goto deny;
            }
            goto allow; /* --sandbox: a server-speaks-first protocol */
        }
        verdict_deny(&v, "proxy", "%s", SBX_RULE_INCOMPLETE);
        goto deny;
    case SBX_TLS_NOT_TLS:
        if (p->o.lockdown) {
            verdict_deny(&v, "proxy", "%s", SBX_RULE_NON_TLS);
            goto deny;
        }
        goto allow;
    case SBX_TLS_UNVERIFIABLE:
        verdict_deny(&v, "proxy", "%s", SBX_RULE_UNVERIFIABLE);
        goto deny;
    case SBX_TLS_SNI:
        if (strcmp(h.sni, c->host) != 0) {
            verdict_deny(&v, "proxy", "TLS SNI '%s' does not match CONNECT host '%s'", h.sni,
                         c->host);
            goto deny;
        }
        /* A server may answer for any name of the list: all must be the host. */
        if (h.sni_other[0]) {
            verdict_deny(&v, "proxy",
                         "TLS SNI list names '%s' besides CONNECT host '%s' — every server "
                         "name must be the CONNECT host",
                         h.sni_other, c->host);
            goto deny;
        }
        /* fallthrough */
    case SBX_TLS_NO_SNI:
        if (h.has_ech && p->o.lockdown) {
            verdict_deny(&v, "proxy", "%s", SBX_RULE_ECH);
            goto deny;
        }
        goto allow;
    }
deny:
    /* After the 200, a refusal is a silent close: nothing was forwarded. */
    record(p, c, &v);
    conn_close(p, c);
    return;
allow:
    if (record(p, c, &c->allow) < 0) {
        conn_close(p, c);
        return;
    }
    sb_reset(&c->uout);
    c->uout_off = 0;
    sb_add(&c->uout, c->in.buf, c->in.len);
    sb_release(&c->in);
    if (eof)
        c->c_eof = 1;
    enter_relay(p, c);
}

/* ---- relay ------------------------------------------------------------------ */

/* Room for a read: never 0 for a buffer that is not full. */
static size_t relay_room(const struct relay_buf *r)
{
    return r->b ? r->cap - r->len : RELAY_BUF_START;
}

/* recv into r: >0 bytes, 0 at EOF, -1 with errno (EAGAIN: nothing now).
 * The caller checks relay_room first. */
static ssize_t relay_read(int fd, struct relay_buf *r)
{
    if (!r->b) {
        r->b = xmalloc(RELAY_BUF_START);
        r->cap = RELAY_BUF_START;
    }
    if (r->off && r->off + r->len == r->cap) {
        memmove(r->b, r->b + r->off, r->len);
        r->off = 0;
    }
    size_t room = r->cap - r->off - r->len;
    ssize_t n = recv(fd, r->b + r->off + r->len, room, 0);
    if (n > 0) {
        r->len += (size_t)n;
        if ((size_t)n == room && r->cap < RELAY_BUF_MAX) {
            size_t cap = r->cap * 4 > RELAY_BUF_MAX ? RELAY_BUF_MAX : r->cap * 4;
            uint8_t *nb = xmalloc(cap);
            memcpy(nb, r->b + r->off, r->len);
            free(r->b);
            r->b = nb;
            r->cap = cap;
            r->off = 0;
        }
    }
    return n;
}

/* send from r: >0 bytes, -1 with errno. */
static ssize_t relay_write(int fd, struct relay_buf *r)
{
    ssize_t n = send(fd, r->b + r->off, r->len, MSG_NOSIGNAL);
    if (n > 0) {
        r->off += (size_t)n;
        r->len -= (size_t)n;
        if (!r->len)
            r->off = 0;
    }
    return n;
}

/* Plain HTTP, client -> upstream: read here, not into the tunnel buffer, so that the
 * bytes can be measured against the request's framing. Past the end of the
 * one request, client bytes are read and dropped (never left unread, which
 * would make the close a reset that can cost the client its response).
 * Returns 1 on progress, 0 on none, -1 to close. */
static int http_client_read(struct conn *c)
{
    char buf[16384];
    ssize_t n = recv(c->cfd, buf, sizeof buf, 0);
    if (n == 0) {
        c->c_eof = 1;
        return 1;
    }
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (c->body_done)
        return 1;
    size_t take = 0;
    int r = sbx_body_feed(&c->body, buf, (size_t)n, &take);
    if (r < 0)
        return -1; /* malformed chunked framing: nothing more goes upstream */
    sb_add(&c->uout, buf, take);
    c->body_done = r == 1;
    return 1;
}

static void relay_update(struct sbx_proxy *p, struct conn *c)
{
    uint32_t ce = 0, ue = 0;
    int cout_pending = c->cout.len > c->cout_off;
    int uout_pending = c->uout.len > c->uout_off;
    if (c->req.kind == SBX_REQ_HTTP) {
        if (!c->c_eof && (c->body_done || !uout_pending))
            ce |= EPOLLIN;
    } else if (!c->c_eof && relay_room(&c->cu))
        ce |= EPOLLIN;
    if (cout_pending || c->uc.len)
        ce |= EPOLLOUT;
    if (!c->u_eof && relay_room(&c->uc))
        ue |= EPOLLIN;
    if (uout_pending || c->cu.len)
        ue |= EPOLLOUT;
    reg(p, c, 0, ce);
    reg(p, c, 1, ue);
}

/* Moves bytes until nothing more can move. Returns -1 when the connection
 * must close (error, or both directions finished). */
static int relay_pump(struct conn *c)
{
    int progress = 1, any = 0;
    /* A few rounds per wakeup: enough to move a chunk through both hops
     * without another epoll trip, few enough to stay fair to other tunnels. */
    for (int round = 0; progress && round < 8; round++) {
        progress = 0;
        /* client -> upstream */
        if (c->uout.len > c->uout_off) {
            ssize_t w =
                send(c->ufd, c->uout.buf + c->uout_off, c->uout.len - c->uout_off, MSG_NOSIGNAL);
            if (w > 0) {
                c->uout_off += (size_t)w;
                progress = 1;
                if (c->uout_off == c->uout.len) {
                    sb_release(&c->uout);
                    c->uout_off = 0;
                }
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        } else if (c->cu.len) {
            ssize_t n = relay_write(c->ufd, &c->cu);
            if (n > 0)
                progress = 1;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
        }
        if (c->req.kind == SBX_REQ_HTTP) {
            if (!c->c_eof && (c->body_done || c->uout.len == c->uout_off)) {
                int r = http_client_read(c);
                if (r < 0)
                    return -1;
                progress |= r;
            }
        } else if (!c->c_eof && relay_room(&c->cu)) {
            ssize_t n = relay_read(c->cfd, &c->cu);
            if (n > 0) {
                progress = 1;
            } else if (n == 0) {
                c->c_eof = 1;
                progress = 1;
            } else if (errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        /* upstream -> client (the 200 line goes first) */
        if (c->cout.len > c->cout_off) {
            ssize_t w =
                send(c->cfd, c->cout.buf + c->cout_off, c->cout.len - c->cout_off, MSG_NOSIGNAL);
            if (w > 0) {
                c->cout_off += (size_t)w;
                progress = 1;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        } else if (c->uc.len) {
            ssize_t n = relay_write(c->cfd, &c->uc);
            if (n > 0)
                progress = 1;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
        }
        if (!c->u_eof && relay_room(&c->uc)) {
            ssize_t n = relay_read(c->ufd, &c->uc);
            if (n > 0) {
                progress = 1;
            } else if (n == 0) {
                c->u_eof = 1;
                progress = 1;
            } else if (errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        any |= progress;
    }
    /* Half-close each direction once it has drained. A plain-HTTP request
     * that ended keeps the upstream's write side open (a half-close can read
     * as an abort); the answer's end closes the connection. */
    if (c->c_eof && !c->cu.len && c->uout.len == c->uout_off && !c->u_shut && !c->body_done) {
        shutdown(c->ufd, SHUT_WR);
        c->u_shut = 1;
    }
    if (c->u_eof && !c->uc.len && c->cout.len == c->cout_off && !c->c_shut) {
        shutdown(c->cfd, SHUT_WR);
        c->c_shut = 1;
    }
    if (c->c_shut && (c->u_shut || c->body_done))
        return -1;
    return any;
}

static void relay_run(struct sbx_proxy *p, struct conn *c, uint32_t ev)
{
    int r = relay_pump(c);
    if (r < 0 || (r == 0 && (ev & (EPOLLHUP | EPOLLERR)))) {
        conn_close(p, c);
        return;
    }
    if (r > 0)
        c->last_active = now_ms();
    relay_update(p, c);
}

static void enter_relay(struct sbx_proxy *p, struct conn *c)
{
    c->st = C_RELAY;
    c->deadline = 0;
    c->last_active = now_ms();
    reg(p, c, 1, EPOLLIN);
    relay_run(p, c, 0);
}

/* ---- client reads during HEAD and FLIGHT -------------------------------------- */

static void read_client(struct sbx_proxy *p, struct conn *c)
{
    size_t cap = c->st == C_HEAD ? SBX_HEAD_MAX : c->req.head_len + SBX_FLIGHT_MAX;
    if (c->st == C_FLIGHT)
        cap = SBX_FLIGHT_MAX;
    int eof = 0;
    while (c->in.len < cap) {
        sb_grow(&c->in, cap - c->in.len);
        ssize_t n = recv(c->cfd, c->in.buf + c->in.len, cap - c->in.len, 0);
        if (n > 0) {
            sb_setlen(&c->in, c->in.len + (size_t)n);
            if (c->st == C_HEAD)
                break; /* check for the end of the head before reading on */
            continue;
        }
        if (n == 0) {
            eof = 1;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            eof = 1;
        break;
    }
    if (c->st == C_HEAD) {
        size_t h = sbx_head_end(c->in.buf, c->in.len);
        if (h) {
            process_head(p, c, h);
            return;
        }
        if (c->in.len >= SBX_HEAD_MAX) {
            reply_close(p, c, ST_400);
            return;
        }
        if (eof)
            conn_close(p, c);
        return;
    }
    if (c->st == C_FLIGHT)
        flight_check(p, c, eof || c->in.len >= SBX_FLIGHT_MAX, eof);
}

static void write_cout(struct sbx_proxy *p, struct conn *c)
{
    while (c->cout.len > c->cout_off) {
        ssize_t w =
            send(c->cfd, c->cout.buf + c->cout_off, c->cout.len - c->cout_off, MSG_NOSIGNAL);
        if (w > 0) {
            c->cout_off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        conn_close(p, c);
        return;
    }
    if (c->st == C_REPLY) {
        shutdown(c->cfd, SHUT_WR);
        conn_close(p, c);
    } else if (c->st == C_FLIGHT) {
        reg(p, c, 0, EPOLLIN);
    }
}

/* ---- accept, timers, dispatch ------------------------------------------------- */

static void do_accept(struct sbx_proxy *p, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE)
                pause_listeners(p, 1);
            return;
        }
        p->accepted++;
        if (p->active >= p->o.max_tunnels) {
            /* Over the cap: not one byte, and the listener stays responsive. */
            p->refused_cap++;
            struct linger lg = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            close(fd);
            continue;
        }
        struct conn *c = NULL;
        for (int i = 0; i < p->nconns; i++)
            if (p->conns[i].st == C_FREE) {
                c = &p->conns[i];
                break;
            }
        if (!c) {
            /* Grow the slot table on demand (a run that makes three
             * connections should not fault in a thousand slots). Only
             * indices are kept elsewhere, so moving the table is safe here. */
            int grown = p->nconns ? p->nconns * 2 : 64;
            if (grown > p->o.max_tunnels)
                grown = p->o.max_tunnels;
            p->conns = xrealloc(p->conns, (size_t)grown * sizeof *p->conns);
            for (int i = p->nconns; i < grown; i++)
                conn_init_slot(&p->conns[i]);
            c = &p->conns[p->nconns];
            p->nconns = grown;
        }
        c->st = C_HEAD;
        c->cfd = fd;
        c->ufd = -1;
        c->creg = c->ureg = 0;
        sb_init(&c->in, 1024);
        c->deadline = now_ms() + p->o.head_timeout_ms;
        p->active++;
        reg(p, c, 0, EPOLLIN);
    }
}

static void on_deadline(struct sbx_proxy *p, struct conn *c)
{
    struct sbx_verdict v;
    switch (c->st) {
    case C_HEAD:
        reply_close(p, c, ST_400);
        break;
    case C_RESOLVE:
        verdict_deny(&v, "proxy", "resolving '%s' timed out", c->host);
        deny_reply(p, c, ST_403, &v);
        break;
    case C_DIAL:
        verdict_deny(&v, "proxy", "upstream connect failed (timed out)");
        deny_reply(p, c, ST_502, &v);
        break;
    case C_FLIGHT:
        flight_check(p, c, 1, 0);
        break;
    default:
        conn_close(p, c);
        break;
    }
}

static void scan_timers(struct sbx_proxy *p, int64_t now)
{
    for (int i = 0; i < p->nconns; i++) {
        struct conn *c = &p->conns[i];
        if (c->st == C_FREE)
            continue;
        if (c->st == C_RELAY) {
            if (now - c->last_active >= p->o.idle_timeout_ms)
                conn_close(p, c);
        } else if (c->deadline && now >= c->deadline) {
            on_deadline(p, c);
        }
    }
}

static void on_conn_event(struct sbx_proxy *p, struct conn *c, int upstream, uint32_t ev)
{
    switch (c->st) {
    case C_HEAD:
        if (!upstream)
            read_client(p, c);
        break;
    case C_REPLY:
        if (!upstream)
            write_cout(p, c);
        break;
    case C_DIAL:
        if (upstream)
            dial_done(p, c);
        break;
    case C_RESOLVE:
        break;
    case C_FLIGHT:
        if (!upstream) {
            if (ev & EPOLLOUT)
                write_cout(p, c);
            if (c->st == C_FLIGHT && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                read_client(p, c);
        }
        break;
    case C_RELAY:
        relay_run(p, c, ev);
        break;
    default:
        if (ev & (EPOLLHUP | EPOLLERR))
            conn_close(p, c);
        break;
    }
}

static void drain_jobs(struct sbx_proxy *p)
{
    for (;;) {
        struct rjob *j;
        ssize_t n = read(p->rpipe[0], &j, sizeof j);
        if (n != (ssize_t)sizeof j)
            return;
        resolve_done(p, j);
    }
}

/* Handles n ready events; returns the index of a wake fd that fired, or -1. */
static int dispatch(struct sbx_proxy *p, const struct epoll_event *evs, int n)
{
    int woke = -1;
    for (int i = 0; i < n; i++) {
        uint64_t t = evs[i].data.u64;
        enum tag tg = (enum tag)(t & 3);
        uint32_t idx = (uint32_t)(t >> 2) & 0x3fffffff;
        uint32_t gen = (uint32_t)(t >> 32);
        if (tg == T_MISC) {
            if (idx == 0)
                drain_jobs(p);
            else if (woke < 0)
                woke = (int)idx - 1;
            continue;
        }
        if (tg == T_LISTENER) {
            if (idx < p->nlisteners && p->listeners[idx] >= 0)
                do_accept(p, p->listeners[idx]);
            continue;
        }
        if (idx >= (uint32_t)p->nconns)
            continue;
        struct conn *c = &p->conns[idx];
        if (c->gen != gen || c->st == C_FREE)
            continue;
        on_conn_event(p, c, tg == T_UPSTREAM, evs[i].events);
    }
    return woke;
}

int sbx_proxy_run(struct sbx_proxy *p, const int *wake_fds, size_t n_wake, struct as_err *err)
{
    for (size_t i = 0; i < n_wake; i++) {
        struct epoll_event e = {.events = EPOLLIN};
        e.data.u64 = mktag(T_MISC, (uint32_t)(i + 1), 0);
        if (epoll_ctl(p->ep, EPOLL_CTL_ADD, wake_fds[i], &e) < 0 && errno != EEXIST)
            return as_err_errno(err, "proxy: watching a wake fd");
    }
    int ret = -1;
    struct epoll_event evs[256];
    for (;;) {
        int64_t now = now_ms();
        if (now >= p->next_scan) {
            scan_timers(p, now);
            p->next_scan = now + 100;
        }
        int timeout = (int)(p->next_scan - now);
        int n = epoll_wait(p->ep, evs, 256, timeout < 0 ? 0 : timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            as_err_errno(err, "proxy: epoll_wait");
            goto out;
        }
        int woke = dispatch(p, evs, n);
        if (woke >= 0) {
            ret = woke;
            goto out;
        }
    }
out:
    for (size_t i = 0; i < n_wake; i++)
        epoll_ctl(p->ep, EPOLL_CTL_DEL, wake_fds[i], NULL);
    return ret;
}

int sbx_proxy_fd(const struct sbx_proxy *p)
{
    return p->ep;
}

int sbx_proxy_turn(struct sbx_proxy *p, struct as_err *err)
{
    struct epoll_event evs[256];
    int64_t now = now_ms();
    if (now >= p->next_scan) {
        scan_timers(p, now);
        p->next_scan = now + 100;
    }
    int n;
    do
        n = epoll_wait(p->ep, evs, 256, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return as_err_errno(err, "proxy: epoll_wait");
    dispatch(p, evs, n);
    return 0;
}

void sbx_proxy_close_listeners(struct sbx_proxy *p)
{
    for (size_t i = 0; i < p->nlisteners; i++) {
        if (p->listeners[i] >= 0) {
            epoll_ctl(p->ep, EPOLL_CTL_DEL, p->listeners[i], NULL);
            close(p->listeners[i]);
        }
        p->listeners[i] = -1;
    }
}

/* ---- setup ------------------------------------------------------------------- */

struct sbx_proxy *sbx_proxy_new(const struct sbx_proxy_opts *o, struct as_err *err)
{
    struct sbx_proxy *p = xcalloc(1, sizeof *p);
    p->o = *o;
    p->identity = xstrdup(o->identity ? o->identity : "sandbox");
    p->o.identity = p->identity;
    if (!p->o.max_tunnels)
        p->o.max_tunnels = 1024;
    if (!p->o.head_timeout_ms)
        p->o.head_timeout_ms = 15000;
    if (!p->o.flight_timeout_ms)
        p->o.flight_timeout_ms = 15000;
    if (!p->o.resolve_timeout_ms)
        p->o.resolve_timeout_ms = 15000;
    if (!p->o.dial_timeout_ms)
        p->o.dial_timeout_ms = 15000;
    if (!p->o.idle_timeout_ms)
        p->o.idle_timeout_ms = 600000;
    p->o.gateway_only_hosts = NULL;
    size_t ng = 0;
    for (const char *const *h = o->gateway_only_hosts; h && *h; h++)
        ng++;
    p->gw_hosts = xcalloc(ng + 1, sizeof *p->gw_hosts);
    for (size_t i = 0; i < ng; i++)
        p->gw_hosts[i] = xstrdup(o->gateway_only_hosts[i]);
    sb_init(&p->auth, 0);
    if (o->token && o->token[0]) {
        sbx_basic_auth_value(o->token, &p->auth);
        p->has_auth = 1;
    }
    p->o.token = NULL;
    p->rpipe[0] = p->rpipe[1] = -1;
    pthread_mutex_init(&p->jobs_mu, NULL);
    pthread_cond_init(&p->jobs_cv, NULL);

    /* Fit the descriptor limit to the tunnel cap. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rlim_t want = (rlim_t)p->o.max_tunnels * FDS_PER_TUNNEL + 256;
        if (rl.rlim_cur < want) {
            rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur < want) {
            long fit = ((long)rl.rlim_cur - 256) / FDS_PER_TUNNEL;
            p->o.max_tunnels = fit < 1 ? 1 : (int)fit;
        }
    }
    p->nconns = 0;
    p->conns = NULL;
    p->ep = epoll_create1(EPOLL_CLOEXEC);
    if (p->ep < 0 || pipe2(p->rpipe, O_CLOEXEC) < 0) {
        as_err_errno(err, "proxy: creating the event loop");
        sbx_proxy_free(p);
        return NULL;
    }
    set_nonblock(p->rpipe[0]);
    struct epoll_event e = {.events = EPOLLIN};
    e.data.u64 = mktag(T_MISC, 0, 0);
    epoll_ctl(p->ep, EPOLL_CTL_ADD, p->rpipe[0], &e);
    return p;
}

int sbx_proxy_add_listener(struct sbx_proxy *p, int fd, struct as_err *err)
{
    if (set_nonblock(fd) < 0) {
        close(fd);
        return as_err_errno(err, "proxy: listener");
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    p->listeners = xrealloc(p->listeners, (p->nlisteners + 1) * sizeof *p->listeners);
    p->listeners[p->nlisteners] = fd;
    struct epoll_event e = {.events = p->listeners_paused ? 0 : EPOLLIN};
    e.data.u64 = mktag(T_LISTENER, (uint32_t)p->nlisteners, 0);
    if (epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &e) < 0) {
        close(fd);
        return as_err_errno(err, "proxy: watching the listener");
    }
    p->nlisteners++;
    return 0;
}

int sbx_proxy_listen(struct sbx_proxy *p, const char *ip, int port, int *bound, struct as_err *err)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return as_err_set(err, "proxy: bad listen address '%s'", ip);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return as_err_errno(err, "proxy: socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0) {
        as_err_errno(err, "proxy: listening on %s:%d", ip, port);
        close(fd);
        return -1;
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    if (bound)
        *bound = ntohs(sa.sin_port);
    return sbx_proxy_add_listener(p, fd, err);
}

void sbx_proxy_get_stats(const struct sbx_proxy *p, struct sbx_proxy_stats *s)
{
    s->max_tunnels = p->o.max_tunnels;
    s->active = p->active;
    s->accepted = p->accepted;
    s->refused_cap = p->refused_cap;
    s->allowed = p->allowed;
    s->denied = p->denied;
}

void sbx_proxy_free(struct sbx_proxy *p)
{
    if (!p)
        return;
    for (int i = 0; p->conns && i < p->nconns; i++)
        conn_close(p, &p->conns[i]);
    for (size_t i = 0; i < p->nlisteners; i++)
        if (p->listeners[i] >= 0)
            close(p->listeners[i]);
    free(p->listeners);
    /* Resolver threads still hold the pipe's write end: wait for them. */
    if (p->rpipe[0] >= 0) {
        pthread_mutex_lock(&p->jobs_mu);
        while (p->jobs_out > 0) {
            pthread_mutex_unlock(&p->jobs_mu);
            struct rjob *j;
            int fl = fcntl(p->rpipe[0], F_GETFL);
            fcntl(p->rpipe[0], F_SETFL, fl & ~O_NONBLOCK);
            if (read(p->rpipe[0], &j, sizeof j) == (ssize_t)sizeof j) {
                pthread_mutex_lock(&p->jobs_mu);
                p->jobs_out--;
                pthread_mutex_unlock(&p->jobs_mu);
                free(j);
            }
            pthread_mutex_lock(&p->jobs_mu);
        }
        pthread_mutex_unlock(&p->jobs_mu);
    }
    close_fd(&p->rpipe[0]);
    close_fd(&p->rpipe[1]);
    if (p->ep >= 0)
        close(p->ep);
    pthread_mutex_destroy(&p->jobs_mu);
    pthread_cond_destroy(&p->jobs_cv);
    for (char **h = p->gw_hosts; h && *h; h++)
        free(*h);
    free(p->gw_hosts);
    sb_release_secure(&p->auth);
    free(p->conns);
    free(p->identity);
    free(p);
}
