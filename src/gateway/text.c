/*
 * Text that crosses the gateway: the hostile-text filter every upstream- or
 * repository-authored string passes before an agent sees it, result
 * envelopes, the pretty JSON of control-plane answers, and the result cap.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/term.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "gateway/gw_int.h"

/* Code points that reorder, hide or smuggle text: the one hidden set
 * (base/term.h), C1 controls, and the ideographic variation selectors. */
static bool invisible(unsigned c)
{
    return (c >= 0x80 && c <= 0x9F) || term_hidden_label(c) || (c >= 0xE0100 && c <= 0xE01EF);
}

void gw_clean(const char *str, size_t len, int keep_nl, strbuf *out)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t start = out->len;
    bool pend_space = false; /* one-line form: a whitespace run is pending */
    for (size_t i = 0; i < len;) {
        if (s[i] == 0x1B) {
            i += term_escape_len(s + i, len - i);
            continue;
        }
        unsigned c;
        size_t k = utf8_decode(s + i, len - i, &c);
        if (!k) {
            i++;
            continue;
        }
        i += k;
        bool ws = c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && !keep_nl);
        if (keep_nl && c == '\r')
            continue;
        if (ws) {
            if (keep_nl)
                sb_addc(out, ' ');
            else
                pend_space = true;
            continue;
        }
        if (c == '\n') {
            sb_addc(out, '\n');
            continue;
        }
        if (c < 0x20 || c == 0x7F || invisible(c))
            continue;
        if (pend_space && out->len > start)
            sb_addc(out, ' ');
        pend_space = false;
        sb_add(out, s + i - k, k);
    }
}

void gw_one_line(const char *s, size_t max_chars, strbuf *out)
{
    strbuf t = SB_INIT;
    gw_clean(s, strlen(s), 0, &t);
    size_t chars = 0, i = 0;
    while (i < t.len && chars < max_chars) {
        unsigned c;
        size_t k = utf8_decode((const unsigned char *)t.buf + i, t.len - i, &c);
        i += k ? k : 1;
        chars++;
    }
    sb_add(out, t.buf, i);
    if (i < t.len)
        sb_adds(out, "…");
    sb_release(&t);
}

bool gw_tool_name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return n >= 1 && n <= 128;
}

int gw_split(const char *name, strbuf *server, strbuf *tool)
{
    const char *p = strstr(name, "__");
    if (!p || p == name || !p[2])
        return 0;
    sb_reset(server);
    sb_reset(tool);
    sb_add(server, name, (size_t)(p - name));
    sb_adds(tool, p + 2);
    return 1;
}

void gw_file_safe(const char *s, strbuf *out)
{
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        sb_addc(out, ok ? c : '_');
    }
    if (out->len && out->buf[0] == '.')
        out->buf[0] = '_';
}

static int dump_cb(const char *buf, size_t size, void *data)
{
    sb_add((strbuf *)data, buf, size);
    return 0;
}

void gw_pretty(const json_t *v, strbuf *out)
{
    json_dump_callback(v, dump_cb, out, JSON_INDENT(2) | JSON_ENCODE_ANY);
}

json_t *gw_text_result(const char *text, bool is_error)
{
    json_t *item = json_object();
    json_object_set_new(item, "type", json_string("text"));
    /* json_stringn_nocheck would let invalid UTF-8 through; texts here are
     * ours or cleaned, and a NULL from json_string must not crash. */
    json_t *t = json_string(text);
    json_object_set_new(item, "text", t ? t : json_string("(unprintable text)"));
    json_t *content = json_array();
    json_array_append_new(content, item);
    json_t *r = json_object();
    json_object_set_new(r, "content", content);
    json_object_set_new(r, "isError", json_boolean(is_error));
    return r;
}

json_t *gw_error_result(const char *fmt, ...)
{
    strbuf raw = SB_INIT, t = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&raw, fmt, ap);
    va_end(ap);
    sb_adds(&t, "Error: ");
    gw_clean(raw.buf, raw.len, 1, &t);
    json_t *r = gw_text_result(t.buf, true);
    sb_release(&raw);
    sb_release(&t);
    return r;
}

static json_t *schema_walk(const json_t *v, int depth)
{
    if (depth > 64)
        return json_object(); /* a schema that deep is hostile; keep its shape bounded */
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            if ((strcmp(k, "description") == 0 || strcmp(k, "title") == 0) && json_is_string(x)) {
                strbuf s = SB_INIT;
                gw_one_line(json_string_value(x), GW_DESC_MAX, &s);
                json_object_set_new(o, k, json_string(s.buf));
                sb_release(&s);
            } else {
                json_object_set_new(o, k, schema_walk(x, depth + 1));
            }
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) json_array_append_new(a, schema_walk(x, depth + 1));
        return a;
    }
    return json_deep_copy(v);
}

json_t *gw_schema_clean(const json_t *schema)
{
    if (!json_is_object(schema)) {
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string("object"));
        return o;
    }
    return schema_walk(schema, 0);
}

/* An upper bound of v's compact JSON size without serializing it: every
 * string byte may become a 6-byte escape. Stops counting past limit. */
static size_t size_bound(const json_t *v, size_t limit, int depth)
{
    if (depth > 64)
        return limit + 1;
    size_t n = 0;
    if (json_is_string(v))
        return 2 + 6 * json_string_length(v);
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        n = 2;
        json_object_foreach((json_t *)v, k, x)
        {
            n += 4 + 6 * strlen(k) + size_bound(x, limit, depth + 1);
            if (n > limit)
                return n;
        }
        return n;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        n = 2;
        json_array_foreach(v, i, x)
        {
            n += 1 + size_bound(x, limit, depth + 1);
            if (n > limit)
                return n;
        }
        return n;
    }
    return 32; /* numbers, true, false, null */
}

json_t *gw_result_cap(json_t *result, size_t max)
{
    /* The common case (a result far below the cap) costs no serialization. */
    if (size_bound(result, max, 0) <= max)
        return json_incref(result);
    strbuf all = SB_INIT;
    mcp_dump(result, &all);
    size_t total = all.len;
    if (total <= max) {
        sb_release(&all);
        return json_incref(result);
    }
    strbuf text = SB_INIT;
    json_t *content = json_object_get(result, "content");
    size_t i;
    json_t *item;
    json_array_foreach(content, i, item)
    {
        const char *t = json_string_value(json_object_get(item, "text"));
        if (t) {
            if (text.len)
                sb_addc(&text, '\n');
            sb_add(&text, t, json_string_length(json_object_get(item, "text")));
        }
    }
    if (!text.len)
        sb_add(&text, all.buf, all.len);
    sb_release(&all);
    size_t room = max > 256 ? max - 256 : 0;
    size_t keep = text.len < room ? text.len : room;
    /* back up to a character boundary */
    while (keep > 0 && keep < text.len && ((unsigned char)text.buf[keep] & 0xC0) == 0x80)
        keep--;
    strbuf cut = SB_INIT;
    sb_add(&cut, text.buf, keep);
    sb_addf(&cut, "\n[agentstack: result truncated at %zu of %zu bytes]", keep, total);
    json_t *r = gw_text_result(cut.buf, json_is_true(json_object_get(result, "isError")));
    if (!json_is_string(
            json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"))) {
        json_decref(r);
        r = gw_text_result("[agentstack: result truncated]", true);
    }
    sb_release(&cut);
    sb_release(&text);
    return r;
}
