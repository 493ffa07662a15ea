/* Unit tests: the literal-secret detector (06 §1.5, §9; errata 30). */
#include "../testutil.h"

#include "base/strbuf.h"
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

/* Text spans: each secret value of a command line is located exactly (what
 * the host guard's audit rows redact); neighbouring words stay. */
static void test_text_spans(void **state)
{
    (void)state;
    static const struct {
        const char *text, *secret, *kept;
    } cases[] = {
        {"mysql -uroot -phunter2pw db", "hunter2pw", "-uroot"},
        {"curl -H 'X-Api-Key: s3cr3t-value' https://x", "s3cr3t-value", "https://x"},
        {"curl -H \"Authorization: Bearer abc.def\" u", "Bearer abc.def", " u"},
        {"export GITHUB_TOKEN=abc123secretvalue; ls", "abc123secretvalue", "; ls"},
        {"x --password s3cr3tpass y", "s3cr3tpass", " y"},
        {"x --api-key=hunter22 y", "hunter22", " y"},
        {"git clone https://user:hunter2@host/x", "hunter2", "user:"},
        {"aws AKIAABCDEFGHIJKLMNOP go", "AKIAABCDEFGHIJKLMNOP", " go"},
        {"echo ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 >x", "ghp_aB3d", ">x"},
        {"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig ok", "eyJhbGci", " ok"},
        {"k \"-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\" z", "MIIB",
         " z"},
        {"blob Zk9vQmFyMTIzNDU2Nzg5MGFiY2RlZg end", "Zk9vQmFy", " end"},
        {"curl -u me token abcdefgh1234 -x", "abcdefgh1234", " -x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].text;
        size_t n = strlen(t);
        lsec_spans sp = VEC_INIT;
        lsec_text_spans(t, n, &sp);
        char *mask = xcalloc(n + 1, 1);
        for (size_t k = 0; k < sp.n; k++) {
            assert_true(sp.v[k].off + sp.v[k].len <= n);
            memset(mask + sp.v[k].off, 1, sp.v[k].len);
        }
        const char *at = strstr(t, cases[i].secret);
        assert_non_null(at);
        for (size_t k = 0; k < strlen(cases[i].secret); k++)
            if (!mask[(size_t)(at - t) + k])
                fail_msg("case %zu: byte %zu of the secret is not covered: %s", i, k, t);
        const char *kp = strstr(t, cases[i].kept);
        assert_non_null(kp);
        for (size_t k = 0; k < strlen(cases[i].kept); k++)
            if (mask[(size_t)(kp - t) + k])
                fail_msg("case %zu: '%s' was covered: %s", i, cases[i].kept, t);
        free(mask);
        vec_free(&sp);
    }
    /* plain commands have no spans */
    static const char *const plain[] = {"git status",
                                        "ls -la src",
                                        "make -j4 all",
                                        "mkdir -p build/out",
                                        "cp -pr a b",
                                        "ssh -p2222 host",
                                        "git commit -m \"drop .env handling\"",
                                        NULL};
    for (size_t i = 0; plain[i]; i++) {
        lsec_spans sp = VEC_INIT;
        lsec_text_spans(plain[i], strlen(plain[i]), &sp);
        if (sp.n)
            fail_msg("'%s' has a span at %zu", plain[i], sp.v[0].off);
        vec_free(&sp);
    }
    /* hostile input: NULs, long runs, many BEGIN markers — linear, in bounds */
    strbuf big = SB_INIT;
    for (int k = 0; k < 20000; k++)
        sb_add(&big, "-----BEGIN x=\0:--p", 18);
    lsec_spans sp = VEC_INIT;
    lsec_text_spans(big.buf, big.len, &sp);
    for (size_t k = 0; k < sp.n; k++)
        assert_true(sp.v[k].off + sp.v[k].len <= big.len);
    vec_free(&sp);
    sb_release(&big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_names),  cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_entropy),    cmocka_unit_test(test_url),
        cmocka_unit_test(test_args),       cmocka_unit_test(test_server_table_and_lines),
        cmocka_unit_test(test_text_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
