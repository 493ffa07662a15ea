/*
 * agentstack report usage [--json] — what this project's setup is used for
 * and what it costs the agent's context up front (docs/audit.md, "report
 * usage").
 *
 * Why: every server, skill and instruction a manifest declares is paid for
 * in the agent's context whether or not it is used, so a setup grows dead
 * weight. This view sets the two side by side from evidence agentstack
 * already keeps: brokered calls per server (audit/calls.jsonl) and skill
 * loads through the gateway (audit/loads.jsonl), against the bytes a CLI
 * reads before the first prompt (each skill's name and description, each
 * instruction file whole).
 *
 * What it does not claim: calls a CLI made to a server it ran directly (not
 * through the gateway) and skills a CLI read from its own skills directory
 * leave no row here, so "unused" means "no recorded use"; server tool
 * listings are the upstreams' and are not counted in the context figure;
 * tokens are estimated as bytes / 4.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/json.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/skill_md.h"
#include "cli/cli.h"

int cmd_report_usage(int argc, char **argv, struct cli_ctx *ctx);

struct usage_args {
    bool json;
};

#define CLI_ARGS struct usage_args
static const struct cli_option usage_options[] = {
    {OPT_BOOL("json", 0, json, "the usage as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_report_usage_spec = {
    .name = "report usage",
    .fn = cmd_report_usage,
    .summary = "recorded use of each server and skill beside its up-front context cost",
    .synopsis = CLI_LINES("report usage [--json]"),
    .description = "Servers: brokered calls and denials from the call audit. Skills: loads "
                   "through the gateway, and the bytes of the name and description a CLI reads "
                   "up front. Instructions: their bytes (always in context). Tokens are "
                   "estimated as bytes / 4. Use a CLI made outside the gateway is not recorded, "
                   "so \"no recorded use\" is what the evidence shows, not proof of none.",
    .options = usage_options,
    .examples = CLI_LINES("agentstack report usage", "agentstack report usage --json"),
    .see_also = "report audit toolset",
};

/* ≈ tokens for n bytes (the usual 4 bytes per token of English text). */
static size_t usage_tokens(size_t bytes)
{
    return (bytes + 3) / 4;
}

struct loads_ctx {
    const char *project;
    json_t *counts;
};

static void usage_count_load(void *vctx, json_t *row)
{
    struct loads_ctx *c = vctx;
    const char *name = json_string_value(json_object_get(row, "name"));
    const char *proj = json_string_value(json_object_get(row, "project"));
    if (name && proj && !strcmp(proj, c->project)) {
        json_int_t n = json_integer_value(json_object_get(c->counts, name));
        json_object_set_new(c->counts, name, json_integer(n + 1));
    }
}

/* Loads per skill name for this project, from audit/loads.jsonl (and its
 * rotated predecessor), read as every audit log is (aud_log_each): lines
 * that are not JSON objects are skipped, as the call summary skips them, and
 * a log that cannot be read counts nothing. */
static void usage_count_loads(const char *home, const char *project, json_t *counts)
{
    struct loads_ctx c = {project, counts};
    struct as_err err = AS_ERR_INIT;
    (void)aud_log_each(home, "loads.jsonl", usage_count_load, &c, NULL, &err);
}

/* Calls and denials of server name's tools in the summary. */
static void usage_server_calls(const json_t *by_tool, const char *name, size_t *calls,
                               size_t *denied)
{
    size_t len = strlen(name);
    const char *k;
    json_t *v;
    *calls = *denied = 0;
    json_object_foreach((json_t *)by_tool, k, v)
    {
        if (strncmp(k, name, len) != 0 || strncmp(k + len, "__", 2) != 0)
            continue;
        *calls += (size_t)json_integer_value(json_object_get(v, "calls"));
        *denied += (size_t)json_integer_value(json_object_get(v, "denied"));
    }
}

/* Up-front bytes of a path skill (its name and description), or -1 when
 * it is not on disk here (git and library skills until installed). */
static long usage_skill_bytes(const struct manifest *m, const struct mf_skill *sk)
{
    if (sk->source != MF_SOURCE_PATH || !sk->path)
        return -1;
    strbuf dir = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    struct skill_md md = {0};
    long n = -1;
    if (manifest_item_path(m, sk->path, NULL, &dir, &err) == 0 &&
        skill_md_read(dir.buf, &md, &err) == 0)
        n = (long)(strlen(md.name ? md.name : sk->name) +
                   strlen(md.description ? md.description : ""));
    skill_md_free(&md);
    sb_release(&dir);
    return n;
}

/* Bytes of an instruction file (the first variant's when it has no path),
 * or -1 when it cannot be read here (a library body). */
static long usage_instruction_bytes(const struct manifest *m, const struct mf_instruction *in)
{
    const char *declared = in->path ? in->path : in->variants.n ? in->variants.v[0].path : NULL;
    if (!declared)
        return -1;
    strbuf path = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    struct stat st;
    long n = -1;
    if (manifest_item_path(m, declared, in->inherited ? in->anchor_dir : NULL, &path, &err) == 0 &&
        stat(path.buf, &st) == 0 && S_ISREG(st.st_mode))
        n = (long)st.st_size;
    sb_release(&path);
    return n;
}

static json_t *usage_collect(const struct manifest *m, const json_t *by_tool, const json_t *loads)
{
    json_t *servers = json_array(), *skills = json_array(), *instr = json_array(),
           *unused = json_array();
    size_t context = 0;
    for (size_t i = 0; i < m->servers.n; i++) {
        size_t calls, denied;
        usage_server_calls(by_tool, m->servers.v[i].name, &calls, &denied);
        json_array_append_new(servers,
                              json_pack("{s:s,s:I,s:I}", "name", m->servers.v[i].name, "calls",
                                        (json_int_t)calls, "denied", (json_int_t)denied));
        if (!calls)
            json_array_append_new(unused, json_sprintf("server %s", m->servers.v[i].name));
    }
    for (size_t i = 0; i < m->skills.n; i++) {
        const struct mf_skill *sk = &m->skills.v[i];
        json_int_t n = json_integer_value(json_object_get(loads, sk->name));
        long bytes = usage_skill_bytes(m, sk);
        json_t *o = json_pack("{s:s,s:I}", "name", sk->name, "loads", n);
        if (bytes >= 0) {
            json_object_set_new(o, "context_bytes", json_integer(bytes));
            json_object_set_new(o, "context_tokens",
                                json_integer((json_int_t)usage_tokens((size_t)bytes)));
            context += (size_t)bytes;
        }
        json_array_append_new(skills, o);
        if (!n)
            json_array_append_new(unused, json_sprintf("skill %s", sk->name));
    }
    for (size_t i = 0; i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        long bytes = usage_instruction_bytes(m, in);
        json_t *o = json_pack("{s:s}", "name", in->name);
        if (bytes >= 0) {
            json_object_set_new(o, "context_bytes", json_integer(bytes));
            json_object_set_new(o, "context_tokens",
                                json_integer((json_int_t)usage_tokens((size_t)bytes)));
            context += (size_t)bytes;
        }
        json_array_append_new(instr, o);
    }
    return json_pack("{s:o,s:o,s:o,s:I,s:I,s:o}", "servers", servers, "skills", skills,
                     "instructions", instr, "context_bytes", (json_int_t)context, "context_tokens",
                     (json_int_t)usage_tokens(context), "unused", unused);
}

static void usage_cost(strbuf *out, const json_t *o)
{
    const json_t *t = json_object_get(o, "context_tokens");
    if (t)
        sb_addf(out, "≈%lld", (long long)json_integer_value(t));
    else
        sb_adds(out, "not on disk here");
}

/* name, cleaned for the terminal, padded to width columns. */
static void usage_name(strbuf *out, const json_t *o, size_t width)
{
    const json_t *n = json_object_get(o, "name");
    size_t start = out->len;
    sb_adds(out, "  ");
    term_sanitize(out, json_string_value(n), json_string_length(n));
    while (out->len - start < width)
        sb_addc(out, ' ');
}

static void usage_render(const json_t *u, strbuf *out)
{
    size_t i;
    const json_t *o;
    sb_addf(out, "Usage of %s\n", json_string_value(json_object_get(u, "project")));
    sb_adds(out, "\nServers                        calls  denied\n");
    json_array_foreach(json_object_get(u, "servers"), i, o)
    {
        usage_name(out, o, 31);
        sb_addf(out, "%5lld  %6lld\n", (long long)json_integer_value(json_object_get(o, "calls")),
                (long long)json_integer_value(json_object_get(o, "denied")));
    }
    sb_adds(out, "\nSkills                         loads  up-front tokens\n");
    json_array_foreach(json_object_get(u, "skills"), i, o)
    {
        usage_name(out, o, 31);
        sb_addf(out, "%5lld  ", (long long)json_integer_value(json_object_get(o, "loads")));
        usage_cost(out, o);
        sb_addc(out, '\n');
    }
    sb_adds(out, "\nInstructions (always in context)       tokens\n");
    json_array_foreach(json_object_get(u, "instructions"), i, o)
    {
        usage_name(out, o, 40);
        usage_cost(out, o);
        sb_addc(out, '\n');
    }
    sb_addf(out,
            "\nUp front: ≈%lld tokens (%lld bytes / 4) of skill descriptions and "
            "instructions; server tool listings are not counted.\n",
            (long long)json_integer_value(json_object_get(u, "context_tokens")),
            (long long)json_integer_value(json_object_get(u, "context_bytes")));
    const json_t *unused = json_object_get(u, "unused");
    if (json_array_size(unused)) {
        sb_adds(out, "No recorded use:");
        json_array_foreach(unused, i, o)
        {
            sb_adds(out, i ? ", " : " ");
            term_sanitize(out, json_string_value(o), json_string_length(o));
        }
        sb_adds(out, " (use outside the gateway is not recorded)\n");
    }
}

int cmd_report_usage(int argc, char **argv, struct cli_ctx *ctx)
{
    struct usage_args a = {0};
    int prc = cli_parse(&cmd_report_usage_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_report_usage_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    ctx->json = a.json;
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    strbuf home = SB_INIT, key = SB_INIT;
    struct manifest *m = NULL;
    struct aud_summary s = {0};
    int rc = EXIT_FAIL;
    json_t *loads = json_object();
    if (home_dir(&home, &err) < 0 || !(m = manifest_load(&p, &err))) {
        cli_error(&err);
        goto out;
    }
    discover_project_key(p.base, &key);
    if (aud_calls_summarize(home.buf, key.buf, &s, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    usage_count_loads(home.buf, key.buf, loads);
    json_t *u = usage_collect(m, s.by_tool, loads);
    json_object_set_new(u, "project", json_string(key.buf));
    strbuf out = SB_INIT;
    if (a.json)
        json_dump_pretty(u, &out);
    else
        usage_render(u, &out);
    fputs(out.buf, stdout);
    if (a.json)
        putchar('\n');
    sb_release(&out);
    json_decref(u);
    rc = EXIT_OK;
out:
    aud_summary_release(&s);
    json_decref(loads);
    if (m)
        manifest_free(m);
    sb_release(&home);
    sb_release(&key);
    bundle_paths_free(&p);
    return rc;
}
