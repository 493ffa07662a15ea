/* The run plan builder and its display (see plan.h). */
#include "sandbox/plan.h"
#include "sandbox/plan_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rand.h"
#include "base/strbuf.h"
#include "base/url.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "policy/policy.h"
#include "sandbox/record.h"
#include "trust/trust.h"

#define WS_DENY_BY_DEFAULT                                                                         \
    "no [policy.filesystem] write scope covers the workspace (sandbox workspace writes "           \
    "are deny-by-default)"

char *sbx_i_canon(const char *path)
{
    char buf[PATH_MAX];
    return realpath(path, buf) ? xstrdup(buf) : NULL;
}

void sbx_argv_display(const char *const *argv, strbuf *out)
{
    for (size_t i = 0; argv && argv[i]; i++) {
        if (i)
            sb_addc(out, ' ');
        sb_add_shword(out, argv[i]);
    }
}

/* ---- the workspace -------------------------------------------------------------- */

int sbx_i_url_host(const char *url, char out[POL_HOST_MAX + 1])
{
    struct url_authority a;
    const char *why;
    if (!ref_url_host_known(url) || url_authority(url, &a, &why) < 0)
        return -1;
    return pol_host_normalize(a.host, strlen(a.host), out, &why);
}

/* ---- build ---------------------------------------------------------------------------- */

static int load_policy(struct sbx_plan *p, const struct bundle_paths *bp, struct manifest **mf,
                       struct as_err *err)
{
    strbuf mpath = SB_INIT;
    if (pol_machine_path(&mpath, err) < 0)
        return -1;
    enum pol_machine_state state;
    struct pol_layer *machine = pol_machine_load(mpath.buf, &state, err);
    if (!machine) {
        sb_release(&mpath);
        return -1;
    }
    p->policy_note = xstrdup(state == POL_UNCONFIGURED ? "no machine policy (unconfigured)"
                                                       : "machine policy " BUNDLE_MANIFEST_NAME
                                                         " in the agentstack home");
    sb_release(&mpath);
    struct pol_layer *project = NULL;
    if (p->trust == SBX_TRUST_TRUSTED) {
        *mf = manifest_load(bp, err);
        if (!*mf) {
            pol_layer_free(machine);
            return -1;
        }
        if ((*mf)->policy) {
            project = pol_layer_from_toml((*mf)->policy, bp->manifest, POL_PROJECT, err);
            if (!project) {
                pol_layer_free(machine);
                return -1;
            }
        }
    }
    const char *home = getenv("HOME");
    p->ruleset = pol_compile(machine, project, home, err);
    pol_layer_free(machine);
    pol_layer_free(project);
    return p->ruleset ? 0 : -1;
}

/* Covers the workspace's project-scope MCP config (when there is one) with
 * an empty config staged at execution: the only MCP entry a confined harness
 * gets is the gateway's (or none under lockdown). */
static void shadow_project_mcp(struct sbx_plan *p, const char *rel, const char *empty)
{
    if (!rel[0] || rel[0] == '/' || strstr(rel, ".."))
        return;
    struct sbx_view v = {&p->mounts, p->workspace, SBX_INSIDE_WORKSPACE, p->inner_uid,
                         p->inner_gid};
    strbuf full = SB_INIT;
    sb_addf(&full, "%s/%s", p->workspace, rel);
    char *real = sbx_i_canon(full.buf);
    struct stat st;
    if (real && sbx_i_path_within(p->workspace, real) && strcmp(real, p->workspace) != 0 &&
        stat(real, &st) == 0 && S_ISREG(st.st_mode)) {
        strbuf in = SB_INIT;
        sb_addf(&in, SBX_INSIDE_WORKSPACE "%s", real + strlen(p->workspace));
        if (!sbx_i_has_mount(&v, in.buf)) {
            p->mcp_shadow_src = xasprintf("%s/runs/%s/project-mcp-shadow", p->home, p->run_id);
            p->mcp_shadow_text = xstrdup(empty);
            sbx_i_mount(&v, SBX_MNT_RO_BIND, p->mcp_shadow_src, in.buf, NULL, 0);
        }
        sb_release(&in);
    }
    free(real);
    sb_release(&full);
}

static const char *posture_slug(enum sbx_mode mode)
{
    switch (mode) {
    case SBX_MODE_LOCKDOWN:
        return "lockdown";
    case SBX_MODE_HOST:
        return "host-protected";
    case SBX_MODE_HOST_ADVISORY:
        return "host";
    default:
        return "sandbox";
    }
}

/* The project's trust state, and what it means for the run: only a
 * trusted bundle is delivered, and its consent digest anchors the gateway. */
static void read_trust(struct sbx_plan *p, const struct bundle_paths *bp)
{
    struct trust_status ts = {0};
    struct as_err terr = AS_ERR_INIT;
    if (trust_check(bp, &ts, &terr) < 0) {
        p->trust = SBX_TRUST_UNTRUSTED;
        char b[2300];
        p->trust_detail = xasprintf("UNTRUSTED — the bundle could not be read (%s); "
                                    "nothing from it is delivered",
                                    as_err_str(&terr, b, sizeof b));
    } else if (ts.state == TRUST_TRUSTED) {
        p->trust = SBX_TRUST_TRUSTED;
        p->trust_detail = xstrdup("bundle trusted");
        p->consent_digest = xstrdup(ts.digest); /* the gateway's trust anchor */
    } else if (ts.state == TRUST_CHANGED) {
        p->trust = SBX_TRUST_CHANGED;
        p->trust_detail = xstrdup("CHANGED — reviewed bytes changed since trust; nothing "
                                  "from the bundle is delivered");
    } else {
        p->trust = SBX_TRUST_UNTRUSTED;
        p->trust_detail = xstrdup("UNTRUSTED — not reviewed on this machine; nothing from "
                                  "the bundle is delivered");
    }
    trust_status_release(&ts);
}

/* Whether the policy lets the run write the workspace, and why. */
static void set_workspace_access(struct sbx_plan *p)
{
    struct pol_decision d;
    p->workspace_writable = pol_fs_workspace_writable(p->ruleset, &d);
    if (p->workspace_writable) {
        p->workspace_reason = xstrdup("[policy.filesystem] write covers it");
    } else if (d.why == POL_DEFAULT_DENY) {
        p->workspace_reason = xstrdup(WS_DENY_BY_DEFAULT);
    } else {
        strbuf t = SB_INIT;
        pol_decision_text(&d, &t);
        p->workspace_reason = sb_detach(&t, NULL);
    }
}

/* The bundle's servers the run names (a toolset narrows them), and under
 * lockdown the hosts of their urls, which only the gateway may reach; a
 * url whose host cannot be classified refuses a lockdown run. */
static int plan_fence(const struct sbx_plan_request *rq, struct sbx_plan *p,
                      const struct manifest *mf, struct as_err *err)
{
    if (mf && rq->toolset) {
        /* A toolset narrows what the run names as the bundle's servers; it
         * never widens what the proxy allows. */
        const struct mf_toolset *ts = manifest_toolset(mf, rq->toolset);
        if (!ts) {
            as_err_set(err, "no toolset '%s' in %s", rq->toolset, mf->path);
            sbx_i_toolset_hint(mf, err);
            return -1;
        }
        p->toolset = xstrdup(ts->name);
        for (size_t i = 0; i < ts->servers.n; i++)
            strvec_push(&p->fence_servers, ts->servers.v[i]);
        p->servers_declared = (int)ts->servers.n;
    } else if (rq->toolset) {
        strvec_pushf(&p->notes,
                     "note: --toolset %s is not applied: nothing from %s bundle is "
                     "delivered",
                     rq->toolset, p->trust == SBX_TRUST_NO_PROJECT ? "a missing" : "an unreviewed");
    }
    if (mf) {
        if (!rq->toolset)
            p->servers_declared = (int)mf->servers.n;
        for (size_t i = 0; i < mf->servers.n; i++) {
            const struct mf_server *s = &mf->servers.v[i];
            if (!s->url)
                continue;
            char host[POL_HOST_MAX + 1];
            if (sbx_i_url_host(s->url, host) < 0) {
                if (p->mode == SBX_MODE_LOCKDOWN) {
                    as_err_set(err,
                               "server '%s': the host of its url cannot be classified; "
                               "refusing to start a lockdown run",
                               s->name);
                    return -1;
                }
                continue;
            }
            if (p->mode == SBX_MODE_LOCKDOWN && strvec_find(&p->gateway_only_hosts, host) < 0)
                strvec_push(&p->gateway_only_hosts, host);
        }
    }
    return 0;
}

/* The run's environment (nothing of the caller's but TERM) and where its
 * proxy listens. */
static void plan_env(struct sbx_plan *p, const char *extra_path)
{
    strvec_pushf(&p->env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin%s%s",
                 extra_path[0] ? ":" : "", extra_path);
    strvec_push(&p->env, "HOME=" SBX_INSIDE_HOME);
    const char *term = getenv("TERM");
    if (term && term[0])
        strvec_pushf(&p->env, "TERM=%s", term);
    strvec_pushf(&p->env, "AGENTSTACK_RUN_ID=%s", p->run_id);
    if (p->mode == SBX_MODE_LOCKDOWN) {
        p->proxy_host = SBX_LOCKDOWN_PROXY_HOST;
        p->proxy_port = SBX_LOCKDOWN_PROXY_PORT;
    } else {
        p->proxy_host = "127.0.0.1";
        p->proxy_port = 0;
    }
}

int sbx_plan_build(const struct sbx_plan_request *rq, struct sbx_plan **out, struct as_err *err)
{
    *out = NULL;
    struct sbx_plan *p = xcalloc(1, sizeof *p);
    struct bundle_paths bp = {0};
    struct manifest *mf = NULL;
    char *home_canon = NULL, *ah_canon = NULL, *cwd_canon = NULL;
    strbuf sb = SB_INIT, exec_path = SB_INIT, extra_path = SB_INIT;

    p->mode = rq->mode;
    p->posture_slug = posture_slug(rq->mode);
    p->posture_label = sbx_posture_label(p->posture_slug);
    p->harness_id = xstrdup(rq->harness_id);
    if (rand_hex(p->run_id + 2, 5, err) < 0 || rand_hex(p->token, 32, err) < 0)
        goto fail;
    p->run_id[0] = 'r';
    p->run_id[1] = '-';
    if (rq->mode == SBX_MODE_HOST || rq->mode == SBX_MODE_HOST_ADVISORY) {
        /* The host modes share the run id and nothing else of the
         * confinement: no mounts, no proxy, no token. */
        memset(p->token, 0, sizeof p->token);
        if (sbx_i_plan_host(rq, p, err) < 0)
            goto fail;
        *out = p;
        return 0;
    }
    const char *al = getenv("AGENTSTACK_ALLOW_LOCAL_TARGETS");
    p->allow_local = al && (!strcmp(al, "1") || !strcmp(al, "true") || !strcmp(al, "yes"));

    if (home_dir(&sb, err) < 0)
        goto fail;
    p->home = xstrdup(sb.buf);
    ah_canon = sbx_i_canon(p->home);
    if (!ah_canon)
        ah_canon = xstrdup(p->home);
    const char *h = getenv("HOME");
    home_canon = h && h[0] ? sbx_i_canon(h) : NULL;

    /* The project, and its trust state. */
    char cwdbuf[PATH_MAX];
    const char *cwd = rq->cwd;
    if (!cwd) {
        if (!getcwd(cwdbuf, sizeof cwdbuf)) {
            as_err_errno(err, "getcwd");
            goto fail;
        }
        cwd = cwdbuf;
    }
    cwd_canon = sbx_i_canon(cwd);
    if (!cwd_canon) {
        as_err_errno(err, "%s", cwd);
        goto fail;
    }
    if (discover_project(rq->manifest_dir, cwd, &bp, err) < 0)
        goto fail;
    if (bp.found) {
        p->project_root = sbx_i_canon(bp.project_root);
        if (!p->project_root) {
            as_err_errno(err, "%s", bp.project_root);
            goto fail;
        }
        p->workspace = xstrdup(p->project_root);
        read_trust(p, &bp);
    } else {
        p->trust = SBX_TRUST_NO_PROJECT;
        p->trust_detail = xstrdup("no project — nothing to deliver");
        p->workspace = xstrdup(cwd_canon);
    }
    if (sbx_i_check_workspace(p->workspace, home_canon, ah_canon, err) < 0)
        goto fail;

    /* Policy: the machine floor, and the project layer only when trusted. */
    if (load_policy(p, &bp, &mf, err) < 0)
        goto fail;
    set_workspace_access(p);
    if (plan_fence(rq, p, mf, err) < 0)
        goto fail;

    /* Identity: the invoking uid outside, never 0 inside. */
    p->outer_uid = geteuid();
    p->outer_gid = getegid();
    p->inner_uid = p->outer_uid ? p->outer_uid : 1000;
    p->inner_gid = p->outer_gid ? p->outer_gid : 1000;

    /* Mounts, in order. */
    const char *rootfs = getenv("AGENTSTACK_SANDBOX_ROOTFS");
    if (rootfs && rootfs[0]) {
        char *rc = sbx_i_canon(rootfs);
        if (!rc) {
            as_err_errno(err, "AGENTSTACK_SANDBOX_ROOTFS %s", rootfs);
            goto fail;
        }
        p->image = rc;
    } else {
        p->image = xstrdup("host");
    }
    struct sbx_view view = {&p->mounts, p->workspace, SBX_INSIDE_WORKSPACE, p->inner_uid,
                            p->inner_gid};
    sbx_i_system_view(&view, strcmp(p->image, "host") == 0 ? "/" : p->image);
    sb_reset(&sb);
    sb_addf(&sb, "%s/sandbox-home/%s", p->home, p->harness_id);
    p->sandbox_home = xstrdup(sb.buf);
    sbx_i_mount(&view, SBX_MNT_RW_BIND, p->sandbox_home, SBX_INSIDE_HOME, NULL, 0);
    if (sbx_i_program_view(&view, rq->harness_bin, home_canon, ah_canon, &p->harness_host_bin,
                           &exec_path, &extra_path, err) < 0)
        goto fail;
    if (sbx_i_workspace_view(&view, p->workspace_writable, bp.found ? bp.manifest_dir : NULL, err) <
        0)
        goto fail;
    strvec_push(&p->writable, "/tmp");
    strvec_push(&p->writable, "/dev/shm");
    strvec_push(&p->writable, SBX_INSIDE_HOME);
    if (p->workspace_writable)
        strvec_push(&p->writable, SBX_INSIDE_WORKSPACE);

    /* The command: the program, then the user's arguments verbatim. */
    strvec_push(&p->argv, exec_path.buf);
    for (size_t i = 0; rq->args && rq->args[i]; i++)
        strvec_push(&p->argv, rq->args[i]);
    if (sbx_i_path_within(p->workspace, cwd_canon))
        p->cwd = xasprintf(SBX_INSIDE_WORKSPACE "%s", cwd_canon + strlen(p->workspace));
    else
        p->cwd = xstrdup(SBX_INSIDE_WORKSPACE);

    plan_env(p, extra_path.buf);
    if (sbx_i_plan_gateway(rq, p, mf, p->consent_digest, err) < 0)
        goto fail;
    if ((p->gateway_routed || p->mode == SBX_MODE_LOCKDOWN) && rq->project_mcp_rel &&
        rq->project_mcp_empty)
        shadow_project_mcp(p, rq->project_mcp_rel, rq->project_mcp_empty);
    if (p->trust == SBX_TRUST_TRUSTED && p->servers_declared && !p->gateway_routed)
        strvec_pushf(&p->notes,
                     "note: %d MCP server(s) %s are not routed into this run (%s); "
                     "none is reachable from inside",
                     p->servers_declared, p->toolset ? "of the toolset" : "declared by the bundle",
                     p->gateway_note ? p->gateway_note : "no gateway");

    manifest_free(mf);
    bundle_paths_free(&bp);
    free(home_canon);
    free(ah_canon);
    free(cwd_canon);
    sb_release(&sb);
    sb_release(&exec_path);
    sb_release(&extra_path);
    *out = p;
    return 0;
fail:
    manifest_free(mf);
    bundle_paths_free(&bp);
    free(home_canon);
    free(ah_canon);
    free(cwd_canon);
    sb_release(&sb);
    sb_release(&exec_path);
    sb_release(&extra_path);
    sbx_plan_free(p);
    return -1;
}

void sbx_plan_free(struct sbx_plan *p)
{
    if (!p)
        return;
    free(p->harness_id);
    free(p->harness_host_bin);
    free(p->trust_detail);
    free(p->project_root);
    free(p->workspace);
    free(p->workspace_reason);
    free(p->home);
    free(p->sandbox_home);
    free(p->image);
    strvec_clear(&p->gateway_only_hosts);
    strvec_clear(&p->argv);
    strvec_clear(&p->env);
    free(p->cwd);
    sbx_i_mounts_free(&p->mounts);
    strvec_clear(&p->writable);
    pol_ruleset_free(p->ruleset);
    free(p->policy_note);
    strvec_clear(&p->notes);
    free(p->harness_display);
    free(p->toolset);
    strvec_clear(&p->fence_servers);
    strvec_clear(&p->fence_skills);
    for (size_t i = 0; i < p->gates.n; i++) {
        free(p->gates.v[i].detail);
        free(p->gates.v[i].hint);
    }
    vec_free(&p->gates);
    free(p->consent_digest);
    free(p->gateway_note);
    free(p->mcp_shadow_src);
    free(p->mcp_shadow_text);
    free(p->gateway_config_rel);
    free(p->gateway_config_inside);
    explicit_bzero(p->face_token, sizeof p->face_token);
    free(p->session_key);
    free(p->manifest_path);
    free(p->grant_path);
    json_decref(p->grant);
    free(p->inject_path);
    free(p->inject_scope);
    free(p->inject_note);
    strvec_clear(&p->inject_argv);
    free(p->host_cwd);
    memset(p->token, 0, sizeof p->token);
    free(p);
}

void sbx_plan_env(const struct sbx_plan *p, int port, strvec *out)
{
    for (size_t i = 0; i < p->env.n; i++)
        strvec_push(out, p->env.v[i]);
    static const char *const vars[] = {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"};
    for (size_t i = 0; i < 4; i++)
        strvec_pushf(out, "%s=http://agentstack:%s@%s:%d", vars[i], p->token, p->proxy_host, port);
    if (p->gateway_routed) {
        /* The face is not an egress destination: the harness reaches it directly. */
        const char *h = p->mode == SBX_MODE_LOCKDOWN ? SBX_LOCKDOWN_PROXY_HOST : "127.0.0.1";
        strvec_pushf(out, "NO_PROXY=%s", h);
        strvec_pushf(out, "no_proxy=%s", h);
    }
}

void sbx_plan_face_url(const struct sbx_plan *p, int port, strbuf *out)
{
    if (p->mode == SBX_MODE_LOCKDOWN)
        sb_addf(out, "http://" SBX_LOCKDOWN_PROXY_HOST ":%d/mcp", SBX_LOCKDOWN_GATEWAY_PORT);
    else if (port > 0)
        sb_addf(out, "http://127.0.0.1:%d/mcp", port);
    else
        sb_adds(out, "http://127.0.0.1:<ephemeral>/mcp");
}

static void verdict_from(const struct pol_decision *d, struct sbx_verdict *v);

int sbx_plan_decide(void *ctx, const char *identity, const char *host, int port,
                    struct sbx_verdict *v)
{
    const struct sbx_plan *p = ctx;
    struct pol_decision d;
    memset(v, 0, sizeof *v);
    v->allowed = pol_egress(p->ruleset, identity, host, (unsigned)port, &d);
    verdict_from(&d, v);
    return 0;
}

static void verdict_from(const struct pol_decision *d, struct sbx_verdict *v)
{
    const char *by = pol_by_name(d->by);
    snprintf(v->layer, sizeof v->layer, "%s", by && by[0] ? by : "default");
    if (v->allowed)
        return;
    strbuf t = SB_INIT;
    pol_decision_text(d, &t);
    snprintf(v->rule, sizeof v->rule, "%s", t.buf);
    sb_reset(&t);
    pol_decision_short(d, &t);
    snprintf(v->brief, sizeof v->brief, "%s", t.buf);
    sb_release(&t);
    if (d->why == POL_DENY_RULE && d->pattern)
        snprintf(v->pattern, sizeof v->pattern, "!%s", d->pattern);
}

int sbx_plan_decide_addr(void *ctx, const char *identity, const char *host,
                         const struct sockaddr *sa, int port, struct sbx_verdict *v)
{
    const struct sbx_plan *p = ctx;
    struct pol_decision d;
    char addr[POL_ADDR_TEXT_MAX];
    memset(v, 0, sizeof *v);
    /* Classes are the proxy's (never dialled, or the tests' allowance). */
    v->allowed =
        pol_egress_address(p->ruleset, identity, host, sa, (unsigned)port, POL_LOCAL_ANY, addr, &d);
    verdict_from(&d, v);
    if (!v->allowed) {
        strbuf t = SB_INIT;
        sb_addf(&t, "'%s' resolves to %s, %s", host, addr, v->rule);
        snprintf(v->rule, sizeof v->rule, "%.*s", (int)(sizeof v->rule - 1), t.buf);
        sb_release(&t);
    }
    return 0;
}

static const char *kind_label(enum sbx_mount_kind k)
{
    switch (k) {
    case SBX_MNT_RO_BIND:
        return "ro";
    case SBX_MNT_RW_BIND:
        return "rw";
    case SBX_MNT_TMPFS:
        return "tmpfs";
    case SBX_MNT_SCRATCH:
        return "scratch";
    case SBX_MNT_PROC:
        return "proc";
    case SBX_MNT_DEVPTS:
        return "devpts";
    case SBX_MNT_DEV:
        return "dev";
    case SBX_MNT_EMPTY_FILE:
        return "shadow";
    case SBX_MNT_EMPTY_DIR:
        return "shadow";
    case SBX_MNT_SYMLINK:
        return "link";
    case SBX_MNT_FILE:
        return "file";
    case SBX_MNT_DIR:
        return "dir";
    }
    return "?";
}

void sbx_plan_print(const struct sbx_plan *p, FILE *f, int full)
{
    if (p->mode == SBX_MODE_HOST || p->mode == SBX_MODE_HOST_ADVISORY) {
        sbx_i_print_host(p, f, full);
        return;
    }
    fprintf(f, "▶ sandboxing %s (run %s) — %s\n", p->harness_id, p->run_id, p->trust_detail);
    fprintf(f, "  posture: %s\n", p->posture_label);
    if (p->workspace_writable)
        fprintf(f, "  workspace: %s → " SBX_INSIDE_WORKSPACE " read-write (%s)\n", p->workspace,
                p->workspace_reason);
    else
        fprintf(f, "  workspace: %s → " SBX_INSIDE_WORKSPACE " read-only — %s\n", p->workspace,
                p->workspace_reason);
    if (p->mode == SBX_MODE_LOCKDOWN)
        fprintf(f, "  🔒 no host route, no internet — the only peer is the egress proxy\n");
    else
        fprintf(f,
                "  🛡 egress is routed through the AgentStack proxy; the direct route and host "
                "loopback stay reachable to a process that ignores HTTPS_PROXY\n");
    if (p->allow_local)
        fprintf(f, "  ⚠ AGENTSTACK_ALLOW_LOCAL_TARGETS is set: the proxy may dial loopback and "
                   "private addresses (for tests only)\n");
    if (full) {
        fprintf(f,
                "  identity: uid %u inside (uid %u outside), no capabilities, no-new-privs; "
                "seccomp and Landlock where the kernel has them\n",
                (unsigned)p->inner_uid, (unsigned)p->outer_uid);
        if (p->mode == SBX_MODE_LOCKDOWN)
            fprintf(f,
                    "  egress: http://%s:%d inside the sandbox's network namespace "
                    "(per-run token); %s\n",
                    p->proxy_host, p->proxy_port, p->policy_note);
        else
            fprintf(f, "  egress: http://127.0.0.1:<ephemeral> on the host (per-run token); %s\n",
                    p->policy_note);
        for (size_t i = 0; i < p->gateway_only_hosts.n; i++)
            fprintf(f, "  gateway-only host (refused direct): %s\n", p->gateway_only_hosts.v[i]);
        fprintf(f, "  mounts:\n");
        for (size_t i = 0; i < p->mounts.n; i++) {
            const struct sbx_mount *m = &p->mounts.v[i];
            fprintf(f, "    %-7s %s", kind_label(m->kind), m->dst);
            if (m->kind == SBX_MNT_SYMLINK)
                fprintf(f, " -> %s", m->src);
            else if (m->src && strcmp(m->src, m->dst) != 0)
                fprintf(f, " ← %s", m->src);
            fputc('\n', f);
        }
        strbuf c = SB_INIT;
        sbx_argv_display((const char *const *)p->argv.v, &c);
        fprintf(f, "  command: %s\n", c.buf);
        sb_release(&c);
    }
    if (p->toolset)
        fprintf(f, "  toolset: %s\n", p->toolset);
    if (p->gateway_routed) {
        fprintf(f, "  MCP tool calls routed through the gateway (tool policy enforced, calls "
                   "recorded)\n");
        fprintf(f, "  MCP servers run confined: each stdio server in a jail of its own (this "
                   "run's workspace view and write scope, a private home, egress only through "
                   "its proxy)\n");
        if (full) {
            strbuf u = SB_INIT;
            sbx_plan_face_url(p, 0, &u);
            fprintf(f,
                    "  gateway: %s (per-run token) → %s on the host, grant %s; config "
                    "%s (read-only)\n",
                    u.buf, SBX_GATEWAY_ENTRY, p->grant_path, p->gateway_config_inside);
            sb_release(&u);
        }
    } else if (p->trust == SBX_TRUST_TRUSTED && p->servers_declared)
        fprintf(f, "  %d MCP server(s) not routed (%s)\n", p->servers_declared,
                p->gateway_note ? p->gateway_note : "no gateway");
    else
        fprintf(f, "  no servers to route\n");
}
