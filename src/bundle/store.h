/*
 * store — the machine-local content store (docs/formats.md):
 * $AGENTSTACK_HOME/store/content/<pin>/ holds the exact bytes a pin covers,
 * so a re-gate can diff approved bytes against live ones and keep-pinned
 * delivery can serve approved bytes after the live ones drifted.
 *
 * Guarantees:
 *  - Content-addressed and write-once: a deposit is built in
 *    content/.tmp-<random>, proved against its pin, and moved into place with
 *    a no-replace rename; an existing deposit is never rewritten or repaired.
 *  - Every read re-proves the address (re-hashes the deposit); a deposit
 *    whose bytes do not match its name is reported as an error, never used.
 *  - No symlinks: deposits are built from the digest walk, which refuses them.
 *  - Best-effort for writers: callers warn on a failed deposit, and nothing is
 *    ever evicted.
 */
#ifndef AS_BUNDLE_STORE_H
#define AS_BUNDLE_STORE_H

#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "bundle/digest.h"

/* Integrity roots are deposited only when small. */
#define STORE_ROOT_MAX_FILES 500
#define STORE_ROOT_MAX_BYTES ((uint64_t)8 << 20)

enum store_kind {
    STORE_SKILL_TREE, /* <pin>/ = the skill tree (no .git); pin = skill tree digest */
    STORE_ROOT_TREE,  /* <pin>/ = an integrity root directory; pin = root digest */
    STORE_ROOT_FILE,  /* <pin>/<name> = a single-file integrity root; pin = root digest */
    STORE_FILE,       /* <pin>/<name> = one body; pin = plain SHA-256 of it */
    STORE_CODE_TREE,  /* <pin>/ = a server's code directory; pin = code tree digest */
};

/* "<home>/store/content" and "<home>/store/content/<pin>". */
void store_content_dir(const char *home, strbuf *out);
void store_pin_dir(const char *home, const char *pin, strbuf *out);

/* Deposits the tree at src (skills or integrity roots) under pin. Returns 0 when
 * the deposit exists afterwards (placed now or before), -1 + err otherwise (the
 * source changed since it was pinned, an existing deposit is wrong, I/O). An
 * integrity root over the size bounds is skipped (returns 0, *skipped = 1). */
int store_deposit_tree(const char *home, const char *src, enum store_kind kind, const char *pin,
                       int *skipped, struct as_err *err);
/* Deposits one file (instruction/variant/blueprint bodies, library server files)
 * as <pin>/<name>, streaming; the bytes must hash to pin. */
int store_deposit_file(const char *home, const char *src, const char *name, const char *pin,
                       struct as_err *err);
/* Deposits bytes held in memory (settings values: <target>.<key>.json). */
int store_deposit_bytes(const char *home, const void *data, size_t len, const char *name,
                        const char *pin, struct as_err *err);

/* Looks a deposit up and re-proves it. Returns 1 with path set (the tree dir,
 * or the one file for file kinds) when present and proved; 0 when absent;
 * -1 + err when present but wrong ("content store deposit <pin> does not match
 * its address") or unreadable. */
int store_open(const char *home, const char *pin, enum store_kind kind, strbuf *path,
               struct as_err *err);

/* Copies the tree at src (STORE_CODE_TREE, STORE_SKILL_TREE, STORE_ROOT_TREE)
 * or the file at src (STORE_FILE: as dst/<name>) into dst, a directory it
 * creates (0700), in the same pass that hashes what it reads; files get
 * mode 0500. Returns 0 when the bytes copied hash to pin, 1 when they do not
 * or src is gone (dst removed), -1 + err on I/O. What a confined server
 * runs is such a copy: exactly the bytes that were compared with the pin. */
int store_copy_verified(const char *src, enum store_kind kind, const char *name, const char *pin,
                        const char *dst, struct as_err *err);

/* The first path (tree-relative) where the live tree differs from the
 * deposit of pin: a file changed, added or removed. 1 with rel set, 0 when
 * there is no deposit to compare with (or no difference found). */
int store_tree_first_change(const char *home, const char *pin, enum store_kind kind,
                            const char *live, strbuf *rel);

#endif
