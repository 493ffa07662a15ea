/* A dangling symlink at (or above) a target is named once, in the words
 * lock uses: "symlink resolves outside the project (<to>)" when it points
 * out, "symlink does not resolve (it points to <to>…)" when it points at
 * nothing inside; a link that resolves inside passes, and no message says
 * "not written" (apply adds that, diff does not). */
#include "testutil.h"

#include "adapters/internal.h"
#include "base/fs.h"
#include "base/strbuf.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_dangling_links(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    strbuf p = SB_INIT, q = SB_INIT;
    struct as_err e = AS_ERR_INIT;

    sb_addf(&p, "%s/CLAUDE.md", root);
    assert_int_equal(symlink("/nonexistent-agentstack/x.md", p.buf), 0);
    assert_int_equal(adp_i_contained(p.buf, root, &e), -1);
    assert_non_null(strstr(e.msg, "symlink resolves outside the project "
                                  "(/nonexistent-agentstack/x.md)"));
    assert_int_equal(count(e.msg, p.buf), 1);
    assert_null(strstr(e.msg, "not written"));
    assert_null(strstr(e.msg, "No such file"));

    as_err_clear(&e);
    sb_reset(&p);
    sb_addf(&p, "%s/.gemini", root);
    assert_int_equal(mkdir(p.buf, 0700), 0);
    sb_adds(&p, "/settings.json");
    assert_int_equal(symlink("../gem.json", p.buf), 0);
    assert_int_equal(adp_i_contained(p.buf, root, &e), -1);
    assert_non_null(strstr(e.msg, "symlink does not resolve (it points to ../gem.json"));
    assert_int_equal(count(e.msg, p.buf), 1);
    /* root NULL (global scope): never "outside the project" */
    as_err_clear(&e);
    sb_addf(&q, "%s/CLAUDE.md", root);
    assert_int_equal(fs_dangling_link(q.buf, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "symlink does not resolve (it points to "
                                  "/nonexistent-agentstack/x.md"));

    /* a dangling directory link above the target is the one named */
    as_err_clear(&e);
    sb_reset(&p);
    sb_addf(&p, "%s/.cursor", root);
    assert_int_equal(symlink("missing-dir", p.buf), 0);
    sb_reset(&q);
    sb_addf(&q, "%s/mcp.json", p.buf);
    assert_int_equal(adp_i_contained(q.buf, root, &e), -1);
    assert_non_null(strstr(e.msg, "symlink does not resolve (it points to missing-dir"));
    assert_int_equal(count(e.msg, p.buf), 1);

    /* once the target exists inside the project the link is fine */
    as_err_clear(&e);
    free(tu_write(root, "gem.json", "{}\n"));
    sb_reset(&p);
    sb_addf(&p, "%s/.gemini/settings.json", root);
    assert_int_equal(adp_i_contained(p.buf, root, &e), 0);

    sb_release(&p);
    sb_release(&q);
    tu_rmtree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dangling_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
