/*
 * head — the anchor of a hash-chained log: "<log>.head" (internal to audit/).
 *
 * Why: a chain proves that no line was changed between its first and its
 * last line, but not where the log ends: rows cut from the end, or a row
 * deleted and every later "prev" recomputed, leave a chain that verifies.
 * The anchor records how many rows the log (and its rotated ".1") held
 * after the last append, and the digests of their first and last rows,
 * sealed with the home's audit key, so `audit --verify` can tell.
 *
 * Guarantees:
 *  - One fixed-size record (AUD_HEAD_BYTES, a single 512-byte block,
 *    space-padded JSON), always rewritten whole with one pwrite at offset 0
 *    under an exclusive flock on the anchor; readers take a shared one. A
 *    crash can at worst leave the anchor one append behind its log, which
 *    verification reports (it never makes a damaged log read as intact).
 *  - The seal is HMAC-SHA-256 under the home's audit key over the record
 *    and the log's last two path components (an anchor copied from another
 *    log does not fit): writing a matching anchor needs the key.
 *  - Opened without following symlinks, regular files only, 0600.
 */
#ifndef AS_AUDIT_HEAD_H
#define AS_AUDIT_HEAD_H

#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"

#define AUD_HEAD_BYTES 512

struct aud_head {
    unsigned long long rows;            /* rows in the log */
    char first[SHA256_HEX_LEN + 1];     /* SHA-256 of its first row ("" when none) */
    char last[SHA256_HEX_LEN + 1];      /* of its last row */
    unsigned long long old_rows;        /* rows in "<log>.1" (0: none) */
    char old_first[SHA256_HEX_LEN + 1]; /* of its first row */
    char old_last[SHA256_HEX_LEN + 1];  /* of its last row */
    unsigned long long since;           /* rows that predate the anchor (0: none) */
};

/* "<log>.head" (the caller frees). */
char *aud_head_path(const char *log);
/* Opens the anchor: O_RDWR|O_CREAT when create, else O_RDONLY; never
 * through a symlink, regular files only. fd, -2 when absent (not create),
 * or -1 + err. */
int aud_head_open(const char *log, int create, struct as_err *err);
/* Reads and unseals the anchor of log from fd: 1 and *h, 0 when the file is
 * empty (a new anchor), -1 + err when it is damaged or its seal does not
 * match. */
int aud_head_read(int fd, const char *log, struct aud_head *h, struct as_err *err);
/* Seals and writes h whole (one pwrite at offset 0). */
int aud_head_write(int fd, const char *log, const struct aud_head *h, struct as_err *err);

#endif
