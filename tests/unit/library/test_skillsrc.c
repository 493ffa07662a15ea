/* Unit tests: `add skill` source grammar (docs/library.md). */
#include "../testutil.h"

#include "library/pack.h"

static void ok(const char *spec, const char *path, const char *url, const char *rev,
               const char *sub, const char *skill)
{
    struct lib_skill_src s;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_skill_src_parse(spec, &s, &err), 0);
#define EQ(a, b)                                                                                   \
    do {                                                                                           \
        if (b)                                                                                     \
            assert_string_equal(a, b);                                                             \
        else                                                                                       \
            assert_null(a);                                                                        \
    } while (0)
    EQ(s.path, path);
    EQ(s.url, url);
    EQ(s.rev, rev);
    EQ(s.subpath, sub);
    EQ(s.skill, skill);
#undef EQ
    lib_skill_src_free(&s);
}

static void bad(const char *spec, const char *want)
{
    struct lib_skill_src s;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_skill_src_parse(spec, &s, &err), -1);
    assert_non_null(strstr(err.msg, want));
}

static void test_sources(void **state)
{
    (void)state;
    ok("./dir", "./dir", NULL, NULL, NULL, NULL);
    ok("../up", "../up", NULL, NULL, NULL, NULL);
    ok("/abs/x", "/abs/x", NULL, NULL, NULL, NULL);
    ok("acme/skills", NULL, "https://github.com/acme/skills", NULL, NULL, NULL);
    ok("acme/skills@sql-review#v2", NULL, "https://github.com/acme/skills", "v2", NULL,
       "sql-review");
    ok("git:acme/skills", NULL, "https://github.com/acme/skills", NULL, NULL, NULL);
    ok("https://github.com/acme/skills/tree/main/skills/sql", NULL,
       "https://github.com/acme/skills", "main", "skills/sql", NULL);
    ok("https://gitlab.com/g/r/-/tree/v1/a", NULL, "https://gitlab.com/g/r", "v1", "a", NULL);
    ok("git@host:o/r.git", NULL, "git@host:o/r.git", NULL, NULL, NULL);
    ok("ssh://git@host/o/r.git#main", NULL, "ssh://git@host/o/r.git", "main", NULL, NULL);
    ok("file:///srv/r.git", NULL, "file:///srv/r.git", NULL, NULL, NULL);
    ok("srv/r.git", NULL, "srv/r.git", NULL, NULL, NULL);
}

static void test_refusals(void **state)
{
    (void)state;
    bad("", "needs a source");
    bad("http://h/r.git", "plain http://");
    bad("https://u:t@h/r.git", "credentials");
    bad("https://tok@h/r.git", "credentials");
    bad("ssh://u:pw@h/r.git", "credentials");
    bad("justaword", "is not a skill source");
    bad("a/b/c", "is not a skill source");
    bad("-x/y", "is not a skill source");
    bad("acme/skills@", "is not a skill source");
    bad("acme/skills#", "nothing after '#'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
