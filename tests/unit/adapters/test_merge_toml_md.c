/* TOML server tables through the format-preserving editor, and the
 * Markdown managed region. */
#include "testutil.h"

#include "adapters/merge.h"

static toml_value *tab(const char *src)
{
    struct as_err e = AS_ERR_INIT;
    toml_value *v = toml_parse("t.toml", src, strlen(src), &e);
    if (!v)
        fail_msg("bad test TOML: %s", e.msg);
    return v;
}

static char *tmerge(const char *text, const char *n1, const toml_value *t1, const char *rm,
                    struct as_err *err, int *rc)
{
    struct adp_toml_entry u[1] = {{0}};
    size_t nu = 0;
    if (n1)
        u[nu++] = (struct adp_toml_entry){n1, t1};
    const char *rms[1] = {rm};
    strbuf out = SB_INIT;
    *rc = adp_toml_merge("config.toml", text, strlen(text), "mcp_servers", u, nu, rms, rm ? 1 : 0,
                         &out, err);
    return sb_detach(&out, NULL);
}

static const char *SPEC_CODEX = "[mcp_servers.docs]\n"
                                "url = \"https://docs.example.test/mcp\"\n"
                                "\n"
                                "[mcp_servers.docs.http_headers]\n"
                                "X-Api-Key = \"k1\"\n"
                                "\n"
                                "[mcp_servers.notes]\n"
                                "command = \"uvx\"\n"
                                "args = [\"notes-mcp\", \"--ro\"]\n"
                                "\n"
                                "[mcp_servers.notes.env]\n"
                                "NOTES_TOKEN = \"t1\"\n";

static void test_new_file_matches_spec(void **state)
{
    (void)state;
    toml_value *docs = tab("url = \"https://docs.example.test/mcp\"\n"
                           "[http_headers]\nX-Api-Key = \"k1\"\n");
    toml_value *notes = tab("command = \"uvx\"\nargs = [\"notes-mcp\", \"--ro\"]\n"
                            "[env]\nNOTES_TOKEN = \"t1\"\n");
    struct adp_toml_entry u[2] = {{"docs", docs}, {"notes", notes}};
    strbuf out = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_toml_merge("c.toml", "", 0, "mcp_servers", u, 2, NULL, 0, &out, &e), 0);
    assert_string_equal(out.buf, SPEC_CODEX);
    /* Applying the same again changes nothing. */
    strbuf again = SB_INIT;
    assert_int_equal(
        adp_toml_merge("c.toml", out.buf, out.len, "mcp_servers", u, 2, NULL, 0, &again, &e), 0);
    assert_string_equal(again.buf, out.buf);
    assert_null(strstr(out.buf, "[mcp_servers]\n"));
    sb_release(&out);
    sb_release(&again);
    toml_free(docs);
    toml_free(notes);
}

/* Comments, model, [projects."/p"], a commented header — figma is
 * updated in place, docs is added, nothing else moves. */
static void test_codex_comments_kept(void **state)
{
    (void)state;
    const char *text = "# my codex config\n"
                       "model = \"gpt-5\"  # pinned\n"
                       "\n"
                       "[projects.\"/p\"]\n"
                       "trust_level = \"trusted\"\n"
                       "\n"
                       "# figma: design tokens\n"
                       "[mcp_servers.figma]\n"
                       "command = \"old\"\n"
                       "\n"
                       "# [mcp_servers.disabled]\n"
                       "# command = \"x\"\n";
    toml_value *figma = tab("command = \"npx\"\nargs = [\"figma-mcp\"]\n");
    toml_value *docs = tab("url = \"https://d.test/mcp\"\n");
    struct adp_toml_entry u[2] = {{"figma", figma}, {"docs", docs}};
    strbuf out = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(
        adp_toml_merge("c.toml", text, strlen(text), "mcp_servers", u, 2, NULL, 0, &out, &e), 0);
    /* Everything up to figma's header is byte-identical. */
    const char *head = strstr(text, "[mcp_servers.figma]");
    assert_memory_equal(out.buf, text, (size_t)(head - text));
    assert_non_null(strstr(out.buf, "# figma: design tokens\n[mcp_servers.figma]\n"));
    assert_non_null(strstr(out.buf, "command = \"npx\""));
    assert_null(strstr(out.buf, "command = \"old\""));
    assert_non_null(strstr(out.buf, "# [mcp_servers.disabled]\n# command = \"x\"\n"));
    assert_non_null(strstr(out.buf, "[mcp_servers.docs]\nurl = \"https://d.test/mcp\"\n"));
    assert_true(strstr(out.buf, "[mcp_servers.figma]") < strstr(out.buf, "[mcp_servers.docs]"));
    assert_null(strstr(out.buf, "[mcp_servers]\n"));
    /* The result parses and holds both. */
    toml_value *root = toml_parse("o", out.buf, out.len, &e);
    assert_non_null(root);
    assert_true(toml_equal(toml_get_path(root, "mcp_servers", "figma", NULL), figma));
    assert_true(toml_equal(toml_get_path(root, "mcp_servers", "docs", NULL), docs));
    assert_non_null(toml_get_path(root, "projects", "/p", NULL));
    toml_free(root);
    /* Idempotent. */
    strbuf again = SB_INIT;
    assert_int_equal(
        adp_toml_merge("c.toml", out.buf, out.len, "mcp_servers", u, 2, NULL, 0, &again, &e), 0);
    assert_string_equal(again.buf, out.buf);
    sb_release(&again);
    sb_release(&out);
    toml_free(figma);
    toml_free(docs);
}

static void test_remove_and_errors(void **state)
{
    (void)state;
    const char *text = "model = \"m\"\n\n[mcp_servers.a]\ncommand = \"a\"\n\n"
                       "[mcp_servers.b]\ncommand = \"b\"\n\n[mcp_servers.b.env]\nK = \"v\"\n\n"
                       "[other]\nx = 1\n";
    struct as_err e = AS_ERR_INIT;
    int rc;
    char *o = tmerge(text, NULL, NULL, "b", &e, &rc);
    assert_int_equal(rc, 0);
    assert_null(strstr(o, "mcp_servers.b"));
    assert_non_null(strstr(o, "[mcp_servers.a]\ncommand = \"a\"\n"));
    assert_non_null(strstr(o, "[other]\nx = 1\n"));
    assert_true(strncmp(o, "model = \"m\"\n", 12) == 0);
    free(o);
    o = tmerge(text, NULL, NULL, "zzz", &e, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(o, text);
    free(o);

    const char *bad = "model = \"m\"\n[mcp_servers.a\ncommand = 1\n";
    toml_value *t = tab("command = \"x\"\n");
    strbuf out = SB_INIT;
    o = tmerge(bad, "a", t, NULL, &e, &rc);
    assert_int_equal(rc, -1);
    assert_string_equal(o, "");
    assert_non_null(strstr(e.msg, "existing config is not valid TOML"));
    assert_int_equal(e.line, 2);
    free(o);
    o = tmerge("mcp_servers = 3\n", "a", t, NULL, &e, &rc);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(e.msg, "not a table of servers"));
    free(o);
    sb_release(&out);
    toml_free(t);
}

static char *md(const char *text, const char *content)
{
    strbuf out = SB_INIT;
    adp_md_region(text, strlen(text), content, &out);
    return sb_detach(&out, NULL);
}

static void test_markdown_region(void **state)
{
    (void)state;
    char *o = md("", "Be kind.\n\n");
    assert_string_equal(o, "<!-- agentstack:start -->\nBe kind.\n<!-- agentstack:end -->\n");
    free(o);
    o = md("# Mine\n\nhand text\n\n\n", "Be kind.");
    assert_string_equal(o, "# Mine\n\nhand text\n\n<!-- agentstack:start -->\nBe kind.\n"
                           "<!-- agentstack:end -->\n");
    char *o2 = md(o, "Be brief.");
    assert_string_equal(o2, "# Mine\n\nhand text\n\n<!-- agentstack:start -->\nBe brief.\n"
                            "<!-- agentstack:end -->\n");
    char *o3 = md(o2, "");
    assert_string_equal(o3, "# Mine\n\nhand text\n");
    free(o3);
    free(o2);
    /* Text after the region and a marker quoted mid-line are kept. */
    o2 = md("a `<!-- agentstack:start -->` b\n<!-- agentstack:start -->\nold\n"
            "<!-- agentstack:end -->\ntail\n",
            "new");
    assert_string_equal(o2, "a `<!-- agentstack:start -->` b\n<!-- agentstack:start -->\nnew\n"
                            "<!-- agentstack:end -->\ntail\n");
    free(o2);
    /* No content and no region: untouched (no newline added). */
    o2 = md("x", "");
    assert_string_equal(o2, "x");
    free(o2);
    free(o);
}

/* adp_md_marker_line reports exactly the lines the region parser takes for
 * a marker: whole lines, LF or CRLF, the last line with or without a
 * newline or with a bare CR; indented, trailing-blank or quoted ones are
 * text. */
static void test_markdown_marker_line(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t line;
        const char *which;
    } cases[] = {
        {"", 0, NULL},
        {"plain\ntext\n", 0, NULL},
        {"<!-- agentstack:end -->", 1, ADP_MD_END},
        {"a\n<!-- agentstack:end -->\nb\n", 2, ADP_MD_END},
        {"a\r\n<!-- agentstack:end -->\r\nb\r\n", 2, ADP_MD_END},
        {"a\nb\n<!-- agentstack:end -->", 3, ADP_MD_END},
        {"a\nb\n<!-- agentstack:end -->\r", 3, ADP_MD_END},
        {"a\n<!-- agentstack:start -->\n", 2, ADP_MD_START},
        {"a\r\n<!-- agentstack:start -->\r\n", 2, ADP_MD_START},
        {"<!-- agentstack:end -->\n<!-- agentstack:start -->\n", 1, ADP_MD_END},
        {"x\n<!-- agentstack:start -->\n<!-- agentstack:end -->\n", 2, ADP_MD_START},
        {" <!-- agentstack:end -->\n", 0, NULL},
        {"\t<!-- agentstack:start -->\n", 0, NULL},
        {"<!-- agentstack:end --> \n", 0, NULL},
        {"<!-- agentstack:end -->\r\r\n", 0, NULL},
        {"<!-- agentstack:end -->x\n", 0, NULL},
        {"a `<!-- agentstack:end -->` b\n", 0, NULL},
        {"<!--  agentstack:end -->\n", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *which = NULL;
        size_t at = adp_md_marker_line(cases[i].s, strlen(cases[i].s), &which);
        assert_int_equal(at, cases[i].line);
        if (cases[i].which)
            assert_string_equal(which, cases[i].which);
        /* An end-marker line the check misses would close a region early:
         * the parser must keep the text after it outside the region. */
        strbuf f = SB_INIT;
        sb_addf(&f, ADP_MD_START "\n%s\nTAIL\n" ADP_MD_END "\n", cases[i].s);
        char *o = md(f.buf, "new");
        bool escaped = strstr(o, "TAIL") != NULL;
        if (escaped)
            assert_int_not_equal(at, 0);
        free(o);
        sb_release(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_file_matches_spec), cmocka_unit_test(test_codex_comments_kept),
        cmocka_unit_test(test_remove_and_errors),     cmocka_unit_test(test_markdown_region),
        cmocka_unit_test(test_markdown_marker_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
