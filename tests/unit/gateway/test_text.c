/* The gateway's pure helpers: the hostile-text filter, tool-name rule,
 * name splitting, schema cleaning, the result cap, search scoring and
 * rendering, the entity card. */
#include "testutil.h"

#include "base/xalloc.h"
#include "gateway/gw_int.h"

static char *clean(const char *s, int keep_nl)
{
    strbuf b = SB_INIT;
    gw_clean(s, strlen(s), keep_nl, &b);
    return sb_detach(&b, NULL);
}

static void test_clean(void **state)
{
    (void)state;
    char *s = clean("  a\x1b[31mred\x1b[0m \x1b]0;title\x07"
                    "b\tc\n\nd  ",
                    0);
    assert_string_equal(s, "ared b c d");
    free(s);
    s = clean("x\u202ey\u200bz\xef\xbb\xbf\xc2\x85w\x7f", 0);
    assert_string_equal(s, "xyzw");
    free(s);
    s = clean("tag\xf3\xa0\x80\x81s", 0); /* U+E0001 LANGUAGE TAG */
    assert_string_equal(s, "tags");
    free(s);
    s = clean("bad\xff\xfeutf8", 0);
    assert_string_equal(s, "badutf8");
    free(s);
    s = clean("line1\r\nline2\x1b[2J", 1);
    assert_string_equal(s, "line1\nline2");
    free(s);
    s = clean("unterminated \x1b[", 0);
    assert_string_equal(s, "unterminated");
    free(s);
    /* a long line is cut on a character boundary with an ellipsis */
    strbuf b = SB_INIT;
    gw_one_line("ééééé", 3, &b);
    assert_string_equal(b.buf, "ééé…");
    sb_release(&b);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(gw_tool_name_ok("get_status"));
    assert_true(gw_tool_name_ok("a.b-c_D9"));
    assert_false(gw_tool_name_ok(""));
    assert_false(gw_tool_name_ok("sp ace"));
    assert_false(gw_tool_name_ok("esc\x1b"));
    assert_false(gw_tool_name_ok("é"));
    char long_name[130];
    memset(long_name, 'x', 129);
    long_name[129] = '\0';
    assert_false(gw_tool_name_ok(long_name));
    long_name[128] = '\0';
    assert_true(gw_tool_name_ok(long_name));

    strbuf s = SB_INIT, t = SB_INIT;
    assert_true(gw_split("srv__tool__x", &s, &t));
    assert_string_equal(s.buf, "srv");
    assert_string_equal(t.buf, "tool__x"); /* the first "__" splits */
    assert_false(gw_split("agentstack_load", &s, &t));
    assert_false(gw_split("__x", &s, &t));
    assert_false(gw_split("x__", &s, &t));
    sb_release(&s);
    sb_release(&t);

    strbuf f = SB_INIT;
    gw_file_safe("../a/b c", &f);
    assert_string_equal(f.buf, "_._a_b_c");
    sb_release(&f);
}

static void test_schema_and_cap(void **state)
{
    (void)state;
    json_error_t je;
    json_t *in = json_loads("{\"type\":\"object\",\"title\":\"\\u001b[1mT\",\"properties\":"
                            "{\"q\":{\"type\":\"string\",\"description\":\"a\\nb\\u202e\"}}}",
                            0, &je);
    json_t *out = gw_schema_clean(in);
    assert_string_equal(json_string_value(json_object_get(out, "title")), "T");
    json_t *q = json_object_get(json_object_get(out, "properties"), "q");
    assert_string_equal(json_string_value(json_object_get(q, "description")), "a b");
    assert_string_equal(json_string_value(json_object_get(q, "type")), "string");
    json_decref(out);
    json_decref(in);
    out = gw_schema_clean(NULL);
    assert_string_equal(json_string_value(json_object_get(out, "type")), "object");
    json_decref(out);

    /* fits: the same object */
    json_t *r = gw_text_result("small", false);
    json_t *c = gw_result_cap(r, 1000);
    assert_ptr_equal(c, r);
    json_decref(c);
    json_decref(r);
    /* over: cut on a UTF-8 boundary, marker, isError kept */
    strbuf big = SB_INIT;
    for (int i = 0; i < 1000; i++)
        sb_adds(&big, "é");
    r = gw_text_result(big.buf, true);
    c = gw_result_cap(r, 600);
    const char *t = json_string_value(
        json_object_get(json_array_get(json_object_get(c, "content"), 0), "text"));
    assert_non_null(t);
    assert_non_null(strstr(t, "[agentstack: result truncated at "));
    assert_true(strlen(t) < 600);
    assert_true(json_is_true(json_object_get(c, "isError")));
    json_decref(c);
    json_decref(r);
    sb_release(&big);
}

static struct gw_tool mk(const char *server, const char *name, const char *desc)
{
    struct gw_tool t;
    t.server = xstrdup(server);
    t.name = xstrdup(name);
    t.full = xasprintf("%s__%s", server, name);
    t.desc = xasprintf("[via %s] %s", server, desc);
    t.schema = json_pack("{s:s}", "type", "object");
    return t;
}

static void rm(struct gw_tool *t)
{
    free(t->server);
    free(t->name);
    free(t->full);
    free(t->desc);
    json_decref(t->schema);
}

static void test_search(void **state)
{
    (void)state;
    struct gw_tool t[4] = {
        mk("gh", "get_issue", "Fetch one issue"), mk("gh", "issue", "An exact match"),
        mk("jira", "search", "Find tickets and issues"), mk("issue-tracker", "list", "Everything")};
    const struct gw_tool *v[4] = {&t[0], &t[1], &t[2], &t[3]};
    strvec tok = STRVEC_INIT;
    strvec_push(&tok, "issue");
    assert_int_equal(gw_search_score(&t[1], &tok), 10);    /* equals */
    assert_int_equal(gw_search_score(&t[0], &tok), 3 + 1); /* contains + description */
    assert_int_equal(gw_search_score(&t[2], &tok), 1);     /* description only */
    assert_int_equal(gw_search_score(&t[3], &tok), 2 + 1); /* server + prefixed desc */
    strvec_clear(&tok);

    strbuf out = SB_INIT;
    gw_search_render(v, 4, "ISSUE", 20, 0, &out);
    assert_non_null(strstr(out.buf, "4 proxied tool(s) for 'ISSUE':\n- `gh__issue`"));
    const char *a = strstr(out.buf, "gh__get_issue`"), *b = strstr(out.buf, "issue-tracker__list`");
    assert_true(a && b && a < b);
    assert_non_null(strstr(out.buf, "  inspect: tools_search entity=\"gh__issue:tool\""));
    sb_reset(&out);
    gw_search_render(v, 4, "", 2, 0, &out); /* empty query: all, alphabetical, limit */
    assert_non_null(strstr(out.buf, "2 proxied tool(s):\n- `gh__get_issue`"));
    assert_null(strstr(out.buf, "jira__search"));
    sb_reset(&out);
    gw_search_render(v, 4, "", 20, 10, &out); /* size cap: at least one card */
    assert_non_null(strstr(out.buf, "gh__get_issue"));
    assert_non_null(strstr(out.buf, "3 more not shown"));
    sb_reset(&out);
    gw_search_render(v, 4, "zzz", 20, 0, &out);
    assert_non_null(strstr(out.buf, "No proxied tools match 'zzz'."));
    sb_reset(&out);
    gw_search_render(v, 0, "", 20, 0, &out);
    assert_string_equal(out.buf, "This project proxies no upstream MCP tools.");
    sb_reset(&out);
    assert_int_equal(gw_entity_render(v, 4, "issue-tracker__list:tool", &out), 1);
    assert_non_null(strstr(out.buf, "# issue-tracker__list"));
    assert_non_null(strstr(out.buf, "codemode[\"issue-tracker\"].list(input);"));
    assert_non_null(strstr(out.buf, "Provenance"));
    sb_reset(&out);
    assert_int_equal(gw_entity_render(v, 4, "gh__issue", &out), 1);
    assert_non_null(strstr(out.buf, "codemode.gh.issue(input);"));
    assert_int_equal(gw_entity_render(v, 4, "gh__nope:tool", &out), 0);
    sb_release(&out);
    for (int i = 0; i < 4; i++)
        rm(&t[i]);
}

static void test_index(void **state)
{
    (void)state;
    char *names[60], *descs[60];
    for (int i = 0; i < 60; i++) {
        names[i] = xasprintf("%c%099d", 'a' + i % 26, i); /* 100-char names */
        descs[i] = xstrdup("A description long enough to be squeezed away");
    }
    strbuf out = SB_INIT;
    /* 40 × 100-char names: (4000 − 4000) / 40 = 0 → names only */
    gw_index_render((const char *const *)names, (const char *const *)descs, 40, "note.", &out);
    assert_non_null(strstr(out.buf, "Loadable now:\n- "));
    assert_null(strstr(out.buf, " — "));
    assert_non_null(strstr(out.buf, names[39]));
    assert_null(strstr(out.buf, "more"));
    assert_true(out.len > 40 * 100);
    sb_reset(&out);
    gw_index_render((const char *const *)names, (const char *const *)descs, 60, NULL, &out);
    assert_non_null(strstr(out.buf, "…and 10 more — call agentstack_list_loadable.\n"));
    assert_null(strstr(out.buf, names[50]));
    sb_reset(&out);
    /* short names: descriptions up to the budget, undescribed, bare */
    const char *n3[] = {"alpha", "beta", "gamma"};
    const char *d3[] = {"First line\nsecond line", "", NULL};
    gw_index_render(n3, d3, 3, NULL, &out);
    assert_string_equal(out.buf, "Loadable now:\n- alpha — First line\n"
                                 "- beta — (no description, loads by name)\n- gamma\n");
    sb_release(&out);
    for (int i = 0; i < 60; i++) {
        free(names[i]);
        free(descs[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),          cmocka_unit_test(test_names),
        cmocka_unit_test(test_schema_and_cap), cmocka_unit_test(test_search),
        cmocka_unit_test(test_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
