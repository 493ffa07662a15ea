/* JSON / JSONC merge: only our entries change, every other byte survives. */
#include "testutil.h"

#include <jansson.h>

#include "adapters/merge.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", s, e.text);
    return v;
}

static json_t *docs_entry(void)
{
    return J("{\"type\":\"http\",\"url\":\"https://docs.example.test/mcp\","
             "\"headers\":{\"X-Api-Key\":\"k1\"}}");
}

static json_t *notes_entry(void)
{
    return J("{\"type\":\"stdio\",\"command\":\"uvx\",\"args\":[\"notes-mcp\",\"--ro\"],"
             "\"env\":{\"NOTES_TOKEN\":\"t1\"}}");
}

/* Runs a merge that must succeed; returns the output (malloc'd). */
static char *merge(const char *text, bool jsonc, const char *loc, const char *n1, json_t *v1,
                   const char *n2, json_t *v2, const char *rm)
{
    struct adp_json_entry ups[2];
    size_t nu = 0;
    if (n1)
        ups[nu++] = (struct adp_json_entry){n1, v1};
    if (n2)
        ups[nu++] = (struct adp_json_entry){n2, v2};
    const char *rms[1] = {rm};
    struct adp_json_edit ed = {jsonc, loc, ups, nu, rms, rm ? 1 : 0};
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (adp_json_merge("t.json", text, strlen(text), &ed, &out, &err) != 0)
        fail_msg("merge failed: %s", err.msg);
    return sb_detach(&out, NULL);
}

static void assert_valid_json(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, 0, &e);
    if (!v)
        fail_msg("output is not valid JSON (%s at %d:%d):\n%s", e.text, e.line, e.column, s);
    json_decref(v);
}

static const char *SPEC_CLAUDE =
    "{\n"
    "  \"mcpServers\": {\n"
    "    \"docs\": {\n"
    "      \"type\": \"http\",\n"
    "      \"url\": \"https://docs.example.test/mcp\",\n"
    "      \"headers\": {\n"
    "        \"X-Api-Key\": \"k1\"\n"
    "      }\n"
    "    },\n"
    "    \"notes\": {\n"
    "      \"type\": \"stdio\",\n"
    "      \"command\": \"uvx\",\n"
    "      \"args\": [\n"
    "        \"notes-mcp\",\n"
    "        \"--ro\"\n"
    "      ],\n"
    "      \"env\": {\n"
    "        \"NOTES_TOKEN\": \"t1\"\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* §8.1 / §8.3: absent, empty, blank or {} → the §2 document exactly. */
static void test_fresh_documents(void **state)
{
    (void)state;
    const char *starts[] = {"", "{}", "  \n", "{ }\n"};
    for (size_t i = 0; i < 4; i++) {
        json_t *d = docs_entry(), *n = notes_entry();
        char *o = merge(starts[i], false, "mcpServers", "docs", d, "notes", n, NULL);
        assert_string_equal(o, SPEC_CLAUDE);
        free(o);
        json_decref(d);
        json_decref(n);
    }
}

/* §8.2: big app-owned file; only the section's value changes. */
static void test_claude_json_preserved(void **state)
{
    (void)state;
    const char *pre = "{\n  \"numStartups\": 42,\n  \"tipsHistory\": {\"x\": 0.9402052562189797},\n"
                      "  \"mcpServers\": ";
    const char *sec = "{\n    \"mine\": {\"command\": \"my-mcp\",   \"args\": []}\n  }";
    const char *post = ",\n  \"userID\": \"abc\",\n  \"big\": 1e400\n}";
    char *text = NULL;
    assert_true(asprintf(&text, "%s%s%s", pre, sec, post) > 0);
    json_t *d = docs_entry();
    char *o = merge(text, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    /* Everything outside the section value is byte-identical. */
    assert_memory_equal(o, pre, strlen(pre));
    assert_string_equal(o + strlen(o) - strlen(post), post);
    /* mine keeps its slot and its exact bytes; docs follows. */
    const char *mine = strstr(o, "\"mine\": {\"command\": \"my-mcp\",   \"args\": []},");
    const char *docs = strstr(o, "\"docs\": {");
    assert_non_null(mine);
    assert_non_null(docs);
    assert_true(mine < docs);
    /* Re-applying is a no-op. */
    char *o2 = merge(o, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_string_equal(o2, o);
    json_decref(d);
    free(text);
    free(o);
    free(o2);
}

static void test_section_inserted_after_brace(void **state)
{
    (void)state;
    json_t *d = docs_entry();
    char *o = merge("{\n  \"theme\": \"dark\"\n}", false, "mcpServers", "docs", d, NULL, NULL,
                    NULL);
    assert_true(strncmp(o, "{\n  \"mcpServers\": {\n    \"docs\": {\n", 33) == 0);
    assert_non_null(strstr(o, "  },\n  \"theme\": \"dark\"\n}"));
    assert_int_equal(o[strlen(o) - 1], '}'); /* no trailing newline added */
    assert_valid_json(o);
    free(o);
    /* Four-space files get four-space insertions. */
    o = merge("{\n    \"a\": 1\n}\n", false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_true(strncmp(o, "{\n    \"mcpServers\": {\n        \"docs\": {\n", 40) == 0);
    assert_valid_json(o);
    free(o);
    json_decref(d);
}

static void test_replace_only_changed_entry(void **state)
{
    (void)state;
    const char *text = "{\"mcpServers\": {\n  \"a\": {\"command\":\"x\"},\n"
                       "  \"docs\": {\"url\": \"old\"},\n  \"z\": {\"command\":\"y\"}\n}}";
    json_t *d = docs_entry();
    char *o = merge(text, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_non_null(strstr(o, "  \"a\": {\"command\":\"x\"},\n  \"docs\": {\n    \"type\""));
    assert_non_null(strstr(o, "  },\n  \"z\": {\"command\":\"y\"}\n}}"));
    assert_null(strstr(o, "old"));
    assert_valid_json(o);
    free(o);
    /* Equal as JSON but spelled differently: untouched. */
    const char *same = "{\"mcpServers\":{\"docs\":{\"type\":\"http\",\"url\":"
                       "\"https://docs.example.test/mcp\",\"headers\":{\"X-Api-Key\":\"k1\"}}}}";
    o = merge(same, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_string_equal(o, same);
    free(o);
    json_decref(d);
}

static void test_remove_entries(void **state)
{
    (void)state;
    const char *text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                       "    \"b\": {\"command\": \"y\"},\n    \"c\": {\"command\": \"z\"}\n  },\n"
                       "  \"k\": 1\n}\n";
    char *o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "b");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                           "    \"c\": {\"command\": \"z\"}\n  },\n  \"k\": 1\n}\n");
    free(o);
    o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "c");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                           "    \"b\": {\"command\": \"y\"}\n  },\n  \"k\": 1\n}\n");
    free(o);
    o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "a");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"y\"},\n"
                           "    \"c\": {\"command\": \"z\"}\n  },\n  \"k\": 1\n}\n");
    free(o);
    o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "nope");
    assert_string_equal(o, text);
    free(o);
    /* Remove the last one and add a new one in the same edit. */
    json_t *d = J("{\"url\":\"u\"}");
    o = merge(text, false, "mcpServers", "d", d, NULL, NULL, "c");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                           "    \"b\": {\"command\": \"y\"},\n    \"d\": {\n      \"url\": \"u\"\n"
                           "    }\n  },\n  \"k\": 1\n}\n");
    free(o);
    json_decref(d);
    /* Removing the only entry leaves an empty section. */
    o = merge("{\"mcpServers\": {\"a\": {}}, \"k\": 1}", false, "mcpServers", NULL, NULL, NULL,
              NULL, "a");
    assert_string_equal(o, "{\"mcpServers\": {}, \"k\": 1}");
    free(o);
}

static const char *JSONC_TEXT =
    "// VS Code MCP servers\n"
    "{\n"
    "  \"servers\": {\n"
    "    // my hand-written server\n"
    "    \"mine\": { \"command\": \"x\", }, // keep me\n"
    "    /* block */ \"old\": {\"command\": \"y\"},\n"
    "  },\n"
    "  \"inputs\": [1, 2,],\n"
    "}\n";

static void test_jsonc_comments_survive(void **state)
{
    (void)state;
    json_t *d = docs_entry();
    char *o = merge(JSONC_TEXT, true, "servers", "docs", d, NULL, NULL, "old");
    assert_true(strncmp(o, "// VS Code MCP servers\n{\n  \"servers\": {\n"
                           "    // my hand-written server\n"
                           "    \"mine\": { \"command\": \"x\", }, // keep me\n", 103) == 0);
    assert_null(strstr(o, "\"old\""));
    assert_non_null(strstr(o, "    \"docs\": {\n      \"type\": \"http\","));
    assert_non_null(strstr(o, "  },\n  \"inputs\": [1, 2,],\n}\n"));
    json_t *sec = NULL;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(adp_json_read("t.json", o, strlen(o), true, "servers", &sec, &err), 0);
    assert_non_null(sec);
    assert_int_equal(json_object_size(sec), 2);
    assert_true(json_equal(json_object_get(sec, "docs"), d));
    json_decref(sec);
    /* Idempotent. */
    char *o2 = merge(o, true, "servers", "docs", d, NULL, NULL, "old");
    assert_string_equal(o2, o);
    free(o2);
    free(o);
    /* Comments are refused in strict JSON. */
    strbuf out = SB_INIT;
    struct adp_json_entry up = {"docs", d};
    struct adp_json_edit ed = {false, "servers", &up, 1, NULL, 0};
    assert_int_equal(adp_json_merge("v.json", JSONC_TEXT, strlen(JSONC_TEXT), &ed, &out, &err),
                     -1);
    assert_non_null(strstr(err.msg, "existing config is not valid JSON"));
    assert_int_equal(err.line, 1);
    assert_int_equal(out.len, 0);
    json_decref(d);
}

static void test_malformed_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {"{\"a\": 1,}", "{\"a\" 1}", "[1,2]", "{\"a\": tru}", "{\"a\": 01}",
                         "{\"a\": \"x\ny\"}", "{\"a\": 1} {}", "{\"a\": {\"b\": [}}", "{",
                         "\"str\"", "{\"a\": 1e}", "{\"a\": \"\\q\"}", "{\"a\":1 /* x */}"};
    json_t *d = docs_entry();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct adp_json_entry up = {"docs", d};
        struct adp_json_edit ed = {false, "mcpServers", &up, 1, NULL, 0};
        strbuf out = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (adp_json_merge("m.json", bad[i], strlen(bad[i]), &ed, &out, &err) != -1)
            fail_msg("accepted malformed %s", bad[i]);
        assert_non_null(strstr(err.msg, "existing config is not valid JSON"));
        assert_string_equal(err.path, "m.json");
        assert_true(err.line >= 1);
        assert_int_equal(out.len, 0);
    }
    /* Deep nesting is an error, not a stack overflow. */
    strbuf deep = SB_INIT;
    sb_adds(&deep, "{\"a\": ");
    for (int i = 0; i < 100000; i++)
        sb_addc(&deep, '[');
    struct adp_json_entry up = {"docs", d};
    struct adp_json_edit ed = {false, "mcpServers", &up, 1, NULL, 0};
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(adp_json_merge("d.json", deep.buf, deep.len, &ed, &out, &err), -1);
    assert_non_null(strstr(err.msg, "nested deeper"));
    sb_release(&deep);
    /* A duplicated section key is ambiguous. */
    const char *dup = "{\"mcpServers\": {}, \"mcpServers\": {}}";
    assert_int_equal(adp_json_merge("d.json", dup, strlen(dup), &ed, &out, &err), -1);
    assert_non_null(strstr(err.msg, "appears twice"));
    json_decref(d);
}

static void test_crlf_bom_and_no_trailing_newline(void **state)
{
    (void)state;
    const char *text = "\xEF\xBB\xBF{\r\n  \"mcpServers\": {\r\n    \"a\": {}\r\n  }\r\n}";
    json_t *d = J("{\"url\":\"u\"}");
    char *o = merge(text, false, "mcpServers", "d", d, NULL, NULL, NULL);
    assert_string_equal(o, "\xEF\xBB\xBF{\r\n  \"mcpServers\": {\r\n    \"a\": {},\r\n"
                           "    \"d\": {\r\n      \"url\": \"u\"\r\n    }\r\n  }\r\n}");
    free(o);
    json_decref(d);
}

static void test_root_variant_settings(void **state)
{
    (void)state;
    const char *text = "{\n  \"theme\": \"dark\",\n  \"model\": \"old\",\n  \"x\": [1]\n}\n";
    json_t *m = J("\"opus\"");
    json_t *e = J("\"high\"");
    char *o = merge(text, false, NULL, "model", m, "effortLevel", e, NULL);
    assert_string_equal(o, "{\n  \"effortLevel\": \"high\",\n  \"theme\": \"dark\",\n"
                           "  \"model\": \"opus\",\n  \"x\": [1]\n}\n");
    char *o2 = merge(o, false, NULL, NULL, NULL, NULL, NULL, "effortLevel");
    assert_string_equal(o2, "{\n  \"theme\": \"dark\",\n  \"model\": \"opus\",\n  \"x\": [1]\n}\n");
    free(o2);
    o2 = merge(o, false, NULL, NULL, NULL, NULL, NULL, "x");
    assert_string_equal(o2, "{\n  \"effortLevel\": \"high\",\n  \"theme\": \"dark\",\n"
                            "  \"model\": \"opus\"\n}\n");
    free(o2);
    free(o);
    o = merge("", false, NULL, "model", m, NULL, NULL, NULL);
    assert_string_equal(o, "{\n  \"model\": \"opus\"\n}\n");
    free(o);
    json_decref(m);
    json_decref(e);
}

/* A 10 MB file: unrelated bytes kept exactly. */
static void test_large_file(void **state)
{
    (void)state;
    strbuf big = SB_INIT;
    sb_adds(&big, "{\n  \"projects\": {\n");
    for (int i = 0; i < 160000; i++)
        sb_addf(&big, "    \"/p/%d\": {\"allowedTools\": [], \"history\": [\"x %d\", 1.50]},\n", i,
                i);
    sb_adds(&big, "    \"last\": {}\n  },\n  \"mcpServers\": {}\n}\n");
    assert_true(big.len > 10u * 1000 * 1000);
    json_t *d = docs_entry();
    char *o = merge(big.buf, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    size_t pre = (size_t)(strstr(big.buf, "\"mcpServers\": {}") - big.buf) + 15;
    assert_memory_equal(o, big.buf, pre);
    assert_non_null(strstr(o + pre, "\"docs\""));
    assert_string_equal(o + strlen(o) - 3, "\n}\n");
    free(o);
    json_decref(d);
    sb_release(&big);
}

static void test_emit_rules(void **state)
{
    (void)state;
    json_t *v = J("{\"s\":\"a\\\"b\\\\c\\n\\u0001é/\",\"e\":{},\"a\":[],\"r\":0.1,\"i\":-3,"
                  "\"f\":2.0,\"n\":null,\"t\":true}");
    strbuf o = SB_INIT;
    adp_json_emit(v, "", "  ", "\n", &o);
    assert_string_equal(o.buf, "{\n  \"s\": \"a\\\"b\\\\c\\n\\u0001é/\",\n  \"e\": {},\n"
                               "  \"a\": [],\n  \"r\": 0.1,\n  \"i\": -3,\n  \"f\": 2.0,\n"
                               "  \"n\": null,\n  \"t\": true\n}");
    sb_release(&o);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_documents),
        cmocka_unit_test(test_claude_json_preserved),
        cmocka_unit_test(test_section_inserted_after_brace),
        cmocka_unit_test(test_replace_only_changed_entry),
        cmocka_unit_test(test_remove_entries),
        cmocka_unit_test(test_jsonc_comments_survive),
        cmocka_unit_test(test_malformed_is_refused),
        cmocka_unit_test(test_crlf_bom_and_no_trailing_newline),
        cmocka_unit_test(test_root_variant_settings),
        cmocka_unit_test(test_large_file),
        cmocka_unit_test(test_emit_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
