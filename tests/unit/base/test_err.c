/* err: rendering with and without location, errno text, hints, prefixes,
 * truncation without overflow, and arguments that alias the error itself. */
#include "testutil.h"

#include <errno.h>

#include "base/err.h"

static void test_render(void **st)
{
    (void)st;
    struct as_err e = AS_ERR_INIT;
    char buf[4096];
    assert_false(as_err_isset(&e));
    assert_int_equal(as_err_set(&e, "bad %s", "thing"), -1);
    assert_true(as_err_isset(&e));
    assert_string_equal(as_err_str(&e, buf, sizeof buf), "bad thing");
    assert_int_equal(as_err_at(&e, "a.toml", 3, 7, "expected %c", '='), -1);
    assert_string_equal(as_err_str(&e, buf, sizeof buf), "a.toml:3:7: expected =");
    as_err_at(&e, "a.toml", 3, 0, "x");
    assert_string_equal(as_err_str(&e, buf, sizeof buf), "a.toml:3:1: x");
    as_err_at(&e, "a.toml", 0, 0, "x");
    assert_string_equal(as_err_str(&e, buf, sizeof buf), "a.toml: x");
    /* set clears a previous location */
    as_err_set(&e, "plain");
    assert_string_equal(as_err_str(&e, buf, sizeof buf), "plain");
    assert_int_equal(e.line, 0);
    /* small output buffers are cut, always terminated */
    char small[5];
    assert_string_equal(as_err_str(&e, small, sizeof small), "plai");
    as_err_str(&e, small, 0); /* size 0: nothing written */
    as_err_clear(&e);
    assert_false(as_err_isset(&e));
    assert_string_equal(e.path, "");
    assert_int_equal(as_err_set(NULL, "ignored"), -1);
    assert_int_equal(as_err_at(NULL, "p", 1, 1, "ignored"), -1);
    assert_int_equal(as_err_errno(NULL, "ignored"), -1);
    as_err_hint(NULL, "x");
    as_err_prefix(NULL, "x");
}

static void test_errno_hint_prefix(void **st)
{
    (void)st;
    struct as_err e = AS_ERR_INIT;
    errno = ENOENT;
    assert_int_equal(as_err_errno(&e, "open %s", "f.txt"), -1);
    assert_string_equal(e.msg, "open f.txt: No such file or directory");
    assert_int_equal(errno, ENOENT); /* preserved for the caller */
    as_err_hint(&e, "run `agentstack %s`", "init");
    assert_string_equal(e.hint, "run `agentstack init`");
    as_err_prefix(&e, "loading %s", "cfg");
    assert_string_equal(e.msg, "loading cfg: open f.txt: No such file or directory");
}

static void test_truncation_and_alias(void **st)
{
    (void)st;
    struct as_err e = AS_ERR_INIT;
    char longs[5000];
    memset(longs, 'a', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    as_err_set(&e, "%s", longs);
    assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
    as_err_at(&e, longs, 1, 1, "%s", longs);
    assert_int_equal(strlen(e.path), sizeof e.path - 1);
    as_err_hint(&e, "%s", longs);
    assert_int_equal(strlen(e.hint), sizeof e.hint - 1);
    errno = EACCES;
    as_err_errno(&e, "%s", longs);
    assert_true(strlen(e.msg) < sizeof e.msg);
    /* prefix on a full message keeps within bounds */
    as_err_set(&e, "%s", longs);
    as_err_prefix(&e, "%s", longs);
    assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
    assert_memory_equal(e.msg + 1023, ": ", 2); /* prefix (cut to 1023) then ": " */
    char buf[8192];
    as_err_str(&e, buf, sizeof buf);

    /* the error's own fields as arguments */
    as_err_set(&e, "inner");
    as_err_set(&e, "outer: %s", e.msg);
    assert_string_equal(e.msg, "outer: inner");
    as_err_at(&e, "p.json", 2, 3, "m");
    as_err_at(&e, e.path, e.line, e.col, "%s again", e.msg);
    assert_string_equal(e.path, "p.json");
    assert_string_equal(e.msg, "m again");
    as_err_hint(&e, "h");
    as_err_hint(&e, "%s2", e.hint);
    assert_string_equal(e.hint, "h2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_errno_hint_prefix),
        cmocka_unit_test(test_truncation_and_alias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
