/* Rendering one server per adapter: field mapping, the cwd wrap, skips,
 * extras, and secrets that never leak unresolved. */
#include "testutil.h"

#include <jansson.h>

#include "adapters/adapters.h"
#include "adapters/merge.h"
#include "adapters/render.h"

static struct adp_registry reg;

static int setup(void **state)
{
    (void)state;
    struct as_err e = AS_ERR_INIT;
    return adp_registry_load(&reg, false, &e);
}

static int teardown(void **state)
{
    (void)state;
    adp_registry_free(&reg);
    return 0;
}

static struct manifest *load(const char *toml)
{
    struct manifest_source src = {MANIFEST_PROJECT,
                                  "/p/.agentstack/agentstack.toml",
                                  toml,
                                  strlen(toml),
                                  NULL,
                                  NULL,
                                  0,
                                  NULL,
                                  NULL};
    struct as_err e = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &e);
    if (!m)
        fail_msg("manifest: %s", e.msg);
    return m;
}

/* Renders server 0 for adapter id as compact JSON (or TOML text). */
static enum adp_render_status render(const char *id, const struct manifest *m, size_t idx,
                                     strbuf *out, struct adp_rendered *r, adp_secrets *sec)
{
    const struct adp_desc *d = adp_registry_find(&reg, id);
    assert_non_null(d);
    struct adp_render_ctx rc = {NULL, NULL, sec, "/p"};
    struct as_err e = AS_ERR_INIT;
    enum adp_render_status st =
        adp_render_server(d, d->config_format, &m->servers.v[idx], &rc, r, &e);
    if (st == ADP_RENDER_OK && r->json) {
        char *s = json_dumps(r->json, JSON_COMPACT | JSON_PRESERVE_ORDER);
        sb_adds(out, s);
        free(s);
    } else if (st == ADP_RENDER_OK) {
        toml_value *root = toml_new(TOML_TABLE);
        toml_table_set(root, "x", toml_clone(r->toml));
        toml_emit(root, out);
        toml_free(root);
    }
    return st;
}

static void test_cwd_wrap_and_native(void **state)
{
    (void)state;
    struct manifest *m = load("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"my srv\"\n"
                              "args = [\"it's\", \"--x\"]\ncwd = \"/srv/a b\"\n");
    strbuf o = SB_INIT;
    struct adp_rendered r;
    assert_int_equal(render("kiro", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"command\":\"sh\",\"args\":[\"-c\",\"cd '/srv/a b' && exec "
                               "'my srv' 'it'\\\\''s' '--x'\"]}");
    adp_rendered_release(&r);
    sb_reset(&o);
    assert_int_equal(render("cursor", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"command\":\"my srv\",\"args\":[\"it's\",\"--x\"],"
                               "\"cwd\":\"/srv/a b\"}");
    adp_rendered_release(&r);
    sb_reset(&o);
    assert_int_equal(render("opencode", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"type\":\"local\",\"command\":[\"my srv\",\"it's\",\"--x\"],"
                               "\"cwd\":\"/srv/a b\"}");
    adp_rendered_release(&r);
    sb_reset(&o);
    assert_int_equal(render("codex", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "[x]\ncommand = \"my srv\"\nargs = [\"it's\", \"--x\"]\n"
                               "cwd = \"/srv/a b\"\n");
    adp_rendered_release(&r);
    sb_release(&o);
    manifest_free(m);
}

/* A relative cwd: kept relative for Cursor, joined to the project root for
 * Cline (cwd_absolute), and a ${REF} is never joined. */
static void test_cwd_absolute(void **state)
{
    (void)state;
    struct manifest *m = load("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"srv\"\n"
                              "cwd = \"work/a\"\n[servers.r]\ntype = \"stdio\"\n"
                              "command = \"srv\"\ncwd = \"${WORKDIR}\"\n");
    strbuf o = SB_INIT;
    struct adp_rendered r;
    assert_int_equal(render("cursor", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"command\":\"srv\",\"cwd\":\"work/a\"}");
    adp_rendered_release(&r);
    const char *const clines[] = {"cline", "cline-cli"};
    for (size_t i = 0; i < 2; i++) {
        sb_reset(&o);
        assert_int_equal(render(clines[i], m, 0, &o, &r, NULL), ADP_RENDER_OK);
        assert_string_equal(o.buf,
                            "{\"type\":\"stdio\",\"command\":\"srv\",\"cwd\":\"/p/work/a\"}");
        adp_rendered_release(&r);
    }
    setenv("WORKDIR", "/elsewhere", 1);
    sb_reset(&o);
    assert_int_equal(render("cline-cli", m, 1, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"type\":\"stdio\",\"command\":\"srv\",\"cwd\":\"/elsewhere\"}");
    adp_rendered_release(&r);
    unsetenv("WORKDIR");
    sb_release(&o);
    manifest_free(m);
}

static void test_skips_with_exact_reasons(void **state)
{
    (void)state;
    struct manifest *m = load("version = 1\n[servers.\"slash/probe\"]\ntype = \"stdio\"\n"
                              "command = \"echo\"\n[servers.web]\ntype = \"http\"\n"
                              "url = \"https://w.test/mcp\"\n");
    strbuf o = SB_INIT;
    struct adp_rendered r;
    assert_int_equal(render("codex", m, 0, &o, &r, NULL), ADP_RENDER_SKIP);
    assert_string_equal(r.reason.buf, "Codex CLI rejects this server name at startup (letters, "
                                      "digits, '_' and '-' only) — rename the server in the "
                                      "manifest");
    adp_rendered_release(&r);
    assert_int_equal(render("claude-code", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    adp_rendered_release(&r);
    assert_int_equal(render("claude-desktop", m, 1, &o, &r, NULL), ADP_RENDER_SKIP);
    assert_string_equal(r.reason.buf, "Claude Desktop can't represent this server's transport "
                                      "(add it via the harness's own UI/connector)");
    adp_rendered_release(&r);
    sb_release(&o);
    manifest_free(m);
}

static void test_extras_override_in_place(void **state)
{
    (void)state;
    struct manifest *m = load("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"c\"\n"
                              "[servers.s.extra.claude-code]\ncommand = \"override\"\n"
                              "timeout = 30\n[servers.s.extra.claude-code.nested]\nk = \"v\"\n"
                              "[servers.s.extra.codex]\nstartup_timeout_sec = 5\n"
                              "[servers.s.extra.codex.tools.x]\nenabled = false\n");
    strbuf o = SB_INIT;
    struct adp_rendered r;
    assert_int_equal(render("claude-code", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"type\":\"stdio\",\"command\":\"override\",\"timeout\":30,"
                               "\"nested\":{\"k\":\"v\"}}");
    adp_rendered_release(&r);
    sb_reset(&o);
    assert_int_equal(render("codex", m, 0, &o, &r, NULL), ADP_RENDER_OK);
    assert_string_equal(o.buf, "[x]\ncommand = \"c\"\nstartup_timeout_sec = 5\n\n"
                               "[x.tools.x]\nenabled = false\n");
    adp_rendered_release(&r);
    sb_release(&o);
    manifest_free(m);
}

static void test_secrets(void **state)
{
    (void)state;
    setenv("AS_T_TOKEN", "s3cr3t-value", 1);
    unsetenv("AS_T_NOPE");
    struct manifest *m =
        load("version = 1\n[servers.ok]\ntype = \"http\"\nurl = \"https://x.test/${AS_T_TOKEN}\"\n"
             "headers = { Authorization = \"Bearer ${AS_T_TOKEN}\", Keep = \"${V:-x}\" }\n"
             "[servers.bad]\ntype = \"stdio\"\ncommand = \"c\"\nenv = { K = \"${AS_T_NOPE}\" }\n");
    strbuf o = SB_INIT;
    struct adp_rendered r;
    adp_secrets sec = VEC_INIT;
    assert_int_equal(render("cursor", m, 0, &o, &r, &sec), ADP_RENDER_OK);
    assert_string_equal(o.buf, "{\"url\":\"https://x.test/s3cr3t-value\",\"headers\":{"
                               "\"Authorization\":\"Bearer s3cr3t-value\",\"Keep\":\"${V:-x}\"}}");
    assert_int_equal(sec.n, 1);
    strbuf masked = SB_INIT;
    adp_secrets_mask(&sec, o.buf, o.len, &masked);
    assert_null(strstr(masked.buf, "s3cr3t"));
    assert_non_null(strstr(masked.buf, "Bearer ${AS_T_TOKEN}"));
    sb_release(&masked);
    adp_rendered_release(&r);
    sb_reset(&o);
    assert_int_equal(render("cursor", m, 1, &o, &r, &sec), ADP_RENDER_UNRESOLVED);
    assert_null(r.json);
    assert_int_equal(r.missing.n, 1);
    assert_string_equal(r.missing.v[0], "AS_T_NOPE");
    adp_rendered_release(&r);
    adp_secrets_free(&sec);
    strvec refs = STRVEC_INIT;
    adp_server_refs(&m->servers.v[0], &refs);
    assert_int_equal(refs.n, 1);
    strvec_clear(&refs);
    sb_release(&o);
    manifest_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cwd_wrap_and_native),
        cmocka_unit_test(test_cwd_absolute),
        cmocka_unit_test(test_skips_with_exact_reasons),
        cmocka_unit_test(test_extras_override_in_place),
        cmocka_unit_test(test_secrets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
