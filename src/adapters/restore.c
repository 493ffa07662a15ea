/* restore — put back what a recorded write replaced (docs/adapters.md).
 *
 * Every history entry holds each file's previous bytes (or "did not
 * exist") and mode, so a restore is byte-for-byte and the file gets its own
 * mode back (never the 0600 of our private copies, unless that was its
 * mode); directories the write created are removed only when empty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "base/fs.h"
#include "base/lock.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"

#define LOCK_WAIT_MS 10000
#define LIST_MAX 15
#define FILE_MAX ((size_t)256 << 20)

static void age(int64_t t, char *buf, size_t n)
{
    int64_t d = (int64_t)time(NULL) - t;
    if (d < 0)
        d = 0;
    if (d < 60)
        snprintf(buf, n, "%llds ago", (long long)d);
    else if (d < 3600)
        snprintf(buf, n, "%lldm ago", (long long)(d / 60));
    else if (d < 86400)
        snprintf(buf, n, "%lldh ago", (long long)(d / 3600));
    else
        snprintf(buf, n, "%lldd ago", (long long)(d / 86400));
}

static void tilde(const char *p, strbuf *out)
{
    const char *home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    if (hl > 1 && strncmp(p, home, hl) == 0 && p[hl] == '/')
        sb_addf(out, "~%s", p + hl);
    else
        sb_adds(out, p);
}

/* The adapter's user-scope config and its rolling backup, when one exists. */
static bool adapter_backup(const struct adp_desc *d, strbuf *cfg, strbuf *bak)
{
    struct as_err e = AS_ERR_INIT;
    if (!d->config_path || adp_expand_path(d->config_path, NULL, cfg, &e) != 0)
        return false;
    if (adp_backup_path(cfg->buf, bak, &e) != 0)
        return false;
    return fs_exists(bak->buf);
}

static int list(const struct adp_registry *r, const struct adp_restore_opts *o, adp_hist_list *hl)
{
    FILE *out = o->out;
    if (o->json) {
        json_t *a = json_array();
        for (size_t i = 0; i < hl->n && i < LIST_MAX; i++) {
            struct adp_hist_entry *e = hl->v[i];
            json_t *files = json_array();
            for (size_t k = 0; k < e->files.n; k++)
                json_array_append_new(files, json_string(e->files.v[k].path));
            json_array_append_new(a, json_pack("{s:s,s:I,s:s,s:s,s:s,s:o,s:b}", "id", e->id,
                                               "time_unix", (json_int_t)e->time_unix, "scope",
                                               e->scope, "operation", e->operation, "summary",
                                               e->summary, "files", files, "undone", e->undone));
        }
        json_t *backups = json_array();
        for (size_t i = 0; i < r->v.n; i++) {
            strbuf cfg = SB_INIT, bak = SB_INIT;
            if (adapter_backup(r->v.v[i], &cfg, &bak))
                json_array_append_new(backups, json_pack("{s:s,s:s,s:s}", "adapter", r->v.v[i]->id,
                                                         "path", cfg.buf, "backup", bak.buf));
            sb_release(&cfg);
            sb_release(&bak);
        }
        json_t *root = json_pack("{s:o,s:o}", "history", a, "backups", backups);
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(out, "%s\n", s);
        free(s);
        json_decref(root);
        return 0;
    }
    if (!hl->n)
        term_fprintf(out, "No recorded writes yet.\n");
    else
        term_fprintf(out, "Recorded writes (newest first):\n");
    for (size_t i = 0; i < hl->n && i < LIST_MAX; i++) {
        struct adp_hist_entry *e = hl->v[i];
        char ag[32];
        age(e->time_unix, ag, sizeof ag);
        term_fprintf(out, "  %.8s  %-8s  %-7s  %s — %s%s\n", e->id + 8, ag, e->scope, e->operation,
                     e->summary, e->undone ? " · undone" : "");
    }
    bool any = false;
    for (size_t i = 0; i < r->v.n; i++) {
        strbuf cfg = SB_INIT, bak = SB_INIT, dp = SB_INIT;
        if (adapter_backup(r->v.v[i], &cfg, &bak)) {
            if (!any)
                term_fprintf(out,
                             "Adapters with a backup (restore one: agentstack restore <adapter> "
                             "--write):\n");
            any = true;
            tilde(cfg.buf, &dp);
            term_fprintf(out, "  %-15s %s\n", r->v.v[i]->id, dp.buf);
        }
        sb_release(&cfg);
        sb_release(&bak);
        sb_release(&dp);
    }
    if (hl->n)
        term_fprintf(out, "undo one: agentstack restore <id> --write   (newest: agentstack restore "
                          "--last --write)\n");
    return 0;
}

static int by_depth_desc(const void *a, const void *b)
{
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

void adp_undo_skill_links(const json_t *log, FILE *out)
{
    for (size_t i = json_array_size(log); i-- > 0;) {
        json_t *x = json_array_get(log, i);
        json_t *made = json_object_get(x, "mkdir");
        if (json_is_array(made)) {
            /* Directories the session created, deepest first, only if empty. */
            for (size_t k = json_array_size(made); k-- > 0;) {
                const char *d = json_string_value(json_array_get(made, k));
                if (d && d[0] == '/')
                    (void)rmdir(d);
            }
            continue;
        }
        const char *dir = json_string_value(json_object_get(x, "dir"));
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *src = json_string_value(json_object_get(x, "src"));
        const char *prev = json_string_value(json_object_get(x, "prev"));
        if (!dir || !name || !src || !prev || strchr(name, '/'))
            continue;
        strbuf p = SB_INIT;
        sb_addf(&p, "%s/%s", dir, name);
        char cur[4096];
        ssize_t n = readlink(p.buf, cur, sizeof cur - 1);
        if (n >= 0)
            cur[n] = '\0';
        if (src[0]) {
            /* We linked it: remove our link (only if it is still ours). */
            if (n >= 0 && strcmp(cur, src) == 0) {
                unlink(p.buf);
                fprintf(out, "  − unlinking skill '%s' in %s\n", name, dir);
            }
        }
        struct stat st;
        if (prev[0] && lstat(p.buf, &st) != 0) {
            if (symlink(prev, p.buf) == 0)
                fprintf(out, "  + relinking skill '%s' in %s → %s\n", name, dir, prev);
        }
        sb_release(&p);
    }
}

size_t adp_history_revert(struct adp_hist_entry *e, bool write, FILE *out, size_t *pending_out)
{
    size_t pending = 0, failed = 0;
    for (size_t i = 0; i < e->files.n; i++) {
        struct adp_hist_file *f = &e->files.v[i];
        strbuf cur = SB_INIT, dp = SB_INIT;
        tilde(f->path, &dp);
        struct as_err re = AS_ERR_INIT;
        struct stat st;
        bool exists = lstat(f->path, &st) == 0;
        bool readable = exists && fs_read_file(f->path, FILE_MAX, 0, &cur, &re) == 0;
        bool matches = f->existed ? (readable && cur.len == f->before.len &&
                                     memcmp(cur.buf, f->before.buf, cur.len) == 0)
                                  : !exists;
        if (matches) {
            term_fprintf(out, "  ✓ %s already matches\n", f->label);
        } else if (f->existed) {
            pending++;
            term_fprintf(out, "  ↩ %s revert %s\n", f->label, dp.buf);
        } else {
            pending++;
            term_fprintf(out, "  ✗ %s delete %s\n", f->label, dp.buf);
        }
        if (write && !matches) {
            struct as_err we = AS_ERR_INIT;
            int rc;
            if (f->existed) {
                strbuf parent = SB_INIT;
                sb_adds(&parent, f->path);
                sb_setlen(&parent, (size_t)(strrchr(parent.buf, '/') - parent.buf));
                rc = parent.len ? fs_mkdirs(parent.buf, 0755, &we) : 0;
                sb_release(&parent);
                /* The recorded mode when there is one; an entry without it
                 * (older) keeps the file's current mode, or 0600 for a file
                 * that is gone: its bytes may hold secrets. */
                struct fs_write_opts wo = {f->mode ? f->mode : 0600, FS_SYMLINK_FOLLOW, NULL, NULL};
                if (rc == 0)
                    rc = f->mode ? fs_write_exact(f->path, f->before.buf, f->before.len, &wo, &we)
                                 : fs_write_atomic(f->path, f->before.buf, f->before.len, &wo, &we);
            } else {
                rc = unlink(f->path);
                if (rc != 0)
                    as_err_errno(&we, "cannot delete %s", f->path);
            }
            if (rc != 0) {
                char buf[2048];
                term_fprintf(out, "    ✗ %s\n", as_err_str(&we, buf, sizeof buf));
                failed++;
            }
        }
        sb_release_secure(&cur);
        sb_release(&dp);
    }
    if (write && e->skills)
        adp_undo_skill_links(e->skills, out);
    if (write) {
        /* Only now, with every file back: a directory two files shared is
         * empty only after both are gone. Deepest first; non-empty stays. */
        strvec dirs = STRVEC_INIT;
        for (size_t i = 0; i < e->files.n; i++)
            for (size_t k = 0; k < e->files.v[i].created_dirs.n; k++)
                if (strvec_find(&dirs, e->files.v[i].created_dirs.v[k]) < 0)
                    strvec_push(&dirs, e->files.v[i].created_dirs.v[k]);
        if (dirs.n)
            qsort(dirs.v, dirs.n, sizeof(char *), by_depth_desc);
        for (size_t k = 0; k < dirs.n; k++)
            (void)rmdir(dirs.v[k]);
        strvec_clear(&dirs);
    }
    if (pending_out)
        *pending_out = pending;
    return failed;
}

static int revert_entry(struct adp_hist_entry *e, const struct adp_restore_opts *o,
                        struct as_err *err)
{
    FILE *out = o->out;
    size_t pending = 0;
    size_t failed = adp_history_revert(e, o->write, out, &pending);
    if (!o->write) {
        if (pending)
            term_fprintf(out,
                         "Dry run: %zu file%s would be restored. Re-run with --write to "
                         "restore.\n",
                         pending, pending == 1 ? "" : "s");
        else
            term_fprintf(out, "Every file already matches — nothing to restore.\n");
        return 0;
    }
    if (failed) {
        as_err_set(err, "restore failed on %zu file%s — see ✗ above", failed,
                   failed == 1 ? "" : "s");
        return 1;
    }
    if (adp_history_mark_undone(e, err) != 0)
        return 1;
    term_fprintf(out,
                 "✓ undone — reverted files show up as pending again; re-apply with: agentstack "
                 "apply --write\n");
    return 0;
}

/* The mode cfg had before agentstack's newest recorded write to it — the
 * write the rolling backup was taken for; 0 when no entry says. */
static unsigned recorded_mode(const adp_hist_list *hl, const char *cfg)
{
    for (size_t i = 0; i < hl->n; i++)
        for (size_t k = 0; k < hl->v[i]->files.n; k++) {
            const struct adp_hist_file *f = &hl->v[i]->files.v[k];
            if (strcmp(f->path, cfg) == 0)
                return f->existed ? f->mode : 0;
        }
    return 0;
}

static int restore_adapter(const struct adp_desc *d, const struct adp_restore_opts *o,
                           const adp_hist_list *hl, struct as_err *err)
{
    strbuf cfg = SB_INIT, bak = SB_INIT, dp = SB_INIT, bytes = SB_INIT;
    int rc = 1;
    if (!adapter_backup(d, &cfg, &bak)) {
        as_err_set(err,
                   "no backup for %s — agentstack has not replaced its config on this "
                   "machine",
                   d->display);
        as_err_hint(err, "agentstack restore   (lists the recorded writes)");
        goto out;
    }
    tilde(cfg.buf, &dp);
    struct as_err terr = AS_ERR_INIT; /* re-tightened on open, best effort */
    (void)fs_tighten_file(bak.buf, 0600, &terr);
    if (fs_read_file(bak.buf, FILE_MAX, 1, &bytes, err) != 0)
        goto out;
    term_fprintf(o->out, "%s (%s)\n  ↩ restore the copy taken before agentstack's last write\n",
                 d->display, dp.buf);
    if (!o->write) {
        term_fprintf(o->out, "Dry run. Re-run with --write to restore.\n");
        rc = 0;
        goto out;
    }
    /* The config's own mode, not the backup's 0600: the one recorded for
     * that write, else the file's current mode (0600 if it is gone). */
    unsigned mode = recorded_mode(hl, cfg.buf);
    struct fs_write_opts wo = {mode ? mode : 0600, FS_SYMLINK_FOLLOW, NULL, NULL};
    if ((mode ? fs_write_exact(cfg.buf, bytes.buf, bytes.len, &wo, err)
              : fs_write_atomic(cfg.buf, bytes.buf, bytes.len, &wo, err)) != 0)
        goto out;
    term_fprintf(o->out, "✓ restored %s from its backup\n", dp.buf);
    rc = 0;
out:
    sb_release(&cfg);
    sb_release(&bak);
    sb_release(&dp);
    sb_release_secure(&bytes);
    return rc;
}

int adp_restore(const struct adp_registry *r, const struct adp_restore_opts *o, struct as_err *err)
{
    struct adp_restore_opts oo = *o;
    if (!oo.out)
        oo.out = stdout;
    struct as_lock lk = {-1};
    bool locked = false;
    if (oo.write) {
        strbuf ah = SB_INIT;
        if (home_ensure(HOME_ROOT_DIR, &ah, err) != 0 ||
            lock_acquire(&lk, ah.buf, LOCK_WAIT_MS, err) != 0) {
            as_err_prefix(err, "another agentstack write is in progress");
            sb_release(&ah);
            return 1;
        }
        locked = true;
        sb_release(&ah);
    }
    adp_hist_list hl = VEC_INIT;
    int rc = 0;
    if (adp_history_list(&hl, err) != 0) {
        rc = 1;
        goto out;
    }
    if (oo.list || (!oo.what && !oo.last)) {
        rc = list(r, &oo, &hl);
        goto out;
    }
    struct adp_hist_entry *target = NULL;
    if (oo.last) {
        for (size_t i = 0; i < hl.n && !target; i++)
            if (!hl.v[i]->undone)
                target = hl.v[i];
        if (!target) {
            term_fprintf(oo.out, "nothing to undo — no recorded write that isn't already undone\n");
            goto out;
        }
    } else {
        const struct adp_desc *d = adp_registry_find(r, oo.what);
        if (d) {
            rc = restore_adapter(d, &oo, &hl, err);
            goto out;
        }
        size_t wl = strlen(oo.what), hits = 0;
        for (size_t i = 0; i < hl.n; i++) {
            const char *id = hl.v[i]->id;
            /* The short id printed by the list is the last 8 hex digits. */
            if ((wl >= 4 && strncmp(id, oo.what, wl) == 0) ||
                (wl >= 4 && wl <= 8 && strncmp(id + 8, oo.what, wl) == 0)) {
                target = hl.v[i];
                hits++;
            }
        }
        if (hits != 1) {
            if (hits)
                as_err_set(err, "'%s' matches %zu recorded writes — give more of the id", oo.what,
                           hits);
            else
                as_err_set(err, "no recorded write or adapter matches '%s'", oo.what);
            as_err_hint(err, "agentstack restore   (lists them)");
            rc = 2;
            goto out;
        }
        if (target->undone) {
            term_fprintf(oo.out, "nothing to undo — that write is already undone\n");
            goto out;
        }
    }
    char ag[32];
    age(target->time_unix, ag, sizeof ag);
    term_fprintf(oo.out, "Undo %.8s (%s, %s, %s):\n", target->id + 8, target->operation,
                 target->scope, ag);
    rc = revert_entry(target, &oo, err);
out:
    adp_hist_list_free(&hl);
    if (locked)
        lock_release(&lk);
    return rc;
}

/* ---- undo: the history as a numbered timeline ----------------------------- */

static void undo_timeline(const adp_hist_list *hl, const struct adp_undo_opts *o)
{
    FILE *out = o->out;
    size_t n = hl->n;
    if (o->json) {
        json_t *a = json_array();
        for (size_t i = n; i-- > 0;) {
            const struct adp_hist_entry *e = hl->v[i];
            json_array_append_new(
                a, json_pack("{s:I,s:s,s:I,s:s,s:s,s:s,s:b}", "n", (json_int_t)(n - i), "id", e->id,
                             "time_unix", (json_int_t)e->time_unix, "scope", e->scope, "operation",
                             e->operation, "summary", e->summary, "undone", e->undone));
        }
        char *s = json_dumps(a, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(out, "%s\n", s);
        free(s);
        json_decref(a);
        return;
    }
    if (!n) {
        term_fprintf(out, "No recorded writes yet.\n");
        return;
    }
    term_fprintf(out, "Timeline (oldest first):\n");
    for (size_t i = n; i-- > 0;) {
        const struct adp_hist_entry *e = hl->v[i];
        char ag[32];
        age(e->time_unix, ag, sizeof ag);
        term_fprintf(out, "  %3zu  %.8s  %-8s  %-7s  %s — %s%s\n", n - i, e->id + 8, ag, e->scope,
                     e->operation, e->summary, e->undone ? " · undone" : "");
    }
    term_fprintf(out, "back to before one: agentstack undo --to <N> --write\n");
}

int adp_undo(const struct adp_undo_opts *o, struct as_err *err)
{
    struct adp_undo_opts oo = *o;
    if (!oo.out)
        oo.out = stdout;
    struct as_lock lk = {-1};
    bool locked = false;
    if (oo.write && oo.to) {
        if (adp_i_take_lock(&lk, err) != 0)
            return 1;
        locked = true;
    }
    adp_hist_list hl = VEC_INIT;
    int rc = 0;
    struct adp_hist_entry *batch = NULL, *rec = NULL;
    if (adp_history_list(&hl, err) != 0) {
        rc = 1;
        goto out;
    }
    if (!oo.to) {
        undo_timeline(&hl, &oo);
        goto out;
    }
    size_t n = hl.n;
    if (oo.to > n) {
        as_err_set(err, "there is no write #%zu (the timeline has %zu)", oo.to, n);
        as_err_hint(err, "agentstack undo   (shows the timeline)");
        rc = 2;
        goto out;
    }
    /* Entries #to..#n (newest first in hl: indexes 0..n-to). For each file,
     * the bytes it had before the oldest of them that touched it. */
    batch = xcalloc(1, sizeof *batch);
    size_t reverting = 0;
    for (size_t i = n - oo.to + 1; i-- > 0;) {
        struct adp_hist_entry *e = hl.v[i];
        if (e->undone)
            continue;
        reverting++;
        for (size_t k = 0; k < e->files.n; k++) {
            const struct adp_hist_file *f = &e->files.v[k];
            size_t j = 0;
            while (j < batch->files.n && strcmp(batch->files.v[j].path, f->path) != 0)
                j++;
            if (j == batch->files.n) {
                struct adp_hist_file c = {0};
                c.path = xstrdup(f->path);
                c.existed = f->existed;
                c.mode = f->mode;
                sb_init(&c.before, 0);
                sb_add(&c.before, f->before.buf, f->before.len);
                c.label = xstrdup(f->label ? f->label : "");
                vec_push(&batch->files, c);
            }
            for (size_t d = 0; d < f->created_dirs.n; d++)
                strvec_push(&batch->files.v[j].created_dirs, f->created_dirs.v[d]);
        }
        /* Skill links too, oldest write first: the revert walks the log
         * backwards, so the newest change is put back first. */
        if (json_array_size(e->skills)) {
            if (!batch->skills)
                batch->skills = json_array();
            json_array_extend(batch->skills, e->skills);
        }
    }
    if (!reverting) {
        term_fprintf(oo.out, "nothing to undo — no recorded write that isn't already undone\n");
        goto out;
    }
    term_fprintf(oo.out, "Back to before #%zu (%zu write%s to revert):\n", oo.to, reverting,
                 reverting == 1 ? "" : "s");
    /* The revert is itself a write: record what it replaces so it can be
     * undone in turn. */
    rec = xcalloc(1, sizeof *rec);
    for (size_t j = 0; j < batch->files.n; j++) {
        const char *p = batch->files.v[j].path;
        struct adp_hist_file f = {0};
        f.path = xstrdup(p);
        sb_init(&f.before, 0);
        struct as_err re = AS_ERR_INIT;
        f.existed = fs_exists(p) && fs_read_file(p, FILE_MAX, 0, &f.before, &re) == 0;
        f.mode = f.existed ? adp_i_file_mode(p) : 0;
        f.label = xstrdup(batch->files.v[j].label);
        vec_push(&rec->files, f);
    }
    size_t pending = 0;
    size_t failed = adp_history_revert(batch, oo.write, oo.out, &pending);
    if (!oo.write) {
        term_fprintf(oo.out,
                     pending ? "Dry run: %zu file%s would be restored. Re-run with --write to "
                               "restore.\n"
                             : "Every file already matches — nothing to restore.\n",
                     pending, pending == 1 ? "" : "s");
        goto out;
    }
    if (failed) {
        as_err_set(err, "undo failed on %zu file%s — see ✗ above", failed, failed == 1 ? "" : "s");
        rc = 1;
        goto out;
    }
    for (size_t i = n - oo.to + 1; i-- > 0;)
        if (!hl.v[i]->undone && adp_history_mark_undone(hl.v[i], err) != 0)
            rc = 1;
    if (pending) {
        rec->scope = xstrdup("global");
        rec->operation = xasprintf("undo --to %zu", oo.to);
        rec->summary = xasprintf("reverted %zu write%s", reverting, reverting == 1 ? "" : "s");
        struct as_err herr = AS_ERR_INIT;
        if (adp_history_record(rec, &herr) != 0) {
            char buf[2048];
            term_fprintf(stderr, "warning: the undo was not recorded: %s\n",
                         as_err_str(&herr, buf, sizeof buf));
        }
    }
    term_fprintf(oo.out,
                 "✓ undone — back to before #%zu; reverted files show up as pending again; "
                 "this undo is itself in the timeline (agentstack undo)\n",
                 oo.to);
out:
    adp_hist_entry_free(batch);
    adp_hist_entry_free(rec);
    adp_hist_list_free(&hl);
    if (locked)
        lock_release(&lk);
    return rc;
}
