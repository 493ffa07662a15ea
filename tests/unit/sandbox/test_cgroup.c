/* The per-execution cgroup (sandbox/cgroup.h; docs/tools-execute.md,
 * "Enforcement matrix").
 *
 * On a fake cgroupfs root (a temp dir): detection picks v2 only when our
 * cgroup delegates memory and pids, v1 when both hierarchies hold our
 * cgroup, else none (rlimits alone, nothing created); a usable cgroup
 * whose limit file cannot be written refuses (fail closed) and leaves no
 * directory behind; a name already there is refused.
 *
 * On this machine's real cgroups (root only; CI runs as root): a child
 * moved in before it runs is OOM-killed allocating 200 MiB under a 64 MiB
 * limit (no rlimit is set on it; every limit reads back as written), a fork loop stops at pids.max,
 * and after each test no directory of ours is left in any hierarchy. Each check fails if its limit
 * is not written or the process is not moved in. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "sandbox/cgroup.h"

static void mk(const char *dir, const char *rel, const char *text)
{
    free(tu_write(dir, rel, text));
}

static char *path_of(const char *dir, const char *rel)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, rel) > 0);
    return p;
}

static void test_detect_v1(void **st)
{
    (void)st;
    char *root = tu_tmpdir();
    mk(root, "memory/a/b/cgroup.procs", "");
    mk(root, "pids/cgroup.procs", "");
    mk(root, "cpu/cgroup.procs", "");
    mk(root, "unified/cgroup.controllers", "\n"); /* a hybrid host's empty v2 */
    const char *self = "9:name=systemd:/\n8:pids:/\n4:memory:/a/b\n1:cpu,cpuacct:/\n0::/\n";
    struct sbx_cgroup cg;
    char why[256];
    assert_int_equal(sbx_cgroup_detect(root, self, &cg, why, sizeof why), SBX_CGROUP_V1);
    char *want = path_of(root, "memory/a/b");
    assert_string_equal(cg.dir[0], want);
    free(want);
    want = path_of(root, "pids");
    assert_string_equal(cg.dir[1], want);
    free(want);
    want = path_of(root, "cpu");
    assert_string_equal(cg.dir[2], want);
    free(want);
    assert_string_equal(sbx_cgroup_mechanism(&cg), "cgroup-v1");
    sbx_cgroup_clear(&cg);
    /* No pids hierarchy: not usable, and it says why. */
    assert_int_equal(sbx_cgroup_detect(root, "4:memory:/a/b\n0::/\n", &cg, why, sizeof why),
                     SBX_CGROUP_NONE);
    assert_non_null(strstr(why, "memory and pids"));
    assert_string_equal(sbx_cgroup_mechanism(&cg), "rlimit");
    tu_rmtree(root);
}

static void test_detect_v2(void **st)
{
    (void)st;
    char *root = tu_tmpdir();
    mk(root, "cgroup.controllers", "cpuset cpu io memory pids\n");
    mk(root, "svc/cgroup.controllers", "cpu memory pids\n");
    mk(root, "svc/cgroup.subtree_control", "memory pids\n");
    struct sbx_cgroup cg;
    char why[256];
    assert_int_equal(sbx_cgroup_detect(root, "0::/svc\n", &cg, why, sizeof why), SBX_CGROUP_V2);
    char *want = path_of(root, "svc");
    assert_string_equal(cg.dir[0], want);
    free(want);
    assert_null(cg.dir[1]);
    assert_string_equal(sbx_cgroup_mechanism(&cg), "cgroup-v2");
    sbx_cgroup_clear(&cg);
    /* memory present but not delegated to children: not usable. */
    mk(root, "svc/cgroup.subtree_control", "pids\n");
    assert_int_equal(sbx_cgroup_detect(root, "0::/svc\n", &cg, why, sizeof why), SBX_CGROUP_NONE);
    assert_non_null(strstr(why, "delegate"));
    /* No cgroup at all: nothing is created, the caller keeps its rlimits. */
    char *empty = tu_tmpdir();
    struct sbx_cgroup *made = (void *)1;
    struct as_err err = AS_ERR_INIT;
    struct sbx_cgroup_limits l = {64ull << 20, 16, 1};
    assert_int_equal(sbx_cgroup_create(empty, "0::/\n", "as-t", &l, &made, &err), 0);
    assert_null(made);
    char *p = path_of(empty, "as-t");
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);
    tu_rmtree(empty);
    tu_rmtree(root);
}

/* Usable, but the new cgroup has no limit file to write (a fake cgroupfs
 * makes none): refused, with the file named, and nothing left behind. */
static void test_unwritable_limit_refuses(void **st)
{
    (void)st;
    struct sbx_cgroup_limits l = {64ull << 20, 16, 1};
    struct as_err err = AS_ERR_INIT;
    struct sbx_cgroup *made = NULL;

    char *v1 = tu_tmpdir();
    mk(v1, "memory/cgroup.procs", "");
    mk(v1, "pids/cgroup.procs", "");
    assert_int_equal(sbx_cgroup_create(v1, "8:pids:/\n4:memory:/\n", "as-t", &l, &made, &err), -1);
    assert_null(made);
    assert_non_null(strstr(err.msg, "memory.limit_in_bytes"));
    char *p = path_of(v1, "memory/as-t");
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);
    p = path_of(v1, "pids/as-t");
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);
    /* A name already there is never reused. */
    p = path_of(v1, "pids/as-u");
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
    as_err_clear(&err);
    assert_int_equal(sbx_cgroup_create(v1, "8:pids:/\n4:memory:/\n", "as-u", &l, &made, &err), -1);
    assert_non_null(strstr(err.msg, "cannot create"));
    p = path_of(v1, "memory/as-u");
    assert_int_not_equal(access(p, F_OK), 0); /* the half made is removed */
    free(p);
    tu_rmtree(v1);

    char *v2 = tu_tmpdir();
    mk(v2, "cgroup.controllers", "memory pids\n");
    mk(v2, "cgroup.subtree_control", "memory pids\n");
    as_err_clear(&err);
    assert_int_equal(sbx_cgroup_create(v2, "0::/\n", "as-t", &l, &made, &err), -1);
    assert_non_null(strstr(err.msg, "memory.max"));
    p = path_of(v2, "as-t");
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);
    tu_rmtree(v2);
}

/* ---- this machine's cgroups ----------------------------------------------------- */

static char self_text[4096];
/* The test's cgroup while it runs: removed by the teardown even when an
 * assertion ends the test early, so no directory of ours stays behind. */
static struct sbx_cgroup *current;

static int teardown_cgroup(void **st)
{
    (void)st;
    if (current) {
        (void)sbx_cgroup_destroy(current, NULL);
        current = NULL;
    }
    return 0;
}

/* A real cgroup here, or a loud skip (a failure under CI=true). */
static struct sbx_cgroup *real_cgroup(const char *name, const struct sbx_cgroup_limits *l)
{
    if (geteuid() != 0)
        tu_skip("the cgroup attacks need root (CI runs them as root)");
    FILE *f = fopen(SBX_CGROUP_SELF, "r");
    assert_non_null(f);
    size_t n = fread(self_text, 1, sizeof self_text - 1, f);
    self_text[n] = '\0';
    fclose(f);
    struct sbx_cgroup probe;
    char why[256];
    if (sbx_cgroup_detect(SBX_CGROUP_ROOT, self_text, &probe, why, sizeof why) == SBX_CGROUP_NONE)
        tu_skip("no writable cgroup here");
    sbx_cgroup_clear(&probe);
    struct sbx_cgroup *cg = NULL;
    struct as_err err = AS_ERR_INIT;
    if (sbx_cgroup_create_here(name, l, &cg, &err) < 0)
        fail_msg("create: %s", err.msg);
    assert_non_null(cg);
    current = cg;
    return cg;
}

/* Destroys cg and checks that none of its directories is left. */
static void gone(struct sbx_cgroup *cg)
{
    char *dirs[SBX_CGROUP_DIRS];
    for (int i = 0; i < SBX_CGROUP_DIRS; i++)
        dirs[i] = cg->dir[i] ? strdup(cg->dir[i]) : NULL;
    struct as_err err = AS_ERR_INIT;
    current = NULL;
    assert_int_equal(sbx_cgroup_destroy(cg, &err), 0);
    for (int i = 0; i < SBX_CGROUP_DIRS; i++) {
        if (dirs[i])
            assert_int_not_equal(access(dirs[i], F_OK), 0);
        free(dirs[i]);
    }
}

/* Forks a child that waits until it is in cg, then runs body. */
static pid_t child_in(struct sbx_cgroup *cg, void (*body)(void))
{
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(90);
        body();
        _exit(0);
    }
    close(go[0]);
    struct as_err err = AS_ERR_INIT;
    if (sbx_cgroup_attach(cg, pid, &err) < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("attach: %s", err.msg);
    }
    assert_int_equal(write(go[1], "g", 1), 1);
    close(go[1]);
    return pid;
}

static void allocate_200_mib(void)
{
    size_t n = 200u << 20;
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(91);
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1; /* touched: charged to the cgroup */
    _exit(0);
}

/* The first line of dir/file, or "" when it cannot be read. */
static void first_line(const char *dir, const char *file, char *buf, size_t n)
{
    char *p = path_of(dir, file);
    int fd = open(p, O_RDONLY); /* a control file: its size reads as 0 */
    free(p);
    ssize_t got = fd >= 0 ? read(fd, buf, n - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[got > 0 ? got : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

static void test_memory_bomb_is_killed(void **st)
{
    (void)st;
    struct sbx_cgroup_limits l = {64ull << 20, 64, 1};
    char name[64];
    snprintf(name, sizeof name, "agentstack-unit-mem-%d", (int)getpid());
    struct sbx_cgroup *cg = real_cgroup(name, &l);
    /* Every limit is in place, as the kernel reads it back. */
    char v[128];
    if (cg->kind == SBX_CGROUP_V1) {
        first_line(cg->dir[0], "memory.limit_in_bytes", v, sizeof v);
        assert_string_equal(v, "67108864");
        first_line(cg->dir[1], "pids.max", v, sizeof v);
        assert_string_equal(v, "64");
        if (cg->dir[2]) { /* 1 CPU: one period's worth of quota */
            first_line(cg->dir[2], "cpu.cfs_quota_us", v, sizeof v);
            assert_string_equal(v, "100000");
            first_line(cg->dir[2], "cpu.cfs_period_us", v, sizeof v);
            assert_string_equal(v, "100000");
        }
    } else {
        first_line(cg->dir[0], "memory.max", v, sizeof v);
        assert_string_equal(v, "67108864");
        first_line(cg->dir[0], "pids.max", v, sizeof v);
        assert_string_equal(v, "64");
    }
    pid_t pid = child_in(cg, allocate_200_mib);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL); /* the OOM killer, not an exit */
    assert_int_equal(sbx_cgroup_oom_killed(cg), 1);
    gone(cg);
}

static void fork_loop(void)
{
    int made = 0;
    for (int i = 0; i < 64; i++) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0)
            break;
        made++;
    }
    _exit(made); /* the children stay: destroy must kill them */
}

static void test_fork_bomb_stops_at_pids_max(void **st)
{
    (void)st;
    struct sbx_cgroup_limits l = {256ull << 20, 8, 1};
    char name[64];
    snprintf(name, sizeof name, "agentstack-unit-pids-%d", (int)getpid());
    struct sbx_cgroup *cg = real_cgroup(name, &l);
    pid_t pid = child_in(cg, fork_loop);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    /* 8 tasks: the loop itself and 7 children; the 8th fork fails. */
    assert_int_equal(WEXITSTATUS(status), 7);
    gone(cg); /* and the 7 left paused are killed with it */
}

/* Without the cgroup the same bomb runs to completion: the kill above is
 * the cgroup's, not something else of this machine's. */
static void test_memory_bomb_runs_without_it(void **st)
{
    (void)st;
    if (geteuid() != 0)
        tu_skip("the cgroup attacks need root (CI runs them as root)");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        allocate_200_mib();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_v1),
        cmocka_unit_test(test_detect_v2),
        cmocka_unit_test(test_unwritable_limit_refuses),
        cmocka_unit_test_teardown(test_memory_bomb_is_killed, teardown_cgroup),
        cmocka_unit_test_teardown(test_fork_bomb_stops_at_pids_max, teardown_cgroup),
        cmocka_unit_test(test_memory_bomb_runs_without_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
