/*
 * agentstack runs — every recorded run under $AGENTSTACK_HOME/runs/,
 * newest first, one line each, live ones marked; --live: only
 * the runs still going, from the registry (docs/sandbox.md); --json for
 * scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "base/term.h"
#include "bundle/home.h"
#include "cli/cli.h"
#include "sandbox/record.h"
#include "sandbox/registry.h"

int cmd_runs(int argc, char **argv, struct cli_ctx *ctx);

static void add_uptime(strbuf *b, long long s)
{
    if (s < 0)
        s = 0;
    if (s < 60)
        sb_addf(b, "%llds", s);
    else if (s < 3600)
        sb_addf(b, "%lldm", s / 60);
    else
        sb_addf(b, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
}

/* `<id>  <display> pid=<pid> up=<t>[ · toolset T]  <cwd>`. */
static int list_live(const char *home, int json)
{
    struct as_err err = AS_ERR_INIT;
    json_t *o = sbx_reg_live(home, &err);
    if (!o) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    json_t *arr = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) json_array_append(arr, v);
    json_decref(o);
    if (json) {
        char *s = json_dumps(arr, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(arr);
        return EXIT_OK;
    }
    if (json_array_size(arr) == 0)
        puts("No live runs.");
    size_t i;
    json_array_foreach(arr, i, v)
    {
        strbuf line = SB_INIT;
        const char *id = json_string_value(json_object_get(v, "id"));
        const char *disp = json_string_value(json_object_get(v, "display"));
        const char *prof = json_string_value(json_object_get(v, "profile"));
        const char *cwd = json_string_value(json_object_get(v, "cwd"));
        sb_addf(&line, "%s  ", id ? id : "?");
        term_sanitize(&line, disp ? disp : "", strlen(disp ? disp : ""));
        sb_addf(&line, " pid=%lld up=", (long long)json_integer_value(json_object_get(v, "pid")));
        add_uptime(&line, (long long)time(NULL) -
                              (long long)json_integer_value(json_object_get(v, "started_unix")));
        if (prof) {
            sb_adds(&line, " \xc2\xb7 toolset ");
            term_sanitize(&line, prof, strlen(prof));
        }
        sb_adds(&line, "  ");
        term_sanitize(&line, cwd ? cwd : "", strlen(cwd ? cwd : ""));
        puts(line.buf);
        sb_release(&line);
    }
    json_decref(arr);
    return EXIT_OK;
}

struct runs_args {
    bool json, live;
};

#define CLI_ARGS struct runs_args
static const struct cli_option runs_options[] = {
    {OPT_BOOL("live", 0, live, "only the runs still going (their pid and posture)")},
    {OPT_BOOL("json", 0, json, "one JSON document for scripts")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_runs_spec = {
    .name = "runs",
    .fn = cmd_runs,
    .summary = "list recorded runs, newest first (--live: the ones still going)",
    .synopsis = CLI_LINES("runs [--live] [--json]"),
    .options = runs_options,
    .examples = CLI_LINES("agentstack runs", "agentstack runs --live"),
    .see_also = "report kill run",
    .aliases = CLI_LINES("report runs"),
};

static int runs(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx);
static int report_runs(int argc, char **argv, struct cli_ctx *ctx);

/* `report runs`: the same listing under report (the other spelling). */
const struct cli_spec cmd_report_runs_spec = {
    .name = "report runs",
    .fn = report_runs,
    .summary = "list recorded runs, newest first (as runs)",
    .synopsis = CLI_LINES("report runs [--live] [--json]"),
    .options = runs_options,
    .alias_of = "runs",
};

static int report_runs(int argc, char **argv, struct cli_ctx *ctx)
{
    return runs(&cmd_report_runs_spec, argc, argv, ctx);
}

int cmd_runs(int argc, char **argv, struct cli_ctx *ctx)
{
    return runs(&cmd_runs_spec, argc, argv, ctx);
}

static int runs(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx)
{
    struct runs_args a = {0};
    int prc = cli_parse(spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    int json = a.json, live_only = a.live;
    ctx->json = json;
    struct as_err err = AS_ERR_INIT;
    strbuf home = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (live_only) {
        int rc = list_live(home.buf, json);
        sb_release(&home);
        return rc;
    }
    json_t *list = sbx_runs_list(home.buf, &err);
    json_t *live = sbx_reg_live(home.buf, &err);
    sb_release(&home);
    if (!live)
        live = json_object();
    size_t li;
    json_t *lr;
    json_array_foreach(list, li, lr)
    {
        json_t *e = json_object_get(live, json_string_value(json_object_get(lr, "id")));
        json_object_set_new(lr, "live", json_boolean(e != NULL));
        if (e)
            json_object_set(lr, "pid", json_object_get(e, "pid"));
    }
    json_decref(live);
    if (json) {
        char *s = json_dumps(list, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(list);
        return EXIT_OK;
    }
    if (json_array_size(list) == 0)
        puts("No runs recorded.");
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r)
    {
        strbuf line = SB_INIT;
        const char *id = json_string_value(json_object_get(r, "id"));
        const char *posture = json_string_value(json_object_get(r, "posture"));
        const char *harness = json_string_value(json_object_get(r, "harness"));
        const char *ws = json_string_value(json_object_get(r, "workspace"));
        time_t started = (time_t)json_integer_value(json_object_get(r, "started"));
        char when[32] = "?";
        struct tm tm;
        if (started && localtime_r(&started, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        sb_addf(&line, "%s  %-8s  ", id, posture ? posture : "?");
        term_sanitize(&line, harness ? harness : "", strlen(harness ? harness : ""));
        json_t *code = json_object_get(r, "exit"), *sig = json_object_get(r, "signal");
        if (json_is_integer(code))
            sb_addf(&line, "  exit %lld", (long long)json_integer_value(code));
        else if (json_is_integer(sig))
            sb_addf(&line, "  signal %lld", (long long)json_integer_value(sig));
        else if (json_is_true(json_object_get(r, "live")))
            sb_addf(&line, "  LIVE pid=%lld",
                    (long long)json_integer_value(json_object_get(r, "pid")));
        else if (json_is_string(json_object_get(r, "outcome"))) {
            const char *oc = json_string_value(json_object_get(r, "outcome"));
            sb_adds(&line, "  ");
            term_sanitize(&line, oc, strlen(oc));
        } else
            sb_adds(&line, "  running or unfinished");
        sb_addf(&line, "  egress %lld (%lld denied)  %s  ",
                (long long)json_integer_value(json_object_get(r, "egress")),
                (long long)json_integer_value(json_object_get(r, "denied")), when);
        term_sanitize(&line, ws ? ws : "", strlen(ws ? ws : ""));
        puts(line.buf);
        sb_release(&line);
    }
    json_decref(list);
    return EXIT_OK;
}
