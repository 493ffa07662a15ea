/* agentstack.lock: reading (v1 upgrade, v3 refusal, checksum normalization,
 * malformed input), the exact layout of docs/formats.md, and byte-stable rewrites. */
#include "testutil.h"

#include "base/strbuf.h"
#include "bundle/lockfile.h"

#define H1 "1759168300000000000000000000000000000000000000000000000000000000"
#define H2 "abcdef0000000000000000000000000000000000000000000000000000000000"

static struct lockfile *parse(const char *text, struct as_err *err)
{
    return lockfile_parse("agentstack.lock", text, strlen(text), err);
}

static void test_layout_roundtrip(void **state)
{
    (void)state;
    const char *src = "version = 2\n"
                      "manifest_digest = \"" H1 "\"\n"
                      "\n[[skill]]\nname = \"zeta\"\nsource = \"path\"\npath = \"./z\"\n"
                      "checksum = \"" H2 "\"\nlicense = \"MIT\"\n"
                      "\n[[skill]]\nname = \"alpha\"\nsource = \"git\"\ngit = \"https://x\"\n"
                      "rev = \"0123\"\nchecksum = \"" H1 "\"\n"
                      "\n[[server]]\nname = \"fs\"\nsource = \"inline\"\nchecksum = \"" H1 "\"\n"
                      "\n[[instruction]]\nname = \"house\"\npath = \"AGENTS.md\"\n"
                      "checksum = \"" H1 "\"\n"
                      "\n[[instruction.variant]]\ncli = \"codex\"\npath = \"c.md\"\n"
                      "checksum = \"" H2 "\"\n"
                      "\n[[executable]]\npath = \"tools\"\nkind = \"root\"\nchecksum = \"" H1 "\"\n"
                      "\n[[executable]]\npath = \"tools\"\nkind = \"file\"\nchecksum = \"" H2 "\"\n"
                      "\n[[setting]]\ntarget = \"claude\"\nkey = \"perm\"\nchecksum = \"" H1 "\"\n";
    struct as_err err = AS_ERR_INIT;
    struct lockfile *l = parse(src, &err);
    assert_non_null(l);
    strbuf out = SB_INIT;
    lockfile_render(l, &out);
    /* Sorted: alpha before zeta; executables file < root for one path. */
    const char *want =
        "version = 2\n"
        "manifest_digest = \"" H1 "\"\n"
        "\n[[skill]]\nname = \"alpha\"\nsource = \"git\"\ngit = \"https://x\"\n"
        "rev = \"0123\"\nchecksum = \"" H1 "\"\n"
        "\n[[skill]]\nname = \"zeta\"\nsource = \"path\"\npath = \"./z\"\n"
        "checksum = \"" H2 "\"\nlicense = \"MIT\"\n"
        "\n[[server]]\nname = \"fs\"\nsource = \"inline\"\nchecksum = \"" H1 "\"\n"
        "\n[[instruction]]\nname = \"house\"\npath = \"AGENTS.md\"\n"
        "checksum = \"" H1 "\"\n"
        "\n[[instruction.variant]]\ncli = \"codex\"\npath = \"c.md\"\n"
        "checksum = \"" H2 "\"\n"
        "\n[[executable]]\npath = \"tools\"\nkind = \"file\"\nchecksum = \"" H2 "\"\n"
        "\n[[executable]]\npath = \"tools\"\nkind = \"root\"\nchecksum = \"" H1 "\"\n"
        "\n[[setting]]\ntarget = \"claude\"\nkey = \"perm\"\nchecksum = \"" H1 "\"\n";
    assert_string_equal(out.buf, want);
    /* Render(parse(render)) is the same bytes. */
    struct lockfile *l2 = parse(out.buf, &err);
    assert_non_null(l2);
    strbuf again = SB_INIT;
    lockfile_render(l2, &again);
    assert_string_equal(again.buf, out.buf);
    sb_release(&out);
    sb_release(&again);
    lockfile_free(l);
    lockfile_free(l2);
}

static void test_versions(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct lockfile *l =
        parse("version = 1\n[[server]]\nname = \"a\"\nchecksum = \"" H1 "\"\n", &err);
    assert_non_null(l);
    assert_int_equal(l->version, 2);
    assert_string_equal(l->servers.v[0].source, "inline");
    strbuf out = SB_INIT;
    lockfile_render(l, &out);
    assert_true(strncmp(out.buf, "version = 2\n", 12) == 0);
    sb_release(&out);
    lockfile_free(l);

    as_err_clear(&err);
    assert_null(parse("version = 3\n", &err));
    assert_non_null(strstr(err.msg, "upgrade agentstack"));
    assert_int_equal(err.line, 1);
    as_err_clear(&err);
    assert_null(parse("version = 0\n", &err));
    as_err_clear(&err);
    assert_null(parse("[[skill]]\n", &err));
    assert_non_null(strstr(err.msg, "version"));
}

static void test_checksums(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct lockfile *l = parse("version = 2\n[[server]]\nname = \"a\"\n"
                               "checksum = \"sha256:ABCDEF0000000000000000000000000000000000000"
                               "000000000000000000000\"\n",
                               &err);
    assert_non_null(l);
    assert_string_equal(l->servers.v[0].checksum, H2);
    lockfile_free(l);
    as_err_clear(&err);
    l = parse("version = 2\n\n[[server]]\nname = \"a\"\nchecksum = \"abc\"\n", &err);
    assert_null(l);
    assert_non_null(strstr(err.msg, "malformed checksum"));
    assert_int_equal(err.line, 5);
    as_err_clear(&err);
    assert_null(parse("version = 2\n[[server]]\nchecksum = \"" H1 "\"\n", &err));
    assert_non_null(strstr(err.msg, "missing `name`"));
    as_err_clear(&err);
    assert_null(parse("version = 2\nskill = 3\n", &err));
    as_err_clear(&err);
    assert_null(parse("version = 2\n[[executable]]\npath = \"x\"\nkind = \"dir\"\n"
                      "checksum = \"" H1 "\"\n",
                      &err));
    as_err_clear(&err);
    /* Unknown keys and tables are ignored. */
    l = parse("version = 2\nfuture = 1\n[[server]]\nname = \"a\"\nnew = true\n"
              "checksum = \"" H1 "\"\n[[gadget]]\nx = 1\n",
              &err);
    assert_non_null(l);
    lockfile_free(l);
    /* Garbage never crashes. */
    const char *bad[] = {"",
                         "=",
                         "version = \"2\"",
                         "version = 2\n[[skill]]\nname = 1\n",
                         "\xff\xfe",
                         "version = 2\n[skill]\nname = \"a\"\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        as_err_clear(&err);
        assert_null(lockfile_parse("x", bad[i], strlen(bad[i]), &err));
        assert_true(as_err_isset(&err));
    }
}

static void test_save_unchanged(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/agentstack.lock", t);
    struct lockfile *l = lockfile_new();
    struct lock_server s = {0};
    s.name = strdup("fs");
    s.source = strdup("inline");
    memcpy(s.checksum, H1, 65);
    vec_push(&l->servers, s);
    bool written = false;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lockfile_save(l, path, t, NULL, 0, false, &written, &err), 0);
    assert_true(written);
    size_t n = 0;
    char *bytes = tu_read(path, &n);
    struct stat st0;
    stat(path, &st0);
    assert_int_equal(lockfile_save(l, path, t, bytes, n, true, &written, &err), 0);
    assert_false(written);
    struct stat st1;
    stat(path, &st1);
    assert_int_equal(st0.st_ino, st1.st_ino);
    free(bytes);
    lockfile_free(l);
    tu_rmtree(t);
}

/* [[extension]] and [[workflow]] are real rows: parsed, sorted, roles sorted
 * and laid out one per line, blueprint checksum kept, written after
 * [[executable]] and before [[setting]]. */
static void test_extension_workflow_rows(void **state)
{
    (void)state;
    const char *src = "version = 2\n"
                      "\n[[setting]]\ntarget = \"claude\"\nkey = \"k\"\nchecksum = \"" H1 "\"\n"
                      "\n[[workflow]]\nname = \"wf\"\nroles = [\"writer\", \"critic\"]\n"
                      "source = \"path\"\npath = \"wf\"\nchecksum = \"" H1 "\"\n"
                      "blueprint = \"bp.toml\"\nblueprint_checksum = \"SHA256:" H2 "\"\n"
                      "\n[[extension]]\nname = \"zz\"\ntarget = \"pi\"\nsource = \"path\"\n"
                      "path = \"ext/zz\"\nchecksum = \"" H2 "\"\n"
                      "\n[[extension]]\nname = \"aa\"\ntarget = \"opencode\"\n"
                      "checksum = \"" H1 "\"\n";
    struct as_err err = AS_ERR_INIT;
    struct lockfile *l = parse(src, &err);
    assert_non_null(l);
    assert_int_equal(l->extensions.n, 2);
    assert_string_equal(lockfile_extension(l, "aa")->source, "library");
    const struct lock_workflow *w = lockfile_workflow(l, "wf");
    assert_non_null(w);
    assert_string_equal(w->roles.v[0], "critic");
    assert_string_equal(w->blueprint_checksum, H2);
    strbuf out = SB_INIT;
    lockfile_render(l, &out);
    const char *want =
        "version = 2\n"
        "\n[[extension]]\nname = \"aa\"\ntarget = \"opencode\"\nsource = \"library\"\n"
        "checksum = \"" H1 "\"\n"
        "\n[[extension]]\nname = \"zz\"\ntarget = \"pi\"\nsource = \"path\"\npath = \"ext/zz\"\n"
        "checksum = \"" H2 "\"\n"
        "\n[[workflow]]\nname = \"wf\"\nroles = [\n    \"critic\",\n    \"writer\",\n]\n"
        "source = \"path\"\npath = \"wf\"\nchecksum = \"" H1 "\"\nblueprint = \"bp.toml\"\n"
        "blueprint_checksum = \"" H2 "\"\n"
        "\n[[setting]]\ntarget = \"claude\"\nkey = \"k\"\nchecksum = \"" H1 "\"\n";
    assert_string_equal(out.buf, want);
    /* A re-parse of the output renders the same bytes. */
    struct lockfile *l2 = parse(out.buf, &err);
    assert_non_null(l2);
    strbuf out2 = SB_INIT;
    lockfile_render(l2, &out2);
    assert_string_equal(out.buf, out2.buf);
    sb_release(&out);
    sb_release(&out2);
    lockfile_free(l);
    lockfile_free(l2);
}

static void test_extension_workflow_errors(void **state)
{
    (void)state;
    const char *bad[] = {
        "version = 2\n[[workflow]]\nname = \"w\"\nroles = \"x\"\nchecksum = \"" H1 "\"\n",
        "version = 2\n[[workflow]]\nname = \"w\"\nroles = [1]\nchecksum = \"" H1 "\"\n",
        "version = 2\n[[workflow]]\nname = \"w\"\nchecksum = \"" H1 "\"\n"
        "blueprint_checksum = \"xyz\"\n",
        "version = 2\n[[extension]]\nname = \"e\"\n",
        "version = 2\nextension = 3\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct as_err err = AS_ERR_INIT;
        struct lockfile *l = parse(bad[i], &err);
        assert_null(l);
        assert_true(err.line > 0 || err.msg[0]);
        assert_non_null(strstr(err.path, "agentstack.lock"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_roundtrip),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_checksums),
        cmocka_unit_test(test_save_unchanged),
        cmocka_unit_test(test_extension_workflow_rows),
        cmocka_unit_test(test_extension_workflow_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
