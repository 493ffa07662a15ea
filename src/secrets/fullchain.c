/*
 * The full resolution chain (docs/secrets.md), see backends.h:
 *     env → varlock → keychain → file store → project .env
 * built on sec_chain_default (env → file store → .env) by inserting the two
 * layers that talk to other processes before the file store.
 */
#include <string.h>

#include "secrets/backends.h"

struct sec_chain *sec_chain_full(const struct sec_chain_opts *o)
{
    struct sec_chain *c = sec_chain_default(o ? o->project_dotenv : NULL);
    /* Insert before the file store; with no locatable home there is none,
     * and insert_before then lands before the project .env (or at the end). */
    const char *before = "file";
    bool has_file = false;
    for (size_t i = 0; i < sec_chain_count(c); i++)
        if (strcmp(sec_chain_name(c, i), "file") == 0)
            has_file = true;
    if (!has_file)
        before = ".env";
    if (o && o->varlock_dir && o->varlock_schema_sha256) {
        struct sec_backend v =
            sec_backend_varlock(o->varlock_dir, o->varlock_schema_sha256, o->varlock_bin);
        sec_chain_insert_before(c, before, &v);
    }
    if (!(o && o->no_keychain)) {
        struct sec_backend k = sec_backend_keychain();
        sec_chain_insert_before(c, before, &k);
    }
    return c;
}

int sec_resolve_for_render(void *chain, const char *name, const char *server, strbuf *out,
                           struct as_err *err)
{
    (void)server;
    struct sec_result r;
    strbuf v = SB_INIT;
    enum sec_status s = sec_resolve(chain, name, &v, &r);
    if (s == SEC_FOUND)
        sb_add(out, v.buf, v.len);
    sb_release_secure(&v);
    if (s == SEC_FAILED)
        return as_err_set(err, "%s", r.why);
    return s == SEC_FOUND ? 1 : 0;
}
