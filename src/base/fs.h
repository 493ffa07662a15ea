/*
 * fs — the file operations every other module must use.
 *
 * Guarantees:
 *  - fs_write_atomic: the target is either the old bytes or the new bytes,
 *    never a mix, even after a crash: temp file in the same directory
 *    (O_EXCL|O_NOFOLLOW), write, fsync, rename, fsync the directory. It keeps
 *    the existing file's mode (and owner; a failing fchown refuses the write),
 *    writes through a symlink to its target when allowed, and refuses a
 *    read-only target with a clear error. The temp file is 0600 from its
 *    first byte and gets its final mode before the rename, so a copy never
 *    has a looser mode than asked for, not even for a moment, whatever the
 *    umask. A backup (backup_path) is always exactly 0600, whatever the mode
 *    of the file it copies or of an older backup it replaces. A temp file a
 *    killed writer left (".<name>.agentstack-tmp.<pid>.<16 hex>", ours,
 *    its pid gone) is removed by the next write into the same directory: it
 *    may hold the resolved secrets of the write that never finished.
 *  - fs_private_dir: a directory for private copies is 0700 (created so,
 *    and re-tightened when it has group/other bits); a symlink or a
 *    directory owned by someone else is refused.
 *  - fs_contain is the one containment check: a path that escapes its root
 *    via "..", an absolute path or a symlink is refused.
 *  - fs_walk visits a tree in a stable byte order and never follows symlinks.
 *  - fs_read_file refuses files above a size cap, and non-regular files (a
 *    FIFO would hang the reader).
 */
#ifndef AS_BASE_FS_H
#define AS_BASE_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"

/* Reads a whole regular file into out (appending). Fails with
 * "<path>: exceeds the N-byte limit" above max_bytes, and on non-regular
 * files. With nofollow set, a symlink at the final component is an error. */
int fs_read_file(const char *path, size_t max_bytes, int nofollow, strbuf *out, struct as_err *err);

enum fs_symlink_mode {
    FS_SYMLINK_FOLLOW, /* write the symlink's target (user-scope dotfiles) */
    FS_SYMLINK_REFUSE, /* a symlinked target is an error */
};
struct fs_write_opts {
    mode_t mode; /* for a new file; an existing file keeps its mode */
    enum fs_symlink_mode symlinks;
    const char *contain_root; /* if set, the resolved target must lie inside this dir */
    const char *backup_path;  /* if set and the target exists, copy old bytes here first
                               * (exactly 0600; a symlink at backup_path is refused) */
};
/* Atomically replaces path with data. opts may be NULL (mode 0644, follow). */
int fs_write_atomic(const char *path, const void *data, size_t len,
                    const struct fs_write_opts *opts, struct as_err *err);
/* fs_write_atomic, but opts->mode applies to an existing file too: for
 * private copies (exactly 0600 whatever an older copy's mode was) and for
 * putting a file back with its recorded mode. opts is required. */
int fs_write_exact(const char *path, const void *data, size_t len, const struct fs_write_opts *opts,
                   struct as_err *err);

/* mkdir -p with mode for each created component. */
int fs_mkdirs(const char *path, mode_t mode, struct as_err *err);

/* mkdir -p for a directory that holds private copies (backups, history):
 * missing components are created 0700; the last one, new or existing, ends
 * up 0700 when it had any group/other bit. Refuses (clear error) a symlink
 * or non-directory there, and a directory owned by another user. */
int fs_private_dir(const char *path, struct as_err *err);
/* Re-tightens an existing private file: a regular file (never through a
 * symlink) owned by us with any permission bit outside mode gets exactly
 * mode. 0 when done or nothing to do (absent, a symlink, someone else's);
 * -1 + err when the chmod fails. */
int fs_tighten_file(const char *path, mode_t mode, struct as_err *err);

/* fs_contain's flags. Without FS_CONTAIN_NOFOLLOW, symlinks below root are
 * followed and must lead inside root (its realpath). */
enum {
    FS_CONTAIN_NOFOLLOW = 1,   /* a symlink at any component below root is refused */
    FS_CONTAIN_MUST_EXIST = 2, /* the whole path must exist */
    FS_CONTAIN_NO_DOTDOT = 4,  /* a ".." is refused even when it stays inside root */
    FS_CONTAIN_ABSOLUTE = 8,   /* an absolute path is accepted (it must lie inside root) */
};
/* THE containment check (fs_contain.c): path, relative to anchor (NULL:
 * root; an anchor must lie inside root), must name something strictly
 * inside root (absolute root, normalized): never root itself, never out of
 * it by "..", by an absolute path or through a symlink. out = the joined,
 * normalized path, the one callers then open. Errors name the path as
 * given and the rule ("traversal", "symlink") and return one of these (all
 * negative), else -1. */
#define FS_CONTAIN_E_TRAVERSAL (-2) /* absolute, "..", or out of root lexically */
#define FS_CONTAIN_E_SYMLINK (-3)   /* refused, dangling or leading out of root */
#define FS_CONTAIN_E_MISSING (-4)   /* FS_CONTAIN_MUST_EXIST and it does not exist */
int fs_contain(const char *root, const char *anchor, const char *path, unsigned flags, strbuf *out,
               struct as_err *err);
/* The error for a symlink that realpath cannot follow: "<link>: symlink
 * resolves outside the project (<to>)" when it points out of root (root
 * NULL: never said), else "<link>: symlink does not resolve (it points to
 * <to>, which does not exist)"; with a hint. Returns -1. */
int fs_dangling_link(const char *link, const char *root, struct as_err *err);

/* 1 when path (canonicalized with realpath) is root or inside it. */
int fs_path_within(const char *root, const char *path);

/* Canonical absolute path (realpath) into out; -1 + err. */
int fs_realpath(const char *path, strbuf *out, struct as_err *err);
/* Like fs_realpath, but a path whose tail does not exist yet is still
 * canonicalized: the longest existing prefix goes through realpath and the
 * missing components (which cannot be symlinks) are appended. A ".." in the
 * missing tail is refused. out is reset. */
int fs_canonicalize(const char *path, strbuf *out, struct as_err *err);

/* One entry of a walk. rel is root-relative, '/'-joined; "" for a file root. */
struct fs_entry {
    const char *rel;
    const char *path; /* full path */
    mode_t mode;      /* from lstat */
    off_t size;
    int depth;
};
/* Return 0 to continue, 1 to skip (a directory's children), -1 to stop with err set. */
typedef int (*fs_walk_fn)(const struct fs_entry *e, void *ctx, struct as_err *err);
/* Walks root (a directory, or a single file) depth-first in byte order with
 * '/' lowest (component-wise comparison: "a/b" sorts before "a-b"), never
 * following symlinks (they are reported with S_ISLNK mode). Directories are
 * reported before their contents; the root directory itself is not reported.
 * Top-level entries have depth 1; a tree with entries deeper than max_depth is
 * an error (max_depth < 0: no cap). An unreadable directory is an error. */
int fs_walk(const char *root, int max_depth, fs_walk_fn fn, void *ctx, struct as_err *err);

/* Removes a tree without following symlinks. */
int fs_rmtree(const char *path, struct as_err *err);
/* 1 if path exists (lstat). */
int fs_exists(const char *path);
int fs_is_dir(const char *path);
/* Copies a regular file's bytes (for backups); the destination is written atomically. */
int fs_copy_file(const char *src, const char *dst, mode_t mode, struct as_err *err);

#endif
