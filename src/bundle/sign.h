/*
 * sign — Ed25519 signatures over agentstack.lock (docs/formats.md).
 *
 * Why: a team can publish the public key that signed its lock so a checkout
 * can tell the lock is the one the team reviewed. A signature never creates
 * trust; it only says who wrote these lock bytes.
 *
 * Guarantees:
 *  - The signing key is persistent: $AGENTSTACK_HOME/keys/ed25519.key holds
 *    the 32-byte seed as hex (mode 0600, created on first use from the OS
 *    CSPRNG; creation fails rather than fall back to weak entropy), and
 *    keys/ed25519.pub the public key as hex.
 *  - A key file that is a symlink, not regular, malformed, or readable by
 *    group or others is refused, never silently replaced.
 *  - Pure Ed25519 (RFC 8032, no pre-hash) through OpenSSL EVP_PKEY_ED25519;
 *    the seed is wiped from memory after use.
 */
#ifndef AS_BUNDLE_SIGN_H
#define AS_BUNDLE_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define SIGN_SEED_LEN 32
#define SIGN_PUB_LEN 32
#define SIGN_SIG_LEN 64

/* Loads the key pair from keys_dir (ed25519.key / ed25519.pub), creating it
 * when absent (*created = 1). pub receives the public key. */
int sign_key_ensure(const char *keys_dir, uint8_t pub[SIGN_PUB_LEN], int *created,
                    struct as_err *err);
/* Reads this machine's public key from keys_dir without creating one:
 * 1 with pub filled, 0 when no key exists yet, -1 when the key file is
 * unusable (err says why). */
int sign_key_public(const char *keys_dir, uint8_t pub[SIGN_PUB_LEN], struct as_err *err);
/* Signs msg with the key in keys_dir (created when absent). */
int sign_message(const char *keys_dir, const void *msg, size_t len, uint8_t sig[SIGN_SIG_LEN],
                 uint8_t pub[SIGN_PUB_LEN], int *created, struct as_err *err);
/* 1 when sig is a valid signature of msg under pub, else 0. */
int sign_verify(const uint8_t pub[SIGN_PUB_LEN], const uint8_t sig[SIGN_SIG_LEN], const void *msg,
                size_t len);
/* Parses hex after trimming surrounding whitespace, either case, exactly n bytes.
 * Returns 0, or -1 when the text is not 2n hex chars. */
int sign_parse_hex(const char *text, uint8_t *out, size_t n);

/* Public key from a seed (tests and key checks). */
int sign_public_from_seed(const uint8_t seed[SIGN_SEED_LEN], uint8_t pub[SIGN_PUB_LEN],
                          struct as_err *err);

#endif
