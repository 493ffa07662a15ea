/*
 * literal_secret — THE detector of secrets written out in the clear, and
 * the redactor of secret-looking tokens in free text.
 *
 * Why one: `lib sync` (nothing leaves the machine with a literal secret in
 * it), `add` from git and pack ingestion (a repository may not smuggle a
 * credential in), `init` (which values to lift into ${REF}s), `doctor --ci`
 * (a committed manifest holding one) and the host guard's evidence rows (a
 * command line is recorded with its tokens hidden) must agree on what a
 * secret looks like, or one of them lets through what another refuses.
 *
 * What counts:
 *  - Every value is judged by the text outside its valid ${NAME} spans:
 *    "Bearer ${X}" holds none, "Bearer ${X}9f86d0…" holds one.
 *  - Key names: a strong name (authorization, token, secret, api-key,
 *    password, passwd, bearer, credential, private-key, access-key, or the
 *    word key) makes any literal a secret, except a path ("/run/secrets/db"
 *    names a file); a weak word (pass, pwd, pw, pat, passphrase, cookie,
 *    jwt, psk, otp) makes a value that looks like a typed credential one
 *    ("--pass=hunter2hunter2": eight bytes or more, one word, with a digit,
 *    a symbol or both cases, not a placeholder such as <token> or
 *    YOUR_API_KEY).
 *  - Shapes, under any name: well-known prefixes (ghp_, github_pat_, sk-,
 *    xoxb-, AKIA, glpat-, JWTs, PEM private keys); random-looking tokens
 *    (three character classes from 20 bytes, two from 32, switching class
 *    often, ≥ 3.5 bits per byte), judged component by component in paths,
 *    so /home/dev/MyProjects2024/McpServers/run.py and /tmp/tmp.Xa81bQ/x
 *    are no secrets. Where a value is sent as written (a header, an
 *    environment value, a URL's query or path), a bare run of 32+ hex
 *    digits is one too, unless it is marked a digest (sha256:, #, @,
 *    /commit/…) or its key names one (checksum, digest, sha, rev, commit).
 *    UUIDs never are.
 *  - Free text (skill files, docs, history lines): name=value, name: value,
 *    "name": "value", export NAME=value, --name value, Authorization:
 *    Bearer value, token prefixes, URL passwords.
 *
 * Guarantees:
 *  - Pure functions over bytes: no I/O, linear time, any input (NUL-free C
 *    strings; text stops at a NUL) is safe.
 *  - Findings name the key (never the value): a value is never copied into
 *    a finding or a message.
 */
#ifndef AS_BUNDLE_LITERAL_SECRET_H
#define AS_BUNDLE_LITERAL_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/strbuf.h"
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

/* A strong or weak secret name (see above). */
bool lsec_key_secretish(const char *key);
/* Holds literal text: any, without a ${REF}; beside one, at least four
 * letters or digits that are not a scheme word ("Bearer", "Basic"). */
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
/* A JSON document (a skill's or library's .json files): every string by its
 * key and shape, arrays of strings as argv lists. */
void lsec_check_json(const json_t *root, lsec_findings *out);
/* Free text (a SKILL.md, a README, a line of history, a file that does not
 * parse): named values, prefixes and URL passwords anywhere in it; one
 * finding per key. where = the caller's label. */
void lsec_check_text(const char *where, const char *text, size_t len, lsec_findings *out);
/* lsec_check_text on one line (kept for line-by-line callers). */
void lsec_check_line(const char *where, const char *line, size_t len, lsec_findings *out);

/* What a hidden secret is written as. */
#define LSEC_REDACTED "[redacted]"
/* THE redaction entry point for free text (command lines, messages bound
 * for evidence files): appends text with every secret-looking token — what
 * lsec_check_text finds, plus every random-looking token — replaced by
 * "[redacted]" (one per run). Other bytes are copied as they are (the
 * caller decides about controls); text stops at a NUL. Returns how many
 * tokens were hidden. */
size_t lsec_redact(const char *text, size_t len, strbuf *out);

#endif
