/*
 * Helpers shared by the cmocka unit tests: a temporary directory per test
 * (removed afterwards), small file helpers, and honest skips. Tests never
 * touch the real HOME: tu_tmpdir() also points HOME and AGENTSTACK_HOME
 * inside it.
 *
 * Skips: cmocka's own skip() marks a test skipped but the program still
 * exits 0, so ctest would count a test that ran nothing as passed. Here
 * skip() does not compile; tu_skip(why) prints one loud line, and a program
 * in which any test skipped exits 77, ctest's SKIP_RETURN_CODE
 * (CMakeLists.txt), so the summary counts it. Under CI=true a skip is a
 * failure unless the test says CI's machine may lack what it needs
 * (docs/building.md, "What make check skipped").
 */
#ifndef AS_TESTS_TESTUTIL_H
#define AS_TESTS_TESTUTIL_H

#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

/* How many tests of this program skipped (one program = one translation unit). */
static int tu_skips;

static inline int tu_ci(void)
{
    const char *ci = getenv("CI");
    return ci && strcmp(ci, "true") == 0;
}

/* Skips the current test, saying why. ci_may_lack: CI's machine may lack
 * this prerequisite too (e.g. a second CPU); otherwise a skip under CI=true
 * fails the test. Never returns. */
#define tu_skip_even_in_ci(why) tu_skip_(why, 1, __FILE__, __LINE__)
#define tu_skip(why) tu_skip_(why, 0, __FILE__, __LINE__)
#define tu_skip_(why, ci_may_lack, file, line)                                                     \
    do {                                                                                           \
        if (tu_ci() && !(ci_may_lack))                                                             \
            fail_msg("skipped under CI=true, where it must run: %s", (why));                       \
        fprintf(stderr, "SKIP: %s:%d: %s\n", file, line, (why));                                   \
        tu_skips++;                                                                                \
        _skip(file, line);                                                                         \
    } while (0)

/* A bare skip() would exit 0: use tu_skip(why). */
#undef skip
#define skip() tu_skip_needs_a_reason

/* The program's exit status: 77 when nothing failed but something skipped. */
static inline int tu_exit_status(int failed)
{
    if (failed)
        return failed;
    if (tu_skips) {
        fprintf(stderr, "SKIP: %d test(s) of this program skipped (reasons above)\n", tu_skips);
        return 77;
    }
    return 0;
}
#undef cmocka_run_group_tests
#define cmocka_run_group_tests(group, setup, teardown)                                             \
    tu_exit_status(_cmocka_run_group_tests(#group, group, sizeof(group) / sizeof((group)[0]),      \
                                           setup, teardown))

/* One cmocka test of the program, named by argv[1], or all of them without
 * an argument: a long program that calls this from main() is registered as
 * one ctest entry per test (CMakeLists.txt), which `ctest -j` runs side by
 * side. A name that matches no test fails rather than passing empty. */
static inline void tu_split(int argc, char **argv, const struct CMUnitTest *tests, size_t n)
{
    if (argc < 2)
        return;
    for (size_t i = 0; i < n; i++)
        if (strcmp(tests[i].name, argv[1]) == 0) {
            cmocka_set_test_filter(argv[1]);
            return;
        }
    fprintf(stderr, "%s: no test named %s\n", argv[0], argv[1]);
    exit(1);
}
#define tu_split(argc, argv) tu_split((argc), (argv), tests, sizeof tests / sizeof tests[0])

static inline char *tu_tmpdir(void)
{
    char tmpl[] = "/tmp/as-unit-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    char *r = strdup(d);
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/home", r);
    mkdir(buf, 0700);
    setenv("HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/home/.agentstack", r);
    setenv("AGENTSTACK_HOME", buf, 1);
    return r;
}

static inline int tu_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    /* chmod follows symlinks: never touch what a test's link points at */
    if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR)
        chmod(p, 0700);
    return remove(p);
}

static inline void tu_rmtree(char *dir)
{
    if (dir) {
        nftw(dir, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        free(dir);
    }
}

/* Writes text to dir/rel (creating parents); returns the full path (malloc'd). */
static inline char *tu_write(const char *dir, const char *rel, const char *text)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, rel) > 0);
    for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return p;
}

/* The third-party test data in the repository (tests/data/, see its
 * README.md): $AS_DATA as ctest sets it, else tests/data under $AS_SRC. */
static inline const char *tu_data_dir(void)
{
    static char buf[4096];
    const char *d = getenv("AS_DATA");
    if (d && *d)
        return d;
    const char *src = getenv("AS_SRC");
    snprintf(buf, sizeof buf, "%s/tests/data", src && *src ? src : ".");
    return buf;
}

/* Reads a whole file (malloc'd, NUL-terminated) or NULL. */
static inline char *tu_read(const char *path, size_t *len)
{
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = '\0';
    if (len)
        *len = got;
    return b;
}

#endif
