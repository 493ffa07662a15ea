/*
 * agentstack runs — every recorded run under $AGENTSTACK_HOME/runs/,
 * newest first (errata 39), one line each; --json for scripts.
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

int cmd_runs(int argc, char **argv, struct cli_ctx *ctx);

int cmd_runs(int argc, char **argv, struct cli_ctx *ctx)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else
            return cli_usage_error("runs", "unexpected argument '%s'", argv[i]);
    }
    ctx->json = json;
    struct as_err err = AS_ERR_INIT;
    strbuf home = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    json_t *list = sbx_runs_list(home.buf, &err);
    sb_release(&home);
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
