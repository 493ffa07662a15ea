/* oauth/meta.c: every refusal of what the network said, fed the hostile
 * document, and PKCE against the RFC 7636 example (docs/oauth.md). */
#include "testutil.h"

#include <string.h>

#include "oauth/oauth.h"

#define SRV "https://mcp.example.com/mcp"

static void test_pkce_rfc7636_vector(void **state)
{
    (void)state;
    strbuf c = SB_INIT;
    oauth_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", &c);
    assert_string_equal(c.buf, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    sb_release(&c);
    strbuf v1 = SB_INIT, v2 = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(oauth_pkce_verifier(&v1, &err), 0);
    assert_int_equal(oauth_pkce_verifier(&v2, &err), 0);
    assert_int_equal(v1.len, 43); /* within 43..128, unreserved characters only */
    assert_int_equal(strspn(v1.buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789-_"),
                     43);
    assert_string_not_equal(v1.buf, v2.buf);
    sb_release(&v1);
    sb_release(&v2);
}

static void test_url_rules(void **state)
{
    (void)state;
    const char *why;
    assert_true(oauth_url_secure("https://as.example.com/", &why));
    assert_true(oauth_url_secure("http://127.0.0.1:8080/x", &why));
    assert_true(oauth_url_secure("http://localhost:1/", &why));
    assert_true(oauth_url_secure("http://[::1]:9/", &why));
    assert_false(oauth_url_secure("http://as.example.com/", &why));
    assert_non_null(strstr(why, "https is required"));
    assert_false(oauth_url_secure("http://127.0.0.1.evil.example/", &why));
    assert_false(oauth_url_secure("https://user:pw@as.example.com/", &why));
    assert_false(oauth_url_secure("ftp://as.example.com/", &why));
    assert_true(oauth_resource_same("HTTPS://MCP.example.com:443/mcp/", SRV));
    assert_false(oauth_resource_same("https://mcp.example.com/mcp2", SRV));
    assert_false(oauth_resource_same("https://mcp.example.com:8443/mcp", SRV));
    strbuf w = SB_INIT;
    oauth_well_known("https://as.example.com/tenant1/", "oauth-authorization-server", &w);
    assert_string_equal(w.buf,
                        "https://as.example.com/.well-known/oauth-authorization-server/tenant1");
    sb_release(&w);
}

static void test_www_authenticate(void **state)
{
    (void)state;
    strbuf v = SB_INIT;
    const char *h = "Basic realm=\"x\", Bearer error=\"invalid_token\", "
                    "resource_metadata=\"https://mcp.example.com/.well-known/"
                    "oauth-protected-resource/mcp\", scope=mcp";
    assert_int_equal(oauth_www_auth_param(h, "resource_metadata", &v), 1);
    assert_string_equal(v.buf, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    sb_reset(&v);
    assert_int_equal(oauth_www_auth_param(h, "scope", &v), 1);
    assert_string_equal(v.buf, "mcp");
    sb_reset(&v);
    /* a parameter of another scheme is not the Bearer one */
    assert_int_equal(
        oauth_www_auth_param("Basic resource_metadata=\"https://e/\"", "resource_metadata", &v), 0);
    assert_int_equal(oauth_www_auth_param(NULL, "scope", &v), 0);
    sb_release(&v);
}

static int prm(const char *doc, struct as_err *err)
{
    struct oauth_prm p;
    int rc = oauth_prm_check(doc, strlen(doc), SRV, &p, err);
    if (rc == 0)
        oauth_prm_free(&p);
    return rc;
}

static void test_protected_resource_metadata(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct oauth_prm p;
    const char *ok = "{\"resource\":\"" SRV "\",\"authorization_servers\":"
                     "[\"https://as.example.com\"],\"scopes_supported\":[\"a\",\"b\"]}";
    assert_int_equal(oauth_prm_check(ok, strlen(ok), SRV, &p, &err), 0);
    assert_string_equal(p.servers.v[0], "https://as.example.com");
    assert_string_equal(p.scope, "a b");
    oauth_prm_free(&p);
    assert_int_equal(prm("{\"resource\":\"https://evil.example/mcp\",\"authorization_servers\":"
                         "[\"https://as.example.com\"]}",
                         &err),
                     -1);
    assert_non_null(strstr(err.msg, "another resource"));
    assert_int_equal(prm("{\"resource\":\"" SRV "\",\"authorization_servers\":"
                         "[\"http://as.example.com\"]}",
                         &err),
                     -1);
    assert_non_null(strstr(err.msg, "https is required"));
    assert_int_equal(prm("{\"resource\":\"" SRV "\",\"authorization_servers\":[]}", &err), -1);
    assert_int_equal(prm("{\"authorization_servers\":[\"https://as.example.com\"]}", &err), -1);
    assert_int_equal(prm("[1]", &err), -1);
    assert_int_equal(prm("{\"resource\":\"" SRV "\",\"resource\":\"" SRV "\"}", &err), -1);
}

static int asm_(const char *doc, struct as_err *err)
{
    struct oauth_asm a;
    int rc = oauth_asm_check(doc, strlen(doc), "https://as.example.com", &a, err);
    if (rc == 0)
        oauth_asm_free(&a);
    return rc;
}

#define ENDPOINTS                                                                                  \
    "\"authorization_endpoint\":\"https://as.example.com/authorize\","                             \
    "\"token_endpoint\":\"https://as.example.com/token\""

static void test_authorization_server_metadata(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(asm_("{\"issuer\":\"https://as.example.com/\"," ENDPOINTS
                          ",\"code_challenge_methods_supported\":[\"S256\"]}",
                          &err),
                     0);
    assert_int_equal(asm_("{\"issuer\":\"https://other.example.com\"," ENDPOINTS "}", &err), -1);
    assert_non_null(strstr(err.msg, "another issuer"));
    assert_int_equal(asm_("{\"issuer\":\"http://as.example.com\"," ENDPOINTS "}", &err), -1);
    assert_non_null(strstr(err.msg, "https is required"));
    assert_int_equal(asm_("{\"issuer\":\"https://as.example.com\"," ENDPOINTS
                          ",\"code_challenge_methods_supported\":[\"plain\"]}",
                          &err),
                     -1);
    assert_non_null(strstr(err.msg, "S256"));
    assert_int_equal(asm_("{\"issuer\":\"https://as.example.com\",\"authorization_endpoint\":"
                          "\"https://as.example.com/a\",\"token_endpoint\":\"http://evil/t\"}",
                          &err),
                     -1);
    assert_non_null(strstr(err.msg, "token_endpoint"));
    assert_int_equal(asm_("{\"issuer\":\"https://as.example.com\",\"token_endpoint\":"
                          "\"https://as.example.com/t\"}",
                          &err),
                     -1);
}

static char *jwt(const char *payload)
{
    strbuf s = SB_INIT;
    oauth_b64url("{\"alg\":\"none\"}", 14, &s);
    sb_addc(&s, '.');
    oauth_b64url(payload, strlen(payload), &s);
    sb_adds(&s, ".c2ln");
    return sb_detach(&s, NULL);
}

static void test_audience(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(oauth_aud_check("opaque-token", SRV, &err), 0);
    char *good = jwt("{\"aud\":\"" SRV "\"}");
    char *list = jwt("{\"aud\":[\"x\",\"" SRV "/\"]}");
    char *bad = jwt("{\"aud\":\"https://other.example/mcp\"}");
    char *none = jwt("{\"sub\":\"me\"}");
    assert_int_equal(oauth_aud_check(good, SRV, &err), 0);
    assert_int_equal(oauth_aud_check(list, SRV, &err), 0);
    assert_int_equal(oauth_aud_check(none, SRV, &err), 0);
    assert_int_equal(oauth_aud_check(bad, SRV, &err), -1);
    assert_non_null(strstr(err.msg, "audience"));
    assert_null(strstr(err.msg, bad)); /* the token is never in the message */
    free(good);
    free(list);
    free(bad);
    free(none);
}

static int tok(const char *doc, struct as_err *err)
{
    struct oauth_tokens t;
    int rc = oauth_token_check(doc, strlen(doc), SRV, &t, err);
    if (rc == 0)
        oauth_tokens_free(&t);
    return rc;
}

static void test_token_answer(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct oauth_tokens t;
    const char *ok = "{\"access_token\":\"at-1\",\"token_type\":\"bearer\",\"expires_in\":60,"
                     "\"refresh_token\":\"rt-1\",\"scope\":\"mcp\"}";
    assert_int_equal(oauth_token_check(ok, strlen(ok), SRV, &t, &err), 0);
    assert_string_equal(t.access_token, "at-1");
    assert_string_equal(t.refresh_token, "rt-1");
    assert_int_equal(t.expires_in, 60);
    oauth_tokens_free(&t);
    assert_int_equal(tok("{\"token_type\":\"Bearer\"}", &err), -1);
    assert_int_equal(tok("{\"access_token\":\"a b\",\"token_type\":\"Bearer\"}", &err), -1);
    assert_int_equal(tok("{\"access_token\":\"at\",\"token_type\":\"mac\"}", &err), -1);
    assert_int_equal(
        tok("{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"expires_in\":-1}", &err), -1);
    assert_int_equal(
        tok("{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"expires_in\":\"9\"}", &err), -1);
    assert_int_equal(
        tok("{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"refresh_token\":7}", &err), -1);
    assert_int_equal(tok("not json", &err), -1);
    /* an oversized answer is refused before it is parsed */
    strbuf big = SB_INIT;
    sb_adds(&big, "{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"pad\":\"");
    sb_addchars(&big, 'x', OAUTH_BODY_MAX);
    sb_adds(&big, "\"}");
    assert_int_equal(oauth_token_check(big.buf, big.len, SRV, &t, &err), -1);
    assert_non_null(strstr(err.msg, "bytes"));
    sb_release(&big);
    strbuf huge = SB_INIT;
    sb_adds(&huge, "{\"token_type\":\"Bearer\",\"access_token\":\"");
    sb_addchars(&huge, 'a', OAUTH_TOKEN_MAX + 1);
    sb_adds(&huge, "\"}");
    assert_int_equal(tok(huge.buf, &err), -1);
    sb_release(&huge);
}

static void test_query_and_form(void **state)
{
    (void)state;
    strbuf v = SB_INIT;
    assert_int_equal(oauth_query_get("code=a%2Fb&state=s1", "code", &v), 1);
    assert_string_equal(v.buf, "a/b");
    sb_reset(&v);
    assert_int_equal(oauth_query_get("state=a&state=b", "state", &v), -1); /* repeated */
    sb_reset(&v);
    assert_int_equal(oauth_query_get("code=%00", "code", &v), -1); /* NUL */
    sb_reset(&v);
    assert_int_equal(oauth_query_get("code=%zz", "code", &v), -1);
    sb_reset(&v);
    assert_int_equal(oauth_query_get("codex=1", "code", &v), 0);
    sb_release(&v);
    strbuf f = SB_INIT;
    oauth_form_add(&f, "redirect_uri", "http://127.0.0.1:5/callback");
    oauth_form_add(&f, "x", "a b&c");
    assert_string_equal(f.buf, "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&x=a%20b%26c");
    sb_release(&f);
}

static void test_secret_names_injective(void **state)
{
    (void)state;
    const char *names[] = {"a-b", "a_b", "a.b", "a__b", "a_hb", "a-h", "ab"};
    strbuf seen[7];
    for (size_t i = 0; i < 7; i++) {
        sb_init(&seen[i], 0);
        oauth_secret_name(names[i], &seen[i]);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(seen[i].buf, seen[k].buf);
    }
    assert_string_equal(seen[0].buf, "AGENTSTACK_OAUTH_A_HB");
    for (size_t i = 0; i < 7; i++)
        sb_release(&seen[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pkce_rfc7636_vector),
        cmocka_unit_test(test_url_rules),
        cmocka_unit_test(test_www_authenticate),
        cmocka_unit_test(test_protected_resource_metadata),
        cmocka_unit_test(test_authorization_server_metadata),
        cmocka_unit_test(test_audience),
        cmocka_unit_test(test_token_answer),
        cmocka_unit_test(test_query_and_form),
        cmocka_unit_test(test_secret_names_injective),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
