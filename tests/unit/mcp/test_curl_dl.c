/*
 * libcurl loaded on demand (src/mcp/curl_dl.c): without it an HTTP upstream
 * fails its start with an error naming the package while a stdio upstream
 * in the same loop keeps working; once it can be loaded, the same client
 * starts without a restart. The tests run in this order in one process:
 * the failures first, because a loaded libcurl stays loaded.
 */
#include "testutil.h"

#include <dlfcn.h>

#include "base/proc.h"
#include "mcp/curl_dl.h"
#include "mcp/mcp.h"

struct done {
    int n;
    enum mcp_status st;
    json_t *result;
    char msg[512];
};

static void on_done(void *ctx, const struct mcp_reply *r)
{
    struct done *d = ctx;
    d->n++;
    d->st = r->status;
    if (d->result)
        json_decref(d->result);
    d->result = r->result ? json_deep_copy(r->result) : NULL;
    snprintf(d->msg, sizeof d->msg, "%s", r->message);
}

static void done_clear(struct done *d)
{
    if (d->result)
        json_decref(d->result);
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

static char *fixture(const char *name)
{
    const char *src = getenv("AS_SRC");
    char *p = NULL;
    assert_true(asprintf(&p, "%s/tests/fixtures/mcp/%s", src ? src : ".", name) > 0);
    return p;
}

/* Starts http_server.py; fills url with its loopback endpoint. */
static void start_http_server(struct proc *srv, char *url, size_t cap)
{
    char *script = fixture("http_server.py");
    const char *argv[] = {"python3", script, NULL};
    proc_init(srv, argv);
    srv->out = PROC_PIPE;
    srv->in = PROC_NULL;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(proc_start(srv, &err), 0);
    free(script);
    char line[64] = {0};
    size_t got = 0;
    while (got < sizeof line - 1) {
        ssize_t k = read(srv->from_child, line + got, 1);
        assert_true(k == 1);
        if (line[got] == '\n')
            break;
        got++;
    }
    int port = 0;
    assert_int_equal(sscanf(line, "PORT %d", &port), 1);
    snprintf(url, cap, "http://127.0.0.1:%d/mcp", port);
}

static void assert_is_loaded(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD);
    void *g = dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_NOLOAD);
    assert_true(h || g);
    if (h)
        dlclose(h);
    if (g)
        dlclose(g);
}

static void test_absent_libcurl_fails_only_http(void **state)
{
    (void)state;
    /* linked statically against nothing curl: not in memory before a load */
    assert_null(dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD));
    const char *absent[] = {"libagentstack-test-absent-curl.so.4", NULL};
    mcp__curl_set_names(absent);

    struct as_err err = AS_ERR_INIT;
    assert_null(mcp_curl_load(&err));
    assert_non_null(strstr(err.msg, "libcurl is not installed: apt-get install libcurl4"));
    assert_non_null(strstr(err.msg, "libagentstack-test-absent-curl.so.4"));

    struct mcp_loop *loop = mcp_loop_new(&err);
    assert_non_null(loop);
    struct mcp_http_opts ho = {"http://127.0.0.1:9/mcp", NULL, 0, NULL, NULL, NULL, NULL, NULL};
    struct mcp_client *hc = mcp_client_http(loop, &ho, NULL);
    char *script = fixture("fake_server.py");
    const char *argv[] = {"python3", script, NULL};
    struct mcp_stdio_opts so = {.argv = argv};
    struct mcp_client *sc = mcp_client_stdio(loop, &so, NULL);

    struct done hd = {0}, sd = {0};
    assert_int_equal(mcp_client_start(hc, on_done, &hd, &err), 0);
    assert_int_equal(mcp_client_start(sc, on_done, &sd, &err), 0);
    run_until(loop, &hd.n);
    run_until(loop, &sd.n);
    assert_int_equal(hd.st, MCP_E_HTTP);
    assert_non_null(strstr(hd.msg, "libcurl is not installed: apt-get install libcurl4"));
    assert_int_equal(mcp_client_state(hc), MCP_ST_DEAD);
    assert_int_equal(sd.st, MCP_OK);
    done_clear(&sd);

    /* the stdio upstream answers calls while the HTTP one stays failed */
    json_error_t je;
    json_t *args = json_loads("{\"message\":\"still here\"}", 0, &je);
    mcp_client_call_tool(sc, "echo", args, 20000, on_done, &sd);
    json_decref(args);
    run_until(loop, &sd.n);
    assert_int_equal(sd.st, MCP_OK);
    assert_string_equal(text_of(sd.result), "Echo: still here");
    done_clear(&sd);

    /* a second start fails the same way: nothing half-initialised */
    done_clear(&hd);
    assert_int_equal(mcp_client_start(hc, on_done, &hd, &err), 0);
    run_until(loop, &hd.n);
    assert_int_equal(hd.st, MCP_E_HTTP);
    assert_non_null(strstr(hd.msg, "apt-get install libcurl4"));
    done_clear(&hd);

    mcp_client_shutdown(sc, 3000, on_done, &sd);
    run_until(loop, &sd.n);
    done_clear(&sd);
    mcp_client_free(sc);
    mcp_client_free(hc);
    mcp_loop_free(loop);
    free(script);
    assert_null(dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD));
}

static void test_library_without_curl_symbols(void **state)
{
    (void)state;
    /* a library that loads but is not libcurl: refused, and unloaded again */
    const char *wrong[] = {"libjansson.so.4", NULL};
    mcp__curl_set_names(wrong);
    struct as_err err = AS_ERR_INIT;
    assert_null(mcp_curl_load(&err));
    assert_non_null(strstr(err.msg, "lacks curl_global_init"));
    assert_non_null(strstr(err.msg, "apt-get install libcurl4"));
}

static void test_installed_later_starts_without_restart(void **state)
{
    (void)state;
    const char *absent[] = {"libagentstack-test-absent-curl.so.4", NULL};
    mcp__curl_set_names(absent);
    struct proc srv;
    char url[128];
    start_http_server(&srv, url, sizeof url);
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    struct mcp_http_opts ho = {url, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    struct mcp_client *c = mcp_client_http(loop, &ho, NULL);
    struct done d = {0};
    assert_int_equal(mcp_client_start(c, on_done, &d, &err), 0);
    run_until(loop, &d.n);
    assert_int_equal(d.st, MCP_E_HTTP);
    done_clear(&d);

    mcp__curl_set_names(NULL); /* "installed": the default names load */
    assert_int_equal(mcp_client_start(c, on_done, &d, &err), 0);
    run_until(loop, &d.n);
    assert_int_equal(d.st, MCP_OK);
    done_clear(&d);
    assert_is_loaded();
    json_error_t je;
    json_t *args = json_loads("{\"a\":40,\"b\":2}", 0, &je);
    mcp_client_call_tool(c, "get-sum", args, 20000, on_done, &d);
    json_decref(args);
    run_until(loop, &d.n);
    assert_int_equal(d.st, MCP_OK);
    assert_string_equal(text_of(d.result), "42");
    done_clear(&d);

    /* loaded once: a second load is the same table, names no longer matter */
    const struct mcp_curl *a = mcp_curl_load(&err);
    mcp__curl_set_names(absent);
    assert_ptr_equal(mcp_curl_load(&err), a);
    mcp__curl_set_names(NULL);

    mcp_client_shutdown(c, 3000, on_done, &d);
    run_until(loop, &d.n);
    done_clear(&d);
    mcp_client_free(c);
    mcp_loop_free(loop);
    proc_terminate(&srv, 2000);
    proc_close_pipes(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_libcurl_fails_only_http),
        cmocka_unit_test(test_library_without_curl_symbols),
        cmocka_unit_test(test_installed_later_starts_without_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
