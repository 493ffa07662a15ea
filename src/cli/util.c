/* Shared CLI helpers: error printing, opening the library
 * and the project for a command, and the set-up apply, use and session share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "cli/cli.h"
#include "library/library.h"
#include "onboard/onboard.h"
#include "trust/trust.h"

/* Error text names files, servers and paths a repository chose: every line
 * goes out sanitized, so a message cannot carry an escape or a line of its
 * own. The messages are one line each by convention; the hint is the next. */
void cli_error(const struct as_err *err)
{
    char buf[4096];
    as_err_str(err, buf, sizeof buf);
    term_fprintf(stderr, "%serror:%s %s\n", term_color(2, TERM_RED), term_color(2, TERM_RESET),
                 buf);
    if (err->hint[0])
        term_fprintf(stderr, "  %s\n", err->hint);
    if (cli_error_sink)
        cli_error_sink(buf, err->hint);
}

void cli_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf b = SB_INIT;
    term_vsbprintf(&b, fmt, ap);
    va_end(ap);
    term_fprintf(stderr, "%serror:%s %s\n", term_color(2, TERM_RED), term_color(2, TERM_RESET),
                 b.buf);
    if (cli_error_sink)
        cli_error_sink(b.buf, NULL);
    sb_release(&b);
}

const struct cli_choice cli_scope_choices[] = {
    {"global", CLI_SCOPE_GLOBAL}, {"project", CLI_SCOPE_PROJECT}, {NULL, 0}};

const struct cli_choice cli_secret_dest_choices[] = {{"keychain", ONB_DEST_KEYCHAIN},
                                                     {"env", ONB_DEST_ENV},
                                                     {"file", ONB_DEST_FILE},
                                                     {"skip", ONB_DEST_SKIP},
                                                     {NULL, 0}};

const char *cli_scope_name(int scope)
{
    return scope == CLI_SCOPE_GLOBAL ? "global" : scope == CLI_SCOPE_PROJECT ? "project" : NULL;
}

/* The central library, or NULL when sources.toml cannot be used: then no
 * library name resolves (validation says which) and the rest still runs. */
struct library *cli_open_library(void)
{
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        char buf[4096];
        term_fprintf(stderr, "warning: the central library cannot be read: %s\n",
                     as_err_str(&err, buf, sizeof buf));
        if (err.hint[0])
            term_fprintf(stderr, "  %s\n", err.hint);
        return NULL;
    }
    for (size_t i = 0; i < lib->warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
    return lib;
}

void cli_needed_refs(const struct manifest *m, struct library *lib, strvec *out)
{
    strbuf home = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    struct adp_effective eff;
    adp_effective_servers(m, home_dir(&home, &err) == 0 ? home.buf : NULL,
                          lib ? lib_pin_lookup : NULL, lib, &eff);
    adp_effective_refs(m, &eff, out);
    adp_effective_free(&eff);
    sb_release(&home);
}

struct library *cli_lib_open(struct cli_lib *cl, bool lock)
{
    struct as_err err = AS_ERR_INIT;
    cl->locked = false;
    if (lock) {
        if (trust_lock(&cl->lock, &err) < 0) {
            cli_error(&err);
            return NULL;
        }
        cl->locked = true;
    }
    cl->lib = lib_open(NULL, &err);
    if (!cl->lib) {
        cli_error(&err);
        if (cl->locked)
            lock_release(&cl->lock);
        cl->locked = false;
    }
    return cl->lib;
}

void cli_lib_close(struct cli_lib *cl)
{
    if (cl->locked)
        lock_release(&cl->lock);
    cl->locked = false;
    lib_free(cl->lib);
    cl->lib = NULL;
}

int cli_project(const struct cli_ctx *ctx, struct bundle_paths *p)
{
    struct as_err err = AS_ERR_INIT;
    if (discover_project(ctx->manifest_dir, NULL, p, &err) < 0 || discover_require(p, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(p);
        return -1;
    }
    return 0;
}

int cli_with_project(struct cli_ctx *ctx, bool lib_warnings, cli_project_fn fn, const void *arg)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    int rc = EXIT_FAIL;
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, true);
    if (lib) {
        for (size_t i = 0; lib_warnings && i < lib->warnings.n; i++)
            term_fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
        fflush(stdout);
        if (fn(lib, &p, arg, &err) < 0)
            cli_error(&err);
        else
            rc = EXIT_OK;
    }
    cli_lib_close(&cl);
    bundle_paths_free(&p);
    return rc;
}

void cli_render_init(struct cli_render *r)
{
    memset(r, 0, sizeof *r);
    manifest_snapshot_init(&r->snap);
    sb_init(&r->machine_path, 0);
}

int cli_render_load(struct cli_render *r, struct as_err *err)
{
    if (r->p.found) {
        if (manifest_snapshot_read(&r->p, &r->snap, err) < 0 ||
            !(r->m = manifest_load_snapshot(&r->p, &r->snap, err))) {
            cli_error(err);
            return -1;
        }
        return 0;
    }
    int absent = 0;
    r->m = manifest_load_machine(&absent, err);
    if (!r->m) {
        if (absent) {
            as_err_clear(err);
            discover_require(&r->p, err);
        }
        cli_error(err);
        return -1;
    }
    home_path(HOME_MACHINE_MANIFEST, &r->machine_path, err);
    return 0;
}

int cli_render_prepare(struct cli_render *r, const char *scope, const char *refuse,
                       struct as_err *err)
{
    if (adp_registry_load(&r->reg, true, err) < 0) {
        cli_error(err);
        return -1;
    }
    r->have_reg = true;
    for (size_t i = 0; i < r->reg.warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", r->reg.warnings.v[i]);
    const char **ids = xcalloc(r->reg.v.n + 1, sizeof(char *));
    for (size_t i = 0; i < r->reg.v.n; i++)
        ids[i] = r->reg.v.v[i]->id;
    r->lib = cli_open_library();
    struct manifest_env env = {.adapter_ids = ids,
                               .n_adapter_ids = r->reg.v.n,
                               .library_has = r->lib ? lib_manifest_has : NULL,
                               .library_ctx = r->lib};
    mf_diags diags = VEC_INIT;
    size_t nerr = manifest_validate(r->m, &env, &diags);
    free(ids);
    for (size_t i = 0; i < diags.n; i++) {
        /* message and fix on lines of their own: each is sanitized whole */
        strbuf s = SB_INIT;
        mf_diag_message(&diags.v[i], &s);
        term_fprintf(stderr, "%s: %s\n", diags.v[i].sev == MF_ERROR ? "error" : "warning", s.buf);
        if (diags.v[i].fix)
            term_fprintf(stderr, "  %s\n", diags.v[i].fix);
        sb_release(&s);
    }
    mf_diags_free(&diags);
    if (nerr && refuse) {
        cli_errorf("refusing to %s: the manifest has %zu validation error%s (see above)", refuse,
                   nerr, nerr == 1 ? "" : "s");
        return -1;
    }
    struct trust_library tl = {.pin = r->lib ? lib_pin_lookup : NULL,
                               .has = r->lib ? lib_manifest_has : NULL,
                               .ctx = r->lib};
    if (r->p.found && adp_trust_gate_lib(&r->p, &r->snap, r->m, &tl, &r->refusal, err) < 0) {
        as_err_prefix(err, "cannot check trust");
        cli_error(err);
        return -1;
    }
    r->project_scope = r->p.found && !(scope && strcmp(scope, "global") == 0);
    /* After the gate: an untrusted project's secrets are never looked up. */
    if (adp_render_env_init(&r->renv, r->m, &r->p, &r->snap, !r->project_scope, r->refusal != NULL,
                            err) < 0) {
        cli_error(err);
        return -1;
    }
    r->have_renv = true;
    return 0;
}

void cli_render_opts(const struct cli_render *r, struct adp_apply_opts *o)
{
    o->m = r->m;
    o->manifest_path = r->p.found ? r->p.manifest : r->machine_path.buf;
    o->project_scope = r->project_scope;
    o->project_root = r->p.found ? r->p.project_root : NULL;
    o->color = term_use_color(1);
    o->trust_refusal = r->refusal;
    o->out = stdout;
    o->library = r->lib ? lib_pin_lookup : NULL;
    o->library_ctx = r->lib;
    adp_render_env_apply(&r->renv, o);
}

void cli_render_release(struct cli_render *r)
{
    if (r->have_renv)
        adp_render_env_release(&r->renv);
    lib_free(r->lib);
    free(r->refusal);
    if (r->have_reg)
        adp_registry_free(&r->reg);
    manifest_free(r->m);
    manifest_snapshot_release(&r->snap);
    bundle_paths_free(&r->p);
    sb_release(&r->machine_path);
}
