/* gate — the trust check apply, use and sessions share (docs/trust.md, docs/adapters.md).
 *
 * Kept in one function so every delivery path refuses the same way: an
 * untrusted project, a project whose manifest/overlay/lock bytes changed
 * since consent, and a trusted project whose pinned content drifted —
 * library items verified where the caller's library hooks resolve them. */
#include <stdlib.h>

#include "adapters/engine.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "trust/trust.h"

int adp_trust_gate_lib(const struct bundle_paths *p, const struct manifest_snapshot *snap,
                       const struct manifest *m, const struct trust_library *lib, char **refusal,
                       struct as_err *err)
{
    *refusal = NULL;
    struct trust_status st;
    if (trust_check_snapshot(p, snap, &st, err) != 0)
        return -1;
    const char *root = p->project_root;
    if (st.state == TRUST_UNTRUSTED) {
        *refusal = xasprintf("project at %s is not trusted — review it, then: agentstack "
                             "trust .",
                             root);
    } else if (st.state == TRUST_CHANGED) {
        *refusal = xasprintf("project at %s changed since it was trusted — review the "
                             "changes, then: agentstack trust .",
                             root);
    } else {
        strbuf home = SB_INIT;
        struct as_err herr = AS_ERR_INIT;
        int hrc = home_dir(&home, &herr);
        struct trust_pins pins;
        int rc = trust_verify_pins_lib(m, p->lock, snap->lock.buf, snap->lock.len, snap->has_lock,
                                       hrc == 0 ? home.buf : NULL, lib, &pins, err);
        sb_release(&home);
        if (rc != 0) {
            trust_status_release(&st);
            return -1;
        }
        if (pins.blocking) {
            const char *what = "";
            for (size_t i = 0; i < pins.results.n; i++)
                if (pins.results.v[i].blocks && pins.results.v[i].message) {
                    what = pins.results.v[i].message;
                    break;
                }
            *refusal = xasprintf("project at %s: pinned content drifted from agentstack.lock "
                                 "(%s) — re-pin with agentstack lock --write, then: agentstack "
                                 "trust .",
                                 root, what);
        }
        trust_pins_free(&pins);
    }
    trust_status_release(&st);
    return 0;
}

int adp_trust_gate(const struct bundle_paths *p, const struct manifest_snapshot *snap,
                   const struct manifest *m, char **refusal, struct as_err *err)
{
    return adp_trust_gate_lib(p, snap, m, NULL, refusal, err);
}
