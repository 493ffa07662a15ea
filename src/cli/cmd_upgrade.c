/*
 * agentstack upgrade <pack> [--yes] [--with-instructions] [--write]
 * — re-resolve an installed pack from its [packs.<pack>] ledger (never a
 * downgrade), preview what changes, and with --write re-install and re-pin
 * in one transaction (06 §3.4; the seed's spelling, 00-overview).
 *
 * agentstack remove <pack|server|skill> [--write]
 * — take a pack (its ledger wins) or one entry out of the project: entries,
 * toolset memberships, the files the pack put there, lock rows; one
 * transaction (06 §3.4).
 *
 * Both hold the writer lock for the whole command, as `add from` does.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "library/library.h"
#include "library/pack.h"

int cmd_upgrade(int argc, char **argv, struct cli_ctx *ctx);
int cmd_remove(int argc, char **argv, struct cli_ctx *ctx);

typedef int (*pack_fn)(struct library *lib, const struct bundle_paths *p, const char *name,
                       const struct lib_pack_opts *o, struct as_err *err);

struct pack_call {
    pack_fn fn;
    const char *name;
    const struct lib_pack_opts *o;
};

static int call_fn(struct library *lib, const struct bundle_paths *p, const void *arg,
                   struct as_err *err)
{
    const struct pack_call *c = arg;
    return c->fn(lib, p, c->name, c->o, err);
}

/* Unlike add, upgrade and remove have never printed the library's warnings. */
static int run_locked(struct cli_ctx *ctx, pack_fn fn, const char *name,
                      const struct lib_pack_opts *o)
{
    struct pack_call c = {fn, name, o};
    return cli_with_project(ctx, false, call_fn, &c);
}

int cmd_upgrade(int argc, char **argv, struct cli_ctx *ctx)
{
    const char *name = NULL;
    struct lib_pack_opts o = {.out = stdout, .diag = stderr};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0)
            o.write = true;
        else if (strcmp(argv[i], "--yes") == 0 || strcmp(argv[i], "-y") == 0)
            o.yes = true;
        else if (strcmp(argv[i], "--with-instructions") == 0)
            o.with_instructions = true;
        else if (argv[i][0] == '-')
            return cli_usage_error("upgrade", "unknown option '%s'", argv[i]);
        else if (!name)
            name = argv[i];
        else
            return cli_usage_error("upgrade", "upgrade takes one pack name");
    }
    if (!name)
        return cli_usage_error("upgrade", "name the pack to upgrade: agentstack upgrade <pack> "
                                          "--yes --write");
    return run_locked(ctx, lib_pack_upgrade, name, &o);
}

int cmd_remove(int argc, char **argv, struct cli_ctx *ctx)
{
    const char *name = NULL;
    struct lib_pack_opts o = {.out = stdout, .diag = stderr};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0)
            o.write = true;
        else if (argv[i][0] == '-')
            return cli_usage_error("remove", "unknown option '%s'", argv[i]);
        else if (!name)
            name = argv[i];
        else
            return cli_usage_error("remove", "remove takes one name");
    }
    if (!name)
        return cli_usage_error("remove", "name the pack, server or skill: agentstack remove "
                                         "<name> --write");
    return run_locked(ctx, lib_pack_remove, name, &o);
}
