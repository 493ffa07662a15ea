/*
 * agentstack report <run-id> — a protected run's flight record: posture,
 * sandbox, every egress decision with its rule, tool calls, wall time and
 * exit. Also callable as `report run <id>` (an older spelling). An unknown
 * id exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/term.h"
#include "bundle/home.h"
#include "cli/cli.h"
#include "sandbox/record.h"

int cmd_report(int argc, char **argv, struct cli_ctx *ctx);

struct report_args {
    bool json;
};

#define CLI_ARGS struct report_args
static const struct cli_option report_options[] = {
    {OPT_BOOL("json", 0, json, "the flight record as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_report_spec = {
    .name = "report",
    .fn = cmd_report,
    .summary = "show a run's flight record: posture, egress decisions, exit",
    .synopsis = CLI_LINES("report <run-id> [--json]", "report run <run-id> [--json]"),
    .description = "An unknown run id exits 1. `report run <id>` is the same command.",
    .options = report_options,
    .examples = CLI_LINES("agentstack runs", "agentstack report <run-id> --json"),
    .see_also = "runs run kill",
};

int cmd_report(int argc, char **argv, struct cli_ctx *ctx)
{
    struct report_args a = {0};
    int prc = cli_parse(&cmd_report_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    int json = a.json;
    const char *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (!id && !strcmp(argv[i], "run") && i + 1 < argc)
            continue; /* `report run <id>` */
        else if (!id)
            id = argv[i];
        else
            return cli_usage_error("report", "unexpected argument '%s'", argv[i]);
    }
    if (!id)
        return cli_usage_error("report", "name a run id (see `agentstack runs`)");
    ctx->json = json;
    struct as_err err = AS_ERR_INIT;
    strbuf home = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    json_t *events = NULL, *calls = NULL;
    char *posture = NULL;
    int r = sbx_report_load(home.buf, id, &events, &posture, &calls, &err);
    sb_release(&home);
    if (r < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (r == 1) {
        strbuf clean = SB_INIT;
        term_sanitize(&clean, id, strlen(id));
        fprintf(stderr, "No record for run '%s'.\n", clean.buf);
        sb_release(&clean);
        return EXIT_FAIL;
    }
    if (json) {
        json_t *o = sbx_report_json(id, posture, events, calls);
        char *s = json_dumps(o, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(o);
    } else {
        strbuf out = SB_INIT;
        sbx_report_render(id, posture, events, calls, &out);
        fputs(out.buf, stdout);
        sb_release(&out);
    }
    json_decref(events);
    json_decref(calls);
    free(posture);
    return EXIT_OK;
}
