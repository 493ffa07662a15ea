/* $AGENTSTACK_HOME layout, modes and the fail-closed machine manifest. */
#include "testutil.h"

#include <sys/stat.h>

#include "bundle/home.h"

static void test_default_and_override(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    char *want = NULL;

    assert_int_equal(home_dir(&p, &err), 0);
    assert_true(asprintf(&want, "%s/home/.agentstack", dir) > 0);
    assert_string_equal(p.buf, want);
    free(want);

    unsetenv("AGENTSTACK_HOME");
    assert_int_equal(home_dir(&p, &err), 0);
    assert_true(asprintf(&want, "%s/home/.agentstack", dir) > 0);
    assert_string_equal(p.buf, want);
    free(want);

    setenv("AGENTSTACK_HOME", "", 1); /* empty = unset */
    assert_int_equal(home_dir(&p, &err), 0);
    assert_non_null(strstr(p.buf, "/home/.agentstack"));

    setenv("AGENTSTACK_HOME", "/x/y/", 1);
    assert_int_equal(home_dir(&p, &err), 0);
    assert_string_equal(p.buf, "/x/y");

    assert_int_equal(home_path(HOME_TRUST_JSON, &p, &err), 0);
    assert_string_equal(p.buf, "/x/y/trust.json");
    assert_int_equal(home_path(HOME_STORE_CONTENT_DIR, &p, &err), 0);
    assert_string_equal(p.buf, "/x/y/store/content");
    assert_int_equal(home_path(HOME_AUDIT_KEY, &p, &err), 0);
    assert_string_equal(p.buf, "/x/y/audit/key");
    assert_int_equal(home_path(HOME_MACHINE_MANIFEST, &p, &err), 0);
    assert_string_equal(p.buf, "/x/y/agentstack.toml");

    /* relative: anchored at the cwd once */
    char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(dir), 0);
    setenv("AGENTSTACK_HOME", "rel/ash", 1);
    assert_int_equal(home_dir(&p, &err), 0);
    assert_true(asprintf(&want, "%s/rel/ash", dir) > 0);
    char *real = realpath(dir, NULL);
    char *want2 = NULL;
    assert_true(asprintf(&want2, "%s/rel/ash", real) > 0);
    assert_true(strcmp(p.buf, want) == 0 || strcmp(p.buf, want2) == 0);
    assert_int_equal(chdir(cwd), 0);
    free(want);
    free(want2);
    free(real);
    free(cwd);

    unsetenv("AGENTSTACK_HOME");
    setenv("HOME", "relative-home", 1);
    /* a relative HOME is no home: falls back to the passwd entry or fails, never "relative" */
    if (home_dir(&p, &err) == 0)
        assert_true(p.buf[0] == '/');
    sb_release(&p);
    tu_rmtree(dir);
}

static void test_ensure_modes(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    struct stat st;
    mode_t old = umask(0);

    assert_int_equal(home_ensure(HOME_STORE_CONTENT_DIR, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(home_path(HOME_STORE_DIR, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(home_path(HOME_ROOT_DIR, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    /* a file entry: its parent is created, the file is not */
    assert_int_equal(home_ensure(HOME_AUDIT_KEY, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), -1);
    char *parent = strdup(p.buf);
    *strrchr(parent, '/') = '\0';
    assert_int_equal(stat(parent, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(parent);

    assert_int_equal(home_ensure_sub(HOME_LOGS_DIR, "abc123/x", &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(home_ensure_sub(HOME_LOGS_DIR, "../escape", &p, &err), -1);
    assert_non_null(strstr(err.msg, "traversal"));
    assert_int_equal(home_ensure_sub(HOME_LOGS_DIR, "/abs", &p, &err), -1);
    assert_int_equal(home_ensure_sub(HOME_TRUST_JSON, "x", &p, &err), -1);

    /* an existing directory keeps its mode */
    assert_int_equal(home_path(HOME_RUNS_DIR, &p, &err), 0);
    assert_int_equal(mkdir(p.buf, 0755), 0);
    assert_int_equal(home_ensure(HOME_RUNS_DIR, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);

    for (int e = 0; e < HOME_ENTRY_COUNT; e++)
        assert_non_null(home_entry_name((enum home_entry)e));
    assert_true(home_entry_is_dir(HOME_GATEWAY_DIR));
    assert_false(home_entry_is_dir(HOME_TRUST_JSON));
    umask(old);
    sb_release(&p);
    tu_rmtree(dir);
}

static void test_write_file(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    struct stat st;
    mode_t old = umask(022);
    assert_int_equal(home_write_file(HOME_AUDIT_KEY, "k", 1, &err), 0);
    assert_int_equal(home_path(HOME_AUDIT_KEY, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *txt = tu_read(p.buf, NULL);
    assert_string_equal(txt, "k");
    free(txt);
    assert_int_equal(home_path(HOME_AUDIT_DIR, &p, &err), 0);
    assert_int_equal(stat(p.buf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(home_write_file(HOME_AUDIT_DIR, "x", 1, &err), -1);
    /* a symlinked state file is refused, its target untouched */
    char *target = tu_write(dir, "elsewhere", "old");
    assert_int_equal(home_path(HOME_TRUST_JSON, &p, &err), 0);
    assert_int_equal(symlink(target, p.buf), 0);
    assert_int_equal(home_write_file(HOME_TRUST_JSON, "{}", 2, &err), -1);
    txt = tu_read(target, NULL);
    assert_string_equal(txt, "old");
    free(txt);
    free(target);
    umask(old);
    sb_release(&p);
    tu_rmtree(dir);
}

static void test_machine_toml(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    int absent = 0;

    toml_value *t = home_machine_toml(&absent, &err);
    assert_null(t);
    assert_int_equal(absent, 1);
    assert_false(as_err_isset(&err));

    char *p = tu_write(dir, "home/.agentstack/agentstack.toml",
                       "version = 1\n[policy.tools]\n\"*\" = [\"!delete_*\"]\n");
    t = home_machine_toml(&absent, &err);
    assert_non_null(t);
    assert_int_equal(absent, 0);
    assert_non_null(toml_get_path(t, "policy", "tools", NULL));
    toml_free(t);

    /* broken: fails closed with line and column and a hint naming the file */
    FILE *f = fopen(p, "w");
    fputs("version = 1\n[policy.tools\n", f);
    fclose(f);
    t = home_machine_toml(&absent, &err);
    assert_null(t);
    assert_int_equal(absent, 0);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.path, p);
    assert_non_null(strstr(err.hint, p));

    /* a FIFO: error, no hang */
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    as_err_clear(&err);
    t = home_machine_toml(&absent, &err);
    assert_null(t);
    assert_int_equal(absent, 0);
    assert_true(as_err_isset(&err));
    free(p);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_and_override),
        cmocka_unit_test(test_ensure_modes),
        cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_machine_toml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
