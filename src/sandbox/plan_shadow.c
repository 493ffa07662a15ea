/*
 * plan_shadow — finds every `.env*` entry in the workspace, at any depth, so
 * the plan can cover each with an empty read-only file (or directory) inside
 * the sandbox (docs/sandbox.md "Shadows").
 *
 * Why a walk of its own: a secret file is as readable in services/api/.env as
 * in the root, and "hidden" must mean hidden. The walk visits everything —
 * .git, node_modules and vendor trees included, since any of them can hold a
 * `.env` — and gives up only past a bound, where the plan refuses instead of
 * starting a run that might expose a file it never saw.
 *
 * Guarantees:
 *  - Never follows a symlink while walking (openat + O_NOFOLLOW per
 *    directory); a `.env*` symlink is reported at its target when that target
 *    is inside the workspace (outside it, nothing is mounted at all).
 *  - A `.env*` directory is reported whole and not descended.
 *  - Bounded: at most SBX_SHADOW_MAX_ENTRIES entries seen, SBX_SHADOW_MAX_DEPTH
 *    levels and SBX_SHADOW_MAX_HITS results; past any of them, -1 with a reason
 *    and nothing reported (fail closed).
 *  - A directory that cannot be read is a refusal, unless it belongs to
 *    another user and this process is not root — then the sandbox, which runs
 *    as the same uid without capabilities, cannot read it either.
 *  - Results are workspace-relative ("services/api/.env") and sorted; a
 *    symlink's target may repeat an entry (the plan mounts each path once).
 */
#include "sandbox/plan_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"

struct walk {
    const char *ws; /* canonical workspace */
    size_t ws_len;
    size_t entries;
    strvec *files, *dirs;
    struct as_err *err;
};

static int is_env_name(const char *name)
{
    return strncmp(name, ".env", 4) == 0;
}

static int path_within(const char *dir, size_t n, const char *path)
{
    return strncmp(dir, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int hit(struct walk *w, strvec *into, const char *rel)
{
    if (w->files->n + w->dirs->n >= SBX_SHADOW_MAX_HITS)
        return as_err_set(w->err,
                          "the workspace holds more than %d .env files or directories; "
                          "refusing to start a sandbox that could not hide them all",
                          SBX_SHADOW_MAX_HITS);
    strvec_push(into, rel);
    return 0;
}

/* A `.env*` symlink: shadowed at its target when that lies in the workspace
 * (as a file or a directory); a target elsewhere is not mounted. */
static int env_symlink(struct walk *w, const char *rel)
{
    char *full = xasprintf("%s/%s", w->ws, rel);
    char *real = sbx_i_canon(full);
    free(full);
    struct stat st;
    int rc = 0;
    if (real && path_within(w->ws, w->ws_len, real) && real[w->ws_len] == '/' &&
        stat(real, &st) == 0) {
        if (S_ISREG(st.st_mode))
            rc = hit(w, w->files, real + w->ws_len + 1);
        else if (S_ISDIR(st.st_mode))
            rc = hit(w, w->dirs, real + w->ws_len + 1);
    }
    free(real);
    return rc;
}

static int walk_dir(struct walk *w, int fd, strbuf *rel, int depth)
{
    if (depth > SBX_SHADOW_MAX_DEPTH) {
        close(fd);
        return as_err_set(w->err,
                          "%s/%s is nested deeper than %d levels; refusing to start a sandbox "
                          "that could not check it for .env files",
                          w->ws, rel->buf, SBX_SHADOW_MAX_DEPTH);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return as_err_errno(w->err, "reading %s/%s to hide its .env files", w->ws, rel->buf);
    }
    int rc = 0;
    size_t base = rel->len;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                rc = as_err_errno(w->err, "reading %s/%s to hide its .env files", w->ws, rel->buf);
            break;
        }
        const char *name = e->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
            continue;
        if (++w->entries > SBX_SHADOW_MAX_ENTRIES) {
            rc = as_err_set(w->err,
                            "the workspace %s holds more than %d entries; refusing to start a "
                            "sandbox that could not check them all for .env files",
                            w->ws, SBX_SHADOW_MAX_ENTRIES);
            as_err_hint(w->err, "run from a smaller project directory");
            break;
        }
        unsigned char type = e->d_type;
        struct stat st;
        if (type == DT_UNKNOWN) {
            if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                    continue; /* gone meanwhile */
                rc = as_err_errno(w->err, "%s/%s%s%s", w->ws, rel->buf, base ? "/" : "", name);
                break;
            }
            type = S_ISDIR(st.st_mode)   ? DT_DIR
                   : S_ISLNK(st.st_mode) ? DT_LNK
                   : S_ISREG(st.st_mode) ? DT_REG
                                         : DT_UNKNOWN;
        }
        sb_setlen(rel, base);
        if (base)
            sb_addc(rel, '/');
        sb_adds(rel, name);
        if (is_env_name(name)) {
            if (type == DT_REG)
                rc = hit(w, w->files, rel->buf);
            else if (type == DT_DIR)
                rc = hit(w, w->dirs, rel->buf);
            else if (type == DT_LNK)
                rc = env_symlink(w, rel->buf);
            if (rc < 0)
                break;
            continue; /* a .env directory is shadowed whole */
        }
        if (type != DT_DIR)
            continue;
        int cfd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0) {
            if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
                continue; /* replaced meanwhile: not a directory to descend */
            int e0 = errno;
            if ((e0 == EACCES || e0 == EPERM) && geteuid() != 0 &&
                fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != geteuid())
                continue; /* closed to this uid, inside the sandbox as well */
            errno = e0;
            rc = as_err_errno(w->err, "cannot check %s/%s for .env files", w->ws, rel->buf);
            as_err_hint(w->err, "make it readable, or run from a directory that does not "
                                "contain it");
            break;
        }
        rc = walk_dir(w, cfd, rel, depth + 1);
        if (rc < 0)
            break;
    }
    sb_setlen(rel, base);
    closedir(d);
    return rc;
}

int sbx_i_find_env_files(const char *workspace, strvec *files, strvec *dirs, struct as_err *err)
{
    struct walk w = {workspace, strlen(workspace), 0, files, dirs, err};
    int fd = open(workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return as_err_errno(err, "opening the workspace %s", workspace);
    strbuf rel = SB_INIT;
    int rc = walk_dir(&w, fd, &rel, 1);
    sb_release(&rel);
    if (rc < 0) {
        strvec_clear(files);
        strvec_clear(dirs);
        return -1;
    }
    strvec_sort(files);
    strvec_sort(dirs);
    return 0;
}
