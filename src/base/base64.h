/*
 * base64 — the standard alphabet with padding (RFC 4648 section 4), for the
 * two places bytes travel as text: the HTTP Basic scheme the egress proxy
 * expects (egress/connect.c) and the files of an export document
 * (docs/formats.md, "Export document").
 *
 * Guarantees:
 *  - Decoding is strict, so one text has one meaning: only the alphabet, a
 *    length that is a multiple of 4, '=' only as the last one or two
 *    characters, and zero unused bits in the last group; anything else is
 *    refused, never skipped or repaired.
 */
#ifndef AS_BASE_BASE64_H
#define AS_BASE_BASE64_H

#include <stddef.h>

#include "base/strbuf.h"

/* Appends the encoding of data to out. */
void base64_encode(const void *data, size_t len, strbuf *out);

/* Appends the bytes text encodes to out: 0, or -1 (out as it was) when text
 * is not canonical base64. */
int base64_decode(const char *text, size_t len, strbuf *out);

#endif
