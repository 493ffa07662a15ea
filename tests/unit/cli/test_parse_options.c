/*
 * The CLI's option parser (src/cli/parse_options.c) on its own: every kind
 * of option in both spellings, global options in every position, "--",
 * help, did-you-mean, and the usage errors (exit 2) with their messages.
 */
#include <limits.h>

#include "../testutil.h"

#include "base/vec.h"
#include "cli/parse_options.h"

struct args {
    bool write, verbose, seen_mode;
    const char *name, *maybe;
    strvec targets, words;
    long port;
    int scope, mode;
    bool maybe_seen;
};

enum { SCOPE_GLOBAL = 1, SCOPE_PROJECT = 2 };
static const struct cli_choice scopes[] = {
    {"global", SCOPE_GLOBAL}, {"project", SCOPE_PROJECT}, {NULL, 0}};

#define CLI_ARGS struct args
static const struct cli_option opts[] = {
    {OPT_BOOL("write", 0, write, "write it")},
    {OPT_BOOL("verbose", 'v', verbose, "say more")},
    {OPT_STRING("name", 'n', name, "N", "the name"), .alias = "label"},
    {OPT_LIST("target", 0, targets, "ID", "one target")},
    {OPT_INT("port", 0, port, "N", 1, 65535, "a port")},
    {OPT_ENUM("scope", 0, scope, scopes, "where")},
    {OPT_SET("quiet-mode", 0, mode, 7, "mode seven"), .seen = CLI_SEEN(seen_mode)},
    {OPT_STRING("maybe", 0, maybe, "V", "optional value"), .flags = CLI_OPT_OPTARG,
     .seen = CLI_SEEN(maybe_seen)},
    {OPT_LIST("words", 0, words, "W", "several words"), .flags = CLI_OPT_GREEDY},
    {OPT_STRING("secret-flag", 0, name, "X", "hidden one"), .flags = CLI_OPT_HIDDEN},
    {OPT_UNBUILT("probe")},
    {OPT_END},
};
static const struct cli_option once_opts[] = {
    {OPT_STRING("toolset", 0, name, "T", "the toolset"), .alias = "profile", .flags = CLI_OPT_ONCE},
    {OPT_END},
};
#undef CLI_ARGS

static int leaf_fn(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec spec = {
    .name = "demo",
    .fn = leaf_fn,
    .summary = "a demo command",
    .synopsis = CLI_LINES("demo [--write] NAME"),
    .options = opts,
    .examples = CLI_LINES("agentstack demo --write x"),
    .see_also = "other thing",
};
static const struct cli_spec once_spec = {.name = "once", .options = once_opts};
static const struct cli_spec stop_spec = {
    .name = "stop", .options = opts, .flags = CLI_STOP_AT_POSITIONAL};
static const struct cli_spec dash_spec = {
    .name = "dash", .options = opts, .flags = CLI_KEEP_DASHDASH};

/* ---- running the parser with stdout and stderr captured ---------------------------------- */

struct run {
    int rc;
    int argc;
    char *argv[32];
    char out[8192], err[8192];
    struct args a;
    struct cli_ctx ctx;
};

static void slurp(FILE *f, char *buf, size_t n)
{
    fflush(f);
    rewind(f);
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = '\0';
    fclose(f);
}

typedef int (*parse_call)(struct run *r, const struct cli_spec *s);

static int call_parse(struct run *r, const struct cli_spec *s)
{
    return cli_parse(s, &r->argc, r->argv, &r->ctx, &r->a);
}

static int call_dispatch(struct run *r, const struct cli_spec *s)
{
    return cli_dispatch(s, r->argc, r->argv, &r->ctx);
}

static struct run *run_with(parse_call call, const struct cli_spec *s, const char *const *words)
{
    struct run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    for (r->argc = 0; words[r->argc]; r->argc++)
        r->argv[r->argc] = (char *)words[r->argc];
    FILE *out = tmpfile(), *err = tmpfile();
    assert_non_null(out);
    assert_non_null(err);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    r->rc = call(r, s);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    slurp(out, r->out, sizeof r->out);
    slurp(err, r->err, sizeof r->err);
    return r;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A line of text starting with a and ending with b. */
static bool line_with(const char *text, const char *a, const char *b)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (n >= strlen(a) + strlen(b) && strncmp(l, a, strlen(a)) == 0 &&
            strncmp(l + n - strlen(b), b, strlen(b)) == 0)
            return true;
    }
    return false;
}

#define PARSE(s, ...) run_with(call_parse, s, (const char *const[]){__VA_ARGS__, NULL})
#define DISPATCH(s, ...) run_with(call_dispatch, s, (const char *const[]){__VA_ARGS__, NULL})

static void done(struct run *r)
{
    strvec_clear(&r->a.targets);
    strvec_clear(&r->a.words);
    free(r);
}

/* ---- option kinds -------------------------------------------------------------------------- */

static void test_both_spellings(void **state)
{
    (void)state;
    struct run *r = PARSE(&spec, "demo", "--write", "--name", "x", "--target=a", "--target", "b",
                          "--port=443", "--scope", "project", "-v");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_true(r->a.write);
    assert_true(r->a.verbose);
    assert_string_equal(r->a.name, "x");
    assert_int_equal(r->a.targets.n, 2);
    assert_string_equal(r->a.targets.v[0], "a");
    assert_string_equal(r->a.targets.v[1], "b");
    assert_int_equal(r->a.port, 443);
    assert_int_equal(r->a.scope, SCOPE_PROJECT);
    assert_int_equal(r->argc, 1);
    assert_string_equal(r->err, "");
    done(r);

    r = PARSE(&spec, "demo", "--name=", "-n", "short", "--label=al");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_string_equal(r->a.name, "al"); /* the alias names the same field; last one wins */
    done(r);
}

static void test_value_taken_as_given(void **state)
{
    (void)state;
    /* a required value is the next word even when it looks like an option */
    struct run *r = PARSE(&spec, "demo", "--name", "--write");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_string_equal(r->a.name, "--write");
    assert_false(r->a.write);
    done(r);
}

static void test_set_and_seen(void **state)
{
    (void)state;
    struct run *r = PARSE(&spec, "demo", "--quiet-mode");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_int_equal(r->a.mode, 7);
    assert_true(r->a.seen_mode);
    done(r);
}

static void test_optional_value(void **state)
{
    (void)state;
    struct run *r = PARSE(&spec, "demo", "--maybe", "--write");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_true(r->a.maybe_seen);
    assert_null(r->a.maybe);
    assert_true(r->a.write);
    done(r);
    r = PARSE(&spec, "demo", "--maybe", "pack", "rest");
    assert_string_equal(r->a.maybe, "pack");
    assert_int_equal(r->argc, 2);
    assert_string_equal(r->argv[1], "rest");
    done(r);
    r = PARSE(&spec, "demo", "--maybe=x");
    assert_string_equal(r->a.maybe, "x");
    done(r);
}

static void test_greedy_list(void **state)
{
    (void)state;
    struct run *r = PARSE(&spec, "demo", "--words", "a", "b", "c", "--write", "d");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_int_equal(r->a.words.n, 3);
    assert_string_equal(r->a.words.v[2], "c");
    assert_int_equal(r->argc, 2);
    assert_string_equal(r->argv[1], "d");
    done(r);
    r = PARSE(&spec, "demo", "--words", "--write");
    assert_int_equal(r->rc, EXIT_USAGE);
    assert_non_null(strstr(r->err, "--words needs at least one W"));
    done(r);
}

static void test_once(void **state)
{
    (void)state;
    struct run *r = PARSE(&once_spec, "once", "--toolset", "a", "--profile", "a");
    assert_int_equal(r->rc, CLI_CONTINUE);
    done(r);
    r = PARSE(&once_spec, "once", "--toolset", "a", "--profile", "b");
    assert_int_equal(r->rc, EXIT_USAGE);
    assert_non_null(strstr(r->err, "--profile was given twice ('a' and 'b')"));
    done(r);
}

/* ---- arguments, "--" ----------------------------------------------------------------------- */

static void test_arguments_in_order(void **state)
{
    (void)state;
    struct run *r = PARSE(&spec, "demo", "one", "--write", "two", "-", "--name", "n", "three");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_int_equal(r->argc, 5);
    assert_string_equal(r->argv[0], "demo");
    assert_string_equal(r->argv[1], "one");
    assert_string_equal(r->argv[2], "two");
    assert_string_equal(r->argv[3], "-"); /* a lone dash is an argument */
    assert_string_equal(r->argv[4], "three");
    /* every pointer is still in argv (a caller may own them) */
    const char *all[] = {"--write", "--name", "n"};
    for (size_t k = 0; k < 3; k++) {
        bool found = false;
        for (int i = 5; i < 8; i++)
            found = found || strcmp(r->argv[i], all[k]) == 0;
        assert_true(found);
    }
    done(r);
}

static void test_dashdash(void **state)
{
    (void)state;
    struct run *r = PARSE(&spec, "demo", "a", "--", "--write", "-v");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_false(r->a.write);
    assert_int_equal(r->argc, 4);
    assert_string_equal(r->argv[2], "--write");
    assert_string_equal(r->argv[3], "-v");
    done(r);

    r = PARSE(&dash_spec, "dash", "a", "--write", "--", "--", "-h");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_true(r->a.write);
    assert_int_equal(r->argc, 5);
    assert_string_equal(r->argv[2], "--"); /* kept: the command splits there */
    assert_string_equal(r->argv[3], "--");
    assert_string_equal(r->argv[4], "-h");
    done(r);
}

static void test_stop_at_positional(void **state)
{
    (void)state;
    struct run *r = PARSE(&stop_spec, "stop", "--write", "rm", "-rf", "--manifest-dir", "/", "-h");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_true(r->a.write);
    assert_null(r->ctx.manifest_dir);
    assert_int_equal(r->argc, 6);
    assert_string_equal(r->argv[1], "rm");
    assert_string_equal(r->argv[5], "-h");
    done(r);
}

/* ---- global options anywhere ----------------------------------------------------------------- */

static void test_global_options_anywhere(void **state)
{
    (void)state;
    const char *const lines[][8] = {
        {"demo", "--manifest-dir", "/p", "x", "--write", NULL},
        {"demo", "x", "--manifest-dir", "/p", "--write", NULL},
        {"demo", "x", "--write", "--manifest-dir", "/p", NULL},
        {"demo", "--manifest-dir=/p", "x", "--write", NULL},
        {"demo", "x", "--write", "--manifest-dir=/p", NULL},
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        struct run *r = run_with(call_parse, &spec, lines[i]);
        assert_int_equal(r->rc, CLI_CONTINUE);
        assert_non_null(r->ctx.manifest_dir);
        assert_string_equal(r->ctx.manifest_dir, "/p");
        assert_true(r->a.write);
        assert_int_equal(r->argc, 2);
        assert_string_equal(r->argv[1], "x");
        done(r);
    }
    struct run *r = PARSE(&spec, "demo", "--manifest-dir");
    assert_int_equal(r->rc, EXIT_USAGE);
    assert_non_null(strstr(r->err, "--manifest-dir needs a value (DIR)"));
    done(r);
}

static int leaf_fn(int argc, char **argv, struct cli_ctx *ctx)
{
    struct args a = {0};
    int rc = cli_parse(&spec, &argc, argv, ctx, &a);
    strvec_clear(&a.targets);
    strvec_clear(&a.words);
    if (rc != CLI_CONTINUE)
        return rc;
    printf("leaf %s %d %s\n", argv[0], argc, ctx->manifest_dir ? ctx->manifest_dir : "-");
    return 42;
}

static const struct cli_spec parent = {
    .name = "parent",
    .summary = "has subcommands",
    .subs = (const struct cli_spec *const[]){&spec, NULL},
};

static void test_dispatch(void **state)
{
    (void)state;
    struct run *r = DISPATCH(&parent, "parent", "--manifest-dir", "/p", "demo", "x");
    assert_int_equal(r->rc, 42);
    assert_string_equal(r->out, "leaf demo 2 /p\n");
    done(r);
    r = DISPATCH(&parent, "parent", "demo", "x", "--manifest-dir=/q");
    assert_int_equal(r->rc, 42);
    assert_string_equal(r->out, "leaf demo 2 /q\n");
    done(r);

    r = DISPATCH(&parent, "parent", "dmeo");
    assert_int_equal(r->rc, EXIT_USAGE);
    assert_non_null(strstr(r->err, "unknown subcommand 'dmeo' for parent — did you mean 'demo'?"));
    done(r);
    r = DISPATCH(&parent, "parent");
    assert_int_equal(r->rc, EXIT_USAGE);
    assert_non_null(strstr(r->err, "parent needs a subcommand: demo"));
    done(r);
    r = DISPATCH(&parent, "parent", "--write", "demo");
    assert_int_equal(r->rc, EXIT_USAGE);
    assert_non_null(strstr(r->err, "'--write' comes after the subcommand"));
    done(r);

    /* help before the subcommand's name is that subcommand's help */
    r = DISPATCH(&parent, "parent", "-h", "demo");
    assert_int_equal(r->rc, EXIT_OK);
    assert_true(starts_with(r->out, "usage: agentstack demo [--write] NAME\n"));
    done(r);
    r = DISPATCH(&parent, "parent", "--help");
    assert_int_equal(r->rc, EXIT_OK);
    assert_non_null(strstr(r->out, "subcommands:\n  demo  a demo command\n"));
    done(r);
}

/* ---- help ------------------------------------------------------------------------------------ */

static void test_help(void **state)
{
    (void)state;
    const char *const forms[][5] = {{"demo", "--help", NULL},
                                    {"demo", "-h", NULL},
                                    {"demo", "x", "--write", "-h"},
                                    {"demo", "--target", "a", "--help"}};
    for (size_t i = 0; i < 4; i++) {
        struct run *r = run_with(call_parse, &spec, forms[i]);
        assert_int_equal(r->rc, EXIT_OK);
        assert_string_equal(r->err, "");
        assert_true(
            starts_with(r->out, "usage: agentstack demo [--write] NAME\n\nA demo command.\n"));
        assert_non_null(strstr(r->out, "      --write               write it\n"));
        assert_non_null(strstr(r->out, "  -v, --verbose             say more\n"));
        assert_non_null(strstr(r->out, "  -n, --name N              the name (also --label)\n"));
        assert_true(line_with(r->out, "      --target ID ", " one target (repeatable)\n"));
        assert_non_null(strstr(r->out, "      --scope global|project\n" /* too long: */
                                       "                            where\n"));
        assert_non_null(strstr(r->out, "--maybe [V]"));
        assert_non_null(strstr(r->out, "--manifest-dir DIR"));
        assert_non_null(strstr(r->out, "examples:\n  agentstack demo --write x\n"));
        assert_non_null(strstr(r->out, "see also: agentstack other, agentstack thing\n"));
        assert_null(strstr(r->out, "secret-flag")); /* hidden */
        assert_null(strstr(r->out, "probe"));
        assert_int_equal(r->a.targets.n, 0); /* what was filled is cleared */
        done(r);
    }
    /* -h as a value is a value */
    struct run *r = PARSE(&spec, "demo", "--name", "-h");
    assert_int_equal(r->rc, CLI_CONTINUE);
    assert_string_equal(r->a.name, "-h");
    done(r);
    /* asked for before the command's name */
    r = calloc(1, sizeof *r);
    r->ctx.want_help = true;
    r->argc = 1;
    r->argv[0] = "demo";
    FILE *out = tmpfile();
    int so = dup(1);
    fflush(stdout);
    dup2(fileno(out), 1);
    r->rc = cli_parse(&spec, &r->argc, r->argv, &r->ctx, &r->a);
    fflush(stdout);
    dup2(so, 1);
    close(so);
    slurp(out, r->out, sizeof r->out);
    assert_int_equal(r->rc, EXIT_OK);
    assert_true(starts_with(r->out, "usage: agentstack demo"));
    done(r);
}

/* ---- usage errors ---------------------------------------------------------------------------- */

static void expect_usage(struct run *r, const char *msg)
{
    assert_int_equal(r->rc, EXIT_USAGE);
    if (!strstr(r->err, msg))
        fail_msg("stderr lacks '%s': %s", msg, r->err);
    assert_non_null(strstr(r->err, "see 'agentstack demo --help'"));
    assert_string_equal(r->out, "");
    assert_int_equal(r->a.targets.n, 0);
    done(r);
}

static void test_usage_errors(void **state)
{
    (void)state;
    expect_usage(PARSE(&spec, "demo", "--target", "a", "--wirte"),
                 "error: unknown option '--wirte' (did you mean '--write'?)");
    expect_usage(PARSE(&spec, "demo", "--manifest-dri=/x"),
                 "unknown option '--manifest-dri' (did you mean '--manifest-dir'?)");
    expect_usage(PARSE(&spec, "demo", "--zzzzzzzzzz"), "error: unknown option '--zzzzzzzzzz'\n");
    expect_usage(PARSE(&spec, "demo", "-x"), "unknown option '-x'");
    expect_usage(PARSE(&spec, "demo", "-vw"), "unknown option '-vw'");
    expect_usage(PARSE(&spec, "demo", "--name"), "--name needs a value (N)");
    expect_usage(PARSE(&spec, "demo", "--write=yes"), "--write takes no value");
    expect_usage(PARSE(&spec, "demo", "--port", "0"),
                 "--port needs a whole number from 1 to 65535 (got '0')");
    expect_usage(PARSE(&spec, "demo", "--port=44x"), "(got '44x')");
    expect_usage(PARSE(&spec, "demo", "--port", "99999999999999999999"), "from 1 to 65535");
    expect_usage(PARSE(&spec, "demo", "--scope", "globl"),
                 "--scope must be global or project (got 'globl'; did you mean 'global'?)");
    expect_usage(PARSE(&spec, "demo", "--scope=nowhere"),
                 "--scope must be global or project (got 'nowhere')");
    expect_usage(PARSE(&spec, "demo", "--probe"), "--probe is not available in this build");
}

static void test_no_arguments(void **state)
{
    (void)state;
    char *argv[] = {"demo", "extra", NULL};
    FILE *err = tmpfile();
    int se = dup(2);
    fflush(stderr);
    dup2(fileno(err), 2);
    int rc = cli_no_arguments(&spec, 2, argv);
    fflush(stderr);
    dup2(se, 2);
    close(se);
    char buf[1024];
    slurp(err, buf, sizeof buf);
    assert_int_equal(rc, EXIT_USAGE);
    assert_non_null(strstr(buf, "unexpected argument 'extra'"));
    assert_int_equal(cli_no_arguments(&spec, 1, argv), CLI_CONTINUE);
}

/* ---- the inventory --------------------------------------------------------------------------- */

static void test_inventory_json(void **state)
{
    (void)state;
    json_t *j = cli_spec_json(&parent);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "parent");
    json_t *subs = json_object_get(j, "subcommands");
    assert_int_equal(json_array_size(subs), 1);
    json_t *demo = json_array_get(subs, 0);
    json_t *o = json_object_get(demo, "options");
    assert_int_equal(json_array_size(o), sizeof opts / sizeof *opts - 1);
    json_t *name = json_array_get(o, 2);
    assert_string_equal(json_string_value(json_object_get(name, "long")), "--name");
    assert_string_equal(json_string_value(json_object_get(name, "short")), "-n");
    assert_string_equal(json_string_value(json_array_get(json_object_get(name, "aliases"), 0)),
                        "--label");
    assert_string_equal(json_string_value(json_object_get(name, "type")), "string");
    json_t *scope = json_array_get(o, 5);
    assert_int_equal(json_array_size(json_object_get(scope, "choices")), 2);
    json_t *hidden = json_array_get(o, 9);
    assert_true(json_is_true(json_object_get(hidden, "hidden")));
    json_t *probe = json_array_get(o, 10);
    assert_true(json_is_false(json_object_get(probe, "available")));
    json_t *see = json_object_get(demo, "see_also");
    assert_int_equal(json_array_size(see), 2);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_spellings),     cmocka_unit_test(test_value_taken_as_given),
        cmocka_unit_test(test_set_and_seen),       cmocka_unit_test(test_optional_value),
        cmocka_unit_test(test_greedy_list),        cmocka_unit_test(test_once),
        cmocka_unit_test(test_arguments_in_order), cmocka_unit_test(test_dashdash),
        cmocka_unit_test(test_stop_at_positional), cmocka_unit_test(test_global_options_anywhere),
        cmocka_unit_test(test_dispatch),           cmocka_unit_test(test_help),
        cmocka_unit_test(test_usage_errors),       cmocka_unit_test(test_no_arguments),
        cmocka_unit_test(test_inventory_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
