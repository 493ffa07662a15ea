/*
 * Revision compatibility — see mcp.h. The gateway speaks whatever revision
 * its client negotiated while its upstreams speak their own, newer or older.
 * What each revision admits comes from the official schemas
 * (tests/data/mcp-schema/<v>/schema.json):
 *
 *   content block types (CallToolResult.content)
 *     2024-11-05  text, image, resource
 *     2025-03-26  + audio
 *     2025-06-18  + resource_link (ContentBlock), unchanged through 2026-07-28
 *   Tool fields beyond name, description, inputSchema
 *     2025-03-26  annotations (ToolAnnotations: title and the four hints)
 *     2025-06-18  + title, outputSchema (an object schema, "type": "object")
 *
 * Dated revisions compare as strings once they are known to be dates.
 */
#include <string.h>

#include "base/xalloc.h"
#include "mcp/mcp.h"

#define REV_AUDIO "2025-03-26"
#define REV_RESOURCE_LINK "2025-06-18"
#define REV_TOOL_ANNOTATIONS "2025-03-26"
#define REV_TOOL_TITLE "2025-06-18"
#define REV_TOOL_OUTPUT_SCHEMA "2025-06-18"
#define SHOWN_MAX 256 /* characters of an upstream string named in a placeholder */

/* A revision this module can reason about: a known one, or a dated one at or
 * after the stateless era (which keeps every block type). NULL and anything
 * else leave results untouched: guessing would drop content for nothing. */
static int rev_usable(const char *v)
{
    return v && (mcp_version_known(v) || mcp_version_is_modern(v));
}

static int rev_has(const char *v, const char *since)
{
    return strcmp(v, since) >= 0;
}

static int block_allowed(const char *type, const char *v)
{
    if (strcmp(type, "text") == 0 || strcmp(type, "image") == 0 || strcmp(type, "resource") == 0)
        return 1;
    if (strcmp(type, "audio") == 0)
        return rev_has(v, REV_AUDIO);
    if (strcmp(type, "resource_link") == 0)
        return rev_has(v, REV_RESOURCE_LINK);
    return 0; /* a type no revision we know defines */
}

/* Appends an upstream string for a placeholder: one line, at most SHOWN_MAX
 * characters, cut on a UTF-8 boundary (jansson strings are valid UTF-8). */
static void add_shown(strbuf *out, const char *s)
{
    size_t chars = 0, i = 0;
    for (; s[i] && chars < SHOWN_MAX; chars++) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        for (size_t j = 1; j < k; j++)
            if (!s[i + j]) {
                k = j;
                break;
            }
        if (c < 0x20 || c == 0x7f)
            sb_addc(out, ' ');
        else
            sb_add(out, s + i, k);
        i += k;
    }
    if (s[i])
        sb_adds(out, "…");
}

static void add_field(strbuf *out, const json_t *block, const char *key, const char *label)
{
    const char *s = json_string_value(json_object_get(block, key));
    if (!s)
        return;
    sb_addf(out, "; %s: ", label);
    add_shown(out, s);
}

/* The text block that stands in for a block the client's revision lacks. */
static json_t *placeholder(const json_t *block, const char *type, const char *v)
{
    strbuf t = SB_INIT;
    sb_adds(&t, "[");
    add_shown(&t, type);
    sb_addf(&t, " content dropped: MCP %s cannot carry it", v);
    if (strcmp(type, "resource_link") == 0) {
        add_field(&t, block, "name", "name");
        add_field(&t, block, "title", "title");
        add_field(&t, block, "uri", "uri");
        add_field(&t, block, "mimeType", "type");
        add_field(&t, block, "description", "description");
    } else {
        add_field(&t, block, "mimeType", "type");
        const char *data = json_string_value(json_object_get(block, "data"));
        if (data)
            sb_addf(&t, "; %zu bytes of base64 data", strlen(data));
    }
    sb_adds(&t, "]");
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("text"));
    json_object_set_new(o, "text", json_stringn(t.buf, t.len));
    json_t *ann = json_object_get(block, "annotations");
    if (json_is_object(ann))
        json_object_set(o, "annotations", ann);
    sb_release(&t);
    return o;
}

int mcp_result_for_version(json_t *result, const char *version)
{
    json_t *content = json_object_get(result, "content");
    if (!rev_usable(version) || !json_is_array(content))
        return 0;
    size_t i, n = 0;
    json_t *b;
    json_array_foreach(content, i, b)
    {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !block_allowed(type, version))
            n++;
    }
    if (!n)
        return 0;
    /* A new array: the old one may be shared with the upstream's reply. */
    json_t *out = json_array();
    json_array_foreach(content, i, b)
    {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !block_allowed(type, version))
            json_array_append_new(out, placeholder(b, type, version));
        else
            json_array_append(out, b);
    }
    json_object_set_new(result, "content", out);
    return (int)n;
}

int mcp_raw_content_unchanged(struct mcp_span content, const char *version)
{
    if (!content.p || !rev_usable(version) || *content.p != '[')
        return 1;
    /* A block is rewritten only when it is an object whose "type" is a
     * string no revision up to version defines. */
    struct mcp_span el[64];
    int n = mcp_raw_elements(content, el, sizeof el / sizeof el[0]);
    if (n < 0)
        return 0; /* more blocks than that: the parsed path judges */
    for (int i = 0; i < n; i++) {
        if (*el[i].p != '{')
            continue;
        struct mcp_member m[MCP_RAW_KEYS];
        int k = mcp_raw_members(el[i], m, MCP_RAW_KEYS);
        if (k < 0)
            return 0;
        struct mcp_span t = mcp_raw_get(m, (size_t)k, "type");
        if (!t.p || *t.p != '"')
            continue;
        char type[32];
        if (t.n - 2 >= sizeof type || memchr(t.p, '\\', t.n))
            return 0; /* escaped or long: judged by the parsed path */
        memcpy(type, t.p + 1, t.n - 2);
        type[t.n - 2] = '\0';
        if (!block_allowed(type, version))
            return 0;
    }
    return 1;
}

/* ---- tool metadata ---------------------------------------------------------- */

static json_t *clean_line(const char *s, mcp_line_clean_fn line, size_t line_max)
{
    strbuf t = SB_INIT;
    line(s, line_max, &t);
    json_t *v = json_stringn(t.buf, t.len);
    sb_release(&t);
    return v;
}

json_t *mcp_tool_extras(const json_t *tool, mcp_line_clean_fn line, size_t line_max,
                        mcp_schema_clean_fn schema)
{
    json_t *x = json_object();
    const char *title = json_string_value(json_object_get(tool, "title"));
    if (title) {
        json_t *v = clean_line(title, line, line_max);
        if (v)
            json_object_set_new(x, "title", v);
    }
    json_t *ann = json_object_get(tool, "annotations");
    if (json_is_object(ann)) {
        json_t *a = json_object();
        static const char *const hints[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
                                            "openWorldHint", NULL};
        for (size_t i = 0; hints[i]; i++) {
            json_t *h = json_object_get(ann, hints[i]);
            if (json_is_boolean(h))
                json_object_set(a, hints[i], h);
        }
        const char *at = json_string_value(json_object_get(ann, "title"));
        json_t *v = at ? clean_line(at, line, line_max) : NULL;
        if (v)
            json_object_set_new(a, "title", v);
        if (json_object_size(a))
            json_object_set_new(x, "annotations", a);
        else
            json_decref(a);
    }
    json_t *os = json_object_get(tool, "outputSchema");
    if (json_is_object(os) && json_is_string(json_object_get(os, "type")) &&
        strcmp(json_string_value(json_object_get(os, "type")), "object") == 0) {
        json_t *c = schema(os);
        if (json_is_object(c))
            json_object_set_new(x, "outputSchema", c);
        else if (c)
            json_decref(c);
    }
    return x;
}

void mcp_tool_for_version(json_t *tool, const json_t *extras, const char *version)
{
    if (!json_is_object(extras) || !rev_usable(version))
        return;
    static const struct {
        const char *key, *since;
    } fields[] = {
        {"title", REV_TOOL_TITLE},
        {"annotations", REV_TOOL_ANNOTATIONS},
        {"outputSchema", REV_TOOL_OUTPUT_SCHEMA},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        json_t *v = json_object_get(extras, fields[i].key);
        if (v && rev_has(version, fields[i].since))
            json_object_set_new(tool, fields[i].key, json_deep_copy(v));
    }
}
