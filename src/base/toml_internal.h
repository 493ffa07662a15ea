/*
 * toml_internal — helpers shared by the toml_*.c files and nothing else.
 *
 * Kept out of toml.h so the public API stays the one teammates code against;
 * the key index and datetime checks live here because the parser, the
 * builder and the editor must agree on them exactly.
 */
#ifndef AS_BASE_TOML_INTERNAL_H
#define AS_BASE_TOML_INTERNAL_H

#include "base/toml.h"

/* Open-addressing hash of a table's keys; a slot holds index + 1 (0 = empty)
 * and the key's hash, so probes rarely touch the keys themselves. */
struct toml_slot {
    uint32_t idx1;
    uint32_t hash;
};
struct toml_index {
    struct toml_slot *slot;
    size_t cap; /* power of two */
    size_t n;   /* entries indexed; a mismatch with tab.n forces a rebuild */
};

/* Tables smaller than this are searched linearly. */
#define TOML_INDEX_MIN 12

/* Index of key (len bytes) in tab, or (size_t)-1. */
size_t toml_find_index(const toml_value *tab, const char *key, size_t len);
/* Appends key -> v without a duplicate check; takes key and v. Returns the index. */
size_t toml_table_append(toml_value *tab, char *key, size_t keylen, toml_value *v, unsigned line,
                         unsigned col);
/* Appends a key of len bytes (NUL allowed), bare when possible. */
void toml_emit_keyn(const char *key, size_t len, strbuf *out);
void toml_index_drop(toml_value *tab);

/* Checks datetime text s[0..n) and returns its type (TOML_DATETIME ..
 * TOML_TIME_LOCAL), or -1 with *why set to a description of the problem.
 * *norm gets the normalized text (caller frees) on success. */
int toml_datetime_scan(const char *s, size_t n, char **norm, const char **why);

/* The "C" locale, for number conversions that must not follow LC_NUMERIC
 * (may be (locale_t)0 if it cannot be created; callers fall back). */
#include <locale.h>
locale_t toml_c_locale(void);

/* Shortest text that reads back as exactly f ("inf", "-inf", "nan" for the
 * specials); always contains '.', 'e', or is a special. */
void toml_format_float(double f, strbuf *out);

/* Writes tab as a [path] section ([[path]] with aot), then its sub-tables as
 * their own sections; the header is written even when the table is empty. */
void toml_emit_section(const toml_value *tab, const char *const *path, size_t n, bool aot,
                       strbuf *out);

/* Bare keys: A-Za-z0-9_- and non-empty. */
bool toml_is_bare_key(const char *s, size_t n);

/* Appends s as a TOML basic string, "quoted", escaping what must be. */
void toml_quote_basic(const char *s, size_t n, strbuf *out);

#endif
