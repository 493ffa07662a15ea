/* err — see err.h. */
#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Messages longer than the fixed buffers are cut; that is the contract. */
#define TRUNCATING(call) ((void)((call) < 0))

void as_err_clear(struct as_err *e)
{
    e->msg[0] = e->path[0] = e->hint[0] = '\0';
    e->line = e->col = 0;
}

/* Formatting goes through a scratch buffer so an argument may be the
 * error's own text (as_err_set(e, "%s (again)", e->msg)). */
int as_err_set(struct as_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char tmp[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    TRUNCATING(vsnprintf(tmp, sizeof tmp, fmt, ap));
    va_end(ap);
    memcpy(e->msg, tmp, sizeof tmp);
    e->path[0] = '\0';
    e->line = e->col = 0;
    return -1;
}

int as_err_at(struct as_err *e, const char *path, unsigned line, unsigned col, const char *fmt, ...)
{
    if (!e)
        return -1;
    char tmp[sizeof e->msg], ptmp[sizeof e->path];
    va_list ap;
    va_start(ap, fmt);
    TRUNCATING(vsnprintf(tmp, sizeof tmp, fmt, ap));
    va_end(ap);
    TRUNCATING(snprintf(ptmp, sizeof ptmp, "%s", path ? path : ""));
    memcpy(e->msg, tmp, sizeof tmp);
    memcpy(e->path, ptmp, sizeof ptmp);
    e->line = line;
    e->col = col;
    return -1;
}

int as_err_errno(struct as_err *e, const char *fmt, ...)
{
    int saved = errno;
    if (!e)
        return -1;
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    TRUNCATING(vsnprintf(what, sizeof what, fmt, ap));
    va_end(ap);
    TRUNCATING(snprintf(e->msg, sizeof e->msg, "%s: %s", what, strerror(saved)));
    e->path[0] = '\0';
    e->line = e->col = 0;
    errno = saved;
    return -1;
}

void as_err_hint(struct as_err *e, const char *fmt, ...)
{
    if (!e)
        return;
    char tmp[sizeof e->hint];
    va_list ap;
    va_start(ap, fmt);
    TRUNCATING(vsnprintf(tmp, sizeof tmp, fmt, ap));
    va_end(ap);
    memcpy(e->hint, tmp, sizeof tmp);
}

void as_err_prefix(struct as_err *e, const char *fmt, ...)
{
    if (!e)
        return;
    char pre[1024], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    TRUNCATING(vsnprintf(pre, sizeof pre, fmt, ap));
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t pl = strlen(pre), ol = strlen(old);
    if (pl + 2 + ol >= sizeof e->msg)
        ol = sizeof e->msg - 3 - pl;
    memcpy(e->msg, pre, pl);
    memcpy(e->msg + pl, ": ", 2);
    memcpy(e->msg + pl + 2, old, ol);
    e->msg[pl + 2 + ol] = '\0';
}

const char *as_err_str(const struct as_err *e, char *buf, size_t size)
{
    if (!size)
        return buf;
    if (e->path[0] && e->line)
        TRUNCATING(
            snprintf(buf, size, "%s:%u:%u: %s", e->path, e->line, e->col ? e->col : 1, e->msg));
    else if (e->path[0])
        TRUNCATING(snprintf(buf, size, "%s: %s", e->path, e->msg));
    else
        TRUNCATING(snprintf(buf, size, "%s", e->msg));
    return buf;
}
