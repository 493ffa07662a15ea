/* sh rules exec — programs that run other programs.
 *
 * Why: `sudo rm -rf ~`, `bash -o pipefail -c "…"`, `find . -exec rm {} +`,
 * `git -c alias.t='!agentstack trust .' t`, `watch rm -rf ~`, `xargs rm`
 * all run a command the guard must judge. Each wrapper here is modelled
 * with its own options, so the command it runs is found exactly; a wrapper
 * the guard cannot follow (a script from a pipe, a command from input, an
 * option it does not know) is refused as unreadable, never skipped.
 *
 * Also here: agentstack invocations judged by meaning (consent, policy,
 * secrets and the guard are a person's act), found by name, by path, and by
 * the identity of this binary (a renamed or linked copy); interpreters
 * (their inline code is scanned for the machine home and denied names,
 * never understood); git's aliases and command-valued config.
 */
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

bool sh_in(const char *s, const char *const *l)
{
    for (size_t i = 0; l[i]; i++)
        if (!strcmp(s, l[i]))
            return true;
    return false;
}

const char *sh_T(const struct sh_cmd *c, size_t i)
{
    return i < c->n ? c->w[i].text : "";
}

bool sh_has_opt(const struct sh_cmd *c, size_t from, char ch, const char *lng)
{
    for (size_t i = from; i < c->n; i++) {
        const char *t = c->w[i].text;
        if (!strcmp(t, "--"))
            return false;
        if (lng && !strncmp(t, "--", 2) && !strcmp(t + 2, lng))
            return true;
        if (t[0] == '-' && t[1] != '-' && t[1] && strchr(t + 1, ch))
            return true;
    }
    return false;
}

bool sh_has_word(const struct sh_cmd *c, size_t from, const char *s)
{
    for (size_t i = from; i < c->n; i++)
        if (sh_eq(&c->w[i], s))
            return true;
    return false;
}

/* A word as an owned sh_xw with plain text (for built argv lists). */
struct sh_xw sh_mkword(struct sh_j *j, const char *text, const char *unres)
{
    struct sh_xw w = {0};
    w.len = strlen(text);
    w.text = sh_strndup(j->a, text, w.len);
    w.active = sh_alloc(j->a, w.len + 1);
    w.unres = unres;
    return w;
}

/* ---- interpreters -------------------------------------------------------- */

struct interp {
    const char *name;
    const char *const inline_opts[6]; /* options whose value is code */
    const char *const arg_opts[10];   /* other options that take a value */
    bool cluster_e;                   /* perl: -pe CODE, -lne CODE */
};

static const struct interp interps[] = {
    {"python", {"-c"}, {"-W", "-X", "-Q", "--check-hash-based-pycs"}, false},
    {"pypy", {"-c"}, {"-W", "-X"}, false},
    {"node",
     {"-e", "--eval", "-p", "--print"},
     {"-r", "--require", "--import", "--input-type", "--loader", "--conditions", "-C"},
     false},
    {"nodejs", {"-e", "--eval", "-p", "--print"}, {"-r", "--require"}, false},
    {"bun", {"-e", "--eval", "-p", "--print"}, {"-r", "--preload", "--cwd"}, false},
    {"deno", {"eval"}, {}, false},
    {"ruby", {"-e"}, {"-r", "-I", "-C", "-E", "-F", "-x"}, false},
    {"perl", {"-e", "-E"}, {"-M", "-m", "-I", "-x", "-d", "-D", "-C"}, true},
    {"php", {"-r", "-B", "-R", "-E"}, {"-c", "-d", "-f", "-t", "-z"}, false},
    {"lua", {"-e"}, {"-l"}, false},
    {"luajit", {"-e"}, {"-l", "-j", "-O"}, false},
    {"Rscript", {"-e"}, {}, false},
    {"osascript", {"-e"}, {"-l", "-s"}, false},
    {"pwsh",
     {"-c", "-Command", "-command", "-EncodedCommand", "-e", "-ec"},
     {"-File", "-f"},
     false},
    {"tclsh", {}, {}, false},
    {"expect", {"-c"}, {"-f"}, false},
    {"julia", {"-e", "-E", "--eval", "--print"}, {"-J", "-L", "--project"}, false},
    {"elixir", {"-e", "--eval"}, {"-r", "--require"}, false},
    {"guile", {"-c"}, {"-l", "-e", "-x"}, false},
};

static const struct interp *interp_of(const char *b)
{
    if (!strncmp(b, "python", 6) && (b[6] == '\0' || isdigit((unsigned char)b[6])))
        return &interps[0];
    if (!strncmp(b, "pypy", 4))
        return &interps[1];
    if (!strncmp(b, "ruby", 4) && (b[4] == '\0' || isdigit((unsigned char)b[4])))
        return &interps[6];
    if (!strncmp(b, "perl", 4) && (b[4] == '\0' || isdigit((unsigned char)b[4])))
        return &interps[7];
    if (!strncmp(b, "php", 3) && (b[3] == '\0' || isdigit((unsigned char)b[3])))
        return &interps[8];
    if (!strncmp(b, "lua", 3) && (b[3] == '\0' || isdigit((unsigned char)b[3]) || b[3] == '.'))
        return &interps[9];
    if (!strcmp(b, "powershell"))
        return &interps[13];
    for (size_t i = 0; i < sizeof interps / sizeof *interps; i++)
        if (!strcmp(b, interps[i].name))
            return &interps[i];
    return NULL;
}

bool sh_opt_in(const char *t, const char *const *l, size_t max)
{
    for (size_t i = 0; i < max && l[i]; i++)
        if (!strcmp(t, l[i]))
            return true;
    return false;
}

static void rule_interp(struct sh_j *j, struct sh_cmd *c, size_t p, const struct interp *ip)
{
    const char *prog = sh_base(sh_T(c, p));
    bool code_seen = false, script = false, inplace = false;
    const char *codes[8];
    size_t ncodes = 0;
    size_t i = p + 1;
    if (!strcmp(ip->name, "deno") && i < c->n && !sh_eq(&c->w[i], "eval")) {
        return; /* deno run FILE, deno test …: a program */
    }
    for (; i < c->n && !j->v->deny; i++) {
        const struct sh_xw *w = &c->w[i];
        const char *t = w->text;
        if (w->unres && !code_seen) {
            sh_unreadable(j, c, "%s with an argument the guard cannot resolve (%s)", prog,
                          w->unres);
            return;
        }
        if (!strcmp(t, "--"))
            break;
        bool is_inline = sh_opt_in(t, ip->inline_opts, 6);
        if (!is_inline && ip->cluster_e && t[0] == '-' && t[1] != '-' && strlen(t) > 2 &&
            (t[strlen(t) - 1] == 'e' || t[strlen(t) - 1] == 'E'))
            is_inline = true;
        /* attached: -c'code', -eCODE */
        if (!is_inline && t[0] == '-' && t[1] && t[1] != '-' && strlen(t) > 2) {
            for (size_t k = 0; k < 6 && ip->inline_opts[k]; k++) {
                const char *o = ip->inline_opts[k];
                if (strlen(o) == 2 && !strncmp(t, o, 2) && !ip->cluster_e) {
                    code_seen = true;
                    if (ncodes < 8)
                        codes[ncodes++] = t + 2;
                    goto next;
                }
            }
        }
        if (is_inline) {
            if (!strcmp(t, "-EncodedCommand") || !strcmp(t, "-ec") || !strcmp(t, "-e")) {
                if (!strcmp(ip->name, "pwsh")) {
                    sh_unreadable(j, c, "%s runs an encoded command", prog);
                    return;
                }
            }
            if (i + 1 >= c->n)
                return;
            const struct sh_xw *code = &c->w[++i];
            if (code->unres) {
                sh_unreadable(j, c, "%s runs code that depends on %s", prog, code->unres);
                return;
            }
            c->unres_ok[i] = true;
            code_seen = true;
            if (ncodes < 8)
                codes[ncodes++] = code->text;
            /* python -c CODE ARGS: the rest are the code's arguments */
            if (!strcmp(ip->name, "python") || !strcmp(ip->name, "pypy"))
                break;
            continue;
        }
        /* perl -i / -pi / -i.bak, ruby -i: the file operands are rewritten */
        if ((!strcmp(ip->name, "perl") || !strcmp(ip->name, "ruby")) && t[0] == '-' &&
            t[1] != '-' && strchr(t + 1, 'i'))
            inplace = true;
        if (!strcmp(t, "-m") && (!strcmp(ip->name, "python") || !strcmp(ip->name, "pypy"))) {
            script = true; /* a module: a program */
            break;
        }
        if (sh_opt_in(t, ip->arg_opts, 10)) {
            i++;
            continue;
        }
        if (sh_is_flag(t))
            continue;
        if (!strcmp(t, "-")) {
            break; /* the program is on stdin */
        }
        if (code_seen && inplace) {
            sh_operand(j, c, w, OP_WRITE, prog);
            continue;
        }
        if (!code_seen)
            script = true; /* a script file: a program like any other */
        break;
    next:;
    }
    /* the code last: a refused file operand is the clearer reason */
    for (size_t k = 0; k < ncodes && !j->v->deny; k++)
        sh_judge_code(j, c, prog, codes[k], strlen(codes[k]));
    if (j->v->deny || code_seen || script)
        return;
    /* no script and no inline code: the program comes from stdin */
    if ((c->in == IN_HEREDOC || c->in == IN_HERESTR) && c->in_known) {
        sh_judge_code(j, c, prog, c->in_text, c->in_len);
    } else if (c->in == IN_HEREDOC || c->in == IN_HERESTR || c->in == IN_PIPE) {
        sh_unreadable(j, c, "%s reads its program from %s the guard cannot read", prog,
                      c->in == IN_PIPE ? "a pipe" : "input");
    } else if (c->in == IN_FILE) {
        /* < script.py: a program file */
    }
}

/* ---- shells -------------------------------------------------------------- */

static const char *const shells[] = {"sh",  "bash",  "zsh",  "dash",  "ksh",  "mksh", "yash",
                                     "ash", "rbash", "lksh", "pdksh", "posh", "oksh", NULL};
static const char *const other_shells[] = {"fish", "csh", "tcsh", "nu", "xonsh", "elvish", NULL};

static void rule_shell(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    const char *prog = sh_base(sh_T(c, p));
    bool dash_c = false, dash_s = false;
    size_t i = p + 1;
    for (; i < c->n; i++) {
        const struct sh_xw *w = &c->w[i];
        const char *t = w->text;
        if (w->unres) {
            sh_unreadable(j, c, "%s with an option the guard cannot resolve (%s)", prog, w->unres);
            return;
        }
        if (!strcmp(t, "--") || !strcmp(t, "-")) {
            i++;
            break;
        }
        if (!strcmp(t, "--rcfile") || !strcmp(t, "--init-file")) {
            if (i + 1 < c->n)
                sh_operand(j, c, &c->w[i + 1], OP_READ, prog);
            i++;
            continue;
        }
        if (!strncmp(t, "--", 2)) {
            static const char *const longs[] = {"--norc",
                                                "--noprofile",
                                                "--login",
                                                "--posix",
                                                "--verbose",
                                                "--restricted",
                                                "--noediting",
                                                "--debugger",
                                                "--dump-strings",
                                                "--pretty-print",
                                                "--dump-po-strings",
                                                "--version",
                                                "--help",
                                                "--emulate",
                                                "--no-rcs",
                                                "--interactive",
                                                NULL};
            if (!sh_in(t, longs)) {
                sh_unreadable(j, c, "%s with the option %s", prog, sh_show(j, w));
                return;
            }
            if (!strcmp(t, "--emulate"))
                i++;
            continue;
        }
        if ((t[0] == '-' || t[0] == '+') && t[1]) {
            if (!strcmp(t + 1, "o") || !strcmp(t + 1, "O")) {
                i++;
                continue;
            }
            for (const char *q = t + 1; *q; q++) {
                if (*q == 'c' && t[0] == '-')
                    dash_c = true;
                else if (*q == 's')
                    dash_s = true;
                else if (*q == 'o' || *q == 'O')
                    i++; /* -eo pipefail: the value follows */
                else if (!strchr("abefhikmnprtuvxBCEHPTlGNX", *q)) {
                    sh_unreadable(j, c, "%s with the option %s", prog, sh_show(j, w));
                    return;
                }
            }
            continue;
        }
        break;
    }
    if (dash_c) {
        if (i >= c->n) {
            sh_unreadable(j, c, "%s -c without a command", prog);
            return;
        }
        const struct sh_xw *body = &c->w[i];
        if (body->unres) {
            sh_unreadable(j, c, "%s -c runs a command that depends on %s", prog, body->unres);
            return;
        }
        c->unres_ok[i] = true;
        /* $0 $1 … of the body */
        size_t np = c->n - i - 1;
        const char **pos = sh_alloc(j->a, (np + 1) * sizeof *pos);
        bool known = true;
        for (size_t k = 0; k < np; k++) {
            const struct sh_xw *a = &c->w[i + 1 + k];
            pos[k] = a->unres || a->split_unknown ? NULL : a->text;
            known &= pos[k] != NULL;
            c->unres_ok[i + 1 + k] = true;
        }
        (void)known;
        sh_judge_text(j, c->st, body->text, body->len, np ? pos : (const char *[]){"sh"},
                      np ? np : 1);
        return;
    }
    if (i < c->n && !dash_s)
        return; /* a script file: a program */
    /* commands from stdin */
    if ((c->in == IN_HEREDOC || c->in == IN_HERESTR) && c->in_known) {
        size_t np = c->n > i ? c->n - i : 0;
        const char **pos = sh_alloc(j->a, (np + 2) * sizeof *pos);
        pos[0] = prog;
        for (size_t k = 0; k < np; k++)
            pos[k + 1] = c->w[i + k].unres ? NULL : c->w[i + k].text;
        sh_judge_text(j, c->st, c->in_text, c->in_len, pos, np + 1);
    } else if (c->in == IN_FILE) {
        /* sh < script.sh: a program file */
    } else {
        sh_unreadable(j, c, "%s reads its commands from %s, which the guard cannot read", prog,
                      c->in == IN_PIPE ? "a pipe" : "its input");
    }
}

/* ---- wrappers ------------------------------------------------------------ */

enum wflag {
    WF_ENV = 1,  /* NAME=value words before the command */
    WF_TAIL = 2, /* appends words from its input (xargs) */
    WF_CWD = 4,  /* has an option that changes the directory: refused when used */
};

struct wrapper {
    const char *name;
    const char *const argopts[24]; /* options taking the next word */
    const char *const cmdopts[4];  /* options whose value is a command string */
    const char *const cwdopts[4];  /* options that change the working directory */
    int positional;                /* operands before the command */
    unsigned flags;
};

static const struct wrapper wrappers[] = {
    {"sudo",
     {"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--host",
      "--prompt", "--role", "--type", "--other-user", "--close-from", "--command-timeout"},
     {},
     {"-D", "--chdir"},
     0,
     WF_ENV},
    {"doas", {"-u", "-C"}, {}, {}, 0, 0},
    {"su",
     {"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w"},
     {"-c", "--command"},
     {},
     0,
     0},
    {"runuser", {"-u", "--user", "-s", "--shell", "-g", "-G", "-w"}, {"-c", "--command"}, {}, 0, 0},
    {"sg", {}, {"-c"}, {}, 1, 0},
    {"env", {"-u", "--unset", "-a", "--argv0"}, {}, {"-C", "--chdir"}, 0, WF_ENV},
    {"nice", {"-n", "--adjustment"}, {}, {}, 0, 0},
    {"ionice", {"-c", "-n", "-p", "-P", "-u", "-t", "--class", "--classdata"}, {}, {}, 0, 0},
    {"nohup", {}, {}, {}, 0, 0},
    {"setsid", {}, {}, {}, 0, 0},
    {"time", {"-f", "--format", "-o", "--output"}, {}, {}, 0, 0},
    {"stdbuf", {"-i", "-o", "-e", "--input", "--output", "--error"}, {}, {}, 0, 0},
    {"chronic", {}, {}, {}, 0, 0},
    {"unbuffer", {}, {}, {}, 0, 0},
    {"caffeinate", {"-t", "-w"}, {}, {}, 0, 0},
    {"noglob", {}, {}, {}, 0, 0},
    {"builtin", {}, {}, {}, 0, 0},
    {"exec", {"-a"}, {}, {}, 0, 0},
    {"command", {}, {}, {}, 0, 0},
    {"taskset", {"-c", "--cpu-list"}, {}, {}, 1, 0},
    {"chrt", {"-T", "-P", "-D"}, {}, {}, 1, 0},
    {"timeout", {"-s", "-k", "--signal", "--kill-after"}, {}, {}, 1, 0},
    {"flock",
     {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"},
     {"-c", "--command"},
     {},
     1,
     0},
    {"strace",
     {"-o", "-e", "-p", "-s", "-I", "-a", "-b", "-E", "-u", "-O", "-S", "-X", "-P", "--output",
      "--trace", "--signal", "--attach", "--user"},
     {},
     {},
     0,
     WF_ENV},
    {"ltrace", {"-o", "-e", "-p", "-s", "-n", "-u", "-L", "-x", "-a", "-A", "-F"}, {}, {}, 0, 0},
    {"nsenter",
     {"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-n", "-u", "-i", "-p", "-U", "-C",
      "-T"},
     {},
     {"-r", "--root", "-w", "--wd"},
     0,
     0},
    {"unshare",
     {"--propagation", "--setgroups", "--map-user", "--map-group", "-S", "-G"},
     {},
     {"-R", "--root", "-w", "--wd"},
     0,
     0},
    {"systemd-run",
     {"-u", "--unit", "-p", "--property", "-E", "--setenv", "--uid", "--gid", "--nice", "-M",
      "--machine", "--slice", "--description", "-H", "--host", "--on-calendar", "--on-active"},
     {},
     {"--working-directory", "-d"},
     0,
     0},
    {"setpriv",
     {"--reuid", "--regid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
      "--securebits", "--selinux-label", "--apparmor-profile"},
     {},
     {},
     0,
     0},
    {"firejail", {}, {}, {}, 0, 0},
    {"valgrind", {}, {}, {}, 0, 0},
    {"dbus-run-session", {}, {}, {}, 0, 0},
    {"xvfb-run",
     {"-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e", "--error-file", "-w",
      "--wait", "-p", "--xauth-protocol"},
     {},
     {},
     0,
     0},
    {"fakeroot", {"-l", "--lib", "--faked", "-s", "-i", "-b"}, {}, {}, 0, 0},
    {"faketime", {"-f"}, {}, {}, 1, 0},
    {"torsocks", {"-u", "-p", "-a", "-P", "-i"}, {}, {}, 0, 0},
    {"proxychains", {"-f"}, {}, {}, 0, 0},
    {"proxychains4", {"-f"}, {}, {}, 0, 0},
    {"rlwrap", {"-a", "-b", "-f", "-H", "-l", "-p", "-P", "-s", "-S", "-t", "-w"}, {}, {}, 0, 0},
    {"catchsegv", {}, {}, {}, 0, 0},
    {"entr", {}, {}, {}, 0, WF_TAIL},
    {"xargs",
     {"-I", "-n", "-P", "-d", "-L", "-E", "-s", "-a", "--max-args", "--max-procs", "--delimiter",
      "--arg-file", "--replace", "--max-lines", "--eof", "--max-chars", "--process-slot-var"},
     {},
     {},
     0,
     WF_TAIL},
};

static const struct wrapper *wrapper_of(const char *b)
{
    for (size_t i = 0; i < sizeof wrappers / sizeof *wrappers; i++)
        if (!strcmp(b, wrappers[i].name))
            return &wrappers[i];
    return NULL;
}

static bool assignment_word(const struct sh_xw *w)
{
    const char *eq = strchr(w->text, '=');
    return eq && sh_is_name(w->text, (size_t)(eq - w->text));
}

/* Runs of commands that take "the rest" as one command string and hand it
 * to sh: watch (unless -x), su -c, flock -c, script -c, sg -c. */
void sh_judge_joined(struct sh_j *j, struct sh_cmd *c, size_t from, const char *prog)
{
    strbuf s = SB_INIT;
    for (size_t k = from; k < c->n; k++) {
        if (c->w[k].unres) {
            sh_unreadable(j, c, "%s runs a command that depends on %s", prog, c->w[k].unres);
            sb_release(&s);
            return;
        }
        c->unres_ok[k] = true;
        sb_addf(&s, "%s%s", k > from ? " " : "", c->w[k].text);
    }
    if (s.len)
        sh_judge_text(j, c->st, s.buf, s.len, NULL, 0);
    sb_release(&s);
}

/* Steps over one wrapper at index i; returns the index of its command, or
 * c->n when it has none / was refused; *stop when the wrapper itself was
 * fully judged (its command given as a string). */
static size_t skip_wrapper(struct sh_j *j, struct sh_cmd *c, size_t i, const struct wrapper *wr,
                           bool *stop)
{
    const char *prog = wr->name;
    size_t k = i + 1;
    if (wr->flags & WF_TAIL) {
        c->tail_unknown = true;
        c->via = prog;
    }
    while (k < c->n) {
        const struct sh_xw *w = &c->w[k];
        const char *t = w->text;
        if (w->unres) {
            sh_unreadable(j, c, "%s with a word the guard cannot resolve (%s)", prog, w->unres);
            *stop = true;
            return c->n;
        }
        if (!strcmp(t, "--")) {
            k++;
            break;
        }
        if ((wr->flags & WF_ENV) && assignment_word(w)) {
            /* env NAME=value: environment for the command */
            sh_judge_assignment(j, c, w, false);
            if (j->v->deny) {
                *stop = true;
                return c->n;
            }
            k++;
            continue;
        }
        if (!sh_is_flag(t))
            break;
        /* --opt=value */
        const char *eq = strchr(t, '=');
        char *opt = eq && t[1] == '-' ? sh_strndup(j->a, t, (size_t)(eq - t)) : (char *)t;
        if (sh_opt_in(opt, wr->cwdopts, 4) ||
            (wr->cwdopts[0] && !eq && strlen(t) > 2 && t[1] != '-' &&
             sh_opt_in((char[]){'-', t[1], 0}, wr->cwdopts, 4))) {
            sh_unreadable(j, c, "%s %s runs the command in another directory", prog, t);
            *stop = true;
            return c->n;
        }
        if (sh_opt_in(opt, wr->cmdopts, 4)) {
            const char *cmd = eq ? eq + 1 : NULL;
            size_t at = k;
            if (!cmd && k + 1 < c->n) {
                at = k + 1;
                if (c->w[at].unres) {
                    sh_unreadable(j, c, "%s runs a command that depends on %s", prog,
                                  c->w[at].unres);
                    *stop = true;
                    return c->n;
                }
                cmd = c->w[at].text;
                c->unres_ok[at] = true;
            }
            if (cmd)
                sh_judge_text(j, c->st, cmd, strlen(cmd), NULL, 0);
            *stop = true;
            return c->n;
        }
        if (!strcmp(prog, "env") && (!strcmp(t, "-S") || !strncmp(t, "--split-string", 14))) {
            const char *body = !strncmp(t, "--split-string=", 15) ? t + 15
                               : k + 1 < c->n                     ? c->w[k + 1].text
                                                                  : NULL;
            if (body)
                sh_judge_text(j, c->st, body, strlen(body), NULL, 0);
            *stop = true;
            return c->n;
        }
        if (!strcmp(prog, "sudo") && (!strcmp(t, "-e") || !strcmp(t, "--edit"))) {
            for (size_t m = k + 1; m < c->n; m++)
                sh_operand(j, c, &c->w[m], OP_WRITE, "sudo -e");
            *stop = true;
            return c->n;
        }
        if (!strcmp(prog, "xargs") && (!strcmp(t, "-a") || !strcmp(t, "--arg-file")) &&
            k + 1 < c->n)
            sh_operand(j, c, &c->w[k + 1], OP_READ, prog);
        if ((!strcmp(prog, "strace") || !strcmp(prog, "ltrace") || !strcmp(prog, "time")) &&
            (!strcmp(t, "-o") || !strcmp(t, "--output")) && k + 1 < c->n)
            sh_operand(j, c, &c->w[k + 1], OP_WRITE, prog);
        bool takes = !eq && sh_opt_in(t, wr->argopts, 24);
        k += takes ? 2 : 1;
    }
    if (j->v->deny) {
        *stop = true;
        return c->n;
    }
    for (int p = 0; p < wr->positional && k < c->n; p++) {
        if (!strcmp(prog, "flock") && k + 1 < c->n &&
            (sh_eq(&c->w[k + 1], "-c") || sh_eq(&c->w[k + 1], "--command"))) {
            if (k + 2 < c->n)
                sh_judge_joined(j, c, k + 2, prog);
            *stop = true;
            return c->n;
        }
        if (!strcmp(prog, "sg") && k + 1 < c->n && !sh_is_flag(c->w[k + 1].text)) {
            /* sg GROUP "command string" */
            sh_judge_joined(j, c, k + 1, prog);
            *stop = true;
            return c->n;
        }
        k++;
    }
    if (!strcmp(prog, "su") || !strcmp(prog, "runuser")) {
        /* su [user] without -c: an interactive shell on stdin */
        if (!strcmp(prog, "runuser") && k < c->n)
            return k;
        sh_unreadable(j, c, "%s without -c starts a shell that reads its input", prog);
        *stop = true;
        return c->n;
    }
    return k;
}

/* watch [opts] command…: joined and run by sh -c (-x: exec'd as is). */
static size_t rule_watch(struct sh_j *j, struct sh_cmd *c, size_t i, bool *stop)
{
    static const char *const a[] = {"-n", "--interval", "-d", "-q", "--equexit", NULL};
    bool exec = false;
    size_t k = i + 1;
    for (; k < c->n && sh_is_flag(c->w[k].text); k++) {
        const char *t = c->w[k].text;
        if (!strcmp(t, "--")) {
            k++;
            break;
        }
        if (!strcmp(t, "-x") || !strcmp(t, "--exec"))
            exec = true;
        else if (sh_in(t, a) && strcmp(t, "-d") != 0)
            k++;
    }
    if (exec)
        return k;
    sh_judge_joined(j, c, k, "watch");
    *stop = true;
    return c->n;
}

/* busybox APPLET args: the applet is the program. */
static size_t rule_busybox(struct sh_j *j, struct sh_cmd *c, size_t i, bool *stop)
{
    if (i + 1 < c->n && sh_is_flag(c->w[i + 1].text)) {
        sh_unreadable(j, c, "busybox %s", sh_show(j, &c->w[i + 1]));
        *stop = true;
        return c->n;
    }
    return i + 1;
}

/* chroot DIR cmd: paths resolve under DIR; only "/" is the same tree. */
static size_t rule_chroot(struct sh_j *j, struct sh_cmd *c, size_t i, bool *stop)
{
    size_t k = i + 1;
    while (k < c->n && sh_is_flag(c->w[k].text))
        k++;
    if (k < c->n && !c->w[k].unres && !strcmp(sh_abs(j, c->st, c->w[k].text), "/"))
        return k + 1;
    sh_unreadable(j, c, "chroot runs the command in another file tree");
    *stop = true;
    return c->n;
}

/* Package runners: npx PKG, npm exec, pnpm dlx, uvx, pipx run, … */
static size_t rule_runner(struct sh_j *j, struct sh_cmd *c, size_t i, size_t sub, bool *stop)
{
    static const char *const a[] = {"-p", "--package", "--with", "--python",       "--from",
                                    "-w", "--spec",    "--cwd",  "--node-options", NULL};
    size_t k = sub;
    for (; k < c->n; k++) {
        const char *t = c->w[k].text;
        if (c->w[k].unres) {
            sh_unreadable(j, c, "%s with a word the guard cannot resolve (%s)", sh_base(sh_T(c, i)),
                          c->w[k].unres);
            *stop = true;
            return c->n;
        }
        if (!strcmp(t, "--")) {
            k++;
            break;
        }
        if (!strcmp(t, "-c") || !strcmp(t, "--call")) {
            if (k + 1 < c->n) {
                c->unres_ok[k + 1] = true;
                sh_judge_text(j, c->st, c->w[k + 1].text, c->w[k + 1].len, NULL, 0);
            }
            *stop = true;
            return c->n;
        }
        if (!sh_is_flag(t))
            break;
        if (sh_in(t, a))
            k++;
    }
    if (k < c->n) {
        /* @scope/name@1.2 → name */
        const char *t = c->w[k].text;
        const char *slash = strrchr(t, '/');
        const char *name = slash ? slash + 1 : t;
        const char *at = strchr(name + (name[0] == '@'), '@');
        size_t l = at ? (size_t)(at - name) : strlen(name);
        struct sh_xw nw = sh_mkword(j, sh_strndup(j->a, name, l), NULL);
        nw.src = c->w[k].src;
        c->w[k] = nw;
    }
    return k;
}

/* GNU parallel [options] command ::: args: the command is joined and run by
 * a shell for each argument; without a command it runs the lines of its
 * input. */
static size_t rule_parallel(struct sh_j *j, struct sh_cmd *c, size_t i, bool *stop)
{
    static const char *const a[] = {"-j",         "--jobs",     "-S",          "--sshlogin",
                                    "--colsep",   "-d",         "--delimiter", "-E",
                                    "-I",         "--results",  "--joblog",    "--tmpdir",
                                    "-a",         "--arg-file", "--halt",      "--timeout",
                                    "--retries",  "--env",      "--tagstring", "-n",
                                    "-N",         "-L",         "--max-args",  "--max-lines",
                                    "--delay",    "--memfree",  "--load",      "--workdir",
                                    "--basefile", "--return",   "--transfer",  "--sshloginfile",
                                    "--block",    "--rpl",      NULL};
    size_t k = i + 1;
    for (; k < c->n; k++) {
        const char *t = c->w[k].text;
        if (c->w[k].unres) {
            sh_unreadable(j, c, "parallel with a word the guard cannot resolve (%s)",
                          c->w[k].unres);
            *stop = true;
            return c->n;
        }
        if (!strcmp(t, "--workdir") || !strcmp(t, "--wd") || !strcmp(t, "--pipe") ||
            !strcmp(t, "--shebang") || !strcmp(t, "--shebang-wrap")) {
            sh_unreadable(j, c, "parallel %s", t);
            *stop = true;
            return c->n;
        }
        if ((!strcmp(t, "-a") || !strcmp(t, "--arg-file")) && k + 1 < c->n)
            sh_operand(j, c, &c->w[k + 1], OP_READ, "parallel");
        if (!sh_is_flag(t) || !strcmp(t, "--"))
            break;
        if (sh_in(t, a))
            k++;
    }
    if (k < c->n && sh_eq(&c->w[k], "--"))
        k++;
    size_t e = k;
    while (e < c->n && strncmp(c->w[e].text, ":::", 3) != 0)
        e++;
    if (e == k) {
        sh_unreadable(j, c, "parallel runs commands read from its input");
        *stop = true;
        return c->n;
    }
    if (e >= c->n) {
        /* parallel cmd < input: the arguments come from its input */
        sh_judge_argv(j, c, k, true, "parallel");
        *stop = true;
        return c->n;
    }
    for (size_t q = k; q < c->n; q++)
        c->unres_ok[q] = true;
    /* one ::: group of known words: each run is judged exactly */
    size_t nargs = 0;
    for (size_t q = e + 1; q < c->n; q++) {
        if (!strncmp(c->w[q].text, ":::", 3) || c->w[q].unres || c->w[q].glob) {
            sh_unreadable(j, c, "parallel with arguments the guard cannot enumerate");
            *stop = true;
            return c->n;
        }
        nargs++;
    }
    if (strcmp(c->w[e].text, ":::") != 0 || nargs > 64) {
        sh_unreadable(j, c, "parallel with arguments the guard cannot enumerate");
        *stop = true;
        return c->n;
    }
    strbuf cmd = SB_INIT;
    for (size_t q = k; q < e; q++) {
        if (q > k)
            sb_addc(&cmd, ' ');
        if (e - k == 1)
            sb_adds(&cmd, c->w[q].text); /* a single word is a command line */
        else
            sb_add_shword(&cmd, c->w[q].text);
    }
    const char *brace = strchr(cmd.buf, '{');
    if (brace && strncmp(brace, "{}", 2) != 0) {
        sh_unreadable(j, c, "parallel with a replacement string the guard does not expand");
    } else {
        for (size_t q = e + 1; q < c->n && !j->v->deny; q++) {
            strbuf run = SB_INIT, arg = SB_INIT;
            sb_add_shword(&arg, c->w[q].text);
            const char *p0 = cmd.buf, *hit;
            bool used = false;
            while ((hit = strstr(p0, "{}"))) {
                sb_add(&run, p0, (size_t)(hit - p0));
                sb_adds(&run, arg.buf);
                p0 = hit + 2;
                used = true;
            }
            sb_adds(&run, p0);
            if (!used)
                sb_addf(&run, " %s", arg.buf);
            sh_judge_text(j, c->st, run.buf, run.len, NULL, 0);
            sb_release(&run);
            sb_release(&arg);
        }
    }
    sb_release(&cmd);
    *stop = true;
    return c->n;
}

/* ---- the rest ------------------------------------------------------------ */

/* find ROOTS EXPR: -delete over the roots, -exec'd commands, -fprint files. */
static void rule_find(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    size_t i = p + 1;
    while (i < c->n && (sh_eq(&c->w[i], "-H") || sh_eq(&c->w[i], "-L") || sh_eq(&c->w[i], "-P") ||
                        !strncmp(c->w[i].text, "-O", 2) || sh_eq(&c->w[i], "-D")))
        i += sh_eq(&c->w[i], "-D") ? 2 : 1;
    size_t roots = i;
    while (i < c->n) {
        const char *t = c->w[i].text;
        if ((t[0] == '-' && t[1]) || !strcmp(t, "(") || !strcmp(t, ")") || !strcmp(t, "!") ||
            !strcmp(t, ","))
            break;
        i++;
    }
    size_t roots_end = i;
    for (size_t k = i; k < c->n && !j->v->deny; k++) {
        const char *t = c->w[k].text;
        if (!strcmp(t, "-delete")) {
            if (roots == roots_end) {
                struct sh_xw dot = sh_mkword(j, ".", NULL);
                sh_operand(j, c, &dot, OP_RECURSE, "find -delete");
            }
            for (size_t r = roots; r < roots_end && !j->v->deny; r++)
                sh_operand(j, c, &c->w[r], OP_RECURSE, "find -delete");
        } else if (!strcmp(t, "-exec") || !strcmp(t, "-execdir") || !strcmp(t, "-ok") ||
                   !strcmp(t, "-okdir")) {
            size_t e = k + 1;
            while (e < c->n && !sh_eq(&c->w[e], ";") && !sh_eq(&c->w[e], "+"))
                e++;
            bool plus = e < c->n && sh_eq(&c->w[e], "+");
            struct sh_cmd sc = *c;
            size_t m = e - (k + 1);
            sc.w = sh_alloc(j->a, (m + 1) * sizeof *sc.w);
            sc.unres_ok = sh_alloc(j->a, (m + 1) * sizeof *sc.unres_ok);
            for (size_t q = 0; q < m; q++) {
                sc.w[q] = c->w[k + 1 + q];
                if (strstr(sc.w[q].text, "{}"))
                    sc.w[q].unres = "the files find matches";
                c->unres_ok[k + 1 + q] = true;
            }
            sc.n = m;
            sc.tail_unknown = plus;
            sc.via = "find";
            if (!strcmp(t, "-execdir") || !strcmp(t, "-okdir")) {
                struct sh_st *ns = sh_alloc(j->a, sizeof *ns);
                *ns = *c->st;
                sc.st = ns;
            }
            if (m) {
                sc.prog = 0;
                sh_judge_argv(j, &sc, 0, plus, "find");
            }
            k = e;
        } else if ((!strcmp(t, "-fprint") || !strcmp(t, "-fprint0") || !strcmp(t, "-fls") ||
                    !strcmp(t, "-fprintf")) &&
                   k + 1 < c->n) {
            sh_operand(j, c, &c->w[k + 1], OP_WRITE, "find");
            k += !strcmp(t, "-fprintf") ? 2 : 1;
        } else if (!strcmp(t, "-files0-from") && k + 1 < c->n) {
            sh_operand(j, c, &c->w[k + 1], OP_READ, "find");
        }
    }
}

/* eval WORDS: joined and read again. */
static void rule_eval(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    for (size_t k = p + 1; k < c->n; k++)
        if (c->w[k].unres) {
            sh_unreadable(j, c, "eval of a string that depends on %s", c->w[k].unres);
            return;
        }
    sh_judge_joined(j, c, p + 1, "eval");
}

/* source FILE / . FILE: a script file is a program; a pipe is not readable. */
static void rule_source(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    if (p + 1 >= c->n)
        return;
    const struct sh_xw *f = &c->w[p + 1];
    if (f->procsub || f->unres) {
        sh_unreadable(j, c, "source of %s, which the guard cannot read", sh_show(j, f));
        return;
    }
    const char *abs = sh_abs(j, c->st, f->text);
    if (!strcmp(f->text, "-") || !strncmp(abs, "/dev/", 5) || !strncmp(abs, "/proc/", 6))
        sh_unreadable(j, c, "source of %s, which the guard cannot read", sh_show(j, f));
    else
        sh_operand(j, c, f, OP_READ, "source");
}

/* trap 'CMD' SIGNALS / alias name='CMD': the command text is judged. */
static void rule_text_arg(struct sh_j *j, struct sh_cmd *c, size_t p, bool alias)
{
    for (size_t k = p + 1; k < c->n; k++) {
        const struct sh_xw *w = &c->w[k];
        if (sh_is_flag(w->text))
            continue;
        if (w->unres) {
            sh_unreadable(j, c, "%s of a command that depends on %s", alias ? "alias" : "trap",
                          w->unres);
            return;
        }
        c->unres_ok[k] = true;
        const char *t = w->text;
        if (alias) {
            const char *eq = strchr(t, '=');
            if (eq)
                sh_judge_text(j, c->st, eq + 1, strlen(eq + 1), NULL, 0);
            continue;
        }
        if (strcmp(t, "-"))
            sh_judge_text(j, c->st, t, strlen(t), NULL, 0);
        return;
    }
}

/* make: the makefile must be a file the guard can see as one. */
static void rule_make(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    for (size_t k = p + 1; k < c->n; k++) {
        const char *t = c->w[k].text;
        const struct sh_xw *v = NULL;
        struct sh_xw tmp;
        if ((!strcmp(t, "-f") || !strcmp(t, "--file") || !strcmp(t, "--makefile")) && k + 1 < c->n)
            v = &c->w[k + 1];
        else if (!strncmp(t, "--file=", 7) || !strncmp(t, "--makefile=", 11) ||
                 (!strncmp(t, "-f", 2) && t[2])) {
            tmp = c->w[k];
            size_t off = t[1] == 'f' ? 2 : (size_t)(strchr(t, '=') - t) + 1;
            tmp.text += off;
            tmp.active += off;
            tmp.len -= off;
            v = &tmp;
        } else if (!strncmp(t, "--eval", 6) || !strcmp(t, "-E")) {
            sh_unreadable(j, c, "make --eval runs make text from the command line");
            return;
        }
        if (v) {
            const char *abs = v->unres ? NULL : sh_abs(j, c->st, v->text);
            if (v->procsub || v->unres || !strcmp(v->text, "-") || !strncmp(abs, "/dev/", 5) ||
                !strncmp(abs, "/proc/", 6)) {
                sh_unreadable(j, c, "make -f %s reads a makefile the guard cannot see",
                              sh_show(j, v));
                return;
            }
        }
    }
}

/* Programs that run what they read or schedule code for later. */
static void rule_scheduler(struct sh_j *j, struct sh_cmd *c, size_t p, const char *b)
{
    if (!strcmp(b, "crontab")) {
        if (sh_has_word(c, p + 1, "-l"))
            return;
        sh_unreadable(j, c, "crontab installs commands that run later, out of the guard's sight");
    } else if (!strcmp(b, "tmux") || !strcmp(b, "screen")) {
        static const char *const ro[] = {
            "ls",    "list-sessions",   "list-windows", "list-panes",   "has-session", "-ls",
            "-list", "display-message", "capture-pane", "show-options", NULL};
        for (size_t k = p + 1; k < c->n; k++)
            if (!sh_is_flag(c->w[k].text)) {
                if (sh_in(c->w[k].text, ro))
                    return;
                break;
            }
        if (!strcmp(b, "screen") && sh_has_word(c, p + 1, "-ls"))
            return;
        sh_unreadable(j, c, "%s runs commands in a session the guard does not see", b);
    } else {
        sh_unreadable(j, c, "%s runs commands later, out of the guard's sight", b);
    }
}

/* ssh -o ProxyCommand=…, LocalCommand: local commands. */
static void rule_ssh(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    for (size_t k = p + 1; k < c->n && !j->v->deny; k++) {
        const char *t = c->w[k].text;
        const char *opt = NULL;
        if (!strcmp(t, "-o") && k + 1 < c->n)
            opt = c->w[k + 1].text;
        else if (!strncmp(t, "-o", 2) && t[2])
            opt = t + 2;
        if (opt &&
            (!strncasecmp(opt, "ProxyCommand", 12) || !strncasecmp(opt, "LocalCommand", 12) ||
             !strncasecmp(opt, "KnownHostsCommand", 17) ||
             !strncasecmp(opt, "PermitLocalCommand", 18) || !strncasecmp(opt, "Include", 7)))
            sh_unreadable(j, c, "ssh -o %s runs a local command", opt);
        if (!strcmp(t, "-F"))
            sh_unreadable(j, c, "ssh -F reads a configuration that can run local commands");
    }
}

/* rsync -e CMD; tar --to-command / -I / --use-compress-program; zip -TT. */
static void rule_cmd_options(struct sh_j *j, struct sh_cmd *c, size_t p, const char *b)
{
    static const char *const rsync_o[] = {"-e", "--rsh", NULL};
    static const char *const tar_o[] = {
        "-I", "--use-compress-program", "--to-command",        "--info-script",
        "-F", "--new-volume-script",    "--checkpoint-action", NULL};
    static const char *const zip_o[] = {"-TT", "--unzip-command", NULL};
    const char *const *o = !strcmp(b, "rsync") ? rsync_o : !strcmp(b, "tar") ? tar_o : zip_o;
    for (size_t k = p + 1; k < c->n && !j->v->deny; k++) {
        const char *t = c->w[k].text;
        const char *eq = strchr(t, '=');
        char *name = eq && t[1] == '-' ? sh_strndup(j->a, t, (size_t)(eq - t)) : (char *)t;
        if (!sh_in(name, o))
            continue;
        const char *v = eq && t[1] == '-' ? eq + 1 : k + 1 < c->n ? c->w[k + 1].text : NULL;
        if (!v)
            continue;
        if (!strncmp(v, "exec=", 5))
            v += 5;
        sh_judge_text(j, c->st, v, strlen(v), NULL, 0);
    }
}

/* apply_patch (Codex): the envelope from an argument or stdin. */
static void rule_apply_patch(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    const char *text = NULL;
    size_t len = 0;
    if (p + 1 < c->n) {
        if (c->w[p + 1].unres) {
            sh_unreadable(j, c, "apply_patch of a patch that depends on %s", c->w[p + 1].unres);
            return;
        }
        text = c->w[p + 1].text;
        len = c->w[p + 1].len;
    } else if ((c->in == IN_HEREDOC || c->in == IN_HERESTR) && c->in_known) {
        text = c->in_text;
        len = c->in_len;
    } else {
        sh_unreadable(j, c, "apply_patch reads a patch the guard cannot see");
        return;
    }
    strvec targets = STRVEC_INIT;
    char *s = sh_strndup(j->a, text, len);
    if (gi_envelope_targets(s, &targets) < 0 || !targets.n) {
        sh_unreadable(j, c, "apply_patch input that is not a patch envelope the guard can read");
        strvec_clear(&targets);
        return;
    }
    for (size_t i = 0; i < targets.n && !j->v->deny; i++) {
        struct sh_xw w = sh_mkword(j, targets.v[i], NULL);
        sh_operand(j, c, &w, OP_WRITE, "apply_patch");
    }
    strvec_clear(&targets);
}

/* A program the guard has no rule for, whose arguments hold a command it
 * does judge (`unknownwrapper rm -rf ~`): that command is judged too. */
static bool judged_name(const char *b)
{
    static const char *const names[] = {
        "rm",    "git",     "find", "dd",  "shred",    "chmod", "chown",      "chgrp",
        "mv",    "cp",      "ln",   "tee", "truncate", "eval",  "agentstack", "sudo",
        "xargs", "install", "sed",  "env", "mkfs",     NULL};
    return sh_in(b, names) || sh_in(b, shells) || interp_of(b) || wrapper_of(b) ||
           !strncmp(b, "mkfs", 4);
}

bool sh_known_program(const char *b)
{
    static const char *const more[] = {
        "find",    "eval",    "source", ".",           "trap", "alias",  "make",
        "gmake",   "crontab", "at",     "batch",       "tmux", "screen", "ssh",
        "scp",     "sftp",    "rsync",  "tar",         "zip",  "watch",  "parallel",
        "busybox", "toybox",  "chroot", "apply_patch", NULL};
    return sh_in(b, shells) || sh_in(b, other_shells) || interp_of(b) || wrapper_of(b) ||
           sh_in(b, more) || sh_rules_fs_known(b) || sh_data_cmd(b);
}

/* Everything before the program: wrappers, one after another. */
bool sh_rules(struct sh_j *j, struct sh_cmd *c)
{
    size_t i = 0;
    for (int guard = 0; guard < 64 && i < c->n && !j->v->deny; guard++) {
        const struct sh_xw *w = &c->w[i];
        if (w->unres || w->glob) {
            sh_unreadable(j, c, "the command it runs comes from %s",
                          w->unres ? w->unres : "a pattern");
            return false;
        }
        const char *b = sh_base(w->text);
        bool stop = false;
        const struct wrapper *wr = wrapper_of(b);
        size_t next;
        if (!strcmp(b, "command") && i + 1 < c->n &&
            (sh_eq(&c->w[i + 1], "-v") || sh_eq(&c->w[i + 1], "-V"))) {
            c->prog = i;
            c->data_only = true;
            return true;
        }
        if (!strcmp(b, "exec") && i + 1 >= c->n)
            break;
        if (wr)
            next = skip_wrapper(j, c, i, wr, &stop);
        else if (!strcmp(b, "watch"))
            next = rule_watch(j, c, i, &stop);
        else if (!strcmp(b, "parallel"))
            next = rule_parallel(j, c, i, &stop);
        else if (!strcmp(b, "busybox") || !strcmp(b, "toybox"))
            next = rule_busybox(j, c, i, &stop);
        else if (!strcmp(b, "chroot"))
            next = rule_chroot(j, c, i, &stop);
        else if (!strcmp(b, "npx") || !strcmp(b, "bunx") || !strcmp(b, "pnpx") || !strcmp(b, "uvx"))
            next = rule_runner(j, c, i, i + 1, &stop);
        else if ((!strcmp(b, "npm") && i + 1 < c->n &&
                  (sh_eq(&c->w[i + 1], "exec") || sh_eq(&c->w[i + 1], "x"))) ||
                 ((!strcmp(b, "pnpm") || !strcmp(b, "yarn")) && i + 1 < c->n &&
                  (sh_eq(&c->w[i + 1], "dlx") || sh_eq(&c->w[i + 1], "exec"))) ||
                 ((!strcmp(b, "pipx") || !strcmp(b, "uv") || !strcmp(b, "poetry") ||
                   !strcmp(b, "pdm") || !strcmp(b, "conda") || !strcmp(b, "pixi")) &&
                  i + 1 < c->n && sh_eq(&c->w[i + 1], "run")) ||
                 ((!strcmp(b, "bundle") || !strcmp(b, "mise") || !strcmp(b, "asdf") ||
                   !strcmp(b, "rbenv") || !strcmp(b, "pyenv")) &&
                  i + 1 < c->n && sh_eq(&c->w[i + 1], "exec")))
            next = rule_runner(j, c, i, i + 2, &stop);
        else if ((!strcmp(b, "perf") && i + 1 < c->n &&
                  (sh_eq(&c->w[i + 1], "stat") || sh_eq(&c->w[i + 1], "record") ||
                   sh_eq(&c->w[i + 1], "trace"))))
            next = rule_runner(j, c, i, i + 2, &stop);
        else
            break;
        if (stop || j->v->deny)
            return false;
        if (next >= c->n) {
            c->prog = c->n;
            if (c->tail_unknown)
                return true; /* xargs with no command runs echo */
            return true;
        }
        i = next;
    }
    if (j->v->deny)
        return false;
    c->prog = i;
    if (i >= c->n)
        return true;
    const struct sh_xw *pw = &c->w[i];
    if (pw->unres || pw->glob) {
        sh_unreadable(j, c, "the command it runs comes from %s",
                      pw->unres ? pw->unres : "a pattern");
        return false;
    }
    const char *b = sh_base(pw->text);
    /* --consented is agentstack's alone: whatever runs it */
    for (size_t k = i; k < c->n; k++)
        if (!strncmp(c->w[k].text, "--consented", 11)) {
            sh_deny_authority(j, "a command carrying --consented gives consent on a person's "
                                 "behalf");
            return false;
        }
    if (sh_is_self(j, c, pw->text)) {
        sh_rule_agentstack(j, c, i);
        return !j->v->deny;
    }
    c->data_only = sh_data_cmd(b);
    const struct interp *ip = interp_of(b);
    if (sh_in(b, shells))
        rule_shell(j, c, i);
    else if (sh_in(b, other_shells)) {
        if (i + 1 < c->n || c->in != IN_TTY)
            sh_unreadable(j, c, "%s, a shell whose language the guard does not read", b);
    } else if (ip)
        rule_interp(j, c, i, ip);
    else if (!strcmp(b, "git"))
        sh_rule_git(j, c, i, 0);
    else if (!strcmp(b, "find"))
        rule_find(j, c, i);
    else if (!strcmp(b, "eval"))
        rule_eval(j, c, i);
    else if (!strcmp(b, "source") || !strcmp(b, "."))
        rule_source(j, c, i);
    else if (!strcmp(b, "trap"))
        rule_text_arg(j, c, i, false);
    else if (!strcmp(b, "alias"))
        rule_text_arg(j, c, i, true);
    else if (!strcmp(b, "enable") && sh_has_opt(c, i + 1, 'f', NULL))
        sh_unreadable(j, c, "enable -f loads code into the shell");
    else if (!strcmp(b, "make") || !strcmp(b, "gmake"))
        rule_make(j, c, i);
    else if (!strcmp(b, "crontab") || !strcmp(b, "at") || !strcmp(b, "batch") ||
             !strcmp(b, "tmux") || !strcmp(b, "screen"))
        rule_scheduler(j, c, i, b);
    else if (!strcmp(b, "ssh") || !strcmp(b, "scp") || !strcmp(b, "sftp"))
        rule_ssh(j, c, i);
    else if (!strcmp(b, "rsync") || !strcmp(b, "tar") || !strcmp(b, "zip"))
        rule_cmd_options(j, c, i, b);
    else if (!strcmp(b, "apply_patch") || !strcmp(b, "applypatch"))
        rule_apply_patch(j, c, i);
    if (j->v->deny)
        return false;
    if (sh_rules_fs_known(b))
        sh_rules_fs(j, c, i, b);
    if (j->v->deny)
        return false;
    /* a program's arguments that hold a judged command: judged too */
    if (!sh_data_cmd(b) && !sh_in(b, shells) && !ip && !judged_name(b)) {
        for (size_t k = i + 1; k < c->n && !j->v->deny; k++) {
            const struct sh_xw *w = &c->w[k];
            if (w->unres || w->glob || sh_is_flag(w->text))
                continue;
            if (judged_name(sh_base(w->text)))
                sh_judge_argv(j, c, k, c->tail_unknown, c->via);
        }
    }
    /* a program that does not exist (yet) given agentstack's verbs */
    if (!j->v->deny && !sh_common_program(b) && !sh_known_program(b) && i + 1 < c->n &&
        !sh_resolve_program(j, c, pw->text)) {
        static const char *const verbs[] = {"trust", "yes",  "secret", "policy",
                                            "guard", "sign", NULL};
        size_t k = i + 1;
        while (k < c->n && sh_is_flag(c->w[k].text))
            k++;
        if (k < c->n && sh_in(c->w[k].text, verbs)) {
            strbuf m = SB_INIT;
            sb_addf(&m, "`%s %s` (a program that does not exist yet, given an agentstack verb)",
                    sh_show(j, pw), c->w[k].text);
            sh_deny_authority(j, m.buf);
            sb_release(&m);
            return false;
        }
    }
    if (!j->v->deny && c->tail_unknown && !c->data_only)
        sh_unreadable(j, c, "%s runs %s with arguments from its input, which the guard cannot read",
                      c->via ? c->via : "it", b);
    return !j->v->deny;
}
