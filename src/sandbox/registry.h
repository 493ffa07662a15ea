/*
 * registry — the live-run registry $AGENTSTACK_HOME/runs.json
 * (docs/sandbox.md, "Live runs and `kill`") and `agentstack kill`.
 *
 * Why: a run started in one terminal must be findable and stoppable from
 * another, and what is listed as live must really be that run — a pid
 * reused by an unrelated process after the run died must never be
 * signalled.
 *
 * Guarantees:
 *  - runs.json is only rewritten whole (a 0600 spare body renamed over it) under the
 *    $AGENTSTACK_HOME writer lock; a reader never sees a torn file.
 *  - Each entry records the pid's start time (/proc/<pid>/stat field 22);
 *    an entry whose pid is gone, a zombie, or started at another time is
 *    pruned on read and never signalled.
 *  - No prompt and no environment is stored: the entry holds the command
 *    and its arguments minus a --prompt run's prompt element.
 *  - Kill: host runs get the signal on their process group, sandboxed runs
 *    on their sandbox-init (whose SIGKILL ends the whole PID namespace);
 *    SIGTERM, up to 2 s, then SIGKILL (--force: SIGKILL at once). Each
 *    signal sent is appended to the run's flight record first.
 */
#ifndef AS_SANDBOX_REGISTRY_H
#define AS_SANDBOX_REGISTRY_H

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/plan.h"

/* Registers a live run of plan p whose tree is led by pid (group: signal
 * the process group -pid, else pid alone). */
int sbx_reg_add(const struct sbx_plan *p, pid_t pid, int group, struct as_err *err);
/* sbx_reg_add for a run that goes on without its entry: a failure is a
 * warning on stderr ("not in the live-run registry"). 1 when registered. */
int sbx_reg_add_or_warn(const struct sbx_plan *p, pid_t pid, int group);
/* Drops the run's entry (its end); failures are ignored: a stale entry is
 * pruned by the next reader. */
void sbx_reg_remove(const char *home, const char *run_id);
/* The live runs, pruned: {id: entry}. NULL + err on an I/O failure. */
json_t *sbx_reg_live(const char *home, struct as_err *err);
/* Start time of pid in clock ticks since boot, or 0 when it is not a live
 * (non-zombie) process. */
unsigned long long sbx_proc_start(pid_t pid);
/* Stops a live run. Returns 0 when it was stopped, 1 when there is no such
 * live run, -1 + err. Progress lines go to out. */
int sbx_reg_kill(const char *home, const char *run_id, int force, FILE *out, struct as_err *err);

#endif
