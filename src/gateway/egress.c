/*
 * egress — the gateway's HTTP upstreams judged by address, as the egress
 * proxy judges its destinations (docs/policy.md "Egress by address").
 *
 * Why: [policy.egress] matched the URL's name only, so `http://0.0.0.0:PORT`,
 * `http://[::ffff:0.0.0.0]:PORT` and a name resolving to 127.0.0.1 all
 * passed a machine rule `!127.0.0.1` — and any trusted manifest could point
 * the gateway, holding resolved secrets, at a loopback service or the cloud
 * metadata address. The one function in policy/address.c decides; this file
 * only feeds it.
 *
 * Guarantees:
 *  - An IP-literal host is judged when the surface is built (its refusal is
 *    an `egress` skip like a denied name).
 *  - A name is judged at the dial: libcurl resolves it, and every address it
 *    is about to connect to passes through gw_egress_dial_check first, so
 *    the address checked is the address dialled (a rebinding answer cannot
 *    slip in between). A refused address is never connected to; when none
 *    is left the call is refused with the reason and an `egress` row.
 *  - Local addresses (loopback, private, link-local/metadata, …) are
 *    dialled only where an allow entry names the address or the URL's host
 *    literally; a deny rule matching the address wins over that.
 *  - A surface gone meanwhile refuses (fail closed).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "gateway/gw_int.h"

int gw_egress_literal(const struct pol_ruleset *rs, const char *server, const char *host,
                      unsigned port, char addr[POL_ADDR_TEXT_MAX], struct pol_decision *d)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1)
        s4->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1)
        s6->sin6_family = AF_INET6;
    else
        return 1;
    return pol_egress_address(rs, server, NULL, (const struct sockaddr *)&ss, port, POL_LOCAL_NAMED,
                              addr, d);
}

int gw_egress_dial_check(void *ctx, const struct sockaddr *sa, char *why, size_t whysz)
{
    struct gw_up *up = ctx;
    if (!up->sf || !up->sf->rs) {
        snprintf(why, whysz, "%s: the surface that served it is gone — not connecting", up->name);
        return 0;
    }
    char addr[POL_ADDR_TEXT_MAX];
    struct pol_decision d;
    if (pol_egress_address(up->sf->rs, up->name, up->egress_host, sa, up->egress_port,
                           POL_LOCAL_NAMED, addr, &d))
        return 1;
    strbuf t = SB_INIT;
    pol_decision_text(&d, &t);
    if (up->egress_host && strcmp(up->egress_host, addr) != 0)
        snprintf(why, whysz, "host %s resolves to %s — %s", up->egress_host, addr, t.buf);
    else
        snprintf(why, whysz, "host %s — %s", addr, t.buf);
    sb_release(&t);
    snprintf(up->refused_rule, sizeof up->refused_rule, "%s",
             d.why == POL_DENY_RULE && d.pattern ? d.pattern : "");
    up->refused_layer = pol_by_name(d.by);
    gw_note("server '%s': not connecting: %s", up->name, why);
    return 0;
}
