/*
 * agentstack undo [--to N] [--write] [--json] — the recorded writes as a
 * numbered timeline (1 = oldest); --to N goes back to before write N,
 * reverting everything newer byte for byte. The revert is itself recorded,
 * so `undo` lists it and it can be undone in turn (04 §7, §8.18).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "cli/cli.h"

int cmd_undo(int argc, char **argv, struct cli_ctx *ctx);

int cmd_undo(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    struct adp_undo_opts o = {.out = stdout};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
        if (strcmp(s, "--to") == 0 && i + 1 < argc)
            val = argv[++i];
        else if (strncmp(s, "--to=", 5) == 0)
            val = s + 5;
        if (val) {
            char *end;
            unsigned long long v = strtoull(val, &end, 10);
            if (!val[0] || *end || v == 0 || val[0] == '-')
                return cli_usage_error("undo",
                                       "--to needs a write number from the timeline "
                                       "(1 = oldest), got '%s'",
                                       val);
            o.to = (size_t)v;
        } else if (strcmp(s, "--write") == 0) {
            o.write = true;
        } else if (strcmp(s, "--dry-run") == 0) {
            o.write = false;
        } else if (strcmp(s, "--json") == 0) {
            o.json = true;
        } else {
            return cli_usage_error("undo", "unknown argument '%s'", s);
        }
    }
    struct as_err err = AS_ERR_INIT;
    int rc = adp_undo(&o, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    return rc;
}
