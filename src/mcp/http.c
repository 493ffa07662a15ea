/*
 * Upstream Streamable HTTP transport — see mcp.h. Every message is one POST
 * through a curl multi handle driven by the mcp loop (no thread). Replies
 * come back as application/json or as a text/event-stream whose events are
 * dispatched while the stream is still open, so a server->client ping in
 * the middle of a call is answered. Curl callbacks only collect bytes: the
 * client is entered only after curl returns, because curl forbids touching
 * its handles from inside its own callbacks.
 *
 * libcurl is reached only through mcp_curl_load (curl_dl.h): it is loaded
 * when an HTTP upstream first starts, so no other command pays for it, and
 * a machine without it loses only its HTTP upstreams, each with an error
 * saying what to install.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/url.h"
#include "base/vec.h"
#include "base/xalloc.h"
#include "mcp/client_int.h"
#include "mcp/curl_dl.h"

struct http_tr;

struct xfer {
    struct http_tr *tr;
    CURL *easy;
    uint64_t id; /* request id, 0 for notifications, replies and DELETE */
    int is_delete;
    int had_session; /* sent with an Mcp-Session-Id */
    struct curl_slist *hdrs;
    char *body;
    strbuf resp;
    int sse;
    int too_large;
    strbuf line, data, event; /* SSE parser */
    strvec frames;            /* complete messages waiting for dispatch */
    size_t frame_i;
    int busy, aborted;
    char errbuf[CURL_ERROR_SIZE];
    char refused[300]; /* the address check's first refusal, or "" */
    struct xfer *next;
};

struct http_tr {
    struct mcp_client *c;
    const struct mcp_curl *cu; /* set with multi, at the first successful open */
    CURLM *multi;
    uint64_t timer;
    char *url;
    char **headers;
    int connect_timeout_ms;
    char *proxy; /* from the environment, or "" (a direct connection) */
    mcp_addr_check_fn addr_check;
    void *addr_ctx;
    int (*auth)(void *ctx, strbuf *line, char *why, size_t whysz);
    void (*auth_refused)(void *ctx);
    void *auth_ctx;
    char auth_why[400]; /* the last auth refusal, for the request it failed */
    struct xfer *xfers;
    int closing;
    uint64_t close_timer;
};

static void xfer_free(struct xfer *x)
{
    const struct mcp_curl *cu = x->tr->cu;
    if (x->easy)
        cu->easy_cleanup(x->easy);
    cu->slist_free_all(x->hdrs); /* holds header values: may be secrets */
    free(x->body);
    sb_release(&x->resp);
    sb_release(&x->line);
    sb_release(&x->data);
    sb_release(&x->event);
    strvec_clear(&x->frames);
    free(x);
}

static void xfer_unlink(struct http_tr *tr, struct xfer *x)
{
    for (struct xfer **pp = &tr->xfers; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            return;
        }
}

/* Stops a transfer now; frees it unless a dispatch is walking it. */
static void xfer_abort(struct http_tr *tr, struct xfer *x)
{
    xfer_unlink(tr, x);
    if (x->easy)
        tr->cu->multi_remove_handle(tr->multi, x->easy);
    if (x->busy)
        x->aborted = 1;
    else
        xfer_free(x);
}

/* ---- SSE ---- */

static void sse_dispatch_event(struct xfer *x)
{
    if (x->data.len && (!x->event.len || strcmp(x->event.buf, "message") == 0)) {
        if (x->data.buf[x->data.len - 1] == '\n')
            sb_setlen(&x->data, x->data.len - 1);
        strvec_push(&x->frames, x->data.buf);
    }
    sb_reset(&x->data);
    sb_reset(&x->event);
}

static void sse_line(struct xfer *x, const char *l, size_t n, size_t cap)
{
    if (n && l[n - 1] == '\r')
        n--;
    if (n == 0) {
        sse_dispatch_event(x);
        return;
    }
    if (l[0] == ':')
        return; /* comment / keep-alive */
    const char *colon = memchr(l, ':', n);
    size_t flen = colon ? (size_t)(colon - l) : n;
    const char *v = colon ? colon + 1 : l + n;
    size_t vlen = (size_t)(l + n - v);
    if (vlen && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(l, "data", 4) == 0) {
        if (x->data.len + vlen + 1 > cap) {
            x->too_large = 1;
            return;
        }
        sb_add(&x->data, v, vlen);
        sb_addc(&x->data, '\n');
    } else if (flen == 5 && memcmp(l, "event", 5) == 0) {
        sb_reset(&x->event);
        sb_add(&x->event, v, vlen < 64 ? vlen : 64);
    }
}

static void sse_feed(struct xfer *x, const char *p, size_t n, size_t cap)
{
    while (n && !x->too_large) {
        const char *nl = memchr(p, '\n', n);
        size_t k = nl ? (size_t)(nl - p) : n;
        if (x->line.len + k > cap) {
            x->too_large = 1;
            return;
        }
        if (nl && !x->line.len) {
            sse_line(x, p, k, cap);
        } else {
            sb_add(&x->line, p, k);
            if (nl) {
                sse_line(x, x->line.buf, x->line.len, cap);
                sb_reset(&x->line);
            }
        }
        if (!nl)
            return;
        p = nl + 1;
        n -= k + 1;
    }
}

/* ---- curl callbacks: collect only ---- */

static size_t header_cb(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    if (n >= 5 && strncasecmp(p, "HTTP/", 5) == 0) {
        x->sse = 0; /* a new response (after 100 Continue) starts over */
        return n;
    }
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return n;
    size_t nlen = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vlen = (size_t)(p + n - v);
    while (vlen && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (nlen == 12 && strncasecmp(p, "content-type", 12) == 0) {
        x->sse = vlen >= 17 && strncasecmp(v, "text/event-stream", 17) == 0;
    } else if (nlen == 14 && strncasecmp(p, "mcp-session-id", 14) == 0 && vlen && vlen < 256) {
        struct mcp_client *c = x->tr->c;
        int ok = 1;
        for (size_t i = 0; i < vlen; i++)
            if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
                ok = 0; /* the MCP spec allows visible ASCII only */
        if (ok && !x->is_delete) {
            free(c->session_id);
            c->session_id = xstrndup(v, vlen);
        }
    }
    return n;
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    size_t cap = x->tr->c->max_frame;
    if (x->sse) {
        sse_feed(x, p, n, cap);
    } else if (x->resp.len + n > cap) {
        x->too_large = 1;
    } else {
        sb_add(&x->resp, p, n);
    }
    return x->too_large ? 0 : n; /* 0 aborts the transfer */
}

static void loop_sock_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx);
static void process(struct http_tr *tr);

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    (void)socketp;
    struct http_tr *tr = userp;
    struct mcp_loop *loop = tr->c->loop;
    if (what == CURL_POLL_REMOVE) {
        mcp_loop_del(loop, s);
        return 0;
    }
    unsigned ev = 0;
    if (what & CURL_POLL_IN)
        ev |= MCP_EV_IN;
    if (what & CURL_POLL_OUT)
        ev |= MCP_EV_OUT;
    if (mcp_loop_mod(loop, s, ev) < 0) {
        struct as_err err = AS_ERR_INIT;
        if (mcp_loop_add(loop, s, ev, loop_sock_cb, tr, &err) < 0)
            return -1;
    }
    return 0;
}

static void loop_timer_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct http_tr *tr = ctx;
    tr->timer = 0;
    struct mcp_client *c = tr->c;
    mcp__enter(c);
    int running;
    tr->cu->multi_socket_action(tr->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    process(tr);
    mcp__leave(c);
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    struct http_tr *tr = userp;
    struct mcp_loop *loop = tr->c->loop;
    mcp_loop_timer_cancel(loop, tr->timer);
    tr->timer = 0;
    if (timeout_ms >= 0)
        tr->timer = mcp_loop_timer(loop, (uint64_t)timeout_ms, loop_timer_cb, tr);
    return 0;
}

static void loop_sock_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)loop;
    struct http_tr *tr = ctx;
    int flags = 0;
    if (events & MCP_EV_IN)
        flags |= CURL_CSELECT_IN;
    if (events & MCP_EV_OUT)
        flags |= CURL_CSELECT_OUT;
    if (events & MCP_EV_ERR)
        flags |= CURL_CSELECT_ERR;
    struct mcp_client *c = tr->c;
    mcp__enter(c);
    int running;
    tr->cu->multi_socket_action(tr->multi, fd, flags, &running);
    process(tr);
    mcp__leave(c);
}

/* ---- dispatch, outside curl ---- */

static void dispatch_frames(struct http_tr *tr, struct xfer *x)
{
    struct mcp_client *c = tr->c;
    x->busy++;
    while (x->frame_i < x->frames.n && !x->aborted && !c->doomed) {
        const char *f = x->frames.v[x->frame_i++];
        mcp__on_line(c, f, strlen(f));
    }
    strvec_clear(&x->frames);
    x->frame_i = 0;
    x->busy--;
}

static void body_to_frames(struct xfer *x)
{
    if (!x->resp.len)
        return;
    json_error_t je;
    json_t *v = json_loadb(x->resp.buf, x->resp.len, 0, &je);
    if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            strbuf sb = SB_INIT;
            mcp_dump(m, &sb);
            strvec_push(&x->frames, sb.buf);
            sb_release(&sb);
        }
    } else {
        strvec_push(&x->frames, x->resp.buf);
    }
    if (v)
        json_decref(v);
}

/* The server no longer knows the session this transfer carried: 404 is the
 * spec's answer, but servers built on the TypeScript SDK's examples (server-
 * everything among them) answer 400 naming the session instead. */
static int session_lost(const struct xfer *x, long status)
{
    if (!x->had_session || x->is_delete)
        return 0;
    if (status == 404)
        return 1;
    return status == 400 && !x->sse && x->resp.len && strcasestr(x->resp.buf, "session");
}

/* Failures that say the server process is gone; a timeout is not one of
 * them (the server may just be slow). */
static int connection_lost(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
           rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR;
}

static void finish_xfer(struct http_tr *tr, struct xfer *x, CURLcode rc)
{
    struct mcp_client *c = tr->c;
    long status = 0;
    tr->cu->easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    xfer_unlink(tr, x);
    tr->cu->multi_remove_handle(tr->multi, x->easy);
    int lost = rc == CURLE_OK && session_lost(x, status);
    if (x->sse && x->data.len && !x->too_large)
        sse_dispatch_event(x); /* a stream may end without the final blank line */
    if (!x->sse && !x->too_large && !lost)
        body_to_frames(x); /* a lost session's error body would hide the HTTP status */
    dispatch_frames(tr, x);
    if (x->is_delete) {
        xfer_free(x);
        if (tr->closing && tr->close_timer) {
            mcp_loop_timer_cancel(c->loop, tr->close_timer);
            tr->close_timer = 0;
            mcp__closed(c);
        }
        return;
    }
    if (rc == CURLE_OK && status == 401 && tr->auth_refused)
        tr->auth_refused(tr->auth_ctx);
    if (x->id && mcp__pending(c, x->id)) {
        char msg[320];
        enum mcp_status st;
        if (x->too_large) {
            st = MCP_E_TOO_LARGE;
            snprintf(msg, sizeof msg, "the answer exceeds the %zu-byte frame limit", c->max_frame);
        } else if (x->refused[0] && rc == CURLE_COULDNT_CONNECT) {
            st = MCP_E_REFUSED; /* no address the check admitted */
            snprintf(msg, sizeof msg, "%s", x->refused);
        } else if (rc == CURLE_OPERATION_TIMEDOUT) {
            st = MCP_E_TIMEOUT;
            snprintf(msg, sizeof msg, "HTTP request timed out");
        } else if (rc != CURLE_OK) {
            st = MCP_E_HTTP;
            snprintf(msg, sizeof msg, "HTTP request failed: %s", tr->cu->easy_strerror(rc));
        } else if (status >= 300) {
            st = MCP_E_HTTP;
            snprintf(msg, sizeof msg, "HTTP %ld%s", status,
                     lost ? " (the server no longer knows the session)" : "");
        } else {
            st = MCP_E_PROTOCOL;
            snprintf(msg, sizeof msg, "the HTTP response carried no answer (HTTP %ld)", status);
        }
        mcp__request_failed(c, x->id, st, msg, st == MCP_E_HTTP ? status : 0);
    }
    xfer_free(x);
    if ((lost || connection_lost(rc)) && !c->doomed && c->state == MCP_ST_READY) {
        /* The session (or the server that held it) is gone: like a stdio
         * upstream that exited, the client goes DEAD so the next start
         * begins a new session with initialize. The call that found out has
         * had its answer; the others in flight on the old session fail now. */
        free(c->session_id);
        c->session_id = NULL;
        mcp__transport_failed(c, MCP_E_HTTP,
                              lost ? "the server no longer knows the session"
                                   : "the connection to the server was lost");
    }
}

static void process(struct http_tr *tr)
{
    /* Streamed events first, then finished transfers. A dispatch may add or
     * abort transfers, so restart the walk after each one. */
    for (int again = 1; again && !tr->c->doomed;) {
        again = 0;
        for (struct xfer *x = tr->xfers; x; x = x->next) {
            if (x->frames.n) {
                dispatch_frames(tr, x);
                if (x->aborted) {
                    if (!x->busy)
                        xfer_free(x);
                }
                again = 1;
                break;
            }
        }
    }
    CURLMsg *m;
    int left;
    while ((m = tr->cu->multi_info_read(tr->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct xfer *x = NULL;
        tr->cu->easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        if (x)
            finish_xfer(tr, x, m->data.result);
    }
}

/* ---- the proxy from the environment, decided once ---- */

static const char *env2(const char *lower, const char *upper)
{
    const char *v = getenv(lower);
    if ((!v || !*v) && upper)
        v = getenv(upper);
    return v && *v ? v : NULL;
}

/* host of url (lowercased, brackets kept off, a final dot dropped), for
 * NO_PROXY; "" when it cannot be read one way only (base/url.h). */
static void url_hostname(const char *url, char *out, size_t n)
{
    out[0] = '\0';
    struct url_authority a;
    const char *why;
    size_t h;
    if (url_authority(url, &a, &why) < 0 || (h = strlen(a.host)) >= n)
        return;
    for (size_t i = 0; i < h; i++)
        out[i] = (char)((a.host[i] >= 'A' && a.host[i] <= 'Z') ? a.host[i] + 32 : a.host[i]);
    out[h] = '\0';
    if (h && out[h - 1] == '.')
        out[h - 1] = '\0';
}

/* NO_PROXY as libcurl reads it: "*", or names matching the host or a
 * parent domain (a leading '.' optional), separated by ',' or spaces. */
static int no_proxy_match(const char *list, const char *host)
{
    size_t hl = strlen(host);
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, ", \t");
        if (!n)
            break;
        const char *e = p;
        size_t en = n;
        if (en == 1 && *e == '*')
            return 1;
        if (*e == '.') {
            e++;
            en--;
        }
        if (en && e[en - 1] == '.')
            en--;
        if (en && hl >= en && strncasecmp(host + hl - en, e, en) == 0 &&
            (hl == en || host[hl - en - 1] == '.'))
            return 1;
        p += n;
    }
    return 0;
}

static char *env_proxy(const char *url)
{
    const char *v = NULL;
    if (strncasecmp(url, "https://", 8) == 0)
        v = env2("https_proxy", "HTTPS_PROXY");
    else if (strncasecmp(url, "http://", 7) == 0)
        v = env2("http_proxy", NULL); /* libcurl ignores HTTP_PROXY (httpoxy) */
    if (!v)
        v = env2("all_proxy", "ALL_PROXY");
    if (!v)
        return xstrdup("");
    const char *np = env2("no_proxy", "NO_PROXY");
    char host[256];
    url_hostname(url, host, sizeof host);
    if (np && host[0] && no_proxy_match(np, host))
        return xstrdup("");
    return xstrdup(v);
}

/* CURLOPT_OPENSOCKETFUNCTION: the exact address about to be dialled. */
static curl_socket_t open_checked(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct xfer *x = ud;
    struct http_tr *tr = x->tr;
    (void)purpose;
    char why[sizeof x->refused];
    why[0] = '\0';
    if (!tr->addr_check(tr->addr_ctx, &a->addr, why, sizeof why)) {
        if (!x->refused[0])
            snprintf(x->refused, sizeof x->refused, "%s",
                     why[0] ? why : "the address check refused the connection");
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ---- transfers ---- */

/* http and https only, whichever libcurl the loader found: the string form
 * exists from 7.85 on, the bitmask before (and is deprecated after). -1 if
 * neither took, and the transfer is not made. */
static int restrict_protocols(const struct mcp_curl *cu, CURL *e)
{
#if LIBCURL_VERSION_NUM >= 0x075500
    if (cu->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK)
        return 0;
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CURLcode rc = cu->easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#pragma GCC diagnostic pop
    return rc == CURLE_OK ? 0 : -1;
}

static struct xfer *xfer_new(struct http_tr *tr, uint64_t id)
{
    struct mcp_client *c = tr->c;
    const struct mcp_curl *cu = tr->cu;
    tr->auth_why[0] = '\0';
    if (!tr->multi)
        return NULL; /* never opened: libcurl may not even be loaded */
    struct xfer *x = xcalloc(1, sizeof *x);
    x->tr = tr;
    x->id = id;
    sb_init(&x->resp, 0);
    sb_init(&x->line, 0);
    sb_init(&x->data, 0);
    sb_init(&x->event, 0);
    x->easy = cu->easy_init();
    if (!x->easy || restrict_protocols(cu, x->easy) < 0) {
        xfer_free(x);
        return NULL;
    }
    CURL *e = x->easy;
    cu->easy_setopt(e, CURLOPT_URL, tr->url);
    cu->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(e, CURLOPT_PRIVATE, (char *)x);
    cu->easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    cu->easy_setopt(e, CURLOPT_WRITEDATA, x);
    cu->easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    cu->easy_setopt(e, CURLOPT_HEADERDATA, x);
    cu->easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    cu->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)tr->connect_timeout_ms);
    cu->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* The proxy decided once (tr->proxy): libcurl reads no variable itself. */
    cu->easy_setopt(e, CURLOPT_PROXY, tr->proxy);
    cu->easy_setopt(e, CURLOPT_NOPROXY, "");
    if (tr->addr_check && !tr->proxy[0]) {
        cu->easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_checked);
        cu->easy_setopt(e, CURLOPT_OPENSOCKETDATA, x);
    }
    x->hdrs = cu->slist_append(x->hdrs, "Accept: application/json, text/event-stream");
    if (c->session_id) {
        x->had_session = 1;
        char *h = xasprintf("Mcp-Session-Id: %s", c->session_id);
        x->hdrs = cu->slist_append(x->hdrs, h);
        free(h);
    }
    if (c->version) {
        char *h = xasprintf("MCP-Protocol-Version: %s", c->version);
        x->hdrs = cu->slist_append(x->hdrs, h);
        free(h);
    }
    for (size_t i = 0; tr->headers && tr->headers[i]; i++)
        x->hdrs = cu->slist_append(x->hdrs, tr->headers[i]);
    if (tr->auth) {
        strbuf line = SB_INIT;
        int rc = tr->auth(tr->auth_ctx, &line, tr->auth_why, sizeof tr->auth_why);
        if (rc == 0)
            x->hdrs = cu->slist_append(x->hdrs, line.buf);
        sb_release_secure(&line);
        if (rc < 0) {
            xfer_free(x);
            return NULL;
        }
    }
    return x;
}

static void xfer_start(struct http_tr *tr, struct xfer *x)
{
    tr->cu->easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
    x->next = tr->xfers;
    tr->xfers = x;
    tr->cu->multi_add_handle(tr->multi, x->easy);
}

static void h_send(struct mcp_client *c, const json_t *msg, uint64_t id)
{
    struct http_tr *tr = c->tr;
    struct xfer *x = xfer_new(tr, id);
    if (!x) {
        if (id)
            mcp__fail_later(c, id, MCP_E_HTTP,
                            tr->auth_why[0] ? tr->auth_why : "cannot create an HTTP transfer");
        return;
    }
    strbuf sb = SB_INIT;
    mcp_dump(msg, &sb);
    x->body = sb_detach(&sb, NULL);
    const struct mcp_curl *cu = tr->cu;
    x->hdrs = cu->slist_append(x->hdrs, "Content-Type: application/json");
    cu->easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body);
    cu->easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(x->body));
    if (!id) /* notifications and replies: the 202 must not linger */
        cu->easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, 10000L);
    xfer_start(tr, x);
}

static void h_abort(struct mcp_client *c, uint64_t id)
{
    struct http_tr *tr = c->tr;
    for (struct xfer *x = tr->xfers; x; x = x->next)
        if (x->id == id) {
            xfer_abort(tr, x);
            return;
        }
}

static void abort_all(struct http_tr *tr)
{
    while (tr->xfers)
        xfer_abort(tr, tr->xfers);
}

/* Loads libcurl on the first start. A failed load is retried at the next
 * start, so installing libcurl needs no restart of the gateway. */
/* The host and port libcurl is about to dial are the ones every decision on
 * this URL read (base/url.h: the egress check, the trust card, NO_PROXY).
 * A URL the two read differently is never contacted. The URL is not
 * quoted in the error: it may carry a token. */
static int url_agrees_with_curl(const struct mcp_curl *cu, const char *url, struct as_err *err)
{
    struct url_authority a;
    const char *why;
    if (url_authority(url, &a, &why) < 0)
        return as_err_set(err, "the server's URL is refused: %s", why);
    CURLU *u = cu->url();
    if (!u)
        return as_err_set(err, "libcurl could not read the server's URL");
    char *host = NULL, *port = NULL;
    bool read = cu->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
                cu->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
                cu->url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;
    bool same = false;
    if (read) {
        const char *h = host;
        size_t hn = strlen(h);
        if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']') {
            h++;
            hn -= 2;
        }
        char *end = NULL;
        unsigned long p = strtoul(port, &end, 10);
        same =
            hn == strlen(a.host) && strncasecmp(h, a.host, hn) == 0 && end && !*end && p == a.port;
    }
    if (host)
        cu->free(host);
    if (port)
        cu->free(port);
    cu->url_cleanup(u);
    if (!read)
        return as_err_set(err, "libcurl refuses the server's URL");
    if (!same)
        return as_err_set(err, "the server's URL names a host or port that libcurl reads "
                               "differently from the egress check; it is not contacted");
    return 0;
}

static int h_open(struct mcp_client *c, struct as_err *err)
{
    struct http_tr *tr = c->tr;
    if (!tr->url || !*tr->url)
        return as_err_set(err, "no URL to contact");
    if (tr->multi)
        return 0;
    const struct mcp_curl *cu = mcp_curl_load(err);
    if (!cu)
        return -1;
    if (url_agrees_with_curl(cu, tr->url, err) < 0)
        return -1;
    CURLM *m = cu->multi_init();
    if (!m)
        return as_err_set(err, "libcurl could not create a transfer set");
    cu->multi_setopt(m, CURLMOPT_SOCKETFUNCTION, sock_cb);
    cu->multi_setopt(m, CURLMOPT_SOCKETDATA, tr);
    cu->multi_setopt(m, CURLMOPT_TIMERFUNCTION, timer_cb);
    cu->multi_setopt(m, CURLMOPT_TIMERDATA, tr);
    tr->cu = cu;
    tr->multi = m;
    return 0;
}

static void h_drop(struct mcp_client *c, int grace_ms)
{
    (void)grace_ms;
    abort_all(c->tr);
}

static void close_timer_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct http_tr *tr = ctx;
    struct mcp_client *c = tr->c;
    tr->close_timer = 0;
    mcp__enter(c);
    abort_all(tr); /* a DELETE that did not finish in the grace */
    mcp__closed(c);
    mcp__leave(c);
}

static void h_close(struct mcp_client *c, int grace_ms)
{
    struct http_tr *tr = c->tr;
    tr->closing = 1;
    abort_all(tr);
    struct xfer *x = c->session_id ? xfer_new(tr, 0) : NULL;
    if (x) {
        /* Ends the server's session (Streamable HTTP); best effort. */
        x->is_delete = 1;
        tr->cu->easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
        tr->cu->easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long)grace_ms);
        xfer_start(tr, x);
        free(c->session_id);
        c->session_id = NULL;
    }
    tr->close_timer = mcp_loop_timer(c->loop, x ? (uint64_t)grace_ms : 0, close_timer_cb, tr);
}

static void h_destroy(struct mcp_client *c)
{
    struct http_tr *tr = c->tr;
    abort_all(tr);
    mcp_loop_timer_cancel(c->loop, tr->timer);
    mcp_loop_timer_cancel(c->loop, tr->close_timer);
    if (tr->multi)
        tr->cu->multi_cleanup(tr->multi);
    if (tr->headers) {
        for (size_t i = 0; tr->headers[i]; i++) {
            explicit_bzero(tr->headers[i], strlen(tr->headers[i]));
            free(tr->headers[i]);
        }
        free(tr->headers);
    }
    if (tr->url) {
        explicit_bzero(tr->url, strlen(tr->url)); /* URLs may embed tokens */
        free(tr->url);
    }
    if (tr->proxy) {
        explicit_bzero(tr->proxy, strlen(tr->proxy)); /* may hold credentials */
        free(tr->proxy);
    }
    free(tr);
    c->tr = NULL;
}

static const struct mcp_transport_ops http_ops = {
    MCP_E_HTTP, h_open, h_send, NULL, h_abort, h_drop, h_close, h_destroy,
};

struct mcp_client *mcp_client_http(struct mcp_loop *loop, const struct mcp_http_opts *ho,
                                   const struct mcp_client_opts *o)
{
    struct mcp_client *c = mcp__client_new(loop, o, &http_ops);
    struct http_tr *tr = xcalloc(1, sizeof *tr);
    tr->c = c;
    if (ho) {
        tr->url = ho->url ? xstrdup(ho->url) : NULL;
        size_t n = 0;
        while (ho->headers && ho->headers[n])
            n++;
        if (n) {
            tr->headers = xcalloc(n + 1, sizeof *tr->headers);
            for (size_t i = 0; i < n; i++)
                tr->headers[i] = xstrdup(ho->headers[i]);
        }
        tr->connect_timeout_ms = ho->connect_timeout_ms;
        tr->addr_check = ho->addr_check;
        tr->addr_ctx = ho->addr_ctx;
        tr->auth = ho->auth;
        tr->auth_refused = ho->auth_refused;
        tr->auth_ctx = ho->auth_ctx;
    }
    tr->proxy = env_proxy(tr->url ? tr->url : "");
    if (tr->connect_timeout_ms <= 0)
        tr->connect_timeout_ms = 5000;
    c->tr = tr;
    return c;
}
