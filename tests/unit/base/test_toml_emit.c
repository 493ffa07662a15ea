/* toml emitter: exact output for small documents, and the property
 * parse(emit(t)) == t on the whole toml-test valid corpus and on generated
 * trees. */
#include "testutil.h"

#include <math.h>
#include <stdint.h>

#include "base/toml.h"

static toml_value *parse_ok(const char *text, size_t len)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse_ex("t.toml", text, len, TOML_PARSE_NUL_KEYS, &err);
    if (!v)
        fail_msg("parse error: %u:%u: %s\n---\n%s", err.line, err.col, err.msg, text);
    return v;
}

static void roundtrip(const toml_value *t, const char *what)
{
    strbuf out = SB_INIT;
    toml_emit(t, &out);
    struct as_err err = AS_ERR_INIT;
    toml_value *back = toml_parse_ex("emitted", out.buf, out.len, TOML_PARSE_NUL_KEYS, &err);
    if (!back)
        fail_msg("%s: emitted text does not parse: %u:%u: %s\n---\n%s", what, err.line, err.col,
                 err.msg, out.buf);
    if (!toml_equal(t, back))
        fail_msg("%s: parse(emit(t)) != t\n---\n%s", what, out.buf);
    /* emitting is deterministic: emit(parse(emit(t))) == emit(t) */
    strbuf again = SB_INIT;
    toml_emit(back, &again);
    assert_int_equal(again.len, out.len);
    assert_memory_equal(again.buf, out.buf, out.len);
    sb_release(&again);
    toml_free(back);
    sb_release(&out);
}

static void test_emit_exact(void **state)
{
    (void)state;
    const char *src = "title = \"x\"\n"
                      "[owner]\n"
                      "name = \"Tom \\\"P\\\"\"\n"
                      "dob = 1979-05-27t07:32:00z\n"
                      "[servers.alpha]\n"
                      "ip = \"10.0.0.1\"\n"
                      "\"weird key\" = [1, 2.5, { a = true }]\n"
                      "[[products]]\n"
                      "name = \"Hammer\"\n"
                      "[[products]]\n"
                      "[empty]\n";
    toml_value *r = parse_ok(src, strlen(src));
    strbuf out = SB_INIT;
    toml_emit(r, &out);
    assert_string_equal(out.buf, "title = \"x\"\n"
                                 "\n[owner]\n"
                                 "name = \"Tom \\\"P\\\"\"\n"
                                 "dob = 1979-05-27T07:32:00Z\n"
                                 "\n[servers.alpha]\n"
                                 "ip = \"10.0.0.1\"\n"
                                 "\"weird key\" = [1, 2.5, { a = true }]\n"
                                 "\n[[products]]\n"
                                 "name = \"Hammer\"\n"
                                 "\n[[products]]\n"
                                 "\n[empty]\n");
    sb_release(&out);
    toml_free(r);
}

static void test_emit_keys_and_values(void **state)
{
    (void)state;
    strbuf sb = SB_INIT;
    toml_emit_key("bare-key_1", &sb);
    sb_addc(&sb, ' ');
    toml_emit_key("", &sb);
    sb_addc(&sb, ' ');
    toml_emit_key("a.b", &sb);
    sb_addc(&sb, ' ');
    toml_emit_key("tab\there \"q\" \\", &sb);
    sb_addc(&sb, ' ');
    toml_emit_key("\xc3\xa9", &sb);
    assert_string_equal(sb.buf,
                        "bare-key_1 \"\" \"a.b\" \"tab\\there \\\"q\\\" \\\\\" \"\xc3\xa9\"");
    sb_reset(&sb);
    static const struct {
        double f;
        const char *s;
    } floats[] = {{0.1, "0.1"},       {1e100, "1e+100"},
                  {-0.0, "-0.0"},     {3.0, "3.0"},
                  {5e-324, "5e-324"}, {1.0 / 3, "0.3333333333333333"},
                  {INFINITY, "inf"},  {-INFINITY, "-inf"},
                  {NAN, "nan"},       {123456789.0, "123456789.0"}};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        toml_value *v = toml_new_float(floats[i].f);
        sb_reset(&sb);
        toml_emit_value(v, &sb);
        assert_string_equal(sb.buf, floats[i].s);
        toml_free(v);
    }
    toml_value *s = toml_new_stringn("nul\0ctl\x01\x7f\n\xff", 11);
    sb_reset(&sb);
    toml_emit_value(s, &sb);
    /* control bytes escaped; a byte that is not UTF-8 becomes U+FFFD */
    assert_string_equal(sb.buf, "\"nul\\u0000ctl\\u0001\\u007F\\n\xef\xbf\xbd\"");
    toml_free(s);
    toml_value *i = toml_new_int(INT64_MIN);
    sb_reset(&sb);
    toml_emit_value(i, &sb);
    assert_string_equal(sb.buf, "-9223372036854775808");
    toml_free(i);
    toml_value *t = toml_new(TOML_TABLE);
    sb_reset(&sb);
    toml_emit_value(t, &sb);
    assert_string_equal(sb.buf, "{}");
    toml_free(t);
    sb_release(&sb);
}

static void test_roundtrip_corpus(void **state)
{
    (void)state;
    char list[4200];
    snprintf(list, sizeof list, "%s/toml-test/tests/files-toml-1.0.0", tu_data_dir());
    FILE *f = fopen(list, "r");
    if (!f)
        fail_msg("cannot open %s", list);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        size_t l = strlen(line);
        if (strncmp(line, "valid/", 6) != 0 || l < 5 || strcmp(line + l - 5, ".toml") != 0)
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/toml-test/tests/%s", tu_data_dir(), line);
        size_t len;
        char *text = tu_read(path, &len);
        assert_non_null(text);
        toml_value *t = parse_ok(text, len);
        roundtrip(t, line);
        toml_free(t);
        free(text);
        n++;
    }
    fclose(f);
    assert_true(n > 200);
}

/* ---- generated trees ------------------------------------------------------ */

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}
static uint32_t below(uint32_t n)
{
    return rnd() % n;
}

static void rand_text(strbuf *sb, bool allow_nul)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         "0",
                                         "-",
                                         "_",
                                         ".",
                                         " ",
                                         "\"",
                                         "'",
                                         "\\",
                                         "\t",
                                         "\n",
                                         "\r",
                                         "#",
                                         "=",
                                         "[",
                                         "]",
                                         "{",
                                         "}",
                                         "\xc3\xa9",
                                         "\xe2\x82\xac",
                                         "\xf0\x9f\x98\x80",
                                         "\x01",
                                         "\x7f",
                                         "\x1f",
                                         "key",
                                         "\xef\xbf\xbf"};
    size_t n = below(8);
    for (size_t i = 0; i < n; i++) {
        if (allow_nul && below(40) == 0)
            sb_addc(sb, '\0');
        else
            sb_adds(sb, pieces[below(sizeof pieces / sizeof pieces[0])]);
    }
}

static toml_value *rand_value(int depth);

static toml_value *rand_table(int depth, int size)
{
    toml_value *t = toml_new(TOML_TABLE);
    int n = size ? (int)below((uint32_t)size) : 0;
    for (int i = 0; i < n; i++) {
        strbuf k = SB_INIT;
        rand_text(&k, false);
        if (below(3) == 0)
            sb_addf(&k, "k%d", i);
        toml_table_set(t, k.buf, rand_value(depth + 1));
        sb_release(&k);
    }
    return t;
}

static toml_value *rand_value(int depth)
{
    static const char *const dts[] = {"1979-05-27T07:32:00Z", "1979-05-27T07:32:00.999999-07:00",
                                      "2000-02-29T23:59:60+14:00"};
    static const char *const ldts[] = {"1979-05-27T00:32:00.1", "0001-01-01T00:00:00"};
    static const char *const dates[] = {"1979-05-27", "9999-12-31", "2024-02-29"};
    static const char *const times[] = {"07:32:00", "00:00:00.000001", "23:59:60"};
    static const double floats[] = {0.0,     -0.0,     1.5,       -2e-308, 1e308, 5e-324,
                                    3.14159, INFINITY, -INFINITY, NAN,     1e15,  123456.789e3};
    uint32_t k = below(depth > 5 ? 8 : 12);
    switch (k) {
    case 0: {
        strbuf s = SB_INIT;
        rand_text(&s, true);
        toml_value *v = toml_new_stringn(s.buf, s.len);
        sb_release(&s);
        return v;
    }
    case 1: {
        int64_t x = (int64_t)(((uint64_t)rnd() << 32) | rnd());
        if (below(4) == 0)
            x = below(2) ? INT64_MIN : INT64_MAX;
        else if (below(2))
            x %= 1000;
        return toml_new_int(x);
    }
    case 2:
        return toml_new_float(below(2) ? floats[below(12)]
                                       : (double)(int32_t)rnd() / (double)(below(1000) + 1));
    case 3:
        return toml_new_bool(below(2));
    case 4:
        return toml_new_datetime(TOML_DATETIME, dts[below(3)]);
    case 5:
        return toml_new_datetime(TOML_DATETIME_LOCAL, ldts[below(2)]);
    case 6:
        return toml_new_datetime(TOML_DATE_LOCAL, dates[below(3)]);
    case 7:
        return toml_new_datetime(TOML_TIME_LOCAL, times[below(3)]);
    case 8:
    case 9: {
        toml_value *a = toml_new(TOML_ARRAY);
        uint32_t n = below(5);
        bool tables = below(2);
        for (uint32_t i = 0; i < n; i++)
            toml_array_push(a, tables ? rand_table(depth + 1, 4) : rand_value(depth + 1));
        return a;
    }
    default:
        return rand_table(depth, 6);
    }
}

static void test_roundtrip_generated(void **state)
{
    (void)state;
    rng_state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 10000; i++) {
        toml_value *t = rand_table(0, 8);
        char what[64];
        snprintf(what, sizeof what, "generated tree %d", i);
        roundtrip(t, what);
        toml_free(t);
    }
}

static void test_roundtrip_deep(void **state)
{
    (void)state;
    /* the deepest tree the parser accepts also survives emit + parse */
    toml_value *root = toml_new(TOML_TABLE), *t = root;
    for (int i = 0; i < TOML_MAX_DEPTH - 1; i++) {
        toml_value *c = toml_new(TOML_TABLE);
        toml_table_set(t, i % 2 ? "a" : "b b", c);
        t = c;
    }
    toml_table_set(t, "x", toml_new_int(1));
    roundtrip(root, "deep tables");
    toml_free(root);
    toml_value *arr = toml_new(TOML_ARRAY), *a = arr;
    for (int i = 0; i < TOML_MAX_DEPTH - 2; i++) {
        toml_value *c = toml_new(TOML_ARRAY);
        toml_array_push(a, c);
        a = c;
    }
    root = toml_new(TOML_TABLE);
    toml_table_set(root, "arr", arr);
    roundtrip(root, "deep arrays");
    toml_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emit_exact),       cmocka_unit_test(test_emit_keys_and_values),
        cmocka_unit_test(test_roundtrip_corpus), cmocka_unit_test(test_roundtrip_generated),
        cmocka_unit_test(test_roundtrip_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
