/* The varlock layer: runs only when .env.schema still hashes to
 * the pinned digest, runs once per chain, accepts both JSON shapes, and a
 * failing, hanging-free or garbage-printing varlock drops the layer. A
 * fake varlock (a shell script) stands in for the real binary. */
#include "testutil.h"

#include "base/sha256.h"
#include "secrets/backends.h"

static char *fake_varlock(const char *dir, const char *body)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/bin/varlock", dir) > 0);
    char *script = NULL;
    assert_true(asprintf(&script, "#!/bin/sh\necho run >> \"%s/runs\"\n%s\n", dir, body) > 0);
    free(tu_write(dir, "bin/varlock", script));
    chmod(p, 0755);
    free(script);
    return p;
}

static void pin_of(const char *text, char hex[SHA256_HEX_LEN + 1])
{
    sha256_hex(text, strlen(text), hex);
}

static int count_runs(const char *dir)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/runs", dir) > 0);
    char *t = tu_read(p, NULL);
    free(p);
    int n = 0;
    for (char *s = t; s && (s = strstr(s, "run")); s += 3)
        n++;
    free(t);
    return n;
}

static void test_pinned_schema_runs_once(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    const char *schema = "# @required\nAPI_KEY=\n";
    free(tu_write(tmp, ".env.schema", schema));
    char *bin = fake_varlock(tmp, "printf '%s' '{\"API_KEY\":{\"value\":\"vk-1\"},\"B\":\"b2\","
                                  "\"N\":3}'");
    char hex[SHA256_HEX_LEN + 1];
    pin_of(schema, hex);
    struct sec_chain *c = sec_chain_new();
    struct sec_backend b = sec_backend_varlock(tmp, hex, bin);
    sec_chain_append(c, &b);
    strbuf v = SB_INIT;
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "API_KEY", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "vk-1");
    assert_string_equal(r.source, "varlock");
    assert_int_equal(sec_resolve(c, "B", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "b2");
    assert_int_equal(sec_resolve(c, "N", &v, &r), SEC_MISSING); /* not a string */
    assert_int_equal(sec_resolve(c, "ZZ", &v, &r), SEC_MISSING);
    assert_int_equal(count_runs(tmp), 1);
    sb_release_secure(&v);
    sec_chain_free(c);
    free(bin);
    tu_rmtree(tmp);
}

static void test_changed_schema_never_runs(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    free(tu_write(tmp, ".env.schema", "API_KEY=\n"));
    char *bin = fake_varlock(tmp, "printf '%s' '{\"API_KEY\":\"x\"}'");
    char hex[SHA256_HEX_LEN + 1];
    pin_of("something else\n", hex);
    struct sec_chain *c = sec_chain_new();
    struct sec_backend b = sec_backend_varlock(tmp, hex, bin);
    sec_chain_append(c, &b);
    strbuf v = SB_INIT;
    assert_int_equal(sec_resolve(c, "API_KEY", &v, NULL), SEC_MISSING);
    assert_int_equal(count_runs(tmp), 0); /* the binary was never started */
    sec_chain_free(c);
    /* no schema at all: never runs either */
    char *s = NULL;
    assert_true(asprintf(&s, "%s/.env.schema", tmp) > 0);
    unlink(s);
    free(s);
    c = sec_chain_new();
    b = sec_backend_varlock(tmp, hex, bin);
    sec_chain_append(c, &b);
    assert_int_equal(sec_resolve(c, "API_KEY", &v, NULL), SEC_MISSING);
    assert_int_equal(count_runs(tmp), 0);
    sec_chain_free(c);
    sb_release_secure(&v);
    free(bin);
    tu_rmtree(tmp);
}

static void test_failures_drop_the_layer(void **state)
{
    (void)state;
    const char *bodies[] = {"exit 3", "echo not json", "echo '[1,2]'"};
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        char *tmp = tu_tmpdir();
        const char *schema = "A=\n";
        free(tu_write(tmp, ".env.schema", schema));
        char *bin = fake_varlock(tmp, bodies[i]);
        char hex[SHA256_HEX_LEN + 1];
        pin_of(schema, hex);
        struct sec_chain *c = sec_chain_new();
        struct sec_backend b = sec_backend_varlock(tmp, hex, bin);
        sec_chain_append(c, &b);
        strbuf v = SB_INIT;
        assert_int_equal(sec_resolve(c, "A", &v, NULL), SEC_MISSING);
        sec_chain_free(c);
        free(bin);
        tu_rmtree(tmp);
    }
    /* a missing binary drops it too */
    char *tmp = tu_tmpdir();
    free(tu_write(tmp, ".env.schema", "A=\n"));
    char hex[SHA256_HEX_LEN + 1];
    pin_of("A=\n", hex);
    struct sec_chain *c = sec_chain_new();
    struct sec_backend b = sec_backend_varlock(tmp, hex, "/nonexistent/varlock");
    sec_chain_append(c, &b);
    strbuf v = SB_INIT;
    assert_int_equal(sec_resolve(c, "A", &v, NULL), SEC_MISSING);
    sec_chain_free(c);
    tu_rmtree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_schema_runs_once),
        cmocka_unit_test(test_changed_schema_never_runs),
        cmocka_unit_test(test_failures_drop_the_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
