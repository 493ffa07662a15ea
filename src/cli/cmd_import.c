/*
 * agentstack import FILE [--into DIR] [--write] [--force] — puts an export
 * document's files (cli/export_doc.h) into a project directory (default:
 * the current one).
 *
 * Why its own checks: a document is input from elsewhere, and the files it
 * writes are ones coding CLIs and agentstack act on. So before anything is
 * written: every digest and size matches; the manifest loads; every file is
 * one the manifest itself declares (never a CLI's config file or a git
 * hook); every target lies below DIR with no symlink on the way; and a file
 * that exists with other bytes is replaced only with --force. Without
 * --write it previews. A write is one undo step (`agentstack undo`), and a
 * write that fails part-way puts back what it had written. An import never
 * trusts: the project stays inert until `agentstack trust` reviews it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/export_doc.h"
#include "trust/trust.h"

int cmd_import(int argc, char **argv, struct cli_ctx *ctx);

struct import_args {
    const char *into;
    bool write, force;
};

#define CLI_ARGS struct import_args
static const struct cli_option import_options[] = {
    {OPT_STRING("into", 0, into, "DIR", "the project directory to write into (default: .)")},
    {OPT_BOOL("write", 0, write, "write the files (default: preview)")},
    {OPT_BOOL("force", 0, force, "replace files that exist with other bytes")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_import_spec = {
    .name = "import",
    .fn = cmd_import,
    .summary = "check an export document and write its files into a project",
    .synopsis = CLI_LINES("import FILE [--into DIR] [--write] [--force]"),
    .description = "Every file's size and sha256 are checked, the manifest must load, and only "
                   "files the manifest declares are accepted, before anything is written. FILE "
                   "may be - for stdin. An import never trusts: review the project with "
                   "`agentstack trust` before anything runs from it.",
    .options = import_options,
    .examples = CLI_LINES("agentstack import setup.json", "agentstack import setup.json --write",
                          "agentstack import setup.json --into ../other --write --force"),
    .see_also = "export trust undo install",
};

enum plan_kind { PLAN_NEW, PLAN_SAME, PLAN_DIFFERS };

struct plan {
    char *target; /* absolute, below the root */
    enum plan_kind kind;
    strbuf before;
    unsigned before_mode;
};

struct import_run {
    const struct import_args *a;
    strbuf root; /* canonical target directory */
    struct export_doc doc;
    struct plan *plans;
};

static int read_input(const char *file, strbuf *out, struct as_err *err)
{
    const size_t cap = EXPORT_DOC_MAX_BYTES * 2;
    if (strcmp(file, "-") != 0)
        return fs_read_file(file, cap, 0, out, err);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
        sb_add(out, buf, n);
        if (out->len > cap)
            return as_err_set(err, "stdin: more than %zu MiB", cap >> 20);
    }
    return ferror(stdin) ? as_err_set(err, "stdin: read failed") : 0;
}

/* The manifest loads as the target's project manifest would. */
static int check_manifest(struct import_run *r, struct as_err *err)
{
    const struct export_file *mf = NULL;
    for (size_t i = 0; i < r->doc.files.n; i++)
        if (!strcmp(r->doc.files.v[i].path, r->doc.manifest))
            mf = &r->doc.files.v[i];
    char *path = xasprintf("%s/%s", r->root.buf, r->doc.manifest);
    char *dir = xstrdup(path);
    *strrchr(dir, '/') = '\0';
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = path,
                                  .data = mf->bytes.buf,
                                  .len = mf->bytes.len,
                                  .manifest_dir = dir,
                                  .project_root = r->root.buf};
    struct manifest *m = manifest_load_bytes(&src, err);
    int rc = m ? export_doc_check_declared(&r->doc, m, err) : -1;
    if (m)
        manifest_free(m);
    free(path);
    free(dir);
    return rc;
}

/* A manifest in the other layout already in the target would leave two. */
static int check_layout(struct import_run *r, struct as_err *err)
{
    const char *other = strchr(r->doc.manifest, '/') ? BUNDLE_MANIFEST_NAME
                                                     : BUNDLE_DIR_NAME "/" BUNDLE_MANIFEST_NAME;
    char *p = xasprintf("%s/%s", r->root.buf, other);
    int rc = fs_exists(p) ? as_err_set(err,
                                       "%s already holds a manifest at %s; the document's is "
                                       "%s, and a project has one",
                                       r->root.buf, other, r->doc.manifest)
                          : 0;
    free(p);
    return rc;
}

static int plan_one(struct import_run *r, const struct export_file *f, struct plan *pl,
                    struct as_err *err)
{
    strbuf t = SB_INIT;
    if (fs_contain(r->root.buf, NULL, f->path, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &t,
                   err) < 0) {
        sb_release(&t);
        return -1;
    }
    pl->target = sb_detach(&t, NULL);
    struct stat st;
    if (lstat(pl->target, &st) != 0) {
        if (errno != ENOENT)
            return as_err_errno(err, "%s", pl->target);
        pl->kind = PLAN_NEW;
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return as_err_set(err, "%s exists and is not a regular file", pl->target);
    if (fs_read_file(pl->target, EXPORT_DOC_MAX_BYTES, 1, &pl->before, err) < 0)
        return -1;
    pl->before_mode = st.st_mode & 07777;
    pl->kind =
        pl->before.len == f->bytes.len && memcmp(pl->before.buf, f->bytes.buf, f->bytes.len) == 0
            ? PLAN_SAME
            : PLAN_DIFFERS;
    return 0;
}

static void print_plan(const struct import_run *r, size_t *n_write, size_t *n_conflict)
{
    *n_write = *n_conflict = 0;
    for (size_t i = 0; i < r->doc.files.n; i++) {
        const struct plan *pl = &r->plans[i];
        const char *what = "= unchanged";
        if (pl->kind == PLAN_NEW)
            what = "+ new";
        else if (pl->kind == PLAN_DIFFERS)
            what = r->a->force ? "~ replaced" : "! differs (keep it, or replace it with --force)";
        *n_write += pl->kind == PLAN_NEW || (pl->kind == PLAN_DIFFERS && r->a->force);
        *n_conflict += pl->kind == PLAN_DIFFERS && !r->a->force;
        term_fprintf(stdout, "  %s  %s\n", what, r->doc.files.v[i].path);
    }
}

/* mkdir for each missing directory between the root and path's parent,
 * each recorded (shallowest first) so an undo removes it again. */
static int make_parents(const char *root, const char *path, strvec *created, struct as_err *err)
{
    size_t rn = strlen(root);
    char *p = xstrdup(path);
    int rc = 0;
    for (char *s = p + rn + 1; rc == 0 && (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        struct stat st;
        if (lstat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                rc = as_err_set(err, "%s is not a directory", p);
        } else if (mkdir(p, 0755) != 0) {
            rc = as_err_errno(err, "mkdir %s", p);
        } else {
            strvec_push(created, p);
        }
        *s = '/';
    }
    free(p);
    return rc;
}

static int write_one(struct import_run *r, size_t i, struct adp_hist_entry *h, struct as_err *err)
{
    const struct export_file *f = &r->doc.files.v[i];
    struct plan *pl = &r->plans[i];
    struct adp_hist_file hf = {0};
    hf.path = xstrdup(pl->target);
    hf.existed = pl->kind != PLAN_NEW;
    hf.mode = pl->before_mode;
    hf.label = xstrdup("import");
    sb_init(&hf.before, 0);
    sb_add(&hf.before, pl->before.buf, pl->before.len);
    int rc = make_parents(r->root.buf, pl->target, &hf.created_dirs, err);
    struct fs_write_opts o = {.mode = f->executable ? 0755 : 0644,
                              .symlinks = FS_SYMLINK_REFUSE,
                              .contain_root = r->root.buf};
    if (rc == 0)
        rc = fs_write_atomic(pl->target, f->bytes.buf, f->bytes.len, &o, err);
    /* Recorded even when the write failed after creating directories, so
     * putting things back removes them too. */
    vec_push(&h->files, hf);
    return rc;
}

static int write_all(struct import_run *r, struct as_err *err)
{
    struct as_lock lk = {-1};
    if (trust_lock(&lk, err) < 0)
        return -1;
    struct adp_hist_entry *h = xcalloc(1, sizeof *h);
    int rc = 0;
    size_t written = 0;
    for (size_t i = 0; rc == 0 && i < r->doc.files.n; i++) {
        bool go = r->plans[i].kind == PLAN_NEW || (r->plans[i].kind == PLAN_DIFFERS && r->a->force);
        if (go && (rc = write_one(r, i, h, err)) == 0)
            written++;
    }
    if (rc < 0) {
        /* Put back what was written: an import is all or nothing. */
        size_t pending = 0;
        FILE *sink = fopen("/dev/null", "w");
        size_t failed = adp_history_revert(h, true, sink ? sink : stderr, &pending);
        if (sink)
            fclose(sink);
        as_err_hint(err, failed ? "some files could not be put back; see `agentstack undo`"
                                : "nothing was written: what had been written was put back");
    } else if (h->files.n) {
        h->scope = xstrdup("project");
        h->operation = xstrdup("import");
        h->summary =
            xasprintf("imported %zu file%s into %s", written, written == 1 ? "" : "s", r->root.buf);
        struct as_err herr = AS_ERR_INIT;
        if (adp_history_record(h, &herr) != 0) {
            char buf[2048];
            term_fprintf(stderr, "warning: the undo history was not recorded: %s\n",
                         as_err_str(&herr, buf, sizeof buf));
        }
    }
    adp_hist_entry_free(h);
    lock_release(&lk);
    return rc;
}

static int run_import(struct import_run *r, const char *file)
{
    struct as_err err = AS_ERR_INIT;
    strbuf in = SB_INIT;
    const char *name = strcmp(file, "-") ? file : "stdin";
    int rc = read_input(file, &in, &err);
    if (rc == 0)
        rc = export_doc_read(name, in.buf, in.len, &r->doc, &err);
    sb_release(&in);
    if (rc == 0)
        rc = fs_realpath(r->a->into ? r->a->into : ".", &r->root, &err);
    if (rc == 0 && !fs_is_dir(r->root.buf))
        rc = as_err_set(&err, "%s is not a directory", r->root.buf);
    if (rc == 0)
        rc = check_manifest(r, &err);
    if (rc == 0)
        rc = check_layout(r, &err);
    if (rc == 0) {
        r->plans = xcalloc(r->doc.files.n, sizeof *r->plans);
        for (size_t i = 0; i < r->doc.files.n; i++)
            sb_init(&r->plans[i].before, 0);
    }
    for (size_t i = 0; rc == 0 && i < r->doc.files.n; i++)
        rc = plan_one(r, &r->doc.files.v[i], &r->plans[i], &err);
    if (rc < 0) {
        as_err_hint(&err, "nothing was written");
        cli_error(&err);
        return EXIT_FAIL;
    }
    size_t n_write, n_conflict;
    term_fprintf(stdout, "import %s into %s:\n", name, r->root.buf);
    print_plan(r, &n_write, &n_conflict);
    if (n_conflict) {
        cli_errorf("%zu file%s in %s differ%s from the document; nothing was written", n_conflict,
                   n_conflict == 1 ? "" : "s", r->root.buf, n_conflict == 1 ? "s" : "");
        fprintf(stderr, "  replace them: agentstack import %s --write --force\n", file);
        return EXIT_FAIL;
    }
    if (!n_write) {
        printf("Nothing to write: the project already holds these bytes.\n");
        return EXIT_OK;
    }
    if (!r->a->write) {
        printf("Dry run. Nothing written — re-run with --write.\n");
        return EXIT_OK;
    }
    if (write_all(r, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    printf("✓ wrote %zu file%s (undo: agentstack restore --last --write)\n", n_write,
           n_write == 1 ? "" : "s");
    printf("Next: review it before anything runs from it: agentstack trust %s\n", r->root.buf);
    return EXIT_OK;
}

int cmd_import(int argc, char **argv, struct cli_ctx *ctx)
{
    struct import_args a = {0};
    int prc = cli_parse(&cmd_import_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc < 2)
        return cli_usage_error("import", "name the export document (or - for stdin)");
    if (argc > 2)
        return cli_usage_error("import", "unexpected argument '%s'", argv[2]);
    struct import_run r = {.a = &a, .root = SB_INIT};
    int rc = run_import(&r, argv[1]);
    for (size_t i = 0; r.plans && i < r.doc.files.n; i++) {
        free(r.plans[i].target);
        sb_release(&r.plans[i].before);
    }
    free(r.plans);
    export_doc_free(&r.doc);
    sb_release(&r.root);
    return rc;
}
