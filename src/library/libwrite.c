/* library — writing indexes, copying bodies, the trash; see library.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/rand.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "library/library.h"

int lib_body_checksum(enum lib_kind kind, const char *body, char hex[65], struct as_err *err)
{
    if (kind == LIB_SKILL || kind == LIB_EXTENSION)
        return digest_skill_tree(body, hex, err);
    return digest_file(body, hex, err);
}

static int item_cmp(const void *a, const void *b)
{
    const struct lib_item *x = *(const struct lib_item *const *)a;
    const struct lib_item *y = *(const struct lib_item *const *)b;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    return strcmp(x->name, y->name);
}

/* A row for a layout-derived item: its name, where its body is, and the
 * checksum of what is there now. */
static toml_value *derived_row(const struct lib_item *it)
{
    toml_value *row = toml_new(TOML_TABLE);
    toml_table_set(row, "name", toml_new_string(it->name));
    if (it->kind == LIB_SKILL) {
        toml_table_set(row, "source", toml_new_string("path"));
        toml_table_set(row, "path", toml_new_string(it->rel));
    }
    char hex[65];
    struct as_err e = AS_ERR_INIT;
    if (lib_body_checksum(it->kind, it->body, hex, &e) == 0)
        toml_table_set(row, "checksum", toml_new_string(hex));
    return row;
}

int lib_index_save(struct library *lib, struct lib_source *src, struct as_err *err)
{
    (void)lib;
    size_t n = src->items.n;
    struct lib_item **order = xcalloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = &src->items.v[i];
    qsort(order, n, sizeof *order, item_cmp);
    toml_value *root = toml_new(TOML_TABLE);
    toml_table_set(root, "version", toml_new_int(LIB_INDEX_VERSION));
    for (int k = 0; k < LIB_KIND_COUNT; k++) {
        toml_value *arr = NULL;
        for (size_t i = 0; i < n; i++) {
            if ((int)order[i]->kind != k)
                continue;
            if (!order[i]->row)
                order[i]->row = derived_row(order[i]);
            if (!arr)
                arr = toml_new(TOML_ARRAY);
            toml_array_push(arr, toml_clone(order[i]->row));
        }
        if (arr)
            toml_table_set(root, lib_kind_name((enum lib_kind)k), arr);
    }
    free(order);
    strbuf out = SB_INIT;
    sb_adds(&out, "# agentstack central library index — resolvers read only this file.\n"
                  "# Edit with `agentstack lib …`; bodies live beside it.\n");
    toml_emit(root, &out);
    toml_free(root);
    int rc = fs_mkdirs(src->path, 0755, err);
    if (rc == 0) {
        char *file = xasprintf("%s/%s", src->path, LIB_INDEX_NAME);
        struct fs_write_opts o = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
        rc = fs_write_atomic(file, out.buf, out.len, &o, err);
        free(file);
    }
    sb_release(&out);
    if (rc == 0)
        src->indexed = true;
    return rc;
}

/* ---- copying a tree -------------------------------------------------------------- */

struct copy_ctx {
    const char *dst;
};

static int copy_file(const char *src, const char *dst, mode_t mode, struct as_err *err)
{
    int in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0)
        return as_err_errno(err, "cannot read %s", src);
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(in);
        return as_err_set(err, "%s is not a regular file", src);
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   (mode & 0111) ? 0755 : 0644);
    if (out < 0) {
        close(in);
        return as_err_errno(err, "cannot create %s", dst);
    }
    char buf[65536];
    int rc = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = as_err_errno(err, "cannot read %s", src);
            break;
        }
        if (r == 0)
            break;
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(out, buf + off, (size_t)(r - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                rc = as_err_errno(err, "cannot write %s", dst);
                break;
            }
            off += w;
        }
        if (rc)
            break;
    }
    if (close(out) != 0 && rc == 0)
        rc = as_err_errno(err, "cannot write %s", dst);
    close(in);
    return rc;
}

static const char *base_name(const char *rel)
{
    const char *s = strrchr(rel, '/');
    return s ? s + 1 : rel;
}

static int copy_cb(const struct fs_entry *e, void *vctx, struct as_err *err)
{
    struct copy_ctx *c = vctx;
    if (strcmp(base_name(e->rel), ".git") == 0)
        return S_ISDIR(e->mode) ? 1 : 0;
    char *to = xasprintf("%s/%s", c->dst, e->rel);
    int rc = 0;
    if (S_ISDIR(e->mode)) {
        if (mkdir(to, 0755) != 0)
            rc = as_err_errno(err, "cannot create %s", to);
    } else if (S_ISREG(e->mode)) {
        rc = copy_file(e->path, to, e->mode, err);
    } else if (S_ISLNK(e->mode)) {
        rc = as_err_set(err, "%s: skill content contains a symlink — copy refused", e->path);
    } else {
        rc = as_err_set(err, "%s is not a regular file or directory — copy refused", e->path);
    }
    free(to);
    return rc;
}

int lib_copy_tree(const char *src, const char *dst, struct as_err *err)
{
    struct stat st;
    if (lstat(src, &st) != 0)
        return as_err_errno(err, "%s", src);
    if (!S_ISDIR(st.st_mode))
        return as_err_set(err, "%s is not a directory%s", src,
                          S_ISLNK(st.st_mode) ? " (a symlink)" : "");
    if (lstat(dst, &st) == 0)
        return as_err_set(err, "%s already exists", dst);
    char rnd[17];
    if (rand_hex(rnd, 8, err) < 0)
        return -1;
    char *tmp = xasprintf("%s.tmp-%s", dst, rnd);
    char *parent = xstrdup(dst);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (fs_mkdirs(parent, 0755, err) < 0) {
            free(parent);
            free(tmp);
            return -1;
        }
    }
    free(parent);
    int rc = -1;
    if (mkdir(tmp, 0755) != 0) {
        as_err_errno(err, "cannot create %s", tmp);
        free(tmp);
        return -1;
    }
    struct copy_ctx c = {tmp};
    if (fs_walk(src, 64, copy_cb, &c, err) == 0) {
        if (rename(tmp, dst) == 0)
            rc = 0;
        else
            as_err_errno(err, "cannot move %s into place", dst);
    }
    if (rc < 0) {
        struct as_err e2 = AS_ERR_INIT;
        fs_rmtree(tmp, &e2);
    }
    free(tmp);
    return rc;
}

/* ---- trash ------------------------------------------------------------------------ */

static char *trash_dir(const struct lib_source *s)
{
    return xasprintf("%s/.trash", s->path);
}

static void id_name(enum lib_kind kind, const char *name, strbuf *out)
{
    if (kind == LIB_SERVER)
        lib_server_stem(name, out);
    else
        sb_adds(out, name);
}

int lib_trash_item(struct library *lib, enum lib_kind kind, const char *name, char **id,
                   struct as_err *err)
{
    *id = NULL;
    const struct lib_item *found = NULL;
    int r = lib_resolve(lib, kind, name, &found, err);
    if (r < 0)
        return -1;
    if (r == 0) {
        as_err_set(err, "no %s '%s' in the central library", lib_kind_name(kind), name);
        as_err_hint(err, "agentstack lib list");
        return -1;
    }
    size_t si = found->source;
    struct lib_source *s = &lib->sources.v[si];
    struct lib_item *it = lib_source_get(s, kind, found->name);
    /* a git-sourced row (rel "") has no body in the source: only the row goes */
    char *orig = xstrdup(it->body);
    char *td = trash_dir(s);
    if (fs_mkdirs(td, 0755, err) < 0) {
        free(td);
        return -1;
    }
    strbuf idb = SB_INIT;
    sb_addf(&idb, "%s-", lib_kind_name(kind));
    id_name(kind, it->name, &idb);
    sb_addf(&idb, "-%lld", (long long)time(NULL));
    char *dir = xasprintf("%s/%s", td, idb.buf);
    for (int k = 2; fs_exists(dir) && k < 1000; k++) {
        free(dir);
        dir = xasprintf("%s/%s-%d", td, idb.buf, k);
        if (!fs_exists(dir)) {
            sb_addf(&idb, "-%d", k);
            break;
        }
    }
    int rc = -1;
    bool moved = false;
    char *held = NULL;
    toml_value *entry = NULL;
    if (mkdir(dir, 0755) != 0) {
        as_err_errno(err, "cannot create %s", dir);
        goto out;
    }
    held = xasprintf("%s/%s", dir, base_name(it->rel[0] ? it->rel : it->name));
    if (it->rel[0] && fs_exists(it->body)) {
        if (rename(it->body, held) != 0) {
            as_err_errno(err, "cannot move %s to the trash", it->body);
            goto out;
        }
        moved = true;
    }
    entry = toml_new(TOML_TABLE);
    toml_table_set(entry, "kind", toml_new_string(lib_kind_name(kind)));
    toml_table_set(entry, "name", toml_new_string(it->name));
    toml_table_set(entry, "rel", toml_new_string(it->rel));
    toml_table_set(entry, "trashed_at", toml_new_int((int64_t)time(NULL)));
    toml_table_set(entry, "body", toml_new_bool(moved));
    if (it->row)
        toml_table_set(entry, "row", toml_clone(it->row));
    strbuf text = SB_INIT;
    toml_emit(entry, &text);
    char *ef = xasprintf("%s/entry.toml", dir);
    struct fs_write_opts o = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
    int wr = fs_write_atomic(ef, text.buf, text.len, &o, err);
    free(ef);
    sb_release(&text);
    if (wr < 0)
        goto out;
    toml_value *saved_row = it->row ? toml_clone(it->row) : NULL;
    char *saved_name = xstrdup(it->name);
    lib_source_drop(s, kind, saved_name);
    if (s->indexed && lib_index_save(lib, s, err) < 0) {
        lib_source_put(s, si, kind, saved_name, saved_row);
        free(saved_name);
        goto out;
    }
    toml_free(saved_row);
    free(saved_name);
    *id = sb_detach(&idb, NULL);
    rc = 0;
out:
    if (rc < 0) {
        if (moved && held)
            (void)rename(held, orig);
        struct as_err e2 = AS_ERR_INIT;
        fs_rmtree(dir, &e2);
    }
    free(orig);
    toml_free(entry);
    free(held);
    free(dir);
    free(td);
    sb_release(&idb);
    return rc;
}

static int check_rel_ok(const char *root, const char *rel, struct as_err *err)
{
    strbuf out = SB_INIT;
    int r = fs_contain(root, NULL, rel, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &out, err);
    sb_release(&out);
    return r;
}

static toml_value *read_entry(const char *dir, struct as_err *err)
{
    char *ef = xasprintf("%s/entry.toml", dir);
    toml_value *t = toml_parse_file(ef, LIB_MAX_FILE_BYTES, err);
    free(ef);
    return t;
}

static const char *tstr(const toml_value *t, const char *k)
{
    const toml_value *v = toml_get(t, k);
    return v && v->type == TOML_STRING ? v->u.str.s : NULL;
}

void lib_trash_list(const struct library *lib, lib_trash_entries *out)
{
    for (size_t si = 0; si < lib->sources.n; si++) {
        char *td = trash_dir(&lib->sources.v[si]);
        DIR *d = opendir(td);
        if (!d) {
            free(td);
            continue;
        }
        strvec names = STRVEC_INIT;
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.')
                strvec_push(&names, e->d_name);
        closedir(d);
        strvec_sort(&names);
        for (size_t i = 0; i < names.n; i++) {
            char *dir = xasprintf("%s/%s", td, names.v[i]);
            struct as_err err = AS_ERR_INIT;
            toml_value *t = read_entry(dir, &err);
            const char *kind = t ? tstr(t, "kind") : NULL, *name = t ? tstr(t, "name") : NULL;
            const toml_value *when = t ? toml_get(t, "trashed_at") : NULL;
            if (kind && name && lib_kind_parse(kind) >= 0) {
                struct lib_trash_entry te = {.id = xstrdup(names.v[i]),
                                             .source = si,
                                             .kind = (enum lib_kind)lib_kind_parse(kind),
                                             .name = xstrdup(name),
                                             .dir = dir,
                                             .when = when && when->type == TOML_INTEGER ? when->u.i
                                                                                        : 0};
                vec_push(out, te);
                dir = NULL;
            }
            free(dir);
            toml_free(t);
        }
        strvec_clear(&names);
        free(td);
    }
}

void lib_trash_entries_free(lib_trash_entries *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].id);
        free(t->v[i].name);
        free(t->v[i].dir);
    }
    vec_free(t);
}

static const struct lib_trash_entry *trash_find(const lib_trash_entries *t, const char *id)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].id, id) == 0)
            return &t->v[i];
    return NULL;
}

int lib_trash_restore(struct library *lib, const char *id, bool replace, struct as_err *err)
{
    lib_trash_entries all = VEC_INIT;
    lib_trash_list(lib, &all);
    const struct lib_trash_entry *te = trash_find(&all, id);
    int rc = -1;
    toml_value *t = NULL;
    if (!te) {
        as_err_set(err, "no trash entry '%s'", id);
        as_err_hint(err, "agentstack lib trash");
        goto out;
    }
    t = read_entry(te->dir, err);
    if (!t)
        goto out;
    struct lib_source *s = &lib->sources.v[te->source];
    const char *rel = tstr(t, "rel");
    const toml_value *hb = toml_get(t, "body");
    bool body = hb && hb->type == TOML_BOOL && hb->u.b;
    if (!rel || (rel[0] && check_rel_ok(s->path, rel, err) < 0)) {
        if (!as_err_isset(err))
            as_err_set(err, "%s/entry.toml: no usable `rel`", te->dir);
        goto out;
    }
    struct lib_item *cur = lib_source_get(s, te->kind, te->name);
    char *dest = xasprintf("%s/%s", s->path, rel);
    if (cur || (rel[0] && fs_exists(dest))) {
        if (!replace) {
            as_err_set(err, "%s '%s' exists again in library '%s'", lib_kind_name(te->kind),
                       te->name, s->name);
            as_err_hint(err, "agentstack lib trash --restore %s --replace --write", id);
            free(dest);
            goto out;
        }
        char *other = NULL;
        if (cur) {
            if (lib_trash_item(lib, te->kind, te->name, &other, err) < 0) {
                free(dest);
                goto out;
            }
            free(other);
        } else {
            struct as_err e2 = AS_ERR_INIT;
            fs_rmtree(dest, &e2);
        }
    }
    if (body) {
        char *held = xasprintf("%s/%s", te->dir, base_name(rel[0] ? rel : te->name));
        char *parent = xstrdup(dest);
        char *slash = strrchr(parent, '/');
        if (slash)
            *slash = '\0';
        int mk = fs_mkdirs(parent, 0755, err);
        free(parent);
        if (mk < 0 || rename(held, dest) != 0) {
            if (mk == 0)
                as_err_errno(err, "cannot move %s back to %s", held, dest);
            free(held);
            free(dest);
            goto out;
        }
        free(held);
    }
    free(dest);
    const toml_value *row = toml_get(t, "row");
    lib_source_put(s, te->source, te->kind, te->name,
                   row && row->type == TOML_TABLE ? toml_clone(row) : NULL);
    if ((s->indexed || row) && lib_index_save(lib, s, err) < 0)
        goto out;
    struct as_err e2 = AS_ERR_INIT;
    fs_rmtree(te->dir, &e2);
    rc = 0;
out:
    toml_free(t);
    lib_trash_entries_free(&all);
    return rc;
}

int lib_trash_empty(struct library *lib, const char *id, size_t *purged, struct as_err *err)
{
    *purged = 0;
    lib_trash_entries all = VEC_INIT;
    lib_trash_list(lib, &all);
    int rc = 0;
    if (id && !trash_find(&all, id)) {
        as_err_set(err, "no trash entry '%s'", id);
        as_err_hint(err, "agentstack lib trash");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < all.n; i++) {
        if (id && strcmp(all.v[i].id, id) != 0)
            continue;
        if (fs_rmtree(all.v[i].dir, err) < 0)
            rc = -1;
        else
            (*purged)++;
    }
    lib_trash_entries_free(&all);
    return rc;
}
