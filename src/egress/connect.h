/*
 * connect — the egress proxy's parsers: the request head (CONNECT and
 * plain-HTTP absolute-form), the Proxy-Authorization check, host
 * normalization, the lockdown numeric-host test and the TLS ClientHello
 * SNI walk (docs/sandbox.md). The anti-SSRF address
 * classes live in policy/address.c, shared with the gateway.
 *
 * Why a separate unit: these functions see bytes chosen by a confined,
 * possibly hostile process. Keeping them pure (no I/O, no allocation except
 * the HTTP rewrite's strbuf) lets the fuzzer and the unit tests drive every
 * branch, and keeps the event loop free of parsing.
 *
 * Guarantees:
 *  - Every parser is bounded by its input length, never reads past it, never
 *    recurses, and reports malformed input as a value, never by crashing.
 *  - A host that passes sbx_host_normalize is lowercase ASCII, without a
 *    trailing dot, and is either LDH/underscore labels or a valid IPv6
 *    literal (brackets removed); anything else is refused, so a policy
 *    match can never be dodged by case, dots, percent-escapes or Unicode.
 *  - The token comparison is constant time in the presented value.
 *  - The SNI walk answers "verified" only for a ClientHello that fits
 *    exactly in the first TLS record; fragmentation, trailing bytes or any
 *    overrun is "unverifiable" (the proxy fails closed on it). Every entry
 *    of the server_name list is read and normalized; a second name that
 *    differs from the first is reported, never dropped.
 */
#ifndef AS_EGRESS_CONNECT_H
#define AS_EGRESS_CONNECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/strbuf.h"

#define SBX_HEAD_MAX 8192          /* request head cap (bytes, incl. CRLFCRLF) */
#define SBX_FLIGHT_MAX (16384 + 5) /* first flight cap: one full TLS record */
#define SBX_HOST_MAX 254           /* normalized host buffer (253 + NUL) */

enum sbx_req_kind {
    SBX_REQ_CONNECT = 1, /* CONNECT host:port HTTP/1.x */
    SBX_REQ_HTTP,        /* METHOD http://host[:port]/path HTTP/1.x (absolute-form) */
};

/* How a request's message body is delimited (RFC 9112 section 6). */
enum sbx_body_kind {
    SBX_BODY_NONE = 0, /* neither header: no body */
    SBX_BODY_LENGTH,   /* Content-Length: content_length bytes */
    SBX_BODY_CHUNKED,  /* Transfer-Encoding: chunked */
};

struct sbx_request {
    enum sbx_req_kind kind;
    enum sbx_body_kind body;
    uint64_t content_length;
    char method[24];
    char host[SBX_HOST_MAX + 2]; /* as written (not yet normalized), brackets removed */
    int host_bracketed;          /* authority was [v6] */
    int port;                    /* 1..65535 */
    size_t head_len;             /* bytes of the head including the final CRLFCRLF */
    /* HTTP only: the origin-form target ("/path?q"), offsets into the head. */
    size_t path_off, path_len;
    int http_minor; /* HTTP/1.<minor> */
};

/* Finds the end of a request head: returns the length including "\r\n\r\n",
 * or 0 when not yet complete. */
size_t sbx_head_end(const char *buf, size_t len);

/* Parses a complete head (len bytes ending in CRLFCRLF). Returns 0, or -1
 * with *why set to a short static reason (the proxy answers 400). Bare CR,
 * bare LF, NUL and other control bytes in any line are refused, so a
 * forwarded head can never smuggle a second request. The body's framing
 * must be unambiguous: a second Host, Content-Length and Transfer-Encoding
 * together, a second Content-Length or Transfer-Encoding, a Content-Length
 * that is not decimal digits, or a transfer coding other than `chunked` are
 * refused. */
int sbx_parse_head(const char *head, size_t len, struct sbx_request *req, const char **why);

/* 1 when some header line named Proxy-Authorization (any case) has the
 * trimmed value exactly `expected` (e.g. "Basic <b64>"); constant time in
 * the value compared. */
int sbx_head_auth_ok(const char *head, size_t len, const char *expected);

/* "Basic " + base64("agentstack:" + token) into out (NUL-terminated). */
void sbx_basic_auth_value(const char *token, strbuf *out);

/* Normalizes a host: one trailing '.' dropped,
 * ASCII-lowercased; refuses empty hosts, non-ASCII, and anything that is
 * neither LDH/underscore labels (each 1..63, total ≤ 253) nor, when
 * bracketed, a valid IPv6 literal. Returns 0 or -1 (non-canonical). */
int sbx_host_normalize(const char *in, int bracketed, char out[SBX_HOST_MAX]);

/* Lockdown's lexical literal-IP test, on a normalized host:
 * contains ':' , or 1–4 dot-separated parts each decimal or 0x-hex
 * ("2130706433", "0x7f000001", "0177.0.0.01", "127.1"). */
int sbx_host_is_numeric(const char *host);

/* Renders an address (without port) into buf. */
const char *sbx_addr_str(const struct sockaddr *sa, char *buf, size_t size);

enum sbx_tls {
    SBX_TLS_NEED_MORE = 0, /* the first record is not complete yet */
    SBX_TLS_NOT_TLS,       /* first byte is not a handshake record (0x16) */
    SBX_TLS_SNI,           /* a verified ClientHello with a server_name */
    SBX_TLS_NO_SNI,        /* a verified ClientHello without server_name */
    SBX_TLS_UNVERIFIABLE,  /* fragmented, truncated, trailing bytes, malformed */
};

struct sbx_hello {
    char sni[SBX_HOST_MAX]; /* normalized, when SBX_TLS_SNI: the list's first name */
    /* SBX_TLS_SNI: a later name of the server_name list that differs from
     * sni, or "" when every entry names the same host. */
    char sni_other[SBX_HOST_MAX];
    int has_ech;       /* extension 0xfe0d (ECH) or 0xffce (ESNI) present */
    size_t record_len; /* 5 + record length, once known */
};

/* Examines the first flight of a tunnel. With len < the first record it
 * returns NEED_MORE (or UNVERIFIABLE when the record header announces more
 * than 16 KiB). Only bytes of the first record are examined. */
enum sbx_tls sbx_tls_client_hello(const uint8_t *buf, size_t len, struct sbx_hello *out);

/* The end of one request's message, found in the bytes a client sends after
 * its head, so a plain-HTTP connection forwards exactly one request: what
 * follows the message (a pipelined second request) never reaches the
 * upstream. Chunked framing is parsed strictly (CRLF only, hex sizes of at
 * most 15 digits, chunk-ext and trailer lines without control bytes and
 * bounded in length). */
struct sbx_body {
    enum sbx_body_kind kind;
    uint64_t left; /* LENGTH: bytes to go; CHUNKED: of the current chunk */
    int st;        /* CHUNKED: parser state */
    unsigned digits;
    size_t line; /* bytes of the current chunk-ext or trailer line */
    size_t trailer;
};
void sbx_body_init(struct sbx_body *b, const struct sbx_request *req);
/* Feeds the next len bytes. Returns 1 when the message ends within them
 * (*take = how many belong to it), 0 when it continues past them (*take =
 * len), -1 when the chunked framing is malformed (*take = 0). Once it has
 * returned 1 or -1, it keeps answering the same with *take = 0. */
int sbx_body_feed(struct sbx_body *b, const char *buf, size_t len, size_t *take);

/* Builds the head forwarded upstream for a plain-HTTP request: origin-form
 * request line, Host set to the request's authority, Connection: close,
 * and Proxy-Authorization / Proxy-Connection / Connection / Keep-Alive /
 * Host headers removed. */
void sbx_http_rewrite(const char *head, const struct sbx_request *req, const char *norm_host,
                      strbuf *out);

#endif
