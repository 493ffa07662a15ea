/*
 * Upstream stdio transport — see mcp.h. One child per spawn, in its own
 * process group. A child that fails is detached from the client and left to
 * die in the background (stdin closed, SIGTERM, SIGKILL after the grace), so
 * a respawn never waits for it. Whenever a group leader exits, whatever is
 * left of its group is SIGKILLed before the leader is reaped: the zombie
 * leader pins the group id, so the kill cannot hit a recycled group.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/proc.h"
#include "base/xalloc.h"
#include "mcp/client_int.h"

#define STDERR_HEAD_MAX 4096

struct stdio_tr;

struct child {
    struct stdio_tr *tr;
    struct mcp_client *c; /* NULL once detached (dying) */
    struct proc proc;
    int in_fd, out_fd, err_fd, pidfd;
    int hold_fd; /* the spawner's descriptor, kept for the child's life */
    struct mcp_writer w;
    struct mcp_reader rd;
    int log_fd;
    size_t log_size;
    int exited, status;
    int terminating;
    uint64_t t_term, t_kill, t_poll;
    int busy, dead; /* dead: free once the outermost callback returns */
    struct child *next;
};

struct stdio_tr {
    struct mcp_client *c;
    char **argv, **envp, *cwd, *log_path;
    size_t log_max;
    int (*spawn)(void *ctx, struct proc *p, int *hold, struct as_err *err);
    void *spawn_ctx;
    struct child *cur;
    struct child *all;
    int closing;
    uint64_t closed_timer;
};

static char **copy_vec(const char *const *v)
{
    if (!v)
        return NULL;
    size_t n = 0;
    while (v[n])
        n++;
    char **out = xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(v[i]);
    return out;
}

/* Environments carry resolved secrets: wipe them before the memory is reused. */
static void free_vec_secure(char **v)
{
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++) {
        explicit_bzero(v[i], strlen(v[i]));
        free(v[i]);
    }
    free(v);
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* mkdir -p of path's parent, new components 0700; the parent itself is
 * re-tightened to 0700 and refused when a symlink or someone else's. */
static int make_parent(const char *path)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        struct as_err err = AS_ERR_INIT;
        rc = fs_private_dir(dir, &err);
    }
    free(dir);
    return rc;
}

static int open_log(const char *path, int excl)
{
    int fd = open(
        path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (excl ? O_TRUNC : 0), 0600);
    if (fd >= 0)
        fchmod(fd, 0600); /* re-tightened on every open */
    return fd;
}

static void log_write(struct child *ch, const char *p, size_t n)
{
    struct stdio_tr *tr = ch->tr;
    while (n && ch->log_fd >= 0) {
        if (ch->log_size >= tr->log_max) {
            close(ch->log_fd);
            char *old = xasprintf("%s.1", tr->log_path);
            rename(tr->log_path, old);
            free(old);
            ch->log_fd = open_log(tr->log_path, 1);
            ch->log_size = 0;
            if (ch->log_fd < 0)
                return;
        }
        size_t room = tr->log_max - ch->log_size;
        size_t k = n < room ? n : room;
        ssize_t w = write(ch->log_fd, p, k);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return; /* a full disk must not stall the upstream */
        }
        ch->log_size += (size_t)w;
        p += w;
        n -= (size_t)w;
    }
}

/* ---- child lifetime ---- */

static void child_release_fds(struct child *ch)
{
    struct mcp_loop *loop = ch->tr->c->loop;
    mcp_writer_release(&ch->w);
    if (ch->in_fd >= 0)
        close(ch->in_fd);
    ch->in_fd = -1;
    if (ch->out_fd >= 0) {
        mcp_loop_del(loop, ch->out_fd);
        close(ch->out_fd);
    }
    ch->out_fd = -1;
    if (ch->err_fd >= 0) {
        mcp_loop_del(loop, ch->err_fd);
        close(ch->err_fd);
    }
    ch->err_fd = -1;
    if (ch->pidfd >= 0) {
        mcp_loop_del(loop, ch->pidfd);
        close(ch->pidfd);
    }
    ch->pidfd = -1;
    if (ch->log_fd >= 0)
        close(ch->log_fd);
    ch->log_fd = -1;
    if (ch->hold_fd >= 0)
        close(ch->hold_fd);
    ch->hold_fd = -1;
    mcp_loop_timer_cancel(loop, ch->t_term);
    mcp_loop_timer_cancel(loop, ch->t_kill);
    mcp_loop_timer_cancel(loop, ch->t_poll);
    ch->t_term = ch->t_kill = ch->t_poll = 0;
    mcp_reader_release(&ch->rd);
}

static void child_unlink(struct child *ch)
{
    struct stdio_tr *tr = ch->tr;
    for (struct child **pp = &tr->all; *pp; pp = &(*pp)->next)
        if (*pp == ch) {
            *pp = ch->next;
            break;
        }
    if (tr->cur == ch)
        tr->cur = NULL;
}

static void closed_timer_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct stdio_tr *tr = ctx;
    tr->closed_timer = 0;
    struct mcp_client *c = tr->c;
    mcp__enter(c);
    mcp__closed(c);
    mcp__leave(c);
}

/* The child is gone for good: free it (or mark it when inside its own
 * callback) and finish an orderly close once no child is left. */
static void child_gone(struct child *ch)
{
    struct stdio_tr *tr = ch->tr;
    child_release_fds(ch);
    child_unlink(ch);
    if (ch->busy)
        ch->dead = 1;
    else
        free(ch);
    if (tr->closing && !tr->all && !tr->closed_timer)
        tr->closed_timer = mcp_loop_timer(tr->c->loop, 0, closed_timer_cb, tr);
}

static void child_enter(struct child *ch)
{
    ch->busy++;
}

/* Returns 1 when ch was freed. */
static int child_leave(struct child *ch)
{
    if (--ch->busy == 0 && ch->dead) {
        free(ch);
        return 1;
    }
    return 0;
}

static void line_cb(void *ctx, enum mcp_line_kind kind, const char *data, size_t len,
                    const json_t *id)
{
    struct child *ch = ctx;
    struct mcp_client *c = ch->c;
    if (!c || c->doomed)
        return;
    if (kind == MCP_LINE)
        mcp__on_line(c, data, len);
    else
        mcp__on_oversize(c, id, len);
}

static void drain_stdout(struct child *ch)
{
    while (ch->out_fd >= 0) {
        enum mcp_read_status st = mcp_reader_read(&ch->rd, ch->out_fd, line_cb, ch);
        if (st != MCP_READ_AGAIN)
            break;
        struct pollfd pfd = {ch->out_fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & (POLLIN | POLLHUP)))
            break;
    }
}

static void drain_stderr_once(struct child *ch, int *eof)
{
    char buf[65536];
    for (int round = 0; round < 16; round++) {
        ssize_t n = read(ch->err_fd, buf, sizeof buf);
        if (n > 0) {
            if (ch->c && ch->c->stderr_head.len < STDERR_HEAD_MAX) {
                size_t room = STDERR_HEAD_MAX - ch->c->stderr_head.len;
                sb_add(&ch->c->stderr_head, buf, (size_t)n < room ? (size_t)n : room);
            }
            log_write(ch, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            *eof = 1;
        return;
    }
}

static void fail_attached(struct child *ch, const char *msg)
{
    struct mcp_client *c = ch->c;
    if (!c)
        return;
    /* transport_failed calls drop(), which detaches ch from c. */
    mcp__transport_failed(c, MCP_E_TRANSPORT, msg);
}

static void child_reap(struct child *ch)
{
    /* Whatever the leader left in its group goes now, while the zombie
     * leader still pins the group id. */
    proc_kill_group(&ch->proc, SIGKILL);
    ch->status = proc_wait(&ch->proc);
    ch->exited = 1;
    if (ch->tr->c->pid == (long)ch->proc.pid)
        ch->tr->c->exit_status = ch->status;
    drain_stdout(ch);
    if (ch->err_fd >= 0) {
        int eof = 0;
        drain_stderr_once(ch, &eof);
    }
    char msg[96];
    if (ch->status > 128)
        snprintf(msg, sizeof msg, "server exited on signal %d", ch->status - 128);
    else
        snprintf(msg, sizeof msg, "server exited with status %d", ch->status);
    fail_attached(ch, msg);
    child_gone(ch);
}

static int leader_exited(struct child *ch)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)ch->proc.pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD; /* already reaped elsewhere: treat as gone */
    return si.si_pid != 0;
}

static void poll_cb(struct mcp_loop *loop, void *ctx)
{
    struct child *ch = ctx;
    ch->t_poll = 0;
    struct mcp_client *c = ch->c;
    if (c)
        mcp__enter(c);
    child_enter(ch);
    if (leader_exited(ch))
        child_reap(ch);
    else
        ch->t_poll = mcp_loop_timer(loop, 20, poll_cb, ch);
    child_leave(ch);
    if (c)
        mcp__leave(c);
}

static void pidfd_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)loop;
    (void)fd;
    (void)events;
    struct child *ch = ctx;
    struct mcp_client *c = ch->c;
    if (c)
        mcp__enter(c);
    child_enter(ch);
    if (leader_exited(ch))
        child_reap(ch);
    child_leave(ch);
    if (c)
        mcp__leave(c);
}

static void out_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)events;
    struct child *ch = ctx;
    struct mcp_client *c = ch->c;
    if (c)
        mcp__enter(c);
    child_enter(ch);
    enum mcp_read_status st = mcp_reader_read(&ch->rd, fd, line_cb, ch);
    if (st != MCP_READ_AGAIN && !ch->dead) {
        mcp_loop_del(loop, ch->out_fd);
        close(ch->out_fd);
        ch->out_fd = -1;
        fail_attached(ch, st == MCP_READ_EOF ? "server closed its stdout"
                                             : "reading the server's stdout failed");
    }
    child_leave(ch);
    if (c)
        mcp__leave(c);
}

static void err_cb(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)events;
    (void)fd;
    struct child *ch = ctx;
    int eof = 0;
    drain_stderr_once(ch, &eof);
    if (eof) {
        mcp_loop_del(loop, ch->err_fd);
        close(ch->err_fd);
        ch->err_fd = -1;
    }
}

static void writer_err(void *ctx, int errnum)
{
    (void)errnum;
    struct child *ch = ctx;
    struct mcp_client *c = ch->c;
    if (!c)
        return;
    mcp__enter(c);
    child_enter(ch);
    fail_attached(ch, "the server stopped reading its stdin");
    child_leave(ch);
    mcp__leave(c);
}

static void term_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct child *ch = ctx;
    ch->t_term = 0;
    if (!ch->exited)
        proc_kill_group(&ch->proc, SIGTERM);
}

static void kill_cb(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct child *ch = ctx;
    ch->t_kill = 0;
    if (!ch->exited)
        proc_kill_group(&ch->proc, SIGKILL);
}

/* Close stdin now, SIGTERM the group at grace/2, SIGKILL it at grace
 * (counted from the latest call). */
static void child_terminate(struct child *ch, int grace_ms)
{
    struct mcp_loop *loop = ch->tr->c->loop;
    mcp_writer_release(&ch->w);
    if (ch->in_fd >= 0) {
        close(ch->in_fd);
        ch->in_fd = -1;
    }
    if (ch->exited)
        return;
    uint64_t now = mcp_now_ms();
    uint64_t kill_at = now + (uint64_t)grace_ms;
    if (ch->terminating && ch->t_kill == 0)
        return; /* SIGKILL already sent */
    ch->terminating = 1;
    mcp_loop_timer_cancel(loop, ch->t_term);
    mcp_loop_timer_cancel(loop, ch->t_kill);
    ch->t_term = mcp_loop_timer(loop, (uint64_t)grace_ms / 2, term_cb, ch);
    ch->t_kill = mcp_loop_timer(loop, kill_at - now, kill_cb, ch);
}

/* ---- transport ops ---- */

static int st_open(struct mcp_client *c, struct as_err *err)
{
    struct stdio_tr *tr = c->tr;
    if (!tr->argv || !tr->argv[0])
        return as_err_set(err, "no command to start");
    struct child *ch = xcalloc(1, sizeof *ch);
    ch->tr = tr;
    ch->in_fd = ch->out_fd = ch->err_fd = ch->pidfd = ch->log_fd = ch->hold_fd = -1;
    proc_init(&ch->proc, (const char *const *)tr->argv);
    ch->proc.envp = (const char *const *)tr->envp;
    ch->proc.cwd = tr->cwd;
    ch->proc.in = ch->proc.out = ch->proc.err = PROC_PIPE;
    ch->proc.new_pgroup = 1;
    if ((tr->spawn ? tr->spawn(tr->spawn_ctx, &ch->proc, &ch->hold_fd, err)
                   : proc_start(&ch->proc, err)) < 0) {
        free(ch);
        return -1;
    }
    ch->in_fd = ch->proc.to_child;
    ch->out_fd = ch->proc.from_child;
    ch->err_fd = ch->proc.err_from_child;
    ch->proc.to_child = ch->proc.from_child = ch->proc.err_from_child = -1;
    set_nonblock(ch->in_fd);
    set_nonblock(ch->out_fd);
    set_nonblock(ch->err_fd);
    mcp_reader_init(&ch->rd, c->max_frame);
    mcp_writer_init(&ch->w, c->loop, ch->in_fd, writer_err, ch);
    if (tr->log_path) {
        ch->log_fd = make_parent(tr->log_path) == 0 ? open_log(tr->log_path, 0) : -1;
        struct stat st;
        if (ch->log_fd >= 0 && fstat(ch->log_fd, &st) == 0)
            ch->log_size = (size_t)st.st_size;
    }
    ch->c = c;
    ch->next = tr->all;
    tr->all = ch;
    tr->cur = ch;
    c->pid = (long)ch->proc.pid;
    c->exit_status = -1;
    sb_reset(&c->stderr_head);

    struct as_err e = AS_ERR_INIT;
    mcp_loop_add(c->loop, ch->out_fd, MCP_EV_IN, out_cb, ch, &e);
    mcp_loop_add(c->loop, ch->err_fd, MCP_EV_IN, err_cb, ch, &e);
#ifdef SYS_pidfd_open
    ch->pidfd = (int)syscall(SYS_pidfd_open, ch->proc.pid, 0);
#endif
    if (ch->pidfd >= 0) {
        fcntl(ch->pidfd, F_SETFD, FD_CLOEXEC);
        if (mcp_loop_add(c->loop, ch->pidfd, MCP_EV_IN, pidfd_cb, ch, &e) < 0) {
            close(ch->pidfd);
            ch->pidfd = -1;
        }
    }
    if (ch->pidfd < 0) /* old kernels: look every 20 ms */
        ch->t_poll = mcp_loop_timer(c->loop, 20, poll_cb, ch);
    return 0;
}

static void st_send(struct mcp_client *c, const json_t *msg, uint64_t id)
{
    (void)id;
    struct stdio_tr *tr = c->tr;
    if (tr->cur && tr->cur->in_fd >= 0)
        mcp_writer_send_json(&tr->cur->w, msg);
}

static void st_send_raw(struct mcp_client *c, const char *line, size_t len, uint64_t id)
{
    (void)id;
    struct stdio_tr *tr = c->tr;
    if (tr->cur && tr->cur->in_fd >= 0)
        mcp_writer_send(&tr->cur->w, line, len);
}

static void st_drop(struct mcp_client *c, int grace_ms)
{
    struct stdio_tr *tr = c->tr;
    struct child *ch = tr->cur;
    if (!ch)
        return;
    tr->cur = NULL;
    ch->c = NULL;
    child_terminate(ch, grace_ms);
}

static void st_close(struct mcp_client *c, int grace_ms)
{
    struct stdio_tr *tr = c->tr;
    tr->closing = 1;
    if (tr->cur) {
        tr->cur->c = NULL;
        tr->cur = NULL;
    }
    for (struct child *ch = tr->all; ch; ch = ch->next)
        child_terminate(ch, grace_ms);
    if (!tr->all && !tr->closed_timer)
        tr->closed_timer = mcp_loop_timer(c->loop, 0, closed_timer_cb, tr);
}

static void st_destroy(struct mcp_client *c)
{
    struct stdio_tr *tr = c->tr;
    while (tr->all) {
        struct child *ch = tr->all;
        tr->all = ch->next;
        if (!ch->exited) {
            proc_kill_group(&ch->proc, SIGKILL);
            ch->status = proc_wait(&ch->proc);
            ch->exited = 1;
        }
        child_release_fds(ch);
        if (ch->busy)
            ch->dead = 1;
        else
            free(ch);
    }
    mcp_loop_timer_cancel(c->loop, tr->closed_timer);
    free_vec_secure(tr->argv);
    free_vec_secure(tr->envp);
    free(tr->cwd);
    free(tr->log_path);
    free(tr);
    c->tr = NULL;
}

static const struct mcp_transport_ops stdio_ops = {
    MCP_E_SPAWN, st_open, st_send, st_send_raw, NULL, st_drop, st_close, st_destroy,
};

struct mcp_client *mcp_client_stdio(struct mcp_loop *loop, const struct mcp_stdio_opts *so,
                                    const struct mcp_client_opts *o)
{
    struct mcp_client *c = mcp__client_new(loop, o, &stdio_ops);
    struct stdio_tr *tr = xcalloc(1, sizeof *tr);
    tr->c = c;
    if (so) {
        tr->argv = copy_vec(so->argv);
        tr->envp = copy_vec(so->envp);
        tr->cwd = so->cwd ? xstrdup(so->cwd) : NULL;
        tr->log_path = so->stderr_log ? xstrdup(so->stderr_log) : NULL;
        tr->log_max = so->stderr_log_max;
        tr->spawn = so->spawn;
        tr->spawn_ctx = so->spawn_ctx;
    }
    if (!tr->log_max)
        tr->log_max = MCP_STDERR_LOG_MAX;
    c->tr = tr;
    return c;
}
