/* url: one reader of an http(s) URL's authority, and the URLs it must refuse
 * because two readers could take them to different hosts. */
#include "testutil.h"

#include "base/url.h"

static void accepts(const char *url, const char *host, unsigned port, bool https)
{
    struct url_authority a;
    const char *why = NULL;
    if (url_authority(url, &a, &why) != 0)
        fail_msg("%s refused: %s", url, why);
    assert_string_equal(a.host, host);
    assert_int_equal(a.port, port);
    assert_int_equal(a.https, https);
}

static void refuses(const char *url, const char *reason_part)
{
    struct url_authority a;
    memset(&a, 0x5a, sizeof a);
    const char *why = NULL;
    if (url_authority(url, &a, &why) == 0)
        fail_msg("%s accepted (host %s)", url, a.host);
    assert_non_null(why);
    if (!strstr(why, reason_part))
        fail_msg("%s: reason '%s' lacks '%s'", url, why, reason_part);
    assert_int_equal((unsigned char)a.host[0], 0x5a); /* nothing filled on refusal */
}

static void test_plain_forms(void **state)
{
    (void)state;
    accepts("http://example.com/mcp", "example.com", 80, false);
    accepts("HTTPS://Example.COM", "Example.COM", 443, true);
    accepts("https://example.com:8443/x?y#z", "example.com", 8443, true);
    accepts("http://127.0.0.1:9/", "127.0.0.1", 9, false);
    accepts("http://[::1]:65535/mcp", "::1", 65535, false);
    accepts("https://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1", 443, true);
    accepts("http://user:pa:ss@host.example:81/", "host.example", 81, false);
    accepts("http://host.example?q=a@b", "host.example", 80, false); /* '@' after the authority */
    accepts("http://b\xc3\xbc"
            "cher.example/",
            "b\xc3\xbc"
            "cher.example",
            80, false);
}

static void test_where_the_host_sits(void **state)
{
    (void)state;
    struct url_authority a;
    const char *why;
    const char *u = "https://tok@[2001:db8::1]:444/p";
    assert_int_equal(url_authority(u, &a, &why), 0);
    assert_true(a.bracketed && a.has_userinfo && a.port_given);
    assert_string_equal(u + a.host_off - 1, "[2001:db8::1]:444/p");
    assert_int_equal(a.authority_end, strlen("https://tok@[2001:db8::1]:444"));
}

/* Each of these is read as one host by some URL reader and as another (or
 * as none) by another: refused, never guessed. */
static void test_ambiguous_refused(void **state)
{
    (void)state;
    refuses("http://a@allowed.example@127.0.0.1/", "two '@'");
    refuses("http://allowed.example\\@127.0.0.1/", "backslash");
    refuses("http://allowed.example%2f@127.0.0.1/", "'%'");
    refuses("http://%31%32%37.0.0.1/", "'%'");
    refuses("http://allowed .example/", "space");
    refuses("http://allowed.example\t/", "control");
    refuses("http://host.example:443abc/", "port");
    refuses("http://host.example:0/", "port");
    refuses("http://host.example:65536/", "port");
    refuses("http://host.example:/", "port");
    refuses("http://host.example:+80/", "port");
    refuses("http://[::1/", "closing ']'");
    refuses("http://[::1]x/", "after an IPv6");
    refuses("http://[::1]]:80/", "after an IPv6");
    refuses("http://ho]st/", "bracket");
    refuses("http://::1/", "no host");
    refuses("http:///path", "no host");
    refuses("http://user@/", "no host");
    refuses("ftp://host.example/", "not http");
    refuses("http:/host.example/", "not http");
    refuses("file:///etc/passwd", "not http");
    refuses(NULL, "no URL");
    char longhost[300] = "http://";
    memset(longhost + 7, 'a', 256);
    longhost[263] = '\0';
    refuses(longhost, "255");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_forms),
        cmocka_unit_test(test_where_the_host_sits),
        cmocka_unit_test(test_ambiguous_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
