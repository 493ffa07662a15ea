/* The managed .gitignore block: adding it and taking it out again gives the
 * user's bytes back; unpaired markers are refused by both. */
#include "testutil.h"

#include "adapters/engine.h"

static char *unblock(const char *text, int *rc)
{
    strbuf out = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    *rc = adp_gitignore_unblock(text, strlen(text), &out, &e);
    return sb_detach(&out, NULL);
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *const users[] = {"", "node_modules/\n", "a\n\nb\n", "no-newline"};
    strvec entries = STRVEC_INIT;
    strvec_push(&entries, "/.mcp.json");
    strvec_push(&entries, "/CLAUDE.md");
    for (size_t i = 0; i < sizeof users / sizeof *users; i++) {
        strbuf with = SB_INIT;
        struct as_err e = AS_ERR_INIT;
        assert_int_equal(adp_gitignore_block(users[i], strlen(users[i]), &entries, &with, &e), 0);
        assert_true(adp_gitignore_has_block(with.buf, with.len));
        int rc;
        char *back = unblock(with.buf, &rc);
        assert_int_equal(rc, 0);
        /* a file without a final newline gets one when the block is added */
        if (i == 3)
            assert_string_equal(back, "no-newline\n");
        else
            assert_string_equal(back, users[i]);
        free(back);
        sb_release(&with);
    }
    strvec_clear(&entries);
}

static void test_lines_after_block_kept(void **state)
{
    (void)state;
    int rc;
    char *o = unblock("a\n" ADP_GITIGNORE_START "\n/x\n" ADP_GITIGNORE_END "\nafter\n", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(o, "a\nafter\n");
    free(o);
    o = unblock("nothing of ours\n", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(o, "nothing of ours\n");
    free(o);
}

static void test_unpaired_refused(void **state)
{
    (void)state;
    const char *const bad[] = {
        "mine\n" ADP_GITIGNORE_START "\n/x\nmine too\n",
        ADP_GITIGNORE_END "\nmine\n",
        ADP_GITIGNORE_START "\n" ADP_GITIGNORE_END "\n" ADP_GITIGNORE_START "\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc;
        char *o = unblock(bad[i], &rc);
        assert_int_equal(rc, -1);
        free(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_lines_after_block_kept),
        cmocka_unit_test(test_unpaired_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
