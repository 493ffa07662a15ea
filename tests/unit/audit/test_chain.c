/* The hash-chained appender and verifier. */
#include "testutil.h"

#include <sys/wait.h>

#include "audit/audit.h"
#include "base/sha256.h"

static const char ZEROS[] = "0000000000000000000000000000000000000000000000000000000000000000";

/* In a forked writer a cmocka failure would unwind into the test runner's
 * copy inside the child and go on running later tests there: a child says
 * why on stderr and exits 1 instead, and the parent's exit-status check
 * fails the test. */
static int in_child;

static void append_n(const char *path, int from, int n, size_t rotate)
{
    struct aud_append_opts o = {rotate, 0};
    for (int i = from; i < from + n; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "i", json_integer(i));
        json_object_set_new(r, "s", json_string("value"));
        struct as_err err = AS_ERR_INIT;
        if (aud_append(path, r, &o, &err) != 0) {
            if (in_child) {
                fprintf(stderr, "writer %d: append %d: %s\n", from / 100000, i, err.msg);
                _exit(1);
            }
            fail_msg("append: %s", err.msg);
        }
        json_decref(r);
    }
}

static char *path_in(const char *dir, const char *rel)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, rel) > 0);
    return p;
}

/* Splits a file into malloc'd lines (without '\n'). */
static size_t read_lines(const char *path, char ***out)
{
    char *all = tu_read(path, NULL);
    assert_non_null(all);
    size_t n = 0, cap = 0;
    char **v = NULL;
    for (char *s = all, *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        if (!nl)
            nl = s + strlen(s) - 1;
        if (n == cap)
            v = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);
        v[n++] = strndup(s, (size_t)(nl - s + (nl[0] != '\n')));
        if (!nl[1])
            break;
    }
    free(all);
    *out = v;
    return n;
}

static void free_lines(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void write_lines(const char *path, char **v, size_t n, int final_newline)
{
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", v[i], i + 1 < n || final_newline ? "\n" : "");
    fclose(f);
}

static void expect_break(const char *path, const char *file, unsigned line, const char *why)
{
    struct aud_break b;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_verify(path, &b, NULL, &err), 1);
    assert_string_equal(b.file, file);
    if (b.line != line)
        fail_msg("break at %u (%s), expected %u", b.line, b.reason, line);
    assert_non_null(strstr(b.reason, why));
}

static void expect_intact(const char *path)
{
    struct aud_break b;
    struct as_err err = AS_ERR_INIT;
    int r = aud_verify(path, &b, NULL, &err);
    if (r != 0)
        fail_msg("not intact: %s:%u %s %s", b.file, b.line, b.reason, err.msg);
}

static void test_append_links_every_line(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    append_n(path, 0, 50, 0);
    char **v;
    size_t n = read_lines(path, &v);
    assert_int_equal(n, 50);
    char want[200];
    snprintf(want, sizeof want, "{\"i\":0,\"s\":\"value\",\"prev\":\"%s\"}", ZEROS);
    assert_string_equal(v[0], want); /* caller's key order, prev last */
    for (size_t i = 1; i < n; i++) {
        char hex[65];
        sha256_hex(v[i - 1], strlen(v[i - 1]), hex);
        assert_non_null(strstr(v[i], hex));
    }
    free_lines(v, n);
    size_t lines = 0;
    struct aud_break b;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_verify(path, &b, &lines, &err), 0);
    assert_int_equal(lines, 50);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *adir = path_in(dir, "audit");
    assert_int_equal(stat(adir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* a looser file is re-tightened on the next append */
    chmod(path, 0644);
    append_n(path, 50, 1, 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* refusals: prev already present, non-object */
    json_t *bad = json_pack("{s:s}", "prev", "x");
    assert_int_equal(aud_append(path, bad, NULL, &err), -1);
    json_decref(bad);
    json_t *arr = json_array();
    assert_int_equal(aud_append(path, arr, NULL, &err), -1);
    json_decref(arr);
    json_t *empty = json_object();
    assert_int_equal(aud_append(path, empty, NULL, &err), 0);
    json_decref(empty);
    expect_intact(path);
    /* a missing log is intact */
    char *none = path_in(dir, "audit/none.jsonl");
    expect_intact(none);
    free(none);
    free(adir);
    free(path);
    tu_rmtree(dir);
}

static void concurrent(size_t rotate, int writers, int each)
{
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    pid_t pids[16];
    for (int w = 0; w < writers; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            in_child = 1;
            append_n(path, w * 100000, each, rotate);
            _exit(0);
        }
    }
    for (int w = 0; w < writers; w++) {
        int st;
        assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    expect_intact(path);
    if (!rotate) {
        char **v;
        size_t n = read_lines(path, &v);
        assert_int_equal(n, (size_t)(writers * each));
        free_lines(v, n);
    } else {
        char *old = path_in(dir, "audit/calls.jsonl.1");
        struct stat st;
        assert_int_equal(stat(old, &st), 0);
        free(old);
    }
    free(path);
    tu_rmtree(dir);
}

static void test_concurrent_writers_keep_one_chain(void **state)
{
    (void)state;
    concurrent(0, 8, 150);
}

static void test_concurrent_writers_with_rotation(void **state)
{
    (void)state;
    concurrent(4096, 6, 120);
}

static void tamper_case(void (*mutate)(char **v, size_t *n), unsigned line, const char *why,
                        int final_newline)
{
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "calls.jsonl");
    append_n(path, 0, 10, 0);
    expect_intact(path);
    char **v;
    size_t n = read_lines(path, &v);
    mutate(v, &n);
    write_lines(path, v, n, final_newline);
    expect_break(path, path, line, why);
    free_lines(v, n);
    free(path);
    tu_rmtree(dir);
}

static void edit_value(char **v, size_t *n)
{
    (void)n;
    char *p = strstr(v[3], "\"i\":3");
    p[4] = '9'; /* still valid JSON: only the next link can tell */
}

static void break_json(char **v, size_t *n)
{
    (void)n;
    v[3][1] = '#';
}

static void delete_line(char **v, size_t *n)
{
    free(v[5]);
    memmove(&v[5], &v[6], (*n - 6) * sizeof *v);
    (*n)--;
}

static void swap_lines(char **v, size_t *n)
{
    (void)n;
    char *t = v[2];
    v[2] = v[3];
    v[3] = t;
}

static void edit_first_prev(char **v, size_t *n)
{
    (void)n;
    char *p = strstr(v[0], "\"prev\":\"") + 8;
    p[10] = '1';
}

static void strip_prev(char **v, size_t *n)
{
    (void)n;
    char *p = strstr(v[6], ",\"prev\"");
    strcpy(p, "}");
}

static void noop(char **v, size_t *n)
{
    (void)v;
    (void)n;
}

static void test_tampering_is_found_at_the_right_line(void **state)
{
    (void)state;
    tamper_case(edit_value, 5, "prev does not match", 1);
    tamper_case(break_json, 4, "not a JSON object", 1);
    tamper_case(delete_line, 6, "prev does not match", 1);
    tamper_case(swap_lines, 3, "prev does not match", 1);
    tamper_case(edit_first_prev, 1, "does not start a chain", 1);
    tamper_case(strip_prev, 7, "does not end with \"prev\"", 1);
    tamper_case(noop, 10, "unterminated", 0);
}

static void test_every_single_byte_flip_is_detected(void **state)
{
    (void)state;
    /* Flip each byte of a five-line log, its last line too: every flip
     * surfaces as a break (the last line's through its anchor). */
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "calls.jsonl");
    append_n(path, 0, 5, 0);
    size_t len;
    char *orig = tu_read(path, &len);
    /* every byte but the last line's newline (a flip there only makes the
     * line unterminated, also a break, tested apart) */
    for (size_t i = 0; i + 1 < len; i++) {
        char *copy = malloc(len);
        memcpy(copy, orig, len);
        copy[i] ^= 0x01;
        FILE *f = fopen(path, "w");
        fwrite(copy, 1, len, f);
        fclose(f);
        struct aud_break b;
        struct as_err err = AS_ERR_INIT;
        if (aud_verify(path, &b, NULL, &err) != 1)
            fail_msg("flip at byte %zu not detected", i);
        free(copy);
    }
    free(orig);
    free(path);
    tu_rmtree(dir);
}

static void test_rotation_keeps_the_link(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *old = path_in(dir, "audit/calls.jsonl.1");
    append_n(path, 0, 40, 1000);
    struct stat st;
    assert_int_equal(stat(old, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    expect_intact(path);
    char **a, **b;
    size_t na = read_lines(old, &a), nb = read_lines(path, &b);
    char hex[65];
    sha256_hex(a[na - 1], strlen(a[na - 1]), hex);
    assert_non_null(strstr(b[0], hex)); /* first line of the new file links to .1 */
    /* editing .1's last line breaks the current file's first line */
    char *p = strstr(a[na - 1], "\"s\":\"value\"");
    p[5] = 'V';
    write_lines(old, a, na, 1);
    expect_break(path, path, 1, "prev does not match");
    free_lines(a, na);
    free_lines(b, nb);
    free(old);
    free(path);
    tu_rmtree(dir);
}

static void test_torn_line_is_closed_not_extended(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "calls.jsonl");
    append_n(path, 0, 3, 0);
    FILE *f = fopen(path, "a");
    fputs("{\"i\":3,\"s\":\"va", f); /* a crash mid-write */
    fclose(f);
    append_n(path, 4, 1, 0);
    char **v;
    size_t n = read_lines(path, &v);
    assert_int_equal(n, 5);
    assert_string_equal(v[3], "{\"i\":3,\"s\":\"va");
    char hex[65];
    sha256_hex(v[3], strlen(v[3]), hex);
    assert_non_null(strstr(v[4], hex));
    free_lines(v, n);
    expect_break(path, path, 4, "does not end with \"prev\"");
    free(path);
    tu_rmtree(dir);
}

static void test_verify_home_walks_every_log(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *calls = path_in(dir, "audit/calls.jsonl");
    char *trust = path_in(dir, "audit/trust.jsonl");
    char *run = path_in(dir, "runs/r1/events.jsonl");
    append_n(calls, 0, 3, 0);
    append_n(trust, 0, 3, 0);
    append_n(run, 0, 3, 0);
    struct aud_break b;
    struct as_err err = AS_ERR_INIT;
    size_t files = 0;
    assert_int_equal(aud_verify_home(dir, &b, &files, &err), 0);
    assert_int_equal(files, 3);
    char **v;
    size_t n = read_lines(run, &v);
    free(v[1]);
    v[1] = v[2];
    n--;
    write_lines(run, v, n, 1);
    free(v[0]);
    free(v[1]);
    free(v);
    assert_int_equal(aud_verify_home(dir, &b, &files, &err), 1);
    assert_string_equal(b.file, run);
    assert_int_equal(b.line, 2);
    free(calls);
    free(trust);
    free(run);
    tu_rmtree(dir);
}

/* Recomputes every "prev" of v in place: what someone editing the log does
 * so the chain alone still links. */
static void rechain(char **v, size_t n)
{
    char prev[65];
    memcpy(prev, ZEROS, sizeof prev);
    for (size_t i = 0; i < n; i++) {
        char *p = strstr(v[i], "\"prev\":\"") + 8;
        memcpy(p, prev, 64);
        sha256_hex(v[i], strlen(v[i]), prev);
    }
}

static void test_anchor_finds_the_ends(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *head = path_in(dir, "audit/calls.jsonl.head");
    append_n(path, 0, 10, 0);
    expect_intact(path);
    char **v;
    size_t n = read_lines(path, &v);
    assert_int_equal(n, 10);
    /* rows cut from the end: the chain still links, the anchor knows 10 */
    write_lines(path, v, 7, 1);
    expect_break(path, path, 8, "rows are missing: the anchor records 10 rows, the file holds 7");
    /* a row deleted and the chain recomputed */
    char **w = calloc(n, sizeof *w);
    for (size_t i = 0, k = 0; i < n; i++)
        if (i != 4)
            w[k++] = strdup(v[i]);
    rechain(w, n - 1);
    write_lines(path, w, n - 1, 1);
    expect_break(path, path, 10, "the anchor records 10 rows, the file holds 9");
    free_lines(w, n - 1);
    /* the last row edited: the chain alone cannot see it */
    char *p = strstr(v[n - 1], "\"s\":\"value\"");
    p[5] = 'V';
    write_lines(path, v, n, 1);
    expect_break(path, path, 10, "rows were rewritten since they were anchored");
    p[5] = 'v';
    write_lines(path, v, n, 1);
    expect_intact(path);
    /* the anchor removed */
    assert_int_equal(unlink(head), 0);
    expect_break(path, path, 0, "no anchor");
    /* a damaged anchor: reported, and the writer refuses to go on */
    FILE *f = fopen(head, "w");
    fputs("{\"v\":1,\"rows\":10}\n", f);
    fclose(f);
    expect_break(path, head, 0, "damaged");
    json_t *r = json_object();
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_append(path, r, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "damaged"));
    json_decref(r);
    /* removed: the next append adopts the log as it stands, and says so */
    assert_int_equal(unlink(head), 0);
    append_n(path, 10, 1, 0);
    struct aud_break b;
    memset(&b, 0, sizeof b);
    assert_int_equal(aud_verify(path, &b, NULL, &err), 0);
    assert_non_null(strstr(b.note, "anchored once it held 10 rows"));
    free_lines(v, n);
    free(head);
    free(path);
    tu_rmtree(dir);
}

static void test_rotation_keeps_the_anchor(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *old = path_in(dir, "audit/calls.jsonl.1");
    append_n(path, 0, 60, 1000); /* rotates several times */
    expect_intact(path);
    /* the oldest rows cut from the rotated file: the anchor counted them */
    char **a;
    size_t na = read_lines(old, &a);
    write_lines(old, a + 2, na - 2, 1);
    expect_break(path, old, na - 1, "rows in the rotated file");
    write_lines(old, a, na, 1);
    expect_intact(path);
    free_lines(a, na);
    free(old);
    free(path);
    tu_rmtree(dir);
}

static void test_evidence_files_are_never_followed(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = path_in(dir, "audit/calls.jsonl");
    char *audit = path_in(dir, "audit");
    char *sink = path_in(dir, "sink");
    assert_int_equal(mkdir(audit, 0700), 0);
    struct as_err err = AS_ERR_INIT;
    struct aud_break b;
    /* a symlink to /dev/null, or to a file elsewhere */
    const char *targets[] = {"/dev/null", sink};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(symlink(targets[i], path), 0);
        json_t *r = json_object();
        as_err_clear(&err);
        assert_int_equal(aud_append(path, r, NULL, &err), -1);
        json_decref(r);
        as_err_clear(&err);
        assert_int_equal(aud_append_ready(path, &err), -1);
        assert_int_equal(aud_verify(path, &b, NULL, &err), 1);
        assert_non_null(strstr(b.reason, "symlink"));
        assert_int_equal(unlink(path), 0);
    }
    struct stat st;
    assert_int_not_equal(stat(sink, &st), 0); /* nothing written through it */
    /* a directory */
    assert_int_equal(mkdir(path, 0700), 0);
    json_t *r = json_object();
    assert_int_equal(aud_append(path, r, NULL, &err), -1);
    json_decref(r);
    assert_int_equal(aud_append_ready(path, &err), -1);
    assert_int_equal(aud_verify(path, &b, NULL, &err), 1);
    assert_non_null(strstr(b.reason, "not a regular file"));
    assert_int_equal(rmdir(path), 0);
    /* and a regular one is ready */
    assert_int_equal(aud_append_ready(path, &err), 0);
    free(sink);
    free(audit);
    free(path);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_links_every_line),
        cmocka_unit_test(test_concurrent_writers_keep_one_chain),
        cmocka_unit_test(test_concurrent_writers_with_rotation),
        cmocka_unit_test(test_tampering_is_found_at_the_right_line),
        cmocka_unit_test(test_every_single_byte_flip_is_detected),
        cmocka_unit_test(test_rotation_keeps_the_link),
        cmocka_unit_test(test_torn_line_is_closed_not_extended),
        cmocka_unit_test(test_verify_home_walks_every_log),
        cmocka_unit_test(test_anchor_finds_the_ends),
        cmocka_unit_test(test_rotation_keeps_the_anchor),
        cmocka_unit_test(test_evidence_files_are_never_followed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
