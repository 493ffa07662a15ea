/*
 * agentstack demo-server (hidden) — the tiny stdio MCP server behind `make
 * demo` (examples/demo), built in so the demo needs nothing but this binary.
 *
 * It behaves like examples/demo/server.py: tools echo, secret_read and
 * delete_all; on start it touches server-started.marker in its working
 * directory, so a script can prove that an untrusted project never started
 * it. It knows nothing of agentstack's own modules: it is an ordinary
 * upstream, spoken to only through the gateway under test.
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int cmd_demo_server(int argc, char **argv, struct cli_ctx *ctx);

#define DEMO_LINE_MAX ((size_t)4 << 20)

static const char tools_json[] =
    "[{\"name\":\"echo\",\"description\":\"Echo the message back.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}}}},"
    "{\"name\":\"secret_read\",\"description\":\"Read a secret (the repo's policy denies it).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}},"
    "{\"name\":\"delete_all\",\"description\":\"Delete everything (the machine policy denies "
    "it).\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}]";

/* One frame per line; a write error (the gateway went away) ends the server. */
static int send_msg(json_t *msg)
{
    char *s = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!s)
        return -1;
    int rc = fputs(s, stdout) < 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0 ? -1 : 0;
    free(s);
    return rc;
}

static int reply(json_t *id, json_t *result)
{
    return send_msg(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static int reply_error(json_t *id, int code, const char *message)
{
    return send_msg(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                              "code", code, "message", message));
}

static json_t *text(const char *t)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", t, "isError", 0);
}

static int call(json_t *id, const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const json_t *args = json_object_get(params, "arguments");
    if (name && strcmp(name, "echo") == 0) {
        const char *m = json_string_value(json_object_get(args, "message"));
        size_t n = strlen(m ? m : "") + 7;
        char *t = malloc(n);
        if (!t)
            return -1;
        snprintf(t, n, "echo: %s", m ? m : "");
        int rc = reply(id, text(t));
        free(t);
        return rc;
    }
    if (name && strcmp(name, "secret_read") == 0)
        return reply(id, text("s3cr3t"));
    if (name && strcmp(name, "delete_all") == 0)
        return reply(id, text("deleted everything"));
    return reply_error(id, -32602, "unknown tool");
}

static int handle(const char *line, size_t len)
{
    json_t *msg = json_loadb(line, len, 0, NULL);
    if (!json_is_object(msg)) {
        json_decref(msg);
        return 0; /* not JSON: skipped, as server.py does */
    }
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    int rc = 0;
    if (!id || json_is_null(id) || !method) {
        rc = 0; /* notifications and replies need no answer */
    } else if (strcmp(method, "initialize") == 0) {
        const char *v = json_string_value(json_object_get(params, "protocolVersion"));
        rc = reply(id, json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}", "protocolVersion",
                                 v ? v : "2025-11-25", "capabilities", "tools", "serverInfo",
                                 "name", "demo", "version", "1.0"));
    } else if (strcmp(method, "tools/list") == 0) {
        rc = reply(id, json_pack("{s:o}", "tools", json_loads(tools_json, 0, NULL)));
    } else if (strcmp(method, "tools/call") == 0) {
        rc = call(id, params);
    } else if (strcmp(method, "ping") == 0) {
        rc = reply(id, json_object());
    } else {
        rc = reply_error(id, -32601, "Method not found");
    }
    json_decref(msg);
    return rc;
}

const struct cli_spec cmd_demo_server_spec = {
    .name = "demo-server",
    .fn = cmd_demo_server,
    .summary = "the demo's stdio MCP server (echo, secret_read, delete_all)",
    .synopsis = CLI_LINES("demo-server"),
    .description = "An ordinary upstream for `make demo`: it touches server-started.marker in "
                   "its working directory when it starts.",
    .flags = CLI_HIDDEN,
};

int cmd_demo_server(int argc, char **argv, struct cli_ctx *ctx)
{
    int prc = cli_parse(&cmd_demo_server_spec, &argc, argv, ctx, NULL);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_demo_server_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    int fd = open("server-started.marker", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = EXIT_OK;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        if ((size_t)n > DEMO_LINE_MAX)
            continue; /* a frame this large is no demo request */
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n && handle(line, (size_t)n) < 0) {
            rc = EXIT_FAIL;
            break;
        }
    }
    free(line);
    return rc;
}
