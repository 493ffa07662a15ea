/*
 * agentstack policy status|explain|test|ruleset|preset — the machine floor
 * and the project's requested policy, as the enforcers see them.
 *
 *   status            doctor's "Machine policy" line: unconfigured, blocked,
 *                     open, restrictive or mixed, and why
 *   explain <server>  the rows `explain` shows: each key that governs the
 *                     server, per layer (machine rows cannot be loosened)
 *   test <kind> ...   one decision through the compiled ruleset, exit 0/1
 *   ruleset           the compiled ruleset's wire form (JSON)
 *   preset [<name>]   preview replacing the machine file's [policy.*] tables
 *                     with a preset; --write applies it
 *
 * The machine layer is loaded through pol_machine_load, the same loader every
 * enforcement path uses, so a broken machine file refuses here as it does
 * everywhere.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "base/toml.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "policy/policy.h"

int cmd_policy(int argc, char **argv, struct cli_ctx *ctx);

struct policy_args {
    bool json, write;
    long port;
};

static int do_status(int argc, char **argv, struct cli_ctx *ctx);
static int do_explain(int argc, char **argv, struct cli_ctx *ctx);
static int do_test(int argc, char **argv, struct cli_ctx *ctx);
static int do_ruleset(int argc, char **argv, struct cli_ctx *ctx);
static int do_preset(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct policy_args
static const struct cli_option json_options[] = {
    {OPT_BOOL("json", 0, json, "one JSON document for scripts")},
    {OPT_END},
};
static const struct cli_option test_options[] = {
    {OPT_INT("port", 0, port, "N", 1, 65535, "with egress: the port asked for (default: any)")},
    {OPT_END},
};
static const struct cli_option ruleset_options[] = {
    {OPT_BOOL("json", 0, json, "accepted: the ruleset is JSON already"), .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
static const struct cli_option preset_options[] = {
    {OPT_BOOL("write", 0, write, "replace the machine file's [policy.*] tables (default: diff)")},
    {OPT_END},
};
#undef CLI_ARGS

static const struct cli_spec policy_status_spec = {
    .name = "policy status",
    .fn = do_status,
    .summary =
        "the machine policy's state (unconfigured, blocked, open, restrictive, mixed) and why",
    .synopsis = CLI_LINES("policy status [--json]"),
    .options = json_options,
};
static const struct cli_spec policy_explain_spec = {
    .name = "policy explain",
    .fn = do_explain,
    .summary = "each key that governs a server, per layer",
    .synopsis = CLI_LINES("policy explain <server> [--json]"),
    .description = "Machine rows cannot be loosened by the project.",
    .options = json_options,
    .examples = CLI_LINES("agentstack policy explain github"),
};
static const struct cli_spec policy_test_spec = {
    .name = "policy test",
    .fn = do_test,
    .summary = "one decision through the compiled ruleset (exit 0 allowed, 1 refused)",
    .synopsis = CLI_LINES("policy test tool|egress|secret <server> <subject> [--port N]",
                          "policy test path <path>", "policy test workspace"),
    .options = test_options,
    .examples = CLI_LINES("agentstack policy test egress github api.github.com --port 443",
                          "agentstack policy test path ~/.ssh/id_ed25519"),
};
static const struct cli_spec policy_ruleset_spec = {
    .name = "policy ruleset",
    .fn = do_ruleset,
    .summary = "the compiled ruleset's wire form (JSON)",
    .synopsis = CLI_LINES("policy ruleset"),
    .options = ruleset_options,
};
static const struct cli_spec policy_preset_spec = {
    .name = "policy preset",
    .fn = do_preset,
    .summary = "preview (or --write) a machine policy preset",
    .synopsis =
        CLI_LINES("policy preset [<name> [--write]]  (developer compatible locked-down ci)"),
    .description = "Without a name, lists the presets. The result must load as a machine file "
                   "before it replaces the old one.",
    .options = preset_options,
    .examples = CLI_LINES("agentstack policy preset", "agentstack policy preset ci --write"),
};

const struct cli_spec cmd_policy_spec = {
    .name = "policy",
    .fn = cmd_policy,
    .summary = "machine floor + project policy: status, explain, test, presets",
    .subs = (const struct cli_spec *const[]){&policy_status_spec, &policy_explain_spec,
                                             &policy_test_spec, &policy_ruleset_spec,
                                             &policy_preset_spec, NULL},
    .description = "The machine layer loads through the loader every enforcement path uses, so "
                   "a broken machine file refuses here as it does everywhere.",
    .see_also = "doctor run",
};

#define MACHINE_MAX (8u << 20)

/* ---- loading ------------------------------------------------------------ */

struct layers {
    strbuf mpath;
    enum pol_machine_state mstate;
    struct pol_layer *machine;
    struct as_err merr;
    struct pol_layer *project; /* NULL when no project manifest is found */
    char *project_root;
};

static void layers_release(struct layers *l)
{
    sb_release(&l->mpath);
    pol_layer_free(l->machine);
    pol_layer_free(l->project);
    free(l->project_root);
}

/* Loads the machine layer (never fails: a broken file is state BLOCKED). */
static int load_machine(struct layers *l, struct as_err *err)
{
    memset(l, 0, sizeof *l);
    sb_init(&l->mpath, 0);
    if (pol_machine_path(&l->mpath, err) < 0)
        return -1;
    l->machine = pol_machine_load(l->mpath.buf, &l->mstate, &l->merr);
    return 0;
}

/* Loads the project's [policy] when a manifest is found here (or at
 * --manifest-dir). Absent is not an error; a broken manifest is. */
static int load_project(struct layers *l, struct cli_ctx *ctx, struct as_err *err)
{
    struct bundle_paths p;
    memset(&p, 0, sizeof p);
    if (discover_project(ctx->manifest_dir, NULL, &p, err) < 0)
        return -1;
    int rc = 0;
    if (p.found) {
        struct manifest *m = manifest_load(&p, err);
        if (!m) {
            rc = -1;
        } else {
            l->project = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, err);
            rc = l->project ? 0 : -1;
            l->project_root = xstrdup(p.project_root);
            manifest_free(m);
        }
    }
    bundle_paths_free(&p);
    return rc;
}

/* Refuses (prints the error, returns 1) when the machine file is broken. */
static int refuse_blocked(const struct layers *l)
{
    if (l->mstate != POL_BLOCKED)
        return 0;
    cli_error(&l->merr);
    return 1;
}

static const char *state_word(const struct layers *l, strbuf *why)
{
    if (l->mstate == POL_UNCONFIGURED) {
        sb_addf(why, "no %s; each project's own [policy] applies alone", l->mpath.buf);
        return "unconfigured";
    }
    if (l->mstate == POL_BLOCKED) {
        char buf[4096];
        sb_adds(why, as_err_str(&l->merr, buf, sizeof buf));
        return "blocked";
    }
    return pol_machine_word(l->machine, why);
}

/* ---- status ------------------------------------------------------------- */

static int do_status(int argc, char **argv, struct cli_ctx *ctx)
{
    struct policy_args a = {0};
    int rc = cli_parse(&policy_status_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&policy_status_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    int json = a.json;
    struct layers l;
    struct as_err err = AS_ERR_INIT;
    if (load_machine(&l, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    strbuf why = SB_INIT;
    const char *word = state_word(&l, &why);
    strvec warn = STRVEC_INIT;
    if (l.machine)
        pol_machine_lint(l.machine, &warn);
    if (json) {
        json_t *o = json_object(), *w = json_array();
        static const char *const states[] = {"unconfigured", "current", "blocked"};
        json_object_set_new(o, "state", json_string(states[l.mstate]));
        json_object_set_new(o, "word", json_string(word));
        json_object_set_new(o, "why", json_string(why.buf));
        json_object_set_new(o, "path", json_string(l.mpath.buf));
        for (size_t i = 0; i < warn.n; i++)
            json_array_append_new(w, json_string(warn.v[i]));
        json_object_set_new(o, "warnings", w);
        json_t *root = json_object();
        json_object_set_new(root, "machine_policy", o);
        char *s = json_dumps(root, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(root);
    } else {
        printf("Machine policy\n  %s — %s\n", word, why.buf);
        if (l.mstate == POL_CURRENT)
            printf("  file: %s\n", l.mpath.buf);
        if (l.mstate == POL_UNCONFIGURED)
            printf("  try: agentstack policy preset developer\n");
        for (size_t i = 0; i < warn.n; i++)
            printf("  %swarning:%s %s\n", term_color(1, TERM_YELLOW), term_color(1, TERM_RESET),
                   warn.v[i]);
    }
    rc = EXIT_OK;
    if (l.mstate == POL_BLOCKED) {
        cli_error(&l.merr);
        rc = EXIT_FAIL;
    }
    strvec_clear(&warn);
    sb_release(&why);
    layers_release(&l);
    return rc;
}

/* ---- explain ------------------------------------------------------------ */

static json_t *keys_json(const struct pol_layer *l, enum pol_dim dim, const char *server)
{
    json_t *o = json_object();
    for (size_t i = 0; l && i < l->keyed[dim].keys.n; i++) {
        const struct pol_key *k = &l->keyed[dim].keys.v[i];
        if (strcmp(k->name, "*") != 0 && (!server || strcmp(k->name, server) != 0))
            continue;
        json_t *a = json_array();
        for (size_t r = 0; r < k->rules.n; r++)
            json_array_append_new(a, json_string(k->rules.v[r].text));
        json_object_set_new(o, k->name, a);
    }
    return o;
}

static json_t *layer_json(const struct pol_layer *l, const char *server)
{
    json_t *o = json_object();
    json_object_set_new(o, "tools", keys_json(l, POL_TOOLS, server));
    json_object_set_new(o, "egress", keys_json(l, POL_EGRESS, server));
    json_object_set_new(o, "secrets", keys_json(l, POL_SECRETS, server));
    return o;
}

static int do_explain(int argc, char **argv, struct cli_ctx *ctx)
{
    struct policy_args a = {0};
    int rc = cli_parse(&policy_explain_spec, &argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (argc > 2)
        return cli_usage_error("policy explain", "policy explain takes one server name");
    if (argc < 2)
        return cli_usage_error("policy explain", "policy explain needs a server name");
    const char *server = argv[1];
    int json = a.json;
    struct layers l;
    struct as_err err = AS_ERR_INIT;
    if (load_machine(&l, &err) < 0 || load_project(&l, ctx, &err) < 0) {
        cli_error(&err);
        layers_release(&l);
        return EXIT_FAIL;
    }
    strbuf why = SB_INIT;
    const char *word = state_word(&l, &why);
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "server", json_string(server));
        json_object_set_new(root, "policy", layer_json(l.project, server));
        json_object_set_new(root, "machine", layer_json(l.machine, server));
        json_t *mp = json_object();
        json_object_set_new(mp, "word", json_string(word));
        json_object_set_new(mp, "why", json_string(why.buf));
        json_object_set_new(root, "machine_policy", mp);
        bool m_iso = l.machine && l.machine->isolation == POL_ISO_CONFINED;
        bool p_iso = l.project && l.project->isolation == POL_ISO_CONFINED;
        json_t *iso = json_object();
        json_object_set_new(iso, "servers", json_string(m_iso || p_iso ? "confined" : "host"));
        json_object_set_new(iso, "by",
                            m_iso   ? json_string("machine")
                            : p_iso ? json_string("project")
                                    : json_null());
        json_object_set_new(root, "isolation", iso);
        char *s = json_dumps(root, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(root);
    } else {
        strbuf rows = SB_INIT;
        pol_explain_rows(l.machine, l.project, server, &rows);
        printf("# %s — policy\n", server);
        if (!rows.len)
            printf("  %-26sno [policy.*] rule governs '%s' (allowed by default)\n", "Policy",
                   server);
        fputs(rows.buf, stdout);
        sb_reset(&rows);
        pol_isolation_row(l.machine, l.project, &rows);
        fputs(rows.buf, stdout);
        printf("  %-26s%s — %s\n", "Machine policy status", word, why.buf);
        if (!l.project)
            printf("  (no project manifest here: only the machine layer is shown)\n");
        sb_release(&rows);
    }
    rc = refuse_blocked(&l) ? EXIT_FAIL : EXIT_OK;
    sb_release(&why);
    layers_release(&l);
    return rc;
}

/* ---- test and ruleset --------------------------------------------------- */

static struct pol_ruleset *compile_here(struct layers *l, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    if (load_machine(l, &err) < 0 || load_project(l, ctx, &err) < 0) {
        cli_error(&err);
        return NULL;
    }
    if (refuse_blocked(l))
        return NULL;
    struct pol_ruleset *rs = pol_compile(l->machine, l->project, getenv("HOME"), &err);
    if (!rs)
        cli_error(&err);
    return rs;
}

static int do_test(int argc, char **argv, struct cli_ctx *ctx)
{
    static const char *const usage =
        "policy test tool|egress|secret <server> <subject> [--port N], policy test path <path>, "
        "or policy test workspace";
    struct policy_args a = {0};
    int prc = cli_parse(&policy_test_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc < 2 || argc > 5)
        return cli_usage_error("policy test", "usage: %s", usage);
    const char *const *pos = (const char *const *)argv + 1;
    int npos = argc - 1;
    unsigned port = (unsigned)a.port;
    enum pol_dim dim;
    int need;
    if (strcmp(pos[0], "tool") == 0)
        dim = POL_TOOLS, need = 3;
    else if (strcmp(pos[0], "egress") == 0)
        dim = POL_EGRESS, need = 3;
    else if (strcmp(pos[0], "secret") == 0)
        dim = POL_SECRETS, need = 3;
    else if (strcmp(pos[0], "path") == 0)
        dim = POL_FS_DENY, need = 2;
    else if (strcmp(pos[0], "workspace") == 0)
        dim = POL_FS_WRITE, need = 1;
    else
        return cli_usage_error("policy test", "unknown kind '%s' (%s)", pos[0], usage);
    if (npos != need)
        return cli_usage_error("policy test", "usage: %s", usage);
    struct layers l;
    struct pol_ruleset *rs = compile_here(&l, ctx);
    if (!rs) {
        layers_release(&l);
        return EXIT_FAIL;
    }
    struct pol_decision d;
    int ok;
    strbuf what = SB_INIT;
    if (dim == POL_FS_WRITE) {
        ok = pol_fs_workspace_writable(rs, &d);
        sb_adds(&what, ok ? "workspace read-write in the sandbox"
                          : "workspace read-only in the "
                            "sandbox");
    } else if (dim == POL_FS_DENY) {
        char cwd[4096];
        const char *ws = l.project_root ? l.project_root : getcwd(cwd, sizeof cwd);
        strvec sp = STRVEC_INIT;
        pol_fs_spellings(pos[1], ws, getenv("HOME"), !strpbrk(pos[1], " \t"), &sp);
        ok = pol_fs_allowed(rs, (const char *const *)sp.v, sp.n, &d);
        sb_addf(&what, "path %s", pos[1]);
        strvec_clear(&sp);
    } else {
        ok = pol_decide(rs, dim, pos[1], pos[2], port, &d);
        static const char *const kind[] = {"tool", "egress", "secret"};
        if (port)
            sb_addf(&what, "%s %s → %s:%u", kind[dim], pos[1], pos[2], port);
        else
            sb_addf(&what, "%s %s → %s", kind[dim], pos[1], pos[2]);
    }
    if (ok) {
        printf("ALLOW %s\n", what.buf);
        enum pol_by by = POL_BY_NONE;
        const char *near = dim == POL_TOOLS ? pol_tool_near_miss(rs, pos[1], pos[2], &by) : NULL;
        if (near)
            term_fprintf(stderr,
                         "warning: %s is allowed, but the %s deny \"!%s\" would match it if '-' "
                         "and '.' were '_' — globs match those bytes literally; add a deny "
                         "for this spelling too (docs/policy.md \"Globs\")\n",
                         pos[2], by == POL_BY_MACHINE ? "machine" : "project", near);
    } else {
        strbuf t = SB_INIT;
        pol_decision_text(&d, &t);
        printf("DENY  %s — %s\n", what.buf, t.buf);
        sb_release(&t);
    }
    sb_release(&what);
    pol_ruleset_free(rs);
    layers_release(&l);
    return ok ? EXIT_OK : EXIT_FAIL;
}

static int do_ruleset(int argc, char **argv, struct cli_ctx *ctx)
{
    struct policy_args a = {0};
    int prc = cli_parse(&policy_ruleset_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&policy_ruleset_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    struct layers l;
    struct pol_ruleset *rs = compile_here(&l, ctx);
    if (!rs) {
        layers_release(&l);
        return EXIT_FAIL;
    }
    strbuf out = SB_INIT;
    pol_ruleset_to_json(rs, &out);
    puts(out.buf);
    sb_release(&out);
    pol_ruleset_free(rs);
    layers_release(&l);
    return EXIT_OK;
}

/* ---- preset ------------------------------------------------------------- */

struct line {
    const char *p;
    size_t n;
};

static size_t split_lines(const char *s, size_t len, struct line **out)
{
    size_t cap = 16, n = 0;
    *out = xmalloc(cap * sizeof **out);
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && s[j] != '\n')
            j++;
        if (n == cap)
            *out = xrealloc(*out, (cap *= 2) * sizeof **out);
        (*out)[n++] = (struct line){s + i, j - i};
        i = j + 1;
    }
    return n;
}

static int line_eq(const struct line *a, const struct line *b)
{
    return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

static void emit(char op, const struct line *l)
{
    enum term_code c = op == '-' ? TERM_RED : op == '+' ? TERM_GREEN : TERM_DIM;
    printf("%s%c%.*s%s\n", term_color(1, c), op, (int)l->n, l->p, term_color(1, TERM_RESET));
}

/* A line diff (LCS over the differing middle) with two lines of context. */
static void print_diff(const char *a, size_t alen, const char *b, size_t blen)
{
    struct line *la, *lb;
    size_t na = split_lines(a, alen, &la), nb = split_lines(b, blen, &lb);
    size_t pre = 0, suf = 0;
    while (pre < na && pre < nb && line_eq(&la[pre], &lb[pre]))
        pre++;
    while (suf < na - pre && suf < nb - pre && line_eq(&la[na - 1 - suf], &lb[nb - 1 - suf]))
        suf++;
    size_t ma = na - pre - suf, mb = nb - pre - suf;
    printf("%s@@ line %zu @@%s\n", term_color(1, TERM_CYAN), pre > 2 ? pre - 1 : 1,
           term_color(1, TERM_RESET));
    for (size_t i = pre > 2 ? pre - 2 : 0; i < pre; i++)
        emit(' ', &la[i]);
    if ((unsigned long long)(ma + 1) * (mb + 1) <= 4000000ULL) {
        uint32_t *t = xcalloc((ma + 1) * (mb + 1), sizeof *t);
#define T(i, j) t[(i) * (mb + 1) + (j)]
        for (size_t i = ma; i-- > 0;)
            for (size_t j = mb; j-- > 0;)
                T(i, j) = line_eq(&la[pre + i], &lb[pre + j])
                              ? T(i + 1, j + 1) + 1
                              : (T(i + 1, j) > T(i, j + 1) ? T(i + 1, j) : T(i, j + 1));
        size_t i = 0, j = 0;
        while (i < ma || j < mb) {
            if (i < ma && j < mb && line_eq(&la[pre + i], &lb[pre + j])) {
                emit(' ', &la[pre + i]);
                i++, j++;
            } else if (i < ma && (j == mb || T(i + 1, j) >= T(i, j + 1))) {
                emit('-', &la[pre + i++]);
            } else {
                emit('+', &lb[pre + j++]);
            }
        }
#undef T
        free(t);
    } else {
        for (size_t i = 0; i < ma; i++)
            emit('-', &la[pre + i]);
        for (size_t j = 0; j < mb; j++)
            emit('+', &lb[pre + j]);
    }
    for (size_t i = na - suf, k = 0; i < na && k < 2; i++, k++)
        emit(' ', &la[i]);
    free(la);
    free(lb);
}

static int do_preset(int argc, char **argv, struct cli_ctx *ctx)
{
    struct policy_args a = {0};
    int prc = cli_parse(&policy_preset_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc > 2)
        return cli_usage_error("policy preset", "policy preset takes one preset name");
    const char *name = argc > 1 ? argv[1] : NULL;
    int write = a.write;
    if (!name) {
        if (write)
            return cli_usage_error("policy preset", "name the preset to write");
        printf("Machine policy presets (agentstack policy preset <name> [--write]):\n");
        for (size_t i = 0; i < pol_npresets; i++)
            printf("  %-12s %s\n", pol_presets[i].name, pol_presets[i].summary);
        return EXIT_OK;
    }
    const struct pol_preset *p = pol_preset_find(name);
    if (!p) {
        const char *names[8];
        for (size_t i = 0; i < pol_npresets && i < 8; i++)
            names[i] = pol_presets[i].name;
        const char *best = cli_did_you_mean(name, names, pol_npresets);
        cli_errorf("unknown preset '%s'%s%s%s (developer, compatible, locked-down, ci)", name,
                   best ? " — did you mean '" : "", best ? best : "", best ? "'?" : "");
        return EXIT_USAGE;
    }
    struct as_err err = AS_ERR_INIT;
    strbuf path = SB_INIT, dir = SB_INIT, old = SB_INIT, neu = SB_INIT;
    struct as_lock lk = {-1};
    int rc = EXIT_FAIL;
    if (pol_machine_path(&path, &err) < 0)
        goto out;
    sb_adds(&dir, path.buf);
    *strrchr(dir.buf, '/') = '\0';
    if (write) {
        /* one writer at a time under $AGENTSTACK_HOME, read inside the lock */
        if (fs_mkdirs(dir.buf, 0700, &err) < 0 ||
            lock_acquire(&lk, dir.buf, LOCK_WAIT_MS, &err) < 0)
            goto out;
    }
    int existed = fs_exists(path.buf);
    if (existed && fs_read_file(path.buf, MACHINE_MAX, 0, &old, &err) < 0)
        goto out;
    if (pol_preset_apply(p, path.buf, existed ? old.buf : NULL, old.len, &neu, &err) < 0)
        goto out;
    /* the result must load as a machine file before it may replace the old one */
    struct pol_layer *check = pol_machine_parse(path.buf, neu.buf, neu.len, &err);
    if (!check) {
        /* name the problem where it is in the file on disk, when it is there already */
        struct pol_layer *was = pol_machine_parse(path.buf, old.buf, old.len, &err);
        pol_layer_free(was);
        as_err_prefix(&err, "the machine file is broken outside the tables a preset replaces");
        goto out;
    }
    strbuf why = SB_INIT;
    const char *word = pol_machine_word(check, &why);
    pol_layer_free(check);
    printf("Preset '%s' — %s\n", p->name, p->summary);
    if (existed && old.len == neu.len && memcmp(old.buf, neu.buf, old.len) == 0) {
        printf("✓ nothing to write — %s already holds preset '%s'\n", path.buf, p->name);
        sb_release(&why);
        rc = EXIT_OK;
        goto out;
    }
    printf("--- %s%s\n+++ %s (preset %s)\n", path.buf, existed ? "" : " (absent)", path.buf,
           p->name);
    print_diff(old.buf, old.len, neu.buf, neu.len);
    if (!write) {
        printf("preview only — nothing written; apply with: "
               "agentstack policy preset %s --write\n",
               p->name);
        sb_release(&why);
        rc = EXIT_OK;
        goto out;
    }
    struct fs_write_opts o = {.mode = 0600, .symlinks = FS_SYMLINK_FOLLOW};
    if (fs_write_atomic(path.buf, neu.buf, neu.len, &o, &err) < 0) {
        sb_release(&why);
        goto out;
    }
    printf("%s✓%s wrote preset '%s' to %s\nMachine policy: %s — %s\n", term_color(1, TERM_GREEN),
           term_color(1, TERM_RESET), p->name, path.buf, word, why.buf);
    sb_release(&why);
    rc = EXIT_OK;
out:
    if (rc != EXIT_OK)
        cli_error(&err);
    if (lk.fd >= 0)
        lock_release(&lk);
    sb_release(&path);
    sb_release(&dir);
    sb_release(&old);
    sb_release(&neu);
    return rc;
}

int cmd_policy(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_policy_spec, argc, argv, ctx);
}
