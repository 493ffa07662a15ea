/*
 * flow — the OAuth exchanges of a login and of a refresh (docs/oauth.md):
 * discovery (the server's 401, protected-resource metadata, authorization-
 * server metadata), dynamic client registration, the authorization URL,
 * the code and refresh grants, revocation.
 *
 * Why one file: each step feeds the next one's URL, and every URL is
 * checked (oauth_url_secure) before it is contacted, in one place.
 *
 * Guarantees: every document is judged by meta.c before anything from it
 * is used; a redirect on any of these requests is refused, never followed
 * (fetch.c); the resource indicator (the server's URL) is sent on the
 * authorization request and on every token request; an error from the
 * authorization server is reported by its `error` code only (its
 * description is server-authored text).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "mcp/mcp.h"
#include "oauth/oauth.h"

void oauth_login_free(struct oauth_login *l)
{
    free(l->server);
    free(l->resource);
    free(l->issuer);
    free(l->authorization_endpoint);
    free(l->token_endpoint);
    free(l->registration_endpoint);
    free(l->revocation_endpoint);
    free(l->client_id);
    free(l->scope);
    free(l->reason);
    free(l->store);
    memset(l, 0, sizeof *l);
}

static const char probe_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"" MCP_VERSION_DEFAULT "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"agentstack-auth\","
    "\"version\":\"1\"}}}";

/* The protected-resource metadata's URL: the 401's resource_metadata, else
 * the well-known locations (path-inserted first). */
static int prm_candidates(const char *url, strvec *out, strbuf *scope, struct as_err *err)
{
    struct oauth_resp r;
    oauth_resp_init(&r);
    int rc = oauth_http(url, "application/json", probe_body, NULL, &r, err);
    if (rc < 0) {
        as_err_prefix(err, "the server did not answer");
        oauth_resp_release(&r);
        return -1;
    }
    strbuf rm = SB_INIT;
    if (r.status == 401 && oauth_www_auth_param(r.www_auth.buf, "resource_metadata", &rm)) {
        const char *why;
        if (!oauth_url_secure(rm.buf, &why)) {
            as_err_set(err, "the server's resource_metadata URL is refused: %s", why);
            rc = -1;
        } else {
            strvec_push(out, rm.buf);
        }
    }
    if (r.status == 401)
        oauth_www_auth_param(r.www_auth.buf, "scope", scope);
    if (rc == 0 && !out->n) {
        strbuf w = SB_INIT;
        oauth_well_known(url, "oauth-protected-resource", &w);
        strvec_push(out, w.buf);
        sb_reset(&w);
        oauth_url_origin(url, &w);
        sb_adds(&w, "/.well-known/oauth-protected-resource");
        if (strcmp(w.buf, out->v[0]) != 0)
            strvec_push(out, w.buf);
        sb_release(&w);
    }
    sb_release(&rm);
    oauth_resp_release(&r);
    return rc;
}

/* GETs the first candidate that is not a 404 and returns its body. */
static int fetch_first(const char *what, const strvec *urls, strbuf *body, struct as_err *err)
{
    for (size_t i = 0; i < urls->n; i++) {
        struct oauth_resp r;
        oauth_resp_init(&r);
        int rc = oauth_http_ok(what, urls->v[i], NULL, NULL, &r, err);
        if (rc == 0)
            sb_add(body, r.body.buf, r.body.len);
        bool next = rc < 0 && r.status == 404 && i + 1 < urls->n;
        oauth_resp_release(&r);
        if (!next)
            return rc;
    }
    return as_err_set(err, "%s: not found", what);
}

static int discover_as(const char *issuer, struct oauth_asm *as, struct as_err *err)
{
    strvec urls = STRVEC_INIT;
    strbuf w = SB_INIT;
    oauth_well_known(issuer, "oauth-authorization-server", &w);
    strvec_push(&urls, w.buf);
    sb_reset(&w);
    oauth_well_known(issuer, "openid-configuration", &w);
    strvec_push(&urls, w.buf);
    sb_reset(&w);
    strbuf canon = SB_INIT;
    oauth_resource_canon(issuer, &canon);
    sb_addf(&w, "%s/.well-known/openid-configuration", canon.buf);
    if (strcmp(w.buf, urls.v[1]) != 0)
        strvec_push(&urls, w.buf);
    sb_release(&canon);
    sb_release(&w);
    strbuf body = SB_INIT;
    int rc = fetch_first("authorization-server metadata", &urls, &body, err);
    if (rc == 0)
        rc = oauth_asm_check(body.buf, body.len, issuer, as, err);
    sb_release(&body);
    strvec_clear(&urls);
    return rc;
}

int oauth_discover(const char *server, const char *server_url, struct oauth_login *l,
                   struct as_err *err)
{
    const char *why;
    if (!oauth_url_secure(server_url, &why))
        return as_err_set(err, "the server's URL is refused for OAuth: %s", why);
    strvec prm_urls = STRVEC_INIT;
    strbuf scope = SB_INIT, body = SB_INIT;
    struct oauth_prm prm = {0};
    struct oauth_asm as = {0};
    int rc = prm_candidates(server_url, &prm_urls, &scope, err);
    if (rc == 0)
        rc = fetch_first("protected-resource metadata", &prm_urls, &body, err);
    if (rc == 0)
        rc = oauth_prm_check(body.buf, body.len, server_url, &prm, err);
    if (rc == 0)
        rc = discover_as(prm.servers.v[0], &as, err);
    if (rc == 0) {
        strbuf canon = SB_INIT;
        oauth_resource_canon(server_url, &canon);
        l->server = xstrdup(server);
        l->resource = sb_detach(&canon, NULL);
        l->issuer = xstrdup(as.issuer);
        l->authorization_endpoint = xstrdup(as.authorization_endpoint);
        l->token_endpoint = xstrdup(as.token_endpoint);
        l->registration_endpoint =
            as.registration_endpoint ? xstrdup(as.registration_endpoint) : NULL;
        l->revocation_endpoint = as.revocation_endpoint ? xstrdup(as.revocation_endpoint) : NULL;
        if (scope.len)
            l->scope = xstrdup(scope.buf);
        else if (prm.scope)
            l->scope = xstrdup(prm.scope);
    }
    oauth_asm_free(&as);
    oauth_prm_free(&prm);
    sb_release(&body);
    sb_release(&scope);
    strvec_clear(&prm_urls);
    return rc;
}

int oauth_register(struct oauth_login *l, const char *redirect_uri, struct as_err *err)
{
    if (!l->registration_endpoint)
        return as_err_set(err, "the authorization server offers no dynamic client registration");
    json_t *req =
        json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s}", "client_name", "agentstack", "redirect_uris",
                  redirect_uri, "grant_types", "authorization_code", "refresh_token",
                  "response_types", "code", "token_endpoint_auth_method", "none");
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    struct oauth_resp r;
    oauth_resp_init(&r);
    int rc = oauth_http_ok("client registration", l->registration_endpoint, "application/json",
                           text, &r, err);
    free(text);
    if (rc == 0) {
        json_error_t je;
        json_t *o = json_loadb(r.body.buf, r.body.len, JSON_REJECT_DUPLICATES, &je);
        const char *id = json_string_value(json_object_get(o, "client_id"));
        if (!id || !*id || strlen(id) > 512)
            rc = as_err_set(err, "client registration: the answer names no client_id");
        else
            l->client_id = xstrdup(id);
        if (o)
            json_decref(o);
    }
    oauth_resp_release(&r);
    return rc;
}

void oauth_authorize_url(const struct oauth_login *l, const char *redirect_uri, const char *state,
                         const char *challenge, strbuf *out)
{
    strbuf q = SB_INIT;
    oauth_form_add(&q, "response_type", "code");
    oauth_form_add(&q, "client_id", l->client_id);
    oauth_form_add(&q, "redirect_uri", redirect_uri);
    oauth_form_add(&q, "state", state);
    oauth_form_add(&q, "code_challenge", challenge);
    oauth_form_add(&q, "code_challenge_method", "S256");
    oauth_form_add(&q, "resource", l->resource);
    if (l->scope && *l->scope)
        oauth_form_add(&q, "scope", l->scope);
    sb_addf(out, "%s%c%s", l->authorization_endpoint,
            strchr(l->authorization_endpoint, '?') ? '&' : '?', q.buf);
    sb_release(&q);
}

/* POSTs form to the token endpoint and checks the answer. */
static int token_request(const struct oauth_login *l, const char *what, strbuf *form,
                         struct oauth_tokens *t, struct as_err *err)
{
    struct oauth_resp r;
    oauth_resp_init(&r);
    int rc = oauth_http(l->token_endpoint, "application/x-www-form-urlencoded", form->buf, NULL, &r,
                        err);
    sb_release_secure(form);
    if (rc < 0) {
        as_err_prefix(err, "%s", what);
    } else if (r.status >= 300 && r.status < 400) {
        rc = as_err_set(err, "%s: the token endpoint answered a redirect (HTTP %ld); refused", what,
                        r.status);
    } else if (r.status != 200) {
        json_error_t je;
        json_t *o = json_loadb(r.body.buf, r.body.len, 0, &je);
        const char *code = json_string_value(json_object_get(o, "error"));
        char shown[64] = "";
        for (size_t i = 0; code && code[i] && i < sizeof shown - 1; i++)
            shown[i] = (code[i] >= 'a' && code[i] <= 'z') || code[i] == '_' ? code[i] : '?';
        rc = as_err_set(err, "%s: HTTP %ld%s%s%s", what, r.status, shown[0] ? " (" : "", shown,
                        shown[0] ? ")" : "");
        if (o)
            json_decref(o);
    } else if (oauth_token_check(r.body.buf, r.body.len, l->resource, t, err) < 0) {
        as_err_prefix(err, "%s", what);
        rc = -1;
    }
    oauth_resp_release(&r);
    return rc;
}

int oauth_exchange_code(const struct oauth_login *l, const char *code, const char *verifier,
                        const char *redirect_uri, struct oauth_tokens *t, struct as_err *err)
{
    strbuf f = SB_INIT;
    oauth_form_add(&f, "grant_type", "authorization_code");
    oauth_form_add(&f, "code", code);
    oauth_form_add(&f, "redirect_uri", redirect_uri);
    oauth_form_add(&f, "client_id", l->client_id);
    oauth_form_add(&f, "code_verifier", verifier);
    oauth_form_add(&f, "resource", l->resource);
    return token_request(l, "the code exchange", &f, t, err);
}

int oauth_refresh(const struct oauth_login *l, const char *refresh_token, struct oauth_tokens *t,
                  struct as_err *err)
{
    strbuf f = SB_INIT;
    oauth_form_add(&f, "grant_type", "refresh_token");
    oauth_form_add(&f, "refresh_token", refresh_token);
    oauth_form_add(&f, "client_id", l->client_id);
    oauth_form_add(&f, "resource", l->resource);
    if (l->scope && *l->scope)
        oauth_form_add(&f, "scope", l->scope);
    return token_request(l, "the refresh", &f, t, err);
}

int oauth_revoke(const struct oauth_login *l, const char *token, const char *hint, bool *offered,
                 struct as_err *err)
{
    *offered = l->revocation_endpoint != NULL;
    if (!*offered)
        return 0;
    strbuf f = SB_INIT;
    oauth_form_add(&f, "token", token);
    oauth_form_add(&f, "token_type_hint", hint);
    oauth_form_add(&f, "client_id", l->client_id);
    struct oauth_resp r;
    oauth_resp_init(&r);
    int rc = oauth_http_ok("the revocation", l->revocation_endpoint,
                           "application/x-www-form-urlencoded", f.buf, &r, err);
    sb_release_secure(&f);
    oauth_resp_release(&r);
    return rc;
}
