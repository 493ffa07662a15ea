/*
 * Regressions found by fuzz/fuzz_policy.c and the policy CLI's end-to-end
 * tests, each pinned so the fix cannot silently come undone:
 *  - a bracketed egress glob without a colon ("[*.]") is refused like
 *    "[example.com]": accepted, it parsed to "*." while its re-rendering
 *    "*." parsed to "*";
 *  - applying a preset twice changes nothing (the editor used to reflow the
 *    last table and drop a blank line on every run).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

struct parsed {
    char host[POL_HOST_MAX + 1];
    char canon[POL_MAX_PATTERN + 1];
    uint16_t port;
};

static int parse(const char *e, struct parsed *p)
{
    const char *why = NULL;
    memset(p, 0, sizeof *p);
    return pol_egress_parse(e, p->host, &p->port, p->canon, &why);
}

static void assert_reparses(const char *entry, const char *host, const char *canon, unsigned port)
{
    struct parsed a, b;
    if (parse(entry, &a) != 0)
        fail_msg("'%s' does not parse", entry);
    assert_string_equal(a.host, host);
    assert_string_equal(a.canon, canon);
    assert_int_equal(a.port, port);
    if (parse(a.canon, &b) != 0)
        fail_msg("canon '%s' of '%s' does not parse", a.canon, entry);
    assert_string_equal(a.host, b.host);
    assert_string_equal(a.canon, b.canon);
    assert_int_equal(a.port, b.port);
}

static void test_bracketed_name_glob(void **st)
{
    (void)st;
    /* fuzz_policy: "[*.]" parsed to host "*." but its canon "*." to "*";
     * brackets hold IPv6 only, as "[example.com]" already showed */
    struct parsed p;
    static const char *const refused[] = {"[*.]", "[*.]:443",      "[*.Example.COM.]:*", "[*]",
                                          "[a*]", "[example.com]", "[1.2.3.*]"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        if (parse(refused[i], &p) != -1)
            fail_msg("'%s' was accepted as '%s'", refused[i], p.canon);
    /* real IPv6 globs and literals keep their bracketed form and re-parse */
    assert_reparses("[2001:DB8::*]:443", "2001:db8::*", "[2001:db8::*]:443", 443);
    assert_reparses("[*:*]", "*:*", "[*:*]", 0);
    assert_reparses("[2001:db8:0:0:0:0:0:1]", "2001:db8::1", "[2001:db8::1]", 0);
    assert_reparses("[::ffff:169.254.169.254]:80", "169.254.169.254", "169.254.169.254:80", 80);
    assert_reparses("*.Example.COM.:*", "*.example.com", "*.example.com:*", 0);
}

/* The layer refuses the bracketed name glob at path:line:col, with a fix. */
static void test_bracketed_name_glob_refused_in_layer(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *m = pol_layer_new(POL_MACHINE, "m.toml");
    assert_int_equal(pol_layer_add(m, POL_EGRESS, "*", "![*.internal.]:443", 3, 8, &err), -1);
    assert_string_equal(err.path, "m.toml");
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 8);
    assert_non_null(strstr(err.msg, "brackets hold an IPv6 address"));
    assert_true(pol_layer_is_empty(m));
    pol_layer_free(m);
}

static void test_preset_twice_is_a_no_op(void **st)
{
    (void)st;
    static const char *const old = "# my machine file\n"
                                   "version = 1   # keep me\n"
                                   "\n"
                                   "[guard]\n"
                                   "enabled = false  # guard comment\n"
                                   "\n"
                                   "[policy]\n"
                                   "allowed_sources = [\"git:github.com/acme/*\"]\n"
                                   "\n"
                                   "[policy.tools]\n"
                                   "\"*\" = [\"!foo_*\"]\n"
                                   "\n"
                                   "[instructions.house]\n"
                                   "path = \"house.md\"\n";
    for (size_t i = 0; i < pol_npresets; i++) {
        const struct pol_preset *p = &pol_presets[i];
        strbuf once = SB_INIT, twice = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        assert_int_equal(pol_preset_apply(p, "m.toml", old, strlen(old), &once, &err), 0);
        assert_int_equal(pol_preset_apply(p, "m.toml", once.buf, once.len, &twice, &err), 0);
        if (once.len != twice.len || memcmp(once.buf, twice.buf, once.len) != 0)
            fail_msg("preset '%s' applied twice differs:\n--- once\n%s--- twice\n%s", p->name,
                     once.buf, twice.buf);
        /* the bytes before the first replaced table are untouched */
        const char *head = "# my machine file\nversion = 1   # keep me\n\n[guard]\n"
                           "enabled = false  # guard comment\n\n[policy]\n"
                           "allowed_sources = [\"git:github.com/acme/*\"]\n";
        assert_memory_equal(once.buf, head, strlen(head));
        assert_non_null(strstr(once.buf, "[instructions.house]\npath = \"house.md\"\n"));
        struct pol_layer *l = pol_machine_parse("m.toml", once.buf, once.len, &err);
        assert_non_null(l);
        assert_int_equal(l->allowed_sources.n, 1);
        pol_layer_free(l);
        sb_release(&once);
        sb_release(&twice);
    }
}

/* A table that already equals the preset, however it is formatted, stays. */
static void test_preset_keeps_equal_tables_verbatim(void **st)
{
    (void)st;
    static const char *const old = "version = 1\n"
                                   "[policy.tools]\n"
                                   "# house style\n"
                                   "\"*\" = [ \"!delete_*\", \"!destroy_*\",\n"
                                   "        \"!*_admin\", \"!drop_*\" ]\n";
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(
        pol_preset_apply(pol_preset_find("compatible"), "m.toml", old, strlen(old), &out, &err), 0);
    assert_string_equal(out.buf, old);
    sb_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bracketed_name_glob),
        cmocka_unit_test(test_bracketed_name_glob_refused_in_layer),
        cmocka_unit_test(test_preset_twice_is_a_no_op),
        cmocka_unit_test(test_preset_keeps_equal_tables_verbatim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
