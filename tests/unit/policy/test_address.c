/*
 * Egress by address (policy/address.c): one spelling per address, the local
 * classes, and the decision on a resolved address — written as the attacks:
 * 0.0.0.0, [::ffff:0.0.0.0], NAT64, IPv4-compatible, decimal/octal/hex IPv4
 * forms and a name resolving to 127.0.0.1 must not pass `!127.0.0.1`, and a
 * local address is dialled only where a rule names it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/toml.h"
#include "policy/policy.h"

static struct sockaddr_storage ss;

static const struct sockaddr *sa_of(const char *ip)
{
    memset(&ss, 0, sizeof ss);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        if (inet_pton(AF_INET6, ip, &s6->sin6_addr) != 1)
            fail_msg("bad test address %s", ip);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        if (inet_pton(AF_INET, ip, &s4->sin_addr) != 1)
            fail_msg("bad test address %s", ip);
    }
    return (const struct sockaddr *)&ss;
}

static void test_classes(void **st)
{
    (void)st;
    const char *bad[] = {
        "0.0.0.0",
        "10.1.2.3",
        "100.64.0.1",
        "127.0.0.1",
        "127.255.255.254",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.0.0.8",
        "192.0.2.1",
        "192.168.1.1",
        "198.18.0.1",
        "198.19.255.255",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "fe80::1",
        "fc00::1",
        "fd12::1",
        "fec0::1",
        "ff02::1",
        "64:ff9b::1.2.3.4",
        "2002:a9fe:a9fe::",
        "2001::1",
        "2001:db8::1",
        "2001:2::1",
        "2001:10::1",
        "2001:20::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "::10.0.0.1",
        "3fff::1",
        "::ffff:0.0.0.0",
        "::2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (!pol_addr_local_class(sa_of(bad[i])))
            fail_msg("global: %s", bad[i]);
    const char *good[] = {"8.8.8.8",         "1.1.1.1",      "172.32.0.1",     "100.128.0.1",
                          "2606:4700::1111", "2a00:1450::1", "::ffff:8.8.8.8", "2001:4860::8888"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (pol_addr_local_class(sa_of(good[i])))
            fail_msg("local: %s", good[i]);
    assert_string_equal(pol_addr_local_class(sa_of("127.0.0.1")), "loopback");
    assert_string_equal(pol_addr_local_class(sa_of("::ffff:169.254.169.254")), "link-local");
    assert_string_equal(pol_addr_local_class(sa_of("10.0.0.1")), "private");
    struct sockaddr un = {.sa_family = AF_UNIX};
    assert_non_null(pol_addr_local_class(&un));
}

static void test_canon(void **st)
{
    (void)st;
    static const struct {
        const char *in, *out;
    } c[] = {
        {"0.0.0.0", "127.0.0.1"},
        {"::ffff:0.0.0.0", "127.0.0.1"},
        {"::", "::1"},
        {"::ffff:127.0.0.1", "127.0.0.1"},
        {"64:ff9b::7f00:1", "127.0.0.1"},
        {"64:ff9b::a9fe:a9fe", "169.254.169.254"},
        {"::127.0.0.1", "127.0.0.1"},
        {"::1", "::1"},
        {"2606:4700:0::1111", "2606:4700::1111"},
        {"8.8.8.8", "8.8.8.8"},
    };
    char out[POL_ADDR_TEXT_MAX];
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        assert_int_equal(pol_addr_canon(sa_of(c[i].in), out, sizeof out), 0);
        if (strcmp(out, c[i].out) != 0)
            fail_msg("%s -> %s, want %s", c[i].in, out, c[i].out);
    }
    /* host normalization gives every spelling the same text */
    static const char *const lo[] = {
        "0.0.0.0", "[::ffff:0.0.0.0]", "2130706433",        "0x7f.1",        "0177.0.0.1",
        "127.1",   "[::ffff:7f00:1]",  "[64:ff9b::7f00:1]", "[::127.0.0.1]", "0x7F000001"};
    char host[POL_HOST_MAX + 1];
    const char *why;
    for (size_t i = 0; i < sizeof lo / sizeof lo[0]; i++) {
        assert_int_equal(pol_host_normalize(lo[i], strlen(lo[i]), host, &why), 0);
        if (strcmp(host, "127.0.0.1") != 0)
            fail_msg("%s -> %s", lo[i], host);
    }
    assert_int_equal(pol_host_normalize("[::]", 4, host, &why), 0);
    assert_string_equal(host, "::1");
}

static struct pol_ruleset *rules(const char *machine, const char *project)
{
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *l[2] = {NULL, NULL};
    const char *text[2] = {machine, project};
    for (int i = 0; i < 2; i++) {
        if (!text[i])
            continue;
        toml_value *root = toml_parse("t.toml", text[i], strlen(text[i]), &err);
        if (!root)
            fail_msg("toml: %s", err.msg);
        l[i] = pol_layer_from_toml(toml_get(root, "policy"), "t.toml",
                                   i ? POL_PROJECT : POL_MACHINE, &err);
        toml_free(root);
        if (!l[i])
            fail_msg("layer: %s", err.msg);
    }
    struct pol_ruleset *rs = pol_compile(l[0], l[1], "/home/u", &err);
    if (!rs)
        fail_msg("compile: %s", err.msg);
    pol_layer_free(l[0]);
    pol_layer_free(l[1]);
    return rs;
}

/* 1 allowed, else 0 with the refusal text in why. */
static int addr_ok(const struct pol_ruleset *rs, const char *host, const char *ip, unsigned port,
                   enum pol_local local, char *why, size_t n)
{
    char addr[POL_ADDR_TEXT_MAX];
    struct pol_decision d;
    int ok = pol_egress_address(rs, "api", host, sa_of(ip), port, local, addr, &d);
    strbuf t = SB_INIT;
    pol_decision_text(&d, &t);
    snprintf(why, n, "%s", t.buf);
    sb_release(&t);
    return ok;
}

static void test_decide(void **st)
{
    (void)st;
    char why[600];
    /* the attack: a machine rule !127.0.0.1 and every way around it */
    struct pol_ruleset *rs =
        rules("[policy.egress]\n\"*\" = [\"!127.0.0.1\"]\n",
              "[policy.egress]\n\"*\" = [\"127.0.0.1\", \"localhost\", \"*\"]\n");
    static const char *const lo[] = {"127.0.0.1",        "0.0.0.0",         "::ffff:0.0.0.0",
                                     "::ffff:127.0.0.1", "64:ff9b::7f00:1", "::127.0.0.1"};
    for (size_t i = 0; i < sizeof lo / sizeof lo[0]; i++) {
        if (addr_ok(rs, "localhost", lo[i], 8080, POL_LOCAL_NAMED, why, sizeof why))
            fail_msg("%s passed !127.0.0.1", lo[i]);
        if (!strstr(why, "!127.0.0.1") || !strstr(why, "machine policy"))
            fail_msg("%s: %s", lo[i], why);
        /* the proxy's mode too */
        assert_false(addr_ok(rs, "localhost", lo[i], 8080, POL_LOCAL_ANY, why, sizeof why));
    }
    /* ::1 is not 127.0.0.1, but a project allow naming localhost admits it */
    assert_true(addr_ok(rs, "localhost", "::1", 8080, POL_LOCAL_NAMED, why, sizeof why));
    pol_ruleset_free(rs);

    /* no rule names a local address: refused, with the fix */
    rs = rules(NULL, NULL);
    assert_false(addr_ok(rs, "evil.example", "127.0.0.1", 80, POL_LOCAL_NAMED, why, sizeof why));
    assert_non_null(strstr(why, "refusing 127.0.0.1 (loopback): a local address is reached only "
                                "when [policy.egress] names it"));
    assert_false(addr_ok(rs, NULL, "169.254.169.254", 80, POL_LOCAL_NAMED, why, sizeof why));
    assert_non_null(strstr(why, "link-local"));
    assert_false(addr_ok(rs, NULL, "0.0.0.0", 80, POL_LOCAL_NAMED, why, sizeof why));
    assert_true(addr_ok(rs, "example.com", "93.184.216.34", 443, POL_LOCAL_NAMED, why, sizeof why));
    pol_ruleset_free(rs);

    /* a glob does not name anything; a literal address or host does, with its pin */
    rs = rules(NULL, "[policy.egress]\n\"*\" = [\"*\", \"127.0.0.*\", \"*.internal\"]\n");
    assert_false(addr_ok(rs, "db.internal", "127.0.0.1", 80, POL_LOCAL_NAMED, why, sizeof why));
    pol_ruleset_free(rs);
    rs = rules(NULL, "[policy.egress]\napi = [\"127.0.0.1:8931\", \"mcp.corp.example\"]\n");
    assert_true(addr_ok(rs, NULL, "127.0.0.1", 8931, POL_LOCAL_NAMED, why, sizeof why));
    assert_true(addr_ok(rs, NULL, "0.0.0.0", 8931, POL_LOCAL_NAMED, why, sizeof why));
    assert_true(addr_ok(rs, NULL, "::ffff:0.0.0.0", 8931, POL_LOCAL_NAMED, why, sizeof why));
    assert_false(addr_ok(rs, NULL, "127.0.0.1", 6379, POL_LOCAL_NAMED, why, sizeof why));
    assert_true(addr_ok(rs, "mcp.corp.example", "10.1.2.3", 443, POL_LOCAL_NAMED, why, sizeof why));
    assert_false(
        addr_ok(rs, "other.corp.example", "10.1.2.3", 443, POL_LOCAL_NAMED, why, sizeof why));
    /* the proxy never dials a local address, named or not */
    assert_false(addr_ok(rs, NULL, "127.0.0.1", 8931, POL_LOCAL_NEVER, why, sizeof why));
    pol_ruleset_free(rs);

    /* a public address a deny names, behind a machine allowlist miss */
    rs = rules("[policy.egress]\n\"*\" = [\"api.example.com\"]\n",
               "[policy.egress]\n\"*\" = [\"!93.184.216.34\"]\n");
    assert_false(
        addr_ok(rs, "api.example.com", "93.184.216.34", 443, POL_LOCAL_NAMED, why, sizeof why));
    assert_non_null(strstr(why, "!93.184.216.34"));
    assert_true(
        addr_ok(rs, "api.example.com", "93.184.216.35", 443, POL_LOCAL_NAMED, why, sizeof why));
    pol_ruleset_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_canon),
        cmocka_unit_test(test_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
