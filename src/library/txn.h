/*
 * txn — the one write transaction behind every project edit the library
 * makes (`add skill`, `add from git:`, `upgrade`, `remove`), and the small
 * pieces those edits share. Internal to src/library.
 *
 * Why: each of those commands writes files, the manifest and the lock, and
 * must leave all three as they were when any step fails (docs/library.md).
 * Four hand-written copies of that sequence drifted apart once; one copy
 * cannot.
 *
 * Guarantees:
 *  - lib_txn_begin records the trust state and the manifest and lock bytes
 *    before anything is written.
 *  - Until lib_txn_commit succeeds, lib_txn_end removes every path recorded
 *    in `created` (newest first), renames every path moved aside back, and
 *    restores the manifest and lock bytes (or removes files that did not
 *    exist). After a commit it deletes what was moved aside.
 *  - lib_txn_commit writes the manifest (contained in the project root),
 *    then re-pins the lock from it; a failed pin is a failed commit.
 */
#ifndef AS_LIBRARY_TXN_H
#define AS_LIBRARY_TXN_H

#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "library/library.h"
#include "trust/trust.h"

struct lib_txn_moved {
    char *from, *aside;
};

struct lib_txn {
    strvec created;                  /* removed on rollback, newest first */
    VEC(struct lib_txn_moved) moved; /* renamed back on rollback; removed on commit */
    const struct bundle_paths *p;    /* NULL until begun */
    strbuf manifest_old, lock_old;   /* the bytes before the write */
    strbuf pins;                     /* the re-pin summary, once committed */
    bool manifest_had, lock_had;     /* whether those files existed */
    bool manifest_written, committed;
    struct trust_status before; /* the trust state before the write */
};

#define LIB_TXN_INIT                                                                               \
    {                                                                                              \
        .created = STRVEC_INIT, .moved = VEC_INIT, .manifest_old = SB_INIT, .lock_old = SB_INIT,   \
        .pins = SB_INIT, .before = {                                                               \
            .key = SB_INIT                                                                         \
        }                                                                                          \
    }

/* The manifest of p, opened for an in-place edit (comments and layout kept). */
toml_edit *lib_manifest_edit(const struct bundle_paths *p, struct as_err *err);

/* Checks trust and records the bytes to restore; nothing is written yet. */
int lib_txn_begin(struct lib_txn *t, const struct bundle_paths *p, struct as_err *err);
/* Moves path aside (restored on rollback, deleted on commit). */
int lib_txn_aside(struct lib_txn *t, const char *path, struct as_err *err);
/* Creates the missing parents of path below base, recording the topmost so a
 * rollback leaves no empty directory behind. */
int lib_txn_parents(struct lib_txn *t, const char *base, const char *path, struct as_err *err);
/* Writes ed's text as the manifest, then re-pins the lock, dropping the lock
 * rows named in drop_skills/drop_servers (either may be NULL). On failure err
 * is prefixed with undone and nothing is committed. */
int lib_txn_commit(struct lib_txn *t, struct library *lib, toml_edit *ed, const strvec *drop_skills,
                   const strvec *drop_servers, const char *undone, struct as_err *err);
/* After a commit: the caller's line (printf-style), then "✓ pinned <summary>
 * in <lock>". */
void lib_txn_done(const struct lib_txn *t, FILE *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Rolls back unless committed; releases everything (safe on LIB_TXN_INIT). */
void lib_txn_end(struct lib_txn *t);
/* A project that was trusted before the write no longer is: say so on diag. */
void lib_txn_warn_untrusted(const struct lib_txn *t, FILE *diag);

/* The toolset an added server or skill joins: want (--toolset; it must be
 * declared), else the manifest's effective toolset, else none (*out NULL). */
int lib_pick_toolset(const struct manifest *m, const char *want, const char **out,
                     struct as_err *err);
/* Appends name to [toolsets.<ts>].<list> ("servers", "skills"; [profiles.*]
 * in a legacy manifest) unless it is already there: adding twice never
 * writes a duplicate entry. 1 when added, 0 when already listed, -1 + err. */
int lib_toolset_add(toml_edit *ed, const struct manifest *m, const char *ts, const char *list,
                    const char *name, struct as_err *err);
/* pre + s (sanitized for the terminal: it came from a repository) + post. */
void lib_say(FILE *f, const char *pre, const char *s, const char *post);

#endif
