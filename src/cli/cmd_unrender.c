/*
 * agentstack unrender [--target ID]… [--scope global|project] [--write]
 * [--verbose] — take this manifest's rendered files back out of the CLIs
 * (docs/adapters.md, "Uninstall and unrender").
 *
 * Why: apply and use write servers, instruction regions, settings, hooks and
 * skill links into the CLIs' own files; a user who wants the project served
 * live by the gateway instead, or simply gone from the CLIs, needs the exact
 * inverse without deleting anything else. It is uninstall limited to what
 * this manifest wrote, in one scope: the same adp_uninstall, so the same
 * pruning, records and undo.
 *
 * Guarantees: preview unless --write; only names the ledger says this
 * manifest wrote go (another manifest's entries, foreign entries and the
 * gateway registration stay); the manifest itself, the lock and
 * $AGENTSTACK_HOME are never touched; every write is recorded, so
 * `agentstack undo` reverses it.
 */
#include <stdio.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "cli/cli.h"

int cmd_unrender(int argc, char **argv, struct cli_ctx *ctx);

struct unrender_args {
    strvec targets;
    int scope;
    bool write, dry_run, verbose;
};

#define CLI_ARGS struct unrender_args
static const struct cli_option unrender_options[] = {
    {OPT_LIST("target", 0, targets, "ID", "this CLI only (repeatable)")},
    {OPT_ENUM("scope", 0, scope, cli_scope_choices,
              "the CLIs' project or global files (default: project inside one)")},
    {OPT_BOOL("write", 0, write, "remove them (default: show what would go)")},
    {OPT_BOOL("dry-run", 0, dry_run, "preview only, even with --write")},
    {OPT_BOOL("verbose", 'v', verbose, "every line of the plan, not only what changes")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_unrender_spec = {
    .name = "unrender",
    .fn = cmd_unrender,
    .summary = "take what apply and use rendered for this manifest back out of the CLIs' files",
    .synopsis = CLI_LINES("unrender [--target ID]... [--scope global|project] [--write] "
                          "[--verbose]"),
    .description = "Removes the servers, instruction regions, settings, hooks and skill links "
                   "this manifest's renders placed (as the ownership ledger lists them), the "
                   ".gitignore block, and what that leaves empty. Entries another manifest or "
                   "a person wrote, the gateway registration, the manifest and "
                   "$AGENTSTACK_HOME stay. Recorded: `agentstack undo` reverses it.",
    .options = unrender_options,
    .examples = CLI_LINES("agentstack unrender", "agentstack unrender --write",
                          "agentstack unrender --scope global --target codex --write"),
    .see_also = "apply uninstall undo",
};

int cmd_unrender(int argc, char **argv, struct cli_ctx *ctx)
{
    struct unrender_args a = {0};
    int rc = cli_parse(&cmd_unrender_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_unrender_spec, argc, argv);
    if (rc != CLI_CONTINUE) {
        strvec_clear(&a.targets);
        return rc;
    }
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    strbuf machine = SB_INIT;
    struct adp_registry reg;
    bool have_reg = false;
    rc = EXIT_FAIL;
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0 ||
        (!p.found && home_path(HOME_MACHINE_MANIFEST, &machine, &err) != 0)) {
        cli_error(&err);
        goto out;
    }
    bool project = p.found && a.scope != CLI_SCOPE_GLOBAL;
    if (a.scope == CLI_SCOPE_PROJECT && !p.found) {
        cli_errorf("no project here to unrender (--scope project)");
        fprintf(stderr, "  run it inside a project, or pass --manifest-dir DIR\n");
        goto out;
    }
    if (adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    have_reg = true;
    if (adp_registry_check_ids(&reg, &a.targets, &err) < 0) {
        cli_error(&err);
        rc = EXIT_USAGE;
        goto out;
    }
    const char *manifest = p.found ? p.manifest : machine.buf;
    term_fprintf(stdout, "Unrender %s (scope: %s)%s\n", manifest, project ? "project" : "global",
                 a.write && !a.dry_run ? "" : " — preview");
    size_t n_changed = 0;
    struct adp_uninstall_opts o = {
        .global = !project,
        .projects = project,
        .project_root = project ? p.project_root : NULL,
        .targets = &a.targets,
        .source_manifest = manifest,
        .gitignore = project && !a.targets.n,
        .write = a.write && !a.dry_run,
        .verbose = a.verbose,
        .operation = "unrender",
        .n_changed = &n_changed,
        .out = stdout,
    };
    rc = adp_uninstall(&reg, &o, &err);
    fflush(stdout);
    if (rc) {
        cli_error(&err);
        rc = EXIT_FAIL;
        goto out;
    }
    if (!o.write)
        term_fprintf(stdout, "Dry run. Nothing changed — re-run with --write to unrender.\n");
    else if (!n_changed)
        term_fprintf(stdout, "✓ nothing rendered by this manifest is left\n");
    else
        term_fprintf(stdout, "✓ unrendered — the manifest is unchanged; `agentstack apply "
                             "--write` renders it again\nundo: agentstack undo\n");
out:
    if (have_reg)
        adp_registry_free(&reg);
    bundle_paths_free(&p);
    sb_release(&machine);
    strvec_clear(&a.targets);
    return rc;
}
