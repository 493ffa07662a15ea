/* git — clones and per-commit checkouts in the machine home; see git.h. */
#include "bundle/git.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/proc.h"
#include "base/rand.h"
#include "base/vec.h"
#include "base/xalloc.h"
#include "bundle/git_run.h"

#define GIT_MARKER "agentstack-source"
#define GIT_REV_MAX 255

void git_slug(const char *url, strbuf *out)
{
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        sb_addc(out, isalnum(*p) ? (char)*p : '-');
}

bool git_is_commit(const char *rev)
{
    if (!rev)
        return false;
    size_t n = strlen(rev);
    if (n != 40 && n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((rev[i] >= '0' && rev[i] <= '9') || (rev[i] >= 'a' && rev[i] <= 'f')))
            return false;
    return true;
}

static bool has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

int git_check_url(const char *url, struct as_err *err)
{
    if (!url || !url[0])
        return as_err_set(err, "empty git URL");
    if (url[0] == '-')
        return as_err_set(err, "git URL '%s' starts with '-' (it would be read as an option)", url);
    if (has_control(url))
        return as_err_set(err, "git URL contains a control character");
    if (strncmp(url, "https://", 8) == 0 || strncmp(url, "ssh://", 6) == 0 ||
        strncmp(url, "file://", 7) == 0 || url[0] == '/')
        return 0;
    if (strstr(url, "::"))
        return as_err_set(err,
                          "git URL '%s' names a remote helper; only https, ssh and local "
                          "sources are fetched",
                          url);
    const char *scheme = strstr(url, "://");
    if (scheme)
        return as_err_set(err,
                          "git URL '%s': the %.*s protocol is not allowed (use https, ssh "
                          "or a local path)",
                          url, (int)(scheme - url), url);
    /* scp-like user@host:path is ssh; a bare relative path is ambiguous. */
    const char *colon = strchr(url, ':');
    const char *slash = strchr(url, '/');
    if (colon && (!slash || colon < slash))
        return 0;
    return as_err_set(err,
                      "git URL '%s' is a relative path; write an absolute path, file://, "
                      "https:// or ssh://",
                      url);
}

static int check_rev(const char *rev, struct as_err *err)
{
    if (!rev)
        return 0;
    if (!rev[0] || rev[0] == '-' || strlen(rev) > GIT_REV_MAX || has_control(rev) ||
        strchr(rev, ' ') || strstr(rev, ".."))
        return as_err_set(err, "git rev '%s' is not a branch, tag or commit name", rev);
    return 0;
}

/* ---- running git ---------------------------------------------------------- */

static void build_env(strvec *env, const char *index_file)
{
    const char *path = getenv("PATH");
    strvec_pushf(env, "PATH=%s", path && path[0] ? path : "/usr/local/bin:/usr/bin:/bin");
    const char *home = getenv("HOME");
    if (home && home[0])
        strvec_pushf(env, "HOME=%s", home); /* ssh reads its keys and known_hosts there */
    const char *sock = getenv("SSH_AUTH_SOCK");
    if (sock && sock[0])
        strvec_pushf(env, "SSH_AUTH_SOCK=%s", sock);
    strvec_push(env, "LC_ALL=C");
    strvec_push(env, "GIT_TERMINAL_PROMPT=0");
    strvec_push(env, "GIT_CONFIG_NOSYSTEM=1");
    strvec_push(env, "GIT_CONFIG_GLOBAL=/dev/null");
    strvec_push(env, "GIT_PROTOCOL_FROM_USER=0");
    strvec_push(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes");
    if (index_file)
        strvec_pushf(env, "GIT_INDEX_FILE=%s", index_file);
}

/* The hardening every git invocation carries, this module's and the
 * library's (library/lib_git.c), ahead of the subcommand: the union of what
 * each once carried, the strictest of both. */
static const char *const git_config[] = {
    "-c", "core.hooksPath=/dev/null",   "-c", "core.fsmonitor=false",
    "-c", "core.autocrlf=false",        "-c", "protocol.allow=never",
    "-c", "protocol.file.allow=always", "-c", "protocol.https.allow=always",
    "-c", "protocol.ssh.allow=always",  "-c", "protocol.ext.allow=never",
    "-c", "protocol.fd.allow=never",    "-c", "submodule.recurse=false",
    "-c", "transfer.fsckObjects=true",  "-c", "filter.lfs.smudge=",
    "-c", "filter.lfs.process=",        "-c", "filter.lfs.required=false",
    "-c", "credential.helper=",         "-c", "init.defaultBranch=main",
    "-c", "advice.detachedHead=false",  "-c", "http.lowSpeedLimit=1000",
    "-c", "http.lowSpeedTime=60",
};

void git_harden_argv(strvec *argv)
{
    for (size_t i = 0; i < sizeof git_config / sizeof *git_config; i++)
        strvec_push(argv, git_config[i]);
}

/* One printable line of git's stderr for a message. */
static void last_words(const strbuf *e, strbuf *out)
{
    const char *p = e->buf ? e->buf : "";
    const char *best = NULL;
    size_t best_n = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n && (strncmp(p, "fatal:", 6) == 0 || strncmp(p, "error:", 6) == 0 || !best)) {
            best = p;
            best_n = n;
        }
        p += n + (nl ? 1 : 0);
    }
    for (size_t i = 0; best && i < best_n && i < 300; i++) {
        unsigned char c = (unsigned char)best[i];
        sb_addc(out, c < 0x20 || c == 0x7f ? '?' : (char)c);
    }
    if (!best)
        sb_adds(out, "no message");
}

/* Runs git with the hardening, optional --git-dir/--work-tree, then args,
 * stdin from in (in_len bytes; NULL = /dev/null), under the git deadline
 * (bundle/git_run.h); progress: git's stderr shown as it comes. Returns
 * git's exit status (0 = success) or -1 + err when it could not run or
 * was stopped. */
static int run_git_in(const char *git_dir, const char *work_tree, const char *index_file,
                      const char *const *args, const char *in, size_t in_len, bool progress,
                      strbuf *out, strbuf *errout, struct as_err *err)
{
    strvec argv = STRVEC_INIT, env = STRVEC_INIT;
    strvec_push(&argv, "git");
    git_harden_argv(&argv);
    if (git_dir)
        strvec_pushf(&argv, "--git-dir=%s", git_dir);
    if (work_tree)
        strvec_pushf(&argv, "--work-tree=%s", work_tree);
    for (size_t i = 0; args[i]; i++)
        strvec_push(&argv, args[i]);
    build_env(&env, index_file);
    /* proc wants NULL-terminated arrays. */
    char **av = xcalloc(argv.n + 1, sizeof *av);
    char **ev = xcalloc(env.n + 1, sizeof *ev);
    for (size_t i = 0; i < argv.n; i++)
        av[i] = argv.v[i];
    for (size_t i = 0; i < env.n; i++)
        ev[i] = env.v[i];
    struct git_run r = {
        .argv = (const char *const *)av,
        .envp = (const char *const *)ev,
        .in = in,
        .in_len = in_len,
        .out = out,
        .errout = errout,
        .progress = progress,
    };
    int rc = git_run_bounded(&r, err);
    free(av);
    free(ev);
    strvec_clear(&argv);
    strvec_clear(&env);
    if (rc < 0 && !as_err_isset(err))
        as_err_set(err, "git could not be run");
    if (rc < 0 && strstr(err->msg, "command not found"))
        as_err_hint(err, "install git to use git sources");
    return rc;
}

static int run_git(const char *git_dir, const char *work_tree, const char *index_file,
                   const char *const *args, strbuf *out, strbuf *errout, struct as_err *err)
{
    return run_git_in(git_dir, work_tree, index_file, args, NULL, 0, false, out, errout, err);
}

static int git_failed(struct as_err *err, const char *what, const char *url, const strbuf *e)
{
    strbuf w = SB_INIT;
    last_words(e, &w);
    as_err_set(err, "git %s %s failed: %s", what, url, w.buf);
    sb_release(&w);
    return -1;
}

/* ---- the clone ------------------------------------------------------------ */

static int read_marker(const char *bare, strbuf *url)
{
    char *p = xasprintf("%s/%s", bare, GIT_MARKER);
    struct as_err ignored = AS_ERR_INIT;
    int rc = fs_read_file(p, 64 * 1024, 1, url, &ignored);
    free(p);
    if (rc == 0)
        sb_rtrim(url);
    return rc;
}

static int fetch(const char *bare, const char *url, struct as_err *err)
{
    /* On a terminal (and without -q) git shows how far the fetch is;
     * anywhere else it stays quiet (bundle/git_run.h). */
    bool progress = git_progress_wanted();
    const char *args[] = {"fetch",
                          progress ? "--progress" : "--quiet",
                          "--prune",
                          "--no-recurse-submodules",
                          "--",
                          url,
                          "+refs/heads/*:refs/heads/*",
                          "+refs/tags/*:refs/tags/*",
                          "+HEAD:refs/agentstack/upstream-head",
                          NULL};
    strbuf e = SB_INIT;
    int rc = run_git_in(bare, NULL, NULL, args, NULL, 0, progress, NULL, &e, err);
    if (rc > 0)
        rc = git_failed(err, "fetch", url, &e);
    sb_release(&e);
    return rc == 0 ? 0 : -1;
}

/* Makes store/git/<slug>/ (a bare repository fetched from url) unless it
 * exists; *fresh = 1 when it was just fetched. */
static int ensure_clone(const char *home, const char *url, const char *slug, strbuf *bare,
                        bool *fresh, struct as_err *err)
{
    *fresh = false;
    sb_addf(bare, "%s/store/git/%s", home, slug);
    if (fs_is_dir(bare->buf)) {
        strbuf have = SB_INIT;
        int rc = 0;
        if (read_marker(bare->buf, &have) < 0 || strcmp(have.buf, url) != 0) {
            as_err_set(err, "%s holds another repository (%s), not %s", bare->buf,
                       have.len ? have.buf : "unknown", url);
            as_err_hint(err, "the two URLs share a store slug; remove %s to re-fetch", bare->buf);
            rc = -1;
        }
        sb_release(&have);
        return rc;
    }
    strbuf parent = SB_INIT, tmp = SB_INIT;
    sb_addf(&parent, "%s/store/git", home);
    int rc = fs_mkdirs(parent.buf, 0700, err);
    char r[17];
    if (rc == 0)
        rc = rand_hex(r, 8, err);
    if (rc == 0) {
        sb_addf(&tmp, "%s/.tmp-%s", parent.buf, r);
        const char *args[] = {"init", "--quiet", "--bare", tmp.buf, NULL};
        strbuf e = SB_INIT;
        int g = run_git(NULL, NULL, NULL, args, NULL, &e, err);
        if (g > 0)
            rc = git_failed(err, "init for", url, &e);
        else if (g < 0)
            rc = -1;
        sb_release(&e);
    }
    if (rc == 0) {
        char *mp = xasprintf("%s/%s", tmp.buf, GIT_MARKER);
        char *line = xasprintf("%s\n", url);
        struct fs_write_opts o = {.mode = 0600, .symlinks = FS_SYMLINK_REFUSE};
        rc = fs_write_atomic(mp, line, strlen(line), &o, err);
        free(mp);
        free(line);
    }
    if (rc == 0)
        rc = fetch(tmp.buf, url, err);
    if (rc == 0) {
        if (renameat2(AT_FDCWD, tmp.buf, AT_FDCWD, bare->buf, RENAME_NOREPLACE) != 0) {
            if (errno != EEXIST && errno != ENOTEMPTY)
                rc = as_err_errno(err, "placing %s", bare->buf);
            /* else: another process placed the same clone first; use it. */
        } else {
            *fresh = true;
        }
    }
    if (tmp.len && fs_exists(tmp.buf)) {
        struct as_err ignored = AS_ERR_INIT;
        (void)fs_rmtree(tmp.buf, &ignored);
    }
    sb_release(&parent);
    sb_release(&tmp);
    return rc;
}

/* spec^{commit} in the clone → commit; 1 found, 0 not, -1 error. */
static int rev_parse(const char *bare, const char *spec, strbuf *commit, struct as_err *err)
{
    char *want = xasprintf("%s^{commit}", spec);
    const char *args[] = {"rev-parse", "--verify", "--quiet", "--end-of-options", want, NULL};
    strbuf out = SB_INIT, e = SB_INIT;
    int rc = run_git(bare, NULL, NULL, args, &out, &e, err);
    free(want);
    sb_rtrim(&out);
    int found = 0;
    if (rc == 0 && git_is_commit(out.buf)) {
        sb_reset(commit);
        sb_adds(commit, out.buf);
        found = 1;
    } else if (rc < 0) {
        found = -1;
    }
    sb_release(&out);
    sb_release(&e);
    return found;
}

/* ---- the checkout --------------------------------------------------------- */

static int make_checkout(const char *bare, const char *co_parent, const char *final,
                         const char *commit, const char *url, struct as_err *err)
{
    int rc = fs_mkdirs(co_parent, 0700, err);
    char r[17];
    strbuf tmp = SB_INIT, index = SB_INIT;
    if (rc == 0)
        rc = rand_hex(r, 8, err);
    if (rc == 0) {
        sb_addf(&tmp, "%s/.tmp-%s", co_parent, r);
        sb_addf(&index, "%s/.tmp-%s.index", co_parent, r);
        if (mkdir(tmp.buf, 0700) != 0)
            rc = as_err_errno(err, "creating %s", tmp.buf);
    }
    if (rc == 0) {
        const char *rt[] = {"read-tree", commit, NULL};
        const char *co[] = {"checkout-index", "--all", "--force", NULL};
        strbuf e = SB_INIT;
        int g = run_git(bare, tmp.buf, index.buf, rt, NULL, &e, err);
        if (g == 0)
            g = run_git(bare, tmp.buf, index.buf, co, NULL, &e, err);
        if (g > 0)
            rc = git_failed(err, "checkout of", url, &e);
        else if (g < 0)
            rc = -1;
        sb_release(&e);
    }
    if (rc == 0 && renameat2(AT_FDCWD, tmp.buf, AT_FDCWD, final, RENAME_NOREPLACE) != 0 &&
        errno != EEXIST && errno != ENOTEMPTY)
        rc = as_err_errno(err, "placing %s", final);
    struct as_err ignored = AS_ERR_INIT;
    if (tmp.len && fs_exists(tmp.buf))
        (void)fs_rmtree(tmp.buf, &ignored);
    if (index.len)
        unlink(index.buf);
    sb_release(&tmp);
    sb_release(&index);
    return rc;
}

int git_resolve(const char *home, const char *url, const char *rev, bool fetch_ok, strbuf *commit,
                strbuf *dir, struct as_err *err)
{
    if (git_check_url(url, err) < 0 || check_rev(rev, err) < 0)
        return -1;
    strbuf slug = SB_INIT, co_parent = SB_INIT;
    git_slug(url, &slug);
    sb_addf(&co_parent, "%s/store/co/%s", home, slug.buf);
    int rc = 0;
    sb_reset(commit);
    sb_reset(dir);
    if (git_is_commit(rev)) {
        sb_addf(dir, "%s/%s", co_parent.buf, rev);
        if (fs_is_dir(dir->buf)) {
            sb_adds(commit, rev);
            rc = 1;
            goto out;
        }
    }
    if (!fetch_ok)
        goto out; /* not cached */
    strbuf bare = SB_INIT;
    bool fresh = false;
    rc = ensure_clone(home, url, slug.buf, &bare, &fresh, err);
    if (rc == 0) {
        /* A commit the clone already holds needs no network. */
        int have = git_is_commit(rev) ? rev_parse(bare.buf, rev, commit, err) : 0;
        if (have < 0)
            rc = -1;
        else if (!have && !fresh)
            rc = fetch(bare.buf, url, err);
        if (rc == 0 && !have) {
            const char *spec = rev ? rev : "refs/agentstack/upstream-head";
            int f = rev_parse(bare.buf, spec, commit, err);
            if (f < 0) {
                rc = -1;
            } else if (f == 0) {
                as_err_set(err, "%s has no branch, tag or commit '%s'", url, rev ? rev : "HEAD");
                rc = -1;
            }
        }
    }
    if (rc == 0) {
        sb_reset(dir);
        sb_addf(dir, "%s/%s", co_parent.buf, commit->buf);
        if (!fs_is_dir(dir->buf))
            rc = make_checkout(bare.buf, co_parent.buf, dir->buf, commit->buf, url, err);
        if (rc == 0)
            rc = 1;
    }
    sb_release(&bare);
out:
    sb_release(&slug);
    sb_release(&co_parent);
    return rc;
}

/* ---- ignore rules of a work tree ------------------------------------------ */

/* Escapes s for a gitignore pattern: every glob or special byte gets a '\'. */
static void ignore_escape(const char *s, strbuf *out)
{
    for (; *s; s++) {
        if (strchr("*?[]\\!# ", *s))
            sb_addc(out, '\\');
        sb_addc(out, *s);
    }
}

/* A private temp file holding one pattern line (the "what if" rule). */
static int write_rule_file(const char *pattern, strbuf *path, struct as_err *err)
{
    const char *tmp = getenv("TMPDIR");
    sb_addf(path, "%s/agentstack-ignore-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    int fd = mkstemp(path->buf);
    if (fd < 0)
        return as_err_errno(err, "cannot create a temporary file in %s", path->buf);
    size_t n = strlen(pattern);
    bool ok = write(fd, pattern, n) == (ssize_t)n && write(fd, "\n", 1) == 1;
    close(fd);
    if (!ok) {
        unlink(path->buf);
        return as_err_errno(err, "cannot write %s", path->buf);
    }
    return 0;
}

/* Any ".git" at dir or above (git itself could not be asked). */
static bool git_marker_above(const char *dir)
{
    strbuf d = SB_INIT;
    sb_adds(&d, dir);
    bool hit = false;
    for (;;) {
        char *g = xasprintf("%s/.git", d.len ? d.buf : "");
        hit = fs_exists(g);
        free(g);
        char *slash = strrchr(d.buf, '/');
        if (hit || !slash)
            break;
        sb_setlen(&d, (size_t)(slash - d.buf));
    }
    sb_release(&d);
    return hit;
}

int git_ignore_check(const char *dir, const char *rel, const char *what_if, struct git_ignore *out,
                     struct as_err *err)
{
    *out = (struct git_ignore){.rule = SB_INIT};
    if (!rel[0] || rel[0] == '/' || rel[0] == '-' || has_control(rel) || has_control(dir))
        return as_err_set(err, "cannot ask git about '%s' in %s", rel, dir);
    strbuf o = SB_INIT, e = SB_INIT, rule = SB_INIT, rulefile = SB_INIT, opt = SB_INIT;
    int rc = -1;
    /* -C dir: git finds the repository holding dir the way the user's git would. */
    const char *probe[] = {"-C", dir, "rev-parse", "--is-inside-work-tree", "--show-prefix", NULL};
    int g = run_git(NULL, NULL, NULL, probe, &o, &e, err);
    if (g < 0) {
        if (git_marker_above(dir)) {
            as_err_prefix(err, "cannot check whether git ignores %s/%s", dir, rel);
            as_err_hint(err, "install git, or keep the values out of the project "
                             "(the OS keychain or the file store)");
            goto out;
        }
        as_err_clear(err);
        rc = 0; /* no git here and no repository either */
        goto out;
    }
    if (g != 0) {
        if (strstr(e.buf ? e.buf : "", "not a git repository")) {
            rc = 0;
            goto out;
        }
        git_failed(err, "rev-parse in", dir, &e);
        goto out;
    }
    /* "true\n<prefix>\n" inside a work tree; "false" inside .git itself. */
    if (!o.buf || strncmp(o.buf, "true\n", 5) != 0) {
        rc = 0;
        goto out;
    }
    out->in_work_tree = true;
    char *prefix = xstrdup(o.buf + 5);
    prefix[strcspn(prefix, "\n")] = '\0';
    if (what_if) {
        /* The rule as it would read in <dir>/.gitignore, anchored at the top
         * instead and consulted with the lowest precedence of all: when git
         * then ignores rel, no other rule decides for it, so appending the
         * rule to <dir>/.gitignore is what makes rel ignored. */
        sb_addc(&rule, '/');
        ignore_escape(prefix, &rule);
        sb_adds(&rule, what_if[0] == '/' ? what_if + 1 : what_if);
        if (write_rule_file(rule.buf, &rulefile, err) < 0) {
            free(prefix);
            goto out;
        }
        sb_addf(&opt, "core.excludesFile=%s", rulefile.buf);
    } else {
        /* Only the repository's own rules (.gitignore files, info/exclude):
         * a personal excludes file protects nobody else's clone. */
        sb_adds(&opt, "core.excludesFile=/dev/null");
    }
    free(prefix);
    sb_reset(&o);
    sb_reset(&e);
    /* -v -n -z: the deciding rule (or none) for rel, NUL-separated; a tracked
     * path is never ignored, whatever the rules say. */
    const char *ask[] = {"-C", dir,  "-c", opt.buf,   "check-ignore",
                         "-v", "-n", "-z", "--stdin", NULL};
    g = run_git_in(NULL, NULL, NULL, ask, rel, strlen(rel) + 1, false, &o, &e, err);
    if (rulefile.len)
        unlink(rulefile.buf);
    if (g < 0)
        goto out;
    if (g != 0 && g != 1) {
        git_failed(err, "check-ignore in", dir, &e);
        goto out;
    }
    /* source NUL line NUL pattern NUL path NUL */
    const char *f[4] = {"", "", "", ""};
    size_t at = 0;
    for (int k = 0; k < 4 && o.buf && at < o.len; k++) {
        f[k] = o.buf + at;
        at += strlen(o.buf + at) + 1;
    }
    out->ignored = f[2][0] && f[2][0] != '!';
    if (f[2][0] && !what_if) { /* source:line:pattern, shown to people */
        term_sanitize(&out->rule, f[0], strlen(f[0]));
        sb_addf(&out->rule, ":%s:", f[1]);
        term_sanitize(&out->rule, f[2], strlen(f[2]));
    }
    rc = 0;
out:
    sb_release(&o);
    sb_release(&e);
    sb_release(&rule);
    sb_release(&rulefile);
    sb_release(&opt);
    return rc;
}

void git_ignore_free(struct git_ignore *g)
{
    sb_release(&g->rule);
}
