/*
 * merge — editing people's config files without damaging them (docs/adapters.md).
 *
 * Why: the CLIs' config files are shared with their owners (and with the
 * CLIs themselves, which rewrite them constantly). agentstack may change the
 * entries it owns and nothing else.
 *
 * Guarantees:
 *  - JSON / JSONC: the whole file is validated first (strict JSON, or JSON
 *    with comments and trailing commas); a malformed file is an error
 *    ("existing config is not valid JSON", with path:line:col) and no output
 *    is produced. Then only byte spans of the entries named in the edit are
 *    touched: an unchanged entry (equal as JSON) keeps its bytes, a changed
 *    one has just its value replaced, a removed one is cut with its comma and
 *    line, a new one is appended after the last entry (or after '{' for the
 *    root variant). Everything else — other keys, comments, float spellings,
 *    key order, CRLF line endings, a UTF-8 BOM, the trailing newline or its
 *    absence — stays byte-for-byte. An edit that changes nothing returns the
 *    input unchanged. Linear time; the file is never parsed into a tree.
 *  - TOML: the same contract through base/toml.h's format-preserving editor.
 *  - Markdown: only the text between the managed markers changes.
 *  - New files follow fixed byte rules (2-space JSON, one array element
 *    per line, raw UTF-8; TOML tables separated by one blank line).
 */
#ifndef AS_ADAPTERS_MERGE_H
#define AS_ADAPTERS_MERGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"

#define ADP_INPUT_MAX ((size_t)256 << 20) /* 256 MiB: larger configs are refused */

/* ---- JSON / JSONC -------------------------------------------------------- */

struct adp_json_entry {
    const char *name;
    const json_t *value;
};

struct adp_json_edit {
    bool jsonc;           /* comments and trailing commas allowed */
    const char *location; /* the section key; NULL = edit the root itself */
    const struct adp_json_entry *upserts;
    size_t n_upserts;
    const char *const *removes; /* names to cut (ignored when also upserted) */
    size_t n_removes;
};

/* Merges ed into text (the file's bytes; len 0 or blank = no file) into out.
 * Returns 0, or -1 + err (out untouched) when the text is not valid JSON /
 * JSONC, is not an object, or holds the section key twice. */
int adp_json_merge(const char *path, const char *text, size_t len, const struct adp_json_edit *ed,
                   strbuf *out, struct as_err *err);

/* Reads the value of root key `key` (NULL = the whole root) as a jansson
 * value. *out = NULL when the key (or the file) is absent. -1 + err when the
 * text is malformed, or when the decoded span holds what jansson cannot
 * (\u0000 in a string or key, an unpaired surrogate escape, a number out of
 * range): refused at file:line:col, never truncated or skipped. Only the
 * key's span is decoded. */
int adp_json_read(const char *path, const char *text, size_t len, bool jsonc, const char *key,
                  json_t **out, struct as_err *err);

/* Pretty form of the byte rules above: unit-indented, "key": value, one
 * array element per line, {} / [] when empty, raw UTF-8 (escaping only ",
 * \ and control characters). Continuation lines start with base. */
void adp_json_emit(const json_t *v, const char *base, const char *unit, const char *nl,
                   strbuf *out);

/* ---- TOML ---------------------------------------------------------------- */

struct adp_toml_entry {
    const char *name;
    const toml_value *table; /* the server body */
};

/* Upserts [<location>.<name>] tables and removes [<location>.<removed>] in
 * text (len 0 = no file) through the format-preserving editor; a new or
 * empty file is written in the new-file layout above. -1 + err ("existing config
 * is not valid TOML") when the text does not parse. */
int adp_toml_merge(const char *path, const char *text, size_t len, const char *location,
                   const struct adp_toml_entry *upserts, size_t n_upserts,
                   const char *const *removes, size_t n_removes, strbuf *out, struct as_err *err);

/* The top-level variant (settings, hooks): each key of set (a
 * table) becomes a root key — scalars and arrays as `key = value`, tables
 * as [key] merged key by key (arrays of tables inline) — and each name in
 * removes is cut. Everything else keeps its bytes. */
int adp_toml_merge_root(const char *path, const char *text, size_t len, const toml_value *set,
                        const char *const *removes, size_t n_removes, strbuf *out,
                        struct as_err *err);

/* ---- Markdown managed region --------------------------------------------- */

#define ADP_MD_START "<!-- agentstack:start -->"
#define ADP_MD_END "<!-- agentstack:end -->"

/* Replaces (or adds, or with empty content removes) the managed region. */
void adp_md_region(const char *text, size_t len, const char *content, strbuf *out);

/* The 1-based number of the first line of s that adp_md_region would take
 * for a marker (either one; the same whole-line match, a trailing CR
 * allowed), or 0. Content carrying one would end or restart the region
 * early, so the text after it escapes the region and every later run adds
 * another copy: callers refuse such content rather than render it. *which
 * (optional) gets the marker found. */
size_t adp_md_marker_line(const char *s, size_t n, const char **which);

#endif
