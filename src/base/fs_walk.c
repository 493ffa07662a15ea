/* fs_walk — tree walk and removal that never follow symlinks. See fs.h.
 *
 * Each directory is read completely (names and lstat data), closed, sorted,
 * and only then descended into, so a deep tree holds one directory fd at a
 * time and the order is independent of readdir's. */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"

struct dent {
    char *name;
    struct stat st;
};

static int dent_cmp(const void *a, const void *b)
{
    /* strcmp compares as unsigned char: plain byte order. Comparing sibling
     * names alone is what makes '/' sort lowest ("a" then "a/b" then "a-b"). */
    return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

static void free_dents(struct dent *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(d[i].name);
    free(d);
}

/* Reads every entry of the directory at path (which must still be the
 * directory described by expect, when given). */
static int read_dir(const char *path, const struct stat *expect, struct dent **out, size_t *nout,
                    struct as_err *err)
{
    *out = NULL;
    *nout = 0;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return as_err_errno(err, "cannot read directory %s", path);
    struct stat st;
    if (fstat(fd, &st) != 0 ||
        (expect && (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino))) {
        close(fd);
        return as_err_set(err, "%s: changed while being read", path);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        as_err_errno(err, "cannot read directory %s", path);
        close(fd);
        return -1;
    }
    struct dent *v = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                as_err_errno(err, "cannot read directory %s", path);
                closedir(d);
                free_dents(v, n);
                return -1;
            }
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat est;
        if (fstatat(dirfd(d), de->d_name, &est, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) /* removed meanwhile */
                continue;
            as_err_errno(err, "%s/%s", path, de->d_name);
            closedir(d);
            free_dents(v, n);
            return -1;
        }
        v = xgrow(v, &cap, n + 1, sizeof *v);
        v[n].name = xstrdup(de->d_name);
        v[n].st = est;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof *v, dent_cmp);
    *out = v;
    *nout = n;
    return 0;
}

struct walker {
    fs_walk_fn fn;
    void *ctx;
    int max_depth;
    struct as_err *err;
    strbuf rel;
    strbuf path;
};

static int call_fn(struct walker *w, const struct stat *st, int depth)
{
    struct fs_entry e = {w->rel.buf, w->path.buf, st->st_mode, st->st_size, depth};
    as_err_clear(w->err);
    int r = w->fn(&e, w->ctx, w->err);
    if (r < 0 && !as_err_isset(w->err))
        as_err_set(w->err, "%s: walk stopped", w->path.buf);
    return r;
}

static int walk_dir(struct walker *w, const struct stat *dst, int depth)
{
    struct dent *v;
    size_t n;
    if (read_dir(w->path.buf, dst, &v, &n, w->err) != 0)
        return -1;
    if (n && w->max_depth >= 0 && depth + 1 > w->max_depth) {
        as_err_set(w->err, "%s: directory tree deeper than %d levels", w->path.buf, w->max_depth);
        free_dents(v, n);
        return -1;
    }
    size_t rel_len = w->rel.len, path_len = w->path.len;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (rel_len)
            sb_addc(&w->rel, '/');
        sb_adds(&w->rel, v[i].name);
        sb_addc(&w->path, '/');
        sb_adds(&w->path, v[i].name);
        int r = call_fn(w, &v[i].st, depth + 1);
        if (r < 0)
            rc = -1;
        else if (r == 0 && S_ISDIR(v[i].st.st_mode))
            rc = walk_dir(w, &v[i].st, depth + 1);
        sb_setlen(&w->rel, rel_len);
        sb_setlen(&w->path, path_len);
    }
    free_dents(v, n);
    return rc;
}

int fs_walk(const char *root, int max_depth, fs_walk_fn fn, void *ctx, struct as_err *err)
{
    struct stat st;
    if (lstat(root, &st) != 0)
        return as_err_errno(err, "%s", root);
    struct walker w = {fn, ctx, max_depth, err, SB_INIT, SB_INIT};
    sb_adds(&w.path, root);
    while (w.path.len > 1 && w.path.buf[w.path.len - 1] == '/')
        sb_setlen(&w.path, w.path.len - 1);
    int rc;
    if (S_ISDIR(st.st_mode)) {
        rc = walk_dir(&w, &st, 0);
    } else {
        rc = call_fn(&w, &st, 0) < 0 ? -1 : 0;
    }
    sb_release(&w.rel);
    sb_release(&w.path);
    return rc;
}

/* Removes everything inside the open directory dfd (consumed). */
static int rm_children(int dfd, strbuf *path, struct as_err *err)
{
    /* Without write+search permission on the directory its entries cannot
     * be removed; we own what we are deleting, so grant it. */
    struct stat st;
    if (fstat(dfd, &st) == 0 && (st.st_mode & 0700) != 0700)
        (void)fchmod(dfd, st.st_mode | 0700);
    DIR *d = fdopendir(dfd);
    if (!d) {
        as_err_errno(err, "cannot read directory %s", path->buf);
        close(dfd);
        return -1;
    }
    strvec names = STRVEC_INIT;
    int read_errno = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            read_errno = errno;
            break;
        }
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            strvec_push(&names, de->d_name);
    }
    if (read_errno) {
        errno = read_errno;
        as_err_errno(err, "cannot read directory %s", path->buf);
        strvec_clear(&names);
        closedir(d);
        return -1;
    }
    int rc = 0;
    size_t plen = path->len;
    for (size_t i = 0; i < names.n && rc == 0; i++) {
        const char *name = names.v[i];
        sb_addc(path, '/');
        sb_adds(path, name);
        struct stat est;
        if (fstatat(dirfd(d), name, &est, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT)
                rc = as_err_errno(err, "cannot remove %s", path->buf);
        } else if (S_ISDIR(est.st_mode)) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                rc = as_err_errno(err, "cannot remove %s", path->buf);
            else if (rm_children(sub, path, err) != 0)
                rc = -1;
            else if (unlinkat(dirfd(d), name, AT_REMOVEDIR) != 0 && errno != ENOENT)
                rc = as_err_errno(err, "cannot remove %s", path->buf);
        } else if (unlinkat(dirfd(d), name, 0) != 0 && errno != ENOENT) {
            rc = as_err_errno(err, "cannot remove %s", path->buf);
        }
        sb_setlen(path, plen);
    }
    strvec_clear(&names);
    closedir(d);
    return rc;
}

int fs_rmtree(const char *path, struct as_err *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return as_err_errno(err, "cannot remove %s", path);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return as_err_errno(err, "cannot remove %s", path);
        return 0;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return as_err_errno(err, "cannot remove %s", path);
    strbuf p = SB_INIT;
    sb_adds(&p, path);
    int rc = rm_children(fd, &p, err);
    sb_release(&p);
    if (rc == 0 && rmdir(path) != 0 && errno != ENOENT)
        rc = as_err_errno(err, "cannot remove %s", path);
    return rc;
}
