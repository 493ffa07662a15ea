/* The secret resolution chain: order, failed-beats-missing, the file store's
 * privacy check, .env syntax, caching, and custom backends. */
#include "testutil.h"

#include "secrets/secrets.h"

static void test_dotenv_syntax(void **state)
{
    (void)state;
    const char *text = "# comment\n"
                       "\n"
                       "  A = 1  \n"
                       "export B=\"two words\"\n"
                       "C='x'\r\n"
                       "noequals\n"
                       "=novalue\n"
                       "D=\n"
                       "E=\"unterminated\n"
                       "A=last\n";
    char *tmp = tu_tmpdir();
    char *p = tu_write(tmp, "e.env", text);
    struct sec_chain *c = sec_chain_new();
    struct sec_backend b = sec_backend_dotenv(".env", p, 0);
    sec_chain_append(c, &b);
    strbuf v = SB_INIT;
    assert_int_equal(sec_resolve(c, "A", &v, NULL), SEC_FOUND);
    assert_string_equal(v.buf, "last");
    assert_int_equal(sec_resolve(c, "B", &v, NULL), SEC_FOUND);
    assert_string_equal(v.buf, "two words");
    assert_int_equal(sec_resolve(c, "C", &v, NULL), SEC_FOUND);
    assert_string_equal(v.buf, "x");
    assert_int_equal(sec_resolve(c, "D", &v, NULL), SEC_FOUND);
    assert_string_equal(v.buf, "");
    assert_int_equal(sec_resolve(c, "E", &v, NULL), SEC_FOUND);
    assert_string_equal(v.buf, "\"unterminated");
    assert_int_equal(sec_resolve(c, "noequals", &v, NULL), SEC_MISSING);
    assert_int_equal(sec_resolve(c, "Z", &v, NULL), SEC_MISSING);
    /* not a reference name: never looked up */
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "1BAD", &v, &r), SEC_FAILED);
    sb_release_secure(&v);
    sec_chain_free(c);
    free(p);
    tu_rmtree(tmp);
}

static void test_default_order(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    char *store = tu_write(tmp, "home/.agentstack/secrets.env", "S1=store\nS2=store\n");
    chmod(store, 0600);
    char *proj = tu_write(tmp, "proj/.env", "S1=project\nS2=project\nS3=project\n");
    setenv("S2", "env", 1);
    unsetenv("S1");
    unsetenv("S3");
    struct sec_chain *c = sec_chain_default(proj);
    assert_int_equal(sec_chain_count(c), 3);
    assert_string_equal(sec_chain_name(c, 0), "env");
    assert_string_equal(sec_chain_name(c, 1), "file");
    assert_string_equal(sec_chain_name(c, 2), ".env");
    strbuf v = SB_INIT;
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "S2", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "env");
    assert_string_equal(r.source, "env");
    assert_int_equal(sec_resolve(c, "S1", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "store");
    assert_string_equal(r.source, "file");
    assert_int_equal(sec_resolve(c, "S3", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "project");
    assert_string_equal(r.source, ".env");
    /* cached per chain: a later environment change is not seen */
    setenv("S3", "late", 1);
    assert_int_equal(sec_resolve(c, "S3", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "project");
    unsetenv("S2");
    unsetenv("S3");
    sb_release_secure(&v);
    sec_chain_free(c);
    free(store);
    free(proj);
    tu_rmtree(tmp);
}

/* A file store others can read is refused, never used; the walk goes on and
 * the outcome is "failed" rather than "missing" when no later layer has it. */
static void test_store_must_be_private(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    char *store = tu_write(tmp, "home/.agentstack/secrets.env", "K=leaky\n");
    chmod(store, 0644);
    char *proj = tu_write(tmp, "proj/.env", "P=fromproject\n");
    unsetenv("K");
    unsetenv("P");
    struct sec_chain *c = sec_chain_default(proj);
    strbuf v = SB_INIT;
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "K", &v, &r), SEC_FAILED);
    assert_int_equal(v.len, 0);
    assert_string_equal(r.source, "file");
    assert_non_null(strstr(r.why, "chmod 600"));
    assert_null(strstr(r.why, "leaky"));
    /* failed layer does not stop the walk */
    assert_int_equal(sec_resolve(c, "P", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "fromproject");
    sb_release_secure(&v);
    sec_chain_free(c);
    /* a symlinked store is refused too */
    unlink(store);
    char *real = tu_write(tmp, "real.env", "K=x\n");
    chmod(real, 0600);
    assert_int_equal(symlink(real, store), 0);
    c = sec_chain_default(NULL);
    assert_int_equal(sec_resolve(c, "K", &v, &r), SEC_FAILED);
    assert_non_null(strstr(r.why, "symlink"));
    sb_release_secure(&v);
    sec_chain_free(c);
    free(real);
    free(store);
    free(proj);
    tu_rmtree(tmp);
}

static int calls;
static enum sec_status fake_lookup(void *ctx, const char *name, strbuf *out, struct as_err *err)
{
    calls++;
    const char *mode = ctx;
    if (strcmp(mode, "fail") == 0) {
        as_err_set(err, "keychain read failed: no session bus");
        return SEC_FAILED;
    }
    if (strcmp(name, "KC") == 0) {
        sb_adds(out, "from-keychain");
        return SEC_FOUND;
    }
    if (strcmp(name, "NUL") == 0) {
        sb_add(out, "a\0b", 3);
        return SEC_FOUND;
    }
    return SEC_MISSING;
}

static void test_custom_backend_and_cache(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    char *store = tu_write(tmp, "home/.agentstack/secrets.env", "KC=store\n");
    chmod(store, 0600);
    unsetenv("KC");
    struct sec_chain *c = sec_chain_default(NULL);
    struct sec_backend kc = {"keychain", fake_lookup, NULL, (void *)"ok"};
    sec_chain_insert_before(c, "file", &kc);
    assert_string_equal(sec_chain_name(c, 1), "keychain");
    assert_string_equal(sec_chain_name(c, 2), "file");
    strbuf v = SB_INIT;
    struct sec_result r;
    calls = 0;
    assert_int_equal(sec_resolve(c, "KC", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "from-keychain");
    assert_int_equal(sec_resolve(c, "KC", &v, &r), SEC_FOUND);
    assert_int_equal(calls, 1);
    /* a NUL in a value is refused */
    assert_int_equal(sec_resolve(c, "NUL", &v, &r), SEC_FAILED);
    assert_int_equal(v.len, 0);
    sec_chain_free(c);

    /* failed beats missing; a later layer still wins */
    c = sec_chain_default(NULL);
    struct sec_backend bad = {"keychain", fake_lookup, NULL, (void *)"fail"};
    sec_chain_insert_before(c, "file", &bad);
    assert_int_equal(sec_resolve(c, "NOPE", &v, &r), SEC_FAILED);
    assert_string_equal(r.source, "keychain");
    assert_non_null(strstr(r.why, "no session bus"));
    assert_int_equal(sec_resolve(c, "KC", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "store");
    assert_int_equal(sec_locate(c, "KC", &r), SEC_FOUND);
    sb_release_secure(&v);
    sec_chain_free(c);
    free(store);
    tu_rmtree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dotenv_syntax),
        cmocka_unit_test(test_default_order),
        cmocka_unit_test(test_store_must_be_private),
        cmocka_unit_test(test_custom_backend_and_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
