/* literal_secret — see literal_secret.h. */
#include "bundle/literal_secret.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xalloc.h"

#define ENTROPY_MIN_LEN 20
#define ENTROPY2_MIN_LEN 32 /* two character classes need more length */
#define HEX_MIN_LEN 32
#define ENTROPY_MIN_BITS 3.5
/* Random tokens switch character class (upper/lower/digit) on most bytes;
 * camelCase identifiers and version strings rarely do. */
#define ENTROPY_MIN_SWITCH_RATE 0.3
/* A credential a person typed (hunter2hunter2) is at least this long. */
#define CREDENTIAL_MIN_LEN 8

const char *lsec_why_text(enum lsec_why w)
{
    switch (w) {
    case LSEC_KEY_NAME:
        return "key name";
    case LSEC_PREFIX:
        return "token prefix";
    case LSEC_ENTROPY:
        return "high entropy";
    case LSEC_USERINFO:
        return "URL password";
    case LSEC_NONE:
        break;
    }
    return "none";
}

/* ---- key names ------------------------------------------------------------ */

enum tier { TIER_NONE, TIER_WEAK, TIER_STRONG };

/* The words of a key: lower-cased, split at every byte that is not a
 * letter or digit and where a lower-case letter meets an upper-case one
 * ("apiKey" → api key, "DB_PASS" → db pass). */
static bool has_word(const char *key, size_t n, const char *const *words)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && !isalnum((unsigned char)key[i]))
            i++;
        size_t s = i;
        while (i < n && isalnum((unsigned char)key[i])) {
            i++;
            if (i < n && islower((unsigned char)key[i - 1]) && isupper((unsigned char)key[i]))
                break;
        }
        size_t len = i - s;
        for (size_t k = 0; len && words[k]; k++)
            if (strlen(words[k]) == len && strncasecmp(key + s, words[k], len) == 0)
                return true;
    }
    return false;
}

/* Strong: any literal under such a name is a secret.
 * Weak: the name is often a credential, sometimes a setting ("--auth=oauth"):
 * only a value that looks like a credential is one. */
static enum tier key_tier(const char *key)
{
    static const char *const strong_parts[] = {
        "authorization", "token",     "secret",     "api-key",    "apikey",     "api_key",
        "password",      "passwd",    "bearer",     "credential", "privatekey", "private_key",
        "private-key",   "accesskey", "access_key", NULL};
    static const char *const strong_words[] = {"key", NULL};
    static const char *const weak_words[] = {"pass", "pwd", "pw",  "pat",        "cookie",
                                             "jwt",  "psk", "otp", "passphrase", NULL};
    if (!key)
        return TIER_NONE;
    size_t n = strlen(key);
    char *low = xmalloc(n + 1);
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)key[i]);
    enum tier t = TIER_NONE;
    for (size_t i = 0; strong_parts[i] && t == TIER_NONE; i++)
        if (strstr(low, strong_parts[i]))
            t = TIER_STRONG;
    free(low);
    if (t == TIER_NONE && has_word(key, n, strong_words))
        t = TIER_STRONG;
    if (t == TIER_NONE && has_word(key, n, weak_words))
        t = TIER_WEAK;
    return t;
}

/* Names whose values are digests or revisions, never credentials: the
 * shape rules leave them alone (a checksum is 64 hex by design). */
static bool key_holds_digest(const char *key)
{
    static const char *const words[] = {"checksum", "digest",   "sha", "sha1",   "sha256",
                                        "sha512",   "hash",     "rev", "commit", "integrity",
                                        "etag",     "revision", "oid", NULL};
    return key && has_word(key, strlen(key), words);
}

bool lsec_key_secretish(const char *key)
{
    return key_tier(key) != TIER_NONE;
}

/* ---- values ------------------------------------------------------------- */

/* The value with every valid ${NAME} span replaced by one space; *refs =
 * how many there were. */
static char *strip_refs(const char *s, size_t *refs)
{
    strbuf out = SB_INIT;
    size_t n = strlen(s), k = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '$' && i + 1 < n && s[i + 1] == '{') {
            size_t j = i + 2;
            bool ok = j < n && (isalpha((unsigned char)s[j]) || s[j] == '_');
            while (ok && j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
                j++;
            if (ok && j < n && s[j] == '}') {
                sb_addc(&out, ' ');
                i = j + 1;
                k++;
                continue;
            }
        }
        sb_addc(&out, s[i]);
        i++;
    }
    if (refs)
        *refs = k;
    return sb_detach(&out, NULL);
}

static bool path_like(const char *s)
{
    while (*s == ' ')
        s++;
    return s[0] == '/' || strncmp(s, "./", 2) == 0 || strncmp(s, "../", 3) == 0 ||
           strncmp(s, "~/", 2) == 0;
}

/* Authentication scheme words that frame a credential without being one. */
static bool scheme_word(const char *s, size_t n)
{
    static const char *const words[] = {"bearer", "basic", "token",     "digest", "bot",
                                        "apikey", "key",   "negotiate", NULL};
    for (size_t k = 0; words[k]; k++)
        if (strlen(words[k]) == n && strncasecmp(s, words[k], n) == 0)
            return true;
    return false;
}

/* Letters and digits outside ${NAME} spans and scheme words. */
static size_t literal_chars(const char *stripped)
{
    size_t n = 0;
    for (const char *p = stripped; *p;) {
        if (!isalnum((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *e = p;
        while (isalnum((unsigned char)*e))
            e++;
        if (!scheme_word(p, (size_t)(e - p)))
            n += (size_t)(e - p);
        p = e;
    }
    return n;
}

bool lsec_value_literal(const char *value)
{
    if (!value || !value[0])
        return false;
    size_t refs;
    char *s = strip_refs(value, &refs);
    /* Without a ${REF}, any text is literal. With
     * one, text beside it is: "Bearer ${X}9f86d0…" carries a secret, while
     * "Bearer ${X}" and "${A}-${B}" carry none. */
    bool lit = refs == 0 ? true : literal_chars(s) >= 4;
    free(s);
    return lit;
}

/* A placeholder people write where a credential goes. */
static bool placeholder(const char *v, size_t n)
{
    if (!n || strchr("<{[$%`*", v[0]))
        return true;
    bool same = true, envname = isupper((unsigned char)v[0]) != 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        same = same && c == (unsigned char)v[0];
        envname = envname && (isupper(c) || isdigit(c) || c == '_');
    }
    if (same || envname) /* "xxxxxxxx", "********", "YOUR_API_KEY" */
        return true;
    static const char *const words[] = {"your",    "here", "placeholder", "changeme", "redacted",
                                        "example", "xxxx", "...",         NULL};
    for (size_t k = 0; words[k]; k++) {
        size_t l = strlen(words[k]);
        for (size_t i = 0; i + l <= n; i++)
            if (strncasecmp(v + i, words[k], l) == 0)
                return true;
    }
    return false;
}

/* A value that reads like a typed credential: one word of at least eight
 * bytes, not a placeholder, path or URL, with a digit, a symbol or both
 * cases (hunter2hunter2, S3cr3t-Pa55). */
static bool credential_looking(const char *v, size_t n)
{
    if (n < CREDENTIAL_MIN_LEN || placeholder(v, n))
        return false;
    char *s = xstrndup(v, n);
    bool path = path_like(s) || strstr(s, "://") != NULL;
    free(s);
    if (path)
        return false;
    bool digit = false, sym = false, up = false, lo = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (isspace(c))
            return false;
        digit |= isdigit(c) != 0;
        up |= isupper(c) != 0;
        lo |= islower(c) != 0;
        sym |= ispunct(c) != 0;
    }
    return digit || sym || (up && lo);
}

/* ---- shapes ---------------------------------------------------------------- */

/* log2 for x >= 1 without libm (the module links no libm): x = m * 2^e with
 * m in [1, 2), ln m = 2 atanh((m-1)/(m+1)) by its series. */
static double log2_pos(double x)
{
    double e = 0;
    while (x >= 2) {
        x /= 2;
        e += 1;
    }
    double y = (x - 1) / (x + 1), y2 = y * y, term = y, sum = 0;
    for (int k = 1; k < 40; k += 2) {
        sum += term / k;
        term *= y2;
    }
    return e + 2 * sum / 0.69314718055994530942;
}

static bool tokch(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '-';
}

struct prefix {
    const char *p;
    size_t min_after; /* token bytes required after the prefix */
};

static const struct prefix prefixes[] = {
    {"ghp_", 20},        {"gho_", 20},    {"ghu_", 20},  {"ghs_", 20},     {"ghr_", 20},
    {"github_pat_", 20}, {"glpat-", 20},  {"sk-", 20},   {"sk_live_", 16}, {"sk_test_", 16},
    {"rk_live_", 16},    {"xoxb-", 10},   {"xoxp-", 10}, {"xoxa-", 10},    {"xoxr-", 10},
    {"xoxs-", 10},       {"xapp-", 10},   {"AIza", 30},  {"npm_", 30},     {"pypi-", 30},
    {"hf_", 30},         {"dop_v1_", 30},
};

static size_t run_len(const char *s, size_t max)
{
    size_t k = 0;
    while (k < max && tokch((unsigned char)s[k]))
        k++;
    return k;
}

/* The length of the JWT at s (eyJ….….), or 0. */
static size_t jwt_at(const char *s, size_t n)
{
    if (n < 3 || strncmp(s, "eyJ", 3) != 0)
        return 0;
    size_t a = run_len(s, n);
    if (a < 10 || a >= n || s[a] != '.')
        return 0;
    size_t b = run_len(s + a + 1, n - a - 1);
    if (b < 10)
        return 0;
    size_t e = a + 1 + b;
    if (e < n && s[e] == '.')
        e += 1 + run_len(s + e + 1, n - e - 1);
    return e;
}

static size_t aws_at(const char *s, size_t n)
{
    if (n < 20 || (strncmp(s, "AKIA", 4) != 0 && strncmp(s, "ASIA", 4) != 0))
        return 0;
    for (size_t k = 4; k < 20; k++)
        if (!(isupper((unsigned char)s[k]) || isdigit((unsigned char)s[k])))
            return 0;
    return n == 20 || !isalnum((unsigned char)s[20]) ? 20 : 0;
}

/* The end of a well-known token starting at s[i] (i at a word start), or 0. */
static size_t prefix_token_at(const char *s, size_t n, size_t i)
{
    size_t k;
    if ((k = jwt_at(s + i, n - i)) || (k = aws_at(s + i, n - i)))
        return i + k;
    for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
        size_t pl = strlen(prefixes[p].p);
        if (n - i > pl && strncmp(s + i, prefixes[p].p, pl) == 0) {
            size_t r = run_len(s + i + pl, n - i - pl);
            if (r >= prefixes[p].min_after)
                return i + pl + r;
        }
    }
    return 0;
}

static bool pem_private_key(const char *s)
{
    return strstr(s, "-----BEGIN") && strstr(s, "PRIVATE KEY");
}

static bool prefix_scan(const char *s)
{
    if (pem_private_key(s))
        return true;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if ((i == 0 || !isalnum((unsigned char)s[i - 1])) && prefix_token_at(s, n, i))
            return true;
    return false;
}

static int char_class(unsigned char c)
{
    return isupper(c) ? 1 : islower(c) ? 2 : isdigit(c) ? 3 : 4;
}

/* 8-4-4-4-12 hex: an identifier, not a credential. */
static bool uuid(const char *t, size_t n)
{
    static const size_t groups[] = {8, 4, 4, 4, 12};
    if (n != 36)
        return false;
    size_t i = 0;
    for (size_t g = 0; g < 5; g++) {
        for (size_t k = 0; k < groups[g]; k++, i++)
            if (!isxdigit((unsigned char)t[i]))
                return false;
        if (g < 4 && t[i++] != '-')
            return false;
    }
    return true;
}

static bool all_hex(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)t[i]))
            return false;
    return true;
}

/* A camelCase / PascalCase / snake_case identifier (getUserProfileById2024,
 * MyComponent2024Helper): words of three letters or more on average, each
 * capitalised at most at its start, and at most two groups of digits. A
 * random token switches case and digits far too often to be one. */
static bool identifier_like(const char *t, size_t n)
{
    size_t segs = 0, letters = 0, digit_groups = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)t[i];
        if (isdigit(c)) {
            while (i < n && isdigit((unsigned char)t[i]))
                i++;
            digit_groups++;
        } else if (isalpha(c)) {
            size_t up = 0, lo = 0;
            while (i < n && isupper((unsigned char)t[i]))
                up++, i++;
            while (i < n && islower((unsigned char)t[i]))
                lo++, i++;
            if ((up > 1 && lo > 0) || up > 4)
                return false;
            segs++;
            letters += up + lo;
        } else {
            i++;
        }
    }
    return segs >= 2 && digit_groups <= 2 && letters >= 3 * segs;
}

/* One candidate token: long, mixed classes, high entropy, and switching
 * class often (random, not an identifier). Three classes (upper, lower,
 * digit) from 20 bytes; two from 32, pure hex excepted (a digest or a
 * commit: hex_token decides where it is a secret). */
static bool token_random(const char *t, size_t n)
{
    if (n < ENTROPY_MIN_LEN || uuid(t, n) || identifier_like(t, n))
        return false;
    unsigned counts[256] = {0};
    bool up = false, lo = false, dg = false;
    size_t switches = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        counts[c]++;
        up |= isupper(c) != 0;
        lo |= islower(c) != 0;
        dg |= isdigit(c) != 0;
        if (i && char_class(c) != char_class((unsigned char)t[i - 1]))
            switches++;
    }
    int classes = up + lo + dg;
    if (classes < 2 || (classes == 2 && (n < ENTROPY2_MIN_LEN || all_hex(t, n))))
        return false;
    if ((double)switches / (double)n < ENTROPY_MIN_SWITCH_RATE)
        return false;
    /* H = log2 n - (1/n) sum c log2 c */
    double h = log2_pos((double)n), acc = 0;
    for (size_t c = 0; c < 256; c++)
        if (counts[c])
            acc += (double)counts[c] * log2_pos((double)counts[c]);
    h -= acc / (double)n;
    return h >= ENTROPY_MIN_BITS;
}

static bool entropy_ch(unsigned char c)
{
    return isalnum(c) || c == '+' || c == '=' || c == '_' || c == '-' || c == '/';
}

/* A run that is a path ("host/v1/Rq7Tz9…", "src/MyProjects2024"), judged
 * by its components: one with an all-lower-case word between slashes. A
 * base64 secret with '/' in it has none. (A file system path is not judged
 * at all: path_start.) */
static bool run_is_path(const char *t, size_t n)
{
    if (!memchr(t, '/', n))
        return false;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        bool lower = true;
        while (e < n && t[e] != '/') {
            lower = lower && (islower((unsigned char)t[e]) || t[e] == '-' || t[e] == '_');
            e++;
        }
        if (lower && e - i >= 2)
            return true;
        i = e + 1;
    }
    return false;
}

/* A run that is a digest or an encoded payload by what it starts with or
 * follows: "sha256-…" / "sha512-…" (subresource integrity), "base64,…" (a
 * data URI). */
static bool digest_run(const char *s, size_t i)
{
    static const char *const lead[] = {"sha1-", "sha256-", "sha384-", "sha512-", NULL};
    for (size_t k = 0; lead[k]; k++)
        if (strncmp(s + i, lead[k], strlen(lead[k])) == 0)
            return true;
    return i >= 7 && strncmp(s + i - 7, "base64,", 7) == 0;
}

/* Calls fn on each random-looking token of s[0..n): paths are judged
 * component by component. Returns true on the first one (mark: every one,
 * with fn marking it). */
typedef void (*span_fn)(void *ctx, size_t a, size_t b);

/* A '/' at i that starts a file system path: at the start, after a blank,
 * a quote, '=', ',', '(' or ';', or after ':' unless it starts "://" (a
 * URL's path is judged by its components). */
static bool path_start(const char *s, size_t n, size_t i)
{
    if (s[i] != '/')
        return false;
    if (i == 0 || strchr(" \t\"'=,(;", s[i - 1]))
        return true;
    return s[i - 1] == ':' && !(i + 1 < n && s[i + 1] == '/');
}

static bool entropy_spans(const char *s, size_t n, span_fn fn, void *ctx)
{
    bool any = false;
    for (size_t i = 0; i < n;) {
        if (path_start(s, n, i)) {
            /* temp and cache directories have random names, and a
             * credential is never a path: the whole path is passed over */
            while (i < n && !isspace((unsigned char)s[i]) && s[i] != '"' && s[i] != '\'')
                i++;
            continue;
        }
        if (!entropy_ch((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && entropy_ch((unsigned char)s[j]) && !(j > i && path_start(s, n, j)))
            j++;
        if (digest_run(s, i)) {
            /* "sha512-<base64>" (an integrity string), a data URI's payload */
        } else if (run_is_path(s + i, j - i)) {
            for (size_t a = i; a < j;) {
                size_t b = a;
                while (b < j && s[b] != '/')
                    b++;
                if (token_random(s + a, b - a)) {
                    any = true;
                    if (!fn)
                        return true;
                    fn(ctx, a, b);
                }
                a = b + 1;
            }
        } else if (token_random(s + i, j - i)) {
            any = true;
            if (!fn)
                return true;
            fn(ctx, i, j);
        }
        i = j;
    }
    return any;
}

/* A run of at least 32 hex digits holding letters and digits that is a
 * word of its own, where nothing says it is a digest or a commit: after
 * "sha256:", "sha512-", "#", "@" or a git path word (/commit/, /blob/, …)
 * it is one. */
static bool hex_context_digest(const char *s, size_t a)
{
    static const char *const before[] = {
        "sha1:",   "sha256:", "sha384:",   "sha512:", "md5:",     "sha1-",     "sha256-",
        "sha384-", "sha512-", "#",         "@",       "/commit/", "/commits/", "/blob/",
        "/tree/",  "/raw/",   "/archive/", "sha=",    NULL};
    for (size_t k = 0; before[k]; k++) {
        size_t l = strlen(before[k]);
        if (a >= l && strncasecmp(s + a - l, before[k], l) == 0)
            return true;
    }
    return false;
}

static bool hex_spans(const char *s, size_t n, span_fn fn, void *ctx)
{
    bool any = false;
    for (size_t i = 0; i < n;) {
        if (!isalnum((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        bool digit = false, alpha = false, hex = true;
        while (j < n && isalnum((unsigned char)s[j])) {
            unsigned char c = (unsigned char)s[j];
            hex = hex && isxdigit(c);
            digit |= isdigit(c) != 0;
            alpha |= isalpha(c) != 0;
            j++;
        }
        bool glued = (i > 0 && (s[i - 1] == '-' || s[i - 1] == '_')) ||
                     (j < n && (s[j] == '-' || s[j] == '_'));
        if (hex && digit && alpha && j - i >= HEX_MIN_LEN && !hex_context_digest(s, i) &&
            !(glued && i >= 9 && uuid(s + i - 9, 36))) {
            any = true;
            if (!fn)
                return true;
            fn(ctx, i, j);
        }
        i = j;
    }
    return any;
}

enum lsec_why lsec_value_shape(const char *value)
{
    if (!value || !value[0])
        return LSEC_NONE;
    char *s = strip_refs(value, NULL);
    enum lsec_why w = prefix_scan(s)                            ? LSEC_PREFIX
                      : entropy_spans(s, strlen(s), NULL, NULL) ? LSEC_ENTROPY
                                                                : LSEC_NONE;
    free(s);
    return w;
}

/* lsec_value_shape, plus bare hex tokens: for values that are sent to a
 * server as they are (headers, environment, URL query and path), where a
 * 64-hex value is a key far more often than a digest. */
static enum lsec_why value_shape_strict(const char *value)
{
    enum lsec_why w = lsec_value_shape(value);
    if (w != LSEC_NONE || !value)
        return w;
    char *s = strip_refs(value, NULL);
    bool hex = hex_spans(s, strlen(s), NULL, NULL);
    free(s);
    return hex ? LSEC_ENTROPY : LSEC_NONE;
}

bool lsec_value_has_prefix_token(const char *value)
{
    if (!value || !value[0])
        return false;
    char *s = strip_refs(value, NULL);
    bool r = prefix_scan(s);
    free(s);
    return r;
}

/* The value with refs stripped, leading scheme words ("Bearer ") and
 * surrounding blanks dropped: what a weak name's value is judged by. */
static bool credential_value(const char *value)
{
    char *s = strip_refs(value, NULL);
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *e = p;
        while (isalnum((unsigned char)*e))
            e++;
        if (e > p && (*e == ' ' || *e == '\t') && scheme_word(p, (size_t)(e - p)))
            p = e;
        else
            break;
    }
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    bool r = credential_looking(p, n);
    free(s);
    return r;
}

/* The key-name rules, then the shapes (strict: for values sent as written). */
static enum lsec_why classify(const char *key, const char *value, bool strict)
{
    if (!value || !value[0])
        return LSEC_NONE;
    enum tier t = key_tier(key);
    const char *close = strncmp(value, "${", 2) == 0 ? strchr(value, '}') : NULL;
    if (t == TIER_STRONG && lsec_value_literal(value) && !path_like(value) &&
        !(close && path_like(close + 1))) /* "${HOME}/tokens/gh" names a file */
        return LSEC_KEY_NAME;
    if (t == TIER_WEAK && credential_value(value))
        return LSEC_KEY_NAME;
    if (key_holds_digest(key))
        return prefix_scan(value) ? LSEC_PREFIX : LSEC_NONE;
    return strict ? value_shape_strict(value) : lsec_value_shape(value);
}

enum lsec_why lsec_classify(const char *key, const char *value)
{
    return classify(key, value, true);
}

/* ---- findings ------------------------------------------------------------ */

void lsec_findings_free(lsec_findings *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->v[i].key);
        free(f->v[i].where);
    }
    vec_free(f);
}

static void add(lsec_findings *out, const char *where, const char *key, size_t keylen,
                enum lsec_why why)
{
    struct lsec_finding f = {xstrndup(key, keylen), xstrdup(where ? where : ""), why};
    vec_push(out, f);
}

void lsec_check_pair(const char *where, const char *key, const char *value, lsec_findings *out)
{
    if (!value)
        return;
    if (strstr(value, "://")) {
        size_t before = out->n;
        lsec_check_url(where, value, out);
        if (out->n > before)
            return;
    }
    enum lsec_why w = lsec_classify(key, value);
    if (w != LSEC_NONE)
        add(out, where, key ? key : "", key ? strlen(key) : 0, w);
}

void lsec_check_url(const char *where, const char *url, lsec_findings *out)
{
    if (!url)
        return;
    const char *p = strstr(url, "://");
    const char *auth = p ? p + 3 : url;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        if (colon && colon + 1 < at) {
            char *pw = xstrndup(colon + 1, (size_t)(at - colon - 1));
            if (lsec_value_literal(pw)) {
                add(out, where, "password", 8, LSEC_USERINFO);
                free(pw);
                return;
            }
            free(pw);
        }
        char *user = xstrndup(auth, (size_t)(at - auth));
        enum lsec_why uw = value_shape_strict(user);
        if (uw != LSEC_NONE)
            add(out, where, "username", 8, uw);
        free(user);
    }
    const char *q = strchr(auth, '?');
    size_t pathlen = q ? (size_t)(q - auth) : strcspn(auth, "#");
    char *path = xstrndup(auth, pathlen);
    enum lsec_why pw = value_shape_strict(path);
    free(path);
    if (pw != LSEC_NONE)
        add(out, where, "url", 3, pw);
    if (!q)
        return;
    for (const char *s = q + 1; *s && *s != '#';) {
        size_t len = strcspn(s, "&#");
        const char *eq = memchr(s, '=', len);
        if (eq) {
            char *k = xstrndup(s, (size_t)(eq - s));
            char *v = xstrndup(eq + 1, (size_t)(s + len - eq - 1));
            enum lsec_why w = lsec_classify(k, v);
            if (w != LSEC_NONE)
                add(out, where, k, strlen(k), w);
            free(k);
            free(v);
        }
        s += len;
        if (*s == '&')
            s++;
    }
}

static const char *flag_name(const char *a)
{
    while (*a == '-')
        a++;
    return a;
}

void lsec_check_args(const char *where, const char *const *args, size_t n, lsec_findings *out)
{
    for (size_t i = 0; i < n; i++) {
        const char *a = args[i];
        if (!a)
            continue;
        size_t before = out->n;
        const char *eq = strchr(a, '=');
        const char *url = strstr(a, "://");
        if (url && !(eq && eq < url)) {
            lsec_check_url(where, a, out);
        } else if (eq) {
            char *k = xstrndup(a, (size_t)(eq - a));
            if (strstr(eq + 1, "://"))
                lsec_check_url(where, eq + 1, out);
            else if (key_tier(flag_name(k)) != TIER_NONE &&
                     classify(flag_name(k), eq + 1, false) == LSEC_KEY_NAME)
                add(out, where, k, strlen(k), LSEC_KEY_NAME);
            free(k);
        } else if (a[0] == '-' && key_tier(flag_name(a)) != TIER_NONE && i + 1 < n && args[i + 1] &&
                   args[i + 1][0] != '-' &&
                   (classify(flag_name(a), args[i + 1], false) == LSEC_KEY_NAME ||
                    value_shape_strict(args[i + 1]) != LSEC_NONE)) {
            add(out, where, a, strlen(a), LSEC_KEY_NAME);
            i++;
            continue;
        }
        if (out->n == before) {
            enum lsec_why w = lsec_value_shape(a);
            if (w != LSEC_NONE) {
                char *k = xasprintf("args[%zu]", i);
                add(out, where, k, strlen(k), w);
                free(k);
            }
        }
    }
}

static void check_string_array(const char *where, const toml_value *arr, lsec_findings *out)
{
    size_t n = toml_len(arr);
    const char **v = xcalloc(n + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const toml_value *it = toml_at(arr, i);
        if (it && it->type == TOML_STRING)
            v[k++] = it->u.str.s;
    }
    lsec_check_args(where, v, k, out);
    free(v);
}

static void walk(const toml_value *t, strbuf *path, lsec_findings *out)
{
    for (size_t i = 0; i < toml_len(t); i++) {
        const toml_kv *kv = toml_entry(t, i);
        size_t keep = path->len;
        if (path->len)
            sb_addc(path, '.');
        sb_adds(path, kv->key);
        const toml_value *v = kv->val;
        if (v->type == TOML_STRING) {
            lsec_check_pair(path->buf, kv->key, v->u.str.s, out);
        } else if (v->type == TOML_TABLE) {
            walk(v, path, out);
        } else if (v->type == TOML_ARRAY) {
            bool tables = toml_len(v) > 0;
            for (size_t j = 0; j < toml_len(v); j++)
                tables = tables && toml_at(v, j)->type == TOML_TABLE;
            if (tables)
                for (size_t j = 0; j < toml_len(v); j++)
                    walk(toml_at(v, j), path, out);
            else
                check_string_array(path->buf, v, out);
        }
        sb_setlen(path, keep);
    }
}

void lsec_check_server_table(const toml_value *server, lsec_findings *out)
{
    if (!server || server->type != TOML_TABLE)
        return;
    strbuf path = SB_INIT;
    for (size_t i = 0; i < toml_len(server); i++) {
        const toml_kv *kv = toml_entry(server, i);
        const toml_value *v = kv->val;
        if (strcmp(kv->key, "url") == 0 && v->type == TOML_STRING) {
            lsec_check_url("url", v->u.str.s, out);
        } else if (strcmp(kv->key, "args") == 0 && v->type == TOML_ARRAY) {
            check_string_array("args", v, out);
        } else if ((strcmp(kv->key, "headers") == 0 || strcmp(kv->key, "env") == 0) &&
                   v->type == TOML_TABLE) {
            for (size_t j = 0; j < toml_len(v); j++) {
                const toml_kv *e = toml_entry(v, j);
                /* a header's name is sent as written too */
                if (strcmp(kv->key, "headers") == 0 && lsec_value_shape(e->key) != LSEC_NONE)
                    add(out, kv->key, "header name", 11, lsec_value_shape(e->key));
                if (e->val->type == TOML_STRING)
                    lsec_check_pair(kv->key, e->key, e->val->u.str.s, out);
            }
        } else {
            toml_value tmp = {.type = TOML_TABLE};
            toml_kv one = *kv;
            tmp.u.tab.kv = &one;
            tmp.u.tab.n = tmp.u.tab.cap = 1;
            sb_reset(&path);
            walk(&tmp, &path, out);
        }
    }
    sb_release(&path);
}

void lsec_check_toml(const toml_value *root, lsec_findings *out)
{
    if (!root || root->type != TOML_TABLE)
        return;
    strbuf path = SB_INIT;
    walk(root, &path, out);
    sb_release(&path);
}

static void walk_json(const json_t *v, const char *key, strbuf *path, lsec_findings *out)
{
    if (json_is_string(v)) {
        lsec_check_pair(path->buf, key, json_string_value(v), out);
    } else if (json_is_object(v)) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            size_t keep = path->len;
            if (path->len)
                sb_addc(path, '.');
            sb_adds(path, k);
            walk_json(x, k, path, out);
            sb_setlen(path, keep);
        }
    } else if (json_is_array(v)) {
        size_t n = json_array_size(v), k = 0;
        const char **args = xcalloc(n + 1, sizeof *args);
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(v, i);
            if (json_is_string(x))
                args[k++] = json_string_value(x);
            else
                walk_json(x, key, path, out);
        }
        if (k)
            lsec_check_args(path->buf, args, k, out);
        free(args);
    }
}

void lsec_check_json(const json_t *root, lsec_findings *out)
{
    strbuf path = SB_INIT;
    walk_json(root, NULL, &path, out);
    sb_release(&path);
}

/* ---- free text: one engine for finding and for redacting ------------------ */

struct text {
    const char *s;
    size_t n;
    char *mask; /* redaction: bytes to hide; NULL when only finding */
    const char *where;
    lsec_findings *out; /* finding: one per hit */
    size_t hits;
};

static void hit(struct text *t, size_t a, size_t b, const char *key, size_t keylen,
                enum lsec_why why)
{
    if (b <= a)
        return;
    /* what an earlier redaction wrote is no secret: redacting twice hides
     * nothing more */
    if (b - a == strlen(LSEC_REDACTED) && memcmp(t->s + a, LSEC_REDACTED, b - a) == 0)
        return;
    t->hits++;
    if (t->mask)
        memset(t->mask + a, 1, b - a);
    if (t->out)
        add(t->out, t->where, key, keylen, why);
}

static void span_hit(void *ctx, size_t a, size_t b)
{
    struct text *t = ctx;
    hit(t, a, b, "line", 4, LSEC_ENTROPY);
}

static bool word_start(const char *s, size_t i)
{
    return i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_');
}

/* The end of the value word at i: up to blank, quote or a line end;
 * trailing ",;)" are punctuation, not value. */
static size_t value_end(const char *s, size_t n, size_t i)
{
    size_t e = i;
    while (e < n && !isspace((unsigned char)s[e]) && s[e] != '"' && s[e] != '\'' && s[e] != '`')
        e++;
    while (e > i && strchr(",;)", s[e - 1]))
        e--;
    return e;
}

/* A name at the end of s[0..i): letters, digits, '_', '-', '.' (shell
 * variables, header names, flags, JSON keys once their quote is skipped). */
static size_t name_start(const char *s, size_t i)
{
    size_t a = i;
    while (a > 0 && (isalnum((unsigned char)s[a - 1]) || strchr("_-.", s[a - 1])))
        a--;
    return a;
}

/* name = value, name: value, "name": "value", --name value, --name=value,
 * with the value judged by the name's tier: quoted under a strong name any
 * literal is a secret; otherwise it must look like a credential. */
static void named_values(struct text *t)
{
    const char *s = t->s;
    size_t n = t->n;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        size_t ke, ks;
        bool flag = false;
        if (c == '=' || c == ':') {
            ke = i;
            /* "name": → skip the closing quote of a quoted name */
            size_t kq = ke;
            while (kq > 0 && (s[kq - 1] == ' ' || s[kq - 1] == '\t'))
                kq--;
            bool quoted = kq > 0 && (s[kq - 1] == '"' || s[kq - 1] == '\'');
            ke = quoted ? kq - 1 : kq;
            ks = name_start(s, ke);
            if (quoted && !(ks > 0 && s[ks - 1] == s[kq - 1]))
                continue;
        } else if (c == '-' && i + 2 < n && s[i + 1] == '-' &&
                   (i == 0 || isspace((unsigned char)s[i - 1]) || s[i - 1] == '"' ||
                    s[i - 1] == '\'')) {
            ks = i + 2;
            ke = ks;
            while (ke < n && (isalnum((unsigned char)s[ke]) || s[ke] == '-' || s[ke] == '_'))
                ke++;
            if (ke >= n || (s[ke] != ' ' && s[ke] != '\t'))
                continue;
            flag = true;
        } else {
            continue;
        }
        if (ke <= ks || ke - ks > 128)
            continue;
        char *key = xstrndup(s + ks, ke - ks);
        enum tier tier = key_tier(key);
        if (flag && tier != TIER_NONE) { /* named as written: "--password" */
            free(key);
            key = xstrndup(s + i, ke - i);
        }
        if (tier == TIER_NONE) {
            free(key);
            continue;
        }
        size_t v = flag ? ke : i + 1;
        while (v < n && (s[v] == ' ' || s[v] == '\t'))
            v++;
        char q = v < n && (s[v] == '"' || s[v] == '\'') ? s[v] : 0;
        size_t vs = q ? v + 1 : v, ve;
        if (q) {
            size_t lim = n - vs < 4096 ? n - vs : 4096;
            const char *e = memchr(s + vs, q, lim);
            ve = e ? (size_t)(e - s) : value_end(s, n, vs);
        } else {
            ve = value_end(s, n, vs);
        }
        /* "Authorization: Bearer <token>": the credential is the word after */
        size_t cs = vs;
        while (cs < ve) {
            size_t we = cs;
            while (we < ve && isalnum((unsigned char)s[we]))
                we++;
            if (we < n && we > cs && (s[we] == ' ' || s[we] == '\t') &&
                scheme_word(s + cs, we - cs)) {
                cs = we;
                while (cs < n && (s[cs] == ' ' || s[cs] == '\t'))
                    cs++;
                if (!q)
                    ve = value_end(s, n, cs);
            } else {
                break;
            }
        }
        char *val = xstrndup(s + cs, ve > cs ? ve - cs : 0);
        bool secret = false;
        if (!strstr(val, "://")) {
            if (q && tier == TIER_STRONG && !flag) {
                secret =
                    lsec_value_literal(val) && !placeholder(val, strlen(val)) && !path_like(val);
            } else {
                char *plain = strip_refs(val, NULL);
                size_t pn = strlen(plain);
                size_t a = 0;
                while (a < pn && plain[a] == ' ')
                    a++;
                secret = credential_looking(plain + a, pn - a);
                free(plain);
            }
        }
        /* Redacting evidence, a strong name's value is hidden whatever it
         * looks like ("Authorization: Bearer abc.def"): a mistake there
         * only costs a few characters of the record. */
        if (!secret && t->mask && tier == TIER_STRONG && ve > cs && !strstr(val, "${") &&
            !placeholder(val, strlen(val)))
            secret = true;
        if (secret)
            hit(t, cs, ve, key, strlen(key), LSEC_KEY_NAME);
        free(val);
        free(key);
    }
}

/* mysql -p<password> (also mysqldump, mysqladmin, mariadb): the password is
 * glued to the flag. Only after such a command word: `ssh -p2222` is a
 * port. */
static void glued_password(struct text *t)
{
    const char *s = t->s;
    size_t n = t->n;
    static const char *const cmds[] = {"mysql", "mysqldump", "mysqladmin", "mariadb", NULL};
    bool after = false;
    for (size_t i = 0; i < n;) {
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        size_t e = i;
        while (e < n && !isspace((unsigned char)s[e]))
            e++;
        if (e == i)
            break;
        const char *w = s + i;
        size_t wn = e - i;
        const char *base = memrchr(w, '/', wn);
        base = base ? base + 1 : w;
        size_t bn = (size_t)(w + wn - base);
        for (size_t k = 0; cmds[k]; k++)
            if (bn == strlen(cmds[k]) && memcmp(base, cmds[k], bn) == 0)
                after = true;
        if (wn == 1 && strchr(";|&", w[0]))
            after = false;
        if (after && wn > 2 && w[0] == '-' && w[1] == 'p' && w[2] != '-')
            hit(t, i + 2, e, "-p", 2, LSEC_KEY_NAME);
        i = e;
    }
}

/* scheme://user:password@host */
static void userinfo(struct text *t)
{
    const char *s = t->s;
    size_t n = t->n;
    for (size_t i = 0; i + 3 <= n; i++) {
        if (memcmp(s + i, "://", 3) != 0)
            continue;
        size_t a = i + 3, e = a;
        /* an earlier redaction's mark ends the authority too: the path it
         * hid must not turn into a password on a second pass */
        while (e < n && !isspace((unsigned char)s[e]) && !strchr("/?#\"'", s[e]) &&
               strncmp(s + e, LSEC_REDACTED, strlen(LSEC_REDACTED)) != 0)
            e++;
        const char *at = memrchr(s + a, '@', e - a);
        const char *colon = at ? memchr(s + a, ':', (size_t)(at - (s + a))) : NULL;
        if (colon && colon + 1 < at && !(colon[1] == '$' && colon[2] == '{'))
            hit(t, (size_t)(colon + 1 - s), (size_t)(at - s), "password", 8, LSEC_USERINFO);
    }
}

static void prefixed(struct text *t)
{
    const char *s = t->s;
    size_t n = t->n;
    for (size_t i = 0; i < n; i++) {
        if (!word_start(s, i))
            continue;
        size_t e = prefix_token_at(s, n, i);
        if (e) {
            hit(t, i, e, "line", 4, LSEC_PREFIX);
            i = e;
        }
    }
    const char *b = n ? strstr(s, "-----BEGIN") : NULL;
    if (b && (size_t)(b - s) < n && pem_private_key(s)) {
        const char *e = strstr(b, "-----END");
        const char *end = e ? strstr(e + 8, "-----") : NULL;
        size_t to = end ? (size_t)(end + 5 - s) : n;
        hit(t, (size_t)(b - s), to < n ? to : n, "private key", 11, LSEC_PREFIX);
    }
}

/* Finding (files a person wrote: skills, docs) looks for named values,
 * token prefixes and URL passwords; redacting (command lines in evidence)
 * also hides every random-looking token, since a mistake there only costs
 * a few characters of the record. */
static void text_scan(struct text *t)
{
    prefixed(t);
    userinfo(t);
    named_values(t);
    if (t->mask) {
        glued_password(t);
        entropy_spans(t->s, t->n, span_hit, t);
    }
}

void lsec_check_text(const char *where, const char *text, size_t len, lsec_findings *out)
{
    char *s = xstrndup(text, len); /* NUL-terminated for the string helpers */
    struct text t = {s, strlen(s), NULL, where, out, 0};
    size_t before = out->n;
    text_scan(&t);
    /* one finding per key is enough to refuse; keep the first of each */
    for (size_t i = before + 1; i < out->n;) {
        bool dup = false;
        for (size_t j = before; j < i && !dup; j++)
            dup = strcmp(out->v[j].key, out->v[i].key) == 0;
        if (dup) {
            free(out->v[i].key);
            free(out->v[i].where);
            memmove(&out->v[i], &out->v[i + 1], (out->n - i - 1) * sizeof out->v[0]);
            out->n--;
        } else {
            i++;
        }
    }
    free(s);
}

void lsec_check_line(const char *where, const char *line, size_t len, lsec_findings *out)
{
    lsec_check_text(where, line, len, out);
}

/* The text with every masked run replaced by LSEC_REDACTED; from[k] is the
 * input byte that output byte k copies, SIZE_MAX inside a mark. */
static void redact_render(const char *s, size_t n, const char *mask, strbuf *out, size_t **from)
{
    sb_reset(out);
    size_t cap = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !mask[j] == !mask[i])
            j++;
        if (mask[i]) {
            sb_adds(out, LSEC_REDACTED);
        } else {
            sb_add(out, s + i, j - i);
        }
        if (out->len > cap) {
            cap = out->len * 2;
            *from = xrealloc(*from, cap * sizeof **from);
        }
        size_t k = out->len - (mask[i] ? strlen(LSEC_REDACTED) : j - i);
        for (size_t x = i; k < out->len; k++, x++)
            (*from)[k] = mask[i] ? SIZE_MAX : x;
        i = j;
    }
}

size_t lsec_redact(const char *text, size_t len, strbuf *out)
{
    char *s = xstrndup(text, len);
    size_t n = strlen(s); /* a NUL ends the text, as it ends a C string */
    char *mask = xcalloc(n + 1, 1);
    struct text t = {s, n, mask, NULL, NULL, 0};
    text_scan(&t);
    size_t hits = t.hits;
    /* A mark changes what its neighbours look like ("…keyVF=[redacted]" ends
     * a token that was longer before), so the output is scanned again and
     * what that scan hides is mapped back onto the input, until a scan of
     * the output hides nothing: redacting the result again hides nothing
     * more. Each further round masks at least one more input byte, so it
     * ends. */
    strbuf cur = SB_INIT;
    size_t *from = NULL;
    redact_render(s, n, mask, &cur, &from);
    for (bool grew = hits > 0; grew;) {
        char *again = xcalloc(cur.len + 1, 1);
        struct text u = {cur.buf, cur.len, again, NULL, NULL, 0};
        text_scan(&u);
        grew = false;
        for (size_t k = 0; k < cur.len; k++)
            if (again[k] && from[k] != SIZE_MAX && !mask[from[k]])
                mask[from[k]] = grew = true;
        free(again);
        if (grew) {
            hits += u.hits;
            redact_render(s, n, mask, &cur, &from);
        }
    }
    sb_add(out, cur.buf, cur.len);
    sb_release_secure(&cur);
    free(from);
    free(mask);
    explicit_bzero(s, n);
    free(s);
    return hits;
}
