/* The sandbox run executor (see run.h). */
#include "sandbox/run.h"
#include "sandbox/registry.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "sandbox/gwface.h"
#include "sandbox/ns.h"
#include "egress/proxy.h"
#include "sandbox/record.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* sandbox-home/ and sandbox-home/<harness>/: 0700 (re-tightened), never a
 * symlink or someone else's. */
static int sandbox_home_dirs(const char *path, struct as_err *err)
{
    char *parent = xstrdup(path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    int rc = fs_private_dir(parent, err);
    free(parent);
    return rc < 0 ? -1 : fs_private_dir(path, err);
}

/* sandbox_started and limits: recorded before the harness runs, so a run
 * that cannot be recorded does not start. */
static int record_start(const struct sbx_plan *p, struct sbx_rec *rec, const struct sbx_gw *gw,
                        struct sbx_proxy *proxy, const char *layers, struct as_err *err)
{
    json_t *f = json_object();
    json_object_set_new(f, "image", json_string(p->image));
    json_object_set_new(f, "workspace", json_string(p->workspace));
    json_object_set_new(f, "workspace_writable", json_boolean(p->workspace_writable));
    json_object_set_new(f, "harness", json_string(p->harness_id));
    json_object_set_new(f, "posture", json_string(p->posture_slug));
    json_object_set_new(f, "trust",
                        json_string(p->trust == SBX_TRUST_TRUSTED     ? "trusted"
                                    : p->trust == SBX_TRUST_CHANGED   ? "changed"
                                    : p->trust == SBX_TRUST_UNTRUSTED ? "untrusted"
                                                                      : "no-project"));
    json_object_set_new(f, "uid", json_integer(p->inner_uid));
    json_object_set_new(f, "layers", json_string(layers));
    if (p->allow_local)
        json_object_set_new(f, "allow_local_targets", json_true());
    if (p->gateway_routed) {
        strbuf u = SB_INIT;
        sbx_plan_face_url(p, gw->port, &u);
        json_t *g = json_object();
        json_object_set_new(g, "url", json_string(u.buf));
        json_object_set_new(g, "grant_digest", json_string(gw->digest));
        json_object_set_new(g, "config", json_string(p->gateway_config_inside));
        json_object_set_new(f, "gateway", g);
        sb_release(&u);
    }
    if (sbx_rec_append(rec, "sandbox_started", f, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        return -1;
    }
    struct sbx_proxy_stats st;
    sbx_proxy_get_stats(proxy, &st);
    f = json_object();
    json_object_set_new(f, "tunnels", json_integer(st.max_tunnels));
    json_object_set_new(f, "head_bytes", json_integer(8192));
    json_object_set_new(f, "head_timeout_s", json_integer(15));
    json_object_set_new(f, "first_flight_timeout_s", json_integer(15));
    json_object_set_new(f, "idle_timeout_s", json_integer(600));
    if (sbx_rec_append(rec, "limits", f, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        return -1;
    }
    return 0;
}

static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1, SIGUSR2};

/* The run's egress proxy: every connection decided by the plan and
 * recorded in the run record. */
static struct sbx_proxy *new_proxy(const struct sbx_plan *p, struct sbx_rec *rec,
                                   struct as_err *err)
{
    struct sbx_proxy_opts po = {
        .identity = p->harness_id,
        .token = p->token,
        .lockdown = p->mode == SBX_MODE_LOCKDOWN,
        .allow_local = p->allow_local,
        .gateway_only_hosts = (const char *const *)p->gateway_only_hosts.v,
        .decide = sbx_plan_decide,
        .decide_addr = sbx_plan_decide_addr,
        .decide_ctx = (void *)p,
        .record = sbx_rec_egress,
        .record_ctx = rec,
    };
    return sbx_proxy_new(&po, err);
}

/* Serves the proxy until the sandbox ends: relayed signals go to init,
 * and a SIGINT, SIGTERM or SIGHUP arms a 2-second timer after which init
 * is killed. fds: init's pidfd, the signalfd, the timerfd, init's control
 * socket. */
static void relay_until_end(struct sbx_proxy *proxy, struct sbx_ns_child *child, int fds[4],
                            struct as_err *err)
{
    int sfd = fds[1], tfd = fds[2];
    int armed = 0;
    for (;;) {
        int w = sbx_proxy_run(proxy, fds, 4, err);
        if (w == 0 || (w == 3 && sbx_ns_poll_end(child)))
            break;
        if (w < 0) {
            sbx_ns_signal(child, SIGKILL);
            break;
        }
        if (w == 1) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                int sig = (int)si.ssi_signo;
                sbx_ns_signal(child, sig);
                if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !armed) {
                    struct itimerspec its = {.it_value = {.tv_sec = 2}};
                    timerfd_settime(tfd, 0, &its, NULL);
                    armed = 1;
                }
            }
        } else if (w == 2) {
            uint64_t n;
            if (read(tfd, &n, sizeof n) > 0)
                sbx_ns_signal(child, SIGKILL);
        }
    }
}

/* sandbox_exited: the exit code or the signal, and the duration. */
static void record_exit(struct sbx_rec *rec, const struct sbx_run_result *res, struct as_err *err)
{
    json_t *f = json_object();
    if (res->code >= 0)
        json_object_set_new(f, "code", json_integer(res->code));
    else if (res->sig > 0)
        json_object_set_new(f, "signal", json_integer(res->sig));
    json_object_set_new(f, "duration_ms", json_integer(res->duration_ms));
    if (sbx_rec_append(rec, "sandbox_exited", f, err) < 0)
        fprintf(stderr, "warning: could not record the run's end\n");
}

int sbx_run_execute(const struct sbx_plan *p, FILE *banner, struct sbx_run_result *res,
                    struct as_err *err)
{
    memset(res, 0, sizeof *res);
    res->code = res->sig = -1;
    struct sbx_rec rec;
    struct sbx_proxy *proxy = NULL;
    struct sbx_ns_child child;
    memset(&child, 0, sizeof child);
    child.pid = child.pidfd = child.ctl = child.listen_fd = child.face_fd = -1;
    struct sbx_gw gw;
    sbx_gw_init(&gw);
    VEC(struct sbx_mount) mounts = {0};
    int sfd = -1, tfd = -1, rc = -1, port = p->proxy_port, registered = 0;
    strvec env = STRVEC_INIT;
    sigset_t set, old;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof relayed / sizeof relayed[0]; i++)
        sigaddset(&set, relayed[i]);

    memset(&rec, 0, sizeof rec);
    /* The run record is created while init builds the sandbox (issue 8: its
     * three new files are off the critical path) unless a staged file the
     * sandbox mounts lives in it; either way before anything is launched. */
    int rec_early = p->gateway_routed || p->mcp_shadow_src;
    int early_start = !p->gateway_routed;
    char layers[256];
    sbx_ns_layers(layers, sizeof layers);
    if (rec_early && sbx_rec_create(p->home, p->run_id, p->posture_slug, &rec, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        return -1;
    }
    if (sandbox_home_dirs(p->sandbox_home, err) < 0) {
        as_err_prefix(err, "the sandbox home");
        goto refused;
    }

    proxy = new_proxy(p, &rec, err);
    if (!proxy)
        goto refused;
    if (p->mode == SBX_MODE_SANDBOX && sbx_proxy_listen(proxy, p->proxy_host, 0, &port, err) < 0)
        goto refused;
    sbx_plan_env(p, port, &env);
    if (sbx_gw_prepare(p, &rec, &gw, err) < 0)
        goto refused;
    if (p->mcp_shadow_src &&
        sbx_gw_stage(p->mcp_shadow_src, p->mcp_shadow_text, strlen(p->mcp_shadow_text), err) < 0)
        goto refused;
    for (size_t i = 0; i < p->mounts.n; i++)
        vec_push(&mounts, p->mounts.v[i]);
    if (p->gateway_routed)
        vec_push(&mounts, sbx_gw_mount(p, &gw));

    struct sbx_ns_spec spec = {
        .argv = (const char *const *)p->argv.v,
        .envp = (const char *const *)env.v,
        .cwd = p->cwd,
        .mounts = mounts.v,
        .nmounts = mounts.n,
        .writable = (const char *const *)p->writable.v,
        .hostname = "agentstack",
        .new_net = p->mode == SBX_MODE_LOCKDOWN,
        .listen_port = p->mode == SBX_MODE_LOCKDOWN ? p->proxy_port : 0,
        .face_port = p->mode == SBX_MODE_LOCKDOWN && p->gateway_routed ? p->face_port : 0,
        .inner_uid = p->inner_uid,
        .outer_uid = p->outer_uid,
        .inner_gid = p->inner_gid,
        .outer_gid = p->outer_gid,
    };
    /* Block the relayed signals before the clone: init and the parent both
     * take them from a signalfd, never from the default action. */
    sigprocmask(SIG_BLOCK, &set, &old);
    if (sbx_ns_spawn(&spec, &child, err) < 0)
        goto refused_mask;
    if (!rec_early && sbx_rec_create(p->home, p->run_id, p->posture_slug, &rec, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        goto refused_mask;
    }
    /* Registered while init builds the sandbox (issue 8: off the critical
     * path) and before the harness starts: killable from its first output.
     * A refusal from here on drops the entry again. */
    registered = sbx_reg_add_or_warn(p, child.pid, 0);
    /* Without a gateway (whose port and grant digest come later), the start
     * is recorded during the build too, naming the layers this kernel
     * gives; sandbox-init's own report must then match it. */
    if (early_start && record_start(p, &rec, &gw, proxy, layers, err) < 0)
        goto refused_mask;
    if (sbx_ns_ready(&spec, &child, err) < 0)
        goto refused_mask;
    if (child.listen_fd >= 0) {
        int lfd = child.listen_fd;
        child.listen_fd = -1;
        if (sbx_proxy_add_listener(proxy, lfd, err) < 0)
            goto refused_mask;
    }
    if (p->gateway_routed) {
        int face = p->mode == SBX_MODE_LOCKDOWN ? child.face_fd : gw.face_fd;
        if (face == child.face_fd)
            child.face_fd = -1;
        if (sbx_gw_start(p, &gw, face, &old, err) < 0)
            goto refused_mask;
    }
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (sfd < 0 || tfd < 0) {
        as_err_errno(err, "signal handling");
        goto refused_mask;
    }

    if (!early_start && record_start(p, &rec, &gw, proxy, child.layers, err) < 0)
        goto refused_mask;
    if (early_start && strcmp(child.layers, layers) != 0) {
        as_err_set(err, "sandbox-init applied \"%s\", not the recorded \"%s\"", child.layers,
                   layers);
        goto refused_mask;
    }

    sbx_plan_print(p, banner, 0);
    fflush(banner);
    long long t0 = now_ms();
    json_t *f;
    if (sbx_ns_go(&child, err) < 0) {
        if (registered)
            sbx_reg_remove(p->home, p->run_id);
        f = json_object();
        json_object_set_new(f, "code", json_integer(127));
        json_object_set_new(f, "duration_ms", json_integer(now_ms() - t0));
        json_object_set_new(f, "error", json_string("launch-failed"));
        sbx_rec_append(&rec, "sandbox_exited", f, NULL);
        goto out_mask;
    }
    res->launched = 1;

    /* init's "exit" message (fds[3]) comes before its own exit, which tears
     * down the namespaces: the end is recorded meanwhile and init reaped
     * afterwards (issue 8). The pidfd still ends the loop if init dies. */
    int fds[4] = {child.pidfd, sfd, tfd, child.ctl};
    relay_until_end(proxy, &child, fds, err);
    sbx_ns_reap(&child, &res->code, &res->sig);
    if (registered)
        sbx_reg_remove(p->home, p->run_id);
    res->duration_ms = now_ms() - t0;
    record_exit(&rec, res, err);
    rc = 0;
    goto out_mask;

refused_mask:
    sigprocmask(SIG_SETMASK, &old, NULL);
refused:
    sbx_ns_release(&child);
    if (registered)
        sbx_reg_remove(p->home, p->run_id);
    sbx_gw_finish(&gw);
    vec_free(&mounts);
    sbx_rec_remove(&rec);
    sbx_rec_close(&rec);
    sbx_proxy_free(proxy);
    strvec_clear(&env);
    if (sfd >= 0)
        close(sfd);
    if (tfd >= 0)
        close(tfd);
    return -1;

out_mask:
    sbx_ns_release(&child);
    sbx_gw_finish(&gw); /* after the sandbox is gone: no call can still be in flight */
    vec_free(&mounts);
    sbx_proxy_free(proxy);
    if (sfd >= 0)
        close(sfd);
    if (tfd >= 0)
        close(tfd);
    /* Drop anything still pending before unblocking, so a SIGINT that was
     * forwarded does not also kill agentstack itself. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    sbx_rec_close(&rec);
    strvec_clear(&env);
    return rc;
}
