/* [policy.isolation] servers: either layer may ask for confined servers and
 * none can turn them off; the compiled ruleset carries the setting through
 * its wire form (a frozen grant keeps it); a ruleset that decides nothing
 * confines; the table is strict. */
#include "testutil.h"

#include "base/strbuf.h"
#include "base/toml.h"
#include "policy/policy.h"

static struct pol_layer *layer(enum pol_layer_id id, const char *toml, struct as_err *err)
{
    toml_value *root = toml_parse("t.toml", toml, strlen(toml), err);
    if (!root)
        fail_msg("toml: %s", err->msg);
    struct pol_layer *l = pol_layer_from_toml(toml_get(root, "policy"), "t.toml", id, err);
    toml_free(root);
    return l;
}

static enum pol_isolation effective(const char *machine, const char *project, enum pol_by *by)
{
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *m = layer(POL_MACHINE, machine, &err);
    struct pol_layer *p = layer(POL_PROJECT, project, &err);
    assert_non_null(m);
    assert_non_null(p);
    struct pol_ruleset *rs = pol_compile(m, p, "/home/u", &err);
    assert_non_null(rs);
    enum pol_isolation iso = pol_isolation_of(rs, by);
    /* The wire form keeps it, byte for byte. */
    strbuf w = SB_INIT, w2 = SB_INIT;
    pol_ruleset_to_json(rs, &w);
    struct pol_ruleset *back = pol_ruleset_from_json(w.buf, w.len, &err);
    assert_non_null(back);
    enum pol_by by2;
    assert_int_equal(pol_isolation_of(back, &by2), iso);
    if (by)
        assert_int_equal(by2, *by);
    pol_ruleset_to_json(back, &w2);
    assert_string_equal(w.buf, w2.buf);
    sb_release(&w);
    sb_release(&w2);
    pol_ruleset_free(back);
    pol_ruleset_free(rs);
    pol_layer_free(m);
    pol_layer_free(p);
    return iso;
}

#define CONFINED "[policy.isolation]\nservers = \"confined\"\n"
#define HOST "[policy.isolation]\nservers = \"host\"\n"

static void test_layers(void **st)
{
    (void)st;
    enum pol_by by;
    assert_int_equal(effective("", "", &by), POL_ISO_HOST);
    assert_int_equal(by, POL_BY_NONE);
    assert_int_equal(effective(CONFINED, "", &by), POL_ISO_CONFINED);
    assert_int_equal(by, POL_BY_MACHINE);
    /* A project asks for it ... */
    assert_int_equal(effective("", CONFINED, &by), POL_ISO_CONFINED);
    assert_int_equal(by, POL_BY_PROJECT);
    /* ... and can never turn the machine's setting off. */
    assert_int_equal(effective(CONFINED, HOST, &by), POL_ISO_CONFINED);
    assert_int_equal(by, POL_BY_MACHINE);
    assert_int_equal(effective(HOST, HOST, &by), POL_ISO_HOST);
}

static void test_fail_closed(void **st)
{
    (void)st;
    struct pol_ruleset *rs = pol_ruleset_deny_all("no policy");
    assert_int_equal(pol_isolation_of(rs, NULL), POL_ISO_CONFINED);
    pol_ruleset_free(rs);
    assert_int_equal(pol_isolation_of(NULL, NULL), POL_ISO_CONFINED);
    /* A wire form that claims something else is refused, not ignored. */
    struct as_err err = AS_ERR_INIT;
    const char *bad = "{\"version\":3,\"defaults\":{\"tools\":\"allow\",\"egress\":\"allow\","
                      "\"secrets\":\"allow\",\"filesystem\":\"allow\"},"
                      "\"isolation\":{\"servers\":\"host\",\"by\":\"machine\"}}";
    assert_null(pol_ruleset_from_json(bad, strlen(bad), &err));
    assert_non_null(strstr(err.msg, "isolation"));
}

static void test_strict(void **st)
{
    (void)st;
    struct as_err err = AS_ERR_INIT;
    assert_null(layer(POL_MACHINE, "[policy.isolation]\nserver = \"confined\"\n", &err));
    char buf[4096];
    as_err_str(&err, buf, sizeof buf);
    assert_non_null(strstr(buf, "t.toml:2:1"));
    assert_non_null(strstr(buf, "did you mean 'servers'"));
    err = (struct as_err)AS_ERR_INIT;
    assert_null(layer(POL_MACHINE, "[policy.isolation]\nservers = \"off\"\n", &err));
    assert_non_null(strstr(err.msg, "\"confined\" or \"host\""));
    err = (struct as_err)AS_ERR_INIT;
    assert_null(layer(POL_MACHINE, "[policy]\nisolation = \"confined\"\n", &err));
    /* The explain row names the layer that asked. */
    struct pol_layer *m = layer(POL_MACHINE, CONFINED, &err);
    strbuf row = SB_INIT;
    pol_isolation_row(m, NULL, &row);
    assert_non_null(strstr(row.buf, "Isolation"));
    assert_non_null(strstr(row.buf, "machine policy"));
    sb_release(&row);
    pol_layer_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_fail_closed),
        cmocka_unit_test(test_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
