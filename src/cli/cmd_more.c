/*
 * agentstack more <command> [<args>] — the namespace prefix of the other
 * spelling of the command line: `agentstack more <command> …` runs exactly
 * `agentstack <command> …` (and `x` is the same prefix). Only the word in the
 * command's position is considered: `agentstack apply more` is an argument
 * to apply. Bare `more` lists every command, the hidden spellings too.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"

int cmd_more(int argc, char **argv, struct cli_ctx *ctx);

const struct cli_spec cmd_more_spec = {
    .name = "more",
    .fn = cmd_more,
    .summary = "prefix: `more <command>` runs <command>; bare, every command",
    .synopsis = CLI_LINES("more [<command> [<args>]]"),
    .description = "A namespace, not a command of its own: `agentstack more guard install` and "
                   "`agentstack guard install` are the same command. `x` is the same prefix.",
    .examples = CLI_LINES("agentstack more", "agentstack more report runs"),
    .see_also = "help",
    .aliases = CLI_LINES("x"),
};

const struct cli_spec cmd_x_spec = {
    .name = "x",
    .fn = cmd_more,
    .summary = "the same prefix as more",
    .synopsis = CLI_LINES("x [<command> [<args>]]"),
    .alias_of = "more",
    .flags = CLI_HIDDEN,
};

static void list_all(void)
{
    printf("agentstack more — every command also runs at its own name: `agentstack more "
           "<command>` is `agentstack <command>`.\n\n");
    for (const struct cli_spec *const *c = cli_commands; *c; c++) {
        if (*c == &cmd_more_spec || *c == &cmd_x_spec)
            continue;
        printf("  %-14s %s", (*c)->name, (*c)->summary ? (*c)->summary : "");
        if ((*c)->alias_of)
            printf(" (another spelling of %s)", (*c)->alias_of);
        putchar('\n');
    }
    printf("\nrun 'agentstack <command> --help' for a command's usage.\n");
}

int cmd_more(int argc, char **argv, struct cli_ctx *ctx)
{
    const struct cli_spec *self = strcmp(argv[0], "x") == 0 ? &cmd_x_spec : &cmd_more_spec;
    int i = 1;
    while (i < argc) {
        int r = cli_take_global(self->name, argc, argv, &i, ctx);
        if (r < 0)
            return EXIT_USAGE;
        if (r == 0)
            break;
    }
    if (i >= argc) {
        if (ctx->want_help) {
            cli_print_help(self, stdout);
            return EXIT_OK;
        }
        list_all();
        return EXIT_OK;
    }
    if (argv[i][0] == '-')
        return cli_usage_error(self->name, "unknown option '%s'", argv[i]);
    const struct cli_spec *c = cli_find(argv[i]);
    if (!c || c == &cmd_more_spec || c == &cmd_x_spec)
        return cli_usage_error(self->name, "unknown command '%s'", argv[i]);
    /* as main does for the command's own spelling: its --json failures are
     * JSON documents too (main's cli_json_finish prints them) */
    if (c->flags & CLI_JSON_ERRORS)
        for (int k = i + 1; k < argc && strcmp(argv[k], "--") != 0; k++)
            if (strcmp(argv[k], "--json") == 0) {
                cli_json_enable(c->name);
                break;
            }
    return c->fn(argc - i, argv + i, ctx);
}
