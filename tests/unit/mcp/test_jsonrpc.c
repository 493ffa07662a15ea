/* JSON-RPC message model: classification, validation, error replies, builders. */
#include "testutil.h"

#include "mcp/mcp.h"

static enum mcp_parse_status parse(const char *s, struct mcp_msg *m, json_t **reply)
{
    return mcp_parse(s, strlen(s), m, reply);
}

static void assert_error_reply(json_t *reply, int code, const char *id_json)
{
    assert_non_null(reply);
    strbuf sb = SB_INIT;
    mcp_dump(reply, &sb);
    char want[256];
    snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,", id_json,
             code);
    assert_true(strncmp(sb.buf, want, strlen(want)) == 0);
    sb_release(&sb);
    json_decref(reply);
}

static void test_request_notification_response(void **state)
{
    (void)state;
    struct mcp_msg m;
    json_t *reply;
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\","
                           "\"params\":{\"cursor\":\"x\"}}",
                           &m, &reply),
                     MCP_PARSED);
    assert_null(reply);
    assert_int_equal(m.kind, MCP_REQUEST);
    assert_string_equal(m.method, "tools/list");
    assert_int_equal(json_integer_value(m.id), 7);
    assert_string_equal(json_string_value(json_object_get(m.params, "cursor")), "x");
    mcp_msg_clear(&m);

    assert_int_equal(
        parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\",\"params\":[1]}", &m, NULL),
        MCP_PARSED);
    assert_int_equal(m.kind, MCP_REQUEST);
    assert_string_equal(json_string_value(m.id), "a");
    assert_true(json_is_array(m.params));
    mcp_msg_clear(&m);

    assert_int_equal(
        parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, NULL),
        MCP_PARSED);
    assert_int_equal(m.kind, MCP_NOTIFICATION);
    assert_null(m.id);
    assert_null(m.params);
    mcp_msg_clear(&m);

    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &m, NULL), MCP_PARSED);
    assert_int_equal(m.kind, MCP_RESPONSE);
    assert_non_null(m.result);
    assert_null(m.error);
    mcp_msg_clear(&m);

    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                           "\"message\":\"Parse error\"}}",
                           &m, NULL),
                     MCP_PARSED);
    assert_int_equal(m.kind, MCP_RESPONSE);
    assert_non_null(m.error);
    mcp_msg_clear(&m);
}

static void test_framing_tolerance(void **state)
{
    (void)state;
    struct mcp_msg m;
    const char bom[] = "\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r";
    assert_int_equal(mcp_parse(bom, sizeof bom - 1, &m, NULL), MCP_PARSED);
    assert_string_equal(m.method, "ping");
    mcp_msg_clear(&m);
    assert_int_equal(parse("", &m, NULL), MCP_BLANK);
    assert_int_equal(parse("   \r", &m, NULL), MCP_BLANK);
    assert_int_equal(parse("\t", &m, NULL), MCP_BLANK);
}

static const char *err_message(json_t *reply);

static void test_parse_error_has_null_id(void **state)
{
    (void)state;
    struct mcp_msg m;
    json_t *reply;
    const char *bad[] = {
        "garbage",       "{\"jsonrpc\":\"2.0\",",
        "{'a':1}",       "[1,",
        "[\"\\u0000\",", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"} trailing"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i], &m, &reply), MCP_NOT_JSON);
        assert_null(m.root);
        assert_error_reply(reply, MCP_PARSE_ERROR, "null");
    }
    /* invalid UTF-8 in a string is a message all the same: a notification
     * gets no reply, a request -32700 with its id and the reason */
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}", &m, &reply),
                     MCP_UNREADABLE);
    assert_null(reply);
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"\xff\"}", &m, &reply),
                     MCP_UNREADABLE);
    assert_non_null(strstr(err_message(reply), "invalid UTF-8"));
    assert_error_reply(reply, MCP_PARSE_ERROR, "9"); /* releases it */
    /* outside a string it is still noise */
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\xff", &m, &reply), MCP_NOT_JSON);
    json_decref(reply);
}

static const char *err_message(json_t *reply)
{
    return json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
}

/* Well-formed JSON jansson cannot hold is a message: a request is answered
 * with its id and the reason, a notification or a response is not. */
static void test_unreadable(void **state)
{
    (void)state;
    struct mcp_msg m;
    json_t *reply;
    static const struct {
        const char *line, *id, *why;
    } req[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"a\":\"x\\u0000\"}}",
         "5", "Parse error: string contains \\u0000 (NUL)"},
        {"\xEF\xBB\xBF{\"id\":\"k\",\"method\":\"m\",\"params\":[\"\\ud800\"]}\r", "\"k\"",
         "Parse error: string contains an unpaired surrogate escape"},
        {"{\"params\":[1e400],\"id\":2.5,\"method\":\"m\"}", "2.5",
         "Parse error: number out of range"},
        /* the id itself unreadable, repeated, or of no id type: null */
        {"{\"jsonrpc\":\"2.0\",\"id\":\"\\u0000\",\"method\":\"m\"}", "null",
         "Parse error: string contains \\u0000 (NUL)"},
        {"{\"params\":[\"\\u0000\"],\"id\":1,\"id\":2,\"method\":\"m\"}", "null",
         "Parse error: string contains \\u0000 (NUL)"},
        {"{\"id\":[1],\"method\":\"m\",\"params\":[\"\\u0000\"]}", "null",
         "Parse error: string contains \\u0000 (NUL)"},
        {"{\"id\":12345678901234567890123,\"method\":\"m\"}", "null",
         "Parse error: number out of range"},
        /* no message shape at all: answered like any unusable line */
        {"[\"\\u0000\"]", "null", "Parse error: string contains \\u0000 (NUL)"},
        {"{\"id\":4,\"x\":\"\\u0000\"}", "4", "Parse error: string contains \\u0000 (NUL)"},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        assert_int_equal(parse(req[i].line, &m, &reply), MCP_UNREADABLE);
        assert_null(m.root);
        assert_string_equal(err_message(reply), req[i].why);
        assert_error_reply(reply, MCP_PARSE_ERROR, req[i].id);
    }
    /* no reply: a notification, a response (the reader fails the request) */
    assert_int_equal(
        parse("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"\\u0000\":1}}", &m, &reply),
        MCP_UNREADABLE);
    assert_null(reply);
    const char *resp = "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"t\":\"\\u0000\"}}";
    assert_int_equal(parse(resp, &m, &reply), MCP_UNREADABLE);
    assert_null(reply);
    struct mcp_unreadable u;
    assert_int_equal(mcp_unreadable_read(resp, strlen(resp), &u), 0);
    assert_int_equal(json_integer_value(u.id), 9);
    assert_true(u.has_id && u.has_answer && !u.has_method);
    assert_string_equal(u.why, "string contains \\u0000 (NUL)");
    mcp_unreadable_clear(&u);
    assert_null(u.id);
    /* deep nesting, far past any recursion, with the id after it */
    strbuf deep = SB_INIT;
    sb_adds(&deep, "{\"jsonrpc\":\"2.0\",\"result\":");
    for (int i = 0; i < 100000; i++)
        sb_adds(&deep, "{\"a\":");
    sb_adds(&deep, "{}");
    for (int i = 0; i < 100000; i++)
        sb_addc(&deep, '}');
    sb_adds(&deep, ",\"id\":77}");
    assert_int_equal(mcp_parse(deep.buf, deep.len, &m, &reply), MCP_UNREADABLE);
    assert_null(reply);
    assert_int_equal(mcp_unreadable_read(deep.buf, deep.len, &u), 0);
    assert_int_equal(json_integer_value(u.id), 77);
    assert_string_equal(u.why, "nesting deeper than 2048 levels");
    mcp_unreadable_clear(&u);
    sb_release(&deep);
    /* what is not JSON stays MCP_NOT_JSON, and readable JSON never comes here */
    assert_int_equal(mcp_unreadable_read("hello \\u0000", 12, &u), -1);
    assert_null(u.id);
    const char *fine = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}";
    assert_int_equal(mcp_unreadable_read(fine, strlen(fine), &u), -1);
    /* one BOM is tolerated, a second is not JSON: the line is trimmed once
     * (fuzz_jsonrpc found mcp_parse trimming twice and calling it unreadable) */
    const char *boms = "\xEF\xBB\xBF\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\","
                       "\"params\":{\"n\":1e400}}";
    assert_int_equal(parse(boms, &m, &reply), MCP_NOT_JSON);
    json_decref(reply);
    reply = NULL;
    assert_int_equal(mcp_unreadable_read(boms, strlen(boms), &u), -1);
    assert_int_equal(parse(boms + 3, &m, &reply), MCP_UNREADABLE);
    assert_error_reply(reply, MCP_PARSE_ERROR, "3"); /* frees reply */
}

static void test_invalid_requests(void **state)
{
    (void)state;
    struct mcp_msg m;
    json_t *reply;
    const char *bad[] = {
        "{\"foo\":1}",
        "1",
        "[]",
        "[{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}]", /* no batches */
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
        "{\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"s\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":3}",
        "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":{}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i], &m, &reply), MCP_INVALID);
        assert_null(m.root);
        assert_non_null(reply);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(reply, "error"), "code")),
            MCP_INVALID_REQUEST);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(reply, "error"), "message")),
            "Invalid request");
        json_decref(reply);
    }
    /* the id is echoed when it was readable */
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":7}", &m, &reply),
                     MCP_INVALID);
    assert_error_reply(reply, MCP_INVALID_REQUEST, "42");
    assert_int_equal(parse("{\"foo\":1}", &m, &reply), MCP_INVALID);
    assert_error_reply(reply, MCP_INVALID_REQUEST, "null");
}

static void test_duplicate_keys_are_invalid(void **state)
{
    (void)state;
    struct mcp_msg m;
    json_t *reply;
    /* two methods in one message: two readers could act on different ones */
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
                           "\"method\":\"tools/call\"}",
                           &m, &reply),
                     MCP_INVALID);
    assert_error_reply(reply, MCP_INVALID_REQUEST, "null");
}

static void test_builders_and_dump(void **state)
{
    (void)state;
    strbuf sb = SB_INIT;
    json_t *p = json_object();
    json_object_set_new(p, "path", json_string("a/b\nc é"));
    json_t *req = mcp_request_new(json_integer(5), "tools/call", p);
    mcp_dump(req, &sb);
    assert_string_equal(sb.buf, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
                                "\"params\":{\"path\":\"a/b\\nc é\"}}");
    assert_null(memchr(sb.buf, '\n', sb.len));
    json_decref(req);
    sb_reset(&sb);

    json_t *id = json_string("x");
    json_t *res = mcp_result_new(id, NULL);
    mcp_dump(res, &sb);
    assert_string_equal(sb.buf, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}");
    json_decref(res);
    json_decref(id);
    sb_reset(&sb);

    json_t *err = mcp_error_new(NULL, MCP_METHOD_NOT_FOUND, "Method not found", NULL);
    mcp_dump(err, &sb);
    assert_string_equal(sb.buf, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32601,"
                                "\"message\":\"Method not found\"}}");
    json_decref(err);
    sb_reset(&sb);

    json_t *n = mcp_notification_new("notifications/initialized", NULL);
    mcp_dump(n, &sb);
    assert_string_equal(sb.buf, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    json_decref(n);
    sb_release(&sb);
}

static void test_versions(void **state)
{
    (void)state;
    assert_true(mcp_version_known("2025-11-25"));
    assert_true(mcp_version_known("2024-11-05"));
    assert_false(mcp_version_known("1999-01-01"));
    assert_false(mcp_version_known(NULL));
    assert_true(mcp_version_is_modern("2026-07-28"));
    assert_true(mcp_version_is_modern("2027-01-01"));
    assert_false(mcp_version_is_modern("2025-11-25"));
    assert_false(mcp_version_is_modern("2026-7-28"));
    assert_false(mcp_version_is_modern("zzzz-zz-zz"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_notification_response),
        cmocka_unit_test(test_framing_tolerance),
        cmocka_unit_test(test_parse_error_has_null_id),
        cmocka_unit_test(test_invalid_requests),
        cmocka_unit_test(test_unreadable),
        cmocka_unit_test(test_duplicate_keys_are_invalid),
        cmocka_unit_test(test_builders_and_dump),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
