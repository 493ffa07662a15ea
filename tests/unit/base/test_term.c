/* term: the colour decision (NO_COLOR, CLICOLOR_FORCE, TERM=dumb, not a
 * tty) and sanitizing hostile text before it reaches a terminal. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/wait.h>

#include "base/term.h"

static void set_env(const char *nc, const char *force, const char *term)
{
    if (nc)
        setenv("NO_COLOR", nc, 1);
    else
        unsetenv("NO_COLOR");
    if (force)
        setenv("CLICOLOR_FORCE", force, 1);
    else
        unsetenv("CLICOLOR_FORCE");
    if (term)
        setenv("TERM", term, 1);
    else
        unsetenv("TERM");
}

static void test_color_decision(void **st)
{
    (void)st;
    /* a pipe is never a terminal */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(term_isatty(fds[1]), 0);
    set_env(NULL, NULL, "xterm");
    assert_int_equal(term_use_color(fds[1]), 0);
    assert_string_equal(term_color(fds[1], TERM_RED), "");
    /* CLICOLOR_FORCE=1 forces colour even off a terminal */
    set_env(NULL, "1", "xterm");
    assert_int_equal(term_use_color(fds[1]), 1);
    assert_string_equal(term_color(fds[1], TERM_RED), "\033[31m");
    assert_string_equal(term_color(fds[1], TERM_RESET), "\033[0m");
    assert_string_equal(term_color(fds[1], (enum term_code)99), "");
    /* only "1" forces */
    set_env(NULL, "0", "xterm");
    assert_int_equal(term_use_color(fds[1]), 0);
    /* NO_COLOR wins, whatever its value, even empty */
    set_env("1", "1", "xterm");
    assert_int_equal(term_use_color(fds[1]), 0);
    assert_string_equal(term_color(fds[1], TERM_BOLD), "");
    set_env("", "1", "xterm");
    assert_int_equal(term_use_color(fds[1]), 0);
    /* TERM=dumb: no colour unless forced */
    set_env(NULL, NULL, "dumb");
    assert_int_equal(term_use_color(fds[1]), 0);
    set_env(NULL, "1", "dumb");
    assert_int_equal(term_use_color(fds[1]), 1);
    set_env(NULL, NULL, NULL);
    close(fds[0]);
    close(fds[1]);
}

static char *san(const char *s, size_t len)
{
    strbuf sb = SB_INIT;
    term_sanitize(&sb, s, len);
    return sb_detach(&sb, NULL);
}
#define SAN(lit) san(lit, sizeof(lit) - 1)

static void test_sanitize(void **st)
{
    (void)st;
    char *r;
    /* plain text and visible UTF-8 pass as they are */
    r = SAN("plain text \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \"q\" \\b");
    assert_string_equal(r, "plain text \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \"q\" \\b");
    free(r);
    /* ESC cannot start a sequence: colours, cursor moves, OSC titles are
     * shown, escaped, never run */
    r = SAN("a\033[31mred\033[2J\033]0;title\007b");
    assert_null(strchr(r, '\033'));
    assert_null(strchr(r, '\007'));
    assert_string_equal(r, "a\\u001b[31mred\\u001b[2J\\u001b]0;title\\u0007b");
    free(r);
    /* CR, newline and tab cannot rewrite or fake lines, or pass for spaces;
     * DEL; NUL */
    r = SAN("ok\rfake\nline\tx\x7f\0end");
    assert_string_equal(r, "ok\\rfake\\nline\\tx\\u007f\\u0000end");
    free(r);
    /* C1 controls encoded as UTF-8 (U+009B is a CSI on some terminals) */
    r = SAN("x\xc2\x9b"
            "1m");
    assert_string_equal(r, "x\\u009b1m");
    free(r);
    /* bidi overrides and isolates (Trojan Source) are shown, not obeyed */
    r = SAN("admin\xe2\x80\xae"
            "txt.exe\xe2\x80\xac \xe2\x81\xa6x\xe2\x81\xa9");
    assert_string_equal(r, "admin\\u202etxt.exe\\u202c \\u2066x\\u2069");
    free(r);
    /* zero-width characters and BOM are shown: "./server<ZWSP>.py" never
     * reads as "./server.py" */
    r = SAN("./server\xe2\x80\x8b.py a\xe2\x80\x8c"
            "b\xe2\x80\x8d"
            "c\xef\xbb\xbf"
            "d\xe2\x81\xa0"
            "e\xc2\xad"
            "f");
    assert_string_equal(r, "./server\\u200b.py a\\u200cb\\u200dc\\ufeffd\\u2060e\\u00adf");
    free(r);
    /* tag characters (invisible ASCII smuggling), astral: eight digits */
    r = SAN("hi\xf3\xa0\x81\x81\xf3\xa0\x81\x82");
    assert_string_equal(r, "hi\\U000e0041\\U000e0042");
    free(r);
    /* variation selectors, fillers, separators, and spaces that pass for
     * U+0020 */
    r = SAN("a\xef\xb8\x8f"
            "b\xe3\x85\xa4"
            "c\xe2\x80\xa8"
            "d\xc2\xa0"
            "e\xe2\x80\x82"
            "f\xe3\x80\x80"
            "g");
    assert_string_equal(r, "a\\ufe0fb\\u3164c\\u2028d\\u00a0e\\u2002f\\u3000g");
    free(r);
    /* invalid UTF-8: stray continuation, truncated sequence, overlong,
     * surrogate, above U+10FFFF, raw C1 byte — each byte shown */
    r = SAN("a\x80"
            "b\xe2\x82"
            "c\xc0\xaf"
            "d\xed\xa0\x80"
            "e\xf4\x90\x80\x80"
            "f\x9b");
    assert_null(strchr(r, '\x80'));
    assert_string_equal(r,
                        "a\\x80b\\xe2\\x82c\\xc0\\xafd\\xed\\xa0\\x80e\\xf4\\x90\\x80\\x80f\\x9b");
    free(r);
    /* sanitizing twice changes nothing */
    r = SAN("x\xe2\x80\x8by\n\x1b\x80");
    char *r2 = san(r, strlen(r));
    assert_string_equal(r, r2);
    free(r2);
    free(r);
    /* the hidden set names what it hides */
    assert_string_equal(term_hidden_label(0x200B), "zero-width space");
    assert_string_equal(term_hidden_label(0x202E), "bidi control");
    assert_string_equal(term_hidden_label(0xE0041), "unicode tag character");
    assert_null(term_hidden_label('a'));
    assert_null(term_hidden_label(0xFE0F)); /* a variation selector: escaped, not hidden */
    assert_null(term_hidden_label(0xE9));
    /* appends */
    strbuf sb = SB_INIT;
    sb_adds(&sb, ">");
    term_sanitize(&sb, "x", 1);
    term_sanitize(&sb, "", 0);
    assert_string_equal(sb.buf, ">x");
    sb_release(&sb);
}

static void test_json_visible(void **st)
{
    (void)st;
    strbuf sb = SB_INIT;
    sb_adds(&sb,
            "{\"a\":\"./server\xe2\x80\x8b.py\",\"t\":\"x\xf3\xa0\x81\x81\",\"e\":\"\xc3\xa9\"}");
    term_json_visible(&sb);
    assert_string_equal(
        sb.buf, "{\"a\":\"./server\\u200b.py\",\"t\":\"x\\udb40\\udc41\",\"e\":\"\xc3\xa9\"}");
    sb_reset(&sb);
    sb_adds(&sb, "[1,\"plain\"]");
    term_json_visible(&sb);
    assert_string_equal(sb.buf, "[1,\"plain\"]");
    sb_release(&sb);
}

static void test_escape_len(void **st)
{
    (void)st;
    static const struct {
        const char *s;
        size_t want;
    } cases[] = {
        {"\x1b", 1},               /* ESC alone at the end */
        {"\x1b[31mred", 5},        /* CSI: up to the final byte */
        {"\x1b[1;2;3", 7},         /* CSI never finished: to the end */
        {"\x1b]0;title\x07x", 10}, /* OSC ended by BEL */
        {"\x1b]8;;u\x1b\\x", 8},   /* OSC ended by ST */
        {"\x1bPdata", 6},          /* DCS never finished */
        {"\x1b(Bx", 3},            /* nF: intermediate, then a final */
        {"\x1b#", 2},              /* nF without a final: to the end */
        {"\0337x", 2},             /* any other: ESC and one byte (octal: ESC, '7') */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(term_escape_len((const unsigned char *)cases[i].s, strlen(cases[i].s)),
                         cases[i].want);
}

static void test_sbprintf(void **st)
{
    (void)st;
    strbuf sb = SB_INIT;
    /* every %s is sanitized; the format's own newline stays */
    term_sbprintf(&sb, "name %s in %s\n", "a\x1b]0;T\x07\x1b[31mb", "dir\nx");
    assert_string_equal(sb.buf, "name a\\u001b]0;T\\u0007\\u001b[31mb in dir\\nx\n");
    /* numbers, widths, precision, '*', %c, %%, %n refused */
    sb_reset(&sb);
    int n = 7;
    term_sbprintf(&sb, "%d|%5zu|%-4s|%4s|%.2s|%*s|%-*d|%c%c|%%|%x|%ld|%lld%n|%.3f|%.*s", -3,
                  (size_t)42, "ab", "cd", "xyz", 3, "e", 3, 9, 'q', '\a', 255u, -5L, 6LL, &n, 1.5,
                  2, "\x1bzz");
    assert_string_equal(sb.buf, "-3|   42|ab  |  cd|xy|  e|9  |q\\u0007|%|ff|-5|6|1.500|\\u001bz");
    assert_int_equal(n, 7); /* %n writes nothing */
    /* a negative '*' width is left-justification */
    sb_reset(&sb);
    term_sbprintf(&sb, "[%*s]", -3, "a");
    assert_string_equal(sb.buf, "[a  ]");
    /* term_color's sequences pass; the same bytes from elsewhere do not */
    setenv("CLICOLOR_FORCE", "1", 1);
    unsetenv("NO_COLOR");
    char fake[8];
    strcpy(fake, "\033[31m");
    sb_reset(&sb);
    term_sbprintf(&sb, "%s%s%s", term_color(1, TERM_RED), fake, term_color(1, TERM_RESET));
    assert_string_equal(sb.buf, "\033[31m\\u001b[31m\033[0m");
    unsetenv("CLICOLOR_FORCE");
    /* term_fputs: sanitized, no newline added, NULL as nothing */
    char *mem = NULL;
    size_t memlen = 0;
    FILE *f = open_memstream(&mem, &memlen);
    term_fputs("x\ny\x1b", f);
    term_fputs(NULL, f);
    fclose(f);
    assert_string_equal(mem, "x\\ny\\u001b");
    free(mem);
    sb_release(&sb);
}

static void test_read_secret_without_tty(void **st)
{
    (void)st;
    /* in a new session there is no controlling terminal: -1, no hang */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setsid() < 0)
            _exit(2);
        strbuf sb = SB_INIT;
        int rc = term_read_secret("secret: ", &sb);
        _exit(rc == -1 && sb.len == 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_color_decision), cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_escape_len),     cmocka_unit_test(test_json_visible),
        cmocka_unit_test(test_sbprintf),       cmocka_unit_test(test_read_secret_without_tty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
