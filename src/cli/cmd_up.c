/*
 * agentstack up [--library <git-url>] [--write] [--toolset N] [--targets ID…]
 * — the second machine in one command (docs/library.md). The preview prints the
 * "New-machine setup plan" and writes nothing. With --write: the library is
 * received (cloned, or put under git and pointed at the URL, then pulled
 * fast-forward only — never pushed), then, in a project, `install --locked`,
 * the secrets this machine still has to set, and `apply --write` when the
 * project is trusted here. Secret values and trust decisions stay per
 * machine and are named as what remains. Between the library and the
 * project, the gateway is registered in each detected MCP-capable CLI
 * (`connect --all --write`; no CLI → noted and skipped).
 *
 * --json: the transcript goes to stderr and stdout holds one document
 * {schema_version, command, success, applied, state, failure}.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "adapters/engine.h"
#include "base/fs.h"
#include "base/json.h"
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
    bool write, json;
    const char *toolset;
    strvec targets;
};

/* What happened, for the transcript's end and --json. */
struct up_state {
    const char *library_action; /* cloned | initialized | repointed | pulled | current | local */
    char *library_source, *library_path;
    size_t clis;         /* detected */
    const char *gateway; /* planned | registered | skipped | failed */
    char *project;       /* project root, or NULL */
    strvec missing;      /* ${REF}s without a value here */
    int trusted;         /* -1 unknown / no project */
    bool failed;
    strbuf failure;
    const char *next;
};

static void up_fail(struct up_state *st, struct as_err *err)
{
    cli_error(err);
    st->failed = true;
    if (!st->failure.len)
        sb_adds(&st->failure, err->msg);
}

static void up_fail_msg(struct up_state *st, const char *msg)
{
    st->failed = true;
    if (!st->failure.len)
        sb_adds(&st->failure, msg);
}

#define CLI_ARGS struct up_args
static const struct cli_option up_options[] = {
    {OPT_STRING("library", 0, library, "GIT-URL",
                "receive the central library from this repository (cloned, or pulled)")},
    {OPT_STRING("toolset", 0, toolset, "NAME", "apply this toolset, not the default"),
     .alias = "profile"},
    {OPT_LIST("targets", 0, targets, "ID", "apply to these CLIs only"), .alias = "target",
     .flags = CLI_OPT_GREEDY},
    {OPT_BOOL("write", 0, write, "do it: receive, install, connect, apply (default: the plan)")},
    {OPT_BOOL("json", 0, json, "the transcript on stderr, one JSON document on stdout")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_up_spec = {
    .name = "up",
    .fn = cmd_up,
    .summary = "set up a second machine: receive the library, install, list what is left",
    .synopsis = CLI_LINES("up [--library <git-url>] [--toolset N] [--targets ID...] [--write] "
                          "[--json]"),
    .description = "The preview prints the new-machine setup plan and writes nothing. --write "
                   "receives the library (pulled fast-forward only, never pushed), registers the "
                   "gateway, then in a project runs install --locked, names the secrets still to "
                   "set, and applies when the project is trusted here. Secret values and trust "
                   "decisions stay per machine.",
    .options = up_options,
    .examples = CLI_LINES("agentstack up --library git@github.com:me/agent-library.git",
                          "agentstack up --library git@github.com:me/agent-library.git --write"),
    .see_also = "lib install trust secret",
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct up_args *a)
{
    int rc = cli_parse(&cmd_up_spec, &argc, argv, ctx, a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_up_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        strvec_clear(&a->targets);
    return rc;
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

static size_t print_clis(void)
{
    struct adp_registry reg = {0};
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) < 0) {
        printf("  CLIs      (adapter registry unavailable: %s)\n", err.msg);
        return 0;
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
    return n;
}

static int library_step(const struct up_args *a, struct up_state *st, struct as_err *err)
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
        st->library_action = strcmp(action, "cloned") == 0        ? "cloned"
                             : strcmp(action, "initialized") == 0 ? "initialized"
                                                                  : "repointed";
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
            st->library_action = "pulled";
        else if (!a->library)
            st->library_action = "current";
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
           counts[LIB_INSTRUCTION] == 1 ? "" : "s", lib->sources.n, lib->sources.n == 1 ? "" : "s");
    for (size_t i = 0; i < lib->warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
    rc = 0;
out:
    lib_free(lib);
    lock_release(&l);
    return rc;
}

/* Step 2: the gateway in each detected MCP-capable CLI. */
static void gateway_step(struct up_state *st)
{
    struct adp_registry reg = {0};
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) < 0) {
        up_fail(st, &err);
        st->gateway = "failed";
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < reg.v.n; i++)
        n += adp_detected(reg.v.v[i], NULL);
    if (!n) {
        printf("· gateway: no CLI detected on this machine — skipped "
               "(later: agentstack connect --all --write)\n");
        st->gateway = "skipped";
        adp_registry_free(&reg);
        return;
    }
    strvec none = STRVEC_INIT;
    struct adp_connect_opts o = {.ids = &none, .all = true, .write = true, .out = stdout};
    printf("→ agentstack connect --all --write\n");
    fflush(stdout);
    int rc = adp_connect(&reg, &o, &err);
    fflush(stdout);
    if (rc == 0) {
        st->gateway = "registered";
    } else if (strstr(err.msg, "no installed harness with MCP support")) {
        printf("· gateway: no detected CLI speaks MCP — skipped\n");
        st->gateway = "skipped";
    } else {
        if (!as_err_isset(&err))
            as_err_set(&err, "registering the gateway failed for at least one CLI");
        up_fail(st, &err);
        st->gateway = "failed";
    }
    strvec_clear(&none);
    adp_registry_free(&reg);
}

static void project_step(const struct up_args *a, struct bundle_paths *p, struct cli_ctx *ctx,
                         struct up_state *st)
{
    struct as_err err = AS_ERR_INIT;
    char *iv[] = {"install", "--locked", NULL};
    printf("→ agentstack install --locked\n");
    fflush(stdout);
    if (cmd_install(2, iv, ctx) != EXIT_OK)
        up_fail_msg(st, "install --locked failed (see the transcript)");
    fflush(stdout);
    struct manifest *m = manifest_load(p, &err);
    struct library *lib = m ? lib_open(NULL, &err) : NULL;
    strvec refs = STRVEC_INIT;
    if (m && lib) {
        cli_needed_refs(m, lib, &refs);
        struct sec_chain *chain = sec_chain_default(p->env_file);
        for (size_t i = 0; i < refs.n; i++) {
            struct sec_result r;
            if (sec_locate(chain, refs.v[i], &r) == SEC_FOUND)
                continue;
            if (!st->missing.n)
                printf("Secrets this machine still needs (values never travel):\n");
            printf("  ${%s} → agentstack secret set %s\n", refs.v[i], refs.v[i]);
            strvec_push(&st->missing, refs.v[i]);
        }
        sec_chain_free(chain);
        if (!st->missing.n)
            printf("✓ secrets: every ${REF} resolves on this machine\n");
    } else {
        up_fail(st, &err);
    }
    struct trust_status ts = {.key = SB_INIT};
    bool trusted = false;
    if (m && trust_check(p, &ts, &err) == 0)
        trusted = ts.state == TRUST_TRUSTED;
    st->trusted = m ? trusted : -1;
    if (m && trusted && !st->failed) {
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
            up_fail_msg(st, "apply --write failed (see the transcript)");
        fflush(stdout);
        strvec_clear(&av);
    } else if (m && !trusted) {
        printf("· trust: this project is %s on this machine — nothing was delivered\n",
               ts.state == TRUST_CHANGED ? "changed since you trusted it" : "not trusted yet");
    }
    printf("Stays on this machine: secret values%s, trust decisions%s, machine policy, logs.\n",
           st->missing.n ? " (set them as listed)" : "",
           trusted ? "" : " (review: agentstack trust .)");
    if (!trusted && m) {
        st->next = "agentstack trust .   then   agentstack apply --write";
        printf("next: %s\n", st->next);
    }
    trust_status_release(&ts);
    strvec_clear(&refs);
    lib_free(lib);
    manifest_free(m);
}

static void print_json(const struct up_args *a, const struct up_state *st)
{
    json_t *missing = json_array();
    for (size_t i = 0; i < st->missing.n; i++)
        json_array_append_new(missing, json_string(st->missing.v[i]));
    json_t *lib =
        json_pack("{s:s, s:s, s:s}", "source", st->library_source ? st->library_source : "", "path",
                  st->library_path ? st->library_path : "", "action",
                  st->library_action ? st->library_action : "planned");
    json_t *state =
        json_pack("{s:o, s:I, s:s, s:o, s:o}", "library", lib, "clis_detected",
                  (json_int_t)st->clis, "gateway", st->gateway ? st->gateway : "planned", "project",
                  st->project ? json_string(st->project) : json_null(), "missing_secrets", missing);
    json_object_set_new(state, "trusted",
                        st->trusted < 0 ? json_null() : json_boolean(st->trusted));
    json_object_set_new(state, "next", st->next ? json_string(st->next) : json_null());
    json_t *j =
        json_pack("{s:i, s:s, s:b, s:b, s:o}", "schema_version", 1, "command", "up", "success",
                  !st->failed, "applied", a->write && !st->failed, "state", state);
    json_object_set_new(j, "failure", st->failure.len ? json_string(st->failure.buf) : json_null());
    strbuf out = SB_INIT;
    json_dump_pretty(j, &out);
    fputs(out.buf, stdout);
    if (!out.len || out.buf[out.len - 1] != '\n')
        fputc('\n', stdout);
    sb_release(&out);
    json_decref(j);
}

static void run_up(const struct up_args *a, struct cli_ctx *ctx, struct up_state *st)
{
    if (a->library) {
        struct as_err e = AS_ERR_INIT;
        if (lib_git_url_check(a->library, false, &e) < 0) {
            up_fail(st, &e);
            return;
        }
    }
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    memset(&p, 0, sizeof p);
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0) {
        up_fail(st, &err);
        bundle_paths_free(&p);
        return;
    }
    bool have_project = p.found;
    if (ctx->manifest_dir && !p.found) {
        discover_require(&p, &err);
        up_fail(st, &err);
        bundle_paths_free(&p);
        return;
    }
    if (have_project)
        st->project = xstrdup(p.project_root);
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        up_fail(st, &err);
        bundle_paths_free(&p);
        return;
    }
    const struct lib_source *s = lib_first(lib);
    st->library_source = xstrdup(s->name);
    st->library_path = xstrdup(s->path);
    printf("New-machine setup plan\n");
    if (a->library) {
        if (is_repo(s->path))
            printf("  library   point '%s' (%s) at %s, then pull (fast-forward only)\n", s->name,
                   s->path, a->library);
        else if (dir_has_entries(s->path))
            printf("  library   put '%s' (%s) under git, origin %s, then pull\n", s->name, s->path,
                   a->library);
        else
            printf("  library   clone %s into '%s' (%s)\n", a->library, s->name, s->path);
    } else if (is_repo(s->path)) {
        printf("  library   pull '%s' (%s) from its origin, fast-forward only\n", s->name, s->path);
    } else {
        printf("  library   '%s' (%s), local only — pass --library <git-url> to fetch one\n",
               s->name, s->path);
        st->library_action = "local";
    }
    lib_free(lib);
    st->clis = print_clis();
    if (st->clis)
        printf("  gateway   register `agentstack mcp --auto-project` in each detected CLI "
               "that speaks MCP\n");
    else
        printf("  gateway   no CLI detected — nothing to register\n");
    if (have_project)
        printf("  project   %s — install --locked, list missing secrets, apply --write when "
               "trusted\n",
               p.project_root);
    else
        printf("  project   none here\n");
    printf("  machine   secret values, trust, machine policy, logs, sources.toml and the store "
           "stay here\n");
    if (!a->write) {
        printf("Nothing written. Re-run with --write to apply this plan.\n");
        bundle_paths_free(&p);
        return;
    }
    fflush(stdout);
    if (library_step(a, st, &err) < 0) {
        fflush(stdout);
        up_fail(st, &err);
        bundle_paths_free(&p);
        return;
    }
    gateway_step(st);
    if (!have_project) {
        st->next = "clone a project and run agentstack status in it";
        printf("Next: %s\n", st->next);
    } else {
        project_step(a, &p, ctx, st);
    }
    bundle_paths_free(&p);
}

int cmd_up(int argc, char **argv, struct cli_ctx *ctx)
{
    struct up_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    a.json = a.json || ctx->json;
    struct up_state st = {.trusted = -1, .failure = SB_INIT};
    /* --json: stdout is the document alone; the transcript (ours and the
     * steps' — install, apply, connect print to stdout) goes to stderr. */
    int saved = -1;
    if (a.json) {
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        if (saved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
            if (saved >= 0)
                close(saved);
            cli_errorf("cannot redirect the transcript to stderr for --json");
            strvec_clear(&a.targets);
            return EXIT_FAIL;
        }
    }
    run_up(&a, ctx, &st);
    if (a.json) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        print_json(&a, &st);
        fflush(stdout);
    }
    rc = st.failed ? EXIT_FAIL : EXIT_OK;
    free(st.library_source);
    free(st.library_path);
    free(st.project);
    strvec_clear(&st.missing);
    sb_release(&st.failure);
    strvec_clear(&a.targets);
    return rc;
}
