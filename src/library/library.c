/* library — sources, indexes and resolution; see library.h. */
#include "library/library.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/hex.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"

static const char *const kind_names[LIB_KIND_COUNT] = {"skill", "server",    "instruction",
                                                       "hook",  "extension", "package"};

const char *lib_kind_name(enum lib_kind k)
{
    return (unsigned)k < LIB_KIND_COUNT ? kind_names[k] : "item";
}

int lib_kind_parse(const char *s)
{
    for (int k = 0; k < LIB_KIND_COUNT; k++)
        if (strcmp(s, kind_names[k]) == 0)
            return k;
    return -1;
}

bool lib_name_valid(const char *name)
{
    if (!name || !name[0] || strlen(name) > 64)
        return false;
    if (!(islower((unsigned char)name[0]) || isdigit((unsigned char)name[0])))
        return false;
    for (const char *p = name; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("._-", *p)))
            return false;
    return true;
}

void lib_server_stem(const char *name, strbuf *out)
{
    bool encode = strpbrk(name, "/\\%") || strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (!encode || isalnum(*p) || *p == '_' || *p == '-')
            sb_addc(out, (char)*p);
        else
            sb_addf(out, "%%%02X", *p);
    }
}

char *lib_server_unstem(const char *stem)
{
    strbuf out = SB_INIT;
    for (const char *p = stem; *p; p++) {
        if (*p != '%') {
            sb_addc(&out, *p);
            continue;
        }
        int a = p[1] ? hex_digit_value((unsigned char)p[1]) : -1;
        int b = a >= 0 && p[2] ? hex_digit_value((unsigned char)p[2]) : -1;
        if (a < 0 || b < 0 || (a == 0 && b == 0)) {
            sb_release(&out);
            return NULL;
        }
        sb_addc(&out, (char)(a * 16 + b));
        p += 2;
    }
    if (!out.len) {
        sb_release(&out);
        return NULL;
    }
    /* Only the canonical encoding round-trips: one file per name. */
    strbuf again = SB_INIT;
    lib_server_stem(out.buf, &again);
    bool same = strcmp(again.buf, stem) == 0;
    sb_release(&again);
    if (!same) {
        sb_release(&out);
        return NULL;
    }
    return sb_detach(&out, NULL);
}

void lib_item_rel(enum lib_kind kind, const char *name, strbuf *out)
{
    switch (kind) {
    case LIB_SKILL:
        sb_addf(out, "skills/%s", name);
        break;
    case LIB_SERVER:
        sb_adds(out, "servers/");
        lib_server_stem(name, out);
        sb_adds(out, ".toml");
        break;
    case LIB_INSTRUCTION:
        sb_addf(out, "instructions/%s/instruction.toml", name);
        break;
    case LIB_HOOK:
        sb_addf(out, "hooks/%s.toml", name);
        break;
    case LIB_EXTENSION:
        sb_addf(out, "extensions/%s", name);
        break;
    case LIB_PACKAGE:
        sb_addf(out, "packages/%s/pack.toml", name);
        break;
    case LIB_KIND_COUNT:
        break;
    }
}

/* ---- items ---------------------------------------------------------------- */

static void item_free(struct lib_item *it)
{
    free(it->name);
    free(it->rel);
    free(it->body);
    free(it->checksum);
    free(it->provenance);
    free(it->version);
    toml_free(it->row);
}

static void source_free(struct lib_source *s)
{
    free(s->name);
    free(s->path);
    free(s->note);
    free(s->error);
    for (size_t i = 0; i < s->items.n; i++)
        item_free(&s->items.v[i]);
    vec_free(&s->items);
}

void lib_free(struct library *lib)
{
    if (!lib)
        return;
    for (size_t i = 0; i < lib->sources.n; i++)
        source_free(&lib->sources.v[i]);
    vec_free(&lib->sources);
    strvec_clear(&lib->warnings);
    free(lib->home);
    free(lib->sources_path);
    free(lib);
}

struct lib_item *lib_source_get(struct lib_source *src, enum lib_kind kind, const char *name)
{
    for (size_t i = 0; i < src->items.n; i++)
        if (src->items.v[i].kind == kind && strcmp(src->items.v[i].name, name) == 0)
            return &src->items.v[i];
    return NULL;
}

static const struct lib_item *source_find(const struct lib_source *src, enum lib_kind kind,
                                          const char *name)
{
    return lib_source_get((struct lib_source *)src, kind, name);
}

static const char *row_str(const toml_value *row, const char *key)
{
    const toml_value *v = toml_get(row, key);
    return v && v->type == TOML_STRING ? v->u.str.s : NULL;
}

static char *dupn(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* Git-sourced skill rows live in the store's immutable worktrees. */
static void git_slug(const char *url, strbuf *out)
{
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        sb_addc(out, isalnum(*p) ? (char)*p : '-');
}

static void item_fill(struct lib_item *it, const char *home, const char *srcpath)
{
    free(it->rel);
    free(it->body);
    free(it->checksum);
    free(it->provenance);
    free(it->version);
    it->checksum = it->provenance = it->version = NULL;
    const char *path = it->row ? row_str(it->row, "path") : NULL;
    const char *source = it->row ? row_str(it->row, "source") : NULL;
    strbuf rel = SB_INIT;
    if (it->kind == LIB_SKILL && source && strcmp(source, "git") == 0 && it->row) {
        const char *git = row_str(it->row, "git"), *rev = row_str(it->row, "rev");
        const char *sub = row_str(it->row, "subpath");
        strbuf b = SB_INIT;
        sb_addf(&b, "%s/store/co/", home);
        git_slug(git ? git : "", &b);
        sb_addf(&b, "/%s", rev ? rev : "");
        if (sub && *sub)
            sb_addf(&b, "/%s", sub);
        it->body = sb_detach(&b, NULL);
        it->rel = xstrdup("");
    } else {
        if (it->kind == LIB_SKILL && path && *path)
            sb_adds(&rel, path);
        else
            lib_item_rel(it->kind, it->name, &rel);
        it->rel = xstrdup(rel.buf);
        it->body = xasprintf("%s/%s", srcpath, rel.buf);
    }
    sb_release(&rel);
    if (it->row) {
        const char *c = row_str(it->row, "checksum");
        char norm[SHA256_HEX_LEN + 1];
        if (c && sha256_normalize_hex(c, norm) == 0)
            it->checksum = xstrdup(norm);
        it->provenance = dupn(row_str(it->row, "provenance"));
        it->version = dupn(row_str(it->row, "version"));
    }
}

struct lib_item *lib_source_put(struct lib_source *src, size_t src_index, enum lib_kind kind,
                                const char *name, toml_value *row)
{
    struct lib_item *it = lib_source_get(src, kind, name);
    if (!it) {
        struct lib_item n = {.kind = kind, .name = xstrdup(name), .source = src_index};
        vec_push(&src->items, n);
        it = &src->items.v[src->items.n - 1];
    } else {
        toml_free(it->row);
    }
    it->row = row;
    /* home is only needed for git-sourced skill rows; derive it from the
     * store path convention when absent (the caller's library knows it). */
    item_fill(it, "", src->path);
    return it;
}

bool lib_source_drop(struct lib_source *src, enum lib_kind kind, const char *name)
{
    for (size_t i = 0; i < src->items.n; i++) {
        if (src->items.v[i].kind == kind && strcmp(src->items.v[i].name, name) == 0) {
            item_free(&src->items.v[i]);
            memmove(&src->items.v[i], &src->items.v[i + 1],
                    (src->items.n - i - 1) * sizeof *src->items.v);
            src->items.n--;
            return true;
        }
    }
    return false;
}

/* ---- reading an index ------------------------------------------------------ */

static const char *const row_keys[LIB_KIND_COUNT][12] = {
    [LIB_SKILL] = {"name", "source", "path", "git", "rev", "subpath", "checksum", "version",
                   "provenance", "description", NULL},
    [LIB_SERVER] = {"name", "checksum", "provenance", NULL},
    [LIB_INSTRUCTION] = {"name", "checksum", "provenance", NULL},
    [LIB_HOOK] = {"name", "checksum", "provenance", NULL},
    [LIB_EXTENSION] = {"name", "target", "source", "path", "git", "rev", "subpath", "checksum",
                       "provenance", "description", NULL},
    [LIB_PACKAGE] = {"name", "version", "checksum", "provenance", "description", NULL},
};

static bool key_in(const char *k, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(k, *list) == 0)
            return true;
    return false;
}

/* A source-relative path must stay inside the source with no symlinked
 * component on the way. */
static int check_rel(const char *srcpath, const char *rel, struct as_err *err)
{
    strbuf out = SB_INIT;
    int r = fs_contain(srcpath, NULL, rel, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &out, err);
    sb_release(&out);
    return r;
}

static int load_index(struct library *lib, struct lib_source *s, size_t si, const char *file,
                      struct as_err *err)
{
    toml_value *root = toml_parse_file(file, LIB_MAX_FILE_BYTES, err);
    if (!root)
        return -1;
    int rc = -1;
    for (size_t i = 0; i < toml_len(root); i++) {
        const toml_kv *kv = toml_entry(root, i);
        if (strcmp(kv->key, "version") == 0) {
            if (kv->val->type != TOML_INTEGER || kv->val->u.i < 1) {
                as_err_at(err, file, kv->line, kv->col, "`version` must be a positive integer");
                goto out;
            }
            if (kv->val->u.i > LIB_INDEX_VERSION) {
                as_err_at(err, file, kv->line, kv->col,
                          "library index version %lld is newer than this agentstack build "
                          "supports (up to %d); upgrade agentstack",
                          (long long)kv->val->u.i, LIB_INDEX_VERSION);
                goto out;
            }
            continue;
        }
        int k = lib_kind_parse(kv->key);
        if (k < 0) {
            as_err_at(err, file, kv->line, kv->col, "unknown key '%s' in the library index",
                      kv->key);
            goto out;
        }
        const toml_value *arr = kv->val;
        if (arr->type != TOML_ARRAY) {
            as_err_at(err, file, kv->line, kv->col, "`%s` must be an array of tables ([[%s]])",
                      kv->key, kv->key);
            goto out;
        }
        for (size_t j = 0; j < toml_len(arr); j++) {
            const toml_value *row = toml_at(arr, j);
            if (row->type != TOML_TABLE) {
                as_err_at(err, file, row->line, row->col, "[[%s]] entries must be tables", kv->key);
                goto out;
            }
            for (size_t e = 0; e < toml_len(row); e++) {
                const toml_kv *f = toml_entry(row, e);
                if (!key_in(f->key, row_keys[k])) {
                    as_err_at(err, file, f->line, f->col, "unknown key '%s' in [[%s]]", f->key,
                              kv->key);
                    goto out;
                }
                if (f->val->type != TOML_STRING || strlen(f->val->u.str.s) != f->val->u.str.len) {
                    as_err_at(err, file, f->line, f->col, "`%s` in [[%s]] must be a string", f->key,
                              kv->key);
                    goto out;
                }
            }
            const char *name = row_str(row, "name");
            if (!name || !*name) {
                as_err_at(err, file, row->line, row->col, "a [[%s]] row has no `name`", kv->key);
                goto out;
            }
            if (k != LIB_SERVER && !lib_name_valid(name)) {
                as_err_at(err, file, row->line, row->col,
                          "%s name '%s' is not valid (^[a-z0-9][a-z0-9._-]{0,63}$)", kv->key, name);
                goto out;
            }
            const char *ck = row_str(row, "checksum");
            char norm[SHA256_HEX_LEN + 1];
            if (ck && sha256_normalize_hex(ck, norm) != 0) {
                as_err_at(err, file, row->line, row->col, "malformed checksum in [[%s]] '%s'",
                          kv->key, name);
                goto out;
            }
            const struct lib_item *dup = source_find(s, (enum lib_kind)k, name);
            if (dup) {
                as_err_at(err, file, row->line, row->col,
                          "two [[%s]] rows named '%s' (the first at line %u) — one library "
                          "holds one %s per name",
                          kv->key, name, dup->row ? dup->row->line : 0, kv->key);
                as_err_hint(err, "remove one of the rows from %s", file);
                goto out;
            }
            const char *path = row_str(row, "path");
            const char *src = row_str(row, "source");
            bool git = src && strcmp(src, "git") == 0;
            if (k == LIB_SKILL && path && !git && check_rel(s->path, path, err) < 0) {
                as_err_prefix(err, "%s: skill '%s' path", file, name);
                goto out;
            }
            struct lib_item *it = lib_source_put(s, si, (enum lib_kind)k, name, toml_clone(row));
            if (git)
                item_fill(it, lib->home, s->path);
        }
    }
    rc = 0;
out:
    toml_free(root);
    return rc;
}

/* Sorted names in dir (no dot entries). */
static void list_dir(const char *dir, strvec *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            strvec_push(out, e->d_name);
    closedir(d);
    strvec_sort(out);
}

static bool is_kind(const char *path, mode_t want)
{
    struct stat st;
    return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == want;
}

/* A source without library.toml is read from its layout. */
static void derive_layout(struct lib_source *s, size_t si)
{
    static const struct {
        enum lib_kind kind;
        const char *dir;
        const char *inner; /* file inside <dir>/<name>/, or NULL */
        const char *ext;   /* file suffix for <dir>/<name><ext> */
    } kinds[] = {
        {LIB_SKILL, "skills", "SKILL.md", NULL},
        {LIB_SERVER, "servers", NULL, ".toml"},
        {LIB_INSTRUCTION, "instructions", "instruction.toml", NULL},
        {LIB_HOOK, "hooks", NULL, ".toml"},
        {LIB_EXTENSION, "extensions", "", NULL},
        {LIB_PACKAGE, "packages", "pack.toml", NULL},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        char *dir = xasprintf("%s/%s", s->path, kinds[k].dir);
        if (!is_kind(dir, S_IFDIR)) {
            free(dir);
            continue;
        }
        strvec names = STRVEC_INIT;
        list_dir(dir, &names);
        for (size_t i = 0; i < names.n; i++) {
            char *full = xasprintf("%s/%s", dir, names.v[i]);
            char *name = NULL;
            if (kinds[k].ext) {
                size_t nl = strlen(names.v[i]), el = strlen(kinds[k].ext);
                if (nl > el && strcmp(names.v[i] + nl - el, kinds[k].ext) == 0 &&
                    is_kind(full, S_IFREG)) {
                    char *stem = xstrndup(names.v[i], nl - el);
                    name = kinds[k].kind == LIB_SERVER
                               ? lib_server_unstem(stem)
                               : (lib_name_valid(stem) ? xstrdup(stem) : NULL);
                    free(stem);
                }
            } else if (lib_name_valid(names.v[i]) && is_kind(full, S_IFDIR)) {
                char *inner = xasprintf("%s/%s", full, kinds[k].inner);
                if (!*kinds[k].inner || is_kind(inner, S_IFREG))
                    name = xstrdup(names.v[i]);
                free(inner);
            }
            if (name)
                lib_source_put(s, si, kinds[k].kind, name, NULL);
            free(name);
            free(full);
        }
        strvec_clear(&names);
        free(dir);
    }
}

static void load_source(struct library *lib, size_t si)
{
    struct lib_source *s = &lib->sources.v[si];
    s->exists = is_kind(s->path, S_IFDIR);
    if (!s->exists)
        return;
    char *file = xasprintf("%s/%s", s->path, LIB_INDEX_NAME);
    struct stat st;
    if (lstat(file, &st) != 0 && errno == ENOENT) {
        derive_layout(s, si);
        free(file);
        return;
    }
    s->indexed = true;
    struct as_err err = AS_ERR_INIT;
    if (load_index(lib, s, si, file, &err) < 0) {
        char buf[3200];
        as_err_str(&err, buf, sizeof buf);
        s->error = xstrdup(buf);
        for (size_t i = 0; i < s->items.n; i++)
            item_free(&s->items.v[i]);
        s->items.n = 0;
        strvec_pushf(&lib->warnings, "library source '%s' skipped: %s", s->name, buf);
    }
    free(file);
}

/* ---- sources.toml ------------------------------------------------------------ */

static int parse_sources(struct library *lib, struct as_err *err)
{
    struct stat st;
    if (lstat(lib->sources_path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return as_err_errno(err, "%s", lib->sources_path);
    }
    toml_value *root = toml_parse_file(lib->sources_path, LIB_MAX_FILE_BYTES, err);
    if (!root)
        return -1;
    const char *f = lib->sources_path;
    int rc = -1;
    for (size_t i = 0; i < toml_len(root); i++) {
        const toml_kv *kv = toml_entry(root, i);
        if (strcmp(kv->key, "version") == 0) {
            if (kv->val->type != TOML_INTEGER || kv->val->u.i < 1) {
                as_err_at(err, f, kv->line, kv->col, "`version` must be a positive integer");
                goto out;
            }
            if (kv->val->u.i > LIB_SOURCES_VERSION) {
                as_err_at(err, f, kv->line, kv->col,
                          "sources.toml version %lld is newer than this agentstack build "
                          "supports (up to %d); upgrade agentstack",
                          (long long)kv->val->u.i, LIB_SOURCES_VERSION);
                goto out;
            }
        } else if (strcmp(kv->key, "source") == 0 && kv->val->type == TOML_ARRAY) {
            for (size_t j = 0; j < toml_len(kv->val); j++) {
                const toml_value *row = toml_at(kv->val, j);
                if (row->type != TOML_TABLE) {
                    as_err_at(err, f, row->line, row->col, "[[source]] entries must be tables");
                    goto out;
                }
                static const char *const keys[] = {"name", "path", "note", NULL};
                for (size_t e = 0; e < toml_len(row); e++) {
                    const toml_kv *x = toml_entry(row, e);
                    if (!key_in(x->key, keys)) {
                        as_err_at(err, f, x->line, x->col, "unknown key '%s' in [[source]]",
                                  x->key);
                        goto out;
                    }
                    if (x->val->type != TOML_STRING) {
                        as_err_at(err, f, x->line, x->col, "`%s` must be a string", x->key);
                        goto out;
                    }
                }
                const char *name = row_str(row, "name"), *path = row_str(row, "path");
                if (!name || !lib_name_valid(name)) {
                    as_err_at(err, f, row->line, row->col,
                              "a [[source]] needs a valid `name` (^[a-z0-9][a-z0-9._-]{0,63}$)");
                    goto out;
                }
                if (!path || path[0] != '/') {
                    as_err_at(err, f, row->line, row->col, "source '%s' needs an absolute `path`",
                              name);
                    goto out;
                }
                if (lib_source_find(lib, name) >= 0) {
                    as_err_at(err, f, row->line, row->col, "two sources named '%s'", name);
                    goto out;
                }
                struct lib_source s = {.name = xstrdup(name),
                                       .path = xstrdup(path),
                                       .note = dupn(row_str(row, "note"))};
                vec_push(&lib->sources, s);
            }
        } else {
            as_err_at(err, f, kv->line, kv->col, "unknown key '%s' in sources.toml", kv->key);
            goto out;
        }
    }
    rc = 0;
out:
    toml_free(root);
    if (rc < 0)
        as_err_hint(err, "fix %s, or re-link with agentstack lib link", f);
    return rc;
}

struct library *lib_open(const char *home, struct as_err *err)
{
    struct library *lib = xcalloc(1, sizeof *lib);
    if (home) {
        lib->home = xstrdup(home);
    } else {
        strbuf h = SB_INIT;
        if (home_dir(&h, err) < 0) {
            sb_release(&h);
            free(lib);
            return NULL;
        }
        lib->home = sb_detach(&h, NULL);
    }
    lib->sources_path = xasprintf("%s/sources.toml", lib->home);
    if (parse_sources(lib, err) < 0) {
        lib_free(lib);
        return NULL;
    }
    if (lib->sources.n) {
        lib->materialized = true;
    } else {
        struct lib_source s = {
            .name = xstrdup("local"), .path = xasprintf("%s/lib", lib->home), .implicit = true};
        vec_push(&lib->sources, s);
    }
    for (size_t i = 0; i < lib->sources.n; i++)
        load_source(lib, i);
    return lib;
}

long lib_source_find(const struct library *lib, const char *name)
{
    for (size_t i = 0; i < lib->sources.n; i++)
        if (strcmp(lib->sources.v[i].name, name) == 0)
            return (long)i;
    return -1;
}

struct lib_source *lib_first(struct library *lib)
{
    return &lib->sources.v[0];
}

/* ---- resolution ----------------------------------------------------------------- */

bool lib_ref_split(const char *ref, char **src, char **name)
{
    if (strncmp(ref, "lib:", 4) == 0) {
        const char *slash = strchr(ref + 4, '/');
        if (slash && slash > ref + 4 && slash[1]) {
            *src = xstrndup(ref + 4, (size_t)(slash - ref - 4));
            *name = xstrdup(slash + 1);
            return true;
        }
    }
    const char *colon = strchr(ref, ':');
    if (!colon || colon == ref || !colon[1])
        return false;
    char *s = xstrndup(ref, (size_t)(colon - ref));
    if (!lib_name_valid(s)) {
        free(s);
        return false;
    }
    *src = s;
    *name = xstrdup(colon + 1);
    return true;
}

int lib_resolve(const struct library *lib, enum lib_kind kind, const char *ref,
                const struct lib_item **out, struct as_err *err)
{
    *out = NULL;
    char *src = NULL, *name = NULL;
    if (lib_ref_split(ref, &src, &name)) {
        long si = lib_source_find(lib, src);
        if (si < 0) {
            as_err_set(err, "no linked library named '%s' (in '%s'): that source is not linked",
                       src, ref);
            as_err_hint(err,
                        "agentstack lib sources   (or link it: agentstack lib link <path> "
                        "--name %s --write)",
                        src);
            free(src);
            free(name);
            return -1;
        }
        *out = source_find(&lib->sources.v[si], kind, name);
        free(src);
        free(name);
        return *out ? 1 : 0;
    }
    for (size_t i = 0; i < lib->sources.n; i++) {
        const struct lib_item *it = source_find(&lib->sources.v[i], kind, ref);
        if (it) {
            *out = it;
            return 1;
        }
    }
    return 0;
}

void lib_find_collisions(const struct library *lib, lib_collisions *out)
{
    for (size_t i = 0; i < lib->sources.n; i++) {
        const struct lib_source *s = &lib->sources.v[i];
        for (size_t j = 0; j < s->items.n; j++) {
            const struct lib_item *it = &s->items.v[j];
            bool earlier = false;
            for (size_t e = 0; e < i && !earlier; e++)
                earlier = source_find(&lib->sources.v[e], it->kind, it->name) != NULL;
            if (earlier)
                continue;
            struct lib_collision c = {.kind = it->kind, .name = it->name, .winner = i};
            for (size_t l = i + 1; l < lib->sources.n; l++)
                if (source_find(&lib->sources.v[l], it->kind, it->name))
                    vec_push(&c.shadowed, l);
            if (c.shadowed.n)
                vec_push(out, c);
        }
    }
}

void lib_collisions_free(lib_collisions *c)
{
    for (size_t i = 0; i < c->n; i++)
        vec_free(&c->v[i].shadowed);
    vec_free(c);
}

void lib_collision_format(const struct library *lib, const struct lib_collision *c, strbuf *out)
{
    sb_addf(out, "%s %s  %s used", c->name, lib_kind_name(c->kind), lib->sources.v[c->winner].name);
    for (size_t i = 0; i < c->shadowed.n; i++)
        sb_addf(out, " · %s shadowed", lib->sources.v[c->shadowed.v[i]].name);
    for (size_t i = 0; i < c->shadowed.n; i++)
        sb_addf(out, "%s%s:%s", i ? ", " : " ↳ ", lib->sources.v[c->shadowed.v[i]].name, c->name);
}

static int workflow_lookup(const struct library *lib, const char *ref, strbuf *path,
                           struct as_err *err);

bool lib_manifest_has(void *ctx, enum mf_item_kind kind, const char *name)
{
    const struct library *lib = ctx;
    enum lib_kind k;
    switch (kind) {
    case MF_ITEM_WORKFLOW: {
        strbuf p = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        /* -1 (a broken holder, an unknown source) counts as held, so the
         * pin step reports the real reason instead of "no source". */
        bool found = lib && workflow_lookup(lib, name, &p, &err) != 0;
        sb_release(&p);
        return found;
    }
    case MF_ITEM_SERVER:
        k = LIB_SERVER;
        break;
    case MF_ITEM_SKILL:
        k = LIB_SKILL;
        break;
    case MF_ITEM_INSTRUCTION:
        k = LIB_INSTRUCTION;
        break;
    case MF_ITEM_PACKAGE:
        k = LIB_PACKAGE;
        break;
    case MF_ITEM_EXTENSION:
        k = LIB_EXTENSION;
        break;
    default:
        return false;
    }
    const struct lib_item *it = NULL;
    struct as_err err = AS_ERR_INIT;
    return lib && lib_resolve(lib, k, name, &it, &err) == 1;
}

/* Workflows are not indexed kinds (a source's layout has no workflows/), yet pin_collect
 * asks: a source's workflows/<name> (a directory or one file), first source
 * wins, a qualified ref only in its source. Symlinks at any component refuse. */
static int workflow_lookup(const struct library *lib, const char *ref, strbuf *path,
                           struct as_err *err)
{
    char *src = NULL, *name = NULL;
    bool q = lib_ref_split(ref, &src, &name);
    const char *bare = q ? name : ref;
    int rc = 0;
    long only = -1;
    if (q && (only = lib_source_find(lib, src)) < 0) {
        rc = as_err_set(err, "no linked library named '%s'", src);
        goto out;
    }
    if (!lib_name_valid(bare))
        goto out;
    for (size_t i = 0; i < lib->sources.n; i++) {
        if (only >= 0 && (size_t)only != i)
            continue;
        const struct lib_source *s = &lib->sources.v[i];
        char *rel = xasprintf("workflows/%s", bare);
        char *full = xasprintf("%s/%s", s->path, rel);
        struct stat st;
        bool there = lstat(full, &st) == 0;
        if (there) {
            strbuf safe = SB_INIT;
            if (fs_contain(s->path, NULL, rel, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, &safe,
                           err) < 0) {
                rc = -1;
            } else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
                rc = as_err_set(err,
                                "library workflow '%s' in source '%s': %s is not a regular "
                                "file or directory",
                                bare, s->name, full);
            } else {
                sb_reset(path);
                sb_adds(path, full);
                rc = 1;
            }
            sb_release(&safe);
        }
        free(rel);
        free(full);
        if (there)
            break;
    }
out:
    free(src);
    free(name);
    return rc;
}

int lib_pin_lookup(void *ctx, enum pin_kind kind, const char *name, strbuf *path,
                   struct as_err *err)
{
    const struct library *lib = ctx;
    enum lib_kind k;
    mode_t want, also = 0;
    switch (kind) {
    case PIN_SKILL:
        k = LIB_SKILL;
        want = S_IFDIR;
        break;
    case PIN_SERVER:
        k = LIB_SERVER;
        want = S_IFREG;
        break;
    case PIN_INSTRUCTION:
        k = LIB_INSTRUCTION; /* the body is instructions/<n>/instruction.toml */
        want = S_IFREG;
        break;
    case PIN_EXTENSION:
        k = LIB_EXTENSION; /* a directory, or a single-file extension */
        want = S_IFDIR;
        also = S_IFREG;
        break;
    case PIN_WORKFLOW:
        return workflow_lookup(lib, name, path, err);
    default:
        return 0;
    }
    const struct lib_item *it = NULL;
    int r = lib_resolve(lib, k, name, &it, err);
    if (r <= 0)
        return r;
    /* A holder whose body is gone is an error, never a silent fall through
     * to a shadowed copy in a later source. */
    if (!is_kind(it->body, want) && !(also && is_kind(it->body, also))) {
        as_err_set(err, "library %s '%s' is listed in source '%s' but %s is %s", lib_kind_name(k),
                   it->name, lib->sources.v[it->source].name, it->body,
                   fs_exists(it->body) ? "not a regular entry (symlink or wrong type)" : "missing");
        return -1;
    }
    sb_reset(path);
    sb_adds(path, it->body);
    return 1;
}

/* ---- link, unlink, reorder -------------------------------------------------------- */

static void materialize(struct library *lib)
{
    if (lib->materialized)
        return;
    lib->materialized = true;
    for (size_t i = 0; i < lib->sources.n; i++)
        lib->sources.v[i].implicit = false;
}

static bool same_folder(const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return true;
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    bool same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}

int lib_link(struct library *lib, const char *path, const char *name, bool first, const char *note,
             struct as_err *err)
{
    strbuf abs = SB_INIT;
    if (discover_abspath(path, &abs, err) < 0) {
        sb_release(&abs);
        return -1;
    }
    char *nm = NULL;
    if (name) {
        nm = xstrdup(name);
    } else {
        const char *base = strrchr(abs.buf, '/');
        base = base ? base + 1 : abs.buf;
        nm = xstrdup(base);
        for (char *p = nm; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    int rc = -1;
    if (!lib_name_valid(nm)) {
        as_err_set(err, "'%s' is not a valid library source name (^[a-z0-9][a-z0-9._-]{0,63}$)",
                   nm);
        as_err_hint(err, "pass --name <name>");
        goto out;
    }
    for (size_t i = 0; i < lib->sources.n; i++) {
        if (same_folder(lib->sources.v[i].path, abs.buf)) {
            as_err_set(err, "%s is already linked as '%s'", abs.buf, lib->sources.v[i].name);
            goto out;
        }
    }
    if (lib_source_find(lib, nm) >= 0) {
        as_err_set(err, "a library source named '%s' is already linked (%s)", nm,
                   lib->sources.v[lib_source_find(lib, nm)].path);
        as_err_hint(err, "pick another with --name");
        goto out;
    }
    materialize(lib);
    struct lib_source s = {.name = nm, .path = sb_detach(&abs, NULL), .note = dupn(note)};
    nm = NULL;
    vec_push(&lib->sources, s);
    size_t at = lib->sources.n - 1;
    if (first) {
        struct lib_source tmp = lib->sources.v[at];
        memmove(&lib->sources.v[1], &lib->sources.v[0], at * sizeof *lib->sources.v);
        lib->sources.v[0] = tmp;
        at = 0;
    }
    /* item source indexes follow the new order */
    for (size_t i = 0; i < lib->sources.n; i++)
        for (size_t j = 0; j < lib->sources.v[i].items.n; j++)
            lib->sources.v[i].items.v[j].source = i;
    load_source(lib, at);
    rc = 0;
out:
    free(nm);
    sb_release(&abs);
    return rc;
}

int lib_unlink(struct library *lib, const char *name, struct as_err *err)
{
    long i = lib_source_find(lib, name);
    if (i < 0) {
        as_err_set(err, "no linked library named '%s'", name);
        as_err_hint(err, "agentstack lib sources");
        return -1;
    }
    if (lib->sources.n == 1) {
        as_err_set(err, "cannot unlink '%s': it is the last library source", name);
        as_err_hint(err, "link another first: agentstack lib link <path> --write");
        return -1;
    }
    materialize(lib);
    source_free(&lib->sources.v[i]);
    memmove(&lib->sources.v[i], &lib->sources.v[i + 1],
            (lib->sources.n - (size_t)i - 1) * sizeof *lib->sources.v);
    lib->sources.n--;
    for (size_t s = 0; s < lib->sources.n; s++)
        for (size_t j = 0; j < lib->sources.v[s].items.n; j++)
            lib->sources.v[s].items.v[j].source = s;
    return 0;
}

int lib_reorder(struct library *lib, const char *const *names, size_t n, struct as_err *err)
{
    if (n != lib->sources.n) {
        as_err_set(err, "reorder needs every linked source exactly once (%zu linked, %zu given)",
                   lib->sources.n, n);
        as_err_hint(err, "agentstack lib sources");
        return -1;
    }
    size_t *order = xcalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++) {
        long si = lib_source_find(lib, names[i]);
        bool dup = false;
        for (size_t j = 0; j < i && si >= 0; j++)
            dup = dup || order[j] == (size_t)si;
        if (si < 0 || dup) {
            as_err_set(err, si < 0 ? "no linked library named '%s'" : "'%s' is named twice",
                       names[i]);
            as_err_hint(err, "name every source from agentstack lib sources exactly once");
            free(order);
            return -1;
        }
        order[i] = (size_t)si;
    }
    materialize(lib);
    struct lib_source *nv = xcalloc(n, sizeof *nv);
    for (size_t i = 0; i < n; i++)
        nv[i] = lib->sources.v[order[i]];
    memcpy(lib->sources.v, nv, n * sizeof *nv);
    free(nv);
    free(order);
    for (size_t s = 0; s < lib->sources.n; s++)
        for (size_t j = 0; j < lib->sources.v[s].items.n; j++)
            lib->sources.v[s].items.v[j].source = s;
    return 0;
}

int lib_sources_save(struct library *lib, struct as_err *err)
{
    materialize(lib);
    toml_value *root = toml_new(TOML_TABLE);
    toml_table_set(root, "version", toml_new_int(LIB_SOURCES_VERSION));
    toml_value *arr = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < lib->sources.n; i++) {
        toml_value *row = toml_new(TOML_TABLE);
        toml_table_set(row, "name", toml_new_string(lib->sources.v[i].name));
        toml_table_set(row, "path", toml_new_string(lib->sources.v[i].path));
        if (lib->sources.v[i].note)
            toml_table_set(row, "note", toml_new_string(lib->sources.v[i].note));
        toml_array_push(arr, row);
    }
    toml_table_set(root, "source", arr);
    strbuf out = SB_INIT;
    sb_adds(&out, "# Library sources, read first to last (agentstack lib sources). "
                  "Machine-local: never synced.\n");
    toml_emit(root, &out);
    toml_free(root);
    int rc = fs_mkdirs(lib->home, HOME_DIR_MODE, err);
    if (rc == 0) {
        struct fs_write_opts o = {.mode = HOME_FILE_MODE, .symlinks = FS_SYMLINK_REFUSE};
        rc = fs_write_atomic(lib->sources_path, out.buf, out.len, &o, err);
    }
    sb_release(&out);
    return rc;
}
