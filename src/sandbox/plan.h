/*
 * plan — the run plan of every `agentstack run`: one function decides
 * everything (project, trust state, compiled machine ∩ project policy, and
 * then per mode: workspace mode, mounts, identity, environment, egress and
 * proxy token for the confined modes; the gates, the toolset fence, the
 * authority grant and the native-config injection for the host modes; the
 * command and the run id for all), and the executors (run.h, host.h) only
 * carry the result out (docs/sandbox.md).
 *
 * Why: `--plan` must show exactly what a live run would do, so both must
 * come from the same object, and nothing may be re-derived on the way.
 *
 * Guarantees:
 *  - Building a plan creates nothing on disk and starts nothing.
 *  - The plan is immutable once built (callers get a const pointer); the
 *    only value supplied at execution is the kernel-assigned port of the
 *    --sandbox proxy listener.
 *  - A broken machine policy refuses. An untrusted or changed
 *    project gets nothing from its bundle: its policy layer is not used
 *    (so it cannot grant itself a writable workspace) and no server is
 *    routed; the plan says so.
 *  - The workspace is never $HOME, an ancestor of it, "/" or a directory
 *    holding $AGENTSTACK_HOME; `.env*` files and the local overlay in the
 *    project root and manifest dir are shadowed by empty files;
 *    a writable workspace keeps `.git/config` and `.git/hooks` read-only
 *    (they would run code on the host later).
 *  - The harness runs as the invoking uid outside and never uid 0 inside.
 *  - Host modes: the gates of the protected host run (docs/sandbox.md) are
 *    all evaluated read-only (so `--plan` aggregates every blocker); the grant is the complete
 * frozen authority (fence, servers with ${REF}s only — never a secret value —, compiled ruleset,
 * consent digest, exact argv and binary) and is built here, not at launch.
 */
#ifndef AS_SANDBOX_PLAN_H
#define AS_SANDBOX_PLAN_H

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "sandbox/ns.h"
#include "egress/proxy.h"

enum sbx_mode {
    SBX_MODE_SANDBOX = 1,
    SBX_MODE_LOCKDOWN,
    SBX_MODE_HOST,          /* the protected host run (default, --locked): HOST / PROTECTED */
    SBX_MODE_HOST_ADVISORY, /* --unprotected: no gate, no grant: HOST / ADVISORY */
};

enum sbx_trust {
    SBX_TRUST_NO_PROJECT, /* no manifest at or above the cwd: nothing to deliver */
    SBX_TRUST_TRUSTED,
    SBX_TRUST_CHANGED,
    SBX_TRUST_UNTRUSTED,
};

#define SBX_LOCKDOWN_PROXY_HOST "egress-proxy"
#define SBX_LOCKDOWN_PROXY_PORT 18080
#define SBX_INSIDE_HOME "/root"
#define SBX_LOCKDOWN_GATEWAY_PORT 19080
#define SBX_INSIDE_WORKSPACE "/workspace"

struct sbx_plan_request {
    enum sbx_mode mode;
    const char *harness_id;   /* adapter id (the egress identity), or the command's name */
    const char *harness_bin;  /* the program, as found on the host PATH */
    int harness_has_mcp;      /* the adapter has an MCP mapping */
    const char *const *args;  /* the arguments after "--" (NULL-terminated, may be NULL) */
    int prompt_arg;           /* --prompt: index of the prompt in the harness argv (args
                               * index + 1); 0: no prompt (an interactive run) */
    const char *manifest_dir; /* --manifest-dir, or NULL */
    const char *cwd;          /* NULL = the process cwd */
    const char *toolset;      /* --toolset/--profile, or NULL (the default toolset, if any) */
    /* Host modes. */
    const char *harness_display; /* "Claude Code" (NULL: the id) */
    const char *harness_for;     /* adapter id a toolset's `harness` must match (NULL: none) */
    const char *self_bin;        /* this binary, for the injected `agentstack mcp --grant` */
    /* Where the harness's native MCP config gets the gateway entry, asked
     * once the project root is known: sets path (absolute) and scope, or
     * leaves path empty and says why in note. NULL: nothing to inject. */
    int (*inject_resolve)(void *ctx, const char *project_root, strbuf *path, strbuf *scope,
                          strbuf *note, struct as_err *err);
    void *inject_ctx;
    /* --sandbox/--lockdown: renders the harness's native MCP config holding
     * the one entry SBX_GATEWAY_ENTRY for the gateway's sandbox face at url
     * (Streamable HTTP, header X-Agentstack-Token: token). Sets rel (the
     * user-scope config path relative to the sandbox home, e.g.
     * ".claude.json") and text. -1 + err when the adapter cannot hold such
     * an entry (err names the missing mcp.fields.*). NULL: no MCP mapping.
     * Kept in the plan: --sandbox renders again with the kernel's port. */
    int (*gateway_config)(void *ctx, const char *url, const char *token, strbuf *rel, strbuf *text,
                          struct as_err *err);
    void *gateway_ctx;
    /* The adapter's project-scope MCP config (relative to the project root,
     * e.g. ".mcp.json") and the text of an empty one ("{}\n"; "" for TOML):
     * a routed or --lockdown run covers an existing one with it, so the
     * harness starts no server of the repository's own inside. */
    const char *project_mcp_rel;
    const char *project_mcp_empty;
};

/* One gate of the protected host run, in order. */
struct sbx_gate {
    const char *name; /* "trust", "locked-verify", … */
    int passed;
    char *detail; /* why (failure), or what was checked (pass) */
    char *hint;   /* the fix (failures), or NULL */
};

/* A mount list whose strings the list owns (sbx_i_mounts_free). */
typedef VEC(struct sbx_mount) sbx_mounts;

struct sbx_plan {
    char run_id[16]; /* r- + 10 hex */
    enum sbx_mode mode;
    const char *posture_slug;  /* "sandbox" | "lockdown" */
    const char *posture_label; /* exact label */
    char *harness_id;
    char *harness_host_bin; /* realpath on the host */
    enum sbx_trust trust;
    char *trust_detail; /* one line for the banner */
    char *project_root; /* NULL when there is no project */
    char *workspace;    /* host directory mounted at /workspace */
    int workspace_writable;
    char *workspace_reason;
    char *home;                /* $AGENTSTACK_HOME */
    char *sandbox_home;        /* $AGENTSTACK_HOME/sandbox-home/<id> (created at run) */
    char *image;               /* "host" or AGENTSTACK_SANDBOX_ROOTFS */
    int servers_declared;      /* the trusted bundle's MCP servers */
    strvec gateway_only_hosts; /* lockdown: declared HTTP server hosts, refused directly */
    int allow_local;           /* AGENTSTACK_ALLOW_LOCAL_TARGETS (tests only) */
    uid_t inner_uid, outer_uid;
    gid_t inner_gid, outer_gid;
    strvec argv;                 /* inside paths; argv.v[0] absolute */
    strvec env;                  /* without the proxy variables (see sbx_plan_env) */
    char *cwd;                   /* inside */
    sbx_mounts mounts;           /* in order; strings owned */
    strvec writable;             /* Landlock write roots inside */
    char token[65];              /* per-run proxy token (never printed) */
    const char *proxy_host;      /* "egress-proxy" | "127.0.0.1" */
    int proxy_port;              /* 18080 under lockdown; 0 = ephemeral (--sandbox) */
    struct pol_ruleset *ruleset; /* compiled machine ∩ project */
    char *policy_note;           /* e.g. "machine policy ~/.agentstack/agentstack.toml" */
    strvec notes;                /* stderr lines (warnings) */

    /* Host modes (SBX_MODE_HOST, SBX_MODE_HOST_ADVISORY). */
    char *harness_display;
    char *toolset;        /* the selected toolset, or NULL (the whole bundle) */
    strvec fence_servers; /* what the grant admits */
    strvec fence_skills;
    VEC(struct sbx_gate) gates; /* HOST: every gate, evaluated read-only */
    size_t blockers;            /* failed gates */
    char *consent_digest;       /* "sha256:…" of the reviewed bytes ("" when unknown) */
    char *session_key;          /* the injection's session key (canonical project base) */
    char *manifest_path;
    char *grant_path;   /* $AGENTSTACK_HOME/runs/<id>/grant.json */
    json_t *grant;      /* HOST: the authority to freeze (NULL when refused early) */
    char *inject_path;  /* native config that gets the gateway entry, or NULL */
    char *inject_scope; /* "project" | "global" */
    char *inject_note;  /* why nothing is injected, or NULL */
    strvec inject_argv; /* the entry's command: <self> mcp --grant <grant_path> */
    char *host_cwd;     /* host runs start here: the project root (else the cwd) */
    int prompt_arg;     /* --prompt (headless): index of the prompt in argv, else 0 */

    /* Gateway routing (--sandbox/--lockdown; trusted bundle with servers, a
     * harness with an MCP mapping): the gateway runs on the host side with
     * grant (fence_servers, ruleset, consent_digest, grant_path, inject_argv
     * as above) and serves its HTTP face to the sandbox. */
    int gateway_routed;
    char *gateway_note;          /* why a trusted bundle's servers are not routed, or NULL */
    char face_token[65];         /* X-Agentstack-Token (never printed) */
    int face_port;               /* 19080 inside the lockdown netns; 0 = ephemeral (--sandbox) */
    char *gateway_config_rel;    /* the injected config, relative to the sandbox home */
    char *gateway_config_inside; /* SBX_INSIDE_HOME "/" rel, bound read-only */
    int (*gateway_config_fn)(void *, const char *, const char *, strbuf *, strbuf *,
                             struct as_err *);
    void *gateway_config_ctx;
    char *mcp_shadow_src;  /* staged empty project MCP config (runs/<id>/), or NULL */
    char *mcp_shadow_text; /* its content, written at execution */
};

/* The name of the MCP entry a protected host run injects. */
#define SBX_GATEWAY_ENTRY "agentstack-gateway"

/* Builds the plan. -1 + err on a refusal (err->hint = the fix). */
int sbx_plan_build(const struct sbx_plan_request *rq, struct sbx_plan **out, struct as_err *err);
void sbx_plan_free(struct sbx_plan *p);

/* The environment for the harness: the plan's env plus the proxy variables
 * for the given port (HTTPS_PROXY, https_proxy, HTTP_PROXY, http_proxy) and,
 * when the gateway is routed, NO_PROXY/no_proxy = the gateway's host. */
void sbx_plan_env(const struct sbx_plan *p, int port, strvec *out);

/* The face's URL as the harness sees it: http://egress-proxy:19080/mcp under
 * --lockdown, http://127.0.0.1:<port>/mcp under --sandbox. */
void sbx_plan_face_url(const struct sbx_plan *p, int port, strbuf *out);

/* The banner (host modes). full: the --plan form, adding
 * the trust, identity, egress, mounts and the exact command (host: trust,
 * mode, mounts, every gate, the redacted proposed grant, the command and the
 * verdict line). */
void sbx_plan_print(const struct sbx_plan *p, FILE *f, int full);

/* The egress decision callback over the plan's ruleset (ctx = the plan). */
int sbx_plan_decide(void *ctx, const char *identity, const char *host, int port,
                    struct sbx_verdict *v);
/* The proxy's rule on one address host resolved to (sbx_egress_decide_addr_fn):
 * [policy.egress] denies that match the address's canonical spelling. The
 * proxy itself refuses local address classes (policy/address.c). */
int sbx_plan_decide_addr(void *ctx, const char *identity, const char *host,
                         const struct sockaddr *sa, int port, struct sbx_verdict *v);

/* Shell-quotes argv into out, the exact command as `--plan` shows it. */
void sbx_argv_display(const char *const *argv, strbuf *out);

#endif
