/*
 * proc — running other programs, never through a shell.
 *
 * A process is spawned from an argv array into its own process group, with
 * an explicit environment, optional pipes for stdin/stdout/stderr, and
 * close-on-exec for everything else. Killing a process kills its group, so
 * no grandchild outlives the command that started it.
 */
#ifndef AS_BASE_PROC_H
#define AS_BASE_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/strbuf.h"

enum proc_io {
    PROC_INHERIT, /* share the parent's descriptor */
    PROC_PIPE,    /* a pipe; the parent end is in the proc struct */
    PROC_NULL,    /* /dev/null */
    PROC_FD,      /* dup the given fd (stderr_fd etc.) */
};

struct proc {
    /* inputs */
    const char *const *argv; /* argv[0] is looked up in PATH when it has no '/' */
    const char *const *envp; /* NULL = inherit environ */
    const char *cwd;         /* NULL = inherit */
    enum proc_io in, out, err;
    int in_fd, out_fd, err_fd; /* for PROC_FD */
    int new_pgroup;            /* 1 = setpgid(0,0) in the child (default for servers) */
    /* outputs */
    pid_t pid;
    int to_child;       /* write end of stdin pipe, or -1 */
    int from_child;     /* read end of stdout pipe, or -1 */
    int err_from_child; /* read end of stderr pipe, or -1 */
};

/* Fills defaults: all PROC_INHERIT, new_pgroup = 1, fds -1. */
void proc_init(struct proc *p, const char *const *argv);
/* Starts the process. -1 + err (e.g. "<argv0>: command not found") on failure;
 * exec failure in the child is reported to the parent, not as exit 127. */
int proc_start(struct proc *p, struct as_err *err);
/* Waits; returns the exit status (0..255), 128+signal for a signal, -1 on error. */
int proc_wait(struct proc *p);
/* Sends sig to the process group (or the pid when it has none). */
void proc_kill_group(struct proc *p, int sig);
/* SIGTERM the group, wait up to grace_ms, then SIGKILL; reaps. Returns the status. */
int proc_terminate(struct proc *p, int grace_ms);
/* Closes any parent-side pipe ends still open. */
void proc_close_pipes(struct proc *p);

/* One write of in[*sent..in_len) to the child's stdin pipe (non-blocking,
 * made so by the caller) when it is writable: never dies of SIGPIPE, advances
 * *sent, and closes the pipe once everything is sent or the child stopped
 * reading (that is the child's business, not an error). The stdin feed of
 * proc_run_capture and of bundle's git_run_bounded. */
void proc_feed_stdin(struct proc *p, const char *in, size_t in_len, size_t *sent);

/* Convenience: run argv to completion capturing stdout (and stderr if err_out),
 * with stdin from in (or /dev/null). Returns the exit status or -1. */
int proc_run_capture(const char *const *argv, const char *const *envp, const char *cwd,
                     const char *in, size_t in_len, strbuf *out, strbuf *err_out,
                     struct as_err *err);

/* Looks up a program in PATH (or the given path string); out = full path. 0 when found. */
int proc_which(const char *name, const char *path_env, strbuf *out);

/* Puts every signal disposition back to SIG_DFL (SIGKILL/SIGSTOP aside),
 * for a child about to exec: a SIG_IGN survives exec, and whoever started
 * agentstack may have ignored anything. Uses the raw system call because
 * glibc's sigaction refuses its two reserved real-time signals (32, 33).
 * Async-signal-safe: callable after fork/vfork/CLONE_VM. */
void proc_default_signals(void);

/* The start time of process pid (0: this process) in clock ticks since
 * boot, field 22 of /proc/<pid>/stat: with the pid, it names one process
 * even after the pid is reused. -1 when it cannot be read. */
long long proc_start_ticks(long long pid);

#endif
