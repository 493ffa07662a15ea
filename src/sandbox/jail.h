/*
 * jail — the confinement primitive: one function builds a confinement plan
 * from a workspace view, a write scope, a secret set and an egress mode;
 * one starts it. The MCP servers a confined run routes, and every server
 * of a gateway under `[policy.isolation] servers = "confined"`, run in one
 * (docs/enforcement.md); so can any later guest that must not touch the
 * host (no workspace, no network).
 *
 * Why: a process started for a confined run — anything that executes bytes
 * the agent could have written — must never run outside the boundary the
 * run has. The launcher, the layers and the view are the sandbox's own
 * (ns.h, confine.h, view.c), so a jail is exactly as strict as a run's
 * sandbox; this file only decides what goes into one.
 *
 * Guarantees (sbx_jail_build refuses, with the reason, unless all hold):
 *  - The view is the sandbox's: read-only system directories, a synthesized
 *    /etc, fresh /proc, /dev, /tmp; the workspace (when given) at its own
 *    host path, read-only unless the write scope covers it, its secrets
 *    shadowed, .git's config and hooks read-only; the program's install
 *    prefix read-only; a private home at SBX_INSIDE_HOME (the caller's
 *    directory, or an empty tmpfs). Nothing else of the host — never the
 *    real $HOME, never $AGENTSTACK_HOME.
 *  - Snapshots (read-only files or directories of the caller's) are bound
 *    over their paths after the workspace, so the process sees those bytes
 *    and not what the workspace holds there now.
 *  - The environment is the caller's (its secret set) without any HOME,
 *    TMPDIR, XDG_* or proxy variable of the host; HOME and TMPDIR point
 *    inside, and the proxy variables at the jail's own proxy (PROXY mode).
 *  - Network: always a namespace of its own holding only loopback. NONE has
 *    nothing listening there; PROXY has the egress proxy's listener at
 *    127.0.0.1:SBX_LOCKDOWN_PROXY_PORT (`egress-proxy`), created inside and
 *    handed to the caller, which serves it from the host side: the only
 *    route out, and the caller's proxy decides every destination.
 *  - The process runs as the invoking uid (never 0 inside), with no
 *    capability, no-new-privs, seccomp and Landlock as a run's harness
 *    (ns.h); it and everything it starts die when the caller closes the
 *    control socket, dies, or SIGKILLs the pid.
 */
#ifndef AS_SANDBOX_JAIL_H
#define AS_SANDBOX_JAIL_H

#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "sandbox/ns.h"

enum sbx_jail_net {
    SBX_JAIL_NET_NONE = 1, /* loopback only, nothing listening: no route out */
    SBX_JAIL_NET_PROXY,    /* loopback only, plus the egress proxy's listener */
    SBX_JAIL_NET_RELAY,    /* loopback only, plus one listener at egress-proxy:19080 that
                              the caller serves (the executor's relay); no proxy */
};

/* A caller's file or directory bound at a path of its own, outside the
 * system directories, the home and the workspace (e.g. a staged /app). */
struct sbx_jail_bind {
    const char *src; /* host path */
    const char *dst; /* absolute, a path nothing else of the view uses */
    int writable;    /* read-write (nosuid, nodev) and a Landlock write root */
};

struct sbx_jail_snapshot {
    const char *src; /* host file or directory holding the verified bytes */
    const char *dst; /* the path it covers in the view (absolute) */
};

struct sbx_jail_request {
    const char *workspace;    /* host directory (canonical), bound at its own path; NULL: none */
    int writable;             /* the write scope covers the workspace */
    const char *manifest_dir; /* its secrets are shadowed too (NULL: none) */
    const char *home;         /* host directory for the private home; NULL: an empty tmpfs */
    const char *program;      /* host path of the program (argv[0] resolved) */
    const char *const *argv;  /* argv[0] as the process sees it */
    const char *const *envp;  /* the secret set: the environment the caller grants */
    const char *cwd;          /* inside the view; NULL: the workspace, else / */
    const struct sbx_jail_snapshot *snapshots;
    size_t nsnapshots;
    enum sbx_jail_net net;
    const char *proxy_token; /* PROXY: the token the caller's proxy expects (64 hex) */
    const struct sbx_jail_bind *binds;
    size_t nbinds;
    const struct sbx_rlimit *rlimits; /* set on the process before its exec */
    size_t nrlimits;
    /* Optional: sandbox-init is moved into it before the harness starts,
     * so the whole tree runs inside (cgroup.h). The caller owns it. */
    const struct sbx_cgroup *cgroup;
    int service_uid; /* run as SBX_JAIL_SERVICE_UID/GID inside (and, on a root host,
                        outside too), not as the invoking user's id */
};

#define SBX_JAIL_SERVICE_UID 65532

struct sbx_jail;
struct sbx_cgroup;

/* Builds the plan (creates nothing, starts nothing). -1 + err with the
 * reason a process cannot be confined so. */
int sbx_jail_build(const struct sbx_jail_request *rq, struct sbx_jail **out, struct as_err *err);
void sbx_jail_free(struct sbx_jail *j);
/* One line for people: "own network namespace (proxy only), workspace
 * read-only, private home, 3 snapshot(s)". */
void sbx_jail_describe(const struct sbx_jail *j, strbuf *out);

struct sbx_jail_proc {
    pid_t pid;     /* sandbox-init in the caller's namespace: kill it to end the jail */
    int ctl;       /* keep open while the jail runs; closing it kills the jail */
    int listen_fd; /* PROXY: the in-namespace listener to serve, else -1 */
    int in_fd;     /* the process's stdin (write end) */
    int out_fd;    /* its stdout (read end) */
    int err_fd;    /* its stderr (read end) */
};

/* Starts the plan with pipes on stdin, stdout and stderr, and returns once
 * the process has been exec'd (0) or refused (-1 + err; nothing runs). */
int sbx_jail_start(const struct sbx_jail *j, struct sbx_jail_proc *out, struct as_err *err);
/* Closes whatever descriptors of p are still open (not the pid). */
void sbx_jail_proc_close(struct sbx_jail_proc *p);

#endif
