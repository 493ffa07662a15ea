/*
 * view — what a confined process sees of the host: the read-only system
 * directories and a synthesized /etc, the workspace and its write scope,
 * the secrets in it covered by empty files, and the read-only install
 * directory of the program it runs.
 *
 * Why one file: a run's harness (plan.c), the MCP servers that run routes
 * and the servers of a gateway under [policy.isolation] (jail.c) must see
 * the same workspace the same way; building the mount list in one place is
 * what makes "the same view" true rather than parallel code that drifts.
 *
 * Guarantees:
 *  - Nothing of the host is added except what these functions name: /usr
 *    and the top-level library/binary directories read-only, a handful of
 *    /etc entries read-only (never passwd, shadow or the host's resolver),
 *    a minimal /dev, and fresh /proc, /tmp, /dev/shm.
 *  - A workspace that is /, holds $HOME or holds $AGENTSTACK_HOME is refused.
 *  - The workspace is read-only unless the caller says its write scope
 *    covers it; a writable one keeps .git/config and .git/hooks read-only
 *    (they would run code on the host later). Every `.env*` entry of the
 *    workspace, at any depth, and the local overlay in the root, the
 *    manifest dir and .agentstack/ are shadowed; a workspace whose walk
 *    exceeds its bounds (plan_shadow.c) is refused.
 *  - A program outside the system directories gets its install prefix bound
 *    read-only, but never a directory holding $HOME or $AGENTSTACK_HOME.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "sandbox/plan_int.h"

void sbx_i_mount(struct sbx_view *v, enum sbx_mount_kind k, const char *src, const char *dst,
                 const char *data, int optional)
{
    struct sbx_mount m = {
        k, src ? xstrdup(src) : NULL, xstrdup(dst), data ? xstrdup(data) : NULL, optional, 0};
    vec_push(v->mounts, m);
}

int sbx_i_has_mount(const struct sbx_view *v, const char *dst)
{
    for (size_t i = 0; i < v->mounts->n; i++)
        if (strcmp(v->mounts->v[i].dst, dst) == 0)
            return 1;
    return 0;
}

void sbx_i_mounts_free(sbx_mounts *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->v[i].src);
        free((char *)m->v[i].dst);
        free((char *)m->v[i].data);
    }
    vec_free(m);
}

int sbx_i_path_within(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(dir, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int sbx_i_check_workspace(const char *ws, const char *home_canon, const char *ah_canon,
                          struct as_err *err)
{
    if (strcmp(ws, "/") == 0)
        return as_err_set(err, "refusing to mount / as the sandbox workspace");
    if (home_canon && sbx_i_path_within(ws, home_canon)) {
        as_err_set(err,
                   "refusing to mount %s as the sandbox workspace: it holds your home "
                   "directory",
                   ws);
        as_err_hint(err, "run from inside a project directory (one with .agentstack/)");
        return -1;
    }
    if (ah_canon && sbx_i_path_within(ws, ah_canon)) {
        as_err_set(err,
                   "refusing to mount %s as the sandbox workspace: it holds the "
                   "agentstack home %s",
                   ws, ah_canon);
        return -1;
    }
    return 0;
}

/* The view's path of a host path inside the workspace. */
static void inside_path(const struct sbx_view *v, const char *real, strbuf *out)
{
    sb_addf(out, "%s%s", v->inside, real + strlen(v->workspace));
}

/* Shadows the local overlay found directly in dir: the confined process
 * never reads the machine-local settings. */
static void shadow_overlay(struct sbx_view *v, const char *dir)
{
    strbuf full = SB_INIT;
    sb_addf(&full, "%s/" BUNDLE_OVERLAY_NAME, dir);
    char *real = sbx_i_canon(full.buf);
    struct stat st;
    /* A symlink is shadowed at its target, when that is inside the
     * workspace (outside it, the target is not mounted at all). */
    if (real && sbx_i_path_within(v->workspace, real) && stat(real, &st) == 0 &&
        (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
        strbuf in = SB_INIT;
        inside_path(v, real, &in);
        if (!sbx_i_has_mount(v, in.buf))
            sbx_i_mount(v, S_ISREG(st.st_mode) ? SBX_MNT_EMPTY_FILE : SBX_MNT_EMPTY_DIR, NULL,
                        in.buf, NULL, 0);
        sb_release(&in);
    }
    free(real);
    sb_release(&full);
}

/* Shadows every `.env*` entry of the workspace, at any depth (the walk of
 * plan_shadow.c fails closed past its bounds, and then so does the view). */
static int shadow_env_files(struct sbx_view *v, struct as_err *err)
{
    strvec files = STRVEC_INIT, dirs = STRVEC_INIT;
    if (sbx_i_find_env_files(v->workspace, &files, &dirs, err) < 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        const strvec *list = k ? &dirs : &files;
        for (size_t i = 0; i < list->n; i++) {
            strbuf in = SB_INIT;
            sb_addf(&in, "%s/%s", v->inside, list->v[i]);
            if (!sbx_i_has_mount(v, in.buf))
                sbx_i_mount(v, k ? SBX_MNT_EMPTY_DIR : SBX_MNT_EMPTY_FILE, NULL, in.buf, NULL, 0);
            sb_release(&in);
        }
    }
    strvec_clear(&files);
    strvec_clear(&dirs);
    return 0;
}

int sbx_i_workspace_view(struct sbx_view *v, int writable, const char *manifest_dir,
                         struct as_err *err)
{
    sbx_i_mount(v, writable ? SBX_MNT_RW_BIND : SBX_MNT_RO_BIND, v->workspace, v->inside, NULL, 0);
    strbuf sb = SB_INIT;
    if (writable) {
        /* Hooks and config in .git run on the host at the next git command. */
        static const char *const git_ro[] = {".git/config", ".git/hooks"};
        for (size_t i = 0; i < 2; i++) {
            sb_reset(&sb);
            sb_addf(&sb, "%s/%s", v->workspace, git_ro[i]);
            struct stat st;
            if (lstat(sb.buf, &st) == 0 && !S_ISLNK(st.st_mode)) {
                strbuf dst = SB_INIT;
                sb_addf(&dst, "%s/%s", v->inside, git_ro[i]);
                sbx_i_mount(v, SBX_MNT_RO_BIND, sb.buf, dst.buf, NULL, 0);
                sb_release(&dst);
            }
        }
    }
    if (shadow_env_files(v, err) < 0) {
        sb_release(&sb);
        return -1;
    }
    /* The overlay: in the root, the manifest dir (.agentstack/ in the nested
     * layout, or whatever a legacy root names) and .agentstack/, which is
     * covered even with no manifest. */
    shadow_overlay(v, v->workspace);
    sb_reset(&sb);
    sb_addf(&sb, "%s/" BUNDLE_DIR_NAME, v->workspace);
    char *md = manifest_dir ? sbx_i_canon(manifest_dir) : NULL;
    if (md && sbx_i_path_within(v->workspace, md) && strcmp(md, v->workspace) != 0 &&
        strcmp(md, sb.buf) != 0)
        shadow_overlay(v, md);
    free(md);
    struct stat dst;
    if (lstat(sb.buf, &dst) == 0 && S_ISDIR(dst.st_mode))
        shadow_overlay(v, sb.buf);
    sb_release(&sb);
    return 0;
}

void sbx_i_system_view(struct sbx_view *v, const char *rootfs)
{
    char src[PATH_MAX];
    const char *base = strcmp(rootfs, "/") == 0 ? "" : rootfs;
    sbx_i_mount(v, SBX_MNT_PROC, NULL, "/proc", NULL, 0);
    snprintf(src, sizeof src, "%s/usr", base);
    sbx_i_mount(v, SBX_MNT_RO_BIND, src, "/usr", NULL, 0);
    static const char *const top[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        char dst[32], link[PATH_MAX];
        snprintf(src, sizeof src, "%s/%s", base, top[i]);
        snprintf(dst, sizeof dst, "/%s", top[i]);
        struct stat st;
        if (lstat(src, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlink(src, link, sizeof link - 1);
            if (n > 0) {
                link[n] = '\0';
                sbx_i_mount(v, SBX_MNT_SYMLINK, link, dst, NULL, 0);
            }
        } else if (S_ISDIR(st.st_mode)) {
            sbx_i_mount(v, SBX_MNT_RO_BIND, src, dst, NULL, 0);
        }
    }
    /* A synthesized /etc: never the host's passwd, shadow or secrets. */
    strbuf t = SB_INIT;
    sb_addf(&t,
            "root:x:0:0:root:/root:/bin/sh\nagent:x:%u:%u:agent:" SBX_INSIDE_HOME
            ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            (unsigned)v->uid, (unsigned)v->gid);
    sbx_i_mount(v, SBX_MNT_FILE, NULL, "/etc/passwd", t.buf, 0);
    sb_reset(&t);
    sb_addf(&t, "root:x:0:\nagent:x:%u:\nnogroup:x:65534:\n", (unsigned)v->gid);
    sbx_i_mount(v, SBX_MNT_FILE, NULL, "/etc/group", t.buf, 0);
    sb_release(&t);
    sbx_i_mount(v, SBX_MNT_FILE, NULL, "/etc/hosts",
                "127.0.0.1 localhost " SBX_LOCKDOWN_PROXY_HOST "\n::1 localhost\n", 0);
    /* The sandbox never resolves names; the proxy does. DNS fails fast. */
    sbx_i_mount(v, SBX_MNT_FILE, NULL, "/etc/resolv.conf", "nameserver 127.0.0.1\n", 0);
    sbx_i_mount(v, SBX_MNT_FILE, NULL, "/etc/nsswitch.conf",
                "passwd: files\ngroup: files\nhosts: files dns\n", 0);
    sbx_i_mount(v, SBX_MNT_FILE, NULL, "/etc/hostname", "agentstack\n", 0);
    static const char *const etc[] = {
        "ssl",        "ca-certificates", "alternatives", "ld.so.cache",
        "ld.so.conf", "ld.so.conf.d",    "terminfo",     "protocols",
        "services",   "mime.types",      "pki",          "crypto-policies"};
    for (size_t i = 0; i < sizeof etc / sizeof etc[0]; i++) {
        char dst[64];
        snprintf(src, sizeof src, "%s/etc/%s", base, etc[i]);
        snprintf(dst, sizeof dst, "/etc/%s", etc[i]);
        if (access(src, F_OK) == 0)
            sbx_i_mount(v, SBX_MNT_RO_BIND, src, dst, NULL, 1);
    }
    char link[PATH_MAX];
    snprintf(src, sizeof src, "%s/etc/localtime", base);
    ssize_t n = readlink(src, link, sizeof link - 1);
    if (n > 0) {
        link[n] = '\0';
        sbx_i_mount(v, SBX_MNT_SYMLINK, link, "/etc/localtime", NULL, 0);
    }
    /* A minimal /dev. */
    sbx_i_mount(v, SBX_MNT_TMPFS, NULL, "/dev", "mode=0755", 0);
    static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        char dst[32];
        snprintf(dst, sizeof dst, "/dev/%s", devs[i]);
        sbx_i_mount(v, SBX_MNT_DEV, dst, dst, NULL, 1);
    }
    sbx_i_mount(v, SBX_MNT_SYMLINK, "/proc/self/fd", "/dev/fd", NULL, 0);
    sbx_i_mount(v, SBX_MNT_SYMLINK, "/proc/self/fd/0", "/dev/stdin", NULL, 0);
    sbx_i_mount(v, SBX_MNT_SYMLINK, "/proc/self/fd/1", "/dev/stdout", NULL, 0);
    sbx_i_mount(v, SBX_MNT_SYMLINK, "/proc/self/fd/2", "/dev/stderr", NULL, 0);
    sbx_i_mount(v, SBX_MNT_DEVPTS, NULL, "/dev/pts", NULL, 1);
    sbx_i_mount(v, SBX_MNT_SYMLINK, "pts/ptmx", "/dev/ptmx", NULL, 0);
    sbx_i_mount(v, SBX_MNT_TMPFS, NULL, "/dev/shm", "mode=1777", 0);
    sbx_i_mount(v, SBX_MNT_TMPFS, NULL, "/tmp", "mode=1777", 0);
    sbx_i_mount(v, SBX_MNT_SYMLINK, "/tmp", "/var/tmp", NULL, 0);
}

/* The program's view inside (docs/sandbox.md): a program outside the system
 * directories gets its install prefix bound read-only, but never a
 * directory that holds the user's home or the machine home. */
int sbx_i_program_view(struct sbx_view *v, const char *bin, const char *home_canon,
                       const char *ah_canon, char **real_out, strbuf *exec_path, strbuf *extra_path,
                       struct as_err *err)
{
    char *real = sbx_i_canon(bin);
    if (!real)
        return as_err_errno(err, "%s", bin);
    if (real_out)
        *real_out = xstrdup(real);
    static const char *const sys[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"};
    /* The name as found first: argv[0] matters to multi-call binaries. */
    for (int pass = 0; pass < 2; pass++) {
        const char *cand = pass == 0 ? bin : real;
        for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++) {
            if (sbx_i_path_within(sys[i], cand)) {
                sb_adds(exec_path, cand);
                free(real);
                return 0;
            }
        }
    }
    sb_adds(exec_path, real);
    char d1[PATH_MAX], d2[PATH_MAX];
    snprintf(d1, sizeof d1, "%s", real);
    char *s = strrchr(d1, '/');
    *s = '\0';
    if (!d1[0])
        snprintf(d1, sizeof d1, "/");
    snprintf(d2, sizeof d2, "%s", d1);
    s = strrchr(d2, '/');
    if (s)
        *s = '\0';
    if (!d2[0])
        snprintf(d2, sizeof d2, "/");
    const char *cands[2] = {d2, d1};
    const char *chosen = NULL;
    for (int i = 0; i < 2 && !chosen; i++) {
        const char *c = cands[i];
        int depth = 0;
        for (const char *q = c; *q; q++)
            depth += *q == '/';
        if (depth < 2 || (home_canon && sbx_i_path_within(c, home_canon)) ||
            (ah_canon && sbx_i_path_within(c, ah_canon)) ||
            (ah_canon && sbx_i_path_within(ah_canon, c)))
            continue;
        chosen = c;
    }
    sbx_i_mount(v, SBX_MNT_RO_BIND, chosen ? chosen : real, chosen ? chosen : real, NULL, 0);
    sb_adds(extra_path, d1);
    free(real);
    return 0;
}
