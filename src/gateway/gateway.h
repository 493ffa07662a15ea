/*
 * gateway — the live MCP gateway, `agentstack mcp` (docs/gateway.md).
 *
 * Why: this is where an agent meets a repository's servers. Everything a
 * project declares reaches the agent through here, so this is where consent
 * (trust), authority (policy) and evidence (the call audit) are enforced.
 *
 * Guarantees:
 *  - One function (gw_dispatch, gw_int.h) carries every brokered tool call,
 *    in the order ownership/fence → trust anchor → tool policy (machine,
 *    then project) → secrets → upstream I/O. No other code reaches an
 *    upstream client; control-plane names never contain "__", so an
 *    upstream can never shadow one.
 *  - Auto mode (--auto-project without --manifest-dir) is trust-gated: an
 *    untrusted or changed project gets the control plane only — nothing is
 *    spawned or contacted, no secret is resolved, no bundle content is
 *    served, no audit row is written for its servers. Trust is re-checked
 *    before each dispatch from fresh bytes whenever inotify reports a change
 *    to the manifest, overlay, lock, trust store or machine manifest, and at
 *    least every 2 s regardless; never a stat-only shortcut.
 *  - One epoll loop serves stdin, stdout and every upstream; no thread per
 *    request or upstream. Replies may be out of order; a slow upstream
 *    never delays another or a control-plane answer.
 *  - A server a toolset takes from the central library is served only when
 *    the definition's bytes match its agentstack.lock pin; drifted, unpinned
 *    or unreadable ones are skipped with a `pin` row (docs/gateway.md).
 *  - --grant PATH serves only a grant that proves itself (grant.h): its
 *    fence, its frozen ruleset, anchored at its consent digest; leases and
 *    manifest edits are refused. A bad grant serves the control plane only.
 *  - Nothing is written into the project except by agentstack_lease_freeze
 *    (the manifest only). Gateway state lives under
 *    $AGENTSTACK_HOME (leases/, logs/, audit/, and gateway/<pid>/endpoint.json
 *    while code mode's loopback endpoint is open).
 *  - On stdin EOF in-flight replies are drained (≤ 5 s), every upstream's
 *    process group is stopped, and the process exits 0.
 */
#ifndef AS_GATEWAY_GATEWAY_H
#define AS_GATEWAY_GATEWAY_H

#include <stdbool.h>

#include "base/err.h"
#include "base/strbuf.h"

struct manifest;

struct gw_opts {
    const char *manifest_dir; /* --manifest-dir: pins the project, no trust gate */
    bool auto_project;        /* --auto-project: discovered, trust-gated */
    bool transparent;         /* --transparent: list policy-filtered upstream tools */
    const char *grant_path;   /* --grant: serve a run's frozen grant (grant.h), nothing else */
    int in_fd, out_fd;        /* the JSON-RPC streams */
    const char *version;      /* serverInfo.version */
    /* Doctor's harness line: how many known CLIs are installed (NULL: the
     * line says the count is unavailable). */
    int (*harness_count)(int *detected, int *known);
    /* Finds a library server's definition file through the linked sources
     * (library/, above this module): 1 + path, 0 none, -1 + err. NULL: the
     * implicit local source $AGENTSTACK_HOME/lib/servers/ only. */
    int (*library_server)(const char *name, strbuf *path, struct as_err *err);
    /* agentstack_search's central-library half (library/ is above this
     * module): appends a JSON array of hits [{kind, name, description,
     * source, in_manifest, installed_pack}] matching query to out (m may be
     * NULL). -1 + err when the library cannot be read. NULL: not searched. */
    int (*library_search)(const struct manifest *m, const char *query, strbuf *out,
                          struct as_err *err);
    /* agentstack_session_list: appends `agentstack session list --json`'s
     * array (sessions.json belongs to adapters/, above this module); -1 +
     * err when it cannot be read. NULL: the tool answers that it cannot. */
    int (*session_list)(strbuf *out, struct as_err *err);
    /* agentstack_session_start / _end: `agentstack session start <toolset>
     * [--scope]` / `session end` for the project at manifest_dir, run by the
     * CLI's own code (native files belong to adapters/, above this module),
     * its report appended to out. 0 done, 1 refused (out says why), -1 +
     * err. NULL: the tools answer that a terminal is needed. */
    int (*session_start)(const char *manifest_dir, const char *toolset, const char *scope,
                         strbuf *out, struct as_err *err);
    int (*session_end)(const char *manifest_dir, strbuf *out, struct as_err *err);
    /* --listen ADDR:PORT: Streamable HTTP at /mcp instead of stdio
     * (gw_serve_http); --listen-any admits a non-loopback address;
     * --token-file holds the bearer token (read, or created 0600). */
    const char *listen;
    bool listen_any;
    const char *token_file;
};

/* Serves until stdin EOF; returns the process exit status (0 after a clean
 * EOF; 1 when the first frame is refused or the loop cannot run, with err
 * set). */
int gw_serve(const struct gw_opts *o, struct as_err *err);
/* Serves o->listen until SIGTERM/SIGINT/SIGHUP (docs/gateway.md, "Serving
 * over HTTP"): 0 after a clean stop; 1 + err when the address, the token
 * file or the socket is refused. */
int gw_serve_http(const struct gw_opts *o, struct as_err *err);

#endif
