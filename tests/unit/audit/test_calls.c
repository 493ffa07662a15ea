/* Call rows (docs/audit.md), load rows, and the audit --calls summary. */
#include "testutil.h"

#include "audit/audit.h"

static char *home_of(const char *dir)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/home/.agentstack", dir) > 0);
    return p;
}

static void dump(const json_t *v, char *out, size_t n)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    snprintf(out, n, "%s", s);
    free(s);
}

static void test_field_order(void **state)
{
    (void)state;
    char buf[1024];
    struct aud_call denied = {
        .ts = 1767225600,
        .pid = 4242,
        .project = "/home/dev/app",
        .server = "opsbox",
        .tool = "delete_everything",
        .args_digest = "a41c09e7b2d3",
        .outcome = "denied",
        .detail = "denied by [policy.tools] rule \"!delete_*\" (machine policy — "
                  "~/.agentstack/agentstack.toml)",
        .rule = "!delete_*",
        .layer = "machine",
        .ms = 0,
    };
    json_t *r = aud_call_record(&denied);
    dump(r, buf, sizeof buf);
    assert_string_equal(
        buf, "{\"ts\":1767225600,\"pid\":4242,\"project\":\"/home/dev/app\",\"server\":\"opsbox\","
             "\"tool\":\"delete_everything\",\"args_digest\":\"a41c09e7b2d3\",\"outcome\":"
             "\"denied\",\"detail\":\"denied by [policy.tools] rule \\\"!delete_*\\\" (machine "
             "policy — ~/.agentstack/agentstack.toml)\",\"ms\":0,\"rule\":\"!delete_*\","
             "\"layer\":\"machine\"}");
    json_decref(r);

    struct aud_call ok = {.ts = 5,
                          .run = "r-1a2b",
                          .pid = 1,
                          .server = "ops",
                          .tool = "get",
                          .args_digest = "0123456789ab",
                          .outcome = "ok",
                          .detail = "ignored on ok rows",
                          .ms = 12};
    r = aud_call_record(&ok);
    dump(r, buf, sizeof buf);
    assert_string_equal(buf, "{\"ts\":5,\"run\":\"r-1a2b\",\"pid\":1,\"server\":\"ops\",\"tool\":"
                             "\"get\",\"args_digest\":\"0123456789ab\",\"outcome\":\"ok\","
                             "\"ms\":12}");
    json_decref(r);

    struct aud_call fam = {.ts = 5,
                           .pid = 1,
                           .project = "/p",
                           .server = "demo",
                           .tool = "fence",
                           .args_digest = "",
                           .outcome = "denied",
                           .detail = "fenced",
                           .ms = 0};
    r = aud_call_record(&fam);
    dump(r, buf, sizeof buf);
    assert_string_equal(buf, "{\"ts\":5,\"pid\":1,\"project\":\"/p\",\"server\":\"demo\",\"tool\":"
                             "\"fence\",\"args_digest\":\"\",\"outcome\":\"denied\",\"detail\":"
                             "\"fenced\",\"ms\":0}");
    json_decref(r);
}

static void test_detail_cut_on_utf8_boundary(void **state)
{
    (void)state;
    char detail[400];
    memset(detail, 'a', 199);
    strcpy(detail + 199, "é and more"); /* é straddles the 200-byte cut */
    struct aud_call c = {.ts = 1,
                         .pid = 1,
                         .server = "s",
                         .tool = "t",
                         .args_digest = "",
                         .outcome = "error",
                         .detail = detail,
                         .ms = 0};
    json_t *r = aud_call_record(&c);
    const char *d = json_string_value(json_object_get(r, "detail"));
    assert_non_null(d);
    assert_int_equal(strlen(d), 199);
    json_decref(r);
    strbuf sb = SB_INIT;
    aud_utf8_cut("ok\xff\xfe-é", 100, &sb);
    assert_string_equal(sb.buf, "ok?\?-é");
    sb_release(&sb);
}

static void test_rows_are_chained(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    struct as_err err = AS_ERR_INIT;
    struct aud_call c = {.ts = 1,
                         .pid = 1,
                         .server = "s",
                         .tool = "t",
                         .args_digest = "x",
                         .outcome = "ok",
                         .ms = 1};
    assert_int_equal(aud_call_append(home, &c, &err), 0);
    assert_int_equal(aud_call_append(home, &c, &err), 0);
    assert_int_equal(aud_load_append(home, "review-checklist", "reviewing", "/p", NULL, &err), 0);
    char *calls = NULL, *loads = NULL;
    assert_true(asprintf(&calls, "%s/audit/calls.jsonl", home) > 0);
    assert_true(asprintf(&loads, "%s/audit/loads.jsonl", home) > 0);
    struct aud_break b;
    assert_int_equal(aud_verify(calls, &b, NULL, &err), 0);
    assert_int_equal(aud_verify(loads, &b, NULL, &err), 0);
    char *t = tu_read(loads, NULL);
    assert_non_null(strstr(t, "\"name\":\"review-checklist\",\"reason\":\"reviewing\","
                              "\"project\":\"/p\",\"prev\":\""));
    free(t);
    free(calls);
    free(loads);
    free(home);
    tu_rmtree(dir);
}

static void add(const char *home, const char *project, const char *server, const char *tool,
                const char *outcome, const char *layer)
{
    struct aud_call c = {.ts = 1,
                         .pid = 1,
                         .project = project,
                         .server = server,
                         .tool = tool,
                         .args_digest = "",
                         .outcome = outcome,
                         .ms = 0,
                         .layer = layer,
                         .rule = layer ? "!x" : NULL,
                         .detail = layer ? "denied" : NULL};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_call_append(home, &c, &err), 0);
}

static void test_summary_line(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    struct aud_summary s;
    struct as_err err = AS_ERR_INIT;
    strbuf line = SB_INIT;
    /* no log yet */
    assert_int_equal(aud_calls_summarize(home, "/p", &s, &err), 0);
    aud_summary_line(&s, &line);
    assert_string_equal(line.buf, "0 calls · 0 tools · 0 denied by policy — digests, never values");
    aud_summary_release(&s);

    /* the documented closed loop: one ok call, one policy denial */
    add(home, "/p", "acme", "search_docs", "ok", NULL);
    add(home, "/p", "acme", "delete_index", "denied", "machine");
    add(home, "/p", "acme", "fence", "denied", NULL); /* refusal family: not a call */
    add(home, "/p", "demo", "trust", "denied", NULL); /* idem */
    add(home, "/q", "other", "get", "ok", NULL);      /* another project */
    add(home, "/q", "other", "get", "error", NULL);
    /* a tools_execute execution's own row: its inner calls are the calls */
    struct aud_execution xe = {.calls = 1, .output_bytes = 5, .code_sha256 = "ab"};
    struct aud_call xc = {.execution = "x-0123456789abcdef",
                          .project = "/p",
                          .server = AUD_EXEC_SERVER,
                          .tool = AUD_EXEC_TOOL,
                          .args_digest = "",
                          .outcome = "ok",
                          .exec = &xe};
    assert_int_equal(aud_call_append(home, &xc, &err), 0);
    assert_int_equal(aud_calls_summarize(home, "/p", &s, &err), 0);
    sb_reset(&line);
    aud_summary_line(&s, &line);
    assert_string_equal(line.buf, "2 calls · 2 tools · 1 denied by policy — digests, never values");
    assert_non_null(json_object_get(s.by_tool, "acme__delete_index"));
    aud_summary_release(&s);

    assert_int_equal(aud_calls_summarize(home, NULL, &s, &err), 0);
    assert_int_equal(s.calls, 4);
    assert_int_equal(s.tools, 3);
    assert_int_equal(s.denied, 1);
    assert_int_equal(s.errors, 1);
    aud_summary_release(&s);

    assert_int_equal(aud_calls_summarize(home, "/q", &s, &err), 0);
    sb_reset(&line);
    aud_summary_line(&s, &line);
    assert_string_equal(line.buf, "2 calls · 1 tool · 0 denied by policy — digests, never values");
    aud_summary_release(&s);

    /* rows in the rotated file count too; garbage lines are skipped and counted */
    char *old = NULL;
    assert_true(asprintf(&old, "%s/audit/calls.jsonl.1", home) > 0);
    FILE *f = fopen(old, "w");
    fputs("{\"ts\":1,\"pid\":1,\"project\":\"/p\",\"server\":\"acme\",\"tool\":\"search_docs\","
          "\"args_digest\":\"\",\"outcome\":\"ok\",\"ms\":0}\nnot json\n",
          f);
    fclose(f);
    assert_int_equal(aud_calls_summarize(home, "/p", &s, &err), 0);
    assert_int_equal(s.calls, 3);
    assert_int_equal(s.tools, 2);
    assert_int_equal(s.unreadable, 1);
    sb_reset(&line);
    aud_summary_line(&s, &line);
    assert_string_equal(line.buf, "3 calls · 2 tools · 1 denied by policy — digests, never values");
    aud_summary_release(&s);
    sb_release(&line);
    free(old);
    free(home);
    tu_rmtree(dir);
}

/* The appender writes aud_call_encode's bytes; they must be exactly what
 * dumping aud_call_record prints, escapes and cuts included. */
static void test_encode_matches_record(void **state)
{
    (void)state;
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[198] = '\xc3'; /* a 2-byte character straddling the 200-byte cut */
    big[199] = '\xa9';
    const struct aud_execution exec_killed = {
        .calls = 3,
        .output_bytes = 1 << 20,
        .result_bytes = 0,
        .code_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .limit = "memory"};
    const struct aud_execution exec_ok = {.calls = 0, .code_sha256 = big, .limit = ""};
    const struct aud_call cases[] = {
        {.ts = 1,
         .pid = 7,
         .server = "s",
         .tool = "t",
         .args_digest = "0123456789abcdef",
         .outcome = "ok",
         .detail = "hidden on ok rows",
         .ms = 3},
        {.ts = 2,
         .run = "run-1",
         .pid = 8,
         .project = "/p/\"q\"\\r",
         .server = "a\tb\nc",
         .tool = "ctl\x01\x1f\x7f\b\f\r",
         .args_digest = "",
         .outcome = "denied",
         .detail = big,
         .rule = "del*\"",
         .layer = "machine",
         .ms = -1},
        {.ts = 3,
         .pid = 9,
         .server = "ok\xff\xfe-\xc3\xa9-\xe2\x80\xa8",
         .tool = "\xf0\x9f\x98\x80",
         .args_digest = "x",
         .outcome = "error",
         .detail = "timeout",
         .ms = 1234567890123LL},
        {.ts = 5,
         .pid = 2,
         .server = "exactly-4",
         .tool = "0123456789abcdefg",
         .args_digest = "0123456789ab",
         .outcome = "denied",
         .detail = "d",
         .layer = "exactly-32-bytes-long-0123456789",
         .ms = -9223372036854775807LL - 1},
        {.ts = 6,
         .execution = "x-0123456789abcdef",
         .pid = 3,
         .project = "/p",
         .server = AUD_EXEC_SERVER,
         .tool = AUD_EXEC_TOOL,
         .args_digest = "0123456789ab",
         .outcome = "error",
         .detail = "resource-limit",
         .ms = 1500,
         .exec = &exec_killed},
        {.ts = 7,
         .execution = "x-\"q\"",
         .pid = 3,
         .server = AUD_EXEC_SERVER,
         .tool = AUD_EXEC_TOOL,
         .args_digest = "",
         .outcome = "ok",
         .ms = 0,
         .exec = &exec_ok},
        {.ts = 8,
         .pid = 4,
         .server = "res",
         .tool = "resource",
         .args_digest = "0123456789ab",
         .result_digest = "ba9876543210ffff",
         .outcome = "ok",
         .ms = 2},
        {.ts = 4,
         .pid = 1,
         .server = NULL,
         .tool = NULL,
         .args_digest = NULL,
         .outcome = NULL,
         .ms = 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = aud_call_record(&cases[i]);
        char *want = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
        strbuf got = SB_INIT;
        aud_call_encode(&cases[i], &got);
        assert_non_null(want);
        assert_string_equal(got.buf, want);
        free(want);
        sb_release(&got);
        json_decref(r);
    }
}

/* An answered resource/prompt row carries result_digest right after
 * args_digest, cut as args_digest is; other rows do not carry it. */
static void test_result_digest(void **state)
{
    (void)state;
    struct aud_call c = {.ts = 1,
                         .pid = 2,
                         .server = "res",
                         .tool = "prompt:review",
                         .args_digest = "0123456789ab",
                         .result_digest = "ba9876543210ffff",
                         .outcome = "ok"};
    strbuf got = SB_INIT;
    aud_call_encode(&c, &got);
    assert_non_null(
        strstr(got.buf, "\"args_digest\":\"0123456789ab\",\"result_digest\":\"ba9876543210\","));
    sb_reset(&got);
    c.result_digest = NULL;
    aud_call_encode(&c, &got);
    assert_null(strstr(got.buf, "result_digest"));
    sb_release(&got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_order),      cmocka_unit_test(test_encode_matches_record),
        cmocka_unit_test(test_result_digest),    cmocka_unit_test(test_detail_cut_on_utf8_boundary),
        cmocka_unit_test(test_rows_are_chained), cmocka_unit_test(test_summary_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
