/*
 * The option parser every command runs its argv through (parse_options.h).
 *
 * One pass, left to right: each word is the command's option, a global
 * option, -h/--help, "--", or an argument. Arguments are packed to the
 * front of argv in order, so a command reads them as argv[1..argc). Every
 * error is a usage error (exit 2) printed once, here.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/suggest.h"
#include "base/term.h"
#include "base/vec.h"
#include "base/xalloc.h"
#include "cli/parse_options.h"

#define CLI_ARGS struct cli_ctx
const struct cli_option cli_global_options[] = {
    {OPT_STRING("manifest-dir", 0, manifest_dir, "DIR",
                "use the project at DIR (or DIR/.agentstack) instead of walking up from the "
                "working directory")},
    {OPT_BOOL("quiet", 'q', quiet,
              "errors and the data asked for only: no warnings, progress or reports of changes")},
    {OPT_END},
};
#undef CLI_ARGS

void (*cli_error_sink)(const char *message, const char *hint);

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf b = SB_INIT;
    term_vsbprintf(&b, fmt, ap);
    va_end(ap);
    term_fprintf(stderr, "error: %s\n", b.buf);
    if (cli_error_sink)
        cli_error_sink(b.buf, NULL);
    sb_release(&b);
    if (cmd)
        term_fprintf(stderr, "see 'agentstack %s --help'\n", cmd);
    else
        fprintf(stderr, "see 'agentstack help'\n");
    return EXIT_USAGE;
}

const char *cli_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
    const char *best = suggest_closest(word, candidates, n);
    if (best)
        return best;
    /* Not a typo but the start of one name ("--allow" for
     * "--allow-unresolved"): that name, when it is the only one. */
    size_t len = strlen(word), hits = 0;
    if (len < 3 + (word[0] == '-' ? 2 : 0))
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(candidates[i], word, len) == 0 && candidates[i][len]) {
            best = candidates[i];
            hits++;
        }
    return hits == 1 ? best : NULL;
}

const struct cli_spec *cli_find_sub(const struct cli_spec *spec, const char *name)
{
    for (const struct cli_spec *const *s = spec->subs; s && *s; s++) {
        const char *own = strrchr((*s)->name, ' ');
        if (strcmp(own ? own + 1 : (*s)->name, name) == 0)
            return *s;
    }
    return NULL;
}

int cli_no_arguments(const struct cli_spec *spec, int argc, char **argv)
{
    if (argc > 1)
        return cli_usage_error(spec->name, "unexpected argument '%s'", argv[1]);
    return CLI_CONTINUE;
}

/* ---- one option ------------------------------------------------------------------------- */

static void *field(void *base, size_t off)
{
    return (char *)base + off;
}

static bool names(const struct cli_option *o, const char *name, size_t len)
{
    return (o->long_name && strlen(o->long_name) == len && memcmp(o->long_name, name, len) == 0) ||
           (o->alias && strlen(o->alias) == len && memcmp(o->alias, name, len) == 0);
}

static const struct cli_option *find_long(const struct cli_option *opts, const char *name,
                                          size_t len)
{
    for (const struct cli_option *o = opts; o && o->type != CLI_OPT_END; o++)
        if (names(o, name, len))
            return o;
    return NULL;
}

static const struct cli_option *find_short(const struct cli_option *opts, char c)
{
    for (const struct cli_option *o = opts; o && o->type != CLI_OPT_END; o++)
        if (o->short_name && o->short_name == c)
            return o;
    return NULL;
}

static bool takes_value(const struct cli_option *o)
{
    return o->type == CLI_OPT_STRING || o->type == CLI_OPT_LIST || o->type == CLI_OPT_INT ||
           o->type == CLI_OPT_ENUM;
}

/* "a, b or c" */
static void choice_list(strbuf *out, const struct cli_choice *c)
{
    size_t n = 0;
    while (c[n].name)
        n++;
    for (size_t i = 0; i < n; i++)
        sb_addf(out, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", c[i].name);
}

static int bad_choice(const char *cmd, const char *flag, const struct cli_option *o,
                      const char *val)
{
    const char *names[32];
    size_t n = 0;
    for (const struct cli_choice *c = o->choices; c->name && n < 32; c++)
        names[n++] = c->name;
    const char *best = cli_did_you_mean(val, names, n);
    strbuf list = SB_INIT;
    choice_list(&list, o->choices);
    if (best)
        cli_usage_error(cmd, "%s must be %s (got '%s'; did you mean '%s'?)", flag, list.buf, val,
                        best);
    else
        cli_usage_error(cmd, "%s must be %s (got '%s')", flag, list.buf, val);
    sb_release(&list);
    return EXIT_USAGE;
}

/* Stores val (NULL: none given) for option o, spelled flag on the command line. */
static int store(const char *cmd, const char *flag, const struct cli_option *o, const char *val,
                 void *base)
{
    void *p = field(base, o->off);
    if (o->seen)
        *(bool *)field(base, o->seen - 1) = true;
    switch (o->type) {
    case CLI_OPT_BOOL:
        *(bool *)p = true;
        return 0;
    case CLI_OPT_SET:
        *(int *)p = o->set_value;
        return 0;
    case CLI_OPT_STRING: {
        const char **s = p;
        if (val && (o->flags & CLI_OPT_ONCE) && *s && strcmp(*s, val) != 0)
            return cli_usage_error(cmd, "%s was given twice ('%s' and '%s'): give one", flag, *s,
                                   val);
        if (val)
            *s = val;
        return 0;
    }
    case CLI_OPT_LIST:
        if (val)
            strvec_push(p, val);
        return 0;
    case CLI_OPT_INT: {
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        if (!*val || *end || errno || v < o->lo || v > o->hi) {
            if (o->hi == LONG_MAX)
                return cli_usage_error(cmd, "%s needs a whole number of at least %ld (got '%s')",
                                       flag, o->lo, val);
            return cli_usage_error(cmd, "%s needs a whole number from %ld to %ld (got '%s')", flag,
                                   o->lo, o->hi, val);
        }
        *(long *)p = v;
        return 0;
    }
    case CLI_OPT_ENUM:
        for (const struct cli_choice *c = o->choices; c->name; c++)
            if (strcmp(c->name, val) == 0) {
                *(int *)p = c->value;
                return 0;
            }
        return bad_choice(cmd, flag, o, val);
    case CLI_OPT_END:
        break;
    }
    return 0;
}

/* The option o found at argv[*i] (spelled flag; inline is the text after
 * '=' or NULL): takes its value and stores it. */
static int take(const char *cmd, const struct cli_option *o, const char *flag, const char *inline_,
                int argc, char **argv, int *i, void *base)
{
    if (o->flags & CLI_OPT_UNBUILT)
        return cli_usage_error(cmd, "%s is not available in this build", flag);
    if (!takes_value(o)) {
        if (inline_)
            return cli_usage_error(cmd, "%s takes no value (got '%s=%s')", flag, flag, inline_);
        return store(cmd, flag, o, NULL, base);
    }
    if (inline_)
        return store(cmd, flag, o, inline_, base);
    if (o->flags & CLI_OPT_OPTARG) {
        const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
        if (next && next[0] != '-')
            return store(cmd, flag, o, argv[++*i], base);
        return store(cmd, flag, o, NULL, base);
    }
    if (*i + 1 >= argc)
        return cli_usage_error(cmd, "%s needs a value (%s)", flag, o->argh ? o->argh : "VALUE");
    if (o->flags & CLI_OPT_GREEDY) {
        if (argv[*i + 1][0] == '-')
            return cli_usage_error(cmd, "%s needs at least one %s", flag,
                                   o->argh ? o->argh : "value");
        while (*i + 1 < argc && argv[*i + 1][0] != '-') {
            int rc = store(cmd, flag, o, argv[++*i], base);
            if (rc)
                return rc;
        }
        return 0;
    }
    return store(cmd, flag, o, argv[++*i], base);
}

/* "did you mean '--x'?" among the long names of the command's tables and
 * the global ones, in that order. */
static int unknown_option(const struct cli_spec *spec, const char *word)
{
    const char *cmd = spec->name;
    const struct cli_option *tables[] = {spec->common, spec->options, cli_global_options};
    strvec cands = STRVEC_INIT;
    for (size_t t = 0; t < 3; t++)
        for (const struct cli_option *o = tables[t]; o && o->type != CLI_OPT_END; o++) {
            if (o->flags & CLI_OPT_UNBUILT)
                continue;
            if (o->long_name)
                strvec_pushf(&cands, "--%s", o->long_name);
            if (o->alias)
                strvec_pushf(&cands, "--%s", o->alias);
        }
    strvec_push(&cands, "--help");
    size_t len = strcspn(word, "=");
    strbuf w = SB_INIT;
    sb_add(&w, word, len);
    const char *best =
        word[1] == '-' ? cli_did_you_mean(w.buf, (const char *const *)cands.v, cands.n) : NULL;
    int rc = best ? cli_usage_error(cmd, "unknown option '%s' (did you mean '%s'?)", w.buf, best)
                  : cli_usage_error(cmd, "unknown option '%s'", w.buf);
    sb_release(&w);
    strvec_clear(&cands);
    return rc;
}

enum match { M_NONE, M_OWN, M_GLOBAL, M_HELP };

/* Which table argv word a (an option) belongs to, the command's (spec, or
 * none) or the global one; *o and *inline_ set. */
static enum match lookup(const char *a, const struct cli_spec *spec, const struct cli_option **o,
                         const char **inline_)
{
    const struct cli_option *common = spec ? spec->common : NULL;
    const struct cli_option *own = spec ? spec->options : NULL;
    *inline_ = NULL;
    if (a[1] == '-') {
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (eq)
            *inline_ = eq + 1;
        if ((*o = find_long(common, name, len)) || (*o = find_long(own, name, len)))
            return M_OWN;
        if ((*o = find_long(cli_global_options, name, len)))
            return M_GLOBAL;
        if (len == 4 && memcmp(name, "help", 4) == 0 && !eq)
            return M_HELP;
        return M_NONE;
    }
    if (a[2])
        return M_NONE; /* one letter per word: "-vx" is not "-v -x" */
    if ((*o = find_short(common, a[1])) || (*o = find_short(own, a[1])))
        return M_OWN;
    if ((*o = find_short(cli_global_options, a[1])))
        return M_GLOBAL;
    return a[1] == 'h' ? M_HELP : M_NONE;
}

static bool is_option(const char *a)
{
    return a[0] == '-' && a[1] && strcmp(a, "--") != 0;
}

int cli_take_global(const char *cmd, int argc, char **argv, int *i, struct cli_ctx *ctx)
{
    const char *a = argv[*i];
    if (!is_option(a))
        return 0;
    const struct cli_option *o;
    const char *inline_;
    switch (lookup(a, NULL, &o, &inline_)) {
    case M_HELP:
        ctx->want_help = true;
        ++*i;
        return 1;
    case M_GLOBAL: {
        strbuf flag = SB_INIT;
        sb_addf(&flag, "--%s", o->long_name);
        int rc = take(cmd, o, flag.buf, inline_, argc, argv, i, ctx);
        sb_release(&flag);
        if (rc)
            return -1;
        term_set_quiet(ctx->quiet);
        ++*i;
        return 1;
    }
    default:
        return 0;
    }
}

static void clear_lists(const struct cli_option *opts, void *args)
{
    for (const struct cli_option *o = opts; o && o->type != CLI_OPT_END; o++)
        if (o->type == CLI_OPT_LIST)
            strvec_clear(field(args, o->off));
}

int cli_parse(const struct cli_spec *spec, int *argc, char **argv, struct cli_ctx *ctx, void *args)
{
    if (ctx->want_help) {
        cli_print_help(spec, stdout);
        return EXIT_OK;
    }
    int n = *argc, out = 1;
    /* which words are arguments; afterwards they move to the front in order
     * and the options behind them, so argv keeps every pointer it had (a
     * caller may own them, as a strvec) */
    bool *arg = n > 0 ? xcalloc((size_t)n, sizeof *arg) : NULL;
    bool rest = false; /* after "--", or after the first argument when the spec says so */
    for (int i = 1; i < n; i++) {
        char *a = argv[i];
        if (rest || !is_option(a)) {
            if (!rest && strcmp(a, "--") == 0) {
                rest = true;
                if (!(spec->flags & CLI_KEEP_DASHDASH))
                    continue;
            } else if (spec->flags & CLI_STOP_AT_POSITIONAL) {
                rest = true;
            }
            arg[i] = true;
            out++;
            continue;
        }
        const struct cli_option *o;
        const char *inline_;
        enum match m = lookup(a, spec, &o, &inline_);
        int rc = 0;
        if (m == M_HELP) {
            rc = EXIT_OK;
            cli_print_help(spec, stdout);
        } else if (m == M_NONE) {
            rc = unknown_option(spec, a);
        } else {
            /* the spelling used, for messages: "--profile", "-v" */
            strbuf flag = SB_INIT;
            sb_add(&flag, a, inline_ ? (size_t)(inline_ - 1 - a) : strlen(a));
            rc = take(spec->name, o, flag.buf, inline_, n, argv, &i,
                      m == M_OWN ? args : (void *)ctx);
            sb_release(&flag);
            if (m == M_GLOBAL)
                term_set_quiet(ctx->quiet);
        }
        if (rc || m == M_HELP) {
            clear_lists(spec->common, args);
            clear_lists(spec->options, args);
            free(arg);
            return rc;
        }
    }
    if (n > 1) {
        char **tmp = xcalloc((size_t)n, sizeof *tmp);
        int k = 1;
        for (int i = 1; i < n; i++)
            if (arg[i])
                tmp[k++] = argv[i];
        for (int i = 1; i < n; i++)
            if (!arg[i])
                tmp[k++] = argv[i];
        memcpy(argv + 1, tmp + 1, (size_t)(n - 1) * sizeof *argv);
        free(tmp);
    }
    free(arg);
    *argc = out;
    return CLI_CONTINUE;
}

/* "a, b or c" of a command's subcommand names. */
static void sub_list(strbuf *out, const struct cli_spec *spec)
{
    size_t n = 0;
    while (spec->subs[n])
        n++;
    for (size_t i = 0; i < n; i++) {
        const char *own = strrchr(spec->subs[i]->name, ' ');
        sb_addf(out, "%s%s",
                i == 0       ? ""
                : i + 1 == n ? " or "
                             : ", ",
                own ? own + 1 : spec->subs[i]->name);
    }
}

int cli_dispatch(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx)
{
    int i = 1;
    for (;;) {
        if (i >= argc)
            break;
        int r = cli_take_global(spec->name, argc, argv, &i, ctx);
        if (r < 0)
            return EXIT_USAGE;
        if (r == 0)
            break;
    }
    if (i >= argc || strcmp(argv[i], "--") == 0 || is_option(argv[i])) {
        if (ctx->want_help) {
            cli_print_help(spec, stdout);
            return EXIT_OK;
        }
        strbuf list = SB_INIT;
        sub_list(&list, spec);
        if (i < argc && is_option(argv[i]))
            cli_usage_error(spec->name, "'%s' comes after the subcommand: agentstack %s <%s> %s",
                            argv[i], spec->name, list.buf, argv[i]);
        else
            cli_usage_error(spec->name, "%s needs a subcommand: %s", spec->name, list.buf);
        sb_release(&list);
        return EXIT_USAGE;
    }
    const struct cli_spec *sub = cli_find_sub(spec, argv[i]);
    if (!sub) {
        const char *names[64];
        size_t n = 0;
        for (const struct cli_spec *const *s = spec->subs; *s && n < 64; s++) {
            const char *own = strrchr((*s)->name, ' ');
            names[n++] = own ? own + 1 : (*s)->name;
        }
        const char *best = cli_did_you_mean(argv[i], names, n);
        strbuf list = SB_INIT;
        sub_list(&list, spec);
        if (best)
            cli_usage_error(spec->name, "unknown subcommand '%s' for %s — did you mean '%s'?",
                            argv[i], spec->name, best);
        else
            cli_usage_error(spec->name, "unknown subcommand '%s' for %s (%s)", argv[i], spec->name,
                            list.buf);
        sb_release(&list);
        return EXIT_USAGE;
    }
    return sub->fn(argc - i, argv + i, ctx);
}
