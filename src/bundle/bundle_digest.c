/* digest — see digest.h. The framing is documented in docs/formats.md. */
#include "bundle/digest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "base/xalloc.h"

struct walk {
    enum digest_tree_kind kind;
    const char *top; /* the path the caller named, for messages */
    const struct digest_sink *sink;
    struct digest_stats *stats;
    sha256_ctx sha;
    unsigned char *buf;
    strbuf rel;            /* current root-relative path */
    uint64_t files, bytes; /* so far (the code tree's bounds) */
};

static const char *what(const struct walk *w)
{
    return w->kind == DIGEST_TREE_SKILL  ? "skill content"
           : w->kind == DIGEST_TREE_CODE ? "server code"
                                         : "integrity root";
}

int digest_code_skipped(const char *name)
{
    static const char *const skip[] = {".git", ".hg", ".svn", "__pycache__", NULL};
    for (size_t i = 0; skip[i]; i++)
        if (strcmp(name, skip[i]) == 0)
            return 1;
    return 0;
}

static int refuse_entry(struct walk *w, mode_t mode, struct as_err *err)
{
    const char *rel = w->rel.len ? w->rel.buf : ".";
    if (S_ISLNK(mode))
        return as_err_set(err, "%s contains a symlink: %s (in %s)", what(w), rel, w->top);
    const char *kind = S_ISFIFO(mode)   ? "a FIFO"
                       : S_ISSOCK(mode) ? "a socket"
                       : S_ISCHR(mode)  ? "a character device"
                       : S_ISBLK(mode)  ? "a block device"
                                        : "a special file";
    return as_err_set(err,
                      "%s contains %s: %s (in %s); only regular files and directories "
                      "can be pinned",
                      what(w), kind, rel, w->top);
}

/* Hashes the open regular file fd as one framed entry. */
static int hash_file_fd(struct walk *w, int fd, const struct stat *st, struct as_err *err)
{
    const char *rel = w->rel.buf;
    uint64_t size = (uint64_t)st->st_size;
    if (w->kind == DIGEST_TREE_CODE) {
        w->files++;
        w->bytes += size;
        if (w->files > DIGEST_CODE_MAX_FILES || w->bytes > DIGEST_CODE_MAX_BYTES)
            return as_err_set(err,
                              "%s holds more than %d files or %llu MiB: too large to pin as one "
                              "server's code",
                              w->top, DIGEST_CODE_MAX_FILES,
                              (unsigned long long)(DIGEST_CODE_MAX_BYTES >> 20));
    }
    sha256_update_u64le(&w->sha, w->rel.len);
    sha256_update(&w->sha, w->rel.buf, w->rel.len);
    sha256_update_u64le(&w->sha, size);
    if (w->sink && w->sink->file_begin && w->sink->file_begin(w->sink->ctx, rel, size, err) < 0)
        return -1;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    uint64_t got = 0;
    for (;;) {
        ssize_t r = read(fd, w->buf, DIGEST_BUF_SIZE);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return as_err_errno(err, "reading %s/%s", w->top, rel);
        }
        if (r == 0)
            break;
        got += (uint64_t)r;
        if (got > size)
            break;
        sha256_update(&w->sha, w->buf, (size_t)r);
        if (w->sink && w->sink->file_data &&
            w->sink->file_data(w->sink->ctx, w->buf, (size_t)r, err) < 0)
            return -1;
    }
    /* The length was framed before the bytes: a file that grew or shrank
     * meanwhile would give a digest of no real state of the tree. */
    if (got != size)
        return as_err_set(err, "%s%s%s changed while it was being hashed; try again", w->top,
                          rel[0] ? "/" : "", rel);
    if (w->sink && w->sink->file_end && w->sink->file_end(w->sink->ctx, err) < 0)
        return -1;
    if (w->stats) {
        w->stats->files++;
        w->stats->bytes += size;
    }
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Opens name under dfd without following anything, and checks that the
 * object opened is the one lstat saw (same inode), so a swap between the
 * two is caught rather than hashed. */
static int open_checked(struct walk *w, int dfd, const char *name, const struct stat *lst, int dir,
                        struct stat *st, struct as_err *err)
{
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (dir ? O_DIRECTORY : 0);
    int fd = openat(dfd, name, flags);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return as_err_set(err, "%s changed while it was being read: %s (in %s)", what(w),
                              w->rel.buf, w->top);
        return as_err_errno(err, "opening %s/%s", w->top, w->rel.buf);
    }
    if (fstat(fd, st) != 0) {
        as_err_errno(err, "%s/%s", w->top, w->rel.buf);
        close(fd);
        return -1;
    }
    if (st->st_ino != lst->st_ino || st->st_dev != lst->st_dev ||
        (st->st_mode & S_IFMT) != (lst->st_mode & S_IFMT)) {
        close(fd);
        return as_err_set(err, "%s changed while it was being read: %s (in %s)", what(w),
                          w->rel.buf, w->top);
    }
    return fd;
}

static int walk_dir(struct walk *w, int dfd, int depth, struct as_err *err);

static int visit(struct walk *w, int dfd, const char *name, int depth, struct as_err *err)
{
    size_t keep = w->rel.len;
    if (w->rel.len)
        sb_addc(&w->rel, '/');
    sb_adds(&w->rel, name);
    int rc = -1;
    struct stat lst, st;
    if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
        as_err_errno(err, "%s/%s", w->top, w->rel.buf);
        goto out;
    }
    if (S_ISDIR(lst.st_mode)) {
        if (depth + 1 > DIGEST_MAX_DEPTH) {
            as_err_set(err, "%s is nested deeper than %d levels: %s (in %s)", what(w),
                       DIGEST_MAX_DEPTH, w->rel.buf, w->top);
            goto out;
        }
        int fd = open_checked(w, dfd, name, &lst, 1, &st, err);
        if (fd < 0)
            goto out;
        if (w->sink && w->sink->dir && w->sink->dir(w->sink->ctx, w->rel.buf, err) < 0) {
            close(fd);
            goto out;
        }
        rc = walk_dir(w, fd, depth + 1, err); /* closes fd */
    } else if (S_ISREG(lst.st_mode)) {
        int fd = open_checked(w, dfd, name, &lst, 0, &st, err);
        if (fd < 0)
            goto out;
        rc = hash_file_fd(w, fd, &st, err);
        close(fd);
    } else {
        rc = refuse_entry(w, lst.st_mode, err);
    }
out:
    sb_setlen(&w->rel, keep);
    return rc;
}

/* Lists dfd (taking ownership of it), sorts the names byte-wise and visits
 * them depth-first: per-directory byte order visited depth-first is exactly
 * the component-wise path order of the tree digest ("a/b" before "a-b"). */
static int walk_dir(struct walk *w, int dfd, int depth, struct as_err *err)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        as_err_errno(err, "listing %s/%s", w->top, w->rel.buf);
        close(dfd);
        return -1;
    }
    VEC(char *) names = VEC_INIT;
    int rc = 0;
    errno = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
            continue;
        if (w->kind == DIGEST_TREE_SKILL && strcmp(n, ".git") == 0)
            continue;
        if (w->kind == DIGEST_TREE_CODE && digest_code_skipped(n))
            continue;
        vec_push(&names, xstrdup(n));
    }
    if (errno != 0) {
        rc = as_err_errno(err, "listing %s/%s", w->top, w->rel.buf);
    } else {
        if (names.n > 1)
            qsort(names.v, names.n, sizeof *names.v, cmp_names);
        for (size_t i = 0; i < names.n && rc == 0; i++)
            rc = visit(w, dirfd(d), names.v[i], depth, err);
    }
    for (size_t i = 0; i < names.n; i++)
        free(names.v[i]);
    vec_free(&names);
    closedir(d);
    return rc;
}

int digest_tree(const char *path, enum digest_tree_kind kind, const struct digest_sink *sink,
                struct digest_stats *stats, char hex[SHA256_HEX_LEN + 1], struct as_err *err)
{
    struct walk w = {.kind = kind, .top = path, .sink = sink, .stats = stats};
    sb_init(&w.rel, 256);
    if (stats)
        stats->files = stats->bytes = 0;
    struct stat lst, st;
    int rc = -1;
    if (lstat(path, &lst) != 0) {
        if (errno == ENOENT)
            as_err_set(err, "%s: no such file or directory", path);
        else
            as_err_errno(err, "%s", path);
        sb_release(&w.rel);
        return -1;
    }
    if (S_ISLNK(lst.st_mode)) {
        as_err_set(err, "%s contains a symlink: %s is itself a symlink", what(&w), path);
        sb_release(&w.rel);
        return -1;
    }
    w.buf = xmalloc(DIGEST_BUF_SIZE);
    sha256_init(&w.sha);
    const char *prefix = kind == DIGEST_TREE_SKILL  ? DIGEST_SKILL_PREFIX
                         : kind == DIGEST_TREE_CODE ? DIGEST_CODE_PREFIX
                                                    : DIGEST_ROOT_PREFIX;
    sha256_update(&w.sha, prefix, strlen(prefix) + 1);

    if (S_ISDIR(lst.st_mode)) {
        int fd = open_checked(&w, AT_FDCWD, path, &lst, 1, &st, err);
        if (fd >= 0)
            rc = walk_dir(&w, fd, 0, err);
    } else if (S_ISREG(lst.st_mode) && kind == DIGEST_TREE_ROOT) {
        /* A single-file root is one entry with an empty path. */
        int fd = open_checked(&w, AT_FDCWD, path, &lst, 0, &st, err);
        if (fd >= 0) {
            rc = hash_file_fd(&w, fd, &st, err);
            close(fd);
        }
    } else if (S_ISREG(lst.st_mode) && kind == DIGEST_TREE_CODE) {
        as_err_set(err, "%s: a code tree must be a directory", path);
    } else if (S_ISREG(lst.st_mode)) {
        as_err_set(err, "%s: a skill must be a directory holding SKILL.md", path);
    } else {
        rc = refuse_entry(&w, lst.st_mode, err);
    }

    if (rc == 0) {
        uint8_t d[SHA256_LEN];
        sha256_final(&w.sha, d);
        hex_encode(d, SHA256_LEN, hex);
    } else {
        sha256_abort(&w.sha);
    }
    free(w.buf);
    sb_release(&w.rel);
    return rc;
}

int digest_file(const char *path, char hex[SHA256_HEX_LEN + 1], struct as_err *err)
{
    return sha256_file_hex(path, hex, err);
}

void digest_canonical_json(const toml_value *v, strbuf *out)
{
    json_t *j = json_from_toml(v);
    json_canonical(j, out);
    json_decref(j);
}

void digest_settings_value(const toml_value *v, char hex[SHA256_HEX_LEN + 1])
{
    strbuf sb = SB_INIT;
    digest_canonical_json(v, &sb);
    sha256_hex(sb.buf, sb.len, hex);
    sb_release(&sb);
}

static int is_empty_value(const toml_value *v)
{
    switch (v->type) {
    case TOML_STRING:
        return v->u.str.len == 0;
    case TOML_ARRAY:
        return v->u.arr.n == 0;
    case TOML_TABLE:
        return v->u.tab.n == 0;
    default:
        return 0;
    }
}

static int is_star_targets(const toml_value *v)
{
    return v->type == TOML_ARRAY && v->u.arr.n == 1 && v->u.arr.items[0]->type == TOML_STRING &&
           v->u.arr.items[0]->u.str.len == 1 && v->u.arr.items[0]->u.str.s[0] == '*';
}

toml_value *digest_inline_server_normalize(const toml_value *server)
{
    toml_value *t = toml_new(TOML_TABLE);
    if (!server || server->type != TOML_TABLE)
        return t;
    for (size_t i = 0; i < server->u.tab.n; i++) {
        const toml_kv *kv = &server->u.tab.kv[i];
        if (is_empty_value(kv->val))
            continue;
        if (strcmp(kv->key, "targets") == 0 && is_star_targets(kv->val))
            continue;
        toml_table_set(t, kv->key, toml_clone(kv->val));
    }
    return t;
}

void digest_inline_server(const toml_value *server, char hex[SHA256_HEX_LEN + 1])
{
    toml_value *t = digest_inline_server_normalize(server);
    strbuf sb = SB_INIT;
    sb_add(&sb, DIGEST_INLINE_SERVER_PREFIX, sizeof DIGEST_INLINE_SERVER_PREFIX);
    digest_canonical_json(t, &sb);
    sha256_hex(sb.buf, sb.len, hex);
    sb_release(&sb);
    toml_free(t);
}

void digest_frame(sha256_ctx *c, const struct digest_blob *b)
{
    if (!b || !b->present) {
        uint8_t z = 0;
        sha256_update(c, &z, 1);
        return;
    }
    uint8_t one = 1;
    sha256_update(c, &one, 1);
    sha256_update_u64le(c, b->len);
    sha256_update(c, b->data, b->len);
}

void digest_manifest_stamp(const struct digest_blob *manifest, const struct digest_blob *overlay,
                           char hex[SHA256_HEX_LEN + 1])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, DIGEST_STAMP_PREFIX, sizeof DIGEST_STAMP_PREFIX);
    digest_frame(&c, manifest);
    digest_frame(&c, overlay);
    uint8_t d[SHA256_LEN];
    sha256_final(&c, d);
    hex_encode(d, SHA256_LEN, hex);
}
