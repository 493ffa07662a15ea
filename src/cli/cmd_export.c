/*
 * agentstack export [--output FILE] — the project's setup as one JSON
 * document (docs/formats.md, "Export document"): the manifest, its lock and
 * signature, and the files of the path skills and instruction files it
 * declares, each with its size and sha256. Never the local overlay, .env or
 * a secret value: a literal secret in the manifest or a path skill refuses
 * the export (cli/export_doc.h). Read-only; `agentstack import` is the
 * other half.
 */
#include <stdio.h>
#include <string.h>

#include "base/fs.h"
#include "base/term.h"
#include "cli/cli.h"
#include "cli/export_doc.h"

int cmd_export(int argc, char **argv, struct cli_ctx *ctx);

struct export_args {
    const char *output;
};

#define CLI_ARGS struct export_args
static const struct cli_option export_options[] = {
    {OPT_STRING("output", 'o', output, "FILE", "write the document to FILE (default: stdout)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_export_spec = {
    .name = "export",
    .fn = cmd_export,
    .summary = "write the project's setup as one portable, digest-checked document",
    .synopsis = CLI_LINES("export [--output FILE]"),
    .description = "Carries agentstack.toml, agentstack.lock (and its signature) and the files of "
                   "the path skills and instruction files the manifest declares, each with its "
                   "sha256. Never agentstack.local.toml, .env or a secret value: a literal secret "
                   "in the manifest or a path skill refuses the export.",
    .options = export_options,
    .examples =
        CLI_LINES("agentstack export --output setup.json", "agentstack import setup.json --write"),
    .see_also = "import lock trust",
};

static void summarize(const struct export_doc *d, const char *to)
{
    size_t bytes = 0;
    for (size_t i = 0; i < d->files.n; i++)
        bytes += d->files.v[i].bytes.len;
    term_fprintf(stderr, "✓ exported %zu file%s (%zu bytes) to %s\n", d->files.n,
                 d->files.n == 1 ? "" : "s", bytes, to);
    for (size_t i = 0; i < d->files.n; i++)
        term_fprintf(stderr, "  %s\n", d->files.v[i].path);
    term_fprintf(stderr, "  no secret values are in it; the other side runs: agentstack import "
                         "FILE --write\n");
}

int cmd_export(int argc, char **argv, struct cli_ctx *ctx)
{
    struct export_args a = {0};
    int prc = cli_parse(&cmd_export_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_export_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    struct export_doc d = {0};
    struct manifest *m = NULL;
    strbuf text = SB_INIT;
    int rc = EXIT_FAIL;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    if (!(m = manifest_load(&p, &err)) || export_doc_collect(&p, m, &d, &err) < 0) {
        as_err_hint(&err, "nothing was exported");
        cli_error(&err);
        goto out;
    }
    export_doc_write(&d, &text);
    sb_addc(&text, '\n');
    if (a.output) {
        struct fs_write_opts o = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
        if (fs_write_atomic(a.output, text.buf, text.len, &o, &err) < 0) {
            cli_error(&err);
            goto out;
        }
    } else if (fwrite(text.buf, 1, text.len, stdout) != text.len || fflush(stdout) != 0) {
        cli_errorf("could not write the export to stdout");
        goto out;
    }
    if (!ctx->quiet)
        summarize(&d, a.output ? a.output : "stdout");
    rc = EXIT_OK;
out:
    sb_release(&text);
    export_doc_free(&d);
    if (m)
        manifest_free(m);
    bundle_paths_free(&p);
    return rc;
}
