/*
 * many_tools_server — the stdio MCP upstream behind bench/scale_bench.sh: it
 * offers N tools (argv[1], default 50) named t0..t<N-1>, each with a small
 * input schema, and echoes tools/call; with argv[2] = B it also offers one
 * resource, mem://big, whose text is B bytes (the resources/read row).
 *
 * Why: the scale rows list 200 upstreams × 50 tools through the gateway and
 * directly. A Python upstream would spend ~20 ms starting the interpreter,
 * hiding what the gateway itself costs; this one starts in about a
 * millisecond, so the rows measure listing and routing, not start-up.
 *
 * Guarantees: none beyond the benchmark's needs — one JSON-RPC frame per
 * line, every request with an id answered, EOF ends it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reply(json_t *id, json_t *result)
{
    json_t *m = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    char *s = json_dumps(m, JSON_COMPACT);
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(s);
    json_decref(m);
}

static json_t *tool_list(int n)
{
    json_t *tools = json_array();
    for (int i = 0; i < n; i++) {
        char name[32], desc[64];
        snprintf(name, sizeof name, "t%d", i);
        snprintf(desc, sizeof desc, "Tool number %d of this server.", i);
        json_array_append_new(tools, json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s}}}}", "name", name,
                                               "description", desc, "inputSchema", "type", "object",
                                               "properties", "message", "type", "string"));
    }
    return json_pack("{s:o}", "tools", tools);
}

static json_t *big_text(size_t bytes)
{
    char *t = malloc(bytes + 1);
    for (size_t i = 0; t && i < bytes; i++)
        t[i] = (char)('a' + i % 26);
    if (!t)
        return json_pack("{s:[]}", "contents");
    t[bytes] = '\0';
    json_t *r = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", "mem://big", "mimeType",
                          "text/plain", "text", t);
    free(t);
    return r;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 50;
    long big = argc > 2 ? atol(argv[2]) : 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_t *m = json_loads(line, 0, NULL);
        json_t *id = json_object_get(m, "id");
        const char *meth = json_string_value(json_object_get(m, "method"));
        if (!m || !id || !meth) {
            json_decref(m);
            continue;
        }
        if (strcmp(meth, "initialize") == 0) {
            json_t *p = json_object_get(json_object_get(m, "params"), "protocolVersion");
            json_t *caps = big > 0 ? json_pack("{s:{},s:{}}", "tools", "resources")
                                   : json_pack("{s:{}}", "tools");
            const char *pv = json_string_value(p);
            reply(id,
                  json_pack("{s:s,s:o,s:{s:s,s:s}}", "protocolVersion", pv ? pv : "2025-11-25",
                            "capabilities", caps, "serverInfo", "name", "many", "version", "1"));
        } else if (big > 0 && strcmp(meth, "resources/list") == 0) {
            reply(id, json_pack("{s:[{s:s,s:s}]}", "resources", "uri", "mem://big", "name", "big"));
        } else if (big > 0 && strcmp(meth, "resources/read") == 0) {
            reply(id, big_text((size_t)big));
        } else if (strcmp(meth, "tools/list") == 0) {
            reply(id, tool_list(n));
        } else if (strcmp(meth, "tools/call") == 0) {
            json_t *a = json_object_get(json_object_get(m, "params"), "arguments");
            const char *t = json_string_value(json_object_get(a, "message"));
            reply(id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                                t ? t : "", "isError", 0));
        } else {
            json_t *e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                  "code", -32601, "message", "method not found");
            char *s = json_dumps(e, JSON_COMPACT);
            printf("%s\n", s);
            fflush(stdout);
            free(s);
            json_decref(e);
        }
        json_decref(m);
    }
    free(line);
    return 0;
}
