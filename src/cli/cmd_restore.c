/*
 * agentstack restore — undo a recorded write byte for byte (docs/adapters.md).
 * Bare: the newest recorded writes and the adapters with a backup.
 * <id> / --last: preview the revert; --write puts every file back (and
 * deletes files the write created). <adapter> --write copies the rolling
 * backup back.
 */
#include <stdio.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "cli/cli.h"

int cmd_restore(int argc, char **argv, struct cli_ctx *ctx);

struct restore_args {
    bool write, last, list, json;
    const char *scope;
};

#define CLI_ARGS struct restore_args
static const struct cli_option restore_options[] = {
    {OPT_BOOL("write", 0, write, "restore the bytes (default: show what would change)")},
    {OPT_BOOL("last", 0, last, "the most recent recorded write")},
    {OPT_BOOL("list", 0, list, "list the recorded writes")},
    {OPT_BOOL("json", 0, json, "the list as one JSON document")},
    /* every entry records its own files, so a scope needs no filter: the
     * reference's --scope is accepted and changes nothing */
    {OPT_STRING("scope", 0, scope, "SCOPE", "accepted and ignored (each entry names its files)"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_restore_spec = {
    .name = "restore",
    .fn = cmd_restore,
    .summary = "undo a recorded write byte for byte",
    .synopsis = CLI_LINES("restore [ID | ADAPTER | --last] [--write] [--list] [--json]"),
    .description = "ID is a recorded write (see --list); ADAPTER restores that CLI's most "
                   "recent one.",
    .options = restore_options,
    .examples = CLI_LINES("agentstack restore --list", "agentstack restore --last --write"),
    .see_also = "undo apply",
};

int cmd_restore(int argc, char **argv, struct cli_ctx *ctx)
{
    struct restore_args a = {0};
    int prc = cli_parse(&cmd_restore_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc > 2)
        return cli_usage_error("restore", "give one id or adapter (got '%s' and '%s')", argv[1],
                               argv[2]);
    struct adp_restore_opts o = {.out = stdout,
                                 .color = term_use_color(1),
                                 .write = a.write,
                                 .last = a.last,
                                 .list = a.list,
                                 .json = a.json,
                                 .what = argc > 1 ? argv[1] : NULL};
    if (o.last && o.what)
        return cli_usage_error("restore", "--last and '%s' both name what to undo", o.what);
    struct adp_registry reg;
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    int rc = adp_restore(&reg, &o, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    adp_registry_free(&reg);
    return rc;
}
