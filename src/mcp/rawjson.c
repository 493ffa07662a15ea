/*
 * Raw spans — see mcp.h. The validator answers one question: would
 * mcp_parse's parser (jansson, duplicate keys rejected) accept these bytes,
 * and would a forward of the very bytes carry the same JSON values as a
 * parse + dump? Where the answer takes real work (reals and big integers,
 * whose dump jansson reformats or refuses; escaped keys, which need decoding
 * to spot duplicates; \u0000; deep or wide objects) it says "cannot vouch"
 * and the caller takes the full parser, which stays the only judge of
 * anything unusual. Everything it accepts is valid JSON with valid UTF-8.
 *
 * The span walkers below the validator (members, elements) assume a span
 * the validator accepted and do no checking of their own.
 */
#include <string.h>

#include "base/utf8.h"
#include "base/json.h"
#include "mcp/mcp.h"

/* Keys of every object still open, innermost last: duplicate checks need
 * them, and one shared stack keeps each recursion frame small. */
#define OPEN_KEYS 256

struct vkey {
    const unsigned char *p;
    size_t n;
};

struct vctx {
    const unsigned char *p, *end;
    int depth;
    size_t nkeys;
    struct vkey keys[OPEN_KEYS];
};

static void ws(struct vctx *v)
{
    while (v->p < v->end && (*v->p == ' ' || *v->p == '\t' || *v->p == '\r' || *v->p == '\n'))
        v->p++;
}

/* v->p at the opening quote. Keys (key != 0) may hold no escape at all, so
 * they compare byte for byte. */
static int v_string(struct vctx *v, int key)
{
    v->p++;
    while (v->p < v->end) {
        unsigned c = *v->p;
        if (c == '"') {
            v->p++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (key || v->end - v->p < 2)
                return 0;
            unsigned e = v->p[1];
            if (e == 'u') {
                unsigned u, lo;
                if (v->end - v->p < 6 || !json_hex4(v->p + 2, &u) || u == 0 ||
                    (u >= 0xDC00 && u <= 0xDFFF))
                    return 0;
                if (u >= 0xD800 && u <= 0xDBFF) {
                    if (v->end - v->p < 12 || v->p[6] != '\\' || v->p[7] != 'u' ||
                        !json_hex4(v->p + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return 0;
                    v->p += 12;
                } else {
                    v->p += 6;
                }
                continue;
            }
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                e == 't') {
                v->p += 2;
                continue;
            }
            return 0;
        }
        if (c < 0x80) {
            v->p++;
            continue;
        }
        unsigned cp;
        size_t k = utf8_decode(v->p, (size_t)(v->end - v->p), &cp);
        if (!k)
            return 0;
        v->p += k;
    }
    return 0;
}

static int is_digit(unsigned c)
{
    return c >= '0' && c <= '9';
}

/* Integers only, at most 18 digits (always inside json_int_t), never -0:
 * those forward as the very number a parse + dump would print. */
static int v_number(struct vctx *v)
{
    int neg = *v->p == '-';
    if (neg)
        v->p++;
    const unsigned char *d = v->p;
    if (v->p >= v->end || !is_digit(*v->p))
        return 0;
    if (*v->p == '0') {
        v->p++;
        if (neg || (v->p < v->end && is_digit(*v->p)))
            return 0;
    } else {
        while (v->p < v->end && is_digit(*v->p))
            v->p++;
    }
    if (v->p < v->end && (*v->p == '.' || *v->p == 'e' || *v->p == 'E'))
        return 0;
    return v->p - d <= 18;
}

static int v_literal(struct vctx *v, const char *lit, size_t n)
{
    if ((size_t)(v->end - v->p) < n || memcmp(v->p, lit, n) != 0)
        return 0;
    v->p += n;
    return 1;
}

static int v_value(struct vctx *v);

/* At the byte after an opener or after a member/element: closer (the
 * container ends; depth restored) -> 2, ',' then more -> 1, else 0. */
static int v_close(struct vctx *v, unsigned char closer)
{
    ws(v);
    if (v->p < v->end && *v->p == closer) {
        v->p++;
        v->depth--;
        return 2;
    }
    if (v->p < v->end && *v->p == ',') {
        v->p++;
        ws(v);
        return 1;
    }
    return 0;
}

static int v_object(struct vctx *v)
{
    size_t base = v->nkeys;
    if (++v->depth > MCP_RAW_DEPTH)
        return 0;
    v->p++;
    ws(v);
    if (v->p < v->end && *v->p == '}') {
        v->p++;
        v->depth--;
        return 1;
    }
    for (;;) {
        if (v->p >= v->end || *v->p != '"' || v->nkeys - base == MCP_RAW_KEYS ||
            v->nkeys == OPEN_KEYS)
            return 0;
        const unsigned char *k = v->p + 1;
        if (!v_string(v, 1))
            return 0;
        size_t kn = (size_t)(v->p - 1 - k);
        for (size_t i = base; i < v->nkeys; i++)
            if (v->keys[i].n == kn && memcmp(v->keys[i].p, k, kn) == 0)
                return 0; /* a duplicate: mcp_parse refuses the message */
        v->keys[v->nkeys].p = k;
        v->keys[v->nkeys].n = kn;
        v->nkeys++;
        ws(v);
        if (v->p >= v->end || *v->p != ':')
            return 0;
        v->p++;
        ws(v);
        if (!v_value(v))
            return 0;
        int c = v_close(v, '}');
        if (c == 2)
            v->nkeys = base;
        if (c != 1)
            return c == 2;
    }
}

static int v_array(struct vctx *v)
{
    if (++v->depth > MCP_RAW_DEPTH)
        return 0;
    v->p++;
    ws(v);
    if (v->p < v->end && *v->p == ']') {
        v->p++;
        v->depth--;
        return 1;
    }
    for (;;) {
        if (!v_value(v))
            return 0;
        int c = v_close(v, ']');
        if (c != 1)
            return c == 2;
    }
}

static int v_value(struct vctx *v)
{
    if (v->p >= v->end)
        return 0;
    switch (*v->p) {
    case '{':
        return v_object(v);
    case '[':
        return v_array(v);
    case '"':
        return v_string(v, 0);
    case 't':
        return v_literal(v, "true", 4);
    case 'f':
        return v_literal(v, "false", 5);
    case 'n':
        return v_literal(v, "null", 4);
    default:
        return (*v->p == '-' || is_digit(*v->p)) && v_number(v);
    }
}

int mcp_raw_valid(const char *s, size_t n)
{
    struct vctx v;
    v.p = (const unsigned char *)s;
    v.end = v.p + n;
    v.depth = 0;
    v.nkeys = 0;
    ws(&v);
    if (v.p >= v.end || *v.p != '{' || !v_object(&v))
        return 0;
    ws(&v);
    return v.p == v.end;
}

/* ---- walking a vouched-for span ---- */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* p at a string's opening quote; returns the byte after its closing one. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return end;
}

/* p at a value; returns the byte after it. */
static const char *skip_value(const char *p, const char *end)
{
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, end);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return end;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
           *p != '\r' && *p != '\n')
        p++;
    return p;
}

int mcp_raw_members(struct mcp_span obj, struct mcp_member *out, size_t max)
{
    const char *end = obj.p + obj.n;
    const char *p = skip_ws(obj.p, end);
    if (p >= end || *p != '{')
        return -1;
    p = skip_ws(p + 1, end);
    size_t n = 0;
    while (p < end && *p == '"') {
        if (n == max)
            return -1;
        const char *k = p + 1;
        p = skip_string(p, end);
        out[n].key.p = k;
        out[n].key.n = (size_t)(p - 1 - k);
        p = skip_ws(p, end);
        p = skip_ws(p + 1, end); /* the ':' */
        const char *val = p;
        p = skip_value(p, end);
        out[n].val.p = val;
        out[n].val.n = (size_t)(p - val);
        n++;
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p = skip_ws(p + 1, end);
    }
    return (int)n;
}

int mcp_raw_elements(struct mcp_span arr, struct mcp_span *out, size_t max)
{
    const char *end = arr.p + arr.n;
    const char *p = skip_ws(arr.p, end);
    if (p >= end || *p != '[')
        return -1;
    p = skip_ws(p + 1, end);
    size_t n = 0;
    while (p < end && *p != ']') {
        if (n == max)
            return -1;
        const char *val = p;
        p = skip_value(p, end);
        out[n].p = val;
        out[n].n = (size_t)(p - val);
        n++;
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p = skip_ws(p + 1, end);
    }
    return (int)n;
}

struct mcp_span mcp_raw_get(const struct mcp_member *m, size_t n, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < n; i++)
        if (m[i].key.n == kl && memcmp(m[i].key.p, key, kl) == 0)
            return m[i].val;
    struct mcp_span none = {NULL, 0};
    return none;
}

int mcp_raw_is(struct mcp_span v, const char *lit)
{
    size_t n = strlen(lit);
    return v.p && v.n == n && memcmp(v.p, lit, n) == 0;
}

int mcp_raw_response(const char *s, size_t n, uint64_t *id, struct mcp_span *result)
{
    if (!mcp_raw_valid(s, n))
        return 0;
    struct mcp_member m[MCP_RAW_KEYS];
    struct mcp_span all = {s, n};
    int k = mcp_raw_members(all, m, MCP_RAW_KEYS);
    if (k < 0)
        return 0;
    struct mcp_span v = mcp_raw_get(m, (size_t)k, "id");
    struct mcp_span r = mcp_raw_get(m, (size_t)k, "result");
    if (!mcp_raw_is(mcp_raw_get(m, (size_t)k, "jsonrpc"), "\"2.0\"") || !v.p || !r.p ||
        *r.p != '{' || mcp_raw_get(m, (size_t)k, "method").p ||
        mcp_raw_get(m, (size_t)k, "error").p)
        return 0;
    /* A positive integer id (what our requests carry); the validator kept
     * it to at most 18 digits, so it cannot overflow. */
    uint64_t x = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return 0;
        x = x * 10 + (uint64_t)(v.p[i] - '0');
    }
    if (x == 0)
        return 0;
    *id = x;
    *result = r;
    return 1;
}

void mcp_json_int(long long v, strbuf *out)
{
    char b[24], *e = b + sizeof b, *p = e;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    sb_add(out, p, (size_t)(e - p));
}

void mcp_json_str(const char *s, size_t n, strbuf *out)
{
    /* jansson's bytes: \u%04X for controls, DEL and UTF-8 passed as is */
    sb_addc(out, '"');
    json_escape(s, n, JSON_ESC_UPPER_HEX, out);
    sb_addc(out, '"');
}

/* ---- a vouched-for span as a jansson tree ---- */

static void put_utf8(unsigned cp, strbuf *out)
{
    char b[4];
    sb_add(out, b, utf8_encode(cp, b));
}

/* A string value (span with its quotes) decoded; escapes were checked. */
static json_t *str_value(const char *p, size_t n, strbuf *tmp)
{
    const char *s = p + 1, *end = p + n - 1;
    const char *bs = memchr(s, '\\', (size_t)(end - s));
    if (!bs)
        return json_stringn_nocheck(s, (size_t)(end - s));
    sb_reset(tmp);
    while (s < end) {
        bs = memchr(s, '\\', (size_t)(end - s));
        if (!bs) {
            sb_add(tmp, s, (size_t)(end - s));
            break;
        }
        sb_add(tmp, s, (size_t)(bs - s));
        char e = bs[1];
        s = bs + 2;
        switch (e) {
        case 'b':
            sb_addc(tmp, '\b');
            break;
        case 'f':
            sb_addc(tmp, '\f');
            break;
        case 'n':
            sb_addc(tmp, '\n');
            break;
        case 'r':
            sb_addc(tmp, '\r');
            break;
        case 't':
            sb_addc(tmp, '\t');
            break;
        case 'u': {
            unsigned u = 0, lo = 0xDC00;
            json_hex4((const unsigned char *)s, &u);
            s += 4;
            if (u >= 0xD800 && u <= 0xDBFF) {
                json_hex4((const unsigned char *)s + 2, &lo);
                s += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(u, tmp);
            break;
        }
        default: /* '"', '\\', '/' */
            sb_addc(tmp, e);
            break;
        }
    }
    return json_stringn_nocheck(tmp->buf, tmp->len);
}

/* v: a value inside a vouched-for span (so no checks: the validator made
 * them, and bounded the depth). NULL only when jansson runs out of memory. */
static json_t *tree(const char *p, const char *end, const char **after, strbuf *tmp)
{
    if (*p == '{') {
        json_t *o = json_object();
        p = skip_ws(p + 1, end);
        while (o && p < end && *p == '"') {
            const char *k = p + 1;
            p = skip_string(p, end);
            size_t kn = (size_t)(p - 1 - k);
            p = skip_ws(skip_ws(p, end) + 1, end);
            json_t *x = tree(p, end, &p, tmp);
            if (!x || json_object_setn_new_nocheck(o, k, kn, x) != 0) {
                json_decref(o);
                o = NULL;
            }
            p = skip_ws(p, end);
            if (p < end && *p == ',')
                p = skip_ws(p + 1, end);
        }
        *after = p < end ? p + 1 : end; /* past the '}' */
        return o;
    }
    if (*p == '[') {
        json_t *a = json_array();
        p = skip_ws(p + 1, end);
        while (a && p < end && *p != ']') {
            json_t *x = tree(p, end, &p, tmp);
            if (!x || json_array_append_new(a, x) != 0) {
                json_decref(a);
                a = NULL;
            }
            p = skip_ws(p, end);
            if (p < end && *p == ',')
                p = skip_ws(p + 1, end);
        }
        *after = p < end ? p + 1 : end;
        return a;
    }
    const char *q = skip_value(p, end);
    *after = q;
    switch (*p) {
    case '"':
        return str_value(p, (size_t)(q - p), tmp);
    case 't':
        return json_true();
    case 'f':
        return json_false();
    case 'n':
        return json_null();
    default: {
        int neg = *p == '-';
        json_int_t x = 0;
        for (const char *d = p + neg; d < q; d++)
            x = x * 10 + (*d - '0');
        return json_integer(neg ? -x : x);
    }
    }
}

json_t *mcp_raw_tree(const char *s, size_t n)
{
    const char *end = s + n;
    const char *p = skip_ws(s, end);
    if (p >= end)
        return NULL;
    strbuf tmp = SB_INIT;
    json_t *v = tree(p, end, &p, &tmp);
    sb_release(&tmp);
    return v;
}
