/*
 * agentstack explain <name> [--json] — the card for one server, skill,
 * instruction or toolset of this project: where it comes from, how it runs,
 * its pin, the secrets it names and where each resolves (presence only), the
 * CLIs it reaches, and for a server the tool, egress and secret rules of
 * both policy layers (the rows `policy explain` shows) with its isolation.
 * An unknown name exits 1 and names the commands that find things.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/term.h"
#include "cli/cli.h"
#include "cli/explain.h"

int cmd_explain(int argc, char **argv, struct cli_ctx *ctx);

struct explain_args {
    bool json;
};

#define CLI_ARGS struct explain_args
static const struct cli_option explain_options[] = {
    {OPT_BOOL("json", 0, json, "the same facts as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_explain_spec = {
    .name = "explain",
    .fn = cmd_explain,
    .summary = "a server, skill or toolset before you rely on it: origin, pin, secrets, policy",
    .synopsis = CLI_LINES("explain <name> [--json]"),
    .description = "Reads only. Secrets are shown by name with the store that holds each "
                   "(presence only, never a value). For a server, the policy rows of both "
                   "layers are the ones `policy explain` prints.",
    .options = explain_options,
    .examples = CLI_LINES("agentstack explain github", "agentstack explain sql-review --json"),
    .see_also = "why policy search",
};

/* Prints "error: nothing named …" with the two commands that find names. */
void cli_explain_unknown(const char *name)
{
    strbuf n = SB_INIT;
    term_sanitize(&n, name, strlen(name));
    cli_errorf("nothing named '%s' in this project — find it with agentstack search %s, or "
               "see what the library holds with agentstack lib list",
               n.buf, n.buf);
    sb_release(&n);
}

static void row(const char *label, const char *value)
{
    strbuf v = SB_INIT;
    term_sanitize(&v, value, strlen(value));
    printf("  %-16s%s\n", label, v.buf);
    sb_release(&v);
}

static void join_row(const char *label, const strvec *v, const char *none)
{
    strbuf s = SB_INIT;
    for (size_t i = 0; i < v->n; i++)
        sb_addf(&s, "%s%s", i ? ", " : "", strcmp(v->v[i], "*") ? v->v[i] : "every target CLI");
    row(label, s.len ? s.buf : none);
    sb_release(&s);
}

static void card(const struct xp_facts *f)
{
    strbuf t = SB_INIT;
    term_sanitize(&t, f->name, strlen(f->name));
    printf("# %s (%s)\n", t.buf, f->kind);
    sb_release(&t);
    row("Origin", f->origin.buf);
    row("Source", f->source.buf);
    strbuf pin = SB_INIT;
    sb_addf(&pin, "%s%s%s", f->pin, f->pin_detail.len ? " — " : "", f->pin_detail.buf);
    row("Pin", pin.buf);
    sb_release(&pin);
    row("Approved", f->approved);
    if (f->model.len)
        row("Model", f->model.buf);
    if (strcmp(f->kind, "server") == 0) {
        strbuf s = SB_INIT;
        for (size_t i = 0; i < f->secrets.n; i++)
            sb_addf(&s, "%s${%s} (%s)", i ? ", " : "", f->secrets.v[i].name,
                    f->secrets.v[i].where ? f->secrets.v[i].where : "unresolved");
        row("Secrets", s.len ? s.buf : "none referenced");
        sb_release(&s);
    }
    join_row(strcmp(f->kind, "toolset") ? "Toolsets" : "Members", &f->toolsets, "none");
    join_row(strcmp(f->kind, "toolset") ? "Targets" : "Harness", &f->targets, "none");
    if (strcmp(f->kind, "server") == 0) {
        printf("  Policy\n");
        if (f->policy.len)
            fputs(f->policy.buf, stdout);
        else
            printf("  %-26sno [policy.*] rule governs '%s' (allowed by default)\n", "Policy",
                   f->name);
        fputs(f->isolation.buf, stdout);
    }
    if (f->signals.n) {
        printf("  Safety signals\n");
        for (size_t i = 0; i < f->signals.n; i++) {
            strbuf s = SB_INIT;
            term_sanitize(&s, f->signals.v[i], strlen(f->signals.v[i]));
            printf("    · %s\n", s.buf);
            sb_release(&s);
        }
    } else {
        row("Safety signals", "none found");
    }
}

int cmd_explain(int argc, char **argv, struct cli_ctx *ctx)
{
    struct explain_args a = {0};
    int rc = cli_parse(&cmd_explain_spec, &argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (argc != 2)
        return cli_usage_error("explain",
                               argc < 2 ? "explain needs a name" : "explain takes one name");
    struct xp_facts f;
    struct as_err err = AS_ERR_INIT;
    int r = xp_facts_load(ctx, argv[1], &f, &err);
    if (r < 0) {
        cli_error(&err);
    } else if (r == 1) {
        cli_explain_unknown(argv[1]);
    } else if (a.json) {
        char *s = xp_facts_json(&f);
        strbuf out = SB_INIT;
        sb_adds(&out, s);
        term_json_visible(&out);
        printf("%s\n", out.buf);
        sb_release(&out);
        free(s);
    } else {
        card(&f);
    }
    xp_facts_release(&f);
    return r == 0 ? EXIT_OK : EXIT_FAIL;
}
