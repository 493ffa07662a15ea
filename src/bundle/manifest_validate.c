/*
 * Semantic validation (docs/manifest.md): what the decoder cannot
 * know from one table alone — references between tables, adapter ids, the
 * library, names, and contained paths on disk.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/xalloc.h"
#include "bundle/lockfile.h"
#include "bundle/manifest_int.h"
#include "bundle/ref.h"
#include "bundle/skill_md.h"

int manifest_item_path(const struct manifest *m, const char *declared, const char *inherited_anchor,
                       strbuf *out, struct as_err *err)
{
    sb_reset(out);
    if (inherited_anchor || m->kind != MANIFEST_PROJECT) {
        const char *anchor = inherited_anchor ? inherited_anchor : m->manifest_dir;
        if (declared[0] == '/')
            sb_adds(out, declared);
        else
            sb_addf(out, "%s/%s", anchor, declared);
        return 0;
    }
    return fs_contain(m->project_root, m->manifest_dir, declared, 0, out, err);
}

bool manifest_toolset_name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return n >= 1 && n <= 64;
}

bool manifest_header_name_ok(const char *name)
{
    if (!name || !*name)
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              strchr("!#$%&'*+-.^_`|~", *p)))
            return false;
    return true;
}

const char *manifest_header_value_bad(const char *value)
{
    for (const char *p = value; p && *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            return p;
    return NULL;
}

struct val {
    const struct manifest *m;
    const struct manifest_env *env;
    mf_diags *out;
    size_t errors;
    const char *const *ids; /* adapter ids, once known */
    size_t n_ids;
    bool ids_asked; /* env->load_adapter_ids was called */
};

static __attribute__((format(printf, 4, 5))) void issue(struct val *v, struct mf_pos pos,
                                                        const char *fix, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mf_diag_add(v->out, MF_ERROR, pos, fix, "%s", msg);
    v->errors++;
}

static bool lib_has(struct val *v, enum mf_item_kind k, const char *name)
{
    return v->env && v->env->library_has && v->env->library_has(v->env->library_ctx, k, name);
}

static bool adapters_known(struct val *v)
{
    if (v->ids || !v->env)
        return v->ids != NULL;
    if (v->env->adapter_ids) {
        v->ids = v->env->adapter_ids;
        v->n_ids = v->env->n_adapter_ids;
    } else if (v->env->load_adapter_ids && !v->ids_asked) {
        v->ids_asked = true;
        if (!v->env->load_adapter_ids(v->env->adapter_ctx, &v->ids, &v->n_ids))
            v->ids = NULL;
    }
    return v->ids != NULL;
}

static bool adapter_ok(struct val *v, const char *id)
{
    if (!adapters_known(v))
        return true;
    for (size_t i = 0; i < v->n_ids; i++)
        if (strcmp(v->ids[i], id) == 0)
            return true;
    return false;
}

static void bad_adapter(struct val *v, struct mf_pos pos, const char *id, const char *where)
{
    const char *near = NULL;
    if (adapters_known(v)) {
        const char **c = xcalloc(v->n_ids + 1, sizeof *c);
        for (size_t i = 0; i < v->n_ids; i++)
            c[i] = v->ids[i];
        near = mf_did_you_mean(id, c);
        free(c);
    }
    strbuf fix = SB_INIT;
    if (near)
        sb_addf(&fix, "did you mean '%s'? ", near);
    if (adapters_known(v)) {
        sb_adds(&fix, "known adapter ids: ");
        for (size_t i = 0; i < v->n_ids; i++)
            sb_addf(&fix, "%s%s", i ? ", " : "", v->ids[i]);
    } else {
        sb_adds(&fix, "use a known adapter id");
    }
    issue(v, pos, fix.buf, "unknown adapter id '%s' in %s", id, where);
    sb_release(&fix);
}

static void check_targets(struct val *v, const strvec *t, struct mf_pos pos, const char *where)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i], "*") != 0 && !adapter_ok(v, t->v[i]))
            bad_adapter(v, pos, t->v[i], where);
}

static void check_contained(struct val *v, struct mf_pos pos, const char *anchor, const char *rel,
                            const char *what)
{
    if (!v->env || !v->env->check_paths)
        return;
    strbuf out = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (fs_contain(anchor, NULL, rel, MF_CONTAINED, &out, &e) < 0)
        issue(v, pos, "use a relative path inside the project, with no '..' and no symlinks",
              "%s: %s", what, e.msg);
    sb_release(&out);
}

/* The rule a refused repository path broke, as its fix. */
static const char repo_path_fix[] =
    "keep it inside the project (a relative path that stays in it, no symlink that leads "
    "out), or put it in the library (agentstack lib add) and name it there";

/* A repository's skill, instruction or variant path must stay inside the
 * project: checked always (not only with check_paths), so lock, trust and
 * apply all refuse it. */
static void check_item_path(struct val *v, struct mf_pos pos, const char *what, const char *name,
                            const char *declared, const char *inherited_anchor)
{
    strbuf out = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (manifest_item_path(v->m, declared, inherited_anchor, &out, &e) < 0)
        issue(v, pos, repo_path_fix,
              "%s '%s': path %s — a repository's skills, instructions and executables must "
              "stay inside the project",
              what, name, e.msg);
    sb_release(&out);
}

/* s with every byte outside printable ASCII as \xNN (\r, \n, \t by name):
 * a hostile header name must not reach the terminal raw. */
static void add_escaped(strbuf *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\r')
            sb_adds(out, "\\r");
        else if (*p == '\n')
            sb_adds(out, "\\n");
        else if (*p == '\t')
            sb_adds(out, "\\t");
        else if (*p < 0x20 || *p >= 0x7f || *p == '\\')
            sb_addf(out, "\\x%02x", *p);
        else
            sb_addc(out, (char)*p);
    }
}

/* Header names and values (RFC 9110): the value is never shown, since it
 * may hold a literal credential. */
static void check_headers(struct val *v, const struct mf_server *s)
{
    for (size_t j = 0; j < s->headers.n; j++) {
        const struct mf_str_entry *h = &s->headers.v[j];
        strbuf name = SB_INIT;
        add_escaped(&name, h->key);
        char fix[1024];
        if (!manifest_header_name_ok(h->key)) {
            snprintf(fix, sizeof fix,
                     "rename it in [servers.%s] headers: letters, digits and "
                     "!#$%%&'*+-.^_`|~ only (no spaces, no control characters)",
                     s->name);
            issue(v, h->pos, fix,
                  "server '%s': header name '%s' is not an HTTP token (RFC 9110): it would "
                  "be sent as written",
                  s->name, name.buf);
        }
        const char *bad = manifest_header_value_bad(h->value);
        if (bad) {
            unsigned char c = (unsigned char)*bad;
            snprintf(fix, sizeof fix,
                     "remove the control character from the value of header '%s' in "
                     "[servers.%s] (only tab is allowed)",
                     name.buf, s->name);
            issue(v, h->pos, fix,
                  "server '%s': the value of header '%s' contains %s (byte %zu): a CR or LF "
                  "would start another header line",
                  s->name, name.buf,
                  c == '\r'   ? "a carriage return (CR)"
                  : c == '\n' ? "a line feed (LF)"
                              : "a control character",
                  (size_t)(bad - h->value) + 1);
        }
        sb_release(&name);
    }
}

/* One plain path component, not reserved. */
static bool plain_name(const char *n)
{
    return n[0] && strcmp(n, ".") && strcmp(n, "..") && !strchr(n, '/') && !strchr(n, '\\');
}

static void check_named(struct val *v, struct mf_pos pos, const char *kind, const char *name)
{
    if (!plain_name(name))
        issue(v, pos, "rename it to a single file name (no '/', not '.' or '..')",
              "%s name '%s' must be one plain path component", kind, name);
    else if (strncmp(name, "agentstack-guard", 16) == 0)
        issue(v, pos, "choose another name", "%s name '%s' is reserved (agentstack-guard*)", kind,
              name);
}

static void check_skill_name(struct val *v, struct mf_pos pos, const char *name)
{
    if (!skill_name_valid(name))
        issue(v, pos,
              "rename it: lowercase letters, digits, '.', '_' and '-', starting with a letter "
              "or digit, at most 64 characters",
              "refusing to materialize skill '%s': skill names must match "
              "^[a-z0-9][a-z0-9._-]{0,63}$",
              name);
}

static bool declared_package(const struct manifest *m, const char *name)
{
    return m->packs && toml_get(m->packs, name);
}

/* A qualified library reference: "<source>:<name>" or
 * "lib:<source>/<name>" — pin_ref_name's split, the one lock, trust and the
 * adapters use. *src (malloc'd) and *name (pointing into ref) are set when
 * ref is qualified. */
static bool qualified_ref(const char *ref, char **src, const char **name)
{
    *name = pin_ref_name(ref, src);
    return *name != ref;
}

/* The name a reference takes in a CLI's config or skills dir. */
static const char *bare_name(const char *ref)
{
    return pin_ref_name(ref, NULL);
}

/* The name a toolset's server reference takes in a CLI's config: a declared
 * [servers] name as written (it may hold ':'), else the library's bare name. */
static const char *server_cli_name(const struct manifest *m, const char *ref)
{
    return manifest_server(m, ref) ? ref : bare_name(ref);
}

static int by_name_then_pos(const void *a, const void *b, void *arg)
{
    const char *const *names = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int r = strcmp(names[x], names[y]);
    return r ? r : x < y ? -1 : x > y;
}

/*
 * Two references of one toolset that a CLI would see under one name
 * ("review" and "team:review"): the second would silently replace the first.
 * Each reference j is reported once, against the first earlier reference k
 * under its name that is written differently. Sorting by (name, position)
 * finds every k in O(n log n): within a name, that k is the name's first
 * reference, or — when j is written like that one — the first written
 * otherwise. (Comparing every pair was cubic in practice, each comparison
 * looking a server up: minutes for one hostile toolset.)
 */
static void check_same_name(struct val *v, const struct mf_toolset *t, bool servers,
                            const char *tbl)
{
    const strvec *refs = servers ? &t->servers : &t->skills;
    const char *kind = servers ? "server" : "skill";
    size_t n = refs->n;
    if (n < 2)
        return;
    const char **names = xcalloc(n, sizeof *names);
    size_t *ord = xcalloc(n, sizeof *ord), *clash = xcalloc(n, sizeof *clash);
    for (size_t j = 0; j < n; j++) {
        names[j] = servers ? server_cli_name(v->m, refs->v[j]) : bare_name(refs->v[j]);
        ord[j] = j;
        clash[j] = n; /* none */
    }
    qsort_r(ord, n, sizeof *ord, by_name_then_pos, names);
    for (size_t g = 0; g < n;) {
        size_t first = ord[g], other = n; /* other: first written unlike first */
        size_t e = g + 1;
        for (; e < n && strcmp(names[ord[e]], names[first]) == 0; e++) {
            size_t j = ord[e];
            bool like_first = strcmp(refs->v[j], refs->v[first]) == 0;
            if (strcmp(refs->v[j], "*") != 0)
                clash[j] = !like_first ? first : other;
            if (!like_first && other == n)
                other = j;
        }
        g = e;
    }
    for (size_t j = 0; j < n; j++) {
        size_t k = clash[j];
        if (k == n)
            continue;
        char fix[1024];
        snprintf(fix, sizeof fix, "keep one of them in [%s.%s] %ss", tbl, t->name, kind);
        issue(v, t->pos, fix,
              "toolset '%s' names %s '%s' twice ('%s' and '%s'): a CLI holds one '%s'", t->name,
              kind, names[j], refs->v[k], refs->v[j], names[j]);
    }
    free(names);
    free(ord);
    free(clash);
}

/* A qualified reference the library does not resolve: name the source. */
static void unknown_qualified(struct val *v, const struct mf_toolset *t, const char *kind,
                              const char *ref, const char *src, const char *name, const char *tbl)
{
    char fix[1024];
    snprintf(fix, sizeof fix,
             "check that source '%s' is linked and holds %s '%s' (agentstack lib sources, "
             "agentstack lib list), or remove it from [%s.%s] %ss",
             src, kind, name, tbl, t->name, kind);
    issue(v, t->pos, fix,
          "toolset '%s' references %s '%s', which the central library does "
          "not resolve",
          t->name, kind, ref);
}

static void check_toolsets(struct val *v)
{
    const struct manifest *m = v->m;
    const char *tbl = m->toolsets_legacy ? "profiles" : "toolsets";
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        char fix[1024];
        for (size_t j = 0; j < t->servers.n; j++) {
            const char *x = t->servers.v[j];
            if (manifest_server(m, x) || lib_has(v, MF_ITEM_SERVER, x))
                continue;
            char *src = NULL;
            const char *name = NULL;
            if (qualified_ref(x, &src, &name)) {
                unknown_qualified(v, t, "server", x, src, name, tbl);
                free(src);
                continue;
            }
            snprintf(fix, sizeof fix,
                     "declare [servers.%s], add it to the library, or remove it from "
                     "[%s.%s] servers",
                     x, tbl, t->name);
            issue(v, t->pos, fix, "toolset '%s' references unknown server '%s'", t->name, x);
        }
        for (size_t j = 0; j < t->skills.n; j++) {
            const char *x = t->skills.v[j];
            if (strcmp(x, "*") == 0)
                continue;
            char *src = NULL;
            const char *name = NULL;
            if (!skill_name_valid(x) && qualified_ref(x, &src, &name)) {
                /* `<source>:<name>` pins one library source; never [skills]. */
                if (!skill_name_valid(name))
                    check_skill_name(v, t->pos, name);
                else if (!lib_has(v, MF_ITEM_SKILL, x))
                    unknown_qualified(v, t, "skill", x, src, name, tbl);
                free(src);
                continue;
            }
            if (!skill_name_valid(x)) {
                check_skill_name(v, t->pos, x);
                continue;
            }
            if (manifest_skill(m, x) || lib_has(v, MF_ITEM_SKILL, x))
                continue;
            snprintf(fix, sizeof fix,
                     "declare [skills.%s], add it to the library, or remove it from "
                     "[%s.%s] skills",
                     x, tbl, t->name);
            issue(v, t->pos, fix, "toolset '%s' references unknown skill '%s'", t->name, x);
        }
        for (size_t j = 0; j < t->packages.n; j++) {
            const char *x = t->packages.v[j];
            if (declared_package(m, x) || lib_has(v, MF_ITEM_PACKAGE, x))
                continue;
            snprintf(fix, sizeof fix, "install the package, or remove it from [%s.%s] packages",
                     tbl, t->name);
            issue(v, t->pos, fix, "toolset '%s' references unknown package '%s'", t->name, x);
        }
        check_same_name(v, t, true, tbl);
        check_same_name(v, t, false, tbl);
        if (t->harness && !adapter_ok(v, t->harness))
            bad_adapter(v, t->pos, t->harness, "a toolset's `harness`");
    }
}

size_t manifest_validate(const struct manifest *m, const struct manifest_env *env, mf_diags *out)
{
    struct val vv = {.m = m, .env = env, .out = out}, *v = &vv;

    if (m->default_toolset && !manifest_toolset(m, m->default_toolset)) {
        const char **names = xcalloc(m->toolsets.n + 1, sizeof *names);
        strbuf list = SB_INIT;
        for (size_t i = 0; i < m->toolsets.n; i++) {
            names[i] = m->toolsets.v[i].name;
            sb_addf(&list, "%s%s", i ? ", " : "", names[i]);
        }
        const char *near = mf_did_you_mean(m->default_toolset, names);
        char fix[1024];
        if (near)
            snprintf(fix, sizeof fix, "did you mean '%s'? set `default_toolset = \"%s\"`", near,
                     near);
        else if (m->toolsets.n)
            snprintf(fix, sizeof fix, "set default_toolset to one of: %s", list.buf);
        else
            snprintf(fix, sizeof fix, "declare [toolsets.%s] or remove default_toolset",
                     m->default_toolset);
        issue(v, m->default_toolset_pos, fix, "default_toolset '%s' names no declared toolset",
              m->default_toolset);
        free(names);
        sb_release(&list);
    }

    for (size_t i = 0; i < m->servers.n; i++) {
        const struct mf_server *s = &m->servers.v[i];
        char fix[1024], where[512];
        if (s->type == MF_SERVER_HTTP && (!s->url || !*s->url)) {
            snprintf(fix, sizeof fix, "add `url = \"https://…\"` to [servers.%s]", s->name);
            issue(v, s->pos, fix, "server '%s' is type=http but has no `url`", s->name);
        }
        if (s->type == MF_SERVER_STDIO && (!s->command || !*s->command)) {
            snprintf(fix, sizeof fix, "add `command = \"…\"` to [servers.%s]", s->name);
            issue(v, s->pos, fix, "server '%s' is type=stdio but has no `command`", s->name);
        }
        check_headers(v, s);
        snprintf(where, sizeof where, "[servers.%s] targets", s->name);
        check_targets(v, &s->targets, s->pos, where);
        if (s->owner && !adapter_ok(v, s->owner)) {
            snprintf(where, sizeof where, "[servers.%s] owner", s->name);
            bad_adapter(v, s->pos, s->owner, where);
        }
        for (size_t j = 0; s->extra && j < toml_len(s->extra); j++) {
            const toml_kv *kv = toml_entry(s->extra, j);
            if (!adapter_ok(v, kv->key)) {
                snprintf(where, sizeof where, "[servers.%s.extra]", s->name);
                bad_adapter(v, s->pos, kv->key, where);
            }
        }
        for (size_t j = 0; j < s->integrity_roots.n; j++)
            check_contained(v, s->pos, m->project_root, s->integrity_roots.v[j], "integrity root");
        if (s->cwd && s->cwd[0] == '/' && m->kind == MANIFEST_PROJECT)
            issue(v, s->pos, "write the cwd relative to the project root, inside it",
                  "server '%s': cwd '%s' is absolute — a repository's servers run inside the "
                  "project (traversal out of it is not allowed)",
                  s->name, s->cwd);
        else if (s->cwd && !strstr(s->cwd, "${"))
            check_contained(v, s->pos, m->project_root, s->cwd, "server cwd");
    }

    for (size_t i = 0; i < m->skills.n; i++) {
        const struct mf_skill *sk = &m->skills.v[i];
        check_skill_name(v, sk->pos, sk->name);
        if (sk->source == MF_SOURCE_PATH && sk->path)
            check_item_path(v, sk->path_pos, "skill", sk->name, sk->path, NULL);
    }

    for (size_t i = 0; i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        char where[512];
        snprintf(where, sizeof where, "[instructions.%s] targets", in->name);
        check_targets(v, &in->targets, in->pos, where);
        const char *inh = in->inherited ? in->anchor_dir : NULL;
        if (in->path)
            check_item_path(v, in->path_pos, "instruction", in->name, in->path, inh);
        for (size_t j = 0; j < in->variants.n; j++) {
            const struct mf_variant *va = &in->variants.v[j];
            check_item_path(v, va->path_pos, "instruction variant of", in->name, va->path, inh);
            if (!va->cli && !va->model)
                issue(v, va->pos, "add `cli = \"<adapter id>\"` and/or `model = \"…\"`",
                      "[[instructions.%s.variant]] #%zu has no selector (needs `cli` or "
                      "`model`)",
                      in->name, j + 1);
            if (va->cli && !adapter_ok(v, va->cli)) {
                snprintf(where, sizeof where, "[[instructions.%s.variant]] cli", in->name);
                bad_adapter(v, va->pos, va->cli, where);
            }
        }
        if (!in->path && !in->inherited && !lib_has(v, MF_ITEM_INSTRUCTION, in->name)) {
            char fix[512];
            snprintf(fix, sizeof fix,
                     "set `path = \"…\"` in [instructions.%s], or add the instruction to the "
                     "library",
                     in->name);
            issue(v, in->pos, fix,
                  "instruction '%s' has no `path` and the library has no "
                  "instruction of that name",
                  in->name);
        }
    }

    check_toolsets(v);

    for (size_t i = 0; i < m->hooks.n; i++) {
        char where[512];
        snprintf(where, sizeof where, "[hooks.%s] targets", m->hooks.v[i].name);
        check_targets(v, &m->hooks.v[i].targets, m->hooks.v[i].pos, where);
    }
    if (m->has_targets)
        for (size_t i = 0; i < m->targets_default.n; i++)
            if (!adapter_ok(v, m->targets_default.v[i]))
                bad_adapter(v, m->targets_default_pos, m->targets_default.v[i],
                            "[targets] default");
    for (size_t i = 0; i < m->settings.n; i++)
        if (!adapter_ok(v, m->settings.v[i].adapter))
            bad_adapter(v, m->settings.v[i].pos, m->settings.v[i].adapter, "[settings]");
    for (size_t i = 0; i < m->delivery_harness.n; i++)
        if (!adapter_ok(v, m->delivery_harness.v[i].adapter))
            bad_adapter(v, m->delivery_harness.v[i].pos, m->delivery_harness.v[i].adapter,
                        "[delivery.harness]");

    for (size_t i = 0; i < m->extensions.n; i++) {
        const struct mf_extension *e = &m->extensions.v[i];
        check_named(v, e->pos, "extension", e->name);
        if (strcmp(e->target, "*") == 0)
            issue(v, e->pos, "name exactly one adapter id",
                  "extension '%s' targets \"*\"; an extension belongs to one adapter", e->name);
        else if (!adapter_ok(v, e->target))
            bad_adapter(v, e->pos, e->target, "an extension's `target`");
        if (e->source == MF_SOURCE_PATH)
            check_contained(v, e->pos, m->manifest_dir, e->path, "extension source");
        if (e->source == MF_SOURCE_LIBRARY && !lib_has(v, MF_ITEM_EXTENSION, e->name))
            issue(v, e->pos, "set `path` or `git`, or add the extension to the library",
                  "extension '%s' has no source and the library has none of that name", e->name);
    }
    for (size_t i = 0; i < m->workflows.n; i++) {
        const struct mf_workflow *w = &m->workflows.v[i];
        check_named(v, w->pos, "workflow", w->name);
        for (size_t j = 0; j < w->roles.n; j++) {
            if (!w->roles.v[j][0])
                issue(v, w->pos, "remove the empty role", "workflow '%s' has an empty role",
                      w->name);
            for (size_t k = 0; k < j; k++)
                if (strcmp(w->roles.v[j], w->roles.v[k]) == 0)
                    issue(v, w->pos, "list each role once", "workflow '%s' lists role '%s' twice",
                          w->name, w->roles.v[j]);
        }
        if (w->source == MF_SOURCE_PATH)
            check_contained(v, w->pos, m->manifest_dir, w->path, "workflow source");
        if (w->blueprint)
            check_contained(v, w->pos, m->manifest_dir, w->blueprint, "workflow blueprint");
        if (w->source == MF_SOURCE_LIBRARY && !lib_has(v, MF_ITEM_WORKFLOW, w->name))
            issue(v, w->pos, "set `path` or `git`, or add the workflow to the library",
                  "workflow '%s' has no source and the library has none of that name", w->name);
    }
    return vv.errors;
}
