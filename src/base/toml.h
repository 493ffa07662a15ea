/*
 * toml — our own TOML 1.0.0 parser, emitter and format-preserving editor.
 *
 * Why our own: Debian ships no maintained C TOML library, and agentstack
 * both reads hostile repository files and edits files people wrote by hand.
 *
 * Guarantees:
 *  - toml_parse never crashes and never recurses without bound, whatever the
 *    bytes; on bad input it returns NULL and fills err with path:line:col.
 *  - Every value and key records where it came from (1-based line and
 *    column; byte offsets into the source), so later layers (manifest
 *    validation) can point at the exact place.
 *  - Tables keep the file's key order.
 *  - Conformant with TOML 1.0.0 as measured by the toml-test corpus.
 *  - The editor changes only the span it edits; every other byte (comments,
 *    blank lines, key order, quoting) stays as it was.
 */
#ifndef AS_BASE_TOML_H
#define AS_BASE_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strbuf.h"

enum toml_type {
    TOML_TABLE,
    TOML_ARRAY,
    TOML_STRING,
    TOML_INTEGER,
    TOML_FLOAT,
    TOML_BOOL,
    TOML_DATETIME,       /* offset date-time, e.g. 1979-05-27T07:32:00Z */
    TOML_DATETIME_LOCAL, /* 1979-05-27T07:32:00 */
    TOML_DATE_LOCAL,     /* 1979-05-27 */
    TOML_TIME_LOCAL,     /* 07:32:00 */
};

typedef struct toml_value toml_value;

/* One key = value entry of a table, in file order. */
typedef struct toml_kv {
    char *key;     /* decoded key, NUL-terminated (keys containing NUL are refused) */
    unsigned line; /* where the key was written (for dotted keys: the last segment) */
    unsigned col;
    toml_value *val;
    size_t keylen; /* added: bytes in key; differs from strlen(key) only for keys
                      with NUL, which only TOML_PARSE_NUL_KEYS lets through */
} toml_kv;

struct toml_value {
    enum toml_type type;
    unsigned line, col; /* where the value starts; tables: their header, or first key */
    size_t off, end;    /* byte span in the source; 0,0 for built values */
    union {
        struct {
            char *s; /* decoded, NUL-terminated; may contain NUL (use len) */
            size_t len;
        } str;
        int64_t i;
        double f;
        bool b;
        char *dt; /* datetimes: the text as written, with 't'/' ' normalized to 'T'
                     and 'z' to 'Z' (toml-test's form) */
        struct {
            toml_value **items;
            size_t n, cap;
        } arr;
        struct {
            toml_kv *kv;
            size_t n, cap;
        } tab;
    } u;
    /* parser bookkeeping, readable by users */
    unsigned is_inline : 1; /* inline table { } or inline array [ ] */
    unsigned is_array_of_tables : 1;
    unsigned implicit : 1; /* table created only by a dotted key / header path */
    /* Private bookkeeping (added): the parser's definition state and the key
     * index of large tables. Treat u.tab as read-only and change tables only
     * through toml_table_set / toml_table_remove so the index stays right. */
    unsigned priv_defined : 1; /* root, [header], [[header]] entry or { } table */
    unsigned priv_dotted;      /* parser section whose dotted keys made it, 0 = none */
    struct toml_index *priv_index;
};

/* Limits. Nesting deeper than TOML_MAX_DEPTH (tables, arrays, inline tables
 * and key segments counted together from the root) is refused, so no part of
 * the library recurses without bound. */
#define TOML_MAX_DEPTH 128

/* ---- parsing ------------------------------------------------------------ */

/* Parses TOML text (need not be NUL-terminated). path is used in errors only.
 * Returns the root table or NULL with err set ("path:line:col: what"). */
toml_value *toml_parse(const char *path, const char *data, size_t len, struct as_err *err);
/* Added: toml_parse with flags. TOML_PARSE_NUL_KEYS accepts keys containing
 * NUL (valid TOML, "\u0000" in a quoted key) for the conformance decoder;
 * everything else keeps refusing them, so kv->key is always the whole key. */
#define TOML_PARSE_NUL_KEYS 1u
toml_value *toml_parse_ex(const char *path, const char *data, size_t len, unsigned flags,
                          struct as_err *err);
/* Reads and parses a file, refusing files larger than max_bytes
 * ("exceeds the N-byte limit"). */
toml_value *toml_parse_file(const char *path, size_t max_bytes, struct as_err *err);
void toml_free(toml_value *v);

/* ---- reading ------------------------------------------------------------ */

/* Table lookup by key (NULL if absent or v is not a table). */
toml_value *toml_get(const toml_value *tab, const char *key);
/* Entry lookup, to know where a key was written. */
const toml_kv *toml_get_kv(const toml_value *tab, const char *key);
/* Dotted lookup through tables: toml_get_path(root, "policy", "tools", NULL). */
toml_value *toml_get_path(const toml_value *root, ...) __attribute__((sentinel));
/* Number of entries (table) or items (array); 0 otherwise. */
size_t toml_len(const toml_value *v);
const toml_kv *toml_entry(const toml_value *tab, size_t i);
toml_value *toml_at(const toml_value *arr, size_t i);
const char *toml_type_name(enum toml_type t); /* "string", "integer", "table", ... */

/* ---- building ------------------------------------------------------------ */

toml_value *toml_new(enum toml_type t);
toml_value *toml_new_string(const char *s);
toml_value *toml_new_stringn(const char *s, size_t len);
toml_value *toml_new_int(int64_t i);
toml_value *toml_new_float(double f);
toml_value *toml_new_bool(bool b);
/* A datetime of type t (TOML_DATETIME .. TOML_TIME_LOCAL) from its TOML text,
 * e.g. "1979-05-27T07:32:00Z". NULL if text is not a valid value of that type. */
toml_value *toml_new_datetime(enum toml_type t, const char *text);
/* Sets key in a table, replacing (and freeing) any existing value; takes v. */
void toml_table_set(toml_value *tab, const char *key, toml_value *v);
/* Removes key; returns 1 if it was present. */
int toml_table_remove(toml_value *tab, const char *key);
void toml_array_push(toml_value *arr, toml_value *v);
toml_value *toml_clone(const toml_value *v);
/* Deep equality of values (type and content; positions ignored). */
bool toml_equal(const toml_value *a, const toml_value *b);

/* ---- emitting ------------------------------------------------------------ */

/* Renders a document (root table) as TOML text: scalars first, then
 * sub-tables as [headers] and arrays of tables as [[headers]], in key order.
 * Keys are bare when they can be, quoted otherwise. parse(emit(t)) == t. */
void toml_emit(const toml_value *root, strbuf *out);
/* Renders one value inline (strings quoted, arrays [..], tables {..}). */
void toml_emit_value(const toml_value *v, strbuf *out);
/* Appends a key, bare when possible, else a basic quoted string. */
void toml_emit_key(const char *key, strbuf *out);

/* ---- tagged JSON (toml-test) ------------------------------------------- */

/* Renders the toml-test tagged JSON encoding of a document. */
void toml_to_tagged_json(const toml_value *root, strbuf *out);

/* ---- format-preserving editing ---------------------------------------- */

typedef struct toml_edit toml_edit;

/* Opens text for editing; NULL + err if it does not parse. */
toml_edit *toml_edit_open(const char *path, const char *data, size_t len, struct as_err *err);
void toml_edit_free(toml_edit *ed);
/* Current text (always valid TOML after a successful edit). */
const char *toml_edit_text(const toml_edit *ed, size_t *len);
/* The parsed view of the current text. */
const toml_value *toml_edit_root(const toml_edit *ed);

/* A key path is an array of n decoded key segments: {"servers", "demo"}. */

/* Sets key path[n-1] inside the table path[0..n-2] to value v (any type, including
 * an inline table or array). Replaces an existing value in place; otherwise
 * appends the key at the end of that table's section, creating a [header] at
 * the end of the file if the table does not exist. Does not take v. */
int toml_edit_set(toml_edit *ed, const char *const *path, size_t n, const toml_value *v,
                  struct as_err *err);
/* Replaces or adds the whole standard table at path with the content of tab
 * (written as a [header] section, sub-tables as their own headers). */
int toml_edit_set_table(toml_edit *ed, const char *const *path, size_t n, const toml_value *tab,
                        struct as_err *err);
/* Appends one [[path]] entry with the content of tab. */
int toml_edit_append_array_table(toml_edit *ed, const char *const *path, size_t n,
                                 const toml_value *tab, struct as_err *err);
/* Removes a key or a whole table (its header, body and sub-tables).
 * Removing something that is not there is not an error (returns 0). */
int toml_edit_remove(toml_edit *ed, const char *const *path, size_t n, struct as_err *err);
/* Added: the bytes the last successful edit touched — old text
 * [off, off+old_len) became new text [off, off+new_len); every byte before
 * and after is unchanged. */
void toml_edit_last_span(const toml_edit *ed, size_t *off, size_t *old_len, size_t *new_len);

#endif
