/* The appender's open-log cache: a long-lived process keeps each log open
 * between appends, yet every append stays correct when other processes
 * append, rotate, remove or loosen the log in between. */
#include "testutil.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"

static void append_n(const char *path, int from, int n, size_t rotate)
{
    struct aud_append_opts o = {rotate, 0};
    for (int i = from; i < from + n; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "i", json_integer(i));
        json_object_set_new(r, "s", json_string("value"));
        struct as_err err = AS_ERR_INIT;
        if (aud_append(path, r, &o, &err) != 0)
            fail_msg("append: %s", err.msg);
        json_decref(r);
    }
}

/* Another process appends (it never shares this process's descriptors). */
static void child_appends(const char *path, int from, int n, size_t rotate)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        append_n(path, from, n, rotate);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static char *path_in(const char *dir, const char *rel)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, rel) > 0);
    return p;
}

static void expect_intact(const char *path, size_t want_lines)
{
    struct aud_break b;
    struct as_err err = AS_ERR_INIT;
    size_t lines = 0;
    int r = aud_verify(path, &b, &lines, &err);
    if (r != 0)
        fail_msg("not intact: %s:%u %s %s", b.file, b.line, b.reason, err.msg);
    if (want_lines)
        assert_int_equal(lines, want_lines);
}

static size_t count_lines(const char *path)
{
    size_t len = 0, n = 0;
    char *all = tu_read(path, &len);
    assert_non_null(all);
    for (size_t i = 0; i < len; i++)
        n += all[i] == '\n';
    free(all);
    return n;
}

/* Descriptors of this process open on path's file. */
static int fds_on(const char *path)
{
    struct stat want;
    if (stat(path, &want) != 0)
        return 0;
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
            st.st_ino == want.st_ino && st.st_dev == want.st_dev)
            n++;
    }
    closedir(d);
    return n;
}

static void test_log_stays_open_between_appends(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/keep.jsonl");
    append_n(path, 0, 50, 0);
    assert_int_equal(fds_on(path), 1); /* one descriptor, reused, not one per append */
    expect_intact(path, 50);
    free(path);
    tu_rmtree(dir);
}

static void test_other_process_appends_in_between(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    append_n(path, 0, 3, 0);
    child_appends(path, 100, 4, 0);
    append_n(path, 10, 3, 0); /* must link to the child's last line, not our own */
    child_appends(path, 200, 1, 0);
    append_n(path, 20, 1, 0);
    expect_intact(path, 12);
    free(path);
    tu_rmtree(dir);
}

static void test_other_process_rotates_in_between(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *old = path_in(dir, "audit/calls.jsonl.1");
    append_n(path, 0, 5, 0);
    child_appends(path, 100, 1, 64); /* over 64 bytes: the child rotates */
    assert_int_equal(count_lines(old), 5);
    append_n(path, 10, 2, 0); /* our open descriptor now names calls.jsonl.1 */
    assert_int_equal(count_lines(old), 5);
    assert_int_equal(count_lines(path), 3);
    expect_intact(path, 8);
    free(old);
    free(path);
    tu_rmtree(dir);
}

static void test_own_rotation_keeps_the_link(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *old = path_in(dir, "audit/calls.jsonl.1");
    append_n(path, 0, 40, 1024);
    struct stat st;
    assert_int_equal(stat(old, &st), 0);
    expect_intact(path, 0);
    assert_int_equal(fds_on(path), 1);
    assert_int_equal(fds_on(old), 0); /* the rotated file is let go */
    free(old);
    free(path);
    tu_rmtree(dir);
}

static void test_removed_dir_is_recreated(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *sub = path_in(dir, "audit");
    char *path = path_in(dir, "audit/calls.jsonl");
    append_n(path, 0, 2, 0);
    char *cmd = NULL;
    assert_true(asprintf(&cmd, "rm -rf '%s'", sub) > 0);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    append_n(path, 10, 2, 0); /* a new chain in a new directory */
    struct stat st;
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    expect_intact(path, 2);
    free(sub);
    free(path);
    tu_rmtree(dir);
}

static void test_loosened_mode_is_tightened(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    append_n(path, 0, 1, 0);
    assert_int_equal(chmod(path, 0644), 0);
    append_n(path, 1, 1, 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    expect_intact(path, 2);
    free(path);
    tu_rmtree(dir);
}

static void test_replaced_file_is_not_written_through_the_old_descriptor(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *aside = path_in(dir, "audit/aside.jsonl");
    append_n(path, 0, 2, 0);
    assert_int_equal(rename(path, aside), 0); /* someone moves the log away */
    append_n(path, 10, 1, 0);
    assert_int_equal(count_lines(aside), 2);
    assert_int_equal(count_lines(path), 1);
    free(aside);
    free(path);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_stays_open_between_appends),
        cmocka_unit_test(test_other_process_appends_in_between),
        cmocka_unit_test(test_other_process_rotates_in_between),
        cmocka_unit_test(test_own_rotation_keeps_the_link),
        cmocka_unit_test(test_removed_dir_is_recreated),
        cmocka_unit_test(test_loosened_mode_is_tightened),
        cmocka_unit_test(test_replaced_file_is_not_written_through_the_old_descriptor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
