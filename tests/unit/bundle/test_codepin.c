/* What of a server's own code the lock pins (bundle/codepin.h): the
 * directory of a script in a subdirectory, a directory argument, the path
 * of a --flag=path argument, a root-level script with the same-language
 * files beside it (and nothing else of the root), trees replacing what
 * they cover, and errors (never skips) for symlinks and traversal; plus the
 * code tree digest's skips and bounds. */
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/codepin.h"
#include "bundle/digest.h"

static struct manifest *load(const char *proj, const char *text)
{
    char *path = xasprintf("%s/agentstack.toml", proj);
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = path,
                                  .data = text,
                                  .len = strlen(text),
                                  .manifest_dir = proj,
                                  .project_root = proj};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    free(path);
    return m;
}

/* "kind:rel" of every ref, ';'-joined; errors as "!rel". */
static void refs_of(const char *proj, const char *server_toml, strbuf *out, strvec *not_pinned)
{
    char *text = xasprintf("version = 1\n\n[servers.s]\ntype = \"stdio\"\n%s", server_toml);
    struct manifest *m = load(proj, text);
    free(text);
    codepin_refs r = VEC_INIT;
    codepin_collect(proj, manifest_server(m, "s"), &r, not_pinned);
    for (size_t i = 0; i < r.n; i++)
        sb_addf(out, "%s%s%s:%s", i ? ";" : "", r.v[i].error ? "!" : "",
                codepin_kind_name(r.v[i].kind), r.v[i].rel);
    codepin_free(&r);
    manifest_free(m);
}

static int any_has(const strvec *v, const char *needle)
{
    for (size_t i = 0; i < v->n; i++)
        if (strstr(v->v[i], needle))
            return 1;
    return 0;
}

static void test_rules(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    static const char *const files[] = {
        "proj/server.py",   "proj/helper.py",   "proj/other.py",          "proj/notes.md",
        "proj/run.js",      "proj/util.ts",     "proj/srv/a.py",          "proj/srv/sub/b.py",
        "proj/hooks/h.cjs", "proj/app/main.py", "proj/pkg.py/__init__.py"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        free(tu_write(dir, files[i], "x\n"));
    char *proj = xasprintf("%s/proj", dir);
    strbuf got = SB_INIT;
    strvec np = STRVEC_INIT;

    /* A root-level script: it and its language beside it, no directory. */
    refs_of(proj, "command = \"python3\"\nargs = [\"server.py\"]\n", &got, &np);
    assert_string_equal(got.buf, "file:server.py;file:helper.py;file:other.py");
    assert_true(np.n >= 2); /* python3 on PATH; what it loads from outside */
    assert_true(any_has(&np, "python3 — "));
    strvec_clear(&np);

    /* A script in a subdirectory: the directory, as a tree. */
    sb_reset(&got);
    refs_of(proj, "command = \"python3\"\nargs = [\"srv/sub/b.py\"]\n", &got, NULL);
    assert_string_equal(got.buf, "tree:srv/sub");
    /* A directory argument; a tree covering another pinned path replaces it. */
    sb_reset(&got);
    refs_of(proj, "command = \"python3\"\nargs = [\"./srv\", \"srv/sub/b.py\"]\n", &got, NULL);
    assert_string_equal(got.buf, "tree:srv");
    /* --flag=path and -r path (the plain argument after it); a .js script
     * at the root pins .ts beside it, not .py. */
    sb_reset(&got);
    refs_of(proj,
            "command = \"node\"\nargs = [\"--require=./hooks/h.cjs\", \"-r\", \"./hooks/h.cjs\", "
            "\"run.js\"]\n",
            &got, NULL);
    assert_string_equal(got.buf, "tree:hooks;file:run.js;file:util.ts");
    /* A cwd: paths are relative to it. */
    sb_reset(&got);
    refs_of(proj, "command = \"python3\"\nargs = [\"a.py\"]\ncwd = \"srv\"\n", &got, NULL);
    assert_string_equal(got.buf, "tree:srv");
    /* The project root itself pins nothing, and says so. */
    sb_reset(&got);
    refs_of(proj, "command = \"node\"\nargs = [\".\"]\n", &got, &np);
    assert_string_equal(got.buf, "");
    assert_true(any_has(&np, "too broad"));
    strvec_clear(&np);
    /* An absolute path outside: not pinned, named. */
    sb_reset(&got);
    refs_of(proj, "command = \"/bin/sh\"\nargs = [\"-c\", \"true\"]\n", &got, &np);
    assert_string_equal(got.buf, "");
    assert_true(any_has(&np, "/bin/sh (outside the project)"));
    strvec_clear(&np);

    /* Traversal and symlinks are errors, not skips. */
    char link[2100];
    snprintf(link, sizeof link, "%s/proj/linked.py", dir);
    assert_int_equal(symlink("server.py", link), 0);
    sb_reset(&got);
    refs_of(proj, "command = \"python3\"\nargs = [\"server.py\"]\n", &got, NULL);
    assert_non_null(strstr(got.buf, "!file:linked.py"));
    sb_reset(&got);
    refs_of(proj, "command = \"python3\"\nargs = [\"../proj/server.py\"]\n", &got, NULL);
    assert_non_null(strstr(got.buf, "!file:../proj/server.py"));

    sb_release(&got);
    free(proj);
    tu_rmtree(dir);
}

static void test_code_tree_digest(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    free(tu_write(dir, "t/a.py", "a\n"));
    char *t = xasprintf("%s/t", dir);
    char h1[SHA256_HEX_LEN + 1], h2[SHA256_HEX_LEN + 1];
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_code_tree(t, h1, &err), 0);
    /* VCS metadata and bytecode caches do not move it ... */
    free(tu_write(dir, "t/__pycache__/a.cpython-311.pyc", "cache\n"));
    free(tu_write(dir, "t/.git/HEAD", "ref\n"));
    free(tu_write(dir, "t/sub/.hg/x", "x\n"));
    assert_int_equal(digest_code_tree(t, h2, &err), 0);
    free(tu_write(dir, "t/sub/.keep", "")); /* ... a new file does */
    char h3[SHA256_HEX_LEN + 1];
    assert_int_equal(digest_code_tree(t, h3, &err), 0);
    assert_string_not_equal(h1, h3);
    /* sub/.hg is skipped, sub/ alone holds .keep: same as without caches */
    char *keep = tu_write(dir, "t/sub/.keep", "");
    unlink(keep);
    free(keep);
    assert_int_equal(digest_code_tree(t, h2, &err), 0);
    assert_string_equal(h1, h2);
    /* Past the bound: an error. */
    for (int i = 0; i <= DIGEST_CODE_MAX_FILES; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "t/many/%d", i);
        free(tu_write(dir, rel, ""));
    }
    err = (struct as_err)AS_ERR_INIT;
    assert_int_equal(digest_code_tree(t, h2, &err), -1);
    assert_non_null(strstr(err.msg, "too large to pin"));
    free(t);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_code_tree_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
