/* toml robustness: hostile bytes get a positioned error, never a crash, a
 * hang or unbounded recursion. */
#include "testutil.h"

#include "base/toml.h"

struct res {
    unsigned line, col;
    char msg[2048];
};

/* Parses bytes expecting failure. */
static struct res bad(const char *text, size_t len)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r.toml", text, len, &err);
    if (v) {
        toml_free(v);
        fail_msg("parse of %.40s... unexpectedly succeeded", text);
    }
    struct res r = {err.line, err.col, {0}};
    snprintf(r.msg, sizeof r.msg, "%s", err.msg);
    assert_string_equal(err.path, "r.toml");
    assert_true(err.line >= 1 && err.col >= 1);
    return r;
}

static void test_nul_bytes(void **state)
{
    (void)state;
    struct res r = bad("a = 1\0\n", 7);
    assert_int_equal(r.line, 1);
    assert_int_equal(r.col, 6);
    assert_string_equal(r.msg, "expected a newline after the value, found byte 0x00");
    r = bad("a = \"x\0y\"\n", 10);
    assert_int_equal(r.col, 7);
    assert_string_equal(r.msg, "control character 0x00 in a string (use an escape)");
    r = bad("# c\0\n", 5);
    assert_string_equal(r.msg, "control character 0x00 in a comment");
    r = bad("\0", 1);
    assert_int_equal(r.col, 1);
    r = bad("a\0 = 1", 6);
    assert_int_equal(r.col, 2);
    r = bad("x = '''\0'''", 11);
    assert_int_equal(r.col, 8);
    /* an escaped NUL is a fine string value */
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r", "s = \"a\\u0000b\"", 14, &err);
    assert_non_null(v);
    assert_int_equal(toml_get(v, "s")->u.str.len, 3);
    toml_free(v);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "\xc0\x80",         /* overlong NUL */
        "\xe0\x80\xaf",     /* overlong '/' */
        "\xed\xa0\x80",     /* surrogate */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "\x80",             /* lone continuation */
        "\xe2\x82",         /* truncated at end */
        "\xff",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "ok = 1\n# \xc3\xa9 %s\n", cases[i]);
        struct res r = bad(buf, (size_t)n);
        assert_int_equal(r.line, 2);
        assert_int_equal(r.col, 6); /* col counts bytes: "# é " is 5 */
        assert_non_null(strstr(r.msg, "invalid UTF-8"));
        n = snprintf(buf, sizeof buf, "s = \"%s\"", cases[i]);
        r = bad(buf, (size_t)n);
        assert_int_equal(r.col, 6);
    }
}

static void test_huge_key(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    char *text = malloc(n + 64);
    memset(text, 'k', n);
    memcpy(text + n, " = 1\n", 6);
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r", text, n + 5, &err);
    assert_non_null(v);
    assert_int_equal(toml_entry(v, 0)->keylen, n);
    toml_free(v);
    /* quoted, and duplicated: the message is cut, not overflowed */
    text[0] = '"';
    text[n - 1] = '"';
    size_t one = n + 5;
    memcpy(text + one, "", 1);
    char *two = malloc(2 * one + 1);
    memcpy(two, text, one);
    memcpy(two + one, text, one);
    struct res r = bad(two, 2 * one);
    assert_int_equal(r.line, 2);
    assert_int_equal(strncmp(r.msg, "duplicate key 'kkk", 18), 0);
    free(two);
    free(text);
    /* keys in messages are made printable */
    const char *esc = "\"\\u001b[31m\\n\" = 1\n\"\\u001b[31m\\n\" = 2\n";
    r = bad(esc, strlen(esc));
    assert_string_equal(r.msg, "duplicate key '\\x1b[31m\\x0a'");
}

static char *repeat(const char *pre, const char *open, size_t n, const char *mid, const char *close,
                    size_t *len)
{
    strbuf sb = SB_INIT;
    sb_adds(&sb, pre);
    for (size_t i = 0; i < n; i++)
        sb_adds(&sb, open);
    sb_adds(&sb, mid);
    for (size_t i = 0; i < n; i++)
        sb_adds(&sb, close);
    sb_addc(&sb, '\n');
    return sb_detach(&sb, len);
}

static void test_deep_nesting(void **state)
{
    (void)state;
    size_t len;
    char *t = repeat("a = ", "[", 10000, "", "]", &len);
    struct res r = bad(t, len);
    assert_string_equal(r.msg, "nesting deeper than 128 levels");
    assert_int_equal(r.col, 4 + 128);
    free(t);
    t = repeat("a = ", "{b = ", 10000, "1", "}", &len);
    r = bad(t, len);
    assert_string_equal(r.msg, "nesting deeper than 128 levels");
    free(t);
    t = repeat("a = ", "[{b = ", 10000, "1", "}]", &len);
    r = bad(t, len);
    assert_string_equal(r.msg, "nesting deeper than 128 levels");
    free(t);
    t = repeat("", "a.", 10000, "b = 1", "", &len);
    r = bad(t, len);
    assert_string_equal(r.msg, "key has more than 128 dotted parts");
    free(t);
    t = repeat("[", "a.", 10000, "b]", "", &len);
    r = bad(t, len);
    assert_string_equal(r.msg, "key has more than 128 dotted parts");
    free(t);
    /* the limit counts levels from the root across headers and dotted keys */
    t = repeat("[", "a.", 100, "b]\n", "", &len);
    strbuf sb = SB_INIT;
    sb_add(&sb, t, len);
    for (int i = 0; i < 27; i++)
        sb_adds(&sb, "c.");
    sb_adds(&sb, "d = 1\n");
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r", sb.buf, sb.len, &err); /* 101 + 28 = 129 */
    assert_null(v);
    assert_string_equal(err.msg, "nesting deeper than 128 levels");
    free(t);
    sb_release(&sb);
    /* exactly at the limit is accepted */
    t = repeat("a = ", "[", 127, "", "]", &len);
    v = toml_parse("r", t, len, &err);
    assert_non_null(v);
    toml_free(v);
    free(t);
}

static void test_huge_numbers(void **state)
{
    (void)state;
    struct res r = bad("i = 9223372036854775808\n", 24);
    assert_string_equal(r.msg, "integer '9223372036854775808' does not fit in 64 bits");
    assert_int_equal(r.col, 5);
    bad("i = -9223372036854775809\n", 25);
    bad("i = 0x8000000000000000\n", 23);
    bad("i = 0o1777777777777777777777\n", 29);
    bad("i = 0b"
        "1111111111111111111111111111111111111111111111111111111111111111\n",
        71);
    r = bad("f = 1e400\n", 10);
    assert_string_equal(r.msg, "float '1e400' is out of range");
    strbuf sb = SB_INIT;
    sb_adds(&sb, "i = ");
    sb_addchars(&sb, '9', 100000);
    r = bad(sb.buf, sb.len);
    assert_non_null(strstr(r.msg, "does not fit in 64 bits"));
    sb_release(&sb);
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r", "a = 0x7fffffffffffffff\nb = 1e-400\n", 34, &err);
    assert_non_null(v);
    assert_true(toml_get(v, "a")->u.i == INT64_MAX);
    assert_true(toml_get(v, "b")->u.f == 0.0);
    toml_free(v);
}

static const char sample[] = "# sample\n"
                             "title = \"TOML \\u00e9 example\"\n"
                             "multi = \"\"\"\n  a \\\n  b\"\"\"\n"
                             "lit = '''x\n'y'\n'''\n"
                             "[owner]\n"
                             "name = 'Tom'  # trailing\n"
                             "dob = 1979-05-27T07:32:00-08:00\n"
                             "[database]\n"
                             "ports = [ 8000, 8001,\n  8002, ]\n"
                             "temp = { cpu = 79.5, case = 72.0 }\n"
                             "a.b.\"c d\" = 0x1_0\n"
                             "[[products]]\n"
                             "name = \"Hammer\"\n"
                             "sku = 738_594_937\n"
                             "[[products]]\n"
                             "when = 07:32:00.25\n"
                             "on = 2024-02-29\n";

static void check_result(const char *text, size_t len)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("cut", text, len, &err);
    if (v) {
        toml_free(v);
        return;
    }
    /* the error points inside the input (or just past its end) */
    unsigned lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_true(err.line >= 1 && err.line <= lines);
    assert_true(err.col >= 1 && err.col <= len + 1);
    assert_true(err.msg[0] != '\0');
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    size_t n = sizeof sample - 1;
    struct as_err err = AS_ERR_INIT;
    toml_value *whole = toml_parse("s", sample, n, &err);
    if (!whole)
        fail_msg("sample: %u:%u: %s", err.line, err.col, err.msg);
    toml_free(whole);
    for (size_t cut = 0; cut <= n; cut++) {
        /* exact-size heap copy so ASan catches any read past the end */
        char *p = malloc(cut ? cut : 1);
        memcpy(p, sample, cut);
        check_result(p, cut);
        free(p);
    }
    /* and every byte replaced by a few troublesome values */
    static const char repl[] = {'\0', '\r', '\n', '"',  '\'',       '[',       ']',
                                '=',  '.',  '#',  '\\', (char)0xff, (char)0xc3};
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof repl; k++) {
            memcpy(p, sample, n);
            p[i] = repl[k];
            check_result(p, n);
        }
    }
    free(p);
}

static void test_line_endings_and_positions(void **state)
{
    (void)state;
    struct res r = bad("a = 1\r\nb = 2\rc = 3\n", 19);
    assert_int_equal(r.line, 2);
    assert_int_equal(r.col, 6);
    assert_string_equal(r.msg, "carriage return not followed by a newline");
    /* a long multi-line array, then an error: the line is right */
    strbuf sb = SB_INIT;
    sb_adds(&sb, "a = [\n");
    for (int i = 0; i < 5000; i++)
        sb_addf(&sb, "  %d,\n", i);
    sb_adds(&sb, "]\nb = [1 2]\n");
    r = bad(sb.buf, sb.len);
    assert_int_equal(r.line, 5003);
    assert_int_equal(r.col, 8);
    sb_release(&sb);
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r", "\xc3\xa9t\xc3\xa9 = 1\r\n\"\xc3\xa9\" = 2", 19, &err);
    assert_null(v); /* bare keys are ASCII only */
    assert_int_equal(err.col, 1);
    const char *ok = "x = 1\r\n\"\xc3\xa9\" = \"\xc3\xa9\"";
    v = toml_parse("r", ok, strlen(ok), &err);
    assert_non_null(v);
    const toml_kv *kv = toml_get_kv(v, "\xc3\xa9");
    assert_int_equal(kv->line, 2);
    assert_int_equal(kv->val->col, 8); /* bytes, not characters */
    toml_free(v);
    /* empty and BOM-only documents are empty tables */
    v = toml_parse("r", "", 0, &err);
    assert_int_equal(toml_len(v), 0);
    toml_free(v);
    v = toml_parse("r", "\xef\xbb\xbf", 3, &err);
    assert_non_null(v);
    toml_free(v);
    v = toml_parse("r", NULL, 0, &err);
    assert_non_null(v);
    toml_free(v);
}

static void test_many_tables(void **state)
{
    (void)state;
    /* 50k array-of-tables entries and 50k sibling tables: linear work */
    strbuf sb = SB_INIT;
    for (int i = 0; i < 50000; i++)
        sb_addf(&sb, "[[item]]\nid = %d\n[t.s%d]\nx = 1\n", i, i);
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("r", sb.buf, sb.len, &err);
    assert_non_null(v);
    assert_int_equal(toml_len(toml_get(v, "item")), 50000);
    assert_int_equal(toml_len(toml_get(v, "t")), 50000);
    assert_int_equal(toml_get(toml_at(toml_get(v, "item"), 49999), "id")->u.i, 49999);
    toml_free(v);
    sb_adds(&sb, "[t.s777]\n");
    assert_null(toml_parse("r", sb.buf, sb.len, &err));
    assert_int_equal(err.line, 200001);
    sb_release(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_huge_key),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_huge_numbers),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_line_endings_and_positions),
        cmocka_unit_test(test_many_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
