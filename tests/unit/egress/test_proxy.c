/*
 * The egress proxy end to end on loopback: a proxy thread, an echo server
 * and a one-shot HTTP server, driven over real sockets. Covers tokens,
 * policy denials, SNI, lockdown guards, anti-SSRF (incl. rebinding through
 * a counting resolver), the tunnel cap, slowloris, plain-HTTP forwarding and
 * bulk relaying against a receiver that does not keep up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "hello.h"
#include "policy/policy.h"
#include "egress/connect.h"
#include "egress/proxy.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---- recorded events ------------------------------------------------------- */

struct rec {
    char host[256];
    int port;
    int allowed;
    char layer[16];
    char rule[800];
    char pattern[256];
};
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rec recs[4096];
static int nrecs;

static int record_cb(void *ctx, const struct sbx_egress_event *ev)
{
    (void)ctx;
    pthread_mutex_lock(&rec_mu);
    if (nrecs < 4096) {
        struct rec *r = &recs[nrecs++];
        snprintf(r->host, sizeof r->host, "%s", ev->host);
        r->port = ev->port;
        r->allowed = ev->v->allowed;
        snprintf(r->layer, sizeof r->layer, "%s", ev->v->layer);
        snprintf(r->rule, sizeof r->rule, "%s", ev->v->rule);
        snprintf(r->pattern, sizeof r->pattern, "%s", ev->v->pattern);
    }
    pthread_mutex_unlock(&rec_mu);
    return 0;
}

static int count_recs(void)
{
    pthread_mutex_lock(&rec_mu);
    int n = nrecs;
    pthread_mutex_unlock(&rec_mu);
    return n;
}

/* Waits (bounded by attempts, not asserted on time) until n events exist. */
static struct rec *rec_wait(int n)
{
    for (int i = 0; i < 2000 && count_recs() < n; i++)
        usleep(5000);
    assert_true(count_recs() >= n);
    return &recs[n - 1];
}

static void rec_reset(void)
{
    pthread_mutex_lock(&rec_mu);
    nrecs = 0;
    pthread_mutex_unlock(&rec_mu);
}

/* Policy for the tests: blocked.invalid is denied by the machine layer,
 * :22 is denied for everything, the rest is allowed by "default". */
static int decide_cb(void *ctx, const char *id, const char *host, int port, struct sbx_verdict *v)
{
    (void)ctx;
    (void)id;
    memset(v, 0, sizeof *v);
    if (strcmp(host, "blocked.invalid") == 0) {
        snprintf(v->layer, sizeof v->layer, "machine");
        snprintf(v->pattern, sizeof v->pattern, "!blocked.invalid");
        snprintf(v->rule, sizeof v->rule, "denied by [policy.egress] rule \"!blocked.invalid\"");
        return 0;
    }
    if (port == 22) {
        snprintf(v->layer, sizeof v->layer, "project");
        snprintf(v->rule, sizeof v->rule, "not in the egress allowlist (api.example.com:443)");
        return 0;
    }
    v->allowed = 1;
    snprintf(v->layer, sizeof v->layer, "default");
    return 0;
}

/* ---- servers ------------------------------------------------------------------ */

static int listen_lo(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4096), 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return fd;
}

static long echo_bytes; /* bytes the echo server ever received */
static int echo_port, echo_lfd, echo_stop;
static pthread_t echo_thr;

static void *echo_main(void *arg)
{
    (void)arg;
    int ep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = echo_lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, echo_lfd, &e);
    e.data.fd = echo_stop;
    epoll_ctl(ep, EPOLL_CTL_ADD, echo_stop, &e);
    struct epoll_event evs[64];
    char buf[65536];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == echo_stop) {
                close(ep);
                return NULL;
            }
            if (fd == echo_lfd) {
                int c = accept4(echo_lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c >= 0) {
                    struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                }
                continue;
            }
            ssize_t r = read(fd, buf, sizeof buf);
            if (r <= 0) {
                close(fd);
                continue;
            }
            __atomic_add_fetch(&echo_bytes, r, __ATOMIC_SEQ_CST);
            ssize_t off = 0;
            while (off < r) {
                ssize_t w = write(fd, buf + off, (size_t)(r - off));
                if (w <= 0)
                    break;
                off += w;
            }
        }
    }
}

static void echo_start(void)
{
    echo_lfd = listen_lo(&echo_port);
    echo_stop = eventfd(0, EFD_CLOEXEC);
    pthread_create(&echo_thr, NULL, echo_main, NULL);
}

static void echo_end(void)
{
    uint64_t one = 1;
    assert_int_equal(write(echo_stop, &one, sizeof one), 8);
    pthread_join(echo_thr, NULL);
    close(echo_lfd);
    close(echo_stop);
}

/* ---- the proxy under test -------------------------------------------------------- */

struct px {
    struct sbx_proxy *p;
    pthread_t thr;
    int stop;
    int port;
};

static void *px_main(void *arg)
{
    struct px *x = arg;
    struct as_err err = AS_ERR_INIT;
    int r = sbx_proxy_run(x->p, &x->stop, 1, &err);
    assert_int_equal(r, 0);
    return NULL;
}

static void px_start(struct px *x, struct sbx_proxy_opts *o)
{
    struct as_err err = AS_ERR_INIT;
    if (!o->record)
        o->record = record_cb;
    if (!o->identity)
        o->identity = "shtest";
    x->p = sbx_proxy_new(o, &err);
    assert_non_null(x->p);
    assert_int_equal(sbx_proxy_listen(x->p, "127.0.0.1", 0, &x->port, &err), 0);
    x->stop = eventfd(0, EFD_CLOEXEC);
    pthread_create(&x->thr, NULL, px_main, x);
}

static void px_end(struct px *x)
{
    uint64_t one = 1;
    assert_int_equal(write(x->stop, &one, sizeof one), 8);
    pthread_join(x->thr, NULL);
    sbx_proxy_free(x->p);
    close(x->stop);
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_all(int fd, const void *b, size_t n)
{
    const char *p = b;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        assert_true(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

/* Reads a response head (up to CRLFCRLF) into out. */
static void read_head(int fd, strbuf *out)
{
    sb_reset(out);
    char c;
    while (out->len < 4 || memcmp(out->buf + out->len - 4, "\r\n\r\n", 4) != 0) {
        ssize_t r = recv(fd, &c, 1, 0);
        if (r <= 0)
            return;
        sb_addc(out, c);
    }
}

/* Reads until EOF; returns the byte count (into out when given). */
static size_t read_eof(int fd, strbuf *out)
{
    char b[4096];
    size_t total = 0;
    for (;;) {
        ssize_t r = recv(fd, b, sizeof b, 0);
        if (r <= 0)
            return total;
        total += (size_t)r;
        if (out)
            sb_add(out, b, (size_t)r);
    }
}

static void read_exact(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        assert_true(r > 0);
        p += r;
        n -= (size_t)r;
    }
}

static int open_tunnel(int pport, const char *target, int with_token, strbuf *head)
{
    int fd = dial(pport);
    strbuf req = SB_INIT;
    sb_addf(&req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", target, target);
    if (with_token) {
        strbuf a = SB_INIT;
        sbx_basic_auth_value(TOKEN, &a);
        sb_addf(&req, "Proxy-Authorization: %s\r\n", a.buf);
        sb_release(&a);
    }
    sb_adds(&req, "\r\n");
    /* A refused connection (over the cap) may reset before the write. */
    ssize_t w = send(fd, req.buf, req.len, MSG_NOSIGNAL);
    size_t want = req.len;
    sb_release(&req);
    sb_reset(head);
    if (w == (ssize_t)want)
        read_head(fd, head);
    return fd;
}

static char target_buf[64];
static const char *echo_target(const char *host)
{
    snprintf(target_buf, sizeof target_buf, "%s:%d", host, echo_port);
    return target_buf;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_allowed_tunnel_relays(void **st)
{
    (void)st;
    rec_reset();
    echo_start();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1, .decide = decide_cb};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    int fd = open_tunnel(x.port, echo_target("localhost"), 1, &h);
    assert_string_equal(h.buf, "HTTP/1.1 200 Connection Established\r\n\r\n");
    /* The hello and 64 KiB more in one write: the first flight stops at its
     * cap, which must not be taken for the client's EOF. */
    static uint8_t hello[20000 + 65536], back[20000 + 65536];
    size_t n = th_hello(hello, "localhost", 0, 0);
    for (size_t i = 0; i < 65536; i++)
        hello[n + i] = (uint8_t)(i * 13);
    n += 65536;
    send_all(fd, hello, n);
    read_exact(fd, back, n);
    assert_memory_equal(hello, back, n);
    /* bulk bytes after the hello go through the relay's copy path */
    static char big[1 << 20], bigback[1 << 20];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 7);
    for (size_t off = 0; off < sizeof big; off += 65536) {
        send_all(fd, big + off, 65536);
        read_exact(fd, bigback + off, 65536);
    }
    assert_memory_equal(big, bigback, sizeof big);
    struct rec *r = rec_wait(1);
    assert_true(r->allowed);
    assert_string_equal(r->host, "localhost");
    assert_int_equal(r->port, echo_port);
    assert_string_equal(r->layer, "default");
    assert_string_equal(r->rule, "");
    close(fd);
    px_end(&x);
    echo_end();
    sb_release(&h);
}

static void test_token_required(void **st)
{
    (void)st;
    rec_reset();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    int fd = open_tunnel(x.port, "localhost:1", 0, &h);
    assert_non_null(strstr(h.buf, "HTTP/1.1 407 "));
    assert_non_null(strstr(h.buf, "Proxy-Authenticate: Basic realm=\"agentstack\"\r\n"));
    close(fd);
    struct rec *r = rec_wait(1);
    assert_false(r->allowed);
    assert_non_null(strstr(r->rule, "credentials"));
    assert_string_equal(r->layer, "proxy");
    /* a wrong token is the same refusal */
    fd = dial(x.port);
    const char *bad = "CONNECT localhost:1 HTTP/1.1\r\n"
                      "Proxy-Authorization: Basic YWdlbnRzdGFjazp3cm9uZw==\r\n\r\n";
    send_all(fd, bad, strlen(bad));
    read_head(fd, &h);
    assert_non_null(strstr(h.buf, "407"));
    close(fd);
    r = rec_wait(2);
    assert_false(r->allowed);
    px_end(&x);
    sb_release(&h);
}

static void test_policy_denial(void **st)
{
    (void)st;
    rec_reset();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .decide = decide_cb};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    int fd = open_tunnel(x.port, "Blocked.Invalid.:443", 1, &h);
    assert_string_equal(h.buf, "HTTP/1.1 403 Forbidden\r\n\r\n");
    assert_int_equal(read_eof(fd, NULL), 0);
    close(fd);
    struct rec *r = rec_wait(1);
    assert_false(r->allowed);
    assert_string_equal(r->host, "blocked.invalid");
    assert_int_equal(r->port, 443);
    assert_string_equal(r->layer, "machine");
    assert_string_equal(r->pattern, "!blocked.invalid");
    /* exact port rule */
    fd = open_tunnel(x.port, "api.example.com:22", 1, &h);
    assert_non_null(strstr(h.buf, "403"));
    close(fd);
    r = rec_wait(2);
    assert_int_equal(r->port, 22);
    assert_string_equal(r->layer, "project");
    /* non-canonical hosts never reach the policy */
    fd = open_tunnel(x.port, "bl%6fcked.invalid:443", 1, &h);
    assert_non_null(strstr(h.buf, "403"));
    close(fd);
    r = rec_wait(3);
    assert_non_null(strstr(r->rule, "non-canonical"));
    /* a malformed head is a bare 400 and no event */
    fd = dial(x.port);
    send_all(fd, "CONNECT nope HTTP/1.1\r\n\r\n", 25);
    read_head(fd, &h);
    assert_string_equal(h.buf, "HTTP/1.1 400 Bad Request\r\n\r\n");
    close(fd);
    assert_int_equal(count_recs(), 3);
    px_end(&x);
    sb_release(&h);
}

static void flight_case(int lockdown, const uint8_t *first, size_t n, int shut, int expect_allowed,
                        const char *rule_part)
{
    rec_reset();
    echo_start();
    long before = __atomic_load_n(&echo_bytes, __ATOMIC_SEQ_CST);
    struct px x;
    struct sbx_proxy_opts o = {
        .token = TOKEN, .allow_local = 1, .lockdown = lockdown, .flight_timeout_ms = 400};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    int fd = open_tunnel(x.port, echo_target("localhost"), 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    if (n)
        send_all(fd, first, n);
    if (shut)
        shutdown(fd, SHUT_WR);
    struct rec *r = rec_wait(1);
    if (expect_allowed) {
        assert_true(r->allowed);
    } else {
        assert_false(r->allowed);
        if (!strstr(r->rule, rule_part))
            fail_msg("rule '%s' lacks '%s'", r->rule, rule_part);
        /* refused after the 200: closed, and nothing reached the upstream */
        assert_int_equal(read_eof(fd, NULL), 0);
        assert_int_equal(__atomic_load_n(&echo_bytes, __ATOMIC_SEQ_CST), before);
    }
    close(fd);
    px_end(&x);
    echo_end();
    sb_release(&h);
}

static void test_sni_checks(void **st)
{
    (void)st;
    uint8_t b[20000];
    size_t n = th_hello(b, "evil.example", 0, 0);
    flight_case(0, b, n, 0, 0, "does not match CONNECT host 'localhost'");
    n = th_fragmented(b, "localhost");
    flight_case(0, b, n, 0, 0, "unverifiable");
    /* the CONNECT host first, another name after it, in one list */
    n = th_hello(b, "localhost\nevil.example", 0, 0);
    flight_case(0, b, n, 0, 0, "names 'evil.example' besides CONNECT host 'localhost'");
    flight_case(1, b, n, 0, 0, "names 'evil.example' besides CONNECT host 'localhost'");
    n = th_hello(b, "localhost\nLOCALHOST.", 0, 0);
    flight_case(0, b, n, 0, 1, NULL); /* the same name twice */
    n = th_hello(b, NULL, 0, 0);
    flight_case(0, b, n, 0, 1, NULL); /* no SNI: allowed */
    n = th_hello(b, "localhost", 0, 0);
    flight_case(0, b, n / 2, 1, 0, "incomplete TLS ClientHello");
    flight_case(0, b, n / 2, 0, 0, "incomplete TLS ClientHello"); /* deadline */
    n = th_hello(b, "localhost", 1, 0);
    flight_case(1, b, n, 0, 0, "(ECH)");
    flight_case(0, b, n, 0, 1, NULL); /* --sandbox: outer name checked, allowed */
    flight_case(1, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, 0, 0, "non-TLS");
    flight_case(1, NULL, 0, 1, 0, "non-TLS");
    flight_case(0, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, 0, 1, NULL);
}

static void test_lockdown_literal_ip(void **st)
{
    (void)st;
    rec_reset();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .lockdown = 1};
    px_start(&x, &o);
    const char *t[] = {"169.254.169.254:80", "[::ffff:169.254.169.254]:443",
                       "2130706433:443",     "0x7f000001:443",
                       "127.1:443",          "[::1]:443",
                       "1.1.1.1:443"};
    strbuf h = SB_INIT;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int fd = open_tunnel(x.port, t[i], 1, &h);
        assert_non_null(strstr(h.buf, " 403 "));
        close(fd);
        struct rec *r = rec_wait((int)i + 1);
        if (!strstr(r->rule, "literal-IP"))
            fail_msg("%s: %s", t[i], r->rule);
    }
    px_end(&x);
    sb_release(&h);
}

static void test_ssrf_guard(void **st)
{
    (void)st;
    rec_reset();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN};
    px_start(&x, &o);
    const char *t[] = {"169.254.169.254:80",     "[::ffff:169.254.169.254]:443",
                       "[2002:a9fe:a9fe::]:443", "[::1]:443",
                       "127.0.0.1:443",          "10.1.2.3:443",
                       "localhost:443"};
    strbuf h = SB_INIT;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int fd = open_tunnel(x.port, t[i], 1, &h);
        assert_non_null(strstr(h.buf, " 403 "));
        close(fd);
        struct rec *r = rec_wait((int)i + 1);
        if (!strstr(r->rule, "SSRF guard"))
            fail_msg("%s: %s", t[i], r->rule);
    }
    px_end(&x);
    sb_release(&h);
}

/* A resolver that answers per host, counting its calls. */
static int resolve_calls;
static char dialled[64];
static int fake_resolve(void *ctx, const char *host, int port, struct sockaddr_storage *addrs,
                        socklen_t *lens, int max, char *errbuf, size_t errsz)
{
    (void)ctx;
    (void)max;
    __atomic_add_fetch(&resolve_calls, 1, __ATOMIC_SEQ_CST);
    const char *answers[3] = {0};
    if (strcmp(host, "rebind.example") == 0) {
        answers[0] = "8.8.8.8";   /* public first... */
        answers[1] = "127.0.0.1"; /* ...and loopback later */
    } else if (strcmp(host, "mixed.example") == 0) {
        answers[0] = "127.0.0.1";
        answers[1] = "10.0.0.1";
        answers[2] = "8.8.4.4";
    } else if (strcmp(host, "private.example") == 0) {
        answers[0] = "10.0.0.1";
        answers[1] = "::1";
    } else {
        snprintf(errbuf, errsz, "Name or service not known");
        return -1;
    }
    int n = 0;
    for (; n < 3 && answers[n]; n++) {
        memset(&addrs[n], 0, sizeof addrs[n]);
        if (strchr(answers[n], ':')) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&addrs[n];
            s6->sin6_family = AF_INET6;
            s6->sin6_port = htons((uint16_t)port);
            inet_pton(AF_INET6, answers[n], &s6->sin6_addr);
            lens[n] = sizeof *s6;
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&addrs[n];
            s4->sin_family = AF_INET;
            s4->sin_port = htons((uint16_t)port);
            inet_pton(AF_INET, answers[n], &s4->sin_addr);
            lens[n] = sizeof *s4;
        }
    }
    return n;
}

/* Records the validated address, then lands the dial on the echo server. */
static void fake_dial(void *ctx, struct sockaddr_storage *addr, socklen_t *len)
{
    (void)ctx;
    sbx_addr_str((struct sockaddr *)addr, dialled, sizeof dialled);
    struct sockaddr_in *s4 = (struct sockaddr_in *)addr;
    memset(addr, 0, sizeof *addr);
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)echo_port);
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *len = sizeof *s4;
}

static void test_rebinding(void **st)
{
    (void)st;
    rec_reset();
    echo_start();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .resolve = fake_resolve, .dial = fake_dial};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    resolve_calls = 0;
    int fd = open_tunnel(x.port, "rebind.example:443", 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    uint8_t b[20000], back[20000];
    size_t n = th_hello(b, "rebind.example", 0, 0);
    send_all(fd, b, n);
    read_exact(fd, back, n);
    close(fd);
    assert_int_equal(__atomic_load_n(&resolve_calls, __ATOMIC_SEQ_CST), 1);
    assert_string_equal(dialled, "8.8.8.8");
    assert_true(rec_wait(1)->allowed);
    /* mixed answers: the first allowed one */
    fd = open_tunnel(x.port, "mixed.example:443", 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    close(fd);
    assert_string_equal(dialled, "8.8.4.4");
    rec_wait(2);
    /* only private answers: refused */
    fd = open_tunnel(x.port, "private.example:443", 1, &h);
    assert_non_null(strstr(h.buf, " 403 "));
    close(fd);
    struct rec *r = rec_wait(3);
    assert_non_null(strstr(r->rule, "'private.example' resolves only to non-global addresses "
                                    "(10.0.0.1, ::1) — refused (SSRF guard)"));
    fd = open_tunnel(x.port, "nxdomain.example:443", 1, &h);
    assert_non_null(strstr(h.buf, " 403 "));
    close(fd);
    r = rec_wait(4);
    assert_non_null(strstr(r->rule, "could not resolve"));
    px_end(&x);
    echo_end();
    sb_release(&h);
}

/* The proxy's address rule through the shared decision (policy/address.c):
 * a machine rule !8.8.8.8 stops a name that resolves to it. */
static struct pol_ruleset *addr_rs;
static int decide_addr_cb(void *ctx, const char *id, const char *host, const struct sockaddr *sa,
                          int port, struct sbx_verdict *v)
{
    (void)ctx;
    memset(v, 0, sizeof *v);
    char addr[POL_ADDR_TEXT_MAX];
    struct pol_decision d;
    v->allowed = pol_egress_address(addr_rs, id, host, sa, (unsigned)port, POL_LOCAL_ANY, addr, &d);
    if (!v->allowed) {
        strbuf t = SB_INIT;
        pol_decision_text(&d, &t);
        snprintf(v->rule, sizeof v->rule, "'%s' resolves to %s, %s", host, addr, t.buf);
        snprintf(v->layer, sizeof v->layer, "%s", pol_by_name(d.by));
        sb_release(&t);
    }
    return 0;
}

static void test_address_rules(void **st)
{
    (void)st;
    rec_reset();
    echo_start();
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *m = pol_layer_new(POL_MACHINE, "agentstack.toml");
    assert_int_equal(pol_layer_add(m, POL_EGRESS, "*", "!8.8.8.8", 1, 1, &err), 0);
    addr_rs = pol_compile(m, NULL, NULL, &err);
    pol_layer_free(m);
    assert_non_null(addr_rs);
    struct px x;
    struct sbx_proxy_opts o = {
        .token = TOKEN, .resolve = fake_resolve, .dial = fake_dial, .decide_addr = decide_addr_cb};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    /* 8.8.8.8 by rule, 127.0.0.1 by class: nothing left to dial */
    int fd = open_tunnel(x.port, "rebind.example:443", 1, &h);
    assert_non_null(strstr(h.buf, " 403 "));
    close(fd);
    struct rec *r = rec_wait(1);
    assert_false(r->allowed);
    if (!strstr(r->rule, "'rebind.example' resolves to 8.8.8.8, denied by [policy.egress] rule "
                         "\"!8.8.8.8\""))
        fail_msg("rule: %s", r->rule);
    assert_string_equal(r->layer, "machine");
    /* another answer the rule does not name is still dialled */
    fd = open_tunnel(x.port, "mixed.example:443", 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    close(fd);
    assert_string_equal(dialled, "8.8.4.4");
    px_end(&x);
    echo_end();
    pol_ruleset_free(addr_rs);
    sb_release(&h);
}

/* The evidence store refuses every write (a full disk, a revoked run dir). */
static int failing_record(void *ctx, const struct sbx_egress_event *ev)
{
    (void)ctx;
    (void)ev;
    return -1;
}

/* An allowed tunnel or request whose decision cannot be recorded is never
 * relayed: not one byte reaches the upstream. */
static void test_unrecorded_refused(void **st)
{
    (void)st;
    echo_start();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1, .record = failing_record};
    px_start(&x, &o);
    strbuf h = SB_INIT, rest = SB_INIT;
    long before = __atomic_load_n(&echo_bytes, __ATOMIC_SEQ_CST);
    int fd = open_tunnel(x.port, echo_target("localhost"), 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    uint8_t b[20000];
    size_t n = th_hello(b, "localhost", 0, 0);
    send_all(fd, b, n);
    read_eof(fd, &rest);
    assert_int_equal(rest.len, 0);
    close(fd);
    /* plain HTTP: 502 instead of a forwarded request */
    fd = dial(x.port);
    strbuf a = SB_INIT, req = SB_INIT;
    sbx_basic_auth_value(TOKEN, &a);
    sb_addf(&req, "GET http://localhost:%d/x HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n",
            echo_port, a.buf);
    send_all(fd, req.buf, req.len);
    read_head(fd, &h);
    assert_non_null(strstr(h.buf, " 502 "));
    close(fd);
    assert_int_equal(__atomic_load_n(&echo_bytes, __ATOMIC_SEQ_CST), before);
    px_end(&x);
    echo_end();
    sb_release(&h);
    sb_release(&rest);
    sb_release(&a);
    sb_release(&req);
}

static void test_plain_http_forwarded(void **st)
{
    (void)st;
    rec_reset();
    int hport;
    int hl = listen_lo(&hport);
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1, .decide = decide_cb};
    px_start(&x, &o);
    int fd = dial(x.port);
    strbuf a = SB_INIT, req = SB_INIT, got = SB_INIT, resp = SB_INIT;
    sbx_basic_auth_value(TOKEN, &a);
    sb_addf(&req,
            "GET http://LOCALHOST:%d/pkg/index?x=1 HTTP/1.1\r\nHost: other.example\r\n"
            "Proxy-Authorization: %s\r\nUser-Agent: t\r\n\r\n",
            hport, a.buf);
    send_all(fd, req.buf, req.len);
    int sfd = accept(hl, NULL, NULL);
    assert_true(sfd >= 0);
    read_head(sfd, &got);
    strbuf want = SB_INIT;
    sb_addf(&want,
            "GET /pkg/index?x=1 HTTP/1.1\r\nUser-Agent: t\r\nHost: localhost:%d\r\n"
            "Connection: close\r\n\r\n",
            hport);
    assert_string_equal(got.buf, want.buf);
    const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    send_all(sfd, reply, strlen(reply));
    close(sfd);
    read_eof(fd, &resp);
    assert_string_equal(resp.buf, reply);
    close(fd);
    struct rec *r = rec_wait(1);
    assert_true(r->allowed);
    assert_int_equal(r->port, hport);
    /* denied host over plain HTTP: 403 and recorded */
    fd = dial(x.port);
    sb_reset(&req);
    sb_addf(&req, "GET http://blocked.invalid/ HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n", a.buf);
    send_all(fd, req.buf, req.len);
    read_head(fd, &got);
    assert_non_null(strstr(got.buf, " 403 "));
    close(fd);
    r = rec_wait(2);
    assert_false(r->allowed);
    assert_int_equal(r->port, 80);
    px_end(&x);
    close(hl);
    sb_release(&a);
    sb_release(&req);
    sb_release(&got);
    sb_release(&resp);
    sb_release(&want);
}

/* One plain-HTTP exchange: the client sends `req` (its own first request,
 * then whatever it pipelines), the upstream reads everything it is ever
 * given until the proxy closes, and answers after the head. */
static void one_exchange(int pport, int hl, const char *req, int half_close, strbuf *upstream_got)
{
    int fd = dial(pport);
    send_all(fd, req, strlen(req));
    if (half_close)
        shutdown(fd, SHUT_WR); /* a proxy that relays to EOF shows what it forwards */
    int sfd = accept(hl, NULL, NULL);
    assert_true(sfd >= 0);
    /* A guard, not an assertion on time: a proxy that never ends the
     * exchange fails the comparison below instead of hanging the test. */
    struct timeval tv = {60, 0};
    setsockopt(sfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    strbuf head = SB_INIT, resp = SB_INIT;
    read_head(sfd, &head);
    const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    send_all(sfd, reply, strlen(reply));
    shutdown(sfd, SHUT_WR);
    /* Everything else the proxy ever forwards on this connection. */
    sb_reset(upstream_got);
    sb_adds(upstream_got, head.buf);
    read_eof(sfd, upstream_got);
    close(sfd);
    read_eof(fd, &resp);
    assert_string_equal(resp.buf, reply);
    close(fd);
    sb_release(&head);
    sb_release(&resp);
}

static int pending_accept(int hl)
{
    struct pollfd pf = {.fd = hl, .events = POLLIN};
    return poll(&pf, 1, 0) == 1;
}

/* The smuggling attacks on plain HTTP: a pipelined second request with its
 * own Host never reaches the upstream (one request per connection, measured
 * by the first request's own framing); CL+TE and a second Host get 400
 * before anything is dialled. */
static void test_plain_http_one_request(void **st)
{
    (void)st;
    rec_reset();
    int hport;
    int hl = listen_lo(&hport);
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1, .decide = decide_cb};
    px_start(&x, &o);
    strbuf a = SB_INIT, req = SB_INIT, got = SB_INIT, want = SB_INIT;
    sbx_basic_auth_value(TOKEN, &a);
    const char *evil = "GET http://blocked.invalid/steal HTTP/1.1\r\nHost: blocked.invalid\r\n\r\n";

    /* GET, then a pipelined GET for a denied host on the same connection */
    sb_addf(&req, "GET http://localhost:%d/a HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n%s", hport,
            a.buf, evil);
    one_exchange(x.port, hl, req.buf, 0, &got);
    sb_addf(&want, "GET /a HTTP/1.1\r\nHost: localhost:%d\r\nConnection: close\r\n\r\n", hport);
    assert_string_equal(got.buf, want.buf);

    /* POST with Content-Length: the body, and not one byte more */
    sb_reset(&req);
    sb_addf(&req,
            "POST http://localhost:%d/b HTTP/1.1\r\nProxy-Authorization: %s\r\n"
            "Content-Length: 5\r\n\r\nhello%s",
            hport, a.buf, evil);
    one_exchange(x.port, hl, req.buf, 1, &got);
    sb_reset(&want);
    sb_addf(&want,
            "POST /b HTTP/1.1\r\nContent-Length: 5\r\nHost: localhost:%d\r\n"
            "Connection: close\r\n\r\nhello",
            hport);
    assert_string_equal(got.buf, want.buf);

    /* POST chunked: the chunks up to the last one, then nothing */
    sb_reset(&req);
    sb_addf(&req,
            "POST http://localhost:%d/c HTTP/1.1\r\nProxy-Authorization: %s\r\n"
            "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n%s",
            hport, a.buf, evil);
    one_exchange(x.port, hl, req.buf, 1, &got);
    sb_reset(&want);
    sb_addf(&want,
            "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: localhost:%d\r\n"
            "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            hport);
    assert_string_equal(got.buf, want.buf);
    assert_int_equal(count_recs(), 3); /* three allowed requests, no fourth decision */

    /* CL+TE, and a second Host: 400, nothing dialled */
    const char *refused[] = {
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "Host: localhost\r\nHost: blocked.invalid\r\n\r\n",
    };
    for (size_t i = 0; i < 2; i++) {
        int fd = dial(x.port);
        sb_reset(&req);
        sb_addf(&req, "POST http://localhost:%d/d HTTP/1.1\r\nProxy-Authorization: %s\r\n%s", hport,
                a.buf, refused[i]);
        send_all(fd, req.buf, req.len);
        read_head(fd, &got);
        assert_non_null(strstr(got.buf, " 400 "));
        assert_int_equal(read_eof(fd, NULL), 0);
        close(fd);
        assert_false(pending_accept(hl));
    }
    px_end(&x);
    close(hl);
    sb_release(&a);
    sb_release(&req);
    sb_release(&got);
    sb_release(&want);
}

static void test_tunnel_cap_and_slowloris(void **st)
{
    (void)st;
    rec_reset();
    echo_start();
    struct px x;
    struct sbx_proxy_opts o = {
        .token = TOKEN, .allow_local = 1, .max_tunnels = 4, .head_timeout_ms = 300};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    int held[4];
    for (int i = 0; i < 4; i++) {
        held[i] = open_tunnel(x.port, echo_target("localhost"), 1, &h);
        assert_non_null(strstr(h.buf, " 200 "));
        send_all(held[i], "x", 1); /* --sandbox: plaintext passes, the tunnel is live */
        char c;
        read_exact(held[i], &c, 1);
    }
    /* the fifth gets EOF or RST and not one byte */
    int fd = dial(x.port);
    char buf[16];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    assert_true(r <= 0);
    close(fd);
    /* service resumes as slots free */
    close(held[0]);
    int served = 0;
    for (int attempt = 0; attempt < 200 && !served; attempt++) {
        fd = open_tunnel(x.port, echo_target("localhost"), 1, &h);
        served = strstr(h.buf, " 200 ") != NULL;
        close(fd);
        if (!served)
            usleep(10000);
    }
    assert_true(served);
    for (int i = 1; i < 4; i++)
        close(held[i]);
    px_end(&x);
    o.max_tunnels = 0;
    px_start(&x, &o);
    /* slowloris: one byte at a time never completes a head; it gets 400 and
     * frees its slot, while another client is served meanwhile */
    int slow = dial(x.port);
    send_all(slow, "C", 1);
    served = 0;
    for (int attempt = 0; attempt < 200 && !served; attempt++) {
        fd = open_tunnel(x.port, echo_target("localhost"), 1, &h);
        served = strstr(h.buf, " 200 ") != NULL;
        close(fd);
    }
    assert_true(served);
    const char *drip = "ONNECT localhost:1 HTTP/1.1\r\n";
    strbuf resp = SB_INIT;
    for (size_t i = 0; drip[i]; i++) {
        if (send(slow, drip + i, 1, MSG_NOSIGNAL) <= 0)
            break;
        struct pollfd pf = {.fd = slow, .events = POLLIN};
        if (poll(&pf, 1, 100) > 0)
            break;
    }
    read_eof(slow, &resp);
    assert_non_null(strstr(resp.buf, "HTTP/1.1 400 Bad Request"));
    close(slow);
    px_end(&x);
    echo_end();
    sb_release(&h);
    sb_release(&resp);
}

/* ---- a bulk server: 'D' streams BLOB_N pattern bytes, 'U' counts what it gets ---- */

#define BLOB_N (32u << 20)
static uint8_t blob_byte(size_t i)
{
    return (uint8_t)(i * 131 + (i >> 12));
}

static int blob_lfd, blob_port;
static void *blob_main(void *arg)
{
    (void)arg;
    for (int served = 0; served < 2; served++) {
        int c = accept4(blob_lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            return NULL;
        char op;
        if (recv(c, &op, 1, MSG_WAITALL) != 1) {
            close(c);
            continue;
        }
        static uint8_t b[1 << 16];
        if (op == 'D') {
            for (size_t off = 0; off < BLOB_N; off += sizeof b) {
                for (size_t i = 0; i < sizeof b; i++)
                    b[i] = blob_byte(off + i);
                if (send(c, b, sizeof b, MSG_NOSIGNAL) != (ssize_t)sizeof b)
                    break;
            }
        } else {
            /* Read nothing for a while: the relay's sends upstream back up. */
            usleep(200000);
            uint64_t got = 0, bad = 0;
            ssize_t r;
            while ((r = recv(c, b, sizeof b, 0)) > 0) {
                for (ssize_t i = 0; i < r; i++)
                    bad += b[i] != blob_byte(got + (size_t)i);
                got += (uint64_t)r;
            }
            uint64_t reply[2] = {got, bad};
            send(c, reply, sizeof reply, MSG_NOSIGNAL);
        }
        close(c);
    }
    return NULL;
}

static void *upload_main(void *arg)
{
    int fd = *(int *)arg;
    static uint8_t b[1 << 16];
    for (size_t off = 0; off < BLOB_N; off += sizeof b) {
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = blob_byte(off + i);
        send_all(fd, b, sizeof b);
    }
    shutdown(fd, SHUT_WR);
    return NULL;
}

/* A receiver that falls behind: the relay keeps what it could not pass on,
 * delivers every byte once and in order (the 200 line is not repeated),
 * carries the half-close, and serves another tunnel while one is stuck. */
static void test_bulk_backpressure(void **st)
{
    (void)st;
    rec_reset();
    echo_start();
    blob_lfd = listen_lo(&blob_port);
    pthread_t bt;
    pthread_create(&bt, NULL, blob_main, NULL);
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1, .decide = decide_cb};
    px_start(&x, &o);
    strbuf h = SB_INIT;
    char target[64];
    snprintf(target, sizeof target, "localhost:%d", blob_port);

    /* download: the client reads nothing until another tunnel got served */
    int fd = open_tunnel(x.port, target, 1, &h);
    assert_string_equal(h.buf, "HTTP/1.1 200 Connection Established\r\n\r\n");
    send_all(fd, "D", 1);
    int other = open_tunnel(x.port, echo_target("localhost"), 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    char e[4];
    send_all(other, "ping", 4);
    read_exact(other, e, 4);
    assert_memory_equal(e, "ping", 4);
    close(other);
    static uint8_t b[1 << 16];
    size_t got = 0, bad = 0;
    ssize_t r;
    while ((r = recv(fd, b, sizeof b, 0)) > 0) {
        for (ssize_t i = 0; i < r; i++)
            bad += b[i] != blob_byte(got + (size_t)i);
        got += (size_t)r;
    }
    assert_int_equal(got, BLOB_N);
    assert_int_equal(bad, 0);
    close(fd);

    /* upload: the server reads nothing at first; the client half-closes */
    fd = open_tunnel(x.port, target, 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    send_all(fd, "U", 1);
    pthread_t ut;
    pthread_create(&ut, NULL, upload_main, &fd);
    uint64_t reply[2];
    read_exact(fd, reply, sizeof reply);
    pthread_join(ut, NULL);
    assert_int_equal(reply[0], BLOB_N);
    assert_int_equal(reply[1], 0);
    close(fd);
    assert_int_equal(rec_wait(3)->allowed, 1);
    pthread_join(bt, NULL);
    close(blob_lfd);
    px_end(&x);
    echo_end();
    sb_release(&h);
}

static void test_thousand_tunnels(void **st)
{
    (void)st;
    /* ~4,000 descriptors live at once (client, proxy both sides, echo
     * server), with room to spare; as root the hard limit is raised too. */
    enum { NEED_FDS = 12000 };
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max < NEED_FDS && geteuid() == 0) {
        struct rlimit up = {NEED_FDS, NEED_FDS};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    rl.rlim_cur = rl.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < NEED_FDS) {
        char why[128];
        snprintf(why, sizeof why, "RLIMIT_NOFILE hard limit %lu < %d (ulimit -Hn)",
                 (unsigned long)rl.rlim_cur, (int)NEED_FDS);
        tu_skip(why);
    }
    rec_reset();
    echo_start();
    struct px x;
    struct sbx_proxy_opts o = {.token = TOKEN, .allow_local = 1};
    px_start(&x, &o);
    struct sbx_proxy_stats s;
    sbx_proxy_get_stats(x.p, &s);
    assert_int_equal(s.max_tunnels, 1024);
    enum { N = 1000 };
    static int fds[N];
    strbuf h = SB_INIT;
    uint8_t b[20000], back[20000];
    size_t n = th_hello(b, "localhost", 0, 0);
    for (int i = 0; i < N; i++) {
        fds[i] = open_tunnel(x.port, echo_target("localhost"), 1, &h);
        assert_non_null(strstr(h.buf, " 200 "));
        send_all(fds[i], b, n);
        read_exact(fds[i], back, n);
    }
    /* with 1000 live tunnels, another client is still served */
    int fd = open_tunnel(x.port, echo_target("localhost"), 1, &h);
    assert_non_null(strstr(h.buf, " 200 "));
    send_all(fd, b, n);
    read_exact(fd, back, n);
    assert_memory_equal(b, back, n);
    close(fd);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    px_end(&x);
    echo_end();
    sb_release(&h);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_tunnel_relays),
        cmocka_unit_test(test_token_required),
        cmocka_unit_test(test_policy_denial),
        cmocka_unit_test(test_sni_checks),
        cmocka_unit_test(test_lockdown_literal_ip),
        cmocka_unit_test(test_ssrf_guard),
        cmocka_unit_test(test_rebinding),
        cmocka_unit_test(test_address_rules),
        cmocka_unit_test(test_unrecorded_refused),
        cmocka_unit_test(test_plain_http_forwarded),
        cmocka_unit_test(test_plain_http_one_request),
        cmocka_unit_test(test_tunnel_cap_and_slowloris),
        cmocka_unit_test(test_bulk_backpressure),
        cmocka_unit_test(test_thousand_tunnels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
