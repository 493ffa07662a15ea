/* The clean-at-rest API `run <cli> --profile` uses: inject activates the
 * toolset and records the launcher; revert puts every byte back; recover
 * finishes the revert when the launcher died, and never touches a run whose
 * launcher is alive or a hand-started session. A launcher that exited but
 * was not reaped yet (a zombie) is dead, not alive. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapters/engine.h"

static const char *MACHINE = "version = 1\n"
                             "[servers.notes]\n"
                             "type = \"stdio\"\n"
                             "command = \"notes-mcp\"\n"
                             "[toolsets.dev]\n"
                             "servers = [\"notes\"]\n";
static const char *BEFORE = "{\"numStartups\": 7}\n";

struct fx {
    char *root;
    char *cfg;
    struct adp_registry reg;
    struct manifest *m;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    f->root = tu_tmpdir();
    char *home = NULL; /* tu_tmpdir made <root>/home */
    assert_true(asprintf(&home, "%s/home", f->root) > 0);
    setenv("HOME", home, 1);
    char ah[4096];
    snprintf(ah, sizeof ah, "%s/.agentstack", home);
    setenv("AGENTSTACK_HOME", ah, 1);
    unsetenv("XDG_CONFIG_HOME");
    f->cfg = tu_write(home, ".claude.json", BEFORE);
    free(home);
    struct as_err e = AS_ERR_INIT;
    if (adp_registry_load(&f->reg, false, &e) != 0)
        fail_msg("registry: %s", e.msg);
    struct manifest_source src = {MANIFEST_MACHINE,
                                  "/m/agentstack.toml",
                                  MACHINE,
                                  strlen(MACHINE),
                                  NULL,
                                  NULL,
                                  0,
                                  NULL,
                                  NULL};
    f->m = manifest_load_bytes(&src, &e);
    if (!f->m)
        fail_msg("manifest: %s", e.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    manifest_free(f->m);
    adp_registry_free(&f->reg);
    tu_rmtree(f->root);
    free(f->cfg);
    free(f);
    return 0;
}

static int inject(struct fx *f, FILE *out, struct as_err *e)
{
    strvec targets = STRVEC_INIT;
    strvec_push(&targets, "claude-code");
    struct adp_apply_opts o = {
        .m = f->m,
        .manifest_path = "/m/agentstack.toml",
        .targets = &targets,
        .toolset = "dev",
        .operation = "run claude-code --profile dev",
        .out = out,
    };
    int rc = adp_run_inject(&f->reg, &o, "/m", "run-1", e);
    strvec_clear(&targets);
    return rc;
}

static char *cfg_text(struct fx *f)
{
    size_t n;
    char *t = tu_read(f->cfg, &n);
    return t ? t : strdup("<missing>");
}

static void inject_revert(void **state)
{
    struct fx *f = *state;
    FILE *out = fopen("/dev/null", "w");
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(inject(f, out, &e), 0);
    char *t = cfg_text(f);
    assert_non_null(strstr(t, "\"notes\""));
    free(t);
    /* The launcher (this process) is alive: recover leaves the run alone. */
    size_t n = 99;
    assert_int_equal(adp_run_recover(out, &n, &e), 0);
    assert_int_equal(n, 0);
    t = cfg_text(f);
    assert_non_null(strstr(t, "\"notes\""));
    free(t);
    /* A second inject in the same place refuses. */
    struct as_err e2 = AS_ERR_INIT;
    assert_int_equal(inject(f, out, &e2), 1);
    assert_non_null(strstr(e2.msg, "already active"));
    assert_int_equal(adp_run_revert("/m", out, &e), 0);
    t = cfg_text(f);
    assert_string_equal(t, BEFORE);
    free(t);
    fclose(out);
}

static void crashed_launcher_recovered(void **state)
{
    struct fx *f = *state;
    FILE *out = fopen("/dev/null", "w");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct as_err e = AS_ERR_INIT;
        /* inject, then die without reverting (a crash or SIGKILL) */
        _exit(inject(f, out, &e) == 0 ? 0 : 3);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *t = cfg_text(f);
    assert_non_null(strstr(t, "\"notes\""));
    free(t);
    size_t n = 0;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_run_recover(out, &n, &e), 0);
    assert_int_equal(n, 1);
    t = cfg_text(f);
    assert_string_equal(t, BEFORE);
    free(t);
    /* Nothing left to recover; a new run can start. */
    assert_int_equal(adp_run_recover(out, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_int_equal(inject(f, out, &e), 0);
    assert_int_equal(adp_run_revert("/m", out, &e), 0);
    fclose(out);
}

static void zombie_launcher_recovered(void **state)
{
    struct fx *f = *state;
    FILE *out = fopen("/dev/null", "w");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct as_err e = AS_ERR_INIT;
        _exit(inject(f, out, &e) == 0 ? 0 : 3);
    }
    /* Wait for the exit without reaping: the launcher stays a zombie, its
     * /proc/<pid>/stat still there with the same start time. */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    assert_int_equal(si.si_status, 0);
    char *t = cfg_text(f);
    assert_non_null(strstr(t, "\"notes\""));
    free(t);
    size_t n = 0;
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_run_recover(out, &n, &e), 0);
    assert_int_equal(n, 1);
    t = cfg_text(f);
    assert_string_equal(t, BEFORE);
    free(t);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    fclose(out);
}

static void hand_session_never_recovered(void **state)
{
    struct fx *f = *state;
    FILE *out = fopen("/dev/null", "w");
    strvec targets = STRVEC_INIT;
    strvec_push(&targets, "claude-code");
    struct adp_apply_opts o = {.m = f->m,
                               .manifest_path = "/m/agentstack.toml",
                               .targets = &targets,
                               .toolset = "dev",
                               .out = out};
    struct as_err e = AS_ERR_INIT;
    assert_int_equal(adp_session_start(&f->reg, &o, "/m", &e), 0);
    size_t n = 9;
    assert_int_equal(adp_run_recover(out, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_int_equal(adp_session_end("/m", false, out, &e), 0);
    char *t = cfg_text(f);
    assert_string_equal(t, BEFORE);
    free(t);
    strvec_clear(&targets);
    fclose(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(inject_revert, setup, teardown),
        cmocka_unit_test_setup_teardown(crashed_launcher_recovered, setup, teardown),
        cmocka_unit_test_setup_teardown(zombie_launcher_recovered, setup, teardown),
        cmocka_unit_test_setup_teardown(hand_session_never_recovered, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
