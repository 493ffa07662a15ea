/*
 * agentstack lease status [--json] — the toolset leases MCP connections hold
 * on this machine, from the records the gateway keeps under
 * $AGENTSTACK_HOME/leases/. A lease lives in its gateway process's memory;
 * the record is a note, not the authority, so liveness is derived on every
 * read: the recorded pid must be running with the recorded start time (a
 * dead process or a reused pid reads as stale, never as live). Reads only;
 * leases are opened and closed by the connection that owns them.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "base/fs.h"
#include "base/proc.h"
#include "base/term.h"
#include "bundle/home.h"
#include "cli/cli.h"

int cmd_lease(int argc, char **argv, struct cli_ctx *ctx);

struct lease_args {
    bool json;
};

#define CLI_ARGS struct lease_args
static const struct cli_option status_options[] = {
    {OPT_BOOL("json", 0, json, "the records as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

static int lease_status(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec lease_status_spec = {
    .name = "lease status",
    .fn = lease_status,
    .summary = "the toolset leases open on this machine, each live or stale",
    .synopsis = CLI_LINES("lease status [--json]"),
    .description = "Liveness is derived now from each record's pid and that process's start "
                   "time, so a record left by a killed gateway reads as stale.",
    .options = status_options,
    .examples = CLI_LINES("agentstack lease status", "agentstack lease status --json"),
};

const struct cli_spec cmd_lease_spec = {
    .name = "lease",
    .fn = cmd_lease,
    .summary = "the toolset leases MCP connections hold on this machine",
    .subs = (const struct cli_spec *const[]){&lease_status_spec, NULL},
    .see_also = "session mcp",
};

static bool live(json_t *rec)
{
    json_t *pid = json_object_get(rec, "pid"), *tok = json_object_get(rec, "start_token");
    if (!json_is_integer(pid) || !json_is_integer(tok) || json_integer_value(pid) <= 1)
        return false;
    long long p = (long long)json_integer_value(pid);
    if (kill((pid_t)p, 0) < 0 && errno != EPERM)
        return false;
    return proc_start_ticks(p) == (long long)json_integer_value(tok);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int lease_status(int argc, char **argv, struct cli_ctx *ctx)
{
    struct lease_args a = {0};
    int rc = cli_parse(&lease_status_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&lease_status_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    strbuf dir = SB_INIT;
    if (home_path(HOME_LEASES_DIR, &dir, &err) < 0) {
        cli_error(&err);
        sb_release(&dir);
        return EXIT_FAIL;
    }
    strvec names = STRVEC_INIT;
    DIR *d = opendir(dir.buf);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0)
                strvec_push(&names, e->d_name);
        }
        closedir(d);
    }
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, by_name);
    json_t *out = json_array();
    for (size_t i = 0; i < names.n; i++) {
        strbuf path = SB_INIT, text = SB_INIT;
        sb_addf(&path, "%s/%s", dir.buf, names.v[i]);
        struct as_err rerr = AS_ERR_INIT;
        json_t *rec = NULL;
        if (fs_read_file(path.buf, 64 * 1024, 1, &text, &rerr) == 0) {
            json_error_t je;
            rec = json_loadb(text.buf, text.len, 0, &je);
        }
        if (!json_is_object(rec)) {
            json_decref(rec);
            rec = json_object();
            json_object_set_new(rec, "record", json_string(path.buf));
            json_object_set_new(rec, "unreadable", json_true());
        }
        json_object_set_new(rec, "live", json_boolean(live(rec)));
        json_array_append_new(out, rec);
        sb_release(&path);
        sb_release(&text);
    }
    if (a.json) {
        json_t *o = json_object();
        json_object_set_new(o, "leases", out);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        strbuf sb = SB_INIT;
        sb_adds(&sb, s);
        term_json_visible(&sb);
        printf("%s\n", sb.buf);
        sb_release(&sb);
        free(s);
        json_decref(o);
    } else if (!json_array_size(out)) {
        printf("No toolset leases on this machine (an MCP connection opens one with "
               "agentstack_lease_open).\n");
        json_decref(out);
    } else {
        size_t i;
        json_t *r;
        json_array_foreach(out, i, r)
        {
            if (json_is_true(json_object_get(r, "unreadable"))) {
                term_printf("? unreadable record %s\n",
                            json_string_value(json_object_get(r, "record")));
                continue;
            }
            const char *ts = json_string_value(json_object_get(r, "toolset"));
            const char *pr = json_string_value(json_object_get(r, "project"));
            time_t started = (time_t)json_integer_value(json_object_get(r, "started_unix"));
            char when[32] = "?";
            struct tm tm;
            if (started > 0 && gmtime_r(&started, &tm))
                strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
            strbuf line = SB_INIT, clean = SB_INIT;
            sb_addf(&line, "%s %s  toolset %s  pid %lld  since %s  %s",
                    json_is_true(json_object_get(r, "live")) ? "●" : "○",
                    json_is_true(json_object_get(r, "live")) ? "live " : "stale", ts ? ts : "?",
                    (long long)json_integer_value(json_object_get(r, "pid")), when, pr ? pr : "?");
            term_sanitize(&clean, line.buf, line.len);
            term_printf("%s\n", clean.buf);
            sb_release(&line);
            sb_release(&clean);
        }
        json_decref(out);
    }
    strvec_clear(&names);
    sb_release(&dir);
    return EXIT_OK;
}

int cmd_lease(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_lease_spec, argc, argv, ctx);
}
