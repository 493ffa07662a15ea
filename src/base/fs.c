/* fs — reading, joining, canonicalizing and creating paths. See fs.h.
 * The atomic writer lives in fs_write.c, the tree walk in fs_walk.c. */
#include "base/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"

int fs_read_file(const char *path, size_t max_bytes, int nofollow, strbuf *out, struct as_err *err)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise block until a
     * writer appears, before fstat could refuse it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) {
        if (nofollow && errno == ELOOP)
            return as_err_set(err, "%s: is a symlink (not followed)", path);
        return as_err_errno(err, "%s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        as_err_errno(err, "%s", path);
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        if (S_ISDIR(st.st_mode))
            return as_err_set(err, "%s: is a directory, not a regular file", path);
        return as_err_set(err, "%s: is not a regular file", path);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        close(fd);
        return as_err_set(err, "%s: exceeds the %zu-byte limit", path, max_bytes);
    }
    size_t start = out->len, got = 0;
    /* The file may grow between fstat and read: the cap is enforced on what is
     * actually read, one byte past the limit being enough to know. */
    for (;;) {
        size_t want = 64 * 1024;
        if (got + want > max_bytes + 1)
            want = max_bytes + 1 - got;
        if (want == 0)
            break;
        sb_grow(out, want);
        ssize_t r = read(fd, out->buf + out->len, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            as_err_errno(err, "%s", path);
            close(fd);
            sb_setlen(out, start);
            return -1;
        }
        if (r == 0)
            break;
        out->len += (size_t)r;
        got += (size_t)r;
    }
    close(fd);
    if (got > max_bytes) {
        sb_setlen(out, start);
        return as_err_set(err, "%s: exceeds the %zu-byte limit", path, max_bytes);
    }
    sb_setlen(out, out->len);
    return 0;
}

int fs_mkdirs(const char *path, mode_t mode, struct as_err *err)
{
    if (!*path)
        return as_err_set(err, "cannot create a directory with an empty name");
    char *p = xstrdup(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    int rc = 0;
    for (char *s = p + 1;; s++) {
        int last = (*s == '\0');
        if (!last && *s != '/')
            continue;
        if (s[-1] == '/') { /* "a//b" */
            if (last)
                break;
            continue;
        }
        *s = '\0';
        if (mkdir(p, mode) != 0) {
            int e = errno;
            struct stat st;
            if (e != EEXIST || stat(p, &st) != 0) {
                errno = e;
                rc = as_err_errno(err, "cannot create directory %s", p);
                break;
            }
            if (!S_ISDIR(st.st_mode)) {
                rc = as_err_set(err, "cannot create directory %s: a file of that name exists", p);
                break;
            }
        }
        if (last)
            break;
        *s = '/';
    }
    free(p);
    return rc;
}

int fs_private_dir(const char *path, struct as_err *err)
{
    if (fs_mkdirs(path, 0700, err) != 0)
        return -1;
    /* Through a fd opened without following a link, so the mode we check is
     * the mode we change: chmod by name could land on a swapped-in target. */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return as_err_set(err,
                              "%s: is a symlink or not a directory — refusing to keep "
                              "private copies there",
                              path);
        return as_err_errno(err, "%s", path);
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = as_err_errno(err, "%s", path);
    } else if (st.st_uid != geteuid()) {
        rc = as_err_set(err,
                        "%s: is owned by uid %ld, not by you — refusing to keep private "
                        "copies there",
                        path, (long)st.st_uid);
        as_err_hint(err, "move it aside; agentstack recreates it 0700");
    } else if ((st.st_mode & 077) && fchmod(fd, 0700) != 0) {
        rc = as_err_errno(err, "cannot make %s private (chmod 0700)", path);
    }
    close(fd);
    return rc;
}

int fs_tighten_file(const char *path, mode_t mode, struct as_err *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        (st.st_mode & 07777 & ~mode) && fchmod(fd, mode & 07777) != 0)
        rc = as_err_errno(err, "cannot make %s private (chmod %04o)", path, (unsigned)mode);
    close(fd);
    return rc;
}

int fs_realpath(const char *path, strbuf *out, struct as_err *err)
{
    char *r = realpath(path, NULL);
    if (!r)
        return as_err_errno(err, "%s", path);
    sb_reset(out);
    sb_adds(out, r);
    free(r);
    return 0;
}

int fs_canonicalize(const char *path, strbuf *out, struct as_err *err)
{
    if (!*path)
        return as_err_set(err, "empty path");
    strbuf abs = SB_INIT;
    if (path[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return as_err_errno(err, "current directory");
        sb_adds(&abs, cwd);
        sb_addc(&abs, '/');
        free(cwd);
    }
    sb_adds(&abs, path);
    while (abs.len > 1 && abs.buf[abs.len - 1] == '/')
        sb_setlen(&abs, abs.len - 1);

    /* Walk back from the full path to the longest prefix realpath accepts. */
    size_t cut = abs.len;
    char *r = NULL;
    for (;;) {
        char saved = abs.buf[cut];
        abs.buf[cut] = '\0';
        r = realpath(abs.len && cut ? abs.buf : "/", NULL);
        int e = errno;
        abs.buf[cut] = saved;
        if (r)
            break;
        if (e != ENOENT) {
            errno = e;
            as_err_errno(err, "%s", path);
            sb_release(&abs);
            return -1;
        }
        while (cut > 0 && abs.buf[cut - 1] != '/')
            cut--;
        if (cut > 0)
            cut--; /* drop the '/' too */
    }
    sb_reset(out);
    sb_adds(out, r);
    free(r);
    /* The missing tail: none of it exists, so none of it is a symlink unless
     * the first missing name is a dangling one. */
    const char *t = abs.buf + cut;
    int first = 1;
    while (*t) {
        while (*t == '/')
            t++;
        if (!*t)
            break;
        const char *e = strchr(t, '/');
        size_t n = e ? (size_t)(e - t) : strlen(t);
        if (n == 1 && t[0] == '.') {
            t += n;
            continue;
        }
        if (n == 2 && t[0] == '.' && t[1] == '.') {
            sb_reset(out);
            sb_release(&abs);
            return as_err_set(err, "%s: \"..\" after a missing directory", path);
        }
        if (out->len > 1 || out->buf[0] != '/')
            sb_addc(out, '/');
        sb_add(out, t, n);
        if (first) {
            struct stat st;
            if (lstat(out->buf, &st) == 0 && S_ISLNK(st.st_mode)) {
                as_err_set(err, "%s: %s is a dangling symlink", path, out->buf);
                sb_reset(out);
                sb_release(&abs);
                return -1;
            }
            first = 0;
        }
        t += n;
    }
    sb_release(&abs);
    return 0;
}

int fs_path_within(const char *root, const char *path)
{
    strbuf r = SB_INIT, p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int ok = 0;
    if (fs_canonicalize(root, &r, &err) == 0 && fs_canonicalize(path, &p, &err) == 0) {
        if (strcmp(r.buf, "/") == 0)
            ok = 1;
        else
            ok = strncmp(p.buf, r.buf, r.len) == 0 && (p.buf[r.len] == '\0' || p.buf[r.len] == '/');
    }
    sb_release(&r);
    sb_release(&p);
    return ok;
}

int fs_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Follows a symlink: a dotfile manager's linked directory is a directory. */
int fs_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
