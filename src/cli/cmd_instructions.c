/*
 * agentstack instructions — compile the manifest's [instructions] into each
 * CLI's instruction file on its own (04 §5 "Stand-alone"): no servers,
 * settings, hooks or skills. Previews per file (`→ would update managed
 * region` / `✓ up to date`); --write writes (`✓ wrote managed region`)
 * atomically with backup, ledger and one undo entry. It is apply's run
 * restricted to the instruction lane, so the trust gate, the pins in
 * agentstack.lock, variants and shared files behave exactly as under apply.
 */
#include <stdbool.h>

#include "cli/cli.h"

int cmd_instructions(int argc, char **argv, struct cli_ctx *ctx);
int cli_apply_run(int argc, char **argv, struct cli_ctx *ctx, bool diff, bool json,
                  bool instructions);

int cmd_instructions(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_apply_run(argc, argv, ctx, false, false, true);
}
