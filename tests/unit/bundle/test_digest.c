/* Digest vectors of docs/formats.md and the tree rules:
 * what moves a pin and what must not. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "base/toml.h"
#include "bundle/digest.h"

#define VEC_TREE "175916830d05e6ff1af95112ed83df9d5840492b4ad29b28650a67892aa5e48b"
#define VEC_ROOT "4bb05f4002f9dec459c1d4178a4b15f248598cd2aeee5259d32ceb433a7ebf66"
#define VEC_SETTINGS "2701f552d040f599dbf83ac98d6ded1793e4b74d5e25e1806f7fa7e6e932129a"
#define VEC_STAMP "3e20e2fe0e01de432e4f0f67636293d8326a2204a75235779c28709d80a5c86d"

static char *mkskill(const char *root)
{
    char *d = NULL;
    assert_true(asprintf(&d, "%s/skill", root) > 0);
    free(tu_write(root, "skill/SKILL.md", "---\ndescription: demo\n---\n"));
    free(tu_write(root, "skill/scripts/run.sh", "echo hi\n"));
    return d;
}

static void tree_hex(const char *dir, char hex[65])
{
    struct as_err err = AS_ERR_INIT;
    int rc = digest_skill_tree(dir, hex, &err);
    if (rc != 0)
        fail_msg("digest failed: %s", err.msg);
}

static void test_skill_vector(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *d = mkskill(t);
    char hex[65];
    tree_hex(d, hex);
    assert_string_equal(hex, VEC_TREE);
    free(d);
    tu_rmtree(t);
}

static void test_root_vectors(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *f = tu_write(t, "run.sh", "echo hi\n");
    char hex[65];
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_integrity_root(f, hex, &err), 0);
    assert_string_equal(hex, VEC_ROOT);
    /* A single file is not a skill. */
    assert_int_equal(digest_skill_tree(f, hex, &err), -1);
    /* Plain file digest is plain SHA-256. */
    assert_int_equal(digest_file(f, hex, &err), 0);
    assert_string_equal(hex, "ab08508fdf5ca4da5c4995987bc41c56c048aaa5eeb046417ae4049b7d40286e");
    free(f);
    tu_rmtree(t);
}

static void test_settings_and_stamp_vectors(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    const char *a = "v = {allow = [\"Bash(ls)\"], defaultMode = \"plan\"}\n";
    const char *b = "v = {defaultMode = \"plan\", allow = [\"Bash(ls)\"]}\n";
    toml_value *ta = toml_parse("a", a, strlen(a), &err);
    toml_value *tb = toml_parse("b", b, strlen(b), &err);
    assert_non_null(ta);
    assert_non_null(tb);
    char ha[65], hb[65];
    digest_settings_value(toml_get(ta, "v"), ha);
    digest_settings_value(toml_get(tb, "v"), hb);
    assert_string_equal(ha, VEC_SETTINGS);
    assert_string_equal(hb, VEC_SETTINGS);
    toml_free(ta);
    toml_free(tb);

    /* Array order is content: ["x","y"] != ["y","x"] (scenario 15). */
    const char *c = "a = [\"x\", \"y\"]\nb = [\"y\", \"x\"]\n";
    toml_value *tc = toml_parse("c", c, strlen(c), &err);
    assert_non_null(tc);
    digest_settings_value(toml_get(tc, "a"), ha);
    digest_settings_value(toml_get(tc, "b"), hb);
    assert_string_not_equal(ha, hb);
    toml_free(tc);

    struct digest_blob m = {1, "version = 1\n", 12}, o = {0, NULL, 0};
    char hs[65];
    digest_manifest_stamp(&m, &o, hs);
    assert_string_equal(hs, VEC_STAMP);
    /* An empty overlay is not an absent one. */
    struct digest_blob e = {1, "", 0};
    digest_manifest_stamp(&m, &e, hs);
    assert_string_not_equal(hs, VEC_STAMP);
}

static void test_inline_server(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    const char *a = "[s]\ntype = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n"
                    "targets = [\"*\"]\nenv = {}\ncwd = \"\"\n";
    const char *b = "[s]\nargs = [\"-y\", \"x\"]\ncommand = \"npx\"\ntype = \"stdio\"\n";
    const char *c = "[s]\ntype = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n"
                    "env = {NODE_OPTIONS = \"--require ./x.js\"}\n";
    toml_value *ta = toml_parse("a", a, strlen(a), &err);
    toml_value *tb = toml_parse("b", b, strlen(b), &err);
    toml_value *tc = toml_parse("c", c, strlen(c), &err);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_non_null(tc);
    char ha[65], hb[65], hc[65];
    digest_inline_server(toml_get(ta, "s"), ha);
    digest_inline_server(toml_get(tb, "s"), hb);
    digest_inline_server(toml_get(tc, "s"), hc);
    /* Defaults and key order do not move the pin; an env edit does. */
    assert_string_equal(ha, hb);
    assert_string_not_equal(ha, hc);

    /* The documented formula, byte for byte. */
    const char *canon = "{\"args\":[\"-y\",\"x\"],\"command\":\"npx\",\"type\":\"stdio\"}";
    strbuf sb = SB_INIT;
    sb_add(&sb, "agentstack-inline-server-v1", 28);
    sb_adds(&sb, canon);
    char want[65];
    sha256_hex(sb.buf, sb.len, want);
    assert_string_equal(ha, want);
    sb_release(&sb);
    toml_free(ta);
    toml_free(tb);
    toml_free(tc);
}

/* Component-wise order: "a/b" sorts before "a-b" although '-' < '/' in ASCII. */
static void test_order(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    free(tu_write(t, "s/a-b", "1"));
    free(tu_write(t, "s/a/b", "2"));
    free(tu_write(t, "s/a.c", "3"));
    char *d = NULL;
    assert_true(asprintf(&d, "%s/s", t) > 0);
    char hex[65];
    tree_hex(d, hex);

    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, "agentstack-dir-digest-v2", 25);
    const char *order[][2] = {{"a/b", "2"}, {"a-b", "1"}, {"a.c", "3"}};
    for (int i = 0; i < 3; i++) {
        sha256_update_u64le(&c, strlen(order[i][0]));
        sha256_update(&c, order[i][0], strlen(order[i][0]));
        sha256_update_u64le(&c, 1);
        sha256_update(&c, order[i][1], 1);
    }
    uint8_t raw[32];
    char want[65];
    sha256_final(&c, raw);
    hex_encode(raw, 32, want);
    assert_string_equal(hex, want);
    free(d);
    tu_rmtree(t);
}

static void test_invariants(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *d = mkskill(t);
    char base[65], hex[65];
    tree_hex(d, base);
    char p[4096];

    /* chmod, touch, empty dirs and .git/ do not move it. */
    snprintf(p, sizeof p, "%s/scripts/run.sh", d);
    assert_int_equal(chmod(p, 0755), 0);
    struct timeval tv[2] = {{1000, 0}, {2000, 0}};
    assert_int_equal(utimes(p, tv), 0);
    snprintf(p, sizeof p, "%s/empty", d);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/empty/deeper", d);
    mkdir(p, 0755);
    free(tu_write(d, ".git/HEAD", "ref: refs/heads/main\n"));
    free(tu_write(d, "scripts/.git", "gitdir: ../x\n"));
    tree_hex(d, hex);
    assert_string_equal(hex, base);

    /* A new hidden file is content. */
    free(tu_write(d, ".hidden", "x"));
    tree_hex(d, hex);
    assert_string_not_equal(hex, base);
    snprintf(p, sizeof p, "%s/.hidden", d);
    unlink(p);
    tree_hex(d, hex);
    assert_string_equal(hex, base);

    /* A rename moves it. */
    char q[4096];
    snprintf(p, sizeof p, "%s/scripts/run.sh", d);
    snprintf(q, sizeof q, "%s/scripts/run2.sh", d);
    assert_int_equal(rename(p, q), 0);
    tree_hex(d, hex);
    assert_string_not_equal(hex, base);
    assert_int_equal(rename(q, p), 0);
    free(d);
    tu_rmtree(t);
}

/* Scenario 11: one byte changed, same size, same mtime -> a different digest. */
static void test_same_size_same_mtime(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *d = mkskill(t);
    char p[4096], before[65], after[65];
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    struct stat st0, st1;
    assert_int_equal(stat(p, &st0), 0);
    tree_hex(d, before);
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "X", 1, 5), 1);
    close(fd);
    struct timespec ts[2] = {st0.st_atim, st0.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    assert_int_equal(stat(p, &st1), 0);
    assert_int_equal(st0.st_size, st1.st_size);
    assert_int_equal(st0.st_mtim.tv_sec, st1.st_mtim.tv_sec);
    assert_int_equal(st0.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
    tree_hex(d, after);
    assert_string_not_equal(before, after);
    free(d);
    tu_rmtree(t);
}

static void test_root_includes_git(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    free(tu_write(t, "r/tool.sh", "echo\n"));
    free(tu_write(t, "r/.git/config", "[core]\n"));
    char *d = NULL;
    assert_true(asprintf(&d, "%s/r", t) > 0);
    struct as_err err = AS_ERR_INIT;
    char a[65], b[65];
    assert_int_equal(digest_integrity_root(d, a, &err), 0);
    free(tu_write(t, "r/.git/config", "[core)\n"));
    assert_int_equal(digest_integrity_root(d, b, &err), 0);
    assert_string_not_equal(a, b);
    free(d);
    tu_rmtree(t);
}

static void test_refusals(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *d = mkskill(t);
    char p[4096], hex[65];
    struct as_err err = AS_ERR_INIT;

    /* A symlink anywhere in the tree. */
    snprintf(p, sizeof p, "%s/scripts/link", d);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    assert_int_equal(digest_skill_tree(d, hex, &err), -1);
    assert_non_null(strstr(err.msg, "skill content contains a symlink"));
    unlink(p);

    /* A symlinked root. */
    char q[4096];
    snprintf(q, sizeof q, "%s/alias", t);
    assert_int_equal(symlink(d, q), 0);
    as_err_clear(&err);
    assert_int_equal(digest_skill_tree(q, hex, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));

    /* A FIFO fails at once instead of blocking the reader. */
    snprintf(p, sizeof p, "%s/scripts/pipe", d);
    assert_int_equal(mkfifo(p, 0600), 0);
    as_err_clear(&err);
    assert_int_equal(digest_skill_tree(d, hex, &err), -1);
    assert_non_null(strstr(err.msg, "FIFO"));
    as_err_clear(&err);
    assert_int_equal(digest_file(p, hex, &err), -1);
    unlink(p);

    /* Integrity roots refuse symlinks too. */
    snprintf(p, sizeof p, "%s/scripts/link", d);
    assert_int_equal(symlink("run.sh", p), 0);
    as_err_clear(&err);
    assert_int_equal(digest_integrity_root(d, hex, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    unlink(p);

    /* Missing path. */
    as_err_clear(&err);
    snprintf(p, sizeof p, "%s/nope", t);
    assert_int_equal(digest_skill_tree(p, hex, &err), -1);
    free(d);
    tu_rmtree(t);
}

static void test_depth(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    strbuf sb = SB_INIT;
    sb_adds(&sb, "deep");
    for (int i = 0; i < 64; i++)
        sb_adds(&sb, "/d");
    sb_adds(&sb, "/f");
    free(tu_write(t, sb.buf, "x"));
    char p[4096], hex[65];
    struct as_err err = AS_ERR_INIT;
    snprintf(p, sizeof p, "%s/deep", t);
    /* 64 nested directories are fine. */
    assert_int_equal(digest_skill_tree(p, hex, &err), 0);
    sb_setlen(&sb, 0);
    sb_adds(&sb, "deep");
    for (int i = 0; i < 65; i++)
        sb_adds(&sb, "/d");
    sb_adds(&sb, "/f");
    free(tu_write(t, sb.buf, "x"));
    assert_int_equal(digest_skill_tree(p, hex, &err), -1);
    assert_non_null(strstr(err.msg, "deeper than 64"));
    sb_release(&sb);
    tu_rmtree(t);
}

struct copy_ctx {
    strbuf log;
};
static int sink_begin(void *c, const char *rel, uint64_t size, struct as_err *err)
{
    (void)err;
    sb_addf(&((struct copy_ctx *)c)->log, "[%s:%llu]", rel, (unsigned long long)size);
    return 0;
}
static int sink_data(void *c, const void *d, size_t n, struct as_err *err)
{
    (void)err;
    sb_add(&((struct copy_ctx *)c)->log, d, n);
    return 0;
}

static void test_sink_and_stats(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *d = mkskill(t);
    struct copy_ctx cc = {SB_INIT};
    struct digest_sink sink = {.ctx = &cc, .file_begin = sink_begin, .file_data = sink_data};
    struct digest_stats st;
    char hex[65];
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_tree(d, DIGEST_TREE_SKILL, &sink, &st, hex, &err), 0);
    assert_string_equal(hex, VEC_TREE);
    assert_int_equal(st.files, 2);
    assert_int_equal(st.bytes, 26 + 8);
    assert_string_equal(cc.log.buf,
                        "[SKILL.md:26]---\ndescription: demo\n---\n[scripts/run.sh:8]echo hi\n");
    sb_release(&cc.log);
    free(d);
    tu_rmtree(t);
}

/* A file bigger than the buffer streams in pieces and still matches plain SHA-256 framing. */
static void test_large_file(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    size_t n = 3 * DIGEST_BUF_SIZE + 17;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[n] = '\0';
    free(tu_write(t, "s/big", big));
    char p[4096], hex[65];
    snprintf(p, sizeof p, "%s/s", t);
    tree_hex(p, hex);
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, "agentstack-dir-digest-v2", 25);
    sha256_update_u64le(&c, 3);
    sha256_update(&c, "big", 3);
    sha256_update_u64le(&c, n);
    sha256_update(&c, big, n);
    uint8_t raw[32];
    char want[65];
    sha256_final(&c, raw);
    hex_encode(raw, 32, want);
    assert_string_equal(hex, want);
    free(big);
    tu_rmtree(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skill_vector),
        cmocka_unit_test(test_root_vectors),
        cmocka_unit_test(test_settings_and_stamp_vectors),
        cmocka_unit_test(test_inline_server),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_same_size_same_mtime),
        cmocka_unit_test(test_root_includes_git),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_sink_and_stats),
        cmocka_unit_test(test_large_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
