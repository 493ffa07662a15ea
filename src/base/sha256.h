/*
 * sha256 — streaming SHA-256 (OpenSSL EVP, so SHA-NI where the CPU has it),
 * HMAC-SHA-256, and the hex forms used in every file agentstack writes.
 * Hex is always lowercase. Digests stream: nothing reads a whole file into
 * memory to hash it.
 */
#ifndef AS_BASE_SHA256_H
#define AS_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

typedef struct sha256_ctx {
    void *md; /* EVP_MD_CTX */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* Appends the 8-byte little-endian length n (the framing of tree digests). */
void sha256_update_u64le(sha256_ctx *c, uint64_t n);
/* Finishes into out[32] and frees the context. */
void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN]);
/* Frees a context without finishing (error paths). */
void sha256_abort(sha256_ctx *c);

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* hex must hold 65 bytes; NUL-terminated lowercase. */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
void hex_encode(const uint8_t *bytes, size_t n, char *out /* 2n+1 */);
/* Decodes exactly 2n hex chars (either case); -1 on bad input. */
int hex_decode(const char *hex, uint8_t *out, size_t n);
/* Streams a file's bytes (no size limit, constant memory); -1 + err on I/O error.
 * Opens with O_NOFOLLOW: a symlink is an error, never followed. */
int sha256_file(const char *path, uint8_t out[SHA256_LEN], struct as_err *err);
int sha256_file_hex(const char *path, char hex[SHA256_HEX_LEN + 1], struct as_err *err);
/* Normalizes a checksum written by a user or an older writer: accepts an optional
 * "sha256:" prefix and upper case; writes 64 lowercase hex chars. -1 if malformed. */
int sha256_normalize_hex(const char *in, char out[SHA256_HEX_LEN + 1]);

/* HMAC-SHA-256 of data under key. */
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                 uint8_t out[SHA256_LEN]);
/* Constant-time comparison; 1 when equal. */
int ct_equal(const void *a, const void *b, size_t n);

#endif
