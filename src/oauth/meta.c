/*
 * meta — the pure checks of OAuth (docs/oauth.md): URLs that may carry
 * tokens, protected-resource and authorization-server metadata, token
 * answers, a JWT's audience, and PKCE.
 *
 * Why: every refusal the login and the gateway make on what the network
 * said is decided here, without I/O, so each one has a unit test that
 * feeds it the hostile document (tests/unit/oauth/test_meta.c).
 *
 * Guarantees: see oauth.h. Nothing here prints or returns a token's value
 * in an error; a token is only ever copied into the caller's struct.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base64.h"
#include "base/rand.h"
#include "base/sha256.h"
#include "base/url.h"
#include "base/xalloc.h"
#include "oauth/oauth.h"

/* ---- URLs ------------------------------------------------------------------------ */

static int host_loopback(const char *h)
{
    if (strcasecmp(h, "localhost") == 0 || strcasecmp(h, "localhost.") == 0)
        return 1;
    unsigned char a[16];
    if (inet_pton(AF_INET, h, a) == 1)
        return a[0] == 127;
    if (inet_pton(AF_INET6, h, a) == 1) {
        static const unsigned char one[16] = {[15] = 1};
        return memcmp(a, one, 16) == 0;
    }
    return 0;
}

int oauth_url_loopback(const char *url)
{
    struct url_authority a;
    const char *why;
    return url && url_authority(url, &a, &why) == 0 && host_loopback(a.host);
}

int oauth_url_secure(const char *url, const char **why)
{
    struct url_authority a;
    const char *w = NULL;
    if (!url || url_authority(url, &a, &w) < 0) {
        *why = w ? w : "not a URL";
        return 0;
    }
    if (a.has_userinfo) {
        *why = "a URL with user information";
        return 0;
    }
    if (!a.https && !host_loopback(a.host)) {
        *why = "http: to a host that is not this machine (https is required)";
        return 0;
    }
    return 1;
}

static void add_lower(strbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb_addc(out, (char)tolower((unsigned char)s[i]));
}

int oauth_url_origin(const char *url, strbuf *out)
{
    struct url_authority a;
    const char *why;
    if (!url || url_authority(url, &a, &why) < 0)
        return -1;
    sb_adds(out, a.https ? "https://" : "http://");
    if (a.bracketed)
        sb_addc(out, '[');
    add_lower(out, a.host, strlen(a.host));
    if (a.bracketed)
        sb_addc(out, ']');
    if (a.port != (a.https ? 443u : 80u))
        sb_addf(out, ":%u", a.port);
    return 0;
}

int oauth_resource_canon(const char *url, strbuf *out)
{
    struct url_authority a;
    const char *why;
    if (!url || url_authority(url, &a, &why) < 0)
        return -1;
    oauth_url_origin(url, out);
    const char *rest = url + a.authority_end;
    size_t n = strcspn(rest, "#");
    sb_add(out, rest, n);
    while (out->len && out->buf[out->len - 1] == '/' && n) {
        sb_setlen(out, out->len - 1);
        n--;
    }
    return 0;
}

int oauth_resource_same(const char *a, const char *b)
{
    strbuf x = SB_INIT, y = SB_INIT;
    int same = oauth_resource_canon(a, &x) == 0 && oauth_resource_canon(b, &y) == 0 &&
               strcmp(x.buf, y.buf) == 0;
    sb_release(&x);
    sb_release(&y);
    return same;
}

int oauth_well_known(const char *url, const char *suffix, strbuf *out)
{
    struct url_authority a;
    const char *why;
    if (!url || url_authority(url, &a, &why) < 0)
        return -1;
    oauth_url_origin(url, out);
    sb_addf(out, "/.well-known/%s", suffix);
    const char *path = url + a.authority_end;
    size_t n = strcspn(path, "?#");
    while (n && path[n - 1] == '/')
        n--;
    sb_add(out, path, n);
    return 0;
}

/* ---- WWW-Authenticate ------------------------------------------------------------ */

static const char *skip_sp(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == ',')
        p++;
    return p;
}

static size_t token_len(const char *p)
{
    size_t n = 0;
    while (p[n] && !strchr(" \t,=\"", p[n]))
        n++;
    return n;
}

/* Reads a parameter value at p (after '='): quoted-string or token. */
static const char *read_value(const char *p, strbuf *v)
{
    if (*p != '"') {
        size_t n = token_len(p);
        sb_add(v, p, n);
        return p + n;
    }
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        sb_addc(v, *p);
    }
    return *p ? p + 1 : p;
}

int oauth_www_auth_param(const char *header, const char *param, strbuf *out)
{
    const char *p = header ? header : "";
    bool bearer = false;
    strbuf v = SB_INIT;
    while (*(p = skip_sp(p))) {
        size_t n = token_len(p);
        if (!n) {
            p++;
            continue;
        }
        const char *name = p;
        const char *q = p + n;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q != '=' || q[1] == '=') {
            /* an auth-scheme name (or a token68, skipped) */
            bearer = n == 6 && strncasecmp(name, "Bearer", 6) == 0;
            p = q;
            while (*p == '=')
                p++;
            continue;
        }
        q++;
        while (*q == ' ' || *q == '\t')
            q++;
        sb_reset(&v);
        p = read_value(q, &v);
        if (bearer && strlen(param) == n && strncasecmp(name, param, n) == 0) {
            sb_add(out, v.buf, v.len);
            sb_release(&v);
            return 1;
        }
    }
    sb_release(&v);
    return 0;
}

/* ---- metadata ------------------------------------------------------------------- */

static json_t *load_object(const char *body, size_t len, const char *what, struct as_err *err)
{
    if (len > OAUTH_BODY_MAX) {
        as_err_set(err, "the %s is over %zu bytes; refused", what, OAUTH_BODY_MAX);
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(v)) {
        if (v)
            json_decref(v);
        as_err_set(err, "the %s is not a JSON object; refused", what);
        return NULL;
    }
    return v;
}

static const char *str_member(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

void oauth_prm_free(struct oauth_prm *p)
{
    free(p->resource);
    free(p->scope);
    strvec_clear(&p->servers);
    memset(p, 0, sizeof *p);
}

static char *join_strings(json_t *arr)
{
    if (!json_is_array(arr) || !json_array_size(arr))
        return NULL;
    strbuf sb = SB_INIT;
    size_t i;
    json_t *s;
    json_array_foreach(arr, i, s)
    {
        const char *v = json_string_value(s);
        if (v && *v && !strpbrk(v, " \"\\"))
            sb_addf(&sb, "%s%s", sb.len ? " " : "", v);
    }
    return sb.len ? sb_detach(&sb, NULL) : (sb_release(&sb), NULL);
}

int oauth_prm_check(const char *body, size_t len, const char *server_url, struct oauth_prm *out,
                    struct as_err *err)
{
    memset(out, 0, sizeof *out);
    out->servers = (strvec)STRVEC_INIT;
    json_t *o = load_object(body, len, "protected-resource metadata", err);
    if (!o)
        return -1;
    int rc = -1;
    const char *res = str_member(o, "resource");
    json_t *as = json_object_get(o, "authorization_servers");
    const char *why = NULL;
    if (!res) {
        as_err_set(err, "the protected-resource metadata names no `resource`; refused");
    } else if (!oauth_resource_same(res, server_url)) {
        as_err_set(err, "the protected-resource metadata is for another resource (it names "
                        "a `resource` that is not this server's URL); refused");
    } else if (!json_is_array(as) || json_array_size(as) == 0) {
        as_err_set(err, "the protected-resource metadata lists no authorization server");
    } else {
        rc = 0;
        size_t i;
        json_t *s;
        json_array_foreach(as, i, s)
        {
            const char *u = json_string_value(s);
            if (!u || !oauth_url_secure(u, &why)) {
                as_err_set(err,
                           "the protected-resource metadata names an authorization server "
                           "that is refused: %s",
                           u ? why : "not a string");
                rc = -1;
                break;
            }
            strvec_push(&out->servers, u);
        }
    }
    if (rc == 0) {
        out->resource = xstrdup(res);
        out->scope = join_strings(json_object_get(o, "scopes_supported"));
    } else {
        oauth_prm_free(out);
    }
    json_decref(o);
    return rc;
}

void oauth_asm_free(struct oauth_asm *a)
{
    free(a->issuer);
    free(a->authorization_endpoint);
    free(a->token_endpoint);
    free(a->registration_endpoint);
    free(a->revocation_endpoint);
    memset(a, 0, sizeof *a);
}

/* An endpoint member: absent (NULL, 0 unless required) or a secure URL. */
static int endpoint(json_t *o, const char *k, bool required, char **out, struct as_err *err)
{
    json_t *v = json_object_get(o, k);
    if (!v) {
        if (required)
            return as_err_set(err, "the authorization-server metadata has no `%s`; refused", k);
        return 0;
    }
    const char *u = json_string_value(v);
    const char *why = "not a string";
    if (!u || !oauth_url_secure(u, &why))
        return as_err_set(err, "the authorization-server metadata's `%s` is refused: %s", k, why);
    *out = xstrdup(u);
    return 0;
}

static bool lists(json_t *arr, const char *v)
{
    size_t i;
    json_t *s;
    json_array_foreach(arr, i, s)
    {
        const char *x = json_string_value(s);
        if (x && strcmp(x, v) == 0)
            return true;
    }
    return false;
}

int oauth_asm_check(const char *body, size_t len, const char *issuer, struct oauth_asm *out,
                    struct as_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = load_object(body, len, "authorization-server metadata", err);
    if (!o)
        return -1;
    int rc = -1;
    const char *iss = str_member(o, "issuer");
    const char *why = NULL;
    json_t *pk = json_object_get(o, "code_challenge_methods_supported");
    if (!iss) {
        as_err_set(err, "the authorization-server metadata names no `issuer`; refused");
    } else if (!oauth_url_secure(iss, &why)) {
        as_err_set(err, "the authorization server's issuer is refused: %s", why);
    } else if (!oauth_resource_same(iss, issuer)) {
        as_err_set(err, "the authorization-server metadata names another issuer than the "
                        "server it was fetched from; refused");
    } else if (pk && (!json_is_array(pk) || !lists(pk, "S256"))) {
        as_err_set(err, "the authorization server does not offer PKCE with S256; refused");
    } else if (endpoint(o, "authorization_endpoint", true, &out->authorization_endpoint, err) ==
                   0 &&
               endpoint(o, "token_endpoint", true, &out->token_endpoint, err) == 0 &&
               endpoint(o, "registration_endpoint", false, &out->registration_endpoint, err) == 0 &&
               endpoint(o, "revocation_endpoint", false, &out->revocation_endpoint, err) == 0) {
        out->issuer = xstrdup(iss);
        rc = 0;
    }
    if (rc < 0)
        oauth_asm_free(out);
    json_decref(o);
    return rc;
}

/* ---- tokens --------------------------------------------------------------------- */

void oauth_tokens_free(struct oauth_tokens *t)
{
    if (t->access_token) {
        explicit_bzero(t->access_token, strlen(t->access_token));
        free(t->access_token);
    }
    if (t->refresh_token) {
        explicit_bzero(t->refresh_token, strlen(t->refresh_token));
        free(t->refresh_token);
    }
    free(t->scope);
    memset(t, 0, sizeof *t);
}

static bool token_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > OAUTH_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

static int b64url_decode(const char *s, size_t n, strbuf *out)
{
    strbuf std = SB_INIT;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (!isalnum((unsigned char)c)) {
            sb_release(&std);
            return -1;
        }
        sb_addc(&std, c);
    }
    while (std.len % 4)
        sb_addc(&std, '=');
    int rc = base64_decode(std.buf, std.len, out);
    sb_release(&std);
    return rc;
}

int oauth_aud_check(const char *token, const char *resource, struct as_err *err)
{
    const char *d1 = strchr(token, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.'))
        return 0; /* opaque */
    strbuf payload = SB_INIT;
    if (b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &payload) < 0) {
        sb_release_secure(&payload);
        return 0; /* dots, but no JWT: opaque */
    }
    json_error_t je;
    json_t *claims = json_loadb(payload.buf, payload.len, 0, &je);
    sb_release_secure(&payload);
    if (!json_is_object(claims)) {
        if (claims)
            json_decref(claims);
        return 0;
    }
    json_t *aud = json_object_get(claims, "aud");
    int rc = 0;
    if (aud) {
        bool named = false;
        if (json_is_string(aud))
            named = oauth_resource_same(json_string_value(aud), resource);
        size_t i;
        json_t *a;
        json_array_foreach(aud, i, a)
        {
            if (json_is_string(a) && oauth_resource_same(json_string_value(a), resource))
                named = true;
        }
        if (!named)
            rc = as_err_set(err, "the access token's audience is not this server; refused");
    }
    json_decref(claims);
    return rc;
}

int oauth_token_check(const char *body, size_t len, const char *resource, struct oauth_tokens *out,
                      struct as_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = load_object(body, len, "token answer", err);
    if (!o)
        return -1;
    int rc = -1;
    const char *at = str_member(o, "access_token");
    const char *tt = str_member(o, "token_type");
    json_t *rt = json_object_get(o, "refresh_token");
    json_t *ex = json_object_get(o, "expires_in");
    json_t *sc = json_object_get(o, "scope");
    if (!at || !token_ok(at))
        as_err_set(err, "the token answer's access_token is missing or malformed; refused");
    else if (!tt || strcasecmp(tt, "Bearer") != 0)
        as_err_set(err, "the token answer is not a Bearer token; refused");
    else if (rt && (!json_is_string(rt) || !token_ok(json_string_value(rt))))
        as_err_set(err, "the token answer's refresh_token is malformed; refused");
    else if (ex && (!json_is_integer(ex) || json_integer_value(ex) < 0))
        as_err_set(err, "the token answer's expires_in is not a non-negative integer; refused");
    else if (sc && !json_is_string(sc))
        as_err_set(err, "the token answer's scope is not a string; refused");
    else if (oauth_aud_check(at, resource, err) == 0)
        rc = 0;
    if (rc == 0) {
        out->access_token = xstrdup(at);
        out->refresh_token = rt ? xstrdup(json_string_value(rt)) : NULL;
        out->scope = sc ? xstrdup(json_string_value(sc)) : NULL;
        out->expires_in = ex ? (long long)json_integer_value(ex) : 0;
    }
    json_decref(o);
    return rc;
}

/* ---- PKCE and forms ---------------------------------------------------------------- */

void oauth_b64url(const void *data, size_t len, strbuf *out)
{
    strbuf std = SB_INIT;
    base64_encode(data, len, &std);
    for (size_t i = 0; i < std.len; i++) {
        char c = std.buf[i];
        if (c == '=')
            break;
        sb_addc(out, c == '+' ? '-' : c == '/' ? '_' : c);
    }
    sb_release(&std);
}

int oauth_pkce_verifier(strbuf *out, struct as_err *err)
{
    unsigned char r[32];
    if (rand_bytes(r, sizeof r, err) < 0)
        return -1;
    oauth_b64url(r, sizeof r, out);
    explicit_bzero(r, sizeof r);
    return 0;
}

void oauth_pkce_challenge(const char *verifier, strbuf *out)
{
    uint8_t d[SHA256_LEN];
    sha256(verifier, strlen(verifier), d);
    oauth_b64url(d, sizeof d, out);
}

static void urlencode(strbuf *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
            sb_addc(out, (char)c);
        else
            sb_addf(out, "%%%02X", c);
    }
}

void oauth_form_add(strbuf *form, const char *k, const char *v)
{
    if (form->len)
        sb_addc(form, '&');
    urlencode(form, k);
    sb_addc(form, '=');
    urlencode(form, v);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int urldecode(const char *s, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            sb_addc(out, ' ');
        } else if (s[i] == '%') {
            int a = i + 1 < n ? hexval(s[i + 1]) : -1;
            int b = i + 2 < n ? hexval(s[i + 2]) : -1;
            int h = a < 0 || b < 0 ? -1 : a * 16 + b;
            if (h <= 0)
                return -1; /* malformed, or a NUL */
            sb_addc(out, (char)h);
            i += 2;
        } else {
            sb_addc(out, s[i]);
        }
    }
    return 0;
}

int oauth_query_get(const char *query, const char *key, strbuf *out)
{
    size_t kl = strlen(key);
    int found = 0;
    for (const char *p = query; p && *p;) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        size_t nl = eq ? (size_t)(eq - p) : n;
        if (nl == kl && memcmp(p, key, kl) == 0) {
            if (found)
                return -1;
            found = 1;
            if (eq && urldecode(eq + 1, n - nl - 1, out) < 0)
                return -1;
        }
        p += n;
        if (*p == '&')
            p++;
    }
    return found;
}
