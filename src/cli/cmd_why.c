/*
 * agentstack why <name> [--json] — where one capability came from and where
 * it is live right now, in seven rows: from, pinned, approved, live,
 * written, scope, used; then the command for the whole card. Nothing is
 * written to disk for a capability served live, so this is the place that
 * answers it. An unknown name exits 1 and names `agentstack search` and
 * `agentstack lib list`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/term.h"
#include "cli/cli.h"
#include "cli/explain.h"

int cmd_why(int argc, char **argv, struct cli_ctx *ctx);

struct why_args {
    bool json;
};

#define CLI_ARGS struct why_args
static const struct cli_option why_options[] = {
    {OPT_BOOL("json", 0, json, "the same rows as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_why_spec = {
    .name = "why",
    .fn = cmd_why,
    .summary = "where a server or skill came from, and where it is live right now",
    .synopsis = CLI_LINES("why <name> [--json]"),
    .description = "Rows: from, pinned, approved, live, written, scope, used. Takes the name of "
                   "a server, skill, instruction or toolset (not a tool name). Reads only.",
    .options = why_options,
    .examples = CLI_LINES("agentstack why github", "agentstack why sql-review --json"),
    .see_also = "explain status",
};

static void live_text(const struct xp_facts *f, strbuf *out)
{
    if (strcmp(f->kind, "server") && strcmp(f->kind, "skill")) {
        sb_adds(out, "no — only servers and skills are served live");
    } else if (f->render_locally) {
        sb_adds(out, "no — [delivery] render_locally writes files instead");
    } else if (!f->live_clis.n) {
        sb_adds(out, "no — no CLI has the gateway (agentstack connect --all --write)");
    } else if (!f->live) {
        sb_addf(out, "no — the project is %s, so the gateway serves control tools only",
                f->approved);
    } else {
        sb_adds(out, "yes — through the gateway in ");
        for (size_t i = 0; i < f->live_clis.n; i++)
            sb_addf(out, "%s%s", i ? ", " : "", f->live_clis.v[i]);
    }
}

static void written_text(const struct xp_facts *f, strbuf *out)
{
    if (!strcmp(f->kind, "toolset")) {
        sb_adds(out, "its members are, by agentstack use <toolset> --write");
        return;
    }
    sb_adds(out, f->live && !f->render_locally
                     ? "not needed where it is live; other CLIs get files from agentstack apply "
                       "--write"
                     : "into each target CLI's own files by agentstack apply --write");
}

int cmd_why(int argc, char **argv, struct cli_ctx *ctx)
{
    struct why_args a = {0};
    int rc = cli_parse(&cmd_why_spec, &argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (argc != 2)
        return cli_usage_error("why", argc < 2 ? "why needs a name" : "why takes one name");
    struct xp_facts f;
    struct as_err err = AS_ERR_INIT;
    int r = xp_facts_load(ctx, argv[1], &f, &err);
    if (r < 0) {
        cli_error(&err);
        xp_facts_release(&f);
        return EXIT_FAIL;
    }
    if (r == 1) {
        cli_explain_unknown(argv[1]);
        xp_facts_release(&f);
        return EXIT_FAIL;
    }
    strbuf pinned = SB_INIT, live = SB_INIT, written = SB_INIT, used = SB_INIT;
    sb_addf(&pinned, "%s%s%s", f.pin, f.pin_detail.len ? " — " : "", f.pin_detail.buf);
    live_text(&f, &live);
    written_text(&f, &written);
    if (!strcmp(f.kind, "server"))
        sb_addf(&used, "%zu brokered call%s (%zu denied by policy)", f.calls,
                f.calls == 1 ? "" : "s", f.denied);
    else
        sb_adds(&used, "—");
    const char *labels[] = {"from", "pinned", "approved", "live", "written", "scope", "used"};
    const char *values[] = {f.origin.buf, pinned.buf, f.approved, live.buf,
                            written.buf,  f.scope,    used.buf};
    if (a.json) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(f.name));
        json_object_set_new(o, "kind", json_string(f.kind));
        for (size_t i = 0; i < 7; i++)
            json_object_set_new(o, labels[i], json_string(values[i]));
        json_object_set_new(o, "live_clis", json_array());
        for (size_t i = 0; i < f.live_clis.n; i++)
            json_array_append_new(json_object_get(o, "live_clis"), json_string(f.live_clis.v[i]));
        strbuf d = SB_INIT;
        sb_addf(&d, "agentstack explain %s", f.name);
        json_object_set_new(o, "detail", json_string(d.buf));
        sb_release(&d);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        strbuf out = SB_INIT;
        sb_adds(&out, s);
        term_json_visible(&out);
        printf("%s\n", out.buf);
        sb_release(&out);
        free(s);
        json_decref(o);
    } else {
        strbuf n = SB_INIT;
        term_sanitize(&n, f.name, strlen(f.name));
        printf("%s (%s)\n", n.buf, f.kind);
        for (size_t i = 0; i < 7; i++) {
            strbuf v = SB_INIT;
            term_sanitize(&v, values[i], strlen(values[i]));
            printf("  %-9s %s\n", labels[i], v.buf);
            sb_release(&v);
        }
        printf("full detail: agentstack explain %s\n", n.buf);
        sb_release(&n);
    }
    sb_release(&pinned);
    sb_release(&live);
    sb_release(&written);
    sb_release(&used);
    xp_facts_release(&f);
    return EXIT_OK;
}
