/*
 * agentstack apply — render the manifest's servers into each coding CLI's own
 * config file (04 §3, §7). Previews by default; --write writes atomically,
 * backs up, records ownership and one undo entry. A project must be Trusted
 * for its servers to be written; the machine manifest is never gated.
 * Names a toolset takes from the central library (linked sources, qualified
 * `<source>:<name>`) resolve through src/library, handed to the validator
 * and the renderer as callbacks (the adapters do not depend on the library).
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

int cmd_apply(int argc, char **argv, struct cli_ctx *ctx);
/* apply's run, shared with `diff` (cmd_diff.c) and `instructions`
 * (cmd_instructions.c): diff reports and writes nothing; json (diff only)
 * prints the report as one document; instructions compiles the instruction
 * files alone. */
int cli_apply_run(int argc, char **argv, struct cli_ctx *ctx, bool diff, bool json,
                  bool instructions);

struct apply_args {
    strvec targets;
    const char *toolset;
    const char *scope;
    bool write, dry_run, allow_unresolved, prune_foreign, no_gitignore, verbose;
};

static int parse(int argc, char **argv, struct apply_args *a, const char *cmd)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
#define OPTVAL(name)                                                                               \
    ((strcmp(s, name) == 0 && i + 1 < argc && (val = argv[++i])) ||                                \
     (strncmp(s, name "=", sizeof(name)) == 0 && (val = s + sizeof(name))))
        if (OPTVAL("--target")) {
            strvec_push(&a->targets, val);
        } else if (OPTVAL("--toolset") || OPTVAL("--profile")) {
            a->toolset = val;
        } else if (OPTVAL("--scope")) {
            if (strcmp(val, "global") != 0 && strcmp(val, "project") != 0)
                return cli_usage_error(cmd, "--scope must be global or project (got '%s')", val);
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
        } else if (strcmp(s, "--target") == 0 || strcmp(s, "--toolset") == 0 ||
                   strcmp(s, "--profile") == 0 || strcmp(s, "--scope") == 0) {
            return cli_usage_error(cmd, "%s needs a value", s);
        } else {
            return cli_usage_error(cmd, "unknown argument '%s'", s);
        }
#undef OPTVAL
    }
    if (a->dry_run)
        a->write = false;
    return 0;
}

static void print_validation(const mf_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        strbuf s = SB_INIT;
        mf_diag_format(&d->v[i], &s);
        fprintf(stderr, "%s: %s\n", d->v[i].sev == MF_ERROR ? "error" : "warning", s.buf);
        sb_release(&s);
    }
}

int cli_apply_run(int argc, char **argv, struct cli_ctx *ctx, bool diff, bool json,
                  bool instructions)
{
    struct apply_args a = {0};
    int rc = parse(argc, argv, &a, diff ? "diff" : instructions ? "instructions" : "apply");
    if (!rc && instructions && (a.allow_unresolved || a.prune_foreign))
        rc = cli_usage_error("instructions", "%s is for servers (try: agentstack apply)",
                             a.allow_unresolved ? "--allow-unresolved" : "--prune-foreign");
    if (!rc && diff &&
        (a.write || a.dry_run || a.allow_unresolved || a.prune_foreign || a.no_gitignore))
        rc = cli_usage_error("diff", "diff only reports (try: agentstack apply --write)");
    if (rc) {
        strvec_clear(&a.targets);
        return rc;
    }
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    struct adp_registry reg = {0};
    bool have_reg = false;
    char *refusal = NULL;
    strbuf machine_path = SB_INIT;
    struct adp_render_env renv = {0};
    bool have_renv = false;
    struct library *lib = NULL;
    rc = EXIT_FAIL;

    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    bool project = p.found;
    if (project) {
        if (manifest_snapshot_read(&p, &snap, &err) < 0 ||
            !(m = manifest_load_snapshot(&p, &snap, &err))) {
            cli_error(&err);
            goto out;
        }
    } else {
        int absent = 0;
        m = manifest_load_machine(&absent, &err);
        if (!m) {
            if (absent) {
                as_err_clear(&err);
                discover_require(&p, &err);
            }
            cli_error(&err);
            goto out;
        }
        home_path(HOME_MACHINE_MANIFEST, &machine_path, &err);
        if (a.scope && strcmp(a.scope, "project") == 0) {
            cli_errorf("--scope project needs a project manifest (none at or above the current "
                       "directory)");
            rc = EXIT_USAGE;
            goto out;
        }
    }
    if (adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    have_reg = true;
    for (size_t i = 0; i < reg.warnings.n; i++)
        fprintf(stderr, "warning: %s\n", reg.warnings.v[i]);

    const char **ids = xcalloc(reg.v.n + 1, sizeof(char *));
    for (size_t i = 0; i < reg.v.n; i++)
        ids[i] = reg.v.v[i]->id;
    lib = cli_open_library();
    struct manifest_env env = {.adapter_ids = ids,
                               .n_adapter_ids = reg.v.n,
                               .library_has = lib ? lib_manifest_has : NULL,
                               .library_ctx = lib};
    mf_diags diags = VEC_INIT;
    size_t nerr = manifest_validate(m, &env, &diags);
    free(ids);
    print_validation(&diags);
    mf_diags_free(&diags);
    if (nerr && a.write) {
        cli_errorf("refusing to write: the manifest has %zu validation error%s (see above)", nerr,
                   nerr == 1 ? "" : "s");
        goto out;
    }

    bool project_scope = project && !(a.scope && strcmp(a.scope, "global") == 0);
    struct trust_library tl = {
        .pin = lib ? lib_pin_lookup : NULL, .has = lib ? lib_manifest_has : NULL, .ctx = lib};
    if (project && adp_trust_gate_lib(&p, &snap, m, &tl, &refusal, &err) < 0) {
        as_err_prefix(&err, "cannot check trust");
        cli_error(&err);
        goto out;
    }
    if (adp_render_env_init(&renv, m, &p, &snap, !project_scope, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    have_renv = true;
    struct adp_apply_opts o = {
        .m = m,
        .manifest_path = project ? p.manifest : machine_path.buf,
        .project_scope = project_scope,
        .project_root = project ? p.project_root : NULL,
        .targets = &a.targets,
        .toolset = a.toolset,
        .write = a.write,
        .allow_unresolved = a.allow_unresolved,
        .prune_foreign = a.prune_foreign,
        .verbose = a.verbose,
        .no_gitignore = a.no_gitignore,
        .color = term_use_color(1),
        .trust_refusal = refusal,
        .operation = instructions ? "instructions"
                     : a.toolset  ? NULL
                                  : "apply",
        .diff = diff,
        .json = diff && json,
        .instructions = instructions,
        .out = stdout,
        .library = lib ? lib_pin_lookup : NULL,
        .library_ctx = lib,
    };
    adp_render_env_apply(&renv, &o);
    char *op =
        a.toolset ? xasprintf("%s --toolset %s", instructions ? "instructions" : "apply", a.toolset)
                  : NULL;
    if (op)
        o.operation = op;
    rc = adp_apply(&reg, &o, &err);
    free(op);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
out:
    if (have_renv)
        adp_render_env_release(&renv);
    lib_free(lib);
    free(refusal);
    if (have_reg)
        adp_registry_free(&reg);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    sb_release(&machine_path);
    strvec_clear(&a.targets);
    return rc;
}

int cmd_apply(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_apply_run(argc, argv, ctx, false, false, false);
}
