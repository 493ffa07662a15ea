/*
 * backends — the rest of the resolution chain (docs/secrets.md) and
 * the writers behind `agentstack secret` and `init`: the OS keychain (Secret
 * Service over D-Bus through libsecret), varlock, and the two KEY=value
 * stores ($AGENTSTACK_HOME/secrets.env and a project's .env).
 *
 * Why here: secrets.h keeps the chain and the read-only file backends; the
 * things that talk to another process (a keychain daemon, a varlock binary)
 * or write a value to disk live in one place, so every writer refuses the
 * same bytes and every reader sees the same order:
 *     env → varlock → keychain → file store → project .env
 *
 * Guarantees:
 *  - Never a silent fallback: when the keychain cannot be reached, every
 *    keychain call fails and says why ("no D-Bus session bus", "no Secret
 *    Service on the session bus: …"); nothing is written elsewhere instead.
 *  - A keychain call never hangs: each one is cancelled after
 *    SEC_KEYCHAIN_TIMEOUT_MS (a locked keyring waiting on a prompt nobody
 *    can answer fails instead).
 *  - Listing keychain names reads attributes only; no secret is loaded or
 *    unlocked (status surfaces locate, they never read values).
 *  - NUL is refused in every value; CR and LF are refused for the KEY=value
 *    stores (the format has no escapes, so a newline would forge a line);
 *    the keychain accepts them. Empty values are refused.
 *  - KEY=value files are replaced atomically (temp + fsync + rename), are
 *    0600 (an existing looser file is tightened before the new bytes go
 *    in), a symlink is refused, other lines keep their bytes, and the file
 *    store is written under the one writer lock ($AGENTSTACK_HOME/.lock).
 *  - varlock runs only when the caller vouches that the project is trusted
 *    and passes the .env.schema digest the lock pinned; the schema's bytes
 *    must still hash to it, or the layer stays empty. It runs at
 *    most once per chain, from the manifest dir, with stdin closed, bounded
 *    output and a deadline; any failure drops the layer.
 *  - Values never appear in an error message.
 */
#ifndef AS_SECRETS_BACKENDS_H
#define AS_SECRETS_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "secrets/secrets.h"

#define SEC_KEYCHAIN_SERVICE "agentstack"
#define SEC_KEYCHAIN_TIMEOUT_MS 15000
#define SEC_VARLOCK_TIMEOUT_MS 30000
#define SEC_VARLOCK_MAX_OUTPUT ((size_t)8 << 20)

/* ---- value rules ----------------------------------------------------------- */

enum sec_store_kind {
    SEC_STORE_KEYCHAIN, /* the OS keychain (CR/LF allowed) */
    SEC_STORE_FILE,     /* $AGENTSTACK_HOME/secrets.env */
    SEC_STORE_DOTENV,   /* a project's <manifest dir>/.env */
};
/* "the OS keychain", "the file store", "the project .env" */
const char *sec_store_label(enum sec_store_kind k);

/* 0 when value may be stored in k; -1 + err ("the value contains a NUL
 * byte", "… a line break; .env files cannot hold one — store it in the OS
 * keychain", "the value is empty"). */
int sec_value_check(enum sec_store_kind k, const char *value, size_t len, struct as_err *err);

/* ---- OS keychain (Secret Service) --------------------------------------- */

/* true when this build has libsecret (AS_HAVE_LIBSECRET). */
bool sec_keychain_compiled(void);
/* 0 when a Secret Service answers on the session bus; -1 + err saying why
 * not (this build has no keychain support / no session bus / no service).
 * The answer is probed once per process. */
int sec_keychain_probe(struct as_err *err);
/* Stores (or replaces) service=agentstack, account=name. */
int sec_keychain_store(const char *name, const char *value, size_t len, struct as_err *err);
/* SEC_FOUND (value appended to out), SEC_MISSING, or SEC_FAILED + err
 * ("keychain read failed: <cause>"). One retry on failure. */
enum sec_status sec_keychain_lookup(const char *name, strbuf *out, struct as_err *err);
/* Removes the item; *existed tells whether there was one (may be NULL). */
int sec_keychain_delete(const char *name, bool *existed, struct as_err *err);
/* Names stored under service=agentstack (attributes only, sorted). */
int sec_keychain_names(strvec *names, struct as_err *err);
/* The chain backend "keychain" (lookups fail, never miss, when unreachable). */
struct sec_backend sec_backend_keychain(void);

/* ---- varlock --------------------------------------------------------------- */

/* The chain backend "varlock": `varlock load --format json-full --compact`
 * run once in manifest_dir, accepting {"N":"v"} and {"N":{"value":"v"}}.
 * schema_sha256 is the lock's pin of <manifest_dir>/.env.schema (64 hex);
 * varlock_bin NULL = "varlock" from PATH. */
struct sec_backend sec_backend_varlock(const char *manifest_dir, const char *schema_sha256,
                                       const char *varlock_bin);

/* ---- KEY=value stores ---------------------------------------------------- */

/* $AGENTSTACK_HOME/secrets.env (or ~/.agentstack/secrets.env). */
int sec_file_store_path(strbuf *out, struct as_err *err);
/* Sets name=value in a KEY=value file (docs/secrets.md: replaced in place,
 * else appended; quoted with '"' when empty, padded or holding whitespace,
 * '#', '"' or '\''). The file and missing parent dirs (0700) are created.
 * lock_dir: take the writer lock there first (NULL: no lock). */
int sec_dotenv_set(const char *path, const char *name, const char *value, size_t len,
                   enum sec_store_kind k, const char *lock_dir, struct as_err *err);
/* Removes every assignment of name; *existed tells whether one was there. */
int sec_dotenv_remove(const char *path, const char *name, bool *existed, const char *lock_dir,
                      struct as_err *err);
/* Names assigned in a KEY=value file (file order, unique). A missing file
 * gives none. */
int sec_dotenv_names(const char *path, strvec *names, struct as_err *err);
/* In a git project (<root>/.git exists), makes sure <root>/.gitignore
 * ignores rel ("/.agentstack/.env"): appends "# agentstack: local secrets —
 * never commit" and the anchored rule unless rel, ".env", "/.env" or
 * "**\/.env" is already listed. *added tells whether it wrote. */
int sec_gitignore_env(const char *project_root, const char *rel, bool *added, struct as_err *err);

/* ---- the full chain ------------------------------------------------------ */

struct sec_chain_opts {
    const char *project_dotenv; /* <manifest dir>/.env, or NULL */
    /* varlock: both set only by a caller that checked the project is
     * trusted and the lock pins .env.schema; NULL = no varlock.
     * secret list, doctor and bootstrap never set them. */
    const char *varlock_dir;
    const char *varlock_schema_sha256;
    const char *varlock_bin; /* NULL = "varlock" */
    bool no_keychain;        /* leave the keychain out */
};
/* env → varlock → keychain → file store → project .env. */
struct sec_chain *sec_chain_full(const struct sec_chain_opts *o);
/* A renderer's resolve callback (the shape of adapters' adp_resolve_fn)
 * over a chain: 1 + the value appended, 0 missing, -1 + err (never the
 * value) when a store failed. chain is a struct sec_chain *. [policy.secrets]
 * is the caller's to apply before asking. */
int sec_resolve_for_render(void *chain, const char *name, const char *server, strbuf *out,
                           struct as_err *err);

#endif
