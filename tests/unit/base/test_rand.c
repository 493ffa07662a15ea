/* rand: lengths, hex form, and that two draws differ. */
#include "testutil.h"

#include "base/rand.h"

static void test_bytes(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    unsigned char a[32] = {0}, b[32] = {0};
    assert_int_equal(rand_bytes(a, sizeof a, &err), 0);
    assert_int_equal(rand_bytes(b, sizeof b, &err), 0);
    /* 2^-256 chance of a false failure */
    assert_memory_not_equal(a, b, sizeof a);
    assert_int_equal(rand_bytes(a, 0, &err), 0);
}

static void test_hex(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    char h1[65], h2[65];
    assert_int_equal(rand_hex(h1, 32, &err), 0);
    assert_int_equal(rand_hex(h2, 32, &err), 0);
    assert_int_equal(strlen(h1), 64);
    assert_string_not_equal(h1, h2);
    for (const char *p = h1; *p; p++)
        assert_non_null(strchr("0123456789abcdef", *p));
    /* above the on-stack buffer size */
    char *big = malloc(2 * 1000 + 1);
    assert_int_equal(rand_hex(big, 1000, &err), 0);
    assert_int_equal(strlen(big), 2000);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bytes), cmocka_unit_test(test_hex)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
