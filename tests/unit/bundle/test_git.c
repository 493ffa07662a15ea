/* git sources: URL allowlist checks (nothing reaches git that could be read
 * as an option or a remote helper), commit ids, slugs, and offline lookups
 * that run nothing and write nothing. */
#include "testutil.h"

#include <sys/stat.h>

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/git.h"

static void test_urls(void **state)
{
    (void)state;
    const char *ok[] = {"https://example.com/a/b.git", "ssh://git@example.com/a.git",
                        "git@example.com:a/b.git", "file:///srv/repo", "/srv/repo"};
    const char *bad[] = {"",          "-uhelp",        "ext::sh -c id", "http://x/y",   "git://x/y",
                         "ftp://x/y", "relative/repo", "./repo",        "https://x/\n", "fd::17"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        struct as_err err = AS_ERR_INIT;
        assert_int_equal(git_check_url(ok[i], &err), 0);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct as_err err = AS_ERR_INIT;
        assert_int_equal(git_check_url(bad[i], &err), -1);
        assert_true(err.msg[0] != '\0');
    }
}

static void test_commit_and_slug(void **state)
{
    (void)state;
    assert_true(git_is_commit("0123456789abcdef0123456789abcdef01234567"));
    assert_false(git_is_commit("0123456789ABCDEF0123456789abcdef01234567"));
    assert_false(git_is_commit("main"));
    assert_false(git_is_commit(NULL));
    strbuf s = SB_INIT;
    git_slug("https://github.com/a/b.git", &s);
    assert_string_equal(s.buf, "https---github-com-a-b-git");
    sb_release(&s);
}

/* Offline: a branch name or an uncached commit is "not cached" (0); nothing
 * is created under the home. A cached commit resolves without git. */
static void test_offline(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    strbuf commit = SB_INIT, co = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(git_resolve(dir, "/srv/none", "main", false, &commit, &co, &err), 0);
    const char *c = "0123456789abcdef0123456789abcdef01234567";
    assert_int_equal(git_resolve(dir, "/srv/none", c, false, &commit, &co, &err), 0);
    char *store = xasprintf("%s/store", dir);
    struct stat st;
    assert_int_not_equal(lstat(store, &st), 0);
    char *cached = xasprintf("%s/store/co/-srv-none/%s", dir, c);
    char *rel = xasprintf("store/co/-srv-none/%s/SKILL.md", c);
    free(tu_write(dir, rel, "x"));
    free(rel);
    assert_int_equal(git_resolve(dir, "/srv/none", c, false, &commit, &co, &err), 1);
    assert_string_equal(commit.buf, c);
    assert_string_equal(co.buf, cached);
    /* An option-looking rev is refused before anything runs. */
    assert_int_equal(git_resolve(dir, "/srv/none", "--upload-pack=x", true, &commit, &co, &err),
                     -1);
    free(store);
    free(cached);
    sb_release(&commit);
    sb_release(&co);
    tu_rmtree(dir);
}

/* Both git runners (this module's and the library's) take their options
 * from git_harden_argv: each hardening either of them ever carried is in
 * the one list, as "-c" pairs. */
static void test_one_hardening_list(void **state)
{
    (void)state;
    strvec av = STRVEC_INIT;
    git_harden_argv(&av);
    assert_true(av.n > 0 && av.n % 2 == 0);
    for (size_t i = 0; i < av.n; i += 2)
        assert_string_equal(av.v[i], "-c");
    static const char *const want[] = {
        "core.hooksPath=/dev/null",   "core.fsmonitor=false",        "protocol.allow=never",
        "protocol.file.allow=always", "protocol.https.allow=always", "protocol.ssh.allow=always",
        "protocol.ext.allow=never",   "protocol.fd.allow=never",     "submodule.recurse=false",
        "transfer.fsckObjects=true",  "filter.lfs.smudge=",          "filter.lfs.process=",
        "filter.lfs.required=false",  "credential.helper=",          "core.autocrlf=false",
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        assert_true(strvec_find(&av, want[k]) >= 0);
    strvec_clear(&av);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_commit_and_slug),
        cmocka_unit_test(test_offline),
        cmocka_unit_test(test_one_hardening_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
