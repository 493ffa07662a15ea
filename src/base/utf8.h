/*
 * utf8 — one strict UTF-8 decoder for every writer that must tell valid
 * text from bytes (JSON escaping, audit rows, the raw MCP reader, the
 * one-line sanitizer).
 *
 * Guarantee: utf8_decode accepts exactly the well-formed sequences of
 * RFC 3629 — no overlong forms, no surrogates (U+D800..U+DFFF), nothing
 * past U+10FFFF, no truncated sequence at the end of the buffer — which is
 * also what jansson accepts, so a string we pass as valid reads back the
 * same. utf8_encode writes the shortest form of a code point; callers pass
 * code points they validated (<= U+10FFFF, no surrogates). Both are inline
 * because they run per character on the gateway's path.
 */
#ifndef AS_BASE_UTF8_H
#define AS_BASE_UTF8_H

#include <stddef.h>

/* Decodes the sequence at s[0..n) (n >= 1) into *cp; returns its length in
 * bytes, or 0 when it is not well-formed (*cp is then left unspecified). */
static inline size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
    size_t k;
    unsigned c, min;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xE0) == 0xC0)
        k = 2, c = s[0] & 0x1Fu, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0)
        k = 3, c = s[0] & 0x0Fu, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0)
        k = 4, c = s[0] & 0x07u, min = 0x10000;
    else
        return 0;
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return k;
}

/* Writes cp (<= U+10FFFF) as UTF-8 into b; returns the byte count (1..4). */
static inline size_t utf8_encode(unsigned cp, char b[4])
{
    if (cp < 0x80) {
        b[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (char)(0xF0 | cp >> 18);
    b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

#endif
