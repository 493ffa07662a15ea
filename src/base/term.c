/* term — see term.h. */
#include "base/term.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/utf8.h"

int term_isatty(int fd)
{
    return isatty(fd);
}

int term_use_color(int fd)
{
    const char *nc = getenv("NO_COLOR");
    if (nc)
        return 0;
    const char *force = getenv("CLICOLOR_FORCE");
    if (force && strcmp(force, "1") == 0)
        return 1;
    const char *t = getenv("TERM");
    if (t && strcmp(t, "dumb") == 0)
        return 0;
    return isatty(fd);
}

/* term_color's sequences; term_vsbprintf knows them by address. */
static const char *const seq[] = {"\033[0m",  "\033[1m",  "\033[2m", "\033[31m",
                                  "\033[32m", "\033[33m", "\033[36m"};

const char *term_color(int fd, enum term_code code)
{
    if ((unsigned)code >= sizeof seq / sizeof *seq || !term_use_color(fd))
        return "";
    return seq[code];
}

const char *term_hidden_label(uint32_t c)
{
    switch (c) {
    case 0x200B:
        return "zero-width space";
    case 0x200C:
        return "zero-width non-joiner";
    case 0x200D:
        return "zero-width joiner";
    case 0x2060:
        return "word joiner";
    case 0xFEFF:
        return "zero-width no-break space";
    case 0x00AD:
        return "soft hyphen";
    case 0x180E:
        return "mongolian vowel separator";
    case 0x034F:
        return "combining grapheme joiner";
    case 0x200E:
    case 0x200F:
    case 0x061C:
        return "bidi mark";
    case 0x115F:
    case 0x1160:
    case 0x3164:
    case 0xFFA0:
        return "hangul filler";
    case 0x17B4:
    case 0x17B5:
        return "khmer inherent vowel";
    case 0x2028:
        return "line separator";
    case 0x2029:
        return "paragraph separator";
    default:
        break;
    }
    if (c >= 0x202A && c <= 0x202E)
        return "bidi control";
    if (c >= 0x2066 && c <= 0x2069)
        return "bidi isolate";
    if (c >= 0xE0000 && c <= 0xE007F)
        return "unicode tag character";
    if (c >= 0x2061 && c <= 0x2064)
        return "invisible operator";
    if (c == 0x2065 || (c >= 0x206A && c <= 0x206F))
        return "invisible format character";
    if ((c >= 0x180B && c <= 0x180D) || c == 0x180F)
        return "mongolian variation selector";
    if (c >= 0xFFF9 && c <= 0xFFFB)
        return "interlinear annotation";
    if ((c >= 0x1BCA0 && c <= 0x1BCA3) || (c >= 0x1D173 && c <= 0x1D17A))
        return "format control";
    if ((c >= 0xFFF0 && c <= 0xFFF8) || (c >= 0xE0080 && c <= 0xE00FF) ||
        (c >= 0xE01F0 && c <= 0xE0FFF))
        return "reserved invisible code point";
    return NULL;
}

/* Shown as an escape, never as itself: controls (tab and newline too: a
 * reviewed value that holds one must not look like two values or none),
 * the hidden set, variation selectors (they change the glyph before them,
 * or carry data in runs) and the spaces that are not U+0020 (they pass for
 * one). */
static int escaped(uint32_t c)
{
    return c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0) || term_hidden_label(c) ||
           (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xE0100 && c <= 0xE01EF) || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F ||
           c == 0x3000 || c == 0xFFFC;
}

void term_escape_cp(strbuf *out, uint32_t c)
{
    static const char hex[] = "0123456789abcdef";
    char b[10];
    size_t n;
    if (c == '\t' || c == '\n' || c == '\r') {
        b[0] = '\\';
        b[1] = c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
        n = 2;
    } else if (c <= 0xFFFF) {
        b[0] = '\\';
        b[1] = 'u';
        for (int i = 0; i < 4; i++)
            b[2 + i] = hex[(c >> (12 - 4 * i)) & 0xF];
        n = 6;
    } else {
        b[0] = '\\';
        b[1] = 'U';
        for (int i = 0; i < 8; i++)
            b[2 + i] = hex[(c >> (28 - 4 * i)) & 0xF];
        n = 10;
    }
    sb_add(out, b, n);
}

size_t term_escape_len(const unsigned char *s, size_t n)
{
    if (n < 2)
        return 1;
    size_t i;
    if (s[1] == '[') { /* CSI: parameters, intermediates, one final byte */
        for (i = 2; i < n; i++)
            if (s[i] >= 0x40 && s[i] <= 0x7E)
                return i + 1;
        return n;
    }
    if (s[1] == ']' || s[1] == 'P' || s[1] == '_' || s[1] == '^' || s[1] == 'X') {
        /* OSC / DCS / APC / PM / SOS: up to BEL or ST (ESC \) */
        for (i = 2; i < n; i++) {
            if (s[i] == 0x07)
                return i + 1;
            if (s[i] == 0x1B && i + 1 < n && s[i + 1] == '\\')
                return i + 2;
        }
        return n;
    }
    if (s[1] >= 0x20 && s[1] <= 0x2F) { /* nF: intermediates then a final */
        for (i = 2; i < n; i++)
            if (s[i] >= 0x30 && s[i] <= 0x7E)
                return i + 1;
        return n;
    }
    return 2;
}

void term_sanitize(strbuf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0; /* p[run..i) is plain text not yet copied */
    while (i < len) {
        if (p[i] >= 0x20 && p[i] < 0x7F) { /* the common case: printable ASCII */
            i++;
            continue;
        }
        unsigned cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n && !escaped(cp)) {
            i += n;
            continue;
        }
        sb_add(out, p + run, i - run);
        if (!n) { /* not UTF-8: the byte itself, visibly */
            char b[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 0xF]};
            sb_add(out, b, 4);
            i++;
        } else {
            term_escape_cp(out, cp);
            i += n;
        }
        run = i;
    }
    sb_add(out, p + run, i - run);
}

static void json_u(strbuf *out, unsigned u)
{
    static const char hex[] = "0123456789abcdef";
    char b[6] = {'\\',        'u', hex[(u >> 12) & 0xF], hex[(u >> 8) & 0xF], hex[(u >> 4) & 0xF],
                 hex[u & 0xF]};
    sb_add(out, b, 6);
}

void term_json_visible(strbuf *json)
{
    const unsigned char *p = (const unsigned char *)json->buf;
    size_t i = 0, n = json->len;
    /* fast path: nothing that is not ASCII */
    while (i < n && p[i] < 0x80)
        i++;
    if (i == n)
        return;
    strbuf out = SB_INIT;
    sb_add(&out, p, i);
    while (i < n) {
        unsigned cp;
        size_t k = p[i] < 0x80 ? 1 : utf8_decode(p + i, n - i, &cp);
        if (k > 1 && escaped(cp)) {
            if (cp > 0xFFFF) { /* a surrogate pair, as JSON writes it */
                unsigned v = cp - 0x10000;
                json_u(&out, 0xD800 + (v >> 10));
                json_u(&out, 0xDC00 + (v & 0x3FF));
            } else {
                json_u(&out, cp);
            }
        } else {
            sb_add(&out, p + i, k ? k : 1);
        }
        i += k ? k : 1;
    }
    sb_reset(json);
    sb_add(json, out.buf, out.len);
    sb_release(&out);
}

static bool is_color_seq(const char *s)
{
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++)
        if (s == seq[i])
            return true;
    return false;
}

/* One conversion, its '*' width and precision already resolved into spec,
 * printed with its one argument. The spec is built from a format the
 * compiler checked against the arguments (term_sbprintf's attribute). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void conv_one(strbuf *out, const char *spec, const char *len, char conv, va_list *ap)
{
    bool l = strcmp(len, "l") == 0, ll = strcmp(len, "ll") == 0, z = strcmp(len, "z") == 0;
    bool j = strcmp(len, "j") == 0, t = strcmp(len, "t") == 0, L = strcmp(len, "L") == 0;
    switch (conv) {
    case 'd':
    case 'i':
        if (l)
            sb_addf(out, spec, va_arg(*ap, long));
        else if (ll)
            sb_addf(out, spec, va_arg(*ap, long long));
        else if (z)
            sb_addf(out, spec, va_arg(*ap, ssize_t));
        else if (j)
            sb_addf(out, spec, va_arg(*ap, intmax_t));
        else if (t)
            sb_addf(out, spec, va_arg(*ap, ptrdiff_t));
        else
            sb_addf(out, spec, va_arg(*ap, int));
        break;
    case 'u':
    case 'o':
    case 'x':
    case 'X':
        if (l)
            sb_addf(out, spec, va_arg(*ap, unsigned long));
        else if (ll)
            sb_addf(out, spec, va_arg(*ap, unsigned long long));
        else if (z)
            sb_addf(out, spec, va_arg(*ap, size_t));
        else if (j)
            sb_addf(out, spec, va_arg(*ap, uintmax_t));
        else if (t)
            sb_addf(out, spec, va_arg(*ap, ptrdiff_t));
        else
            sb_addf(out, spec, va_arg(*ap, unsigned));
        break;
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        if (L)
            sb_addf(out, spec, va_arg(*ap, long double));
        else
            sb_addf(out, spec, va_arg(*ap, double));
        break;
    case 'p':
        sb_addf(out, spec, va_arg(*ap, void *));
        break;
    case 'c': {
        int c = va_arg(*ap, int);
        unsigned char u = (unsigned char)c;
        if (u < 0x20 || u == 0x7F || u >= 0x80) /* one byte of a control or of UTF-8 */
            term_sanitize(out, (const char *)&u, 1);
        else
            sb_addf(out, spec, c);
        break;
    }
    default: /* not reached: the format attribute admits no other */
        break;
    }
}

/* %s: the first prec bytes (all when prec < 0) sanitized, padded to width. */
static void conv_str(strbuf *out, const char *s, bool left, int width, int prec)
{
    if (!s)
        s = "(null)";
    size_t n = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
    strbuf clean = SB_INIT;
    if (is_color_seq(s))
        sb_add(&clean, s, n);
    else
        term_sanitize(&clean, s, n);
    /* printf's width counts bytes; so does this one, so columns line up as before */
    size_t pad = width > 0 && (size_t)width > clean.len ? (size_t)width - clean.len : 0;
    if (!left)
        sb_addchars(out, ' ', pad);
    sb_add(out, clean.buf, clean.len);
    if (left)
        sb_addchars(out, ' ', pad);
    sb_release(&clean);
}

void term_vsbprintf(strbuf *out, const char *fmt, va_list ap0)
{
    va_list ap;
    va_copy(ap, ap0);
    const char *p = fmt;
    while (*p) {
        const char *pct = strchr(p, '%');
        if (!pct) {
            sb_adds(out, p);
            break;
        }
        sb_add(out, p, (size_t)(pct - p));
        p = pct + 1;
        if (*p == '%') {
            sb_addc(out, '%');
            p++;
            continue;
        }
        char flags[8];
        size_t nf = 0;
        while (*p && strchr("-+ #0'", *p)) {
            if (nf < sizeof flags - 1)
                flags[nf++] = *p;
            p++;
        }
        flags[nf] = '\0';
        int width = -1, prec = -1;
        bool left = false;
        if (*p == '*') {
            width = va_arg(ap, int);
            if (width < 0) { /* a negative '*' width is the '-' flag */
                left = true;
                width = width == INT_MIN ? INT_MAX : -width;
            }
            p++;
        } else if (*p >= '0' && *p <= '9') {
            width = (int)strtol(p, (char **)&p, 10);
        }
        if (*p == '.') {
            p++;
            if (*p == '*') {
                prec = va_arg(ap, int);
                p++;
            } else {
                prec = (int)strtol(p, (char **)&p, 10);
                if (prec < 0)
                    prec = 0;
            }
        }
        left = left || strchr(flags, '-') != NULL;
        char len[3] = {0};
        size_t nl = 0;
        while (*p && strchr("hlzjtL", *p) && nl < 2)
            len[nl++] = *p++;
        char conv = *p;
        if (!conv)
            break;
        p++;
        if (conv == 's') {
            conv_str(out, va_arg(ap, const char *), left, width, prec);
            continue;
        }
        if (conv == 'n') {
            (void)va_arg(ap, void *);
            continue;
        }
        char spec[64];
        snprintf(spec, sizeof spec, "%%%s%s", flags, left && !strchr(flags, '-') ? "-" : "");
        size_t sl = strlen(spec);
        if (width >= 0)
            sl += (size_t)snprintf(spec + sl, sizeof spec - sl, "%d", width);
        if (prec >= 0)
            sl += (size_t)snprintf(spec + sl, sizeof spec - sl, ".%d", prec);
        snprintf(spec + sl, sizeof spec - sl, "%s%c", len, conv);
        conv_one(out, spec, len, conv, &ap);
    }
    va_end(ap);
}
#pragma GCC diagnostic pop

void term_sbprintf(strbuf *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    term_vsbprintf(out, fmt, ap);
    va_end(ap);
}

static bool quiet_mode;

void term_set_quiet(bool q)
{
    quiet_mode = q;
}

bool term_is_quiet(void)
{
    return quiet_mode;
}

/* A line -q holds back: a warning or a progress note on stderr. */
static bool quiet_drops(FILE *f, const strbuf *b)
{
    return quiet_mode && f == stderr &&
           (strncmp(b->buf, "warning: ", 9) == 0 || strncmp(b->buf, "→ ", strlen("→ ")) == 0);
}

__attribute__((format(printf, 2, 0))) static int put(FILE *f, const char *fmt, va_list ap)
{
    strbuf b = SB_INIT;
    term_vsbprintf(&b, fmt, ap);
    if (quiet_drops(f, &b)) {
        int n = (int)b.len;
        sb_release(&b);
        return n;
    }
    int rc = b.len && fwrite(b.buf, 1, b.len, f) != b.len ? -1 : (int)b.len;
    sb_release(&b);
    return rc;
}

int term_fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = put(f, fmt, ap);
    va_end(ap);
    return rc;
}

int term_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = put(stdout, fmt, ap);
    va_end(ap);
    return rc;
}

void term_fputs(const char *s, FILE *f)
{
    strbuf b = SB_INIT;
    if (s)
        term_sanitize(&b, s, strlen(s));
    if (b.len)
        fwrite(b.buf, 1, b.len, f);
    sb_release(&b);
}

int term_read_secret(const char *prompt, strbuf *out)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct termios old, quiet;
    if (tcgetattr(fd, &old) != 0) {
        close(fd);
        return -1;
    }
    quiet = old;
    quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    quiet.c_lflag |= ICANON;
    if (write(fd, prompt, strlen(prompt)) < 0) { /* best effort */
    }
    tcsetattr(fd, TCSAFLUSH, &quiet);
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n')
        sb_addc(out, c);
    tcsetattr(fd, TCSAFLUSH, &old);
    if (write(fd, "\n", 1) < 0) { /* best effort */
    }
    c = 0;
    close(fd);
    return 0;
}
