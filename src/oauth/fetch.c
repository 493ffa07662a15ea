/*
 * fetch — one blocking HTTP exchange for OAuth (metadata, registration,
 * tokens, revocation), through the libcurl that mcp/curl_dl.h loads.
 *
 * Why blocking: a login is a command that waits for its answers anyway,
 * and the gateway's refresh is one short exchange before a request (each
 * bounded by OAUTH_TIMEOUT_MS, docs/oauth.md says what that costs).
 *
 * Guarantees: http and https only; redirects are never followed (a 3xx
 * comes back to the caller, which refuses it); a body over OAUTH_BODY_MAX
 * aborts the transfer; no proxy and no environment variable is read, so
 * the token goes to the address the checks saw; header values (a bearer
 * token) are wiped after the transfer; errors never quote a URL's query
 * or a body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp/curl_dl.h"
#include "oauth/oauth.h"

void oauth_resp_init(struct oauth_resp *r)
{
    memset(r, 0, sizeof *r);
    sb_init(&r->body, 0);
    sb_init(&r->www_auth, 0);
    sb_init(&r->location, 0);
}

void oauth_resp_release(struct oauth_resp *r)
{
    sb_release_secure(&r->body);
    sb_release(&r->www_auth);
    sb_release(&r->location);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct oauth_resp *r = ud;
    size_t n = size * nmemb;
    if (r->body.len + n > OAUTH_BODY_MAX) {
        r->too_large = true;
        return 0;
    }
    sb_add(&r->body, p, n);
    return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct oauth_resp *r = ud;
    size_t n = size * nmemb;
    if (n >= 5 && strncasecmp(p, "HTTP/", 5) == 0) {
        sb_reset(&r->www_auth);
        sb_reset(&r->location);
        return n;
    }
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return n;
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vl = (size_t)(p + n - v);
    while (vl && (*v == ' ' || *v == '\t')) {
        v++;
        vl--;
    }
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
        vl--;
    if (vl > 4096)
        return n;
    if (nl == 16 && strncasecmp(p, "www-authenticate", 16) == 0) {
        if (r->www_auth.len)
            sb_adds(&r->www_auth, ", ");
        sb_add(&r->www_auth, v, vl);
    } else if (nl == 8 && strncasecmp(p, "location", 8) == 0) {
        sb_reset(&r->location);
        sb_add(&r->location, v, vl);
    }
    return n;
}

static int protocols(const struct mcp_curl *cu, CURL *e)
{
#if LIBCURL_VERSION_NUM >= 0x075500
    if (cu->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK)
        return 0;
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CURLcode rc = cu->easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#pragma GCC diagnostic pop
    return rc == CURLE_OK ? 0 : -1;
}

int oauth_http(const char *url, const char *content_type, const char *body, const char *bearer,
               struct oauth_resp *r, struct as_err *err)
{
    const char *why = NULL;
    if (!oauth_url_secure(url, &why))
        return as_err_set(err, "refused to contact an OAuth URL: %s", why);
    const struct mcp_curl *cu = mcp_curl_load(err);
    if (!cu)
        return -1;
    CURL *e = cu->easy_init();
    if (!e || protocols(cu, e) < 0) {
        if (e)
            cu->easy_cleanup(e);
        return as_err_set(err, "libcurl could not create a transfer");
    }
    /* MCP servers want both (the first probe is an MCP request). */
    struct curl_slist *h = cu->slist_append(NULL, "Accept: application/json, text/event-stream");
    char *auth = NULL;
    if (content_type) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        h = cu->slist_append(h, ct);
    }
    if (bearer) {
        size_t n = strlen(bearer) + 32;
        auth = malloc(n);
        if (auth) {
            snprintf(auth, n, "Authorization: Bearer %s", bearer);
            h = cu->slist_append(h, auth);
        }
    }
    cu->easy_setopt(e, CURLOPT_URL, url);
    cu->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    cu->easy_setopt(e, CURLOPT_PROXY, "");
    cu->easy_setopt(e, CURLOPT_NOPROXY, "*");
    cu->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)OAUTH_TIMEOUT_MS);
    cu->easy_setopt(e, CURLOPT_HTTPHEADER, h);
    cu->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    cu->easy_setopt(e, CURLOPT_WRITEDATA, r);
    cu->easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    cu->easy_setopt(e, CURLOPT_HEADERDATA, r);
    if (body) {
        cu->easy_setopt(e, CURLOPT_POSTFIELDS, body);
        cu->easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = cu->easy_perform(e);
    cu->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    cu->easy_cleanup(e);
    cu->slist_free_all(h);
    if (auth) {
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    if (r->too_large)
        return as_err_set(err, "the answer is over %zu bytes; refused", OAUTH_BODY_MAX);
    if (rc != CURLE_OK)
        return as_err_set(err, "HTTP request failed: %s", cu->easy_strerror(rc));
    return 0;
}

int oauth_http_ok(const char *what, const char *url, const char *content_type, const char *body,
                  struct oauth_resp *r, struct as_err *err)
{
    if (oauth_http(url, content_type, body, NULL, r, err) < 0) {
        as_err_prefix(err, "%s", what);
        return -1;
    }
    if (r->status >= 300 && r->status < 400) {
        strbuf o = SB_INIT;
        if (oauth_url_origin(r->location.buf, &o) < 0)
            sb_adds(&o, "an unreadable location");
        as_err_set(err,
                   "%s: the server answered a redirect (HTTP %ld to %s); redirects are "
                   "refused",
                   what, r->status, o.buf);
        sb_release(&o);
        return -1;
    }
    if (r->status < 200 || r->status >= 300)
        return as_err_set(err, "%s: HTTP %ld", what, r->status);
    return 0;
}
