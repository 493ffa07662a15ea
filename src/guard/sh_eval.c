/* sh eval — the judgement of a parsed command.
 *
 * Why: a command's meaning depends on where it runs. `cd ~/.agentstack &&
 * rm -f agentstack.toml` names a harmless file only if the cd is ignored.
 * This walk carries the set of states the shell can be in (working
 * directory, pushd stack, variables assigned so far, errexit) through
 * lists, && / ||, pipelines, subshells and compound commands, and judges
 * each simple command once per state it can run in.
 *
 * Guarantees:
 *  - Every simple command is judged in every state it can run in (a cd that
 *    may fail leaves both directories possible; && keeps only the one it
 *    needs). More than SH_MAX_STATES states is a refusal.
 *  - A command is judged only when every word it needs resolves; a word
 *    that does not (an unknown variable, $(…) output, a form the guard does
 *    not evaluate) refuses the command unless it is data of a command that
 *    never opens its operands, or a [guard] allow rule matches it.
 *  - Substitution bodies ($(…), `…`, <(…)) are judged in a copy of the
 *    state (they run in subshells), before the command that uses them.
 */
#include <ctype.h>
#include <glob.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/sh_judge.h"

/* ---- states -------------------------------------------------------------- */

static bool streq0(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool st_equal(const struct sh_st *a, const struct sh_st *b)
{
    if (!streq0(a->cwd, b->cwd) || !streq0(a->oldpwd, b->oldpwd) || a->nstack != b->nstack ||
        a->nvars != b->nvars || a->errexit != b->errexit || a->ifs_set != b->ifs_set ||
        a->pos_known != b->pos_known || a->npos != b->npos)
        return false;
    for (size_t i = 0; i < a->nstack; i++)
        if (strcmp(a->stack[i], b->stack[i]))
            return false;
    for (size_t i = 0; i < a->nvars; i++)
        if (strcmp(a->vars[i].name, b->vars[i].name) || !streq0(a->vars[i].val, b->vars[i].val) ||
            a->vars[i].unset != b->vars[i].unset)
            return false;
    for (size_t i = 0; i < a->npos; i++)
        if (!streq0(a->pos[i], b->pos[i]))
            return false;
    return true;
}

static void set_add(struct sh_j *j, struct sh_states *s, const struct sh_st *st)
{
    for (size_t i = 0; i < s->n; i++)
        if (st_equal(&s->v[i], st))
            return;
    if (s->n >= SH_MAX_STATES) {
        j->overflow = true;
        return;
    }
    struct sh_st *nv = sh_alloc(j->a, (s->n + 1) * sizeof *nv);
    if (s->n)
        memcpy(nv, s->v, s->n * sizeof *nv);
    nv[s->n] = *st;
    s->v = nv;
    s->n++;
}

static void set_union(struct sh_j *j, struct sh_states *into, const struct sh_states *from)
{
    for (size_t i = 0; i < from->n; i++)
        set_add(j, into, &from->v[i]);
}

static const struct sh_var *var_find(const struct sh_st *st, const char *name)
{
    for (size_t i = 0; i < st->nvars; i++)
        if (!strcmp(st->vars[i].name, name))
            return &st->vars[i];
    return NULL;
}

/* Records name = val (NULL: unknown from now on; unset: unset). */
static void var_set(struct sh_j *j, struct sh_st *st, const char *name, const char *val, bool unset)
{
    struct sh_var *nv = sh_alloc(j->a, (st->nvars + 1) * sizeof *nv);
    size_t n = 0;
    for (size_t i = 0; i < st->nvars; i++)
        if (strcmp(st->vars[i].name, name))
            nv[n++] = st->vars[i];
    nv[n].name = sh_strndup(j->a, name, strlen(name));
    nv[n].val = val ? sh_strndup(j->a, val, strlen(val)) : NULL;
    nv[n].unset = unset;
    st->vars = nv;
    st->nvars = n + 1;
    if (!strcmp(name, "IFS"))
        st->ifs_set = true;
}

struct pctx {
    struct sh_j *j;
    const struct sh_st *st;
};

static enum sh_pstate param_value(void *u, const char *name, const char **val)
{
    struct pctx *p = u;
    const struct sh_st *st = p->st;
    const struct guard_ctx *x = p->j->x;
    if (!strcmp(name, "?") || !strcmp(name, "#") || !strcmp(name, "$") || !strcmp(name, "!")) {
        *val = "0";
        return SHV_SET;
    }
    if (isdigit((unsigned char)name[0])) {
        size_t k = strtoul(name, NULL, 10);
        if (!st->pos_known)
            return SHV_UNKNOWN;
        if (k < st->npos && st->pos[k]) {
            *val = st->pos[k];
            return SHV_SET;
        }
        return k < st->npos ? SHV_UNKNOWN : SHV_UNSET;
    }
    if (!strcmp(name, "@") || !strcmp(name, "*") || !strcmp(name, "-"))
        return SHV_UNKNOWN;
    const struct sh_var *v = var_find(st, name);
    if (v) {
        if (v->unset)
            return SHV_UNSET;
        if (!v->val)
            return SHV_UNKNOWN;
        *val = v->val;
        return SHV_SET;
    }
    if (!strcmp(name, "HOME") && x->home) {
        *val = x->home;
        return SHV_SET;
    }
    if (!strcmp(name, "PWD") && st->cwd) {
        *val = st->cwd;
        return SHV_SET;
    }
    if (!strcmp(name, "OLDPWD") && st->oldpwd) {
        *val = st->oldpwd;
        return SHV_SET;
    }
    if (!strcmp(name, "AGENTSTACK_HOME") && getenv("AGENTSTACK_HOME") && x->ash) {
        *val = x->ash;
        return SHV_SET;
    }
    if (!strcmp(name, "TMPDIR")) {
        const char *t = getenv("TMPDIR");
        if (t && t[0] == '/') {
            *val = t;
            return SHV_SET;
        }
    }
    return SHV_UNKNOWN;
}

/* git's toplevel for dir: the nearest ancestor holding .git. */
static const char *toplevel_of(struct sh_j *j, const char *dir)
{
    strbuf cur = SB_INIT, probe = SB_INIT;
    sb_adds(&cur, dir);
    const char *found = NULL;
    for (int k = 0; k < 256 && !found; k++) {
        sb_reset(&probe);
        sb_addf(&probe, "%s%s.git", cur.buf, cur.len > 1 ? "/" : "");
        if (fs_exists(probe.buf)) {
            found = sh_strndup(j->a, cur.buf, cur.len);
            break;
        }
        if (cur.len <= 1)
            break;
        char *slash = strrchr(cur.buf, '/');
        sb_setlen(&cur, slash == cur.buf ? 1 : (size_t)(slash - cur.buf));
    }
    sb_release(&cur);
    sb_release(&probe);
    return found;
}

static const char *toplevel_cb(void *u)
{
    struct pctx *p = u;
    return p->st->cwd ? toplevel_of(p->j, p->st->cwd) : NULL;
}

static void xctx_of(struct sh_j *j, const struct sh_st *st, struct pctx *pc, struct sh_xctx *xc)
{
    pc->j = j;
    pc->st = st;
    memset(xc, 0, sizeof *xc);
    xc->u = pc;
    xc->param = param_value;
    xc->home = j->x->home;
    xc->pwd = st->cwd;
    xc->oldpwd = st->oldpwd;
    xc->toplevel = toplevel_cb;
}

/* ---- verdict helpers ----------------------------------------------------- */

const char *sh_base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

bool sh_is_flag(const char *t)
{
    return t[0] == '-' && t[1] != '\0';
}

bool sh_eq(const struct sh_xw *w, const char *s)
{
    return !w->unres && !w->glob && !strcmp(w->text, s);
}

const char *sh_show(struct sh_j *j, const struct sh_xw *w)
{
    strbuf b = SB_INIT;
    if (w->src && w->src->end > w->src->start && j->cur && j->cur->src) {
        char *t = sh_strndup(j->a, j->cur->src + w->src->start, w->src->end - w->src->start);
        gi_clean(&b, t, 200);
    } else {
        gi_clean(&b, w->text, 200);
    }
    const char *r = sh_strndup(j->a, b.buf ? b.buf : "", b.len);
    sb_release(&b);
    return r;
}

void sh_deny_builtin(struct sh_j *j, const char *fmt, ...)
{
    if (j->v->deny)
        return;
    strbuf m = SB_INIT, t = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&m, fmt, ap);
    va_end(ap);
    gi_builtin_tail(j->x, &t);
    gi_deny(j->v, true, "%s · the command did not run%s", m.buf, t.buf);
    sb_release(&m);
    sb_release(&t);
}

/* The allow rule to suggest: the command's first word (and a following
 * option), then " *". */
static void suggest_rule(const char *text, strbuf *out)
{
    size_t i = 0, n = strlen(text);
    while (i < n && (text[i] == ' ' || text[i] == '\t'))
        i++;
    size_t a = i;
    while (i < n && text[i] != ' ' && text[i] != '\t' && text[i] != '\n')
        i++;
    size_t e = i;
    size_t k = i;
    while (k < n && text[k] == ' ')
        k++;
    if (k + 1 < n && text[k] == '-' && text[k + 1] != '-') {
        size_t f = k;
        while (f < n && text[f] != ' ' && text[f] != '\n' && text[f] != '\'' && text[f] != '"')
            f++;
        if (f - k <= 4)
            e = f;
    }
    strbuf w = SB_INIT;
    sb_add(&w, text + a, e - a);
    for (size_t q = 0; q < w.len; q++)
        if (w.buf[q] == '"' || w.buf[q] == '\\' || (unsigned char)w.buf[q] < 0x20)
            w.buf[q] = '?';
    gi_clean(out, w.buf ? w.buf : "", 80);
    sb_adds(out, " *");
    sb_release(&w);
}

void sh_unreadable(struct sh_j *j, const struct sh_cmd *c, const char *fmt, ...)
{
    if (j->v->deny || j->allowed)
        return;
    strbuf m = SB_INIT, cmd = SB_INIT, rule = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&m, fmt, ap);
    va_end(ap);
    const char *text = c && c->text ? c->text : "";
    gi_clean(&cmd, text, 160);
    suggest_rule(text, &rule);
    gi_deny(j->v, true,
            "`%s` could not be judged: %s · the command did not run · the guard judges a "
            "command only when it can read all of it; to allow this one explicitly, add "
            "allow = [\"%s\"] under [guard] in %s",
            cmd.buf, m.buf, rule.buf, j->x->machine_display);
    sb_release(&m);
    sb_release(&cmd);
    sb_release(&rule);
}

void sh_deny_authority(struct sh_j *j, const char *what)
{
    gi_deny(j->v, true,
            "%s — changes to consent, policy, secrets and the guard are a person's act at "
            "their own terminal, never an agent's · the command did not run · to see what "
            "a project would be approved with: agentstack trust --preview",
            what);
}

/* ---- the walk ------------------------------------------------------------ */

struct res {
    struct sh_states ok, fail;
};

static struct res eval(struct sh_j *j, const struct sh_node *n, const struct sh_states *in,
                       bool cond, enum sh_stdin stdin_kind);

static struct sh_states one(struct sh_j *j, const struct sh_st *st)
{
    struct sh_states s = {0};
    set_add(j, &s, st);
    return s;
}

/* Judges the command substitutions of a word list in a copy of st. */
static void walk_word_subs(struct sh_j *j, const struct sh_st *st, const struct sh_word *w,
                           int depth);

static void walk_part_subs(struct sh_j *j, const struct sh_st *st, const struct sh_part *p,
                           int depth)
{
    if (j->v->deny || depth > 16)
        return;
    switch (p->kind) {
    case SP_CMDSUB:
    case SP_PROCSUB:
        if (p->body) {
            struct sh_states in = one(j, st);
            const struct sh_node *saved = j->cur;
            bool allowed = j->allowed;
            j->allowed = false;
            (void)eval(j, p->body, &in, false, p->kind == SP_PROCSUB && p->out ? IN_PIPE : IN_TTY);
            j->cur = saved;
            j->allowed = allowed;
        }
        break;
    case SP_PARAM:
        if (p->opword)
            walk_word_subs(j, st, p->opword, depth + 1);
        if (p->opword2)
            walk_word_subs(j, st, p->opword2, depth + 1);
        break;
    case SP_ARITH: {
        /* arithmetic can hide command substitution and runs array
         * subscripts of variables' values: only numbers and operators */
        bool plain = true;
        for (size_t k = 0; k < p->len && plain; k++) {
            char ch = p->text[k];
            plain = isdigit((unsigned char)ch) || strchr(" \t+-*/%()<>=!&|^~?:,", ch) ||
                    (ch == '$' && k + 1 < p->len && strchr("?#", p->text[k + 1]));
            if (ch == '$')
                k++;
        }
        if (!plain)
            sh_unreadable(j, NULL, "an arithmetic expansion over variables or commands ($((%.*s)))",
                          (int)(p->len > 40 ? 40 : p->len), p->text);
        break;
    }
    case SP_ARRAY:
        for (size_t i = 0; i < p->nelems; i++)
            walk_word_subs(j, st, &p->elems[i], depth + 1);
        break;
    default:
        break;
    }
}

static void walk_word_subs(struct sh_j *j, const struct sh_st *st, const struct sh_word *w,
                           int depth)
{
    for (size_t i = 0; w && i < w->nparts && !j->v->deny; i++)
        walk_part_subs(j, st, &w->parts[i], depth);
}

static void walk_node_subs(struct sh_j *j, const struct sh_st *st, const struct sh_node *n)
{
    for (size_t i = 0; i < n->nwords && !j->v->deny; i++)
        walk_word_subs(j, st, &n->words[i], 0);
    for (size_t i = 0; i < n->nredirs && !j->v->deny; i++) {
        walk_word_subs(j, st, &n->redirs[i]->target, 0);
        if (n->redirs[i]->body_word)
            walk_word_subs(j, st, n->redirs[i]->body_word, 0);
    }
}

/* ---- allow rules ----------------------------------------------------------- */

static bool allow_match(const struct guard_ctx *x, const char *text)
{
    size_t n = strlen(text);
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\n' || text[n - 1] == '\t'))
        n--;
    while (n && (*text == ' ' || *text == '\t')) {
        text++;
        n--;
    }
    for (size_t i = 0; i < x->allow.n; i++)
        if (pol_glob_match(x->allow.v[i], strlen(x->allow.v[i]), text, n, 0))
            return true;
    return false;
}

/* ---- simple commands ----------------------------------------------------- */

static void expand_words(struct sh_j *j, struct sh_cmd *c, const struct sh_node *n,
                         const struct sh_xctx *xc, size_t from, sh_xwords *out)
{
    for (size_t i = from; i < n->nwords && !j->v->deny; i++) {
        const char *why = NULL;
        if (sh_expand(j->a, &n->words[i], xc, false, out, &why) < 0)
            sh_unreadable(j, c, "%s", why);
    }
}

/* Environment names whose values become code or change what runs. */
static const char *const env_code[] = {
    "GIT_SSH_COMMAND",   "GIT_SSH",     "GIT_PAGER",     "PAGER",
    "GIT_EDITOR",        "EDITOR",      "VISUAL",        "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS",   "GIT_PROXY_COMMAND",
    "PROMPT_COMMAND",    "MANPAGER",    "SYSTEMD_PAGER", NULL};
static const char *const env_inject[] = {"LD_PRELOAD",
                                         "LD_AUDIT",
                                         "BASH_ENV",
                                         "ENV",
                                         "SHELLOPTS",
                                         "BASHOPTS",
                                         "PS4",
                                         "PERL5OPT",
                                         "PERL5DB",
                                         "RUBYOPT",
                                         "NODE_OPTIONS",
                                         "PYTHONSTARTUP",
                                         "PYTHONINSPECT",
                                         "GIT_CONFIG_PARAMETERS",
                                         "GIT_EXEC_PATH",
                                         "GIT_TEMPLATE_DIR",
                                         "LD_LIBRARY_PATH",
                                         "PATH",
                                         "CDPATH",
                                         "GLOBIGNORE",
                                         NULL};

static bool in_list(const char *s, const char *const *l)
{
    for (size_t i = 0; l[i]; i++)
        if (!strcmp(s, l[i]))
            return true;
    return false;
}

/* One NAME=value (a prefix of a command, or a shell assignment). */
void sh_judge_assignment(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, bool shell_var)
{
    const char *eq = strchr(w->text, '=');
    if (!eq)
        return;
    size_t nl = (size_t)(eq - w->text);
    bool append = nl && w->text[nl - 1] == '+';
    char *name = sh_strndup(j->a, w->text, append ? nl - 1 : nl);
    const char *val = eq + 1;
    if (!strncmp(name, "AGENTSTACK_", 11)) {
        strbuf m = SB_INIT;
        sb_addf(&m, "setting %s", name);
        sh_deny_authority(j, m.buf);
        sb_release(&m);
        return;
    }
    if (in_list(name, env_code)) {
        if (w->unres)
            sh_unreadable(j, c, "%s, a command the environment hands to programs, depends on %s",
                          name, w->unres);
        else
            sh_judge_text(j, c->st, val, strlen(val), NULL, 0);
        return;
    }
    if (!strncmp(name, "GIT_CONFIG_", 11) || in_list(name, env_inject)) {
        /* PATH and CDPATH changes are judged where they matter */
        if (!strcmp(name, "PATH") || !strcmp(name, "CDPATH"))
            return;
        sh_unreadable(j, c, "%s changes what programs load or run", name);
        return;
    }
    if (shell_var)
        var_set(j, c->st, name, w->unres || append ? NULL : val, false);
}

/* The stdin of the program, from the last input redirection. */
static void redirections(struct sh_j *j, struct sh_cmd *c, const struct sh_node *n,
                         const struct sh_xctx *xc)
{
    for (size_t i = 0; i < n->nredirs && !j->v->deny; i++) {
        const struct sh_redir *r = n->redirs[i];
        if (r->kind == RK_HEREDOC) {
            if (r->fd > 0)
                continue;
            c->in = IN_HEREDOC;
            if (r->literal || !r->body_word) {
                c->in_text = r->body;
                c->in_len = r->body_len;
                c->in_known = true;
            } else {
                sh_xwords b = VEC_INIT;
                const char *why = NULL;
                struct sh_word bw = *r->body_word;
                bw.has_quotes = true;
                /* the body expands like "…": one field */
                for (size_t k = 0; k < bw.nparts; k++)
                    ((struct sh_part *)bw.parts)[k].quoted = true;
                if (sh_expand(j->a, &bw, xc, false, &b, &why) == 0 && b.n == 1 && !b.v[0].unres) {
                    c->in_text = b.v[0].text;
                    c->in_len = b.v[0].len;
                    c->in_known = true;
                } else {
                    c->in_text = r->body;
                    c->in_len = r->body_len;
                    c->in_known = false;
                }
                vec_free(&b);
            }
            continue;
        }
        sh_xwords t = VEC_INIT;
        const char *why = NULL;
        if (sh_expand(j->a, &r->target, xc, r->kind == RK_HERESTR, &t, &why) < 0) {
            sh_unreadable(j, c, "%s", why);
            vec_free(&t);
            return;
        }
        if (r->kind == RK_HERESTR) {
            if (r->fd <= 0) {
                c->in = IN_HERESTR;
                c->in_text = t.n ? t.v[0].text : "";
                c->in_len = t.n ? t.v[0].len : 0;
                c->in_known = t.n == 1 && !t.v[0].unres;
            }
            vec_free(&t);
            continue;
        }
        if (r->kind == RK_DUP) {
            vec_free(&t);
            continue;
        }
        if (t.n != 1) {
            sh_unreadable(j, c, "a redirection target that is not exactly one word");
            vec_free(&t);
            return;
        }
        struct sh_xw *w = &t.v[0];
        if (w->glob) {
            sh_unreadable(j, c, "a redirection to a pattern (%s)", sh_show(j, w));
        } else if (r->kind == RK_IN) {
            if (sh_operand(j, c, w, OP_READ, "a redirection") && (r->fd <= 0)) {
                c->in = IN_FILE;
                c->in_path = w->unres ? NULL : sh_abs(j, c->st, w->text);
                const char *p = c->in_path;
                if (!p || !strncmp(p, "/dev/", 5) || !strncmp(p, "/proc/", 6) || w->procsub)
                    c->in = IN_PIPE;
            }
        } else {
            if (w->procsub)
                ; /* >(…) */
            else if (!w->unres && (!strcmp(w->text, "/dev/null") || !strcmp(w->text, "/dev/tty")))
                ;
            else
                sh_operand(j, c, w, OP_WRITE, "a redirection");
        }
        vec_free(&t);
    }
}

/* Every word naming a denied path (and --opt=value values, @file). */
static void naming(struct sh_j *j, struct sh_cmd *c)
{
    for (size_t i = 0; i < c->n && !j->v->deny; i++) {
        struct sh_xw w = c->w[i];
        if (w.unres || w.procsub)
            continue;
        /* a program found on PATH names no file here */
        if (i == 0 && !strchr(w.text, '/') && !w.glob)
            continue;
        const char *t = w.text;
        size_t off = 0;
        if (t[0] == '-') {
            const char *eq = strchr(t, '=');
            if (!eq || !eq[1] || t[1] != '-')
                continue;
            off = (size_t)(eq + 1 - t);
        }
        if (t[off] == '@' && t[off + 1])
            off++;
        if (!t[off])
            continue;
        w.text += off;
        w.active += off;
        w.len -= off;
        sh_operand(j, c, &w, OP_NAME, "the command");
    }
}

/* Names whose argument words are data: never opened, never run. */
static const char *const data_cmds[] = {
    "echo",     "printf",   "true",    "false",    ":",     "test",    "[",     "sleep",
    "seq",      "basename", "dirname", "pwd",      "exit",  "return",  "break", "continue",
    "shift",    "wait",     "type",    "hash",     "which", "whoami",  "id",    "uname",
    "printenv", "set",      "umask",   "ulimit",   "jobs",  "times",   "unset", "local",
    "export",   "declare",  "typeset", "readonly", "read",  "getopts", "shopt", "expr",
    "nproc",    "tty",      "logname", "groups",   "arch",  "yes",     "cd",    "pushd",
    "popd",     "dirs",     "command", NULL};

bool sh_data_cmd(const char *b)
{
    return in_list(b, data_cmds);
}

/* cd / pushd / popd: the new state, or false (refused). */
static bool dir_change(struct sh_j *j, struct sh_cmd *c, const char *b, struct sh_st *st)
{
    size_t a = c->prog + 1;
    while (a < c->n && sh_is_flag(c->w[a].text) && !sh_eq(&c->w[a], "-")) {
        if (sh_eq(&c->w[a], "--")) {
            a++;
            break;
        }
        a++;
    }
    const char *target = NULL;
    if (!strcmp(b, "popd")) {
        if (!st->nstack) {
            sh_unreadable(j, c, "popd with a directory stack the guard did not see");
            return false;
        }
        target = st->stack[st->nstack - 1];
        st->nstack--;
    } else if (a >= c->n) {
        if (!strcmp(b, "pushd")) {
            sh_unreadable(j, c, "pushd without a directory");
            return false;
        }
        target = j->x->home;
    } else {
        const struct sh_xw *w = &c->w[a];
        if (w->unres || w->glob || w->refuse) {
            sh_unreadable(j, c, "%s to %s, a directory the guard cannot resolve", b, sh_show(j, w));
            return false;
        }
        if (sh_eq(w, "-")) {
            target = st->oldpwd;
        } else if (w->text[0] == '+' || (w->text[0] == '-' && w->text[1])) {
            sh_unreadable(j, c, "%s %s (a directory stack entry)", b, sh_show(j, w));
            return false;
        } else {
            const char *cdp = getenv("CDPATH");
            if (cdp && cdp[0] && w->text[0] != '/' && w->text[0] != '.') {
                sh_unreadable(j, c, "cd %s with CDPATH set", sh_show(j, w));
                return false;
            }
            target = sh_abs(j, st, w->text);
        }
    }
    if (!target) {
        sh_unreadable(j, c, "%s to a directory the guard does not know", b);
        return false;
    }
    if (!strcmp(b, "pushd")) {
        const char **ns = sh_alloc(j->a, (st->nstack + 1) * sizeof *ns);
        if (st->nstack)
            memcpy(ns, st->stack, st->nstack * sizeof *ns);
        ns[st->nstack] = st->cwd;
        st->stack = ns;
        st->nstack++;
    }
    st->oldpwd = st->cwd;
    st->cwd = target;
    return true;
}

/* `set -e` / `set -o errexit` and their + forms. */
static void set_options(struct sh_cmd *c, struct sh_st *st)
{
    for (size_t i = c->prog + 1; i < c->n; i++) {
        const char *t = c->w[i].text;
        if ((t[0] == '-' || t[0] == '+') && t[1] != '-' && t[1] != 'o' && strchr(t, 'e'))
            st->errexit = t[0] == '-';
        if ((!strcmp(t, "-o") || !strcmp(t, "+o")) && i + 1 < c->n &&
            !strcmp(c->w[i + 1].text, "errexit"))
            st->errexit = t[0] == '-';
    }
}

static const char *cmd_text(struct sh_j *j, const struct sh_node *n)
{
    size_t e = n->end;
    return sh_strndup(j->a, n->src + n->start, e > n->start ? e - n->start : 0);
}

/* The checks after the rules: every word the rules did not accept as data
 * must resolve. */
static void unresolved_words(struct sh_j *j, struct sh_cmd *c)
{
    if (c->data_only)
        return;
    for (size_t i = c->prog; i < c->n && !j->v->deny; i++)
        if ((c->w[i].unres || c->w[i].split_unknown) && !c->unres_ok[i])
            sh_unreadable(j, c, "its argument %s depends on %s, which the guard cannot resolve",
                          sh_show(j, &c->w[i]), c->w[i].unres ? c->w[i].unres : "$…");
}

/* Builtins that change the shell's own state (after the command ran). */
static bool shell_state(struct sh_j *j, struct sh_cmd *c, const char *b)
{
    if (!strcmp(b, "cd") || !strcmp(b, "pushd") || !strcmp(b, "popd"))
        return dir_change(j, c, b, c->st);
    if (!strcmp(b, "set")) {
        set_options(c, c->st);
    } else if (!strcmp(b, "export") || !strcmp(b, "declare") || !strcmp(b, "typeset") ||
               !strcmp(b, "local") || !strcmp(b, "readonly")) {
        for (size_t i = c->prog + 1; i < c->n && !j->v->deny; i++)
            if (strchr(c->w[i].text, '=') && !sh_is_flag(c->w[i].text))
                sh_judge_assignment(j, c, &c->w[i], true);
    } else if (!strcmp(b, "read") || !strcmp(b, "unset") || !strcmp(b, "getopts") ||
               !strcmp(b, "mapfile") || !strcmp(b, "readarray") || !strcmp(b, "printf")) {
        for (size_t i = c->prog + 1; i < c->n; i++)
            if (!sh_is_flag(c->w[i].text) && sh_is_name(c->w[i].text, c->w[i].len))
                var_set(j, c->st, c->w[i].text, NULL, !strcmp(b, "unset"));
    }
    return true;
}

/* Judges one simple command in state st; adds its ok / fail states. */
static void judge_simple(struct sh_j *j, const struct sh_node *n, const struct sh_st *st,
                         enum sh_stdin stdin_kind, struct res *out)
{
    const struct sh_node *saved_cur = j->cur;
    bool saved_allowed = j->allowed;
    struct sh_st after = *st;
    struct sh_cmd c = {0};
    c.st = &after;
    c.text = cmd_text(j, n);
    c.in = stdin_kind;
    j->cur = n;
    j->allowed = allow_match(j->x, c.text);
    walk_node_subs(j, st, n);
    j->cur = n;
    j->allowed = allow_match(j->x, c.text);
    struct pctx pc;
    struct sh_xctx xc;
    xctx_of(j, st, &pc, &xc);
    sh_xwords argv = VEC_INIT, assigns = VEC_INIT;
    for (size_t i = 0; i < n->nassign && !j->v->deny; i++) {
        const char *why = NULL;
        if (sh_expand(j->a, &n->words[i], &xc, true, &assigns, &why) < 0)
            sh_unreadable(j, &c, "%s", why);
    }
    expand_words(j, &c, n, &xc, n->nassign, &argv);
    c.w = argv.v;
    c.n = argv.n;
    c.unres_ok = sh_alloc(j->a, (argv.n + 1) * sizeof *c.unres_ok);
    for (size_t i = 0; i < argv.n && !j->v->deny; i++)
        if (argv.v[i].refuse)
            sh_unreadable(j, &c, "%s uses %s", sh_show(j, &argv.v[i]), argv.v[i].refuse);
    for (size_t i = 0; i < assigns.n && !j->v->deny; i++) {
        if (assigns.v[i].refuse)
            sh_unreadable(j, &c, "an assignment uses %s", assigns.v[i].refuse);
        else
            sh_judge_assignment(j, &c, &assigns.v[i], argv.n == 0);
    }
    if (!j->v->deny)
        redirections(j, &c, n, &xc);
    if (!j->v->deny)
        naming(j, &c);
    bool cd_ok = true;
    const char *b = "";
    if (!j->v->deny && c.n) {
        const struct sh_xw *p0 = &c.w[0];
        if (p0->unres || p0->glob || p0->split_unknown) {
            sh_unreadable(j, &c, "its command name comes from %s",
                          p0->unres ? p0->unres : "a pattern");
        } else if (sh_rules(j, &c)) {
            b = c.prog < c.n ? sh_base(c.w[c.prog].text) : "";
            cd_ok = shell_state(j, &c, b);
            unresolved_words(j, &c);
        }
    }
    if (!j->v->deny) {
        bool is_cd = !strcmp(b, "cd") || !strcmp(b, "pushd") || !strcmp(b, "popd");
        if (is_cd) {
            if (cd_ok)
                set_add(j, &out->ok, &after);
            set_add(j, &out->fail, st);
        } else {
            if (strcmp(b, "false") != 0)
                set_add(j, &out->ok, &after);
            if (strcmp(b, "true") != 0 && strcmp(b, ":") != 0)
                set_add(j, &out->fail, &after);
        }
    }
    vec_free(&argv);
    vec_free(&assigns);
    j->cur = saved_cur;
    j->allowed = saved_allowed;
}

static void drop_exited(struct sh_states *s, bool cond)
{
    if (cond)
        return;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->v[i].errexit)
            s->v[k++] = s->v[i];
    s->n = k;
}

static struct sh_states both(struct sh_j *j, const struct res *r)
{
    struct sh_states s = {0};
    set_union(j, &s, &r->ok);
    set_union(j, &s, &r->fail);
    return s;
}

static void judge_node_redirs(struct sh_j *j, const struct sh_node *n, const struct sh_states *in)
{
    if (!n->nredirs)
        return;
    for (size_t k = 0; k < in->n && !j->v->deny; k++) {
        struct sh_node fake = *n;
        fake.kind = SN_SIMPLE;
        fake.words = NULL;
        fake.nwords = fake.nassign = 0;
        struct res r = {0};
        struct sh_st st = in->v[k];
        judge_simple(j, &fake, &st, IN_TTY, &r);
    }
}

/* Loops: iterate until the states stop changing (bounded). */
static struct res eval_loop(struct sh_j *j, const struct sh_node *n, const struct sh_states *in,
                            bool cond)
{
    struct sh_states cur = {0};
    set_union(j, &cur, in);
    for (int round = 0; round < 6 && !j->v->deny; round++) {
        struct sh_states body_in = cur;
        if (n->kind == SN_WHILE || n->kind == SN_UNTIL) {
            struct res c = eval(j, n->a, &cur, true, IN_TTY);
            body_in = n->kind == SN_WHILE ? c.ok : c.fail;
            struct sh_states other = n->kind == SN_WHILE ? c.fail : c.ok;
            set_union(j, &cur, &other);
        }
        struct res b = eval(j, n->b, &body_in, cond, IN_TTY);
        size_t before = cur.n;
        struct sh_states bs = both(j, &b);
        set_union(j, &cur, &bs);
        if (cur.n == before || j->overflow)
            break;
    }
    struct res r = {cur, cur};
    return r;
}

static struct res eval_for(struct sh_j *j, const struct sh_node *n, const struct sh_states *in,
                           bool cond)
{
    struct sh_states cur = {0};
    for (size_t k = 0; k < in->n && !j->v->deny; k++) {
        struct sh_st st = in->v[k];
        if (n->arith_for) {
            struct sh_part ap = {.kind = SP_ARITH, .text = n->text, .len = n->tlen};
            walk_part_subs(j, &st, &ap, 0);
            struct sh_states s1 = one(j, &st);
            struct res r = eval(j, n->b, &s1, cond, IN_TTY);
            struct sh_states bs = both(j, &r);
            set_union(j, &cur, &bs);
            set_add(j, &cur, &st);
            continue;
        }
        struct pctx pc;
        struct sh_xctx xc;
        xctx_of(j, &st, &pc, &xc);
        sh_xwords words = VEC_INIT;
        bool exact = n->has_in;
        for (size_t i = 0; i < n->nlist && !j->v->deny; i++) {
            walk_word_subs(j, &st, &n->list[i], 0);
            const char *why = NULL;
            if (sh_expand(j->a, &n->list[i], &xc, false, &words, &why) < 0)
                exact = false;
        }
        for (size_t i = 0; i < words.n; i++)
            if (words.v[i].unres || words.v[i].glob || words.v[i].split_unknown)
                exact = false;
        if (exact && words.n <= 64) {
            struct sh_states s = one(j, &st);
            set_add(j, &cur, &st);
            for (size_t i = 0; i < words.n && !j->v->deny; i++) {
                struct sh_states next = {0};
                for (size_t q = 0; q < s.n; q++) {
                    struct sh_st t = s.v[q];
                    var_set(j, &t, n->var, words.v[i].text, false);
                    set_add(j, &next, &t);
                }
                struct res r = eval(j, n->b, &next, cond, IN_TTY);
                s = both(j, &r);
                set_union(j, &cur, &s);
            }
        } else {
            struct sh_st t = st;
            var_set(j, &t, n->var, NULL, false);
            struct sh_states seen = one(j, &t);
            for (int round = 0; round < 6 && !j->v->deny; round++) {
                struct res r = eval(j, n->b, &seen, cond, IN_TTY);
                size_t before = seen.n;
                struct sh_states bs = both(j, &r);
                for (size_t q = 0; q < bs.n; q++)
                    var_set(j, &bs.v[q], n->var, NULL, false);
                set_union(j, &seen, &bs);
                if (seen.n == before || j->overflow)
                    break;
            }
            set_union(j, &cur, &seen);
            set_add(j, &cur, &st);
        }
        vec_free(&words);
    }
    struct res r = {cur, cur};
    return r;
}

/* [[ ... ]]: its substitutions, an arithmetic comparison only of values
 * the guard can evaluate, and its words named as paths like any
 * command's, for each state. */
static void eval_cond(struct sh_j *j, const struct sh_node *n, const struct sh_states *in)
{
    for (size_t k = 0; k < in->n && !j->v->deny; k++) {
        struct sh_node fake = *n;
        fake.kind = SN_SIMPLE;
        fake.words = n->cwords;
        fake.nwords = n->ncwords;
        fake.nassign = 0;
        fake.nredirs = 0;
        struct sh_st st = in->v[k];
        walk_node_subs(j, &st, &fake);
        /* [[ a -eq b ]] evaluates a and b as arithmetic */
        for (size_t w = 0; w + 1 < n->ncwords && !j->v->deny; w++) {
            const struct sh_word *op = &n->cwords[w];
            const char *t = op->nparts == 1 && op->parts[0].kind == SP_LIT ? op->parts[0].text : "";
            static const char *const arith_ops[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge", NULL};
            if (!in_list(t, arith_ops))
                continue;
            const struct sh_word *sides[2] = {w ? &n->cwords[w - 1] : NULL, &n->cwords[w + 1]};
            for (int s = 0; s < 2; s++) {
                const struct sh_word *x = sides[s];
                bool ok = x != NULL;
                for (size_t q = 0; x && q < x->nparts && ok; q++) {
                    const struct sh_part *pp = &x->parts[q];
                    if (pp->kind == SP_LIT)
                        for (size_t m = 0; m < pp->len && ok; m++)
                            ok = isdigit((unsigned char)pp->text[m]) || pp->text[m] == '-';
                    else
                        ok = pp->kind == SP_PARAM && pp->op == PO_PLAIN &&
                             (!strcmp(pp->text, "?") || !strcmp(pp->text, "#"));
                }
                if (!ok) {
                    struct sh_cmd cc = {.text = cmd_text(j, n), .st = &st};
                    sh_unreadable(j, &cc,
                                  "an arithmetic comparison of a value the guard "
                                  "cannot evaluate");
                    break;
                }
            }
        }
        /* the words name paths like any command's */
        struct sh_cmd cc = {0};
        struct pctx pc;
        struct sh_xctx xc;
        xctx_of(j, &st, &pc, &xc);
        sh_xwords ws = VEC_INIT;
        const struct sh_node *saved = j->cur;
        j->cur = n;
        cc.st = &st;
        cc.text = cmd_text(j, n);
        for (size_t w = 0; w < n->ncwords && !j->v->deny; w++) {
            const char *why;
            (void)sh_expand(j->a, &n->cwords[w], &xc, false, &ws, &why);
        }
        cc.w = ws.v;
        cc.n = ws.n;
        naming(j, &cc);
        j->cur = saved;
        vec_free(&ws);
    }
}

static struct res eval(struct sh_j *j, const struct sh_node *n, const struct sh_states *in,
                       bool cond, enum sh_stdin stdin_kind)
{
    struct res r = {0};
    if (!n || j->v->deny || !in->n)
        return r;
    if (j->overflow) {
        sh_unreadable(j, NULL, "more than %d ways through the command", SH_MAX_STATES);
        return r;
    }
    switch (n->kind) {
    case SN_SIMPLE:
        for (size_t k = 0; k < in->n && !j->v->deny; k++) {
            struct sh_st st = in->v[k];
            judge_simple(j, n, &st, stdin_kind, &r);
        }
        break;
    case SN_AND: {
        struct res a = eval(j, n->a, in, true, stdin_kind);
        struct res b = eval(j, n->b, &a.ok, cond, IN_TTY);
        r.ok = b.ok;
        set_union(j, &r.fail, &a.fail);
        set_union(j, &r.fail, &b.fail);
        break;
    }
    case SN_OR: {
        struct res a = eval(j, n->a, in, true, stdin_kind);
        struct res b = eval(j, n->b, &a.fail, cond, IN_TTY);
        set_union(j, &r.ok, &a.ok);
        set_union(j, &r.ok, &b.ok);
        r.fail = b.fail;
        break;
    }
    case SN_SEQ: {
        struct res a = eval(j, n->a, in, cond, stdin_kind);
        struct sh_states mid = {0};
        set_union(j, &mid, &a.ok);
        struct sh_states f = a.fail;
        drop_exited(&f, cond);
        set_union(j, &mid, &f);
        r = eval(j, n->b, &mid, cond, IN_TTY);
        break;
    }
    case SN_BG:
        (void)eval(j, n->a, in, true, IN_NULL);
        r.ok = *in;
        break;
    case SN_PIPE:
        (void)eval(j, n->a, in, true, stdin_kind);
        (void)eval(j, n->b, in, true, IN_PIPE);
        r.ok = *in;
        r.fail = *in;
        break;
    case SN_NOT: {
        struct res a = eval(j, n->a, in, true, stdin_kind);
        r.ok = a.fail;
        r.fail = a.ok;
        break;
    }
    case SN_SUBSHELL:
        judge_node_redirs(j, n, in);
        (void)eval(j, n->a, in, cond, stdin_kind);
        r.ok = *in;
        r.fail = *in;
        break;
    case SN_GROUP:
        judge_node_redirs(j, n, in);
        r = n->a ? eval(j, n->a, in, cond, stdin_kind) : (struct res){*in, {0}};
        break;
    case SN_IF: {
        judge_node_redirs(j, n, in);
        struct sh_states cur = *in;
        for (size_t i = 0; i < n->nclauses && !j->v->deny; i++) {
            struct res c = eval(j, n->conds[i], &cur, true, stdin_kind);
            struct res b = eval(j, n->bodies[i], &c.ok, cond, IN_TTY);
            set_union(j, &r.ok, &b.ok);
            set_union(j, &r.fail, &b.fail);
            cur = c.fail;
        }
        if (n->els) {
            struct res e = eval(j, n->els, &cur, cond, IN_TTY);
            set_union(j, &r.ok, &e.ok);
            set_union(j, &r.fail, &e.fail);
        } else {
            set_union(j, &r.ok, &cur);
        }
        break;
    }
    case SN_WHILE:
    case SN_UNTIL:
        judge_node_redirs(j, n, in);
        r = eval_loop(j, n, in, cond);
        break;
    case SN_FOR:
        judge_node_redirs(j, n, in);
        r = eval_for(j, n, in, cond);
        break;
    case SN_CASE: {
        judge_node_redirs(j, n, in);
        for (size_t k = 0; k < in->n && !j->v->deny; k++) {
            walk_word_subs(j, &in->v[k], &n->subject, 0);
            for (size_t a = 0; a < n->narms; a++)
                for (size_t p = 0; p < n->arms[a].npats; p++)
                    walk_word_subs(j, &in->v[k], &n->arms[a].pats[p], 0);
        }
        set_union(j, &r.ok, in);
        for (size_t a = 0; a < n->narms && !j->v->deny; a++) {
            struct res b = eval(j, n->arms[a].body, in, cond, IN_TTY);
            set_union(j, &r.ok, &b.ok);
            set_union(j, &r.fail, &b.fail);
        }
        break;
    }
    case SN_ARITH:
        for (size_t k = 0; k < in->n && !j->v->deny; k++) {
            struct sh_part ap = {.kind = SP_ARITH, .text = n->text, .len = n->tlen};
            walk_part_subs(j, &in->v[k], &ap, 0);
        }
        r.ok = *in;
        r.fail = *in;
        break;
    case SN_COND:
        eval_cond(j, n, in);
        r.ok = *in;
        r.fail = *in;
        break;
    case SN_FUNC: {
        struct sh_cmd cc = {.text = cmd_text(j, n)};
        sh_unreadable(j, &cc, "a function definition (the guard does not follow calls to %s)",
                      n->fname ? n->fname : "it");
        break;
    }
    case SN_COPROC: {
        struct sh_cmd cc = {.text = cmd_text(j, n)};
        sh_unreadable(j, &cc, "a coprocess");
        break;
    }
    }
    if (j->overflow && !j->v->deny)
        sh_unreadable(j, NULL, "more than %d ways through the command", SH_MAX_STATES);
    return r;
}

/* ---- entry points -------------------------------------------------------- */

static void judge_tree(struct sh_j *j, const char *src, size_t len, const struct sh_st *st)
{
    const char *err = NULL;
    size_t off = 0;
    struct sh_node *t = sh_parse(j->a, src, len, &err, &off);
    if (!t) {
        strbuf s = SB_INIT;
        gi_clean(&s, src, 160);
        struct sh_cmd cc = {.text = s.buf};
        sh_unreadable(j, &cc, "the guard cannot read the shell syntax (%s at byte %zu)", err, off);
        sb_release(&s);
        return;
    }
    struct sh_states in = one(j, st);
    (void)eval(j, t, &in, false, IN_TTY);
}

void sh_judge_text(struct sh_j *j, const struct sh_st *st, const char *text, size_t len,
                   const char *const *positional, size_t npos)
{
    if (j->v->deny)
        return;
    if (j->depth >= GUARD_MAX_SHELL_DEPTH) {
        gi_deny(j->v, true,
                "a command nested more than %d levels deep (sh -c, eval, $(…)) was refused — "
                "the guard cannot judge it · the command did not run",
                GUARD_MAX_SHELL_DEPTH);
        return;
    }
    struct sh_st inner = *st;
    inner.errexit = false;
    inner.pos_known = positional != NULL;
    inner.pos = (const char **)positional;
    inner.npos = npos;
    /* a new shell: variables it inherits are only the exported ones; the
     * ones assigned here may or may not be: unknown */
    struct sh_var *vs = sh_alloc(j->a, (st->nvars + 1) * sizeof *vs);
    for (size_t i = 0; i < st->nvars; i++) {
        vs[i] = st->vars[i];
        vs[i].val = NULL;
        vs[i].unset = false;
    }
    inner.vars = vs;
    const struct sh_node *saved = j->cur;
    bool allowed = j->allowed;
    j->depth++;
    judge_tree(j, text, len, &inner);
    j->depth--;
    j->cur = saved;
    j->allowed = allowed;
}

void gi_judge_shell(const struct guard_ctx *x, const char *cmd, size_t len, int depth,
                    struct guard_verdict *v)
{
    struct sh_arena a = {0};
    struct sh_j j = {.x = x, .v = v, .a = &a, .depth = depth};
    struct sh_st st = {0};
    st.cwd = x->cwd;
    judge_tree(&j, cmd, len, &st);
    sh_arena_free(&a);
}

void sh_judge_argv(struct sh_j *j, struct sh_cmd *c, size_t from, bool tail_unknown,
                   const char *via)
{
    if (j->v->deny || from >= c->n)
        return;
    struct sh_cmd sub = *c;
    sub.w = c->w + from;
    sub.n = c->n - from;
    sub.unres_ok = sh_alloc(j->a, (sub.n + 1) * sizeof *sub.unres_ok);
    for (size_t i = 0; i < sub.n; i++)
        sub.unres_ok[i] = c->unres_ok[from + i];
    sub.prog = 0;
    sub.data_only = false;
    sub.tail_unknown = tail_unknown;
    sub.via = via;
    if (!sh_rules(j, &sub))
        return;
    if (!sub.data_only)
        for (size_t i = sub.prog; i < sub.n && !j->v->deny; i++)
            if ((sub.w[i].unres || sub.w[i].split_unknown) && !sub.unres_ok[i])
                sh_unreadable(j, &sub, "%s runs %s with %s, which the guard cannot resolve",
                              via ? via : "it",
                              sh_base(sub.w[sub.prog < sub.n ? sub.prog : 0].text),
                              sub.w[i].unres ? sub.w[i].unres : "an unknown word");
    for (size_t i = 0; i < sub.n; i++)
        c->unres_ok[from + i] |= sub.unres_ok[i];
}
