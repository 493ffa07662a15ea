/* The confinement primitive (see jail.h). */
#include "sandbox/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/vec.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "sandbox/cgroup.h"
#include "sandbox/ns.h"
#include "sandbox/plan_int.h"

struct sbx_jail {
    sbx_mounts mounts;
    strvec writable; /* Landlock write roots */
    strvec argv, env;
    char *cwd;
    enum sbx_jail_net net;
    int workspace_writable, has_workspace, home_tmpfs;
    size_t nsnapshots;
    uid_t inner_uid, outer_uid, run_uid, run_outer_uid;
    gid_t inner_gid, outer_gid, run_gid, run_outer_gid;
    VEC(struct sbx_rlimit) rlimits;
    const struct sbx_cgroup *cgroup; /* the caller's; NULL: none */
};

void sbx_jail_free(struct sbx_jail *j)
{
    if (!j)
        return;
    sbx_i_mounts_free(&j->mounts);
    strvec_clear(&j->writable);
    strvec_clear(&j->argv);
    for (size_t i = 0; i < j->env.n; i++)
        explicit_bzero(j->env.v[i], strlen(j->env.v[i])); /* the secret set */
    strvec_clear(&j->env);
    free(j->cwd);
    vec_free(&j->rlimits);
    free(j);
}

/* Paths a caller's bind may not take: what the view itself builds. */
static int bind_target_ok(const char *dst)
{
    static const char *const taken[] = {"/usr",   "/bin",     "/sbin",         "/lib",  "/lib32",
                                        "/lib64", "/libx32",  "/etc",          "/proc", "/dev",
                                        "/tmp",   "/dev/shm", SBX_INSIDE_HOME, NULL};
    if (!dst || dst[0] != '/' || !dst[1] || strstr(dst, "/..") || strstr(dst, "//"))
        return 0;
    for (size_t i = 0; taken[i]; i++)
        if (sbx_i_path_within(taken[i], dst) || sbx_i_path_within(dst, taken[i]))
            return 0;
    return 1;
}

static int binds_view(struct sbx_jail *j, struct sbx_view *v, const struct sbx_jail_request *rq,
                      struct as_err *err)
{
    for (size_t i = 0; i < rq->nbinds; i++) {
        const struct sbx_jail_bind *b = &rq->binds[i];
        if (!bind_target_ok(b->dst) || (v->workspace && (sbx_i_path_within(v->workspace, b->dst) ||
                                                         sbx_i_path_within(b->dst, v->workspace))))
            return as_err_set(err, "cannot bind %s at %s: the view already uses that path",
                              b->src ? b->src : "(none)", b->dst ? b->dst : "(none)");
        struct stat st;
        if (!b->src || lstat(b->src, &st) != 0)
            return as_err_errno(err, "bind source %s", b->src ? b->src : "(none)");
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
            return as_err_set(err, "bind source %s is neither a file nor a directory", b->src);
        sbx_i_mount(v, b->writable ? SBX_MNT_RW_BIND : SBX_MNT_RO_BIND, b->src, b->dst, NULL, 0);
        if (b->writable)
            strvec_push(&j->writable, b->dst);
    }
    return 0;
}

/* Variables the jail sets itself: the host's would point outside the view
 * (its home, runtime dir, caches) or around the proxy. */
static int host_only_var(const char *e)
{
    static const char *const names[] = {"HOME",      "TMPDIR",     "HTTP_PROXY",  "HTTPS_PROXY",
                                        "NO_PROXY",  "http_proxy", "https_proxy", "no_proxy",
                                        "ALL_PROXY", "all_proxy",  NULL};
    size_t n = strcspn(e, "=");
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], e, n) == 0)
            return 1;
    return n > 4 && memcmp(e, "XDG_", 4) == 0;
}

static int snapshot_view(struct sbx_jail *j, struct sbx_view *v, const struct sbx_jail_snapshot *s,
                         struct as_err *err)
{
    struct stat ss, ds;
    if (!s->dst || s->dst[0] != '/' || !v->workspace || !sbx_i_path_within(v->workspace, s->dst) ||
        strcmp(s->dst, v->workspace) == 0)
        return as_err_set(err, "snapshot target %s is not inside the workspace",
                          s->dst ? s->dst : "(none)");
    if (lstat(s->src, &ss) != 0)
        return as_err_errno(err, "snapshot %s", s->src);
    if (lstat(s->dst, &ds) != 0)
        return as_err_errno(err, "snapshot target %s", s->dst);
    if (S_ISLNK(ds.st_mode) || (S_ISDIR(ss.st_mode) != S_ISDIR(ds.st_mode)) ||
        (!S_ISDIR(ss.st_mode) && !S_ISREG(ss.st_mode)) ||
        (!S_ISDIR(ds.st_mode) && !S_ISREG(ds.st_mode)))
        return as_err_set(err, "snapshot %s cannot cover %s (not the same kind of file)", s->src,
                          s->dst);
    sbx_i_mount(v, SBX_MNT_RO_BIND, s->src, s->dst, NULL, 0);
    j->nsnapshots++;
    return 0;
}

int sbx_jail_build(const struct sbx_jail_request *rq, struct sbx_jail **out, struct as_err *err)
{
    *out = NULL;
    if (!rq->program || rq->program[0] != '/' || !rq->argv || !rq->argv[0])
        return as_err_set(err, "a confined process needs its program's absolute path");
    if (rq->net != SBX_JAIL_NET_NONE && rq->net != SBX_JAIL_NET_PROXY &&
        rq->net != SBX_JAIL_NET_RELAY)
        return as_err_set(err, "a confined process needs a network mode");
    if (rq->net == SBX_JAIL_NET_PROXY && (!rq->proxy_token || strlen(rq->proxy_token) != 64))
        return as_err_set(err, "a confined process behind the proxy needs its token");
    struct sbx_jail *j = xcalloc(1, sizeof *j);
    j->net = rq->net;
    strbuf sb = SB_INIT, exec_path = SB_INIT, extra_path = SB_INIT;
    char *home_canon = NULL, *ah_canon = NULL, *ws = NULL;
    if (home_dir(&sb, err) < 0)
        goto fail;
    ah_canon = sbx_i_canon(sb.buf);
    if (!ah_canon)
        ah_canon = xstrdup(sb.buf);
    const char *h = getenv("HOME");
    home_canon = h && h[0] ? sbx_i_canon(h) : NULL;
    if (rq->workspace) {
        ws = sbx_i_canon(rq->workspace);
        if (!ws) {
            as_err_errno(err, "the workspace %s", rq->workspace);
            goto fail;
        }
        if (sbx_i_check_workspace(ws, home_canon, ah_canon, err) < 0)
            goto fail;
        j->has_workspace = 1;
        j->workspace_writable = rq->writable != 0;
    }
    j->outer_uid = geteuid();
    j->outer_gid = getegid();
    j->inner_uid = j->outer_uid ? j->outer_uid : 1000;
    j->inner_gid = j->outer_gid ? j->outer_gid : 1000;
    if (rq->service_uid && j->outer_uid) {
        /* Unprivileged: the one id it may map, seen inside as the service id. */
        j->inner_uid = SBX_JAIL_SERVICE_UID;
        j->inner_gid = SBX_JAIL_SERVICE_UID;
    } else if (rq->service_uid) {
        /* Root: the service id on both sides once the root is built. */
        j->run_uid = j->run_outer_uid = SBX_JAIL_SERVICE_UID;
        j->run_gid = j->run_outer_gid = SBX_JAIL_SERVICE_UID;
    }
    for (size_t i = 0; i < rq->nrlimits; i++)
        vec_push(&j->rlimits, rq->rlimits[i]);
    j->cgroup = rq->cgroup;

    /* The view, in mount order: the system, the home, the program's
     * prefix (before the workspace, which may lie below it), the
     * workspace, then the snapshots over it. */
    struct sbx_view v = {&j->mounts, ws, ws, j->inner_uid, j->inner_gid};
    sbx_i_system_view(&v, "/");
    if (rq->service_uid) {
        /* Bounded scratch: tmpfs pages are no process's memory; nothing
         * written there can be executed (docs/tools-execute.md). */
        sbx_i_mount(&v, SBX_MNT_SCRATCH, NULL, "/tmp", "mode=1777,size=16m", 0);
        sbx_i_mount(&v, SBX_MNT_SCRATCH, NULL, "/dev/shm", "mode=1777,size=16m", 0);
    }
    if (rq->home) {
        char *hc = sbx_i_canon(rq->home);
        if (!hc || (home_canon && sbx_i_path_within(hc, home_canon)) ||
            (ah_canon && sbx_i_path_within(hc, ah_canon))) {
            as_err_set(err, "the private home %s is not a directory of its own", rq->home);
            free(hc);
            goto fail;
        }
        sbx_i_mount(&v, SBX_MNT_RW_BIND, hc, SBX_INSIDE_HOME, NULL, 0);
        free(hc);
    } else {
        /* A service id cannot own it: searchable (the runtime's prefix may
         * lie below it), never writable. */
        sbx_i_mount(&v, SBX_MNT_TMPFS, NULL, SBX_INSIDE_HOME,
                    rq->service_uid ? "mode=0755,size=1m" : "mode=0700", 0);
        j->home_tmpfs = 1;
    }
    char *prog = sbx_i_canon(rq->program);
    if (!prog) {
        as_err_errno(err, "%s", rq->program);
        goto fail;
    }
    if (ws && sbx_i_path_within(ws, prog))
        sb_adds(&exec_path, prog); /* in the workspace: seen at its own path */
    else if (sbx_i_program_view(&v, rq->program, home_canon, ah_canon, NULL, &exec_path,
                                &extra_path, err) < 0) {
        free(prog);
        goto fail;
    }
    free(prog);
    if (ws && sbx_i_workspace_view(&v, j->workspace_writable, rq->manifest_dir, err) < 0)
        goto fail;
    for (size_t i = 0; i < rq->nsnapshots; i++)
        if (snapshot_view(j, &v, &rq->snapshots[i], err) < 0)
            goto fail;
    if (binds_view(j, &v, rq, err) < 0)
        goto fail;
    strvec_push(&j->writable, "/tmp");
    strvec_push(&j->writable, "/dev/shm");
    strvec_push(&j->writable, SBX_INSIDE_HOME);
    if (ws && j->workspace_writable)
        strvec_push(&j->writable, ws);

    /* The command and its directory. */
    strvec_push(&j->argv, exec_path.buf);
    for (size_t i = 1; rq->argv[i]; i++)
        strvec_push(&j->argv, rq->argv[i]);
    if (rq->cwd) {
        int in_bind = 0;
        for (size_t i = 0; i < rq->nbinds; i++)
            in_bind |= sbx_i_path_within(rq->binds[i].dst, rq->cwd);
        if (rq->cwd[0] != '/' || !((ws && sbx_i_path_within(ws, rq->cwd)) ||
                                   strcmp(rq->cwd, SBX_INSIDE_HOME) == 0 || in_bind)) {
            as_err_set(err, "its working directory %s is outside what a confined process sees",
                       rq->cwd);
            goto fail;
        }
        j->cwd = xstrdup(rq->cwd);
    } else {
        j->cwd = xstrdup(ws ? ws : "/");
    }

    /* The environment: the caller's secret set, the jail's own home,
     * temporary directory and proxy. */
    int have_path = 0;
    for (size_t i = 0; rq->envp && rq->envp[i]; i++) {
        const char *e = rq->envp[i];
        if (host_only_var(e))
            continue;
        if (strncmp(e, "PATH=", 5) == 0) {
            have_path = 1;
            if (extra_path.len)
                strvec_pushf(&j->env, "%s:%s", e, extra_path.buf);
            else
                strvec_push(&j->env, e);
            continue;
        }
        strvec_push(&j->env, e);
    }
    if (!have_path)
        strvec_pushf(&j->env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin%s%s",
                     extra_path.len ? ":" : "", extra_path.buf);
    strvec_push(&j->env, "HOME=" SBX_INSIDE_HOME);
    strvec_push(&j->env, "TMPDIR=/tmp");
    if (rq->net == SBX_JAIL_NET_PROXY) {
        static const char *const vars[] = {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
                                           "http_proxy"};
        for (size_t i = 0; i < 4; i++)
            strvec_pushf(&j->env, "%s=http://agentstack:%s@" SBX_LOCKDOWN_PROXY_HOST ":%d", vars[i],
                         rq->proxy_token, SBX_LOCKDOWN_PROXY_PORT);
    }
    free(home_canon);
    free(ah_canon);
    free(ws);
    sb_release(&sb);
    sb_release(&exec_path);
    sb_release(&extra_path);
    *out = j;
    return 0;
fail:
    free(home_canon);
    free(ah_canon);
    free(ws);
    sb_release(&sb);
    sb_release(&exec_path);
    sb_release(&extra_path);
    sbx_jail_free(j);
    return -1;
}

void sbx_jail_describe(const struct sbx_jail *j, strbuf *out)
{
    sb_adds(out, j->net == SBX_JAIL_NET_PROXY   ? "own network namespace, egress only through the "
                                                  "proxy"
                 : j->net == SBX_JAIL_NET_RELAY ? "own network namespace, only the gateway's relay"
                                                : "own network namespace, no route out");
    if (j->has_workspace)
        sb_addf(out, ", project %s", j->workspace_writable ? "read-write" : "read-only");
    else
        sb_adds(out, ", no project");
    sb_adds(out, j->home_tmpfs ? ", empty private home" : ", private home");
    if (j->nsnapshots)
        sb_addf(out, ", %zu pinned path%s from the verified snapshot", j->nsnapshots,
                j->nsnapshots == 1 ? "" : "s");
}

void sbx_jail_proc_close(struct sbx_jail_proc *p)
{
    int *fds[] = {&p->ctl, &p->listen_fd, &p->in_fd, &p->out_fd, &p->err_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

int sbx_jail_start(const struct sbx_jail *j, struct sbx_jail_proc *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    out->pid = -1;
    out->ctl = out->listen_fd = out->in_fd = out->out_fd = out->err_fd = -1;
    int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0) {
        as_err_errno(err, "pipes for a confined process");
        goto fail;
    }
    struct sbx_ns_spec spec = {
        .argv = (const char *const *)j->argv.v,
        .envp = (const char *const *)j->env.v,
        .cwd = j->cwd,
        .mounts = j->mounts.v,
        .nmounts = j->mounts.n,
        .writable = (const char *const *)j->writable.v,
        .hostname = "agentstack",
        .new_net = 1,
        .listen_port = j->net == SBX_JAIL_NET_PROXY   ? SBX_LOCKDOWN_PROXY_PORT
                       : j->net == SBX_JAIL_NET_RELAY ? SBX_LOCKDOWN_GATEWAY_PORT
                                                      : 0,
        .inner_uid = j->inner_uid,
        .outer_uid = j->outer_uid,
        .inner_gid = j->inner_gid,
        .outer_gid = j->outer_gid,
        .use_stdio = 1,
        .stdio = {in[0], o[1], e[1]},
        .run_uid = j->run_uid,
        .run_outer_uid = j->run_outer_uid,
        .run_gid = j->run_gid,
        .run_outer_gid = j->run_outer_gid,
        .rlimits = j->rlimits.v,
        .nrlimits = j->rlimits.n,
    };
    struct sbx_ns_child c;
    if (sbx_ns_spawn(&spec, &c, err) < 0 || sbx_ns_ready(&spec, &c, err) < 0)
        goto fail;
    /* init starts the harness only at "go": moved into the cgroup now, it
     * and everything it starts run inside from their first instruction. */
    if (j->cgroup && sbx_cgroup_attach(j->cgroup, c.pid, err) < 0) {
        sbx_ns_release(&c);
        goto fail;
    }
    if (sbx_ns_go(&c, err) < 0) {
        sbx_ns_release(&c);
        goto fail;
    }
    out->pid = c.pid;
    out->ctl = c.ctl;
    out->listen_fd = c.listen_fd;
    if (c.pidfd >= 0)
        close(c.pidfd);
    if (c.face_fd >= 0)
        close(c.face_fd);
    close(in[0]);
    close(o[1]);
    close(e[1]);
    out->in_fd = in[1];
    out->out_fd = o[0];
    out->err_fd = e[0];
    return 0;
fail:;
    int *fds[] = {&in[0], &in[1], &o[0], &o[1], &e[0], &e[1]};
    for (size_t i = 0; i < 6; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    return -1;
}
