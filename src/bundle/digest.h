/*
 * digest — every content digest the lock pins and the trust gate checks.
 * The exact byte framing of each is written down in docs/formats.md.
 *
 * Why a walk of our own instead of fs_walk: a pin must describe the bytes
 * that are really there, so the walk descends with openat(O_NOFOLLOW |
 * O_DIRECTORY) from the directory it already holds open. A directory swapped
 * for a symlink between listing and opening is then an error, never a detour
 * outside the tree, and a FIFO is opened O_NONBLOCK and refused after fstat,
 * so nothing can make the walk hang.
 *
 * Guarantees:
 *  - Streaming: file bytes go through one 64 KiB buffer; no file is ever read
 *    whole into memory, whatever its size.
 *  - One walk: symlinks ("skill content contains a symlink"), FIFOs, sockets
 *    and devices are rejected in the same pass that sizes and hashes, and
 *    depth beyond 64 levels is an error.
 *  - Fresh bytes every call: there is no stat- or mtime-keyed cache anywhere,
 *    so an edit that keeps size and mtime still moves the digest.
 *  - A file whose size changes while it is being hashed is an error, never a
 *    digest of a half-written file.
 */
#ifndef AS_BUNDLE_DIGEST_H
#define AS_BUNDLE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/sha256.h"
#include "base/toml.h"

#define DIGEST_MAX_DEPTH 64
#define DIGEST_BUF_SIZE (64 * 1024)

/* Domain prefixes; each is followed by one NUL byte in the hashed stream. */
#define DIGEST_SKILL_PREFIX "agentstack-dir-digest-v2"
#define DIGEST_ROOT_PREFIX "agentstack-integrity-root-v1"
#define DIGEST_INLINE_SERVER_PREFIX "agentstack-inline-server-v1"
#define DIGEST_STAMP_PREFIX "agentstack-lock-manifest-stamp-v1"
#define DIGEST_CODE_PREFIX "agentstack-code-tree-v1"

/* A server's code tree is pinned only while it stays this small: past it
 * the pin fails (a tree this large is not one server's own code). */
#define DIGEST_CODE_MAX_FILES 4096
#define DIGEST_CODE_MAX_BYTES ((uint64_t)64 << 20)

enum digest_tree_kind {
    DIGEST_TREE_SKILL, /* a directory; .git skipped at any depth */
    DIGEST_TREE_ROOT,  /* an integrity root: a directory (.git included) or one file */
    DIGEST_TREE_CODE,  /* a server's code directory: .git, .hg, .svn and __pycache__
                        * skipped at any depth; bounded by DIGEST_CODE_MAX_* */
};

/*
 * Optional observer of a walk, so a caller (the content store) can copy the
 * exact bytes that were hashed in the same pass. Every callback may be NULL.
 * A callback returning -1 (with err set) stops the walk.
 */
struct digest_sink {
    void *ctx;
    int (*dir)(void *ctx, const char *rel, struct as_err *err);
    int (*file_begin)(void *ctx, const char *rel, uint64_t size, struct as_err *err);
    int (*file_data)(void *ctx, const void *data, size_t len, struct as_err *err);
    int (*file_end)(void *ctx, struct as_err *err);
};

/* What one walk saw. */
struct digest_stats {
    uint64_t files;
    uint64_t bytes;
};

/* Digest of a skill directory or an integrity root into hex (65 bytes).
 * sink and stats may be NULL. */
int digest_tree(const char *path, enum digest_tree_kind kind, const struct digest_sink *sink,
                struct digest_stats *stats, char hex[SHA256_HEX_LEN + 1], struct as_err *err);
static inline int digest_skill_tree(const char *dir, char hex[SHA256_HEX_LEN + 1],
                                    struct as_err *err)
{
    return digest_tree(dir, DIGEST_TREE_SKILL, NULL, NULL, hex, err);
}
static inline int digest_code_tree(const char *dir, char hex[SHA256_HEX_LEN + 1],
                                   struct as_err *err)
{
    return digest_tree(dir, DIGEST_TREE_CODE, NULL, NULL, hex, err);
}
/* The entries a code tree skips (VCS metadata, interpreter caches). */
int digest_code_skipped(const char *name);
static inline int digest_integrity_root(const char *path, char hex[SHA256_HEX_LEN + 1],
                                        struct as_err *err)
{
    return digest_tree(path, DIGEST_TREE_ROOT, NULL, NULL, hex, err);
}

/* Plain SHA-256 of one regular file (instruction bodies, executables, library
 * server files). A symlink at the last component and non-regular files are errors. */
int digest_file(const char *path, char hex[SHA256_HEX_LEN + 1], struct as_err *err);

/* Appends the canonical JSON of a TOML value. */
void digest_canonical_json(const toml_value *v, strbuf *out);

/* Settings key pin: SHA-256 of the value's canonical JSON. */
void digest_settings_value(const toml_value *v, char hex[SHA256_HEX_LEN + 1]);

/* Inline server pin: SHA-256("agentstack-inline-server-v1" NUL || canonical JSON
 * of the merged server table after normalization: keys whose value is an empty
 * string, array or table are dropped, and so is targets = ["*"], the default). */
void digest_inline_server(const toml_value *server, char hex[SHA256_HEX_LEN + 1]);
/* The normalized table the inline-server digest covers (caller frees with toml_free). */
toml_value *digest_inline_server_normalize(const toml_value *server);

/* A file taken whole for a framed digest: present = 0 means absent (not empty). */
struct digest_blob {
    int present;
    const void *data;
    size_t len;
};
/* Appends S(x): 0x01 || u64le(len) || bytes when present, 0x00 when absent. */
void digest_frame(sha256_ctx *c, const struct digest_blob *b);
/* Manifest stamp: SHA-256("agentstack-lock-manifest-stamp-v1" NUL ||
 * S(manifest) || S(overlay)). */
void digest_manifest_stamp(const struct digest_blob *manifest, const struct digest_blob *overlay,
                           char hex[SHA256_HEX_LEN + 1]);

#endif
