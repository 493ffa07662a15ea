/* oneway — a server reaches a CLI one way: live through the gateway or as a
 * rendered entry, never both (docs/adapters.md, "Where servers go").
 *
 * Why: a CLI holding the gateway and, beside it, a direct entry for a server
 * the gateway serves runs that server twice, the direct copy outside policy
 * and audit. connect removes the direct entries we rendered, apply prunes
 * them instead of leaving them, and doctor reports any left (hand-added
 * ones too) as an error.
 *
 * Guarantees:
 *  - Only entries in the CLI's MCP section are read; the bridge itself is
 *    never a duplicate.
 *  - apply's live plan removes only names the ledger says we rendered there
 *    from a project's manifest, and in project files also names the selected
 *    manifest servers carry (the gateway serves those); what the machine
 *    manifest rendered stays, and so does a hand-added entry in a user file;
 *    an entry it cannot parse stays and the target keeps its plain note.
 *  - Read-only here: every removal goes through apply's or connect's writer,
 *    backup, history and ledger. */
#include <stdlib.h>
#include <string.h>

#include "adapters/apply_int.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/home.h"

bool adp_i_from_machine_manifest(const json_t *entry)
{
    const char *src = json_string_value(json_object_get(entry, "source_manifest"));
    strbuf mm = SB_INIT, a = SB_INIT, b = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool same = false;
    if (src && home_path(HOME_MACHINE_MANIFEST, &mm, &e) == 0)
        same = !strcmp(src, mm.buf) || (fs_realpath(src, &a, &e) == 0 &&
                                        fs_realpath(mm.buf, &b, &e) == 0 && !strcmp(a.buf, b.buf));
    sb_release(&mm);
    sb_release(&a);
    sb_release(&b);
    return same;
}

int adp_i_section_names(const struct adp_desc *d, enum adp_format fmt, const char *path,
                        const char *text, size_t len, strvec *out, struct as_err *err)
{
    if (fmt == ADP_FMT_TOML) {
        toml_value *root = toml_parse(path, text, len, err);
        if (!root && len)
            return -1;
        const toml_value *sec = toml_get(root, d->mcp.location);
        for (size_t i = 0; sec && sec->type == TOML_TABLE && i < sec->u.tab.n; i++)
            if (!adp_i_toml_is_bridge(sec->u.tab.kv[i].key, sec->u.tab.kv[i].val, d))
                strvec_push(out, sec->u.tab.kv[i].key);
        toml_free(root);
        return 0;
    }
    json_t *sec = NULL;
    if (adp_json_read(path, text, len, fmt == ADP_FMT_JSONC, d->mcp.location, &sec, err) != 0)
        return -1;
    const char *k;
    json_t *v;
    if (json_is_object(sec))
        json_object_foreach(sec, k, v) if (!adp_i_json_is_bridge(k, v, d)) strvec_push(out, k);
    json_decref(sec);
    return 0;
}

bool adp_i_only_empty_section(const struct adp_desc *d, enum adp_format fmt, const char *path,
                              const strbuf *text)
{
    struct as_err e = AS_ERR_INIT;
    if (fmt == ADP_FMT_TOML) {
        toml_value *root = toml_parse(path, text->buf, text->len, &e);
        bool empty = root && (toml_len(root) == 0 ||
                              (toml_len(root) == 1 && toml_get(root, d->mcp.location) &&
                               toml_len(toml_get(root, d->mcp.location)) == 0));
        toml_free(root);
        if (!empty)
            return false;
        /* Comments are someone's words: keep such a file. */
        for (size_t i = 0; i < text->len; i++)
            if (text->buf[i] == '#')
                return false;
        return true;
    }
    json_t *root = NULL;
    bool empty = false;
    if (adp_json_read(path, text->buf, text->len, false, NULL, &root, &e) == 0 && root) {
        json_t *sec = json_object_get(root, d->mcp.location);
        empty = json_object_size(root) == 0 ||
                (json_object_size(root) == 1 && json_is_object(sec) && json_object_size(sec) == 0);
    }
    json_decref(root);
    return empty;
}

void adp_ap_plan_live(struct run *R, struct tplan *t, const json_t *entry, bool other_manifest)
{
    t->live = true;
    /* The gateway serves a project's servers, not the machine manifest's:
     * what apply renders from the machine manifest stays the only way there. */
    if (R->o->m->kind == MANIFEST_MACHINE)
        return;
    strvec managed = STRVEC_INIT;
    adp_ledger_names(entry, "managed_servers", &managed);
    /* What another manifest rendered into a shared global file is its own
     * to take back, unless --prune-foreign. */
    for (size_t i = 0; (!other_manifest || R->o->prune_foreign) && i < managed.n; i++)
        if (strvec_find(&t->removed, managed.v[i]) < 0)
            strvec_push(&t->removed, managed.v[i]);
    /* A project file's entries for the manifest's servers are the
     * gateway's to serve; in a CLI's user file, only what we rendered goes —
     * a hand-added entry there is the user's, and doctor reports it. */
    for (size_t i = 0; R->o->project_scope && i < R->servers.n; i++) {
        const struct mf_server *s = R->servers.v[i];
        if (manifest_targets_include(&s->targets, t->d->id) &&
            strvec_find(&t->removed, s->name) < 0)
            strvec_push(&t->removed, s->name);
    }
    strvec_clear(&managed);
}

bool adp_ap_live_present(struct tplan *t)
{
    strvec have = STRVEC_INIT;
    struct as_err e = AS_ERR_INIT;
    bool ok =
        adp_i_section_names(t->d, t->fmt, t->path, t->before.buf, t->before.len, &have, &e) == 0;
    strvec keep = STRVEC_INIT;
    for (size_t i = 0; ok && i < t->removed.n; i++)
        if (strvec_find(&have, t->removed.v[i]) >= 0)
            strvec_push(&keep, t->removed.v[i]);
    strvec_clear(&have);
    strvec_clear(&t->removed);
    t->removed = keep;
    return t->removed.n > 0;
}

void adp_live_dups_free(adp_live_dups *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].display);
        free(l->v[i].path);
        free(l->v[i].name);
    }
    vec_free(l);
}

/* The duplicates in one file: names the manifest declares for d, or that
 * the ledger says we rendered there. */
static void file_dups(const struct adp_desc *d, const struct manifest *m, const json_t *ledger,
                      const char *root, adp_live_dups *out)
{
    const char *rel = root ? d->project_config : d->config_path;
    enum adp_format fmt = root ? d->project_format : d->config_format;
    strbuf path = SB_INIT, text = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    strvec have = STRVEC_INIT, managed = STRVEC_INIT;
    if (!rel || adp_expand_path(rel, root, &path, &e) != 0 || !fs_exists(path.buf) ||
        fs_read_file(path.buf, ADP_INPUT_MAX, 0, &text, &e) != 0 ||
        adp_i_section_names(d, fmt, path.buf, text.buf, text.len, &have, &e) != 0)
        goto out;
    char *key = adp_ledger_key(d->id, root);
    const json_t *entry = json_object_get(json_object_get(ledger, "targets"), key);
    adp_ledger_names(entry, "managed_servers", &managed);
    bool machine = adp_i_from_machine_manifest(entry);
    free(key);
    for (size_t i = 0; i < have.n; i++) {
        /* What the ledger lists as rendered from the machine manifest is
         * not the gateway's to serve: not a duplicate. */
        bool ours = !machine && strvec_find(&managed, have.v[i]) >= 0;
        bool dup = ours;
        for (size_t k = 0; !dup && m && k < m->servers.n; k++)
            dup = strcmp(m->servers.v[k].name, have.v[i]) == 0 &&
                  manifest_targets_include(&m->servers.v[k].targets, d->id);
        if (!dup)
            continue;
        struct adp_live_dup x = {xstrdup(d->display), xstrdup(path.buf), xstrdup(have.v[i]),
                                 root == NULL, ours};
        vec_push(out, x);
    }
out:
    strvec_clear(&have);
    strvec_clear(&managed);
    sb_release(&path);
    sb_release_secure(&text);
}

int adp_live_duplicates(const struct adp_registry *r, const struct manifest *m,
                        const char *project_root, adp_live_dups *out, struct as_err *err)
{
    json_t *ledger = NULL;
    if (adp_ledger_load(&ledger, err) != 0)
        return -1;
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        if (!d->has_mcp || (m && manifest_render_locally(m, d->id)) || !adp_i_bridge_registered(d))
            continue;
        file_dups(d, m, ledger, NULL, out);
        if (project_root)
            file_dups(d, m, ledger, project_root, out);
    }
    json_decref(ledger);
    return 0;
}
