/*
 * agentstack session start <toolset> | end [--all] | list [--json]
 * (04 §7, the seed's clean-at-rest mode): start activates a toolset like
 * `use --write` and records how to undo it; end puts every file, link and
 * ledger entry back as it was. A project must be Trusted to start.
 * Start validates and gates like `use --write`: names a toolset takes from
 * the central library (linked sources, qualified `<source>:<name>`) resolve
 * through src/library, handed to the validator, the trust gate and the
 * renderer as callbacks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "library/library.h"
#include "trust/trust.h"

int cmd_session(int argc, char **argv, struct cli_ctx *ctx);

/* The key a session is recorded under: the project's manifest dir, or the
 * machine home for the machine manifest. */
static int session_dir(struct cli_ctx *ctx, struct bundle_paths *p, strbuf *out, struct as_err *err)
{
    if (discover_project(ctx->manifest_dir, NULL, p, err) < 0)
        return -1;
    if (p->found)
        return discover_project_key(p->base, out);
    return home_dir(out, err);
}

static int start(int argc, char **argv, struct cli_ctx *ctx)
{
    const char *toolset = NULL, *scope = NULL;
    strvec targets = STRVEC_INIT;
    bool allow_unresolved = false;
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--scope") == 0 && i + 1 < argc) {
            scope = argv[++i];
            if (strcmp(scope, "global") != 0 && strcmp(scope, "project") != 0) {
                strvec_clear(&targets);
                return cli_usage_error("session", "--scope must be global or project");
            }
        } else if (strcmp(s, "--target") == 0 && i + 1 < argc) {
            strvec_push(&targets, argv[++i]);
        } else if (strcmp(s, "--allow-unresolved") == 0) {
            allow_unresolved = true;
        } else if (s[0] == '-' || toolset) {
            strvec_clear(&targets);
            return cli_usage_error("session", "unexpected argument '%s'", s);
        } else {
            toolset = s;
        }
    }
    struct as_err err = AS_ERR_INIT;
    struct cli_render r;
    cli_render_init(&r);
    char *op = NULL;
    strbuf key = SB_INIT;
    int rc = EXIT_FAIL;
    if (session_dir(ctx, &r.p, &key, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (cli_render_load(&r, &err) < 0)
        goto out;
    const struct mf_toolset *ts =
        toolset ? manifest_toolset(r.m, toolset) : manifest_effective_toolset(r.m);
    if (!ts) {
        cli_errorf(toolset ? "no toolset '%s' in %s" : "which toolset?%s %s names no default",
                   toolset ? toolset : "", r.m->path);
        fprintf(stderr, "  agentstack use --list\n");
        goto out;
    }
    /* Validation as `use --write` does it: errors refuse the start (a session
     * writes). */
    if (cli_render_prepare(&r, scope, "start a session", &err) < 0)
        goto out;
    op = xasprintf("session start '%s'", ts->name);
    struct adp_apply_opts o = {
        .targets = &targets,
        .toolset = ts->name,
        .allow_unresolved = allow_unresolved,
        .operation = op,
    };
    cli_render_opts(&r, &o);
    rc = adp_session_start(&r.reg, &o, key.buf, &err);
    fflush(stdout);
    if (rc)
        cli_error(&err);
out:
    free(op);
    cli_render_release(&r);
    sb_release(&key);
    strvec_clear(&targets);
    return rc;
}

int cmd_session(int argc, char **argv, struct cli_ctx *ctx)
{
    if (argc < 2)
        return cli_usage_error("session", "say start <toolset>, end or list");
    const char *sub = argv[1];
    if (strcmp(sub, "start") == 0)
        return start(argc, argv, ctx);
    struct as_err err = AS_ERR_INIT;
    int rc;
    if (strcmp(sub, "end") == 0) {
        bool all = false;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--all") == 0)
                all = true;
            else
                return cli_usage_error("session", "unexpected argument '%s'", argv[i]);
        }
        struct bundle_paths p = {0};
        strbuf key = SB_INIT;
        if (!all && session_dir(ctx, &p, &key, &err) < 0) {
            cli_error(&err);
            bundle_paths_free(&p);
            sb_release(&key);
            return EXIT_FAIL;
        }
        rc = adp_session_end(all ? NULL : key.buf, all, stdout, &err);
        bundle_paths_free(&p);
        sb_release(&key);
    } else if (strcmp(sub, "list") == 0) {
        bool json = argc > 2 && strcmp(argv[2], "--json") == 0;
        if (argc > 3 || (argc == 3 && !json))
            return cli_usage_error("session", "list takes only --json");
        rc = adp_session_list(json, stdout, &err);
    } else {
        return cli_usage_error("session", "unknown subcommand '%s' (start, end, list)", sub);
    }
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    return rc;
}
