/*
 * address — one spelling per IP address, the address classes egress never
 * dials unless a rule names them, and the decision on one resolved address
 * (docs/policy.md "Egress by address").
 *
 * Why here: the egress proxy (sandbox/) and the gateway's HTTP upstreams
 * (gateway/) must judge an address the same way, and both sit above policy/
 * in the module stack. A rule `!127.0.0.1` has to stop `0.0.0.0`,
 * `[::ffff:0.0.0.0]`, `2130706433`, `0x7f.1`, `64:ff9b::7f00:1` and a name
 * that resolves to 127.0.0.1 — so every spelling becomes one canonical text
 * before it meets a pattern, and names are judged by what they resolve to.
 *
 * Guarantees:
 *  - Canonical text: IPv4 as a dotted quad; an IPv6 address that reaches an
 *    IPv4 one (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64
 *    64:ff9b::/96) as that IPv4 address; other IPv6 in inet_ntop form; the
 *    unspecified addresses as the loopback ones they reach when dialled
 *    (0.0.0.0 → 127.0.0.1, :: → ::1). Host normalization (pol_host.c) uses the
 *    same function, so subjects and patterns agree.
 *  - Classes: loopback, unspecified, private, CGNAT, link-local (cloud
 *    metadata 169.254.169.254 included), documentation, benchmarking,
 *    multicast, reserved; every IPv6 address outside 2000::/3, 6to4, Teredo
 *    and the IPv6 documentation ranges; a mapped/compatible address as its
 *    IPv4 address; NAT64 stays refused (outside 2000::/3). Unknown families
 *    are refused.
 *  - pol_egress_address never allocates and never fails open: an address it
 *    cannot render is refused.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "policy/pol_internal.h"

/* ---- canonical text ------------------------------------------------------- */

static void v4_text(uint32_t a, char *out, size_t n)
{
    if (a == 0)
        a = 0x7f000001u; /* connect() to 0.0.0.0 reaches this host */
    snprintf(out, n, "%u.%u.%u.%u", (unsigned)(a >> 24) & 255, (unsigned)(a >> 16) & 255,
             (unsigned)(a >> 8) & 255, (unsigned)a & 255);
}

static uint32_t low32(const uint8_t *b)
{
    return (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
}

/* The IPv4 address an IPv6 one reaches or stands for: mapped, compatible
 * (but not :: and ::1), NAT64 well-known prefix. */
static int embedded_v4(const uint8_t *b, uint32_t *v4)
{
    static const uint8_t zero10[10] = {0};
    static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(b, zero10, 10) == 0 && b[10] == 0xff && b[11] == 0xff) {
        *v4 = low32(b);
        return 1;
    }
    if (memcmp(b, zero10, 10) == 0 && b[10] == 0 && b[11] == 0 && low32(b) > 1) {
        *v4 = low32(b);
        return 1;
    }
    if (memcmp(b, nat64, 12) == 0) {
        *v4 = low32(b);
        return 1;
    }
    return 0;
}

int pol_addr_text(int family, const void *addr, char *out, size_t n)
{
    if (n < 16)
        return -1;
    if (family == AF_INET) {
        uint32_t a;
        memcpy(&a, addr, 4);
        v4_text(ntohl(a), out, n);
        return 0;
    }
    if (family != AF_INET6)
        return -1;
    const uint8_t *b = addr;
    uint32_t v4;
    if (embedded_v4(b, &v4)) {
        v4_text(v4, out, n);
        return 0;
    }
    static const uint8_t zero16[16] = {0};
    if (memcmp(b, zero16, 16) == 0) {
        snprintf(out, n, "::1"); /* connect() to :: reaches this host */
        return 0;
    }
    return inet_ntop(AF_INET6, b, out, (socklen_t)n) ? 0 : -1;
}

int pol_addr_canon(const struct sockaddr *sa, char *out, size_t n)
{
    if (sa->sa_family == AF_INET)
        return pol_addr_text(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, n);
    if (sa->sa_family == AF_INET6)
        return pol_addr_text(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, n);
    return -1;
}

/* ---- classes ----------------------------------------------------------------- */

static const char *v4_class(uint32_t a)
{
    static const struct {
        uint32_t net;
        int bits;
        const char *name;
    } bad[] = {
        {0x00000000u, 8, "unspecified"},    {0x0a000000u, 8, "private"},
        {0x64400000u, 10, "CGNAT"},         {0x7f000000u, 8, "loopback"},
        {0xa9fe0000u, 16, "link-local"},    {0xac100000u, 12, "private"},
        {0xc0000000u, 24, "reserved"},      {0xc0000200u, 24, "documentation"},
        {0xc0a80000u, 16, "private"},       {0xc6120000u, 15, "benchmarking"},
        {0xc6336400u, 24, "documentation"}, {0xcb007100u, 24, "documentation"},
        {0xe0000000u, 4, "multicast"},      {0xf0000000u, 4, "reserved"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t mask = ~0u << (32 - bad[i].bits);
        if ((a & mask) == bad[i].net)
            return bad[i].name;
    }
    return NULL;
}

const char *pol_addr_local_class(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return v4_class(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6)
        return "not an IP address";
    const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const uint8_t zero10[10] = {0};
    if (memcmp(b, zero10, 10) == 0) {
        uint32_t v4 = low32(b);
        if (b[10] == 0xff && b[11] == 0xff)
            return v4_class(v4); /* ::ffff:a.b.c.d */
        if (b[10] == 0 && b[11] == 0) {
            if (v4 == 0)
                return "unspecified";
            if (v4 == 1)
                return "loopback";
            return v4_class(v4) ? v4_class(v4) : "reserved"; /* ::a.b.c.d */
        }
    }
    if ((b[0] & 0xe0) != 0x20) {
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
            return "link-local";
        if ((b[0] & 0xfe) == 0xfc)
            return "private";
        if (b[0] == 0xff)
            return "multicast";
        return "reserved"; /* outside 2000::/3 (NAT64 64:ff9b::/96 included) */
    }
    if (b[0] == 0x20 && b[1] == 0x02)
        return "reserved"; /* 2002::/16 6to4 */
    if (b[0] == 0x20 && b[1] == 0x01) {
        if (b[2] == 0x00 && b[3] == 0x00)
            return "reserved"; /* 2001::/32 Teredo */
        if (b[2] == 0x0d && b[3] == 0xb8)
            return "documentation"; /* 2001:db8::/32 */
        if (b[2] == 0x00 && b[3] == 0x02 && b[4] == 0 && b[5] == 0)
            return "benchmarking"; /* 2001:2::/48 */
        if (b[2] == 0x00 && ((b[3] & 0xf0) == 0x10 || (b[3] & 0xf0) == 0x20))
            return "reserved"; /* 2001:10::/28, 2001:20::/28 (ORCHID) */
    }
    if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0)
        return "documentation"; /* 3fff::/20 */
    return NULL;
}

/* ---- the decision --------------------------------------------------------------- */

/* A literal (star-free) allow entry of side equal to s, honouring its pin. */
static int side_names(const struct pol_side *side, const char *s, unsigned port)
{
    for (uint32_t b = 0; side && b < side->nallow; b++) {
        const struct pol_globset *gs = &side->allow[b];
        for (uint32_t i = 0; i < gs->n; i++) {
            const struct pol_glob *g = &gs->g[i];
            if (!g->malformed && g->npieces == 0 && !memchr(g->pat, '*', g->len) &&
                strcmp(g->pat, s) == 0 && (!g->port || !port || g->port == port))
                return 1;
        }
    }
    return 0;
}

static int names(const struct pol_ruleset *rs, const char *server, const char *s, unsigned port)
{
    const struct pol_bucket *b = pol_bucket_for(rs, server);
    for (int l = 0; l < 2; l++) {
        const struct pol_side *own = &b->side[POL_EGRESS][l];
        if (side_names(own, s, port))
            return 1;
        if ((own->inherit_any || b == &rs->any) &&
            side_names(&rs->any.side[POL_EGRESS][l], s, port))
            return 1;
    }
    return 0;
}

/* The project layer's deny rules (and malformed ones) on s: 1 + d filled. */
static int project_denies(const struct pol_ruleset *rs, const char *server, const char *s,
                          unsigned port, struct pol_decision *d)
{
    const struct pol_bucket *b = pol_bucket_for(rs, server);
    const struct pol_side *sides[2] = {&b->side[POL_EGRESS][POL_PROJECT], NULL};
    if (sides[0]->inherit_any || b == &rs->any)
        sides[1] = &rs->any.side[POL_EGRESS][POL_PROJECT];
    size_t n = strlen(s);
    for (int i = 0; i < 2; i++) {
        const struct pol_side *sd = sides[i];
        if (!sd || (i && sd == sides[0]))
            continue;
        int32_t id = sd->deny.first_malformed >= 0 ? sd->deny.first_malformed
                                                   : pol_globset_find(&sd->deny, s, n, port, 0);
        if (id >= 0) {
            memset(d, 0, sizeof *d);
            d->dim = POL_EGRESS;
            d->by = POL_BY_PROJECT;
            d->why = sd->deny.first_malformed >= 0 ? POL_MALFORMED : POL_DENY_RULE;
            d->pattern = sd->deny.g[id].disp;
            d->subject = s;
            return 1;
        }
    }
    return 0;
}

int pol_egress_address(const struct pol_ruleset *rs, const char *server, const char *host,
                       const struct sockaddr *sa, unsigned port, enum pol_local local,
                       char addr[POL_ADDR_TEXT_MAX], struct pol_decision *out)
{
    struct pol_decision tmp;
    struct pol_decision *d = out ? out : &tmp;
    memset(d, 0, sizeof *d);
    d->dim = POL_EGRESS;
    if (pol_addr_canon(sa, addr, POL_ADDR_TEXT_MAX) < 0) {
        snprintf(addr, POL_ADDR_TEXT_MAX, "?");
        d->by = POL_BY_SYSTEM;
        d->why = POL_LOCAL_ADDRESS;
        d->subject = addr;
        d->reason = "not an IP address";
        return 0;
    }
    /* A deny rule that matches the address refuses it, whatever the name
     * (allowlists were the name's business). pol_decide stops at the first
     * layer that objects, so behind a machine allowlist miss the project's
     * denies are looked at here. */
    if (!pol_decide(rs, POL_EGRESS, server, addr, port, d)) {
        if (d->why != POL_NOT_ALLOWLISTED)
            return 0;
        if (d->by == POL_BY_MACHINE && project_denies(rs, server, addr, port, d))
            return 0;
    }
    memset(d, 0, sizeof *d);
    d->dim = POL_EGRESS;
    d->subject = addr;
    const char *cls = pol_addr_local_class(sa);
    if (cls && local != POL_LOCAL_ANY &&
        (local == POL_LOCAL_NEVER ||
         !(names(rs, server, addr, port) || (host && names(rs, server, host, port))))) {
        d->by = POL_BY_SYSTEM;
        d->why = POL_LOCAL_ADDRESS;
        d->reason = cls;
        return 0;
    }
    d->allow = 1;
    d->why = POL_ALLOWED;
    return 1;
}
