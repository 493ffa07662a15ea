/* lockfile_verify — building the lock from pins (docs/formats.md), verifying pins against
 * it, deposits in the content store and the standing decisions
 * of a terminal review as read from trust.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/lockfile.h"
#include "bundle/store.h"

#define TRUST_JSON_MAX ((size_t)64 << 20)

static char *dupn(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static const struct lock_variant *old_variant(const struct lock_instruction *li,
                                              const struct pin_item *v)
{
    for (size_t i = 0; li && i < li->variants.n; i++) {
        const struct lock_variant *lv = &li->variants.v[i];
        if (strcmp(lv->path, v->declared_path) == 0 && same_str(lv->cli, v->cli) &&
            same_str(lv->model, v->model))
            return lv;
    }
    return NULL;
}

/* ---- building the lock -------------------------------------------------- */

static void copy_old_skill(struct lockfile *l, const struct lock_skill *s)
{
    struct lock_skill c = {0};
    c.name = xstrdup(s->name);
    c.source = dupn(s->source);
    c.path = dupn(s->path);
    c.git = dupn(s->git);
    c.rev = dupn(s->rev);
    memcpy(c.checksum, s->checksum, sizeof c.checksum);
    c.license = dupn(s->license);
    c.origin = dupn(s->origin);
    vec_push(&l->skills, c);
}

static void add_server_row(struct lockfile *l, const char *name, const char *source,
                           const char *checksum)
{
    struct lock_server s = {0};
    s.name = xstrdup(name);
    s.source = xstrdup(source);
    memcpy(s.checksum, checksum, sizeof s.checksum);
    vec_push(&l->servers, s);
}

static void copy_old_extension(struct lockfile *l, const struct lock_extension *e)
{
    struct lock_extension c = {0};
    c.name = xstrdup(e->name);
    c.target = dupn(e->target);
    c.source = dupn(e->source);
    c.path = dupn(e->path);
    c.git = dupn(e->git);
    c.rev = dupn(e->rev);
    memcpy(c.checksum, e->checksum, sizeof c.checksum);
    vec_push(&l->extensions, c);
}

static void copy_old_workflow(struct lockfile *l, const struct lock_workflow *w)
{
    struct lock_workflow c = {0};
    c.name = xstrdup(w->name);
    for (size_t i = 0; i < w->roles.n; i++)
        strvec_push(&c.roles, w->roles.v[i]);
    c.source = dupn(w->source);
    c.path = dupn(w->path);
    c.git = dupn(w->git);
    c.rev = dupn(w->rev);
    memcpy(c.checksum, w->checksum, sizeof c.checksum);
    c.blueprint = dupn(w->blueprint);
    memcpy(c.blueprint_checksum, w->blueprint_checksum, sizeof c.blueprint_checksum);
    vec_push(&l->workflows, c);
}

static struct lock_workflow *find_workflow(struct lockfile *l, const char *name)
{
    for (size_t i = 0; i < l->workflows.n; i++)
        if (strcmp(l->workflows.v[i].name, name) == 0)
            return &l->workflows.v[i];
    return NULL;
}

struct lockfile *pin_build_lock(const pin_items *items, const struct lockfile *old,
                                const char *stamp)
{
    struct lockfile *l = lockfile_new();
    l->manifest_digest = stamp ? xstrdup(stamp) : NULL;
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        bool ok = it->state == PIN_OK;
        switch (it->kind) {
        case PIN_SKILL: {
            const struct lock_skill *os = lockfile_skill(old, it->name);
            if (!ok) {
                if (os)
                    copy_old_skill(l, os);
                break;
            }
            struct lock_skill s = {0};
            s.name = xstrdup(it->name);
            s.source = xstrdup(it->source ? it->source : "path");
            s.path = it->library ? NULL : dupn(it->declared_path);
            s.git = dupn(it->git);
            s.rev = dupn(it->rev);
            memcpy(s.checksum, it->checksum, sizeof s.checksum);
            /* Re-locks never erase attribution. */
            s.license = os ? dupn(os->license) : NULL;
            s.origin = os ? dupn(os->origin) : NULL;
            vec_push(&l->skills, s);
            break;
        }
        case PIN_SERVER: {
            const struct lock_server *os = lockfile_server(old, it->name);
            if (ok)
                add_server_row(l, it->name, it->source, it->checksum);
            else if (os)
                add_server_row(l, os->name, os->source, os->checksum);
            break;
        }
        case PIN_INSTRUCTION: {
            const struct lock_instruction *oi = lockfile_instruction(old, it->name);
            struct lock_instruction in = {0};
            in.name = xstrdup(it->name);
            in.path = dupn(it->declared_path);
            if (ok)
                memcpy(in.checksum, it->checksum, sizeof in.checksum);
            else if (oi)
                memcpy(in.checksum, oi->checksum, sizeof in.checksum);
            else {
                free(in.name);
                free(in.path);
                break;
            }
            vec_push(&l->instructions, in);
            break;
        }
        case PIN_VARIANT: {
            struct lock_instruction *in = NULL;
            for (size_t j = 0; j < l->instructions.n; j++)
                if (strcmp(l->instructions.v[j].name, it->name) == 0)
                    in = &l->instructions.v[j];
            if (!in)
                break;
            const struct lock_variant *ov = old_variant(lockfile_instruction(old, it->name), it);
            if (!ok && !ov)
                break;
            struct lock_variant v = {0};
            v.cli = dupn(it->cli);
            v.model = dupn(it->model);
            v.path = xstrdup(it->declared_path);
            memcpy(v.checksum, ok ? it->checksum : ov->checksum, sizeof v.checksum);
            vec_push(&in->variants, v);
            break;
        }
        case PIN_EXECUTABLE:
            if (ok) {
                struct lock_executable e = {0};
                e.path = xstrdup(it->name);
                e.kind = xstrdup(it->sub);
                memcpy(e.checksum, it->checksum, sizeof e.checksum);
                vec_push(&l->executables, e);
            }
            break;
        case PIN_SETTING:
            if (ok) {
                struct lock_setting s = {0};
                s.target = xstrdup(it->name);
                s.key = xstrdup(it->sub);
                memcpy(s.checksum, it->checksum, sizeof s.checksum);
                vec_push(&l->settings, s);
            }
            break;
        case PIN_EXTENSION: {
            const struct lock_extension *oe = lockfile_extension(old, it->name);
            if (!ok) {
                /* unresolved/offline: the old row stands until it can be re-hashed */
                if (oe && it->state != PIN_FAILED)
                    copy_old_extension(l, oe);
                break;
            }
            struct lock_extension e = {0};
            e.name = xstrdup(it->name);
            e.target = dupn(it->target);
            e.source = xstrdup(it->source);
            e.path = dupn(it->declared_path);
            e.git = dupn(it->git);
            e.rev = dupn(it->rev);
            memcpy(e.checksum, it->checksum, sizeof e.checksum);
            vec_push(&l->extensions, e);
            break;
        }
        case PIN_WORKFLOW: {
            const struct lock_workflow *ow = lockfile_workflow(old, it->name);
            if (!ok) {
                if (ow && it->state != PIN_FAILED)
                    copy_old_workflow(l, ow);
                break;
            }
            struct lock_workflow w = {0};
            w.name = xstrdup(it->name);
            for (size_t j = 0; j < it->roles.n; j++)
                strvec_push(&w.roles, it->roles.v[j]);
            w.source = xstrdup(it->source);
            w.path = dupn(it->declared_path);
            w.git = dupn(it->git);
            w.rev = dupn(it->rev);
            memcpy(w.checksum, it->checksum, sizeof w.checksum);
            vec_push(&l->workflows, w);
            break;
        }
        case PIN_BLUEPRINT: {
            /* Blueprints follow their workflow (collected after it). */
            struct lock_workflow *w = find_workflow(l, it->name);
            if (!w)
                break;
            const struct lock_workflow *ow = lockfile_workflow(old, it->name);
            free(w->blueprint);
            w->blueprint = dupn(it->declared_path);
            if (ok)
                memcpy(w->blueprint_checksum, it->checksum, sizeof w->blueprint_checksum);
            else if (ow && ow->blueprint_checksum[0] && same_str(ow->blueprint, it->declared_path))
                memcpy(w->blueprint_checksum, ow->blueprint_checksum, sizeof w->blueprint_checksum);
            break;
        }
        }
    }
    /* Stale skill and server rows stay (install prunes skills); other
     * kinds are pruned. */
    for (size_t i = 0; old && i < old->skills.n; i++)
        if (!lockfile_skill(l, old->skills.v[i].name))
            copy_old_skill(l, &old->skills.v[i]);
    for (size_t i = 0; old && i < old->servers.n; i++)
        if (!lockfile_server(l, old->servers.v[i].name))
            add_server_row(l, old->servers.v[i].name, old->servers.v[i].source,
                           old->servers.v[i].checksum);
    if (old && old->ext_package)
        l->ext_package = toml_clone(old->ext_package);
    return l;
}

/* ---- verification ------------------------------------------------------- */

const char *pin_locked_checksum(const struct lockfile *l, const struct pin_item *it)
{
    if (!l)
        return NULL;
    switch (it->kind) {
    case PIN_SKILL: {
        const struct lock_skill *s = lockfile_skill(l, it->name);
        return s ? s->checksum : NULL;
    }
    case PIN_SERVER: {
        const struct lock_server *s = lockfile_server(l, it->name);
        return s ? s->checksum : NULL;
    }
    case PIN_INSTRUCTION: {
        const struct lock_instruction *in = lockfile_instruction(l, it->name);
        return in ? in->checksum : NULL;
    }
    case PIN_VARIANT: {
        const struct lock_variant *v = old_variant(lockfile_instruction(l, it->name), it);
        return v ? v->checksum : NULL;
    }
    case PIN_EXECUTABLE: {
        const struct lock_executable *e = lockfile_executable(l, it->name, it->sub);
        return e ? e->checksum : NULL;
    }
    case PIN_SETTING: {
        const struct lock_setting *s = lockfile_setting(l, it->name, it->sub);
        return s ? s->checksum : NULL;
    }
    case PIN_EXTENSION: {
        const struct lock_extension *e = lockfile_extension(l, it->name);
        return e ? e->checksum : NULL;
    }
    case PIN_WORKFLOW: {
        const struct lock_workflow *w = lockfile_workflow(l, it->name);
        return w ? w->checksum : NULL;
    }
    case PIN_BLUEPRINT: {
        const struct lock_workflow *w = lockfile_workflow(l, it->name);
        return w && w->blueprint_checksum[0] && same_str(w->blueprint, it->declared_path)
                   ? w->blueprint_checksum
                   : NULL;
    }
    }
    return NULL;
}

static bool same_roles(const strvec *a, const strvec *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return false;
    return true;
}

enum pin_status pin_verify_item(const struct lockfile *l, const struct pin_item *it)
{
    if (it->state == PIN_OFFLINE)
        return PIN_UNAVAILABLE;
    if (it->state != PIN_OK)
        return PIN_RESOLVE_FAILED;
    const char *c = pin_locked_checksum(l, it);
    if (!c)
        return PIN_UNPINNED;
    if (strcmp(c, it->checksum) != 0)
        return PIN_DRIFTED;
    if (it->kind == PIN_SKILL && it->rev) {
        const struct lock_skill *s = lockfile_skill(l, it->name);
        if (!s->rev || strcmp(s->rev, it->rev) != 0)
            return PIN_DRIFTED;
    }
    if (it->kind == PIN_EXTENSION) {
        const struct lock_extension *e = lockfile_extension(l, it->name);
        if (!same_str(e->target, it->target) || (it->rev && !same_str(e->rev, it->rev)))
            return PIN_DRIFTED;
    }
    if (it->kind == PIN_WORKFLOW) {
        const struct lock_workflow *w = lockfile_workflow(l, it->name);
        if (!same_roles(&w->roles, &it->roles) || (it->rev && !same_str(w->rev, it->rev)))
            return PIN_DRIFTED;
    }
    return PIN_MATCHES;
}

static const char *content_word(enum pin_kind k)
{
    switch (k) {
    case PIN_SKILL:
        return "skill content";
    case PIN_SERVER:
        return "server definition";
    case PIN_INSTRUCTION:
    case PIN_VARIANT:
        return "instruction content";
    case PIN_EXECUTABLE:
        return "executable content";
    case PIN_SETTING:
        return "setting value";
    case PIN_EXTENSION:
        return "extension content";
    case PIN_WORKFLOW:
        return "workflow content";
    case PIN_BLUEPRINT:
        return "blueprint content";
    }
    return "content";
}

static void join_roles(strbuf *out, const strvec *roles)
{
    for (size_t i = 0; i < roles->n; i++)
        sb_addf(out, "%s%s", i ? ", " : "", roles->v[i]);
    if (!roles->n)
        sb_adds(out, "none");
}

/* Why a row whose checksum matches still drifted (rev, target, roles). */
static bool describe_identity_drift(const struct lockfile *l, const struct pin_item *it,
                                    strbuf *out)
{
    if (it->kind == PIN_EXTENSION) {
        const struct lock_extension *e = lockfile_extension(l, it->name);
        if (e && !same_str(e->target, it->target)) {
            sb_addf(out, ": retargeted since agentstack.lock (locked %s, current %s)",
                    e->target ? e->target : "none", it->target ? it->target : "none");
            return true;
        }
    }
    if (it->kind == PIN_WORKFLOW) {
        const struct lock_workflow *w = lockfile_workflow(l, it->name);
        if (w && !same_roles(&w->roles, &it->roles)) {
            sb_adds(out, ": roles changed since agentstack.lock (locked ");
            join_roles(out, &w->roles);
            sb_adds(out, "; current ");
            join_roles(out, &it->roles);
            sb_adds(out, ")");
            return true;
        }
    }
    return false;
}

void pin_describe(const struct lockfile *l, const struct pin_item *it, enum pin_status st,
                  strbuf *out)
{
    if (it->kind == PIN_SETTING)
        sb_addf(out, "setting %s.%s", it->name, it->sub);
    else if (it->kind == PIN_EXECUTABLE)
        sb_addf(out, "%s '%s'",
                strcmp(it->sub, "root") == 0   ? "integrity root"
                : strcmp(it->sub, "tree") == 0 ? "server code tree"
                                               : "executable",
                it->name);
    else if (it->kind == PIN_VARIANT)
        sb_addf(out, "instruction '%s' variant %s", it->name, it->declared_path);
    else if (it->kind == PIN_BLUEPRINT)
        sb_addf(out, "workflow '%s' blueprint %s", it->name, it->declared_path);
    else
        sb_addf(out, "%s%s '%s'", it->library ? "library " : "", pin_kind_name(it->kind), it->name);
    switch (st) {
    case PIN_MATCHES:
        sb_adds(out, ": pinned");
        break;
    case PIN_UNPINNED:
        sb_adds(out, ": not pinned in agentstack.lock");
        break;
    case PIN_DRIFTED: {
        const char *c = pin_locked_checksum(l, it);
        if (c && strcmp(c, it->checksum) == 0 && describe_identity_drift(l, it, out))
            break;
        if (c && strcmp(c, it->checksum) == 0 && it->rev)
            sb_addf(out, ": git commit drifted from agentstack.lock (current %.12s)", it->rev);
        else
            sb_addf(out, ": %s drifted from agentstack.lock (locked %.12s, current %.12s)",
                    content_word(it->kind), c ? c : "", it->checksum);
        break;
    }
    case PIN_UNAVAILABLE:
    case PIN_RESOLVE_FAILED:
        sb_addf(out, ": %s", it->error ? it->error : pin_status_name(st));
        break;
    }
}

/* ---- deposits ----------------------------------------------------------- */

static bool plain_name(const char *s)
{
    if (!s[0] || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strncmp(s, ".tmp-", 5) == 0)
        return false;
    for (const char *p = s; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20)
            return false;
    return strlen(s) < 200;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

void pin_deposit(const pin_items *items, const char *home, strvec *warnings)
{
    if (!home)
        return;
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        if (it->state != PIN_OK || it->decision != PIN_DECISION_NONE || !it->fs_path)
            continue;
        struct as_err err = AS_ERR_INIT;
        int rc = 0;
        switch (it->kind) {
        case PIN_SKILL:
            rc = store_deposit_tree(home, it->fs_path, STORE_SKILL_TREE, it->checksum, NULL, &err);
            break;
        case PIN_INSTRUCTION:
        case PIN_VARIANT:
        case PIN_BLUEPRINT:
            rc = store_deposit_file(home, it->fs_path, base_name(it->fs_path), it->checksum, &err);
            break;
        case PIN_SERVER:
            if (it->library) {
                char *n =
                    plain_name(it->name) ? xasprintf("%s.toml", it->name) : xstrdup("server.toml");
                rc = store_deposit_file(home, it->fs_path, n, it->checksum, &err);
                free(n);
            }
            break;
        case PIN_SETTING:
            break;
        case PIN_EXECUTABLE:
            if (strcmp(it->sub, "root") == 0) {
                enum store_kind k = fs_is_dir(it->fs_path) ? STORE_ROOT_TREE : STORE_ROOT_FILE;
                rc = store_deposit_tree(home, it->fs_path, k, it->checksum, NULL, &err);
            } else if (strcmp(it->sub, "tree") == 0) {
                /* Kept so a drift can name the file and show the diff. */
                rc = store_deposit_tree(home, it->fs_path, STORE_CODE_TREE, it->checksum, NULL,
                                        &err);
            } else {
                rc = store_deposit_file(home, it->fs_path, base_name(it->fs_path), it->checksum,
                                        &err);
            }
            break;
        case PIN_EXTENSION:
        case PIN_WORKFLOW:
            break; /* not store-backed */
        }
        if (rc < 0) {
            strbuf w = SB_INIT;
            sb_addf(&w, "could not keep a copy of %s '%s' in the content store: %s",
                    pin_kind_name(it->kind), it->name, err.msg);
            strvec_push_take(warnings, sb_detach(&w, NULL));
        }
    }
    /* Settings values live in memory, not at fs_path. */
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        if (it->kind != PIN_SETTING || it->state != PIN_OK || !it->canon)
            continue;
        struct as_err err = AS_ERR_INIT;
        char *n = xasprintf("%s.%s.json", it->name, it->sub);
        if (!plain_name(n)) {
            free(n);
            n = xstrdup("setting.json");
        }
        if (store_deposit_bytes(home, it->canon, strlen(it->canon), n, it->checksum, &err) < 0)
            strvec_pushf(warnings,
                         "could not keep a copy of setting '%s.%s' in the content "
                         "store: %s",
                         it->name, it->sub, err.msg);
        free(n);
    }
}

/* ---- decisions ------------------------------------------------------------ */

const char *pin_decision_kind(const struct pin_item *it)
{
    switch (it->kind) {
    case PIN_SKILL:
        return "skill";
    case PIN_INSTRUCTION:
    case PIN_VARIANT:
        return "instruction";
    default:
        return NULL;
    }
}

void pin_decisions_free(pin_decisions *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].kind);
        free(d->v[i].name);
        free(d->v[i].variant);
    }
    vec_free(d);
}

int pin_decisions_load(const char *home, const char *project_root, pin_decisions *out)
{
    memset(out, 0, sizeof *out);
    if (!home || !project_root)
        return 0;
    char *path = xasprintf("%s/trust.json", home);
    struct as_err err = AS_ERR_INIT;
    json_t *root = fs_exists(path) ? json_load_path(path, TRUST_JSON_MAX, &err) : NULL;
    free(path);
    if (!root)
        return 0;
    strbuf key = SB_INIT;
    discover_project_key(project_root, &key);
    json_t *entry = json_object_get(json_object_get(root, "trusted"), key.buf);
    json_t *ds = json_object_get(entry, "decisions");
    for (size_t i = 0; json_is_array(ds) && i < json_array_size(ds); i++) {
        json_t *d = json_array_get(ds, i);
        const char *kind = json_get_str(d, "kind"), *name = json_get_str(d, "name");
        json_t *ans = json_object_get(d, "answer");
        const char *a = json_get_str(ans, "answer"), *pin = json_get_str(ans, "pin");
        if (!kind || !name || !a)
            continue;
        struct pin_decision_row r = {0};
        if (strcmp(a, "keep-pinned") == 0)
            r.answer = PIN_DECISION_KEEP;
        else if (strcmp(a, "blocked") == 0)
            r.answer = PIN_DECISION_BLOCK;
        else
            continue;
        /* A keep without a well-formed pin cannot be honoured: skip it, so the
         * item is verified (and blocked) as usual. */
        if (pin && sha256_normalize_hex(pin, r.pin) < 0)
            continue;
        if (r.answer == PIN_DECISION_KEEP && !r.pin[0])
            continue;
        r.kind = xstrdup(kind);
        r.name = xstrdup(name);
        r.variant = dupn(json_get_str(d, "variant"));
        vec_push(out, r);
    }
    sb_release(&key);
    json_decref(root);
    return 0;
}

const struct pin_decision_row *pin_decision_find(const pin_decisions *d, const struct pin_item *it)
{
    const char *kind = pin_decision_kind(it);
    if (!d || !kind)
        return NULL;
    const char *variant = it->kind == PIN_VARIANT ? it->declared_path : NULL;
    for (size_t i = 0; i < d->n; i++) {
        const struct pin_decision_row *r = &d->v[i];
        if (strcmp(r->kind, kind) == 0 && strcmp(r->name, it->name) == 0 &&
            same_str(r->variant, variant))
            return r;
    }
    return NULL;
}
