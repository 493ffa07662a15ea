/* fs_write — the atomic writer and file copy. See fs.h.
 *
 * Every write resolves its target first (symlink chain, then the canonical
 * parent directory), opens that directory once and does the rest relative to
 * the directory fd, so the temp file, the rename and the fsync all happen in
 * the same directory even if a path component is swapped meanwhile. */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rand.h"
#include "base/xalloc.h"

#define MAX_LINK_HOPS 40

/* The bytes to write: a buffer, or (src_fd >= 0) everything read from a fd. */
struct source {
    const void *data;
    size_t len;
    int src_fd;
    const char *src_name;
};

/* Follows the symlink chain at path (not the parents) to the final name,
 * which need not exist yet. */
static int resolve_chain(const char *path, strbuf *out, struct as_err *err)
{
    sb_reset(out);
    sb_adds(out, path);
    for (int hop = 0;; hop++) {
        struct stat st;
        if (lstat(out->buf, &st) != 0) {
            if (errno == ENOENT)
                return 0;
            return as_err_errno(err, "%s", out->buf);
        }
        if (!S_ISLNK(st.st_mode))
            return 0;
        if (hop >= MAX_LINK_HOPS)
            return as_err_set(err, "%s: too many levels of symlinks", path);
        char tgt[PATH_MAX];
        ssize_t n = readlink(out->buf, tgt, sizeof tgt - 1);
        if (n < 0)
            return as_err_errno(err, "%s", out->buf);
        tgt[n] = '\0';
        if (tgt[0] == '/') {
            sb_reset(out);
            sb_adds(out, tgt);
        } else {
            char *slash = strrchr(out->buf, '/');
            if (slash)
                sb_setlen(out, (size_t)(slash - out->buf) + 1);
            else
                sb_reset(out);
            sb_adds(out, tgt);
        }
    }
}

/* Splits path into its parent directory ("." when none) and last name. */
static void split_path(const char *path, strbuf *dir, strbuf *base)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *end = path + n;
    const char *slash = NULL;
    for (const char *s = path; s < end; s++)
        if (*s == '/')
            slash = s;
    sb_reset(dir);
    sb_reset(base);
    if (!slash) {
        sb_adds(dir, ".");
        sb_add(base, path, n);
    } else {
        sb_add(dir, path, slash == path ? 1 : (size_t)(slash - path));
        sb_add(base, slash + 1, (size_t)(end - slash - 1));
    }
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int copy_fd(int from, int to)
{
    char *buf = xmalloc(64 * 1024);
    int rc = 0;
    for (;;) {
        ssize_t r = read(from, buf, 64 * 1024);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            break;
        }
        if (r == 0)
            break;
        if (write_all(to, buf, (size_t)r) != 0) {
            rc = -2;
            break;
        }
    }
    int e = errno;
    free(buf);
    errno = e;
    return rc;
}

/* 1 when name is exactly ".<base>.agentstack-tmp.<pid>.<16 hex>" as
 * open_temp makes them; *pid = the writer's pid. */
static int temp_name(const char *name, long *pid)
{
    static const char tag[] = ".agentstack-tmp.";
    size_t n = strlen(name);
    if (n < 1 + 1 + sizeof tag - 1 + 1 + 1 + 16 || name[0] != '.')
        return 0;
    const char *rnd = name + n - 16;
    for (int i = 0; i < 16; i++)
        if (!((rnd[i] >= '0' && rnd[i] <= '9') || (rnd[i] >= 'a' && rnd[i] <= 'f')))
            return 0;
    if (rnd[-1] != '.')
        return 0;
    const char *d = rnd - 1; /* the dot before the random part */
    const char *p = d;
    while (p > name && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (p == d || p - name < (ptrdiff_t)(sizeof tag - 1 + 2) ||
        memcmp(p - (sizeof tag - 1), tag, sizeof tag - 1) != 0 || (d - p) > 10)
        return 0;
    char num[16];
    memcpy(num, p, (size_t)(d - p));
    num[d - p] = '\0';
    *pid = strtol(num, NULL, 10);
    return *pid > 0;
}

/* Removes the temp files a killed writer of ours left in dirfd (they may
 * hold resolved secrets, and nothing else ever removes them): exactly our
 * naming, a regular file with one link, owned by us, whose writer's pid no
 * longer exists (a live writer is still using its own). Best effort: a
 * directory that cannot be listed is left alone. */
static void sweep_stale_temps(int dirfd)
{
    int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    uid_t me = geteuid();
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid;
        if (!temp_name(de->d_name, &pid) || pid == (long)getpid())
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != me || st.st_nlink != 1)
            continue;
        if (pid > INT_MAX || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
            unlinkat(dirfd, de->d_name, 0);
    }
    closedir(d);
}

/* Creates ".<base>.agentstack-tmp.<pid>.<random>" in dirfd, 0600 from the
 * first byte so a secret-bearing file is never briefly readable. */
static int open_temp(int dirfd, const char *base, const char *path, strbuf *name,
                     struct as_err *err)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        char rnd[17];
        if (rand_hex(rnd, 8, err) != 0)
            return -1;
        sb_reset(name);
        sb_addf(name, ".%.*s.agentstack-tmp.%ld.%s", 160, base, (long)getpid(), rnd);
        int fd =
            openat(dirfd, name->buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            return as_err_errno(err, "cannot write %s: temporary file in its directory", path);
    }
    return as_err_set(err, "cannot write %s: temporary file names keep colliding", path);
}

/* exact_mode: opts->mode also replaces an existing file's mode. */
static int write_core(const char *path, const struct source *src, const struct fs_write_opts *opts,
                      int exact_mode, struct as_err *err);

int fs_copy_file(const char *src, const char *dst, mode_t mode, struct as_err *err)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return as_err_errno(err, "%s", src);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        as_err_errno(err, "%s", src);
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return as_err_set(err, "%s: is not a regular file", src);
    }
    struct source s = {NULL, 0, fd, src};
    struct fs_write_opts o = {mode, FS_SYMLINK_FOLLOW, NULL, NULL};
    int rc = write_core(dst, &s, &o, 0, err);
    close(fd);
    return rc;
}

int fs_write_atomic(const char *path, const void *data, size_t len,
                    const struct fs_write_opts *opts, struct as_err *err)
{
    struct source s = {data, len, -1, NULL};
    static const struct fs_write_opts defaults = {0644, FS_SYMLINK_FOLLOW, NULL, NULL};
    return write_core(path, &s, opts ? opts : &defaults, 0, err);
}

int fs_write_exact(const char *path, const void *data, size_t len, const struct fs_write_opts *opts,
                   struct as_err *err)
{
    struct source s = {data, len, -1, NULL};
    return write_core(path, &s, opts, 1, err);
}

static int write_core(const char *path, const struct source *src, const struct fs_write_opts *opts,
                      int exact_mode, struct as_err *err)
{
    strbuf target = SB_INIT, dir = SB_INIT, base = SB_INIT, cdir = SB_INIT, tmp = SB_INIT;
    strbuf croot = SB_INIT;
    int dirfd = -1, fd = -1, rc = -1, have_tmp = 0;

    if (!*path) {
        as_err_set(err, "cannot write a file with an empty name");
        goto out;
    }
    if (opts->symlinks == FS_SYMLINK_REFUSE) {
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
            as_err_set(err, "%s: is a symlink — refusing to write through it", path);
            goto out;
        }
        sb_adds(&target, path);
    } else if (resolve_chain(path, &target, err) != 0) {
        goto out;
    }
    split_path(target.buf, &dir, &base);
    if (!base.len || strcmp(base.buf, ".") == 0 || strcmp(base.buf, "..") == 0) {
        as_err_set(err, "%s: is not a file name", path);
        goto out;
    }
    if (fs_realpath(dir.buf, &cdir, err) != 0) {
        as_err_prefix(err, "cannot write %s", path);
        goto out;
    }

    dirfd = open(cdir.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        as_err_errno(err, "cannot write %s: directory %s", path, cdir.buf);
        goto out;
    }
    if (opts->contain_root) {
        /* Check the directory actually opened, not a path that might have
         * changed since realpath: the kernel's name for the fd. */
        char fdlink[64], real[PATH_MAX];
        snprintf(fdlink, sizeof fdlink, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(fdlink, real, sizeof real - 1);
        const char *opened = cdir.buf;
        if (n > 0 && real[0] == '/') {
            real[n] = '\0';
            opened = real;
        }
        if (fs_realpath(opts->contain_root, &croot, err) != 0) {
            as_err_prefix(err, "cannot write %s: project root", path);
            goto out;
        }
        int inside = strcmp(croot.buf, "/") == 0 ||
                     (strncmp(opened, croot.buf, croot.len) == 0 &&
                      (opened[croot.len] == '\0' || opened[croot.len] == '/'));
        if (!inside) {
            as_err_set(err,
                       "%s: resolves to %s/%s, outside %s — not written (a symlink is "
                       "followed only when it stays inside the project)",
                       path, opened, base.buf, croot.buf);
            goto out;
        }
    }

    struct stat old;
    int exists = fstatat(dirfd, base.buf, &old, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && errno != ENOENT) {
        as_err_errno(err, "%s", path);
        goto out;
    }
    if (exists) {
        if (S_ISLNK(old.st_mode)) { /* swapped in after the chain was resolved */
            as_err_set(err, "%s: became a symlink while writing — not written", path);
            goto out;
        }
        if (!S_ISREG(old.st_mode)) {
            as_err_set(err, "%s: is not a regular file — not written", path);
            goto out;
        }
        /* The owner's write bit decides, even for root, who could otherwise
         * rename over anything: a 0444 file is someone saying "hands off". */
        if (!(old.st_mode & S_IWUSR) || (faccessat(dirfd, base.buf, W_OK, AT_EACCESS) != 0 &&
                                         (errno == EACCES || errno == EPERM || errno == EROFS))) {
            as_err_set(err, "%s is read-only — not written", path);
            as_err_hint(err, "make it writable (chmod u+w %s) or leave it out", path);
            goto out;
        }
        if (opts->backup_path) {
            int ofd = openat(dirfd, base.buf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (ofd < 0) {
                as_err_errno(err, "cannot back up %s", path);
                goto out;
            }
            struct source bs = {NULL, 0, ofd, path};
            /* Exactly 0600, not the target's mode: the copy may hold
             * resolved secrets even when the config is 0644, and an older
             * backup's looser mode must not survive. */
            struct fs_write_opts bo = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
            int brc = write_core(opts->backup_path, &bs, &bo, 1, err);
            close(ofd);
            if (brc != 0) {
                as_err_prefix(err, "%s not written: its backup failed", path);
                goto out;
            }
        }
    }

    sweep_stale_temps(dirfd);
    fd = open_temp(dirfd, base.buf, path, &tmp, err);
    if (fd < 0)
        goto out;
    have_tmp = 1;
    if (src->src_fd >= 0) {
        int c = copy_fd(src->src_fd, fd);
        if (c == -1) {
            as_err_errno(err, "%s", src->src_name ? src->src_name : "read");
            goto out;
        }
        if (c == -2) {
            as_err_errno(err, "cannot write %s", path);
            goto out;
        }
    } else if (write_all(fd, src->data, src->len) != 0) {
        as_err_errno(err, "cannot write %s", path);
        goto out;
    }
    if (fsync(fd) != 0) {
        as_err_errno(err, "cannot write %s (fsync)", path);
        goto out;
    }
    if (exists) {
        struct stat ts;
        if (fstat(fd, &ts) != 0) {
            as_err_errno(err, "cannot write %s", path);
            goto out;
        }
        if ((ts.st_uid != old.st_uid || ts.st_gid != old.st_gid) &&
            fchown(fd, old.st_uid, old.st_gid) != 0) {
            as_err_errno(err, "%s: cannot keep its owner %ld:%ld — not written", path,
                         (long)old.st_uid, (long)old.st_gid);
            goto out;
        }
    }
    /* After fchown, which may clear set-id bits. */
    if (fchmod(fd, exists && !exact_mode ? (old.st_mode & 07777) : (opts->mode & 07777)) != 0) {
        as_err_errno(err, "cannot write %s (chmod)", path);
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        as_err_errno(err, "cannot write %s", path);
        goto out;
    }
    fd = -1;
    if (renameat(dirfd, tmp.buf, dirfd, base.buf) != 0) {
        as_err_errno(err, "cannot write %s (rename)", path);
        goto out;
    }
    have_tmp = 0;
    /* Best effort: the rename is done and visible; a failing directory fsync
     * only weakens crash durability, it cannot be undone. */
    (void)fsync(dirfd);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (have_tmp)
        unlinkat(dirfd, tmp.buf, 0);
    if (dirfd >= 0)
        close(dirfd);
    sb_release(&target);
    sb_release(&dir);
    sb_release(&base);
    sb_release(&cdir);
    sb_release(&tmp);
    sb_release(&croot);
    return rc;
}
