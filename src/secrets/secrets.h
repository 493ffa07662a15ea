/*
 * secrets — resolves ${NAME} references to values on this machine
 * (docs/secrets.md).
 *
 * Why: manifests name secrets, never hold them. Every consumer (the gateway
 * building an upstream, apply rendering a config) asks one chain, so a value
 * is found in the same place whoever asks, and no consumer grows its own
 * idea of where secrets live.
 *
 * The chain is an ordered list of backends (function pointers), first hit
 * wins. The default chain is: process environment → the file store
 * $AGENTSTACK_HOME/secrets.env → the project's <manifest dir>/.env. The OS
 * keychain and varlock slot in with sec_chain_insert_before(chain, "file",
 * …) (keychain before the file store, varlock before the keychain), without touching any consumer.
 *
 * Guarantees:
 *  - A failed layer does not stop the walk; "failed" beats "missing" in the
 *    outcome, so a broken store is never reported as a merely absent value.
 *  - Values never appear in an error, a reason or a log line; every buffer
 *    that held a value is wiped (explicit_bzero) before it is freed.
 *  - NUL is refused in a value everywhere (a C consumer would truncate it).
 *  - The file store is used only when it is a regular file owned by this
 *    user with no group/other permission bits; otherwise that layer fails
 *    and says how to fix it.
 *  - Each name is resolved at most once per chain (cached), so one build of
 *    a gateway sees one consistent value per name.
 *  - secrets/ knows no policy: callers apply [policy.secrets] before asking.
 */
#ifndef AS_SECRETS_SECRETS_H
#define AS_SECRETS_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"

#define SEC_DOTENV_MAX_BYTES ((size_t)1 << 20)

enum sec_status {
    SEC_FOUND = 0,
    SEC_MISSING = 1,
    SEC_FAILED = 2,
};
/* "found" | "missing" | "failed" */
const char *sec_status_name(enum sec_status s);
/* ^[A-Za-z_][A-Za-z0-9_]*$: the names a secret (an environment variable)
 * may have — the one rule of the chain, the stores and a pack's env list. */
bool sec_name_ok(const char *s);

struct sec_backend {
    const char *name; /* "env", "file", ".env" (later "keychain", "varlock") */
    /* Looks name up. SEC_FOUND: the value is appended to out (the caller
     * wipes it). SEC_MISSING: nothing. SEC_FAILED: err says why, never with
     * a value in it. */
    enum sec_status (*lookup)(void *ctx, const char *name, strbuf *out, struct as_err *err);
    /* Frees ctx (may be NULL). Called once when the chain is freed. */
    void (*release)(void *ctx);
    void *ctx;
};

struct sec_chain;

struct sec_chain *sec_chain_new(void);
void sec_chain_free(struct sec_chain *c);
/* Appends a backend; the chain owns b->ctx from now on. */
void sec_chain_append(struct sec_chain *c, const struct sec_backend *b);
/* Inserts before the backend called `before` (appends when there is none). */
void sec_chain_insert_before(struct sec_chain *c, const char *before, const struct sec_backend *b);
/* Number of backends and the name of the i-th (for status surfaces). */
size_t sec_chain_count(const struct sec_chain *c);
const char *sec_chain_name(const struct sec_chain *c, size_t i);

/* The process environment. */
struct sec_backend sec_backend_env(void);
/* A KEY=value file read once, on first use (docs/secrets.md syntax). name is the
 * backend's name; require_private: refuse the file unless it is a regular
 * file owned by us without group/other permissions (the file store). */
struct sec_backend sec_backend_dotenv(const char *name, const char *path, int require_private);

/* env → $AGENTSTACK_HOME/secrets.env (when the home can be located) →
 * project_dotenv (may be NULL). */
struct sec_chain *sec_chain_default(const char *project_dotenv);

struct sec_result {
    enum sec_status status;
    const char *source; /* the backend that found it, or the first that failed */
    char why[512];      /* SEC_FAILED: "<backend>: <cause>" (never a value) */
};

/* Resolves name (must satisfy the ${NAME} grammar). value is reset first and
 * receives the value on SEC_FOUND; release it with sb_release_secure. r may
 * be NULL. */
enum sec_status sec_resolve(struct sec_chain *c, const char *name, strbuf *value,
                            struct sec_result *r);
/* Where a name would resolve, without keeping the value (presence only). */
enum sec_status sec_locate(struct sec_chain *c, const char *name, struct sec_result *r);

/* ---- .env syntax ---------------------------------------------------------- */

/* One KEY=value entry; key and value are not NUL-terminated. Return non-zero
 * to stop. */
typedef int (*sec_dotenv_fn)(void *ctx, const char *key, size_t klen, const char *val, size_t vlen,
                             unsigned line);
/* Reader: each line trimmed; blank and '#' lines skipped; an optional
 * "export " prefix; split at the first '='; key and value trimmed; one
 * surrounding pair of '"' or '\'' stripped; no escapes. Lines without '='
 * or with an empty key are skipped. */
void sec_dotenv_parse(const char *text, size_t len, sec_dotenv_fn fn, void *ctx);

/* ---- masking (mask.c) -------------------------------------------------- */

/* A resolved value and the name it is shown as. */
struct sec_masked {
    const char *name;
    const char *value;
};

/* Copies text to out with every occurrence of a value replaced by
 * ${NAME}: scanning from the left, the longest value starting at a
 * position is masked, and so, whole, is any occurrence that overlaps what
 * was masked and runs past it, so no byte of a value is shown, even where
 * two values overlap. Markers are never rescanned; empty values are
 * skipped. Every place that shows text which may hold resolved values (a
 * rendered config's diff, an upstream's errors) masks through it. */
void sec_mask(const struct sec_masked *v, size_t n, const char *text, size_t len, strbuf *out);

#endif
