/*
 * Internal to gateway/: the gateway instance, surfaces, upstreams, jobs, and
 * the functions the files share. Tests include it to reach the pure helpers
 * (scoring, sanitizing, name splitting, the skill index).
 *
 * Ownership model: a surface is the immutable answer to "which upstreams does
 * this connection see right now": {project, anchor digest, selection,
 * upstreams, discovery cache}. It is derived by one function (gw_surface_build)
 * from (trust, lease, machine policy) and swapped whole; calls in flight hold
 * a reference to the surface that authorized them, so a swap never waits for
 * them and never lets them see the new one. A surface's upstream clients are
 * shut down when its last reference goes.
 */
#ifndef AS_GATEWAY_GW_INT_H
#define AS_GATEWAY_GW_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/consent.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "gateway/gateway.h"
#include "gateway/grant.h"
#include "mcp/mcp.h"
#include "policy/policy.h"

#define GW_SERVER_NAME "agentstack"
#define GW_MANUAL_NAME "using-agentstack"
#define GW_DESC_MAX 600 /* proxied tool description, chars */
#define GW_RESULT_MAX_DEFAULT 1048576
#define GW_CALL_TIMEOUT_MS 60000
#define GW_HTTP_TIMEOUT_MS 5000
#define GW_START_MS_DEFAULT 10000
#define GW_ROOTS_WAIT_MS 1000
#define GW_REHASH_MS 2000
#define GW_DRAIN_MS 5000
#define GW_KILL_GRACE_MS 3000
#define GW_MAX_TOOLS 1000
#define GW_MAX_PAGES 100
/* How long the loop polls before sleeping once traffic is flowing (see
 * mcp/loop.c): an upstream's answer or a client's next request usually
 * comes sooner than a sleeping vCPU wakes. */
#define GW_SPIN_US 100

struct gw;
struct gw_surface;
struct job;
struct gw_cm;
struct gw_cm_conn;

/* ---- text (text.c) ---------------------------------------------------------- */

/* Hostile-text filter: ESC sequences, C0/C1 controls (tab becomes a space;
 * '\n' kept when keep_nl), DEL, bidi/invisible/tag code points removed;
 * invalid UTF-8 dropped. With !keep_nl, whitespace runs collapse to one
 * space and the ends are trimmed (the one-line form). */
void gw_clean(const char *s, size_t len, int keep_nl, strbuf *out);
/* The one-line form cut to max characters (code points) + "…" when cut. */
void gw_one_line(const char *s, size_t max_chars, strbuf *out);
/* A valid MCP tool name: ^[A-Za-z0-9_.-]{1,128}$ */
bool gw_tool_name_ok(const char *s);
/* Pretty JSON for control-plane texts: 2-space indent, ": ", keys in order. */
void gw_pretty(const json_t *v, strbuf *out);
/* {"content":[{"type":"text","text":T}],"isError":B} */
json_t *gw_text_result(const char *text, bool is_error);
/* An error result: "Error: " + cleaned text (the caller omits the prefix). */
json_t *gw_error_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Copies a JSON schema, sanitizing every "description"/"title" string at any
 * depth (one line). NULL or non-object → {"type":"object"}. */
json_t *gw_schema_clean(const json_t *schema);
/* Cuts result to max bytes of serialized JSON: text cut on a
 * UTF-8 boundary + "[agentstack: result truncated at N of M bytes]".
 * Returns result itself (a new reference) when it fits. */
json_t *gw_result_cap(json_t *result, size_t max);
/* Splits "S__T" at the first "__". 0 when name has no "__" or an empty side. */
int gw_split(const char *name, strbuf *server, strbuf *tool);
/* Last-resort filter name: [A-Za-z0-9._-] kept, others '_' (log file names). */
void gw_file_safe(const char *s, strbuf *out);

/* ---- search (search.c) ------------------------------------------------------ */

struct gw_tool {
    char *server, *name, *full; /* full = server__name */
    char *desc;                 /* "[via S] " + cleaned one-line text */
    json_t *schema;             /* cleaned */
    json_t *extra;              /* mcp_tool_extras: title, annotations, outputSchema */
};
typedef VEC(const struct gw_tool *) gw_toolvec;

/* Compact-mode search scoring of one tool for lowercased tokens. */
int gw_search_score(const struct gw_tool *t, const strvec *tokens);
/* Renders the tools_search answer for a list of allowed tools. */
void gw_search_render(const struct gw_tool *const *tools, size_t n, const char *query, long limit,
                      long max_size, strbuf *out);
/* Renders the entity card; 0 if no tool matches. */
int gw_entity_render(const struct gw_tool *const *tools, size_t n, const char *entity, strbuf *out);

/* ---- upstreams and surfaces (surface.c) ---------------------------------------- */

struct gw_exec_pin {
    char *path; /* absolute */
    char *rel;
    bool tree; /* a code tree (bundle/codepin.h), else one file */
    char checksum[65];
};
/* Why a pinned path no longer matches: "<rel> drifted …", naming the file
 * inside a tree when the content store still has the pinned copy. */
void gw_pin_drift(const struct gw *gw, const struct gw_exec_pin *pin, strbuf *why);

/* How a stdio upstream runs (docs/enforcement.md, "MCP servers"). */
enum gw_isolation {
    GW_ISO_HOST = 0, /* spawned on the host, as the user */
    GW_ISO_RUN,      /* in a jail with a confined run's view (the grant's "confine") */
    GW_ISO_POLICY,   /* in a jail because [policy.isolation] servers = "confined" */
};

struct sbx_jail;
struct sbx_proxy;

struct gw_up {
    struct gw_surface *sf; /* NULL once detached from a freed surface */
    struct gw *gw;
    char *name;
    const struct mf_server *def; /* into sf->m */
    bool http;
    char **argv, **envp; /* resolved (secrets: wiped on free) */
    char *cwd, *url;
    char *cwd_rel; /* the manifest's project-relative cwd, re-checked before a spawn */
    strvec secret_names, secret_vals; /* resolved for this upstream; masked in notes */
    char **headers;
    struct oauth_bearer *oauth;   /* a stored OAuth login (docs/oauth.md), or NULL */
    bool needs_login;             /* the server refused us (401): `agentstack auth login` */
    strvec unresolved;            /* refs that did not resolve */
    strvec denied;                /* refs [policy.secrets] denied */
    bool unresolved_hint;         /* show "Set it with `agentstack secret set`." */
    VEC(struct gw_exec_pin) pins; /* re-proved before every spawn */
    struct mcp_client *client;
    /* discovery */
    int disc;                  /* 0 not yet, 1 running, 2 done */
    bool late;                 /* missed the discovery deadline, answer pending */
    VEC(struct gw_tool) tools; /* every valid tool, upstream order, deduped */
    char *log_path;
    /* HTTP: what the dial-time address check judges (egress.c). */
    char *egress_host; /* the URL's normalized host, NULL when unknown */
    unsigned egress_port;
    char refused_rule[POL_MAX_PATTERN + 2]; /* the last refusal's deny pattern, or "" */
    const char *refused_layer;              /* its layer name, or NULL */
    /* confinement (jailed.c): stdio servers with iso != GW_ISO_HOST */
    enum gw_isolation iso;
    bool iso_writable;       /* the jail's workspace is writable */
    char *iso_workspace;     /* the jail's workspace (host path) */
    bool iso_lockdown;       /* the proxy applies lockdown's rules */
    struct sbx_jail *jail;   /* built before a spawn, consumed by it */
    strvec snap_files;       /* this spawn's snapshot files (removed once bound) */
    char *snap_dir;          /* their directory */
    struct sbx_proxy *proxy; /* its only route out, created on the first spawn */
    uint64_t proxy_timer;
    char proxy_token[65];
    /* the live re-gate (codewatch.c) */
    uint64_t code_seen;  /* gw->code_gen when its pins were last verified */
    bool code_unwatched; /* no watch could be added: verify before every call */
    struct gw_up_nt *nt; /* notification state (notify.c), or NULL */
};

/* A declared server the build left out, and why (its audit family). */
struct gw_skip {
    char *name, *why;
    const char *family; /* pin | egress | secret */
};

enum gw_gate {
    GW_GATE_OPEN,       /* upstreams built (possibly none) */
    GW_GATE_NO_PROJECT, /* control plane only: no project */
    GW_GATE_BROKEN,     /* manifest or machine policy unusable: fail closed */
    GW_GATE_UNTRUSTED,  /* auto mode, never trusted / changed since trust */
    GW_GATE_REGATED,    /* was open on this connection; trust lost since */
};

struct gw_waiter {
    void (*fn)(struct gw *gw, struct job *j);
    struct job *job;
};

struct gw_surface {
    int refs;
    struct gw *gw;
    enum gw_gate gate;
    char *note;         /* trust/fence/broken note for answers (one paragraph) */
    char *regate_why;   /* REGATED: changed | revoked | unreadable */
    strvec prior;       /* REGATED: servers the lost surface served */
    struct manifest *m; /* OPEN: the manifest the surface was built from */
    struct pol_ruleset *rs;
    bool has_anchor;
    char anchor[CONSENT_DIGEST_LEN + 1];
    char *toolset; /* selected toolset, or NULL (union / none) */
    bool fenced;   /* toolsets declared and none selected */
    VEC(struct gw_up *) ups;
    VEC(struct gw_skip) skipped;
    VEC(struct manifest *) libm; /* one-server models of the library definitions served */
    int disc;                    /* 0 not yet, 1 running, 2 done */
    size_t disc_left;
    uint64_t disc_timer;
    VEC(struct gw_waiter) waiters;
    bool modern_default; /* built for the stateless era's default */
};

/* What the build starts from: fresh bytes and the trust verdict on them. */
struct gw_build_in {
    const char *toolset;      /* lease selection or NULL */
    const strvec *servers;    /* explicit selection (a grant's fence): overrides toolset */
    const char *ruleset_json; /* a frozen ruleset (wire form) instead of machine + project */
    bool fence;               /* apply the toolset fence (auto mode) */
    bool trusted;             /* the project is trusted now (anchor) */
    const char *digest;       /* the consent digest of the snapshot */
    const struct manifest_snapshot *snap;
};

struct gw_surface *gw_surface_gated(struct gw *gw, enum gw_gate gate, const char *note);
/* Builds an OPEN surface (or BROKEN with a note when the manifest or the
 * machine policy cannot be used). Resolves secrets; spawns nothing. */
struct gw_surface *gw_surface_build(struct gw *gw, const struct gw_build_in *in);
void gw_surface_ref(struct gw_surface *sf);
void gw_surface_unref(struct gw_surface *sf);
struct gw_up *gw_surface_up(const struct gw_surface *sf, const char *server);
/* Lists every upstream's tools once (parallel); fn(gw, job) runs when done
 * (maybe at once). */
void gw_surface_discover(struct gw_surface *sf, void (*fn)(struct gw *, struct job *),
                         struct job *j);
/* Allowed tools of a discovered surface, sorted by full name. */
void gw_surface_allowed(const struct gw_surface *sf, gw_toolvec *out);
/* Spawns/starts the client when idle or dead, after re-proving its
 * executable pins: -1 + why when a pin no longer matches; -2 + why when a
 * server that must run confined cannot be (nothing runs: no host fallback). */
int gw_up_ensure(struct gw_up *up, strbuf *why);

/* ---- the live re-gate of pinned code (codewatch.c) ---------------------- */

/* Watches the directories of up's pinned files and trees. */
void gw_code_watch(struct gw_up *up);
/* Reads pending events without blocking; any bumps gw->code_gen. */
void gw_code_drain(struct gw *gw);
/* Verifies every pin of up from fresh bytes; -1 + why naming the file. */
int gw_pins_verify(struct gw_up *up, strbuf *why);
/* Before a call: re-verifies up's pins when anything under a pinned path
 * changed since; -1 + why (and its running process is killed) on a drift. */
int gw_code_recheck(struct gw_up *up, strbuf *why);

/* ---- confined upstreams (jailed.c) ---------------------------------------- */

/* How the stdio servers of a surface built now run: GW_ISO_RUN for a
 * confined run's grant, GW_ISO_POLICY under [policy.isolation], else host. */
enum gw_isolation gw_isolation_for(const struct gw *gw, const struct pol_ruleset *rs);
/* Fills up's isolation fields for a stdio server of sf. */
void gw_jail_assign(struct gw_up *up, const struct gw_surface *sf);
/* Before a jailed spawn: verifies the pinned files it runs on one read and
 * snapshots those very bytes, then builds the jail and its proxy. -1 + why
 * (a pin drifted), -2 + why (cannot be confined). */
int gw_jail_prepare(struct gw_up *up, strbuf *why);
/* The stdio spawn hook of a jailed upstream (mcp_stdio_opts.spawn). */
int gw_jail_spawn(void *ctx, struct proc *p, int *hold, struct as_err *err);
/* Frees what the jail and its proxy hold (from up_free). */
void gw_jail_release(struct gw_up *up);
/* "host", "confined by run r-…", "confined by [policy.isolation]". */
const char *gw_isolation_name(enum gw_isolation iso);

/* ---- the gateway instance --------------------------------------------------- */

struct gw_load {
    char *name, *reason;
    long long ts;
};

struct gw_lease {
    bool active;
    char *profile;
    long long started_unix;
    char instance[64];
    char *registry_path;
    VEC(struct gw_load) loads;
};

struct gw_project {
    bool resolved;
    bool found;
    bool gated;      /* auto mode without --manifest-dir */
    const char *how; /* manifest-dir | roots | env | cwd */
    struct bundle_paths paths;
    char *root; /* canonical project root (audit "project") */
    char *dir;  /* the dir named in notes and fixes */
    char *root_sha12;
};

/* What a brokered request asks for (resources.c). */
enum gw_kind {
    GW_KIND_TOOL = 0,    /* tools/call */
    GW_KIND_RESOURCE,    /* resources/read */
    GW_KIND_PROMPT,      /* prompts/get */
    GW_KIND_COMPLETE,    /* completion/complete */
    GW_KIND_SUBSCRIBE,   /* resources/subscribe */
    GW_KIND_UNSUBSCRIBE, /* resources/unsubscribe */
};

struct job {
    struct gw *gw;
    enum gw_kind kind;
    json_t *client_ptoken; /* the client's progressToken, or NULL */
    char ptoken[48];       /* ours, sent upstream in its place */
    json_t *id;
    char *method;
    json_t *params;
    bool modern;
    bool cancelled;
    bool replied;
    struct job *next, *prev; /* in gw->jobs */
    /* tools/call */
    char *name;
    json_t *args;
    struct gw_surface *sf; /* held while an upstream call is in flight */
    struct gw_up *up;
    uint64_t handle; /* the upstream request, for cancellation */
    char *server, *tool;
    char digest[16];
    uint64_t t0;
    /* code mode (codemode.c): the HTTP connection waiting for the answer */
    bool via_http;           /* never answered on stdout */
    struct gw_cm_conn *http; /* NULL once the client hung up */
    bool unknown;            /* gw_dispatch answered "unknown tool" (HTTP 404) */
    /* tools_execute inner calls (execute.c): the answer goes to on_result
     * (NULL = the call failed), never to stdout; its audit rows carry
     * execution (the x-… id). */
    void (*on_result)(struct gw *gw, struct job *j, json_t *result /* stolen */);
    void *result_ctx;
    char *execution;
};

struct gw_exec;

struct gw {
    struct gw_opts o;
    struct mcp_loop *loop;
    struct mcp_reader rd;
    struct mcp_writer w;
    bool stdin_open;
    bool first_seen;
    int exit_code;
    bool shutting_down;
    uint64_t drain_timer;
    size_t closing; /* upstream clients still shutting down */

    long pid;         /* getpid() at start: audit rows without a syscall each */
    char *home;       /* $AGENTSTACK_HOME */
    char *run_id;     /* AGENTSTACK_RUN_ID */
    char *audit_lost; /* why a call's audit row could not be written: calls refused since */
    char *audit_said; /* the last audit refusal named on stderr (said once) */
    char *negotiated; /* initialize's answered version, or NULL */
    bool client_roots;
    bool roots_pending;
    uint64_t roots_timer;
    json_t *roots_req_id;
    json_t *roots_answer; /* the roots array, when it came */
    long next_client_id;
    VEC(struct job *) parked; /* waiting for the roots answer */

    struct job *jobs; /* live jobs */

    struct gw_project proj;
    struct gw_surface *cur;    /* the legacy-era (and eager) surface */
    struct gw_surface *modern; /* the stateless era's default surface, or NULL */
    char *modern_sel;          /* toolset that surface selects */
    uint64_t gen;              /* bumps whenever the legacy surface or the digest changes */
    uint64_t modern_gen;       /* gen the modern surface was derived at */
    uint64_t machine_gen;      /* bumps when the machine manifest changed */
    uint64_t modern_machine_gen;

    /* trust tracking (auto mode) */
    int ino_fd;
    bool ino_dirty;
    bool machine_dirty;
    uint64_t last_hash;
    char last_digest[CONSENT_DIGEST_LEN + 1];
    int last_state; /* enum trust_state, -1 = unreadable */

    struct gw_grant *grant; /* --grant that proved itself, or NULL */
    bool grant_refused;     /* --grant given and refused: control plane only */

    struct gw_lease lease;
    bool default_decided;
    bool lease_closed; /* an explicit close: never auto-open again */
    bool dirty;        /* tools/list_changed owed */
    strvec trail;      /* skills loaded without a lease (dedup) */

    long long max_result;
    strvec passthrough; /* [gateway] env_passthrough */
    int start_ms;
    int call_ms; /* list/call budget (AGENTSTACK_CALL_TIMEOUT_MS) */
    bool stderr_said_untrusted;
    struct gw_cm *cm;   /* code-mode endpoint (codemode.c), or NULL */
    struct gw_cm *face; /* the sandbox face (codemode.c), or NULL */
    int code_fd;        /* inotify on pinned server code (codewatch.c); -1 none, -2 none ever */
    uint64_t code_gen;  /* bumps on every event there */
    size_t code_watches;
    struct gw_exec *execs;       /* running tools_execute programs (execute.c) */
    const char *audit_execution; /* the x-… id gw_audit writes, while a call of one is audited */
    uint64_t hard_timer;         /* shutdown's last-resort stop */
    /* An HTTP session (http_serve.c): told where stdio would stop the loop
     * (the loop goes on serving other sessions); NULL on stdio. */
    void (*on_stop)(struct gw *gw);
    void *owner;
    struct gw_nt *nt; /* subscriptions and the client's log level (notify.c) */
};

/* server.c */
/* One connection's instance on a loop it does not own: stdio's gw_serve,
 * or one HTTP session each (http_serve.c). gw_setup fills the fields (the
 * caller zeroed *gw; it sets up gw->w after); gw_start then opens the grant
 * and binds an eager project. */
int gw_setup(struct gw *gw, const struct gw_opts *o, struct mcp_loop *loop, struct as_err *err);
void gw_start(struct gw *gw);
/* One whole JSON-RPC frame from the client, routed exactly as a stdin line. */
void gw_input(struct gw *gw, const char *frame, size_t len);
/* The client is gone (stdin EOF, or an HTTP session ended): drain, then stop. */
void gw_input_end(struct gw *gw);
/* Stops at once (no drain): cancels what runs and stops every upstream. */
void gw_shutdown(struct gw *gw);
/* Frees what the instance holds (not gw itself, not the loop). */
void gw_teardown(struct gw *gw);
void gw_reply(struct gw *gw, struct job *j, json_t *result /* stolen */);
void gw_reply_error(struct gw *gw, struct job *j, int code, const char *msg, json_t *data);
/* gw_reply for a result already encoded: members holds the result object's
 * members (compact JSON, without the braces, never a "resultType"). Writes
 * the same frame gw_reply would. false (nothing done) when the job does not
 * answer on stdout or its id cannot be printed cheaply: use gw_reply. */
bool gw_reply_raw(struct gw *gw, struct job *j, const strbuf *members);
void gw_job_free(struct job *j);
/* A job not born from a stdin frame (code mode): linked into gw->jobs so
 * shutdown drains and cancels it like any other. */
struct job *gw_job_add(struct gw *gw, const char *method);
/* Stops the loop once shutdown has begun and nothing is left to wait for. */
void gw_maybe_finish(struct gw *gw);
void gw_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Marks the tool list changed (a notification follows the next list/call). */
void gw_set_dirty(struct gw *gw);

/* project.c */
/* Resolves the project once (roots answer, env, cwd, or --manifest-dir). */
void gw_project_resolve(struct gw *gw);
/* Re-checks trust/machine changes and swaps surfaces as needed;
 * opening the default toolset unless skip_default. */
void gw_refresh(struct gw *gw, bool modern, bool skip_default);
/* Rebuilds the legacy surface for the current lease from fresh bytes. */
void gw_rebuild(struct gw *gw);
/* The surface a request of this era sees. */
struct gw_surface *gw_surface_for(struct gw *gw, bool modern);
/* The trust note for the current project ("… not trusted …"). */
void gw_trust_note(struct gw *gw, int state, strbuf *out);
/* Grant mode: the live project is trusted at the grant's consent digest. */
bool gw_grant_anchored(const struct gw *gw);
/* The name of what fences skills (the lease's or the grant's toolset, else
 * the grant's run id), for messages; NULL when nothing fences them. */
const char *gw_fence_label(const struct gw *gw);
/* Fresh trust verdict: 1 trusted, 0 not (why = untrusted|changed|unreadable). */
int gw_trust_now(struct gw *gw, char digest[CONSENT_DIGEST_LEN + 1], const char **why);
void gw_watch_init(struct gw *gw);
void gw_watch_drain(struct gw *gw);
void gw_project_free(struct gw *gw);

/* egress.c: the gateway's HTTP upstreams judged by address, with the
 * proxy's function (policy/address.c). */
/* An IP-literal host (normalized): 1 when pol_egress_address admits it
 * (local only where a rule names it), else 0 with d filled. A name: 1. */
int gw_egress_literal(const struct pol_ruleset *rs, const char *server, const char *host,
                      unsigned port, char addr[POL_ADDR_TEXT_MAX], struct pol_decision *d);
/* mcp_addr_check_fn for an upstream (ctx = its gw_up): every address
 * libcurl is about to dial, after resolving the URL's host. */
int gw_egress_dial_check(void *ctx, const struct sockaddr *sa, char *why, size_t whysz);

/* execute.c: the tools_execute tool (docs/tools-execute.md) */
/* Its descriptor, or NULL when the machine manifest does not enable it. */
json_t *gw_execute_tool(const struct gw *gw);
/* Answers a tools_execute call (now or later). */
void gw_execute(struct gw *gw, struct job *j);
/* Kills every running program (shutdown). */
void gw_execute_shutdown(struct gw *gw);

/* dispatch.c */
/* THE dispatch point for "S__T" calls: replies (now or later) to j. */
void gw_dispatch(struct gw *gw, struct job *j);
/* Appends one call-audit row (best-effort; never fails a call). */
void gw_audit(struct gw *gw, const char *server, const char *tool, const char *digest,
              const char *outcome, const char *detail, const char *rule, const char *layer,
              long long ms);
struct aud_call;
/* Appends c with this gateway's run, pid and project filled in. -1 + why
 * when it could not be: from then on the gateway brokers nothing more. */
int gw_audit_row(struct gw *gw, struct aud_call *c, strbuf *why);
/* 0 when a call-audit row can be appended now, else -1 + why (said once on
 * stderr): what is evidence is refused before it starts. */
int gw_audit_ready(struct gw *gw, strbuf *why);

/* Appends the row of a brokered request that was answered: args digest,
 * and the keyed digest of the answer forwarded (result_digest). */
void gw_audit_result(struct gw *gw, struct job *j, const char *outcome, const char *detail,
                     const char *result_digest, long long ms);

/* resources.c: upstream resources, prompts, completions (docs/gateway.md) */
/* agentstack://<server>/<uri percent-encoded: all but [A-Za-z0-9-._~]> */
void gw_uri_map(const char *server, const char *uri, strbuf *out);
/* The inverse: -1 + why unless guri is exactly what gw_uri_map writes for
 * some server name and a non-empty uri without NUL. */
int gw_uri_unmap(const char *guri, strbuf *server, strbuf *uri, const char **why);
/* Whether initialize advertises cap: some served upstream declared it or
 * has not started yet (none known). */
bool gw_caps_offered(struct gw *gw, const char *cap);
/* resources/list, resources/templates/list, prompts/list: replies, frees. */
void gw_res_list(struct gw *gw, struct job *j);
/* Cancels the upstream pages a listing job waits for (shutdown): it then
 * finishes at once. */
void gw_res_list_cancel(struct job *j);
/* Fills j->server, j->tool (the policy subject) and j->args (the upstream
 * params); -1 when j was answered and freed. */
int gw_res_target(struct gw *gw, struct job *j);
const char *gw_res_method(const struct job *j);
/* The params sent upstream: j->args with our progress token. */
json_t *gw_res_params(struct gw *gw, struct job *j);
/* Audits (with the answer's digest) and replies with an upstream answer. */
void gw_res_forward(struct gw *gw, struct job *j, const json_t *result, long long ms);
/* logging/setLevel: to every served upstream that declared logging. */
void gw_set_level(struct gw *gw, struct job *j);
/* The policy-filtered, rewritten items of one upstream's listing page
 * (key: resources | resourceTemplates | prompts), as the client sees them. */
json_t *gw_res_view(const struct pol_ruleset *rs, const struct gw_up *up, const char *key,
                    const json_t *items);
/* Whether some served upstream declares capabilities[cap][sub] true, or has
 * not started yet (none known). */
bool gw_caps_sub_offered(struct gw *gw, const char *cap, const char *sub);

/* notify.c: upstream notifications to the client (docs/gateway.md,
 * "Notifications from upstreams") */
/* mcp_notify_fn of every upstream client (ctx = its gw_up). */
void gw_up_notified(void *ctx, const char *method, json_t *params);
/* The _meta sent upstream in place of the client's progressToken (ours,
 * remembered in j), or NULL when the request carries none. */
json_t *gw_progress_meta(struct gw *gw, struct job *j);
/* Before a resources/subscribe or unsubscribe is dispatched: -1 when j was
 * answered and freed (too many subscriptions); unsubscribe forgets the URI
 * here, whatever the upstream answers. */
int gw_sub_check(struct gw *gw, struct job *j);
/* A subscribe the upstream accepted: updates for it are forwarded. */
void gw_sub_accepted(struct gw *gw, const struct job *j);
/* logging/setLevel: the level below which upstream log messages are dropped. */
void gw_nt_set_level(struct gw *gw, const char *level);
/* A listing page shown to the client: the baseline a list_changed is judged
 * against (first pages only; more = the upstream had further pages). */
void gw_nt_view_seen(struct gw_up *up, const char *key, const json_t *view, bool more);
void gw_nt_up_free(struct gw_up *up);
/* initialize's resources or prompts capability object: subscribe and
 * listChanged as the served upstreams may offer them. */
json_t *gw_nt_caps(struct gw *gw, const char *cap);
void gw_nt_free(struct gw *gw);
/* surface.c: replaces up->tools with a tools/list answer's valid tools. */
void gw_up_store_tools(struct gw_up *up, const json_t *result);

/* lease.c: "<tool> is refused: this connection serves the frozen grant of
 * run <id> …" — every tool that would change what a grant serves. */
json_t *gw_grant_fixed(struct gw *gw, const char *tool);

/* control.c */
void gw_tools_list(struct gw *gw, struct job *j);
void gw_tools_call(struct gw *gw, struct job *j);
const char *gw_instructions(void);
/* The listing of control-plane tool descriptors (ordered). */
json_t *gw_control_tools(struct gw *gw, const struct gw_surface *sf);
/* A trust refusal in the dispatch's refusal shape + one `trust` row. */
json_t *gw_trust_refusal(struct gw *gw, const char *subject, const char *what);

/* skills.c */
json_t *gw_list_loadable(struct gw *gw, const struct gw_surface *sf, const char *query,
                         bool *is_error);
json_t *gw_load(struct gw *gw, const struct gw_surface *sf, const json_t *args);
/* The ambient index block for agentstack_list_loadable's description. */
void gw_loadable_index(struct gw *gw, const struct gw_surface *sf, strbuf *out);
/* The list_loadable block: "Loadable now:", the first 50 entries (descs[i] NULL = bare
 * name, "" = undescribed), "…and N more", then note. */
void gw_index_render(const char *const *names, const char *const *descs, size_t n, const char *note,
                     strbuf *out);
const char *gw_manual_text(void);

/* codemode.c */
/* Opens the loopback endpoint when the current surface proxies at least one
 * upstream and is not the one it serves already; closes it (endpoint.json
 * deleted) otherwise. Called whenever gw->cur changes and at shutdown. */
void gw_cm_sync(struct gw *gw);
/* endpoint.json's path while the endpoint is open, else NULL. */
const char *gw_cm_path(const struct gw *gw);
/* The answer to a code-mode job (result stolen; NULL = failure). */
void gw_cm_reply(struct gw *gw, struct job *j, json_t *result);
void gw_cm_free(struct gw *gw);
/* The sandbox face: takes the listening socket and token a run
 * handed over in AGENTSTACK_GATEWAY_FACE_FD/_TOKEN (both unset here, so no
 * upstream inherits them) and serves MCP over HTTP on it — only with a
 * --grant that proved itself; otherwise the socket is closed with a note. */
void gw_face_open(struct gw *gw);
/* tools_bindings' markdown for the allowed tools (sorted by full name). */
void gw_bindings_render(const struct gw_tool *const *tools, size_t n, const char *endpoint_path,
                        strbuf *out);

/* lease.c */
json_t *gw_lease_open(struct gw *gw, const json_t *args, bool modern);
json_t *gw_lease_status(struct gw *gw);
json_t *gw_lease_close(struct gw *gw, bool modern);
json_t *gw_lease_freeze(struct gw *gw, const json_t *args, bool modern);
/* Opens the effective default toolset once per connection. */
void gw_open_default(struct gw *gw);
void gw_lease_release(struct gw *gw);

#endif
