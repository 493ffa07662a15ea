/*
 * literal_secret — does a configuration value hold a secret written out in
 * the clear? (06-library-secrets-ops.md §1.5 and §9, 00-overview "Secret
 * values", errata 30.) Shared by `lib sync` (nothing leaves the machine
 * with a literal secret in it), `init` (which values to lift into ${REF}s)
 * and pack ingestion (a pack may not smuggle a credential in a URL or arg).
 *
 * Why three detectors: a key name catches `Authorization = "Bearer sk-1"`
 * whatever the value looks like; well-known prefixes (ghp_, github_pat_,
 * sk-, xoxb-, AKIA, glpat-, JWTs, PEM private keys) catch a token under a
 * neutral name; an entropy test catches the rest of the token-shaped
 * values. The entropy test only looks at runs of token characters of at
 * least 20 bytes mixing upper case, lower case and digits, so package
 * names, paths and URLs do not trip it.
 *
 * Guarantees:
 *  - A ${REF} is never a secret: the key-name rule needs a value without
 *    "${" (the reference's rule), and the shape rules look only at the text
 *    outside valid ${NAME} spans, so "Bearer ${T}" passes while
 *    "ghp_…${X}" does not.
 *  - Pure functions over bytes: no I/O, no allocation but the findings,
 *    linear time, any input (NUL-free C strings) is safe.
 *  - Findings name the key (never the value): a value is never copied into
 *    a finding or a message.
 */
#ifndef AS_BUNDLE_LITERAL_SECRET_H
#define AS_BUNDLE_LITERAL_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#include "base/toml.h"
#include "base/vec.h"

enum lsec_why {
    LSEC_NONE,
    LSEC_KEY_NAME, /* a secret-looking key holds a literal value */
    LSEC_PREFIX,   /* a well-known token prefix (ghp_, sk-, AKIA, …) */
    LSEC_ENTROPY,  /* a long, high-entropy, mixed-class token */
    LSEC_USERINFO, /* a password in a URL's userinfo */
};
/* "key name", "token prefix", "high entropy", "URL password". */
const char *lsec_why_text(enum lsec_why w);

/* Lower-cased key contains authorization, token, secret, api-key, apikey,
 * api_key, password, passwd, bearer, credential or key (§1.5, plus two). */
bool lsec_key_secretish(const char *key);
/* Non-empty and without "${" (§1.5). */
bool lsec_value_literal(const char *value);
/* Prefix and entropy checks on the text outside valid ${NAME} spans. */
enum lsec_why lsec_value_shape(const char *value);
/* The prefix check alone (for prose, where entropy would be noise). */
bool lsec_value_has_prefix_token(const char *value);
/* Key-name rule, then the shape rules. */
enum lsec_why lsec_classify(const char *key, const char *value);

struct lsec_finding {
    char *key;   /* what the message names: 'Authorization', '--token', 'api_key' */
    char *where; /* "headers", "env", "url", "args", a dotted TOML path, a line "12" */
    enum lsec_why why;
};
typedef VEC(struct lsec_finding) lsec_findings;
void lsec_findings_free(lsec_findings *f);

/* One key/value pair (headers, env, any string setting). */
void lsec_check_pair(const char *where, const char *key, const char *value, lsec_findings *out);
/* A URL: userinfo password without "${"; query parameters by name and shape;
 * the rest by shape. */
void lsec_check_url(const char *where, const char *url, lsec_findings *out);
/* An argv list: "k=v" / "--k=v" with a secretish k and a literal v; a
 * secretish flag ("--token") followed by a literal; every arg by shape. */
void lsec_check_args(const char *where, const char *const *args, size_t n, lsec_findings *out);
/* A server definition table (url, args, headers, env, and every other
 * string anywhere in it by key and shape). */
void lsec_check_server_table(const toml_value *server, lsec_findings *out);
/* Any TOML document (hooks, instruction and pack files): every string
 * value by its key and shape, arrays of strings as argv lists. */
void lsec_check_toml(const toml_value *root, lsec_findings *out);
/* One raw text line that may not parse: `key = "v"` / `key: "v"` by key
 * name; prefixes anywhere in the line. where = the caller's label. */
void lsec_check_line(const char *where, const char *line, size_t len, lsec_findings *out);

/* ---- spans in free text (redaction) -------------------------------------- */

/* A secret value's bytes inside a longer text. */
struct lsec_span {
    size_t off, len;
};
typedef VEC(struct lsec_span) lsec_spans;

/* The secret values in free text — a shell command line, a log detail — by
 * the same rules as the checks above, located instead of named: the value
 * after a secretish NAME=, NAME: (headers such as X-Api-Key: v) or
 * --secretish-flag (separate or after '='); a credential after Bearer,
 * Basic or Token; an attached short password flag (-pVALUE, as mysql takes
 * it, at least 4 bytes and not a number); a URL's userinfo password;
 * well-known token prefixes, JWTs, AWS key ids and PEM private key blocks;
 * long high-entropy tokens. Quotes around a value are not part of its span.
 * Spans may overlap; they are appended in no particular order. Linear in
 * len for any input (NULs included). */
void lsec_text_spans(const char *text, size_t len, lsec_spans *out);

#endif
