/*
 * agentstack mcp [--auto-project] [--transparent] — the live MCP gateway on
 * stdio (docs/gateway.md). Hidden: --grant PATH, the entry a protected run
 * (`run <cli> --locked`) hands its harness: serve that run's frozen grant
 * and nothing else (gateway/grant.h). stdout carries whole JSON-RPC frames only: the real
 * stdout is duplicated for the gateway's writer and fd 1 is pointed at
 * stderr, so a stray printf anywhere can never corrupt the stream.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "adapters/adapters.h"
#include "adapters/engine.h"
#include "as_version.h"
#include "cli/cli.h"
#include "cli/mcp_sessions.h"
#include "gateway/gateway.h"
#include "library/library.h"
#include "library/search.h"

int cmd_mcp(int argc, char **argv, struct cli_ctx *ctx);

static int harness_count(int *detected, int *known)
{
    struct adp_registry r = {0};
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&r, true, &err) < 0)
        return -1;
    *known = (int)r.v.n;
    *detected = 0;
    for (size_t i = 0; i < r.v.n; i++)
        if (adp_detected(r.v.v[i], NULL))
            (*detected)++;
    adp_registry_free(&r);
    return 0;
}

/* Library servers resolve through the linked sources (sources.toml), the
 * same lookup `lib` uses; the gateway then proves the bytes against the lock. */
static int library_server(const char *name, strbuf *path, struct as_err *err)
{
    struct library *lib = lib_open(NULL, err);
    if (!lib)
        return -1;
    int r = lib_pin_lookup(lib, PIN_SERVER, name, path, err);
    lib_free(lib);
    return r;
}

/* agentstack_search's library half: the same lookup as `agentstack search`
 * (winners only), handed back as JSON so the gateway never sees library
 * types. */
static int library_search(const struct manifest *m, const char *query, strbuf *out,
                          struct as_err *err)
{
    struct library *lib = lib_open(NULL, err);
    if (!lib)
        return -1;
    lib_hits h = {0};
    lib_search(lib, m, query, false, &h);
    json_t *a = json_array();
    for (size_t i = 0; i < h.n; i++) {
        const struct lib_hit *x = &h.v[i];
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(x->badge));
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set_new(o, "description",
                            x->description ? json_string(x->description) : json_null());
        json_object_set_new(o, "source", x->source ? json_string(x->source) : json_null());
        json_object_set_new(o, "in_manifest", json_boolean(x->in_manifest));
        json_object_set_new(o, "installed_pack", json_boolean(x->installed_pack));
        json_array_append_new(a, o);
    }
    lib_hits_free(&h);
    lib_free(lib);
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    sb_adds(out, s ? s : "[]");
    free(s);
    return 0;
}

/* agentstack_session_list's source: the same JSON `agentstack session list
 * --json` prints (sessions.json is adapters/' file, above the gateway). */
static int session_list(strbuf *out, struct as_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return as_err_errno(err, "cannot list sessions");
    int rc = adp_session_list(true, f, err);
    fclose(f);
    if (rc == 0)
        sb_add(out, buf, len);
    free(buf);
    return rc == 0 ? 0 : -1;
}

static void hooks(struct gw_opts *o)
{
    o->version = AS_VERSION;
    o->harness_count = harness_count;
    o->library_server = library_server;
    o->library_search = library_search;
    o->session_list = session_list;
    cli_mcp_session_hooks(o);
}

/* --listen: stdout stays the terminal's (nothing is framed on it). */
static int serve_http(struct gw_opts *o)
{
    signal(SIGPIPE, SIG_IGN);
    o->in_fd = o->out_fd = -1;
    hooks(o);
    struct as_err err = AS_ERR_INIT;
    int rc = gw_serve_http(o, &err);
    if (rc != 0 && as_err_isset(&err))
        cli_error(&err);
    return rc;
}

#define CLI_ARGS struct gw_opts
static const struct cli_option mcp_options[] = {
    {OPT_BOOL("auto-project", 0, auto_project,
              "find the project from the client's working directory, trust-gated")},
    {OPT_BOOL("transparent", 0, transparent,
              "list the upstreams' own tools (policy-filtered) beside the control tools")},
    {OPT_STRING("listen", 0, listen, "HOST:PORT",
                "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback only)")},
    {OPT_BOOL("listen-any", 0, listen_any,
              "let --listen take a non-loopback address (every request still needs the token)")},
    {OPT_STRING("token-file", 0, token_file, "FILE",
                "the bearer token --listen requires (created 0600 when missing)")},
    /* the entry a protected run hands its CLI: serve that run's frozen grant */
    {OPT_STRING("grant", 0, grant_path, "PATH", "serve a run's frozen grant.json and nothing else"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_mcp_spec = {
    .name = "mcp",
    .fn = cmd_mcp,
    .summary = "serve the live MCP gateway on stdio or Streamable HTTP (brokered, policy-checked, "
               "audited)",
    .synopsis = CLI_LINES("mcp [--auto-project] [--transparent] [--manifest-dir DIR]",
                          "mcp [...] --listen HOST:PORT --token-file FILE [--listen-any]"),
    .description = "On stdio, stdout carries JSON-RPC frames only. --manifest-dir pins the project "
                   "(naming it is consent: no trust gate); --auto-project discovers it and gates "
                   "it. --listen serves the same gateway over Streamable HTTP at /mcp, one "
                   "session per client; every request needs Authorization: Bearer <the token in "
                   "--token-file>.",
    .options = mcp_options,
    .examples = CLI_LINES("agentstack mcp --auto-project", "agentstack mcp --manifest-dir .",
                          "agentstack mcp --manifest-dir . --listen 127.0.0.1:8765 --token-file "
                          "~/.agentstack/http.token"),
    .see_also = "connect run policy",
};

int cmd_mcp(int argc, char **argv, struct cli_ctx *ctx)
{
    struct gw_opts o = {0};
    int prc = cli_parse(&cmd_mcp_spec, &argc, argv, ctx, &o);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_mcp_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    o.manifest_dir = ctx->manifest_dir;
    if (o.grant_path && (o.auto_project || o.manifest_dir))
        return cli_usage_error("mcp",
                               "--grant serves the project its run froze; it cannot be "
                               "combined with %s",
                               o.auto_project ? "--auto-project" : "--manifest-dir");
    if (o.grant_path && !*o.grant_path)
        return cli_usage_error("mcp", "--grant needs the path of a run's grant.json");
    if (o.listen && o.grant_path)
        return cli_usage_error("mcp", "--grant is served on stdio only; it cannot be combined "
                                      "with --listen");
    if ((o.listen_any || o.token_file) && !o.listen)
        return cli_usage_error("mcp", "%s only applies with --listen HOST:PORT",
                               o.listen_any ? "--listen-any" : "--token-file");
    if (o.listen && (!o.token_file || !*o.token_file))
        return cli_usage_error("mcp", "--listen needs --token-file FILE: every request must "
                                      "carry that file's token as Authorization: Bearer");
    if (o.listen)
        return serve_http(&o);
    fflush(stdout);
    int out = dup(1);
    if (out < 0 || dup2(2, 1) < 0) {
        cli_errorf("cannot set up stdout for the MCP stream");
        return EXIT_FAIL;
    }
    signal(SIGPIPE, SIG_IGN);
    o.in_fd = 0;
    o.out_fd = out;
    hooks(&o);
    struct as_err err = AS_ERR_INIT;
    int rc = gw_serve(&o, &err);
    if (rc != 0 && as_err_isset(&err))
        cli_error(&err);
    close(out);
    return rc;
}
