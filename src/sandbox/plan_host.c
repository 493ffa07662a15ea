/* The host modes of the run plan (docs/sandbox.md): trust state, the gates
 * evaluated read-only, the toolset fence, the authority grant and the
 * native-config injection. Called only from sbx_plan_build (plan.c). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "policy/policy.h"
#include "sandbox/plan.h"
#include "sandbox/plan_int.h"
#include "trust/trust.h"

#define GRANT_VERSION 1

void sbx_i_toolset_hint(const struct manifest *m, struct as_err *err)
{
    strbuf names = SB_INIT;
    for (size_t i = 0; i < m->toolsets.n; i++)
        sb_addf(&names, "%s%s", i ? ", " : "", m->toolsets.v[i].name);
    if (names.len)
        as_err_hint(err, "toolsets here: %s", names.buf);
    sb_release(&names);
}

static void gate(struct sbx_plan *p, const char *name, int passed, const char *hint,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void gate(struct sbx_plan *p, const char *name, int passed, const char *hint,
                 const char *fmt, ...)
{
    strbuf d = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&d, fmt, ap);
    va_end(ap);
    struct sbx_gate g = {name, passed, sb_detach(&d, NULL), hint ? xstrdup(hint) : NULL};
    vec_push(&p->gates, g);
    if (!passed)
        p->blockers++;
}

/* The fence: the selected toolset's servers and skills, else the whole
 * bundle. "*" in a toolset's skills means the manifest's own [skills].
 * -1 + err on an unknown toolset. */
static int select_fence(struct sbx_plan *p, const struct manifest *m, const char *want,
                        const struct mf_toolset **out, struct as_err *err)
{
    const struct mf_toolset *ts = want ? manifest_toolset(m, want) : manifest_effective_toolset(m);
    *out = ts;
    if (want && !ts) {
        as_err_set(err, "no toolset '%s' in %s", want, m->path);
        sbx_i_toolset_hint(m, err);
        return -1;
    }
    if (!ts) {
        for (size_t i = 0; i < m->servers.n; i++)
            strvec_push(&p->fence_servers, m->servers.v[i].name);
        for (size_t i = 0; i < m->skills.n; i++)
            strvec_push(&p->fence_skills, m->skills.v[i].name);
        return 0;
    }
    p->toolset = xstrdup(ts->name);
    for (size_t i = 0; i < ts->servers.n; i++)
        if (strvec_find(&p->fence_servers, ts->servers.v[i]) < 0)
            strvec_push(&p->fence_servers, ts->servers.v[i]);
    for (size_t i = 0; i < ts->skills.n; i++) {
        if (strcmp(ts->skills.v[i], "*") == 0) {
            for (size_t k = 0; k < m->skills.n; k++)
                if (strvec_find(&p->fence_skills, m->skills.v[k].name) < 0)
                    strvec_push(&p->fence_skills, m->skills.v[k].name);
        } else if (strvec_find(&p->fence_skills, ts->skills.v[i]) < 0) {
            strvec_push(&p->fence_skills, ts->skills.v[i]);
        }
    }
    return 0;
}

static json_t *strmap_json(const mf_strmap *m)
{
    json_t *o = json_object();
    for (size_t i = 0; i < m->n; i++)
        json_object_set_new(o, m->v[i].key, json_string(m->v[i].value));
    return o;
}

static json_t *strvec_json(const strvec *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

/* A fenced server as the manifest declares it: ${REF}s stay references, so
 * no secret value is ever part of the grant. */
static json_t *server_json(const struct mf_server *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(s->type == MF_SERVER_HTTP ? "http" : "stdio"));
    if (s->url)
        json_object_set_new(o, "url", json_string(s->url));
    if (s->command)
        json_object_set_new(o, "command", json_string(s->command));
    if (s->args.n)
        json_object_set_new(o, "args", strvec_json(&s->args));
    if (s->cwd)
        json_object_set_new(o, "cwd", json_string(s->cwd));
    if (s->headers.n)
        json_object_set_new(o, "headers", strmap_json(&s->headers));
    if (s->env.n)
        json_object_set_new(o, "env", strmap_json(&s->env));
    return o;
}

/* locked-verify: every pin of the bundle that the fence delivers. Pins of
 * servers and skills outside the fence are not delivered by this run and
 * do not block it; every other kind (instructions, executables, settings,
 * extensions, workflows) does. */
static void gate_locked(struct sbx_plan *p, const struct manifest *m, const struct bundle_paths *bp,
                        const struct manifest_snapshot *snap)
{
    struct trust_pins pins;
    memset(&pins, 0, sizeof pins);
    struct as_err e = AS_ERR_INIT;
    if (trust_verify_pins(m, bp->lock, snap->lock.buf, snap->lock.len, snap->has_lock, p->home,
                          &pins, &e) < 0) {
        char b[2300];
        gate(p, "locked-verify", 0, "agentstack lock --write", "the pins could not be checked: %s",
             as_err_str(&e, b, sizeof b));
        return;
    }
    if (pins.lock_unreadable) {
        gate(p, "locked-verify", 0, "agentstack lock --write", "agentstack.lock cannot be read: %s",
             pins.lock_error ? pins.lock_error : "unreadable");
        trust_pins_free(&pins);
        return;
    }
    strbuf why = SB_INIT;
    size_t n = 0, checked = 0;
    for (size_t i = 0; i < pins.results.n; i++) {
        const struct trust_pin_result *r = &pins.results.v[i];
        const struct pin_item *it = r->item;
        if ((it->kind == PIN_SERVER && strvec_find(&p->fence_servers, it->name) < 0) ||
            (it->kind == PIN_SKILL && strvec_find(&p->fence_skills, it->name) < 0))
            continue;
        checked++;
        if (!r->blocks)
            continue;
        if (n++ < 3)
            sb_addf(&why, "%s%s", why.len ? "; " : "", r->message ? r->message : it->name);
    }
    if (n)
        gate(p, "locked-verify", 0,
             "review the change, then: agentstack lock --write && "
             "agentstack trust .",
             "%zu pin%s in the fence do%s not verify: %s%s", n, n == 1 ? "" : "s",
             n == 1 ? "es" : "", why.buf, n > 3 ? "; …" : "");
    else
        gate(p, "locked-verify", 1, NULL, "%zu item%s in the fence checked; %s", checked,
             checked == 1 ? "" : "s",
             snap->has_lock ? "every pin verifies against agentstack.lock"
                            : "no agentstack.lock and nothing that needs "
                              "a pin");
    sb_release(&why);
    trust_pins_free(&pins);
}

/* policy-admission: every fenced HTTP server's host classifiable and
 * allowed by [policy.egress] (port deferred to the gateway), every
 * ${REF} a fenced server reads allowed by [policy.secrets]. */
static void gate_policy(struct sbx_plan *p, const struct manifest *m)
{
    strbuf why = SB_INIT;
    size_t n = 0, servers = 0, refs_n = 0;
    for (size_t i = 0; i < p->fence_servers.n; i++) {
        const struct mf_server *s = manifest_server(m, p->fence_servers.v[i]);
        if (!s)
            continue; /* a library server: the gateway admits it on its own */
        servers++;
        if (s->type == MF_SERVER_HTTP) {
            char host[POL_HOST_MAX + 1];
            struct pol_decision d;
            if (!s->url || sbx_i_url_host(s->url, host) < 0) {
                if (n++ < 3)
                    sb_addf(&why, "%sserver '%s': the host of its url cannot be classified",
                            why.len ? "; " : "", s->name);
            } else if (!pol_egress(p->ruleset, s->name, host, 0, &d)) {
                strbuf t = SB_INIT;
                pol_decision_text(&d, &t);
                if (n++ < 3)
                    sb_addf(&why, "%sserver '%s' → %s: %s", why.len ? "; " : "", s->name, host,
                            t.buf);
                sb_release(&t);
            }
        }
        strvec refs = STRVEC_INIT;
        ref_server_refs(s, &refs);
        for (size_t k = 0; k < refs.n; k++) {
            struct pol_decision d;
            refs_n++;
            if (pol_secret(p->ruleset, s->name, refs.v[k], &d))
                continue;
            strbuf t = SB_INIT;
            pol_decision_text(&d, &t);
            if (n++ < 3)
                sb_addf(&why, "%sserver '%s' may not read ${%s}: %s", why.len ? "; " : "", s->name,
                        refs.v[k], t.buf);
            sb_release(&t);
        }
        strvec_clear(&refs);
    }
    if (n)
        gate(p, "policy-admission", 0, "agentstack policy explain", "%s%s", why.buf,
             n > 3 ? "; …" : "");
    else
        gate(p, "policy-admission", 1, NULL,
             "%zu server%s and %zu secret reference%s admitted "
             "by %s",
             servers, servers == 1 ? "" : "s", refs_n, refs_n == 1 ? "" : "s", p->policy_note);
    sb_release(&why);
}

static int load_ruleset(struct sbx_plan *p, const struct manifest *m, struct as_err *err)
{
    strbuf mpath = SB_INIT;
    if (pol_machine_path(&mpath, err) < 0)
        return -1;
    enum pol_machine_state state;
    struct pol_layer *machine = pol_machine_load(mpath.buf, &state, err);
    sb_release(&mpath);
    if (!machine)
        return -1;
    p->policy_note = xstrdup(state == POL_UNCONFIGURED ? "no machine policy (unconfigured)"
                                                       : "the machine policy");
    struct pol_layer *project = NULL;
    if (m && m->policy) {
        /* Project layers only narrow egress, secrets and tools; a refused
         * run never uses this ruleset anyway. */
        project = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, err);
        if (!project) {
            pol_layer_free(machine);
            return -1;
        }
    }
    p->ruleset = pol_compile(machine, project, getenv("HOME"), err);
    pol_layer_free(machine);
    pol_layer_free(project);
    return p->ruleset ? 0 : -1;
}

void sbx_i_build_grant(struct sbx_plan *p, const struct manifest *m, const struct mf_toolset *ts)
{
    json_t *g = json_object();
    json_object_set_new(g, "version", json_integer(GRANT_VERSION));
    json_object_set_new(g, "kind", json_string("agentstack-run-grant"));
    json_object_set_new(g, "run_id", json_string(p->run_id));
    json_object_set_new(g, "harness", json_string(p->harness_id));
    json_object_set_new(g, "project_root", json_string(p->project_root));
    json_object_set_new(g, "manifest_dir", json_string(m->manifest_dir));
    json_object_set_new(g, "manifest", json_string(m->path));
    json_object_set_new(g, "consent_digest", json_string(p->consent_digest));
    json_object_set_new(g, "toolset", p->toolset ? json_string(p->toolset) : json_null());
    json_t *fence = json_object();
    json_object_set_new(fence, "servers", strvec_json(&p->fence_servers));
    json_object_set_new(fence, "skills", strvec_json(&p->fence_skills));
    json_object_set_new(g, "fence", fence);
    json_t *servers = json_object();
    for (size_t i = 0; i < p->fence_servers.n; i++) {
        const struct mf_server *s = manifest_server(m, p->fence_servers.v[i]);
        if (s)
            json_object_set_new(servers, s->name, server_json(s));
    }
    json_object_set_new(g, "servers", servers);
    strbuf rs = SB_INIT;
    pol_ruleset_to_json(p->ruleset, &rs);
    json_t *rj = json_loadb(rs.buf, rs.len, 0, NULL);
    json_object_set_new(g, "ruleset", rj ? rj : json_null());
    sb_release(&rs);
    json_object_set_new(g, "argv", strvec_json(&p->argv));
    json_object_set_new(g, "binary", json_string(p->harness_host_bin));
    if (ts && ts->model)
        json_object_set_new(g, "model", json_string(ts->model));
    if (ts && ts->effort)
        json_object_set_new(g, "effort", json_string(ts->effort));
    p->grant = g;
}

/* The trust gate: only a reviewed, unchanged bundle passes. */
static void gate_trust(struct sbx_plan *p, int have_ts, const char *cwd)
{
    if (p->trust == SBX_TRUST_TRUSTED)
        gate(p, "trust", 1, NULL, "%s", p->trust_detail);
    else if (p->trust == SBX_TRUST_NO_PROJECT)
        gate(p, "trust", 0,
             "run it from a project, or without the gates: agentstack run <cli> "
             "--unprotected",
             "no agentstack project at or above %s — a protected run gates a reviewed bundle", cwd);
    else if (p->trust == SBX_TRUST_CHANGED)
        gate(p, "trust", 0, "review it: agentstack trust .",
             "project at %s changed since it was trusted. If you changed pinned inputs, run "
             "`agentstack lock --write` first — new pins re-gate trust.",
             p->project_root);
    else
        gate(p, "trust", 0, "review it, then: agentstack trust .",
             "project at %s is not "
             "trusted — %s",
             p->project_root ? p->project_root : cwd,
             have_ts ? "not reviewed on this machine" : p->trust_detail);
}

/* The gates on the bundle itself: its lock, its extensions, its policy
 * and the toolset's model and effort; each fails when nothing loads. */
static void gate_bundle(struct sbx_plan *p, const struct sbx_plan_request *rq,
                        const struct manifest *m, const struct bundle_paths *bp,
                        const struct manifest_snapshot *snap, const struct mf_toolset *tsel)
{
    if (m) {
        gate_locked(p, m, bp, snap);
        size_t ext = 0;
        for (size_t i = 0; i < m->extensions.n; i++)
            ext += strcmp(m->extensions.v[i].target, p->harness_id) == 0;
        if (ext)
            gate(p, "rendered-verify", 1, NULL,
                 "%zu extension%s for %s: pinned (locked-verify); "
                 "this build delivers no extension copies",
                 ext, ext == 1 ? "" : "s", p->harness_id);
        else
            gate(p, "rendered-verify", 1, NULL, "no extension copies to verify");
        gate_policy(p, m);
        if (tsel && tsel->harness && rq->harness_for && strcmp(tsel->harness, rq->harness_for))
            gate(p, "model-effort", 0, "run it with that harness, or pick another toolset",
                 "toolset '%s' is for harness '%s', not '%s'", tsel->name, tsel->harness,
                 rq->harness_for);
        else if (tsel && (tsel->model || tsel->effort))
            gate(p, "model-effort", 1, NULL,
                 "toolset '%s': model %s, effort %s (recorded in the "
                 "grant; the harness's own settings are not changed)",
                 tsel->name, tsel->model ? tsel->model : "unset",
                 tsel->effort ? tsel->effort : "unset");
        else
            gate(p, "model-effort", 1, NULL, "no model or effort is set by the %s",
                 tsel ? "toolset" : "bundle");
    } else {
        static const char *const skipped[] = {"locked-verify", "rendered-verify",
                                              "policy-admission", "model-effort"};
        for (size_t i = 0; i < 4; i++)
            gate(p, skipped[i], 0, NULL, "not checked: there is no loadable bundle");
    }
}

/* The mcp-injection gate: where (if anywhere) the harness's MCP config
 * gets the gateway's entry for the run. */
static void gate_injection(struct sbx_plan *p, const struct sbx_plan_request *rq)
{
    strbuf ipath = SB_INIT, iscope = SB_INIT, inote = SB_INIT;
    if (!rq->inject_resolve) {
        p->inject_note = xasprintf("%s has no MCP mapping — no servers to route", p->harness_id);
        gate(p, "mcp-injection", 1, NULL, "%s", p->inject_note);
    } else {
        struct as_err e = AS_ERR_INIT;
        if (rq->inject_resolve(rq->inject_ctx, p->project_root, &ipath, &iscope, &inote, &e) < 0) {
            char b[2300];
            gate(p, "mcp-injection", 0, e.hint[0] ? e.hint : NULL, "%s",
                 as_err_str(&e, b, sizeof b));
        } else if (ipath.len) {
            p->inject_path = xstrdup(ipath.buf);
            p->inject_scope = xstrdup(iscope.len ? iscope.buf : "project");
            gate(p, "mcp-injection", 1, NULL,
                 "%s (%s scope) gets the entry '%s' for the run; "
                 "servers agentstack rendered there are taken out until it ends",
                 p->inject_path, p->inject_scope, SBX_GATEWAY_ENTRY);
        } else {
            p->inject_note = xstrdup(inote.len ? inote.buf : "nothing to inject");
            gate(p, "mcp-injection", 1, NULL, "%s", p->inject_note);
        }
    }
    sb_release(&ipath);
    sb_release(&iscope);
    sb_release(&inote);
}

/* The last gates: the grant handed to the gateway entry (when there is
 * one), and a program and directory the run can start with. */
static void gate_launch(struct sbx_plan *p, const struct sbx_plan_request *rq)
{
    if (p->inject_path) {
        if (!rq->self_bin || access(rq->self_bin, X_OK) < 0) {
            gate(p, "grant-handoff", 0, NULL, "cannot name this binary for the gateway entry (%s)",
                 rq->self_bin ? strerror(errno) : "unknown path");
        } else {
            strvec_push(&p->inject_argv, rq->self_bin);
            strvec_push(&p->inject_argv, "mcp");
            strvec_push(&p->inject_argv, "--grant");
            strvec_push(&p->inject_argv, p->grant_path);
            strbuf c = SB_INIT;
            sbx_argv_display((const char *const *)p->inject_argv.v, &c);
            gate(p, "grant-handoff", 1, NULL, "the harness reaches the bundle only through: %s",
                 c.buf);
            sb_release(&c);
        }
    } else {
        gate(p, "grant-handoff", 1, NULL,
             "no MCP entry to hand the grant to; it is recorded "
             "with the run");
    }

    struct stat st;
    if (access(rq->harness_bin, X_OK) < 0)
        gate(p, "launch-scope", 0, NULL, "%s: %s", rq->harness_bin, strerror(errno));
    else if (stat(p->host_cwd, &st) < 0 || !S_ISDIR(st.st_mode))
        gate(p, "launch-scope", 0, NULL, "%s is not a directory", p->host_cwd);
    else
        gate(p, "launch-scope", 1, NULL, "%s at %s, own process group, AGENTSTACK_RUN_ID=%s",
             p->harness_host_bin, p->host_cwd, p->run_id);
}

int sbx_i_plan_host(const struct sbx_plan_request *rq, struct sbx_plan *p, struct as_err *err)
{
    struct bundle_paths bp = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    strbuf sb = SB_INIT;
    int rc = -1;
    char cwdbuf[PATH_MAX];
    const char *cwd = rq->cwd;

    p->harness_display = xstrdup(rq->harness_display ? rq->harness_display : rq->harness_id);
    /* declared before the first goto: the cleanup at out reads them */
    struct trust_status ts = {0};
    int have_ts = 0;
    if (home_dir(&sb, err) < 0)
        goto out;
    p->home = xstrdup(sb.buf);
    p->harness_host_bin = sbx_i_canon(rq->harness_bin);
    if (!p->harness_host_bin)
        p->harness_host_bin = xstrdup(rq->harness_bin);
    /* The program as found on PATH (argv[0] matters to multi-call
     * binaries), then the user's arguments verbatim: no shell. */
    strvec_push(&p->argv, rq->harness_bin);
    for (size_t i = 0; rq->args && rq->args[i]; i++)
        strvec_push(&p->argv, rq->args[i]);
    if (rq->prompt_arg > 0 && (size_t)rq->prompt_arg < p->argv.n)
        p->prompt_arg = rq->prompt_arg;
    if (!cwd) {
        if (!getcwd(cwdbuf, sizeof cwdbuf)) {
            as_err_errno(err, "getcwd");
            goto out;
        }
        cwd = cwdbuf;
    }
    if (discover_project(rq->manifest_dir, cwd, &bp, err) < 0)
        goto out;

    if (bp.found) {
        p->project_root = sbx_i_canon(bp.project_root);
        if (!p->project_root) {
            as_err_errno(err, "%s", bp.project_root);
            goto out;
        }
        p->host_cwd = xstrdup(p->project_root);
        sb_reset(&sb);
        discover_project_key(bp.base, &sb);
        p->session_key = xstrdup(sb.buf);
        p->manifest_path = xstrdup(bp.manifest);
        struct as_err e = AS_ERR_INIT;
        if (manifest_snapshot_read(&bp, &snap, &e) < 0 ||
            trust_check_snapshot(&bp, &snap, &ts, &e) < 0) {
            char b[2300];
            p->trust = SBX_TRUST_UNTRUSTED;
            p->trust_detail = xasprintf("UNTRUSTED — the bundle could not be read (%s)",
                                        as_err_str(&e, b, sizeof b));
        } else {
            have_ts = 1;
            p->consent_digest = xstrdup(ts.digest);
            if (ts.state == TRUST_TRUSTED) {
                p->trust = SBX_TRUST_TRUSTED;
                p->trust_detail = xasprintf("bundle trusted at %.19s…", ts.digest);
            } else if (ts.state == TRUST_CHANGED) {
                p->trust = SBX_TRUST_CHANGED;
                p->trust_detail = xstrdup("CHANGED — reviewed bytes changed since trust");
            } else {
                p->trust = SBX_TRUST_UNTRUSTED;
                p->trust_detail = xstrdup("UNTRUSTED — not reviewed on this machine");
            }
            m = manifest_load_snapshot(&bp, &snap, &e);
            if (!m && p->trust == SBX_TRUST_TRUSTED) {
                /* Trusted bytes that no longer load are not trusted here. */
                char b[2300];
                p->trust = SBX_TRUST_UNTRUSTED;
                free(p->trust_detail);
                p->trust_detail = xasprintf("UNTRUSTED — the manifest does not load (%s)",
                                            as_err_str(&e, b, sizeof b));
            }
        }
    } else {
        p->trust = SBX_TRUST_NO_PROJECT;
        p->trust_detail = xstrdup("no project — nothing to deliver");
        p->host_cwd = sbx_i_canon(cwd);
        if (!p->host_cwd) {
            as_err_errno(err, "%s", cwd);
            goto out;
        }
    }
    if (!p->consent_digest)
        p->consent_digest = xstrdup("");

    /* A broken machine policy refuses every path. */
    if (load_ruleset(p, m, err) < 0)
        goto out;

    const struct mf_toolset *tsel = NULL;
    if (m) {
        if (select_fence(p, m, rq->toolset, &tsel, err) < 0)
            goto out;
    } else if (rq->toolset && bp.found) {
        /* The manifest did not load: the toolset cannot be named, and the
         * trust gate below says why. */
        p->toolset = xstrdup(rq->toolset);
    } else if (rq->toolset) {
        as_err_set(err,
                   "--toolset %s needs a project: there is no agentstack manifest at or "
                   "above %s",
                   rq->toolset, cwd);
        goto out;
    }

    if (p->mode == SBX_MODE_HOST_ADVISORY) {
        rc = 0;
        goto out;
    }

    /* ---- the gates, in docs/sandbox.md's order ----------- */
    gate_trust(p, have_ts, cwd);

    gate_bundle(p, rq, m, &bp, &snap, tsel);

    p->grant_path = xasprintf("%s/runs/%s/grant.json", p->home, p->run_id);
    gate_injection(p, rq);

    if (m && p->ruleset) {
        sbx_i_build_grant(p, m, tsel);
        gate(p, "grant-freeze", 1, NULL, "%zu server%s, %zu skill%s (%s%s)", p->fence_servers.n,
             p->fence_servers.n == 1 ? "" : "s", p->fence_skills.n,
             p->fence_skills.n == 1 ? "" : "s", p->toolset ? "toolset " : "the whole bundle",
             p->toolset ? p->toolset : "");
    } else {
        gate(p, "grant-freeze", 0, NULL, "no grant: there is no loadable bundle");
    }

    gate_launch(p, rq);
    rc = 0;
out:
    if (have_ts)
        trust_status_release(&ts);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&bp);
    sb_release(&sb);
    return rc;
}

/* ---- display -------------------------------------------------------------------- */

/* The grant as --plan shows it: header and env values that are not
 * references are masked, and the ruleset is summarized. */
static void print_grant(const struct sbx_plan *p, FILE *f)
{
    json_t *g = json_deep_copy(p->grant);
    json_t *servers = json_object_get(g, "servers");
    const char *name;
    json_t *s;
    json_object_foreach(servers, name, s)
    {
        static const char *const maps[] = {"headers", "env"};
        for (size_t i = 0; i < 2; i++) {
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(s, maps[i]), k, v)
            {
                const char *val = json_string_value(v);
                if (val && !ref_has_ref(val))
                    json_string_set(v, "<redacted>");
            }
        }
    }
    strbuf rs = SB_INIT;
    pol_ruleset_to_json(p->ruleset, &rs);
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(rs.buf, rs.len, hex);
    char *sum =
        xasprintf("<compiled machine ∩ project policy, %zu bytes, sha256:%.12s…>", rs.len, hex);
    json_object_set_new(g, "ruleset", json_string(sum));
    free(sum);
    sb_release(&rs);
    char *text = json_dumps(g, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputs("  proposed grant:\n    ", f);
    for (const char *c = text; c && *c; c++) {
        fputc(*c, f);
        if (*c == '\n')
            fputs("    ", f);
    }
    fputc('\n', f);
    free(text);
    json_decref(g);
}

void sbx_i_print_host(const struct sbx_plan *p, FILE *f, int full)
{
    if (p->mode == SBX_MODE_HOST_ADVISORY) {
        fprintf(f, "▶ launching %s… (run %s)\n", p->harness_id, p->run_id);
        fprintf(f, "  posture: %s\n", p->posture_label);
        if (p->toolset)
            fprintf(f, "  toolset: %s — applied for the run\n", p->toolset);
        return;
    }
    if (full)
        fprintf(f,
                "▶ launching %s with --locked… — plan only: nothing is created (the run "
                "id below is not reserved)\n",
                p->harness_id);
    else
        fprintf(f, "▶ launching %s with --locked… (run %s)\n", p->harness_id, p->run_id);
    fprintf(f, "  posture: %s\n", p->posture_label);
    if (full) {
        fprintf(f, "  trust: %s\n", p->trust_detail);
        fprintf(f,
                "  mode: host — no isolation: the harness runs as you (uid %u) with your "
                "files and network; what agentstack delivers is gated and frozen\n",
                (unsigned)geteuid());
        fprintf(f, "  mounts: none (a host run)\n");
    }
    if (p->toolset)
        fprintf(f, "  toolset: %s — %zu server(s), %zu skill(s) frozen for the run\n", p->toolset,
                p->fence_servers.n, p->fence_skills.n);
    else if (p->grant)
        fprintf(f,
                "  toolset: the whole bundle — %zu server(s), %zu skill(s) frozen for the "
                "run\n",
                p->fence_servers.n, p->fence_skills.n);
    if (p->inject_path && p->inject_argv.n) {
        strbuf c = SB_INIT;
        sbx_argv_display((const char *const *)p->inject_argv.v, &c);
        fprintf(f, "  mcp: %s (%s scope) gets '%s' = %s for the run — reverted at exit\n",
                p->inject_path, p->inject_scope, SBX_GATEWAY_ENTRY, c.buf);
        sb_release(&c);
    } else if (p->inject_note) {
        fprintf(f, "  mcp: %s\n", p->inject_note);
    }
    if (!full)
        return;
    fprintf(f, "  gates:\n");
    for (size_t i = 0; i < p->gates.n; i++)
        fprintf(f, "    %s %s — %s\n", p->gates.v[i].passed ? "✓" : "✗", p->gates.v[i].name,
                p->gates.v[i].detail);
    if (p->grant)
        print_grant(p, f);
    strbuf c = SB_INIT;
    sbx_argv_display((const char *const *)p->argv.v, &c);
    fprintf(f, "  command: %s\n", c.buf);
    fprintf(f, "  cwd: %s\n", p->host_cwd);
    sb_release(&c);
    if (!p->blockers) {
        fprintf(f, "live launch would proceed\n");
        return;
    }
    fprintf(f, "a live `run %s --locked` would be REFUSED — %zu blocker(s):\n", p->harness_id,
            p->blockers);
    for (size_t i = 0; i < p->gates.n; i++)
        if (!p->gates.v[i].passed)
            fprintf(f, "  [%s] %s\n", p->gates.v[i].name, p->gates.v[i].detail);
}
