/*
 * The policy invariant, effective(B, M) ⊆ M, tested two ways against a
 * reference evaluator written here independently of src/policy:
 *
 *  - exhaustively over small scopes (entries of 1-3 chars over {a,_,*},
 *    with and without '!', up to two (key, entry) pairs per layer, every
 *    subject of 1-3 chars over {a,_,A,b}, servers s, t and "*");
 *  - with seeded random cases (distributions: 0-4 keys, "*" or
 *    [a-z_]{1,8}; 0-4 entries, '!'? + [a-z_*]{1,6}; servers sometimes "*"),
 *    at least 100 000 per property family per run. The seed is printed; set
 *    AS_POLICY_SEED to replay one, AS_POLICY_CASES to run more. ctest runs
 *    each test below as its own entry (policy/test_invariant/<test>, with
 *    its own seed), so replay one with the test's name as the argument.
 *
 * The same families run over [policy.tools]' "prompt:" and "resource:"
 * entries (docs/policy.md, "Prompts and resources").
 *
 * Properties: M alone denies ⇒ compiled(M, B) denies, by the machine layer;
 * compiled ≡ reference (verdict and deciding layer, servers outside the
 * compiled set included); compile(M, B) denials ⊇ compile(M, ∅) denials;
 * JSON round trip keeps every decision and the bytes; insertion order never
 * changes the bytes; filesystem deny is a union and write is monotone.
 *
 * The reference is deliberately naive: a dynamic-programming glob matcher,
 * and a per-entry walk of the live algorithm of docs/policy.md (keys S then "*", denies
 * then allowlists, machine then project), with our stricter rule that deny
 * patterns fold ASCII case for tool and secret names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "testutil.h"

/* ---- PRNG --------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned rn(unsigned n)
{
    return (unsigned)(rnd() % n);
}

/* ---- reference glob matcher (DP) ---------------------------------------- */

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

static int ref_match(const char *p, const char *s, int nocase)
{
    size_t pn = strlen(p), sn = strlen(s);
    /* row[j]: p[0..i) matches s[0..j), one pattern byte at a time */
    unsigned char prev[80], cur[80];
    if (sn >= 80)
        fail_msg("reference matcher input too long");
    for (size_t j = 0; j <= sn; j++)
        prev[j] = j == 0;
    for (size_t i = 1; i <= pn; i++) {
        for (size_t j = 0; j <= sn; j++) {
            if (p[i - 1] == '*') {
                cur[j] = prev[j] || (j > 0 && cur[j - 1]);
            } else if (j > 0) {
                int a = (unsigned char)p[i - 1], b = (unsigned char)s[j - 1];
                if (nocase) {
                    a = lower(a);
                    b = lower(b);
                }
                cur[j] = prev[j - 1] && a == b;
            } else {
                cur[j] = 0;
            }
        }
        memcpy(prev, cur, sn + 1);
    }
    return prev[sn];
}

/* ---- reference layers and evaluator ------------------------------------- */

struct rent {
    char key[16];
    char text[24]; /* as written, with '!' */
};
struct rlayer {
    int n;
    struct rent e[24];
};

/* Splits an egress entry into host glob and pin (0 any). */
static void ref_egress_split(const char *t, char *host, unsigned *pin)
{
    const char *c = strrchr(t, ':');
    *pin = 0;
    if (!c) {
        strcpy(host, t);
        return;
    }
    memcpy(host, t, (size_t)(c - t));
    host[c - t] = '\0';
    if (strcmp(c + 1, "*") != 0)
        *pin = (unsigned)atoi(c + 1);
}

static int ref_entry_matches(enum pol_dim dim, const char *body, const char *subject, unsigned port,
                             int deny)
{
    if (dim == POL_EGRESS) {
        char host[32];
        unsigned pin;
        ref_egress_split(body, host, &pin);
        if (pin && port && pin != port)
            return 0;
        return ref_match(host, subject, 0);
    }
    return ref_match(body, subject, deny);
}

static int applies(const char *key, const char *server)
{
    return strcmp(key, "*") == 0 || (strcmp(server, "*") != 0 && strcmp(key, server) == 0);
}

/* 1 when this layer denies. */
static int ref_layer_denies(const struct rlayer *L, enum pol_dim dim, const char *server,
                            const char *subject, unsigned port)
{
    for (int i = 0; i < L->n; i++)
        if (applies(L->e[i].key, server) && L->e[i].text[0] == '!' &&
            ref_entry_matches(dim, L->e[i].text + 1, subject, port, 1))
            return 1;
    for (int i = 0; i < L->n; i++) {
        if (!applies(L->e[i].key, server))
            continue;
        int seen_before = 0;
        for (int j = 0; j < i; j++)
            seen_before |= strcmp(L->e[j].key, L->e[i].key) == 0;
        if (seen_before)
            continue;
        int has_allow = 0, hit = 0;
        for (int j = i; j < L->n; j++)
            if (strcmp(L->e[j].key, L->e[i].key) == 0 && L->e[j].text[0] != '!') {
                has_allow = 1;
                hit |= ref_entry_matches(dim, L->e[j].text, subject, port, 0);
            }
        if (has_allow && !hit)
            return 1;
    }
    return 0;
}

/* 0 allow, 1 denied by machine, 2 denied by project. */
static int ref_decide(const struct rlayer *m, const struct rlayer *b, enum pol_dim dim,
                      const char *server, const char *subject, unsigned port)
{
    char norm[64];
    if (dim == POL_EGRESS) {
        size_t n = strlen(subject);
        for (size_t i = 0; i <= n; i++)
            norm[i] = (char)lower((unsigned char)subject[i]);
        if (n > 1 && norm[n - 1] == '.')
            norm[n - 1] = '\0';
        subject = norm;
    }
    if (m && ref_layer_denies(m, dim, server, subject, port))
        return 1;
    if (b && ref_layer_denies(b, dim, server, subject, port))
        return 2;
    return 0;
}

/* ---- building the real thing -------------------------------------------- */

static struct pol_layer *build(const struct rlayer *r, enum pol_layer_id id, enum pol_dim dim)
{
    struct pol_layer *l = pol_layer_new(id, NULL);
    struct as_err err = AS_ERR_INIT;
    for (int i = 0; r && i < r->n; i++)
        if (pol_layer_add(l, dim, r->e[i].key, r->e[i].text, 0, 0, &err) < 0)
            fail_msg("generator produced an invalid entry \"%s\": %s", r->e[i].text, err.msg);
    return l;
}

static struct pol_ruleset *compile(const struct rlayer *m, const struct rlayer *b, enum pol_dim dim)
{
    struct pol_layer *ml = build(m, POL_MACHINE, dim), *bl = build(b, POL_PROJECT, dim);
    struct as_err err = AS_ERR_INIT;
    struct pol_ruleset *rs = pol_compile(ml, bl, NULL, &err);
    if (!rs)
        fail_msg("compile: %s", err.msg);
    pol_layer_free(ml);
    pol_layer_free(bl);
    return rs;
}

static int by_code(const struct pol_decision *d)
{
    return d->allow ? 0 : d->by == POL_BY_MACHINE ? 1 : d->by == POL_BY_PROJECT ? 2 : 9;
}

static unsigned long long n_decisions;

static void dump(const char *what, const struct rlayer *l)
{
    fprintf(stderr, "  %s:", what);
    for (int i = 0; l && i < l->n; i++)
        fprintf(stderr, " %s=%s", l->e[i].key, l->e[i].text);
    fprintf(stderr, "\n");
}

/* Checks every property for one (M, B) and a set of queries. */
static void check_case_with(const struct rlayer *m, const struct rlayer *b, enum pol_dim dim,
                            const char *const *servers, size_t ns, const char *const *subjects,
                            size_t nsub, const unsigned *ports, size_t np, int roundtrip,
                            const struct pol_ruleset *rm)
{
    struct pol_ruleset *rs = compile(m, b, dim);
    struct pol_ruleset *rt = NULL;
    if (roundtrip) {
        strbuf j1 = SB_INIT, j2 = SB_INIT;
        pol_ruleset_to_json(rs, &j1);
        struct as_err err = AS_ERR_INIT;
        rt = pol_ruleset_from_json(j1.buf, j1.len, &err);
        if (!rt)
            fail_msg("round trip: %s\n%s", err.msg, j1.buf);
        pol_ruleset_to_json(rt, &j2);
        if (strcmp(j1.buf, j2.buf) != 0)
            fail_msg("wire form not stable:\n%s\n%s", j1.buf, j2.buf);
        sb_release(&j1);
        sb_release(&j2);
    }
    for (size_t si = 0; si < ns; si++)
        for (size_t ui = 0; ui < nsub; ui++)
            for (size_t pi = 0; pi < np; pi++) {
                const char *sv = servers[si], *su = subjects[ui];
                unsigned port = ports[pi];
                struct pol_decision d, dm, dt;
                int want = ref_decide(m, b, dim, sv, su, port);
                int want_m = ref_decide(m, NULL, dim, sv, su, port);
                pol_decide(rs, dim, sv, su, port, &d);
                pol_decide(rm, dim, sv, su, port, &dm);
                int got = by_code(&d), got_m = by_code(&dm);
                n_decisions += 2;
                if (got != want || got_m != want_m || (want_m && got != 1) || (got_m && d.allow)) {
                    dump("M", m);
                    dump("B", b);
                    fail_msg("%s server=%s subject=%s port=%u: compiled %d / reference %d; "
                             "machine-only compiled %d / reference %d",
                             pol_dim_display(dim), sv, su, port, got, want, got_m, want_m);
                }
                if (rt) {
                    pol_decide(rt, dim, sv, su, port, &dt);
                    n_decisions++;
                    strbuf t1 = SB_INIT, t2 = SB_INIT;
                    pol_decision_text(&d, &t1);
                    pol_decision_text(&dt, &t2);
                    if (by_code(&dt) != got || strcmp(t1.buf, t2.buf) != 0)
                        fail_msg("round trip changed %s/%s: \"%s\" vs \"%s\"", sv, su, t1.buf,
                                 t2.buf);
                    sb_release(&t1);
                    sb_release(&t2);
                }
            }
    pol_ruleset_free(rs);
    pol_ruleset_free(rt);
}

/* As check_case_with, compiling the machine-only ruleset itself. */
static void check_case(const struct rlayer *m, const struct rlayer *b, enum pol_dim dim,
                       const char *const *servers, size_t ns, const char *const *subjects,
                       size_t nsub, const unsigned *ports, size_t np, int roundtrip)
{
    struct pol_ruleset *rm = compile(m, NULL, dim);
    check_case_with(m, b, dim, servers, ns, subjects, nsub, ports, np, roundtrip, rm);
    pol_ruleset_free(rm);
}

/* ---- exhaustive small scope (tools) ------------------------------------- */

static char small_entries[100][8];
static size_t n_small;

static void gen_small_entries(size_t maxlen)
{
    static const char alpha[] = "a_*";
    n_small = 0;
    for (size_t len = 1; len <= maxlen; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= 3;
        for (size_t code = 0; code < total; code++) {
            char s[8];
            size_t c = code;
            for (size_t i = 0; i < len; i++, c /= 3)
                s[i] = alpha[c % 3];
            s[len] = '\0';
            strcpy(small_entries[n_small++], s);
            small_entries[n_small][0] = '!';
            strcpy(small_entries[n_small++] + 1, s);
        }
    }
}

static const char *small_subjects[100];
static size_t n_small_subjects;

static void gen_small_subjects(size_t maxlen)
{
    static const char alpha[] = "a_Ab";
    static char store[100][8];
    n_small_subjects = 0;
    for (size_t len = 1; len <= maxlen; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= 4;
        for (size_t code = 0; code < total; code++) {
            size_t c = code;
            for (size_t i = 0; i < len; i++, c /= 4)
                store[n_small_subjects][i] = alpha[c % 4];
            store[n_small_subjects][len] = '\0';
            small_subjects[n_small_subjects] = store[n_small_subjects];
            n_small_subjects++;
        }
    }
}

/* Every layer of at most one (key, entry) pair. */
static size_t small_layers(struct rlayer *out)
{
    static const char *const keys[] = {"*", "s"};
    size_t n = 0;
    out[n++].n = 0;
    for (int k = 0; k < 2; k++)
        for (size_t e = 0; e < n_small; e++) {
            out[n].n = 1;
            strcpy(out[n].e[0].key, keys[k]);
            strcpy(out[n].e[0].text, small_entries[e]);
            n++;
        }
    return n;
}

static void test_exhaustive_tools(void **st)
{
    (void)st;
    static const char *const servers[] = {"s", "t", "*"};
    static const unsigned port0[] = {0};
    static struct rlayer L[200];
    unsigned long long combos = 0, before = n_decisions;
    /* (a) machine and project each at most one pair, entries up to 3 chars */
    gen_small_entries(3);
    gen_small_subjects(3);
    size_t nl = small_layers(L);
    for (size_t i = 0; i < nl; i++) {
        struct pol_ruleset *rm = compile(&L[i], NULL, POL_TOOLS);
        for (size_t j = 0; j < nl; j++, combos++)
            check_case_with(&L[i], &L[j], POL_TOOLS, servers, 3, small_subjects, n_small_subjects,
                            port0, 1, 0, rm);
        pol_ruleset_free(rm);
    }
    /* (b) machine with two pairs, project with at most one, entries up to 2 chars
     * (pairs unordered: order within a layer is covered by the order property) */
    gen_small_entries(2);
    gen_small_subjects(2);
    nl = small_layers(L);
    for (size_t i = 1; i < nl; i++)
        for (size_t i2 = i + 1; i2 < nl; i2++) {
            struct rlayer m = L[i];
            m.e[1] = L[i2].e[0];
            m.n = 2;
            struct pol_ruleset *rm = compile(&m, NULL, POL_TOOLS);
            for (size_t j = 0; j < nl; j++, combos++)
                check_case_with(&m, &L[j], POL_TOOLS, servers, 3, small_subjects, n_small_subjects,
                                port0, 1, 0, rm);
            pol_ruleset_free(rm);
        }
    printf("policy invariant: exhaustive tools: %llu (M, B) combinations, %llu decisions\n", combos,
           n_decisions - before);
}

/* Egress exhaustive: host patterns of 1-2 labels over {a, b, *, a*}, with
 * no pin, :1 or :*, against hosts over {a, b, ab, A} (with and without a
 * trailing dot) on ports 0, 1, 2. */
static void test_exhaustive_egress(void **st)
{
    (void)st;
    static const char *const labels[] = {"a", "b", "*", "a*"};
    static const char *const pins[] = {"", ":1", ":*"};
    static const char *const servers[] = {"s", "*"};
    static const unsigned ports[] = {0, 1, 2};
    static char ent[200][24];
    size_t ne = 0;
    for (int l1 = 0; l1 < 4; l1++)
        for (int l2 = -1; l2 < 4; l2++)
            for (int p = 0; p < 3; p++)
                for (int neg = 0; neg < 2; neg++) {
                    char host[16];
                    if (l2 < 0)
                        snprintf(host, sizeof host, "%s", labels[l1]);
                    else
                        snprintf(host, sizeof host, "%s.%s", labels[l1], labels[l2]);
                    snprintf(ent[ne++], 24, "%s%s%s", neg ? "!" : "", host, pins[p]);
                }
    static const char *subjects[40];
    static char sstore[40][16];
    static const char *const sl[] = {"a", "b", "ab", "A"};
    size_t nsub = 0;
    for (int l1 = 0; l1 < 4; l1++)
        for (int l2 = -1; l2 < 4; l2++) {
            if (l2 < 0)
                snprintf(sstore[nsub], 16, "%s", sl[l1]);
            else
                snprintf(sstore[nsub], 16, "%s.%s%s", sl[l1], sl[l2], l1 == 3 ? "." : "");
            subjects[nsub] = sstore[nsub];
            nsub++;
        }
    unsigned long long combos = 0, before = n_decisions;
    struct rlayer m, b;
    for (size_t i = 0; i <= ne; i++)
        for (size_t j = 0; j <= ne; j += 3) {
            m.n = i < ne;
            b.n = j < ne;
            if (m.n) {
                strcpy(m.e[0].key, "*");
                strcpy(m.e[0].text, ent[i]);
            }
            if (b.n) {
                strcpy(b.e[0].key, (j / 3) % 2 ? "*" : "s");
                strcpy(b.e[0].text, ent[j]);
            }
            check_case(&m, &b, POL_EGRESS, servers, 2, subjects, nsub, ports, 3, 0);
            combos++;
        }
    printf("policy invariant: exhaustive egress: %llu (M, B) combinations, %llu decisions\n",
           combos, n_decisions - before);
}

/* ---- random cases ------------------------------------------------------- */

static void rand_str(char *out, size_t maxlen, const char *alpha, size_t minlen)
{
    size_t n = minlen + rn((unsigned)(maxlen - minlen + 1));
    size_t na = strlen(alpha);
    for (size_t i = 0; i < n; i++)
        out[i] = alpha[rn((unsigned)na)];
    out[n] = '\0';
}

static void rand_key(char *out)
{
    if (rn(3) == 0)
        strcpy(out, "*");
    else
        rand_str(out, 8, "abcdefghijklmnopqrstuvwxyz_", 1);
}

/* Tool/secret-style layer: 0-4 keys × 0-4 entries. */
static void rand_layer(struct rlayer *l, const char (*pool)[16], size_t npool)
{
    l->n = 0;
    unsigned nk = rn(5);
    for (unsigned k = 0; k < nk; k++) {
        char key[16];
        if (npool && rn(2))
            strcpy(key, pool[rn((unsigned)npool)]);
        else
            rand_key(key);
        unsigned ne = rn(5);
        for (unsigned e = 0; e < ne && l->n < 24; e++) {
            struct rent *r = &l->e[l->n++];
            strcpy(r->key, key);
            char body[16];
            rand_str(body, 6, rn(2) ? "ab_*" : "abcdefghijklmnopqrstuvwxyz_*", 1);
            snprintf(r->text, sizeof r->text, "%s%s", rn(2) ? "!" : "", body);
        }
    }
}

/* A subject likely to hit: an entry with its stars filled in, cases flipped. */
static void subject_from(const struct rlayer *a, const struct rlayer *b, char *out)
{
    const struct rlayer *l = rn(2) ? a : b;
    if (!l->n || rn(4) == 0) {
        rand_str(out, 8, "abAB_z", 1);
        return;
    }
    const char *t = l->e[rn((unsigned)l->n)].text;
    if (*t == '!')
        t++;
    size_t o = 0;
    for (; *t && o < 20; t++) {
        if (*t == '*') {
            char fill[8];
            rand_str(fill, 3, "abAB_", 0);
            for (char *f = fill; *f && o < 20; f++)
                out[o++] = *f;
        } else {
            out[o++] = (rn(5) == 0 && *t >= 'a' && *t <= 'z') ? (char)(*t - 32) : *t;
        }
    }
    if (!o)
        out[o++] = 'a';
    out[o] = '\0';
}

static unsigned long long case_budget(void)
{
    const char *e = getenv("AS_POLICY_CASES");
    unsigned long long n = e ? strtoull(e, NULL, 10) : 0;
    return n >= 100000 ? n : 100000;
}

static void test_random_tools_and_secrets(void **st)
{
    (void)st;
    unsigned long long cases = case_budget(), before = n_decisions;
    for (unsigned long long c = 0; c < cases; c++) {
        enum pol_dim dim = c % 4 == 3 ? POL_SECRETS : POL_TOOLS;
        struct rlayer m, b;
        char pool[4][16];
        for (int i = 0; i < 4; i++)
            rand_key(pool[i]);
        rand_layer(&m, (const char(*)[16])pool, 4);
        rand_layer(&b, (const char(*)[16])pool, 4);
        const char *servers[4] = {pool[rn(4)], pool[rn(4)], "*", "unlisted"};
        char subj[6][24];
        const char *subjects[6];
        for (int i = 0; i < 6; i++) {
            subject_from(&m, &b, subj[i]);
            subjects[i] = subj[i];
        }
        static const unsigned port0[] = {0};
        check_case(&m, &b, dim, servers, 4, subjects, 6, port0, 1, c % 2 == 0);
    }
    printf("policy invariant: random tools/secrets: %llu cases, %llu decisions\n", cases,
           n_decisions - before);
}

/* ---- prompts and resources ([policy.tools] "prompt:" / "resource:") ---- */

static const char *const pr_prefix[] = {"", "prompt:", "resource:"};
/* Bodies: tool-shaped names (with 'p' and 'r', so a bare "p*" reaches
 * across a prefix), and URI bytes for resources. */
static const char *const pr_alpha[] = {"apr_", "apr_", "a:/%"};

static void rand_pr_layer(struct rlayer *l, const char (*pool)[16], size_t npool)
{
    l->n = 0;
    unsigned nk = rn(5);
    for (unsigned k = 0; k < nk; k++) {
        char key[16];
        if (npool && rn(2))
            strcpy(key, pool[rn((unsigned)npool)]);
        else
            rand_key(key);
        unsigned ne = rn(5);
        for (unsigned e = 0; e < ne && l->n < 24; e++) {
            struct rent *r = &l->e[l->n++];
            strcpy(r->key, key);
            unsigned kind = rn(3);
            char alpha[8], body[8];
            snprintf(alpha, sizeof alpha, "%s*", pr_alpha[kind]);
            rand_str(body, 5, alpha, 1);
            snprintf(r->text, sizeof r->text, "%s%s%s", rn(2) ? "!" : "", pr_prefix[kind], body);
        }
    }
}

/* A valid subject: random, or an entry with its stars filled in. */
static void pr_subject(const struct rlayer *a, const struct rlayer *b, char *out)
{
    const struct rlayer *l = rn(2) ? a : b;
    unsigned kind = rn(3);
    if (!l->n || rn(4) == 0) {
        char body[8];
        rand_str(body, 6, kind == 2 ? "a:/%A" : "apr_A", 1);
        snprintf(out, 24, "%s%s", pr_prefix[kind], body);
        return;
    }
    const char *t = l->e[rn((unsigned)l->n)].text;
    if (*t == '!')
        t++;
    for (kind = 2; kind > 0 && strncmp(t, pr_prefix[kind], strlen(pr_prefix[kind])) != 0; kind--)
        ;
    size_t o = 0;
    for (; *t && o < 20; t++) {
        if (*t != '*') {
            out[o++] = *t;
            continue;
        }
        char fill[4];
        rand_str(fill, 2, kind == 2 ? "a:/%A" : "apr_A", 0);
        for (char *f = fill; *f && o < 20; f++)
            out[o++] = *f;
    }
    if (o == strlen(pr_prefix[kind]))
        out[o++] = 'a'; /* "prompt:" alone names nothing */
    out[o] = '\0';
}

/* The same floor for what [policy.tools] says about prompts and resources:
 * no project entry widens the machine's, whatever prefix it uses. */
static void test_random_prompts_resources(void **st)
{
    (void)st;
    unsigned long long cases = case_budget(), before = n_decisions;
    for (unsigned long long c = 0; c < cases; c++) {
        struct rlayer m, b;
        char pool[4][16];
        for (int i = 0; i < 4; i++)
            rand_key(pool[i]);
        rand_pr_layer(&m, (const char(*)[16])pool, 4);
        rand_pr_layer(&b, (const char(*)[16])pool, 4);
        const char *servers[4] = {pool[rn(4)], pool[rn(4)], "*", "unlisted"};
        char subj[6][24];
        const char *subjects[6];
        for (int i = 0; i < 6; i++) {
            pr_subject(&m, &b, subj[i]);
            subjects[i] = subj[i];
        }
        static const unsigned port0[] = {0};
        check_case(&m, &b, POL_TOOLS, servers, 4, subjects, 6, port0, 1, c % 2 == 0);
    }
    printf("policy invariant: random prompts/resources: %llu cases, %llu decisions\n", cases,
           n_decisions - before);
}

static void rand_host_glob(char *out)
{
    static const char *const labels[] = {"a", "b", "ab", "*", "a*", "*b", "x"};
    unsigned n = 1 + rn(3);
    out[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        if (i)
            strcat(out, ".");
        strcat(out, labels[rn(7)]);
    }
}

static void test_random_egress(void **st)
{
    (void)st;
    unsigned long long cases = case_budget(), before = n_decisions;
    static const char *const pins[] = {"", "", ":1", ":2", ":*"};
    for (unsigned long long c = 0; c < cases; c++) {
        struct rlayer L[2];
        char pool[3][16];
        for (int i = 0; i < 3; i++)
            rand_key(pool[i]);
        for (int w = 0; w < 2; w++) {
            L[w].n = 0;
            unsigned nk = rn(5);
            for (unsigned k = 0; k < nk; k++) {
                const char *key = rn(2) ? pool[rn(3)] : "*";
                unsigned ne = rn(5);
                for (unsigned e = 0; e < ne && L[w].n < 24; e++) {
                    struct rent *r = &L[w].e[L[w].n++];
                    char host[20];
                    rand_host_glob(host);
                    strcpy(r->key, key);
                    snprintf(r->text, sizeof r->text, "%s%s%s", rn(2) ? "!" : "", host,
                             pins[rn(5)]);
                }
            }
        }
        static const char *const sl[] = {"a", "b", "ab", "ba", "x", "A", "Ab", "xa"};
        char sstore[5][24];
        const char *subjects[5];
        for (int i = 0; i < 5; i++) {
            unsigned n = 1 + rn(3);
            sstore[i][0] = '\0';
            for (unsigned k = 0; k < n; k++) {
                if (k)
                    strcat(sstore[i], ".");
                strcat(sstore[i], sl[rn(8)]);
            }
            if (rn(6) == 0)
                strcat(sstore[i], ".");
            subjects[i] = sstore[i];
        }
        const char *servers[3] = {pool[rn(3)], "*", "other"};
        static const unsigned ports[] = {0, 1, 2};
        check_case(&L[0], &L[1], POL_EGRESS, servers, 3, subjects, 5, ports, 3, c % 2 == 0);
    }
    printf("policy invariant: random egress: %llu cases, %llu decisions\n", cases,
           n_decisions - before);
}

/* Insertion order never changes the wire bytes. */
static void test_random_order_independence(void **st)
{
    (void)st;
    unsigned long long cases = case_budget();
    for (unsigned long long c = 0; c < cases; c++) {
        enum pol_dim dim = (enum pol_dim)(c % 3);
        struct rlayer m, b;
        char pool[4][16];
        for (int i = 0; i < 4; i++)
            rand_key(pool[i]);
        if (dim == POL_EGRESS) {
            for (struct rlayer *l = &m; l; l = l == &m ? &b : NULL) {
                l->n = (int)rn(6);
                for (int i = 0; i < l->n; i++) {
                    char host[20];
                    rand_host_glob(host);
                    strcpy(l->e[i].key, rn(2) ? pool[rn(4)] : "*");
                    snprintf(l->e[i].text, sizeof l->e[i].text, "%s%s", rn(2) ? "!" : "", host);
                }
            }
        } else {
            rand_layer(&m, (const char(*)[16])pool, 4);
            rand_layer(&b, (const char(*)[16])pool, 4);
        }
        struct rlayer m2 = m, b2 = b;
        for (struct rlayer *l = &m2; l; l = l == &m2 ? &b2 : NULL)
            for (int i = l->n - 1; i > 0; i--) {
                int j = (int)rn((unsigned)i + 1);
                struct rent t = l->e[i];
                l->e[i] = l->e[j];
                l->e[j] = t;
            }
        struct pol_ruleset *r1 = compile(&m, &b, dim), *r2 = compile(&m2, &b2, dim);
        strbuf j1 = SB_INIT, j2 = SB_INIT;
        pol_ruleset_to_json(r1, &j1);
        pol_ruleset_to_json(r2, &j2);
        if (strcmp(j1.buf, j2.buf) != 0)
            fail_msg("insertion order changed the wire form:\n%s\n%s", j1.buf, j2.buf);
        sb_release(&j1);
        sb_release(&j2);
        pol_ruleset_free(r1);
        pol_ruleset_free(r2);
    }
    printf("policy invariant: order independence: %llu cases\n", cases);
}

/* ---- filesystem --------------------------------------------------------- */

static void rand_fs_glob(char *out)
{
    static const char *const parts[] = {"a", "e", ".e", "*", "**", ".e*", "*.p", "a/**", "e/*"};
    unsigned n = 1 + rn(2);
    out[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        if (i)
            strcat(out, "/");
        strcat(out, parts[rn(9)]);
    }
}

static int ref_fs_denied(char g[][24], int n, const char *const *sp, int nsp)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nsp; k++)
            if (ref_match(g[i], sp[k], 0))
                return 1;
    return 0;
}

static int ref_write(char m[][24], int nm, char b[][24], int nb)
{
    if (!nm && !nb)
        return 0;
    static const char *const spell[] = {"./", "."};
    for (int s = 0; s < 2; s++) {
        int pass = 1;
        if (nm)
            pass &= ref_fs_denied(m, nm, &spell[s], 1);
        if (nb)
            pass &= ref_fs_denied(b, nb, &spell[s], 1);
        if (pass)
            return 1;
    }
    return 0;
}

static struct pol_ruleset *fs_compile(char m[][24], int nm, char mw[][24], int nmw, char b[][24],
                                      int nb, char bw[][24], int nbw)
{
    struct pol_layer *ml = pol_layer_new(POL_MACHINE, NULL), *bl = pol_layer_new(POL_PROJECT, NULL);
    struct as_err err = AS_ERR_INIT;
    for (int i = 0; i < nm; i++)
        assert_int_equal(pol_layer_add(ml, POL_FS_DENY, NULL, m[i], 0, 0, &err), 0);
    for (int i = 0; i < nmw; i++)
        assert_int_equal(pol_layer_add(ml, POL_FS_WRITE, NULL, mw[i], 0, 0, &err), 0);
    for (int i = 0; i < nb; i++)
        assert_int_equal(pol_layer_add(bl, POL_FS_DENY, NULL, b[i], 0, 0, &err), 0);
    for (int i = 0; i < nbw; i++)
        assert_int_equal(pol_layer_add(bl, POL_FS_WRITE, NULL, bw[i], 0, 0, &err), 0);
    struct pol_ruleset *rs = pol_compile(ml, bl, "/h", &err);
    assert_non_null(rs);
    pol_layer_free(ml);
    pol_layer_free(bl);
    return rs;
}

static void test_random_filesystem(void **st)
{
    (void)st;
    static const char *const wpool[] = {"./**",   "./*", "*",  ".",  "./",
                                        "src/**", "**",  "a*", ".*", "./s*"};
    unsigned long long cases = case_budget(), before = n_decisions;
    for (unsigned long long c = 0; c < cases; c++) {
        char md[4][24], bd[4][24], mw[3][24], bw[3][24];
        int nmd = (int)rn(4), nbd = (int)rn(4), nmw = (int)rn(3), nbw = (int)rn(3);
        for (int i = 0; i < nmd; i++)
            rand_fs_glob(md[i]);
        for (int i = 0; i < nbd; i++)
            rand_fs_glob(bd[i]);
        for (int i = 0; i < nmw; i++)
            strcpy(mw[i], wpool[rn(10)]);
        for (int i = 0; i < nbw; i++)
            strcpy(bw[i], wpool[rn(10)]);
        struct pol_ruleset *rs = fs_compile(md, nmd, mw, nmw, bd, nbd, bw, nbw);
        struct pol_ruleset *rm = fs_compile(md, nmd, mw, nmw, NULL, 0, NULL, 0);
        /* write: compiled ≡ reference; machine-only read-only (with a list) stays read-only */
        int w = pol_fs_workspace_writable(rs, NULL), wm = pol_fs_workspace_writable(rm, NULL);
        n_decisions += 2;
        if (w != ref_write(mw, nmw, bw, nbw) || (nmw && !wm && w))
            fail_msg("filesystem write: compiled %d, reference %d, machine-only %d", w,
                     ref_write(mw, nmw, bw, nbw), wm);
        /* deny: union, machine first */
        static const char *const comps[] = {"a", "e", ".e", "x.p", ".env", "src"};
        for (int q = 0; q < 6; q++) {
            char rel[64] = "";
            unsigned depth = 1 + rn(3);
            for (unsigned k = 0; k < depth; k++) {
                if (k)
                    strcat(rel, "/");
                strcat(rel, comps[rn(6)]);
            }
            char abs[80];
            snprintf(abs, sizeof abs, "/w/%s", rel);
            const char *base = strrchr(abs, '/') + 1;
            const char *sp[3] = {abs, rel, base};
            int dm = ref_fs_denied(md, nmd, sp, 3), db = ref_fs_denied(bd, nbd, sp, 3);
            struct pol_decision d, d2;
            int got = pol_fs_allowed(rs, sp, 3, &d), gotm = pol_fs_allowed(rm, sp, 3, &d2);
            n_decisions += 2;
            int want = dm ? 1 : db ? 2 : 0;
            if (by_code(&d) != want || (!gotm && got) || gotm == dm)
                fail_msg("filesystem deny %s: compiled %d, reference %d", rel, by_code(&d), want);
        }
        if (c % 2 == 0) {
            strbuf j1 = SB_INIT, j2 = SB_INIT;
            pol_ruleset_to_json(rs, &j1);
            struct as_err err = AS_ERR_INIT;
            struct pol_ruleset *rt = pol_ruleset_from_json(j1.buf, j1.len, &err);
            assert_non_null(rt);
            pol_ruleset_to_json(rt, &j2);
            assert_string_equal(j1.buf, j2.buf);
            assert_int_equal(pol_fs_workspace_writable(rt, NULL), w);
            sb_release(&j1);
            sb_release(&j2);
            pol_ruleset_free(rt);
        }
        pol_ruleset_free(rs);
        pol_ruleset_free(rm);
    }
    printf("policy invariant: random filesystem: %llu cases, %llu decisions\n", cases,
           n_decisions - before);
}

/* ---- the glob matcher against the DP matcher ---------------------------- */

static void test_glob_matcher_vs_dp(void **st)
{
    (void)st;
    /* exhaustive: patterns over {a,B,*} up to 4, subjects over {a,A,b,B} up to 4, both cases */
    static const char pa[] = "aB*", sa[] = "aAbB";
    unsigned long long n = 0;
    char p[8], s[8];
    for (int pl = 0; pl <= 4; pl++) {
        int ptotal = 1;
        for (int i = 0; i < pl; i++)
            ptotal *= 3;
        for (int pc = 0; pc < ptotal; pc++) {
            int c = pc;
            for (int i = 0; i < pl; i++, c /= 3)
                p[i] = pa[c % 3];
            p[pl] = '\0';
            for (int sl = 0; sl <= 4; sl++) {
                int stotal = 1;
                for (int i = 0; i < sl; i++)
                    stotal *= 4;
                for (int sc = 0; sc < stotal; sc++) {
                    int d = sc;
                    for (int i = 0; i < sl; i++, d /= 4)
                        s[i] = sa[d % 4];
                    s[sl] = '\0';
                    for (int nc = 0; nc < 2; nc++, n++)
                        if (pol_glob_match(p, strlen(p), s, strlen(s), nc) != ref_match(p, s, nc))
                            fail_msg("glob \"%s\" vs \"%s\" nocase=%d", p, s, nc);
                }
            }
        }
    }
    /* random: longer patterns and subjects */
    unsigned long long cases = case_budget();
    for (unsigned long long c = 0; c < cases; c++, n++) {
        char rp[24], rs_[40];
        rand_str(rp, 12, "ab*.*/", 0);
        rand_str(rs_, 30, "abAB./", 0);
        int nc = (int)rn(2);
        if (pol_glob_match(rp, strlen(rp), rs_, strlen(rs_), nc) != ref_match(rp, rs_, nc))
            fail_msg("glob \"%s\" vs \"%s\" nocase=%d", rp, rs_, nc);
    }
    printf("policy invariant: glob matcher vs DP: %llu comparisons\n", n);
}

int main(int argc, char **argv)
{
    const char *e = getenv("AS_POLICY_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 0) : ((uint64_t)time(NULL) ^ ((uint64_t)clock() << 32));
    rng_state = seed;
    printf("policy invariant: seed %llu (replay with AS_POLICY_SEED=%llu %s %s)\n",
           (unsigned long long)seed, (unsigned long long)seed, argv[0], argc > 1 ? argv[1] : "");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glob_matcher_vs_dp),
        cmocka_unit_test(test_exhaustive_tools),
        cmocka_unit_test(test_exhaustive_egress),
        cmocka_unit_test(test_random_tools_and_secrets),
        cmocka_unit_test(test_random_prompts_resources),
        cmocka_unit_test(test_random_egress),
        cmocka_unit_test(test_random_order_independence),
        cmocka_unit_test(test_random_filesystem),
    };
    tu_split(argc, argv);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("policy invariant: %llu decisions checked in total (seed %llu)\n", n_decisions,
           (unsigned long long)seed);
    return rc;
}
