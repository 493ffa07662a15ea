/*
 * agentstack instructions — compile the manifest's [instructions] into each
 * CLI's instruction file on its own (docs/adapters.md): no servers,
 * settings, hooks or skills. Previews per file (`→ would update managed
 * region` / `✓ up to date`); --write writes (`✓ wrote managed region`)
 * atomically with backup, ledger and one undo entry. It is apply's run
 * restricted to the instruction lane, so the trust gate, the pins in
 * agentstack.lock, variants and shared files behave exactly as under apply.
 */
#include "cli/apply.h"

int cmd_instructions(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct apply_args
static const struct cli_option instructions_options[] = {
    {OPT_BOOL("write", 0, write, "write, back up and record an undo (default: preview)")},
    {OPT_BOOL("dry-run", 0, dry_run, "preview only, even with --write")},
    {OPT_BOOL("no-gitignore", 0, no_gitignore,
              "do not add the written project files to .gitignore")},
    /* apply's server flags: refused with the command to use instead */
    {OPT_BOOL("allow-unresolved", 0, allow_unresolved, "refused: for servers"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_BOOL("prune-foreign", 0, prune_foreign, "refused: for servers"), .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_instructions_spec = {
    .name = "instructions",
    .fn = cmd_instructions,
    .summary = "compile [instructions] into each CLI's instruction file",
    .synopsis = CLI_LINES("instructions [--target ID]... [--toolset NAME] "
                          "[--scope global|project]",
                          "instructions [--dry-run] [--write] [-v]"),
    .description = "Previews each file's managed region; --write writes, backs up and records "
                   "an undo. Only the instruction lane: no servers, settings, hooks or skills.",
    .common = cli_render_selection,
    .options = instructions_options,
    .examples = CLI_LINES("agentstack instructions", "agentstack instructions --write"),
    .see_also = "apply undo",
};

int cmd_instructions(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_apply_run(&cmd_instructions_spec, argc, argv, ctx, false, true);
}
