/*
 * The hash chain — see audit.h. An append is: open (or reuse the open log),
 * flock, make sure the locked file is still the one at the path (a rotation
 * may have renamed it while we waited), hash the last line (or reuse the
 * hash of the line this process wrote, when nothing was appended since),
 * maybe rotate, write one line, unlock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/head.h"
#include "base/fs.h"
#include "base/lock.h"
#include "base/sha256.h"
#include "base/vec.h"
#include "base/xalloc.h"

static const char zero_prev[SHA256_HEX_LEN + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/* Hashes the last line of an open file of the given size (bytes after the
 * last '\n' that precedes the final byte). *terminated = the file ends in
 * '\n'. Constant memory whatever the line length. */
static int last_line_hash(int fd, off_t size, char hex[SHA256_HEX_LEN + 1], int *terminated,
                          struct as_err *err)
{
    char c;
    if (pread(fd, &c, 1, size - 1) != 1)
        return as_err_errno(err, "cannot read the audit log");
    *terminated = c == '\n';
    off_t end = *terminated ? size - 1 : size;
    off_t start = 0;
    char buf[4096];
    for (off_t pos = end; pos > 0;) {
        size_t k = pos > (off_t)sizeof buf ? sizeof buf : (size_t)pos;
        pos -= (off_t)k;
        if (pread(fd, buf, k, pos) != (ssize_t)k)
            return as_err_errno(err, "cannot read the audit log");
        char *nl = memrchr(buf, '\n', k);
        if (nl) {
            start = pos + (nl - buf) + 1;
            break;
        }
    }
    sha256_ctx ctx;
    sha256_init(&ctx);
    for (off_t pos = start; pos < end;) {
        size_t k = end - pos > (off_t)sizeof buf ? sizeof buf : (size_t)(end - pos);
        if (pread(fd, buf, k, pos) != (ssize_t)k) {
            sha256_abort(&ctx);
            return as_err_errno(err, "cannot read the audit log");
        }
        sha256_update(&ctx, buf, k);
        pos += (off_t)k;
    }
    uint8_t d[SHA256_LEN];
    sha256_final(&ctx, d);
    hex_encode(d, SHA256_LEN, hex);
    return 0;
}

/* prev for the first line of a file: the last line of its rotated
 * predecessor, else 64 zeros. */
static int predecessor_hash(const char *path, char hex[SHA256_HEX_LEN + 1], struct as_err *err)
{
    char *old = xasprintf("%s.1", path);
    int fd = open(old, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(old);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        if (fd >= 0)
            close(fd);
        memcpy(hex, zero_prev, sizeof zero_prev);
        return 0;
    }
    int term;
    int r = last_line_hash(fd, st.st_size, hex, &term, err);
    close(fd);
    return r;
}

static int open_log(const char *path, int excl, struct as_err *err)
{
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (excl ? O_EXCL : 0),
                  0600);
    if (fd < 0) {
        if (excl && errno == EEXIST)
            return -2;
        return as_err_errno(err, "cannot open %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return as_err_set(err, "%s is not a regular file", path);
    }
    if ((st.st_mode & 07777) != 0600)
        fchmod(fd, 0600); /* re-tightened on every open */
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int ensure_dir(const char *path, struct as_err *err)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int r = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        r = fs_mkdirs(dir, 0700, err);
        struct stat st;
        if (r == 0 && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            (st.st_mode & 077))
            chmod(dir, 0700); /* the evidence dir is ours alone */
    }
    free(dir);
    return r;
}

/* ---- the per-process open-log cache ----------------------------------------
 *
 * A long-lived writer (the gateway appends one row per brokered call) keeps
 * each log open between appends, with its directory known to exist, and
 * remembers the hash of the line it wrote last and the size the file had
 * right after. Correctness never rests on the cache: every append still
 * takes flock, checks that the locked file is the one at the path (another
 * process may have rotated or replaced it), and uses the remembered hash
 * only when the file is exactly as this process left it (same inode, same
 * size: every cooperating writer appends under the lock, so any other
 * append changes the size). Anything else falls back to the full path:
 * reopen, re-create the directory, re-hash the last line. Entries belong to
 * the process that made them; a forked child never shares them (a shared
 * open file description would also share the flock). */

#define LOG_CACHE_N 4

struct log_ent {
    char *path;
    int fd;
    pid_t pid;
    dev_t dev;
    ino_t ino;
    off_t size;                    /* after our last append */
    char last[SHA256_HEX_LEN + 1]; /* hash of that line */
    int hfd;                       /* the anchor, open */
    char *hpath;                   /* its path */
    dev_t hdev;                    /* its inode, as opened */
    ino_t hino;
    struct aud_head head; /* as we wrote it after that line */
    unsigned long long used;
};
static struct log_ent log_cache[LOG_CACHE_N];
static unsigned long long log_tick;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

/* getpid() is a real syscall in glibc (no caching since 2.25) and the cache
 * asks on every append; remember it, forgetting it in a forked child. */
static pid_t self_pid;
static pthread_once_t self_pid_once = PTHREAD_ONCE_INIT;

static void self_pid_forget(void)
{
    self_pid = 0;
}

static void self_pid_hook(void)
{
    pthread_atfork(NULL, NULL, self_pid_forget);
}

static pid_t my_pid(void)
{
    pthread_once(&self_pid_once, self_pid_hook);
    if (!self_pid)
        self_pid = getpid();
    return self_pid;
}

static void ent_drop(struct log_ent *e)
{
    if (e->path && e->fd >= 0)
        close(e->fd); /* in a forked child: its own copy; the parent's stays open */
    if (e->path && e->hfd >= 0)
        close(e->hfd);
    free(e->path);
    free(e->hpath);
    memset(e, 0, sizeof *e);
    e->fd = -1;
    e->hfd = -1;
}

static struct log_ent *ent_find(const char *path)
{
    for (size_t i = 0; i < LOG_CACHE_N; i++) {
        struct log_ent *e = &log_cache[i];
        if (e->path && strcmp(e->path, path) == 0) {
            if (e->pid != my_pid()) {
                ent_drop(e);
                return NULL;
            }
            return e;
        }
    }
    return NULL;
}

/* Remembers fd and hfd for path (taking them over), evicting the least
 * recently used. */
static void ent_store(const char *path, int fd, const struct stat *st, off_t size,
                      const char last[SHA256_HEX_LEN + 1], int hfd, const struct aud_head *h)
{
    struct log_ent *e = ent_find(path);
    if (e && e->fd != fd) {
        close(e->fd);
        e->fd = -1;
    }
    if (e && e->hfd >= 0 && e->hfd != hfd) {
        close(e->hfd);
        e->hfd = -1;
    }
    if (!e) {
        e = &log_cache[0];
        for (size_t i = 0; i < LOG_CACHE_N; i++) {
            if (!log_cache[i].path) {
                e = &log_cache[i];
                break;
            }
            if (log_cache[i].used < e->used)
                e = &log_cache[i];
        }
        if (e->path)
            ent_drop(e);
        e->path = xstrdup(path);
    }
    e->fd = fd;
    if (e->hfd != hfd || !e->hpath) {
        struct stat hs;
        if (!e->hpath)
            e->hpath = aud_head_path(path);
        if (fstat(hfd, &hs) == 0) {
            e->hdev = hs.st_dev;
            e->hino = hs.st_ino;
        }
    }
    e->hfd = hfd;
    e->head = *h;
    e->pid = my_pid();
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->size = size;
    memcpy(e->last, last, SHA256_HEX_LEN + 1);
    e->used = ++log_tick;
}

static void ent_forget(const char *path)
{
    struct log_ent *e = ent_find(path);
    if (e)
        ent_drop(e);
}

static void unlock_close(int fd, int keep)
{
    flock(fd, LOCK_UN);
    if (!keep)
        close(fd);
}

/* ---- the anchor ------------------------------------------------------------ */

/* Rows (lines, a torn last one included) of an open log of the given size,
 * and the hash of its first one. Constant memory. */
static int count_rows(int fd, off_t size, unsigned long long *rows, char first[SHA256_HEX_LEN + 1],
                      struct as_err *err)
{
    char buf[8192];
    sha256_ctx ctx;
    sha256_init(&ctx);
    int in_first = 1;
    unsigned long long n = 0;
    off_t pos = 0;
    char lastc = '\n';
    while (pos < size) {
        size_t k = size - pos > (off_t)sizeof buf ? sizeof buf : (size_t)(size - pos);
        ssize_t r = pread(fd, buf, k, pos);
        if (r <= 0) {
            sha256_abort(&ctx);
            return as_err_errno(err, "cannot read the audit log");
        }
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] == '\n')
                n++;
        if (in_first) {
            char *nl = memchr(buf, '\n', (size_t)r);
            sha256_update(&ctx, buf, nl ? (size_t)(nl - buf) : (size_t)r);
            in_first = !nl;
        }
        lastc = buf[r - 1];
        pos += r;
    }
    uint8_t d[SHA256_LEN];
    sha256_final(&ctx, d);
    first[0] = '\0';
    if (size > 0)
        hex_encode(d, SHA256_LEN, first);
    *rows = n + (size > 0 && lastc != '\n');
    return 0;
}

/* An anchor for a log that has none yet: a new log starts at zero rows; a
 * log written before anchors existed (or whose anchor was removed) is
 * adopted as it stands, and `since` says how many rows predate it. */
static int adopt(const char *path, int fd, off_t size, const char prev[SHA256_HEX_LEN + 1],
                 struct aud_head *h, struct as_err *err)
{
    memset(h, 0, sizeof *h);
    if (size > 0) {
        if (count_rows(fd, size, &h->rows, h->first, err) < 0)
            return -1;
        memcpy(h->last, prev, SHA256_HEX_LEN + 1);
    }
    char *old = xasprintf("%s.1", path);
    int ofd = open(old, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    free(old);
    struct stat st;
    if (ofd >= 0 && fstat(ofd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        int term;
        if (count_rows(ofd, st.st_size, &h->old_rows, h->old_first, err) < 0 ||
            last_line_hash(ofd, st.st_size, h->old_last, &term, err) < 0) {
            close(ofd);
            return -1;
        }
    }
    if (ofd >= 0)
        close(ofd);
    h->since = h->rows + h->old_rows;
    return 0;
}

/* Opens (or reuses) and locks the anchor of path and loads its state. keep:
 * the cached state is the anchor's (the log is exactly as this process left
 * it). On failure nothing is held. */
static int anchor_begin(const char *path, struct log_ent *e, int keep, int fd, off_t size,
                        const char prev[SHA256_HEX_LEN + 1], int timeout, int *hfd,
                        struct aud_head *h, struct as_err *err)
{
    struct stat hs;
    /* the cached anchor only while its path still names it */
    int reuse = e && e->hfd >= 0 && e->hpath && lstat(e->hpath, &hs) == 0 && S_ISREG(hs.st_mode) &&
                hs.st_ino == e->hino && hs.st_dev == e->hdev;
    *hfd = reuse ? e->hfd : aud_head_open(path, 1, err);
    if (*hfd < 0)
        return -1;
    if (lock_fd(*hfd, timeout, err) < 0)
        goto fail;
    if (keep && reuse) {
        *h = e->head;
        return 0;
    }
    int r = aud_head_read(*hfd, path, h, err);
    if (r == 0)
        r = adopt(path, fd, size, prev, h, err);
    if (r >= 0)
        return 0;
    as_err_hint(err,
                "check the log with `agentstack audit --verify`; to start its anchor "
                "over, remove %s.head (the rows already there are then marked as "
                "predating it)",
                path);
    flock(*hfd, LOCK_UN);
fail:
    if (!reuse)
        close(*hfd);
    *hfd = -1;
    return -1;
}

static void anchor_end(int hfd, int owned)
{
    flock(hfd, LOCK_UN);
    if (owned)
        close(hfd);
}

static int append_locked(const char *path, const strbuf *body, size_t rotate, int timeout,
                         struct as_err *err)
{
    int rc = -1;
    for (int attempt = 0; attempt < 16; attempt++) {
        struct log_ent *e = ent_find(path);
        int fd = e ? e->fd : -1;
        int cached = fd >= 0;
        if (!cached) {
            if (ensure_dir(path, err) < 0)
                break;
            fd = open_log(path, 0, err);
            if (fd < 0)
                break;
        }
        if (lock_fd(fd, timeout, err) < 0) {
            if (!cached)
                close(fd);
            break;
        }
        struct stat fst, pst;
        /* A cached descriptor's inode is known: when the path still names it,
         * the path's stat is the descriptor's (size and mode included), and
         * the fstat is one syscall per brokered call for nothing. */
        int same =
            lstat(path, &pst) == 0 &&
            (cached ? pst.st_ino == e->ino && pst.st_dev == e->dev
                    : fstat(fd, &fst) == 0 && fst.st_ino == pst.st_ino && fst.st_dev == pst.st_dev);
        if (same && cached)
            fst = pst;
        if (!same) {
            /* rotated (or replaced, or removed) since: start over from the path */
            unlock_close(fd, cached);
            if (cached)
                ent_forget(path);
            continue;
        }
        if ((fst.st_mode & 07777) != 0600)
            fchmod(fd, 0600); /* re-tightened on every append */
        int as_left =
            cached && e->ino == fst.st_ino && e->dev == fst.st_dev && e->size == fst.st_size;
        char prev[SHA256_HEX_LEN + 1];
        int terminated = 1;
        if (fst.st_size == 0) {
            if (predecessor_hash(path, prev, err) < 0) {
                unlock_close(fd, cached);
                break;
            }
        } else if (as_left) {
            memcpy(prev, e->last, sizeof prev); /* the file is as we left it */
        } else if (last_line_hash(fd, fst.st_size, prev, &terminated, err) < 0) {
            unlock_close(fd, cached);
            break;
        }
        /* The anchor, under its own lock (taken after the log's): a writer
         * that reaches a just-rotated file holds another log lock. */
        int hfd;
        struct aud_head h;
        if (anchor_begin(path, cached ? e : NULL, as_left, fd, fst.st_size, prev, timeout, &hfd, &h,
                         err) < 0) {
            unlock_close(fd, cached);
            break;
        }
        int hfd_owned = !(cached && e->hfd == hfd);
        if (fst.st_size > 0 && rotate && (size_t)fst.st_size > rotate) {
            /* The anchor moves first: the rows become the rotated file's, and a
             * writer that opens the new file meanwhile finds it at zero. */
            struct aud_head before = h;
            h.old_rows = h.rows;
            memcpy(h.old_first, h.first, sizeof h.first);
            memcpy(h.old_last, h.last, sizeof h.last);
            h.rows = 0;
            h.first[0] = h.last[0] = '\0';
            char *old = xasprintf("%s.1", path);
            if (aud_head_write(hfd, path, &h, err) < 0 || rename(path, old) != 0) {
                if (!as_err_isset(err))
                    as_err_errno(err, "cannot rotate %s", path);
                struct as_err e2 = AS_ERR_INIT;
                (void)aud_head_write(hfd, path, &before, &e2); /* undo the move */
                free(old);
                anchor_end(hfd, hfd_owned);
                unlock_close(fd, cached);
                break;
            }
            free(old);
            anchor_end(hfd, hfd_owned);
            int nfd = open_log(path, 1, err);
            if (nfd == -2) {
                unlock_close(fd, cached); /* another writer already started the new file */
                if (cached)
                    ent_forget(path);
                continue;
            }
            if (nfd < 0 || lock_fd(nfd, timeout, err) < 0) {
                if (nfd >= 0)
                    close(nfd);
                unlock_close(fd, cached);
                if (cached)
                    ent_forget(path);
                break;
            }
            unlock_close(fd, 0); /* the rotated file is never appended to again */
            if (cached)
                ent_forget(path);
            cached = 0;
            e = NULL;
            fd = nfd;
            if (fstat(fd, &fst) != 0) {
                unlock_close(fd, 0);
                as_err_errno(err, "cannot stat %s", path);
                break;
            }
            terminated = 1; /* the old file's state no longer matters */
            /* Between creating the new file and locking it, another writer
             * may have opened it by path and appended its first line (prev =
             * the rotated file's last line). Ours must then follow that line,
             * not repeat the prev computed before the rename. */
            if (fst.st_size > 0 && last_line_hash(fd, fst.st_size, prev, &terminated, err) < 0) {
                unlock_close(fd, 0);
                break;
            }
            if (anchor_begin(path, NULL, 0, fd, fst.st_size, prev, timeout, &hfd, &h, err) < 0) {
                unlock_close(fd, 0);
                break;
            }
            hfd_owned = 1;
        }
        strbuf line;
        sb_init(&line, body->len + 80); /* ,"prev":"<64 hex>"} and '\n' */
        if (!terminated)
            sb_addc(&line, '\n'); /* close a torn line; the verifier will name it */
        size_t from = line.len;
        sb_add(&line, body->buf, body->len - 1);
        if (body->len > 2)
            sb_addc(&line, ',');
        sb_adds(&line, "\"prev\":\"");
        sb_add(&line, prev, SHA256_HEX_LEN);
        sb_add(&line, "\"}", 2);
        char mine[SHA256_HEX_LEN + 1];
        sha256_hex(line.buf + from, line.len - from, mine);
        sb_addc(&line, '\n');
        if (write_all(fd, line.buf, line.len) != 0) {
            as_err_errno(err, "cannot append to %s", path);
            anchor_end(hfd, hfd_owned);
            unlock_close(fd, 0);
            if (cached)
                ent_forget(path);
        } else {
            h.rows++;
            if (h.rows == 1)
                memcpy(h.first, mine, sizeof h.first);
            memcpy(h.last, mine, sizeof h.last);
            if (aud_head_write(hfd, path, &h, err) < 0) {
                /* the row is there, its anchor is not: verification will say so */
                anchor_end(hfd, hfd_owned);
                unlock_close(fd, 0);
                if (cached)
                    ent_forget(path);
            } else {
                rc = 0;
                flock(hfd, LOCK_UN);
                flock(fd, LOCK_UN);
                ent_store(path, fd, &fst, fst.st_size + (off_t)line.len, mine, hfd, &h);
            }
        }
        sb_release(&line);
        break;
    }
    return rc;
}

int aud_append_ready(const char *path, struct as_err *err)
{
    pthread_mutex_lock(&log_mu);
    struct log_ent *e = ent_find(path);
    struct stat st;
    int rc = 0;
    /* the log this process appends to is still the one at the path */
    struct stat hs;
    if (!(e && e->fd >= 0 && e->hfd >= 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
          st.st_ino == e->ino && st.st_dev == e->dev && e->hpath && lstat(e->hpath, &hs) == 0 &&
          S_ISREG(hs.st_mode) && hs.st_ino == e->hino && hs.st_dev == e->hdev)) {
        if (e)
            ent_forget(path);
        rc = ensure_dir(path, err);
        int fd = rc == 0 ? open_log(path, 0, err) : -1;
        if (fd < 0) {
            rc = -1;
        } else {
            close(fd);
            int hfd = aud_head_open(path, 1, err);
            struct aud_head h;
            if (hfd < 0 || aud_head_read(hfd, path, &h, err) < 0)
                rc = -1;
            if (hfd >= 0)
                close(hfd);
        }
    }
    pthread_mutex_unlock(&log_mu);
    return rc;
}

int aud_append(const char *path, const json_t *rec, const struct aud_append_opts *opts,
               struct as_err *err)
{
    if (!json_is_object(rec))
        return as_err_set(err, "audit record must be a JSON object");
    if (json_object_get(rec, "prev"))
        return as_err_set(err, "audit record already carries \"prev\"");
    strbuf body = SB_INIT;
    char *dump = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!dump)
        return as_err_set(err, "audit record cannot be encoded");
    sb_adds(&body, dump);
    free(dump);

    int rc = aud_append_encoded(path, &body, opts, err);
    sb_release(&body);
    return rc;
}

int aud_append_encoded(const char *path, const strbuf *body, const struct aud_append_opts *opts,
                       struct as_err *err)
{
    if (body->len < 2 || body->buf[0] != '{' || body->buf[body->len - 1] != '}')
        return as_err_set(err, "audit record must be a JSON object");
    size_t rotate = opts ? opts->rotate_bytes : 0;
    int timeout = opts && opts->lock_timeout_ms > 0 ? opts->lock_timeout_ms : AUD_LOCK_TIMEOUT_MS;
    pthread_mutex_lock(&log_mu);
    int rc = append_locked(path, body, rotate, timeout, err);
    pthread_mutex_unlock(&log_mu);
    if (rc < 0 && !as_err_isset(err))
        as_err_set(err, "cannot append to %s: it keeps being rotated", path);
    return rc;
}

/* ---- verification ---- */

static int set_break(struct aud_break *b, const char *file, unsigned line, const char *why)
{
    snprintf(b->file, sizeof b->file, "%s", file);
    b->line = line;
    snprintf(b->reason, sizeof b->reason, "%.*s", (int)sizeof b->reason - 1, why);
    return 1;
}

static int is_hex64(const char *p)
{
    for (int i = 0; i < 64; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}

/* What verification saw of one file. */
struct file_sum {
    int present;
    unsigned long long rows;
    char first[SHA256_HEX_LEN + 1], last[SHA256_HEX_LEN + 1];
};

/* Opens an evidence file for reading: never through a symlink, regular
 * files only. fd, -2 when absent, -3 with *b filled when it is not a
 * regular file (a symlink, a directory, …: broken evidence), -1 + err. */
static int open_evidence(const char *file, struct aud_break *b, struct as_err *err)
{
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return -2;
        if (errno == ELOOP) {
            set_break(b, file, 0, "is a symlink: evidence files are never followed");
            return -3;
        }
        return as_err_errno(err, "cannot read %s", file);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return as_err_errno(err, "cannot read %s", file);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        set_break(b, file, 0, "is not a regular file, so it holds no evidence");
        return -3;
    }
    return fd;
}

/* Checks one open file; expected is the hash the first line must carry
 * ("" = accept any: the oldest file's predecessor is gone). Takes fd. */
static int verify_fd(int fd, const char *file, char expected[SHA256_HEX_LEN + 1],
                     struct aud_break *b, size_t *lines, struct file_sum *sum, struct as_err *err)
{
    memset(sum, 0, sizeof *sum);
    sum->present = 1;
    FILE *f = fdopen(fd, "re");
    if (!f) {
        close(fd);
        return as_err_errno(err, "cannot read %s", file);
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned ln = 0;
    int r = 0;
    while ((n = getline(&buf, &cap, f)) > 0) {
        ln++;
        if (lines)
            (*lines)++;
        if (buf[n - 1] != '\n') {
            r = set_break(b, file, ln, "unterminated last line (a torn or truncated write)");
            break;
        }
        n--;
        /* ...,"prev":"<64 hex>"}  or  {"prev":"<64 hex>"} */
        static const char tag[] = "\"prev\":\"";
        size_t tl = sizeof tag - 1;
        if (n < (ssize_t)(tl + 64 + 3) || buf[n - 1] != '}' || buf[n - 2] != '"' ||
            memcmp(buf + n - 2 - 64 - tl, tag, tl) != 0 || !is_hex64(buf + n - 2 - 64) ||
            (buf[n - 3 - 64 - tl] != ',' && buf[n - 3 - 64 - tl] != '{')) {
            r = set_break(b, file, ln, "line does not end with \"prev\"");
            break;
        }
        json_error_t je;
        json_t *o = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &je);
        int obj = json_is_object(o);
        if (o)
            json_decref(o);
        if (!obj) {
            r = set_break(b, file, ln, "line is not a JSON object");
            break;
        }
        const char *prev = buf + n - 2 - 64;
        if (expected[0] && memcmp(prev, expected, 64) != 0) {
            r = set_break(b, file, ln,
                          memcmp(expected, zero_prev, 64) == 0
                              ? "first line does not start a chain (prev is not 64 zeros)"
                              : "prev does not match the line before it");
            break;
        }
        sha256_hex(buf, (size_t)n, expected);
        if (ln == 1)
            memcpy(sum->first, expected, SHA256_HEX_LEN + 1);
        memcpy(sum->last, expected, SHA256_HEX_LEN + 1);
    }
    sum->rows = ln;
    if (!r && ferror(f))
        r = as_err_errno(err, "cannot read %s", file);
    free(buf);
    fclose(f);
    return r;
}

static int verify_file(const char *file, char expected[SHA256_HEX_LEN + 1], struct aud_break *b,
                       size_t *lines, struct file_sum *sum, struct as_err *err)
{
    memset(sum, 0, sizeof *sum);
    int fd = open_evidence(file, b, err);
    if (fd == -2)
        return 0;
    if (fd == -3)
        return 1;
    if (fd < 0)
        return -1;
    return verify_fd(fd, file, expected, b, lines, sum, err);
}

/* The log's rows against its anchor. */
static int check_anchor(const char *path, const struct file_sum *cur, const struct file_sum *old,
                        struct aud_break *b, struct as_err *err)
{
    char *hp = aud_head_path(path);
    char *oldp = xasprintf("%s.1", path);
    int r = 0;
    int hfd = aud_head_open(path, 0, err);
    struct aud_head h;
    char why[sizeof b->reason];
    if (hfd == -2) {
        if (cur->rows || old->rows)
            r = set_break(b, path, 0,
                          "no anchor: its .head file is missing, so rows cut from the end "
                          "or removed cannot be ruled out");
        goto out;
    }
    if (hfd < 0) {
        r = set_break(b, hp, 0, err->msg);
        as_err_clear(err);
        goto out;
    }
    if (lock_fd_shared(hfd, AUD_LOCK_TIMEOUT_MS, err) < 0) {
        close(hfd);
        r = -1;
        goto out;
    }
    int got = aud_head_read(hfd, path, &h, err);
    close(hfd);
    if (got <= 0) {
        r = set_break(b, hp, 0, got == 0 ? "the anchor is empty" : err->msg);
        as_err_clear(err);
        goto out;
    }
    if (cur->rows != h.rows) {
        snprintf(why, sizeof why,
                 cur->rows < h.rows ? "rows are missing: the anchor records %llu rows, the "
                                      "file holds %llu (rows cut from the end, or removed)"
                                    : "the anchor records %llu rows, the file holds %llu "
                                      "(rows added without the anchor)",
                 h.rows, cur->rows);
        r = set_break(b, path, (unsigned)(cur->rows < h.rows ? cur->rows + 1 : h.rows + 1), why);
    } else if (h.rows && (strcmp(cur->first, h.first) != 0 || strcmp(cur->last, h.last) != 0)) {
        r = set_break(b, path, (unsigned)(strcmp(cur->first, h.first) != 0 ? 1 : h.rows),
                      "rows were rewritten since they were anchored (the chain was recomputed: "
                      "its first or last row is not the anchored one)");
    } else if (old->rows != h.old_rows) {
        snprintf(why, sizeof why, "the anchor records %llu rows in the rotated file, it holds %llu",
                 h.old_rows, old->rows);
        r = set_break(b, oldp, (unsigned)(old->rows < h.old_rows ? old->rows + 1 : h.old_rows + 1),
                      why);
    } else if (h.old_rows &&
               (strcmp(old->first, h.old_first) != 0 || strcmp(old->last, h.old_last) != 0)) {
        r = set_break(b, oldp, 1,
                      "rows were rewritten since they were anchored (the rotated file's first "
                      "or last row is not the anchored one)");
    } else if (h.since && !b->note[0]) {
        snprintf(b->note, sizeof b->note,
                 "%s: anchored once it held %llu rows; those rows predate the anchor (written "
                 "before anchors existed, or after its .head was removed)",
                 path, h.since);
    }
out:
    free(hp);
    free(oldp);
    return r;
}

/* Opens and share-locks the log at path, the one the path still names once
 * locked (a rotation may rename it meanwhile). fd, -2 absent, -3 broken. */
static int open_locked(const char *path, struct aud_break *b, struct as_err *err)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        int fd = open_evidence(path, b, err);
        if (fd < 0)
            return fd;
        if (lock_fd_shared(fd, AUD_LOCK_TIMEOUT_MS, err) < 0) {
            close(fd);
            return -1;
        }
        struct stat fst, pst;
        if (fstat(fd, &fst) == 0 && lstat(path, &pst) == 0 && fst.st_ino == pst.st_ino &&
            fst.st_dev == pst.st_dev)
            return fd;
        close(fd);
    }
    return as_err_set(err, "cannot verify %s: it keeps being rotated", path);
}

int aud_verify(const char *path, struct aud_break *b, size_t *lines, struct as_err *err)
{
    if (lines)
        *lines = 0;
    char note[sizeof b->note];
    memcpy(note, b->note, sizeof note); /* aud_verify_home carries the first one */
    memset(b, 0, sizeof *b);
    memcpy(b->note, note, sizeof note);
    /* Held while both files and the anchor are read: writers rotate and
     * append under it, so the three are one consistent state. */
    int lfd = open_locked(path, b, err);
    if (lfd == -3)
        return 1;
    if (lfd == -1)
        return -1;
    char *old = xasprintf("%s.1", path);
    char expected[SHA256_HEX_LEN + 1];
    struct file_sum cur = {0}, prior = {0};
    int r;
    struct stat st;
    if (lstat(old, &st) == 0) {
        expected[0] = '\0'; /* .1's own predecessor was rotated away */
        r = verify_file(old, expected, b, lines, &prior, err);
        if (r == 0) {
            /* an empty .1 links nothing: the current file then starts fresh */
            if (!expected[0])
                memcpy(expected, zero_prev, sizeof zero_prev);
            r = lfd >= 0 ? verify_fd(lfd, path, expected, b, lines, &cur, err) : 0;
            lfd = -1;
        }
    } else {
        memcpy(expected, zero_prev, sizeof zero_prev);
        r = lfd >= 0 ? verify_fd(lfd, path, expected, b, lines, &cur, err) : 0;
        lfd = -1;
    }
    if (r == 0)
        r = check_anchor(path, &cur, &prior, b, err);
    if (lfd >= 0)
        close(lfd);
    free(old);
    return r;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_dir_suffix(const char *dir, const char *suffix, strvec *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t sl = strlen(suffix);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] != '.' && l > sl && strcmp(de->d_name + l - sl, suffix) == 0)
            strvec_push(out, de->d_name);
    }
    closedir(d);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_str);
}

static void list_dir(const char *dir, strvec *out, int want_dirs)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (n[0] == '.')
            continue;
        if (want_dirs) {
            strvec_push(out, n);
        } else {
            size_t l = strlen(n);
            if (l > 6 && strcmp(n + l - 6, ".jsonl") == 0)
                strvec_push(out, n);
        }
    }
    closedir(d);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_str);
}

/* The logs of a directory: every "<name>.jsonl" (any file type: a
 * directory or symlink there is broken evidence), and the log of every
 * "<name>.jsonl.head" whose log is gone. */
static void list_logs(const char *dir, strvec *out)
{
    strvec names = STRVEC_INIT;
    list_dir(dir, &names, 0);
    for (size_t i = 0; i < names.n; i++)
        strvec_pushf(out, "%s/%s", dir, names.v[i]);
    strvec heads = STRVEC_INIT;
    list_dir_suffix(dir, ".jsonl.head", &heads);
    for (size_t i = 0; i < heads.n; i++) {
        char *log = xstrndup(heads.v[i], strlen(heads.v[i]) - 5);
        char *p = xasprintf("%s/%s", dir, log);
        if (strvec_find(out, p) < 0)
            strvec_push(out, p);
        free(p);
        free(log);
    }
    strvec_clear(&names);
    strvec_clear(&heads);
}

int aud_verify_home(const char *home, struct aud_break *b, size_t *files, struct as_err *err)
{
    if (files)
        *files = 0;
    memset(b, 0, sizeof *b);
    strvec logs = STRVEC_INIT, runs = STRVEC_INIT;
    char *adir = xasprintf("%s/audit", home);
    list_logs(adir, &logs);
    char *rdir = xasprintf("%s/runs", home);
    list_dir(rdir, &runs, 1);
    for (size_t i = 0; i < runs.n; i++) {
        char *p = xasprintf("%s/%s/events.jsonl", rdir, runs.v[i]);
        char *hp = aud_head_path(p);
        struct stat st;
        if (lstat(p, &st) == 0 || lstat(hp, &st) == 0)
            strvec_push(&logs, p);
        free(p);
        free(hp);
    }
    int r = 0;
    for (size_t i = 0; i < logs.n && r == 0; i++) {
        r = aud_verify(logs.v[i], b, NULL, err);
        if (files)
            (*files)++;
    }
    strvec_clear(&logs);
    strvec_clear(&runs);
    free(adir);
    free(rdir);
    return r;
}
