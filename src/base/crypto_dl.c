/*
 * crypto_dl — see crypto_dl.h for why and what is guaranteed.
 */
#include "base/crypto_dl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dl.h"

#define AS_STR_(x) #x
#define AS_STR(x) AS_STR_(x)
/* The soname of the OpenSSL these headers describe (libcrypto.so.3 for 3.x). */
static const char *const default_names[] = {"libcrypto.so." AS_STR(OPENSSL_VERSION_MAJOR), NULL};
static const char *const *names = default_names;

static struct as_libcrypto api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

/* Each entry point once: its member and OpenSSL's name. The list is kept
 * as written (one row each); clang-format would reflow it. */
/* clang-format off */
#define CRYPTO_ENTRY_POINTS(X)                                           \
    X(sha256_init, SHA256_Init)                                          \
    X(sha256_update, SHA256_Update)                                      \
    X(sha256_final, SHA256_Final)                                        \
    X(pkey_new_raw_private_key, EVP_PKEY_new_raw_private_key)            \
    X(pkey_new_raw_public_key, EVP_PKEY_new_raw_public_key)              \
    X(pkey_get_raw_public_key, EVP_PKEY_get_raw_public_key)              \
    X(pkey_free, EVP_PKEY_free)                                          \
    X(md_ctx_new, EVP_MD_CTX_new)                                        \
    X(md_ctx_free, EVP_MD_CTX_free)                                      \
    X(digest_sign_init, EVP_DigestSignInit)                              \
    X(digest_sign, EVP_DigestSign)                                       \
    X(digest_verify_init, EVP_DigestVerifyInit)                          \
    X(digest_verify, EVP_DigestVerify)
#define PROTO(member, fn) DL_PROTO_CHECK(struct as_libcrypto, member, fn);
CRYPTO_ENTRY_POINTS(PROTO)
#undef PROTO
#define ENTRY(member, fn) {#fn, offsetof(struct as_libcrypto, member)},
static const struct dl_sym syms[] = {CRYPTO_ENTRY_POINTS(ENTRY)};
#undef ENTRY
/* clang-format on */
_Static_assert(sizeof syms / sizeof syms[0] == sizeof(struct as_libcrypto) / sizeof(void *),
               "every entry point in struct as_libcrypto is looked up");

static void load(void)
{
    struct as_err err = AS_ERR_INIT;
    struct as_libcrypto tmp;
    if (!dl_load_table(names, "libcrypto", CRYPTO_INSTALL_HINT, syms, sizeof syms / sizeof syms[0],
                       &tmp, &err)) {
        /* Every digest agentstack computes guards something (a pin, a
         * consent, the audit chain): without libcrypto none can be made,
         * so nothing goes on. */
        char buf[1024];
        fprintf(stderr, "agentstack: %s\n", as_err_str(&err, buf, sizeof buf));
        exit(1);
    }
    api = tmp;
    loaded = 1;
}

const struct as_libcrypto *crypto_api(void)
{
    pthread_once(&once, load);
    return &api;
}

int crypto_loaded(void)
{
    return loaded;
}

void crypto__set_names(const char *const *list)
{
    names = list ? list : default_names;
}
