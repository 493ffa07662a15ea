/* rand — see rand.h. */
#include "base/rand.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

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
            break; /* ENOSYS or a seccomp filter: the device is next */
        }
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
    if (got == n)
        return 0;
    return as_err_set(err, "no source of secure random bytes (getrandom and /dev/urandom "
                           "both failed)");
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
