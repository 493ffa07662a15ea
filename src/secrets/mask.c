/*
 * mask — resolved secret values out of text we show (see secrets.h).
 *
 * Why: apply's diff and the gateway's notes about an upstream both show
 * text that may carry a value resolved for it, and each once masked it its
 * own way: one scanned once and could leave the tail of a value that an
 * earlier match overlapped, one replaced value after value and could leave
 * the head of one, and rewrite its own markers. One function decides it.
 *
 * Guarantees: no byte of any occurrence of a value in text reaches out;
 * out holds only text's other bytes and ${NAME} markers, and a marker is
 * never scanned again.
 */
#include <string.h>

#include "secrets/secrets.h"

/* The length of the longest value that occurs at text + i (0: none), and
 * its index in *k. */
static size_t longest_at(const struct sec_masked *v, size_t n, const char *text, size_t len,
                         size_t i, size_t *k)
{
    size_t best = 0;
    for (size_t j = 0; j < n; j++) {
        size_t vl = v[j].value ? strlen(v[j].value) : 0;
        if (vl > best && vl <= len - i && memcmp(text + i, v[j].value, vl) == 0) {
            best = vl;
            *k = j;
        }
    }
    return best;
}

void sec_mask(const struct sec_masked *v, size_t n, const char *text, size_t len, strbuf *out)
{
    size_t i = 0;
    while (i < len) {
        size_t k = 0, best = longest_at(v, n, text, len, i, &k);
        if (!best) {
            sb_addc(out, text[i++]);
            continue;
        }
        sb_addf(out, "${%s}", v[k].name);
        /* An occurrence that starts inside what is masked and runs past
         * it is masked too, whole, until none does: a value overlapping
         * another leaves none of its bytes behind. */
        size_t from = i + 1, end = i + best;
        for (;;) {
            size_t far = end, fk = 0;
            for (size_t j = from; j < end; j++) {
                size_t jk = 0, l = longest_at(v, n, text, len, j, &jk);
                if (j + l > far) {
                    far = j + l;
                    fk = jk;
                }
            }
            if (far == end)
                break;
            sb_addf(out, "${%s}", v[fk].name);
            from = end;
            end = far;
        }
        i = end;
    }
}
