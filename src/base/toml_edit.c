/*
 * toml editor — format-preserving edits by splicing the source text.
 *
 * Every edit is planned as a few splices (replace bytes [off,end) with new
 * text) computed from the positions the parser recorded; nothing outside the
 * splices is touched. The result is then re-parsed and compared with the
 * tree the edit should produce (the old tree with the change applied through
 * the value API). If it does not parse or does not match, the edit is refused
 * and the text stays as it was, so a bug here can cost an edit but never
 * silently damage a file.
 */
#include <stdlib.h>
#include <string.h>

#include "base/toml.h"
#include "base/toml_internal.h"
#include "base/vec.h"
#include "base/xalloc.h"

struct span {
    size_t off, end;
};

struct toml_edit {
    char *path;
    strbuf text;
    toml_value *root;
    const char *nl;        /* "\n" or "\r\n", following the file */
    VEC(size_t) headers;   /* offsets of [header] / [[header]] lines, sorted */
    VEC(struct span) vals; /* spans of key = value values (not inside inline ones), sorted */
    size_t last_off, last_old, last_new;
};

struct splice {
    size_t off, end;
    char *text;
};
typedef VEC(struct splice) splices;

/* ---- indexes over the current text -------------------------------------- */

static void index_walk(toml_edit *ed, const toml_value *tab)
{
    for (size_t i = 0; i < tab->u.tab.n; i++) {
        const toml_value *c = tab->u.tab.kv[i].val;
        if (c->type == TOML_TABLE && !c->is_inline) {
            if (c->priv_defined)
                vec_push(&ed->headers, c->off);
            index_walk(ed, c);
        } else if (c->type == TOML_ARRAY && c->is_array_of_tables) {
            for (size_t j = 0; j < c->u.arr.n; j++) {
                vec_push(&ed->headers, c->u.arr.items[j]->off);
                index_walk(ed, c->u.arr.items[j]);
            }
        } else {
            struct span s = {c->off, c->end};
            vec_push(&ed->vals, s);
        }
    }
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_span(const void *a, const void *b)
{
    return cmp_size(&((const struct span *)a)->off, &((const struct span *)b)->off);
}

static void reindex(toml_edit *ed)
{
    ed->headers.n = ed->vals.n = 0;
    index_walk(ed, ed->root);
    if (ed->headers.n)
        qsort(ed->headers.v, ed->headers.n, sizeof(size_t), cmp_size);
    if (ed->vals.n)
        qsort(ed->vals.v, ed->vals.n, sizeof(struct span), cmp_span);
}

/* First header offset > off, or the text length. */
static size_t next_header(const toml_edit *ed, size_t off)
{
    size_t lo = 0, hi = ed->headers.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ed->headers.v[mid] <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ed->headers.n ? ed->headers.v[lo] : ed->text.len;
}

/* Index of the last value span starting before off, or -1. */
static long last_val_before(const toml_edit *ed, size_t off)
{
    size_t lo = 0, hi = ed->vals.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ed->vals.v[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo - 1;
}

static bool inside_value(const toml_edit *ed, size_t off)
{
    long i = last_val_before(ed, off + 1);
    return i >= 0 && off < ed->vals.v[i].end;
}

static size_t line_start(const toml_edit *ed, size_t off)
{
    while (off > 0 && ed->text.buf[off - 1] != '\n')
        off--;
    return off;
}

/* After the value or header ending at off: trailing blanks, a comment and
 * the newline belong to its line. */
static size_t line_end_after(const toml_edit *ed, size_t off)
{
    const char *s = ed->text.buf;
    size_t n = ed->text.len;
    while (off < n && (s[off] == ' ' || s[off] == '\t'))
        off++;
    if (off < n && s[off] == '#')
        while (off < n && s[off] != '\n')
            off++;
    if (off < n && s[off] == '\r')
        off++;
    if (off < n && s[off] == '\n')
        off++;
    return off;
}

/* Where the comment lines directly above the header at off begin: they
 * describe that header, so sections before it end there. */
static size_t attached_start(const toml_edit *ed, size_t off)
{
    size_t ls = line_start(ed, off);
    while (ls > 0) {
        size_t pls = line_start(ed, ls - 1), i = pls;
        while (i < ls && (ed->text.buf[i] == ' ' || ed->text.buf[i] == '\t'))
            i++;
        if (i >= ls || ed->text.buf[i] != '#' || inside_value(ed, pls))
            break;
        ls = pls;
    }
    return ls;
}

/* The bytes of the section whose header starts at off. */
static struct span section(const toml_edit *ed, size_t off)
{
    size_t nh = next_header(ed, off);
    struct span s = {line_start(ed, off), nh < ed->text.len ? attached_start(ed, nh) : nh};
    if (s.end < s.off)
        s.end = s.off;
    if (s.end == ed->text.len && s.off > 0) {
        /* The last section: the blank line that separated it goes too, so
         * adding and then removing a section restores the text. */
        size_t pls = line_start(ed, s.off - 1), i = pls;
        while (i < s.off && (ed->text.buf[i] == ' ' || ed->text.buf[i] == '\t' ||
                             ed->text.buf[i] == '\r' || ed->text.buf[i] == '\n'))
            i++;
        if (i == s.off)
            s.off = pls;
    }
    return s;
}

static bool ends_with_nl(const toml_edit *ed)
{
    return ed->text.len == 0 || ed->text.buf[ed->text.len - 1] == '\n';
}

/* ---- planning helpers ----------------------------------------------------- */

static void add_splice(splices *sp, size_t off, size_t end, char *text)
{
    struct splice s = {off, end, text};
    vec_push(sp, s);
}

static void splices_free(splices *sp)
{
    for (size_t i = 0; i < sp->n; i++)
        free(sp->v[i].text);
    vec_free(sp);
}

/* Text with '\n' turned into the file's newline. */
static char *with_nl(const toml_edit *ed, const strbuf *sb)
{
    if (ed->nl[0] == '\n')
        return xstrndup(sb->buf, sb->len);
    strbuf o = SB_INIT;
    for (size_t i = 0; i < sb->len; i++) {
        if (sb->buf[i] == '\n')
            sb_adds(&o, ed->nl);
        else
            sb_addc(&o, sb->buf[i]);
    }
    if (!o.alloc)
        sb_grow(&o, 1);
    return sb_detach(&o, NULL);
}

/* Ranges that hold value c (the value of some key = value line, a section,
 * or both), so removing them removes c from the document. */
static void collect_remove(const toml_edit *ed, const toml_value *c, splices *sp)
{
    if (c->type == TOML_TABLE && !c->is_inline) {
        if (c->priv_defined) {
            struct span s = section(ed, c->off);
            add_splice(sp, s.off, s.end, NULL);
        }
        for (size_t i = 0; i < c->u.tab.n; i++)
            collect_remove(ed, c->u.tab.kv[i].val, sp);
    } else if (c->type == TOML_ARRAY && c->is_array_of_tables) {
        for (size_t j = 0; j < c->u.arr.n; j++)
            collect_remove(ed, c->u.arr.items[j], sp);
    } else {
        add_splice(sp, line_start(ed, c->off), line_end_after(ed, c->end), NULL);
    }
}

/* Inserts line (no newline) as the last key = value of the section owned by
 * tab (the root or a table with a header). */
static void insert_in_section(const toml_edit *ed, const toml_value *tab, const strbuf *line,
                              splices *sp)
{
    bool root = tab == ed->root;
    size_t body = root ? 0 : line_end_after(ed, tab->end);
    size_t nh =
        root ? (ed->headers.n ? ed->headers.v[0] : ed->text.len) : next_header(ed, tab->off);
    long lv = last_val_before(ed, nh);
    size_t at;
    bool blank_after = false;
    if (lv >= 0 && ed->vals.v[lv].off >= body) {
        at = line_end_after(ed, ed->vals.v[lv].end);
    } else if (root && ed->headers.n) {
        at = attached_start(ed, ed->headers.v[0]);
        blank_after = true;
    } else {
        at = root ? ed->text.len : body;
    }
    strbuf t = SB_INIT;
    if (at > 0 && ed->text.buf[at - 1] != '\n')
        sb_addc(&t, '\n');
    sb_add(&t, line->buf, line->len);
    sb_addc(&t, '\n');
    if (blank_after)
        sb_addc(&t, '\n');
    add_splice(sp, at, at, with_nl(ed, &t));
    sb_release(&t);
}

/* Appends a new section (text already rendered) at the end of the file. */
static void append_section(const toml_edit *ed, const strbuf *sec, splices *sp)
{
    strbuf t = SB_INIT;
    if (!ends_with_nl(ed))
        sb_addc(&t, '\n');
    if (ed->text.len)
        sb_addc(&t, '\n');
    sb_add(&t, sec->buf, sec->len);
    add_splice(sp, ed->text.len, ed->text.len, with_nl(ed, &t));
    sb_release(&t);
}

/* ---- paths ------------------------------------------------------------------ */

/* Walks path[0..n) through tables (an array of tables means its last entry).
 * chain[0] = root, chain[i] = the table at path[0..i). Returns how many
 * segments resolved (n when all did), or -1 (err set) if one names a
 * non-table. */
static long walk(const char *errpath, toml_value *root, const char *const *path, size_t n,
                 toml_value **chain, struct as_err *err)
{
    chain[0] = root;
    for (size_t i = 0; i < n; i++) {
        toml_value *v = toml_get(chain[i], path[i]);
        if (!v)
            return (long)i;
        if (v->type == TOML_ARRAY && v->is_array_of_tables && v->u.arr.n)
            v = v->u.arr.items[v->u.arr.n - 1];
        if (v->type != TOML_TABLE)
            return as_err_at(err, errpath, v->line, v->col, "'%s' is %s %s, not a table", path[i],
                             v->type == TOML_ARRAY || v->type == TOML_INTEGER ? "an" : "a",
                             toml_type_name(v->type));
        chain[i + 1] = v;
    }
    return (long)n;
}

/* The table at path[0..n) in a (cloned) tree, created where missing. */
static toml_value *make_path(const char *errpath, toml_value *root, const char *const *path,
                             size_t n, struct as_err *err)
{
    toml_value *chain[TOML_MAX_DEPTH + 2];
    long got = walk(errpath, root, path, n, chain, err);
    if (got < 0)
        return NULL;
    toml_value *t = chain[got];
    for (size_t i = (size_t)got; i < n; i++) {
        toml_value *nt = toml_new(TOML_TABLE);
        toml_table_set(t, path[i], nt);
        t = nt;
    }
    return t;
}

static void join_keys(const char *const *path, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(out, '.');
        toml_emit_key(path[i], out);
    }
}

static int check_path(const toml_edit *ed, const char *const *path, size_t n, struct as_err *err)
{
    if (!n)
        return as_err_at(err, ed->path, 0, 0, "empty key path");
    if (n > TOML_MAX_DEPTH)
        return as_err_at(err, ed->path, 0, 0, "key path deeper than %d levels", TOML_MAX_DEPTH);
    for (size_t i = 0; i < n; i++)
        if (!path[i])
            return as_err_at(err, ed->path, 0, 0, "key path has a NULL segment");
    return 0;
}

/* Innermost inline table in chain[0..k], or -1. */
static long inline_in(toml_value **chain, size_t k)
{
    for (long i = (long)k; i >= 0; i--)
        if (chain[i]->is_inline)
            return i;
    return -1;
}

/* The splice that re-renders the inline table chain[a] from the expected tree. */
static void regen_inline(const toml_edit *ed, toml_value **chain, long a, toml_value *expect,
                         const char *const *path, splices *sp)
{
    toml_value *echain[TOML_MAX_DEPTH + 2];
    struct as_err e2 = AS_ERR_INIT;
    long got = walk(ed->path, expect, path, (size_t)a, echain, &e2);
    strbuf t = SB_INIT;
    if (got == a)
        toml_emit_value(echain[a], &t);
    add_splice(sp, chain[a]->off, chain[a]->end, with_nl(ed, &t));
    sb_release(&t);
}

/* ---- applying a plan ------------------------------------------------------- */

static int cmp_splice(const void *a, const void *b)
{
    const struct splice *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static void prune_empty(toml_value *root, const char *const *path, size_t n)
{
    /* A table that only existed through the removed lines is gone too. */
    while (n > 0) {
        toml_value *chain[TOML_MAX_DEPTH + 2];
        struct as_err e = AS_ERR_INIT;
        if (walk("", root, path, n, chain, &e) != (long)n)
            return;
        toml_value *t = chain[n];
        if (t->u.tab.n || t->priv_defined || t->is_inline)
            return;
        toml_value *holder = toml_get(chain[n - 1], path[n - 1]);
        if (holder != t)
            return;
        toml_table_remove(chain[n - 1], path[n - 1]);
        n--;
    }
}

static int apply(toml_edit *ed, splices *sp, toml_value *expect, const char *const *path, size_t n,
                 bool prune, struct as_err *err)
{
    /* A byte-order mark stays first: nothing is inserted before or cut from it. */
    size_t bom = ed->text.len >= 3 && memcmp(ed->text.buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    for (size_t i = 0; i < sp->n; i++) {
        if (sp->v[i].off < bom)
            sp->v[i].off = bom;
        if (sp->v[i].end < sp->v[i].off)
            sp->v[i].end = sp->v[i].off;
    }
    qsort(sp->v, sp->n, sizeof *sp->v, cmp_splice);
    strbuf out = SB_INIT;
    size_t pos = 0, first = ed->text.len, last = 0, added = 0;
    for (size_t i = 0; i < sp->n; i++) {
        struct splice *s = &sp->v[i];
        size_t off = s->off < pos ? pos : s->off, end = s->end < off ? off : s->end;
        sb_add(&out, ed->text.buf + pos, off - pos);
        size_t tl = s->text ? strlen(s->text) : 0;
        sb_add(&out, s->text ? s->text : "", tl);
        if (off < first)
            first = off;
        if (end > last)
            last = end;
        added += tl;
        pos = end;
    }
    sb_add(&out, ed->text.buf + pos, ed->text.len - pos);
    if (prune)
        prune_empty(expect, path, n - 1);
    struct as_err perr = AS_ERR_INIT;
    toml_value *nr = toml_parse(ed->path, out.buf, out.len, &perr);
    if (!nr) {
        sb_release(&out);
        return as_err_at(err, ed->path, 0, 0, "the edit would not leave valid TOML: %s", perr.msg);
    }
    if (!toml_equal(nr, expect)) {
        /* Refuse rather than write something we did not mean. */
        toml_free(nr);
        sb_release(&out);
        return as_err_at(err, ed->path, 0, 0,
                         "cannot edit this file in place without changing other content");
    }
    if (first > last)
        first = last = ed->text.len;
    ed->last_off = first;
    ed->last_old = last - first;
    ed->last_new = out.len - (ed->text.len - ed->last_old);
    (void)added;
    sb_release(&ed->text);
    ed->text = out;
    toml_free(ed->root);
    ed->root = nr;
    reindex(ed);
    return 0;
}

/* ---- public ------------------------------------------------------------------ */

toml_edit *toml_edit_open(const char *path, const char *data, size_t len, struct as_err *err)
{
    toml_value *root = toml_parse(path, data, len, err);
    if (!root)
        return NULL;
    toml_edit *ed = xcalloc(1, sizeof *ed);
    ed->path = xstrdup(path ? path : "<input>");
    sb_init(&ed->text, len + 1);
    sb_add(&ed->text, data ? data : "", data ? len : 0);
    ed->root = root;
    const char *lf = len ? memchr(data, '\n', len) : NULL;
    ed->nl = lf && lf > data && lf[-1] == '\r' ? "\r\n" : "\n";
    reindex(ed);
    return ed;
}

void toml_edit_free(toml_edit *ed)
{
    if (!ed)
        return;
    free(ed->path);
    sb_release(&ed->text);
    toml_free(ed->root);
    vec_free(&ed->headers);
    vec_free(&ed->vals);
    free(ed);
}

const char *toml_edit_text(const toml_edit *ed, size_t *len)
{
    if (len)
        *len = ed->text.len;
    return ed->text.buf;
}

const toml_value *toml_edit_root(const toml_edit *ed)
{
    return ed->root;
}

void toml_edit_last_span(const toml_edit *ed, size_t *off, size_t *old_len, size_t *new_len)
{
    *off = ed->last_off;
    *old_len = ed->last_old;
    *new_len = ed->last_new;
}

/* Adds "rel = value" (rel: path[from..n)) to the table at path[0..from) in its
 * own section, or as a dotted key in the section that made it. */
static void plan_add_key(const toml_edit *ed, toml_value **chain, size_t k, const char *const *path,
                         size_t n, const strbuf *value, splices *sp)
{
    /* chain[k] is the table that gets key path[k..n); find the section owner */
    size_t b = k;
    while (b > 0 && !chain[b]->priv_defined)
        b--;
    strbuf line = SB_INIT;
    if (b == k || chain[k]->priv_dotted) {
        join_keys(path + b, n - b, &line);
        sb_adds(&line, " = ");
        sb_add(&line, value->buf, value->len);
        insert_in_section(ed, chain[b], &line, sp);
    } else {
        /* only implied by headers: give it its own [header] */
        join_keys(path, k, &line);
        strbuf sec = SB_INIT;
        sb_addc(&sec, '[');
        sb_add(&sec, line.buf, line.len);
        sb_adds(&sec, "]\n");
        join_keys(path + k, n - k, &sec);
        sb_adds(&sec, " = ");
        sb_add(&sec, value->buf, value->len);
        sb_addc(&sec, '\n');
        append_section(ed, &sec, sp);
        sb_release(&sec);
    }
    sb_release(&line);
}

int toml_edit_set(toml_edit *ed, const char *const *path, size_t n, const toml_value *v,
                  struct as_err *err)
{
    if (check_path(ed, path, n, err))
        return -1;
    if (!v)
        return as_err_at(err, ed->path, 0, 0, "no value to set");
    toml_value *expect = toml_clone(ed->root);
    toml_value *et = make_path(ed->path, expect, path, n - 1, err);
    if (!et) {
        toml_free(expect);
        return -1;
    }
    toml_table_set(et, path[n - 1], toml_clone(v));

    toml_value *chain[TOML_MAX_DEPTH + 2];
    long got = walk(ed->path, ed->root, path, n - 1, chain, err);
    splices sp = VEC_INIT;
    strbuf val = SB_INIT;
    toml_emit_value(v, &val);
    long a = inline_in(chain, got < 0 ? 0 : (size_t)got);
    if (got < 0) {
        toml_free(expect);
        sb_release(&val);
        return -1;
    }
    const toml_kv *kv = got == (long)n - 1 ? toml_get_kv(chain[got], path[n - 1]) : NULL;
    if (kv &&
        (kv->val->is_inline || (kv->val->type != TOML_TABLE && kv->val->type != TOML_ARRAY))) {
        /* an inline value: replace exactly its bytes */
        add_splice(&sp, kv->val->off, kv->val->end, with_nl(ed, &val));
    } else if (a >= 0) {
        regen_inline(ed, chain, a, expect, path, &sp);
    } else if (got == (long)n - 1) {
        if (kv)
            collect_remove(ed, kv->val, &sp);
        plan_add_key(ed, chain, n - 1, path, n, &val, &sp);
    } else {
        /* the table does not exist: a new [header] at the end */
        strbuf sec = SB_INIT;
        sb_addc(&sec, '[');
        join_keys(path, n - 1, &sec);
        sb_adds(&sec, "]\n");
        toml_emit_key(path[n - 1], &sec);
        sb_adds(&sec, " = ");
        sb_add(&sec, val.buf, val.len);
        sb_addc(&sec, '\n');
        append_section(ed, &sec, &sp);
        sb_release(&sec);
    }
    int r = apply(ed, &sp, expect, path, n, false, err);
    splices_free(&sp);
    sb_release(&val);
    toml_free(expect);
    return r;
}

int toml_edit_set_table(toml_edit *ed, const char *const *path, size_t n, const toml_value *tab,
                        struct as_err *err)
{
    if (check_path(ed, path, n, err))
        return -1;
    if (!tab || tab->type != TOML_TABLE)
        return as_err_at(err, ed->path, 0, 0, "set_table needs a table");
    toml_value *expect = toml_clone(ed->root);
    toml_value *et = make_path(ed->path, expect, path, n - 1, err);
    if (!et) {
        toml_free(expect);
        return -1;
    }
    toml_value *copy = toml_clone(tab);
    copy->is_inline = 0;
    toml_table_set(et, path[n - 1], copy);

    toml_value *chain[TOML_MAX_DEPTH + 2];
    long got = walk(ed->path, ed->root, path, n - 1, chain, err);
    if (got < 0) {
        toml_free(expect);
        return -1;
    }
    splices sp = VEC_INIT;
    long a = inline_in(chain, (size_t)got);
    const toml_kv *kv = got == (long)n - 1 ? toml_get_kv(chain[got], path[n - 1]) : NULL;
    if (a >= 0) {
        regen_inline(ed, chain, a, expect, path, &sp);
    } else {
        strbuf sec = SB_INIT;
        toml_emit_section(tab, path, n, false, &sec);
        if (kv && kv->val->type == TOML_TABLE && !kv->val->is_inline && kv->val->priv_defined) {
            /* in place of the old section */
            collect_remove(ed, kv->val, &sp);
            struct span s = section(ed, kv->val->off);
            strbuf t = SB_INIT;
            sb_add(&t, sec.buf, sec.len);
            if (s.end < ed->text.len)
                sb_addc(&t, '\n');
            add_splice(&sp, s.off, s.off, with_nl(ed, &t));
            sb_release(&t);
        } else {
            if (kv)
                collect_remove(ed, kv->val, &sp);
            append_section(ed, &sec, &sp);
        }
        sb_release(&sec);
    }
    int r = apply(ed, &sp, expect, path, n, false, err);
    splices_free(&sp);
    toml_free(expect);
    return r;
}

/* End of the last entry of an array of tables, with its sub-sections. */
static size_t extent_end(const toml_edit *ed, const toml_value *t, size_t end)
{
    if (t->type == TOML_TABLE && !t->is_inline) {
        if (t->priv_defined) {
            struct span s = section(ed, t->off);
            if (s.end > end)
                end = s.end;
        }
        for (size_t i = 0; i < t->u.tab.n; i++)
            end = extent_end(ed, t->u.tab.kv[i].val, end);
    } else if (t->type == TOML_ARRAY && t->is_array_of_tables) {
        for (size_t j = 0; j < t->u.arr.n; j++)
            end = extent_end(ed, t->u.arr.items[j], end);
    }
    return end;
}

int toml_edit_append_array_table(toml_edit *ed, const char *const *path, size_t n,
                                 const toml_value *tab, struct as_err *err)
{
    if (check_path(ed, path, n, err))
        return -1;
    if (!tab || tab->type != TOML_TABLE)
        return as_err_at(err, ed->path, 0, 0, "append_array_table needs a table");
    toml_value *expect = toml_clone(ed->root);
    toml_value *et = make_path(ed->path, expect, path, n - 1, err);
    if (!et) {
        toml_free(expect);
        return -1;
    }
    toml_value *arr = toml_get(et, path[n - 1]);
    if (arr && arr->type != TOML_ARRAY) {
        as_err_at(err, ed->path, arr->line, arr->col, "'%s' is %s %s, not an array of tables",
                  path[n - 1], arr->type == TOML_INTEGER ? "an" : "a", toml_type_name(arr->type));
        toml_free(expect);
        return -1;
    }
    if (arr && arr->u.arr.n && !arr->is_array_of_tables) {
        for (size_t i = 0; i < arr->u.arr.n; i++) {
            if (arr->u.arr.items[i]->type != TOML_TABLE) {
                as_err_at(err, ed->path, arr->line, arr->col,
                          "'%s' is an array of %s values, not of tables", path[n - 1],
                          toml_type_name(arr->u.arr.items[i]->type));
                toml_free(expect);
                return -1;
            }
        }
    }
    if (!arr) {
        arr = toml_new(TOML_ARRAY);
        arr->is_array_of_tables = 1;
        toml_table_set(et, path[n - 1], arr);
    }
    toml_value *copy = toml_clone(tab);
    copy->is_inline = 0;
    toml_array_push(arr, copy);

    toml_value *chain[TOML_MAX_DEPTH + 2];
    long got = walk(ed->path, ed->root, path, n - 1, chain, err);
    if (got < 0) {
        toml_free(expect);
        return -1;
    }
    splices sp = VEC_INIT;
    long a = inline_in(chain, (size_t)got);
    const toml_kv *kv = got == (long)n - 1 ? toml_get_kv(chain[got], path[n - 1]) : NULL;
    strbuf sec = SB_INIT;
    if (a >= 0) {
        regen_inline(ed, chain, a, expect, path, &sp);
    } else if (kv && kv->val->is_array_of_tables) {
        toml_emit_section(tab, path, n, true, &sec);
        size_t at = extent_end(ed, kv->val, 0);
        strbuf t = SB_INIT;
        if (at >= ed->text.len) {
            at = ed->text.len;
            if (!ends_with_nl(ed))
                sb_addc(&t, '\n');
            sb_addc(&t, '\n');
            sb_add(&t, sec.buf, sec.len);
        } else {
            sb_add(&t, sec.buf, sec.len);
            sb_addc(&t, '\n');
        }
        add_splice(&sp, at, at, with_nl(ed, &t));
        sb_release(&t);
    } else if (kv) {
        /* a static array of tables: rewrite its value */
        strbuf val = SB_INIT;
        toml_emit_value(arr, &val);
        add_splice(&sp, kv->val->off, kv->val->end, with_nl(ed, &val));
        sb_release(&val);
    } else {
        toml_emit_section(tab, path, n, true, &sec);
        append_section(ed, &sec, &sp);
    }
    sb_release(&sec);
    int r = apply(ed, &sp, expect, path, n, false, err);
    splices_free(&sp);
    toml_free(expect);
    return r;
}

int toml_edit_remove(toml_edit *ed, const char *const *path, size_t n, struct as_err *err)
{
    if (check_path(ed, path, n, err))
        return -1;
    toml_value *chain[TOML_MAX_DEPTH + 2];
    struct as_err ignore = AS_ERR_INIT;
    long got = walk(ed->path, ed->root, path, n - 1, chain, &ignore);
    if (got != (long)n - 1)
        return 0; /* not there (or under a non-table): nothing to remove */
    const toml_kv *kv = toml_get_kv(chain[got], path[n - 1]);
    if (!kv)
        return 0;
    toml_value *expect = toml_clone(ed->root);
    toml_value *echain[TOML_MAX_DEPTH + 2];
    walk(ed->path, expect, path, n - 1, echain, &ignore);
    toml_table_remove(echain[n - 1], path[n - 1]);
    splices sp = VEC_INIT;
    long a = inline_in(chain, (size_t)got);
    if (a >= 0)
        regen_inline(ed, chain, a, expect, path, &sp);
    else
        collect_remove(ed, kv->val, &sp);
    int r = apply(ed, &sp, expect, path, n, a < 0, err);
    splices_free(&sp);
    toml_free(expect);
    return r;
}
