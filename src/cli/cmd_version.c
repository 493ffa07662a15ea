/* agentstack version — "agentstack <semver> (<short commit>)". */
#include <stdio.h>

#include "as_version.h"
#include "cli/cli.h"

const struct cli_spec cmd_version_spec = {
    .name = "version",
    .fn = cmd_version,
    .summary = "print the version",
    .synopsis = CLI_LINES("version", "--version"),
    .description = "Prints \"agentstack <version> (<commit>)\"; -V and --version before any "
                   "command do the same.",
};

int cmd_version(int argc, char **argv, struct cli_ctx *ctx)
{
    int rc = cli_parse(&cmd_version_spec, &argc, argv, ctx, NULL);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_version_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    printf("agentstack %s (%s)\n", AS_VERSION, AS_COMMIT);
    return EXIT_OK;
}
