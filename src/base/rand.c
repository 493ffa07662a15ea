/* rand — see rand.h. */
#include "base/rand.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/random.h>

#include <openssl/rand.h>

#include "base/sha256.h"
#include "base/xalloc.h"

int rand_bytes(void *buf, size_t n, struct as_err *err)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break; /* ENOSYS or a seccomp filter: OpenSSL's DRBG is next */
        }
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    size_t rest = n - got;
    while (rest) {
        int chunk = rest > INT_MAX ? INT_MAX : (int)rest;
        if (RAND_bytes(p + got, chunk) != 1)
            return as_err_set(err, "no source of secure random bytes (getrandom and "
                                   "OpenSSL both failed)");
        got += (size_t)chunk;
        rest -= (size_t)chunk;
    }
    return 0;
}

int rand_hex(char *out, size_t n, struct as_err *err)
{
    unsigned char small[64];
    unsigned char *b = n <= sizeof small ? small : xmalloc(n);
    int rc = rand_bytes(b, n, err);
    if (rc == 0)
        hex_encode(b, n, out);
    else
        out[0] = '\0';
    if (b != small)
        free(b);
    return rc;
}
