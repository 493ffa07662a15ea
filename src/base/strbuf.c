/* strbuf — see strbuf.h. */
#include "base/strbuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

char sb_empty[1];

void sb_init(strbuf *sb, size_t hint)
{
    sb->buf = sb_empty;
    sb->len = 0;
    sb->alloc = 0;
    if (hint)
        sb_grow(sb, hint);
}

void sb_release(strbuf *sb)
{
    if (sb->alloc)
        free(sb->buf);
    sb_init(sb, 0);
}

void sb_release_secure(strbuf *sb)
{
    /* explicit_bzero is never optimised away and runs at memset speed; the
     * whole allocation is wiped, not just len, since it may have held more. */
    if (sb->alloc)
        explicit_bzero(sb->buf, sb->alloc);
    sb_release(sb);
}

void sb_grow(strbuf *sb, size_t extra)
{
    if (extra > SIZE_MAX - 1 - sb->len) {
        fprintf(stderr, "agentstack: strbuf overflow\n");
        abort();
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->alloc)
        return;
    if (!sb->alloc)
        sb->buf = NULL;
    sb->buf = xgrow(sb->buf, &sb->alloc, need, 1);
    if (sb->len == 0)
        sb->buf[0] = '\0';
}

void sb_setlen(strbuf *sb, size_t len)
{
    if (!sb->alloc) {
        if (len == 0)
            return;
        sb_grow(sb, len);
    } else if (len >= sb->alloc) {
        sb_grow(sb, len - sb->len);
    }
    sb->len = len;
    sb->buf[len] = '\0';
}

void sb_add(strbuf *sb, const void *data, size_t n)
{
    if (!n)
        return;
    /* Appending (part of) the buffer to itself: growing may move it. */
    const char *d = data;
    if (sb->alloc && d >= sb->buf && d < sb->buf + sb->alloc) {
        size_t off = (size_t)(d - sb->buf);
        sb_grow(sb, n);
        d = sb->buf + off;
    } else {
        sb_grow(sb, n);
    }
    memmove(sb->buf + sb->len, d, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sb_adds(strbuf *sb, const char *s)
{
    sb_add(sb, s, strlen(s));
}

void sb_addc(strbuf *sb, char c)
{
    sb_grow(sb, 1);
    sb->buf[sb->len++] = c;
    sb->buf[sb->len] = '\0';
}

void sb_addchars(strbuf *sb, char c, size_t n)
{
    if (!n)
        return;
    sb_grow(sb, n);
    memset(sb->buf + sb->len, c, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sb_vaddf(strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n <= 0)
        return;
    sb_grow(sb, (size_t)n);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_addf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(sb, fmt, ap);
    va_end(ap);
}

char *sb_detach(strbuf *sb, size_t *len)
{
    char *r;
    if (len)
        *len = sb->len;
    if (!sb->alloc)
        r = xstrdup("");
    else
        r = sb->buf;
    sb_init(sb, 0);
    return r;
}

void sb_rtrim(strbuf *sb)
{
    while (sb->len && (sb->buf[sb->len - 1] == ' ' || sb->buf[sb->len - 1] == '\t' ||
                       sb->buf[sb->len - 1] == '\n' || sb->buf[sb->len - 1] == '\r'))
        sb->len--;
    if (sb->alloc)
        sb->buf[sb->len] = '\0';
}

void sb_add_shquoted(strbuf *sb, const char *s)
{
    sb_addc(sb, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            sb_adds(sb, "'\\''");
        else
            sb_addc(sb, *s);
    }
    sb_addc(sb, '\'');
}

void sb_add_shword(strbuf *sb, const char *s)
{
    bool plain = s[0] != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("-_./=:,+@%", *p);
    if (plain)
        sb_adds(sb, s);
    else
        sb_add_shquoted(sb, s);
}
