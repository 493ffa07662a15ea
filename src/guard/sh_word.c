/* sh word — see sh_word.h. */
#include <ctype.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/strbuf.h"
#include "base/xalloc.h"
#include "guard/sh_word.h"

/* ---- $'…' ---------------------------------------------------------------- */

static void utf8_put(strbuf *out, uint32_t cp)
{
    if (cp < 0x80) {
        sb_addc(out, (char)cp);
    } else if (cp < 0x800) {
        sb_addc(out, (char)(0xC0 | (cp >> 6)));
        sb_addc(out, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        sb_addc(out, (char)(0xE0 | (cp >> 12)));
        sb_addc(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sb_addc(out, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x110000) {
        sb_addc(out, (char)(0xF0 | (cp >> 18)));
        sb_addc(out, (char)(0x80 | ((cp >> 12) & 0x3F)));
        sb_addc(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sb_addc(out, (char)(0x80 | (cp & 0x3F)));
    }
}

void sh_ansic(const char *s, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 >= n) {
            if (c == '\0')
                return;
            sb_addc(out, c);
            continue;
        }
        char d = s[++i];
        int v = -1;
        switch (d) {
        case 'a':
            v = 7;
            break;
        case 'b':
            v = 8;
            break;
        case 'e':
        case 'E':
            v = 27;
            break;
        case 'f':
            v = 12;
            break;
        case 'n':
            v = 10;
            break;
        case 'r':
            v = 13;
            break;
        case 't':
            v = 9;
            break;
        case 'v':
            v = 11;
            break;
        case '\\':
        case '\'':
        case '"':
        case '?':
            v = (unsigned char)d;
            break;
        case 'x': {
            int acc = 0, k = 0;
            while (k < 2 && i + 1 < n && hex_digit_value(s[i + 1]) >= 0)
                acc = acc * 16 + hex_digit_value(s[++i]), k++;
            if (!k) {
                sb_adds(out, "\\x");
                continue;
            }
            v = acc;
            break;
        }
        case 'u':
        case 'U': {
            uint32_t acc = 0;
            int k = 0, max = d == 'u' ? 4 : 8;
            while (k < max && i + 1 < n && hex_digit_value(s[i + 1]) >= 0)
                acc = acc * 16 + (uint32_t)hex_digit_value(s[++i]), k++;
            if (!k) {
                sb_addc(out, '\\');
                sb_addc(out, d);
                continue;
            }
            if (acc == 0)
                return;
            utf8_put(out, acc);
            continue;
        }
        case 'c':
            if (i + 1 < n) {
                char e = s[++i];
                if (e == '\\' && i + 1 < n && s[i + 1] == '\\')
                    i++;
                v = (unsigned char)e & 0x1f;
            } else {
                sb_adds(out, "\\c");
                continue;
            }
            break;
        default:
            if (d >= '0' && d <= '7') {
                int acc = d - '0', k = 1;
                while (k < 3 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7')
                    acc = acc * 8 + (s[++i] - '0'), k++;
                v = acc & 0xff;
            } else {
                sb_addc(out, '\\');
                sb_addc(out, d);
                continue;
            }
        }
        if (v == 0)
            return;
        sb_addc(out, (char)v);
    }
}

/* ---- units and brace expansion ------------------------------------------- */

struct unit {
    int part; /* -1: a character */
    char c;
    bool active; /* an unquoted character */
};
typedef VEC(struct unit) unitvec;
typedef VEC(unitvec) unitlist;

static void units_of(const struct sh_word *w, unitvec *u)
{
    for (size_t i = 0; i < w->nparts; i++) {
        const struct sh_part *p = &w->parts[i];
        if (p->kind == SP_LIT) {
            for (size_t k = 0; k < p->len; k++) {
                struct unit x = {-1, p->text[k], !p->quoted};
                vec_push(u, x);
            }
        } else {
            struct unit x = {(int)i, 0, false};
            vec_push(u, x);
        }
    }
}

static bool uis(const struct unit *u, char c)
{
    return u->part < 0 && u->active && u->c == c;
}

/* The matching '}' of the '{' at i, or -1; *comma: a top-level ',' seen. */
static long brace_close(const struct unit *u, size_t n, size_t i, bool *comma)
{
    int depth = 0;
    *comma = false;
    for (size_t k = i; k < n; k++) {
        if (uis(&u[k], '{'))
            depth++;
        else if (uis(&u[k], '}')) {
            if (--depth == 0)
                return (long)k;
        } else if (uis(&u[k], ',') && depth == 1)
            *comma = true;
    }
    return -1;
}

/* {a..b[..c]} over plain characters: the elements, or false. */
static bool brace_seq(const struct unit *u, size_t a, size_t b, strvec *out)
{
    char buf[128];
    size_t l = 0;
    for (size_t k = a; k < b; k++) {
        if (u[k].part >= 0 || !u[k].active || l + 1 >= sizeof buf)
            return false;
        buf[l++] = u[k].c;
    }
    buf[l] = '\0';
    char *d1 = strstr(buf, "..");
    if (!d1)
        return false;
    *d1 = '\0';
    char *second = d1 + 2, *d2 = strstr(second, "..");
    long step = 1;
    if (d2) {
        *d2 = '\0';
        char *e;
        step = strtol(d2 + 2, &e, 10);
        if (*e || d2[2] == '\0')
            return false;
        if (step < 0)
            step = -step;
        if (step == 0)
            step = 1;
    }
    const char *x = buf, *y = second;
    bool alpha = strlen(x) == 1 && strlen(y) == 1 && isalpha((unsigned char)x[0]) &&
                 isalpha((unsigned char)y[0]);
    long from, to;
    int width = 0;
    if (alpha) {
        from = (unsigned char)x[0];
        to = (unsigned char)y[0];
    } else {
        char *e1, *e2;
        if (!*x || !*y)
            return false;
        from = strtol(x, &e1, 10);
        to = strtol(y, &e2, 10);
        if (*e1 || *e2)
            return false;
        const char *dx = x[0] == '-' ? x + 1 : x, *dy = y[0] == '-' ? y + 1 : y;
        if ((dx[0] == '0' && dx[1]) || (dy[0] == '0' && dy[1]))
            width = (int)(strlen(x) > strlen(y) ? strlen(x) : strlen(y));
    }
    long count = (from <= to ? to - from : from - to) / step + 1;
    if (count > SH_MAX_FIELDS)
        return false;
    for (long k = 0, v = from; k < count; k++, v += from <= to ? step : -step) {
        if (alpha)
            strvec_pushf(out, "%c", (char)v);
        else
            strvec_pushf(out, "%0*ld", width, v);
    }
    return true;
}

static int brace_expand(const struct unit *u, size_t n, unitlist *out, int depth);

static void push_concat(unitlist *out, const struct unit *a, size_t an, const unitvec *b)
{
    unitvec v = VEC_INIT;
    for (size_t i = 0; i < an; i++)
        vec_push(&v, a[i]);
    for (size_t i = 0; i < b->n; i++)
        vec_push(&v, b->v[i]);
    vec_push(out, v);
}

static void unitlist_free(unitlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        vec_free(&l->v[i]);
    vec_free(l);
}

/* Appends the words of brace-expanding u; -1 when over SH_MAX_FIELDS. */
static int brace_expand(const struct unit *u, size_t n, unitlist *out, int depth)
{
    if (depth > 64)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!uis(&u[i], '{'))
            continue;
        bool comma;
        long j = brace_close(u, n, i, &comma);
        if (j < 0)
            break; /* no closing brace: the rest is literal */
        strvec seq = STRVEC_INIT;
        unitlist alts = {0};
        if (comma) {
            size_t a = i + 1;
            int d = 0;
            for (size_t k = i + 1; k <= (size_t)j; k++) {
                if (uis(&u[k], '{'))
                    d++;
                else if (uis(&u[k], '}') && d)
                    d--;
                if ((k == (size_t)j) || (d == 0 && uis(&u[k], ','))) {
                    unitvec alt = VEC_INIT;
                    for (size_t m = a; m < k; m++)
                        vec_push(&alt, u[m]);
                    vec_push(&alts, alt);
                    a = k + 1;
                }
            }
        } else if (brace_seq(u, i + 1, (size_t)j, &seq)) {
            for (size_t k = 0; k < seq.n; k++) {
                unitvec alt = VEC_INIT;
                for (const char *c = seq.v[k]; *c; c++) {
                    struct unit x = {-1, *c, false};
                    vec_push(&alt, x);
                }
                vec_push(&alts, alt);
            }
            strvec_clear(&seq);
        } else {
            strvec_clear(&seq);
            continue; /* {x} without a comma is literal: look further */
        }
        /* preamble + each alternative + postscript, each expanded again */
        for (size_t k = 0; k < alts.n; k++) {
            unitvec tail = VEC_INIT;
            for (size_t m = 0; m < alts.v[k].n; m++)
                vec_push(&tail, alts.v[k].v[m]);
            for (size_t m = (size_t)j + 1; m < n; m++)
                vec_push(&tail, u[m]);
            unitlist sub = {0};
            int rc = brace_expand(tail.v, tail.n, &sub, depth + 1);
            vec_free(&tail);
            for (size_t m = 0; rc == 0 && m < sub.n; m++) {
                if (out->n >= SH_MAX_FIELDS) {
                    rc = -1;
                    break;
                }
                push_concat(out, u, i, &sub.v[m]);
            }
            unitlist_free(&sub);
            if (rc < 0) {
                unitlist_free(&alts);
                return -1;
            }
        }
        unitlist_free(&alts);
        return 0;
    }
    unitvec all = VEC_INIT;
    for (size_t i = 0; i < n; i++)
        vec_push(&all, u[i]);
    vec_push(out, all);
    return 0;
}

/* ---- fields -------------------------------------------------------------- */

struct fb {
    struct sh_arena *a;
    const struct sh_xctx *x;
    const struct sh_word *w;
    sh_xwords *out;
    strbuf text;
    strbuf act;
    bool content; /* the field exists (quoted empty strings count) */
    struct sh_xw meta;
    size_t fields;
};

static void fb_char(struct fb *f, char c, bool active)
{
    sb_addc(&f->text, c);
    sb_addc(&f->act, active ? 1 : 0);
    f->content = true;
}

static void fb_str(struct fb *f, const char *s, size_t n, bool active)
{
    for (size_t i = 0; i < n; i++)
        fb_char(f, s[i], active);
}

static void fb_end(struct fb *f)
{
    if (f->content) {
        struct sh_xw w = f->meta;
        w.len = f->text.len;
        w.text = sh_strndup(f->a, f->text.buf ? f->text.buf : "", f->text.len);
        w.active = sh_alloc(f->a, f->act.len + 1);
        if (f->act.len)
            memcpy(w.active, f->act.buf, f->act.len);
        w.src = f->w;
        for (size_t i = 0; i < w.len; i++) {
            if (!w.active[i])
                continue;
            char c = w.text[i];
            if (c == '*' || c == '?')
                w.glob = true;
            else if (c == '[') {
                for (size_t k = i + 1; k < w.len; k++)
                    if (w.active[k] && w.text[k] == ']' && k > i + 1)
                        w.glob = true;
            }
        }
        vec_push(f->out, w);
        f->fields++;
    }
    sb_reset(&f->text);
    sb_reset(&f->act);
    f->content = false;
    f->meta.glob = false;
    f->meta.procsub = false;
}

static void fb_unknown(struct fb *f, const char *what, bool quoted)
{
    if (!f->meta.unres)
        f->meta.unres = what;
    if (!quoted)
        f->meta.split_unknown = true;
    fb_char(f, '\x01', false);
}

/* A known value: quoted as is, unquoted split on blanks and glob-active. */
static void fb_value(struct fb *f, const char *v, bool quoted)
{
    if (quoted) {
        f->content = true;
        fb_str(f, v, strlen(v), false);
        return;
    }
    for (const char *p = v; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n') {
            if (f->content)
                fb_end(f);
            continue;
        }
        fb_char(f, *p, true);
    }
}

static void fb_parts(struct fb *f, const struct sh_word *w, bool quoted, int depth);

static const char *short_text(struct fb *f, const char *prefix, const char *t, size_t n)
{
    if (n > 40)
        n = 40;
    strbuf b = SB_INIT;
    sb_addf(&b, "%s%.*s", prefix, (int)n, t);
    char *r = sh_strndup(f->a, b.buf, b.len);
    sb_release(&b);
    return r;
}

static void fb_param(struct fb *f, const struct sh_part *p, bool quoted, int depth)
{
    const char *label = short_text(f, "$", p->text, p->len);
    if (p->op == PO_UNSUPPORTED) {
        if (!f->meta.refuse)
            f->meta.refuse = p->why;
        fb_unknown(f, label, quoted);
        return;
    }
    const char *val = NULL;
    enum sh_pstate st = f->x->param(f->x->u, p->text, &val);
    switch (p->op) {
    case PO_PLAIN:
    case PO_ERROR:
        if (st == SHV_SET)
            fb_value(f, val, quoted);
        else if (st == SHV_UNSET && p->op == PO_PLAIN)
            fb_value(f, "", quoted);
        else
            fb_unknown(f, label, quoted);
        return;
    case PO_DEFAULT:
    case PO_ALT: {
        if (st == SHV_UNKNOWN) {
            fb_unknown(f, label, quoted);
            return;
        }
        bool use_word = st == SHV_UNSET || (p->colon && val && !val[0]);
        if (p->op == PO_ALT)
            use_word = !use_word;
        if (!use_word) {
            fb_value(f, p->op == PO_ALT ? "" : val, quoted);
        } else if (p->opword && depth < 16) {
            fb_parts(f, p->opword, quoted, depth + 1);
        }
        return;
    }
    case PO_LENGTH:
        if (st == SHV_UNKNOWN) {
            fb_unknown(f, label, quoted);
        } else {
            char num[32];
            snprintf(num, sizeof num, "%zu", val ? strlen(val) : (size_t)0);
            fb_value(f, num, quoted);
        }
        return;
    default:
        fb_unknown(f, label, quoted);
        return;
    }
}

/* The output of $(…) when the guard knows it: pwd, git's toplevel. */
static const char *known_output(const struct fb *f, const struct sh_part *p)
{
    const struct sh_node *b = p->body;
    if (!b || b->kind != SN_SIMPLE || b->nredirs || b->nassign)
        return NULL;
    const char *w[4] = {0};
    if (b->nwords > 4)
        return NULL;
    for (size_t i = 0; i < b->nwords; i++) {
        const struct sh_word *x = &b->words[i];
        if (x->nparts != 1 || x->parts[0].kind != SP_LIT)
            return NULL;
        w[i] = x->parts[0].text;
    }
    if (b->nwords == 1 && !strcmp(w[0], "pwd"))
        return f->x->pwd;
    if (b->nwords == 3 && !strcmp(w[0], "git") && !strcmp(w[1], "rev-parse") &&
        !strcmp(w[2], "--show-toplevel"))
        return f->x->toplevel ? f->x->toplevel(f->x->u) : NULL;
    return NULL;
}

static void fb_parts(struct fb *f, const struct sh_word *w, bool quoted, int depth)
{
    for (size_t i = 0; i < w->nparts; i++) {
        const struct sh_part *p = &w->parts[i];
        bool q = quoted || p->quoted;
        switch (p->kind) {
        case SP_LIT:
            fb_str(f, p->text, p->len, !q);
            break;
        case SP_ANSIC: {
            strbuf b = SB_INIT;
            sh_ansic(p->text, p->len, &b);
            f->content = true;
            fb_str(f, b.buf ? b.buf : "", b.len, false);
            sb_release(&b);
            break;
        }
        case SP_PARAM:
            fb_param(f, p, q, depth);
            break;
        case SP_CMDSUB: {
            const char *out = known_output(f, p);
            if (out) {
                fb_value(f, out, q);
            } else {
                fb_unknown(f, "$(…)", q);
            }
            break;
        }
        case SP_ARITH:
            fb_unknown(f, "$((…))", q);
            break;
        case SP_PROCSUB:
            f->meta.procsub = true;
            fb_str(f, "/dev/fd/63", 10, false);
            break;
        case SP_ARRAY:
            fb_unknown(f, "(…)", true);
            break;
        }
    }
}

static bool tilde_prefix(struct fb *f, const struct unit *u, size_t n, size_t *used)
{
    if (!n || !uis(&u[0], '~'))
        return false;
    char name[256];
    size_t k = 1, l = 0;
    while (k < n && !(u[k].part < 0 && u[k].c == '/') && !(u[k].part < 0 && u[k].c == ':')) {
        if (u[k].part >= 0 || !u[k].active || l + 1 >= sizeof name)
            return false;
        name[l++] = u[k].c;
        k++;
    }
    name[l] = '\0';
    const char *dir = NULL;
    char *owned = NULL;
    if (!l)
        dir = f->x->home;
    else if (!strcmp(name, "+"))
        dir = f->x->pwd;
    else if (!strcmp(name, "-"))
        dir = f->x->oldpwd;
    else {
        struct passwd *pw = getpwnam(name);
        if (!pw)
            return false; /* bash leaves ~nosuchuser as it is */
        owned = xstrdup(pw->pw_dir);
        dir = owned;
    }
    if (!dir) {
        fb_unknown(f, "~", true);
    } else {
        f->content = true;
        fb_str(f, dir, strlen(dir), false);
    }
    free(owned);
    *used = k;
    return true;
}

static void fb_units(struct fb *f, const unitvec *u, bool tilde)
{
    size_t i = 0;
    if (tilde && !tilde_prefix(f, u->v, u->n, &i))
        i = 0;
    for (; i < u->n; i++) {
        const struct unit *x = &u->v[i];
        if (x->part < 0) {
            fb_char(f, x->c, x->active);
            continue;
        }
        struct sh_word one = *f->w;
        one.parts = &((struct sh_part *)f->w->parts)[x->part];
        one.nparts = 1;
        fb_parts(f, &one, false, 0);
    }
    if (f->w->has_quotes)
        f->content = true;
    fb_end(f);
}

int sh_expand(struct sh_arena *a, const struct sh_word *w, const struct sh_xctx *x, bool assignment,
              sh_xwords *out, const char **why)
{
    struct fb f = {.a = a, .x = x, .w = w, .out = out};
    unitvec u = VEC_INIT;
    units_of(w, &u);
    int rc = 0;
    if (assignment) {
        /* NAME=value: ~ right after '=' and after each unquoted ':' */
        size_t i = 0;
        for (; i < u.n && !uis(&u.v[i], '='); i++)
            fb_char(&f, u.v[i].c, false);
        if (i < u.n)
            fb_char(&f, '=', false), i++;
        bool at_start = true;
        while (i < u.n) {
            size_t used = 0;
            if (at_start && tilde_prefix(&f, u.v + i, u.n - i, &used)) {
                i += used;
                at_start = false;
                continue;
            }
            const struct unit *y = &u.v[i];
            at_start = uis(y, ':');
            if (y->part < 0) {
                fb_char(&f, y->c, false);
            } else {
                struct sh_word one = *w;
                one.parts = &((struct sh_part *)w->parts)[y->part];
                one.nparts = 1;
                fb_parts(&f, &one, true, 0);
            }
            i++;
        }
        f.content = true;
        fb_end(&f);
    } else {
        unitlist words = {0};
        if (brace_expand(u.v, u.n, &words, 0) < 0) {
            *why = "a brace expansion of more than 4096 words";
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < words.n; i++) {
            f.meta = (struct sh_xw){0};
            fb_units(&f, &words.v[i], true);
            if (out->n > SH_MAX_FIELDS) {
                *why = "a word expanding to more than 4096 words";
                rc = -1;
            }
        }
        unitlist_free(&words);
    }
    vec_free(&u);
    sb_release(&f.text);
    sb_release(&f.act);
    return rc;
}

const char *sh_word_text(struct sh_arena *a, const char *src, const struct sh_word *w)
{
    return sh_strndup(a, src + w->start, w->end > w->start ? w->end - w->start : 0);
}
