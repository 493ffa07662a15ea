/*
 * agentstack diff — each target's files against the manifest: managed,
 * foreign (kept), hand-edited; writes nothing and exits 0 (docs/adapters.md). It is
 * apply's plan without the write, so it shares apply's run (cmd_apply.c)
 * and adds --json, the stable form scripts read:
 *
 *   {schema_version: 1, command: "diff", scope: "project"|"global",
 *    targets: [{id, display, path (absolute, or null), kind ("servers", or
 *               the lanes a file holds: "instructions + settings"),
 *               state: differs|in_sync|hand-edited|failed|skipped,
 *               hand_edited (the file no longer hashes to what we last
 *               wrote — one hash per file, so a property of the target),
 *               entries: [{name, state: managed|foreign}], removed: [name],
 *               added_lines, removed_lines (differs/in_sync/hand-edited),
 *               error (failed), note (skipped)}],
 *    drifted: N, in_sync: bool}
 *
 * managed = rendered from this manifest; foreign = written by another
 * manifest and kept; a user's own entries are not claimed. No diff text:
 * line counts only, so no resolved value can reach a script's log.
 */
#include "cli/apply.h"

int cmd_diff(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct apply_args
static const struct cli_option diff_options[] = {
    {OPT_BOOL("json", 0, json, "one JSON document (schema_version 1) for scripts")},
    /* apply's: refused with the command to use instead */
    {OPT_BOOL("write", 0, write, "refused: diff only reports"), .flags = CLI_OPT_HIDDEN},
    {OPT_BOOL("dry-run", 0, dry_run, "refused: diff only reports"), .flags = CLI_OPT_HIDDEN},
    {OPT_BOOL("allow-unresolved", 0, allow_unresolved, "refused: diff only reports"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_BOOL("prune-foreign", 0, prune_foreign, "refused: diff only reports"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_BOOL("no-gitignore", 0, no_gitignore, "refused: diff only reports"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_diff_spec = {
    .name = "diff",
    .fn = cmd_diff,
    .summary = "compare each CLI's files with the manifest (managed, foreign, hand-edited)",
    .synopsis = CLI_LINES("diff [--target ID]... [--toolset NAME] [--scope global|project] [-v] "
                          "[--json]"),
    .description = "Writes nothing; exit 0. Reconcile with: agentstack apply --write",
    .common = cli_render_selection,
    .options = diff_options,
    .examples = CLI_LINES("agentstack diff", "agentstack diff --json"),
    .see_also = "apply adopt",
};

int cmd_diff(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_apply_run(&cmd_diff_spec, argc, argv, ctx, true, false);
}
