/*
 * agentstack settings set|unset <cli> <key> [<value>] [--write] — edit a
 * CLI's native settings in the manifest's [settings.<cli>] table instead of
 * by hand (Claude Code's `model`, `permissions.defaultMode`, …); apply then
 * writes them into that CLI's own settings file. A dotted key descends into
 * nested tables. For keys the adapter's catalog knows, the value is checked
 * and typed (bool, number, one of an enum's options); any other key is kept
 * as a string. Previews unless --write, through the one manifest edit path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/adapters.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/mfedit.h"

int cmd_settings(int argc, char **argv, struct cli_ctx *ctx);

struct settings_args {
    bool write;
    const char *target, *key, *value;
};

#define CLI_ARGS struct settings_args
static const struct cli_option settings_options[] = {
    {OPT_BOOL("write", 0, write, "write the manifest (default: preview)")},
    {OPT_END},
};
#undef CLI_ARGS

static int s_set(int argc, char **argv, struct cli_ctx *ctx);
static int s_unset(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec set_spec = {
    .name = "settings set",
    .fn = s_set,
    .summary = "set a key of [settings.<cli>] (dotted keys descend into tables)",
    .synopsis = CLI_LINES("settings set <cli> <key> <value> [--write]"),
    .options = settings_options,
    .examples = CLI_LINES("agentstack settings set claude-code permissions.defaultMode auto "
                          "--write",
                          "agentstack settings set codex model gpt-5"),
};
static const struct cli_spec unset_spec = {
    .name = "settings unset",
    .fn = s_unset,
    .summary = "remove a key of [settings.<cli>]",
    .synopsis = CLI_LINES("settings unset <cli> <key> [--write]"),
    .options = settings_options,
    .examples = CLI_LINES("agentstack settings unset claude-code model --write"),
};

const struct cli_spec cmd_settings_spec = {
    .name = "settings",
    .fn = cmd_settings,
    .summary = "edit a CLI's native settings in the manifest ([settings.<cli>])",
    .description = "Only the manifest changes (preview unless --write); agentstack apply "
                   "--write then writes the settings into each CLI's own file.",
    .subs = (const struct cli_spec *const[]){&set_spec, &unset_spec, NULL},
    .see_also = "apply adapters",
};

/* The key split at dots into the path after {"settings", cli}. */
static int key_path(const char *cli, const char *key, strvec *path, struct as_err *err)
{
    strvec_push(path, "settings");
    strvec_push(path, cli);
    for (const char *p = key;;) {
        size_t n = strcspn(p, ".");
        if (n == 0)
            return as_err_set(err, "'%s' is not a settings key (an empty part between dots)", key);
        strvec_pushf(path, "%.*s", (int)n, p);
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* The value typed as the adapter's catalog says, else a string. */
static toml_value *typed(const struct adp_desc *d, const char *key, const char *v,
                         struct as_err *err)
{
    const struct adp_setting_field *f = NULL;
    for (size_t i = 0; i < d->settings_fields.n; i++)
        if (strcmp(d->settings_fields.v[i].key, key) == 0)
            f = &d->settings_fields.v[i];
    if (!f || !f->type || !strcmp(f->type, "string") || !strcmp(f->type, "object"))
        return toml_new_string(v);
    if (!strcmp(f->type, "bool")) {
        if (!strcmp(v, "true") || !strcmp(v, "false"))
            return toml_new_bool(v[0] == 't');
        as_err_set(err, "%s %s is true or false, not '%s'", d->id, key, v);
        return NULL;
    }
    if (!strcmp(f->type, "number")) {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (*v && !*end && !errno)
            return toml_new_int(n);
        double x = strtod(v, &end);
        if (*v && !*end && !errno)
            return toml_new_float(x);
        as_err_set(err, "%s %s is a number, not '%s'", d->id, key, v);
        return NULL;
    }
    if (!strcmp(f->type, "enum")) {
        if (strvec_find(&f->options, v) >= 0)
            return toml_new_string(v);
        strbuf o = SB_INIT;
        for (size_t i = 0; i < f->options.n; i++)
            sb_addf(&o, "%s%s", i ? ", " : "", f->options.v[i]);
        as_err_set(err, "%s %s is one of %s, not '%s'", d->id, key, o.buf, v);
        sb_release(&o);
        return NULL;
    }
    return toml_new_string(v);
}

static int edit(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                struct as_err *err)
{
    (void)m;
    const struct settings_args *a = arg;
    struct adp_registry reg = {0};
    if (adp_registry_load(&reg, true, err) < 0)
        return -1;
    int rc = -1;
    strvec path = STRVEC_INIT;
    toml_value *v = NULL;
    const struct adp_desc *d = adp_registry_find(&reg, a->target);
    if (!d) {
        adp_unknown_id_err(&reg, a->target, err);
        goto out;
    }
    if (key_path(d->id, a->key, &path, err) < 0)
        goto out;
    if (a->value) {
        sb_addf(summary, "set [settings.%s] %s = %s", d->id, a->key, a->value);
        if (!(v = typed(d, a->key, a->value, err)))
            goto out;
        rc = toml_edit_set(ed, (const char *const *)path.v, path.n, v, err);
    } else {
        sb_addf(summary, "unset [settings.%s] %s", d->id, a->key);
        rc = toml_edit_remove(ed, (const char *const *)path.v, path.n, err);
    }
out:
    toml_free(v);
    strvec_clear(&path);
    adp_registry_free(&reg);
    return rc;
}

static int run(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx, bool set)
{
    struct settings_args a = {0};
    int rc = cli_parse(spec, &argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    int want = set ? 4 : 3;
    if (argc != want)
        return cli_usage_error(spec->name, "usage: agentstack %s", spec->synopsis[0]);
    a.target = argv[1];
    a.key = argv[2];
    a.value = set ? argv[3] : NULL;
    return cli_manifest_edit(ctx, a.write, edit, &a, NULL);
}

static int s_set(int argc, char **argv, struct cli_ctx *ctx)
{
    return run(&set_spec, argc, argv, ctx, true);
}

static int s_unset(int argc, char **argv, struct cli_ctx *ctx)
{
    return run(&unset_spec, argc, argv, ctx, false);
}

int cmd_settings(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_settings_spec, argc, argv, ctx);
}
