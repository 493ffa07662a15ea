/*
 * Newline framing — see mcp.h. The reader keeps at most `cap` bytes of one
 * line; past that it drops the line while a tiny scanner watches for the
 * top-level "id", so the request an oversized answer belongs to can be
 * failed at once. The writer keeps one ordered byte queue.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mcp/mcp.h"

/* ---- top-level id scanner ---- */

static void sniff_reset(struct mcp_idsniff *s)
{
    memset(s, 0, sizeof *s);
}

static void sniff_end_capture(struct mcp_idsniff *s)
{
    if (s->cap == 1) {
        s->key_is_id = !s->bad && s->len == 2 && memcmp(s->buf, "id", 2) == 0;
    } else if ((s->cap == 2 || s->cap == 3) && !s->bad && !s->found) {
        s->found = s->cap; /* 2 string, 3 number */
        s->buf[s->len] = '\0';
        s->cap = 0;
        return;
    }
    s->cap = 0;
    s->len = 0;
    s->bad = 0;
}

static void sniff_add(struct mcp_idsniff *s, char c)
{
    if (s->len + 1 >= sizeof s->buf)
        s->bad = 1;
    else
        s->buf[s->len++] = c;
}

static void sniff_byte(struct mcp_idsniff *s, char c)
{
    if (s->found)
        return;
    if (s->in_str) {
        if (s->esc) {
            s->esc = 0;
            s->bad = 1; /* escaped ids are rare; never guess one */
        } else if (c == '\\') {
            s->esc = 1;
        } else if (c == '"') {
            s->in_str = 0;
            if (s->cap)
                sniff_end_capture(s);
        } else if (s->cap) {
            sniff_add(s, c);
        }
        return;
    }
    if (s->cap == 3) {
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
            sniff_add(s, c);
            return;
        }
        sniff_end_capture(s);
        if (s->found)
            return;
    }
    switch (c) {
    case '"':
        s->in_str = 1;
        if (s->depth == 1 && s->want == 0) {
            s->cap = 1;
            s->len = 0;
            s->bad = 0;
        } else if (s->depth == 1 && s->want == 1 && s->key_is_id) {
            s->cap = 2;
            s->len = 0;
            s->bad = 0;
        }
        break;
    case '{':
    case '[':
        s->depth++;
        break;
    case '}':
    case ']':
        s->depth--;
        break;
    case ':':
        if (s->depth == 1)
            s->want = 1;
        break;
    case ',':
        if (s->depth == 1) {
            s->want = 0;
            s->key_is_id = 0;
        }
        break;
    default:
        if (s->depth == 1 && s->want == 1 && s->key_is_id && ((c >= '0' && c <= '9') || c == '-')) {
            s->cap = 3;
            s->len = 0;
            s->bad = 0;
            sniff_add(s, c);
        }
        break;
    }
}

static json_t *sniff_result(struct mcp_idsniff *s)
{
    if (s->cap == 3)
        sniff_end_capture(s);
    if (s->found == 2)
        return json_stringn(s->buf, s->len);
    if (s->found == 3) {
        json_error_t je;
        json_t *v = json_loadb(s->buf, s->len, JSON_DECODE_ANY, &je);
        if (v && !json_is_number(v)) {
            json_decref(v);
            v = NULL;
        }
        return v;
    }
    return NULL;
}

/* ---- reader ---- */

void mcp_reader_init(struct mcp_reader *r, size_t cap)
{
    memset(r, 0, sizeof *r);
    sb_init(&r->buf, 0);
    r->cap = cap;
}

void mcp_reader_release(struct mcp_reader *r)
{
    sb_release(&r->buf);
    r->discarding = 0;
    r->dropped = 0;
}

static void emit_line(struct mcp_reader *r, const char *p, size_t n, mcp_line_fn fn, void *ctx)
{
    (void)r;
    if (n && p[n - 1] == '\r')
        n--;
    fn(ctx, MCP_LINE, p, n, NULL);
}

static void start_discard(struct mcp_reader *r)
{
    r->discarding = 1;
    r->dropped = r->buf.len;
    sniff_reset(&r->sniff);
    for (size_t i = 0; i < r->buf.len; i++)
        sniff_byte(&r->sniff, r->buf.buf[i]);
    sb_release(&r->buf); /* give the memory back while the line drains */
}

static void end_discard(struct mcp_reader *r, mcp_line_fn fn, void *ctx)
{
    json_t *id = sniff_result(&r->sniff);
    size_t n = r->dropped;
    r->discarding = 0;
    r->dropped = 0;
    fn(ctx, MCP_LINE_OVERSIZE, NULL, n, id);
    if (id)
        json_decref(id);
}

void mcp_reader_feed(struct mcp_reader *r, const char *data, size_t n, mcp_line_fn fn, void *ctx)
{
    while (n) {
        const char *nl = memchr(data, '\n', n);
        size_t chunk = nl ? (size_t)(nl - data) : n;
        if (r->discarding) {
            for (size_t i = 0; i < chunk; i++)
                sniff_byte(&r->sniff, data[i]);
            r->dropped += chunk;
            if (nl)
                end_discard(r, fn, ctx);
        } else if (r->buf.len + chunk > r->cap) {
            /* A trailing '\r' counts toward the cap: one byte of slack at
             * most, in the safe direction. */
            start_discard(r);
            for (size_t i = 0; i < chunk; i++)
                sniff_byte(&r->sniff, data[i]);
            r->dropped += chunk;
            if (nl)
                end_discard(r, fn, ctx);
        } else if (nl && r->buf.len == 0) {
            emit_line(r, data, chunk, fn, ctx); /* zero-copy fast path */
        } else {
            sb_add(&r->buf, data, chunk);
            if (nl) {
                strbuf line = r->buf;
                sb_init(&r->buf, 0);
                emit_line(r, line.buf, line.len, fn, ctx);
                sb_release(&line);
            }
        }
        if (!nl)
            return;
        data = nl + 1;
        n -= chunk + 1;
    }
}

void mcp_reader_finish(struct mcp_reader *r, mcp_line_fn fn, void *ctx)
{
    if (r->discarding) {
        end_discard(r, fn, ctx);
    } else if (r->buf.len) {
        strbuf line = r->buf;
        sb_init(&r->buf, 0);
        emit_line(r, line.buf, line.len, fn, ctx);
        sb_release(&line);
    }
}

enum mcp_read_status mcp_reader_read(struct mcp_reader *r, int fd, mcp_line_fn fn, void *ctx)
{
    char chunk[65536];
    /* A budget per call keeps one chatty peer from starving the others; the
     * level-triggered loop calls again while data remains. */
    for (int round = 0; round < 16; round++) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            mcp_reader_feed(r, chunk, (size_t)n, fn, ctx);
            /* A short read emptied the pipe or socket: the read that would
             * only say EAGAIN is one syscall per message for nothing, and the
             * level-triggered loop reports whatever arrives next (EOF too). */
            if ((size_t)n < sizeof chunk)
                return MCP_READ_AGAIN;
            continue;
        }
        if (n == 0) {
            mcp_reader_finish(r, fn, ctx);
            return MCP_READ_EOF;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return MCP_READ_AGAIN;
        return MCP_READ_ERROR;
    }
    return MCP_READ_AGAIN;
}

/* ---- writer ---- */

static void writer_fd_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx);

static void writer_unregister(struct mcp_writer *w)
{
    if (w->registered) {
        mcp_loop_del(w->loop, w->fd);
        w->registered = 0;
    }
}

static void writer_err_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct mcp_writer *w = ctx;
    w->err_timer = 0;
    if (w->on_error)
        w->on_error(w->ctx, w->failed);
}

static void writer_fail(struct mcp_writer *w, int errnum)
{
    if (w->failed)
        return;
    w->failed = errnum ? errnum : EIO;
    writer_unregister(w);
    sb_release(&w->q);
    w->off = 0;
    if (w->loop)
        w->err_timer = mcp_loop_timer(w->loop, 0, writer_err_cb, w);
}

/* write(2) with SIGPIPE held back for this thread only: the process-wide
 * disposition stays untouched, so children keep the default. */
static ssize_t write_nosigpipe(int fd, const void *p, size_t n)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t r = write(fd, p, n);
    int saved = errno;
    if (r < 0 && errno == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return r;
}

static ssize_t writer_write(const struct mcp_writer *w, const void *p, size_t n)
{
    if (w->how == 1)
        return write(w->fd, p, n);
    if (w->how == 2)
        return send(w->fd, p, n, MSG_NOSIGNAL);
    return write_nosigpipe(w->fd, p, n);
}

/* Writes until done or EAGAIN. Returns 0, or -1 after writer_fail. */
static int writer_drain(struct mcp_writer *w)
{
    while (w->off < w->q.len) {
        ssize_t n = writer_write(w, w->q.buf + w->off, w->q.len - w->off);
        if (n > 0) {
            w->off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        writer_fail(w, n < 0 ? errno : EIO);
        return -1;
    }
    if (w->off == w->q.len) {
        sb_reset(&w->q);
        w->off = 0;
        writer_unregister(w);
        if (w->q.alloc > (1u << 20))
            sb_release(&w->q); /* a one-off huge frame should not pin memory */
    } else {
        if (w->off > (1u << 20) && w->off * 2 > w->q.len) {
            memmove(w->q.buf, w->q.buf + w->off, w->q.len - w->off);
            sb_setlen(&w->q, w->q.len - w->off);
            w->off = 0;
        }
        if (!w->registered && w->loop) {
            struct as_err e = AS_ERR_INIT;
            if (mcp_loop_add(w->loop, w->fd, MCP_EV_OUT, writer_fd_cb, w, &e) == 0)
                w->registered = 1;
            else {
                writer_fail(w, EBADF);
                return -1;
            }
        }
    }
    return 0;
}

static void writer_fd_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)loop;
    (void)fd;
    (void)events;
    writer_drain(ctx);
}

void mcp_writer_init(struct mcp_writer *w, struct mcp_loop *loop, int fd,
                     void (*on_error)(void *ctx, int errnum), void *ctx)
{
    memset(w, 0, sizeof *w);
    w->loop = loop;
    w->fd = fd;
    /* Three syscalls per write only when nothing cheaper is safe. */
    struct stat st;
    struct sigaction sa;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
        w->how = 2;
    else if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
        w->how = 1;
    sb_init(&w->q, 0);
    w->on_error = on_error;
    w->ctx = ctx;
}

void mcp_writer_init_sink(struct mcp_writer *w,
                          void (*sink)(void *ctx, const char *frame, size_t len), void *ctx)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    sb_init(&w->q, 0);
    w->sink = sink;
    w->ctx = ctx;
}

void mcp_writer_release(struct mcp_writer *w)
{
    writer_unregister(w);
    if (w->err_timer && w->loop)
        mcp_loop_timer_cancel(w->loop, w->err_timer);
    w->err_timer = 0;
    sb_release(&w->q);
    w->off = 0;
}

int mcp_writer_send(struct mcp_writer *w, const char *frame, size_t len)
{
    if (w->sink && !memchr(frame, '\n', len)) {
        w->sink(w->ctx, frame, len);
        return 0;
    }
    if (w->failed || w->fd < 0 || memchr(frame, '\n', len))
        return -1;
    int idle = w->off == w->q.len;
    sb_add(&w->q, frame, len);
    sb_addc(&w->q, '\n');
    if (idle)
        return writer_drain(w);
    return 0;
}

int mcp_writer_send_json(struct mcp_writer *w, const json_t *msg)
{
    strbuf sb = SB_INIT;
    mcp_dump(msg, &sb);
    int r = mcp_writer_send(w, sb.buf, sb.len);
    sb_release(&sb);
    return r;
}

size_t mcp_writer_pending(const struct mcp_writer *w)
{
    return w->q.len - w->off;
}
