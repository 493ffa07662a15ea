/*
 * grant — the reader behind `agentstack mcp --grant PATH`:
 * the frozen authority of one protected host run (`run <cli> --locked`,
 * docs/sandbox.md), served as a fixed toolset for the life of that run.
 *
 * Why: the run's gates were evaluated on exact bytes and the result frozen
 * before the harness started; the gateway entry the harness is handed names
 * the grant file. A repository must not be able to hand the gateway a grant
 * of its own making, and a grant must not outlive its run.
 *
 * The format is written by sandbox/sbx_host.c (freeze) and documented in
 * docs/gateway.md: $AGENTSTACK_HOME/runs/<id>/grant.json holds canonical
 * JSON + "\n" (version 1, kind "agentstack-run-grant", run_id, project_root,
 * manifest_dir, consent_digest, toolset, fence {servers, skills}, servers,
 * ruleset, …); the run's hash-chained events.jsonl records
 * {"event":"grant_frozen","grant_digest":"sha256:<hex of the file bytes>"}.
 *
 * Guarantees (gw_grant_open refuses, with a reason, unless all hold):
 *  - The file resolves (symlinks followed) to a regular file directly inside
 *    $AGENTSTACK_HOME/runs/<id>/ with a valid run id, is not a symlink
 *    itself, is owned by this user and writable by no one else.
 *  - The run's events.jsonl chain verifies intact, records exactly one
 *    grant_frozen event, and its digest equals the SHA-256 of the bytes read
 *    (one read: the bytes hashed are the bytes parsed).
 *  - The run has not ended (no locked_outcome or sandbox_exited event) and its
 *    process, named with its start time in grant_frozen, is alive — a run
 *    killed with SIGKILL records no end, so its grant ends with the process;
 *    when AGENTSTACK_RUN_ID is set it names the same run.
 *  - The document is a version-1 agentstack-run-grant for that run id with
 *    well-typed fields; the ruleset parses (policy wire form); a "confine"
 *    member, when present, is {workspace: absolute path, writable: bool,
 *    lockdown: bool} (a confined run: its servers are jailed, never spawned
 *    on the host).
 */
#ifndef AS_GATEWAY_GRANT_H
#define AS_GATEWAY_GRANT_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/vec.h"

#define GW_GRANT_VERSION 1
#define GW_GRANT_KIND "agentstack-run-grant"
#define GW_GRANT_MAX_BYTES ((size_t)8 << 20)

struct gw_grant {
    char *path;                   /* canonical path of the grant file */
    char *run_id;                 /* <id> */
    char *digest;                 /* "sha256:<hex>" of the file bytes */
    char *project_root;           /* as frozen */
    char *manifest_dir;           /* as frozen */
    char *consent_digest;         /* the trust anchor the run was admitted at */
    char *toolset;                /* selected toolset, or NULL (the whole bundle) */
    strvec servers;               /* the fence: servers admitted */
    strvec skills;                /* the fence: skills admitted ("*" already expanded) */
    char *ruleset_json;           /* the frozen ruleset, policy wire form */
    pid_t run_pid;                /* the run's own process (agentstack run), from grant_frozen */
    unsigned long long run_start; /* its start time (/proc/<pid>/stat field 22) */
    /* "confine" (a --sandbox/--lockdown run): every stdio server runs in a
     * jail with the run's workspace view and write scope; no host spawn. */
    bool confine;
    char *confine_workspace; /* the run's workspace (host path) */
    bool confine_writable;   /* the run's write scope covers it */
    bool confine_lockdown;   /* the run is --lockdown (the proxy's TLS-only rules) */
};

/* Validates and reads a grant (see the guarantees). 0, or -1 + err naming
 * the first reason it was refused (nothing is kept on failure). */
int gw_grant_open(const char *home, const char *path, struct gw_grant *out, struct as_err *err);
void gw_grant_free(struct gw_grant *g);
/* 1 while the run's process is the one that froze the grant (same pid, same
 * start time): a run killed with SIGKILL never records its end, so this is
 * what ends its grant. Checked at open and before every request. */
bool gw_grant_run_alive(const struct gw_grant *g);

#endif
