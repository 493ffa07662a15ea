/*
 * git — fetching git sources of skills, extensions and workflows into the
 * machine home (docs/manifest.md, docs/formats.md): a bare clone per
 * repository in store/git/<slug>/ and one immutable checkout per commit in
 * store/co/<slug>/<commit>/.
 *
 * Why: a git skill is pinned by the tree digest of its subpath at a resolved
 * commit. Verification must hash those exact bytes without the network, so
 * resolution leaves a checkout that the lock's commit names.
 *
 * Guarantees:
 *  - git runs by argv (never a shell) with an environment built from scratch:
 *    no GIT_* variable of the caller leaks in, the user's and system git
 *    config are ignored (no hooks, filters, credential helpers or aliases
 *    run), GIT_TERMINAL_PROMPT=0 and ssh in batch mode (never a prompt),
 *    core.hooksPath=/dev/null, and the protocol allowlist is file, https
 *    and ssh only (git:// , http:// and ext:: transports are refused).
 *  - URLs and revisions that could be read as options ("-…") or that hold
 *    control characters are refused before git runs.
 *  - A clone or a checkout appears whole or not at all: it is built under a
 *    .tmp-<random> name and renamed into place without replacing anything.
 *  - A bare clone records the URL it was made from; a different URL whose slug
 *    collides is refused, never mixed into the same clone.
 *  - Every git call runs under the git deadline (AGENTSTACK_GIT_TIMEOUT_MS,
 *    bundle/git_run.h): one that hangs is stopped with its process group
 *    and the call fails "git <verb> timed out after <N> ms". A fetch shows
 *    git's progress when stderr is a terminal and -q is off, else none.
 *  - Offline lookups (fetch = false) run no process and write nothing.
 */
#ifndef AS_BUNDLE_GIT_H
#define AS_BUNDLE_GIT_H

#include <stdbool.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"

/* Appends the -c options every git invocation carries ahead of its
 * subcommand, here and in library/lib_git.c: hooks, fsmonitor, filters and
 * credential helpers off; only the file, https and ssh transports;
 * fetched objects fsck'd; no recursion into submodules; a stalled
 * transfer (under 1000 B/s for 60 s) aborted. One list, so both runners
 * refuse the same things. */
void git_harden_argv(strvec *argv);

/* The slug of a git URL: every byte outside [A-Za-z0-9] becomes '-'. */
void git_slug(const char *url, strbuf *out);

/* True for a full commit id (40 or 64 lowercase hex). */
bool git_is_commit(const char *rev);

/* Checks a source URL: https://, ssh://, user@host:path, file:// or an
 * absolute local path. -1 + err naming the problem. */
int git_check_url(const char *url, struct as_err *err);

/*
 * Resolves url at rev (NULL: the upstream HEAD) to a commit and makes sure
 * store/co/<slug>/<commit>/ exists. With fetch = false nothing runs: only a
 * full commit id whose checkout is already there resolves (returns 1), else 0
 * ("not cached"). With fetch = true a missing clone is made, the clone is
 * fetched unless rev is a commit it already holds, and a missing checkout is
 * created. Returns 1 with commit and dir set, 0 (offline, not cached), or
 * -1 + err.
 */
int git_resolve(const char *home, const char *url, const char *rev, bool fetch, strbuf *commit,
                strbuf *dir, struct as_err *err);

/*
 * Ignore rules (for secret files kept in a project): whether git, run the
 * way the user's own git would find the repository holding dir, ignores
 * rel (relative to dir; it need not exist). Same hardened process as the
 * fetches: no GIT_* of the caller, no user or system config, no hooks and
 * no fsmonitor, so a hostile repository's config runs nothing.
 *
 * Only the repository's rules count (.gitignore files and info/exclude; a
 * personal excludes file protects no other clone). A tracked path is never
 * ignored. With what_if set (a rule as it would be appended to
 * <dir>/.gitignore, e.g. "/.agentstack/.env"), the answer is whether rel
 * would be ignored once that rule is there: the rule is consulted with the
 * lowest precedence, so any other rule that decides for rel (a "!" one in a
 * deeper .gitignore) still wins, as it would after the append.
 *
 * Returns 0 with out filled (in_work_tree false: not in a git work tree),
 * or -1 + err when git fails, or cannot run while a .git exists at or
 * above dir (the answer is then unknown, never "not a repository").
 */
struct git_ignore {
    bool in_work_tree;
    bool ignored;
    strbuf rule; /* the deciding rule "<source>:<line>:<pattern>", empty when none */
};
int git_ignore_check(const char *dir, const char *rel, const char *what_if, struct git_ignore *out,
                     struct as_err *err);
void git_ignore_free(struct git_ignore *g);

#endif
