/* proc — see proc.h.
 *
 * fork + execve rather than posix_spawn: the child needs setpgid, chdir,
 * signal resets and close-on-exec for every inherited descriptor, and the
 * parent wants the exact reason an exec failed. Between fork and exec the
 * child calls only async-signal-safe functions: everything that allocates
 * (PATH lookup, pipes) happens before the fork. */
#include "base/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "base/xalloc.h"

extern char **environ;

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* What failed in the child, sent to the parent over the CLOEXEC pipe. */
enum { STAGE_EXEC = 1, STAGE_CHDIR, STAGE_SETUP };

void proc_init(struct proc *p, const char *const *argv)
{
    memset(p, 0, sizeof *p);
    p->argv = argv;
    p->in = p->out = p->err = PROC_INHERIT;
    p->in_fd = p->out_fd = p->err_fd = -1;
    p->new_pgroup = 1;
    p->pid = -1;
    p->to_child = p->from_child = p->err_from_child = -1;
}

static int is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int proc_which(const char *name, const char *path_env, strbuf *out)
{
    sb_reset(out);
    if (!name || !*name)
        return -1;
    if (strchr(name, '/')) {
        if (!is_executable_file(name))
            return -1;
        sb_adds(out, name);
        return 0;
    }
    if (!path_env)
        path_env = getenv("PATH");
    if (!path_env)
        path_env = DEFAULT_PATH;
    const char *p = path_env;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        sb_reset(out);
        if (n == 0)
            sb_adds(out, "."); /* an empty PATH entry means the current directory */
        else
            sb_add(out, p, n);
        sb_addc(out, '/');
        sb_adds(out, name);
        if (is_executable_file(out->buf))
            return 0;
        if (!colon)
            break;
        p = colon + 1;
    }
    sb_reset(out);
    return -1;
}

static const char *env_lookup(const char *const *envp, const char *key)
{
    size_t kl = strlen(key);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, key, kl) == 0 && (*envp)[kl] == '=')
            return *envp + kl + 1;
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void proc_close_pipes(struct proc *p)
{
    close_fd(&p->to_child);
    close_fd(&p->from_child);
    close_fd(&p->err_from_child);
}

/* Marks every descriptor from 3 up close-on-exec, including ones other
 * code opened without O_CLOEXEC. */
static void cloexec_from_3(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++) {
        int fl = fcntl(fd, F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC))
            fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
    }
}

static void child_fail(int errfd, int stage, int e)
{
    int msg[2] = {stage, e};
    ssize_t w = write(errfd, msg, sizeof msg);
    (void)w;
    _exit(127);
}

void proc_default_signals(void)
{
    /* The kernel's struct sigaction for x86-64 and most 64-bit ABIs:
     * handler, flags, restorer, then a 64-bit mask (the last argument). */
    struct {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        unsigned long long mask;
    } ks = {SIG_DFL, 0, NULL, 0};
    for (int s = 1; s <= 64; s++)
        if (s != SIGKILL && s != SIGSTOP)
            syscall(SYS_rt_sigaction, s, &ks, NULL, sizeof ks.mask);
}

/* Runs in the child. src[i] is the descriptor for fd i, or -1 to inherit. */
static void child_exec(const struct proc *p, const char *prog, int src[3], int errfd)
{
    /* Dispositions the parent set to SIG_IGN survive exec; a server must
     * start with defaults (a child ignoring SIGPIPE misbehaves). */
    proc_default_signals();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (p->new_pgroup && setpgid(0, 0) != 0)
        child_fail(errfd, STAGE_SETUP, errno);
    /* Move every source above 2 first so one dup2 cannot clobber another's
     * source (a pipe end may itself be fd 0..2 when the parent closed one). */
    int moved[3];
    for (int i = 0; i < 3; i++) {
        moved[i] = -1;
        if (src[i] >= 0) {
            moved[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
            if (moved[i] < 0)
                child_fail(errfd, STAGE_SETUP, errno);
        }
    }
    for (int i = 0; i < 3; i++)
        if (moved[i] >= 0 && dup2(moved[i], i) < 0)
            child_fail(errfd, STAGE_SETUP, errno);
    if (p->cwd && chdir(p->cwd) != 0)
        child_fail(errfd, STAGE_CHDIR, errno);
    cloexec_from_3();
    execve(prog, (char *const *)p->argv,
           (char *const *)(p->envp ? p->envp : (const char *const *)environ));
    child_fail(errfd, STAGE_EXEC, errno);
}

static int open_io(enum proc_io mode, int given, int is_input, int *child_end, int *parent_end,
                   struct as_err *err)
{
    *child_end = -1;
    *parent_end = -1;
    switch (mode) {
    case PROC_INHERIT:
        return 0;
    case PROC_NULL:
        *child_end = open("/dev/null", (is_input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
        if (*child_end < 0)
            return as_err_errno(err, "/dev/null");
        return 0;
    case PROC_FD:
        if (given < 0)
            return as_err_set(err, "PROC_FD without a descriptor");
        *child_end = fcntl(given, F_DUPFD_CLOEXEC, 0);
        if (*child_end < 0)
            return as_err_errno(err, "bad descriptor %d for the child", given);
        return 0;
    case PROC_PIPE: {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0)
            return as_err_errno(err, "pipe");
        *child_end = is_input ? fds[0] : fds[1];
        *parent_end = is_input ? fds[1] : fds[0];
        return 0;
    }
    }
    return as_err_set(err, "unknown proc_io mode %d", (int)mode);
}

int proc_start(struct proc *p, struct as_err *err)
{
    p->pid = -1;
    p->to_child = p->from_child = p->err_from_child = -1;
    if (!p->argv || !p->argv[0] || !p->argv[0][0])
        return as_err_set(err, "no program to run");
    const char *name = p->argv[0];
    strbuf prog = SB_INIT;
    if (strchr(name, '/')) {
        sb_adds(&prog, name); /* execve reports what is wrong with it */
    } else {
        const char *path_env = p->envp ? env_lookup(p->envp, "PATH") : NULL;
        if (proc_which(name, path_env ? path_env : getenv("PATH"), &prog) != 0) {
            sb_release(&prog);
            as_err_set(err, "%s: command not found", name);
            as_err_hint(err, "install %s or put its directory on PATH", name);
            return -1;
        }
    }

    int child[3] = {-1, -1, -1}, parent[3] = {-1, -1, -1}, ep[2] = {-1, -1};
    enum proc_io modes[3] = {p->in, p->out, p->err};
    int given[3] = {p->in_fd, p->out_fd, p->err_fd};
    int rc = -1;
    for (int i = 0; i < 3; i++)
        if (open_io(modes[i], given[i], i == 0, &child[i], &parent[i], err) != 0)
            goto fail;
    if (pipe2(ep, O_CLOEXEC) != 0) {
        as_err_errno(err, "pipe");
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        as_err_errno(err, "%s: cannot start", name);
        goto fail;
    }
    if (pid == 0) {
        close(ep[0]);
        child_exec(p, prog.buf, child, ep[1]);
    }
    /* Both sides set the group, so it exists before either side uses it. */
    if (p->new_pgroup)
        (void)setpgid(pid, pid);
    close_fd(&ep[1]);
    for (int i = 0; i < 3; i++)
        close_fd(&child[i]);
    int msg[2];
    ssize_t r;
    do {
        r = read(ep[0], msg, sizeof msg);
    } while (r < 0 && errno == EINTR);
    close_fd(&ep[0]);
    if (r == (ssize_t)sizeof msg) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        errno = msg[1];
        if (msg[0] == STAGE_CHDIR)
            as_err_errno(err, "%s: cannot change to directory %s", name, p->cwd);
        else if (msg[0] == STAGE_EXEC && msg[1] == ENOENT)
            as_err_set(err, "%s: command not found", name);
        else if (msg[0] == STAGE_EXEC)
            as_err_errno(err, "%s", name);
        else
            as_err_errno(err, "%s: cannot set up the child process", name);
        goto fail;
    }
    p->pid = pid;
    p->to_child = parent[0];
    p->from_child = parent[1];
    p->err_from_child = parent[2];
    rc = 0;
    sb_release(&prog);
    return rc;
fail:
    for (int i = 0; i < 3; i++) {
        close_fd(&child[i]);
        close_fd(&parent[i]);
    }
    close_fd(&ep[0]);
    close_fd(&ep[1]);
    sb_release(&prog);
    return rc;
}

static int decode_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

int proc_wait(struct proc *p)
{
    if (p->pid <= 0)
        return -1;
    int st;
    for (;;) {
        if (waitpid(p->pid, &st, 0) == p->pid)
            return decode_status(st);
        if (errno != EINTR)
            return -1;
    }
}

void proc_kill_group(struct proc *p, int sig)
{
    if (p->pid <= 0)
        return;
    if (p->new_pgroup && kill(-p->pid, sig) == 0)
        return;
    kill(p->pid, sig);
}

int proc_terminate(struct proc *p, int grace_ms)
{
    if (p->pid <= 0)
        return -1;
    proc_kill_group(p, SIGTERM);
    proc_kill_group(p, SIGCONT); /* a stopped process cannot act on SIGTERM */
    int st = 0, status = -1, reaped = 0;
    struct timespec step = {0, 10 * 1000000L};
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            status = decode_status(st);
            reaped = 1;
            break;
        }
        if (r < 0 && errno != EINTR) {
            reaped = 1; /* already reaped (proc_wait): the pid is not ours to signal */
            break;
        }
        if (waited >= grace_ms)
            break;
        nanosleep(&step, NULL);
    }
    /* Whatever is left in the group (a grandchild that ignored SIGTERM, or
     * the leader itself) is killed; the group id stays valid while any
     * member lives, even after the leader was reaped. */
    if (p->new_pgroup)
        kill(-p->pid, SIGKILL);
    if (!reaped) {
        kill(p->pid, SIGKILL);
        for (;;) {
            if (waitpid(p->pid, &st, 0) == p->pid) {
                status = decode_status(st);
                break;
            }
            if (errno != EINTR)
                break;
        }
    }
    return status;
}

/* ---- run to completion ------------------------------------------------- */

/* Writes to a pipe whose reader may be gone without dying of SIGPIPE: the
 * signal is blocked for the call and a pending one we caused is consumed. */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t n)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, buf, n);
    int e = errno;
    if (w < 0 && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

void proc_feed_stdin(struct proc *p, const char *in, size_t in_len, size_t *sent)
{
    if (p->to_child < 0)
        return;
    ssize_t w = write_nosigpipe(p->to_child, in + *sent, in_len - *sent);
    if (w > 0)
        *sent += (size_t)w;
    else if (w < 0 && errno != EAGAIN && errno != EINTR)
        *sent = in_len; /* EPIPE: the child stopped reading; not our error */
    if (*sent >= in_len)
        close_fd(&p->to_child);
}

int proc_run_capture(const char *const *argv, const char *const *envp, const char *cwd,
                     const char *in, size_t in_len, strbuf *out, strbuf *err_out,
                     struct as_err *err)
{
    struct proc p;
    proc_init(&p, argv);
    p.envp = envp;
    p.cwd = cwd;
    p.in = in ? PROC_PIPE : PROC_NULL;
    p.out = out ? PROC_PIPE : PROC_NULL;
    p.err = err_out ? PROC_PIPE : PROC_INHERIT;
    /* A short helper stays in our group so the terminal's Ctrl-C reaches it. */
    p.new_pgroup = 0;
    if (proc_start(&p, err) != 0)
        return -1;
    if (p.to_child >= 0)
        fcntl(p.to_child, F_SETFL, fcntl(p.to_child, F_GETFL) | O_NONBLOCK);
    size_t sent = 0;
    if (p.to_child >= 0 && in_len == 0)
        close_fd(&p.to_child);
    char *buf = xmalloc(64 * 1024);
    int rc = 0;
    while (p.to_child >= 0 || p.from_child >= 0 || p.err_from_child >= 0) {
        struct pollfd pf[3];
        int *fds[3] = {&p.to_child, &p.from_child, &p.err_from_child};
        nfds_t n = 0;
        int idx[3];
        for (int i = 0; i < 3; i++) {
            if (*fds[i] < 0)
                continue;
            pf[n].fd = *fds[i];
            pf[n].events = i == 0 ? POLLOUT : POLLIN;
            pf[n].revents = 0;
            idx[n++] = i;
        }
        if (poll(pf, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = as_err_errno(err, "%s: poll", argv[0]);
            break;
        }
        for (nfds_t k = 0; k < n; k++) {
            int i = idx[k];
            if (!pf[k].revents)
                continue;
            if (i == 0) {
                proc_feed_stdin(&p, in, in_len, &sent);
                continue;
            }
            ssize_t r = read(*fds[i], buf, 64 * 1024);
            if (r > 0) {
                sb_add(i == 1 ? out : err_out, buf, (size_t)r);
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                close_fd(fds[i]);
            }
        }
    }
    free(buf);
    proc_close_pipes(&p);
    if (rc != 0) {
        proc_terminate(&p, 0);
        return -1;
    }
    int status = proc_wait(&p);
    if (status < 0)
        return as_err_errno(err, "%s: wait", argv[0]);
    return status;
}

long long proc_start_ticks(long long pid)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    strbuf b = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    long long v = -1;
    if (fs_read_file(path, 4096, 1, &b, &err) == 0) {
        /* after the command name's closing parenthesis, which may itself
         * hold spaces and parentheses */
        const char *p = strrchr(b.buf, ')');
        int field = 2;
        for (; p && *p && field < 22; p++)
            if (*p == ' ')
                field++;
        if (p && field == 22)
            v = strtoll(p, NULL, 10);
    }
    sb_release(&b);
    return v;
}
