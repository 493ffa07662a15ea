/* Review diffs (docs/trust.md): approved bytes come from the content store by pin,
 * lines are -/+ in order, the item is capped at TRUST_DIFF_LINES lines, a
 * missing deposit is "no_snapshot", equal pins add nothing, and binary or
 * non-UTF-8 files are named, never dumped. */
#include "testutil.h"

#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/store.h"
#include "trust/trust.h"

static char *deposit_file(const char *home, const char *text, char pin[SHA256_HEX_LEN + 1])
{
    char *src = tu_write(home, "src/body.md", text);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_file(src, pin, &err), 0);
    assert_int_equal(store_deposit_file(home, src, "body.md", pin, &err), 0);
    return src;
}

static const char *line(json_t *d, size_t f, size_t i)
{
    return json_string_value(json_array_get(
        json_object_get(json_array_get(json_object_get(d, "files"), f), "lines"), i));
}

static void test_file_diff(void **state)
{
    (void)state;
    char *home = tu_tmpdir();
    char pin[SHA256_HEX_LEN + 1];
    free(deposit_file(home, "a\nb\nc\n", pin));
    char *live = tu_write(home, "live/body.md", "a\nB\nc\nd\n");
    size_t budget = TRUST_DIFF_LINES;
    json_t *d = trust_diff_new();
    assert_int_equal(trust_diff_add(d, home, STORE_FILE, pin, "x", live, "body.md", &budget), 1);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "changed");
    assert_string_equal(line(d, 0, 0), "-b");
    assert_string_equal(line(d, 0, 1), "+B");
    assert_string_equal(line(d, 0, 2), "+d");
    assert_null(line(d, 0, 3));
    strbuf out = SB_INIT;
    trust_diff_render(d, "  ", &out);
    assert_non_null(strstr(out.buf, "1 file changed, +2 −1 lines"));
    sb_release(&out);
    json_decref(d);
    /* Equal pins: nothing added, status stays unchanged. */
    d = trust_diff_new();
    assert_int_equal(trust_diff_add(d, home, STORE_FILE, pin, pin, live, "body.md", &budget), 0);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "unchanged");
    json_decref(d);
    free(live);
    tu_rmtree(home);
}

static void test_cap_and_snapshot(void **state)
{
    (void)state;
    char *home = tu_tmpdir();
    char pin[SHA256_HEX_LEN + 1];
    free(deposit_file(home, "", pin));
    strbuf big = SB_INIT;
    for (int i = 0; i < 100; i++)
        sb_addf(&big, "line %d\n", i);
    char *live = tu_write(home, "live/body.md", big.buf);
    size_t budget = TRUST_DIFF_LINES;
    json_t *d = trust_diff_new();
    trust_diff_add(d, home, STORE_FILE, pin, "x", live, "body.md", &budget);
    json_t *f = json_array_get(json_object_get(d, "files"), 0);
    assert_int_equal(json_array_size(json_object_get(f, "lines")), TRUST_DIFF_LINES);
    assert_int_equal(json_integer_value(json_object_get(f, "added")), 100);
    assert_true(json_is_true(json_object_get(d, "capped")));
    json_decref(d);
    /* No deposit for the approved pin: no_snapshot, no lines. */
    d = trust_diff_new();
    budget = TRUST_DIFF_LINES;
    trust_diff_add(d, home, STORE_FILE,
                   "00000000000000000000000000000000000000000000000000000000000000"
                   "00",
                   "x", live, "body.md", &budget);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "no_snapshot");
    assert_int_equal(json_array_size(json_object_get(d, "files")), 0);
    json_decref(d);
    sb_release(&big);
    free(live);
    tu_rmtree(home);
}

static void test_binary_named(void **state)
{
    (void)state;
    char *home = tu_tmpdir();
    char pin[SHA256_HEX_LEN + 1];
    free(deposit_file(home, "text\n", pin));
    char *live = tu_write(home, "live/body.md", "\xff\xfe\x01\n");
    size_t budget = TRUST_DIFF_LINES;
    json_t *d = trust_diff_new();
    trust_diff_add(d, home, STORE_FILE, pin, "x", live, "body.md", &budget);
    json_t *f = json_array_get(json_object_get(d, "files"), 0);
    assert_string_equal(json_string_value(json_object_get(f, "note")), "binary or not UTF-8");
    assert_int_equal(json_array_size(json_object_get(f, "lines")), 0);
    json_decref(d);
    free(live);
    tu_rmtree(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_diff),
        cmocka_unit_test(test_cap_and_snapshot),
        cmocka_unit_test(test_binary_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
