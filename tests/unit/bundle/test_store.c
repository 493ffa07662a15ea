/* Content store: write-once deposits, re-proved on every read, never repaired. */
#include "testutil.h"

#include "base/strbuf.h"
#include "bundle/digest.h"
#include "bundle/store.h"

static void test_tree_deposit(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    free(tu_write(t, "skill/SKILL.md", "---\ndescription: demo\n---\n"));
    free(tu_write(t, "skill/scripts/run.sh", "echo hi\n"));
    free(tu_write(t, "skill/.git/HEAD", "ref\n"));
    char src[4096], home[4096], pin[65];
    snprintf(src, sizeof src, "%s/skill", t);
    snprintf(home, sizeof home, "%s/home/.agentstack", t);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_skill_tree(src, pin, &err), 0);

    strbuf p = SB_INIT;
    assert_int_equal(store_open(home, pin, STORE_SKILL_TREE, &p, &err), 0); /* absent */
    int skipped = 1;
    assert_int_equal(store_deposit_tree(home, src, STORE_SKILL_TREE, pin, &skipped, &err), 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(store_open(home, pin, STORE_SKILL_TREE, &p, &err), 1);
    /* The copy holds the bytes, not .git. */
    char q[4096];
    snprintf(q, sizeof q, "%s/scripts/run.sh", p.buf);
    char *body = tu_read(q, NULL);
    assert_string_equal(body, "echo hi\n");
    free(body);
    snprintf(q, sizeof q, "%s/.git", p.buf);
    assert_int_equal(access(q, F_OK), -1);
    /* Depositing again is a no-op. */
    assert_int_equal(store_deposit_tree(home, src, STORE_SKILL_TREE, pin, NULL, &err), 0);

    /* A tampered deposit is an error on read, and a deposit never repairs it. */
    snprintf(q, sizeof q, "%s/scripts/run.sh", p.buf);
    FILE *f = fopen(q, "w");
    fputs("echo evil\n", f);
    fclose(f);
    as_err_clear(&err);
    assert_int_equal(store_open(home, pin, STORE_SKILL_TREE, &p, &err), -1);
    assert_non_null(strstr(err.msg, "does not match its address"));
    as_err_clear(&err);
    assert_int_equal(store_deposit_tree(home, src, STORE_SKILL_TREE, pin, NULL, &err), 0);
    assert_int_equal(store_open(home, pin, STORE_SKILL_TREE, &p, &err), -1);
    body = tu_read(q, NULL);
    assert_string_equal(body, "echo evil\n");
    free(body);

    /* A source that changed since it was pinned is not deposited under the old pin. */
    char pin2[65];
    free(tu_write(t, "skill2/SKILL.md", "a"));
    snprintf(src, sizeof src, "%s/skill2", t);
    assert_int_equal(digest_skill_tree(src, pin2, &err), 0);
    free(tu_write(t, "skill2/SKILL.md", "b"));
    as_err_clear(&err);
    assert_int_equal(store_deposit_tree(home, src, STORE_SKILL_TREE, pin2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "changed since it was pinned"));
    assert_int_equal(store_open(home, pin2, STORE_SKILL_TREE, &p, &err), 0);
    sb_release(&p);
    tu_rmtree(t);
}

static void test_file_and_bytes(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *f = tu_write(t, "AGENTS.md", "be nice\n");
    char home[4096], pin[65];
    snprintf(home, sizeof home, "%s/home/.agentstack", t);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_file(f, pin, &err), 0);
    assert_int_equal(store_deposit_file(home, f, "AGENTS.md", pin, &err), 0);
    strbuf p = SB_INIT;
    assert_int_equal(store_open(home, pin, STORE_FILE, &p, &err), 1);
    assert_non_null(strstr(p.buf, "/AGENTS.md"));

    const char *json = "{\"a\":1}";
    char jp[65];
    sha256_hex(json, strlen(json), jp);
    assert_int_equal(store_deposit_bytes(home, json, strlen(json), "claude.perm.json", jp, &err),
                     0);
    assert_int_equal(store_open(home, jp, STORE_FILE, &p, &err), 1);
    char *body = tu_read(p.buf, NULL);
    assert_string_equal(body, json);
    free(body);
    /* Wrong bytes for a pin and bad names are refused. */
    as_err_clear(&err);
    assert_int_equal(store_deposit_bytes(home, "x", 1, "x.json", jp, &err), -1);
    assert_int_equal(store_deposit_bytes(home, json, strlen(json), "../x", jp, &err), -1);
    assert_int_equal(store_open(home, "nothex", STORE_FILE, &p, &err), -1);

    /* Single-file integrity roots keep the root framing. */
    char rp[65];
    assert_int_equal(digest_integrity_root(f, rp, &err), 0);
    assert_int_equal(store_deposit_tree(home, f, STORE_ROOT_FILE, rp, NULL, &err), 0);
    assert_int_equal(store_open(home, rp, STORE_ROOT_FILE, &p, &err), 1);
    sb_release(&p);
    free(f);
    tu_rmtree(t);
}

static void test_root_bounds(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char name[64];
    for (int i = 0; i < STORE_ROOT_MAX_FILES + 1; i++) {
        snprintf(name, sizeof name, "r/f%03d", i);
        free(tu_write(t, name, "x"));
    }
    char src[4096], home[4096], pin[65];
    snprintf(src, sizeof src, "%s/r", t);
    snprintf(home, sizeof home, "%s/home/.agentstack", t);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_integrity_root(src, pin, &err), 0);
    int skipped = 0;
    assert_int_equal(store_deposit_tree(home, src, STORE_ROOT_TREE, pin, &skipped, &err), 0);
    assert_int_equal(skipped, 1);
    strbuf p = SB_INIT;
    assert_int_equal(store_open(home, pin, STORE_ROOT_TREE, &p, &err), 0);
    sb_release(&p);
    tu_rmtree(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_deposit),
        cmocka_unit_test(test_file_and_bytes),
        cmocka_unit_test(test_root_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
