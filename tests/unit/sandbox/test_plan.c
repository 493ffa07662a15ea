/* The run plan: identity, mounts, shadows, workspace refusals, the exact
 * command, the environment, egress decisions and argv display. */
#include <sys/stat.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "sandbox/plan.h"

static const struct sbx_mount *find(const struct sbx_plan *p, const char *dst)
{
    for (size_t i = 0; i < p->mounts.n; i++)
        if (!strcmp(p->mounts.v[i].dst, dst))
            return &p->mounts.v[i];
    return NULL;
}

static struct sbx_plan *build(const char *cwd, const char *bin, enum sbx_mode mode,
                              struct as_err *err)
{
    const char *args[] = {"-c", "echo hi", NULL};
    struct sbx_plan_request rq = {
        .mode = mode, .harness_id = "shtest", .harness_bin = bin, .args = args, .cwd = cwd};
    struct sbx_plan *p = NULL;
    if (sbx_plan_build(&rq, &p, err) < 0)
        return NULL;
    return p;
}

static void test_plan_basics(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "proj/.env", "TOKEN=x\n");
    free(f);
    f = tu_write(dir, "proj/.env.local", "X=1\n");
    free(f);
    f = tu_write(dir, "proj/real.secrets", "Y=1\n");
    free(f);
    f = tu_write(dir, "proj/.agentstack/.env.ci", "Z=1\n");
    free(f);
    f = tu_write(dir, "outside.env", "W=1\n");
    free(f);
    char proj[2048], link[4096], target[4096];
    snprintf(proj, sizeof proj, "%s/proj", dir);
    snprintf(link, sizeof link, "%s/.envrc", proj);
    assert_int_equal(symlink("real.secrets", link), 0);
    snprintf(link, sizeof link, "%s/.env.outside", proj);
    snprintf(target, sizeof target, "%s/outside.env", dir);
    assert_int_equal(symlink(target, link), 0);

    struct as_err err = AS_ERR_INIT;
    struct sbx_plan *p = build(proj, "/bin/sh", SBX_MODE_LOCKDOWN, &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_string_equal(p->posture_label, "LOCKDOWN / ENFORCED · NO DIRECT ROUTE");
    assert_string_equal(p->posture_slug, "lockdown");
    assert_int_equal(strlen(p->run_id), 12);
    assert_int_equal(strncmp(p->run_id, "r-", 2), 0);
    assert_int_equal(strlen(p->token), 64);
    assert_int_not_equal(p->inner_uid, 0);
    assert_int_not_equal(p->inner_gid, 0);
    assert_int_equal(p->outer_uid, geteuid());
    assert_int_equal(p->trust, SBX_TRUST_NO_PROJECT);
    assert_false(p->workspace_writable);
    assert_string_equal(p->argv.v[0], "/bin/sh");
    assert_string_equal(p->argv.v[2], "echo hi");
    assert_string_equal(p->cwd, "/workspace");
    assert_string_equal(p->proxy_host, "egress-proxy");
    assert_int_equal(p->proxy_port, 18080);

    const struct sbx_mount *m = find(p, "/workspace");
    assert_non_null(m);
    assert_int_equal(m->kind, SBX_MNT_RO_BIND);
    assert_non_null(find(p, "/proc"));
    assert_non_null(find(p, "/usr"));
    m = find(p, "/etc/passwd");
    assert_true(m && m->kind == SBX_MNT_FILE && strstr(m->data, "agent:x:"));
    assert_null(find(p, "/etc/shadow"));
    /* shadows: .env files, the manifest dir's, and a symlink's in-tree target */
    assert_true(find(p, "/workspace/.env") &&
                find(p, "/workspace/.env")->kind == SBX_MNT_EMPTY_FILE);
    assert_non_null(find(p, "/workspace/.env.local"));
    assert_non_null(find(p, "/workspace/.agentstack/.env.ci"));
    assert_non_null(find(p, "/workspace/real.secrets"));
    assert_null(find(p, "/workspace/.envrc"));       /* the link itself is not a mount point */
    assert_null(find(p, "/workspace/.env.outside")); /* its target is not mounted at all */
    /* Landlock write roots: never the read-only workspace */
    for (size_t i = 0; i < p->writable.n; i++)
        assert_string_not_equal(p->writable.v[i], "/workspace");

    strvec env = STRVEC_INIT;
    sbx_plan_env(p, 18080, &env);
    int proxies = 0, runid = 0;
    for (size_t i = 0; i < env.n; i++) {
        if (strstr(env.v[i], "_PROXY=http://agentstack:") ||
            strstr(env.v[i], "_proxy=http://agentstack:"))
            proxies += strstr(env.v[i], p->token) && strstr(env.v[i], "@egress-proxy:18080");
        runid += strncmp(env.v[i], "AGENTSTACK_RUN_ID=r-", 20) == 0;
        assert_null(strstr(env.v[i], "AGENTSTACK_HOME"));
    }
    assert_int_equal(proxies, 4);
    assert_int_equal(runid, 1);
    strvec_clear(&env);

    /* The banner never shows the token. */
    char *out = NULL;
    size_t outlen = 0;
    FILE *mf = open_memstream(&out, &outlen);
    sbx_plan_print(p, mf, 1);
    fclose(mf);
    assert_null(strstr(out, p->token));
    assert_non_null(strstr(out, "command: /bin/sh -c 'echo hi'\n"));
    assert_non_null(
        strstr(out, "🔒 no host route, no internet — the only peer is the egress proxy"));
    free(out);
    sbx_plan_free(p);
    tu_rmtree(dir);
}

static void test_plan_refuses_home(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    struct sbx_plan *p = build(getenv("HOME"), "/bin/sh", SBX_MODE_SANDBOX, &err);
    assert_null(p);
    p = build(dir, "/bin/sh", SBX_MODE_SANDBOX, &err); /* an ancestor of $HOME */
    assert_null(p);
    assert_non_null(strstr(err.msg, "home"));
    p = build("/", "/bin/sh", SBX_MODE_SANDBOX, &err);
    assert_null(p);
    tu_rmtree(dir);
}

static void test_plan_harness_prefix(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *tool = tu_write(dir, "opt/tool/bin/tool", "#!/bin/sh\n");
    chmod(tool, 0755);
    char *hbin = tu_write(dir, "home/bin/mine", "#!/bin/sh\n");
    chmod(hbin, 0755);
    char *f = tu_write(dir, "proj/x", "");
    free(f);
    char proj[4096], opt[4096], homebin[4096];
    snprintf(proj, sizeof proj, "%s/proj", dir);
    snprintf(opt, sizeof opt, "%s/opt/tool", dir);
    snprintf(homebin, sizeof homebin, "%s/home/bin", dir);
    struct as_err err = AS_ERR_INIT;
    struct sbx_plan *p = build(proj, tool, SBX_MODE_SANDBOX, &err);
    if (!p)
        fail_msg("%s", err.msg);
    const struct sbx_mount *m = find(p, opt);
    assert_true(m && m->kind == SBX_MNT_RO_BIND);
    assert_string_equal(p->argv.v[0], tool);
    assert_string_equal(p->posture_label, "SANDBOX / PROXIED · DIRECT ROUTE OPEN");
    assert_string_equal(p->proxy_host, "127.0.0.1");
    sbx_plan_free(p);
    /* a program in $HOME/bin: never the whole home, only its directory */
    p = build(proj, hbin, SBX_MODE_SANDBOX, &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_null(find(p, getenv("HOME")));
    assert_non_null(find(p, homebin));
    sbx_plan_free(p);
    free(tool);
    free(hbin);
    tu_rmtree(dir);
}

static void test_plan_decide(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "home/.agentstack/agentstack.toml",
                       "version = 1\n[policy.egress]\n\"*\" = [\"!blocked.invalid\"]\n"
                       "shtest = [\"!*:22\"]\n");
    free(f);
    f = tu_write(dir, "proj/x", "");
    free(f);
    char proj[4096];
    snprintf(proj, sizeof proj, "%s/proj", dir);
    struct as_err err = AS_ERR_INIT;
    struct sbx_plan *p = build(proj, "/bin/sh", SBX_MODE_SANDBOX, &err);
    if (!p)
        fail_msg("%s", err.msg);
    struct sbx_verdict v;
    sbx_plan_decide(p, "shtest", "blocked.invalid", 443, &v);
    assert_false(v.allowed);
    assert_string_equal(v.layer, "machine");
    assert_string_equal(v.pattern, "!blocked.invalid");
    assert_string_equal(v.brief, "denied by rule \"!blocked.invalid\" (machine policy)");
    assert_non_null(strstr(v.rule, "[policy.egress]"));
    sbx_plan_decide(p, "shtest", "api.example.com", 22, &v);
    assert_false(v.allowed);
    sbx_plan_decide(p, "shtest", "api.example.com", 443, &v);
    assert_true(v.allowed);
    assert_string_equal(v.layer, "default");
    sbx_plan_free(p);
    tu_rmtree(dir);
}

static void test_argv_display(void **st)
{
    (void)st;
    const char *a[] = {"/usr/bin/sh", "-c", "echo 'hi'; x", "", "a=b,c", NULL};
    strbuf out = SB_INIT;
    sbx_argv_display(a, &out);
    assert_string_equal(out.buf, "/usr/bin/sh -c 'echo '\\''hi'\\''; x' '' a=b,c");
    sb_release(&out);
}

/* ---- host modes ---------------------------------------------------------------------- */

static int resolved_calls;
static char resolved_root[4096];

static int fake_resolve(void *ctx, const char *project_root, strbuf *path, strbuf *scope,
                        strbuf *note, struct as_err *err)
{
    (void)ctx;
    (void)note;
    (void)err;
    resolved_calls++;
    snprintf(resolved_root, sizeof resolved_root, "%s", project_root ? project_root : "");
    sb_addf(path, "%s/.fake.json", project_root);
    sb_adds(scope, "project");
    return 0;
}

static const struct sbx_gate *gate_named(const struct sbx_plan *p, const char *name)
{
    for (size_t i = 0; i < p->gates.n; i++)
        if (!strcmp(p->gates.v[i].name, name))
            return &p->gates.v[i];
    return NULL;
}

static struct sbx_plan *build_host(const char *cwd, const char *toolset, struct as_err *err)
{
    const char *args[] = {"x", NULL};
    struct sbx_plan_request rq = {.mode = SBX_MODE_HOST,
                                  .harness_id = "fakecli",
                                  .harness_bin = "/bin/sh",
                                  .args = args,
                                  .cwd = cwd,
                                  .toolset = toolset,
                                  .harness_for = "fakecli",
                                  .self_bin = "/bin/true",
                                  .inject_resolve = fake_resolve};
    struct sbx_plan *p = NULL;
    if (sbx_plan_build(&rq, &p, err) < 0)
        return NULL;
    return p;
}

static void test_plan_host(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "proj/.agentstack/agentstack.toml",
                       "version = 1\n\n[servers.a]\ntype = \"stdio\"\ncommand = \"a\"\n"
                       "env = { T = \"${API_TOKEN}\" }\n\n[servers.b]\ntype = \"http\"\n"
                       "url = \"https://b.example/mcp\"\n\n[toolsets.one]\nservers = [\"a\"]\n"
                       "harness = \"other\"\n\n[toolsets.two]\nservers = [\"b\"]\n");
    free(f);
    char proj[2048];
    snprintf(proj, sizeof proj, "%s/proj", dir);
    struct as_err err = AS_ERR_INIT;

    /* Untrusted: every gate is still evaluated; trust blocks. */
    resolved_calls = 0;
    struct sbx_plan *p = build_host(proj, "two", &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_string_equal(p->posture_label, "HOST / PROTECTED");
    assert_string_equal(p->posture_slug, "host-protected");
    assert_int_equal(p->gates.n, 9);
    assert_string_equal(p->gates.v[0].name, "trust");
    assert_false(p->gates.v[0].passed);
    assert_int_equal(p->blockers, 1);
    assert_int_equal(p->mounts.n, 0);
    assert_int_equal(resolved_calls, 1);
    assert_string_equal(resolved_root, p->project_root);
    assert_non_null(strstr(p->inject_path, "/proj/.fake.json"));
    assert_string_equal(p->inject_argv.v[0], "/bin/true");
    assert_string_equal(p->inject_argv.v[2], "--grant");
    assert_string_equal(p->inject_argv.v[3], p->grant_path);
    assert_string_equal(p->toolset, "two");
    assert_int_equal(p->fence_servers.n, 1);
    assert_string_equal(p->fence_servers.v[0], "b");
    json_t *servers = json_object_get(p->grant, "servers");
    assert_non_null(json_object_get(servers, "b"));
    assert_null(json_object_get(servers, "a")); /* outside the fence */
    assert_string_equal(p->argv.v[0], "/bin/sh");
    assert_string_equal(p->host_cwd, p->project_root);
    sbx_plan_free(p);

    /* A toolset for another harness is a model-effort blocker; its ${REF}
     * stays a reference in the grant. */
    setenv("API_TOKEN", "sekrit-value", 1);
    p = build_host(proj, "one", &err);
    assert_non_null(p);
    assert_false(gate_named(p, "model-effort")->passed);
    char *g = json_dumps(p->grant, 0);
    assert_non_null(strstr(g, "${API_TOKEN}"));
    assert_null(strstr(g, "sekrit-value"));
    free(g);
    sbx_plan_free(p);
    unsetenv("API_TOKEN");

    /* An unknown toolset is a refusal, not a gate. */
    assert_null(build_host(proj, "nope", &err));
    assert_non_null(strstr(err.msg, "no toolset 'nope'"));
    assert_non_null(strstr(err.hint, "one, two"));

    /* No project: trust blocks, nothing to freeze. */
    char lone[2048];
    snprintf(lone, sizeof lone, "%s/lone", dir);
    assert_int_equal(mkdir(lone, 0755), 0);
    p = build_host(lone, NULL, &err);
    assert_non_null(p);
    assert_false(gate_named(p, "trust")->passed);
    assert_false(gate_named(p, "grant-freeze")->passed);
    assert_null(p->grant);
    sbx_plan_free(p);

    /* --unprotected: no gates at all. */
    const char *args[] = {NULL};
    struct sbx_plan_request rq = {.mode = SBX_MODE_HOST_ADVISORY,
                                  .harness_id = "fakecli",
                                  .harness_bin = "/bin/sh",
                                  .args = args,
                                  .cwd = proj};
    assert_int_equal(sbx_plan_build(&rq, &p, &err), 0);
    assert_string_equal(p->posture_label, "HOST / ADVISORY");
    assert_int_equal(p->gates.n, 0);
    assert_null(p->grant);
    sbx_plan_free(p);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_basics),         cmocka_unit_test(test_plan_refuses_home),
        cmocka_unit_test(test_plan_harness_prefix), cmocka_unit_test(test_plan_decide),
        cmocka_unit_test(test_argv_display),        cmocka_unit_test(test_plan_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
