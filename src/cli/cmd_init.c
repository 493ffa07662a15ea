/*
 * agentstack init [--yes] [--dry-run] [--secrets keychain|env|file|skip]
 *                 [--no-keychain] [--include-tool-managed] [--force] [--global]
 *                 [--connect]
 * (docs/onboarding.md).
 *
 * Reads the MCP servers and skill folders the detected CLIs already have,
 * merges them into one manifest (servers inline, skills copied into the
 * central library and listed in [toolsets.default]), and moves every inline
 * secret to a store: the OS keychain by default; with none reachable it
 * refuses and names --secrets env|file|skip. The CLIs' own files are only
 * read. On a machine with nothing to import it writes a commented starter.
 * Without a terminal it needs --yes (or --dry-run); on a terminal without
 * flags it asks before writing. It never renders and never trusts.
 * Every project destination is checked before the first write: a
 * .agentstack symlinked out of the project refuses, and values go to the
 * project .env only when git ignores it or will with the rule init appends
 * (onboard.h); "(gitignored)" is printed only when git confirmed it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "cli/json_out.h"
#include "library/library.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"

int cmd_init(int argc, char **argv, struct cli_ctx *ctx);
int cmd_connect(int argc, char **argv, struct cli_ctx *ctx);

struct init_args {
    bool yes, dry_run, force, global, include_tool_managed, verbose, connect, json;
    bool secrets_set;
    int dest; /* enum onb_dest */
};

#define CLI_ARGS struct init_args
static const struct cli_option init_options[] = {
    {OPT_BOOL("yes", 'y', yes, "write without asking (what a terminal-less run needs)")},
    {OPT_BOOL("dry-run", 0, dry_run, "show what would be imported; write nothing"),
     .alias = "plan"},
    {OPT_ENUM("secrets", 0, dest, cli_secret_dest_choices,
              "where inline secrets go (default: the OS keychain)"),
     .seen = CLI_SEEN(secrets_set)},
    {OPT_SET("no-keychain", 0, dest, ONB_DEST_SKIP, "store no secret values (--secrets skip)"),
     .seen = CLI_SEEN(secrets_set)},
    {OPT_BOOL("include-tool-managed", 0, include_tool_managed,
              "also import servers a CLI manages itself (plugins, extensions)")},
    {OPT_BOOL("force", 0, force, "replace an existing manifest")},
    {OPT_BOOL("global", 0, global, "write the machine manifest under the agentstack home")},
    {OPT_BOOL("connect", 0, connect, "then register the gateway (connect --all --write)")},
    {OPT_BOOL("verbose", 'v', verbose, "every note, not only the skips")},
    {OPT_BOOL("json", 0, json, "one JSON document (docs/json.md); never asks, as --yes")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_init_spec = {
    .name = "init",
    .fn = cmd_init,
    .summary = "import the servers, skills and secrets your CLIs already have",
    .synopsis = CLI_LINES("init [--yes] [--dry-run] [--secrets keychain|env|file|skip]",
                          "init [--no-keychain] [--include-tool-managed] [--force] [--global] "
                          "[--connect] [-v] [--json]"),
    .description = "Reads each detected CLI's config (never changes it) and merges it into one "
                   "manifest; inline secrets become ${REF}s, their values moved to a store. It "
                   "never renders and never trusts.",
    .options = init_options,
    .examples = CLI_LINES("agentstack init --dry-run", "agentstack init --yes",
                          "agentstack init --global --secrets file --yes"),
    .see_also = "trust lock apply",
    .flags = CLI_JSON_ERRORS,
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct init_args *a)
{
    a->dest = ONB_DEST_KEYCHAIN;
    int rc = cli_parse(&cmd_init_spec, &argc, argv, ctx, a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_init_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a->global && a->dest == ONB_DEST_ENV)
        return cli_usage_error("init", "--secrets env writes a project's .agentstack/.env; with "
                                       "--global use keychain, file or skip");
    return CLI_CONTINUE;
}

/* ---- taken names: does a store already hold this name? ---------------------- */

struct taken_ctx {
    struct sec_chain *chain;
};

static int taken_cb(void *ctx, const char *name, const char *value)
{
    struct taken_ctx *t = ctx;
    strbuf v = SB_INIT;
    struct sec_result r;
    enum sec_status s = sec_resolve(t->chain, name, &v, &r);
    int rc = 0;
    if (s == SEC_FOUND)
        rc = strcmp(v.buf, value) == 0 ? 1 : 2;
    else if (s == SEC_FAILED && r.source && strcmp(r.source, "keychain") != 0)
        rc = 2; /* unreadable store: do not risk shadowing what it holds */
    sb_release_secure(&v);
    return rc;
}

/* ---- validation ---------------------------------------------------------- */

struct lib_ctx {
    struct library *lib;
    const struct onb_import *im;
};

static bool has_item(void *ctx, enum mf_item_kind kind, const char *name)
{
    struct lib_ctx *l = ctx;
    if (kind == MF_ITEM_SKILL)
        for (size_t i = 0; i < l->im->skills.n; i++)
            if (strcmp(l->im->skills.v[i].name, name) == 0)
                return true;
    return l->lib && lib_manifest_has(l->lib, kind, name);
}

static int validate_text(const char *path, const strbuf *text, bool machine,
                         const struct adp_registry *r, const struct onb_import *im,
                         struct as_err *err)
{
    struct manifest_source src = {
        .kind = machine ? MANIFEST_MACHINE : MANIFEST_PROJECT,
        .path = path,
        .data = text->buf,
        .len = text->len,
    };
    struct manifest *m = manifest_load_bytes(&src, err);
    if (!m) {
        as_err_prefix(err, "the imported manifest does not load (a bug; nothing was written)");
        return -1;
    }
    const char **ids = xcalloc(r->v.n + 1, sizeof(char *));
    for (size_t i = 0; i < r->v.n; i++)
        ids[i] = r->v.v[i]->id;
    struct as_err lerr = AS_ERR_INIT;
    struct lib_ctx lc = {lib_open(NULL, &lerr), im};
    struct manifest_env env = {
        .adapter_ids = ids, .n_adapter_ids = r->v.n, .library_has = has_item, .library_ctx = &lc};
    mf_diags d = VEC_INIT;
    size_t nerr = manifest_validate(m, &env, &d);
    int rc = 0;
    if (nerr) {
        strbuf s = SB_INIT;
        const char *fix = NULL;
        for (size_t i = 0; i < d.n; i++)
            if (d.v[i].sev == MF_ERROR) {
                mf_diag_message(&d.v[i], &s);
                fix = d.v[i].fix;
                break;
            }
        rc = as_err_set(err, "the imported manifest does not validate: %s", s.buf);
        if (fix)
            as_err_hint(err, "%s", fix);
        sb_release(&s);
    }
    mf_diags_free(&d);
    lib_free(lc.lib);
    free(ids);
    manifest_free(m);
    return rc;
}

/* A manifest dir that is a symlink must stay inside the project (the
 * layout check covers it only once a manifest is there). */
static int outside_symlink(const struct bundle_paths *p, struct as_err *err)
{
    if (strcmp(p->manifest_dir, p->project_root) == 0)
        return 0;
    strbuf out = SB_INIT;
    int rc = fs_contain(p->project_root, NULL, p->manifest_dir, FS_CONTAIN_ABSOLUTE, &out, err);
    sb_release(&out);
    if (rc < 0)
        as_err_hint(err, "replace the symlink with a real .agentstack directory");
    return rc < 0 ? -1 : 0;
}

/* ---- terminal questions ---------------------------------------------------- */

static int ask(const char *q, const char *def, char *buf, size_t n)
{
    term_printf("%s", q);
    fflush(stdout);
    if (!fgets(buf, (int)n, stdin))
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0])
        snprintf(buf, n, "%s", def);
    return 0;
}

/* The project .env is called gitignored only when git says it is (or will
 * be, with the rule init appends and verifies). */
static const char *dest_label(enum onb_dest d, const struct onb_dotenv_plan *dp)
{
    static char env[96];
    switch (d) {
    case ONB_DEST_KEYCHAIN:
        return "the OS keychain";
    case ONB_DEST_ENV:
        snprintf(env, sizeof env, "%s (%s)", dp->rule[0] ? dp->rule + 1 : ".agentstack/.env",
                 dp->ignored || dp->add_rule ? "gitignored"
                 : dp->in_work_tree          ? "NOT gitignored"
                                             : "0600; not in a git work tree");
        return env;
    case ONB_DEST_FILE:
        return "the file store $AGENTSTACK_HOME/secrets.env";
    case ONB_DEST_SKIP:
        return "nowhere (--secrets skip)";
    }
    return "?";
}

static void print_plan(const struct onb_import *im, const onb_lifts *lifts, enum onb_dest dest,
                       const struct onb_dotenv_plan *dp, bool verbose)
{
    for (size_t i = 0; i < im->servers.n; i++) {
        const struct onb_server *s = &im->servers.v[i];
        term_printf("  + %s  ← ", s->name);
        for (size_t k = 0; k < s->origins.n; k++)
            term_printf("%s%s", k ? " · " : "", s->origins.v[k]);
        term_printf("\n");
    }
    for (size_t i = 0; i < im->skills.n; i++) {
        const struct onb_skill *s = &im->skills.v[i];
        term_printf("  + skill %s  ← ", s->name);
        for (size_t k = 0; k < s->origins.n; k++)
            term_printf("%s%s", k ? " · " : "", s->origins.v[k]);
        term_printf("%s\n", s->in_library ? " (already in the library)" : "");
    }
    for (size_t i = 0; i < lifts->n; i++) {
        const struct onb_lift *l = &lifts->v[i];
        term_printf("  🔑 ${%s} ← ", l->name);
        for (size_t k = 0; k < l->where.n; k++)
            term_printf("%s%s", k ? ", " : "", l->where.v[k]);
        term_printf(" → %s\n", l->reused ? "already stored with this value" : dest_label(dest, dp));
    }
    for (size_t i = 0; i < im->conflicts.n; i++)
        term_printf("  ! conflict: %s\n", im->conflicts.v[i]);
    for (size_t i = 0; i < im->problems.n; i++)
        term_printf("  ✗ %s\n", im->problems.v[i]);
    for (size_t i = 0; i < im->notes.n; i++)
        if (verbose || strncmp(im->notes.v[i], "skipping", 8) == 0)
            term_printf("  ↳ %s\n", im->notes.v[i]);
}

static const char *dest_name(int dest)
{
    for (const struct cli_choice *c = cli_secret_dest_choices; c->name; c++)
        if (c->value == dest)
            return c->name;
    return "keychain";
}

/* init --json (docs/json.md): the CLIs detected, what was imported from
 * where, the ${REF} names whose values moved (never a value), and what was
 * written. */
static void print_json(const struct init_args *a, const struct onb_import *im,
                       const onb_lifts *lifts, const char *manifest, bool starter, bool written,
                       bool connected, int rc)
{
    json_t *doc = cli_json_doc("init", true);
    json_t *clis = json_array(), *servers = json_array(), *skills = json_array();
    json_t *secrets = json_array(), *notes = json_array();
    for (size_t i = 0; i < im->detected_ids.n; i++)
        json_array_append_new(clis, json_pack("{s:s,s:s}", "id", im->detected_ids.v[i], "display",
                                              im->detected_names.v[i]));
    for (size_t i = 0; i < im->servers.n; i++) {
        json_t *from = json_array();
        for (size_t k = 0; k < im->servers.v[i].origins.n; k++)
            json_array_append_new(from, json_string(im->servers.v[i].origins.v[k]));
        json_array_append_new(servers,
                              json_pack("{s:s,s:s,s:o}", "name", im->servers.v[i].name, "type",
                                        im->servers.v[i].http ? "http" : "stdio", "from", from));
    }
    for (size_t i = 0; i < im->skills.n; i++)
        json_array_append_new(skills, json_pack("{s:s,s:b}", "name", im->skills.v[i].name,
                                                "in_library", im->skills.v[i].in_library));
    for (size_t i = 0; i < lifts->n; i++)
        json_array_append_new(secrets, json_pack("{s:s,s:b}", "name", lifts->v[i].name, "reused",
                                                 lifts->v[i].reused));
    for (size_t i = 0; i < im->notes.n; i++)
        json_array_append_new(notes, json_string(im->notes.v[i]));
    for (size_t i = 0; i < im->conflicts.n; i++)
        json_array_append_new(notes, json_string(im->conflicts.v[i]));
    json_object_set_new(doc, "manifest", json_string(manifest));
    json_object_set_new(doc, "scope", json_string(a->global ? "global" : "project"));
    json_object_set_new(doc, "dry_run", json_boolean(a->dry_run));
    json_object_set_new(doc, "written", json_boolean(written));
    json_object_set_new(doc, "starter", json_boolean(starter));
    json_object_set_new(doc, "clis", clis);
    json_object_set_new(doc, "servers", servers);
    json_object_set_new(doc, "skills", skills);
    json_object_set_new(doc, "secrets", secrets);
    json_object_set_new(doc, "secrets_to", json_string(dest_name(a->dest)));
    json_object_set_new(doc, "notes", notes);
    json_object_set_new(doc, "connected", json_boolean(connected));
    json_object_set_new(doc, "next",
                        json_string(written ? "agentstack bootstrap" : "agentstack init --yes"));
    cli_json_print_result(doc, rc);
}

/* Where the manifest goes: the machine manifest for --global, else the
 * project's, refused when it exists (without --force), sits in a home
 * directory, or has a destination that is a symlink out of the project. */
static int locate_target(const struct init_args *a, struct cli_ctx *ctx, struct bundle_paths *p,
                         strbuf *target, strbuf *home, struct as_err *err)
{
    if (a->global) {
        if (home_path(HOME_MACHINE_MANIFEST, target, err) < 0 || home_dir(home, err) < 0)
            return -1;
        if (fs_exists(target->buf) && !a->force) {
            as_err_set(err, "%s already exists", target->buf);
            as_err_hint(err, "agentstack adopt --scope global --write imports hand edits into "
                             "it; init --global --force replaces it");
            return -1;
        }
    } else {
        char cwd[4096];
        const char *base = ctx->manifest_dir;
        if (!base) {
            if (!getcwd(cwd, sizeof cwd)) {
                as_err_errno(err, "cannot read the current directory");
                return -1;
            }
            base = cwd;
        }
        if (discover_at(base, p, err) < 0)
            return -1;
        if (discover_is_machine_home(p->base) || discover_is_machine_home(p->manifest_dir) ||
            discover_is_home_or_ancestor(p->base)) {
            as_err_set(err,
                       "%s is your home directory (or holds the machine home); a project "
                       "manifest does not belong here",
                       p->base);
            as_err_hint(err, "run init inside a project directory, or use agentstack init "
                             "--global for the machine layer");
            return -1;
        }
        if (p->found && !a->force) {
            as_err_set(err, "%s already exists", p->manifest);
            as_err_hint(err, "agentstack adopt imports hand edits into it; init --force "
                             "replaces it");
            return -1;
        }
        /* Every project destination is checked before anything is written:
         * a .agentstack, manifest, overlay or lock that is a symlink leading
         * out of the project refuses here, as lock refuses it. */
        if (discover_check_layout(p, err) < 0 || outside_symlink(p, err) < 0) {
            as_err_prefix(err, "refusing to init (nothing was written)");
            return -1;
        }
        sb_adds(target, p->manifest);
    }
    return 0;
}

static void print_detected(const struct onb_import *im)
{
    if (im->detected_ids.n) {
        term_printf("🔍 Detected %zu CLI%s: ", im->detected_ids.n,
                    im->detected_ids.n == 1 ? "" : "s");
        for (size_t i = 0; i < im->detected_names.n; i++)
            term_printf("%s%s", i ? " · " : "", im->detected_names.v[i]);
        term_printf("\n");
    } else {
        term_printf("🔍 No supported CLIs detected on this machine\n");
    }
}

/* What the write did: the import (or the starter), and where each lifted
 * secret value went. */
static void print_written(const struct onb_import *im, const onb_lifts *lifts, enum onb_dest dest,
                          const struct onb_dotenv_plan *dp, size_t to_store, bool starter)
{
    if (starter) {
        term_printf("No supported CLIs detected to import — wrote a starter manifest instead.\n");
    } else {
        term_printf("📥 Imported %zu MCP server%s", im->servers.n, im->servers.n == 1 ? "" : "s");
        if (im->skills.n)
            term_printf(" and %zu skill%s", im->skills.n, im->skills.n == 1 ? "" : "s");
        term_printf(" from existing configs\n");
    }
    if (to_store && dest != ONB_DEST_SKIP) {
        term_printf("🔑 Stored %zu secret%s in %s:", to_store, to_store == 1 ? "" : "s",
                    dest_label(dest, dp));
        for (size_t i = 0; i < lifts->n; i++)
            if (!lifts->v[i].reused)
                term_printf(" %s", lifts->v[i].name);
        term_printf("\n");
    } else if (to_store) {
        term_printf("· %zu secret value%s not stored (--secrets skip) — set each before apply:\n",
                    to_store, to_store == 1 ? " was" : "s were");
        for (size_t i = 0; i < lifts->n; i++)
            if (!lifts->v[i].reused)
                term_printf("    agentstack secret set %s\n", lifts->v[i].name);
    }
}

enum { ASK_UNANSWERED = 1, ASK_DECLINED = 2 };

/* The questions a terminal gets before anything is written: where the
 * secret values go (unless --secrets named it) and whether to write.
 * 0 to go on, ASK_UNANSWERED or ASK_DECLINED to stop, -1 on an error. */
static int ask_before_write(struct init_args *a, size_t to_store, const struct bundle_paths *p,
                            struct onb_dotenv_plan *dp, bool *dp_checked, const char *target,
                            struct as_err *err)
{
    char buf[64];
    if (to_store && !a->secrets_set) {
        if (ask("Where should the secret values go? [k]eychain (default), [e]nv "
                "(.agentstack/.env), [f]ile store, [s]kip: ",
                "k", buf, sizeof buf) < 0) {
            term_printf("\nNot written.\n");
            return ASK_UNANSWERED;
        }
        a->dest = buf[0] == 'e'   ? ONB_DEST_ENV
                  : buf[0] == 'f' ? ONB_DEST_FILE
                  : buf[0] == 's' ? ONB_DEST_SKIP
                                  : ONB_DEST_KEYCHAIN;
        if (a->global && a->dest == ONB_DEST_ENV)
            a->dest = ONB_DEST_FILE;
        if (a->dest == ONB_DEST_ENV && !*dp_checked) {
            *dp_checked = true;
            if (onb_dotenv_check(p, dp, err) < 0)
                return -1;
        }
    }
    strbuf disp = SB_INIT;
    onb_display_rel(target, &disp);
    char q[4200];
    snprintf(q, sizeof q, "Write %s? [Y/n] ", disp.buf);
    sb_release(&disp);
    if (ask(q, "y", buf, sizeof buf) < 0 || (buf[0] != 'y' && buf[0] != 'Y')) {
        term_printf("Not written. Re-run with --yes to write.\n");
        return ASK_DECLINED;
    }
    return 0;
}

/* --dry-run: what --yes would refuse, and what it would write. */
static void print_dry_run(const struct init_args *a, const char *env_refusal, size_t to_store,
                          const char *target, bool starter, struct as_err *err)
{
    if (env_refusal[0])
        term_printf("  ✗ %s: --yes would refuse\n", env_refusal);
    if (to_store && a->dest == ONB_DEST_KEYCHAIN && sec_keychain_probe(err) < 0)
        term_printf("  ✗ the OS keychain is unreachable (%s): --yes would refuse; pick "
                    "--secrets env|file|skip\n",
                    err->msg);
    as_err_clear(err);
    strbuf disp = SB_INIT;
    onb_display_rel(target, &disp);
    term_printf("Dry run. Nothing written — would write %s%s%s.\n", disp.buf,
                starter ? " (a starter manifest)" : "",
                a->connect ? ", then run agentstack connect --all --write" : "");
    sb_release(&disp);
}

/* The refusal when the secret values would have nowhere to go. */
static void refuse_no_keychain(size_t to_store, struct as_err *err)
{
    char why[2048];
    snprintf(why, sizeof why, "%s", err->msg);
    as_err_set(err,
               "the OS keychain is unreachable (%s) — %zu secret value%s would have "
               "nowhere to go; nothing was written",
               why, to_store, to_store == 1 ? "" : "s");
    as_err_hint(err, "choose where they go: agentstack init --secrets env (.agentstack/.env, "
                     "gitignored) | --secrets file ($AGENTSTACK_HOME/secrets.env, 0600) | "
                     "--secrets skip (set them later with agentstack secret set NAME)");
}

/* --connect: register the live gateway once the manifest is written. */
static int connect_gateway(struct cli_ctx *ctx)
{
    term_printf("🔌 agentstack connect --all --write\n");
    fflush(stdout);
    char *cargv[] = {"connect", "--all", "--write", NULL};
    if (cmd_connect(3, cargv, ctx) != 0) {
        fflush(stdout);
        cli_errorf("the manifest was written, but connecting the gateway failed (see above)"
                   "; retry with: agentstack connect --all --write");
        return -1;
    }
    return 0;
}

int cmd_init(int argc, char **argv, struct cli_ctx *ctx)
{
    struct init_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    struct adp_registry reg = {0};
    bool have_reg = false;
    struct onb_import im = {0};
    onb_lifts lifts = VEC_INIT;
    struct onb_stored stored = {0};
    strbuf target = SB_INIT, text = SB_INIT, disp = SB_INIT, home = SB_INIT;
    struct sec_chain *chain = NULL;
    const char *project_root = NULL;
    const char *dotenv = NULL;
    char *mkdir_made = NULL; /* the manifest dir, when this run created it */
    struct onb_dotenv_plan dp = {0};
    bool dp_checked = false;
    rc = EXIT_FAIL;

    /* Without a terminal nobody can answer the questions, so init imports
     * as --yes would: it never hangs and never needs a flag to do what was
     * asked. --yes acknowledges the import only; trust stays its own step. */
    bool interactive = !a.yes && !a.dry_run && !a.json && isatty(0) && isatty(1);
    bool written = false, connected = false, starter = false;
    if (a.json && cli_stdout_hold() < 0) {
        cli_errorf("--json needs /dev/null to hold the report back; nothing was written");
        return EXIT_FAIL;
    }
    cli_quiet_report(ctx, a.json);

    if (locate_target(&a, ctx, &p, &target, &home, &err) < 0)
        goto fail;
    if (!a.global) {
        project_root = p.project_root;
        dotenv = p.env_file;
    }

    if (adp_registry_load(&reg, true, &err) < 0)
        goto fail;
    have_reg = true;
    for (size_t i = 0; i < reg.warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", reg.warnings.v[i]);

    struct onb_import_opts io = {.project_root = project_root,
                                 .include_tool_managed = a.include_tool_managed,
                                 .skills = true};
    if (onb_import(&reg, &io, &im, &err) < 0)
        goto fail;

    print_detected(&im);

    /* Lift secrets; names already holding other values in a store are skipped. */
    struct sec_chain_opts co = {.project_dotenv = dotenv,
                                .no_keychain = !(sec_keychain_probe(&err) == 0)};
    as_err_clear(&err);
    chain = sec_chain_full(&co);
    struct taken_ctx tc = {chain};
    onb_lift_secrets(&im, taken_cb, &tc, &lifts);
    size_t to_store = 0;
    for (size_t i = 0; i < lifts.n; i++)
        to_store += !lifts.v[i].reused;

    starter = im.servers.n == 0 && im.skills.n == 0;
    if (starter)
        onb_starter_text(&text);
    else
        onb_manifest_text(&im, &text);
    if (validate_text(target.buf, &text, a.global, &reg, &im, &err) < 0)
        goto fail;

    /* Secrets bound for the project .env: settled before the plan names
     * the destination, and before anything is written. */
    char env_refusal[sizeof err.msg] = "";
    if (to_store && a.dest == ONB_DEST_ENV && !a.global) {
        dp_checked = true;
        if (onb_dotenv_check(&p, &dp, &err) < 0) {
            if (!a.dry_run)
                goto fail;
            snprintf(env_refusal, sizeof env_refusal, "%s", err.msg);
            as_err_clear(&err);
        }
    }

    print_plan(&im, &lifts, a.dest, &dp, a.verbose);

    if (interactive && !starter) {
        int asked = ask_before_write(&a, to_store, &p, &dp, &dp_checked, target.buf, &err);
        if (asked < 0)
            goto fail;
        if (asked > 0) {
            rc = asked == ASK_DECLINED ? EXIT_OK : EXIT_FAIL;
            goto out;
        }
    }

    /* No keychain and nowhere else named: refuse before anything is written. */
    if (to_store && a.dest == ONB_DEST_KEYCHAIN && sec_keychain_probe(&err) < 0 && !a.dry_run) {
        refuse_no_keychain(to_store, &err);
        goto fail;
    }

    if (a.dry_run) {
        print_dry_run(&a, env_refusal, to_store, target.buf, starter, &err);
        rc = EXIT_OK;
        goto out;
    }

    /* The manifest dir first (so a .env lands in a 0755 .agentstack/, not one
     * its writer made 0700), then secrets (rolled back on a later failure),
     * skills, and the manifest last. */
    mkdir_made = xstrdup(target.buf);
    char *slash = strrchr(mkdir_made, '/');
    if (slash)
        *slash = '\0';
    if (fs_exists(mkdir_made)) {
        free(mkdir_made);
        mkdir_made = NULL;
    } else if (fs_mkdirs(mkdir_made, a.global ? 0700 : 0755, &err) < 0) {
        goto fail;
    }
    /* The ignore rule goes in (and git confirms it) before any value does. */
    if (to_store && a.dest == ONB_DEST_ENV && onb_dotenv_ignore(&p, &dp, &err) < 0)
        goto fail;
    if (to_store && onb_store_lifts(&lifts, a.dest, dotenv, &stored, &err) < 0)
        goto fail_rollback;
    size_t copied = 0;
    if (onb_write_skills(&im, &copied, &err) < 0)
        goto fail_rollback;
    struct fs_write_opts wo = {.mode = a.global ? 0600 : 0644,
                               .symlinks = FS_SYMLINK_REFUSE,
                               .contain_root = project_root};
    if (fs_write_atomic(target.buf, text.buf, text.len, &wo, &err) < 0)
        goto fail_rollback;
    free(mkdir_made);
    mkdir_made = NULL;
    written = true;
    if (to_store && a.dest == ONB_DEST_ENV && !dp.in_work_tree) {
        /* A .git git does not recognize still gets the rule (a
         * <root>/.git makes a git project); the label does not claim it. */
        bool added = false;
        struct as_err gerr = AS_ERR_INIT;
        if (sec_gitignore_env(project_root, dp.rule, &added, &gerr) < 0)
            term_fprintf(stderr, "warning: %s\n", gerr.msg);
    }

    print_written(&im, &lifts, a.dest, &dp, to_store, starter);
    onb_display_rel(target.buf, &disp);
    term_printf("✅ Wrote %s\n", disp.buf);
    rc = EXIT_OK;
    if (a.connect) {
        /* --connect (never implied by --yes): register the live gateway too. */
        if (connect_gateway(ctx) < 0) {
            rc = EXIT_FAIL;
            goto out;
        }
        connected = true;
    }
    term_printf("Next: agentstack bootstrap   · preflight: CLIs, missing secrets, what apply would "
                "change\n");
    goto out;

fail_rollback:
    onb_rollback(&stored);
fail:
    fflush(stdout); /* the plan above, before the error, even through a pipe */
    cli_error(&err);
    rc = EXIT_FAIL;
    if (mkdir_made)
        rmdir(mkdir_made); /* only when it is still empty */
out:
    free(mkdir_made);
    fflush(stdout);
    if (a.json) {
        cli_stdout_release();
        if (have_reg) /* past the checks: what was found, and what became of it */
            print_json(&a, &im, &lifts, target.buf, starter, written, connected, rc);
    }
    sec_chain_free(chain);
    onb_stored_free(&stored);
    onb_lifts_free(&lifts);
    onb_import_free(&im);
    if (have_reg)
        adp_registry_free(&reg);
    bundle_paths_free(&p);
    sb_release(&target);
    sb_release(&text);
    sb_release(&disp);
    sb_release(&home);
    return rc;
}
