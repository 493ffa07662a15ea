/*
 * agentstack entry point: the global options before the command, then
 * dispatch through the command table. Global options after the command are
 * the command's parser's (parse_options.c), so they work in every position.
 * Kept tiny so a command starts in about a millisecond: nothing is loaded
 * before the command asks for it.
 */
#include <stdio.h>
#include <string.h>

#include "base/memguard.h"
#include "cli/cli.h"
#include "cli/json_out.h"

static int unknown_command(const char *name)
{
    const char *names[128];
    size_t n = 0;
    for (const struct cli_spec *const *c = cli_commands; *c && n < 128; c++)
        if (!((*c)->flags & CLI_HIDDEN))
            names[n++] = (*c)->name;
    fprintf(stderr, "error: unknown command '%s'\n", name);
    const char *best = cli_did_you_mean(name, names, n);
    if (best)
        fprintf(stderr, "did you mean '%s'?\n", best);
    fprintf(stderr, "see 'agentstack help'\n");
    return EXIT_USAGE;
}

static int unknown_option(const char *a)
{
    static const char *const known[] = {"--manifest-dir", "--quiet", "--version", "--help"};
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
    const char *best =
        a[1] == '-' ? cli_did_you_mean(name, known, sizeof known / sizeof *known) : NULL;
    if (best)
        return cli_usage_error(NULL, "unknown option '%s' (did you mean '%s'?)", name, best);
    return cli_usage_error(NULL, "unknown option '%s'", name);
}

int main(int argc, char **argv)
{
    /* Before anything can hold a secret: no core file, no same-user
     * ptrace, for every command (base/memguard.h). */
    struct as_err merr = AS_ERR_INIT;
    if (memguard_no_dumps(&merr) < 0) {
        cli_error(&merr);
        return EXIT_FAIL;
    }
    cli_json_capture_errors();
    struct cli_ctx ctx = {0};
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            char *v[] = {"version", NULL};
            return cmd_version(1, v, &ctx);
        }
        int r = cli_take_global(NULL, argc, argv, &i, &ctx);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (a[0] == '-')
            return unknown_option(a);
        break;
    }
    if (i >= argc) {
        if (ctx.want_help) {
            ctx.want_help = false;
            char *v[] = {"help", NULL};
            return cmd_help(1, v, &ctx);
        }
        /* Bare `agentstack` is status's shortest form; it ends by naming
         * `agentstack help`, so the command list is one step away. */
        char *v[] = {"status", "--short", NULL};
        return cmd_status(2, v, &ctx);
    }
    const struct cli_spec *c = cli_find(argv[i]);
    if (!c)
        return unknown_command(argv[i]);
    if (c->flags & CLI_JSON_ERRORS)
        for (int k = i + 1; k < argc && strcmp(argv[k], "--") != 0; k++)
            if (strcmp(argv[k], "--json") == 0) {
                cli_json_enable(c->name);
                break;
            }
    return cli_json_finish(c->fn(argc - i, argv + i, &ctx));
}
