/*
 * The stdio JSON-RPC server: framing, protocol eras (docs/gateway.md),
 * method routing, the roots exchange, cancellation, list_changed, and the
 * orderly shutdown on stdin EOF. Tool semantics live in control.c and
 * dispatch.c; this file only moves requests and replies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "bundle/home.h"
#include "gateway/control_ext.h"
#include "gateway/gw_int.h"

/* Versions initialize echoes; anything else gets the newest. */
static const char *const echo_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25",
                                            NULL};
/* What a stateless request may name, newest first. */
static const char *const supported_versions[] = {"2026-07-28", "2025-11-25", "2025-06-18",
                                                 "2025-03-26", NULL};

void gw_note(const char *fmt, ...)
{
    strbuf raw = SB_INIT, line = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&raw, fmt, ap);
    va_end(ap);
    sb_adds(&line, "gateway: ");
    gw_clean(raw.buf, raw.len, 0, &line);
    sb_addc(&line, '\n');
    ssize_t w = write(2, line.buf, line.len);
    (void)w;
    sb_release(&raw);
    sb_release(&line);
}

static bool in_list(const char *v, const char *const *list)
{
    for (size_t i = 0; v && list[i]; i++)
        if (strcmp(v, list[i]) == 0)
            return true;
    return false;
}

static json_t *version_array(void)
{
    json_t *a = json_array();
    for (size_t i = 0; supported_versions[i]; i++)
        json_array_append_new(a, json_string(supported_versions[i]));
    return a;
}

/* Where stdio stops the loop; an HTTP session (http_serve.c) is told
 * instead, and the loop goes on serving the others. */
static void gw_stop(struct gw *gw)
{
    if (gw->on_stop)
        gw->on_stop(gw);
    else
        mcp_loop_stop(gw->loop);
}

/* ---- output ---------------------------------------------------------------- */

static void send_json(struct gw *gw, json_t *msg /* stolen */)
{
    mcp_writer_send_json(&gw->w, msg);
    json_decref(msg);
}

void gw_set_dirty(struct gw *gw)
{
    gw->dirty = true;
}

static void flush_dirty(struct gw *gw)
{
    if (!gw->dirty)
        return;
    gw->dirty = false;
    send_json(gw, mcp_notification_new("notifications/tools/list_changed", NULL));
}

void gw_reply(struct gw *gw, struct job *j, json_t *result)
{
    if (j->on_result) {
        if (!j->replied)
            j->on_result(gw, j, result);
        else
            json_decref(result);
        j->replied = true;
        flush_dirty(gw);
        return;
    }
    if (j->via_http) {
        if (!j->replied && j->http)
            gw_cm_reply(gw, j, result);
        else
            json_decref(result);
        j->replied = true;
        flush_dirty(gw);
        return;
    }
    if (j->modern && json_is_object(result) && !json_object_get(result, "resultType"))
        json_object_set_new(result, "resultType", json_string("complete"));
    if (!j->cancelled && !j->replied)
        send_json(gw, mcp_result_new(j->id, result));
    else
        json_decref(result);
    j->replied = true;
    if (strcmp(j->method, "tools/list") == 0 || strcmp(j->method, "tools/call") == 0)
        flush_dirty(gw);
}

bool gw_reply_raw(struct gw *gw, struct job *j, const strbuf *members)
{
    if (j->via_http || !(json_is_integer(j->id) || json_is_string(j->id)))
        return false;
    if (!j->cancelled && !j->replied) {
        /* mcp_result_new's frame, key for key: jsonrpc, id, result. */
        strbuf f;
        sb_init(&f, members->len + 96);
        sb_adds(&f, "{\"jsonrpc\":\"2.0\",\"id\":");
        if (json_is_integer(j->id))
            mcp_json_int((long long)json_integer_value(j->id), &f);
        else
            mcp_json_str(json_string_value(j->id), json_string_length(j->id), &f);
        sb_adds(&f, ",\"result\":{");
        sb_add(&f, members->buf, members->len);
        if (j->modern)
            sb_adds(&f,
                    members->len ? ",\"resultType\":\"complete\"" : "\"resultType\":\"complete\"");
        sb_adds(&f, "}}");
        mcp_writer_send(&gw->w, f.buf, f.len);
        sb_release(&f);
    }
    j->replied = true;
    if (strcmp(j->method, "tools/list") == 0 || strcmp(j->method, "tools/call") == 0)
        flush_dirty(gw);
    return true;
}

void gw_reply_error(struct gw *gw, struct job *j, int code, const char *msg, json_t *data)
{
    if (j->on_result) {
        if (!j->replied)
            j->on_result(gw, j, NULL);
        if (data)
            json_decref(data);
        j->replied = true;
        return;
    }
    if (j->via_http) {
        if (!j->replied && j->http)
            gw_cm_reply(gw, j, NULL);
        if (data)
            json_decref(data);
        j->replied = true;
        return;
    }
    if (!j->cancelled && !j->replied)
        send_json(gw, mcp_error_new(j->id, code, msg, data));
    else if (data)
        json_decref(data);
    j->replied = true;
}

/* ---- jobs ------------------------------------------------------------------- */

static struct job *job_new(struct gw *gw, const struct mcp_msg *m, bool modern)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->gw = gw;
    j->id = json_deep_copy(m->id);
    j->method = xstrdup(m->method);
    j->params = m->params ? json_incref(m->params) : json_object();
    j->modern = modern;
    j->next = gw->jobs;
    if (gw->jobs)
        gw->jobs->prev = j;
    gw->jobs = j;
    return j;
}

struct job *gw_job_add(struct gw *gw, const char *method)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->gw = gw;
    j->method = xstrdup(method);
    j->params = json_object();
    j->next = gw->jobs;
    if (gw->jobs)
        gw->jobs->prev = j;
    gw->jobs = j;
    return j;
}

void gw_job_free(struct job *j)
{
    struct gw *gw = j->gw;
    if (j->prev)
        j->prev->next = j->next;
    else if (gw->jobs == j)
        gw->jobs = j->next;
    if (j->next)
        j->next->prev = j->prev;
    json_decref(j->id);
    json_decref(j->params);
    json_decref(j->args);
    json_decref(j->client_ptoken);
    free(j->method);
    free(j->execution);
    free(j->name);
    free(j->server);
    free(j->tool);
    if (j->sf)
        gw_surface_unref(j->sf);
    free(j);
    gw_maybe_finish(gw);
}

/* ---- methods ------------------------------------------------------------------ */

const char *gw_instructions(void)
{
    return "agentstack brokers this project's MCP servers behind one reviewed manifest, a "
           "local review gate and a machine policy. Proxied tools are named server__tool; "
           "find them with tools_search (a query, or entity=\"server__tool:tool\" for the "
           "input schema) and call them by that name with tools/call. Skills are not "
           "preloaded: see agentstack_list_loadable, then agentstack_load(name, reason) "
           "loads one on demand. agentstack_lease_open(profile) narrows this connection to "
           "one toolset. Every brokered call is policy-checked and recorded (argument "
           "digests, never values). Refusals say which rule or layer decided and what a "
           "person can change.";
}

static json_t *server_info(struct gw *gw)
{
    json_t *si = json_object();
    json_object_set_new(si, "name", json_string(GW_SERVER_NAME));
    json_object_set_new(si, "version", json_string(gw->o.version ? gw->o.version : "0"));
    return si;
}

static json_t *capabilities(struct gw *gw)
{
    json_t *tools = json_object();
    json_object_set_new(tools, "listChanged", json_true());
    json_t *caps = json_object();
    json_object_set_new(caps, "tools", tools);
    /* Upstream features (docs/gateway.md, "Resources, prompts and
     * completions"): only when some served upstream may offer them. */
    if (gw_caps_offered(gw, "resources"))
        json_object_set_new(caps, "resources", gw_nt_caps(gw, "resources"));
    if (gw_caps_offered(gw, "prompts"))
        json_object_set_new(caps, "prompts", gw_nt_caps(gw, "prompts"));
    if (gw_caps_offered(gw, "completions"))
        json_object_set_new(caps, "completions", json_object());
    if (gw_caps_offered(gw, "logging"))
        json_object_set_new(caps, "logging", json_object());
    return caps;
}

static void do_initialize(struct gw *gw, struct job *j)
{
    const char *asked = json_string_value(json_object_get(j->params, "protocolVersion"));
    const char *v = in_list(asked, echo_versions) ? asked : "2025-11-25";
    if (!in_list(asked, echo_versions))
        gw_note("client asked for protocol version '%s'; answering 2025-11-25",
                asked ? asked : "(none)");
    free(gw->negotiated);
    gw->negotiated = xstrdup(v);
    json_t *caps = json_object_get(j->params, "capabilities");
    gw->client_roots = json_object_get(caps, "roots") != NULL;
    /* A client without roots binds the project from env or cwd, as its first
     * request would: binding it now lets the answer say what the upstreams
     * may offer. A client with roots waits for them (nothing is advertised). */
    if (!gw->client_roots)
        gw_project_resolve(gw);
    json_t *r = json_object();
    json_object_set_new(r, "protocolVersion", json_string(v));
    json_object_set_new(r, "capabilities", capabilities(gw));
    json_object_set_new(r, "serverInfo", server_info(gw));
    json_object_set_new(r, "instructions", json_string(gw_instructions()));
    gw_reply(gw, j, r);
}

static void do_discover(struct gw *gw, struct job *j)
{
    json_t *r = json_object();
    json_object_set_new(r, "resultType", json_string("complete"));
    json_object_set_new(r, "supportedVersions", version_array());
    json_object_set_new(r, "capabilities", capabilities(gw));
    json_object_set_new(r, "instructions", json_string(gw_instructions()));
    json_object_set_new(r, "ttlMs", json_integer(0));
    json_object_set_new(r, "cacheScope", json_string("private"));
    json_t *meta = json_object();
    json_object_set_new(meta, "io.modelcontextprotocol/serverInfo", server_info(gw));
    json_object_set_new(r, "_meta", meta);
    gw_reply(gw, j, r);
}

static bool is_listing(const char *m)
{
    return strcmp(m, "resources/list") == 0 || strcmp(m, "resources/templates/list") == 0 ||
           strcmp(m, "prompts/list") == 0;
}

static enum gw_kind kind_of(const char *m)
{
    return strcmp(m, "resources/read") == 0          ? GW_KIND_RESOURCE
           : strcmp(m, "prompts/get") == 0           ? GW_KIND_PROMPT
           : strcmp(m, "completion/complete") == 0   ? GW_KIND_COMPLETE
           : strcmp(m, "resources/subscribe") == 0   ? GW_KIND_SUBSCRIBE
           : strcmp(m, "resources/unsubscribe") == 0 ? GW_KIND_UNSUBSCRIBE
                                                     : GW_KIND_TOOL;
}

/* Methods served once the project is bound (they wait for roots). */
static bool is_brokered(const char *m)
{
    return strcmp(m, "tools/list") == 0 || strcmp(m, "tools/call") == 0 || is_listing(m) ||
           kind_of(m) != GW_KIND_TOOL || strcmp(m, "logging/setLevel") == 0;
}

static void run_job(struct gw *gw, struct job *j)
{
    if (strcmp(j->method, "tools/list") == 0) {
        gw_tools_list(gw, j);
    } else if (strcmp(j->method, "tools/call") == 0) {
        gw_tools_call(gw, j);
    } else if (is_listing(j->method)) {
        gw_refresh(gw, j->modern, false); /* trust and machine changes, as tools/list */
        gw_res_list(gw, j);
    } else if (strcmp(j->method, "logging/setLevel") == 0) {
        gw_refresh(gw, j->modern, false);
        gw_set_level(gw, j);
    } else {
        gw_refresh(gw, j->modern, false); /* as tools/call: a re-gate is seen first */
        j->kind = kind_of(j->method);
        if (gw_res_target(gw, j) == 0)
            gw_dispatch(gw, j);
    }
}

/* ---- roots (auto mode) --------------------------------------------------------- */

static void unpark(struct gw *gw)
{
    gw->roots_pending = false;
    if (gw->roots_timer) {
        mcp_loop_timer_cancel(gw->loop, gw->roots_timer);
        gw->roots_timer = 0;
    }
    gw_project_resolve(gw);
    /* Jobs run in arrival order; a job may finish (and free) at once. */
    struct job **v = gw->parked.v;
    size_t n = gw->parked.n;
    gw->parked.v = NULL;
    gw->parked.n = gw->parked.cap = 0;
    for (size_t i = 0; i < n; i++)
        run_job(gw, v[i]);
    free(v);
}

static void roots_timeout(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw *gw = ctx;
    gw->roots_timer = 0;
    if (gw->roots_pending) {
        gw_note("the client did not answer roots/list within 1 s; discovering the project "
                "without it");
        unpark(gw);
    }
}

static void ask_roots(struct gw *gw)
{
    if (!gw->client_roots || !gw->o.auto_project || gw->o.manifest_dir || gw->proj.resolved ||
        gw->roots_pending)
        return;
    json_decref(gw->roots_req_id);
    gw->roots_req_id = json_sprintf("agentstack-roots-%ld", ++gw->next_client_id);
    send_json(gw, mcp_request_new(json_incref(gw->roots_req_id), "roots/list", NULL));
    gw->roots_pending = true;
    gw->roots_timer = mcp_loop_timer(gw->loop, GW_ROOTS_WAIT_MS, roots_timeout, gw);
}

static void on_response(struct gw *gw, const struct mcp_msg *m)
{
    if (!gw->roots_req_id || !json_equal(m->id, gw->roots_req_id))
        return;
    json_decref(gw->roots_req_id);
    gw->roots_req_id = NULL;
    if (!gw->roots_pending)
        return; /* late: the project was bound already; later roots are ignored */
    json_t *roots = json_object_get(m->result, "roots");
    if (json_is_array(roots))
        gw->roots_answer = json_incref(roots);
    gw_set_dirty(gw);
    unpark(gw);
}

/* ---- requests ------------------------------------------------------------------ */

static void fatal_first(struct gw *gw, const char *what)
{
    gw_note("refusing the connection: the first message must be ping, initialize or a "
            "request carrying the stateless _meta (got %s)",
            what);
    gw->exit_code = 1;
    gw->stdin_open = false;
    gw_stop(gw);
}

static void on_request(struct gw *gw, const struct mcp_msg *m)
{
    json_t *meta = json_object_get(m->params, "_meta");
    json_t *mv = json_object_get(meta, MCP_META_VERSION);
    bool has_caps = json_object_get(meta, MCP_META_CAPS) != NULL;
    if (!gw->first_seen) {
        gw->first_seen = true;
        bool ok = strcmp(m->method, "ping") == 0 || strcmp(m->method, "initialize") == 0 ||
                  (mv && has_caps);
        if (!ok) {
            fatal_first(gw, m->method);
            return;
        }
    }
    bool modern = false;
    struct job *j = job_new(gw, m, false);
    if (mv) {
        const char *v = json_string_value(mv);
        if (!in_list(v, supported_versions)) {
            json_t *data = json_object();
            json_object_set_new(data, "requested", v ? json_string(v) : json_null());
            json_object_set_new(data, "supported", version_array());
            gw_reply_error(gw, j, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version", data);
            gw_job_free(j);
            return;
        }
        if (!has_caps) {
            gw_reply_error(
                gw, j, MCP_INVALID_PARAMS,
                "Invalid params: _meta must carry " MCP_META_VERSION " and " MCP_META_CAPS, NULL);
            gw_job_free(j);
            return;
        }
        modern = mcp_version_is_modern(v);
    }
    j->modern = modern;
    const char *meth = m->method;
    if (strcmp(meth, "initialize") == 0) {
        do_initialize(gw, j);
    } else if (strcmp(meth, "ping") == 0) {
        if (modern)
            gw_reply_error(gw, j, MCP_METHOD_NOT_FOUND, "Method not found", NULL);
        else
            gw_reply(gw, j, json_object());
    } else if (strcmp(meth, "server/discover") == 0) {
        do_discover(gw, j);
    } else if (is_brokered(meth)) {
        if (gw->roots_pending) {
            vec_push(&gw->parked, j);
            return;
        }
        gw_project_resolve(gw);
        run_job(gw, j);
        return; /* run_job replies and frees, now or later */
    } else {
        gw_reply_error(gw, j, MCP_METHOD_NOT_FOUND, "Method not found", NULL);
    }
    gw_job_free(j);
}

static void on_notification(struct gw *gw, const struct mcp_msg *m)
{
    if (!gw->first_seen) {
        gw->first_seen = true;
        fatal_first(gw, m->method);
        return;
    }
    if (strcmp(m->method, "notifications/initialized") == 0) {
        ask_roots(gw);
    } else if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(m->params, "requestId");
        for (struct job *j = gw->jobs; j && rid; j = j->next) {
            if (!j->id || !json_equal(j->id, rid))
                continue;
            j->cancelled = true; /* no reply; a tools/call finishes and is audited */
            /* A resource, prompt or completion request is cancelled upstream
             * too (docs/gateway.md); its completion audits and frees j. */
            if (j->kind != GW_KIND_TOOL && j->up && j->up->client && j->handle)
                mcp_client_cancel(j->up->client, j->handle, "cancelled by the client");
            break;
        }
    }
}

static void on_line(void *ctx, enum mcp_line_kind kind, const char *data, size_t len,
                    const json_t *id)
{
    struct gw *gw = ctx;
    if (gw->exit_code || !gw->stdin_open)
        return;
    if (kind == MCP_LINE_OVERSIZE) {
        if (!gw->first_seen) {
            gw->first_seen = true;
            fatal_first(gw, "an oversized line");
            return;
        }
        gw_note("dropped a %zu-byte message over the 4 MiB line limit", len);
        send_json(gw, mcp_error_new(id, MCP_INVALID_REQUEST,
                                    "Invalid request: message exceeds the 4 MiB line limit", NULL));
        return;
    }
    struct mcp_msg m;
    json_t *reply = NULL;
    enum mcp_parse_status st = mcp_parse(data, len, &m, &reply);
    if (st == MCP_BLANK || st == MCP_NOT_JSON) {
        json_decref(reply); /* non-JSON lines are ignored */
        return;
    }
    if (st == MCP_UNREADABLE) {
        /* JSON all the same: its sender waits, so a request is answered
         * (with its id when readable) and the rest is said on stderr. */
        if (!gw->first_seen) {
            json_decref(reply);
            gw->first_seen = true;
            fatal_first(gw, "an unreadable message");
            return;
        }
        struct mcp_unreadable u;
        if (mcp_unreadable_read(data, len, &u) == 0) {
            gw_note("%s an unreadable %s from the client: %s", reply ? "answered" : "ignored",
                    reply          ? "message"
                    : u.has_method ? "notification"
                                   : "response",
                    u.why);
            mcp_unreadable_clear(&u);
        }
        if (reply)
            send_json(gw, reply);
        return;
    }
    if (st == MCP_INVALID) {
        if (!gw->first_seen) {
            json_decref(reply);
            gw->first_seen = true;
            fatal_first(gw, "an invalid message");
            return;
        }
        /* an error to an unusable request carries "id": null */
        json_t *e = mcp_error_new(NULL, MCP_INVALID_REQUEST, "Invalid request", NULL);
        json_decref(reply);
        send_json(gw, e);
        return;
    }
    if (m.kind == MCP_REQUEST)
        on_request(gw, &m);
    else if (m.kind == MCP_NOTIFICATION)
        on_notification(gw, &m);
    else if (!gw->first_seen) {
        gw->first_seen = true;
        fatal_first(gw, "a response");
    } else
        on_response(gw, &m);
    mcp_msg_clear(&m);
}

/* ---- shutdown ------------------------------------------------------------------- */

static void hard_stop(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw *gw = ctx;
    gw->hard_timer = 0;
    gw_stop(gw);
}

static void finish(struct gw *gw)
{
    if (gw->shutting_down)
        return;
    gw->shutting_down = true;
    if (gw->drain_timer)
        mcp_loop_timer_cancel(gw->loop, gw->drain_timer);
    gw->drain_timer = 0;
    /* Cancel what is still running: their completions free the jobs and
     * drop the last references to the surfaces. */
    size_t n = 0;
    for (struct job *j = gw->jobs; j; j = j->next)
        n++;
    struct job **v = xcalloc(n + 1, sizeof *v);
    n = 0;
    for (struct job *j = gw->jobs; j; j = j->next) {
        j->cancelled = true;
        v[n++] = j;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i]->up && v[i]->up->client && v[i]->handle)
            mcp_client_cancel(v[i]->up->client, v[i]->handle, "gateway shutting down");
        else if (is_listing(v[i]->method))
            gw_res_list_cancel(v[i]); /* may free v[i] */
    }
    free(v);
    gw_lease_release(gw);
    gw_cm_sync(gw); /* shutting down: the endpoint closes, endpoint.json goes */
    if (gw->cur)
        gw_surface_unref(gw->cur);
    gw->cur = NULL;
    if (gw->modern)
        gw_surface_unref(gw->modern);
    gw->modern = NULL;
    gw->hard_timer = mcp_loop_timer(gw->loop, GW_KILL_GRACE_MS + 1500, hard_stop, gw);
    if (gw->closing == 0 && !gw->jobs)
        gw_stop(gw);
}

static void drain_expired(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw *gw = ctx;
    gw->drain_timer = 0;
    gw_note("in-flight calls did not finish within 5 s of stdin closing; stopping");
    finish(gw);
}

void gw_maybe_finish(struct gw *gw)
{
    if (gw->shutting_down) {
        if (gw->closing == 0 && !gw->jobs)
            gw_stop(gw);
        return;
    }
    if (!gw->stdin_open && !gw->jobs && !gw->exit_code)
        finish(gw);
}

void gw_input(struct gw *gw, const char *frame, size_t len)
{
    on_line(gw, MCP_LINE, frame, len, NULL);
}

static void stdin_closed(struct gw *gw)
{
    if (!gw->stdin_open)
        return;
    gw->stdin_open = false;
    if (gw->roots_pending)
        unpark(gw);
    gw->drain_timer = mcp_loop_timer(gw->loop, GW_DRAIN_MS, drain_expired, gw);
    gw_maybe_finish(gw);
}

static void on_stdin(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)ev;
    struct gw *gw = ctx;
    enum mcp_read_status st = mcp_reader_read(&gw->rd, fd, on_line, gw);
    if (gw->exit_code)
        return;
    if (st != MCP_READ_AGAIN) {
        mcp_loop_del(loop, fd);
        stdin_closed(gw);
    }
}

/* Regular files and /dev/null cannot be polled: read them from a timer. */
static void on_stdin_timer(struct mcp_loop *loop, void *ctx)
{
    struct gw *gw = ctx;
    enum mcp_read_status st = mcp_reader_read(&gw->rd, gw->o.in_fd, on_line, gw);
    if (gw->exit_code)
        return;
    if (st != MCP_READ_AGAIN)
        stdin_closed(gw);
    else
        mcp_loop_timer(loop, 0, on_stdin_timer, gw);
}

static void on_write_error(void *ctx, int errnum)
{
    struct gw *gw = ctx;
    gw_note("stdout closed (%s); shutting down", strerror(errnum));
    if (gw->stdin_open) {
        mcp_loop_del(gw->loop, gw->o.in_fd);
        stdin_closed(gw);
    }
}

void gw_input_end(struct gw *gw)
{
    stdin_closed(gw);
}

void gw_shutdown(struct gw *gw)
{
    finish(gw);
}

/* SIGTERM/SIGINT/SIGHUP end the session like stdin EOF (drain, stop every
 * upstream group, exit 0); a second one stops without draining. */
static void on_signal(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)ev;
    struct gw *gw = ctx;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        gw_note("signal %u: shutting down", si.ssi_signo);
        if (gw->stdin_open) {
            mcp_loop_del(gw->loop, gw->o.in_fd);
            stdin_closed(gw);
        } else {
            finish(gw);
        }
    }
}

/* ---- serve ----------------------------------------------------------------------- */

void gw_teardown(struct gw *gw)
{
    if (gw->hard_timer)
        mcp_loop_timer_cancel(gw->loop, gw->hard_timer);
    gw->hard_timer = 0;
    if (gw->drain_timer)
        mcp_loop_timer_cancel(gw->loop, gw->drain_timer);
    gw->drain_timer = 0;
    if (gw->roots_timer)
        mcp_loop_timer_cancel(gw->loop, gw->roots_timer);
    gw->roots_timer = 0;
    gw_cm_free(gw); /* before the jobs: connections point at them */
    gw_execute_shutdown(gw);
    for (struct job *j = gw->jobs; j;) {
        struct job *n = j->next;
        j->next = j->prev = NULL;
        gw->jobs = n;
        json_decref(j->id);
        json_decref(j->params);
        json_decref(j->args);
        json_decref(j->client_ptoken);
        free(j->method);
        free(j->execution);
        free(j->name);
        free(j->server);
        free(j->tool);
        if (j->sf)
            gw_surface_unref(j->sf);
        free(j);
        j = n;
    }
    vec_free(&gw->parked);
    gw_nt_free(gw);
    if (gw->cur)
        gw_surface_unref(gw->cur);
    if (gw->modern)
        gw_surface_unref(gw->modern);
    gw_lease_release(gw);
    gw_project_free(gw);
    if (gw->grant) {
        gw_grant_free(gw->grant);
        free(gw->grant);
    }
    json_decref(gw->roots_req_id);
    json_decref(gw->roots_answer);
    free(gw->negotiated);
    free(gw->home);
    free(gw->run_id);
    free(gw->audit_lost);
    free(gw->audit_said);
    free(gw->modern_sel);
    strvec_clear(&gw->passthrough);
    strvec_clear(&gw->trail);
    mcp_writer_release(&gw->w);
    mcp_reader_release(&gw->rd);
}

int gw_setup(struct gw *gw, const struct gw_opts *o, struct mcp_loop *loop, struct as_err *err)
{
    gw->o = *o;
    gw->loop = loop;
    gw->pid = (long)getpid();
    gw->ino_fd = -1;
    gw->code_fd = -1;
    gw->last_state = -2;
    gw->max_result = GW_RESULT_MAX_DEFAULT;
    const char *sm = getenv("AGENTSTACK_STDIO_START_MS");
    gw->start_ms = sm && *sm ? atoi(sm) : GW_START_MS_DEFAULT;
    if (gw->start_ms <= 0)
        gw->start_ms = GW_START_MS_DEFAULT;
    const char *cm = getenv("AGENTSTACK_CALL_TIMEOUT_MS");
    gw->call_ms = cm && *cm ? atoi(cm) : GW_CALL_TIMEOUT_MS;
    if (gw->call_ms <= 0)
        gw->call_ms = GW_CALL_TIMEOUT_MS;
    const char *rid = getenv("AGENTSTACK_RUN_ID");
    gw->run_id = rid && *rid ? xstrdup(rid) : NULL;
    strbuf home = SB_INIT;
    if (home_dir(&home, err) < 0) {
        sb_release(&home);
        free(gw->run_id);
        gw->run_id = NULL;
        return -1;
    }
    gw->home = sb_detach(&home, NULL);
    gw->stdin_open = true;
    return 0;
}

void gw_start(struct gw *gw)
{
    const struct gw_opts *o = &gw->o;
    if (o->grant_path) {
        struct gw_grant *g = xcalloc(1, sizeof *g);
        struct as_err gerr = AS_ERR_INIT;
        if (gw_grant_open(gw->home, o->grant_path, g, &gerr) == 0) {
            gw->grant = g;
            if (!gw->run_id)
                gw->run_id = xstrdup(g->run_id);
        } else {
            free(g);
            gw->grant_refused = true;
            char *note = xasprintf("--grant refused: %s. Nothing is proxied on this connection "
                                   "(control plane only); start the run again with `agentstack "
                                   "run <cli> --locked`.",
                                   gerr.msg);
            gw_note("%s", note);
            gw->cur = gw_surface_gated(gw, GW_GATE_BROKEN, note);
            free(note);
        }
    }
    if (!o->auto_project || o->manifest_dir)
        gw_project_resolve(gw); /* eager: the set is built at startup, children lazy */
    gw_face_open(gw);           /* run --sandbox/--lockdown: the HTTP face, grant only */
}

int gw_serve(const struct gw_opts *o, struct as_err *err)
{
    struct gw gw = {0};
    struct mcp_loop *loop = mcp_loop_new(err);
    if (!loop)
        return 1;
    if (gw_setup(&gw, o, loop, err) < 0) {
        mcp_loop_free(loop);
        return 1;
    }
    gw_cm_sweep(gw.home); /* endpoint dirs of SIGKILLed gateways */
    mcp_loop_set_spin(gw.loop, GW_SPIN_US);
    int in_fl = fcntl(o->in_fd, F_GETFL);
    int out_fl = fcntl(o->out_fd, F_GETFL);
    if (in_fl >= 0)
        fcntl(o->in_fd, F_SETFL, in_fl | O_NONBLOCK);
    if (out_fl >= 0)
        fcntl(o->out_fd, F_SETFL, out_fl | O_NONBLOCK);
    mcp_reader_init(&gw.rd, MCP_STDIN_LINE_MAX);
    mcp_writer_init(&gw.w, gw.loop, o->out_fd, on_write_error, &gw);
    struct as_err aerr = AS_ERR_INIT;
    if (mcp_loop_add(gw.loop, o->in_fd, MCP_EV_IN, on_stdin, &gw, &aerr) < 0)
        mcp_loop_timer(gw.loop, 0, on_stdin_timer, &gw);
    sigset_t sigs, old_sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &old_sigs);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd >= 0 && mcp_loop_add(gw.loop, sfd, MCP_EV_IN, on_signal, &gw, &aerr) < 0) {
        close(sfd);
        sfd = -1;
    }
    gw_start(&gw);

    int rc = mcp_loop_run(gw.loop, err) < 0 ? 1 : 0;
    /* Whatever the reason the loop ended, upstream groups must not outlive us. */
    if (!gw.shutting_down && !gw.exit_code)
        finish(&gw);
    uint64_t until = mcp_now_ms() + 2000;
    while ((gw.closing || mcp_writer_pending(&gw.w)) && !gw.w.failed && mcp_now_ms() < until) {
        struct as_err e2 = AS_ERR_INIT;
        if (mcp_loop_run_once(gw.loop, 50, &e2) < 0)
            break;
    }
    gw_teardown(&gw);
    if (sfd >= 0) {
        mcp_loop_del(gw.loop, sfd);
        close(sfd);
    }
    sigprocmask(SIG_SETMASK, &old_sigs, NULL);
    mcp_loop_free(gw.loop);
    if (in_fl >= 0)
        fcntl(o->in_fd, F_SETFL, in_fl);
    if (out_fl >= 0)
        fcntl(o->out_fd, F_SETFL, out_fl);
    if (gw.exit_code)
        return gw.exit_code;
    return rc;
}
