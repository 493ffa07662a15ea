/* sec_mask: every resolved value out of shown text, the longest at each
 * position, overlapping values leaving none of their bytes, markers never
 * rescanned. */
#include "testutil.h"

#include "secrets/secrets.h"

static char *masked(const struct sec_masked *v, size_t n, const char *text)
{
    strbuf out = SB_INIT;
    sec_mask(v, n, text, strlen(text), &out);
    return sb_detach(&out, NULL);
}

static void test_every_occurrence(void **state)
{
    (void)state;
    const struct sec_masked v[] = {{"TOKEN", "s3cr3t"}, {"EMPTY", ""}, {"NONE", NULL}};
    char *m = masked(v, 3, "Bearer s3cr3t and s3cr3ts3cr3t");
    assert_string_equal(m, "Bearer ${TOKEN} and ${TOKEN}${TOKEN}");
    free(m);
    m = masked(v, 0, "no values");
    assert_string_equal(m, "no values");
    free(m);
}

static void test_longest_first(void **state)
{
    (void)state;
    /* a value inside another is not left half-masked */
    const struct sec_masked v[] = {{"SHORT", "abc"}, {"LONG", "xabcx"}};
    char *m = masked(v, 2, "1xabcx2abc3");
    assert_string_equal(m, "1${LONG}2${SHORT}3");
    free(m);
}

static void test_overlap_leaves_no_byte(void **state)
{
    (void)state;
    /* "xa" matches first; "abcd" overlaps it and runs past: masked whole,
     * so neither "bcd" nor any byte of either value is shown */
    const struct sec_masked v[] = {{"A", "xa"}, {"B", "abcd"}, {"C", "d!!"}};
    char *m = masked(v, 3, "<xabcd!!>");
    assert_null(strstr(m, "bcd"));
    assert_null(strstr(m, "!"));
    assert_string_equal(m, "<${A}${B}${C}>");
    free(m);
}

static void test_markers_not_rescanned(void **state)
{
    (void)state;
    /* a value that spells part of a name does not rewrite the marker */
    const struct sec_masked v[] = {{"OPENAI_KEY", "sk-123"}, {"X", "KEY"}};
    char *m = masked(v, 2, "sk-123 KEY");
    assert_string_equal(m, "${OPENAI_KEY} ${X}");
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_occurrence),
        cmocka_unit_test(test_longest_first),
        cmocka_unit_test(test_overlap_leaves_no_byte),
        cmocka_unit_test(test_markers_not_rescanned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
