/*
 * agentstack use [TOOLSET] — activate one toolset (docs/adapters.md): render just its
 * servers into each CLI (pruning the ones we wrote that left it), link its
 * skills into each CLI's skills directory, and record it as the active
 * profile. Previews unless --write; a project must be Trusted.
 * Names a toolset takes from the central library (linked sources, qualified
 * `<source>:<name>`) resolve through src/library, handed to the validator,
 * the trust gate and the renderer as callbacks, exactly as `apply` does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "library/library.h"
#include "trust/trust.h"

int cmd_use(int argc, char **argv, struct cli_ctx *ctx);

struct use_args {
    strvec targets;
    const char *toolset;
    int scope;
    bool write, dry_run, allow_unresolved, prune_foreign, no_gitignore, verbose, list, json;
};

#define CLI_ARGS struct use_args
static const struct cli_option use_options[] = {
    {OPT_LIST("target", 0, targets, "ID", "this CLI only")},
    {OPT_ENUM("scope", 0, scope, cli_scope_choices,
              "the CLIs' global or project files (default: project inside one)")},
    {OPT_BOOL("write", 0, write, "write, link the skills, record the toolset (default: preview)")},
    {OPT_BOOL("dry-run", 0, dry_run, "preview only, even with --write")},
    {OPT_BOOL("allow-unresolved", 0, allow_unresolved,
              "write even when a ${REF} has no value here (that server is left out)")},
    {OPT_BOOL("prune-foreign", 0, prune_foreign, "also remove entries another manifest wrote")},
    {OPT_BOOL("no-gitignore", 0, no_gitignore,
              "do not add the written project files to .gitignore")},
    {OPT_BOOL("verbose", 'v', verbose, "show unchanged targets and every entry")},
    {OPT_BOOL("list", 0, list, "list the manifest's toolsets and the default")},
    {OPT_BOOL("json", 0, json, "with --list: the toolsets as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_use_spec = {
    .name = "use",
    .fn = cmd_use,
    .summary = "activate a toolset: its servers and skills in every CLI",
    .synopsis = CLI_LINES("use [TOOLSET] [--target ID]... [--scope global|project] [--write]",
                          "use [TOOLSET] [--allow-unresolved] [--prune-foreign] [--no-gitignore] "
                          "[-v]",
                          "use --list [--json]"),
    .description = "Renders just the toolset's servers (pruning the ones we wrote that left "
                   "it), links its skills, and records it as the active toolset. Without "
                   "TOOLSET, the manifest's default_toolset. A project must be trusted.",
    .options = use_options,
    .examples = CLI_LINES("agentstack use --list", "agentstack use backend --write"),
    .see_also = "session apply",
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct use_args *a)
{
    int rc = cli_parse(&cmd_use_spec, &argc, argv, ctx, a);
    if (rc != CLI_CONTINUE)
        return rc;
    rc = CLI_CONTINUE;
    if (argc > 2)
        rc = cli_usage_error("use", "one toolset at a time (got '%s' and '%s')", argv[1], argv[2]);
    else if (a->json && !a->list)
        rc = cli_usage_error("use", "--json goes with --list");
    if (rc != CLI_CONTINUE) {
        strvec_clear(&a->targets);
        return rc;
    }
    a->toolset = argc > 1 ? argv[1] : NULL;
    if (a->dry_run)
        a->write = false;
    return CLI_CONTINUE;
}

static void list_toolsets(const struct manifest *m, bool json)
{
    const struct mf_toolset *def = manifest_effective_toolset(m);
    if (json) {
        json_t *a = json_array();
        for (size_t i = 0; i < m->toolsets.n; i++) {
            const struct mf_toolset *t = &m->toolsets.v[i];
            json_t *sv = json_array(), *sk = json_array();
            for (size_t k = 0; k < t->servers.n; k++)
                json_array_append_new(sv, json_string(t->servers.v[k]));
            for (size_t k = 0; k < t->skills.n; k++)
                json_array_append_new(sk, json_string(t->skills.v[k]));
            json_array_append_new(a, json_pack("{s:s,s:o,s:o,s:b}", "name", t->name, "servers", sv,
                                               "skills", sk, "default", t == def));
        }
        char *s = json_dumps(a, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(a);
        return;
    }
    if (!m->toolsets.n) {
        printf("No toolsets in %s — declare one with [toolsets.<name>] servers = [...]\n", m->path);
        return;
    }
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        printf("%s%s — %zu server%s, %zu skill%s\n", t->name, t == def ? " (default)" : "",
               t->servers.n, t->servers.n == 1 ? "" : "s", t->skills.n,
               t->skills.n == 1 ? "" : "s");
    }
}

int cli_use_list(const struct cli_ctx *ctx, bool json)
{
    struct as_err err = AS_ERR_INIT;
    struct cli_render r;
    cli_render_init(&r);
    int rc = EXIT_FAIL;
    if (discover_project(ctx->manifest_dir, NULL, &r.p, &err) < 0)
        cli_error(&err);
    else if (cli_render_load(&r, &err) == 0) {
        list_toolsets(r.m, json);
        rc = EXIT_OK;
    }
    cli_render_release(&r);
    return rc;
}

int cmd_use(int argc, char **argv, struct cli_ctx *ctx)
{
    struct use_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    struct cli_render r;
    cli_render_init(&r);
    char *op = NULL;
    rc = EXIT_FAIL;

    if (discover_project(ctx->manifest_dir, NULL, &r.p, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (cli_render_load(&r, &err) < 0)
        goto out;
    if (a.list) {
        list_toolsets(r.m, a.json);
        rc = EXIT_OK;
        goto out;
    }
    const struct mf_toolset *ts =
        a.toolset ? manifest_toolset(r.m, a.toolset) : manifest_effective_toolset(r.m);
    if (!ts) {
        if (a.toolset)
            cli_errorf("no toolset '%s' in %s", a.toolset, r.m->path);
        else
            cli_errorf("which toolset? %s declares %zu and no default_toolset", r.m->path,
                       r.m->toolsets.n);
        fprintf(stderr, "  agentstack use --list\n");
        rc = a.toolset ? EXIT_FAIL : EXIT_USAGE;
        goto out;
    }
    if (cli_render_prepare(&r, cli_scope_name(a.scope), a.write ? "write" : NULL, &err) < 0)
        goto out;
    op = xasprintf("use '%s'", ts->name);
    struct adp_apply_opts o = {
        .targets = &a.targets,
        .toolset = ts->name,
        .write = a.write,
        .allow_unresolved = a.allow_unresolved,
        .prune_foreign = a.prune_foreign,
        .verbose = a.verbose,
        .no_gitignore = a.no_gitignore,
        .operation = op,
        .use = true,
    };
    cli_render_opts(&r, &o);
    printf("Toolset: %s\n", ts->name);
    rc = adp_apply(&r.reg, &o, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
out:
    free(op);
    cli_render_release(&r);
    strvec_clear(&a.targets);
    return rc;
}
