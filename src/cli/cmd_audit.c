/*
 * agentstack audit — evidence checks:
 *   --verify [LOG...]        every chained log under $AGENTSTACK_HOME (or the
 *                            given ones): "intact", or the first break as
 *                            file:line (exit 1)
 *   --calls [--all] [--json] one-line summary of brokered calls for the
 *                            current project (canonical root) or all, then
 *                            the per-tool table (cli/audit_calls.h);
 *                            --since/--server/--tool narrow both
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "audit/calls_table.h"
#include "base/term.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "cli/audit_calls.h"
#include "cli/cli.h"
#include "cli/json_out.h"

static int do_verify(char **logs, int nlogs)
{
    struct as_err err = AS_ERR_INIT;
    struct aud_break b;
    memset(&b, 0, sizeof b);
    int r = 0;
    if (nlogs) {
        for (int i = 0; i < nlogs && r == 0; i++)
            r = aud_verify(logs[i], &b, NULL, &err);
    } else {
        strbuf home = SB_INIT;
        if (home_dir(&home, &err) < 0) {
            cli_error(&err);
            return EXIT_FAIL;
        }
        r = aud_verify_home(home.buf, &b, NULL, &err);
        sb_release(&home);
    }
    if (r < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (r == 1) {
        if (b.line)
            term_printf("%s:%u\n", b.file, b.line);
        else
            term_printf("%s\n", b.file);
        term_fprintf(stderr, "audit chain broken: %s; %s\n", b.reason,
                     b.line ? "nothing from this line on can be trusted"
                            : "the evidence in it cannot be trusted");
        return EXIT_FAIL;
    }
    printf("intact\n");
    if (b.note[0])
        term_fprintf(stderr, "note: %s\n", b.note);
    return EXIT_OK;
}

/* --since, --server, --tool of --calls (docs/audit.md). */
struct calls_filter {
    const char *since, *server, *tool;
    const char *cmd; /* for a usage error's "see 'agentstack <cmd> --help'" */
};

static int do_calls(int all, int json, const struct calls_filter *cf, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    struct aud_table_filter f = {.server = cf->server, .tool = cf->tool};
    if (cf->since && aud_parse_since(cf->since, (long long)time(NULL), &f.since, &err) < 0) {
        char buf[512];
        return cli_usage_error(cf->cmd, "%s", as_err_str(&err, buf, sizeof buf));
    }
    int filtered = cf->since || cf->server || cf->tool;
    strbuf home = SB_INIT, project = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (!all) {
        /* rows carry the canonical project root: compare like with like */
        struct bundle_paths p = {0};
        if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0) {
            cli_error(&err);
            sb_release(&home);
            return EXIT_FAIL;
        }
        discover_project_key(p.base, &project);
        bundle_paths_free(&p);
        f.project = project.buf;
    }
    struct aud_table t;
    struct aud_summary s;
    int r = aud_calls_table(home.buf, &f, &t, &err);
    /* unfiltered, the summary is the one every other view prints; filtered,
     * the table's own (the same rules over the rows kept) */
    if (r == 0 && !filtered)
        r = aud_calls_summarize(home.buf, f.project, &s, &err);
    else if (r == 0)
        s = t.sum;
    if (r < 0) {
        cli_error(&err);
    } else if (json) {
        /* The envelope without its "ok": this document's "ok" is the count
         * of calls that returned, older than the envelope (docs/json.md). */
        json_t *o = json_object();
        json_object_set_new(o, "schema_version", json_integer(1));
        json_object_set_new(o, "command", json_string("audit"));
        json_object_set_new(o, "project", all ? json_null() : json_string(project.buf));
        json_object_set_new(o, "calls", json_integer((json_int_t)s.calls));
        json_object_set_new(o, "tools", json_integer((json_int_t)s.tools));
        json_object_set_new(o, "denied", json_integer((json_int_t)s.denied));
        json_object_set_new(o, "ok", json_integer((json_int_t)s.ok));
        json_object_set_new(o, "error", json_integer((json_int_t)s.errors));
        json_object_set_new(o, "guard_denied", json_integer((json_int_t)s.guard_denied));
        json_object_set_new(o, "unreadable", json_integer((json_int_t)s.unreadable));
        json_object_set(o, "by_tool", s.by_tool);
        json_t *fo = json_object();
        json_object_set_new(fo, "since", cf->since ? json_integer(f.since) : json_null());
        json_object_set_new(fo, "server", cf->server ? json_string(cf->server) : json_null());
        json_object_set_new(fo, "tool", cf->tool ? json_string(cf->tool) : json_null());
        json_object_set_new(o, "filter", fo);
        json_object_set_new(o, "table", audit_table_json(&t));
        cli_json_print(o);
    } else {
        strbuf line = SB_INIT;
        aud_summary_line(&s, &line);
        printf("%s\n", line.buf);
        if (s.guard_denied)
            printf("%zu command%s refused by the host guard\n", s.guard_denied,
                   s.guard_denied == 1 ? "" : "s");
        sb_release(&line);
        if (t.n)
            printf("\n");
        audit_table_print(stdout, &t);
    }
    if (r == 0 && s.unreadable)
        fprintf(stderr,
                "note: %zu unreadable row(s) skipped; check them with "
                "`agentstack audit --verify`\n",
                s.unreadable);
    if (r == 0 && !filtered)
        aud_summary_release(&s);
    if (r == 0)
        aud_table_release(&t);
    sb_release(&home);
    sb_release(&project);
    return r < 0 ? EXIT_FAIL : EXIT_OK;
}

int cmd_audit(int argc, char **argv, struct cli_ctx *ctx);

struct audit_args {
    bool verify, calls, all, json;
    const char *since, *server, *tool;
};

#define CLI_ARGS struct audit_args
static const struct cli_option audit_options[] = {
    {OPT_BOOL("verify", 0, verify,
              "check every chained log (or the LOGs given): \"intact\", or the first break")},
    {OPT_BOOL("calls", 0, calls, "summarize the brokered tool calls of this project")},
    {OPT_BOOL("all", 0, all, "with --calls: every project's calls")},
    {OPT_BOOL("json", 0, json, "with --calls: the summary and table as one JSON document")},
    {OPT_STRING("since", 0, since, "WHEN",
                "with --calls: rows from WHEN on (1h, 2d, 2026-12-01T09:00Z, ...)")},
    {OPT_STRING("server", 0, server, "NAME", "with --calls: only this server's calls")},
    {OPT_STRING("tool", 0, tool, "NAME", "with --calls: only calls of this tool")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_audit_spec = {
    .name = "audit",
    .fn = cmd_audit,
    .summary = "verify the evidence chains; summarize brokered calls",
    .synopsis = CLI_LINES("audit --verify [LOG...]",
                          "audit --calls [--all] [--since WHEN] [--server NAME] [--tool NAME] "
                          "[--json]"),
    .description = "--verify exits 1 at the first broken link, printed as file:line; nothing "
                   "from that line on can be trusted. --calls prints a summary line, then one "
                   "row per server and tool: calls, denied, errors, p50 and p99 latency (ms).",
    .options = audit_options,
    .examples = CLI_LINES("agentstack audit --verify", "agentstack audit --calls --since 1h",
                          "agentstack audit --calls --server github --json"),
    .see_also = "report runs",
    .aliases = CLI_LINES("report calls"),
    .flags = CLI_JSON_ERRORS,
};

/* `report calls`: audit --calls under report (the other spelling). */
struct calls_args {
    bool all, json;
    const char *since, *server, *tool;
};
#define CLI_ARGS struct calls_args
static const struct cli_option calls_options[] = {
    {OPT_BOOL("all", 0, all, "every project's calls, not only this one's")},
    {OPT_BOOL("json", 0, json, "the summary and table as one JSON document")},
    {OPT_STRING("since", 0, since, "WHEN", "rows from WHEN on (1h, 2d, 2026-12-01T09:00Z, ...)")},
    {OPT_STRING("server", 0, server, "NAME", "only this server's calls")},
    {OPT_STRING("tool", 0, tool, "NAME", "only calls of this tool")},
    {OPT_END},
};
#undef CLI_ARGS

static int report_calls(int argc, char **argv, struct cli_ctx *ctx);
const struct cli_spec cmd_report_calls_spec = {
    .name = "report calls",
    .fn = report_calls,
    .summary = "summarize the brokered tool calls (as audit --calls)",
    .synopsis = CLI_LINES("report calls [--all] [--since WHEN] [--server NAME] [--tool NAME] "
                          "[--json]"),
    .options = calls_options,
    .alias_of = "audit",
};

int cmd_audit(int argc, char **argv, struct cli_ctx *ctx)
{
    struct audit_args a = {0};
    int prc = cli_parse(&cmd_audit_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    int verify = a.verify, calls = a.calls, all = a.all, json = a.json;
    char **logs = argv + 1;
    int nlogs = argc - 1;
    if (verify == calls)
        return cli_usage_error("audit", "choose one of --verify or --calls");
    if (verify && (all || json || a.since || a.server || a.tool))
        return cli_usage_error("audit", "--all, --since, --server, --tool and --json go with "
                                        "--calls");
    if (calls && nlogs)
        return cli_usage_error("audit", "--calls takes no file; it reads the call log");
    struct calls_filter cf = {a.since, a.server, a.tool, "audit"};
    return verify ? do_verify(logs, nlogs) : do_calls(all, json, &cf, ctx);
}

static int report_calls(int argc, char **argv, struct cli_ctx *ctx)
{
    struct calls_args a = {0};
    int prc = cli_parse(&cmd_report_calls_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_report_calls_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    struct calls_filter cf = {a.since, a.server, a.tool, "report calls"};
    return do_calls(a.all, a.json, &cf, ctx);
}
