/* sha256 — see sha256.h. OpenSSL does the hashing so SHA-NI is used where present. */
#include "base/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* OpenSSL 3 routes EVP digests through its provider machinery, whose
 * one-time initialisation (loading openssl.cnf, building the provider store)
 * costs ~5 M instructions — most of what a command that hashes one file pays
 * at start. The SHA256_* primitives run the same assembly (SHA-NI where the
 * CPU has it) with no provider set-up, so digests and HMAC use them. They are
 * marked deprecated in 3.x but are part of its supported API; EVP remains in
 * use where it is the only interface (Ed25519 in bundle/sign.c). libcrypto
 * itself is loaded on the first digest (crypto_dl.h). */
#include "base/crypto_dl.h"
#include "base/hex.h"
#include "base/xalloc.h"

/* A failing digest primitive means a broken libcrypto, not bad input: there is
 * no caller that could recover, so stop like an out-of-memory condition. */
static void crypto_fail(const char *what)
{
    fprintf(stderr, "agentstack: libcrypto failure in %s\n", what);
    abort();
}

void sha256_init(sha256_ctx *c)
{
    SHA256_CTX *x = xmalloc(sizeof *x);
    if (crypto_api()->sha256_init(x) != 1)
        crypto_fail("SHA256_Init");
    c->md = x;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
    if (!len)
        return;
    if (crypto_api()->sha256_update((SHA256_CTX *)c->md, data, len) != 1)
        crypto_fail("SHA256_Update");
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
    if (crypto_api()->sha256_final(out, (SHA256_CTX *)c->md) != 1)
        crypto_fail("SHA256_Final");
    explicit_bzero(c->md, sizeof(SHA256_CTX));
    free(c->md);
    c->md = NULL;
}

void sha256_abort(sha256_ctx *c)
{
    if (c->md) {
        explicit_bzero(c->md, sizeof(SHA256_CTX));
        free(c->md);
    }
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

int hex_decode(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit_value(hex[2 * i]);
        if (hi < 0)
            return -1;
        int lo = hex_digit_value(hex[2 * i + 1]);
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
        int v = hex_digit_value(in[i]);
        if (v < 0)
            return -1;
        out[i] = "0123456789abcdef"[v];
    }
    out[SHA256_HEX_LEN] = '\0';
    return 0;
}

/* HMAC (RFC 2104) over the SHA-256 primitive: H((K ^ opad) || H((K ^ ipad) || m)),
 * with a key longer than the 64-byte block hashed first. */
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                 uint8_t out[SHA256_LEN])
{
    enum { BLOCK = 64 };
    uint8_t k[BLOCK] = {0}, pad[BLOCK], inner[SHA256_LEN];
    if (keylen > BLOCK)
        sha256(key, keylen, k);
    else if (keylen)
        memcpy(k, key, keylen);
    sha256_ctx c;
    for (int i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&c);
    sha256_update(&c, pad, BLOCK);
    if (data)
        sha256_update(&c, data, len);
    sha256_final(&c, inner);
    for (int i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&c);
    sha256_update(&c, pad, BLOCK);
    sha256_update(&c, inner, SHA256_LEN);
    sha256_final(&c, out);
    explicit_bzero(k, sizeof k);
    explicit_bzero(pad, sizeof pad);
    explicit_bzero(inner, sizeof inner);
}

int ct_equal(const void *a, const void *b, size_t n)
{
    /* Every byte is read whatever the earlier ones were (volatile: the
     * compiler may not stop at the first difference). */
    const volatile unsigned char *x = a, *y = b;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(x[i] ^ y[i]);
    return diff == 0;
}
