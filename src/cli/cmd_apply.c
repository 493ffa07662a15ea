/*
 * agentstack apply — render the manifest's servers into each coding CLI's own
 * config file (04 §3, §7). Previews by default; --write writes atomically,
 * backs up, records ownership and one undo entry. A project must be Trusted
 * for its servers to be written; the machine manifest is never gated.
 * Names a toolset takes from the central library (linked sources, qualified
 * `<source>:<name>`) resolve through src/library, handed to the validator
 * and the renderer as callbacks (the adapters do not depend on the library).
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

int cmd_apply(int argc, char **argv, struct cli_ctx *ctx);
/* apply's run, shared with `diff` (cmd_diff.c) and `instructions`
 * (cmd_instructions.c): diff reports and writes nothing; json (diff only)
 * prints the report as one document; instructions compiles the instruction
 * files alone. */
int cli_apply_run(int argc, char **argv, struct cli_ctx *ctx, bool diff, bool json,
                  bool instructions);

struct apply_args {
    strvec targets;
    const char *toolset;
    const char *scope;
    bool write, dry_run, allow_unresolved, prune_foreign, no_gitignore, verbose;
};

static int parse(int argc, char **argv, struct apply_args *a, const char *cmd)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
#define OPTVAL(name)                                                                               \
    ((strcmp(s, name) == 0 && i + 1 < argc && (val = argv[++i])) ||                                \
     (strncmp(s, name "=", sizeof(name)) == 0 && (val = s + sizeof(name))))
        if (OPTVAL("--target")) {
            strvec_push(&a->targets, val);
        } else if (OPTVAL("--toolset") || OPTVAL("--profile")) {
            a->toolset = val;
        } else if (OPTVAL("--scope")) {
            if (strcmp(val, "global") != 0 && strcmp(val, "project") != 0)
                return cli_usage_error(cmd, "--scope must be global or project (got '%s')", val);
            a->scope = val;
        } else if (strcmp(s, "--write") == 0) {
            a->write = true;
        } else if (strcmp(s, "--dry-run") == 0) {
            a->dry_run = true;
        } else if (strcmp(s, "--allow-unresolved") == 0) {
            a->allow_unresolved = true;
        } else if (strcmp(s, "--prune-foreign") == 0) {
            a->prune_foreign = true;
        } else if (strcmp(s, "--no-gitignore") == 0) {
            a->no_gitignore = true;
        } else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0) {
            a->verbose = true;
        } else if (strcmp(s, "--target") == 0 || strcmp(s, "--toolset") == 0 ||
                   strcmp(s, "--profile") == 0 || strcmp(s, "--scope") == 0) {
            return cli_usage_error(cmd, "%s needs a value", s);
        } else {
            return cli_usage_error(cmd, "unknown argument '%s'", s);
        }
#undef OPTVAL
    }
    if (a->dry_run)
        a->write = false;
    return 0;
}

int cli_apply_run(int argc, char **argv, struct cli_ctx *ctx, bool diff, bool json,
                  bool instructions)
{
    struct apply_args a = {0};
    int rc = parse(argc, argv, &a, diff ? "diff" : instructions ? "instructions" : "apply");
    if (!rc && instructions && (a.allow_unresolved || a.prune_foreign))
        rc = cli_usage_error("instructions", "%s is for servers (try: agentstack apply)",
                             a.allow_unresolved ? "--allow-unresolved" : "--prune-foreign");
    if (!rc && diff &&
        (a.write || a.dry_run || a.allow_unresolved || a.prune_foreign || a.no_gitignore))
        rc = cli_usage_error("diff", "diff only reports (try: agentstack apply --write)");
    if (rc) {
        strvec_clear(&a.targets);
        return rc;
    }
    struct as_err err = AS_ERR_INIT;
    struct cli_render r;
    cli_render_init(&r);
    rc = EXIT_FAIL;

    if (discover_project(ctx->manifest_dir, NULL, &r.p, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (cli_render_load(&r, &err) < 0)
        goto out;
    if (!r.p.found && a.scope && strcmp(a.scope, "project") == 0) {
        cli_errorf("--scope project needs a project manifest (none at or above the current "
                   "directory)");
        rc = EXIT_USAGE;
        goto out;
    }
    if (cli_render_prepare(&r, a.scope, a.write ? "write" : NULL, &err) < 0)
        goto out;
    struct adp_apply_opts o = {
        .targets = &a.targets,
        .toolset = a.toolset,
        .write = a.write,
        .allow_unresolved = a.allow_unresolved,
        .prune_foreign = a.prune_foreign,
        .verbose = a.verbose,
        .no_gitignore = a.no_gitignore,
        .operation = instructions ? "instructions"
                     : a.toolset  ? NULL
                                  : "apply",
        .diff = diff,
        .json = diff && json,
        .instructions = instructions,
    };
    cli_render_opts(&r, &o);
    char *op =
        a.toolset ? xasprintf("%s --toolset %s", instructions ? "instructions" : "apply", a.toolset)
                  : NULL;
    if (op)
        o.operation = op;
    rc = adp_apply(&r.reg, &o, &err);
    free(op);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
out:
    cli_render_release(&r);
    strvec_clear(&a.targets);
    return rc;
}

int cmd_apply(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_apply_run(argc, argv, ctx, false, false, false);
}
