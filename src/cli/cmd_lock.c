/*
 * agentstack lock [--write] [--toolset N] [--update [NAME]] — pin every
 * capability's bytes (docs/formats.md). The preview computes the new lock in
 * memory and writes nothing in the project (git sources may be fetched into
 * the machine home's store, and it says so); --write holds the writer lock
 * from the first read to the atomic replace, writes nothing when the bytes
 * are unchanged, and leaves the old lock on any failure. --update moves git
 * sources (all, or the NAMEd ones) off their locked commit to the manifest rev
 * (else the upstream head) and needs --write. Library names resolve through
 * every linked source (docs/library.md), qualified ones in their source only, and
 * pin under their bare name.
 *
 * agentstack lock --upgrade (<pack> | --all) [--with-instructions] [--yes]
 * [--write] — the older spelling of `upgrade <pack>`, kept: re-resolve
 * installed packs from their [packs.<n>] ledgers; --all goes on past a
 * failed pack and ends "N packs failed to upgrade".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/adapters.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "base/xalloc.h"
#include "base/term.h"
#include "bundle/consent.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "cli/json_out.h"
#include "library/library.h"
#include "library/pack.h"
#include "trust/trust.h"

static size_t rows(const struct lockfile *l)
{
    size_t n = l->skills.n + l->servers.n + l->instructions.n + l->executables.n + l->settings.n +
               l->extensions.n + l->workflows.n;
    for (size_t i = 0; i < l->instructions.n; i++)
        n += l->instructions.v[i].variants.n;
    return n;
}

static void summary(const struct lockfile *l, strbuf *out)
{
    size_t variants = 0;
    for (size_t i = 0; i < l->instructions.n; i++)
        variants += l->instructions.v[i].variants.n;
    const struct {
        size_t n;
        const char *what;
    } parts[] = {{l->skills.n, "skill"},
                 {l->servers.n, "server"},
                 {l->instructions.n, "instruction"},
                 {variants, "variant"},
                 {l->executables.n, "executable"},
                 {l->extensions.n, "extension"},
                 {l->workflows.n, "workflow"},
                 {l->settings.n, "setting"}};
    bool first = true;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (!parts[i].n)
            continue;
        sb_addf(out, "%s%zu %s%s", first ? "" : ", ", parts[i].n, parts[i].what,
                parts[i].n == 1 ? "" : "s");
        first = false;
    }
    if (first)
        sb_adds(out, "nothing");
}

/* lock --json: every change lock_diff finds, also as {op, kind, name, old,
 * new} (docs/json.md); NULL when not asked for. */
static json_t *json_changes;

static void json_change(const char *op, const char *kind, const char *name, const char *oldv,
                        const char *newv)
{
    if (json_changes)
        json_array_append_new(json_changes,
                              json_pack("{s:s,s:s,s:s,s:s?,s:s?}", "op", op, "kind", kind, "name",
                                        name, "old", oldv, "new", newv));
}

/* One line per row that differs between the old and the new lock. */
static void diff_row(strbuf *out, const char *kind, const char *name, const char *oldc,
                     const char *newc, size_t *changes)
{
    if (!oldc && !newc)
        return; /* neither lock has the row */
    if (oldc && newc && strcmp(oldc, newc) == 0)
        return;
    (*changes)++;
    json_change(!oldc ? "add" : !newc ? "remove" : "change", kind, name, oldc, newc);
    sb_addf(out, "  %c %s ", !oldc ? '+' : !newc ? '-' : '~', kind);
    term_sanitize(out, name, strlen(name));
    if (!oldc)
        sb_addf(out, "  %.12s\n", newc);
    else if (!newc)
        sb_addf(out, "  (was %.12s)\n", oldc);
    else
        sb_addf(out, "  %.12s → %.12s\n", oldc, newc);
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* "~ <kind> <name>  <what>": a row whose bytes match but whose identity moved. */
static void diff_identity(strbuf *out, const char *kind, const char *name, const char *what,
                          size_t *changes)
{
    (*changes)++;
    json_change("move", kind, name, NULL, what);
    sb_addf(out, "  ~ %s ", kind);
    term_sanitize(out, name, strlen(name));
    sb_adds(out, "  ");
    term_sanitize(out, what, strlen(what));
    sb_addc(out, '\n');
}

static void join_roles(strbuf *out, const strvec *r)
{
    for (size_t i = 0; i < r->n; i++)
        sb_addf(out, "%s%s", i ? "," : "", r->v[i]);
}

static void diff_ext(const struct lockfile *o, const struct lockfile *n, strbuf *out, size_t *c)
{
    for (size_t i = 0; i < n->extensions.n; i++) {
        const struct lock_extension *e = &n->extensions.v[i];
        const struct lock_extension *x = o ? lockfile_extension(o, e->name) : NULL;
        diff_row(out, "extension", e->name, x ? x->checksum : NULL, e->checksum, c);
        if (x && strcmp(x->checksum, e->checksum) == 0 && !same(x->target, e->target)) {
            char *w = xasprintf("target %s → %s", x->target ? x->target : "none",
                                e->target ? e->target : "none");
            diff_identity(out, "extension", e->name, w, c);
            free(w);
        }
    }
    for (size_t i = 0; o && i < o->extensions.n; i++)
        if (!lockfile_extension(n, o->extensions.v[i].name))
            diff_row(out, "extension", o->extensions.v[i].name, o->extensions.v[i].checksum, NULL,
                     c);
    for (size_t i = 0; i < n->workflows.n; i++) {
        const struct lock_workflow *w = &n->workflows.v[i];
        const struct lock_workflow *x = o ? lockfile_workflow(o, w->name) : NULL;
        diff_row(out, "workflow", w->name, x ? x->checksum : NULL, w->checksum, c);
        if (x && strcmp(x->checksum, w->checksum) == 0) {
            strbuf a = SB_INIT, b = SB_INIT;
            join_roles(&a, &x->roles);
            join_roles(&b, &w->roles);
            if (strcmp(a.buf, b.buf) != 0) {
                char *what = xasprintf("roles %s → %s", a.buf, b.buf);
                diff_identity(out, "workflow", w->name, what, c);
                free(what);
            }
            sb_release(&a);
            sb_release(&b);
        }
        if (w->blueprint_checksum[0] || (x && x->blueprint_checksum[0])) {
            char *nm = xasprintf("%s blueprint", w->name);
            diff_row(out, "workflow", nm,
                     x && x->blueprint_checksum[0] ? x->blueprint_checksum : NULL,
                     w->blueprint_checksum[0] ? w->blueprint_checksum : NULL, c);
            free(nm);
        }
    }
    for (size_t i = 0; o && i < o->workflows.n; i++)
        if (!lockfile_workflow(n, o->workflows.v[i].name))
            diff_row(out, "workflow", o->workflows.v[i].name, o->workflows.v[i].checksum, NULL, c);
}

static size_t lock_diff(const struct lockfile *o, const struct lockfile *n, strbuf *out)
{
    size_t c = 0;
    for (size_t i = 0; i < n->skills.n; i++) {
        const struct lock_skill *s = &n->skills.v[i];
        const struct lock_skill *x = o ? lockfile_skill(o, s->name) : NULL;
        diff_row(out, "skill", s->name, x ? x->checksum : NULL, s->checksum, &c);
        if (x && strcmp(x->checksum, s->checksum) == 0 && !same(x->rev, s->rev)) {
            char *w = xasprintf("commit %.12s → %.12s", x->rev ? x->rev : "none",
                                s->rev ? s->rev : "none");
            diff_identity(out, "skill", s->name, w, &c);
            free(w);
        }
    }
    for (size_t i = 0; o && i < o->skills.n; i++)
        if (!lockfile_skill(n, o->skills.v[i].name))
            diff_row(out, "skill", o->skills.v[i].name, o->skills.v[i].checksum, NULL, &c);
    for (size_t i = 0; i < n->servers.n; i++) {
        const struct lock_server *x = o ? lockfile_server(o, n->servers.v[i].name) : NULL;
        diff_row(out, "server", n->servers.v[i].name, x ? x->checksum : NULL,
                 n->servers.v[i].checksum, &c);
    }
    for (size_t i = 0; o && i < o->servers.n; i++)
        if (!lockfile_server(n, o->servers.v[i].name))
            diff_row(out, "server", o->servers.v[i].name, o->servers.v[i].checksum, NULL, &c);
    for (size_t i = 0; i < n->instructions.n; i++) {
        const struct lock_instruction *ni = &n->instructions.v[i];
        const struct lock_instruction *x = o ? lockfile_instruction(o, ni->name) : NULL;
        diff_row(out, "instruction", ni->name, x ? x->checksum : NULL, ni->checksum, &c);
        for (size_t j = 0; j < ni->variants.n; j++) {
            const char *oc = NULL;
            for (size_t k = 0; x && k < x->variants.n; k++)
                if (strcmp(x->variants.v[k].path, ni->variants.v[j].path) == 0)
                    oc = x->variants.v[k].checksum;
            char *nm = xasprintf("%s variant %s", ni->name, ni->variants.v[j].path);
            diff_row(out, "instruction", nm, oc, ni->variants.v[j].checksum, &c);
            free(nm);
        }
    }
    for (size_t i = 0; o && i < o->instructions.n; i++)
        if (!lockfile_instruction(n, o->instructions.v[i].name))
            diff_row(out, "instruction", o->instructions.v[i].name, o->instructions.v[i].checksum,
                     NULL, &c);
    for (size_t i = 0; i < n->executables.n; i++) {
        const struct lock_executable *e = &n->executables.v[i];
        const struct lock_executable *x = o ? lockfile_executable(o, e->path, e->kind) : NULL;
        diff_row(out, strcmp(e->kind, "root") == 0 ? "integrity root" : "executable", e->path,
                 x ? x->checksum : NULL, e->checksum, &c);
    }
    for (size_t i = 0; o && i < o->executables.n; i++) {
        const struct lock_executable *e = &o->executables.v[i];
        if (!lockfile_executable(n, e->path, e->kind))
            diff_row(out, strcmp(e->kind, "root") == 0 ? "integrity root" : "executable", e->path,
                     e->checksum, NULL, &c);
    }
    for (size_t i = 0; i < n->settings.n; i++) {
        const struct lock_setting *s = &n->settings.v[i];
        const struct lock_setting *x = o ? lockfile_setting(o, s->target, s->key) : NULL;
        char *nm = xasprintf("%s.%s", s->target, s->key);
        diff_row(out, "setting", nm, x ? x->checksum : NULL, s->checksum, &c);
        free(nm);
    }
    for (size_t i = 0; o && i < o->settings.n; i++) {
        const struct lock_setting *s = &o->settings.v[i];
        if (!lockfile_setting(n, s->target, s->key)) {
            char *nm = xasprintf("%s.%s", s->target, s->key);
            diff_row(out, "setting", nm, s->checksum, NULL, &c);
            free(nm);
        }
    }
    diff_ext(o, n, out, &c);
    const char *om = o ? o->manifest_digest : NULL, *nmd = n->manifest_digest;
    if ((om || nmd) && !(om && nmd && strcmp(om, nmd) == 0)) {
        c++;
        json_change(!om    ? "add"
                    : !nmd ? "remove"
                           : "change",
                    "manifest stamp", "manifest", om, nmd);
        if (nmd)
            sb_addf(out, "  %c manifest stamp  %.12s\n", om ? '~' : '+', nmd);
        else
            sb_adds(out, "  - manifest stamp (dropped by a partial lock)\n");
    }
    return c;
}

struct lock_ids {
    struct adp_registry reg;
    const char **ids;
    bool loaded;
};

/* A registry that cannot load is a build bug that doctor reports: lock then
 * checks the rest rather than refusing every project. */
static bool lock_load_ids(void *ctx, const char *const **ids, size_t *n)
{
    struct lock_ids *li = ctx;
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&li->reg, true, &err) < 0)
        return false;
    li->loaded = true;
    li->ids = xcalloc(li->reg.v.n + 1, sizeof *li->ids);
    for (size_t i = 0; i < li->reg.v.n; i++)
        li->ids[i] = li->reg.v.v[i]->id;
    *ids = li->ids;
    *n = li->reg.v.n;
    return true;
}

int cmd_lock(int argc, char **argv, struct cli_ctx *ctx);

struct lock_args {
    bool write;
    const char *toolset;
    bool update;
    strvec update_names;
    bool upgrade, upgrade_all, with_instructions, yes, json;
    const char *upgrade_name;
};

#define CLI_ARGS struct lock_args
static const struct cli_option lock_options[] = {
    {OPT_BOOL("write", 0, write, "write agentstack.lock (default: preview the changes)")},
    {OPT_STRING("toolset", 0, toolset, "NAME", "pin only what this toolset uses"),
     .alias = "profile"},
    {OPT_LIST("update", 0, update_names, "NAME",
              "move git sources (all, or NAME) to the manifest's rev, else the upstream head"),
     .flags = CLI_OPT_OPTARG, .seen = CLI_SEEN(update)},
    {OPT_STRING("upgrade", 0, upgrade_name, "PACK",
                "re-resolve an installed pack from its ledger (as `upgrade PACK`)"),
     .flags = CLI_OPT_OPTARG, .seen = CLI_SEEN(upgrade)},
    {OPT_BOOL("all", 0, upgrade_all, "with --upgrade: every installed pack")},
    {OPT_BOOL("with-instructions", 0, with_instructions,
              "with --upgrade: also install the packs' instruction files")},
    {OPT_BOOL("yes", 'y', yes, "with --upgrade: approve house rules the new version rewrites")},
    {OPT_BOOL("json", 0, json, "one JSON document (docs/json.md; not with --upgrade)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_lock_spec = {
    .name = "lock",
    .fn = cmd_lock,
    .summary = "pin every skill, server, instruction and executable in agentstack.lock",
    .synopsis = CLI_LINES("lock [--write] [--toolset NAME] [--update [NAME]] [--json]",
                          "lock --upgrade (PACK | --all) [--with-instructions] [--yes] --write"),
    .description = "The preview computes the new lock in memory and writes nothing in the "
                   "project (git sources may be fetched into the machine home's store). --write "
                   "holds the writer lock from the first read to the atomic replace and leaves "
                   "the old lock on any failure. --update moves git sources and needs --write.",
    .options = lock_options,
    .examples =
        CLI_LINES("agentstack lock", "agentstack lock --write", "agentstack lock --update --write",
                  "agentstack lock --upgrade --all --yes --write"),
    .see_also = "trust install upgrade",
    .flags = CLI_JSON_ERRORS,
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct lock_args *a)
{
    int rc = cli_parse(&cmd_lock_spec, &argc, argv, ctx, a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 1; i < argc; i++) {
        if (a->upgrade && !a->upgrade_name)
            a->upgrade_name = argv[i];
        else
            return cli_usage_error("lock", "unexpected argument '%s'", argv[i]);
    }
    if (a->upgrade && a->json)
        return cli_usage_error("lock", "--json is not available with --upgrade");
    if (a->upgrade) {
        if (a->toolset || a->update)
            return cli_usage_error("lock", "--upgrade re-resolves packs; it takes no --toolset "
                                           "or --update");
        if (!a->upgrade_name == !a->upgrade_all)
            return cli_usage_error("lock", "name one pack or pass --all: agentstack lock "
                                           "--upgrade <pack> --yes --write");
    } else if (a->upgrade_all || a->with_instructions || a->yes) {
        return cli_usage_error("lock", "%s goes with --upgrade",
                               a->upgrade_all         ? "--all"
                               : a->with_instructions ? "--with-instructions"
                                                      : "--yes");
    }
    return CLI_CONTINUE;
}

/* The central library with every linked source; a skipped source (an index
 * that cannot be used) is a warning, never silent. NULL + err when
 * sources.toml itself is unusable. */
static struct library *open_library(const char *home, struct as_err *err)
{
    struct library *lib = lib_open(home, err);
    for (size_t i = 0; lib && i < lib->warnings.n; i++) {
        strbuf b = SB_INIT;
        term_sanitize(&b, lib->warnings.v[i], strlen(lib->warnings.v[i]));
        term_fprintf(stderr, "warning: %s\n", b.buf);
        sb_release(&b);
    }
    return lib;
}

/* `lock --upgrade`: one pack, or every pack of the [packs] ledger. */
static int do_upgrade(const struct lock_args *a, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    if (a->write)
        cli_quiet_report(ctx, a->json);
    struct as_lock wl = {-1};
    if (trust_lock(&wl, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(&p);
        return EXIT_FAIL;
    }
    int rc = EXIT_FAIL;
    strvec names = STRVEC_INIT;
    struct library *lib = open_library(NULL, &err);
    if (!lib) {
        cli_error(&err);
        goto out;
    }
    if (a->upgrade_all) {
        struct manifest *m = manifest_load(&p, &err);
        if (!m) {
            cli_error(&err);
            goto out;
        }
        for (size_t i = 0; m->packs && i < toml_len(m->packs); i++)
            strvec_push(&names, toml_entry(m->packs, i)->key);
        manifest_free(m);
        if (!names.n) {
            term_printf("no packs installed in %s — nothing to upgrade.\n", p.manifest);
            rc = EXIT_OK;
            goto out;
        }
    } else {
        strvec_push(&names, a->upgrade_name);
    }
    struct lib_pack_opts o = {.with_instructions = a->with_instructions,
                              .write = a->write,
                              .yes = a->yes,
                              .out = stdout,
                              .diag = stderr};
    size_t failed = 0;
    for (size_t i = 0; i < names.n; i++) {
        struct as_err e = AS_ERR_INIT;
        fflush(stdout);
        if (lib_pack_upgrade(lib, &p, names.v[i], &o, &e) < 0) {
            cli_error(&e);
            failed++;
        }
        fflush(stdout);
    }
    if (failed && names.n > 1)
        cli_errorf("%zu pack%s failed to upgrade", failed, failed == 1 ? "" : "s");
    rc = failed ? EXIT_FAIL : EXIT_OK;
out:
    strvec_clear(&names);
    lib_free(lib);
    lock_release(&wl);
    bundle_paths_free(&p);
    return rc;
}

/* Each --update NAME must name a git source of the manifest. */
static int check_update_names(const struct manifest *m, const strvec *names)
{
    for (size_t i = 0; i < names->n; i++) {
        const char *n = names->v[i];
        const struct mf_skill *s = manifest_skill(m, n);
        bool git = s && s->source == MF_SOURCE_GIT;
        for (size_t j = 0; !git && j < m->extensions.n; j++)
            git = strcmp(m->extensions.v[j].name, n) == 0 &&
                  m->extensions.v[j].source == MF_SOURCE_GIT;
        for (size_t j = 0; !git && j < m->workflows.n; j++)
            git =
                strcmp(m->workflows.v[j].name, n) == 0 && m->workflows.v[j].source == MF_SOURCE_GIT;
        if (!git) {
            strbuf b = SB_INIT;
            term_sanitize(&b, n, strlen(n));
            cli_errorf("refusing to update pins: '%s' is not a git skill, extension or workflow "
                       "of this manifest",
                       b.buf);
            sb_release(&b);
            return -1;
        }
    }
    return 0;
}

static void announce(const char *kind, const char *name, const char *url)
{
    strbuf b = SB_INIT, clean = SB_INIT;
    sb_addf(&b, "→ resolving git %s '%s' from %s (may fetch)", kind, name, url);
    term_sanitize(&clean, b.buf, b.len);
    term_fprintf(stderr, "%s\n", clean.buf);
    sb_release(&b);
    sb_release(&clean);
}

/* Resolution may reach the network: say so before it happens. */
static void announce_git(const struct manifest *m)
{
    for (size_t i = 0; i < m->skills.n; i++)
        if (m->skills.v[i].source == MF_SOURCE_GIT)
            announce("skill", m->skills.v[i].name, m->skills.v[i].git);
    for (size_t i = 0; i < m->extensions.n; i++)
        if (m->extensions.v[i].source == MF_SOURCE_GIT)
            announce("extension", m->extensions.v[i].name, m->extensions.v[i].git);
    for (size_t i = 0; i < m->workflows.n; i++)
        if (m->workflows.v[i].source == MF_SOURCE_GIT)
            announce("workflow", m->workflows.v[i].name, m->workflows.v[i].git);
}

/* lock --json (docs/json.md): what the lock pins, the changes against the
 * lock on disk (json_changes), whether the file was written, and the next
 * step (trust is stale after a written lock). */
static void print_json(const struct bundle_paths *p, const struct lockfile *l, bool write,
                       bool changed, const char *next)
{
    size_t variants = 0;
    for (size_t i = 0; i < l->instructions.n; i++)
        variants += l->instructions.v[i].variants.n;
    json_t *doc = cli_json_doc("lock", true);
    json_object_set_new(doc, "lock_path", json_string(p->lock));
    json_object_set_new(doc, "write", json_boolean(write));
    json_object_set_new(doc, "written", json_boolean(write && changed));
    json_object_set_new(doc, "changed", json_boolean(changed));
    json_object_set_new(
        doc, "pinned",
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "skills", (json_int_t)l->skills.n, "servers",
                  (json_int_t)l->servers.n, "instructions", (json_int_t)l->instructions.n,
                  "variants", (json_int_t)variants, "executables", (json_int_t)l->executables.n,
                  "extensions", (json_int_t)l->extensions.n, "workflows",
                  (json_int_t)l->workflows.n, "settings", (json_int_t)l->settings.n));
    json_object_set_new(doc, "changes", json_changes ? json_incref(json_changes) : json_array());
    json_object_set_new(doc, "next", next ? json_string(next) : json_null());
    cli_json_print(doc);
}

static void print_refusal(const char *what)
{
    cli_errorf("refusing to lock: %s", what);
}

static void print_refusal_err(const struct as_err *err)
{
    char buf[4096];
    print_refusal(as_err_str(err, buf, sizeof buf));
    if (err->hint[0])
        term_fprintf(stderr, "  %s\n", err->hint);
}

/* The manifest checked as lock needs it (paths, adapter ids, library
 * names): each diagnostic shown, the number of errors returned. */
static size_t validate(struct manifest *m, struct library *lib)
{
    mf_diags diags = VEC_INIT;
    /* Adapter ids too (an unknown one blocks lock), the registry
     * loaded only if the manifest names one. */
    struct lock_ids li = {0};
    struct manifest_env env = {.load_adapter_ids = lock_load_ids,
                               .adapter_ctx = &li,
                               .library_has = lib_manifest_has,
                               .library_ctx = lib,
                               .check_paths = true};
    size_t nerr = manifest_validate(m, &env, &diags);
    free(li.ids);
    if (li.loaded)
        adp_registry_free(&li.reg);
    for (size_t i = 0; i < diags.n; i++) {
        /* message and fix on lines of their own: each is sanitized whole */
        strbuf d = SB_INIT;
        mf_diag_message(&diags.v[i], &d);
        if (diags.v[i].sev == MF_ERROR)
            print_refusal(d.buf);
        else
            term_fprintf(stderr, "warning: %s\n", d.buf);
        if (diags.v[i].fix)
            term_fprintf(stderr, "  %s\n", diags.v[i].fix);
        sb_release(&d);
    }
    mf_diags_free(&diags);
    return nerr;
}

/* Each pin that failed (a refusal) or was skipped (a warning); returns how
 * many failed. */
static size_t report_pins(const pin_items *items)
{
    size_t failed = 0;
    for (size_t i = 0; i < items->n; i++) {
        if (items->v[i].state == PIN_FAILED) {
            print_refusal(items->v[i].error);
            failed++;
        } else if (items->v[i].state != PIN_OK) {
            term_fprintf(stderr, "warning: %s\n", items->v[i].error);
        }
    }
    return failed;
}

/* lock without --write: what would be pinned, and the pin changes. */
static void print_preview(const char *sum, const char *src, const char *lock_path, bool nothing,
                          size_t changes, const char *diff)
{
    term_printf("→ lock preview: %s from %s in %s\n", sum, src, lock_path);
    if (nothing)
        term_printf("nothing to pin — this project declares no skills, servers, instructions, "
                    "executables or settings.\n");
    else if (!changes)
        term_printf("no pin changes — agentstack.lock already matches this project.\n");
    else
        fputs(diff, stdout);
    term_printf("Dry run: nothing was pinned.\n");
}

int cmd_lock(int argc, char **argv, struct cli_ctx *ctx)
{
    struct lock_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE || a.upgrade) {
        strvec_clear(&a.update_names);
        return rc != CLI_CONTINUE ? rc : do_upgrade(&a, ctx);
    }
    if (a.update && !a.write) {
        cli_errorf("refusing to update pins without --write — git sources would move to new "
                   "commits; preview with agentstack lock, then: agentstack lock --update%s%s "
                   "--write",
                   a.update_names.n ? " " : "", a.update_names.n ? a.update_names.v[0] : "");
        strvec_clear(&a.update_names);
        return EXIT_FAIL;
    }
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    if (a.write)
        cli_quiet_report(ctx, a.json);
    struct as_lock wl = {-1};
    bool locked = false;
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    struct lockfile *old = NULL, *nl = NULL;
    pin_items items = VEC_INIT;
    strbuf home = SB_INIT, out = SB_INIT;
    strvec warnings = STRVEC_INIT;
    struct library *lib = NULL;
    rc = EXIT_FAIL;
    struct trust_status before = {.key = SB_INIT};

    if (home_dir(&home, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (a.write) {
        if (trust_lock(&wl, &err) < 0) {
            cli_error(&err);
            goto out;
        }
        locked = true;
    }
    /* Read under the writer lock, so the sources pinned are the sources read. */
    lib = open_library(home.buf, &err);
    if (!lib) {
        print_refusal_err(&err);
        goto out;
    }
    if (manifest_snapshot_read(&p, &snap, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    m = manifest_load_snapshot(&p, &snap, &err);
    if (!m) {
        print_refusal_err(&err);
        goto out;
    }
    size_t nerr = validate(m, lib);
    if (nerr)
        goto out;
    if (snap.has_lock) {
        old = lockfile_parse(p.lock, snap.lock.buf, snap.lock.len, &err);
        if (!old) {
            cli_error(&err);
            goto out;
        }
    }
    if (check_update_names(m, &a.update_names) < 0)
        goto out;
    announce_git(m);
    struct pin_opts po = {.toolset = a.toolset,
                          .home = home.buf,
                          .library = lib_pin_lookup,
                          .library_ctx = lib,
                          .lock = old,
                          .fetch = true,
                          .update_all = a.update && !a.update_names.n,
                          .update = &a.update_names};
    if (pin_collect(m, &po, &items, &err) < 0) {
        print_refusal(err.msg);
        goto out;
    }
    size_t failed = report_pins(&items);
    if (failed)
        goto out;

    char stamp[SHA256_HEX_LEN + 1];
    if (!a.toolset) {
        struct digest_blob mb = {snap.has_manifest, snap.manifest.buf, snap.manifest.len};
        struct digest_blob ob = {snap.has_overlay, snap.overlay.buf, snap.overlay.len};
        digest_manifest_stamp(&mb, &ob, stamp);
    }
    nl = pin_build_lock(&items, old, a.toolset ? NULL : stamp);
    strbuf sum = SB_INIT, diff = SB_INIT;
    summary(nl, &sum);
    if (a.json)
        json_changes = json_array();
    size_t changes = lock_diff(old, nl, &diff);
    const char *src =
        snap.has_overlay ? "agentstack.toml + agentstack.local.toml" : "agentstack.toml";
    bool nothing = rows(nl) == 0 && !old;

    if (a.json && (!a.write || nothing)) {
        print_json(&p, nl, a.write, !nothing && changes, NULL);
        rc = EXIT_OK;
        sb_release(&sum);
        sb_release(&diff);
        goto out;
    }
    if (!a.write) {
        print_preview(sum.buf, src, p.lock, nothing, changes, diff.buf);
        rc = EXIT_OK;
        sb_release(&sum);
        sb_release(&diff);
        goto out;
    }
    if (nothing) {
        term_printf("nothing to pin — this project declares no skills, servers, instructions, "
                    "executables or settings; no agentstack.lock was written.\n");
        rc = EXIT_OK;
        sb_release(&sum);
        sb_release(&diff);
        goto out;
    }
    /* The state before our first write decides the next step. */
    if (trust_check_snapshot(&p, &snap, &before, &err) < 0) {
        cli_error(&err);
        sb_release(&sum);
        sb_release(&diff);
        goto out;
    }
    bool written = false;
    if (lockfile_save(nl, p.lock, p.project_root, snap.lock.buf, snap.lock.len, snap.has_lock,
                      &written, &err) < 0) {
        cli_error(&err);
        term_fprintf(stderr, "  the previous agentstack.lock was left as it was\n");
        sb_release(&sum);
        sb_release(&diff);
        goto out;
    }
    pin_deposit(&items, home.buf, &warnings);
    for (size_t i = 0; i < warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", warnings.v[i]);
    if (a.json) {
        bool stale = before.state == TRUST_TRUSTED && written;
        print_json(&p, nl, a.write, written,
                   stale || before.state != TRUST_TRUSTED ? "agentstack trust ." : NULL);
        rc = EXIT_OK;
        sb_release(&sum);
        sb_release(&diff);
        goto out;
    }
    if (written)
        fputs(diff.buf, stdout);
    term_printf("✓ pinned %s %s %s\n", sum.buf, written ? "in" : "— already up to date in", p.lock);
    if (before.state == TRUST_TRUSTED && written)
        term_fprintf(stderr,
                     "warning: trust is stale — agentstack.lock changed, so this project is "
                     "no longer trusted until you review it: agentstack trust .\n");
    else if (before.state != TRUST_TRUSTED)
        term_printf("next: agentstack trust .\n");
    rc = EXIT_OK;
    sb_release(&sum);
    sb_release(&diff);
out:
    json_decref(json_changes);
    json_changes = NULL;
    if (locked)
        lock_release(&wl);
    trust_status_release(&before);
    lib_free(lib);
    strvec_clear(&warnings);
    sb_release(&out);
    sb_release(&home);
    pin_items_free(&items);
    lockfile_free(old);
    lockfile_free(nl);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    strvec_clear(&a.update_names);
    return rc;
}
