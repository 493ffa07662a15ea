/* lanes — the non-server parts of the rendered lane
 * (docs/adapters.md): instructions compiled into each CLI's instruction file as a managed
 * Markdown region, [settings.<cli>] keys owned one by one, and [hooks.*]
 * owning the CLI's hooks key. Planning is read-only; apply.c writes the
 * result through the same writer, lock, ledger and history as servers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "adapters/merge.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/lockfile.h"

#define FRAGMENT_MAX ((size_t)4 << 20)
#define GUARD_MARK "agentstack-guard"

const char *adp_lane_name(enum adp_lane_kind k)
{
    switch (k) {
    case ADP_LANE_INSTRUCTIONS:
        return "instructions";
    case ADP_LANE_SETTINGS:
        return "settings";
    case ADP_LANE_HOOKS:
        return "hooks";
    case ADP_LANE_NOTE:
        break;
    }
    return "note";
}

static struct adp_lane *lane_new(adp_lane_list *list, enum adp_lane_kind kind, const char *path,
                                 enum adp_format fmt, const struct adp_desc *d)
{
    struct adp_lane *l = xcalloc(1, sizeof *l);
    l->kind = kind;
    l->path = path ? xstrdup(path) : NULL;
    l->fmt = fmt;
    l->first = d;
    vec_push(&l->owners, d);
    vec_push(list, l);
    return l;
}

static void note(adp_lane_list *list, const struct adp_desc *d, char *text)
{
    struct adp_lane *l = lane_new(list, ADP_LANE_NOTE, NULL, ADP_FMT_NONE, d);
    l->note = text;
}

void adp_lanes_free(adp_lane_list *list)
{
    for (size_t i = 0; i < list->n; i++) {
        struct adp_lane *l = list->v[i];
        free(l->path);
        vec_free(&l->owners);
        free(l->content);
        strvec_clear(&l->frag_names);
        vec_free(&l->frag_pick);
        free(l->key);
        json_decref(l->jset);
        toml_free(l->tset);
        strvec_clear(&l->removes);
        strvec_clear(&l->names);
        strvec_clear(&l->lines);
        free(l->note);
        adp_secrets_free(&l->secrets);
        free(l);
    }
    vec_free(list);
}

static const char *scope_root(const struct adp_apply_opts *o)
{
    return o->project_scope ? o->project_root : NULL;
}

static void ledger_names(json_t *ledger, const struct adp_desc *d, const struct adp_apply_opts *o,
                         const char *field, strvec *out)
{
    char *key = adp_ledger_key(d->id, scope_root(o));
    adp_ledger_names(adp_ledger_entry(ledger, key, false), field, out);
    free(key);
}

static void unresolved_lines(struct adp_lane *l, const strvec *missing, const char *who)
{
    for (size_t k = 0; k < missing->n; k++)
        strvec_pushf(&l->lines, "✗ unresolved secret %s (%s) ↳ agentstack secret set %s",
                     missing->v[k], who, missing->v[k]);
}

/* ---- instructions --------------------------------------------------------- */

/* The model a variant's `model` selector is compared with: a toolset named
 * on the command line, else [settings.<cli>]'s model key, else unknown. */
static const char *model_for(const struct adp_apply_opts *o, const struct adp_desc *d)
{
    const struct manifest *m = o->m;
    const struct mf_toolset *ts = o->toolset ? manifest_toolset(m, o->toolset) : NULL;
    if (ts && ts->model)
        return ts->model;
    const struct mf_settings *st = manifest_settings(m, d->id);
    const toml_value *v =
        st && st->table
            ? toml_get(st->table, d->settings_model_key ? d->settings_model_key : "model")
            : NULL;
    return v && v->type == TOML_STRING ? v->u.str.s : NULL;
}

static bool applies(const struct adp_apply_opts *o, const struct mf_instruction *in,
                    const struct adp_desc *d)
{
    /* Machine-layer fragments reach the user's global files only. */
    if (in->inherited && o->project_scope)
        return false;
    return manifest_targets_include(&in->targets, d->id);
}

static struct adp_lane *find_lane(adp_lane_list *list, enum adp_lane_kind k, const char *path)
{
    for (size_t i = 0; i < list->n; i++)
        if (list->v[i]->kind == k && list->v[i]->path && strcmp(list->v[i]->path, path) == 0)
            return list->v[i];
    return NULL;
}

static void plan_instructions(const struct adp_apply_opts *o, json_t *ledger,
                              const struct adp_desc *d, adp_lane_list *list)
{
    const struct manifest *m = o->m;
    size_t nfr = 0;
    for (size_t i = 0; i < m->instructions.n; i++)
        nfr += applies(o, &m->instructions.v[i], d);
    const char *rel = o->project_scope ? d->instr_project : d->instr_global;
    if (!rel) {
        if (nfr)
            note(list, d,
                 xasprintf("(instructions not supported by this CLI — %zu fragment%s "
                           "not compiled)",
                           nfr, nfr == 1 ? "" : "s"));
        return;
    }
    strbuf path = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (adp_expand_path(rel, scope_root(o), &path, &e) != 0) {
        char buf[1024];
        note(list, d, xasprintf("✗ instructions: %s", as_err_str(&e, buf, sizeof buf)));
        sb_release(&path);
        return;
    }
    char *key = adp_ledger_key(d->id, scope_root(o));
    const char *had =
        json_string_value(json_object_get(adp_ledger_entry(ledger, key, false), "instructions"));
    bool owned = had && strcmp(had, path.buf) == 0;
    free(key);
    if (!nfr && !owned) {
        sb_release(&path);
        return;
    }
    struct adp_lane *l = find_lane(list, ADP_LANE_INSTRUCTIONS, path.buf);
    if (!l)
        l = lane_new(list, ADP_LANE_INSTRUCTIONS, path.buf, ADP_FMT_NONE, d);
    else
        vec_push(&l->owners, d);
    sb_release(&path);
    const char *model = model_for(o, d);
    for (size_t i = 0; i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        if (!applies(o, in, d))
            continue;
        const struct mf_variant *v = manifest_select_variant(in, d->id, model);
        long pick = v ? (long)(v - in->variants.v) : -1;
        ssize_t k = strvec_find(&l->frag_names, in->name);
        if (k < 0) {
            strvec_push(&l->frag_names, in->name);
            vec_push(&l->frag_pick, pick);
        } else if (l->frag_pick.v[k] != pick) {
            /* One file, several CLIs, different variants: none of them is
             * right for all readers, the base body is. */
            if (l->frag_pick.v[k] >= 0)
                strvec_pushf(&l->lines,
                             "⚠ instruction '%s': the CLIs sharing this file pick "
                             "different variants — using the base body",
                             in->name);
            l->frag_pick.v[k] = -1;
        }
    }
}

/* Where a library fragment's instruction.toml lives: the caller's library
 * resolver first (as pin_collect asks it), else the implicit local source
 * <home>/lib/instructions/<n>/. */
static int library_toml(const struct adp_apply_opts *o, const char *name, strbuf *toml,
                        struct as_err *err)
{
    if (o->library) {
        int r = o->library(o->library_ctx, PIN_INSTRUCTION, name, toml, err);
        if (r != 0)
            return r < 0 ? -1 : 0;
        as_err_clear(err);
    }
    if (!o->home)
        return as_err_set(err, "no agentstack home for the library");
    sb_reset(toml);
    sb_addf(toml, "%s/lib/instructions/%s/instruction.toml", o->home, name);
    return 0;
}

/* A library fragment's body: the instruction.toml at toml (the library's
 * copy, or the content store's approved copy of it) with a `body` string, or
 * a `path` (relative, inside dir — the item's library directory; default
 * instruction.md) naming the Markdown file. */
/* src gets the file the body came from (the .md, or the toml itself for an
 * inline `body`), for messages that point at a line of it. */
static int library_body(const char *toml, const char *dir, strbuf *body, strbuf *src,
                        struct as_err *err)
{
    int rc = -1;
    toml_value *t = fs_exists(toml) ? toml_parse_file(toml, FRAGMENT_MAX, err) : NULL;
    if (!t) {
        if (!as_err_isset(err))
            as_err_set(err, "%s is missing", toml);
        return -1;
    }
    const toml_value *b = toml_get(t, "body");
    const toml_value *p = toml_get(t, "path");
    if (b && b->type == TOML_STRING) {
        sb_add(body, b->u.str.s, b->u.str.len);
        sb_adds(src, toml);
        rc = 0;
    } else {
        strbuf file = SB_INIT;
        const char *rel = p && p->type == TOML_STRING ? p->u.str.s : "instruction.md";
        if (fs_contain(dir, NULL, rel, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &file, err) ==
                0 &&
            fs_read_file(file.buf, FRAGMENT_MAX, 1, body, err) == 0) {
            sb_adds(src, file.buf);
            rc = 0;
        }
        sb_release(&file);
    }
    toml_free(t);
    return rc;
}

/* The standing decision on the fragment compiled for in/pick, as
 * pin_collect applied it (kept: fs_path is the approved copy; blocked or
 * unavailable: omitted), or NULL when the fragment carries none. */
static const struct pin_item *decided_item(const pin_items *decided,
                                           const struct mf_instruction *in, long pick)
{
    for (size_t i = 0; decided && i < decided->n; i++) {
        const struct pin_item *it = &decided->v[i];
        if (it->decision == PIN_DECISION_NONE || strcmp(it->name, in->name) != 0)
            continue;
        if (pick < 0 && it->kind == PIN_INSTRUCTION)
            return it;
        if (pick >= 0 && it->kind == PIN_VARIANT && it->sub && strtol(it->sub, NULL, 10) == pick)
            return it;
    }
    return NULL;
}

static const char *locked_checksum(const struct lockfile *lock, const struct mf_instruction *in,
                                   long pick)
{
    const struct lock_instruction *li = lockfile_instruction(lock, in->name);
    if (!li)
        return NULL;
    if (pick < 0)
        return li->checksum;
    const struct mf_variant *v = &in->variants.v[pick];
    for (size_t i = 0; i < li->variants.n; i++) {
        const struct lock_variant *lv = &li->variants.v[i];
        if (lv->path && strcmp(lv->path, v->path) == 0 &&
            ((!lv->cli && !v->cli) || (lv->cli && v->cli && strcmp(lv->cli, v->cli) == 0)) &&
            ((!lv->model && !v->model) ||
             (lv->model && v->model && strcmp(lv->model, v->model) == 0)))
            return lv->checksum;
    }
    return NULL;
}

static size_t trim_nl(const char *s, size_t n)
{
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return n;
}

static void compile_instructions(const struct adp_apply_opts *o, struct adp_lane *l,
                                 const pin_items *decided)
{
    const struct manifest *m = o->m;
    strbuf content = SB_INIT;
    bool missing = false, drifted = false, marked = false;
    for (size_t i = 0; i < l->frag_names.n; i++) {
        const struct mf_instruction *in = manifest_instruction(m, l->frag_names.v[i]);
        long pick = l->frag_pick.v[i];
        if (!in)
            continue;
        const struct pin_item *dec = in->inherited ? NULL : decided_item(decided, in, pick);
        if (dec && dec->omitted) {
            /* Never delivered: blocked at review, or kept while the approved
             * bytes are gone from the content store (never the live ones). */
            if (dec->decision == PIN_DECISION_BLOCK)
                strvec_pushf(&l->lines,
                             "· instruction fragment '%s' left out — blocked by "
                             "your trust decision",
                             in->name);
            else
                strvec_pushf(&l->lines,
                             "⚠ instruction fragment '%s' left out — kept at its "
                             "approved version, which is no longer in the content store ↳ "
                             "review it again: agentstack trust .",
                             in->name);
            continue;
        }
        const char *decl = pick >= 0 ? in->variants.v[pick].path : in->path;
        /* A kept fragment is compiled from the approved copy pin_collect
         * found (the content store's when the live bytes drifted). */
        const char *kept = dec && dec->decision == PIN_DECISION_KEEP ? dec->fs_path : NULL;
        strbuf file = SB_INIT, body = SB_INIT, src = SB_INIT;
        struct as_err e = AS_ERR_INIT;
        int rc;
        if (decl) {
            if (kept) {
                sb_adds(&file, kept);
                rc = 0;
            } else {
                rc = manifest_item_path(m, decl, in->inherited ? in->anchor_dir : NULL, &file, &e);
            }
            if (rc == 0)
                rc = fs_read_file(file.buf, FRAGMENT_MAX, 0, &body, &e);
            sb_adds(&src, file.len ? file.buf : decl);
        } else {
            strbuf live = SB_INIT;
            rc = library_toml(o, in->name, &live, &e);
            if (rc == 0) {
                char *dir = xstrdup(live.buf);
                char *slash = strrchr(dir, '/');
                if (slash)
                    *slash = '\0';
                sb_adds(&file, kept ? kept : live.buf);
                rc = library_body(file.buf, dir, &body, &src, &e);
                free(dir);
            }
            sb_release(&live);
        }
        if (rc != 0) {
            strvec_pushf(&l->lines, "✗ instruction fragment '%s' source missing (%s)", in->name,
                         e.msg);
            missing = true;
        } else if (o->write && o->lock && !in->inherited) {
            const char *want = locked_checksum(o->lock, in, pick);
            char have[SHA256_HEX_LEN + 1];
            struct as_err de = AS_ERR_INIT;
            if (want && digest_file(file.buf, have, &de) == 0 && strcmp(want, have) != 0) {
                strvec_pushf(&l->lines,
                             "✗ refusing to compile instructions for %s: fragment "
                             "'%s' drifted from agentstack.lock (locked %.12s, current %.12s) ↳ "
                             "review it, then: agentstack lock --write && agentstack trust",
                             l->first->id, in->name, want, have);
                drifted = true;
            }
        }
        const char *which = NULL;
        size_t at = rc == 0 ? adp_md_marker_line(body.buf, body.len, &which) : 0;
        if (at) {
            /* Rendered, the line would close (or reopen) the region early:
             * the text after it would escape the region, survive the
             * fragment's removal and be appended again on every run. */
            strvec_pushf(&l->lines,
                         "✗ instruction fragment '%s' has a managed-region marker line "
                         "(%s:%zu: %s) — it would break out of the managed region ↳ "
                         "remove that line or indent it",
                         in->name, src.buf, at, which);
            marked = true;
        } else if (rc == 0) {
            size_t n = trim_nl(body.buf, body.len);
            if (n) {
                if (content.len)
                    sb_adds(&content, "\n\n");
                sb_add(&content, body.buf, n);
            }
        }
        sb_release(&file);
        sb_release(&body);
        sb_release(&src);
    }
    if (missing)
        strvec_push(&l->lines, "✗ instructions not written — missing fragment sources");
    if (marked)
        strvec_push(&l->lines,
                    "✗ instructions not written — a fragment has a managed-region marker line");
    l->blocked = missing || drifted || marked;
    l->content = sb_detach(&content, NULL);
    if (o->trust_refusal && l->content[0] && !l->blocked) {
        l->trust_blocked = true;
        strvec_pushf(&l->lines, "✗ refusing to render instructions: %s", o->trust_refusal);
    }
}

/* The project's instruction items that carry a standing decision, resolved
 * by pin_collect the way lock and trust resolve them. Collected only when
 * trust.json records a decision on an instruction (pin_collect hashes the
 * whole surface). 1 when there are some, 0 when none, -1 + err when they
 * cannot be resolved. */
static int collect_decided(const struct adp_apply_opts *o, const adp_lane_list *lanes,
                           pin_items *out, struct as_err *err)
{
    const struct manifest *m = o->m;
    bool any_fragment = false;
    for (size_t i = 0; i < lanes->n; i++)
        any_fragment |= lanes->v[i]->kind == ADP_LANE_INSTRUCTIONS && lanes->v[i]->frag_names.n > 0;
    if (!any_fragment || m->kind != MANIFEST_PROJECT || !o->home || !m->project_root)
        return 0;
    pin_decisions d = VEC_INIT;
    pin_decisions_load(o->home, m->project_root, &d);
    int rc = 0;
    for (size_t i = 0; i < d.n && !rc; i++)
        rc = strcmp(d.v[i].kind, "instruction") == 0;
    if (rc) {
        struct pin_opts po = {.home = o->home,
                              .library = o->library,
                              .library_ctx = o->library_ctx,
                              .lock = o->lock,
                              .decisions = &d};
        if (pin_collect(m, &po, out, err) != 0)
            rc = -1;
    }
    pin_decisions_free(&d);
    return rc;
}

/* ---- settings ------------------------------------------------------------- */

static void lane_set(struct adp_lane *l, const char *key, struct adp_rendered *r)
{
    if (l->fmt == ADP_FMT_TOML) {
        if (!l->tset)
            l->tset = toml_new(TOML_TABLE);
        toml_table_set(l->tset, key, r->toml);
        r->toml = NULL;
    } else {
        if (!l->jset)
            l->jset = json_object();
        json_object_set_new(l->jset, key, r->json);
        r->json = NULL;
    }
}

static void plan_settings(const struct adp_apply_opts *o, json_t *ledger, const struct adp_desc *d,
                          adp_lane_list *list)
{
    const struct mf_settings *st = manifest_settings(o->m, d->id);
    size_t declared = st && st->table ? toml_len(st->table) : 0;
    /* Settings at project scope fall back to the global file. */
    bool proj = o->project_scope && d->settings_project;
    const char *rel = proj ? d->settings_project : d->settings_global;
    if (!rel) {
        if (declared)
            note(list, d,
                 xasprintf("(settings not supported by this CLI — %zu key%s not "
                           "written)",
                           declared, declared == 1 ? "" : "s"));
        return;
    }
    strvec managed = STRVEC_INIT, removes = STRVEC_INIT;
    ledger_names(ledger, d, o, "managed_settings", &managed);
    for (size_t i = 0; i < managed.n; i++)
        if (!st || !st->table || !toml_get(st->table, managed.v[i]))
            strvec_push(&removes, managed.v[i]);
    strbuf path = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if ((!declared && !removes.n) ||
        adp_expand_path(rel, proj ? o->project_root : NULL, &path, &e) != 0) {
        if (as_err_isset(&e)) {
            char buf[1024];
            note(list, d, xasprintf("✗ settings: %s", as_err_str(&e, buf, sizeof buf)));
        }
        strvec_clear(&managed);
        strvec_clear(&removes);
        sb_release(&path);
        return;
    }
    struct adp_lane *l = lane_new(list, ADP_LANE_SETTINGS, path.buf, d->settings_format, d);
    sb_release(&path);
    l->removes = removes;
    struct adp_render_ctx rc = {o->resolve, o->resolve_ctx, &l->secrets,
                                o->project_scope ? o->project_root : o->m->project_root};
    for (size_t i = 0; i < declared; i++) {
        const toml_kv *kv = toml_entry(st->table, i);
        char *who = xasprintf("settings.%s.%s", d->id, kv->key);
        struct adp_rendered r;
        struct as_err re = AS_ERR_INIT;
        enum adp_render_status s = adp_render_value(kv->val, l->fmt, who, &rc, &r, &re);
        if (s == ADP_RENDER_OK) {
            lane_set(l, kv->key, &r);
            strvec_push(&l->names, kv->key);
        } else if (s == ADP_RENDER_UNRESOLVED && o->allow_unresolved) {
            strvec_pushf(&l->lines,
                         "↳ leaving out setting '%s' — unresolved secret %s "
                         "(--allow-unresolved)",
                         kv->key, r.missing.v[0]);
            if (strvec_find(&managed, kv->key) >= 0)
                strvec_push(&l->names, kv->key); /* still ours, still in the file */
        } else if (s == ADP_RENDER_UNRESOLVED) {
            unresolved_lines(l, &r.missing, who);
            l->blocked = true;
        } else {
            char buf[1024];
            strvec_pushf(&l->lines, "✗ %s", as_err_str(&re, buf, sizeof buf));
            l->blocked = true;
        }
        adp_rendered_release(&r);
        free(who);
    }
    if (l->blocked)
        strvec_push(&l->lines, "✗ not written — unresolved secrets; set them or pass "
                               "--allow-unresolved");
    if (o->trust_refusal && (l->jset || l->tset) && !l->blocked) {
        l->trust_blocked = true;
        strvec_pushf(&l->lines, "✗ refusing to render settings: %s", o->trust_refusal);
        /* Only the removals are written: what we own is what stays. */
        strvec_clear(&l->names);
        for (size_t i = 0; i < managed.n; i++)
            if (strvec_find(&l->removes, managed.v[i]) < 0)
                strvec_push(&l->names, managed.v[i]);
    }
    strvec_clear(&managed);
}

/* ---- hooks ---------------------------------------------------------------- */

/* One hook entry: {matcher?, hooks: [{type, command, args?, timeout?}]}. */
static toml_value *hook_entry(const struct mf_hook *h)
{
    toml_value *e = toml_new(TOML_TABLE);
    if (h->matcher)
        toml_table_set(e, "matcher", toml_new_string(h->matcher));
    toml_value *cmd = toml_new(TOML_TABLE);
    toml_table_set(cmd, "type", toml_new_string("command"));
    toml_table_set(cmd, "command", toml_new_string(h->command));
    if (h->args.n) {
        toml_value *a = toml_new(TOML_ARRAY);
        for (size_t i = 0; i < h->args.n; i++)
            toml_array_push(a, toml_new_string(h->args.v[i]));
        toml_table_set(cmd, "args", a);
    }
    if (h->has_timeout)
        toml_table_set(cmd, "timeout", toml_new_int(h->timeout));
    toml_value *arr = toml_new(TOML_ARRAY);
    toml_array_push(arr, cmd);
    toml_table_set(e, "hooks", arr);
    return e;
}

static void plan_hooks(const struct adp_apply_opts *o, json_t *ledger, const struct adp_desc *d,
                       adp_lane_list *list)
{
    const struct manifest *m = o->m;
    size_t n = 0;
    for (size_t i = 0; i < m->hooks.n; i++)
        n += manifest_targets_include(&m->hooks.v[i].targets, d->id);
    const char *rel = o->project_scope ? d->hooks_project : d->hooks_global;
    if (!rel) {
        if (n)
            note(list, d,
                 xasprintf("(hooks not supported by this CLI — %zu hook%s not "
                           "written)",
                           n, n == 1 ? "" : "s"));
        return;
    }
    strvec managed = STRVEC_INIT;
    ledger_names(ledger, d, o, "managed_hooks", &managed);
    strbuf path = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if ((!n && !managed.n) || adp_expand_path(rel, scope_root(o), &path, &e) != 0) {
        if (as_err_isset(&e)) {
            char buf[1024];
            note(list, d, xasprintf("✗ hooks: %s", as_err_str(&e, buf, sizeof buf)));
        }
        strvec_clear(&managed);
        sb_release(&path);
        return;
    }
    struct adp_lane *l = lane_new(list, ADP_LANE_HOOKS, path.buf, d->hooks_format, d);
    sb_release(&path);
    l->key = xstrdup(d->hooks_key ? d->hooks_key : "hooks");
    toml_value *tev = toml_new(TOML_TABLE);
    json_t *jev = json_object();
    struct adp_render_ctx rc = {o->resolve, o->resolve_ctx, &l->secrets,
                                o->project_scope ? o->project_root : m->project_root};
    for (size_t i = 0; i < m->hooks.n; i++) {
        const struct mf_hook *h = &m->hooks.v[i];
        if (!manifest_targets_include(&h->targets, d->id))
            continue;
        toml_value *entry = hook_entry(h);
        char *who = xasprintf("hook '%s'", h->name);
        struct adp_rendered r;
        struct as_err re = AS_ERR_INIT;
        enum adp_render_status s = adp_render_value(entry, l->fmt, who, &rc, &r, &re);
        if (s == ADP_RENDER_OK && l->fmt == ADP_FMT_TOML) {
            toml_value *arr = toml_get(tev, h->event);
            if (!arr) {
                arr = toml_new(TOML_ARRAY);
                toml_table_set(tev, h->event, arr);
            }
            toml_array_push(arr, r.toml);
            r.toml = NULL;
            strvec_push(&l->names, h->name);
        } else if (s == ADP_RENDER_OK) {
            json_t *arr = json_object_get(jev, h->event);
            if (!arr) {
                arr = json_array();
                json_object_set_new(jev, h->event, arr);
            }
            json_array_append_new(arr, r.json);
            r.json = NULL;
            strvec_push(&l->names, h->name);
        } else if (s == ADP_RENDER_UNRESOLVED && o->allow_unresolved) {
            strvec_pushf(&l->lines,
                         "↳ leaving out hook '%s' — unresolved secret %s "
                         "(--allow-unresolved)",
                         h->name, r.missing.v[0]);
        } else if (s == ADP_RENDER_UNRESOLVED) {
            unresolved_lines(l, &r.missing, who);
            l->blocked = true;
        } else {
            char buf[1024];
            strvec_pushf(&l->lines, "✗ %s", as_err_str(&re, buf, sizeof buf));
            l->blocked = true;
        }
        adp_rendered_release(&r);
        toml_free(entry);
        free(who);
    }
    if (l->blocked)
        strvec_push(&l->lines, "✗ not written — unresolved secrets; set them or pass "
                               "--allow-unresolved");
    if (l->names.n && l->fmt == ADP_FMT_TOML) {
        l->tset = toml_new(TOML_TABLE);
        toml_table_set(l->tset, l->key, tev);
        tev = NULL;
    } else if (l->names.n) {
        l->jset = json_object();
        json_object_set_new(l->jset, l->key, jev);
        jev = NULL;
    } else {
        strvec_push(&l->removes, l->key);
    }
    toml_free(tev);
    json_decref(jev);
    if (o->trust_refusal && l->names.n && !l->blocked) {
        l->trust_blocked = true;
        strvec_pushf(&l->lines, "✗ refusing to render hooks: %s", o->trust_refusal);
        strvec_clear(&l->names);
        for (size_t i = 0; i < managed.n; i++)
            strvec_push(&l->names, managed.v[i]);
    }
    strvec_clear(&managed);
}

/* ---- planning ------------------------------------------------------------- */

void adp_lanes_plan(const struct adp_apply_opts *o, json_t *ledger,
                    const struct adp_desc *const *descs, size_t n, adp_lane_list *out)
{
    for (size_t i = 0; i < n; i++) {
        plan_instructions(o, ledger, descs[i], out);
        if (o->instructions) /* the stand-alone command touches nothing else */
            continue;
        plan_settings(o, ledger, descs[i], out);
        plan_hooks(o, ledger, descs[i], out);
    }
    pin_items decided = VEC_INIT;
    struct as_err err = AS_ERR_INIT;
    int have = collect_decided(o, out, &decided, &err);
    for (size_t i = 0; i < out->n; i++) {
        struct adp_lane *l = out->v[i];
        if (l->kind != ADP_LANE_INSTRUCTIONS)
            continue;
        compile_instructions(o, l, have > 0 ? &decided : NULL);
        if (have < 0 && l->frag_names.n) {
            /* Fail closed: a kept or blocked fragment must never be served
             * from its live bytes because its decision could not be read. */
            char buf[1024];
            strvec_pushf(&l->lines,
                         "✗ instructions not written — the standing trust "
                         "decisions cannot be applied: %s",
                         as_err_str(&err, buf, sizeof buf));
            l->blocked = true;
        }
    }
    pin_items_free(&decided);
}

/* ---- applying ------------------------------------------------------------- */

static bool is_guard_entry(const json_t *entry)
{
    json_t *hooks = json_object_get(entry, "hooks");
    size_t i;
    json_t *h;
    json_array_foreach(hooks, i, h)
    {
        const char *c = json_string_value(json_object_get(h, "command"));
        if (c && strstr(c, GUARD_MARK))
            return true;
    }
    return false;
}

/* The hooks value to write: the host guard's entries (guard install wires
 * them into the same key) stay first, then ours. NULL = nothing left. */
static json_t *hooks_value(const json_t *cur, const json_t *ours)
{
    json_t *out = json_object();
    const char *ev;
    json_t *arr;
    json_object_foreach((json_t *)cur, ev, arr)
    {
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
        {
            if (!is_guard_entry(e))
                continue;
            json_t *a = json_object_get(out, ev);
            if (!a) {
                a = json_array();
                json_object_set_new(out, ev, a);
            }
            json_array_append(a, e);
        }
    }
    json_object_foreach((json_t *)ours, ev, arr)
    {
        json_t *a = json_object_get(out, ev);
        if (!a) {
            a = json_array();
            json_object_set_new(out, ev, a);
        }
        json_array_extend(a, arr);
    }
    if (!json_object_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static int json_root_edit(const struct adp_lane *l, const char *path, const char *text, size_t len,
                          const json_t *set, const strvec *removes, strbuf *out, struct as_err *err)
{
    size_t n = json_object_size(set);
    struct adp_json_entry *u = xcalloc(n + 1, sizeof *u);
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)set, key, v) u[k++] = (struct adp_json_entry){key, v};
    const char **rm = xcalloc(removes->n + 1, sizeof(char *));
    for (size_t i = 0; i < removes->n; i++)
        rm[i] = removes->v[i];
    struct adp_json_edit ed = {l->fmt == ADP_FMT_JSONC, NULL, u, k, rm, removes->n};
    int rc = adp_json_merge(path, text, len, &ed, out, err);
    free(u);
    free(rm);
    return rc;
}

int adp_lane_apply(const struct adp_lane *l, const char *path, const char *text, size_t len,
                   strbuf *out, struct as_err *err)
{
    bool prune_only = l->trust_blocked;
    if (l->blocked || l->kind == ADP_LANE_NOTE ||
        (prune_only && l->kind == ADP_LANE_INSTRUCTIONS)) {
        sb_add(out, text, len);
        return 0;
    }
    if (l->kind == ADP_LANE_INSTRUCTIONS) {
        /* compile_instructions blocks such a fragment; this guards the
         * region against any other way content might reach here. */
        const char *which = NULL;
        size_t at = adp_md_marker_line(l->content, strlen(l->content), &which);
        if (at)
            return as_err_set(err,
                              "%s: compiled instructions have a managed-region marker line "
                              "(line %zu: %s) — not written",
                              path, at, which);
        adp_md_region(text, len, l->content, out);
        return 0;
    }
    if (l->fmt == ADP_FMT_TOML) {
        const char **rm = xcalloc(l->removes.n + 1, sizeof(char *));
        for (size_t i = 0; i < l->removes.n; i++)
            rm[i] = l->removes.v[i];
        int rc = adp_toml_merge_root(path, text, len, prune_only ? NULL : l->tset, rm, l->removes.n,
                                     out, err);
        free(rm);
        return rc;
    }
    json_t *empty = json_object();
    const json_t *set = prune_only || !l->jset ? empty : l->jset;
    int rc;
    if (l->kind == ADP_LANE_HOOKS) {
        json_t *cur = NULL;
        rc = adp_json_read(path, text, len, l->fmt == ADP_FMT_JSONC, l->key, &cur, err);
        if (rc == 0) {
            json_t *val =
                hooks_value(json_is_object(cur) ? cur : NULL, json_object_get(set, l->key));
            json_t *s2 = json_object();
            strvec rm = STRVEC_INIT;
            if (val)
                json_object_set_new(s2, l->key, val);
            else if (cur)
                strvec_push(&rm, l->key);
            if (prune_only && !l->removes.n) {
                sb_add(out, text, len); /* untrusted and nothing to remove */
            } else {
                rc = json_root_edit(l, path, text, len, s2, &rm, out, err);
            }
            strvec_clear(&rm);
            json_decref(s2);
        }
        json_decref(cur);
    } else {
        rc = json_root_edit(l, path, text, len, set, &l->removes, out, err);
    }
    json_decref(empty);
    return rc;
}

void adp_lane_record(const struct adp_lane *l, json_t *ledger, const char *project_root)
{
    if (l->blocked || l->kind == ADP_LANE_NOTE)
        return;
    if (l->trust_blocked && l->kind == ADP_LANE_INSTRUCTIONS)
        return;
    for (size_t i = 0; i < l->owners.n; i++) {
        const struct adp_desc *d = l->owners.v[i];
        char *key = adp_ledger_key(d->id, project_root);
        json_t *e = adp_ledger_entry(ledger, key, true);
        free(key);
        if (l->kind == ADP_LANE_INSTRUCTIONS) {
            if (l->content[0])
                json_object_set_new(e, "instructions", json_string(l->path));
            else
                json_object_del(e, "instructions");
        } else {
            adp_ledger_set_names(
                e, l->kind == ADP_LANE_SETTINGS ? "managed_settings" : "managed_hooks", &l->names);
        }
    }
}
