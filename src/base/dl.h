/*
 * dl — loading an optional shared library's entry points on first use.
 *
 * Why: libcurl and libsecret are needed by a few commands only, and linking
 * them costs every start-up tens of shared objects; both are dlopen'ed when
 * first used instead. This is the one loader both go through.
 *
 * Guarantees: dl_load_table tries each soname in order and uses the first
 * that opens; every symbol of the table must resolve in it, or the handle is
 * closed and nothing is written to the table; the error names the library,
 * the missing symbol or why none opened, and the install hint. RTLD_LOCAL:
 * the library's own dependencies (glib, say) stay out of the global scope.
 * Not thread-safe by itself: callers hold their own once-lock.
 */
#ifndef AS_BASE_DL_H
#define AS_BASE_DL_H

#include <stddef.h>

#include "base/err.h"

/* One entry point: its symbol name and the offset of the function pointer
 * that receives it in the caller's table struct. */
struct dl_sym {
    const char *name;
    size_t off;
};

/* Compile-time proof that the table member through which fn is called has
 * fn's own prototype, as the library's installed header declares it. */
#define DL_PROTO_CHECK(table, member, fn)                                                          \
    _Static_assert(                                                                                \
        __builtin_types_compatible_p(__typeof__(((table *)0)->member), __typeof__(&fn)),           \
        #fn " is called with its library's prototype")

/* Opens the first loadable name of names (NULL-terminated) and fills table
 * from syms[0..n). what names the library in errors ("libcurl"), hint says
 * how to install it. Returns the handle, or NULL + err. */
void *dl_load_table(const char *const *names, const char *what, const char *hint,
                    const struct dl_sym *syms, size_t n, void *table, struct as_err *err);

#endif
