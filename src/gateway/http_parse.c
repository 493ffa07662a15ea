/*
 * The strict HTTP/1.1 request head parser (http_parse.h says what it
 * refuses and why).
 */
#include <string.h>
#include <strings.h>

#include "gateway/http_parse.h"

static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool http_span_is(struct http_span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.p && s.n == n && strncasecmp(s.p, lit, n) == 0;
}

static int fail(int *status, const char **why, int st, const char *w)
{
    *status = st;
    *why = w;
    return HTTP_PARSE_ERROR;
}

/* The end of the head (just past CRLF CRLF), 0 when not there yet, or
 * (size_t)-1 when a CR or LF stands alone. */
static size_t head_end(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
            return (size_t)-1; /* a CR not followed by LF */
        if (buf[i] != '\n')
            continue;
        if (i == 0 || buf[i - 1] != '\r')
            return (size_t)-1; /* an LF not preceded by CR */
        if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    }
    return 0;
}

static int request_line(const char *p, size_t n, struct http_req *r, int *status, const char **why)
{
    const char *sp1 = memchr(p, ' ', n);
    if (!sp1 || sp1 == p || sp1 - p > 16)
        return fail(status, why, 400, "malformed request line");
    for (const char *q = p; q < sp1; q++)
        if (*q < 'A' || *q > 'Z')
            return fail(status, why, 400, "malformed method");
    const char *t = sp1 + 1, *end = p + n;
    const char *sp2 = memchr(t, ' ', (size_t)(end - t));
    if (!sp2 || sp2 == t)
        return fail(status, why, 400, "malformed request line");
    if (*t != '/')
        return fail(status, why, 400, "the target must be a path (origin-form)");
    if (sp2 - t > 2048)
        return fail(status, why, 400, "the target is too long");
    for (const char *q = t; q < sp2; q++)
        if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
            return fail(status, why, 400, "a control or non-ASCII byte in the target");
    const char *v = sp2 + 1;
    size_t vn = (size_t)(end - v);
    if (vn != 8 || memcmp(v, "HTTP/1.", 7) != 0)
        return fail(status, why, vn >= 5 && memcmp(v, "HTTP/", 5) == 0 ? 505 : 400,
                    "not HTTP/1.0 or HTTP/1.1");
    if (v[7] != '0' && v[7] != '1')
        return fail(status, why, 505, "not HTTP/1.0 or HTTP/1.1");
    r->method = (struct http_span){p, (size_t)(sp1 - p)};
    r->target = (struct http_span){t, (size_t)(sp2 - t)};
    r->minor = v[7] - '0';
    r->keep_alive = r->minor == 1;
    return 0;
}

static int content_length(struct http_span v, struct http_req *r, int *status, const char **why)
{
    if (r->content_length >= 0)
        return fail(status, why, 400, "Content-Length appears twice");
    if (v.n == 0 || v.n > 19)
        return fail(status, why, 400, "Content-Length is not a plain number");
    long long n = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return fail(status, why, 400, "Content-Length is not a plain number");
        n = n * 10 + (v.p[i] - '0');
        if (n > (long long)HTTP_BODY_MAX * 16)
            n = (long long)HTTP_BODY_MAX * 16; /* only compared with the limit */
    }
    r->content_length = n;
    return 0;
}

/* The fields read at most once each. */
static struct http_span *known(struct http_req *r, struct http_span name)
{
    static const struct {
        const char *name;
        size_t off;
    } tab[] = {
        {"authorization", offsetof(struct http_req, authorization)},
        {"host", offsetof(struct http_req, host)},
        {"origin", offsetof(struct http_req, origin)},
        {"content-type", offsetof(struct http_req, content_type)},
        {"accept", offsetof(struct http_req, accept)},
        {"mcp-session-id", offsetof(struct http_req, session_id)},
        {"mcp-protocol-version", offsetof(struct http_req, protocol_version)},
        {"last-event-id", offsetof(struct http_req, last_event_id)},
    };
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++)
        if (http_span_is(name, tab[i].name))
            return (struct http_span *)((char *)r + tab[i].off);
    return NULL;
}

static bool has_token(struct http_span v, const char *tok)
{
    size_t tn = strlen(tok), i = 0;
    while (i < v.n) {
        while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ','))
            i++;
        size_t s = i;
        while (i < v.n && v.p[i] != ',' && v.p[i] != ' ' && v.p[i] != '\t')
            i++;
        if (i - s == tn && strncasecmp(v.p + s, tok, tn) == 0)
            return true;
    }
    return false;
}

static int field(const char *p, size_t n, struct http_req *r, bool *seen_conn, int *status,
                 const char **why)
{
    if (n && (p[0] == ' ' || p[0] == '\t'))
        return fail(status, why, 400, "a folded header line (obs-fold)");
    const char *colon = memchr(p, ':', n);
    if (!colon || colon == p)
        return fail(status, why, 400, "a header line without a field name");
    for (const char *q = p; q < colon; q++)
        if (!is_tchar((unsigned char)*q))
            return fail(status, why, 400, "a field name that is not a token (or space before ':')");
    struct http_span name = {p, (size_t)(colon - p)};
    const char *v = colon + 1, *e = p + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    for (const char *q = v; q < e; q++) {
        unsigned char c = (unsigned char)*q;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(status, why, 400, "a control byte in a header value");
    }
    struct http_span val = {v, (size_t)(e - v)};
    if (++r->fields > HTTP_FIELDS_MAX)
        return fail(status, why, 431, "too many header fields");
    if (http_span_is(name, "content-length"))
        return content_length(val, r, status, why);
    if (http_span_is(name, "transfer-encoding"))
        return fail(status, why, 501, "Transfer-Encoding is not accepted (send Content-Length)");
    if (http_span_is(name, "connection")) {
        if (*seen_conn)
            return fail(status, why, 400, "Connection appears twice");
        *seen_conn = true;
        if (has_token(val, "close"))
            r->keep_alive = false;
        else if (has_token(val, "keep-alive"))
            r->keep_alive = true;
        return 0;
    }
    struct http_span *k = known(r, name);
    if (k) {
        if (k->p)
            return fail(status, why, 400, "a header field the server reads appears twice");
        *k = val;
    }
    return 0;
}

enum http_parse_rc http_parse_head(const char *buf, size_t len, struct http_req *r, int *status,
                                   const char **why)
{
    memset(r, 0, sizeof *r);
    r->content_length = -1;
    size_t scan = len > HTTP_HEAD_MAX ? HTTP_HEAD_MAX : len;
    size_t end = head_end(buf, scan);
    if (end == (size_t)-1)
        return fail(status, why, 400, "a bare CR or LF (lines end in CRLF)");
    if (end == 0) {
        if (len >= HTTP_HEAD_MAX)
            return fail(status, why, 431, "the request head is over 16 KiB");
        return HTTP_PARSE_MORE;
    }
    r->head_len = end;
    const char *p = buf, *stop = buf + end - 2; /* the last line is the empty one */
    const char *nl = memchr(p, '\r', (size_t)(stop - p));
    if (request_line(p, (size_t)(nl - p), r, status, why) < 0)
        return HTTP_PARSE_ERROR;
    p = nl + 2;
    bool seen_conn = false;
    while (p < stop) {
        nl = memchr(p, '\r', (size_t)(stop - p));
        if (field(p, (size_t)(nl - p), r, &seen_conn, status, why) < 0)
            return HTTP_PARSE_ERROR;
        p = nl + 2;
    }
    if (r->minor == 1 && !r->host.p)
        return fail(status, why, 400, "HTTP/1.1 needs a Host field");
    if (r->content_length > (long long)HTTP_BODY_MAX)
        return fail(status, why, 413, "the body is over 4 MiB");
    return HTTP_PARSE_DONE;
}

bool http_accepts(struct http_span accept, const char *type)
{
    if (!accept.p)
        return false;
    const char *slash = strchr(type, '/');
    size_t major = slash ? (size_t)(slash - type) : strlen(type);
    size_t i = 0;
    while (i < accept.n) {
        while (i < accept.n && (accept.p[i] == ' ' || accept.p[i] == ','))
            i++;
        size_t s = i;
        while (i < accept.n && accept.p[i] != ',' && accept.p[i] != ';' && accept.p[i] != ' ')
            i++;
        struct http_span m = {accept.p + s, i - s};
        bool q0 = false;
        while (i < accept.n && accept.p[i] != ',') {
            if (accept.p[i] == ';') {
                size_t j = i + 1;
                while (j < accept.n && accept.p[j] == ' ')
                    j++;
                if (j + 1 < accept.n && (accept.p[j] == 'q' || accept.p[j] == 'Q') &&
                    accept.p[j + 1] == '=') {
                    size_t k = j + 2;
                    q0 = k < accept.n && accept.p[k] == '0';
                    for (k++; q0 && k < accept.n && accept.p[k] != ',' && accept.p[k] != ';'; k++)
                        if (accept.p[k] != '0' && accept.p[k] != '.' && accept.p[k] != ' ')
                            q0 = false;
                }
            }
            i++;
        }
        if (q0 || !m.n)
            continue;
        if (http_span_is(m, type) || http_span_is(m, "*/*"))
            return true;
        if (m.n == major + 2 && strncasecmp(m.p, type, major + 1) == 0 && m.p[major + 1] == '*')
            return true;
    }
    return false;
}
