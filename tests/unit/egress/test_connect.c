/* Unit tests for the proxy's parsers: request head, auth, hosts, address
 * classes, ClientHello SNI, HTTP rewrite. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "hello.h"
#include "egress/connect.h"

static int parse(const char *head, struct sbx_request *r)
{
    const char *why = NULL;
    return sbx_parse_head(head, strlen(head), r, &why);
}

static void test_head_end(void **st)
{
    (void)st;
    assert_int_equal(sbx_head_end("CONNECT a:1 HTTP/1.1\r\n\r\nXYZ", 27), 24);
    assert_int_equal(sbx_head_end("CONNECT a:1 HTTP/1.1\r\n", 22), 0);
    assert_int_equal(sbx_head_end("\n\n\n\n", 4), 0);
}

static void test_connect_forms(void **st)
{
    (void)st;
    struct sbx_request r;
    assert_int_equal(parse("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", &r), 0);
    assert_int_equal(r.kind, SBX_REQ_CONNECT);
    assert_string_equal(r.host, "api.example.com");
    assert_int_equal(r.port, 443);
    assert_int_equal(parse("connect  [::1]:8443   HTTP/1.0\r\n\r\n", &r), 0);
    assert_string_equal(r.host, "::1");
    assert_true(r.host_bracketed);
    assert_int_equal(r.port, 8443);
    /* last colon splits a bare v6 (normalization refuses it later) */
    assert_int_equal(parse("CONNECT ::1:443 HTTP/1.1\r\n\r\n", &r), 0);
    assert_string_equal(r.host, "::1");
    assert_false(r.host_bracketed);
    const char *bad[] = {
        "CONNECT a.com HTTP/1.1\r\n\r\n",       /* no port */
        "CONNECT a.com:0 HTTP/1.1\r\n\r\n",     /* port 0 */
        "CONNECT a.com:65536 HTTP/1.1\r\n\r\n", /* port range */
        "CONNECT a.com:44x HTTP/1.1\r\n\r\n",   /* non-numeric */
        "CONNECT :443 HTTP/1.1\r\n\r\n",        /* empty host */
        "CONNECT [::1 HTTP/1.1\r\n\r\n",        /* unclosed */
        "CONNECT [::1]x:1 HTTP/1.1\r\n\r\n",    /* junk after ] */
        "CONNECT a.com:443 FTP/1.1\r\n\r\n",    /* not HTTP/ */
        "CONNECT a.com:443\r\n\r\n",            /* two parts */
        "CONNECT a.com:443 HTTP/1.1 x\r\n\r\n", /* four parts */
        "CONNECT a.com:443 HTTP/1.1\r\nBad header\r\n\r\n",
        "CONNECT a.com:443 HTTP/1.1\r\nX: a\nb\r\n\r\n", /* bare LF */
        "CONNECT a.com:443 HTTP/1.1\r\nX: a\rb\r\n\r\n", /* bare CR */
        "CONNECT a.com:443 HTTP/1.1\r\n folded\r\n\r\n",
        "GET /path HTTP/1.1\r\n\r\n",           /* origin-form */
        "GET https://a.com/ HTTP/1.1\r\n\r\n",  /* https absolute-form */
        "GET http://u@a.com/ HTTP/1.1\r\n\r\n", /* userinfo */
        "GET http://a.com/#f HTTP/1.1\r\n\r\n", /* fragment */
        "GET http://a.com/ HTTP/2.0\r\n\r\n",
        "\r\n\r\n",
        "CONNECT a.com:443 HTTP/1.1\r\n", /* incomplete */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (parse(bad[i], &r) == 0)
            fail_msg("accepted: %s", bad[i]);
    }
    /* NUL inside the head */
    const char nul[] = "CONNECT a.com:443 HTTP/1.1\r\nX: a\0b\r\n\r\n";
    const char *why;
    assert_int_equal(sbx_parse_head(nul, sizeof nul - 1, &r, &why), -1);
}

static void test_http_forms(void **st)
{
    (void)st;
    struct sbx_request r;
    const char *h = "GET http://Example.COM:8080/a/b?q=1 HTTP/1.1\r\n"
                    "Host: evil.example\r\nProxy-Authorization: Basic x\r\n"
                    "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n";
    assert_int_equal(parse(h, &r), 0);
    assert_int_equal(r.kind, SBX_REQ_HTTP);
    assert_string_equal(r.host, "Example.COM");
    assert_int_equal(r.port, 8080);
    char norm[SBX_HOST_MAX];
    assert_int_equal(sbx_host_normalize(r.host, 0, norm), 0);
    strbuf out = SB_INIT;
    sbx_http_rewrite(h, &r, norm, &out);
    assert_string_equal(out.buf, "GET /a/b?q=1 HTTP/1.1\r\nAccept: */*\r\n"
                                 "Host: example.com:8080\r\nConnection: close\r\n\r\n");
    assert_int_equal(parse("POST http://a.com HTTP/1.0\r\n\r\n", &r), 0);
    assert_int_equal(r.port, 80);
    sbx_http_rewrite("POST http://a.com HTTP/1.0\r\n\r\n", &r, "a.com", &out);
    assert_string_equal(out.buf, "POST / HTTP/1.0\r\nHost: a.com\r\nConnection: close\r\n\r\n");
    assert_int_equal(parse("GET http://a.com?x HTTP/1.1\r\n\r\n", &r), 0);
    sbx_http_rewrite("GET http://a.com?x HTTP/1.1\r\n\r\n", &r, "a.com", &out);
    assert_string_equal(out.buf, "GET /?x HTTP/1.1\r\nHost: a.com\r\nConnection: close\r\n\r\n");
    sb_release(&out);
}

/* The attacks on a plain-HTTP connection: two framings, two Hosts. */
static void test_http_framing(void **st)
{
    (void)st;
    struct sbx_request r;
    const char *why = NULL;
    static const struct {
        const char *head, *why;
    } bad[] = {
        {"POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
         "both Content-Length and Transfer-Encoding"},
        {"POST http://a.com/ HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 0\r\n\r\n",
         "both Content-Length and Transfer-Encoding"},
        {"GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: evil.example\r\n\r\n",
         "duplicate Host header"},
        {"GET http://a.com/ HTTP/1.1\r\nhost: a.com\r\nHOST: a.com\r\n\r\n",
         "duplicate Host header"},
        {"POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
         "duplicate Content-Length header"},
        {"POST http://a.com/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", "bad Content-Length"},
        {"POST http://a.com/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", "bad Content-Length"},
        {"POST http://a.com/ HTTP/1.1\r\nContent-Length: \r\n\r\n", "bad Content-Length"},
        {"POST http://a.com/ HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n",
         "bad Content-Length"},
        {"POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
         "unsupported Transfer-Encoding"},
        {"POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
         "chunked\r\n\r\n",
         "duplicate Transfer-Encoding header"},
        {"POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n",
         "malformed header name"},
        {"POST http://a.com/ HTTP/1.1\r\nX: y\r\n Transfer-Encoding: chunked\r\n\r\n",
         "malformed header name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        if (sbx_parse_head(bad[i].head, strlen(bad[i].head), &r, &why) == 0)
            fail_msg("accepted: %s", bad[i].head);
        if (!why || !strstr(why, bad[i].why))
            fail_msg("%s: '%s', want '%s'", bad[i].head, why ? why : "(null)", bad[i].why);
    }
    assert_int_equal(parse("GET http://a.com/ HTTP/1.1\r\nHost: x\r\n\r\n", &r), 0);
    assert_int_equal(r.body, SBX_BODY_NONE);
    assert_int_equal(parse("POST http://a.com/ HTTP/1.1\r\nContent-Length:  42 \r\n\r\n", &r), 0);
    assert_int_equal(r.body, SBX_BODY_LENGTH);
    assert_true(r.content_length == 42);
    assert_int_equal(parse("POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n", &r),
                     0);
    assert_int_equal(r.body, SBX_BODY_CHUNKED);
}

/* Feeds text split at every byte boundary; returns what the message took. */
static int feed_split(enum sbx_body_kind kind, uint64_t cl, const char *text, size_t *took)
{
    size_t n = strlen(text);
    struct sbx_request rq = {.body = kind, .content_length = cl};
    int final = -2;
    for (size_t cut = 0; cut <= n; cut++) {
        struct sbx_body b;
        sbx_body_init(&b, &rq);
        size_t t1 = 0, t2 = 0;
        int r = sbx_body_feed(&b, text, cut, &t1);
        if (r == 0)
            r = sbx_body_feed(&b, text + cut, n - cut, &t2);
        else
            t2 = 0;
        size_t total = r == 1 && t1 < cut ? t1 : t1 + t2;
        if (final == -2) {
            final = r;
            *took = total;
        } else if (r != final || (r == 1 && total != *took)) {
            fail_msg("split at %zu of '%s': %d/%zu, unsplit %d/%zu", cut, text, r, total, final,
                     *took);
        }
    }
    return final;
}

static void test_body_feed(void **st)
{
    (void)st;
    size_t took;
    const char *second = "GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n";
    char buf[512];
    /* Content-Length: exactly that many bytes, then the message ends */
    snprintf(buf, sizeof buf, "hello%s", second);
    assert_int_equal(feed_split(SBX_BODY_LENGTH, 5, buf, &took), 1);
    assert_int_equal(took, 5);
    assert_int_equal(feed_split(SBX_BODY_LENGTH, 500, "abc", &took), 0);
    /* no framing header: no body at all, the pipelined request is not part of it */
    assert_int_equal(feed_split(SBX_BODY_NONE, 0, second, &took), 1);
    assert_int_equal(took, 0);
    /* chunked, with extensions and trailers, then a pipelined request */
    const char *ch = "5;a=b\r\nhello\r\nA \r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
    snprintf(buf, sizeof buf, "%s%s", ch, second);
    assert_int_equal(feed_split(SBX_BODY_CHUNKED, 0, buf, &took), 1);
    assert_int_equal(took, strlen(ch));
    assert_int_equal(feed_split(SBX_BODY_CHUNKED, 0, "0\r\n\r\n", &took), 1);
    assert_int_equal(took, 5);
    assert_int_equal(feed_split(SBX_BODY_CHUNKED, 0, "5\r\nhel", &took), 0);
    /* malformed framing is never passed on */
    static const char *const bad[] = {
        "5\nhello\r\n0\r\n\r\n",  /* bare LF after the size */
        "5\r\nhelloX\r\n",        /* data longer than the size */
        "\r\n",                   /* no size */
        "g\r\n",                  /* not hex */
        "-1\r\n",                 /* signed */
        "1000000000000000\r\n",   /* 16 hex digits */
        "5;\x01\r\n",             /* control byte in an extension */
        "0\r\nX-T: \x01\r\n\r\n", /* control byte in a trailer */
        "0\r\n\r\r",              /* bad final LF */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (feed_split(SBX_BODY_CHUNKED, 0, bad[i], &took) != -1)
            fail_msg("accepted chunked framing %zu", i);
    /* once ended, it stays ended and takes nothing */
    struct sbx_request rq = {.body = SBX_BODY_LENGTH, .content_length = 2};
    struct sbx_body b;
    sbx_body_init(&b, &rq);
    assert_int_equal(sbx_body_feed(&b, "abcd", 4, &took), 1);
    assert_int_equal(took, 2);
    assert_int_equal(sbx_body_feed(&b, "ef", 2, &took), 1);
    assert_int_equal(took, 0);
    /* an over-long extension line */
    char lng[6000];
    memset(lng, 'x', sizeof lng);
    memcpy(lng, "1;", 2);
    lng[sizeof lng - 1] = '\0';
    rq.body = SBX_BODY_CHUNKED;
    sbx_body_init(&b, &rq);
    assert_int_equal(sbx_body_feed(&b, lng, strlen(lng), &took), -1);
}

/* Known answers (Python's base64.b64encode): one per padding case, since
 * "agentstack:" is 11 bytes — '=' , none, '=='. */
static void test_auth_base64(void **st)
{
    (void)st;
    static const char *const cases[][2] = {
        {"", "Basic YWdlbnRzdGFjazo="},
        {"a", "Basic YWdlbnRzdGFjazph"},
        {"ab", "Basic YWdlbnRzdGFjazphYg=="},
        {"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
         "Basic YWdlbnRzdGFjazowMDExMjIzMzQ0NTU2Njc3ODg5OWFhYmJjY2RkZWVmZjAwMTEyMjMzNDQ1NTY2Nzc4"
         "ODk5YWFiYmNjZGRlZWZm"},
    };
    strbuf v = SB_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sb_adds(&v, "stale"); /* the value replaces whatever the buffer held */
        sbx_basic_auth_value(cases[i][0], &v);
        assert_string_equal(v.buf, cases[i][1]);
    }
    sb_release(&v);
}

static void test_auth(void **st)
{
    (void)st;
    const char *tok = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    strbuf exp = SB_INIT;
    sbx_basic_auth_value(tok, &exp);
    assert_true(strncmp(exp.buf, "Basic YWdlbnRzdGFjazow", 22) == 0);
    strbuf h = SB_INIT;
    sb_addf(&h, "CONNECT a:1 HTTP/1.1\r\nproxy-AUTHORIZATION:   %s \t\r\n\r\n", exp.buf);
    assert_true(sbx_head_auth_ok(h.buf, h.len, exp.buf));
    sb_reset(&h);
    sb_addf(&h, "CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: %sx\r\n\r\n", exp.buf);
    assert_false(sbx_head_auth_ok(h.buf, h.len, exp.buf));
    sb_reset(&h);
    sb_addf(&h, "CONNECT a:1 HTTP/1.1\r\nX-Proxy-Authorization: %s\r\n\r\n", exp.buf);
    assert_false(sbx_head_auth_ok(h.buf, h.len, exp.buf));
    const char *none = "CONNECT a:1 HTTP/1.1\r\n\r\n";
    assert_false(sbx_head_auth_ok(none, strlen(none), exp.buf));
    /* the request line itself never counts as a header */
    sb_reset(&h);
    sb_addf(&h, "Proxy-Authorization: %s\r\n\r\n", exp.buf);
    assert_false(sbx_head_auth_ok(h.buf, h.len, exp.buf));
    sb_release(&h);
    sb_release(&exp);
}

static void test_normalize(void **st)
{
    (void)st;
    char out[SBX_HOST_MAX];
    assert_int_equal(sbx_host_normalize("API.Example.COM.", 0, out), 0);
    assert_string_equal(out, "api.example.com");
    assert_int_equal(sbx_host_normalize("under_score.example", 0, out), 0);
    assert_int_equal(sbx_host_normalize("0:0::1", 1, out), 0);
    assert_string_equal(out, "::1");
    assert_int_equal(sbx_host_normalize("::FFFF:169.254.169.254", 1, out), 0);
    assert_string_equal(out, "::ffff:169.254.169.254");
    /* numeric spellings get one canonical form */
    assert_int_equal(sbx_host_normalize("2130706433", 0, out), 0);
    assert_string_equal(out, "127.0.0.1");
    assert_int_equal(sbx_host_normalize("0x7f000001", 0, out), 0);
    assert_string_equal(out, "127.0.0.1");
    assert_int_equal(sbx_host_normalize("0177.0.0.01", 0, out), 0);
    assert_string_equal(out, "127.0.0.1");
    assert_int_equal(sbx_host_normalize("127.1", 0, out), 0);
    assert_string_equal(out, "127.0.0.1");
    const char *bad[] = {"",
                         ".",
                         "a..b",
                         ".a",
                         "a.b..",
                         "ex%41mple.com",
                         "exämple.com",
                         "a b",
                         "a:b",
                         "::1",
                         "999.1.1.1",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (sbx_host_normalize(bad[i], 0, out) == 0)
            fail_msg("accepted host '%s'", bad[i]);
    assert_int_equal(sbx_host_normalize("fe80::1%eth0", 1, out), -1);
    assert_int_equal(sbx_host_normalize("not-v6", 1, out), -1);
}

static void test_numeric(void **st)
{
    (void)st;
    const char *num[] = {"127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.01", "127.1",
                         "::1",       "1.2.3.4",    "0x",         "10.0x1"};
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++)
        if (!sbx_host_is_numeric(num[i]))
            fail_msg("not numeric: %s", num[i]);
    const char *names[] = {"example.com", "1.2.3.4.5", "1.2.3.com", "0xg", "a1", "1-2"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (sbx_host_is_numeric(names[i]))
            fail_msg("numeric: %s", names[i]);
}

static void test_hello(void **st)
{
    (void)st;
    uint8_t b[20000];
    struct sbx_hello h;
    size_t n = th_hello(b, "API.example.com.", 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_SNI);
    assert_string_equal(h.sni, "api.example.com");
    assert_false(h.has_ech);
    /* every proper prefix needs more */
    for (size_t k = 1; k < n; k++)
        assert_int_equal(sbx_tls_client_hello(b, k, &h), SBX_TLS_NEED_MORE);
    /* later records are opaque */
    b[n] = 0x17;
    assert_int_equal(sbx_tls_client_hello(b, n + 1, &h), SBX_TLS_SNI);

    n = th_hello(b, NULL, 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_NO_SNI);
    uint8_t hs[18000];
    size_t hn = th_handshake(hs, NULL, 0, 0, 1);
    b[0] = 0x16, b[1] = 3, b[2] = 1, b[3] = (uint8_t)(hn >> 8), b[4] = (uint8_t)hn;
    memcpy(b + 5, hs, hn);
    assert_int_equal(sbx_tls_client_hello(b, hn + 5, &h), SBX_TLS_NO_SNI);

    n = th_hello(b, "a.example", 1, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_SNI);
    assert_true(h.has_ech);

    /* one stray byte inside the record */
    n = th_hello(b, "a.example", 0, 1);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_UNVERIFIABLE);
    /* fragmented across records */
    n = th_fragmented(b, "a.example");
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_UNVERIFIABLE);
    /* duplicate server_name */
    hn = th_handshake(hs, "a.example", 0, 1, 0);
    b[0] = 0x16, b[3] = (uint8_t)(hn >> 8), b[4] = (uint8_t)hn;
    memcpy(b + 5, hs, hn);
    assert_int_equal(sbx_tls_client_hello(b, hn + 5, &h), SBX_TLS_UNVERIFIABLE);
    /* bad server_name (not a host) */
    n = th_hello(b, "a b", 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_UNVERIFIABLE);
    /* the attack: [allowed, evil] in one list — the second name is reported */
    n = th_hello(b, "allowed.example\nevil.example", 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_SNI);
    assert_string_equal(h.sni, "allowed.example");
    assert_string_equal(h.sni_other, "evil.example");
    n = th_hello(b, "a.example\nA.Example.\na.example\nz.example", 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_SNI);
    assert_string_equal(h.sni_other, "z.example");
    /* repeats of one name (any spelling) are that name */
    n = th_hello(b, "a.example\nA.EXAMPLE.", 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_SNI);
    assert_string_equal(h.sni_other, "");
    /* a later entry that is not a host, or an entry of another name type */
    n = th_hello(b, "a.example\nb c", 0, 0);
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_UNVERIFIABLE);
    n = th_hello(b, "a.example\nb.example", 0, 0);
    for (size_t i = 5; i + 9 <= n; i++)
        if (memcmp(b + i, "b.example", 9) == 0) {
            b[i - 3] = 1; /* name_type of the second entry */
            break;
        }
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_UNVERIFIABLE);
    /* not TLS */
    assert_int_equal(sbx_tls_client_hello((const uint8_t *)"GET /", 5, &h), SBX_TLS_NOT_TLS);
    /* oversize record */
    uint8_t big[5] = {0x16, 3, 1, 0x40, 0x01};
    assert_int_equal(sbx_tls_client_hello(big, 5, &h), SBX_TLS_UNVERIFIABLE);
    /* not a ClientHello */
    n = th_hello(b, "a.example", 0, 0);
    b[5] = 0x02;
    assert_int_equal(sbx_tls_client_hello(b, n, &h), SBX_TLS_UNVERIFIABLE);
    /* every single-byte corruption is classified without crashing */
    n = th_hello(b, "a.example", 0, 0);
    for (size_t i = 0; i < n; i++) {
        uint8_t save = b[i];
        b[i] ^= 0xff;
        (void)sbx_tls_client_hello(b, n, &h);
        b[i] = save;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_end),     cmocka_unit_test(test_connect_forms),
        cmocka_unit_test(test_http_forms),   cmocka_unit_test(test_auth),
        cmocka_unit_test(test_auth_base64),  cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_numeric),      cmocka_unit_test(test_hello),
        cmocka_unit_test(test_http_framing), cmocka_unit_test(test_body_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
