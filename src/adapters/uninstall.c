/*
 * uninstall — take back everything the ownership ledger says agentstack
 * placed in the CLIs' files (docs/adapters.md, "Uninstall and unrender").
 *
 * Why: `uninstall` and `unrender` must remove exactly what apply, use and
 * gateway connect wrote, no more, with the same writer, lock, ledger and
 * undo history. So this module writes nothing itself except the .gitignore
 * block: for each scope the ledger lists, it runs adp_apply with a manifest
 * that declares nothing (its pruning removes every server the ledger lists,
 * the instruction region, owned settings and hooks, and — as `use` — every
 * skill link we placed), and adp_connect --disconnect for the gateway entry.
 *
 * Guarantees:
 *  - Only names the ledger lists are removed; a user's own servers, skills,
 *    keys and text around our region stay byte for byte. No manifest is read
 *    or written (it works where none exists).
 *  - Preview by default: nothing is written unless o->write.
 *  - Each removal is an atomic write recorded in the undo history; a
 *    project file left holding only an empty server section, and an
 *    instruction file left empty, are deleted (apply's own rule); a skills
 *    directory (and, at project scope, its parents below the root) left
 *    empty by our unlinks is removed.
 *  - The writer lock is held across every scope.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"

#define PROJECT_SEP "@project:"

static bool dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *e;
    bool empty = true;
    while (empty && (e = readdir(d)))
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

/* A scope the ledger lists: the global files (root NULL) or one project. */
struct uscope {
    char *root;
    strvec ids;         /* adapters with an entry there */
    strvec skill_ids;   /* those with managed skills */
    strvec gateway_ids; /* global: those with the gateway entry */
};
typedef VEC(struct uscope) uscope_list;

static struct uscope *scope_for(uscope_list *l, const char *root)
{
    for (size_t i = 0; i < l->n; i++)
        if ((!root && !l->v[i].root) || (root && l->v[i].root && !strcmp(root, l->v[i].root)))
            return &l->v[i];
    struct uscope s = {0};
    s.root = root ? xstrdup(root) : NULL;
    vec_push(l, s);
    return &l->v[l->n - 1];
}

static void scopes_free(uscope_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].root);
        strvec_clear(&l->v[i].ids);
        strvec_clear(&l->v[i].skill_ids);
        strvec_clear(&l->v[i].gateway_ids);
    }
    vec_free(l);
}

static bool entry_owns(const json_t *e)
{
    static const char *const fields[] = {"managed_servers", "kept_foreign", "managed_skills",
                                         "managed_settings", "managed_hooks"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (json_array_size(json_object_get(e, fields[i])))
            return true;
    return json_string_value(json_object_get(e, "instructions")) != NULL;
}

static void collect_scopes(const struct adp_registry *r, const struct adp_uninstall_opts *o,
                           json_t *ledger, uscope_list *out, strvec *unknown)
{
    const char *key;
    json_t *e;
    json_object_foreach(json_object_get(ledger, "targets"), key, e)
    {
        const char *sep = strstr(key, PROJECT_SEP);
        char *id = sep ? xstrndup(key, (size_t)(sep - key)) : xstrdup(key);
        const char *root = sep ? sep + strlen(PROJECT_SEP) : NULL;
        bool want =
            root ? o->projects && (!o->project_root || !strcmp(o->project_root, root)) : o->global;
        bool gateway = !root && json_string_value(json_object_get(e, "gateway"));
        if (want && o->targets && o->targets->n && strvec_find(o->targets, id) < 0)
            want = false;
        if (want && o->source_manifest) {
            const char *src = json_string_value(json_object_get(e, "source_manifest"));
            want = (src && !strcmp(src, o->source_manifest)) ||
                   (!src && json_string_value(json_object_get(e, "instructions")));
        }
        if (!want || (!entry_owns(e) && !(gateway && o->disconnect))) {
            free(id);
            continue;
        }
        if (!adp_registry_find(r, id)) {
            strvec_pushf(unknown, "%s (%s)", id, root ? root : "global");
            free(id);
            continue;
        }
        struct uscope *s = scope_for(out, root);
        if (entry_owns(e))
            strvec_push(&s->ids, id);
        if (json_array_size(json_object_get(e, "managed_skills")))
            strvec_push(&s->skill_ids, id);
        if (gateway && o->disconnect)
            strvec_push(&s->gateway_ids, id);
        free(id);
    }
}

/* Lines of captured output worth showing without --verbose: the ones that
 * change something or say why not. */
static bool change_line(const char *l)
{
    static const char *const marks[] = {"−", "✗",      "↩", "→ would remove", "✓ gateway removed",
                                        "↳", "removal"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (strstr(l, marks[i]))
            return true;
    return false;
}

/* Prints the captured plan: every line with verbose (our own .gitignore
 * note aside), else each change line under the header of its file. */
static void relay(FILE *out, const char *buf, size_t len, bool verbose)
{
    const char *p = buf, *end = buf + len;
    char *header = NULL, *lane = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *line = xstrndup(p, n);
        p += n + (nl ? 1 : 0);
        if (strstr(line, "· .gitignore: keeping")) {
            free(line);
            continue;
        }
        if (verbose) {
            fprintf(out, "  %s\n", line);
        } else if (line[0] && line[0] != ' ' && strncmp(line, "Scope:", 6) != 0 &&
                   strchr(line, '(')) {
            free(header);
            free(lane);
            header = line;
            lane = NULL;
            continue;
        } else if (strncmp(line + strspn(line, " "), "· ", strlen("· ")) == 0 &&
                   strstr(line, " → ")) {
            free(lane);
            lane = line;
            continue;
        } else if (change_line(line)) {
            if (header)
                fprintf(out, "  %s\n", header);
            if (lane)
                fprintf(out, "    %s\n", lane + strspn(lane, " "));
            free(header);
            free(lane);
            header = lane = NULL;
            fprintf(out, "    %s\n", line + strspn(line, " "));
        }
        free(line);
    }
    free(header);
    free(lane);
}

/* The empty manifest every scope is pruned against: nothing declared, and
 * delivered by files everywhere, so a CLI the gateway serves is pruned too. */
static struct manifest *empty_manifest(const char *root, struct as_err *err)
{
    static const char text[] = "version = 1\n\n[delivery]\nrender_locally = true\n";
    strbuf path = SB_INIT;
    sb_addf(&path, "%s/.agentstack/agentstack.toml", root ? root : "/");
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT, .path = path.buf, .data = text, .len = sizeof text - 1};
    struct manifest *m = manifest_load_bytes(&src, err);
    sb_release(&path);
    return m;
}

/* rmdir dir when empty, then (project scope) each empty parent below root. */
static void prune_empty_dirs(const char *dir, const char *root, FILE *out)
{
    strbuf d = SB_INIT;
    sb_adds(&d, dir);
    for (;;) {
        if (root && (!fs_path_within(root, d.buf) || !strcmp(d.buf, root)))
            break;
        struct stat st;
        if (lstat(d.buf, &st) != 0 || !S_ISDIR(st.st_mode) || !dir_is_empty(d.buf))
            break;
        strbuf dp = SB_INIT;
        adp_i_display_path(d.buf, &dp);
        if (rmdir(d.buf) != 0) {
            sb_release(&dp);
            break;
        }
        term_fprintf(out, "  − removed empty %s/\n", dp.buf);
        sb_release(&dp);
        if (!root)
            break;
        char *slash = strrchr(d.buf, '/');
        if (!slash || slash == d.buf)
            break;
        sb_setlen(&d, (size_t)(slash - d.buf));
    }
    sb_release(&d);
}

/* The skills directories a scope's unlinks may leave empty. */
static void skills_dirs(const struct adp_registry *r, const struct uscope *s, strvec *out)
{
    for (size_t i = 0; i < s->skill_ids.n; i++) {
        const struct adp_desc *d = adp_registry_find(r, s->skill_ids.v[i]);
        const char *rel = d ? (s->root ? d->skills_project_dir : d->skills_dir) : NULL;
        strbuf p = SB_INIT;
        struct as_err e = AS_ERR_INIT;
        if (rel && adp_expand_path(rel, s->root, &p, &e) == 0 && strvec_find(out, p.buf) < 0)
            strvec_push(out, p.buf);
        sb_release(&p);
    }
}

/* Project files apply may delete (the MCP file, the instruction file) that
 * exist now: once gone, their directories are pruned when left empty. */
static void project_files(const struct adp_registry *r, const struct uscope *s, strvec *out)
{
    for (size_t i = 0; s->root && i < s->ids.n; i++) {
        const struct adp_desc *d = adp_registry_find(r, s->ids.v[i]);
        const char *rels[2] = {d ? d->project_config : NULL, d ? d->instr_project : NULL};
        for (size_t k = 0; k < 2; k++) {
            strbuf p = SB_INIT;
            struct as_err e = AS_ERR_INIT;
            if (rels[k] && adp_expand_path(rels[k], s->root, &p, &e) == 0 && fs_exists(p.buf) &&
                strvec_find(out, p.buf) < 0)
                strvec_push(out, p.buf);
            sb_release(&p);
        }
    }
}

/* The project's .gitignore without our block: previewed, or written and
 * recorded. 1 when it changes (or would), 0 when there is nothing, -1 on a
 * failure (printed). */
static int unblock_gitignore(const char *root, const struct adp_uninstall_opts *o, FILE *out)
{
    strbuf gi = SB_INIT, text = SB_INIT, next = SB_INIT;
    sb_addf(&gi, "%s/.gitignore", root);
    struct as_err e = AS_ERR_INIT;
    int rc = 0;
    if (!fs_exists(gi.buf))
        goto out;
    if (adp_i_contained(gi.buf, root, &e) != 0 ||
        fs_read_file(gi.buf, (size_t)16 << 20, 0, &text, &e) != 0 ||
        adp_gitignore_unblock(text.buf, text.len, &next, &e) != 0) {
        char buf[2048];
        term_fprintf(out, "  ✗ .gitignore: %s\n", as_err_str(&e, buf, sizeof buf));
        if (e.hint[0])
            term_fprintf(out, "    ↳ %s\n", e.hint);
        rc = -1;
        goto out;
    }
    if (next.len == text.len)
        goto out;
    rc = 1;
    if (!o->write) {
        term_fprintf(out, "  − would remove the agentstack block from .gitignore\n");
        goto out;
    }
    unsigned mode = adp_i_file_mode(gi.buf);
    struct fs_write_opts wo = {0644, FS_SYMLINK_FOLLOW, root, NULL};
    if (fs_write_atomic(gi.buf, next.buf, next.len, &wo, &e) != 0) {
        char buf[2048];
        term_fprintf(out, "  ✗ .gitignore: %s\n", as_err_str(&e, buf, sizeof buf));
        rc = -1;
        goto out;
    }
    term_fprintf(out, "  − removed the agentstack block from .gitignore\n");
    /* A .gitignore that held only our block goes (undo puts it back). */
    if (next.len == 0 && unlink(gi.buf) == 0)
        term_fprintf(out, "  − removed empty .gitignore\n");
    struct adp_hist_entry *h = xcalloc(1, sizeof *h);
    struct adp_hist_file f = {0};
    f.path = xstrdup(gi.buf);
    f.existed = true;
    f.mode = mode;
    sb_init(&f.before, 0);
    sb_add(&f.before, text.buf, text.len);
    f.label = xstrdup(".gitignore · managed block");
    vec_push(&h->files, f);
    h->scope = xstrdup("project");
    h->operation = xstrdup(o->operation ? o->operation : "uninstall");
    h->summary = xstrdup("removed the .gitignore block");
    struct as_err herr = AS_ERR_INIT;
    if (adp_history_record(h, &herr) != 0) {
        char buf[2048];
        term_fprintf(stderr, "warning: the undo history was not recorded: %s\n",
                     as_err_str(&herr, buf, sizeof buf));
    }
    adp_hist_entry_free(h);
out:
    sb_release(&gi);
    sb_release(&text);
    sb_release(&next);
    return rc;
}

/* A run of fn with its output captured, then relayed (filtered unless
 * verbose); *changed is set when the capture holds a change line. */
static int scope_apply(const struct adp_registry *r, const struct uscope *s,
                       const struct adp_uninstall_opts *o, FILE *out, bool *changed,
                       struct as_err *err)
{
    struct manifest *m = empty_manifest(s->root, err);
    if (!m)
        return 1;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        manifest_free(m);
        as_err_errno(err, "cannot capture the plan");
        return 1;
    }
    struct adp_apply_opts ao = {
        .m = m,
        .project_scope = s->root != NULL,
        .project_root = s->root,
        .targets = &s->ids,
        .manifest_path = o->source_manifest,
        .write = o->write,
        .prune_foreign = o->source_manifest == NULL,
        .no_gitignore = true,
        .use = true,
        .caller_holds_lock = true,
        .operation = o->operation ? o->operation : "uninstall",
        .out = mem,
    };
    int rc = adp_apply(r, &ao, err);
    fclose(mem);
    const char *p = buf;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = xstrndup(p, n);
        *changed |= change_line(line);
        free(line);
        p += n + (nl ? 1 : 0);
    }
    relay(out, buf, len, o->verbose);
    free(buf);
    manifest_free(m);
    return rc;
}

static int scope_disconnect(const struct adp_registry *r, const struct uscope *s,
                            const struct adp_uninstall_opts *o, FILE *out, struct as_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        as_err_errno(err, "cannot capture the plan");
        return 1;
    }
    struct adp_connect_opts co = {
        .ids = &s->gateway_ids, .write = o->write, .disconnect = true, .out = mem};
    int rc = adp_connect(r, &co, err);
    fclose(mem);
    relay(out, buf, len, o->verbose);
    free(buf);
    return rc;
}

/* The ledger as it was before this run, recorded as a write of its own, so
 * an undo of the uninstall gives back the ownership too (without it the
 * restored entries would read as someone else's). */
static void record_ledger_before(const char *path, const strbuf *before, bool existed,
                                 const char *operation)
{
    struct adp_hist_entry *h = xcalloc(1, sizeof *h);
    struct adp_hist_file f = {0};
    f.path = xstrdup(path);
    f.existed = existed;
    f.mode = 0600;
    sb_init(&f.before, 0);
    sb_add(&f.before, before->buf, before->len);
    f.label = xstrdup("agentstack · ownership ledger");
    vec_push(&h->files, f);
    h->scope = xstrdup("global");
    h->operation = xstrdup(operation);
    h->summary = xstrdup("the ownership ledger before it");
    struct as_err herr = AS_ERR_INIT;
    if (adp_history_record(h, &herr) != 0) {
        char buf[2048];
        term_fprintf(stderr, "warning: the undo history was not recorded: %s\n",
                     as_err_str(&herr, buf, sizeof buf));
    }
    adp_hist_entry_free(h);
}

int adp_uninstall(const struct adp_registry *r, const struct adp_uninstall_opts *o,
                  struct as_err *err)
{
    FILE *out = o->out ? o->out : stdout;
    json_t *ledger = NULL;
    if (adp_ledger_load(&ledger, err) != 0)
        return 1;
    uscope_list scopes = VEC_INIT;
    strvec unknown = STRVEC_INIT;
    collect_scopes(r, o, ledger, &scopes, &unknown);
    if (o->projects && o->project_root)
        (void)scope_for(&scopes, o->project_root); /* its .gitignore block, owned or not */
    json_decref(ledger);
    for (size_t i = 0; i < unknown.n; i++)
        term_fprintf(out, "· %s: no such CLI in the adapter registry — its entries are kept\n",
                     unknown.v[i]);
    strvec_clear(&unknown);

    strbuf lpath = SB_INIT, lbefore = SB_INIT;
    bool lexisted = false;
    if (o->write && home_path(HOME_STATE_JSON, &lpath, err) == 0 && fs_exists(lpath.buf)) {
        struct as_err e = AS_ERR_INIT;
        lexisted = fs_read_file(lpath.buf, (size_t)64 << 20, 0, &lbefore, &e) == 0;
    }

    /* The gateway first: while it is registered, apply leaves the CLI's
     * servers to it. */
    int rc = 0;
    size_t n_changed = 0;
    for (size_t i = 0; i < scopes.n; i++) {
        struct uscope *s = &scopes.v[i];
        if (s->root || !s->gateway_ids.n)
            continue;
        term_fprintf(out, "Gateway\n");
        struct as_err e = AS_ERR_INIT;
        if (scope_disconnect(r, s, o, out, &e) != 0) {
            char buf[2048];
            term_fprintf(out, "  ✗ %s\n", as_err_str(&e, buf, sizeof buf));
            rc = 1;
        }
        n_changed++;
    }

    struct as_lock lk = {-1};
    bool locked = false;
    if (o->write) {
        if (adp_i_take_lock(&lk, err) != 0) {
            scopes_free(&scopes);
            sb_release(&lpath);
            sb_release(&lbefore);
            return 1;
        }
        locked = true;
    }
    for (size_t i = 0; i < scopes.n; i++) {
        struct uscope *s = &scopes.v[i];
        bool any = s->ids.n > 0;
        bool gi = s->root && o->gitignore;
        if (!any && !gi)
            continue;
        strbuf dp = SB_INIT;
        if (s->root)
            adp_i_display_path(s->root, &dp);
        term_fprintf(out, s->root ? "Project %s\n" : "Global files\n", dp.buf);
        sb_release(&dp);
        bool changed = false;
        struct stat rst;
        if (s->root && (stat(s->root, &rst) != 0 || !S_ISDIR(rst.st_mode))) {
            term_fprintf(out, "  · the project is no longer on disk — nothing to revert there\n");
            continue;
        }
        if (any) {
            strvec dirs = STRVEC_INIT, files = STRVEC_INIT;
            skills_dirs(r, s, &dirs);
            project_files(r, s, &files);
            struct as_err e = AS_ERR_INIT;
            if (scope_apply(r, s, o, out, &changed, &e) != 0) {
                char buf[2048];
                if (as_err_isset(&e))
                    term_fprintf(out, "  ✗ %s\n", as_err_str(&e, buf, sizeof buf));
                rc = 1;
            }
            for (size_t k = 0; o->write && k < files.n; k++) {
                if (fs_exists(files.v[k]))
                    continue;
                char *slash = strrchr(files.v[k], '/');
                *slash = '\0';
                if (strvec_find(&dirs, files.v[k]) < 0)
                    strvec_push(&dirs, files.v[k]);
            }
            for (size_t k = 0; o->write && k < dirs.n; k++)
                prune_empty_dirs(dirs.v[k], s->root, out);
            strvec_clear(&dirs);
            strvec_clear(&files);
        }
        if (gi) {
            int g = unblock_gitignore(s->root, o, out);
            if (g < 0)
                rc = 1;
            changed |= g > 0;
        }
        if (!changed)
            term_fprintf(out, "  ✓ nothing of ours left here\n");
        n_changed += changed;
    }
    if (lexisted && n_changed)
        record_ledger_before(lpath.buf, &lbefore, true, o->operation ? o->operation : "uninstall");
    sb_release(&lpath);
    sb_release(&lbefore);
    if (locked)
        lock_release(&lk);
    if (o->n_changed)
        *o->n_changed = n_changed;
    scopes_free(&scopes);
    if (rc && !as_err_isset(err))
        as_err_set(err, "some files could not be reverted — see the ✗ lines above");
    return rc;
}
