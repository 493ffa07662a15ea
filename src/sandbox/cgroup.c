/*
 * The per-execution cgroup (see cgroup.h).
 *
 * Why: the executor's rlimits bound one process; this bounds the tree and
 * what the kernel charges to it (page cache, tmpfs), where the machine
 * lets us.
 * Guarantees: cgroup.h. Detection writes nothing; once a cgroup is usable,
 * every limit is written or the whole cgroup is removed and refused.
 */
#include "sandbox/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"

const char *sbx_cgroup_mechanism(const struct sbx_cgroup *cg)
{
    if (!cg || cg->kind == SBX_CGROUP_NONE)
        return "rlimit";
    return cg->kind == SBX_CGROUP_V2 ? "cgroup-v2" : "cgroup-v1";
}

void sbx_cgroup_clear(struct sbx_cgroup *cg)
{
    for (int i = 0; i < SBX_CGROUP_DIRS; i++) {
        free(cg->dir[i]);
        cg->dir[i] = NULL;
    }
    cg->kind = SBX_CGROUP_NONE;
}

/* Reads a small control file into buf (NUL-terminated). -1 with errno. */
static int read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fd, buf + got, n - 1 - got)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    close(fd);
    return 0;
}

/* dir/file into p (4096 bytes): -1 when it does not fit, so a path is
 * never used cut short (a write would reach another file). */
static int cg_path(char p[4096], const char *dir, const char *file)
{
    int n = snprintf(p, 4096, "%s/%s", dir, file);
    return n > 0 && n < 4096 ? 0 : -1;
}

static int exists_in(const char *dir, const char *file)
{
    char p[4096];
    return cg_path(p, dir, file) == 0 && access(p, F_OK) == 0;
}

/* 1 when the space-separated list in dir/file names word. */
static int lists(const char *dir, const char *file, const char *word)
{
    char p[4096], buf[1024];
    if (cg_path(p, dir, file) < 0 || read_small(p, buf, sizeof buf) < 0)
        return 0;
    size_t wl = strlen(word);
    for (char *s = strtok(buf, " \t\n"); s; s = strtok(NULL, " \t\n"))
        if (strlen(s) == wl && memcmp(s, word, wl) == 0)
            return 1;
    return 0;
}

/* The path of our own cgroup in the hierarchy whose /proc/self/cgroup line
 * has controller ctl (v1) or is "0::" (ctl NULL, v2). NULL when absent. */
static char *own_path(const char *self_text, const char *ctl)
{
    const char *line = self_text;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2 && c2[1] == '/') {
            size_t cl = (size_t)(c2 - c1 - 1);
            const char *path = c2 + 1;
            size_t pl = len - (size_t)(path - line);
            int match = 0;
            if (!ctl) {
                match = cl == 0 && c1 - line == 1 && line[0] == '0';
            } else {
                /* "4:memory:/x" or "1:cpu,cpuacct:/" */
                size_t wl = strlen(ctl);
                for (const char *w = c1 + 1; w < c2;) {
                    const char *e = memchr(w, ',', (size_t)(c2 - w));
                    if (!e)
                        e = c2;
                    if ((size_t)(e - w) == wl && memcmp(w, ctl, wl) == 0)
                        match = 1;
                    w = e + 1;
                }
            }
            if (match) {
                /* "/" alone is the hierarchy's root: no suffix. */
                return pl == 1 ? xstrdup("") : xstrndup(path, pl);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return NULL;
}

static void say(char *why, size_t n, const char *text)
{
    if (why && n)
        snprintf(why, n, "%s", text);
}

static enum sbx_cgroup_kind detect_v2(const char *root, const char *self_text,
                                      struct sbx_cgroup *out, char *why, size_t whyn)
{
    char mnt[4096];
    snprintf(mnt, sizeof mnt, "%s", root);
    if (!exists_in(mnt, "cgroup.controllers")) {
        snprintf(mnt, sizeof mnt, "%s/unified", root);
        if (!exists_in(mnt, "cgroup.controllers"))
            return SBX_CGROUP_NONE;
    }
    char *own = own_path(self_text, NULL);
    if (!own)
        return SBX_CGROUP_NONE;
    char *dir = xasprintf("%s%s", mnt, own);
    free(own);
    if (lists(dir, "cgroup.controllers", "memory") && lists(dir, "cgroup.controllers", "pids") &&
        lists(dir, "cgroup.subtree_control", "memory") &&
        lists(dir, "cgroup.subtree_control", "pids") && access(dir, W_OK) == 0) {
        out->kind = SBX_CGROUP_V2;
        out->dir[0] = dir;
        return SBX_CGROUP_V2;
    }
    say(why, whyn, "cgroup v2 does not delegate memory and pids to our cgroup");
    free(dir);
    return SBX_CGROUP_NONE;
}

/* Our own v1 cgroup of controller ctl, when it is a cgroup (cgroup.procs:
 * the hierarchy's root has no limit files of its own, its children do) and
 * writable. */
static char *v1_dir(const char *root, const char *self_text, const char *ctl)
{
    char *own = own_path(self_text, ctl);
    if (!own)
        return NULL;
    char *dir = xasprintf("%s/%s%s", root, ctl, own);
    free(own);
    if (!exists_in(dir, "cgroup.procs") || access(dir, W_OK) != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

enum sbx_cgroup_kind sbx_cgroup_detect(const char *root, const char *self_text,
                                       struct sbx_cgroup *out, char *why, size_t whyn)
{
    memset(out, 0, sizeof *out);
    say(why, whyn, "no cgroup hierarchy is mounted here");
    if (!root || !self_text)
        return SBX_CGROUP_NONE;
    if (detect_v2(root, self_text, out, why, whyn) == SBX_CGROUP_V2)
        return SBX_CGROUP_V2;
    char *mem = v1_dir(root, self_text, "memory");
    char *pids = v1_dir(root, self_text, "pids");
    if (!mem || !pids) {
        if (exists_in(root, "memory") || exists_in(root, "pids"))
            say(why, whyn, "cgroup v1's memory and pids hierarchies are not both writable here");
        free(mem);
        free(pids);
        return SBX_CGROUP_NONE;
    }
    out->kind = SBX_CGROUP_V1;
    out->dir[0] = mem;
    out->dir[1] = pids;
    out->dir[2] = v1_dir(root, self_text, "cpu");
    say(why, whyn, "");
    return SBX_CGROUP_V1;
}

/* Writes text to dir/file (the file must exist: a control file). */
static int put(const char *dir, const char *file, const char *text, struct as_err *err)
{
    char p[4096];
    if (cg_path(p, dir, file) < 0)
        return as_err_set(err, "cgroup path too long: %s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return as_err_errno(err, "cannot open %s", p);
    size_t len = strlen(text);
    ssize_t w;
    do
        w = write(fd, text, len);
    while (w < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (w != (ssize_t)len) {
        errno = w < 0 ? e : EIO;
        return as_err_errno(err, "cannot write %s to %s", text, p);
    }
    return 0;
}

static int put_num(const char *dir, const char *file, unsigned long long v, struct as_err *err)
{
    char t[32];
    snprintf(t, sizeof t, "%llu", v);
    return put(dir, file, t, err);
}

static int limit_v2(const char *d, const struct sbx_cgroup_limits *l, struct as_err *err)
{
    if (put_num(d, "memory.max", l->memory_bytes, err) < 0)
        return -1;
    if (exists_in(d, "memory.swap.max") && put(d, "memory.swap.max", "0", err) < 0)
        return -1;
    if (put_num(d, "pids.max", l->pids, err) < 0)
        return -1;
    if (l->cpus && exists_in(d, "cpu.max")) {
        char t[64];
        snprintf(t, sizeof t, "%u 100000", l->cpus * 100000u);
        if (put(d, "cpu.max", t, err) < 0)
            return -1;
    }
    return 0;
}

static int limit_v1(char *const *d, const struct sbx_cgroup_limits *l, struct as_err *err)
{
    /* A fresh cgroup is unlimited: memory first, then memory + swap (which
     * may never be below it). Without swap accounting there is no memsw. */
    if (put_num(d[0], "memory.limit_in_bytes", l->memory_bytes, err) < 0)
        return -1;
    if (exists_in(d[0], "memory.memsw.limit_in_bytes") &&
        put_num(d[0], "memory.memsw.limit_in_bytes", l->memory_bytes, err) < 0)
        return -1;
    if (put_num(d[1], "pids.max", l->pids, err) < 0)
        return -1;
    if (l->cpus && d[2]) {
        if (put(d[2], "cpu.cfs_period_us", "100000", err) < 0 ||
            put_num(d[2], "cpu.cfs_quota_us", (unsigned long long)l->cpus * 100000ull, err) < 0)
            return -1;
    }
    return 0;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* SIGKILLs every pid listed in dir/cgroup.procs; 1 when there were any. */
static int kill_listed(const char *dir)
{
    char p[4096], buf[8192];
    if (cg_path(p, dir, "cgroup.procs") < 0 || read_small(p, buf, sizeof buf) < 0)
        return 0;
    int any = 0;
    for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n")) {
        long pid = strtol(s, NULL, 10);
        if (pid > 0) {
            kill((pid_t)pid, SIGKILL);
            any = 1;
        }
    }
    return any;
}

/* Empties and removes one directory we made. A process killed leaves its
 * cgroup only once it has exited, and rmdir answers EBUSY until then, so
 * both are retried for a bounded while (10 s). */
static int remove_dir(enum sbx_cgroup_kind kind, const char *dir, struct as_err *err)
{
    if (kind == SBX_CGROUP_V2 && exists_in(dir, "cgroup.kill")) {
        struct as_err ignored = AS_ERR_INIT;
        (void)put(dir, "cgroup.kill", "1", &ignored);
    }
    for (int i = 0; i < 1000; i++) {
        kill_listed(dir);
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            break;
        pause_ms(10);
    }
    return as_err_errno(err, "cannot remove the cgroup %s", dir);
}

int sbx_cgroup_destroy(struct sbx_cgroup *cg, struct as_err *err)
{
    if (!cg)
        return 0;
    int rc = 0;
    for (int i = 0; i < SBX_CGROUP_DIRS; i++) {
        if (cg->dir[i] && remove_dir(cg->kind, cg->dir[i], err) < 0)
            rc = -1;
    }
    sbx_cgroup_clear(cg);
    free(cg);
    return rc;
}

int sbx_cgroup_create(const char *root, const char *self_text, const char *name,
                      const struct sbx_cgroup_limits *l, struct sbx_cgroup **out,
                      struct as_err *err)
{
    *out = NULL;
    if (!name || !name[0] || strchr(name, '/') || name[0] == '.')
        return as_err_set(err, "a cgroup name must be one plain path element");
    struct sbx_cgroup own;
    if (sbx_cgroup_detect(root, self_text, &own, NULL, 0) == SBX_CGROUP_NONE)
        return 0;
    struct sbx_cgroup *cg = xcalloc(1, sizeof *cg);
    cg->kind = own.kind;
    for (int i = 0; i < SBX_CGROUP_DIRS; i++) {
        if (!own.dir[i])
            continue;
        char *d = xasprintf("%s/%s", own.dir[i], name);
        if (mkdir(d, 0755) < 0) {
            as_err_errno(err, "cannot create the cgroup %s", d);
            free(d);
            goto fail;
        }
        cg->dir[i] = d;
    }
    if ((cg->kind == SBX_CGROUP_V2 ? limit_v2(cg->dir[0], l, err) : limit_v1(cg->dir, l, err)) < 0)
        goto fail;
    sbx_cgroup_clear(&own);
    *out = cg;
    return 0;
fail:
    sbx_cgroup_clear(&own);
    (void)sbx_cgroup_destroy(cg, NULL);
    return -1;
}

int sbx_cgroup_create_here(const char *name, const struct sbx_cgroup_limits *l,
                           struct sbx_cgroup **out, struct as_err *err)
{
    char self[4096];
    if (read_small(SBX_CGROUP_SELF, self, sizeof self) < 0) {
        *out = NULL;
        return 0; /* no /proc/self/cgroup: no cgroup to use */
    }
    return sbx_cgroup_create(SBX_CGROUP_ROOT, self, name, l, out, err);
}

int sbx_cgroup_attach(const struct sbx_cgroup *cg, pid_t pid, struct as_err *err)
{
    for (int i = 0; i < SBX_CGROUP_DIRS; i++)
        if (cg->dir[i] && put_num(cg->dir[i], "cgroup.procs", (unsigned long long)pid, err) < 0)
            return -1;
    return 0;
}

/* The "oom_kill N" count in dir/file (v2 memory.events, v1 memory.oom_control). */
static long long oom_kills(const char *dir, const char *file)
{
    char p[4096], buf[1024];
    if (cg_path(p, dir, file) < 0 || read_small(p, buf, sizeof buf) < 0)
        return 0;
    const char *k = strstr(buf, "oom_kill ");
    return k ? strtoll(k + strlen("oom_kill "), NULL, 10) : 0;
}

int sbx_cgroup_oom_killed(const struct sbx_cgroup *cg)
{
    if (!cg || !cg->dir[0])
        return 0;
    return oom_kills(cg->dir[0],
                     cg->kind == SBX_CGROUP_V2 ? "memory.events" : "memory.oom_control") > 0;
}
