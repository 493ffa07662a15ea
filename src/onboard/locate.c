/*
 * Where a secret would resolve, by presence only (status surfaces must not
 * read keychain values, and varlock stays out); see onboard.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"

void onb_locator_init(struct onb_locator *l, const char *project_dotenv, bool with_keychain)
{
    memset(l, 0, sizeof *l);
    struct as_err err = AS_ERR_INIT;
    if (with_keychain) {
        if (sec_keychain_names(&l->kc_names, &err) == 0)
            l->kc_ok = true;
        else
            snprintf(l->kc_why, sizeof l->kc_why, "%.500s", err.msg);
    }
    strbuf p = SB_INIT;
    as_err_clear(&err);
    if (sec_file_store_path(&p, &err) == 0) {
        l->file_store = sb_detach(&p, NULL);
        sec_dotenv_names(l->file_store, &l->file_names, &err);
    }
    sb_release(&p);
    if (project_dotenv) {
        l->dotenv = xstrdup(project_dotenv);
        as_err_clear(&err);
        sec_dotenv_names(project_dotenv, &l->dotenv_names, &err);
    }
}

void onb_locator_free(struct onb_locator *l)
{
    strvec_clear(&l->kc_names);
    strvec_clear(&l->file_names);
    strvec_clear(&l->dotenv_names);
    free(l->file_store);
    free(l->dotenv);
}

const char *onb_locate(const struct onb_locator *l, const char *name, strvec *also)
{
    const char *first = NULL;
    const char *v = getenv(name);
    struct {
        const char *label;
        bool has;
    } layers[] = {
        {"env", v != NULL},
        {"keychain", strvec_find(&l->kc_names, name) >= 0},
        {"file", strvec_find(&l->file_names, name) >= 0},
        {".env", strvec_find(&l->dotenv_names, name) >= 0},
    };
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++) {
        if (!layers[i].has)
            continue;
        if (!first)
            first = layers[i].label;
        else if (also)
            strvec_push(also, layers[i].label);
    }
    return first;
}
