/* Lifting inline secrets into ${REF}s (value shapes; docs/secrets.md): header
 * schemes kept, env key rules and their exclusions, args and URL forms,
 * equal values share one ref, clashes and taken names get _2, refs are
 * never lifted again; and the emitted manifest loads back. */
#include "testutil.h"

#include "bundle/manifest.h"
#include "onboard/onboard.h"

static struct onb_server *add(struct onb_import *im, const char *name, bool http)
{
    struct onb_server s = {0};
    s.name = strdup(name);
    s.http = http;
    vec_push(&im->servers, s);
    return &im->servers.v[im->servers.n - 1];
}

static void kv(strvec *k, strvec *v, const char *key, const char *val)
{
    strvec_push(k, key);
    strvec_push(v, val);
}

static const struct onb_lift *find(const onb_lifts *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return &l->v[i];
    return NULL;
}

static int taken_cb(void *ctx, const char *name, const char *value)
{
    (void)ctx;
    if (strcmp(name, "HELD_TOKEN") == 0)
        return strcmp(value, "same-value-123") == 0 ? 1 : 2;
    return 0;
}

static void test_rules(void **state)
{
    (void)state;
    struct onb_import im = {0};
    struct onb_server *gh = add(&im, "git-hub", true);
    gh->url = strdup("https://api.example.com/mcp");
    kv(&gh->hdr_keys, &gh->hdr_vals, "Authorization", "Bearer abcdef123");
    kv(&gh->hdr_keys, &gh->hdr_vals, "X-Api-Key", "short"); /* < 6: kept */
    kv(&gh->hdr_keys, &gh->hdr_vals, "Accept", "application/json");
    kv(&gh->hdr_keys, &gh->hdr_vals, "X-Ref", "Bearer ${ALREADY}"); /* a ref: kept */
    struct onb_server *st = add(&im, "tool", false);
    st->command = strdup("npx");
    strvec_push(&st->args, "--token");
    strvec_push(&st->args, "tok-value-99");
    strvec_push(&st->args, "--api-key=key-value-77");
    strvec_push(&st->args, "ghp_Fx7Kq2Lm9Rt4Vw8Yz3Bc6Dn1Gh5Jp0Ts2Uv");
    strvec_push(&st->args, "--port=8080");
    kv(&st->env_keys, &st->env_vals, "MY_PAT", "abcdef123");             /* same value as gh */
    kv(&st->env_keys, &st->env_vals, "KEY_FILE", "/etc/key.pem");        /* a path: kept */
    kv(&st->env_keys, &st->env_vals, "SECRET_URL", "https://x.invalid"); /* a URL: kept */
    kv(&st->env_keys, &st->env_vals, "LOG_LEVEL", "debug");
    kv(&st->env_keys, &st->env_vals, "SLACK", "xoxb-2231-88ab-Zq9Lw"); /* by shape */
    kv(&st->env_keys, &st->env_vals, "HELD_TOKEN", "other-value-456"); /* taken → _2 */
    struct onb_server *u = add(&im, "docs", true);
    u->url = strdup("https://user:pa55word@docs.example.com/mcp?api_key=qwerty123&lang=en");

    onb_lifts l = VEC_INIT;
    onb_lift_secrets(&im, taken_cb, NULL, &l);

    assert_string_equal(gh->hdr_vals.v[0], "Bearer ${GIT_HUB_TOKEN}");
    assert_string_equal(gh->hdr_vals.v[1], "short");
    assert_string_equal(gh->hdr_vals.v[2], "application/json");
    assert_string_equal(gh->hdr_vals.v[3], "Bearer ${ALREADY}");
    /* equal values share one ref, wherever they appear */
    assert_string_equal(st->env_vals.v[0], "${GIT_HUB_TOKEN}");
    assert_int_equal(find(&l, "GIT_HUB_TOKEN")->where.n, 2);
    assert_string_equal(find(&l, "GIT_HUB_TOKEN")->value, "abcdef123");
    assert_string_equal(st->env_vals.v[1], "/etc/key.pem");
    assert_string_equal(st->env_vals.v[2], "https://x.invalid");
    assert_string_equal(st->env_vals.v[3], "debug");
    assert_string_equal(st->env_vals.v[4], "${SLACK}");
    assert_string_equal(st->env_vals.v[5], "${HELD_TOKEN_2}");
    assert_string_equal(st->args.v[0], "--token");
    assert_string_equal(st->args.v[1], "${TOKEN}");
    assert_string_equal(st->args.v[2], "--api-key=${API_KEY}");
    assert_string_equal(st->args.v[3], "${TOOL_TOKEN}");
    assert_string_equal(st->args.v[4], "--port=8080");
    assert_string_equal(u->url,
                        "https://user:${DOCS_PASSWORD}@docs.example.com/mcp?api_key=${API_KEY_2}"
                        "&lang=en");
    assert_string_equal(find(&l, "DOCS_PASSWORD")->value, "pa55word");
    assert_string_equal(find(&l, "API_KEY_2")->value, "qwerty123");
    /* lifting again finds nothing: refs are never secrets */
    onb_lifts l2 = VEC_INIT;
    onb_lift_secrets(&im, NULL, NULL, &l2);
    assert_int_equal(l2.n, 0);

    /* the emitted manifest loads and holds no value */
    strbuf text = SB_INIT;
    onb_manifest_text(&im, &text);
    assert_null(strstr(text.buf, "abcdef123"));
    assert_null(strstr(text.buf, "pa55word"));
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = "/p/.agentstack/agentstack.toml",
                                  .data = text.buf,
                                  .len = text.len};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    assert_non_null(m);
    assert_int_equal(m->servers.n, 3);
    const struct mf_server *ms = manifest_server(m, "tool");
    assert_non_null(ms);
    assert_string_equal(ms->args.v[2], "--api-key=${API_KEY}");
    assert_non_null(manifest_toolset(m, "default"));
    manifest_free(m);
    sb_release(&text);
    onb_lifts_free(&l);
    onb_lifts_free(&l2);
    onb_import_free(&im);
}

static void test_taken_same_value_reused(void **state)
{
    (void)state;
    struct onb_import im = {0};
    struct onb_server *s = add(&im, "x", false);
    s->command = strdup("run");
    kv(&s->env_keys, &s->env_vals, "HELD_TOKEN", "same-value-123");
    onb_lifts l = VEC_INIT;
    onb_lift_secrets(&im, taken_cb, NULL, &l);
    assert_int_equal(l.n, 1);
    assert_true(l.v[0].reused); /* a store already holds it: not stored again */
    assert_string_equal(s->env_vals.v[0], "${HELD_TOKEN}");
    onb_lifts_free(&l);
    onb_import_free(&im);
}

static void test_starter_loads(void **state)
{
    (void)state;
    strbuf t = SB_INIT;
    onb_starter_text(&t);
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT, .path = "/p/agentstack.toml", .data = t.buf, .len = t.len};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    assert_non_null(m);
    assert_int_equal(m->servers.n, 0);
    manifest_free(m);
    sb_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_taken_same_value_reused),
        cmocka_unit_test(test_starter_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
