/*
 * agentstack apply — render the manifest's servers into each coding CLI's own
 * config file (docs/adapters.md). Previews by default; --write writes atomically,
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
#include "cli/apply.h"
#include "cli/json_out.h"
#include "library/library.h"
#include "trust/trust.h"

int cmd_apply(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct apply_args
const struct cli_option cli_render_selection[] = {
    {OPT_LIST("target", 0, targets, "ID", "this CLI only")},
    {OPT_STRING("toolset", 0, toolset, "NAME", "render this toolset, not the default"),
     .alias = "profile"},
    {OPT_ENUM("scope", 0, scope, cli_scope_choices,
              "the CLIs' global or project files (default: project inside one)")},
    {OPT_BOOL("verbose", 'v', verbose, "show unchanged targets and every entry")},
    {OPT_END},
};
static const struct cli_option apply_options[] = {
    {OPT_BOOL("write", 0, write, "write atomically, back up, record an undo (default: preview)")},
    {OPT_BOOL("dry-run", 0, dry_run, "preview only, even with --write")},
    {OPT_BOOL("allow-unresolved", 0, allow_unresolved,
              "write even when a ${REF} has no value here (that server is left out)")},
    {OPT_BOOL("prune-foreign", 0, prune_foreign, "also remove entries another manifest wrote")},
    {OPT_BOOL("no-gitignore", 0, no_gitignore,
              "do not add the written project files to .gitignore")},
    {OPT_BOOL("json", 0, json, "one JSON document (docs/json.md)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_apply_spec = {
    .name = "apply",
    .fn = cmd_apply,
    .summary = "render the manifest's servers into every CLI's own config",
    .synopsis = CLI_LINES("apply [--target ID]... [--toolset NAME] [--scope global|project]",
                          "apply [--dry-run] [--write] [--allow-unresolved] [--prune-foreign] "
                          "[--no-gitignore] [-v] [--json]"),
    .description = "Previews each target as a diff; --write writes atomically, backs up and "
                   "records an undo. A project must be trusted for its servers to be written; "
                   "the machine manifest is never gated.",
    .common = cli_render_selection,
    .options = apply_options,
    .examples = CLI_LINES("agentstack apply", "agentstack apply --write",
                          "agentstack apply --target claude --toolset backend --write"),
    .see_also = "diff use undo trust",
    .flags = CLI_JSON_ERRORS,
};

int cli_apply_run(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx,
                  bool diff, bool instructions)
{
    struct apply_args a = {0};
    int rc = cli_parse(spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.dry_run)
        a.write = false;
    const char *scope = cli_scope_name(a.scope);
    bool json = a.json;
    rc = 0;
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
    if (!r.p.found && a.scope == CLI_SCOPE_PROJECT) {
        cli_errorf("--scope project needs a project manifest (none at or above the current "
                   "directory)");
        rc = EXIT_USAGE;
        goto out;
    }
    if (cli_render_prepare(&r, scope, a.write ? "write" : NULL, &err) < 0)
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
    /* apply --json: the report goes nowhere, the rows into one document */
    bool apply_json = json && !diff && !instructions;
    if (a.write && !diff)
        cli_quiet_report(ctx, json);
    char *history_id = NULL;
    if (apply_json) {
        o.out = cli_json_quiet_open();
        o.color = false;
        o.report = json_array();
        o.history_id = &history_id;
    }
    rc = adp_apply(&r.reg, &o, &err);
    free(op);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    if (apply_json) {
        cli_json_quiet_close(o.out);
        if (rc == 0 || json_array_size(o.report)) {
            json_t *doc = cli_json_doc("apply", true);
            json_object_set_new(doc, "scope", json_string(r.project_scope ? "project" : "global"));
            json_object_set_new(doc, "write", json_boolean(a.write));
            json_object_set_new(doc, "targets", o.report);
            json_object_set_new(doc, "history_id",
                                history_id ? json_string(history_id) : json_null());
            cli_json_print_result(doc, rc);
        } else {
            json_decref(o.report);
        }
        free(history_id);
    }
out:
    cli_render_release(&r);
    strvec_clear(&a.targets);
    return rc;
}

int cmd_apply(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_apply_run(&cmd_apply_spec, argc, argv, ctx, false, false);
}
