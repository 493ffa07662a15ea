/*
 * Internal to gateway/: the HTTP/1.1 request head parser of `agentstack mcp
 * --listen` (docs/gateway.md, "Serving over HTTP").
 *
 * Why its own file: every byte here comes from a socket before anything is
 * authenticated, so the parser is small, strict and tested alone
 * (tests/unit/gateway/test_http_parse.c), apart from the server's state.
 *
 * Guarantees:
 *  - A head is accepted only whole: a request line `METHOD SP /target SP
 *    HTTP/1.0|1.1`, then header fields, every line ended by CRLF, then an
 *    empty line, within HTTP_HEAD_MAX bytes and HTTP_FIELDS_MAX fields.
 *  - Anything two parsers could read two ways is refused, never guessed
 *    at: a bare CR or LF, a folded (obs-fold) line, whitespace before a
 *    field's colon, a name that is not a token, a control byte in a value,
 *    any Transfer-Encoding, a Content-Length that is not plain digits or
 *    appears twice, and a second copy of any field the server reads
 *    (Authorization, Host, Origin, Content-Type, Accept, Mcp-Session-Id,
 *    MCP-Protocol-Version, Last-Event-ID, Connection).
 *  - A refusal carries the status to answer (400, 413, 431, 501, 505) and
 *    a short reason; nothing is allocated on any path.
 */
#ifndef AS_GATEWAY_HTTP_PARSE_H
#define AS_GATEWAY_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_HEAD_MAX 16384      /* request line + fields + CRLF CRLF */
#define HTTP_FIELDS_MAX 64       /* header fields per request */
#define HTTP_BODY_MAX (4u << 20) /* a POST body: the stdio line limit */

struct http_span {
    const char *p; /* into the caller's buffer; NULL when absent */
    size_t n;
};

struct http_req {
    struct http_span method, target;
    int minor;                /* HTTP/1.<minor> */
    size_t head_len;          /* bytes of the head, the final CRLF CRLF included */
    long long content_length; /* -1 when absent */
    bool keep_alive;
    /* the fields the server reads (each at most once) */
    struct http_span authorization, host, origin, content_type, accept, session_id,
        protocol_version, last_event_id;
    size_t fields;
};

enum http_parse_rc {
    HTTP_PARSE_MORE = 0,  /* no complete head yet (and not over the limit) */
    HTTP_PARSE_DONE = 1,  /* r filled */
    HTTP_PARSE_ERROR = -1 /* *status and *why set */
};

/* Parses the head at the start of buf[0..len). */
enum http_parse_rc http_parse_head(const char *buf, size_t len, struct http_req *r, int *status,
                                   const char **why);

/* Case-insensitive: does span equal lit? */
bool http_span_is(struct http_span s, const char *lit);
/* Does a comma-separated media-range list (Accept) name type (or a
 * matching wildcard)? Parameters (;q=…) are ignored except q=0. */
bool http_accepts(struct http_span accept, const char *type);

#endif
