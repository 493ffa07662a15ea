/* The request head parser of `agentstack mcp --listen` (docs/gateway.md,
 * "Serving over HTTP"): well-formed heads parse; everything two parsers
 * could read two ways (request smuggling: two Content-Lengths, any
 * Transfer-Encoding, bare CR/LF, obs-fold, space before the colon), every
 * oversized head or body, and every malformed line is refused with its
 * status, whatever the split of the bytes into reads. Also the Accept,
 * Host, Origin and bearer checks and the listen address and token file
 * rules of http_auth.c. */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "gateway/http_int.h"
#include "gateway/http_parse.h"

static int parse(const char *s, struct http_req *r, int *st)
{
    const char *why = NULL;
    *st = 0;
    int rc = http_parse_head(s, strlen(s), r, st, &why);
    if (rc == HTTP_PARSE_ERROR)
        assert_non_null(why);
    return rc;
}

static void test_good(void **state)
{
    (void)state;
    struct http_req r;
    int st;
    const char *h = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 12\r\n"
                    "Authorization: Bearer abc\r\nmcp-session-id:  x1 \r\n"
                    "Accept: application/json, text/event-stream\r\n\r\n{\"a\":1}";
    assert_int_equal(parse(h, &r, &st), HTTP_PARSE_DONE);
    assert_true(http_span_is(r.method, "POST"));
    assert_true(http_span_is(r.target, "/mcp"));
    assert_int_equal(r.content_length, 12);
    assert_true(http_span_is(r.session_id, "x1"));
    assert_true(http_span_is(r.authorization, "Bearer abc"));
    assert_true(r.keep_alive);
    assert_int_equal(r.head_len, strlen(h) - strlen("{\"a\":1}"));
    assert_true(http_accepts(r.accept, "text/event-stream"));
    assert_true(http_accepts(r.accept, "application/json"));
    assert_false(http_accepts(r.accept, "text/html"));
    /* every prefix is "more", never an error or a wrong head */
    for (size_t n = 0; n < r.head_len; n++) {
        const char *why = NULL;
        assert_int_equal(http_parse_head(h, n, &r, &st, &why), HTTP_PARSE_MORE);
    }
    assert_int_equal(parse("GET /mcp HTTP/1.0\r\n\r\n", &r, &st), HTTP_PARSE_DONE);
    assert_false(r.keep_alive);
    assert_int_equal(r.content_length, -1);
    assert_int_equal(parse("GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", &r, &st),
                     HTTP_PARSE_DONE);
    assert_false(r.keep_alive);
}

static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *head;
        int status;
    } bad[] = {
        /* smuggling */
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
         501},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length : 5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0x5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\nContent-Length: 5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\rContent-Length: 5\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\n\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nX-A: a\x01b\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nX A: 1\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\n: 1\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nnocolon\r\n\r\n", 400},
        /* fields the server reads, twice */
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nHost: evil\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\nauthorization: Bearer "
         "b\r\n\r\n",
         400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nMcp-Session-Id: a\r\nMcp-Session-Id: b\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nOrigin: http://localhost\r\nOrigin: "
         "http://e.com\r\n\r\n",
         400},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
         400},
        /* request line */
        {"POST  /mcp HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"POST http://x/mcp HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"post /mcp HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"POST /mcp HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        {"POST /mcp HTTP/1.2\r\nHost: h\r\n\r\n", 505},
        {"POST /mcp\r\nHost: h\r\n\r\n", 400},
        {"POST /m\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"POST /mcp HTTP/1.1\r\n\r\n", 400}, /* no Host */
        /* sizes */
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 4194305\r\n\r\n", 413},
        {"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct http_req r;
        int st;
        if (parse(bad[i].head, &r, &st) != HTTP_PARSE_ERROR || st != bad[i].status)
            fail_msg("case %zu: %s", i, bad[i].head);
    }
}

static void test_limits(void **state)
{
    (void)state;
    struct http_req r;
    int st;
    strbuf b = SB_INIT;
    sb_adds(&b, "GET /mcp HTTP/1.1\r\nHost: h\r\n");
    for (int i = 0; i < HTTP_FIELDS_MAX; i++)
        sb_addf(&b, "X-%d: v\r\n", i);
    sb_adds(&b, "\r\n");
    assert_int_equal(parse(b.buf, &r, &st), HTTP_PARSE_ERROR);
    assert_int_equal(st, 431);
    sb_reset(&b);
    sb_adds(&b, "GET /mcp HTTP/1.1\r\nHost: h\r\nX-Big: ");
    while (b.len < HTTP_HEAD_MAX)
        sb_addc(&b, 'a');
    assert_int_equal(parse(b.buf, &r, &st), HTTP_PARSE_ERROR); /* no end in sight */
    assert_int_equal(st, 431);
    sb_reset(&b);
    sb_adds(&b, "GET /");
    for (int i = 0; i < 3000; i++)
        sb_addc(&b, 'a');
    sb_adds(&b, " HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_int_equal(parse(b.buf, &r, &st), HTTP_PARSE_ERROR);
    assert_int_equal(st, 400);
    sb_release(&b);
}

static void test_checks(void **state)
{
    (void)state;
#define SP(s) ((struct http_span){s, sizeof s - 1})
    assert_true(http_host_loopback(SP("127.0.0.1:8765")));
    assert_true(http_host_loopback(SP("localhost")));
    assert_true(http_host_loopback(SP("[::1]:80")));
    assert_true(http_host_loopback(SP("127.9.9.9")));
    assert_false(http_host_loopback(SP("evil.example:8765")));
    assert_false(http_host_loopback(SP("127.0.0.1.evil.example")));
    assert_false(http_host_loopback(SP("10.0.0.1")));
    assert_false(http_host_loopback(SP("localhost:80x")));
    assert_false(http_host_loopback(SP("[::2]")));
    assert_true(http_origin_loopback(SP("http://localhost:3000")));
    assert_true(http_origin_loopback(SP("https://127.0.0.1")));
    assert_true(http_origin_loopback(SP("http://[::1]:9")));
    assert_false(http_origin_loopback(SP("null")));
    assert_false(http_origin_loopback(SP("http://evil.example")));
    assert_false(http_origin_loopback(SP("http://localhost.evil.example")));
    assert_false(http_origin_loopback(SP("http://localhost@evil.example")));
    assert_false(http_origin_loopback(SP("http://localhost/x")));
    assert_false(http_origin_loopback(SP("file://localhost")));
    assert_true(http_bearer_ok(SP("Bearer 0123456789abcdef"), "0123456789abcdef"));
    assert_true(http_bearer_ok(SP("bearer 0123456789abcdef"), "0123456789abcdef"));
    assert_false(http_bearer_ok(SP("Bearer 0123456789abcdeF"), "0123456789abcdef"));
    assert_false(http_bearer_ok(SP("Bearer 0123456789abcde"), "0123456789abcdef"));
    assert_false(http_bearer_ok(SP("Basic 0123456789abcdef"), "0123456789abcdef"));
    assert_false(http_bearer_ok((struct http_span){NULL, 0}, "0123456789abcdef"));
    assert_false(http_accepts(SP("text/event-stream;q=0, text/html"), "text/event-stream"));
    assert_true(http_accepts(SP("*/*"), "application/json"));
    assert_true(http_accepts(SP("text/*"), "text/event-stream"));
    assert_false(http_accepts(SP("text/*"), "application/json"));
#undef SP
}

static void test_listen_addr(void **state)
{
    (void)state;
    struct sockaddr_storage sa;
    socklen_t n;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(http_listen_addr("127.0.0.1:0", false, &sa, &n, &err), 0);
    assert_int_equal(http_listen_addr("localhost:8765", false, &sa, &n, &err), 0);
    assert_int_equal(http_listen_addr("[::1]:8765", false, &sa, &n, &err), 0);
    assert_int_equal(http_listen_addr("0.0.0.0:8765", false, &sa, &n, &err), -1);
    assert_non_null(strstr(err.msg, "--listen-any"));
    assert_int_equal(http_listen_addr("0.0.0.0:8765", true, &sa, &n, &err), 0);
    assert_int_equal(http_listen_addr("[::]:1", false, &sa, &n, &err), -1);
    assert_int_equal(http_listen_addr("example.com:80", true, &sa, &n, &err), -1);
    assert_int_equal(http_listen_addr("127.0.0.1:65536", false, &sa, &n, &err), -1);
    assert_int_equal(http_listen_addr("127.0.0.1:-1", false, &sa, &n, &err), -1);
    assert_int_equal(http_listen_addr("127.0.0.1", false, &sa, &n, &err), -1);
}

static void test_token_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/as-http-tok-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], link[256];
    snprintf(path, sizeof path, "%s/token", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    char tok[HTTP_TOKEN_MAX + 1], again[HTTP_TOKEN_MAX + 1];
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(http_token_load(path, tok, &err), 0); /* created */
    assert_int_equal(strlen(tok), 64);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(http_token_load(path, again, &err), 0); /* read back */
    assert_string_equal(tok, again);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(http_token_load(path, again, &err), -1);
    assert_non_null(strstr(err.msg, "no one else"));
    assert_int_equal(chmod(path, 0620), 0);
    assert_int_equal(http_token_load(path, again, &err), -1);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(http_token_load(link, again, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    FILE *f = fopen(path, "w");
    fputs("short\n", f);
    fclose(f);
    assert_int_equal(http_token_load(path, again, &err), -1);
    unlink(link);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_limits),      cmocka_unit_test(test_checks),
        cmocka_unit_test(test_listen_addr), cmocka_unit_test(test_token_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
