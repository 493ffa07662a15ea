/*
 * url — see url.h for why there is one reader of a URL's authority and what
 * it refuses.
 */
#include "base/url.h"

#include <string.h>
#include <strings.h>

/* A byte no authority of ours may hold: libcurl and the policy would read it
 * differently (a '%' is decoded by one and not the other, a backslash is a
 * slash to some URL readers), or it is not part of a URL at all. */
static bool authority_byte_bad(unsigned char c)
{
    return c <= 0x20 || c == 0x7f || c == '\\' || c == '%';
}

static int refuse(const char **why, const char *text)
{
    if (why)
        *why = text;
    return -1;
}

/* Decimal 1-65535, digits only, all of [s, s + n). */
static int parse_port(const char *s, size_t n, unsigned *port)
{
    if (n == 0 || n > 5)
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

int url_authority(const char *url, struct url_authority *out, const char **why)
{
    if (!url)
        return refuse(why, "no URL");
    struct url_authority a;
    memset(&a, 0, sizeof a);
    size_t start;
    if (strncasecmp(url, "https://", 8) == 0) {
        a.https = true;
        start = 8;
    } else if (strncasecmp(url, "http://", 7) == 0) {
        start = 7;
    } else {
        return refuse(why, "the URL is not http:// or https://");
    }
    const char *auth = url + start;
    size_t n = strcspn(auth, "/?#");
    a.authority_end = start + n;
    for (size_t i = 0; i < n; i++)
        if (authority_byte_bad((unsigned char)auth[i]))
            return refuse(why, "the URL's authority holds a space, a control character, "
                               "a backslash or a '%'");
    const char *at = memchr(auth, '@', n);
    if (at && memchr(at + 1, '@', n - (size_t)(at + 1 - auth)))
        return refuse(why, "two '@' in the URL's authority");
    const char *h = auth;
    size_t hn = n;
    if (at) {
        a.has_userinfo = true;
        hn = n - (size_t)(at + 1 - auth);
        h = at + 1;
    }
    const char *port = NULL;
    size_t port_n = 0;
    const char *name = h;
    size_t name_n;
    if (hn && h[0] == '[') {
        const char *rb = memchr(h, ']', hn);
        if (!rb)
            return refuse(why, "an IPv6 host without its closing ']'");
        a.bracketed = true;
        name = h + 1;
        name_n = (size_t)(rb - name);
        const char *rest = rb + 1;
        size_t rest_n = hn - (size_t)(rest - h);
        if (rest_n) {
            if (rest[0] != ':')
                return refuse(why, "bytes after an IPv6 host's ']' that are not a port");
            port = rest + 1;
            port_n = rest_n - 1;
        }
        if (memchr(name, '[', name_n))
            return refuse(why, "a '[' inside an IPv6 host");
    } else {
        const char *colon = memchr(h, ':', hn);
        name_n = colon ? (size_t)(colon - h) : hn;
        if (colon) {
            port = colon + 1;
            port_n = hn - name_n - 1;
        }
        if (memchr(name, '[', name_n) || memchr(name, ']', name_n))
            return refuse(why, "a bracket in the URL's host");
    }
    if (name_n == 0)
        return refuse(why, "the URL names no host");
    if (name_n > URL_HOST_MAX)
        return refuse(why, "the URL's host is longer than 255 bytes");
    if (port) {
        if (parse_port(port, port_n, &a.port) < 0)
            return refuse(why, "the URL's port is not a number from 1 to 65535");
        a.port_given = true;
    } else {
        a.port = a.https ? 443 : 80;
    }
    memcpy(a.host, name, name_n);
    a.host[name_n] = '\0';
    a.host_off = (size_t)(name - url);
    *out = a;
    return 0;
}
