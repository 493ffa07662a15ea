/*
 * The command table. A command appears here only when it works end to end;
 * aliases (the 0.19 spellings) are hidden from `help` but callable.
 */
#include <string.h>

#include "cli/cli.h"

const struct cli_command cli_commands[] = {
    {"help", cmd_help, "show commands, or one command's usage",
     "usage: agentstack help [<command>]\n", 0},
    {"version", cmd_version, "print the version",
     "usage: agentstack version\n       agentstack --version\n", 0},
    {NULL, NULL, NULL, NULL, 0},
};

const struct cli_command *cli_find(const char *name)
{
    for (const struct cli_command *c = cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
