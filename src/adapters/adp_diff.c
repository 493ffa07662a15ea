/* diff — the apply preview (docs/adapters.md): common leading/trailing lines
 * trimmed, an LCS over the rest (a plain replace when the middle is too big
 * for a table), hunks with ≤ 2 lines of context, secrets masked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "base/term.h"
#include "base/xalloc.h"

#define LCS_MAX_CELLS ((size_t)4 << 20)
#define CONTEXT 2

struct line {
    const char *s;
    size_t n;
};
typedef VEC(struct line) lines;

static void split(const char *s, size_t len, lines *out)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(s + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - s) : len;
        struct line l = {s + i, e - i};
        vec_push(out, l);
        i = nl ? e + 1 : len;
    }
}

static bool eq(const struct line *a, const struct line *b)
{
    return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
}

enum op { OP_KEEP, OP_DEL, OP_ADD };
struct step {
    enum op op;
    const struct line *l;
};
typedef VEC(struct step) steps;

static void lcs(const lines *A, size_t a0, size_t a1, const lines *B, size_t b0, size_t b1,
                steps *out)
{
    size_t n = a1 - a0, m = b1 - b0;
    if (n == 0 || m == 0 || (n + 1) * (m + 1) > LCS_MAX_CELLS) {
        for (size_t i = a0; i < a1; i++) {
            struct step s = {OP_DEL, &A->v[i]};
            vec_push(out, s);
        }
        for (size_t j = b0; j < b1; j++) {
            struct step s = {OP_ADD, &B->v[j]};
            vec_push(out, s);
        }
        return;
    }
    uint32_t *t = xcalloc((n + 1) * (m + 1), sizeof(uint32_t));
#define T(i, j) t[(size_t)(i) * (m + 1) + (size_t)(j)]
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            T(i, j) = eq(&A->v[a0 + i], &B->v[b0 + j])
                          ? T(i + 1, j + 1) + 1
                          : (T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && eq(&A->v[a0 + i], &B->v[b0 + j])) {
            struct step s = {OP_KEEP, &A->v[a0 + i]};
            vec_push(out, s);
            i++;
            j++;
        } else if (j < m && (i == n || T(i, j + 1) >= T(i + 1, j))) {
            struct step s = {OP_ADD, &B->v[b0 + j]};
            vec_push(out, s);
            j++;
        } else {
            struct step s = {OP_DEL, &A->v[a0 + i]};
            vec_push(out, s);
            i++;
        }
    }
#undef T
    free(t);
}

static void put_line(strbuf *out, const char *prefix, const struct line *l, const adp_secrets *mask,
                     const char *on, const char *off)
{
    sb_adds(out, "  ");
    sb_adds(out, on);
    sb_adds(out, prefix);
    strbuf m = SB_INIT, clean = SB_INIT;
    size_t n = l->n;
    if (n && l->s[n - 1] == '\r')
        n--;
    if (mask && mask->n)
        adp_secrets_mask(mask, l->s, n, &m);
    else
        sb_add(&m, l->s, n);
    term_sanitize(&clean, m.buf, m.len);
    sb_add(out, clean.buf, clean.len);
    if (!clean.len) /* no trailing blank after the marker */
        sb_rtrim(out);
    sb_adds(out, off);
    sb_addc(out, '\n');
    sb_release_secure(&m);
    sb_release_secure(&clean);
}

void adp_diff(const char *a, size_t alen, const char *b, size_t blen, const adp_secrets *mask,
              bool color, size_t max_lines, strbuf *out, size_t *added, size_t *removed)
{
    lines A = VEC_INIT, B = VEC_INIT;
    split(a, alen, &A);
    split(b, blen, &B);
    size_t pre = 0;
    while (pre < A.n && pre < B.n && eq(&A.v[pre], &B.v[pre]))
        pre++;
    size_t suf = 0;
    while (suf < A.n - pre && suf < B.n - pre && eq(&A.v[A.n - 1 - suf], &B.v[B.n - 1 - suf]))
        suf++;
    steps S = VEC_INIT;
    for (size_t i = pre >= CONTEXT ? pre - CONTEXT : 0; i < pre; i++) {
        struct step s = {OP_KEEP, &A.v[i]};
        vec_push(&S, s);
    }
    lcs(&A, pre, A.n - suf, &B, pre, B.n - suf, &S);
    for (size_t i = A.n - suf; i < A.n && i < A.n - suf + CONTEXT; i++) {
        struct step s = {OP_KEEP, &A.v[i]};
        vec_push(&S, s);
    }
    *added = *removed = 0;
    for (size_t k = 0; k < S.n; k++) {
        if (S.v[k].op == OP_ADD)
            (*added)++;
        else if (S.v[k].op == OP_DEL)
            (*removed)++;
    }
    const char *green = color ? "\033[32m" : "", *red = color ? "\033[31m" : "";
    const char *reset = color ? "\033[0m" : "";
    size_t shown = 0;
    for (size_t k = 0; k < S.n; k++) {
        const struct step *s = &S.v[k];
        if (s->op == OP_KEEP) {
            /* Context only near a change. */
            bool near = false;
            for (size_t d = 1; d <= CONTEXT && !near; d++)
                near = (k >= d && S.v[k - d].op != OP_KEEP) ||
                       (k + d < S.n && S.v[k + d].op != OP_KEEP);
            if (near && max_lines == 0)
                put_line(out, "  ", s->l, mask, "", "");
            continue;
        }
        if (max_lines && shown >= max_lines)
            continue;
        shown++;
        put_line(out, s->op == OP_ADD ? "+ " : "- ", s->l, mask, s->op == OP_ADD ? green : red,
                 reset);
    }
    if (max_lines && shown < *added + *removed)
        sb_addf(out, "  … %zu more changed lines (-v shows them all)\n", *added + *removed - shown);
    vec_free(&S);
    vec_free(&A);
    vec_free(&B);
}
