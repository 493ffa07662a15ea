/*
 * json — jansson helpers, and the canonical JSON form that every digest uses.
 *
 * Canonical JSON: keys sorted byte-wise at every
 * depth, no whitespace, '/' not escaped, non-ASCII written as UTF-8,
 * integers as integers, reals in the shortest form that round-trips.
 * Two equal values always have the same canonical bytes.
 */
#ifndef AS_BASE_JSON_H
#define AS_BASE_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"

/* json_escape flags: the three writers differ on purpose and their bytes
 * are pinned (digests, hash-chained audit rows, files we edit in place).
 * DEL and FIX_UTF8 are also bits of json.c's byte-class table. */
enum {
    JSON_ESC_UPPER_HEX = 1, /* \u001F as jansson writes it (audit rows); else \u001f */
    JSON_ESC_DEL = 2,       /* 0x7f as \u007f (edited config files); else literal */
    JSON_ESC_FIX_UTF8 = 4,  /* invalid UTF-8 -> U+FFFD (canonical form); else bytes as is */
};
/* Appends s[0..len) escaped for the inside of a JSON string (no quotes):
 * '"', '\\', and controls (\b \f \n \r \t short, others \u00XX); '/' and
 * non-ASCII stay literal. Embedded NULs are escaped like any control. */
void json_escape(const char *s, size_t len, unsigned flags, strbuf *out);
/* Appends the canonical form of v. */
void json_canonical(const json_t *v, strbuf *out);
/* The 4 hex digits of a \uXXXX escape at p: 1 and *out, or 0 when one is no
 * hex digit. */
int json_hex4(const unsigned char *p, unsigned *out);
/* Parses text; on error err reads "<path>:<line>:<col>: <jansson message>", or
 * json_unrepresentable's reason when the text is JSON jansson cannot hold. */
json_t *json_parse(const char *path, const char *text, size_t len, struct as_err *err);
/* Why jansson (JSON_DECODE_ANY, no JSON_ALLOW_NUL) refuses text that is
 * nonetheless one well-formed JSON value (RFC 8259) — or would be, but for
 * bytes in a string that are not UTF-8: the first of "string contains
 * \u0000 (NUL)", "string contains an unpaired surrogate escape", "string
 * contains invalid UTF-8", "number out of range", "nesting deeper than 2048
 * levels" (static text), with *at (may be NULL) its byte offset. NULL when
 * the text is not well-formed JSON (a reader may treat it as noise) or has
 * none of them. Iterative and linear: any depth, any length. */
const char *json_unrepresentable(const char *s, size_t n, size_t *at);
/* 1-based line and column (in characters) of byte offset at in s. */
void json_line_col(const char *s, size_t n, size_t at, unsigned *line, unsigned *col);
/* Loads a file with a size cap (via fs_read_file). */
json_t *json_load_path(const char *path, size_t max_bytes, struct as_err *err);
/* Compact dump with keys in insertion order (jansson JSON_COMPACT), appended. */
void json_dump_compact(const json_t *v, strbuf *out);
/* Indented (2 spaces) dump for files people read, with a trailing newline. */
void json_dump_pretty(const json_t *v, strbuf *out);
/* Typed getters that return NULL/def when absent or of another type. */
const char *json_get_str(const json_t *obj, const char *key);
long long json_get_int(const json_t *obj, const char *key, long long def);
int json_get_bool(const json_t *obj, const char *key, int def);
/* Converts a TOML value to JSON (datetimes become strings in RFC 3339 form). */
json_t *json_from_toml(const toml_value *v);

#endif
