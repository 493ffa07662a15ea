/* drift — which files agentstack wrote no longer hold the bytes it wrote
 * (docs/adapters.md). Drift = the file's FNV-1a 64 ≠ the ledger's last_hash. The
 * reference never refuses on drift; doctor warns and names the fix, and
 * `diff` labels the file hand-edited. */
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "adapters/merge.h"
#include "base/fs.h"
#include "base/xalloc.h"

void adp_drift_list_free(adp_drift_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].adapter);
        free(l->v[i].display);
        free(l->v[i].path);
        free(l->v[i].key);
        free(l->v[i].line);
    }
    vec_free(l);
}

int adp_drift_report(const struct adp_registry *r, const char *manifest_path,
                     const char *project_root, adp_drift_list *out, size_t *checked,
                     struct as_err *err)
{
    json_t *ledger = NULL;
    if (adp_ledger_load(&ledger, err) != 0)
        return -1;
    size_t n_checked = 0;
    const char *key;
    json_t *e;
    json_object_foreach(json_object_get(ledger, "targets"), key, e)
    {
        const char *hash = json_string_value(json_object_get(e, "last_hash"));
        if (!hash)
            continue;
        const char *at = strstr(key, "@project:");
        char *id = at ? xstrndup(key, (size_t)(at - key)) : xstrdup(key);
        const char *root = at ? at + strlen("@project:") : NULL;
        const char *src = json_string_value(json_object_get(e, "source_manifest"));
        bool mine = true;
        if (root && project_root)
            mine = strcmp(root, project_root) == 0;
        else if (root && manifest_path)
            mine = false;
        else if (!root && manifest_path)
            /* global files: what this manifest wrote, and the gateway entry */
            mine = (src && strcmp(src, manifest_path) == 0) || json_object_get(e, "gateway");
        const struct adp_desc *d = mine ? adp_registry_find(r, id) : NULL;
        const char *rel = d ? (root ? d->project_config : d->config_path) : NULL;
        strbuf path = SB_INIT, bytes = SB_INIT;
        struct as_err pe = AS_ERR_INIT;
        if (rel && adp_expand_path(rel, root, &path, &pe) == 0) {
            n_checked++;
            char cur[17] = "";
            bool present = fs_exists(path.buf);
            if (present && fs_read_file(path.buf, ADP_INPUT_MAX, 0, &bytes, &pe) == 0)
                adp_fnv1a64_hex(bytes.buf, bytes.len, cur);
            if (strcmp(cur, hash) != 0) {
                struct adp_drift x = {0};
                x.adapter = xstrdup(d->id);
                x.display = xstrdup(d->display);
                x.path = xstrdup(path.buf);
                x.key = xstrdup(key);
                x.missing = !present;
                x.line = xasprintf("%s no longer matches what agentstack last wrote (%s%s) ↳ "
                                   "review: agentstack diff · adopt the on-disk version: "
                                   "agentstack adopt · or re-render: agentstack apply --write",
                                   d->display, path.buf, present ? "" : ", now missing");
                vec_push(out, x);
            }
        }
        sb_release(&path);
        sb_release_secure(&bytes);
        free(id);
    }
    json_decref(ledger);
    if (checked)
        *checked = n_checked;
    return 0;
}
