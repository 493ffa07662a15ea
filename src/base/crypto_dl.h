/*
 * crypto_dl — libcrypto (OpenSSL 3) loaded on the first digest, not at start.
 *
 * Why: Debian builds libcrypto with BIND_NOW, so linking it makes the
 * dynamic loader resolve ~4,200 symbol relocations before main() at every
 * start — 3 M instructions, about two thirds of a millisecond — even for
 * commands that never hash a byte (`--version`, `run` outside a project,
 * `report`, `runs`). dlopen'ed on first use instead, it is mapped exactly
 * when a digest, an HMAC or a signature is computed, and it is still the
 * system's shared libcrypto (its security updates apply). This is the only
 * way agentstack reaches libcrypto.
 *
 * Guarantees: each entry point has OpenSSL's own prototype (checked at
 * compile time against the installed headers); crypto_api() returns the
 * complete table or ends the process (exit status 1, the library and the
 * install hint on stderr) — libcrypto is a hard dependency, there is no
 * fallback digest and no caller ever sees a partial table. Thread-safe.
 * The secure-memory helpers (explicit_bzero, ct_equal in sha256.h) need no
 * libcrypto.
 */
#ifndef AS_BASE_CRYPTO_DL_H
#define AS_BASE_CRYPTO_DL_H

#include <stddef.h>

/* The SHA256_* primitives are deprecated in OpenSSL 3 but supported; see
 * sha256.c for why they are used instead of EVP digests. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/sha.h>

#define CRYPTO_INSTALL_HINT "install Debian's libssl3 (OpenSSL 3)"

struct as_libcrypto {
    int (*sha256_init)(SHA256_CTX *c);
    int (*sha256_update)(SHA256_CTX *c, const void *data, size_t len);
    int (*sha256_final)(unsigned char *md, SHA256_CTX *c);
    /* Ed25519 signatures (bundle/sign.c): EVP is the only interface. */
    EVP_PKEY *(*pkey_new_raw_private_key)(int type, ENGINE *e, const unsigned char *priv,
                                          size_t len);
    EVP_PKEY *(*pkey_new_raw_public_key)(int type, ENGINE *e, const unsigned char *pub, size_t len);
    int (*pkey_get_raw_public_key)(const EVP_PKEY *pkey, unsigned char *pub, size_t *len);
    void (*pkey_free)(EVP_PKEY *pkey);
    EVP_MD_CTX *(*md_ctx_new)(void);
    void (*md_ctx_free)(EVP_MD_CTX *ctx);
    int (*digest_sign_init)(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e,
                            EVP_PKEY *pkey);
    int (*digest_sign)(EVP_MD_CTX *ctx, unsigned char *sig, size_t *siglen,
                       const unsigned char *tbs, size_t tbslen);
    int (*digest_verify_init)(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e,
                              EVP_PKEY *pkey);
    int (*digest_verify)(EVP_MD_CTX *ctx, const unsigned char *sig, size_t siglen,
                         const unsigned char *tbs, size_t tbslen);
};

/* The table, loading libcrypto on the first call; never NULL (see above). */
const struct as_libcrypto *crypto_api(void);

/* 1 once libcrypto has been loaded in this process (tests, start-up checks). */
int crypto_loaded(void);

/* Test seam: the sonames to try instead of the default (NULL restores it).
 * Only before the first crypto_api() call. */
void crypto__set_names(const char *const *names);

#endif
