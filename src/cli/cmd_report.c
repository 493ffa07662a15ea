/*
 * agentstack report <run-id> — a protected run's flight record: posture,
 * sandbox, every egress decision with its rule, tool calls, wall time and
 * exit. Also callable as `report run <id>` (the 0.19 spelling). An unknown
 * id exits 1 (errata 28).
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

int cmd_report(int argc, char **argv, struct cli_ctx *ctx)
{
    const char *id = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (argv[i][0] == '-')
            return cli_usage_error("report", "unknown option '%s'", argv[i]);
        else if (!id && !strcmp(argv[i], "run") && i + 1 < argc && argv[i + 1][0] != '-')
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
