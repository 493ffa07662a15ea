/*
 * THE dispatch point (docs/gateway.md): every brokered "S__T" call passes here, in this
 * order, and so does every resources/read, prompts/get and completion/complete
 * (resources.c names their server and policy subject first; their refusals
 * are JSON-RPC errors with the same text). Nothing else in agentstack reaches an
 * upstream client with a request (listings are resources.c's and surface.c's):
 *   1. ownership / fence  — is S served by this surface? (else fence, re-gate
 *                            or unknown-tool answers; control-plane names
 *                            never get here: they contain no "__")
 *   2. trust anchor       — the digest the surface was built on is still the
 *                            trusted one (checked fresh)
 *   3. tool policy        — machine layer, then project, from the compiled
 *                            ruleset (decisions precompiled, no allocation)
 *   4. secrets            — a denied or unresolved ${REF} refuses before I/O
 *   5. upstream I/O       — lazy spawn (pins re-proved), call, forward
 * Every step that refuses writes its audit row; the upstream's answer is
 * audited after the reply is queued, so the audit never adds latency. A
 * call whose row could not be written is never brokered: before any
 * upstream I/O the call audit must be appendable (a regular file at its
 * path, not a symlink or a directory), and once an append has failed the
 * gateway brokers nothing more. (A
 * writer thread for the append was measured slower: its wake-ups cost more
 * than the append, issue 5.) A plain success is
 * forwarded from the upstream's bytes when the raw reader vouches for them
 * (forward_raw), with the same answer the parsed path gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/xalloc.h"
#include "gateway/gw_int.h"
#include "trust/trust.h"

int gw_audit_row(struct gw *gw, struct aud_call *c, strbuf *why)
{
    c->run = gw->run_id;
    c->pid = gw->pid;
    c->project = gw->proj.root;
    struct as_err err = AS_ERR_INIT;
    if (aud_call_append(gw->home, c, &err) == 0)
        return 0;
    if (why)
        sb_adds(why, err.msg);
    if (!gw->audit_lost) {
        /* A row is missing from the evidence: no further call is brokered. */
        gw->audit_lost = xstrdup(err.msg);
        gw_note("could not append to the call audit (%s); no further call is brokered by this "
                "gateway (restart it once the audit can be written)",
                err.msg);
    }
    return -1;
}

void gw_audit(struct gw *gw, const char *server, const char *tool, const char *digest,
              const char *outcome, const char *detail, const char *rule, const char *layer,
              long long ms)
{
    if (!gw->proj.found && strcmp(tool, "trust") != 0)
        return; /* no project: nothing brokered */
    struct aud_call c = {0};
    c.execution = gw->audit_execution;
    c.server = server;
    c.tool = tool;
    c.args_digest = digest ? digest : "";
    c.outcome = outcome;
    c.detail = detail;
    c.rule = rule;
    c.layer = layer;
    c.ms = ms;
    (void)gw_audit_row(gw, &c, NULL);
}

/* 0 when the call's audit row can be appended, else -1 with why: the row of
 * every brokered call is evidence, so a call whose row cannot be written is
 * refused before any upstream I/O (the stderr note is said once per
 * reason). */
int gw_audit_ready(struct gw *gw, strbuf *why)
{
    struct as_err err = AS_ERR_INIT;
    if (gw->audit_lost)
        sb_addf(why, "an earlier call's audit row could not be written (%s)", gw->audit_lost);
    else if (aud_call_ready(gw->home, &err) < 0)
        sb_addf(why, "the call audit cannot be written (%s)", err.msg);
    else
        return 0;
    if (!gw->audit_said || strcmp(gw->audit_said, why->buf) != 0) {
        free(gw->audit_said);
        gw->audit_said = xstrdup(why->buf);
        gw_note("refusing brokered calls: %s", why->buf);
    }
    return -1;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The audit row's "tool": a tool or "prompt:<name>" as called; a resource
 * read or a completion by its kind only, since a URI can carry values
 * (the args digest covers it). */
static const char *row_tool(const struct job *j)
{
    return j->kind == GW_KIND_RESOURCE      ? "resource"
           : j->kind == GW_KIND_COMPLETE    ? "completion"
           : j->kind == GW_KIND_SUBSCRIBE   ? "resource:subscribe"
           : j->kind == GW_KIND_UNSUBSCRIBE ? "resource:unsubscribe"
                                            : j->tool;
}

/* A refusal: a tool call's is an isError result; a resource, prompt or
 * completion request's is a JSON-RPC error with the same text. */
static void refused(struct gw *gw, struct job *j, json_t *result)
{
    if (j->kind == GW_KIND_TOOL) {
        gw_reply(gw, j, result);
        return;
    }
    const char *t = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    if (t && strncmp(t, "Error: ", 7) == 0)
        t += 7;
    gw_reply_error(gw, j, MCP_INVALID_PARAMS, t ? t : "refused", NULL);
    json_decref(result);
}

static void finish_refusal(struct gw *gw, struct job *j, json_t *result)
{
    refused(gw, j, result);
    gw_job_free(j);
}

static void unknown(struct gw *gw, struct job *j)
{
    if (j->kind != GW_KIND_TOOL) {
        strbuf n = SB_INIT, m = SB_INIT;
        gw_one_line(j->server ? j->server : "", 200, &n);
        sb_addf(&m, "Invalid params: no server '%s' is served on this connection", n.buf);
        gw_reply_error(gw, j, MCP_INVALID_PARAMS, m.buf, NULL);
        sb_release(&n);
        sb_release(&m);
        gw_job_free(j);
        return;
    }
    j->unknown = true;
    strbuf n = SB_INIT;
    gw_one_line(j->name, 200, &n);
    finish_refusal(gw, j, gw_error_result("unknown tool '%s'", n.buf));
    sb_release(&n);
}

static const char *regate_text(const char *why)
{
    if (strcmp(why, "revoked") == 0)
        return "trust for this project was revoked on this machine";
    if (strcmp(why, "unreadable") == 0)
        return "its trust state cannot be read, so it fails closed";
    return "the project's manifest, local overlay or lock changed since it was trusted";
}

/* The first toolset that lists server S, or NULL. */
static const char *toolset_with(const struct manifest *m, const char *s)
{
    for (size_t i = 0; m && i < m->toolsets.n; i++)
        if (strvec_find(&m->toolsets.v[i].servers, s) >= 0)
            return m->toolsets.v[i].name;
    return NULL;
}

static void regate_refusal(struct gw *gw, struct job *j, const char *why)
{
    if (strcmp(why, "ended") == 0 && gw->grant) {
        json_t *r = gw_error_result("blocked: %s tried to call %s — run %s has ended (its "
                                    "process is gone): a grant does not outlive its run\nnothing "
                                    "ran · start the run again with `agentstack run <cli> "
                                    "--locked`",
                                    j->server, j->tool, gw->grant->run_id);
        gw_audit(gw, j->server, "trust", "", "denied", "run-ended", NULL, NULL, 0);
        finish_refusal(gw, j, r);
        return;
    }
    json_t *r = gw_error_result("blocked: %s tried to call %s on an already-open connection "
                                "— %s\nnothing ran · review it and run `agentstack trust %s`, "
                                "then reopen the lease or restart the MCP connection",
                                j->server, j->tool, regate_text(why), gw->proj.dir);
    gw_audit(gw, j->server, "trust", "", "denied", why, NULL, NULL, 0);
    finish_refusal(gw, j, r);
}

/* What a brokered result keeps of the upstream's, in this order. */
static const char *const keep[] = {"content", "structuredContent", "isError", "_meta", NULL};

static void forward_parsed(struct gw *gw, struct job *j, const json_t *result)
{
    json_t *fwd = json_object();
    for (size_t i = 0; keep[i]; i++) {
        json_t *v = json_object_get(result, keep[i]);
        if (v)
            json_object_set(fwd, keep[i], v);
    }
    if (!json_object_get(fwd, "content"))
        json_object_set_new(fwd, "content", json_array());
    mcp_result_for_version(fwd, j->modern ? MCP_VERSION_MODERN : gw->negotiated);
    json_t *capped = gw_result_cap(fwd, (size_t)gw->max_result);
    json_decref(fwd);
    gw_reply(gw, j, capped);
}

/* The same answer as forward_parsed, spliced from the upstream's bytes
 * (vouched for by mcp_raw_response: valid, no duplicate keys, no reals):
 * the kept members in the same order, "content": [] when absent. false when
 * that would not be the same answer, and forward_parsed decides: a block the
 * client's revision lacks, a result near the cap (the parsed path cuts it
 * on its serialized size, which the raw bytes bound from above: jansson
 * never prints an integer or string longer than it was written), or a reply
 * that does not go to stdout. */
static bool forward_raw(struct gw *gw, struct job *j, const char *res, size_t len)
{
    if (j->via_http || len > (size_t)gw->max_result)
        return false;
    struct mcp_member m[MCP_RAW_KEYS];
    struct mcp_span all = {res, len};
    int n = mcp_raw_members(all, m, MCP_RAW_KEYS);
    if (n < 0)
        return false;
    struct mcp_span content = mcp_raw_get(m, (size_t)n, "content");
    if (!mcp_raw_content_unchanged(content, j->modern ? MCP_VERSION_MODERN : gw->negotiated))
        return false;
    strbuf out;
    sb_init(&out, len + 16);
    for (size_t i = 0; keep[i]; i++) {
        struct mcp_span v = mcp_raw_get(m, (size_t)n, keep[i]);
        if (!v.p)
            continue;
        if (out.len)
            sb_addc(&out, ',');
        sb_addc(&out, '"');
        sb_adds(&out, keep[i]);
        sb_add(&out, "\":", 2);
        sb_add(&out, v.p, v.n);
    }
    if (!content.p)
        sb_adds(&out, out.len ? ",\"content\":[]" : "\"content\":[]");
    bool ok = gw_reply_raw(gw, j, &out);
    sb_release(&out);
    return ok;
}

static void on_called(void *ctx, const struct mcp_reply *rep)
{
    struct job *j = ctx;
    struct gw *gw = j->gw;
    gw->audit_execution = j->execution; /* reset below, before the job goes */
    long long ms = (long long)((now_us() - j->t0) / 1000u);
    j->handle = 0;
    /* The row is written before the reply leaves: a client that has the
     * result can rely on its evidence being on disk (docs/audit.md). */
    if (rep->status == MCP_OK && j->kind != GW_KIND_TOOL) {
        gw_res_forward(gw, j, rep->result, ms);
    } else if (rep->status == MCP_OK) {
        gw_audit(gw, j->server, j->tool, j->digest, "ok", NULL, NULL, NULL, ms);
        if (rep->raw && !forward_raw(gw, j, rep->raw, rep->raw_len)) {
            json_t *r = mcp_raw_tree(rep->raw, rep->raw_len); /* NULL only without memory */
            forward_parsed(gw, j, r);
            json_decref(r);
        } else if (!rep->raw) {
            forward_parsed(gw, j, rep->result);
        }
    } else if (rep->status == MCP_E_REFUSED) {
        /* The address check refused every address (egress.c): a policy
         * refusal, with its reason and an egress row, not an upstream error. */
        struct gw_up *up = j->up;
        gw_audit(gw, j->server, "egress", "", "denied", rep->message,
                 up && up->refused_rule[0] ? up->refused_rule : NULL,
                 up && up->refused_layer && up->refused_layer[0] ? up->refused_layer : NULL, 0);
        refused(gw, j,
                gw_error_result("blocked: %s tried to call %s — not connecting: %s\nnothing ran",
                                j->server, j->tool, rep->message));
    } else {
        const char *cls;
        switch (rep->status) {
        case MCP_E_TIMEOUT:
            cls = "timeout";
            break;
        case MCP_E_SPAWN:
            cls = "spawn-failed";
            break;
        case MCP_E_HTTP:
            cls = "http-error";
            break;
        case MCP_E_CANCELLED:
            cls = "cancelled";
            break;
        default:
            cls = "upstream-error";
            /* The agent sees the class only; the cause, never
             * upstream-authored text (mcp.h), goes to stderr. */
            gw_note("upstream '%s': calling %s failed: %s (%s)", j->server, j->tool,
                    mcp_status_name(rep->status), rep->message);
            break;
        }
        gw_audit(gw, j->server, row_tool(j), j->digest, "error", cls, NULL, NULL, ms);
        if (j->kind == GW_KIND_TOOL) {
            gw_reply(gw, j, gw_error_result("contacting %s failed (%s)", j->server, cls));
        } else {
            /* The upstream's error code (a JSON-RPC server error such as
             * "resource not found") is kept; its text is not (mcp.h). */
            json_t *code = json_object_get(rep->error, "code");
            long long c = json_is_integer(code) ? json_integer_value(code) : 0;
            strbuf m = SB_INIT;
            sb_addf(&m, "contacting %s failed (%s)", j->server, cls);
            gw_reply_error(gw, j, c >= -32099 && c <= -32000 ? (int)c : MCP_INTERNAL_ERROR, m.buf,
                           NULL);
            sb_release(&m);
        }
    }
    gw->audit_execution = NULL;
    gw_job_free(j);
}

static void dispatch_call(struct gw *gw, struct job *j);

void gw_audit_result(struct gw *gw, struct job *j, const char *outcome, const char *detail,
                     const char *result_digest, long long ms)
{
    struct aud_call c = {0};
    c.execution = gw->audit_execution;
    c.server = j->server;
    c.tool = row_tool(j);
    c.args_digest = j->digest;
    c.result_digest = result_digest;
    c.outcome = outcome;
    c.detail = detail;
    c.ms = ms;
    (void)gw_audit_row(gw, &c, NULL);
}

void gw_dispatch(struct gw *gw, struct job *j)
{
    /* Every row written while this call is decided names its execution
     * (tools_execute's inner calls); the job may be gone on return. */
    char *execution = j->execution ? xstrdup(j->execution) : NULL;
    gw->audit_execution = execution;
    dispatch_call(gw, j);
    gw->audit_execution = NULL;
    free(execution);
}

/* Step 1's answer for a server this surface does not serve: a re-gate, a
 * skipped server, a fence, a broken surface, or unknown. Replies and frees. */
static void refuse_unserved(struct gw *gw, struct job *j, struct gw_surface *sf)
{
    if (sf->gate == GW_GATE_REGATED && strvec_find(&sf->prior, j->server) >= 0) {
        regate_refusal(gw, j, sf->regate_why ? sf->regate_why : "changed");
        return;
    }
    for (size_t i = 0; sf->gate == GW_GATE_OPEN && i < sf->skipped.n; i++) {
        const struct gw_skip *k = &sf->skipped.v[i];
        if (strcmp(k->name, j->server) != 0)
            continue;
        json_t *r = gw_error_result("blocked: %s tried to call %s — the server is not "
                                    "served: %s\nnothing ran",
                                    j->server, j->tool, k->why);
        gw_audit(gw, j->server, k->family, "", "denied", k->why, NULL, NULL, 0);
        finish_refusal(gw, j, r);
        return;
    }
    /* Declared: inline, or taken from the library by some toolset. */
    bool declared = sf->gate == GW_GATE_OPEN &&
                    (manifest_server(sf->m, j->server) || toolset_with(sf->m, j->server));
    if (declared && gw->grant) {
        json_t *r = gw_error_result("blocked: %s tried to call %s — the frozen grant of run "
                                    "%s does not admit this server\nnothing ran · a new "
                                    "run with a toolset that selects it would",
                                    j->server, j->tool, gw->grant->run_id);
        strbuf d = SB_INIT;
        sb_addf(&d, "fenced: run %s's grant does not admit %s", gw->grant->run_id, j->server);
        gw_audit(gw, j->server, "fence", "", "denied", d.buf, NULL, NULL, 0);
        sb_release(&d);
        finish_refusal(gw, j, r);
        return;
    }
    if (declared && (sf->fenced || sf->toolset)) {
        const char *ts = toolset_with(sf->m, j->server);
        strbuf fix = SB_INIT;
        if (ts)
            sb_addf(&fix,
                    "open a lease for the toolset that selects it: "
                    "`agentstack_lease_open` profile=%s",
                    ts);
        else
            sb_adds(&fix, "no toolset selects it yet; a person adds it to one in the "
                          "manifest");
        json_t *r = gw_error_result(
            "blocked: %s tried to call %s — this project fences its servers behind "
            "toolsets, and no open lease selects one that exposes it\nnothing ran · %s",
            j->server, j->tool, fix.buf);
        strbuf d = SB_INIT;
        sb_addf(&d, "fenced: no open lease selects %s", j->server);
        gw_audit(gw, j->server, "fence", "", "denied", d.buf, NULL, NULL, 0);
        sb_release(&d);
        sb_release(&fix);
        finish_refusal(gw, j, r);
        return;
    }
    if (sf->gate == GW_GATE_BROKEN && gw->proj.found) {
        finish_refusal(gw, j,
                       gw_error_result("blocked: %s tried to call %s — %s\nnothing ran", j->server,
                                       j->tool, sf->note ? sf->note : ""));
        return;
    }
    unknown(gw, j); /* untrusted or undeclared: no audit row */
}

static void dispatch_call(struct gw *gw, struct job *j)
{
    /* A resource, prompt or completion request arrives with server and
     * subject already taken from its params (gw_res_target). */
    if (j->kind == GW_KIND_TOOL) {
        strbuf S = SB_INIT, T = SB_INIT;
        if (!gw_split(j->name, &S, &T) || !gw_tool_name_ok(T.buf)) {
            sb_release(&S);
            sb_release(&T);
            unknown(gw, j);
            return;
        }
        j->server = sb_detach(&S, NULL);
        j->tool = sb_detach(&T, NULL);
    }
    struct gw_surface *sf = gw_surface_for(gw, j->modern);

    /* 1. ownership / fence */
    struct gw_up *up = sf->gate == GW_GATE_OPEN ? gw_surface_up(sf, j->server) : NULL;
    if (!up) {
        refuse_unserved(gw, j, sf);
        return;
    }

    /* 2. trust anchor */
    if (sf->has_anchor) {
        const char *why = NULL;
        if (gw->last_state == -1)
            why = "unreadable";
        else if (gw->last_state == TRUST_UNTRUSTED)
            why = "revoked";
        else if (gw->last_state != TRUST_TRUSTED || strcmp(gw->last_digest, sf->anchor) != 0)
            why = "changed";
        if (why) {
            regate_refusal(gw, j, why);
            return;
        }
    }

    /* 3. tool policy: machine first, then project (one compiled decision) */
    struct pol_decision d;
    if (!pol_tool(sf->rs, j->server, j->tool, &d)) {
        aud_args_digest(gw->home, j->args, j->digest);
        strbuf why = SB_INIT, rule = SB_INIT;
        pol_decision_text(&d, &why);
        if (d.why == POL_DENY_RULE && d.pattern)
            sb_addf(&rule, "!%s", d.pattern);
        else if (d.why == POL_NOT_ALLOWLISTED)
            for (size_t i = 0; i < d.n_allow; i++)
                sb_addf(&rule, "%s%s", i ? ", " : "", d.allowlist[i]);
        else if (d.pattern)
            sb_adds(&rule, d.pattern);
        json_t *r = gw_error_result("blocked: %s tried to call %s — %s\n  nothing ran · "
                                    "allow it in [policy.tools] if you meant to, or ask the "
                                    "agent for a different tool",
                                    j->server, j->tool, why.buf);
        gw_audit(gw, j->server, row_tool(j), j->digest, "denied", why.buf,
                 rule.len ? rule.buf : NULL, pol_by_name(d.by), 0);
        refused(gw, j, r);
        sb_release(&why);
        sb_release(&rule);
        gw_job_free(j);
        return;
    }

    /* 4. secrets */
    if (up->denied.n) {
        aud_args_digest(gw->home, j->args, j->digest);
        struct pol_decision sd;
        pol_secret(sf->rs, j->server, up->denied.v[0], &sd);
        strbuf why = SB_INIT, rule = SB_INIT;
        pol_decision_text(&sd, &why);
        if (sd.pattern)
            sb_addf(&rule, "%s%s", sd.why == POL_DENY_RULE ? "!" : "", sd.pattern);
        json_t *r = gw_error_result("blocked: server '%s' may not read ${%s} — %s\nnothing ran",
                                    j->server, up->denied.v[0], why.buf);
        gw_audit(gw, j->server, row_tool(j), j->digest, "denied", why.buf,
                 rule.len ? rule.buf : NULL, pol_by_name(sd.by), 0);
        refused(gw, j, r);
        sb_release(&why);
        sb_release(&rule);
        gw_job_free(j);
        return;
    }
    if (up->unresolved.n) {
        aud_args_digest(gw->home, j->args, j->digest);
        strbuf refs = SB_INIT;
        for (size_t i = 0; i < up->unresolved.n; i++)
            sb_addf(&refs, "%s${%s}", i ? ", " : "", up->unresolved.v[i]);
        json_t *r =
            gw_error_result("%s: cannot call '%s' — %zu secret(s) did not resolve on "
                            "this machine: %s.%s",
                            j->server, j->tool, up->unresolved.n, refs.buf,
                            up->unresolved_hint ? " Set it with `agentstack secret set`." : "");
        gw_audit(gw, j->server, row_tool(j), j->digest, "error", "unresolved-secret", NULL, NULL,
                 0);
        refused(gw, j, r);
        sb_release(&refs);
        gw_job_free(j);
        return;
    }

    /* 5. upstream I/O, once its audit row is known to be writable */
    strbuf why = SB_INIT;
    if (gw_audit_ready(gw, &why) < 0) {
        json_t *r = gw_error_result("blocked: %s tried to call %s — %s\nnothing ran · fix it "
                                    "(`agentstack audit --verify` names the file), then call "
                                    "again",
                                    j->server, j->tool, why.buf);
        refused(gw, j, r);
        sb_release(&why);
        gw_job_free(j);
        return;
    }
    int ensured = gw_code_recheck(up, &why) < 0 ? -1 : gw_up_ensure(up, &why);
    if (ensured == -2) {
        /* Must run confined and cannot be: never on the host instead. */
        json_t *r =
            gw_error_result("blocked: %s tried to call %s — %s must run confined (%s) "
                            "and cannot be: %s\nnothing ran · there is no host "
                            "fallback",
                            j->server, j->tool, j->server, gw_isolation_name(up->iso), why.buf);
        strbuf detail = SB_INIT;
        sb_addf(&detail, "spawn-failed: cannot be confined: %s", why.buf);
        gw_audit(gw, j->server, row_tool(j), "", "error", detail.buf, NULL, NULL, 0);
        sb_release(&detail);
        refused(gw, j, r);
        sb_release(&why);
        gw_job_free(j);
        return;
    }
    if (ensured < 0) {
        json_t *r = gw_error_result("blocked: %s tried to call %s — %s\nnothing ran · review "
                                    "it, run `agentstack lock --write`, then `agentstack trust "
                                    "%s`",
                                    j->server, j->tool, why.buf, gw->proj.dir);
        gw_audit(gw, j->server, "pin", "", "denied", why.buf, NULL, NULL, 0);
        refused(gw, j, r);
        sb_release(&why);
        gw_job_free(j);
        return;
    }
    sb_release(&why);
    j->sf = sf;
    gw_surface_ref(sf);
    j->up = up;
    j->t0 = now_us();
    int budget = up->http ? GW_HTTP_TIMEOUT_MS : gw->call_ms;
    json_t *meta = j->kind == GW_KIND_TOOL ? gw_progress_meta(gw, j) : NULL;
    if (meta) {
        /* The client's progress token, swapped for ours (notify.c). */
        json_t *p = json_object();
        json_object_set_new(p, "name", json_string(j->tool));
        json_object_set_new(p, "arguments",
                            json_is_object(j->args) ? json_deep_copy(j->args) : json_object());
        json_object_set_new(p, "_meta", meta);
        j->handle = mcp_client_request(up->client, "tools/call", p, budget, on_called, j);
    } else if (j->kind == GW_KIND_TOOL)
        j->handle = mcp_client_call_tool_raw(up->client, j->tool, j->args, budget, on_called, j);
    else {
        aud_args_digest(gw->home, j->args, j->digest); /* j may be gone on return */
        j->handle = mcp_client_request(up->client, gw_res_method(j), gw_res_params(gw, j), budget,
                                       on_called, j);
        return;
    }
    /* The keyed digest is only for the audit row: computed once the request
     * is on its way (the answer cannot arrive before we return). */
    aud_args_digest(gw->home, j->args, j->digest);
}
