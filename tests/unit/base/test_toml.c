/* toml: parsing, reading, building, cloning and comparing. */
#include "testutil.h"

#include <math.h>
#include <sys/stat.h>

#include "base/toml.h"

static toml_value *parse_ok(const char *text)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("t.toml", text, strlen(text), &err);
    if (!v)
        fail_msg("unexpected parse error: %s:%u:%u: %s", err.path, err.line, err.col, err.msg);
    return v;
}

/* Parses text expecting failure; returns "line:col: msg". */
static const char *parse_err(const char *text, size_t len)
{
    static char buf[4200];
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_parse("t.toml", text, len, &err);
    if (v) {
        toml_free(v);
        fail_msg("parse of %.60s unexpectedly succeeded", text);
    }
    assert_string_equal(err.path, "t.toml");
    assert_true(err.line >= 1 && err.col >= 1);
    snprintf(buf, sizeof buf, "%u:%u: %s", err.line, err.col, err.msg);
    return buf;
}

static void test_scalars(void **state)
{
    (void)state;
    toml_value *r = parse_ok("# c\n"
                             "s = \"a\\tb\\u00e9\"\n"
                             "lit = 'C:\\path'\n"
                             "i = -0\n"
                             "j = 1_000\n"
                             "h = 0xdead_BEEF\n"
                             "o = 0o755\n"
                             "b = 0b1010\n"
                             "f = 6.02e23\n"
                             "ninf = -inf\n"
                             "nan = nan\n"
                             "t = true\n"
                             "d = 1979-05-27T07:32:00.5-07:00\n"
                             "ld = 1979-05-27 07:32:00\n"
                             "dd = 1979-05-27\n"
                             "tt = 07:32:00\n"
                             "min = -9223372036854775808\n");
    assert_non_null(r);
    toml_value *s = toml_get(r, "s");
    assert_int_equal(s->type, TOML_STRING);
    assert_string_equal(s->u.str.s, "a\tb\xc3\xa9");
    assert_int_equal(s->u.str.len, 5);
    assert_string_equal(toml_get(r, "lit")->u.str.s, "C:\\path");
    assert_int_equal(toml_get(r, "j")->u.i, 1000);
    assert_int_equal(toml_get(r, "h")->u.i, 0xdeadbeef);
    assert_int_equal(toml_get(r, "o")->u.i, 0755);
    assert_int_equal(toml_get(r, "b")->u.i, 10);
    assert_true(toml_get(r, "f")->u.f == 6.02e23);
    assert_true(isinf(toml_get(r, "ninf")->u.f) && toml_get(r, "ninf")->u.f < 0);
    assert_true(isnan(toml_get(r, "nan")->u.f));
    assert_true(toml_get(r, "t")->u.b);
    assert_int_equal(toml_get(r, "d")->type, TOML_DATETIME);
    assert_string_equal(toml_get(r, "d")->u.dt, "1979-05-27T07:32:00.5-07:00");
    assert_int_equal(toml_get(r, "ld")->type, TOML_DATETIME_LOCAL);
    assert_string_equal(toml_get(r, "ld")->u.dt, "1979-05-27T07:32:00");
    assert_int_equal(toml_get(r, "dd")->type, TOML_DATE_LOCAL);
    assert_int_equal(toml_get(r, "tt")->type, TOML_TIME_LOCAL);
    assert_true(toml_get(r, "min")->u.i == INT64_MIN);
    assert_null(toml_get(r, "missing"));
    assert_int_equal(toml_len(r), 16);
    toml_free(r);
}

static void test_tables_and_positions(void **state)
{
    (void)state;
    const char *text = "top = 1\n"
                       "\n"
                       "[servers.demo]\n"
                       "command = \"node\"\n"
                       "  args = [\"a\", 'b']\n"
                       "[[tools]]\n"
                       "name = \"x\"\n"
                       "[[tools]]\n"
                       "name = \"y\"\n"
                       "meta.tag = { k = 1 }\n";
    toml_value *r = parse_ok(text);
    toml_value *demo = toml_get_path(r, "servers", "demo", NULL);
    assert_non_null(demo);
    assert_int_equal(demo->type, TOML_TABLE);
    assert_int_equal(demo->line, 3);
    assert_int_equal(demo->col, 1);
    assert_true(toml_get(r, "servers")->implicit);
    assert_false(demo->implicit);
    const toml_kv *kv = toml_get_kv(demo, "args");
    assert_non_null(kv);
    assert_int_equal(kv->line, 5);
    assert_int_equal(kv->col, 3);
    assert_int_equal(kv->val->col, 10);
    assert_int_equal(kv->val->off, strstr(text, "[\"a\"") - text);
    assert_int_equal(kv->val->end - kv->val->off, strlen("[\"a\", 'b']"));
    assert_true(kv->val->is_inline);
    assert_int_equal(toml_len(kv->val), 2);
    assert_string_equal(toml_at(kv->val, 1)->u.str.s, "b");
    assert_null(toml_at(kv->val, 2));
    toml_value *tools = toml_get(r, "tools");
    assert_true(tools->is_array_of_tables);
    assert_int_equal(toml_len(tools), 2);
    assert_string_equal(toml_get(toml_at(tools, 1), "name")->u.str.s, "y");
    assert_int_equal(toml_get_path(toml_at(tools, 1), "meta", "tag", "k", NULL)->u.i, 1);
    assert_string_equal(toml_entry(r, 0)->key, "top");
    assert_null(toml_entry(r, 9));
    /* file order kept */
    assert_string_equal(toml_entry(r, 1)->key, "servers");
    assert_string_equal(toml_entry(r, 2)->key, "tools");
    toml_free(r);
}

static void test_errors_have_positions(void **state)
{
    (void)state;
    const char *e = parse_err("a = 1\na = 2\n", 12);
    assert_string_equal(e, "2:1: duplicate key 'a'");
    e = parse_err("[t]\nx = 1\n[t]\n", 14);
    assert_string_equal(e, "3:1: table [t] is defined more than once");
    e = parse_err("[s.'d e']\n[s.\"d e\"]\n", 20);
    assert_string_equal(e, "2:1: table [s.d e] is defined more than once");
    e = parse_err("x = \"abc\n", 9);
    assert_string_equal(e, "1:9: newline in a single-line string");
    e = parse_err("x = 1 2\n", 8);
    assert_string_equal(e, "1:7: expected a newline after the value, found '2'");
    e = parse_err("x = 0x\n", 7);
    assert_string_equal(e, "1:5: invalid hexadecimal integer '0x'");
    e = parse_err("x = {a = 1,}\n", 13);
    assert_string_equal(e, "1:12: trailing comma in an inline table (not allowed in TOML 1.0)");
    e = parse_err("a = { b = 1 }\n[a]\n", 18);
    assert_string_equal(e, "2:1: table [a] is defined more than once");
    e = parse_err("x = 2021-02-30\n", 15);
    assert_string_equal(e, "1:5: invalid date/time '2021-02-30': day out of range for the month");
    struct as_err err = AS_ERR_INIT;
    assert_null(toml_parse("p.toml", "k =", 3, &err));
    char buf[4200];
    assert_string_equal(as_err_str(&err, buf, sizeof buf),
                        "p.toml:1:4: expected a value, found end of file");
}

static void test_dotted_and_header_rules(void **state)
{
    (void)state;
    toml_value *r = parse_ok("[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n"
                             "[fruit.apple.texture]\nsmooth = true\n");
    assert_true(toml_get_path(r, "fruit", "apple", "texture", "smooth", NULL)->u.b);
    toml_free(r);
    parse_err("[fruit]\napple.color = 1\n[fruit.apple]\n", 36);
    parse_err("[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n", 27);
    parse_err("a = [1]\n[[a]]\n", 14);
    parse_err("[[a]]\n[a]\n", 10);
    r = parse_ok("[a.b.c]\n[a.b]\nx = 1\n[a]\ny = 2\n");
    assert_int_equal(toml_get_path(r, "a", "b", "x", NULL)->u.i, 1);
    toml_free(r);
}

static void test_build_clone_equal(void **state)
{
    (void)state;
    toml_value *t = toml_new(TOML_TABLE);
    toml_table_set(t, "name", toml_new_string("demo"));
    toml_table_set(t, "n", toml_new_int(3));
    toml_table_set(t, "f", toml_new_float(0.5));
    toml_table_set(t, "on", toml_new_bool(true));
    toml_value *arr = toml_new(TOML_ARRAY);
    toml_array_push(arr, toml_new_stringn("a\0b", 3));
    toml_array_push(arr, toml_new_datetime(TOML_DATE_LOCAL, "2024-01-02"));
    toml_table_set(t, "arr", arr);
    assert_null(toml_new_datetime(TOML_DATE_LOCAL, "2024-01-02T00:00:00"));
    assert_null(toml_new_datetime(TOML_TIME_LOCAL, "25:00:00"));
    toml_table_set(t, "n", toml_new_int(4)); /* replaces in place */
    assert_int_equal(toml_len(t), 5);
    assert_string_equal(toml_entry(t, 1)->key, "n");
    assert_int_equal(toml_get(t, "n")->u.i, 4);
    toml_value *c = toml_clone(t);
    assert_true(toml_equal(t, c));
    assert_int_equal(toml_at(toml_get(c, "arr"), 0)->u.str.len, 3);
    toml_table_set(c, "n", toml_new_int(5));
    assert_false(toml_equal(t, c));
    toml_table_set(c, "n", toml_new_int(4));
    assert_true(toml_equal(t, c));
    assert_int_equal(toml_table_remove(c, "name"), 1);
    assert_int_equal(toml_table_remove(c, "name"), 0);
    assert_false(toml_equal(t, c));
    assert_string_equal(toml_type_name(TOML_DATETIME_LOCAL), "datetime-local");
    assert_string_equal(toml_type_name(TOML_BOOL), "bool");
    /* floats: nan equals nan; -0.0 and 0.0 differ */
    toml_value *a = toml_new_float(NAN), *b = toml_new_float(NAN);
    assert_true(toml_equal(a, b));
    a->u.f = 0.0;
    b->u.f = -0.0;
    assert_false(toml_equal(a, b));
    toml_free(a);
    toml_free(b);
    toml_free(t);
    toml_free(c);
}

static void test_big_table_index(void **state)
{
    (void)state;
    /* 20k keys: lookups and duplicate detection go through the index. */
    strbuf sb = SB_INIT;
    for (int i = 0; i < 20000; i++)
        sb_addf(&sb, "k%d = %d\n", i, i);
    toml_value *r = parse_ok(sb.buf);
    assert_int_equal(toml_len(r), 20000);
    assert_int_equal(toml_get(r, "k12345")->u.i, 12345);
    for (int i = 0; i < 20000; i += 7) {
        char k[32];
        snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(toml_get(r, k)->u.i, i);
    }
    assert_int_equal(toml_table_remove(r, "k5"), 1);
    assert_null(toml_get(r, "k5"));
    assert_int_equal(toml_get(r, "k19999")->u.i, 19999);
    toml_table_set(r, "k5", toml_new_int(-5));
    assert_int_equal(toml_get(r, "k5")->u.i, -5);
    toml_value *c = toml_clone(r);
    assert_true(toml_equal(r, c));
    toml_free(c);
    toml_free(r);
    sb_addf(&sb, "k777 = 1\n");
    struct as_err err = AS_ERR_INIT;
    assert_null(toml_parse("t", sb.buf, sb.len, &err));
    assert_int_equal(err.line, 20001);
    assert_string_equal(err.msg, "duplicate key 'k777'");
    sb_release(&sb);
}

static void test_parse_file(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "a.toml", "x = 1\n");
    struct as_err err = AS_ERR_INIT;
    toml_value *r = toml_parse_file(p, 1024, &err);
    assert_non_null(r);
    assert_int_equal(toml_get(r, "x")->u.i, 1);
    toml_free(r);
    /* over the cap */
    assert_null(toml_parse_file(p, 5, &err));
    assert_string_equal(err.msg, "exceeds the 5-byte limit");
    assert_string_equal(err.path, p);
    /* exactly the cap is fine */
    r = toml_parse_file(p, 6, &err);
    assert_non_null(r);
    toml_free(r);
    /* a FIFO is refused without blocking, a directory too */
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(toml_parse_file(fifo, 1024, &err));
    assert_string_equal(err.msg, "not a regular file");
    assert_null(toml_parse_file(dir, 1024, &err));
    assert_string_equal(err.msg, "not a regular file");
    /* a missing file */
    char miss[4200];
    snprintf(miss, sizeof miss, "%s/none.toml", dir);
    assert_null(toml_parse_file(miss, 1024, &err));
    assert_non_null(strstr(err.msg, "No such file"));
    /* errors in the file carry its path */
    char *bad = tu_write(dir, "bad.toml", "ok = 1\nx = \n");
    assert_null(toml_parse_file(bad, 1024, &err));
    char buf[8400], want[8400];
    snprintf(want, sizeof want, "%s:2:5: expected a value, found end of line", bad);
    assert_string_equal(as_err_str(&err, buf, sizeof buf), want);
    free(bad);
    free(p);
    tu_rmtree(dir);
}

static void test_nul_keys(void **state)
{
    (void)state;
    const char *text = "\"a\\u0000b\" = 1\n";
    const char *e = parse_err(text, strlen(text));
    assert_string_equal(e, "1:1: a key cannot contain a NUL character");
    struct as_err err = AS_ERR_INIT;
    toml_value *r = toml_parse_ex("t", text, strlen(text), TOML_PARSE_NUL_KEYS, &err);
    assert_non_null(r);
    assert_int_equal(toml_entry(r, 0)->keylen, 3);
    /* the C-string view does not alias it to "a" */
    assert_null(toml_get(r, "a"));
    toml_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_tables_and_positions),
        cmocka_unit_test(test_errors_have_positions),
        cmocka_unit_test(test_dotted_and_header_rules),
        cmocka_unit_test(test_build_clone_equal),
        cmocka_unit_test(test_big_table_index),
        cmocka_unit_test(test_parse_file),
        cmocka_unit_test(test_nul_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
