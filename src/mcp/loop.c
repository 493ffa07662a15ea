/*
 * The event loop — see mcp.h. epoll for descriptors, a binary min-heap of
 * monotonic deadlines for timers, and an eventfd + mutex queue so other
 * threads can hand work to the loop thread.
 *
 * Spinning (opt-in, mcp_loop_set_spin): a relay in the middle of a
 * request/answer exchange usually hears back within tens of microseconds,
 * and on a virtual machine a vCPU that went to sleep in epoll_wait costs
 * about as much again to wake. So after a wait that ended quickly, the next
 * wait first polls without sleeping for up to the budget. A wait that
 * outlasts the budget disarms the spin until a wait ends quickly again: an
 * idle or slow-paced loop sleeps at once, and a spin that finds nothing
 * costs at most the budget once per long gap. Every poll yields the CPU,
 * so a spin only takes a CPU that no other task wants: on a loaded machine
 * a spin that did not yield made calls slower than not spinning at all.
 * Never with fewer than two usable CPUs (the peer we wait for would be
 * waiting for our CPU).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/vec.h"
#include "base/xalloc.h"
#include "mcp/mcp.h"

struct reg {
    int fd;
    unsigned events;
    mcp_fd_fn fn;
    void *ctx;
    int dead;
    struct reg *next_dead;
};

struct timer {
    uint64_t when;
    uint64_t id;
    mcp_timer_fn fn;
    void *ctx;
};

struct post {
    mcp_timer_fn fn;
    void *ctx;
};

struct mcp_loop {
    int epfd;
    int wakefd;
    VEC(struct reg *) regs; /* indexed by fd */
    struct reg *graveyard;  /* deleted during a round; freed after it */
    VEC(struct timer) heap;
    uint64_t next_id;
    int stop;
    pthread_mutex_t mu;
    VEC(struct post) posts;
    unsigned spin_us; /* 0 = never spin */
    int spin_armed;   /* the last wait ended within spin_us */
    uint64_t spins, spin_hits;
    uint64_t spin_last_budget_us; /* the budget the latest spin was given */
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t mcp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t to_epoll(unsigned ev)
{
    uint32_t e = 0;
    if (ev & MCP_EV_IN)
        e |= EPOLLIN;
    if (ev & MCP_EV_OUT)
        e |= EPOLLOUT;
    return e;
}

struct mcp_loop *mcp_loop_new(struct as_err *err)
{
    struct mcp_loop *l = xcalloc(1, sizeof *l);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        as_err_errno(err, "epoll_create1");
        free(l);
        return NULL;
    }
    l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->wakefd < 0) {
        as_err_errno(err, "eventfd");
        close(l->epfd);
        free(l);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0) {
        as_err_errno(err, "epoll_ctl");
        close(l->wakefd);
        close(l->epfd);
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    l->next_id = 1;
    return l;
}

static void bury(struct mcp_loop *l)
{
    while (l->graveyard) {
        struct reg *r = l->graveyard;
        l->graveyard = r->next_dead;
        free(r);
    }
}

void mcp_loop_free(struct mcp_loop *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->regs.n; i++)
        free(l->regs.v[i]);
    vec_free(&l->regs);
    bury(l);
    vec_free(&l->heap);
    vec_free(&l->posts);
    pthread_mutex_destroy(&l->mu);
    close(l->wakefd);
    close(l->epfd);
    free(l);
}

int mcp_loop_add(struct mcp_loop *l, int fd, unsigned events, mcp_fd_fn fn, void *ctx,
                 struct as_err *err)
{
    if (fd < 0)
        return as_err_set(err, "mcp loop: bad descriptor");
    size_t i = (size_t)fd;
    while (l->regs.n <= i)
        vec_push(&l->regs, NULL);
    if (l->regs.v[i])
        return as_err_set(err, "mcp loop: descriptor %d is already registered", fd);
    struct reg *r = xcalloc(1, sizeof *r);
    r->fd = fd;
    r->events = events;
    r->fn = fn;
    r->ctx = ctx;
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = r};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        free(r);
        return as_err_errno(err, "epoll_ctl(add %d)", fd);
    }
    l->regs.v[i] = r;
    return 0;
}

int mcp_loop_mod(struct mcp_loop *l, int fd, unsigned events)
{
    if (fd < 0 || (size_t)fd >= l->regs.n || !l->regs.v[fd])
        return -1;
    struct reg *r = l->regs.v[fd];
    if (r->events == events)
        return 0;
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = r};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        return -1;
    r->events = events;
    return 0;
}

void mcp_loop_del(struct mcp_loop *l, int fd)
{
    if (fd < 0 || (size_t)fd >= l->regs.n || !l->regs.v[fd])
        return;
    struct reg *r = l->regs.v[fd];
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
    l->regs.v[fd] = NULL;
    /* An event for r may still sit in this round's batch: keep the memory
     * until the round ends and mark it so the callback is skipped. */
    r->dead = 1;
    r->next_dead = l->graveyard;
    l->graveyard = r;
}

/* ---- timers: min-heap on (when, id) ---- */

static int t_less(const struct timer *a, const struct timer *b)
{
    return a->when < b->when || (a->when == b->when && a->id < b->id);
}

static void sift_up(struct mcp_loop *l, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!t_less(&l->heap.v[i], &l->heap.v[p]))
            break;
        struct timer t = l->heap.v[i];
        l->heap.v[i] = l->heap.v[p];
        l->heap.v[p] = t;
        i = p;
    }
}

static void sift_down(struct mcp_loop *l, size_t i)
{
    for (;;) {
        size_t a = 2 * i + 1, b = a + 1, m = i;
        if (a < l->heap.n && t_less(&l->heap.v[a], &l->heap.v[m]))
            m = a;
        if (b < l->heap.n && t_less(&l->heap.v[b], &l->heap.v[m]))
            m = b;
        if (m == i)
            return;
        struct timer t = l->heap.v[i];
        l->heap.v[i] = l->heap.v[m];
        l->heap.v[m] = t;
        i = m;
    }
}

static void heap_remove(struct mcp_loop *l, size_t i)
{
    l->heap.n--;
    if (i == l->heap.n)
        return;
    l->heap.v[i] = l->heap.v[l->heap.n];
    sift_down(l, i);
    sift_up(l, i);
}

uint64_t mcp_loop_timer(struct mcp_loop *l, uint64_t delay_ms, mcp_timer_fn fn, void *ctx)
{
    struct timer t = {mcp_now_ms() + delay_ms, l->next_id++, fn, ctx};
    vec_push(&l->heap, t);
    sift_up(l, l->heap.n - 1);
    return t.id;
}

void mcp_loop_timer_cancel(struct mcp_loop *l, uint64_t id)
{
    if (!id)
        return;
    for (size_t i = 0; i < l->heap.n; i++) {
        if (l->heap.v[i].id == id) {
            heap_remove(l, i);
            return;
        }
    }
}

void mcp_loop_post(struct mcp_loop *l, mcp_timer_fn fn, void *ctx)
{
    struct post p = {fn, ctx};
    pthread_mutex_lock(&l->mu);
    vec_push(&l->posts, p);
    pthread_mutex_unlock(&l->mu);
    uint64_t one = 1;
    ssize_t n = write(l->wakefd, &one, sizeof one);
    (void)n; /* EAGAIN means the counter is already non-zero: the loop wakes anyway */
}

static void run_posts(struct mcp_loop *l)
{
    uint64_t v;
    while (read(l->wakefd, &v, sizeof v) > 0)
        ;
    pthread_mutex_lock(&l->mu);
    struct post *ps = l->posts.v;
    size_t n = l->posts.n;
    l->posts.v = NULL;
    l->posts.n = l->posts.cap = 0;
    pthread_mutex_unlock(&l->mu);
    for (size_t i = 0; i < n; i++)
        ps[i].fn(l, ps[i].ctx);
    free(ps);
}

static void run_timers(struct mcp_loop *l)
{
    uint64_t now = mcp_now_ms();
    /* Timers added by these callbacks wait for the next round, so a callback
     * that re-arms itself with delay 0 cannot starve the descriptors. */
    uint64_t last = l->next_id;
    while (l->heap.n && l->heap.v[0].when <= now && l->heap.v[0].id < last) {
        struct timer t = l->heap.v[0];
        heap_remove(l, 0);
        t.fn(l, t.ctx);
    }
}

void mcp_loop_set_spin(struct mcp_loop *l, unsigned us)
{
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || CPU_COUNT(&cpus) < 2)
        us = 0;
    l->spin_us = us;
    l->spin_armed = 0;
}

void mcp_loop_spin_stats(const struct mcp_loop *l, uint64_t *spins, uint64_t *hits,
                         uint64_t *last_budget_us)
{
    *spins = l->spins;
    *hits = l->spin_hits;
    *last_budget_us = l->spin_last_budget_us;
}

/* Polls without sleeping until something is ready or budget_us is spent:
 * the number of events (0 = none), or -1 (errno set). */
static int spin(struct mcp_loop *l, struct epoll_event *evs, int cap, uint64_t budget_us)
{
    uint64_t until = now_us() + budget_us;
    do {
        int n = epoll_wait(l->epfd, evs, cap, 0);
        if (n != 0 && !(n < 0 && errno == EINTR))
            return n;
        sched_yield(); /* a task waiting for this CPU runs first */
    } while (now_us() < until);
    return 0;
}

/* How long the next epoll_wait may sleep: max_wait_ms less what a spin
 * already spent, cut short by the earliest timer. */
static int wait_ms(const struct mcp_loop *l, int max_wait_ms, uint64_t spent_us)
{
    int wait = max_wait_ms;
    if (wait > 0 && spent_us) {
        uint64_t spent = (spent_us + 999) / 1000;
        wait = spent >= (uint64_t)wait ? 0 : wait - (int)spent;
    }
    if (l->heap.n) {
        uint64_t now = mcp_now_ms();
        uint64_t d = l->heap.v[0].when > now ? l->heap.v[0].when - now : 0;
        if (wait < 0 || d < (uint64_t)wait)
            wait = d > 3600000 ? 3600000 : (int)d;
    }
    return wait;
}

int mcp_loop_run_once(struct mcp_loop *l, int max_wait_ms, struct as_err *err)
{
    struct epoll_event evs[64];
    int n = 0;
    uint64_t t0 = l->spin_us ? now_us() : 0, spent = 0;
    int first = l->spin_armed ? wait_ms(l, max_wait_ms, 0) : 0;
    if (first != 0) {
        uint64_t budget = l->spin_us;
        if (first > 0 && (uint64_t)first * 1000u < budget)
            budget = (uint64_t)first * 1000u; /* never past a timer or max_wait_ms */
        l->spins++;
        l->spin_last_budget_us = budget;
        n = spin(l, evs, 64, budget);
        l->spin_hits += n > 0;
        spent = now_us() - t0;
    }
    if (n == 0) {
        n = epoll_wait(l->epfd, evs, 64, wait_ms(l, max_wait_ms, spent));
        l->spin_armed = l->spin_us && n > 0 && now_us() - t0 <= l->spin_us;
    }
    if (n < 0) {
        if (errno != EINTR)
            return as_err_errno(err, "epoll_wait");
        n = 0;
    }
    int posted = 0;
    for (int i = 0; i < n; i++) {
        struct reg *r = evs[i].data.ptr;
        if (!r) {
            posted = 1;
            continue;
        }
        if (r->dead)
            continue;
        unsigned ev = 0;
        if (evs[i].events & EPOLLIN)
            ev |= MCP_EV_IN;
        if (evs[i].events & EPOLLOUT)
            ev |= MCP_EV_OUT;
        if (evs[i].events & (EPOLLERR | EPOLLHUP))
            ev |= MCP_EV_ERR;
        r->fn(l, r->fd, ev, r->ctx);
    }
    bury(l);
    if (posted)
        run_posts(l);
    run_timers(l);
    bury(l);
    return 0;
}

int mcp_loop_run(struct mcp_loop *l, struct as_err *err)
{
    l->stop = 0;
    while (!l->stop)
        if (mcp_loop_run_once(l, -1, err) < 0)
            return -1;
    l->stop = 0;
    return 0;
}

void mcp_loop_stop(struct mcp_loop *l)
{
    l->stop = 1;
}
