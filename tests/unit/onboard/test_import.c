/* Reading the CLIs' native configs back (the inverse of rendering, docs/adapters.md): each
 * format and shape, the bridge and .app exclusions, malformed input, the
 * cwd wrap undone, and de-duplication across CLIs with conflicts and
 * origins; the source files are never changed. */
#include "testutil.h"

#include "adapters/adapters.h"
#include "onboard/onboard.h"

static struct adp_registry reg;

static int setup(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    return adp_registry_load(&reg, false, &err);
}

static int teardown(void **state)
{
    (void)state;
    adp_registry_free(&reg);
    return 0;
}

static int read_one(const char *id, enum adp_format fmt, const char *text, struct onb_import *im,
                    bool itm)
{
    struct as_err err = AS_ERR_INIT;
    const struct adp_desc *d = adp_registry_find(&reg, id);
    assert_non_null(d);
    return onb_read_servers(d, fmt, "/x/config", text, strlen(text), id, itm, im, &err);
}

static const struct onb_server *srv(const struct onb_import *im, const char *name)
{
    for (size_t i = 0; i < im->servers.n; i++)
        if (strcmp(im->servers.v[i].name, name) == 0)
            return &im->servers.v[i];
    return NULL;
}

static void test_claude_json(void **state)
{
    (void)state;
    struct onb_import im = {0};
    const char *t = "{\"numStartups\": 3, \"mcpServers\": {"
                    "\"gh\": {\"type\": \"http\", \"url\": \"https://h/mcp\", \"headers\": "
                    "{\"A\": \"b\"}, \"oauth\": {\"x\": [1, 2.5, true]}},"
                    "\"fs\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", "
                    "\"pkg\"], \"env\": {\"N\": 3}},"
                    "\"agentstack\": {\"command\": \"agentstack\", \"args\": [\"mcp\"]},"
                    "\"bridge2\": {\"command\": \"/opt/bin/agentstack\", \"args\": [\"mcp\", "
                    "\"--auto-project\"]},"
                    "\"app\": {\"command\": \"/Applications/X.app/Contents/MacOS/x\"},"
                    "\"empty\": {\"type\": \"stdio\"},"
                    "\"nul\": {\"command\": \"run\", \"note\": null}}}";
    assert_int_equal(read_one("claude-code", ADP_FMT_JSON, t, &im, false), 0);
    const struct onb_server *gh = srv(&im, "gh");
    assert_non_null(gh);
    assert_true(gh->http);
    assert_string_equal(gh->url, "https://h/mcp");
    assert_string_equal(gh->hdr_keys.v[0], "A");
    const toml_value *ex = toml_get_path(gh->extra, "claude-code", "oauth", "x", NULL);
    assert_non_null(ex);
    assert_int_equal(toml_len(ex), 3);
    assert_null(toml_get(toml_get(gh->extra, "claude-code"), "type")); /* the tag is mapped */
    const struct onb_server *fs = srv(&im, "fs");
    assert_false(fs->http);
    assert_string_equal(fs->args.v[1], "pkg");
    assert_string_equal(fs->env_vals.v[0], "3");
    assert_null(srv(&im, "agentstack"));
    assert_null(srv(&im, "bridge2"));
    assert_null(srv(&im, "app"));
    assert_null(srv(&im, "empty"));
    assert_non_null(srv(&im, "nul")); /* null keys dropped with a note, entry kept */
    bool noted = false;
    for (size_t i = 0; i < im.notes.n; i++)
        noted |= strstr(im.notes.v[i], "application bundle") != NULL;
    assert_true(noted);
    onb_import_free(&im);
    struct onb_import im2 = {0};
    assert_int_equal(read_one("claude-code", ADP_FMT_JSON, t, &im2, true), 0);
    assert_non_null(srv(&im2, "app")); /* --include-tool-managed */
    onb_import_free(&im2);
}

static void test_opencode_jsonc_and_windsurf(void **state)
{
    (void)state;
    struct onb_import im = {0};
    const char *t = "{\n // comment\n \"mcp\": {\"n\": {\"type\": \"local\", \"command\": "
                    "[\"node\", \"s.js\", \"-v\"], \"environment\": {\"T\": \"v\"}, "
                    "\"enabled\": true,},\n \"r\": {\"type\": \"remote\", "
                    "\"url\": \"https://r\"}},}";
    assert_int_equal(read_one("opencode", ADP_FMT_JSONC, t, &im, false), 0);
    const struct onb_server *n = srv(&im, "n");
    assert_string_equal(n->command, "node");
    assert_int_equal(n->args.n, 2);
    assert_string_equal(n->env_keys.v[0], "T");
    assert_true(srv(&im, "r")->http);
    onb_import_free(&im);
    struct onb_import w = {0};
    assert_int_equal(read_one("windsurf", ADP_FMT_JSON,
                              "{\"mcpServers\": {\"s\": {\"serverUrl\": \"https://s\"}}}", &w,
                              false),
                     0);
    assert_string_equal(srv(&w, "s")->url, "https://s");
    onb_import_free(&w);
}

static void test_codex_toml(void **state)
{
    (void)state;
    struct onb_import im = {0};
    const char *t = "# c\nmodel = \"o3\"\n[mcp_servers.docs]\nurl = \"https://d\"\n"
                    "[mcp_servers.docs.http_headers]\nAuthorization = \"Bearer x\"\n"
                    "[mcp_servers.t]\ncommand = \"npx\"\nargs = [\"a\"]\ncwd = \"/w\"\n"
                    "startup_timeout_sec = 20\n[mcp_servers.t.env]\nK = \"v\"\n";
    assert_int_equal(read_one("codex", ADP_FMT_TOML, t, &im, false), 0);
    const struct onb_server *d = srv(&im, "docs");
    assert_true(d->http);
    assert_string_equal(d->hdr_vals.v[0], "Bearer x");
    const struct onb_server *s = srv(&im, "t");
    assert_string_equal(s->cwd, "/w");
    assert_string_equal(s->env_vals.v[0], "v");
    const toml_value *x = toml_get_path(s->extra, "codex", "startup_timeout_sec", NULL);
    assert_non_null(x);
    assert_int_equal(x->u.i, 20);
    onb_import_free(&im);
}

static void test_malformed(void **state)
{
    (void)state;
    struct onb_import im = {0};
    struct as_err err = AS_ERR_INIT;
    const struct adp_desc *d = adp_registry_find(&reg, "cursor");
    const char *bad = "{\"mcpServers\": {\"a\": }";
    assert_int_equal(
        onb_read_servers(d, ADP_FMT_JSON, "/x/mcp.json", bad, strlen(bad), "c", false, &im, &err),
        -1);
    assert_true(err.line > 0 || strstr(err.msg, "JSON") != NULL); /* located, never a crash */
    as_err_clear(&err);
    const char *badt = "[mcp_servers.x\n";
    assert_int_equal(onb_read_servers(adp_registry_find(&reg, "codex"), ADP_FMT_TOML, "/x/c.toml",
                                      badt, strlen(badt), "c", false, &im, &err),
                     -1);
    assert_int_equal(im.servers.n, 0);
    onb_import_free(&im);
}

static void test_unwrap(void **state)
{
    (void)state;
    struct onb_server s = {0};
    s.name = strdup("w");
    s.command = strdup("sh");
    strvec_push(&s.args, "-c");
    strvec_push(&s.args, "cd '/srv/a b' && exec 'npx' '-y' 'it'\\''s'");
    assert_true(onb_unwrap_cwd(&s));
    assert_string_equal(s.command, "npx");
    assert_string_equal(s.cwd, "/srv/a b");
    assert_int_equal(s.args.n, 2);
    assert_string_equal(s.args.v[1], "it's");
    assert_false(onb_unwrap_cwd(&s)); /* not a wrap any more */
    onb_server_free(&s);
    struct onb_server u = {0};
    u.name = strdup("u");
    u.command = strdup("sh");
    strvec_push(&u.args, "-c");
    strvec_push(&u.args, "cd '/x' && rm -rf /");
    assert_false(onb_unwrap_cwd(&u)); /* a user's own script stays as written */
    assert_string_equal(u.command, "sh");
    onb_server_free(&u);
}

static void test_dedup_across_clis(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    const char *fs = "\"fs\": {\"command\": \"npx\", \"args\": [\"a\"]}";
    char buf[512];
    snprintf(buf, sizeof buf, "{\"mcpServers\": {%s, \"gh\": {\"url\": \"https://1\"}}}", fs);
    char *c1 = tu_write(tmp, "home/.cursor/mcp.json", buf);
    snprintf(buf, sizeof buf,
             "{\"mcpServers\": {%s, \"gh\": {\"httpUrl\": \"https://2\"}, "
             "\"only\": {\"command\": \"x\", \"trust\": true}}}",
             fs);
    char *c2 = tu_write(tmp, "home/.gemini/settings.json", buf);
    char *before1 = tu_read(c1, NULL), *before2 = tu_read(c2, NULL);
    setenv("PATH", "/nonexistent", 1);
    struct onb_import im = {0};
    struct onb_import_opts o = {0};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(onb_import(&reg, &o, &im, &err), 0);
    assert_int_equal(im.detected_ids.n, 2);
    assert_string_equal(im.detected_ids.v[0], "cursor");
    assert_int_equal(im.servers.n, 3);
    const struct onb_server *f = srv(&im, "fs");
    assert_int_equal(f->origins.n, 2);
    assert_non_null(strstr(f->origins.v[0], "Cursor (~/.cursor/mcp.json)"));
    assert_string_equal(srv(&im, "gh")->url, "https://1"); /* first wins */
    assert_int_equal(im.conflicts.n, 1);
    assert_non_null(strstr(im.conflicts.v[0], "'gh' in Gemini CLI"));
    /* the sources are untouched */
    char *after1 = tu_read(c1, NULL), *after2 = tu_read(c2, NULL);
    assert_string_equal(before1, after1);
    assert_string_equal(before2, after2);
    free(before1);
    free(before2);
    free(after1);
    free(after2);
    onb_import_free(&im);
    /* no_merge keeps one entry per file */
    struct onb_import im2 = {0};
    o.no_merge = true;
    assert_int_equal(onb_import(&reg, &o, &im2, &err), 0);
    assert_int_equal(im2.servers.n, 5);
    onb_import_free(&im2);
    free(c1);
    free(c2);
    tu_rmtree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claude_json), cmocka_unit_test(test_opencode_jsonc_and_windsurf),
        cmocka_unit_test(test_codex_toml),  cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_unwrap),      cmocka_unit_test(test_dedup_across_clis),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
