/* sha256 — see sha256.h. OpenSSL does the hashing so SHA-NI is used where present. */
#include "base/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

/* A failing digest primitive means a broken libcrypto, not bad input: there is
 * no caller that could recover, so stop like an out-of-memory condition. */
static void crypto_fail(const char *what)
{
    fprintf(stderr, "agentstack: libcrypto failure in %s\n", what);
    abort();
}

/* OpenSSL 3 resolves EVP_sha256() and HMAC() by name through the provider
 * store on every use (an implicit fetch: locks, a hash lookup, refcounts),
 * which cost more than hashing a short audit line. Both are fetched once per
 * process and kept for its life; a fetched EVP_MD/EVP_MAC and a configured
 * EVP_MAC_CTX are read-only afterwards, so threads may share them. */
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static EVP_MD *g_md;
static EVP_MAC_CTX *g_hmac; /* HMAC with SHA-256 set, no key: dup'ed per call */

static void fetch_all(void)
{
    g_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac) {
        g_hmac = EVP_MAC_CTX_new(mac);
        EVP_MAC_free(mac); /* the context holds its own reference */
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end(),
        };
        if (g_hmac && EVP_MAC_CTX_set_params(g_hmac, params) != 1) {
            EVP_MAC_CTX_free(g_hmac);
            g_hmac = NULL;
        }
    }
}

static const EVP_MD *md_sha256(void)
{
    if (pthread_once(&fetch_once, fetch_all) != 0 || !g_md)
        crypto_fail("EVP_MD_fetch(SHA256)");
    return g_md;
}

void sha256_init(sha256_ctx *c)
{
    const EVP_MD *alg = md_sha256();
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md)
        crypto_fail("EVP_MD_CTX_new");
    if (EVP_DigestInit_ex2(md, alg, NULL) != 1)
        crypto_fail("EVP_DigestInit_ex");
    c->md = md;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
    if (!len)
        return;
    if (EVP_DigestUpdate((EVP_MD_CTX *)c->md, data, len) != 1)
        crypto_fail("EVP_DigestUpdate");
}

void sha256_update_u64le(sha256_ctx *c, uint64_t n)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(n >> (8 * i));
    sha256_update(c, b, sizeof b);
}

void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN])
{
    unsigned int n = 0;
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)c->md, out, &n) != 1 || n != SHA256_LEN)
        crypto_fail("EVP_DigestFinal_ex");
    EVP_MD_CTX_free((EVP_MD_CTX *)c->md);
    c->md = NULL;
}

void sha256_abort(sha256_ctx *c)
{
    if (c->md)
        EVP_MD_CTX_free((EVP_MD_CTX *)c->md);
    c->md = NULL;
}

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, out);
}

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
    uint8_t d[SHA256_LEN];
    sha256(data, len, d);
    hex_encode(d, SHA256_LEN, hex);
}

void hex_encode(const uint8_t *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0xF];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int hex_decode(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(hex[2 * i]);
        if (hi < 0)
            return -1;
        int lo = hexval(hex[2 * i + 1]);
        if (lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int sha256_file(const char *path, uint8_t out[SHA256_LEN], struct as_err *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            return as_err_set(err, "%s: is a symlink (not followed)", path);
        return as_err_errno(err, "%s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        as_err_errno(err, "%s", path);
        close(fd);
        return -1;
    }
    /* A FIFO or device would block or never end: only regular files are hashed. */
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return as_err_set(err, "%s: is not a regular file", path);
    }
    enum { BUFSZ = 64 * 1024 };
    unsigned char *buf = malloc(BUFSZ);
    if (!buf) {
        close(fd);
        return as_err_set(err, "%s: out of memory", path);
    }
    sha256_ctx c;
    sha256_init(&c);
    for (;;) {
        ssize_t r = read(fd, buf, BUFSZ);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            as_err_errno(err, "%s", path);
            sha256_abort(&c);
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        sha256_update(&c, buf, (size_t)r);
    }
    sha256_final(&c, out);
    free(buf);
    close(fd);
    return 0;
}

int sha256_file_hex(const char *path, char hex[SHA256_HEX_LEN + 1], struct as_err *err)
{
    uint8_t d[SHA256_LEN];
    if (sha256_file(path, d, err) != 0)
        return -1;
    hex_encode(d, SHA256_LEN, hex);
    return 0;
}

int sha256_normalize_hex(const char *in, char out[SHA256_HEX_LEN + 1])
{
    if (strncmp(in, "sha256:", 7) == 0 || strncmp(in, "SHA256:", 7) == 0)
        in += 7;
    if (strlen(in) != SHA256_HEX_LEN)
        return -1;
    for (size_t i = 0; i < SHA256_HEX_LEN; i++) {
        int v = hexval(in[i]);
        if (v < 0)
            return -1;
        out[i] = "0123456789abcdef"[v];
    }
    out[SHA256_HEX_LEN] = '\0';
    return 0;
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                 uint8_t out[SHA256_LEN])
{
    static const unsigned char empty[1];
    if (keylen > INT32_MAX)
        crypto_fail("HMAC key length");
    md_sha256(); /* runs fetch_all once */
    if (!g_hmac)
        crypto_fail("EVP_MAC_fetch(HMAC)");
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(g_hmac);
    if (!c)
        crypto_fail("EVP_MAC_CTX_dup");
    size_t n = 0;
    /* An empty key must still be a key: a NULL one would mean "keep the
     * previous key", which a fresh duplicate does not have. */
    if (EVP_MAC_init(c, key ? key : empty, keylen, NULL) != 1 ||
        EVP_MAC_update(c, data ? (const unsigned char *)data : empty, data ? len : 0) != 1 ||
        EVP_MAC_final(c, out, &n, SHA256_LEN) != 1 || n != SHA256_LEN)
        crypto_fail("HMAC");
    EVP_MAC_CTX_free(c);
}

int ct_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
