/*
 * memguard — keeping a process's memory out of core files and away from
 * other processes of the same user.
 *
 * Why: agentstack resolves secrets into its own memory (the gateway holds
 * every upstream's resolved headers and environment for as long as it
 * runs; apply, run and secret get hold them while they write or print). A
 * core file written on SIGQUIT or a crash would carry them onto disk, and a
 * dumpable process can be read through ptrace or /proc/<pid>/mem by any
 * process of the same user.
 *
 * Guarantee: after memguard_no_dumps the process writes no core file
 * (RLIMIT_CORE 0, soft and hard, so it cannot raise it again unprivileged)
 * and is not dumpable (PR_SET_DUMPABLE 0: no core, no same-user ptrace
 * attach, /proc/<pid>'s private files belong to root). Both are inherited
 * by forked children; an exec makes a child dumpable again (its own choice)
 * but keeps the core limit. A process still reads its own /proc/self.
 */
#ifndef AS_BASE_MEMGUARD_H
#define AS_BASE_MEMGUARD_H

#include "base/err.h"

/* 0, or -1 + err when either setting cannot be made. */
int memguard_no_dumps(struct as_err *err);

#endif
