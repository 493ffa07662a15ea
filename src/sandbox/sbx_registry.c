#include "sandbox/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "base/xalloc.h"
#include "sandbox/record.h"

#define REG_MAX_BYTES (4u << 20)

unsigned long long sbx_proc_start(pid_t pid)
{
    if (pid <= 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* comm may hold spaces and parentheses: fields resume after the last ')'. */
    char *s = strrchr(buf, ')');
    if (!s || !s[1])
        return 0;
    s += 2;
    char state = *s;
    if (state == 'Z' || state == 'X' || state == 'x')
        return 0;
    /* s is field 3 (state); the start time is field 22. */
    for (int field = 3; field < 22; field++) {
        s = strchr(s, ' ');
        if (!s)
            return 0;
        s++;
    }
    return strtoull(s, NULL, 10);
}

static char *reg_path(const char *home)
{
    return xasprintf("%s/runs.json", home);
}

/* Reads runs.json ({} when absent or unparsable: it is only a cache of what
 * /proc can confirm) and drops the entries whose process is gone. Returns
 * the count pruned. */
static json_t *load_pruned(const char *home, int *pruned)
{
    *pruned = 0;
    char *path = reg_path(home);
    strbuf b = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    json_t *o = NULL;
    if (fs_read_file(path, REG_MAX_BYTES, 1, &b, &e) == 0)
        o = json_loadb(b.buf, b.len, 0, NULL);
    sb_release(&b);
    free(path);
    if (!json_is_object(o)) {
        json_decref(o);
        return json_object();
    }
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, v)
    {
        json_t *pid = json_object_get(v, "pid"), *st = json_object_get(v, "pid_start");
        unsigned long long now =
            json_is_integer(pid) ? sbx_proc_start((pid_t)json_integer_value(pid)) : 0;
        if (!sbx_run_id_valid(k) || !now || !json_is_integer(st) ||
            (unsigned long long)json_integer_value(st) != now) {
            json_object_del(o, k);
            (*pruned)++;
        }
    }
    return o;
}

/* Writes all of s to fd; 0 or -1 (errno). */
static int write_all(int fd, const char *s, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, s + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    return 0;
}

/* Opens the body runs.json does not name, for rewriting: a regular file of
 * ours with no other name. Anything else found there (a symlink, a FIFO, a
 * second name of another file) is unlinked, never written through, and a
 * new body made. -1 (errno). */
static int open_spare(const char *spare)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(spare, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd >= 0) {
            struct stat st;
            /* root keeps a body its user made (as fs_write_atomic kept the
             * owner of runs.json): the registry stays writable for both. */
            if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                (st.st_uid == geteuid() || geteuid() == 0) &&
                ((st.st_mode & 07777) == 0600 || fchmod(fd, 0600) == 0))
                return fd;
            close(fd);
        } else if (errno != ELOOP && errno != ENXIO) {
            return -1;
        }
        if (unlink(spare) < 0 && errno != ENOENT)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Replaces runs.json whole, atomically for every reader: the new registry
 * is written into a spare body (.runs.json.a or .b, whichever runs.json
 * does not name) and linked to runs.json by a rename, so a reader sees the
 * old registry or the new one, never a torn one, and rename() replaces a
 * symlink planted at runs.json instead of following it.
 *
 * Why two long-lived bodies instead of a temp file per write (issue 8): on
 * a journal-less ext4, every inode deleted in the last seconds is skipped,
 * one by one, by each later inode allocation, so a burst of runs each
 * creating and deleting two registry files slowed down every file any run
 * created. Here no write creates or deletes an inode.
 *
 * Why no fsync (fs_write_atomic's two per write were most of a lockdown
 * start's wall time): the registry only lists processes that are alive,
 * and /proc must confirm every entry before it is listed or signalled, so
 * after a crash it has nothing to say durably — every entry it held is
 * dead, and a body cut short by the crash reads as {}. */
static int store(const char *home, json_t *o, struct as_err *err)
{
    char *path = reg_path(home);
    char *spare_a = xasprintf("%s/.runs.json.a", home);
    char *spare_b = xasprintf("%s/.runs.json.b", home);
    char *swap = xasprintf("%s/.runs.json.swap", home);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
    int rc = -1;
    /* A link left by a crash between link() and rename() below. */
    if (unlink(swap) < 0 && errno != ENOENT)
        goto fail;
    struct stat cur, sa;
    const char *spare = spare_a;
    if (lstat(path, &cur) == 0 && lstat(spare_a, &sa) == 0 && sa.st_ino == cur.st_ino &&
        sa.st_dev == cur.st_dev)
        spare = spare_b;
    int fd = s ? open_spare(spare) : -1;
    if (fd < 0)
        goto fail;
    size_t len = strlen(s);
    if (write_all(fd, s, len) < 0 || ftruncate(fd, (off_t)len) < 0) {
        close(fd);
        goto fail;
    }
    if (close(fd) < 0 || link(spare, swap) < 0)
        goto fail;
    if (rename(swap, path) < 0) {
        unlink(swap);
        goto fail;
    }
    rc = 0;
    goto out;
fail:
    as_err_errno(err, "writing %s", path);
out:
    free(s);
    free(swap);
    free(spare_b);
    free(spare_a);
    free(path);
    return rc;
}

int sbx_reg_add(const struct sbx_plan *p, pid_t pid, int group, struct as_err *err)
{
    unsigned long long st = sbx_proc_start(pid);
    if (!st)
        return as_err_set(err, "run %s: its process %d is already gone", p->run_id, (int)pid);
    json_t *e = json_object();
    json_object_set_new(e, "id", json_string(p->run_id));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(e, "pid_start", json_integer((json_int_t)st));
    json_object_set_new(e, "group", json_boolean(group));
    json_object_set_new(e, "harness", json_string(p->harness_id ? p->harness_id : ""));
    json_object_set_new(e, "display",
                        json_string(p->harness_display ? p->harness_display
                                    : p->harness_id    ? p->harness_id
                                                       : ""));
    json_object_set_new(e, "posture", json_string(p->posture_slug ? p->posture_slug : ""));
    json_object_set_new(e, "command",
                        json_string(p->harness_host_bin ? p->harness_host_bin
                                    : p->argv.n         ? p->argv.v[0]
                                                        : ""));
    json_t *args = json_array();
    /* No prompts: a headless run's prompt element is left out. */
    for (size_t i = 1; i < p->argv.n; i++)
        if ((int)i != p->prompt_arg)
            json_array_append_new(args, json_string(p->argv.v[i]));
    json_object_set_new(e, "args", args);
    const char *cwd = p->host_cwd ? p->host_cwd : p->workspace;
    json_object_set_new(e, "cwd", json_string(cwd ? cwd : ""));
    if (p->toolset)
        json_object_set_new(e, "profile", json_string(p->toolset));
    if (p->inject_scope)
        json_object_set_new(e, "scope", json_string(p->inject_scope));
    json_object_set_new(e, "started_unix", json_integer((json_int_t)time(NULL)));
    json_object_set_new(e, "started_session", json_integer(getsid(0)));

    struct as_lock l;
    if (lock_acquire(&l, p->home, LOCK_WAIT_MS, err) < 0) {
        json_decref(e);
        return -1;
    }
    int pruned;
    json_t *o = load_pruned(p->home, &pruned);
    json_object_set_new(o, p->run_id, e);
    int rc = store(p->home, o, err);
    json_decref(o);
    lock_release(&l);
    return rc;
}

int sbx_reg_add_or_warn(const struct sbx_plan *p, pid_t pid, int group)
{
    struct as_err err = AS_ERR_INIT;
    if (sbx_reg_add(p, pid, group, &err) == 0)
        return 1;
    char b[1024];
    fprintf(stderr, "warning: run %s is not in the live-run registry (%s)\n", p->run_id,
            as_err_str(&err, b, sizeof b));
    return 0;
}

void sbx_reg_remove(const char *home, const char *run_id)
{
    struct as_lock l;
    struct as_err err = AS_ERR_INIT;
    if (lock_acquire(&l, home, LOCK_WAIT_MS, &err) < 0)
        return;
    int pruned;
    json_t *o = load_pruned(home, &pruned);
    int had = json_object_get(o, run_id) != NULL;
    json_object_del(o, run_id);
    if (had || pruned)
        store(home, o, &err);
    json_decref(o);
    lock_release(&l);
}

json_t *sbx_reg_live(const char *home, struct as_err *err)
{
    int pruned;
    json_t *o = load_pruned(home, &pruned);
    if (pruned) {
        /* Writing the pruned registry back is housekeeping: a reader that
         * cannot take the lock still answers from what /proc confirmed. */
        struct as_lock l;
        struct as_err e2 = AS_ERR_INIT;
        if (lock_acquire(&l, home, 0, &e2) == 0) {
            json_decref(o);
            o = load_pruned(home, &pruned);
            if (pruned && store(home, o, err) < 0) {
                lock_release(&l);
                json_decref(o);
                return NULL;
            }
            lock_release(&l);
        }
    }
    return o;
}

static int still_same(pid_t pid, unsigned long long start)
{
    return sbx_proc_start(pid) == start;
}

static int send_sig(json_t *e, int sig)
{
    pid_t pid = (pid_t)json_integer_value(json_object_get(e, "pid"));
    unsigned long long st = (unsigned long long)json_integer_value(json_object_get(e, "pid_start"));
    /* Checked just before signalling: the narrowest window for pid reuse. */
    if (!still_same(pid, st))
        return 1;
    if (json_is_true(json_object_get(e, "group")) && kill(-pid, sig) == 0)
        return 0;
    return kill(pid, sig) == 0 ? 0 : 1;
}

static void record(const char *home, const char *id, const char *sig, json_t *e)
{
    struct sbx_rec r = {0};
    r.dir = xasprintf("%s/runs/%s", home, id);
    r.events = xasprintf("%s/events.jsonl", r.dir);
    json_t *f = json_object();
    json_object_set_new(f, "signal", json_string(sig));
    json_object_set(f, "pid", json_object_get(e, "pid"));
    json_object_set_new(f, "by_pid", json_integer(getpid()));
    struct as_err err = AS_ERR_INIT;
    if (access(r.events, F_OK) == 0 && sbx_rec_append(&r, "run_kill", f, &err) < 0)
        fprintf(stderr, "warning: could not record the kill in runs/%s\n", id);
    else if (access(r.events, F_OK) != 0)
        json_decref(f);
    free(r.events);
    free(r.dir);
}

int sbx_reg_kill(const char *home, const char *run_id, int force, FILE *out, struct as_err *err)
{
    if (!sbx_run_id_valid(run_id))
        return as_err_set(err, "'%s' is not a run id", run_id);
    json_t *o = sbx_reg_live(home, err);
    if (!o)
        return -1;
    json_t *e = json_object_get(o, run_id);
    if (!e) {
        json_decref(o);
        return 1;
    }
    pid_t pid = (pid_t)json_integer_value(json_object_get(e, "pid"));
    unsigned long long st = (unsigned long long)json_integer_value(json_object_get(e, "pid_start"));
    int rc = 0;
    if (!force) {
        record(home, run_id, "SIGTERM", e);
        if (send_sig(e, SIGTERM) != 0)
            goto gone;
        fprintf(out, "sent SIGTERM to run %s (pid %d)\n", run_id, (int)pid);
        /* Polled, not signalled: the run is not our child. 2 s grace. */
        for (int i = 0; i < 40 && still_same(pid, st); i++)
            poll(NULL, 0, 50);
        if (!still_same(pid, st))
            goto gone;
        fprintf(out, "run %s still alive after 2 s\n", run_id);
    }
    record(home, run_id, "SIGKILL", e);
    if (send_sig(e, SIGKILL) == 0)
        fprintf(out, "sent SIGKILL to run %s (pid %d)\n", run_id, (int)pid);
    for (int i = 0; i < 100 && still_same(pid, st); i++)
        poll(NULL, 0, 50);
    if (still_same(pid, st))
        rc = as_err_set(err, "run %s (pid %d) survived SIGKILL", run_id, (int)pid);
gone:
    json_decref(o);
    if (rc == 0)
        fprintf(out, "run %s stopped.\n", run_id);
    return rc;
}
