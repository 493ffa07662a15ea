/*
 * agentstack session start <toolset> | end [--all] | list [--json] |
 * freeze [--name NAME] (clean at rest; docs/adapters.md): start activates a
 * toolset like `use --write` and records how to undo it; end puts every
 * file, link and ledger entry back as it was; freeze writes the open
 * session's toolset into the manifest under a new name (nothing applied).
 * A project must be Trusted to start.
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
#include "cli/mfedit.h"
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

struct session_args {
    strvec targets;
    int scope;
    bool allow_unresolved, all, json;
    const char *name;
};

static int session_start(int argc, char **argv, struct cli_ctx *ctx);
static int session_end(int argc, char **argv, struct cli_ctx *ctx);
static int session_list(int argc, char **argv, struct cli_ctx *ctx);
static int session_freeze(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct session_args
static const struct cli_option start_options[] = {
    {OPT_LIST("target", 0, targets, "ID", "this CLI only")},
    {OPT_ENUM("scope", 0, scope, cli_scope_choices,
              "write the CLIs' global or project files (default: project inside one)")},
    {OPT_BOOL("allow-unresolved", 0, allow_unresolved,
              "start even when a ${REF} has no value here (that server is left out)")},
    {OPT_END},
};
static const struct cli_option end_options[] = {
    {OPT_BOOL("all", 0, all, "end every open session on this machine, not only this project's")},
    {OPT_END},
};
static const struct cli_option list_options[] = {
    {OPT_BOOL("json", 0, json, "the sessions as one JSON document")},
    {OPT_END},
};
static const struct cli_option freeze_options[] = {
    {OPT_STRING("name", 0, name, "NAME", "the new toolset's name (default: <toolset>-frozen)")},
    {OPT_END},
};
#undef CLI_ARGS

static const struct cli_spec session_start_spec = {
    .name = "session start",
    .fn = session_start,
    .summary = "activate a toolset and record how to put everything back",
    .synopsis = CLI_LINES("session start [TOOLSET] [--target ID]... [--scope global|project]"),
    .description = "Validates and gates as `use --write` does: a project must be trusted.",
    .options = start_options,
};
static const struct cli_spec session_end_spec = {
    .name = "session end",
    .fn = session_end,
    .summary = "put every file, link and ledger entry back as before the start",
    .synopsis = CLI_LINES("session end [--all]"),
    .options = end_options,
};
static const struct cli_spec session_list_spec = {
    .name = "session list",
    .fn = session_list,
    .summary = "the open sessions",
    .synopsis = CLI_LINES("session list [--json]"),
    .options = list_options,
};

static const struct cli_spec session_freeze_spec = {
    .name = "session freeze",
    .fn = session_freeze,
    .summary = "save the open session's toolset in the manifest under a new name",
    .synopsis = CLI_LINES("session freeze [--name NAME]"),
    .description = "Writes [toolsets.<name>] (default <toolset>-frozen) with the servers and "
                   "skills of the toolset this project's open session activated. Only the "
                   "manifest changes; nothing is applied. Refused when the name exists or the "
                   "toolset names nothing. Review it, then: agentstack lock --write.",
    .options = freeze_options,
};

const struct cli_spec cmd_session_spec = {
    .name = "session",
    .fn = cmd_session,
    .summary = "activate a toolset until `session end` puts everything back",
    .subs = (const struct cli_spec *const[]){&session_start_spec, &session_end_spec,
                                             &session_list_spec, &session_freeze_spec, NULL},
    .examples = CLI_LINES("agentstack session start backend", "agentstack session end"),
    .see_also = "use apply",
};

static int session_start(int argc, char **argv, struct cli_ctx *ctx)
{
    struct session_args a = {0};
    int prc = cli_parse(&session_start_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc > 2) {
        strvec_clear(&a.targets);
        return cli_usage_error("session start", "unexpected argument '%s'", argv[2]);
    }
    const char *toolset = argc > 1 ? argv[1] : NULL, *scope = cli_scope_name(a.scope);
    int rc = cli_session_start(ctx, toolset, scope, &a.targets, a.allow_unresolved);
    strvec_clear(&a.targets);
    return rc;
}

int cli_session_start(struct cli_ctx *ctx, const char *toolset, const char *scope,
                      const strvec *targets_in, bool allow_unresolved)
{
    strvec targets = STRVEC_INIT;
    for (size_t i = 0; targets_in && i < targets_in->n; i++)
        strvec_push(&targets, targets_in->v[i]);
    struct as_err err = AS_ERR_INIT;
    struct cli_render r;
    cli_render_init(&r);
    char *op = NULL;
    strbuf key = SB_INIT;
    int rc = EXIT_FAIL;
    if (session_dir(ctx, &r.p, &key, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (cli_render_load(&r, &err) < 0)
        goto out;
    const struct mf_toolset *ts =
        toolset ? manifest_toolset(r.m, toolset) : manifest_effective_toolset(r.m);
    if (!ts) {
        cli_errorf(toolset ? "no toolset '%s' in %s" : "which toolset?%s %s names no default",
                   toolset ? toolset : "", r.m->path);
        fprintf(stderr, "  agentstack use --list\n");
        goto out;
    }
    /* Validation as `use --write` does it: errors refuse the start (a session
     * writes). */
    if (cli_render_prepare(&r, scope, "start a session", &err) < 0)
        goto out;
    op = xasprintf("session start '%s'", ts->name);
    struct adp_apply_opts o = {
        .targets = &targets,
        .toolset = ts->name,
        .allow_unresolved = allow_unresolved,
        .operation = op,
    };
    cli_render_opts(&r, &o);
    rc = adp_session_start(&r.reg, &o, key.buf, &err);
    fflush(stdout);
    if (rc)
        cli_error(&err);
out:
    free(op);
    cli_render_release(&r);
    sb_release(&key);
    strvec_clear(&targets);
    return rc;
}

static int session_end(int argc, char **argv, struct cli_ctx *ctx)
{
    struct session_args a = {0};
    int rc = cli_parse(&session_end_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&session_end_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    return cli_session_end(ctx, a.all);
}

int cli_session_end(struct cli_ctx *ctx, bool all)
{
    struct session_args a = {0};
    a.all = all;
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    strbuf key = SB_INIT;
    int rc;
    if (!a.all && session_dir(ctx, &p, &key, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(&p);
        sb_release(&key);
        return EXIT_FAIL;
    }
    rc = adp_session_end(a.all ? NULL : key.buf, a.all, stdout, &err);
    bundle_paths_free(&p);
    sb_release(&key);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    return rc;
}

static int session_list(int argc, char **argv, struct cli_ctx *ctx)
{
    struct session_args a = {0};
    int rc = cli_parse(&session_list_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&session_list_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    rc = adp_session_list(a.json, stdout, &err);
    fflush(stdout);
    if (rc && as_err_isset(&err))
        cli_error(&err);
    return rc;
}

/* The toolset this project's open session activated: 1 (into out), 0 when
 * none is open here, -1 + err. */
static int open_session_toolset(const char *key, strbuf *out, struct as_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return as_err_errno(err, "cannot read the open sessions");
    int r = adp_session_list(true, f, err);
    fclose(f);
    int hit = 0;
    if (r == 0) {
        json_error_t je;
        json_t *a = json_loads(buf ? buf : "[]", 0, &je);
        size_t i;
        json_t *s;
        json_array_foreach(a, i, s)
        {
            const char *dir = json_string_value(json_object_get(s, "manifest_dir"));
            const char *ts = json_string_value(json_object_get(s, "toolset"));
            if (!hit && dir && ts && strcmp(dir, key) == 0) {
                sb_adds(out, ts);
                hit = 1;
            }
        }
        json_decref(a);
    }
    free(buf);
    return r != 0 ? -1 : hit;
}

struct freeze_edit {
    const char *from, *name;
};

static toml_value *str_array(const strvec *v)
{
    toml_value *arr = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < v->n; i++)
        toml_array_push(arr, toml_new_string(v->v[i]));
    return arr;
}

static int edit_freeze(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                       struct as_err *err)
{
    const struct freeze_edit *f = arg;
    const struct mf_toolset *t = manifest_toolset(m, f->from);
    sb_addf(summary, "freeze the session's toolset '%s' as [%s.%s]", f->from, cli_toolsets_key(m),
            f->name);
    if (!t)
        return as_err_set(err, "the session's toolset '%s' is no longer in %s", f->from, m->path);
    if (manifest_toolset(m, f->name))
        return as_err_set(err, "toolset '%s' already exists in %s — pick another name with --name",
                          f->name, m->path);
    if (!t->servers.n && !t->skills.n)
        return as_err_set(err, "nothing to freeze: toolset '%s' has no servers and no skills",
                          f->from);
    sb_addf(summary, " (servers: %zu, skills: %zu)", t->servers.n, t->skills.n);
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "servers", str_array(&t->servers));
    toml_table_set(tab, "skills", str_array(&t->skills));
    const char *path[2] = {cli_toolsets_key(m), f->name};
    int rc = toml_edit_set_table(ed, path, 2, tab, err);
    toml_free(tab);
    return rc;
}

static int session_freeze(int argc, char **argv, struct cli_ctx *ctx)
{
    struct session_args a = {0};
    int rc = cli_parse(&session_freeze_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&session_freeze_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.name && !manifest_toolset_name_ok(a.name))
        return cli_usage_error("session freeze",
                               "'%s' is not a usable toolset name ([A-Za-z0-9_.-], 1-64 chars)",
                               a.name);
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    strbuf key = SB_INIT, ts = SB_INIT;
    char *name = NULL;
    rc = EXIT_FAIL;
    if (cli_project(ctx, &p) < 0)
        goto out;
    if (discover_project_key(p.base, &key) < 0) {
        cli_errorf("cannot name this project's session record");
        goto out;
    }
    int open = open_session_toolset(key.buf, &ts, &err);
    if (open < 0) {
        cli_error(&err);
        goto out;
    }
    if (!open) {
        cli_errorf("no session is active for this project — start one with: agentstack session "
                   "start <toolset>");
        goto out;
    }
    name = a.name ? xstrdup(a.name) : xasprintf("%s-frozen", ts.buf);
    if (!manifest_toolset_name_ok(name)) {
        cli_errorf("'%s' is not a usable toolset name — pass --name NAME", name);
        goto out;
    }
    struct freeze_edit f = {ts.buf, name};
    rc = cli_manifest_edit(ctx, true, edit_freeze, &f, NULL);
    if (rc == EXIT_OK)
        printf("The manifest changed; nothing was applied. Review toolset '%s', then run "
               "agentstack lock "
               "--write.\n",
               name);
out:
    free(name);
    sb_release(&key);
    sb_release(&ts);
    bundle_paths_free(&p);
    return rc;
}

int cmd_session(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_session_spec, argc, argv, ctx);
}
