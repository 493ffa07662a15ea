/* Unit tests: the literal-secret detector (06 §1.5, §9; errata 30). */
#include "../testutil.h"

#include "bundle/literal_secret.h"

static void test_key_names(void **state)
{
    (void)state;
    assert_true(lsec_key_secretish("Authorization"));
    assert_true(lsec_key_secretish("X-API-KEY"));
    assert_true(lsec_key_secretish("GITHUB_TOKEN"));
    assert_true(lsec_key_secretish("db_password"));
    assert_true(lsec_key_secretish("Bearer"));
    assert_true(lsec_key_secretish("client_secret"));
    assert_false(lsec_key_secretish("Content-Type"));
    assert_false(lsec_key_secretish("PATH"));
    assert_false(lsec_key_secretish(NULL));

    assert_int_equal(lsec_classify("Authorization", "Bearer sk-1"), LSEC_KEY_NAME);
    assert_int_equal(lsec_classify("api_key", "x"), LSEC_KEY_NAME);
    /* ${REF}s are never secrets, whatever the key */
    assert_int_equal(lsec_classify("Authorization", "Bearer ${KIBANA_TOKEN}"), LSEC_NONE);
    assert_int_equal(lsec_classify("GITHUB_TOKEN", "${GITHUB_TOKEN}"), LSEC_NONE);
    assert_int_equal(lsec_classify("token", ""), LSEC_NONE);
    assert_int_equal(lsec_classify("Content-Type", "application/json"), LSEC_NONE);
}

static void test_prefixes(void **state)
{
    (void)state;
    const char *hits[] = {
        "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
        "github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz",
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "xoxb-123456789012-abcdefghijkl",
        "AKIAIOSFODNN7EXAMPLE",
        "glpat-abcdefghijklmnopqrstu",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "Bearer ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
    };
    for (size_t i = 0; i < sizeof hits / sizeof *hits; i++) {
        assert_int_equal(lsec_value_shape(hits[i]), LSEC_PREFIX);
        /* under a neutral name too: the value's shape is enough */
        assert_int_not_equal(lsec_classify("X-Custom", hits[i]), LSEC_NONE);
    }
    /* a prefix glued to a ${REF} is still a secret; the ref alone is not */
    assert_int_equal(lsec_value_shape("ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5${X}"), LSEC_PREFIX);
    assert_int_equal(lsec_value_shape("${GHP_TOKEN}"), LSEC_NONE);
    /* inside a word, or too short, a prefix is no token */
    assert_int_equal(lsec_value_shape("task-runner"), LSEC_NONE);
    assert_int_equal(lsec_value_shape("sk-1"), LSEC_NONE);
    assert_int_equal(lsec_value_shape("AKIA"), LSEC_NONE);
}

static void test_entropy(void **state)
{
    (void)state;
    assert_int_equal(lsec_value_shape("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"), LSEC_ENTROPY);
    assert_int_equal(lsec_value_shape("q8Zr4Tn2Vx7Lk1Pw9Hs3Jd6Fg"), LSEC_ENTROPY);
    /* ordinary configuration is not noise */
    const char *quiet[] = {
        "@modelcontextprotocol/server-filesystem",
        "https://api.githubcopilot.com/mcp/",
        "--experimentalFeatureFlag2024",
        "/usr/local/lib/node_modules/typescript/bin/tsc",
        "ghcr.io/github/github-mcp-server:v1.2.3",
        "0123456789abcdef0123456789abcdef01234567",
        "npx",
        "application/json; charset=utf-8",
        "${ACME_TOKEN}",
    };
    for (size_t i = 0; i < sizeof quiet / sizeof *quiet; i++)
        assert_int_equal(lsec_value_shape(quiet[i]), LSEC_NONE);
}

static void test_url(void **state)
{
    (void)state;
    lsec_findings f = VEC_INIT;
    lsec_check_url("url", "https://u:p@host/x", &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].key, "password");
    assert_int_equal(f.v[0].why, LSEC_USERINFO);
    lsec_findings_free(&f);

    lsec_check_url("url", "https://u:${PW}@host/x", &f);
    assert_int_equal(f.n, 0);

    lsec_check_url("url", "https://h/mcp?api_key=x&mode=fast", &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].key, "api_key");
    lsec_findings_free(&f);

    lsec_check_url("url", "https://h/mcp?api_key=${K}", &f);
    assert_int_equal(f.n, 0);

    lsec_check_url("url", "https://h/mcp?x=ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", &f);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].why, LSEC_PREFIX);
    lsec_findings_free(&f);
}

static void test_args(void **state)
{
    (void)state;
    lsec_findings f = VEC_INIT;
    const char *a1[] = {"-y", "@acme/mcp", "--token", "x"};
    lsec_check_args("args", a1, 4, &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].key, "--token");
    lsec_findings_free(&f);

    const char *a2[] = {"--api-key=abc", "password=hunter2"};
    lsec_check_args("args", a2, 2, &f);
    assert_int_equal(f.n, 2);
    assert_string_equal(f.v[0].key, "--api-key");
    assert_string_equal(f.v[1].key, "password");
    lsec_findings_free(&f);

    const char *a3[] = {"--token", "${T}", "--token=${T}", "--port", "8080"};
    lsec_check_args("args", a3, 5, &f);
    assert_int_equal(f.n, 0);

    const char *a4[] = {"serve", "AKIAIOSFODNN7EXAMPLE"};
    lsec_check_args("args", a4, 2, &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].key, "args[1]");
    lsec_findings_free(&f);
}

static void test_server_table_and_lines(void **state)
{
    (void)state;
    const char *doc = "type = \"http\"\nurl = \"https://h/mcp\"\n"
                      "[headers]\nAuthorization = \"Bearer sk-1\"\nAccept = \"text/plain\"\n"
                      "[env]\nGH = \"${GH}\"\n";
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_parse("s.toml", doc, strlen(doc), &err);
    assert_non_null(t);
    lsec_findings f = VEC_INIT;
    lsec_check_server_table(t, &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].key, "Authorization");
    assert_string_equal(f.v[0].where, "headers");
    lsec_findings_free(&f);
    lsec_check_toml(t, &f);
    assert_int_equal(f.n, 1);
    lsec_findings_free(&f);
    toml_free(t);

    const char *l1 = "+Authorization = \"Bearer sk-1\"";
    lsec_check_line("h", l1, strlen(l1), &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].key, "Authorization");
    lsec_findings_free(&f);
    const char *l2 = "token: 'abc'";
    lsec_check_line("h", l2, strlen(l2), &f);
    assert_int_equal(f.n, 1);
    lsec_findings_free(&f);
    const char *l3 = "Authorization = \"Bearer ${T}\"";
    lsec_check_line("h", l3, strlen(l3), &f);
    assert_int_equal(f.n, 0);
    const char *l4 = "this line is broken [[[ ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
    lsec_check_line("h", l4, strlen(l4), &f);
    assert_int_equal(f.n, 1);
    lsec_findings_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_names), cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_entropy),   cmocka_unit_test(test_url),
        cmocka_unit_test(test_args),      cmocka_unit_test(test_server_table_and_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
