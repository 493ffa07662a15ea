/*
 * agentstack install [--locked] [--allow-flagged] — resolve every skill
 * against the lock (docs/formats.md). Git skills are fetched into the machine home's
 * store (the locked commit beats the manifest rev). Everything the project
 * puts into agents' context is content-scanned (docs/trust.md, "Content scan"): a High finding
 * refuses unless --allow-flagged, and nothing is locked. --locked writes
 * nothing in the project and fails ("lockfile is out of date") on any
 * missing, differing or prunable skill pin or resolve failure, comparing
 * source, path, git, rev and checksum only (attribution such as license never
 * counts as drift). Without --locked the skill rows are updated, stale ones
 * pruned, and the lock saved atomically under the writer lock when its bytes
 * change. Library skills resolve through every linked source (docs/library.md), as
 * `lock` pins them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lock.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "bundle/scan.h"
#include "cli/cli.h"
#include "cli/json_out.h"
#include "library/library.h"
#include "trust/trust.h"

int cmd_install(int argc, char **argv, struct cli_ctx *ctx);

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Rows compared by content identity only. */
static bool row_matches(const struct lock_skill *row, const struct pin_item *it)
{
    const char *path = it->library ? NULL : it->declared_path;
    return same_str(row->source, it->source) && same_str(row->path, path) &&
           same_str(row->git, it->git) && same_str(row->rev, it->rev) &&
           strcmp(row->checksum, it->checksum) == 0;
}

/* Scans what the resolved items deliver; prints every finding. */
static int scan_items(const struct manifest *m, const pin_items *items, struct scan_report *r,
                      struct as_err *err)
{
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        if ((it->kind != PIN_SKILL && it->kind != PIN_INSTRUCTION && it->kind != PIN_VARIANT &&
             it->kind != PIN_EXTENSION) ||
            it->state != PIN_OK || !it->fs_path)
            continue;
        char *item = it->kind == PIN_VARIANT
                         ? xasprintf("instruction '%s' variant", it->name)
                         : xasprintf("%s '%s'", pin_kind_name(it->kind), it->name);
        size_t rl = strlen(m->project_root);
        const char *disp = it->fs_path;
        if (strncmp(disp, m->project_root, rl) == 0 && disp[rl] == '/')
            disp += rl + 1;
        int rc = scan_tree(item, it->fs_path, disp, r, err);
        free(item);
        if (rc < 0)
            return -1;
    }
    for (size_t i = 0; i < r->v.n; i++) {
        const struct scan_finding *f = &r->v.v[i];
        strbuf line = SB_INIT;
        sb_adds(&line, f->sev == SCAN_HIGH ? "✗ " : "⚠ ");
        if (f->item)
            sb_addf(&line, "%s: ", f->item);
        scan_finding_format(f, &line);
        strbuf clean = SB_INIT;
        term_sanitize(&clean, line.buf, line.len);
        fprintf(stderr, "%s\n", clean.buf);
        if (f->fix)
            fprintf(stderr, "    ↳ %s\n", f->fix);
        sb_release(&line);
        sb_release(&clean);
    }
    return 0;
}

/* install --json: one {name, state, error?} per skill instead of the lines
 * (docs/json.md); NULL when not asked for. */
static json_t *json_skills;

static void say(const char *mark, const char *state, const char *name, const char *rest,
                const char *error)
{
    if (json_skills) {
        json_array_append_new(
            json_skills, json_pack("{s:s,s:s,s:s?}", "name", name, "state", state, "error", error));
        return;
    }
    strbuf sb = SB_INIT;
    sb_addf(&sb, "%s ", mark);
    term_sanitize(&sb, name, strlen(name));
    if (rest)
        sb_addf(&sb, "%s", rest);
    puts(sb.buf);
    sb_release(&sb);
}

struct install_args {
    bool locked, allow_flagged, json;
};

#define CLI_ARGS struct install_args
static const struct cli_option install_options[] = {
    {OPT_BOOL("locked", 0, locked,
              "check only: write nothing, fail when any skill differs from agentstack.lock")},
    {OPT_BOOL("allow-flagged", 0, allow_flagged,
              "install even when the content scan flags a skill (High findings)")},
    {OPT_BOOL("json", 0, json, "one JSON document (docs/json.md)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_install_spec = {
    .name = "install",
    .fn = cmd_install,
    .summary = "resolve skills against agentstack.lock (--locked: check only)",
    .synopsis = CLI_LINES("install [--locked] [--allow-flagged] [--json]"),
    .description = "Fetches git skills into the machine home's store at their locked commit, "
                   "content-scans everything put into agents' context, and updates the lock's "
                   "skill rows. --locked is the CI form: it fails with \"lockfile is out of "
                   "date\" instead of changing anything.",
    .options = install_options,
    .examples = CLI_LINES("agentstack install", "agentstack install --locked"),
    .see_also = "lock trust doctor",
    .flags = CLI_JSON_ERRORS,
};

/* Each git skill, named before its (possibly slow) fetch. */
static void announce_git(const struct manifest *m)
{
    for (size_t i = 0; i < m->skills.n; i++)
        if (m->skills.v[i].source == MF_SOURCE_GIT) {
            strbuf line = SB_INIT;
            sb_addf(&line, "→ resolving git skill '%s' from %s", m->skills.v[i].name,
                    m->skills.v[i].git);
            strbuf clean = SB_INIT;
            term_sanitize(&clean, line.buf, line.len);
            term_fprintf(stderr, "%s\n", clean.buf);
            sb_release(&line);
            sb_release(&clean);
        }
}

/* Each skill pin against its lock row (failed, new, updated or cached),
 * and each row no skill wants any more; counts what differs (*problems)
 * and what a write changes (*changed). */
static void compare_rows(const pin_items *items, const struct lockfile *lock, bool locked_only,
                         size_t *problems, size_t *changed)
{
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        if (it->kind != PIN_SKILL)
            continue;
        const struct lock_skill *row = lockfile_skill(lock, it->name);
        if (it->state != PIN_OK) {
            (*problems)++;
            say("✗", "failed", it->name, NULL, it->error);
            fprintf(stderr, "  %s\n", it->error);
        } else if (!row) {
            say("+", locked_only ? "missing" : "locked", it->name,
                locked_only ? ": missing from lockfile" : " locked", NULL);
            (*problems)++;
            (*changed)++;
        } else if (!row_matches(row, it)) {
            say("↑", locked_only ? "out_of_date" : "updated", it->name,
                locked_only ? ": lockfile out of date" : " updated", NULL);
            (*problems)++;
            (*changed)++;
        } else {
            say("✓", "cached", it->name, " cached", NULL);
        }
    }
    /* Skill rows neither declared nor toolset-referenced are pruned. */
    for (size_t i = 0; i < lock->skills.n; i++) {
        bool wanted = false;
        for (size_t j = 0; j < items->n && !wanted; j++)
            wanted = items->v[j].kind == PIN_SKILL &&
                     strcmp(items->v[j].name, lock->skills.v[i].name) == 0;
        if (!wanted) {
            say("-", locked_only ? "prunable" : "pruned", lock->skills.v[i].name,
                locked_only ? ": pinned but no longer declared (prunable)" : " pruned", NULL);
            (*problems)++;
            (*changed)++;
        }
    }
}

/* The new lock: fresh skill rows (attribution kept, only wanted skills),
 * every other kind moved over from lock unchanged (ownership transferred). */
static struct lockfile *rebuild_lock(const pin_items *items, struct lockfile *lock)
{
    struct lockfile *nl = lockfile_new();
    nl->version = LOCKFILE_VERSION;
    pin_items skills = VEC_INIT;
    for (size_t i = 0; i < items->n; i++)
        if (items->v[i].kind == PIN_SKILL)
            vec_push(&skills, items->v[i]);
    struct lockfile *tmp = pin_build_lock(&skills, lock, NULL);
    vec_free(&skills); /* items own the strings */
    /* Keep only wanted skills (pin_build_lock keeps stale rows), take the rest from lock. */
    for (size_t i = 0; i < tmp->skills.n; i++) {
        struct lock_skill *s = &tmp->skills.v[i];
        bool wanted = false;
        for (size_t j = 0; j < items->n && !wanted; j++)
            wanted = items->v[j].kind == PIN_SKILL && strcmp(items->v[j].name, s->name) == 0;
        if (wanted) {
            vec_push(&nl->skills, *s);
        } else {
            lock_skill_free(s);
        }
    }
    vec_free(&tmp->skills);
    lockfile_free(tmp);
    /* The other kinds move over unchanged (ownership transferred). */
    nl->servers = lock->servers;
    nl->instructions = lock->instructions;
    nl->executables = lock->executables;
    nl->settings = lock->settings;
    nl->extensions = lock->extensions;
    nl->workflows = lock->workflows;
    nl->ext_package = lock->ext_package;
    memset(&lock->servers, 0, sizeof lock->servers);
    memset(&lock->instructions, 0, sizeof lock->instructions);
    memset(&lock->executables, 0, sizeof lock->executables);
    memset(&lock->settings, 0, sizeof lock->settings);
    memset(&lock->extensions, 0, sizeof lock->extensions);
    memset(&lock->workflows, 0, sizeof lock->workflows);
    lock->ext_package = NULL;
    return nl;
}

int cmd_install(int argc, char **argv, struct cli_ctx *ctx)
{
    struct install_args a = {0};
    int prc = cli_parse(&cmd_install_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_install_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    bool locked_only = a.locked, allow_flagged = a.allow_flagged;
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    int rc = EXIT_FAIL;
    struct as_lock wl = {-1};
    bool held = false;
    bool written = false;
    if (a.json)
        json_skills = json_array();
    cli_quiet_report(ctx, a.json);
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    struct lockfile *lock = NULL;
    pin_items items = VEC_INIT;
    strbuf home = SB_INIT;
    strvec warnings = STRVEC_INIT;
    struct scan_report scan;
    scan_report_init(&scan);
    struct library *lib = NULL;
    if (home_dir(&home, &err) < 0)
        goto fail;
    if (!locked_only) {
        if (trust_lock(&wl, &err) < 0)
            goto fail;
        held = true;
    }
    lib = lib_open(home.buf, &err);
    if (!lib)
        goto fail;
    for (size_t i = 0; i < lib->warnings.n; i++) {
        strbuf b = SB_INIT;
        term_sanitize(&b, lib->warnings.v[i], strlen(lib->warnings.v[i]));
        term_fprintf(stderr, "warning: %s\n", b.buf);
        sb_release(&b);
    }
    if (manifest_snapshot_read(&p, &snap, &err) < 0)
        goto fail;
    m = manifest_load_snapshot(&p, &snap, &err);
    if (!m)
        goto fail;
    if (snap.has_lock) {
        lock = lockfile_parse(p.lock, snap.lock.buf, snap.lock.len, &err);
        if (!lock)
            goto fail;
    } else if (locked_only) {
        cli_errorf("lockfile is out of date: %s does not exist", p.lock);
        fprintf(stderr, "  create it with: agentstack lock --write\n");
        goto out;
    } else {
        lock = lockfile_new();
    }
    /* The store is a machine cache: --locked may fetch git sources into it. */
    announce_git(m);
    struct pin_opts po = {.home = home.buf,
                          .library = lib_pin_lookup,
                          .library_ctx = lib,
                          .lock = lock,
                          .fetch = true};
    if (pin_collect(m, &po, &items, &err) < 0)
        goto fail;
    if (scan_items(m, &items, &scan, &err) < 0)
        goto fail;
    if (scan_report_blocking(&scan) && !allow_flagged) {
        cli_errorf("install refused: the content scan found %zu high finding%s — nothing was "
                   "locked",
                   scan.high, scan.high == 1 ? "" : "s");
        fprintf(stderr, "  review the findings above; to install anyway: agentstack install "
                        "--allow-flagged\n");
        goto out;
    }

    size_t problems = 0, changed = 0;
    compare_rows(&items, lock, locked_only, &problems, &changed);
    if (locked_only) {
        if (problems) {
            cli_errorf("lockfile is out of date: %zu skill pin(s) differ from this project",
                       problems);
            fprintf(stderr, "  update it with: agentstack install (or agentstack lock --write)\n");
            goto out;
        }
        if (!a.json)
            printf("✓ every skill matches agentstack.lock\n");
        rc = EXIT_OK;
        goto out;
    }
    /* Rebuild: fresh skill rows (attribution kept), other kinds as they were. */
    struct lockfile *nl = rebuild_lock(&items, lock);
    /* A partial write drops the manifest stamp. */
    if (!changed) {
        if (!a.json)
            printf("✓ nothing to install — agentstack.lock already matches\n");
        rc = EXIT_OK;
    } else if (lockfile_save(nl, p.lock, p.project_root, snap.lock.buf, snap.lock.len,
                             snap.has_lock, &written, &err) < 0) {
        cli_error(&err);
    } else {
        if (!a.json)
            printf("✓ %s %s\n", written ? "updated" : "unchanged", p.lock);
        rc = problems > changed ? EXIT_FAIL : EXIT_OK;
    }
    pin_deposit(&items, home.buf, &warnings);
    for (size_t i = 0; i < warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", warnings.v[i]);
    lockfile_free(nl);
    goto out;
fail:
    cli_error(&err);
out:
    if (a.json) {
        /* the error document when nothing was resolved (main prints it) */
        if (rc == EXIT_OK || json_array_size(json_skills)) {
            json_t *doc = cli_json_doc("install", true);
            json_object_set_new(doc, "lock_path", json_string(p.lock));
            json_object_set_new(doc, "locked", json_boolean(locked_only));
            json_object_set_new(doc, "written", json_boolean(written));
            json_object_set_new(doc, "skills", json_skills);
            json_object_set_new(doc, "scan",
                                json_pack("{s:I,s:I}", "high", (json_int_t)scan.high, "findings",
                                          (json_int_t)scan.v.n));
            cli_json_print_result(doc, rc);
        } else {
            json_decref(json_skills);
        }
        json_skills = NULL;
    }
    if (held)
        lock_release(&wl);
    scan_report_free(&scan);
    lib_free(lib);
    strvec_clear(&warnings);
    sb_release(&home);
    pin_items_free(&items);
    lockfile_free(lock);
    manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    return rc;
}
