/* ${REF} grammar (docs/manifest.md). */
#include "testutil.h"

#include "bundle/ref.h"

static char *scan_join(const char *s)
{
    strvec v = STRVEC_INIT;
    ref_scan(s, strlen(s), &v);
    strbuf sb = SB_INIT;
    for (size_t i = 0; i < v.n; i++)
        sb_addf(&sb, "%s%s", i ? "," : "", v.v[i]);
    strvec_clear(&v);
    return sb_detach(&sb, NULL);
}

#define SCAN(in, want)                                                                             \
    do {                                                                                           \
        char *got_ = scan_join(in);                                                                \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

static void test_grammar(void **state)
{
    (void)state;
    SCAN("${A}", "A");
    SCAN("x${_a1}y${B}", "_a1,B");
    SCAN("${A:-${B}}", "B");
    SCAN("${1X}", "");
    SCAN("${A-B}", "");
    SCAN("${", "");
    SCAN("${A", "");
    SCAN("abc ${", "");
    SCAN("${}", "");
    SCAN("$A {B}", "");
    SCAN("$${A}", "A");
    SCAN("${${${C}}}", "C");
    SCAN("${A}${A}", "A,A");
    SCAN("Bearer ${GH_PAT}", "GH_PAT");
    SCAN("${a b}", "");
    SCAN("${é}", "");
}

static void test_binary_input(void **state)
{
    (void)state;
    const char data[] = {'$', '{', 'A', '\0', '}', '$', '{', 'B', '}', '$'};
    strvec v = STRVEC_INIT;
    ref_scan(data, sizeof data, &v);
    assert_int_equal(v.n, 1);
    assert_string_equal(v.v[0], "B");
    strvec_clear(&v);
    /* Every prefix of a tricky string: never a crash, never a read past len. */
    const char *t = "${A:-${B}}${C}${";
    for (size_t n = 0; n <= strlen(t); n++) {
        char *cp = malloc(n ? n : 1);
        memcpy(cp, t, n);
        ref_scan(cp, n, &v);
        strvec_clear(&v);
        free(cp);
    }
}

static void test_name_valid(void **state)
{
    (void)state;
    assert_true(ref_name_valid("A"));
    assert_true(ref_name_valid("_x9"));
    assert_false(ref_name_valid("9x"));
    assert_false(ref_name_valid(""));
    assert_false(ref_name_valid("A-B"));
    assert_true(ref_has_ref("x ${Y} z"));
    assert_false(ref_has_ref("x ${1Y} z"));
}

static int lookup(void *ctx, const char *name, strbuf *out, struct as_err *err)
{
    (void)ctx;
    if (strcmp(name, "MISSING") == 0)
        return as_err_set(err, "unresolved secret reference ${%s}", name);
    sb_addf(out, "<%s>", name);
    return 0;
}

static void test_expand(void **state)
{
    (void)state;
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(ref_expand("a${X}b${1Y}c${A:-${B}}", lookup, NULL, &out, &err), 0);
    assert_string_equal(out.buf, "a<X>b${1Y}c${A:-<B>}");
    sb_reset(&out);
    assert_int_equal(ref_expand("${MISSING}", lookup, NULL, &out, &err), -1);
    assert_non_null(strstr(err.msg, "MISSING"));
    sb_release(&out);
}

static void test_url_host(void **state)
{
    (void)state;
    assert_true(ref_url_host_known("https://api.example.com/mcp?k=${K}"));
    assert_false(ref_url_host_known("https://${HOST}/mcp"));
    assert_false(ref_url_host_known("https://user:${P}@h/"));
    assert_false(ref_url_host_known("${URL}"));
    assert_false(ref_url_host_known("https:///x"));
}

static void test_server_and_manifest_refs(void **state)
{
    (void)state;
    const char *text = "version = 1\n"
                       "[servers.a]\ntype = \"stdio\"\ncommand = \"${CMD}\"\n"
                       "args = [\"--t\", \"${TOK}\", \"${CMD}\"]\ncwd = \"${DIR}\"\n"
                       "env = { X = \"${ENVV}\" }\n"
                       "[servers.a.extra.codex]\nk = [\"${EXTRA}\", { n = \"${DEEP}\" }]\n"
                       "[servers.b]\ntype = \"http\"\nurl = \"https://h/${ZPATH}\"\n"
                       "headers = { Authorization = \"Bearer ${GH}\" }\n"
                       "[hooks.h]\nevent = \"PreToolUse\"\ncommand = \"${HOOKCMD}\"\n"
                       "args = [\"${AARG}\"]\n";
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT, .path = "/p/agentstack.toml", .data = text, .len = strlen(text)};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    assert_non_null(m);
    strvec v = STRVEC_INIT;
    ref_server_refs(&m->servers.v[0], &v);
    const char *want[] = {"CMD", "TOK", "DIR", "ENVV", "EXTRA", "DEEP"};
    assert_int_equal(v.n, 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(v.v[i], want[i]);
    ref_manifest_refs(m, &v);
    const char *all[] = {"AARG",  "CMD", "DEEP",    "DIR", "ENVV",
                         "EXTRA", "GH",  "HOOKCMD", "TOK", "ZPATH"};
    assert_int_equal(v.n, 10);
    for (size_t i = 0; i < 10; i++)
        assert_string_equal(v.v[i], all[i]);
    strvec_clear(&v);
    manifest_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grammar),    cmocka_unit_test(test_binary_input),
        cmocka_unit_test(test_name_valid), cmocka_unit_test(test_expand),
        cmocka_unit_test(test_url_host),   cmocka_unit_test(test_server_and_manifest_refs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
