/* export_doc (export_doc.h): collecting a project's files, writing the
 * document, and reading one back strictly. */
#include "cli/export_doc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base64.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/literal_secret.h"
#include "library/sync.h"

void export_doc_free(struct export_doc *d)
{
    for (size_t i = 0; i < d->files.n; i++) {
        free(d->files.v[i].path);
        sb_release(&d->files.v[i].bytes);
    }
    vec_free(&d->files);
    free(d->manifest);
    memset(d, 0, sizeof *d);
}

const char *export_doc_path_problem(const char *path)
{
    size_t n = strlen(path);
    if (n == 0 || n > 1024)
        return "a path must be 1 to 1024 bytes";
    if (path[0] == '/')
        return "an absolute path";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20 || c == 0x7f)
            return "a control character in a path";
        if (c == '\\')
            return "a backslash in a path";
    }
    for (const char *p = path;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0)
            return "an empty path component";
        if ((len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2)))
            return "a '.' or '..' path component";
        if (len == 4 && !strncmp(p, ".git", 4))
            return "a path into .git";
        if (!slash)
            break;
        p = slash + 1;
    }
    return "";
}

/* ---- collecting ---------------------------------------------------------- */

/* The files of one walk, added to the document as they are hashed. */
struct collect {
    struct export_doc *d;
    const char *prefix; /* the tree's path in the document */
    const char *abs;    /* the tree on disk */
    struct export_file *cur;
    size_t total;
};

static struct export_file *add_file(struct export_doc *d, const char *path)
{
    for (size_t i = 0; i < d->files.n; i++)
        if (!strcmp(d->files.v[i].path, path))
            return NULL; /* already carried (two declarations share it) */
    struct export_file f = {xstrdup(path), SB_INIT, false};
    vec_push(&d->files, f);
    return &d->files.v[d->files.n - 1];
}

static int check_bounds(const struct export_doc *d, size_t total, struct as_err *err)
{
    if (d->files.n > EXPORT_DOC_MAX_FILES)
        return as_err_set(err, "the export would carry more than %d files", EXPORT_DOC_MAX_FILES);
    if (total > EXPORT_DOC_MAX_BYTES)
        return as_err_set(err, "the export would carry more than %zu MiB",
                          EXPORT_DOC_MAX_BYTES >> 20);
    return 0;
}

static bool is_executable(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

static int sink_begin(void *ctx, const char *rel, uint64_t size, struct as_err *err)
{
    struct collect *c = ctx;
    char *path = xasprintf("%s/%s", c->prefix, rel);
    c->cur = add_file(c->d, path);
    if (c->cur) {
        char *abs = xasprintf("%s/%s", c->abs, rel);
        c->cur->executable = is_executable(abs);
        free(abs);
    }
    free(path);
    c->total += size;
    return check_bounds(c->d, c->total, err);
}

static int sink_data(void *ctx, const void *data, size_t len, struct as_err *err)
{
    (void)err;
    struct collect *c = ctx;
    if (c->cur)
        sb_add(&c->cur->bytes, data, len);
    return 0;
}

static int sink_end(void *ctx, struct as_err *err)
{
    (void)err;
    ((struct collect *)ctx)->cur = NULL;
    return 0;
}

/* abs (inside root, canonical) as a document path: root's prefix removed. */
static int rel_to_root(const char *root_real, const char *abs, strbuf *out, struct as_err *err)
{
    strbuf real = SB_INIT;
    int rc = fs_realpath(abs, &real, err);
    size_t rn = strlen(root_real);
    if (rc == 0 && (strncmp(real.buf, root_real, rn) != 0 || real.buf[rn] != '/'))
        rc = as_err_set(err, "%s lies outside the project", abs);
    if (rc == 0) {
        sb_reset(out);
        sb_adds(out, real.buf + rn + 1);
        const char *why = export_doc_path_problem(out->buf);
        if (why[0])
            rc = as_err_set(err, "%s cannot be exported: %s", abs, why);
    }
    sb_release(&real);
    return rc;
}

static int collect_file(struct export_doc *d, const char *root_real, const char *abs, size_t *total,
                        struct as_err *err)
{
    strbuf rel = SB_INIT;
    int rc = rel_to_root(root_real, abs, &rel, err);
    struct export_file *f = rc == 0 ? add_file(d, rel.buf) : NULL;
    if (f) {
        rc = fs_read_file(abs, EXPORT_DOC_MAX_BYTES, 1, &f->bytes, err);
        f->executable = is_executable(abs);
        *total += f->bytes.len;
        if (rc == 0)
            rc = check_bounds(d, *total, err);
    }
    sb_release(&rel);
    return rc;
}

static int collect_tree(struct export_doc *d, const char *root_real, const char *abs, size_t *total,
                        struct as_err *err)
{
    strbuf rel = SB_INIT, real = SB_INIT;
    int rc = rel_to_root(root_real, abs, &rel, err);
    if (rc == 0)
        rc = fs_realpath(abs, &real, err);
    if (rc == 0) {
        struct collect c = {d, rel.buf, real.buf, NULL, *total};
        struct digest_sink sink = {&c, NULL, sink_begin, sink_data, sink_end};
        char hex[SHA256_HEX_LEN + 1];
        rc = digest_tree(real.buf, DIGEST_TREE_SKILL, &sink, NULL, hex, err);
        *total = c.total;
    }
    sb_release(&rel);
    sb_release(&real);
    return rc;
}

/* The manifest's servers, and its path skills' files, hold no literal
 * secret: an export is meant to be handed on. */
static int refuse_literal_secrets(const struct manifest *m, const struct export_doc *d,
                                  struct as_err *err)
{
    const struct export_file *mf = &d->files.v[0];
    toml_value *t = toml_parse(m->path, mf->bytes.buf, mf->bytes.len, err);
    if (!t)
        return -1;
    int rc = 0;
    const toml_value *servers = toml_get(t, "servers");
    for (size_t i = 0; rc == 0 && servers && servers->type == TOML_TABLE && i < toml_len(servers);
         i++) {
        const toml_kv *kv = toml_entry(servers, i);
        lsec_findings f = VEC_INIT;
        lsec_check_server_table(kv->val, &f);
        if (f.n) {
            rc = as_err_at(err, m->path, kv->line, kv->col,
                           "server '%s' holds a literal secret ('%s' in %s, %s)", kv->key,
                           f.v[0].key, f.v[0].where, lsec_why_text(f.v[0].why));
            as_err_hint(err, "store it with `agentstack secret set NAME`, write ${NAME} in its "
                             "place, then export again");
        }
        lsec_findings_free(&f);
    }
    toml_free(t);
    for (size_t i = 0; rc == 0 && i < m->skills.n; i++) {
        const struct mf_skill *sk = &m->skills.v[i];
        strbuf dir = SB_INIT;
        lib_secret_hits hits = VEC_INIT;
        if (sk->source == MF_SOURCE_PATH && sk->path &&
            manifest_item_path(m, sk->path, NULL, &dir, err) == 0 && fs_is_dir(dir.buf) &&
            lib_secret_scan_tree(dir.buf, &hits, err) == 0 && hits.n) {
            rc = as_err_set(err, "skill '%s': %s/%s holds a literal secret ('%s', %s)", sk->name,
                            sk->path, hits.v[0].file, hits.v[0].key, lsec_why_text(hits.v[0].why));
            as_err_hint(err, "replace the value with a ${REF} the skill's reader sets, then "
                             "export again");
        } else if (as_err_isset(err)) {
            rc = -1;
        }
        lib_secret_hits_free(&hits);
        sb_release(&dir);
    }
    return rc;
}

static int collect_declared(const struct manifest *m, struct export_doc *d, const char *root_real,
                            size_t *total, struct as_err *err)
{
    strbuf abs = SB_INIT;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->skills.n; i++) {
        const struct mf_skill *sk = &m->skills.v[i];
        if (sk->source != MF_SOURCE_PATH || !sk->path)
            continue;
        rc = manifest_item_path(m, sk->path, NULL, &abs, err);
        if (rc == 0)
            rc = collect_tree(d, root_real, abs.buf, total, err);
    }
    for (size_t i = 0; rc == 0 && i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        if (in->inherited)
            continue;
        if (in->path && (rc = manifest_item_path(m, in->path, NULL, &abs, err)) == 0)
            rc = collect_file(d, root_real, abs.buf, total, err);
        for (size_t j = 0; rc == 0 && j < in->variants.n; j++)
            if ((rc = manifest_item_path(m, in->variants.v[j].path, NULL, &abs, err)) == 0)
                rc = collect_file(d, root_real, abs.buf, total, err);
    }
    sb_release(&abs);
    return rc;
}

int export_doc_collect(const struct bundle_paths *p, const struct manifest *m,
                       struct export_doc *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    strbuf root = SB_INIT, rel = SB_INIT;
    size_t total = 0;
    int rc = fs_realpath(p->project_root, &root, err);
    if (rc == 0)
        rc = collect_file(out, root.buf, p->manifest, &total, err);
    if (rc == 0) {
        out->manifest = xstrdup(out->files.v[0].path);
        rc = refuse_literal_secrets(m, out, err);
    }
    const char *beside[] = {p->lock, p->lock_sig};
    for (size_t i = 0; rc == 0 && i < 2; i++)
        if (fs_exists(beside[i]))
            rc = collect_file(out, root.buf, beside[i], &total, err);
    if (rc == 0)
        rc = collect_declared(m, out, root.buf, &total, err);
    sb_release(&root);
    sb_release(&rel);
    if (rc < 0)
        export_doc_free(out);
    return rc;
}

/* ---- writing ------------------------------------------------------------- */

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct export_file *)a)->path, ((const struct export_file *)b)->path);
}

void export_doc_write(const struct export_doc *d, strbuf *out)
{
    struct export_file *sorted = xcalloc(d->files.n ? d->files.n : 1, sizeof *sorted);
    memcpy(sorted, d->files.v, d->files.n * sizeof *sorted);
    qsort(sorted, d->files.n, sizeof *sorted, by_path);
    json_t *files = json_array();
    for (size_t i = 0; i < d->files.n; i++) {
        const struct export_file *f = &sorted[i];
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(f->bytes.buf, f->bytes.len, hex);
        strbuf b64 = SB_INIT;
        base64_encode(f->bytes.buf, f->bytes.len, &b64);
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(f->path));
        json_object_set_new(o, "size", json_integer((json_int_t)f->bytes.len));
        json_object_set_new(o, "sha256", json_string(hex));
        if (f->executable)
            json_object_set_new(o, "executable", json_true());
        json_object_set_new(o, "base64", json_stringn(b64.buf, b64.len));
        json_array_append_new(files, o);
        sb_release(&b64);
    }
    free(sorted);
    json_t *doc = json_object();
    json_object_set_new(doc, "agentstack_export", json_integer(EXPORT_DOC_VERSION));
    json_object_set_new(doc, "manifest", json_string(d->manifest));
    json_object_set_new(doc, "files", files);
    json_dump_pretty(doc, out);
    json_decref(doc);
}

/* ---- reading ------------------------------------------------------------- */

/* Only the named keys; -1 naming the first other one. */
static int only_keys(const char *name, const json_t *o, const char *const *keys, const char *what,
                     struct as_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i])
            return as_err_set(err, "%s: %s has an unknown field '%s'", name, what, k);
    }
    return 0;
}

static int read_file_entry(const char *name, size_t idx, const json_t *o, struct export_doc *out,
                           size_t *total, struct as_err *err)
{
    static const char *const keys[] = {"path", "size", "sha256", "executable", "base64", NULL};
    char what[48];
    snprintf(what, sizeof what, "files[%zu]", idx);
    if (!json_is_object(o))
        return as_err_set(err, "%s: %s is not an object", name, what);
    if (only_keys(name, o, keys, what, err) < 0)
        return -1;
    const json_t *path = json_object_get(o, "path"), *size = json_object_get(o, "size"),
                 *sum = json_object_get(o, "sha256"), *exe = json_object_get(o, "executable"),
                 *b64 = json_object_get(o, "base64");
    if (!json_is_string(path) || !json_is_integer(size) || !json_is_string(sum) ||
        !json_is_string(b64) || (exe && !json_is_boolean(exe)))
        return as_err_set(err,
                          "%s: %s needs path, size, sha256 and base64 (and executable only as "
                          "true or false)",
                          name, what);
    const char *p = json_string_value(path);
    const char *why = export_doc_path_problem(p);
    if (strlen(p) != json_string_length(path))
        why = "a NUL in a path";
    if (why[0])
        return as_err_set(err, "%s: %s: path '%s' is refused: %s", name, what, p, why);
    for (size_t i = 0; i < out->files.n; i++)
        if (!strcmp(out->files.v[i].path, p))
            return as_err_set(err, "%s: %s: path '%s' appears twice", name, what, p);
    struct export_file f = {xstrdup(p), SB_INIT, exe && json_is_true(exe)};
    vec_push(&out->files, f);
    struct export_file *nf = &out->files.v[out->files.n - 1];
    if (base64_decode(json_string_value(b64), json_string_length(b64), &nf->bytes) < 0)
        return as_err_set(err, "%s: %s ('%s'): base64 is not canonical base64", name, what, p);
    *total += nf->bytes.len;
    if (out->files.n > EXPORT_DOC_MAX_FILES || *total > EXPORT_DOC_MAX_BYTES)
        return as_err_set(err, "%s: more than %d files or %zu MiB", name, EXPORT_DOC_MAX_FILES,
                          EXPORT_DOC_MAX_BYTES >> 20);
    if (json_integer_value(size) != (json_int_t)nf->bytes.len)
        return as_err_set(err, "%s: %s ('%s'): size %lld does not match its %zu bytes", name, what,
                          p, (long long)json_integer_value(size), nf->bytes.len);
    char want[SHA256_HEX_LEN + 1], got[SHA256_HEX_LEN + 1];
    sha256_hex(nf->bytes.buf, nf->bytes.len, got);
    if (sha256_normalize_hex(json_string_value(sum), want) < 0 || strcmp(want, got))
        return as_err_set(err, "%s: %s ('%s'): sha256 does not match its bytes (they hash to %s)",
                          name, what, p, got);
    return 0;
}

int export_doc_read(const char *name, const char *data, size_t len, struct export_doc *out,
                    struct as_err *err)
{
    static const char *const keys[] = {"agentstack_export", "manifest", "files", NULL};
    memset(out, 0, sizeof *out);
    json_t *doc = json_parse(name, data, len, err);
    if (!doc)
        return -1;
    int rc = -1;
    const json_t *ver = json_object_get(doc, "agentstack_export"),
                 *man = json_object_get(doc, "manifest"), *files = json_object_get(doc, "files");
    size_t total = 0;
    if (!json_is_object(doc) || !json_is_integer(ver)) {
        as_err_set(err, "%s: not an agentstack export (no \"agentstack_export\" version)", name);
    } else if (json_integer_value(ver) != EXPORT_DOC_VERSION) {
        as_err_set(err, "%s: export format %lld is not one this agentstack reads (it reads %d)",
                   name, (long long)json_integer_value(ver), EXPORT_DOC_VERSION);
    } else if (only_keys(name, doc, keys, "the document", err) == 0) {
        if (!json_is_string(man) || !json_is_array(files)) {
            as_err_set(err, "%s: needs \"manifest\" (a path) and \"files\" (an array)", name);
        } else {
            rc = 0;
            for (size_t i = 0; rc == 0 && i < json_array_size(files); i++)
                rc = read_file_entry(name, i, json_array_get(files, i), out, &total, err);
        }
    }
    if (rc == 0) {
        const char *mp = json_string_value(man);
        const char *base = strrchr(mp, '/');
        rc = -1;
        if (strcmp(base ? base + 1 : mp, BUNDLE_MANIFEST_NAME) != 0 ||
            (base && ((size_t)(base - mp) != strlen(BUNDLE_DIR_NAME) ||
                      strncmp(mp, BUNDLE_DIR_NAME, strlen(BUNDLE_DIR_NAME)) != 0))) {
            as_err_set(err, "%s: the manifest must be %s or %s/%s, not '%s'", name,
                       BUNDLE_MANIFEST_NAME, BUNDLE_DIR_NAME, BUNDLE_MANIFEST_NAME, mp);
            goto out;
        }
        for (size_t i = 0; i < out->files.n; i++)
            if (!strcmp(out->files.v[i].path, mp))
                rc = 0;
        if (rc < 0)
            as_err_set(err, "%s: the manifest '%s' is not among its files", name, mp);
        else
            out->manifest = xstrdup(mp);
    }
out:
    json_decref(doc);
    if (rc < 0)
        export_doc_free(out);
    return rc;
}

/* ---- what a document may carry ------------------------------------------ */

/* dir (the manifest's directory in the document, "" at the root) joined
 * with a declared relative path, lexically; -1 when it climbs out or is
 * absolute (an import writes only below the target). */
static int declared_path(const char *dir, const char *declared, strbuf *out)
{
    sb_reset(out);
    if (!declared || declared[0] == '/')
        return -1;
    sb_adds(out, dir);
    const char *p = declared;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && !strncmp(p, "..", 2)) {
            char *cut = out->len ? strrchr(out->buf, '/') : NULL;
            if (!out->len)
                return -1;
            sb_setlen(out, cut ? (size_t)(cut - out->buf) : 0);
        } else if (n && !(n == 1 && p[0] == '.')) {
            if (out->len)
                sb_addc(out, '/');
            sb_add(out, p, n);
        }
        p += n + (slash ? 1 : 0);
    }
    return out->len ? 0 : -1;
}

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return !strcmp(path, dir) || (!strncmp(path, dir, n) && path[n] == '/');
}

static bool declared_by(const struct manifest *m, const char *dir, const char *path)
{
    strbuf d = SB_INIT;
    bool ok = false;
    for (size_t i = 0; !ok && i < m->skills.n; i++) {
        const struct mf_skill *sk = &m->skills.v[i];
        ok = sk->source == MF_SOURCE_PATH && declared_path(dir, sk->path, &d) == 0 &&
             strcmp(path, d.buf) != 0 && under(path, d.buf);
    }
    for (size_t i = 0; !ok && i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        ok = !in->inherited && in->path && declared_path(dir, in->path, &d) == 0 &&
             !strcmp(path, d.buf);
        for (size_t j = 0; !ok && !in->inherited && j < in->variants.n; j++)
            ok = declared_path(dir, in->variants.v[j].path, &d) == 0 && !strcmp(path, d.buf);
    }
    sb_release(&d);
    return ok;
}

int export_doc_check_declared(const struct export_doc *d, const struct manifest *m,
                              struct as_err *err)
{
    const char *slash = strrchr(d->manifest, '/');
    char *dir = slash ? xstrndup(d->manifest, (size_t)(slash - d->manifest)) : xstrdup("");
    char *lock = xasprintf("%s%s%s", dir, dir[0] ? "/" : "", BUNDLE_LOCK_NAME);
    char *sig = xasprintf("%s%s%s", dir, dir[0] ? "/" : "", BUNDLE_SIG_NAME);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < d->files.n; i++) {
        const char *p = d->files.v[i].path;
        if (strcmp(p, d->manifest) && strcmp(p, lock) && strcmp(p, sig) && !declared_by(m, dir, p))
            rc = as_err_set(err,
                            "'%s' is not part of the setup: its manifest declares no path "
                            "skill or instruction file that holds it",
                            p);
    }
    free(dir);
    free(lock);
    free(sig);
    return rc;
}
