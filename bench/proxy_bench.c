/*
 * proxy_bench — drives the sandbox's egress proxy (src/egress/proxy.h)
 * outside a sandbox, so `make bench` can set a tunnel beside a direct
 * loopback connection measured in the same run (docs/performance.md).
 *
 * Why a driver: the CLI has no standalone proxy yet (docs/sandbox.md, "Not
 * built yet"), and the proxy must run as its own process so that `strace -c`
 * on it counts only the relay's system calls (the splice evidence).
 *
 *   proxy_bench serve DIR
 *       Runs the proxy as `run --lockdown` configures it: the per-run token,
 *       lockdown rules (named hosts only, TLS first flight whose SNI must
 *       match), an allowlist decision, and the real flight recorder writing
 *       DIR/runs/<id>/events.jsonl. Names resolve to 127.0.0.1 through the
 *       resolver seam (allow_local, as the proxy's own tests do). Prints
 *       "port N", serves until stdin reaches EOF, then prints the counters.
 *   proxy_bench client PORT MIB SETUPS
 *       Starts loopback servers (source, sink, ping) on threads and two bare
 *       relays in child processes — blocking, a thread per direction, one
 *       splicing through a pipe and one copying through a buffer: the floor
 *       any relay pays here — then measures a MIB download and upload
 *       directly, through each bare relay and through the proxy at PORT
 *       (interleaved, best and median of 5), and SETUPS connection setups
 *       (CONNECT, 200, ClientHello, first upstream byte) directly and
 *       through the proxy; prints table rows. With PROXY_BENCH_PROXY_PID
 *       set to the proxy's pid it also prints the CPU time each path costs
 *       per GiB (this process's client and server threads, plus the proxy),
 *       which bounds what a relayed path can reach on this many cores.
 *       With PROXY_BENCH_PEER_PORT set to a peer CONNECT proxy on loopback
 *       (tinyproxy, started by bench/proxy_bench.sh) it times the same
 *       download through the peer too, in the same interleaving.
 *   proxy_bench transfer PORT MIB
 *       One proxied download and upload of MIB each, untimed (for strace).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "egress/proxy.h"
#include "sandbox/record.h"

#define BENCH_HOST "bench.example"
#define BENCH_TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
/* base64("agentstack:" BENCH_TOKEN), the header a sandboxed curl sends */
#define BENCH_AUTH                                                                                 \
    "YWdlbnRzdGFjazowMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYw"             \
    "MTIzNDU2Nzg5YWJjZGVm"
#define CHUNK (1u << 20)
#define REPS 5

static void die(const char *what)
{
    fprintf(stderr, "proxy_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- serve --------------------------------------------------------------------- */

static int bench_resolve(void *ctx, const char *host, int port, struct sockaddr_storage *addrs,
                         socklen_t *lens, int max, char *errbuf, size_t errsz)
{
    (void)ctx;
    if (strcmp(host, BENCH_HOST) != 0 || max < 1) {
        snprintf(errbuf, errsz, "no such host");
        return -1;
    }
    struct sockaddr_in *sa = (struct sockaddr_in *)&addrs[0];
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lens[0] = sizeof *sa;
    return 1;
}

/* An allowlist of one host, as a project's [policy.egress] would decide it. */
static int bench_decide(void *ctx, const char *id, const char *host, int port,
                        struct sbx_verdict *v)
{
    (void)ctx;
    (void)id;
    (void)port;
    memset(v, 0, sizeof *v);
    snprintf(v->layer, sizeof v->layer, "project");
    if (strcmp(host, BENCH_HOST) == 0) {
        v->allowed = 1;
        snprintf(v->pattern, sizeof v->pattern, "%s", BENCH_HOST);
    } else {
        snprintf(v->rule, sizeof v->rule, "not in the egress allowlist (%s)", BENCH_HOST);
    }
    return 0;
}

static int serve(const char *dir)
{
    struct as_err err = AS_ERR_INIT;
    char eb[4096];
    struct sbx_rec rec;
    if (sbx_rec_create(dir, "r-00000bench", "lockdown", &rec, &err) < 0) {
        fprintf(stderr, "proxy_bench: %s\n", as_err_str(&err, eb, sizeof eb));
        return 1;
    }
    struct sbx_proxy_opts o = {
        .identity = "bench",
        .token = BENCH_TOKEN,
        .lockdown = 1,
        .allow_local = 1,
        .decide = bench_decide,
        .record = sbx_rec_egress,
        .record_ctx = &rec,
        .resolve = bench_resolve,
    };
    struct sbx_proxy *p = sbx_proxy_new(&o, &err);
    int port = 0;
    if (!p || sbx_proxy_listen(p, "127.0.0.1", 0, &port, &err) < 0) {
        fprintf(stderr, "proxy_bench: %s\n", as_err_str(&err, eb, sizeof eb));
        return 1;
    }
    printf("port %d\n", port);
    fflush(stdout);
    int wake = 0;
    int rc = sbx_proxy_run(p, &wake, 1, &err);
    struct sbx_proxy_stats st;
    sbx_proxy_get_stats(p, &st);
    printf("accepted %lu allowed %lu denied %lu\n", st.accepted, st.allowed, st.denied);
    sbx_proxy_free(p);
    sbx_rec_close(&rec);
    if (rc < 0) {
        fprintf(stderr, "proxy_bench: %s\n", as_err_str(&err, eb, sizeof eb));
        return 1;
    }
    return 0;
}

/* ---- loopback servers ------------------------------------------------------------- */

static uint8_t g_buf[CHUNK];
static size_t g_bytes;

static int listen_lo(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0)
        die("listen");
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return fd;
}

static int read_full(int fd, void *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (uint8_t *)b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *b, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t w = write(fd, (const uint8_t *)b + put, n - put);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        put += (size_t)w;
    }
    return 0;
}

/* Every client opens with one TLS record (the ClientHello): consume it. */
static int read_hello(int fd)
{
    uint8_t h[5], body[65536];
    if (read_full(fd, h, 5) < 0 || h[0] != 0x16)
        return -1;
    return read_full(fd, body, (size_t)h[3] << 8 | h[4]);
}

enum srv_kind { SRV_SOURCE, SRV_SINK, SRV_PING };
struct srv {
    enum srv_kind kind;
    int lfd, port;
};

static void *srv_main(void *arg)
{
    struct srv *s = arg;
    uint8_t *sb = malloc(CHUNK / 2);
    if (!sb)
        die("malloc");
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        if (read_hello(fd) == 0) {
            if (s->kind == SRV_SOURCE) {
                for (size_t sent = 0; sent < g_bytes; sent += CHUNK)
                    if (write_full(fd, g_buf, g_bytes - sent < CHUNK ? g_bytes - sent : CHUNK))
                        break;
            } else if (s->kind == SRV_SINK) {
                uint64_t total = 0;
                ssize_t r;
                while ((r = read(fd, sb, CHUNK / 2)) > 0 || (r < 0 && errno == EINTR))
                    total += r > 0 ? (uint64_t)r : 0;
                write_full(fd, &total, sizeof total);
            } else {
                char b[256];
                write_full(fd, "k", 1);
                while (read(fd, b, sizeof b) > 0) {
                }
            }
        }
        close(fd);
    }
}

static void srv_start(struct srv *s, enum srv_kind k)
{
    pthread_t t;
    s->kind = k;
    s->lfd = listen_lo(&s->port);
    if (pthread_create(&t, NULL, srv_main, s) != 0)
        die("pthread_create");
    pthread_detach(t);
}

/* ---- the floor: bare relays ----------------------------------------------------- */

/* What any CONNECT relay costs on this machine: no policy, no recorder, no
 * event loop — a blocking thread per direction, either splicing through a
 * pipe or copying through a buffer. The proxy is judged against both as
 * well as against direct. */
static int g_relay_copy; /* the relay child's mode */

struct half {
    int from, to;
};

static void *relay_pump(void *arg)
{
    struct half *h = arg;
    if (g_relay_copy) {
        uint8_t *b = malloc(CHUNK);
        if (!b)
            die("malloc");
        ssize_t n;
        while ((n = read(h->from, b, CHUNK)) > 0)
            if (write_full(h->to, b, (size_t)n) < 0)
                break;
        free(b);
        shutdown(h->to, SHUT_WR);
        return NULL;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        die("pipe2");
    for (;;) {
        ssize_t n = splice(h->from, NULL, pfd[1], NULL, CHUNK, SPLICE_F_MOVE);
        if (n <= 0)
            break;
        while (n > 0) {
            ssize_t w = splice(pfd[0], NULL, h->to, NULL, (size_t)n, SPLICE_F_MOVE);
            if (w <= 0)
                goto out;
            n -= w;
        }
    }
out:
    shutdown(h->to, SHUT_WR);
    close(pfd[0]);
    close(pfd[1]);
    return NULL;
}

static int dial(int port);

static void *relay_conn(void *arg)
{
    int c = (int)(intptr_t)arg;
    char h[1024];
    size_t got = 0;
    while (got < 4 || memcmp(h + got - 4, "\r\n\r\n", 4) != 0) {
        if (got == sizeof h - 1 || read_full(c, h + got, 1) < 0) {
            close(c);
            return NULL;
        }
        got++;
    }
    h[got] = 0;
    const char *colon = strchr(h, ':');
    int u = dial(colon ? atoi(colon + 1) : 0);
    static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    write_full(c, ok, sizeof ok - 1);
    struct half a = {c, u}, b = {u, c};
    pthread_t t;
    if (pthread_create(&t, NULL, relay_pump, &a) != 0)
        die("pthread_create");
    relay_pump(&b);
    pthread_join(t, NULL);
    close(c);
    close(u);
    return NULL;
}

/* Runs in a child process; reports its port on `out`. */
static void relay_main(int out)
{
    int port;
    int lfd = listen_lo(&port);
    write_full(out, &port, sizeof port);
    close(out);
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, relay_conn, (void *)(intptr_t)c) != 0)
            die("pthread_create");
        pthread_detach(t);
    }
}

/* ---- client ------------------------------------------------------------------------- */

/* A minimal TLS 1.3 ClientHello record with SNI BENCH_HOST: what the
 * lockdown proxy demands as the first flight of every tunnel. */
static size_t make_hello(uint8_t *out)
{
    static const char sni[] = BENCH_HOST;
    const size_t l = sizeof sni - 1;
    uint8_t ext[128], body[256];
    size_t e = 0, b = 0;
    ext[e++] = 0, ext[e++] = 0; /* server_name */
    ext[e++] = 0, ext[e++] = (uint8_t)(l + 5);
    ext[e++] = 0, ext[e++] = (uint8_t)(l + 3);
    ext[e++] = 0;
    ext[e++] = 0, ext[e++] = (uint8_t)l;
    memcpy(ext + e, sni, l), e += l;
    ext[e++] = 0x00, ext[e++] = 0x2b; /* supported_versions: TLS 1.3 */
    ext[e++] = 0, ext[e++] = 3, ext[e++] = 2, ext[e++] = 0x03, ext[e++] = 0x04;
    body[b++] = 0x03, body[b++] = 0x03;
    for (int i = 0; i < 32; i++)
        body[b++] = (uint8_t)i;
    body[b++] = 0;                                                    /* session id */
    body[b++] = 0, body[b++] = 2, body[b++] = 0x13, body[b++] = 0x01; /* suites */
    body[b++] = 1, body[b++] = 0;                                     /* compression */
    body[b++] = 0, body[b++] = (uint8_t)e;
    memcpy(body + b, ext, e), b += e;
    size_t n = 0;
    out[n++] = 0x16, out[n++] = 0x03, out[n++] = 0x01;
    out[n++] = (uint8_t)((b + 4) >> 8), out[n++] = (uint8_t)(b + 4);
    out[n++] = 0x01, out[n++] = 0, out[n++] = (uint8_t)(b >> 8), out[n++] = (uint8_t)b;
    memcpy(out + n, body, b);
    return n + b;
}

static uint8_t g_hello[512];
static size_t g_hello_len;

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("connect");
    return fd;
}

/* A connection to the server on `port` — through the CONNECT relay on
 * `via` unless it is 0 — with the ClientHello sent, as curl behind
 * HTTPS_PROXY does. */
static int g_peer_port; /* a peer proxy (PROXY_BENCH_PEER_PORT), or 0 */
static int open_conn(int port, int via)
{
    int fd;
    if (via) {
        fd = dial(via);
        char head[512];
        /* The peer resolves names itself, so it is sent the loopback
         * address; ours is sent the name its resolver seam maps there. */
        const char *host = via == g_peer_port ? "127.0.0.1" : BENCH_HOST;
        int n = snprintf(head, sizeof head,
                         "CONNECT %s:%d HTTP/1.1\r\nHost: %s"
                         ":%d\r\nProxy-Authorization: Basic " BENCH_AUTH "\r\n\r\n",
                         host, port, host, port);
        if (write_full(fd, head, (size_t)n) < 0)
            die("CONNECT");
        /* The upstream says nothing before the hello, so the reply is all
         * that can arrive: read it a byte at a time to stop at its end. */
        char rb[512];
        size_t got = 0;
        while (got < 4 || memcmp(rb + got - 4, "\r\n\r\n", 4) != 0) {
            if (got == sizeof rb || read_full(fd, rb + got, 1) < 0) {
                fprintf(stderr, "proxy_bench: the proxy refused the tunnel\n");
                exit(1);
            }
            got++;
        }
        if (strncmp(rb, "HTTP/1.1 200", 12) != 0 && strncmp(rb, "HTTP/1.0 200", 12) != 0) {
            fprintf(stderr, "proxy_bench: proxy answered %.*s\n", (int)got, rb);
            exit(1);
        }
    } else {
        fd = dial(port);
    }
    if (write_full(fd, g_hello, g_hello_len) < 0)
        die("hello");
    return fd;
}

static double download(int port, int via)
{
    double t = now_s();
    int fd = open_conn(port, via);
    static uint8_t rb[CHUNK];
    size_t total = 0;
    ssize_t r;
    while ((r = read(fd, rb, sizeof rb)) > 0 || (r < 0 && errno == EINTR))
        total += r > 0 ? (size_t)r : 0;
    t = now_s() - t;
    close(fd);
    if (total != g_bytes) {
        fprintf(stderr, "proxy_bench: download got %zu of %zu bytes\n", total, g_bytes);
        exit(1);
    }
    return t;
}

static double upload(int port, int via)
{
    double t = now_s();
    int fd = open_conn(port, via);
    for (size_t sent = 0; sent < g_bytes; sent += CHUNK)
        if (write_full(fd, g_buf, g_bytes - sent < CHUNK ? g_bytes - sent : CHUNK) < 0)
            die("upload");
    shutdown(fd, SHUT_WR);
    uint64_t got = 0;
    if (read_full(fd, &got, sizeof got) < 0)
        die("upload reply");
    t = now_s() - t;
    close(fd);
    if (got != g_bytes) {
        fprintf(stderr, "proxy_bench: upload delivered %llu of %zu bytes\n",
                (unsigned long long)got, g_bytes);
        exit(1);
    }
    return t;
}

static double setup_once(int port, int via)
{
    double t = now_s();
    int fd = open_conn(port, via);
    char c;
    if (read_full(fd, &c, 1) < 0)
        die("first byte");
    t = now_s() - t;
    close(fd);
    return t;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void row(const char *name, const char *ours, const char *base, const char *delta)
{
    printf("%-34s %12s %12s %10s\n", name, ours, base, delta);
}

static void rate_row(const char *name, double tp, double tb)
{
    char o[32], b[32], d[32];
    double mib = (double)g_bytes / (1 << 20);
    snprintf(o, sizeof o, "%.0fMiB/s", mib / tp);
    snprintf(b, sizeof b, "%.0fMiB/s", mib / tb);
    snprintf(d, sizeof d, "%.2fx", tb / tp);
    row(name, o, b, d);
}

static double self_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The proxy's CPU time: its event loop thread does all the relaying (the
 * first field of schedstat is that thread's run time in ns, softirq work
 * it ran included). */
static int g_proxy_pid;
static double proxy_cpu_s(void)
{
    if (!g_proxy_pid)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", g_proxy_pid);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (f) {
        if (fscanf(f, "%llu", &ns) != 1)
            ns = 0;
        fclose(f);
    }
    return (double)ns / 1e9;
}

static void setup_rows(int port, int proxy, int n)
{
    double *sp = calloc((size_t)n, sizeof *sp), *sd = calloc((size_t)n, sizeof *sd);
    if (!sp || !sd)
        die("calloc");
    for (int i = 0; i < 20; i++) /* warm both paths */
        setup_once(port, i & 1 ? proxy : 0);
    for (int i = 0; i < n; i++) {
        sd[i] = setup_once(port, 0);
        sp[i] = setup_once(port, proxy);
    }
    qsort(sp, (size_t)n, sizeof *sp, cmp_d);
    qsort(sd, (size_t)n, sizeof *sd, cmp_d);
    static const int pcts[2] = {50, 90};
    for (int k = 0; k < 2; k++) {
        size_t at = (size_t)n * (size_t)pcts[k] / 100;
        if (at >= (size_t)n)
            at = (size_t)n - 1;
        char name[64], o[32], b[32], d[32];
        snprintf(name, sizeof name, "proxy tunnel setup p%d", pcts[k]);
        snprintf(o, sizeof o, "%.0fus", sp[at] * 1e6);
        snprintf(b, sizeof b, "%.0fus", sd[at] * 1e6);
        snprintf(d, sizeof d, "+%.0fus", (sp[at] - sd[at]) * 1e6);
        row(name, o, b, d);
    }
    free(sp);
    free(sd);
}

static int client(int proxy, long mib_arg, int setups, int timed)
{
    g_bytes = (size_t)mib_arg << 20;
    for (size_t i = 0; i < CHUNK; i++)
        g_buf[i] = (uint8_t)(i * 131 + (i >> 12));
    g_hello_len = make_hello(g_hello);
    /* The bare relays are forked before any thread exists. */
    int relay[2] = {0, 0};
    pid_t rpid[2] = {-1, -1};
    for (int k = 0; timed && k < 2; k++) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
            die("pipe2");
        rpid[k] = fork();
        if (rpid[k] < 0)
            die("fork");
        if (rpid[k] == 0) {
            close(pfd[0]);
            g_relay_copy = k;
            relay_main(pfd[1]);
            _exit(0);
        }
        close(pfd[1]);
        if (read_full(pfd[0], &relay[k], sizeof relay[k]) < 0)
            die("relay port");
        close(pfd[0]);
    }
    static struct srv source, sink, ping;
    srv_start(&source, SRV_SOURCE);
    srv_start(&sink, SRV_SINK);
    srv_start(&ping, SRV_PING);
    if (!timed) {
        download(source.port, proxy);
        upload(sink.port, proxy);
        return 0;
    }
    const char *pid = getenv("PROXY_BENCH_PROXY_PID");
    g_proxy_pid = pid ? atoi(pid) : 0;
    /* Interleaved: each path gets the same machine weather. */
    const char *peer = getenv("PROXY_BENCH_PEER_PORT");
    g_peer_port = peer ? atoi(peer) : 0;
    enum { P_DIRECT, P_SPLICE, P_COPY, P_PROXY, P_PEER, NPATH };
    const int via[NPATH] = {0, relay[0], relay[1], proxy, g_peer_port};
    double t[2][NPATH][REPS], cpu[2][NPATH] = {{0}}, pcpu[2] = {0};
    for (int i = 0; i < REPS; i++)
        for (int dir = 0; dir < 2; dir++)
            for (int k = 0; k < NPATH; k++) {
                /* the peer: the download only (tinyproxy ends a tunnel
                 * when the client half-closes, before the sink replies) */
                if (k == P_PEER && (!g_peer_port || dir))
                    continue;
                double c0 = self_cpu_s(), p0 = proxy_cpu_s();
                t[dir][k][i] = dir ? upload(sink.port, via[k]) : download(source.port, via[k]);
                cpu[dir][k] += self_cpu_s() - c0;
                if (k == P_PROXY)
                    pcpu[dir] += proxy_cpu_s() - p0;
            }
    static const char *const dname[2] = {"download", "upload"};
    double mib = (double)g_bytes / (1 << 20);
    for (int dir = 0; dir < 2; dir++) {
        double best[NPATH], med[NPATH];
        for (int k = 0; k < NPATH; k++) {
            if (k == P_PEER && (!g_peer_port || dir))
                continue;
            qsort(t[dir][k], REPS, sizeof(double), cmp_d);
            best[k] = t[dir][k][0];
            med[k] = t[dir][k][REPS / 2];
        }
        char name[64];
        snprintf(name, sizeof name, "proxy %s %ld MiB vs direct", dname[dir], mib_arg);
        rate_row(name, best[P_PROXY], best[P_DIRECT]);
        snprintf(name, sizeof name, "  median of %d", REPS);
        rate_row(name, med[P_PROXY], med[P_DIRECT]);
        snprintf(name, sizeof name, "proxy %s vs bare splice relay", dname[dir]);
        rate_row(name, best[P_PROXY], best[P_SPLICE]);
        snprintf(name, sizeof name, "proxy %s vs bare copy relay", dname[dir]);
        rate_row(name, best[P_PROXY], best[P_COPY]);
        if (g_peer_port && !dir) {
            char o[32], b[32], d[48];
            snprintf(name, sizeof name, "proxy %s vs tinyproxy", dname[dir]);
            snprintf(o, sizeof o, "%.0fMiB/s", mib / best[P_PROXY]);
            snprintf(b, sizeof b, "%.0fMiB/s", mib / best[P_PEER]);
            snprintf(d, sizeof d, "%.1fx (>=5x)", best[P_PEER] / best[P_PROXY]);
            row(name, o, b, d);
            snprintf(name, sizeof name, "  median of %d", REPS);
            snprintf(o, sizeof o, "%.0fMiB/s", mib / med[P_PROXY]);
            snprintf(b, sizeof b, "%.0fMiB/s", mib / med[P_PEER]);
            snprintf(d, sizeof d, "%.1fx", med[P_PEER] / med[P_PROXY]);
            row(name, o, b, d);
        }
        if (!g_proxy_pid)
            continue;
        /* CPU seconds per GiB moved, summed over every participant: the
         * relayed path runs a second TCP connection, and on N cores it can
         * go no faster than N / (its CPU per byte). */
        double gib = mib * REPS / 1024;
        double cd = cpu[dir][P_DIRECT] / gib, cp = (cpu[dir][P_PROXY] + pcpu[dir]) / gib;
        char o[32], b2[32], d[48];
        snprintf(name, sizeof name, "  CPU s/GiB (proxy %.2f of it)", pcpu[dir] / gib);
        snprintf(o, sizeof o, "%.2fs", cp);
        snprintf(b2, sizeof b2, "%.2fs", cd);
        snprintf(d, sizeof d, "%.2fx", cp / cd);
        row(name, o, b2, d);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        snprintf(name, sizeof name, "  CPU ceiling on %ld cores", ncpu);
        snprintf(o, sizeof o, "%.0fMiB/s", (double)ncpu * 1024 / cp);
        snprintf(b2, sizeof b2, "%.0fMiB/s", mib / best[P_DIRECT]);
        snprintf(d, sizeof d, "%.2fx", (double)ncpu * 1024 / cp / (mib / best[P_DIRECT]));
        row(name, o, b2, d);
    }
    if (setups > 0)
        setup_rows(ping.port, proxy, setups);
    for (int k = 0; k < 2; k++) {
        kill(rpid[k], SIGKILL);
        waitpid(rpid[k], NULL, 0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 3 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2]);
    if (argc == 5 && strcmp(argv[1], "client") == 0)
        return client(atoi(argv[2]), atol(argv[3]), atoi(argv[4]), 1);
    if (argc == 4 && strcmp(argv[1], "transfer") == 0)
        return client(atoi(argv[2]), atol(argv[3]), 0, 0);
    fprintf(stderr, "usage: proxy_bench serve DIR | client PORT MIB SETUPS | "
                    "transfer PORT MIB\n");
    return 2;
}
