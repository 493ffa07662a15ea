/*
 * libcurl, loaded on first use instead of at program start.
 *
 * Only Streamable HTTP upstreams need curl, yet linking it made the dynamic
 * loader map and relocate ~35 shared libraries (TLS stacks, Kerberos, LDAP,
 * ...) at every start of every command, about 3 ms of CPU before main().
 * dlopen moves that cost to the first HTTP upstream of a process.
 *
 * Guarantees: mcp_curl_load() returns every entry point http.c calls, each
 * typed through __typeof__ of the <curl/curl.h> prototype (a signature that
 * drifts is a compile error, not a runtime crash), with curl_global_init
 * done exactly once per process; or NULL with an error that names the
 * package to install. A failed load is not remembered, so installing
 * libcurl fixes the next start of that upstream without a restart. It is
 * safe to call from several threads. A loaded libcurl is never unloaded.
 */
#ifndef AS_MCP_CURL_DL_H
#define AS_MCP_CURL_DL_H

#include <curl/curl.h>

#include "base/err.h"

struct mcp_curl {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_strerror) *easy_strerror;
    /* One blocking transfer: the OAuth exchanges of a login (oauth/fetch.c). */
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_multi_init) *multi_init;
    __typeof__(curl_multi_cleanup) *multi_cleanup;
    __typeof__(curl_multi_setopt) *multi_setopt;
    __typeof__(curl_multi_add_handle) *multi_add_handle;
    __typeof__(curl_multi_remove_handle) *multi_remove_handle;
    __typeof__(curl_multi_socket_action) *multi_socket_action;
    __typeof__(curl_multi_info_read) *multi_info_read;
    /* The URL API: h_open checks that libcurl reads a URL's host as we do. */
    __typeof__(curl_url) *url;
    __typeof__(curl_url_set) *url_set;
    __typeof__(curl_url_get) *url_get;
    __typeof__(curl_url_cleanup) *url_cleanup;
    __typeof__(curl_free) *free;
};

/* The loaded entry points, or NULL + err ("libcurl is not installed: apt-get
 * install libcurl4 (<loader's reason>)"). */
const struct mcp_curl *mcp_curl_load(struct as_err *err);

/* For tests: the library names tried in order (NULL-terminated; NULL = the
 * default list). Affects later loads only; a loaded libcurl stays. */
void mcp__curl_set_names(const char *const *names);

#endif
