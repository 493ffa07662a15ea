/*
 * cgroup — one per-execution control group that bounds a tools_execute
 * program's whole process tree (docs/tools-execute.md, "Enforcement
 * matrix"): memory (page cache and tmpfs included), processes, CPU.
 *
 * Why: the executor's rlimits are per process (RLIMIT_DATA is one process's
 * data segment). A cgroup counts the tree and what the kernel charges to it,
 * so a program that stays under every rlimit is still bounded. The rlimits
 * stay on in every case, as the backstop.
 *
 * Guarantees:
 *  - Detection reads only: cgroup v2 is used when a cgroup2 mount (root
 *    itself, or root/unified) holds our own cgroup (the "0::/path" line of
 *    /proc/self/cgroup) with memory and pids in both its cgroup.controllers
 *    and its cgroup.subtree_control, so a child gets memory.max and
 *    pids.max; else cgroup v1 when root/memory and root/pids hold our own
 *    cgroups with their limit files and the directories are writable; else
 *    none, and the caller keeps its rlimits alone. We never change a
 *    cgroup we did not create.
 *  - sbx_cgroup_create makes <own>/<name> (a name already there is
 *    refused, never reused) and writes every limit: v2 memory.max,
 *    memory.swap.max 0 (when the kernel has it), pids.max, cpu.max when
 *    the cpu controller is there; v1 memory.limit_in_bytes (then
 *    memory.memsw.limit_in_bytes when present), pids.max, and
 *    cpu.cfs_period_us/cfs_quota_us when the cpu hierarchy is writable.
 *    Fail closed: once usable, any write that fails refuses with the
 *    file and errno, and what was made is removed.
 *  - sbx_cgroup_attach moves a process in (before it may run the program);
 *    its children are born inside.
 *  - sbx_cgroup_destroy kills everything still inside (cgroup.kill on v2,
 *    else SIGKILL to each pid of cgroup.procs until it is empty) and
 *    removes every directory it made.
 */
#ifndef AS_SANDBOX_CGROUP_H
#define AS_SANDBOX_CGROUP_H

#include <sys/types.h>

#include "base/err.h"

#define SBX_CGROUP_ROOT "/sys/fs/cgroup"
#define SBX_CGROUP_SELF "/proc/self/cgroup"

enum sbx_cgroup_kind {
    SBX_CGROUP_NONE = 0, /* no usable cgroup: rlimits only */
    SBX_CGROUP_V1,
    SBX_CGROUP_V2,
};

/* The directories limits go to. v2: dir[0] only. v1: memory, pids, cpu
 * (cpu NULL when that hierarchy is missing or not writable). */
#define SBX_CGROUP_DIRS 3

struct sbx_cgroup_limits {
    unsigned long long memory_bytes; /* the tree's memory, swap none */
    unsigned long long pids;         /* processes and threads */
    unsigned cpus;                   /* CPU bandwidth in whole CPUs; 0: unbounded */
};

struct sbx_cgroup {
    enum sbx_cgroup_kind kind;
    char *dir[SBX_CGROUP_DIRS]; /* our own cgroups at detection; the execution's after create */
};

/* "cgroup-v2", "cgroup-v1" or "rlimit" (for NULL or NONE). */
const char *sbx_cgroup_mechanism(const struct sbx_cgroup *cg);

/* Which mechanism is usable under root, given the text of
 * /proc/self/cgroup; out->dir holds our own cgroups' directories.
 * why (may be NULL) says, for NONE, what is missing. */
enum sbx_cgroup_kind sbx_cgroup_detect(const char *root, const char *self_text,
                                       struct sbx_cgroup *out, char *why, size_t whyn);

/* Creates the cgroup `name` with limits l. 0 with *out NULL: nothing usable
 * (rlimits alone); 0 with *out: made and limited; -1 + err: usable but a
 * step failed (nothing is left behind; the caller runs nothing). */
int sbx_cgroup_create(const char *root, const char *self_text, const char *name,
                      const struct sbx_cgroup_limits *l, struct sbx_cgroup **out,
                      struct as_err *err);
/* The same on this machine: SBX_CGROUP_ROOT and SBX_CGROUP_SELF. */
int sbx_cgroup_create_here(const char *name, const struct sbx_cgroup_limits *l,
                           struct sbx_cgroup **out, struct as_err *err);

/* Moves pid (and so what it starts later) into cg. -1 + err. */
int sbx_cgroup_attach(const struct sbx_cgroup *cg, pid_t pid, struct as_err *err);

/* 1 when the kernel's OOM killer killed a process of cg (its memory
 * limit), else 0. Read before sbx_cgroup_destroy. */
int sbx_cgroup_oom_killed(const struct sbx_cgroup *cg);

/* Kills what is left in cg, removes its directories and frees it (NULL is
 * a no-op). -1 + err when a directory could not be removed. */
int sbx_cgroup_destroy(struct sbx_cgroup *cg, struct as_err *err);
/* Frees the detection result's strings (not the struct). */
void sbx_cgroup_clear(struct sbx_cgroup *cg);

#endif
