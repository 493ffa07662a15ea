/* The writer picks its SIGPIPE-safe write once, at init: send(MSG_NOSIGNAL)
 * on sockets, a plain write when SIGPIPE is already ignored, the guarded
 * write otherwise. Each way, a closed peer is reported as EPIPE through
 * on_error and no SIGPIPE reaches the process (its default would kill this
 * test). A sink writer (the gateway's HTTP sessions) hands each frame to
 * its sink at once, in order, and refuses a frame holding a newline. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcp/mcp.h"

struct werr {
    int called, errnum;
};

static void on_werr(void *ctx, int errnum)
{
    struct werr *w = ctx;
    w->called++;
    w->errnum = errnum;
}

static void epipe_case(int rfd, int wfd, int want_how)
{
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    assert_non_null(loop);
    struct mcp_writer w;
    struct werr we = {0, 0};
    mcp_writer_init(&w, loop, wfd, on_werr, &we);
    assert_int_equal(w.how, want_how);
    /* a live peer first: the frame arrives whole */
    assert_int_equal(mcp_writer_send(&w, "one", 3), 0);
    char buf[16];
    assert_int_equal(read(rfd, buf, sizeof buf), 4);
    assert_memory_equal(buf, "one\n", 4);
    close(rfd);
    assert_int_equal(mcp_writer_send(&w, "two", 3), -1);
    assert_int_equal(we.called, 0); /* never from inside send */
    assert_int_equal(mcp_loop_run_once(loop, 100, &err), 0);
    assert_int_equal(we.called, 1);
    assert_int_equal(we.errnum, EPIPE);
    sigset_t pend;
    sigpending(&pend);
    assert_false(sigismember(&pend, SIGPIPE));
    mcp_writer_release(&w);
    close(wfd);
    mcp_loop_free(loop);
}

static void test_pipe_with_sigpipe_default_is_guarded(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_DFL);
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    epipe_case(p[0], p[1], 0);
}

static void test_pipe_with_sigpipe_ignored_is_plain(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    epipe_case(p[0], p[1], 1);
    signal(SIGPIPE, SIG_DFL);
}

static void test_socket_uses_nosignal(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_DFL);
    int s[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s), 0);
    epipe_case(s[0], s[1], 2);
}

struct sunk {
    char buf[64];
    size_t len;
    int frames;
};

static void sink(void *ctx, const char *frame, size_t len)
{
    struct sunk *k = ctx;
    assert_true(k->len + len + 1 < sizeof k->buf);
    memcpy(k->buf + k->len, frame, len);
    k->len += len;
    k->buf[k->len++] = '|';
    k->frames++;
}

static void test_sink_gets_whole_frames_in_order(void **state)
{
    (void)state;
    struct sunk k = {{0}, 0, 0};
    struct mcp_writer w;
    mcp_writer_init_sink(&w, sink, &k);
    assert_int_equal(mcp_writer_send(&w, "{\"a\":1}", 7), 0);
    assert_int_equal(mcp_writer_send(&w, "two", 3), 0);
    assert_int_equal(mcp_writer_send(&w, "x\ny", 3), -1); /* never half a frame */
    assert_int_equal(k.frames, 2);
    assert_memory_equal(k.buf, "{\"a\":1}|two|", k.len);
    assert_int_equal(mcp_writer_pending(&w), 0);
    mcp_writer_release(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipe_with_sigpipe_default_is_guarded),
        cmocka_unit_test(test_pipe_with_sigpipe_ignored_is_plain),
        cmocka_unit_test(test_socket_uses_nosignal),
        cmocka_unit_test(test_sink_gets_whole_frames_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
