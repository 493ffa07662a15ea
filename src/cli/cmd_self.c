/*
 * agentstack self link [--prefix DIR] [--force] (docs/onboarding.md) — put the running binary on
 * the user's PATH as a symlink, so a checkout's build is callable as plain
 * `agentstack`.
 *
 * Where: --prefix DIR, else $AGENTSTACK_PREFIX, else /usr/local/bin when this
 * user may write it, else ~/.local/bin (created). Acts directly (no --write:
 * it only places a link). Idempotent: a link already pointing here is left as it is; a link
 * pointing elsewhere is re-pointed; a regular file is replaced only with
 * --force, and never when it is this very binary. The new link is made
 * under a temporary name and renamed over the old one, so `agentstack` on
 * PATH is never missing halfway. Then it says whether the directory is on
 * PATH (and how to add it) and whether another `agentstack` comes first.
 *
 * agentstack self which — what a bare `agentstack` on PATH runs, against the
 * binary running now: every `agentstack` on PATH in order, each resolved,
 * marked as this binary, another binary, or a broken link (a stale link
 * after a rebuild moved the file). Reads only.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/rand.h"
#include "base/strbuf.h"
#include "base/xalloc.h"
#include "cli/cli.h"

int cmd_self(int argc, char **argv, struct cli_ctx *ctx);

#define SYSTEM_BIN "/usr/local/bin"

/* The running binary's real path (symlinks resolved by the kernel). */
static int self_exe(strbuf *out, struct as_err *err)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return as_err_errno(err, "cannot find the running binary (/proc/self/exe)");
    buf[n] = '\0';
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    if ((size_t)n > dl && strcmp(buf + n - (ssize_t)dl, deleted) == 0) {
        as_err_set(err, "the running binary %.*s was deleted or replaced", (int)(n - (ssize_t)dl),
                   buf);
        as_err_hint(err, "run the new build's own `agentstack self link`");
        return -1;
    }
    sb_adds(out, buf);
    return 0;
}

/* The directory the link goes into, and why that one (for the message). */
static int pick_dir(const char *prefix, strbuf *dir, const char **why, struct as_err *err)
{
    const char *env = getenv("AGENTSTACK_PREFIX");
    const char *home = getenv("HOME");
    if (prefix) {
        *why = "--prefix";
    } else if (env && env[0]) {
        prefix = env;
        *why = "$AGENTSTACK_PREFIX";
    } else if (fs_is_dir(SYSTEM_BIN) && access(SYSTEM_BIN, W_OK) == 0) {
        prefix = SYSTEM_BIN;
        *why = "writable " SYSTEM_BIN;
    } else if (home && home[0] == '/') {
        sb_addf(dir, "%s/.local/bin", home);
        *why = "~/.local/bin";
        return 0;
    } else {
        as_err_set(err, "HOME is not set to an absolute path, so ~/.local/bin is unknown");
        as_err_hint(err, "name the directory: agentstack self link --prefix DIR");
        return -1;
    }
    if (!prefix[0])
        return as_err_set(err, "--prefix needs a directory");
    if (prefix[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return as_err_errno(err, "cannot resolve %s against the current directory", prefix);
        sb_addf(dir, "%s/%s", cwd, prefix);
    } else {
        sb_adds(dir, prefix);
    }
    while (dir->len > 1 && dir->buf[dir->len - 1] == '/')
        sb_setlen(dir, dir->len - 1);
    return 0;
}

/* Same file on disk (both resolve to one inode). */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb2;
    return stat(a, &sa) == 0 && stat(b, &sb2) == 0 && sa.st_dev == sb2.st_dev &&
           sa.st_ino == sb2.st_ino;
}

/* Creates the link under a temporary name beside dest and renames it over
 * dest: an existing `agentstack` is replaced in one step. */
static int place_link(const char *exe, const char *dir, const char *dest, struct as_err *err)
{
    char rnd[17];
    strbuf tmp = SB_INIT;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (rand_hex(rnd, 8, err) != 0) {
            sb_release(&tmp);
            return -1;
        }
        sb_setlen(&tmp, 0);
        sb_addf(&tmp, "%s/.agentstack-link-%s", dir, rnd);
        if (symlink(exe, tmp.buf) == 0)
            break;
        if (errno != EEXIST || attempt == 7) {
            int e = errno;
            sb_release(&tmp);
            errno = e;
            as_err_errno(err, "cannot create a link in %s", dir);
            if (e == EACCES || e == EPERM || e == EROFS)
                as_err_hint(err, "pick a directory you may write: agentstack self link "
                                 "--prefix DIR");
            return -1;
        }
    }
    if (rename(tmp.buf, dest) != 0) {
        int e = errno;
        unlink(tmp.buf);
        sb_release(&tmp);
        errno = e;
        return as_err_errno(err, "cannot put the link at %s", dest);
    }
    sb_release(&tmp);
    return 0;
}

/* "~/x" for a path under $HOME, for the advice lines. */
static void tilde(const char *path, strbuf *out)
{
    const char *home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    if (hl > 1 && strncmp(path, home, hl) == 0 && (path[hl] == '/' || !path[hl]))
        sb_addf(out, "~%s", path + hl);
    else
        sb_adds(out, path);
}

static bool on_path(const char *dir, const char *pathvar)
{
    if (!pathvar)
        return false;
    char *copy = xstrdup(pathvar), *save = NULL;
    bool found = false;
    for (char *p = strtok_r(copy, ":", &save); p && !found; p = strtok_r(NULL, ":", &save)) {
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/')
            p[--n] = '\0';
        found = strcmp(p, dir) == 0 || (p[0] == '/' && same_file(p, dir));
    }
    free(copy);
    return found;
}

/* The first `agentstack` a shell would run, or NULL. */
static char *first_on_path(const char *pathvar)
{
    if (!pathvar)
        return NULL;
    char *copy = xstrdup(pathvar), *save = NULL, *hit = NULL;
    for (char *p = strtok_r(copy, ":", &save); p && !hit; p = strtok_r(NULL, ":", &save)) {
        if (p[0] != '/')
            continue;
        char *c = xasprintf("%s/agentstack", p);
        if (access(c, X_OK) == 0 && !fs_is_dir(c))
            hit = c;
        else
            free(c);
    }
    free(copy);
    return hit;
}

static void path_advice(const char *dir, const char *exe)
{
    const char *pathvar = getenv("PATH");
    strbuf td = SB_INIT;
    tilde(dir, &td);
    if (!on_path(dir, pathvar)) {
        const char *shell = getenv("SHELL");
        const char *sh = shell && strrchr(shell, '/') ? strrchr(shell, '/') + 1 : "";
        /* $HOME rather than ~ inside the quotes: the shell expands it there. */
        strbuf pv = SB_INIT;
        if (td.buf[0] == '~')
            sb_addf(&pv, "$HOME%s", td.buf + 1);
        else
            sb_adds(&pv, dir);
        printf("⚠ %s is not on your PATH — add it:\n", td.buf);
        if (strcmp(sh, "fish") == 0)
            printf("    fish_add_path %s\n", pv.buf);
        else
            printf("    echo 'export PATH=\"%s:$PATH\"' >> ~/.%src\n", pv.buf,
                   strcmp(sh, "zsh") == 0 ? "zsh" : "bash");
        printf("  then open a new terminal, and `agentstack --version` works anywhere\n");
        sb_release(&pv);
    } else {
        char *first = first_on_path(pathvar);
        if (first && !same_file(first, exe)) {
            printf("⚠ %s comes first on your PATH and is another agentstack — remove it, or "
                   "put %s before its directory\n",
                   first, td.buf);
        } else {
            printf("✓ %s is on your PATH — `agentstack --version` works anywhere\n", td.buf);
        }
        free(first);
    }
    sb_release(&td);
}

struct link_args {
    const char *prefix;
    bool force;
};

#define CLI_ARGS struct link_args
static const struct cli_option link_options[] = {
    {OPT_STRING("prefix", 0, prefix, "DIR", "link into DIR (default: see above)")},
    {OPT_BOOL("force", 0, force, "replace a regular file there (never this binary itself)")},
    {OPT_END},
};
#undef CLI_ARGS

static int self_link(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec self_link_spec = {
    .name = "self link",
    .fn = self_link,
    .summary = "put this binary on your PATH as a symlink",
    .synopsis = CLI_LINES("self link [--prefix DIR] [--force]"),
    .description = "Links into --prefix, $AGENTSTACK_PREFIX, a writable /usr/local/bin, else "
                   "~/.local/bin; idempotent. Then says whether that directory is on PATH.",
    .options = link_options,
    .examples = CLI_LINES("agentstack self link", "agentstack self link --prefix ~/bin"),
};

static int self_which(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec self_which_spec = {
    .name = "self which",
    .fn = self_which,
    .summary = "which binary a bare `agentstack` runs, against this one (stale links flagged)",
    .synopsis = CLI_LINES("self which"),
    .description = "Lists every agentstack on PATH in order, each resolved: this binary, "
                   "another binary, or a broken link. Exit 1 when none on PATH runs this "
                   "binary first.",
    .examples = CLI_LINES("agentstack self which"),
    .see_also = "version",
};

const struct cli_spec cmd_self_spec = {
    .name = "self",
    .fn = cmd_self,
    .summary = "this binary on your PATH: link it (~/.local/bin or --prefix), show which runs",
    .subs = (const struct cli_spec *const[]){&self_link_spec, &self_which_spec, NULL},
};

static int self_which(int argc, char **argv, struct cli_ctx *ctx)
{
    int prc = cli_parse(&self_which_spec, &argc, argv, ctx, NULL);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&self_which_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    struct as_err err = AS_ERR_INIT;
    strbuf exe = SB_INIT;
    if (self_exe(&exe, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    printf("running:  %s\n", exe.buf);
    const char *path = getenv("PATH");
    int found = 0, first_is_self = 0;
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (n) {
            strbuf cand = SB_INIT;
            sb_addf(&cand, "%.*s/agentstack", (int)n, p);
            struct stat lst;
            if (lstat(cand.buf, &lst) == 0) {
                char real[PATH_MAX];
                const char *what;
                bool self = false;
                if (!realpath(cand.buf, real)) {
                    what = "broken link — re-link it: agentstack self link";
                    snprintf(real, sizeof real, "(nothing)");
                } else if (strcmp(real, exe.buf) == 0) {
                    what = "this binary";
                    self = true;
                } else {
                    what = "another binary";
                }
                if (!found)
                    first_is_self = self;
                printf("%s %s → %s  (%s)\n", found ? "shadowed:" : "on PATH: ", cand.buf, real,
                       what);
                found++;
            }
            sb_release(&cand);
        }
        p += n;
        p += strspn(p, ":");
    }
    if (!found)
        printf("on PATH:  no agentstack — put this one there: agentstack self link\n");
    else if (!first_is_self)
        printf("a bare `agentstack` does not run this binary — agentstack self link (from "
               "this build) re-points it\n");
    sb_release(&exe);
    return found && first_is_self ? EXIT_OK : EXIT_FAIL;
}

static int self_link(int argc, char **argv, struct cli_ctx *ctx)
{
    struct link_args a = {0};
    int prc = cli_parse(&self_link_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&self_link_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    const char *prefix = a.prefix;
    bool force = a.force;
    struct as_err err = AS_ERR_INIT;
    strbuf exe = SB_INIT, dir = SB_INIT, dest = SB_INIT;
    const char *why = NULL;
    int rc = EXIT_FAIL;
    if (self_exe(&exe, &err) != 0 || pick_dir(prefix, &dir, &why, &err) != 0)
        goto fail;
    if (fs_mkdirs(dir.buf, 0755, &err) != 0)
        goto fail;
    if (!fs_is_dir(dir.buf)) {
        as_err_set(&err, "%s is not a directory", dir.buf);
        goto fail;
    }
    sb_addf(&dest, "%s/agentstack", dir.buf);
    struct stat st;
    const char *note = "";
    char old[PATH_MAX] = "";
    if (lstat(dest.buf, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlink(dest.buf, old, sizeof old - 1);
            old[n > 0 ? n : 0] = '\0';
            if (strcmp(old, exe.buf) == 0) {
                printf("✓ linked %s → %s (already in place)\n", dest.buf, exe.buf);
                path_advice(dir.buf, exe.buf);
                rc = EXIT_OK;
                goto out;
            }
            note = "re-pointed";
        } else if (S_ISREG(st.st_mode)) {
            if (same_file(dest.buf, exe.buf)) {
                /* Replacing the binary by a link to itself would leave a loop. */
                printf("✓ %s is this binary itself — nothing to link\n", dest.buf);
                path_advice(dir.buf, exe.buf);
                rc = EXIT_OK;
                goto out;
            }
            if (!force) {
                as_err_set(&err, "%s is a regular file, not a link — refusing to replace it",
                           dest.buf);
                as_err_hint(&err,
                            "replace it with: agentstack self link%s%s --force (or "
                            "pick another directory with --prefix DIR)",
                            prefix ? " --prefix " : "", prefix ? prefix : "");
                goto fail;
            }
            note = "replaced a regular file";
        } else {
            as_err_set(&err, "%s exists and is neither a file nor a link", dest.buf);
            as_err_hint(&err, "remove it, or pick another directory with --prefix DIR");
            goto fail;
        }
    } else if (errno != ENOENT) {
        as_err_errno(&err, "cannot inspect %s", dest.buf);
        goto fail;
    }
    if (place_link(exe.buf, dir.buf, dest.buf, &err) != 0)
        goto fail;
    printf("✓ linked %s → %s", dest.buf, exe.buf);
    if (note[0] && old[0])
        printf(" (%s; was → %s)", note, old);
    else if (note[0])
        printf(" (%s)", note);
    printf("\n  chosen by: %s\n", why);
    path_advice(dir.buf, exe.buf);
    rc = EXIT_OK;
    goto out;
fail:
    cli_error(&err);
out:
    sb_release(&exe);
    sb_release(&dir);
    sb_release(&dest);
    return rc;
}

int cmd_self(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_self_spec, argc, argv, ctx);
}
