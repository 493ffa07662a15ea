/*
 * libidn2 on first use (policy/pol_host.c): a rule or name made of ASCII never
 * maps it; the first Unicode label does; and when it cannot be loaded the
 * Unicode label is refused with a reason — never matched unconverted.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

static int mapped(void)
{
    void *h = dlopen("libidn2.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static int parse(const char *entry, char *host, const char **why)
{
    uint16_t port = 0;
    char canon[1024];
    *why = NULL;
    return pol_egress_parse(entry, host, &port, canon, why);
}

/* The order matters (one process, one loader): ASCII, then a failed load,
 * then the real one. */
static void test_idn_on_first_use(void **st)
{
    (void)st;
    char host[1024];
    const char *why;
    assert_int_equal(parse("*.Example.COM:443", host, &why), 0);
    assert_string_equal(host, "*.example.com");
    assert_false(mapped());

    static const char *const bad[] = {"libagentstack-no-such-idn2.so.0", NULL};
    pol__idn2_set_names(bad);
    assert_int_equal(parse("m\xc3\xbcnchen.de", host, &why), -1);
    assert_non_null(why);
    assert_non_null(strstr(why, "needs libidn2"));
    /* ASCII still parses while libidn2 is unavailable */
    assert_int_equal(parse("xn--mnchen-3ya.de", host, &why), 0);
    assert_false(mapped());

    pol__idn2_set_names(NULL);
    assert_int_equal(parse("m\xc3\xbcnchen.de", host, &why), 0);
    assert_string_equal(host, "xn--mnchen-3ya.de");
    assert_true(mapped());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idn_on_first_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
