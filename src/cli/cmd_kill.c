/*
 * agentstack kill <run-id> [--force] — stops a live run from anywhere
 * (docs/sandbox.md): SIGTERM to its tree, 2 s, then SIGKILL; the signals sent
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

struct kill_args {
    bool force;
};

#define CLI_ARGS struct kill_args
static const struct cli_option kill_options[] = {
    {OPT_BOOL("force", 0, force, "SIGKILL the run's tree at once (no SIGTERM grace)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_kill_spec = {
    .name = "kill",
    .fn = cmd_kill,
    .summary = "stop a live run: SIGTERM to its tree, 2 s, then SIGKILL",
    .synopsis = CLI_LINES("kill <run-id> [--force]"),
    .options = kill_options,
    .examples = CLI_LINES("agentstack runs --live", "agentstack kill <run-id> --force"),
    .see_also = "runs run report",
};

int cmd_kill(int argc, char **argv, struct cli_ctx *ctx)
{
    struct kill_args a = {0};
    int prc = cli_parse(&cmd_kill_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc > 2)
        return cli_usage_error("kill", "unexpected argument '%s'", argv[2]);
    if (argc < 2)
        return cli_usage_error("kill", "which run? (see `agentstack runs --live`)");
    const char *id = argv[1];
    int force = a.force;
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
