/*
 * agentstack report <run-id> — a protected run's flight record: posture,
 * sandbox, every egress decision with its rule, tool calls, wall time and
 * exit. An unknown id exits 1.
 *
 * `report x-<id>` shows one tools_execute execution instead
 * (docs/tools-execute.md, "Evidence"): its own audit row (outcome, limit,
 * duration, inner calls, output size, code digest) beside the call-audit
 * rows of its inner calls with their count, outcomes and in-tool time; an
 * id no row names exits 1.
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
#include "audit/audit.h"
#include "base/term.h"
#include "bundle/home.h"
#include "cli/cli.h"
#include "sandbox/record.h"

int cmd_report(int argc, char **argv, struct cli_ctx *ctx);
static int report_run(int argc, char **argv, struct cli_ctx *ctx);
extern const struct cli_spec cmd_report_runs_spec, cmd_report_calls_spec, cmd_report_usage_spec;

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
    .synopsis = CLI_LINES("report <run-id> [--json]", "report x-<id> [--json]",
                          "report run <run-id> [--json]"),
    .description = "An unknown run id exits 1. `report x-<id>` shows a tools_execute "
                   "execution from the call audit: its outcome, duration, output size and code "
                   "digest, and its inner calls (server, tool, outcome, duration); an id no "
                   "audit row names exits 1. `report run <id>` is the same command; `report "
                   "runs` is `runs` and `report calls` is `audit --calls`; `report usage` sets "
                   "each server's and "
                   "skill's recorded use beside its up-front context cost.",
    .options = report_options,
    .subs = (const struct cli_spec *const[]){&report_run_spec, &cmd_report_runs_spec,
                                             &cmd_report_calls_spec, &cmd_report_usage_spec, NULL},
    .examples = CLI_LINES("agentstack runs", "agentstack report <run-id> --json"),
    .see_also = "runs run kill",
    .aliases = CLI_LINES("report run <run-id>"),
};

/* ---- report x-<id>: one tools_execute execution ---------------------------------- */

static const char *row_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void add_clean(strbuf *out, const char *s)
{
    term_sanitize(out, s, strlen(s));
}

struct exec_tally {
    size_t ok, denied, errors;
    long long ms;
};

static struct exec_tally tally_calls(const json_t *calls)
{
    struct exec_tally t = {0};
    size_t i;
    const json_t *e;
    json_array_foreach(calls, i, e)
    {
        const char *oc = row_str(e, "outcome");
        if (!strcmp(oc, "ok"))
            t.ok++;
        else if (!strcmp(oc, "denied"))
            t.denied++;
        else
            t.errors++;
        json_int_t ms = json_integer_value(json_object_get(e, "ms"));
        if (ms > 0)
            t.ms += (long long)ms;
    }
    return t;
}

/* The execution's own row's summary: {outcome, category?, limit?, ms, calls,
 * output_bytes, result_bytes, code_sha256, ts}. */
static json_t *summary_json(const json_t *own)
{
    json_t *o = json_object();
    const char *oc = row_str(own, "outcome");
    json_object_set_new(o, "outcome", json_string(oc));
    if (strcmp(oc, "ok") != 0 && row_str(own, "detail")[0])
        json_object_set_new(o, "category", json_string(row_str(own, "detail")));
    if (row_str(own, "limit")[0])
        json_object_set_new(o, "limit", json_string(row_str(own, "limit")));
    static const char *const nums[] = {"ms", "calls", "output_bytes", "result_bytes"};
    for (size_t k = 0; k < sizeof nums / sizeof *nums; k++)
        json_object_set_new(o, nums[k],
                            json_integer(json_integer_value(json_object_get(own, nums[k]))));
    json_object_set_new(o, "code_sha256", json_string(row_str(own, "code_sha256")));
    json_object_set_new(o, "ts", json_integer(json_integer_value(json_object_get(own, "ts"))));
    return o;
}

/* {"execution","run"?,"project"?,"summary"?,"count","outcomes":{ok,denied,error},"ms",
 * "calls":[…]}: each call as {server, tool, outcome, ms, detail?, rule?, layer?, ts};
 * own is the execution's own row (NULL when the log has none). */
static json_t *execution_json(const char *id, const json_t *own, const json_t *calls)
{
    struct exec_tally t = tally_calls(calls);
    json_t *o = json_object();
    json_object_set_new(o, "execution", json_string(id));
    const json_t *first = own ? own : json_array_get(calls, 0);
    if (row_str(first, "run")[0])
        json_object_set_new(o, "run", json_string(row_str(first, "run")));
    if (row_str(first, "project")[0])
        json_object_set_new(o, "project", json_string(row_str(first, "project")));
    if (own)
        json_object_set_new(o, "summary", summary_json(own));
    json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(calls)));
    json_object_set_new(o, "outcomes",
                        json_pack("{s:I,s:I,s:I}", "ok", (json_int_t)t.ok, "denied",
                                  (json_int_t)t.denied, "error", (json_int_t)t.errors));
    json_object_set_new(o, "ms", json_integer((json_int_t)t.ms));
    json_t *arr = json_array();
    size_t i;
    const json_t *e;
    json_array_foreach(calls, i, e)
    {
        json_t *c = json_object();
        json_object_set_new(c, "server", json_string(row_str(e, "server")));
        json_object_set_new(c, "tool", json_string(row_str(e, "tool")));
        json_object_set_new(c, "outcome", json_string(row_str(e, "outcome")));
        json_object_set_new(c, "ms", json_integer(json_integer_value(json_object_get(e, "ms"))));
        static const char *const extra[] = {"detail", "rule", "layer"};
        for (size_t k = 0; k < sizeof extra / sizeof *extra; k++)
            if (row_str(e, extra[k])[0])
                json_object_set_new(c, extra[k], json_string(row_str(e, extra[k])));
        json_object_set_new(c, "ts", json_integer(json_integer_value(json_object_get(e, "ts"))));
        json_array_append_new(arr, c);
    }
    json_object_set_new(o, "calls", arr);
    return o;
}

/* "  Outcome   error · resource-limit (memory) · 1.2s" and the sizes. */
static void summary_render(const json_t *own, strbuf *out)
{
    const char *oc = row_str(own, "outcome");
    sb_addf(out, "  %-9s ", "Outcome");
    if (strcmp(oc, "ok") == 0 || !row_str(own, "detail")[0]) {
        add_clean(out, oc);
    } else {
        add_clean(out, row_str(own, "detail"));
    }
    if (row_str(own, "limit")[0]) {
        sb_adds(out, " (limit ");
        add_clean(out, row_str(own, "limit"));
        sb_addc(out, ')');
    }
    long long ms = (long long)json_integer_value(json_object_get(own, "ms"));
    long long calls = (long long)json_integer_value(json_object_get(own, "calls"));
    sb_addf(out, " · %lldms · %lld call%s\n", ms, calls, calls == 1 ? "" : "s");
    sb_addf(out, "  %-9s %lld bytes of output · %lld bytes of result\n", "Sizes",
            (long long)json_integer_value(json_object_get(own, "output_bytes")),
            (long long)json_integer_value(json_object_get(own, "result_bytes")));
    sb_addf(out, "  %-9s sha256:", "Code");
    add_clean(out, row_str(own, "code_sha256"));
    sb_addc(out, '\n');
}

static void execution_render(const char *id, const json_t *own, const json_t *calls, strbuf *out)
{
    struct exec_tally t = tally_calls(calls);
    size_t n = json_array_size(calls);
    sb_adds(out, "Execution ");
    add_clean(out, id);
    sb_addc(out, '\n');
    const json_t *first = own ? own : json_array_get(calls, 0);
    if (row_str(first, "run")[0]) {
        sb_addf(out, "  %-9s ", "Run");
        add_clean(out, row_str(first, "run"));
        sb_addc(out, '\n');
    }
    if (row_str(first, "project")[0]) {
        sb_addf(out, "  %-9s ", "Project");
        add_clean(out, row_str(first, "project"));
        sb_addc(out, '\n');
    }
    if (own)
        summary_render(own, out);
    sb_addf(out, "  %-9s %zu · %zu ok · %zu denied · %zu error%s · %lldms in-tool\n", "Calls", n,
            t.ok, t.denied, t.errors, t.errors == 1 ? "" : "s", t.ms);
    sb_adds(out, "  Tool calls\n");
    size_t i;
    const json_t *e;
    json_array_foreach(calls, i, e)
    {
        const char *oc = row_str(e, "outcome");
        sb_addf(out, "    %s ", !strcmp(oc, "ok") ? "✓" : !strcmp(oc, "denied") ? "✗" : "⚠");
        add_clean(out, row_str(e, "server"));
        sb_adds(out, "__");
        add_clean(out, row_str(e, "tool"));
        sb_addf(out, "  %s  %lldms", !strcmp(oc, "ok") || !strcmp(oc, "denied") ? oc : "error",
                (long long)json_integer_value(json_object_get(e, "ms")));
        if (strcmp(oc, "ok") != 0 && row_str(e, "detail")[0]) {
            sb_adds(out, "  ");
            add_clean(out, row_str(e, "detail"));
        }
        sb_addc(out, '\n');
    }
    if (!own)
        sb_adds(out, "  (no row of the execution's own: it is still running, or the gateway "
                     "stopped before writing it)\n");
}

static int show_execution(const char *home, const char *id, bool json)
{
    json_t *rows = sbx_run_id_valid(id) ? sbx_calls_tagged(home, "execution", id) : NULL;
    if (!rows || json_array_size(rows) == 0) {
        json_decref(rows);
        strbuf clean = SB_INIT;
        term_sanitize(&clean, id, strlen(id));
        fprintf(stderr,
                "No audit row names execution '%s' (ids are in the call audit's \"execution\" "
                "field).\n",
                clean.buf);
        sb_release(&clean);
        return EXIT_FAIL;
    }
    /* The execution's own row (the last, should a log hold two) apart from
     * its inner calls. */
    json_t *calls = json_array(), *own = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(rows, i, e)
    {
        if (aud_is_execution_row(e))
            own = e;
        else
            json_array_append(calls, e);
    }
    if (json) {
        json_t *o = execution_json(id, own, calls);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
        json_decref(o);
    } else {
        strbuf out = SB_INIT;
        execution_render(id, own, calls, &out);
        fputs(out.buf, stdout);
        sb_release(&out);
    }
    json_decref(calls);
    json_decref(rows);
    return EXIT_OK;
}

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
    if (strncmp(id, "x-", 2) == 0) {
        int rc = show_execution(home.buf, id, json);
        sb_release(&home);
        return rc;
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
