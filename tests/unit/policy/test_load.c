/*
 * Loading policy from TOML and the machine file: strict keys with
 * did-you-mean at file:line:col, wrong types, the load states (absent,
 * current, blocked — never a silent fallback), and the four presets, which
 * must equal examples/policies/ byte for byte and load with the real loader.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/toml.h"
#include "policy/policy.h"
#include "testutil.h"

/* Writes text as the machine file of a fresh temporary home and loads it. */
struct loaded {
    struct pol_layer *l;
    enum pol_machine_state state;
    struct as_err err;
    char rendered[4096];
    char *dir;
};

static void load_text(struct loaded *r, const char *text)
{
    memset(r, 0, sizeof *r);
    r->dir = tu_tmpdir();
    strbuf path = SB_INIT;
    struct as_err perr = AS_ERR_INIT;
    assert_int_equal(pol_machine_path(&path, &perr), 0);
    if (text) {
        char *p = tu_write(r->dir, "home/.agentstack/agentstack.toml", text);
        assert_string_equal(p, path.buf);
        free(p);
    }
    r->l = pol_machine_load(path.buf, &r->state, &r->err);
    as_err_str(&r->err, r->rendered, sizeof r->rendered);
    sb_release(&path);
}

static void done(struct loaded *r)
{
    pol_layer_free(r->l);
    tu_rmtree(r->dir);
}

/* Expects BLOCKED with all of the given substrings in "path:line:col: msg" + hint. */
static void expect_blocked(const char *text, const char *const *want)
{
    struct loaded r;
    load_text(&r, text);
    if (r.l || r.state != POL_BLOCKED)
        fail_msg("accepted a broken machine file:\n%s", text);
    char all[6000];
    snprintf(all, sizeof all, "%s\n%s", r.rendered, r.err.hint);
    assert_non_null(strstr(all, "refusing to continue"));
    assert_non_null(strstr(all, "agentstack.toml"));
    assert_true(r.err.hint[0] != '\0');
    for (size_t i = 0; want[i]; i++)
        if (!strstr(all, want[i]))
            fail_msg("missing \"%s\" in:\n%s", want[i], all);
    done(&r);
}

static void test_machine_states(void **st)
{
    (void)st;
    struct loaded r;
    load_text(&r, NULL);
    assert_int_equal(r.state, POL_UNCONFIGURED);
    assert_non_null(r.l);
    assert_true(pol_layer_is_empty(r.l));
    done(&r);
    load_text(&r, "version = 1\n[policy.tools]\n\"*\" = [\"!delete_*\"]\n");
    assert_int_equal(r.state, POL_CURRENT);
    assert_non_null(r.l);
    assert_int_equal(r.l->keyed[POL_TOOLS].keys.n, 1);
    done(&r);
    /* other tables of the machine manifest are someone else's, but their names are checked */
    load_text(&r, "version = 1\n[guard]\nenabled = true\n[gateway]\nmax_result_bytes = 5\n"
                  "[instructions.x]\npath = \"a\"\n");
    assert_int_equal(r.state, POL_CURRENT);
    done(&r);
}

static void test_machine_broken_fails_closed(void **st)
{
    (void)st;
    expect_blocked("version = 1\n[policy.tools\n", (const char *const[]){":2:", NULL});
    expect_blocked("[policy.tools]\n\"*\" = [\"!x\"]\n",
                   (const char *const[]){":1:1:", "missing `version = 1`", NULL});
    expect_blocked("version = 2\n", (const char *const[]){":1:11:", "upgrade agentstack", NULL});
    expect_blocked("version = 0\n", (const char *const[]){"version must be the integer 1", NULL});
    expect_blocked(
        "version = 1\n[polcy.tools]\n\"*\" = [\"!delete_*\"]\n",
        (const char *const[]){":2:2:", "unknown key 'polcy'", "did you mean 'policy'", NULL});
    expect_blocked("version = 1\n[policy.tool]\n\"*\" = [\"!delete_*\"]\n",
                   (const char *const[]){":2:9:", "unknown key 'tool' in [policy]",
                                         "did you mean 'tools'", NULL});
    expect_blocked("version = 1\n[policy.filesystem]\ndney = [\".env\"]\n",
                   (const char *const[]){":3:1:", "did you mean 'deny'", NULL});
    expect_blocked("version = 1\n[policy.tools]\n\"*\" = \"!delete_*\"\n",
                   (const char *const[]){":3:7:", "must be an array of strings, not string", NULL});
    expect_blocked("version = 1\n[policy.tools]\n\"*\" = [\"!a\", 3]\n",
                   (const char *const[]){":3:14:", "not integer", NULL});
    expect_blocked("version = 1\n[policy]\ntools = [\"!x\"]\n",
                   (const char *const[]){":3:9:", "table of server = [patterns]", NULL});
    expect_blocked("version = 1\n[policy.egress]\napi = [\"https://api.example.com\"]\n",
                   (const char *const[]){":3:8:", "is malformed (expected", "a URL", NULL});
    expect_blocked("version = 1\n[policy.egress]\napi = [\"!evil.example:443junk\"]\n",
                   (const char *const[]){":3:8:", "is malformed", NULL});
    expect_blocked("version = 1\n[policy.workflows]\nmax_agent = 3\n",
                   (const char *const[]){"did you mean 'max_agents'", NULL});
    expect_blocked("version = 1\n[policy.workflows]\nmax_agents = -1\n",
                   (const char *const[]){"must not be negative", NULL});
    expect_blocked("version = 1\npolicy = 3\n", (const char *const[]){"[policy] must be", NULL});
    expect_blocked("version = 1\n[policy]\nforbid = \"x\"\n",
                   (const char *const[]){"[policy] forbid must be an array of strings", NULL});
    expect_blocked("version = 1\n[policy.filesystem]\ndeny = [\"../up/**\"]\n",
                   (const char *const[]){":3:9:", "'..'", NULL});
}

static void test_machine_not_a_regular_file(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s/home/.agentstack", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/home/.agentstack/agentstack.toml", dir);
    /* a FIFO must not hang the loader */
    assert_int_equal(mkfifo(p, 0600), 0);
    enum pol_machine_state state;
    struct as_err err = AS_ERR_INIT;
    assert_null(pol_machine_load(p, &state, &err));
    assert_int_equal(state, POL_BLOCKED);
    unlink(p);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_null(pol_machine_load(p, &state, &err));
    assert_int_equal(state, POL_BLOCKED);
    rmdir(p);
    /* over 8 MiB */
    FILE *f = fopen(p, "w");
    fputs("version = 1\n", f);
    for (int i = 0; i < (8 << 20) / 16 + 1; i++)
        fputs("# padding......\n", f);
    fclose(f);
    as_err_clear(&err);
    assert_null(pol_machine_load(p, &state, &err));
    assert_int_equal(state, POL_BLOCKED);
    assert_non_null(strstr(err.msg, "limit"));
    /* unreadable (when not root, permissions apply; as root, chmod does not stop reads) */
    tu_rmtree(dir);
}

static void test_machine_path(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    strbuf sb = SB_INIT;
    setenv("AGENTSTACK_HOME", "/x/ash", 1);
    assert_int_equal(pol_machine_path(&sb, NULL), 0);
    assert_string_equal(sb.buf, "/x/ash/agentstack.toml");
    sb_reset(&sb);
    unsetenv("AGENTSTACK_HOME");
    setenv("HOME", "/h/u", 1);
    assert_int_equal(pol_machine_path(&sb, NULL), 0);
    assert_string_equal(sb.buf, "/h/u/.agentstack/agentstack.toml");
    sb_release(&sb);
    tu_rmtree(dir);
}

static void test_policy_table_contents(void **st)
{
    (void)st;
    const char *t = "version = 1\n[policy]\nrequire = [\"a\"]\nforbid = [\"b\", \"c\"]\n"
                    "allowed_sources = [\"git:acme/*\"]\n[policy.workflows]\nmax_agents = 4\n"
                    "max_wall_seconds = 600\n[policy.tools]\ngithub = []\n\"*\" = [\"get_*\", "
                    "\"!x\"]\n[policy.filesystem]\nread = []\nwrite = [\"./**\"]\n";
    struct loaded r;
    load_text(&r, t);
    assert_int_equal(r.state, POL_CURRENT);
    assert_int_equal(r.l->require.n, 1);
    assert_int_equal(r.l->forbid.n, 2);
    assert_string_equal(r.l->allowed_sources.v[0], "git:acme/*");
    assert_int_equal(r.l->workflows.max_agents, 4);
    assert_int_equal(r.l->workflows.max_wall_seconds, 600);
    assert_int_equal(r.l->workflows.max_concurrent, -1);
    const struct pol_keyed *k = &r.l->keyed[POL_TOOLS];
    assert_int_equal(k->keys.n, 2);
    assert_string_equal(k->keys.v[0].name, "github");
    assert_int_equal(k->keys.v[0].rules.n, 0);
    assert_int_equal(k->keys.v[0].line, 10);
    assert_int_equal(k->keys.v[1].rules.v[1].deny, 1);
    assert_string_equal(k->keys.v[1].rules.v[1].text, "!x");
    assert_string_equal(k->keys.v[1].rules.v[1].canon, "x");
    assert_int_equal(k->keys.v[1].rules.v[1].line, 11);
    assert_int_equal(r.l->fs[0].present, 1);
    assert_int_equal(r.l->fs[0].globs.n, 0);
    assert_int_equal(r.l->fs[1].globs.n, 1);
    strbuf why = SB_INIT;
    assert_string_equal(pol_machine_word(r.l, &why), "restrictive");
    sb_release(&why);
    done(&r);
    /* a NULL [policy] table is an empty layer */
    struct pol_layer *l = pol_layer_from_toml(NULL, "p", POL_PROJECT, NULL);
    assert_true(pol_layer_is_empty(l));
    pol_layer_free(l);
}

/* ---- presets ------------------------------------------------------------ */

static void test_presets_match_examples(void **st)
{
    (void)st;
    const char *src = getenv("AS_SRC");
    if (!src)
        src = ".";
    assert_int_equal(pol_npresets, 4);
    for (size_t i = 0; i < pol_npresets; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/examples/policies/%s.toml", src, pol_presets[i].name);
        size_t n = 0;
        char *text = tu_read(p, &n);
        if (!text)
            fail_msg("cannot read %s (set AS_SRC)", p);
        if (n != strlen(pol_presets[i].text) || memcmp(text, pol_presets[i].text, n) != 0)
            fail_msg("%s differs from the embedded preset '%s'", p, pol_presets[i].name);
        free(text);
    }
    assert_non_null(pol_preset_find("locked-down"));
    assert_null(pol_preset_find("lockdown"));
}

static struct pol_ruleset *preset_rs(const char *name, struct loaded *r)
{
    const struct pol_preset *p = pol_preset_find(name);
    assert_non_null(p);
    load_text(r, p->text);
    if (r->state != POL_CURRENT)
        fail_msg("preset %s does not load: %s", name, r->rendered);
    strbuf why = SB_INIT;
    assert_string_equal(pol_machine_word(r->l, &why), "restrictive");
    strvec lint = STRVEC_INIT;
    pol_machine_lint(r->l, &lint);
    assert_int_equal(lint.n, 0);
    strvec_clear(&lint);
    sb_release(&why);
    struct as_err err = AS_ERR_INIT;
    struct pol_ruleset *rs = pol_compile(r->l, NULL, "/home/u", &err);
    assert_non_null(rs);
    return rs;
}

static void test_presets_load_and_decide(void **st)
{
    (void)st;
    struct loaded r;
    struct pol_ruleset *rs = preset_rs("compatible", &r);
    assert_int_equal(pol_tool(rs, "any", "delete_repo", NULL), 0);
    assert_int_equal(pol_tool(rs, "any", "DROP_table", NULL), 0);
    assert_int_equal(pol_tool(rs, "any", "org_admin", NULL), 0);
    assert_int_equal(pol_tool(rs, "any", "get_secret", NULL), 1);
    assert_int_equal(pol_egress(rs, "any", "example.com", 443, NULL), 1);
    assert_int_equal(pol_fs_workspace_writable(rs, NULL), 0);
    pol_ruleset_free(rs);
    done(&r);

    rs = preset_rs("developer", &r);
    assert_int_equal(pol_tool(rs, "x", "get_secret_value", NULL), 0);
    assert_int_equal(pol_tool(rs, "x", "list_secrets", NULL), 0);
    assert_int_equal(pol_tool(rs, "x", "list_repos", NULL), 1);
    assert_int_equal(pol_egress(rs, "x", "169.254.169.254", 80, NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "2852039166", 80, NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "Metadata.Google.Internal.", 80, NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "printer.local", 631, NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "github.com", 443, NULL), 1);
    assert_int_equal(pol_secret(rs, "x", "AWS_SECRET_ACCESS_KEY", NULL), 0);
    assert_int_equal(pol_secret(rs, "x", "GITHUB_TOKEN", NULL), 1);
    assert_int_equal(pol_fs_workspace_writable(rs, NULL), 1);
    pol_ruleset_free(rs);
    done(&r);

    rs = preset_rs("locked-down", &r);
    assert_int_equal(pol_tool(rs, "x", "get_file", NULL), 1);
    assert_int_equal(pol_tool(rs, "x", "search_docs", NULL), 1);
    assert_int_equal(pol_tool(rs, "x", "write_file", NULL), 0);
    assert_int_equal(pol_tool(rs, "x", "list_admin", NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "api.anthropic.com", 443, NULL), 1);
    assert_int_equal(pol_egress(rs, "x", "api.anthropic.com", 80, NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "example.com", 443, NULL), 0);
    assert_int_equal(pol_secret(rs, "x", "ANY", NULL), 0);
    assert_int_equal(pol_fs_workspace_writable(rs, NULL), 0);
    pol_ruleset_free(rs);
    done(&r);

    rs = preset_rs("ci", &r);
    assert_int_equal(pol_tool(rs, "x", "run_tests_all", NULL), 1);
    assert_int_equal(pol_tool(rs, "x", "build_image", NULL), 1);
    assert_int_equal(pol_tool(rs, "x", "deploy", NULL), 0);
    assert_int_equal(pol_tool(rs, "x", "get_admin", NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "files.pythonhosted.org", 443, NULL), 1);
    assert_int_equal(pol_egress(rs, "x", "codeload.github.com", 443, NULL), 1);
    assert_int_equal(pol_egress(rs, "x", "evil.example", 443, NULL), 0);
    assert_int_equal(pol_egress(rs, "x", "github.com", 22, NULL), 0);
    assert_int_equal(pol_secret(rs, "x", "NPM_TOKEN", NULL), 0);
    pol_ruleset_free(rs);
    done(&r);
}

static void test_preset_apply_keeps_other_bytes(void **st)
{
    (void)st;
    const char *old = "# my machine\nversion = 1 # keep\n\n[guard]\nenabled = true\n\n"
                      "[policy]\nrequire = [\"a\"]\n\n[policy.tools]\n\"*\" = [\"!x\"] "
                      "# old rule\ngithub = [\"!push_*\"]\n\n[policy.egress]\n\"*\" = "
                      "[\"!evil.example\"]\n\n[policy.workflows]\nmax_agents = 2\n";
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(
        pol_preset_apply(pol_preset_find("compatible"), "m.toml", old, strlen(old), &out, &err), 0);
    assert_non_null(strstr(out.buf, "# my machine\nversion = 1 # keep\n\n[guard]\nenabled = "
                                    "true\n\n[policy]\nrequire = [\"a\"]\n"));
    assert_non_null(strstr(out.buf, "[policy.workflows]\nmax_agents = 2\n"));
    assert_null(strstr(out.buf, "push_"));
    assert_null(strstr(out.buf, "evil.example"));
    struct pol_layer *l = pol_machine_parse("m.toml", out.buf, out.len, &err);
    if (!l)
        fail_msg("%s\n%s", err.msg, out.buf);
    assert_int_equal(l->keyed[POL_TOOLS].keys.n, 1);
    assert_int_equal(l->keyed[POL_TOOLS].keys.v[0].rules.n, 4);
    assert_int_equal(l->keyed[POL_EGRESS].keys.n, 0);
    assert_int_equal(l->require.n, 1);
    assert_int_equal(l->workflows.max_agents, 2);
    pol_layer_free(l);
    /* and on to developer: the dimensions compatible lacks come back */
    strbuf out2 = SB_INIT;
    assert_int_equal(
        pol_preset_apply(pol_preset_find("developer"), "m.toml", out.buf, out.len, &out2, &err), 0);
    l = pol_machine_parse("m.toml", out2.buf, out2.len, &err);
    assert_non_null(l);
    assert_int_equal(l->keyed[POL_EGRESS].keys.v[0].rules.n, 3);
    assert_int_equal(l->fs[1].globs.n, 1);
    assert_non_null(strstr(out2.buf, "[guard]\nenabled = true\n"));
    pol_layer_free(l);
    /* no file: the preset text whole */
    sb_reset(&out);
    assert_int_equal(pol_preset_apply(pol_preset_find("ci"), "m.toml", NULL, 0, &out, &err), 0);
    assert_string_equal(out.buf, pol_preset_find("ci")->text);
    /* not TOML: refused, nothing produced */
    sb_reset(&out);
    const char *bad = "version = 1\n[policy.tools\n";
    assert_int_equal(
        pol_preset_apply(pol_preset_find("ci"), "m.toml", bad, strlen(bad), &out, &err), -1);
    assert_int_equal(out.len, 0);
    /* other spellings of the tables: whatever the editor does, the result is valid or refused */
    const char *odd[] = {"version = 1\n[policy]\ntools = { \"*\" = [\"!x\"] }\n",
                         "version = 1\npolicy.tools.\"*\" = [\"!x\"]\n",
                         "version = 1\n[policy.tools]\n[policy.tools.sub]\n"};
    for (size_t i = 0; i < 3; i++) {
        sb_reset(&out);
        if (pol_preset_apply(pol_preset_find("compatible"), "m.toml", odd[i], strlen(odd[i]), &out,
                             &err) < 0)
            continue;
        struct pol_layer *ol = pol_machine_parse("m.toml", out.buf, out.len, &err);
        if (!ol)
            continue; /* the CLI refuses to write this */
        assert_int_equal(ol->keyed[POL_TOOLS].keys.n, 1);
        assert_int_equal(ol->keyed[POL_TOOLS].keys.v[0].rules.n, 4);
        pol_layer_free(ol);
    }
    sb_release(&out);
    sb_release(&out2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_machine_states),
        cmocka_unit_test(test_machine_broken_fails_closed),
        cmocka_unit_test(test_machine_not_a_regular_file),
        cmocka_unit_test(test_machine_path),
        cmocka_unit_test(test_policy_table_contents),
        cmocka_unit_test(test_presets_match_examples),
        cmocka_unit_test(test_presets_load_and_decide),
        cmocka_unit_test(test_preset_apply_keeps_other_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
