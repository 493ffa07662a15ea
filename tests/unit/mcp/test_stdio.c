/* The stdio upstream client against tests/fixtures/mcp/fake_server.py. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "mcp/mcp.h"

struct done {
    int n;
    enum mcp_status st;
    json_t *result;
    json_t *error;
    char msg[256];
    int order; /* completion rank, from a shared counter */
};

static int g_rank;

static void on_done(void *ctx, const struct mcp_reply *r)
{
    struct done *d = ctx;
    d->n++;
    d->st = r->status;
    d->order = ++g_rank;
    if (d->result)
        json_decref(d->result);
    d->result = r->result ? json_deep_copy(r->result) : NULL;
    if (d->error)
        json_decref(d->error);
    d->error = r->error ? json_deep_copy(r->error) : NULL;
    snprintf(d->msg, sizeof d->msg, "%s", r->message);
}

static void done_clear(struct done *d)
{
    if (d->result)
        json_decref(d->result);
    if (d->error)
        json_decref(d->error);
    memset(d, 0, sizeof *d);
}

static void run_until(struct mcp_loop *loop, const int *flag)
{
    struct as_err err = AS_ERR_INIT;
    while (!*flag)
        assert_int_equal(mcp_loop_run_once(loop, 1000, &err), 0);
}

static const char *text_of(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static char *fixture(void)
{
    const char *src = getenv("AS_SRC");
    char *p = NULL;
    assert_true(asprintf(&p, "%s/tests/fixtures/mcp/fake_server.py", src ? src : ".") > 0);
    return p;
}

struct env {
    char *tmp;
    char *script;
    struct mcp_loop *loop;
    struct mcp_client *c;
};

static struct mcp_client *make(struct env *e, const char **extra, struct mcp_client_opts *o,
                               const char *log)
{
    const char *argv[32] = {"python3", e->script};
    size_t n = 2;
    for (size_t i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    struct mcp_stdio_opts so = {.argv = argv, .cwd = e->tmp, .stderr_log = log};
    if (log)
        so.stderr_log_max = 64 * 1024;
    e->c = mcp_client_stdio(e->loop, &so, o);
    return e->c;
}

static void start_ok(struct env *e)
{
    struct done d = {0};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(mcp_client_start(e->c, on_done, &d, &err), 0);
    run_until(e->loop, &d.n);
    if (d.st != MCP_OK)
        fail_msg("start: %s (%s)", mcp_status_name(d.st), d.msg);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_READY);
    done_clear(&d);
}

static void shutdown_wait(struct env *e, int grace)
{
    struct done d = {0};
    mcp_client_shutdown(e->c, grace, on_done, &d);
    run_until(e->loop, &d.n);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_CLOSED);
    done_clear(&d);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof *e);
    e->tmp = tu_tmpdir();
    e->script = fixture();
    struct as_err err = AS_ERR_INIT;
    e->loop = mcp_loop_new(&err);
    assert_non_null(e->loop);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    if (e->c)
        mcp_client_free(e->c);
    mcp_loop_free(e->loop);
    free(e->script);
    tu_rmtree(e->tmp);
    free(e);
    return 0;
}

static void call(struct env *e, const char *tool, const char *args_json, int timeout,
                 struct done *d)
{
    json_error_t je;
    json_t *args = args_json ? json_loads(args_json, 0, &je) : NULL;
    mcp_client_call_tool(e->c, tool, args, timeout, on_done, d);
    if (args)
        json_decref(args);
}

static void call_wait(struct env *e, const char *tool, const char *args_json, struct done *d)
{
    call(e, tool, args_json, 20000, d);
    run_until(e->loop, &d->n);
}

static void test_initialize_and_calls(void **state)
{
    struct env *e = *state;
    make(e, NULL, NULL, NULL);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_IDLE);
    start_ok(e);
    assert_string_equal(mcp_client_protocol_version(e->c), "2025-11-25");
    assert_false(mcp_client_is_modern(e->c));
    const json_t *sr = mcp_client_server_result(e->c);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(sr, "serverInfo"), "name")), "fake");
    struct done d = {0};
    call_wait(e, "echo", "{\"message\":\"hi\"}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: hi");
    done_clear(&d);
    call_wait(e, "get-sum", "{\"a\":2,\"b\":3}", &d);
    assert_string_equal(text_of(d.result), "5");
    done_clear(&d);
    /* an unknown method is a JSON-RPC error, not a transport failure */
    mcp_client_request(e->c, "prompts/list", NULL, 20000, on_done, &d);
    run_until(e->loop, &d.n);
    assert_int_equal(d.st, MCP_E_RPC);
    assert_int_equal(json_integer_value(json_object_get(d.error, "code")), MCP_METHOD_NOT_FOUND);
    done_clear(&d);
    shutdown_wait(e, 3000);
    assert_int_equal(mcp_client_exit_status(e->c), 0); /* left on stdin EOF */
    /* after shutdown, requests fail from the loop, not inside the call */
    call(e, "echo", NULL, 1000, &d);
    assert_int_equal(d.n, 0);
    run_until(e->loop, &d.n);
    assert_int_equal(d.st, MCP_E_CLOSED);
    done_clear(&d);
}

static void test_discover_legacy_falls_back(void **state)
{
    struct env *e = *state;
    char *rec = NULL;
    assert_true(asprintf(&rec, "%s/rec.jsonl", e->tmp) > 0);
    const char *extra[] = {"--handshake", "legacy", "--record", rec, NULL};
    struct mcp_client_opts o = {.handshake = MCP_HS_DISCOVER};
    make(e, extra, &o, NULL);
    start_ok(e);
    assert_string_equal(mcp_client_protocol_version(e->c), "2025-11-25");
    assert_false(mcp_client_is_modern(e->c));
    shutdown_wait(e, 3000);
    char *log = tu_read(rec, NULL);
    char *d = strstr(log, "\"server/discover\"");
    char *i = strstr(log, "\"initialize\"");
    char *n = strstr(log, "\"notifications/initialized\"");
    assert_non_null(d);
    assert_non_null(i);
    assert_non_null(n);
    assert_true(d < i && i < n); /* same child: discover, then the dated handshake */
    assert_non_null(strstr(log, "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\""));
    free(log);
    free(rec);
}

static void test_discover_modern(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--handshake", "modern", NULL};
    /* The fake answers discover; how soon depends on the machine's load, so
     * the silence fallback (tested on its own below) must not race it. */
    struct mcp_client_opts o = {.handshake = MCP_HS_DISCOVER, .discover_silence_ms = 600000};
    make(e, extra, &o, NULL);
    start_ok(e);
    assert_true(mcp_client_is_modern(e->c));
    assert_string_equal(mcp_client_protocol_version(e->c), "2026-07-28");
    /* the fake refuses any request without the modern _meta */
    struct done d = {0};
    call_wait(e, "echo", "{\"message\":\"m\"}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: m");
    done_clear(&d);
    shutdown_wait(e, 3000);
}

static void test_discover_silence_falls_back(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--handshake", "silent", NULL};
    struct mcp_client_opts o = {.handshake = MCP_HS_DISCOVER, .discover_silence_ms = 50};
    make(e, extra, &o, NULL);
    start_ok(e);
    assert_string_equal(mcp_client_protocol_version(e->c), "2025-11-25");
    shutdown_wait(e, 3000);
}

/* A modern server that starts after the silence has run out: initialize is
 * sent too, but discover was first in its input, so its answer comes first
 * and decides. Before, the silence alone decided and a slow start (python
 * under load: seconds) made a modern server look dated. */
static void test_discover_slow_start_stays_modern(void **state)
{
    struct env *e = *state;
    char *rec = NULL;
    assert_true(asprintf(&rec, "%s/rec.jsonl", e->tmp) > 0);
    const char *extra[] = {"--handshake", "modern", "--start-delay", "400", "--record", rec, NULL};
    struct mcp_client_opts o = {.handshake = MCP_HS_DISCOVER, .discover_silence_ms = 50};
    make(e, extra, &o, NULL);
    start_ok(e);
    assert_true(mcp_client_is_modern(e->c));
    assert_string_equal(mcp_client_protocol_version(e->c), "2026-07-28");
    struct done d = {0};
    call_wait(e, "echo", "{\"message\":\"late\"}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: late");
    done_clear(&d);
    shutdown_wait(e, 3000);
    char *log = tu_read(rec, NULL);
    char *disc = strstr(log, "\"server/discover\"");
    char *init = strstr(log, "\"initialize\"");
    assert_non_null(disc);
    assert_non_null(init); /* sent after the silence, its answer ignored */
    assert_true(disc < init);
    assert_null(strstr(log, "\"notifications/initialized\""));
    free(log);
    free(rec);
}

static void test_list_pagination(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--page-size", "2", "--extra-tools", "5", NULL};
    make(e, extra, NULL, NULL);
    start_ok(e);
    struct done d = {0};
    mcp_client_list_tools(e->c, 20000, 0, 0, on_done, &d);
    run_until(e->loop, &d.n);
    assert_int_equal(d.st, MCP_OK);
    json_t *tools = json_object_get(d.result, "tools");
    assert_int_equal(json_array_size(tools), 11);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
                        "echo");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 10), "name")),
                        "filler-4");
    assert_null(json_object_get(d.result, "truncated"));
    done_clear(&d);
    /* caps: tools and pages */
    mcp_client_list_tools(e->c, 20000, 3, 0, on_done, &d);
    run_until(e->loop, &d.n);
    assert_int_equal(json_array_size(json_object_get(d.result, "tools")), 3);
    assert_true(json_is_true(json_object_get(d.result, "truncated")));
    done_clear(&d);
    mcp_client_list_tools(e->c, 20000, 0, 2, on_done, &d);
    run_until(e->loop, &d.n);
    assert_int_equal(json_array_size(json_object_get(d.result, "tools")), 4);
    assert_true(json_is_true(json_object_get(d.result, "truncated")));
    done_clear(&d);
    shutdown_wait(e, 3000);
}

static void test_concurrent_out_of_order(void **state)
{
    struct env *e = *state;
    make(e, NULL, NULL, NULL);
    start_ok(e);
    g_rank = 0;
    struct done w = {0}, a = {0}, b = {0}, r = {0};
    call(e, "wait", "{\"key\":\"k1\"}", 20000, &w);
    call(e, "echo", "{\"message\":\"first\"}", 20000, &a);
    call(e, "get-sum", "{\"a\":1,\"b\":1}", 20000, &b);
    run_until(e->loop, &a.n);
    run_until(e->loop, &b.n);
    assert_int_equal(w.n, 0); /* still blocked upstream, others answered */
    assert_string_equal(text_of(a.result), "Echo: first");
    assert_string_equal(text_of(b.result), "2");
    call(e, "release", "{\"key\":\"k1\"}", 20000, &r);
    run_until(e->loop, &w.n);
    run_until(e->loop, &r.n);
    assert_int_equal(w.st, MCP_OK);
    assert_string_equal(text_of(w.result), "released k1");
    assert_true(w.order > a.order && w.order > b.order);
    done_clear(&w);
    done_clear(&a);
    done_clear(&b);
    done_clear(&r);
    shutdown_wait(e, 3000);
}

static void test_timeout_keeps_child_and_cancels(void **state)
{
    struct env *e = *state;
    make(e, NULL, NULL, NULL);
    start_ok(e);
    long pid = mcp_client_pid(e->c);
    struct done t = {0}, d = {0}, c = {0};
    call(e, "wait", "{\"key\":\"never\"}", 100, &t);
    run_until(e->loop, &t.n);
    assert_int_equal(t.st, MCP_E_TIMEOUT);
    /* the child is kept and still answers */
    call_wait(e, "echo", "{\"message\":\"alive\"}", &d);
    assert_string_equal(text_of(d.result), "Echo: alive");
    assert_int_equal(mcp_client_pid(e->c), pid);
    done_clear(&d);
    /* an explicit cancel completes at once with CANCELLED */
    uint64_t h = mcp_client_call_tool(e->c, "wait", NULL, 20000, on_done, &c);
    mcp_client_cancel(e->c, h, "user");
    assert_int_equal(c.n, 0);
    run_until(e->loop, &c.n);
    assert_int_equal(c.st, MCP_E_CANCELLED);
    /* the server heard notifications/cancelled for both */
    call_wait(e, "cancelled", NULL, &d);
    json_error_t je;
    json_t *ids = json_loads(text_of(d.result), 0, &je);
    assert_int_equal(json_array_size(ids), 2);
    assert_int_equal(json_integer_value(json_array_get(ids, 1)), (json_int_t)h);
    json_decref(ids);
    done_clear(&d);
    done_clear(&t);
    done_clear(&c);
    /* release the two blocked server threads so the child can exit cleanly */
    call_wait(e, "release", "{\"key\":\"never\"}", &d);
    done_clear(&d);
    call_wait(e, "release", "{\"key\":\"k\"}", &d);
    done_clear(&d);
    shutdown_wait(e, 3000);
}

static void test_crash_fails_every_pending_call(void **state)
{
    struct env *e = *state;
    make(e, NULL, NULL, NULL);
    start_ok(e);
    long pid1 = mcp_client_pid(e->c);
    struct done a = {0}, b = {0}, c = {0};
    call(e, "wait", "{\"key\":\"a\"}", 20000, &a);
    call(e, "wait", "{\"key\":\"b\"}", 20000, &b);
    call(e, "crash", NULL, 20000, &c);
    run_until(e->loop, &a.n);
    run_until(e->loop, &b.n);
    run_until(e->loop, &c.n);
    assert_int_equal(a.st, MCP_E_TRANSPORT);
    assert_int_equal(b.st, MCP_E_TRANSPORT);
    assert_int_equal(c.st, MCP_E_TRANSPORT);
    assert_int_equal(a.n + b.n + c.n, 3); /* exactly once each */
    assert_int_equal(mcp_client_state(e->c), MCP_ST_DEAD);
    done_clear(&a);
    done_clear(&b);
    done_clear(&c);
    /* the next use respawns */
    start_ok(e);
    assert_true(mcp_client_pid(e->c) != pid1);
    call_wait(e, "echo", "{\"message\":\"again\"}", &a);
    assert_string_equal(text_of(a.result), "Echo: again");
    done_clear(&a);
    shutdown_wait(e, 3000);
}

static void test_oversize_and_junk(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--banner", NULL};
    struct mcp_client_opts o = {.max_frame = 64 * 1024};
    make(e, extra, &o, NULL);
    start_ok(e); /* the banner line before the handshake is skipped */
    struct done d = {0};
    call_wait(e, "big", "{\"bytes\":200000}", &d);
    assert_int_equal(d.st, MCP_E_TOO_LARGE); /* failed at once, not by timeout */
    done_clear(&d);
    call_wait(e, "big", "{\"bytes\":1000}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_int_equal(strlen(text_of(d.result)), 1000);
    done_clear(&d);
    call_wait(e, "junk", NULL, &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "after junk");
    done_clear(&d);
    shutdown_wait(e, 3000);
}

static void test_stderr_log_rotates(void **state)
{
    struct env *e = *state;
    char *log = NULL, *log1 = NULL, *dir = NULL;
    assert_true(asprintf(&dir, "%s/logs/abc123", e->tmp) > 0);
    assert_true(asprintf(&log, "%s/srv.log", dir) > 0);
    assert_true(asprintf(&log1, "%s.1", log) > 0);
    make(e, NULL, NULL, log);
    start_ok(e);
    struct done d = {0};
    call_wait(e, "spam", "{\"bytes\":200000}", &d);
    assert_int_equal(d.st, MCP_OK);
    done_clear(&d);
    shutdown_wait(e, 3000);
    struct stat st, st1, sd;
    assert_int_equal(stat(log, &st), 0);
    assert_int_equal(stat(log1, &st1), 0);
    assert_int_equal(stat(dir, &sd), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(sd.st_mode & 0777, 0700);
    assert_true(st.st_size <= 64 * 1024);
    assert_true(st1.st_size <= 64 * 1024);
    assert_true(st1.st_size == 64 * 1024);
    size_t hl;
    const char *head = mcp_client_stderr_head(e->c, &hl);
    assert_int_equal(hl, 4096);
    assert_int_equal(head[0], 'e');
    free(log);
    free(log1);
    free(dir);
}

static int pidfd_of(long pid)
{
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}

static long read_pid(const char *path)
{
    char *s = tu_read(path, NULL);
    assert_non_null(s);
    long v = atol(s);
    free(s);
    return v;
}

static void test_group_kill_no_orphan(void **state)
{
    struct env *e = *state;
    char *gpf = NULL;
    assert_true(asprintf(&gpf, "%s/grandchild.pid", e->tmp) > 0);
    const char *extra[] = {"--grandchild", gpf, "--ignore-sigterm", NULL};
    make(e, extra, NULL, NULL);
    start_ok(e);
    long gpid = read_pid(gpf);
    int gfd = pidfd_of(gpid);
    assert_true(gfd >= 0);
    struct pollfd p = {gfd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 0); /* alive before shutdown */
    shutdown_wait(e, 200);
    /* the leader ignored SIGTERM: SIGKILL ended it */
    assert_int_equal(mcp_client_exit_status(e->c), 128 + SIGKILL);
    /* and the grandchild died with the group (bounded wait, not a timing test) */
    assert_int_equal(poll(&p, 1, 20000), 1);
    close(gfd);
    free(gpf);
}

static void test_free_kills_live_group(void **state)
{
    struct env *e = *state;
    char *gpf = NULL;
    assert_true(asprintf(&gpf, "%s/grandchild.pid", e->tmp) > 0);
    const char *extra[] = {"--grandchild", gpf, NULL};
    make(e, extra, NULL, NULL);
    start_ok(e);
    int lfd = pidfd_of(mcp_client_pid(e->c));
    int gfd = pidfd_of(read_pid(gpf));
    assert_true(lfd >= 0 && gfd >= 0);
    struct done d = {0};
    call(e, "wait", NULL, 20000, &d);
    mcp_client_free(e->c); /* live child, pending call */
    e->c = NULL;
    assert_int_equal(d.n, 1);
    assert_int_equal(d.st, MCP_E_CLOSED);
    struct pollfd p[2] = {{lfd, POLLIN, 0}, {gfd, POLLIN, 0}};
    assert_int_equal(poll(&p[0], 1, 0), 1); /* reaped synchronously */
    assert_int_equal(poll(&p[1], 1, 20000), 1);
    close(lfd);
    close(gfd);
    free(gpf);
}

static void test_spawn_failure(void **state)
{
    struct env *e = *state;
    const char *argv[] = {"/nonexistent/agentstack-no-such-server", NULL};
    struct mcp_stdio_opts so = {.argv = argv};
    e->c = mcp_client_stdio(e->loop, &so, NULL);
    struct done s = {0}, d = {0};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(mcp_client_start(e->c, on_done, &s, &err), 0);
    call(e, "echo", NULL, 20000, &d); /* queued behind the start */
    assert_int_equal(s.n, 0);
    run_until(e->loop, &s.n);
    run_until(e->loop, &d.n);
    assert_int_equal(s.st, MCP_E_SPAWN);
    assert_int_equal(d.st, MCP_E_SPAWN);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_DEAD);
    done_clear(&s);
    done_clear(&d);
}

static void test_server_requests_answered(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--ask-client", NULL};
    make(e, extra, NULL, NULL);
    start_ok(e);
    json_t *answers = NULL;
    /* the answers race our first call: ask until all three arrived */
    for (int i = 0; i < 500 && json_array_size(answers) < 3; i++) {
        struct done d = {0};
        call_wait(e, "client-answers", NULL, &d);
        if (answers)
            json_decref(answers);
        json_error_t je;
        answers = json_loads(text_of(d.result), 0, &je);
        done_clear(&d);
    }
    assert_int_equal(json_array_size(answers), 3);
    json_t *ping = json_array_get(answers, 0), *roots = json_array_get(answers, 1),
           *other = json_array_get(answers, 2);
    assert_int_equal(json_object_size(json_object_get(ping, "result")), 0);
    assert_true(json_is_object(json_object_get(ping, "result")));
    assert_int_equal(json_array_size(json_object_get(json_object_get(roots, "result"), "roots")),
                     0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(other, "error"), "code")),
                     MCP_METHOD_NOT_FOUND);
    json_decref(answers);
    shutdown_wait(e, 3000);
}

static struct mcp_client *g_self;
static void free_in_callback(void *ctx, const struct mcp_reply *r)
{
    int *n = ctx;
    (*n)++;
    (void)r;
    mcp_client_free(g_self); /* deferred until the client's frame returns */
}

static void test_free_from_callback(void **state)
{
    struct env *e = *state;
    make(e, NULL, NULL, NULL);
    start_ok(e);
    int n = 0;
    struct done other = {0};
    g_self = e->c;
    mcp_client_call_tool(e->c, "echo", NULL, 20000, free_in_callback, &n);
    call(e, "wait", NULL, 20000, &other);
    run_until(e->loop, &n);
    e->c = NULL;
    assert_int_equal(other.n, 1);
    assert_int_equal(other.st, MCP_E_CLOSED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initialize_and_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_legacy_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_modern, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_silence_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_slow_start_stays_modern, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pagination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_out_of_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_keeps_child_and_cancels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_fails_every_pending_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversize_and_junk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stderr_log_rotates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_kill_no_orphan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_kills_live_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_requests_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_from_callback, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
