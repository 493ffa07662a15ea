/*
 * glob — the glob grammar of docs/policy.md ("Globs") and the indexed glob sets that
 * make a decision cost a few hash probes instead of a scan of every rule.
 *
 * Grammar: '*' matches any byte run (empty, '/', '.' included), '**' is the
 * same as '*', every other byte is literal; matching is anchored. Split on
 * '*': the first piece is a prefix, the last a suffix of the rest, middle
 * pieces are placed leftmost in order. Leftmost placement is exact for
 * star-only globs, so the whole match is O(n·m) with no backtracking.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "policy/pol_internal.h"

/* ---- arena -------------------------------------------------------------- */

struct pol_arena_chunk {
    struct pol_arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *pol_arena_alloc(struct pol_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct pol_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        /* start small (most rulesets are tiny), then grow geometrically */
        size_t want = a->head ? a->head->cap * 2 : 1024;
        if (want > 1u << 20)
            want = 1u << 20;
        size_t cap = n > want ? n : want;
        c = xmalloc(sizeof *c + cap);
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

char *pol_arena_strdup(struct pol_arena *a, const char *s)
{
    size_t n = strlen(s);
    char *p = pol_arena_alloc(a, n + 1);
    memcpy(p, s, n + 1);
    return p;
}

void pol_arena_free(struct pol_arena *a)
{
    struct pol_arena_chunk *c = a->head;
    while (c) {
        struct pol_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

/* ---- byte helpers ------------------------------------------------------- */

static inline unsigned char fold(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static int eqn(const char *a, const char *b, size_t n, int nocase)
{
    if (!nocase)
        return memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (fold((unsigned char)a[i]) != fold((unsigned char)b[i]))
            return 0;
    return 1;
}

/* Leftmost occurrence of needle in hay[0..hn), or -1. */
static long find(const char *hay, size_t hn, const char *needle, size_t nn, int nocase)
{
    if (nn > hn)
        return -1;
    if (!nocase) {
        const char *p = memmem(hay, hn, needle, nn);
        return p ? (long)(p - hay) : -1;
    }
    for (size_t i = 0; i + nn <= hn; i++)
        if (eqn(hay + i, needle, nn, 1))
            return (long)i;
    return -1;
}

/* ---- the uncompiled matcher --------------------------------------------- */

int pol_glob_match(const char *pat, size_t plen, const char *s, size_t n, int nocase)
{
    const char *star = memchr(pat, '*', plen);
    if (!star)
        return plen == n && eqn(pat, s, n, nocase);
    size_t pre = (size_t)(star - pat);
    size_t last = plen;
    while (last > 0 && pat[last - 1] != '*')
        last--;
    size_t suf = plen - last;
    if (n < pre + suf || !eqn(s, pat, pre, nocase) || !eqn(s + n - suf, pat + last, suf, nocase))
        return 0;
    size_t lo = pre, hi = n - suf;
    size_t i = pre;
    while (i < last) {
        while (i < last && pat[i] == '*')
            i++;
        size_t j = i;
        while (j < last && pat[j] != '*')
            j++;
        if (j > i) {
            long at = find(s + lo, hi - lo, pat + i, j - i, nocase);
            if (at < 0)
                return 0;
            lo += (size_t)at + (j - i);
        }
        i = j;
    }
    return 1;
}

/* ---- compiled globs ----------------------------------------------------- */

/* Splits pat into '*'-separated pieces (runs of '*' count once). Returns -1
 * when the glob exceeds the caps: it then never matches and is malformed. */
static int glob_compile(struct pol_glob *g, size_t maxlen)
{
    size_t len = strlen(g->pat);
    g->len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len);
    g->npieces = 0;
    if (len > maxlen || len > 65535)
        return -1;
    if (!memchr(g->pat, '*', len))
        return 0;
    size_t np = 0, i = 0;
    for (;;) {
        size_t j = i;
        while (j < len && g->pat[j] != '*')
            j++;
        if (np > POL_MAX_STARS)
            return -1;
        g->poff[np] = (uint16_t)i;
        g->plen[np] = (uint16_t)(j - i);
        np++;
        if (j >= len)
            break;
        while (j < len && g->pat[j] == '*')
            j++;
        i = j;
    }
    g->npieces = (uint8_t)np;
    return 0;
}

static int glob_match_compiled(const struct pol_glob *g, const char *s, size_t n, int nocase)
{
    const char *p = g->pat;
    if (g->npieces == 0)
        return n == g->len && eqn(s, p, n, nocase);
    size_t last = (size_t)g->npieces - 1;
    size_t pre = g->plen[0], suf = g->plen[last];
    if (n < pre + suf || !eqn(s, p, pre, nocase) ||
        !eqn(s + n - suf, p + g->poff[last], suf, nocase))
        return 0;
    size_t lo = pre, hi = n - suf;
    for (size_t i = 1; i < last; i++) {
        long at = find(s + lo, hi - lo, p + g->poff[i], g->plen[i], nocase);
        if (at < 0)
            return 0;
        lo += (size_t)at + g->plen[i];
    }
    return 1;
}

/* ---- glob sets ---------------------------------------------------------- */

/* A 64-bit signature of the byte pairs (and, for one-byte runs, the bytes)
 * in text: if a glob matches s, every piece occurs in s, so the glob's
 * signature is a subset of s's. One AND rules most general globs out before
 * the matcher runs. */
static inline uint64_t pair_bit(unsigned char a, unsigned char b)
{
    return 1ULL << ((a * 31u + b) & 63u);
}

static uint64_t signature(const char *s, size_t n, int nocase)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = nocase ? fold((unsigned char)s[i]) : (unsigned char)s[i];
        m |= 1ULL << (a & 63u);
        if (i + 1 < n) {
            unsigned char b = nocase ? fold((unsigned char)s[i + 1]) : (unsigned char)s[i + 1];
            m |= pair_bit(a, b);
        }
    }
    return m;
}

static uint64_t glob_need(const struct pol_glob *g, int nocase)
{
    uint64_t m = 0;
    for (size_t i = 0; i < g->npieces; i++) {
        const char *p = g->pat + g->poff[i];
        size_t n = g->plen[i];
        if (n == 1) {
            unsigned char a = nocase ? fold((unsigned char)p[0]) : (unsigned char)p[0];
            m |= 1ULL << (a & 63u);
        }
        for (size_t k = 0; k + 1 < n; k++) {
            unsigned char a = nocase ? fold((unsigned char)p[k]) : (unsigned char)p[k];
            unsigned char b = nocase ? fold((unsigned char)p[k + 1]) : (unsigned char)p[k + 1];
            m |= pair_bit(a, b);
        }
    }
    return m;
}

enum { CLS_EXACT, CLS_PREFIX, CLS_SUFFIX, CLS_ALL, CLS_OTHER, CLS_BAD };

static int glob_class(const struct pol_glob *g)
{
    if (g->malformed)
        return CLS_BAD;
    if (g->npieces == 0)
        return CLS_EXACT;
    if (g->npieces == 2 && g->plen[0] == 0 && g->plen[1] == 0)
        return CLS_ALL;
    if (g->npieces == 2 && g->plen[1] == 0)
        return CLS_PREFIX;
    if (g->npieces == 2 && g->plen[0] == 0)
        return CLS_SUFFIX;
    return CLS_OTHER;
}

static uint64_t hash_fwd(const char *s, size_t n, int nocase)
{
    uint64_t h = POL_FNV_INIT;
    for (size_t i = 0; i < n; i++)
        h = pol_fnv_step(h, (unsigned char)s[i], nocase);
    return h;
}

static uint64_t hash_rev(const char *s, size_t n, int nocase)
{
    uint64_t h = POL_FNV_INIT;
    for (size_t i = n; i > 0; i--)
        h = pol_fnv_step(h, (unsigned char)s[i - 1], nocase);
    return h;
}

/* The bytes a glob is indexed under in a table of class cls. */
static void glob_key(const struct pol_glob *g, int cls, const char **k, size_t *kn)
{
    if (cls == CLS_EXACT) {
        *k = g->pat;
        *kn = g->len;
    } else if (cls == CLS_PREFIX) {
        *k = g->pat;
        *kn = g->plen[0];
    } else {
        *k = g->pat + g->poff[1];
        *kn = g->plen[1];
    }
}

static int cmp_u16(const void *a, const void *b)
{
    uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;
    return (x > y) - (x < y);
}

static void hidx_build(struct pol_hidx *h, struct pol_globset *gs, int cls, struct pol_arena *a)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < gs->n; i++)
        count += glob_class(&gs->g[i]) == cls;
    memset(h, 0, sizeof *h);
    if (!count)
        return;
    uint32_t cap = 8;
    while (cap < count * 2)
        cap <<= 1;
    h->slot = pol_arena_alloc(a, cap * sizeof *h->slot);
    memset(h->slot, 0, cap * sizeof *h->slot);
    h->mask = cap - 1;
    uint16_t *lens = pol_arena_alloc(a, count * sizeof *lens);
    uint32_t nl = 0;
    for (uint32_t i = 0; i < gs->n; i++) {
        if (glob_class(&gs->g[i]) != cls)
            continue;
        const char *k;
        size_t kn;
        glob_key(&gs->g[i], cls, &k, &kn);
        uint64_t hv = cls == CLS_SUFFIX ? hash_rev(k, kn, gs->nocase) : hash_fwd(k, kn, gs->nocase);
        uint32_t at = (uint32_t)hv & h->mask;
        while (h->slot[at])
            at = (at + 1) & h->mask;
        h->slot[at] = i + 1;
        lens[nl++] = (uint16_t)kn;
    }
    qsort(lens, nl, sizeof *lens, cmp_u16);
    uint32_t w = 0;
    for (uint32_t i = 0; i < nl; i++)
        if (w == 0 || lens[w - 1] != lens[i])
            lens[w++] = lens[i];
    h->lens = lens;
    h->nlens = w;
}

static int cmp_item(const void *a, const void *b)
{
    const struct pol_item *x = a, *y = b;
    return strcmp(x->disp, y->disp);
}

void pol_globset_build(struct pol_globset *gs, struct pol_arena *a, const struct pol_item *items,
                       size_t n, int nocase, size_t maxlen)
{
    memset(gs, 0, sizeof *gs);
    gs->nocase = (uint8_t)(nocase != 0);
    gs->first_malformed = -1;
    if (!n)
        return;
    struct pol_item small[32];
    struct pol_item *sorted = n <= 32 ? small : xmalloc(n * sizeof *sorted);
    memcpy(sorted, items, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_item);
    gs->g = pol_arena_alloc(a, n * sizeof *gs->g);
    gs->disps = pol_arena_alloc(a, n * sizeof *gs->disps);
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && strcmp(gs->g[m - 1].disp, sorted[i].disp) == 0)
            continue;
        struct pol_glob *g = &gs->g[m];
        memset(g, 0, sizeof *g);
        g->disp = pol_arena_strdup(a, sorted[i].disp);
        g->pat = strcmp(sorted[i].pat, sorted[i].disp) == 0 ? g->disp
                                                            : pol_arena_strdup(a, sorted[i].pat);
        g->port = sorted[i].port;
        g->malformed = sorted[i].malformed;
        if (glob_compile(g, maxlen) < 0)
            g->malformed = 1;
        if (g->malformed && gs->first_malformed < 0)
            gs->first_malformed = (int32_t)m;
        gs->disps[m] = g->disp;
        m++;
    }
    if (sorted != small)
        free(sorted);
    gs->n = m;
    hidx_build(&gs->exact, gs, CLS_EXACT, a);
    hidx_build(&gs->prefix, gs, CLS_PREFIX, a);
    hidx_build(&gs->suffix, gs, CLS_SUFFIX, a);
    uint32_t nall = 0, nother = 0;
    for (uint32_t i = 0; i < m; i++) {
        int c = glob_class(&gs->g[i]);
        nall += c == CLS_ALL;
        nother += c == CLS_OTHER;
    }
    gs->all = nall ? pol_arena_alloc(a, nall * sizeof *gs->all) : NULL;
    gs->other = nother ? pol_arena_alloc(a, nother * sizeof *gs->other) : NULL;
    for (uint32_t i = 0; i < m; i++) {
        int c = glob_class(&gs->g[i]);
        if (c == CLS_ALL)
            gs->all[gs->nall++] = i;
        else if (c == CLS_OTHER) {
            gs->other[gs->nother++] = i;
            gs->g[i].need = glob_need(&gs->g[i], gs->nocase);
        }
    }
}

void pol_globset_release(struct pol_globset *gs)
{
    /* storage lives in the ruleset's arena */
    memset(gs, 0, sizeof *gs);
    gs->first_malformed = -1;
}

static inline int port_ok(const struct pol_glob *g, unsigned port)
{
    return g->port == 0 || port == 0 || g->port == port;
}

/* Probes table h for key s[0..kn) (hash hv); keeps the lowest matching id. */
static void probe(const struct pol_globset *gs, const struct pol_hidx *h, int cls, uint64_t hv,
                  const char *k, size_t kn, unsigned port, int32_t *best)
{
    uint32_t at = (uint32_t)hv & h->mask;
    uint32_t id1;
    while ((id1 = h->slot[at]) != 0) {
        const struct pol_glob *g = &gs->g[id1 - 1];
        const char *gk;
        size_t gkn;
        glob_key(g, cls, &gk, &gkn);
        if (gkn == kn && ((int32_t)(id1 - 1) < *best || *best < 0) && port_ok(g, port) &&
            eqn(gk, k, kn, gs->nocase))
            *best = (int32_t)(id1 - 1);
        at = (at + 1) & h->mask;
    }
}

int32_t pol_globset_find(const struct pol_globset *gs, const char *s, size_t n, unsigned port,
                         int first_only)
{
    int32_t best = -1;
    int nc = gs->nocase;
    if (!gs->n)
        return -1;
    if (gs->exact.mask) {
        probe(gs, &gs->exact, CLS_EXACT, hash_fwd(s, n, nc), s, n, port, &best);
        if (best >= 0 && first_only)
            return best;
    }
    if (gs->prefix.mask) {
        uint64_t h = POL_FNV_INIT;
        size_t done = 0;
        for (uint32_t li = 0; li < gs->prefix.nlens && gs->prefix.lens[li] <= n; li++) {
            size_t L = gs->prefix.lens[li];
            for (; done < L; done++)
                h = pol_fnv_step(h, (unsigned char)s[done], nc);
            probe(gs, &gs->prefix, CLS_PREFIX, h, s, L, port, &best);
            if (best >= 0 && first_only)
                return best;
        }
    }
    if (gs->suffix.mask) {
        uint64_t h = POL_FNV_INIT;
        size_t done = 0;
        for (uint32_t li = 0; li < gs->suffix.nlens && gs->suffix.lens[li] <= n; li++) {
            size_t L = gs->suffix.lens[li];
            for (; done < L; done++)
                h = pol_fnv_step(h, (unsigned char)s[n - 1 - done], nc);
            probe(gs, &gs->suffix, CLS_SUFFIX, h, s + n - L, L, port, &best);
            if (best >= 0 && first_only)
                return best;
        }
    }
    for (uint32_t i = 0; i < gs->nall; i++) {
        int32_t id = (int32_t)gs->all[i];
        if (best >= 0 && id > best)
            break;
        if (port_ok(&gs->g[id], port)) {
            best = id;
            break;
        }
    }
    if (best >= 0 && first_only)
        return best;
    uint64_t sig = gs->nother ? signature(s, n, nc) : 0;
    for (uint32_t i = 0; i < gs->nother; i++) {
        int32_t id = (int32_t)gs->other[i];
        if (best >= 0 && id > best)
            break;
        const struct pol_glob *g = &gs->g[id];
        if ((g->need & ~sig) == 0 && port_ok(g, port) && glob_match_compiled(g, s, n, nc)) {
            best = id;
            break;
        }
    }
    return best;
}

int pol_globset_cmp(const struct pol_globset *a, const struct pol_globset *b)
{
    uint32_t n = a->n < b->n ? a->n : b->n;
    for (uint32_t i = 0; i < n; i++) {
        int c = strcmp(a->g[i].disp, b->g[i].disp);
        if (c)
            return c;
    }
    return (a->n > b->n) - (a->n < b->n);
}

int pol_globset_equal(const struct pol_globset *a, const struct pol_globset *b)
{
    return pol_globset_cmp(a, b) == 0;
}

/* ---- intersection with a shell pattern ---------------------------------- */

/* Product of the two patterns as automata over positions (i in pat, j in q):
 * a breadth-first walk of reachable pairs; '*' in pat stays or advances on
 * any byte, q's '*' on any byte but '/', q's "**" on any byte, '?' consumes
 * one byte but '/'. Accepts when both ends are reached. O(plen * qlen). */
int pol_glob_intersects(const char *pat, size_t plen, const char *q, size_t qlen)
{
    size_t W = qlen + 1, states = (plen + 1) * W;
    if (states > ((size_t)1 << 22))
        return 1;
    unsigned char *seen = xcalloc(states, 1);
    size_t *stack = xmalloc(states * sizeof *stack);
    size_t sp = 0;
    int hit = 0;
#define PUSH(pi, qi)                                                                               \
    do {                                                                                           \
        size_t id_ = (pi)*W + (qi);                                                                \
        if (!seen[id_]) {                                                                          \
            seen[id_] = 1;                                                                         \
            stack[sp++] = id_;                                                                     \
        }                                                                                          \
    } while (0)
    PUSH(0, 0);
    while (sp && !hit) {
        size_t id = stack[--sp], i = id / W, j = id % W;
        if (i == plen && j == qlen) {
            hit = 1;
            break;
        }
        bool pstar = i < plen && pat[i] == '*';
        bool qstar = j < qlen && q[j] == '*';
        bool qdeep = qstar && j + 1 < qlen && q[j + 1] == '*';
        /* stars match the empty string */
        if (pstar)
            PUSH(i + 1, j);
        if (qstar)
            PUSH(i, j + (qdeep ? 2 : 1));
        if (i >= plen && !pstar)
            continue;
        if (j >= qlen)
            continue;
        /* consume one byte c accepted by both sides */
        if (pstar && qstar) {
            continue; /* both stay: no progress */
        } else if (pstar) {
            /* q's next is '?' or a literal: pat's star absorbs it */
            PUSH(i, j + 1);
        } else if (qstar) {
            /* pat's next is a literal: q's star absorbs it unless it is a '/' */
            if (qdeep || pat[i] != '/')
                PUSH(i + 1, j);
        } else if (q[j] == '?') {
            if (pat[i] != '/')
                PUSH(i + 1, j + 1);
        } else if (pat[i] == q[j]) {
            PUSH(i + 1, j + 1);
        }
    }
#undef PUSH
    free(seen);
    free(stack);
    return hit;
}
