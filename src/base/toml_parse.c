/*
 * toml parser — one pass over the bytes, recursive descent bounded by
 * TOML_MAX_DEPTH. Positions are byte offsets; line/col are derived lazily from
 * a forward-moving cache so the whole parse stays linear.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/utf8.h"
#include "base/toml.h"
#include "base/toml_internal.h"
#include "base/vec.h"
#include "base/xalloc.h"

struct keyseg {
    char *s;
    size_t len;
    size_t off, end;
    unsigned line, col;
};
typedef VEC(struct keyseg) keyvec;

struct parser {
    const char *path;
    const char *s;
    size_t n, i;
    struct as_err *err;
    unsigned flags;
    toml_value *root, *cur;
    unsigned cur_depth;
    unsigned section;
    size_t lc_off, lc_ls; /* line cache: offset reached, start of its line */
    unsigned lc_line;
    strbuf tmp;
    char kbuf[320];
};

static void where(struct parser *p, size_t off, unsigned *line, unsigned *col)
{
    if (off > p->n)
        off = p->n;
    if (off < p->lc_off && off >= p->lc_ls) {
        /* earlier on the cached line: no rescan (keeps the parse linear) */
        *line = p->lc_line;
        *col = (unsigned)(off - p->lc_ls + 1);
        return;
    }
    if (off < p->lc_off) {
        p->lc_off = p->lc_ls = 0;
        p->lc_line = 1;
    }
    size_t o = p->lc_off;
    while (o < off) {
        const char *nl = memchr(p->s + o, '\n', off - o);
        if (!nl)
            break;
        p->lc_line++;
        o = (size_t)(nl - p->s) + 1;
        p->lc_ls = o;
    }
    p->lc_off = off;
    *line = p->lc_line;
    *col = (unsigned)(off - p->lc_ls + 1);
}

__attribute__((format(printf, 3, 4))) static int perr(struct parser *p, size_t off, const char *fmt,
                                                      ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(msg, sizeof msg, fmt, ap);
    (void)r;
    va_end(ap);
    unsigned line, col;
    where(p, off, &line, &col);
    return as_err_at(p->err, p->path, line, col, "%s", msg);
}

/* A short description of the byte at off for messages. */
static const char *describe(struct parser *p, size_t off, char *buf, size_t size)
{
    if (off >= p->n)
        snprintf(buf, size, "end of file");
    else if (p->s[off] == '\n' || p->s[off] == '\r')
        snprintf(buf, size, "end of line");
    else if ((unsigned char)p->s[off] > 0x20 && (unsigned char)p->s[off] < 0x7f)
        snprintf(buf, size, "'%c'", p->s[off]);
    else
        snprintf(buf, size, "byte 0x%02x", (unsigned char)p->s[off]);
    return buf;
}

/* Positions are taken in increasing offset order (value starts before their
 * contents) so the line cache only moves forward. */
struct pos {
    size_t off;
    unsigned line, col;
};

static struct pos pos_at(struct parser *p, size_t off)
{
    struct pos r = {.off = off};
    where(p, off, &r.line, &r.col);
    return r;
}

static void set_pos(toml_value *v, struct pos at, size_t end)
{
    v->line = at.line;
    v->col = at.col;
    v->off = at.off;
    v->end = end;
}

/* Returns the offset of the first byte that is not valid UTF-8, or n. */
static size_t utf8_bad(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (i + need >= n)
            return i;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += need + 1;
    }
    return n;
}

static inline int peek(struct parser *p, size_t k)
{
    return p->i + k < p->n ? (unsigned char)p->s[p->i + k] : -1;
}

static void skip_ws(struct parser *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t'))
        p->i++;
}

static bool is_ctrl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* Consumes a comment up to (not including) its newline. */
static int comment(struct parser *p)
{
    size_t i = p->i + 1;
    for (; i < p->n; i++) {
        unsigned char c = (unsigned char)p->s[i];
        if (c == '\n' || (c == '\r' && i + 1 < p->n && p->s[i + 1] == '\n'))
            break;
        if (is_ctrl(c))
            return perr(p, i, "control character 0x%02x in a comment", c);
    }
    p->i = i;
    return 0;
}

/* At a newline: consumes it and returns 1; a bare CR is an error (-1). */
static int newline(struct parser *p)
{
    int c = peek(p, 0);
    if (c == '\n') {
        p->i++;
        return 1;
    }
    if (c == '\r') {
        if (peek(p, 1) == '\n') {
            p->i += 2;
            return 1;
        }
        return perr(p, p->i, "carriage return not followed by a newline");
    }
    return 0;
}

/* Whitespace, newlines and comments (inside arrays). */
static int skip_ws_nl(struct parser *p)
{
    for (;;) {
        skip_ws(p);
        int c = peek(p, 0);
        if (c == '#') {
            if (comment(p))
                return -1;
        } else if (c == '\n' || c == '\r') {
            if (newline(p) < 0)
                return -1;
        } else {
            return 0;
        }
    }
}

static int end_of_line(struct parser *p, const char *after)
{
    skip_ws(p);
    if (peek(p, 0) == '#' && comment(p))
        return -1;
    if (p->i >= p->n)
        return 0;
    int r = newline(p);
    if (r)
        return r < 0 ? -1 : 0;
    char d[32];
    return perr(p, p->i, "expected a newline after %s, found %s", after,
                describe(p, p->i, d, sizeof d));
}

/* ---- strings ------------------------------------------------------------- */

static void put_utf8(strbuf *sb, uint32_t cp)
{
    char b[4];
    sb_add(sb, b, utf8_encode(cp, b));
}

static int escape(struct parser *p, strbuf *out, bool ml)
{
    size_t at = p->i;
    int e = peek(p, 1);
    const char *simple = NULL;
    switch (e) {
    case 'b':
        simple = "\b";
        break;
    case 't':
        simple = "\t";
        break;
    case 'n':
        simple = "\n";
        break;
    case 'f':
        simple = "\f";
        break;
    case 'r':
        simple = "\r";
        break;
    case '"':
        simple = "\"";
        break;
    case '\\':
        simple = "\\";
        break;
    default:
        break;
    }
    if (simple) {
        sb_addc(out, simple[0]);
        p->i += 2;
        return 0;
    }
    if (e == 'u' || e == 'U') {
        size_t digs = e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < digs; k++) {
            int h = hex_digit_value(peek(p, 2 + k));
            if (h < 0)
                return perr(p, at, "\\%c escape needs %zu hex digits", e, digs);
            cp = (cp << 4) | (uint32_t)h;
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return perr(p, at, "\\%c%0*X is not a Unicode scalar value", e, (int)digs, cp);
        put_utf8(out, cp);
        p->i += 2 + digs;
        return 0;
    }
    if (ml && (e == ' ' || e == '\t' || e == '\n' || e == '\r')) {
        /* Line-ending backslash: only whitespace may follow it on its line. */
        size_t j = p->i + 1;
        while (j < p->n && (p->s[j] == ' ' || p->s[j] == '\t'))
            j++;
        if (j < p->n && p->s[j] != '\n' && p->s[j] != '\r')
            return perr(p, at, "a line-ending backslash must be followed only by whitespace");
        p->i = j;
        for (;;) {
            skip_ws(p);
            int c = peek(p, 0);
            if (c != '\n' && c != '\r')
                break;
            if (newline(p) < 0)
                return -1;
        }
        return 0;
    }
    if (e < 0)
        return perr(p, at, "unterminated string");
    if (e > 0x20 && e < 0x7f)
        return perr(p, at, "invalid escape sequence '\\%c'", e);
    return perr(p, at, "invalid escape sequence (backslash followed by byte 0x%02x)", e);
}

/* Parses a string at p->i (any of the four kinds) into out. */
static int parse_string(struct parser *p, strbuf *out, bool allow_ml)
{
    size_t open = p->i;
    char q = p->s[p->i];
    bool ml = peek(p, 1) == q && peek(p, 2) == q;
    if (ml && !allow_ml)
        return perr(p, open, "a multi-line string cannot be a key");
    p->i += ml ? 3 : 1;
    if (ml) {
        int r = newline(p); /* a newline right after the opening quotes is trimmed */
        if (r < 0)
            return -1;
    }
    for (;;) {
        size_t start = p->i;
        while (p->i < p->n) {
            unsigned char c = (unsigned char)p->s[p->i];
            if (c == (unsigned char)q || (c == '\\' && q == '"') || is_ctrl(c))
                break;
            p->i++;
        }
        sb_add(out, p->s + start, p->i - start);
        if (p->i >= p->n)
            return perr(p, open, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == (unsigned char)q) {
            if (!ml) {
                p->i++;
                return 0;
            }
            size_t run = 0;
            while (peek(p, run) == q)
                run++;
            if (run < 3) {
                sb_addchars(out, q, run);
                p->i += run;
                continue;
            }
            if (run > 5)
                return perr(p, p->i, "too many quotes at the end of a multi-line string");
            sb_addchars(out, q, run - 3);
            p->i += run;
            return 0;
        }
        if (c == '\\') {
            if (escape(p, out, ml))
                return -1;
            continue;
        }
        if (c == '\n' || c == '\r') {
            if (!ml)
                return perr(p, p->i, "newline in a single-line string");
            int r = newline(p);
            if (r < 0)
                return -1;
            sb_addc(out, '\n');
            continue;
        }
        return perr(p, p->i, "control character 0x%02x in a string (use an escape)", c);
    }
}

/* ---- keys ---------------------------------------------------------------- */

static bool bare_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* A key for an error message: printable, each part at most 64 bytes, so a
 * hostile key cannot flood or drive the terminal that shows the message. */
static size_t kappend(struct parser *p, size_t o, const struct keyseg *k)
{
    for (size_t i = 0; i < k->len && k->s && o + 8 < sizeof p->kbuf; i++) {
        unsigned char c = (unsigned char)k->s[i];
        if (i == 64) {
            memcpy(p->kbuf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c != 0x7f && c != '\\')
            p->kbuf[o++] = (char)c;
        else
            o += (size_t)snprintf(p->kbuf + o, sizeof p->kbuf - o, "\\x%02x", c);
    }
    p->kbuf[o] = '\0';
    return o;
}

static const char *kname(struct parser *p, const struct keyseg *k)
{
    kappend(p, 0, k);
    return p->kbuf;
}

/* The whole dotted key of a header, for messages about the table. */
static const char *kpath(struct parser *p, const keyvec *keys)
{
    size_t o = 0;
    p->kbuf[0] = '\0';
    for (size_t i = 0; i < keys->n && o + 8 < sizeof p->kbuf; i++) {
        if (i)
            p->kbuf[o++] = '.';
        o = kappend(p, o, &keys->v[i]);
    }
    return p->kbuf;
}

static void keys_free(keyvec *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i].s);
    vec_free(k);
}

static int parse_key(struct parser *p, keyvec *keys)
{
    for (;;) {
        skip_ws(p);
        size_t at = p->i;
        int c = peek(p, 0);
        struct keyseg seg = {.off = at};
        where(p, at, &seg.line, &seg.col);
        if (c == '"' || c == '\'') {
            strbuf sb = SB_INIT;
            if (parse_string(p, &sb, false)) {
                sb_release(&sb);
                return -1;
            }
            if (!(p->flags & TOML_PARSE_NUL_KEYS) && memchr(sb.buf, '\0', sb.len)) {
                sb_release(&sb);
                return perr(p, at, "a key cannot contain a NUL character");
            }
            if (!sb.alloc)
                sb_grow(&sb, 1);
            seg.s = sb_detach(&sb, &seg.len);
        } else if (bare_char(c)) {
            while (bare_char(peek(p, 0)))
                p->i++;
            seg.len = p->i - at;
            seg.s = xstrndup(p->s + at, seg.len);
        } else {
            char d[32];
            return perr(p, at, "expected a key, found %s", describe(p, at, d, sizeof d));
        }
        seg.end = p->i;
        vec_push(keys, seg);
        if (keys->n > TOML_MAX_DEPTH)
            return perr(p, at, "key has more than %d dotted parts", TOML_MAX_DEPTH);
        skip_ws(p);
        if (peek(p, 0) != '.')
            return 0;
        p->i++;
    }
}

/* ---- numbers and datetimes ----------------------------------------------- */

/* A token in a message: at most 64 bytes, then "...". */
#define SHOW(t, m) (int)((m) > 64 ? 64 : (m)), (t), ((m) > 64 ? "..." : "")

/* Digits of base with single underscores between digits, from *k; copies
 * the digits to clean. Returns the digit count or -1 on a misplaced '_'. */
static long read_digits(const char *t, size_t m, size_t *k, int base, strbuf *clean)
{
    long count = 0;
    bool prev_digit = false;
    while (*k < m) {
        char c = t[*k];
        int v = hex_digit_value(c);
        if (c == '_') {
            if (!prev_digit || *k + 1 >= m || hex_digit_value(t[*k + 1]) < 0 ||
                hex_digit_value(t[*k + 1]) >= base)
                return -1;
            prev_digit = false;
        } else if (v >= 0 && v < base) {
            if (clean)
                sb_addc(clean, c);
            count++;
            prev_digit = true;
        } else {
            break;
        }
        (*k)++;
    }
    return count;
}

static toml_value *parse_number(struct parser *p, size_t at, const char *t, size_t m)
{
    size_t k = 0;
    bool neg = false, sign = false;
    if (m && (t[0] == '+' || t[0] == '-')) {
        neg = t[0] == '-';
        sign = true;
        k = 1;
    }
    if (m - k == 3 && (memcmp(t + k, "inf", 3) == 0 || memcmp(t + k, "nan", 3) == 0)) {
        toml_value *v = toml_new(TOML_FLOAT);
        v->u.f = t[k] == 'i' ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
        return v;
    }
    strbuf *clean = &p->tmp;
    sb_reset(clean);
    if (m - k >= 2 && t[k] == '0' && (t[k + 1] == 'x' || t[k + 1] == 'o' || t[k + 1] == 'b')) {
        int base = t[k + 1] == 'x' ? 16 : t[k + 1] == 'o' ? 8 : 2;
        if (sign) {
            perr(p, at, "a sign is not allowed on hexadecimal, octal or binary integers");
            return NULL;
        }
        k += 2;
        long nd = read_digits(t, m, &k, base, clean);
        if (nd <= 0 || k != m) {
            perr(p, at, "invalid %s integer '%.*s%s'",
                 base == 16  ? "hexadecimal"
                 : base == 8 ? "octal"
                             : "binary",
                 SHOW(t, m));
            return NULL;
        }
        uint64_t u = 0;
        for (size_t j = 0; j < clean->len; j++) {
            uint64_t d = (uint64_t)hex_digit_value(clean->buf[j]);
            if (u > (UINT64_MAX - d) / (uint64_t)base || u * (uint64_t)base + d > INT64_MAX) {
                perr(p, at, "integer '%.*s%s' does not fit in 64 bits", SHOW(t, m));
                return NULL;
            }
            u = u * (uint64_t)base + d;
        }
        toml_value *v = toml_new(TOML_INTEGER);
        v->u.i = (int64_t)u;
        return v;
    }
    if (neg)
        sb_addc(clean, '-');
    size_t int_at = k;
    long nd = read_digits(t, m, &k, 10, clean);
    if (nd <= 0)
        goto bad;
    if (t[int_at] == '0' && nd > 1) {
        perr(p, at, "leading zeros are not allowed in '%.*s%s'", SHOW(t, m));
        return NULL;
    }
    bool is_float = false;
    if (k < m && t[k] == '.') {
        k++;
        sb_addc(clean, '.');
        if (read_digits(t, m, &k, 10, clean) <= 0)
            goto bad;
        is_float = true;
    }
    if (k < m && (t[k] == 'e' || t[k] == 'E')) {
        k++;
        sb_addc(clean, 'e');
        if (k < m && (t[k] == '+' || t[k] == '-'))
            sb_addc(clean, t[k++]);
        if (read_digits(t, m, &k, 10, clean) <= 0)
            goto bad;
        is_float = true;
    }
    if (k != m)
        goto bad;
    if (!is_float) {
        errno = 0;
        char *e;
        long long ll = strtoll(clean->buf, &e, 10);
        if (errno == ERANGE) {
            perr(p, at, "integer '%.*s%s' does not fit in 64 bits", SHOW(t, m));
            return NULL;
        }
        toml_value *v = toml_new(TOML_INTEGER);
        v->u.i = (int64_t)ll;
        return v;
    }
    locale_t cl = toml_c_locale();
    char *e;
    double f = cl ? strtod_l(clean->buf, &e, cl) : strtod(clean->buf, &e);
    if (isinf(f)) {
        perr(p, at, "float '%.*s%s' is out of range", SHOW(t, m));
        return NULL;
    }
    toml_value *v = toml_new(TOML_FLOAT);
    v->u.f = f;
    return v;
bad:
    perr(p, at, "invalid value '%.*s%s'", SHOW(t, m));
    return NULL;
}

static bool tok_char(int c)
{
    return bare_char(c) || c == '+' || c == '.' || c == ':';
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static toml_value *parse_token(struct parser *p)
{
    size_t at = p->i, j = at;
    while (j < p->n && tok_char((unsigned char)p->s[j]))
        j++;
    const char *t = p->s + at;
    /* "1979-05-27 07:32:00": a date, one space, then a time */
    if (j - at == 10 && t[4] == '-' && t[7] == '-' && j + 3 < p->n && p->s[j] == ' ' &&
        is_digit(p->s[j + 1]) && is_digit(p->s[j + 2]) && p->s[j + 3] == ':') {
        j++;
        while (j < p->n && tok_char((unsigned char)p->s[j]))
            j++;
    }
    size_t m = j - at;
    if (m == 0) {
        char d[32];
        perr(p, at, "expected a value, found %s", describe(p, at, d, sizeof d));
        return NULL;
    }
    toml_value *v;
    if (m == 4 && memcmp(t, "true", 4) == 0) {
        v = toml_new_bool(true);
    } else if (m == 5 && memcmp(t, "false", 5) == 0) {
        v = toml_new_bool(false);
    } else if (memchr(t, ':', m) || (m >= 5 && t[4] == '-' && is_digit(t[0]) && is_digit(t[1]) &&
                                     is_digit(t[2]) && is_digit(t[3]))) {
        char *norm;
        const char *why;
        int type = toml_datetime_scan(t, m, &norm, &why);
        if (type < 0) {
            perr(p, at, "invalid date/time '%.*s%s': %s", SHOW(t, m), why);
            return NULL;
        }
        v = xcalloc(1, sizeof *v);
        v->type = (enum toml_type)type;
        v->u.dt = norm;
    } else {
        v = parse_number(p, at, t, m);
        if (!v)
            return NULL;
    }
    p->i = j;
    return v;
}

/* ---- values -------------------------------------------------------------- */

static toml_value *parse_value(struct parser *p, unsigned depth);
static int insert_kv(struct parser *p, toml_value *tab, unsigned depth, keyvec *keys, toml_value *v,
                     bool in_inline);

static toml_value *parse_array(struct parser *p, unsigned depth)
{
    struct pos at = pos_at(p, p->i);
    p->i++;
    toml_value *arr = toml_new(TOML_ARRAY);
    arr->is_inline = 1;
    for (;;) {
        if (skip_ws_nl(p))
            goto fail;
        if (peek(p, 0) == ']')
            break;
        toml_value *v = parse_value(p, depth + 1);
        if (!v)
            goto fail;
        toml_array_push(arr, v);
        if (skip_ws_nl(p))
            goto fail;
        int c = peek(p, 0);
        if (c == ',') {
            p->i++;
            continue;
        }
        if (c == ']')
            break;
        char d[32];
        perr(p, p->i, "expected ',' or ']' in the array, found %s", describe(p, p->i, d, sizeof d));
        goto fail;
    }
    p->i++;
    set_pos(arr, at, p->i);
    return arr;
fail:
    toml_free(arr);
    return NULL;
}

static toml_value *parse_inline_table(struct parser *p, unsigned depth)
{
    struct pos at = pos_at(p, p->i);
    p->i++;
    toml_value *tab = toml_new(TOML_TABLE);
    tab->is_inline = 1;
    tab->priv_defined = 1;
    skip_ws(p);
    if (peek(p, 0) == '}') {
        p->i++;
        set_pos(tab, at, p->i);
        return tab;
    }
    for (;;) {
        keyvec keys = VEC_INIT;
        if (parse_key(p, &keys)) {
            keys_free(&keys);
            goto fail;
        }
        skip_ws(p);
        if (peek(p, 0) != '=') {
            char d[32];
            perr(p, p->i, "expected '=' after the key, found %s", describe(p, p->i, d, sizeof d));
            keys_free(&keys);
            goto fail;
        }
        p->i++;
        skip_ws(p);
        toml_value *v = parse_value(p, depth + (unsigned)keys.n);
        if (!v || insert_kv(p, tab, depth, &keys, v, true)) {
            toml_free(v);
            keys_free(&keys);
            goto fail;
        }
        keys_free(&keys);
        skip_ws(p);
        int c = peek(p, 0);
        if (c == ',') {
            p->i++;
            skip_ws(p);
            if (peek(p, 0) == '}') {
                perr(p, p->i, "trailing comma in an inline table (not allowed in TOML 1.0)");
                goto fail;
            }
            continue;
        }
        if (c == '}')
            break;
        if (c == '\n' || c == '\r')
            perr(p, p->i, "newline inside an inline table (not allowed in TOML 1.0)");
        else {
            char d[32];
            perr(p, p->i, "expected ',' or '}' in the inline table, found %s",
                 describe(p, p->i, d, sizeof d));
        }
        goto fail;
    }
    p->i++;
    set_pos(tab, at, p->i);
    return tab;
fail:
    toml_free(tab);
    return NULL;
}

/* depth: the nesting level the value will sit at (root table = 0). */
static toml_value *parse_value(struct parser *p, unsigned depth)
{
    struct pos at = pos_at(p, p->i);
    int c = peek(p, 0);
    if ((c == '[' || c == '{') && depth >= TOML_MAX_DEPTH) {
        perr(p, at.off, "nesting deeper than %d levels", TOML_MAX_DEPTH);
        return NULL;
    }
    toml_value *v;
    if (c == '"' || c == '\'') {
        strbuf sb = SB_INIT;
        if (parse_string(p, &sb, true)) {
            sb_release(&sb);
            return NULL;
        }
        v = xcalloc(1, sizeof *v);
        v->type = TOML_STRING;
        if (!sb.alloc)
            sb_grow(&sb, 1);
        v->u.str.s = sb_detach(&sb, &v->u.str.len);
    } else if (c == '[') {
        return parse_array(p, depth);
    } else if (c == '{') {
        return parse_inline_table(p, depth);
    } else {
        v = parse_token(p);
        if (!v)
            return NULL;
    }
    set_pos(v, at, p->i);
    return v;
}

/* ---- tables -------------------------------------------------------------- */

static toml_value *new_table(const struct keyseg *seg)
{
    toml_value *t = toml_new(TOML_TABLE);
    t->implicit = 1;
    set_pos(t, (struct pos){seg->off, seg->line, seg->col}, seg->end);
    return t;
}

static toml_value *add_child(toml_value *tab, struct keyseg *seg, toml_value *v)
{
    toml_table_append(tab, seg->s, seg->len, v, seg->line, seg->col);
    seg->s = NULL; /* taken */
    return v;
}

static int insert_kv(struct parser *p, toml_value *tab, unsigned depth, keyvec *keys, toml_value *v,
                     bool in_inline)
{
    toml_value *t = tab;
    for (size_t k = 0; k + 1 < keys->n; k++) {
        struct keyseg *seg = &keys->v[k];
        size_t idx = toml_find_index(t, seg->s, seg->len);
        if (idx == (size_t)-1) {
            toml_value *nt = new_table(seg);
            nt->priv_dotted = in_inline ? UINT_MAX : p->section;
            t = add_child(t, seg, nt);
            continue;
        }
        toml_value *e = t->u.tab.kv[idx].val;
        if (e->type != TOML_TABLE)
            return perr(p, seg->off, "key '%s' is already defined as %s %s", kname(p, seg),
                        e->type == TOML_ARRAY || e->type == TOML_INTEGER ? "an" : "a",
                        e->is_array_of_tables ? "array of tables" : toml_type_name(e->type));
        if (e->is_inline)
            return perr(p, seg->off, "cannot add keys to the inline table '%s'", kname(p, seg));
        if (!in_inline) {
            if (e->priv_defined || (e->priv_dotted && e->priv_dotted != p->section))
                return perr(p, seg->off,
                            "table '%s' is already defined; dotted keys cannot add to it",
                            kname(p, seg));
            e->priv_dotted = p->section;
        }
        t = e;
    }
    if (depth + keys->n > TOML_MAX_DEPTH)
        return perr(p, keys->v[0].off, "nesting deeper than %d levels", TOML_MAX_DEPTH);
    struct keyseg *last = &keys->v[keys->n - 1];
    if (toml_find_index(t, last->s, last->len) != (size_t)-1)
        return perr(p, last->off, "duplicate key '%s'", kname(p, last));
    add_child(t, last, v);
    return 0;
}

static int parse_header(struct parser *p)
{
    size_t at = p->i;
    struct pos hp = pos_at(p, at);
    bool aot = peek(p, 1) == '[';
    p->i += aot ? 2 : 1;
    keyvec keys = VEC_INIT;
    if (parse_key(p, &keys))
        goto fail;
    if (peek(p, 0) != ']' || (aot && peek(p, 1) != ']')) {
        char d[32];
        perr(p, p->i, "expected '%s' to close the table header, found %s", aot ? "]]" : "]",
             describe(p, p->i, d, sizeof d));
        goto fail;
    }
    p->i += aot ? 2 : 1;
    size_t hend = p->i;
    p->section++;
    toml_value *t = p->root;
    unsigned depth = 0;
    for (size_t k = 0; k + 1 < keys.n; k++) {
        struct keyseg *seg = &keys.v[k];
        size_t idx = toml_find_index(t, seg->s, seg->len);
        depth++;
        if (idx == (size_t)-1) {
            toml_value *nt = new_table(seg);
            set_pos(nt, hp, hend);
            t = add_child(t, seg, nt);
            continue;
        }
        toml_value *e = t->u.tab.kv[idx].val;
        if (e->type == TOML_ARRAY && e->is_array_of_tables && e->u.arr.n) {
            depth++;
            e = e->u.arr.items[e->u.arr.n - 1];
        } else if (e->type != TOML_TABLE) {
            perr(p, seg->off, "key '%s' is already defined as %s, not a table", kname(p, seg),
                 e->type == TOML_ARRAY ? "an array" : toml_type_name(e->type));
            goto fail;
        }
        if (e->is_inline) {
            perr(p, seg->off, "cannot add to the inline table '%s'", kname(p, seg));
            goto fail;
        }
        t = e;
    }
    struct keyseg *last = &keys.v[keys.n - 1];
    depth += aot ? 2 : 1;
    if (depth > TOML_MAX_DEPTH) {
        perr(p, at, "nesting deeper than %d levels", TOML_MAX_DEPTH);
        goto fail;
    }
    size_t idx = toml_find_index(t, last->s, last->len);
    toml_value *e = idx == (size_t)-1 ? NULL : t->u.tab.kv[idx].val;
    if (aot) {
        if (!e) {
            e = toml_new(TOML_ARRAY);
            e->is_array_of_tables = 1;
            set_pos(e, hp, hend);
            add_child(t, last, e);
        } else if (e->type != TOML_ARRAY || !e->is_array_of_tables) {
            perr(p, last->off, "cannot define [[%s]]: the key is already %s %s", kpath(p, &keys),
                 e->type == TOML_ARRAY || e->type == TOML_INTEGER ? "an" : "a",
                 e->type == TOML_ARRAY ? "static array" : toml_type_name(e->type));
            goto fail;
        }
        toml_value *elem = toml_new(TOML_TABLE);
        elem->priv_defined = 1;
        set_pos(elem, hp, hend);
        toml_array_push(e, elem);
        p->cur = elem;
    } else {
        if (!e) {
            e = toml_new(TOML_TABLE);
            add_child(t, last, e);
        } else if (e->type != TOML_TABLE) {
            perr(p, last->off, "cannot define [%s]: the key is already %s %s", kpath(p, &keys),
                 e->type == TOML_ARRAY || e->type == TOML_INTEGER ? "an" : "a",
                 e->is_array_of_tables ? "array of tables" : toml_type_name(e->type));
            goto fail;
        } else if (e->is_inline || e->priv_defined || e->priv_dotted) {
            perr(p, at, "table [%s] is defined more than once", kpath(p, &keys));
            goto fail;
        }
        e->priv_defined = 1;
        e->implicit = 0;
        set_pos(e, hp, hend);
        p->cur = e;
    }
    p->cur_depth = depth;
    keys_free(&keys);
    return end_of_line(p, "the table header");
fail:
    keys_free(&keys);
    return -1;
}

static int parse_keyval(struct parser *p)
{
    keyvec keys = VEC_INIT;
    if (parse_key(p, &keys))
        goto fail;
    skip_ws(p);
    if (peek(p, 0) != '=') {
        char d[32];
        perr(p, p->i, "expected '=' after the key, found %s", describe(p, p->i, d, sizeof d));
        goto fail;
    }
    p->i++;
    skip_ws(p);
    toml_value *v = parse_value(p, p->cur_depth + (unsigned)keys.n);
    if (!v)
        goto fail;
    if (insert_kv(p, p->cur, p->cur_depth, &keys, v, false)) {
        toml_free(v);
        goto fail;
    }
    keys_free(&keys);
    return end_of_line(p, "the value");
fail:
    keys_free(&keys);
    return -1;
}

toml_value *toml_parse(const char *path, const char *data, size_t len, struct as_err *err)
{
    return toml_parse_ex(path, data, len, 0, err);
}

toml_value *toml_parse_ex(const char *path, const char *data, size_t len, unsigned flags,
                          struct as_err *err)
{
    struct parser p = {.path = path ? path : "<input>",
                       .s = data ? data : "",
                       .n = data ? len : 0,
                       .err = err,
                       .flags = flags,
                       .section = 1,
                       .lc_line = 1,
                       .tmp = SB_INIT};
    size_t bad = utf8_bad((const unsigned char *)p.s, p.n);
    if (bad < p.n) {
        perr(&p, bad, "invalid UTF-8 (byte 0x%02x)", (unsigned char)p.s[bad]);
        return NULL;
    }
    if (p.n >= 3 && memcmp(p.s, "\xef\xbb\xbf", 3) == 0)
        p.i = 3; /* a byte-order mark is not content */
    p.root = p.cur = toml_new(TOML_TABLE);
    p.root->priv_defined = 1;
    p.root->line = p.root->col = 1;
    p.root->end = p.n;
    while (p.i < p.n) {
        skip_ws(&p);
        int c = peek(&p, 0), r = 0;
        if (c < 0)
            break;
        if (c == '#')
            r = end_of_line(&p, "the comment");
        else if (c == '\n' || c == '\r')
            r = newline(&p) < 0 ? -1 : 0;
        else if (c == '[')
            r = parse_header(&p);
        else
            r = parse_keyval(&p);
        if (r) {
            toml_free(p.root);
            sb_release(&p.tmp);
            return NULL;
        }
    }
    sb_release(&p.tmp);
    return p.root;
}

toml_value *toml_parse_file(const char *path, size_t max_bytes, struct as_err *err)
{
    /* O_NONBLOCK so opening a FIFO cannot hang before fstat refuses it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        as_err_errno(err, "%s", path);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        as_err_errno(err, "%s", path);
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        as_err_at(err, path, 0, 0, "not a regular file");
        close(fd);
        return NULL;
    }
    if ((uintmax_t)st.st_size > max_bytes) {
        as_err_at(err, path, 0, 0, "exceeds the %zu-byte limit", max_bytes);
        close(fd);
        return NULL;
    }
    strbuf sb = SB_INIT;
    sb_grow(&sb, (size_t)st.st_size + 1);
    for (;;) {
        /* Read through the cap (+1 byte) so a file that grows is still refused. */
        size_t room = max_bytes + 1 - sb.len;
        if (room > 65536)
            room = 65536;
        sb_grow(&sb, room);
        ssize_t r = read(fd, sb.buf + sb.len, room);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            as_err_errno(err, "%s", path);
            close(fd);
            sb_release(&sb);
            return NULL;
        }
        if (r == 0)
            break;
        sb_setlen(&sb, sb.len + (size_t)r);
        if (sb.len > max_bytes) {
            as_err_at(err, path, 0, 0, "exceeds the %zu-byte limit", max_bytes);
            close(fd);
            sb_release(&sb);
            return NULL;
        }
    }
    close(fd);
    toml_value *v = toml_parse(path, sb.buf, sb.len, err);
    sb_release(&sb);
    return v;
}
