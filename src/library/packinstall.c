/* pack — installing, upgrading and re-pinning; see pack.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/manifest.h"
#include "library/pack.h"
#include "library/txn.h"
#include "policy/policy.h"
#include "trust/trust.h"

/* A destination inside the project: no existing component below the
 * manifest dir may be a symlink (a hostile checkout could point skills/
 * anywhere), and it must not climb out. */
static int dest_ok(const char *manifest_dir, const char *path, struct as_err *err)
{
    size_t n = strlen(manifest_dir);
    if (strncmp(path, manifest_dir, n) != 0 || path[n] != '/')
        return as_err_set(err, "%s is outside %s", path, manifest_dir);
    strbuf out = SB_INIT;
    int rc = fs_contain(manifest_dir, NULL, path + n + 1,
                        FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &out, err);
    sb_release(&out);
    if (rc < 0)
        as_err_hint(err, "the pack writes only real directories under %s — nothing installed",
                    manifest_dir);
    return rc;
}

/* ---- shared pieces ----------------------------------------------------------------------- */

static char *anchored(const char *dir, const char *rel)
{
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    return xasprintf("%s/%s", dir, rel);
}

static toml_value *str_array(const strvec *v)
{
    toml_value *a = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < v->n; i++)
        toml_array_push(a, toml_new_string(v->v[i]));
    return a;
}

static toml_value *ledger_table(const struct lib_pack *pk, const struct lib_pack_ref *ref,
                                bool with_instructions)
{
    toml_value *t = toml_new(TOML_TABLE);
    toml_table_set(t, "version", toml_new_string(pk->tag));
    if (pk->description)
        toml_table_set(t, "description", toml_new_string(pk->description));
    char *id = lib_pack_ledger_id(ref, pk->tag);
    toml_table_set(t, "source", toml_new_string(id));
    free(id);
    toml_table_set(t, "rev", toml_new_string(pk->commit));
    toml_table_set(t, "targets", str_array(&pk->targets));
    strvec servers = STRVEC_INIT, skills = STRVEC_INIT, instr = STRVEC_INIT, none = STRVEC_INIT;
    if (pk->has_server)
        strvec_push(&servers, pk->name);
    for (size_t i = 0; i < pk->skills.n; i++)
        strvec_push(&skills, pk->skills.v[i].name);
    for (size_t i = 0; with_instructions && i < pk->instructions.n; i++)
        strvec_push(&instr, pk->instructions.v[i].name);
    toml_table_set(t, "servers", str_array(&servers));
    toml_table_set(t, "skills", str_array(&skills));
    toml_table_set(t, "hooks", str_array(&none));
    toml_table_set(t, "instructions", str_array(&instr));
    strvec_clear(&servers);
    strvec_clear(&skills);
    strvec_clear(&instr);
    return t;
}

static int forbid_check(const struct manifest *m, const struct lib_pack *pk, struct as_err *err)
{
    const toml_value *f = m->policy ? toml_get(m->policy, "forbid") : NULL;
    if (!f || f->type != TOML_ARRAY)
        return 0;
    strvec names = STRVEC_INIT;
    strvec_push(&names, pk->name);
    for (size_t i = 0; i < pk->skills.n; i++)
        strvec_push(&names, pk->skills.v[i].name);
    for (size_t i = 0; i < pk->instructions.n; i++)
        strvec_push(&names, pk->instructions.v[i].name);
    int rc = 0;
    for (size_t i = 0; i < toml_len(f) && rc == 0; i++) {
        const toml_value *v = toml_at(f, i);
        if (v->type != TOML_STRING)
            continue;
        for (size_t j = 0; j < names.n && rc == 0; j++) {
            if (pol_glob_match(v->u.str.s, strlen(v->u.str.s), names.v[j], strlen(names.v[j]), 0)) {
                as_err_set(err, "[policy] forbid names '%s' (rule \"%s\") — nothing installed",
                           names.v[j], v->u.str.s);
                rc = -1;
            }
        }
    }
    strvec_clear(&names);
    return rc;
}

static int vendor_instruction(const struct lib_pack *pk, const struct lib_pack_member *mb,
                              strbuf *out, struct as_err *err)
{
    char *src = xasprintf("%s/%s", pk->root, mb->path);
    sb_addf(out, "<!-- agentstack:vendor %s (unofficial) -->\n", pk->name);
    int rc = fs_read_file(src, (size_t)1 << 20, 1, out, err);
    free(src);
    return rc;
}

static void print_server(FILE *f, const struct lib_pack *pk)
{
    if (!pk->has_server)
        return;
    if (strcmp(pk->server_type, "stdio") == 0) {
        fprintf(f, "  + [servers.%s]  stdio: ", pk->name);
        lib_say(f, "", pk->server_command, "");
        for (size_t i = 0; i < pk->server_args.n; i++)
            lib_say(f, " ", pk->server_args.v[i], "");
        fputc('\n', f);
        for (size_t i = 0; i < pk->secret_env.n; i++) {
            strbuf n = SB_INIT;
            lib_pack_env_name(pk->secret_env.v[i], &n);
            fprintf(f, "      env %s = \"${%s}\"\n", n.buf, n.buf);
            sb_release(&n);
        }
    } else {
        fprintf(f, "  + [servers.%s]  http: ", pk->name);
        lib_say(f, "", pk->server_url, "\n");
        toml_value *t = lib_pack_server_table(pk);
        const toml_value *h = toml_get(t, "headers");
        for (size_t i = 0; i < toml_len(h); i++) {
            const toml_kv *kv = toml_entry(h, i);
            fprintf(f, "      header %s = \"%s\"\n", kv->key, kv->val->u.str.s);
        }
        toml_free(t);
    }
    fprintf(f, "      gateway tools appear as %s__<tool>\n", pk->name);
}

static void secret_refs(const struct lib_pack *pk, strvec *out)
{
    toml_value *t = pk->has_server ? lib_pack_server_table(pk) : NULL;
    const char *tables[] = {"env", "headers"};
    for (size_t k = 0; t && k < 2; k++) {
        const toml_value *h = toml_get(t, tables[k]);
        for (size_t i = 0; i < toml_len(h); i++) {
            const char *v = toml_entry(h, i)->val->u.str.s;
            const char *a = strstr(v, "${");
            if (!a)
                continue;
            const char *b = strchr(a, '}');
            if (b)
                strvec_push_take(out, xstrndup(a + 2, (size_t)(b - a - 2)));
        }
    }
    toml_free(t);
}

/* [<table>.<name>] path = "<rel>": the entry of a skill or house rule. */
static int set_path_entry(toml_edit *ed, const char *table, const char *name, const char *rel,
                          struct as_err *err)
{
    toml_value *e = toml_new(TOML_TABLE);
    toml_table_set(e, "path", toml_new_string(rel));
    const char *path[] = {table, name};
    int r = toml_edit_set_table(ed, path, 2, e, err);
    toml_free(e);
    return r;
}

static int set_ledger(toml_edit *ed, const struct lib_pack *pk, const struct lib_pack_ref *ref,
                      bool with_instructions, struct as_err *err)
{
    toml_value *led = ledger_table(pk, ref, with_instructions);
    const char *path[] = {"packs", pk->name};
    int r = toml_edit_set_table(ed, path, 2, led, err);
    toml_free(led);
    return r;
}

/* Copies a pack skill into the project; dst is recorded for rollback. */
static int copy_skill(struct lib_txn *t, const struct bundle_paths *p, const char *src,
                      const char *dst, struct as_err *err)
{
    if (lib_txn_parents(t, p->manifest_dir, dst, err) < 0 || lib_copy_tree(src, dst, err) < 0)
        return -1;
    strvec_push(&t->created, dst);
    return 0;
}

/* Writes a vendored house rule to dst under instructions/ (made if missing);
 * what it creates is recorded for rollback. */
static int write_instruction(struct lib_txn *t, const struct bundle_paths *p, const char *dst,
                             const char *body, size_t len, struct as_err *err)
{
    char *dir = xasprintf("%s/instructions", p->manifest_dir);
    int r = 0;
    if (!fs_is_dir(dir)) {
        r = fs_mkdirs(dir, 0755, err);
        if (r == 0)
            strvec_push(&t->created, dir);
    }
    free(dir);
    struct fs_write_opts wo = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
    if (r == 0)
        r = fs_write_atomic(dst, body, len, &wo, err);
    if (r == 0)
        strvec_push(&t->created, dst);
    return r;
}

/* ---- add from git: ---------------------------------------------------------------------- */

int lib_pack_add(struct library *lib, const struct bundle_paths *p, const char *spec,
                 const struct lib_pack_opts *o, struct as_err *err)
{
    struct lib_pack_ref ref;
    if (lib_pack_ref_parse(spec, &ref, err) < 0)
        return -1;
    struct manifest *m = NULL;
    struct lib_pack pk;
    memset(&pk, 0, sizeof pk);
    char *tag = NULL;
    toml_edit *ed = NULL;
    struct lib_txn t = LIB_TXN_INIT;
    int rc = -1;

    m = manifest_load(p, err);
    if (!m)
        goto out;
    if (lib_pack_policy_check(m, ref.url, err) < 0)
        goto out;
    if (ref.tag) {
        tag = xstrdup(ref.tag);
    } else if (lib_pack_newest_tag(ref.url, &tag, err) < 0) {
        goto out;
    }
    if (lib_pack_fetch(lib->home, &ref, tag, &pk, err) < 0)
        goto out;
    if (forbid_check(m, &pk, err) < 0)
        goto out;

    /* Refusals before any write. */
    if (toml_get_path(m->root, "packs", pk.name, NULL)) {
        as_err_set(err, "pack '%s' is already installed ([packs.%s] in %s)", pk.name, pk.name,
                   m->path);
        as_err_hint(err, "upgrade it: agentstack upgrade %s --write", pk.name);
        goto out;
    }
    if (pk.has_server && manifest_server(m, pk.name)) {
        as_err_set(err, "[servers.%s] already exists in %s — nothing installed", pk.name, m->path);
        as_err_hint(err, "rename or remove that server first");
        goto out;
    }
    for (size_t i = 0; i < pk.skills.n; i++) {
        const struct lib_pack_member *mb = &pk.skills.v[i];
        char *dst = anchored(p->manifest_dir, mb->path);
        bool exists = fs_exists(dst);
        int ok = dest_ok(p->manifest_dir, dst, err);
        free(dst);
        if (ok < 0)
            goto out;
        if (manifest_skill(m, mb->name) || exists) {
            as_err_set(err, "%s — nothing installed",
                       exists ? "a skill directory of the pack already exists in the project"
                              : "a [skills] entry of the pack already exists");
            as_err_hint(err, "skill '%s' (%s): remove or rename it first", mb->name, mb->path);
            goto out;
        }
    }
    for (size_t i = 0; o->with_instructions && i < pk.instructions.n; i++) {
        const struct lib_pack_member *mb = &pk.instructions.v[i];
        char *dst = xasprintf("%s/instructions/%s.md", p->manifest_dir, mb->name);
        bool exists = fs_exists(dst);
        int ok = dest_ok(p->manifest_dir, dst, err);
        free(dst);
        if (ok < 0)
            goto out;
        if (manifest_instruction(m, mb->name) || exists) {
            as_err_set(err, "instruction '%s' already exists in the project — nothing installed",
                       mb->name);
            goto out;
        }
    }
    const char *ts = NULL;
    if (pk.has_server && lib_pick_toolset(m, o->toolset, &ts, err) < 0)
        goto out;

    /* The manifest edit, in memory. */
    ed = lib_manifest_edit(p, err);
    if (!ed)
        goto out;
    int joined = 0;
    if (pk.has_server) {
        toml_value *srv = lib_pack_server_table(&pk);
        const char *path[] = {"servers", pk.name};
        int r = toml_edit_set_table(ed, path, 2, srv, err);
        toml_free(srv);
        if (r >= 0 && ts)
            joined = lib_toolset_add(ed, m, ts, "servers", pk.name, err);
        if (r < 0 || joined < 0)
            goto out;
    }
    for (size_t i = 0; i < pk.skills.n; i++) {
        char *rel = xasprintf("./%s", pk.skills.v[i].path);
        int r = set_path_entry(ed, "skills", pk.skills.v[i].name, rel, err);
        free(rel);
        if (r < 0)
            goto out;
    }
    for (size_t i = 0; o->with_instructions && i < pk.instructions.n; i++) {
        char *rel = xasprintf("instructions/%s.md", pk.instructions.v[i].name);
        int r = set_path_entry(ed, "instructions", pk.instructions.v[i].name, rel, err);
        free(rel);
        if (r < 0)
            goto out;
    }
    if (set_ledger(ed, &pk, &ref, o->with_instructions, err) < 0)
        goto out;

    FILE *f = o->out;
    fprintf(f, "pack '%s' %s (%.12s) from %s%s%s\n", pk.name, pk.tag, pk.commit, ref.url,
            ref.subdir ? " #" : "", ref.subdir ? ref.subdir : "");
    if (pk.description)
        lib_say(f, "  ", pk.description, "\n");
    print_server(f, &pk);
    if (joined)
        fprintf(f, "  + toolset '%s' servers += \"%s\"\n", ts, pk.name);
    else if (pk.has_server && ts)
        fprintf(f, "  toolset '%s' already lists \"%s\"\n", ts, pk.name);
    else if (pk.has_server && m->toolsets.n)
        fprintf(o->diag, "⚠ the server joins no toolset (several, none default): pass "
                         "--toolset <name>\n");
    for (size_t i = 0; i < pk.skills.n; i++)
        fprintf(f, "  + [skills.%s]  path = \"./%s\"  (copied into %s)\n", pk.skills.v[i].name,
                pk.skills.v[i].path, p->manifest_dir);
    for (size_t i = 0; i < pk.instructions.n; i++) {
        if (o->with_instructions)
            fprintf(f, "  + [instructions.%s]  instructions/%s.md (vendor house rule)\n",
                    pk.instructions.v[i].name, pk.instructions.v[i].name);
        else
            fprintf(f, "  · house rule '%s' not installed (pass --with-instructions)\n",
                    pk.instructions.v[i].name);
    }
    fprintf(f, "  + [packs.%s]  version = \"%s\", rev = \"%.12s…\"\n", pk.name, pk.tag, pk.commit);
    if (!o->write) {
        fprintf(f, "Dry run. Re-run with --write to install pack '%s'.\n", pk.name);
        rc = 0;
        goto out;
    }

    /* Write: files, manifest, lock — or none of them. */
    if (lib_txn_begin(&t, p, err) < 0)
        goto out;
    for (size_t i = 0; i < pk.skills.n; i++) {
        char *src = xasprintf("%s/%s", pk.root, pk.skills.v[i].path);
        char *dst = anchored(p->manifest_dir, pk.skills.v[i].path);
        int r = copy_skill(&t, p, src, dst, err);
        free(src);
        free(dst);
        if (r < 0)
            goto out;
    }
    for (size_t i = 0; o->with_instructions && i < pk.instructions.n; i++) {
        strbuf body = SB_INIT;
        char *dst = xasprintf("%s/instructions/%s.md", p->manifest_dir, pk.instructions.v[i].name);
        int r = vendor_instruction(&pk, &pk.instructions.v[i], &body, err);
        if (r == 0)
            r = write_instruction(&t, p, dst, body.buf, body.len, err);
        sb_release(&body);
        free(dst);
        if (r < 0)
            goto out;
    }
    if (lib_txn_commit(&t, lib, ed, NULL, NULL, "pinning the pack failed, so nothing was installed",
                       err) < 0)
        goto out;
    lib_txn_done(&t, f, "✓ installed pack '%s' — servers + skills, secrets stay ${REF}s\n",
                 pk.name);
    strvec refs = STRVEC_INIT;
    secret_refs(&pk, &refs);
    for (size_t i = 0; i < refs.n; i++)
        fprintf(f, "next: agentstack secret set %s   (the value stays on this machine)\n",
                refs.v[i]);
    strvec_clear(&refs);
    fprintf(f, "next: agentstack trust .   then   agentstack apply --write\n");
    lib_txn_warn_untrusted(&t, o->diag);
    rc = 0;
out:
    lib_txn_end(&t);
    toml_edit_free(ed);
    free(tag);
    lib_pack_free(&pk);
    manifest_free(m);
    lib_pack_ref_free(&ref);
    return rc;
}

/* ---- upgrade ------------------------------------------------------------------------------ */

enum change { CH_SAME = '=', CH_ADD = '+', CH_DEL = '-', CH_MOD = '~' };

struct member_change {
    char *name;
    enum change ch;
    char *installed; /* absolute path in the project (existing members) */
    char *src;       /* absolute path in the new pack (added/changed members) */
    char *old_pin, *new_pin;
};
typedef VEC(struct member_change) member_changes;

static void changes_free(member_changes *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].name);
        free(c->v[i].installed);
        free(c->v[i].src);
        free(c->v[i].old_pin);
        free(c->v[i].new_pin);
    }
    vec_free(c);
}

static void ledger_list(const toml_value *ledger, const char *key, strvec *out)
{
    const toml_value *a = toml_get(ledger, key);
    for (size_t i = 0; i < toml_len(a); i++)
        if (toml_at(a, i)->type == TOML_STRING)
            strvec_push(out, toml_at(a, i)->u.str.s);
}

static const char *lstr(const toml_value *t, const char *k)
{
    const toml_value *v = toml_get(t, k);
    return v && v->type == TOML_STRING ? v->u.str.s : NULL;
}

/* Pack skills live under <manifest dir>/skills/<…>; nothing else is touched. */
static int managed_skill_dir(const struct bundle_paths *p, const struct manifest *m,
                             const char *name, char **out, struct as_err *err)
{
    const struct mf_skill *s = manifest_skill(m, name);
    const char *rel = s && s->path ? s->path : NULL;
    if (!rel)
        return as_err_set(err, "pack skill '%s' has no [skills.%s] path in %s", name, name,
                          m->path);
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (strncmp(rel, "skills/", 7) != 0 || !rel[7] || strstr(rel, "..")) {
        as_err_set(err,
                   "pack skill '%s' lives at '%s', outside skills/ — upgrade will not "
                   "touch it",
                   name, s->path);
        as_err_hint(err, "move it back under skills/ or remove [skills.%s]", name);
        return -1;
    }
    *out = xasprintf("%s/%s", p->manifest_dir, rel);
    return dest_ok(p->manifest_dir, *out, err);
}

static int tree_pin(const char *dir, char **out)
{
    char hex[SHA256_HEX_LEN + 1];
    struct as_err e = AS_ERR_INIT;
    if (!fs_exists(dir) || digest_skill_tree(dir, hex, &e) < 0) {
        *out = NULL;
        return -1;
    }
    *out = xstrdup(hex);
    return 0;
}

static bool file_equals(const char *path, const strbuf *want)
{
    strbuf cur = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool eq = fs_read_file(path, (size_t)2 << 20, 1, &cur, &e) == 0 && cur.len == want->len &&
              memcmp(cur.buf, want->buf, cur.len) == 0;
    sb_release(&cur);
    return eq;
}

/* Whether the new version of the pack still carries a member of that name. */
static bool has_member(const lib_pack_members *v, const char *name)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->v[i].name, name) == 0)
            return true;
    return false;
}

static bool has_vendor_marker(const char *path)
{
    strbuf cur = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool ok = fs_read_file(path, (size_t)2 << 20, 1, &cur, &e) == 0 &&
              strncmp(cur.buf, "<!-- agentstack:vendor ", 23) == 0;
    sb_release(&cur);
    return ok;
}

/* The skills an upgrade changes: each of the new version's (added, or
 * modified when its tree pin differs), and each the ledger names that the
 * new version drops. Every change is kept in *out, even a refused one, so
 * the caller frees them all. */
static int plan_skills(const struct bundle_paths *p, const struct manifest *m,
                       const struct lib_pack *pk, const strvec *old_skills, member_changes *skills,
                       struct as_err *err)
{
    for (size_t i = 0; i < pk->skills.n; i++) {
        const struct lib_pack_member *mb = &pk->skills.v[i];
        struct member_change c = {.name = xstrdup(mb->name),
                                  .src = xasprintf("%s/%s", pk->root, mb->path)};
        tree_pin(c.src, &c.new_pin);
        if (strvec_find(old_skills, mb->name) >= 0 && manifest_skill(m, mb->name)) {
            if (managed_skill_dir(p, m, mb->name, &c.installed, err) < 0) {
                vec_push(skills, c);
                return -1;
            }
            tree_pin(c.installed, &c.old_pin);
            c.ch = c.old_pin && c.new_pin && strcmp(c.old_pin, c.new_pin) == 0 ? CH_SAME : CH_MOD;
        } else {
            c.installed = anchored(p->manifest_dir, mb->path);
            c.ch = CH_ADD;
            if (dest_ok(p->manifest_dir, c.installed, err) < 0) {
                vec_push(skills, c);
                return -1;
            }
            if (manifest_skill(m, mb->name) || fs_exists(c.installed)) {
                as_err_set(err,
                           "the new version adds skill '%s', which already exists in the "
                           "project — nothing changed",
                           mb->name);
                vec_push(skills, c);
                return -1;
            }
        }
        vec_push(skills, c);
    }
    for (size_t i = 0; i < old_skills->n; i++) {
        if (has_member(&pk->skills, old_skills->v[i]) || !manifest_skill(m, old_skills->v[i]))
            continue;
        struct member_change c = {.name = xstrdup(old_skills->v[i]), .ch = CH_DEL};
        if (managed_skill_dir(p, m, c.name, &c.installed, err) < 0) {
            vec_push(skills, c);
            return -1;
        }
        tree_pin(c.installed, &c.old_pin);
        vec_push(skills, c);
    }
    return 0;
}

/* The house rules an upgrade changes (when it carries them): each of the
 * new version's, refused when an installed one lost its vendor marker, and
 * each the new version drops (its file kept when edited by hand). */
static int plan_instructions(const struct bundle_paths *p, const struct lib_pack *pk,
                             const strvec *old_instr, bool with_instr, member_changes *instr,
                             struct as_err *err)
{
    for (size_t i = 0; with_instr && i < pk->instructions.n; i++) {
        const struct lib_pack_member *mb = &pk->instructions.v[i];
        struct member_change c = {.name = xstrdup(mb->name)};
        c.installed = xasprintf("%s/instructions/%s.md", p->manifest_dir, mb->name);
        if (dest_ok(p->manifest_dir, c.installed, err) < 0) {
            vec_push(instr, c);
            return -1;
        }
        strbuf body = SB_INIT;
        if (vendor_instruction(pk, mb, &body, err) < 0) {
            sb_release(&body);
            vec_push(instr, c);
            return -1;
        }
        c.src = sb_detach(&body, NULL);
        strbuf want = SB_INIT;
        sb_adds(&want, c.src);
        if (!fs_exists(c.installed))
            c.ch = CH_ADD;
        else
            c.ch = file_equals(c.installed, &want) ? CH_SAME : CH_MOD;
        sb_release(&want);
        if (c.ch != CH_SAME && fs_exists(c.installed) && !has_vendor_marker(c.installed)) {
            as_err_set(err,
                       "instructions/%s.md has no vendor marker (edited by hand?) — "
                       "nothing changed",
                       mb->name);
            as_err_hint(err, "move it aside to accept the vendor's version");
            vec_push(instr, c);
            return -1;
        }
        vec_push(instr, c);
    }
    for (size_t i = 0; i < old_instr->n; i++) {
        if (has_member(&pk->instructions, old_instr->v[i]))
            continue;
        struct member_change c = {.name = xstrdup(old_instr->v[i]), .ch = CH_DEL};
        c.installed = xasprintf("%s/instructions/%s.md", p->manifest_dir, c.name);
        if (dest_ok(p->manifest_dir, c.installed, err) < 0) {
            vec_push(instr, c);
            return -1;
        }
        if (!has_vendor_marker(c.installed)) {
            free(c.installed);
            c.installed = NULL; /* keep a hand-edited file; drop only the entry */
        }
        vec_push(instr, c);
    }
    return 0;
}

/* The manifest entries of the changed skills and house rules. */
static int edit_members(toml_edit *ed, const struct bundle_paths *p, const member_changes *skills,
                        const member_changes *instr, struct as_err *err)
{
    for (size_t i = 0; i < skills->n; i++) {
        const struct member_change *c = &skills->v[i];
        const char *path[] = {"skills", c->name};
        if (c->ch == CH_ADD) {
            char *rel = xasprintf("./%s", c->installed + strlen(p->manifest_dir) + 1);
            int r = set_path_entry(ed, "skills", c->name, rel, err);
            free(rel);
            if (r < 0)
                return -1;
        } else if (c->ch == CH_DEL && toml_edit_remove(ed, path, 2, err) < 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < instr->n; i++) {
        const struct member_change *c = &instr->v[i];
        const char *path[] = {"instructions", c->name};
        if (c->ch == CH_ADD) {
            char *rel = xasprintf("instructions/%s.md", c->name);
            int r = set_path_entry(ed, "instructions", c->name, rel, err);
            free(rel);
            if (r < 0)
                return -1;
        } else if (c->ch == CH_DEL && toml_edit_remove(ed, path, 2, err) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The files of the changed skills and house rules, in the transaction:
 * the old ones set aside, the new ones copied or written. */
static int write_members(struct lib_txn *t, const struct bundle_paths *p,
                         const member_changes *skills, const member_changes *instr,
                         struct as_err *err)
{
    for (size_t i = 0; i < skills->n; i++) {
        const struct member_change *c = &skills->v[i];
        if ((c->ch == CH_MOD || c->ch == CH_DEL) && fs_exists(c->installed) &&
            lib_txn_aside(t, c->installed, err) < 0)
            return -1;
        if ((c->ch == CH_MOD || c->ch == CH_ADD) && copy_skill(t, p, c->src, c->installed, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < instr->n; i++) {
        const struct member_change *c = &instr->v[i];
        if ((c->ch == CH_MOD || c->ch == CH_DEL) && c->installed && fs_exists(c->installed) &&
            lib_txn_aside(t, c->installed, err) < 0)
            return -1;
        if ((c->ch == CH_MOD || c->ch == CH_ADD) &&
            write_instruction(t, p, c->installed, c->src, strlen(c->src), err) < 0)
            return -1;
    }
    return 0;
}

int lib_pack_upgrade(struct library *lib, const struct bundle_paths *p, const char *name,
                     const struct lib_pack_opts *o, struct as_err *err)
{
    struct manifest *m = manifest_load(p, err);
    if (!m)
        return -1;
    struct lib_pack_ref ref = {0};
    struct lib_pack pk;
    memset(&pk, 0, sizeof pk);
    char *newest = NULL, *target = NULL;
    strvec old_skills = STRVEC_INIT, old_instr = STRVEC_INIT;
    member_changes skills = VEC_INIT, instr = VEC_INIT;
    toml_value *new_srv = NULL;
    toml_edit *ed = NULL;
    struct lib_txn t = LIB_TXN_INIT;
    int rc = -1;
    FILE *f = o->out;

    const toml_value *ledger = toml_get_path(m->root, "packs", name, NULL);
    if (!ledger || ledger->type != TOML_TABLE) {
        as_err_set(err, "no pack '%s' is installed: [packs.%s] is not in %s", name, name, m->path);
        as_err_hint(err, "install it first: agentstack add from git:<url> --write");
        goto out;
    }
    const char *source = lstr(ledger, "source"), *installed = lstr(ledger, "version");
    const char *old_rev = lstr(ledger, "rev");
    if (!source || strncmp(source, "git:", 4) != 0 || !installed) {
        as_err_set(err, "[packs.%s] in %s has no git `source` and `version` to upgrade from", name,
                   m->path);
        goto out;
    }
    if (lib_pack_ref_parse(source, &ref, err) < 0)
        goto out;
    if (lib_pack_policy_check(m, ref.url, err) < 0)
        goto out;
    {
        struct as_err e2 = AS_ERR_INIT;
        if (lib_pack_newest_tag(ref.url, &newest, &e2) < 0 &&
            !strstr(e2.msg, "has no version tags")) {
            *err = e2;
            goto out;
        }
    }
    /* Never downgrade: if the newest tag is not newer, re-resolve the
     * installed one so a moved tag still shows as a diff. */
    target = xstrdup(newest && lib_version_tag(installed) && lib_version_cmp(newest, installed) > 0
                         ? newest
                         : installed);
    if (lib_pack_fetch(lib->home, &ref, target, &pk, err) < 0)
        goto out;
    if (strcmp(pk.name, name) != 0) {
        as_err_set(err, "the pack at %s@%s is now named '%s', not '%s' — nothing changed", ref.url,
                   target, pk.name, name);
        goto out;
    }
    if (forbid_check(m, &pk, err) < 0)
        goto out;

    /* What changes. */
    ledger_list(ledger, "skills", &old_skills);
    ledger_list(ledger, "instructions", &old_instr);
    bool with_instr = o->with_instructions || old_instr.n > 0;
    const toml_value *old_srv = toml_get_path(m->root, "servers", name, NULL);
    bool ledger_server = false;
    {
        strvec s = STRVEC_INIT;
        ledger_list(ledger, "servers", &s);
        ledger_server = strvec_find(&s, name) >= 0;
        strvec_clear(&s);
    }
    new_srv = pk.has_server ? lib_pack_server_table(&pk) : NULL;
    int srv_change = CH_SAME;
    if (new_srv && !old_srv)
        srv_change = CH_ADD;
    else if (!new_srv && old_srv && ledger_server)
        srv_change = CH_DEL;
    else if (new_srv && old_srv && !toml_equal(new_srv, old_srv))
        srv_change = CH_MOD;
    if (srv_change == CH_ADD && manifest_server(m, name) && !ledger_server) {
        as_err_set(err, "[servers.%s] exists but is not the pack's — nothing changed", name);
        goto out;
    }
    if (plan_skills(p, m, &pk, &old_skills, &skills, err) < 0)
        goto out;
    if (plan_instructions(p, &pk, &old_instr, with_instr, &instr, err) < 0)
        goto out;

    size_t changes = srv_change != CH_SAME;
    bool instr_changed = false;
    for (size_t i = 0; i < skills.n; i++)
        changes += skills.v[i].ch != CH_SAME;
    for (size_t i = 0; i < instr.n; i++) {
        changes += instr.v[i].ch != CH_SAME;
        instr_changed = instr_changed || instr.v[i].ch != CH_SAME;
    }
    bool moved_rev = old_rev && strcmp(old_rev, pk.commit) != 0;
    bool new_tag = strcmp(target, installed) != 0;
    if (!new_tag && !moved_rev && !changes) {
        fprintf(f, "✓ pack '%s' already current.\n", name);
        rc = 0;
        goto out;
    }
    if (new_tag)
        fprintf(f, "newer tag '%s': %s -> %s (%.12s)\n", name, installed, target, pk.commit);
    else if (moved_rev)
        fprintf(f, "tag '%s' %s moved: %.12s -> %.12s\n", name, installed, old_rev, pk.commit);
    else
        fprintf(f, "pack '%s' %s: the installed files differ from the tag\n", name, installed);
    if (srv_change != CH_SAME)
        fprintf(f, "  %c [servers.%s]\n", srv_change, name);
    for (size_t i = 0; i < skills.n; i++) {
        const struct member_change *c = &skills.v[i];
        if (c->ch == CH_MOD)
            fprintf(f, "  ~ skill '%s'  %.12s → %.12s\n", c->name, c->old_pin ? c->old_pin : "?",
                    c->new_pin ? c->new_pin : "?");
        else if (c->ch != CH_SAME)
            fprintf(f, "  %c skill '%s'\n", c->ch, c->name);
    }
    for (size_t i = 0; i < instr.n; i++)
        if (instr.v[i].ch != CH_SAME)
            fprintf(f, "  %c house rule '%s' (instructions/%s.md)\n", instr.v[i].ch,
                    instr.v[i].name, instr.v[i].name);
    fprintf(f, "  %zu change%s; [packs.%s] version = \"%s\", rev = \"%.12s…\"\n", changes,
            changes == 1 ? "" : "s", name, target, pk.commit);
    if (instr_changed && !o->with_instructions && !o->yes) {
        fprintf(f, "house rules are new or rewritten: re-run with --with-instructions or --yes "
                   "to accept them. Nothing written.\n");
        rc = 0;
        goto out;
    }
    if (!o->write) {
        fprintf(f, "Dry run. Re-run with --write to upgrade pack '%s'.\n", name);
        rc = 0;
        goto out;
    }

    /* One transaction: files, manifest, lock. */
    ed = lib_manifest_edit(p, err);
    if (!ed)
        goto out;
    if (srv_change == CH_ADD || srv_change == CH_MOD) {
        const char *path[] = {"servers", name};
        if (toml_edit_set_table(ed, path, 2, new_srv, err) < 0)
            goto out;
    } else if (srv_change == CH_DEL) {
        const char *path[] = {"servers", name};
        if (toml_edit_remove(ed, path, 2, err) < 0)
            goto out;
    }
    if (edit_members(ed, p, &skills, &instr, err) < 0)
        goto out;
    if (set_ledger(ed, &pk, &ref, with_instr, err) < 0)
        goto out;
    if (lib_txn_begin(&t, p, err) < 0)
        goto out;
    if (write_members(&t, p, &skills, &instr, err) < 0)
        goto out;
    if (lib_txn_commit(&t, lib, ed, NULL, NULL, "re-pinning failed, so the upgrade was rolled back",
                       err) < 0)
        goto out;
    lib_txn_done(&t, f, "✓ upgraded pack '%s' — previewed, re-pinned @%s\n", name, target);
    fprintf(f, "next: agentstack trust .   then   agentstack apply --write\n");
    lib_txn_warn_untrusted(&t, o->diag);
    rc = 0;
out:
    lib_txn_end(&t);
    toml_edit_free(ed);
    toml_free(new_srv);
    changes_free(&skills);
    changes_free(&instr);
    strvec_clear(&old_skills);
    strvec_clear(&old_instr);
    free(newest);
    free(target);
    lib_pack_free(&pk);
    lib_pack_ref_free(&ref);
    manifest_free(m);
    return rc;
}

/* ---- remove ------------------------------------------------------------------------------- */

/* A member's entry and, when we may delete it, the file or directory. */
struct removal {
    const char *table; /* "servers" | "skills" | "instructions" */
    char *name;
    char *file; /* absolute, deleted on write; NULL = entry only */
    char *kept; /* why a file stays, or NULL */
};
typedef VEC(struct removal) removals;

static void removals_free(removals *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].name);
        free(r->v[i].file);
        free(r->v[i].kept);
    }
    vec_free(r);
}

/* Skill directories are deleted only under skills/ (depth >= 1),
 * never a path the user pointed elsewhere. */
static void plan_skill(const struct bundle_paths *p, const struct manifest *m, const char *name,
                       struct removal *r)
{
    const struct mf_skill *s = manifest_skill(m, name);
    const char *rel = s && s->path ? s->path : NULL;
    if (!rel)
        return;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (rel[0] == '/' || strncmp(rel, "skills/", 7) != 0 || !rel[7] || strstr(rel, "..")) {
        r->kept = xasprintf("kept %s (outside skills/)", s->path);
        return;
    }
    char *dir = xasprintf("%s/%s", p->manifest_dir, rel);
    if (!fs_exists(dir)) {
        free(dir);
        return;
    }
    struct as_err e = AS_ERR_INIT;
    if (dest_ok(p->manifest_dir, dir, &e) < 0) {
        /* A symlinked skills/ is not ours to delete through. */
        r->kept = xasprintf("kept %s (%s)", s->path, e.msg);
        free(dir);
        return;
    }
    r->file = dir;
}

/* Instruction files only with the vendor marker (a hand-written house rule stays). */
static void plan_instruction(const struct bundle_paths *p, const struct manifest *m,
                             const char *name, struct removal *r)
{
    const struct mf_instruction *in = manifest_instruction(m, name);
    if (!in || !in->path)
        return;
    char *file = in->path[0] == '/' ? xstrdup(in->path) : anchored(p->manifest_dir, in->path);
    struct as_err e = AS_ERR_INIT;
    if (!fs_exists(file)) {
        free(file);
    } else if (!has_vendor_marker(file)) {
        r->kept = xasprintf("kept %s (no vendor marker)", in->path);
        free(file);
    } else if (dest_ok(p->manifest_dir, file, &e) < 0) {
        r->kept = xasprintf("kept %s (%s)", in->path, e.msg);
        free(file);
    } else {
        r->file = file;
    }
}

/* Drops name from every toolset's list (memberships go with the member). */
static int drop_memberships(toml_edit *ed, const struct manifest *m, const char *list,
                            const char *name, FILE *f, struct as_err *err)
{
    const char *table = m->toolsets_legacy ? "profiles" : "toolsets";
    for (size_t t = 0; t < m->toolsets.n; t++) {
        const char *ts = m->toolsets.v[t].name;
        const toml_value *cur = toml_get_path(toml_edit_root(ed), table, ts, list, NULL);
        if (!cur || cur->type != TOML_ARRAY)
            continue;
        toml_value *arr = toml_new(TOML_ARRAY);
        bool hit = false;
        for (size_t i = 0; i < toml_len(cur); i++) {
            const toml_value *v = toml_at(cur, i);
            if (v->type == TOML_STRING && strcmp(v->u.str.s, name) == 0)
                hit = true;
            else
                toml_array_push(arr, toml_clone(v));
        }
        int rc = 0;
        if (hit) {
            const char *path[] = {table, ts, list};
            rc = toml_edit_set(ed, path, 3, arr, err);
            if (rc == 0 && f)
                fprintf(f, "  - toolset '%s' %s -= \"%s\"\n", ts, list, name);
        }
        toml_free(arr);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int lib_pack_remove(struct library *lib, const struct bundle_paths *p, const char *name,
                    const struct lib_pack_opts *o, struct as_err *err)
{
    struct manifest *m = manifest_load(p, err);
    if (!m)
        return -1;
    removals rm = VEC_INIT;
    strvec servers = STRVEC_INIT, skills = STRVEC_INIT, instr = STRVEC_INIT;
    toml_edit *ed = NULL;
    struct lib_txn t = LIB_TXN_INIT;
    int rc = -1;
    FILE *f = o->out;

    /* A ledger wins: `remove acme` means the pack, not a server named acme. */
    const toml_value *ledger = toml_get_path(m->root, "packs", name, NULL);
    bool pack = ledger && ledger->type == TOML_TABLE;
    if (pack) {
        ledger_list(ledger, "servers", &servers);
        ledger_list(ledger, "skills", &skills);
        ledger_list(ledger, "instructions", &instr);
    } else if (manifest_server(m, name)) {
        strvec_push(&servers, name);
    } else if (manifest_skill(m, name)) {
        strvec_push(&skills, name);
    } else {
        as_err_set(err, "nothing named '%s' in %s: no [packs.%s], [servers.%s] or [skills.%s]",
                   name, m->path, name, name, name);
        as_err_hint(err, "library items are removed with: agentstack lib remove %s --write", name);
        goto out;
    }
    for (size_t i = 0; i < servers.n; i++) {
        if (!manifest_server(m, servers.v[i]))
            continue;
        struct removal r = {.table = "servers", .name = xstrdup(servers.v[i])};
        vec_push(&rm, r);
    }
    for (size_t i = 0; i < skills.n; i++) {
        if (!manifest_skill(m, skills.v[i]))
            continue;
        struct removal r = {.table = "skills", .name = xstrdup(skills.v[i])};
        plan_skill(p, m, skills.v[i], &r);
        vec_push(&rm, r);
    }
    for (size_t i = 0; i < instr.n; i++) {
        if (!manifest_instruction(m, instr.v[i]))
            continue;
        struct removal r = {.table = "instructions", .name = xstrdup(instr.v[i])};
        plan_instruction(p, m, instr.v[i], &r);
        vec_push(&rm, r);
    }

    ed = lib_manifest_edit(p, err);
    if (!ed)
        goto out;
    if (pack) {
        const char *ver = lstr(ledger, "version"), *src = lstr(ledger, "source");
        fprintf(f, "remove pack '%s'%s%s", name, ver ? " " : "", ver ? ver : "");
        if (src)
            lib_say(f, " (", src, ")");
        fputc('\n', f);
    } else {
        fprintf(f, "remove %s '%s'\n", servers.n ? "server" : "skill", name);
    }
    for (size_t i = 0; i < rm.n; i++) {
        const struct removal *r = &rm.v[i];
        const char *path[] = {r->table, r->name};
        if (toml_edit_remove(ed, path, 2, err) < 0)
            goto out;
        fprintf(f, "  - [%s.%s]", r->table, r->name);
        if (r->file)
            fprintf(f, "  (deletes %s)", r->file + strlen(p->manifest_dir) + 1);
        else if (r->kept)
            lib_say(f, "  (", r->kept, ")");
        fputc('\n', f);
        const char *list = strcmp(r->table, "servers") == 0  ? "servers"
                           : strcmp(r->table, "skills") == 0 ? "skills"
                                                             : NULL;
        if (list && drop_memberships(ed, m, list, r->name, f, err) < 0)
            goto out;
    }
    if (pack) {
        const char *path[] = {"packs", name};
        if (toml_edit_remove(ed, path, 2, err) < 0)
            goto out;
        fprintf(f, "  - [packs.%s]\n", name);
    }
    if (!o->write) {
        fprintf(f, "Dry run. Re-run with --write to remove %s '%s'.\n", pack ? "pack" : "it", name);
        rc = 0;
        goto out;
    }

    /* One transaction: files aside, manifest, lock; a failure puts all back. */
    if (lib_txn_begin(&t, p, err) < 0)
        goto out;
    size_t files = 0;
    for (size_t i = 0; i < rm.n; i++) {
        if (!rm.v[i].file)
            continue;
        if (lib_txn_aside(&t, rm.v[i].file, err) < 0)
            goto out;
        files++;
    }
    strvec gone_skills = STRVEC_INIT, gone_servers = STRVEC_INIT;
    for (size_t i = 0; i < rm.n; i++) {
        if (strcmp(rm.v[i].table, "skills") == 0)
            strvec_push(&gone_skills, rm.v[i].name);
        else if (strcmp(rm.v[i].table, "servers") == 0)
            strvec_push(&gone_servers, rm.v[i].name);
    }
    int pr = lib_txn_commit(&t, lib, ed, &gone_skills, &gone_servers,
                            "re-pinning failed, so nothing was removed", err);
    strvec_clear(&gone_skills);
    strvec_clear(&gone_servers);
    if (pr < 0)
        goto out;
    lib_txn_done(&t, f, "✓ removed %s '%s' — %zu entr%s, %zu file%s deleted\n",
                 pack ? "pack" : "entry", name, rm.n + (pack ? 1 : 0),
                 rm.n + (pack ? 1 : 0) == 1 ? "y" : "ies", files, files == 1 ? "" : "s");
    fprintf(f, "next: agentstack apply --write   (withdraws what the CLIs still hold)\n");
    lib_txn_warn_untrusted(&t, o->diag);
    rc = 0;
out:
    lib_txn_end(&t);
    toml_edit_free(ed);
    removals_free(&rm);
    strvec_clear(&servers);
    strvec_clear(&skills);
    strvec_clear(&instr);
    manifest_free(m);
    return rc;
}
