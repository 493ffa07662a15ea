/* aud_parse_since (audit/calls_table.h): the --since forms docs/audit.md
 * lists, checked against dates computed by hand, and the ones refused. */
#include "testutil.h"

#include "audit/calls_table.h"

static long long since(const char *s)
{
    struct as_err err = AS_ERR_INIT;
    long long v = 0;
    assert_int_equal(aud_parse_since(s, 1000000000, &v, &err), 0);
    return v;
}

static void test_durations(void **state)
{
    (void)state;
    assert_int_equal(since("90s"), 1000000000 - 90);
    assert_int_equal(since("30m"), 1000000000 - 1800);
    assert_int_equal(since("1h"), 1000000000 - 3600);
    assert_int_equal(since("2d"), 1000000000 - 2 * 86400);
    assert_int_equal(since("1w"), 1000000000 - 7 * 86400);
    assert_int_equal(since("0s"), 1000000000);
}

static void test_iso(void **state)
{
    (void)state;
    assert_int_equal(since("1970-01-01"), 0);
    assert_int_equal(since("2026-01-01"), 1767225600);
    assert_int_equal(since("2026-01-01T00:00Z"), 1767225600);
    assert_int_equal(since("2026-01-01T01:02:03"), 1767225600 + 3723);
    assert_int_equal(since("2026-01-01 01:02:03z"), 1767225600 + 3723);
    assert_int_equal(since("2026-01-01T01:00+01:00"), 1767225600);
    assert_int_equal(since("2025-12-31T23:30-00:30"), 1767225600);
    /* leap days: 2024 has one, 2100 none, 2000 one */
    assert_int_equal(since("2024-02-29"), 1709164800);
    assert_int_equal(since("2000-02-29"), 951782400);
    assert_int_equal(since("2000-03-01") - since("2000-02-28"), 2 * 86400);
    assert_int_equal(since("1969-12-31"), -86400);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "yesterday",
        "1y",
        "-1h",
        "1.5h",
        "1h ago",
        "10000000000s",
        "h",
        "2026-1-01",
        "2026-13-01",
        "2026-00-10",
        "2026-02-29",
        "2100-02-29",
        "2026-04-31",
        "2026-12-01T24:00",
        "2026-12-01T10:60",
        "2026-12-01T10:00:60",
        "2026-12-01T10",
        "2026-12-01T10:00+1",
        "2026-12-01T10:00+01",
        "2026-12-01Z",
        "2026-12-01T10:00Zx",
        "20261201",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct as_err err = AS_ERR_INIT;
        long long v = 7;
        assert_int_equal(aud_parse_since(bad[i], 1000000000, &v, &err), -1);
        assert_int_equal(v, 7);
        char buf[512];
        assert_non_null(strstr(as_err_str(&err, buf, sizeof buf), "is neither a duration"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_iso),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
