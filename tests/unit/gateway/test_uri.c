/* The resource URI mapping (docs/gateway.md "Resources, prompts and
 * completions"): gw_uri_unmap inverts gw_uri_map for every server name and
 * every URI without NUL, and accepts nothing else — a seeded random search
 * mutates mapped URIs and checks that whatever is accepted is exactly the
 * mapping of what it decodes to (one spelling per resource). */
#include "testutil.h"

#include <stdint.h>

#include "base/xalloc.h"
#include "gateway/gw_int.h"

static uint64_t st = 0x2545F4914F6CDD1DULL;

static unsigned rn(unsigned n)
{
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return (unsigned)(st % n);
}

static int unmap(const char *g, strbuf *s, strbuf *u)
{
    const char *why = NULL;
    sb_reset(s);
    sb_reset(u);
    int rc = gw_uri_unmap(g, s, u, &why);
    if (rc < 0)
        assert_non_null(why);
    return rc;
}

static void test_known(void **state)
{
    (void)state;
    strbuf m = SB_INIT, s = SB_INIT, u = SB_INIT;
    gw_uri_map("docs", "file:///docs/a b.txt", &m);
    assert_string_equal(m.buf, "agentstack://docs/file%3A%2F%2F%2Fdocs%2Fa%20b.txt");
    assert_int_equal(unmap(m.buf, &s, &u), 0);
    assert_string_equal(s.buf, "docs");
    assert_string_equal(u.buf, "file:///docs/a b.txt");
    static const char *const bad[] = {
        "agentstack://docs/file%3a",   /* lowercase hex */
        "agentstack://docs/%41",       /* an unreserved byte encoded */
        "agentstack://docs/a%00b",     /* NUL */
        "agentstack://docs/a%2",       /* cut escape */
        "agentstack://docs/a%zz",      /* not hex */
        "agentstack://docs/file:///x", /* a byte that is always encoded */
        "agentstack://docs/",          /* no resource */
        "agentstack://docs",           /* no slash */
        "agentstack:///x",             /* no server */
        "agentstack://d$cs/x",         /* not a server name */
        "Agentstack://docs/x",         /* not our scheme */
        "file:///etc/passwd",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(unmap(bad[i], &s, &u), -1);
    sb_release(&m);
    sb_release(&s);
    sb_release(&u);
}

static void test_random_round_trip(void **state)
{
    (void)state;
    static const char alpha[] = "aZ09-._~:/?#[]@!$&'()*+,;=% \x7f\x80\xff{}\\\"";
    static const char mut[] = "%AaF0g/:.~\xff";
    strbuf m = SB_INIT, s = SB_INIT, u = SB_INIT, again = SB_INIT;
    for (int c = 0; c < 20000; c++) {
        char uri[24];
        size_t n = 1 + rn(20);
        for (size_t i = 0; i < n; i++)
            uri[i] = alpha[rn(sizeof alpha - 1)];
        uri[n] = '\0';
        sb_reset(&m);
        gw_uri_map(rn(2) ? "srv" : "a.b-c_d", uri, &m);
        assert_int_equal(unmap(m.buf, &s, &u), 0);
        assert_memory_equal(u.buf, uri, n + 1);
        /* Mutate one byte (or insert one): either refused, or accepted as
         * exactly the mapping of what it now decodes to. */
        char g[128];
        snprintf(g, sizeof g, "%s", m.buf);
        size_t gl = strlen(g), at = rn((unsigned)gl);
        if (rn(2) && gl + 1 < sizeof g) {
            memmove(g + at + 1, g + at, gl - at + 1);
            g[at] = mut[rn(sizeof mut - 1)];
        } else {
            g[at] = mut[rn(sizeof mut - 1)];
        }
        if (unmap(g, &s, &u) == 0) {
            sb_reset(&again);
            gw_uri_map(s.buf, u.buf, &again);
            assert_string_equal(again.buf, g);
        }
    }
    sb_release(&m);
    sb_release(&s);
    sb_release(&u);
    sb_release(&again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known),
        cmocka_unit_test(test_random_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
