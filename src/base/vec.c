/* vec — see vec.h. */
#include "base/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void strvec_push_take(strvec *sv, char *s)
{
    sv->v = xgrow(sv->v, &sv->cap, sv->n + 2, sizeof(char *));
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
}

void strvec_push(strvec *sv, const char *s)
{
    strvec_push_take(sv, xstrdup(s));
}

void strvec_pushf(strvec *sv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (!s) {
        fprintf(stderr, "agentstack: out of memory\n");
        abort();
    }
    strvec_push_take(sv, s);
}

void strvec_clear(strvec *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = sv->cap = 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void strvec_sort(strvec *sv)
{
    if (sv->n > 1)
        qsort(sv->v, sv->n, sizeof(char *), cmp_str);
}

long strvec_find(const strvec *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0)
            return (long)i;
    return -1;
}
