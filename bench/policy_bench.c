/*
 * Policy decisions per second (issue 4: at least 1 million/s on one core, so
 * a decision is never the gateway's bottleneck). Builds a machine and a
 * project layer with 1,000 tool rules and 1,000 egress rules spread over 16
 * server keys and "*", compiles them, and times pol_tool / pol_egress on a
 * fixed pseudo-random set of subjects (allowed, denied by a rule, missing an
 * allowlist). The baseline, timed in the same run, is what a naive
 * evaluator would do: fnmatch(3) over all 1,000 patterns for each name.
 * Single thread, best of N rounds (wall clock), the two paths interleaved.
 *
 * Usage: policy_bench [rounds] [ms-per-round]
 * Prints one row per dimension on stdout and notes on stderr.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"

#define NSERVERS 16
#define NRULES 1000
#define NSUBJECTS 4096

static const char *const verbs[] = {"get",   "list",  "create", "update", "delete", "search",
                                    "read",  "write", "run",    "sync",   "fetch",  "close",
                                    "merge", "drop",  "export", "import", "purge",  "rotate"};
static const char *const nouns[] = {"issue",   "repo",    "branch", "file",   "commit", "user",
                                    "team",    "secret",  "token",  "table",  "bucket", "page",
                                    "comment", "release", "label",  "job",    "queue",  "key",
                                    "record",  "dataset", "report", "ticket", "order",  "invoice"};
#define NVERBS (sizeof verbs / sizeof *verbs)
#define NNOUNS (sizeof nouns / sizeof *nouns)

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(uint32_t n)
{
    /* xorshift64*: fixed seed, so every run draws the same subjects */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ULL) >> 33) % n;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One rule as a naive evaluator would hold it: the glob and (egress) a port. */
struct naive_rule {
    char glob[160];
    unsigned port;
    const char *key; /* the server key it was written under */
    int allow_in_project;
};

struct bench {
    const char *dim_name;
    enum pol_dim dim;
    struct pol_layer *layer[2];
    struct naive_rule rules[NRULES];
    size_t nrules, by_layer[2], kinds[6]; /* exact, prefix, infix, deny, "*" key, pattern "*" */
    char server[NSUBJECTS][16];
    char subject[NSUBJECTS][160];
    unsigned port[NSUBJECTS];
};

static char server_names[NSERVERS][16];
static void draw_hit(struct bench *b, size_t i);

static void add(struct bench *b, int layer, const char *key, const char *entry, const char *glob,
                unsigned port, int kind)
{
    struct as_err err = AS_ERR_INIT;
    if (b->nrules >= NRULES)
        return;
    if (pol_layer_add(b->layer[layer], b->dim, key, entry, 1, 1, &err) < 0) {
        char buf[1024];
        fprintf(stderr, "policy_bench: rule %s: %s\n", entry, as_err_str(&err, buf, sizeof buf));
        exit(1);
    }
    snprintf(b->rules[b->nrules].glob, sizeof b->rules[b->nrules].glob, "%s", glob);
    b->rules[b->nrules].port = port;
    b->rules[b->nrules].key = key;
    b->rules[b->nrules].allow_in_project = layer == 1 && entry[0] != '!';
    b->nrules++;
    b->by_layer[layer]++;
    b->kinds[kind]++;
    if (!strcmp(key, "*"))
        b->kinds[4]++;
}

/* Tool rules: the machine layer denies dangerous shapes for every server
 * and narrows a few servers; the project layer allowlists each server's
 * tools (exact names, prefix and infix globs) and denies some more. */
static void build_tools(struct bench *b)
{
    char e[200], g[160];
    int li = 0;
    /* machine "*": allow everything except the denies below */
    add(b, 0, "*", "*", "*", 0, 5);
    for (int i = 0; b->nrules < 120; i++) {
        int k = i % 3;
        if (k == 0)
            snprintf(g, sizeof g, "%s_%s_%d", verbs[4 + i % 3], nouns[i % NNOUNS], i);
        else if (k == 1)
            snprintf(g, sizeof g, "%s%d_*", verbs[13 + i % 5], i);
        else
            snprintf(g, sizeof g, "*_%s_admin%d*", nouns[i % NNOUNS], i);
        snprintf(e, sizeof e, "!%s", g);
        add(b, 0, "*", e, g, 0, 3);
    }
    add(b, 0, "*", "!*_force", "*_force", 0, 3);
    add(b, 0, "*", "!purge_*", "purge_*", 0, 3);
    /* machine per-server: denies only (narrowing one server's tools) */
    for (int i = 0; b->nrules < 400; i++) {
        const char *srv = server_names[i % NSERVERS];
        if (i % 2)
            snprintf(g, sizeof g, "%s_%s", verbs[4 + i % 4], nouns[(i * 7) % NNOUNS]);
        else
            snprintf(g, sizeof g, "*%s_%d*", nouns[(i * 5) % NNOUNS], i);
        snprintf(e, sizeof e, "!%s", g);
        add(b, 0, srv, e, g, 0, 3);
    }
    /* project "*": a few denies for every server */
    for (int i = 0; b->nrules < 450; i++) {
        snprintf(g, sizeof g, "%s_%s_legacy%d", verbs[i % NVERBS], nouns[(i * 3) % NNOUNS], i);
        snprintf(e, sizeof e, "!%s", g);
        add(b, 1, "*", e, g, 0, 3);
    }
    /* project per-server allowlists: exact, get_*-style prefixes, infixes, denies */
    for (int i = 0; b->nrules < NRULES; i++, li++) {
        int s = i % NSERVERS, r = i / NSERVERS;
        const char *srv = server_names[s];
        int kind;
        switch (r % 6) {
        case 0:
        case 1:
            snprintf(g, sizeof g, "%s_%s", verbs[(r + s) % NVERBS], nouns[(r * 3 + s) % NNOUNS]);
            kind = 0;
            break;
        case 2:
            snprintf(g, sizeof g, "%s_*", verbs[(r / 6 + s) % 4]); /* get_*, list_*, … */
            kind = 1;
            break;
        case 3:
            snprintf(g, sizeof g, "*_%s_*", nouns[(r + 2 * s) % NNOUNS]);
            kind = 2;
            break;
        case 4:
            snprintf(g, sizeof g, "%s_%s_v%d", verbs[(r + s) % NVERBS], nouns[r % NNOUNS], r);
            kind = 0;
            break;
        default:
            snprintf(g, sizeof g, "*_%s_%d", nouns[(r + s) % NNOUNS], r);
            kind = 3;
            break;
        }
        if (kind == 3)
            snprintf(e, sizeof e, "!%s", g);
        else
            snprintf(e, sizeof e, "%s", g);
        add(b, 1, srv, e, g, 0, kind);
    }
    for (int i = 0; i < NSUBJECTS; i++) {
        if (rnd(4) == 0) {
            draw_hit(b, (size_t)i);
            continue;
        }
        snprintf(b->server[i], sizeof b->server[i], "%s", server_names[rnd(NSERVERS)]);
        const char *v = verbs[rnd(NVERBS)], *n = nouns[rnd(NNOUNS)];
        switch (rnd(6)) {
        case 0:
            snprintf(b->subject[i], sizeof b->subject[i], "%s_%s", v, n);
            break;
        case 1:
            snprintf(b->subject[i], sizeof b->subject[i], "%s_%s_%u", v, n, rnd(400));
            break;
        case 2:
            snprintf(b->subject[i], sizeof b->subject[i], "%s_%s_force", v, n);
            break;
        case 3: /* a name a rule was written for (hits and denies) */
            snprintf(b->subject[i], sizeof b->subject[i], "%s", b->rules[rnd(NRULES)].glob);
            for (char *p = b->subject[i]; *p; p++)
                if (*p == '*')
                    *p = rnd(2) ? 'x' : '_';
            if (b->subject[i][0] == '_' || !b->subject[i][0])
                b->subject[i][0] = 'q';
            break;
        case 4:
            snprintf(b->subject[i], sizeof b->subject[i], "%s_%s_admin%u_all", v, n, rnd(200));
            break;
        default:
            snprintf(b->subject[i], sizeof b->subject[i], "get_%s", n);
            break;
        }
    }
}

/* Egress rules: the machine layer denies metadata and internal hosts for
 * every server and allows only named providers for some; the project
 * allowlists each server's hosts (exact, *.domain, pinned ports). */
static void build_egress(struct bench *b)
{
    static const char *const tlds[] = {"com", "net", "io", "dev", "org"};
    char e[200], g[160];
    add(b, 0, "*", "!169.254.169.254", "169.254.169.254", 0, 3);
    add(b, 0, "*", "!metadata.google.internal", "metadata.google.internal", 0, 3);
    add(b, 0, "*", "!*.internal", "*.internal", 0, 3);
    add(b, 0, "*", "!*.corp.example.com", "*.corp.example.com", 0, 3);
    for (int i = 0; b->nrules < 150; i++) {
        int k = i % 3;
        if (k == 0)
            snprintf(g, sizeof g, "tracker%d.ads%d.%s", i, i % 7, tlds[i % 5]);
        else if (k == 1)
            snprintf(g, sizeof g, "*.bad%d.%s", i, tlds[i % 5]);
        else
            snprintf(g, sizeof g, "10.%d.%d.%d", i % 200, (i * 7) % 250, (i * 13) % 250);
        snprintf(e, sizeof e, "!%s", g);
        add(b, 0, "*", e, g, 0, 3);
    }
    /* machine per-server: an allowlist of providers for half of the servers */
    for (int i = 0; b->nrules < 400; i++) {
        int s = (i % (NSERVERS / 2)) * 2, r = i / (NSERVERS / 2);
        const char *srv = server_names[s];
        if (r % 3 == 2) {
            snprintf(g, sizeof g, "*.svc%d.%s", (r + s) % 40, tlds[r % 5]);
            add(b, 0, srv, g, g, 0, 1);
        } else if (r % 3 == 1) {
            snprintf(g, sizeof g, "*.cdn%d.net", (r + s) % 30);
            snprintf(e, sizeof e, "%s:*", g);
            add(b, 0, srv, e, g, 0, 1);
        } else {
            snprintf(g, sizeof g, "api.svc%d.%s", (r * 3 + s) % 40, tlds[(r + s) % 5]);
            add(b, 0, srv, g, g, 0, 0);
        }
    }
    /* project "*": denies */
    for (int i = 0; b->nrules < 450; i++) {
        snprintf(g, sizeof g, "old%d.svc%d.%s", i, i % 40, tlds[i % 5]);
        snprintf(e, sizeof e, "!%s", g);
        add(b, 1, "*", e, g, 0, 3);
    }
    /* project per-server allowlists: hosts, wildcards, pinned ports, denies */
    for (int i = 0; b->nrules < NRULES; i++) {
        int s = i % NSERVERS, r = i / NSERVERS;
        const char *srv = server_names[s];
        switch (r % 5) {
        case 0:
            snprintf(g, sizeof g, "api.svc%d.%s", (r + s) % 40, tlds[(r + s) % 5]);
            snprintf(e, sizeof e, "%s:443", g);
            add(b, 1, srv, e, g, 443, 0);
            break;
        case 1:
            snprintf(g, sizeof g, "*.svc%d.%s", (r * 7 + s) % 40, tlds[r % 5]);
            add(b, 1, srv, g, g, 0, 1);
            break;
        case 2:
            snprintf(g, sizeof g, "*.cdn%d.net", (r + s) % 30);
            add(b, 1, srv, g, g, 0, 1);
            break;
        case 3:
            snprintf(g, sizeof g, "uploads-*.svc%d.%s", (r + s) % 40, tlds[s % 5]);
            add(b, 1, srv, g, g, 0, 2);
            break;
        default:
            snprintf(g, sizeof g, "staging.svc%d.%s", (r + s) % 40, tlds[(r + s) % 5]);
            snprintf(e, sizeof e, "!%s", g);
            add(b, 1, srv, e, g, 0, 3);
            break;
        }
    }
    for (int i = 0; i < NSUBJECTS; i++) {
        if (rnd(3) == 0) {
            draw_hit(b, (size_t)i);
            continue;
        }
        snprintf(b->server[i], sizeof b->server[i], "%s", server_names[rnd(NSERVERS)]);
        unsigned svc = rnd(40);
        const char *tld = tlds[rnd(5)];
        static const unsigned ports[] = {443, 443, 80, 8443, 0};
        b->port[i] = ports[rnd(5)];
        switch (rnd(7)) {
        case 0:
            snprintf(b->subject[i], sizeof b->subject[i], "api.svc%u.%s", svc, tld);
            break;
        case 1:
            snprintf(b->subject[i], sizeof b->subject[i], "a%u.cdn%u.net", rnd(9), rnd(30));
            break;
        case 2:
            snprintf(b->subject[i], sizeof b->subject[i], "uploads-%u.svc%u.%s", rnd(9), svc, tld);
            break;
        case 3:
            snprintf(b->subject[i], sizeof b->subject[i], "staging.svc%u.%s", svc, tld);
            break;
        case 4:
            snprintf(b->subject[i], sizeof b->subject[i], "x.bad%u.%s", rnd(150), tld);
            break;
        case 5:
            snprintf(b->subject[i], sizeof b->subject[i], "www.example%u.org", rnd(1000));
            break;
        default:
            snprintf(b->subject[i], sizeof b->subject[i], "%s",
                     rnd(2) ? "169.254.169.254" : "db.internal");
            break;
        }
    }
}

/* A subject the project allowlisted for its server: the glob with each '*'
 * filled in (the machine layer may still refuse it). */
static void draw_hit(struct bench *b, size_t i)
{
    const struct naive_rule *r;
    do
        r = &b->rules[rnd(NRULES)];
    while (!r->allow_in_project || !strcmp(r->key, "*"));
    snprintf(b->server[i], sizeof b->server[i], "%s", r->key);
    char *o = b->subject[i], *end = b->subject[i] + sizeof b->subject[i] - 3;
    for (const char *p = r->glob; *p && o < end; p++) {
        if (*p == '*') {
            *o++ = (char)('a' + rnd(26));
            *o++ = (char)('0' + rnd(10));
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
    b->port[i] = b->dim != POL_EGRESS ? 0 : r->port ? r->port : 443;
}

static volatile size_t sink;

/* Decisions/s over the subject set, one round of about ms milliseconds. */
static double time_policy(const struct bench *b, const struct pol_ruleset *rs, double ms)
{
    size_t done = 0, allowed = 0;
    double t0 = now(), t;
    do {
        for (size_t i = 0; i < NSUBJECTS; i++) {
            struct pol_decision d;
            allowed += (size_t)pol_decide(rs, b->dim, b->server[i], b->subject[i], b->port[i], &d);
        }
        done += NSUBJECTS;
        t = now() - t0;
    } while (t * 1000 < ms);
    sink = allowed;
    return (double)done / t;
}

/* The naive evaluator: fnmatch(3) over every pattern for each name (an
 * allowed name has to be checked against every deny anyway). */
static double time_naive(const struct bench *b, double ms)
{
    size_t done = 0, matches = 0, i = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < 16; k++, i = (i + 1) % NSUBJECTS) {
            for (size_t r = 0; r < b->nrules; r++)
                if (fnmatch(b->rules[r].glob, b->subject[i], 0) == 0 &&
                    (!b->rules[r].port || b->rules[r].port == b->port[i]))
                    matches++;
        }
        done += 16;
        t = now() - t0;
    } while (t * 1000 < ms);
    sink = matches;
    return (double)done / t;
}

static void run(struct bench *b, int rounds, double ms)
{
    struct as_err err = AS_ERR_INIT;
    struct pol_ruleset *rs = pol_compile(b->layer[0], b->layer[1], "/nonexistent", &err);
    if (!rs) {
        char buf[1024];
        fprintf(stderr, "policy_bench: compile: %s\n", as_err_str(&err, buf, sizeof buf));
        exit(1);
    }
    /* the decision mix, untimed: proof the set exercises hits, misses, denies */
    size_t mix[3] = {0}, by[2] = {0};
    for (size_t i = 0; i < NSUBJECTS; i++) {
        struct pol_decision d;
        int ok = pol_decide(rs, b->dim, b->server[i], b->subject[i], b->port[i], &d);
        if (ok)
            mix[0]++;
        else if (d.why == POL_DENY_RULE)
            mix[1]++;
        else if (d.why == POL_NOT_ALLOWLISTED)
            mix[2]++;
        else {
            fprintf(stderr, "policy_bench: unexpected refusal of %s/%s (why %d)\n", b->server[i],
                    b->subject[i], (int)d.why);
            exit(1);
        }
        if (!ok)
            by[d.by == POL_BY_PROJECT]++;
    }
    double best = 0, best_naive = 0;
    char hist[256] = "", *h = hist;
    for (int r = 0; r < rounds; r++) {
        double p = time_policy(b, rs, ms), q = time_naive(b, ms / 2);
        if (p > best)
            best = p;
        if (q > best_naive)
            best_naive = q;
        h += snprintf(h, (size_t)(hist + sizeof hist - h), "%s%.2f", r ? ", " : "", p / 1e6);
    }
    char label[64];
    snprintf(label, sizeof label, "policy %s %zu rules", b->dim_name, b->nrules);
    printf("%-28s %7.2f M decisions/s   (naive fnmatch scan: %.3g M/s)   %.0fx\n", label,
           best / 1e6, best_naive / 1e6, best / best_naive);
    fprintf(stderr,
            "%s: %.0f ns/decision; goal >= 1 M/s on one core: %s; rounds (M/s): [%s]\n"
            "    rules: %zu machine + %zu project; %zu exact, %zu prefix/suffix ('get_*', "
            "'*.domain'), %zu infix, %zu '!' deny, %zu '*'; %zu under key \"*\", the rest over "
            "%d server keys\n"
            "    %d subjects: %.0f%% allowed, %.0f%% denied by a rule, %.0f%% not allowlisted "
            "(%zu refusals by the machine layer, %zu by the project)\n",
            b->dim_name, 1e9 / best, best >= 1e6 ? "met" : "NOT met", hist, b->by_layer[0],
            b->by_layer[1], b->kinds[0], b->kinds[1], b->kinds[2], b->kinds[3], b->kinds[5],
            b->kinds[4], NSERVERS, NSUBJECTS, 100.0 * (double)mix[0] / NSUBJECTS,
            100.0 * (double)mix[1] / NSUBJECTS, 100.0 * (double)mix[2] / NSUBJECTS, by[0], by[1]);
    pol_ruleset_free(rs);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    double ms = argc > 2 ? atof(argv[2]) : 300;
    if (rounds < 1 || ms <= 0) {
        fprintf(stderr, "usage: policy_bench [rounds] [ms-per-round]\n");
        return 2;
    }
    for (int s = 0; s < NSERVERS; s++)
        snprintf(server_names[s], sizeof server_names[s], "srv-%02d", s);
    static struct bench tools = {.dim_name = "tools", .dim = POL_TOOLS};
    static struct bench egress = {.dim_name = "egress", .dim = POL_EGRESS};
    struct bench *all[2] = {&tools, &egress};
    for (int i = 0; i < 2; i++) {
        all[i]->layer[0] = pol_layer_new(POL_MACHINE, "agentstack.toml");
        all[i]->layer[1] = pol_layer_new(POL_PROJECT, "agentstack.toml");
    }
    build_tools(&tools);
    build_egress(&egress);
    for (int i = 0; i < 2; i++) {
        run(all[i], rounds, ms);
        pol_layer_free(all[i]->layer[0]);
        pol_layer_free(all[i]->layer[1]);
    }
    return 0;
}
