/*
 * ns — the namespace launcher: a sandbox-init process in new user, mount,
 * PID, IPC and UTS namespaces (plus a network namespace for --lockdown),
 * inside a synthesized root, that runs one harness and dies with it
 * (docs/sandbox.md).
 *
 * Why: the sandbox must start in milliseconds with no daemon, as root or
 * as an ordinary user. Everything the child does is driven by a spec the
 * run plan computed; the launcher decides nothing about policy.
 *
 * Guarantees:
 *  - The harness never runs as uid 0 inside: the inner uid/gid must be
 *    non-zero (refused otherwise). Capabilities are cleared in every set,
 *    securebits locked, no-new-privs set, mounts locked by a nested user
 *    namespace, seccomp and Landlock applied (where the kernel has them)
 *    before the harness is forked.
 *  - Nothing of the host is visible except the spec's mounts; the new root
 *    is read-only; /proc is a fresh procfs of the new PID namespace.
 *  - No descriptor of the caller crosses into the sandbox but stdin, stdout
 *    and stderr (the spec's, or the caller's own): init closes every other
 *    one it inherited before it builds anything (a gateway's client stream,
 *    listeners and other servers' pipes stay outside).
 *  - Setup failures (no user namespaces, procfs refused, a mount that
 *    fails) are reported before anything is launched, with the reason.
 *  - With new_net, the proxy's listening socket (and the gateway face's,
 *    when asked for) is created inside the new network namespace (loopback
 *    only) and handed to the parent; no other interface exists, so the
 *    host network cannot reach either.
 *  - PID 1 inside forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGWINCH/SIGUSR1/2
 *    to the harness's process group, reaps every child and exits with the
 *    harness status; when it exits, or when the parent dies (PDEATHSIG and
 *    the control socket's EOF), every process of the sandbox is killed.
 */
#ifndef AS_SANDBOX_NS_H
#define AS_SANDBOX_NS_H

#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"

enum sbx_mount_kind {
    SBX_MNT_RO_BIND = 1, /* host src bound read-only at dst */
    SBX_MNT_RW_BIND,     /* host src bound read-write (nosuid, nodev) at dst */
    SBX_MNT_TMPFS,       /* empty tmpfs at dst; data = mount options */
    SBX_MNT_SCRATCH,     /* empty tmpfs at dst that executes nothing (noexec, nosuid,
                          * nodev); data = mount options */
    SBX_MNT_PROC,        /* fresh procfs of the new PID namespace at dst */
    SBX_MNT_DEVPTS,      /* private devpts instance at dst */
    SBX_MNT_DEV,         /* host device node src bound at dst */
    SBX_MNT_EMPTY_FILE,  /* read-only empty file over dst (a shadowed secret) */
    SBX_MNT_EMPTY_DIR,   /* read-only empty directory over dst */
    SBX_MNT_SYMLINK,     /* dst is a symlink to src */
    SBX_MNT_FILE,        /* dst is a generated read-only file holding data */
    SBX_MNT_DIR,         /* mkdir dst (mode 0755) */
};

struct sbx_mount {
    enum sbx_mount_kind kind;
    const char *src;  /* host path (binds, devices) or link target */
    const char *dst;  /* absolute path inside the sandbox */
    const char *data; /* file content, or tmpfs options */
    int optional;     /* a missing source is skipped, not an error */
    /* Binds only: dst lies in a writable tree that an earlier run could have
     * filled (the sandbox home). Its path is walked without following any
     * symlink; a link or file in the way of a directory is replaced by one,
     * and the bind lands on exactly the inode that walk opened. */
    int nofollow;
};

/* A resource limit the harness is started under (soft = hard). */
struct sbx_rlimit {
    int resource; /* RLIMIT_* */
    unsigned long long value;
};

struct sbx_ns_spec {
    const char *const *argv; /* argv[0]: absolute path inside the sandbox */
    const char *const *envp;
    const char *cwd; /* inside the sandbox */
    const struct sbx_mount *mounts;
    size_t nmounts;
    const char *const *writable; /* Landlock write roots inside (NULL-terminated) */
    const char *hostname;
    int new_net;     /* --lockdown: a network namespace with only lo */
    int listen_port; /* with new_net: bind 127.0.0.1:<port> inside, hand back */
    int face_port;   /* with new_net: the gateway face's port, likewise (0: none) */
    uid_t inner_uid, outer_uid;
    gid_t inner_gid, outer_gid;
    /* With use_stdio: these descriptors become init's (and so the
     * harness's) stdin, stdout and stderr; else the caller's 0-2 are kept. */
    int use_stdio;
    int stdio[3];
    /* Optional: once the root is built (as inner_uid, which reaches the
     * host's binds), init and the harness switch to run_uid/run_gid, mapped
     * to run_outer_uid/gid — only a privileged caller can map a second id,
     * so the others leave these 0. On a root host this keeps the harness's
     * kernel uid off 0, where RLIMIT_NPROC is not enforced. */
    uid_t run_uid, run_outer_uid;
    gid_t run_gid, run_outer_gid;
    /* Limits set on the harness just before its exec (none when 0). */
    const struct sbx_rlimit *rlimits;
    size_t nrlimits;
};

struct sbx_ns_child {
    pid_t pid;        /* sandbox-init, in the caller's PID namespace */
    int pidfd;        /* readable when init exits */
    int ctl;          /* control socket to init */
    int listen_fd;    /* the in-namespace listener (new_net), or -1 */
    int face_fd;      /* the in-namespace gateway face listener, or -1 */
    pid_t harness;    /* harness pid inside, once started */
    char layers[256]; /* "seccomp, landlock abi 7" etc., for the record */
    int ended;        /* init reported the harness's end (or its socket closed) */
    int end_code;     /* with ended: the harness's exit status, or -1 */
    int end_sig;      /* with ended: the signal that ended it, or -1 */
};

/* Starts sandbox-init and waits until it has built the sandbox and applied
 * every layer (or failed). On failure nothing was launched; err says why
 * (the caller adds «nothing was launched»). */
int sbx_ns_start(const struct sbx_ns_spec *s, struct sbx_ns_child *c, struct as_err *err);
/* sbx_ns_start in two halves, so the caller's own start-up work runs while
 * init builds the sandbox: spawn clones init, writes its id maps and lets
 * it build; ready waits for the build (both release the child on failure).
 * Nothing can be launched before sbx_ns_go. */
int sbx_ns_spawn(const struct sbx_ns_spec *s, struct sbx_ns_child *c, struct as_err *err);
int sbx_ns_ready(const struct sbx_ns_spec *s, struct sbx_ns_child *c, struct as_err *err);

/* Tells init to start the harness; returns once it has exec'd (0) or failed
 * to (-1 with err, e.g. "sh: No such file or directory"). */
int sbx_ns_go(struct sbx_ns_child *c, struct as_err *err);

/* Reads what init sent on the control socket (c->ctl polled readable):
 * returns 1 once init has reported the harness's end ("exit", also an EOF:
 * init is gone), else 0. init's own exit (tearing down the namespaces)
 * still follows; the caller can record the end meanwhile, then reap. */
int sbx_ns_poll_end(struct sbx_ns_child *c);

/* The layers sandbox-init reports in "ready" on this kernel ("seccomp,
 * landlock abi 7"), known before it has applied them: init applies every
 * one or refuses. */
void sbx_ns_layers(char *buf, size_t n);

/* Sends sig to init (which forwards it to the harness). */
void sbx_ns_signal(struct sbx_ns_child *c, int sig);

/* Reaps init after pidfd is readable (or blocks until it exits). Returns the
 * harness result: *code = exit status, or *sig = the signal that ended it;
 * both -1 if init itself was killed before reporting. With c->ended, the
 * reported end is returned without waiting (init is reaped by release). */
int sbx_ns_reap(struct sbx_ns_child *c, int *code, int *sig);

/* SIGKILLs init if still running, reaps it and closes every descriptor.
 * After init's "exit" report (which it sends only once every other process
 * of the sandbox is dead and reaped) init is reaped only if its exit is
 * already complete — its namespace teardown is not waited for. */
void sbx_ns_release(struct sbx_ns_child *c);

/* Probes whether user namespaces work here (a throwaway child). 0 or -1+err. */
int sbx_ns_probe(struct as_err *err);

#endif
