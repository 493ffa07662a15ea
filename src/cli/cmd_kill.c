/*
 * agentstack kill <run-id> [--force] — stops a live run from anywhere
 * (spec 05 §1.4): SIGTERM to its tree, 2 s, then SIGKILL; the signals sent
 * are recorded in the run's flight record. Exit 0 stopped, 1 no such live
 * run or failure, 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "bundle/home.h"
#include "cli/cli.h"
#include "sandbox/registry.h"

int cmd_kill(int argc, char **argv, struct cli_ctx *ctx);

int cmd_kill(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    int force = 0;
    const char *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--force"))
            force = 1;
        else if (argv[i][0] == '-' || id)
            return cli_usage_error("kill", "unexpected argument '%s'", argv[i]);
        else
            id = argv[i];
    }
    if (!id)
        return cli_usage_error("kill", "which run? (see `agentstack runs --live`)");
    struct as_err err = AS_ERR_INIT;
    strbuf home = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    int rc = sbx_reg_kill(home.buf, id, force, stdout, &err);
    sb_release(&home);
    if (rc == 1) {
        as_err_set(&err, "no live run %s", id);
        as_err_hint(&err, "agentstack runs --live");
    }
    if (rc != 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}
