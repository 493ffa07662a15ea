/*
 * agentstack uninstall [--scope project|global|all] [--write] [--verbose]
 * [--keep-home] — take agentstack back off this machine (docs/adapters.md,
 * "Uninstall and unrender").
 *
 * Why: a user leaving must get their CLIs' files back as they would have
 * been without us, and nothing of theirs touched. Every managed region the
 * ownership ledger lists is reverted through the same machinery apply uses
 * (adp_uninstall), the gateway entry removed, then $AGENTSTACK_HOME deleted.
 *
 * Guarantees: preview unless --write; never reads or writes a manifest (it
 * works without one); only ledger-listed names go; $AGENTSTACK_HOME is
 * deleted only for --scope all without --keep-home, only once every file
 * was reverted, never when it is "/", $HOME or a parent of $HOME, and never
 * through a symlink inside it (each link is removed, not followed).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "base/term.h"
#include "bundle/home.h"
#include "cli/cli.h"

int cmd_uninstall(int argc, char **argv, struct cli_ctx *ctx);

enum { SCOPE_ALL = 0, SCOPE_PROJECT, SCOPE_GLOBAL };
static const struct cli_choice uninstall_scopes[] = {
    {"all", SCOPE_ALL}, {"project", SCOPE_PROJECT}, {"global", SCOPE_GLOBAL}, {NULL, 0}};

struct uninstall_args {
    int scope;
    bool write, verbose, keep_home;
};

#define CLI_ARGS struct uninstall_args
static const struct cli_option uninstall_options[] = {
    {OPT_ENUM("scope", 0, scope, uninstall_scopes,
              "every project's files, the user's own, or both (default: all)")},
    {OPT_BOOL("write", 0, write, "remove them (default: show what would go)")},
    {OPT_BOOL("verbose", 'v', verbose, "every line of the plan, not only what changes")},
    {OPT_BOOL("keep-home", 0, keep_home,
              "keep $AGENTSTACK_HOME (library, history, trust, secrets store)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_uninstall_spec = {
    .name = "uninstall",
    .fn = cmd_uninstall,
    .summary = "revert everything agentstack placed in the CLIs' files, then delete its home",
    .synopsis = CLI_LINES("uninstall [--scope project|global|all] [--write] [--verbose] "
                          "[--keep-home]"),
    .description = "Reverts every managed region the ownership ledger lists (servers, "
                   "instruction regions, settings, hooks), unlinks the skills it placed, "
                   "removes the gateway entry and the .gitignore block, prunes what that "
                   "leaves empty, then deletes $AGENTSTACK_HOME unless --keep-home (only for "
                   "--scope all). Manifests and entries it did not write are never touched; "
                   "no manifest is needed.",
    .options = uninstall_options,
    .examples = CLI_LINES("agentstack uninstall", "agentstack uninstall --write",
                          "agentstack uninstall --scope project --write --keep-home"),
    .see_also = "unrender undo restore",
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
    if (rc != 0)
        fprintf(stderr, "error: cannot remove %s\n", path);
    return rc;
}

/* "/" , $HOME and $HOME's parents are never a home to delete. */
static bool home_deletable(const char *ash, strbuf *why)
{
    char *real = realpath(ash, NULL);
    const char *h = getenv("HOME");
    char *realh = h && *h ? realpath(h, NULL) : NULL;
    bool ok = real && strcmp(real, "/") != 0;
    if (ok && realh) {
        size_t n = strlen(real);
        ok = !(strcmp(real, realh) == 0 || (strncmp(realh, real, n) == 0 && realh[n] == '/'));
    }
    if (!ok)
        sb_addf(why, "%s is / or holds your home directory — not deleted", ash);
    free(real);
    free(realh);
    return ok;
}

int cmd_uninstall(int argc, char **argv, struct cli_ctx *ctx)
{
    struct uninstall_args a = {0};
    int rc = cli_parse(&cmd_uninstall_spec, &argc, argv, ctx, &a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_uninstall_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    strbuf ash = SB_INIT;
    if (home_dir(&ash, &err) != 0) {
        cli_error(&err);
        sb_release(&ash);
        return EXIT_FAIL;
    }
    const char *scope = a.scope == SCOPE_ALL       ? "all"
                        : a.scope == SCOPE_PROJECT ? "project"
                                                   : "global";
    term_fprintf(stdout, "Uninstall (scope: %s)%s\n", scope, a.write ? "" : " — preview");
    struct adp_registry reg;
    bool have_home = fs_exists(ash.buf);
    size_t n_changed = 0;
    rc = EXIT_OK;
    if (have_home) {
        if (adp_registry_load(&reg, true, &err) < 0) {
            cli_error(&err);
            sb_release(&ash);
            return EXIT_FAIL;
        }
        struct adp_uninstall_opts o = {
            .global = a.scope != SCOPE_PROJECT,
            .projects = a.scope != SCOPE_GLOBAL,
            .disconnect = a.scope != SCOPE_PROJECT,
            .gitignore = true,
            .write = a.write,
            .verbose = a.verbose,
            .operation = "uninstall",
            .n_changed = &n_changed,
            .out = stdout,
        };
        rc = adp_uninstall(&reg, &o, &err);
        adp_registry_free(&reg);
        fflush(stdout);
        if (rc) {
            cli_error(&err);
            sb_release(&ash);
            return EXIT_FAIL; /* the home (and its undo history) stays */
        }
    }
    bool delete_home = have_home && a.scope == SCOPE_ALL && !a.keep_home;
    strbuf dp = SB_INIT, why = SB_INIT;
    sb_adds(&dp, ash.buf);
    if (delete_home && !home_deletable(ash.buf, &why)) {
        cli_errorf("%s", why.buf);
        rc = EXIT_FAIL;
    } else if (delete_home && !a.write) {
        term_fprintf(stdout,
                     "− would delete %s (library, history, trust grants, secrets store; "
                     "--keep-home keeps it)\n",
                     dp.buf);
    } else if (delete_home) {
        if (nftw(ash.buf, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
            cli_errorf("%s was not fully deleted — see above", ash.buf);
            rc = EXIT_FAIL;
        } else {
            term_fprintf(stdout, "− deleted %s\n", dp.buf);
        }
    } else if (have_home) {
        term_fprintf(stdout, "· keeping %s%s\n", dp.buf,
                     a.keep_home ? " (--keep-home)" : " (only --scope all deletes it)");
    }
    if (rc == EXIT_OK) {
        if (!a.write)
            term_fprintf(stdout, "Dry run. Nothing changed — re-run with --write to uninstall.\n");
        else if (!n_changed && !delete_home)
            term_fprintf(stdout, "✓ nothing to uninstall\n");
        else {
            term_fprintf(stdout, "✓ uninstalled — manifests and entries agentstack did not write "
                                 "were left as they were\n");
            if (!delete_home)
                term_fprintf(stdout, "undo: agentstack undo\n");
        }
    }
    sb_release(&dp);
    sb_release(&why);
    sb_release(&ash);
    return rc;
}
