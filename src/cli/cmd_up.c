/*
 * agentstack up [--library <git-url>] [--write] [--toolset N] [--targets ID…]
 * — the second machine in one command (06 §2). The preview prints the
 * "New-machine setup plan" and writes nothing. With --write: the library is
 * received (cloned, or put under git and pointed at the URL, then pulled
 * fast-forward only — never pushed), then, in a project, `install --locked`,
 * the secrets this machine still has to set, and `apply --write` when the
 * project is trusted here. Secret values and trust decisions stay per
 * machine and are named as what remains.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/adapters.h"
#include "base/fs.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "cli/cli.h"
#include "library/git.h"
#include "library/library.h"
#include "library/sync.h"
#include "secrets/secrets.h"
#include "trust/trust.h"

int cmd_up(int argc, char **argv, struct cli_ctx *ctx);
int cmd_install(int argc, char **argv, struct cli_ctx *ctx);
int cmd_apply(int argc, char **argv, struct cli_ctx *ctx);

struct up_args {
    const char *library;
    bool write;
    const char *toolset;
    strvec targets;
};

static int parse(int argc, char **argv, struct up_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--write") == 0) {
            a->write = true;
        } else if (strcmp(s, "--library") == 0 || strcmp(s, "--toolset") == 0 ||
                   strcmp(s, "--profile") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("up", "%s needs a value", s);
            if (strcmp(s, "--library") == 0)
                a->library = argv[++i];
            else
                a->toolset = argv[++i];
        } else if (strncmp(s, "--library=", 10) == 0) {
            a->library = s + 10;
        } else if (strcmp(s, "--targets") == 0 || strcmp(s, "--target") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '-')
                return cli_usage_error("up", "%s needs at least one CLI id", s);
            while (i + 1 < argc && argv[i + 1][0] != '-')
                strvec_push(&a->targets, argv[++i]);
        } else {
            return cli_usage_error("up", "unknown argument '%s'", s);
        }
    }
    return 0;
}

static bool is_repo(const char *path)
{
    char *g = xasprintf("%s/.git", path);
    bool r = fs_exists(g);
    free(g);
    return r;
}

static bool dir_has_entries(const char *path)
{
    DIR *d = opendir(path);
    bool any = false;
    if (d) {
        struct dirent *e;
        while (!any && (e = readdir(d)))
            any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        closedir(d);
    }
    return any;
}

static void print_clis(void)
{
    struct adp_registry reg = {0};
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) < 0) {
        printf("  CLIs      (adapter registry unavailable: %s)\n", err.msg);
        return;
    }
    strbuf line = SB_INIT;
    size_t n = 0;
    for (size_t i = 0; i < reg.v.n; i++) {
        if (!adp_detected(reg.v.v[i], NULL))
            continue;
        sb_addf(&line, "%s%s", n ? " · " : "", reg.v.v[i]->display);
        n++;
    }
    if (n)
        printf("  CLIs      %zu detected: %s\n", n, line.buf);
    else
        printf("  CLIs      none detected on this machine\n");
    sb_release(&line);
    adp_registry_free(&reg);
}

/* ${REF}s in every string value of a TOML tree (comments are not values). */
static void toml_refs(const toml_value *v, strvec *out)
{
    if (v->type == TOML_STRING) {
        strvec found = STRVEC_INIT;
        ref_scan(v->u.str.s, v->u.str.len, &found);
        for (size_t k = 0; k < found.n; k++)
            if (strvec_find(out, found.v[k]) < 0)
                strvec_push(out, found.v[k]);
        strvec_clear(&found);
    } else if (v->type == TOML_TABLE) {
        for (size_t i = 0; i < toml_len(v); i++)
            toml_refs(toml_entry(v, i)->val, out);
    } else if (v->type == TOML_ARRAY) {
        for (size_t i = 0; i < toml_len(v); i++)
            toml_refs(toml_at(v, i), out);
    }
}

/* Every ${REF} the project needs: its own servers and hooks, plus the
 * library servers its toolsets name (one resolved set, 06 §9). */
static void project_refs(const struct manifest *m, struct library *lib, strvec *out)
{
    ref_manifest_refs(m, out);
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        for (size_t j = 0; j < t->servers.n; j++) {
            if (manifest_server(m, t->servers.v[j]))
                continue;
            const struct lib_item *it = NULL;
            struct as_err err = AS_ERR_INIT;
            if (lib_resolve(lib, LIB_SERVER, t->servers.v[j], &it, &err) != 1)
                continue;
            toml_value *def = toml_parse_file(it->body, LIB_MAX_FILE_BYTES, &err);
            if (def)
                toml_refs(def, out);
            toml_free(def);
        }
    }
    strvec_sort(out);
}

static int library_step(const struct up_args *a, struct as_err *err)
{
    struct as_lock l;
    if (trust_lock(&l, err) < 0)
        return -1;
    int rc = -1;
    struct library *lib = lib_open(NULL, err);
    if (!lib)
        goto out;
    struct lib_source *s = lib_first(lib);
    if (a->library) {
        if (!lib_git_available()) {
            as_err_set(err, "git is not installed: up --library fetches the library with git");
            as_err_hint(err, "install git (apt-get install git)");
            goto out;
        }
        const char *action = NULL;
        int r = lib_sync_init_folder(s->path, a->library, false, &action, stderr, err);
        if (r != 0) {
            if (r > 0)
                as_err_set(err, "the library at %s holds a literal secret — nothing was set up",
                           s->path);
            goto out;
        }
        if (strcmp(action, "cloned") == 0)
            printf("✓ library: cloned %s into '%s' (%s)\n", a->library, s->name, s->path);
        else if (strcmp(action, "initialized") == 0)
            printf("✓ library: '%s' (%s) put under git with origin %s\n", s->name, s->path,
                   a->library);
        else
            printf("✓ library: '%s' (%s) now follows %s\n", s->name, s->path, a->library);
    }
    if (is_repo(s->path)) {
        int pulled = 0;
        if (lib_pull_ff(s->path, &pulled, err) < 0)
            goto out;
        if (pulled)
            printf("✓ library: pulled from origin (fast-forward only; nothing was pushed)\n");
        else
            printf("✓ library: up to date with origin\n");
    }
    lib_free(lib);
    lib = lib_open(NULL, err);
    if (!lib)
        goto out;
    size_t counts[LIB_KIND_COUNT] = {0};
    for (size_t i = 0; i < lib->sources.n; i++)
        for (size_t j = 0; j < lib->sources.v[i].items.n; j++)
            counts[lib->sources.v[i].items.v[j].kind]++;
    printf("· library: %zu skill%s, %zu server%s, %zu instruction%s in %zu source%s\n",
           counts[LIB_SKILL], counts[LIB_SKILL] == 1 ? "" : "s", counts[LIB_SERVER],
           counts[LIB_SERVER] == 1 ? "" : "s", counts[LIB_INSTRUCTION],
           counts[LIB_INSTRUCTION] == 1 ? "" : "s", lib->sources.n,
           lib->sources.n == 1 ? "" : "s");
    for (size_t i = 0; i < lib->warnings.n; i++)
        fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
    rc = 0;
out:
    lib_free(lib);
    lock_release(&l);
    return rc;
}

static int project_step(const struct up_args *a, struct bundle_paths *p, struct cli_ctx *ctx,
                        bool *failed)
{
    struct as_err err = AS_ERR_INIT;
    char *iv[] = {"install", "--locked", NULL};
    printf("→ agentstack install --locked\n");
    fflush(stdout);
    if (cmd_install(2, iv, ctx) != EXIT_OK)
        *failed = true;
    fflush(stdout);
    struct manifest *m = manifest_load(p, &err);
    struct library *lib = lib_open(NULL, &err);
    strvec refs = STRVEC_INIT;
    size_t missing = 0;
    if (m && lib) {
        project_refs(m, lib, &refs);
        struct sec_chain *chain = sec_chain_default(p->env_file);
        for (size_t i = 0; i < refs.n; i++) {
            struct sec_result r;
            if (sec_locate(chain, refs.v[i], &r) == SEC_FOUND)
                continue;
            if (!missing)
                printf("Secrets this machine still needs (values never travel):\n");
            printf("  ${%s} → agentstack secret set %s\n", refs.v[i], refs.v[i]);
            missing++;
        }
        sec_chain_free(chain);
        if (!missing)
            printf("✓ secrets: every ${REF} resolves on this machine\n");
    } else if (!m) {
        cli_error(&err);
        *failed = true;
    }
    struct trust_status st = {.key = SB_INIT};
    bool trusted = false;
    if (m && trust_check(p, &st, &err) == 0)
        trusted = st.state == TRUST_TRUSTED;
    if (m && trusted && !*failed) {
        strvec av = STRVEC_INIT;
        strvec_push(&av, "apply");
        strvec_push(&av, "--write");
        if (a->toolset) {
            strvec_push(&av, "--toolset");
            strvec_push(&av, a->toolset);
        }
        for (size_t i = 0; i < a->targets.n; i++) {
            strvec_push(&av, "--target");
            strvec_push(&av, a->targets.v[i]);
        }
        printf("→ agentstack apply --write\n");
        fflush(stdout);
        if (cmd_apply((int)av.n, av.v, ctx) != EXIT_OK)
            *failed = true;
        fflush(stdout);
        strvec_clear(&av);
    } else if (m && !trusted) {
        printf("· trust: this project is %s on this machine — nothing was delivered\n",
               st.state == TRUST_CHANGED ? "changed since you trusted it" : "not trusted yet");
    }
    printf("Stays on this machine: secret values%s, trust decisions%s, machine policy, logs.\n",
           missing ? " (set them as listed)" : "", trusted ? "" : " (review: agentstack trust .)");
    if (!trusted && m)
        printf("next: agentstack trust .   then   agentstack apply --write\n");
    trust_status_release(&st);
    strvec_clear(&refs);
    lib_free(lib);
    manifest_free(m);
    return 0;
}

int cmd_up(int argc, char **argv, struct cli_ctx *ctx)
{
    struct up_args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc) {
        strvec_clear(&a.targets);
        return rc;
    }
    if (a.library) {
        struct as_err e = AS_ERR_INIT;
        if (lib_git_url_check(a.library, false, &e) < 0) {
            cli_error(&e);
            strvec_clear(&a.targets);
            return EXIT_FAIL;
        }
    }
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    memset(&p, 0, sizeof p);
    bool have_project = false;
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0) {
        cli_error(&err);
        strvec_clear(&a.targets);
        return EXIT_FAIL;
    }
    have_project = p.found;
    if (ctx->manifest_dir && !p.found) {
        discover_require(&p, &err);
        cli_error(&err);
        bundle_paths_free(&p);
        strvec_clear(&a.targets);
        return EXIT_FAIL;
    }
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        cli_error(&err);
        bundle_paths_free(&p);
        strvec_clear(&a.targets);
        return EXIT_FAIL;
    }
    const struct lib_source *s = lib_first(lib);
    printf("New-machine setup plan\n");
    if (a.library) {
        if (is_repo(s->path))
            printf("  library   point '%s' (%s) at %s, then pull (fast-forward only)\n", s->name,
                   s->path, a.library);
        else if (dir_has_entries(s->path))
            printf("  library   put '%s' (%s) under git, origin %s, then pull\n", s->name,
                   s->path, a.library);
        else
            printf("  library   clone %s into '%s' (%s)\n", a.library, s->name, s->path);
    } else if (is_repo(s->path)) {
        printf("  library   pull '%s' (%s) from its origin, fast-forward only\n", s->name,
               s->path);
    } else {
        printf("  library   '%s' (%s), local only — pass --library <git-url> to fetch one\n",
               s->name, s->path);
    }
    lib_free(lib);
    print_clis();
    printf("  gateway   not registered by this build — apply writes each CLI's own files\n");
    if (have_project)
        printf("  project   %s — install --locked, list missing secrets, apply --write when "
               "trusted\n",
               p.project_root);
    else
        printf("  project   none here\n");
    printf("  machine   secret values, trust, machine policy, logs, sources.toml and the store "
           "stay here\n");
    if (!a.write) {
        printf("Nothing written. Re-run with --write to apply this plan.\n");
        bundle_paths_free(&p);
        strvec_clear(&a.targets);
        return EXIT_OK;
    }
    fflush(stdout);
    if (library_step(&a, &err) < 0) {
        fflush(stdout);
        cli_error(&err);
        bundle_paths_free(&p);
        strvec_clear(&a.targets);
        return EXIT_FAIL;
    }
    bool failed = false;
    if (!have_project) {
        printf("Next: clone a project and run agentstack status in it\n");
    } else {
        project_step(&a, &p, ctx, &failed);
    }
    bundle_paths_free(&p);
    strvec_clear(&a.targets);
    return failed ? EXIT_FAIL : EXIT_OK;
}
