/* proc: argv execution without a shell, PATH lookup, exec failures reported
 * to the parent, pipes without deadlock, close-on-exec for inherited fds,
 * and group termination reaching grandchildren. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "base/proc.h"

static void assert_no_children(void)
{
    /* every child was reaped: no zombie left behind */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void test_capture_basic(void **st)
{
    (void)st;
    strbuf out = SB_INIT, eo = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    const char *echo[] = {"echo", "hello", "$HOME", "a b", NULL};
    assert_int_equal(proc_run_capture(echo, NULL, NULL, NULL, 0, &out, NULL, &err), 0);
    /* no shell: "$HOME" is passed as is */
    assert_string_equal(out.buf, "hello $HOME a b\n");
    sb_reset(&out);

    const char *ex3[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    assert_int_equal(proc_run_capture(ex3, NULL, NULL, NULL, 0, &out, &eo, &err), 3);
    assert_string_equal(out.buf, "out\n");
    assert_string_equal(eo.buf, "err\n");
    sb_reset(&out);

    const char *sig[] = {"sh", "-c", "kill -TERM $$", NULL};
    assert_int_equal(proc_run_capture(sig, NULL, NULL, NULL, 0, &out, NULL, &err), 128 + 15);

    /* stdin */
    const char *cat[] = {"cat", NULL};
    assert_int_equal(proc_run_capture(cat, NULL, NULL, "abc", 3, &out, NULL, &err), 0);
    assert_string_equal(out.buf, "abc");
    sb_reset(&out);
    /* no input: /dev/null, cat ends at once */
    assert_int_equal(proc_run_capture(cat, NULL, NULL, NULL, 0, &out, NULL, &err), 0);
    assert_int_equal(out.len, 0);
    /* the child not reading its stdin is no error of ours (and no SIGPIPE) */
    const char *tru[] = {"true", NULL};
    size_t n = 4 * 1024 * 1024;
    char *big = malloc(n);
    memset(big, 'i', n);
    assert_int_equal(proc_run_capture(tru, NULL, NULL, big, n, &out, NULL, &err), 0);
    free(big);
    sb_release(&out);
    sb_release(&eo);
    assert_no_children();
}

static void test_capture_large_both_streams(void **st)
{
    (void)st;
    strbuf out = SB_INIT, eo = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    /* interleaved: a reader of one stream only would deadlock here */
    const char *both[] = {"sh", "-c",
                          "for i in 1 2 3 4; do head -c 300000 /dev/zero; "
                          "head -c 300000 /dev/zero >&2; done",
                          NULL};
    assert_int_equal(proc_run_capture(both, NULL, NULL, NULL, 0, &out, &eo, &err), 0);
    assert_int_equal(out.len, 1200000);
    assert_int_equal(eo.len, 1200000);
    sb_reset(&out);
    /* large stdin while the child writes large stdout */
    size_t n = 3 * 1024 * 1024 + 11;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 23);
    const char *cat[] = {"cat", NULL};
    assert_int_equal(proc_run_capture(cat, NULL, NULL, big, n, &out, NULL, &err), 0);
    assert_int_equal(out.len, n);
    assert_memory_equal(out.buf, big, n);
    free(big);
    sb_release(&out);
    sb_release(&eo);
    assert_no_children();
}

static void test_env_and_cwd(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    const char *envp[] = {"FOO=bar baz", "X=1", NULL};
    const char *env[] = {"env", NULL};
    /* env found through the parent's PATH; the child sees only envp */
    assert_int_equal(proc_run_capture(env, envp, NULL, NULL, 0, &out, NULL, &err), 0);
    assert_string_equal(out.buf, "FOO=bar baz\nX=1\n");
    sb_reset(&out);
    /* a PATH in envp is the one used for lookup */
    const char *envp2[] = {"PATH=/nonexistent-dir-xyz", NULL};
    assert_int_equal(proc_run_capture(env, envp2, NULL, NULL, 0, &out, NULL, &err), -1);
    assert_string_equal(err.msg, "env: command not found");

    const char *pwd[] = {"pwd", "-P", NULL};
    assert_int_equal(proc_run_capture(pwd, NULL, dir, NULL, 0, &out, NULL, &err), 0);
    char *real = realpath(dir, NULL);
    sb_rtrim(&out);
    assert_string_equal(out.buf, real);
    free(real);
    char *missing = NULL;
    assert_true(asprintf(&missing, "%s/missing", dir) > 0);
    assert_int_equal(proc_run_capture(pwd, NULL, missing, NULL, 0, &out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cannot change to directory"));
    assert_non_null(strstr(err.msg, missing));
    free(missing);
    sb_release(&out);
    tu_rmtree(dir);
    assert_no_children();
}

static void test_exec_failures(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    const char *nf[] = {"agentstack-no-such-command-xyz", NULL};
    assert_int_equal(proc_run_capture(nf, NULL, NULL, NULL, 0, &out, NULL, &err), -1);
    assert_string_equal(err.msg, "agentstack-no-such-command-xyz: command not found");

    /* failures only execve sees come back from the child, not as exit 127 */
    char *noexec = tu_write(dir, "noexec", "#!/bin/sh\necho hi\n");
    assert_int_equal(chmod(noexec, 0644), 0);
    const char *a1[] = {noexec, NULL};
    struct proc p;
    proc_init(&p, a1);
    assert_int_equal(proc_start(&p, &err), -1);
    assert_int_equal(p.pid, -1);
    assert_non_null(strstr(err.msg, noexec));
    assert_non_null(strstr(err.msg, "Permission denied"));

    char *garbage = tu_write(dir, "garbage", "\x01\x02\x03\x04not a program");
    assert_int_equal(chmod(garbage, 0755), 0);
    const char *a2[] = {garbage, NULL};
    assert_int_equal(proc_run_capture(a2, NULL, NULL, NULL, 0, &out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "Exec format error"));

    char *missing = NULL;
    assert_true(asprintf(&missing, "%s/nope", dir) > 0);
    const char *a3[] = {missing, NULL};
    assert_int_equal(proc_run_capture(a3, NULL, NULL, NULL, 0, &out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "command not found"));

    const char *empty[] = {NULL};
    assert_int_equal(proc_run_capture(empty, NULL, NULL, NULL, 0, &out, NULL, &err), -1);
    free(missing);
    free(garbage);
    free(noexec);
    sb_release(&out);
    tu_rmtree(dir);
    assert_no_children(); /* failed children were reaped */
}

static void test_cloexec(void **st)
{
    (void)st;
    /* a descriptor opened without O_CLOEXEC must not reach the child */
    int leak = open("/dev/null", O_RDONLY);
    assert_true(leak >= 0);
    int high = dup2(leak, 77);
    assert_int_equal(high, 77);
    assert_int_equal(fcntl(high, F_GETFD) & FD_CLOEXEC, 0);
    char probe1[64], probe2[64];
    snprintf(probe1, sizeof probe1, "/proc/self/fd/%d", leak);
    snprintf(probe2, sizeof probe2, "/proc/self/fd/%d", high);
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    const char *t1[] = {"test", "-e", probe1, NULL};
    const char *t2[] = {"test", "-e", probe2, NULL};
    assert_int_equal(proc_run_capture(t1, NULL, NULL, NULL, 0, &out, NULL, &err), 1);
    assert_int_equal(proc_run_capture(t2, NULL, NULL, NULL, 0, &out, NULL, &err), 1);
    /* sanity: the probe does see an inherited standard descriptor */
    const char *t0[] = {"test", "-e", "/proc/self/fd/1", NULL};
    assert_int_equal(proc_run_capture(t0, NULL, NULL, NULL, 0, &out, NULL, &err), 0);
    /* and the parent's descriptors are untouched */
    assert_int_equal(fcntl(high, F_GETFD) & FD_CLOEXEC, 0);
    close(leak);
    close(high);
    sb_release(&out);
}

static void test_pipes_and_fd(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    const char *cat[] = {"cat", NULL};
    struct proc p;
    proc_init(&p, cat);
    assert_int_equal(p.new_pgroup, 1);
    assert_int_equal(p.to_child, -1);
    p.in = PROC_PIPE;
    p.out = PROC_PIPE;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(proc_start(&p, &err), 0);
    assert_true(p.pid > 0);
    assert_int_equal(getpgid(p.pid), p.pid); /* its own group */
    assert_int_equal(write(p.to_child, "ping\n", 5), 5);
    close(p.to_child);
    p.to_child = -1;
    char buf[16] = {0};
    ssize_t got = 0, r;
    while ((r = read(p.from_child, buf + got, sizeof buf - 1 - (size_t)got)) > 0)
        got += r;
    assert_string_equal(buf, "ping\n");
    assert_int_equal(proc_wait(&p), 0);
    proc_close_pipes(&p);
    assert_int_equal(p.from_child, -1);

    /* PROC_FD: stdout into a file we opened */
    char *path = NULL;
    assert_true(asprintf(&path, "%s/out.txt", dir) > 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const char *echo[] = {"echo", "to-file", NULL};
    proc_init(&p, echo);
    p.out = PROC_FD;
    p.out_fd = fd;
    p.err = PROC_NULL;
    p.new_pgroup = 0;
    assert_int_equal(proc_start(&p, &err), 0);
    assert_int_equal(proc_wait(&p), 0);
    close(fd);
    char *c = tu_read(path, NULL);
    assert_string_equal(c, "to-file\n");
    free(c);
    free(path);
    tu_rmtree(dir);
    assert_no_children();
}

static void test_terminate_kills_group(void **st)
{
    (void)st;
    /* become the reaper of orphans, so the grandchild's fate is observable */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    const char *argv[] = {"sh", "-c", "sleep 100 & echo $!; wait", NULL};
    struct proc p;
    proc_init(&p, argv);
    p.out = PROC_PIPE;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(proc_start(&p, &err), 0);
    char line[32] = {0};
    size_t got = 0;
    while (got < sizeof line - 1 && !strchr(line, '\n')) {
        ssize_t r = read(p.from_child, line + got, sizeof line - 1 - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
    pid_t grandchild = (pid_t)atoi(line);
    assert_true(grandchild > 0);
    assert_int_equal(getpgid(grandchild), p.pid);
    int status = proc_terminate(&p, 5000);
    assert_int_equal(status, 128 + SIGTERM);
    /* the grandchild was killed too (not left to sleep 100 s) */
    int gst;
    assert_int_equal(waitpid(grandchild, &gst, 0), grandchild);
    assert_true(WIFSIGNALED(gst));
    proc_close_pipes(&p);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);

    /* a leader that ignores SIGTERM is killed after the grace period */
    const char *stubborn[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done",
                              NULL};
    proc_init(&p, stubborn);
    p.out = PROC_PIPE;
    assert_int_equal(proc_start(&p, &err), 0);
    char b[8];
    assert_true(read(p.from_child, b, sizeof b) > 0); /* trap installed */
    assert_int_equal(proc_terminate(&p, 50), 128 + SIGKILL);
    proc_close_pipes(&p);
    assert_no_children();
}

static void test_which(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *plain = tu_write(dir, "plain", "data");
    assert_int_equal(chmod(plain, 0644), 0);
    strbuf out = SB_INIT;
    assert_int_equal(proc_which("sh", "/nonexistent-xyz:/bin", &out), 0);
    assert_string_equal(out.buf, "/bin/sh");
    assert_int_equal(proc_which("sh", NULL, &out), 0);
    assert_true(out.len > 3);
    assert_int_equal(proc_which("agentstack-no-such-command-xyz", NULL, &out), -1);
    assert_int_equal(proc_which("/bin/sh", NULL, &out), 0);
    assert_string_equal(out.buf, "/bin/sh");
    assert_int_equal(proc_which(plain, NULL, &out), -1); /* not executable */
    assert_int_equal(proc_which("plain", dir, &out), -1);
    assert_int_equal(proc_which("bin", "/", &out), -1); /* a directory */
    assert_int_equal(proc_which("", NULL, &out), -1);
    sb_release(&out);
    free(plain);
    tu_rmtree(dir);
}

/* A process's start time names it: this process's own reads the same by
 * pid and as self; a pid that does not exist reads -1. */
static void test_start_ticks(void **state)
{
    (void)state;
    long long self = proc_start_ticks(0);
    assert_true(self > 0);
    assert_true(proc_start_ticks((long long)getpid()) == self);
    assert_true(proc_start_ticks(99999999LL) == -1);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* prove run_capture survives EPIPE on its own */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_ticks),
        cmocka_unit_test(test_capture_basic),
        cmocka_unit_test(test_capture_large_both_streams),
        cmocka_unit_test(test_env_and_cwd),
        cmocka_unit_test(test_exec_failures),
        cmocka_unit_test(test_cloexec),
        cmocka_unit_test(test_pipes_and_fd),
        cmocka_unit_test(test_terminate_kills_group),
        cmocka_unit_test(test_which),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
