/* JSON / JSONC merge: only our entries change, every other byte survives. */
#include "testutil.h"

#include <jansson.h>

#include "adapters/merge.h"
#include "base/vec.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", s, e.text);
    return v;
}

static json_t *docs_entry(void)
{
    return J("{\"type\":\"http\",\"url\":\"https://docs.example.test/mcp\","
             "\"headers\":{\"X-Api-Key\":\"k1\"}}");
}

static json_t *notes_entry(void)
{
    return J("{\"type\":\"stdio\",\"command\":\"uvx\",\"args\":[\"notes-mcp\",\"--ro\"],"
             "\"env\":{\"NOTES_TOKEN\":\"t1\"}}");
}

/* Runs a merge that must succeed; returns the output (malloc'd). */
static char *merge(const char *text, bool jsonc, const char *loc, const char *n1, json_t *v1,
                   const char *n2, json_t *v2, const char *rm)
{
    struct adp_json_entry ups[2];
    size_t nu = 0;
    if (n1)
        ups[nu++] = (struct adp_json_entry){n1, v1};
    if (n2)
        ups[nu++] = (struct adp_json_entry){n2, v2};
    const char *rms[1] = {rm};
    struct adp_json_edit ed = {jsonc, loc, ups, nu, rms, rm ? 1 : 0};
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (adp_json_merge("t.json", text, strlen(text), &ed, &out, &err) != 0)
        fail_msg("merge failed: %s", err.msg);
    return sb_detach(&out, NULL);
}

static void assert_valid_json(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, 0, &e);
    if (!v)
        fail_msg("output is not valid JSON (%s at %d:%d):\n%s", e.text, e.line, e.column, s);
    json_decref(v);
}

static const char *SPEC_CLAUDE = "{\n"
                                 "  \"mcpServers\": {\n"
                                 "    \"docs\": {\n"
                                 "      \"type\": \"http\",\n"
                                 "      \"url\": \"https://docs.example.test/mcp\",\n"
                                 "      \"headers\": {\n"
                                 "        \"X-Api-Key\": \"k1\"\n"
                                 "      }\n"
                                 "    },\n"
                                 "    \"notes\": {\n"
                                 "      \"type\": \"stdio\",\n"
                                 "      \"command\": \"uvx\",\n"
                                 "      \"args\": [\n"
                                 "        \"notes-mcp\",\n"
                                 "        \"--ro\"\n"
                                 "      ],\n"
                                 "      \"env\": {\n"
                                 "        \"NOTES_TOKEN\": \"t1\"\n"
                                 "      }\n"
                                 "    }\n"
                                 "  }\n"
                                 "}\n";

/* Absent, empty, blank or {} → the new-file document exactly. */
static void test_fresh_documents(void **state)
{
    (void)state;
    const char *starts[] = {"", "{}", "  \n", "{ }\n"};
    for (size_t i = 0; i < 4; i++) {
        json_t *d = docs_entry(), *n = notes_entry();
        char *o = merge(starts[i], false, "mcpServers", "docs", d, "notes", n, NULL);
        assert_string_equal(o, SPEC_CLAUDE);
        free(o);
        json_decref(d);
        json_decref(n);
    }
}

/* Big app-owned file; only the section's value changes. */
static void test_claude_json_preserved(void **state)
{
    (void)state;
    const char *pre = "{\n  \"numStartups\": 42,\n  \"tipsHistory\": {\"x\": 0.9402052562189797},\n"
                      "  \"mcpServers\": ";
    const char *sec = "{\n    \"mine\": {\"command\": \"my-mcp\",   \"args\": []}\n  }";
    const char *post = ",\n  \"userID\": \"abc\",\n  \"big\": 1e400\n}";
    char *text = NULL;
    assert_true(asprintf(&text, "%s%s%s", pre, sec, post) > 0);
    json_t *d = docs_entry();
    char *o = merge(text, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    /* Everything outside the section value is byte-identical. */
    assert_memory_equal(o, pre, strlen(pre));
    assert_string_equal(o + strlen(o) - strlen(post), post);
    /* mine keeps its slot and its exact bytes; docs follows. */
    const char *mine = strstr(o, "\"mine\": {\"command\": \"my-mcp\",   \"args\": []},");
    const char *docs = strstr(o, "\"docs\": {");
    assert_non_null(mine);
    assert_non_null(docs);
    assert_true(mine < docs);
    /* Re-applying is a no-op. */
    char *o2 = merge(o, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_string_equal(o2, o);
    json_decref(d);
    free(text);
    free(o);
    free(o2);
}

static void test_section_inserted_after_brace(void **state)
{
    (void)state;
    json_t *d = docs_entry();
    char *o =
        merge("{\n  \"theme\": \"dark\"\n}", false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_true(strncmp(o, "{\n  \"mcpServers\": {\n    \"docs\": {\n", 33) == 0);
    assert_non_null(strstr(o, "  },\n  \"theme\": \"dark\"\n}"));
    assert_int_equal(o[strlen(o) - 1], '}'); /* no trailing newline added */
    assert_valid_json(o);
    free(o);
    /* Four-space files get four-space insertions. */
    o = merge("{\n    \"a\": 1\n}\n", false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_true(strncmp(o, "{\n    \"mcpServers\": {\n        \"docs\": {\n", 40) == 0);
    assert_valid_json(o);
    free(o);
    json_decref(d);
}

static void test_replace_only_changed_entry(void **state)
{
    (void)state;
    const char *text = "{\"mcpServers\": {\n  \"a\": {\"command\":\"x\"},\n"
                       "  \"docs\": {\"url\": \"old\"},\n  \"z\": {\"command\":\"y\"}\n}}";
    json_t *d = docs_entry();
    char *o = merge(text, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_non_null(strstr(o, "  \"a\": {\"command\":\"x\"},\n  \"docs\": {\n    \"type\""));
    assert_non_null(strstr(o, "  },\n  \"z\": {\"command\":\"y\"}\n}}"));
    assert_null(strstr(o, "old"));
    assert_valid_json(o);
    free(o);
    /* Equal as JSON but spelled differently: untouched. */
    const char *same = "{\"mcpServers\":{\"docs\":{\"type\":\"http\",\"url\":"
                       "\"https://docs.example.test/mcp\",\"headers\":{\"X-Api-Key\":\"k1\"}}}}";
    o = merge(same, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    assert_string_equal(o, same);
    free(o);
    json_decref(d);
}

static void test_remove_entries(void **state)
{
    (void)state;
    const char *text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                       "    \"b\": {\"command\": \"y\"},\n    \"c\": {\"command\": \"z\"}\n  },\n"
                       "  \"k\": 1\n}\n";
    char *o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "b");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                           "    \"c\": {\"command\": \"z\"}\n  },\n  \"k\": 1\n}\n");
    free(o);
    o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "c");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                           "    \"b\": {\"command\": \"y\"}\n  },\n  \"k\": 1\n}\n");
    free(o);
    o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "a");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"y\"},\n"
                           "    \"c\": {\"command\": \"z\"}\n  },\n  \"k\": 1\n}\n");
    free(o);
    o = merge(text, false, "mcpServers", NULL, NULL, NULL, NULL, "nope");
    assert_string_equal(o, text);
    free(o);
    /* Remove the last one and add a new one in the same edit. */
    json_t *d = J("{\"url\":\"u\"}");
    o = merge(text, false, "mcpServers", "d", d, NULL, NULL, "c");
    assert_string_equal(o, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n"
                           "    \"b\": {\"command\": \"y\"},\n    \"d\": {\n      \"url\": \"u\"\n"
                           "    }\n  },\n  \"k\": 1\n}\n");
    free(o);
    json_decref(d);
    /* Removing the only entry leaves an empty section. */
    o = merge("{\"mcpServers\": {\"a\": {}}, \"k\": 1}", false, "mcpServers", NULL, NULL, NULL,
              NULL, "a");
    assert_string_equal(o, "{\"mcpServers\": {}, \"k\": 1}");
    free(o);
}

static const char *JSONC_TEXT = "// VS Code MCP servers\n"
                                "{\n"
                                "  \"servers\": {\n"
                                "    // my hand-written server\n"
                                "    \"mine\": { \"command\": \"x\", }, // keep me\n"
                                "    /* block */ \"old\": {\"command\": \"y\"},\n"
                                "  },\n"
                                "  \"inputs\": [1, 2,],\n"
                                "}\n";

static void test_jsonc_comments_survive(void **state)
{
    (void)state;
    json_t *d = docs_entry();
    char *o = merge(JSONC_TEXT, true, "servers", "docs", d, NULL, NULL, "old");
    assert_true(strncmp(o,
                        "// VS Code MCP servers\n{\n  \"servers\": {\n"
                        "    // my hand-written server\n"
                        "    \"mine\": { \"command\": \"x\", }, // keep me\n",
                        103) == 0);
    assert_null(strstr(o, "\"old\""));
    assert_non_null(strstr(o, "    \"docs\": {\n      \"type\": \"http\","));
    assert_non_null(strstr(o, "  },\n  \"inputs\": [1, 2,],\n}\n"));
    json_t *sec = NULL;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(adp_json_read("t.json", o, strlen(o), true, "servers", &sec, &err), 0);
    assert_non_null(sec);
    assert_int_equal(json_object_size(sec), 2);
    assert_true(json_equal(json_object_get(sec, "docs"), d));
    json_decref(sec);
    /* Idempotent. */
    char *o2 = merge(o, true, "servers", "docs", d, NULL, NULL, "old");
    assert_string_equal(o2, o);
    free(o2);
    free(o);
    /* Comments are refused in strict JSON. */
    strbuf out = SB_INIT;
    struct adp_json_entry up = {"docs", d};
    struct adp_json_edit ed = {false, "servers", &up, 1, NULL, 0};
    assert_int_equal(adp_json_merge("v.json", JSONC_TEXT, strlen(JSONC_TEXT), &ed, &out, &err), -1);
    assert_non_null(strstr(err.msg, "existing config is not valid JSON"));
    assert_int_equal(err.line, 1);
    assert_int_equal(out.len, 0);
    json_decref(d);
}

static void test_malformed_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {"{\"a\": 1,}",      "{\"a\" 1}",           "[1,2]",
                         "{\"a\": tru}",     "{\"a\": 01}",         "{\"a\": \"x\ny\"}",
                         "{\"a\": 1} {}",    "{\"a\": {\"b\": [}}", "{",
                         "\"str\"",          "{\"a\": 1e}",         "{\"a\": \"\\q\"}",
                         "{\"a\":1 /* x */}"};
    json_t *d = docs_entry();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct adp_json_entry up = {"docs", d};
        struct adp_json_edit ed = {false, "mcpServers", &up, 1, NULL, 0};
        strbuf out = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (adp_json_merge("m.json", bad[i], strlen(bad[i]), &ed, &out, &err) != -1)
            fail_msg("accepted malformed %s", bad[i]);
        assert_non_null(strstr(err.msg, "existing config is not valid JSON"));
        assert_string_equal(err.path, "m.json");
        assert_true(err.line >= 1);
        assert_int_equal(out.len, 0);
    }
    /* Deep nesting is an error, not a stack overflow. */
    strbuf deep = SB_INIT;
    sb_adds(&deep, "{\"a\": ");
    for (int i = 0; i < 100000; i++)
        sb_addc(&deep, '[');
    struct adp_json_entry up = {"docs", d};
    struct adp_json_edit ed = {false, "mcpServers", &up, 1, NULL, 0};
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(adp_json_merge("d.json", deep.buf, deep.len, &ed, &out, &err), -1);
    assert_non_null(strstr(err.msg, "nested deeper"));
    sb_release(&deep);
    /* A duplicated section key is ambiguous. */
    const char *dup = "{\"mcpServers\": {}, \"mcpServers\": {}}";
    assert_int_equal(adp_json_merge("d.json", dup, strlen(dup), &ed, &out, &err), -1);
    assert_non_null(strstr(err.msg, "appears twice"));
    json_decref(d);
}

static void test_crlf_bom_and_no_trailing_newline(void **state)
{
    (void)state;
    const char *text = "\xEF\xBB\xBF{\r\n  \"mcpServers\": {\r\n    \"a\": {}\r\n  }\r\n}";
    json_t *d = J("{\"url\":\"u\"}");
    char *o = merge(text, false, "mcpServers", "d", d, NULL, NULL, NULL);
    assert_string_equal(o, "\xEF\xBB\xBF{\r\n  \"mcpServers\": {\r\n    \"a\": {},\r\n"
                           "    \"d\": {\r\n      \"url\": \"u\"\r\n    }\r\n  }\r\n}");
    free(o);
    json_decref(d);
}

static void test_root_variant_settings(void **state)
{
    (void)state;
    const char *text = "{\n  \"theme\": \"dark\",\n  \"model\": \"old\",\n  \"x\": [1]\n}\n";
    json_t *m = J("\"opus\"");
    json_t *e = J("\"high\"");
    char *o = merge(text, false, NULL, "model", m, "effortLevel", e, NULL);
    assert_string_equal(o, "{\n  \"effortLevel\": \"high\",\n  \"theme\": \"dark\",\n"
                           "  \"model\": \"opus\",\n  \"x\": [1]\n}\n");
    char *o2 = merge(o, false, NULL, NULL, NULL, NULL, NULL, "effortLevel");
    assert_string_equal(o2, "{\n  \"theme\": \"dark\",\n  \"model\": \"opus\",\n  \"x\": [1]\n}\n");
    free(o2);
    o2 = merge(o, false, NULL, NULL, NULL, NULL, NULL, "x");
    assert_string_equal(o2, "{\n  \"effortLevel\": \"high\",\n  \"theme\": \"dark\",\n"
                            "  \"model\": \"opus\"\n}\n");
    free(o2);
    free(o);
    o = merge("", false, NULL, "model", m, NULL, NULL, NULL);
    assert_string_equal(o, "{\n  \"model\": \"opus\"\n}\n");
    free(o);
    json_decref(m);
    json_decref(e);
}

/* A 10 MB file: unrelated bytes kept exactly. */
static void test_large_file(void **state)
{
    (void)state;
    strbuf big = SB_INIT;
    sb_adds(&big, "{\n  \"projects\": {\n");
    for (int i = 0; i < 160000; i++)
        sb_addf(&big, "    \"/p/%d\": {\"allowedTools\": [], \"history\": [\"x %d\", 1.50]},\n", i,
                i);
    sb_adds(&big, "    \"last\": {}\n  },\n  \"mcpServers\": {}\n}\n");
    assert_true(big.len > 10u * 1000 * 1000);
    json_t *d = docs_entry();
    char *o = merge(big.buf, false, "mcpServers", "docs", d, NULL, NULL, NULL);
    size_t pre = (size_t)(strstr(big.buf, "\"mcpServers\": {}") - big.buf) + 15;
    assert_memory_equal(o, big.buf, pre);
    assert_non_null(strstr(o + pre, "\"docs\""));
    assert_string_equal(o + strlen(o) - 3, "\n}\n");
    free(o);
    json_decref(d);
    sb_release(&big);
}

static void test_emit_rules(void **state)
{
    (void)state;
    json_t *v = J("{\"s\":\"a\\\"b\\\\c\\n\\u0001é/\",\"e\":{},\"a\":[],\"r\":0.1,\"i\":-3,"
                  "\"f\":2.0,\"n\":null,\"t\":true}");
    strbuf o = SB_INIT;
    adp_json_emit(v, "", "  ", "\n", &o);
    assert_string_equal(o.buf, "{\n  \"s\": \"a\\\"b\\\\c\\n\\u0001é/\",\n  \"e\": {},\n"
                               "  \"a\": [],\n  \"r\": 0.1,\n  \"i\": -3,\n  \"f\": 2.0,\n"
                               "  \"n\": null,\n  \"t\": true\n}");
    sb_release(&o);
    json_decref(v);
}

/* ---- property test: random documents, random formatting, random edits ---- */

static unsigned rng_state = 12345;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 16) % n;
}

static const char *ws(bool jsonc)
{
    static const char *const w[] = {"", " ", "\n", "\n  ", "\t", "\r\n    ", "  \n\n "};
    static const char *const c[] = {" // note\n", "/* c */", "\n// line\n  "};
    if (jsonc && rnd(5) == 0)
        return c[rnd(3)];
    return w[rnd(7)];
}

static void gen_value(strbuf *o, json_t **v, int depth, bool jsonc);

static void gen_object(strbuf *o, json_t **v, int depth, bool jsonc, int nkeys)
{
    json_t *obj = json_object();
    sb_addc(o, '{');
    for (int i = 0; i < nkeys; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", rnd(1000));
        if (json_object_get(obj, key))
            continue;
        if (json_object_size(obj))
            sb_addc(o, ',');
        sb_adds(o, ws(jsonc));
        sb_addf(o, "\"%s\"%s:%s", key, ws(false), ws(jsonc));
        json_t *x;
        gen_value(o, &x, depth + 1, jsonc);
        json_object_set_new(obj, key, x);
        sb_adds(o, ws(jsonc));
    }
    if (jsonc && json_object_size(obj) && rnd(3) == 0)
        sb_addc(o, ',');
    sb_adds(o, ws(jsonc));
    sb_addc(o, '}');
    *v = obj;
}

static void gen_value(strbuf *o, json_t **v, int depth, bool jsonc)
{
    unsigned k = depth > 3 ? rnd(4) : rnd(6);
    switch (k) {
    case 0:
        sb_adds(o, "0.9402052562189797");
        *v = json_real(0.9402052562189797);
        break;
    case 1:
        sb_addf(o, "%u", rnd(100));
        *v = json_integer((json_int_t)0);
        break;
    case 2:
        sb_adds(o, "\"s\\u00e9\\\"\"");
        *v = json_string("s\xc3\xa9\"");
        break;
    case 3:
        sb_adds(o, "null");
        *v = json_null();
        break;
    case 4: {
        json_t *a = json_array();
        sb_addc(o, '[');
        unsigned n = rnd(3);
        for (unsigned i = 0; i < n; i++) {
            if (i)
                sb_addc(o, ',');
            sb_adds(o, ws(jsonc));
            json_t *x;
            gen_value(o, &x, depth + 1, jsonc);
            json_array_append_new(a, x);
        }
        sb_addc(o, ']');
        *v = a;
        break;
    }
    default:
        gen_object(o, v, depth, jsonc, (int)rnd(4));
        break;
    }
}

static void test_property_random_edits(void **state)
{
    (void)state;
    int changed = 0, removed = 0, comments = 0;
    for (int iter = 0; iter < 3000; iter++) {
        bool jsonc = iter % 2;
        strbuf doc = SB_INIT;
        json_t *other = NULL;
        /* root: some keys, maybe the section somewhere among them */
        sb_adds(&doc, ws(jsonc));
        sb_addc(&doc, '{');
        sb_adds(&doc, ws(jsonc));
        bool has_sec = rnd(4) != 0;
        unsigned before_keys = rnd(3), after_keys = rnd(3);
        strvec names = STRVEC_INIT;
        for (unsigned i = 0; i < before_keys; i++) {
            sb_addf(&doc, "\"a%u\":%s", i, ws(jsonc));
            gen_value(&doc, &other, 1, jsonc);
            json_decref(other);
            sb_addf(&doc, ",%s", ws(jsonc));
        }
        if (has_sec) {
            sb_addf(&doc, "\"S\":%s{", ws(jsonc));
            unsigned n = rnd(5);
            for (unsigned i = 0; i < n; i++) {
                if (i)
                    sb_addc(&doc, ',');
                sb_adds(&doc, ws(jsonc));
                sb_addf(&doc, "\"n%u\":%s", i, ws(jsonc));
                gen_value(&doc, &other, 2, jsonc);
                json_decref(other);
                strvec_pushf(&names, "n%u", i);
            }
            if (jsonc && n && rnd(2))
                sb_addc(&doc, ',');
            sb_adds(&doc, ws(jsonc));
            sb_addf(&doc, "}%s", after_keys ? "," : "");
        }
        for (unsigned i = 0; i < after_keys; i++) {
            sb_addf(&doc, "%s\"z%u\":%s", ws(jsonc), i, ws(jsonc));
            gen_value(&doc, &other, 1, jsonc);
            json_decref(other);
            if (i + 1 < after_keys)
                sb_addc(&doc, ',');
        }
        if (!has_sec && before_keys && !after_keys) {
            /* drop the dangling comma written after the last "a" key */
            char *c = strrchr(doc.buf, ',');
            *c = ' ';
        }
        sb_adds(&doc, ws(jsonc));
        sb_addc(&doc, '}');
        if (rnd(2))
            sb_addc(&doc, '\n');

        struct as_err err = AS_ERR_INIT;
        json_t *root0 = NULL;
        if (adp_json_read("p.json", doc.buf, doc.len, jsonc, NULL, &root0, &err) != 0)
            fail_msg("generator produced invalid text (%s):\n%s", err.msg, doc.buf);

        /* edits: upsert some existing + new names, remove some */
        json_t *vals[4];
        struct adp_json_entry ups[4];
        size_t nu = 0;
        const char *rms[3];
        size_t nr = 0;
        char nbuf[4][8];
        for (unsigned i = 0; i < rnd(4); i++) {
            snprintf(nbuf[nu], sizeof nbuf[nu], "n%u", rnd(7));
            bool dup = false;
            for (size_t k = 0; k < nu; k++)
                dup |= strcmp(ups[k].name, nbuf[nu]) == 0;
            if (dup)
                continue;
            vals[nu] = json_pack("{s:s,s:[s,i]}", "command", nbuf[nu], "args", "x", (int)i);
            ups[nu] = (struct adp_json_entry){nbuf[nu], vals[nu]};
            nu++;
        }
        for (size_t i = 0; i < names.n && nr < 3; i++)
            if (rnd(3) == 0)
                rms[nr++] = names.v[i];
        struct adp_json_edit ed = {jsonc, "S", ups, nu, rms, nr};
        strbuf out = SB_INIT;
        if (adp_json_merge("p.json", doc.buf, doc.len, &ed, &out, &err) != 0)
            fail_msg("merge failed: %s\n%s", err.msg, doc.buf);
        json_t *root1 = NULL;
        if (adp_json_read("o.json", out.buf, out.len, jsonc, NULL, &root1, &err) != 0 || !root1)
            fail_msg("output invalid (%s):\n--- in\n%s\n--- out\n%s", err.msg, doc.buf, out.buf);
        if (!jsonc) {
            json_error_t je;
            json_t *strict = json_loadb(out.buf, out.len, 0, &je);
            if (!strict)
                fail_msg("strict output invalid: %s\n%s", je.text, out.buf);
            json_decref(strict);
        }
        /* expected section */
        json_t *want = json_deep_copy(json_object_get(root0, "S"));
        if (!json_is_object(want)) {
            json_decref(want);
            want = json_object();
        }
        for (size_t i = 0; i < nr; i++) {
            bool up = false;
            for (size_t k = 0; k < nu; k++)
                up |= strcmp(ups[k].name, rms[i]) == 0;
            if (!up)
                json_object_del(want, rms[i]);
        }
        for (size_t k = 0; k < nu; k++)
            json_object_set(want, ups[k].name, vals[k]);
        json_t *got = json_object_get(root1, "S");
        bool expect_sec = has_sec || nu;
        if (expect_sec && !json_equal(got, want))
            fail_msg("section differs\n--- in\n%s\n--- out\n%s", doc.buf, out.buf);
        /* everything else unchanged */
        json_object_del(root0, "S");
        json_object_del(root1, "S");
        if (!json_equal(root0, root1))
            fail_msg("other keys changed\n--- in\n%s\n--- out\n%s", doc.buf, out.buf);
        /* idempotent */
        strbuf again = SB_INIT;
        assert_int_equal(adp_json_merge("o.json", out.buf, out.len, &ed, &again, &err), 0);
        if (strcmp(again.buf, out.buf) != 0)
            fail_msg("second merge changed bytes\n--- once\n%s\n--- twice\n%s", out.buf, again.buf);
        if (nu == 0 && nr == 0 && strcmp(out.buf, doc.buf) != 0)
            fail_msg("an empty edit changed bytes");
        changed += strcmp(out.buf, doc.buf) != 0;
        removed += nr > 0 && strcmp(out.buf, doc.buf) != 0;
        comments += jsonc && strstr(out.buf, "//") != NULL;
        sb_release(&again);
        json_decref(want);
        json_decref(root0);
        json_decref(root1);
        for (size_t k = 0; k < nu; k++)
            json_decref(vals[k]);
        strvec_clear(&names);
        sb_release(&out);
        sb_release(&doc);
    }
    /* The generator must actually exercise edits, removals and comments. */
    assert_true(changed > 1000);
    assert_true(removed > 200);
    assert_true(comments > 200);
}

/* A value jansson cannot hold is refused where it starts, never cut short
 * ("x\u0000y" read as "x") or read as absent (a "\u0000" key used to make
 * the whole section vanish). */
static void test_unholdable_values_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool jsonc;
        unsigned line, col;
        const char *why;
    } cases[] = {
        {"{\"mcpServers\": {\"ok\": {\"command\": \"x\\u0000y\"}}}", false, 1, 35,
         "string contains \\u0000 (NUL), which agentstack refuses"},
        {"{\"mcpServers\": {\n  \"\\u0000\": {\"command\": \"a\"}}}", false, 2, 3,
         "string contains \\u0000"},
        {"{\"mcpServers\": {\"a\": {\"args\": [\"\\ud800\"]}}}", false, 1, 32,
         "unpaired surrogate escape"},
        {"{\"mcpServers\": {\"a\": {\"n\": 1e400}}}", false, 1, 28, "number out of range"},
        {"{\"mcpServers\": {\"a\": {\"n\": 123456789012345678901234567890}}}", false, 1, 28,
         "number out of range"},
        /* Comments and a trailing comma before it do not shift the column */
        {"{\"mcpServers\": { /* c */ \"a\": {\"c\": 1,}, // x\n  \"b\": \"\\u0000\"}}", true, 2, 8,
         "string contains \\u0000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *sec = NULL;
        struct as_err err = AS_ERR_INIT;
        const char *t = cases[i].text;
        assert_int_equal(
            adp_json_read("m.json", t, strlen(t), cases[i].jsonc, "mcpServers", &sec, &err), -1);
        assert_null(sec);
        if (!strstr(err.msg, cases[i].why) || err.line != cases[i].line || err.col != cases[i].col)
            fail_msg("case %zu: %u:%u %s", i, err.line, err.col, err.msg);
        assert_string_equal(err.path, "m.json");
        /* the whole root too */
        err = (struct as_err)AS_ERR_INIT;
        assert_int_equal(adp_json_read("m.json", t, strlen(t), cases[i].jsonc, NULL, &sec, &err),
                         -1);
        assert_null(sec);
    }
    /* elsewhere in the file it does not matter: only the span read is decoded */
    const char *other = "{\"x\": \"\\u0000\", \"mcpServers\": {\"a\": {\"command\": \"c\"}}}";
    json_t *sec = NULL;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(adp_json_read("m.json", other, strlen(other), false, "mcpServers", &sec, &err),
                     0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(sec, "a"), "command")),
                        "c");
    json_decref(sec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_documents),
        cmocka_unit_test(test_claude_json_preserved),
        cmocka_unit_test(test_section_inserted_after_brace),
        cmocka_unit_test(test_replace_only_changed_entry),
        cmocka_unit_test(test_remove_entries),
        cmocka_unit_test(test_jsonc_comments_survive),
        cmocka_unit_test(test_malformed_is_refused),
        cmocka_unit_test(test_crlf_bom_and_no_trailing_newline),
        cmocka_unit_test(test_root_variant_settings),
        cmocka_unit_test(test_large_file),
        cmocka_unit_test(test_emit_rules),
        cmocka_unit_test(test_property_random_edits),
        cmocka_unit_test(test_unholdable_values_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
