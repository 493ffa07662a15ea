/*
 * rand — cryptographically secure random bytes from the kernel (getrandom,
 * falling back to /dev/urandom where the syscall is missing or filtered).
 * Used for audit keys, run ids, proxy tokens and temp names. Fails closed:
 * an error, never weaker bytes.
 */
#ifndef AS_BASE_RAND_H
#define AS_BASE_RAND_H

#include <stddef.h>

#include "base/err.h"

int rand_bytes(void *buf, size_t n, struct as_err *err);
/* n random bytes as 2n lowercase hex chars into out (2n+1 bytes). */
int rand_hex(char *out, size_t n, struct as_err *err);

#endif
