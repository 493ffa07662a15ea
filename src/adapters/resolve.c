/* resolve — the secrets a render needs, from the full chain, behind
 * [policy.secrets] (docs/adapters.md, docs/secrets.md). A reference the machine or project
 * policy forbids for that server blocks the write and is never overridable;
 * the chain is env → keychain → file store → project .env (varlock stays out
 * until the lock pins .env.schema — as in the gateway; the
 * keychain stays out when no Secret Service answers at all). */
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/xalloc.h"
#include "policy/policy.h"
#include "secrets/backends.h"

struct adp_resolver {
    struct sec_chain *chain; /* NULL for an untrusted project: nothing is looked up */
    struct pol_ruleset *rs;
};

/* What an untrusted project's references render as: never looked up, and
 * never written (every target of such a project is trust-blocked to a
 * prune before anything rendered reaches a file). A plain token, so that
 * URL, header and argument checks treat it like any value. */
#define UNTRUSTED_VALUE "agentstack-untrusted-not-resolved"

struct adp_resolver *adp_resolver_new(const struct manifest *m, const char *project_dotenv,
                                      bool untrusted, struct as_err *err)
{
    if (untrusted) {
        /* Refused before any secret is looked up: no keychain probe, no
         * store, no .env, no environment read for the bundle's refs. */
        struct adp_resolver *r = xcalloc(1, sizeof *r);
        r->rs = pol_ruleset_deny_all("the project is not trusted");
        return r;
    }
    strbuf mpath = SB_INIT;
    struct pol_layer *machine = NULL, *project = NULL;
    struct pol_ruleset *rs = NULL;
    enum pol_machine_state st = POL_UNCONFIGURED;
    if (pol_machine_path(&mpath, err) != 0)
        goto fail;
    /* A broken machine file fails closed here too. */
    machine = pol_machine_load(mpath.buf, &st, err);
    if (!machine)
        goto fail;
    if (m && m->kind == MANIFEST_PROJECT) {
        project = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, err);
        if (!project)
            goto fail;
    }
    const char *home = getenv("HOME");
    rs = pol_compile(machine, project, home ? home : "/", err);
    if (!rs)
        goto fail;
    struct adp_resolver *r = xcalloc(1, sizeof *r);
    struct sec_chain_opts so = {.project_dotenv = project_dotenv};
    /* No Secret Service at all (headless, CI): the keychain holds nothing
     * we could read, so a value found nowhere else is unresolved — the
     * unresolved-secret block with its fix — not a store failure. A keychain that answers
     * but fails a read still blocks as a failure. */
    struct as_err ke = AS_ERR_INIT;
    if (sec_keychain_probe(&ke) != 0)
        so.no_keychain = true;
    r->chain = sec_chain_full(&so);
    r->rs = rs;
    pol_layer_free(machine);
    pol_layer_free(project);
    sb_release(&mpath);
    return r;
fail:
    pol_layer_free(machine);
    pol_layer_free(project);
    sb_release(&mpath);
    return NULL;
}

void adp_resolver_free(struct adp_resolver *r)
{
    if (!r)
        return;
    sec_chain_free(r->chain);
    pol_ruleset_free(r->rs);
    free(r);
}

int adp_resolver_fn(void *ctx, const char *name, const char *server, strbuf *out,
                    struct as_err *err)
{
    struct adp_resolver *r = ctx;
    if (!r->chain) {
        sb_adds(out, UNTRUSTED_VALUE);
        return 1;
    }
    struct pol_decision d;
    if (!pol_secret(r->rs, server ? server : "*", name, &d)) {
        strbuf why = SB_INIT;
        pol_decision_text(&d, &why);
        as_err_set(err, "blocked: server '%s' may not read ${%s} — %s", server ? server : "*", name,
                   why.buf);
        as_err_hint(err, "remove ${%s} from it in the manifest (policy is never overridden)", name);
        sb_release(&why);
        return -1;
    }
    return sec_resolve_for_render(r->chain, name, server, out, err);
}
