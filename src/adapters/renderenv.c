/* renderenv — what every rendering command (apply, use, session, run's
 * inject) loads before planning: the secrets resolver behind policy, the
 * project's lock (instruction pins), $AGENTSTACK_HOME (library bodies) and,
 * when a project renders into the user's global files, the machine layer's
 * [instructions] (inherited at global scope only; docs/manifest.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"

int adp_render_env_init(struct adp_render_env *e, struct manifest *m, const struct bundle_paths *p,
                        const struct manifest_snapshot *snap, bool global_scope, bool untrusted,
                        struct as_err *err)
{
    memset(e, 0, sizeof *e);
    sb_init(&e->home, 0);
    struct as_err he = AS_ERR_INIT;
    if (home_dir(&e->home, &he) != 0)
        sb_setlen(&e->home, 0);
    e->resolver = adp_resolver_new(m, p && p->found ? p->env_file : NULL, untrusted, err);
    if (!e->resolver)
        goto fail;
    if (p && p->found && snap && snap->has_lock) {
        struct as_err le = AS_ERR_INIT;
        e->lock = lockfile_parse(p->lock, snap->lock.buf, snap->lock.len, &le);
        if (!e->lock) {
            char buf[1024];
            term_fprintf(stderr, "warning: %s — instruction pins are not checked\n",
                         as_err_str(&le, buf, sizeof buf));
        }
    }
    if (m->kind == MANIFEST_PROJECT && global_scope) {
        int absent = 0;
        e->machine = manifest_load_machine(&absent, err);
        if (!e->machine && !absent)
            goto fail; /* a broken machine file fails closed */
        as_err_clear(err);
        manifest_inherit_instructions(m, e->machine);
    }
    return 0;
fail:
    /* Callers release only an env that initialised: nothing may be left. */
    adp_render_env_release(e);
    return -1;
}

void adp_render_env_apply(const struct adp_render_env *e, struct adp_apply_opts *o)
{
    o->resolve = adp_resolver_fn;
    o->resolve_ctx = e->resolver;
    o->lock = e->lock;
    o->home = e->home.len ? e->home.buf : NULL;
}

void adp_render_env_release(struct adp_render_env *e)
{
    adp_resolver_free(e->resolver);
    lockfile_free(e->lock);
    manifest_free(e->machine);
    sb_release(&e->home);
    memset(e, 0, sizeof *e);
}
