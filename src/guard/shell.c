/* guard shell — a bounded POSIX-shell reader and the command rules of spec
 * 03 §7.4: segments split on ; & | && || newline ( ), command substitutions
 * ($(…), `…`, <(…), >(…) — also inside double quotes, where the shell runs
 * them too) judged as commands of their own, wrappers stripped, sh -c bodies
 * re-judged, redirect targets treated as writes, the built-in destructive
 * command list, and self-consent. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "guard/guard_int.h"

/* ---- the reader ---------------------------------------------------------- */

enum rkind { R_READ, R_WRITE, R_DUP, R_HEREDOC, R_HERESTRING };

struct word {
    char *text;
    bool quoted;
    bool ws; /* holds whitespace (no bare-name spelling) */
};

struct redir {
    enum rkind kind;
    struct word target;
};

struct seg {
    VEC(struct word) w;
    VEC(struct redir) r;
    size_t start, end; /* raw text span in the source */
};

struct parse {
    VEC(struct seg) segs;
    strvec subs; /* substitution bodies, judged one level deeper */
};

struct reader {
    const char *s;
    size_t n, i;
    struct parse *P;
    struct seg cur;
    strbuf word;
    bool in_word, quoted, ws;
    int pending;     /* redirect kind waiting for its target, or -1 */
    strvec heredocs; /* delimiters to skip at the next newline ("-" prefix: <<-) */
};

static void word_free(struct word *w)
{
    free(w->text);
}

static void seg_free(struct seg *g)
{
    for (size_t i = 0; i < g->w.n; i++)
        word_free(&g->w.v[i]);
    for (size_t i = 0; i < g->r.n; i++)
        word_free(&g->r.v[i].target);
    vec_free(&g->w);
    vec_free(&g->r);
}

static void parse_free(struct parse *P)
{
    for (size_t i = 0; i < P->segs.n; i++)
        seg_free(&P->segs.v[i]);
    vec_free(&P->segs);
    strvec_clear(&P->subs);
}

static void end_word(struct reader *R)
{
    if (!R->in_word)
        return;
    struct word w = {sb_detach(&R->word, NULL), R->quoted, R->ws};
    if (R->pending >= 0) {
        struct redir rd = {(enum rkind)R->pending, w};
        if (rd.kind == R_HEREDOC) {
            strvec_pushf(&R->heredocs, "%s", w.text);
        }
        if (rd.kind == R_DUP) {
            /* >&file (not a number or "-") writes a file */
            bool fd = w.text[0] != '\0';
            for (const char *p = w.text; *p; p++)
                fd &= isdigit((unsigned char)*p) || *p == '-';
            if (!fd)
                rd.kind = R_WRITE;
        }
        vec_push(&R->cur.r, rd);
        R->pending = -1;
    } else {
        vec_push(&R->cur.w, w);
    }
    R->in_word = R->quoted = R->ws = false;
}

static void end_seg(struct reader *R, size_t end)
{
    end_word(R);
    R->pending = -1;
    R->cur.end = end;
    if (R->cur.w.n || R->cur.r.n)
        vec_push(&R->P->segs, R->cur);
    else
        seg_free(&R->cur);
    memset(&R->cur, 0, sizeof R->cur);
    R->cur.start = R->i;
}

/* Skips heredoc bodies after a newline (R->i is at the first body line). */
static void skip_heredocs(struct reader *R)
{
    for (size_t h = 0; h < R->heredocs.n; h++) {
        const char *d = R->heredocs.v[h];
        while (R->i < R->n) {
            size_t ls = R->i;
            const char *nl = memchr(R->s + ls, '\n', R->n - ls);
            size_t le = nl ? (size_t)(nl - R->s) : R->n;
            R->i = nl ? le + 1 : R->n;
            size_t a = ls;
            while (a < le && R->s[a] == '\t')
                a++;
            if (le - a == strlen(d) && memcmp(R->s + a, d, le - a) == 0)
                break;
        }
    }
    strvec_clear(&R->heredocs);
}

/* Extracts a $( … ) / <( … ) body starting after the '('; returns the index
 * after the closing ')' (or n when unterminated). */
static size_t paren_body(const char *s, size_t n, size_t i, strvec *subs)
{
    size_t start = i;
    int depth = 1;
    while (i < n) {
        char c = s[i];
        if (c == '\\') {
            i += 2;
            continue;
        }
        if (c == '\'') {
            const char *q = memchr(s + i + 1, '\'', n - i - 1);
            i = q ? (size_t)(q - s) + 1 : n;
            continue;
        }
        if (c == '"') {
            i++;
            while (i < n && s[i] != '"')
                i += s[i] == '\\' ? 2 : 1;
            i++;
            continue;
        }
        if (c == '(')
            depth++;
        if (c == ')' && --depth == 0)
            break;
        i++;
    }
    size_t end = i < n ? i : n;
    strvec_push_take(subs, xstrndup(s + start, end - start));
    return i < n ? i + 1 : n;
}

static size_t backtick_body(const char *s, size_t n, size_t i, strvec *subs)
{
    size_t start = i;
    while (i < n && s[i] != '`')
        i += s[i] == '\\' ? 2 : 1;
    size_t end = i < n ? i : n;
    strvec_push_take(subs, xstrndup(s + start, end - start));
    return i < n ? i + 1 : n;
}

static void add_char(struct reader *R, char c)
{
    sb_addc(&R->word, c);
    R->in_word = true;
}

static void sh_read(const char *s, size_t n, struct parse *P)
{
    struct reader R = {.s = s, .n = n, .P = P, .pending = -1};
    sb_init(&R.word, 0);
    while (R.i < n) {
        char c = s[R.i];
        if (c == ' ' || c == '\t' || c == '\r') {
            end_word(&R);
            R.i++;
        } else if (c == '\n') {
            size_t e = R.i;
            R.i++;
            end_seg(&R, e);
            skip_heredocs(&R);
            R.cur.start = R.i;
        } else if (c == '#' && !R.in_word) {
            while (R.i < n && s[R.i] != '\n')
                R.i++;
        } else if (c == '&' && R.i + 1 < n && s[R.i + 1] == '>') {
            end_word(&R);
            R.i += 2;
            if (R.i < n && s[R.i] == '>')
                R.i++;
            R.pending = R_WRITE;
        } else if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
            size_t e = R.i;
            R.i++;
            if (R.i < n && (s[R.i] == c || (c == '|' && s[R.i] == '&')))
                R.i++;
            end_seg(&R, e);
        } else if ((c == '<' || c == '>') && R.i + 1 < n && s[R.i + 1] == '(') {
            end_word(&R);
            R.i = paren_body(s, n, R.i + 2, &P->subs);
            add_char(&R, '$'); /* an unresolvable operand */
        } else if (c == '<' || c == '>') {
            /* "2>" — the digits before are a file descriptor, not a word */
            bool fd = R.in_word && !R.quoted && R.word.len > 0;
            for (size_t k = 0; fd && k < R.word.len; k++)
                fd = isdigit((unsigned char)R.word.buf[k]);
            if (fd) {
                sb_reset(&R.word);
                R.in_word = false;
            }
            end_word(&R);
            const char *p = s + R.i;
            size_t left = n - R.i;
            int kind;
            size_t len;
            if (left >= 3 && !memcmp(p, "<<<", 3))
                kind = R_HERESTRING, len = 3;
            else if (left >= 3 && !memcmp(p, "<<-", 3))
                kind = R_HEREDOC, len = 3;
            else if (left >= 2 && !memcmp(p, "<<", 2))
                kind = R_HEREDOC, len = 2;
            else if (left >= 2 && (!memcmp(p, ">&", 2) || !memcmp(p, "<&", 2)))
                kind = R_DUP, len = 2;
            else if (left >= 2 &&
                     (!memcmp(p, ">>", 2) || !memcmp(p, ">|", 2) || !memcmp(p, "<>", 2)))
                kind = R_WRITE, len = 2;
            else if (c == '>')
                kind = R_WRITE, len = 1;
            else
                kind = R_READ, len = 1;
            R.i += len;
            R.pending = kind;
        } else if (c == '`') {
            R.i = backtick_body(s, n, R.i + 1, &P->subs);
            add_char(&R, '$');
        } else if (c == '$' && R.i + 1 < n && s[R.i + 1] == '(') {
            R.i = paren_body(s, n, R.i + 2, &P->subs);
            sb_adds(&R.word, "$(…)");
            R.in_word = true;
        } else if (c == '\'') {
            R.quoted = R.in_word = true;
            const char *q = memchr(s + R.i + 1, '\'', n - R.i - 1);
            size_t e = q ? (size_t)(q - s) : n;
            for (size_t k = R.i + 1; k < e; k++) {
                sb_addc(&R.word, s[k]);
                R.ws |= isspace((unsigned char)s[k]) != 0;
            }
            R.i = q ? e + 1 : n;
        } else if (c == '"') {
            R.quoted = R.in_word = true;
            R.i++;
            while (R.i < n && s[R.i] != '"') {
                char d = s[R.i];
                if (d == '\\' && R.i + 1 < n && strchr("$`\"\\\n", s[R.i + 1])) {
                    if (s[R.i + 1] != '\n')
                        sb_addc(&R.word, s[R.i + 1]);
                    R.i += 2;
                } else if (d == '$' && R.i + 1 < n && s[R.i + 1] == '(') {
                    R.i = paren_body(s, n, R.i + 2, &P->subs);
                    sb_adds(&R.word, "$(…)");
                } else if (d == '`') {
                    R.i = backtick_body(s, n, R.i + 1, &P->subs);
                    sb_addc(&R.word, '$');
                } else {
                    R.ws |= isspace((unsigned char)d) != 0;
                    sb_addc(&R.word, d);
                    R.i++;
                }
            }
            R.i++;
        } else if (c == '\\') {
            if (R.i + 1 < n && s[R.i + 1] != '\n')
                add_char(&R, s[R.i + 1]);
            R.i += 2;
        } else {
            add_char(&R, c);
            R.i++;
        }
    }
    if (R.i > n)
        R.i = n;
    end_seg(&R, n);
    seg_free(&R.cur);
    sb_release(&R.word);
    strvec_clear(&R.heredocs);
}

/* ---- helpers ------------------------------------------------------------- */

struct J {
    const struct guard_ctx *x;
    struct guard_verdict *v;
    int depth;
    const char *src;
};

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static bool is_assignment(const struct word *w)
{
    const char *t = w->text;
    if (!(isalpha((unsigned char)t[0]) || t[0] == '_'))
        return false;
    for (const char *p = t; *p; p++) {
        if (*p == '=')
            return p > t;
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    }
    return false;
}

/* Expands ~, $HOME, $TMPDIR, $PWD (and the ${…} forms). *unresolved when
 * another variable or a substitution is left. */
static void expand(const struct guard_ctx *x, const char *t, strbuf *out, bool *unresolved)
{
    sb_reset(out);
    *unresolved = false;
    if (x->home && t[0] == '~' && (t[1] == '\0' || t[1] == '/')) {
        sb_adds(out, x->home);
        t++;
    }
    const char *tmp = getenv("TMPDIR");
    while (*t) {
        if (*t != '$') {
            sb_addc(out, *t++);
            continue;
        }
        static const char *const names[] = {"HOME", "TMPDIR", "PWD"};
        const char *vals[] = {x->home, tmp && tmp[0] ? tmp : "/tmp", x->cwd};
        bool done = false;
        for (size_t k = 0; k < 3 && !done; k++) {
            size_t l = strlen(names[k]);
            if (!strncmp(t + 1, names[k], l) &&
                !(isalnum((unsigned char)t[1 + l]) || t[1 + l] == '_')) {
                if (vals[k])
                    sb_adds(out, vals[k]);
                else
                    *unresolved = true;
                t += 1 + l;
                done = true;
            } else if (t[1] == '{' && !strncmp(t + 2, names[k], l) && t[2 + l] == '}') {
                if (vals[k])
                    sb_adds(out, vals[k]);
                else
                    *unresolved = true;
                t += 3 + l;
                done = true;
            }
        }
        if (!done) {
            *unresolved = true;
            sb_addc(out, *t++);
        }
    }
}

/* Absolute lexical path of an operand; *unresolved as for expand. */
static void operand_path(const struct J *j, const char *t, strbuf *abs, bool *unresolved)
{
    strbuf e = SB_INIT;
    expand(j->x, t, &e, unresolved);
    guard_lexical(j->x->cwd, j->x->home, e.buf, abs);
    sb_release(&e);
}

/* A built-in rule's refusal: msg + the outcome + the rule tail. */
static void deny_builtin(struct J *j, const char *msg)
{
    strbuf t = SB_INIT;
    gi_builtin_tail(j->x, &t);
    gi_deny(j->v, true, "%s · the command did not run%s", msg, t.buf);
    sb_release(&t);
}

/* The same with one operand (cleaned, cut) after a fixed head and before a tail. */
static void deny_builtin_arg(struct J *j, const char *head, const char *arg, const char *tail)
{
    strbuf a = SB_INIT, m = SB_INIT;
    gi_clean(&a, arg, 200);
    sb_addf(&m, "%s%s%s", head, a.buf, tail);
    deny_builtin(j, m.buf);
    sb_release(&a);
    sb_release(&m);
}

static bool is_flag(const char *t)
{
    return t[0] == '-' && t[1] != '\0';
}

/* Short-option cluster ("-rf") or long option holding letter c / name. */
static bool has_opt(const struct word *w, size_t from, size_t to, char c, const char *lng)
{
    for (size_t i = from; i < to; i++) {
        const char *t = w[i].text;
        if (!strcmp(t, "--"))
            return false;
        if (lng && !strncmp(t, "--", 2) && !strcmp(t + 2, lng))
            return true;
        if (t[0] == '-' && t[1] != '-' && t[1] && strchr(t + 1, c))
            return true;
    }
    return false;
}

static bool has_word(const struct word *w, size_t from, size_t to, const char *s)
{
    for (size_t i = from; i < to; i++)
        if (!strcmp(w[i].text, s))
            return true;
    return false;
}

typedef VEC(size_t) idxvec;

/* Operands: words that are not options (everything after "--"). */
static void operands(const struct word *w, size_t from, size_t to, const char *const *argopts,
                     idxvec *out)
{
    bool dashdash = false;
    for (size_t i = from; i < to; i++) {
        const char *t = w[i].text;
        if (!dashdash && !strcmp(t, "--")) {
            dashdash = true;
            continue;
        }
        if (!dashdash && is_flag(t)) {
            for (size_t k = 0; argopts && argopts[k]; k++)
                if (!strcmp(t, argopts[k]) && i + 1 < to)
                    i++;
            continue;
        }
        vec_push(out, i);
    }
}

/* The write check for an operand. */
static int write_operand(struct J *j, const struct word *w, const char *what)
{
    strbuf abs = SB_INIT;
    bool unres;
    operand_path(j, w->text, &abs, &unres);
    int ok = gi_check_write(j->x, w->text, abs.buf, what, j->v);
    sb_release(&abs);
    return ok;
}

/* rm / chmod -R / find -delete targets: never /, home, the workspace root or
 * an ancestor of them; then the write check. */
static void destructive_target(struct J *j, const struct word *w, const char *cmd, bool recursive,
                               bool protect_ws)
{
    strbuf abs = SB_INIT;
    bool unres;
    operand_path(j, w->text, &abs, &unres);
    const struct guard_ctx *x = j->x;
    if (unres && recursive) {
        strbuf h = SB_INIT;
        sb_addf(&h, "%s on ", cmd);
        deny_builtin_arg(j, h.buf, w->text,
                         " was refused — its target depends on a variable or command the guard "
                         "cannot resolve");
        sb_release(&h);
    } else if (!strcmp(abs.buf, "/") || (x->home && gi_under(x->home, abs.buf)) ||
               (protect_ws && gi_under(x->workspace, abs.buf))) {
        const char *what = !strcmp(abs.buf, "/")                  ? "/"
                           : x->home && !strcmp(abs.buf, x->home) ? "your home directory"
                           : !strcmp(abs.buf, x->workspace)       ? "the workspace root"
                                                                  : "a parent of the workspace";
        strbuf h = SB_INIT, t = SB_INIT;
        sb_addf(&h, "%s ", cmd);
        sb_addf(&t, " was refused — it would remove %s", what);
        deny_builtin_arg(j, h.buf, w->text, t.buf);
        sb_release(&h);
        sb_release(&t);
    } else {
        gi_check_write(x, w->text, abs.buf, "a delete of", j->v);
    }
    sb_release(&abs);
}

/* ---- built-in rules ------------------------------------------------------ */

static void rule_rm(struct J *j, const struct word *w, size_t a, size_t n, bool via_xargs)
{
    bool rec = has_opt(w, a, n, 'r', "recursive") || has_opt(w, a, n, 'R', NULL);
    if (via_xargs && rec) {
        deny_builtin(j, "recursive rm through xargs was refused — its targets come from "
                        "input the guard cannot see");
        return;
    }
    idxvec ops = VEC_INIT;
    operands(w, a, n, NULL, &ops);
    for (size_t i = 0; i < ops.n && !j->v->deny; i++)
        destructive_target(j, &w[ops.v[i]], "rm", rec, true);
    vec_free(&ops);
}

static void rule_git(struct J *j, const struct word *w, size_t a, size_t n)
{
    static const char *const argopts[] = {
        "-C",          "-c",          "--git-dir",      "--work-tree",
        "--namespace", "--exec-path", "--super-prefix", "--config-env",
        NULL};
    size_t i = a;
    while (i < n && is_flag(w[i].text)) {
        bool takes = false;
        for (size_t k = 0; argopts[k]; k++)
            takes |= !strcmp(w[i].text, argopts[k]);
        i += takes ? 2 : 1;
    }
    if (i >= n)
        return;
    const char *sub = w[i].text;
    size_t s = i + 1;
    if (!strcmp(sub, "reset") && has_word(w, s, n, "--hard"))
        deny_builtin(j, "git reset --hard was refused — it discards uncommitted work");
    else if (!strcmp(sub, "clean") && (has_opt(w, s, n, 'f', "force")))
        deny_builtin(j, "git clean -f was refused — it deletes untracked files");
    else if (!strcmp(sub, "checkout") && has_word(w, s, n, "."))
        deny_builtin(j, "git checkout . was refused — it discards uncommitted changes");
    else if (!strcmp(sub, "restore") && has_word(w, s, n, ".") &&
             (!(has_word(w, s, n, "--staged") || has_opt(w, s, n, 'S', NULL)) ||
              has_word(w, s, n, "--worktree") || has_opt(w, s, n, 'W', NULL)))
        deny_builtin(j, "git restore . was refused — it discards uncommitted changes");
    else if (!strcmp(sub, "push")) {
        bool force = has_opt(w, s, n, 'f', "force");
        for (size_t k = s; k < n; k++)
            force |= w[k].text[0] == '+' && w[k].text[1];
        bool lease = false;
        for (size_t k = s; k < n; k++)
            lease |= !strncmp(w[k].text, "--force-with-lease", 18);
        if (force && !lease)
            deny_builtin(j, "git push --force was refused — it can overwrite others' commits "
                            "(use --force-with-lease)");
    } else if (!strcmp(sub, "stash") && s < n && !strcmp(w[s].text, "clear"))
        deny_builtin(j, "git stash clear was refused — it deletes every stash");
}

static void rule_find(struct J *j, const struct word *w, size_t a, size_t n)
{
    if (!has_word(w, a, n, "-delete"))
        return;
    size_t i = a;
    while (i < n &&
           (!strcmp(w[i].text, "-H") || !strcmp(w[i].text, "-L") || !strcmp(w[i].text, "-P") ||
            !strncmp(w[i].text, "-O", 2) || !strcmp(w[i].text, "-D")))
        i += !strcmp(w[i].text, "-D") ? 2 : 1;
    bool any = false;
    for (; i < n && !j->v->deny; i++) {
        const char *t = w[i].text;
        if (t[0] == '-' || t[0] == '(' || t[0] == '!')
            break;
        any = true;
        destructive_target(j, &w[i], "find -delete", true, false);
    }
    if (!any && !j->v->deny) {
        struct word dot = {(char *)".", false, false};
        destructive_target(j, &dot, "find -delete", true, false);
    }
}

static void rule_chmod(struct J *j, const struct word *w, size_t a, size_t n, const char *cmd)
{
    if (!(has_opt(w, a, n, 'R', "recursive")))
        return;
    idxvec ops = VEC_INIT;
    operands(w, a, n, NULL, &ops);
    /* the first operand is the mode or owner (unless --reference=) */
    size_t first = 1;
    for (size_t k = a; k < n; k++)
        if (!strncmp(w[k].text, "--reference", 11))
            first = 0;
    for (size_t i = first; i < ops.n && !j->v->deny; i++) {
        strbuf label = SB_INIT;
        sb_addf(&label, "%s -R", cmd);
        destructive_target(j, &w[ops.v[i]], label.buf, true, false);
        sb_release(&label);
    }
    vec_free(&ops);
}

static void writes_all(struct J *j, const struct word *w, const idxvec *ops, size_t from)
{
    for (size_t i = from; i < ops->n && !j->v->deny; i++)
        write_operand(j, &w[ops->v[i]], "a write to");
}

static void rule_mv_cp(struct J *j, const struct word *w, size_t a, size_t n, bool mv)
{
    static const char *const argopts[] = {"-S", "--suffix", NULL};
    const struct word *target = NULL;
    struct word tw = {0};
    for (size_t k = a; k < n; k++) {
        if (!strcmp(w[k].text, "-t") && k + 1 < n) {
            target = &w[k + 1];
        } else if (!strncmp(w[k].text, "--target-directory=", 19)) {
            tw.text = w[k].text + 19;
            tw.ws = w[k].ws;
            target = &tw;
        }
    }
    idxvec ops = VEC_INIT;
    operands(w, a, n, argopts, &ops);
    if (target) {
        write_operand(j, target, "a write to");
        if (mv)
            for (size_t i = 0; i < ops.n && !j->v->deny; i++)
                if (&w[ops.v[i]] != target)
                    write_operand(j, &w[ops.v[i]], "a move of");
    } else if (ops.n >= 2) {
        write_operand(j, &w[ops.v[ops.n - 1]], "a write to");
        for (size_t i = 0; mv && i + 1 < ops.n && !j->v->deny; i++)
            write_operand(j, &w[ops.v[i]], "a move of");
    }
    vec_free(&ops);
}

static void rule_sed_perl(struct J *j, const struct word *w, size_t a, size_t n, bool perl)
{
    bool inplace = false, script_given = false;
    for (size_t k = a; k < n; k++) {
        const char *t = w[k].text;
        if (!strcmp(t, "--"))
            break;
        if (!strncmp(t, "--in-place", 10))
            inplace = true;
        else if (t[0] == '-' && t[1] != '-' && strchr(t + 1, 'i'))
            inplace = true;
        if (!strcmp(t, "-e") || !strcmp(t, "-f") || !strcmp(t, "-E") ||
            !strncmp(t, "--expression", 12) || !strncmp(t, "--file", 6) ||
            (t[0] == '-' && t[1] != '-' && (strchr(t + 1, 'e') || (perl && strchr(t + 1, 'E')))))
            script_given = true;
    }
    if (!inplace)
        return;
    static const char *const sed_args[] = {"-e", "-f", "-l", NULL};
    static const char *const perl_args[] = {"-e", "-E", "-I", "-M", NULL};
    idxvec ops = VEC_INIT;
    operands(w, a, n, perl ? perl_args : sed_args, &ops);
    /* clusters such as -pie take the next word as the script */
    bool cluster_script = false;
    for (size_t k = a; k < n; k++) {
        const char *t = w[k].text;
        if (t[0] == '-' && t[1] != '-' && strlen(t) > 2 && t[strlen(t) - 1] == 'e')
            cluster_script = true;
    }
    size_t from = script_given ? 0 : 1;
    if (cluster_script && ops.n)
        from = 1;
    writes_all(j, w, &ops, from);
    vec_free(&ops);
}

static void rule_simple_writes(struct J *j, const struct word *w, size_t a, size_t n,
                               const char *const *argopts)
{
    idxvec ops = VEC_INIT;
    operands(w, a, n, argopts, &ops);
    writes_all(j, w, &ops, 0);
    vec_free(&ops);
}

static void rule_dd(struct J *j, const struct word *w, size_t a, size_t n)
{
    for (size_t k = a; k < n && !j->v->deny; k++) {
        if (strncmp(w[k].text, "of=", 3) != 0)
            continue;
        const char *p = w[k].text + 3;
        if (!strncmp(p, "/dev/", 5) && strcmp(p, "/dev/null") != 0) {
            deny_builtin_arg(j, "dd of=", p, " was refused — it overwrites a device");
        } else {
            struct word t = {(char *)p, w[k].quoted, w[k].ws};
            write_operand(j, &t, "a write to");
        }
    }
}

/* ---- self-consent -------------------------------------------------------- */

static void rule_self_consent(struct J *j, const struct word *w, size_t a, size_t n)
{
    size_t i = a;
    while (i < n) {
        const char *t = w[i].text;
        if (!strcmp(t, "--manifest-dir")) {
            i += 2;
            continue;
        }
        if (is_flag(t) || !strcmp(t, "more") || !strcmp(t, "x")) {
            i++;
            continue;
        }
        break;
    }
    if (i >= n)
        return;
    const char *verb = w[i].text;
    bool yes = has_word(w, i + 1, n, "--yes") || has_word(w, i + 1, n, "-y");
    bool consent = false;
    if (!strcmp(verb, "trust"))
        consent = !has_word(w, i + 1, n, "--preview") && !has_word(w, i + 1, n, "--list");
    else if (!strcmp(verb, "yes"))
        consent = true;
    else if ((!strcmp(verb, "init") || !strcmp(verb, "apply")) && yes)
        consent = true;
    if (consent) {
        strbuf v = SB_INIT;
        gi_clean(&v, verb, 40);
        gi_deny(j->v, true,
                "`agentstack %s%s` gives consent on the user's behalf — consent is given by a "
                "person at their own terminal, never by an agent · the command did not run · to "
                "see what would be approved: agentstack trust --preview",
                v.buf, yes && strcmp(verb, "trust") && strcmp(verb, "yes") ? " --yes" : "");
        sb_release(&v);
    }
}

/* ---- one segment --------------------------------------------------------- */

static bool interp(const char *b)
{
    static const char *const names[] = {"node", "nodejs", "ruby", "deno",
                                        "bun",  "php",    "perl", NULL};
    if (!strncmp(b, "python", 6) || !strncmp(b, "pypy", 4))
        return true;
    for (size_t k = 0; names[k]; k++)
        if (!strcmp(b, names[k]))
            return true;
    return false;
}

static bool shell_name(const char *b)
{
    static const char *const names[] = {"sh",  "bash", "zsh",  "dash",    "ksh", "fish",
                                        "ash", "mksh", "yash", "busybox", NULL};
    for (size_t k = 0; names[k]; k++)
        if (!strcmp(b, names[k]))
            return true;
    return false;
}

static void judge_text(struct J *j, const char *s, size_t len);

/* Skips wrappers; returns the index of the program word. *xargs when an
 * xargs wrapper was passed. */
static size_t strip_wrappers(struct J *j, const struct word *w, size_t n, bool *xargs)
{
    static const char *const keywords[] = {"if",    "then",  "else", "elif", "fi", "do",     "done",
                                           "while", "until", "!",    "{",    "}",  "coproc", NULL};
    size_t i = 0;
    for (int guard = 0; i < n && guard < 64; guard++) {
        const char *t = w[i].text;
        const char *b = base_name(t);
        bool kw = false;
        for (size_t k = 0; keywords[k] && !w[i].quoted; k++)
            kw |= !strcmp(t, keywords[k]);
        if (kw || is_assignment(&w[i])) {
            i++;
            continue;
        }
        const char *const *argopts = NULL;
        static const char *const sudo_a[] = {"-u", "-g", "-C", "-D",     "-h",      "-p", "-r",
                                             "-t", "-U", "-T", "--user", "--group", NULL};
        static const char *const env_a[] = {"-u", "-C", "--unset", "--chdir", NULL};
        static const char *const nice_a[] = {"-n", "--adjustment", NULL};
        static const char *const ionice_a[] = {"-c", "-n", "-p", "-P", "-u", NULL};
        static const char *const timeout_a[] = {"-s", "-k", "--signal", "--kill-after", NULL};
        static const char *const exec_a[] = {"-a", NULL};
        static const char *const xargs_a[] = {"-I", "-n", "-P",         "-d",          "-L", "-E",
                                              "-s", "-a", "--max-args", "--max-procs", NULL};
        static const char *const npx_a[] = {"-p", "--package", "-c", NULL};
        static const char *const plain_a[] = {NULL};
        bool after_operand = false; /* timeout DURATION, taskset MASK */
        if (!strcmp(b, "sudo") || !strcmp(b, "doas"))
            argopts = sudo_a;
        else if (!strcmp(b, "env"))
            argopts = env_a;
        else if (!strcmp(b, "nice"))
            argopts = nice_a;
        else if (!strcmp(b, "ionice"))
            argopts = ionice_a;
        else if (!strcmp(b, "timeout"))
            argopts = timeout_a, after_operand = true;
        else if (!strcmp(b, "exec"))
            argopts = exec_a;
        else if (!strcmp(b, "xargs"))
            argopts = xargs_a, *xargs = true;
        else if (!strcmp(b, "npx") || !strcmp(b, "bunx") || !strcmp(b, "pnpx"))
            argopts = npx_a;
        else if (!strcmp(b, "taskset"))
            argopts = plain_a, after_operand = true;
        else if (!strcmp(b, "nohup") || !strcmp(b, "setsid") || !strcmp(b, "time") ||
                 !strcmp(b, "command") || !strcmp(b, "builtin") || !strcmp(b, "stdbuf") ||
                 !strcmp(b, "chronic") || !strcmp(b, "unbuffer") || !strcmp(b, "caffeinate") ||
                 !strcmp(b, "chrt") || !strcmp(b, "script") || !strcmp(b, "noglob"))
            argopts = plain_a, after_operand = !strcmp(b, "chrt");
        if (!argopts)
            break;
        i++;
        while (i < n && (is_flag(w[i].text) || (!strcmp(b, "env") && is_assignment(&w[i])))) {
            const char *f = w[i].text;
            if (!strcmp(f, "--")) {
                i++;
                break;
            }
            /* env -S / --split-string: the string is a command line */
            if (!strcmp(b, "env") && (!strcmp(f, "-S") || !strncmp(f, "--split-string", 14))) {
                const char *body = NULL;
                if (!strncmp(f, "--split-string=", 15))
                    body = f + 15;
                else if (i + 1 < n)
                    body = w[++i].text;
                if (body)
                    judge_text(j, body, strlen(body));
                return n;
            }
            bool takes = false;
            for (size_t k = 0; argopts[k]; k++)
                takes |= !strcmp(f, argopts[k]);
            i += takes ? 2 : 1;
        }
        if (after_operand && i < n)
            i++;
    }
    return i;
}

static void judge_segment(struct J *j, const struct seg *g)
{
    const struct guard_ctx *x = j->x;
    const struct word *w = g->w.v;
    size_t n = g->w.n;
    strbuf abs = SB_INIT;
    bool unres;
    /* redirect targets */
    for (size_t i = 0; i < g->r.n && !j->v->deny; i++) {
        const struct redir *r = &g->r.v[i];
        if (r->kind == R_WRITE) {
            operand_path(j, r->target.text, &abs, &unres);
            gi_check_write(x, r->target.text, abs.buf, "a write to", j->v);
        } else if (r->kind == R_READ) {
            operand_path(j, r->target.text, &abs, &unres);
            gi_check_glob(x, r->target.text, abs.buf, "a read of", "nothing was read", j->v);
        }
    }
    bool xargs = false;
    size_t p = j->v->deny ? n : strip_wrappers(j, w, n, &xargs);
    /* every non-flag word naming a denied path (and --opt=value values) */
    for (size_t i = 0; i < n && !j->v->deny; i++) {
        const char *t = w[i].text;
        if (t[0] == '-') {
            const char *eq = strchr(t, '=');
            if (!eq || !eq[1] || t[1] != '-')
                continue;
            t = eq + 1;
        }
        if (t[0] == '@' && t[1])
            t++; /* curl -d @file, gcc @argsfile */
        if (!t[0])
            continue;
        operand_path(j, t, &abs, &unres);
        gi_check_glob(x, t, abs.buf, "a command naming", "the command did not run", j->v);
    }
    if (j->v->deny || p >= n) {
        sb_release(&abs);
        return;
    }
    const char *b = base_name(w[p].text);
    size_t a = p + 1;
    if (shell_name(b)) {
        /* sh -c BODY (also clusters such as -lc, -ec) */
        for (size_t i = a; i < n; i++) {
            const char *t = w[i].text;
            if (t[0] != '-' || t[1] == '-')
                break;
            if (strchr(t + 1, 'c') && i + 1 < n) {
                judge_text(j, w[i + 1].text, strlen(w[i + 1].text));
                break;
            }
        }
    } else if (interp(b)) {
        size_t len = g->end > g->start ? g->end - g->start : 0;
        const char *seg = j->src + g->start;
        bool names = memmem(seg, len, ".agentstack", 11) ||
                     memmem(seg, len, "AGENTSTACK_HOME", 15) ||
                     memmem(seg, len, x->ash, strlen(x->ash)) ||
                     (x->ash_real && memmem(seg, len, x->ash_real, strlen(x->ash_real)));
        for (size_t i = a; i < n && !names; i++)
            names = strstr(w[i].text, ".agentstack") || strstr(w[i].text, "AGENTSTACK_HOME") ||
                    strstr(w[i].text, x->ash);
        if (names)
            deny_builtin_arg(j, "", b,
                             " naming agentstack's machine home was refused — agents never "
                             "touch consent, policy or evidence");
    }
    if (!j->v->deny) {
        if (!strcmp(b, "agentstack"))
            rule_self_consent(j, w, a, n);
        else if (!strcmp(b, "rm"))
            rule_rm(j, w, a, n, xargs);
        else if (!strcmp(b, "git"))
            rule_git(j, w, a, n);
        else if (!strcmp(b, "find"))
            rule_find(j, w, a, n);
        else if (!strcmp(b, "shred"))
            deny_builtin(j, "shred was refused — it destroys file contents beyond recovery");
        else if (!strcmp(b, "dd"))
            rule_dd(j, w, a, n);
        else if (!strcmp(b, "diskutil") && a < n &&
                 (!strcmp(w[a].text, "eraseDisk") || !strcmp(w[a].text, "eraseVolume") ||
                  !strcmp(w[a].text, "partitionDisk") || !strcmp(w[a].text, "zeroDisk") ||
                  !strcmp(w[a].text, "secureErase")))
            deny_builtin_arg(j, "diskutil ", w[a].text, " was refused — it erases a disk");
        else if (!strncmp(b, "mkfs", 4))
            deny_builtin_arg(j, "", b, " was refused — it formats a disk");
        else if (!strcmp(b, "chmod") || !strcmp(b, "chown") || !strcmp(b, "chgrp"))
            rule_chmod(j, w, a, n, b);
        else if (!strcmp(b, "tee")) {
            rule_simple_writes(j, w, a, n, NULL);
        } else if (!strcmp(b, "truncate")) {
            static const char *const ta[] = {"-s", "-r", "--size", "--reference", NULL};
            rule_simple_writes(j, w, a, n, ta);
        } else if (!strcmp(b, "install")) {
            static const char *const ia[] = {"-m",     "-o",      "-g",      "-t", "-S",
                                             "--mode", "--owner", "--group", NULL};
            idxvec ops = VEC_INIT;
            operands(w, a, n, ia, &ops);
            if (has_opt(w, a, n, 'd', "directory"))
                writes_all(j, w, &ops, 0);
            else if (ops.n >= 2)
                writes_all(j, w, &ops, ops.n - 1);
            vec_free(&ops);
        } else if (!strcmp(b, "sed"))
            rule_sed_perl(j, w, a, n, false);
        else if (!strcmp(b, "perl"))
            rule_sed_perl(j, w, a, n, true);
        else if (!strcmp(b, "mv"))
            rule_mv_cp(j, w, a, n, true);
        else if (!strcmp(b, "cp") || !strcmp(b, "ln"))
            rule_mv_cp(j, w, a, n, false);
        else if (!strcmp(b, "touch") || !strcmp(b, "mkdir") || !strcmp(b, "rmdir") ||
                 !strcmp(b, "unlink")) {
            static const char *const ma[] = {"-m", "--mode", "-d", "-r", "-t", NULL};
            rule_simple_writes(j, w, a, n, ma);
        }
    }
    sb_release(&abs);
}

static void judge_text(struct J *j, const char *s, size_t len)
{
    if (j->v->deny)
        return;
    if (j->depth >= GUARD_MAX_SHELL_DEPTH) {
        gi_deny(j->v, true,
                "a command nested more than %d levels deep (sh -c, $(…)) was refused — the "
                "guard cannot judge it · the command did not run",
                GUARD_MAX_SHELL_DEPTH);
        return;
    }
    struct J inner = {j->x, j->v, j->depth + 1, NULL};
    gi_judge_shell(inner.x, s, len, inner.depth, inner.v);
}

void gi_judge_shell(const struct guard_ctx *x, const char *cmd, size_t len, int depth,
                    struct guard_verdict *v)
{
    struct parse P = {0};
    char *src = xstrndup(cmd, len);
    sh_read(src, strlen(src), &P);
    struct J j = {x, v, depth, src};
    for (size_t i = 0; i < P.segs.n && !v->deny; i++)
        judge_segment(&j, &P.segs.v[i]);
    for (size_t i = 0; i < P.subs.n && !v->deny; i++)
        judge_text(&j, P.subs.v[i], strlen(P.subs.v[i]));
    parse_free(&P);
    free(src);
}
