/*
 * agentstack secret set|get|list|rm (docs/secrets.md).
 *
 * set reads the value from the terminal without echo, or from stdin with
 * --stdin; the hidden --value works but warns that argv is visible to every
 * process on the machine. The default store is the OS keychain; with none
 * reachable, set says so and names the two explicit alternatives
 * (--env-file, --store file) — it never falls back silently. get masks the
 * value unless --reveal; list prints names and where each resolves, never a
 * value (and never reads one from the keychain).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "cli/cli.h"
#include "library/library.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"

int cmd_secret(int argc, char **argv, struct cli_ctx *ctx);

enum store_opt { STORE_DEFAULT, STORE_KEYCHAIN, STORE_FILE, STORE_ENVFILE };

struct secret_args {
    const char *sub;
    const char *name;
    bool from_stdin, reveal, json;
    const char *value;
    int store; /* enum store_opt */
};

static const struct cli_choice store_choices[] = {
    {"keychain", STORE_KEYCHAIN}, {"file", STORE_FILE}, {NULL, 0}};

#define CLI_ARGS struct secret_args
static const struct cli_option store_options[] = {
    {OPT_ENUM("store", 0, store, store_choices,
              "the OS keychain (the default) or the machine's secrets.env")},
    {OPT_SET("env-file", 0, store, STORE_ENVFILE, "the project's .agentstack/.env")},
    {OPT_END},
};
static const struct cli_option set_options[] = {
    {OPT_BOOL("stdin", 0, from_stdin, "read the value from stdin (default: a prompt, no echo)")},
    /* works, but argv is visible to every process on the machine: it warns */
    {OPT_STRING("value", 0, value, "V", "the value itself (visible in argv; warns)"),
     .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
static const struct cli_option get_options[] = {
    {OPT_BOOL("reveal", 0, reveal, "print the value itself (default: masked)")},
    {OPT_END},
};
static const struct cli_option list_options[] = {
    {OPT_BOOL("json", 0, json, "the names and where each resolves, as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

static int secret_leaf(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec secret_set_spec = {
    .name = "secret set",
    .fn = secret_leaf,
    .summary = "store a secret's value on this machine",
    .synopsis = CLI_LINES("secret set NAME [--stdin] [--store keychain|file | --env-file]"),
    .description = "Prompts without echo on a terminal. With no keychain reachable it says so "
                   "and names --env-file and --store file; it never falls back silently.",
    .common = store_options,
    .options = set_options,
    .examples = CLI_LINES("agentstack secret set GITHUB_TOKEN",
                          "printf %s \"$TOKEN\" | agentstack secret set GITHUB_TOKEN --stdin"),
};
static const struct cli_spec secret_get_spec = {
    .name = "secret get",
    .fn = secret_leaf,
    .summary = "show a secret, masked unless --reveal",
    .synopsis = CLI_LINES("secret get NAME [--reveal]"),
    .options = get_options,
};
static const struct cli_spec secret_list_spec = {
    .name = "secret list",
    .fn = secret_leaf,
    .summary = "the secret names and where each resolves (never a value)",
    .synopsis = CLI_LINES("secret list [--json]"),
    .options = list_options,
};
static const struct cli_spec secret_rm_spec = {
    .name = "secret rm",
    .fn = secret_leaf,
    .summary = "remove a secret from a store",
    .synopsis = CLI_LINES("secret rm NAME [--store keychain|file | --env-file]"),
    .options = store_options,
};

const struct cli_spec cmd_secret_spec = {
    .name = "secret",
    .fn = cmd_secret,
    .summary = "store, read (masked), list and remove secrets on this machine",
    .subs = (const struct cli_spec *const[]){&secret_set_spec, &secret_get_spec, &secret_list_spec,
                                             &secret_rm_spec, NULL},
    .description = "The OS keychain is the default store.",
    .see_also = "init doctor",
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct secret_args *a)
{
    const struct cli_spec *spec = cli_find_sub(&cmd_secret_spec, argv[0]);
    a->sub = argv[0];
    int rc = cli_parse(spec, &argc, argv, ctx, a);
    if (rc != CLI_CONTINUE)
        return rc;
    bool named = spec != &secret_list_spec;
    if (argc > 2)
        return cli_usage_error(spec->name, "unexpected argument '%s'", argv[2]);
    if (!named && argc > 1)
        return cli_usage_error(spec->name, "secret list takes no NAME");
    a->name = argc > 1 ? argv[1] : NULL;
    if (named && !a->name)
        return cli_usage_error(spec->name, "secret %s needs a NAME", a->sub);
    if (named && !ref_name_valid(a->name))
        return cli_usage_error(spec->name,
                               "'%s' is not a valid secret name ([A-Za-z_][A-Za-z0-9_]*)", a->name);
    if (a->from_stdin && a->value)
        return cli_usage_error(spec->name, "--stdin and --value exclude each other");
    return CLI_CONTINUE;
}

/* The project .env for --env-file (a project must exist). */
static int project_env(struct cli_ctx *ctx, struct bundle_paths *p, struct as_err *err)
{
    if (discover_project(ctx->manifest_dir, NULL, p, err) < 0)
        return -1;
    if (!p->found) {
        as_err_set(err, "--env-file stores in the project's .agentstack/.env, but there is no "
                        "agentstack manifest at or above this directory");
        as_err_hint(err, "run it inside a project (agentstack init creates one), or use "
                         "--store file");
        return -1;
    }
    return 0;
}

static int read_value(const struct secret_args *a, strbuf *v, struct as_err *err)
{
    if (a->value) {
        term_fprintf(stderr, "warning: --value puts the secret in argv, where any process on this "
                             "machine can read it; prefer the prompt or --stdin\n");
        sb_adds(v, a->value);
        return 0;
    }
    if (a->from_stdin) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
            if (v->len + n > SEC_DOTENV_MAX_BYTES) {
                explicit_bzero(buf, sizeof buf);
                return as_err_set(err, "the value on stdin exceeds %zu bytes",
                                  SEC_DOTENV_MAX_BYTES);
            }
            sb_add(v, buf, n);
        }
        explicit_bzero(buf, sizeof buf);
        /* `echo value |` adds one line end that is not part of the value */
        if (v->len && v->buf[v->len - 1] == '\n')
            v->len--;
        if (v->len && v->buf[v->len - 1] == '\r')
            v->len--;
        v->buf[v->len] = '\0';
        return 0;
    }
    if (!isatty(0)) {
        as_err_set(err, "secret set %s needs a terminal to prompt for the value without echo",
                   a->name);
        as_err_hint(err,
                    "pipe it instead: printf %%s \"$VALUE\" | agentstack secret set %s "
                    "--stdin   (or: agentstack secret set %s --value V, visible in argv)",
                    a->name, a->name);
        return -1;
    }
    char prompt[256];
    snprintf(prompt, sizeof prompt, "Value for %s: ", a->name);
    if (term_read_secret(prompt, v) < 0) {
        as_err_set(err, "secret set %s needs a terminal to prompt for the value", a->name);
        as_err_hint(err, "use --stdin (or secret set %s --value V)", a->name);
        return -1;
    }
    return 0;
}

static void no_keychain_hint(struct as_err *err, const char *name)
{
    as_err_hint(err,
                "store it explicitly elsewhere: agentstack secret set %s --env-file   "
                "(the project's .agentstack/.env, gitignored)   or   agentstack secret set %s "
                "--store file   ($AGENTSTACK_HOME/secrets.env, 0600; doctor flags it)",
                name, name);
}

static int do_set(const struct secret_args *a, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    strbuf v = SB_INIT;
    struct bundle_paths p = {0};
    strbuf path = SB_INIT, home = SB_INIT, disp = SB_INIT;
    int rc = EXIT_FAIL;
    enum store_opt st = a->store == STORE_DEFAULT ? STORE_KEYCHAIN : a->store;
    /* Refuse before prompting when the store cannot be used. */
    if (st == STORE_KEYCHAIN && sec_keychain_probe(&err) < 0) {
        char why[2048];
        snprintf(why, sizeof why, "%s", err.msg);
        as_err_set(&err, "cannot store '%s' in the OS keychain: %s", a->name, why);
        no_keychain_hint(&err, a->name);
        goto fail;
    }
    /* The project .env only where git ignores it (or will, with the rule
     * appended and confirmed first): checked before prompting. */
    struct onb_dotenv_plan dp = {0};
    if (st == STORE_ENVFILE &&
        (project_env(ctx, &p, &err) < 0 || discover_check_layout(&p, &err) < 0 ||
         onb_dotenv_check(&p, &dp, &err) < 0))
        goto fail;
    if (read_value(a, &v, &err) < 0)
        goto fail;
    enum sec_store_kind kind = st == STORE_KEYCHAIN ? SEC_STORE_KEYCHAIN
                               : st == STORE_FILE   ? SEC_STORE_FILE
                                                    : SEC_STORE_DOTENV;
    if (sec_value_check(kind, v.buf, v.len, &err) < 0) {
        as_err_prefix(&err, "refusing to store '%s'", a->name);
        goto fail;
    }
    switch (st) {
    case STORE_KEYCHAIN:
    case STORE_DEFAULT:
        if (sec_keychain_store(a->name, v.buf, v.len, &err) < 0) {
            char why[2048];
            snprintf(why, sizeof why, "%s", err.msg);
            as_err_set(&err, "could not store '%s' in the OS keychain: %s", a->name, why);
            no_keychain_hint(&err, a->name);
            goto fail;
        }
        printf("✓ stored '%s' in the OS keychain\n", a->name);
        break;
    case STORE_FILE:
        if (sec_file_store_path(&path, &err) < 0 || home_ensure(HOME_ROOT_DIR, &home, &err) < 0 ||
            sec_dotenv_set(path.buf, a->name, v.buf, v.len, SEC_STORE_FILE, home.buf, &err) < 0)
            goto fail;
        onb_display_path(path.buf, &disp);
        printf("✓ stored '%s' in the file store %s (0600)\n", a->name, disp.buf);
        printf("  · a plain file: doctor lists it; the OS keychain is the safer home\n");
        break;
    case STORE_ENVFILE: {
        if (onb_dotenv_ignore(&p, &dp, &err) < 0 ||
            sec_dotenv_set(p.env_file, a->name, v.buf, v.len, SEC_STORE_DOTENV, NULL, &err) < 0)
            goto fail;
        bool added = false;
        struct as_err gerr = AS_ERR_INIT;
        if (!dp.in_work_tree && sec_gitignore_env(p.project_root, dp.rule, &added, &gerr) < 0)
            term_fprintf(stderr, "warning: %s\n", gerr.msg);
        char *dir = xstrdup(p.env_file);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        onb_display_path(dir, &disp);
        printf("✓ stored '%s' in %s/.env (%s)\n", a->name, disp.buf,
               dp.in_work_tree ? "gitignored" : "0600; not in a git work tree");
        free(dir);
        break;
    }
    }
    rc = EXIT_OK;
    goto out;
fail:
    cli_error(&err);
out:
    sb_release_secure(&v);
    bundle_paths_free(&p);
    sb_release(&path);
    sb_release(&home);
    sb_release(&disp);
    return rc;
}

static int do_get(const struct secret_args *a, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    struct as_err derr = AS_ERR_INIT;
    bool project = discover_project(ctx->manifest_dir, NULL, &p, &derr) == 0 && p.found;
    /* env → keychain → file store → .env; never varlock */
    struct sec_chain_opts o = {.project_dotenv = project ? p.env_file : NULL};
    struct sec_chain *c = sec_chain_full(&o);
    strbuf v = SB_INIT;
    struct sec_result r;
    enum sec_status s = sec_resolve(c, a->name, &v, &r);
    int rc = EXIT_OK;
    if (s == SEC_FOUND) {
        if (a->reveal) {
            fwrite(v.buf, 1, v.len, stdout);
            fputc('\n', stdout);
        } else {
            printf("%s = ******** (%s, %zu chars; --reveal prints it)\n", a->name, r.source, v.len);
        }
    } else if (s == SEC_MISSING) {
        as_err_set(&err, "secret '%s' is not set on this machine", a->name);
        as_err_hint(&err, "agentstack secret set %s", a->name);
        cli_error(&err);
        rc = EXIT_FAIL;
    } else {
        as_err_set(&err, "secret '%s' could not be read — %s", a->name, r.why);
        as_err_hint(&err, "agentstack secret set %s", a->name);
        cli_error(&err);
        rc = EXIT_FAIL;
    }
    sb_release_secure(&v);
    sec_chain_free(c);
    bundle_paths_free(&p);
    return rc;
}

static int do_rm(const struct secret_args *a, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    strbuf path = SB_INIT, home = SB_INIT;
    bool existed = false;
    int rc = EXIT_FAIL;
    const char *where = "the OS keychain";
    switch (a->store) {
    case STORE_DEFAULT:
    case STORE_KEYCHAIN:
        if (sec_keychain_delete(a->name, &existed, &err) < 0) {
            no_keychain_hint(&err, a->name);
            as_err_hint(&err,
                        "for the other stores: agentstack secret rm %s --store file | "
                        "--env-file",
                        a->name);
            goto fail;
        }
        break;
    case STORE_FILE:
        where = "the file store";
        if (sec_file_store_path(&path, &err) < 0 || home_ensure(HOME_ROOT_DIR, &home, &err) < 0 ||
            sec_dotenv_remove(path.buf, a->name, &existed, home.buf, &err) < 0)
            goto fail;
        break;
    case STORE_ENVFILE:
        where = "the project .env";
        if (project_env(ctx, &p, &err) < 0 ||
            sec_dotenv_remove(p.env_file, a->name, &existed, NULL, &err) < 0)
            goto fail;
        break;
    }
    if (existed)
        printf("✓ removed '%s' from %s\n", a->name, where);
    else
        printf("· '%s' was not in %s — nothing to remove\n", a->name, where);
    rc = EXIT_OK;
    goto out;
fail:
    cli_error(&err);
out:
    bundle_paths_free(&p);
    sb_release(&path);
    sb_release(&home);
    return rc;
}

static int do_list(const struct secret_args *a, struct cli_ctx *ctx)
{
    struct bundle_paths p = {0};
    struct as_err err = AS_ERR_INIT;
    bool project = discover_project(ctx->manifest_dir, NULL, &p, &err) == 0 && p.found;
    strvec names = STRVEC_INIT, wanted = STRVEC_INIT;
    if (project) {
        struct manifest *m = manifest_load(&p, &err);
        if (m) {
            struct as_err le = AS_ERR_INIT;
            struct library *lib = lib_open(NULL, &le);
            cli_needed_refs(m, lib, &wanted);
            lib_free(lib);
            manifest_free(m);
        } else {
            char buf[4096];
            term_fprintf(stderr,
                         "warning: the manifest did not load (%s); listing stored names only\n",
                         as_err_str(&err, buf, sizeof buf));
        }
    }
    struct onb_locator l;
    onb_locator_init(&l, project ? p.env_file : NULL, true);
    for (size_t i = 0; i < wanted.n; i++)
        strvec_push(&names, wanted.v[i]);
    const strvec *stored[] = {&l.kc_names, &l.file_names, &l.dotenv_names};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < stored[k]->n; i++)
            if (strvec_find(&names, stored[k]->v[i]) < 0)
                strvec_push(&names, stored[k]->v[i]);
    strvec_sort(&names);
    json_t *arr = a->json ? json_array() : NULL;
    if (!a->json && !l.kc_ok)
        printf("· keychain: %s\n", l.kc_why);
    if (!a->json && !names.n)
        printf("· no secrets referenced by a manifest here or stored by agentstack\n");
    for (size_t i = 0; i < names.n; i++) {
        strvec also = STRVEC_INIT;
        const char *src = onb_locate(&l, names.v[i], &also);
        bool referenced = strvec_find(&wanted, names.v[i]) >= 0;
        if (a->json) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(names.v[i]));
            json_object_set_new(o, "resolved", json_boolean(src != NULL));
            json_object_set_new(o, "source", src ? json_string(src) : json_null());
            json_t *al = json_array();
            for (size_t k = 0; k < also.n; k++)
                json_array_append_new(al, json_string(also.v[k]));
            json_object_set_new(o, "also", al);
            json_object_set_new(o, "referenced", json_boolean(referenced));
            json_array_append_new(arr, o);
        } else if (src) {
            printf("✓ %s resolved (%s", names.v[i], src);
            for (size_t k = 0; k < also.n; k++)
                printf("%s%s", k ? ", " : "; also in ", also.v[k]);
            printf(")%s\n", referenced || !project ? "" : " · not referenced by the manifest");
        } else {
            printf("✗ %s not found ↳ agentstack secret set %s\n", names.v[i], names.v[i]);
        }
        strvec_clear(&also);
    }
    if (a->json) {
        json_t *root = json_object();
        json_object_set_new(root, "secrets", arr);
        json_object_set_new(root, "keychain", l.kc_ok ? json_string("ok") : json_string(l.kc_why));
        char *s = json_dumps(root, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(root);
    }
    onb_locator_free(&l);
    strvec_clear(&names);
    strvec_clear(&wanted);
    bundle_paths_free(&p);
    return EXIT_OK;
}

static int secret_leaf(int argc, char **argv, struct cli_ctx *ctx)
{
    struct secret_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (strcmp(a.sub, "set") == 0)
        return do_set(&a, ctx);
    if (strcmp(a.sub, "get") == 0)
        return do_get(&a, ctx);
    if (strcmp(a.sub, "rm") == 0)
        return do_rm(&a, ctx);
    return do_list(&a, ctx);
}

int cmd_secret(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_secret_spec, argc, argv, ctx);
}
