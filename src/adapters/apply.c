/* apply — plan every target read-only, then (with --write) write each one
 * atomically under the writer lock, then record the ledger and one history
 * entry. See engine.h for the guarantees and docs/adapters.md for the text. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/apply_int.h"
#include "base/fs.h"
#include "base/lock.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"

static void tplan_free(struct tplan *t)
{
    free(t->path);
    free(t->key);
    free(t->note);
    sb_release_secure(&t->before);
    sb_release_secure(&t->after);
    for (size_t i = 0; i < t->rendered.n; i++)
        adp_rendered_release(&t->rendered.v[i]);
    vec_free(&t->rendered);
    strvec_clear(&t->names);
    strvec_clear(&t->removed);
    strvec_clear(&t->skip_lines);
    strvec_clear(&t->left_out_lines);
    strvec_clear(&t->unresolved_lines);
    strvec_clear(&t->unresolved_refs);
    strvec_clear(&t->kept_foreign);
    strvec_clear(&t->left_out_names);
    adp_secrets_free(&t->secrets);
    free(t->block_msg);
    strvec_clear(&t->created_dirs);
    free(t->skills_dir);
    free(t->skills_note);
    vec_free(&t->lanes);
    strvec_clear(&t->sreq.names);
    strvec_clear(&t->sreq.sources);
    strvec_clear(&t->sreq.why);
    strvec_clear(&t->smanaged);
    adp_skills_plan_free(&t->splan);
}

/* ---- merging -------------------------------------------------------------- */

static int merge_servers(const struct tplan *t, const char *text, size_t len, bool upserts,
                         strbuf *out, struct as_err *err)
{
    const char **rm = xcalloc(t->removed.n + 1, sizeof(char *));
    for (size_t i = 0; i < t->removed.n; i++)
        rm[i] = t->removed.v[i];
    size_t nu = upserts ? t->rendered.n : 0;
    int rc;
    if (t->fmt == ADP_FMT_TOML) {
        struct adp_toml_entry *u = xcalloc(nu + 1, sizeof *u);
        for (size_t i = 0; i < nu; i++)
            u[i] = (struct adp_toml_entry){t->names.v[i], t->rendered.v[i].toml};
        rc = adp_toml_merge(t->path, text, len, t->d->mcp.location, u, nu, rm, t->removed.n, out,
                            err);
        free(u);
    } else {
        struct adp_json_entry *u = xcalloc(nu + 1, sizeof *u);
        for (size_t i = 0; i < nu; i++)
            u[i] = (struct adp_json_entry){t->names.v[i], t->rendered.v[i].json};
        struct adp_json_edit ed = {
            t->fmt == ADP_FMT_JSONC, t->d->mcp.location, u, nu, rm, t->removed.n};
        rc = adp_json_merge(t->path, text, len, &ed, out, err);
        free(u);
    }
    free(rm);
    return rc;
}

/* The servers' edit, then each lane's edit of the same file, in order. */
static int merge_into(const struct tplan *t, const char *text, size_t len, bool upserts,
                      strbuf *out, struct as_err *err)
{
    strbuf cur = SB_INIT;
    if (t->lane_only)
        sb_add(&cur, text, len);
    else if (merge_servers(t, text, len, upserts, &cur, err) != 0)
        goto fail;
    for (size_t i = 0; i < t->lanes.n; i++) {
        strbuf next = SB_INIT;
        if (adp_lane_apply(t->lanes.v[i], t->path, cur.buf, cur.len, &next, err) != 0) {
            sb_release_secure(&next);
            goto fail;
        }
        sb_release_secure(&cur);
        cur = next;
    }
    sb_add(out, cur.buf, cur.len);
    sb_release_secure(&cur);
    return 0;
fail:
    sb_release_secure(&cur);
    return -1;
}

/* ---- planning ------------------------------------------------------------- */

static void run_release(struct run *R)
{
    vec_free(&R->servers);
    strvec_clear(&R->skill_names);
    strvec_clear(&R->skill_srcs);
    strvec_clear(&R->skill_why);
    adp_i_libset_free(&R->lib);
    strvec_clear(&R->skill_notes);
}

static bool listed(const strvec *v, const char *s)
{
    return strvec_find(v, s) >= 0;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A sorted view of names (pointers into it) for membership tests over
 * hundreds of servers; free() the result. */
static const char **sorted_view(const strvec *v)
{
    const char **s = xcalloc(v->n ? v->n : 1, sizeof *s);
    for (size_t i = 0; i < v->n; i++)
        s[i] = v->v[i];
    qsort(s, v->n, sizeof *s, str_cmp);
    return s;
}

static bool in_view(const char **view, size_t n, const char *s)
{
    return bsearch(&s, view, n, sizeof *view, str_cmp) != NULL;
}

static void plan_target(struct run *R, struct tplan *t)
{
    const struct adp_apply_opts *o = R->o;
    const struct adp_desc *d = t->d;
    sb_init(&t->before, 0);
    sb_init(&t->after, 0);
    t->key = adp_ledger_key(d->id, o->project_scope ? o->project_root : NULL);
    if (!d->has_mcp) {
        t->note = xstrdup("· no MCP server config — nothing for `apply` to render here");
        return;
    }
    const char *rel = o->project_scope ? d->project_config : d->config_path;
    if (!rel) {
        t->note = xasprintf("%s — no project MCP server config, skipping servers here", d->display);
        return;
    }
    t->fmt = o->project_scope ? d->project_format : d->config_format;
    strbuf p = SB_INIT;
    if (adp_expand_path(rel, o->project_scope ? o->project_root : NULL, &p, &t->err) != 0) {
        t->failed = true;
        sb_release(&p);
        return;
    }
    t->path = sb_detach(&p, NULL);
    json_t *entry = adp_ledger_entry(R->ledger, t->key, false);
    const char *src = entry ? json_string_value(json_object_get(entry, "source_manifest")) : NULL;
    bool other_manifest = src && o->manifest_path && strcmp(src, o->manifest_path) != 0;
    if (!manifest_render_locally(o->m, d->id) && adp_i_bridge_registered(d)) {
        adp_ap_plan_live(R, t, entry, other_manifest);
        return;
    }
    strvec managed = STRVEC_INIT, foreign_before = STRVEC_INIT;
    adp_ledger_names(entry, "managed_servers", &managed);
    adp_ledger_names(entry, "kept_foreign", &foreign_before);

    struct adp_render_ctx rc = {o->resolve, o->resolve_ctx, &t->secrets,
                                o->project_scope ? o->project_root : o->m->project_root};
    strvec wanted = STRVEC_INIT; /* every selected name for this adapter, rendered or not */
    for (size_t i = 0; i < R->servers.n; i++) {
        const struct mf_server *s = R->servers.v[i];
        if (!manifest_targets_include(&s->targets, d->id))
            continue;
        strvec_push(&wanted, s->name);
        struct adp_rendered r;
        struct as_err e = AS_ERR_INIT;
        enum adp_render_status st = adp_render_server(d, t->fmt, s, &rc, &r, &e);
        if (st == ADP_RENDER_OK) {
            vec_push(&t->rendered, r);
            strvec_push(&t->names, s->name);
            continue;
        }
        if (st == ADP_RENDER_SKIP) {
            strvec_pushf(&t->skip_lines, "↳ skipping '%s' — %s", s->name, r.reason.buf);
            /* A skipped name is no longer ours to keep in the file. */
            wanted.n--;
            free(wanted.v[wanted.n]);
            wanted.v[wanted.n] = NULL;
        } else if (st == ADP_RENDER_UNRESOLVED) {
            strbuf names = SB_INIT;
            for (size_t k = 0; k < r.missing.n; k++) {
                sb_addf(&names, "%s%s", k ? ", " : "", r.missing.v[k]);
                if (!listed(&t->unresolved_refs, r.missing.v[k]))
                    strvec_push(&t->unresolved_refs, r.missing.v[k]);
                if (!o->allow_unresolved)
                    strvec_pushf(&t->unresolved_lines,
                                 "✗ unresolved secret %s (server '%s') ↳ agentstack secret set %s",
                                 r.missing.v[k], s->name, r.missing.v[k]);
            }
            if (o->allow_unresolved) {
                strvec_pushf(&t->left_out_lines,
                             "↳ leaving out '%s' — unresolved secret %s "
                             "(--allow-unresolved)",
                             s->name, names.buf);
                strvec_push(&t->left_out_names, s->name);
            } else {
                if (!t->blocked)
                    t->blocked_unresolved = true;
                t->blocked = true;
                if (!t->block_msg)
                    t->block_msg = xstrdup("not written — unresolved secrets; set them or pass "
                                           "--allow-unresolved");
            }
            sb_release(&names);
        } else {
            t->blocked = true;
            t->blocked_unresolved = false;
            char buf[2048];
            free(t->block_msg);
            t->block_msg = xstrdup(as_err_str(&e, buf, sizeof buf));
        }
        adp_rendered_release(&r);
    }

    /* Pruning: ledger names no longer selected. Names another manifest wrote
     * are kept (and reported) unless --prune-foreign. */
    const char **want_view = sorted_view(&wanted);
    for (size_t i = 0; i < managed.n; i++) {
        if (in_view(want_view, wanted.n, managed.v[i]))
            continue;
        if (other_manifest && !o->prune_foreign)
            strvec_push(&t->kept_foreign, managed.v[i]);
        else
            strvec_push(&t->removed, managed.v[i]);
    }
    for (size_t i = 0; i < foreign_before.n; i++) {
        if (in_view(want_view, wanted.n, foreign_before.v[i]) ||
            listed(&t->kept_foreign, foreign_before.v[i]))
            continue;
        if (o->prune_foreign)
            strvec_push(&t->removed, foreign_before.v[i]);
        else
            strvec_push(&t->kept_foreign, foreign_before.v[i]);
    }
    free(want_view);
    strvec_clear(&wanted);
    strvec_clear(&managed);
    strvec_clear(&foreign_before);

    if (o->trust_refusal && t->rendered.n)
        t->trust_blocked = true;
}

/* Adds the values of s not masked yet (each target resolves the same
 * secrets again: a sorted view keeps this linear-logarithmic). */
static void add_mask(struct run *R, const adp_secrets *s)
{
    size_t n0 = R->mask.n;
    const char **view = xcalloc(n0 ? n0 : 1, sizeof *view);
    for (size_t k = 0; k < n0; k++)
        view[k] = R->mask.v[k].value;
    qsort(view, n0, sizeof *view, str_cmp);
    for (size_t i = 0; i < s->n; i++) {
        bool have = in_view(view, n0, s->v[i].value);
        for (size_t k = n0; k < R->mask.n && !have; k++)
            have = strcmp(R->mask.v[k].value, s->v[i].value) == 0;
        if (!have) {
            struct adp_secret x = {xstrdup(s->v[i].name), xstrdup(s->v[i].value)};
            vec_push(&R->mask, x);
        }
    }
    free(view);
}

/* At project scope a target, or any existing parent, must resolve inside
 * the project (the one containment check, base/fs.h); apply
 * says the file is not written, diff (which writes nothing) only why. */
static int target_contained(const struct adp_apply_opts *o, const char *path, struct as_err *err)
{
    if (!o->project_scope || adp_i_contained(path, o->project_root, err) == 0)
        return 0;
    if (!o->diff)
        as_err_set(err, "%s — not written", err->msg);
    return -1;
}

/* Reads the file (once, bounded, regular files only) and computes the
 * proposed bytes: servers, then every lane edit of the same file. */
static void read_and_merge_file(struct run *R, struct tplan *t);

static void read_and_merge(struct run *R, struct tplan *t)
{
    read_and_merge_file(R, t);
    /* A CLI served live whose file cannot be read keeps its plain note:
     * apply writes no server config there, as before. */
    if (t->live && t->failed) {
        t->failed = false;
        as_err_clear(&t->err);
        free(t->note);
        t->note = xstrdup(ADP_LIVE_NOTE);
    }
}

static void read_and_merge_file(struct run *R, struct tplan *t)
{
    const struct adp_apply_opts *o = R->o;
    if (target_contained(o, t->path, &t->err) != 0) {
        t->failed = true;
        return;
    }
    struct stat st;
    if (stat(t->path, &st) == 0) {
        t->existed = true;
        if (!S_ISREG(st.st_mode)) {
            as_err_set(&t->err, "%s is not a regular file — not written", t->path);
            t->failed = true;
            return;
        }
        if (fs_read_file(t->path, ADP_INPUT_MAX, 0, &t->before, &t->err) != 0) {
            as_err_prefix(&t->err, "cannot read the existing config");
            t->failed = true;
            return;
        }
    } else if (errno != ENOENT) {
        as_err_errno(&t->err, "%s", t->path);
        t->failed = true;
        return;
    } else if (lstat(t->path, &st) == 0 && S_ISLNK(st.st_mode)) {
        /* Global scope (project scope stopped in target_contained): the
         * writer would follow the link into a missing place. */
        fs_dangling_link(t->path, o->project_scope ? o->project_root : NULL, &t->err);
        if (!o->diff)
            as_err_set(&t->err, "%s — not written", t->err.msg);
        t->failed = true;
        return;
    }
    if (t->live && !adp_ap_live_present(t)) {
        /* Nothing direct to take out: as before, just the note. */
        t->note = xstrdup(ADP_LIVE_NOTE);
        return;
    }
    if (merge_into(t, t->before.buf, t->before.len, true, &t->after, &t->err) != 0) {
        if (t->live) {
            as_err_clear(&t->err);
            t->note = xstrdup(ADP_LIVE_NOTE);
            return;
        }
        t->failed = true;
        return;
    }
    t->changed =
        t->after.len != t->before.len || memcmp(t->after.buf, t->before.buf, t->before.len) != 0;
    add_mask(R, &t->secrets);
    for (size_t i = 0; i < t->lanes.n; i++)
        add_mask(R, &t->lanes.v[i]->secrets);
}

/* ---- skills (use) --------------------------------------------------------- */

/* The toolset's skills and where each one lives (libservers.c). */
static int resolve_skills(struct run *R, struct as_err *err)
{
    return adp_i_toolset_skills(R->o, &R->skill_names, &R->skill_srcs, &R->skill_why,
                                &R->skill_notes, err);
}

static void plan_skills(struct run *R, struct tplan *t)
{
    const struct adp_apply_opts *o = R->o;
    const struct adp_desc *d = t->d;
    if (t->note && strstr(t->note, "served live"))
        return;
    const char *rel = o->project_scope ? d->skills_project_dir : d->skills_dir;
    json_t *entry = adp_ledger_entry(R->ledger, t->key, false);
    adp_ledger_names(entry, "managed_skills", &t->smanaged);
    if (!rel) {
        if (R->skill_names.n)
            t->skills_note = xasprintf("(skills not supported by this CLI%s — %zu skill%s not "
                                       "placed)",
                                       o->project_scope ? " at project scope" : "",
                                       R->skill_names.n, R->skill_names.n == 1 ? "" : "s");
        return;
    }
    strbuf dir = SB_INIT;
    if (adp_expand_path(rel, o->project_scope ? o->project_root : NULL, &dir, &t->serr) != 0) {
        t->skills_failed = true;
        sb_release(&dir);
        return;
    }
    t->skills_on = true;
    t->skills_dir = sb_detach(&dir, NULL);
    t->sreq.dir = t->skills_dir;
    t->sreq.contain_root = o->project_scope ? o->project_root : NULL;
    t->sreq.managed = &t->smanaged;
    for (size_t i = 0; i < R->skill_names.n; i++) {
        /* An untrusted project places nothing new; removing ours stays allowed. */
        if (o->trust_refusal)
            continue;
        strvec_push(&t->sreq.names, R->skill_names.v[i]);
        strvec_push(&t->sreq.sources, R->skill_srcs.v[i]);
        strvec_push(&t->sreq.why, R->skill_why.v[i]);
    }
    if (target_contained(o, t->skills_dir, &t->serr) != 0) {
        t->skills_failed = true;
        return;
    }
    adp_skills_plan(&t->sreq, &t->splan);
    if (o->trust_refusal && R->skill_names.n)
        strvec_pushf(&t->splan.lines, "✗ refusing to place skills: %s", o->trust_refusal);
}

static void record_skills(struct run *R, struct tplan *t)
{
    json_t *e = adp_ledger_entry(R->ledger, t->key, true);
    adp_ledger_set_names(e, "managed_skills", &t->splan.placed);
    json_object_set_new(e, "active_profile",
                        R->o->toolset ? json_string(R->o->toolset) : json_null());
}

/* ---- writing -------------------------------------------------------------- */

static int write_target(struct run *R, struct tplan *t)
{
    const struct adp_apply_opts *o = R->o;
    if (target_contained(o, t->path, &t->err) != 0)
        return -1;
    /* Claude Code (and others) rewrite their files while running: re-read
     * and re-merge if the bytes moved since planning. */
    strbuf now = SB_INIT;
    bool exists_now = fs_exists(t->path);
    if (exists_now && fs_read_file(t->path, ADP_INPUT_MAX, 0, &now, &t->err) != 0) {
        sb_release_secure(&now);
        return -1;
    }
    bool moved = exists_now != t->existed || now.len != t->before.len ||
                 memcmp(now.buf, t->before.buf, now.len) != 0;
    if (moved || t->trust_blocked) {
        strbuf again = SB_INIT;
        if (merge_into(t, now.buf, now.len, !t->trust_blocked, &again, &t->err) != 0) {
            sb_release_secure(&again);
            sb_release_secure(&now);
            return -1;
        }
        sb_release_secure(&t->before);
        t->before = now;
        t->existed = exists_now;
        sb_release_secure(&t->after);
        t->after = again;
        sb_init(&now, 0);
    }
    sb_release_secure(&now);
    if (t->after.len == t->before.len && memcmp(t->after.buf, t->before.buf, t->after.len) == 0)
        return 0;
    t->before_mode = t->existed ? adp_i_file_mode(t->path) : 0;

    strbuf backup = SB_INIT;
    if (adp_backup_path(t->path, &backup, &t->err) != 0) {
        sb_release(&backup);
        return -1;
    }
    /* A project file left holding only the empty section, or an instruction
     * file left empty once our region is gone, is removed. */
    bool drop = t->existed && ((!t->lane_only && o->project_scope && t->removed.n &&
                                adp_i_only_empty_section(t->d, t->fmt, t->path, &t->after)) ||
                               (t->lane_only && t->after.len == 0));
    if (drop) {
        struct fs_write_opts bo = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
        if (fs_write_exact(backup.buf, t->before.buf, t->before.len, &bo, &t->err) != 0 ||
            unlink(t->path) != 0) {
            if (!as_err_isset(&t->err))
                as_err_errno(&t->err, "cannot remove %s", t->path);
            sb_release(&backup);
            return -1;
        }
        sb_release(&backup);
        t->deleted = true;
        t->written = true;
        return 0;
    }
    sb_release(&backup);
    bool secret = t->secrets.n > 0;
    for (size_t i = 0; i < t->lanes.n; i++)
        secret |= t->lanes.v[i]->secrets.n > 0;
    struct adp_i_write w = {
        t->path,         t->after.buf,         t->after.len,
        t->existed,      secret ? 0600 : 0644, o->project_scope ? o->project_root : NULL,
        &t->created_dirs};
    if (adp_i_write_file(&w, &t->err) != 0)
        return -1;
    t->written = true;
    return 0;
}

static void record_ledger(struct run *R, struct tplan *t)
{
    json_t *e = adp_ledger_entry(R->ledger, t->key, true);
    strvec managed = STRVEC_INIT;
    strvec before = STRVEC_INIT;
    adp_ledger_names(e, "managed_servers", &before);
    if (t->trust_blocked || t->live) {
        /* Only the prune was written: what we own shrank, nothing was added. */
        for (size_t i = 0; i < before.n; i++)
            if (!listed(&t->removed, before.v[i]))
                strvec_push(&managed, before.v[i]);
    } else {
        for (size_t i = 0; i < t->names.n; i++)
            strvec_push(&managed, t->names.v[i]);
    }
    /* Left out under --allow-unresolved: still ours, still in the file. */
    for (size_t i = 0; i < t->left_out_names.n; i++)
        if (listed(&before, t->left_out_names.v[i]) && !listed(&managed, t->left_out_names.v[i]))
            strvec_push(&managed, t->left_out_names.v[i]);
    adp_ledger_set_names(e, "managed_servers", &managed);
    adp_ledger_set_names(e, "kept_foreign", &t->kept_foreign);
    char hash[17];
    adp_fnv1a64_hex(t->after.buf, t->after.len, hash);
    json_object_set_new(e, "last_hash", t->deleted ? json_null() : json_string(hash));
    json_object_set_new(e, "source_manifest",
                        R->o->manifest_path ? json_string(R->o->manifest_path) : json_null());
    json_object_set_new(e, "active_profile",
                        R->o->toolset ? json_string(R->o->toolset) : json_null());
    strvec_clear(&managed);
    strvec_clear(&before);
}

/* ---- target and server selection ---------------------------------------- */

static int select_targets(const struct adp_registry *r, const struct adp_apply_opts *o,
                          desc_list *out, struct as_err *err)
{
    const strvec *ids = (o->targets && o->targets->n) ? o->targets
                        : o->m->has_targets           ? &o->m->targets_default
                                                      : NULL;
    if (ids) {
        for (size_t i = 0; i < ids->n; i++) {
            const struct adp_desc *d = adp_registry_find(r, ids->v[i]);
            if (!d)
                return adp_unknown_id_err(r, ids->v[i], err);
            bool dup = false;
            for (size_t k = 0; k < out->n; k++)
                dup |= out->v[k] == d;
            if (!dup)
                vec_push(out, d);
        }
        return 0;
    }
    for (size_t i = 0; i < r->v.n; i++)
        if (adp_detected(r->v.v[i], o->project_scope ? o->project_root : NULL))
            vec_push(out, r->v.v[i]);
    if (!out->n)
        for (size_t i = 0; i < r->v.n; i++)
            vec_push(out, r->v.v[i]);
    return 0;
}

static void describe_server(const struct run *R, const struct mf_server *s, strbuf *out)
{
    const char *ref = adp_i_libset_ref(&R->lib, s);
    if (ref)
        sb_addf(out, "library server '%s'", ref);
    else
        sb_addf(out, "[servers.%s]", s->name);
}

/* Adds what a toolset reference names: a [servers] entry, else the library's
 * definition. Two different servers that a CLI would hold under one name
 * ("kibana" and "team:kibana") refuse the run rather than one hiding the
 * other. */
static int add_server_ref(struct run *R, const char *ref, struct as_err *err)
{
    const struct mf_server *s = manifest_server(R->o->m, ref);
    if (!s && !(s = adp_i_libset_get(&R->lib, R->o, ref, adp_i_check_library_pins(R->o), err)))
        return -1;
    for (size_t i = 0; i < R->servers.n; i++) {
        if (R->servers.v[i] == s)
            return 0;
        if (strcmp(R->servers.v[i]->name, s->name) == 0) {
            strbuf a = SB_INIT, b = SB_INIT;
            describe_server(R, R->servers.v[i], &a);
            describe_server(R, s, &b);
            as_err_set(err, "%s and %s would both be written as '%s' — not rendered", a.buf, b.buf,
                       s->name);
            as_err_hint(err, "name only one of them in the toolsets (or select one with "
                             "--toolset)");
            sb_release(&a);
            sb_release(&b);
            return -1;
        }
    }
    vec_push(&R->servers, s);
    return 0;
}

const char *adp_ap_removal_reason(const struct run *R, const char *name, strbuf *out)
{
    const struct manifest *m = R->o->m;
    bool declared = manifest_server(m, name) != NULL;
    for (size_t i = 0; !declared && i < m->toolsets.n; i++)
        for (size_t j = 0; j < m->toolsets.v[i].servers.n; j++)
            if (!strcmp(m->toolsets.v[i].servers.v[j], name))
                declared = true;
    sb_setlen(out, 0);
    if (declared && R->o->toolset)
        sb_addf(out, "declared, but not in toolset '%s'", R->o->toolset);
    else
        sb_adds(out, "no longer in manifest");
    return out->buf;
}

static int select_servers(struct run *R, struct as_err *err)
{
    const struct manifest *m = R->o->m;
    if (!R->o->toolset) {
        for (size_t i = 0; i < m->servers.n; i++)
            vec_push(&R->servers, &m->servers.v[i]);
        /* Library servers exist for a manifest only through its toolsets:
         * every toolset's, as lock pins them. */
        for (size_t i = 0; i < m->toolsets.n; i++)
            for (size_t j = 0; j < m->toolsets.v[i].servers.n; j++) {
                const char *ref = m->toolsets.v[i].servers.v[j];
                if (!manifest_server(m, ref) && add_server_ref(R, ref, err) != 0) {
                    as_err_prefix(err, "toolset '%s'", m->toolsets.v[i].name);
                    return -1;
                }
            }
        return 0;
    }
    const struct mf_toolset *ts = manifest_toolset(m, R->o->toolset);
    if (!ts) {
        as_err_set(err, "no toolset '%s' in %s", R->o->toolset, m->path);
        strbuf names = SB_INIT;
        for (size_t i = 0; i < m->toolsets.n; i++)
            sb_addf(&names, "%s%s", i ? ", " : "", m->toolsets.v[i].name);
        if (names.len)
            as_err_hint(err, "toolsets here: %s", names.buf);
        sb_release(&names);
        return -1;
    }
    for (size_t i = 0; i < ts->servers.n; i++) {
        if (add_server_ref(R, ts->servers.v[i], err) != 0) {
            as_err_prefix(err, "toolset '%s'", ts->name);
            return -1;
        }
    }
    return 0;
}

/* ---- the run -------------------------------------------------------------- */

static void hist_add(struct adp_hist_entry *h, struct tplan *t)
{
    /* Two plans may write one file (a live CLI's prune, then a lane of the
     * same file): the first one's bytes are the ones undo puts back. */
    for (size_t i = 0; i < h->files.n; i++)
        if (strcmp(h->files.v[i].path, t->path) == 0)
            return;
    struct adp_hist_file f = {0};
    f.path = xstrdup(t->path);
    f.existed = t->existed;
    f.mode = t->before_mode;
    sb_init(&f.before, 0);
    sb_add(&f.before, t->before.buf, t->before.len);
    if (t->lane_only) {
        strbuf what = SB_INIT;
        for (size_t i = 0; i < t->lanes.n; i++)
            sb_addf(&what, "%s%s", i ? " + " : "", adp_lane_name(t->lanes.v[i]->kind));
        f.label = xasprintf("%s · %s", t->d->display, what.buf);
        sb_release(&what);
    } else {
        f.label = xasprintf("%s · servers", t->d->display);
    }
    for (size_t i = 0; i < t->created_dirs.n; i++)
        strvec_push(&f.created_dirs, t->created_dirs.v[i]);
    vec_push(&h->files, f);
    strvec_push(&h->targets, t->d->id);
}

/* Step 1: targets, servers, skills, the writer lock and the ledger. 0, or
 * the exit code with err (nothing held). */
static int ap_open(const struct adp_registry *r, struct run *R, desc_list *descs,
                   struct as_lock *lk, bool *locked, struct as_err *err)
{
    const struct adp_apply_opts *oo = R->o;
    if (select_targets(r, oo, descs, err) != 0)
        return 2;
    if (select_servers(R, err) != 0 || (oo->use && resolve_skills(R, err) != 0))
        return 1;
    if (oo->write && !oo->caller_holds_lock) {
        strbuf ah = SB_INIT;
        if (home_ensure(HOME_ROOT_DIR, &ah, err) != 0 ||
            lock_acquire(lk, ah.buf, ADP_LOCK_WAIT_MS, err) != 0) {
            as_err_prefix(err, "another agentstack write is in progress");
            sb_release(&ah);
            return 1;
        }
        *locked = true;
        sb_release(&ah);
    }
    if (adp_ledger_load(&R->ledger, err) != 0) {
        if (*locked)
            lock_release(lk);
        *locked = false;
        return 1;
    }
    return 0;
}

/* Step 2: every target planned read-only, the lanes attached to the file
 * each edits, every file read and merged. Returns the plans (*nT of them). */
static struct tplan *ap_plan(struct run *R, const desc_list *descs, adp_lane_list *lanes,
                             size_t *nT_out)
{
    const struct adp_apply_opts *oo = R->o;
    adp_lanes_plan(oo, R->ledger, descs->v, descs->n, lanes);
    struct tplan *T = xcalloc(descs->n + lanes->n + 1, sizeof *T);
    size_t nT = descs->n;
    for (size_t i = 0; i < descs->n; i++) {
        T[i].d = descs->v[i];
        if (!oo->instructions) /* instructions: only the lanes below */
            plan_target(R, &T[i]);
        if (oo->use)
            plan_skills(R, &T[i]);
    }
    /* Each lane edits the file it names: the server file when it is the same
     * (codex config.toml), else a file of its own shared by every lane and
     * CLI that names it (settings + hooks, a shared AGENTS.md). */
    for (size_t i = 0; i < lanes->n; i++) {
        struct adp_lane *l = lanes->v[i];
        if (!l->path)
            continue;
        struct tplan *t = NULL;
        for (size_t k = 0; k < nT && !t; k++)
            if (T[k].path && !T[k].note && !T[k].live && !T[k].failed &&
                strcmp(T[k].path, l->path) == 0)
                t = &T[k];
        if (!t) {
            t = &T[nT++];
            t->d = l->first;
            t->lane_only = true;
            t->path = xstrdup(l->path);
            t->fmt = l->fmt;
            sb_init(&t->before, 0);
            sb_init(&t->after, 0);
            t->key = adp_ledger_key(l->first->id, oo->project_scope ? oo->project_root : NULL);
        }
        vec_push(&t->lanes, l);
    }
    for (size_t i = 0; i < nT; i++)
        if (T[i].path && !T[i].note && !T[i].failed)
            read_and_merge(R, &T[i]);
    *nT_out = nT;
    return T;
}

static void count_failure(struct ap_counts *c, const struct tplan *t, const struct as_err *e)
{
    c->failed++;
    sb_addf(&c->failed_names, "%s%s", c->failed_names.len ? ", " : "", t->d->id);
    if (!c->first_fail)
        c->first_fail = as_err_str(e, c->failbuf, sizeof c->failbuf);
}

/* Step 3: the counts, and (with --write) each changed file written with its
 * undo record and ledger entry. */
static void ap_write(struct run *R, struct tplan *T, size_t nT, const adp_lane_list *lanes,
                     const desc_list *descs, struct adp_hist_entry *h, struct ap_counts *c)
{
    const struct adp_apply_opts *oo = R->o;
    const char *root = oo->project_scope ? oo->project_root : NULL;
    for (size_t i = 0; i < lanes->n; i++) {
        c->blocked += lanes->v[i]->blocked;
        c->blocked_lane += lanes->v[i]->blocked;
        if (lanes->v[i]->trust_blocked) {
            c->trust++;
            if (!c->trust_what)
                c->trust_what = adp_lane_name(lanes->v[i]->kind);
        }
    }
    for (size_t i = 0; i < nT; i++) {
        struct tplan *t = &T[i];
        if (t->note)
            continue;
        if (!t->lane_only)
            c->targets++;
        if (t->failed) {
            count_failure(c, t, &t->err);
            continue;
        }
        if (t->blocked) {
            c->blocked++;
            c->blocked_other += !t->blocked_unresolved;
            continue;
        }
        if (t->trust_blocked) {
            c->trust++;
            c->trust_what = "MCP servers";
        }
        if (!t->changed) {
            for (size_t k = 0; oo->write && k < t->lanes.n; k++)
                adp_lane_record(t->lanes.v[k], R->ledger, root);
            continue;
        }
        c->changed++;
        c->removing += t->removed.n;
        if (!oo->write)
            continue;
        if (write_target(R, t) != 0) {
            count_failure(c, t, &t->err);
            continue;
        }
        if (t->written) {
            c->written++;
            hist_add(h, t);
            if (!t->lane_only)
                record_ledger(R, t);
            for (size_t k = 0; k < t->lanes.n; k++)
                adp_lane_record(t->lanes.v[k], R->ledger, root);
        }
    }
    /* A CLI counts once, however many of its files change. */
    c->changed = 0;
    for (size_t i = 0; i < descs->n; i++) {
        bool ch = false;
        for (size_t k = 0; k < nT && !ch; k++)
            ch = T[k].d == descs->v[i] && T[k].changed && !T[k].note && !T[k].failed &&
                 !T[k].blocked;
        c->changed += ch;
    }
}

/* Step 4 (use): each CLI's skill links placed, logged for undo. */
static void ap_write_skills(struct run *R, struct tplan *T, const desc_list *descs,
                            struct ap_counts *c)
{
    const struct adp_apply_opts *oo = R->o;
    for (size_t i = 0; oo->use && i < descs->n; i++) {
        struct tplan *t = &T[i];
        if (t->skills_failed) {
            count_failure(c, t, &t->serr);
            continue;
        }
        if (!t->skills_on)
            continue;
        if (adp_skills_changes(&t->splan))
            c->skill_changes++;
        if (!oo->write)
            continue;
        strvec made = STRVEC_INIT;
        if (t->splan.link_names.n) {
            strbuf probe = SB_INIT;
            sb_addf(&probe, "%s/x", t->skills_dir);
            adp_i_collect_missing_dirs(probe.buf, &made);
            sb_release(&probe);
        }
        if (oo->skills_log && made.n) {
            json_t *dl = json_array();
            for (size_t k = 0; k < made.n; k++)
                json_array_append_new(dl, json_string(made.v[k]));
            json_array_append_new(oo->skills_log, json_pack("{s:o}", "mkdir", dl));
        }
        strvec_clear(&made);
        if (adp_skills_changes(&t->splan) && adp_skills_write(&t->sreq, &t->splan, &t->serr)) {
            t->skills_failed = true;
            count_failure(c, t, &t->serr);
            continue;
        }
        if (oo->skills_log) {
            for (size_t k = 0; k < t->splan.link_names.n; k++)
                json_array_append_new(oo->skills_log,
                                      json_pack("{s:s,s:s,s:s,s:s}", "dir", t->skills_dir, "name",
                                                t->splan.link_names.v[k], "src",
                                                t->splan.link_srcs.v[k], "prev",
                                                t->splan.link_prev.v[k]));
            for (size_t k = 0; k < t->splan.unlink_names.n; k++)
                json_array_append_new(oo->skills_log,
                                      json_pack("{s:s,s:s,s:s,s:s}", "dir", t->skills_dir, "name",
                                                t->splan.unlink_names.v[k], "src", "", "prev",
                                                t->splan.unlink_prev.v[k]));
        }
        record_skills(R, t);
    }
}

/* Step 6: the undo record and the ledger. 1 when the ledger was not saved. */
static int ap_record(struct run *R, struct adp_hist_entry *h, const struct ap_counts *c,
                     const char *ledger_before)
{
    const struct adp_apply_opts *oo = R->o;
    int rc = 0;
    if (!oo->write)
        return 0;
    if (h->files.n) {
        free(h->scope);
        h->scope = xstrdup(oo->project_scope ? "project" : "global");
        h->operation = xstrdup(oo->operation ? oo->operation : "apply");
        h->summary = xasprintf("wrote %zu target%s", c->written, c->written == 1 ? "" : "s");
        if (json_array_size(oo->skills_log))
            h->skills = json_deep_copy(oo->skills_log);
        struct as_err herr = AS_ERR_INIT;
        if (adp_history_record(h, &herr) != 0) {
            char buf[2048];
            term_fprintf(stderr, "warning: the undo history was not recorded: %s\n",
                         as_err_str(&herr, buf, sizeof buf));
        } else if (oo->history_id) {
            *oo->history_id = xstrdup(h->id);
        }
    }
    char *ledger_after = json_dumps(R->ledger, JSON_SORT_KEYS | JSON_COMPACT);
    if (strcmp(ledger_before, ledger_after) != 0) {
        struct as_err lerr = AS_ERR_INIT;
        if (adp_ledger_save(R->ledger, &lerr) != 0) {
            char buf[2048];
            term_fprintf(stderr, "warning: the ownership ledger was not saved: %s\n",
                         as_err_str(&lerr, buf, sizeof buf));
            rc = 1;
        }
    }
    free(ledger_after);
    return rc;
}

int adp_apply(const struct adp_registry *r, const struct adp_apply_opts *o, struct as_err *err)
{
    FILE *out = o->out ? o->out : stdout;
    struct adp_apply_opts oo = *o;
    oo.out = out;
    /* Every write's skill link changes go into its undo record, so that
     * restore/undo removes the links it made (a caller may want them too). */
    json_t *own_skills_log = oo.skills_log ? NULL : json_array();
    if (!oo.skills_log)
        oo.skills_log = own_skills_log;
    if (oo.diff)
        oo.write = false;
    struct run R = {.o = &oo};
    desc_list descs = VEC_INIT;
    struct as_lock lk = {-1};
    bool locked = false;
    int rc = ap_open(r, &R, &descs, &lk, &locked, err);
    if (rc != 0) {
        vec_free(&descs);
        run_release(&R);
        json_decref(own_skills_log);
        return rc;
    }
    char *ledger_before = json_dumps(R.ledger, JSON_SORT_KEYS | JSON_COMPACT);

    adp_lane_list lanes = VEC_INIT;
    size_t nT = 0;
    struct tplan *T = ap_plan(&R, &descs, &lanes, &nT);
    struct ap_counts c = {.failed_names = SB_INIT};
    struct adp_hist_entry *h = xcalloc(1, sizeof *h);
    ap_write(&R, T, nT, &lanes, &descs, h, &c);
    ap_write_skills(&R, T, &descs, &c);

    if (oo.diff) {
        if (oo.json)
            adp_ap_print_diff_json(&R, T, nT, &descs);
        else
            adp_ap_print_diff(&R, T, nT, &descs);
        goto cleanup;
    }

    /* Step 5: the .gitignore block and what each target did. */
    strbuf gi_report = SB_INIT;
    if (oo.project_scope && !c.blocked && !c.trust)
        adp_ap_gitignore_step(&R, r, T, nT, h, &gi_report, &c.written, &c.failed);
    term_fprintf(out, "Scope: %s\n", oo.project_scope ? "project" : "global");
    if (oo.instructions) {
        adp_ap_print_instructions(&R, T, nT, &lanes);
    } else {
        for (size_t i = 0; i < R.skill_notes.n; i++)
            term_fprintf(out, "%s\n", R.skill_notes.v[i]);
        for (size_t i = 0; i < descs.n; i++) {
            adp_ap_print_target(&R, &T[i]);
            adp_ap_print_lanes(&R, T, nT, &lanes, &T[i]);
            adp_ap_print_skills(&R, &T[i]);
        }
    }
    fputs(gi_report.buf, out);
    sb_release(&gi_report);
    if (!oo.instructions) {
        bool toolset_skills = false;
        for (size_t i = 0; i < oo.m->toolsets.n; i++)
            toolset_skills |= oo.m->toolsets.v[i].skills.n > 0;
        if ((oo.m->skills.n || toolset_skills) && !oo.use)
            term_fprintf(out, "· skills are not rendered by apply — place them with: agentstack "
                              "use <toolset> --write\n");
    }

    rc = ap_record(&R, h, &c, ledger_before);
    /* Step 7: the closing line and the exit status. */
    if (adp_ap_print_closing(&R, T, nT, &c, err) != 0)
        rc = 1;
    if (oo.report)
        adp_ap_report_rows(&R, T, nT, oo.report);

cleanup:
    json_decref(own_skills_log);
    adp_hist_entry_free(h);
    for (size_t i = 0; i < nT; i++)
        tplan_free(&T[i]);
    free(T);
    adp_lanes_free(&lanes);
    free(ledger_before);
    json_decref(R.ledger);
    adp_secrets_free(&R.mask);
    run_release(&R);
    vec_free(&descs);
    sb_release(&c.failed_names);
    if (locked)
        lock_release(&lk);
    return rc;
}
