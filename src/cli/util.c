/* Shared CLI helpers: error printing, usage, did-you-mean, opening the library
 * and the project for a command. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/suggest.h"
#include "base/term.h"
#include "bundle/discover.h"
#include "cli/cli.h"
#include "library/library.h"
#include "trust/trust.h"

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

struct library *cli_lib_open(struct cli_lib *cl, bool lock)
{
    struct as_err err = AS_ERR_INIT;
    cl->locked = false;
    if (lock) {
        if (trust_lock(&cl->lock, &err) < 0) {
            cli_error(&err);
            return NULL;
        }
        cl->locked = true;
    }
    cl->lib = lib_open(NULL, &err);
    if (!cl->lib) {
        cli_error(&err);
        if (cl->locked)
            lock_release(&cl->lock);
        cl->locked = false;
    }
    return cl->lib;
}

void cli_lib_close(struct cli_lib *cl)
{
    if (cl->locked)
        lock_release(&cl->lock);
    cl->locked = false;
    lib_free(cl->lib);
    cl->lib = NULL;
}

int cli_with_project(struct cli_ctx *ctx, bool lib_warnings, cli_project_fn fn, const void *arg)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0 || discover_require(&p, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(&p);
        return EXIT_FAIL;
    }
    int rc = EXIT_FAIL;
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, true);
    if (lib) {
        for (size_t i = 0; lib_warnings && i < lib->warnings.n; i++)
            fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
        fflush(stdout);
        if (fn(lib, &p, arg, &err) < 0)
            cli_error(&err);
        else
            rc = EXIT_OK;
    }
    cli_lib_close(&cl);
    bundle_paths_free(&p);
    return rc;
}
