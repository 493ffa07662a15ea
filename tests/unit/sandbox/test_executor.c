/* The tools_execute executor's confinement, attacked from inside, beneath
 * Node's permission model (docs/tools-execute.md, "Enforcement matrix"): a
 * shell started in exactly the executor's view and limits
 * (sbx_executor_spawn) tries to write the root file system (/, /usr, /etc,
 * /app, the home), to run a binary it copied to /tmp or /dev/shm, to fill
 * /tmp past its 16 MiB, and to write past the 4 MiB file-size limit. The
 * one file it may write is the result file. Each check fails if its layer
 * (the read-only root and binds, the noexec scratch, the tmpfs size,
 * RLIMIT_FSIZE) is removed. Where the machine has a writable cgroup, the
 * executor's cgroup bounds what RLIMIT_DATA does not see (tmpfs pages). */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "sandbox/executor.h"
#include "sandbox/ns.h"

static int userns_ok(void)
{
    struct as_err err = AS_ERR_INIT;
    return sbx_ns_probe(&err) == 0;
}

static void drain(int fd, strbuf *out)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        sb_add(out, buf, (size_t)n);
}

/* Runs sh -c script as the executor would run Node, with limits l (NULL:
 * the defaults) in cgroup cg (NULL: none); its exit status, its stdout in
 * out. dir holds the staged app/ and result.json. */
static int executor_sh_in(const char *dir, const char *script, const struct sbx_executor_limits *l,
                          const struct sbx_cgroup *cg, strbuf *out)
{
    char app[2048], result[2048];
    snprintf(app, sizeof app, "%s/app", dir);
    snprintf(result, sizeof result, "%s/result.json", dir);
    struct sbx_executor_request rq = {
        .node = "/bin/sh", .app_dir = app, .result_file = result, .cgroup = cg};
    sbx_executor_default_limits(15000, &rq.limits);
    if (l)
        rq.limits = *l;
    const char *const argv[] = {"/bin/sh", "-c", script, NULL};
    struct sbx_jail_proc p;
    struct as_err err = AS_ERR_INIT;
    if (sbx_executor_spawn(&rq, argv, &p, &err) < 0)
        fail_msg("spawn: %s", err.msg);
    close(p.in_fd);
    p.in_fd = -1;
    drain(p.out_fd, out);
    strbuf errs = SB_INIT;
    drain(p.err_fd, &errs);
    sb_release(&errs);
    int st = 0;
    assert_int_equal(waitpid(p.pid, &st, 0), p.pid);
    sbx_jail_proc_close(&p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int executor_sh(const char *dir, const char *script, strbuf *out)
{
    return executor_sh_in(dir, script, NULL, NULL, out);
}

/* A staged app/ (readable by the service uid) and a result file it owns. */
static char *stage(void)
{
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "app/source.ts", "export default 1;\n");
    free(f);
    char p[2048];
    snprintf(p, sizeof p, "%s/app", dir);
    assert_int_equal(chmod(p, 0755), 0);
    snprintf(p, sizeof p, "%s/app/source.ts", dir);
    assert_int_equal(chmod(p, 0644), 0);
    snprintf(p, sizeof p, "%s/result.json", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    if (geteuid() == 0)
        assert_int_equal(fchown(fd, SBX_JAIL_SERVICE_UID, SBX_JAIL_SERVICE_UID), 0);
    close(fd);
    return dir;
}

static void test_root_is_read_only(void **st)
{
    (void)st;
    if (!userns_ok())
        tu_skip("no unprivileged user namespaces here");
    char *dir = stage();
    const char *script = "for d in / /usr /usr/bin /bin /etc /app /root /var /proc/sys/kernel; do "
                         "  (echo x > $d/as-pwn) 2>/dev/null && echo \"WROTE $d\"; "
                         "done; "
                         "(echo x > /app/source.ts) 2>/dev/null && echo 'WROTE /app/source.ts'; "
                         "mkdir /as-dir 2>/dev/null && echo 'MKDIR /'; "
                         "mkdir /usr/as-dir 2>/dev/null && echo 'MKDIR /usr'; "
                         "rm -f /bin/sh 2>/dev/null; [ -e /bin/sh ] || echo 'REMOVED /bin/sh'; "
                         "touch /etc/passwd 2>/dev/null && echo 'TOUCHED /etc/passwd'; "
                         "echo '{\"ok\":1}' > /agentstack-result.json && echo RESULT-OK; "
                         "id -u";
    strbuf out = SB_INIT;
    assert_int_equal(executor_sh(dir, script, &out), 0);
    assert_null(strstr(out.buf, "WROTE"));   /* the read-only root and binds */
    assert_null(strstr(out.buf, "MKDIR"));   /* ... no new entries either */
    assert_null(strstr(out.buf, "REMOVED")); /* ... nor removed ones */
    assert_null(strstr(out.buf, "TOUCHED"));
    assert_non_null(strstr(out.buf, "RESULT-OK")); /* the one writable file */
    assert_non_null(strstr(out.buf, "\n65532\n")); /* as the service uid */
    char p[2048];
    snprintf(p, sizeof p, "%s/app/as-pwn", dir);
    assert_int_not_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/app/source.ts", dir);
    char *src = tu_read(p, NULL);
    assert_string_equal(src, "export default 1;\n"); /* the staged program is intact */
    free(src);
    snprintf(p, sizeof p, "%s/result.json", dir);
    char *res = tu_read(p, NULL);
    assert_string_equal(res, "{\"ok\":1}\n"); /* the write landed in the result file */
    free(res);
    sb_release(&out);
    tu_rmtree(dir);
}

static void test_scratch_executes_nothing(void **st)
{
    (void)st;
    if (!userns_ok())
        tu_skip("no unprivileged user namespaces here");
    char *dir = stage();
    const char *script =
        "echo x > /tmp/f && echo TMP-WRITE; "
        "cp /bin/true /tmp/t && chmod 0755 /tmp/t && echo TMP-COPIED; "
        "/tmp/t 2>/dev/null && echo TMP-EXEC; "
        "cp /bin/true /dev/shm/t && chmod 0755 /dev/shm/t && echo SHM-COPIED; "
        "/dev/shm/t 2>/dev/null && echo SHM-EXEC; "
        "printf '#!/bin/sh\\necho SCRIPT-RAN\\n' > /tmp/s.sh && chmod 0755 /tmp/s.sh; "
        "/tmp/s.sh 2>/dev/null; "
        "i=0; while [ $i -lt 8 ]; do "
        "  head -c 3145728 /dev/zero > /tmp/fill$i 2>/dev/null || { echo TMP-FULL; break; }; "
        "  i=$((i+1)); "
        "done; echo FILLED $i";
    strbuf out = SB_INIT;
    assert_int_equal(executor_sh(dir, script, &out), 0);
    assert_non_null(strstr(out.buf, "TMP-WRITE"));  /* scratch is writable ... */
    assert_non_null(strstr(out.buf, "TMP-COPIED")); /* (the copy did land) */
    assert_null(strstr(out.buf, "TMP-EXEC"));       /* ... and noexec */
    assert_non_null(strstr(out.buf, "SHM-COPIED"));
    assert_null(strstr(out.buf, "SHM-EXEC"));
    assert_null(strstr(out.buf, "SCRIPT-RAN"));
    /* 16 MiB: five 3 MiB files fit, the sixth does not. */
    assert_non_null(strstr(out.buf, "TMP-FULL"));
    assert_non_null(strstr(out.buf, "FILLED 5"));
    sb_release(&out);
    tu_rmtree(dir);
}

static void test_file_size_limit(void **st)
{
    (void)st;
    if (!userns_ok())
        tu_skip("no unprivileged user namespaces here");
    char *dir = stage();
    /* head is killed by SIGXFSZ (exit 128 + 25) at the 4 MiB limit. */
    const char *script = "head -c 5242880 /dev/zero > /agentstack-result.json; echo FSIZE $?; "
                         "head -c 5242880 /dev/zero > /tmp/big; echo TMP-FSIZE $?";
    strbuf out = SB_INIT;
    assert_int_equal(executor_sh(dir, script, &out), 0);
    char want[64];
    snprintf(want, sizeof want, "FSIZE %d\n", 128 + SIGXFSZ);
    assert_non_null(strstr(out.buf, want));
    snprintf(want, sizeof want, "TMP-FSIZE %d\n", 128 + SIGXFSZ);
    assert_non_null(strstr(out.buf, want));
    char p[2048];
    snprintf(p, sizeof p, "%s/result.json", dir);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_true(sb.st_size <= 4 << 20); /* nothing past the limit reached the host */
    /* The program itself, killed by the signal: its status says so. */
    sb_reset(&out);
    int code = executor_sh(dir, "exec head -c 5242880 /dev/zero > /agentstack-result.json", &out);
    assert_int_equal(code, 128 + SIGXFSZ);
    sb_release(&out);
    tu_rmtree(dir);
}

/* How many lines of out are exactly "W". */
static int wrote(const strbuf *out)
{
    int n = 0;
    for (const char *s = out->buf; (s = strstr(s, "W\n")); s += 2)
        if (s == out->buf || s[-1] == '\n')
            n++;
    return n;
}

/* tmpfs pages are no process's data segment: RLIMIT_DATA does not see
 * them, the cgroup does. Ten 3 MiB files (five in /tmp, five in
 * /dev/shm) all land under a 24 MiB RLIMIT_DATA alone; in the executor's
 * cgroup at 24 MiB they do not, its OOM killer reports the kill, and the
 * cgroup is gone afterwards. Needs root and a writable cgroup (CI has
 * both). */
static void test_cgroup_bounds_tmpfs(void **st)
{
    (void)st;
    if (!userns_ok())
        tu_skip("no unprivileged user namespaces here");
    if (geteuid() != 0)
        tu_skip("the cgroup attack needs root (CI runs it as root)");
    struct sbx_executor_limits l;
    sbx_executor_default_limits(15000, &l);
    l.memory_bytes = 24ull << 20;
    const char *script = "for d in /tmp /dev/shm; do for k in 1 2 3 4 5; do "
                         "  head -c 3145728 /dev/zero > $d/f$k 2>/dev/null && echo W; "
                         "done; done; echo END";
    char *dir = stage();
    strbuf out = SB_INIT;
    executor_sh_in(dir, script, &l, NULL, &out);
    assert_int_equal(wrote(&out), 10); /* rlimits alone: all 30 MiB land */
    sb_reset(&out);

    char name[64];
    snprintf(name, sizeof name, "agentstack-unit-tmpfs-%d", (int)getpid());
    struct sbx_cgroup *cg = NULL;
    struct as_err err = AS_ERR_INIT;
    if (sbx_executor_cgroup(name, &l, &cg, &err) < 0)
        fail_msg("cgroup: %s", err.msg);
    if (!cg)
        tu_skip("no writable cgroup here");
    char *dirs[SBX_CGROUP_DIRS];
    for (int i = 0; i < SBX_CGROUP_DIRS; i++)
        dirs[i] = cg->dir[i] ? strdup(cg->dir[i]) : NULL;
    executor_sh_in(dir, script, &l, cg, &out);
    assert_true(wrote(&out) < 8); /* 24 MiB: at most seven 3 MiB files */
    assert_int_equal(sbx_cgroup_oom_killed(cg), 1);
    assert_int_equal(sbx_cgroup_destroy(cg, &err), 0);
    for (int i = 0; i < SBX_CGROUP_DIRS; i++) {
        if (dirs[i])
            assert_int_not_equal(access(dirs[i], F_OK), 0); /* nothing left behind */
        free(dirs[i]);
    }
    sb_release(&out);
    tu_rmtree(dir);
}

/* The runtime floor: the first releases with in-thread module hooks. */
static void test_version_floor(void **st)
{
    (void)st;
    assert_false(sbx_executor_version_ok(22, 6));
    assert_false(sbx_executor_version_ok(22, 14));
    assert_true(sbx_executor_version_ok(22, 15));
    assert_true(sbx_executor_version_ok(22, 23));
    assert_false(sbx_executor_version_ok(23, 4));
    assert_true(sbx_executor_version_ok(23, 5));
    assert_true(sbx_executor_version_ok(24, 0));
    assert_false(sbx_executor_version_ok(21, 99));
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_is_read_only), cmocka_unit_test(test_scratch_executes_nothing),
        cmocka_unit_test(test_file_size_limit),   cmocka_unit_test(test_cgroup_bounds_tmpfs),
        cmocka_unit_test(test_version_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
