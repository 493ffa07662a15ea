/* Adapter descriptors: the 17 built-ins, the embed matches adapters/<id>.yaml,
 * drop-ins, and every parser error carries file:line:col. */
#include "testutil.h"

#include <dirent.h>

#include "adapters/adapters.h"
#include "base/strbuf.h"

static const char *const ids[] = {"claude-code", "claude-desktop", "codex",     "copilot-cli",
                                  "cursor",      "gemini",         "opencode",  "pi",
                                  "vscode",      "windsurf",       "kiro",      "junie",
                                  "antigravity", "cline",          "cline-cli", "zed",
                                  "amp"};

static void test_builtins_load_in_table_order(void **state)
{
    (void)state;
    struct adp_registry r;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    assert_int_equal(r.v.n, 17);
    for (size_t i = 0; i < 17; i++) {
        assert_string_equal(r.v.v[i]->id, ids[i]);
        assert_string_equal(r.v.v[i]->source, "built-in");
        assert_true(r.v.v[i]->has_mcp);
    }
    adp_registry_free(&r);
}

static void test_builtin_facts(void **state)
{
    (void)state;
    struct adp_registry r;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    const struct adp_desc *d = adp_registry_find(&r, "codex");
    assert_non_null(d);
    assert_int_equal(d->config_format, ADP_FMT_TOML);
    assert_string_equal(d->mcp.location, "mcp_servers");
    assert_string_equal(d->mcp.f_headers, "http_headers");
    assert_string_equal(d->mcp.f_cwd, "cwd");
    assert_null(d->mcp.transport_key);
    assert_true(d->mcp.headers_as_subtable);
    assert_string_equal(d->mcp.name_charset, "ascii-word-dash");
    assert_string_equal(d->project_config, ".codex/config.toml");

    d = adp_registry_find(&r, "claude-desktop");
    assert_null(d->mcp.f_url);
    assert_null(d->detect_bin);
    assert_null(d->project_config);

    d = adp_registry_find(&r, "opencode");
    assert_true(d->mcp.command_array);
    assert_string_equal(d->mcp.f_env, "environment");
    assert_string_equal(d->mcp.transport_http, "remote");
    assert_string_equal(d->mcp.transport_stdio, "local");
    assert_int_equal(d->config_format, ADP_FMT_JSONC);

    d = adp_registry_find(&r, "gemini");
    assert_string_equal(d->mcp.f_url, "httpUrl");
    d = adp_registry_find(&r, "windsurf");
    assert_string_equal(d->mcp.f_url, "serverUrl");
    assert_null(d->mcp.f_cwd);
    d = adp_registry_find(&r, "vscode");
    assert_string_equal(d->mcp.location, "servers");
    d = adp_registry_find(&r, "copilot-cli");
    assert_string_equal(d->mcp.transport_stdio, "local");
    assert_string_equal(d->mcp.f_tools, "tools");
    assert_string_equal(d->project_config, ".github/mcp.json");
    d = adp_registry_find(&r, "cline");
    assert_string_equal(d->mcp.transport_http, "streamableHttp");
    assert_string_equal(d->mcp.f_cwd, "cwd");
    assert_true(d->mcp.cwd_absolute);
    assert_null(d->project_config);
    assert_false(adp_registry_find(&r, "cursor")->mcp.cwd_absolute);
    d = adp_registry_find(&r, "cline-cli");
    assert_string_equal(d->config_path, "~/.cline/data/settings/cline_mcp_settings.json");
    assert_string_equal(d->detect_bin, "cline");
    assert_string_equal(d->detect_config, "~/.cline");
    assert_int_equal(d->config_format, ADP_FMT_JSON);
    assert_string_equal(d->mcp.transport_http, "streamableHttp");
    assert_string_equal(d->mcp.f_cwd, "cwd");
    assert_true(d->mcp.cwd_absolute);
    assert_null(d->project_config);
    d = adp_registry_find(&r, "zed");
    assert_string_equal(d->mcp.location, "context_servers");
    assert_null(d->mcp.transport_key);
    assert_int_equal(d->config_format, ADP_FMT_JSONC);
    d = adp_registry_find(&r, "amp");
    assert_string_equal(d->mcp.location, "amp.mcpServers");
    assert_string_equal(d->project_config, ".amp/settings.json");
    d = adp_registry_find(&r, "pi");
    assert_string_equal(d->config_path, "~/.pi/agent/mcp.json");
    assert_string_equal(d->skills_dir, "~/.pi/agent/skills");
    d = adp_registry_find(&r, "claude-code");
    assert_string_equal(d->mcp.instructions_channel, "confirmed");
    assert_int_equal(d->headless_args.n, 3);
    assert_string_equal(d->headless_args.v[2], "{prompt}");
    assert_string_equal(d->hooks_key, "hooks");
    assert_true(d->settings_fields.n > 0);
    assert_null(adp_registry_find(&r, "nope"));

    adp_unknown_id_err(&r, "codx", &e);
    assert_non_null(strstr(e.msg, "unknown CLI 'codx' — did you mean 'codex'?"));
    adp_registry_free(&r);
}

/* The generated builtin_yaml.c holds exactly the bytes of adapters/<id>.yaml. */
static void test_embed_matches_yaml_files(void **state)
{
    (void)state;
    const char *src = getenv("AS_SRC");
    assert_non_null(src);
    size_t seen = 0;
    char dirp[4096];
    snprintf(dirp, sizeof dirp, "%s/adapters", src);
    DIR *dh = opendir(dirp);
    assert_non_null(dh);
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".yaml") != 0)
            continue;
        seen++;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dirp, de->d_name);
        size_t len;
        char *text = tu_read(p, &len);
        assert_non_null(text);
        int found = 0;
        for (size_t i = 0; i < adp_builtin_count; i++) {
            if (strcmp(adp_builtin_yaml[i].file, de->d_name) == 0) {
                found = 1;
                if (len != adp_builtin_yaml[i].len ||
                    memcmp(text, adp_builtin_yaml[i].text, len) != 0)
                    fail_msg("%s differs from the embedded copy: rebuild", de->d_name);
            }
        }
        if (!found)
            fail_msg("%s is not embedded: rebuild", de->d_name);
        free(text);
    }
    closedir(dh);
    assert_int_equal(seen, adp_builtin_count);
}

static void expect_err(const char *yaml, const char *needle, unsigned line, unsigned col)
{
    struct as_err e = AS_ERR_INIT;
    struct adp_desc *d = adp_desc_parse("x.yaml", yaml, strlen(yaml), &e);
    if (d)
        fail_msg("parsed but should fail: %s", yaml);
    if (!strstr(e.msg, needle))
        fail_msg("error '%s' lacks '%s'", e.msg, needle);
    assert_string_equal(e.path, "x.yaml");
    if (line && (e.line != line || e.col != col))
        fail_msg("error '%s' at %u:%u, expected %u:%u", e.msg, e.line, e.col, line, col);
}

static void test_parser_errors_have_positions(void **state)
{
    (void)state;
    expect_err("id: a\ndisplay: A\ndetct:\n  bin: a\n",
               "unknown key 'detct' in the descriptor "
               "(did you mean 'detect'?)",
               3, 1);
    expect_err("id: a\ndisplay: [A\n", "did not find expected", 0, 0);
    expect_err("display: A\n", "needs an 'id'", 1, 1);
    expect_err("id: Bad/Id\ndisplay: A\n", "must match", 1, 5);
    expect_err("id: a\n", "needs a 'display'", 1, 1);
    expect_err("id: a\ndisplay: A\nproject:\n  config: ../x.json\n", "project path", 4, 11);
    expect_err("id: a\ndisplay: A\nconfig:\n  path: relative.json\n", "user path", 4, 9);
    expect_err("id: a\ndisplay: A\nconfig:\n  path: ~/a.json\n  format: yaml\n",
               "must be json, jsonc or toml", 5, 11);
    expect_err("id: a\ndisplay: A\nconfig:\n  path: ~/a.json\nmcp:\n  fields:\n    url: u\n",
               "mcp.location is required", 0, 0);
    expect_err("id: a\ndisplay: A\nconfig:\n  path: ~/a.json\nmcp:\n  location: s\n"
               "  fields:\n    uri: u\n",
               "unknown key 'uri' in mcp.fields (did you mean 'url'?)", 8, 5);
    /* passthrough would render nothing different: refused, never accepted silently */
    expect_err("id: a\ndisplay: A\nconfig:\n  path: ~/a.json\nmcp:\n  location: s\n  secret_mode: "
               "passthrough\n",
               "passthrough is not supported", 7, 16);
    expect_err(
        "id: a\ndisplay: A\nconfig:\n  path: ~/a.json\nmcp:\n  location: s\n  secret_mode: env\n",
        "must be literal", 7, 16);
    expect_err("id: a\ndisplay: A\nid: b\n", "duplicate key 'id'", 3, 1);
    expect_err("id: a\ndisplay: A\n---\nid: b\n", "more than one YAML document", 0, 0);
    expect_err("", "empty descriptor", 1, 1);
    expect_err("- a\n- b\n", "must be a mapping", 1, 1);
    expect_err("id: a\ndisplay: A\ndetect:\n  bin: /usr/bin/a\n", "bare program name", 4, 8);
    expect_err("id: a\ndisplay: A\nskills:\n  dir: ~/s\n  strategy: hardlink\n", "symlink or copy",
               5, 13);
}

/* The guard block: where the host guard writes a CLI's pre-tool hook. The
 * built-ins hold the facts the guard used to hard-code, and a bad block is
 * refused at load with its position. */
static void test_guard_block(void **state)
{
    (void)state;
    struct adp_registry r;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    const struct adp_desc *d = adp_registry_find(&r, "claude-code");
    assert_true(d->has_guard);
    assert_string_equal(d->guard_file, "~/.claude/settings.json");
    assert_string_equal(d->guard_key, "hooks");
    assert_int_equal(d->guard_events.n, 1);
    assert_string_equal(d->guard_events.v[0], "PreToolUse");
    assert_int_equal(d->guard_proto, GUARD_P_CLAUDE);
    assert_int_equal(d->guard_shape, GUARD_W_CLAUDE);
    assert_int_equal(strvec_find(&d->guard_also_read_by, "vscode"), 0);
    d = adp_registry_find(&r, "windsurf");
    assert_int_equal(d->guard_events.n, 4);
    assert_int_equal(d->guard_shape, GUARD_W_FLAT);
    d = adp_registry_find(&r, "copilot-cli");
    assert_null(d->guard_key);
    assert_int_equal(d->guard_proto, GUARD_P_COPILOT);
    d = adp_registry_find(&r, "pi");
    assert_int_equal(d->guard_shape, GUARD_W_PLUGIN);
    assert_int_equal(d->guard_events.n, 0);
    size_t wired = 0;
    for (size_t i = 0; i < r.v.n; i++)
        wired += r.v.v[i]->has_guard;
    assert_int_equal(wired, 9);
    assert_false(adp_registry_find(&r, "kiro")->has_guard);
    adp_registry_free(&r);

#define G "id: a\ndisplay: A\nguard:\n"
    expect_err(G "  file: ~/h.json\n  evnts: [X]\n",
               "unknown key 'evnts' in guard (did you mean "
               "'events'?)",
               5, 3);
    expect_err(G "  file: ~/h.json\n  protocol: claude\n", "guard needs file, protocol and shape",
               4, 3);
    expect_err(G "  file: ~/h.json\n  protocol: klaude\n  shape: claude\n  events: [X]\n",
               "guard.protocol must be one of claude, codex", 5, 13);
    expect_err(G "  file: ~/h.json\n  protocol: claude\n  shape: round\n",
               "guard.shape must be claude, flat, copilot or plugin (got 'round')", 6, 10);
    expect_err(G "  file: /etc/h.json\n  protocol: claude\n  shape: claude\n  events: [X]\n",
               "guard.file must start with '~/'", 4, 9);
    expect_err(G "  file: ~/../h.json\n  protocol: claude\n  shape: claude\n  events: [X]\n",
               "user path", 4, 9);
    expect_err(G "  file: ~/h.js\n  key: hooks\n  protocol: claude\n  shape: plugin\n",
               "owns its whole file", 5, 8);
    expect_err(G "  file: ~/h.json\n  protocol: cursor\n  shape: flat\n",
               "needs the event(s) to hook", 4, 3);
    expect_err(G "  file: ~/h.json\n  protocol: cursor\n  shape: flat\n  events: [a, b, c, d, e]\n",
               "more than 4 events", 7, 11);
    expect_err(G "  file: ~/h.json\n  protocol: claude\n  shape: claude\n  events: [X]\n"
                 "  also_read_by: [Bad/Id]\n",
               "'Bad/Id' is not an adapter id", 8, 17);
#undef G
}

static void test_minimal_dropin_and_override(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    free(tu_write(dir, "home/.agentstack/adapters/mycli.yaml",
                  "id: mycli\ndisplay: My CLI\ndetect:\n  bin: mycli\n"));
    free(tu_write(dir, "home/.agentstack/adapters/cursor.yaml",
                  "id: cursor\ndisplay: Cursor (mine)\ndetect:\n  bin: cursor\n"));
    free(tu_write(dir, "home/.agentstack/adapters/broken.yaml", "id: broken\ndisplay: [\n"));
    free(tu_write(dir, "home/.agentstack/adapters/wrong.yaml", "id: other\ndisplay: X\n"));
    struct adp_registry r;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_registry_load(&r, true, &e), 0);
    assert_int_equal(r.v.n, 18);
    const struct adp_desc *d = adp_registry_find(&r, "mycli");
    assert_non_null(d);
    assert_string_equal(d->display, "My CLI");
    assert_string_equal(d->detect_bin, "mycli");
    assert_false(d->has_mcp);
    assert_non_null(strstr(d->source, "adapters/mycli.yaml"));
    d = adp_registry_find(&r, "cursor");
    assert_string_equal(d->display, "Cursor (mine)");
    assert_false(d->has_mcp);
    assert_int_equal(r.warnings.n, 2);
    assert_non_null(strstr(r.warnings.v[0], "broken.yaml:3:1: did not find expected node content"));
    assert_non_null(strstr(r.warnings.v[1], "does not match the file name"));
    adp_registry_free(&r);
    tu_rmtree(dir);
}

static void test_expand_and_detect(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    strbuf p = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    unsetenv("XDG_CONFIG_HOME");
    assert_int_equal(adp_expand_path("{config}/Code/User/mcp.json", NULL, &p, &e), 0);
    char want[4096];
    snprintf(want, sizeof want, "%s/home/.config/Code/User/mcp.json", dir);
    assert_string_equal(p.buf, want);
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    assert_int_equal(adp_expand_path("{config}/opencode/opencode.json", NULL, &p, &e), 0);
    assert_string_equal(p.buf, "/xdg/opencode/opencode.json");
    unsetenv("XDG_CONFIG_HOME");
    assert_int_equal(adp_expand_path(".mcp.json", "/proj", &p, &e), 0);
    assert_string_equal(p.buf, "/proj/.mcp.json");
    assert_int_equal(adp_expand_path(".mcp.json", NULL, &p, &e), -1);

    struct adp_registry r;
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    setenv("PATH", "/nonexistent", 1);
    const struct adp_desc *junie = adp_registry_find(&r, "junie");
    assert_false(adp_detected(junie, NULL));
    free(tu_write(dir, "home/.junie/mcp/mcp.json", "{}"));
    assert_true(adp_detected(junie, NULL));
    const struct adp_desc *cursor = adp_registry_find(&r, "cursor");
    assert_false(adp_detected(cursor, NULL));
    free(tu_write(dir, "proj/.cursor/mcp.json", "{}"));
    snprintf(want, sizeof want, "%s/proj", dir);
    assert_true(adp_detected(cursor, want));
    free(tu_write(dir, "bin/codex", "#!/bin/sh\n"));
    snprintf(want, sizeof want, "%s/bin/codex", dir);
    chmod(want, 0755);
    snprintf(want, sizeof want, "/nonexistent:%s/bin", dir);
    setenv("PATH", want, 1);
    assert_true(adp_detected(adp_registry_find(&r, "codex"), NULL));
    /* The Cline CLI is found by its ~/.cline directory before any MCP file. */
    const struct adp_desc *cline_cli = adp_registry_find(&r, "cline-cli");
    assert_false(adp_detected(cline_cli, NULL));
    free(tu_write(dir, "home/.cline/data/settings.json", "{}"));
    assert_true(adp_detected(cline_cli, NULL));
    adp_registry_free(&r);
    sb_release(&p);
    tu_rmtree(dir);
}

/* config.path_env: the first variable set to an absolute path moves the
 * file, a relative value is not followed, and a bad item is refused. */
static void test_config_path_env(void **state)
{
    (void)state;
    const char *const vars[] = {"CLINE_MCP_SETTINGS_PATH", "CLINE_DATA_DIR", "CLINE_DIR"};
    for (size_t i = 0; i < 3; i++)
        unsetenv(vars[i]);
    struct adp_registry r;
    struct as_err e = AS_ERR_INIT;
    setenv("CLINE_DIR", "/c/", 1);
    setenv("CLINE_DATA_DIR", "rel/data", 1);
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    assert_string_equal(adp_registry_find(&r, "cline-cli")->config_path,
                        "/c/data/settings/cline_mcp_settings.json");
    adp_registry_free(&r);
    setenv("CLINE_DATA_DIR", "/d", 1);
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    assert_string_equal(adp_registry_find(&r, "cline-cli")->config_path,
                        "/d/settings/cline_mcp_settings.json");
    adp_registry_free(&r);
    setenv("CLINE_MCP_SETTINGS_PATH", "/m/mcp.json", 1);
    assert_int_equal(adp_registry_load(&r, false, &e), 0);
    assert_string_equal(adp_registry_find(&r, "cline-cli")->config_path, "/m/mcp.json");
    assert_string_equal(adp_registry_find(&r, "cline")->config_path,
                        "{config}/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
                        "cline_mcp_settings.json");
    adp_registry_free(&r);
    for (size_t i = 0; i < 3; i++)
        unsetenv(vars[i]);

    const char *bad[] = {"  - lower\n", "  - X=/abs\n", "  - X=../up\n", "  - =x\n"};
    for (size_t i = 0; i < 4; i++) {
        char y[256];
        snprintf(y, sizeof y, "id: x\ndisplay: X\nconfig:\n  path: ~/.x.json\n  path_env:\n%s",
                 bad[i]);
        struct as_err e2 = AS_ERR_INIT;
        struct adp_desc *d = adp_desc_parse("x.yaml", y, strlen(y), &e2);
        assert_null(d);
        assert_non_null(strstr(e2.msg, "config.path_env items are NAME"));
    }
}

/* Hostile bytes never crash the parser: truncations and byte flips of every
 * built-in, plus alias bombs. */
static void test_hostile_inputs(void **state)
{
    (void)state;
    for (size_t i = 0; i < adp_builtin_count; i++) {
        const struct adp_builtin_src *b = &adp_builtin_yaml[i];
        char *buf = malloc(b->len + 1);
        for (size_t cut = 0; cut < b->len; cut += 7) {
            struct as_err e = AS_ERR_INIT;
            adp_desc_free(adp_desc_parse("t.yaml", b->text, cut, &e));
        }
        for (size_t k = 0; k < b->len; k += 5) {
            memcpy(buf, b->text, b->len);
            buf[k] = (char)(buf[k] ^ 0x5a);
            struct as_err e = AS_ERR_INIT;
            adp_desc_free(adp_desc_parse("t.yaml", buf, b->len, &e));
        }
        free(buf);
    }
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nid: a\ndisplay: *c\n";
    expect_err(bomb, "unknown key 'a'", 1, 1);
    expect_err("id: a\ndisplay: A\nheadless:\n  args: &x [*x]\n", "", 0, 0);
    char nul[] = "id: a\ndisplay: A\0\n";
    struct as_err e = AS_ERR_INIT;
    assert_null(adp_desc_parse("n.yaml", nul, sizeof nul - 1, &e));
    assert_non_null(strstr(e.msg, "NUL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_load_in_table_order),
        cmocka_unit_test(test_builtin_facts),
        cmocka_unit_test(test_embed_matches_yaml_files),
        cmocka_unit_test(test_parser_errors_have_positions),
        cmocka_unit_test(test_guard_block),
        cmocka_unit_test(test_minimal_dropin_and_override),
        cmocka_unit_test(test_expand_and_detect),
        cmocka_unit_test(test_config_path_env),
        cmocka_unit_test(test_hostile_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
