/*
 * agentstack delivery [--json] — how this project's capabilities reach each
 * CLI, and agentstack delivery render-locally [--harness ID] [--off]
 * [--write] — the one override.
 *
 * Delivery is routed, not chosen: a CLI on which `connect` registered the
 * gateway gets servers and skills live from it; every other CLI, and every
 * CLI for instructions, settings and hooks, gets files from `apply --write`.
 * render-locally records [delivery] render_locally (or
 * [delivery.harness.<id>]) so files are written even where the gateway would
 * serve. Writing it is a preference-shaped rewrite: a trusted project whose
 * manifest differs in [delivery] only stays trusted (logged "repin"); an
 * untrusted one stays untrusted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "adapters/adapters.h"
#include "base/term.h"
#include "cli/cli.h"
#include "cli/mfedit.h"
#include "onboard/onboard.h"

int cmd_delivery(int argc, char **argv, struct cli_ctx *ctx);

struct delivery_args {
    bool json, off, write;
    const char *harness;
};

#define CLI_ARGS struct delivery_args
static const struct cli_option show_options[] = {
    {OPT_BOOL("json", 0, json, "the routing as one JSON document")},
    {OPT_END},
};
static const struct cli_option local_options[] = {
    {OPT_STRING("harness", 0, harness, "ID", "for this CLI only (default: the whole project)")},
    {OPT_BOOL("off", 0, off, "remove the override: back to routed delivery")},
    {OPT_BOOL("write", 0, write, "write the manifest (default: preview)")},
    {OPT_END},
};
#undef CLI_ARGS

static int render_locally(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec local_spec = {
    .name = "delivery render-locally",
    .fn = render_locally,
    .summary = "write files even where the gateway would serve live ([delivery] render_locally)",
    .synopsis = CLI_LINES("delivery render-locally [--harness ID] [--off] [--write]"),
    .description = "For offline work, deterministic native files, or a policy against a "
                   "background process. A trusted project stays trusted when only [delivery] "
                   "changes.",
    .options = local_options,
    .examples = CLI_LINES("agentstack delivery render-locally --write",
                          "agentstack delivery render-locally --harness codex --off --write"),
};

const struct cli_spec cmd_delivery_spec = {
    .name = "delivery",
    .fn = cmd_delivery,
    .summary = "how servers and skills reach each CLI (live or files), and the one override",
    .synopsis = CLI_LINES("delivery [--json]"),
    .options = show_options,
    .subs = (const struct cli_spec *const[]){&local_spec, NULL},
    .see_also = "connect apply status",
};

static int show(int argc, char **argv, struct cli_ctx *ctx)
{
    struct delivery_args a = {0};
    int rc = cli_parse(&cmd_delivery_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_delivery_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    struct cli_render r;
    cli_render_init(&r);
    rc = EXIT_FAIL;
    struct adp_registry reg = {0};
    bool have_reg = false;
    if (discover_project(ctx->manifest_dir, NULL, &r.p, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (cli_render_load(&r, &err) < 0)
        goto out;
    if (adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    have_reg = true;
    json_t *arr = json_array();
    for (size_t i = 0; i < reg.v.n; i++) {
        const struct adp_desc *d = reg.v.v[i];
        const char *root = r.p.found ? r.p.project_root : NULL;
        if (!adp_detected(d, root))
            continue;
        bool connected = d->has_mcp && onb_bridge_registered(d);
        bool local = manifest_render_locally(r.m, d->id);
        const char *lane = connected && !local ? "live" : "files";
        const char *why = !d->has_mcp ? "this CLI has no MCP channel"
                          : local     ? "render_locally is set"
                          : connected ? "the gateway is registered in it"
                                      : "the gateway is not registered (agentstack connect "
                                        "--all --write)";
        if (a.json) {
            json_array_append_new(arr, json_pack("{s:s,s:b,s:b,s:s,s:s,s:s}", "id", d->id,
                                                 "gateway_connected", connected, "render_locally",
                                                 local, "servers_and_skills", lane, "why", why,
                                                 "instructions_settings_hooks", "files"));
        } else {
            term_printf("  %-16s servers, skills: %s — %s · instructions, settings, hooks: "
                        "files\n",
                        d->id,
                        strcmp(lane, "live") ? "files (agentstack apply --write)"
                                             : "live through the gateway",
                        why);
        }
    }
    if (a.json) {
        json_t *o = json_object();
        json_object_set_new(o, "manifest", json_string(r.m->path));
        json_object_set_new(o, "render_locally", json_boolean(r.m->delivery_render_locally));
        json_object_set_new(o, "harnesses", arr);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        if (!json_array_size(arr))
            printf("  no coding CLI detected on this machine\n");
        json_decref(arr);
        printf("Override: agentstack delivery render-locally [--harness ID] --write\n");
    }
    rc = EXIT_OK;
out:
    if (have_reg)
        adp_registry_free(&reg);
    cli_render_release(&r);
    return rc;
}

static int edit(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                struct as_err *err)
{
    (void)m;
    const struct delivery_args *a = arg;
    const char *whole[2] = {"delivery", "render_locally"};
    const char *one[4] = {"delivery", "harness", a->harness, "render_locally"};
    const char *const *path = a->harness ? one : whole;
    size_t n = a->harness ? 4 : 2;
    if (a->off) {
        sb_addf(summary, "routed delivery again%s%s", a->harness ? " for " : "",
                a->harness ? a->harness : "");
        return toml_edit_remove(ed, path, n, err);
    }
    sb_addf(summary, "render files locally%s%s", a->harness ? " for " : "",
            a->harness ? a->harness : "");
    toml_value *t = toml_new_bool(true);
    int rc = toml_edit_set(ed, path, n, t, err);
    toml_free(t);
    return rc;
}

static int render_locally(int argc, char **argv, struct cli_ctx *ctx)
{
    struct delivery_args a = {0};
    int rc = cli_parse(&local_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&local_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.harness) {
        struct adp_registry reg = {0};
        struct as_err err = AS_ERR_INIT;
        if (adp_registry_load(&reg, true, &err) < 0 ||
            (!adp_registry_find(&reg, a.harness) && adp_unknown_id_err(&reg, a.harness, &err))) {
            cli_error(&err);
            adp_registry_free(&reg);
            return EXIT_FAIL;
        }
        adp_registry_free(&reg);
    }
    return cli_manifest_edit(ctx, a.write, edit, &a, "delivery");
}

/* `delivery render-locally …`, or the routing when no subcommand is named. */
int cmd_delivery(int argc, char **argv, struct cli_ctx *ctx)
{
    struct cli_ctx scratch = *ctx;
    for (int i = 1; i < argc;) {
        int r = cli_take_global("delivery", argc, argv, &i, &scratch);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (argv[i][0] == '-') {
            i++;
            continue;
        }
        if (cli_find_sub(&cmd_delivery_spec, argv[i]))
            return cli_dispatch(&cmd_delivery_spec, argc, argv, ctx);
        break;
    }
    return show(argc, argv, ctx);
}
