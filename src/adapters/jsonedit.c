/* jsonedit — byte-preserving edits of JSON and JSONC config files.
 *
 * A validating scanner walks the whole text once (recursion bounded by
 * JX_MAX_DEPTH) and records the member spans of just two objects: the root
 * and the section being edited. Edits are then computed as (offset, delete,
 * insert) splices against the original text and applied in one pass, so
 * memory stays near twice the file size and time stays linear. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/utf8.h"
#include "adapters/merge.h"
#include "base/json.h"
#include "base/vec.h"
#include "base/xalloc.h"

#define JX_MAX_DEPTH 512
#define NONE SIZE_MAX

struct jmember {
    size_t key_off; /* the opening quote */
    size_t val_off, val_end;
    size_t comma; /* the ',' after the value, or NONE */
    char *key;    /* decoded */
    size_t key_len;
};
typedef VEC(struct jmember) jmembers;

struct scan {
    const char *s;
    size_t n, i;
    bool jsonc;
    bool saw_comment;
    const char *path;
    struct as_err *err;
};

static void members_free(jmembers *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].key);
    vec_free(m);
}

static int fail(struct scan *sc, size_t at, const char *what)
{
    unsigned line = 1, col = 1;
    for (size_t k = 0; k < at && k < sc->n; k++) {
        if (sc->s[k] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)sc->s[k] & 0xC0) != 0x80) {
            col++;
        }
    }
    as_err_at(sc->err, sc->path, line, col, "existing config is not valid JSON%s: %s",
              sc->jsonc ? " (with comments)" : "", what);
    as_err_hint(sc->err, "fix the file by hand (or move it aside), then re-run — it was not "
                         "changed");
    return -1;
}

static int skip_ws(struct scan *sc)
{
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            sc->i++;
        } else if (c == '/' && sc->jsonc && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '/') {
            sc->saw_comment = true;
            while (sc->i < sc->n && sc->s[sc->i] != '\n')
                sc->i++;
        } else if (c == '/' && sc->jsonc && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '*') {
            sc->saw_comment = true;
            size_t start = sc->i;
            sc->i += 2;
            for (;;) {
                if (sc->i + 1 >= sc->n)
                    return fail(sc, start, "unterminated /* comment");
                if (sc->s[sc->i] == '*' && sc->s[sc->i + 1] == '/') {
                    sc->i += 2;
                    break;
                }
                sc->i++;
            }
        } else {
            break;
        }
    }
    return 0;
}

static void put_utf8(strbuf *o, uint32_t cp)
{
    char b[4];
    sb_add(o, b, utf8_encode(cp, b));
}

/* At '"': validates the string and moves past it; decodes into dec if set. */
static int scan_string(struct scan *sc, strbuf *dec)
{
    size_t start = sc->i;
    sc->i++;
    for (;;) {
        if (sc->i >= sc->n)
            return fail(sc, start, "unterminated string");
        unsigned char c = (unsigned char)sc->s[sc->i];
        if (c == '"') {
            sc->i++;
            return 0;
        }
        if (c < 0x20)
            return fail(sc, sc->i, "control character in a string");
        if (c != '\\') {
            if (dec)
                sb_addc(dec, (char)c);
            sc->i++;
            continue;
        }
        if (sc->i + 1 >= sc->n)
            return fail(sc, start, "unterminated string");
        char e = sc->s[sc->i + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            if (dec) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                sb_addc(dec, map[simple - "\"\\/bfnrt"]);
            }
            sc->i += 2;
            continue;
        }
        if (e != 'u')
            return fail(sc, sc->i, "invalid escape in a string");
        uint32_t cp = 0;
        for (int k = 0; k < 4; k++) {
            int h =
                sc->i + 2 + (size_t)k < sc->n ? hex_digit_value(sc->s[sc->i + 2 + (size_t)k]) : -1;
            if (h < 0)
                return fail(sc, sc->i, "invalid \\u escape");
            cp = cp * 16 + (uint32_t)h;
        }
        sc->i += 6;
        if (dec) {
            if (cp >= 0xD800 && cp < 0xDC00 && sc->i + 5 < sc->n && sc->s[sc->i] == '\\' &&
                sc->s[sc->i + 1] == 'u') {
                uint32_t lo = 0;
                int ok = 1;
                for (int k = 0; k < 4; k++) {
                    int h = hex_digit_value(sc->s[sc->i + 2 + (size_t)k]);
                    if (h < 0)
                        ok = 0;
                    lo = lo * 16 + (uint32_t)(h < 0 ? 0 : h);
                }
                if (ok && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    sc->i += 6;
                }
            }
            put_utf8(dec, cp);
        }
    }
}

static int scan_number(struct scan *sc)
{
    size_t start = sc->i;
    const char *s = sc->s;
    size_t i = sc->i;
    if (i < sc->n && s[i] == '-')
        i++;
    if (i >= sc->n || !(s[i] >= '0' && s[i] <= '9'))
        return fail(sc, start, "invalid number");
    if (s[i] == '0') {
        i++;
    } else {
        while (i < sc->n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < sc->n && s[i] == '.') {
        i++;
        if (i >= sc->n || !(s[i] >= '0' && s[i] <= '9'))
            return fail(sc, start, "invalid number");
        while (i < sc->n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < sc->n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < sc->n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= sc->n || !(s[i] >= '0' && s[i] <= '9'))
            return fail(sc, start, "invalid number");
        while (i < sc->n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    sc->i = i;
    return 0;
}

static int scan_value(struct scan *sc, int depth, jmembers *collect);

/* At '{'. With collect, records each member. */
static int scan_object(struct scan *sc, int depth, jmembers *collect)
{
    size_t open = sc->i;
    sc->i++;
    if (skip_ws(sc))
        return -1;
    if (sc->i < sc->n && sc->s[sc->i] == '}') {
        sc->i++;
        return 0;
    }
    for (;;) {
        if (sc->i >= sc->n)
            return fail(sc, open, "unterminated object");
        if (sc->s[sc->i] != '"')
            return fail(sc, sc->i, "expected a \"key\"");
        struct jmember m = {sc->i, 0, 0, NONE, NULL, 0};
        strbuf key = SB_INIT;
        if (scan_string(sc, collect ? &key : NULL)) {
            sb_release(&key);
            return -1;
        }
        if (skip_ws(sc)) {
            sb_release(&key);
            return -1;
        }
        if (sc->i >= sc->n || sc->s[sc->i] != ':') {
            sb_release(&key);
            return fail(sc, sc->i, "expected ':' after a key");
        }
        sc->i++;
        if (skip_ws(sc)) {
            sb_release(&key);
            return -1;
        }
        m.val_off = sc->i;
        if (scan_value(sc, depth + 1, NULL)) {
            sb_release(&key);
            return -1;
        }
        m.val_end = sc->i;
        if (skip_ws(sc)) {
            sb_release(&key);
            return -1;
        }
        if (sc->i < sc->n && sc->s[sc->i] == ',') {
            m.comma = sc->i;
            sc->i++;
            if (skip_ws(sc)) {
                sb_release(&key);
                return -1;
            }
        }
        if (collect) {
            m.key = sb_detach(&key, &m.key_len);
            vec_push(collect, m);
        }
        sb_release(&key);
        if (sc->i < sc->n && sc->s[sc->i] == '}') {
            if (m.comma != NONE && !sc->jsonc)
                return fail(sc, m.comma, "trailing comma");
            sc->i++;
            return 0;
        }
        if (m.comma == NONE) {
            if (sc->i >= sc->n)
                return fail(sc, open, "unterminated object");
            return fail(sc, sc->i, "expected ',' or '}'");
        }
    }
}

static int scan_array(struct scan *sc, int depth)
{
    size_t open = sc->i;
    sc->i++;
    if (skip_ws(sc))
        return -1;
    if (sc->i < sc->n && sc->s[sc->i] == ']') {
        sc->i++;
        return 0;
    }
    for (;;) {
        if (sc->i >= sc->n)
            return fail(sc, open, "unterminated array");
        if (scan_value(sc, depth + 1, NULL) || skip_ws(sc))
            return -1;
        bool comma = false;
        size_t comma_at = sc->i;
        if (sc->i < sc->n && sc->s[sc->i] == ',') {
            comma = true;
            sc->i++;
            if (skip_ws(sc))
                return -1;
        }
        if (sc->i < sc->n && sc->s[sc->i] == ']') {
            if (comma && !sc->jsonc)
                return fail(sc, comma_at, "trailing comma");
            sc->i++;
            return 0;
        }
        if (!comma) {
            if (sc->i >= sc->n)
                return fail(sc, open, "unterminated array");
            return fail(sc, sc->i, "expected ',' or ']'");
        }
    }
}

static int scan_lit(struct scan *sc, const char *lit)
{
    size_t n = strlen(lit);
    if (sc->n - sc->i < n || memcmp(sc->s + sc->i, lit, n) != 0)
        return fail(sc, sc->i, "unexpected characters");
    sc->i += n;
    return 0;
}

static int scan_value(struct scan *sc, int depth, jmembers *collect)
{
    if (depth > JX_MAX_DEPTH)
        return fail(sc, sc->i, "nested deeper than 512 levels");
    if (sc->i >= sc->n)
        return fail(sc, sc->i, "unexpected end of file");
    char c = sc->s[sc->i];
    switch (c) {
    case '{':
        return scan_object(sc, depth, collect);
    case '[':
        return scan_array(sc, depth);
    case '"':
        return scan_string(sc, NULL);
    case 't':
        return scan_lit(sc, "true");
    case 'f':
        return scan_lit(sc, "false");
    case 'n':
        return scan_lit(sc, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return scan_number(sc);
        return fail(sc, sc->i, "unexpected character");
    }
}

/* Validates the document. *blank = only whitespace (and a BOM). root_off is
 * the root '{'. */
static int scan_document(struct scan *sc, jmembers *root, bool *blank, size_t *root_off,
                         size_t *root_close)
{
    sc->i = 0;
    if (sc->n >= 3 && memcmp(sc->s, "\xEF\xBB\xBF", 3) == 0)
        sc->i = 3;
    if (skip_ws(sc))
        return -1;
    *blank = sc->i >= sc->n && !sc->saw_comment;
    if (sc->i >= sc->n) {
        if (sc->saw_comment)
            return fail(sc, sc->i, "only comments, no object");
        return 0;
    }
    if (sc->s[sc->i] != '{') {
        size_t at = sc->i;
        if (scan_value(sc, 0, NULL))
            return -1;
        return fail(sc, at, "the top level is not an object");
    }
    *root_off = sc->i;
    if (scan_object(sc, 0, root))
        return -1;
    *root_close = sc->i - 1;
    if (skip_ws(sc))
        return -1;
    if (sc->i < sc->n)
        return fail(sc, sc->i, "unexpected text after the top-level object");
    return 0;
}

/* ---- emitting ------------------------------------------------------------- */

/* DEL is escaped too in files we edit (what this writer always did, so a
 * rewrite leaves untouched strings byte-identical). */
static void emit_string(const char *s, size_t n, strbuf *out)
{
    sb_addc(out, '"');
    json_escape(s, n, JSON_ESC_DEL, out);
    sb_addc(out, '"');
}

static void emit_real(double d, strbuf *out)
{
    char buf[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    sb_adds(out, buf);
    if (!strpbrk(buf, ".eEn"))
        sb_adds(out, ".0");
}

static void emit_rec(const json_t *v, strbuf *base, const char *unit, const char *nl, strbuf *out)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (json_object_size(v) == 0) {
            sb_adds(out, "{}");
            return;
        }
        size_t blen = base->len;
        sb_adds(out, "{");
        sb_adds(out, nl);
        sb_adds(base, unit);
        size_t k = 0, n = json_object_size(v);
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            sb_add(out, base->buf, base->len);
            emit_string(key, strlen(key), out);
            sb_adds(out, ": ");
            emit_rec(val, base, unit, nl, out);
            if (++k < n)
                sb_addc(out, ',');
            sb_adds(out, nl);
        }
        sb_setlen(base, blen);
        sb_add(out, base->buf, base->len);
        sb_addc(out, '}');
        return;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (n == 0) {
            sb_adds(out, "[]");
            return;
        }
        size_t blen = base->len;
        sb_adds(out, "[");
        sb_adds(out, nl);
        sb_adds(base, unit);
        for (size_t i = 0; i < n; i++) {
            sb_add(out, base->buf, base->len);
            emit_rec(json_array_get(v, i), base, unit, nl, out);
            if (i + 1 < n)
                sb_addc(out, ',');
            sb_adds(out, nl);
        }
        sb_setlen(base, blen);
        sb_add(out, base->buf, base->len);
        sb_addc(out, ']');
        return;
    }
    case JSON_STRING:
        emit_string(json_string_value(v), json_string_length(v), out);
        return;
    case JSON_INTEGER:
        sb_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return;
    case JSON_REAL:
        emit_real(json_real_value(v), out);
        return;
    case JSON_TRUE:
        sb_adds(out, "true");
        return;
    case JSON_FALSE:
        sb_adds(out, "false");
        return;
    case JSON_NULL:
        sb_adds(out, "null");
        return;
    }
}

void adp_json_emit(const json_t *v, const char *base, const char *unit, const char *nl, strbuf *out)
{
    strbuf b = SB_INIT;
    sb_adds(&b, base);
    emit_rec(v, &b, unit, nl, out);
    sb_release(&b);
}

/* ---- reading spans ------------------------------------------------------- */

/* Copies [a, b) with comments and trailing commas blanked byte for byte
 * (newlines kept), so jansson can decode a JSONC span and an offset in the
 * copy is the same offset in the file. */
static void strip_jsonc(const char *s, size_t a, size_t b, strbuf *out)
{
    size_t i = a;
    while (i < b) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < b && s[j] != '"')
                j += (s[j] == '\\') ? 2 : 1;
            if (j > b)
                j = b;
            sb_add(out, s + i, (j < b ? j + 1 : b) - i);
            i = j < b ? j + 1 : b;
        } else if (c == '/' && i + 1 < b && s[i + 1] == '/') {
            while (i < b && s[i] != '\n') {
                sb_addc(out, ' ');
                i++;
            }
        } else if (c == '/' && i + 1 < b && s[i + 1] == '*') {
            size_t j = i + 2;
            while (j + 1 < b && !(s[j] == '*' && s[j + 1] == '/'))
                j++;
            j = j + 2 < b ? j + 2 : b;
            for (; i < j; i++)
                sb_addc(out, s[i] == '\n' ? '\n' : ' ');
        } else if (c == ',') {
            /* Drop it when only whitespace/comments precede a closing bracket. */
            size_t j = i + 1;
            for (;;) {
                while (j < b && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r'))
                    j++;
                if (j + 1 < b && s[j] == '/' && s[j + 1] == '/') {
                    while (j < b && s[j] != '\n')
                        j++;
                } else if (j + 1 < b && s[j] == '/' && s[j + 1] == '*') {
                    j += 2;
                    while (j + 1 < b && !(s[j] == '*' && s[j + 1] == '/'))
                        j++;
                    j += 2;
                } else {
                    break;
                }
            }
            sb_addc(out, j < b && (s[j] == '}' || s[j] == ']') ? ' ' : ',');
            i++;
        } else {
            sb_addc(out, c);
            i++;
        }
    }
}

/* Decodes [a, b), a span the scanner accepted, without JSON_ALLOW_NUL: a
 * NUL would cut every C string made from the value short (a command shown
 * as "x" that was "x\0y"), so such a value is refused, never truncated. So
 * is anything else jansson cannot hold (an unpaired surrogate escape, a
 * number out of range). With sc, the refusal is reported where it starts. */
static json_t *decode_span(const char *s, size_t a, size_t b, bool jsonc, struct scan *sc)
{
    json_error_t je;
    strbuf t = SB_INIT;
    const char *p = s + a;
    size_t n = b - a;
    if (jsonc) {
        strip_jsonc(s, a, b, &t); /* offsets kept */
        p = t.buf;
        n = t.len;
    }
    json_t *v = json_loadb(p, n, JSON_DECODE_ANY, &je);
    if (!v && sc) {
        size_t at = 0;
        const char *why = json_unrepresentable(p, n, &at);
        if (why) {
            fail(sc, a + at, "");
            as_err_at(sc->err, sc->path, sc->err->line, sc->err->col,
                      "%s, which agentstack refuses", why);
            as_err_hint(sc->err, "fix the file by hand (or move it aside), then re-run — it "
                                 "was not changed");
        } else {
            size_t pos = je.position > 0 ? (size_t)je.position : 0;
            fail(sc, a + (pos < n ? pos : n), je.text);
        }
    }
    sb_release(&t);
    return v;
}

static long find_member(const jmembers *m, const char *key, struct scan *sc, bool *dup)
{
    long found = -1;
    *dup = false;
    size_t kl = strlen(key);
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].key_len == kl && memcmp(m->v[i].key, key, kl) == 0) {
            if (found >= 0) {
                *dup = true;
                fail(sc, m->v[i].key_off, "");
                char where[64];
                snprintf(where, sizeof where, "%u:%u", sc->err->line, sc->err->col);
                as_err_at(sc->err, sc->path, sc->err->line, sc->err->col,
                          "key \"%s\" appears twice — not written (which one the CLI uses is "
                          "ambiguous)",
                          key);
                as_err_hint(sc->err, "remove one of the two \"%s\" entries by hand", key);
                return -1;
            }
            found = (long)i;
        }
    }
    return found;
}

int adp_json_read(const char *path, const char *text, size_t len, bool jsonc, const char *key,
                  json_t **out, struct as_err *err)
{
    *out = NULL;
    struct scan sc = {text, len, 0, jsonc, false, path, err};
    jmembers root = VEC_INIT;
    bool blank = false;
    size_t root_off = 0, root_close = 0;
    if (scan_document(&sc, &root, &blank, &root_off, &root_close)) {
        members_free(&root);
        return -1;
    }
    if (blank) {
        members_free(&root);
        return 0;
    }
    if (!key) {
        *out = decode_span(text, root_off, root_close + 1, jsonc, &sc);
        members_free(&root);
        return *out ? 0 : -1;
    }
    bool dup;
    long k = find_member(&root, key, &sc, &dup);
    if (dup) {
        members_free(&root);
        return -1;
    }
    if (k >= 0 && !(*out = decode_span(text, root.v[k].val_off, root.v[k].val_end, jsonc, &sc))) {
        members_free(&root);
        return -1;
    }
    members_free(&root);
    return 0;
}

/* ---- splicing ------------------------------------------------------------ */

struct edit {
    size_t off, del;
    char *ins;
    size_t seq;
};
typedef VEC(struct edit) edits;

static void add_edit(edits *e, size_t off, size_t del, char *ins)
{
    struct edit x = {off, del, ins, e->n};
    vec_push(e, x);
}

static int cmp_edit(const void *a, const void *b)
{
    const struct edit *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    /* Pure inserts before a delete at the same offset; otherwise keep order. */
    if ((x->del == 0) != (y->del == 0))
        return x->del == 0 ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static void apply_edits(const char *s, size_t n, edits *e, strbuf *out)
{
    if (e->n)
        qsort(e->v, e->n, sizeof *e->v, cmp_edit);
    sb_grow(out, n + 64);
    size_t pos = 0;
    for (size_t i = 0; i < e->n; i++) {
        struct edit *x = &e->v[i];
        size_t off = x->off < pos ? pos : x->off;
        sb_add(out, s + pos, off - pos);
        if (x->ins)
            sb_adds(out, x->ins);
        pos = off + x->del;
        if (pos > n)
            pos = n;
    }
    sb_add(out, s + pos, n - pos);
}

static void free_edits(edits *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i].ins);
    vec_free(e);
}

static size_t line_start(const char *s, size_t off)
{
    while (off > 0 && s[off - 1] != '\n')
        off--;
    return off;
}

static bool blank_between(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return false;
    return true;
}

static char *line_indent(const char *s, size_t off)
{
    size_t a = line_start(s, off), b = a;
    while (s[b] == ' ' || s[b] == '\t')
        b++;
    return xstrndup(s + a, b - a);
}

/* Where an insertion "after this line's content" goes: past spaces and a
 * same-line comment, before the newline. If real content follows on the
 * line, p itself. */
static size_t eol(const char *s, size_t n, size_t p)
{
    size_t i = p;
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
            while (i < n && s[i] != '\n' && s[i] != '\r')
                i++;
            return i;
        }
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
            size_t j = i + 2;
            while (j + 1 < n && !(s[j] == '*' && s[j + 1] == '/') && s[j] != '\n')
                j++;
            if (j + 1 < n && s[j] == '*') {
                i = j + 2;
                continue;
            }
            return p;
        }
        if (i >= n || s[i] == '\n' || s[i] == '\r')
            return i;
        return p;
    }
}

struct ectx {
    const char *s;
    size_t n;
    const char *unit;
    const char *nl;
    bool jsonc;
};

static char *render_member(const struct ectx *c, const char *ind, const char *name, const json_t *v)
{
    strbuf b = SB_INIT;
    sb_adds(&b, c->nl);
    sb_adds(&b, ind);
    emit_string(name, strlen(name), &b);
    sb_adds(&b, ": ");
    adp_json_emit(v, ind, c->unit, c->nl, &b);
    return sb_detach(&b, NULL);
}

/* A name with its length and position, for sorted lookups: a config of
 * hundreds of servers against as many upserts must not be quadratic. */
struct named_at {
    const char *s;
    size_t len, i;
};

static int named_at_cmp(const void *a, const void *b)
{
    const struct named_at *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Sorts v[0..n) built by the caller. */
static struct named_at *names_sorted(struct named_at *v, size_t n)
{
    qsort(v, n, sizeof *v, named_at_cmp);
    return v;
}

/* The index of key in a names_index (the first when repeated), or -1. */
static long names_find(const struct named_at *v, size_t n, const char *key, size_t kl)
{
    size_t lo = 0, hi = n;
    struct named_at want = {key, kl, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (named_at_cmp(&v[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && v[lo].len == kl && memcmp(v[lo].s, key, kl) == 0)
        return (long)v[lo].i;
    return -1;
}

/* Edits the members of the object at [open, close] (close = its '}').
 * insert_first: new members go right after '{' (the root variant). */
static int edit_members(const struct ectx *c, size_t open, size_t close, const jmembers *m,
                        const struct adp_json_edit *ed, bool insert_first, edits *e,
                        struct scan *sc)
{
    const char *s = c->s;
    size_t k = m->n;
    size_t nu = ed->n_upserts, nr = ed->n_removes;
    struct named_at *ups = xcalloc(nu ? nu : 1, sizeof *ups);
    struct named_at *rms = xcalloc(nr ? nr : 1, sizeof *rms);
    struct named_at *mk = xcalloc(k ? k : 1, sizeof *mk);
    for (size_t u = 0; u < nu; u++)
        ups[u] = (struct named_at){ed->upserts[u].name, strlen(ed->upserts[u].name), u};
    for (size_t r = 0; r < nr; r++)
        rms[r] = (struct named_at){ed->removes[r], strlen(ed->removes[r]), r};
    for (size_t i = 0; i < k; i++)
        mk[i] = (struct named_at){m->v[i].key, m->v[i].key_len, i};
    names_sorted(ups, nu);
    names_sorted(rms, nr);
    names_sorted(mk, k);
    long *up = xcalloc(k ? k : 1, sizeof *up);     /* member → its upsert (the first), or -1 */
    bool *gone = xcalloc(k ? k : 1, sizeof *gone); /* member named by a remove */
    bool *taken = xcalloc(nu ? nu : 1, sizeof *taken); /* upsert with a member */
    for (size_t i = 0; i < k; i++) {
        up[i] = names_find(ups, nu, m->v[i].key, m->v[i].key_len);
        gone[i] = names_find(rms, nr, m->v[i].key, m->v[i].key_len) >= 0;
    }
    for (size_t u = 0; u < nu; u++)
        taken[u] = names_find(mk, k, ed->upserts[u].name, strlen(ed->upserts[u].name)) >= 0;
    free(ups);
    free(rms);
    /* Duplicates among names we touch are ambiguous: the first touched name
     * that repeats is reported at its second occurrence. */
    size_t dup_first = k, dup_second = k;
    for (size_t g = 0; g + 1 < k; g++) {
        size_t a = mk[g].i, b = mk[g + 1].i;
        bool same = mk[g].len == mk[g + 1].len && memcmp(mk[g].s, mk[g + 1].s, mk[g].len) == 0;
        bool group_start =
            g == 0 || mk[g - 1].len != mk[g].len || memcmp(mk[g - 1].s, mk[g].s, mk[g].len) != 0;
        if (same && group_start && (up[a] >= 0 || gone[a]) && a < dup_first) {
            dup_first = a;
            dup_second = b;
        }
    }
    free(mk);
    if (dup_first < k) {
        const struct jmember *d = &m->v[dup_first];
        fail(sc, m->v[dup_second].key_off, "");
        as_err_at(sc->err, sc->path, sc->err->line, sc->err->col,
                  "key \"%s\" appears twice — not written (which one the CLI uses is "
                  "ambiguous)",
                  d->key);
        as_err_hint(sc->err, "remove one of the two \"%s\" entries by hand", d->key);
        free(up);
        free(taken);
        free(gone);
        return -1;
    }
    bool *removed = xcalloc(k ? k : 1, sizeof(bool));
    long last = -1;
    size_t n_removed = 0;
    for (size_t i = 0; i < k; i++) {
        if (up[i] < 0 && gone[i]) {
            removed[i] = true;
            n_removed++;
        } else {
            last = (long)i;
        }
    }
    /* New entries: upserts without a member. */
    VEC(const struct adp_json_entry *) fresh = VEC_INIT;
    for (size_t u = 0; u < ed->n_upserts; u++)
        if (!taken[u])
            vec_push(&fresh, &ed->upserts[u]);

    char *parent_ind = line_indent(s, open);
    char *ind = NULL;
    for (size_t i = 0; i < k && !ind; i++)
        if (!removed[i] && blank_between(s, line_start(s, m->v[i].key_off), m->v[i].key_off))
            ind = line_indent(s, m->v[i].key_off);
    for (size_t i = 0; i < k && !ind; i++)
        if (blank_between(s, line_start(s, m->v[i].key_off), m->v[i].key_off))
            ind = line_indent(s, m->v[i].key_off);
    if (!ind)
        ind = xasprintf("%s%s", parent_ind, c->unit);

    if (last < 0) {
        /* Nothing of the old object survives: write it afresh. */
        if (n_removed || fresh.n) {
            json_t *obj = json_object();
            for (size_t f = 0; f < fresh.n; f++)
                json_object_set(obj, fresh.v[f]->name, (json_t *)fresh.v[f]->value);
            strbuf b = SB_INIT;
            adp_json_emit(obj, parent_ind, c->unit, c->nl, &b);
            json_decref(obj);
            add_edit(e, open, close + 1 - open, sb_detach(&b, NULL));
        }
        goto out;
    }

    /* Replace changed values; cut removed members. */
    for (size_t i = 0; i < k; i++) {
        const struct jmember *mm = &m->v[i];
        if (removed[i]) {
            size_t ls = line_start(s, mm->key_off);
            bool whole_line = blank_between(s, ls, mm->key_off);
            size_t start = whole_line ? ls : mm->key_off;
            size_t end = mm->comma != NONE ? mm->comma + 1 : mm->val_end;
            size_t e2 = eol(s, c->n, end);
            if (whole_line && e2 < c->n && (s[e2] == '\n' || s[e2] == '\r')) {
                end = e2 + ((s[e2] == '\r' && e2 + 1 < c->n && s[e2 + 1] == '\n') ? 2 : 1);
            } else if (!whole_line) {
                while (end < c->n && (s[end] == ' ' || s[end] == '\t'))
                    end++;
            }
            add_edit(e, start, end - start, NULL);
            continue;
        }
        if (up[i] < 0)
            continue;
        const json_t *want = ed->upserts[up[i]].value;
        char *mind = line_indent(s, mm->key_off);
        strbuf b = SB_INIT;
        adp_json_emit(want, mind, c->unit, c->nl, &b);
        free(mind);
        /* What we wrote last time is byte for byte what we would write now:
         * equal bytes need no decode (parsing every entry of a large file
         * was most of an in-sync apply). Otherwise compare as values, so a
         * hand reformat that means the same is left alone. */
        bool same =
            b.len == mm->val_end - mm->val_off && memcmp(b.buf, s + mm->val_off, b.len) == 0;
        if (!same) {
            json_t *have = decode_span(s, mm->val_off, mm->val_end, c->jsonc, NULL);
            same = have && json_equal(have, (json_t *)want);
            json_decref(have);
        }
        if (same) {
            sb_release_secure(&b);
            continue;
        }
        add_edit(e, mm->val_off, mm->val_end - mm->val_off, sb_detach(&b, NULL));
    }

    const struct jmember *L = &m->v[last];
    bool l_was_last = (size_t)last == k - 1;
    if (insert_first) {
        if (fresh.n) {
            strbuf b = SB_INIT;
            for (size_t f = 0; f < fresh.n; f++) {
                char *t = render_member(c, ind, fresh.v[f]->name, fresh.v[f]->value);
                sb_adds(&b, t);
                sb_addc(&b, ',');
                free(t);
            }
            add_edit(e, open + 1, 0, sb_detach(&b, NULL));
        }
        if (L->comma != NONE && !l_was_last)
            add_edit(e, L->comma, 1, NULL);
        goto out;
    }
    if (fresh.n) {
        strbuf b = SB_INIT;
        bool trailing = L->comma != NONE && l_was_last; /* JSONC trailing-comma style */
        for (size_t f = 0; f < fresh.n; f++) {
            char *t = render_member(c, ind, fresh.v[f]->name, fresh.v[f]->value);
            sb_adds(&b, t);
            free(t);
            if (f + 1 < fresh.n || trailing)
                sb_addc(&b, ',');
        }
        if (L->comma != NONE) {
            add_edit(e, eol(s, c->n, L->comma + 1), 0, sb_detach(&b, NULL));
        } else {
            add_edit(e, L->val_end, 0, xstrdup(","));
            add_edit(e, eol(s, c->n, L->val_end), 0, sb_detach(&b, NULL));
        }
    } else if (L->comma != NONE && !l_was_last) {
        add_edit(e, L->comma, 1, NULL);
    }
out:
    free(parent_ind);
    free(ind);
    free(removed);
    free(up);
    free(taken);
    free(gone);
    vec_free(&fresh);
    return 0;
}

static const char *detect_nl(const char *s, size_t n)
{
    const char *p = memchr(s, '\n', n);
    return (p && p > s && p[-1] == '\r') ? "\r\n" : "\n";
}

static char *detect_unit(const char *s, const jmembers *root)
{
    if (root->n) {
        size_t ko = root->v[0].key_off;
        size_t ls = line_start(s, ko);
        if (ko > ls && blank_between(s, ls, ko))
            return xstrndup(s + ls, ko - ls);
    }
    return xstrdup("  ");
}

static void fresh_document(const struct adp_json_edit *ed, strbuf *out)
{
    json_t *root = json_object();
    if (ed->location) {
        json_t *sec = json_object();
        for (size_t u = 0; u < ed->n_upserts; u++)
            json_object_set(sec, ed->upserts[u].name, (json_t *)ed->upserts[u].value);
        json_object_set_new(root, ed->location, sec);
    } else {
        for (size_t u = 0; u < ed->n_upserts; u++)
            json_object_set(root, ed->upserts[u].name, (json_t *)ed->upserts[u].value);
    }
    adp_json_emit(root, "", "  ", "\n", out);
    sb_addc(out, '\n');
    json_decref(root);
}

int adp_json_merge(const char *path, const char *text, size_t len, const struct adp_json_edit *ed,
                   strbuf *out, struct as_err *err)
{
    if (len > ADP_INPUT_MAX)
        return as_err_set(err, "%s: exceeds the %zu-byte limit — not written", path, ADP_INPUT_MAX);
    struct scan sc = {text, len, 0, ed->jsonc, false, path, err};
    jmembers root = VEC_INIT;
    bool blank = false;
    size_t root_off = 0, root_close = 0;
    if (scan_document(&sc, &root, &blank, &root_off, &root_close)) {
        members_free(&root);
        return -1;
    }

    if (blank || (root.n == 0 && !sc.saw_comment)) {
        members_free(&root);
        if (ed->n_upserts == 0) {
            sb_add(out, text, len);
            return 0;
        }
        fresh_document(ed, out);
        return 0;
    }

    struct ectx c = {text, len, NULL, detect_nl(text, len), ed->jsonc};
    char *unit = detect_unit(text, &root);
    c.unit = unit;
    edits e = VEC_INIT;
    int rc = 0;

    if (!ed->location) {
        rc = edit_members(&c, root_off, root_close, &root, ed, true, &e, &sc);
    } else {
        bool dup;
        long li = find_member(&root, ed->location, &sc, &dup);
        if (dup) {
            rc = -1;
        } else if (li < 0) {
            if (ed->n_upserts) {
                json_t *sec = json_object();
                for (size_t u = 0; u < ed->n_upserts; u++)
                    json_object_set(sec, ed->upserts[u].name, (json_t *)ed->upserts[u].value);
                char *ind = NULL;
                if (root.n &&
                    blank_between(text, line_start(text, root.v[0].key_off), root.v[0].key_off))
                    ind = line_indent(text, root.v[0].key_off);
                else
                    ind = xstrdup(unit);
                strbuf b = SB_INIT;
                sb_adds(&b, c.nl);
                sb_adds(&b, ind);
                emit_string(ed->location, strlen(ed->location), &b);
                sb_adds(&b, ": ");
                adp_json_emit(sec, ind, unit, c.nl, &b);
                sb_adds(&b, root.n ? "," : c.nl);
                json_decref(sec);
                free(ind);
                add_edit(&e, root_off + 1, 0, sb_detach(&b, NULL));
            }
        } else {
            const struct jmember *lm = &root.v[li];
            if (text[lm->val_off] == '{') {
                jmembers sec = VEC_INIT;
                struct scan s2 = {text, len, lm->val_off, ed->jsonc, false, path, err};
                rc = scan_object(&s2, 1, &sec);
                if (rc == 0)
                    rc = edit_members(&c, lm->val_off, lm->val_end - 1, &sec, ed, false, &e, &s2);
                members_free(&sec);
            } else if (ed->n_upserts) {
                /* Not an object: it counts as empty and is replaced. */
                json_t *secv = json_object();
                for (size_t u = 0; u < ed->n_upserts; u++)
                    json_object_set(secv, ed->upserts[u].name, (json_t *)ed->upserts[u].value);
                char *ind = line_indent(text, lm->key_off);
                strbuf b = SB_INIT;
                adp_json_emit(secv, ind, unit, c.nl, &b);
                json_decref(secv);
                free(ind);
                add_edit(&e, lm->val_off, lm->val_end - lm->val_off, sb_detach(&b, NULL));
            }
        }
    }
    if (rc == 0)
        apply_edits(text, len, &e, out);
    free_edits(&e);
    free(unit);
    members_free(&root);
    return rc;
}
