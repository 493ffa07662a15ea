/*
 * gwface — the host side of a confined run's gateway routing (docs/sandbox.md,
 * "Gateway routing"): freezes the run's grant, stages the
 * harness's MCP config, and runs `agentstack mcp --grant` outside the
 * sandbox serving its HTTP face on a socket this module hands over.
 *
 * Why a separate process: the gateway is a complete event loop of its own
 * (one dispatch function, trust anchor, secrets, audit); the run reuses it
 * as is rather than growing a second way to reach an upstream. Secrets are
 * resolved in that process, on the host, never inside the sandbox.
 *
 * Guarantees:
 *  - Nothing is started unless the grant was written once (O_EXCL, 0600)
 *    and its digest recorded as `grant_frozen` in the run's events.
 *  - --lockdown: the face's listening socket is the one created inside the
 *    run's network namespace (ns.h): reachable from inside at
 *    egress-proxy:19080, from no host network. --sandbox: a 127.0.0.1
 *    listener on an ephemeral port; both require the per-run token.
 *  - The staged config (token inside) lives in runs/<id>/ (0600) and is
 *    deleted after the run; a mount point this run had to create in the
 *    sandbox home is removed again, reached without following a symlink
 *    (the sandbox writes that tree; a link it leaves never steers the host).
 *  - The gateway runs in its own process group (terminal signals are the
 *    harness's); it gets SIGTERM if agentstack dies, stdin EOF when the run
 *    ends (it then drains and exits), SIGKILL if it has not exited 10 s
 *    later.
 */
#ifndef AS_SANDBOX_GWFACE_H
#define AS_SANDBOX_GWFACE_H

#include <signal.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/plan.h"
#include "sandbox/record.h"

struct sbx_gw {
    int face_fd;       /* --sandbox: the host listener (lockdown: from ns.h), or -1 */
    int port;          /* --sandbox: the kernel's port */
    char *config_host; /* the staged config file */
    char *home;        /* the sandbox home (host path), with mountpoint */
    char *mountpoint;  /* <rel> below home, if no regular file was there before the run */
    pid_t pid;         /* the gateway, or -1 */
    int stdin_fd;      /* its stdin (closing it stops it), or -1 */
    char digest[80];   /* "sha256:…" of the frozen grant */
};

void sbx_gw_init(struct sbx_gw *g);

/* Writes data once to a new 0600 file (O_EXCL, fsync'd). -1 + err. */
int sbx_gw_stage(const char *path, const char *data, size_t len, struct as_err *err);

/* Before the sandbox is built: (--sandbox) the loopback listener, the
 * staged config, the frozen grant and its grant_frozen event. -1 + err. */
int sbx_gw_prepare(const struct sbx_plan *p, struct sbx_rec *rec, struct sbx_gw *g,
                   struct as_err *err);

/* The read-only bind of the staged config over the adapter's config path. */
struct sbx_mount sbx_gw_mount(const struct sbx_plan *p, const struct sbx_gw *g);

/* Starts the gateway on face_fd (taken over: closed here either way), with
 * the signal mask restored to mask in the child. -1 + err. */
int sbx_gw_start(const struct sbx_plan *p, struct sbx_gw *g, int face_fd, const sigset_t *mask,
                 struct as_err *err);

/* Stops the gateway (if started) and removes what prepare staged. */
void sbx_gw_finish(struct sbx_gw *g);

#endif
