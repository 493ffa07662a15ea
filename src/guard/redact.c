/* guard redact — secret-looking tokens out of audit rows (00-overview: guard
 * audit rows redact secret-looking tokens in command text), and the deny
 * row appender. Redaction marks bytes in a mask, then emits each masked run
 * as "[redacted]", so overlapping rules compose. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/xalloc.h"
#include "guard/guard_int.h"

static bool tokch(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.';
}

static bool boundary(const char *s, size_t i)
{
    return i == 0 || !isalnum((unsigned char)s[i - 1]);
}

static size_t tok_end(const char *s, size_t n, size_t i)
{
    while (i < n && tokch((unsigned char)s[i]))
        i++;
    return i;
}

/* The end of the word (up to whitespace or a quote) starting at i. */
static size_t word_end(const char *s, size_t n, size_t i)
{
    while (i < n && !isspace((unsigned char)s[i]) && s[i] != '"' && s[i] != '\'')
        i++;
    return i;
}

static void mark(char *m, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        m[i] = 1;
}

static bool ci_prefix(const char *s, size_t n, size_t i, const char *p)
{
    size_t l = strlen(p);
    return i + l <= n && strncasecmp(s + i, p, l) == 0;
}

static bool secret_name(const char *s, size_t len)
{
    static const char *const parts[] = {"token", "secret",     "key",  "password", "passwd", "pass",
                                        "pat",   "credential", "auth", "apikey",   NULL};
    char buf[128];
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[len] = '\0';
    for (size_t k = 0; parts[k]; k++)
        if (strstr(buf, parts[k]))
            return true;
    return false;
}

/* Random-looking: many distinct symbols and mixed classes (upper, lower,
 * digits), or a long hex string. An integer stand-in for "≥ 3.5 bits per
 * character" that needs no libm. */
static bool random_looking(const char *s, size_t n)
{
    unsigned char seen[256] = {0};
    size_t distinct = 0;
    bool up = false, lo = false, dg = false, hex = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        distinct += !seen[c];
        seen[c] = 1;
        up |= isupper(c) != 0;
        lo |= islower(c) != 0;
        dg |= isdigit(c) != 0;
        hex &= isxdigit(c) != 0;
    }
    if (hex)
        return n >= 32 && distinct >= 10;
    return distinct >= 12 && dg && ((up && lo) || n >= 32);
}

void guard_redact(const char *s, size_t n, strbuf *out)
{
    char *m = xcalloc(n + 1, 1);
    static const char *const prefixes[] = {
        "ghp_",     "gho_",     "ghu_",  "ghs_",  "ghr_",  "github_pat_", "sk-",   "sk_live_",
        "sk_test_", "rk_live_", "xoxb-", "xoxp-", "xoxa-", "xoxr-",       "xoxs-", "glpat-",
        "AIza",     "npm_",     "hf_",   "pypi-", "AKIA",  "ASIA",        "eyJ",   NULL};
    for (size_t i = 0; i < n; i++) {
        /* well-known token prefixes */
        if (boundary(s, i))
            for (size_t k = 0; prefixes[k]; k++) {
                size_t l = strlen(prefixes[k]);
                bool cs = !strcmp(prefixes[k], "AKIA") || !strcmp(prefixes[k], "ASIA") ||
                          !strcmp(prefixes[k], "AIza") || !strcmp(prefixes[k], "eyJ");
                bool hit = cs ? (i + l <= n && !strncmp(s + i, prefixes[k], l))
                              : ci_prefix(s, n, i, prefixes[k]);
                size_t e = hit ? tok_end(s, n, i + l) : 0;
                if (hit && e - i >= l + 6)
                    mark(m, i, e);
            }
        /* scheme://user:pass@host */
        if (i + 3 <= n && !memcmp(s + i, "://", 3)) {
            size_t a = i + 3, e = a;
            while (e < n && !isspace((unsigned char)s[e]) && s[e] != '/' && s[e] != '"' &&
                   s[e] != '\'')
                e++;
            const char *at = NULL;
            for (size_t k = a; k < e; k++)
                if (s[k] == '@')
                    at = s + k;
            if (at)
                mark(m, a, (size_t)(at - s));
        }
        /* Bearer / Basic / Token credentials */
        size_t pl = ci_prefix(s, n, i, "bearer ")                                  ? 7
                    : ci_prefix(s, n, i, "basic ") || ci_prefix(s, n, i, "token ") ? 6
                                                                                   : 0;
        if (pl && boundary(s, i)) {
            size_t a = i + pl;
            while (a < n && s[a] == ' ')
                a++;
            size_t e = word_end(s, n, a);
            if (e >= a + 8)
                mark(m, a, e);
        }
        /* NAME=value and --name value / --name=value with a secret-looking name */
        if (s[i] == '=' && i > 0) {
            size_t a = i;
            while (a > 0 &&
                   (isalnum((unsigned char)s[a - 1]) || s[a - 1] == '_' || s[a - 1] == '-'))
                a--;
            if (i > a && secret_name(s + a, i - a)) {
                size_t e = word_end(s, n, i + 1);
                if (e > i + 1)
                    mark(m, i + 1, e);
            }
        }
        if (s[i] == '-' && i + 2 < n && s[i + 1] == '-' && boundary(s, i)) {
            size_t a = i + 2, e = a;
            while (e < n && (isalnum((unsigned char)s[e]) || s[e] == '-' || s[e] == '_'))
                e++;
            if (e > a && e < n && s[e] == ' ' && secret_name(s + a, e - a)) {
                size_t v = e;
                while (v < n && s[v] == ' ')
                    v++;
                size_t vq = v < n && (s[v] == '"' || s[v] == '\'') ? v + 1 : v;
                size_t ve = word_end(s, n, vq);
                if (ve > vq)
                    mark(m, vq, ve);
            }
        }
        /* "Authorization: x" headers */
        if (ci_prefix(s, n, i, "authorization:")) {
            size_t a = i + 14;
            while (a < n && s[a] == ' ')
                a++;
            size_t e = a;
            while (e < n && s[e] != '"' && s[e] != '\'' && s[e] != '\n')
                e++;
            if (e > a)
                mark(m, a, e);
        }
    }
    /* long high-entropy words */
    for (size_t i = 0; i < n;) {
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '+' || s[i] == '=' ||
              s[i] == '-')) {
            i++;
            continue;
        }
        size_t e = i;
        bool digit = false, alpha = false;
        while (e < n && (isalnum((unsigned char)s[e]) || s[e] == '_' || s[e] == '+' ||
                         s[e] == '=' || s[e] == '-')) {
            digit |= isdigit((unsigned char)s[e]) != 0;
            alpha |= isalpha((unsigned char)s[e]) != 0;
            e++;
        }
        if (e - i >= 20 && digit && alpha && random_looking(s + i, e - i))
            mark(m, i, e);
        i = e;
    }
    for (size_t i = 0; i < n;) {
        if (m[i]) {
            sb_adds(out, "[redacted]");
            while (i < n && m[i])
                i++;
            continue;
        }
        unsigned char c = (unsigned char)s[i];
        sb_addc(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
        i++;
    }
    free(m);
}

int guard_audit_deny(const char *ash, const char *project, const char *tool, const char *detail,
                     size_t detail_max, struct as_err *err)
{
    strbuf path = SB_INIT, d = SB_INIT, dc = SB_INIT, t = SB_INIT;
    sb_addf(&path, "%s/audit/calls.jsonl", ash);
    guard_redact(detail, strlen(detail), &d);
    aud_utf8_cut(d.buf, detail_max, &dc);
    aud_utf8_cut(tool, GUARD_TOOL_MAX, &t);
    json_t *rec = json_object();
    json_object_set_new(rec, "ts", json_integer((json_int_t)time(NULL)));
    const char *run = getenv("AGENTSTACK_RUN_ID");
    if (run && run[0])
        json_object_set_new(rec, "run", json_string(run));
    json_object_set_new(rec, "pid", json_integer(getpid()));
    if (project && project[0])
        json_object_set_new(rec, "project", json_string(project));
    json_object_set_new(rec, "server", json_string(GUARD_SERVER));
    json_object_set_new(rec, "tool", json_string(t.buf));
    json_object_set_new(rec, "args_digest", json_string(""));
    json_object_set_new(rec, "outcome", json_string("denied"));
    json_object_set_new(rec, "detail", json_string(dc.buf));
    json_object_set_new(rec, "ms", json_integer(0));
    struct aud_append_opts o = {.rotate_bytes = AUD_ROTATE_BYTES, .lock_timeout_ms = 2000};
    int rc = aud_append(path.buf, rec, &o, err);
    json_decref(rec);
    sb_release(&path);
    sb_release(&d);
    sb_release(&dc);
    sb_release(&t);
    return rc;
}
