/* tools_bindings' client.ts (docs/gateway.md): sorted by server then tool, shallow
 * TypeScript input types, names that are not identifiers quoted, hostile
 * descriptions unable to end their comment, no endpoint path when none is
 * open, and the same static shim every time. */
#include "testutil.h"

#include "base/xalloc.h"
#include "gateway/gw_int.h"

static struct gw_tool tool(const char *server, const char *name, const char *desc,
                           const char *schema)
{
    struct gw_tool t = {0};
    t.server = xstrdup(server);
    t.name = xstrdup(name);
    t.full = xasprintf("%s__%s", server, name);
    t.desc = xstrdup(desc);
    json_error_t je;
    t.schema = json_loads(schema, 0, &je);
    assert_non_null(t.schema);
    return t;
}

static void tool_free(struct gw_tool *t)
{
    free(t->server);
    free(t->name);
    free(t->full);
    free(t->desc);
    json_decref(t->schema);
}

static void test_render(void **state)
{
    (void)state;
    struct gw_tool t[4];
    t[0] = tool("zeta", "b", "[via zeta] second", "{\"type\":\"object\"}");
    t[1] = tool("my-srv", "get.x", "[via my-srv] ends */ early",
                "{\"type\":\"object\",\"properties\":{"
                "\"q\":{\"type\":\"string\"},"
                "\"n\":{\"type\":\"integer\"},"
                "\"mode\":{\"enum\":[\"a\",\"b\\\"c\"]},"
                "\"x-y\":{\"type\":[\"string\",\"null\"]},"
                "\"deep\":{\"type\":\"object\",\"properties\":{\"z\":{\"type\":\"string\"}}},"
                "\"list\":{\"type\":\"array\"},\"odd\":{}},"
                "\"required\":[\"q\",\"mode\"]}");
    t[2] = tool("zeta", "a", "[via zeta] first", "{\"type\":\"object\",\"properties\":{}}");
    t[3] = tool("alpha", "run", "",
                "{\"type\":\"object\",\"properties\":{\"ok\":"
                "{\"type\":\"boolean\"}},\"required\":[\"ok\"]}");
    const struct gw_tool *v[4] = {&t[0], &t[1], &t[2], &t[3]};
    strbuf out = SB_INIT;
    gw_bindings_render(v, 4, "/home/u/.agentstack/gateway/42/endpoint.json", &out);
    const char *s = out.buf;
    assert_non_null(strstr(s, "# Code-mode bindings: 4 proxied tool(s)"));
    assert_non_null(strstr(s, "export AGENTSTACK_CODEMODE_ENDPOINT='/home/u/.agentstack/gateway/42/"
                              "endpoint.json'"));
    /* sorted: alpha, my-srv, zeta (a before b) */
    const char *pa = strstr(s, "  alpha: {\n"), *pm = strstr(s, "  \"my-srv\": {\n"),
               *pz = strstr(s, "  zeta: {\n");
    assert_true(pa && pm && pz && pa < pm && pm < pz);
    const char *za = strstr(s, "call(\"zeta__a\", input)"),
               *zb = strstr(s, "call(\"zeta__b\", input)");
    assert_true(za && zb && za < zb);
    assert_non_null(strstr(s, "    run: (input: { ok: boolean; }): Promise<unknown> => "
                              "call(\"alpha__run\", input),\n"));
    assert_non_null(strstr(s, "    \"get.x\": (input: { q: string; n?: number; mode: \"a\" | "
                              "\"b\\\"c\"; \"x-y\"?: string | null; deep?: Record<string, "
                              "unknown>; list?: unknown[]; odd?: unknown; }): Promise<unknown> "
                              "=> call(\"my-srv__get.x\", input),\n"));
    assert_non_null(strstr(s, "    a: (input: Record<string, unknown>): Promise<unknown> => "
                              "call(\"zeta__a\", input),\n"));
    /* a description cannot close its comment early */
    assert_non_null(strstr(s, "/** [via my-srv] ends * / early */"));
    assert_null(strstr(s, "ends */ early"));
    /* the shim is static: the same bytes with or without an endpoint */
    const char *shim = strstr(s, "## agentstack-shim.ts");
    assert_non_null(shim);
    strbuf none = SB_INIT;
    gw_bindings_render(v, 4, NULL, &none);
    assert_non_null(strstr(none.buf, "no endpoint is open"));
    assert_null(strstr(none.buf, "export AGENTSTACK_CODEMODE_ENDPOINT="));
    const char *shim2 = strstr(none.buf, "## agentstack-shim.ts");
    assert_non_null(shim2);
    assert_string_equal(shim, shim2);
    assert_null(strstr(shim, "/home/u"));
    sb_release(&none);
    sb_release(&out);
    for (int i = 0; i < 4; i++)
        tool_free(&t[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
