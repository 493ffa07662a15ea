/*
 * Argument digests — see audit.h. The key is published with
 * link(2) from a fully written temp file, so a process racing the creator
 * never reads a half-written key, and the first creator wins for everyone.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/rand.h"
#include "base/sha256.h"
#include "base/xalloc.h"

/* The SHA256_* primitives (deprecated in OpenSSL 3, still supported) let the
 * HMAC's keyed inner and outer states be computed once per key; see
 * base/sha256.c for why they are used instead of EVP. */
#include "base/crypto_dl.h"

#define KEY_MIN 16
#define KEY_MAX 64

static int read_key(const char *path, unsigned char key[KEY_MAX], size_t *len, struct as_err *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return as_err_errno(err, "cannot open %s", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return as_err_set(err, "%s is not a regular file", path);
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return as_err_set(err, "%s belongs to another user", path);
    }
    if (st.st_mode & 077)
        fchmod(fd, 0600);           /* re-tightened: the key is what keeps digests unguessable */
    unsigned char buf[KEY_MAX + 1]; /* one spare byte detects an oversized file */
    ssize_t n = read(fd, buf, sizeof buf);
    int saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return as_err_errno(err, "cannot read %s", path);
    }
    if (n < KEY_MIN || n > KEY_MAX) {
        explicit_bzero(buf, sizeof buf);
        return as_err_set(err, "%s holds %zd bytes; a key has %d to %d", path, n, KEY_MIN, KEY_MAX);
    }
    memcpy(key, buf, (size_t)n);
    explicit_bzero(buf, sizeof buf);
    *len = (size_t)n;
    return 0;
}

static int create_key(const char *dir, const char *path, struct as_err *err)
{
    if (fs_mkdirs(dir, 0700, err) < 0)
        return -1;
    unsigned char key[32];
    if (rand_bytes(key, sizeof key, err) < 0)
        return -1;
    char suffix[17];
    if (rand_hex(suffix, 8, err) < 0)
        return -1;
    char *tmp = xasprintf("%s/.key.%s.tmp", dir, suffix);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        as_err_errno(err, "cannot create %s", tmp);
        free(tmp);
        explicit_bzero(key, sizeof key);
        return -1;
    }
    ssize_t w = write(fd, key, sizeof key);
    explicit_bzero(key, sizeof key);
    int ok = w == (ssize_t)sizeof key && fsync(fd) == 0;
    close(fd);
    int r = 0;
    if (!ok)
        r = as_err_errno(err, "cannot write %s", tmp);
    else if (link(tmp, path) != 0 && errno != EEXIST)
        r = as_err_errno(err, "cannot create %s", path);
    unlink(tmp);
    free(tmp);
    return r;
}

int aud_key_load(const char *home, unsigned char key[64], size_t *keylen, struct as_err *err)
{
    char *dir = xasprintf("%s/audit", home);
    char *path = xasprintf("%s/key", dir);
    struct stat st;
    int r = 0;
    if (lstat(path, &st) != 0 && errno == ENOENT)
        r = create_key(dir, path, err); /* first use */
    if (r == 0)
        r = read_key(path, key, keylen, err);
    free(dir);
    free(path);
    return r;
}

/* One key per home per process: digests are computed per call. The key is
 * kept only as HMAC's two keyed states (SHA-256 after absorbing K ^ ipad and
 * K ^ opad), so a call hashes its canonical arguments and one outer block
 * instead of re-deriving both pads: the digest is still exactly
 * HMAC-SHA-256(key, canonical(args)) (test_digest checks it against
 * hmac_sha256). */
static pthread_mutex_t key_mu = PTHREAD_MUTEX_INITIALIZER;
static char *key_home;
static SHA256_CTX key_inner, key_outer;
static int key_ok;
static char key_error[sizeof((struct as_err *)0)->msg];
static int warned;

static void key_states(const unsigned char *key, size_t len)
{
    enum { BLOCK = 64 };
    unsigned char k[BLOCK] = {0}, pad[BLOCK];
    memcpy(k, key, len); /* len <= KEY_MAX == BLOCK: never hashed first */
    for (int i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    const struct as_libcrypto *C = crypto_api();
    C->sha256_init(&key_inner);
    C->sha256_update(&key_inner, pad, BLOCK);
    for (int i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    C->sha256_init(&key_outer);
    C->sha256_update(&key_outer, pad, BLOCK);
    explicit_bzero(k, sizeof k);
    explicit_bzero(pad, sizeof pad);
}

/* The keyed states for home: 1 and *inner, *outer, or 0 when the key is
 * unusable (err set once per home change, when err is given). */
static int key_get(const char *home, SHA256_CTX *inner, SHA256_CTX *outer, struct as_err *err)
{
    int have = 0;
    pthread_mutex_lock(&key_mu);
    if (!key_home || strcmp(key_home, home) != 0) {
        struct as_err e = AS_ERR_INIT;
        unsigned char key[KEY_MAX];
        size_t key_len = 0;
        free(key_home);
        key_home = xstrdup(home);
        explicit_bzero(&key_inner, sizeof key_inner);
        explicit_bzero(&key_outer, sizeof key_outer);
        key_ok = aud_key_load(home, key, &key_len, &e) == 0;
        if (key_ok)
            key_states(key, key_len);
        else
            snprintf(key_error, sizeof key_error, "%s", e.msg);
        explicit_bzero(key, sizeof key);
    }
    if (key_ok) {
        *inner = key_inner;
        *outer = key_outer;
        have = 1;
    } else if (err) {
        as_err_set(err, "%s", key_error);
    }
    pthread_mutex_unlock(&key_mu);
    return have;
}

static void mac_final(SHA256_CTX *inner, SHA256_CTX *outer, unsigned char mac[SHA256_LEN])
{
    unsigned char ih[SHA256_LEN];
    const struct as_libcrypto *C = crypto_api();
    C->sha256_final(ih, inner);
    C->sha256_update(outer, ih, sizeof ih);
    C->sha256_final(mac, outer);
    explicit_bzero(inner, sizeof *inner);
    explicit_bzero(outer, sizeof *outer);
    explicit_bzero(ih, sizeof ih);
}

void aud_args_digest(const char *home, const json_t *args, char out[AUD_DIGEST_HEX + 1])
{
    _Static_assert(KEY_MAX <= 64, "a key longer than SHA-256's block would be hashed first");
    out[0] = '\0';
    SHA256_CTX inner, outer;
    struct as_err err = AS_ERR_INIT;
    if (!key_get(home, &inner, &outer, &err)) {
        pthread_mutex_lock(&key_mu);
        int first = !warned;
        warned = 1;
        pthread_mutex_unlock(&key_mu);
        if (first)
            fprintf(stderr,
                    "agentstack: warning: audit key unusable (%s); argument digests are "
                    "left empty\n",
                    err.msg);
        return; /* never an unkeyed digest: small arguments could be brute-forced */
    }
    strbuf canon = SB_INIT;
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    json_canonical(args, &canon);
    unsigned char mac[SHA256_LEN];
    crypto_api()->sha256_update(&inner, canon.buf, canon.len);
    mac_final(&inner, &outer, mac);
    char hex[SHA256_HEX_LEN + 1];
    hex_encode(mac, SHA256_LEN, hex);
    memcpy(out, hex, AUD_DIGEST_HEX);
    out[AUD_DIGEST_HEX] = '\0';
    sb_release_secure(&canon); /* the canonical form holds the argument values */
    if (empty)
        json_decref(empty);
}

/* The length of p[0..n)'s directory part (up to its last '/'), or 0. */
static size_t dir_len(const char *p, size_t n)
{
    const char *s = n ? memrchr(p, '/', n) : NULL;
    return s ? (size_t)(s - p) : 0;
}

/* 1 when p[0..n)'s last component is name. */
static int base_is(const char *p, size_t n, const char *name)
{
    const char *s = n ? memrchr(p, '/', n) : NULL;
    size_t from = s ? (size_t)(s - p) + 1 : 0, k = strlen(name);
    return n - from == k && memcmp(p + from, name, k) == 0;
}

void aud_log_home(const char *log, strbuf *out)
{
    /* <home>/audit/<name>.jsonl and <home>/runs/<id>/events.jsonl belong to
     * <home>; any other log to its own directory */
    size_t d = dir_len(log, strlen(log)), dd = dir_len(log, d);
    sb_reset(out);
    if (base_is(log, d, "audit"))
        sb_add(out, log, dd);
    else if (base_is(log, dd, "runs"))
        sb_add(out, log, dir_len(log, dd));
    else
        sb_add(out, log, d);
    if (!out->len)
        sb_adds(out, log[0] == '/' ? "/" : ".");
}

int aud_head_mac(const char *log, const char *body, size_t len, char hex[SHA256_HEX_LEN + 1],
                 struct as_err *err)
{
    strbuf home = SB_INIT;
    aud_log_home(log, &home);
    SHA256_CTX inner, outer;
    int ok = key_get(home.buf, &inner, &outer, err);
    sb_release(&home);
    if (!ok) {
        as_err_prefix(err, "the audit key is unusable");
        return -1;
    }
    /* framing: tag, the log's last two path components, the record */
    static const char tag[] = "agentstack-audit-head-v1";
    const char *base = strrchr(log, '/');
    const char *id = log;
    if (base && base != log) {
        const char *p = memrchr(log, '/', (size_t)(base - log));
        id = p ? p + 1 : log;
    }
    const struct as_libcrypto *C = crypto_api();
    C->sha256_update(&inner, tag, sizeof tag); /* with its NUL */
    C->sha256_update(&inner, id, strlen(id) + 1);
    C->sha256_update(&inner, body, len);
    unsigned char mac[SHA256_LEN];
    mac_final(&inner, &outer, mac);
    hex_encode(mac, SHA256_LEN, hex);
    return 0;
}
