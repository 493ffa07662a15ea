/* sign — see sign.h. */
#include "bundle/sign.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/crypto_dl.h"
#include "base/fs.h"
#include "base/rand.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/xalloc.h"

int sign_parse_hex(const char *text, uint8_t *out, size_t n)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    if (len != 2 * n)
        return -1;
    return hex_decode(text, out, n);
}

int sign_public_from_seed(const uint8_t seed[SIGN_SEED_LEN], uint8_t pub[SIGN_PUB_LEN],
                          struct as_err *err)
{
    const struct as_libcrypto *C = crypto_api();
    EVP_PKEY *k = C->pkey_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, SIGN_SEED_LEN);
    if (!k)
        return as_err_set(err, "ed25519: cannot load the signing key");
    size_t n = SIGN_PUB_LEN;
    int ok = C->pkey_get_raw_public_key(k, pub, &n) == 1 && n == SIGN_PUB_LEN;
    C->pkey_free(k);
    return ok ? 0 : as_err_set(err, "ed25519: cannot derive the public key");
}

/* Reads a small hex key file, refusing links, non-regular files and loose modes. */
static int read_key_file(const char *path, int secret, uint8_t *out, size_t n, struct as_err *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            return as_err_set(err, "%s is a symlink; refusing to use it as a signing key", path);
        return as_err_errno(err, "%s", path);
    }
    struct stat st;
    char buf[256];
    ssize_t r = -1;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = as_err_errno(err, "%s", path);
    } else if (!S_ISREG(st.st_mode)) {
        rc = as_err_set(err, "%s is not a regular file", path);
    } else if (secret && (st.st_mode & 077)) {
        rc = as_err_set(err,
                        "%s is readable by other users (mode %03o); refusing to sign "
                        "with it",
                        path, (unsigned)(st.st_mode & 0777));
        as_err_hint(err, "chmod 600 %s", path);
    } else if (st.st_size >= (off_t)sizeof buf) {
        rc = as_err_set(err, "%s is not a hex ed25519 key", path);
    } else {
        r = read(fd, buf, sizeof buf - 1);
        if (r < 0)
            rc = as_err_errno(err, "reading %s", path);
    }
    close(fd);
    if (rc == 0) {
        buf[r] = '\0';
        if (sign_parse_hex(buf, out, n) < 0)
            rc = as_err_set(err, "%s is not a hex ed25519 key", path);
    }
    explicit_bzero(buf, sizeof buf);
    return rc;
}

static int load_or_create(const char *keys_dir, uint8_t seed[SIGN_SEED_LEN],
                          uint8_t pub[SIGN_PUB_LEN], int *created, struct as_err *err)
{
    *created = 0;
    char *key = xasprintf("%s/ed25519.key", keys_dir);
    char *pubp = xasprintf("%s/ed25519.pub", keys_dir);
    int rc = -1;
    struct stat st;
    if (lstat(key, &st) == 0) {
        if (read_key_file(key, 1, seed, SIGN_SEED_LEN, err) < 0 ||
            sign_public_from_seed(seed, pub, err) < 0)
            goto out;
        /* The .pub file is derived data: rewrite it if it is missing or stale. */
        uint8_t onfile[SIGN_PUB_LEN];
        struct as_err ignored = AS_ERR_INIT;
        if (read_key_file(pubp, 0, onfile, SIGN_PUB_LEN, &ignored) < 0 ||
            memcmp(onfile, pub, SIGN_PUB_LEN) != 0) {
            char hex[2 * SIGN_PUB_LEN + 2];
            hex_encode(pub, SIGN_PUB_LEN, hex);
            strcat(hex, "\n");
            struct fs_write_opts o = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
            if (fs_write_atomic(pubp, hex, strlen(hex), &o, err) < 0)
                goto out;
        }
        rc = 0;
        goto out;
    }
    if (errno != ENOENT) {
        as_err_errno(err, "%s", key);
        goto out;
    }
    if (fs_mkdirs(keys_dir, 0700, err) < 0)
        goto out;
    if (rand_bytes(seed, SIGN_SEED_LEN, err) < 0) {
        as_err_prefix(err, "cannot create a signing key (no secure randomness)");
        goto out;
    }
    if (sign_public_from_seed(seed, pub, err) < 0)
        goto out;
    char hex[2 * SIGN_SEED_LEN + 2];
    hex_encode(seed, SIGN_SEED_LEN, hex);
    strcat(hex, "\n");
    struct fs_write_opts ko = {.mode = 0600, .symlinks = FS_SYMLINK_REFUSE};
    rc = fs_write_atomic(key, hex, strlen(hex), &ko, err);
    explicit_bzero(hex, sizeof hex);
    if (rc < 0)
        goto out;
    char phex[2 * SIGN_PUB_LEN + 2];
    hex_encode(pub, SIGN_PUB_LEN, phex);
    strcat(phex, "\n");
    struct fs_write_opts po = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
    rc = fs_write_atomic(pubp, phex, strlen(phex), &po, err);
    if (rc == 0)
        *created = 1;
out:
    free(key);
    free(pubp);
    return rc;
}

int sign_key_ensure(const char *keys_dir, uint8_t pub[SIGN_PUB_LEN], int *created,
                    struct as_err *err)
{
    uint8_t seed[SIGN_SEED_LEN];
    int rc = load_or_create(keys_dir, seed, pub, created, err);
    explicit_bzero(seed, sizeof seed);
    return rc;
}

int sign_key_public(const char *keys_dir, uint8_t pub[SIGN_PUB_LEN], struct as_err *err)
{
    char *key = xasprintf("%s/ed25519.key", keys_dir);
    struct stat st;
    int rc = 0;
    if (lstat(key, &st) != 0) {
        if (errno != ENOENT)
            rc = as_err_errno(err, "%s", key);
        free(key);
        return rc;
    }
    uint8_t seed[SIGN_SEED_LEN];
    rc = read_key_file(key, 1, seed, SIGN_SEED_LEN, err) < 0 ||
                 sign_public_from_seed(seed, pub, err) < 0
             ? -1
             : 1;
    explicit_bzero(seed, sizeof seed);
    free(key);
    return rc;
}

int sign_message(const char *keys_dir, const void *msg, size_t len, uint8_t sig[SIGN_SIG_LEN],
                 uint8_t pub[SIGN_PUB_LEN], int *created, struct as_err *err)
{
    uint8_t seed[SIGN_SEED_LEN];
    int rc = load_or_create(keys_dir, seed, pub, created, err);
    if (rc < 0) {
        explicit_bzero(seed, sizeof seed);
        return -1;
    }
    const struct as_libcrypto *C = crypto_api();
    EVP_PKEY *k = C->pkey_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, SIGN_SEED_LEN);
    explicit_bzero(seed, sizeof seed);
    EVP_MD_CTX *ctx = C->md_ctx_new();
    size_t n = SIGN_SIG_LEN;
    rc = -1;
    if (k && ctx && C->digest_sign_init(ctx, NULL, NULL, NULL, k) == 1 &&
        C->digest_sign(ctx, sig, &n, msg, len) == 1 && n == SIGN_SIG_LEN)
        rc = 0;
    else
        as_err_set(err, "ed25519: signing failed");
    C->md_ctx_free(ctx);
    C->pkey_free(k);
    return rc;
}

int sign_verify(const uint8_t pub[SIGN_PUB_LEN], const uint8_t sig[SIGN_SIG_LEN], const void *msg,
                size_t len)
{
    const struct as_libcrypto *C = crypto_api();
    EVP_PKEY *k = C->pkey_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, SIGN_PUB_LEN);
    if (!k)
        return 0;
    EVP_MD_CTX *ctx = C->md_ctx_new();
    int ok = ctx && C->digest_verify_init(ctx, NULL, NULL, NULL, k) == 1 &&
             C->digest_verify(ctx, sig, SIGN_SIG_LEN, msg, len) == 1;
    C->md_ctx_free(ctx);
    C->pkey_free(k);
    return ok;
}
