/*
 * Storing lifted secrets (with rollback of keychain writes) and copying
 * imported skills into the central library; see onboard.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/lock.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "library/library.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"

const char *onb_dest_name(enum onb_dest d)
{
    switch (d) {
    case ONB_DEST_KEYCHAIN:
        return "keychain";
    case ONB_DEST_ENV:
        return "env";
    case ONB_DEST_FILE:
        return "file";
    case ONB_DEST_SKIP:
        return "skip";
    }
    return "?";
}

int onb_store_lifts(const onb_lifts *l, enum onb_dest dest, const char *dotenv,
                    struct onb_stored *st, struct as_err *err)
{
    strbuf store = SB_INIT, home = SB_INIT;
    int rc = 0;
    if (dest == ONB_DEST_FILE && (sec_file_store_path(&store, err) < 0 || home_dir(&home, err) < 0))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        const struct onb_lift *x = &l->v[i];
        if (x->reused || dest == ONB_DEST_SKIP)
            continue;
        size_t len = strlen(x->value);
        switch (dest) {
        case ONB_DEST_KEYCHAIN: {
            bool existed = false;
            strbuf old = SB_INIT;
            struct as_err e2 = AS_ERR_INIT;
            existed = sec_keychain_lookup(x->name, &old, &e2) == SEC_FOUND;
            sb_release_secure(&old);
            rc = sec_keychain_store(x->name, x->value, len, err);
            /* Only names this run created are rolled back; an existing
             * item with this name held this value already (lifting skips
             * names holding other values). */
            if (rc == 0 && !existed)
                strvec_push(&st->kc_created, x->name);
            break;
        }
        case ONB_DEST_ENV:
            rc = sec_dotenv_set(dotenv, x->name, x->value, len, SEC_STORE_DOTENV, NULL, err);
            break;
        case ONB_DEST_FILE:
            rc = sec_dotenv_set(store.buf, x->name, x->value, len, SEC_STORE_FILE, home.buf, err);
            break;
        case ONB_DEST_SKIP:
            break;
        }
        if (rc < 0)
            as_err_prefix(err, "cannot store %s", x->name);
    }
    sb_release(&store);
    sb_release(&home);
    return rc;
}

void onb_rollback(struct onb_stored *st)
{
    for (size_t i = 0; i < st->kc_created.n; i++) {
        struct as_err err = AS_ERR_INIT;
        sec_keychain_delete(st->kc_created.v[i], NULL, &err);
    }
    strvec_clear(&st->kc_created);
}

void onb_stored_free(struct onb_stored *st)
{
    strvec_clear(&st->kc_created);
}

int onb_write_skills(const struct onb_import *im, size_t *copied, struct as_err *err)
{
    *copied = 0;
    size_t pending = 0;
    for (size_t i = 0; i < im->skills.n; i++)
        pending += !im->skills.v[i].in_library;
    if (!pending)
        return 0;
    strbuf home = SB_INIT;
    if (home_ensure(HOME_ROOT_DIR, &home, err) < 0) {
        sb_release(&home);
        return -1;
    }
    struct as_lock lk = {-1};
    if (lock_acquire(&lk, home.buf, LOCK_WAIT_MS, err) < 0) {
        sb_release(&home);
        return -1;
    }
    int rc = -1;
    struct library *lib = lib_open(NULL, err);
    if (!lib)
        goto out;
    struct lib_source *src = lib_first(lib);
    size_t src_index = (size_t)(src - lib->sources.v);
    strvec placed = STRVEC_INIT;
    for (size_t i = 0; i < im->skills.n; i++) {
        const struct onb_skill *s = &im->skills.v[i];
        if (s->in_library)
            continue;
        strbuf rel = SB_INIT;
        lib_item_rel(LIB_SKILL, s->name, &rel);
        char *dst = xasprintf("%s/%s", src->path, rel.buf);
        int c = lib_copy_tree(s->src, dst, err);
        if (c == 0)
            strvec_push(&placed, dst);
        free(dst);
        sb_release(&rel);
        if (c < 0) {
            as_err_prefix(err, "cannot copy skill '%s' into the library", s->name);
            goto undo;
        }
        lib_source_put(src, src_index, LIB_SKILL, s->name, NULL);
        (*copied)++;
    }
    if (lib_index_save(lib, src, err) < 0)
        goto undo;
    rc = 0;
    goto done;
undo:
    for (size_t i = 0; i < placed.n; i++) {
        struct as_err e2 = AS_ERR_INIT;
        fs_rmtree(placed.v[i], &e2);
    }
    *copied = 0;
done:
    strvec_clear(&placed);
    lib_free(lib);
out:
    lock_release(&lk);
    sb_release(&home);
    return rc;
}
