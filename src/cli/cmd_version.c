/* agentstack version — "agentstack <semver> (<short commit>)". */
#include <stdio.h>

#include "as_version.h"
#include "cli/cli.h"

int cmd_version(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    if (argc > 1)
        return cli_usage_error(argv[0], "'version' takes no arguments");
    printf("agentstack %s (%s)\n", AS_VERSION, AS_COMMIT);
    return EXIT_OK;
}
