/*
 * libFuzzer target for the policy grammar: the glob matcher, the indexed
 * glob sets, host normalization, the egress pattern parser, and the
 * decisions a compiled ruleset built from one fuzzed rule gives.
 *
 * Input: the first line is a pattern, the rest a subject (both raw bytes).
 * Properties checked on every input:
 *  - pol_glob_match agrees with an independent dynamic-programming matcher
 *    (case-sensitive and ASCII-folded), on raw bytes including NULs;
 *  - a glob set answers the lowest id whose glob the reference matches;
 *  - host normalization is idempotent, yields lowercase ASCII of at most
 *    253 bytes with no trailing dot, and a subject that normalizes is one a
 *    literal pattern of the same text matches;
 *  - a parsed egress pattern re-renders (canon) and re-parses to the same
 *    host, port and canon; a literal host pattern is itself a normalized
 *    subject (else the rule could never match its own host);
 *  - a compiled one-rule ruleset denies exactly what the reference says
 *    (tools: case-folded denies, case-sensitive allows; egress: host glob
 *    on the normalized subject plus the port pin), and its wire form
 *    round-trips byte for byte with identical decisions.
 * Nothing may crash, leak or run unbounded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/pol_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c, what)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_policy: property failed: %s\n", what);                           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_INPUT 2048

/* ---- the reference matcher: textbook DP, written apart from glob.c ---- */

static unsigned char low(unsigned char c, int nocase)
{
    return (nocase && c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static int ref_match(const char *p, size_t pn, const char *s, size_t sn, int nocase)
{
    /* row[j]: does p[0..i) match s[0..j)? */
    unsigned char *row = calloc(sn + 1, 1), *next = calloc(sn + 1, 1);
    if (!row || !next)
        abort();
    row[0] = 1;
    for (size_t i = 0; i < pn; i++) {
        unsigned char pc = (unsigned char)p[i];
        if (pc == '*') {
            next[0] = row[0];
            for (size_t j = 1; j <= sn; j++)
                next[j] = row[j] || next[j - 1];
        } else {
            next[0] = 0;
            for (size_t j = 1; j <= sn; j++)
                next[j] = row[j - 1] && low(pc, nocase) == low((unsigned char)s[j - 1], nocase);
        }
        unsigned char *t = row;
        row = next;
        next = t;
    }
    int r = row[sn];
    free(row);
    free(next);
    return r;
}

static size_t star_runs(const char *s, size_t n)
{
    size_t runs = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '*' && (i == 0 || s[i - 1] != '*'))
            runs++;
    return runs;
}

/* ---- glob matcher and glob sets ---------------------------------------- */

static void check_glob(const char *pat, size_t pn, const char *s, size_t sn)
{
    for (int nc = 0; nc < 2; nc++)
        CHECK(pol_glob_match(pat, pn, s, sn, nc) == ref_match(pat, pn, s, sn, nc),
              nc ? "pol_glob_match (nocase) disagrees with the reference"
                 : "pol_glob_match disagrees with the reference");
}

static void check_globset(const char *pat, const char *s, size_t sn)
{
    size_t pn = strlen(pat);
    if (pn == 0 || pn > POL_MAX_PATTERN - 2)
        return;
    /* the pattern and shapes that land in each index of a set */
    char *v[5];
    v[0] = strdup(pat);
    v[1] = malloc(pn + 2);
    v[2] = malloc(pn + 2);
    v[3] = malloc(pn + 3);
    v[4] = strdup("*");
    if (!v[0] || !v[1] || !v[2] || !v[3] || !v[4])
        abort();
    snprintf(v[1], pn + 2, "%s*", pat);
    snprintf(v[2], pn + 2, "*%s", pat);
    snprintf(v[3], pn + 3, "*%s*", pat);
    for (size_t with_all = 0; with_all < 2; with_all++) {
        size_t n = 4 + with_all;
        struct pol_item items[5];
        for (size_t i = 0; i < n; i++)
            items[i] = (struct pol_item){v[i], v[i], 0, 0};
        for (int nc = 0; nc < 2; nc++) {
            struct pol_arena a = {0};
            struct pol_globset gs;
            pol_globset_build(&gs, &a, items, n, nc, POL_MAX_PATTERN);
            int32_t got = pol_globset_find(&gs, s, sn, 0, 0);
            int32_t want = -1;
            for (uint32_t i = 0; i < gs.n && want < 0; i++) {
                const struct pol_glob *g = &gs.g[i];
                if (g->malformed)
                    continue;
                if (ref_match(g->pat, strlen(g->pat), s, sn, nc))
                    want = (int32_t)i;
            }
            CHECK(got == want, "glob set: not the lowest matching id");
            int32_t any = pol_globset_find(&gs, s, sn, 0, 1);
            CHECK((any < 0) == (want < 0), "glob set: first_only disagrees on membership");
            if (any >= 0)
                CHECK(ref_match(gs.g[any].pat, strlen(gs.g[any].pat), s, sn, nc),
                      "glob set: first_only answered a glob that does not match");
            pol_globset_release(&gs);
            pol_arena_free(&a);
        }
    }
    for (int i = 0; i < 5; i++)
        free(v[i]);
}

/* ---- hosts ---------------------------------------------------------------- */

static void check_host(const char *h, size_t n)
{
    char out[POL_HOST_MAX + 1], again[POL_HOST_MAX + 1];
    const char *why = NULL;
    if (pol_host_normalize(h, n, out, &why) < 0) {
        CHECK(why && *why, "host refused without a reason");
        return;
    }
    size_t on = strlen(out);
    CHECK(on > 0 && on <= POL_HOST_MAX, "normalized host length");
    CHECK(out[on - 1] != '.', "normalized host keeps a trailing dot");
    for (size_t i = 0; i < on; i++) {
        unsigned char c = (unsigned char)out[i];
        CHECK(c > 0x20 && c < 0x7f && !(c >= 'A' && c <= 'Z'),
              "normalized host is not lowercase printable ASCII");
    }
    CHECK(pol_host_normalize(out, on, again, &why) == 0, "normalized host is refused");
    CHECK(strcmp(out, again) == 0, "host normalization is not idempotent");
}

/* ---- egress patterns -------------------------------------------------------- */

struct parsed {
    char host[POL_HOST_MAX + 1];
    char canon[POL_MAX_PATTERN + 1];
    uint16_t port;
};

static int egress_parse(const char *e, struct parsed *p)
{
    const char *why = NULL;
    memset(p, 0, sizeof *p);
    int rc = pol_egress_parse(e, p->host, &p->port, p->canon, &why);
    if (rc < 0)
        CHECK(why && *why, "egress pattern refused without a reason");
    return rc;
}

static void check_egress(const char *e)
{
    struct parsed a, b;
    if (egress_parse(e, &a) < 0)
        return;
    CHECK(a.host[0] != '\0', "egress pattern parsed to an empty host");
    CHECK(egress_parse(a.canon, &b) == 0, "the canonical egress pattern does not re-parse");
    CHECK(strcmp(a.host, b.host) == 0, "re-parsed egress host differs");
    CHECK(a.port == b.port, "re-parsed egress port differs");
    CHECK(strcmp(a.canon, b.canon) == 0, "re-rendered egress pattern differs");
    if (!strchr(a.host, '*')) {
        char n[POL_HOST_MAX + 1];
        const char *why;
        CHECK(pol_host_normalize(a.host, strlen(a.host), n, &why) == 0,
              "a literal egress host is not a valid subject host");
        CHECK(strcmp(n, a.host) == 0, "a literal egress host is not in normalized form");
    }
}

/* ---- compiled decisions ---------------------------------------------------- */

static struct pol_ruleset *one_rule(enum pol_dim dim, const char *entry)
{
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *l = pol_layer_new(POL_MACHINE, "/fuzz/agentstack.toml");
    struct pol_ruleset *rs = NULL;
    if (pol_layer_add(l, dim, "*", entry, 1, 1, &err) == 0) {
        rs = pol_compile(l, NULL, "/home/fuzz", &err);
        CHECK(rs != NULL, "a layer that validated does not compile");
    }
    pol_layer_free(l);
    return rs;
}

/* The wire form must round-trip exactly and decide the same. */
static struct pol_ruleset *roundtrip(const struct pol_ruleset *rs)
{
    strbuf j1 = SB_INIT, j2 = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    pol_ruleset_to_json(rs, &j1);
    struct pol_ruleset *back = pol_ruleset_from_json(j1.buf, j1.len, &err);
    CHECK(back != NULL, "the wire form of a compiled ruleset does not load");
    pol_ruleset_to_json(back, &j2);
    CHECK(j1.len == j2.len && memcmp(j1.buf, j2.buf, j1.len) == 0,
          "the wire form does not round-trip byte for byte");
    sb_release(&j1);
    sb_release(&j2);
    return back;
}

static void check_tools(const char *pat, const char *subj)
{
    size_t pn = strlen(pat), sn = strlen(subj);
    if (pn + 2 > POL_MAX_PATTERN)
        return;
    char entry[POL_MAX_PATTERN + 2];
    snprintf(entry, sizeof entry, "!%s", pat);
    /* a subject is a tool name, or prompt:<name> / resource:<uri>, and a
     * glob matches it whole, prefix included (docs/policy.md, "Prompts and
     * resources") */
    int name_ok = pol_tool_subject_ok(subj, sn);
    /* a leading '!' would turn the allow variant into a deny */
    for (int deny = pat[0] == '!'; deny < 2; deny++) {
        struct pol_ruleset *rs = one_rule(POL_TOOLS, deny ? entry : pat);
        if (!rs)
            continue;
        struct pol_ruleset *back = roundtrip(rs);
        int hit = ref_match(pat, pn, subj, sn, deny);
        int want = name_ok && (deny ? !hit : hit);
        struct pol_decision d;
        CHECK(pol_tool(rs, "srv", subj, &d) == want, "tool decision disagrees with the rule");
        CHECK(pol_tool(back, "srv", subj, NULL) == want, "reloaded ruleset decides differently");
        if (!want && name_ok)
            CHECK(d.by == POL_BY_MACHINE, "a rule's refusal is not attributed to its layer");
        pol_ruleset_free(back);
        pol_ruleset_free(rs);
    }
}

static void check_egress_decision(const char *pat, const char *subj, unsigned qport)
{
    struct parsed p;
    if (strlen(pat) + 2 > POL_MAX_PATTERN || egress_parse(pat, &p) < 0)
        return;
    char entry[POL_MAX_PATTERN + 2];
    snprintf(entry, sizeof entry, "!%s", pat);
    char host[POL_HOST_MAX + 1];
    const char *why;
    int subj_ok = pol_host_normalize(subj, strlen(subj), host, &why) == 0;
    int hit = subj_ok && ref_match(p.host, strlen(p.host), host, strlen(host), 0) &&
              (p.port == 0 || qport == 0 || p.port == qport);
    for (int deny = pat[0] == '!'; deny < 2; deny++) {
        struct pol_ruleset *rs = one_rule(POL_EGRESS, deny ? entry : pat);
        CHECK(rs != NULL, "a parsed egress pattern is refused by the layer");
        struct pol_ruleset *back = roundtrip(rs);
        int want = subj_ok && (deny ? !hit : hit);
        CHECK(pol_egress(rs, "srv", subj, qport, NULL) == want,
              "egress decision disagrees with the rule");
        CHECK(pol_egress(back, "srv", subj, qport, NULL) == want,
              "reloaded ruleset decides egress differently");
        pol_ruleset_free(back);
        pol_ruleset_free(rs);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    const char *in = (const char *)data;
    const char *nl = memchr(in, '\n', size);
    size_t pn = nl ? (size_t)(nl - in) : size;
    const char *s = nl ? nl + 1 : in + size;
    size_t sn = nl ? size - pn - 1 : 0;

    /* raw bytes: the matcher takes lengths, NULs included */
    if (star_runs(in, pn) <= 64)
        check_glob(in, pn, s, sn);
    check_host(in, size);
    check_host(s, sn);

    /* C strings for the APIs that take them */
    char *pat = strndup(in, pn), *subj = strndup(s, sn);
    if (!pat || !subj)
        abort();
    check_egress(pat);
    check_host(pat, strlen(pat));
    if (strlen(pat) == pn && strlen(subj) == sn) {
        check_globset(pat, subj, sn);
        check_tools(pat, subj);
        check_egress_decision(pat, subj, 0);
        check_egress_decision(pat, subj, 443);
    }
    free(pat);
    free(subj);
    return 0;
}
