/*
 * The facts `explain` and `why` show about one name (explain.h): gathered
 * from the manifest, the lock (verified item by item through pin_collect, as
 * doctor does), trust.json, both policy layers, the registry (which CLIs
 * have the gateway) and the call log. Reads only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "adapters/adapters.h"
#include "audit/audit.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"
#include "bundle/ref.h"
#include "bundle/scan.h"
#include "cli/cli.h"
#include "cli/explain.h"
#include "library/library.h"
#include "onboard/onboard.h"
#include "policy/policy.h"
#include "secrets/backends.h"
#include "secrets/secrets.h"
#include "trust/trust.h"

void xp_facts_release(struct xp_facts *f)
{
    free(f->name);
    sb_release(&f->manifest);
    sb_release(&f->origin);
    sb_release(&f->source);
    sb_release(&f->pin_detail);
    strvec_clear(&f->targets);
    strvec_clear(&f->toolsets);
    for (size_t i = 0; i < f->secrets.n; i++)
        free(f->secrets.v[i].name);
    vec_free(&f->secrets);
    sb_release(&f->model);
    sb_release(&f->policy);
    sb_release(&f->isolation);
    strvec_clear(&f->signals);
    strvec_clear(&f->live_clis);
    memset(f, 0, sizeof *f);
}

static void facts_init(struct xp_facts *f, const char *name)
{
    memset(f, 0, sizeof *f);
    f->name = xstrdup(name);
    sb_init(&f->manifest, 0);
    sb_init(&f->origin, 0);
    sb_init(&f->source, 0);
    sb_init(&f->pin_detail, 0);
    sb_init(&f->model, 0);
    sb_init(&f->policy, 0);
    sb_init(&f->isolation, 0);
    f->pin = "—";
}

static void add_pos(strbuf *out, const char *what, const struct mf_pos *pos, const char *fallback)
{
    sb_addf(out, "%s %s", what, pos->file ? pos->file : fallback);
    if (pos->line)
        sb_addf(out, ":%u", pos->line);
}

static void copy_targets(struct xp_facts *f, const struct manifest *m, const strvec *t, bool set)
{
    if (!set || (t->n == 1 && strcmp(t->v[0], "*") == 0)) {
        if (m->has_targets && m->targets_default.n)
            for (size_t i = 0; i < m->targets_default.n; i++)
                strvec_push(&f->targets, m->targets_default.v[i]);
        else
            strvec_push(&f->targets, "*");
        return;
    }
    for (size_t i = 0; i < t->n; i++)
        strvec_push(&f->targets, t->v[i]);
}

static bool names_member(const strvec *v, const char *name)
{
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->v[i], "*") == 0 || strcmp(pin_ref_name(v->v[i], NULL), name) == 0)
            return true;
    }
    return false;
}

/* Presence only (the keychain's item names are listed, never read). */
static void locate_secrets(struct xp_facts *f, const strvec *refs, const char *dotenv)
{
    if (!refs->n)
        return;
    struct sec_chain_opts so = {0};
    so.project_dotenv = dotenv;
    so.no_keychain = true;
    struct sec_chain *c = sec_chain_full(&so);
    strvec kc = STRVEC_INIT;
    bool have_kc = false;
    for (size_t i = 0; i < refs->n; i++) {
        struct xp_secret s = {xstrdup(refs->v[i]), NULL};
        struct sec_result r;
        if (sec_locate(c, refs->v[i], &r) == SEC_FOUND) {
            s.where = r.source;
        } else {
            if (!have_kc) {
                struct as_err kerr = AS_ERR_INIT;
                have_kc = true;
                sec_keychain_names(&kc, &kerr);
            }
            if (strvec_find(&kc, refs->v[i]) >= 0)
                s.where = "keychain";
        }
        vec_push(&f->secrets, s);
    }
    strvec_clear(&kc);
    sec_chain_free(c);
}

/* The lock's verdict on the item of this kind and name. */
static void pin_state(struct xp_facts *f, const struct manifest *m, const struct bundle_paths *p,
                      const struct manifest_snapshot *snap, enum pin_kind kind, strbuf *lib_path)
{
    struct as_err err = AS_ERR_INIT;
    struct lockfile *lock = NULL;
    if (snap->has_lock) {
        lock = lockfile_parse(p->lock, snap->lock.buf, snap->lock.len, &err);
        if (!lock) {
            f->pin = "not verified";
            char buf[2300];
            sb_adds(&f->pin_detail, as_err_str(&err, buf, sizeof buf));
            return;
        }
    }
    strbuf home = SB_INIT;
    struct library *lib = lib_open(NULL, &err);
    as_err_clear(&err);
    home_dir(&home, &err);
    pin_items items = VEC_INIT;
    struct pin_opts o = {.home = home.len ? home.buf : NULL,
                         .lock = lock,
                         .library = lib ? lib_pin_lookup : NULL,
                         .library_ctx = lib};
    if (pin_collect(m, &o, &items, &err) < 0) {
        f->pin = "not verified";
        char buf[2300];
        sb_adds(&f->pin_detail, as_err_str(&err, buf, sizeof buf));
    }
    for (size_t i = 0; i < items.n; i++) {
        const struct pin_item *it = &items.v[i];
        if (it->kind != kind || strcmp(it->name, f->name) != 0)
            continue;
        if (it->library && it->fs_path && lib_path)
            sb_adds(lib_path, it->fs_path);
        if (it->state == PIN_FAILED) {
            f->pin = "not verified";
            sb_adds(&f->pin_detail, it->error ? it->error : "cannot be pinned");
            break;
        }
        enum pin_status st = lock ? pin_verify_item(lock, it) : PIN_UNPINNED;
        f->pin = st == PIN_MATCHES    ? "pinned"
                 : st == PIN_UNPINNED ? "not pinned"
                 : st == PIN_DRIFTED  ? "drifted"
                                      : "not verified";
        if (st == PIN_MATCHES)
            sb_addf(&f->pin_detail, "sha256:%.12s in %s", it->checksum, p->lock);
        else if (lock)
            pin_describe(lock, it, st, &f->pin_detail);
        else
            sb_addf(&f->pin_detail, "no %s yet — agentstack lock --write", p->lock);
        break;
    }
    pin_items_free(&items);
    lockfile_free(lock);
    lib_free(lib);
    sb_release(&home);
}

static void policy_rows(struct xp_facts *f, const struct manifest *m)
{
    struct as_err err = AS_ERR_INIT;
    strbuf mpath = SB_INIT;
    enum pol_machine_state ms = POL_UNCONFIGURED;
    struct pol_layer *machine = NULL;
    if (pol_machine_path(&mpath, &err) == 0)
        machine = pol_machine_load(mpath.buf, &ms, &err);
    as_err_clear(&err);
    struct pol_layer *project = m->kind == MANIFEST_PROJECT
                                    ? pol_layer_from_toml(m->policy, m->path, POL_PROJECT, &err)
                                    : NULL;
    if (ms == POL_BLOCKED) {
        char buf[2300];
        strvec_pushf(&f->signals, "the machine policy file is broken — every path refuses: %s",
                     as_err_str(&err, buf, sizeof buf));
    }
    pol_explain_rows(machine, project, f->name, &f->policy);
    pol_isolation_row(machine, project, &f->isolation);
    pol_layer_free(machine);
    pol_layer_free(project);
    sb_release(&mpath);
}

static void call_counts(struct xp_facts *f, const struct bundle_paths *p)
{
    struct as_err err = AS_ERR_INIT;
    strbuf home = SB_INIT, key = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        sb_release(&home);
        return;
    }
    if (p->found)
        discover_project_key(p->base, &key);
    struct aud_summary s;
    if (aud_calls_summarize(home.buf, p->found ? key.buf : NULL, &s, &err) == 0) {
        const char *k;
        json_t *v;
        size_t len = strlen(f->name);
        json_object_foreach(s.by_tool, k, v)
        {
            if (strncmp(k, f->name, len) != 0 || strncmp(k + len, "__", 2) != 0)
                continue;
            f->calls += (size_t)json_integer_value(json_object_get(v, "calls"));
            f->denied += (size_t)json_integer_value(json_object_get(v, "denied"));
        }
        aud_summary_release(&s);
    }
    sb_release(&home);
    sb_release(&key);
}

/* Which CLIs have the gateway registered (they get servers and skills
 * live, unless render_locally says otherwise). */
static void live_clis(struct xp_facts *f, const char *project_root)
{
    struct adp_registry reg = {0};
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) < 0)
        return;
    for (size_t i = 0; i < reg.v.n; i++) {
        const struct adp_desc *d = reg.v.v[i];
        if (adp_detected(d, project_root) && onb_bridge_registered(d))
            strvec_push(&f->live_clis, d->id);
    }
    adp_registry_free(&reg);
}

static void server_facts(struct xp_facts *f, const struct manifest *m, const struct bundle_paths *p,
                         const struct manifest_snapshot *snap)
{
    const struct mf_server *s = manifest_server(m, f->name);
    strbuf lib_path = SB_INIT;
    pin_state(f, m, p, snap, PIN_SERVER, &lib_path);
    strvec refs = STRVEC_INIT;
    if (s) {
        add_pos(&f->origin, "inline in", &s->pos, m->path);
        if (s->type == MF_SERVER_HTTP) {
            sb_addf(&f->source, "http %s", s->url ? s->url : "(no url)");
        } else {
            sb_addf(&f->source, "stdio %s", s->command ? s->command : "(no command)");
            for (size_t i = 0; i < s->args.n; i++)
                sb_addf(&f->source, " %s", s->args.v[i]);
        }
        copy_targets(f, m, &s->targets, s->targets_set);
        ref_server_refs(s, &refs);
        if (s->type == MF_SERVER_STDIO && s->command && s->command[0] != '/' &&
            strchr(s->command, '/'))
            strvec_pushf(&f->signals,
                         "runs a program from the project (%s): its bytes are "
                         "pinned as an executable",
                         s->command);
        for (size_t i = 0; i < s->env.n; i++)
            if (!ref_has_ref(s->env.v[i].value))
                strvec_pushf(&f->signals, "env %s is a literal value, not a ${REF}",
                             s->env.v[i].key);
    } else {
        sb_addf(&f->origin, "central library%s%s", lib_path.len ? " — " : "",
                lib_path.len ? lib_path.buf : " (not found in any linked source)");
        sb_adds(&f->source, "as the library file declares it (agentstack lib list)");
        strvec_push(&f->targets, "*");
    }
    locate_secrets(f, &refs, p->found ? p->env_file : NULL);
    for (size_t i = 0; i < f->secrets.n; i++)
        if (!f->secrets.v[i].where)
            strvec_pushf(&f->signals, "${%s} does not resolve here (agentstack secret set %s)",
                         f->secrets.v[i].name, f->secrets.v[i].name);
    strvec_clear(&refs);
    policy_rows(f, m);
    call_counts(f, p);
    sb_release(&lib_path);
}

static void skill_facts(struct xp_facts *f, const struct manifest *m, const struct bundle_paths *p,
                        const struct manifest_snapshot *snap)
{
    const struct mf_skill *s = manifest_skill(m, f->name);
    strbuf lib_path = SB_INIT;
    pin_state(f, m, p, snap, PIN_SKILL, &lib_path);
    if (s) {
        add_pos(&f->origin, "declared in", &s->pos, m->path);
        if (s->source == MF_SOURCE_GIT)
            sb_addf(&f->source, "git %s%s%s%s%s", s->git, s->rev ? " @ " : "", s->rev ? s->rev : "",
                    s->subpath ? " / " : "", s->subpath ? s->subpath : "");
        else
            sb_addf(&f->source, "path %s", s->path ? s->path : f->name);
    } else {
        sb_addf(&f->origin, "central library%s%s", lib_path.len ? " — " : "",
                lib_path.len ? lib_path.buf : " (not found in any linked source)");
        sb_addf(&f->source, "%s", lib_path.len ? lib_path.buf : "—");
    }
    strvec_push(&f->targets, "*");
    if (!strcmp(f->pin, "drifted"))
        strvec_push(&f->signals, "its bytes changed since they were pinned: review, then "
                                 "agentstack lock --write");
    sb_release(&lib_path);
}

static void toolset_facts(struct xp_facts *f, const struct manifest *m)
{
    const struct mf_toolset *t = manifest_toolset(m, f->name);
    add_pos(&f->origin, "declared in", &t->pos, m->path);
    sb_addf(&f->source, "%zu server%s, %zu skill%s", t->servers.n, t->servers.n == 1 ? "" : "s",
            t->skills.n, t->skills.n == 1 ? "" : "s");
    for (size_t i = 0; i < t->servers.n; i++)
        strvec_pushf(&f->toolsets, "server %s", t->servers.v[i]);
    for (size_t i = 0; i < t->skills.n; i++)
        strvec_pushf(&f->toolsets, "skill %s", t->skills.v[i]);
    if (t->model)
        sb_adds(&f->model, t->model);
    strvec_push(&f->targets, t->harness ? t->harness : "*");
    if (m->default_toolset && strcmp(m->default_toolset, f->name) == 0)
        strvec_push(&f->signals, "the default toolset: trusted gateway connections open it");
}

int xp_facts_load(const struct cli_ctx *ctx, const char *name, struct xp_facts *f,
                  struct as_err *err)
{
    facts_init(f, name);
    struct bundle_paths p = {0};
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    int rc = -1;
    if (discover_project(ctx->manifest_dir, NULL, &p, err) < 0)
        goto out;
    if (p.found) {
        if (manifest_snapshot_read(&p, &snap, err) < 0 ||
            !(m = manifest_load_snapshot(&p, &snap, err)))
            goto out;
        f->scope = "project";
        sb_adds(&f->manifest, p.manifest);
    } else {
        int absent = 0;
        m = manifest_load_machine(&absent, err);
        if (!m) {
            if (absent) {
                as_err_clear(err);
                discover_require(&p, err);
            }
            goto out;
        }
        f->scope = "global";
        sb_adds(&f->manifest, m->path);
    }
    bool in_toolset = false;
    for (size_t i = 0; i < m->toolsets.n; i++)
        if (names_member(&m->toolsets.v[i].servers, name) ||
            names_member(&m->toolsets.v[i].skills, name)) {
            in_toolset = true;
            strvec_push(&f->toolsets, m->toolsets.v[i].name);
        }
    bool lib_server = false, lib_skill = false;
    for (size_t i = 0; i < m->toolsets.n && !manifest_server(m, name); i++)
        for (size_t k = 0; k < m->toolsets.v[i].servers.n; k++)
            if (!strcmp(pin_ref_name(m->toolsets.v[i].servers.v[k], NULL), name))
                lib_server = true;
    for (size_t i = 0; i < m->toolsets.n && !manifest_skill(m, name); i++)
        for (size_t k = 0; k < m->toolsets.v[i].skills.n; k++)
            if (!strcmp(pin_ref_name(m->toolsets.v[i].skills.v[k], NULL), name))
                lib_skill = true;
    (void)in_toolset;
    if (manifest_server(m, name) || lib_server)
        f->kind = "server";
    else if (manifest_skill(m, name) || lib_skill)
        f->kind = "skill";
    else if (manifest_instruction(m, name))
        f->kind = "instruction";
    else if (manifest_toolset(m, name))
        f->kind = "toolset";
    if (!f->kind) {
        rc = 1;
        goto out;
    }
    if (p.found) {
        struct trust_status ts;
        memset(&ts, 0, sizeof ts);
        struct as_err terr = AS_ERR_INIT;
        if (trust_check_snapshot(&p, &snap, &ts, &terr) == 0)
            f->approved = ts.state == TRUST_TRUSTED   ? "trusted"
                          : ts.state == TRUST_CHANGED ? "changed since trusted"
                                                      : "untrusted";
        else
            f->approved = "untrusted";
        trust_status_release(&ts);
    } else {
        f->approved = "machine manifest (no trust step)";
    }
    f->render_locally = m->delivery_render_locally;
    if (!strcmp(f->kind, "server") || !strcmp(f->kind, "skill"))
        live_clis(f, p.found ? p.project_root : NULL);
    f->live =
        f->live_clis.n && !f->render_locally && (!p.found || strcmp(f->approved, "trusted") == 0);
    if (!strcmp(f->kind, "server")) {
        server_facts(f, m, &p, &snap);
    } else if (!strcmp(f->kind, "skill")) {
        skill_facts(f, m, &p, &snap);
    } else if (!strcmp(f->kind, "instruction")) {
        const struct mf_instruction *in = manifest_instruction(m, name);
        add_pos(&f->origin, "declared in", &in->pos, m->path);
        sb_addf(&f->source, "%s", in->path ? in->path : "library instructions");
        pin_state(f, m, &p, &snap, PIN_INSTRUCTION, NULL);
        strvec_push(&f->targets, "*");
    } else {
        toolset_facts(f, m);
    }
    rc = 0;
out:
    if (m)
        manifest_free(m);
    manifest_snapshot_release(&snap);
    bundle_paths_free(&p);
    return rc;
}

static json_t *strs(const strvec *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

char *xp_facts_json(const struct xp_facts *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(f->name));
    json_object_set_new(o, "kind", json_string(f->kind));
    json_object_set_new(o, "scope", json_string(f->scope));
    json_object_set_new(o, "manifest", json_string(f->manifest.buf));
    json_object_set_new(o, "origin", json_string(f->origin.buf));
    json_object_set_new(o, "source", json_string(f->source.buf));
    json_t *pin = json_object();
    json_object_set_new(pin, "state", json_string(f->pin));
    json_object_set_new(pin, "detail", json_string(f->pin_detail.buf));
    json_object_set_new(o, "pin", pin);
    json_object_set_new(o, "approved", json_string(f->approved));
    json_object_set_new(o, "targets", strs(&f->targets));
    json_object_set_new(o, "toolsets", strs(&f->toolsets));
    json_t *sec = json_array();
    for (size_t i = 0; i < f->secrets.n; i++) {
        json_t *s = json_object();
        json_object_set_new(s, "name", json_string(f->secrets.v[i].name));
        json_object_set_new(s, "resolves_from",
                            f->secrets.v[i].where ? json_string(f->secrets.v[i].where)
                                                  : json_null());
        json_array_append_new(sec, s);
    }
    json_object_set_new(o, "secrets", sec);
    json_object_set_new(o, "render_locally", json_boolean(f->render_locally));
    json_object_set_new(o, "live", json_boolean(f->live));
    json_object_set_new(o, "live_clis", strs(&f->live_clis));
    json_object_set_new(o, "model", f->model.len ? json_string(f->model.buf) : json_null());
    json_t *used = json_object();
    json_object_set_new(used, "calls", json_integer((json_int_t)f->calls));
    json_object_set_new(used, "denied", json_integer((json_int_t)f->denied));
    json_object_set_new(o, "used", used);
    if (!strcmp(f->kind, "server")) {
        json_object_set_new(o, "policy", json_string(f->policy.buf));
        json_object_set_new(o, "isolation", json_string(f->isolation.buf));
    }
    json_object_set_new(o, "signals", strs(&f->signals));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}
