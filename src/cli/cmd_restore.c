/*
 * agentstack restore — undo a recorded write byte for byte (04 §3f, §7).
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

int cmd_restore(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    struct adp_restore_opts o = {.out = stdout, .color = term_use_color(1)};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--write") == 0)
            o.write = true;
        else if (strcmp(s, "--last") == 0)
            o.last = true;
        else if (strcmp(s, "--list") == 0)
            o.list = true;
        else if (strcmp(s, "--json") == 0)
            o.json = true;
        else if (strcmp(s, "--scope") == 0 && i + 1 < argc)
            i++; /* every entry records its own files: the scope needs no filter */
        else if (s[0] == '-')
            return cli_usage_error("restore", "unknown argument '%s'", s);
        else if (o.what)
            return cli_usage_error("restore", "give one id or adapter (got '%s' and '%s')", o.what,
                                   s);
        else
            o.what = s;
    }
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
