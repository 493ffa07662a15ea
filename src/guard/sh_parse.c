/* sh parse — the grammar of the bash reader (sh.h): lists, && and ||,
 * pipelines, subshells, groups, if/while/until/for/case, [[ ]], (( )),
 * function definitions and their redirections, by recursive descent over
 * the tokens of sh_lex.c. A construct it does not know is an error. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "base/xalloc.h"
#include "guard/sh_lex.h"

/* ---- grammar ------------------------------------------------------------- */

static const char *const reserved_end[] = {"then", "else", "elif", "fi", "do",
                                           "done", "esac", "}",    NULL};

static bool at_list_end(struct P *P)
{
    struct tok *t = shp_peek(P);
    if (t->k == TK_EOF || t->k == TK_RPAREN || t->k == TK_DSEMI || t->k == TK_SEMIAMP ||
        t->k == TK_DSEMIAMP)
        return true;
    if (t->k != TK_WORD)
        return false;
    const char *p = shp_plain(&t->w);
    for (size_t i = 0; p && reserved_end[i]; i++)
        if (!strcmp(p, reserved_end[i]))
            return true;
    return false;
}

static struct sh_node *parse_list(struct P *P);
static struct sh_node *parse_command(struct P *P);

static struct sh_node *parse_pipeline(struct P *P)
{
    size_t start = shp_peek(P)->start;
    bool neg = false;
    while (shp_tok_is(P, "!")) {
        shp_take(P);
        neg = !neg;
    }
    if (shp_tok_is(P, "time")) {
        shp_take(P);
        if (shp_tok_is(P, "-p"))
            shp_take(P);
    }
    struct sh_node *left = parse_command(P);
    if (!left)
        return NULL;
    for (;;) {
        enum tk k = shp_peek(P)->k;
        if (k != TK_PIPE && k != TK_PIPEAMP)
            break;
        shp_take(P);
        shp_linebreak(P);
        struct sh_node *right = parse_command(P);
        if (!right)
            return NULL;
        struct sh_node *p = shp_node_new(P, SN_PIPE, start);
        p->a = left;
        p->b = right;
        p->pipe_err = k == TK_PIPEAMP;
        p->end = right->end;
        left = p;
    }
    if (neg) {
        struct sh_node *n = shp_node_new(P, SN_NOT, start);
        n->a = left;
        n->end = left->end;
        left = n;
    }
    return left;
}

static struct sh_node *parse_and_or(struct P *P)
{
    size_t start = shp_peek(P)->start;
    struct sh_node *left = parse_pipeline(P);
    while (left) {
        enum tk k = shp_peek(P)->k;
        if (k != TK_AND && k != TK_OR)
            break;
        shp_take(P);
        shp_linebreak(P);
        struct sh_node *right = parse_pipeline(P);
        if (!right)
            return NULL;
        struct sh_node *n = shp_node_new(P, k == TK_AND ? SN_AND : SN_OR, start);
        n->a = left;
        n->b = right;
        n->end = right->end;
        left = n;
    }
    return left;
}

/* A list up to a terminator (EOF, ')', ';;', a closing reserved word). An
 * empty list is a NULL node without an error. */
static struct sh_node *parse_list(struct P *P)
{
    if (P->nest >= SH_MAX_NEST) {
        shp_fail(P, shp_peek(P)->start, "commands nested too deeply");
        return NULL;
    }
    P->nest++;
    struct sh_node *acc = NULL;
    shp_linebreak(P);
    while (!P->err && !at_list_end(P)) {
        size_t start = shp_peek(P)->start;
        struct sh_node *n = parse_and_or(P);
        if (!n)
            break;
        enum tk k = shp_peek(P)->k;
        if (k == TK_AMP) {
            shp_take(P);
            struct sh_node *bg = shp_node_new(P, SN_BG, start);
            bg->a = n;
            bg->end = n->end;
            n = bg;
        } else if (k == TK_SEMI || k == TK_NL) {
            shp_take(P);
        } else if (!at_list_end(P)) {
            shp_fail(P, shp_peek(P)->start, "an unexpected token");
            break;
        }
        if (!acc) {
            acc = n;
        } else {
            struct sh_node *s = shp_node_new(P, SN_SEQ, acc->start);
            s->a = acc;
            s->b = n;
            s->end = n->end;
            acc = s;
        }
        shp_linebreak(P);
    }
    P->nest--;
    return P->err ? NULL : acc;
}

static bool expect_word(struct P *P, const char *kw)
{
    if (!shp_tok_is(P, kw)) {
        shp_fail(P, shp_peek(P)->start, kw);
        return false;
    }
    shp_take(P);
    return true;
}

/* An empty list where one is required is an error (bash agrees). */
static struct sh_node *need_list(struct P *P)
{
    size_t at = shp_peek(P)->start;
    struct sh_node *n = parse_list(P);
    if (!n && !P->err)
        shp_fail(P, at, "an empty command list");
    return n;
}

typedef VEC(struct sh_redir *) redirvec;

static bool parse_redir(struct P *P, struct tok *rt, redirvec *rv)
{
    struct sh_redir *r = sh_alloc(P->a, sizeof *r);
    r->kind = rt->rk;
    r->fd = rt->fd;
    r->named_fd = rt->named_fd;
    struct tok *t = shp_peek(P);
    if (t->k != TK_WORD)
        return shp_fail(P, t->start, "a redirection without a target");
    struct tok w = shp_take(P);
    r->target = w.w;
    if (rt->dup_out || rt->dup_in) {
        const char *p = shp_plain(&w.w);
        bool fdword = p && p[0];
        for (const char *q = p; fdword && *q; q++)
            fdword = isdigit((unsigned char)*q) || (*q == '-' && q[1] == '\0');
        if (!fdword)
            r->kind = rt->dup_out ? RK_ANDOUT : RK_IN;
    }
    vec_push(rv, r);
    if (rt->heredoc) {
        r->strip_tabs = rt->strip;
        /* the delimiter: the word's text with quoting removed */
        strbuf d = SB_INIT;
        bool quoted = w.w.has_quotes;
        for (size_t i = w.w.start; i < w.w.end; i++) {
            char c = P->s[i];
            if (c == '\'' || c == '"') {
                quoted = true;
                continue;
            }
            if (c == '\\' && i + 1 < w.w.end) {
                quoted = true;
                c = P->s[++i];
            }
            sb_addc(&d, c);
        }
        r->literal = quoted;
        if (P->npend >= MAX_PENDING) {
            sb_release(&d);
            return shp_fail(P, w.start, "too many heredocs on one line");
        }
        P->pend_delim[P->npend] = sh_strndup(P->a, d.buf, d.len);
        P->pend[P->npend++] = r;
        sb_release(&d);
    }
    return true;
}

static void store_redirs(struct P *P, struct sh_node *n, redirvec *rv)
{
    if (rv->n) {
        n->redirs = sh_alloc(P->a, rv->n * sizeof *rv->v);
        memcpy(n->redirs, rv->v, rv->n * sizeof *rv->v);
        n->nredirs = rv->n;
    }
    vec_free(rv);
}

static bool trailing_redirs(struct P *P, struct sh_node *n)
{
    redirvec rv = VEC_INIT;
    while (shp_peek(P)->k == TK_REDIR) {
        struct tok rt = shp_take(P);
        if (!parse_redir(P, &rt, &rv)) {
            vec_free(&rv);
            return false;
        }
        n->end = rv.v[rv.n - 1]->target.end;
    }
    store_redirs(P, n, &rv);
    return true;
}

static bool is_assignment_word(const struct sh_word *w)
{
    if (!w->nparts || w->parts[0].kind != SP_LIT || w->parts[0].quoted)
        return false;
    const char *t = w->parts[0].text;
    const char *eq = memchr(t, '=', w->parts[0].len);
    if (!eq)
        return false;
    size_t l = (size_t)(eq - t);
    if (l && t[l - 1] == '+')
        l--;
    return sh_is_name(t, l);
}

static struct sh_node *parse_simple(struct P *P)
{
    size_t start = shp_peek(P)->start;
    struct sh_node *n = shp_node_new(P, SN_SIMPLE, start);
    VEC(struct sh_word) wv = VEC_INIT;
    redirvec rv = VEC_INIT;
    size_t end = start;
    bool assigning = true;
    for (;;) {
        struct tok *t = shp_peek(P);
        if (t->k == TK_REDIR) {
            struct tok rt = shp_take(P);
            if (!parse_redir(P, &rt, &rv))
                goto bad;
            end = rv.v[rv.n - 1]->target.end;
        } else if (t->k == TK_WORD) {
            struct tok w = shp_take(P);
            if (assigning && is_assignment_word(&w.w))
                n->nassign++;
            else
                assigning = false;
            vec_push(&wv, w.w);
            end = w.end;
        } else {
            break;
        }
    }
    if (!wv.n && !rv.n) {
        shp_fail(P, start, "a missing command");
        goto bad;
    }
    n->end = end;
    if (wv.n) {
        n->words = sh_alloc(P->a, wv.n * sizeof *wv.v);
        memcpy(n->words, wv.v, wv.n * sizeof *wv.v);
        n->nwords = wv.n;
    }
    store_redirs(P, n, &rv);
    vec_free(&wv);
    return n;
bad:
    vec_free(&wv);
    vec_free(&rv);
    return NULL;
}

/* (( … )) at command position: the raw text, or 0 when it is not one. */
static size_t arith_cmd_end(struct P *P, size_t i)
{
    return shp_arith_end(P->s, P->n, i);
}

static struct sh_node *parse_arith_cmd(struct P *P, size_t start, size_t body, size_t e)
{
    struct sh_node *n = shp_node_new(P, SN_ARITH, start);
    n->text = sh_strndup(P->a, P->s + body, e - body);
    n->tlen = e - body;
    P->i = e + 2;
    P->have = false;
    n->end = P->i;
    return n;
}

static struct sh_node *parse_if(struct P *P, size_t start)
{
    struct sh_node *n = shp_node_new(P, SN_IF, start);
    VEC(struct sh_node *) cv = VEC_INIT, bv = VEC_INIT;
    shp_take(P); /* if */
    for (;;) {
        struct sh_node *c = need_list(P);
        if (!c || !expect_word(P, "then"))
            goto bad;
        struct sh_node *b = need_list(P);
        if (!b)
            goto bad;
        vec_push(&cv, c);
        vec_push(&bv, b);
        if (shp_tok_is(P, "elif")) {
            shp_take(P);
            continue;
        }
        if (shp_tok_is(P, "else")) {
            shp_take(P);
            n->els = need_list(P);
            if (!n->els)
                goto bad;
        }
        if (!expect_word(P, "fi"))
            goto bad;
        break;
    }
    n->nclauses = cv.n;
    n->conds = sh_alloc(P->a, cv.n * sizeof *cv.v);
    n->bodies = sh_alloc(P->a, bv.n * sizeof *bv.v);
    memcpy(n->conds, cv.v, cv.n * sizeof *cv.v);
    memcpy(n->bodies, bv.v, bv.n * sizeof *bv.v);
    vec_free(&cv);
    vec_free(&bv);
    n->end = P->t.end;
    return n;
bad:
    vec_free(&cv);
    vec_free(&bv);
    return NULL;
}

static struct sh_node *parse_do_done(struct P *P, struct sh_node *n)
{
    shp_linebreak(P);
    if (!expect_word(P, "do"))
        return NULL;
    n->b = need_list(P);
    if (!n->b || !expect_word(P, "done"))
        return NULL;
    n->end = P->t.end;
    return n;
}

static struct sh_node *parse_while(struct P *P, size_t start, bool until)
{
    struct sh_node *n = shp_node_new(P, until ? SN_UNTIL : SN_WHILE, start);
    shp_take(P);
    n->a = need_list(P);
    if (!n->a)
        return NULL;
    if (!shp_tok_is(P, "do")) {
        shp_fail(P, shp_peek(P)->start, "do");
        return NULL;
    }
    return parse_do_done(P, n);
}

static struct sh_node *parse_for(struct P *P, size_t start)
{
    struct sh_node *n = shp_node_new(P, SN_FOR, start);
    shp_take(P); /* for / select */
    /* for (( … )) */
    size_t i = P->have ? P->t.start : P->i;
    while (i < P->n && (P->s[i] == ' ' || P->s[i] == '\t'))
        i++;
    if (!P->have && i + 1 < P->n && P->s[i] == '(' && P->s[i + 1] == '(') {
        size_t e = arith_cmd_end(P, i + 2);
        if (!e) {
            shp_fail(P, i, "an unterminated for (( … ))");
            return NULL;
        }
        n->arith_for = true;
        n->text = sh_strndup(P->a, P->s + i + 2, e - i - 2);
        n->tlen = e - i - 2;
        P->i = e + 2;
        if (shp_peek(P)->k == TK_SEMI)
            shp_take(P);
        return parse_do_done(P, n);
    }
    struct tok *t = shp_peek(P);
    const char *name = t->k == TK_WORD ? shp_plain(&t->w) : NULL;
    if (!name || !sh_is_name(name, strlen(name))) {
        shp_fail(P, t->start, "a for loop without a variable name");
        return NULL;
    }
    n->var = name;
    shp_take(P);
    shp_linebreak(P);
    if (shp_tok_is(P, "in")) {
        shp_take(P);
        n->has_in = true;
        VEC(struct sh_word) wv = VEC_INIT;
        while (shp_peek(P)->k == TK_WORD) {
            struct tok w = shp_take(P);
            vec_push(&wv, w.w);
        }
        if (wv.n) {
            n->list = sh_alloc(P->a, wv.n * sizeof *wv.v);
            memcpy(n->list, wv.v, wv.n * sizeof *wv.v);
            n->nlist = wv.n;
        }
        vec_free(&wv);
        enum tk k = shp_peek(P)->k;
        if (k != TK_SEMI && k != TK_NL) {
            shp_fail(P, shp_peek(P)->start, "a for loop's word list must end with ; or a newline");
            return NULL;
        }
        shp_take(P);
    } else if (shp_peek(P)->k == TK_SEMI) {
        shp_take(P);
    }
    return parse_do_done(P, n);
}

static struct sh_node *parse_case(struct P *P, size_t start)
{
    struct sh_node *n = shp_node_new(P, SN_CASE, start);
    shp_take(P); /* case */
    struct tok *t = shp_peek(P);
    if (t->k != TK_WORD) {
        shp_fail(P, t->start, "a case without a word");
        return NULL;
    }
    n->subject = shp_take(P).w;
    shp_linebreak(P);
    if (!expect_word(P, "in"))
        return NULL;
    VEC(struct sh_case_arm) av = VEC_INIT;
    shp_linebreak(P);
    while (!shp_tok_is(P, "esac")) {
        if (shp_peek(P)->k == TK_EOF) {
            shp_fail(P, shp_peek(P)->start, "esac");
            goto bad;
        }
        if (shp_peek(P)->k == TK_LPAREN)
            shp_take(P);
        VEC(struct sh_word) pv = VEC_INIT;
        for (;;) {
            struct tok *pt = shp_peek(P);
            if (pt->k != TK_WORD) {
                vec_free(&pv);
                shp_fail(P, pt->start, "a case pattern");
                goto bad;
            }
            struct tok w = shp_take(P);
            vec_push(&pv, w.w);
            if (shp_peek(P)->k == TK_PIPE) {
                shp_take(P);
                continue;
            }
            break;
        }
        if (shp_peek(P)->k != TK_RPAREN) {
            vec_free(&pv);
            shp_fail(P, shp_peek(P)->start, "a ')' after a case pattern");
            goto bad;
        }
        shp_take(P);
        struct sh_case_arm arm = {0};
        arm.npats = pv.n;
        arm.pats = sh_alloc(P->a, pv.n * sizeof *pv.v);
        memcpy(arm.pats, pv.v, pv.n * sizeof *pv.v);
        vec_free(&pv);
        arm.body = parse_list(P);
        if (P->err)
            goto bad;
        vec_push(&av, arm);
        enum tk k = shp_peek(P)->k;
        if (k == TK_DSEMI || k == TK_SEMIAMP || k == TK_DSEMIAMP)
            shp_take(P);
        else if (!shp_tok_is(P, "esac")) {
            shp_fail(P, shp_peek(P)->start, ";;");
            goto bad;
        }
        shp_linebreak(P);
    }
    shp_take(P); /* esac */
    n->narms = av.n;
    n->arms = av.n ? sh_alloc(P->a, av.n * sizeof *av.v) : NULL;
    if (av.n)
        memcpy(n->arms, av.v, av.n * sizeof *av.v);
    vec_free(&av);
    n->end = P->t.end;
    return n;
bad:
    vec_free(&av);
    return NULL;
}

/* [[ … ]]: words until ]], with the conditional's own operators as words. */
static struct sh_node *parse_cond(struct P *P, size_t start)
{
    struct sh_node *n = shp_node_new(P, SN_COND, start);
    P->i = P->t.end;
    P->have = false;
    VEC(struct sh_word) wv = VEC_INIT;
    bool regex = false;
    for (;;) {
        while (P->i < P->n && (P->s[P->i] == ' ' || P->s[P->i] == '\t' || P->s[P->i] == '\n'))
            P->i++;
        if (P->i >= P->n) {
            vec_free(&wv);
            shp_fail(P, start, "an unterminated [[ … ]]");
            return NULL;
        }
        const char *p = P->s + P->i;
        size_t left = P->n - P->i;
        if (left >= 2 && p[0] == ']' && p[1] == ']' && (left == 2 || shp_is_meta(p[2]))) {
            P->i += 2;
            break;
        }
        struct parts ps = {0};
        struct sh_word w;
        size_t st = P->i;
        size_t opl = (left >= 2 && (!memcmp(p, "&&", 2) || !memcmp(p, "||", 2))) ? 2
                     : strchr("()!<>", p[0])                                     ? 1
                                                                                 : 0;
        bool ok = true;
        if (opl && !regex) {
            for (size_t k = 0; k < opl; k++)
                shp_add_lit(P, &ps, p[k], false);
            P->i += opl;
        } else {
            ok = shp_lex_parts(P, &ps, regex ? WM_REGEX : WM_NORMAL, false);
            if (ok && P->i == st) {
                shp_fail(P, st, "an operator inside [[ … ]]");
                ok = false;
            }
        }
        shp_finish_word(P, &ps, &w, st);
        if (!ok) {
            vec_free(&wv);
            return NULL;
        }
        const char *pw = shp_plain(&w);
        regex = pw && !strcmp(pw, "=~");
        vec_push(&wv, w);
    }
    n->ncwords = wv.n;
    n->cwords = wv.n ? sh_alloc(P->a, wv.n * sizeof *wv.v) : NULL;
    if (wv.n)
        memcpy(n->cwords, wv.v, wv.n * sizeof *wv.v);
    vec_free(&wv);
    n->end = P->i;
    return n;
}

static struct sh_node *parse_compound_body(struct P *P)
{
    /* a function body: any compound command */
    return parse_command(P);
}

static struct sh_node *parse_command(struct P *P)
{
    if (P->nest >= SH_MAX_NEST) {
        shp_fail(P, shp_peek(P)->start, "commands nested too deeply");
        return NULL;
    }
    struct tok *t = shp_peek(P);
    size_t start = t->start;
    struct sh_node *n = NULL;
    P->nest++;
    if (t->k == TK_LPAREN) {
        /* (( arithmetic )) or ( subshell ) */
        size_t after = t->end;
        if (after < P->n && P->s[after] == '(') {
            size_t e = arith_cmd_end(P, after + 1);
            if (e) {
                n = parse_arith_cmd(P, start, after + 1, e);
                goto redirs;
            }
        }
        shp_take(P);
        struct sh_node *body = need_list(P);
        if (!body || shp_peek(P)->k != TK_RPAREN) {
            if (body)
                shp_fail(P, shp_peek(P)->start, "a missing ')'");
            goto out;
        }
        shp_take(P);
        n = shp_node_new(P, SN_SUBSHELL, start);
        n->a = body;
        n->end = P->t.end;
        goto redirs;
    }
    if (t->k == TK_WORD) {
        const char *p = shp_plain(&t->w);
        if (p && !strcmp(p, "{")) {
            shp_take(P);
            struct sh_node *body = need_list(P);
            if (!body || !expect_word(P, "}"))
                goto out;
            n = shp_node_new(P, SN_GROUP, start);
            n->a = body;
            n->end = P->t.end;
            goto redirs;
        }
        if (p && !strcmp(p, "if")) {
            n = parse_if(P, start);
            goto redirs;
        }
        if (p && (!strcmp(p, "while") || !strcmp(p, "until"))) {
            n = parse_while(P, start, p[0] == 'u');
            goto redirs;
        }
        if (p && (!strcmp(p, "for") || !strcmp(p, "select"))) {
            n = parse_for(P, start);
            goto redirs;
        }
        if (p && !strcmp(p, "case")) {
            n = parse_case(P, start);
            goto redirs;
        }
        if (p && !strcmp(p, "[[")) {
            n = parse_cond(P, start);
            goto redirs;
        }
        if (p && !strcmp(p, "function")) {
            shp_take(P);
            struct tok *nt = shp_peek(P);
            const char *fname = nt->k == TK_WORD ? shp_plain(&nt->w) : NULL;
            if (!fname) {
                shp_fail(P, nt->start, "a function without a name");
                goto out;
            }
            shp_take(P);
            if (shp_peek(P)->k == TK_LPAREN) {
                shp_take(P);
                if (shp_peek(P)->k != TK_RPAREN) {
                    shp_fail(P, shp_peek(P)->start, "a ')' after a function name");
                    goto out;
                }
                shp_take(P);
            }
            shp_linebreak(P);
            n = shp_node_new(P, SN_FUNC, start);
            n->fname = fname;
            n->a = parse_compound_body(P);
            if (!n->a) {
                n = NULL;
                goto out;
            }
            n->end = n->a->end;
            goto out;
        }
        if (p && !strcmp(p, "coproc")) {
            shp_take(P);
            n = shp_node_new(P, SN_COPROC, start);
            n->a = parse_command(P);
            if (!n->a) {
                n = NULL;
                goto out;
            }
            n->end = n->a->end;
            goto out;
        }
        const char *const stray[] = {"then", "else", "elif", "fi", "do",
                                     "done", "esac", "in",   "}",  NULL};
        for (size_t k = 0; p && stray[k]; k++)
            if (!strcmp(p, stray[k])) {
                shp_fail(P, start, "a reserved word out of place");
                goto out;
            }
    }
    n = parse_simple(P);
    if (n && n->nwords == 1 && !n->nredirs && shp_peek(P)->k == TK_LPAREN) {
        /* name ( ) compound: a function definition */
        const char *fname = shp_plain(&n->words[0]);
        shp_take(P);
        if (!fname || shp_peek(P)->k != TK_RPAREN) {
            shp_fail(P, start, "a '(' after a word");
            n = NULL;
            goto out;
        }
        shp_take(P);
        shp_linebreak(P);
        struct sh_node *f = shp_node_new(P, SN_FUNC, start);
        f->fname = fname;
        f->a = parse_compound_body(P);
        n = f->a ? f : NULL;
        if (n)
            n->end = n->a->end;
        goto out;
    }
    goto out;
redirs:
    if (n && !trailing_redirs(P, n))
        n = NULL;
out:
    P->nest--;
    if (!n && !P->err)
        shp_fail(P, start, "an unreadable command");
    return P->err ? NULL : n;
}

/* $( … ) and <( … ) bodies in the same buffer: parse to the matching ')'. */
struct sh_node *shp_parse_sub(struct P *P, size_t *end)
{
    size_t open = P->i;
    if (P->nest >= SH_MAX_NEST) {
        shp_fail(P, open, "commands nested too deeply");
        return NULL;
    }
    bool had = P->have;
    struct tok saved = P->t;
    P->have = false;
    size_t npend = P->npend;
    P->nest++;
    struct sh_node *body = parse_list(P);
    P->nest--;
    if (P->err)
        return NULL;
    if (shp_peek(P)->k != TK_RPAREN) {
        shp_fail(P, open, "an unterminated $( … )");
        return NULL;
    }
    *end = P->t.start;
    P->have = false; /* the ')' */
    P->i = P->t.end;
    P->have = had;
    P->t = saved;
    (void)npend;
    if (!body) {
        /* $( ) is empty output */
        body = shp_node_new(P, SN_GROUP, open);
        body->end = open;
    }
    return body;
}

/* A separate buffer (a `…` body); errors are reported at offset at. */
struct sh_node *shp_parse_text(struct P *P, const char *src, size_t n, size_t at)
{
    struct P sub = {.a = P->a, .s = src, .n = n, .nest = P->nest};
    struct sh_node *t = parse_list(&sub);
    if (!sub.err && shp_peek(&sub)->k != TK_EOF)
        shp_fail(&sub, sub.t.start, "an unexpected token");
    if (!sub.err && sub.npend)
        shp_read_heredocs(&sub);
    if (sub.err) {
        shp_fail(P, at, sub.err);
        return NULL;
    }
    if (!t) {
        t = shp_node_new(&sub, SN_GROUP, 0);
    }
    return t;
}

struct sh_node *sh_parse(struct sh_arena *a, const char *src, size_t n, const char **err,
                         size_t *err_off)
{
    struct P P = {.a = a, .s = src, .n = n};
    struct sh_node *t = parse_list(&P);
    if (!P.err && shp_peek(&P)->k != TK_EOF)
        shp_fail(&P, P.t.start, "an unexpected token");
    if (!P.err && P.npend)
        shp_read_heredocs(&P); /* a heredoc at the very end: its body is empty */
    if (P.err) {
        *err = P.err;
        *err_off = P.err_off;
        return NULL;
    }
    if (!t) {
        t = shp_node_new(&P, SN_GROUP, 0); /* an empty command: nothing runs */
        t->end = 0;
    }
    return t;
}
