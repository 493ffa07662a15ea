/* strbuf (and the xalloc helpers under it): NUL termination, embedded
 * NULs, growth, self-append, detach, trimming and secure release. */
#include "testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "base/strbuf.h"
#include "base/xalloc.h"

static void test_init_and_empty(void **st)
{
    (void)st;
    strbuf sb = SB_INIT;
    assert_non_null(sb.buf);
    assert_string_equal(sb.buf, "");
    sb_setlen(&sb, 0);
    sb_rtrim(&sb);
    sb_addf(&sb, "%s", ""); /* zero-length format output */
    assert_int_equal(sb.alloc, 0);
    assert_int_equal(sb_empty[0], '\0');
    sb_release(&sb);
    assert_int_equal(sb.len, 0);
    strbuf h;
    sb_init(&h, 100);
    assert_true(h.alloc >= 101);
    assert_string_equal(h.buf, "");
    sb_release(&h);
}

static void test_add_family(void **st)
{
    (void)st;
    strbuf sb = SB_INIT;
    sb_adds(&sb, "ab");
    sb_addc(&sb, 'c');
    sb_add(&sb, "d\0e", 3);
    assert_int_equal(sb.len, 6);
    assert_memory_equal(sb.buf, "abcd\0e", 7); /* NUL-terminated after the bytes */
    sb_reset(&sb);
    sb_addf(&sb, "%d-%s-%c", 42, "x", 'y');
    assert_string_equal(sb.buf, "42-x-y");
    sb_addchars(&sb, '.', 3);
    sb_addchars(&sb, '!', 0);
    assert_string_equal(sb.buf, "42-x-y...");
    sb_setlen(&sb, 2);
    assert_string_equal(sb.buf, "42");
    /* growth over many appends keeps everything */
    sb_reset(&sb);
    for (int i = 0; i < 10000; i++)
        sb_addf(&sb, "%04d", i % 10000);
    assert_int_equal(sb.len, 40000);
    assert_memory_equal(sb.buf + 4 * 9999, "9999", 5);
    /* a long formatted string */
    char big[5000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sb_reset(&sb);
    sb_addf(&sb, "<%s>", big);
    assert_int_equal(sb.len, sizeof big + 1);
    sb_release(&sb);
}

static void test_self_append(void **st)
{
    (void)st;
    strbuf sb = SB_INIT;
    sb_adds(&sb, "abc");
    /* appending the buffer to itself must survive the reallocation */
    for (int i = 0; i < 12; i++)
        sb_add(&sb, sb.buf, sb.len);
    assert_int_equal(sb.len, 3u << 12);
    for (size_t i = 0; i < sb.len; i++)
        assert_int_equal(sb.buf[i], "abc"[i % 3]);
    sb_reset(&sb);
    sb_adds(&sb, "xyz");
    sb_adds(&sb, sb.buf + 1);
    assert_string_equal(sb.buf, "xyzyz");
    sb_release(&sb);
}

static void test_detach_trim_secure(void **st)
{
    (void)st;
    strbuf sb = SB_INIT;
    size_t len = 99;
    char *s = sb_detach(&sb, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
    sb_adds(&sb, "text \t\r\n\n");
    sb_rtrim(&sb);
    assert_string_equal(sb.buf, "text");
    s = sb_detach(&sb, &len);
    assert_string_equal(s, "text");
    assert_int_equal(len, 4);
    assert_int_equal(sb.len, 0);
    assert_string_equal(sb.buf, "");
    free(s);
    sb_adds(&sb, "secret");
    sb_release_secure(&sb);
    assert_int_equal(sb.alloc, 0);
    assert_string_equal(sb.buf, "");
    sb_release_secure(&sb); /* on an empty buffer: fine */
}

static void test_xalloc(void **st)
{
    (void)st;
    char *s = xstrndup("abcdef", 3);
    assert_string_equal(s, "abc");
    free(s);
    s = xstrndup("ab", 10);
    assert_string_equal(s, "ab");
    free(s);
    s = xasprintf("%s=%d", "n", 5);
    assert_string_equal(s, "n=5");
    free(s);
    s = xmemdup("x\0y", 3);
    assert_memory_equal(s, "x\0y", 3);
    free(s);
    void *z = xmalloc(0); /* never NULL */
    assert_non_null(z);
    free(z);
    int *c = xcalloc(4, sizeof(int));
    assert_int_equal(c[3], 0);
    free(c);
    size_t cap = 0;
    int *v = NULL;
    v = xgrow(v, &cap, 1, sizeof *v);
    assert_int_equal(cap, 8);
    v = xgrow(v, &cap, 9, sizeof *v);
    assert_int_equal(cap, 16);
    v = xgrow(v, &cap, 3, sizeof *v); /* never shrinks */
    assert_int_equal(cap, 16);
    v[15] = 1;
    free(v);
}

/* Allocation failures are not input errors: they abort with a message. */
static void test_overflow_aborts(void **st)
{
    (void)st;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        strbuf sb = SB_INIT;
        sb_adds(&sb, "x");
        sb_grow(&sb, SIZE_MAX); /* would wrap the size computation */
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        size_t cap = 0;
        void *p = xgrow(NULL, &cap, SIZE_MAX / 4, 64);
        (void)p;
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* One shell-quoting rule: plain words as they are, anything else (empty,
 * a space, $, a quote, a byte over 0x7f) single-quoted with ' as '\''. */
static void test_shell_words(void **state)
{
    (void)state;
    strbuf sb = SB_INIT;
    sb_add_shword(&sb, "a-b_c./=:,+@%9");
    assert_string_equal(sb.buf, "a-b_c./=:,+@%9");
    sb_reset(&sb);
    sb_add_shword(&sb, "");
    assert_string_equal(sb.buf, "''");
    sb_reset(&sb);
    sb_add_shword(&sb, "it's $HOME");
    assert_string_equal(sb.buf, "'it'\\''s $HOME'");
    sb_reset(&sb);
    sb_add_shword(&sb, "caf\xc3\xa9");
    assert_string_equal(sb.buf, "'caf\xc3\xa9'");
    sb_reset(&sb);
    sb_add_shquoted(&sb, "plain");
    assert_string_equal(sb.buf, "'plain'");
    sb_release(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_and_empty),  cmocka_unit_test(test_add_family),
        cmocka_unit_test(test_self_append),     cmocka_unit_test(test_detach_trim_secure),
        cmocka_unit_test(test_shell_words),     cmocka_unit_test(test_xalloc),
        cmocka_unit_test(test_overflow_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
