/* The egress proxy's parsers (see connect.h). Pure functions over bytes. */
#include "egress/connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/hex.h"
#include "base/sha256.h"
#include "base/xalloc.h"

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

static int ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen != blen)
        return 0;
    for (size_t i = 0; i < alen; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return 0;
    return 1;
}

/* RFC 9110 tchar. */
static int is_tchar(int c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

size_t sbx_head_end(const char *buf, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

/* Parses "1".."65535" (at most 5 digits). */
static int parse_port(const char *s, size_t n)
{
    if (n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return (v >= 1 && v <= 65535) ? v : -1;
}

/* Splits an authority into host and port. need_port: CONNECT requires one;
 * otherwise def_port applies. */
static int parse_authority(const char *a, size_t n, int need_port, int def_port,
                           struct sbx_request *req, const char **why)
{
    const char *host;
    size_t hlen;
    const char *port = NULL;
    size_t plen = 0;
    req->host_bracketed = 0;
    if (n && a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (!close)
            return *why = "unclosed '[' in the authority", -1;
        host = a + 1;
        hlen = (size_t)(close - host);
        size_t rest = n - (size_t)(close + 1 - a);
        if (rest) {
            if (close[1] != ':')
                return *why = "junk after ']' in the authority", -1;
            port = close + 2;
            plen = rest - 1;
        }
        req->host_bracketed = 1;
    } else {
        const char *colon = NULL;
        for (size_t i = n; i > 0; i--)
            if (a[i - 1] == ':') {
                colon = a + i - 1;
                break;
            }
        host = a;
        hlen = colon ? (size_t)(colon - a) : n;
        if (colon) {
            port = colon + 1;
            plen = n - hlen - 1;
        }
    }
    if (hlen == 0)
        return *why = "empty host", -1;
    if (hlen > SBX_HOST_MAX)
        return *why = "host too long", -1;
    if (port) {
        req->port = parse_port(port, plen);
        if (req->port < 0)
            return *why = "bad port (expected 1-65535)", -1;
    } else if (need_port) {
        return *why = "CONNECT target needs host:port", -1;
    } else {
        req->port = def_port;
    }
    memcpy(req->host, host, hlen);
    req->host[hlen] = '\0';
    return 0;
}

/* Checks one line's bytes: no CR, LF, NUL or other C0 control but HTAB. */
static int line_clean(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return 0;
    }
    return 1;
}

/* Trims spaces and tabs around [s, s+n). */
static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

/* The framing headers of one line (name, value untrimmed). */
struct framing {
    int hosts, lengths, codings;
};

static int framing_line(struct framing *f, const char *name, size_t nn, const char *v, size_t vn,
                        struct sbx_request *req, const char **why)
{
    trim(&v, &vn);
    if (ieq(name, nn, "host")) {
        if (++f->hosts > 1)
            return *why = "duplicate Host header", -1;
    } else if (ieq(name, nn, "content-length")) {
        if (++f->lengths > 1)
            return *why = "duplicate Content-Length header", -1;
        if (vn == 0 || vn > 18)
            return *why = "bad Content-Length", -1;
        uint64_t x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9')
                return *why = "bad Content-Length", -1;
            x = x * 10 + (uint64_t)(v[i] - '0');
        }
        req->content_length = x;
    } else if (ieq(name, nn, "transfer-encoding")) {
        if (++f->codings > 1)
            return *why = "duplicate Transfer-Encoding header", -1;
        if (!ieq(v, vn, "chunked"))
            return *why = "unsupported Transfer-Encoding (only chunked)", -1;
    }
    return 0;
}

int sbx_parse_head(const char *head, size_t len, struct sbx_request *req, const char **why)
{
    struct framing fr = {0, 0, 0};
    memset(req, 0, sizeof *req);
    if (len < 4 || len > SBX_HEAD_MAX || memcmp(head + len - 4, "\r\n\r\n", 4) != 0)
        return *why = "incomplete request head", -1;
    req->head_len = len;
    /* Walk the lines; the last two bytes close the empty line. */
    size_t pos = 0, line_no = 0;
    size_t rl_len = 0;
    while (pos < len - 2) {
        const char *cr = memchr(head + pos, '\r', len - pos);
        if (!cr || (size_t)(cr - head) + 1 >= len || cr[1] != '\n')
            return *why = "bare CR in the request head", -1;
        size_t n = (size_t)(cr - (head + pos));
        if (!line_clean(head + pos, n))
            return *why = "control byte in the request head", -1;
        if (line_no == 0) {
            rl_len = n;
        } else {
            const char *l = head + pos;
            const char *colon = memchr(l, ':', n);
            if (!colon || colon == l)
                return *why = "malformed header line", -1;
            for (const char *c = l; c < colon; c++)
                if (!is_tchar((unsigned char)*c))
                    return *why = "malformed header name", -1;
            if (framing_line(&fr, l, (size_t)(colon - l), colon + 1, n - (size_t)(colon + 1 - l),
                             req, why) < 0)
                return -1;
        }
        line_no++;
        pos += n + 2;
    }
    if (rl_len == 0)
        return *why = "empty request line", -1;
    /* Two framings are two readings of where the body ends: refused
     * (RFC 9112 section 6.1 lets a server pick either; a smuggler counts on it). */
    if (fr.lengths && fr.codings)
        return *why = "both Content-Length and Transfer-Encoding", -1;
    req->body = fr.codings ? SBX_BODY_CHUNKED : fr.lengths ? SBX_BODY_LENGTH : SBX_BODY_NONE;

    /* Request line: tokens split on spaces, empties ignored. */
    const char *tok[4];
    size_t tlen[4];
    size_t nt = 0;
    for (size_t i = 0; i < rl_len;) {
        while (i < rl_len && head[i] == ' ')
            i++;
        if (i >= rl_len)
            break;
        size_t s = i;
        while (i < rl_len && head[i] != ' ')
            i++;
        if (nt == 3)
            return *why = "request line has more than three parts", -1;
        tok[nt] = head + s;
        tlen[nt] = i - s;
        nt++;
    }
    if (nt != 3)
        return *why = "request line needs METHOD TARGET HTTP/x", -1;
    if (tlen[2] < 5 || memcmp(tok[2], "HTTP/", 5) != 0)
        return *why = "request line does not end in HTTP/x", -1;
    if (tlen[0] >= sizeof req->method)
        return *why = "method too long", -1;
    for (size_t i = 0; i < tlen[0]; i++)
        if (!is_tchar((unsigned char)tok[0][i]))
            return *why = "malformed method", -1;
    memcpy(req->method, tok[0], tlen[0]);
    req->method[tlen[0]] = '\0';

    if (ieq(tok[0], tlen[0], "CONNECT")) {
        req->kind = SBX_REQ_CONNECT;
        return parse_authority(tok[1], tlen[1], 1, 0, req, why);
    }

    /* Plain HTTP: absolute-form http:// only. */
    if (tlen[2] != 8 || memcmp(tok[2], "HTTP/1.", 7) != 0 || tok[2][7] < '0' || tok[2][7] > '9')
        return *why = "unsupported HTTP version", -1;
    req->http_minor = tok[2][7] - '0';
    const char *t = tok[1];
    size_t tl = tlen[1];
    if (tl < 8 || !ieq(t, 7, "http://"))
        return *why = "only CONNECT and absolute-form http:// requests are proxied", -1;
    t += 7;
    tl -= 7;
    size_t alen = 0;
    while (alen < tl && t[alen] != '/' && t[alen] != '?' && t[alen] != '#')
        alen++;
    if (alen < tl && t[alen] == '#')
        return *why = "fragment in the request target", -1;
    if (memchr(t, '@', alen))
        return *why = "userinfo in the request target", -1;
    if (memchr(t, '#', tl))
        return *why = "fragment in the request target", -1;
    if (parse_authority(t, alen, 0, 80, req, why) < 0)
        return -1;
    req->kind = SBX_REQ_HTTP;
    req->path_off = (size_t)(t + alen - head);
    req->path_len = tl - alen;
    return 0;
}

int sbx_head_auth_ok(const char *head, size_t len, const char *expected)
{
    size_t elen = strlen(expected);
    int ok = 0;
    size_t pos = 0;
    int first = 1;
    while (pos + 2 <= len) {
        const char *cr = memchr(head + pos, '\r', len - pos);
        if (!cr)
            break;
        size_t n = (size_t)(cr - (head + pos));
        if (n == 0)
            break;
        if (!first) {
            const char *l = head + pos;
            const char *colon = memchr(l, ':', n);
            if (colon && ieq(l, (size_t)(colon - l), "proxy-authorization")) {
                const char *v = colon + 1;
                size_t vn = n - (size_t)(colon + 1 - l);
                trim(&v, &vn);
                /* The expected length is public (fixed by the token format);
                 * the bytes are compared in constant time. */
                if (vn == elen && ct_equal(v, expected, elen))
                    ok = 1;
            }
        }
        first = 0;
        pos += n + 2;
    }
    return ok;
}

void sbx_basic_auth_value(const char *token, strbuf *out)
{
    strbuf raw = SB_INIT;
    sb_addf(&raw, "agentstack:%s", token);
    sb_reset(out);
    sb_adds(out, "Basic ");
    base64_encode(raw.buf, raw.len, out);
    sb_release_secure(&raw);
}

int sbx_host_is_numeric(const char *host)
{
    if (strchr(host, ':'))
        return 1;
    int parts = 0;
    const char *p = host;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n == 0)
            return 0;
        if (n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            for (size_t i = 2; i < n; i++) {
                char c = p[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                    return 0;
            }
        } else {
            for (size_t i = 0; i < n; i++)
                if (p[i] < '0' || p[i] > '9')
                    return 0;
        }
        if (++parts > 4)
            return 0;
        if (!dot)
            break;
        p = dot + 1;
    }
    return parts >= 1;
}

int sbx_host_normalize(const char *in, int bracketed, char out[SBX_HOST_MAX])
{
    size_t n = strlen(in);
    char tmp[SBX_HOST_MAX + 2];
    if (n == 0 || n > SBX_HOST_MAX)
        return -1;
    if (bracketed) {
        struct in6_addr a6;
        for (size_t i = 0; i < n; i++)
            tmp[i] = (char)lower((unsigned char)in[i]);
        tmp[n] = '\0';
        if (inet_pton(AF_INET6, tmp, &a6) != 1)
            return -1;
        /* One spelling per address, so a pattern cannot be dodged by "0::1". */
        if (!inet_ntop(AF_INET6, &a6, out, SBX_HOST_MAX))
            return -1;
        return 0;
    }
    if (in[n - 1] == '.')
        n--;
    if (n == 0 || n > 253)
        return -1;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '.') {
            if (label == 0)
                return -1;
            label = 0;
            tmp[i] = '.';
            continue;
        }
        c = (unsigned char)lower(c);
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return -1;
        if (++label > 63)
            return -1;
        tmp[i] = (char)c;
    }
    if (label == 0)
        return -1;
    tmp[n] = '\0';
    if (sbx_host_is_numeric(tmp)) {
        /* The resolver reads "127.1", "0x7f000001" and "0177.0.0.1" as
         * addresses; give each address one spelling so policy sees it. */
        struct in_addr a4;
        if (inet_aton(tmp, &a4) == 0)
            return -1;
        if (!inet_ntop(AF_INET, &a4, out, SBX_HOST_MAX))
            return -1;
        return 0;
    }
    memcpy(out, tmp, n + 1);
    return 0;
}

const char *sbx_addr_str(const struct sockaddr *sa, char *buf, size_t size)
{
    const void *src = NULL;
    if (sa->sa_family == AF_INET)
        src = &((const struct sockaddr_in *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6)
        src = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (!src || !inet_ntop(sa->sa_family, src, buf, (socklen_t)size))
        snprintf(buf, size, "?");
    return buf;
}

/* Bounds-checked reader over the ClientHello body. */
struct rd {
    const uint8_t *p;
    size_t n, off;
    int bad;
};

static unsigned rd_u8(struct rd *r)
{
    if (r->bad || r->off + 1 > r->n)
        return r->bad = 1, 0;
    return r->p[r->off++];
}

static unsigned rd_u16(struct rd *r)
{
    if (r->bad || r->off + 2 > r->n)
        return r->bad = 1, 0;
    unsigned v = (unsigned)r->p[r->off] << 8 | r->p[r->off + 1];
    r->off += 2;
    return v;
}

static void rd_skip(struct rd *r, size_t k)
{
    if (r->bad || k > r->n - r->off)
        r->bad = 1;
    else
        r->off += k;
}

/* server_name extension data: every entry of the list is read, never just
 * the first — a server may pick any of them. Each must be a host_name (the
 * only type RFC 6066 defines; another is unverifiable) that normalizes.
 * 0 + out = the first name, *other = a later name that differs from it
 * ("" when all agree); -1 when malformed. */
static int parse_server_name(const uint8_t *d, size_t n, char out[SBX_HOST_MAX],
                             char other[SBX_HOST_MAX])
{
    struct rd r = {d, n, 0, 0};
    size_t list = rd_u16(&r);
    if (r.bad || list == 0 || list != n - 2)
        return -1;
    int names = 0;
    other[0] = '\0';
    while (r.off < n) {
        unsigned type = rd_u8(&r);
        size_t len = rd_u16(&r);
        if (r.bad || len > n - r.off || type != 0)
            return -1;
        char name[SBX_HOST_MAX + 2], norm[SBX_HOST_MAX];
        if (len == 0 || len > SBX_HOST_MAX)
            return -1;
        memcpy(name, d + r.off, len);
        name[len] = '\0';
        if (memchr(name, '\0', len) || sbx_host_normalize(name, 0, norm) < 0)
            return -1;
        if (names++ == 0)
            memcpy(out, norm, sizeof norm);
        else if (!other[0] && strcmp(norm, out) != 0)
            memcpy(other, norm, sizeof norm);
        r.off += len;
    }
    return names ? 0 : -1;
}

enum sbx_tls sbx_tls_client_hello(const uint8_t *buf, size_t len, struct sbx_hello *out)
{
    memset(out, 0, sizeof *out);
    if (len == 0)
        return SBX_TLS_NEED_MORE;
    if (buf[0] != 0x16)
        return SBX_TLS_NOT_TLS;
    if (len < 5)
        return SBX_TLS_NEED_MORE;
    size_t rlen = (size_t)buf[3] << 8 | buf[4];
    if (buf[1] != 0x03 || rlen == 0 || rlen > 16384)
        return SBX_TLS_UNVERIFIABLE;
    out->record_len = 5 + rlen;
    if (len < 5 + rlen)
        return SBX_TLS_NEED_MORE;
    const uint8_t *h = buf + 5;
    if (rlen < 4 || h[0] != 0x01)
        return SBX_TLS_UNVERIFIABLE;
    size_t hlen = (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    if (hlen + 4 != rlen)
        return SBX_TLS_UNVERIFIABLE; /* spills into another record, or trailing bytes */
    struct rd r = {h + 4, hlen, 0, 0};
    rd_skip(&r, 2 + 32); /* legacy_version, random */
    size_t sid = rd_u8(&r);
    if (sid > 32)
        return SBX_TLS_UNVERIFIABLE;
    rd_skip(&r, sid);
    size_t cs = rd_u16(&r);
    if (cs < 2 || cs % 2)
        return SBX_TLS_UNVERIFIABLE;
    rd_skip(&r, cs);
    size_t comp = rd_u8(&r);
    if (comp < 1)
        return SBX_TLS_UNVERIFIABLE;
    rd_skip(&r, comp);
    if (r.bad)
        return SBX_TLS_UNVERIFIABLE;
    if (r.off == r.n)
        return SBX_TLS_NO_SNI;
    size_t ext = rd_u16(&r);
    if (r.bad || ext != r.n - r.off)
        return SBX_TLS_UNVERIFIABLE;
    int have_sni = 0;
    while (r.off < r.n) {
        unsigned type = rd_u16(&r);
        size_t elen = rd_u16(&r);
        if (r.bad || elen > r.n - r.off)
            return SBX_TLS_UNVERIFIABLE;
        const uint8_t *ed = r.p + r.off;
        if (type == 0x0000) {
            if (have_sni)
                return SBX_TLS_UNVERIFIABLE; /* duplicate extension */
            if (parse_server_name(ed, elen, out->sni, out->sni_other) < 0)
                return SBX_TLS_UNVERIFIABLE;
            have_sni = 1;
        } else if (type == 0xfe0d || type == 0xffce) {
            out->has_ech = 1;
        }
        r.off += elen;
    }
    return have_sni ? SBX_TLS_SNI : SBX_TLS_NO_SNI;
}

/* ---- one request's body ---------------------------------------------------- */

enum {
    CH_SIZE = 0, /* chunk-size hex digits */
    CH_EXT,      /* BWS / chunk-ext up to CR */
    CH_SIZE_LF,  /* LF after the chunk-size line */
    CH_DATA,     /* left bytes of chunk data */
    CH_DATA_CR,  /* CR after the data */
    CH_DATA_LF,  /* LF after the data */
    CH_TRAILER0, /* start of a trailer line, or the final CR */
    CH_TRAILER,  /* a trailer line up to CR */
    CH_TRAILER_LF,
    CH_END_LF, /* the LF that ends the message */
    CH_DONE,
    CH_BAD,
};
#define CH_LINE_MAX 4096     /* one chunk-size line with its extensions */
#define CH_TRAILER_MAX 16384 /* every trailer line together */

void sbx_body_init(struct sbx_body *b, const struct sbx_request *req)
{
    memset(b, 0, sizeof *b);
    b->kind = req->body;
    b->left = req->content_length;
    b->st = CH_SIZE;
    if (b->kind == SBX_BODY_NONE || (b->kind == SBX_BODY_LENGTH && b->left == 0))
        b->st = CH_DONE;
}

static int ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

int sbx_body_feed(struct sbx_body *b, const char *buf, size_t len, size_t *take)
{
    *take = 0;
    if (b->st == CH_DONE)
        return 1;
    if (b->st == CH_BAD)
        return -1;
    if (b->kind == SBX_BODY_LENGTH) {
        if ((uint64_t)len < b->left) {
            b->left -= len;
            *take = len;
            return 0;
        }
        *take = (size_t)b->left;
        b->left = 0;
        b->st = CH_DONE;
        return 1;
    }
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)buf[i];
        switch (b->st) {
        case CH_SIZE: {
            int d = hex_digit_value(c);
            if (d >= 0) {
                if (++b->digits > 15)
                    goto bad;
                b->left = b->left * 16 + (uint64_t)d;
                b->line++;
                break;
            }
            if (!b->digits)
                goto bad;
            if (c == '\r') {
                b->st = CH_SIZE_LF;
                break;
            }
            if (c != ';' && c != ' ' && c != '\t')
                goto bad;
            b->st = CH_EXT;
            b->line++;
            break;
        }
        case CH_EXT:
            if (c == '\r') {
                b->st = CH_SIZE_LF;
                break;
            }
            if (ctl(c) || ++b->line > CH_LINE_MAX)
                goto bad;
            break;
        case CH_SIZE_LF:
            if (c != '\n')
                goto bad;
            b->st = b->left ? CH_DATA : CH_TRAILER0;
            b->line = 0;
            b->digits = 0;
            break;
        case CH_DATA: {
            size_t avail = len - i;
            size_t k = (uint64_t)avail < b->left ? avail : (size_t)b->left;
            b->left -= k;
            i += k;
            if (!b->left)
                b->st = CH_DATA_CR;
            continue;
        }
        case CH_DATA_CR:
            if (c != '\r')
                goto bad;
            b->st = CH_DATA_LF;
            break;
        case CH_DATA_LF:
            if (c != '\n')
                goto bad;
            b->st = CH_SIZE;
            break;
        case CH_TRAILER0:
            if (c == '\r') {
                b->st = CH_END_LF;
                break;
            }
            b->st = CH_TRAILER;
            continue; /* the same byte starts the line */
        case CH_TRAILER:
            if (c == '\r') {
                b->st = CH_TRAILER_LF;
                break;
            }
            if (ctl(c) || ++b->trailer > CH_TRAILER_MAX)
                goto bad;
            break;
        case CH_TRAILER_LF:
            if (c != '\n')
                goto bad;
            b->st = CH_TRAILER0;
            break;
        case CH_END_LF:
            if (c != '\n')
                goto bad;
            b->st = CH_DONE;
            *take = i + 1;
            return 1;
        default:
            goto bad;
        }
        i++;
    }
    *take = len;
    return 0;
bad:
    b->st = CH_BAD;
    *take = 0;
    return -1;
}

static int is_hop_header(const char *name, size_t n)
{
    return ieq(name, n, "proxy-authorization") || ieq(name, n, "proxy-connection") ||
           ieq(name, n, "connection") || ieq(name, n, "keep-alive") || ieq(name, n, "host") ||
           ieq(name, n, "te") || ieq(name, n, "upgrade") || ieq(name, n, "trailer");
}

void sbx_http_rewrite(const char *head, const struct sbx_request *req, const char *norm_host,
                      strbuf *out)
{
    sb_reset(out);
    sb_adds(out, req->method);
    sb_addc(out, ' ');
    if (req->path_len == 0 || head[req->path_off] != '/')
        sb_addc(out, '/');
    sb_add(out, head + req->path_off, req->path_len);
    sb_addf(out, " HTTP/1.%d\r\n", req->http_minor);
    size_t pos = 0;
    int first = 1;
    while (pos + 2 <= req->head_len) {
        const char *cr = memchr(head + pos, '\r', req->head_len - pos);
        if (!cr)
            break;
        size_t n = (size_t)(cr - (head + pos));
        if (n == 0)
            break;
        if (!first) {
            const char *l = head + pos;
            const char *colon = memchr(l, ':', n);
            if (colon && !is_hop_header(l, (size_t)(colon - l))) {
                sb_add(out, l, n);
                sb_adds(out, "\r\n");
            }
        }
        first = 0;
        pos += n + 2;
    }
    int v6 = strchr(norm_host, ':') != NULL;
    sb_addf(out, "Host: %s%s%s", v6 ? "[" : "", norm_host, v6 ? "]" : "");
    if (req->port != 80)
        sb_addf(out, ":%d", req->port);
    sb_adds(out, "\r\nConnection: close\r\n\r\n");
}
