/* head — the sealed anchor of a chained log; see head.h. */
#include "audit/head.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/strbuf.h"
#include "base/xalloc.h"

char *aud_head_path(const char *log)
{
    return xasprintf("%s.head", log);
}

int aud_head_open(const char *log, int create, struct as_err *err)
{
    char *p = aud_head_path(log);
    int fd =
        open(p, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT && !create) {
            free(p);
            return -2;
        }
        errno = e;
        as_err_errno(err,
                     e == ELOOP ? "%s is a symlink (evidence files are never followed)"
                                : "cannot open %s",
                     p);
        free(p);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        as_err_set(err, "%s is not a regular file", p);
        free(p);
        return -1;
    }
    if (create && (st.st_mode & 07777) != 0600)
        fchmod(fd, 0600);
    free(p);
    return fd;
}

static int is_hex64(const char *p)
{
    for (int i = 0; i < SHA256_HEX_LEN; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}

/* The record without its seal: {"v":1,…,"since":N */
static void body(const struct aud_head *h, strbuf *out)
{
    sb_addf(out,
            "{\"v\":1,\"rows\":%llu,\"first\":\"%s\",\"last\":\"%s\",\"old_rows\":%llu,"
            "\"old_first\":\"%s\",\"old_last\":\"%s\",\"since\":%llu",
            h->rows, h->first, h->last, h->old_rows, h->old_first, h->old_last, h->since);
}

int aud_head_write(int fd, const char *log, const struct aud_head *h, struct as_err *err)
{
    strbuf b = SB_INIT;
    body(h, &b);
    char mac[SHA256_HEX_LEN + 1];
    if (aud_head_mac(log, b.buf, b.len, mac, err) < 0) {
        as_err_prefix(err, "cannot seal the anchor of %s", log);
        sb_release(&b);
        return -1;
    }
    sb_addf(&b, ",\"mac\":\"%s\"}", mac);
    if (b.len >= AUD_HEAD_BYTES) { /* not reached: the fields are bounded */
        sb_release(&b);
        return as_err_set(err, "the anchor of %s does not fit its block", log);
    }
    sb_addchars(&b, ' ', AUD_HEAD_BYTES - 1 - b.len);
    sb_addc(&b, '\n');
    ssize_t w;
    do
        w = pwrite(fd, b.buf, b.len, 0);
    while (w < 0 && errno == EINTR);
    int rc = 0;
    if (w != (ssize_t)b.len)
        rc = as_err_errno(err, "cannot write the anchor of %s", log);
    sb_release(&b);
    return rc;
}

/* Reads "key":<digits> at *p; advances. */
static int take_u64(const char **p, const char *key, unsigned long long *out)
{
    size_t k = strlen(key);
    if (strncmp(*p, key, k) != 0)
        return -1;
    const char *s = *p + k;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    unsigned long long v = 0;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (~0ULL - d) / 10)
            return -1;
        v = v * 10 + d;
        s++;
    }
    *out = v;
    *p = s;
    return 0;
}

/* Reads "key":"" or "key":"<64 hex>" at *p; advances. */
static int take_hex(const char **p, const char *key, char out[SHA256_HEX_LEN + 1])
{
    size_t k = strlen(key);
    if (strncmp(*p, key, k) != 0 || (*p)[k] != '"')
        return -1;
    const char *s = *p + k + 1;
    if (*s == '"') {
        out[0] = '\0';
        *p = s + 1;
        return 0;
    }
    if (strnlen(s, SHA256_HEX_LEN + 1) < SHA256_HEX_LEN + 1 || !is_hex64(s) ||
        s[SHA256_HEX_LEN] != '"')
        return -1;
    memcpy(out, s, SHA256_HEX_LEN);
    out[SHA256_HEX_LEN] = '\0';
    *p = s + SHA256_HEX_LEN + 1;
    return 0;
}

int aud_head_read(int fd, const char *log, struct aud_head *h, struct as_err *err)
{
    char buf[AUD_HEAD_BYTES + 1];
    ssize_t n;
    do
        n = pread(fd, buf, AUD_HEAD_BYTES + 1, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return as_err_errno(err, "cannot read the anchor of %s", log);
    if (n == 0)
        return 0;
    memset(h, 0, sizeof *h);
    if (n != AUD_HEAD_BYTES || buf[AUD_HEAD_BYTES - 1] != '\n' || memchr(buf, '\0', (size_t)n))
        return as_err_set(err, "the anchor %s.head is damaged (not one %d-byte record)", log,
                          AUD_HEAD_BYTES);
    buf[AUD_HEAD_BYTES] = '\0';
    const char *p = buf;
    if (strncmp(p, "{\"v\":1,", 7) != 0)
        goto damaged;
    p += 7;
    if (take_u64(&p, "\"rows\":", &h->rows) < 0 || take_hex(&p, ",\"first\":", h->first) < 0 ||
        take_hex(&p, ",\"last\":", h->last) < 0 ||
        take_u64(&p, ",\"old_rows\":", &h->old_rows) < 0 ||
        take_hex(&p, ",\"old_first\":", h->old_first) < 0 ||
        take_hex(&p, ",\"old_last\":", h->old_last) < 0 ||
        take_u64(&p, ",\"since\":", &h->since) < 0)
        goto damaged;
    size_t blen = (size_t)(p - buf);
    char mac[SHA256_HEX_LEN + 1];
    if (take_hex(&p, ",\"mac\":", mac) < 0 || !mac[0] || *p != '}')
        goto damaged;
    for (p++; *p == ' '; p++)
        ;
    if (*p != '\n')
        goto damaged;
    char want[SHA256_HEX_LEN + 1];
    if (aud_head_mac(log, buf, blen, want, err) < 0) {
        as_err_prefix(err, "cannot check the anchor of %s", log);
        return -1;
    }
    if (!ct_equal(want, mac, SHA256_HEX_LEN))
        return as_err_set(err,
                          "the anchor %s.head does not carry this home's seal (it was written "
                          "without the audit key, or for another log)",
                          log);
    return 1;
damaged:
    return as_err_set(err, "the anchor %s.head is damaged (unreadable record)", log);
}
