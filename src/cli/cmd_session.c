/*
 * agentstack session start <toolset> | end [--all] | list [--json]
 * (04 §7, the seed's clean-at-rest mode): start activates a toolset like
 * `use --write` and records how to undo it; end puts every file, link and
 * ledger entry back as it was. A project must be Trusted to start.
 * Start validates and gates like `use --write`: names a toolset takes from
 * the central library (linked sources, qualified `<source>:<name>`) resolve
 * through src/library, handed to the validator, the trust gate and the
 * renderer as callbacks.
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

int cmd_session(int argc, char **argv, struct cli_ctx *ctx);

/* The key a session is recorded under: the project's manifest dir, or the
 * machine home for the machine manifest. */
static int session_dir(struct cli_ctx *ctx, struct bundle_paths *p, strbuf *out, struct as_err *err)
{
    if (discover_project(ctx->manifest_dir, NULL, p, err) < 0)
        return -1;
    if (p->found)
        return discover_project_key(p->base, out);
    return home_dir(out, err);
}

/* Validation as `use --write` does it: errors refuse the start (a session
 * writes). Returns the number of errors. */
static size_t validate(struct manifest *m, const struct adp_registry *reg, struct library *lib)
{
    const char **ids = xcalloc(reg->v.n + 1, sizeof(char *));
    for (size_t i = 0; i < reg->v.n; i++)
        ids[i] = reg->v.v[i]->id;
    struct manifest_env env = {.adapter_ids = ids,
                               .n_adapter_ids = reg->v.n,
                               .library_has = lib ? lib_manifest_has : NULL,
                               .library_ctx = lib};
    mf_diags diags = VEC_INIT;
    size_t nerr = manifest_validate(m, &env, &diags);
    free(ids);
    for (size_t i = 0; i < diags.n; i++) {
        strbuf s = SB_INIT;
        mf_diag_format(&diags.v[i], &s);
        fprintf(stderr, "%s: %s\n", diags.v[i].sev == MF_ERROR ? "error" : "warning", s.buf);
        sb_release(&s);
    }
    mf_diags_free(&diags);
    return nerr;
}

static int start(int argc, char **argv, struct cli_ctx *ctx)
{
    const char *toolset = NULL, *scope = NULL;
    strvec targets = STRVEC_INIT;
    bool allow_unresolved = false;
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--scope") == 0 && i + 1 < argc) {
            scope = argv[++i];
            if (strcmp(scope, "global") != 0 && strcmp(scope, "project") != 0) {
                strvec_clear(&targets);
                return cli_usage_error("session", "--scope must be global or project");
            }
        } else if (strcmp(s, "--target") == 0 && i + 1 < argc) {
            strvec_push(&targets, argv[++i]);
        } else if (strcmp(s, "--allow-unresolved") == 0) {
            allow_unresolved = true;
        } else if (s[0] == '-' || toolset) {
            strvec_clear(&targets);
            return cli_usage_error("session", "unexpected argument '%s'", s);
        } else {
            toolset = s;
        }
    }
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    struct adp_registry reg = {0};
    bool have_reg = false;
    char *refusal = NULL, *op = NULL;
    strbuf key = SB_INIT, machine_path = SB_INIT;
    struct adp_render_env renv = {0};
    bool have_renv = false;
    struct library *lib = NULL;
    int rc = EXIT_FAIL;
    if (session_dir(ctx, &p, &key, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (p.found) {
        if (manifest_snapshot_read(&p, &snap, &err) < 0 ||
            !(m = manifest_load_snapshot(&p, &snap, &err))) {
            cli_error(&err);
            goto out;
        }
    } else {
        int absent = 0;
        if (!(m = manifest_load_machine(&absent, &err))) {
            if (absent) {
                as_err_clear(&err);
                discover_require(&p, &err);
            }
            cli_error(&err);
            goto out;
        }
        home_path(HOME_MACHINE_MANIFEST, &machine_path, &err);
    }
    const struct mf_toolset *ts =
        toolset ? manifest_toolset(m, toolset) : manifest_effective_toolset(m);
    if (!ts) {
        cli_errorf(toolset ? "no toolset '%s' in %s" : "which toolset?%s %s names no default",
                   toolset ? toolset : "", m->path);
        fprintf(stderr, "  agentstack use --list\n");
        goto out;
    }
    if (adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    have_reg = true;
    for (size_t i = 0; i < reg.warnings.n; i++)
        fprintf(stderr, "warning: %s\n", reg.warnings.v[i]);
    lib = cli_open_library();
    size_t nerr = validate(m, &reg, lib);
    if (nerr) {
        cli_errorf("refusing to start a session: the manifest has %zu validation error%s (see "
                   "above)",
                   nerr, nerr == 1 ? "" : "s");
        goto out;
    }
    if (p.found) {
        struct trust_library tl = {
            .pin = lib ? lib_pin_lookup : NULL, .has = lib ? lib_manifest_has : NULL, .ctx = lib};
        if (adp_trust_gate_lib(&p, &snap, m, &tl, &refusal, &err) < 0) {
            as_err_prefix(&err, "cannot check trust");
            cli_error(&err);
            goto out;
        }
    }
    bool project_scope = p.found && !(scope && strcmp(scope, "global") == 0);
    if (adp_render_env_init(&renv, m, &p, &snap, !project_scope, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    have_renv = true;
    op = xasprintf("session start '%s'", ts->name);
    struct adp_apply_opts o = {
        .m = m,
        .manifest_path = p.found ? p.manifest : machine_path.buf,
        .project_scope = project_scope,
        .project_root = p.found ? p.project_root : NULL,
        .targets = &targets,
        .toolset = ts->name,
        .allow_unresolved = allow_unresolved,
        .color = term_use_color(1),
        .trust_refusal = refusal,
        .operation = op,
        .out = stdout,
        .library = lib ? lib_pin_lookup : NULL,
        .library_ctx = lib,
    };
    adp_render_env_apply(&renv, &o);
    rc = adp_session_start(&reg, &o, key.buf, &err);
    fflush(stdout);
    if (rc)
        cli_error(&err);
out:
    if (have_renv)
        adp_render_env_release(&renv);
    lib_free(lib);
    free(op);
    free(refusal);
    if (have_reg)
        adp_registry_free(&reg);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    sb_release(&key);
    sb_release(&machine_path);
    strvec_clear(&targets);
    return rc;
}

int cmd_session(int argc, char **argv, struct cli_ctx *ctx)
{
    if (argc < 2)
        return cli_usage_error("session", "say start <toolset>, end or list");
    const char *sub = argv[1];
    if (strcmp(sub, "start") == 0)
        return start(argc, argv, ctx);
    struct as_err err = AS_ERR_INIT;
    int rc;
    if (strcmp(sub, "end") == 0) {
        bool all = false;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--all") == 0)
                all = true;
            else
                return cli_usage_error("session", "unexpected argument '%s'", argv[i]);
        }
        struct bundle_paths p = {0};
        strbuf key = SB_INIT;
        if (!all && session_dir(ctx, &p, &key, &err) < 0) {
            cli_error(&err);
            bundle_paths_free(&p);
            sb_release(&key);
            return EXIT_FAIL;
        }
        rc = adp_session_end(all ? NULL : key.buf, all, stdout, &err);
        bundle_paths_free(&p);
        sb_release(&key);
    } else if (strcmp(sub, "list") == 0) {
        bool json = argc > 2 && strcmp(argv[2], "--json") == 0;
        if (argc > 3 || (argc == 3 && !json))
            return cli_usage_error("session", "list takes only --json");
        rc = adp_session_list(json, stdout, &err);
    } else {
        return cli_usage_error("session", "unknown subcommand '%s' (start, end, list)", sub);
    }
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    return rc;
}
