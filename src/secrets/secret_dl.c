/*
 * libsecret through dlopen — see secret_dl.h for why and what is guaranteed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "secrets/secret_dl.h"

#ifdef AS_HAVE_LIBSECRET
/* The soname Debian's libsecret-1-0 ships (the ABI has been 0 since 2013). */
static const char *const default_names[] = {"libsecret-1.so.0", NULL};

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *const *names = default_names;
static struct sec_libsecret api;
static int loaded;

_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "dlsym results are stored into function pointers");

/* Kept as written: rows of names read better than the formatter's layout. */
/* clang-format off */
#define SSYM(f) {"secret_" #f, offsetof(struct sec_libsecret, f)}
#define GSYM(f) {#f, offsetof(struct sec_libsecret, f)}
static const struct {
    const char *name;
    size_t off;
} syms[] = {
    SSYM(password_lookup_binary_sync), SSYM(password_store_binary_sync),
    SSYM(password_clear_sync), SSYM(password_search_sync),
    SSYM(retrievable_get_attributes), SSYM(service_get_sync),
    SSYM(value_get), SSYM(value_new), SSYM(value_unref),
    GSYM(g_cancellable_new), GSYM(g_cancellable_cancel), GSYM(g_error_free),
    GSYM(g_hash_table_lookup), GSYM(g_hash_table_unref), GSYM(g_list_free_full),
    GSYM(g_object_unref),
};
#undef SSYM
#undef GSYM
/* clang-format on */
_Static_assert(sizeof syms / sizeof syms[0] == sizeof(struct sec_libsecret) / sizeof(void *),
               "every entry point in struct sec_libsecret is looked up");

/* Fills `out` from one opened library; -1 + err if a symbol is missing. The
 * handle's lookup scope includes its dependencies, so the g_* functions come
 * from the glib this libsecret was linked against. */
static int resolve(void *h, const char *lib, struct sec_libsecret *out, struct as_err *err)
{
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        dlerror();
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            const char *why = dlerror();
            return as_err_set(err,
                              "the libsecret found (%s) lacks %s: %s; " SEC_LIBSECRET_INSTALL_HINT,
                              lib, syms[i].name, why ? why : "not found");
        }
        memcpy((char *)out + syms[i].off, &p, sizeof p);
    }
    return 0;
}

/* Called with load_mu held. */
static int load_locked(struct as_err *err)
{
    char first_why[512] = "";
    for (size_t i = 0; names[i]; i++) {
        /* RTLD_LOCAL: glib's symbols stay out of the global scope, so nothing
         * else in the process binds to them by accident. */
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            if (!first_why[0]) {
                const char *why = dlerror();
                snprintf(first_why, sizeof first_why, "%s", why ? why : names[i]);
            }
            continue;
        }
        struct sec_libsecret tmp;
        if (resolve(h, names[i], &tmp, err) < 0) {
            dlclose(h);
            return -1;
        }
        api = tmp;
        loaded = 1;
        return 0;
    }
    return as_err_set(err, "libsecret is not installed: " SEC_LIBSECRET_INSTALL_HINT " (%s)",
                      first_why[0] ? first_why : "no library name to try");
}

const struct sec_libsecret *sec_libsecret_load(struct as_err *err)
{
    pthread_mutex_lock(&load_mu);
    int ok = loaded || load_locked(err) == 0;
    pthread_mutex_unlock(&load_mu);
    return ok ? &api : NULL;
}

void sec__libsecret_set_names(const char *const *list)
{
    pthread_mutex_lock(&load_mu);
    names = list ? list : default_names;
    pthread_mutex_unlock(&load_mu);
}

#else /* !AS_HAVE_LIBSECRET: nothing to load; the keychain says so (keychain.c). */

const struct sec_libsecret *sec_libsecret_load(struct as_err *err)
{
    as_err_set(err, "no keychain support in this build (built without libsecret)");
    return NULL;
}

void sec__libsecret_set_names(const char *const *list)
{
    (void)list;
}

#endif
