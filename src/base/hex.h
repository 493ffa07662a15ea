/*
 * hex — one hexadecimal digit's value, for every parser that decodes hex
 * (digests, \u escapes, percent-encoding, shell $'\x..' words).
 *
 * Guarantees: hex_digit_value() is 0-15 for 0-9, a-f, A-F and -1 for every
 * other int, EOF and bytes above 0x7f included.
 */
#ifndef AS_BASE_HEX_H
#define AS_BASE_HEX_H

static inline int hex_digit_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
