/*
 * agentstack bootstrap [--json] — the read-only preflight
 * (docs/onboarding.md): does the manifest validate, which CLIs are
 * installed, which secrets and skills are missing, is the project trusted,
 * and what apply would change — then exactly one `Next:` action.
 *
 * Read-only: nothing is written (apply runs as a preview into memory).
 * Secrets are located by presence (env, keychain attributes, file store,
 * .env); varlock never runs here. Only the apply preview of a
 * trusted project resolves values, in memory, as `apply` itself would, to
 * tell whether a target would change; no value is printed.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "cli/cli.h"
#include "library/library.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"
#include "trust/trust.h"

int cmd_bootstrap(int argc, char **argv, struct cli_ctx *ctx);

struct report {
    char *manifest_path;
    bool valid;
    strvec errors; /* formatted validation errors */
    char *first_fix;
    strvec clis, cli_names; /* detected among the targets */
    strvec secrets_ok, secrets_src, secrets_missing;
    char kc_note[600];
    strvec skills_missing;
    bool trusted;
    bool unlocked; /* no agentstack.lock while there is something to pin */
    char *refusal;
    long would_change; /* -1: not computed */
    char *apply_note;
    char *next_cmd, *next_why;
};

static void report_free(struct report *r)
{
    free(r->manifest_path);
    strvec_clear(&r->errors);
    free(r->first_fix);
    strvec_clear(&r->clis);
    strvec_clear(&r->cli_names);
    strvec_clear(&r->secrets_ok);
    strvec_clear(&r->secrets_src);
    strvec_clear(&r->secrets_missing);
    strvec_clear(&r->skills_missing);
    free(r->refusal);
    free(r->apply_note);
    free(r->next_cmd);
    free(r->next_why);
}

static void next(struct report *r, const char *cmd, const char *why)
{
    if (r->next_cmd)
        return; /* the first (most urgent) action wins */
    r->next_cmd = xstrdup(cmd);
    r->next_why = xstrdup(why);
}

static void check_skills(const struct manifest *m, struct library *lib, struct report *r)
{
    for (size_t t = 0; t < m->toolsets.n; t++) {
        const struct mf_toolset *ts = &m->toolsets.v[t];
        for (size_t i = 0; i < ts->skills.n; i++) {
            const char *n = ts->skills.v[i];
            if (strcmp(n, "*") == 0 || strvec_find(&r->skills_missing, n) >= 0)
                continue;
            const struct mf_skill *sk = manifest_skill(m, n);
            if (sk) {
                if (sk->source == MF_SOURCE_PATH && sk->path) {
                    char *p = sk->path[0] == '/' ? xstrdup(sk->path)
                                                 : xasprintf("%s/%s", m->manifest_dir, sk->path);
                    if (!fs_is_dir(p))
                        strvec_push(&r->skills_missing, n);
                    free(p);
                }
                continue;
            }
            const struct lib_item *it = NULL;
            struct as_err err = AS_ERR_INIT;
            if (!lib || lib_resolve(lib, LIB_SKILL, n, &it, &err) != 1)
                strvec_push(&r->skills_missing, n);
        }
    }
}

/* Runs apply as a preview into memory and reads its closing line. */
static void preview_apply(const struct adp_registry *reg, const struct bundle_paths *p,
                          const struct manifest *m, struct library *lib, struct report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return;
    struct sec_chain_opts co = {.project_dotenv = p->env_file};
    struct sec_chain *chain = sec_chain_full(&co);
    strvec none = STRVEC_INIT;
    struct adp_apply_opts o = {
        .m = m,
        .manifest_path = p->manifest,
        .project_scope = true,
        .project_root = p->project_root,
        .targets = &none,
        .write = false,
        .color = false,
        .resolve = sec_resolve_for_render,
        .resolve_ctx = chain,
        .operation = "bootstrap",
        .out = mem,
        .library = lib ? lib_pin_lookup : NULL,
        .library_ctx = lib,
    };
    struct as_err err = AS_ERR_INIT;
    int rc = adp_apply(reg, &o, &err);
    fclose(mem);
    sec_chain_free(chain);
    r->would_change = rc == 0 ? 0 : -1;
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        long n = 0;
        if (sscanf(line, "%ld target", &n) == 1 && strstr(line, "would change")) {
            r->would_change = n;
            if (strstr(line, "would refuse")) {
                free(r->apply_note);
                r->apply_note = xstrdup("--write would refuse on some targets (unresolved "
                                        "secrets)");
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    if (rc != 0 && !r->apply_note) {
        char b[2048];
        r->apply_note =
            xstrdup(as_err_isset(&err) ? as_err_str(&err, b, sizeof b) : "the preview failed");
    }
    free(buf);
}

static int build(struct cli_ctx *ctx, struct report *r, struct as_err *err)
{
    struct bundle_paths p = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    struct adp_registry reg = {0};
    bool have_reg = false;
    struct library *lib = NULL;
    int rc = -1;
    r->would_change = -1;
    if (discover_project(ctx->manifest_dir, NULL, &p, err) < 0)
        goto out;
    if (!p.found) {
        discover_require(&p, err);
        as_err_hint(err, "agentstack init   (imports what your CLIs already have)");
        goto out;
    }
    r->manifest_path = xstrdup(p.manifest);
    if (manifest_snapshot_read(&p, &snap, err) < 0 || !(m = manifest_load_snapshot(&p, &snap, err)))
        goto out;
    if (adp_registry_load(&reg, true, err) < 0)
        goto out;
    have_reg = true;
    struct as_err lerr = AS_ERR_INIT;
    lib = lib_open(NULL, &lerr);

    /* Manifest */
    const char **ids = xcalloc(reg.v.n + 1, sizeof(char *));
    for (size_t i = 0; i < reg.v.n; i++)
        ids[i] = reg.v.v[i]->id;
    struct manifest_env env = {.adapter_ids = ids,
                               .n_adapter_ids = reg.v.n,
                               .library_has = lib ? lib_manifest_has : NULL,
                               .library_ctx = lib};
    mf_diags d = VEC_INIT;
    size_t nerr = manifest_validate(m, &env, &d);
    free(ids);
    for (size_t i = 0; i < d.n; i++)
        if (d.v[i].sev == MF_ERROR) {
            strbuf s = SB_INIT;
            mf_diag_format(&d.v[i], &s);
            strvec_push(&r->errors, s.buf);
            sb_release(&s);
            if (!r->first_fix && d.v[i].fix)
                r->first_fix = xstrdup(d.v[i].fix);
        }
    mf_diags_free(&d);
    r->valid = nerr == 0;

    /* CLIs: detected, narrowed to [targets] default when set */
    for (size_t i = 0; i < reg.v.n; i++) {
        const struct adp_desc *a = reg.v.v[i];
        if (m->has_targets && !manifest_targets_include(&m->targets_default, a->id))
            continue;
        if (adp_detected(a, p.project_root)) {
            strvec_push(&r->clis, a->id);
            strvec_push(&r->cli_names, a->display);
        }
    }

    /* Secrets, by presence: every ${REF} apply would need, the library
     * servers' included. */
    strvec refs = STRVEC_INIT;
    cli_needed_refs(m, lib, &refs);
    struct onb_locator l;
    onb_locator_init(&l, p.env_file, refs.n > 0);
    for (size_t i = 0; i < refs.n; i++) {
        const char *src = onb_locate(&l, refs.v[i], NULL);
        if (src) {
            strvec_push(&r->secrets_ok, refs.v[i]);
            strvec_push(&r->secrets_src, src);
        } else {
            strvec_push(&r->secrets_missing, refs.v[i]);
        }
    }
    if (refs.n && !l.kc_ok)
        snprintf(r->kc_note, sizeof r->kc_note, "%.590s", l.kc_why);
    onb_locator_free(&l);
    strvec_clear(&refs);

    /* Skills */
    check_skills(m, lib, r);

    r->unlocked = !snap.has_lock && (m->servers.n || m->skills.n || m->toolsets.n);

    /* Trust, then the apply preview for a trusted, valid project */
    char *refusal = NULL;
    struct trust_library tl = {
        .pin = lib ? lib_pin_lookup : NULL, .has = lib ? lib_manifest_has : NULL, .ctx = lib};
    if (adp_trust_gate_lib(&p, &snap, m, &tl, &refusal, err) < 0)
        goto out;
    r->trusted = refusal == NULL;
    r->refusal = refusal;
    if (r->valid && r->trusted)
        preview_apply(&reg, &p, m, lib, r);

    /* The one next action, most urgent first. */
    if (!r->valid)
        next(r, r->first_fix ? r->first_fix : "agentstack doctor",
             "the manifest does not validate");
    if (r->secrets_missing.n) {
        char *c = xasprintf("agentstack secret set %s", r->secrets_missing.v[0]);
        next(r, c,
             r->secrets_missing.n == 1 ? "one secret is missing on this machine"
                                       : "secrets are missing on this machine");
        free(c);
    }
    if (r->skills_missing.n) {
        char *c = xasprintf("agentstack lib add <dir-of-%s> --write", r->skills_missing.v[0]);
        next(r, c, "a skill the toolsets name is neither declared nor in the library");
        free(c);
    }
    if (r->unlocked)
        next(r, "agentstack lock --write",
             "pin what the manifest names, then review and trust "
             "it (agentstack trust .)");
    if (!r->trusted)
        next(r, "agentstack trust .",
             "review what this project declares; until then nothing "
             "of it is delivered");
    if (r->would_change > 0)
        next(r, "agentstack apply --write", "render the manifest into each CLI's own config");
    if (r->would_change < 0 && r->apply_note)
        next(r, "agentstack apply", "see why the preview failed");
    next(r, "agentstack doctor", "everything is in place; doctor checks the rest any time");
    rc = 0;
out:
    lib_free(lib);
    if (have_reg)
        adp_registry_free(&reg);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    return rc;
}

static void print_human(const struct report *r)
{
    /* The one-line summary first. */
    printf("%s manifest %s · %zu adapter%s installed · ", r->valid ? "✓" : "✗",
           r->valid ? "validates" : "does not validate", r->clis.n, r->clis.n == 1 ? "" : "s");
    if (r->secrets_missing.n)
        printf("%zu missing secret%s\n", r->secrets_missing.n,
               r->secrets_missing.n == 1 ? "" : "s");
    else
        printf("no missing secrets\n");
    for (size_t i = 0; i < r->errors.n; i++)
        printf("  ✗ %s\n", r->errors.v[i]);
    if (r->clis.n) {
        printf("  · CLIs: ");
        for (size_t i = 0; i < r->cli_names.n; i++)
            printf("%s%s", i ? " · " : "", r->cli_names.v[i]);
        printf("\n");
    } else {
        printf("  ⚠ no supported CLI is installed here — apply has nowhere to write\n");
    }
    for (size_t i = 0; i < r->secrets_missing.n; i++)
        printf("  ✗ ${%s} missing ↳ agentstack secret set %s\n", r->secrets_missing.v[i],
               r->secrets_missing.v[i]);
    if (r->secrets_missing.n && r->kc_note[0])
        printf("  · keychain: %s\n", r->kc_note);
    for (size_t i = 0; i < r->skills_missing.n; i++)
        printf("  ✗ skill '%s' missing — not declared in [skills] and not in the library\n",
               r->skills_missing.v[i]);
    if (r->unlocked)
        printf("  ⚠ no agentstack.lock yet — nothing is pinned ↳ agentstack lock --write\n");
    if (!r->trusted)
        printf("  ✗ %s\n", r->refusal ? r->refusal : "not trusted");
    else if (r->would_change > 0)
        printf("  → apply would change %ld target%s\n", r->would_change,
               r->would_change == 1 ? "" : "s");
    else if (r->would_change == 0)
        printf("  ✓ every target in sync\n");
    if (r->apply_note)
        printf("  ⚠ apply: %s\n", r->apply_note);
    printf("Next: %s   · %s\n", r->next_cmd, r->next_why);
}

static void print_json(const struct report *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(1));
    json_object_set_new(o, "command", json_string("bootstrap"));
    json_t *mf = json_object();
    json_object_set_new(mf, "path", json_string(r->manifest_path ? r->manifest_path : ""));
    json_object_set_new(mf, "valid", json_boolean(r->valid));
    json_t *errs = json_array();
    for (size_t i = 0; i < r->errors.n; i++)
        json_array_append_new(errs, json_string(r->errors.v[i]));
    json_object_set_new(mf, "errors", errs);
    json_object_set_new(o, "manifest", mf);
    json_t *clis = json_array();
    for (size_t i = 0; i < r->clis.n; i++)
        json_array_append_new(clis, json_string(r->clis.v[i]));
    json_object_set_new(o, "clis_installed", clis);
    json_t *sec = json_object(), *res = json_object(), *mis = json_array();
    for (size_t i = 0; i < r->secrets_ok.n; i++)
        json_object_set_new(res, r->secrets_ok.v[i], json_string(r->secrets_src.v[i]));
    for (size_t i = 0; i < r->secrets_missing.n; i++)
        json_array_append_new(mis, json_string(r->secrets_missing.v[i]));
    json_object_set_new(sec, "resolved", res);
    json_object_set_new(sec, "missing", mis);
    json_object_set_new(o, "secrets", sec);
    json_t *sk = json_array();
    for (size_t i = 0; i < r->skills_missing.n; i++)
        json_array_append_new(sk, json_string(r->skills_missing.v[i]));
    json_object_set_new(o, "skills_missing", sk);
    json_object_set_new(o, "trusted", json_boolean(r->trusted));
    json_object_set_new(o, "locked", json_boolean(!r->unlocked));
    json_object_set_new(o, "apply_would_change",
                        r->would_change >= 0 ? json_integer(r->would_change) : json_null());
    json_t *na = json_object();
    json_object_set_new(na, "command", json_string(r->next_cmd));
    json_object_set_new(na, "why", json_string(r->next_why));
    json_object_set_new(o, "next_action", na);
    bool ready = r->valid && !r->secrets_missing.n && !r->skills_missing.n && r->trusted &&
                 r->would_change == 0;
    json_object_set_new(o, "state", json_string(ready ? "ready" : "needs_attention"));
    char *s = json_dumps(o, JSON_INDENT(2));
    printf("%s\n", s);
    free(s);
    json_decref(o);
}

struct bootstrap_args {
    bool json;
};

#define CLI_ARGS struct bootstrap_args
static const struct cli_option bootstrap_options[] = {
    {OPT_BOOL("json", 0, json, "one JSON document (schema_version 1) for scripts")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_bootstrap_spec = {
    .name = "bootstrap",
    .fn = cmd_bootstrap,
    .summary = "preflight: CLIs installed, secrets and skills missing, what apply would change",
    .synopsis = CLI_LINES("bootstrap [--json]"),
    .description = "Read-only; ends with one Next: action.",
    .options = bootstrap_options,
    .examples = CLI_LINES("agentstack bootstrap", "agentstack bootstrap --json"),
    .see_also = "up status doctor",
};

int cmd_bootstrap(int argc, char **argv, struct cli_ctx *ctx)
{
    struct bootstrap_args a = {0};
    int prc = cli_parse(&cmd_bootstrap_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_bootstrap_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    bool json = a.json;
    struct report r = {0};
    struct as_err err = AS_ERR_INIT;
    int rc = EXIT_OK;
    if (build(ctx, &r, &err) < 0) {
        if (json) {
            json_t *o = json_object();
            char b[4096];
            json_object_set_new(o, "schema_version", json_integer(1));
            json_object_set_new(o, "command", json_string("bootstrap"));
            json_object_set_new(o, "state", json_string("needs_setup"));
            json_object_set_new(o, "error", json_string(as_err_str(&err, b, sizeof b)));
            json_t *na = json_object();
            json_object_set_new(
                na, "command",
                json_string(r.manifest_path ? "agentstack doctor" : "agentstack init"));
            json_object_set_new(
                na, "why",
                json_string(r.manifest_path ? "the manifest does not load" : "no manifest here"));
            json_object_set_new(o, "next_action", na);
            char *s = json_dumps(o, JSON_INDENT(2));
            printf("%s\n", s);
            free(s);
            json_decref(o);
        } else {
            cli_error(&err);
            if (r.manifest_path)
                printf("Next: fix %s as the error says, then: agentstack bootstrap\n",
                       r.manifest_path);
            else
                printf("Next: agentstack init   · no manifest here\n");
        }
        rc = EXIT_FAIL;
    } else if (json) {
        print_json(&r);
    } else {
        print_human(&r);
    }
    fflush(stdout);
    report_free(&r);
    return rc;
}
