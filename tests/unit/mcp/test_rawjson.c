/* Raw spans: the validator vouches only for what jansson reads the same way;
 * the walkers and the tree builder agree with json_loadb on what it vouched
 * for; the encoders print what jansson's dump prints. */
#include "testutil.h"

#include "mcp/mcp.h"

static int valid(const char *s)
{
    return mcp_raw_valid(s, strlen(s));
}

/* Vouched for, and its tree is exactly jansson's. */
static void assert_same_as_jansson(const char *s, size_t n)
{
    assert_true(mcp_raw_valid(s, n));
    json_error_t je;
    json_t *want = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    assert_non_null(want);
    json_t *got = mcp_raw_tree(s, n);
    assert_non_null(got);
    assert_true(json_equal(want, got));
    json_decref(want);
    json_decref(got);
}

static void test_accepts_plain_objects(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "{}",
        " \t{ }\r ",
        "{\"a\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"x\","
        "\"arguments\":{\"message\":\"hello\"}}}",
        "{\"a\":[1,-2,0,true,false,null,\"s\",{},[]],\"b\":{\"c\":{\"d\":[[[]]]}}}",
        "{ \"a\" : [ 1 , 2 ] , \"b\" : \"x\" }",
        "{\"a\":\"x\\\"}{[\",\"b\":\"]}\\\\\",\"c\":1}", /* escaped quotes, braces */
        "{\"e\":\"\\b\\f\\n\\r\\t\\/\\u00e9\\u20AC\\ud83d\\ude00\"}",
        "{\"u\":\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}", /* UTF-8 of 2, 3, 4 bytes */
        "{\"big\":999999999999999999,\"neg\":-999999999999999999}",
        "{\"same\":{\"k\":1},\"other\":{\"k\":2}}", /* one key in two objects: fine */
        NULL,
    };
    for (size_t i = 0; ok[i]; i++)
        assert_same_as_jansson(ok[i], strlen(ok[i]));
}

static void test_refuses_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "   ",
        "[]",
        "\"s\"",
        "1",
        "{",
        "{\"a\":1",
        "{\"a\":1}}",
        "{\"a\":1} x",
        "{\"a\" 1}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{,}",
        "{'a':1}",
        "{a:1}",
        "{\"a\":tru}",
        "{\"a\":truex}",
        "{\"a\":nul}",
        "{\"a\":01}",
        "{\"a\":-}",
        "{\"a\":+1}",
        "{\"a\":[1,]}",
        "{\"a\":[1 2]}",
        "{\"a\":\"unterminated}",
        "{\"a\":\"bad \\x escape\"}",
        "{\"a\":\"short \\u12\"}",
        "{\"a\":\"tab\tinside\"}",
        "{\"a\":1}\n{\"b\":2}",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        assert_false(valid(bad[i]));
        json_error_t je;
        json_t *v = json_loads(bad[i], JSON_REJECT_DUPLICATES, &je);
        /* Whatever jansson makes of it, the validator stayed out. */
        json_decref(v);
    }
}

/* Valid JSON the validator leaves to the full parser, on purpose. */
static void test_cannot_vouch_for_unusual(void **state)
{
    (void)state;
    static const char *const odd[] = {
        "{\"r\":1.5}",
        "{\"r\":1e3}",
        "{\"r\":-0}",
        "{\"i\":1234567890123456789}",    /* 19 digits */
        "{\"n\":\"nul \\u0000 inside\"}", /* jansson refuses it */
        "{\"s\":\"\\ud800 alone\"}",
        "{\"s\":\"\\udc00 alone\"}",
        "{\"s\":\"\\ud800\\u0041\"}",
        "{\"k\\u0061\":1}", /* escaped key */
        "{\"a\":1,\"a\":2}",
        "{\"o\":{\"b\":1,\"c\":2,\"b\":3}}",
        "{\"u\":\"\xc0\x80\"}",         /* overlong */
        "{\"u\":\"\xed\xa0\x80\"}",     /* a surrogate in UTF-8 */
        "{\"u\":\"\xf4\x90\x80\x80\"}", /* past U+10FFFF */
        "{\"u\":\"\xe2\x82\"}",         /* cut short */
        "{\"u\":\"\x80\"}",
        "\xef\xbb\xbf{}", /* BOM: mcp_parse strips it before */
        NULL,
    };
    for (size_t i = 0; odd[i]; i++)
        assert_false(valid(odd[i]));
}

static void test_limits(void **state)
{
    (void)state;
    strbuf s = SB_INIT;
    /* MCP_RAW_KEYS keys: fine; one more: the full parser's business. */
    for (int extra = 0; extra < 2; extra++) {
        sb_reset(&s);
        sb_addc(&s, '{');
        for (int i = 0; i < MCP_RAW_KEYS + extra; i++)
            sb_addf(&s, "%s\"k%d\":%d", i ? "," : "", i, i);
        sb_addc(&s, '}');
        assert_int_equal(mcp_raw_valid(s.buf, s.len), extra == 0);
    }
    /* Nesting to MCP_RAW_DEPTH: fine; deeper: not vouched for. */
    for (int extra = 0; extra < 2; extra++) {
        sb_reset(&s);
        int d = MCP_RAW_DEPTH + extra;
        for (int i = 0; i < d; i++)
            sb_adds(&s, i == d - 1 ? "{" : "{\"a\":");
        for (int i = 0; i < d; i++)
            sb_addc(&s, '}');
        assert_int_equal(mcp_raw_valid(s.buf, s.len), extra == 0);
        if (extra == 0)
            assert_same_as_jansson(s.buf, s.len);
    }
    /* Deep arrays count too, and never blow the stack. */
    sb_reset(&s);
    sb_adds(&s, "{\"a\":");
    for (int i = 0; i < 100000; i++)
        sb_addc(&s, '[');
    assert_false(mcp_raw_valid(s.buf, s.len));
    sb_release(&s);
}

static void test_huge(void **state)
{
    (void)state;
    strbuf s = SB_INIT;
    sb_adds(&s, "{\"text\":\"");
    for (int i = 0; i < (1 << 20); i++)
        sb_addc(&s, (char)('a' + i % 26));
    sb_adds(&s, "\\\"}\",\"list\":[");
    for (int i = 0; i < 20000; i++)
        sb_addf(&s, "%s{\"i\":%d,\"s\":\"x\\n\"}", i ? "," : "", i);
    sb_adds(&s, "]}");
    assert_same_as_jansson(s.buf, s.len);
    struct mcp_member m[4];
    struct mcp_span all = {s.buf, s.len};
    assert_int_equal(mcp_raw_members(all, m, 4), 2);
    assert_int_equal(m[0].val.n, (1u << 20) + 5); /* two quotes and the escaped \"} */
    struct mcp_span el[4];
    assert_int_equal(mcp_raw_elements(m[1].val, el, 4), -1); /* more than max */
    sb_release(&s);
}

static void test_members_and_elements(void **state)
{
    (void)state;
    const char *s =
        " { \"a\" : \"x\\\"}{[\" , \"b\":{\"c\":[1,{\"d\":\"]\"}]} ,\"e\": [ 1 , \"]\" ,"
        "[2] ] , \"f\":true } ";
    assert_true(valid(s));
    struct mcp_member m[8];
    struct mcp_span all = {s, strlen(s)};
    int n = mcp_raw_members(all, m, 8);
    assert_int_equal(n, 4);
    assert_true(m[0].key.n == 1 && m[0].key.p[0] == 'a');
    assert_true(mcp_raw_is(m[0].val, "\"x\\\"}{[\""));
    assert_true(mcp_raw_is(mcp_raw_get(m, 4, "b"), "{\"c\":[1,{\"d\":\"]\"}]}"));
    assert_true(mcp_raw_is(mcp_raw_get(m, 4, "f"), "true"));
    assert_null(mcp_raw_get(m, 4, "zz").p);
    assert_int_equal(mcp_raw_members(all, m, 3), -1);
    struct mcp_span el[4];
    assert_int_equal(mcp_raw_elements(mcp_raw_get(m, 4, "e"), el, 4), 3);
    assert_true(mcp_raw_is(el[0], "1"));
    assert_true(mcp_raw_is(el[1], "\"]\""));
    assert_true(mcp_raw_is(el[2], "[2]"));
    assert_int_equal(mcp_raw_elements(mcp_raw_get(m, 4, "b"), el, 4), -1); /* not an array */
    assert_int_equal(mcp_raw_members(mcp_raw_get(m, 4, "e"), m, 8), -1);   /* not an object */
    struct mcp_span empty = {"[ ]", 3};
    assert_int_equal(mcp_raw_elements(empty, el, 4), 0);
}

static void test_response(void **state)
{
    (void)state;
    uint64_t id = 0;
    struct mcp_span r;
    const char *ok = "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[]},\"x\":1}";
    assert_true(mcp_raw_response(ok, strlen(ok), &id, &r));
    assert_int_equal(id, 42);
    assert_true(mcp_raw_is(r, "{\"content\":[]}"));
    static const char *const no[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":-1,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}",
        "{\"id\":1,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":0.5}}",
        NULL,
    };
    for (size_t i = 0; no[i]; i++)
        assert_false(mcp_raw_response(no[i], strlen(no[i]), &id, &r));
}

static void test_encoders_match_jansson(void **state)
{
    (void)state;
    static const char *const strs[] = {
        "", "plain", "q\"b\\s/", "\x01\x1f\b\f\n\r\t\x7f", "h\xc3\xa9 \xf0\x9f\x98\x80", NULL};
    for (size_t i = 0; strs[i]; i++) {
        strbuf a = SB_INIT;
        mcp_json_str(strs[i], strlen(strs[i]), &a);
        json_t *v = json_string(strs[i]);
        char *b = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        assert_string_equal(a.buf, b);
        free(b);
        json_decref(v);
        sb_release(&a);
    }
    static const long long ints[] = {
        0, 1, -1, 42, 9223372036854775807LL, -9223372036854775807LL - 1};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        strbuf a = SB_INIT;
        mcp_json_int(ints[i], &a);
        json_t *v = json_integer(ints[i]);
        char *b = json_dumps(v, JSON_ENCODE_ANY);
        assert_string_equal(a.buf, b);
        free(b);
        json_decref(v);
        sb_release(&a);
    }
}

static void test_content_unchanged(void **state)
{
    (void)state;
    struct mcp_span none = {NULL, 0};
    assert_true(mcp_raw_content_unchanged(none, "2024-11-05"));
    const char *text = "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\"},7,{\"x\":1}]";
    struct mcp_span t = {text, strlen(text)};
    assert_true(mcp_raw_content_unchanged(t, "2024-11-05"));
    const char *audio = "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"audio\",\"data\":\"\"}]";
    struct mcp_span a = {audio, strlen(audio)};
    assert_false(mcp_raw_content_unchanged(a, "2024-11-05"));
    assert_true(mcp_raw_content_unchanged(a, "2025-03-26"));
    assert_true(mcp_raw_content_unchanged(a, NULL));            /* unknown: untouched */
    assert_true(mcp_raw_content_unchanged(a, "not-a-version")); /* likewise */
    const char *link = "[{\"type\":\"resource_link\",\"uri\":\"file:///x\"}]";
    struct mcp_span l = {link, strlen(link)};
    assert_false(mcp_raw_content_unchanged(l, "2025-03-26"));
    assert_true(mcp_raw_content_unchanged(l, "2025-06-18"));
    assert_true(mcp_raw_content_unchanged(l, MCP_VERSION_MODERN));
    const char *esc = "[{\"type\":\"t\\u0065xt\"}]"; /* judged by the parsed path */
    struct mcp_span e = {esc, strlen(esc)};
    assert_false(mcp_raw_content_unchanged(e, "2025-06-18"));
    const char *unknown = "[{\"type\":\"hologram\"}]";
    struct mcp_span u = {unknown, strlen(unknown)};
    assert_false(mcp_raw_content_unchanged(u, "2025-11-25"));
    /* Every verdict agrees with the parsed rewrite. */
    const char *all[] = {text, audio, link, unknown};
    const char *vers[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
    for (size_t i = 0; i < 4; i++)
        for (size_t k = 0; k < 4; k++) {
            json_t *r = json_object();
            json_object_set_new(r, "content", json_loads(all[i], 0, NULL));
            struct mcp_span sp = {all[i], strlen(all[i])};
            assert_int_equal(mcp_raw_content_unchanged(sp, vers[k]),
                             mcp_result_for_version(r, vers[k]) == 0);
            json_decref(r);
        }
}

/* mcp_parse takes the raw tree for plain lines and jansson for the rest:
 * the same messages either way. */
static void test_parse_paths_agree(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a__b\","
        "\"arguments\":{\"s\":\"\\u00e9\\n\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a__b\","
        "\"arguments\":{\"r\":2.5}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{\"k\":[1,2]}}",
        NULL,
    };
    for (size_t i = 0; lines[i]; i++) {
        struct mcp_msg m;
        assert_int_equal(mcp_parse(lines[i], strlen(lines[i]), &m, NULL), MCP_PARSED);
        json_t *want = json_loads(lines[i], 0, NULL);
        assert_true(json_equal(m.root, want));
        json_decref(want);
        mcp_msg_clear(&m);
    }
    struct mcp_msg m;
    json_t *reply = NULL;
    const char *dup = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"method\":\"y\"}";
    assert_int_equal(mcp_parse(dup, strlen(dup), &m, &reply), MCP_INVALID);
    json_decref(reply);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_plain_objects),
        cmocka_unit_test(test_refuses_malformed),
        cmocka_unit_test(test_cannot_vouch_for_unusual),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_huge),
        cmocka_unit_test(test_members_and_elements),
        cmocka_unit_test(test_response),
        cmocka_unit_test(test_encoders_match_jansson),
        cmocka_unit_test(test_content_unchanged),
        cmocka_unit_test(test_parse_paths_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
