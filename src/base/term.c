/* term — see term.h. */
#include "base/term.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

const char *term_color(int fd, enum term_code code)
{
    static const char *seq[] = {"\033[0m",  "\033[1m",  "\033[2m", "\033[31m",
                                "\033[32m", "\033[33m", "\033[36m"};
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
