/*
 * oauth — OAuth 2.1 logins for HTTP MCP upstreams (docs/oauth.md).
 *
 * Why: a remote MCP server may answer 401 and name, in its
 * WWW-Authenticate header, the metadata that says which authorization
 * server issues its tokens. `agentstack auth login <server>` walks that
 * chain once (protected-resource metadata, authorization-server metadata,
 * dynamic client registration, authorization code + PKCE with a resource
 * indicator) and stores the tokens; the gateway then sends the stored
 * access token and refreshes it, without ever opening a browser or
 * prompting on its stdio.
 *
 * Layers (one file each):
 *  - meta.c: pure checks of what the network said (URLs, metadata, token
 *    answers, a JWT's audience) and PKCE; no I/O, unit tested.
 *  - fetch.c: one blocking HTTP exchange through the loaded libcurl
 *    (mcp/curl_dl.h), redirects never followed, bodies capped.
 *  - flow.c: discovery, registration, code exchange, refresh, revocation.
 *  - store.c: the login record (no secret) and the tokens (the secret
 *    store only: the OS keychain when it answers, else the 0600 file store).
 *  - bearer.c: what an upstream client asks for each request.
 *
 * Guarantees:
 *  - Fail closed: metadata served over http: to a non-loopback host, an
 *    issuer that is not the authorization server that was asked, a
 *    protected resource whose `resource` is not the server's URL, a
 *    metadata or token request answered with a redirect, a token whose
 *    JWT audience does not name the server, an oversized (> OAUTH_BODY_MAX)
 *    or malformed token answer: each is refused with a reason, and nothing
 *    is stored.
 *  - A token value never appears in an error message, in the login record
 *    or in any file but the secret store; buffers that held one are wiped.
 */
#ifndef AS_OAUTH_OAUTH_H
#define AS_OAUTH_OAUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"

#define OAUTH_BODY_MAX ((size_t)64 << 10) /* any metadata or token answer */
#define OAUTH_TOKEN_MAX ((size_t)8 << 10) /* one access or refresh token */
#define OAUTH_TIMEOUT_MS 10000            /* one HTTP exchange, connect included */
#define OAUTH_REFRESH_MARGIN_S 60         /* refresh when this close to expiry */

/* ---- pure checks (meta.c) -------------------------------------------------- */

/* 1 when url may carry OAuth traffic: https, or http to a loopback host
 * (localhost, 127.0.0.0/8, [::1]); no userinfo. 0 + *why otherwise. */
int oauth_url_secure(const char *url, const char **why);
/* 1 when url's host is a loopback name or address. */
int oauth_url_loopback(const char *url);
/* "scheme://host[:port]" lowercased, the scheme's default port left out;
 * -1 when url has no readable authority. */
int oauth_url_origin(const char *url, strbuf *out);
/* The URL as a resource indicator: origin + path (+ query), no fragment,
 * no trailing '/'. -1 when unreadable. */
int oauth_resource_canon(const char *url, strbuf *out);
/* 1 when a and b name the same resource (oauth_resource_canon equal). */
int oauth_resource_same(const char *a, const char *b);
/* origin + "/.well-known/<suffix>" + url's path ("" for "/"); -1 when
 * unreadable. */
int oauth_well_known(const char *url, const char *suffix, strbuf *out);

/* The value of param in a Bearer challenge of a WWW-Authenticate header
 * (quoted or token form); 1 found (appended to out), 0 not there. */
int oauth_www_auth_param(const char *header, const char *param, strbuf *out);

struct oauth_prm {
    char *resource;
    strvec servers; /* authorization_servers, each checked secure */
    char *scope;    /* scopes_supported joined by ' ', or NULL */
};
/* Protected-resource metadata: an object whose `resource` names server_url
 * and whose authorization_servers is a non-empty array of secure URLs. */
int oauth_prm_check(const char *body, size_t len, const char *server_url, struct oauth_prm *out,
                    struct as_err *err);
void oauth_prm_free(struct oauth_prm *p);

struct oauth_asm {
    char *issuer;
    char *authorization_endpoint, *token_endpoint;
    char *registration_endpoint, *revocation_endpoint; /* or NULL */
};
/* Authorization-server metadata fetched for issuer: `issuer` equal to it,
 * every endpoint a secure URL, S256 among code_challenge_methods_supported
 * when that is listed. */
int oauth_asm_check(const char *body, size_t len, const char *issuer, struct oauth_asm *out,
                    struct as_err *err);
void oauth_asm_free(struct oauth_asm *a);

struct oauth_tokens {
    char *access_token;
    char *refresh_token;  /* or NULL */
    char *scope;          /* or NULL */
    long long expires_in; /* seconds, or 0 when the server named none */
};
/* A token endpoint's success answer (at most OAUTH_BODY_MAX bytes): an
 * object, token_type Bearer, access_token of visible ASCII up to
 * OAUTH_TOKEN_MAX, optional refresh_token likewise, optional non-negative
 * integer expires_in; then oauth_aud_check against resource. */
int oauth_token_check(const char *body, size_t len, const char *resource, struct oauth_tokens *out,
                      struct as_err *err);
void oauth_tokens_free(struct oauth_tokens *t);
/* When token is a JWT (three base64url parts, a JSON payload) with an
 * `aud` claim, that claim (string or array) must name resource; an opaque
 * token passes. */
int oauth_aud_check(const char *token, const char *resource, struct as_err *err);

/* base64url without padding. */
void oauth_b64url(const void *data, size_t len, strbuf *out);
/* A fresh PKCE code verifier: 43 characters from 32 random bytes. */
int oauth_pkce_verifier(strbuf *out, struct as_err *err);
/* S256: base64url(SHA-256(verifier)). */
void oauth_pkce_challenge(const char *verifier, strbuf *out);
/* Appends "&k=v" (no '&' when form is empty), form-urlencoded. */
void oauth_form_add(strbuf *form, const char *k, const char *v);
/* The value of key in a query string "a=1&b=2" (percent-decoded); 1
 * found, 0 not there, -1 repeated or undecodable. */
int oauth_query_get(const char *query, const char *key, strbuf *out);

/* ---- one HTTP exchange (fetch.c) --------------------------------------------- */

struct oauth_resp {
    long status;
    strbuf body;     /* capped at OAUTH_BODY_MAX (too_large set past it) */
    strbuf www_auth; /* the WWW-Authenticate header, or "" */
    strbuf location; /* the Location header, or "" */
    bool too_large;
};
void oauth_resp_init(struct oauth_resp *r);
void oauth_resp_release(struct oauth_resp *r);
/* GET (body NULL) or POST body with content_type; bearer, when set, is
 * sent as "Authorization: Bearer". Redirects are not followed. 0 when an
 * answer came (any status), -1 + err when none did. */
int oauth_http(const char *url, const char *content_type, const char *body, const char *bearer,
               struct oauth_resp *r, struct as_err *err);
/* oauth_http, then: a 3xx is refused naming where it pointed (its origin),
 * another non-2xx is refused with its status, an oversized body too. */
int oauth_http_ok(const char *what, const char *url, const char *content_type, const char *body,
                  struct oauth_resp *r, struct as_err *err);

/* ---- the flows (flow.c) ------------------------------------------------------ */

/* What a login knows besides the tokens; stored as the login record. */
struct oauth_login {
    char *server;   /* manifest name */
    char *resource; /* the server's URL as a resource indicator */
    char *issuer;
    char *authorization_endpoint, *token_endpoint;
    char *registration_endpoint, *revocation_endpoint; /* or NULL */
    char *client_id;
    char *scope;          /* granted (or asked for), or NULL */
    long long expires_at; /* unix seconds, 0 = unknown */
    bool has_refresh;
    bool needs_login; /* the gateway found the tokens refused or unrefreshable */
    char *reason;     /* why, when needs_login (no secret in it) */
    char *store;      /* "keychain" | "file" */
};
void oauth_login_free(struct oauth_login *l);

/* Finds the server's authorization server: probes server_url for a 401
 * naming resource_metadata (else the well-known locations), checks the
 * protected-resource and authorization-server metadata, and fills l's
 * resource, issuer, endpoints and scope. */
int oauth_discover(const char *server, const char *server_url, struct oauth_login *l,
                   struct as_err *err);
/* Dynamic client registration (a public client, redirect_uri, the
 * authorization-code and refresh-token grants); fills l->client_id. */
int oauth_register(struct oauth_login *l, const char *redirect_uri, struct as_err *err);
/* The authorization URL for state and the PKCE challenge. */
void oauth_authorize_url(const struct oauth_login *l, const char *redirect_uri, const char *state,
                         const char *challenge, strbuf *out);
/* Code (or refresh) grant at the token endpoint; *t checked. */
int oauth_exchange_code(const struct oauth_login *l, const char *code, const char *verifier,
                        const char *redirect_uri, struct oauth_tokens *t, struct as_err *err);
int oauth_refresh(const struct oauth_login *l, const char *refresh_token, struct oauth_tokens *t,
                  struct as_err *err);
/* Revocation (RFC 7009) of token; 0 when revoked or when the server
 * offers no revocation (*offered false). */
int oauth_revoke(const struct oauth_login *l, const char *token, const char *hint, bool *offered,
                 struct as_err *err);

/* ---- storage (store.c) --------------------------------------------------------- */

/* $AGENTSTACK_HOME/oauth/<server>.json */
int oauth_record_path(const char *server, strbuf *out, struct as_err *err);
/* 1 + *l filled, 0 none, -1 + err (unreadable or malformed). */
int oauth_record_load(const char *server, struct oauth_login *l, struct as_err *err);
int oauth_record_save(const struct oauth_login *l, struct as_err *err);
/* Names with a record, sorted. */
int oauth_record_names(strvec *out, struct as_err *err);
int oauth_record_remove(const char *server, struct as_err *err);
/* The secret store's name for a server's tokens (injective). */
void oauth_secret_name(const char *server, strbuf *out);
/* Stores {access_token, refresh_token} for l (l->store says where; set
 * by the first save: the keychain when it answers, else the file store). */
int oauth_tokens_save(struct oauth_login *l, const struct oauth_tokens *t, struct as_err *err);
/* 1 + *t filled, 0 none stored, -1 + err. */
int oauth_tokens_load(const struct oauth_login *l, struct oauth_tokens *t, struct as_err *err);
int oauth_tokens_delete(const struct oauth_login *l, struct as_err *err);
/* Records that server needs a login (creating a record naming url when
 * there is none); best effort. */
void oauth_mark_needs_login(const char *server, const char *url, const char *reason);

/* ---- for upstream clients (bearer.c) ------------------------------------------ */

struct oauth_bearer;
/* NULL when server has no login record. */
struct oauth_bearer *oauth_bearer_open(const char *server, const char *url);
/* "Authorization: Bearer <token>" for the next request, refreshed first
 * when within OAUTH_REFRESH_MARGIN_S of expiry (the new tokens stored,
 * the rotated refresh token kept). -1 + why (no secret) when there is no
 * usable token: the record then says a login is needed. */
int oauth_bearer_header(struct oauth_bearer *b, strbuf *line, char *why, size_t whysz);
/* The server refused the token (401): recorded as needing a login. */
void oauth_bearer_refused(struct oauth_bearer *b);
void oauth_bearer_free(struct oauth_bearer *b);
/* The two above in the shape of struct mcp_http_opts' auth and
 * auth_refused (ctx is the struct oauth_bearer *). */
int oauth_bearer_auth_cb(void *ctx, strbuf *line, char *why, size_t whysz);
void oauth_bearer_refused_cb(void *ctx);
/* 1 when b's record says a login is needed. */
int oauth_bearer_needs_login(const struct oauth_bearer *b);

/* 1 when server has a login record that cannot be used without a new
 * login (the gateway found it refused, or the access token expired with no
 * refresh token); reason appended. 0 otherwise (no record: nothing known). */
int oauth_needs_login(const char *server, strbuf *reason);

/* "agentstack auth login <server>" */
void oauth_login_command(const char *server, strbuf *out);

#endif
