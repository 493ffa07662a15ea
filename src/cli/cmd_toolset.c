/*
 * agentstack toolset create|default|rename|delete|list — the toolsets of
 * this project's manifest, by name. Each edit goes through the one manifest
 * edit path (mfedit.h): previewed unless --write, written atomically under
 * the writer lock, nothing but the manifest touched, nothing rendered. The
 * manifest's bytes change, so a trusted project is reviewed again before
 * anything from it is delivered.
 *
 * rename and delete refuse when an open session activated the toolset (its
 * end must find it), and delete refuses the last toolset: with none declared
 * every server of the manifest is served, so that delete would widen what
 * agents get rather than tidy. `list` is `use --list`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "cli/mfedit.h"

int cmd_toolset(int argc, char **argv, struct cli_ctx *ctx);

struct toolset_args {
    const char *name, *to;
    strvec servers, skills;
    bool write, json;
};

#define CLI_ARGS struct toolset_args
static const struct cli_option create_options[] = {
    {OPT_LIST("server", 0, servers, "NAME", "a server to include (repeatable)")},
    {OPT_LIST("skill", 0, skills, "NAME", "a skill to include (repeatable; * = every [skills])")},
    {OPT_STRING("name", 0, name, "NAME", "the new toolset's name (as the argument)")},
    {OPT_BOOL("write", 0, write, "write the manifest (default: preview)")},
    {OPT_END},
};
static const struct cli_option write_options[] = {
    {OPT_BOOL("write", 0, write, "write the manifest (default: preview)")},
    {OPT_END},
};
static const struct cli_option rename_options[] = {
    {OPT_STRING("to", 0, to, "NAME", "its new name")},
    {OPT_STRING("name", 0, name, "NAME", "the toolset to rename (as the argument)")},
    {OPT_BOOL("write", 0, write, "write the manifest (default: preview)")},
    {OPT_END},
};
static const struct cli_option delete_options[] = {
    {OPT_STRING("name", 0, name, "NAME", "the toolset to delete (as the argument)")},
    {OPT_BOOL("write", 0, write, "write the manifest (default: preview)")},
    {OPT_END},
};
static const struct cli_option list_options[] = {
    {OPT_BOOL("json", 0, json, "the toolsets as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

static int t_create(int argc, char **argv, struct cli_ctx *ctx);
static int t_default(int argc, char **argv, struct cli_ctx *ctx);
static int t_rename(int argc, char **argv, struct cli_ctx *ctx);
static int t_delete(int argc, char **argv, struct cli_ctx *ctx);
static int t_list(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec create_spec = {
    .name = "toolset create",
    .fn = t_create,
    .summary = "name a toolset of servers and skills the manifest has (activates nothing)",
    .synopsis = CLI_LINES("toolset create <name> [--server NAME]... [--skill NAME]... [--write]"),
    .options = create_options,
    .examples = CLI_LINES("agentstack toolset create backend --server github --write"),
};
static const struct cli_spec default_spec = {
    .name = "toolset default",
    .fn = t_default,
    .summary = "choose the toolset trusted gateway connections open by default",
    .synopsis = CLI_LINES("toolset default <name> [--write]"),
    .options = write_options,
    .examples = CLI_LINES("agentstack toolset default backend --write"),
};
static const struct cli_spec rename_spec = {
    .name = "toolset rename",
    .fn = t_rename,
    .summary = "rename a toolset, keeping what is in it",
    .synopsis = CLI_LINES("toolset rename <name> --to NAME [--write]"),
    .options = rename_options,
    .examples = CLI_LINES("agentstack toolset rename backend --to api --write"),
};
static const struct cli_spec delete_spec = {
    .name = "toolset delete",
    .fn = t_delete,
    .summary = "delete a toolset (its servers and skills stay declared)",
    .synopsis = CLI_LINES("toolset delete <name> [--write]"),
    .options = delete_options,
    .examples = CLI_LINES("agentstack toolset delete scratch --write"),
};
static const struct cli_spec list_spec = {
    .name = "toolset list",
    .fn = t_list,
    .summary = "the toolsets declared here and the default (as use --list)",
    .synopsis = CLI_LINES("toolset list [--json]"),
    .options = list_options,
    .alias_of = "use",
};

const struct cli_spec cmd_toolset_spec = {
    .name = "toolset",
    .fn = cmd_toolset,
    .summary = "name, rename, delete and list toolsets; choose the default",
    .description = "A toolset is a named subset of the manifest's servers and skills. These "
                   "commands edit only the manifest (preview unless --write) and render "
                   "nothing: activate one with agentstack use <name> --write.",
    .subs = (const struct cli_spec *const[]){&create_spec, &default_spec, &rename_spec,
                                             &delete_spec, &list_spec, NULL},
    .see_also = "use session",
};

/* The toolset name: the argument or --name, one of them. */
static int take_name(const struct cli_spec *spec, int argc, char **argv, struct toolset_args *a)
{
    if (argc > 2)
        return cli_usage_error(spec->name, "unexpected argument '%s'", argv[2]);
    if (argc == 2 && a->name && strcmp(a->name, argv[1]) != 0)
        return cli_usage_error(spec->name, "give the name once: '%s' or --name %s", argv[1],
                               a->name);
    if (argc == 2)
        a->name = argv[1];
    if (!a->name)
        return cli_usage_error(spec->name, "%s needs a toolset name", spec->name);
    if (!manifest_toolset_name_ok(a->name))
        return cli_usage_error(
            spec->name, "'%s' is not a usable toolset name ([A-Za-z0-9_.-], 1-64 chars)", a->name);
    return CLI_CONTINUE;
}

static toml_value *str_array(const strvec *v)
{
    toml_value *arr = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < v->n; i++)
        toml_array_push(arr, toml_new_string(v->v[i]));
    return arr;
}

/* 1 when an open session activated toolset name of this manifest dir. */
static int in_session(const struct manifest *m, const char *name, struct as_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return as_err_errno(err, "cannot read the open sessions");
    int r = adp_session_list(true, f, err);
    fclose(f);
    int hit = 0;
    strbuf key = SB_INIT; /* sessions are recorded under the project's key */
    discover_project_key(m->project_root, &key);
    if (r == 0) {
        json_error_t je;
        json_t *a = json_loads(buf ? buf : "[]", 0, &je);
        size_t i;
        json_t *s;
        json_array_foreach(a, i, s)
        {
            const char *dir = json_string_value(json_object_get(s, "manifest_dir"));
            const char *ts = json_string_value(json_object_get(s, "toolset"));
            if (dir && ts && strcmp(dir, key.buf) == 0 && strcmp(ts, name) == 0)
                hit = 1;
        }
        json_decref(a);
    }
    free(buf);
    sb_release(&key);
    return r < 0 ? -1 : hit;
}

static int edit_create(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                       struct as_err *err)
{
    const struct toolset_args *a = arg;
    sb_addf(summary, "create toolset '%s' (%zu server%s, %zu skill%s)", a->name, a->servers.n,
            a->servers.n == 1 ? "" : "s", a->skills.n, a->skills.n == 1 ? "" : "s");
    if (manifest_toolset(m, a->name))
        return as_err_set(err, "toolset '%s' already exists in %s", a->name, m->path);
    for (size_t i = 0; i < a->servers.n; i++)
        if (!manifest_server(m, a->servers.v[i]) && !strchr(a->servers.v[i], ':'))
            return as_err_set(err,
                              "no server '%s' in %s (a library server is named "
                              "<source>:<name>; see agentstack lib list)",
                              a->servers.v[i], m->path);
    for (size_t i = 0; i < a->skills.n; i++)
        if (strcmp(a->skills.v[i], "*") && !manifest_skill(m, a->skills.v[i]) &&
            !strchr(a->skills.v[i], ':'))
            return as_err_set(err,
                              "no skill '%s' in %s (a library skill is named "
                              "<source>:<name>; see agentstack lib list)",
                              a->skills.v[i], m->path);
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "servers", str_array(&a->servers));
    toml_table_set(tab, "skills", str_array(&a->skills));
    const char *path[2] = {cli_toolsets_key(m), a->name};
    int rc = toml_edit_set_table(ed, path, 2, tab, err);
    toml_free(tab);
    return rc;
}

static int edit_default(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                        struct as_err *err)
{
    const struct toolset_args *a = arg;
    sb_addf(summary, "make '%s' the default toolset", a->name);
    if (!manifest_toolset(m, a->name))
        return as_err_set(err, "no toolset '%s' in %s (agentstack toolset list)", a->name, m->path);
    const char *path[1] = {"default_toolset"};
    toml_value *v = toml_new_string(a->name);
    int rc = toml_edit_set(ed, path, 1, v, err);
    toml_free(v);
    return rc;
}

static int edit_rename(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                       struct as_err *err)
{
    const struct toolset_args *a = arg;
    sb_addf(summary, "rename toolset '%s' to '%s'", a->name, a->to);
    const struct mf_toolset *t = manifest_toolset(m, a->name);
    if (!t)
        return as_err_set(err, "no toolset '%s' in %s (agentstack toolset list)", a->name, m->path);
    if (manifest_toolset(m, a->to))
        return as_err_set(err, "toolset '%s' already exists in %s", a->to, m->path);
    int s = in_session(m, a->name, err);
    if (s < 0)
        return -1;
    if (s) {
        as_err_set(err, "an open session activated toolset '%s' — end it first", a->name);
        as_err_hint(err, "agentstack session end");
        return -1;
    }
    const char *key = cli_toolsets_key(m);
    const char *from[2] = {key, a->name}, *to[2] = {key, a->to};
    const toml_value *old = toml_get_path(toml_edit_root(ed), key, a->name, NULL);
    if (!old)
        return as_err_set(err,
                          "toolset '%s' is not written in %s itself (an overlay declares "
                          "it): rename it there",
                          a->name, m->path);
    toml_value *copy = toml_clone(old);
    int rc = toml_edit_remove(ed, from, 2, err);
    if (rc == 0)
        rc = toml_edit_set_table(ed, to, 2, copy, err);
    toml_free(copy);
    if (rc == 0 && m->default_toolset && strcmp(m->default_toolset, a->name) == 0) {
        const char *dp[1] = {"default_toolset"};
        toml_value *v = toml_new_string(a->to);
        rc = toml_edit_set(ed, dp, 1, v, err);
        toml_free(v);
    }
    return rc;
}

static int edit_delete(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                       struct as_err *err)
{
    const struct toolset_args *a = arg;
    sb_addf(summary, "delete toolset '%s' (its servers and skills stay declared)", a->name);
    if (!manifest_toolset(m, a->name))
        return as_err_set(err, "no toolset '%s' in %s (agentstack toolset list)", a->name, m->path);
    if (m->toolsets.n == 1) {
        as_err_set(err,
                   "'%s' is the last toolset: with none declared every server of the "
                   "manifest is served, so deleting it would widen what agents get",
                   a->name);
        as_err_hint(err, "create the toolset you want first: agentstack toolset create "
                         "<name> --server …");
        return -1;
    }
    int s = in_session(m, a->name, err);
    if (s < 0)
        return -1;
    if (s) {
        as_err_set(err, "an open session activated toolset '%s' — end it first", a->name);
        as_err_hint(err, "agentstack session end");
        return -1;
    }
    const char *path[2] = {cli_toolsets_key(m), a->name};
    int rc = toml_edit_remove(ed, path, 2, err);
    if (rc == 0 && m->default_toolset && strcmp(m->default_toolset, a->name) == 0) {
        const char *dp[1] = {"default_toolset"};
        rc = toml_edit_remove(ed, dp, 1, err);
    }
    return rc;
}

static int run_edit(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx,
                    cli_mfedit_fn fn)
{
    struct toolset_args a = {0};
    int rc = cli_parse(spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = take_name(spec, argc, argv, &a);
    if (rc == CLI_CONTINUE && spec == &rename_spec && (!a.to || !manifest_toolset_name_ok(a.to)))
        rc = cli_usage_error(spec->name, a.to ? "'%s' is not a usable toolset name" : "%s",
                             a.to ? a.to : "rename needs --to NAME");
    if (rc == CLI_CONTINUE)
        rc = cli_manifest_edit(ctx, a.write, fn, &a, NULL);
    strvec_clear(&a.servers);
    strvec_clear(&a.skills);
    return rc;
}

static int t_create(int argc, char **argv, struct cli_ctx *ctx)
{
    return run_edit(&create_spec, argc, argv, ctx, edit_create);
}

static int t_default(int argc, char **argv, struct cli_ctx *ctx)
{
    return run_edit(&default_spec, argc, argv, ctx, edit_default);
}

static int t_rename(int argc, char **argv, struct cli_ctx *ctx)
{
    return run_edit(&rename_spec, argc, argv, ctx, edit_rename);
}

static int t_delete(int argc, char **argv, struct cli_ctx *ctx)
{
    return run_edit(&delete_spec, argc, argv, ctx, edit_delete);
}

static int t_list(int argc, char **argv, struct cli_ctx *ctx)
{
    struct toolset_args a = {0};
    int rc = cli_parse(&list_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&list_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    return cli_use_list(ctx, a.json);
}

int cmd_toolset(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_toolset_spec, argc, argv, ctx);
}
