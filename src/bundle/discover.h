/*
 * discover — which project a command acts on (docs/manifest.md, docs/trust.md).
 *
 * Why: every command must agree on the project base, its manifest dir and
 * root, and trust must key consent by the same canonical path; one walk
 * implements the rules.
 *
 * Guarantees:
 *  - The walk never treats $HOME, any ancestor of $HOME, or the machine home
 *    ($AGENTSTACK_HOME) as a project (raw and canonical comparison); the
 *    machine home check comes before the file test, so the machine manifest
 *    is never a project manifest.
 *  - `.agentstack/agentstack.toml` wins over a root `agentstack.toml` in the
 *    same base; the nearest base wins over ones further up.
 *  - Error texts carry fixed prefixes:
 *    "no agentstack manifest at or above <start>" and
 *    "no agentstack manifest in <root>" (the latter names both layouts,
 *    `agentstack init` and `--manifest-dir`, never an OS error text).
 *  - discover_check_layout refuses a manifest dir or manifest/overlay/lock
 *    file that is a symlink resolving outside the project root ("symlink"),
 *    and non-regular manifest files (a FIFO would hang a reader).
 */
#ifndef AS_BUNDLE_DISCOVER_H
#define AS_BUNDLE_DISCOVER_H

#include <stdbool.h>

#include "base/err.h"
#include "base/strbuf.h"

#define BUNDLE_MANIFEST_NAME "agentstack.toml"
#define BUNDLE_OVERLAY_NAME "agentstack.local.toml"
#define BUNDLE_LOCK_NAME "agentstack.lock"
#define BUNDLE_SIG_NAME "agentstack.lock.sig"
#define BUNDLE_DIR_NAME ".agentstack"

/* Where a project's files are. All strings owned (free with bundle_paths_free);
 * paths are absolute (anchored at the cwd) but not canonicalized, so messages
 * show what the user typed, resolved to absolute. */
struct bundle_paths {
    char *start;        /* where the walk started, or the --manifest-dir given */
    char *base;         /* project base (holds .agentstack/ or agentstack.toml) */
    char *manifest_dir; /* <base>/.agentstack when that manifest exists, else <base> */
    char *project_root; /* manifest_dir's parent if it is named .agentstack, else manifest_dir */
    char *manifest;     /* <manifest_dir>/agentstack.toml */
    char *overlay;      /* <manifest_dir>/agentstack.local.toml */
    char *lock;         /* <manifest_dir>/agentstack.lock */
    char *lock_sig;     /* <manifest_dir>/agentstack.lock.sig */
    char *env_file;     /* <manifest_dir>/.env */
    bool found;         /* the manifest file exists (lstat) */
    bool nested;        /* the .agentstack/ layout */
};

void bundle_paths_free(struct bundle_paths *p);

/* Fills p for a base taken verbatim (no walk): DIR may be the project or its
 * .agentstack/ (a base named .agentstack normalizes to its parent). When no
 * manifest exists, p->found = false and the paths describe where a new
 * manifest would go (.agentstack/ unless a root manifest exists). Returns 0,
 * or -1 if base is not an existing directory. */
int discover_at(const char *base, struct bundle_paths *p, struct as_err *err);

/* Walks up from start. Returns 1 and fills p when a base is found,
 * 0 when none (p zeroed), -1 on error. */
int discover_walk(const char *start, struct bundle_paths *p, struct as_err *err);

/* Ordinary commands: with manifest_dir_opt, discover_at(it); else walk
 * from cwd (NULL = getcwd) and, on none, describe cwd (p->found = false). */
int discover_project(const char *manifest_dir_opt, const char *cwd, struct bundle_paths *p,
                     struct as_err *err);

/* Fails with "no agentstack manifest in <root> …" (+ hint) unless p->found. */
int discover_require(const struct bundle_paths *p, struct as_err *err);

/* trust's target: start = path_opt, else manifest_dir_opt, else cwd;
 * explicit starts must be existing directories ("no such directory: <p>")
 * and are canonicalized; the machine home, or the home dir owning it, is
 * refused ("… the machine layer is never gated"); then the walk; none →
 * "no agentstack manifest at or above <start>". */
int discover_trust_target(const char *path_opt, const char *manifest_dir_opt,
                          struct bundle_paths *p, struct as_err *err);

/* The canonical project key: realpath of the base (the raw absolute
 * path if that fails); a base named .agentstack normalizes to its parent. */
int discover_project_key(const char *base, strbuf *out);

/* 1 if dir is $HOME or an ancestor of $HOME (raw or canonical). */
bool discover_is_home_or_ancestor(const char *dir);
/* 1 if dir is the machine home (raw or canonical). */
bool discover_is_machine_home(const char *dir);

/* Absolute, lexically cleaned form of path (anchored at the cwd; "." and
 * ".." resolved textually, "//" and a trailing "/" removed). */
int discover_abspath(const char *path, strbuf *out, struct as_err *err);

/* Refuses a project whose .agentstack dir, manifest, overlay or lock is a
 * symlink resolving outside the project root, or whose manifest/overlay/lock
 * exists but is not a regular file. */
int discover_check_layout(const struct bundle_paths *p, struct as_err *err);

#endif
