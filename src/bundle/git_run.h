/*
 * git_run — the one way agentstack waits for a git process: under the
 * configured deadline, with its progress shown only to a person watching
 * (docs/library.md, "How git is run").
 *
 * Why: a clone or fetch talks to a remote we do not control. A remote that
 * accepts and never answers, a stalled TLS handshake or a git that hangs
 * must not hang the command; and a long clone on a terminal should show
 * that it is moving, while a script's stderr stays quiet.
 *
 * Guarantees:
 *  - Every call has a deadline: AGENTSTACK_GIT_TIMEOUT_MS (a positive
 *    number of milliseconds), else GIT_DEFAULT_TIMEOUT_MS. Past it the
 *    process's whole group (git and the transports it started) is sent
 *    SIGTERM, then SIGKILL, and reaped; the call fails with "git <verb>
 *    timed out after <N> ms and was stopped", whatever git was doing.
 *  - git runs in a process group of its own, stdin /dev/null unless input
 *    is given; a stream past max_stream bytes stops it the same way.
 *  - git_progress_wanted() is true only when stderr is a terminal and
 *    -q/--quiet is off. With progress on, git's stderr is copied to ours
 *    as it arrives, every byte outside printable ASCII, CR and LF shown as
 *    '?' (a remote's "remote: …" lines are its text, and must not drive the
 *    terminal); it is captured for error messages all the same.
 */
#ifndef AS_BUNDLE_GIT_RUN_H
#define AS_BUNDLE_GIT_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"

#define GIT_DEFAULT_TIMEOUT_MS 300000L

/* The deadline of every git call, in ms. */
long git_timeout_ms(void);

/* Whether a clone or fetch should pass --progress (and show it). */
bool git_progress_wanted(void);

struct git_run {
    const char *const *argv; /* argv[0] "git" (looked up in PATH), NULL-ended */
    const char *const *envp; /* the environment, NULL-ended */
    const char *cwd;         /* NULL = inherit */
    const char *in;          /* stdin bytes, or NULL for /dev/null */
    size_t in_len;
    strbuf *out, *errout; /* captured streams; NULL = discarded */
    size_t max_stream;    /* per stream; 0 = no cap */
    bool progress;        /* copy stderr to ours, sanitized, as it arrives */
    const char *verb;     /* for messages ("fetch"); NULL = argv's first non-option */
};

/* Runs r to completion within git_timeout_ms(). Returns git's exit status
 * (0..255, 128+N after signal N), or -1 + err when it could not start,
 * timed out or overflowed a stream. */
int git_run_bounded(const struct git_run *r, struct as_err *err);

#endif
