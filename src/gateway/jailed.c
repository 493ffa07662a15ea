/*
 * Confined upstreams: stdio servers the gateway starts in a jail
 * (sandbox/jail.h) instead of on the host — every server a --sandbox or
 * --lockdown run routes (its grant carries "confine": the run's workspace
 * view and write scope), and every server under `[policy.isolation]
 * servers = "confined"` (the project, read-only unless [policy.filesystem]
 * write covers it).
 *
 * Why: a routed server executes files of the workspace, and inside a
 * confined run the agent can write the workspace. Started on the host, the
 * agent's code would run outside every namespace with the host's network
 * and the user's home. Here it runs with the run's own workspace view and
 * write scope, a private home, the secrets [policy.secrets] grants that
 * server, and no route out but an egress proxy that decides every
 * destination by that server's [policy.egress].
 *
 * Guarantees:
 *  - No host fallback: a server that must be confined and cannot be (no
 *    user namespaces, a program or cwd outside the view, a snapshot that
 *    cannot be taken) is refused before anything runs, with the reason.
 *  - Run what was hashed: each pinned file or code tree the server runs is
 *    read once, hashed and copied in the same pass (store_copy_verified);
 *    when the bytes match the pin, that copy is bound read-only over the
 *    path in the jail, so a file swapped after the check is not what the
 *    server sees. The copies are private to the gateway (under
 *    $AGENTSTACK_HOME, which no jail sees) and removed at the next spawn
 *    and when the server's connection ends.
 *  - The proxy lives in the gateway's event loop, listens only inside the
 *    server's network namespace, needs the per-spawn token, and records
 *    every decision in the call audit (`egress` rows, with rule and layer
 *    on a denial); a decision that cannot be made (the server's surface is
 *    gone) denies.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/proc.h"
#include "base/rand.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/store.h"
#include "gateway/gw_int.h"
#include "sandbox/jail.h"
#include "sandbox/ns.h"
#include "egress/proxy.h"

enum gw_isolation gw_isolation_for(const struct gw *gw, const struct pol_ruleset *rs)
{
    if (gw->grant && gw->grant->confine)
        return GW_ISO_RUN;
    if (pol_isolation_of(rs, NULL) == POL_ISO_CONFINED)
        return GW_ISO_POLICY;
    return GW_ISO_HOST;
}

const char *gw_isolation_name(enum gw_isolation iso)
{
    switch (iso) {
    case GW_ISO_RUN:
        return "confined by the run";
    case GW_ISO_POLICY:
        return "confined by [policy.isolation]";
    case GW_ISO_HOST:
        break;
    }
    return "host";
}

void gw_jail_assign(struct gw_up *up, const struct gw_surface *sf)
{
    struct gw *gw = up->gw;
    up->iso = gw_isolation_for(gw, sf->rs);
    if (up->iso == GW_ISO_RUN) {
        up->iso_workspace = xstrdup(gw->grant->confine_workspace);
        up->iso_writable = gw->grant->confine_writable;
        up->iso_lockdown = gw->grant->confine_lockdown;
    } else if (up->iso == GW_ISO_POLICY) {
        /* The project, read-only unless [policy.filesystem] write covers it. */
        char *ws = realpath(sf->m->project_root, NULL);
        up->iso_workspace = ws ? ws : xstrdup(sf->m->project_root);
        up->iso_writable = pol_fs_workspace_writable(sf->rs, NULL) == 1;
        up->iso_lockdown = false;
    }
}

/* ---- the proxy: the jail's only route out ---------------------------------- */

static int truthy(const char *v)
{
    return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"));
}

static int jail_decide(void *ctx, const char *identity, const char *host, int port,
                       struct sbx_verdict *v)
{
    struct gw_up *up = ctx;
    memset(v, 0, sizeof *v);
    if (!up->sf || !up->sf->rs) {
        snprintf(v->layer, sizeof v->layer, "proxy");
        snprintf(v->rule, sizeof v->rule, "the server is shutting down");
        return 0;
    }
    struct pol_decision d;
    v->allowed = pol_egress(up->sf->rs, identity, host, (unsigned)port, &d);
    const char *by = pol_by_name(d.by);
    snprintf(v->layer, sizeof v->layer, "%s", by && by[0] ? by : "default");
    if (!v->allowed) {
        strbuf t = SB_INIT;
        pol_decision_text(&d, &t);
        snprintf(v->rule, sizeof v->rule, "%s", t.buf);
        if (d.why == POL_DENY_RULE && d.pattern)
            snprintf(v->pattern, sizeof v->pattern, "!%s", d.pattern);
        sb_release(&t);
    }
    return 0;
}

static int jail_record(void *ctx, const struct sbx_egress_event *ev)
{
    struct gw_up *up = ctx;
    strbuf d = SB_INIT;
    sb_addf(&d, "%s %s:%d", strcmp(ev->kind, "http") == 0 ? "HTTP" : "CONNECT", ev->host, ev->port);
    if (!ev->v->allowed)
        sb_addf(&d, " — %s", ev->v->rule);
    gw_audit(up->gw, up->name, "egress", "", ev->v->allowed ? "ok" : "denied", d.buf,
             ev->v->allowed || !ev->v->pattern[0] ? NULL : ev->v->pattern,
             ev->v->allowed ? NULL : ev->v->layer, 0);
    sb_release(&d);
    return 0;
}

static void proxy_arm(struct gw_up *up);

static void proxy_turn(struct gw_up *up)
{
    struct as_err err = AS_ERR_INIT;
    if (sbx_proxy_turn(up->proxy, &err) < 0)
        gw_note("server '%s': its egress proxy: %s", up->name, err.msg);
    proxy_arm(up);
}

static void proxy_tick(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw_up *up = ctx;
    up->proxy_timer = 0;
    proxy_turn(up);
}

/* Deadlines (head, dial, idle) are scanned on a turn: tick while a
 * connection is open. */
static void proxy_arm(struct gw_up *up)
{
    struct sbx_proxy_stats st;
    sbx_proxy_get_stats(up->proxy, &st);
    if (st.active > 0 && !up->proxy_timer)
        up->proxy_timer = mcp_loop_timer(up->gw->loop, 250, proxy_tick, up);
}

static void proxy_ready(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)loop;
    (void)fd;
    (void)events;
    proxy_turn(ctx);
}

static int proxy_ensure(struct gw_up *up, struct as_err *err)
{
    if (up->proxy)
        return 0;
    if (!up->proxy_token[0] && rand_hex(up->proxy_token, 32, err) < 0)
        return -1;
    struct sbx_proxy_opts po = {
        .identity = up->name,
        .token = up->proxy_token,
        .lockdown = up->iso_lockdown,
        .allow_local = truthy(getenv("AGENTSTACK_ALLOW_LOCAL_TARGETS")),
        .max_tunnels = 64,
        .decide = jail_decide,
        .decide_ctx = up,
        .record = jail_record,
        .record_ctx = up,
    };
    up->proxy = sbx_proxy_new(&po, err);
    if (!up->proxy)
        return -1;
    if (mcp_loop_add(up->gw->loop, sbx_proxy_fd(up->proxy), MCP_EV_IN, proxy_ready, up, err) < 0) {
        sbx_proxy_free(up->proxy);
        up->proxy = NULL;
        return -1;
    }
    return 0;
}

/* ---- run what was hashed ---------------------------------------------------- */

static void snap_clear(struct gw_up *up)
{
    for (size_t i = 0; i < up->snap_files.n; i++) {
        struct as_err ignored = AS_ERR_INIT;
        (void)fs_rmtree(up->snap_files.v[i], &ignored);
    }
    strvec_clear(&up->snap_files);
    if (up->snap_dir) {
        rmdir(up->snap_dir);
        free(up->snap_dir);
        up->snap_dir = NULL;
    }
}

static int snap_dir(struct gw_up *up, struct as_err *err)
{
    static unsigned long seq;
    strbuf d = SB_INIT;
    if (home_path(HOME_GATEWAY_DIR, &d, err) < 0 || fs_private_dir(d.buf, err) < 0)
        goto fail;
    sb_addf(&d, "/%ld", up->gw->pid);
    if (fs_private_dir(d.buf, err) < 0)
        goto fail;
    sb_addf(&d, "/snap-%lu", ++seq);
    if (mkdir(d.buf, 0700) < 0) {
        as_err_errno(err, "creating %s", d.buf);
        goto fail;
    }
    up->snap_dir = sb_detach(&d, NULL);
    return 0;
fail:
    sb_release(&d);
    return -1;
}

/* ---- preparing and starting ------------------------------------------------- */

/* The program argv[0] names, as a host path: relative to cwd when it has a
 * '/', else looked up on the server's PATH. */
static int program_path(struct gw_up *up, strbuf *out)
{
    const char *a0 = up->argv && up->argv[0] ? up->argv[0] : "";
    if (!a0[0])
        return -1;
    strbuf cand = SB_INIT;
    if (a0[0] == '/')
        sb_adds(&cand, a0);
    else if (strchr(a0, '/'))
        sb_addf(&cand, "%s/%s", up->cwd, a0);
    if (cand.len) {
        int ok = access(cand.buf, X_OK) == 0;
        if (ok)
            sb_adds(out, cand.buf);
        sb_release(&cand);
        return ok ? 0 : -1;
    }
    const char *path = NULL;
    for (char **e = up->envp; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    int rc = proc_which(a0, path, out);
    sb_release(&cand);
    return rc;
}

static int private_home(struct gw_up *up, strbuf *out, struct as_err *err)
{
    strbuf name = SB_INIT;
    int rc = -1;
    if (home_path(HOME_SANDBOX_HOME_DIR, out, err) < 0 || fs_private_dir(out->buf, err) < 0)
        goto out;
    sb_addf(out, "/mcp-%s", up->gw->proj.root_sha12 ? up->gw->proj.root_sha12 : "none");
    if (fs_private_dir(out->buf, err) < 0)
        goto out;
    gw_file_safe(up->name, &name);
    sb_addf(out, "/%s", name.buf);
    rc = fs_private_dir(out->buf, err);
out:
    sb_release(&name);
    return rc;
}

int gw_jail_prepare(struct gw_up *up, strbuf *why)
{
    static int probed; /* 1 works, -1 does not */
    struct as_err err = AS_ERR_INIT;
    static char probe_why[sizeof err.msg];
    sbx_jail_free(up->jail);
    up->jail = NULL;
    snap_clear(up);
    if (!probed) {
        probed = sbx_ns_probe(&err) == 0 ? 1 : -1;
        snprintf(probe_why, sizeof probe_why, "%s", err.msg);
    }
    if (probed < 0) {
        sb_addf(why, "%s", probe_why);
        return -2;
    }
    /* Run what was hashed: one read per pinned file, its bytes snapshotted. */
    VEC(struct sbx_jail_snapshot) snaps = {0};
    strvec dsts = STRVEC_INIT, snap_srcs = STRVEC_INIT;
    int rc = 0;
    for (size_t i = 0; i < up->pins.n && rc == 0; i++) {
        const struct gw_exec_pin *pin = &up->pins.v[i];
        if (!up->snap_dir && snap_dir(up, &err) < 0) {
            sb_addf(why, "its pinned files cannot be snapshotted: %s", err.msg);
            rc = -2;
            break;
        }
        strbuf out = SB_INIT;
        sb_addf(&out, "%s/%zu", up->snap_dir, i);
        const char *base = strrchr(pin->path, '/');
        base = base ? base + 1 : pin->path;
        int r = store_copy_verified(pin->path, pin->tree ? STORE_CODE_TREE : STORE_FILE, base,
                                    pin->checksum, out.buf, &err);
        if (r == 1) {
            gw_pin_drift(up->gw, pin, why);
            rc = -1;
        } else if (r < 0) {
            sb_addf(why, "its pinned files cannot be snapshotted: %s", err.msg);
            rc = -2;
        } else {
            strvec_push(&up->snap_files, out.buf);
            strvec_pushf(&snap_srcs, "%s%s%s", out.buf, pin->tree ? "" : "/",
                         pin->tree ? "" : base);
            strvec_pushf(&dsts, "%s/%s", up->iso_workspace, pin->rel);
        }
        sb_release(&out);
    }
    for (size_t i = 0; rc == 0 && i < snap_srcs.n; i++) {
        struct sbx_jail_snapshot s = {snap_srcs.v[i], dsts.v[i]};
        vec_push(&snaps, s);
    }
    strbuf prog = SB_INIT, home = SB_INIT;
    char *cwd = NULL;
    if (rc == 0 && program_path(up, &prog) < 0) {
        sb_addf(why, "its program '%s' is not found", up->argv && up->argv[0] ? up->argv[0] : "");
        rc = -2;
    }
    if (rc == 0 && private_home(up, &home, &err) < 0) {
        sb_addf(why, "its private home: %s", err.msg);
        rc = -2;
    }
    if (rc == 0 && !(cwd = realpath(up->cwd, NULL))) {
        sb_addf(why, "its working directory %s: %s", up->cwd, strerror(errno));
        rc = -2;
    }
    if (rc == 0 && proxy_ensure(up, &err) < 0) {
        sb_addf(why, "its egress proxy: %s", err.msg);
        rc = -2;
    }
    if (rc == 0) {
        struct sbx_jail_request rq = {
            .workspace = up->iso_workspace,
            .writable = up->iso_writable,
            .manifest_dir = up->gw->proj.paths.manifest_dir,
            .home = home.buf,
            .program = prog.buf,
            .argv = (const char *const *)up->argv,
            .envp = (const char *const *)up->envp,
            .cwd = cwd,
            .snapshots = snaps.v,
            .nsnapshots = snaps.n,
            .net = SBX_JAIL_NET_PROXY,
            .proxy_token = up->proxy_token,
        };
        if (sbx_jail_build(&rq, &up->jail, &err) < 0) {
            sb_addf(why, "%s", err.msg);
            rc = -2;
        }
    }
    if (rc < 0)
        snap_clear(up);
    free(cwd);
    sb_release(&prog);
    sb_release(&home);
    vec_free(&snaps);
    strvec_clear(&dsts);
    strvec_clear(&snap_srcs);
    return rc;
}

int gw_jail_spawn(void *ctx, struct proc *p, int *hold, struct as_err *err)
{
    struct gw_up *up = ctx;
    *hold = -1;
    if (!up->jail || !up->proxy)
        return as_err_set(err, "server '%s' must run confined and has no jail (no host fallback)",
                          up->name);
    struct sbx_jail_proc jp;
    int rc = sbx_jail_start(up->jail, &jp, err);
    sbx_jail_free(up->jail); /* one plan, one start */
    up->jail = NULL;
    /* The snapshots stay until the next spawn or the end: a tree is bound as
     * the directory itself, so removing its files would empty the view. */
    if (rc < 0) {
        snap_clear(up);
        return -1;
    }
    sbx_proxy_close_listeners(up->proxy); /* a previous spawn's namespace */
    if (sbx_proxy_add_listener(up->proxy, jp.listen_fd, err) < 0) {
        jp.listen_fd = -1; /* closed by add_listener */
        kill(jp.pid, SIGKILL);
        while (waitpid(jp.pid, NULL, 0) < 0 && errno == EINTR)
            ;
        sbx_jail_proc_close(&jp);
        return -1;
    }
    jp.listen_fd = -1;
    p->pid = jp.pid;
    p->new_pgroup = 1; /* init is a session leader: its group ends the jail */
    p->to_child = jp.in_fd;
    p->from_child = jp.out_fd;
    p->err_from_child = jp.err_fd;
    *hold = jp.ctl;
    return 0;
}

void gw_jail_release(struct gw_up *up)
{
    sbx_jail_free(up->jail);
    up->jail = NULL;
    snap_clear(up);
    free(up->iso_workspace);
    up->iso_workspace = NULL;
    if (up->proxy) {
        mcp_loop_timer_cancel(up->gw->loop, up->proxy_timer);
        mcp_loop_del(up->gw->loop, sbx_proxy_fd(up->proxy));
        sbx_proxy_free(up->proxy);
        up->proxy = NULL;
    }
    explicit_bzero(up->proxy_token, sizeof up->proxy_token);
}
