/* apply_gitignore — apply's managed .gitignore block: every project file the
 * ledger says we own (rendered files may hold resolved secret values) is
 * listed between our markers, with the write in the run's undo record.
 * Split out of apply.c; see docs/adapters.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/apply_int.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"

/* ---- the managed .gitignore block ----------------------------------------- */

/* Whether the ledger lists this target's file once this run is written.
 * record_ledger runs only for a target that changes, so a preview predicts
 * the same: an unchanged file keeps what the ledger says now. (A hand-made
 * .mcp.json that already matches stays unowned: out of the block in the
 * write and in every later preview alike, "nothing to write".) */
static bool target_owns(const struct run *R, const struct tplan *t)
{
    if (R->o->write || !t->changed || t->failed || t->blocked) {
        json_t *e = adp_ledger_entry(R->ledger, t->key, false);
        strvec a = STRVEC_INIT;
        adp_ledger_names(e, "managed_servers", &a);
        adp_ledger_names(e, "kept_foreign", &a);
        bool own = a.n > 0;
        strvec_clear(&a);
        return own;
    }
    return t->names.n || t->kept_foreign.n || t->left_out_names.n;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists every project file the ledger says we own; updates the block. Runs
 * after the targets were written, so the ledger already holds this run. */
void adp_ap_gitignore_step(struct run *R, const struct adp_registry *r, struct tplan *T, size_t nt,
                           struct adp_hist_entry *h, strbuf *report, size_t *n_written,
                           size_t *n_failed)
{
    const struct adp_apply_opts *o = R->o;
    strbuf gi = SB_INIT, git = SB_INIT, text = SB_INIT, next = SB_INIT;
    sb_addf(&git, "%s/.git", o->project_root);
    sb_addf(&gi, "%s/.gitignore", o->project_root);
    struct as_err e = AS_ERR_INIT;
    if (!fs_exists(git.buf))
        goto out;
    if (fs_exists(gi.buf) && (adp_i_contained(gi.buf, o->project_root, &e) != 0 ||
                              fs_read_file(gi.buf, (size_t)16 << 20, 0, &text, &e) != 0)) {
        char buf[2048];
        term_sbprintf(report, "✗ .gitignore: %s\n", as_err_str(&e, buf, sizeof buf));
        goto out;
    }
    if (o->no_gitignore || !o->m->meta_gitignore) {
        if (adp_gitignore_has_block(text.buf, text.len))
            term_sbprintf(report,
                          "· .gitignore: keeping the agentstack block (opted out of updates; "
                          "`agentstack uninstall` removes it)\n");
        goto out;
    }
    strvec entries = STRVEC_INIT;
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        if (!d->has_mcp || !d->project_config)
            continue;
        const struct tplan *t = NULL;
        for (size_t k = 0; k < nt; k++)
            if (T[k].d == d && T[k].key && !T[k].lane_only)
                t = &T[k];
        bool own;
        if (t) {
            own = target_owns(R, t);
        } else {
            char *key = adp_ledger_key(d->id, o->project_root);
            json_t *le = adp_ledger_entry(R->ledger, key, false);
            strvec a = STRVEC_INIT;
            adp_ledger_names(le, "managed_servers", &a);
            adp_ledger_names(le, "kept_foreign", &a);
            own = a.n > 0;
            strvec_clear(&a);
            free(key);
        }
        char *ent = xasprintf("/%s", d->project_config);
        if (own && strvec_find(&entries, ent) < 0)
            strvec_push_take(&entries, ent);
        else
            free(ent);
    }
    /* Skills: one entry per link we placed, never the whole directory (a
     * hand-made skill beside ours must stay visible to git). */
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        if (!d->skills_project_dir)
            continue;
        strvec placed = STRVEC_INIT;
        const struct tplan *t = NULL;
        for (size_t k = 0; k < nt; k++)
            if (T[k].d == d && T[k].skills_on && !T[k].lane_only)
                t = &T[k];
        if (t && !o->write) {
            for (size_t k = 0; k < t->splan.placed.n; k++)
                strvec_push(&placed, t->splan.placed.v[k]);
        } else {
            char *key = adp_ledger_key(d->id, o->project_root);
            adp_ledger_names(adp_ledger_entry(R->ledger, key, false), "managed_skills", &placed);
            free(key);
        }
        for (size_t k = 0; k < placed.n; k++) {
            char *ent = xasprintf("/%s/%s", d->skills_project_dir, placed.v[k]);
            if (strvec_find(&entries, ent) < 0)
                strvec_push_take(&entries, ent);
            else
                free(ent);
        }
        strvec_clear(&placed);
    }
    /* Instruction files: written this run or already carrying our region. */
    for (size_t k = 0; k < nt; k++) {
        const struct tplan *t = &T[k];
        bool instr = false;
        for (size_t j = 0; j < t->lanes.n; j++)
            instr |= t->lanes.v[j]->kind == ADP_LANE_INSTRUCTIONS;
        if (!instr || !t->path || !fs_path_within(o->project_root, t->path))
            continue;
        const strbuf *now = &t->after;
        bool marked = memmem(now->buf, now->len, ADP_MD_START, strlen(ADP_MD_START)) != NULL;
        if (!marked || t->deleted)
            continue;
        const char *rel = t->path + strlen(o->project_root);
        char *ent = xasprintf("%s%s", rel[0] == '/' ? "" : "/", rel);
        if (strvec_find(&entries, ent) < 0)
            strvec_push_take(&entries, ent);
        else
            free(ent);
    }
    if (entries.n)
        qsort(entries.v, entries.n, sizeof(char *), cmp_strp);
    if (!entries.n && !adp_gitignore_has_block(text.buf, text.len)) {
        strvec_clear(&entries);
        goto out;
    }
    if (adp_gitignore_block(text.buf, text.len, &entries, &next, &e) != 0) {
        char buf[2048];
        term_sbprintf(report, "✗ %s\n", as_err_str(&e, buf, sizeof buf));
        if (e.hint[0])
            term_sbprintf(report, "  ↳ %s\n", e.hint);
        (*n_failed)++;
        strvec_clear(&entries);
        goto out;
    }
    if (next.len == text.len && memcmp(next.buf, text.buf, text.len) == 0) {
        strvec_clear(&entries);
        goto out;
    }
    if (!o->write) {
        term_sbprintf(report, "→ .gitignore: would %s a managed block (%zu entr%s)\n",
                      adp_gitignore_has_block(text.buf, text.len) ? "update" : "add", entries.n,
                      entries.n == 1 ? "y" : "ies");
        for (size_t i = 0; i < entries.n; i++)
            term_sbprintf(report, "  + %s\n", entries.v[i]);
        strvec_clear(&entries);
        goto out;
    }
    bool existed = fs_exists(gi.buf);
    unsigned gi_mode = existed ? adp_i_file_mode(gi.buf) : 0;
    struct fs_write_opts wo = {0644, FS_SYMLINK_FOLLOW, o->project_root, NULL};
    if (fs_write_atomic(gi.buf, next.buf, next.len, &wo, &e) != 0) {
        char buf[2048];
        term_sbprintf(report, "✗ .gitignore: %s\n", as_err_str(&e, buf, sizeof buf));
        (*n_failed)++;
    } else {
        term_sbprintf(report, "✓ .gitignore: managed block updated (%zu entr%s)\n", entries.n,
                      entries.n == 1 ? "y" : "ies");
        struct adp_hist_file f = {0};
        f.path = xstrdup(gi.buf);
        f.existed = existed;
        f.mode = gi_mode;
        sb_init(&f.before, 0);
        sb_add(&f.before, text.buf, text.len);
        f.label = xstrdup(".gitignore · managed block");
        vec_push(&h->files, f);
        (void)n_written;
    }
    strvec_clear(&entries);
out:
    sb_release(&gi);
    sb_release(&git);
    sb_release(&text);
    sb_release(&next);
}
