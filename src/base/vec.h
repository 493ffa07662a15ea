/*
 * vec — typed growable arrays by macro, and strvec for NULL-terminated
 * string arrays (argv, environments) that own their strings.
 *
 *   VEC(int) v = VEC_INIT;  vec_push(&v, 3);  ... vec_free(&v);
 */
#ifndef AS_BASE_VEC_H
#define AS_BASE_VEC_H

#include <stddef.h>
#include <stdlib.h>

#include "base/xalloc.h"

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n;                                                                                  \
        size_t cap;                                                                                \
    }
#define VEC_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }
#define vec_push(vp, x)                                                                            \
    do {                                                                                           \
        (vp)->v = xgrow((vp)->v, &(vp)->cap, (vp)->n + 1, sizeof(*(vp)->v));                       \
        (vp)->v[(vp)->n++] = (x);                                                                  \
    } while (0)
#define vec_free(vp)                                                                               \
    do {                                                                                           \
        free((vp)->v);                                                                             \
        (vp)->v = NULL;                                                                            \
        (vp)->n = (vp)->cap = 0;                                                                   \
    } while (0)

/* NULL-terminated array of owned strings; v is never NULL after a push. */
typedef struct strvec {
    char **v;
    size_t n;
    size_t cap;
} strvec;
#define STRVEC_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void strvec_push(strvec *sv, const char *s);
void strvec_pushf(strvec *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes ownership of s. */
void strvec_push_take(strvec *sv, char *s);
void strvec_clear(strvec *sv);
/* Sorts byte-wise (strcmp). */
void strvec_sort(strvec *sv);
/* Index of s or -1. */
long strvec_find(const strvec *sv, const char *s);

#endif
