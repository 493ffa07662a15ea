/*
 * parse_options — the one option parser of the CLI (modelled on git's
 * parse-options), and the tables every command declares its options in.
 *
 * Why: each command says once, in a static table, which options it takes
 * (long and short name, kind of value, value name, one line of help). The
 * parser, `--help`, the inventory (`agentstack help --all --json`) and the
 * man pages and completions built from it all read that one table, so an
 * option cannot be parsed in one place and documented differently in
 * another, and a new command gets global options, `--help` and
 * did-you-mean without writing a loop.
 *
 * Guarantees:
 *  - global options (cli_global_options: --manifest-dir, -q/--quiet) are accepted
 *    anywhere: before the command, between a command and its subcommand,
 *    and among the command's own options and arguments;
 *  - `--opt value` and `--opt=value`; `--` ends the options; a lone `-`
 *    is an argument; a value is taken as given, even when it starts with '-';
 *  - `-h`/`--help` anywhere before `--` (and not as a value) prints the
 *    command's help, generated from its table, on stdout and exits 0;
 *  - an unknown option, a missing, superfluous or malformed value is a
 *    usage error: one "error:" line on stderr naming the closest option
 *    ("did you mean '--write'?"), then "see 'agentstack <cmd> --help'",
 *    exit 2;
 *  - tables are static data (field offsets, not pointers), so every
 *    command's options can be listed without running it.
 *
 * Depends on src/base only, so tests/unit/cli links it without the rest.
 */
#ifndef AS_CLI_PARSE_OPTIONS_H
#define AS_CLI_PARSE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* What every command receives: the global options, parsed wherever they
 * stood on the command line. */
struct cli_ctx {
    const char *manifest_dir; /* --manifest-dir, or NULL */
    bool quiet;               /* -q/--quiet: errors and asked-for data only */
    int json;                 /* set by commands that accept --json */
    bool want_help;           /* -h/--help came before the (sub)command's name */
};

/* A command or subcommand: argv[0] is its own name, argv[1..] what follows. */
typedef int (*cli_fn)(int argc, char **argv, struct cli_ctx *ctx);

enum cli_opt_type {
    CLI_OPT_END = 0, /* ends a table */
    CLI_OPT_BOOL,    /* bool field: set to true */
    CLI_OPT_SET,     /* int (or enum) field: set to set_value */
    CLI_OPT_STRING,  /* const char * field: the value (last one wins) */
    CLI_OPT_LIST,    /* strvec field: each value appended (repeatable) */
    CLI_OPT_INT,     /* long field: a decimal number within [lo, hi] */
    CLI_OPT_ENUM,    /* int (or enum) field: the value of the named choice */
};

enum {
    CLI_OPT_HIDDEN = 1 << 0,  /* parsed, but not in help or completions */
    CLI_OPT_OPTARG = 1 << 1,  /* value optional: --opt=V, or the next word
                               * when it does not start with '-' */
    CLI_OPT_GREEDY = 1 << 2,  /* LIST: every following word up to the next
                               * one starting with '-' (at least one) */
    CLI_OPT_ONCE = 1 << 3,    /* STRING: a second, different value is an error */
    CLI_OPT_UNBUILT = 1 << 4, /* known but not in this build: a usage error
                               * that says so (hidden) */
};

struct cli_choice {
    const char *name;
    int value;
};

struct cli_option {
    enum cli_opt_type type;
    const char *long_name;            /* without the leading "--" */
    char short_name;                  /* 'v' for -v, or 0 */
    size_t off;                       /* the field in the command's argument struct */
    size_t seen;                      /* 1 + offset of a bool set whenever given, or 0 */
    const char *argh;                 /* the value's name in help ("NAME"), or NULL */
    const char *help;                 /* one line, lower case, no final period */
    unsigned flags;                   /* CLI_OPT_* */
    const char *alias;                /* a second long name (a kept spelling), or NULL */
    int set_value;                    /* CLI_OPT_SET */
    long lo, hi;                      /* CLI_OPT_INT */
    const struct cli_choice *choices; /* CLI_OPT_ENUM, ended by {NULL} */
};

/* Table entries. Each file defines CLI_ARGS as its argument struct before a
 * table (and #undef's it after); the entry names a field of it, checked for
 * its type at compile time. Write each one in braces, adding fields after:
 *   {OPT_STRING("toolset", 0, toolset, "NAME", "the toolset"), .alias = "profile"}
 */
#define CLI_FIELD(f, T) (offsetof(CLI_ARGS, f) + 0 * sizeof((T *)0 == &((CLI_ARGS *)0)->f))
#define CLI_INT_FIELD(f)                                                                           \
    (offsetof(CLI_ARGS, f) + 0 * sizeof(char[sizeof(((CLI_ARGS *)0)->f) == sizeof(int) ? 1 : -1]))
#define CLI_SEEN(f) (1 + CLI_FIELD(f, bool))

#define OPT_BOOL(l, s, f, h)                                                                       \
    .type = CLI_OPT_BOOL, .long_name = l, .short_name = s, .off = CLI_FIELD(f, bool), .help = h
#define OPT_SET(l, s, f, v, h)                                                                     \
    .type = CLI_OPT_SET, .long_name = l, .short_name = s, .off = CLI_INT_FIELD(f), .set_value = v, \
    .help = h
#define OPT_STRING(l, s, f, a, h)                                                                  \
    .type = CLI_OPT_STRING, .long_name = l, .short_name = s, .off = CLI_FIELD(f, const char *),    \
    .argh = a, .help = h
#define OPT_LIST(l, s, f, a, h)                                                                    \
    .type = CLI_OPT_LIST, .long_name = l, .short_name = s, .off = CLI_FIELD(f, strvec), .argh = a, \
    .help = h
#define OPT_INT(l, s, f, a, min, max, h)                                                           \
    .type = CLI_OPT_INT, .long_name = l, .short_name = s, .off = CLI_FIELD(f, long), .argh = a,    \
    .lo = min, .hi = max, .help = h
#define OPT_ENUM(l, s, f, c, h)                                                                    \
    .type = CLI_OPT_ENUM, .long_name = l, .short_name = s, .off = CLI_INT_FIELD(f), .choices = c,  \
    .help = h
/* An option of the reference this build does not have: parsing it is a
 * usage error that says so, rather than "unknown option". */
#define OPT_UNBUILT(l)                                                                             \
    .type = CLI_OPT_BOOL, .long_name = l, .flags = CLI_OPT_UNBUILT | CLI_OPT_HIDDEN
#define OPT_END .type = CLI_OPT_END

enum {
    CLI_HIDDEN = 1 << 0,             /* callable, not listed by `help` */
    CLI_STOP_AT_POSITIONAL = 1 << 1, /* after the first argument, every word is
                                      * an argument (a command line to judge) */
    CLI_KEEP_DASHDASH = 1 << 2,      /* "--" stays among the arguments, so the
                                      * command can tell what came after it */
    CLI_JSON_ERRORS = 1 << 3,        /* with --json, a failure is a JSON document
                                      * too (cli/json_out.h, docs/json.md) */
};

/* A command or subcommand as the parser, help and the inventory see it.
 * The text fields feed `--help`, the man pages and the completions. */
struct cli_spec {
    const char *name;                   /* "lock", or "lib link" for a subcommand */
    cli_fn fn;                          /* what runs it */
    const char *summary;                /* one line: lists, man page NAME */
    const char *const *synopsis;        /* usage lines after "agentstack ", NULL-ended */
    const char *description;            /* paragraphs after the usage, or NULL */
    const struct cli_option *common;    /* options shared with other commands, or NULL */
    const struct cli_option *options;   /* its own; each table ended by CLI_OPT_END, or NULL */
    const struct cli_spec *const *subs; /* subcommands, NULL-ended, or NULL */
    const char *const *examples;        /* whole command lines, NULL-ended, or NULL */
    const char *see_also;               /* related commands, space-separated, or NULL */
    const char *alias_of;               /* the command this spelling runs, or NULL */
    const char *const *aliases;         /* the other spellings that run this code (whole
                                         * lines after "agentstack "), NULL-ended, or NULL */
    unsigned flags;                     /* CLI_HIDDEN, CLI_STOP_AT_POSITIONAL, ... */
};

/* A NULL-ended list of lines for a spec's synopsis and examples. */
#define CLI_LINES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The options every command accepts anywhere (their fields: struct cli_ctx). */
extern const struct cli_option cli_global_options[];

/* cli_parse's "go on": anything else is the exit code to return at once. */
enum { CLI_CONTINUE = -1 };

/* Parses argv[1..argc) against spec's options and the global options, into
 * args (spec's fields) and ctx (the globals). On CLI_CONTINUE, argv[1..*argc)
 * holds the arguments that are not options, in order. Otherwise it returns
 * the exit code: 0 after printing help, 2 after a usage error; then every
 * list it filled is cleared, so the caller only returns the code. */
int cli_parse(const struct cli_spec *spec, int *argc, char **argv, struct cli_ctx *ctx, void *args);

/* Runs the subcommand of a command with spec->subs: global options and
 * -h/--help may come before its name; a missing or unknown name is a usage
 * error naming the subcommands (and the closest one). */
int cli_dispatch(const struct cli_spec *spec, int argc, char **argv, struct cli_ctx *ctx);

/* Takes argv[*i] when it is a global option or -h/--help (with its value):
 * 1 and *i moved past it, 0 when it is not one, or -1 after a usage error
 * (printed; the exit code is 2). cmd names the command for the error. */
int cli_take_global(const char *cmd, int argc, char **argv, int *i, struct cli_ctx *ctx);

/* For a command that takes no arguments: CLI_CONTINUE, or a usage error
 * naming the first one (after cli_parse). */
int cli_no_arguments(const struct cli_spec *spec, int argc, char **argv);

/* The subcommand of spec named name, or NULL. */
const struct cli_spec *cli_find_sub(const struct cli_spec *spec, const char *name);

/* Usage error: prints "error: <fmt>" and "see 'agentstack <cmd> --help'"
 * (or 'agentstack help' when cmd is NULL) to stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* When set (JSON mode, cli/json_out.c), every error cli_usage_error,
 * cli_error and cli_errorf print is also handed here, without colour. */
extern void (*cli_error_sink)(const char *message, const char *hint);

/* Closest name by edit distance (<= 2) among candidates, else the one
 * candidate word is the start of (3 letters at least), or NULL. */
const char *cli_did_you_mean(const char *word, const char *const *candidates, size_t n);

/* ---- help and the inventory (usage.c) ---- */

/* The help `agentstack <spec> --help` prints: usage lines, description,
 * options, subcommands, global options, examples, related commands. */
void cli_print_help(const struct cli_spec *spec, FILE *out);
/* Tables of options (a, then b; either NULL) as help shows them, under
 * title (nothing when no option is visible). */
void cli_print_options(const char *title, const struct cli_option *a, const struct cli_option *b,
                       FILE *out);
/* spec (and its subcommands) as the inventory lists them. */
json_t *cli_spec_json(const struct cli_spec *spec);
/* Tables of options (a, then b; either NULL) as the inventory lists them
 * (hidden ones flagged). */
json_t *cli_options_json(const struct cli_option *a, const struct cli_option *b);

#endif
