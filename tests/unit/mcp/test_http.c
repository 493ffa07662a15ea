/* The Streamable HTTP upstream client against tests/fixtures/mcp/http_server.py. */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "base/proc.h"
#include "mcp/mcp.h"

struct done {
    int n;
    enum mcp_status st;
    json_t *result;
    json_t *error;
    long http;
    int order;
    char msg[512];
};

static int g_rank;

static void on_done(void *ctx, const struct mcp_reply *r)
{
    struct done *d = ctx;
    d->n++;
    d->st = r->status;
    d->http = r->http_status;
    d->order = ++g_rank;
    snprintf(d->msg, sizeof d->msg, "%s", r->message ? r->message : "");
    if (d->result)
        json_decref(d->result);
    d->result = r->result ? json_deep_copy(r->result) : NULL;
    if (d->error)
        json_decref(d->error);
    d->error = r->error ? json_deep_copy(r->error) : NULL;
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

struct env {
    struct proc srv;
    char url[128];
    struct mcp_loop *loop;
    struct mcp_client *c;
};

static void start_server(struct env *e, const char **extra)
{
    const char *src = getenv("AS_SRC");
    char script[4096];
    snprintf(script, sizeof script, "%s/tests/fixtures/mcp/http_server.py", src ? src : ".");
    const char *argv[16] = {"python3", script};
    size_t n = 2;
    for (size_t i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    proc_init(&e->srv, argv);
    e->srv.out = PROC_PIPE;
    e->srv.in = PROC_NULL;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(proc_start(&e->srv, &err), 0);
    char line[64] = {0};
    size_t got = 0;
    while (got < sizeof line - 1) {
        ssize_t k = read(e->srv.from_child, line + got, 1);
        assert_true(k == 1);
        if (line[got] == '\n')
            break;
        got++;
    }
    int port = 0;
    assert_int_equal(sscanf(line, "PORT %d", &port), 1);
    snprintf(e->url, sizeof e->url, "http://127.0.0.1:%d/mcp", port);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof *e);
    struct as_err err = AS_ERR_INIT;
    e->loop = mcp_loop_new(&err);
    e->srv.pid = 0;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    if (e->c)
        mcp_client_free(e->c);
    if (e->srv.pid > 0) {
        proc_terminate(&e->srv, 2000);
        proc_close_pipes(&e->srv);
    }
    mcp_loop_free(e->loop);
    free(e);
    return 0;
}

static struct mcp_client *make(struct env *e, const char *const *headers, struct mcp_client_opts *o)
{
    struct mcp_http_opts ho = {e->url, headers, 0, NULL, NULL, NULL, NULL, NULL};
    e->c = mcp_client_http(e->loop, &ho, o);
    return e->c;
}

static enum mcp_status start(struct env *e, struct done *d)
{
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(mcp_client_start(e->c, on_done, d, &err), 0);
    run_until(e->loop, &d->n);
    return d->st;
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

static void shutdown_wait(struct env *e)
{
    struct done d = {0};
    mcp_client_shutdown(e->c, 3000, on_done, &d);
    run_until(e->loop, &d.n);
    done_clear(&d);
}

static void test_session_calls_and_list(void **state)
{
    struct env *e = *state;
    start_server(e, NULL);
    make(e, NULL, NULL);
    struct done d = {0};
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    assert_string_equal(mcp_client_protocol_version(e->c), "2025-06-18");
    assert_non_null(mcp_client_session_id(e->c));
    char *sid = strdup(mcp_client_session_id(e->c));
    call_wait(e, "echo", "{\"message\":\"over http\"}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: over http");
    done_clear(&d);
    mcp_client_list_tools(e->c, 20000, 0, 0, on_done, &d);
    run_until(e->loop, &d.n);
    assert_int_equal(d.st, MCP_OK);
    assert_int_equal(json_array_size(json_object_get(d.result, "tools")), 5);
    done_clear(&d);
    /* after initialize every request names the negotiated version */
    call_wait(e, "seen-versions", NULL, &d);
    assert_non_null(strstr(text_of(d.result), "\"2025-06-18\""));
    assert_null(strstr(text_of(d.result), "null"));
    done_clear(&d);
    shutdown_wait(e); /* DELETEs the session */
    mcp_client_free(e->c);
    make(e, NULL, NULL);
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    call_wait(e, "session-deleted", NULL, &d);
    assert_non_null(strstr(text_of(d.result), sid));
    done_clear(&d);
    free(sid);
}

static void test_configured_headers(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--require", "X-Test-Token:s3cret", NULL};
    start_server(e, extra);
    make(e, NULL, NULL);
    struct done d = {0};
    assert_int_equal(start(e, &d), MCP_E_HTTP);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_DEAD);
    done_clear(&d);
    mcp_client_free(e->c);
    const char *hdrs[] = {"X-Test-Token: s3cret", NULL};
    make(e, hdrs, NULL);
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    call_wait(e, "get-sum", "{\"a\":20,\"b\":22}", &d);
    assert_string_equal(text_of(d.result), "42");
    done_clear(&d);
    shutdown_wait(e);
}

static void test_sse_stream_and_server_ping(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--sse", NULL};
    start_server(e, extra);
    make(e, NULL, NULL);
    struct done d = {0};
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    call_wait(e, "echo", "{\"message\":\"streamed\"}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: streamed");
    done_clear(&d);
    /* the ping inside the stream was answered by a POST of our reply */
    json_t *answers = NULL;
    for (int i = 0; i < 500 && json_array_size(answers) < 1; i++) {
        call_wait(e, "pings-answered", NULL, &d);
        if (answers)
            json_decref(answers);
        json_error_t je;
        answers = json_loads(text_of(d.result), 0, &je);
        done_clear(&d);
    }
    assert_true(json_array_size(answers) >= 1);
    json_t *a = json_array_get(answers, 0);
    assert_true(json_is_object(json_object_get(a, "result")));
    assert_int_equal(strncmp(json_string_value(json_object_get(a, "id")), "srv-", 4), 0);
    json_decref(answers);
    shutdown_wait(e);
}

static void test_concurrent_and_timeout(void **state)
{
    struct env *e = *state;
    start_server(e, NULL);
    make(e, NULL, NULL);
    struct done d = {0}, w = {0}, a = {0}, t = {0}, r = {0};
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    g_rank = 0;
    call(e, "wait", "{\"key\":\"h1\"}", 20000, &w);
    call(e, "echo", "{\"message\":\"x\"}", 20000, &a);
    run_until(e->loop, &a.n);
    assert_int_equal(w.n, 0);
    call(e, "wait", "{\"key\":\"never\"}", 100, &t);
    run_until(e->loop, &t.n);
    assert_int_equal(t.st, MCP_E_TIMEOUT);
    call_wait(e, "release", "{\"key\":\"h1\"}", &r);
    run_until(e->loop, &w.n);
    assert_int_equal(w.st, MCP_OK);
    assert_true(w.order > a.order);
    done_clear(&r);
    call_wait(e, "release", "{\"key\":\"never\"}", &r);
    done_clear(&r);
    done_clear(&w);
    done_clear(&a);
    done_clear(&t);
    shutdown_wait(e);
}

static void test_discover_modern_and_legacy(void **state)
{
    struct env *e = *state;
    const char *extra[] = {"--modern", NULL};
    start_server(e, extra);
    struct mcp_client_opts o = {.handshake = MCP_HS_DISCOVER};
    make(e, NULL, &o);
    struct done d = {0};
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    assert_true(mcp_client_is_modern(e->c));
    call_wait(e, "seen-versions", NULL, &d);
    assert_non_null(strstr(text_of(d.result), "\"2026-07-28\""));
    done_clear(&d);
    shutdown_wait(e);
    mcp_client_free(e->c);
    e->c = NULL;
    proc_terminate(&e->srv, 2000);
    proc_close_pipes(&e->srv);
    /* a dated server refuses discover with a JSON-RPC error body: initialize follows */
    start_server(e, NULL);
    make(e, NULL, &o);
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    assert_false(mcp_client_is_modern(e->c));
    assert_string_equal(mcp_client_protocol_version(e->c), "2025-06-18");
    shutdown_wait(e);
}

static void test_too_large_and_refused(void **state)
{
    struct env *e = *state;
    start_server(e, NULL);
    struct mcp_client_opts o = {.max_frame = 2000};
    make(e, NULL, &o);
    struct done d = {0};
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    call_wait(e, "big", "{\"bytes\":50000}", &d);
    assert_int_equal(d.st, MCP_E_TOO_LARGE);
    done_clear(&d);
    call_wait(e, "big", "{\"bytes\":100}", &d);
    assert_int_equal(d.st, MCP_OK);
    done_clear(&d);
    shutdown_wait(e);
    mcp_client_free(e->c);
    /* a port nobody listens on */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    getsockname(s, (struct sockaddr *)&sa, &sl);
    snprintf(e->url, sizeof e->url, "http://127.0.0.1:%d/mcp", ntohs(sa.sin_port));
    make(e, NULL, NULL);
    assert_int_equal(start(e, &d), MCP_E_HTTP);
    done_clear(&d);
    close(s);
}

/* The requests the fake records in seen-versions (every call and
 * notification that passed its session check) that this test made. The
 * handshake's notifications/initialized is its own POST, on its own
 * connection, so it can still be in flight when the test's next call has
 * been answered; forgetting the sessions then would let that late
 * notification find its session gone and fail the client (http 0) before
 * the call the test is about. */
static int g_counted;

/* Returns once the fake has seen every counted request, the handshake's
 * notification included. */
static void settle(struct env *e)
{
    for (int tries = 0;; tries++) {
        assert_true(tries < 1000);
        struct done d = {0};
        call_wait(e, "seen-versions", NULL, &d);
        assert_int_equal(d.st, MCP_OK);
        g_counted++;
        json_t *seen = json_loads(text_of(d.result), 0, NULL);
        int n = (int)json_array_size(seen);
        json_decref(seen);
        done_clear(&d);
        if (n >= g_counted)
            return;
    }
}

/* A server that forgot the session (restarted, or expired it) must not leave
 * the client READY with no session: the failing call reports the HTTP error
 * once, the client goes DEAD, and the next start opens a new session. */
static void forgotten_session(struct env *e, int status)
{
    struct done d = {0};
    if (mcp_client_state(e->c) != MCP_ST_READY) {
        assert_int_equal(start(e, &d), MCP_OK);
        g_counted++; /* notifications/initialized */
    }
    done_clear(&d);
    settle(e);
    char args[64];
    snprintf(args, sizeof args, "{\"status\":%d}", status);
    call_wait(e, "forget-sessions", args, &d);
    assert_string_equal(text_of(d.result), "forgotten");
    g_counted++;
    done_clear(&d);
    call_wait(e, "echo", "{\"message\":\"lost\"}", &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.st, MCP_E_HTTP); /* not the 400 body's JSON-RPC error */
    assert_int_equal(d.http, status);
    done_clear(&d);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_DEAD);
    assert_null(mcp_client_session_id(e->c));
    assert_int_equal(start(e, &d), MCP_OK);
    g_counted++; /* notifications/initialized */
    done_clear(&d);
    assert_non_null(mcp_client_session_id(e->c));
    call_wait(e, "echo", "{\"message\":\"again\"}", &d);
    g_counted++;
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: again");
    done_clear(&d);
}

static void test_forgotten_session_starts_anew(void **state)
{
    struct env *e = *state;
    start_server(e, NULL);
    make(e, NULL, NULL);
    g_counted = 0;             /* a fresh fake */
    forgotten_session(e, 404); /* the MCP spec's answer */
    forgotten_session(e, 400); /* server-everything's answer */
    struct done d = {0};
    call_wait(e, "inits", NULL, &d);
    assert_string_equal(text_of(d.result), "3");
    done_clear(&d);
    shutdown_wait(e);
}

static void test_restarted_server_reached_again(void **state)
{
    struct env *e = *state;
    start_server(e, NULL);
    make(e, NULL, NULL);
    struct done d = {0};
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    int port = 0;
    assert_int_equal(sscanf(e->url, "http://127.0.0.1:%d/", &port), 1);
    proc_terminate(&e->srv, 2000);
    proc_close_pipes(&e->srv);
    call_wait(e, "echo", "{\"message\":\"down\"}", &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.st, MCP_E_HTTP);
    done_clear(&d);
    assert_int_equal(mcp_client_state(e->c), MCP_ST_DEAD);
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    const char *extra[] = {"--port", ps, NULL};
    start_server(e, extra);
    assert_int_equal(start(e, &d), MCP_OK);
    done_clear(&d);
    call_wait(e, "echo", "{\"message\":\"back\"}", &d);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "Echo: back");
    done_clear(&d);
    shutdown_wait(e);
}

/* A URL whose host two readers could take differently (the userinfo ends
 * at the first '@' or the last; a backslash; a %-encoded '@') is refused by
 * the transport itself, before libcurl dials: a listener at the host the
 * bytes reach for accepts nothing. */
static void test_ambiguous_url_never_dialled(void **state)
{
    struct env *e = *state;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(s, 8), 0);
    getsockname(s, (struct sockaddr *)&sa, &sl);
    const char *forms[] = {
        "http://tok@allowed.example@127.0.0.1:", "http://allowed.example\\@127.0.0.1:",
        "http://allowed.example%40@127.0.0.1:"};
    const char *why[] = {"two '@'", "backslash", "'%'"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(e->url, sizeof e->url, "%s%d/mcp", forms[i], ntohs(sa.sin_port));
        make(e, NULL, NULL);
        struct done d = {0};
        assert_int_equal(start(e, &d), MCP_E_HTTP);
        if (!strstr(d.msg, why[i]) || strstr(d.msg, "tok@"))
            fail_msg("%s: %s", e->url, d.msg);
        done_clear(&d);
        mcp_client_free(e->c);
        e->c = NULL;
        assert_int_equal(accept(s, NULL, NULL), -1); /* nobody dialled */
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    }
    close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_session_calls_and_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_configured_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sse_stream_and_server_ping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_and_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_modern_and_legacy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_large_and_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forgotten_session_starts_anew, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restarted_server_reached_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ambiguous_url_never_dialled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
