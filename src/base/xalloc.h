/*
 * xalloc — allocation that never returns NULL.
 *
 * Out of memory is not an input error: there is nothing sensible a command can
 * do but stop, so these helpers print one line and abort. Every other failure
 * in agentstack is reported through struct as_err instead.
 */
#ifndef AS_BASE_XALLOC_H
#define AS_BASE_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);
/* printf into a fresh allocation. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grow capacity *cap of an array of elem-sized items so that need items fit. */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem);

#endif
