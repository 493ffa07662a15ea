/* trust review — the card, the blockers and the --preview JSON (docs/trust.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/codepin.h"
#include "bundle/home.h"
#include "bundle/ref.h"
#include "bundle/store.h"
#include "policy/policy.h"
#include "trust/trust.h"

static char *dupn(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void item_free(struct trust_item *it)
{
    free(it->kind);
    free(it->name);
    free(it->identity);
    free(it->pin);
    free(it->runs);
    free(it->contacts);
    strvec_clear(&it->may_read);
    free(it->prior_pin);
    free(it->fix);
    free(it->tag);
    json_decref(it->diff);
    strvec_clear(&it->code_pinned);
    strvec_clear(&it->code_unpinned);
    free(it->isolation);
}

void trust_review_free(struct trust_review *r)
{
    for (size_t i = 0; i < r->items.n; i++)
        item_free(&r->items.v[i]);
    vec_free(&r->items);
    for (size_t i = 0; i < r->removed.n; i++)
        item_free(&r->removed.v[i]);
    vec_free(&r->removed);
    for (size_t i = 0; i < r->advisories.n; i++)
        item_free(&r->advisories.v[i]);
    vec_free(&r->advisories);
    for (size_t i = 0; i < r->blockers.n; i++) {
        free(r->blockers.v[i].kind);
        free(r->blockers.v[i].name);
        free(r->blockers.v[i].reason);
        free(r->blockers.v[i].fix);
    }
    vec_free(&r->blockers);
    strvec_clear(&r->secrets);
    trust_pins_free(&r->pins);
    manifest_free(r->m);
    trust_status_release(&r->status);
    manifest_snapshot_release(&r->snap);
    free(r->machine_ceiling);
    free(r->home);
    scan_report_free(&r->scan);
    free(r->scan_error);
    json_decref(r->prior_decisions);
    memset(r, 0, sizeof *r);
}

/* "cmd a b": the exact argv, joined by spaces, as the card shows it. */
static char *command_line(const char *command, const strvec *args)
{
    strbuf sb = SB_INIT;
    sb_adds(&sb, command ? command : "");
    for (size_t i = 0; args && i < args->n; i++) {
        sb_addc(&sb, ' ');
        sb_adds(&sb, args->v[i]);
    }
    return sb_detach(&sb, NULL);
}

static struct trust_item *add_item(struct trust_review *r, const char *kind, const char *name,
                                   const char *identity, const char *pin)
{
    struct trust_item it = {0};
    it.kind = xstrdup(kind);
    it.name = xstrdup(name);
    it.identity = xstrdup(identity ? identity : "");
    it.pin = dupn(pin);
    vec_push(&r->items, it);
    return &r->items.v[r->items.n - 1];
}

static const char *tag_status(enum pin_status st)
{
    switch (st) {
    case PIN_MATCHES:
        return "pinned";
    case PIN_DRIFTED:
        return "DRIFTED from lock";
    case PIN_UNPINNED:
        return "unpinned";
    case PIN_UNAVAILABLE:
        return "offline — pin unverified";
    case PIN_RESOLVE_FAILED:
    default:
        return "unresolvable";
    }
}

/* A library server's live definition, shown only when its pin matches. */
static void library_server_def(const char *path, struct trust_item *it)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_parse_file(path, MANIFEST_MAX_BYTES, &err);
    if (!t)
        return;
    const toml_value *cmd = toml_get(t, "command"), *url = toml_get(t, "url");
    if (cmd && cmd->type == TOML_STRING) {
        strvec args = STRVEC_INIT;
        const toml_value *a = toml_get(t, "args");
        for (size_t i = 0; a && a->type == TOML_ARRAY && i < a->u.arr.n; i++)
            if (a->u.arr.items[i]->type == TOML_STRING)
                strvec_push(&args, a->u.arr.items[i]->u.str.s);
        it->runs = command_line(cmd->u.str.s, &args);
        strvec_clear(&args);
        free(it->identity);
        it->identity = xstrdup(it->runs);
    } else if (url && url->type == TOML_STRING) {
        it->contacts = xstrdup(url->u.str.s);
        free(it->identity);
        it->identity = xstrdup(url->u.str.s);
    }
    toml_free(t);
}

/* How a gateway here runs this project's stdio servers (both layers), for
 * the card; a confined run always confines them. */
static char *isolation_text(const struct trust_review *r)
{
    strbuf path = SB_INIT, out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    enum pol_machine_state st;
    struct pol_layer *machine = NULL, *project = NULL;
    if (pol_machine_path(&path, &err) == 0)
        machine = pol_machine_load(path.buf, &st, &err);
    if (r->m->policy)
        project = pol_layer_from_toml(r->m->policy, r->m->path, POL_PROJECT, &err);
    if (machine && (!r->m->policy || project)) {
        pol_isolation_text(machine, project, &out);
        sb_adds(&out, "; inside a --sandbox or --lockdown run: always confined");
    } else {
        sb_adds(&out, "unknown — the policy cannot be read (a gateway refuses to serve)");
    }
    pol_layer_free(machine);
    pol_layer_free(project);
    sb_release(&path);
    return sb_detach(&out, NULL);
}

static void add_servers(struct trust_review *r)
{
    char *iso = NULL;
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        const struct pin_item *pi = x->item;
        if (pi->kind != PIN_SERVER)
            continue;
        const struct mf_server *s = pi->library ? NULL : manifest_server(r->m, pi->name);
        struct trust_item *it;
        if (s && s->type == MF_SERVER_STDIO) {
            char *line = command_line(s->command, &s->args);
            it = add_item(r, "server", pi->name, line, pi->checksum);
            it->runs = line;
            codepin_refs code = VEC_INIT;
            codepin_collect(r->m->project_root, s, &code, &it->code_unpinned);
            for (size_t k = 0; k < code.n; k++)
                if (!code.v[k].error)
                    strvec_pushf(&it->code_pinned, "%s%s (%s)", code.v[k].rel,
                                 code.v[k].kind == CODEPIN_TREE ? "/" : "", code.v[k].why);
            codepin_free(&code);
            if (!iso)
                iso = isolation_text(r);
            it->isolation = xstrdup(iso);
        } else if (s) {
            it = add_item(r, "server", pi->name, s->url, pi->checksum);
            it->contacts = dupn(s->url);
        } else {
            it = add_item(r, "server", pi->name, "", pi->state == PIN_OK ? pi->checksum : NULL);
            char *tag = xasprintf("[library, %s]", tag_status(x->status));
            it->tag = tag;
            if (x->status == PIN_MATCHES && pi->fs_path)
                library_server_def(pi->fs_path, it);
        }
        if (s)
            ref_server_refs(s, &it->may_read);
        it->drifted = x->status == PIN_DRIFTED && pi->library;
    }
    free(iso);
}

/* "pinned", or what a standing decision does to the item. */
static const char *decided_status(const struct pin_item *pi, enum pin_status st)
{
    if (pi->decision == PIN_DECISION_BLOCK)
        return "blocked by your decision — not delivered";
    if (pi->decision == PIN_DECISION_KEEP && pi->omitted)
        return "kept, but the approved copy is missing — not delivered";
    if (pi->decision == PIN_DECISION_KEEP && strcmp(pi->live_checksum, pi->checksum) != 0)
        return "kept at the approved bytes — the live copy drifted";
    return tag_status(st);
}

static void join(strbuf *out, const strvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        sb_addf(out, "%s%s", i ? ", " : "", v->v[i]);
}

static void add_pinned_kind(struct trust_review *r, enum pin_kind kind, const char *item_kind)
{
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        const struct pin_item *pi = x->item;
        if (pi->kind != kind)
            continue;
        strbuf id = SB_INIT;
        if (kind == PIN_SKILL)
            sb_adds(&id, pi->library ? (pi->state == PIN_OK ? "library" : "?") : "inline");
        else if (kind == PIN_EXECUTABLE)
            sb_adds(&id, pi->sub);
        else if (kind == PIN_EXTENSION)
            sb_adds(&id, pi->target ? pi->target : "");
        else if (kind == PIN_WORKFLOW)
            join(&id, &pi->roles);
        struct trust_item *it =
            add_item(r, item_kind, pi->name, id.buf, pi->state == PIN_OK ? pi->checksum : NULL);
        sb_release(&id);
        it->drifted = x->status == PIN_DRIFTED;
        if (kind == PIN_SKILL)
            it->tag = xasprintf("[%s, %s]",
                                pi->library ? "library"
                                : pi->git   ? "git"
                                            : "inline",
                                decided_status(pi, x->status));
        else if (kind == PIN_EXTENSION || kind == PIN_WORKFLOW)
            it->tag = xasprintf("[%s, %s]", pi->source ? pi->source : "?", tag_status(x->status));
        else
            it->tag = xasprintf("[%s]", decided_status(pi, x->status));
        /* A workflow drifts when its blueprint does. */
        if (kind == PIN_WORKFLOW)
            for (size_t j = 0; j < r->pins.results.n; j++) {
                const struct trust_pin_result *b = &r->pins.results.v[j];
                if (b->item->kind == PIN_BLUEPRINT && strcmp(b->item->name, pi->name) == 0 &&
                    b->status != PIN_MATCHES) {
                    it->drifted = it->drifted || b->status == PIN_DRIFTED;
                    free(it->tag);
                    it->tag = xasprintf("[blueprint %s]", tag_status(b->status));
                }
            }
        /* An instruction drifts when any of its variants does. */
        if (kind == PIN_INSTRUCTION)
            for (size_t j = 0; j < r->pins.results.n; j++) {
                const struct trust_pin_result *v = &r->pins.results.v[j];
                if (v->item->kind == PIN_VARIANT && strcmp(v->item->name, pi->name) == 0 &&
                    (v->status != PIN_MATCHES || v->item->decision != PIN_DECISION_NONE)) {
                    it->drifted = it->drifted || v->status == PIN_DRIFTED;
                    free(it->tag);
                    it->tag = xasprintf("[variant %s: %s]", v->item->declared_path,
                                        decided_status(v->item, v->status));
                }
            }
    }
}

static void add_hooks(struct trust_review *r)
{
    for (size_t i = 0; i < r->m->hooks.n; i++) {
        const struct mf_hook *h = &r->m->hooks.v[i];
        strbuf id = SB_INIT;
        char *line = command_line(h->command, &h->args);
        sb_adds(&id, h->event);
        if (h->matcher)
            sb_addf(&id, " matching %s", h->matcher);
        sb_addf(&id, " runs %s", line);
        if (h->has_timeout)
            sb_addf(&id, ", timeout %llds", (long long)h->timeout);
        sb_adds(&id, " → ");
        for (size_t j = 0; j < h->targets.n; j++)
            sb_addf(&id, "%s%s", j ? ", " : "", h->targets.v[j]);
        if (!h->targets.n)
            sb_adds(&id, "(none)");
        struct trust_item *it = add_item(r, "hook", h->name, id.buf, NULL);
        it->runs = line;
        sb_release(&id);
    }
}

static void add_settings(struct trust_review *r)
{
    for (size_t i = 0; i < r->m->settings.n; i++) {
        const struct mf_settings *s = &r->m->settings.v[i];
        strbuf c = SB_INIT;
        if (s->table)
            digest_canonical_json(s->table, &c);
        add_item(r, "settings", s->adapter, c.buf, NULL);
        sb_release(&c);
    }
}

static void add_aggregates(struct trust_review *r)
{
    if (r->secrets.n) {
        strbuf id = SB_INIT;
        for (size_t i = 0; i < r->secrets.n; i++)
            sb_addf(&id, "%s%s", i ? ", " : "", r->secrets.v[i]);
        add_item(r, "secrets", "secrets", id.buf, NULL);
        sb_release(&id);
    }
    if (r->m->policy) {
        strbuf c = SB_INIT;
        digest_canonical_json(r->m->policy, &c);
        add_item(r, "policy", "policy", c.buf, NULL);
        sb_release(&c);
    }
}

/* Marks each item against the surface recorded at the last consent. */
static void compare_prior(struct trust_review *r, json_t *prior)
{
    size_t n = json_array_size(prior);
    bool *seen = n ? xcalloc(n, sizeof *seen) : NULL;
    for (size_t i = 0; i < r->items.n; i++) {
        struct trust_item *it = &r->items.v[i];
        json_t *match = NULL;
        for (size_t j = 0; j < n; j++) {
            json_t *p = json_array_get(prior, j);
            const char *k = json_get_str(p, "kind"), *nm = json_get_str(p, "name");
            if (k && nm && strcmp(k, it->kind) == 0 && strcmp(nm, it->name) == 0) {
                match = p;
                seen[j] = true;
                break;
            }
        }
        const char *pid = json_get_str(match, "identity"), *ppin = json_get_str(match, "pin");
        it->prior_pin = dupn(ppin);
        if (it->drifted) {
            it->change = "drifted";
            memcpy(it->marker, "~ ", 3);
        } else if (!match) {
            it->change = "added";
            memcpy(it->marker, r->prior_recorded ? "+ " : "  ", 3);
        } else if (strcmp(pid ? pid : "", it->identity) != 0 ||
                   strcmp(ppin ? ppin : "", it->pin ? it->pin : "") != 0) {
            it->change = "changed";
            memcpy(it->marker, "~ ", 3);
        } else {
            it->change = "unchanged";
            memcpy(it->marker, "  ", 3);
        }
    }
    for (size_t j = 0; j < n; j++) {
        if (seen[j])
            continue;
        json_t *p = json_array_get(prior, j);
        const char *k = json_get_str(p, "kind"), *nm = json_get_str(p, "name");
        if (!k || !nm)
            continue;
        struct trust_item it = {0};
        it.kind = xstrdup(k);
        it.name = xstrdup(nm);
        it.identity = xstrdup(json_get_str(p, "identity") ? json_get_str(p, "identity") : "");
        it.prior_pin = dupn(json_get_str(p, "pin"));
        it.change = "removed";
        memcpy(it.marker, "- ", 3);
        vec_push(&r->removed, it);
    }
    free(seen);
}

static void add_blocker(struct trust_review *r, const char *kind, const char *name,
                        const char *reason, const char *fix, int group)
{
    struct trust_blocker b = {xstrdup(kind), xstrdup(name), xstrdup(reason), dupn(fix), group};
    vec_push(&r->blockers, b);
}

static const char *blocker_kind(const struct pin_item *it)
{
    switch (it->kind) {
    case PIN_VARIANT:
        return "instruction";
    case PIN_EXECUTABLE:
        return "executable";
    case PIN_BLUEPRINT:
        return "workflow";
    default:
        return pin_kind_name(it->kind);
    }
}

static void collect_blockers(struct trust_review *r, const mf_diags *diags)
{
    for (size_t i = 0; i < diags->n; i++) {
        const struct mf_diag *d = &diags->v[i];
        if (d->sev != MF_ERROR)
            continue;
        add_blocker(r, "manifest", r->paths->manifest, d->msg, d->fix, 2);
    }
    if (r->pins.lock_unreadable)
        add_blocker(r, "lock", "agentstack.lock", r->pins.lock_error,
                    strstr(r->pins.lock_error, "upgrade agentstack") ? "upgrade agentstack"
                                                                     : "agentstack lock --write",
                    2);
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        const struct pin_item *it = x->item;
        if (!x->blocks)
            continue;
        int group = it->kind == PIN_SERVER ? 0 : x->status == PIN_DRIFTED ? 1 : 2;
        const char *fix = x->status == PIN_RESOLVE_FAILED ? NULL : "agentstack lock --write";
        add_blocker(r, blocker_kind(it), it->name, x->message, fix, group);
    }
}

/* ---- drift answers and diffs ------------------------------------------- */

const char *trust_live_pin(const struct pin_item *it)
{
    if (it->decision != PIN_DECISION_NONE)
        return it->live_checksum;
    return it->state == PIN_OK ? it->checksum : "";
}

bool trust_answerable(const struct trust_pin_result *x)
{
    const struct pin_item *it = x->item;
    if (it->kind != PIN_SKILL && it->kind != PIN_INSTRUCTION && it->kind != PIN_VARIANT)
        return false;
    return x->status == PIN_DRIFTED || it->decision != PIN_DECISION_NONE;
}

static const struct trust_item *find_item(const struct trust_review *r, const char *kind,
                                          const char *name)
{
    for (size_t i = 0; i < r->items.n; i++)
        if (strcmp(r->items.v[i].kind, kind) == 0 && strcmp(r->items.v[i].name, name) == 0)
            return &r->items.v[i];
    return NULL;
}

const char *trust_approved_pin(const struct trust_review *r, const struct trust_pin_result *x)
{
    const struct pin_item *it = x->item;
    if (it->decision != PIN_DECISION_NONE)
        return it->checksum;
    /* The pin recorded at consent covers skills and instruction bases. */
    if (it->kind != PIN_VARIANT) {
        const struct trust_item *ti =
            find_item(r, it->kind == PIN_SKILL ? "skill" : "instruction", it->name);
        if (ti && ti->prior_pin)
            return ti->prior_pin;
    }
    return pin_locked_checksum(r->pins.lock, it);
}

/* A server's pinned code (a file or a tree) that drifted from the lock:
 * the diff against the copy the lock deposited in the content store. */
static void add_code_diff(struct trust_review *r, struct trust_item *ti)
{
    for (size_t j = 0; j < r->pins.results.n; j++) {
        const struct trust_pin_result *x = &r->pins.results.v[j];
        const struct pin_item *it = x->item;
        if (it->kind != PIN_EXECUTABLE || x->status != PIN_DRIFTED ||
            strcmp(it->name, ti->name) != 0 || strcmp(it->sub, ti->identity) != 0)
            continue;
        bool tree = strcmp(it->sub, "tree") == 0;
        if (!tree && strcmp(it->sub, "file") != 0)
            return;
        const char *locked = pin_locked_checksum(r->pins.lock, it);
        const char *live = trust_live_pin(it);
        if (!locked || !live[0])
            return;
        size_t budget = TRUST_DIFF_LINES;
        json_t *d = trust_diff_new();
        trust_diff_add(d, r->home, tree ? STORE_CODE_TREE : STORE_FILE, locked, live, it->fs_path,
                       it->name, &budget);
        ti->diff = d;
        return;
    }
}

/* Diffs of skills and instructions whose bytes moved from the approved ones:
 * drifted from the lock, kept at approved bytes, or re-pinned since consent;
 * and of a server's pinned code that drifted from the lock. */
static void add_diffs(struct trust_review *r)
{
    for (size_t i = 0; i < r->items.n; i++) {
        struct trust_item *ti = &r->items.v[i];
        bool skill = strcmp(ti->kind, "skill") == 0;
        if (strcmp(ti->kind, "executable") == 0 && ti->drifted) {
            add_code_diff(r, ti);
            continue;
        }
        if (!skill && strcmp(ti->kind, "instruction") != 0)
            continue;
        size_t budget = TRUST_DIFF_LINES;
        json_t *d = NULL;
        for (size_t j = 0; j < r->pins.results.n; j++) {
            const struct trust_pin_result *x = &r->pins.results.v[j];
            const struct pin_item *it = x->item;
            bool mine = strcmp(it->name, ti->name) == 0 &&
                        (skill ? it->kind == PIN_SKILL
                               : it->kind == PIN_INSTRUCTION || it->kind == PIN_VARIANT);
            if (!mine)
                continue;
            const char *live = trust_live_pin(it);
            const char *approved = trust_approved_pin(r, x);
            if (x->status != PIN_DRIFTED && it->decision == PIN_DECISION_NONE &&
                it->kind != PIN_VARIANT && ti->prior_pin)
                approved = ti->prior_pin; /* re-pinned since consent: pin to pin */
            if (!approved || !live[0] || strcmp(approved, live) == 0)
                continue;
            if (!d)
                d = trust_diff_new();
            const char *path = it->live_path ? it->live_path : it->fs_path;
            const char *disp = it->declared_path ? it->declared_path : it->name;
            trust_diff_add(d, r->home, skill ? STORE_SKILL_TREE : STORE_FILE, approved, live, path,
                           disp, &budget);
        }
        ti->diff = d;
    }
}

/* The implicit local source, when the caller passed no library hooks. */
static bool library_has_default(void *ctx, enum mf_item_kind kind, const char *name)
{
    const char *home = ctx;
    strbuf p = SB_INIT;
    int r = 0;
    if (kind == MF_ITEM_SERVER)
        r = pin_library_default(home, PIN_SERVER, name, &p);
    else if (kind == MF_ITEM_SKILL)
        r = pin_library_default(home, PIN_SKILL, name, &p);
    else if (kind == MF_ITEM_EXTENSION)
        r = pin_library_default(home, PIN_EXTENSION, name, &p);
    else if (kind == MF_ITEM_WORKFLOW)
        r = pin_library_default(home, PIN_WORKFLOW, name, &p);
    sb_release(&p);
    return r == 1;
}

int trust_review_build(const struct bundle_paths *p, const struct trust_library *lib,
                       struct trust_review *r, struct as_err *err)
{
    memset(r, 0, sizeof *r);
    r->paths = p;
    if (lib)
        r->lib = *lib;
    manifest_snapshot_init(&r->snap);
    sb_init(&r->status.key, 64);
    strbuf home = SB_INIT;
    if (home_dir(&home, err) < 0) {
        sb_release(&home);
        return -1;
    }
    r->home = sb_detach(&home, NULL);
    if (manifest_snapshot_read(p, &r->snap, err) < 0)
        return -1;
    trust_status_release(&r->status);
    if (trust_check_snapshot(p, &r->snap, &r->status, err) < 0)
        return -1;
    r->m = manifest_load_snapshot(p, &r->snap, err);
    if (!r->m)
        return -1;
    if (trust_verify_pins_lib(r->m, p->lock, r->snap.lock.buf, r->snap.lock.len, r->snap.has_lock,
                              r->home, &r->lib, &r->pins, err) < 0)
        return -1;
    ref_manifest_refs(r->m, &r->secrets);

    struct manifest_env env = {.library_has = r->lib.has ? r->lib.has : library_has_default,
                               .library_ctx = r->lib.has ? r->lib.ctx : r->home,
                               .check_paths = true};
    mf_diags diags = VEC_INIT;
    manifest_validate(r->m, &env, &diags);

    add_servers(r);
    add_pinned_kind(r, PIN_EXECUTABLE, "executable");
    add_pinned_kind(r, PIN_SKILL, "skill");
    add_pinned_kind(r, PIN_INSTRUCTION, "instruction");
    add_pinned_kind(r, PIN_EXTENSION, "extension");
    add_pinned_kind(r, PIN_WORKFLOW, "workflow");
    add_hooks(r);
    add_settings(r);
    add_aggregates(r);

    struct trust_store st;
    json_t *prior = NULL;
    if (trust_store_load(&st, err) == 0) {
        json_t *e = trust_store_entry(&st, r->status.key.buf);
        r->re_trust = e != NULL;
        json_t *s = json_object_get(e, "surface");
        r->prior_recorded = json_is_array(s);
        r->store_corrupt = st.corrupt;
        prior = json_incref(s);
        json_t *d = json_object_get(e, "decisions");
        r->prior_decisions = json_is_array(d) ? json_deep_copy(d) : NULL;
        trust_store_free(&st);
    }
    compare_prior(r, prior);
    json_decref(prior);
    add_diffs(r);
    collect_blockers(r, &diags);
    mf_diags_free(&diags);

    strbuf mp = SB_INIT;
    struct as_err ignored = AS_ERR_INIT;
    if (home_path(HOME_MACHINE_MANIFEST, &mp, &ignored) == 0 && fs_exists(mp.buf))
        r->machine_ceiling = sb_detach(&mp, NULL);
    sb_release(&mp);
    r->lock_first = !r->snap.has_lock && r->pins.items.n > 0;
    scan_report_init(&r->scan);
    struct as_err serr = AS_ERR_INIT;
    if (scan_bundle_lib(r->m, r->home, r->lib.pin, r->lib.ctx, &r->scan, &serr) < 0)
        r->scan_error = xstrdup(serr.msg);
    for (size_t i = 0; i < r->pins.results.n; i++)
        if (r->pins.results.v[i].status == PIN_DRIFTED && r->pins.results.v[i].blocks)
            r->content_drift = true;
    return 0;
}
