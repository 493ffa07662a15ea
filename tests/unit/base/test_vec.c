/* vec / strvec: typed growth, NULL termination, ownership, sort, find. */
#include "testutil.h"

#include "base/vec.h"

static void test_vec_macro(void **st)
{
    (void)st;
    VEC(int) v = VEC_INIT;
    for (int i = 0; i < 1000; i++)
        vec_push(&v, i * 2);
    assert_int_equal(v.n, 1000);
    assert_true(v.cap >= 1000);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(v.v[i], i * 2);
    /* pushing an element of the vector itself */
    vec_push(&v, v.v[0]);
    assert_int_equal(v.v[1000], 0);
    vec_free(&v);
    assert_null(v.v);
    assert_int_equal(v.n, 0);
    struct pt {
        int x, y;
    };
    VEC(struct pt) p = VEC_INIT;
    vec_push(&p, ((struct pt){1, 2}));
    assert_int_equal(p.v[0].y, 2);
    vec_free(&p);
}

static void test_strvec(void **st)
{
    (void)st;
    strvec sv = STRVEC_INIT;
    char buf[8] = "temp";
    strvec_push(&sv, buf);
    buf[0] = 'X'; /* push copies */
    strvec_pushf(&sv, "n=%d", 3);
    strvec_push_take(&sv, strdup("owned"));
    assert_int_equal(sv.n, 3);
    assert_string_equal(sv.v[0], "temp");
    assert_string_equal(sv.v[1], "n=3");
    assert_null(sv.v[3]); /* argv-style terminator */
    assert_int_equal(strvec_find(&sv, "owned"), 2);
    assert_int_equal(strvec_find(&sv, "nope"), -1);
    strvec_push(&sv, "B");
    strvec_push(&sv, "a-b");
    strvec_push(&sv, "a");
    strvec_push(&sv, "\xc3\xa9");
    strvec_sort(&sv);
    const char *want[] = {"B", "a", "a-b", "n=3", "owned", "temp", "\xc3\xa9"};
    assert_int_equal(sv.n, 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(sv.v[i], want[i]);
    assert_null(sv.v[7]);
    strvec_clear(&sv);
    assert_null(sv.v);
    assert_int_equal(sv.n, 0);
    strvec_sort(&sv); /* empty: fine */
    assert_int_equal(strvec_find(&sv, "x"), -1);
    strvec_clear(&sv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_vec_macro),
                                       cmocka_unit_test(test_strvec)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
