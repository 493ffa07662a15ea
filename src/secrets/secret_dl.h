/*
 * libsecret (and with it gio, gobject and glib), loaded on first keychain
 * use instead of at program start.
 *
 * Only the keychain needs libsecret, yet linking it made the dynamic loader
 * map and relocate its chain (gio, gobject, glib, gcrypt, mount, selinux,
 * pcre2, ffi, ...) and run glib's constructors at every start of every
 * command, about half of a bare start's cost. dlopen moves that cost to the
 * first keychain call of a process; commands that never reach the keychain
 * never pay it.
 *
 * Guarantees: sec_libsecret_load() returns every libsecret and glib entry
 * point keychain.c calls, each typed through __typeof__ of its prototype in
 * <libsecret/secret.h> (a signature that drifts is a compile error, not a
 * runtime crash); or NULL with an error that names the package to install.
 * The glib functions are looked up through libsecret's own handle, so they
 * are the glib libsecret itself runs on. A failed load is not remembered
 * (installing libsecret makes the next load work); a loaded libsecret is
 * never unloaded (glib registers types and threads that cannot be undone).
 * Safe to call from several threads.
 */
#ifndef AS_SECRETS_SECRET_DL_H
#define AS_SECRETS_SECRET_DL_H

#include "base/err.h"

/* Complete only where libsecret's headers are on the include path (this
 * module's sources); tests see the functions below and an opaque table. */
struct sec_libsecret;

/* The package that provides the library, as the error names it. */
#define SEC_LIBSECRET_INSTALL_HINT "apt-get install libsecret-1-0"

/* The loaded entry points, or NULL + err ("libsecret is not installed: apt-get
 * install libsecret-1-0 (<loader's reason>)", or "the libsecret found (<lib>)
 * lacks <symbol>: ..." when a library of that name is not a usable libsecret;
 * in a build without libsecret: "no keychain support in this build"). */
const struct sec_libsecret *sec_libsecret_load(struct as_err *err);

/* For tests: the library names tried in order (NULL-terminated; NULL = the
 * default list). Affects later loads only; a loaded libsecret stays. */
void sec__libsecret_set_names(const char *const *names);

#ifdef AS_HAVE_LIBSECRET
#include <libsecret/secret.h>

struct sec_libsecret {
    __typeof__(secret_password_lookup_binary_sync) *password_lookup_binary_sync;
    __typeof__(secret_password_store_binary_sync) *password_store_binary_sync;
    __typeof__(secret_password_clear_sync) *password_clear_sync;
    __typeof__(secret_password_search_sync) *password_search_sync;
    __typeof__(secret_retrievable_get_attributes) *retrievable_get_attributes;
    __typeof__(secret_service_get_sync) *service_get_sync;
    __typeof__(secret_value_get) *value_get;
    __typeof__(secret_value_new) *value_new;
    __typeof__(secret_value_unref) *value_unref;
    __typeof__(g_cancellable_new) *g_cancellable_new;
    __typeof__(g_cancellable_cancel) *g_cancellable_cancel;
    __typeof__(g_error_free) *g_error_free;
    __typeof__(g_hash_table_lookup) *g_hash_table_lookup;
    __typeof__(g_hash_table_unref) *g_hash_table_unref;
    __typeof__(g_list_free_full) *g_list_free_full;
    __typeof__(g_object_unref) *g_object_unref;
};
#endif

#endif
