/* diff — what changed between approved bytes and live bytes (docs/trust.md):
 * the approved copy comes from the content store by pin, so a reviewer sees
 * the lines that would change before accepting them. Bounded: files over
 * 1 MiB or that are not UTF-8 text are named, not diffed; the line diff is a
 * common prefix/suffix strip plus an LCS over at most 2000 × 2000 lines (a
 * larger middle is shown as removed + added), and at most TRUST_DIFF_LINES
 * lines are kept per item. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/store.h"
#include "trust/trust.h"

#define DIFF_FILE_MAX ((size_t)1 << 20)
#define DIFF_LCS_MAX 2000
#define DIFF_LINE_CHARS 200
#define DIFF_MAX_FILES 10000

/* ---- listing a tree ------------------------------------------------------- */

static void list_tree(const char *root, const char *rel, int depth, strvec *out)
{
    if (depth > 64 || out->n > DIFF_MAX_FILES)
        return;
    char *dir = rel[0] ? xasprintf("%s/%s", root, rel) : xstrdup(root);
    DIR *d = opendir(dir);
    if (!d) {
        free(dir);
        return;
    }
    strvec names = STRVEC_INIT;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            !digest_code_skipped(e->d_name))
            strvec_push(&names, e->d_name); /* VCS metadata and caches: never pinned */
    closedir(d);
    strvec_sort(&names);
    for (size_t i = 0; i < names.n; i++) {
        char *r = rel[0] ? xasprintf("%s/%s", rel, names.v[i]) : xstrdup(names.v[i]);
        char *full = xasprintf("%s/%s", root, r);
        struct stat st;
        if (lstat(full, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                list_tree(root, r, depth + 1, out);
            else
                strvec_push(out, r);
        }
        free(full);
        free(r);
    }
    strvec_clear(&names);
    free(dir);
}

/* ---- reading text ---------------------------------------------------------- */

static bool utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t k = c < 0x80             ? 0
                   : (c & 0xE0) == 0xC0 ? 1
                   : (c & 0xF0) == 0xE0 ? 2
                   : (c & 0xF8) == 0xF0 ? 3
                                        : 9;
        if (c == 0 || k == 9 || (k == 1 && c < 0xC2) || i + k >= n + (k ? 0 : 1))
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

/* 1 = text read, 0 = absent, -1 = present but not diffable (why set). */
static int read_text(const char *path, strbuf *out, const char **why)
{
    struct stat st;
    if (!path || lstat(path, &st) != 0)
        return 0;
    if (!S_ISREG(st.st_mode)) {
        *why = "not a regular file";
        return -1;
    }
    if ((size_t)st.st_size > DIFF_FILE_MAX) {
        *why = "too large to diff";
        return -1;
    }
    struct as_err err = AS_ERR_INIT;
    if (fs_read_file(path, DIFF_FILE_MAX, 1, out, &err) < 0) {
        *why = "unreadable";
        return -1;
    }
    if (!utf8_ok(out->buf, out->len)) {
        *why = "binary or not UTF-8";
        return -1;
    }
    return 1;
}

struct lines {
    VEC(const char *) s;
    VEC(size_t) n;
};

static void split_lines(const strbuf *b, struct lines *l)
{
    size_t i = 0;
    while (i < b->len) {
        const char *nl = memchr(b->buf + i, '\n', b->len - i);
        size_t n = nl ? (size_t)(nl - (b->buf + i)) : b->len - i;
        vec_push(&l->s, b->buf + i);
        vec_push(&l->n, n);
        i += n + 1;
    }
}

static bool line_eq(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
    return a->n.v[i] == b->n.v[j] && memcmp(a->s.v[i], b->s.v[j], a->n.v[i]) == 0;
}

/* ---- output ------------------------------------------------------------------ */

struct out {
    json_t *lines;
    size_t *budget;
    bool *capped;
    size_t added, removed;
};

static void emit(struct out *o, char sign, const char *s, size_t n)
{
    if (sign == '+')
        o->added++;
    else
        o->removed++;
    if (!*o->budget) {
        *o->capped = true;
        return;
    }
    (*o->budget)--;
    /* Cut long lines on a UTF-8 boundary. */
    size_t cut = n;
    if (cut > DIFF_LINE_CHARS) {
        cut = DIFF_LINE_CHARS;
        while (cut && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--;
    }
    strbuf b = SB_INIT;
    sb_addc(&b, sign);
    sb_add(&b, s, cut);
    if (cut < n)
        sb_adds(&b, "…");
    json_t *j = json_stringn(b.buf, b.len);
    json_array_append_new(o->lines, j ? j : json_string("?"));
    sb_release(&b);
}

static void diff_lines(const struct lines *a, const struct lines *b, struct out *o)
{
    size_t pre = 0, na = a->s.n, nb = b->s.n;
    while (pre < na && pre < nb && line_eq(a, pre, b, pre))
        pre++;
    size_t suf = 0;
    while (suf < na - pre && suf < nb - pre && line_eq(a, na - 1 - suf, b, nb - 1 - suf))
        suf++;
    size_t ma = na - pre - suf, mb = nb - pre - suf;
    if (ma > DIFF_LCS_MAX || mb > DIFF_LCS_MAX || !ma || !mb) {
        for (size_t i = 0; i < ma; i++)
            emit(o, '-', a->s.v[pre + i], a->n.v[pre + i]);
        for (size_t j = 0; j < mb; j++)
            emit(o, '+', b->s.v[pre + j], b->n.v[pre + j]);
        return;
    }
    /* LCS table over the middle, walked forward. */
    uint16_t *t = xcalloc((ma + 1) * (mb + 1), sizeof *t);
#define T(i, j) t[(size_t)(i) * (mb + 1) + (size_t)(j)]
    for (size_t i = ma; i-- > 0;)
        for (size_t j = mb; j-- > 0;)
            T(i, j) = line_eq(a, pre + i, b, pre + j)
                          ? (uint16_t)(T(i + 1, j + 1) + 1)
                          : (T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1));
    size_t i = 0, j = 0;
    while (i < ma || j < mb) {
        if (i < ma && j < mb && line_eq(a, pre + i, b, pre + j)) {
            i++;
            j++;
        } else if (i < ma && (j == mb || T(i + 1, j) >= T(i, j + 1))) {
            emit(o, '-', a->s.v[pre + i], a->n.v[pre + i]);
            i++;
        } else {
            emit(o, '+', b->s.v[pre + j], b->n.v[pre + j]);
            j++;
        }
    }
#undef T
    free(t);
}

/* One file: approved at ap (or NULL), live at lp (or NULL). Appends an entry
 * to files when they differ. */
static void diff_file(const char *display, const char *ap, const char *lp, json_t *files,
                      size_t *budget, bool *capped)
{
    strbuf a = SB_INIT, b = SB_INIT;
    const char *wa = NULL, *wb = NULL;
    int ra = read_text(ap, &a, &wa), rb = read_text(lp, &b, &wb);
    if (ra == 1 && rb == 1 && a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0)
        goto out;
    if (ra == 0 && rb == 0)
        goto out;
    json_t *f = json_object();
    json_t *p = json_string(display);
    json_object_set_new(f, "path", p ? p : json_string("(non-UTF-8 name)"));
    const char *change = ra == 0 ? "added" : rb == 0 ? "removed" : "modified";
    json_object_set_new(f, "change", json_string(change));
    struct out o = {json_array(), budget, capped, 0, 0};
    if (ra < 0 || rb < 0) {
        json_object_set_new(f, "note", json_string(ra < 0 ? wa : wb));
    } else {
        struct lines la = {0}, lb = {0};
        split_lines(&a, &la);
        split_lines(&b, &lb);
        diff_lines(&la, &lb, &o);
        vec_free(&la.s);
        vec_free(&la.n);
        vec_free(&lb.s);
        vec_free(&lb.n);
    }
    json_object_set_new(f, "added", json_integer((json_int_t)o.added));
    json_object_set_new(f, "removed", json_integer((json_int_t)o.removed));
    json_object_set_new(f, "lines", o.lines);
    json_array_append_new(files, f);
out:
    sb_release(&a);
    sb_release(&b);
}

static void headline(json_t *d)
{
    json_t *files = json_object_get(d, "files");
    long long add = 0, rem = 0;
    for (size_t i = 0; i < json_array_size(files); i++) {
        add += json_integer_value(json_object_get(json_array_get(files, i), "added"));
        rem += json_integer_value(json_object_get(json_array_get(files, i), "removed"));
    }
    strbuf h = SB_INIT;
    size_t n = json_array_size(files);
    if (n)
        sb_addf(&h, "%zu file%s changed, +%lld −%lld line%s", n, n == 1 ? "" : "s", add, rem,
                add + rem == 1 ? "" : "s");
    else
        sb_adds(&h, "the bytes differ, but no file's text does");
    json_object_set_new(d, "headline", json_string(h.buf));
    sb_release(&h);
}

json_t *trust_diff_new(void)
{
    json_t *d = json_object();
    json_object_set_new(d, "status", json_string("unchanged"));
    json_object_set_new(d, "headline", json_string("no change"));
    json_object_set_new(d, "files", json_array());
    json_object_set_new(d, "capped", json_false());
    return d;
}

int trust_diff_add(json_t *d, const char *home, int store_kind, const char *approved_pin,
                   const char *current_pin, const char *live_path, const char *display,
                   size_t *budget)
{
    bool tree = store_kind != STORE_FILE;
    if (!approved_pin || (current_pin && strcmp(approved_pin, current_pin) == 0))
        return 0;
    const char *status = json_string_value(json_object_get(d, "status"));
    strbuf ap = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int have = home ? store_open(home, approved_pin, (enum store_kind)store_kind, &ap, &err) : 0;
    if (have != 1) {
        json_object_set_new(d, "status", json_string("no_snapshot"));
        char *h = have < 0 ? xasprintf("no snapshot of the approved bytes (%s)", err.msg)
                           : xasprintf("no snapshot of the approved bytes %.12s in the content "
                                       "store",
                                       approved_pin);
        json_object_set_new(d, "headline", json_string(h));
        free(h);
        sb_release(&ap);
        return 0;
    }
    if (status && strcmp(status, "no_snapshot") == 0) {
        sb_release(&ap);
        return 0; /* one missing snapshot makes the whole item unshowable */
    }
    json_object_set_new(d, "status", json_string("changed"));
    json_t *files = json_object_get(d, "files");
    bool capped = json_is_true(json_object_get(d, "capped"));
    if (tree) {
        strvec fa = STRVEC_INIT, fb = STRVEC_INIT;
        list_tree(ap.buf, "", 0, &fa);
        if (live_path)
            list_tree(live_path, "", 0, &fb);
        size_t i = 0, j = 0;
        while (i < fa.n || j < fb.n) {
            int c = i == fa.n ? 1 : j == fb.n ? -1 : strcmp(fa.v[i], fb.v[j]);
            const char *rel = c <= 0 ? fa.v[i] : fb.v[j];
            char *a = c <= 0 ? xasprintf("%s/%s", ap.buf, rel) : NULL;
            char *b = c >= 0 ? xasprintf("%s/%s", live_path, rel) : NULL;
            char *disp = xasprintf("%s/%s", display, rel);
            diff_file(disp, a, b, files, budget, &capped);
            free(a);
            free(b);
            free(disp);
            if (c <= 0)
                i++;
            if (c >= 0)
                j++;
        }
        strvec_clear(&fa);
        strvec_clear(&fb);
    } else {
        diff_file(display, ap.buf, live_path, files, budget, &capped);
    }
    json_object_set_new(d, "capped", json_boolean(capped));
    headline(d);
    sb_release(&ap);
    return 1;
}

void trust_diff_render(const json_t *d, const char *indent, strbuf *out)
{
    const char *status = json_string_value(json_object_get(d, "status"));
    if (!status || strcmp(status, "unchanged") == 0)
        return;
    const char *h = json_string_value(json_object_get(d, "headline"));
    sb_addf(out, "%s", indent);
    if (strcmp(status, "no_snapshot") == 0)
        sb_adds(out, "no snapshot — ");
    term_sanitize(out, h ? h : "", h ? strlen(h) : 0);
    sb_addc(out, '\n');
    json_t *files = json_object_get(d, "files");
    for (size_t i = 0; i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        const char *p = json_string_value(json_object_get(f, "path"));
        const char *ch = json_string_value(json_object_get(f, "change"));
        const char *note = json_string_value(json_object_get(f, "note"));
        sb_addf(out, "%s  %s ", indent, ch ? ch : "?");
        term_sanitize(out, p ? p : "", p ? strlen(p) : 0);
        if (note)
            sb_addf(out, " (%s)", note);
        sb_addc(out, '\n');
        json_t *ls = json_object_get(f, "lines");
        for (size_t k = 0; k < json_array_size(ls); k++) {
            const char *l = json_string_value(json_array_get(ls, k));
            sb_addf(out, "%s    ", indent);
            term_sanitize(out, l ? l : "", l ? strlen(l) : 0);
            sb_addc(out, '\n');
        }
    }
    if (json_is_true(json_object_get(d, "capped")))
        sb_addf(out, "%s  … more lines not shown (limit %d)\n", indent, TRUST_DIFF_LINES);
}
