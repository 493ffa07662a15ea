/*
 * Manifest loading: bounded reads, TOML parse, the overlay deep-merge with
 * per-value origin, the machine layer, and the model's lookups and lifetime.
 */
#include "bundle/manifest.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "base/suggest.h"
#include "bundle/home.h"
#include "bundle/manifest_int.h"

static void index_build(struct manifest *m);
static void index_free(struct mf_index *ix);

/* ---- small shared helpers ------------------------------------------------ */

const char *mf_did_you_mean(const char *word, const char *const *cands)
{
    return suggest_closest(word, cands, SUGGEST_NULL_TERMINATED);
}

char *mf_table_name(const char *parent, const char *key)
{
    strbuf sb = SB_INIT;
    if (parent && *parent) {
        sb_adds(&sb, parent);
        sb_addc(&sb, '.');
    }
    toml_emit_key(key, &sb);
    return sb_detach(&sb, NULL);
}

void mf_diag_add(mf_diags *d, enum mf_severity sev, struct mf_pos pos, const char *fix,
                 const char *fmt, ...)
{
    struct mf_diag g = {sev, NULL, fix ? xstrdup(fix) : NULL, pos};
    strbuf sb = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&sb, fmt, ap);
    va_end(ap);
    g.msg = sb_detach(&sb, NULL);
    vec_push(d, g);
}

void mf_diags_free(mf_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].msg);
        free(d->v[i].fix);
    }
    vec_free(d);
}

void mf_diag_message(const struct mf_diag *d, strbuf *out)
{
    if (d->pos.file && d->pos.line)
        sb_addf(out, "%s:%u:%u: ", d->pos.file, d->pos.line, d->pos.col ? d->pos.col : 1);
    else if (d->pos.file)
        sb_addf(out, "%s: ", d->pos.file);
    sb_adds(out, d->msg);
}

void mf_diag_format(const struct mf_diag *d, strbuf *out)
{
    mf_diag_message(d, out);
    if (d->fix)
        sb_addf(out, "\n  %s", d->fix);
}

int mf_diag_to_err(const struct mf_diag *d, struct as_err *err)
{
    as_err_at(err, d->pos.file ? d->pos.file : "", d->pos.line, d->pos.col, "%s", d->msg);
    if (!d->pos.file)
        err->path[0] = '\0';
    as_err_hint(err, "%s" MF_RECHECK, d->fix ? d->fix : "correct the value");
    return -1;
}

/* ---- overlay origin ------------------------------------------------------- */

static int ptr_cmp(const void *a, const void *b)
{
    const toml_value *x = *(const toml_value *const *)a, *y = *(const toml_value *const *)b;
    return x < y ? -1 : x > y;
}

const char *mf_origin_file(const struct mf_origin *o, const toml_value *v, const char *inherited)
{
    if (!o || !o->n)
        return inherited;
    if (bsearch(&v, o->v, o->n, sizeof o->v[0], ptr_cmp))
        return o->overlay_file;
    return inherited;
}

/* Deep-merges ovl into base: tables merge recursively, any
 * other value — arrays and arrays of tables included — is replaced, new
 * keys append. Moved values are clones whose positions point into the
 * overlay; their roots are recorded so positions can name the right file. */
static void merge(toml_value *base, const toml_value *ovl, struct mf_origin *o)
{
    for (size_t i = 0; i < toml_len(ovl); i++) {
        const toml_kv *okv = toml_entry(ovl, i);
        toml_value *b = toml_get(base, okv->key);
        if (b && b->type == TOML_TABLE && okv->val->type == TOML_TABLE) {
            merge(b, okv->val, o);
            continue;
        }
        toml_value *c = toml_clone(okv->val);
        toml_table_set(base, okv->key, c);
        /* The key now reads from the overlay: point its position there. Only
         * line/col change, which the table's key index does not cover. */
        toml_kv *bkv = (toml_kv *)toml_get_kv(base, okv->key);
        if (bkv) {
            bkv->line = okv->line;
            bkv->col = okv->col;
        }
        o->v = xgrow(o->v, &o->cap, o->n + 1, sizeof o->v[0]);
        o->v[o->n++] = c;
    }
}

/* Strings with NUL would be cut short by every C consumer (a command shown
 * as "a" that runs "a\0b"): refuse them anywhere in the tree. */
static int check_nul(const toml_value *v, const char *file, const struct mf_origin *o,
                     struct as_err *err)
{
    file = mf_origin_file(o, v, file);
    switch (v->type) {
    case TOML_STRING:
        if (memchr(v->u.str.s, '\0', v->u.str.len))
            return as_err_at(err, file, v->line, v->col,
                             "string contains a NUL byte (\\u0000), which agentstack refuses");
        return 0;
    case TOML_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (check_nul(v->u.arr.items[i], file, o, err) < 0)
                return -1;
        return 0;
    case TOML_TABLE:
        for (size_t i = 0; i < v->u.tab.n; i++)
            if (check_nul(v->u.tab.kv[i].val, file, o, err) < 0)
                return -1;
        return 0;
    default:
        return 0;
    }
}

/* ---- hidden characters ----------------------------------------------------- */

#define MF_HIDDEN_MAX 100

/* The first code point of s that a reviewer could not see, or that breaks
 * or rewrites a displayed line (tab and newline excepted: multi-line
 * descriptions are text), or 0. Invalid UTF-8 cannot occur: the TOML
 * parser refuses it. */
static uint32_t first_hidden(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        if (p[i] >= 0x20 && p[i] < 0x7F) {
            i++;
            continue;
        }
        unsigned cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (!n)
            return 0xFFFD;
        if ((cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) ||
            term_hidden_label(cp))
            return cp ? cp : 0xFFFD;
        i += n;
    }
    return 0;
}

static void hidden_add(struct manifest *m, const char *file, unsigned line, unsigned col,
                       uint32_t cp, const char *where, const char *text, size_t len)
{
    if (m->hidden.n >= MF_HIDDEN_MAX) {
        m->hidden_more++;
        return;
    }
    struct mf_hidden h = {{file, line, col}, cp, xstrdup(where), xstrndup(text, len)};
    vec_push(&m->hidden, h);
}

/* Every key and string of the merged tree, with the file each came from. */
static void find_hidden(struct manifest *m, const toml_value *v, const char *file,
                        const struct mf_origin *o, strbuf *path)
{
    file = mf_origin_file(o, v, file);
    uint32_t cp;
    switch (v->type) {
    case TOML_STRING:
        if ((cp = first_hidden(v->u.str.s, v->u.str.len)))
            hidden_add(m, file, v->line, v->col, cp, path->buf, v->u.str.s, v->u.str.len);
        return;
    case TOML_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++) {
            size_t keep = path->len;
            sb_addf(path, "[%zu]", i);
            find_hidden(m, v->u.arr.items[i], file, o, path);
            sb_setlen(path, keep);
        }
        return;
    case TOML_TABLE:
        for (size_t i = 0; i < v->u.tab.n; i++) {
            const toml_kv *kv = &v->u.tab.kv[i];
            size_t keep = path->len;
            if (path->len)
                sb_addc(path, '.');
            sb_add(path, kv->key, kv->keylen);
            if ((cp = first_hidden(kv->key, kv->keylen)))
                hidden_add(m, mf_origin_file(o, kv->val, file), kv->line, kv->col, cp, path->buf,
                           kv->key, kv->keylen);
            find_hidden(m, kv->val, file, o, path);
            sb_setlen(path, keep);
        }
        return;
    default:
        return;
    }
}

/* ---- loading -------------------------------------------------------------- */

static char *dir_of(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s)
        return xstrdup(".");
    if (s == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(s - path));
}

static toml_value *parse(const char *path, const char *data, size_t len, struct as_err *err)
{
    if (len > MANIFEST_MAX_BYTES) {
        as_err_set(err, "%s: exceeds the %zu-byte limit", path, MANIFEST_MAX_BYTES);
        return NULL;
    }
    toml_value *root = toml_parse(path, data, len, err);
    if (!root) {
        as_err_prefix(err, "TOML syntax");
        as_err_hint(err, "fix the syntax at that position" MF_RECHECK);
    }
    return root;
}

struct manifest *manifest_load_bytes(const struct manifest_source *src, struct as_err *err)
{
    toml_value *root = parse(src->path, src->data, src->len, err);
    if (!root)
        return NULL;
    struct manifest *m = xcalloc(1, sizeof *m);
    m->kind = src->kind;
    m->path = xstrdup(src->path);
    m->manifest_dir = src->manifest_dir ? xstrdup(src->manifest_dir) : dir_of(src->path);
    if (src->project_root) {
        m->project_root = xstrdup(src->project_root);
    } else {
        const char *b = strrchr(m->manifest_dir, '/');
        b = b ? b + 1 : m->manifest_dir;
        m->project_root =
            strcmp(b, BUNDLE_DIR_NAME) == 0 ? dir_of(m->manifest_dir) : xstrdup(m->manifest_dir);
    }
    struct mf_origin o = {NULL, 0, 0, NULL};
    if (src->overlay_path) {
        m->overlay_path = xstrdup(src->overlay_path);
        toml_value *ovl = parse(src->overlay_path, src->overlay_data, src->overlay_len, err);
        if (!ovl) {
            toml_free(root);
            manifest_free(m);
            return NULL;
        }
        o.overlay_file = m->overlay_path;
        merge(root, ovl, &o);
        toml_free(ovl);
        if (o.n)
            qsort(o.v, o.n, sizeof o.v[0], ptr_cmp);
    }
    int rc = check_nul(root, m->path, &o, err);
    if (rc == 0) {
        rc = mf_decode(m, root, &o, err); /* takes root */
        if (rc == 0) {
            strbuf path = SB_INIT;
            find_hidden(m, m->root, m->path, &o, &path);
            sb_release(&path);
        }
    } else {
        toml_free(root);
        as_err_hint(err, "remove the \\u0000 escape" MF_RECHECK);
    }
    free(o.v);
    if (rc < 0) {
        manifest_free(m);
        return NULL;
    }
    index_build(m);
    return m;
}

void manifest_snapshot_init(struct manifest_snapshot *s)
{
    memset(s, 0, sizeof *s);
    sb_init(&s->manifest, 0);
    sb_init(&s->overlay, 0);
    sb_init(&s->lock, 0);
}

void manifest_snapshot_release(struct manifest_snapshot *s)
{
    sb_release(&s->manifest);
    sb_release(&s->overlay);
    sb_release(&s->lock);
    s->has_manifest = s->has_overlay = s->has_lock = false;
}

/* Reads path if it exists (lstat), into out. 0 absent, 1 read, -1 error. */
static int read_opt(const char *path, strbuf *out, struct as_err *err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return as_err_errno(err, "%s", path);
    }
    if (fs_read_file(path, MANIFEST_MAX_BYTES, 0, out, err) < 0)
        return -1;
    return 1;
}

int manifest_snapshot_read(const struct bundle_paths *p, struct manifest_snapshot *s,
                           struct as_err *err)
{
    manifest_snapshot_release(s);
    if (discover_check_layout(p, err) < 0)
        return -1;
    int r;
    if ((r = read_opt(p->manifest, &s->manifest, err)) < 0)
        return -1;
    s->has_manifest = r == 1;
    if ((r = read_opt(p->overlay, &s->overlay, err)) < 0)
        return -1;
    s->has_overlay = r == 1;
    if ((r = read_opt(p->lock, &s->lock, err)) < 0)
        return -1;
    s->has_lock = r == 1;
    return 0;
}

struct manifest *manifest_load_snapshot(const struct bundle_paths *p,
                                        const struct manifest_snapshot *s, struct as_err *err)
{
    if (!s->has_manifest) {
        struct bundle_paths q = *p;
        q.found = false;
        discover_require(&q, err);
        return NULL;
    }
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT,
        .path = p->manifest,
        .data = s->manifest.buf,
        .len = s->manifest.len,
        .overlay_path = s->has_overlay ? p->overlay : NULL,
        .overlay_data = s->overlay.buf,
        .overlay_len = s->overlay.len,
        .manifest_dir = p->manifest_dir,
        .project_root = p->project_root,
    };
    return manifest_load_bytes(&src, err);
}

struct manifest *manifest_load(const struct bundle_paths *p, struct as_err *err)
{
    if (!p->found) {
        discover_require(p, err);
        return NULL;
    }
    struct manifest_snapshot s;
    manifest_snapshot_init(&s);
    struct manifest *m = NULL;
    if (manifest_snapshot_read(p, &s, err) == 0)
        m = manifest_load_snapshot(p, &s, err);
    manifest_snapshot_release(&s);
    return m;
}

struct manifest *manifest_load_machine(int *absent, struct as_err *err)
{
    *absent = 0;
    strbuf path = SB_INIT, home = SB_INIT, data = SB_INIT;
    struct manifest *m = NULL;
    if (home_dir(&home, err) < 0 || home_path(HOME_MACHINE_MANIFEST, &path, err) < 0)
        goto out;
    int r = read_opt(path.buf, &data, err);
    if (r == 0) {
        *absent = 1;
        goto out;
    }
    if (r == 1) {
        struct manifest_source src = {
            .kind = MANIFEST_MACHINE,
            .path = path.buf,
            .data = data.buf,
            .len = data.len,
            .manifest_dir = home.buf,
            .project_root = home.buf,
        };
        m = manifest_load_bytes(&src, err);
    }
    if (!m) {
        /* Fail closed: name the file and keep the precise fix. */
        char prev[sizeof err->hint];
        snprintf(prev, sizeof prev, "%s", err->hint);
        if (!err->path[0])
            snprintf(err->path, sizeof err->path, "%s", path.buf);
        as_err_hint(err,
                    "%s%sthe machine manifest is broken: every command refuses until "
                    "%s is fixed (or moved aside)",
                    prev, prev[0] ? "\n  " : "", path.buf);
    }
out:
    sb_release(&path);
    sb_release(&home);
    sb_release(&data);
    return m;
}

static void copy_strvec(strvec *dst, const strvec *src)
{
    for (size_t i = 0; i < src->n; i++)
        strvec_push(dst, src->v[i]);
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void manifest_inherit_instructions(struct manifest *m, const struct manifest *machine)
{
    if (!machine || !machine->instructions.n)
        return;
    if (!m->inherited_from)
        m->inherited_from = xstrdup(machine->path);
    VEC(struct mf_instruction) merged = VEC_INIT;
    for (size_t i = 0; i < machine->instructions.n; i++) {
        const struct mf_instruction *src = &machine->instructions.v[i];
        if (manifest_instruction(m, src->name))
            continue; /* project names win */
        struct mf_instruction in = {0};
        in.name = xstrdup(src->name);
        in.pos = src->pos;
        in.pos.file = m->inherited_from;
        in.path = dup_or_null(src->path);
        in.path_pos = src->path_pos;
        in.path_pos.file = m->inherited_from;
        copy_strvec(&in.targets, &src->targets);
        in.targets_set = src->targets_set;
        for (size_t j = 0; j < src->variants.n; j++) {
            struct mf_variant v = {dup_or_null(src->variants.v[j].cli),
                                   dup_or_null(src->variants.v[j].model),
                                   dup_or_null(src->variants.v[j].path), src->variants.v[j].pos,
                                   src->variants.v[j].path_pos};
            v.pos.file = m->inherited_from;
            v.path_pos.file = m->inherited_from;
            vec_push(&in.variants, v);
        }
        in.inherited = true;
        in.anchor_dir = xstrdup(machine->manifest_dir);
        vec_push(&merged, in);
    }
    for (size_t i = 0; i < m->instructions.n; i++)
        vec_push(&merged, m->instructions.v[i]);
    free(m->instructions.v);
    m->instructions.v = merged.v;
    m->instructions.n = merged.n;
    m->instructions.cap = merged.cap;
    if (m->index)
        index_build(m);
}

/* ---- lifetime ------------------------------------------------------------- */

static void free_strmap(mf_strmap *sm)
{
    for (size_t i = 0; i < sm->n; i++) {
        free(sm->v[i].key);
        free(sm->v[i].value);
    }
    vec_free(sm);
}

void manifest_free(struct manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->hidden.n; i++) {
        free(m->hidden.v[i].where);
        free(m->hidden.v[i].value);
    }
    vec_free(&m->hidden);
    for (size_t i = 0; i < m->servers.n; i++) {
        struct mf_server *s = &m->servers.v[i];
        free(s->name);
        free(s->url);
        free(s->command);
        strvec_clear(&s->args);
        free(s->cwd);
        strvec_clear(&s->integrity_roots);
        strvec_clear(&s->targets);
        free(s->owner);
        free_strmap(&s->headers);
        free_strmap(&s->env);
    }
    vec_free(&m->servers);
    for (size_t i = 0; i < m->skills.n; i++) {
        struct mf_skill *s = &m->skills.v[i];
        free(s->name);
        free(s->path);
        free(s->git);
        free(s->rev);
        free(s->subpath);
    }
    vec_free(&m->skills);
    for (size_t i = 0; i < m->instructions.n; i++) {
        struct mf_instruction *s = &m->instructions.v[i];
        free(s->name);
        free(s->path);
        strvec_clear(&s->targets);
        for (size_t j = 0; j < s->variants.n; j++) {
            free(s->variants.v[j].cli);
            free(s->variants.v[j].model);
            free(s->variants.v[j].path);
        }
        vec_free(&s->variants);
        free(s->anchor_dir);
    }
    vec_free(&m->instructions);
    for (size_t i = 0; i < m->toolsets.n; i++) {
        struct mf_toolset *s = &m->toolsets.v[i];
        free(s->name);
        strvec_clear(&s->servers);
        strvec_clear(&s->skills);
        strvec_clear(&s->packages);
        free(s->harness);
        free(s->model);
        free(s->effort);
    }
    vec_free(&m->toolsets);
    free(m->default_toolset);
    for (size_t i = 0; i < m->settings.n; i++)
        free(m->settings.v[i].adapter);
    vec_free(&m->settings);
    for (size_t i = 0; i < m->hooks.n; i++) {
        struct mf_hook *s = &m->hooks.v[i];
        free(s->name);
        free(s->event);
        free(s->command);
        free(s->matcher);
        strvec_clear(&s->args);
        strvec_clear(&s->targets);
    }
    vec_free(&m->hooks);
    strvec_clear(&m->targets_default);
    for (size_t i = 0; i < m->extensions.n; i++) {
        struct mf_extension *s = &m->extensions.v[i];
        free(s->name);
        free(s->target);
        free(s->path);
        free(s->git);
        free(s->rev);
        free(s->subpath);
        free(s->description);
    }
    vec_free(&m->extensions);
    for (size_t i = 0; i < m->workflows.n; i++) {
        struct mf_workflow *s = &m->workflows.v[i];
        free(s->name);
        free(s->path);
        free(s->git);
        free(s->rev);
        free(s->subpath);
        free(s->blueprint);
        free(s->description);
        strvec_clear(&s->roles);
    }
    vec_free(&m->workflows);
    free(m->meta_name);
    for (size_t i = 0; i < m->delivery_harness.n; i++)
        free(m->delivery_harness.v[i].adapter);
    vec_free(&m->delivery_harness);
    strvec_clear(&m->gateway.env_passthrough);
    strvec_clear(&m->guard.allow_roots);
    strvec_clear(&m->guard.deny);
    strvec_clear(&m->guard.allow);
    strvec_clear(&m->experimental.allow_tools);
    free(m->experimental.runtime);
    mf_diags_free(&m->warnings);
    toml_free(m->root);
    free(m->path);
    free(m->overlay_path);
    free(m->manifest_dir);
    free(m->project_root);
    free(m->inherited_from);
    index_free(m->index);
    free(m);
}

/* ---- lookups -------------------------------------------------------------- */

/*
 * Each index holds the entries' positions sorted by (name, position), and
 * the vector (base, n) it was built for: a vector grown or moved since is
 * searched linearly rather than through a stale index. Sorted rather than
 * hashed: no choice of names can make a lookup cost more than log n
 * comparisons.
 */
struct mf_sorted {
    const void *base;
    size_t n;
    size_t *ord;
};

enum { IX_SERVERS, IX_SKILLS, IX_INSTRUCTIONS, IX_TOOLSETS, IX_SETTINGS, IX_N };

struct mf_index {
    struct mf_sorted by[IX_N];
};

/* The name of entry i of an array of structs whose name field is at off. */
static const char *name_at(const void *base, size_t stride, size_t off, size_t i)
{
    return *(char *const *)((const char *)base + i * stride + off);
}

struct sort_ctx {
    const void *base;
    size_t stride, off;
};

static int ord_cmp(const void *a, const void *b, void *arg)
{
    const struct sort_ctx *c = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int r = strcmp(name_at(c->base, c->stride, c->off, x), name_at(c->base, c->stride, c->off, y));
    return r ? r : x < y ? -1 : x > y;
}

static void sorted_build(struct mf_sorted *s, const void *base, size_t n, size_t stride, size_t off)
{
    free(s->ord);
    s->base = base;
    s->n = n;
    s->ord = n ? xcalloc(n, sizeof *s->ord) : NULL;
    for (size_t i = 0; i < n; i++)
        s->ord[i] = i;
    struct sort_ctx c = {base, stride, off};
    if (n > 1)
        qsort_r(s->ord, n, sizeof *s->ord, ord_cmp, &c);
}

/* Position of the first entry named key, or n when there is none. */
static size_t sorted_find(const struct mf_index *ix, size_t which, const void *base, size_t n,
                          size_t stride, size_t off, const char *key)
{
    const struct mf_sorted *s = ix ? &ix->by[which] : NULL;
    if (!s || s->base != base || s->n != n) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(name_at(base, stride, off, i), key) == 0)
                return i;
        return n;
    }
    size_t lo = 0, hi = n; /* lower bound: ties are ordered by position */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(name_at(base, stride, off, s->ord[mid]), key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && strcmp(name_at(base, stride, off, s->ord[lo]), key) == 0)
        return s->ord[lo];
    return n;
}

#define IX_BUILD(ix, which, vec, field)                                                            \
    sorted_build(&(ix)->by[which], (vec).v, (vec).n, sizeof *(vec).v,                              \
                 offsetof(__typeof__(*(vec).v), field))

#define FIND(which, vec, field, key)                                                               \
    size_t i_ = sorted_find(m->index, (which), (vec).v, (vec).n, sizeof *(vec).v,                  \
                            offsetof(__typeof__(*(vec).v), field), (key));                         \
    return i_ < (vec).n ? &(vec).v[i_] : NULL

static void index_build(struct manifest *m)
{
    if (!m->index)
        m->index = xcalloc(1, sizeof *m->index);
    IX_BUILD(m->index, IX_SERVERS, m->servers, name);
    IX_BUILD(m->index, IX_SKILLS, m->skills, name);
    IX_BUILD(m->index, IX_INSTRUCTIONS, m->instructions, name);
    IX_BUILD(m->index, IX_TOOLSETS, m->toolsets, name);
    IX_BUILD(m->index, IX_SETTINGS, m->settings, adapter);
}

static void index_free(struct mf_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < IX_N; i++)
        free(ix->by[i].ord);
    free(ix);
}

const struct mf_server *manifest_server(const struct manifest *m, const char *name)
{
    FIND(IX_SERVERS, m->servers, name, name);
}

const struct mf_skill *manifest_skill(const struct manifest *m, const char *name)
{
    FIND(IX_SKILLS, m->skills, name, name);
}

const struct mf_instruction *manifest_instruction(const struct manifest *m, const char *name)
{
    FIND(IX_INSTRUCTIONS, m->instructions, name, name);
}

const struct mf_toolset *manifest_toolset(const struct manifest *m, const char *name)
{
    FIND(IX_TOOLSETS, m->toolsets, name, name);
}

const struct mf_settings *manifest_settings(const struct manifest *m, const char *adapter)
{
    FIND(IX_SETTINGS, m->settings, adapter, adapter);
}

const struct mf_toolset *manifest_effective_toolset(const struct manifest *m)
{
    if (m->default_toolset)
        return manifest_toolset(m, m->default_toolset);
    return m->toolsets.n == 1 ? &m->toolsets.v[0] : NULL;
}

bool manifest_render_locally(const struct manifest *m, const char *adapter)
{
    for (size_t i = 0; adapter && i < m->delivery_harness.n; i++) {
        const struct mf_delivery_harness *h = &m->delivery_harness.v[i];
        if (strcmp(h->adapter, adapter) == 0 && h->has_render_locally)
            return h->render_locally;
    }
    return m->delivery_render_locally;
}

const struct mf_variant *manifest_select_variant(const struct mf_instruction *in, const char *cli,
                                                 const char *model)
{
    const struct mf_variant *best = NULL;
    int best_score = 0;
    for (size_t i = 0; i < in->variants.n; i++) {
        const struct mf_variant *v = &in->variants.v[i];
        if (!v->cli && !v->model)
            continue; /* selector-less: never matches (validate reports it) */
        if (v->cli && (!cli || strcmp(v->cli, cli) != 0))
            continue;
        if (v->model && (!model || strcmp(v->model, model) != 0))
            continue;
        int score = v->cli && v->model ? 3 : v->cli ? 2 : 1;
        if (score > best_score) { /* ties keep the first */
            best = v;
            best_score = score;
        }
    }
    return best;
}

bool manifest_targets_include(const strvec *targets, const char *adapter)
{
    for (size_t i = 0; i < targets->n; i++)
        if (strcmp(targets->v[i], "*") == 0 || (adapter && strcmp(targets->v[i], adapter) == 0))
            return true;
    return false;
}
