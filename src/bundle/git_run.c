/* git_run — a git process under a deadline, progress for people; see git_run.h. */
#include "bundle/git_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/term.h"

long git_timeout_ms(void)
{
    const char *s = getenv("AGENTSTACK_GIT_TIMEOUT_MS");
    if (s && *s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (!*end && v > 0 && errno == 0)
            return v;
    }
    return GIT_DEFAULT_TIMEOUT_MS;
}

bool git_progress_wanted(void)
{
    return isatty(2) && !term_is_quiet();
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The subcommand: the first word that is neither an option nor the value
 * of -c / -C. */
static const char *verb_of(const char *const *argv)
{
    for (size_t i = 1; argv[i]; i++) {
        if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "-C")) {
            if (!argv[++i])
                break;
            continue;
        }
        if (argv[i][0] != '-')
            return argv[i];
    }
    return "command";
}

/* git's progress on our stderr: CR and LF kept (that is how progress
 * redraws its line), printable ASCII kept, every other byte '?'. */
static void show_progress(const char *buf, size_t n)
{
    char clean[4096];
    while (n) {
        size_t k = n < sizeof clean ? n : sizeof clean;
        for (size_t i = 0; i < k; i++) {
            unsigned char c = (unsigned char)buf[i];
            clean[i] = (c == '\r' || c == '\n' || (c >= 0x20 && c < 0x7f)) ? (char)c : '?';
        }
        size_t off = 0;
        while (off < k) {
            ssize_t w = write(2, clean + off, k - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return; /* a closed stderr stops the copy, never the call */
            off += (size_t)w;
        }
        buf += k;
        n -= k;
    }
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Moves what is ready on *fd into sb (and on to our stderr with progress);
 * -1 when the stream went past max. */
static int drain(int *fd, strbuf *sb, size_t *total, size_t max, bool progress)
{
    char buf[16384];
    ssize_t r = read(*fd, buf, sizeof buf);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (r <= 0) {
        close_fd(fd);
        return 0;
    }
    *total += (size_t)r;
    if (max && *total > max)
        return -1;
    if (sb)
        sb_add(sb, buf, (size_t)r);
    if (progress)
        show_progress(buf, (size_t)r);
    return 0;
}

static int timed_out(struct as_err *err, const char *verb, long ms)
{
    as_err_set(err, "git %s timed out after %ld ms and was stopped", verb, ms);
    as_err_hint(err, "check the network and the URL, or raise AGENTSTACK_GIT_TIMEOUT_MS");
    return -1;
}

int git_run_bounded(const struct git_run *r, struct as_err *err)
{
    const char *verb = r->verb ? r->verb : verb_of(r->argv);
    long limit = git_timeout_ms();
    struct proc p;
    proc_init(&p, r->argv);
    p.envp = r->envp;
    p.cwd = r->cwd;
    p.in = r->in ? PROC_PIPE : PROC_NULL;
    p.out = PROC_PIPE;
    p.err = PROC_PIPE;
    p.new_pgroup = 1; /* the deadline stops git and every transport it started */
    if (proc_start(&p, err) < 0)
        return -1;
    long deadline = now_ms() + limit;
    size_t sent = 0, tout = 0, terr = 0;
    if (p.to_child >= 0) {
        fcntl(p.to_child, F_SETFL, fcntl(p.to_child, F_GETFL) | O_NONBLOCK);
        if (r->in_len == 0)
            close_fd(&p.to_child);
    }
    bool overflow = false, late = false;
    while (p.to_child >= 0 || p.from_child >= 0 || p.err_from_child >= 0) {
        struct pollfd pf[3];
        int *fds[3] = {&p.to_child, &p.from_child, &p.err_from_child};
        int idx[3];
        nfds_t n = 0;
        for (int i = 0; i < 3; i++)
            if (*fds[i] >= 0) {
                pf[n] = (struct pollfd){.fd = *fds[i], .events = i ? POLLIN : POLLOUT};
                idx[n++] = i;
            }
        long left = deadline - now_ms();
        if (left <= 0) {
            late = true;
            break;
        }
        int pr = poll(pf, n, (int)(left > 1000 ? 1000 : left));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            as_err_errno(err, "git %s: poll", verb);
            proc_close_pipes(&p);
            proc_terminate(&p, 0);
            return -1;
        }
        for (nfds_t k = 0; k < n && !overflow; k++) {
            if (!pf[k].revents)
                continue;
            if (idx[k] == 0) {
                proc_feed_stdin(&p, r->in, r->in_len, &sent);
            } else if (idx[k] == 1) {
                overflow = drain(&p.from_child, r->out, &tout, r->max_stream, false) < 0;
            } else {
                overflow =
                    drain(&p.err_from_child, r->errout, &terr, r->max_stream, r->progress) < 0;
            }
        }
        if (overflow)
            break;
    }
    proc_close_pipes(&p);
    if (late || overflow) {
        proc_terminate(&p, 500);
        if (late)
            return timed_out(err, verb, limit);
        return as_err_set(err, "git %s produced more than %zu bytes of output and was stopped",
                          verb, r->max_stream);
    }
    /* The streams closed; the process may still be exiting. Wait under the
     * same deadline, so one that closed its streams but hangs is stopped. */
    for (;;) {
        int st;
        pid_t w = waitpid(p.pid, &st, WNOHANG);
        if (w == p.pid) {
            kill(-p.pid, SIGKILL); /* nothing of the group outlives the call */
            return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
        }
        if (w < 0 && errno != EINTR)
            return as_err_set(err, "git %s: could not collect its exit status", verb);
        if (now_ms() >= deadline) {
            proc_terminate(&p, 500);
            return timed_out(err, verb, limit);
        }
        struct timespec step = {0, 5 * 1000000L};
        nanosleep(&step, NULL);
    }
}
