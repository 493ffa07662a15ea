/*
 * executor — the confinement of one tools_execute program: a jail (jail.h)
 * with no workspace and no route out but the gateway's relay, running the
 * Node.js runtime on a staged app/ (docs/tools-execute.md).
 *
 * Why: a generated program must compose tools without inheriting the
 * machine. The boundary is the sandbox's own (namespaces, seccomp,
 * no-new-privs, capabilities dropped, Landlock where the kernel has it);
 * this file only decides what goes into it and which limits it runs under.
 *
 * Guarantees (sbx_executor_start refuses, with the reason, unless all hold):
 *  - The view is the system's read-only directories, a synthesized /etc,
 *    the runtime's install prefix read-only, the staged app/ read-only at
 *    /app and one writable file at /agentstack-result.json; an empty home
 *    the program cannot write; 16 MiB tmpfs /tmp and /dev/shm, mounted
 *    noexec (nothing written there runs). Never the
 *    workspace, the user's home, $AGENTSTACK_HOME or any credential; the
 *    environment holds only PATH, HOME and TMPDIR.
 *  - Network: a namespace of its own with loopback only, and one listener
 *    at egress-proxy:19080 handed to the caller (the relay).
 *  - The program runs as uid/gid 65532 inside; on a root host also
 *    outside, so the kernel counts its processes against RLIMIT_NPROC.
 *  - Limits on the process before its exec: RLIMIT_DATA (memory), RLIMIT_NPROC
 *    (processes), RLIMIT_FSIZE (file size), RLIMIT_CPU, RLIMIT_NOFILE,
 *    RLIMIT_CORE 0 — per-process limits, always on. Where the machine has
 *    a usable cgroup (cgroup.h), sbx_executor_cgroup makes one that bounds
 *    the whole tree too (memory incl. page cache and tmpfs, processes,
 *    1 CPU), and the jail's init is moved into it before the program
 *    starts.
 *  - Node runs with its permission model: reads only beneath /app, writes
 *    only the result file, no child processes, workers or native addons.
 */
#ifndef AS_SANDBOX_EXECUTOR_H
#define AS_SANDBOX_EXECUTOR_H

#include <stddef.h>

#include "base/err.h"
#include "sandbox/cgroup.h"
#include "sandbox/jail.h"

#define SBX_EXEC_APP "/app"
#define SBX_EXEC_RESULT "/agentstack-result.json"
/* The runtime's floor (docs/tools-execute.md): the first releases with
 * module.registerHooks, in-thread module hooks — module.register, all that
 * older ones have, runs its hooks in a worker, which Node's permission
 * model refuses — and with the stable --permission flag. */
#define SBX_EXEC_NODE_NEEDED "22.15 (23.5 in the 23 line)"
/* 1 when Node.js major.minor is at or above that floor. */
int sbx_executor_version_ok(int major, int minor);

struct sbx_executor_limits {
    unsigned long long memory_bytes; /* RLIMIT_DATA */
    unsigned long long processes;    /* RLIMIT_NPROC */
    unsigned long long file_bytes;   /* RLIMIT_FSIZE */
    unsigned long long cpu_seconds;  /* RLIMIT_CPU */
    unsigned cpus;                   /* the cgroup's CPU bandwidth, whole CPUs */
};
/* 128 MiB, 32 processes, 4 MiB, cpu_seconds from the timeout, 1 CPU. */
void sbx_executor_default_limits(long long timeout_ms, struct sbx_executor_limits *out);

struct sbx_executor_request {
    const char *node;        /* the runtime, an absolute host path */
    const char *app_dir;     /* staged app/: bound read-only at /app */
    const char *result_file; /* bound read-write at /agentstack-result.json */
    struct sbx_executor_limits limits;
    /* From sbx_executor_cgroup, or NULL (rlimits alone). The caller owns
     * it and destroys it once the program has ended. */
    const struct sbx_cgroup *cgroup;
};

/* The execution's cgroup `name` under this machine's cgroup tree with l's
 * memory, processes and CPUs: 0 with *out NULL when none is usable here,
 * 0 with *out, or -1 + err (usable but not applied: run nothing). */
int sbx_executor_cgroup(const char *name, const struct sbx_executor_limits *l,
                        struct sbx_cgroup **out, struct as_err *err);

/* Starts the program (/app/bootstrap.mjs) with pipes on its stdio and the
 * relay listener in out->listen_fd. -1 + err: nothing runs. */
int sbx_executor_start(const struct sbx_executor_request *rq, struct sbx_jail_proc *out,
                       struct as_err *err);
/* The same confinement, view and limits running argv instead (argv[0] is
 * rq->node): sbx_executor_start is this with Node's permission flags and
 * the bootstrap. The confinement tests start a shell in it, so what they
 * prove holds beneath Node's own permission model. */
int sbx_executor_spawn(const struct sbx_executor_request *rq, const char *const *argv,
                       struct sbx_jail_proc *out, struct as_err *err);

/* Runs `<node> --version` in the same confinement (no app, no relay) and
 * parses it: 0 with the version in buf and *ok set when it is at or above
 * the floor; -1 + err when it cannot be run. Nothing of the runtime runs on the
 * host. */
int sbx_executor_probe(const char *node, char *buf, size_t n, int *ok, struct as_err *err);

/* Kills a started program's whole tree (init takes every process of its PID
 * namespace with it) and reaps init. Descriptors are left to the caller. */
void sbx_executor_kill(struct sbx_jail_proc *p);

#endif
