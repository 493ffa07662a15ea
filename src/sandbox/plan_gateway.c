/*
 * The confined modes' gateway routing (docs/sandbox.md, "Gateway
 * routing"): part of sbx_plan_build.
 *
 * Why here: whether a trusted bundle's servers reach a sandboxed harness,
 * and with which frozen authority, is a plan decision like every other; the
 * executor (run.c) only starts what this decided. The authority is the
 * same grant a protected host run freezes (grant.h), so the gateway serving
 * the sandbox has exactly one way to learn what it may serve.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rand.h"
#include "base/xalloc.h"
#include "sandbox/plan_int.h"

/* A config path the sandbox home can hold: relative, no "..", no "//". */
static int rel_ok(const char *rel)
{
    if (!rel[0] || rel[0] == '/' || strstr(rel, "//"))
        return 0;
    for (const char *c = rel; *c;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        c += n + (e ? 1 : 0);
    }
    return 1;
}

/* Not routed: --sandbox proceeds with a note; --lockdown refuses. */
static int unrouted(struct sbx_plan *p, const char *why, struct as_err *err)
{
    if (p->mode == SBX_MODE_LOCKDOWN) {
        as_err_set(err,
                   "the bundle's MCP servers cannot be routed into the sandbox: %s; "
                   "refusing to start a lockdown run",
                   why);
        as_err_hint(err, "use --sandbox (servers not routed), or fix the adapter's mcp mapping");
        return -1;
    }
    p->gateway_note = xstrdup(why);
    return 0;
}

int sbx_i_plan_gateway(const struct sbx_plan_request *rq, struct sbx_plan *p,
                       const struct manifest *m, const char *digest, struct as_err *err)
{
    if (p->trust != SBX_TRUST_TRUSTED || !m || p->servers_declared <= 0)
        return 0;
    if (!rq->harness_has_mcp || !rq->gateway_config) {
        /* No MCP mapping: nothing to route into; the run proceeds. */
        p->gateway_note = xasprintf("%s has no MCP mapping", p->harness_id);
        return 0;
    }
    if (!rq->self_bin || access(rq->self_bin, X_OK) != 0)
        return unrouted(p, "the agentstack binary to serve the gateway was not found", err);
    if (rand_hex(p->face_token, 32, err) < 0)
        return -1;
    p->face_port = p->mode == SBX_MODE_LOCKDOWN ? SBX_LOCKDOWN_GATEWAY_PORT : 0;

    /* Render once now (the lockdown URL is final; --sandbox renders again
     * with the kernel's port) so an unmappable adapter is known at plan. */
    strbuf url = SB_INIT, rel = SB_INIT, text = SB_INIT;
    sbx_plan_face_url(p, 1, &url);
    struct as_err e = AS_ERR_INIT;
    int rc = 0;
    if (rq->gateway_config(rq->gateway_ctx, url.buf, p->face_token, &rel, &text, &e) < 0) {
        char b[2300];
        rc = unrouted(p, as_err_str(&e, b, sizeof b), err);
    } else if (!rel_ok(rel.buf)) {
        char *why = xasprintf("the adapter's MCP config %s is not inside the home", rel.buf);
        rc = unrouted(p, why, err);
        free(why);
    } else {
        p->gateway_config_rel = sb_detach(&rel, NULL);
        p->gateway_config_inside = xasprintf(SBX_INSIDE_HOME "/%s", p->gateway_config_rel);
    }
    explicit_bzero(text.buf, text.len);
    sb_release(&text);
    sb_release(&rel);
    sb_release(&url);
    if (rc < 0 || !p->gateway_config_rel) {
        explicit_bzero(p->face_token, sizeof p->face_token);
        return rc;
    }

    /* The fence: the selected toolset's servers (already in fence_servers),
     * else every declared server. Skills are not delivered into sandboxes. */
    if (!p->toolset)
        for (size_t i = 0; i < m->servers.n; i++)
            strvec_push(&p->fence_servers, m->servers.v[i].name);
    if (digest != p->consent_digest) {
        free(p->consent_digest);
        p->consent_digest = xstrdup(digest ? digest : "");
    }
    p->grant_path = xasprintf("%s/runs/%s/grant.json", p->home, p->run_id);
    strvec_push(&p->inject_argv, rq->self_bin);
    strvec_push(&p->inject_argv, "mcp");
    strvec_push(&p->inject_argv, "--grant");
    strvec_push(&p->inject_argv, p->grant_path);
    sbx_i_build_grant(p, m, p->toolset ? manifest_toolset(m, p->toolset) : NULL);
    /* Nothing started for a confined run runs outside it: the gateway jails
     * every stdio server with this run's workspace and write scope. */
    json_t *cf = json_object();
    json_object_set_new(cf, "workspace", json_string(p->workspace));
    json_object_set_new(cf, "writable", json_boolean(p->workspace_writable));
    json_object_set_new(cf, "lockdown", json_boolean(p->mode == SBX_MODE_LOCKDOWN));
    json_object_set_new(p->grant, "confine", cf);
    p->gateway_config_fn = rq->gateway_config;
    p->gateway_config_ctx = rq->gateway_ctx;
    p->gateway_routed = 1;
    return 0;
}
