/* The host run executor (see host.h). */
#include "sandbox/host.h"
#include "sandbox/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/proc.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "sandbox/record.h"

extern char **environ;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- spawning and waiting ---------------------------------------------------------- */

enum tty_mode { TTY_NONE, TTY_FOREGROUND, TTY_PTY, TTY_HEADLESS };

#define HEADLESS_CAPTURE (1u << 20)

/* The headless run's stdout as relayed. */
struct capture {
    sha256_ctx h;
    long long bytes;
};

struct child {
    pid_t pid;
    int mfd; /* pty master (TTY_PTY), or the stdout pipe's read end (TTY_HEADLESS) */
    int ofd; /* TTY_HEADLESS: the pipe's write end, the harness's stdout */
    enum tty_mode tty;
    struct termios saved; /* the caller's terminal, restored at the end */
    int raw;              /* fd 0 was put in raw mode */
};

static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void write_all(int fd, const char *b, size_t n)
{
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        b += w;
        n -= (size_t)w;
    }
}

/* The child side: never returns. Reports an exec failure's errno on efd. */
static void child_exec(const struct sbx_plan *p, struct child *c, const char *pts, char **envp,
                       const sigset_t *old, pid_t parent, int efd)
{
    if (c->tty == TTY_PTY) {
        setsid();
        int s = open(pts, O_RDWR);
        if (s < 0 || ioctl(s, TIOCSCTTY, 0) < 0)
            goto fail;
        tcsetattr(s, TCSANOW, &c->saved);
        struct winsize ws;
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
            ioctl(s, TIOCSWINSZ, &ws);
        dup2(s, 0);
        dup2(s, 1);
        dup2(s, 2);
        if (s > 2)
            close(s);
    } else {
        if (c->tty == TTY_HEADLESS) {
            int nul = open("/dev/null", O_RDONLY);
            if (nul < 0 || dup2(nul, 0) < 0 || dup2(c->ofd, 1) < 0)
                goto fail;
            if (nul > 2)
                close(nul);
        }
        setpgid(0, 0);
        if (c->tty == TTY_FOREGROUND)
            tcsetpgrp(STDIN_FILENO, getpid()); /* SIGTTOU is still blocked here */
    }
    /* The harness does not outlive its launcher: a killed launcher's run is
     * reverted by the next one, and the harness must not keep using it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(127);
    proc_default_signals();
    sigprocmask(SIG_SETMASK, old, NULL);
    if (chdir(p->host_cwd) < 0)
        goto fail;
    execve(p->argv.v[0], p->argv.v, envp);
fail:;
    int e = errno;
    write_all(efd, (const char *)&e, sizeof e);
    _exit(127);
}

/* The caller's environment with AGENTSTACK_RUN_ID set to this run; *own
 * is the one string allocated here. */
static char **child_env(const struct sbx_plan *p, char **own)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 2, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "AGENTSTACK_RUN_ID=", 18) != 0)
            env[k++] = environ[i];
    *own = xasprintf("AGENTSTACK_RUN_ID=%s", p->run_id);
    env[k++] = *own;
    env[k] = NULL;
    return env;
}

static void pty_winsize(int mfd)
{
    struct winsize ws;
    if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
        ioctl(mfd, TIOCSWINSZ, &ws);
}

/* Copies what the pty (or the headless pipe, hashed into cap) has to the
 * caller's stdout: 1 data, 0 EOF/EIO
 * (every slave descriptor is closed), -1 nothing right now. */
static int pty_pump(int mfd, struct capture *cap)
{
    char buf[16384];
    ssize_t n = read(mfd, buf, sizeof buf);
    if (n > 0) {
        write_all(STDOUT_FILENO, buf, (size_t)n);
        if (cap) {
            if (cap->bytes < (long long)HEADLESS_CAPTURE) {
                size_t take = (size_t)n;
                if ((long long)take > (long long)HEADLESS_CAPTURE - cap->bytes)
                    take = (size_t)((long long)HEADLESS_CAPTURE - cap->bytes);
                sha256_update(&cap->h, buf, take);
            }
            cap->bytes += n;
        }
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return -1;
    return 0;
}

/* Relays between the caller's terminal and the harness until it exits and
 * its output is drained: keyboard input to the pty, its output (hashed into
 * cap when headless) to stdout, relayed signals to its process group; a
 * SIGTERM or SIGHUP arms a 2-second timer after which the group is killed.
 * Returns the harness's wait status. */
static int relay(const struct child *c, int sfd, int tfd, struct capture *capp)
{
    int status = 0, exited = 0, armed = 0, in_open = c->tty == TTY_PTY, m_open = c->mfd >= 0;
    /* Keyboard input not yet taken by the pty: while some is pending, stdin
     * is not read, and the master never blocks us (a harness that neither
     * reads nor stops writing cannot wedge the relay). */
    char pend[4096];
    size_t plen = 0, poff = 0;
    if (c->mfd >= 0)
        fcntl(c->mfd, F_SETFL, O_NONBLOCK);
    while (!exited || m_open) {
        struct pollfd pf[4] = {{sfd, POLLIN, 0},
                               {tfd, POLLIN, 0},
                               {in_open && !plen ? STDIN_FILENO : -1, POLLIN, 0},
                               {m_open ? c->mfd : -1, (short)(POLLIN | (plen ? POLLOUT : 0)), 0}};
        if (exited) {
            /* The harness is gone: copy out what the pty still holds. */
            fcntl(c->mfd, F_SETFL, O_NONBLOCK);
            while (pty_pump(c->mfd, capp) > 0)
                ;
            break;
        }
        if (poll(pf, 4, -1) < 0) {
            if (errno == EINTR)
                continue;
            kill(-c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            exited = 1;
            continue;
        }
        if ((pf[3].revents & (POLLIN | POLLHUP | POLLERR)) && pty_pump(c->mfd, capp) == 0)
            m_open = 0;
        if (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = read(STDIN_FILENO, pend, sizeof pend);
            if (r > 0) {
                plen = (size_t)r;
                poff = 0;
            } else if (r == 0 || errno != EINTR) {
                in_open = 0;
            }
        }
        if (plen && m_open) {
            ssize_t w = write(c->mfd, pend + poff, plen - poff);
            if (w > 0)
                poff += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                poff = plen; /* the pty is gone: drop it */
            if (poff >= plen)
                plen = poff = 0;
        }
        if (pf[1].revents & POLLIN) {
            uint64_t x;
            if (read(tfd, &x, sizeof x) > 0)
                kill(-c->pid, SIGKILL);
        }
        if (pf[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                int sig = (int)si.ssi_signo;
                if (sig == SIGCHLD) {
                    if (waitpid(c->pid, &status, WNOHANG) == c->pid)
                        exited = 1;
                    continue;
                }
                if (sig == SIGTTOU || sig == SIGPIPE)
                    continue;
                if (sig == SIGWINCH && c->tty == TTY_PTY) {
                    pty_winsize(c->mfd); /* the kernel tells the harness */
                    continue;
                }
                kill(-c->pid, sig);
                if ((sig == SIGTERM || sig == SIGHUP) && !armed) {
                    struct itimerspec its = {.it_value = {.tv_sec = 2}};
                    timerfd_settime(tfd, 0, &its, NULL);
                    armed = 1;
                }
            }
        }
        if (!exited && waitpid(c->pid, &status, WNOHANG) == c->pid)
            exited = 1;
    }
    return status;
}

/* Starts the harness and relays until it exits. -1 + err when it could not
 * be started (res->launched = 0). */
static int spawn_wait(const struct sbx_plan *p, struct sbx_host_result *res, struct as_err *err)
{
    struct child c;
    memset(&c, 0, sizeof c);
    c.pid = -1;
    c.mfd = -1;
    c.ofd = -1;
    char pts[128] = "";
    struct capture cap, *capp = NULL;
    if (p->prompt_arg) {
        int op[2];
        if (pipe2(op, O_CLOEXEC) < 0)
            return as_err_errno(err, "pipe");
        c.tty = TTY_HEADLESS;
        c.mfd = op[0];
        c.ofd = op[1];
        sha256_init(&cap.h);
        cap.bytes = 0;
        capp = &cap;
    } else if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &c.saved) == 0) {
        if (isatty(STDOUT_FILENO))
            c.tty = TTY_PTY;
        else if (tcgetpgrp(STDIN_FILENO) == getpgrp())
            c.tty = TTY_FOREGROUND;
    }
    if (c.tty == TTY_PTY) {
        c.mfd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (c.mfd < 0 || grantpt(c.mfd) < 0 || unlockpt(c.mfd) < 0 ||
            ptsname_r(c.mfd, pts, sizeof pts) != 0) {
            as_err_errno(err, "allocating a pseudo-terminal");
            if (c.mfd >= 0)
                close(c.mfd);
            return -1;
        }
    }
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0) {
        if (c.mfd >= 0)
            close(c.mfd);
        if (c.ofd >= 0)
            close(c.ofd);
        if (capp)
            sha256_abort(&cap.h);
        return as_err_errno(err, "pipe");
    }
    sigset_t set, old;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof relayed / sizeof relayed[0]; i++)
        sigaddset(&set, relayed[i]);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTTOU);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, &old);
    char *runvar = NULL;
    char **envp = child_env(p, &runvar);
    pid_t parent = getpid();
    fflush(NULL);
    long long t0 = now_ms();
    c.pid = fork();
    if (c.pid == 0) {
        close(ep[0]);
        child_exec(p, &c, pts, envp, &old, parent, ep[1]);
    }
    int rc = -1, sfd = -1, tfd = -1, registered = 0;
    close(ep[1]);
    if (c.ofd >= 0) {
        close(c.ofd); /* the harness holds the only write end: EOF when it is done */
        c.ofd = -1;
    }
    if (c.pid < 0) {
        as_err_errno(err, "fork");
        close(ep[0]);
        goto out;
    }
    if (c.tty != TTY_PTY)
        setpgid(c.pid, c.pid); /* both sides set it: no race with the kill below */
    if (c.tty == TTY_FOREGROUND)
        tcsetpgrp(STDIN_FILENO, c.pid);
    /* Registered before the exec is confirmed, so the run is killable from
     * its first output on; a failed launch drops the entry at out. */
    registered = sbx_reg_add_or_warn(p, c.pid, 1);
    int e = 0;
    ssize_t n;
    while ((n = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(ep[0]);
    if (n == (ssize_t)sizeof e) {
        int st;
        waitpid(c.pid, &st, 0);
        errno = e;
        as_err_errno(err, "launching %s", p->argv.v[0]);
        goto out;
    }
    res->launched = 1;
    if (c.tty == TTY_PTY) {
        struct termios raw = c.saved;
        cfmakeraw(&raw);
        c.raw = tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0;
    }
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    int status = relay(&c, sfd, tfd, capp);
    res->duration_ms = now_ms() - t0;
    if (WIFEXITED(status))
        res->code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        res->sig = WTERMSIG(status);
    /* The run's process group ends with the run (its MCP servers too). */
    kill(-c.pid, SIGTERM);
    rc = 0;
out:
    if (registered)
        sbx_reg_remove(p->home, p->run_id);
    if (c.raw)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &c.saved);
    if (c.tty == TTY_FOREGROUND)
        tcsetpgrp(STDIN_FILENO, getpgrp()); /* SIGTTOU is blocked */
    if (c.mfd >= 0)
        close(c.mfd);
    if (capp) {
        uint8_t d[SHA256_LEN];
        char hex[SHA256_HEX_LEN + 1];
        sha256_final(&cap.h, d);
        hex_encode(d, SHA256_LEN, hex);
        snprintf(res->out_sha256, sizeof res->out_sha256, "sha256:%s", hex);
        res->out_bytes = cap.bytes;
        res->out_truncated = cap.bytes > (long long)HEADLESS_CAPTURE;
    }
    if (sfd >= 0)
        close(sfd);
    if (tfd >= 0)
        close(tfd);
    /* Drop what is pending (a forwarded SIGINT must not also end us), then
     * keep the relayed signals blocked: the caller still has to revert. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0)
        ;
    free(runvar);
    free(envp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* ---- the run ------------------------------------------------------------------------ */

static int append(struct sbx_rec *rec, const char *name, json_t *f, struct as_err *err)
{
    if (sbx_rec_append(rec, name, f, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        return -1;
    }
    return 0;
}

/* Writes the grant once and returns its digest. */
static int freeze(const struct sbx_plan *p, char digest[80], struct as_err *err)
{
    strbuf b = SB_INIT;
    json_canonical(p->grant, &b);
    sb_addc(&b, '\n');
    int fd = open(p->grant_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        sb_release(&b);
        return as_err_errno(err, "writing the grant %s", p->grant_path);
    }
    size_t off = 0;
    while (off < b.len) {
        ssize_t w = write(fd, b.buf + off, b.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    int ok = off == b.len && fsync(fd) == 0;
    close(fd);
    if (!ok) {
        unlink(p->grant_path);
        sb_release(&b);
        return as_err_set(err, "writing the grant %s: short write", p->grant_path);
    }
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(b.buf, b.len, hex);
    snprintf(digest, 80, "sha256:%s", hex);
    sb_release(&b);
    return 0;
}

static json_t *gate_event(const struct sbx_gate *g, const char *detail)
{
    json_t *f = json_object();
    json_object_set_new(f, "gate", json_string(g->name));
    json_object_set_new(f, "passed", json_boolean(g->passed && !detail));
    json_object_set_new(f, "detail", json_string(detail ? detail : g->detail));
    return f;
}

static void record_refused(struct sbx_rec *rec)
{
    json_t *f = json_object();
    json_object_set_new(f, "outcome", json_string("refused"));
    json_object_set_new(f, "usage", json_string("unavailable"));
    struct as_err e = AS_ERR_INIT;
    if (sbx_rec_append(rec, "locked_outcome", f, &e) < 0)
        fprintf(stderr, "warning: could not record the refusal\n");
}

static int do_revert(const struct sbx_plan *p, const struct sbx_host_hooks *h,
                     struct sbx_host_result *res, struct as_err *err)
{
    if (!h || !h->revert)
        return 0;
    struct as_err e = AS_ERR_INIT;
    if (h->revert(h->ctx, p, &e) < 0) {
        res->revert_failed = 1;
        if (err && !as_err_isset(err))
            *err = e;
        return -1;
    }
    return 0;
}

int sbx_host_execute(const struct sbx_plan *p, const struct sbx_host_hooks *h, FILE *banner,
                     struct sbx_host_result *res, struct as_err *err)
{
    memset(res, 0, sizeof *res);
    res->code = res->sig = -1;
    int protected_run = p->mode == SBX_MODE_HOST;
    struct sbx_rec rec;
    int injected = 0;

    sbx_plan_print(p, banner, 0);
    fflush(banner);
    if (protected_run)
        fprintf(stderr, "note: HOST / PROTECTED gates and freezes what agentstack delivers; it is "
                        "not isolation — the harness runs as you, with your files and network "
                        "(use --sandbox or --lockdown to confine it)\n");
    else
        fprintf(stderr, "note: --unprotected skips every gate (trust, locked-verify, "
                        "rendered-verify, policy-admission, model-effort) and freezes no grant\n");

    if (sbx_rec_create(p->home, p->run_id, p->posture_slug, &rec, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        return -1;
    }
    json_t *f = json_object();
    json_object_set_new(f, "harness", json_string(p->harness_id));
    json_object_set_new(f, "posture", json_string(p->posture_slug));
    json_object_set_new(f, "workspace", json_string(p->host_cwd));
    if (p->toolset)
        json_object_set_new(f, "toolset", json_string(p->toolset));
    if (append(&rec, protected_run ? "attempt_started" : "host_started", f, err) < 0) {
        sbx_rec_remove(&rec);
        sbx_rec_close(&rec);
        return -1;
    }

    if (protected_run) {
        for (size_t i = 0; i < p->gates.n; i++) {
            const struct sbx_gate *g = &p->gates.v[i];
            struct as_err e = AS_ERR_INIT;
            char b[2300];
            const char *failed = NULL;
            int is_freeze = !strcmp(g->name, "grant-freeze"),
                is_handoff = !strcmp(g->name, "grant-handoff"),
                is_launch = !strcmp(g->name, "launch-scope");
            if (g->passed && is_freeze && freeze(p, res->grant_digest, &e) < 0)
                failed = as_err_str(&e, b, sizeof b);
            if (g->passed && is_handoff && p->inject_path && h && h->inject) {
                if (h->inject(h->ctx, p, &e) < 0)
                    failed = as_err_str(&e, b, sizeof b);
                else
                    injected = 1;
            }
            if (g->passed && is_launch && access(p->argv.v[0], X_OK) < 0) {
                as_err_errno(&e, "%s", p->argv.v[0]);
                failed = as_err_str(&e, b, sizeof b);
            }
            if (append(&rec, "gate_decision", gate_event(g, failed), err) < 0 ||
                (is_freeze && !failed && g->passed &&
                 append(&rec, "grant_frozen",
                        json_pack("{s:s, s:I, s:I}", "grant_digest", res->grant_digest, "pid",
                                  (json_int_t)getpid(), "pid_start",
                                  (json_int_t)sbx_proc_start(getpid())),
                        err) < 0)) {
                record_refused(&rec);
                goto refused;
            }
            if (g->passed && !failed) {
                if (is_freeze)
                    fprintf(banner, "authority grant frozen: %s\n", res->grant_digest);
                continue;
            }
            record_refused(&rec);
            as_err_set(err, "refusing to run %s: [%s] %s", p->harness_id, g->name,
                       failed ? failed : g->detail);
            if (!failed && g->hint)
                as_err_hint(err, "%s", g->hint);
            else if (failed && e.hint[0])
                as_err_hint(err, "%s", e.hint);
            goto refused;
        }
    } else if (h && h->inject) {
        struct as_err e = AS_ERR_INIT;
        if (h->inject(h->ctx, p, &e) < 0) {
            json_t *x = json_pack("{s:s}", "outcome", "refused");
            sbx_rec_append(&rec, "host_exited", x, NULL);
            *err = e;
            goto refused;
        }
        injected = 1;
    }
    fflush(banner);

    struct as_err le = AS_ERR_INIT;
    int launched = spawn_wait(p, res, &le) == 0;
    if (injected)
        do_revert(p, h, res, err);
    if (launched && p->prompt_arg) {
        json_t *o = json_object();
        json_object_set_new(o, "bytes", json_integer(res->out_bytes));
        json_object_set_new(o, "sha256", json_string(res->out_sha256));
        json_object_set_new(o, "truncated", json_boolean(res->out_truncated));
        struct as_err he = AS_ERR_INIT;
        if (sbx_rec_append(&rec, "headless_output", o, &he) < 0)
            fprintf(stderr, "warning: could not record the headless output\n");
    }
    f = json_object();
    if (protected_run)
        json_object_set_new(f, "outcome", json_string(launched ? "completed" : "launch-failed"));
    else
        json_object_set_new(f, "outcome",
                            json_string(!launched      ? "launch-failed"
                                        : res->sig > 0 ? "signaled"
                                                       : "exited"));
    if (res->code >= 0)
        json_object_set_new(f, protected_run ? "exit_code" : "code", json_integer(res->code));
    if (res->sig > 0)
        json_object_set_new(f, "signal", json_integer(res->sig));
    json_object_set_new(f, "duration_ms", json_integer(res->duration_ms));
    if (protected_run) {
        json_object_set_new(f, "grant_digest", json_string(res->grant_digest));
        json_object_set_new(f, "usage", json_string("unavailable"));
    }
    struct as_err re = AS_ERR_INIT;
    if (sbx_rec_append(&rec, protected_run ? "locked_outcome" : "host_exited", f, &re) < 0)
        fprintf(stderr, "warning: could not record the run's end\n");
    sbx_rec_close(&rec);
    if (!launched) {
        if (!res->revert_failed)
            *err = le;
        return -1;
    }
    return 0;

refused:
    if (injected)
        do_revert(p, h, res, NULL);
    sbx_rec_close(&rec);
    return -1;
}
