/* sh lex — the tokenizer of the bash reader (sh.h): words with their parts
 * (quotes, $'…', ${…}, $(…), `…`, $((…)), arrays), operators,
 * redirections with their fds, heredoc bodies at the next newline. A
 * construct it does not know is an error (the guard denies), never a
 * guess. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/vec.h"
#include "base/xalloc.h"
#include "guard/sh_lex.h"

/* ---- arena --------------------------------------------------------------- */

struct sh_chunk {
    struct sh_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *sh_alloc(struct sh_arena *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    struct sh_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        c = xmalloc(sizeof *c + cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *sh_strndup(struct sh_arena *a, const char *s, size_t n)
{
    char *p = sh_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void sh_arena_free(struct sh_arena *a)
{
    while (a->head) {
        struct sh_chunk *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}

bool sh_is_name(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

/* ---- parser state -------------------------------------------------------- */

bool shp_fail(struct P *P, size_t at, const char *why)
{
    if (!P->err) {
        P->err = why;
        P->err_off = at;
    }
    return false;
}

/* ---- part lists ---------------------------------------------------------- */

void shp_flush_lit(struct P *P, struct parts *ps)
{
    if (!ps->lit.len)
        return;
    ps->v = xgrow(ps->v, &ps->cap, ps->n + 1, sizeof *ps->v);
    struct sh_part *p = &ps->v[ps->n++];
    memset(p, 0, sizeof *p);
    p->kind = SP_LIT;
    p->quoted = ps->lit_q;
    p->text = sh_strndup(P->a, ps->lit.buf, ps->lit.len);
    p->len = ps->lit.len;
    sb_reset(&ps->lit);
}

void shp_add_lit(struct P *P, struct parts *ps, char c, bool quoted)
{
    if (ps->lit.len && ps->lit_q != quoted)
        shp_flush_lit(P, ps);
    ps->lit_q = quoted;
    sb_addc(&ps->lit, c);
}

struct sh_part *shp_add_part(struct P *P, struct parts *ps, enum sh_part_kind k, bool quoted)
{
    shp_flush_lit(P, ps);
    ps->v = xgrow(ps->v, &ps->cap, ps->n + 1, sizeof *ps->v);
    struct sh_part *p = &ps->v[ps->n++];
    memset(p, 0, sizeof *p);
    p->kind = k;
    p->quoted = quoted;
    return p;
}

void shp_finish_word(struct P *P, struct parts *ps, struct sh_word *w, size_t start)
{
    shp_flush_lit(P, ps);
    w->nparts = ps->n;
    w->parts = ps->n ? sh_alloc(P->a, ps->n * sizeof *ps->v) : NULL;
    if (ps->n)
        memcpy(w->parts, ps->v, ps->n * sizeof *ps->v);
    w->start = start;
    w->end = P->i;
    w->has_quotes = ps->has_quotes;
    free(ps->v);
    sb_release(&ps->lit);
    memset(ps, 0, sizeof *ps);
}

/* ---- lexing words -------------------------------------------------------- */

bool shp_is_meta(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' ||
           c == ')' || c == '<' || c == '>';
}

/* Skips a '…' / "…" / `…` / nested (…) span inside raw text (arithmetic,
 * unsupported ${…}): returns the index after it, or n. */
static size_t skip_quoted(const char *s, size_t n, size_t i)
{
    char q = s[i++];
    while (i < n && s[i] != q)
        i += (q != '\'' && s[i] == '\\') ? 2 : 1;
    return i < n ? i + 1 : n;
}

/* $'…': the raw text up to the closing quote (backslash escapes skipped). */
static bool lex_ansic(struct P *P, struct parts *ps)
{
    size_t a = P->i;
    while (P->i < P->n && P->s[P->i] != '\'')
        P->i += P->s[P->i] == '\\' ? 2 : 1;
    if (P->i >= P->n)
        return shp_fail(P, a, "an unterminated $'…' string");
    struct sh_part *p = shp_add_part(P, ps, SP_ANSIC, false);
    p->text = sh_strndup(P->a, P->s + a, P->i - a);
    p->len = P->i - a;
    P->i++;
    ps->has_quotes = true;
    return true;
}

/* $((…)) starting after "$((": the index of the closing "))", or 0. */
size_t shp_arith_end(const char *s, size_t n, size_t i)
{
    int depth = 0;
    while (i < n) {
        char c = s[i];
        if (c == '\'' || c == '"' || c == '`') {
            i = skip_quoted(s, n, i);
            continue;
        }
        if (c == '\\') {
            i += 2;
            continue;
        }
        if (c == '(')
            depth++;
        else if (c == ')') {
            if (depth == 0)
                return i + 1 < n && s[i + 1] == ')' ? i : 0;
            depth--;
        }
        i++;
    }
    return 0;
}

/* Skips an unsupported ${…} to its closing brace. */
static bool skip_braces(struct P *P, size_t open)
{
    int depth = 1;
    while (P->i < P->n) {
        char c = P->s[P->i];
        if (c == '\'' || c == '"' || c == '`') {
            P->i = skip_quoted(P->s, P->n, P->i);
            continue;
        }
        if (c == '\\') {
            P->i += 2;
            continue;
        }
        if (c == '{')
            depth++;
        else if (c == '}' && --depth == 0) {
            P->i++;
            return true;
        }
        P->i++;
    }
    return shp_fail(P, open, "an unterminated ${…}");
}

static struct sh_word *param_word(struct P *P, bool stop_slash)
{
    struct parts ws = {0};
    size_t start = P->i;
    struct sh_word *w = sh_alloc(P->a, sizeof *w);
    bool ok = shp_lex_parts(P, &ws, WM_PARAM, stop_slash);
    shp_finish_word(P, &ws, w, start);
    return ok ? w : NULL;
}

/* ${…} after "${". */
static bool lex_brace_param(struct P *P, struct parts *ps, bool quoted, size_t open)
{
    struct sh_part *p = shp_add_part(P, ps, SP_PARAM, quoted);
    const char *s = P->s;
    size_t n = P->n;
    if (P->i < n && s[P->i] == '#' && P->i + 1 < n && s[P->i + 1] != '}') {
        p->op = PO_LENGTH;
        P->i++;
    } else if (P->i < n && s[P->i] == '!') {
        p->op = PO_UNSUPPORTED;
        p->why = "an indirect expansion ${!…}";
        p->text = "!";
        p->len = 1;
        return skip_braces(P, open);
    }
    size_t a = P->i;
    if (P->i < n && (isalpha((unsigned char)s[P->i]) || s[P->i] == '_')) {
        while (P->i < n && (isalnum((unsigned char)s[P->i]) || s[P->i] == '_'))
            P->i++;
    } else if (P->i < n && isdigit((unsigned char)s[P->i])) {
        while (P->i < n && isdigit((unsigned char)s[P->i]))
            P->i++;
    } else if (P->i < n && strchr("@*#?-$!0", s[P->i])) {
        P->i++;
    } else {
        return shp_fail(P, open, "a ${…} without a parameter name");
    }
    p->text = sh_strndup(P->a, s + a, P->i - a);
    p->len = P->i - a;
    if (P->i >= n)
        return shp_fail(P, open, "an unterminated ${…}");
    char c = s[P->i];
    if (c == '}') {
        P->i++;
        return true;
    }
    if (p->op == PO_LENGTH) {
        p->op = PO_UNSUPPORTED;
        p->why = "a ${#…} form the guard does not evaluate";
        return skip_braces(P, open);
    }
    if (c == '[') {
        p->op = PO_UNSUPPORTED;
        p->why = "an array subscript ${x[…]}";
        return skip_braces(P, open);
    }
    if (c == '@') {
        p->op = PO_UNSUPPORTED;
        p->why = "a transformation ${x@…}";
        return skip_braces(P, open);
    }
    if (c == ':') {
        if (P->i + 1 < n && strchr("-=+?", s[P->i + 1])) {
            p->colon = true;
            P->i++;
            c = s[P->i];
        } else {
            p->op = PO_UNSUPPORTED;
            p->why = "a substring ${x:offset}";
            return skip_braces(P, open);
        }
    }
    bool slash = false;
    switch (c) {
    case '-':
        p->op = PO_DEFAULT;
        break;
    case '=':
        p->op = PO_ASSIGN;
        break;
    case '+':
        p->op = PO_ALT;
        break;
    case '?':
        p->op = PO_ERROR;
        break;
    case '#':
    case '%':
        p->op = PO_TRIM;
        if (P->i + 1 < n && s[P->i + 1] == c)
            P->i++;
        break;
    case '/':
        p->op = PO_SUBST;
        slash = true;
        if (P->i + 1 < n && strchr("/#%", s[P->i + 1]))
            P->i++;
        break;
    case '^':
    case ',':
        p->op = PO_CASE;
        if (P->i + 1 < n && s[P->i + 1] == c)
            P->i++;
        break;
    default:
        p->op = PO_UNSUPPORTED;
        p->why = "a ${…} form the guard does not evaluate";
        return skip_braces(P, open);
    }
    P->i++;
    p->opword = param_word(P, slash);
    if (!p->opword)
        return false;
    if (slash && P->i < n && s[P->i] == '/') {
        P->i++;
        p->opword2 = param_word(P, false);
        if (!p->opword2)
            return false;
    }
    if (P->i >= n || s[P->i] != '}')
        return shp_fail(P, open, "an unterminated ${…}");
    P->i++;
    return true;
}

/* `…` after the opening backquote: the body unescaped into its own buffer. */
static bool lex_backtick(struct P *P, struct parts *ps, bool quoted)
{
    size_t a = P->i;
    strbuf b = SB_INIT;
    while (P->i < P->n && P->s[P->i] != '`') {
        char c = P->s[P->i];
        if (c == '\\' && P->i + 1 < P->n) {
            char d = P->s[P->i + 1];
            if (d == '$' || d == '`' || d == '\\' || (quoted && d == '"')) {
                sb_addc(&b, d);
                P->i += 2;
                continue;
            }
        }
        sb_addc(&b, c);
        P->i++;
    }
    if (P->i >= P->n) {
        sb_release(&b);
        return shp_fail(P, a, "an unterminated `…` command substitution");
    }
    P->i++;
    struct sh_part *p = shp_add_part(P, ps, SP_CMDSUB, quoted);
    char *body = sh_strndup(P->a, b.buf, b.len);
    size_t blen = b.len;
    sb_release(&b);
    if (P->nest >= SH_MAX_NEST)
        return shp_fail(P, a, "commands nested too deeply");
    P->nest++;
    p->body = shp_parse_text(P, body, blen, a);
    P->nest--;
    p->body_src = body;
    p->body_start = 0;
    p->body_end = blen;
    return p->body != NULL;
}

static bool lex_dollar(struct P *P, struct parts *ps, bool quoted)
{
    const char *s = P->s;
    size_t n = P->n, at = P->i;
    P->i++; /* '$' */
    if (P->i >= n) {
        shp_add_lit(P, ps, '$', quoted);
        return true;
    }
    char c = s[P->i];
    if (c == '\'' && !quoted) {
        P->i++;
        return lex_ansic(P, ps);
    }
    if (c == '"' && !quoted) {
        /* $"…": a translated string; in the C locale it is "…" */
        P->i++;
        ps->has_quotes = true;
        if (!shp_lex_parts(P, ps, WM_DQ, false))
            return false;
        if (P->i >= n)
            return shp_fail(P, at, "an unterminated $\"…\" string");
        P->i++;
        return true;
    }
    if (c == '(' && P->i + 1 < n && s[P->i + 1] == '(') {
        size_t e = shp_arith_end(s, n, P->i + 2);
        if (e) {
            struct sh_part *p = shp_add_part(P, ps, SP_ARITH, quoted);
            p->text = sh_strndup(P->a, s + P->i + 2, e - P->i - 2);
            p->len = e - P->i - 2;
            P->i = e + 2;
            return true;
        }
    }
    if (c == '(') {
        P->i++;
        struct sh_part *p = shp_add_part(P, ps, SP_CMDSUB, quoted);
        size_t body_start = P->i, end;
        p->body = shp_parse_sub(P, &end);
        if (!p->body)
            return false;
        p->body_src = P->s;
        p->body_start = body_start;
        p->body_end = end;
        return true;
    }
    if (c == '{') {
        P->i++;
        return lex_brace_param(P, ps, quoted, at);
    }
    if (isalpha((unsigned char)c) || c == '_') {
        size_t a = P->i;
        while (P->i < n && (isalnum((unsigned char)s[P->i]) || s[P->i] == '_'))
            P->i++;
        struct sh_part *p = shp_add_part(P, ps, SP_PARAM, quoted);
        p->text = sh_strndup(P->a, s + a, P->i - a);
        p->len = P->i - a;
        return true;
    }
    if (isdigit((unsigned char)c) || strchr("@*#?-$!", c)) {
        struct sh_part *p = shp_add_part(P, ps, SP_PARAM, quoted);
        p->text = sh_strndup(P->a, s + P->i, 1);
        p->len = 1;
        P->i++;
        return true;
    }
    shp_add_lit(P, ps, '$', quoted);
    return true;
}

/* name=( … ): the elements as words. */
static bool lex_array(struct P *P, struct parts *ps)
{
    size_t open = P->i;
    P->i++; /* '(' */
    VEC(struct sh_word) el = VEC_INIT;
    for (;;) {
        while (P->i < P->n && (P->s[P->i] == ' ' || P->s[P->i] == '\t' || P->s[P->i] == '\n'))
            P->i++;
        if (P->i >= P->n) {
            vec_free(&el);
            return shp_fail(P, open, "an unterminated array assignment (…)");
        }
        if (P->s[P->i] == ')') {
            P->i++;
            break;
        }
        if (shp_is_meta(P->s[P->i])) {
            vec_free(&el);
            return shp_fail(P, P->i, "an operator inside an array assignment");
        }
        struct parts ws = {0};
        struct sh_word w;
        size_t st = P->i;
        bool ok = shp_lex_parts(P, &ws, WM_NORMAL, false);
        shp_finish_word(P, &ws, &w, st);
        if (!ok) {
            vec_free(&el);
            return false;
        }
        vec_push(&el, w);
    }
    struct sh_part *p = shp_add_part(P, ps, SP_ARRAY, false);
    p->nelems = el.n;
    p->elems = el.n ? sh_alloc(P->a, el.n * sizeof *el.v) : NULL;
    if (el.n)
        memcpy(p->elems, el.v, el.n * sizeof *el.v);
    vec_free(&el);
    return true;
}

/* True when the parts so far are an unquoted NAME= or NAME+= at word start. */
static bool assignment_head(const struct parts *ps)
{
    if (ps->n != 0 || ps->lit_q || ps->lit.len < 2)
        return false;
    const char *t = ps->lit.buf;
    size_t l = ps->lit.len;
    if (t[l - 1] != '=')
        return false;
    l--;
    if (l && t[l - 1] == '+')
        l--;
    return sh_is_name(t, l);
}

bool shp_lex_parts(struct P *P, struct parts *ps, enum wmode m, bool stop_slash)
{
    const char *s = P->s;
    while (P->i < P->n) {
        char c = s[P->i];
        if (m == WM_NORMAL && shp_is_meta(c)) {
            if (c == '(' && assignment_head(ps)) {
                if (!lex_array(P, ps))
                    return false;
                continue;
            }
            return true;
        }
        if (m == WM_REGEX && (c == ' ' || c == '\t' || c == '\n'))
            return true;
        if (m == WM_DQ && c == '"')
            return true;
        if (m == WM_PARAM && (c == '}' || (stop_slash && c == '/')))
            return true;
        bool inq = m == WM_DQ || m == WM_HEREDOC;
        if (c == '\\') {
            if (P->i + 1 >= P->n) {
                shp_add_lit(P, ps, '\\', inq);
                P->i++;
                continue;
            }
            char d = s[P->i + 1];
            if (d == '\n') {
                P->i += 2;
                continue;
            }
            if (inq && !strchr(m == WM_DQ ? "$`\"\\" : "$`\\", d)) {
                shp_add_lit(P, ps, '\\', true);
                P->i++;
                continue;
            }
            shp_add_lit(P, ps, d, true);
            ps->has_quotes = true;
            P->i += 2;
            continue;
        }
        if (c == '$') {
            if (!lex_dollar(P, ps, inq))
                return false;
            continue;
        }
        if (c == '`') {
            P->i++;
            if (!lex_backtick(P, ps, inq))
                return false;
            continue;
        }
        if (!inq && c == '\'') {
            size_t a = ++P->i;
            const char *q = memchr(s + a, '\'', P->n - a);
            if (!q)
                return shp_fail(P, a - 1, "an unterminated '…' string");
            size_t e = (size_t)(q - s);
            if (e == a) {
                /* '' still makes a word */
                shp_flush_lit(P, ps);
                ps->lit_q = true;
            }
            for (size_t k = a; k < e; k++)
                shp_add_lit(P, ps, s[k], true);
            ps->has_quotes = true;
            P->i = e + 1;
            continue;
        }
        if (!inq && c == '"') {
            size_t a = P->i++;
            ps->has_quotes = true;
            if (!shp_lex_parts(P, ps, WM_DQ, false))
                return false;
            if (P->i >= P->n)
                return shp_fail(P, a, "an unterminated \"…\" string");
            P->i++;
            continue;
        }
        shp_add_lit(P, ps, c, inq);
        P->i++;
    }
    if (m == WM_DQ || m == WM_PARAM)
        return true; /* the caller reports the missing terminator */
    return true;
}

/* ---- tokens -------------------------------------------------------------- */

/* Reads the bodies of the pending heredocs; P->i is at a line start. */
void shp_read_heredocs(struct P *P)
{
    for (size_t h = 0; h < P->npend; h++) {
        struct sh_redir *r = P->pend[h];
        const char *d = P->pend_delim[h];
        size_t dl = strlen(d), body = P->i, body_end = P->n;
        while (P->i < P->n) {
            size_t ls = P->i;
            const char *nl = memchr(P->s + ls, '\n', P->n - ls);
            size_t le = nl ? (size_t)(nl - P->s) : P->n;
            size_t a = ls;
            while (r->strip_tabs && a < le && P->s[a] == '\t')
                a++;
            P->i = nl ? le + 1 : P->n;
            if (le - a == dl && memcmp(P->s + a, d, dl) == 0) {
                body_end = ls;
                break;
            }
        }
        if (P->i >= P->n && body_end == P->n)
            body_end = P->n;
        r->body = P->s + body;
        r->body_len = body_end - body;
        if (!r->literal) {
            /* the body's own expansions: lex it like "…" without the quote */
            struct P sub = *P;
            sub.i = body;
            sub.n = body_end;
            sub.have = false;
            sub.npend = 0;
            struct parts ps = {0};
            struct sh_word *w = sh_alloc(P->a, sizeof *w);
            bool ok = shp_lex_parts(&sub, &ps, WM_HEREDOC, false);
            shp_finish_word(&sub, &ps, w, body);
            if (!ok)
                shp_fail(P, sub.err_off, sub.err);
            r->body_word = w;
        }
    }
    P->npend = 0;
}

static bool lex_word_tok(struct P *P, struct tok *t)
{
    struct parts ps = {0};
    size_t st = P->i;
    bool ok = shp_lex_parts(P, &ps, WM_NORMAL, false);
    shp_finish_word(P, &ps, &t->w, st);
    t->k = TK_WORD;
    return ok;
}

static bool lex_token(struct P *P, struct tok *t)
{
    const char *s = P->s;
    memset(t, 0, sizeof *t);
    t->fd = -1;
    for (;;) {
        while (P->i < P->n && (s[P->i] == ' ' || s[P->i] == '\t' || s[P->i] == '\r'))
            P->i++;
        if (P->i + 1 < P->n && s[P->i] == '\\' && s[P->i + 1] == '\n') {
            P->i += 2;
            continue;
        }
        if (P->i < P->n && s[P->i] == '#') {
            while (P->i < P->n && s[P->i] != '\n')
                P->i++;
            continue;
        }
        break;
    }
    t->start = P->i;
    if (P->i >= P->n) {
        t->k = TK_EOF;
        t->end = P->i;
        return true;
    }
    size_t left = P->n - P->i;
    const char *p = s + P->i;
    char c = p[0];
#define OP(str, kind)                                                                              \
    if (left >= sizeof(str) - 1 && !memcmp(p, str, sizeof(str) - 1)) {                             \
        P->i += sizeof(str) - 1;                                                                   \
        t->k = kind;                                                                               \
        t->end = P->i;                                                                             \
        return true;                                                                               \
    }
    if (c == '\n') {
        P->i++;
        t->k = TK_NL;
        t->end = P->i;
        shp_read_heredocs(P);
        return P->err == NULL;
    }
    /* process substitution starts a word */
    if ((c == '<' || c == '>') && left >= 2 && p[1] == '(') {
        struct parts ps = {0};
        size_t st = P->i;
        P->i += 2;
        struct sh_part *pp = shp_add_part(P, &ps, SP_PROCSUB, false);
        pp->out = c == '>';
        size_t bs = P->i, end;
        pp->body = shp_parse_sub(P, &end);
        if (!pp->body) {
            shp_finish_word(P, &ps, &t->w, st);
            return false;
        }
        pp->body_src = P->s;
        pp->body_start = bs;
        pp->body_end = end;
        shp_finish_word(P, &ps, &t->w, st);
        t->k = TK_WORD;
        t->end = P->i;
        if (P->i < P->n && !shp_is_meta(s[P->i]))
            return shp_fail(P, P->i, "text glued to a process substitution");
        return true;
    }
    /* io numbers and {var} before a redirection */
    size_t k = 0;
    while (k < left && isdigit((unsigned char)p[k]))
        k++;
    if (k && k < left && (p[k] == '<' || p[k] == '>') && k < 6) {
        t->fd = atoi(p);
        P->i += k;
    } else if (c == '{') {
        size_t e = 1;
        while (e < left && (isalnum((unsigned char)p[e]) || p[e] == '_'))
            e++;
        if (e > 1 && e + 1 < left && p[e] == '}' && (p[e + 1] == '<' || p[e + 1] == '>') &&
            sh_is_name(p + 1, e - 1)) {
            t->named_fd = true;
            P->i += e + 1;
        }
    }
    p = s + P->i;
    left = P->n - P->i;
    c = left ? p[0] : '\0';
    t->k = TK_REDIR;
#define RD(str, kind, extra)                                                                       \
    if (left >= sizeof(str) - 1 && !memcmp(p, str, sizeof(str) - 1)) {                             \
        P->i += sizeof(str) - 1;                                                                   \
        t->rk = kind;                                                                              \
        extra;                                                                                     \
        t->end = P->i;                                                                             \
        return true;                                                                               \
    }
    if (t->fd < 0 && !t->named_fd) {
        RD("&>>", RK_ANDOUT, (void)0);
        RD("&>", RK_ANDOUT, (void)0);
    }
    RD("<<<", RK_HERESTR, t->herestr = true);
    RD("<<-", RK_HEREDOC, t->heredoc = t->strip = true);
    RD("<<", RK_HEREDOC, t->heredoc = true);
    RD("<>", RK_RDWR, (void)0);
    RD("<&", RK_DUP, t->dup_in = true);
    RD("<", RK_IN, (void)0);
    RD(">>", RK_APPEND, (void)0);
    RD(">|", RK_OUT, (void)0);
    RD(">&", RK_DUP, t->dup_out = true);
    RD(">", RK_OUT, (void)0);
    if (t->fd >= 0 || t->named_fd) {
        /* digits or {x} not followed by a redirection after all: a word */
        P->i = t->start;
        t->fd = -1;
        t->named_fd = false;
    }
    OP(";;&", TK_DSEMIAMP);
    OP(";;", TK_DSEMI);
    OP(";&", TK_SEMIAMP);
    OP("&&", TK_AND);
    OP("||", TK_OR);
    OP("|&", TK_PIPEAMP);
    OP("|", TK_PIPE);
    OP("&", TK_AMP);
    OP(";", TK_SEMI);
    OP("(", TK_LPAREN);
    OP(")", TK_RPAREN);
#undef OP
#undef RD
    bool ok = lex_word_tok(P, t);
    t->end = P->i;
    return ok;
}

struct tok *shp_peek(struct P *P)
{
    if (!P->have) {
        if (!lex_token(P, &P->t))
            P->t.k = TK_EOF, shp_fail(P, P->t.start, "an unreadable word");
        P->have = true;
    }
    return &P->t;
}

struct tok shp_take(struct P *P)
{
    shp_peek(P);
    P->have = false;
    return P->t;
}

/* The text of a word that is one unquoted literal, else NULL. */
const char *shp_plain(const struct sh_word *w)
{
    if (w->nparts == 1 && w->parts[0].kind == SP_LIT && !w->parts[0].quoted && !w->has_quotes)
        return w->parts[0].text;
    return NULL;
}

bool shp_tok_is(struct P *P, const char *kw)
{
    struct tok *t = shp_peek(P);
    const char *p = t->k == TK_WORD ? shp_plain(&t->w) : NULL;
    return p && !strcmp(p, kw);
}

void shp_linebreak(struct P *P)
{
    while (shp_peek(P)->k == TK_NL)
        shp_take(P);
}

struct sh_node *shp_node_new(struct P *P, enum sh_kind k, size_t start)
{
    struct sh_node *n = sh_alloc(P->a, sizeof *n);
    n->kind = k;
    n->start = start;
    n->src = P->s;
    return n;
}
