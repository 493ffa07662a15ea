/*
 * host — the egress host grammar and normalization (docs/policy.md,
 * "Grammar"), and the grammar of tool, secret and filesystem entries.
 *
 * Why normalize both sides: a deny written `!Evil.Example` must stop a
 * CONNECT to `evil.example.`, and `!169.254.169.254` must stop `2852039166`.
 * Subjects and patterns therefore go through the same canonical form before
 * any match: lowercase, one trailing dot removed, numeric IPv4 spellings as
 * dotted quads, IPv6 in inet_ntop form, Unicode patterns as xn-- labels.
 */
#include <arpa/inet.h>
#include <idn2.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dl.h"
#include "policy/pol_internal.h"

/* ---- libidn2, for Unicode labels only ------------------------------------- */

/* A Unicode label is rare in rules and names, and linking libidn2 (with
 * libunistring behind it) costs every command's start ~570 symbol
 * relocations: it is dlopen'ed the first time a label needs it (base/dl.h).
 * When it cannot be loaded, the label is refused — never matched unconverted. */
struct idn2_api {
    int (*to_ascii_8z)(const char *input, char **output, int flags);
    void (*free)(void *ptr);
};
DL_PROTO_CHECK(struct idn2_api, to_ascii_8z, idn2_to_ascii_8z);
DL_PROTO_CHECK(struct idn2_api, free, idn2_free);
static const struct dl_sym idn2_syms[] = {
    {"idn2_to_ascii_8z", offsetof(struct idn2_api, to_ascii_8z)},
    {"idn2_free", offsetof(struct idn2_api, free)},
};
static const char *const idn2_default_names[] = {"libidn2.so.0", NULL};
static const char *const *idn2_names = idn2_default_names;
static pthread_mutex_t idn2_mu = PTHREAD_MUTEX_INITIALIZER;
static struct idn2_api idn2;
static int idn2_loaded;

static const struct idn2_api *idn2_load(void)
{
    pthread_mutex_lock(&idn2_mu);
    if (!idn2_loaded) {
        struct as_err err = AS_ERR_INIT;
        struct idn2_api tmp;
        if (dl_load_table(idn2_names, "libidn2", "install Debian's libidn2-0", idn2_syms,
                          sizeof idn2_syms / sizeof idn2_syms[0], &tmp, &err)) {
            idn2 = tmp;
            idn2_loaded = 1;
        }
    }
    int ok = idn2_loaded;
    pthread_mutex_unlock(&idn2_mu);
    return ok ? &idn2 : NULL;
}

void pol__idn2_set_names(const char *const *names)
{
    pthread_mutex_lock(&idn2_mu);
    idn2_names = names ? names : idn2_default_names;
    pthread_mutex_unlock(&idn2_mu);
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* ---- numeric IPv4 (inet_aton's spellings) -------------------------------- */

static int parse_num_part(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0)
        return -1;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (n == 2 || n > 2 + 16)
            return -1;
        for (size_t i = 2; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0)
                return -1;
            x = x * 16 + (uint64_t)d;
        }
    } else if (s[0] == '0') {
        if (n > 23)
            return -1;
        for (size_t i = 1; i < n; i++) {
            if (s[i] < '0' || s[i] > '7')
                return -1;
            x = x * 8 + (uint64_t)(s[i] - '0');
        }
    } else {
        if (n > 19)
            return -1;
        for (size_t i = 0; i < n; i++) {
            if (s[i] < '0' || s[i] > '9')
                return -1;
            x = x * 10 + (uint64_t)(s[i] - '0');
        }
    }
    *v = x;
    return 0;
}

/* 1 and the dotted quad in out when s is an IPv4 address in any inet_aton
 * spelling (1–4 parts, decimal, octal or hex), else 0. */
static int ipv4_canon(const char *s, size_t n, char *out)
{
    uint64_t part[4];
    size_t np = 0, i = 0;
    if (n == 0)
        return 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != '.')
            j++;
        if (np == 4 || parse_num_part(s + i, j - i, &part[np]) < 0)
            return 0;
        np++;
        i = j + 1;
    }
    uint64_t addr = 0;
    for (size_t k = 0; k + 1 < np; k++) {
        if (part[k] > 255)
            return 0;
        addr |= part[k] << (24 - 8 * k);
    }
    uint64_t lastmax = (np == 1) ? 0xffffffffULL : (1ULL << (8 * (5 - np))) - 1;
    if (part[np - 1] > lastmax)
        return 0;
    addr |= part[np - 1];
    uint32_t be = htonl((uint32_t)addr);
    return pol_addr_text(AF_INET, &be, out, 16) == 0;
}

static int ipv6_canon(const char *s, char *out)
{
    struct in6_addr a;
    if (inet_pton(AF_INET6, s, &a) != 1)
        return 0;
    /* ::ffff:a.b.c.d, ::a.b.c.d and 64:ff9b::a.b.c.d are matched as the
     * IPv4 address they reach, :: as ::1 (address.c) */
    return pol_addr_text(AF_INET6, &a, out, INET6_ADDRSTRLEN) == 0;
}

/* LDH + underscore labels separated by single dots; glob allows '*'. */
static int name_ok(const char *s, int glob)
{
    size_t label = 0;
    if (!*s)
        return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '.') {
            if (label == 0)
                return 0;
            label = 0;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              (glob && c == '*')))
            return 0;
        label++;
    }
    return label > 0;
}

int pol_host_normalize(const char *host, size_t len, char *out, const char **why)
{
    char buf[POL_HOST_MAX + 2];
    const char *s = host;
    size_t n = len;
    int bracketed = 0;
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
        bracketed = 1;
    }
    if (n == 0) {
        *why = "empty host";
        return -1;
    }
    if (n > POL_HOST_MAX + 1) {
        *why = "host name longer than 253 bytes";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            *why = "host is not ASCII (IDN hosts must arrive in their xn-- form)";
            return -1;
        }
        if (c == 0 || c < 0x20 || c == 0x7f) {
            *why = "host contains a control byte";
            return -1;
        }
        buf[i] = (char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    buf[n] = '\0';
    if (!bracketed && n > 1 && buf[n - 1] == '.')
        buf[--n] = '\0';
    if (n > POL_HOST_MAX) {
        *why = "host name longer than 253 bytes";
        return -1;
    }
    if (bracketed || memchr(buf, ':', n)) {
        if (memchr(buf, '%', n)) {
            *why = "IPv6 zone ids are not accepted";
            return -1;
        }
        if (!ipv6_canon(buf, out)) {
            *why = "not a valid IPv6 address";
            return -1;
        }
        return 0;
    }
    if (ipv4_canon(buf, n, out))
        return 0;
    if (!name_ok(buf, 0)) {
        *why = "non-canonical host (not an LDH/underscore name or IP literal)";
        return -1;
    }
    memcpy(out, buf, n + 1);
    return 0;
}

/* ---- egress patterns ---------------------------------------------------- */

static size_t star_runs(const char *s, size_t n)
{
    size_t runs = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '*' && (i == 0 || s[i - 1] != '*'))
            runs++;
    return runs;
}

/* Normalizes a host glob taken from a pattern. ipv6: written bracketed or
 * with two or more colons. out holds POL_HOST_MAX + 1 bytes. */
static int host_pattern_norm(const char *h, size_t n, int ipv6, char *out, const char **why)
{
    char buf[POL_MAX_PATTERN + 1];
    if (n == 0) {
        *why = "empty host";
        return -1;
    }
    if (n > POL_MAX_PATTERN) {
        *why = "pattern longer than the cap";
        return -1;
    }
    if (star_runs(h, n) > POL_MAX_STARS) {
        *why = "too many '*' in one pattern";
        return -1;
    }
    /* brackets hold an IPv6 address: "[example.com]" is refused, and so is a
     * colon-less glob such as "[*.]", whose bracket-less re-rendering "*."
     * would parse as a different (name) pattern */
    if (ipv6 && !memchr(h, ':', n)) {
        *why = "brackets hold an IPv6 address; write a host name or name glob without them";
        return -1;
    }
    if (ipv6) {
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)h[i];
            c = (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.' ||
                  c == '*')) {
                *why = "not a valid IPv6 address";
                return -1;
            }
            buf[i] = (char)c;
        }
        buf[n] = '\0';
        if (!memchr(buf, '*', n)) {
            if (!ipv6_canon(buf, out)) {
                *why = "not a valid IPv6 address";
                return -1;
            }
            return 0;
        }
        if (n > POL_HOST_MAX) {
            *why = "host longer than 253 bytes";
            return -1;
        }
        memcpy(out, buf, n + 1);
        return 0;
    }
    /* names: drop one trailing dot, then IDNA label by label */
    if (n > 1 && h[n - 1] == '.')
        n--;
    strbuf acc = SB_INIT;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && h[j] != '.')
            j++;
        int nonascii = 0, star = 0;
        for (size_t k = i; k < j; k++) {
            nonascii |= (unsigned char)h[k] >= 0x80;
            star |= h[k] == '*';
        }
        if (acc.len)
            sb_addc(&acc, '.');
        if (nonascii) {
            if (star) {
                sb_release(&acc);
                *why = "a label mixing '*' with Unicode cannot be converted to xn-- form";
                return -1;
            }
            char lab[POL_MAX_PATTERN + 1];
            memcpy(lab, h + i, j - i);
            lab[j - i] = '\0';
            const struct idn2_api *idn = idn2_load();
            if (!idn) {
                sb_release(&acc);
                *why = "a Unicode label needs libidn2 to be converted to xn-- form, and it "
                       "could not be loaded (install Debian's libidn2-0)";
                return -1;
            }
            char *ascii = NULL;
            int rc = idn->to_ascii_8z(lab, &ascii, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
            if (rc != IDN2_OK) {
                sb_release(&acc);
                *why = "Unicode label is not a valid internationalized name";
                return -1;
            }
            sb_adds(&acc, ascii);
            idn->free(ascii);
        } else {
            for (size_t k = i; k < j; k++) {
                unsigned char c = (unsigned char)h[k];
                sb_addc(&acc, (char)((c >= 'A' && c <= 'Z') ? c + 32 : c));
            }
        }
        if (j >= n)
            break;
        i = j + 1;
    }
    if (acc.len > POL_HOST_MAX) {
        sb_release(&acc);
        *why = "host longer than 253 bytes";
        return -1;
    }
    if (!name_ok(acc.buf, 1)) {
        sb_release(&acc);
        *why = "hosts may contain only letters, digits, '-', '_', '.', and '*' (no empty labels)";
        return -1;
    }
    if (memchr(acc.buf, '*', acc.len) || !ipv4_canon(acc.buf, acc.len, out))
        memcpy(out, acc.buf, acc.len + 1);
    sb_release(&acc);
    return 0;
}

static int parse_port(const char *s, size_t n, uint16_t *port, int *star, const char **why)
{
    *star = 0;
    *port = 0;
    if (n == 0) {
        *why = "empty port after ':'";
        return -1;
    }
    if (n == 1 && s[0] == '*') {
        *star = 1;
        return 0;
    }
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || i >= 5) {
            *why = "port must be a number 1-65535 or *";
            return -1;
        }
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535) {
        *why = "port must be a number 1-65535 or *";
        return -1;
    }
    *port = (uint16_t)v;
    return 0;
}

int pol_egress_parse(const char *entry, char *host, uint16_t *port, char *canon, const char **why)
{
    size_t n = strlen(entry);
    int star = 0, ipv6 = 0;
    const char *h = entry;
    size_t hn = n;
    *port = 0;
    if (n == 0) {
        *why = "empty pattern";
        return -1;
    }
    if (n > POL_MAX_PATTERN) {
        *why = "pattern longer than the cap";
        return -1;
    }
    if (strstr(entry, "://")) {
        *why = "a URL is not a host pattern; write the host, e.g. api.example.com:443";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)entry[i];
        if (is_space(c) || c < 0x20 || c == 0x7f) {
            *why = "whitespace or control bytes in a host pattern";
            return -1;
        }
        if (c == '/' || c == '@' || c == '?' || c == '#' || c == '%' || c == '\\') {
            *why = "'/', '@', '?', '#', '%' and '\\' belong to URLs, not host patterns";
            return -1;
        }
    }
    if (entry[0] == '[') {
        const char *close = strchr(entry, ']');
        if (!close) {
            *why = "unclosed '['";
            return -1;
        }
        h = entry + 1;
        hn = (size_t)(close - h);
        ipv6 = 1;
        const char *rest = close + 1;
        if (*rest) {
            if (*rest != ':') {
                *why = "junk after ']'";
                return -1;
            }
            if (parse_port(rest + 1, strlen(rest + 1), port, &star, why) < 0)
                return -1;
        }
        if (memchr(h, '[', hn) || strchr(rest, '[') || strchr(rest, ']')) {
            *why = "stray bracket";
            return -1;
        }
    } else {
        if (strchr(entry, ']') || strchr(entry, '[')) {
            *why = "stray bracket";
            return -1;
        }
        size_t colons = 0;
        for (size_t i = 0; i < n; i++)
            colons += entry[i] == ':';
        if (colons == 1) {
            const char *c = strchr(entry, ':');
            hn = (size_t)(c - entry);
            if (parse_port(c + 1, n - hn - 1, port, &star, why) < 0)
                return -1;
        } else if (colons >= 2) {
            ipv6 = 1;
        }
    }
    if (host_pattern_norm(h, hn, ipv6, host, why) < 0)
        return -1;
    if (strchr(host, ':'))
        snprintf(canon, POL_MAX_PATTERN + 1, "[%s]", host);
    else
        snprintf(canon, POL_MAX_PATTERN + 1, "%s", host);
    size_t cl = strlen(canon);
    if (star)
        snprintf(canon + cl, POL_MAX_PATTERN + 1 - cl, ":*");
    else if (*port)
        snprintf(canon + cl, POL_MAX_PATTERN + 1 - cl, ":%u", (unsigned)*port);
    return 0;
}

/* ---- names -------------------------------------------------------------- */

int pol_tool_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* The prefixes of the [policy.tools] entries that govern an upstream's
 * prompts and resources (docs/policy.md, "Prompts and resources"). */
#define PROMPT_PFX "prompt:"
#define RESOURCE_PFX "resource:"

static int has_pfx(const char *s, size_t n, const char *pfx)
{
    size_t k = strlen(pfx);
    return n >= k && memcmp(s, pfx, k) == 0;
}

/* Printable ASCII without space: every byte a URI may hold. */
static int uri_bytes_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

int pol_tool_subject_ok(const char *s, size_t n)
{
    if (has_pfx(s, n, PROMPT_PFX))
        return pol_tool_name_ok(s + strlen(PROMPT_PFX), n - strlen(PROMPT_PFX));
    if (has_pfx(s, n, RESOURCE_PFX))
        return n > strlen(RESOURCE_PFX) && n <= POL_MAX_PATTERN &&
               uri_bytes_ok(s + strlen(RESOURCE_PFX), n - strlen(RESOURCE_PFX));
    return pol_tool_name_ok(s, n);
}

int pol_ref_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 256 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

int pol_entry_parse(enum pol_dim dim, const char *entry, char *canon, char *pat, uint16_t *port,
                    const char **why)
{
    size_t n = strlen(entry);
    *port = 0;
    if (dim == POL_EGRESS) {
        if (pol_egress_parse(entry, pat, port, canon, why) < 0)
            return -1;
        return 0;
    }
    if (n == 0) {
        *why = "empty pattern (it could only match an empty name)";
        return -1;
    }
    if (n > POL_MAX_PATTERN) {
        *why = "pattern longer than the cap";
        return -1;
    }
    if (star_runs(entry, n) > POL_MAX_STARS) {
        *why = "too many '*' in one pattern";
        return -1;
    }
    size_t from = 0;
    if (dim == POL_TOOLS && has_pfx(entry, n, RESOURCE_PFX)) {
        if (n == strlen(RESOURCE_PFX) || !uri_bytes_ok(entry, n)) {
            *why = "resource patterns are \"resource:\" and a URI glob of printable ASCII "
                   "without spaces (no resource URI contains anything else)";
            return -1;
        }
        from = n;
    } else if (dim == POL_TOOLS && has_pfx(entry, n, PROMPT_PFX)) {
        if (n == strlen(PROMPT_PFX)) {
            *why = "a prompt pattern names a prompt after \"prompt:\"";
            return -1;
        }
        from = strlen(PROMPT_PFX);
    }
    for (size_t i = from; i < n; i++) {
        unsigned char c = (unsigned char)entry[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '*';
        if (dim == POL_TOOLS)
            ok |= c == '.' || c == '-';
        if (!ok) {
            *why = dim == POL_TOOLS
                       ? "tool patterns may contain only letters, digits, '_', '.', '-' and '*' "
                         "(no tool name contains anything else, so it could never match), "
                         "after an optional \"prompt:\" or \"resource:\""
                       : "secret patterns may contain only letters, digits, '_' and '*' "
                         "(no ${REF} name contains anything else, so it could never match)";
            return -1;
        }
    }
    memcpy(canon, entry, n + 1);
    memcpy(pat, entry, n + 1);
    return 0;
}

/* Valid UTF-8 (no overlongs, no surrogates). */
static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1;
            min = 0x80;
            c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2;
            min = 0x800;
            c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3;
            min = 0x10000;
            c &= 0x07;
        } else {
            return 0;
        }
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xc0) != 0x80)
                return 0;
            c = (c << 6) | (s[i + j] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

int pol_fs_glob_check(const char *glob, size_t len, const char **why)
{
    if (len == 0) {
        *why = "empty glob";
        return -1;
    }
    if (len > POL_MAX_FS_PATTERN) {
        *why = "glob longer than 4096 bytes";
        return -1;
    }
    if (memchr(glob, '\0', len)) {
        *why = "glob contains a NUL byte";
        return -1;
    }
    if (!utf8_ok((const unsigned char *)glob, len)) {
        *why = "glob is not valid UTF-8";
        return -1;
    }
    if (star_runs(glob, len) > POL_MAX_STARS) {
        *why = "too many '*' in one glob";
        return -1;
    }
    if (glob[0] == '~' && len > 1 && glob[1] != '/') {
        *why = "'~user' is not expanded; write the absolute path";
        return -1;
    }
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && glob[j] != '/')
            j++;
        if (j - i == 2 && glob[i] == '.' && glob[i + 1] == '.') {
            *why = "'..' in a filesystem glob (paths are resolved before matching, so it could "
                   "never match)";
            return -1;
        }
        i = j + 1;
    }
    return 0;
}
