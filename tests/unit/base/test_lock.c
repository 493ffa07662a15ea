/* lock: two processes contend for $AGENTSTACK_HOME/.lock; the loser times
 * out with a message naming the file; a released (or orphaned by exit) lock
 * can be taken; a waiter gets the lock once the holder lets go. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/wait.h>

#include "base/lock.h"

/* Child: take the lock, report 'L' on up, wait for one byte on down, then
 * release (or just exit when exit_holding). */
static pid_t spawn_holder(const char *dir, int up[2], int down[2], int exit_holding)
{
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        struct as_lock l;
        struct as_err err = AS_ERR_INIT;
        if (lock_acquire(&l, dir, 5000, &err) != 0)
            _exit(2);
        if (write(up[1], "L", 1) != 1)
            _exit(3);
        char c;
        if (read(down[0], &c, 1) != 1)
            _exit(4);
        if (!exit_holding)
            lock_release(&l);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    char c = 0;
    assert_int_equal(read(up[0], &c, 1), 1);
    assert_int_equal(c, 'L');
    return pid;
}

static void reap(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_contention(void **st)
{
    (void)st;
    char *tmp = tu_tmpdir();
    const char *home = getenv("AGENTSTACK_HOME"); /* not created yet: lock creates it */
    int up[2], down[2];
    pid_t pid = spawn_holder(home, up, down, 0);

    struct as_lock l = {-1};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lock_acquire(&l, home, 30, &err), -1);
    assert_int_equal(l.fd, -1);
    char want[4096];
    snprintf(want, sizeof want, "%s/.lock", home);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "another agentstack"));
    assert_non_null(strstr(err.msg, "try again"));
    assert_true(err.hint[0] != '\0');
    /* a zero timeout is one try */
    assert_int_equal(lock_acquire(&l, home, 0, &err), -1);

    /* lock_fd on another descriptor of the same file: same refusal */
    int fd = open(want, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(lock_fd(fd, 20, &err), -1);
    assert_non_null(strstr(err.msg, "another agentstack command"));

    /* release: now it can be taken */
    assert_int_equal(write(down[1], "x", 1), 1);
    reap(pid);
    assert_int_equal(lock_acquire(&l, home, 5000, &err), 0);
    assert_true(l.fd >= 0);
    struct stat sst;
    assert_int_equal(stat(want, &sst), 0);
    assert_int_equal(sst.st_mode & 0777, 0600);
    lock_release(&l);
    assert_int_equal(l.fd, -1);
    lock_release(&l); /* twice is harmless */
    assert_int_equal(lock_fd(fd, 0, &err), 0);
    close(fd);
    close(up[0]);
    close(down[1]);
    tu_rmtree(tmp);
}

static void test_holder_exit_frees_lock(void **st)
{
    (void)st;
    char *tmp = tu_tmpdir();
    const char *home = getenv("AGENTSTACK_HOME");
    int up[2], down[2];
    pid_t pid = spawn_holder(home, up, down, 1);
    assert_int_equal(write(down[1], "x", 1), 1);
    reap(pid);
    /* no stale lock to break: the kernel dropped it with the process */
    struct as_lock l;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lock_acquire(&l, home, 5000, &err), 0);
    lock_release(&l);
    close(up[0]);
    close(down[1]);
    tu_rmtree(tmp);
}

static void test_waiter_gets_lock(void **st)
{
    (void)st;
    char *tmp = tu_tmpdir();
    const char *home = getenv("AGENTSTACK_HOME");
    int up[2], down[2];
    pid_t pid = spawn_holder(home, up, down, 0);
    /* let the holder go only after we have started waiting: the byte is in
     * the pipe before lock_acquire, the child reads it whenever it runs */
    assert_int_equal(write(down[1], "x", 1), 1);
    struct as_lock l;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lock_acquire(&l, home, 60000, &err), 0);
    lock_release(&l);
    reap(pid);
    close(up[0]);
    close(down[1]);
    tu_rmtree(tmp);
}

static void test_bad_dir(void **st)
{
    (void)st;
    char *tmp = tu_tmpdir();
    char *f = tu_write(tmp, "file", "x");
    struct as_lock l;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lock_acquire(&l, f, 10, &err), -1);
    assert_int_equal(l.fd, -1);
    assert_non_null(strstr(err.msg, f));
    /* a symlinked .lock is not followed */
    char *d = NULL;
    assert_true(asprintf(&d, "%s/d", tmp) > 0);
    assert_int_equal(mkdir(d, 0700), 0);
    char *lk = NULL;
    assert_true(asprintf(&lk, "%s/.lock", d) > 0);
    assert_int_equal(symlink(f, lk), 0);
    assert_int_equal(lock_acquire(&l, d, 10, &err), -1);
    free(lk);
    free(d);
    free(f);
    tu_rmtree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contention),
        cmocka_unit_test(test_holder_exit_frees_lock),
        cmocka_unit_test(test_waiter_gets_lock),
        cmocka_unit_test(test_bad_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
