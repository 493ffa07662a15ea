/*
 * Who may reach `agentstack mcp --listen` (docs/gateway.md, "Serving over
 * HTTP").
 *
 * Why: an HTTP port on loopback is reachable by every local process and, by
 * DNS rebinding, by any web page a browser on this machine opens. The
 * bearer token is what a local process lacks; the Origin and Host checks
 * are what a rebound page cannot fake.
 *
 * Guarantees:
 *  - The token file is opened with O_NOFOLLOW and judged by fstat on that
 *    very descriptor: a symlink, a file of another user, or one with any
 *    group/other permission bit is refused, never read. A missing file is
 *    created O_EXCL with mode 0600 and 256 random bits in hex.
 *  - The token is compared in constant time over its length.
 *  - A non-loopback listen address is refused unless --listen-any.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rand.h"
#include "base/sha256.h"
#include "gateway/http_int.h"

static int create_token(const char *path, char tok[HTTP_TOKEN_MAX + 1], struct as_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return as_err_errno(err, "cannot create the token file %s", path);
    if (rand_hex(tok, 32, err) < 0) {
        close(fd);
        unlink(path);
        return -1;
    }
    char line[HTTP_TOKEN_MAX + 2];
    int n = snprintf(line, sizeof line, "%s\n", tok);
    if (fchmod(fd, 0600) < 0 || write(fd, line, (size_t)n) != n || close(fd) < 0) {
        int e = errno;
        unlink(path);
        errno = e;
        return as_err_errno(err, "cannot write the token file %s", path);
    }
    return 0;
}

static int check_token(const char *path, const char *tok, struct as_err *err)
{
    size_t n = strlen(tok);
    if (n < 16 || n > HTTP_TOKEN_MAX)
        return as_err_set(err, "the token in %s must be 16 to %d bytes long", path, HTTP_TOKEN_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)tok[i] <= 0x20 || (unsigned char)tok[i] >= 0x7f)
            return as_err_set(err, "the token in %s holds a space, control or non-ASCII byte",
                              path);
    return 0;
}

int http_token_load(const char *path, char tok[HTTP_TOKEN_MAX + 1], struct as_err *err)
{
    tok[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT)
        return create_token(path, tok, err);
    if (fd < 0 && errno == ELOOP)
        return as_err_set(err, "refusing the token file %s: it is a symlink", path);
    if (fd < 0)
        return as_err_errno(err, "cannot open the token file %s", path);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return as_err_errno(err, "cannot stat the token file %s", path);
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(fd);
        return as_err_set(err,
                          "refusing the token file %s: it must be a regular file of yours that "
                          "no one else may read or write (mode %03o; fix: chmod 600 %s)",
                          path, (unsigned)(st.st_mode & 0777), path);
    }
    char buf[HTTP_TOKEN_MAX + 3];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got < 0)
        return as_err_errno(err, "cannot read the token file %s", path);
    size_t len = (size_t)got;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    if (len > HTTP_TOKEN_MAX)
        return as_err_set(err, "the token in %s must be 16 to %d bytes long", path, HTTP_TOKEN_MAX);
    memcpy(tok, buf, len);
    tok[len] = '\0';
    if (check_token(path, tok, err) < 0) {
        tok[0] = '\0';
        return -1;
    }
    return 0;
}

static bool ipv4_loopback(const struct in_addr *a)
{
    return (ntohl(a->s_addr) >> 24) == 127;
}

int http_listen_addr(const char *spec, bool any, struct sockaddr_storage *sa, socklen_t *salen,
                     struct as_err *err)
{
    memset(sa, 0, sizeof *sa);
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1])
        return as_err_set(err, "--listen wants HOST:PORT (such as 127.0.0.1:8765), not '%s'", spec);
    char host[64];
    size_t hn = (size_t)(colon - spec);
    if (hn >= sizeof host)
        return as_err_set(err, "--listen: the host in '%s' is too long", spec);
    memcpy(host, spec, hn);
    host[hn] = '\0';
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || *end || port < 0 || port > 65535 || colon[1] == '-' || colon[1] == '+')
        return as_err_set(err, "--listen: '%s' is not a port (0 to 65535)", colon + 1);
    bool loop = false;
    if (strcasecmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *salen = sizeof *s4;
        loop = ipv4_loopback(&s4->sin_addr);
    } else if (hn > 2 && host[0] == '[' && host[hn - 1] == ']') {
        host[hn - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
            return as_err_set(err, "--listen: '%s' is not an IPv6 address", host + 1);
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *salen = sizeof *s6;
        loop = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
        host[hn - 1] = ']';
    } else {
        return as_err_set(err,
                          "--listen: '%s' is not an IP address or localhost (names are not "
                          "resolved)",
                          host);
    }
    if (!loop && !any)
        return as_err_set(err,
                          "refusing to listen on %s: it is not a loopback address, so other "
                          "machines could reach the gateway. Listen on 127.0.0.1, or pass "
                          "--listen-any to serve them (every request still needs the token)",
                          spec);
    return 0;
}

/* The host part of "name[:port]" or "[v6][:port]"; false when malformed. */
static bool host_part(struct http_span v, char *out, size_t outsz)
{
    const char *p = v.p, *e = v.p + v.n, *h = p, *he;
    if (p < e && *p == '[') {
        he = memchr(p, ']', v.n);
        if (!he)
            return false;
        h = p + 1;
        if (he + 1 < e && he[1] != ':')
            return false;
    } else {
        he = memchr(p, ':', v.n);
        if (!he)
            he = e;
    }
    const char *port = he < e && *he == ']' ? he + 1 : he;
    if (port < e) {
        if (*port != ':' || port + 1 == e)
            return false;
        for (const char *q = port + 1; q < e; q++)
            if (*q < '0' || *q > '9')
                return false;
    }
    size_t n = (size_t)(he - h);
    if (n == 0 || n >= outsz)
        return false;
    memcpy(out, h, n);
    out[n] = '\0';
    return true;
}

bool http_host_loopback(struct http_span host)
{
    char h[64];
    if (!host.p || !host_part(host, h, sizeof h))
        return false;
    if (strcasecmp(h, "localhost") == 0)
        return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return ipv4_loopback(&a4);
    return inet_pton(AF_INET6, h, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool http_origin_loopback(struct http_span origin)
{
    size_t skip = 0;
    if (origin.n > 7 && strncasecmp(origin.p, "http://", 7) == 0)
        skip = 7;
    else if (origin.n > 8 && strncasecmp(origin.p, "https://", 8) == 0)
        skip = 8;
    else
        return false;
    struct http_span rest = {origin.p + skip, origin.n - skip};
    if (memchr(rest.p, '/', rest.n) || memchr(rest.p, '@', rest.n))
        return false;
    return http_host_loopback(rest);
}

bool http_bearer_ok(struct http_span auth, const char *tok)
{
    size_t tn = strlen(tok);
    if (!auth.p || auth.n < 7 || strncasecmp(auth.p, "Bearer ", 7) != 0)
        return false;
    const char *t = auth.p + 7;
    size_t n = auth.n - 7;
    while (n && *t == ' ') {
        t++;
        n--;
    }
    if (n != tn)
        return false;
    return ct_equal(t, tok, tn) == 1;
}
