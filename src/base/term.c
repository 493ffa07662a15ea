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

/* Code points that reorder text, render as nothing, or break lines behind
 * the terminal's back: removed so hidden text cannot pass for visible. */
static int invisible(uint32_t c)
{
    return (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
           (c >= 0x2060 && c <= 0x2069) || c == 0xFEFF || c == 0x061C ||
           (c >= 0xE0000 && c <= 0xE007F) || c == 0x00AD || c == 0x180E || c == 0x2028 ||
           c == 0x2029 || c == 0x115F || c == 0x1160 || c == 0x3164 || c == 0xFFA0 ||
           (c >= 0xFFF9 && c <= 0xFFFB);
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
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (!n) {
            sb_adds(out, "\xEF\xBF\xBD");
            i++;
            continue;
        }
        if ((cp < 0x20 && cp != '\t') || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
            sb_addc(out, '?');
        else if (!invisible(cp))
            sb_add(out, p + i, n);
        i += n;
    }
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
        sb_addf(out, spec, (u < 0x20 && u != '\t') || u == 0x7F ? '?' : c);
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

static int put(FILE *f, const char *fmt, va_list ap)
{
    strbuf b = SB_INIT;
    term_vsbprintf(&b, fmt, ap);
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
