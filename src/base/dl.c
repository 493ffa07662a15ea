/*
 * dl — see dl.h for why and what is guaranteed.
 */
#include "base/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "dlsym results are stored into function pointers");

void *dl_load_table(const char *const *names, const char *what, const char *hint,
                    const struct dl_sym *syms, size_t n, void *table, struct as_err *err)
{
    char first_why[512] = "";
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            if (!first_why[0]) {
                const char *why = dlerror();
                snprintf(first_why, sizeof first_why, "%s", why ? why : names[i]);
            }
            continue;
        }
        /* Resolved into a scratch copy: a library missing one symbol leaves
         * the caller's table untouched. */
        void **tmp = xcalloc(n ? n : 1, sizeof *tmp);
        for (size_t k = 0; k < n; k++) {
            dlerror();
            void *p = dlsym(h, syms[k].name);
            if (!p) {
                const char *why = dlerror();
                as_err_set(err, "the %s found (%s) lacks %s: %s; %s", what, names[i], syms[k].name,
                           why ? why : "not found", hint);
                free(tmp);
                dlclose(h);
                return NULL;
            }
            tmp[k] = p;
        }
        for (size_t k = 0; k < n; k++)
            memcpy((char *)table + syms[k].off, &tmp[k], sizeof tmp[k]);
        free(tmp);
        return h;
    }
    as_err_set(err, "%s is not installed: %s (%s)", what, hint,
               first_why[0] ? first_why : "no library name to try");
    return NULL;
}
