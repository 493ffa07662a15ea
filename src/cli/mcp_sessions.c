/*
 * The gateway's native-session callbacks (gw_opts.session_start/_end):
 * agentstack_session_start and _end run exactly what `agentstack session
 * start|end` runs, for the project the connection is bound to. The gateway
 * already checked its gate (grant, trust, lease); the session code checks
 * trust again itself, as it does for a person.
 *
 * Their report is what the command prints. In the gateway fd 1 is not the
 * MCP stream (cmd_mcp.c moved that to its own descriptor and pointed fd 1 at
 * stderr), so both are pointed at a private temporary file for the call and
 * read back, capped: nothing the session code prints reaches the stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/fs.h"
#include "cli/cli.h"
#include "cli/mcp_sessions.h"

#define REPORT_MAX (64u << 10)

struct capture {
    int fd, saved_out, saved_err;
};

static int capture_begin(struct capture *c, struct as_err *err)
{
    fflush(stdout);
    fflush(stderr);
    c->fd = memfd_create("agentstack-session-report", MFD_CLOEXEC);
    c->saved_out = dup(1);
    c->saved_err = dup(2);
    if (c->fd < 0 || c->saved_out < 0 || c->saved_err < 0 || dup2(c->fd, 1) < 0 ||
        dup2(c->fd, 2) < 0) {
        as_err_errno(err, "cannot capture the session report");
        if (c->saved_out >= 0)
            dup2(c->saved_out, 1);
        if (c->saved_err >= 0)
            dup2(c->saved_err, 2);
        return -1;
    }
    return 0;
}

static void capture_end(struct capture *c, strbuf *out)
{
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved_out, 1);
    dup2(c->saved_err, 2);
    close(c->saved_out);
    close(c->saved_err);
    off_t n = lseek(c->fd, 0, SEEK_END);
    if (n > 0) {
        size_t want = (size_t)n > REPORT_MAX ? REPORT_MAX : (size_t)n;
        sb_grow(out, want);
        ssize_t got = pread(c->fd, out->buf + out->len, want, 0);
        if (got > 0)
            sb_setlen(out, out->len + (size_t)got);
    }
    close(c->fd);
}

static int start(const char *manifest_dir, const char *toolset, const char *scope, strbuf *out,
                 struct as_err *err)
{
    struct capture c;
    if (capture_begin(&c, err) < 0)
        return -1;
    struct cli_ctx ctx = {.manifest_dir = manifest_dir};
    int rc = cli_session_start(&ctx, toolset, scope, NULL, false);
    capture_end(&c, out);
    return rc == EXIT_OK ? 0 : 1;
}

static int end(const char *manifest_dir, strbuf *out, struct as_err *err)
{
    struct capture c;
    if (capture_begin(&c, err) < 0)
        return -1;
    struct cli_ctx ctx = {.manifest_dir = manifest_dir};
    int rc = cli_session_end(&ctx, false);
    capture_end(&c, out);
    return rc == EXIT_OK ? 0 : 1;
}

void cli_mcp_session_hooks(struct gw_opts *o)
{
    o->session_start = start;
    o->session_end = end;
}
