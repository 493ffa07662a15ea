/*
 * agentstack report <run-id> — a protected run's flight record: posture,
 * sandbox, every egress decision with its rule, tool calls, wall time and
 * exit. An unknown id exits 1.
 *
 * `report` is also the front door the other spelling of the command line
 * uses for every "what happened" view: `report run <id>` (this command),
 * `report runs` (= runs) and `report calls` (= audit --calls). Each
 * subcommand runs the same code as the command it spells, with its own
 * table, so `--help` and the inventory show both spellings.
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
static int report_run(int argc, char **argv, struct cli_ctx *ctx);
extern const struct cli_spec cmd_report_runs_spec, cmd_report_calls_spec;

struct report_args {
    bool json;
};

#define CLI_ARGS struct report_args
static const struct cli_option report_options[] = {
    {OPT_BOOL("json", 0, json, "the flight record as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

static const struct cli_spec report_run_spec = {
    .name = "report run",
    .fn = report_run,
    .summary = "a run's flight record (as report <run-id>)",
    .synopsis = CLI_LINES("report run <run-id> [--json]"),
    .options = report_options,
    .alias_of = "report",
};

const struct cli_spec cmd_report_spec = {
    .name = "report",
    .fn = cmd_report,
    .summary = "show a run's flight record: posture, egress decisions, exit",
    .synopsis = CLI_LINES("report <run-id> [--json]", "report run <run-id> [--json]"),
    .description = "An unknown run id exits 1. `report run <id>` is the same command; "
                   "`report runs` is `runs` and `report calls` is `audit --calls`.",
    .options = report_options,
    .subs = (const struct cli_spec *const[]){&report_run_spec, &cmd_report_runs_spec,
                                             &cmd_report_calls_spec, NULL},
    .examples = CLI_LINES("agentstack runs", "agentstack report <run-id> --json"),
    .see_also = "runs run kill",
    .aliases = CLI_LINES("report run <run-id>"),
};

static int show(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx)
{
    struct report_args a = {0};
    int prc = cli_parse(spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    int json = a.json;
    if (argc > 2)
        return cli_usage_error(spec->name, "unexpected argument '%s'", argv[2]);
    if (argc < 2)
        return cli_usage_error(spec->name, "name a run id (see `agentstack runs`)");
    const char *id = argv[1];
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

static int report_run(int argc, char **argv, struct cli_ctx *ctx)
{
    return show(&report_run_spec, argc, argv, ctx);
}

/* `report <run-id>`, or one of the subcommands when the first word (after
 * any option, global ones with their values) names one. */
int cmd_report(int argc, char **argv, struct cli_ctx *ctx)
{
    struct cli_ctx scratch = *ctx;
    for (int i = 1; i < argc;) {
        int r = cli_take_global("report", argc, argv, &i, &scratch);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (strcmp(argv[i], "--") == 0)
            break;
        if (argv[i][0] == '-') {
            i++;
            continue;
        }
        if (cli_find_sub(&cmd_report_spec, argv[i]))
            return cli_dispatch(&cmd_report_spec, argc, argv, ctx);
        break;
    }
    return show(&cmd_report_spec, argc, argv, ctx);
}
