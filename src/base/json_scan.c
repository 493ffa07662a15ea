/* json_scan — see json.h (json_unrepresentable). jansson refuses some
 * well-formed JSON (RFC 8259): \u0000 without JSON_ALLOW_NUL, unpaired
 * surrogate escapes, numbers outside json_int_t or double, nesting past
 * JSON_PARSER_MAX_DEPTH. Its error for those reads like any syntax error, so
 * a reader could not tell "this is not JSON" (a banner: skip it) from "this
 * is JSON we cannot hold" (a message: answer it). This scanner tells them
 * apart. It is iterative — the nesting it reports on is exactly what would
 * overflow a recursive one — and linear in the input. */
#include "base/utf8.h"
#include "base/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define STR_(x) #x
#define STR(x) STR_(x)

struct jscan {
    const unsigned char *s;
    size_t n, i;
    const char *why; /* the first trait jansson refuses */
    size_t why_at;
};

static void trait(struct jscan *sc, size_t at, const char *why)
{
    if (!sc->why) {
        sc->why = why;
        sc->why_at = at;
    }
}

static void skip_ws(struct jscan *sc)
{
    while (sc->i < sc->n && (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t' || sc->s[sc->i] == '\n' ||
                             sc->s[sc->i] == '\r'))
        sc->i++;
}

int json_hex4(const unsigned char *p, unsigned *out)
{
    unsigned u = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = p[k], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        u = u << 4 | d;
    }
    *out = u;
    return 1;
}

/* At '"'; moves past the closing quote. 0 when the string is malformed
 * (raw control characters are: RFC 8259 section 7). Invalid UTF-8 is a trait, not
 * malformation: the text is a message in every other respect (its sender
 * waits for an answer), jansson just cannot hold it. */
static int scan_string(struct jscan *sc)
{
    size_t start = sc->i++;
    while (sc->i < sc->n) {
        unsigned c = sc->s[sc->i];
        if (c == '"') {
            sc->i++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c >= 0x80) {
            unsigned cp;
            size_t k = utf8_decode(sc->s + sc->i, sc->n - sc->i, &cp);
            if (!k) {
                trait(sc, sc->i, "string contains invalid UTF-8");
                k = 1;
            }
            sc->i += k;
            continue;
        }
        if (c != '\\') {
            sc->i++;
            continue;
        }
        if (sc->i + 1 >= sc->n)
            return 0;
        unsigned e = sc->s[sc->i + 1];
        if (e != 'u') {
            if (!strchr("\"\\/bfnrt", (int)e) || e == 0)
                return 0;
            sc->i += 2;
            continue;
        }
        unsigned u, lo;
        if (sc->n - sc->i < 6 || !json_hex4(sc->s + sc->i + 2, &u))
            return 0;
        if (u == 0) {
            trait(sc, start, "string contains \\u0000 (NUL)");
        } else if (u >= 0xD800 && u <= 0xDBFF) {
            if (sc->n - sc->i >= 12 && sc->s[sc->i + 6] == '\\' && sc->s[sc->i + 7] == 'u' &&
                json_hex4(sc->s + sc->i + 8, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                sc->i += 12;
                continue;
            }
            trait(sc, start, "string contains an unpaired surrogate escape");
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
            trait(sc, start, "string contains an unpaired surrogate escape");
        }
        sc->i += 6;
    }
    return 0;
}

static int is_digit(unsigned c)
{
    return c >= '0' && c <= '9';
}

/* At '-' or a digit. Integers must fit json_int_t and reals a double, as
 * jansson reads them (strtoll / strtod overflow; underflow to 0 is fine). */
static int scan_number(struct jscan *sc, strbuf *tmp)
{
    size_t start = sc->i, i = sc->i;
    const unsigned char *s = sc->s;
    int real = 0;
    if (i < sc->n && s[i] == '-')
        i++;
    if (i >= sc->n || !is_digit(s[i]))
        return 0;
    if (s[i] == '0') {
        i++;
    } else {
        while (i < sc->n && is_digit(s[i]))
            i++;
    }
    if (i < sc->n && s[i] == '.') {
        real = 1;
        if (++i >= sc->n || !is_digit(s[i]))
            return 0;
        while (i < sc->n && is_digit(s[i]))
            i++;
    }
    if (i < sc->n && (s[i] == 'e' || s[i] == 'E')) {
        real = 1;
        i++;
        if (i < sc->n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= sc->n || !is_digit(s[i]))
            return 0;
        while (i < sc->n && is_digit(s[i]))
            i++;
    }
    sc->i = i;
    if (sc->why)
        return 1; /* the answer is known; only the grammar is left to check */
    sb_reset(tmp);
    sb_add(tmp, (const char *)s + start, i - start);
    errno = 0;
    if (real) {
        double d = strtod(tmp->buf, NULL);
        if (errno == ERANGE && (d > 1.0 || d < -1.0))
            trait(sc, start, "number out of range");
    } else {
        (void)strtoll(tmp->buf, NULL, 10);
        if (errno == ERANGE)
            trait(sc, start, "number out of range");
    }
    return 1;
}

static int scan_lit(struct jscan *sc, const char *lit)
{
    size_t k = strlen(lit);
    if (sc->n - sc->i < k || memcmp(sc->s + sc->i, lit, k) != 0)
        return 0;
    sc->i += k;
    return 1;
}

/* One scalar at sc->i, or the opening of a container (pushed on open). */
static int scan_value(struct jscan *sc, strbuf *open, strbuf *tmp, int *opened)
{
    unsigned c = sc->s[sc->i];
    *opened = 0;
    /* jansson counts every value, scalars included, toward its depth. */
    if (open->len + 1 > JSON_PARSER_MAX_DEPTH)
        trait(sc, sc->i, "nesting deeper than " STR(JSON_PARSER_MAX_DEPTH) " levels");
    switch (c) {
    case '{':
    case '[':
        sb_addc(open, (char)c);
        sc->i++;
        *opened = 1;
        return 1;
    case '"':
        return scan_string(sc);
    case 't':
        return scan_lit(sc, "true");
    case 'f':
        return scan_lit(sc, "false");
    case 'n':
        return scan_lit(sc, "null");
    default:
        return (c == '-' || is_digit(c)) && scan_number(sc, tmp);
    }
}

/* 1 when the whole text is one well-formed JSON value. */
static int scan_text(struct jscan *sc, strbuf *open, strbuf *tmp)
{
    for (;;) {
        /* expecting a value (a member inside an object) */
        skip_ws(sc);
        if (sc->i >= sc->n)
            return 0;
        int top = open->len ? open->buf[open->len - 1] : 0;
        if (top == '{') {
            /* a key and its ':' */
            if (sc->s[sc->i] != '"' || !scan_string(sc))
                return 0;
            skip_ws(sc);
            if (sc->i >= sc->n || sc->s[sc->i] != ':')
                return 0;
            sc->i++;
            skip_ws(sc);
            if (sc->i >= sc->n)
                return 0;
        }
        int opened;
        if (!scan_value(sc, open, tmp, &opened))
            return 0;
        if (opened) {
            skip_ws(sc);
            if (sc->i < sc->n && sc->s[sc->i] == (open->buf[open->len - 1] == '{' ? '}' : ']')) {
                sc->i++;
                sb_setlen(open, open->len - 1);
            } else {
                continue; /* the container's first member */
            }
        }
        /* a value is complete: close what it completes, or go on after ',' */
        for (;;) {
            skip_ws(sc);
            if (!open->len)
                return sc->i == sc->n;
            if (sc->i >= sc->n)
                return 0;
            char closer = open->buf[open->len - 1] == '{' ? '}' : ']';
            if (sc->s[sc->i] == ',') {
                sc->i++;
                break;
            }
            if (sc->s[sc->i] != (unsigned char)closer)
                return 0;
            sc->i++;
            sb_setlen(open, open->len - 1);
        }
    }
}

const char *json_unrepresentable(const char *s, size_t n, size_t *at)
{
    struct jscan sc = {(const unsigned char *)s, n, 0, NULL, 0};
    strbuf open = SB_INIT, tmp = SB_INIT;
    int ok = scan_text(&sc, &open, &tmp);
    sb_release(&open);
    sb_release(&tmp);
    if (!ok || !sc.why)
        return NULL;
    if (at)
        *at = sc.why_at;
    return sc.why;
}
