/*
 * err — error values that carry where an input went wrong.
 *
 * Library functions return 0 / -1 (or a pointer / NULL) and fill a
 * struct as_err. For errors in an input file, path/line/col say where
 * (1-based; 0 = unknown) and as_err_str() renders "path:line:col: msg".
 * hint is the exact command or edit that fixes it, when one exists; the CLI
 * prints it on the next line. Fixed-size so it can live on the stack and
 * never needs freeing; overlong text is truncated, never overflowed.
 */
#ifndef AS_BASE_ERR_H
#define AS_BASE_ERR_H

#include <stddef.h>

struct as_err {
    char msg[2048];
    char path[1024];
    unsigned line;
    unsigned col;
    char hint[1024];
};
#define AS_ERR_INIT                                                                                \
    {                                                                                              \
        {0}, {0}, 0, 0,                                                                            \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }

void as_err_clear(struct as_err *e);
/* Sets the message (no location). Returns -1 so callers can `return as_err_set(...)`. */
int as_err_set(struct as_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets message and location. Returns -1. */
int as_err_at(struct as_err *e, const char *path, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Sets the message from errno: "<what>: <strerror>". Returns -1. */
int as_err_errno(struct as_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the fix hint. */
void as_err_hint(struct as_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the message with "<prefix>: ". */
void as_err_prefix(struct as_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "path:line:col: msg", "path: msg" or "msg". Writes into buf (always NUL-terminated). */
const char *as_err_str(const struct as_err *e, char *buf, size_t size);
static inline int as_err_isset(const struct as_err *e)
{
    return e->msg[0] != '\0';
}

#endif
