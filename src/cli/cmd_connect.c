/*
 * agentstack connect [CLI…] [--all] [--transparent] [--command PATH] [--write]
 * (the older `gateway connect` / `gateway disconnect` spellings are
 * accepted too) — register the live gateway, `agentstack mcp
 * --auto-project`, once in every detected coding CLI (docs/adapters.md). Previews
 * unless --write. Always global scope: it edits the user's own configs.
 */
#include <stdio.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "cli/cli.h"
#include "cli/json_out.h"

int cmd_connect(int argc, char **argv, struct cli_ctx *ctx);
int cmd_gateway(int argc, char **argv, struct cli_ctx *ctx);

struct connect_args {
    strvec ids;
    bool all, write, dry_run, transparent, json;
    const char *command;
    int scope;
};

static const struct cli_choice scope_global[] = {{"global", 1}, {NULL, 0}};

#define CLI_ARGS struct connect_args
static const struct cli_option connect_common[] = {
    {OPT_BOOL("all", 0, all, "every detected CLI (the default when none is named)")},
    {OPT_LIST("target", 0, ids, "ID", "this CLI only (as a CLI named on the line)")},
    {OPT_BOOL("write", 0, write, "change the configs (default: preview each change)")},
    {OPT_BOOL("dry-run", 0, dry_run, "preview only, even with --write")},
    {OPT_ENUM("scope", 0, scope, scope_global,
              "the user's own configs: the gateway is registered globally only")},
    {OPT_BOOL("json", 0, json, "one JSON document (docs/json.md)")},
    {OPT_END},
};
static const struct cli_option connect_options[] = {
    {OPT_BOOL("transparent", 0, transparent,
              "register `mcp --auto-project --transparent` (upstream tools listed too)")},
    {OPT_STRING("command", 0, command, "PATH",
                "the agentstack binary the CLIs start (absolute; default: this one)")},
    {OPT_END},
};
#undef CLI_ARGS

static int connect_run(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx,
                       bool disconnect);

static int connect_leaf(int argc, char **argv, struct cli_ctx *ctx);
static int disconnect_leaf(int argc, char **argv, struct cli_ctx *ctx);

const struct cli_spec cmd_connect_spec = {
    .name = "connect",
    .fn = cmd_connect,
    .summary = "register the live gateway (agentstack mcp --auto-project) in every CLI",
    .synopsis = CLI_LINES("connect [CLI...] [--all] [--transparent] [--command PATH] [--write] "
                          "[--json]"),
    .description = "Previews each CLI's config change; --write registers the gateway "
                   "(idempotent). Always global scope: it edits the user's own configs.",
    .common = connect_common,
    .options = connect_options,
    .examples = CLI_LINES("agentstack connect", "agentstack connect claude codex --write"),
    .see_also = "mcp apply gateway",
    .aliases = CLI_LINES("gateway connect"),
    .flags = CLI_JSON_ERRORS,
};

static const struct cli_spec gateway_connect_spec = {
    .name = "gateway connect",
    .fn = connect_leaf,
    .summary = "register the live gateway in every CLI (as connect)",
    .synopsis =
        CLI_LINES("gateway connect [CLI...] [--all] [--transparent] [--command PATH] [--write]"),
    .common = connect_common,
    .options = connect_options,
    .see_also = "connect",
    .alias_of = "connect",
};

static const struct cli_spec gateway_disconnect_spec = {
    .name = "gateway disconnect",
    .fn = disconnect_leaf,
    .summary = "remove the gateway's entry from every CLI",
    .synopsis = CLI_LINES("gateway disconnect [CLI...] [--all] [--write]"),
    .options = connect_common,
    .see_also = "connect",
};

const struct cli_spec cmd_gateway_spec = {
    .name = "gateway",
    .fn = cmd_gateway,
    .summary = "the gateway's registration in every CLI: connect, disconnect",
    .subs = (const struct cli_spec *const[]){&gateway_connect_spec, &gateway_disconnect_spec, NULL},
    .alias_of = "connect",
    .flags = CLI_HIDDEN,
};

static int connect_run(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx,
                       bool disconnect)
{
    struct connect_args a = {0};
    int rc = cli_parse(spec, &argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 1; i < argc; i++)
        strvec_push(&a.ids, argv[i]);
    struct adp_connect_opts o = {.ids = &a.ids,
                                 .all = a.all,
                                 .transparent = a.transparent,
                                 .command = a.command,
                                 .write = a.write && !a.dry_run,
                                 .disconnect = disconnect,
                                 .out = stdout,
                                 .color = term_use_color(1)};
    rc = EXIT_USAGE;
    if (o.all && a.ids.n) {
        rc = cli_usage_error(spec->name, "--all and named CLIs both say which CLIs to change");
        goto out;
    }
    struct adp_registry reg;
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        rc = EXIT_FAIL;
        goto out;
    }
    for (size_t i = 0; i < reg.warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", reg.warnings.v[i]);
    if (o.write)
        cli_quiet_report(ctx, a.json);
    if (a.json) {
        o.out = cli_json_quiet_open();
        o.color = false;
        o.report = json_array();
    }
    rc = adp_connect(&reg, &o, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    if (a.json) {
        cli_json_quiet_close(o.out);
        if (rc == 0 || json_array_size(o.report)) {
            json_t *doc = cli_json_doc(disconnect ? "gateway disconnect" : "connect", true);
            json_object_set_new(doc, "write", json_boolean(o.write));
            json_object_set_new(doc, "clis", o.report);
            cli_json_print_result(doc, rc);
        } else {
            json_decref(o.report);
        }
    }
    adp_registry_free(&reg);
out:
    strvec_clear(&a.ids);
    return rc;
}

int cmd_connect(int argc, char **argv, struct cli_ctx *ctx)
{
    return connect_run(&cmd_connect_spec, argc, argv, ctx, false);
}

static int connect_leaf(int argc, char **argv, struct cli_ctx *ctx)
{
    return connect_run(&gateway_connect_spec, argc, argv, ctx, false);
}

static int disconnect_leaf(int argc, char **argv, struct cli_ctx *ctx)
{
    return connect_run(&gateway_disconnect_spec, argc, argv, ctx, true);
}

/* The reference's spelling: gateway connect | gateway disconnect. */
int cmd_gateway(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_gateway_spec, argc, argv, ctx);
}
