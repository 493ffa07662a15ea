/* The KEY=value store writers: value rules (NUL everywhere, CR/LF for
 * .env), quoting that the reader undoes exactly, in-place replacement that
 * keeps other lines' bytes, 0600 (looser files tightened), symlink refusal,
 * removal, names, the .gitignore rule, and the full chain's order. */
#include "testutil.h"

#include <fcntl.h>

#include "secrets/backends.h"

static void test_value_rules(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_value_check(SEC_STORE_DOTENV, "", 0, &err), -1);
    assert_non_null(strstr(err.msg, "empty"));
    as_err_clear(&err);
    assert_int_equal(sec_value_check(SEC_STORE_KEYCHAIN, "a\0b", 3, &err), -1);
    assert_non_null(strstr(err.msg, "NUL"));
    as_err_clear(&err);
    assert_int_equal(sec_value_check(SEC_STORE_FILE, "a\0b", 3, &err), -1);
    as_err_clear(&err);
    assert_int_equal(sec_value_check(SEC_STORE_DOTENV, "a\nb", 3, &err), -1);
    assert_non_null(strstr(err.msg, "line break"));
    as_err_clear(&err);
    assert_int_equal(sec_value_check(SEC_STORE_FILE, "a\rb", 3, &err), -1);
    as_err_clear(&err);
    /* the keychain holds line breaks */
    assert_int_equal(sec_value_check(SEC_STORE_KEYCHAIN, "a\r\nb", 4, &err), 0);
    /* the message never carries the value */
    assert_int_equal(sec_value_check(SEC_STORE_DOTENV, "hunter2\n", 8, &err), -1);
    assert_null(strstr(err.msg, "hunter2"));
}

static void roundtrip(const char *path, const char *name, const char *value)
{
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_dotenv_set(path, name, value, strlen(value), SEC_STORE_DOTENV, NULL, &err),
                     0);
    struct sec_chain *c = sec_chain_new();
    struct sec_backend b = sec_backend_dotenv(".env", path, 1);
    sec_chain_append(c, &b);
    strbuf v = SB_INIT;
    assert_int_equal(sec_resolve(c, name, &v, NULL), SEC_FOUND);
    assert_string_equal(v.buf, value);
    sb_release_secure(&v);
    sec_chain_free(c);
}

static void test_quoting_roundtrips(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    char *p = NULL;
    assert_true(asprintf(&p, "%s/d/.env", tmp) > 0);
    const char *vals[] = {"plain",   "two words", " padded ", "has#hash",
                          "q\"uote", "'single'",  "\"both\"", "\"unterminated",
                          "=eq=",    "tab\tin",   "ünïcode",  "export"};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
        roundtrip(p, "V", vals[i]);
    /* every assignment rewrote the same line: one V= line left */
    char *t = tu_read(p, NULL);
    assert_non_null(t);
    assert_ptr_equal(strstr(t, "V="), t);
    assert_null(strstr(t + 1, "V="));
    free(t);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    free(p);
    tu_rmtree(tmp);
}

static void test_replace_keeps_other_bytes(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    const char *orig = "# keep me\r\nA=1\r\nexport TOKEN=old\r\nB = 2\r\nTOKEN=dup\r\nC=3";
    char *p = tu_write(tmp, ".env", orig);
    chmod(p, 0644);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_dotenv_set(p, "TOKEN", "new", 3, SEC_STORE_DOTENV, NULL, &err), 0);
    char *t = tu_read(p, NULL);
    assert_string_equal(t, "# keep me\r\nA=1\r\nTOKEN=new\r\nB = 2\r\nC=3");
    free(t);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600); /* tightened */
    /* append to a file without a trailing newline, using its CRLF */
    assert_int_equal(sec_dotenv_set(p, "D", "4", 1, SEC_STORE_DOTENV, NULL, &err), 0);
    t = tu_read(p, NULL);
    assert_string_equal(t, "# keep me\r\nA=1\r\nTOKEN=new\r\nB = 2\r\nC=3\r\nD=4\r\n");
    free(t);
    /* remove: only that line goes */
    bool existed = false;
    assert_int_equal(sec_dotenv_remove(p, "TOKEN", &existed, NULL, &err), 0);
    assert_true(existed);
    t = tu_read(p, NULL);
    assert_string_equal(t, "# keep me\r\nA=1\r\nB = 2\r\nC=3\r\nD=4\r\n");
    free(t);
    assert_int_equal(sec_dotenv_remove(p, "TOKEN", &existed, NULL, &err), 0);
    assert_false(existed);
    strvec names = STRVEC_INIT;
    assert_int_equal(sec_dotenv_names(p, &names, &err), 0);
    assert_int_equal(names.n, 4);
    assert_string_equal(names.v[0], "A");
    assert_string_equal(names.v[3], "D");
    strvec_clear(&names);
    free(p);
    tu_rmtree(tmp);
}

static void test_refusals(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    char *target = tu_write(tmp, "elsewhere", "X=1\n");
    char *link = NULL;
    assert_true(asprintf(&link, "%s/.env", tmp) > 0);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(chmod(target, 0644), 0);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_dotenv_set(link, "T", "v1", 2, SEC_STORE_DOTENV, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    /* refused before anything touched the link's target, its mode included */
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    char *t = tu_read(target, NULL);
    assert_string_equal(t, "X=1\n");
    free(t);
    /* CR/LF and NUL never reach the file */
    char *p = NULL;
    assert_true(asprintf(&p, "%s/s.env", tmp) > 0);
    as_err_clear(&err);
    assert_int_equal(sec_dotenv_set(p, "T", "a\nB=forged", 10, SEC_STORE_FILE, NULL, &err), -1);
    assert_int_equal(sec_dotenv_set(p, "T", "a\0b", 3, SEC_STORE_FILE, NULL, &err), -1);
    assert_int_equal(sec_dotenv_set(p, "1T", "ab", 2, SEC_STORE_FILE, NULL, &err), -1);
    assert_int_equal(access(p, F_OK), -1);
    free(p);
    free(link);
    free(target);
    tu_rmtree(tmp);
}

static void test_file_store_locked_and_private(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_file_store_path(&p, &err), 0);
    assert_non_null(strstr(p.buf, "/home/.agentstack/secrets.env"));
    const char *ah = getenv("AGENTSTACK_HOME");
    assert_int_equal(sec_dotenv_set(p.buf, "GH", "ghp_x1", 6, SEC_STORE_FILE, ah, &err), 0);
    struct stat st;
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(ah, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* the default chain reads it (its privacy check passes) */
    struct sec_chain *c = sec_chain_default(NULL);
    strbuf v = SB_INIT;
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "GH", &v, &r), SEC_FOUND);
    assert_string_equal(r.source, "file");
    sb_release_secure(&v);
    sec_chain_free(c);
    sb_release(&p);
    tu_rmtree(tmp);
}

static void test_gitignore(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    bool added = true;
    /* not a git project: nothing written */
    assert_int_equal(sec_gitignore_env(tmp, "/.agentstack/.env", &added, &err), 0);
    assert_false(added);
    char *g = NULL;
    assert_true(asprintf(&g, "%s/.git", tmp) > 0);
    mkdir(g, 0755);
    char *gi = tu_write(tmp, ".gitignore", "node_modules/");
    assert_int_equal(sec_gitignore_env(tmp, "/.agentstack/.env", &added, &err), 0);
    assert_true(added);
    char *t = tu_read(gi, NULL);
    assert_string_equal(t, "node_modules/\n# agentstack: local secrets — never commit\n"
                           "/.agentstack/.env\n");
    free(t);
    assert_int_equal(sec_gitignore_env(tmp, "/.agentstack/.env", &added, &err), 0);
    assert_false(added);
    /* a broader rule already covers it */
    free(tu_write(tmp, ".gitignore", "**/.env\n"));
    assert_int_equal(sec_gitignore_env(tmp, "/.agentstack/.env", &added, &err), 0);
    assert_false(added);
    free(gi);
    free(g);
    tu_rmtree(tmp);
}

static void test_full_chain_order(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    char *dotenv = tu_write(tmp, "proj/.env", "ONLY_DOTENV=d\nBOTH=from-dotenv\n");
    strbuf store = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_file_store_path(&store, &err), 0);
    assert_int_equal(sec_dotenv_set(store.buf, "BOTH", "from-file", 9, SEC_STORE_FILE, NULL, &err),
                     0);
    struct sec_chain_opts o = {.project_dotenv = dotenv, .no_keychain = true};
    struct sec_chain *c = sec_chain_full(&o);
    assert_int_equal(sec_chain_count(c), 3);
    assert_string_equal(sec_chain_name(c, 0), "env");
    assert_string_equal(sec_chain_name(c, 1), "file");
    assert_string_equal(sec_chain_name(c, 2), ".env");
    strbuf v = SB_INIT;
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "BOTH", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "from-file"); /* File store before .env */
    assert_int_equal(sec_resolve(c, "ONLY_DOTENV", &v, &r), SEC_FOUND);
    assert_string_equal(r.source, ".env");
    sec_chain_free(c);
    /* with the keychain and varlock: env → varlock → keychain → file → .env */
    struct sec_chain_opts o2 = {
        .project_dotenv = dotenv, .varlock_dir = tmp, .varlock_schema_sha256 = "00"};
    c = sec_chain_full(&o2);
    assert_int_equal(sec_chain_count(c), 5);
    assert_string_equal(sec_chain_name(c, 1), "varlock");
    assert_string_equal(sec_chain_name(c, 2), "keychain");
    assert_string_equal(sec_chain_name(c, 3), "file");
    sec_chain_free(c);
    /* varlock without a pin is never added */
    struct sec_chain_opts o3 = {.varlock_dir = tmp, .no_keychain = true};
    c = sec_chain_full(&o3);
    for (size_t i = 0; i < sec_chain_count(c); i++)
        assert_string_not_equal(sec_chain_name(c, i), "varlock");
    sec_chain_free(c);
    sb_release_secure(&v);
    sb_release(&store);
    free(dotenv);
    tu_rmtree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_rules),
        cmocka_unit_test(test_quoting_roundtrips),
        cmocka_unit_test(test_replace_keeps_other_bytes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_file_store_locked_and_private),
        cmocka_unit_test(test_gitignore),
        cmocka_unit_test(test_full_chain_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
