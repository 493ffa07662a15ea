/* sh operand — one file a command names, reads, writes or removes, checked
 * as the guard checks paths (deny globs, the machine home, write roots,
 * the protected directories of removals), also when the word is a glob:
 * statically (a pattern that spells a denied name, can reach the machine
 * home, or removes everything in a protected directory) and against the
 * files it matches now, dotfiles included. A word that does not resolve is
 * refused as unreadable, never guessed. */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/sh_judge.h"

/* ---- operands ------------------------------------------------------------ */

const char *sh_abs(struct sh_j *j, const struct sh_st *st, const char *path)
{
    strbuf b = SB_INIT;
    guard_lexical(st->cwd ? st->cwd : j->x->cwd, j->x->home, path, &b);
    const char *r = sh_strndup(j->a, b.buf, b.len);
    sb_release(&b);
    return r;
}

static bool removes(enum sh_op op)
{
    return op == OP_DELETE || op == OP_MOVE || op == OP_RECURSE;
}

/* A literal path. */
static int path_check(struct sh_j *j, struct sh_cmd *c, const char *token, const char *abs,
                      enum sh_op op, const char *cmdname)
{
    const struct guard_ctx *x = j->x;
    switch (op) {
    case OP_NAME:
        return gi_check_name(x, token, abs, j->v);
    case OP_READ:
        return gi_check_read(x, token, abs, j->v);
    case OP_WRITE:
        return gi_check_write(x, token, abs, "a write to", false, j->v);
    case OP_MOVE:
        return gi_check_write(x, token, abs, "a move of", true, j->v);
    case OP_DELETE:
    case OP_RECURSE: {
        bool ws = op == OP_DELETE;
        const char *what = !strcmp(abs, "/")                      ? "/"
                           : x->home && !strcmp(abs, x->home)     ? "your home directory"
                           : x->home && gi_under(x->home, abs)    ? "a parent of your home"
                           : ws && !strcmp(abs, x->workspace)     ? "the workspace root"
                           : ws && gi_under(x->workspace, abs)    ? "a parent of the workspace"
                                                                  : NULL;
        (void)c;
        if (what) {
            strbuf t = SB_INIT;
            gi_clean(&t, token, 200);
            sh_deny_builtin(j, "%s %s was refused — it would remove %s", cmdname, t.buf, what);
            sb_release(&t);
            return 0;
        }
        return gi_check_write(x, token, abs, "a delete of", true, j->v);
    }
    }
    return 0;
}

/* The shell pattern of a glob word as a query (see pol_fs_may_deny): '*'
 * and "**" kept, '?' and bracket expressions as '?', a quoted * or ? as '?'.
 * esc: the same for glob(3), quoted bytes escaped. */
static void glob_forms(const struct sh_xw *w, strbuf *query, strbuf *esc)
{
    for (size_t i = 0; i < w->len; i++) {
        char ch = w->text[i];
        bool act = w->active[i];
        if (act && ch == '[') {
            size_t k = i + 1;
            if (k < w->len && (w->text[k] == '!' || w->text[k] == '^'))
                k++;
            if (k < w->len && w->text[k] == ']')
                k++;
            while (k < w->len && !(w->text[k] == ']' && w->active[k]))
                k++;
            if (k < w->len) {
                sb_addc(query, '?');
                sb_add(esc, w->text + i, k - i + 1);
                i = k;
                continue;
            }
        }
        if (act && (ch == '*' || ch == '?')) {
            sb_addc(query, ch);
            sb_addc(esc, ch);
            continue;
        }
        sb_addc(query, (ch == '*' || ch == '?') ? '?' : ch);
        if (strchr("*?[\\", ch))
            sb_addc(esc, '\\');
        sb_addc(esc, ch);
    }
}

/* Could the absolute query pattern q name the machine home, something in
 * it, or (removals) one of its parents? */
static bool glob_hits_home(const struct guard_ctx *x, const char *q, bool removal)
{
    const char *homes[2] = {x->ash, x->ash_real};
    for (int h = 0; h < 2; h++) {
        const char *ash = homes[h];
        if (!ash)
            continue;
        strbuf in = SB_INIT;
        sb_addf(&in, "%s/*", ash);
        bool hit = pol_glob_intersects(ash, strlen(ash), q, strlen(q)) ||
                   pol_glob_intersects(in.buf, in.len, q, strlen(q));
        sb_release(&in);
        for (size_t l = strlen(ash); removal && !hit && l > 1; l--)
            if (ash[l - 1] == '/' && l - 1 > 0)
                hit = pol_glob_intersects(ash, l - 1, q, strlen(q));
        if (hit)
            return true;
    }
    return false;
}

static int glob_operand(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, enum sh_op op,
                        const char *cmdname)
{
    const struct guard_ctx *x = j->x;
    strbuf q = SB_INIT, esc = SB_INIT, qa = SB_INIT, ea = SB_INIT;
    glob_forms(w, &q, &esc);
    guard_lexical(c->st->cwd, x->home, q.buf, &qa);
    guard_lexical(c->st->cwd, x->home, esc.buf, &ea);
    const char *show = sh_show(j, w);
    int ok = 1;
    /* 1. statically: a pattern that spells a denied name */
    const char *last = strrchr(qa.buf, '/');
    last = last ? last + 1 : qa.buf;
    bool literal_last = false;
    for (const char *p = last; *p; p++)
        literal_last |= *p != '*' && *p != '?';
    if (literal_last) {
        const char *qs[3];
        size_t nq = 0;
        qs[nq++] = qa.buf;
        size_t wl = strlen(x->workspace);
        if (!strncmp(qa.buf, x->workspace, wl) && qa.buf[wl] == '/')
            qs[nq++] = qa.buf + wl + 1;
        qs[nq++] = last;
        struct pol_decision d;
        if (!pol_fs_may_deny(x->rs, qs, nq, POL_MAY_DENY_NAMED, &d)) {
            strbuf rule = SB_INIT, fix = SB_INIT;
            gi_glob_rule(x, &d, &rule, &fix);
            sb_release(&fix);
            gi_deny(j->v, true,
                    "%s %s was refused — the pattern can match a denied name (%s) · the command "
                    "did not run · name the files you mean without a wildcard",
                    op == OP_NAME || op == OP_READ ? "a command naming" : "a write to", show,
                    rule.buf);
            sb_release(&rule);
            ok = 0;
            goto out;
        }
    }
    /* 2. writes: the machine home, the directory the matches are in */
    if (op != OP_NAME && op != OP_READ) {
        if (glob_hits_home(x, qa.buf, removes(op))) {
            gi_deny(j->v, true,
                    "a write to %s was refused — the pattern can match agentstack's machine "
                    "home %s (consent, policy and evidence); agents never write it · nothing was "
                    "written",
                    show, x->ash);
            ok = 0;
            goto out;
        }
        /* the literal directory before the first wildcard component */
        strbuf dir = SB_INIT;
        const char *p = qa.buf, *cut = qa.buf;
        for (const char *s = qa.buf; *s; s++) {
            if (*s == '/')
                cut = s;
            if (*s == '*' || *s == '?')
                break;
            p = s;
        }
        (void)p;
        sb_add(&dir, qa.buf, cut > qa.buf ? (size_t)(cut - qa.buf) : 1);
        const char *comp = cut + (cut[0] == '/');
        size_t cl = strcspn(comp, "/");
        bool match_all = true;
        for (size_t k = 0; k < cl; k++)
            match_all &= comp[k] == '*' || comp[k] == '?' || (k == 0 && comp[k] == '.');
        if ((op == OP_DELETE || op == OP_RECURSE) && match_all) {
            bool ws = op == OP_DELETE;
            const char *d = dir.buf;
            const char *what = !strcmp(d, "/")                   ? "/"
                               : x->home && gi_under(x->home, d) ? "your home directory"
                               : ws && gi_under(x->workspace, d) ? "the workspace root"
                                                                 : NULL;
            if (what) {
                sh_deny_builtin(j, "%s %s was refused — it would remove everything in %s",
                                cmdname, show, what);
                ok = 0;
            }
        }
        if (ok)
            ok = gi_check_write(x, show, dir.buf, removes(op) ? "a delete in" : "a write in",
                                false, j->v);
        sb_release(&dir);
        if (!ok)
            goto out;
    }
    /* 3. what the pattern matches now, file by file (dotfiles too) */
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(ea.buf, GLOB_PERIOD | GLOB_NOSORT, NULL, &g);
    if (rc == 0 && g.gl_pathc > SH_MAX_GLOB) {
        sh_unreadable(j, c, "%s matches more than %d files", show, SH_MAX_GLOB);
        ok = j->v->deny ? 0 : 1;
    } else if (rc == 0) {
        for (size_t i = 0; i < g.gl_pathc && ok; i++) {
            const char *b = sh_base(g.gl_pathv[i]);
            if (!strcmp(b, ".") || !strcmp(b, ".."))
                continue;
            strbuf lx = SB_INIT;
            guard_lexical("/", NULL, g.gl_pathv[i], &lx);
            ok = path_check(j, c, lx.buf, lx.buf, op, cmdname);
            sb_release(&lx);
        }
    }
    globfree(&g);
out:
    sb_release(&q);
    sb_release(&esc);
    sb_release(&qa);
    sb_release(&ea);
    return ok && !j->v->deny;
}

int sh_operand(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, enum sh_op op,
               const char *cmdname)
{
    if (j->v->deny)
        return 0;
    if (w->procsub)
        return 1; /* a pipe to or from a judged command */
    if (w->refuse) {
        sh_unreadable(j, c, "%s uses %s", sh_show(j, w), w->refuse);
        return !j->v->deny;
    }
    if (w->unres) {
        if (op == OP_NAME)
            return 1; /* judged by the unresolved-argument rule */
        sh_unreadable(j, c,
                      "the %s of %s depends on %s, which the guard cannot resolve",
                      op == OP_READ ? "file read" : "target", cmdname, w->unres);
        return !j->v->deny;
    }
    if (w->glob)
        return glob_operand(j, c, w, op, cmdname);
    if (!w->text[0])
        return 1;
    const char *abs = sh_abs(j, c->st, w->text);
    return path_check(j, c, w->text, abs, op, cmdname);
}

