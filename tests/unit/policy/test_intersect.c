/* pol_glob_intersects and pol_fs_may_deny (the host guard's "could this
 * shell glob match a denied name?"): checked against brute force — every
 * string over {a, b, /, .} up to 6 bytes is matched against both the policy
 * glob (pol_glob_match) and the shell query (a separately written
 * recursive matcher), for every pattern pair drawn from a small grammar. */
#include "../testutil.h"

#include "base/err.h"
#include "policy/policy.h"

/* The query grammar: '*' any run without '/', "**" any run, '?' one byte
 * but '/', others literal. */
static int qmatch(const char *q, const char *s)
{
    if (!*q)
        return !*s;
    if (q[0] == '*' && q[1] == '*') {
        for (const char *t = s;; t++) {
            if (qmatch(q + 2, t))
                return 1;
            if (!*t)
                return 0;
        }
    }
    if (q[0] == '*') {
        for (const char *t = s;; t++) {
            if (qmatch(q + 1, t))
                return 1;
            if (!*t || *t == '/')
                return 0;
        }
    }
    if (!*s)
        return 0;
    if (q[0] == '?')
        return *s != '/' && qmatch(q + 1, s + 1);
    return q[0] == *s && qmatch(q + 1, s + 1);
}

static const char alpha[] = "ab/.";

/* Brute force: some string of length <= 6 matches both. */
static int brute(const char *pat, const char *q)
{
    char s[8];
    for (int len = 0; len <= 6; len++) {
        long total = 1;
        for (int i = 0; i < len; i++)
            total *= 4;
        for (long k = 0; k < total; k++) {
            long x = k;
            for (int i = 0; i < len; i++) {
                s[i] = alpha[x % 4];
                x /= 4;
            }
            s[len] = '\0';
            if (pol_glob_match(pat, strlen(pat), s, (size_t)len, 0) && qmatch(q, s))
                return 1;
        }
    }
    return 0;
}

static void gen(unsigned *seed, char *out, int maxlen, const char *atoms)
{
    int len = (int)(rand_r(seed) % (unsigned)(maxlen + 1));
    size_t na = strlen(atoms);
    for (int i = 0; i < len; i++)
        out[i] = atoms[rand_r(seed) % na];
    out[len] = '\0';
}

static void test_against_brute_force(void **state)
{
    (void)state;
    unsigned seed = 20240611;
    printf("seed %u\n", seed);
    int both = 0, neither = 0;
    for (int n = 0; n < 20000; n++) {
        char p[8], q[8];
        gen(&seed, p, 4, "ab/.*");
        gen(&seed, q, 4, "ab/.*?");
        int want = brute(p, q);
        int got = pol_glob_intersects(p, strlen(p), q, strlen(q));
        /* brute force stops at 6 bytes: a miss there with a hit here is
         * only an error when both patterns are short enough to be exact */
        if (want && !got)
            fail_msg("pattern '%s' and query '%s' share a string, intersects says no", p, q);
        if (!want && got && strlen(p) + strlen(q) <= 4)
            fail_msg("pattern '%s' and query '%s' share nothing, intersects says yes", p, q);
        both += want;
        neither += !want;
    }
    assert_true(both > 1000 && neither > 1000);
}

static void test_examples(void **state)
{
    (void)state;
    static const struct {
        const char *pat, *q;
        int want;
    } cases[] = {
        {".env", ".en?", 1},
        {".env", "*env", 1},
        {".env", "*", 1},
        {".env", "*.md", 0},
        {"*.pem", "*.pem", 1},
        {"*.pem", "src/*", 1},
        {"*.pem", "src/*.c", 0},
        {"secrets/*", "secrets*", 0},
        {"secrets/*", "*/db", 1},
        {"secrets/*", "**", 1},
        {"id_rsa", "id_*", 1},
        {".env.*.local", "*.local", 1},
        {".env.*.local", "*.md", 0},
        {"/h/.agentstack/*", "/h/.agentst*", 0},
        {"/h/.agentstack", "/h/.agentst*", 1},
        {"a", "", 0},
        {"*", "", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (pol_glob_intersects(cases[i].pat, strlen(cases[i].pat), cases[i].q,
                                strlen(cases[i].q)) != cases[i].want)
            fail_msg("'%s' vs '%s': want %d", cases[i].pat, cases[i].q, cases[i].want);
}

static void test_may_deny(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *m = pol_layer_new(POL_MACHINE, NULL);
    assert_int_equal(pol_layer_add(m, POL_FS_DENY, NULL, ".env", 0, 0, &err), 0);
    assert_int_equal(pol_layer_add(m, POL_FS_DENY, NULL, "*.pem", 0, 0, &err), 0);
    struct pol_ruleset *rs = pol_compile(m, NULL, "/h", &err);
    assert_non_null(rs);
    const char *deny[] = {"/w/.en?", ".en?"};
    const char *ok[] = {"/w/src/*.c", "src/*.c", "*.c"};
    struct pol_decision d;
    assert_int_equal(pol_fs_may_deny(rs, deny, 2, 0, &d), 0);
    assert_string_equal(d.pattern, ".env");
    assert_int_equal(pol_fs_may_deny(rs, ok, 3, 0, &d), 1);
    /* a directory-scoped glob and a recursive query */
    struct pol_layer *p = pol_layer_new(POL_PROJECT, NULL);
    assert_int_equal(pol_layer_add(p, POL_FS_DENY, NULL, "secrets/**", 0, 0, &err), 0);
    struct pol_ruleset *rs2 = pol_compile(NULL, p, "/h", &err);
    const char *deep[] = {"**/*.ts"};
    const char *named[] = {"secrets/**/*.ts"};
    const char *one[] = {"*/db.txt"};
    assert_int_equal(pol_fs_may_deny(rs2, deep, 1, 0, &d), 0);
    assert_int_equal(pol_fs_may_deny(rs2, deep, 1, POL_MAY_DENY_NAMED, &d), 1);
    assert_int_equal(pol_fs_may_deny(rs2, named, 1, POL_MAY_DENY_NAMED, &d), 0);
    assert_int_equal(pol_fs_may_deny(rs2, one, 1, POL_MAY_DENY_NAMED, &d), 0);
    pol_ruleset_free(rs2);
    pol_layer_free(p);
    pol_ruleset_free(rs);
    pol_layer_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_may_deny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
