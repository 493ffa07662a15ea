/*
 * run — carries out a sandbox run plan: opens the flight recorder, starts
 * the egress proxy and sandbox-init, prints the banner, relays signals,
 * serves the proxy until the harness exits, and records the outcome.
 *
 * Why a separate step from the plan: execution must not decide anything;
 * every choice it acts on is a field of the plan.
 *
 * Guarantees:
 *  - Nothing is launched unless the run record was created and the sandbox
 *    was fully built (every confinement layer applied); a refusal before
 *    launch leaves no run directory behind and says «nothing was launched».
 *  - SIGINT/SIGTERM/SIGHUP are forwarded to the sandbox's init, which
 *    forwards them to the harness; 2 s later init is SIGKILLed, which
 *    takes down every process of the sandbox.
 *  - When the proxy cannot record a decision it refuses the connection.
 */
#ifndef AS_SANDBOX_RUN_H
#define AS_SANDBOX_RUN_H

#include <stdio.h>

#include "base/err.h"
#include "sandbox/plan.h"

struct sbx_run_result {
    int launched; /* the harness was exec'd */
    int code;     /* exit status, or -1 */
    int sig;      /* terminating signal, or -1 */
    long long duration_ms;
};

/* Executes the plan; the banner goes to `banner`. Returns 0 when the run
 * took place (whatever its exit status), -1 + err when it was refused or
 * failed to start (res->launched says whether anything ran). */
int sbx_run_execute(const struct sbx_plan *p, FILE *banner, struct sbx_run_result *res,
                    struct as_err *err);

#endif
