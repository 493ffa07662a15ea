/* Unit tests: the literal-secret detector (docs/library.md). */
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

#define HEX64 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

static size_t server_findings(const char *doc, const char *want_key)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_parse("s.toml", doc, strlen(doc), &err);
    if (!t)
        fail_msg("%s: %s", doc, err.msg);
    lsec_findings f = VEC_INIT;
    lsec_check_server_table(t, &f);
    size_t n = f.n;
    if (want_key && (!n || strcmp(f.v[0].key, want_key) != 0))
        fail_msg("expected '%s' in:\n%s(got %zu, first '%s')", want_key, doc, n,
                 n ? f.v[0].key : "");
    if (!want_key && n)
        fail_msg("false positive '%s' (%s) in:\n%s", f.v[0].key, f.v[0].where, doc);
    lsec_findings_free(&f);
    toml_free(t);
    return n;
}

/* issue 17: every form lib sync let through with exit 0 */
static void test_issue_forms(void **state)
{
    (void)state;
    server_findings("type = \"http\"\nurl = \"https://h/mcp\"\n[headers]\n"
                    "Authorization = \"Bearer ${X}" HEX64 "\"\n",
                    "Authorization");
    server_findings("type = \"http\"\nurl = \"https://h/mcp\"\n[headers]\n"
                    "X-Custom = \"" HEX64 "\"\n",
                    "X-Custom");
    server_findings("type = \"stdio\"\ncommand = \"x\"\nargs = [\"--pat\", \"" HEX64 "\"]\n",
                    "--pat");
    server_findings("type = \"stdio\"\ncommand = \"x\"\nargs = [\"--pass=hunter2hunter2\"]\n",
                    "--pass");
    server_findings("type = \"stdio\"\ncommand = \"x\"\n[env]\nSETTING = \"" HEX64 "\"\n",
                    "SETTING");
    server_findings("type = \"stdio\"\ncommand = \"x\"\n[env]\nDB_PASS = \"hunter2hunter2\"\n",
                    "DB_PASS");
    server_findings("type = \"http\"\nurl = \"https://h/mcp?code=" HEX64 "\"\n", "code");
    server_findings("type = \"http\"\nurl = \"https://hooks.example.com/services/" HEX64 "/x\"\n",
                    "url");
    /* a ref beside a scheme word, or two refs, hold no literal */
    server_findings("type = \"http\"\nurl = \"https://h/mcp\"\n[headers]\n"
                    "Authorization = \"Bearer ${X}\"\nX-Pair = \"${A}-${B}\"\n",
                    NULL);
    assert_true(lsec_value_literal("Bearer ${X}" HEX64));
    assert_false(lsec_value_literal("Bearer ${X}"));
    assert_false(lsec_value_literal("${A}:${B}"));

    /* skill files: prose, shell lines, JSON */
    const char *lines[][2] = {
        {"export OPENAI_API_KEY=abc123def456ghi789jkl012", "OPENAI_API_KEY"},
        {"curl -H 'authorization: bearer q9w8e7r6t5y4u3i2o1p0' https://x", "authorization"},
        {"Authorization: Bearer q9w8e7r6t5y4u3i2o1p0", "Authorization"},
        {"  \"token\": \"abc123\",", "token"},
        {"DB_PASSWORD=S3cr3tPa55 ./run.sh", "DB_PASSWORD"},
        {"run it with --password hunter2hunter2 once", "--password"},
        {"git clone https://deploy:pa55w0rd@git.example.com/x.git", "password"},
        {"this line is broken [[[ ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "line"},
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        lsec_findings f = VEC_INIT;
        lsec_check_text("SKILL.md", lines[i][0], strlen(lines[i][0]), &f);
        if (!f.n || strcmp(f.v[0].key, lines[i][1]) != 0)
            fail_msg("text %zu: expected '%s', got %zu", i, lines[i][1], f.n);
        lsec_findings_free(&f);
    }
    json_error_t je;
    json_t *j = json_loads("{\"svc\":{\"url\":\"https://h\",\"token\":\"abc123\"},"
                           "\"args\":[\"--api-key\",\"k1\"]}",
                           0, &je);
    lsec_findings f = VEC_INIT;
    lsec_check_json(j, &f);
    assert_int_equal(f.n, 2);
    assert_string_equal(f.v[0].key, "token");
    assert_string_equal(f.v[1].key, "--api-key");
    lsec_findings_free(&f);
    json_decref(j);
}

/* Ordinary configuration: none of it is a secret (today's false positives
 * first: `add` from git refused packs for these args). */
static void test_benign_corpus(void **state)
{
    (void)state;
    static const char *const args[] = {
        "/home/dev/MyProjects2024/McpServers/run.py",
        "/tmp/tmp.Xa81bQ/server.py",
        "/tmp/tmp.Xa81bQ9zK2/McpServers2024/run.py",
        "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/x",
        "/cache/Rq7Tz9Wk2Lm4Np6Bv8Cx0000gn/blob",
        "--data=/tmp/tmp.Xa81bQ9zK2/McpServers2024",
        "PYTHONPATH=/opt/Rq7Tz9Wk2Lm4Np6Bv8Cx/lib:/srv/Xa81bQ9zK2Lm4Np6/x",
        "./node_modules/.bin/tsx",
        "@modelcontextprotocol/server-filesystem",
        "https://registry.npmjs.org/@scope/pkg/-/pkg-1.2.3.tgz",
        "https://github.com/owner/repo/commit/0123456789abcdef0123456789abcdef01234567",
        "github:owner/repo#0123456789abcdef0123456789abcdef01234567",
        ("ghcr.io/org/img@sha256:" HEX64),
        "550e8400-e29b-41d4-a716-446655440000",
        "--port=8080",
        "--log-level=debug",
        "--auth-mode=oauth",
        "--password-file=/run/secrets/db",
        "--token-file=./secrets/token",
        "--key-file=/home/u/.ssh/id_ed25519",
        "MyComponent2024Helper.test.tsx",
        "getUserProfileById2024",
        "--experimentalFeatureFlag2024",
        "2024-11-05T10:00:00Z",
        "dev@example.com",
        "@playwright/mcp@0.0.41",
        "python3.11",
        "--session-name=my-session-2",
        "0123456789abcdef0123456789abcdef01234567",
        "--root",
        "${HOME}/projects/x",
    };
    lsec_findings f = VEC_INIT;
    lsec_check_args("args", args, sizeof args / sizeof *args, &f);
    if (f.n)
        fail_msg("false positive in args: '%s' (%s)", f.v[0].key, lsec_why_text(f.v[0].why));
    server_findings("type = \"http\"\nurl = \"https://api.example.com/v1/mcp\"\n[headers]\n"
                    "Accept = \"application/json\"\nX-Request-Id = "
                    "\"550e8400-e29b-41d4-a716-446655440000\"\n"
                    "User-Agent = \"agentstack/1.0 (linux; x86_64)\"\n"
                    "Authorization = \"Bearer ${TOKEN}\"\n",
                    NULL);
    server_findings("type = \"stdio\"\ncommand = \"python3\"\n"
                    "args = [\"/home/dev/MyProjects2024/McpServers/run.py\"]\n"
                    "cwd = \"tools\"\n[env]\nNODE_ENV = \"production\"\n"
                    "PYTHONPATH = \"/home/dev/MyProjects2024/McpServers\"\n"
                    "TOKEN_PATH = \"${HOME}/tokens/gh\"\nGITHUB_SHA = "
                    "\"0123456789abcdef0123456789abcdef01234567\"\n"
                    "checksum = \"" HEX64 "\"\nAPI_KEY = \"${API_KEY}\"\n",
                    NULL);
    static const char *const prose[] = {
        "Set your token with `agentstack secret set GITHUB_TOKEN`.",
        "password: <your password>",
        "api_key: YOUR_API_KEY",
        "export OPENAI_API_KEY=${OPENAI_API_KEY}",
        "export PATH=/home/dev/MyProjects2024/bin:$PATH",
        "Authorization: Bearer ${TOKEN}",
        "key: value",
        "The token expires after one hour; use --token to pass it.",
        "\"integrity\": \"sha512-q8Zr4Tn2Vx7Lk1Pw9Hs3Jd6FgQ8Zr4Tn2Vx7Lk1Pw9Hs3Jd6Fg==\"",
        "token: ********",
        ("![logo](data:image/"
         "png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk)"),
    };
    for (size_t i = 0; i < sizeof prose / sizeof *prose; i++) {
        lsec_check_text("SKILL.md", prose[i], strlen(prose[i]), &f);
        if (f.n)
            fail_msg("false positive in prose %zu: '%s'", i, f.v[0].key);
    }
    lsec_findings_free(&f);
}

static void test_redact(void **state)
{
    (void)state;
    strbuf out = SB_INIT;
    const char *cmd = "curl -H 'Authorization: Bearer sk-abcdef1234567890' --token "
                      "ghp_ABCDEFGHIJKLMNOP1234 -d @.env https://x.example";
    assert_true(lsec_redact(cmd, strlen(cmd), &out) >= 2);
    assert_null(strstr(out.buf, "sk-abcdef"));
    assert_null(strstr(out.buf, "ghp_ABC"));
    assert_non_null(strstr(out.buf, "Bearer " LSEC_REDACTED));
    assert_non_null(strstr(out.buf, "--token " LSEC_REDACTED));
    assert_non_null(strstr(out.buf, "-d @.env https://x.example"));
    sb_reset(&out);
    const char *more = "PGPASSWORD=hunter2hunter2 psql; git clone https://u:pa55w0rd@h/x; "
                       "echo q8Zr4Tn2Vx7Lk1Pw9Hs3Jd6Fg " HEX64;
    assert_true(lsec_redact(more, strlen(more), &out) >= 3);
    assert_null(strstr(out.buf, "hunter2"));
    assert_null(strstr(out.buf, "pa55w0rd"));
    assert_null(strstr(out.buf, "q8Zr4Tn2"));
    assert_non_null(strstr(out.buf, "https://u:" LSEC_REDACTED "@h/x"));
    sb_reset(&out);
    const char *plain = "ls -la /home/dev/MyProjects2024/McpServers && cat /tmp/tmp.Xa81bQ/x";
    assert_int_equal(lsec_redact(plain, strlen(plain), &out), 0);
    assert_string_equal(out.buf, plain);
    sb_release(&out);
}

/* The host guard's audit rows (docs/guard.md): agent command lines go
 * through lsec_redact before calls.jsonl. Each secret's bytes are gone and
 * the text around it is kept. */
static void test_redact_commands(void **state)
{
    (void)state;
    static const struct {
        const char *text, *secret, *kept;
    } cases[] = {
        {"mysql -uroot -phunter2pw db", "hunter2pw", "-uroot"},
        {"curl -H 'X-Api-Key: s3cr3t-value' https://x", "s3cr3t-value", "https://x"},
        {"curl -H \"Authorization: Bearer abc.def\" u", "abc.def", " u"},
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
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        strbuf out = SB_INIT;
        const char *t = cases[i].text;
        if (lsec_redact(t, strlen(t), &out) == 0 || strstr(out.buf, cases[i].secret))
            fail_msg("case %zu: the secret survived: %s", i, out.buf);
        if (!strstr(out.buf, cases[i].kept))
            fail_msg("case %zu: '%s' was lost: %s", i, cases[i].kept, out.buf);
        sb_release(&out);
    }
    static const char *const plain[] = {"git status",
                                        "ls -la src",
                                        "make -j4 all",
                                        "mkdir -p build/out",
                                        "cp -pr a b",
                                        "ssh -p2222 host",
                                        "git commit -m \"drop .env handling\"",
                                        NULL};
    for (size_t i = 0; plain[i]; i++) {
        strbuf out = SB_INIT;
        if (lsec_redact(plain[i], strlen(plain[i]), &out) != 0)
            fail_msg("'%s' was redacted: %s", plain[i], out.buf);
        assert_string_equal(out.buf, plain[i]);
        sb_release(&out);
    }
    /* hostile input: long runs and many BEGIN markers — linear, in bounds */
    strbuf big = SB_INIT, out = SB_INIT;
    for (int k = 0; k < 20000; k++)
        sb_adds(&big, "-----BEGIN x=:--p");
    (void)lsec_redact(big.buf, big.len, &out);
    assert_true(out.len > 0);
    sb_release(&big);
    sb_release(&out);
}

/* A mark changes its neighbours: here the first scan hides only keyVF's
 * value, and "D-zaVF=…keyVF=" before the mark then reads as one random
 * token. Redaction is a fixed point: its output hides nothing more (found
 * by fuzz_secret). */
static void test_redact_is_a_fixed_point(void **state)
{
    (void)state;
    const char *cases[] = {"D-zaVF=S=S3BeacDB=S=S3eBacD=keyVF=S=S3BeacDB=S=S3eBacDac:",
                           "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok", NULL};
    for (size_t i = 0; cases[i]; i++) {
        strbuf once = SB_INIT, twice = SB_INIT;
        assert_true(lsec_redact(cases[i], strlen(cases[i]), &once) > 0);
        if (lsec_redact(once.buf, once.len, &twice) != 0)
            fail_msg("'%s' -> '%s' -> '%s'", cases[i], once.buf, twice.buf);
        assert_string_equal(once.buf, twice.buf);
        sb_release(&once);
        sb_release(&twice);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_entropy),
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_server_table_and_lines),
        cmocka_unit_test(test_issue_forms),
        cmocka_unit_test(test_benign_corpus),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_redact_commands),
        cmocka_unit_test(test_redact_is_a_fixed_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
