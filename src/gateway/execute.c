/*
 * tools_execute (docs/tools-execute.md): one bounded TypeScript program,
 * confined (sandbox/executor.h), that reaches only the exact tools its
 * request grants, through a relay that hands every call to gw_dispatch.
 *
 * Why: generated code may compose tools but must not inherit the machine.
 * The gateway is the only party the program can talk to, and it answers
 * with the same dispatch (fence, trust anchor, policy, secrets, audit) as a
 * direct tools/call, so the program gains nothing a client lacks.
 *
 * Guarantees:
 *  - Listed, and callable, only while the machine manifest sets
 *    `[experimental] tools_execute = true` (read fresh for every listing
 *    and call); otherwise a call answers the fixed disabled text.
 *  - Order: enablement, trust (an untrusted or changed project refuses
 *    before anything is created), the request (exec_request.h), the
 *    machine's limits and the runtime (>= 22.15, probed confined), then
 *    staging under $AGENTSTACK_HOME/runs/<x-id>/executor/ and the start.
 *    Any missing piece answers runtime-unavailable and runs nothing.
 *  - The relay (JSON lines <= 1 MiB, at most 8 connections) checks the
 *    token in constant time, the exact grant, the call ceiling, then
 *    dispatches; every inner call's audit row names the x-… id.
 *  - The program ends at its timeout, at its output cap (stdout + stderr),
 *    on cancellation or gateway exit — its whole PID namespace with it —
 *    and its staging is removed whatever the outcome.
 *  - Every execution that got its id ends with one row of its own in the
 *    call audit (outcome, limit, duration, inner calls, output and result
 *    sizes, SHA-256 of the code; never a value), appended before the answer
 *    leaves. No execution starts while that audit cannot be appended, and
 *    an answer whose row could not be is withheld (docs/audit.md).
 *  - The answer is {result, calls, durationMs, stdoutBytes, stderrBytes}
 *    or one fixed `Error [<category>]: …` line; nothing the program
 *    printed is repeated but an error code limited to [A-Za-z0-9_-].
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/fs.h"
#include "base/rand.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "gateway/exec_guest.h"
#include "gateway/exec_request.h"
#include "gateway/gw_int.h"
#include "sandbox/executor.h"

#define RELAY_FRAME_MAX (1024u * 1024u)
#define RELAY_CONNS_MAX 8
#define ERR_HEAD_MAX 8192
#define CANCEL_TICK_MS 200

struct relay_conn {
    struct gw_exec *x;
    int fd;
    strbuf in, out;
    size_t out_off;
    bool closing; /* close once out is flushed */
    bool dead;    /* closed for good: freed by reap_conns, never touched before */
    struct relay_conn *next;
};

/* An inner call in flight: its answer goes back on conn, if still there. */
struct relay_pending {
    struct gw_exec *x; /* NULL once the execution ended */
    struct relay_conn *conn;
    json_t *id;
    struct relay_pending *next;
};

struct gw_exec {
    struct gw *gw;
    struct job *job;
    struct gw_exec *next;
    char id[24];
    char token[65];
    struct gw_exec_request rq;
    char *run_dir, *stage_dir, *result_path;
    struct sbx_jail_proc p;
    struct sbx_cgroup *cg; /* the tree's cgroup until the program has ended; NULL: none */
    const char *bounds;    /* what bounded its resources: "cgroup-v1", "cgroup-v2", "rlimit" */
    bool cg_oom;           /* the cgroup's memory limit killed a process of it */
    uint64_t timer, tick, reap_timer;
    long long t0_ms;
    size_t out_bytes, err_bytes;
    strbuf err_head;
    long long calls;
    const char *refusal; /* the first relay refusal's category */
    char code_sha256[SHA256_HEX_LEN + 1];
    char args_digest[AUD_DIGEST_HEX + 1];
    bool timed_out, over_output, cancelled, ended, out_eof, err_eof;
    struct relay_conn *conns;
    size_t nconns;
    struct relay_pending *pending;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- enablement -------------------------------------------------------------- */

struct exec_cfg {
    bool enabled;
    char *runtime;
    struct gw_exec_limits limits;
    bool has_cap;
    strvec cap; /* allowTools: the machine's cap on what a request may grant */
    bool limits_ok;
    strbuf why; /* limits_ok false: the reason */
};

static void cfg_free(struct exec_cfg *c)
{
    free(c->runtime);
    strvec_clear(&c->cap);
    sb_release(&c->why);
}

/* The machine manifest, read fresh; a broken one enables nothing. */
static void cfg_load(struct exec_cfg *c)
{
    memset(c, 0, sizeof *c);
    int absent = 0;
    struct as_err err = AS_ERR_INIT;
    struct manifest *mm = manifest_load_machine(&absent, &err);
    if (!mm)
        return;
    const struct mf_experimental *x = &mm->experimental;
    c->enabled = x->tools_execute;
    c->runtime = x->runtime ? xstrdup(x->runtime) : NULL;
    c->has_cap = x->has_allow_tools;
    for (size_t i = 0; i < x->allow_tools.n; i++)
        strvec_push(&c->cap, x->allow_tools.v[i]);
    c->limits_ok = gw_exec_machine_limits(x->timeout_ms, x->max_calls, x->max_output_bytes,
                                          &c->limits, &c->why) == 0;
    manifest_free(mm);
}

static const char exec_desc[] =
    "Run one bounded TypeScript program in an isolated executor. `code` is the program: "
    "`import { tools, input } from 'agentstack:runtime'`; its default export (a value, a "
    "promise, or a function returning one) is the JSON result. `await tools.<server__tool>(args)` "
    "calls one of the exact tools named in `allowTools` through this gateway (policy and audit "
    "apply). No workspace, home, credentials, packages or network. Returns {result, calls, "
    "durationMs, stdoutBytes, stderrBytes} or `Error [<category>]: …`.";

static const char exec_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"code\",\"allowTools\"],"
    "\"properties\":{\"code\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":262144},"
    "\"allowTools\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":100,\"items\":{\"type\":"
    "\"string\"}},\"input\":{},\"limits\":{\"type\":\"object\",\"additionalProperties\":false,"
    "\"properties\":{\"timeoutMs\":{\"type\":\"integer\",\"minimum\":1},\"maxCalls\":{\"type\":"
    "\"integer\",\"minimum\":1},\"maxOutputBytes\":{\"type\":\"integer\",\"minimum\":1}}}}}";

json_t *gw_execute_tool(const struct gw *gw)
{
    (void)gw;
    struct exec_cfg c;
    cfg_load(&c);
    bool on = c.enabled;
    cfg_free(&c);
    if (!on)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string("tools_execute"));
    json_object_set_new(o, "description", json_string(exec_desc));
    json_error_t je;
    json_t *schema = json_loads(exec_schema, 0, &je);
    json_object_set_new(o, "inputSchema", schema ? schema : json_object());
    return o;
}

/* ---- answers ------------------------------------------------------------------ */

static void answer_text(struct gw *gw, struct job *j, const char *text, bool is_error)
{
    gw_reply(gw, j, gw_text_result(text, is_error));
    gw_job_free(j);
}

static json_t *verror(const char *cat, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static json_t *verror(const char *cat, const char *fmt, va_list ap)
{
    strbuf t = SB_INIT;
    sb_addf(&t, "Error [%s]: ", cat);
    sb_vaddf(&t, fmt, ap);
    json_t *r = gw_text_result(t.buf, true);
    sb_release(&t);
    return r;
}

static __attribute__((format(printf, 2, 3))) json_t *error_result(const char *cat, const char *fmt,
                                                                  ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *r = verror(cat, fmt, ap);
    va_end(ap);
    return r;
}

static __attribute__((format(printf, 4, 5))) void
answer_error(struct gw *gw, struct job *j, const char *cat, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *r = verror(cat, fmt, ap);
    va_end(ap);
    gw_reply(gw, j, r);
    gw_job_free(j);
}

/* ---- the runtime -------------------------------------------------------------- */

/* The probe's verdict for one binary identity, kept for the gateway's life. */
static struct {
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    off_t size;
    int ok;
    char version[64];
} probe_cache;

static int find_on_path(const char *name, strbuf *out)
{
    const char *path = getenv("PATH");
    if (!path)
        return -1;
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0) {
            sb_reset(out);
            sb_add(out, path, n);
            sb_addf(out, "/%s", name);
            struct stat st;
            if (out->buf[0] == '/' && stat(out->buf, &st) == 0 && S_ISREG(st.st_mode) &&
                access(out->buf, X_OK) == 0)
                return 0;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return -1;
}

/* 0 with the runtime's canonical path, else -1 + why (runtime-unavailable). */
static int runtime_resolve(const struct exec_cfg *c, strbuf *node, strbuf *why)
{
    strbuf found = SB_INIT;
    if (c->runtime) {
        if (c->runtime[0] != '/') {
            sb_addf(why, "[experimental] tools_execute_runtime must be an absolute path");
            sb_release(&found);
            return -1;
        }
        sb_adds(&found, c->runtime);
    } else if (find_on_path("node", &found) < 0) {
        sb_addf(why,
                "no `node` on PATH (found none; needs Node.js >= " SBX_EXEC_NODE_NEEDED "; or set "
                "[experimental] tools_execute_runtime in the machine manifest)");
        sb_release(&found);
        return -1;
    }
    struct as_err err = AS_ERR_INIT;
    if (fs_realpath(found.buf, node, &err) < 0) {
        sb_addf(why,
                "the runtime %s cannot be used (%s; needs Node.js >= " SBX_EXEC_NODE_NEEDED ")",
                found.buf, err.msg);
        sb_release(&found);
        return -1;
    }
    sb_release(&found);
    struct stat st;
    if (stat(node->buf, &st) < 0 || !S_ISREG(st.st_mode)) {
        sb_addf(why, "the runtime %s is not a regular file", node->buf);
        return -1;
    }
    if (!(probe_cache.dev == st.st_dev && probe_cache.ino == st.st_ino &&
          probe_cache.size == st.st_size && probe_cache.mtime.tv_sec == st.st_mtim.tv_sec &&
          probe_cache.mtime.tv_nsec == st.st_mtim.tv_nsec && probe_cache.version[0])) {
        int ok = 0;
        char ver[64];
        if (sbx_executor_probe(node->buf, ver, sizeof ver, &ok, &err) < 0) {
            sb_addf(why,
                    "the runtime %s could not be run confined: %s (needs Node.js "
                    ">= " SBX_EXEC_NODE_NEEDED ")",
                    node->buf, err.msg);
            return -1;
        }
        probe_cache.dev = st.st_dev;
        probe_cache.ino = st.st_ino;
        probe_cache.size = st.st_size;
        probe_cache.mtime = st.st_mtim;
        probe_cache.ok = ok;
        snprintf(probe_cache.version, sizeof probe_cache.version, "%s", ver);
    }
    if (!probe_cache.ok) {
        sb_addf(why, "the runtime %s is Node.js %s; tools_execute needs >= " SBX_EXEC_NODE_NEEDED,
                node->buf, probe_cache.version);
        return -1;
    }
    return 0;
}

/* ---- the request against the surface ------------------------------------------ */

struct lookup_ctx {
    const struct gw_surface *sf;
    const struct exec_cfg *cfg;
};

/* Allowed: on the surface, admitted by policy, and within the machine's
 * allowTools when it has one (outside it counts as a policy denial). */
static enum gw_exec_lookup surface_lookup(void *ctx, const char *full)
{
    const struct lookup_ctx *lc = ctx;
    const struct gw_surface *sf = lc->sf;
    for (size_t i = 0; i < sf->ups.n; i++) {
        const struct gw_up *up = sf->ups.v[i];
        for (size_t k = 0; k < up->tools.n; k++) {
            if (strcmp(up->tools.v[k].full, full) != 0)
                continue;
            struct pol_decision d;
            if (lc->cfg->has_cap && strvec_find(&lc->cfg->cap, full) < 0)
                return GW_EXEC_TOOL_DENIED;
            return pol_tool(sf->rs, up->name, up->tools.v[k].name, &d) ? GW_EXEC_TOOL_ALLOWED
                                                                       : GW_EXEC_TOOL_DENIED;
        }
    }
    return GW_EXEC_TOOL_ABSENT;
}

/* ---- staging ------------------------------------------------------------------ */

static int write_app_file(const char *dir, const char *name, const char *data, size_t len,
                          struct as_err *err)
{
    strbuf p = SB_INIT;
    sb_addf(&p, "%s/%s", dir, name);
    struct fs_write_opts o = {0};
    o.mode = 0644; /* the program's service uid reads it (docs/tools-execute.md) */
    int rc = fs_write_exact(p.buf, data, len, &o, err);
    sb_release(&p);
    return rc;
}

static int stage(struct gw_exec *x, struct as_err *err)
{
    strbuf s = SB_INIT;
    sb_addf(&s, "%s/runs/%s", x->gw->home, x->id);
    x->run_dir = xstrdup(s.buf);
    sb_adds(&s, "/executor");
    x->stage_dir = xstrdup(s.buf);
    sb_adds(&s, "/app");
    int rc = -1;
    if (fs_mkdirs(s.buf, 0755, err) < 0 || chmod(x->run_dir, 0755) < 0 ||
        chmod(x->stage_dir, 0755) < 0 || chmod(s.buf, 0755) < 0)
        goto out;
    /* source.mjs: the same program, marked as started on its first line,
     * which the bootstrap runs as JavaScript when it parses as such (no
     * type stripper to load: exec_guest.c). */
    strbuf js = SB_INIT;
    sb_adds(&js, "globalThis[Symbol.for('agentstack.started')] = true;");
    sb_add(&js, x->rq.code, x->rq.code_len);
    int js_rc = write_app_file(s.buf, "source.mjs", js.buf, js.len, err);
    sb_release(&js);
    if (js_rc < 0 || write_app_file(s.buf, "source.ts", x->rq.code, x->rq.code_len, err) < 0 ||
        write_app_file(s.buf, "input.json", x->rq.input_json, strlen(x->rq.input_json), err) < 0 ||
        write_app_file(s.buf, "bootstrap.mjs", gw_exec_bootstrap_mjs, strlen(gw_exec_bootstrap_mjs),
                       err) < 0 ||
        write_app_file(s.buf, "runtime.mjs", gw_exec_runtime_mjs, strlen(gw_exec_runtime_mjs),
                       err) < 0 ||
        write_app_file(s.buf, "token", x->token, strlen(x->token), err) < 0)
        goto out;
    sb_reset(&s);
    sb_addf(&s, "%s/result.json", x->stage_dir);
    x->result_path = xstrdup(s.buf);
    int fd = open(s.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        as_err_errno(err, "creating %s", s.buf);
        goto out;
    }
    /* On a root host the program runs as the service uid outside too. */
    if (geteuid() == 0 && fchown(fd, SBX_JAIL_SERVICE_UID, SBX_JAIL_SERVICE_UID) < 0) {
        as_err_errno(err, "handing %s to the executor", s.buf);
        close(fd);
        goto out;
    }
    close(fd);
    rc = 0;
out:
    sb_release(&s);
    return rc;
}

/* ---- the end ------------------------------------------------------------------ */

static void conn_free(struct relay_conn *c)
{
    if (!c->dead)
        mcp_loop_del(c->x->gw->loop, c->fd);
    close(c->fd);
    sb_release(&c->in);
    sb_release(&c->out);
    free(c);
}

static void exec_unlink(struct gw_exec *x)
{
    for (struct gw_exec **pp = &x->gw->execs; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            return;
        }
}

/* Once init is reaped: whatever is left in the cgroup is killed, the OOM
 * verdict read, and the cgroup removed. */
static void exec_uncgroup(struct gw_exec *x)
{
    if (!x->cg)
        return;
    x->cg_oom = x->cg_oom || sbx_cgroup_oom_killed(x->cg);
    struct as_err err = AS_ERR_INIT;
    if (sbx_cgroup_destroy(x->cg, &err) < 0)
        gw_note("tools_execute %s: %s", x->id, err.msg);
    x->cg = NULL;
}

/* Stops everything the execution holds; the program's tree dies with init. */
static void exec_stop(struct gw_exec *x)
{
    struct mcp_loop *loop = x->gw->loop;
    if (x->timer)
        mcp_loop_timer_cancel(loop, x->timer);
    if (x->tick)
        mcp_loop_timer_cancel(loop, x->tick);
    if (x->reap_timer)
        mcp_loop_timer_cancel(loop, x->reap_timer);
    x->timer = x->tick = x->reap_timer = 0;
    int fds[] = {x->p.ctl, x->p.listen_fd, x->p.out_fd, x->p.err_fd};
    for (size_t i = 0; i < 4; i++)
        if (fds[i] >= 0)
            mcp_loop_del(loop, fds[i]);
    sbx_executor_kill(&x->p);
    sbx_jail_proc_close(&x->p);
    exec_uncgroup(x);
    while (x->conns) {
        struct relay_conn *c = x->conns;
        x->conns = c->next;
        conn_free(c);
    }
    x->nconns = 0;
    for (struct relay_pending *p = x->pending; p; p = p->next) {
        p->x = NULL;
        p->conn = NULL;
    }
}

/* Removes the staging (once): as soon as nothing reads it any more. */
static void exec_unstage(struct gw_exec *x)
{
    if (!x->stage_dir)
        return;
    struct as_err err = AS_ERR_INIT;
    if (fs_rmtree(x->stage_dir, &err) < 0)
        gw_note("tools_execute %s: could not remove its staging: %s", x->id, err.msg);
    rmdir(x->run_dir); /* only when nothing else was kept there */
    free(x->stage_dir);
    x->stage_dir = NULL;
}

static void exec_free(struct gw_exec *x)
{
    /* Calls still in flight free their own record when answered (exec_stop
     * detached them from x). */
    x->pending = NULL;
    exec_uncgroup(x);
    exec_unstage(x);
    gw_exec_request_free(&x->rq);
    free(x->run_dir);
    free(x->result_path);
    sb_release(&x->err_head);
    free(x);
}

static const char *program_code(const struct gw_exec *x, char *buf, size_t n)
{
    const char *k = x->err_head.buf ? strstr(x->err_head.buf, "agentstack-error-code: ") : NULL;
    if (!k)
        return NULL;
    k += strlen("agentstack-error-code: ");
    size_t i = 0;
    while (i + 1 < n && k[i] &&
           (k[i] == '_' || k[i] == '-' || (k[i] >= 'A' && k[i] <= 'Z') ||
            (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9')))
        buf[i] = k[i], i++;
    buf[i] = '\0';
    return i ? buf : NULL;
}

static bool out_of_memory(const struct gw_exec *x)
{
    const char *h = x->err_head.buf ? x->err_head.buf : "";
    return strstr(h, "out of memory") || strstr(h, "Allocation failed") ||
           strstr(h, "ERR_MEMORY_ALLOCATION_FAILED") || strstr(h, "std::bad_alloc");
}

/* How an execution ended, for its audit row: category NULL = ok; limit
 * names what stopped it (docs/tools-execute.md, "Evidence"). */
struct exec_end {
    const char *category;
    const char *limit;
    long long result_bytes;
};

/* The answer for a program that ended with (code, sig); *end says how. */
static json_t *outcome(struct gw_exec *x, int code, int sig, long long ms, struct exec_end *end)
{
    char cbuf[72];
    const char *pcode = program_code(x, cbuf, sizeof cbuf);
    bool oom = out_of_memory(x) || x->cg_oom;
    memset(end, 0, sizeof *end);
    if (x->cancelled) {
        end->category = "cancelled"; /* the client will not read the answer */
        return error_result("execution-error", "the request was cancelled; the program was "
                                               "killed");
    }
    if (x->timed_out) {
        end->category = "timeout";
        end->limit = "timeoutMs";
        return error_result("timeout", "the program ran past its %lld ms limit and was killed",
                            x->rq.limits.timeout_ms);
    }
    end->category = "resource-limit";
    if (x->over_output) {
        end->limit = "maxOutputBytes";
        return error_result("resource-limit",
                            "the program's output passed maxOutputBytes (%lld) and it was killed",
                            x->rq.limits.max_output_bytes);
    }
    /* Past RLIMIT_FSIZE the kernel sends SIGXFSZ; Node ignores it, so its
     * write fails with EFBIG instead, and the program dies of that error. */
    bool fsize = sig == SIGXFSZ || (code != 0 && pcode && strcmp(pcode, "EFBIG") == 0);
    if (fsize || sig == SIGXCPU || oom || (pcode && strcmp(pcode, "call-limit") == 0)) {
        end->limit = fsize ? "fileSize" : sig == SIGXCPU ? "cpuTime" : oom ? "memory" : "maxCalls";
        return error_result("resource-limit", "the program hit its %s limit and was stopped",
                            fsize            ? "file-size"
                            : sig == SIGXCPU ? "CPU-time"
                            : oom            ? "memory"
                                             : "maxCalls");
    }
    end->category = "invalid-result";
    if (code != 0 && pcode && strcmp(pcode, "invalid-result") == 0)
        return error_result("invalid-result", "the program's default export is not JSON");
    if (code != 0) {
        if (x->refusal && (strcmp(x->refusal, "tool-not-granted") == 0 ||
                           strcmp(x->refusal, "policy-denied") == 0)) {
            end->category = x->refusal;
            return error_result(x->refusal,
                                "the program called a tool it may not call, and failed (exit %d)",
                                code);
        }
        end->category = "execution-error";
        if (sig > 0)
            return error_result("execution-error", "the program was killed by signal %d", sig);
        return error_result("execution-error", "the program failed (exit %d%s%s)", code,
                            pcode ? ", " : "", pcode ? pcode : "");
    }
    strbuf res = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    json_error_t je;
    json_t *v = NULL;
    size_t res_len = 0;
    if (fs_read_file(x->result_path, GW_EXEC_RESULT_MAX, 1, &res, &err) == 0) {
        v = json_loadb(res.buf, res.len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
        res_len = res.len;
    }
    sb_release(&res);
    if (!v)
        return error_result("invalid-result",
                            "the program's default export is not a JSON value of at most 1 MiB");
    end->category = NULL;
    end->result_bytes = (long long)res_len;
    json_t *o = json_object();
    json_object_set_new(o, "result", v);
    json_object_set_new(o, "calls", json_integer(x->calls));
    json_object_set_new(o, "durationMs", json_integer(ms));
    json_object_set_new(o, "stdoutBytes", json_integer((json_int_t)x->out_bytes));
    json_object_set_new(o, "stderrBytes", json_integer((json_int_t)x->err_bytes));
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    json_t *r = gw_text_result(t ? t : "{}", false);
    free(t);
    return r;
}

/* The execution's own call-audit row (docs/tools-execute.md, "Evidence"):
 * how it ended, its duration, its inner calls, its output size and the
 * digest of its code — never the code, its input or its output. -1 + why
 * when the row could not be appended. */
static int exec_audit(struct gw_exec *x, const struct exec_end *end, long long ms, strbuf *why)
{
    struct aud_execution e = {
        .calls = x->calls,
        .output_bytes = (long long)(x->out_bytes + x->err_bytes),
        .result_bytes = end->result_bytes,
        .code_sha256 = x->code_sha256,
        .limit = end->limit,
        .limits = x->bounds,
    };
    struct aud_call c = {
        .execution = x->id,
        .server = AUD_EXEC_SERVER,
        .tool = AUD_EXEC_TOOL,
        .args_digest = x->args_digest,
        .outcome = end->category ? "error" : "ok",
        .detail = end->category,
        .ms = ms,
        .exec = &e,
    };
    return gw_audit_row(x->gw, &c, why);
}

/* An answer whose execution's row is missing from the evidence is not
 * given: the result (or the error) is replaced by this one. */
static json_t *unaudited(json_t *r, const char *why)
{
    json_decref(r);
    return error_result("runtime-unavailable",
                        "the execution's audit row could not be written (%s), so its answer is "
                        "withheld",
                        why);
}

/* Ends the execution: the tree killed, the staging removed, its audit row
 * written, then the answer. */
static void exec_finish(struct gw_exec *x, int code, int sig)
{
    struct gw *gw = x->gw;
    exec_stop(x);
    exec_unlink(x);
    long long ms = now_ms() - x->t0_ms;
    struct exec_end end;
    json_t *r = outcome(x, code, sig, ms, &end);
    exec_unstage(x); /* the result is read: nothing of the program stays */
    strbuf why = SB_INIT;
    if (exec_audit(x, &end, ms, &why) < 0)
        r = unaudited(r, why.buf);
    sb_release(&why);
    struct job *j = x->job;
    x->job = NULL;
    exec_free(x);
    gw_reply(gw, j, r);
    gw_job_free(j);
}

/* ---- the program's output and end ----------------------------------------------- */

static void kill_for(struct gw_exec *x, bool *flag)
{
    *flag = true;
    exec_finish(x, -1, SIGKILL);
}

static void on_pipe(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)ev;
    struct gw_exec *x = ctx;
    bool is_err = fd == x->p.err_fd;
    char buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            mcp_loop_del(loop, fd);
            *(is_err ? &x->err_eof : &x->out_eof) = true;
            return;
        }
        *(is_err ? &x->err_bytes : &x->out_bytes) += (size_t)n;
        if (is_err && x->err_head.len < ERR_HEAD_MAX)
            sb_add(&x->err_head, buf,
                   (size_t)n < ERR_HEAD_MAX - x->err_head.len ? (size_t)n
                                                              : ERR_HEAD_MAX - x->err_head.len);
        if ((long long)(x->out_bytes + x->err_bytes) > x->rq.limits.max_output_bytes) {
            kill_for(x, &x->over_output);
            return;
        }
    }
}

static void drain_pipe(struct gw_exec *x, int fd)
{
    if (fd < 0)
        return;
    char buf[16384];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        bool is_err = fd == x->p.err_fd;
        *(is_err ? &x->err_bytes : &x->out_bytes) += (size_t)n;
        if (is_err && x->err_head.len < ERR_HEAD_MAX)
            sb_add(&x->err_head, buf,
                   (size_t)n < ERR_HEAD_MAX - x->err_head.len ? (size_t)n
                                                              : ERR_HEAD_MAX - x->err_head.len);
    }
}

/* init's word on the control socket: "exit <code> <sig>", or EOF. */
static void on_ctl(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)ev;
    struct gw_exec *x = ctx;
    char msg[128];
    ssize_t n = recv(fd, msg, sizeof msg - 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    int code = -1, sig = -1;
    if (n > 0) {
        msg[n] = '\0';
        if (sscanf(msg, "exit %d %d", &code, &sig) != 2)
            return;
    }
    /* Whatever the program wrote before it ended is in the pipes now. */
    drain_pipe(x, x->p.out_fd);
    drain_pipe(x, x->p.err_fd);
    if ((long long)(x->out_bytes + x->err_bytes) > x->rq.limits.max_output_bytes)
        x->over_output = true;
    exec_finish(x, code, sig);
}

static void on_timeout(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw_exec *x = ctx;
    x->timer = 0;
    kill_for(x, &x->timed_out);
}

static void on_tick(struct mcp_loop *loop, void *ctx)
{
    struct gw_exec *x = ctx;
    x->tick = 0;
    if (x->job && x->job->cancelled) {
        x->cancelled = true;
        exec_finish(x, -1, SIGKILL); /* the client will not read the answer */
        return;
    }
    x->tick = mcp_loop_timer(loop, CANCEL_TICK_MS, on_tick, x);
}

/* ---- the relay ------------------------------------------------------------------ */

static void conn_flush(struct relay_conn *c);

static void conn_send(struct relay_conn *c, json_t *id, const char *error, json_t *result)
{
    if (c->dead) {
        json_decref(result);
        return;
    }
    json_t *o = json_object();
    json_object_set(o, "id", id ? id : json_null());
    json_object_set_new(o, "ok", json_boolean(error == NULL));
    if (error)
        json_object_set_new(o, "error", json_string(error));
    else
        json_object_set_new(o, "result", result ? result : json_null());
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (t && strlen(t) > RELAY_FRAME_MAX) {
        free(t);
        conn_send(c, id, "response-too-large", NULL);
        return;
    }
    if (t) {
        sb_adds(&c->out, t);
        sb_addc(&c->out, '\n');
        free(t);
    }
    conn_flush(c);
}

static void reap_conns(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw_exec *x = ctx;
    x->reap_timer = 0;
    for (struct relay_conn **pp = &x->conns; *pp;) {
        struct relay_conn *c = *pp;
        if (!c->dead) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        x->nconns--;
        for (struct relay_pending *p = x->pending; p; p = p->next)
            if (p->conn == c)
                p->conn = NULL;
        conn_free(c);
    }
}

/* Closes c for good, later: callers up the stack may still hold it. */
static void conn_drop(struct relay_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    mcp_loop_del(c->x->gw->loop, c->fd);
    shutdown(c->fd, SHUT_RDWR);
    if (!c->x->reap_timer)
        c->x->reap_timer = mcp_loop_timer(c->x->gw->loop, 0, reap_conns, c->x);
}

static void on_conn(struct mcp_loop *loop, int fd, unsigned ev, void *ctx);

static void conn_flush(struct relay_conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.buf + c->out_off, c->out.len - c->out_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            mcp_loop_mod(c->x->gw->loop, c->fd, MCP_EV_IN | MCP_EV_OUT);
            return;
        }
        if (n <= 0) {
            conn_drop(c);
            return;
        }
        c->out_off += (size_t)n;
    }
    sb_reset(&c->out);
    c->out_off = 0;
    mcp_loop_mod(c->x->gw->loop, c->fd, MCP_EV_IN);
    if (c->closing)
        conn_drop(c);
}

static void refuse_call(struct relay_conn *c, json_t *id, const char *why)
{
    if (!c->x->refusal)
        c->x->refusal = why;
    conn_send(c, id, why, NULL);
}

static void on_inner_result(struct gw *gw, struct job *j, json_t *result)
{
    (void)gw;
    struct relay_pending *p = j->result_ctx;
    j->result_ctx = NULL;
    struct gw_exec *x = p->x;
    struct relay_conn *c = p->conn;
    if (x && c && !c->dead) {
        const char *err = NULL;
        if (!result)
            err = "tool-call-failed";
        else if (j->unknown)
            err = "tool-unavailable";
        else if (json_is_true(json_object_get(result, "isError"))) {
            const char *t = json_string_value(
                json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
            err =
                t && strncmp(t, "Error: blocked:", 15) == 0 ? "policy-denied" : "tool-call-failed";
        }
        if (err) {
            if (strcmp(err, "policy-denied") == 0 && !x->refusal)
                x->refusal = err;
            conn_send(c, p->id, err, NULL);
            json_decref(result);
        } else {
            conn_send(c, p->id, NULL, result);
        }
    } else {
        json_decref(result);
    }
    if (x) {
        for (struct relay_pending **pp = &x->pending; *pp; pp = &(*pp)->next)
            if (*pp == p) {
                *pp = p->next;
                break;
            }
    }
    json_decref(p->id);
    free(p);
}

static void relay_call(struct relay_conn *c, json_t *id, const char *tool, json_t *args)
{
    struct gw_exec *x = c->x;
    struct gw *gw = x->gw;
    if (strvec_find(&x->rq.grants, tool) < 0) {
        refuse_call(c, id, "tool-not-granted");
        return;
    }
    if (x->calls >= x->rq.limits.max_calls) {
        refuse_call(c, id, "call-limit");
        return;
    }
    x->calls++;
    struct relay_pending *p = xcalloc(1, sizeof *p);
    p->x = x;
    p->conn = c;
    p->id = json_incref(id);
    p->next = x->pending;
    x->pending = p;
    struct job *j = gw_job_add(gw, "tools/call");
    j->via_http = true; /* never answered on stdout */
    j->on_result = on_inner_result;
    j->result_ctx = p;
    j->execution = xstrdup(x->id);
    j->modern = x->job->modern;
    j->name = xstrdup(tool);
    j->args = json_is_object(args) ? json_incref(args) : json_object();
    /* As tools/call does: fresh trust, then the one dispatch point. */
    gw_refresh(gw, j->modern, false);
    gw_dispatch(gw, j);
}

/* One request line. false when the connection must close. */
static bool relay_line(struct relay_conn *c, const char *line, size_t len)
{
    json_error_t je;
    json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    json_t *id = json_object_get(req, "id");
    const char *tok = json_string_value(json_object_get(req, "token"));
    if (!tok || strlen(tok) != 64 || !ct_equal(tok, c->x->token, 64)) {
        c->closing = true;
        conn_send(c, id, "unauthorized", NULL);
        json_decref(req);
        return false;
    }
    const char *tool = json_string_value(json_object_get(req, "tool"));
    json_t *args = json_object_get(req, "arguments");
    if (!json_is_object(req) || !tool || (args && !json_is_object(args))) {
        conn_send(c, id, "invalid-request", NULL);
    } else {
        relay_call(c, id, tool, args);
    }
    json_decref(req);
    return true;
}

static void on_conn(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)fd;
    struct relay_conn *c = ctx;
    if (c->dead)
        return;
    if (ev & MCP_EV_OUT) {
        conn_flush(c);
        return;
    }
    char buf[16384];
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        conn_drop(c);
        return;
    }
    sb_add(&c->in, buf, (size_t)n);
    char *nl;
    while (!c->closing && !c->dead && (nl = memchr(c->in.buf, '\n', c->in.len))) {
        size_t len = (size_t)(nl - c->in.buf);
        if (len > RELAY_FRAME_MAX) {
            c->closing = true;
            conn_send(c, NULL, "frame-too-large", NULL);
            return;
        }
        char *line = xstrndup(c->in.buf, len);
        memmove(c->in.buf, nl + 1, c->in.len - len - 1);
        c->in.len -= len + 1;
        c->in.buf[c->in.len] = '\0';
        bool keep = relay_line(c, line, len);
        free(line);
        if (!keep)
            return;
    }
    if (c->in.len > RELAY_FRAME_MAX) {
        c->closing = true;
        conn_send(c, NULL, "frame-too-large", NULL);
    }
}

static void on_accept(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)ev;
    struct gw_exec *x = ctx;
    int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0)
        return;
    if (x->nconns >= RELAY_CONNS_MAX) {
        close(cfd);
        return;
    }
    struct relay_conn *c = xcalloc(1, sizeof *c);
    c->x = x;
    c->fd = cfd;
    struct as_err err = AS_ERR_INIT;
    if (mcp_loop_add(loop, cfd, MCP_EV_IN, on_conn, c, &err) < 0) {
        close(cfd);
        free(c);
        return;
    }
    c->next = x->conns;
    x->conns = c;
    x->nconns++;
}

/* ---- the start ------------------------------------------------------------------ */

static int exec_watch(struct gw_exec *x, struct as_err *err)
{
    struct mcp_loop *loop = x->gw->loop;
    int fds[] = {x->p.out_fd, x->p.err_fd, x->p.listen_fd};
    for (size_t i = 0; i < 3; i++)
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    close(x->p.in_fd);
    x->p.in_fd = -1;
    if (mcp_loop_add(loop, x->p.out_fd, MCP_EV_IN, on_pipe, x, err) < 0 ||
        mcp_loop_add(loop, x->p.err_fd, MCP_EV_IN, on_pipe, x, err) < 0 ||
        mcp_loop_add(loop, x->p.listen_fd, MCP_EV_IN, on_accept, x, err) < 0 ||
        mcp_loop_add(loop, x->p.ctl, MCP_EV_IN, on_ctl, x, err) < 0)
        return -1;
    x->timer = mcp_loop_timer(loop, (uint64_t)x->rq.limits.timeout_ms, on_timeout, x);
    x->tick = mcp_loop_timer(loop, CANCEL_TICK_MS, on_tick, x);
    return 0;
}

/* An execution that got its id but never ran: its row says so (the
 * answer names the reason), then it is freed. */
static void exec_free_unstarted(struct gw_exec *x, const char *category)
{
    struct exec_end end = {.category = category};
    (void)exec_audit(x, &end, 0, NULL); /* a lost row stops every later call */
    exec_free(x);
}

static void exec_start(struct gw *gw, struct job *j, struct gw_exec_request *rq, const char *node)
{
    struct gw_exec *x = xcalloc(1, sizeof *x);
    x->gw = gw;
    x->job = j;
    x->p.pid = -1;
    x->p.ctl = x->p.listen_fd = x->p.in_fd = x->p.out_fd = x->p.err_fd = -1;
    x->rq = *rq;
    memset(rq, 0, sizeof *rq);
    struct as_err err = AS_ERR_INIT;
    char hex[17];
    if (rand_hex(hex, 8, &err) < 0 || rand_hex(x->token, 32, &err) < 0) {
        exec_free(x);
        answer_error(gw, j, "runtime-unavailable", "no randomness for the execution: %s", err.msg);
        return;
    }
    snprintf(x->id, sizeof x->id, "x-%s", hex);
    sha256_hex(x->rq.code, x->rq.code_len, x->code_sha256);
    aud_args_digest(gw->home, j->args, x->args_digest);
    if (stage(x, &err) < 0) {
        exec_free_unstarted(x, "runtime-unavailable");
        answer_error(gw, j, "runtime-unavailable", "the executor could not be staged: %s", err.msg);
        return;
    }
    struct sbx_executor_request er = {.node = node, .app_dir = NULL, .result_file = x->result_path};
    strbuf app = SB_INIT;
    sb_addf(&app, "%s/app", x->stage_dir);
    er.app_dir = app.buf;
    sbx_executor_default_limits(x->rq.limits.timeout_ms, &er.limits);
    char cg_name[40];
    snprintf(cg_name, sizeof cg_name, "agentstack-%s", x->id);
    if (sbx_executor_cgroup(cg_name, &er.limits, &x->cg, &err) < 0) {
        sb_release(&app);
        exec_free_unstarted(x, "runtime-unavailable");
        answer_error(gw, j, "runtime-unavailable",
                     "the execution's cgroup could not be set up, so nothing ran: %s", err.msg);
        return;
    }
    er.cgroup = x->cg;
    x->bounds = sbx_cgroup_mechanism(x->cg);
    x->t0_ms = now_ms();
    int rc = sbx_executor_start(&er, &x->p, &err);
    sb_release(&app);
    if (rc < 0 || exec_watch(x, &err) < 0) {
        exec_stop(x);
        exec_free_unstarted(x, "runtime-unavailable");
        answer_error(gw, j, "runtime-unavailable",
                     "the program cannot be confined here, so nothing ran (no host fallback): %s",
                     err.msg);
        return;
    }
    x->next = gw->execs;
    gw->execs = x;
}

static void after_discovery(struct gw *gw, struct job *j)
{
    struct gw_surface *sf = j->sf;
    struct exec_cfg c;
    cfg_load(&c);
    strbuf msg = SB_INIT, node = SB_INIT;
    struct gw_exec_request rq;
    const char *cat = NULL;
    struct lookup_ctx lc = {sf, &c};
    if (!c.enabled) {
        answer_text(gw, j, GW_EXEC_DISABLED, true);
    } else if (!c.limits_ok) {
        answer_error(gw, j, "runtime-unavailable", "%s", c.why.buf);
    } else if ((cat = gw_exec_request_parse(j->args, &c.limits, surface_lookup, &lc, &rq, &msg))) {
        answer_text(gw, j, msg.buf, true);
    } else if (runtime_resolve(&c, &node, &msg) < 0) {
        gw_exec_request_free(&rq);
        answer_error(gw, j, "runtime-unavailable", "%s; nothing ran", msg.buf);
    } else if (gw_audit_ready(gw, &msg) < 0) {
        /* The execution's row is evidence: without it, nothing starts. */
        gw_exec_request_free(&rq);
        answer_error(gw, j, "runtime-unavailable", "%s; nothing ran", msg.buf);
    } else {
        exec_start(gw, j, &rq, node.buf);
    }
    sb_release(&msg);
    sb_release(&node);
    cfg_free(&c);
}

void gw_execute(struct gw *gw, struct job *j)
{
    struct exec_cfg c;
    cfg_load(&c);
    bool on = c.enabled;
    cfg_free(&c);
    if (!on) {
        answer_text(gw, j, GW_EXEC_DISABLED, true);
        return;
    }
    /* Trust first: nothing is looked up, staged or started for a project
     * that is not trusted as it is now. */
    struct gw_surface *sf = gw_surface_for(gw, j->modern);
    char digest[CONSENT_DIGEST_LEN + 1] = "";
    const char *why = NULL;
    bool trusted = gw->proj.found && gw_trust_now(gw, digest, &why) == 1 &&
                   (!sf->has_anchor || strcmp(sf->anchor, digest) == 0);
    if (!trusted || sf->gate == GW_GATE_UNTRUSTED || sf->gate == GW_GATE_REGATED ||
        sf->gate == GW_GATE_NO_PROJECT) {
        answer_error(gw, j, "untrusted", "%s; nothing was staged or run",
                     !gw->proj.found || sf->gate == GW_GATE_NO_PROJECT
                         ? "there is no project here to run tools for"
                         : "this project is not trusted as it is now (review it, then "
                           "`agentstack trust`)");
        return;
    }
    if (sf->gate != GW_GATE_OPEN) {
        answer_error(gw, j, "runtime-unavailable",
                     "the project's manifest or the machine policy cannot be used; nothing ran");
        return;
    }
    j->sf = sf;
    gw_surface_ref(sf);
    gw_surface_discover(sf, after_discovery, j); /* the grants are looked up on its tools */
}

void gw_execute_shutdown(struct gw *gw)
{
    while (gw->execs) {
        struct gw_exec *x = gw->execs;
        gw->execs = x->next;
        exec_stop(x);
        exec_unstage(x);
        struct exec_end end = {.category = "cancelled"}; /* the gateway is exiting */
        (void)exec_audit(x, &end, now_ms() - x->t0_ms, NULL);
        if (x->job) {
            x->job->cancelled = true;
            gw_job_free(x->job);
            x->job = NULL;
        }
        exec_free(x);
    }
}
