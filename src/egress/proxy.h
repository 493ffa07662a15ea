/*
 * proxy — the per-run egress proxy: one epoll loop, HTTP CONNECT tunnels
 * relayed through a growing buffer per direction, and plain-HTTP
 * absolute-form forwarding (docs/sandbox.md).
 *
 * Why: under --lockdown this proxy is the sandbox's only route out, and
 * under --sandbox it is the route every proxy-honouring tool takes; the
 * gateway's confined servers have it as theirs. Every destination is
 * decided here, once, and every decision is recorded. It is its own module
 * (src/egress, docs/architecture.md) because both the sandbox and the
 * gateway run it, each with its own decision callback.
 *
 * Guarantees, per connection, in order:
 *  - a tunnel cap (default 1024; RLIMIT_NOFILE is raised to fit) — past it a
 *    connection is closed without a byte; a failed evidence write refuses
 *    the connection (never an unrecorded tunnel);
 *  - the head is read within a deadline and a size cap (slowloris and
 *    oversize heads get 400 and free their slot), then parsed strictly;
 *  - the per-run token (when set) is checked in constant time: 407 without;
 *  - the host is normalized (non-canonical hosts refused), literal IPs are
 *    refused under lockdown, gateway-only hosts are refused, then the
 *    decision callback (policy) rules on (identity, host, port);
 *  - the name is resolved exactly once and only an address outside every
 *    loopback/private/link-local/reserved class (pol_addr_local_class, the
 *    classes the gateway uses too) that no deny rule matches is dialled —
 *    the same sockaddr that was checked, so DNS rebinding cannot redirect
 *    it (allow_local, for tests only, skips the class check);
 *  - a tunnel's first flight must be a TLS ClientHello whose SNI equals the
 *    CONNECT host (absent SNI passes; under lockdown non-TLS and ECH are
 *    refused); nothing reaches the upstream before that check passes;
 *  - exactly one egress event per connection that got past parsing: the
 *    final outcome, with host, port, layer and rule.
 * The loop never blocks on a peer: resolution runs on helper threads and
 * every socket is non-blocking.
 */
#ifndef AS_EGRESS_PROXY_H
#define AS_EGRESS_PROXY_H

#include <stddef.h>
#include <sys/socket.h>

#include "base/err.h"

struct sbx_verdict {
    int allowed;
    char layer[16];    /* "machine", "project", "proxy", or "default" (unconstrained) */
    char pattern[256]; /* the policy entry that decided ("!blocked.invalid"), or "" */
    char rule[768];    /* full refusal text; "" on allow */
    char brief[512];   /* the report's short form, or "" (then rule is shown) */
};

/* Rules on one destination. host is normalized; port is the CONNECT or
 * request port. Must fill v; returns 0 (any error is a deny with rule text). */
typedef int (*sbx_egress_decide_fn)(void *ctx, const char *identity, const char *host, int port,
                                    struct sbx_verdict *v);

/* Rules on one address the host resolved to (sa), after the host itself was
 * allowed: deny rules that match the address refuse it (a name cannot dodge
 * `!1.2.3.4` by resolving to it). Same contract as sbx_egress_decide_fn. */
typedef int (*sbx_egress_decide_addr_fn)(void *ctx, const char *identity, const char *host,
                                         const struct sockaddr *sa, int port,
                                         struct sbx_verdict *v);

struct sbx_egress_event {
    const char *identity;
    const char *host; /* normalized when it could be, else as written */
    int port;
    const char *kind; /* "connect" or "http" */
    const struct sbx_verdict *v;
};
/* Records one decision; -1 when it could not be written (the proxy then
 * refuses the connection rather than run it unrecorded). */
typedef int (*sbx_egress_record_fn)(void *ctx, const struct sbx_egress_event *ev);

/* Test seams: a resolver returning up to max addresses (count, or -1 with
 * errbuf), and a hook that may rewrite the validated address just before
 * the dial (to land a "public" answer on a loopback test server). */
typedef int (*sbx_resolve_fn)(void *ctx, const char *host, int port, struct sockaddr_storage *addrs,
                              socklen_t *lens, int max, char *errbuf, size_t errsz);
typedef void (*sbx_dial_fn)(void *ctx, struct sockaddr_storage *addr, socklen_t *len);

struct sbx_proxy_opts {
    const char *identity; /* egress identity (the adapter id) */
    const char *token;    /* per-run token; NULL = no authentication */
    int lockdown;
    int allow_local;                       /* AGENTSTACK_ALLOW_LOCAL_TARGETS: tests only */
    int max_tunnels;                       /* 0 = 1024 */
    int head_timeout_ms;                   /* 0 = 15000 */
    int flight_timeout_ms;                 /* 0 = 15000 */
    int resolve_timeout_ms;                /* 0 = 15000 */
    int dial_timeout_ms;                   /* 0 = 15000 */
    int idle_timeout_ms;                   /* 0 = 600000 */
    const char *const *gateway_only_hosts; /* NULL-terminated, normalized; may be NULL */
    sbx_egress_decide_fn decide;           /* NULL = allow everything (layer "default") */
    sbx_egress_decide_addr_fn decide_addr; /* NULL = no rule on addresses; shares decide_ctx */
    void *decide_ctx;
    sbx_egress_record_fn record; /* NULL = record nothing */
    void *record_ctx;
    sbx_resolve_fn resolve; /* NULL = getaddrinfo */
    void *resolve_ctx;
    sbx_dial_fn dial; /* NULL = dial as resolved */
    void *dial_ctx;
};

struct sbx_proxy_stats {
    int max_tunnels; /* the cap in force (after fitting RLIMIT_NOFILE) */
    int active;      /* connections in any state */
    unsigned long accepted, refused_cap, allowed, denied;
};

struct sbx_proxy;

struct sbx_proxy *sbx_proxy_new(const struct sbx_proxy_opts *o, struct as_err *err);
/* Serves an already-listening socket (e.g. one created inside the sandbox's
 * network namespace and received over SCM_RIGHTS). Takes ownership. */
int sbx_proxy_add_listener(struct sbx_proxy *p, int fd, struct as_err *err);
/* Binds and serves ip:port (port 0 = ephemeral); *bound gets the port. */
int sbx_proxy_listen(struct sbx_proxy *p, const char *ip, int port, int *bound, struct as_err *err);
/* Runs the loop until one of wake_fds is readable; returns its index, or -1
 * with err on a loop failure. The wake fds are only polled, never read. */
int sbx_proxy_run(struct sbx_proxy *p, const int *wake_fds, size_t n_wake, struct as_err *err);
/* For a caller with its own event loop: the descriptor to watch (readable
 * when the proxy has work), and one turn that does that work without
 * blocking, plus the deadline scan when it is due (call it at least every
 * few hundred ms while connections are active). -1 + err on a loop failure. */
int sbx_proxy_fd(const struct sbx_proxy *p);
int sbx_proxy_turn(struct sbx_proxy *p, struct as_err *err);
/* Stops accepting: closes every listener (accepted tunnels go on). */
void sbx_proxy_close_listeners(struct sbx_proxy *p);
void sbx_proxy_get_stats(const struct sbx_proxy *p, struct sbx_proxy_stats *s);
/* Closes every connection and listener; waits for resolver threads. */
void sbx_proxy_free(struct sbx_proxy *p);

/* The canonical refusal texts (also used by tests and docs). */
#define SBX_RULE_CREDENTIALS "proxy client did not present the expected credentials"
#define SBX_RULE_LITERAL_IP                                                                        \
    "literal-IP (numeric-host) CONNECT target refused under lockdown — name the host instead"
#define SBX_RULE_NON_TLS "non-TLS tunnel refused under lockdown — only TLS egress is permitted"
#define SBX_RULE_INCOMPLETE "incomplete TLS ClientHello — cannot verify SNI, failing closed"
#define SBX_RULE_UNVERIFIABLE                                                                      \
    "unverifiable TLS ClientHello (truncated or record-fragmented) — cannot check "              \
    "SNI, failing closed"
#define SBX_RULE_ECH                                                                               \
    "encrypted ClientHello (ECH) refused under lockdown — the inner server name cannot be checked"

#endif
