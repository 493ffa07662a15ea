/*
 * agentstack run — every run mode (docs/sandbox.md): the protected
 * host run (default, --locked), --unprotected, --sandbox, --lockdown, each
 * with --plan where it applies, and --toolset/--profile. This file parses
 * the flags, resolves the harness (an adapter id, or a command), asks the
 * sandbox module for the one run plan, shows it or hands it to the right
 * executor, and supplies the native-config injection the host runs need
 * (adapters sit above the sandbox module). It exits with the harness's
 * status (128+n for a signal); a refusal before launch exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "adapters/engine.h"
#include "adapters/render.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/proc.h"
#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "onboard/onboard.h"
#include "sandbox/host.h"
#include "sandbox/ns.h"
#include "sandbox/plan.h"
#include "sandbox/run.h"

#define NOTHING "nothing was launched"

int cmd_run(int argc, char **argv, struct cli_ctx *ctx);

/* The harness to run: an adapter's detect.bin, or a plain command. */
struct harness {
    char *id;   /* egress identity */
    strbuf bin; /* absolute host path */
    int has_mcp;
    const struct adp_desc *d; /* the adapter (NULL: a command, or the shtest fallback) */
};

static int resolve_harness(const struct adp_registry *reg, const char *name, struct harness *h,
                           struct as_err *err)
{
    const char *bin = NULL;
    h->has_mcp = 0;
    const struct adp_desc *d = strchr(name, '/') ? NULL : adp_registry_find(reg, name);
    if (d) {
        if (!d->detect_bin)
            return as_err_set(err, "adapter '%s' names no program to run (detect.bin)", name);
        bin = d->detect_bin;
        h->has_mcp = d->has_mcp;
        h->id = xstrdup(d->id);
        h->d = d;
    } else if (strcmp(name, "shtest") == 0) {
        /* The built-in shell harness: sh, no MCP mapping. A drop-in
         * $AGENTSTACK_HOME/adapters/shtest.yaml takes precedence. */
        bin = "sh";
        h->id = xstrdup("shtest");
    } else {
        bin = name;
        const char *slash = strrchr(name, '/');
        h->id = xstrdup(slash ? slash + 1 : name);
    }
    if (strchr(bin, '/')) {
        if (access(bin, X_OK) < 0)
            return as_err_errno(err, "%s", bin);
        if (bin[0] != '/') {
            char cwd[4096];
            if (!getcwd(cwd, sizeof cwd))
                return as_err_errno(err, "getcwd");
            sb_addf(&h->bin, "%s/%s", cwd, bin);
        } else {
            sb_adds(&h->bin, bin);
        }
    } else if (proc_which(bin, NULL, &h->bin) != 0) {
        if (d)
            return as_err_set(err, "%s: '%s' is not on PATH", name, bin);
        return as_err_set(err, "'%s' is neither a known CLI nor a command on PATH", name);
    }
    return 0;
}

static int refuse(const struct as_err *e)
{
    cli_error(e);
    fprintf(stderr, "%s\n", NOTHING);
    return EXIT_FAIL;
}

static int refusef(const char *msg, const char *why)
{
    cli_errorf("%s", msg);
    if (why)
        fprintf(stderr, "why: %s\n", why);
    fprintf(stderr, "%s\n", NOTHING);
    return EXIT_FAIL;
}

/* ---- the gateway entry of a confined run (docs/sandbox.md, "Gateway routing") -------- */

/* The harness's user-scope MCP config holding one entry, SBX_GATEWAY_ENTRY:
 * the gateway's sandbox face at url (Streamable HTTP, the token header),
 * rendered through the adapter's own field mapping. */
static int gateway_config(void *vctx, const char *url, const char *token, strbuf *rel, strbuf *text,
                          struct as_err *err)
{
    const struct adp_desc *d = vctx;
    if (!d || !d->has_mcp)
        return as_err_set(err, "the harness has no MCP mapping");
    if (!d->mcp.f_url)
        return as_err_set(err, "%s cannot hold an HTTP server (no mcp.fields.url)", d->id);
    if (!d->mcp.f_headers)
        return as_err_set(err,
                          "%s cannot send the X-Agentstack-Token header (no "
                          "mcp.fields.headers)",
                          d->id);
    const char *cp = d->config_path;
    if (cp && strncmp(cp, "~/", 2) == 0) {
        sb_adds(rel, cp + 2);
    } else if (cp && strncmp(cp, "{config}/", 9) == 0) {
        sb_adds(rel, ".config/");
        sb_adds(rel, cp + 9);
    } else {
        return as_err_set(err, "%s has no user-scope MCP config under the home (config.path)",
                          d->id);
    }
    struct mf_server s;
    memset(&s, 0, sizeof s);
    s.name = (char *)SBX_GATEWAY_ENTRY;
    s.type = MF_SERVER_HTTP;
    s.url = (char *)url;
    struct mf_str_entry h;
    memset(&h, 0, sizeof h);
    h.key = (char *)"X-Agentstack-Token";
    h.value = (char *)token;
    vec_push(&s.headers, h);
    struct adp_render_ctx rc;
    memset(&rc, 0, sizeof rc);
    struct adp_rendered out;
    memset(&out, 0, sizeof out);
    sb_init(&out.reason, 0);
    int ret = 0;
    enum adp_render_status st = adp_render_server(d, d->config_format, &s, &rc, &out, err);
    if (st == ADP_RENDER_ERROR) {
        ret = -1;
    } else if (st != ADP_RENDER_OK) {
        ret = as_err_set(err, "%s cannot hold the gateway entry: %s", d->id,
                         out.reason.len ? out.reason.buf : "unrepresentable");
    } else if (d->config_format == ADP_FMT_TOML) {
        toml_value *root = toml_new(TOML_TABLE);
        toml_value *sec = toml_new(TOML_TABLE);
        toml_table_set(sec, SBX_GATEWAY_ENTRY, out.toml);
        out.toml = NULL;
        toml_table_set(root, d->mcp.location, sec);
        toml_emit(root, text);
        toml_free(root);
    } else {
        json_t *root = json_object();
        json_t *sec = json_object();
        json_object_set(sec, SBX_GATEWAY_ENTRY, out.json);
        json_object_set_new(root, d->mcp.location, sec);
        char *j = json_dumps(root, JSON_INDENT(2));
        json_decref(root);
        if (j) {
            sb_adds(text, j);
            sb_addc(text, '\n');
            explicit_bzero(j, strlen(j));
            free(j);
        } else {
            ret = as_err_set(err, "rendering the gateway entry");
        }
    }
    vec_free(&s.headers);
    adp_rendered_release(&out);
    return ret;
}

/* ---- the native-config injection (host runs) ----------------------------------------- */

struct inject_ctx {
    const struct adp_registry *reg;
    const struct adp_desc *d; /* the harness's adapter, or NULL */
    const char *scope;        /* --scope, or NULL */
    const char *manifest_dir; /* global --manifest-dir */
    int keep;                 /* --unprotected --keep: a `session start`, never auto-reverted */
    int injected;
};

/* Where the gateway entry goes: the adapter's project MCP file when it has
 * one (the harness starts at the project root), else its user file. */
static int inject_resolve(void *vctx, const char *project_root, strbuf *path, strbuf *scope,
                          strbuf *note, struct as_err *err)
{
    struct inject_ctx *ic = vctx;
    const struct adp_desc *d = ic->d;
    (void)note;
    int project = ic->scope ? strcmp(ic->scope, "project") == 0
                            : d->project_config != NULL && project_root != NULL;
    const char *rel = project ? d->project_config : d->config_path;
    if (project && !project_root)
        return as_err_set(err, "--scope project needs a project");
    if (!rel) {
        as_err_set(err, "%s has no %s MCP config to inject the gateway entry into", d->display,
                   project ? "project-scope" : "user-scope");
        as_err_hint(err, "pass --scope %s", project ? "global" : "project");
        return -1;
    }
    if (adp_expand_path(rel, project ? project_root : NULL, path, err) < 0)
        return -1;
    sb_adds(scope, project ? "project" : "global");
    return 0;
}

/* A TOML basic string. */
static void toml_str(strbuf *t, const char *s)
{
    sb_addc(t, '"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            sb_addf(t, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            sb_addf(t, "\\u%04x", *c);
        else
            sb_addc(t, (char)*c);
    }
    sb_addc(t, '"');
}

/* Runs inject/revert with their chatter captured: shown only on failure. */
static FILE *capture(char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(buf, len);
    return f ? f : stderr;
}

static void release_capture(FILE *f, char **buf, int show)
{
    if (f != stderr)
        fclose(f); /* sets *buf */
    if (show && *buf && (*buf)[0])
        fputs(*buf, stderr);
    free(*buf);
    *buf = NULL;
}

/* The MCP server names a native file lists, except skip (read-only; a
 * missing or unreadable file lists nothing). */
static void list_entries(const struct adp_desc *d, enum adp_format fmt, const char *path,
                         const char *skip, strbuf *names, size_t *n)
{
    strbuf text = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    struct onb_import im;
    memset(&im, 0, sizeof im);
    *n = 0;
    if (fs_exists(path) && fs_read_file(path, (size_t)16 << 20, 0, &text, &e) == 0 &&
        onb_read_servers(d, fmt, path, text.buf, text.len, path, false, &im, &e) == 0) {
        for (size_t i = 0; i < im.servers.n; i++) {
            if (skip && strcmp(im.servers.v[i].name, skip) == 0)
                continue;
            sb_addf(names, "%s%s", (*n)++ ? ", " : "", im.servers.v[i].name);
        }
    }
    onb_import_free(&im);
    sb_release_secure(&text);
}

/* MCP entries the harness can still start around the gateway during a
 * protected run: the other entries of the file we
 * injected into, and those of its user file. */
static void note_entries(const struct adp_desc *d, const char *path, enum adp_format fmt,
                         const char *skip, const char *what)
{
    strbuf names = SB_INIT, shown = SB_INIT;
    size_t n;
    list_entries(d, fmt, path, skip, &names, &n);
    if (n) {
        onb_display_path(path, &shown);
        fprintf(stderr,
                "note: %s %s also lists %zu MCP server(s) agentstack does not gate — "
                "reachable around the gateway during this run: %s\n",
                what, shown.buf, n, names.buf);
    }
    sb_release(&names);
    sb_release(&shown);
}

/* Protected: the harness's native MCP config holds exactly one entry for
 * the run, `agentstack-gateway` = <self> mcp --grant <grant file>, written
 * through the clean-at-rest session API: same lock, history and
 * ledger as `session start`, recorded with the run id and our pid. */
static int inject_gateway(void *vctx, const struct sbx_plan *p, struct as_err *err)
{
    struct inject_ctx *ic = vctx;
    const char *tsname = p->toolset ? p->toolset : "default";
    strbuf t = SB_INIT;
    sb_adds(&t, "version = 1\n\n[servers." SBX_GATEWAY_ENTRY "]\ntype = \"stdio\"\ncommand = ");
    toml_str(&t, p->inject_argv.v[0]);
    sb_adds(&t, "\nargs = [");
    for (size_t i = 1; i < p->inject_argv.n; i++) {
        if (i > 1)
            sb_adds(&t, ", ");
        toml_str(&t, p->inject_argv.v[i]);
    }
    sb_adds(&t, "]\ntargets = [");
    toml_str(&t, p->harness_id);
    sb_adds(&t, "]\n\n[toolsets.");
    toml_str(&t, tsname);
    sb_adds(&t, "]\nservers = [\"" SBX_GATEWAY_ENTRY "\"]\n\n[delivery]\nrender_locally = true\n"
                "\n[meta]\ngitignore = false\n");
    const char *mdir = json_string_value(json_object_get(p->grant, "manifest_dir"));
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT,
        .path = p->manifest_path,
        .data = t.buf,
        .len = t.len,
        .manifest_dir = mdir,
        .project_root = p->project_root,
    };
    struct manifest *m = manifest_load_bytes(&src, err);
    sb_release(&t);
    if (!m) {
        as_err_prefix(err, "the gateway entry does not render");
        return -1;
    }
    strvec targets = STRVEC_INIT;
    strvec_push(&targets, p->harness_id);
    char *op = xasprintf("run %s (protected, %s)", p->harness_id, p->run_id);
    char *home = xstrdup(p->home);
    char *buf;
    size_t len;
    FILE *out = capture(&buf, &len);
    struct adp_apply_opts o = {
        .m = m,
        .manifest_path = p->manifest_path,
        .project_scope = strcmp(p->inject_scope, "project") == 0,
        .project_root = p->project_root,
        .targets = &targets,
        .toolset = tsname,
        .no_gitignore = true,
        .operation = op,
        .home = home,
        .out = out,
    };
    int rc = adp_run_inject(ic->reg, &o, p->session_key, p->run_id, err);
    release_capture(out, &buf, rc != 0);
    free(op);
    free(home);
    strvec_clear(&targets);
    manifest_free(m);
    if (rc != 0)
        return -1;
    ic->injected = 1;
    int project = strcmp(p->inject_scope, "project") == 0;
    note_entries(ic->d, p->inject_path, project ? ic->d->project_format : ic->d->config_format,
                 SBX_GATEWAY_ENTRY, "the injected file");
    return 0;
}

/* --unprotected --toolset T: an inject of the toolset itself, as `use`
 * (its own trust gate applies: an untrusted bundle is never rendered). */
static int inject_toolset(void *vctx, const struct sbx_plan *p, struct as_err *err)
{
    struct inject_ctx *ic = vctx;
    struct bundle_paths bp = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    char *refusal = NULL, *op = NULL;
    struct adp_render_env renv = {0};
    int have_renv = 0, rc = -1;
    strvec targets = STRVEC_INIT;
    if (discover_project(ic->manifest_dir, NULL, &bp, err) < 0 || discover_require(&bp, err) < 0 ||
        manifest_snapshot_read(&bp, &snap, err) < 0 ||
        !(m = manifest_load_snapshot(&bp, &snap, err)) ||
        adp_trust_gate(&bp, &snap, m, &refusal, err) < 0)
        goto out;
    int project = !(ic->scope && strcmp(ic->scope, "global") == 0);
    if (adp_render_env_init(&renv, m, &bp, &snap, !project, refusal != NULL, err) < 0)
        goto out;
    have_renv = 1;
    if (ic->d)
        strvec_push(&targets, ic->d->id);
    op = xasprintf("run %s --toolset %s (%s)", p->harness_id, p->toolset, p->run_id);
    char *buf;
    size_t len;
    FILE *out = capture(&buf, &len);
    struct adp_apply_opts o = {
        .m = m,
        .manifest_path = bp.manifest,
        .project_scope = project,
        .project_root = bp.project_root,
        .targets = &targets,
        .toolset = p->toolset,
        .trust_refusal = refusal,
        .operation = op,
        .out = out,
    };
    adp_render_env_apply(&renv, &o);
    int r = ic->keep ? adp_session_start(ic->reg, &o, p->session_key, err)
                     : adp_run_inject(ic->reg, &o, p->session_key, p->run_id, err);
    release_capture(out, &buf, r != 0);
    if (r == 0) {
        ic->injected = 1;
        rc = 0;
    }
out:
    if (have_renv)
        adp_render_env_release(&renv);
    free(op);
    free(refusal);
    strvec_clear(&targets);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&bp);
    return rc;
}

static int revert(void *vctx, const struct sbx_plan *p, struct as_err *err)
{
    struct inject_ctx *ic = vctx;
    if (!ic->injected)
        return 0;
    char *buf;
    size_t len;
    FILE *out = capture(&buf, &len);
    int rc = adp_run_revert(p->session_key, out, err);
    release_capture(out, &buf, rc != 0);
    if (rc != 0) {
        as_err_prefix(err, "could not revert what the run injected");
        as_err_hint(err, "finish it with: agentstack session end");
        return -1;
    }
    ic->injected = 0;
    fprintf(stderr, "↩ reverted: %s's native config is back to its bytes before the run\n",
            p->harness_id);
    return 0;
}

static void note_user_entries(const struct adp_desc *d, const struct sbx_plan *p)
{
    if (!d || !d->has_mcp || !d->config_path || !p->inject_scope ||
        strcmp(p->inject_scope, "project") != 0)
        return;
    strbuf path = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (adp_expand_path(d->config_path, NULL, &path, &e) == 0)
        note_entries(d, path.buf, d->config_format, NULL, "its user config");
    sb_release(&path);
}

/* ---- the command ------------------------------------------------------------------------ */

struct run_opts {
    bool sandbox, lockdown, plan_only, locked, unprotected, keep;
    const char *prompt, *toolset, *name;
    int scope_choice;
    const char *scope;
    char **rest;
    int nrest;
};

#define CLI_ARGS struct run_opts
static const struct cli_option run_options[] = {
    {OPT_BOOL("locked", 0, locked,
              "the default: trust, lock and policy gates, the toolset frozen into a grant")},
    {OPT_BOOL("sandbox", 0, sandbox,
              "confined; egress through the auditing proxy, but the direct route stays open")},
    {OPT_BOOL("lockdown", 0, lockdown,
              "confined in its own network namespace: the proxy is the only route out")},
    {OPT_BOOL("unprotected", 0, unprotected, "on the host without the gates (advisory only)")},
    {OPT_BOOL("plan", 0, plan_only,
              "show trust state, mode, mounts, gates and the exact command; start nothing")},
    {OPT_STRING("toolset", 0, toolset, "T", "the toolset the run gets (default: the default)"),
     .alias = "profile", .flags = CLI_OPT_ONCE},
    {OPT_ENUM("scope", 0, scope_choice, cli_scope_choices,
              "host runs: the CLI's project or global config gets the gateway entry")},
    {OPT_BOOL("keep", 0, keep, "with --unprotected --toolset: leave the injected entry in place")},
    {OPT_STRING("prompt", 0, prompt, "TEXT",
                "run the CLI headless with this prompt (its adapter's headless args)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_run_spec = {
    .name = "run",
    .fn = cmd_run,
    .summary = "run a CLI gated (default), confined (--sandbox, --lockdown) or unprotected",
    .synopsis = CLI_LINES("run <cli-or-command> [--locked | --unprotected | --sandbox | "
                          "--lockdown]",
                          "run <cli-or-command> [--plan] [--toolset T | --profile T] "
                          "[--scope project|global] [--keep] [--prompt TEXT] [-- ARG...]"),
    .description =
        "Default (--locked): trust, lock and policy gates, the toolset frozen into a grant, the "
        "CLI's MCP config given the gateway entry for the run and reverted at exit.\n--plan "
        "shows trust state, mode, mounts, the gates and the exact command; nothing is started.\n"
        "--prompt runs the CLI headless (its adapter's headless args) under the same gates.\n"
        "Arguments for the CLI itself go after --. What each mode enforces, and what not: "
        "docs/enforcement.md.",
    .options = run_options,
    .examples = CLI_LINES("agentstack run claude", "agentstack run claude --sandbox --plan",
                          "agentstack run codex --lockdown -- --model o3"),
    .see_also = "runs report kill trust",
    .flags = CLI_KEEP_DASHDASH,
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct run_opts *o)
{
    int rc = cli_parse(&cmd_run_spec, &argc, argv, ctx, o);
    if (rc != CLI_CONTINUE)
        return rc;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!o->name)
            o->name = argv[i];
        else
            return cli_usage_error("run",
                                   "unexpected argument '%s' (put the command's "
                                   "arguments after --)",
                                   argv[i]);
    }
    if (i < argc)
        i++; /* the "--" */
    o->rest = argv + i;
    o->nrest = argc - i;
    if (!o->name) {
        if (o->nrest == 0)
            return cli_usage_error("run", "name a CLI or a command");
        o->name = o->rest[0];
        o->rest++;
        o->nrest--;
    }
    o->scope = cli_scope_name(o->scope_choice);
    if (o->toolset && !o->toolset[0])
        return cli_usage_error("run", "--toolset needs a name");
    return CLI_CONTINUE;
}

/* Dispatch refusals (first match). -1: go on. */
static int dispatch_refusal(const struct run_opts *o)
{
    if (o->locked && o->unprotected)
        return refusef("--locked and --unprotected contradict each other", NULL);
    if (o->prompt && (o->unprotected || o->sandbox || o->lockdown))
        return refusef("--prompt needs the protected run",
                       "a headless prompt is only supported under the gated host run");
    if (o->locked && (o->sandbox || o->lockdown))
        return refusef("--locked with --sandbox/--lockdown is not wired: the sandbox runs its "
                       "own gate",
                       NULL);
    if (o->unprotected && o->plan_only && !o->sandbox && !o->lockdown)
        return refusef("--plan needs a gated run mode", NULL);
    if (o->keep && !(o->unprotected && o->toolset && !o->sandbox && !o->lockdown))
        return refusef("--keep applies only to `run <cli> --unprotected --toolset T`",
                       "a protected run's grant and injection end with the run");
    if (o->scope && (o->sandbox || o->lockdown))
        return refusef("--scope applies to host runs", NULL);
    return -1;
}

static int exit_status(const char *what, int code, int sig)
{
    if (code >= 0)
        return code;
    if (sig > 0) {
        fprintf(stderr, "%s was killed by a signal (SIG%s)\n", what, sigabbrev_np(sig));
        return 128 + sig;
    }
    return 128 + 9;
}

static int run_sandbox(const struct sbx_plan *plan, int plan_only)
{
    struct as_err err = AS_ERR_INIT;
    if (plan->trust == SBX_TRUST_UNTRUSTED || plan->trust == SBX_TRUST_CHANGED)
        fprintf(stderr, "running an unreviewed bundle sandboxed: nothing from it is delivered "
                        "(no servers, skills or secrets)\n");
    if (plan_only) {
        /* A plan that could not run is not a plan: check the backend. */
        if (sbx_ns_probe(&err) < 0)
            return refuse(&err);
        sbx_plan_print(plan, stdout, 1);
        return EXIT_OK;
    }
    struct sbx_run_result res;
    if (sbx_run_execute(plan, stdout, &res, &err) < 0) {
        if (!res.launched)
            return refuse(&err);
        cli_error(&err);
        return EXIT_FAIL;
    }
    fflush(stdout);
    int rc;
    if (res.code == 0) {
        fprintf(stderr, "sandbox exited cleanly.\n");
        rc = 0;
    } else if (res.code > 0) {
        cli_errorf("sandbox exited with code %d", res.code);
        rc = res.code;
    } else if (res.sig > 0) {
        rc = exit_status("sandbox", -1, res.sig);
    } else {
        fprintf(stderr, "sandbox was killed by a signal (its init was killed)\n");
        rc = 128 + 9;
    }
    fprintf(stderr, "See what happened: `agentstack report %s`\n", plan->run_id);
    return rc;
}

static int run_host(const struct sbx_plan *plan, const struct run_opts *o, struct inject_ctx *ic)
{
    if (o->plan_only) {
        sbx_plan_print(plan, stdout, 1);
        return plan->blockers ? EXIT_FAIL : EXIT_OK;
    }
    if (plan->mode == SBX_MODE_HOST)
        note_user_entries(ic->d, plan);
    struct sbx_host_hooks hooks = {NULL, NULL, ic};
    if (plan->mode == SBX_MODE_HOST && plan->inject_path) {
        hooks.inject = inject_gateway;
        hooks.revert = revert;
    } else if (plan->mode == SBX_MODE_HOST_ADVISORY && plan->toolset) {
        hooks.inject = inject_toolset;
        hooks.revert = o->keep ? NULL : revert;
    }
    struct as_err err = AS_ERR_INIT;
    struct sbx_host_result res;
    /* Under --prompt stdout is the harness's answer alone. */
    int r = sbx_host_execute(plan, &hooks, plan->prompt_arg ? stderr : stdout, &res, &err);
    fflush(stdout);
    if (r < 0) {
        if (res.revert_failed)
            cli_error(&err);
        else
            refuse(&err);
        if (plan->mode == SBX_MODE_HOST && !res.revert_failed && access(plan->home, F_OK) == 0) {
            char *dir = xasprintf("%s/runs/%s", plan->home, plan->run_id);
            if (fs_is_dir(dir))
                fprintf(stderr, "See what happened: `agentstack report %s`\n", plan->run_id);
            free(dir);
        }
        return EXIT_FAIL;
    }
    if (res.revert_failed)
        cli_error(&err);
    if (o->keep && plan->toolset)
        fprintf(stderr, "the toolset stays applied (--keep) — end it with: agentstack session "
                        "end\n");
    int rc = exit_status(plan->harness_id, res.code, res.sig);
    fprintf(stderr, "See what happened: `agentstack report %s`\n", plan->run_id);
    return rc;
}

/* Whether the run needs the adapter registry. Parsing the 17 built-ins and
 * the drop-ins with libyaml is most of a plain command's start-up (issue 8),
 * so a name that is no adapter id skips it: no built-in of that id and no
 * drop-in file $AGENTSTACK_HOME/adapters/<name>.yaml (a drop-in's id must
 * match its file name, so existence is enough). */
static int needs_registry(const struct run_opts *o)
{
    const char *name = o->name;
    if (o->prompt || o->toolset || strcmp(name, "shtest") == 0)
        return 1;
    if (strchr(name, '/') || name[0] == '.' || name[0] == '\0')
        return 0;
    size_t n = strlen(name);
    for (size_t i = 0; i < adp_builtin_count; i++) {
        const char *f = adp_builtin_yaml[i].file;
        if (strncmp(f, name, n) == 0 && strcmp(f + n, ".yaml") == 0)
            return 1;
    }
    const char *ah = getenv("AGENTSTACK_HOME");
    const char *home = getenv("HOME");
    char *path;
    if (ah && ah[0])
        path = xasprintf("%s/adapters/%s.yaml", ah, name);
    else if (home && home[0])
        path = xasprintf("%s/.agentstack/adapters/%s.yaml", home, name);
    else
        return 0;
    int r = access(path, F_OK) == 0 || errno != ENOENT;
    free(path);
    return r;
}

int cmd_run(int argc, char **argv, struct cli_ctx *ctx)
{
    struct run_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse(argc, argv, ctx, &o);
    if (prc != CLI_CONTINUE)
        return prc;
    int drc = dispatch_refusal(&o);
    if (drc >= 0)
        return drc;
    int confined = o.sandbox || o.lockdown;

    struct as_err err = AS_ERR_INIT;
    struct adp_registry reg = {0};
    struct harness h = {NULL, SB_INIT, 0, NULL};
    struct sbx_plan *plan = NULL;
    strbuf self = SB_INIT;
    const char **args = NULL;
    int rc = EXIT_FAIL;
    if (needs_registry(&o)) {
        if (adp_registry_load(&reg, true, &err) < 0) {
            rc = refuse(&err);
            goto out;
        }
        for (size_t k = 0; k < reg.warnings.n; k++)
            term_fprintf(stderr, "warning: %s\n", reg.warnings.v[k]);
    }
    if (resolve_harness(&reg, o.name, &h, &err) < 0) {
        rc = refuse(&err);
        goto out;
    }
    if (!o.plan_only) {
        /* Finish the revert of runs whose launcher died. */
        size_t n = 0;
        struct as_err re = AS_ERR_INIT;
        char *buf;
        size_t len;
        FILE *out = capture(&buf, &len);
        int r = adp_run_recover(out, &n, &re);
        release_capture(out, &buf, r != 0 || n > 0);
        if (r != 0) {
            cli_error(&re);
            as_err_set(&err, "an earlier run could not be reverted; refusing to start over it");
            as_err_hint(&err, "agentstack session list, then: agentstack session end");
            rc = refuse(&err);
            goto out;
        }
    }
    int prompt_arg = 0;
    if (o.prompt) {
        /* The adapter's headless argv, the prompt one whole
         * element (never split, never a shell word), nothing after --. */
        if (o.nrest > 0) {
            rc = refusef("--prompt takes no arguments after --",
                         "the headless argv comes from the adapter's headless.args");
            goto out;
        }
        if (!h.d || !h.d->headless_args.n) {
            cli_errorf("%s has no headless mode: --prompt needs the adapter's headless.args", h.id);
            fprintf(stderr, "why: only adapters that declare how to pass a prompt "
                            "(e.g. claude-code, codex) can run one; run it interactively\n");
            fprintf(stderr, "%s\n", NOTHING);
            rc = EXIT_FAIL;
            goto out;
        }
        const strvec *ha = &h.d->headless_args;
        args = xcalloc(ha->n + 2, sizeof *args);
        size_t k = 0;
        for (size_t j = 0; j < ha->n; j++) {
            if (!prompt_arg && !strcmp(ha->v[j], "{prompt}")) {
                prompt_arg = (int)k + 1;
                args[k++] = o.prompt;
            } else {
                args[k++] = ha->v[j];
            }
        }
        if (!prompt_arg) {
            prompt_arg = (int)k + 1;
            args[k++] = o.prompt;
        }
    } else {
        args = xcalloc((size_t)o.nrest + 1, sizeof *args);
        for (int k = 0; k < o.nrest; k++)
            args[k] = o.rest[k];
    }
    /* Our own path serves the gateway: host runs, and confined runs whose
     * harness has an MCP mapping to route (a confined run without one never
     * reads it, and the PATH walk is a dozen system calls of its start). */
    int wants_self = !confined || (h.d && h.d->has_mcp);
    if (wants_self && adp_self_path(&self, &err) < 0) {
        sb_reset(&self); /* the grant-handoff gate (host) or the routing note (confined) */
        err = (struct as_err)AS_ERR_INIT;
    }
    struct inject_ctx ic = {&reg, h.d, o.scope, ctx->manifest_dir, o.keep, 0};
    struct sbx_plan_request rq = {
        .mode = o.lockdown      ? SBX_MODE_LOCKDOWN
                : o.sandbox     ? SBX_MODE_SANDBOX
                : o.unprotected ? SBX_MODE_HOST_ADVISORY
                                : SBX_MODE_HOST,
        .harness_id = h.id,
        .harness_bin = h.bin.buf,
        .harness_has_mcp = h.has_mcp,
        .args = args,
        .prompt_arg = prompt_arg,
        .manifest_dir = ctx->manifest_dir,
        .toolset = o.toolset,
        .harness_display = h.d ? h.d->display : NULL,
        .harness_for = h.d ? h.d->id : h.id,
        .self_bin = self.len ? self.buf : NULL,
        .inject_resolve = h.d && h.d->has_mcp ? inject_resolve : NULL,
        .inject_ctx = &ic,
        .gateway_config = confined && h.d && h.d->has_mcp ? gateway_config : NULL,
        .gateway_ctx = (void *)h.d,
        .project_mcp_rel = confined && h.d && h.d->has_mcp ? h.d->project_config : NULL,
        .project_mcp_empty = !h.d                                  ? NULL
                             : h.d->project_format == ADP_FMT_TOML ? ""
                                                                   : "{}\n",
    };
    if (sbx_plan_build(&rq, &plan, &err) < 0) {
        rc = refuse(&err);
        goto out;
    }
    for (size_t k = 0; k < plan->notes.n; k++)
        fprintf(stderr, "%s\n", plan->notes.v[k]);
    rc = confined ? run_sandbox(plan, o.plan_only) : run_host(plan, &o, &ic);
out:
    sbx_plan_free(plan);
    free(args);
    free(h.id);
    sb_release(&h.bin);
    sb_release(&self);
    adp_registry_free(&reg);
    return rc;
}
