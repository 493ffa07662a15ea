/*
 * Policy decisions: the worked decisions of docs/policy.md ("Decision table") as table tests,
 * the exact refusal text, our stricter rules (case-insensitive
 * denies, host normalization, URL-shaped patterns refused), the wire form,
 * and the acceptance scenarios that concern policy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/toml.h"
#include "policy/policy.h"

static struct pol_layer *layer(enum pol_layer_id id, const char *toml)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *root = toml_parse("t.toml", toml, strlen(toml), &err);
    if (!root)
        fail_msg("toml: %s", err.msg);
    struct pol_layer *l = pol_layer_from_toml(toml_get(root, "policy"), "t.toml", id, &err);
    toml_free(root);
    if (!l)
        fail_msg("layer: %s", err.msg);
    return l;
}

/* Expects layer construction to fail; returns the rendered error. */
static char *layer_err(const char *toml)
{
    static char buf[4096];
    struct as_err err = AS_ERR_INIT;
    toml_value *root = toml_parse("t.toml", toml, strlen(toml), &err);
    if (!root)
        fail_msg("toml: %s", err.msg);
    struct pol_layer *l =
        pol_layer_from_toml(toml_get(root, "policy"), "t.toml", POL_PROJECT, &err);
    toml_free(root);
    if (l)
        fail_msg("expected an error for: %s", toml);
    as_err_str(&err, buf, sizeof buf);
    return buf;
}

static struct pol_ruleset *rs_of(const char *m, const char *b)
{
    struct pol_layer *ml = m ? layer(POL_MACHINE, m) : NULL;
    struct pol_layer *bl = b ? layer(POL_PROJECT, b) : NULL;
    struct as_err err = AS_ERR_INIT;
    struct pol_ruleset *rs = pol_compile(ml, bl, "/home/u", &err);
    if (!rs)
        fail_msg("compile: %s", err.msg);
    pol_layer_free(ml);
    pol_layer_free(bl);
    return rs;
}

/* Checks one decision: allow, the deciding layer and (when given) the exact text. */
static void expect(const struct pol_ruleset *rs, enum pol_dim dim, const char *server,
                   const char *subject, unsigned port, int allow, enum pol_by by, const char *text)
{
    struct pol_decision d;
    int got = pol_decide(rs, dim, server, subject, port, &d);
    strbuf sb = SB_INIT;
    pol_decision_text(&d, &sb);
    if (got != allow || d.allow != allow || (!allow && d.by != by))
        fail_msg("%s %s/%s:%u: got %s by %s (%s), want %s by %s", pol_dim_display(dim), server,
                 subject, port, got ? "allow" : "deny", pol_by_name(d.by), sb.buf,
                 allow ? "allow" : "deny", pol_by_name(by));
    if (text && strcmp(sb.buf, text) != 0)
        fail_msg("text:\n got  %s\n want %s", sb.buf, text);
    sb_release(&sb);
}

#define T POL_TOOLS
#define E POL_EGRESS
#define S POL_SECRETS
#define M POL_BY_MACHINE
#define B POL_BY_PROJECT
#define N POL_BY_NONE
#define MSUF " (machine policy — ~/.agentstack/agentstack.toml)"

/* ---- docs/policy.md decision table, rows 1-12 --------------------------- */

static void test_row1_star_deny_is_rename_proof(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.tools]\n\"*\" = [\"!delete_*\"]\n", NULL);
    expect(rs, T, "gh", "delete_repo", 0, 0, M, "denied by [policy.tools] rule \"!delete_*\"" MSUF);
    expect(rs, T, "any-name", "delete_x", 0, 0, M, NULL);
    expect(rs, T, "gh", "list_repos", 0, 1, N, NULL);
    pol_ruleset_free(rs);
}

static void test_row2_named_key_dodged_by_rename(void **st)
{
    (void)st;
    struct pol_layer *m = layer(POL_MACHINE, "[policy.tools]\ngithub = [\"!delete_*\"]\n");
    struct pol_ruleset *rs = pol_compile(m, NULL, NULL, NULL);
    expect(rs, T, "gh", "delete_repo", 0, 1, N, NULL);
    expect(rs, T, "github", "delete_repo", 0, 0, M, NULL);
    strvec w = STRVEC_INIT;
    pol_machine_lint(m, &w);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.v[0], "can be dodged if a repo renames its server"));
    strbuf why = SB_INIT;
    assert_string_equal(pol_machine_word(m, &why), "mixed");
    strvec_clear(&w);
    sb_release(&why);
    pol_ruleset_free(rs);
    pol_layer_free(m);
}

static void test_row3_intersection(void **st)
{
    (void)st;
    struct pol_ruleset *rs =
        rs_of("[policy.tools]\n\"*\" = [\"!delete_*\", \"!admin_*\"]\n",
              "[policy.tools]\nops = [\"get_*\", \"list_*\", \"delete_everything\"]\n");
    expect(rs, T, "ops", "delete_everything", 0, 0, M,
           "denied by [policy.tools] rule \"!delete_*\"" MSUF);
    expect(rs, T, "ops", "admin_reset", 0, 0, M, NULL);
    expect(rs, T, "ops", "get_status", 0, 1, N, NULL);
    expect(rs, T, "ops", "run_job", 0, 0, B,
           "not in the [policy.tools] allowlist (delete_everything, get_*, list_*)");
    pol_ruleset_free(rs);
}

static void test_row4_both_layers_bound(void **st)
{
    (void)st;
    struct pol_ruleset *rs =
        rs_of("[policy.tools]\nfigma = [\"get_*\"]\n", "[policy.tools]\nfigma = [\"get_file\"]\n");
    expect(rs, T, "figma", "get_file", 0, 1, N, NULL);
    expect(rs, T, "figma", "get_node", 0, 0, B, NULL);
    expect(rs, T, "figma", "delete_file", 0, 0, M,
           "not in the [policy.tools] allowlist (get_*)" MSUF);
    pol_ruleset_free(rs);
}

static void test_row5_bounds_and_across_keys(void **st)
{
    (void)st;
    struct pol_ruleset *rs =
        rs_of("[policy.tools]\n\"*\" = [\"get_*\"]\ngithub = [\"list_*\"]\n", NULL);
    expect(rs, T, "github", "get_x", 0, 0, M, NULL);
    expect(rs, T, "github", "list_x", 0, 0, M, NULL);
    expect(rs, T, "jira", "get_x", 0, 1, N, NULL);
    pol_ruleset_free(rs);
}

static void test_row6_empty_list_and_deny_all(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.tools]\ngithub = []\n", NULL);
    expect(rs, T, "github", "anything", 0, 1, N, NULL);
    pol_ruleset_free(rs);
    rs = rs_of("[policy.tools]\n\"*\" = [\"!*\"]\n", NULL);
    expect(rs, T, "github", "anything", 0, 0, M, NULL);
    expect(rs, T, "*", "anything", 0, 0, M, NULL);
    pol_ruleset_free(rs);
}

static void test_row7_project_deny_all(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of(NULL, "[policy.tools]\n\"*\" = [\"!*\"]\n");
    expect(rs, T, "x", "anything", 0, 0, B, "denied by [policy.tools] rule \"!*\"");
    pol_ruleset_free(rs);
}

static void test_row8_denies_ignore_case(void **st)
{
    (void)st;
    /* stricter by design (docs/policy.md): !delete_* also blocks DELETE_all */
    struct pol_ruleset *rs =
        rs_of("[policy.tools]\n\"*\" = [\"!delete_*\"]\n", "[policy.tools]\n\"*\" = [\"Get_*\"]\n");
    expect(rs, T, "s", "DELETE_all", 0, 0, M, NULL);
    expect(rs, T, "s", "Delete_All", 0, 0, M, NULL);
    /* allows stay case-sensitive */
    expect(rs, T, "s", "Get_x", 0, 1, N, NULL);
    expect(rs, T, "s", "get_x", 0, 0, B, NULL);
    expect(rs, T, "s", "GET_x", 0, 0, B, NULL);
    pol_ruleset_free(rs);
}

static void test_row9_no_secret_regrant(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.secrets]\n\"*\" = [\"!*\"]\n",
                                   "[policy.secrets]\ngithub = [\"GITHUB_TOKEN\"]\n");
    expect(rs, S, "github", "GITHUB_TOKEN", 0, 0, M, "denied by [policy.secrets] rule \"!*\"" MSUF);
    pol_ruleset_free(rs);
    /* secret denies fold case too: only narrows */
    rs = rs_of("[policy.secrets]\n\"*\" = [\"!*_PRIVATE_KEY\"]\n", NULL);
    expect(rs, S, "x", "ssh_private_key", 0, 0, M, NULL);
    expect(rs, S, "x", "GITHUB_TOKEN", 0, 1, N, NULL);
    pol_ruleset_free(rs);
}

static void test_row10_egress_no_regrant(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.egress]\n\"*\" = [\"!169.254.169.254\"]\n",
                                   "[policy.egress]\n\"*\" = [\"169.254.169.254\", \"*\"]\n");
    expect(rs, E, "api", "169.254.169.254", 0, 0, M,
           "denied by [policy.egress] rule \"!169.254.169.254\"" MSUF);
    expect(rs, E, "api", "169.254.169.254", 443, 0, M, NULL);
    expect(rs, E, "api", "example.com", 443, 1, N, NULL);
    pol_ruleset_free(rs);
}

static void test_row11_port_pins(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.egress]\napi = [\"api.example.com\"]\n",
                                   "[policy.egress]\napi = [\"api.example.com:443\"]\n");
    expect(rs, E, "api", "api.example.com", 443, 1, N, NULL);
    expect(rs, E, "api", "api.example.com", 22, 0, B,
           "not in the [policy.egress] allowlist (api.example.com:443)");
    expect(rs, E, "api", "api.example.com", 0, 1, N, NULL);
    expect(rs, E, "api", "other.example.com", 443, 0, M, NULL);
    pol_ruleset_free(rs);
    /* a pinned deny: only that port; a write-time check (no port) ignores the pin and denies */
    rs = rs_of("[policy.egress]\n\"*\" = [\"!h.example:22\", \"!*.evil:*\"]\n", NULL);
    expect(rs, E, "x", "h.example", 22, 0, M, NULL);
    expect(rs, E, "x", "h.example", 443, 1, N, NULL);
    expect(rs, E, "x", "h.example", 0, 0, M, NULL);
    expect(rs, E, "x", "a.evil", 8080, 0, M, NULL);
    pol_ruleset_free(rs);
}

static void test_row12_malformed_egress(void **st)
{
    (void)st;
    /* Machine egress entries are validated like project ones — a load error */
    char *e = layer_err("[policy.egress]\napi = [\"!evil.example:443junk\"]\n");
    assert_non_null(strstr(e, "t.toml:2:8: [policy.egress] api pattern \"!evil.example:443junk\" "
                              "is malformed (expected `host`, `host:port`, `host:*`, or a "
                              "bracketed IPv6 form)"));
    /* a compiled ruleset carrying one (hand-written wire form) fails closed for that server */
    const char *wire = "{\"version\":3,\"servers\":{\"api\":{\"egress\":{\"machine\":"
                       "{\"deny\":[\"evil.example:443junk\"]}}}}}";
    struct as_err err = AS_ERR_INIT;
    struct pol_ruleset *rs = pol_ruleset_from_json(wire, strlen(wire), &err);
    assert_non_null(rs);
    expect(rs, E, "api", "anything.example", 443, 0, M,
           "malformed [policy.egress] pattern \"evil.example:443junk\" in the compiled ruleset "
           "— failing closed; fix the pattern in the manifest" MSUF);
    expect(rs, E, "api", "good.example", 0, 0, M, NULL);
    expect(rs, E, "other", "good.example", 443, 1, N, NULL);
    pol_ruleset_free(rs);
}

/* ---- rows 13-16: filesystem --------------------------------------------- */

static int fs_check(const struct pol_ruleset *rs, const char *path, struct pol_decision *d)
{
    strvec sp = STRVEC_INIT;
    pol_fs_spellings(path, "/w", "/home/u", 1, &sp);
    int r = pol_fs_allowed(rs, (const char *const *)sp.v, sp.n, d);
    strvec_clear(&sp);
    return r;
}

static void test_row13_fs_deny_union(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.filesystem]\ndeny = [\".env*\"]\n",
                                   "[policy.filesystem]\ndeny = [\"*.pem\"]\n");
    struct pol_decision d;
    assert_int_equal(fs_check(rs, "sub/dir/.env", &d), 0);
    assert_int_equal(d.by, POL_BY_MACHINE);
    strbuf sb = SB_INIT;
    pol_decision_text(&d, &sb);
    assert_string_equal(sb.buf, "denied by [policy.filesystem] deny rule \".env*\"" MSUF);
    sb_release(&sb);
    assert_int_equal(fs_check(rs, "k.pem", &d), 0);
    assert_int_equal(d.by, POL_BY_PROJECT);
    assert_int_equal(fs_check(rs, "src/a.rs", &d), 1);
    /* traversal: sub/../.env is .env */
    assert_int_equal(fs_check(rs, "sub/../.env", &d), 0);
    assert_int_equal(fs_check(rs, "/w/a/b/../../.env.local", &d), 0);
    pol_ruleset_free(rs);
}

static void test_row14_15_workspace_write(void **st)
{
    (void)st;
    struct pol_decision d;
    struct pol_ruleset *rs = rs_of(NULL, NULL);
    assert_int_equal(pol_fs_workspace_writable(rs, &d), 0);
    assert_int_equal(d.by, POL_BY_DEFAULT);
    strbuf sb = SB_INIT;
    pol_decision_text(&d, &sb);
    assert_string_equal(sb.buf, "no [policy.filesystem] write scope covers the workspace "
                                "(sandbox workspace writes are deny-by-default)");
    assert_string_equal(pol_by_name(d.by), "deny-by-default");
    pol_ruleset_free(rs);
    rs = rs_of(NULL, "[policy.filesystem]\nwrite = [\"./**\"]\n");
    assert_int_equal(pol_fs_workspace_writable(rs, &d), 1);
    pol_ruleset_free(rs);
    static const char *const grant[] = {"./**", "./*", "*", ".", "./"};
    for (size_t i = 0; i < 5; i++) {
        char t[128];
        snprintf(t, sizeof t, "[policy.filesystem]\nwrite = [\"%s\"]\n", grant[i]);
        rs = rs_of(t, NULL);
        assert_int_equal(pol_fs_workspace_writable(rs, &d), 1);
        pol_ruleset_free(rs);
    }
    rs = rs_of("[policy.filesystem]\nwrite = [\"src/**\"]\n", "[policy.filesystem]\nwrite = "
                                                              "[\"./**\"]\n");
    assert_int_equal(pol_fs_workspace_writable(rs, &d), 0);
    assert_int_equal(d.by, POL_BY_MACHINE);
    sb_reset(&sb);
    pol_decision_text(&d, &sb);
    assert_string_equal(sb.buf, "not in the [policy.filesystem] write allowlist (src/**)" MSUF);
    pol_ruleset_free(rs);
    rs = rs_of("[policy.filesystem]\nwrite = [\"./**\"]\n", "[policy.filesystem]\nwrite = "
                                                            "[\"src/**\"]\n");
    assert_int_equal(pol_fs_workspace_writable(rs, &d), 0);
    assert_int_equal(d.by, POL_BY_PROJECT);
    pol_ruleset_free(rs);
    sb_release(&sb);
}

static void test_row16_home_expansion(void **st)
{
    (void)st;
    struct pol_ruleset *rs =
        rs_of("[policy.filesystem]\ndeny = [\"~/.aws/credentials\", \"$HOME/.ssh/**\", "
              "\"${HOME}/.netrc\"]\n",
              NULL);
    struct pol_decision d;
    assert_int_equal(fs_check(rs, "/home/u/.aws/credentials", &d), 0);
    assert_string_equal(d.pattern, "/home/u/.aws/credentials");
    assert_int_equal(fs_check(rs, "~/.aws/credentials", &d), 0);
    assert_int_equal(fs_check(rs, "/home/u/.aws/config", &d), 1);
    assert_int_equal(fs_check(rs, "/home/u/.ssh/id_rsa", &d), 0);
    assert_int_equal(fs_check(rs, "/home/u/.netrc", &d), 0);
    pol_ruleset_free(rs);
    /* no HOME to expand with: an error, never a deny that silently matches nothing */
    struct pol_layer *m = layer(POL_MACHINE, "[policy.filesystem]\ndeny = [\"~/.aws/x\"]\n");
    struct as_err err = AS_ERR_INIT;
    assert_null(pol_compile(m, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "needs $HOME"));
    pol_layer_free(m);
}

static void test_fs_traversal_globs_refused(void **st)
{
    (void)st;
    char *e = layer_err("[policy.filesystem]\ndeny = [\"../secrets/**\"]\n");
    assert_non_null(strstr(e, "t.toml:2:9:"));
    assert_non_null(strstr(e, "'..' in a filesystem glob"));
    layer_err("[policy.filesystem]\nread = [\"a/../b\"]\n");
    layer_err("[policy.filesystem]\nwrite = [\"\"]\n");
    layer_err("[policy.filesystem]\ndeny = [\"~bob/x\"]\n");
    /* spellings resolve .. lexically and never climb above / */
    strvec sp = STRVEC_INIT;
    pol_fs_spellings("../../../../etc/passwd", "/w/p", NULL, 1, &sp);
    assert_string_equal(sp.v[0], "/etc/passwd");
    assert_int_equal(sp.n, 2); /* outside the workspace: absolute + basename */
    assert_string_equal(sp.v[1], "passwd");
    strvec_clear(&sp);
    pol_fs_spellings("/w/p/./a//b/", "/w/p/", NULL, 0, &sp);
    assert_int_equal(sp.n, 2);
    assert_string_equal(sp.v[0], "/w/p/a/b");
    assert_string_equal(sp.v[1], "a/b");
    strvec_clear(&sp);
}

/* ---- refusal text and the short form ------------------------------------ */

static void test_refusal_text_forms(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.egress]\n\"*\" = [\"!blocked.invalid\"]\n",
                                   "[policy.tools]\n\"*\" = [\"!secret_*\"]\n");
    struct pol_decision d;
    strbuf sb = SB_INIT;
    assert_int_equal(pol_egress(rs, "shtest", "blocked.invalid", 443, &d), 0);
    pol_decision_short(&d, &sb);
    assert_string_equal(sb.buf, "denied by rule \"!blocked.invalid\" (machine policy)");
    assert_string_equal(pol_by_name(d.by), "machine");
    sb_reset(&sb);
    pol_decision_text(&d, &sb);
    assert_string_equal(sb.buf, "denied by [policy.egress] rule \"!blocked.invalid\" (machine "
                                "policy — ~/.agentstack/agentstack.toml)");
    sb_reset(&sb);
    assert_int_equal(pol_tool(rs, "demo", "secret_read", &d), 0);
    pol_decision_text(&d, &sb);
    assert_string_equal(sb.buf, "denied by [policy.tools] rule \"!secret_*\"");
    assert_string_equal(pol_by_name(d.by), "project");
    sb_reset(&sb);
    pol_decision_short(&d, &sb);
    assert_string_equal(sb.buf, "denied by rule \"!secret_*\" (project policy)");
    /* allows render nothing */
    sb_reset(&sb);
    assert_int_equal(pol_tool(rs, "demo", "echo", &d), 1);
    pol_decision_text(&d, &sb);
    assert_int_equal(sb.len, 0);
    sb_release(&sb);
    pol_ruleset_free(rs);
}

/* ---- hosts: normalization and the pattern grammar ----------------------- */

static void test_host_tricks(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of("[policy.egress]\n\"*\" = [\"!evil.example\", "
                                   "\"!169.254.169.254\", \"!Bücher.example\", \"!fe80::1\", "
                                   "\"![::1]:8080\", \"!METADATA.google.internal.\"]\n",
                                   NULL);
    /* Trailing dot and case */
    expect(rs, E, "x", "EVIL.example.", 443, 0, M, NULL);
    expect(rs, E, "x", "evil.example", 443, 0, M, NULL);
    expect(rs, E, "x", "metadata.google.internal", 80, 0, M,
           "denied by [policy.egress] rule \"!metadata.google.internal\"" MSUF);
    /* numeric IPv4 spellings of the metadata address */
    const char *v4[] = {"2852039166",      "0xA9FEA9FE",          "0251.0376.0251.0376",
                        "169.254.43518",   "0xa9.0xfe.0xa9.0xfe", "[::ffff:169.254.169.254]",
                        "::ffff:a9fe:a9fe"};
    for (size_t i = 0; i < sizeof v4 / sizeof *v4; i++)
        expect(rs, E, "x", v4[i], 80, 0, M, NULL);
    expect(rs, E, "x", "169.254.169.253", 80, 1, N, NULL);
    /* IDNA: the pattern was converted to xn--; a non-ASCII subject is refused */
    expect(rs, E, "x", "xn--bcher-kva.example", 443, 0, M,
           "denied by [policy.egress] rule \"!xn--bcher-kva.example\"" MSUF);
    struct pol_decision d;
    assert_int_equal(pol_egress(rs, "x",
                                "b\xc3\xbc"
                                "cher.example",
                                443, &d),
                     0);
    assert_int_equal(d.why, POL_BAD_SUBJECT);
    /* IPv6 canonical forms */
    expect(rs, E, "x", "[FE80:0:0::1]", 443, 0, M, NULL);
    expect(rs, E, "x", "[::1]", 8080, 0, M, NULL);
    expect(rs, E, "x", "::1", 80, 1, N, NULL);
    /* non-canonical hosts are refused, not matched */
    const char *bad[] = {"", "a..b", ".a", "a b", "x%00", "[fe80::1%eth0]", "h/x", "[notv6]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(pol_egress(rs, "x", bad[i], 443, &d), 0);
        assert_int_equal(d.why, POL_BAD_SUBJECT);
    }
    pol_ruleset_free(rs);
    /* punycode look-alike of an allowed host is not that host */
    rs = rs_of("[policy.egress]\n\"*\" = [\"apple.com\"]\n", NULL);
    expect(rs, E, "x", "apple.com", 443, 1, N, NULL);
    expect(rs, E, "x", "xn--pple-43d.com", 443, 0, M, NULL);
    pol_ruleset_free(rs);
}

static void test_egress_pattern_grammar(void **st)
{
    (void)st;
    const char *bad[] = {"https://api.example.com",
                         "http://h",
                         "api.example.com/path",
                         "user@host",
                         "h?x",
                         "h#x",
                         "h:+443",
                         "h:0",
                         "h:65536",
                         "h:",
                         "[::1",
                         "[::1]x",
                         "[::1]:",
                         "h:443junk",
                         "a b",
                         "h:44 3",
                         "h%2e",
                         "[example.com]",
                         "::zz",
                         "a..b",
                         ".",
                         "",
                         "!",
                         "h:*:1",
                         "*.b\xc3\xbc*.de",
                         "x]",
                         "h\\x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char host[POL_HOST_MAX + 1], canon[POL_MAX_PATTERN + 1];
        uint16_t port;
        const char *why = NULL;
        const char *p = bad[i][0] == '!' ? bad[i] + 1 : bad[i];
        if (pol_egress_parse(p, host, &port, canon, &why) == 0)
            fail_msg("accepted malformed egress pattern \"%s\"", bad[i]);
        assert_non_null(why);
    }
    char *e = layer_err("[policy.egress]\nsrv = [\"https://api.example.com\"]\n");
    assert_non_null(strstr(e, "is malformed (expected `host`, `host:port`, `host:*`, or a "
                              "bracketed IPv6 form)"));
    assert_non_null(strstr(e, "a URL is not a host pattern"));
    struct {
        const char *in, *canon, *host;
        unsigned port;
    } good[] = {
        {"api.example.com", "api.example.com", "api.example.com", 0},
        {"API.Example.COM.", "api.example.com", "api.example.com", 0},
        {"h:*", "h:*", "h", 0},
        {"h:443", "h:443", "h", 443},
        {"*.example.com", "*.example.com", "*.example.com", 0},
        {"::1", "[::1]", "::1", 0},
        {"[::1]", "[::1]", "::1", 0},
        {"[::1]:*", "[::1]:*", "::1", 0},
        {"[0:0::1]:8443", "[::1]:8443", "::1", 8443},
        {"[2001:db8::*]", "[2001:db8::*]", "2001:db8::*", 0},
        {"0x7f000001:22", "127.0.0.1:22", "127.0.0.1", 22},
        {"m\xc3\xbcnchen.de", "xn--mnchen-3ya.de", "xn--mnchen-3ya.de", 0},
        {"*.m\xc3\xbcnchen.de:443", "*.xn--mnchen-3ya.de:443", "*.xn--mnchen-3ya.de", 443},
        {"*", "*", "*", 0},
        {"*:443", "*:443", "*", 443},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char host[POL_HOST_MAX + 1], canon[POL_MAX_PATTERN + 1];
        uint16_t port;
        const char *why = NULL;
        if (pol_egress_parse(good[i].in, host, &port, canon, &why) < 0)
            fail_msg("refused \"%s\": %s", good[i].in, why);
        assert_string_equal(canon, good[i].canon);
        assert_string_equal(host, good[i].host);
        assert_int_equal(port, good[i].port);
        /* the canonical form is a fixed point */
        char host2[POL_HOST_MAX + 1], canon2[POL_MAX_PATTERN + 1];
        uint16_t port2;
        assert_int_equal(pol_egress_parse(canon, host2, &port2, canon2, &why), 0);
        assert_string_equal(canon2, canon);
    }
    /* *.example.com matches subdomains only; *example.com matches evilexample.com */
    struct pol_ruleset *rs = rs_of("[policy.egress]\na = [\"*.example.com\"]\nb = "
                                   "[\"*example.com\"]\n",
                                   NULL);
    expect(rs, E, "a", "a.b.example.com", 443, 1, N, NULL);
    expect(rs, E, "a", "example.com", 443, 0, M, NULL);
    expect(rs, E, "b", "evilexample.com", 443, 1, N, NULL);
    pol_ruleset_free(rs);
}

static void test_tool_and_secret_grammar(void **st)
{
    (void)st;
    layer_err("[policy.tools]\n\"*\" = [\"\"]\n");
    layer_err("[policy.tools]\n\"*\" = [\"!\"]\n");
    layer_err("[policy.tools]\n\"*\" = [\"!!x\"]\n");
    layer_err("[policy.tools]\n\"*\" = [\"delete all\"]\n");
    layer_err("[policy.tools]\n\"*\" = [\"del\xe2\x80\x8b*\"]\n");
    layer_err("[policy.secrets]\n\"*\" = [\"A-B\"]\n");
    layer_err("[policy.tools]\n\"\" = [\"x\"]\n");
    char *e = layer_err("[policy.tools]\n\"*\" = [\"get_*\", \"a?\"]\n");
    assert_non_null(strstr(e, "t.toml:2:17:"));
    assert_non_null(strstr(e, "could never match"));
    /* subjects outside the tool-name grammar are denied (invisible characters, spaces) */
    struct pol_ruleset *rs = rs_of(NULL, NULL);
    struct pol_decision d;
    assert_int_equal(pol_tool(rs, "s", "delete\xe2\x80\x8b_all", &d), 0);
    assert_int_equal(d.why, POL_BAD_SUBJECT);
    assert_int_equal(pol_tool(rs, "s", "", &d), 0);
    assert_int_equal(pol_secret(rs, "s", "1ABC", &d), 0);
    assert_int_equal(pol_tool(rs, "s", "ok.tool-name_1", &d), 1);
    pol_ruleset_free(rs);
}

/* ---- scale and caps ----------------------------------------------------- */

static void test_ten_thousand_rules(void **st)
{
    (void)st;
    struct pol_layer *m = pol_layer_new(POL_MACHINE, NULL);
    struct pol_layer *b = pol_layer_new(POL_PROJECT, NULL);
    char e[64];
    struct as_err err = AS_ERR_INIT;
    for (int i = 0; i < 10000; i++) {
        const char *key = i < 4000 ? "*" : i < 8000 ? "alpha" : "beta";
        switch (i % 4) {
        case 0:
            snprintf(e, sizeof e, "!tool_%d", i);
            break;
        case 1:
            snprintf(e, sizeof e, "!pre%d_*", i);
            break;
        case 2:
            snprintf(e, sizeof e, "!*_suf%d", i);
            break;
        default:
            snprintf(e, sizeof e, "!*mid%d*x", i);
            break;
        }
        assert_int_equal(pol_layer_add(m, POL_TOOLS, key, e, 0, 0, &err), 0);
        snprintf(e, sizeof e, "ok_%d*", i);
        assert_int_equal(pol_layer_add(b, POL_TOOLS, key, e, 0, 0, &err), 0);
    }
    struct pol_ruleset *rs = pol_compile(m, b, NULL, &err);
    assert_non_null(rs);
    struct pol_decision d;
    /* "*" rules reach every server; alpha's only alpha */
    assert_int_equal(pol_tool(rs, "zeta", "tool_0", &d), 0);
    assert_string_equal(d.pattern, "tool_0");
    assert_int_equal(pol_tool(rs, "zeta", "TOOL_4", &d), 0);
    assert_int_equal(pol_tool(rs, "alpha", "tool_4000", &d), 0);
    assert_int_equal(pol_tool(rs, "zeta", "tool_4000", &d), 0);
    assert_int_equal(d.by, POL_BY_PROJECT); /* not machine-denied: only misses the allowlist */
    assert_int_equal(pol_tool(rs, "beta", "pre8001_go", &d), 0);
    assert_string_equal(d.pattern, "pre8001_*");
    assert_int_equal(pol_tool(rs, "beta", "a_suf8002", &d), 0);
    assert_int_equal(pol_tool(rs, "beta", "zzmid8003qqx", &d), 0);
    assert_int_equal(pol_tool(rs, "alpha", "ok_4001_tool", &d), 1);
    assert_int_equal(pol_tool(rs, "alpha", "ok_9000_tool", &d), 0); /* beta's allowlist */
    assert_int_equal(pol_tool(rs, "beta", "ok_8012_x", &d), 1);     /* "*" bound and beta bound */
    /* the wire form round-trips */
    strbuf j1 = SB_INIT, j2 = SB_INIT;
    pol_ruleset_to_json(rs, &j1);
    struct pol_ruleset *rs2 = pol_ruleset_from_json(j1.buf, j1.len, &err);
    assert_non_null(rs2);
    pol_ruleset_to_json(rs2, &j2);
    assert_true(j1.len == j2.len && memcmp(j1.buf, j2.buf, j1.len) == 0);
    assert_int_equal(pol_tool(rs2, "beta", "zzmid8003qqx", &d), 0);
    sb_release(&j1);
    sb_release(&j2);
    pol_ruleset_free(rs2);
    pol_ruleset_free(rs);
    pol_layer_free(m);
    pol_layer_free(b);
}

static void test_caps(void **st)
{
    (void)st;
    /* 5 000 × 1 KiB patterns under one key are refused by our caps */
    struct pol_layer *l = pol_layer_new(POL_MACHINE, "m.toml");
    struct as_err err = AS_ERR_INIT;
    char *big = malloc(1025);
    memset(big, 'a', 1024);
    big[1024] = '\0';
    assert_int_equal(pol_layer_add(l, POL_TOOLS, "*", big, 3, 4, &err), -1);
    assert_non_null(strstr(err.msg, "longer than"));
    assert_string_equal(err.path, "m.toml");
    assert_int_equal(err.line, 3);
    free(big);
    char e[32];
    int rc = 0, i;
    for (i = 0; i < 5000 && rc == 0; i++) {
        snprintf(e, sizeof e, "!t%d", i);
        rc = pol_layer_add(l, POL_TOOLS, "*", e, 0, 0, &err);
    }
    assert_int_equal(rc, -1);
    assert_int_equal(i, POL_MAX_ENTRIES + 1);
    assert_non_null(strstr(err.msg, "more than 4096 entries"));
    as_err_clear(&err);
    assert_int_equal(
        pol_layer_add(l, POL_TOOLS, "s", "a*b*c*d*e*f*g*h*i*j*k*l*m*n*o*p*q*r", 0, 0, &err), -1);
    assert_non_null(strstr(err.msg, "too many '*'"));
    pol_layer_free(l);
}

/* ---- wire form ---------------------------------------------------------- */

static void test_wire_spec_example_and_version(void **st)
{
    (void)st;
    const char *wire =
        "{\"version\":3,\"defaults\":{\"tools\":\"allow\",\"egress\":\"allow\",\"secrets\":"
        "\"allow\",\"filesystem\":\"allow\"},\n \"servers\":{\"ops\":{\"tools\":{\"machine\":"
        "{\"deny\":[\"delete_*\"]},\"bundle\":{\"allow_all_of\":[[\"get_*\"]]}}}},\n "
        "\"any\":{\"tools\":{\"machine\":{\"deny\":[\"delete_*\"]}}}}";
    struct as_err err = AS_ERR_INIT;
    struct pol_ruleset *rs = pol_ruleset_from_json(wire, strlen(wire), &err);
    assert_non_null(rs);
    expect(rs, T, "ops", "delete_x", 0, 0, M, NULL);
    expect(rs, T, "ops", "get_x", 0, 1, N, NULL);
    expect(rs, T, "ops", "list_x", 0, 0, B, NULL);
    expect(rs, T, "other", "list_x", 0, 1, N, NULL);
    expect(rs, T, "other", "DELETE_x", 0, 0, M, NULL);
    strbuf out = SB_INIT;
    pol_ruleset_to_json(rs, &out);
    assert_string_equal(out.buf,
                        "{\"version\":3,\"defaults\":{\"tools\":\"allow\",\"egress\":\"allow\","
                        "\"secrets\":\"allow\",\"filesystem\":\"allow\"},\"servers\":{\"ops\":"
                        "{\"tools\":{\"machine\":{\"deny\":[\"delete_*\"]},\"bundle\":"
                        "{\"allow_all_of\":[[\"get_*\"]]}}}},\"any\":{\"tools\":{\"machine\":"
                        "{\"deny\":[\"delete_*\"]}}}}");
    sb_release(&out);
    pol_ruleset_free(rs);
    /* A newer version denies everything */
    const char *v4 = "{\"version\":4,\"anything\":\"new\"}";
    rs = pol_ruleset_from_json(v4, strlen(v4), &err);
    assert_non_null(rs);
    struct pol_decision d;
    assert_int_equal(pol_egress(rs, "x", "example.com", 443, &d), 0);
    assert_int_equal(d.why, POL_VERSION);
    strbuf sb = SB_INIT;
    pol_decision_text(&d, &sb);
    assert_non_null(strstr(sb.buf, "version 4"));
    assert_int_equal(pol_tool(rs, "x", "get", &d), 0);
    assert_int_equal(pol_fs_workspace_writable(rs, &d), 0);
    const char *one = "/w/x";
    assert_int_equal(pol_fs_allowed(rs, &one, 1, &d), 0);
    sb_release(&sb);
    pol_ruleset_free(rs);
    /* strict: unknown fields, wrong types, bad JSON are errors */
    const char *bad[] = {"{\"version\":3,\"extra\":1}",
                         "{\"version\":3,\"any\":{\"tools\":{\"machine\":{\"deny\":\"x\"}}}}",
                         "{\"version\":3,\"any\":{\"tools\":{\"layer\":{}}}}",
                         "{\"version\":3,\"defaults\":{\"tools\":\"deny\"}}",
                         "{\"version\":\"3\"}",
                         "{\"version\":0}",
                         "[1]",
                         "{\"version\":3,",
                         "{\"version\":3,\"version\":3}",
                         "{\"version\":3,\"gateway_only_hosts\":[\"a b\"]}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        as_err_clear(&err);
        rs = pol_ruleset_from_json(bad[i], strlen(bad[i]), &err);
        if (rs)
            fail_msg("accepted bad wire form %s", bad[i]);
        assert_true(as_err_isset(&err));
    }
    /* an unexpanded ~ deny in the wire form fails closed */
    const char *tilde = "{\"version\":3,\"filesystem\":{\"deny\":{\"machine\":[\"~/.ssh/**\"]}}}";
    rs = pol_ruleset_from_json(tilde, strlen(tilde), &err);
    assert_non_null(rs);
    assert_int_equal(pol_fs_allowed(rs, &one, 1, &d), 0);
    assert_int_equal(d.why, POL_MALFORMED);
    pol_ruleset_free(rs);
}

static void test_wire_deterministic(void **st)
{
    (void)st;
    const char *m1 = "[policy.tools]\nb = [\"!x\", \"get_*\"]\n\"*\" = [\"!delete_*\", "
                     "\"!admin_*\"]\na = [\"list_*\"]\n[policy.egress]\n\"*\" = [\"!*.local\", "
                     "\"!169.254.169.254\"]\n[policy.filesystem]\ndeny = [\".env\", \"*.pem\"]\n";
    const char *m2 = "[policy.filesystem]\ndeny = [\"*.pem\", \".env\", \".env\"]\n"
                     "[policy.egress]\n\"*\" = [\"!169.254.169.254\", \"!*.LOCAL.\"]\n"
                     "[policy.tools]\na = [\"list_*\"]\n\"*\" = [\"!admin_*\", \"!delete_*\"]\n"
                     "b = [\"get_*\", \"!x\"]\n";
    struct pol_ruleset *r1 = rs_of(m1, "[policy.tools]\nc = [\"q\"]\n");
    struct pol_ruleset *r2 = rs_of(m2, "[policy.tools]\nc = [\"q\"]\n");
    strbuf j1 = SB_INIT, j2 = SB_INIT;
    pol_ruleset_to_json(r1, &j1);
    pol_ruleset_to_json(r2, &j2);
    assert_string_equal(j1.buf, j2.buf);
    assert_non_null(strstr(j1.buf, "\"c\":{\"tools\":{\"machine\":{\"deny\":[\"admin_*\","
                                   "\"delete_*\"]},\"bundle\":{\"allow_all_of\":[[\"q\"]]}}"));
    sb_release(&j1);
    sb_release(&j2);
    pol_ruleset_free(r1);
    pol_ruleset_free(r2);
}

static void test_gateway_only_and_deny_all(void **st)
{
    (void)st;
    struct pol_ruleset *rs = rs_of(NULL, "[policy.egress]\n\"*\" = [\"*\"]\n");
    const char *hosts[] = {"MCP.Example.com.", "10.0.0.1"};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(pol_ruleset_set_gateway_only(rs, hosts, 2, &err), 0);
    struct pol_decision d;
    assert_int_equal(pol_egress(rs, "x", "mcp.example.com", 443, &d), 0);
    assert_int_equal(d.why, POL_GATEWAY_ONLY);
    strbuf sb = SB_INIT;
    pol_decision_text(&d, &sb);
    assert_non_null(strstr(sb.buf, "gateway relay"));
    assert_int_equal(pol_egress(rs, "x", "other.example.com", 443, &d), 1);
    strbuf j = SB_INIT;
    pol_ruleset_to_json(rs, &j);
    assert_non_null(strstr(j.buf, "\"gateway_only_hosts\":[\"10.0.0.1\",\"mcp.example.com\"]"));
    struct pol_ruleset *rs2 = pol_ruleset_from_json(j.buf, j.len, &err);
    assert_non_null(rs2);
    assert_int_equal(pol_egress(rs2, "x", "MCP.example.com", 8443, &d), 0);
    pol_ruleset_free(rs2);
    pol_ruleset_free(rs);
    rs = pol_ruleset_deny_all("machine file broken");
    assert_int_equal(pol_tool(rs, "x", "echo", &d), 0);
    sb_reset(&sb);
    pol_decision_text(&d, &sb);
    assert_non_null(strstr(sb.buf, "refusing to continue"));
    sb_reset(&j);
    pol_ruleset_to_json(rs, &j);
    rs2 = pol_ruleset_from_json(j.buf, j.len, &err);
    assert_non_null(rs2);
    assert_int_equal(pol_tool(rs2, "x", "echo", &d), 0);
    pol_ruleset_free(rs2);
    pol_ruleset_free(rs);
    assert_int_equal(pol_tool(NULL, "x", "echo", &d), 0);
    sb_release(&sb);
    sb_release(&j);
}

/* Acceptance scenarios, as far as policy decides them */
static void test_acceptance_scenarios(void **st)
{
    (void)st;
    struct pol_ruleset *rs =
        rs_of("[policy.tools]\n\"*\" = [\"!delete_*\", \"!*_admin\", \"!admin_*\"]\n",
              "[policy.tools]\nopsbox = [\"get_*\", \"list_*\", \"delete_everything\"]\n");
    const char *tools[] = {"get_status", "list_items", "delete_everything", "reset_admin", "run"};
    int allowed[] = {1, 1, 0, 0, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(pol_tool(rs, "opsbox", tools[i], NULL), allowed[i]);
    struct pol_decision d;
    pol_tool(rs, "opsbox", "delete_everything", &d);
    strbuf sb = SB_INIT;
    pol_decision_text(&d, &sb);
    assert_non_null(strstr(sb.buf, "!delete_*"));
    assert_non_null(strstr(sb.buf, "machine policy"));
    pol_ruleset_free(rs);
    /* ceiling attack: the repo re-allows, the machine still denies */
    rs = rs_of("[policy.secrets]\n\"*\" = [\"!TOK\"]\n[policy.egress]\n\"*\" = "
               "[\"!evil.example\"]\n",
               "[policy.secrets]\n\"*\" = [\"TOK\"]\nsrv = [\"TOK\"]\n[policy.egress]\n\"*\" = "
               "[\"evil.example\"]\nsrv = [\"*\"]\n");
    sb_reset(&sb);
    assert_int_equal(pol_secret(rs, "srv", "TOK", &d), 0);
    pol_decision_text(&d, &sb);
    assert_non_null(strstr(sb.buf, "machine policy"));
    assert_non_null(strstr(sb.buf, "!TOK"));
    assert_int_equal(pol_egress(rs, "srv", "evil.example", 0, &d), 0);
    assert_int_equal(d.by, POL_BY_MACHINE);
    pol_ruleset_free(rs);
    /* a repo-only deny still narrows */
    rs = rs_of(NULL, "[policy.secrets]\nsrv = [\"!TOK\"]\n");
    assert_int_equal(pol_secret(rs, "srv", "TOK", &d), 0);
    assert_int_equal(d.by, POL_BY_PROJECT);
    pol_ruleset_free(rs);
    /* machine rules keyed to other-server leave kibana untouched */
    rs = rs_of("[policy.tools]\nother-server = [\"!*\"]\n", NULL);
    assert_int_equal(pol_tool(rs, "kibana", "search", NULL), 1);
    assert_int_equal(pol_tool(rs, "other-server", "search", NULL), 0);
    pol_ruleset_free(rs);
    sb_release(&sb);
}

static void test_explain_rows(void **st)
{
    (void)st;
    struct pol_layer *m = layer(POL_MACHINE, "[policy.tools]\n\"*\" = [\"!delete_*\"]\nops = "
                                             "[\"get_*\", \"!x\"]\n[policy.egress]\nops = "
                                             "[\"api.example.com:443\"]\n");
    struct pol_layer *b = layer(POL_PROJECT, "[policy.tools]\nops = [\"get_*\", \"list_*\"]\n"
                                             "[policy.secrets]\n\"*\" = [\"!*\"]\n");
    strbuf sb = SB_INIT;
    pol_explain_rows(m, b, "ops", &sb);
    const char *want = "  Tool policy               allow only [get_*, list_*]\n"
                       "  Tool policy (machine)     allow only [get_*]; deny [x] — this project "
                       "cannot loosen it\n"
                       "  Tool policy (machine)     deny [delete_*] (via \"*\") — this project "
                       "cannot loosen it\n"
                       "  Secret access (policy)    deny [*] (via \"*\")\n"
                       "  Egress (machine)          allow only [api.example.com:443] — this "
                       "project cannot loosen it\n";
    assert_string_equal(sb.buf, want);
    strbuf why = SB_INIT;
    assert_string_equal(pol_machine_word(m, &why), "restrictive");
    assert_non_null(strstr(why.buf, "[policy.tools]"));
    sb_release(&why);
    sb_release(&sb);
    pol_layer_free(m);
    pol_layer_free(b);
    struct pol_layer *empty = pol_layer_new(POL_MACHINE, NULL);
    assert_string_equal(pol_machine_word(empty, NULL), "open");
    pol_layer_free(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row1_star_deny_is_rename_proof),
        cmocka_unit_test(test_row2_named_key_dodged_by_rename),
        cmocka_unit_test(test_row3_intersection),
        cmocka_unit_test(test_row4_both_layers_bound),
        cmocka_unit_test(test_row5_bounds_and_across_keys),
        cmocka_unit_test(test_row6_empty_list_and_deny_all),
        cmocka_unit_test(test_row7_project_deny_all),
        cmocka_unit_test(test_row8_denies_ignore_case),
        cmocka_unit_test(test_row9_no_secret_regrant),
        cmocka_unit_test(test_row10_egress_no_regrant),
        cmocka_unit_test(test_row11_port_pins),
        cmocka_unit_test(test_row12_malformed_egress),
        cmocka_unit_test(test_row13_fs_deny_union),
        cmocka_unit_test(test_row14_15_workspace_write),
        cmocka_unit_test(test_row16_home_expansion),
        cmocka_unit_test(test_fs_traversal_globs_refused),
        cmocka_unit_test(test_refusal_text_forms),
        cmocka_unit_test(test_host_tricks),
        cmocka_unit_test(test_egress_pattern_grammar),
        cmocka_unit_test(test_tool_and_secret_grammar),
        cmocka_unit_test(test_ten_thousand_rules),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_wire_spec_example_and_version),
        cmocka_unit_test(test_wire_deterministic),
        cmocka_unit_test(test_gateway_only_and_deny_all),
        cmocka_unit_test(test_acceptance_scenarios),
        cmocka_unit_test(test_explain_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
