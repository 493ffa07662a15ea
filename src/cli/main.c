/*
 * agentstack entry point: global options, then dispatch through the command
 * table. Kept tiny so a command starts in about a millisecond: nothing is
 * loaded before the command asks for it.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static int unknown_command(const char *name)
{
    const char *names[128];
    size_t n = 0;
    for (const struct cli_command *c = cli_commands; c->name && n < 128; c++)
        if (!c->hidden)
            names[n++] = c->name;
    fprintf(stderr, "error: unknown command '%s'\n", name);
    const char *best = cli_did_you_mean(name, names, n);
    if (best)
        fprintf(stderr, "did you mean '%s'?\n", best);
    fprintf(stderr, "see 'agentstack help'\n");
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    struct cli_ctx ctx = {0};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--manifest-dir") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error(NULL, "--manifest-dir needs a directory");
            ctx.manifest_dir = argv[++i];
        } else if (strncmp(a, "--manifest-dir=", 15) == 0) {
            ctx.manifest_dir = a + 15;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            char *v[] = {"version", NULL};
            return cmd_version(1, v, &ctx);
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            char *v[] = {"help", NULL};
            return cmd_help(1, v, &ctx);
        } else if (a[0] == '-') {
            return cli_usage_error(NULL, "unknown option '%s'", a);
        } else {
            break;
        }
    }
    if (i >= argc) {
        /* Bare `agentstack` is status's shortest form (06 §5.2); it ends by
         * naming `agentstack help`, so the command list is one step away. */
        const struct cli_command *st = cli_find("status");
        char *v[] = {"status", "--short", NULL};
        return st->fn(2, v, &ctx);
    }
    const struct cli_command *c = cli_find(argv[i]);
    if (!c)
        return unknown_command(argv[i]);
    if (c->fn != cmd_help && cli_wants_help(argc - i, argv + i))
        return cli_print_usage(c);
    return c->fn(argc - i, argv + i, &ctx);
}
