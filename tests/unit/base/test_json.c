/* json: the canonical form (spec vector, key order independence, escaping,
 * numbers), parse errors with line:col, file loading, getters, and TOML
 * conversion. */
#include "testutil.h"

#include <math.h>

#include "base/json.h"
#include "base/sha256.h"

static char *canon(const json_t *v)
{
    strbuf sb = SB_INIT;
    json_canonical(v, &sb);
    return sb_detach(&sb, NULL);
}

static char *canon_text(const char *text)
{
    struct as_err err = AS_ERR_INIT;
    json_t *v = json_parse("t.json", text, strlen(text), &err);
    assert_non_null(v);
    char *c = canon(v);
    json_decref(v);
    return c;
}

static void test_spec_vector(void **st)
{
    (void)st;
    char *c = canon_text("{ \"defaultMode\": \"plan\",\n  \"allow\": [ \"Bash(ls)\" ] }");
    assert_string_equal(c, "{\"allow\":[\"Bash(ls)\"],\"defaultMode\":\"plan\"}");
    char hex[65];
    sha256_hex(c, strlen(c), hex);
    assert_string_equal(hex, "2701f552d040f599dbf83ac98d6ded1793e4b74d5e25e1806f7fa7e6e932129a");
    free(c);
}

static void test_key_order_independent(void **st)
{
    (void)st;
    json_t *a = json_pack("{s:i, s:{s:s, s:[i, {s:b, s:n}]}, s:s}", "b", 1, "a", "z", "x", "w", 2,
                          "q", 1, "p", "c", "d");
    json_t *b = json_pack("{s:s, s:{s:[i, {s:n, s:b}], s:s}, s:i}", "c", "d", "a", "w", 2, "p", "q",
                          1, "z", "x", "b", 1);
    assert_non_null(a);
    assert_non_null(b);
    char *ca = canon(a), *cb = canon(b);
    assert_string_equal(ca, cb);
    assert_string_equal(ca, "{\"a\":{\"w\":[2,{\"p\":null,\"q\":true}],\"z\":\"x\"},\"b\":1,"
                            "\"c\":\"d\"}");
    free(ca);
    free(cb);
    json_decref(a);
    json_decref(b);
    /* arrays keep their order: different arrays, different bytes */
    char *x = canon_text("[1,2]"), *y = canon_text("[2,1]");
    assert_string_not_equal(x, y);
    free(x);
    free(y);
}

static void test_byte_order_keys(void **st)
{
    (void)st;
    /* byte order: uppercase before lowercase, "a" before "a-b" before "a.b"
     * before "ab", UTF-8 (>= 0x80) last */
    char *c = canon_text("{\"\xc3\xa9\":1,\"ab\":2,\"a.b\":3,\"a-b\":4,\"a\":5,\"B\":6,\"\":7}");
    assert_string_equal(c, "{\"\":7,\"B\":6,\"a\":5,\"a-b\":4,\"a.b\":3,\"ab\":2,\"\xc3\xa9\":1}");
    free(c);
}

static void test_string_escaping(void **st)
{
    (void)st;
    /* '/' unescaped, non-ASCII literal (also when the input used \u escapes),
     * quotes, backslashes and controls escaped */
    char *c = canon_text("{\"k\":\"a/b \\u00e9 \xe2\x82\xac \\\" \\\\ \\n\\t\\r\\b\\f \\u0001 "
                         "\\ud83d\\ude00 \\/\"}");
    assert_string_equal(c, "{\"k\":\"a/b \xc3\xa9 \xe2\x82\xac \\\" \\\\ \\n\\t\\r\\b\\f \\u0001 "
                           "\xf0\x9f\x98\x80 /\"}");
    free(c);
    /* a string built without UTF-8 checking still yields valid JSON */
    json_t *s = json_stringn_nocheck("a\xff", 2);
    c = canon(s);
    assert_string_equal(c, "\"a\xef\xbf\xbd\"");
    free(c);
    json_decref(s);
}

/* The three writers' differences are flags, each pinned byte for byte. */
static void test_escape_flags(void **st)
{
    (void)st;
    static const char in[] = "a\"\\/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9\xff\0z";
    static const struct {
        unsigned flags;
        const char *want;
    } cases[] = {
        {0, "a\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\xff\\u0000z"},
        {JSON_ESC_UPPER_HEX, "a\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001F\x7f\xc3\xa9\xff\\u0000z"},
        {JSON_ESC_DEL, "a\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\xc3\xa9\xff\\u0000z"},
        {JSON_ESC_FIX_UTF8, "a\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\xef\xbf\xbd"
                            "\\u0000z"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        strbuf sb = SB_INIT;
        json_escape(in, sizeof in - 1, cases[i].flags, &sb);
        assert_string_equal(sb.buf, cases[i].want);
        sb_release(&sb);
    }
    /* a truncated sequence at the very end is one bad byte per byte */
    strbuf sb = SB_INIT;
    json_escape("x\xe2\x82", 3, JSON_ESC_FIX_UTF8, &sb);
    assert_string_equal(sb.buf, "x\xef\xbf\xbd\xef\xbf\xbd");
    sb_release(&sb);
}

static void test_numbers(void **st)
{
    (void)st;
    static const struct {
        double d;
        const char *want;
    } v[] = {
        {0.1, "0.1"},
        {1.0, "1.0"},
        {-2.5, "-2.5"},
        {100.0, "100.0"},
        {1.0 / 3.0, "0.3333333333333333"},
        {123.456, "123.456"},
        {1e21, "1e+21"},
        {1e20, "100000000000000000000.0"},
        {1e-7, "1e-7"},
        {0.000001, "0.000001"},
        {1.5e300, "1.5e+300"},
        {-1.25e-10, "-1.25e-10"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {0.0, "0.0"},
        {-0.0, "-0.0"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        json_t *r = json_real(v[i].d);
        char *c = canon(r);
        assert_string_equal(c, v[i].want);
        /* round trip */
        assert_true(strtod(c, NULL) == v[i].d);
        free(c);
        json_decref(r);
    }
    char *c = canon_text("[0,-1,9223372036854775807,-9223372036854775808,1.0,2.50]");
    assert_string_equal(c, "[0,-1,9223372036854775807,-9223372036854775808,1.0,2.5]");
    free(c);
    /* two equal values, same bytes, however they were written */
    char *a = canon_text("[1e2, 0.10, 1E-7]"), *b = canon_text("[100.0, 1e-1, 0.0000001]");
    assert_string_equal(a, b);
    free(a);
    free(b);
    c = canon_text("[true,false,null,{},[]]");
    assert_string_equal(c, "[true,false,null,{},[]]");
    free(c);
}

static void test_parse_errors(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    const char *bad = "{\n  \"a\": 1,\n  \"b\": tru\n}";
    assert_null(json_parse("cfg.json", bad, strlen(bad), &err));
    assert_string_equal(err.path, "cfg.json");
    assert_int_equal(err.line, 3);
    assert_true(err.col > 0);
    char buf[4096];
    as_err_str(&err, buf, sizeof buf);
    assert_memory_equal(buf, "cfg.json:3:", 11);
    /* duplicate keys are refused */
    assert_null(json_parse("d.json", "{\"a\":1,\"a\":2}", 13, &err));
    assert_non_null(strstr(err.msg, "duplicate"));
    /* empty input, trailing garbage, embedded NUL: errors, no crash */
    assert_null(json_parse("e.json", "", 0, &err));
    assert_string_equal(err.path, "e.json");
    assert_true(err.line >= 1);
    assert_null(json_parse("g.json", "{} x", 4, &err));
    assert_null(json_parse("n.json", "{\"a\":\"\\u0000\"}", 14, &err));
    assert_null(json_parse("z.json", "[1,\0 2]", 7, &err));
    /* deep nesting is refused by jansson's depth limit, not a stack overflow */
    size_t n = 100000;
    char *deep = malloc(n);
    memset(deep, '[', n);
    assert_null(json_parse("deep.json", deep, n, &err));
    free(deep);
    /* scalars are accepted at the top level */
    json_t *v = json_parse("s.json", "\"x\"", 3, &err);
    assert_true(json_is_string(v));
    json_decref(v);
}

static char *repeat(const char *open, size_t n, const char *mid, const char *close)
{
    strbuf sb = SB_INIT;
    for (size_t i = 0; i < n; i++)
        sb_adds(&sb, open);
    sb_adds(&sb, mid);
    for (size_t i = 0; i < n; i++)
        sb_adds(&sb, close);
    return sb_detach(&sb, NULL);
}

static int jansson_reads(const char *s, size_t n)
{
    json_error_t je;
    json_t *v = json_loadb(s, n, JSON_DECODE_ANY, &je);
    json_decref(v);
    return v != NULL;
}

/* The scanner names exactly what jansson refuses in well-formed JSON, and
 * says nothing of text that is no JSON at all (a reader skips that). */
static void test_unrepresentable(void **st)
{
    (void)st;
    static const struct {
        const char *text;
        const char *why; /* NULL: jansson reads it */
        size_t at;
    } ok[] = {
        {"{\"a\":\"x\\u0000y\"}", "string contains \\u0000 (NUL)", 5},
        {"{\"\\u0000\":1}", "string contains \\u0000 (NUL)", 1},
        {" [\"\\ud800\"]", "string contains an unpaired surrogate escape", 2},
        {"[\"\\ud800\\u0041\"]", "string contains an unpaired surrogate escape", 1},
        {"[\"\\udc00\"]", "string contains an unpaired surrogate escape", 1},
        {"{\"n\":1e400}", "number out of range", 5},
        {"[-1e400]", "number out of range", 1},
        {"[123456789012345678901234567890]", "number out of range", 1},
        {"[9223372036854775808]", "number out of range", 1},
        {"[-9223372036854775809]", "number out of range", 1},
        /* invalid UTF-8 in a string: a message jansson cannot hold, not noise */
        {"[\"\xff\", \"\\u0000\"]", "string contains invalid UTF-8", 2},
        {"{\"k\xc0\xaf"
         "ey\":1}",
         "string contains invalid UTF-8", 3},
        {"[\"\xed\xa0\x80\"]", "string contains invalid UTF-8", 2},
        {"[\"a\xe2\x82\"]", "string contains invalid UTF-8", 3},
        {"[\"\xf4\x90\x80\x80\"]", "string contains invalid UTF-8", 2},
        /* the first trait in the text wins */
        {"[1e999, \"\\u0000\"]", "number out of range", 1},
        /* what jansson reads */
        {"[9223372036854775807, -9223372036854775808, 1e308, 1e-400, -0, 0.5e-3]", NULL, 0},
        {"{\"a\":\"\\ud83d\\ude00 \\u00e9 \\\"\\\\\\/\\b\\f\\n\\r\\t\",\"b\":[true,false,null]}",
         NULL, 0},
        {"\"x\"", NULL, 0},
        {" {} ", NULL, 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *t = ok[i].text;
        size_t at = 99;
        const char *why = json_unrepresentable(t, strlen(t), &at);
        if (!ok[i].why) {
            assert_true(jansson_reads(t, strlen(t)));
            assert_null(why);
            continue;
        }
        assert_false(jansson_reads(t, strlen(t)));
        if (!why || strcmp(why, ok[i].why) != 0 || at != ok[i].at)
            fail_msg("case %zu (%s): %s at %zu", i, t, why ? why : "(null)", at);
    }
    /* not JSON: no reason, whatever it holds */
    static const char *const bad[] = {
        "",
        "garbage \\u0000",
        "{\"a\":\"\\u0000\"",
        "{\"a\":\"\\u0000\"} x",
        "[\"\\u0000\",]",
        "{\"a\" \"\\u0000\"}",
        "[\"\\u0000\" 1]",
        "[\"\\x\", 1e400]",
        "[01, 1e400]",
        "[1., 1e400]",
        "[\"\x01\", \"\\u0000\"]",
        "[\"x\"]\xff", /* outside a string: not JSON at all */
        "[\"x\" \xff]",
        "[\"\\u00g0\"]",
        "{1:\"\\u0000\"}",
        "[tru, 1e400]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (json_unrepresentable(bad[i], strlen(bad[i]), NULL))
            fail_msg("bad case %zu (%s) was called JSON", i, bad[i]);
    assert_null(json_unrepresentable("[1,\0 2]", 7, NULL));
    /* depth: jansson counts every value, so 2048 arrays hold no scalar */
    char *d = repeat("[", 2048, "", "]");
    assert_true(jansson_reads(d, strlen(d)));
    assert_null(json_unrepresentable(d, strlen(d), NULL));
    free(d);
    d = repeat("[", 2047, "1", "]");
    assert_true(jansson_reads(d, strlen(d)));
    assert_null(json_unrepresentable(d, strlen(d), NULL));
    free(d);
    d = repeat("[", 2048, "1", "]");
    assert_false(jansson_reads(d, strlen(d)));
    size_t at = 0;
    assert_string_equal(json_unrepresentable(d, strlen(d), &at), "nesting deeper than 2048 levels");
    assert_int_equal(at, 2048);
    free(d);
    /* far deeper than any recursion could go, objects too */
    d = repeat("{\"a\":", 200000, "{}", "}");
    assert_string_equal(json_unrepresentable(d, strlen(d), NULL),
                        "nesting deeper than 2048 levels");
    d[strlen(d) - 1] = ' '; /* one brace short: not JSON */
    assert_null(json_unrepresentable(d, strlen(d), NULL));
    free(d);
    /* json_parse says it in its own words, at the value */
    struct as_err err = AS_ERR_INIT;
    const char *nul = "{\n  \"cmd\": \"x\\u0000y\"\n}";
    assert_null(json_parse("n.json", nul, strlen(nul), &err));
    assert_string_equal(err.msg, "string contains \\u0000 (NUL), which agentstack refuses");
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 10);
}

static void test_load_and_dump(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "a.json", "{\"z\": 1, \"a\": {\"k\": \"v/w\"}}");
    struct as_err err = AS_ERR_INIT;
    json_t *v = json_load_path(p, 1024, &err);
    assert_non_null(v);
    strbuf sb = SB_INIT;
    json_dump_compact(v, &sb);
    assert_string_equal(sb.buf, "{\"z\":1,\"a\":{\"k\":\"v/w\"}}"); /* insertion order */
    sb_reset(&sb);
    json_dump_pretty(v, &sb);
    assert_string_equal(sb.buf, "{\n  \"z\": 1,\n  \"a\": {\n    \"k\": \"v/w\"\n  }\n}\n");
    assert_int_equal(json_get_int(v, "z", -1), 1);
    assert_int_equal(json_get_int(v, "a", -1), -1);
    assert_int_equal(json_get_int(v, "missing", 7), 7);
    assert_null(json_get_str(v, "z"));
    assert_string_equal(json_get_str(json_object_get(v, "a"), "k"), "v/w");
    assert_int_equal(json_get_bool(v, "z", 5), 5);
    assert_null(json_get_str(NULL, "x"));
    assert_int_equal(json_get_int(json_object_get(v, "z"), "x", 3), 3);
    json_decref(v);
    json_t *b = json_pack("{s:b, s:b}", "t", 1, "f", 0);
    assert_int_equal(json_get_bool(b, "t", -1), 1);
    assert_int_equal(json_get_bool(b, "f", -1), 0);
    json_decref(b);

    /* the cap and the error location */
    assert_null(json_load_path(p, 5, &err));
    assert_non_null(strstr(err.msg, "exceeds the 5-byte limit"));
    char *q = tu_write(dir, "bad.json", "[1,\n2,\n,]");
    assert_null(json_load_path(q, 1024, &err));
    assert_string_equal(err.path, q);
    assert_int_equal(err.line, 3);
    sb_release(&sb);
    free(p);
    free(q);
    tu_rmtree(dir);
}

static void test_from_toml(void **st)
{
    (void)st;
    const char *src = "title = \"t/x\"\n"
                      "n = 42\n"
                      "f = 1.5\n"
                      "whole = 3.0\n"
                      "inf = inf\n"
                      "on = true\n"
                      "when = 1979-05-27T07:32:00Z\n"
                      "day = 1979-05-27\n"
                      "arr = [1, \"two\", [3]]\n"
                      "[srv.demo]\n"
                      "command = \"npx\"\n"
                      "args = [\"-y\", \"pkg\"]\n";
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_parse("m.toml", src, strlen(src), &err);
    assert_non_null(t);
    json_t *j = json_from_toml(t);
    char *c = canon(j);
    assert_string_equal(c, "{\"arr\":[1,\"two\",[3]],\"day\":\"1979-05-27\",\"f\":1.5,"
                           "\"inf\":\"inf\",\"n\":42,\"on\":true,"
                           "\"srv\":{\"demo\":{\"args\":[\"-y\",\"pkg\"],\"command\":\"npx\"}},"
                           "\"title\":\"t/x\",\"when\":\"1979-05-27T07:32:00Z\",\"whole\":3.0}");
    free(c);
    json_decref(j);
    toml_free(t);
    json_t *nul = json_from_toml(NULL);
    assert_true(json_is_null(nul));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_vector),     cmocka_unit_test(test_key_order_independent),
        cmocka_unit_test(test_byte_order_keys), cmocka_unit_test(test_string_escaping),
        cmocka_unit_test(test_escape_flags),    cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_parse_errors),    cmocka_unit_test(test_load_and_dump),
        cmocka_unit_test(test_from_toml),       cmocka_unit_test(test_unrepresentable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
