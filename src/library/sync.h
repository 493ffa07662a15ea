/*
 * sync — `lib sync` (docs/library.md) and
 * the receive-only library step of `up`: a library source travels
 * machine to machine through git, and nothing that looks like a literal
 * secret leaves the machine.
 *
 * Why: a server definition is easy to save with a pasted token in it. The
 * sync is the last point where it is still private, so both the working
 * tree and every outgoing commit are checked before any push.
 *
 * Guarantees:
 *  - Before a commit or push: every servers/<stem>.toml is checked as a server
 *    definition (headers, env, URL userinfo and query, args) by key name
 *    and value shape; every other TOML file by key and shape; other text
 *    files for well-known token prefixes. An unparsable server file is a
 *    finding itself, plus a raw line scan. Outgoing commits (@{u}..HEAD,
 *    origin/<b>..HEAD, or all of history on a first push) are checked line
 *    by line. Any finding refuses the sync (exit 1, nothing committed or
 *    pushed) unless allow_secrets.
 *  - The refusal prints its fixed first line
 *    ("refusing to sync — '<Key>' looks like a literal secret"), then
 *    the refusal phrase and one line per finding, then how to make it a
 *    ${REF}. Values are never printed.
 *  - `.trash/` is always ignored; the store, sources.toml and secret values
 *    live outside library sources and never travel.
 *  - git runs through lib_git (no prompts, no hooks, deadlines), so a
 *    failure is an error with a hint, never a hang. Pull failures are
 *    classified: unrelated histories, conflict (the rebase is aborted),
 *    network/auth, other.
 */
#ifndef AS_LIBRARY_SYNC_H
#define AS_LIBRARY_SYNC_H

#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"
#include "bundle/literal_secret.h"
#include "library/library.h"

struct lib_secret_hit {
    char *file; /* source-relative path */
    char *key;
    char *commit; /* 40 hex for history findings, else NULL */
    enum lsec_why why;
    bool unparsable; /* the file could not be parsed as a server definition */
};
typedef VEC(struct lib_secret_hit) lib_secret_hits;
void lib_secret_hits_free(lib_secret_hits *h);

/* Scans a library folder's working tree (.git and .trash skipped). */
int lib_secret_scan_tree(const char *root, lib_secret_hits *out, struct as_err *err);
/* Scans the lines a range of commits adds (`git log -p -U0 <range>`). */
int lib_secret_scan_history(const char *root, const char *range, lib_secret_hits *out,
                            struct as_err *err);
/* Prints a refusal (first line, refusal phrase, findings, the fix). */
void lib_secret_report(FILE *f, const char *root, const lib_secret_hits *hits, bool history);

struct lib_sync_opts {
    const char *source; /* NULL = the first source */
    bool init;
    const char *remote;
    bool status;
    const char *message; /* commit message (default "agentstack library sync") */
    bool allow_secrets;
    FILE *out, *diag;
};

/* Runs `lib sync`. 0 = done; 1 = refused and already reported on diag
 * (exit 1); -1 = error in err (the caller prints it). */
int lib_sync(struct library *lib, const struct lib_sync_opts *o, struct as_err *err);

/* The first step of `lib sync` for one folder: a repo → (re)point origin; empty or missing →
 * clone remote; non-empty → git init, .gitignore, snapshot commit, origin.
 * *action says which ("cloned", "initialized", "existing"). */
int lib_sync_init_folder(const char *path, const char *remote, bool allow_secrets,
                         const char **action, FILE *diag, struct as_err *err);

/* `up`'s receive-only step: with an origin, a dirty tree refuses ("…
 * nothing was pulled"), else `git pull --ff-only`. *pulled = 0 when there
 * is no origin or nothing upstream yet. Errors name the URL and the fixes. */
int lib_pull_ff(const char *path, int *pulled, struct as_err *err);

#endif
