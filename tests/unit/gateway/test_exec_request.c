/* The tools_execute request validator, driven as an agent would attack it:
 * extra fields, wildcards, unknown and denied tools, oversize source and
 * input, limits that try to widen, and the machine's own limits. */
#include "testutil.h"

#include <stdlib.h>

#include "base/xalloc.h"
#include "gateway/exec_request.h"

/* The surface: github__get_issue allowed, github__delete_repo denied. */
static enum gw_exec_lookup lookup(void *ctx, const char *name)
{
    (void)ctx;
    if (strcmp(name, "github__get_issue") == 0 || strcmp(name, "demo__echo") == 0)
        return GW_EXEC_TOOL_ALLOWED;
    if (strcmp(name, "github__delete_repo") == 0)
        return GW_EXEC_TOOL_DENIED;
    return GW_EXEC_TOOL_ABSENT;
}

static const struct gw_exec_limits machine = {15000, 20, 65536};

/* Parses text; returns the category (NULL = accepted) and keeps the message. */
static const char *parse(const char *text, struct gw_exec_request *r, strbuf *msg)
{
    json_error_t je;
    json_t *a = json_loads(text, 0, &je);
    if (!a)
        fail_msg("bad test JSON: %s", je.text);
    sb_reset(msg);
    const char *cat = gw_exec_request_parse(a, &machine, lookup, NULL, r, msg);
    json_decref(a);
    return cat;
}

static void expect(const char *text, const char *cat, const char *needle)
{
    struct gw_exec_request r;
    strbuf msg = SB_INIT;
    const char *got = parse(text, &r, &msg);
    if (!got || strcmp(got, cat) != 0)
        fail_msg("%s: expected %s, got %s (%s)", text, cat, got ? got : "accepted", msg.buf);
    strbuf head = SB_INIT;
    sb_addf(&head, "Error [%s]: ", cat);
    assert_true(strncmp(msg.buf, head.buf, head.len) == 0);
    if (!strstr(msg.buf, needle))
        fail_msg("%s: message '%s' lacks '%s'", text, msg.buf, needle);
    assert_null(r.code);
    assert_int_equal(r.grants.n, 0);
    sb_release(&head);
    sb_release(&msg);
}

static void test_accepts_a_good_request(void **state)
{
    (void)state;
    struct gw_exec_request r;
    strbuf msg = SB_INIT;
    assert_null(parse("{\"code\":\"export default 1\",\"allowTools\":[\"github__get_issue\"],"
                      "\"input\":{\"n\":3},\"limits\":{\"timeoutMs\":500,\"maxCalls\":2}}",
                      &r, &msg));
    assert_string_equal(r.code, "export default 1");
    assert_int_equal(r.grants.n, 1);
    assert_string_equal(r.grants.v[0], "github__get_issue");
    assert_string_equal(r.input_json, "{\"n\":3}");
    assert_int_equal(r.limits.timeout_ms, 500);
    assert_int_equal(r.limits.max_calls, 2);
    assert_int_equal(r.limits.max_output_bytes, 65536); /* unset: the machine's */
    gw_exec_request_free(&r);
    /* input defaults to null */
    assert_null(parse("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"]}", &r, &msg));
    assert_string_equal(r.input_json, "null");
    gw_exec_request_free(&r);
    sb_release(&msg);
}

static void test_refuses_shape_attacks(void **state)
{
    (void)state;
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"network\":true}", "invalid-input",
           "accepts only code, allowTools, input and limits");
    expect("{\"allowTools\":[\"demo__echo\"]}", "invalid-input", "`code` must be a string");
    expect("{\"code\":\"\",\"allowTools\":[\"demo__echo\"]}", "invalid-input", "1 byte to 256 KiB");
    expect("{\"code\":7,\"allowTools\":[\"demo__echo\"]}", "invalid-input", "`code`");
    expect("{\"code\":\"x\"}", "invalid-input", "`allowTools` must be an array");
    expect("{\"code\":\"x\",\"allowTools\":[]}", "invalid-input", "1 to 100 tools");
    expect("{\"code\":\"x\",\"allowTools\":[\"github__*\"]}", "invalid-input",
           "wildcards are not allowed");
    expect("{\"code\":\"x\",\"allowTools\":[\"*\"]}", "invalid-input", "wildcards");
    expect("{\"code\":\"x\",\"allowTools\":[\"github__get_issu?\"]}", "invalid-input", "wildcards");
    expect("{\"code\":\"x\",\"allowTools\":[\"get_issue\"]}", "invalid-input",
           "exact server__tool name");
    expect("{\"code\":\"x\",\"allowTools\":[\"a__b\\u001b[2J\"]}", "invalid-input",
           "exact server__tool name");
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\",\"demo__echo\"]}", "invalid-input",
           "twice");
    expect("{\"code\":\"x\",\"allowTools\":[3]}", "invalid-input", "must be a string");
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"limits\":{\"memory\":1}}",
           "invalid-input", "accepts only timeoutMs");
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"limits\":[]}", "invalid-input",
           "`limits` must be an object");
}

static void test_refuses_unknown_and_denied_tools(void **state)
{
    (void)state;
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\",\"nope__tool\"]}", "unknown-tool",
           "nope__tool");
    expect("{\"code\":\"x\",\"allowTools\":[\"github__delete_repo\"]}", "policy-denied",
           "github__delete_repo, which policy denies");
}

static void test_limits_only_narrow(void **state)
{
    (void)state;
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"limits\":{\"timeoutMs\":15001}}",
           "invalid-input", "may only narrow");
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"limits\":{\"maxCalls\":0}}",
           "invalid-input", "positive integer");
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"limits\":{\"maxOutputBytes\":-1}}",
           "invalid-input", "positive integer");
    expect("{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"limits\":{\"timeoutMs\":1.5}}",
           "invalid-input", "positive integer");
}

static void test_size_caps(void **state)
{
    (void)state;
    size_t n = GW_EXEC_SOURCE_MAX + 1;
    char *big = xmalloc(n + 64);
    strcpy(big, "{\"code\":\"");
    memset(big + 9, 'a', n);
    strcpy(big + 9 + n, "\",\"allowTools\":[\"demo__echo\"]}");
    expect(big, "invalid-input", "1 byte to 256 KiB");
    /* exactly the cap is accepted */
    struct gw_exec_request r;
    strbuf msg = SB_INIT;
    strcpy(big + 9 + n - 1, "\",\"allowTools\":[\"demo__echo\"]}");
    assert_null(parse(big, &r, &msg));
    assert_int_equal(r.code_len, GW_EXEC_SOURCE_MAX);
    gw_exec_request_free(&r);
    free(big);
    size_t m = GW_EXEC_INPUT_MAX;
    big = xmalloc(m + 96);
    strcpy(big, "{\"code\":\"x\",\"allowTools\":[\"demo__echo\"],\"input\":\"");
    size_t at = strlen(big);
    memset(big + at, 'b', m);
    strcpy(big + at + m, "\"}");
    expect(big, "invalid-input", "`input` must be JSON of at most 1 MiB");
    free(big);
    sb_release(&msg);
}

static void test_machine_limits(void **state)
{
    (void)state;
    struct gw_exec_limits l;
    strbuf why = SB_INIT;
    assert_int_equal(gw_exec_machine_limits(0, 0, 0, &l, &why), 0);
    assert_int_equal(l.timeout_ms, 15000);
    assert_int_equal(l.max_calls, 20);
    assert_int_equal(l.max_output_bytes, 65536);
    assert_int_equal(gw_exec_machine_limits(30000, 40, 131072, &l, &why), 0);
    assert_int_equal(l.max_calls, 40);
    assert_int_equal(gw_exec_machine_limits(60001, 0, 0, &l, &why), -1);
    assert_non_null(strstr(why.buf, "timeout_ms = 60001 is outside 1..60000"));
    sb_reset(&why);
    assert_int_equal(gw_exec_machine_limits(0, 101, 0, &l, &why), -1);
    sb_reset(&why);
    assert_int_equal(gw_exec_machine_limits(0, 0, 262145, &l, &why), -1);
    sb_release(&why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_a_good_request),
        cmocka_unit_test(test_refuses_shape_attacks),
        cmocka_unit_test(test_refuses_unknown_and_denied_tools),
        cmocka_unit_test(test_limits_only_narrow),
        cmocka_unit_test(test_size_caps),
        cmocka_unit_test(test_machine_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
