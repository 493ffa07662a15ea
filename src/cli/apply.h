/*
 * apply, diff and instructions: one run, three commands (cmd_apply.c).
 *
 * They take the same selection of what to render (cli_render_selection,
 * each spec's common table); diff reports only, and instructions compiles
 * the instruction files alone, so each lists the others' flags hidden and
 * refuses them with the command to use instead.
 */
#ifndef AS_CLI_APPLY_H
#define AS_CLI_APPLY_H

#include "cli/cli.h"

struct apply_args {
    strvec targets;
    const char *toolset;
    int scope;
    bool write, dry_run, allow_unresolved, prune_foreign, no_gitignore, verbose, json;
};

/* The selection all three take: --target, --toolset, --scope, -v. */
extern const struct cli_option cli_render_selection[];

/* Parses argv against spec (apply's, diff's or instructions'), then renders:
 * diff reports and writes nothing (--json: one document); instructions
 * compiles the instruction files alone. */
int cli_apply_run(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx,
                  bool diff, bool instructions);

#endif
