/*
 * The namespace launcher (see ns.h). The parent clones sandbox-init with the
 * namespace flags, writes its uid/gid maps, and then only talks to it over a
 * SOCK_SEQPACKET control pair. Everything below `child_` runs in the clone,
 * which never returns into the caller's code: every path ends in _exit.
 */
#include "sandbox/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"
#include "sandbox/confine.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define BASE "/tmp"        /* mount point of the scratch root while building */
#define NEWROOT "/newroot" /* the sandbox's root, inside the scratch root */
#define OLDROOT "/oldroot" /* the host's root, inside the scratch root */
#define MSG_MAX 1024

static pid_t raw_clone(unsigned long flags)
{
    /* Like fork (no new stack), but with namespace flags, so the child is
     * PID 1 of its namespace and owns the new user namespace. agentstack
     * runs undumpable (cli/main.c: it may hold resolved secrets), and the
     * flag is copied at clone: the child must start dumpable, since its id
     * maps are written through /proc/<pid> (by us, then by itself for the
     * nested namespace), whose files belong to root in an undumpable
     * process. So it is raised just around the clone; child_main drops it
     * again once the maps are written. */
    int was = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (was == 0)
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid != 0 && was == 0) {
        int e = errno;
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        errno = e;
    }
    return pid;
}

/* ---- control messages ------------------------------------------------------ */

static int send_msg(int fd, const char *s, int pass_fd)
{
    struct iovec iov = {.iov_base = (void *)s, .iov_len = strlen(s)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    char cbuf[CMSG_SPACE(sizeof(int))];
    if (pass_fd >= 0) {
        memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    ssize_t r;
    do
        r = sendmsg(fd, &mh, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -1 : 0;
}

/* Receives one message (NUL-terminated) and an optional fd. Returns its
 * length, 0 on EOF, -1 on error. */
static ssize_t recv_msg(int fd, char *buf, size_t size, int *got_fd)
{
    struct iovec iov = {.iov_base = buf, .iov_len = size - 1};
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    ssize_t r;
    do
        r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    buf[r] = '\0';
    if (got_fd) {
        *got_fd = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                memcpy(got_fd, CMSG_DATA(cm), sizeof(int));
    }
    return r;
}

/* ---- the child: building the root ------------------------------------------- */

static int g_ctl = -1;

static void child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void child_fail(const char *fmt, ...)
{
    char buf[MSG_MAX];
    int n = snprintf(buf, sizeof buf, "error ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    send_msg(g_ctl, buf, -1);
    _exit(111);
}

static int write_file(const char *path, const char *data)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(data);
    ssize_t w = write(fd, data, n);
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)n ? 0 : -1;
}

/* Directories known to exist in the root being built, so that the mkdir -p
 * before each of the ~40 entries does not repeat a mkdir per component
 * (issue 8: most of the child's system calls were EEXIST). A mount at T
 * hides what was below T, so mounting forgets those entries. */
#define DIRS_MAX 64
static char g_dirs[DIRS_MAX][256];
static int g_ndirs;

static int dir_known(const char *p)
{
    for (int i = 0; i < g_ndirs; i++)
        if (strcmp(g_dirs[i], p) == 0)
            return 1;
    return 0;
}

static void dir_note(const char *p)
{
    if (g_ndirs < DIRS_MAX && strlen(p) < sizeof g_dirs[0] && !dir_known(p))
        snprintf(g_dirs[g_ndirs++], sizeof g_dirs[0], "%s", p);
}

static void dirs_forget_below(const char *t)
{
    size_t n = strlen(t);
    for (int i = 0; i < g_ndirs;) {
        if (strncmp(g_dirs[i], t, n) == 0 && g_dirs[i][n] == '/')
            memcpy(g_dirs[i], g_dirs[--g_ndirs], sizeof g_dirs[0]);
        else
            i++;
    }
}

/* mkdir -p, for directories inside the scratch and new roots only. */
static int mkdir_p(const char *path, mode_t mode)
{
    if (dir_known(path))
        return 0;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return errno = ENAMETOOLONG, -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (!dir_known(tmp)) {
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                return -1;
            dir_note(tmp);
        }
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -1;
    dir_note(tmp);
    return 0;
}

static int mkparent(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    char *slash = strrchr(tmp, '/');
    if (!slash || slash == tmp)
        return 0;
    *slash = '\0';
    return mkdir_p(tmp, 0755);
}

/* The flags a bind remount must keep: in a user namespace, the kernel
 * refuses to drop the ones the original mount had (they are locked). */
static unsigned long kept_flags(const char *path)
{
    struct statvfs sv;
    unsigned long f = 0;
    if (statvfs(path, &sv) < 0)
        return 0;
    if (sv.f_flag & ST_RDONLY)
        f |= MS_RDONLY;
    if (sv.f_flag & ST_NOSUID)
        f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV)
        f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC)
        f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME)
        f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
        f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
        f |= MS_RELATIME;
    return f;
}

static int remount(const char *path, unsigned long extra)
{
    return mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | kept_flags(path) | extra, NULL);
}

/* mount_setattr(2) (Linux 5.12): <linux/mount.h> clashes with <sys/mount.h>
 * on older libcs, so the few names needed are spelled out here. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
struct sbx_mount_attr {
    unsigned long long attr_set, attr_clr, propagation, userns_fd;
};
#define SBX_MOUNT_ATTR_RDONLY 0x1ULL
#define SBX_MOUNT_ATTR_NOSUID 0x2ULL
#define SBX_MOUNT_ATTR_NODEV 0x4ULL

/* Set when a read-only bind could not be locked down in one call, so its
 * submounts still need the mountinfo walk (ro_submounts). */
static int g_walk_submounts;

/* Makes a bind and every mount below it read-only, nosuid, nodev in one
 * system call: only adds flags, so the locked ones of the source stay, and
 * there is no need to read mountinfo for the submounts a recursive bind
 * brought along. Falls back to a remount plus the walk on older kernels. */
static int ro_tree(const char *path)
{
    struct sbx_mount_attr a = {.attr_set = SBX_MOUNT_ATTR_RDONLY | SBX_MOUNT_ATTR_NOSUID |
                                           SBX_MOUNT_ATTR_NODEV};
    if (syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &a, sizeof a) == 0)
        return 0;
    g_walk_submounts = 1;
    return remount(path, MS_RDONLY | MS_NOSUID | MS_NODEV);
}

/* Decodes mountinfo's octal escapes in place. */
static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

static int is_spec_target(const struct sbx_ns_spec *s, const char *path)
{
    size_t n = strlen(NEWROOT);
    if (strncmp(path, NEWROOT, n) != 0)
        return 0;
    for (size_t i = 0; i < s->nmounts; i++)
        if (strcmp(s->mounts[i].dst, path + n) == 0)
            return 1;
    return 0;
}

/* A recursive bind brings the source's submounts along writable; make each
 * one below a read-only bind read-only too. One pass over mountinfo for the
 * whole tree (reading it costs more than the mounts). Our own mounts are
 * left as the spec made them. */
static void ro_submounts(const struct sbx_ns_spec *s)
{
    FILE *f = fopen(NEWROOT "/proc/self/mountinfo", "re");
    if (!f)
        f = fopen(OLDROOT "/proc/self/mountinfo", "re");
    if (!f)
        child_fail("cannot read mountinfo to lock binds read-only: %s", strerror(errno));
    char line[8192], target[4096];
    while (fgets(line, sizeof line, f)) {
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " ", &save);
        if (!tok)
            continue;
        unescape(tok);
        if (is_spec_target(s, tok))
            continue;
        for (size_t i = 0; i < s->nmounts; i++) {
            if (s->mounts[i].kind != SBX_MNT_RO_BIND)
                continue;
            snprintf(target, sizeof target, NEWROOT "%s", s->mounts[i].dst);
            size_t tl = strlen(target);
            if (strncmp(tok, target, tl) == 0 && tok[tl] == '/') {
                if (remount(tok, MS_RDONLY | MS_NOSUID | MS_NODEV) < 0 && errno != ENOENT) {
                    fclose(f);
                    child_fail("cannot make %s read-only: %s", tok, strerror(errno));
                }
                break;
            }
        }
    }
    fclose(f);
}

/* Creates the mount point for a bind of src_host. Returns 0, or 1 when an
 * optional source is missing (the entry is skipped). */
static int make_mountpoint(const char *src_host, const char *target, int optional)
{
    struct stat st;
    if (stat(src_host, &st) < 0) {
        if (optional)
            return 1; /* as unreachable as a missing one */
        child_fail("%s: %s", src_host + strlen(OLDROOT), strerror(errno));
    }
    struct stat tst;
    if (lstat(target, &tst) == 0 && !S_ISLNK(tst.st_mode))
        return 0; /* bound over what is there (possibly inside a read-only bind) */
    if (mkparent(target) < 0)
        child_fail("creating the parent of %s: %s", target + strlen(NEWROOT), strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        if (mkdir(target, 0755) < 0 && errno != EEXIST)
            child_fail("creating %s: %s", target + strlen(NEWROOT), strerror(errno));
    } else {
        int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 && errno != EEXIST)
            child_fail("creating %s: %s", target + strlen(NEWROOT), strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return 0;
}

/* For a nofollow bind: walks dst from the new root one component at a time,
 * never following a symlink. A directory on the way that is missing is
 * made; a symlink or other non-directory in its place is removed first (a
 * later run is rebuilt, never redirected, by what an earlier one left). The
 * last component is made a regular file (want_dir 0) or a directory the
 * same way; a non-empty directory where a file belongs is a refusal. Returns
 * the O_PATH descriptor of the directory holding it, with its name in *leaf. */
static int nofollow_parent(const char *dst, int want_dir, char *path, size_t pathsz,
                           const char **leaf)
{
    if (snprintf(path, pathsz, "%s", dst) >= (int)pathsz || path[0] != '/')
        child_fail("the mount point %s is not an absolute path that fits", dst);
    int fd = open(NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        child_fail("opening the new root: %s", strerror(errno));
    char *c = path + 1;
    for (;;) {
        char *slash = strchr(c, '/');
        int last = slash == NULL;
        if (slash)
            *slash = '\0';
        if (!*c || strcmp(c, ".") == 0 || strcmp(c, "..") == 0)
            child_fail("the mount point %s has an empty, '.' or '..' component", dst);
        if (last) {
            *leaf = c;
            struct stat st;
            if (fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
                if (unlinkat(fd, c, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
                    child_fail("%s is in the way of the mount at %s and cannot be removed: %s",
                               S_ISDIR(st.st_mode) ? "a directory" : "a file", dst,
                               strerror(errno));
            }
            if (want_dir) {
                if (mkdirat(fd, c, 0755) < 0 && errno != EEXIST)
                    child_fail("creating %s: %s", dst, strerror(errno));
            } else {
                int f = openat(fd, c, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (f < 0 && errno != EEXIST)
                    child_fail("creating %s: %s", dst, strerror(errno));
                if (f >= 0)
                    close(f);
            }
            return fd;
        }
        int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            /* A symlink (O_PATH|O_NOFOLLOW opens it: ENOTDIR) or a file. */
            if (unlinkat(fd, c, 0) < 0)
                child_fail("a link or file is in the way of the mount at %s and cannot be "
                           "removed: %s",
                           dst, strerror(errno));
            errno = ENOENT;
        }
        if (next < 0 && errno == ENOENT) {
            if (mkdirat(fd, c, 0755) < 0 && errno != EEXIST)
                child_fail("creating a directory on the way to %s: %s", dst, strerror(errno));
            next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0)
            child_fail("walking to the mount point %s: %s", dst, strerror(errno));
        close(fd);
        fd = next;
        c = slash + 1;
    }
}

/* A bind whose mount point lies in a tree an earlier run could write. */
static void apply_nofollow_bind(const struct sbx_mount *m, const char *src)
{
    struct stat st;
    if (stat(src, &st) < 0) {
        if (m->optional)
            return;
        child_fail("%s: %s", m->src, strerror(errno));
    }
    char path[4096], via[64];
    const char *leaf = NULL;
    int dir = nofollow_parent(m->dst, S_ISDIR(st.st_mode), path, sizeof path, &leaf);
    int t = openat(dir, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat tst;
    if (t < 0 || fstat(t, &tst) < 0 ||
        (S_ISDIR(st.st_mode) ? !S_ISDIR(tst.st_mode) : !S_ISREG(tst.st_mode)))
        child_fail("the mount point %s changed while it was being made", m->dst);
    /* The descriptor names the inode, whatever its path turns into. */
    snprintf(via, sizeof via, NEWROOT "/proc/self/fd/%d", t);
    if (mount(src, via, NULL, MS_BIND | MS_REC, NULL) < 0)
        child_fail("binding %s at %s: %s", m->src, m->dst, strerror(errno));
    close(t);
    /* The new mount, reached through the directory that holds it. */
    t = openat(dir, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    if (t < 0)
        child_fail("reopening %s: %s", m->dst, strerror(errno));
    snprintf(via, sizeof via, NEWROOT "/proc/self/fd/%d", t);
    if ((m->kind == SBX_MNT_RO_BIND ? ro_tree(via) : remount(via, MS_NOSUID | MS_NODEV)) < 0)
        child_fail("remounting %s: %s", m->dst, strerror(errno));
    close(t);
}

static void apply_mount(const struct sbx_mount *m)
{
    char target[4096], src[4096];
    snprintf(target, sizeof target, NEWROOT "%s", m->dst);
    if (m->src)
        snprintf(src, sizeof src, OLDROOT "%s", m->src);
    const char *what = m->dst;
    switch (m->kind) {
    case SBX_MNT_RO_BIND:
    case SBX_MNT_RW_BIND:
    case SBX_MNT_DEV:
        if (m->nofollow && m->kind != SBX_MNT_DEV) {
            apply_nofollow_bind(m, src);
            dirs_forget_below(target);
            return;
        }
        if (make_mountpoint(src, target, m->optional))
            return;
        if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0)
            child_fail("binding %s at %s: %s", m->src, what, strerror(errno));
        dirs_forget_below(target);
        if (m->kind == SBX_MNT_DEV)
            return;
        if ((m->kind == SBX_MNT_RO_BIND ? ro_tree(target) : remount(target, MS_NOSUID | MS_NODEV)) <
            0)
            child_fail("remounting %s: %s", what, strerror(errno));
        return;
    case SBX_MNT_TMPFS:
    case SBX_MNT_SCRATCH:
        if (mkdir_p(target, 0755) < 0)
            child_fail("creating %s: %s", what, strerror(errno));
        if (mount("tmpfs", target, "tmpfs",
                  MS_NOSUID | MS_NODEV | (m->kind == SBX_MNT_SCRATCH ? MS_NOEXEC : 0),
                  m->data ? m->data : "mode=0755") < 0)
            child_fail("mounting a tmpfs at %s: %s", what, strerror(errno));
        dirs_forget_below(target);
        return;
    case SBX_MNT_PROC:
        if (mkdir_p(target, 0555) < 0)
            child_fail("creating %s: %s", what, strerror(errno));
        if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            child_fail("cannot mount a fresh /proc in the sandbox (%s) — this kernel or "
                       "container does not allow procfs in a new user namespace",
                       strerror(errno));
        dirs_forget_below(target);
        return;
    case SBX_MNT_DEVPTS:
        if (mkdir_p(target, 0755) < 0)
            child_fail("creating %s: %s", what, strerror(errno));
        if (mount("devpts", target, "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=620") < 0 &&
            !m->optional)
            child_fail("mounting devpts at %s: %s", what, strerror(errno));
        dirs_forget_below(target);
        return;
    case SBX_MNT_EMPTY_FILE: {
        struct stat st;
        if (lstat(target, &st) < 0) {
            if (m->optional)
                return;
            child_fail("cannot shadow %s: %s", what, strerror(errno));
        }
        if (!S_ISREG(st.st_mode))
            child_fail("cannot shadow %s: not a regular file", what);
        if (mount("/.empty", target, NULL, MS_BIND, NULL) < 0 ||
            remount(target, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC) < 0)
            child_fail("cannot shadow %s: %s", what, strerror(errno));
        return;
    }
    case SBX_MNT_EMPTY_DIR: {
        struct stat st;
        if (lstat(target, &st) < 0 || !S_ISDIR(st.st_mode)) {
            if (m->optional)
                return;
            child_fail("cannot shadow directory %s", what);
        }
        if (mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0555") < 0)
            child_fail("cannot shadow %s: %s", what, strerror(errno));
        dirs_forget_below(target);
        return;
    }
    case SBX_MNT_SYMLINK:
        if (mkparent(target) < 0 || (symlink(m->src, target) < 0 && errno != EEXIST))
            child_fail("creating the link %s: %s", what, strerror(errno));
        return;
    case SBX_MNT_FILE: {
        if (mkparent(target) < 0)
            child_fail("creating the parent of %s: %s", what, strerror(errno));
        int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
            child_fail("writing %s: %s", what, strerror(errno));
        size_t n = m->data ? strlen(m->data) : 0;
        if (n && write(fd, m->data, n) != (ssize_t)n)
            child_fail("writing %s: %s", what, strerror(errno));
        close(fd);
        return;
    }
    case SBX_MNT_DIR:
        if (mkdir_p(target, 0755) < 0)
            child_fail("creating %s: %s", what, strerror(errno));
        return;
    }
    child_fail("unknown mount kind for %s", what);
}

static void build_root(const struct sbx_ns_spec *s)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        child_fail("making the mount namespace private: %s", strerror(errno));
    if (mount("tmpfs", BASE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
        child_fail("mounting the scratch root: %s", strerror(errno));
    if (mkdir(BASE OLDROOT, 0755) < 0 || mkdir(BASE NEWROOT, 0755) < 0)
        child_fail("preparing the scratch root: %s", strerror(errno));
    if (syscall(SYS_pivot_root, BASE, BASE OLDROOT) < 0)
        child_fail("pivot_root into the scratch root: %s", strerror(errno));
    if (chdir("/") < 0)
        child_fail("chdir: %s", strerror(errno));
    if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
        child_fail("mounting the new root: %s", strerror(errno));
    dir_note(NEWROOT);
    int fd = open("/.empty", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0)
        child_fail("creating the shadow file: %s", strerror(errno));
    close(fd);
    for (size_t i = 0; i < s->nmounts; i++)
        apply_mount(&s->mounts[i]);
    if (g_walk_submounts)
        ro_submounts(s);
    if (chdir(NEWROOT) < 0)
        child_fail("chdir into the new root: %s", strerror(errno));
    /* pivot_root(".", "."): the old root ends up stacked on the new one and
     * is detached at once, taking the host's tree with it. */
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        child_fail("pivot_root into the new root: %s", strerror(errno));
    if (umount2(".", MNT_DETACH) < 0)
        child_fail("detaching the host root: %s", strerror(errno));
    if (chdir("/") < 0)
        child_fail("chdir: %s", strerror(errno));
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
        child_fail("making the new root read-only: %s", strerror(errno));
}

static void lo_up_and_listen(const struct sbx_ns_spec *s)
{
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (sk < 0 || ioctl(sk, SIOCGIFFLAGS, &ifr) < 0)
        child_fail("reading the loopback interface: %s", strerror(errno));
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(sk, SIOCSIFFLAGS, &ifr) < 0)
        child_fail("raising the loopback interface: %s", strerror(errno));
    close(sk);
    if (s->listen_port <= 0)
        return;
    const int ports[2] = {s->listen_port, s->face_port};
    const char *const msgs[2] = {"listen", "face"};
    for (int i = 0; i < 2; i++) {
        if (ports[i] <= 0)
            continue;
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ports[i])};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 1024) < 0)
            child_fail("binding the %s listener in the sandbox: %s", i ? "gateway" : "proxy",
                       strerror(errno));
        if (send_msg(g_ctl, msgs[i], l) < 0)
            child_fail("handing the listener to the host: %s", strerror(errno));
        close(l); /* the socket stays in this namespace; only the host serves it */
    }
}

static void nested_userns(const struct sbx_ns_spec *s)
{
    char buf[64];
    /* The mount namespace being left would be freed by the unshare — its
     * tree unmounted and an expedited RCU grace period waited for on the
     * way to "ready" (~0.1-0.3 ms on a small VM). init holds it open
     * instead, so that work happens in init's exit, which the host does not
     * wait for. The descriptor is close-on-exec and cannot be reopened
     * through /proc/1/fd (init is made non-dumpable in child_main), and the
     * namespace belongs to the outer user namespace, where nothing inside
     * has a capability: no one in the sandbox can enter it. Best effort:
     * without /proc the unshare frees it as before. */
    (void)open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    /* Mounts made in the first user namespace become locked in a child one:
     * nothing inside can unmount a shadow or remount a read-only bind. */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        child_fail("creating the nested user namespace: %s", strerror(errno));
    uid_t uid = s->run_uid ? s->run_uid : s->inner_uid;
    gid_t gid = s->run_uid ? s->run_gid : s->inner_gid;
    snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/uid_map", buf) < 0)
        child_fail("nested uid_map: %s", strerror(errno));
    if (write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
        child_fail("nested setgroups: %s", strerror(errno));
    snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", buf) < 0)
        child_fail("nested gid_map: %s", strerror(errno));
}

/* The confinement layers as recorded: seccomp always, Landlock's ABI. */
static void layers_str(int ll, char *buf, size_t n)
{
    if (ll > 0)
        snprintf(buf, n, "seccomp, landlock abi %d", ll);
    else
        snprintf(buf, n, "seccomp, landlock unavailable");
}

void sbx_ns_layers(char *buf, size_t n)
{
    layers_str(sbx_landlock_abi(), buf, n);
}

static void noop_handler(int sig)
{
    (void)sig;
}

static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1, SIGUSR2};

struct spawn_args {
    const struct sbx_ns_spec *s;
    volatile int err; /* errno of a failed chdir or execve, set by the child */
};

/* The vfork child's stack (it only runs until execve). */
static char spawn_stack[64 * 1024] __attribute__((aligned(16)));

/* Runs in the CLONE_VM child: only async-signal-safe calls, and nothing of
 * init's memory is written but a->err. Its signal dispositions and
 * descriptor table are its own (no CLONE_SIGHAND, no CLONE_FILES). */
static int harness_main(void *arg)
{
    struct spawn_args *a = arg;
    setsid();
    /* Default dispositions before the unblock: init's handlers live in the
     * shared memory and must never run here, and nothing ignored by
     * whoever started agentstack may reach the harness. */
    proc_default_signals();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (size_t i = 0; i < a->s->nrlimits; i++) {
        struct rlimit rl = {(rlim_t)a->s->rlimits[i].value, (rlim_t)a->s->rlimits[i].value};
        if (setrlimit(a->s->rlimits[i].resource, &rl) < 0) {
            a->err = errno ? errno : EINVAL;
            _exit(127);
        }
    }
    if (chdir(a->s->cwd) == 0) {
        /* init's control socket and signalfd are close-on-exec already;
         * this catches anything inherited from the host. */
        syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
        execve(a->s->argv[0], (char *const *)a->s->argv, (char *const *)a->s->envp);
    }
    a->err = errno ? errno : ENOEXEC;
    _exit(127);
}

static void __attribute__((noreturn)) child_run_init(const struct sbx_ns_spec *s)
{
    sigset_t set, old;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++)
        sigaddset(&set, fwd_sigs[i]);
    sigaddset(&set, SIGCHLD);
    /* Handlers make the signals deliverable to a namespace's PID 1, and the
     * block routes them to the signalfd. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = noop_handler;
    for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++)
        sigaction(fwd_sigs[i], &sa, NULL);
    sigaction(SIGCHLD, &sa, NULL);
    sigprocmask(SIG_BLOCK, &set, &old);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0)
        child_fail("signalfd: %s", strerror(errno));
    /* The harness is started like posix_spawn does it: a child sharing
     * init's memory (CLONE_VM|CLONE_VFORK) on a stack of its own, so no
     * page table is copied and no page faulted copy-on-write just to exec
     * (issue 8); init sleeps until the exec or the _exit, and the child
     * leaves a failed chdir/exec's errno in the shared struct. */
    struct spawn_args a = {.s = s, .err = 0};
    pid_t h =
        clone(harness_main, spawn_stack + sizeof spawn_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    if (h < 0)
        child_fail("starting the harness: %s", strerror(errno));
    char msg[MSG_MAX];
    if (a.err) {
        snprintf(msg, sizeof msg, "exec-failed %s: %s", s->argv[0], strerror(a.err));
        send_msg(g_ctl, msg, -1);
        waitpid(h, NULL, 0);
        _exit(127);
    }
    snprintf(msg, sizeof msg, "started %d", (int)h);
    send_msg(g_ctl, msg, -1);

    int code = -1, sig = -1;
    for (;;) {
        struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN}, {.fd = g_ctl, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0)
            continue;
        if (pf[1].revents) {
            char b[64];
            ssize_t n = recv(g_ctl, b, sizeof b, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                /* The host side is gone: take the whole sandbox down. */
                kill(-1, SIGKILL);
                _exit(137);
            }
        }
        if (!(pf[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        if (si.ssi_signo == SIGCHLD) {
            int st;
            pid_t p;
            while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                if (p != h)
                    continue;
                if (WIFEXITED(st))
                    code = WEXITSTATUS(st);
                else if (WIFSIGNALED(st))
                    sig = WTERMSIG(st);
            }
            if (code >= 0 || sig >= 0)
                break;
            continue;
        }
        if (kill(-h, (int)si.ssi_signo) < 0)
            kill(h, (int)si.ssi_signo);
    }
    /* Whatever the harness left behind goes with it — killed and reaped
     * here, before the last word — so that once the host reads "exit" no
     * process of the sandbox runs and the host need not wait out this
     * process's own exit (the namespaces' teardown, ~0.3 ms, issue 8). */
    kill(-1, SIGKILL);
    for (;;) {
        if (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
            continue;
        break; /* ECHILD: nothing is left in the namespace */
    }
    snprintf(msg, sizeof msg, "exit %d %d", code, sig);
    send_msg(g_ctl, msg, -1);
    _exit(code >= 0 ? code : 128 + sig);
}

/* The caller's CPU affinity, as it was before the clone (see spread_from). */
static cpu_set_t g_affinity;
static int g_have_affinity;

/* The descriptors init keeps: the spec's stdio on 0-2, the control socket
 * on 3, nothing else (see ns.h). Runs before anything else in the clone. */
static int child_fds(const struct sbx_ns_spec *s, int ctl)
{
    if (s->use_stdio) {
        /* Off 0-3 first, so that no dup2 below overwrites a source. */
        int hi[4];
        const int src[4] = {s->stdio[0], s->stdio[1], s->stdio[2], ctl};
        for (int i = 0; i < 4; i++)
            if ((hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16)) < 0)
                _exit(114);
        for (int i = 0; i < 3; i++)
            if (dup2(hi[i], i) < 0) /* dup2 clears close-on-exec: the harness keeps 0-2 */
                _exit(114);
        ctl = hi[3];
    }
    if (ctl != 3) {
        if (dup3(ctl, 3, O_CLOEXEC) < 0)
            _exit(114);
    }
    if (syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
        _exit(114);
    return 3;
}

static void __attribute__((noreturn))
child_main(const struct sbx_ns_spec *s, int ctl, int parent_root)
{
    g_ctl = ctl = child_fds(s, ctl);
    /* Out of the terminal's foreground group: a Ctrl-C reaches agentstack,
     * which forwards it once, instead of reaching init directly as well. */
    setsid();
    /* The hostname and the network need no uid mapping, only this user
     * namespace's capabilities: done while the host writes the maps, off
     * the path to "ready" (issue 8). */
    if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
        child_fail("sethostname: %s", strerror(errno));
    if (s->new_net)
        lo_up_and_listen(s);
    char msg[MSG_MAX];
    ssize_t n = recv_msg(ctl, msg, sizeof msg, NULL);
    if (n <= 0 || strcmp(msg, "go") != 0)
        _exit(112);
    /* After "go", so the host's spread_from() is done: init and the harness
     * get the caller's affinity back. */
    if (g_have_affinity)
        sched_setaffinity(0, sizeof g_affinity, &g_affinity);
    /* The maps translate ids; switching to the inner ids is what makes the
     * process's own (kernel) uid the mapped outer one. */
    /* EPERM: the caller's own user namespace already forbids setgroups, so
     * its groups are fixed and were never root's to begin with. */
    if (parent_root && setgroups(0, NULL) < 0 && errno != EPERM)
        child_fail("dropping supplementary groups: %s", strerror(errno));
    if (setresgid(s->inner_gid, s->inner_gid, s->inner_gid) < 0 ||
        setresuid(s->inner_uid, s->inner_uid, s->inner_uid) < 0)
        child_fail("switching to the sandbox uid/gid: %s", strerror(errno));
    if (getuid() != s->inner_uid || getgid() != s->inner_gid)
        child_fail("the uid/gid map was not applied");
    /* After the id change, which clears it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    build_root(s);
    if (s->run_uid) {
        /* The host's binds are in place: from here nothing needs the
         * invoking uid's access to them (see ns.h). */
        if (setresgid(s->run_gid, s->run_gid, s->run_gid) < 0 ||
            setresuid(s->run_uid, s->run_uid, s->run_uid) < 0)
            child_fail("switching to the run uid/gid: %s", strerror(errno));
        /* The id change cleared both: dumpable keeps /proc/self ours for the
         * nested maps (made undumpable again below). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_DUMPABLE, 1);
    }
    nested_userns(s);
    /* The harness runs with init's uid: left dumpable, init would be open to
     * it through /proc/1 — its descriptors (the run's output pipe, the
     * control socket, the first mount namespace held above) reopened via
     * /proc/1/fd, its memory read. Not dumpable, /proc/1's private files need
     * a capability nothing inside has. After the id maps, which are written
     * through /proc/self; the harness's own exec makes it dumpable again. */
    if (prctl(PR_SET_DUMPABLE, 0) < 0)
        child_fail("making sandbox-init undumpable: %s", strerror(errno));

    char layers[256] = "";
    char why[512] = "";
    if (sbx_no_new_privs() < 0)
        child_fail("no_new_privs: %s", strerror(errno));
    int ll = sbx_landlock_apply(s->writable, why, sizeof why);
    if (ll < 0)
        child_fail("%s", why);
    if (sbx_drop_privileges(why, sizeof why) < 0)
        child_fail("%s", why);
    if (sbx_seccomp_install(why, sizeof why) < 0)
        child_fail("%s", why);
    layers_str(ll, layers, sizeof layers);
    snprintf(msg, sizeof msg, "ready %s", layers);
    send_msg(ctl, msg, -1);
    n = recv_msg(ctl, msg, sizeof msg, NULL);
    if (n <= 0 || strcmp(msg, "run") != 0)
        _exit(113);
    child_run_init(s);
}

/* ---- the parent ----------------------------------------------------------------- */

static int write_proc(pid_t pid, const char *file, const char *data, struct as_err *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    if (write_file(path, data) < 0)
        return as_err_errno(err, "writing %s", path);
    return 0;
}

static void unavailable_hint(struct as_err *err)
{
    as_err_hint(err, "user namespaces are needed: check `sysctl user.max_user_namespaces` "
                     "(> 0), kernel.unprivileged_userns_clone, and AppArmor's "
                     "kernel.apparmor_restrict_unprivileged_userns");
}

/* init may have failed (and said why) before the host finished starting
 * it: its word replaces the host's own error (a map write to a dead pid). */
static void child_error(struct sbx_ns_child *c, struct as_err *err)
{
    char msg[MSG_MAX];
    for (;;) {
        if (c->ctl < 0)
            return;
        ssize_t n = recv(c->ctl, msg, sizeof msg - 1, MSG_DONTWAIT);
        if (n <= 0)
            return;
        msg[n] = '\0';
        if (strncmp(msg, "error ", 6) == 0) {
            *err = (struct as_err)AS_ERR_INIT;
            as_err_set(err, "%s", msg + 6);
            return;
        }
    }
}

int sbx_ns_start(const struct sbx_ns_spec *s, struct sbx_ns_child *c, struct as_err *err)
{
    if (sbx_ns_spawn(s, c, err) < 0)
        return -1;
    return sbx_ns_ready(s, c, err);
}

/* A new child often starts on its parent's CPU, and on a small machine it
 * then waits there while the host does its share of the start (the run
 * record, loading libcrypto: ~1 ms) although another CPU is free; the two
 * halves of the start then run one after the other instead of side by side.
 * Keeping init off the host's current CPU until "go" spreads them; init
 * restores the caller's affinity when "go" arrives. Nothing happens with a
 * single allowed CPU. Best effort: a refusal changes nothing but speed. */
static void spread_from(pid_t child)
{
    if (!g_have_affinity)
        return;
    int cpu = sched_getcpu();
    cpu_set_t away = g_affinity;
    if (cpu >= 0 && cpu < CPU_SETSIZE)
        CPU_CLR(cpu, &away);
    if (CPU_COUNT(&away) > 0)
        sched_setaffinity(child, sizeof away, &away);
}

int sbx_ns_spawn(const struct sbx_ns_spec *s, struct sbx_ns_child *c, struct as_err *err)
{
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->pidfd = c->ctl = c->listen_fd = c->face_fd = -1;
    c->harness = -1;
    c->end_code = c->end_sig = -1;
    if (s->inner_uid == 0 || s->inner_gid == 0)
        return as_err_set(err, "refusing to run the harness as uid/gid 0 inside the sandbox");
    if (!s->argv || !s->argv[0] || s->argv[0][0] != '/')
        return as_err_set(err, "the sandboxed command needs an absolute path");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return as_err_errno(err, "control socket");
    unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
    if (s->new_net)
        flags |= CLONE_NEWNET;
    int parent_root = geteuid() == 0;
    g_have_affinity = sched_getaffinity(0, sizeof g_affinity, &g_affinity) == 0;
    fflush(NULL);
    pid_t pid = raw_clone(flags);
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        as_err_set(err,
                   "cannot create the sandbox's namespaces: %s (user namespaces "
                   "unavailable?)",
                   strerror(e));
        unavailable_hint(err);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        child_main(s, sv[1], parent_root);
    }
    close(sv[1]);
    spread_from(pid);
    c->pid = pid;
    c->ctl = sv[0];
    c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (c->pidfd < 0) {
        as_err_errno(err, "pidfd_open");
        goto fail;
    }
    char buf[128];
    if (geteuid() != 0 && write_proc(pid, "setgroups", "deny", err) < 0)
        goto fail;
    snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned)s->inner_uid, (unsigned)s->outer_uid);
    if (s->run_uid && s->run_uid != s->inner_uid)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%u %u 1\n", (unsigned)s->run_uid,
                 (unsigned)s->run_outer_uid);
    if (write_proc(pid, "uid_map", buf, err) < 0)
        goto fail;
    snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned)s->inner_gid, (unsigned)s->outer_gid);
    if (s->run_uid && s->run_gid != s->inner_gid)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%u %u 1\n", (unsigned)s->run_gid,
                 (unsigned)s->run_outer_gid);
    if (write_proc(pid, "gid_map", buf, err) < 0)
        goto fail;
    if (send_msg(c->ctl, "go", -1) < 0) {
        as_err_errno(err, "starting sandbox-init");
        goto fail;
    }
    return 0;
fail:
    child_error(c, err);
    sbx_ns_release(c);
    return -1;
}

int sbx_ns_ready(const struct sbx_ns_spec *s, struct sbx_ns_child *c, struct as_err *err)
{
    for (;;) {
        char msg[MSG_MAX];
        int fd = -1;
        ssize_t n = recv_msg(c->ctl, msg, sizeof msg, &fd);
        if (n <= 0) {
            as_err_set(err, "sandbox-init exited during setup");
            goto fail;
        }
        if (strcmp(msg, "listen") == 0 && fd >= 0) {
            if (c->listen_fd >= 0)
                close(c->listen_fd);
            c->listen_fd = fd;
            continue;
        }
        if (strcmp(msg, "face") == 0 && fd >= 0) {
            if (c->face_fd >= 0)
                close(c->face_fd);
            c->face_fd = fd;
            continue;
        }
        if (fd >= 0)
            close(fd);
        if (strncmp(msg, "ready ", 6) == 0) {
            snprintf(c->layers, sizeof c->layers, "%.200s", msg + 6);
            break;
        }
        if (strncmp(msg, "error ", 6) == 0) {
            as_err_set(err, "%s", msg + 6);
            goto fail;
        }
        as_err_set(err, "sandbox-init sent an unexpected message");
        goto fail;
    }
    if (s->new_net && s->listen_port > 0 && c->listen_fd < 0) {
        as_err_set(err, "the sandbox did not hand over its proxy listener");
        goto fail;
    }
    if (s->new_net && s->face_port > 0 && c->face_fd < 0) {
        as_err_set(err, "the sandbox did not hand over the gateway's listener");
        goto fail;
    }
    return 0;
fail:
    sbx_ns_release(c);
    return -1;
}

int sbx_ns_go(struct sbx_ns_child *c, struct as_err *err)
{
    if (send_msg(c->ctl, "run", -1) < 0)
        return as_err_errno(err, "starting the harness");
    char msg[MSG_MAX];
    ssize_t n = recv_msg(c->ctl, msg, sizeof msg, NULL);
    if (n <= 0)
        return as_err_set(err, "sandbox-init exited before starting the harness");
    if (strncmp(msg, "started ", 8) == 0) {
        c->harness = (pid_t)atoi(msg + 8);
        return 0;
    }
    if (strncmp(msg, "exec-failed ", 12) == 0)
        return as_err_set(err, "%s", msg + 12);
    return as_err_set(err, "sandbox-init: %s", msg);
}

void sbx_ns_signal(struct sbx_ns_child *c, int sig)
{
    if (c->pid > 0)
        kill(c->pid, sig);
}

/* Parses "exit <code> <sig>" messages waiting on ctl; 1 when one was seen,
 * or the socket is at EOF. */
static int read_end(struct sbx_ns_child *c)
{
    char msg[MSG_MAX];
    for (;;) {
        ssize_t n = recv(c->ctl, msg, sizeof msg - 1, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            c->ended = 1; /* init is gone without a word: reaping tells */
            return 1;
        }
        if (n < 0)
            return c->ended;
        msg[n] = '\0';
        int a, b;
        if (sscanf(msg, "exit %d %d", &a, &b) == 2) {
            c->ended = 1;
            c->end_code = a;
            c->end_sig = b;
        }
    }
}

int sbx_ns_poll_end(struct sbx_ns_child *c)
{
    if (c->ctl < 0)
        return 1;
    return read_end(c);
}

int sbx_ns_reap(struct sbx_ns_child *c, int *code, int *sig)
{
    *code = *sig = -1;
    if (c->ended && (c->end_code >= 0 || c->end_sig >= 0)) {
        /* init's last word carries the harness status exactly; its own
         * exit (the namespaces' teardown) is waited for by release. */
        *code = c->end_code;
        *sig = c->end_sig;
        return 0;
    }
    if (c->pid <= 0)
        return -1;
    int st;
    pid_t r;
    do
        r = waitpid(c->pid, &st, 0);
    while (r < 0 && errno == EINTR);
    c->pid = -1;
    /* init's last word carries the harness status exactly (an exit 130 and
     * a SIGINT are different things). */
    char msg[MSG_MAX];
    for (;;) {
        ssize_t n = recv(c->ctl, msg, sizeof msg - 1, MSG_DONTWAIT);
        if (n <= 0)
            break;
        msg[n] = '\0';
        int a, b;
        if (sscanf(msg, "exit %d %d", &a, &b) == 2) {
            *code = a;
            *sig = b;
        }
    }
    if (r > 0 && WIFSIGNALED(st) && *code < 0 && *sig < 0)
        return 0; /* init itself was killed */
    if (r > 0 && WIFEXITED(st) && *code < 0 && *sig < 0)
        *code = WEXITSTATUS(st);
    return 0;
}

void sbx_ns_release(struct sbx_ns_child *c)
{
    if (c->pid > 0) {
        /* An init that reported the harness's end is exiting on its own; a
         * SIGKILL then changes nothing but is harmless, and makes sure. Its
         * report came after it had killed and reaped every other process
         * of the sandbox, so only the kernel's teardown of its namespaces
         * is left: reaped now if already done, else by whoever inherits it
         * when agentstack exits. An init that never reported is waited for
         * — until then the kernel is still killing the sandbox. */
        kill(c->pid, SIGKILL);
        int reported = c->ended && (c->end_code >= 0 || c->end_sig >= 0);
        while (waitpid(c->pid, NULL, reported ? WNOHANG : 0) < 0 && errno == EINTR)
            ;
        c->pid = -1;
    }
    if (c->pidfd >= 0)
        close(c->pidfd);
    if (c->ctl >= 0)
        close(c->ctl);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    if (c->face_fd >= 0)
        close(c->face_fd);
    c->pidfd = c->ctl = c->listen_fd = c->face_fd = -1;
}

int sbx_ns_probe(struct as_err *err)
{
    fflush(NULL);
    pid_t pid = raw_clone(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID);
    if (pid < 0) {
        as_err_set(err, "user namespaces are unavailable here: %s", strerror(errno));
        unavailable_hint(err);
        return -1;
    }
    if (pid == 0)
        _exit(0);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return 0;
}
