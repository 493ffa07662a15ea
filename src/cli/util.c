/* Shared CLI helpers: error printing, usage, did-you-mean. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/term.h"
#include "cli/cli.h"

void cli_error(const struct as_err *err)
{
    char buf[4096];
    as_err_str(err, buf, sizeof buf);
    fprintf(stderr, "%serror:%s %s\n", term_color(2, TERM_RED), term_color(2, TERM_RESET), buf);
    if (err->hint[0])
        fprintf(stderr, "  %s\n", err->hint);
}

void cli_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%serror:%s ", term_color(2, TERM_RED), term_color(2, TERM_RESET));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (cmd)
        fprintf(stderr, "see 'agentstack %s --help'\n", cmd);
    else
        fprintf(stderr, "see 'agentstack help'\n");
    return EXIT_USAGE;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int cli_print_usage(const struct cli_command *c)
{
    fputs(c->usage, stdout);
    return EXIT_OK;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t m = sub < del ? sub : del;
            cur[j] = m < ins ? m : ins;
        }
        memcpy(prev, cur, sizeof(size_t) * (lb + 1));
    }
    return prev[lb];
}

const char *cli_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}
