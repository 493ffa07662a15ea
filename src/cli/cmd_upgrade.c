/*
 * agentstack upgrade <pack> [--yes] [--with-instructions] [--write]
 * — re-resolve an installed pack from its [packs.<pack>] ledger (never a
 * downgrade), preview what changes, and with --write re-install and re-pin
 * in one transaction (docs/library.md).
 *
 * agentstack remove <pack|server|skill> [--write]
 * — take a pack (its ledger wins) or one entry out of the project: entries,
 * toolset memberships, the files the pack put there, lock rows; one
 * transaction.
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

#define CLI_ARGS struct lib_pack_opts
static const struct cli_option upgrade_options[] = {
    {OPT_BOOL("write", 0, write, "re-install and re-pin (default: preview only)")},
    {OPT_BOOL("yes", 'y', yes, "approve house rules the new version rewrites")},
    {OPT_BOOL("with-instructions", 0, with_instructions,
              "also install the pack's instruction files")},
    {OPT_END},
};
static const struct cli_option remove_options[] = {
    {OPT_BOOL("write", 0, write, "remove and re-pin (default: preview only)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_upgrade_spec = {
    .name = "upgrade",
    .fn = cmd_upgrade,
    .summary = "upgrade an installed pack: preview, then re-install and re-pin",
    .synopsis = CLI_LINES("upgrade <pack> [--yes] [--with-instructions] [--write]"),
    .description = "Re-resolves the pack from its [packs.<name>] ledger (never a downgrade). "
                   "The same as `agentstack lock --upgrade <pack>`.",
    .options = upgrade_options,
    .examples = CLI_LINES("agentstack upgrade opsbox", "agentstack upgrade opsbox --yes --write"),
    .see_also = "add remove lock",
    .aliases = CLI_LINES("lock --upgrade <pack>"),
};

const struct cli_spec cmd_remove_spec = {
    .name = "remove",
    .fn = cmd_remove,
    .summary = "remove a pack (or a server/skill entry) from the project, re-pinned",
    .synopsis = CLI_LINES("remove <pack|server|skill> [--write]"),
    .description = "A pack's ledger wins over a server or skill of the same name; the files, "
                   "the manifest and the lock change together or not at all.",
    .options = remove_options,
    .examples = CLI_LINES("agentstack remove opsbox", "agentstack remove opsbox --write"),
    .see_also = "add upgrade",
};

/* The one pack, server or skill name upgrade and remove take. */
static const char *one_name(const struct cli_spec *spec, int argc, char **argv, int *rc)
{
    *rc = CLI_CONTINUE;
    if (argc > 2)
        *rc = cli_usage_error(spec->name, "%s takes one %s", spec->name,
                              spec == &cmd_upgrade_spec ? "pack name" : "name");
    else if (argc < 2)
        *rc = cli_usage_error(spec->name, spec == &cmd_upgrade_spec
                                              ? "name the pack to upgrade: agentstack upgrade "
                                                "<pack> --yes --write"
                                              : "name the pack, server or skill: agentstack "
                                                "remove <name> --write");
    return *rc == CLI_CONTINUE ? argv[1] : NULL;
}

int cmd_upgrade(int argc, char **argv, struct cli_ctx *ctx)
{
    struct lib_pack_opts o = {.out = stdout, .diag = stderr};
    int rc = cli_parse(&cmd_upgrade_spec, &argc, argv, ctx, &o);
    const char *name = rc == CLI_CONTINUE ? one_name(&cmd_upgrade_spec, argc, argv, &rc) : NULL;
    if (rc != CLI_CONTINUE)
        return rc;
    return run_locked(ctx, lib_pack_upgrade, name, &o);
}

int cmd_remove(int argc, char **argv, struct cli_ctx *ctx)
{
    struct lib_pack_opts o = {.out = stdout, .diag = stderr};
    int rc = cli_parse(&cmd_remove_spec, &argc, argv, ctx, &o);
    const char *name = rc == CLI_CONTINUE ? one_name(&cmd_remove_spec, argc, argv, &rc) : NULL;
    if (rc != CLI_CONTINUE)
        return rc;
    return run_locked(ctx, lib_pack_remove, name, &o);
}
