/*
 * mcp — moves MCP messages; knows nothing of trust, policy or manifests.
 *
 * Four layers, each usable alone:
 *  - messages: JSON-RPC 2.0 parse/validate/build over jansson. A line is
 *    classified as request, notification or response, or rejected with the
 *    JSON-RPC error reply it deserves (-32700 with "id": null for non-JSON,
 *    -32600 for JSON that is no valid message, -32700 naming the reason and
 *    carrying the id for JSON jansson cannot hold). Batches are refused.
 *  - framing: a newline-delimited reader with a per-line cap (a line over the
 *    cap is dropped whole, reported once, and the stream stays usable), and a
 *    writer that queues whole frames so two messages never interleave.
 *  - loop: one epoll loop with fd callbacks, monotonic timers and a
 *    thread-safe post; no thread per request or per upstream.
 *  - clients: upstream MCP servers over stdio (child in its own process
 *    group, stderr to a 0600 log rotated at 1 MiB) and Streamable HTTP (curl
 *    multi driven by the same loop). Every request has its own id and
 *    timeout; completion is a callback, never a blocking wait.
 *
 * Guarantees: no input (line, frame, HTTP body, SSE stream) can crash,
 * hang or grow memory past its cap; a callback is never invoked from inside
 * the API call that issued the request (errors found at once are delivered
 * through the loop); a failed or closed upstream completes every pending
 * request exactly once, and an answer that is JSON jansson cannot hold fails
 * the request it names at once; shutting a stdio client down kills its whole
 * process group, so no grandchild outlives it.
 */
#ifndef AS_MCP_MCP_H
#define AS_MCP_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <sys/socket.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strbuf.h"

/* ---- protocol constants ------------------------------------------------- */

#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)
#define MCP_UNSUPPORTED_VERSION (-32022)

#define MCP_STDIN_LINE_MAX ((size_t)4 << 20)      /* client -> gateway line cap */
#define MCP_UPSTREAM_FRAME_MAX ((size_t)16 << 20) /* upstream message cap */
#define MCP_STDERR_LOG_MAX ((size_t)1 << 20)      /* upstream stderr log rotation */

#define MCP_VERSION_MODERN "2026-07-28"  /* first stateless (per-request _meta) version */
#define MCP_VERSION_DEFAULT "2025-11-25" /* what our initialize sends */
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_INFO "io.modelcontextprotocol/clientInfo"

/* Protocol versions we know, newest first, NULL-terminated. */
extern const char *const mcp_versions[];
/* 1 when v is one of mcp_versions. */
int mcp_version_known(const char *v);
/* 1 when v is a YYYY-MM-DD version at or after MCP_VERSION_MODERN. */
int mcp_version_is_modern(const char *v);

/* ---- messages ------------------------------------------------------------ */

enum mcp_kind { MCP_REQUEST, MCP_NOTIFICATION, MCP_RESPONSE };

/* A parsed message. Every pointer borrows from root, which the message owns. */
struct mcp_msg {
    enum mcp_kind kind;
    json_t *root;
    json_t *id;         /* request/response; a response's id may be JSON null */
    const char *method; /* request/notification */
    json_t *params;     /* object or array, or NULL when absent */
    json_t *result;     /* response: exactly one of result/error is set */
    json_t *error;      /* response: {"code": int, "message": str, "data"?} */
};

enum mcp_parse_status {
    MCP_PARSED = 0, /* *m is filled */
    MCP_BLANK,      /* empty or whitespace-only line: skip, no reply */
    MCP_NOT_JSON,   /* *reply = -32700 "Parse error", "id": null */
    MCP_INVALID,    /* *reply = -32600 "Invalid request" (the id when one was readable) */
    MCP_UNREADABLE, /* well-formed JSON the parser cannot hold (json_unrepresentable):
                       *reply = -32700 "Parse error: <why>" with the id when readable,
                       or NULL for a notification or a response (they get no reply) */
};

/* Parses one line (no '\n'; a trailing '\r' and a leading UTF-8 BOM are
 * tolerated). Validates jsonrpc "2.0", id string|number, method string,
 * params object|array, a response's result-xor-error and error shape;
 * duplicate keys and batches are invalid. reply may be NULL; when set and the
 * status is NOT_JSON/INVALID it receives a new reference to the error reply. */
enum mcp_parse_status mcp_parse(const char *data, size_t len, struct mcp_msg *m, json_t **reply);
void mcp_msg_clear(struct mcp_msg *m);

/* What a line mcp_parse called MCP_UNREADABLE still says, read from the raw
 * bytes of its top-level members (so its sender can be answered, or its
 * request failed, instead of waiting for a timeout). Keys are matched
 * byte for byte; a repeated "id" or more than 256 members read as no id. */
struct mcp_unreadable {
    const char *why; /* e.g. "string contains \u0000 (NUL)" (static text) */
    json_t *id;      /* the top-level "id" when readable as string|number (owned), else NULL */
    int has_id;      /* an "id" member is there (readable or not) */
    int has_method;  /* a "method" member is there */
    int has_answer;  /* a "result" or "error" member is there */
};
/* 0 and *u filled when the line (BOM, '\r' and whitespace tolerated as by
 * mcp_parse) is well-formed JSON the parser cannot hold; -1 otherwise. */
int mcp_unreadable_read(const char *data, size_t len, struct mcp_unreadable *u);
void mcp_unreadable_clear(struct mcp_unreadable *u);

/* Builders. "stolen" arguments are owned by the new message. */
json_t *mcp_request_new(json_t *id /* stolen */, const char *method,
                        json_t *params /* stolen, may be NULL */);
json_t *mcp_notification_new(const char *method, json_t *params /* stolen, may be NULL */);
json_t *mcp_result_new(const json_t *id, json_t *result /* stolen */);
/* id NULL means JSON null; data stolen, may be NULL. */
json_t *mcp_error_new(const json_t *id, int code, const char *message, json_t *data);
/* Appends msg as one compact line (keys in insertion order, UTF-8 literal,
 * '/' unescaped) without the newline. */
void mcp_dump(const json_t *msg, strbuf *out);

/* ---- raw spans (rawjson.c) ------------------------------------------------ */

/* Forwarding an answer without a parse + dump round trip: a validator that
 * vouches for a line, then walkers that hand out byte spans of it.
 * mcp_raw_valid(s, n) is 1 only when s is one JSON object (JSON whitespace
 * around it allowed) that mcp_parse's parser accepts and whose raw bytes
 * carry exactly the values a parse + dump would: valid UTF-8, no duplicate
 * key at any depth, within conservative limits (depth <= MCP_RAW_DEPTH,
 * <= MCP_RAW_KEYS keys per object and 256 in all the objects open at one
 * point, keys without escapes, integers of at
 * most 18 digits and never -0, no reals, no \u0000, surrogate escapes
 * paired). 0 means "cannot vouch" (malformed, or merely unusual): the caller
 * takes the full parser, which stays the judge. Never reads past s + n. */
#define MCP_RAW_DEPTH 64
#define MCP_RAW_KEYS 64

struct mcp_span {
    const char *p; /* NULL = absent */
    size_t n;
};
struct mcp_member {
    struct mcp_span key; /* the key's bytes without quotes (never escaped) */
    struct mcp_span val; /* the value's bytes */
};

int mcp_raw_valid(const char *s, size_t n);
/* The members of an object (elements of an array) inside a span the
 * validator accepted, in order; -1 when it is no object (array) or has more
 * than max. Spans that were not vouched for give meaningless (but bounded)
 * results. */
int mcp_raw_members(struct mcp_span obj, struct mcp_member *out, size_t max);
int mcp_raw_elements(struct mcp_span arr, struct mcp_span *out, size_t max);
/* The value of key among n members, or a span with p NULL. */
struct mcp_span mcp_raw_get(const struct mcp_member *m, size_t n, const char *key);
/* 1 when v's bytes are exactly lit (e.g. "\"2.0\"", "true"). */
int mcp_raw_is(struct mcp_span v, const char *lit);
/* 1 when the line is a vouched-for success response: "jsonrpc": "2.0", a
 * positive integer id (*id), an object "result" (*result, a span of s),
 * and neither "method" nor "error". 0 otherwise (parse it fully). */
int mcp_raw_response(const char *s, size_t n, uint64_t *id, struct mcp_span *result);
/* The jansson tree of a span mcp_raw_valid accepted (or any value inside
 * one): the very values json_loadb would give, built without its lexer.
 * NULL only when out of memory. */
json_t *mcp_raw_tree(const char *s, size_t n);
/* Appends v in decimal, as jansson prints an integer (no printf). */
void mcp_json_int(long long v, strbuf *out);
/* Appends s (valid UTF-8, n bytes) as a JSON string: quotes, backslashes
 * and control characters escaped as jansson's dump escapes them. */
void mcp_json_str(const char *s, size_t n, strbuf *out);

/* ---- loop ---------------------------------------------------------------- */

struct mcp_loop;

enum { MCP_EV_IN = 1, MCP_EV_OUT = 2, MCP_EV_ERR = 4 /* error or hang-up */ };

typedef void (*mcp_fd_fn)(struct mcp_loop *loop, int fd, unsigned events, void *ctx);
typedef void (*mcp_timer_fn)(struct mcp_loop *loop, void *ctx);

struct mcp_loop *mcp_loop_new(struct as_err *err);
/* Frees the loop; registrations and timers still present are dropped. */
void mcp_loop_free(struct mcp_loop *loop);
/* Registers fd (one registration per fd) for events (MCP_EV_IN|MCP_EV_OUT,
 * or 0 for errors only). Safe to call from callbacks. */
int mcp_loop_add(struct mcp_loop *loop, int fd, unsigned events, mcp_fd_fn fn, void *ctx,
                 struct as_err *err);
int mcp_loop_mod(struct mcp_loop *loop, int fd, unsigned events);
/* Removes fd; a callback already queued for it in this round is not called. */
void mcp_loop_del(struct mcp_loop *loop, int fd);
/* One-shot timer after delay_ms (0 = next round). Returns an id > 0. */
uint64_t mcp_loop_timer(struct mcp_loop *loop, uint64_t delay_ms, mcp_timer_fn fn, void *ctx);
/* Cancels a pending timer; unknown or fired ids are ignored. */
void mcp_loop_timer_cancel(struct mcp_loop *loop, uint64_t id);
/* Thread-safe: runs fn(loop, ctx) on the loop's thread in its next round. */
void mcp_loop_post(struct mcp_loop *loop, mcp_timer_fn fn, void *ctx);
/* One round: waits up to max_wait_ms (-1 = until something happens), then
 * runs due fd callbacks, timers and posts. Returns 0, or -1 + err. */
int mcp_loop_run_once(struct mcp_loop *loop, int max_wait_ms, struct as_err *err);
/* Lets a wait poll without sleeping for up to us microseconds when the
 * previous wait ended within that time (see loop.c); 0 turns it off, as
 * do fewer than two usable CPUs. Off by default. */
void mcp_loop_set_spin(struct mcp_loop *loop, unsigned us);
/* How many waits began with a spin, how many of those found work, and the
 * budget the latest spin was given (never past max_wait_ms or a timer). */
void mcp_loop_spin_stats(const struct mcp_loop *loop, uint64_t *spins, uint64_t *hits,
                         uint64_t *last_budget_us);
/* Rounds until mcp_loop_stop(). */
int mcp_loop_run(struct mcp_loop *loop, struct as_err *err);
void mcp_loop_stop(struct mcp_loop *loop);
/* Monotonic milliseconds. */
uint64_t mcp_now_ms(void);

/* ---- framing ------------------------------------------------------------- */

/* Streaming scanner that finds the top-level "id" of a message too large to
 * keep, so the request it answers can be failed instead of timing out. */
struct mcp_idsniff {
    int depth;
    unsigned char in_str, esc, want; /* want: 0 key, 1 value (depth 1 only) */
    unsigned char cap;               /* 1 capturing key, 2 string id, 3 number id */
    unsigned char key_is_id, found, bad;
    char buf[80];
    size_t len;
};

enum mcp_line_kind { MCP_LINE, MCP_LINE_OVERSIZE };
/* A complete line (without '\n' and a trailing '\r'), or an oversized line
 * that was dropped (data NULL, len = its full length, id = its top-level
 * "id" when one could be read, else NULL; borrowed). */
typedef void (*mcp_line_fn)(void *ctx, enum mcp_line_kind kind, const char *data, size_t len,
                            const json_t *id);

struct mcp_reader {
    strbuf buf;
    size_t cap; /* longest accepted line, bytes without '\n' */
    int discarding;
    size_t dropped;
    struct mcp_idsniff sniff;
};

void mcp_reader_init(struct mcp_reader *r, size_t cap);
void mcp_reader_release(struct mcp_reader *r);
/* Splits data into lines and calls fn for each. */
void mcp_reader_feed(struct mcp_reader *r, const char *data, size_t n, mcp_line_fn fn, void *ctx);
/* At end of stream: delivers a final unterminated line, if any. */
void mcp_reader_finish(struct mcp_reader *r, mcp_line_fn fn, void *ctx);

enum mcp_read_status { MCP_READ_AGAIN = 0, MCP_READ_EOF = 1, MCP_READ_ERROR = -1 };
/* Reads what a (non-blocking) fd has, up to a fairness budget, feeding fn.
 * EOF also calls mcp_reader_finish. ERROR leaves errno set. */
enum mcp_read_status mcp_reader_read(struct mcp_reader *r, int fd, mcp_line_fn fn, void *ctx);

/* Queues whole frames and writes them when fd is writable; frames never
 * interleave because one buffer is written strictly in order. The fd must
 * not be registered in the loop by anyone else (use separate read/write fds
 * for pipes). Writes never raise SIGPIPE; EPIPE is reported through
 * on_error, called from the loop, never from inside mcp_writer_send. How a
 * write avoids SIGPIPE is decided once, at init: send(MSG_NOSIGNAL) on a
 * socket; a plain write(2) when the process already ignores SIGPIPE (the
 * gateway does; code that restores SIGPIPE's default later must init its
 * writers after that); else SIGPIPE is held back around each write for the
 * calling thread only. */
struct mcp_writer {
    struct mcp_loop *loop;
    int fd;
    int how; /* 0 guarded write, 1 plain write (SIGPIPE ignored), 2 send(MSG_NOSIGNAL) */
    strbuf q;
    size_t off;
    int registered;
    int failed;
    uint64_t err_timer;
    void (*on_error)(void *ctx, int errnum);
    void *ctx;
    /* A sink writer (mcp_writer_init_sink) hands each frame to sink instead
     * of an fd: an in-process transport (the gateway's HTTP sessions). */
    void (*sink)(void *ctx, const char *frame, size_t len);
};

void mcp_writer_init(struct mcp_writer *w, struct mcp_loop *loop, int fd,
                     void (*on_error)(void *ctx, int errnum), void *ctx);
/* A writer with no fd: every frame (without '\n') goes to sink at once,
 * in order; nothing is queued and nothing ever fails. */
void mcp_writer_init_sink(struct mcp_writer *w,
                          void (*sink)(void *ctx, const char *frame, size_t len), void *ctx);
/* Unregisters and frees the queue; does not close fd. */
void mcp_writer_release(struct mcp_writer *w);
/* Queues frame + '\n' and writes what it can now. -1 when the frame holds a
 * '\n' or the writer has failed. */
int mcp_writer_send(struct mcp_writer *w, const char *frame, size_t len);
int mcp_writer_send_json(struct mcp_writer *w, const json_t *msg);
/* Bytes queued and not yet written. */
size_t mcp_writer_pending(const struct mcp_writer *w);

/* ---- upstream clients ------------------------------------------------------ */

struct mcp_client;

enum mcp_status {
    MCP_OK = 0,
    MCP_E_RPC,       /* the server answered with a JSON-RPC error: reply.error */
    MCP_E_TIMEOUT,   /* no answer within the request's budget (the child is kept) */
    MCP_E_TRANSPORT, /* EOF, EPIPE, exit, connection lost */
    MCP_E_SPAWN,     /* the server could not be started */
    MCP_E_HTTP,      /* HTTP-level failure (status, connect, TLS) */
    MCP_E_PROTOCOL,  /* a malformed or missing answer, a failed handshake */
    MCP_E_TOO_LARGE, /* the answer exceeded the frame cap */
    MCP_E_CANCELLED, /* mcp_client_cancel */
    MCP_E_CLOSED,    /* not started, or shut down */
    MCP_E_REFUSED,   /* the address check refused every address (message: its reason) */
};
const char *mcp_status_name(enum mcp_status s);

struct mcp_reply {
    enum mcp_status status;
    json_t *result;      /* MCP_OK: borrowed for the callback (json_incref to keep) */
    json_t *error;       /* MCP_E_RPC: borrowed error object */
    const char *message; /* one line, never NULL; never upstream-authored text, a URL or
                            a header (spawn failures name argv[0]) */
    long http_status;    /* MCP_E_HTTP: the status, or 0 when no response */
    /* MCP_OK on a request made with mcp_client_call_tool_raw, when the
     * answer was vouched for by mcp_raw_response: result is NULL and these
     * are the bytes of the "result" object (borrowed for the callback). */
    const char *raw;
    size_t raw_len;
};
typedef void (*mcp_reply_fn)(void *ctx, const struct mcp_reply *r);
/* A notification from the server (method, params may be NULL). */
typedef void (*mcp_notify_fn)(void *ctx, const char *method, json_t *params);

enum mcp_handshake {
    MCP_HS_INITIALIZE, /* initialize + notifications/initialized */
    MCP_HS_DISCOVER,   /* server/discover first; an error reply falls back to
                          initialize on the same connection; so does silence
                          for discover_silence_ms, but discover stays pending
                          and the first of the two answers decides */
};

struct mcp_client_opts {
    const char *client_name;      /* default "agentstack-gateway" */
    const char *client_version;   /* default "0.1.0" */
    const char *protocol_version; /* sent in initialize; default MCP_VERSION_DEFAULT */
    enum mcp_handshake handshake;
    int start_timeout_ms;    /* spawn + handshake budget; default 10000 */
    int discover_silence_ms; /* default 1500 */
    int kill_grace_ms;       /* shutdown after a transport failure; default 3000 */
    size_t max_frame;        /* default MCP_UPSTREAM_FRAME_MAX */
    mcp_notify_fn on_notification;
    void *notify_ctx;
};

struct proc;

struct mcp_stdio_opts {
    const char *const *argv; /* argv[0] looked up in PATH when it has no '/' */
    const char *const *envp; /* NULL = inherit; copied and zeroed on free */
    const char *cwd;         /* NULL = inherit */
    const char *stderr_log;  /* 0600 file (parent made 0700), rotated to .1; NULL = discard */
    size_t stderr_log_max;   /* default MCP_STDERR_LOG_MAX */
    /* Starts the child instead of proc_start (a confined server: the caller
     * knows how): fills p->pid and p->to_child, from_child, err_from_child
     * as proc_start would, the pid being one whose process group ends the
     * whole child; *hold gets a descriptor to keep open for as long as the
     * child lives (closed once it is reaped), or -1. -1 + err when it could
     * not start (nothing runs). NULL: proc_start with argv, envp and cwd. */
    int (*spawn)(void *ctx, struct proc *p, int *hold, struct as_err *err);
    void *spawn_ctx;
};

/* Rules on one address a direct HTTP connection is about to be made to:
 * 1 connects, 0 refuses it with why (our own text; it becomes the reply's
 * message when no address is left). */
typedef int (*mcp_addr_check_fn)(void *ctx, const struct sockaddr *sa, char *why, size_t whysz);

struct mcp_http_opts {
    const char *url;
    const char *const *headers; /* "Name: value", NULL-terminated; copied and zeroed on free */
    int connect_timeout_ms;     /* default 5000 */
    /* Called with the exact address of every direct connection, just before
     * it is made (NULL = none). A proxy named by the environment
     * (http_proxy, HTTPS_PROXY, ALL_PROXY, minus NO_PROXY) is used as libcurl
     * would, decided once here so libcurl cannot decide otherwise; through
     * it the proxy resolves the name, and the check is not called. */
    mcp_addr_check_fn addr_check;
    void *addr_ctx;
    /* Called before every request (NULL = none): appends the request's
     * "Authorization: ..." line and returns 0, or returns -1 with why (no
     * secret in it), and the request fails with that message. auth_refused
     * is called when the server answers such a request with 401. */
    int (*auth)(void *ctx, strbuf *line, char *why, size_t whysz);
    void (*auth_refused)(void *ctx);
    void *auth_ctx;
};

/* Creates a client; nothing is spawned or contacted until mcp_client_start.
 * Option strings are copied. NULL opts = defaults. */
struct mcp_client *mcp_client_stdio(struct mcp_loop *loop, const struct mcp_stdio_opts *so,
                                    const struct mcp_client_opts *o);
struct mcp_client *mcp_client_http(struct mcp_loop *loop, const struct mcp_http_opts *ho,
                                   const struct mcp_client_opts *o);

enum mcp_client_state {
    MCP_ST_IDLE,     /* never started */
    MCP_ST_STARTING, /* spawned/connecting, handshake in flight */
    MCP_ST_READY,
    MCP_ST_DEAD, /* handshake or transport failed; start() again respawns */
    MCP_ST_CLOSING,
    MCP_ST_CLOSED,
};
enum mcp_client_state mcp_client_state(const struct mcp_client *c);

/* Spawns/connects and runs the handshake; cb(ctx, reply) when done (result =
 * the initialize or discover result). Allowed from IDLE and DEAD. Requests
 * issued while STARTING wait for the handshake and fail with its error. */
int mcp_client_start(struct mcp_client *c, mcp_reply_fn cb, void *ctx, struct as_err *err);

/* Sends method(params) with a fresh id and a timeout (<= 0: 60000 ms).
 * Returns a handle > 0 for mcp_client_cancel. params stolen (NULL = {}).
 * In the modern era the required _meta keys are added. */
uint64_t mcp_client_request(struct mcp_client *c, const char *method, json_t *params,
                            int timeout_ms, mcp_reply_fn cb, void *ctx);
/* tools/call {name, arguments}; arguments borrowed (NULL = {}). */
uint64_t mcp_client_call_tool(struct mcp_client *c, const char *name, const json_t *arguments,
                              int timeout_ms, mcp_reply_fn cb, void *ctx);
/* mcp_client_call_tool for a caller that forwards the answer: a plain
 * success may arrive raw (see struct mcp_reply: result NULL, raw set), any
 * other answer arrives as mcp_client_call_tool's would. Over stdio, outside
 * the stateless era, the request itself is written straight from name and
 * the dumped arguments, without a message tree. */
uint64_t mcp_client_call_tool_raw(struct mcp_client *c, const char *name, const json_t *arguments,
                                  int timeout_ms, mcp_reply_fn cb, void *ctx);
/* tools/list following nextCursor under one deadline; the result is
 * {"tools": [...]} with every page's tools, stopping (with "truncated": true)
 * at max_tools tools or max_pages pages or a repeated cursor (<= 0: 1000/100). */
void mcp_client_list_tools(struct mcp_client *c, int timeout_ms, int max_tools, int max_pages,
                           mcp_reply_fn cb, void *ctx);
/* Sends a notification; -1 + err unless READY. params stolen. */
int mcp_client_notify(struct mcp_client *c, const char *method, json_t *params, struct as_err *err);
/* Cancels a request: notifications/cancelled goes upstream when it was sent;
 * the callback gets MCP_E_CANCELLED; a late answer is dropped. */
void mcp_client_cancel(struct mcp_client *c, uint64_t handle, const char *reason);

/* Stops the upstream: pending requests fail with MCP_E_CLOSED; stdio closes
 * stdin, waits grace_ms/2, SIGTERMs the group, SIGKILLs it at grace_ms (and
 * always kills what is left of the group once the leader exits); HTTP ends
 * the session (DELETE). cb (may be NULL) runs once it is all gone. */
void mcp_client_shutdown(struct mcp_client *c, int grace_ms, mcp_reply_fn cb, void *ctx);
/* Frees the client; a live child group is SIGKILLed and reaped first.
 * Safe from inside the client's own callbacks (deferred until they return). */
void mcp_client_free(struct mcp_client *c);

/* After the handshake: the negotiated protocol version, whether requests use
 * the stateless modern era, and the server's initialize/discover result. */
const char *mcp_client_protocol_version(const struct mcp_client *c);
int mcp_client_is_modern(const struct mcp_client *c);
const json_t *mcp_client_server_result(const struct mcp_client *c);
/* stdio: the first 4 KiB the server wrote to stderr (diagnostics only). */
const char *mcp_client_stderr_head(const struct mcp_client *c, size_t *len);
/* stdio: the last child's pid (0 if none) and exit status (-1 while running;
 * 128+n for a signal). */
long mcp_client_pid(const struct mcp_client *c);
int mcp_client_exit_status(const struct mcp_client *c);
/* HTTP: the Mcp-Session-Id the server assigned, or NULL. */
const char *mcp_client_session_id(const struct mcp_client *c);

/* ---- revision compatibility (compat.c) ----------------------------------- */

/* Rewrites result's "content" blocks whose type the client's negotiated
 * revision does not define (resource_link before 2025-06-18, audio before
 * 2025-03-26) into text blocks naming what was dropped (type, name, uri,
 * mimeType, data size; upstream strings cut to one bounded line). The
 * content array is replaced, never edited, so a shared one stays intact.
 * NULL or unknown versions change nothing. Returns the blocks rewritten. */
int mcp_result_for_version(json_t *result, const char *version);
/* The raw twin of the check above: 1 when mcp_result_for_version would
 * leave a result whose "content" value is the (vouched-for) span content
 * untouched (content.p NULL: no content), 0 when it would rewrite a block or
 * a block's type cannot be judged without decoding it. */
int mcp_raw_content_unchanged(struct mcp_span content, const char *version);

/* Cleans untrusted text for a client: one line, at most max characters. */
typedef void (*mcp_line_clean_fn)(const char *s, size_t max, strbuf *out);
/* Cleans an untrusted JSON schema; returns a new value. */
typedef json_t *(*mcp_schema_clean_fn)(const json_t *schema);

/* The optional metadata of an upstream tool (tools/list entry) worth
 * passing on, as a new object: "title" and annotations' "title" through
 * line(max), annotations' four boolean hints, an object-typed
 * "outputSchema" through schema. Anything malformed is left out. */
json_t *mcp_tool_extras(const json_t *tool, mcp_line_clean_fn line, size_t max,
                        mcp_schema_clean_fn schema);
/* Copies into tool the extras the client's revision defines: annotations
 * from 2025-03-26, title and outputSchema from 2025-06-18. NULL or unknown
 * versions add nothing. */
void mcp_tool_for_version(json_t *tool, const json_t *extras, const char *version);

#endif
