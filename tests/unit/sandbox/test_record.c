/* The flight recorder and its readers: chained events, the documented report
 * lines, --json, runs ordering, id validation and hostile logs. */
#include <jansson.h>
#include <sys/stat.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "sandbox/record.h"
#include "sandbox/report_egress.h"

static void deny(struct sbx_rec *r, const char *host, int port)
{
    struct sbx_verdict v = {0};
    snprintf(v.layer, sizeof v.layer, "machine");
    snprintf(v.rule, sizeof v.rule,
             "denied by [policy.egress] rule \"!%s\" (machine policy — "
             "~/.agentstack/agentstack.toml)",
             host);
    snprintf(v.brief, sizeof v.brief, "denied by rule \"!%s\" (machine policy)", host);
    struct sbx_egress_event ev = {"shtest", host, port, "connect", &v};
    assert_int_equal(sbx_rec_egress(r, &ev), 0);
}

static void test_record_and_report(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    const char *home = getenv("AGENTSTACK_HOME");
    struct sbx_rec r;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sbx_rec_create(home, "r-0859dcee73", "lockdown", &r, &err), 0);
    struct stat sb;
    assert_int_equal(stat(r.dir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    /* the same id twice is refused */
    struct sbx_rec r2;
    assert_int_equal(sbx_rec_create(home, "r-0859dcee73", "lockdown", &r2, &err), -1);
    json_t *f = json_pack("{s:s,s:s,s:s}", "image", "host", "workspace", "/home/u/proj", "harness",
                          "shtest");
    assert_int_equal(sbx_rec_append(&r, "sandbox_started", f, &err), 0);
    deny(&r, "blocked.invalid", 443);
    struct sbx_verdict ok = {.allowed = 1};
    snprintf(ok.layer, sizeof ok.layer, "default");
    struct sbx_egress_event ev = {"shtest", "api.example.com", 8443, "connect", &ok};
    assert_int_equal(sbx_rec_egress(&r, &ev), 0);
    f = json_pack("{s:i,s:i}", "code", 0, "duration_ms", 4200);
    assert_int_equal(sbx_rec_append(&r, "sandbox_exited", f, &err), 0);

    /* every line is chained: the first with zeros, each next with the
     * previous line's digest */
    size_t n;
    char *text = tu_read(r.events, &n);
    assert_non_null(strstr(text, "{\"event\":\"sandbox_started\",\"ts\":"));
    assert_non_null(strstr(text, "\"prev\":\"0000000000000000000000000000000000000000000000"));
    free(text);
    assert_int_equal(stat(r.events, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    json_t *events, *calls;
    char *posture;
    assert_int_equal(sbx_report_load(home, "r-0859dcee73", &events, &posture, &calls, &err), 0);
    assert_string_equal(posture, "lockdown");
    assert_int_equal(json_array_size(events), 4);
    strbuf out = SB_INIT;
    sbx_report_render("r-0859dcee73", posture, events, calls, &out);
    assert_non_null(strstr(out.buf, "Run r-0859dcee73\n"
                                    "  Posture   LOCKDOWN / ENFORCED · NO DIRECT ROUTE\n"
                                    "  Sandbox   host   workspace /home/u/proj\n"
                                    "  Egress    2 requests to 2 hosts · 1 allowed · 1 denied\n"
                                    "    ✗ shtest → blocked.invalid       1 denied  denied by rule "
                                    "\"!blocked.invalid\" (machine policy)\n"
                                    "    ✓ shtest → api.example.com:8443  1 allowed\n"
                                    "  Timeline  |"));
    /* The events carry the clock's seconds, so the marks depend on whether
     * they straddle a second (test_timeline pins them with fixed times). */
    assert_non_null(strstr(out.buf, "peak 2 requests\n"
                                    "  Wall time 4.2s sandbox\n"
                                    "  Exit      0\n"));
    json_t *js = sbx_report_json("r-0859dcee73", posture, events, calls);
    assert_string_equal(json_string_value(json_object_get(js, "posture")), "lockdown");
    assert_int_equal(json_array_size(json_object_get(js, "events")), 4);
    json_decref(js);
    json_decref(events);
    json_decref(calls);
    free(posture);

    /* unknown and path-like ids are "no record" */
    assert_int_equal(sbx_report_load(home, "r-ffffffffff", &events, &posture, &calls, &err), 1);
    assert_int_equal(sbx_report_load(home, "../..", &events, &posture, &calls, &err), 1);
    assert_false(sbx_run_id_valid(".."));
    assert_false(sbx_run_id_valid("a/b"));
    assert_false(sbx_run_id_valid(""));
    assert_true(sbx_run_id_valid("r-0859dcee73"));
    sbx_rec_close(&r);
    sb_release(&out);
    tu_rmtree(dir);
}

/* report groups egress by host: 40 blocked requests to one host are one
 * line with their count, in the order each host was first seen; another
 * port of the same host is on its line too. */
static void test_egress_grouped(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    const char *home = getenv("AGENTSTACK_HOME");
    struct as_err err = AS_ERR_INIT;
    struct sbx_rec r;
    assert_int_equal(sbx_rec_create(home, "r-00000000aa", "lockdown", &r, &err), 0);
    struct sbx_verdict ok = {.allowed = 1};
    snprintf(ok.layer, sizeof ok.layer, "default");
    struct sbx_egress_event ev = {"shtest", "api.example.com", 443, "connect", &ok};
    for (int i = 0; i < 40; i++) {
        deny(&r, "blocked.invalid", 443);
        if (i % 10 == 0)
            assert_int_equal(sbx_rec_egress(&r, &ev), 0);
    }
    deny(&r, "blocked.invalid", 8443);
    json_t *events, *calls;
    char *posture;
    assert_int_equal(sbx_report_load(home, "r-00000000aa", &events, &posture, &calls, &err), 0);
    strbuf out = SB_INIT;
    sbx_report_render("r-00000000aa", posture, events, calls, &out);
    assert_non_null(strstr(out.buf, "  Egress    45 requests to 2 hosts · 4 allowed · 41 denied\n"
                                    "    ✗ shtest → blocked.invalid:443,8443  41 denied  denied by "
                                    "rule \"!blocked.invalid\" (machine policy)\n"
                                    "    ✓ shtest → api.example.com           4 allowed\n"
                                    "  Timeline  |"));
    /* one line for the host, not one per request */
    size_t n = 0;
    for (const char *p = out.buf; (p = strstr(p, "→ blocked.invalid")); p++)
        n++;
    assert_int_equal(n, 1);
    sb_release(&out);
    json_decref(events);
    json_decref(calls);
    free(posture);
    sbx_rec_close(&r);
    tu_rmtree(dir);
}

static json_t *egress_at(long long ts, const char *server, const char *host, int port, int allowed,
                         const char *why)
{
    json_t *e = json_pack("{s:s,s:I,s:s,s:s,s:i,s:b}", "event", "egress", "ts", (json_int_t)ts,
                          "server", server, "host", host, "port", port, "allowed", allowed);
    if (why)
        json_object_set_new(e, "short", json_string(why));
    return e;
}

/* The timeline: requests per bucket from the run's start, one line; hosts
 * asked by two servers name both; distinct rules are counted. */
static void test_timeline(void **st)
{
    (void)st;
    const long long t0 = 1767225600;
    json_t *ev = json_array();
    json_array_append_new(ev,
                          json_pack("{s:s,s:I}", "event", "sandbox_started", "ts", (json_int_t)t0));
    /* minute 0: 1 allowed; minute 1: 8 denied; minute 3: 4 denied (other rule) */
    json_array_append_new(ev, egress_at(t0 + 5, "claude", "api.example.com", 443, 1, NULL));
    for (int i = 0; i < 8; i++)
        json_array_append_new(ev, egress_at(t0 + 70 + i, "claude", "evil.test", 443, 0, "rule A"));
    for (int i = 0; i < 4; i++)
        json_array_append_new(ev, egress_at(t0 + 200, "codex", "evil.test", 443, 0, "rule B"));
    json_array_append_new(ev, json_pack("{s:s,s:I,s:i,s:i}", "event", "sandbox_exited", "ts",
                                        (json_int_t)(t0 + 600), "code", 0, "duration_ms", 600000));
    json_t *s = sbx_egress_summary(ev);
    assert_non_null(s);
    strbuf out = SB_INIT;
    sbx_egress_render(s, &out);
    /* 200 s of traffic: 10 s marks (the smallest with at most 40 of them) */
    assert_string_equal(out.buf, "  Egress    13 requests to 2 hosts · 1 allowed · 12 denied\n"
                                 "    ✓ claude → api.example.com   1 allowed\n"
                                 "    ✗ claude, codex → evil.test  12 denied  rule A "
                                 "(+1 other rule)\n"
                                 "  Timeline  |▁      █            ▄|  10s per mark over 3m30s · "
                                 "peak 8 requests\n");
    json_t *t = json_object_get(s, "timeline");
    assert_int_equal(json_integer_value(json_object_get(t, "start")), t0);
    assert_int_equal(json_integer_value(json_object_get(t, "bucket_s")), 10);
    assert_int_equal(json_array_size(json_object_get(t, "requests")), 21);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(t, "denied"), 20)), 4);
    json_t *h = json_array_get(json_object_get(s, "hosts"), 1);
    assert_int_equal(json_array_size(json_object_get(h, "rules")), 2);
    json_decref(s);
    sb_release(&out);

    /* a long run: marks of whole hours, never more than SBX_TIMELINE_MARKS */
    json_array_append_new(ev, egress_at(t0 + 3 * 86400, "claude", "late.test", 443, 1, NULL));
    s = sbx_egress_summary(ev);
    t = json_object_get(s, "timeline");
    assert_int_equal(json_integer_value(json_object_get(t, "bucket_s")), 7200);
    assert_true(json_array_size(json_object_get(t, "requests")) <= SBX_TIMELINE_MARKS);
    json_decref(s);
    /* hostile times (negative, huge) neither crash nor overflow the buckets */
    json_array_append_new(ev, egress_at(-5, "claude", "x.test", 443, 0, NULL));
    json_array_append_new(ev, egress_at(9000000000000000000LL, "claude", "x.test", 443, 0, NULL));
    s = sbx_egress_summary(ev);
    t = json_object_get(s, "timeline");
    assert_true(json_array_size(json_object_get(t, "requests")) <= SBX_TIMELINE_MARKS + 1);
    sbx_egress_render(s, &out);
    sb_release(&out);
    json_decref(s);
    /* no egress: no summary */
    json_t *none = json_array();
    assert_null(sbx_egress_summary(none));
    json_decref(none);
    json_decref(ev);
}

static void test_hostile_log(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    const char *home = getenv("AGENTSTACK_HOME");
    char *p = tu_write(dir, "home/.agentstack/runs/r-aaaaaaaaaa/events.jsonl",
                       "not json\n{\"event\":\"egress\",\"server\":\"x\\u001b[2J\",\"host\":"
                       "\"evil\\u202e.example\",\"port\":443,\"allowed\":false,"
                       "\"rule\":\"r\\u0007\"}\n[1,2]\n\n{\"event\":\"sandbox_exited\","
                       "\"signal\":2,\"duration_ms\":65000}\n");
    free(p);
    p = tu_write(dir, "home/.agentstack/runs/r-aaaaaaaaaa/posture", "bogus\n");
    free(p);
    json_t *events, *calls;
    char *posture;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sbx_report_load(home, "r-aaaaaaaaaa", &events, &posture, &calls, &err), 0);
    assert_null(posture); /* not a known slug */
    assert_int_equal(json_array_size(events), 2);
    strbuf out = SB_INIT;
    sbx_report_render("r-aaaaaaaaaa", posture, events, calls, &out);
    assert_null(strchr(out.buf, '\033'));
    assert_null(strchr(out.buf, '\a'));
    assert_null(strstr(out.buf, "\xe2\x80\xae"));
    assert_non_null(strstr(out.buf, "Posture   unknown"));
    assert_non_null(strstr(out.buf, "Exit      killed by SIGINT (130)"));
    assert_non_null(strstr(out.buf, "Wall time 1m05s sandbox"));
    json_decref(events);
    json_decref(calls);
    sb_release(&out);

    /* runs: newest first */
    struct sbx_rec r;
    assert_int_equal(sbx_rec_create(home, "r-bbbbbbbbbb", "sandbox", &r, &err), 0);
    json_t *f = json_pack("{s:s}", "harness", "shtest");
    assert_int_equal(sbx_rec_append(&r, "sandbox_started", f, &err), 0);
    sbx_rec_close(&r);
    json_t *list = sbx_runs_list(home, &err);
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")),
                        "r-bbbbbbbbbb");
    json_decref(list);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_and_report),
        cmocka_unit_test(test_egress_grouped),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_hostile_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
