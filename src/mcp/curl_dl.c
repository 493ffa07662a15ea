/*
 * libcurl through dlopen — see curl_dl.h for why and what is guaranteed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "base/dl.h"
#include "mcp/curl_dl.h"

/* Debian's libcurl4 first; libcurl3-gnutls ships the same ABI under another
 * name and is often present where libcurl4 is not. */
static const char *const default_names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", NULL};

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *const *names = default_names;
static struct mcp_curl api;
static int loaded;

/* Kept as written: three rows of names read better than the formatter's layout. */
/* clang-format off */
#define SYM(f) {"curl_" #f, offsetof(struct mcp_curl, f)}
static const struct dl_sym syms[] = {
    SYM(global_init), SYM(easy_init), SYM(easy_cleanup), SYM(easy_setopt), SYM(easy_getinfo),
    SYM(easy_strerror), SYM(easy_perform), SYM(slist_append), SYM(slist_free_all),
    SYM(multi_init), SYM(multi_cleanup), SYM(multi_setopt), SYM(multi_add_handle),
    SYM(multi_remove_handle), SYM(multi_socket_action), SYM(multi_info_read),
    SYM(url), SYM(url_set), SYM(url_get), SYM(url_cleanup), SYM(free),
};
#undef SYM
/* clang-format on */
_Static_assert(sizeof syms / sizeof syms[0] == sizeof(struct mcp_curl) / sizeof(void *),
               "every entry point in struct mcp_curl is looked up");

#define INSTALL_HINT "apt-get install libcurl4"

/* Called with load_mu held. */
static int load_locked(struct as_err *err)
{
    struct mcp_curl tmp;
    void *h = dl_load_table(names, "libcurl", INSTALL_HINT, syms, sizeof syms / sizeof syms[0],
                            &tmp, err);
    if (!h)
        return -1;
    /* Once per process: curl_global_init is not thread-safe in older
     * libcurl, and this runs under load_mu before any handle exists. */
    CURLcode rc = tmp.global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        as_err_set(err, "libcurl failed to initialise: %s", tmp.easy_strerror(rc));
        dlclose(h);
        return -1;
    }
    api = tmp;
    loaded = 1;
    return 0;
}

const struct mcp_curl *mcp_curl_load(struct as_err *err)
{
    pthread_mutex_lock(&load_mu);
    int ok = loaded || load_locked(err) == 0;
    pthread_mutex_unlock(&load_mu);
    return ok ? &api : NULL;
}

void mcp__curl_set_names(const char *const *list)
{
    pthread_mutex_lock(&load_mu);
    names = list ? list : default_names;
    pthread_mutex_unlock(&load_mu);
}
