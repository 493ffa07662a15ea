/* suggest — see suggest.h. */
#include "base/suggest.h"

#include <string.h>

size_t suggest_distance(const char *a, const char *b, size_t cap)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > m + cap || m > n + cap || m > 255)
        return cap + 1;
    size_t prev[256], cur[256];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t best = sub < del ? sub : del;
            cur[j] = best < ins ? best : ins;
        }
        memcpy(prev, cur, (m + 1) * sizeof prev[0]);
    }
    return prev[m] > cap ? cap + 1 : prev[m];
}

const char *suggest_closest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n && cands[i]; i++) {
        size_t d = suggest_distance(word, cands[i], 2);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    return best;
}
