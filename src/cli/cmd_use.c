/*
 * agentstack use [TOOLSET] — activate one toolset (04 §7): render just its
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
    const char *scope;
    bool write, dry_run, allow_unresolved, prune_foreign, no_gitignore, verbose, list, json;
};

static int parse(int argc, char **argv, struct use_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
#define OPTVAL(name)                                                                               \
    ((strcmp(s, name) == 0 && i + 1 < argc && (val = argv[++i])) ||                                \
     (strncmp(s, name "=", sizeof(name)) == 0 && (val = s + sizeof(name))))
        if (OPTVAL("--target")) {
            strvec_push(&a->targets, val);
        } else if (OPTVAL("--scope")) {
            if (strcmp(val, "global") != 0 && strcmp(val, "project") != 0)
                return cli_usage_error("use", "--scope must be global or project (got '%s')", val);
            a->scope = val;
        } else if (strcmp(s, "--write") == 0) {
            a->write = true;
        } else if (strcmp(s, "--dry-run") == 0) {
            a->dry_run = true;
        } else if (strcmp(s, "--allow-unresolved") == 0) {
            a->allow_unresolved = true;
        } else if (strcmp(s, "--prune-foreign") == 0) {
            a->prune_foreign = true;
        } else if (strcmp(s, "--no-gitignore") == 0) {
            a->no_gitignore = true;
        } else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0) {
            a->verbose = true;
        } else if (strcmp(s, "--list") == 0) {
            a->list = true;
        } else if (strcmp(s, "--json") == 0) {
            a->json = true;
        } else if (strcmp(s, "--target") == 0 || strcmp(s, "--scope") == 0) {
            return cli_usage_error("use", "%s needs a value", s);
        } else if (s[0] == '-') {
            return cli_usage_error("use", "unknown argument '%s'", s);
        } else if (a->toolset) {
            return cli_usage_error("use", "one toolset at a time (got '%s' and '%s')", a->toolset,
                                   s);
        } else {
            a->toolset = s;
        }
#undef OPTVAL
    }
    if (a->dry_run)
        a->write = false;
    if (a->json && !a->list)
        return cli_usage_error("use", "--json goes with --list");
    return 0;
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

int cmd_use(int argc, char **argv, struct cli_ctx *ctx)
{
    struct use_args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc) {
        strvec_clear(&a.targets);
        return rc;
    }
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
    if (cli_render_prepare(&r, a.scope, a.write ? "write" : NULL, &err) < 0)
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
