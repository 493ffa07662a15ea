/* agentstack help [<command>] — the list of commands that work. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void print_overview(void)
{
    printf("agentstack — one reviewed, portable, governed setup for AI coding agents\n\n"
           "usage: agentstack [--manifest-dir DIR] <command> [<args>]\n\n"
           "commands:\n");
    int width = 0; /* the name column fits the longest listed name */
    for (const struct cli_command *c = cli_commands; c->name; c++)
        if (!c->hidden && (int)strlen(c->name) > width)
            width = (int)strlen(c->name);
    for (const struct cli_command *c = cli_commands; c->name; c++)
        if (!c->hidden)
            printf("  %-*s  %s\n", width, c->name, c->summary);
    printf("\nglobal options:\n"
           "  --manifest-dir DIR  use the project at DIR instead of walking up from the cwd\n"
           "  --version           print the version\n"
           "\nrun 'agentstack <command> --help' for a command's usage.\n");
}

int cmd_help(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    if (argc < 2) {
        print_overview();
        return EXIT_OK;
    }
    /* `help --help` is help's own usage, like every other command's --help */
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    const struct cli_command *c = cli_find(name);
    if (!c)
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    return cli_print_usage(c);
}
