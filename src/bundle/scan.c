/* scan — hidden Unicode and prompt-injection heuristics over bundle content.
 * See scan.h. One forward pass decodes UTF-8 and tracks line/column; each
 * finished line is handed to the heuristics, which only look at bounded
 * windows around the words they found. */
#include "bundle/scan.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "bundle/lockfile.h"
#include "bundle/skill_md.h"

#define SNIPPET_BYTES 40
#define NEAR_CHARS 120

void scan_report_init(struct scan_report *r)
{
    memset(r, 0, sizeof *r);
}

void scan_report_free(struct scan_report *r)
{
    for (size_t i = 0; i < r->v.n; i++) {
        struct scan_finding *f = &r->v.v[i];
        free(f->item);
        free(f->file);
        free(f->message);
        free(f->snippet);
        free(f->fix);
    }
    vec_free(&r->v);
    strvec_clear(&r->notes);
    memset(r, 0, sizeof *r);
}

/* ---- the hidden set ------------------------------------------------------ */

/* Label of a code point that is hidden from readers, or NULL: the one set
 * the terminal display also escapes (base/term.h). */
static const char *hidden_label(uint32_t cp)
{
    return term_hidden_label(cp);
}

static bool is_variation_selector(uint32_t cp)
{
    return (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE0100 && cp <= 0xE01EF);
}

/* A snippet shows what a reader cannot see the way every display does. */
static void escape_text(const char *s, size_t n, strbuf *out)
{
    term_sanitize(out, s, n);
}

/* ---- findings ------------------------------------------------------------ */

struct file_ctx {
    struct scan_report *r;
    const char *item, *file;
    const char *data;
    size_t len;
    size_t in_file;    /* findings recorded for this file */
    size_t suppressed; /* findings past the per-file cap */
};

/* The snippet around byte off of the line [ls, le). */
static char *snippet_at(const struct file_ctx *c, size_t ls, size_t le, size_t off, size_t span)
{
    const unsigned char *d = (const unsigned char *)c->data;
    size_t a = off > ls + SNIPPET_BYTES ? off - SNIPPET_BYTES : ls;
    size_t b = off + span + SNIPPET_BYTES < le ? off + span + SNIPPET_BYTES : le;
    while (a > ls && (d[a] & 0xC0) == 0x80)
        a--;
    while (b < le && (d[b] & 0xC0) == 0x80)
        b++;
    strbuf sb = SB_INIT;
    if (a > ls)
        sb_adds(&sb, "…");
    escape_text(c->data + a, b - a, &sb);
    if (b < le)
        sb_adds(&sb, "…");
    sb_rtrim(&sb);
    return sb_detach(&sb, NULL);
}

static void add_finding(struct file_ctx *c, enum scan_severity sev, unsigned line, unsigned col,
                        uint32_t cp, char *message, char *snippet, const char *fix)
{
    struct scan_report *r = c->r;
    if (sev == SCAN_HIGH)
        r->high++;
    else
        r->warn++;
    if (c->in_file >= SCAN_MAX_FINDINGS_PER_FILE) {
        c->suppressed++;
        free(message);
        free(snippet);
        return;
    }
    c->in_file++;
    struct scan_finding f = {
        .sev = sev,
        .item = c->item ? xstrdup(c->item) : NULL,
        .file = xstrdup(c->file),
        .line = line,
        .col = col,
        .cp = cp,
        .message = message,
        .snippet = snippet ? snippet : xstrdup(""),
        .fix = xstrdup(fix),
    };
    vec_push(&r->v, f);
}

static const char *hidden_fix(uint32_t cp)
{
    if (cp >= 0xE0000 && cp <= 0xE007F)
        return "delete the tag characters: they spell out text that agents read and people "
               "cannot see";
    if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
        return "delete the bidi control: it makes the text display in a different order than "
               "agents read it";
    return "delete the invisible character (if it is wanted, write it visibly, e.g. as an "
           "HTML entity or a \\u escape)";
}

/* ---- heuristics (one line at a time) ------------------------------------- */

/* Matches phrase (lowercase, ' ' = one or more whitespace) at lo[i]. Returns
 * the end offset, or 0. */
static size_t phrase_at(const char *lo, size_t n, size_t i, const char *phrase)
{
    size_t j = i;
    for (const char *p = phrase; *p; p++) {
        if (*p == ' ') {
            if (j >= n || !isspace((unsigned char)lo[j]))
                return 0;
            while (j < n && isspace((unsigned char)lo[j]))
                j++;
            continue;
        }
        if (j >= n || lo[j] != *p)
            return 0;
        j++;
    }
    return j;
}

static bool word_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* Next match of phrase at or after *from; with words set the match must not
 * sit inside a longer word. Returns the start or (size_t)-1. */
static size_t find_phrase(const char *lo, size_t n, size_t from, const char *phrase, bool words,
                          size_t *end)
{
    char first = phrase[0];
    size_t i = from;
    while (i < n) {
        const char *hit = memchr(lo + i, first, n - i);
        if (!hit)
            break;
        i = (size_t)(hit - lo);
        size_t e = phrase_at(lo, n, i, phrase);
        if (e && !(words && ((i > 0 && word_char(lo[i - 1])) || (e < n && word_char(lo[e]))))) {
            *end = e;
            return i;
        }
        i++;
    }
    return (size_t)-1;
}

typedef VEC(size_t) posvec;

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Every start of each phrase in the line, sorted; capped so a hostile line
 * cannot make the list quadratic in memory. */
static void collect(const char *lo, size_t n, const char *const *phrases, bool words, posvec *out)
{
    for (size_t k = 0; phrases[k]; k++) {
        size_t from = 0, e;
        while (out->n < 4096) {
            size_t s = find_phrase(lo, n, from, phrases[k], words, &e);
            if (s == (size_t)-1)
                break;
            vec_push(out, s);
            from = s + 1;
        }
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_size);
}

/* 1 if some position in v lies within [lo_b, hi_b]. */
static bool any_within(const posvec *v, size_t lo_b, size_t hi_b)
{
    size_t a = 0, b = v->n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (v->v[m] < lo_b)
            a = m + 1;
        else
            b = m;
    }
    return a < v->n && v->v[a] <= hi_b;
}

/* Column (1-based, in code points) of byte off in the line starting at ls. */
static unsigned col_of(const char *data, size_t ls, size_t off)
{
    unsigned col = 1;
    for (size_t i = ls; i < off; i++)
        if (((unsigned char)data[i] & 0xC0) != 0x80)
            col++;
    return col;
}

struct heur {
    const char *label;
    const char *const *phrases;
    bool words;
};

static const char *const p_override[] = {"ignore all previous instructions",
                                         "ignore previous instructions",
                                         "ignore all prior instructions",
                                         "ignore prior instructions",
                                         "ignore the previous instructions",
                                         "disregard the above",
                                         "disregard all previous instructions",
                                         "disregard previous instructions",
                                         NULL};
static const char *const p_conceal[] = {"do not tell the user", "don't tell the user",
                                        "dont tell the user", "without telling the user", NULL};
static const char *const p_exfil[] = {"exfiltrat", NULL};
static const char *const p_consent[] = {"without the user's consent",
                                        "without the user\xe2\x80\x99s consent",
                                        "without the users consent", "without user consent", NULL};
static const struct heur heuristics[] = {
    {"instruction override", p_override, false},
    {"concealment from the user", p_conceal, false},
    {"exfiltration language", p_exfil, false},
    {"acting without user consent", p_consent, false},
};

static const char *const p_verbs[] = {"read",  "cat",   "copy", "cp",       "upload", "send",
                                      "curl",  "wget",  "post", "scp",      "rsync",  "print",
                                      "dump",  "share", "leak", "transmit", "email",  "base64",
                                      "fetch", "exfil", NULL};
static const char *const p_urls[] = {"http://", "https://", NULL};

static const char *const heur_fix =
    "review this text: if it is meant for people, reword it; warnings never block delivery";

static void sensitive_positions(const char *lo, size_t n, posvec *out, posvec *ends)
{
    static const char *const plain[] = {"~/.ssh", "id_rsa", NULL};
    for (size_t k = 0; plain[k]; k++) {
        size_t from = 0, e;
        while (out->n < 4096) {
            size_t s = find_phrase(lo, n, from, plain[k], false, &e);
            if (s == (size_t)-1)
                break;
            vec_push(out, s);
            vec_push(ends, e);
            from = s + 1;
        }
    }
    /* ".env" not inside an identifier (process.env is code, not a file) */
    size_t from = 0, e;
    while (out->n < 4096) {
        size_t s = find_phrase(lo, n, from, ".env", false, &e);
        if (s == (size_t)-1)
            break;
        from = s + 1;
        if (s > 0 && (word_char(lo[s - 1]) || lo[s - 1] == '.'))
            continue;
        if (e < n && isalpha((unsigned char)lo[e]))
            continue;
        vec_push(out, s);
        vec_push(ends, e);
    }
    static const char *const words[] = {"secret", "secrets", NULL};
    for (size_t k = 0; words[k]; k++) {
        from = 0;
        while (out->n < 4096) {
            size_t s = find_phrase(lo, n, from, words[k], true, &e);
            if (s == (size_t)-1)
                break;
            vec_push(out, s);
            vec_push(ends, e);
            from = s + 1;
        }
    }
}

static void heuristics_line(struct file_ctx *c, unsigned line, size_t ls, size_t le, strbuf *lo)
{
    size_t n = le - ls;
    if (!n)
        return;
    sb_reset(lo);
    sb_add(lo, c->data + ls, n);
    for (size_t i = 0; i < n; i++)
        lo->buf[i] = (char)tolower((unsigned char)lo->buf[i]);
    for (size_t h = 0; h < sizeof heuristics / sizeof *heuristics; h++) {
        posvec v = VEC_INIT;
        collect(lo->buf, n, heuristics[h].phrases, heuristics[h].words, &v);
        if (v.n) {
            size_t s = v.v[0];
            add_finding(c, SCAN_WARN, line, col_of(c->data, ls, ls + s), 0,
                        xasprintf("prompt-injection heuristic: %s", heuristics[h].label),
                        snippet_at(c, ls, le, ls + s, 0), heur_fix);
        }
        vec_free(&v);
    }
    posvec sens = VEC_INIT, sens_end = VEC_INIT;
    sensitive_positions(lo->buf, n, &sens, &sens_end);
    if (sens.n) {
        posvec verbs = VEC_INIT, urls = VEC_INIT;
        collect(lo->buf, n, p_verbs, true, &verbs);
        collect(lo->buf, n, p_urls, false, &urls);
        bool touch = false, url = false;
        size_t at_touch = 0, at_url = 0;
        for (size_t i = 0; i < sens.n && !(touch && url); i++) {
            size_t s = sens.v[i], e = sens_end.v[i];
            size_t lo_b = s > NEAR_CHARS ? s - NEAR_CHARS : 0;
            if (!any_within(&verbs, lo_b, e + NEAR_CHARS))
                continue;
            if (!touch) {
                touch = true;
                at_touch = s;
            }
            if (!url && any_within(&urls, e, e + NEAR_CHARS)) {
                url = true;
                at_url = s;
            }
        }
        if (url)
            add_finding(c, SCAN_WARN, line, col_of(c->data, ls, ls + at_url), 0,
                        xstrdup("prompt-injection heuristic: sensitive data directed at a URL"),
                        snippet_at(c, ls, le, ls + at_url, 0), heur_fix);
        else if (touch)
            add_finding(c, SCAN_WARN, line, col_of(c->data, ls, ls + at_touch), 0,
                        xstrdup("prompt-injection heuristic: touches sensitive files (~/.ssh, "
                                ".env, id_rsa, secrets)"),
                        snippet_at(c, ls, le, ls + at_touch, 0), heur_fix);
        vec_free(&verbs);
        vec_free(&urls);
    }
    vec_free(&sens);
    vec_free(&sens_end);
}

/* ---- the pass ------------------------------------------------------------ */

static void scan_pass(struct file_ctx *c)
{
    const unsigned char *d = (const unsigned char *)c->data;
    size_t n = c->len, i = 0, ls = 0;
    unsigned line = 1, col = 1;
    bool invalid_seen = false;
    /* the current run of one hidden label */
    const char *run_label = NULL;
    uint32_t run_cp = 0;
    unsigned run_line = 0, run_col = 0, run_count = 0;
    size_t run_off = 0, run_ls = 0;
    unsigned vs_run = 0;
    size_t vs_off = 0;
    unsigned vs_col = 0;
    bool vs_reported_line = false;
    strbuf lo = SB_INIT;
    const unsigned char *nl = n ? memchr(d, '\n', n) : NULL;
    size_t le_cur = nl ? (size_t)(nl - d) : n; /* end of the current line, found once */

#define FLUSH_RUN(le)                                                                              \
    do {                                                                                           \
        if (run_label) {                                                                           \
            char *msg = run_count > 1 ? xasprintf("hidden unicode U+%04X (%s) — %u in a row",      \
                                                  (unsigned)run_cp, run_label, run_count)          \
                                      : xasprintf("hidden unicode U+%04X (%s)", (unsigned)run_cp,  \
                                                  run_label);                                      \
            add_finding(c, SCAN_HIGH, run_line, run_col, run_cp, msg,                              \
                        snippet_at(c, run_ls, (le), run_off, 0), hidden_fix(run_cp));              \
            run_label = NULL;                                                                      \
        }                                                                                          \
    } while (0)

    while (i < n) {
        if (d[i] == '\n') {
            size_t le = i;
            FLUSH_RUN(le);
            heuristics_line(c, line, ls, le, &lo);
            line++;
            col = 1;
            i++;
            ls = i;
            nl = i < n ? memchr(d + i, '\n', n - i) : NULL;
            le_cur = nl ? (size_t)(nl - d) : n;
            vs_run = 0;
            vs_reported_line = false;
            continue;
        }
        unsigned cp;
        size_t l = utf8_decode(d + i, n - i, &cp);
        if (!l) {
            if (!invalid_seen) {
                invalid_seen = true;
                size_t le = le_cur;
                add_finding(c, SCAN_HIGH, line, col, 0,
                            xasprintf("invalid UTF-8 (byte 0x%02X) — the file cannot be verified "
                                      "as text",
                                      d[i]),
                            snippet_at(c, ls, le, i, 1),
                            "re-save the file as UTF-8 (or give it a binary extension if it is "
                            "not text)");
            }
            i++;
            col++;
            continue;
        }
        const char *label = hidden_label(cp);
        if (cp == 0xFEFF && i == 0)
            label = NULL; /* byte-order mark */
        if (label) {
            if (run_label && strcmp(run_label, label) != 0)
                FLUSH_RUN(le_cur);
            if (!run_label) {
                run_label = label;
                run_cp = cp;
                run_line = line;
                run_col = col;
                run_count = 0;
                run_off = i;
                run_ls = ls;
            }
            run_count++;
        } else if (run_label) {
            FLUSH_RUN(le_cur);
        }
        if (is_variation_selector(cp)) {
            if (vs_run++ == 0) {
                vs_off = i;
                vs_col = col;
            }
            if (vs_run == 2 && !vs_reported_line) {
                vs_reported_line = true;
                size_t le = le_cur;
                add_finding(
                    c, SCAN_HIGH, line, vs_col, cp,
                    xasprintf("hidden unicode U+%04X (variation selector run)", (unsigned)cp),
                    snippet_at(c, ls, le, vs_off, 0),
                    "delete the repeated variation selectors: a run of them can carry "
                    "hidden data");
            }
        } else {
            vs_run = 0;
        }
        i += l;
        col++;
    }
    FLUSH_RUN(n);
    heuristics_line(c, line, ls, n, &lo);
#undef FLUSH_RUN
    sb_release(&lo);
    if (c->suppressed) {
        c->in_file = 0; /* let the summary through */
        struct scan_report *r = c->r;
        size_t h = r->high, w = r->warn;
        add_finding(c, SCAN_HIGH, 0, 0, 0,
                    xasprintf("%zu more findings in this file not listed", c->suppressed), NULL,
                    "fix the findings above, then scan again");
        r->high = h; /* the suppressed ones were already counted */
        r->warn = w;
    }
}

void scan_buffer(const char *item, const char *file, const char *data, size_t len,
                 struct scan_report *r)
{
    struct file_ctx c = {r, item, file, data, len, 0, 0};
    r->files++;
    scan_pass(&c);
}

/* ---- files and trees ----------------------------------------------------- */

static bool binary_extension(const char *name)
{
    static const char *const exts[] = {
        "png",  "jpg",   "jpeg",   "gif", "webp", "ico",  "bmp",   "tif", "tiff", "pdf",
        "zip",  "gz",    "tgz",    "bz2", "xz",   "zst",  "7z",    "tar", "jar",  "whl",
        "so",   "dylib", "dll",    "exe", "bin",  "wasm", "class", "pyc", "o",    "a",
        "woff", "woff2", "ttf",    "otf", "eot",  "mp3",  "mp4",   "wav", "ogg",  "mov",
        "avi",  "webm",  "sqlite", "db",  "psd",  "heic", "avif",  NULL};
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return false;
    for (size_t i = 0; exts[i]; i++)
        if (strcasecmp(dot + 1, exts[i]) == 0)
            return true;
    return false;
}

static void add_file_finding(struct scan_report *r, const char *item, const char *display,
                             char *msg, const char *fix)
{
    struct file_ctx c = {r, item, display, "", 0, 0, 0};
    add_finding(&c, SCAN_HIGH, 0, 0, 0, msg, NULL, fix);
}

int scan_file(const char *item, const char *path, const char *display, struct scan_report *r,
              struct as_err *err)
{
    if (binary_extension(path)) {
        r->skipped++;
        return 0;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP) {
            add_file_finding(r, item, display, xstrdup("symlink — content must be regular files"),
                             "replace the symlink with the file it points to");
            return 0;
        }
        return as_err_errno(err, "cannot read %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return as_err_errno(err, "cannot read %s", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        add_file_finding(r, item, display,
                         xstrdup("not a regular file — content must be regular files"),
                         "remove the special file from the content");
        return 0;
    }
    if ((size_t)st.st_size > SCAN_MAX_FILE_BYTES) {
        close(fd);
        add_file_finding(
            r, item, display,
            xasprintf("file is larger than %zu bytes and cannot be scanned", SCAN_MAX_FILE_BYTES),
            "split the file, or give it a binary extension if it is not text");
        return 0;
    }
    close(fd);
    strbuf b = SB_INIT;
    if (fs_read_file(path, SCAN_MAX_FILE_BYTES, 1, &b, err) < 0) {
        sb_release(&b);
        return -1;
    }
    size_t probe = b.len < SCAN_BINARY_PROBE ? b.len : SCAN_BINARY_PROBE;
    if (memchr(b.buf, '\0', probe)) {
        r->skipped++;
    } else {
        scan_buffer(item, display, b.buf, b.len, r);
    }
    sb_release(&b);
    return 0;
}

struct tree_ctx {
    struct scan_report *r;
    const char *item;
    const char *prefix;
};

static int tree_cb(const struct fs_entry *e, void *vctx, struct as_err *err)
{
    struct tree_ctx *t = vctx;
    const char *slash = strrchr(e->rel, '/');
    const char *base = slash ? slash + 1 : e->rel;
    if (S_ISDIR(e->mode))
        return strcmp(base, ".git") == 0 ? 1 : 0;
    if (strcmp(base, ".git") == 0)
        return 0; /* a worktree's .git file */
    char *display = e->rel[0] ? xasprintf("%s/%s", t->prefix, e->rel) : xstrdup(t->prefix);
    int rc = 0;
    if (S_ISLNK(e->mode))
        add_file_finding(t->r, t->item, display, xstrdup("symlink — content must be regular files"),
                         "replace the symlink with the file it points to");
    else if (!S_ISREG(e->mode))
        add_file_finding(t->r, t->item, display,
                         xstrdup("not a regular file — content must be regular files"),
                         "remove the special file from the content");
    else
        rc = scan_file(t->item, e->path, display, t->r, err);
    free(display);
    return rc;
}

int scan_tree(const char *item, const char *dir, const char *display_prefix, struct scan_report *r,
              struct as_err *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return as_err_errno(err, "cannot read %s", dir);
    if (!S_ISDIR(st.st_mode))
        return scan_file(item, dir, display_prefix, r, err);
    struct tree_ctx t = {r, item, display_prefix};
    return fs_walk(dir, SKILL_MAX_DEPTH, tree_cb, &t, err);
}

/* ---- the bundle ---------------------------------------------------------- */

static char *display_for(const struct manifest *m, const char *path)
{
    const char *root = m->project_root;
    size_t rl = root ? strlen(root) : 0;
    if (rl && strncmp(path, root, rl) == 0 && path[rl] == '/')
        return xstrdup(path + rl + 1);
    return xstrdup(path);
}

static void note(struct scan_report *r, const char *item, const char *why)
{
    strvec_pushf(&r->notes, "%s not scanned: %s", item, why);
}

/* The manifest's own strings (commands, args, paths, names, URLs): the
 * loader found the ones holding a hidden character or a control; each is a
 * High finding at the value's file:line:col. */
static void scan_manifest_values(const struct manifest *m, struct scan_report *r)
{
    for (size_t i = 0; i < m->hidden.n; i++) {
        const struct mf_hidden *h = &m->hidden.v[i];
        const char *label = term_hidden_label(h->cp);
        char *disp = display_for(m, h->pos.file ? h->pos.file : m->path);
        struct file_ctx c = {r, "manifest", disp, "", 0, 0, 0};
        strbuf snip = SB_INIT;
        size_t n = strlen(h->value);
        escape_text(h->value, n > 120 ? 120 : n, &snip);
        if (n > 120)
            sb_adds(&snip, "…");
        char *msg = label ? xasprintf("hidden unicode U+%04X (%s) in manifest value `%s`",
                                      (unsigned)h->cp, label, h->where)
                          : xasprintf("control character U+%04X in manifest value `%s`",
                                      (unsigned)h->cp, h->where);
        add_finding(&c, SCAN_HIGH, h->pos.line ? h->pos.line : 1, h->pos.col ? h->pos.col : 1,
                    h->cp, msg, sb_detach(&snip, NULL),
                    label ? "delete the character from the manifest: what is reviewed must be "
                            "what runs, and a reviewer cannot see it"
                          : "delete the control character from the manifest value");
        free(disp);
    }
    if (m->hidden_more) {
        struct file_ctx c = {r, "manifest", m->path, "", 0, 0, 0};
        add_finding(
            &c, SCAN_HIGH, 0, 0, 0,
            xasprintf("%zu more manifest values with hidden characters not listed", m->hidden_more),
            NULL, "fix the findings above, then scan again");
        r->high += m->hidden_more - 1;
    }
}

int scan_bundle_lib(const struct manifest *m, const char *home, pin_library_fn library,
                    void *library_ctx, struct scan_report *r, struct as_err *err)
{
    scan_manifest_values(m, r);
    pin_items items = VEC_INIT;
    /* The same resolution lock uses, so what is scanned is what gets pinned. */
    struct pin_opts o = {.home = home, .library = library, .library_ctx = library_ctx};
    if (pin_collect(m, &o, &items, err) < 0) {
        pin_items_free(&items);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < items.n && rc == 0; i++) {
        const struct pin_item *it = &items.v[i];
        if (it->kind != PIN_SKILL && it->kind != PIN_INSTRUCTION && it->kind != PIN_VARIANT)
            continue;
        char *item = it->kind == PIN_SKILL     ? xasprintf("skill '%s'", it->name)
                     : it->kind == PIN_VARIANT ? xasprintf("instruction '%s' variant", it->name)
                                               : xasprintf("instruction '%s'", it->name);
        if (it->state != PIN_OK || !it->fs_path) {
            note(r, item, it->error ? it->error : "not available on this machine");
        } else {
            char *disp = display_for(m, it->fs_path);
            struct as_err e2 = AS_ERR_INIT;
            if (scan_tree(item, it->fs_path, disp, r, &e2) < 0)
                note(r, item, e2.msg);
            free(disp);
        }
        free(item);
    }
    for (size_t i = 0; i < m->extensions.n; i++) {
        const struct mf_extension *x = &m->extensions.v[i];
        char *item = xasprintf("extension '%s'", x->name);
        char *p = NULL;
        const char *why = "not available on this machine";
        if (x->source == MF_SOURCE_PATH && x->path) {
            p = x->path[0] == '/' ? xstrdup(x->path) : xasprintf("%s/%s", m->manifest_dir, x->path);
        } else {
            /* Library and cached git sources: where pin_collect found them. */
            for (size_t k = 0; k < items.n && !p; k++) {
                const struct pin_item *it = &items.v[k];
                if (it->kind != PIN_EXTENSION || strcmp(it->name, x->name) != 0)
                    continue;
                if (it->state == PIN_OK && it->fs_path)
                    p = xstrdup(it->fs_path);
                else if (it->error)
                    why = it->error;
            }
        }
        if (!p) {
            note(r, item, why);
        } else {
            char *disp = display_for(m, p);
            struct as_err e2 = AS_ERR_INIT;
            if (scan_tree(item, p, disp, r, &e2) < 0)
                note(r, item, e2.msg);
            free(disp);
            free(p);
        }
        free(item);
    }
    pin_items_free(&items);
    return rc;
}

int scan_bundle(const struct manifest *m, const char *home, struct scan_report *r,
                struct as_err *err)
{
    return scan_bundle_lib(m, home, NULL, NULL, r, err);
}

/* ---- rendering ----------------------------------------------------------- */

void scan_finding_format(const struct scan_finding *f, strbuf *out)
{
    if (f->line)
        sb_addf(out, "%s:%u:%u %s", f->file, f->line, f->col, f->message);
    else
        sb_addf(out, "%s %s", f->file, f->message);
    if (f->snippet && f->snippet[0])
        sb_addf(out, " — \"%s\"", f->snippet);
}

json_t *scan_finding_json(const struct scan_finding *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "severity", json_string(f->sev == SCAN_HIGH ? "high" : "warn"));
    json_object_set_new(o, "item", f->item ? json_string(f->item) : json_null());
    json_object_set_new(o, "file", json_string(f->file));
    json_object_set_new(o, "line", json_integer(f->line));
    json_object_set_new(o, "col", json_integer(f->col));
    if (f->cp) {
        char cp[16];
        snprintf(cp, sizeof cp, "U+%04X", (unsigned)f->cp);
        json_object_set_new(o, "code_point", json_string(cp));
    } else {
        json_object_set_new(o, "code_point", json_null());
    }
    json_object_set_new(o, "message", json_string(f->message));
    json_object_set_new(o, "snippet", json_string(f->snippet ? f->snippet : ""));
    json_object_set_new(o, "fix", json_string(f->fix));
    return o;
}

json_t *scan_report_json(const struct scan_report *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->v.n; i++)
        json_array_append_new(a, scan_finding_json(&r->v.v[i]));
    return a;
}
