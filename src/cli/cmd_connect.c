/*
 * agentstack connect [CLI…] [--all] [--transparent] [--command PATH] [--write]
 * (the seed's spelling; 0.19's `gateway connect` / `gateway disconnect` are
 * accepted too) — register the live gateway, `agentstack mcp
 * --auto-project`, once in every detected coding CLI (04 §7). Previews
 * unless --write. Always global scope: it edits the user's own configs.
 */
#include <stdio.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "cli/cli.h"

int cmd_connect(int argc, char **argv, struct cli_ctx *ctx);
int cmd_gateway(int argc, char **argv, struct cli_ctx *ctx);

static int run(const char *name, int argc, char **argv, bool disconnect)
{
    strvec ids = STRVEC_INIT;
    struct adp_connect_opts o = {
        .ids = &ids, .disconnect = disconnect, .out = stdout, .color = term_use_color(1)};
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--all") == 0) {
            o.all = true;
        } else if (strcmp(s, "--write") == 0) {
            o.write = true;
        } else if (strcmp(s, "--dry-run") == 0) {
            o.write = false;
        } else if (strcmp(s, "--transparent") == 0 && !disconnect) {
            o.transparent = true;
        } else if ((strcmp(s, "--command") == 0 && i + 1 < argc) && !disconnect) {
            o.command = argv[++i];
        } else if (strncmp(s, "--command=", 10) == 0 && !disconnect) {
            o.command = s + 10;
        } else if ((strcmp(s, "--target") == 0 && i + 1 < argc)) {
            strvec_push(&ids, argv[++i]);
        } else if (strcmp(s, "--scope") == 0 && i + 1 < argc) {
            if (strcmp(argv[++i], "global") != 0) {
                rc = cli_usage_error(name, "the gateway is registered at global scope only");
                goto out;
            }
        } else if (s[0] == '-') {
            rc = cli_usage_error(name, "unknown argument '%s'", s);
            goto out;
        } else {
            strvec_push(&ids, s);
        }
    }
    if (o.all && ids.n) {
        rc = cli_usage_error(name, "--all and named CLIs both say which CLIs to change");
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
        fprintf(stderr, "warning: %s\n", reg.warnings.v[i]);
    rc = adp_connect(&reg, &o, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    adp_registry_free(&reg);
out:
    strvec_clear(&ids);
    return rc;
}

int cmd_connect(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    return run("connect", argc, argv, false);
}

/* 0.19's spelling: gateway connect | gateway disconnect. */
int cmd_gateway(int argc, char **argv, struct cli_ctx *ctx)
{
    (void)ctx;
    if (argc < 2 || (strcmp(argv[1], "connect") != 0 && strcmp(argv[1], "disconnect") != 0))
        return cli_usage_error("gateway", "expected 'gateway connect' or 'gateway disconnect'");
    return run("gateway", argc - 1, argv + 1, strcmp(argv[1], "disconnect") == 0);
}
