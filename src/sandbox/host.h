/*
 * host — carries out a host run plan: the protected host run
 * (docs/sandbox.md; HOST / PROTECTED) and the unprotected one (HOST / ADVISORY).
 *
 * Why: a protected run is a fail-closed gate plus a frozen authority, not
 * isolation. Its value is that the gates are evaluated on the same bytes
 * that are delivered, that what the harness may reach is frozen for the
 * life of the run, that nothing it was handed outlives the run, and that
 * all of it is recorded. Execution decides nothing: every choice is a
 * field of the plan (plan.h); the native-config injection is supplied by
 * the caller (the adapters module sits above this one).
 *
 * Guarantees:
 *  - Nothing is launched unless the run record was created and every gate
 *    passed; each gate decision is a checked append (a failed write
 *    refuses), and a refusal is recorded (`locked_outcome` "refused").
 *  - The grant is written once (O_EXCL, 0600) under runs/<id>/ and its
 *    SHA-256 recorded as `grant_frozen` before the harness starts; the
 *    injected MCP entry names that file.
 *  - Whatever was injected is reverted after the harness exits, after a
 *    signal ended it, after a failed launch, and after a refusal that came
 *    after the injection. SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2
 *    sent to agentstack are forwarded to the harness's process group; 2 s
 *    after SIGTERM/SIGHUP the group is SIGKILLed; agentstack itself stays
 *    alive until the revert is done. If agentstack is killed outright the
 *    harness gets SIGTERM (parent-death signal) and the next `run`
 *    finishes the revert (adp_run_recover).
 *  - The harness runs at the project root in its own process group with
 *    AGENTSTACK_RUN_ID set. When stdin and stdout are terminals it gets a
 *    pseudo-terminal of its own (so it cannot inject input into, or read
 *    from, the caller's terminal once the run is over); with only stdin a
 *    terminal, its group is made the terminal's foreground group for the
 *    run and the terminal is handed back afterwards.
 *  - A --prompt run (plan->prompt_arg) is headless: the harness's stdin is
 *    /dev/null, it gets no terminal, and its stdout is relayed through a
 *    pipe, hashed over the first 1 MiB and recorded as `headless_output
 *    {bytes, sha256, truncated}`; the banner goes where the caller says
 *    (stderr), so stdout carries the answer only.
 */
#ifndef AS_SANDBOX_HOST_H
#define AS_SANDBOX_HOST_H

#include <stdio.h>

#include "base/err.h"
#include "sandbox/plan.h"

struct sbx_host_hooks {
    /* Writes the harness's native config (HOST: the single gateway entry;
     * ADVISORY: the toolset). 0, or -1 + err with nothing left behind. */
    int (*inject)(void *ctx, const struct sbx_plan *p, struct as_err *err);
    /* Puts it back. NULL: nothing to revert (ADVISORY --keep). */
    int (*revert)(void *ctx, const struct sbx_plan *p, struct as_err *err);
    void *ctx;
};

struct sbx_host_result {
    int launched; /* the harness was exec'd */
    int code;     /* its exit status, or -1 */
    int sig;      /* the signal that ended it, or -1 */
    long long duration_ms;
    int revert_failed;     /* the injection could not be reverted (err says why) */
    char grant_digest[80]; /* "sha256:…" once frozen */
    /* --prompt (plan->prompt_arg): what the harness wrote to stdout. */
    long long out_bytes; /* relayed in all */
    char out_sha256[72]; /* "sha256:…" of the captured bytes (the first 1 MiB) */
    int out_truncated;   /* more than 1 MiB was relayed */
};

/* Executes the plan; the banner goes to `banner`. Returns 0 when the
 * harness ran (whatever its status; res->revert_failed and err tell of a
 * failed revert), -1 + err when the run was refused or could not launch. */
int sbx_host_execute(const struct sbx_plan *p, const struct sbx_host_hooks *h, FILE *banner,
                     struct sbx_host_result *res, struct as_err *err);

#endif
