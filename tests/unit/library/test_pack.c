/* Unit tests: pack references, version tags, the strict pack.toml, fetching
 * from a local repository (never the network). */
#include "../testutil.h"

#include "base/fs.h"
#include "library/git.h"
#include "library/pack.h"

static void test_ref_parse(void **state)
{
    (void)state;
    struct lib_pack_ref r;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_pack_ref_parse("git:acme/pack@v1.0.0", &r, &err), 0);
    assert_string_equal(r.url, "https://github.com/acme/pack"); /* owner/repo is GitHub */
    assert_string_equal(r.tag, "v1.0.0");
    assert_null(r.subdir);
    char *id = lib_pack_ledger_id(&r, r.tag);
    assert_string_equal(id, "git:https://github.com/acme/pack@v1.0.0");
    free(id);
    lib_pack_ref_free(&r);

    assert_int_equal(lib_pack_ref_parse("git:gitlab.com/acme/pack#packs/docs", &r, &err), 0);
    assert_string_equal(r.url, "https://gitlab.com/acme/pack");
    assert_null(r.tag);
    assert_string_equal(r.subdir, "packs/docs");
    lib_pack_ref_free(&r);

    assert_int_equal(lib_pack_ref_parse("git:git@h:o/r.git@v2", &r, &err), 0);
    assert_string_equal(r.url, "git@h:o/r.git");
    assert_string_equal(r.tag, "v2");
    lib_pack_ref_free(&r);

    assert_int_equal(lib_pack_ref_parse("git:file:///srv/pack.git@v1.1.0", &r, &err), 0);
    assert_string_equal(r.url, "file:///srv/pack.git");
    lib_pack_ref_free(&r);

    assert_int_equal(lib_pack_ref_parse("git:/srv/pack@v1", &r, &err), 0);
    assert_string_equal(r.url, "/srv/pack");
    lib_pack_ref_free(&r);

    assert_int_equal(lib_pack_ref_parse("git:http://h/x.git", &r, &err), -1);
    assert_int_equal(lib_pack_ref_parse("git:ext::sh -c x", &r, &err), -1);
    assert_int_equal(lib_pack_ref_parse("git:acme/pack@-x", &r, &err), -1);
    assert_int_equal(lib_pack_ref_parse("git:acme/pack#../up", &r, &err), -1);
}

static void test_versions(void **state)
{
    (void)state;
    assert_true(lib_version_tag("v1.0.0"));
    assert_true(lib_version_tag("2"));
    assert_true(lib_version_tag("10.20"));
    assert_false(lib_version_tag("v1.0.0-rc1"));
    assert_false(lib_version_tag("nightly"));
    assert_false(lib_version_tag("v1..0"));
    assert_false(lib_version_tag("v"));
    assert_true(lib_version_cmp("v1.10.0", "v1.9.0") > 0);
    assert_true(lib_version_cmp("1.0", "v1.0.0") < 0);
    assert_int_equal(lib_version_cmp("v01.2", "1.2"), 0);
    assert_true(lib_version_cmp("v99999999999999999999", "v1") > 0);
}

static char *pack_dir(const char *root, const char *toml)
{
    char *d = NULL;
    assert_true(asprintf(&d, "%s/pack", root) > 0);
    mkdir(d, 0755);
    free(tu_write(d, "pack.toml", toml));
    free(tu_write(d, "skills/sql-review/SKILL.md", "---\ndescription: review SQL\n---\nbody\n"));
    free(tu_write(d, "rules.md", "Be careful.\n"));
    return d;
}

static const char *good =
    "name = \"acme\"\ndescription = \"Docs MCP + SQL review\"\n"
    "[server]\ntype = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"@acme/mcp\"]\n"
    "secret_env = [\"ACME_TOKEN\"]\n"
    "[[skill]]\nname = \"sql-review\"\npath = \"skills/sql-review\"\n"
    "[[instruction]]\nname = \"acme-rules\"\npath = \"rules.md\"\n";

static void test_pack_load(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *d = pack_dir(root, good);
    struct lib_pack p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_pack_load(d, &p, &err), 0);
    assert_string_equal(p.name, "acme");
    assert_int_equal(p.skills.n, 1);
    assert_int_equal(p.instructions.n, 1);
    toml_value *t = lib_pack_server_table(&p);
    const toml_value *env = toml_get_path(t, "env", "ACME_TOKEN", NULL);
    assert_non_null(env);
    assert_string_equal(env->u.str.s, "${ACME_TOKEN}");
    toml_free(t);
    lib_pack_free(&p);

    struct {
        const char *toml;
        const char *want;
    } bad[] = {
        {"name = \"acme\"\ncolour = 1\n[[skill]]\nname=\"s\"\npath=\"skills/sql-review\"\n",
         "unknown key 'colour'"},
        {"name = \"acme\"\n[[hook]]\nname = \"h\"\n", "may not install hooks"},
        {"name = \"acme\"\n[[skill]]\nname = \"s\"\npath = \"../x\"\n", "'..'-free"},
        {"name = \"acme\"\n[[skill]]\nname = \"s\"\npath = \"skills/nope\"\n", "does not exist"},
        {"name = \"Acme\"\n[[skill]]\nname=\"s\"\npath=\"skills/sql-review\"\n", "not valid"},
        {"name = \"acme\"\n[server]\ntype = \"stdio\"\ncommand = \"x\"\n"
         "args = [\"--token\", \"abc\"]\n",
         "literal secret"},
        {"name = \"acme\"\n[server]\ntype = \"http\"\nurl = \"https://h/mcp?api_key=k\"\n",
         "literal secret"},
        {"name = \"acme\"\n[server]\ntype = \"http\"\nurl = \"http://h/mcp\"\n", "https://"},
        {"name = \"acme\"\n[server]\ncommand = \"x\"\n", "needs `type`"},
        {"name = [\n", "malformed pack.toml"},
        {"description = \"x\"\n", "needs `name`"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        free(tu_write(d, "pack.toml", bad[i].toml));
        as_err_clear(&err);
        assert_int_equal(lib_pack_load(d, &p, &err), -1);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
    }
    /* hidden Unicode in a member: refused, nothing installed */
    free(tu_write(d, "pack.toml", good));
    free(tu_write(d, "skills/sql-review/SKILL.md",
                  "---\ndescription: x\n---\nhi\xe2\x80\x8bthere\n"));
    assert_int_equal(lib_pack_load(d, &p, &err), -1);
    assert_non_null(strstr(err.msg, "failed the content scan"));
    assert_non_null(strstr(err.msg, "nothing installed"));
    /* a symlinked member is refused */
    free(tu_write(d, "skills/sql-review/SKILL.md", "---\ndescription: x\n---\n"));
    char *ln = NULL;
    assert_true(asprintf(&ln, "%s/skills/sql-review/link", d) > 0);
    assert_int_equal(symlink("/etc/passwd", ln), 0);
    assert_int_equal(lib_pack_load(d, &p, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    free(ln);
    free(d);
    tu_rmtree(root);
}

static void git_in(const char *dir, const char *const *args)
{
    struct as_err err = AS_ERR_INIT;
    if (lib_git_ok(dir, args, NULL, &err) < 0)
        fail_msg("git %s: %s", args[0], err.msg);
}

static void test_fetch(void **state)
{
    (void)state;
    if (!lib_git_available())
        tu_skip("git is not installed");
    char *root = tu_tmpdir();
    char *d = pack_dir(root, good);
    char *home = NULL;
    assert_true(asprintf(&home, "%s/home/.agentstack", root) > 0);
    const char *init[] = {"init", "-q", d, NULL};
    git_in(NULL, init);
    const char *add[] = {"add", "-A", NULL};
    git_in(d, add);
    const char *commit[] = {"commit", "-qm", "v1", NULL};
    git_in(d, commit);
    const char *tag1[] = {"tag", "v1.0.0", NULL};
    git_in(d, tag1);
    const char *tagrc[] = {"tag", "v2.0.0-rc1", NULL};
    git_in(d, tagrc);

    struct as_err err = AS_ERR_INIT;
    char *newest = NULL;
    assert_int_equal(lib_pack_newest_tag(d, &newest, &err), 0);
    assert_string_equal(newest, "v1.0.0"); /* -rc ignored */
    free(newest);

    struct lib_pack_ref ref;
    assert_int_equal(lib_pack_ref_parse(d, &ref, &err), 0);
    struct lib_pack p;
    assert_int_equal(lib_pack_fetch(home, &ref, "v1.0.0", &p, &err), 0);
    assert_string_equal(p.name, "acme");
    assert_int_equal(strlen(p.commit), 40);
    lib_pack_free(&p);

    assert_int_equal(lib_pack_fetch(home, &ref, "v9.9.9", &p, &err), -1);
    assert_non_null(strstr(err.msg, "tag 'v9.9.9' does not exist"));
    assert_non_null(strstr(err.hint, "v1.0.0"));
    lib_pack_ref_free(&ref);

    /* a repository that does not exist: an error, no prompt */
    char *nowhere = NULL;
    assert_true(asprintf(&nowhere, "%s/nowhere", root) > 0);
    assert_int_equal(lib_pack_ref_parse(nowhere, &ref, &err), 0);
    as_err_clear(&err);
    assert_int_equal(lib_pack_newest_tag(ref.url, &newest, &err), -1);
    assert_non_null(strstr(err.msg, "cannot list the tags"));
    assert_int_equal(lib_pack_fetch(home, &ref, "v1.0.0", &p, &err), -1);
    assert_non_null(strstr(err.msg, "git clone failed"));
    lib_pack_ref_free(&ref);
    free(nowhere);

    /* an untagged repository: no version tags */
    char *bare = NULL;
    assert_true(asprintf(&bare, "%s/untagged", root) > 0);
    mkdir(bare, 0755);
    free(tu_write(bare, "pack.toml", "name = \"x\"\n"));
    const char *init2[] = {"init", "-q", bare, NULL};
    git_in(NULL, init2);
    git_in(bare, add);
    git_in(bare, commit);
    assert_int_equal(lib_pack_newest_tag(bare, &newest, &err), -1);
    assert_non_null(strstr(err.msg, "has no version tags"));
    free(bare);
    free(home);
    free(d);
    tu_rmtree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_parse),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_pack_load),
        cmocka_unit_test(test_fetch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
