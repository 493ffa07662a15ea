/* lockfile — the model, reader and writer; see lockfile.h. */
#include "bundle/lockfile.h"

#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/xalloc.h"

struct lockfile *lockfile_new(void)
{
    struct lockfile *l = xcalloc(1, sizeof *l);
    l->version = LOCKFILE_VERSION;
    return l;
}

void lock_skill_free(struct lock_skill *s)
{
    free(s->name);
    free(s->source);
    free(s->path);
    free(s->git);
    free(s->rev);
    free(s->license);
    free(s->origin);
}

void lock_server_free(struct lock_server *s)
{
    free(s->name);
    free(s->source);
}

static void free_instruction(struct lock_instruction *in)
{
    free(in->name);
    free(in->path);
    for (size_t i = 0; i < in->variants.n; i++) {
        free(in->variants.v[i].cli);
        free(in->variants.v[i].model);
        free(in->variants.v[i].path);
    }
    vec_free(&in->variants);
}

static void free_extension(struct lock_extension *e)
{
    free(e->name);
    free(e->target);
    free(e->source);
    free(e->path);
    free(e->git);
    free(e->rev);
}

static void free_workflow(struct lock_workflow *w)
{
    free(w->name);
    strvec_clear(&w->roles);
    free(w->source);
    free(w->path);
    free(w->git);
    free(w->rev);
    free(w->blueprint);
}

void lockfile_free(struct lockfile *l)
{
    if (!l)
        return;
    free(l->manifest_digest);
    for (size_t i = 0; i < l->skills.n; i++)
        lock_skill_free(&l->skills.v[i]);
    vec_free(&l->skills);
    for (size_t i = 0; i < l->servers.n; i++)
        lock_server_free(&l->servers.v[i]);
    vec_free(&l->servers);
    for (size_t i = 0; i < l->instructions.n; i++)
        free_instruction(&l->instructions.v[i]);
    vec_free(&l->instructions);
    for (size_t i = 0; i < l->executables.n; i++) {
        free(l->executables.v[i].path);
        free(l->executables.v[i].kind);
    }
    vec_free(&l->executables);
    for (size_t i = 0; i < l->settings.n; i++) {
        free(l->settings.v[i].target);
        free(l->settings.v[i].key);
    }
    vec_free(&l->settings);
    for (size_t i = 0; i < l->extensions.n; i++)
        free_extension(&l->extensions.v[i]);
    vec_free(&l->extensions);
    for (size_t i = 0; i < l->workflows.n; i++)
        free_workflow(&l->workflows.v[i]);
    vec_free(&l->workflows);
    toml_free(l->ext_package);
    free(l);
}

/* ---- reading ------------------------------------------------------------ */

struct rd {
    const char *path;
    struct as_err *err;
};

static int bad(struct rd *r, const toml_value *v, const char *fmt, const char *a, const char *b)
    __attribute__((format(printf, 3, 0)));
static int bad(struct rd *r, const toml_value *v, const char *fmt, const char *a, const char *b)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    as_err_at(r->err, r->path, v ? v->line : 0, v ? v->col : 0, fmt, a, b);
#pragma GCC diagnostic pop
    as_err_hint(r->err, "regenerate it: agentstack lock --write");
    return -1;
}

/* Optional string field: absent → NULL; wrong type or NUL inside → error. */
static int get_str(struct rd *r, const toml_value *tab, const char *tname, const char *key,
                   bool required, char **out)
{
    *out = NULL;
    const toml_value *v = toml_get(tab, key);
    if (!v) {
        if (required)
            return bad(r, tab, "[[%s]] is missing `%s`", tname, key);
        return 0;
    }
    if (v->type != TOML_STRING || memchr(v->u.str.s, '\0', v->u.str.len))
        return bad(r, v, "`%s` in [[%s]] must be a string", key, tname);
    *out = xstrdup(v->u.str.s);
    return 0;
}

static int get_checksum(struct rd *r, const toml_value *tab, const char *tname,
                        char out[SHA256_HEX_LEN + 1])
{
    const toml_value *v = toml_get(tab, "checksum");
    if (!v)
        return bad(r, tab, "[[%s]] is missing `%s`", tname, "checksum");
    if (v->type != TOML_STRING || sha256_normalize_hex(v->u.str.s, out) < 0)
        return bad(r, v, "malformed checksum in [[%s]]%s: expected 64 hex characters", tname, "");
    return 0;
}

/* Every [[table]] array is checked to really be an array of tables. */
static const toml_value *rows(struct rd *r, const toml_value *root, const char *key, int *rc)
{
    const toml_value *a = toml_get(root, key);
    if (!a)
        return NULL;
    if (a->type != TOML_ARRAY) {
        *rc = bad(r, a, "`%s` must be an array of tables ([[%s]])", key, key);
        return NULL;
    }
    for (size_t i = 0; i < a->u.arr.n; i++)
        if (a->u.arr.items[i]->type != TOML_TABLE) {
            *rc = bad(r, a->u.arr.items[i], "`%s` must be an array of tables ([[%s]])", key, key);
            return NULL;
        }
    return a;
}

static int read_skills(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "skill", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_skill s = {0};
        rc = get_str(r, t, "skill", "name", true, &s.name);
        if (rc == 0)
            rc = get_str(r, t, "skill", "source", false, &s.source);
        if (rc == 0)
            rc = get_str(r, t, "skill", "path", false, &s.path);
        if (rc == 0)
            rc = get_str(r, t, "skill", "git", false, &s.git);
        if (rc == 0)
            rc = get_str(r, t, "skill", "rev", false, &s.rev);
        if (rc == 0)
            rc = get_str(r, t, "skill", "license", false, &s.license);
        if (rc == 0)
            rc = get_str(r, t, "skill", "origin", false, &s.origin);
        if (rc == 0)
            rc = get_checksum(r, t, "skill", s.checksum);
        if (rc == 0 && !s.source)
            s.source = xstrdup(s.git ? "git" : "path");
        if (rc != 0)
            lock_skill_free(&s);
        else
            vec_push(&l->skills, s);
    }
    return rc;
}

static int read_servers(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "server", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_server s = {0};
        rc = get_str(r, t, "server", "name", true, &s.name);
        if (rc == 0)
            rc = get_str(r, t, "server", "source", false, &s.source);
        if (rc == 0)
            rc = get_checksum(r, t, "server", s.checksum);
        if (rc == 0 && !s.source)
            s.source = xstrdup("inline");
        if (rc != 0) {
            free(s.name);
            free(s.source);
        } else {
            vec_push(&l->servers, s);
        }
    }
    return rc;
}

static int read_instructions(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "instruction", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_instruction in = {0};
        rc = get_str(r, t, "instruction", "name", true, &in.name);
        if (rc == 0)
            rc = get_str(r, t, "instruction", "path", false, &in.path);
        if (rc == 0)
            rc = get_checksum(r, t, "instruction", in.checksum);
        const toml_value *va = rc == 0 ? rows(r, t, "variant", &rc) : NULL;
        for (size_t j = 0; va && rc == 0 && j < va->u.arr.n; j++) {
            const toml_value *vt = va->u.arr.items[j];
            struct lock_variant v = {0};
            rc = get_str(r, vt, "instruction.variant", "cli", false, &v.cli);
            if (rc == 0)
                rc = get_str(r, vt, "instruction.variant", "model", false, &v.model);
            if (rc == 0)
                rc = get_str(r, vt, "instruction.variant", "path", true, &v.path);
            if (rc == 0)
                rc = get_checksum(r, vt, "instruction.variant", v.checksum);
            vec_push(&in.variants, v); /* freed with the instruction either way */
        }
        if (rc != 0)
            free_instruction(&in);
        else
            vec_push(&l->instructions, in);
    }
    return rc;
}

static int read_executables(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "executable", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_executable e = {0};
        rc = get_str(r, t, "executable", "path", true, &e.path);
        if (rc == 0)
            rc = get_str(r, t, "executable", "kind", false, &e.kind);
        if (rc == 0 && e.kind && strcmp(e.kind, "file") != 0 && strcmp(e.kind, "root") != 0 &&
            strcmp(e.kind, "tree") != 0)
            rc = bad(r, toml_get(t, "kind"),
                     "`kind` in [[%s]] must be \"file\", \"tree\" or \"root\"%s", "executable", "");
        if (rc == 0)
            rc = get_checksum(r, t, "executable", e.checksum);
        if (rc == 0 && !e.kind)
            e.kind = xstrdup("file");
        if (rc != 0) {
            free(e.path);
            free(e.kind);
        } else {
            vec_push(&l->executables, e);
        }
    }
    return rc;
}

static int read_settings(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "setting", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_setting s = {0};
        rc = get_str(r, t, "setting", "target", true, &s.target);
        if (rc == 0)
            rc = get_str(r, t, "setting", "key", true, &s.key);
        if (rc == 0)
            rc = get_checksum(r, t, "setting", s.checksum);
        if (rc != 0) {
            free(s.target);
            free(s.key);
        } else {
            vec_push(&l->settings, s);
        }
    }
    return rc;
}

static int read_extensions(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "extension", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_extension e = {0};
        rc = get_str(r, t, "extension", "name", true, &e.name);
        if (rc == 0)
            rc = get_str(r, t, "extension", "target", false, &e.target);
        if (rc == 0)
            rc = get_str(r, t, "extension", "source", false, &e.source);
        if (rc == 0)
            rc = get_str(r, t, "extension", "path", false, &e.path);
        if (rc == 0)
            rc = get_str(r, t, "extension", "git", false, &e.git);
        if (rc == 0)
            rc = get_str(r, t, "extension", "rev", false, &e.rev);
        if (rc == 0)
            rc = get_checksum(r, t, "extension", e.checksum);
        if (rc == 0 && !e.source)
            e.source = xstrdup(e.git ? "git" : e.path ? "path" : "library");
        if (rc != 0)
            free_extension(&e);
        else
            vec_push(&l->extensions, e);
    }
    return rc;
}

static int read_workflows(struct rd *r, const toml_value *root, struct lockfile *l)
{
    int rc = 0;
    const toml_value *a = rows(r, root, "workflow", &rc);
    for (size_t i = 0; a && rc == 0 && i < a->u.arr.n; i++) {
        const toml_value *t = a->u.arr.items[i];
        struct lock_workflow w = {0};
        rc = get_str(r, t, "workflow", "name", true, &w.name);
        const toml_value *roles = toml_get(t, "roles");
        if (rc == 0 && roles && roles->type != TOML_ARRAY)
            rc = bad(r, roles, "`roles` in [[%s]] must be an array of strings%s", "workflow", "");
        for (size_t j = 0; rc == 0 && roles && j < roles->u.arr.n; j++) {
            const toml_value *x = roles->u.arr.items[j];
            if (x->type != TOML_STRING || memchr(x->u.str.s, '\0', x->u.str.len))
                rc = bad(r, x, "`roles` in [[%s]] must be an array of strings%s", "workflow", "");
            else
                strvec_push(&w.roles, x->u.str.s);
        }
        if (rc == 0)
            rc = get_str(r, t, "workflow", "source", false, &w.source);
        if (rc == 0)
            rc = get_str(r, t, "workflow", "path", false, &w.path);
        if (rc == 0)
            rc = get_str(r, t, "workflow", "git", false, &w.git);
        if (rc == 0)
            rc = get_str(r, t, "workflow", "rev", false, &w.rev);
        if (rc == 0)
            rc = get_checksum(r, t, "workflow", w.checksum);
        if (rc == 0)
            rc = get_str(r, t, "workflow", "blueprint", false, &w.blueprint);
        const toml_value *bc = toml_get(t, "blueprint_checksum");
        if (rc == 0 && bc &&
            (bc->type != TOML_STRING ||
             sha256_normalize_hex(bc->u.str.s, w.blueprint_checksum) < 0))
            rc = bad(r, bc, "malformed blueprint_checksum in [[%s]]%s: expected 64 hex characters",
                     "workflow", "");
        if (rc == 0 && !w.source)
            w.source = xstrdup(w.git ? "git" : w.path ? "path" : "library");
        if (rc == 0)
            strvec_sort(&w.roles);
        if (rc != 0)
            free_workflow(&w);
        else
            vec_push(&l->workflows, w);
    }
    return rc;
}

struct lockfile *lockfile_parse(const char *path, const char *data, size_t len, struct as_err *err)
{
    toml_value *root = toml_parse(path, data, len, err);
    if (!root) {
        as_err_hint(err, "fix the TOML, or regenerate it: agentstack lock --write");
        return NULL;
    }
    struct rd r = {path, err};
    struct lockfile *l = lockfile_new();
    int rc = 0;
    const toml_value *v = toml_get(root, "version");
    if (!v) {
        rc = bad(&r, NULL, "lock has no `version`%s%s (expected version = 2)", "", "");
    } else if (v->type != TOML_INTEGER || v->u.i < 1) {
        rc = bad(&r, v, "`version` must be 1 or 2%s%s", "", "");
    } else if (v->u.i > LOCKFILE_VERSION) {
        as_err_at(err, path, v->line, v->col,
                  "lock version %lld is newer than this agentstack build supports (up to %d); "
                  "upgrade agentstack",
                  (long long)v->u.i, LOCKFILE_VERSION);
        rc = -1;
    } else {
        l->version = v->u.i;
    }
    if (rc == 0) {
        const toml_value *md = toml_get(root, "manifest_digest");
        char hex[SHA256_HEX_LEN + 1];
        if (md && (md->type != TOML_STRING || sha256_normalize_hex(md->u.str.s, hex) < 0))
            rc = bad(&r, md, "malformed `manifest_digest`%s%s: expected 64 hex characters", "", "");
        else if (md)
            l->manifest_digest = xstrdup(hex);
    }
    if (rc == 0)
        rc = read_skills(&r, root, l);
    if (rc == 0)
        rc = read_servers(&r, root, l);
    if (rc == 0)
        rc = read_instructions(&r, root, l);
    if (rc == 0)
        rc = read_executables(&r, root, l);
    if (rc == 0)
        rc = read_settings(&r, root, l);
    if (rc == 0)
        rc = read_extensions(&r, root, l);
    if (rc == 0)
        rc = read_workflows(&r, root, l);
    if (rc == 0) {
        const toml_value *e;
        if ((e = rows(&r, root, "package", &rc)) != NULL)
            l->ext_package = toml_clone(e);
    }
    toml_free(root);
    if (rc != 0) {
        lockfile_free(l);
        return NULL;
    }
    /* Version 1 is read with the same fields; it is written back as 2. */
    l->version = LOCKFILE_VERSION;
    return l;
}

/* ---- writing ------------------------------------------------------------ */

static void put_str(strbuf *out, const char *s)
{
    sb_addc(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            sb_adds(out, "\\\"");
            break;
        case '\\':
            sb_adds(out, "\\\\");
            break;
        case '\n':
            sb_adds(out, "\\n");
            break;
        case '\t':
            sb_adds(out, "\\t");
            break;
        case '\r':
            sb_adds(out, "\\r");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_addf(out, "\\u%04x", *p);
            else
                sb_addc(out, (char)*p);
        }
    }
    sb_addc(out, '"');
}

static void kv(strbuf *out, const char *key, const char *val)
{
    if (!val)
        return;
    sb_adds(out, key);
    sb_adds(out, " = ");
    put_str(out, val);
    sb_addc(out, '\n');
}

static int cmp_skill(const void *a, const void *b)
{
    return strcmp(((const struct lock_skill *)a)->name, ((const struct lock_skill *)b)->name);
}
static int cmp_server(const void *a, const void *b)
{
    return strcmp(((const struct lock_server *)a)->name, ((const struct lock_server *)b)->name);
}
static int cmp_instruction(const void *a, const void *b)
{
    return strcmp(((const struct lock_instruction *)a)->name,
                  ((const struct lock_instruction *)b)->name);
}
static int cmp_executable(const void *a, const void *b)
{
    const struct lock_executable *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c)
        return c;
    /* file < root */
    return strcmp(x->kind, y->kind);
}
static int cmp_setting(const void *a, const void *b)
{
    const struct lock_setting *x = a, *y = b;
    int c = strcmp(x->target, y->target);
    return c ? c : strcmp(x->key, y->key);
}

static int cmp_extension(const void *a, const void *b)
{
    return strcmp(((const struct lock_extension *)a)->name,
                  ((const struct lock_extension *)b)->name);
}
static int cmp_workflow(const void *a, const void *b)
{
    return strcmp(((const struct lock_workflow *)a)->name, ((const struct lock_workflow *)b)->name);
}

/* A string array: ≥ 2 elements one per line with a trailing comma. */
static void kv_array(strbuf *out, const char *key, const strvec *v)
{
    sb_adds(out, key);
    sb_adds(out, " = [");
    if (v->n >= 2) {
        sb_addc(out, '\n');
        for (size_t i = 0; i < v->n; i++) {
            sb_adds(out, "    ");
            put_str(out, v->v[i]);
            sb_adds(out, ",\n");
        }
    } else if (v->n == 1) {
        put_str(out, v->v[0]);
    }
    sb_adds(out, "]\n");
}

/* Renders one raw [[key]] array of tables kept from the read lock. */
static void render_raw(strbuf *out, const char *key, const toml_value *arr)
{
    if (!arr)
        return;
    toml_value *doc = toml_new(TOML_TABLE);
    toml_table_set(doc, key, toml_clone(arr));
    strbuf tmp = SB_INIT;
    toml_emit(doc, &tmp);
    toml_free(doc);
    /* toml_emit separates tables its own way; normalize to one blank line
     * before each header, as the rest of the file. */
    const char *p = tmp.buf;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n == 0) {
            p += nl ? 1 : 0;
            if (!nl)
                break;
            continue;
        }
        if (p[0] == '[')
            sb_addc(out, '\n');
        sb_add(out, p, n);
        sb_addc(out, '\n');
        p += n + (nl ? 1 : 0);
    }
    sb_release(&tmp);
}

void lockfile_render(struct lockfile *l, strbuf *out)
{
    if (l->skills.n > 1)
        qsort(l->skills.v, l->skills.n, sizeof *l->skills.v, cmp_skill);
    if (l->servers.n > 1)
        qsort(l->servers.v, l->servers.n, sizeof *l->servers.v, cmp_server);
    if (l->instructions.n > 1)
        qsort(l->instructions.v, l->instructions.n, sizeof *l->instructions.v, cmp_instruction);
    if (l->executables.n > 1)
        qsort(l->executables.v, l->executables.n, sizeof *l->executables.v, cmp_executable);
    if (l->settings.n > 1)
        qsort(l->settings.v, l->settings.n, sizeof *l->settings.v, cmp_setting);
    if (l->extensions.n > 1)
        qsort(l->extensions.v, l->extensions.n, sizeof *l->extensions.v, cmp_extension);
    if (l->workflows.n > 1)
        qsort(l->workflows.v, l->workflows.n, sizeof *l->workflows.v, cmp_workflow);

    sb_addf(out, "version = %d\n", LOCKFILE_VERSION);
    kv(out, "manifest_digest", l->manifest_digest);
    for (size_t i = 0; i < l->skills.n; i++) {
        const struct lock_skill *s = &l->skills.v[i];
        sb_adds(out, "\n[[skill]]\n");
        kv(out, "name", s->name);
        kv(out, "source", s->source);
        kv(out, "path", s->path);
        kv(out, "git", s->git);
        kv(out, "rev", s->rev);
        kv(out, "checksum", s->checksum);
        kv(out, "license", s->license);
        kv(out, "origin", s->origin);
    }
    for (size_t i = 0; i < l->servers.n; i++) {
        const struct lock_server *s = &l->servers.v[i];
        sb_adds(out, "\n[[server]]\n");
        kv(out, "name", s->name);
        kv(out, "source", s->source);
        kv(out, "checksum", s->checksum);
    }
    for (size_t i = 0; i < l->instructions.n; i++) {
        const struct lock_instruction *in = &l->instructions.v[i];
        sb_adds(out, "\n[[instruction]]\n");
        kv(out, "name", in->name);
        kv(out, "path", in->path);
        kv(out, "checksum", in->checksum);
        for (size_t j = 0; j < in->variants.n; j++) {
            const struct lock_variant *v = &in->variants.v[j];
            sb_adds(out, "\n[[instruction.variant]]\n");
            kv(out, "cli", v->cli);
            kv(out, "model", v->model);
            kv(out, "path", v->path);
            kv(out, "checksum", v->checksum);
        }
    }
    for (size_t i = 0; i < l->executables.n; i++) {
        const struct lock_executable *e = &l->executables.v[i];
        sb_adds(out, "\n[[executable]]\n");
        kv(out, "path", e->path);
        kv(out, "kind", e->kind);
        kv(out, "checksum", e->checksum);
    }
    for (size_t i = 0; i < l->extensions.n; i++) {
        const struct lock_extension *e = &l->extensions.v[i];
        sb_adds(out, "\n[[extension]]\n");
        kv(out, "name", e->name);
        kv(out, "target", e->target);
        kv(out, "source", e->source);
        kv(out, "path", e->path);
        kv(out, "git", e->git);
        kv(out, "rev", e->rev);
        kv(out, "checksum", e->checksum);
    }
    for (size_t i = 0; i < l->workflows.n; i++) {
        struct lock_workflow *w = &l->workflows.v[i];
        strvec_sort(&w->roles);
        sb_adds(out, "\n[[workflow]]\n");
        kv(out, "name", w->name);
        kv_array(out, "roles", &w->roles);
        kv(out, "source", w->source);
        kv(out, "path", w->path);
        kv(out, "git", w->git);
        kv(out, "rev", w->rev);
        kv(out, "checksum", w->checksum);
        kv(out, "blueprint", w->blueprint);
        kv(out, "blueprint_checksum", w->blueprint_checksum[0] ? w->blueprint_checksum : NULL);
    }
    render_raw(out, "package", l->ext_package);
    for (size_t i = 0; i < l->settings.n; i++) {
        const struct lock_setting *s = &l->settings.v[i];
        sb_adds(out, "\n[[setting]]\n");
        kv(out, "target", s->target);
        kv(out, "key", s->key);
        kv(out, "checksum", s->checksum);
    }
}

int lockfile_save(struct lockfile *l, const char *path, const char *contain_root, const char *old,
                  size_t old_len, bool have_old, bool *written, struct as_err *err)
{
    *written = false;
    strbuf sb = SB_INIT;
    lockfile_render(l, &sb);
    int rc = 0;
    if (!(have_old && old_len == sb.len && memcmp(old, sb.buf, sb.len) == 0)) {
        struct fs_write_opts o = {
            .mode = 0644, .symlinks = FS_SYMLINK_FOLLOW, .contain_root = contain_root};
        rc = fs_write_atomic(path, sb.buf, sb.len, &o, err);
        if (rc == 0)
            *written = true;
    }
    sb_release(&sb);
    return rc;
}

/* ---- lookups ------------------------------------------------------------ */

const struct lock_skill *lockfile_skill(const struct lockfile *l, const char *name)
{
    for (size_t i = 0; l && i < l->skills.n; i++)
        if (strcmp(l->skills.v[i].name, name) == 0)
            return &l->skills.v[i];
    return NULL;
}

const struct lock_server *lockfile_server(const struct lockfile *l, const char *name)
{
    for (size_t i = 0; l && i < l->servers.n; i++)
        if (strcmp(l->servers.v[i].name, name) == 0)
            return &l->servers.v[i];
    return NULL;
}

const struct lock_instruction *lockfile_instruction(const struct lockfile *l, const char *name)
{
    for (size_t i = 0; l && i < l->instructions.n; i++)
        if (strcmp(l->instructions.v[i].name, name) == 0)
            return &l->instructions.v[i];
    return NULL;
}

const struct lock_executable *lockfile_executable(const struct lockfile *l, const char *path,
                                                  const char *kind)
{
    for (size_t i = 0; l && i < l->executables.n; i++)
        if (strcmp(l->executables.v[i].path, path) == 0 &&
            strcmp(l->executables.v[i].kind, kind) == 0)
            return &l->executables.v[i];
    return NULL;
}

const struct lock_setting *lockfile_setting(const struct lockfile *l, const char *target,
                                            const char *key)
{
    for (size_t i = 0; l && i < l->settings.n; i++)
        if (strcmp(l->settings.v[i].target, target) == 0 && strcmp(l->settings.v[i].key, key) == 0)
            return &l->settings.v[i];
    return NULL;
}

const struct lock_extension *lockfile_extension(const struct lockfile *l, const char *name)
{
    for (size_t i = 0; l && i < l->extensions.n; i++)
        if (strcmp(l->extensions.v[i].name, name) == 0)
            return &l->extensions.v[i];
    return NULL;
}

const struct lock_workflow *lockfile_workflow(const struct lockfile *l, const char *name)
{
    for (size_t i = 0; l && i < l->workflows.n; i++)
        if (strcmp(l->workflows.v[i].name, name) == 0)
            return &l->workflows.v[i];
    return NULL;
}
