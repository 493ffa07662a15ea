/* Framing (line reader with caps and id sniffing, whole-frame writer) and the loop. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "mcp/mcp.h"

struct lines {
    strbuf all; /* lines joined with '|' */
    int n, oversize;
    size_t over_len;
    json_t *over_id;
};

static void collect(void *ctx, enum mcp_line_kind k, const char *d, size_t n, const json_t *id)
{
    struct lines *l = ctx;
    if (k == MCP_LINE) {
        sb_add(&l->all, d, n);
        sb_addc(&l->all, '|');
        l->n++;
    } else {
        l->oversize++;
        l->over_len = n;
        if (l->over_id)
            json_decref(l->over_id);
        l->over_id = id ? json_deep_copy(id) : NULL;
        sb_adds(&l->all, "<big>|");
    }
}

static void lines_free(struct lines *l)
{
    sb_release(&l->all);
    if (l->over_id)
        json_decref(l->over_id);
}

static void test_split_across_chunks(void **state)
{
    (void)state;
    struct mcp_reader r;
    struct lines l = {SB_INIT, 0, 0, 0, NULL};
    mcp_reader_init(&r, 100);
    const char *text = "one\r\ntwo\n\nthree-is-longer\nfour";
    /* every split point must give the same lines */
    for (size_t cut = 0; cut <= strlen(text); cut++) {
        sb_reset(&l.all);
        l.n = 0;
        mcp_reader_feed(&r, text, cut, collect, &l);
        mcp_reader_feed(&r, text + cut, strlen(text) - cut, collect, &l);
        mcp_reader_finish(&r, collect, &l);
        assert_string_equal(l.all.buf, "one|two||three-is-longer|four|");
    }
    mcp_reader_release(&r);
    lines_free(&l);
}

static void test_cap_drops_line_and_resyncs(void **state)
{
    (void)state;
    struct mcp_reader r;
    struct lines l = {SB_INIT, 0, 0, 0, NULL};
    mcp_reader_init(&r, 16);
    mcp_reader_feed(&r, "short\n", 6, collect, &l);
    /* 40 bytes of one line, fed in small pieces */
    const char *big = "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":\"xxxx\"}";
    for (size_t i = 0; i < strlen(big); i += 3) {
        size_t k = strlen(big) - i < 3 ? strlen(big) - i : 3;
        mcp_reader_feed(&r, big + i, k, collect, &l);
    }
    mcp_reader_feed(&r, "\nafter\n", 7, collect, &l);
    assert_string_equal(l.all.buf, "short|<big>|after|");
    assert_int_equal(l.oversize, 1);
    assert_int_equal(l.over_len, strlen(big));
    assert_non_null(l.over_id);
    assert_int_equal(json_integer_value(l.over_id), 77);
    /* exactly at the cap is accepted */
    sb_reset(&l.all);
    mcp_reader_feed(&r, "0123456789abcdef\n", 17, collect, &l);
    assert_string_equal(l.all.buf, "0123456789abcdef|");
    mcp_reader_release(&r);
    lines_free(&l);
}

static json_t *sniff(const char *line)
{
    struct mcp_reader r;
    struct lines l = {SB_INIT, 0, 0, 0, NULL};
    mcp_reader_init(&r, 4);
    mcp_reader_feed(&r, line, strlen(line), collect, &l);
    mcp_reader_feed(&r, "\n", 1, collect, &l);
    assert_int_equal(l.oversize, 1);
    json_t *id = l.over_id;
    l.over_id = NULL;
    mcp_reader_release(&r);
    lines_free(&l);
    return id;
}

static void test_id_sniffing(void **state)
{
    (void)state;
    json_t *id = sniff("{\"result\":{\"id\":5,\"x\":[1,{\"id\":6}]},\"id\":\"abc\"}");
    assert_string_equal(json_string_value(id), "abc"); /* only the top-level id counts */
    json_decref(id);
    id = sniff("{\"jsonrpc\":\"2.0\", \"id\" : -12 ,\"result\":{}}");
    assert_int_equal(json_integer_value(id), -12);
    json_decref(id);
    id = sniff("{\"result\":\"id\",\"ids\":1}"); /* no id at all */
    assert_null(id);
    id = sniff("{\"id\":\"a\\\"b\"}"); /* escaped ids are not guessed */
    assert_null(id);
    id = sniff("garbage without structure");
    assert_null(id);
}

static void test_read_fd_eof(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    struct mcp_reader r;
    struct lines l = {SB_INIT, 0, 0, 0, NULL};
    mcp_reader_init(&r, 1024);
    assert_int_equal(mcp_reader_read(&r, p[0], collect, &l), MCP_READ_AGAIN);
    assert_int_equal(write(p[1], "a\nb", 3), 3);
    assert_int_equal(mcp_reader_read(&r, p[0], collect, &l), MCP_READ_AGAIN);
    assert_string_equal(l.all.buf, "a|");
    close(p[1]);
    assert_int_equal(mcp_reader_read(&r, p[0], collect, &l), MCP_READ_EOF);
    assert_string_equal(l.all.buf, "a|b|");
    close(p[0]);
    mcp_reader_release(&r);
    lines_free(&l);
}

/* ---- writer ---- */

struct werr {
    int called, errnum;
};

static void on_werr(void *ctx, int e)
{
    struct werr *w = ctx;
    w->called++;
    w->errnum = e;
}

static void test_writer_never_interleaves(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    assert_non_null(loop);
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    struct mcp_writer w;
    struct werr we = {0, 0};
    mcp_writer_init(&w, loop, p[1], on_werr, &we);
    /* three frames far larger than the pipe, queued back to back */
    size_t sizes[3] = {300000, 5, 200000};
    char *frames[3];
    for (int i = 0; i < 3; i++) {
        frames[i] = malloc(sizes[i]);
        memset(frames[i], 'a' + i, sizes[i]);
        assert_int_equal(mcp_writer_send(&w, frames[i], sizes[i]), 0);
    }
    assert_true(mcp_writer_pending(&w) > 0);
    assert_int_equal(mcp_writer_send(&w, "a\nb", 3), -1); /* a frame is one line */
    struct mcp_reader r;
    struct lines l = {SB_INIT, 0, 0, 0, NULL};
    mcp_reader_init(&r, 1 << 20);
    while (l.n < 3) {
        assert_int_equal(mcp_loop_run_once(loop, 100, &err), 0);
        mcp_reader_read(&r, p[0], collect, &l);
    }
    assert_int_equal(mcp_writer_pending(&w), 0);
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < sizes[i]; k++)
            assert_int_equal(l.all.buf[off + k], 'a' + i);
        off += sizes[i];
        assert_int_equal(l.all.buf[off], '|');
        off++;
    }
    assert_int_equal(we.called, 0);
    for (int i = 0; i < 3; i++)
        free(frames[i]);
    mcp_writer_release(&w);
    mcp_reader_release(&r);
    lines_free(&l);
    close(p[0]);
    close(p[1]);
    mcp_loop_free(loop);
}

static void test_writer_epipe_no_signal(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    close(p[0]);
    struct mcp_writer w;
    struct werr we = {0, 0};
    mcp_writer_init(&w, loop, p[1], on_werr, &we);
    /* SIGPIPE's default would kill this test process */
    assert_int_equal(mcp_writer_send(&w, "hello", 5), -1);
    assert_int_equal(we.called, 0); /* never from inside send */
    assert_int_equal(mcp_loop_run_once(loop, 100, &err), 0);
    assert_int_equal(we.called, 1);
    assert_int_equal(we.errnum, EPIPE);
    assert_int_equal(mcp_writer_send(&w, "again", 5), -1);
    sigset_t pend;
    sigpending(&pend);
    assert_false(sigismember(&pend, SIGPIPE));
    mcp_writer_release(&w);
    close(p[1]);
    mcp_loop_free(loop);
}

/* ---- loop ---- */

struct order {
    char seq[64];
    int n;
    struct mcp_loop *loop;
    uint64_t cancel_me;
};

static void tmark(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct order *o = ctx;
    o->seq[o->n++] = 'T';
}

static void tcancel(struct mcp_loop *loop, void *ctx)
{
    struct order *o = ctx;
    o->seq[o->n++] = 'C';
    mcp_loop_timer_cancel(loop, o->cancel_me);
}

static void tstop(struct mcp_loop *loop, void *ctx)
{
    struct order *o = ctx;
    o->seq[o->n++] = 'S';
    mcp_loop_stop(loop);
}

static void test_timers_order_and_cancel(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    struct order o = {{0}, 0, loop, 0};
    mcp_loop_timer(loop, 30, tstop, &o);
    mcp_loop_timer(loop, 0, tmark, &o);
    mcp_loop_timer(loop, 10, tcancel, &o);
    o.cancel_me = mcp_loop_timer(loop, 20, tmark, &o);
    uint64_t gone = mcp_loop_timer(loop, 5, tmark, &o);
    mcp_loop_timer_cancel(loop, gone);
    mcp_loop_timer_cancel(loop, 999999); /* unknown ids are ignored */
    assert_int_equal(mcp_loop_run(loop, &err), 0);
    assert_string_equal(o.seq, "TCS");
    mcp_loop_free(loop);
}

struct fdctx {
    int hits;
    int fd;
};

static void on_readable(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    struct fdctx *f = ctx;
    char b[16];
    assert_true(ev & MCP_EV_IN);
    assert_true(read(fd, b, sizeof b) > 0);
    f->hits++;
    mcp_loop_del(loop, fd); /* deleting itself from its callback is fine */
    mcp_loop_stop(loop);
}

static void posted(struct mcp_loop *loop, void *ctx)
{
    int *n = ctx;
    (*n)++;
    mcp_loop_stop(loop);
}

struct postarg {
    struct mcp_loop *loop;
    int *n;
};

static void *post_thread(void *arg)
{
    struct postarg *a = arg;
    mcp_loop_post(a->loop, posted, a->n);
    return NULL;
}

static void test_fd_callbacks_and_post(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    mcp_loop_set_spin(loop, 100); /* callbacks and posts arrive alike whether a wait spins */
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    struct fdctx f = {0, p[0]};
    assert_int_equal(mcp_loop_add(loop, p[0], MCP_EV_IN, on_readable, &f, &err), 0);
    assert_int_equal(mcp_loop_add(loop, p[0], MCP_EV_IN, on_readable, &f, &err), -1);
    assert_int_equal(write(p[1], "x", 1), 1);
    assert_int_equal(mcp_loop_run(loop, &err), 0);
    assert_int_equal(f.hits, 1);

    int n = 0;
    struct postarg a = {loop, &n};
    pthread_t th;
    pthread_create(&th, NULL, post_thread, &a);
    assert_int_equal(mcp_loop_run(loop, &err), 0);
    pthread_join(th, NULL);
    assert_int_equal(n, 1);
    close(p[0]);
    close(p[1]);
    mcp_loop_free(loop);
}

/* ---- spinning ---- */

static void drain(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)ev;
    char b[16];
    while (read(fd, b, sizeof b) > 0)
        (*(int *)ctx)++;
}

static void one_round(struct mcp_loop *loop, int pfd, int max_wait_ms)
{
    struct as_err err = AS_ERR_INIT;
    if (pfd >= 0)
        assert_int_equal(write(pfd, "x", 1), 1);
    assert_int_equal(mcp_loop_run_once(loop, max_wait_ms, &err), 0);
}

/* The spin is armed by a wait that ended within the budget, disarmed by one
 * that did not, never runs past max_wait_ms, and never runs at all with a
 * single usable CPU. (Budgets here are seconds so that no scheduling delay
 * can change which side of the budget a wait falls on; no assertion reads a
 * clock.) */
static void test_spin_arms_disarms_and_stays_bounded(void **state)
{
    (void)state;
    cpu_set_t all;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    if (CPU_COUNT(&all) < 2) /* the loop refuses to spin; the one-CPU half narrows from two */
        tu_skip_even_in_ci("needs two usable CPUs");
    struct as_err err = AS_ERR_INIT;
    struct mcp_loop *loop = mcp_loop_new(&err);
    int p[2], got = 0;
    uint64_t spins, hits, budget;
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    assert_int_equal(mcp_loop_add(loop, p[0], MCP_EV_IN, drain, &got, &err), 0);
    mcp_loop_set_spin(loop, 5000000);

    one_round(loop, p[1], 1000); /* not armed yet: a plain wait, which ends at once */
    mcp_loop_spin_stats(loop, &spins, &hits, &budget);
    assert_int_equal(spins, 0);
    one_round(loop, p[1], 1000); /* armed: the spin finds the byte */
    mcp_loop_spin_stats(loop, &spins, &hits, &budget);
    assert_int_equal(spins, 1);
    assert_int_equal(hits, 1);
    assert_int_equal(got, 2);

    one_round(loop, -1, 100); /* armed, nothing comes: spins, but only for max_wait_ms */
    mcp_loop_spin_stats(loop, &spins, &hits, &budget);
    assert_int_equal(spins, 2);
    assert_int_equal(hits, 1);
    /* the 5 s budget is cut to the 100 ms wait: the bound itself, not a clock */
    assert_int_equal(budget, 100 * 1000);

    one_round(loop, -1, 10); /* that wait ran out: disarmed, this one sleeps at once */
    mcp_loop_spin_stats(loop, &spins, &hits, &budget);
    assert_int_equal(spins, 2);

    /* One usable CPU: spinning would only hold off the peer we wait for. */
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    mcp_loop_set_spin(loop, 5000000);
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
    for (int i = 0; i < 3; i++)
        one_round(loop, p[1], 1000);
    mcp_loop_spin_stats(loop, &spins, &hits, &budget);
    assert_int_equal(spins, 2);
    assert_int_equal(got, 5);

    close(p[0]);
    close(p[1]);
    mcp_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_across_chunks),
        cmocka_unit_test(test_cap_drops_line_and_resyncs),
        cmocka_unit_test(test_id_sniffing),
        cmocka_unit_test(test_read_fd_eof),
        cmocka_unit_test(test_writer_never_interleaves),
        cmocka_unit_test(test_writer_epipe_no_signal),
        cmocka_unit_test(test_timers_order_and_cancel),
        cmocka_unit_test(test_fd_callbacks_and_post),
        cmocka_unit_test(test_spin_arms_disarms_and_stays_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
