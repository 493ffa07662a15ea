/* Revision compatibility: content blocks and tool metadata per negotiated MCP revision. */
#include "testutil.h"

#include "mcp/mcp.h"

static json_t *J(const char *s)
{
    json_error_t je;
    json_t *v = json_loads(s, 0, &je);
    assert_non_null(v);
    return v;
}

static const char *all_blocks =
    "{\"content\":["
    "{\"type\":\"text\",\"text\":\"hello\"},"
    "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
    "{\"type\":\"audio\",\"data\":\"UklGRg==\",\"mimeType\":\"audio/wav\","
    "\"annotations\":{\"priority\":0.5}},"
    "{\"type\":\"resource_link\",\"uri\":\"test://static/resource/1\",\"name\":\"Resource 1\","
    "\"mimeType\":\"text/plain\",\"description\":\"line1\\nline2\"},"
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"test://x\",\"text\":\"t\"}}"
    "],\"structuredContent\":{\"a\":1},\"isError\":false}";

static const char *type_at(const json_t *r, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), i), "type"));
}

static const char *text_at(const json_t *r, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), i), "text"));
}

static void test_content_2024_11_05(void **state)
{
    (void)state;
    json_t *orig = J(all_blocks);
    json_t *shared = json_object_get(orig, "content");
    json_t *r = json_object();
    json_object_set(r, "content", shared); /* shared with the upstream reply, as in the gateway */
    assert_int_equal(mcp_result_for_version(r, "2024-11-05"), 2);
    assert_int_equal(json_array_size(json_object_get(r, "content")), 5);
    assert_string_equal(type_at(r, 0), "text");
    assert_string_equal(type_at(r, 1), "image");
    assert_string_equal(type_at(r, 2), "text");
    assert_non_null(strstr(text_at(r, 2), "[audio content dropped: MCP 2024-11-05"));
    assert_non_null(strstr(text_at(r, 2), "audio/wav"));
    assert_non_null(strstr(text_at(r, 2), "8 bytes of base64 data"));
    assert_non_null(
        json_object_get(json_array_get(json_object_get(r, "content"), 2), "annotations"));
    assert_string_equal(type_at(r, 3), "text");
    assert_non_null(strstr(text_at(r, 3), "[resource_link content dropped: MCP 2024-11-05"));
    assert_non_null(strstr(text_at(r, 3), "uri: test://static/resource/1"));
    assert_non_null(strstr(text_at(r, 3), "name: Resource 1"));
    assert_non_null(strstr(text_at(r, 3), "line1 line2")); /* one line */
    assert_string_equal(type_at(r, 4), "resource");
    /* the upstream's own array is untouched */
    assert_string_equal(type_at(orig, 2), "audio");
    assert_string_equal(type_at(orig, 3), "resource_link");
    json_decref(r);
    json_decref(orig);
}

static void test_content_2025_03_26(void **state)
{
    (void)state;
    json_t *r = J(all_blocks);
    assert_int_equal(mcp_result_for_version(r, "2025-03-26"), 1);
    assert_string_equal(type_at(r, 2), "audio");
    assert_string_equal(type_at(r, 3), "text");
    assert_non_null(strstr(text_at(r, 3), "MCP 2025-03-26 cannot carry it"));
    assert_non_null(json_object_get(r, "structuredContent")); /* other keys kept */
    json_decref(r);
}

static void test_content_newer_revisions_unchanged(void **state)
{
    (void)state;
    const char *vs[] = {"2025-06-18", "2025-11-25", "2026-07-28", NULL};
    for (size_t i = 0; vs[i]; i++) {
        json_t *r = J(all_blocks);
        json_t *want = J(all_blocks);
        assert_int_equal(mcp_result_for_version(r, vs[i]), 0);
        assert_true(json_equal(r, want));
        json_decref(r);
        json_decref(want);
    }
    /* no usable version: nothing is guessed away */
    json_t *r = J(all_blocks);
    assert_int_equal(mcp_result_for_version(r, NULL), 0);
    assert_int_equal(mcp_result_for_version(r, "bogus"), 0);
    assert_string_equal(type_at(r, 3), "resource_link");
    json_decref(r);
}

static void test_content_unknown_type_and_odd_shapes(void **state)
{
    (void)state;
    json_t *r = J("{\"content\":[{\"type\":\"hologram\",\"mimeType\":\"x/y\"},7,"
                  "{\"text\":\"no type\"}]}");
    assert_int_equal(mcp_result_for_version(r, "2025-11-25"), 1);
    assert_string_equal(type_at(r, 0), "text");
    assert_non_null(strstr(text_at(r, 0), "[hologram content dropped"));
    assert_true(json_is_integer(json_array_get(json_object_get(r, "content"), 1)));
    json_decref(r);
    json_t *n = J("{\"content\":\"not an array\"}");
    assert_int_equal(mcp_result_for_version(n, "2024-11-05"), 0);
    json_decref(n);
    /* a long, multi-byte name is cut to a bounded line of valid UTF-8 */
    strbuf big = SB_INIT;
    sb_adds(&big, "{\"content\":[{\"type\":\"resource_link\",\"uri\":\"u\",\"name\":\"");
    for (int i = 0; i < 1000; i++)
        sb_adds(&big, "é");
    sb_adds(&big, "\"}]}");
    json_t *b = J(big.buf);
    assert_int_equal(mcp_result_for_version(b, "2024-11-05"), 1);
    assert_non_null(text_at(b, 0));
    assert_true(strlen(text_at(b, 0)) < 700);
    assert_non_null(strstr(text_at(b, 0), "…"));
    json_decref(b);
    sb_release(&big);
}

/* Stand-ins for the gateway's cleaners: they mark what passed through them. */
static void line_mark(const char *s, size_t max, strbuf *out)
{
    sb_adds(out, "clean:");
    size_t n = strlen(s);
    sb_add(out, s, n < max ? n : max);
}

static json_t *schema_mark(const json_t *schema)
{
    json_t *c = json_deep_copy(schema);
    json_object_set_new(c, "x-cleaned", json_true());
    return c;
}

static const char *rich_tool =
    "{\"name\":\"t\",\"title\":\"Nice Title\",\"description\":\"d\","
    "\"inputSchema\":{\"type\":\"object\"},"
    "\"annotations\":{\"title\":\"Ann\",\"readOnlyHint\":true,\"destructiveHint\":\"yes\","
    "\"openWorldHint\":false,\"bogus\":1},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"number\"}}},"
    "\"icons\":[],\"execution\":{}}";

static void test_tool_extras_sanitized(void **state)
{
    (void)state;
    json_t *t = J(rich_tool);
    json_t *x = mcp_tool_extras(t, line_mark, 5, schema_mark);
    assert_string_equal(json_string_value(json_object_get(x, "title")), "clean:Nice ");
    json_t *a = json_object_get(x, "annotations");
    assert_string_equal(json_string_value(json_object_get(a, "title")), "clean:Ann");
    assert_true(json_is_true(json_object_get(a, "readOnlyHint")));
    assert_true(json_is_false(json_object_get(a, "openWorldHint")));
    assert_null(json_object_get(a, "destructiveHint")); /* not a boolean */
    assert_null(json_object_get(a, "bogus"));
    assert_true(json_is_true(json_object_get(json_object_get(x, "outputSchema"), "x-cleaned")));
    assert_int_equal(json_object_size(x), 3);
    json_decref(x);
    json_decref(t);
    /* malformed metadata is left out */
    t = J("{\"name\":\"t\",\"title\":5,\"annotations\":[],\"outputSchema\":{\"type\":\"array\"}}");
    x = mcp_tool_extras(t, line_mark, 50, schema_mark);
    assert_int_equal(json_object_size(x), 0);
    json_decref(x);
    json_decref(t);
}

static void test_tool_fields_per_revision(void **state)
{
    (void)state;
    json_t *t = J(rich_tool);
    json_t *x = mcp_tool_extras(t, line_mark, 50, schema_mark);
    static const struct {
        const char *v;
        int title, annotations, output;
    } cases[] = {
        {"2024-11-05", 0, 0, 0}, {"2025-03-26", 0, 1, 0}, {"2025-06-18", 1, 1, 1},
        {"2025-11-25", 1, 1, 1}, {"2026-07-28", 1, 1, 1}, {NULL, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *o = J("{\"name\":\"s__t\",\"description\":\"d\",\"inputSchema\":{}}");
        mcp_tool_for_version(o, x, cases[i].v);
        assert_int_equal(json_object_get(o, "title") != NULL, cases[i].title);
        assert_int_equal(json_object_get(o, "annotations") != NULL, cases[i].annotations);
        assert_int_equal(json_object_get(o, "outputSchema") != NULL, cases[i].output);
        assert_null(json_object_get(o, "icons"));
        assert_null(json_object_get(o, "execution"));
        json_decref(o);
    }
    json_decref(x);
    json_decref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_2024_11_05),
        cmocka_unit_test(test_content_2025_03_26),
        cmocka_unit_test(test_content_newer_revisions_unchanged),
        cmocka_unit_test(test_content_unknown_type_and_odd_shapes),
        cmocka_unit_test(test_tool_extras_sanitized),
        cmocka_unit_test(test_tool_fields_per_revision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
