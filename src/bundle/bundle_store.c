/* store — see store.h. */
#include "bundle/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/rand.h"
#include "base/xalloc.h"

void store_content_dir(const char *home, strbuf *out)
{
    sb_addf(out, "%s/store/content", home);
}

void store_pin_dir(const char *home, const char *pin, strbuf *out)
{
    sb_addf(out, "%s/store/content/%s", home, pin);
}

static int valid_pin(const char *pin, struct as_err *err)
{
    size_t n = strlen(pin);
    int ok = n == SHA256_HEX_LEN;
    for (size_t i = 0; ok && i < n; i++)
        ok = (pin[i] >= '0' && pin[i] <= '9') || (pin[i] >= 'a' && pin[i] <= 'f');
    if (!ok)
        return as_err_set(err, "content store: '%s' is not a 64-hex pin", pin);
    return 0;
}

static int valid_name(const char *name, struct as_err *err)
{
    if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        strncmp(name, ".tmp-", 5) == 0)
        return as_err_set(err, "content store: '%s' is not a plain file name", name);
    return 0;
}

/* Makes content/.tmp-<random>/ (0700) and returns its path in tmp. */
static int make_tmp(const char *home, strbuf *tmp, struct as_err *err)
{
    strbuf dir = SB_INIT;
    store_content_dir(home, &dir);
    int rc = fs_mkdirs(dir.buf, 0700, err);
    if (rc == 0) {
        char r[17];
        rc = rand_hex(r, 8, err);
        if (rc == 0) {
            sb_addf(tmp, "%s/.tmp-%s", dir.buf, r);
            if (mkdir(tmp->buf, 0700) != 0)
                rc = as_err_errno(err, "creating %s", tmp->buf);
        }
    }
    sb_release(&dir);
    return rc;
}

static void drop_tmp(const char *tmp)
{
    struct as_err ignored = AS_ERR_INIT;
    (void)fs_rmtree(tmp, &ignored);
}

/* Moves the finished tmp dir to its address without ever replacing one. */
static int place(const char *tmp, const char *final, int *existed, struct as_err *err)
{
    *existed = 0;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno == EEXIST || errno == ENOTEMPTY) {
        *existed = 1;
        drop_tmp(tmp);
        return 0;
    }
    if (errno == EINVAL || errno == ENOSYS) {
        /* A filesystem without RENAME_NOREPLACE: a plain rename cannot replace a
         * non-empty directory, and every deposit holds at least one file. */
        if (rename(tmp, final) == 0)
            return 0;
        if (errno == EEXIST || errno == ENOTEMPTY) {
            *existed = 1;
            drop_tmp(tmp);
            return 0;
        }
    }
    as_err_errno(err, "placing content store deposit %s", final);
    drop_tmp(tmp);
    return -1;
}

/* Finds the single regular file of a file deposit. */
static int one_file(const char *dir, strbuf *path, struct as_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return as_err_errno(err, "%s", dir);
    int found = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (found++) {
            rc = as_err_set(err, "content store deposit %s holds more than one file", dir);
            break;
        }
        sb_reset(path);
        sb_addf(path, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    if (rc == 0 && !found)
        rc = as_err_set(err, "content store deposit %s is empty", dir);
    return rc;
}

static enum digest_tree_kind tree_kind(enum store_kind kind)
{
    return kind == STORE_SKILL_TREE  ? DIGEST_TREE_SKILL
           : kind == STORE_CODE_TREE ? DIGEST_TREE_CODE
                                     : DIGEST_TREE_ROOT;
}

/* Re-hashes a deposit in the form its kind says. */
static int prove(const char *dir, const char *pin, enum store_kind kind, strbuf *path,
                 struct as_err *err)
{
    char hex[SHA256_HEX_LEN + 1];
    int rc;
    sb_reset(path);
    switch (kind) {
    case STORE_SKILL_TREE:
    case STORE_ROOT_TREE:
    case STORE_CODE_TREE:
        sb_adds(path, dir);
        rc = digest_tree(dir, tree_kind(kind), NULL, NULL, hex, err);
        break;
    case STORE_ROOT_FILE:
    case STORE_FILE:
    default:
        rc = one_file(dir, path, err);
        if (rc == 0)
            rc = kind == STORE_FILE
                     ? digest_file(path->buf, hex, err)
                     : digest_tree(path->buf, DIGEST_TREE_ROOT, NULL, NULL, hex, err);
        break;
    }
    if (rc != 0) {
        as_err_prefix(err, "content store deposit %.12s is unreadable", pin);
        return -1;
    }
    if (strcmp(hex, pin) != 0)
        return as_err_set(err,
                          "content store deposit %s does not match its address (holds %.12s); "
                          "it is never repaired: remove it to re-deposit",
                          dir, hex);
    return 0;
}

int store_open(const char *home, const char *pin, enum store_kind kind, strbuf *path,
               struct as_err *err)
{
    if (valid_pin(pin, err) < 0)
        return -1;
    strbuf dir = SB_INIT;
    store_pin_dir(home, pin, &dir);
    struct stat st;
    int rc;
    if (lstat(dir.buf, &st) != 0) {
        rc = errno == ENOENT ? 0 : as_err_errno(err, "%s", dir.buf);
    } else if (!S_ISDIR(st.st_mode)) {
        rc = as_err_set(err, "content store deposit %s is not a directory", dir.buf);
    } else {
        rc = prove(dir.buf, pin, kind, path, err) == 0 ? 1 : -1;
    }
    sb_release(&dir);
    return rc;
}

/* Verifies an already present deposit (write-once: never rewritten). */
static int check_existing(const char *final, const char *pin, enum store_kind kind,
                          struct as_err *err)
{
    strbuf p = SB_INIT;
    int rc = prove(final, pin, kind, &p, err);
    sb_release(&p);
    return rc;
}

/* ---- copying sink ------------------------------------------------------- */

struct copier {
    int dfd;            /* the tmp dir */
    int fd;             /* current file */
    const char *single; /* file name when the walked root is one file */
    uint64_t files, bytes;
    uint64_t max_files, max_bytes;
    int over;
    mode_t file_mode; /* 0 = 0600 */
};

static int cp_dir(void *c, const char *rel, struct as_err *err)
{
    struct copier *cp = c;
    if (mkdirat(cp->dfd, rel, 0700) != 0)
        return as_err_errno(err, "content store: creating %s", rel);
    return 0;
}

static int cp_begin(void *c, const char *rel, uint64_t size, struct as_err *err)
{
    struct copier *cp = c;
    cp->files++;
    cp->bytes += size;
    if ((cp->max_files && cp->files > cp->max_files) ||
        (cp->max_bytes && cp->bytes > cp->max_bytes)) {
        cp->over = 1;
        return as_err_set(err, "over the content store bounds");
    }
    const char *name = rel[0] ? rel : cp->single;
    cp->fd = openat(cp->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    cp->file_mode ? cp->file_mode : 0600);
    if (cp->fd < 0)
        return as_err_errno(err, "content store: creating %s", name);
    return 0;
}

static int cp_data(void *c, const void *data, size_t len, struct as_err *err)
{
    struct copier *cp = c;
    const char *p = data;
    while (len) {
        ssize_t w = write(cp->fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return as_err_errno(err, "content store: writing");
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int cp_end(void *c, struct as_err *err)
{
    struct copier *cp = c;
    int rc = close(cp->fd);
    cp->fd = -1;
    if (rc != 0)
        return as_err_errno(err, "content store: writing");
    return 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Copies src into a fresh tmp dir while hashing it, checks the hash against
 * pin, re-proves the copy, then places it. */
static int deposit_walk(const char *home, const char *src, enum store_kind kind, const char *name,
                        const char *pin, int *skipped, struct as_err *err)
{
    strbuf tmp = SB_INIT, final = SB_INIT, p = SB_INIT;
    store_pin_dir(home, pin, &final);
    int rc = -1, existed = 0;
    if (fs_is_dir(final.buf)) {
        /* Write-once: an existing deposit is left alone (reads re-prove it). */
        rc = 0;
        goto out;
    }
    if (make_tmp(home, &tmp, err) < 0)
        goto out;
    struct copier cp = {.fd = -1, .single = name};
    cp.dfd = open(tmp.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cp.dfd < 0) {
        as_err_errno(err, "%s", tmp.buf);
        drop_tmp(tmp.buf);
        goto out;
    }
    if (kind == STORE_ROOT_TREE || kind == STORE_ROOT_FILE) {
        cp.max_files = STORE_ROOT_MAX_FILES;
        cp.max_bytes = STORE_ROOT_MAX_BYTES;
    }
    struct digest_sink sink = {&cp, cp_dir, cp_begin, cp_data, cp_end};
    char hex[SHA256_HEX_LEN + 1];
    int wrc;
    if (kind == STORE_FILE) {
        /* A plain body: stream it through the same copier, hashing as we go. */
        wrc = -1;
        int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (fd < 0) {
            as_err_errno(err, "%s", src);
        } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            as_err_set(err, "%s: is not a regular file", src);
        } else if (cp_begin(&cp, "", (uint64_t)st.st_size, err) == 0) {
            unsigned char *buf = xmalloc(DIGEST_BUF_SIZE);
            sha256_ctx c;
            sha256_init(&c);
            wrc = 0;
            for (;;) {
                ssize_t r = read(fd, buf, DIGEST_BUF_SIZE);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0) {
                    wrc = as_err_errno(err, "reading %s", src);
                    break;
                }
                if (r == 0)
                    break;
                sha256_update(&c, buf, (size_t)r);
                if ((wrc = cp_data(&cp, buf, (size_t)r, err)) < 0)
                    break;
            }
            uint8_t d[SHA256_LEN];
            sha256_final(&c, d);
            hex_encode(d, SHA256_LEN, hex);
            free(buf);
            if (cp_end(&cp, err) < 0)
                wrc = -1;
        }
        if (fd >= 0)
            close(fd);
    } else {
        wrc = digest_tree(src, tree_kind(kind), &sink, NULL, hex, err);
    }
    if (cp.fd >= 0)
        close(cp.fd);
    close(cp.dfd);
    if (wrc != 0) {
        drop_tmp(tmp.buf);
        if (cp.over) {
            as_err_clear(err);
            *skipped = 1;
            rc = 0;
        }
        goto out;
    }
    if (strcmp(hex, pin) != 0) {
        as_err_set(err, "%s changed since it was pinned (pinned %.12s, now %.12s)", src, pin, hex);
        drop_tmp(tmp.buf);
        goto out;
    }
    /* Re-prove the placed bytes themselves, not what we meant to write. */
    if (prove(tmp.buf, pin, kind, &p, err) < 0) {
        drop_tmp(tmp.buf);
        goto out;
    }
    if (place(tmp.buf, final.buf, &existed, err) < 0)
        goto out;
    rc = existed ? check_existing(final.buf, pin, kind, err) : 0;
out:
    sb_release(&tmp);
    sb_release(&final);
    sb_release(&p);
    return rc;
}

int store_deposit_tree(const char *home, const char *src, enum store_kind kind, const char *pin,
                       int *skipped, struct as_err *err)
{
    int dummy = 0;
    if (!skipped)
        skipped = &dummy;
    *skipped = 0;
    if (valid_pin(pin, err) < 0)
        return -1;
    if (kind == STORE_FILE)
        return as_err_set(err, "content store: use store_deposit_file for a single body");
    const char *name = base_name(src);
    if (kind == STORE_ROOT_FILE && valid_name(name, err) < 0)
        return -1;
    return deposit_walk(home, src, kind, name, pin, skipped, err);
}

int store_deposit_file(const char *home, const char *src, const char *name, const char *pin,
                       struct as_err *err)
{
    int skipped = 0;
    if (valid_pin(pin, err) < 0 || valid_name(name, err) < 0)
        return -1;
    return deposit_walk(home, src, STORE_FILE, name, pin, &skipped, err);
}

int store_deposit_bytes(const char *home, const void *data, size_t len, const char *name,
                        const char *pin, struct as_err *err)
{
    if (valid_pin(pin, err) < 0 || valid_name(name, err) < 0)
        return -1;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(data, len, hex);
    if (strcmp(hex, pin) != 0)
        return as_err_set(err, "content store: bytes for %s do not hash to %.12s", name, pin);
    strbuf tmp = SB_INIT, final = SB_INIT, p = SB_INIT;
    store_pin_dir(home, pin, &final);
    int rc = -1, existed = 0;
    if (fs_is_dir(final.buf)) {
        rc = 0;
        goto out;
    }
    if (make_tmp(home, &tmp, err) < 0)
        goto out;
    sb_addf(&p, "%s/%s", tmp.buf, name);
    int fd = open(p.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        as_err_errno(err, "%s", p.buf);
        drop_tmp(tmp.buf);
        goto out;
    }
    struct copier cp = {.fd = fd};
    int wrc = cp_data(&cp, data, len, err);
    if (close(fd) != 0 && wrc == 0)
        wrc = as_err_errno(err, "%s", p.buf);
    if (wrc == 0)
        wrc = prove(tmp.buf, pin, STORE_FILE, &p, err);
    if (wrc != 0) {
        drop_tmp(tmp.buf);
        goto out;
    }
    if (place(tmp.buf, final.buf, &existed, err) < 0)
        goto out;
    rc = existed ? check_existing(final.buf, pin, STORE_FILE, err) : 0;
out:
    sb_release(&tmp);
    sb_release(&final);
    sb_release(&p);
    return rc;
}

/* ---- verified copies (a confined server's snapshot) ---------------------- */

/* Streams the regular file src through cp (as the one file of the copy). */
static int copy_one_file(struct copier *cp, const char *src, char hex[SHA256_HEX_LEN + 1],
                         int *gone, struct as_err *err)
{
    int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0) {
        if (errno == ENOENT || errno == ELOOP) {
            *gone = 1;
            return -1;
        }
        return as_err_errno(err, "%s", src);
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        *gone = 1;
        return -1;
    }
    int rc = cp_begin(cp, "", (uint64_t)st.st_size, err);
    unsigned char *buf = xmalloc(DIGEST_BUF_SIZE);
    sha256_ctx c;
    sha256_init(&c);
    for (; rc == 0;) {
        ssize_t r = read(fd, buf, DIGEST_BUF_SIZE);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = as_err_errno(err, "reading %s", src);
            break;
        }
        if (r == 0)
            break;
        sha256_update(&c, buf, (size_t)r);
        rc = cp_data(cp, buf, (size_t)r, err);
    }
    uint8_t d[SHA256_LEN];
    sha256_final(&c, d);
    hex_encode(d, SHA256_LEN, hex);
    free(buf);
    if (cp->fd >= 0 && cp_end(cp, err) < 0)
        rc = -1;
    close(fd);
    return rc;
}

int store_copy_verified(const char *src, enum store_kind kind, const char *name, const char *pin,
                        const char *dst, struct as_err *err)
{
    if (mkdir(dst, 0700) != 0)
        return as_err_errno(err, "creating %s", dst);
    struct copier cp = {.fd = -1, .single = name, .file_mode = 0500};
    cp.dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cp.dfd < 0) {
        as_err_errno(err, "%s", dst);
        drop_tmp(dst);
        return -1;
    }
    struct digest_sink sink = {&cp, cp_dir, cp_begin, cp_data, cp_end};
    char hex[SHA256_HEX_LEN + 1] = "";
    int gone = 0, rc;
    struct as_err werr = AS_ERR_INIT;
    if (kind == STORE_FILE)
        rc = copy_one_file(&cp, src, hex, &gone, &werr);
    else
        rc = digest_tree(src, tree_kind(kind), &sink, NULL, hex, &werr);
    if (cp.fd >= 0)
        close(cp.fd);
    close(cp.dfd);
    if (rc == 0 && strcmp(hex, pin) == 0)
        return 0;
    drop_tmp(dst);
    /* A tree that cannot be walked as pinned (a symlink now, a special
     * file, over the bounds, gone) no longer holds the pinned bytes. */
    if (rc != 0 && !gone && kind == STORE_FILE) {
        *err = werr;
        return -1;
    }
    return 1;
}

static void list_files(const char *root, const char *rel, int depth, enum store_kind kind,
                       strvec *out)
{
    strbuf p = SB_INIT;
    sb_addf(&p, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = depth < DIGEST_MAX_DEPTH ? opendir(p.buf) : NULL;
    sb_release(&p);
    if (!d)
        return;
    strvec names = STRVEC_INIT;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") ||
            (kind == STORE_CODE_TREE && digest_code_skipped(n)))
            continue;
        strvec_push(&names, n);
    }
    closedir(d);
    strvec_sort(&names);
    for (size_t i = 0; i < names.n; i++) {
        strbuf r = SB_INIT, full = SB_INIT;
        sb_addf(&r, "%s%s%s", rel, rel[0] ? "/" : "", names.v[i]);
        sb_addf(&full, "%s/%s", root, r.buf);
        struct stat st;
        if (lstat(full.buf, &st) == 0 && S_ISDIR(st.st_mode))
            list_files(root, r.buf, depth + 1, kind, out);
        else
            strvec_push(out, r.buf);
        sb_release(&r);
        sb_release(&full);
    }
    strvec_clear(&names);
}

int store_tree_first_change(const char *home, const char *pin, enum store_kind kind,
                            const char *live, strbuf *rel)
{
    strbuf dir = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (!home || store_open(home, pin, kind, &dir, &err) != 1) {
        sb_release(&dir);
        return 0;
    }
    strvec a = STRVEC_INIT, b = STRVEC_INIT;
    list_files(dir.buf, "", 0, kind, &a);
    list_files(live, "", 0, kind, &b);
    int found = 0;
    size_t i = 0, j = 0;
    while (!found && (i < a.n || j < b.n)) {
        int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i], b.v[j]);
        if (c != 0) {
            sb_adds(rel, c < 0 ? a.v[i] : b.v[j]); /* removed, or added */
            found = 1;
            break;
        }
        char ha[SHA256_HEX_LEN + 1], hb[SHA256_HEX_LEN + 1];
        char *pa = xasprintf("%s/%s", dir.buf, a.v[i]), *pb = xasprintf("%s/%s", live, b.v[j]);
        struct as_err e1 = AS_ERR_INIT, e2 = AS_ERR_INIT;
        if (digest_file(pa, ha, &e1) < 0 || digest_file(pb, hb, &e2) < 0 || strcmp(ha, hb)) {
            sb_adds(rel, a.v[i]);
            found = 1;
        }
        free(pa);
        free(pb);
        i++;
        j++;
    }
    strvec_clear(&a);
    strvec_clear(&b);
    sb_release(&dir);
    return found;
}
