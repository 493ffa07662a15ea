/*
 * fs_contain — the one answer to "does this path stay inside that root?"
 *
 * Why: a repository names paths (skills, instructions, executables, cwds,
 * integrity roots), packs and libraries name files to copy, and every
 * writer at project scope names a target. Each of them once carried its own
 * check, and the checks disagreed (one followed symlinks, one refused them,
 * one allowed "..", one did not look at the disk at all). A path that one
 * check let out of the project was then read, copied or linked by code that
 * trusted another. Every such check now calls fs_contain.
 *
 * Guarantees (see fs.h for the flags):
 *  - The path is joined to its anchor and normalized lexically ("." and
 *    empty components dropped, ".." taken back one component); the result
 *    must be root itself's child, never root, never above it. out holds that
 *    normalized path, and callers open out, so what was checked is what is
 *    opened, even for "a/../b".
 *  - Then every existing component below root is looked at with lstat, in
 *    order: a symlink is refused (FS_CONTAIN_NOFOLLOW), or followed, and
 *    where it leads (realpath) must still be inside root's realpath; a
 *    symlink that leads nowhere is refused too (it could be made to point
 *    anywhere later). A component that is not a directory while more follow
 *    is refused. The first missing component ends the walk (nothing below
 *    it can be a symlink) unless FS_CONTAIN_MUST_EXIST.
 *  - Errors name the path as given and the rule: "traversal" (absolute,
 *    "..", leaving root) or "symlink", as messages and tests expect.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

/* Appends the components of p to out (an absolute, normalized prefix),
 * normalizing as it goes; floor = the length out may never shrink below
 * (root's). Returns -1 when a ".." would climb above floor, -2 when ".." is
 * refused outright, 0 otherwise. */
static int push_components(strbuf *out, size_t floor, const char *p, int no_dotdot)
{
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (no_dotdot)
                return -2;
            char *slash = out->len > floor ? memrchr(out->buf, '/', out->len) : NULL;
            if (!slash || (size_t)(slash - out->buf) < floor)
                return -1;
            sb_setlen(out, (size_t)(slash - out->buf));
        } else if (n && !(n == 1 && p[0] == '.')) {
            if (!(out->len == 1 && out->buf[0] == '/'))
                sb_addc(out, '/');
            sb_add(out, p, n);
        }
        p += n;
        while (*p == '/')
            p++;
    }
    return 0;
}

static int within(const char *root, size_t rl, const char *p)
{
    if (rl == 1 && root[0] == '/')
        return 1;
    return strncmp(p, root, rl) == 0 && (p[rl] == '\0' || p[rl] == '/');
}

int fs_dangling_link(const char *link, const char *root, struct as_err *err)
{
    char to[PATH_MAX];
    ssize_t n = readlink(link, to, sizeof to - 1);
    if (n < 0)
        return as_err_errno(err, "%s", link);
    to[n] = '\0';
    strbuf abs = SB_INIT, canon = SB_INIT, croot = SB_INIT;
    if (to[0] == '/') {
        sb_adds(&abs, to);
    } else {
        const char *slash = strrchr(link, '/');
        sb_add(&abs, link, slash ? (size_t)(slash - link) : 0);
        sb_addf(&abs, "%s%s", slash ? "/" : "", to);
    }
    struct as_err e2 = AS_ERR_INIT;
    if (root && fs_canonicalize(abs.buf, &canon, &e2) == 0 &&
        fs_canonicalize(root, &croot, &e2) == 0 && !within(croot.buf, croot.len, canon.buf))
        as_err_set(err, "%s: symlink resolves outside the project (%s)", link, to);
    else
        as_err_set(err, "%s: symlink does not resolve (it points to %s, which does not exist)",
                   link, to);
    as_err_hint(err, "replace the symlink with the real file, or remove it");
    sb_release(&abs);
    sb_release(&canon);
    sb_release(&croot);
    return -1;
}

int fs_contain(const char *root, const char *anchor, const char *path, unsigned flags, strbuf *out,
               struct as_err *err)
{
    sb_reset(out);
    if (!path || !*path)
        return as_err_set(err, "empty path (expected a path inside %s)", root);
    if (path[0] == '/' && !(flags & FS_CONTAIN_ABSOLUTE)) {
        as_err_set(err,
                   "'%s' is absolute: traversal out of %s is not allowed (write a path "
                   "relative to %s, inside it)",
                   path, root, anchor ? anchor : root);
        return FS_CONTAIN_E_TRAVERSAL;
    }
    strbuf r = SB_INIT;
    int rc = 0;
    if (root[0] != '/') {
        sb_release(&r);
        return as_err_set(err, "'%s': the root %s is not an absolute path", path, root);
    }
    sb_addc(&r, '/');
    if (push_components(&r, 1, root + 1, 0) < 0) {
        sb_release(&r);
        return as_err_set(err, "'%s': the root %s leads above /", path, root);
    }
    /* the anchor (root when NULL), then the path */
    if (path[0] == '/') {
        sb_addc(out, '/');
        rc = push_components(out, 1, path + 1, flags & FS_CONTAIN_NO_DOTDOT);
    } else {
        sb_addc(out, '/');
        const char *a = anchor ? anchor : r.buf;
        rc = push_components(out, 1, a[0] == '/' ? a + 1 : a, 0);
        if (rc == 0)
            rc = push_components(out, 1, path, flags & FS_CONTAIN_NO_DOTDOT);
    }
    if (rc == -2) {
        as_err_set(err, "'%s' contains '..': traversal out of %s is not allowed", path, r.buf);
        rc = FS_CONTAIN_E_TRAVERSAL;
        goto fail;
    }
    if (rc == 0 && !within(r.buf, r.len, out->buf) && path[0] == '/') {
        /* An absolute path spelled through another name of root (a symlinked
         * parent, /tmp → /private/tmp): judged by where both lead. */
        strbuf cp = SB_INIT, cr = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        int moved = fs_canonicalize(path, &cp, &e2) == 0 && fs_realpath(r.buf, &cr, &e2) == 0 &&
                    within(cr.buf, cr.len, cp.buf) && strcmp(cr.buf, r.buf) != 0;
        if (moved) {
            sb_release(&r);
            rc = fs_contain(cr.buf, NULL, cp.buf, flags, out, err);
        }
        sb_release(&cp);
        sb_release(&cr);
        if (moved)
            return rc;
    }
    if (rc < 0 || !within(r.buf, r.len, out->buf)) {
        as_err_set(err, "'%s' leads out of %s: traversal out of it is not allowed", path, r.buf);
        rc = FS_CONTAIN_E_TRAVERSAL;
        goto fail;
    }
    if (out->len == r.len) {
        as_err_set(err, "'%s' names %s itself; name a file or directory inside it", path, r.buf);
        rc = -1;
        goto fail;
    }
    /* lstat each component below root */
    strbuf real = SB_INIT, croot = SB_INIT;
    int have_croot = 0;
    for (size_t i = r.len + 1; i <= out->len; i++) {
        if (i < out->len && out->buf[i] != '/')
            continue;
        char saved = out->buf[i];
        out->buf[i] = '\0';
        const char *comp = out->buf;
        struct stat st;
        if (lstat(comp, &st) != 0) {
            int e = errno;
            if ((e == ENOENT || e == ENOTDIR) && !(flags & FS_CONTAIN_MUST_EXIST)) {
                out->buf[i] = saved;
                break;
            }
            if (e == ENOENT || e == ENOTDIR) {
                as_err_set(err, "'%s' does not exist (%s)", path, comp);
                rc = FS_CONTAIN_E_MISSING;
            } else {
                as_err_set(err, "'%s': cannot inspect %s: %s", path, comp, strerror(e));
                rc = -1;
            }
            out->buf[i] = saved;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            if (flags & FS_CONTAIN_NOFOLLOW) {
                as_err_set(err,
                           "'%s' goes through a symlink (%s); contained paths must be "
                           "symlink-free",
                           path, comp);
                out->buf[i] = saved;
                rc = FS_CONTAIN_E_SYMLINK;
                break;
            }
            struct as_err e2 = AS_ERR_INIT;
            if (!have_croot) {
                if (fs_realpath(r.buf, &croot, &e2) != 0) {
                    as_err_set(err, "'%s': %s", path, e2.msg);
                    out->buf[i] = saved;
                    rc = -1;
                    break;
                }
                have_croot = 1;
            }
            if (fs_realpath(comp, &real, &e2) != 0) {
                fs_dangling_link(comp, r.buf, err);
                out->buf[i] = saved;
                rc = FS_CONTAIN_E_SYMLINK;
                break;
            }
            if (!within(croot.buf, croot.len, real.buf) || strcmp(real.buf, croot.buf) == 0) {
                if (strcmp(path, comp) != 0)
                    as_err_set(err,
                               "'%s' goes through %s: symlink resolves outside the project "
                               "(%s); a symlink is followed only when it stays inside",
                               path, comp, real.buf);
                else
                    as_err_set(err,
                               "%s: symlink resolves outside the project (%s); a symlink is "
                               "followed only when it stays inside",
                               comp, real.buf);
                out->buf[i] = saved;
                rc = FS_CONTAIN_E_SYMLINK;
                break;
            }
            if (stat(comp, &st) != 0) { /* what the link names decides below */
                out->buf[i] = saved;
                break;
            }
        }
        out->buf[i] = saved;
        if (i < out->len && !S_ISDIR(st.st_mode)) {
            as_err_set(err, "'%s': %.*s is not a directory", path, (int)i, out->buf);
            rc = -1;
            break;
        }
    }
    sb_release(&real);
    sb_release(&croot);
    sb_release(&r);
    if (rc < 0)
        sb_reset(out);
    return rc < 0 ? rc : 0;
fail:
    sb_release(&r);
    sb_reset(out);
    return rc;
}
