/* literal_secret — see literal_secret.h. */
#include "bundle/literal_secret.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xalloc.h"

#define ENTROPY_MIN_LEN 20
#define ENTROPY_MIN_BITS 3.5
/* Random tokens switch character class (upper/lower/digit) on most bytes;
 * camelCase identifiers and version strings rarely do. */
#define ENTROPY_MIN_SWITCH_RATE 0.3

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

bool lsec_key_secretish(const char *key)
{
    static const char *const words[] = {"authorization", "token",      "secret",   "api-key",
                                        "apikey",        "api_key",    "password", "passwd",
                                        "bearer",        "credential", "key"};
    if (!key)
        return false;
    size_t n = strlen(key);
    char *low = xmalloc(n + 1);
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)key[i]);
    bool hit = false;
    for (size_t i = 0; i < sizeof words / sizeof *words && !hit; i++)
        hit = strstr(low, words[i]) != NULL;
    free(low);
    return hit;
}

bool lsec_value_literal(const char *value)
{
    return value && value[0] && !strstr(value, "${");
}

/* The value with every valid ${NAME} span replaced by one space. */
static char *strip_refs(const char *s)
{
    strbuf out = SB_INIT;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (s[i] == '$' && i + 1 < n && s[i + 1] == '{') {
            size_t j = i + 2;
            bool ok = j < n && (isalpha((unsigned char)s[j]) || s[j] == '_');
            while (ok && j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
                j++;
            if (ok && j < n && s[j] == '}') {
                sb_addc(&out, ' ');
                i = j + 1;
                continue;
            }
        }
        sb_addc(&out, s[i]);
        i++;
    }
    return sb_detach(&out, NULL);
}

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

static bool jwt_at(const char *s, size_t n)
{
    if (n < 3 || strncmp(s, "eyJ", 3) != 0)
        return false;
    size_t a = run_len(s, n);
    if (a < 10 || a >= n || s[a] != '.')
        return false;
    size_t b = run_len(s + a + 1, n - a - 1);
    return b >= 10;
}

static bool aws_at(const char *s, size_t n)
{
    if (n < 20 || (strncmp(s, "AKIA", 4) != 0 && strncmp(s, "ASIA", 4) != 0))
        return false;
    for (size_t k = 4; k < 20; k++)
        if (!(isupper((unsigned char)s[k]) || isdigit((unsigned char)s[k])))
            return false;
    return n == 20 || !isalnum((unsigned char)s[20]);
}

static bool prefix_scan(const char *s)
{
    if (strstr(s, "-----BEGIN") && strstr(s, "PRIVATE KEY"))
        return true;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && isalnum((unsigned char)s[i - 1]))
            continue;
        if (jwt_at(s + i, n - i) || aws_at(s + i, n - i))
            return true;
        for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
            size_t pl = strlen(prefixes[k].p);
            if (n - i > pl && strncmp(s + i, prefixes[k].p, pl) == 0 &&
                run_len(s + i + pl, n - i - pl) >= prefixes[k].min_after)
                return true;
        }
    }
    return false;
}

static int char_class(unsigned char c)
{
    return isupper(c) ? 1 : islower(c) ? 2 : isdigit(c) ? 3 : 4;
}

/* One candidate token: long, mixed upper/lower/digit, high entropy, and
 * switching class often (random, not an identifier). */
static bool token_random(const char *t, size_t n)
{
    if (n < ENTROPY_MIN_LEN)
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
    if (!(up && lo && dg))
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

static bool entropy_scan(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || strchr("+=_-/", c))) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n) {
            unsigned char d = (unsigned char)s[j];
            if (!(isalnum(d) || strchr("+=_-/", d)))
                break;
            j++;
        }
        if (token_random(s + i, j - i))
            return true;
        i = j;
    }
    return false;
}

enum lsec_why lsec_value_shape(const char *value)
{
    if (!value || !value[0])
        return LSEC_NONE;
    char *s = strip_refs(value);
    enum lsec_why w = prefix_scan(s) ? LSEC_PREFIX : entropy_scan(s) ? LSEC_ENTROPY : LSEC_NONE;
    free(s);
    return w;
}

bool lsec_value_has_prefix_token(const char *value)
{
    if (!value || !value[0])
        return false;
    char *s = strip_refs(value);
    bool r = prefix_scan(s);
    free(s);
    return r;
}

enum lsec_why lsec_classify(const char *key, const char *value)
{
    if (lsec_key_secretish(key) && lsec_value_literal(value))
        return LSEC_KEY_NAME;
    return lsec_value_shape(value);
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
        if (lsec_value_shape(user) != LSEC_NONE)
            add(out, where, "username", 8, lsec_value_shape(user));
        free(user);
    }
    const char *q = strchr(auth, '?');
    size_t pathlen = q ? (size_t)(q - auth) : strcspn(auth, "#");
    char *path = xstrndup(auth, pathlen);
    enum lsec_why pw = lsec_value_shape(path);
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
        if (strstr(a, "://") && !(eq && eq < strstr(a, "://"))) {
            lsec_check_url(where, a, out);
        } else if (eq) {
            char *k = xstrndup(a, (size_t)(eq - a));
            if (lsec_key_secretish(flag_name(k)) && lsec_value_literal(eq + 1))
                add(out, where, k, strlen(k), LSEC_KEY_NAME);
            else if (strstr(eq + 1, "://"))
                lsec_check_url(where, eq + 1, out);
            free(k);
        } else if (a[0] == '-' && lsec_key_secretish(flag_name(a)) && i + 1 < n && args[i + 1] &&
                   args[i + 1][0] != '-' && lsec_value_literal(args[i + 1])) {
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

void lsec_check_line(const char *where, const char *line, size_t len, lsec_findings *out)
{
    char *s = xstrndup(line, len);
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '+')
        i++;
    size_t ks = i;
    bool quoted = s[i] == '"' || s[i] == '\'';
    if (quoted) {
        char q = s[i++];
        ks = i;
        while (s[i] && s[i] != q)
            i++;
    } else {
        while (s[i] && (isalnum((unsigned char)s[i]) || strchr("_-.", s[i])))
            i++;
    }
    size_t ke = i;
    if (quoted && s[i])
        i++;
    while (s[i] == ' ' || s[i] == '\t')
        i++;
    bool found = false;
    if (ke > ks && (s[i] == '=' || s[i] == ':')) {
        i++;
        while (s[i] == ' ' || s[i] == '\t')
            i++;
        if (s[i] == '"' || s[i] == '\'') {
            char q = s[i++];
            size_t vs = i;
            while (s[i] && s[i] != q)
                i++;
            char *k = xstrndup(s + ks, ke - ks);
            char *v = xstrndup(s + vs, i - vs);
            enum lsec_why w = lsec_classify(k, v);
            if (w == LSEC_NONE && strstr(v, "://")) {
                size_t before = out->n;
                lsec_check_url(where, v, out);
                found = out->n > before;
            } else if (w != LSEC_NONE) {
                add(out, where, k, strlen(k), w);
                found = true;
            }
            free(k);
            free(v);
        }
    }
    if (!found && lsec_value_has_prefix_token(s))
        add(out, where, "line", 4, LSEC_PREFIX);
    free(s);
}

/* ---- spans in free text -------------------------------------------------- */

static void span_add(lsec_spans *out, size_t a, size_t b)
{
    if (b > a) {
        struct lsec_span sp = {a, b - a};
        vec_push(out, sp);
    }
}

static bool keych(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.';
}

/* The key name ending just before i (leading dashes dropped); true when it
 * is secretish. */
static bool key_before(const char *s, size_t i)
{
    size_t a = i;
    while (a > 0 && keych((unsigned char)s[a - 1]))
        a--;
    while (a < i && s[a] == '-')
        a++;
    if (a == i || i - a > 128)
        return false;
    char *k = xstrndup(s + a, i - a);
    bool hit = lsec_key_secretish(k);
    free(k);
    return hit;
}

/* The value starting at a, as [*va, *vb): a quoted one without its quotes
 * (ending at the closing quote or the line), a bare one at whitespace (with
 * spaces: at the line's end), a quote or a shell operator. */
static void value_at(const char *s, size_t n, size_t a, bool spaces, size_t *va, size_t *vb)
{
    if (a < n && (s[a] == '"' || s[a] == '\'')) {
        char q = s[a];
        size_t e = a + 1;
        while (e < n && s[e] != q && s[e] != '\n')
            e++;
        *va = a + 1;
        *vb = e;
        return;
    }
    size_t e = a;
    while (e < n && s[e] != '"' && s[e] != '\'' && s[e] != '\n' &&
           (spaces ? true : !isspace((unsigned char)s[e])) && !strchr(";&|", s[e]))
        e++;
    while (spaces && e > a && isspace((unsigned char)s[e - 1]))
        e--;
    *va = a;
    *vb = e;
}

static bool literal_value(const char *s, size_t a, size_t b)
{
    return b > a && s[a] != '$' && !(b - a >= 2 && s[a] == '$' && s[a + 1] == '{');
}

static bool word_start(const char *s, size_t i)
{
    return i == 0 || isspace((unsigned char)s[i - 1]) || s[i - 1] == '"' || s[i - 1] == '\'';
}

static size_t prefix_token_at(const char *s, size_t n, size_t i)
{
    if (n - i >= 3 && strncmp(s + i, "eyJ", 3) == 0) {
        size_t a = run_len(s + i, n - i);
        if (a >= 10 && i + a < n && s[i + a] == '.') {
            size_t b = run_len(s + i + a + 1, n - i - a - 1);
            if (b >= 10) {
                size_t e = i + a + 1 + b;
                if (e < n && s[e] == '.')
                    e += 1 + run_len(s + e + 1, n - e - 1);
                return e - i;
            }
        }
    }
    if (aws_at(s + i, n - i))
        return 20;
    for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
        size_t pl = strlen(prefixes[k].p);
        if (n - i > pl && strncmp(s + i, prefixes[k].p, pl) == 0) {
            size_t r = run_len(s + i + pl, n - i - pl);
            if (r >= prefixes[k].min_after)
                return pl + r;
        }
    }
    return 0;
}

static void userinfo_span(const char *s, size_t n, size_t i, lsec_spans *out)
{
    size_t a = i + 3, e = a;
    while (e < n && !isspace((unsigned char)s[e]) && !strchr("/?#\"'", s[e]))
        e++;
    size_t at = 0;
    for (size_t k = a; k < e; k++)
        if (s[k] == '@')
            at = k;
    if (!at)
        return;
    const char *colon = memchr(s + a, ':', at - a);
    if (colon && (size_t)(colon - s) + 1 < at) {
        span_add(out, (size_t)(colon - s) + 1, at);
    } else {
        char *user = xstrndup(s + a, at - a);
        if (lsec_value_shape(user) != LSEC_NONE)
            span_add(out, a, at);
        free(user);
    }
}

static bool ci_at(const char *s, size_t n, size_t i, const char *w)
{
    size_t l = strlen(w);
    return n - i >= l && strncasecmp(s + i, w, l) == 0;
}

void lsec_text_spans(const char *s, size_t n, lsec_spans *out)
{
    size_t va, vb, pem_end = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '=' && i > 0 && key_before(s, i)) {
            value_at(s, n, i + 1, false, &va, &vb);
            if (literal_value(s, va, vb))
                span_add(out, va, vb);
        } else if (c == ':' && i > 0 && keych((unsigned char)s[i - 1]) && key_before(s, i)) {
            size_t a = i;
            while (a > 0 && keych((unsigned char)s[a - 1]))
                a--;
            if (word_start(s, a) && !(i + 2 < n && s[i + 1] == '/' && s[i + 2] == '/')) {
                size_t v = i + 1;
                while (v < n && s[v] == ' ')
                    v++;
                value_at(s, n, v, true, &va, &vb);
                if (literal_value(s, va, vb))
                    span_add(out, va, vb);
            }
        } else if (c == '-' && word_start(s, i) && i + 2 < n) {
            size_t a = i;
            while (a < n && s[a] == '-')
                a++;
            size_t e = a;
            while (e < n && keych((unsigned char)s[e]) && s[e] != '.')
                e++;
            if (a == i + 1 && e > a && s[a] == 'p' && e - a >= 5) {
                bool digits = true;
                for (size_t k = a + 1; k < e; k++)
                    digits &= isdigit((unsigned char)s[k]) != 0;
                if (!digits &&
                    (e == n || isspace((unsigned char)s[e]) || strchr("\"';&|)<>", s[e])))
                    span_add(out, a + 1, e);
            }
            if (e > a && e < n && isspace((unsigned char)s[e]) && (a - i == 2 || e - a > 1)) {
                char *k = xstrndup(s + a, e - a);
                bool secret = lsec_key_secretish(k);
                free(k);
                if (secret) {
                    size_t v = e;
                    while (v < n && (s[v] == ' ' || s[v] == '\t'))
                        v++;
                    if (v < n && s[v] != '-') {
                        value_at(s, n, v, false, &va, &vb);
                        if (literal_value(s, va, vb))
                            span_add(out, va, vb);
                    }
                }
            }
        }
        if (c == ':' && i + 2 < n && s[i + 1] == '/' && s[i + 2] == '/')
            userinfo_span(s, n, i, out);
        if (i > 0 && isalnum((unsigned char)s[i - 1]))
            continue;
        size_t pl = ci_at(s, n, i, "bearer ")                              ? 7
                    : ci_at(s, n, i, "basic ") || ci_at(s, n, i, "token ") ? 6
                                                                           : 0;
        if (pl) {
            size_t v = i + pl;
            while (v < n && s[v] == ' ')
                v++;
            value_at(s, n, v, false, &va, &vb);
            if (vb >= va + 8 && literal_value(s, va, vb))
                span_add(out, va, vb);
        }
        size_t tl = prefix_token_at(s, n, i);
        if (tl)
            span_add(out, i, i + tl);
        if (n - i >= 10 && strncmp(s + i, "-----BEGIN", 10) == 0) {
            /* one search for the END line serves every BEGIN before it */
            if (pem_end != SIZE_MAX && (pem_end == 0 || pem_end < i)) {
                const char *e = memmem(s + i + 10, n - i - 10, "-----END", 8);
                pem_end = e ? (size_t)(e - s) : SIZE_MAX;
            }
            size_t e = n;
            if (pem_end != SIZE_MAX) {
                const char *close = memmem(s + pem_end + 8, n - pem_end - 8, "-----", 5);
                e = close ? (size_t)(close - s) + 5 : n;
            }
            const char *nl = memchr(s + i, '\n', n - i);
            size_t hdr = nl ? (size_t)(nl - s) : n;
            if (memmem(s + i, hdr - i, "PRIVATE KEY", 11))
                span_add(out, i, e);
        }
    }
    /* long high-entropy tokens */
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || strchr("+=_-/", c)) || c == '\0') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && s[j] && (isalnum((unsigned char)s[j]) || strchr("+=_-/", s[j])))
            j++;
        if (token_random(s + i, j - i))
            span_add(out, i, j);
        i = j;
    }
}
