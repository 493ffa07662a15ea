/* sh rules git — git's destructive subcommands and the ways git runs
 * commands of its own: aliases (-c alias.x='!…', the config files' [alias]
 * sections, git config alias.x …), command-valued config (core.pager,
 * core.sshCommand, filters, credential helpers …), -C directories, and the
 * subcommands that run or write (rebase --exec, bisect run, submodule
 * foreach, clone/worktree add targets, --output files). */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/sh_judge.h"

/* ---- git ----------------------------------------------------------------- */

static const char *const git_builtin[] = {"add",
                                          "am",
                                          "annotate",
                                          "apply",
                                          "archive",
                                          "bisect",
                                          "blame",
                                          "branch",
                                          "bundle",
                                          "cat-file",
                                          "check-attr",
                                          "check-ignore",
                                          "check-mailmap",
                                          "check-ref-format",
                                          "checkout",
                                          "checkout-index",
                                          "cherry",
                                          "cherry-pick",
                                          "clean",
                                          "clone",
                                          "column",
                                          "commit",
                                          "commit-graph",
                                          "commit-tree",
                                          "config",
                                          "count-objects",
                                          "credential",
                                          "describe",
                                          "diff",
                                          "diff-files",
                                          "diff-index",
                                          "diff-tree",
                                          "difftool",
                                          "fast-export",
                                          "fast-import",
                                          "fetch",
                                          "fetch-pack",
                                          "filter-branch",
                                          "fmt-merge-msg",
                                          "for-each-ref",
                                          "for-each-repo",
                                          "format-patch",
                                          "fsck",
                                          "gc",
                                          "get-tar-commit-id",
                                          "grep",
                                          "hash-object",
                                          "help",
                                          "init",
                                          "interpret-trailers",
                                          "log",
                                          "ls-files",
                                          "ls-remote",
                                          "ls-tree",
                                          "mailinfo",
                                          "mailsplit",
                                          "maintenance",
                                          "merge",
                                          "merge-base",
                                          "merge-file",
                                          "merge-tree",
                                          "mergetool",
                                          "mktag",
                                          "mktree",
                                          "multi-pack-index",
                                          "mv",
                                          "name-rev",
                                          "notes",
                                          "pack-objects",
                                          "pack-refs",
                                          "patch-id",
                                          "prune",
                                          "prune-packed",
                                          "pull",
                                          "push",
                                          "range-diff",
                                          "read-tree",
                                          "rebase",
                                          "reflog",
                                          "remote",
                                          "repack",
                                          "replace",
                                          "rerere",
                                          "reset",
                                          "restore",
                                          "rev-list",
                                          "rev-parse",
                                          "revert",
                                          "rm",
                                          "shortlog",
                                          "show",
                                          "show-branch",
                                          "show-index",
                                          "show-ref",
                                          "sparse-checkout",
                                          "stash",
                                          "status",
                                          "stripspace",
                                          "submodule",
                                          "switch",
                                          "symbolic-ref",
                                          "tag",
                                          "unpack-file",
                                          "unpack-objects",
                                          "update-index",
                                          "update-ref",
                                          "update-server-info",
                                          "var",
                                          "verify-commit",
                                          "verify-pack",
                                          "verify-tag",
                                          "version",
                                          "whatchanged",
                                          "worktree",
                                          "write-tree",
                                          "lfs",
                                          "blame",
                                          "gui",
                                          "citool",
                                          "send-email",
                                          "request-pull",
                                          "instaweb",
                                          "bugreport",
                                          "diagnose",
                                          NULL};

/* Config keys whose values git runs (or that make it run files). */
static bool git_code_key(const char *k)
{
    static const char *const exact[] = {"core.pager",
                                        "core.sshcommand",
                                        "core.editor",
                                        "core.fsmonitor",
                                        "core.askpass",
                                        "core.gitproxy",
                                        "diff.external",
                                        "sequence.editor",
                                        "gpg.program",
                                        "credential.helper",
                                        "uploadpack.packobjectshook",
                                        "pager.log",
                                        "pager.diff",
                                        "pager.show",
                                        "web.browser",
                                        "sendemail.smtpserver",
                                        NULL};
    char low[256];
    size_t n = strlen(k);
    if (n >= sizeof low)
        return true;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)k[i]);
    if (sh_in(low, exact) || !strncmp(low, "pager.", 6))
        return true;
    const char *dot = strrchr(low, '.');
    if (!dot)
        return false;
    static const char *const tails[] = {".textconv",   ".command",     ".clean",  ".smudge",
                                        ".process",    ".driver",      ".cmd",    ".program",
                                        ".uploadpack", ".receivepack", ".helper", NULL};
    return sh_in(dot, tails) || !strncmp(low, "filter.", 7) || !strncmp(low, "merge.", 6);
}

static bool git_file_key(const char *k)
{
    char low[256];
    size_t n = strlen(k);
    if (n >= sizeof low)
        return true;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)k[i]);
    return !strcmp(low, "core.hookspath") || !strcmp(low, "include.path") ||
           !strncmp(low, "includeif.", 10) || !strcmp(low, "core.worktree") ||
           !strcmp(low, "protocol.ext.allow") || !strcmp(low, "protocol.allow");
}

struct galias {
    const char *name, *value;
};

/* One key=value of git config (-c, git config K V): aliases are recorded,
 * command-valued keys judged as commands, file-valued keys refused. */
static void git_config_pair(struct sh_j *j, struct sh_cmd *c, const char *k, const char *v,
                            struct galias *alias)
{
    if (!strncasecmp(k, "alias.", 6)) {
        if (v[0] == '!')
            sh_judge_text(j, c->st, v + 1, strlen(v + 1), NULL, 0);
        else if (alias) {
            alias->name = k + 6;
            alias->value = v;
        }
        return;
    }
    if (git_code_key(k)) {
        sh_judge_text(j, c->st, v, strlen(v), NULL, 0);
        return;
    }
    if (git_file_key(k))
        sh_unreadable(j, c, "git config %s points git at files it runs or reads", k);
}

/* An alias defined in git's config files (the repository's, the user's,
 * the system's): its value, or NULL. */
static const char *git_alias_from_files(struct sh_j *j, const struct sh_cmd *c, const char *name)
{
    const char *files[4] = {0};
    size_t nf = 0;
    strbuf p = SB_INIT;
    for (const char *d = c->st->cwd; d && nf == 0;) {
        /* the repository: nearest .git/config */
        strbuf cur = SB_INIT;
        sb_adds(&cur, d);
        for (int k = 0; k < 256; k++) {
            sb_reset(&p);
            sb_addf(&p, "%s%s.git/config", cur.buf, cur.len > 1 ? "/" : "");
            if (fs_exists(p.buf)) {
                files[nf++] = sh_strndup(j->a, p.buf, p.len);
                break;
            }
            if (cur.len <= 1)
                break;
            char *slash = strrchr(cur.buf, '/');
            sb_setlen(&cur, slash == cur.buf ? 1 : (size_t)(slash - cur.buf));
        }
        sb_release(&cur);
        break;
    }
    if (j->x->home) {
        sb_reset(&p);
        sb_addf(&p, "%s/.gitconfig", j->x->home);
        files[nf++] = sh_strndup(j->a, p.buf, p.len);
        sb_reset(&p);
        const char *xdg = getenv("XDG_CONFIG_HOME");
        if (xdg && xdg[0] == '/')
            sb_addf(&p, "%s/git/config", xdg);
        else
            sb_addf(&p, "%s/.config/git/config", j->x->home);
        files[nf++] = sh_strndup(j->a, p.buf, p.len);
    }
    files[nf++] = "/etc/gitconfig";
    sb_release(&p);
    const char *found = NULL;
    for (size_t f = 0; f < nf && !found; f++) {
        strbuf text = SB_INIT;
        struct as_err e = AS_ERR_INIT;
        if (fs_read_file(files[f], 1 << 20, 0, &text, &e) < 0) {
            sb_release(&text);
            continue;
        }
        bool in_alias = false;
        for (char *line = text.buf; line && *line && !found;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            while (*line == ' ' || *line == '\t')
                line++;
            if (*line == '[') {
                in_alias = !strncasecmp(line, "[alias]", 7);
            } else if (in_alias) {
                size_t nl2 = strlen(name);
                if (!strncasecmp(line, name, nl2) &&
                    (line[nl2] == ' ' || line[nl2] == '\t' || line[nl2] == '=')) {
                    const char *eq = strchr(line, '=');
                    if (eq) {
                        eq++;
                        while (*eq == ' ' || *eq == '\t')
                            eq++;
                        found = sh_strndup(j->a, eq, strlen(eq));
                    }
                }
            }
            line = nl ? nl + 1 : NULL;
        }
        sb_release(&text);
    }
    return found;
}

static void git_builtin_rules(struct sh_j *j, struct sh_cmd *c, const char *sub, size_t s);

void sh_rule_git(struct sh_j *j, struct sh_cmd *c, size_t p, int alias_depth)
{
    static const char *const argopts[] = {"--namespace", "--super-prefix", "--attr-source", NULL};
    struct galias alias = {0};
    size_t i = p + 1;
    struct sh_st *st = c->st;
    while (i < c->n && sh_is_flag(c->w[i].text) && !j->v->deny) {
        const struct sh_xw *w = &c->w[i];
        const char *t = w->text;
        if (w->unres) {
            sh_unreadable(j, c, "git with an option the guard cannot resolve (%s)", w->unres);
            return;
        }
        if (!strcmp(t, "-C") && i + 1 < c->n) {
            const struct sh_xw *d = &c->w[i + 1];
            if (d->unres || d->glob) {
                sh_unreadable(j, c, "git -C %s, a directory the guard cannot resolve",
                              sh_show(j, d));
                return;
            }
            struct sh_st *ns = sh_alloc(j->a, sizeof *ns);
            *ns = *st;
            ns->cwd = sh_abs(j, st, d->text);
            st = ns;
            c->st = st;
            i += 2;
            continue;
        }
        if ((!strcmp(t, "-c") && i + 1 < c->n) || !strncmp(t, "--config-env", 12)) {
            if (!strncmp(t, "--config-env", 12)) {
                const char *kv = t[12] == '=' ? t + 13 : sh_T(c, i + 1);
                char *k = sh_strndup(j->a, kv, strcspn(kv, "="));
                if (git_code_key(k) || git_file_key(k) || !strncasecmp(k, "alias.", 6)) {
                    sh_unreadable(j, c, "git --config-env %s takes a command from the environment",
                                  k);
                    return;
                }
                i += t[12] == '=' ? 1 : 2;
                continue;
            }
            const struct sh_xw *kv = &c->w[i + 1];
            if (kv->unres) {
                sh_unreadable(j, c, "git -c %s, a setting the guard cannot resolve",
                              sh_show(j, kv));
                return;
            }
            const char *eq = strchr(kv->text, '=');
            char *k = sh_strndup(j->a, kv->text, eq ? (size_t)(eq - kv->text) : kv->len);
            git_config_pair(j, c, k, eq ? eq + 1 : "true", &alias);
            i += 2;
            continue;
        }
        if (!strncmp(t, "--exec-path=", 12) || !strncmp(t, "--git-dir", 9) ||
            !strncmp(t, "--work-tree", 11)) {
            if (!strncmp(t, "--exec-path=", 12)) {
                sh_unreadable(j, c, "git --exec-path runs git commands from another directory");
                return;
            }
            i += strchr(t, '=') ? 1 : 2;
            continue;
        }
        bool takes = false;
        for (size_t k = 0; argopts[k]; k++)
            takes |= !strcmp(t, argopts[k]);
        i += takes ? 2 : 1;
    }
    if (j->v->deny || i >= c->n)
        return;
    /* git in the machine home writes it (init, add, commit, config …) */
    static const char *const ro[] = {"status",    "log",      "diff",    "show",     "ls-files",
                                     "rev-parse", "grep",     "blame",   "describe", "cat-file",
                                     "ls-tree",   "show-ref", "version", "help",     NULL};
    const struct guard_ctx *x = j->x;
    strbuf real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool in_home = st->cwd && (gi_under(st->cwd, x->ash) ||
                               (!strcmp(st->cwd, x->cwd)
                                    ? x->cwd_in_home
                                    : x->ash_real && fs_canonicalize(st->cwd, &real, &e) == 0 &&
                                          gi_under(real.buf, x->ash_real)));
    sb_release(&real);
    if (in_home && !sh_in(c->w[i].text, ro)) {
        sh_deny_authority(j, "git in agentstack's machine home writes consent, policy or evidence");
        return;
    }
    const struct sh_xw *sw = &c->w[i];
    if (sw->unres) {
        sh_unreadable(j, c, "a git subcommand that depends on %s", sw->unres);
        return;
    }
    const char *sub = sw->text;
    const char *aval = alias.name && !strcmp(alias.name, sub) ? alias.value : NULL;
    if (!aval && !sh_in(sub, git_builtin))
        aval = git_alias_from_files(j, c, sub);
    if (aval) {
        if (alias_depth > 4) {
            sh_unreadable(j, c, "git aliases nested too deeply");
            return;
        }
        if (aval[0] == '!') {
            sh_judge_text(j, c->st, aval + 1, strlen(aval + 1), NULL, 0);
            return;
        }
        /* the alias's words replace the subcommand */
        VEC(struct sh_xw) nw = VEC_INIT;
        for (size_t k = 0; k < i; k++)
            vec_push(&nw, c->w[k]);
        for (const char *s = aval; *s;) {
            while (*s == ' ' || *s == '\t')
                s++;
            size_t l = strcspn(s, " \t");
            if (l)
                vec_push(&nw, sh_mkword(j, sh_strndup(j->a, s, l), NULL));
            s += l;
        }
        for (size_t k = i + 1; k < c->n; k++)
            vec_push(&nw, c->w[k]);
        struct sh_cmd ac = *c;
        ac.w = sh_alloc(j->a, (nw.n + 1) * sizeof *ac.w);
        memcpy(ac.w, nw.v, nw.n * sizeof *ac.w);
        ac.n = nw.n;
        ac.unres_ok = sh_alloc(j->a, (nw.n + 1) * sizeof *ac.unres_ok);
        vec_free(&nw);
        sh_rule_git(j, &ac, p, alias_depth + 1);
        return;
    }
    if (!sh_in(sub, git_builtin)) {
        strbuf ext = SB_INIT;
        sb_addf(&ext, "git-%s", sub);
        const char *f = sh_resolve_program(j, c, ext.buf);
        sb_release(&ext);
        if (!f)
            return; /* git will answer "not a git command" */
        return;     /* an installed git extension: a program */
    }
    git_builtin_rules(j, c, sub, i + 1);
}

static void git_builtin_rules(struct sh_j *j, struct sh_cmd *c, const char *sub, size_t s)
{
    if (!strcmp(sub, "reset") && sh_has_word(c, s, "--hard"))
        sh_deny_builtin(j, "git reset --hard was refused — it discards uncommitted work");
    else if (!strcmp(sub, "clean") && sh_has_opt(c, s, 'f', "force"))
        sh_deny_builtin(j, "git clean -f was refused — it deletes untracked files");
    else if (!strcmp(sub, "checkout") && sh_has_word(c, s, "."))
        sh_deny_builtin(j, "git checkout . was refused — it discards uncommitted changes");
    else if (!strcmp(sub, "restore") && sh_has_word(c, s, ".") &&
             (!(sh_has_word(c, s, "--staged") || sh_has_opt(c, s, 'S', NULL)) ||
              sh_has_word(c, s, "--worktree") || sh_has_opt(c, s, 'W', NULL)))
        sh_deny_builtin(j, "git restore . was refused — it discards uncommitted changes");
    else if (!strcmp(sub, "push")) {
        bool force = sh_has_opt(c, s, 'f', "force");
        for (size_t k = s; k < c->n; k++)
            force |= c->w[k].text[0] == '+' && c->w[k].text[1];
        bool lease = false;
        for (size_t k = s; k < c->n; k++)
            lease |= !strncmp(c->w[k].text, "--force-with-lease", 18) ||
                     !strncmp(c->w[k].text, "--force-if-includes", 19);
        if (force && !lease)
            sh_deny_builtin(j, "git push --force was refused — it can overwrite others' commits "
                               "(use --force-with-lease)");
    } else if (!strcmp(sub, "stash") && s < c->n && sh_eq(&c->w[s], "clear")) {
        sh_deny_builtin(j, "git stash clear was refused — it deletes every stash");
    } else if (!strcmp(sub, "config")) {
        /* git config [scope] KEY VALUE: aliases and commands judged now */
        size_t k = s;
        while (k < c->n && sh_is_flag(c->w[k].text)) {
            const char *t = c->w[k].text;
            k += (!strcmp(t, "-f") || !strcmp(t, "--file") || !strcmp(t, "--blob") ||
                  !strcmp(t, "--type"))
                     ? 2
                     : 1;
        }
        if (k + 1 < c->n) {
            if (c->w[k].unres || c->w[k + 1].unres) {
                sh_unreadable(j, c, "git config with a key or value the guard cannot resolve");
                return;
            }
            git_config_pair(j, c, c->w[k].text, c->w[k + 1].text, NULL);
        }
    } else if (!strcmp(sub, "commit") || !strcmp(sub, "tag") || !strcmp(sub, "merge") ||
               !strcmp(sub, "notes") || !strcmp(sub, "stash")) {
        /* messages are data */
        for (size_t k = s; k + 1 < c->n; k++) {
            const char *t = c->w[k].text;
            if (!strcmp(t, "-m") || !strcmp(t, "--message"))
                c->unres_ok[k + 1] = true;
            if (!strncmp(t, "--message=", 10) || (!strncmp(t, "-m", 2) && t[2]))
                c->unres_ok[k] = true;
        }
        if (c->n && (!strncmp(c->w[c->n - 1].text, "--message=", 10)))
            c->unres_ok[c->n - 1] = true;
    } else if (!strcmp(sub, "rebase") || !strcmp(sub, "bisect") || !strcmp(sub, "submodule") ||
               !strcmp(sub, "filter-branch") || !strcmp(sub, "difftool") ||
               !strcmp(sub, "mergetool") || !strcmp(sub, "grep")) {
        for (size_t k = s; k < c->n && !j->v->deny; k++) {
            const char *t = c->w[k].text;
            bool cmdval =
                ((!strcmp(sub, "rebase") && (!strcmp(t, "-x") || !strcmp(t, "--exec"))) ||
                 (!strcmp(sub, "submodule") && !strcmp(t, "foreach")) ||
                 (!strcmp(sub, "filter-branch") && !strncmp(t, "--", 2) && strstr(t, "-filter")) ||
                 (!strcmp(sub, "difftool") && (!strcmp(t, "-x") || !strcmp(t, "--extcmd"))) ||
                 (!strcmp(sub, "grep") &&
                  (!strcmp(t, "-O") || !strcmp(t, "--open-files-in-pager"))));
            if (!strcmp(sub, "bisect") && !strcmp(t, "run")) {
                sh_judge_argv(j, c, k + 1, false, NULL);
                return;
            }
            if (cmdval && k + 1 < c->n) {
                if (c->w[k + 1].unres) {
                    sh_unreadable(j, c, "git %s runs a command that depends on %s", sub,
                                  c->w[k + 1].unres);
                    return;
                }
                c->unres_ok[k + 1] = true;
                sh_judge_joined(j, c, k + 1, "git");
                return;
            }
            const char *eqv = strchr(t, '=');
            if (eqv && ((!strcmp(sub, "rebase") && !strncmp(t, "--exec=", 7)) ||
                        (!strcmp(sub, "difftool") && !strncmp(t, "--extcmd=", 9)) ||
                        (!strcmp(sub, "grep") && !strncmp(t, "--open-files-in-pager=", 22))))
                sh_judge_text(j, c->st, eqv + 1, strlen(eqv + 1), NULL, 0);
        }
    } else if (!strcmp(sub, "apply") || !strcmp(sub, "am")) {
        /* the files a patch names, from its files or stdin */
        static const char *const dry[] = {"--check", "--stat", "--numstat", "--summary", NULL};
        bool writes = sh_has_word(c, s, "--apply");
        bool dry_run = false;
        for (size_t k = 0; dry[k]; k++)
            dry_run |= sh_has_word(c, s, dry[k]);
        if (dry_run && !writes)
            return;
        if (sh_has_word(c, s, "--unsafe-paths") || sh_has_word(c, s, "--directory")) {
            sh_unreadable(j, c, "git %s with paths outside the repository", sub);
            return;
        }
        bool any = false;
        for (size_t k = s; k < c->n && !j->v->deny; k++) {
            if (sh_is_flag(c->w[k].text))
                continue;
            any = true;
            sh_rule_patch_input(j, c, &c->w[k], "git apply");
        }
        if (!any)
            sh_rule_patch_input(j, c, NULL, "git apply");
    } else if (!strcmp(sub, "clone") || (!strcmp(sub, "worktree") && sh_has_word(c, s, "add"))) {
        /* the directory it creates */
        size_t last = c->n;
        for (size_t k = s; k < c->n; k++)
            if (!sh_is_flag(c->w[k].text) && !sh_eq(&c->w[k], "add"))
                last = k;
        size_t ops = 0;
        for (size_t k = s; k < c->n; k++)
            ops += !sh_is_flag(c->w[k].text) && !sh_eq(&c->w[k], "add");
        if (last < c->n && (ops >= 2 || !strcmp(sub, "worktree")))
            sh_operand(j, c, &c->w[last], OP_WRITE, "git");
    } else if (!strcmp(sub, "archive") || !strcmp(sub, "format-patch") || !strcmp(sub, "diff") ||
               !strcmp(sub, "log") || !strcmp(sub, "show")) {
        for (size_t k = s; k < c->n && !j->v->deny; k++) {
            const char *t = c->w[k].text;
            if ((!strcmp(t, "-o") || !strcmp(t, "--output") || !strcmp(t, "--output-directory")) &&
                k + 1 < c->n)
                sh_operand(j, c, &c->w[k + 1], OP_WRITE, "git");
            else if (!strncmp(t, "--output=", 9)) {
                struct sh_xw w = c->w[k];
                w.text += 9;
                w.active += 9;
                w.len -= 9;
                sh_operand(j, c, &w, OP_WRITE, "git");
            }
        }
    }
}
