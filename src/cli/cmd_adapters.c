/*
 * agentstack adapters list|show|validate — the CLIs agentstack renders for,
 * as the registry loads them (the built-in descriptors, then drop-ins from
 * $AGENTSTACK_HOME/adapters/<id>.yaml). `list` says which look installed here,
 * `show` prints one descriptor as written, `validate` parses a file with the
 * very parser the registry uses, so a drop-in that validates is one that
 * loads. Reads only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "adapters/adapters.h"
#include "base/fs.h"
#include "base/term.h"
#include "cli/cli.h"

int cmd_adapters(int argc, char **argv, struct cli_ctx *ctx);

#define DESC_MAX (1u << 20)

struct adapters_args {
    bool json;
};

#define CLI_ARGS struct adapters_args
static const struct cli_option list_options[] = {
    {OPT_BOOL("json", 0, json, "the adapters as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

static int a_list(int argc, char **argv, struct cli_ctx *ctx);
static int a_show(int argc, char **argv, struct cli_ctx *ctx);
static int a_validate(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec list_spec = {
    .name = "adapters list",
    .fn = a_list,
    .summary = "every known adapter and whether its CLI looks installed here",
    .synopsis = CLI_LINES("adapters list [--json]"),
    .options = list_options,
    .examples = CLI_LINES("agentstack adapters list"),
};
static const struct cli_spec show_spec = {
    .name = "adapters show",
    .fn = a_show,
    .summary = "print one adapter's descriptor as written",
    .synopsis = CLI_LINES("adapters show <id>"),
    .examples = CLI_LINES("agentstack adapters show claude-code"),
};
static const struct cli_spec validate_spec = {
    .name = "adapters validate",
    .fn = a_validate,
    .summary = "check a drop-in descriptor file before putting it in ~/.agentstack/adapters/",
    .synopsis = CLI_LINES("adapters validate <file.yaml>"),
    .description = "The same parser and checks the registry applies: an error names "
                   "file:line:col and exits 1.",
    .examples = CLI_LINES("agentstack adapters validate ./my-cli.yaml"),
};

const struct cli_spec cmd_adapters_spec = {
    .name = "adapters",
    .fn = cmd_adapters,
    .summary = "the CLI adapters: list them, show one, validate a drop-in",
    .subs = (const struct cli_spec *const[]){&list_spec, &show_spec, &validate_spec, NULL},
    .see_also = "apply doctor",
};

static int load(struct adp_registry *reg)
{
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(reg, true, &err) < 0) {
        cli_error(&err);
        return -1;
    }
    for (size_t i = 0; i < reg->warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", reg->warnings.v[i]);
    return 0;
}

static int a_list(int argc, char **argv, struct cli_ctx *ctx)
{
    struct adapters_args a = {0};
    int rc = cli_parse(&list_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&list_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct adp_registry reg = {0};
    if (load(&reg) < 0)
        return EXIT_FAIL;
    json_t *arr = json_array();
    for (size_t i = 0; i < reg.v.n; i++) {
        const struct adp_desc *d = reg.v.v[i];
        bool det = adp_detected(d, NULL);
        if (a.json) {
            json_array_append_new(arr, json_pack("{s:s,s:s,s:b,s:b,s:s}", "id", d->id, "display",
                                                 d->display, "installed", det, "mcp", d->has_mcp,
                                                 "source", d->source));
        } else {
            strbuf l = SB_INIT, c = SB_INIT;
            sb_addf(&l, "%s %-16s %-20s %s", det ? "✓" : "·", d->id, d->display,
                    det ? "installed" : "not found");
            if (strcmp(d->source, "built-in") != 0)
                sb_addf(&l, "  (drop-in %s)", d->source);
            term_sanitize(&c, l.buf, l.len);
            term_printf("%s\n", c.buf);
            sb_release(&l);
            sb_release(&c);
        }
    }
    if (a.json) {
        char *s = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
    }
    json_decref(arr);
    adp_registry_free(&reg);
    return EXIT_OK;
}

static int a_show(int argc, char **argv, struct cli_ctx *ctx)
{
    int rc = cli_parse(&show_spec, &argc, argv, ctx, NULL);
    if (rc == CLI_CONTINUE && argc != 2)
        rc = cli_usage_error(show_spec.name, "adapters show takes one adapter id");
    if (rc != CLI_CONTINUE)
        return rc;
    struct adp_registry reg = {0};
    if (load(&reg) < 0)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    const struct adp_desc *d = adp_registry_find(&reg, argv[1]);
    rc = EXIT_FAIL;
    strbuf text = SB_INIT;
    if (!d) {
        adp_unknown_id_err(&reg, argv[1], &err);
        cli_error(&err);
    } else if (strcmp(d->source, "built-in") == 0) {
        for (size_t i = 0; i < adp_builtin_count; i++) {
            const char *f = adp_builtin_yaml[i].file;
            size_t n = strlen(d->id);
            if (strncmp(f, d->id, n) == 0 && strcmp(f + n, ".yaml") == 0)
                sb_add(&text, adp_builtin_yaml[i].text, adp_builtin_yaml[i].len);
        }
        printf("# %s — built-in descriptor\n", d->id);
        rc = EXIT_OK;
    } else if (fs_read_file(d->source, DESC_MAX, 1, &text, &err) < 0) {
        cli_error(&err);
    } else {
        strbuf c = SB_INIT;
        term_sanitize(&c, d->source, strlen(d->source));
        printf("# %s — drop-in %s\n", d->id, c.buf);
        sb_release(&c);
        rc = EXIT_OK;
    }
    for (const char *p = text.buf, *end = text.buf + text.len; rc == EXIT_OK && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        strbuf c = SB_INIT;
        term_sanitize(&c, p, n); /* line by line: a descriptor's text is data */
        printf("%s\n", c.buf);
        sb_release(&c);
        p += n + (nl ? 1 : 0);
    }
    sb_release(&text);
    adp_registry_free(&reg);
    return rc;
}

static int a_validate(int argc, char **argv, struct cli_ctx *ctx)
{
    int rc = cli_parse(&validate_spec, &argc, argv, ctx, NULL);
    if (rc == CLI_CONTINUE && argc != 2)
        rc = cli_usage_error(validate_spec.name, "adapters validate takes one file");
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    strbuf text = SB_INIT;
    struct adp_desc *d = NULL;
    if (fs_read_file(argv[1], DESC_MAX, 0, &text, &err) == 0)
        d = adp_desc_parse(argv[1], text.buf, text.len, &err);
    sb_release(&text);
    if (!d) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    strbuf l = SB_INIT, c = SB_INIT;
    sb_addf(&l, "✓ %s: adapter '%s' (%s) is valid — drop it into ~/.agentstack/adapters/%s.yaml",
            argv[1], d->id, d->display, d->id);
    term_sanitize(&c, l.buf, l.len);
    term_printf("%s\n", c.buf);
    sb_release(&l);
    sb_release(&c);
    adp_desc_free(d);
    return EXIT_OK;
}

int cmd_adapters(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_adapters_spec, argc, argv, ctx);
}
