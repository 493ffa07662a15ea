/*
 * agentstack undo [--to N] [--write] [--json] — the recorded writes as a
 * numbered timeline (1 = oldest); --to N goes back to before write N,
 * reverting everything newer byte for byte. The revert is itself recorded,
 * so `undo` lists it and it can be undone in turn (docs/adapters.md).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "cli/cli.h"

int cmd_undo(int argc, char **argv, struct cli_ctx *ctx);

struct undo_args {
    long to;
    bool write, dry_run, json;
};

#define CLI_ARGS struct undo_args
static const struct cli_option undo_options[] = {
    {OPT_INT("to", 0, to, "N", 1, LONG_MAX,
             "go back to before write N of the timeline (1 = oldest), newer ones too")},
    {OPT_BOOL("write", 0, write, "revert the files (default: show what --to would revert)")},
    {OPT_BOOL("dry-run", 0, dry_run, "preview only, even with --write")},
    {OPT_BOOL("json", 0, json, "the timeline as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_undo_spec = {
    .name = "undo",
    .fn = cmd_undo,
    .summary = "the recorded writes as a timeline; go back to before one",
    .synopsis = CLI_LINES("undo [--to N] [--write] [--json]"),
    .description = "Lists the timeline (1 = oldest); --to N reverts write N and everything "
                   "newer, byte for byte. The revert is recorded too, so it can be undone.",
    .options = undo_options,
    .examples = CLI_LINES("agentstack undo", "agentstack undo --to 3 --write"),
    .see_also = "restore apply",
};

int cmd_undo(int argc, char **argv, struct cli_ctx *ctx)
{
    struct undo_args a = {0};
    int rc = cli_parse(&cmd_undo_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_undo_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct adp_undo_opts o = {
        .out = stdout, .to = (size_t)a.to, .write = a.write && !a.dry_run, .json = a.json};
    struct as_err err = AS_ERR_INIT;
    rc = adp_undo(&o, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    return rc;
}
