/*
 * The --json envelope and the error document (json_out.h, docs/json.md).
 * Errors reach it through cli_error_sink, which cli_error, cli_errorf and
 * cli_usage_error call: the parser (parse_options.c) links without this
 * file, so it knows only the hook.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "cli/json_out.h"
#include "cli/parse_options.h"

static const char *json_command; /* NULL: JSON mode off */
static bool printed;
static json_t *errors;

static void record_error(const char *message, const char *hint)
{
    if (!errors)
        errors = json_array();
    json_t *e = json_pack("{s:s}", "message", message);
    if (hint && hint[0])
        json_object_set_new(e, "hint", json_string(hint));
    json_array_append_new(errors, e);
}

void cli_json_capture_errors(void)
{
    cli_error_sink = record_error;
}

void cli_json_enable(const char *command)
{
    json_command = command;
}

bool cli_json_on(void)
{
    return json_command != NULL;
}

json_t *cli_json_doc(const char *command, bool ok)
{
    return json_pack("{s:i,s:s,s:b}", "schema_version", 1, "command", command, "ok", ok);
}

void cli_json_print(json_t *doc)
{
    strbuf out = SB_INIT;
    json_dump_pretty(doc, &out);
    term_json_visible(&out);
    fputs(out.buf, stdout);
    fflush(stdout);
    sb_release(&out);
    json_decref(doc);
    printed = true;
}

static char *quiet_buf;
static size_t quiet_len;

FILE *cli_json_quiet_open(void)
{
    FILE *f = open_memstream(&quiet_buf, &quiet_len);
    return f ? f : fopen("/dev/null", "w");
}

void cli_json_quiet_close(FILE *f)
{
    if (!f)
        return;
    fclose(f);
    if (quiet_buf) {
        explicit_bzero(quiet_buf, quiet_len);
        free(quiet_buf);
    }
    quiet_buf = NULL;
    quiet_len = 0;
}

void cli_json_print_result(json_t *doc, int rc)
{
    if (rc != 0) {
        json_object_set_new(doc, "ok", json_false());
        json_object_set_new(doc, "exit_code", json_integer(rc));
        if (!errors || json_array_size(errors) == 0) {
            json_decref(errors);
            errors = json_array();
            json_array_append_new(errors, json_pack("{s:s}", "message", "failed (see stderr)"));
        }
        json_object_set_new(doc, "errors", errors);
        errors = NULL;
    }
    cli_json_print(doc);
}

static int held_fd = -1;

int cli_stdout_hold(void)
{
    if (held_fd >= 0)
        return 0; /* held already (init --connect runs connect) */
    fflush(stdout);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0)
        return -1;
    held_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (held_fd < 0 || dup2(null, 1) < 0) {
        if (held_fd >= 0)
            close(held_fd);
        held_fd = -1;
        close(null);
        return -1;
    }
    close(null);
    return 0;
}

void cli_stdout_release(void)
{
    if (held_fd < 0)
        return;
    fflush(stdout);
    dup2(held_fd, 1);
    close(held_fd);
    held_fd = -1;
}

void cli_quiet_report(const struct cli_ctx *ctx, bool json)
{
    if (ctx->quiet && !json)
        (void)cli_stdout_hold(); /* when it cannot be held, the report prints */
}

int cli_json_finish(int rc)
{
    cli_stdout_release();
    if (json_command && !printed && rc != 0)
        cli_json_print_result(cli_json_doc(json_command, false), rc);
    json_decref(errors);
    errors = NULL;
    return rc;
}
