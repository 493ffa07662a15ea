/* The tools_execute executor's confinement, attacked from inside, beneath
 * Node's permission model (docs/tools-execute.md, "Enforcement matrix"): a
 * shell started in exactly the executor's view and limits
 * (sbx_executor_spawn) tries to write the root file system (/, /usr, /etc,
 * /app, the home), to run a binary it copied to /tmp or /dev/shm, to fill
 * /tmp past its 16 MiB, and to write past the 4 MiB file-size limit. The
 * one file it may write is the result file. Each check fails if its layer
 * (the read-only root and binds, the noexec scratch, the tmpfs size,
 * RLIMIT_FSIZE) is removed. */
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

/* Runs sh -c script as the executor would run Node; its exit status, its
 * stdout in out. dir holds the staged app/ and result.json. */
static int executor_sh(const char *dir, const char *script, strbuf *out)
{
    char app[2048], result[2048];
    snprintf(app, sizeof app, "%s/app", dir);
    snprintf(result, sizeof result, "%s/result.json", dir);
    struct sbx_executor_request rq = {.node = "/bin/sh", .app_dir = app, .result_file = result};
    sbx_executor_default_limits(15000, &rq.limits);
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
        cmocka_unit_test(test_root_is_read_only),
        cmocka_unit_test(test_scratch_executes_nothing),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_version_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
