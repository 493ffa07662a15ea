/*
 * agentstack status [--json] [--verbose] [--short] (--short is bare
 * `agentstack`): readiness at a glance —
 * which CLIs are here, which manifest is in play, its toolsets, whether it
 * is locked and trusted, how servers are delivered, whether the gateway is
 * connected, shadowed library names, secrets by presence — and one next
 * action. Read-only; it never reads a keychain value and never runs
 * varlock (presence only); it renders nothing.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/adapters.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "cli/cli.h"
#include "library/library.h"
#include "oauth/oauth.h"
#include "onboard/onboard.h"
#include "policy/policy.h"
#include "trust/trust.h"

int cmd_status(int argc, char **argv, struct cli_ctx *ctx);

struct st {
    strvec clis, cli_names, connected;
    bool project, machine, loaded, valid, locked;
    char *manifest_path, *load_error;
    size_t servers, skills;
    strvec toolsets;
    char *default_toolset;
    enum trust_state trust;
    bool render_locally;
    bool kc_unchecked; /* the keychain could not be asked */
    strvec shadowed;
    strvec sec_ok, sec_missing;
    strvec logins_needed; /* HTTP servers that need `agentstack auth login` */
    char *next_cmd, *next_why;
    char *isolation; /* how stdio servers run here ([policy.isolation]) */
};

/* How a gateway here would run stdio servers; NULL when the policy cannot
 * be read (the rest of status says why). */
static char *isolation_now(const struct manifest *m)
{
    strbuf path = SB_INIT, out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    enum pol_machine_state st;
    struct pol_layer *machine = NULL, *project = NULL;
    if (pol_machine_path(&path, &err) == 0)
        machine = pol_machine_load(path.buf, &st, &err);
    if (m && m->policy)
        project = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, &err);
    char *r = NULL;
    if (machine && (!m || !m->policy || project)) {
        pol_isolation_text(machine, project, &out);
        r = sb_detach(&out, NULL);
    }
    pol_layer_free(machine);
    pol_layer_free(project);
    sb_release(&path);
    sb_release(&out);
    return r;
}

static void next(struct st *s, const char *cmd, const char *why)
{
    if (!s->next_cmd) {
        s->next_cmd = xstrdup(cmd);
        s->next_why = xstrdup(why);
    }
}

static void st_free(struct st *s)
{
    strvec_clear(&s->clis);
    strvec_clear(&s->cli_names);
    strvec_clear(&s->connected);
    free(s->manifest_path);
    free(s->isolation);
    free(s->load_error);
    strvec_clear(&s->toolsets);
    free(s->default_toolset);
    strvec_clear(&s->shadowed);
    strvec_clear(&s->sec_ok);
    strvec_clear(&s->sec_missing);
    strvec_clear(&s->logins_needed);
    free(s->next_cmd);
    free(s->next_why);
}

static void gather(struct cli_ctx *ctx, struct st *s)
{
    struct as_err err = AS_ERR_INIT;
    struct adp_registry reg = {0};
    struct bundle_paths p = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    bool have_reg = adp_registry_load(&reg, true, &err) == 0;
    as_err_clear(&err);
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) == 0 && p.found) {
        s->project = true;
        s->manifest_path = xstrdup(p.manifest);
        if (manifest_snapshot_read(&p, &snap, &err) == 0)
            m = manifest_load_snapshot(&p, &snap, &err);
        s->locked = snap.has_lock;
    } else {
        int absent = 0;
        as_err_clear(&err);
        m = manifest_load_machine(&absent, &err);
        strbuf mp = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        if (!absent && home_path(HOME_MACHINE_MANIFEST, &mp, &e2) == 0) {
            s->machine = true;
            s->manifest_path = sb_detach(&mp, NULL);
        }
        sb_release(&mp);
    }
    if ((s->project || s->machine) && !m) {
        char b[4096];
        s->load_error = xstrdup(as_err_str(&err, b, sizeof b));
    }
    for (size_t i = 0; have_reg && i < reg.v.n; i++) {
        const struct adp_desc *d = reg.v.v[i];
        if (!adp_detected(d, s->project ? p.project_root : NULL))
            continue;
        strvec_push(&s->clis, d->id);
        strvec_push(&s->cli_names, d->display);
        if (onb_bridge_registered(d))
            strvec_push(&s->connected, d->display);
    }
    struct library *lib = lib_open(NULL, &err);
    if (lib) {
        lib_collisions cs = VEC_INIT;
        lib_find_collisions(lib, &cs);
        for (size_t i = 0; i < cs.n; i++) {
            strbuf line = SB_INIT;
            lib_collision_format(lib, &cs.v[i], &line);
            strvec_push(&s->shadowed, line.buf);
            sb_release(&line);
        }
        lib_collisions_free(&cs);
    }
    s->isolation = isolation_now(s->project ? m : NULL);
    if (m) {
        s->loaded = true;
        s->servers = m->servers.n;
        /* Skills: the [skills] tables plus library skills a toolset names
         * (init imports skills into the library), each once. */
        strvec sk = STRVEC_INIT;
        for (size_t i = 0; i < m->skills.n; i++)
            strvec_push(&sk, m->skills.v[i].name);
        for (size_t i = 0; i < m->toolsets.n; i++) {
            const struct mf_toolset *t = &m->toolsets.v[i];
            strvec_push(&s->toolsets, t->name);
            for (size_t k = 0; k < t->skills.n; k++)
                if (strcmp(t->skills.v[k], "*") != 0 && strvec_find(&sk, t->skills.v[k]) < 0)
                    strvec_push(&sk, t->skills.v[k]);
        }
        s->skills = sk.n;
        strvec_clear(&sk);
        const struct mf_toolset *eff = manifest_effective_toolset(m);
        s->default_toolset = eff ? xstrdup(eff->name) : NULL;
        s->render_locally = m->delivery_render_locally;
        const char **ids = xcalloc(reg.v.n + 1, sizeof(char *));
        for (size_t i = 0; have_reg && i < reg.v.n; i++)
            ids[i] = reg.v.v[i]->id;
        struct manifest_env env = {.adapter_ids = ids,
                                   .n_adapter_ids = have_reg ? reg.v.n : 0,
                                   .library_has = lib ? lib_manifest_has : NULL,
                                   .library_ctx = lib};
        mf_diags d = VEC_INIT;
        s->valid = manifest_validate(m, &env, &d) == 0;
        mf_diags_free(&d);
        free(ids);
        strvec refs = STRVEC_INIT;
        cli_needed_refs(m, lib, &refs);
        struct onb_locator l;
        onb_locator_init(&l, s->project ? p.env_file : NULL, refs.n > 0);
        for (size_t i = 0; i < refs.n; i++)
            strvec_push(onb_locate(&l, refs.v[i], NULL) ? &s->sec_ok : &s->sec_missing, refs.v[i]);
        s->kc_unchecked = refs.n && !l.kc_ok;
        for (size_t i = 0; i < m->servers.n; i++) {
            strbuf why = SB_INIT;
            if (m->servers.v[i].type == MF_SERVER_HTTP &&
                oauth_needs_login(m->servers.v[i].name, &why))
                strvec_push(&s->logins_needed, m->servers.v[i].name);
            sb_release(&why);
        }
        onb_locator_free(&l);
        strvec_clear(&refs);
        if (s->project) {
            struct trust_status ts;
            memset(&ts, 0, sizeof ts);
            if (trust_check_snapshot(&p, &snap, &ts, &err) == 0)
                s->trust = ts.state;
            trust_status_release(&ts);
        } else {
            s->trust = TRUST_TRUSTED; /* the machine layer is never gated */
        }
    }
    /* One next action, most urgent first. */
    if (!s->project && !s->machine)
        next(s, "agentstack init", "no manifest here — import what your CLIs already have");
    else if (!s->loaded)
        next(s, "agentstack doctor", "the manifest does not load");
    else if (!s->valid)
        next(s, "agentstack doctor", "the manifest does not validate");
    else if (s->sec_missing.n) {
        char *c = xasprintf("agentstack secret set %s", s->sec_missing.v[0]);
        next(s, c, "a secret this project needs is not set on this machine");
        free(c);
    } else if (s->logins_needed.n) {
        strbuf c = SB_INIT;
        oauth_login_command(s->logins_needed.v[0], &c);
        next(s, c.buf, "an HTTP server needs an OAuth login");
        sb_release(&c);
    } else if (s->project && !s->locked && (s->servers || s->skills || s->toolsets.n))
        next(s, "agentstack lock --write", "nothing is pinned yet");
    else if (s->project && s->trust != TRUST_TRUSTED)
        next(s, "agentstack trust .",
             s->trust == TRUST_CHANGED ? "the content changed since you trusted it"
                                       : "review what this project declares");
    else if (!s->clis.n)
        next(s, "agentstack doctor", "no supported CLI is installed here");
    else
        next(s, "agentstack apply", "preview what each CLI's config would get");
    lib_free(lib);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    if (have_reg)
        adp_registry_free(&reg);
}

static void join(const strvec *v, const char *sep)
{
    for (size_t i = 0; i < v->n; i++)
        term_printf("%s%s", i ? sep : "", v->v[i]);
}

static const char *trust_label(enum trust_state t)
{
    return t == TRUST_TRUSTED   ? "trusted"
           : t == TRUST_CHANGED ? "trust stale (content changed)"
                                : "untrusted";
}

static void print_human(const struct st *s, bool verbose)
{
    term_printf("CLIs       ");
    if (s->clis.n) {
        join(&s->cli_names, " · ");
        term_printf("\n");
    } else {
        term_printf("none detected\n");
    }
    term_printf("Setup      ");
    if (s->project || s->machine) {
        strbuf d = SB_INIT;
        onb_display_path(s->manifest_path, &d);
        term_printf("%s %s", s->project ? "project" : "machine", d.buf);
        sb_release(&d);
        if (s->loaded)
            term_printf(" · %zu server%s · %zu skill%s%s", s->servers, s->servers == 1 ? "" : "s",
                        s->skills, s->skills == 1 ? "" : "s", s->valid ? "" : " · ✗ invalid");
        else
            term_printf(" · ✗ does not load");
        term_printf("\n");
    } else {
        term_printf("no manifest here\n");
    }
    if (s->loaded) {
        term_printf("Toolsets   ");
        if (s->toolsets.n)
            join(&s->toolsets, " · ");
        else
            term_printf("none");
        term_printf("\n");
        if (s->project)
            term_printf("Status     %s · %s\n", s->locked ? "locked" : "not locked",
                        trust_label(s->trust));
        term_printf("Toolset    %s\n",
                    s->default_toolset ? s->default_toolset : "— (every server)");
        term_printf("Delivery   %s\n", s->render_locally
                                           ? "rendered locally (apply writes native files)"
                                           : "live where the gateway is connected, "
                                             "rendered elsewhere");
        term_printf("Secrets    %zu resolved · %zu missing", s->sec_ok.n, s->sec_missing.n);
        if (s->sec_missing.n) {
            term_printf(" (");
            join(&s->sec_missing, ", ");
            term_printf(")");
            if (s->kc_unchecked)
                term_printf(" · the keychain could not be asked");
        }
        term_printf("\n");
    }
    for (size_t i = 0; i < s->logins_needed.n; i++)
        term_printf("Login      %s needs login (agentstack auth login %s)\n", s->logins_needed.v[i],
                    s->logins_needed.v[i]);
    term_printf("Gateway    ");
    if (s->connected.n) {
        term_printf("connected in ");
        join(&s->connected, " · ");
        term_printf("\n");
    } else {
        term_printf("not connected (agentstack connect --all --write)\n");
    }
    if (s->isolation)
        term_printf("Servers    %s\n", s->isolation);
    term_printf("Library    %s\n", s->shadowed.n ? "shadowed names:" : "no shadowed names");
    for (size_t i = 0; i < s->shadowed.n && (verbose || i < 5); i++)
        term_printf("  %s\n", s->shadowed.v[i]);
    if (s->load_error && verbose)
        term_printf("  ✗ %s\n", s->load_error);
    term_printf("Next: %s · %s\n", s->next_cmd, s->next_why);
}

/* Bare `agentstack` (the shortest form): one line of state, the next
 * action, and where the rest is — a newcomer typing the bare name learns
 * both what to do and how to see every command. */
static void print_short(const struct st *s)
{
    term_printf("agentstack · ");
    if (s->project || s->machine) {
        strbuf d = SB_INIT;
        onb_display_path(s->manifest_path, &d);
        term_printf("%s %s", s->project ? "project" : "machine", d.buf);
        sb_release(&d);
        if (!s->loaded)
            term_printf(" · ✗ does not load");
        else if (!s->valid)
            term_printf(" · ✗ invalid");
        if (s->loaded && s->project)
            term_printf(" · %s · %s", s->locked ? "locked" : "not locked", trust_label(s->trust));
        if (s->sec_missing.n)
            term_printf(" · %zu secret%s missing", s->sec_missing.n,
                        s->sec_missing.n == 1 ? "" : "s");
    } else {
        term_printf("no manifest here");
    }
    term_printf(" · %zu CLI%s\n", s->clis.n, s->clis.n == 1 ? "" : "s");
    term_printf("Next: %s · %s\n", s->next_cmd, s->next_why);
    term_printf("agentstack status: the full picture · agentstack help: every command\n");
}

static json_t *strarr(const strvec *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

static void print_json(const struct st *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(1));
    json_object_set_new(o, "command", json_string("status"));
    json_object_set_new(o, "clis_detected", strarr(&s->clis));
    json_object_set_new(o, "gateway_connected", strarr(&s->connected));
    if (s->project || s->machine) {
        json_t *m = json_object();
        json_object_set_new(m, "path", json_string(s->manifest_path));
        json_object_set_new(m, "scope", json_string(s->project ? "project" : "machine"));
        json_object_set_new(m, "loaded", json_boolean(s->loaded));
        json_object_set_new(m, "valid", json_boolean(s->valid));
        json_object_set_new(m, "servers", json_integer((json_int_t)s->servers));
        json_object_set_new(m, "skills", json_integer((json_int_t)s->skills));
        json_object_set_new(m, "toolsets", strarr(&s->toolsets));
        json_object_set_new(m, "locked", json_boolean(s->locked));
        json_object_set_new(m, "trust", json_string(trust_state_name(s->trust)));
        json_object_set_new(o, "manifest", m);
    } else {
        json_object_set_new(o, "manifest", json_null());
    }
    if (s->loaded) {
        json_t *pr = json_object(), *sec = json_object();
        json_object_set_new(sec, "resolved", strarr(&s->sec_ok));
        json_object_set_new(sec, "missing", strarr(&s->sec_missing));
        json_object_set_new(pr, "secrets", sec);
        json_object_set_new(pr, "logins_needed", strarr(&s->logins_needed));
        json_object_set_new(o, "project", pr);
    } else {
        json_object_set_new(o, "project", json_null());
    }
    json_object_set_new(o, "library_shadowed", strarr(&s->shadowed));
    json_t *na = json_object();
    json_object_set_new(na, "command", json_string(s->next_cmd));
    char *sentence = xasprintf("Next: %s · %s", s->next_cmd, s->next_why);
    json_object_set_new(na, "sentence", json_string(sentence));
    free(sentence);
    json_object_set_new(na, "why", json_string(s->next_why));
    json_object_set_new(o, "next_action", na);
    char *t = json_dumps(o, JSON_INDENT(2));
    printf("%s\n", t);
    free(t);
    json_decref(o);
}

struct status_args {
    bool json, verbose, brief;
};

#define CLI_ARGS struct status_args
static const struct cli_option status_options[] = {
    {OPT_BOOL("json", 0, json, "one JSON document (schema_version 1) for scripts")},
    {OPT_BOOL("verbose", 'v', verbose, "every row in full (secrets by name, each CLI)")},
    {OPT_BOOL("short", 0, brief, "the few lines bare `agentstack` prints")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_status_spec = {
    .name = "status",
    .fn = cmd_status,
    .summary = "readiness at a glance, and the one next action",
    .synopsis = CLI_LINES("status [--json] [--verbose] [--short]"),
    .description = "Read-only: CLIs found, the manifest in play, toolsets, lock and trust state, "
                   "delivery, the gateway, secrets by presence (never a value). --short is what "
                   "bare `agentstack` prints.",
    .options = status_options,
    .examples = CLI_LINES("agentstack status", "agentstack status --json"),
    .see_also = "doctor trust lock",
};

int cmd_status(int argc, char **argv, struct cli_ctx *ctx)
{
    struct status_args a = {0};
    int rc = cli_parse(&cmd_status_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_status_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct st s = {0};
    gather(ctx, &s);
    if (a.json)
        print_json(&s);
    else if (a.brief)
        print_short(&s);
    else
        print_human(&s, a.verbose);
    fflush(stdout);
    st_free(&s);
    return EXIT_OK;
}
