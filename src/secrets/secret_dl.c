/*
 * libsecret through dlopen — see secret_dl.h for why and what is guaranteed.
 */
#include <pthread.h>
#include <stddef.h>

#include "base/dl.h"
#include "secrets/secret_dl.h"

#ifdef AS_HAVE_LIBSECRET
/* The soname Debian's libsecret-1-0 ships (the ABI has been 0 since 2013). */
static const char *const default_names[] = {"libsecret-1.so.0", NULL};

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *const *names = default_names;
static struct sec_libsecret api;
static int loaded;

/* Kept as written: rows of names read better than the formatter's layout. */
/* clang-format off */
#define SSYM(f) {"secret_" #f, offsetof(struct sec_libsecret, f)}
#define GSYM(f) {#f, offsetof(struct sec_libsecret, f)}
static const struct dl_sym syms[] = {
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

/* Called with load_mu held. The handle's lookup scope includes its
 * dependencies, so the g_* functions come from the glib this libsecret was
 * linked against (dl_load_table opens it RTLD_LOCAL: glib's symbols stay out
 * of the global scope). */
static int load_locked(struct as_err *err)
{
    struct sec_libsecret tmp;
    if (!dl_load_table(names, "libsecret", SEC_LIBSECRET_INSTALL_HINT, syms,
                       sizeof syms / sizeof syms[0], &tmp, err))
        return -1;
    api = tmp;
    loaded = 1;
    return 0;
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
