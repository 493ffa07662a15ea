/*
 * libFuzzer target: what the network says to an OAuth login (oauth/meta.c,
 * docs/oauth.md). The first byte picks the reader, the rest is the
 * document: a WWW-Authenticate header, protected-resource metadata,
 * authorization-server metadata, a token answer, an access token (its JWT
 * audience), or a redirect's query string. No input may crash or leak, and
 * whatever a check accepts must hold what the check promises: every URL
 * it keeps is one oauth_url_secure accepts, the resource names the server,
 * the issuer is the one asked for, a token is visible ASCII within the cap.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oauth/oauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SRV "https://mcp.example.com/mcp"
#define ISS "https://as.example.com"

static void must_be_secure(const char *u)
{
    const char *why;
    if (u && !oauth_url_secure(u, &why))
        abort();
}

static void token_ok(const char *t)
{
    if (!t)
        return;
    size_t n = strlen(t);
    if (!n || n > OAUTH_TOKEN_MAX)
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x21 || (unsigned char)t[i] > 0x7e)
            abort();
}

static void one(unsigned char which, const char *s, size_t n)
{
    struct as_err err = AS_ERR_INIT;
    strbuf v = SB_INIT;
    switch (which % 6) {
    case 0:
        oauth_www_auth_param(s, "resource_metadata", &v);
        oauth_www_auth_param(s, "scope", &v);
        break;
    case 1: {
        struct oauth_prm p;
        if (oauth_prm_check(s, n, SRV, &p, &err) == 0) {
            if (!oauth_resource_same(p.resource, SRV) || !p.servers.n)
                abort();
            for (size_t i = 0; i < p.servers.n; i++)
                must_be_secure(p.servers.v[i]);
            oauth_prm_free(&p);
        }
        break;
    }
    case 2: {
        struct oauth_asm a;
        if (oauth_asm_check(s, n, ISS, &a, &err) == 0) {
            if (!oauth_resource_same(a.issuer, ISS) || !a.authorization_endpoint ||
                !a.token_endpoint)
                abort();
            must_be_secure(a.authorization_endpoint);
            must_be_secure(a.token_endpoint);
            must_be_secure(a.registration_endpoint);
            must_be_secure(a.revocation_endpoint);
            oauth_asm_free(&a);
        }
        break;
    }
    case 3: {
        struct oauth_tokens t;
        if (oauth_token_check(s, n, SRV, &t, &err) == 0) {
            token_ok(t.access_token);
            token_ok(t.refresh_token);
            if (!t.access_token || t.expires_in < 0)
                abort();
            oauth_tokens_free(&t);
        }
        break;
    }
    case 4:
        oauth_aud_check(s, SRV, &err);
        break;
    default:
        oauth_query_get(s, "code", &v);
        oauth_query_get(s, "state", &v);
        break;
    }
    sb_release(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1 << 17))
        return 0;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0'; /* the readers take NUL-terminated text where they must */
    one(data[0], s, strlen(s));
    free(s);
    return 0;
}
