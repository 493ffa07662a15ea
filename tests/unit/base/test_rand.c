/* rand: lengths, hex form, that two draws differ, and the fallbacks: with
 * getrandom refused the bytes come from /dev/urandom; with both refused
 * rand_bytes fails with a reason — never weaker bytes. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base/rand.h"

static void test_bytes(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    unsigned char a[32] = {0}, b[32] = {0};
    assert_int_equal(rand_bytes(a, sizeof a, &err), 0);
    assert_int_equal(rand_bytes(b, sizeof b, &err), 0);
    /* 2^-256 chance of a false failure */
    assert_memory_not_equal(a, b, sizeof a);
    assert_int_equal(rand_bytes(a, 0, &err), 0);
}

static void test_hex(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    char h1[65], h2[65];
    assert_int_equal(rand_hex(h1, 32, &err), 0);
    assert_int_equal(rand_hex(h2, 32, &err), 0);
    assert_int_equal(strlen(h1), 64);
    assert_string_not_equal(h1, h2);
    for (const char *p = h1; *p; p++)
        assert_non_null(strchr("0123456789abcdef", *p));
    /* above the on-stack buffer size */
    char *big = malloc(2 * 1000 + 1);
    assert_int_equal(rand_hex(big, 1000, &err), 0);
    assert_int_equal(strlen(big), 2000);
    free(big);
}

/* Refuses getrandom (ENOSYS, as an old kernel or a filter would), and with
 * also_open every openat (EACCES), for this process only. */
static int refuse_syscalls(int also_open)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(also_open ? SYS_openat : -1), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* In a child: 0 when the outcome is the expected one. */
static int child_draw(int also_open)
{
    if (refuse_syscalls(also_open) != 0)
        return 10;
    struct as_err err = AS_ERR_INIT;
    unsigned char a[64] = {0}, b[64] = {0}, zero[64] = {0};
    int r1 = rand_bytes(a, sizeof a, &err), r2 = rand_bytes(b, sizeof b, &err);
    if (also_open)
        return r1 == -1 && strstr(err.msg, "no source of secure random bytes") ? 0 : 11;
    return r1 == 0 && r2 == 0 && memcmp(a, b, sizeof a) != 0 && memcmp(a, zero, sizeof a) != 0 ? 0
                                                                                               : 12;
}

static void test_fallbacks(void **st)
{
    (void)st;
    for (int also_open = 0; also_open <= 1; also_open++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(child_draw(also_open));
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bytes), cmocka_unit_test(test_hex),
                                       cmocka_unit_test(test_fallbacks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
