/* suggest: the bounded distance and the closest candidate. */
#include "testutil.h"

#include "base/suggest.h"

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(suggest_distance("", "", 2), 0);
    assert_int_equal(suggest_distance("kitten", "sitting", 3), 3);
    assert_int_equal(suggest_distance("kitten", "sitting", 2), 3); /* capped: cap + 1 */
    assert_int_equal(suggest_distance("default_tolset", "default_toolset", 2), 1);
    assert_int_equal(suggest_distance("a", "abcdef", 2), 3); /* length gap alone exceeds cap */
    char longw[300];
    memset(longw, 'x', sizeof longw - 1);
    longw[sizeof longw - 1] = '\0';
    assert_int_equal(suggest_distance(longw, longw, 2), 3); /* over 255 bytes: never suggested */
}

static void test_closest(void **state)
{
    (void)state;
    const char *keys[] = {"servers", "skills", "toolsets", "default_toolset", NULL};
    assert_string_equal(suggest_closest("default_tolset", keys, SUGGEST_NULL_TERMINATED),
                        "default_toolset");
    assert_string_equal(suggest_closest("skils", keys, SUGGEST_NULL_TERMINATED), "skills");
    assert_null(suggest_closest("policy", keys, SUGGEST_NULL_TERMINATED));
    assert_string_equal(suggest_closest("servrs", keys, 1), "servers");
    assert_null(suggest_closest("skils", keys, 1)); /* n bounds the search */
    const char *tie[] = {"ab", "ba", NULL};
    assert_string_equal(suggest_closest("aa", tie, SUGGEST_NULL_TERMINATED), "ab");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_closest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
