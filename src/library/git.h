/*
 * git — running the `git` command for the library, packs and `up`
 * (docs/library.md).
 *
 * Why: fetching a pack or syncing a library talks to repositories we do
 * not control. Every call must be unable to prompt, run hooks or filters,
 * reach an unexpected transport, or hang the command.
 *
 * Guarantees (each call):
 *  - argv only, never a shell; its own process group; stdin /dev/null.
 *  - A scrubbed environment: only PATH, HOME, USER, LOGNAME, TMPDIR, TZ,
 *    SSH_AUTH_SOCK, SSL_CERT_FILE/DIR and proxy variables pass, plus
 *    GIT_TERMINAL_PROMPT=0, GIT_SSH_COMMAND="ssh -oBatchMode=yes",
 *    GIT_LFS_SKIP_SMUDGE=1, GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null
 *    (no system or global config, so no configured hooks, helpers or
 *    aliases), GIT_ALLOW_PROTOCOL=https:ssh:file unless the user set it,
 *    LC_ALL=C (messages we classify), and an author identity.
 *  - `-c core.hooksPath=/dev/null`, LFS filters off, `protocol.ext.allow=never`,
 *    `core.fsmonitor=false` on every call. Callers that talk to a remote
 *    pass LIB_GIT_UPLOAD_PACK / LIB_GIT_RECEIVE_PACK: a repository's own
 *    remote.<name>.uploadpack/receivepack (a command line git would run on
 *    a local or ssh transport) cannot be overridden with -c, since git
 *    keeps the first value it reads.
 *  - `ext::` and `fd::` URLs, and URLs starting with '-', are refused before
 *    anything is spawned; `http://` is refused for ingestion.
 *  - A deadline (AGENTSTACK_GIT_TIMEOUT_MS, default 300000 ms): past it the
 *    whole group is killed and the call fails "timed out" (bundle/git_run.h,
 *    shared with the skill fetches). Each output stream is capped at 8 MiB
 *    (the group is killed past it).
 *  - Clones and fetches go through lib_git_net: progress on a terminal
 *    without -q, nothing otherwise.
 */
#ifndef AS_LIBRARY_GIT_H
#define AS_LIBRARY_GIT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"

#define LIB_GIT_MAX_STREAM ((size_t)8 << 20)
#define LIB_GIT_UPLOAD_PACK "--upload-pack=git-upload-pack"
#define LIB_GIT_RECEIVE_PACK "--receive-pack=git-receive-pack"

/* Runs `git <args…>` in cwd (NULL = inherit). out/errout may be NULL (the
 * stream is then discarded). Returns git's exit status (0..255), or -1 +
 * err when it could not run, timed out or overflowed a stream. A non-zero
 * status is not an error here: callers classify it. */
int lib_git(const char *cwd, const char *const *args, strbuf *out, strbuf *errout,
            struct as_err *err);

/* lib_git for a clone or fetch that passes "-q": when stderr is a terminal
 * and -q/--quiet is off (git_progress_wanted), the -q becomes --progress
 * and git's progress is shown, sanitized, as it comes (bundle/git_run.h). */
int lib_git_net(const char *cwd, const char *const *args, strbuf *out, strbuf *errout,
                struct as_err *err);

/* Checks a URL or path before any git call. ingest = pack/skill fetches
 * (http:// refused there). */
int lib_git_url_check(const char *url, bool ingest, struct as_err *err);

/* Runs git and turns a non-zero status into an error "git <verb> failed:
 * <last stderr line>". out may be NULL. */
int lib_git_ok(const char *cwd, const char *const *args, strbuf *out, struct as_err *err);

/* The last non-empty line of text (for messages), copied into out. */
void lib_git_last_line(const char *text, strbuf *out);

/* True when `git` can be found on PATH. */
bool lib_git_available(void);

#endif
