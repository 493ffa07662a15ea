/* Shared CLI helpers: error printing, usage, did-you-mean. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/suggest.h"
#include "base/term.h"
#include "cli/cli.h"
#include "library/library.h"

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

const char *cli_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
    return suggest_closest(word, candidates, n);
}

/* The central library, or NULL when sources.toml cannot be used: then no
 * library name resolves (validation says which) and the rest still runs. */
struct library *cli_open_library(void)
{
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        char buf[4096];
        fprintf(stderr, "warning: the central library cannot be read: %s\n",
                as_err_str(&err, buf, sizeof buf));
        if (err.hint[0])
            fprintf(stderr, "  %s\n", err.hint);
        return NULL;
    }
    for (size_t i = 0; i < lib->warnings.n; i++)
        fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
    return lib;
}
