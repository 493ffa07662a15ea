/* lockfile_pin — what `lock` pins (docs/formats.md) and how pins are verified. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/codepin.h"
#include "bundle/digest.h"
#include "bundle/git.h"
#include "bundle/lockfile.h"
#include "bundle/skill_md.h"
#include "bundle/store.h"

const char *pin_kind_name(enum pin_kind k)
{
    switch (k) {
    case PIN_SKILL:
        return "skill";
    case PIN_SERVER:
        return "server";
    case PIN_INSTRUCTION:
        return "instruction";
    case PIN_VARIANT:
        return "instruction variant";
    case PIN_EXECUTABLE:
        return "executable";
    case PIN_SETTING:
        return "setting";
    case PIN_EXTENSION:
        return "extension";
    case PIN_WORKFLOW:
        return "workflow";
    case PIN_BLUEPRINT:
        return "blueprint";
    }
    return "item";
}

const char *pin_status_name(enum pin_status s)
{
    switch (s) {
    case PIN_MATCHES:
        return "matches";
    case PIN_UNPINNED:
        return "unpinned";
    case PIN_DRIFTED:
        return "drifted";
    case PIN_UNAVAILABLE:
        return "unavailable offline";
    case PIN_RESOLVE_FAILED:
        return "resolve failed";
    }
    return "?";
}

static void item_free(struct pin_item *it)
{
    free(it->name);
    free(it->ref);
    free(it->sub);
    free(it->source);
    free(it->declared_path);
    free(it->git);
    free(it->rev);
    free(it->cli);
    free(it->model);
    free(it->fs_path);
    free(it->error);
    free(it->canon);
    free(it->target);
    strvec_clear(&it->roles);
    free(it->live_path);
}

void pin_items_free(pin_items *items)
{
    for (size_t i = 0; i < items->n; i++)
        item_free(&items->v[i]);
    vec_free(items);
}

static struct pin_item *add_item(pin_items *out, enum pin_kind kind, const char *name,
                                 const char *sub)
{
    struct pin_item it = {0};
    it.kind = kind;
    it.name = xstrdup(name);
    it.sub = sub ? xstrdup(sub) : NULL;
    vec_push(out, it);
    return &out->v[out->n - 1];
}

static void set_state(struct pin_item *it, enum pin_state st, const char *msg)
{
    it->state = st;
    free(it->error);
    it->error = xstrdup(msg);
}

static bool have_item(const pin_items *out, enum pin_kind kind, const char *name, const char *sub)
{
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i].kind == kind && strcmp(out->v[i].name, name) == 0 &&
            ((!sub && !out->v[i].sub) || (sub && out->v[i].sub && strcmp(sub, out->v[i].sub) == 0)))
            return true;
    return false;
}

/* An instruction's (or variant's) body: manifest_item_path, or NULL with
 * the item failed (a repository's path that leaves the project). */
static char *item_path(const struct manifest *m, const struct mf_instruction *in,
                       const char *declared, const struct mf_pos *pos, struct pin_item *it)
{
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (manifest_item_path(m, declared, in->inherited ? in->anchor_dir : NULL, &out, &err) < 0) {
        char *msg = xasprintf("%s:%u:%u: instruction '%s': path %s", pos->file, pos->line, pos->col,
                              in->name, err.msg);
        set_state(it, PIN_FAILED, msg);
        free(msg);
        sb_release(&out);
        return NULL;
    }
    return sb_detach(&out, NULL);
}

/* ---- library ------------------------------------------------------------ */

/* Library file stem (docs/library.md): bytes outside [A-Za-z0-9_-] as %XX
 * when the name has '/', '\\', '%' or is "." / "..". */
static void server_stem(const char *name, strbuf *out)
{
    bool encode = strpbrk(name, "/\\%") || strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (!encode || isalnum(*p) || *p == '_' || *p == '-')
            sb_addc(out, (char)*p);
        else
            sb_addf(out, "%%%02X", *p);
    }
}

int pin_library_default(const char *home, enum pin_kind kind, const char *name, strbuf *path)
{
    if (!home)
        return 0;
    sb_reset(path);
    struct stat st;
    if (kind == PIN_SERVER) {
        sb_addf(path, "%s/lib/servers/", home);
        server_stem(name, path);
        sb_adds(path, ".toml");
        return lstat(path->buf, &st) == 0 && S_ISREG(st.st_mode);
    }
    const char *dir = kind == PIN_SKILL       ? "skills"
                      : kind == PIN_EXTENSION ? "extensions"
                      : kind == PIN_WORKFLOW  ? "workflows"
                                              : NULL;
    if (dir) {
        if (!name[0] || strchr(name, '/') || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
            return 0;
        sb_addf(path, "%s/lib/%s/%s", home, dir, name);
        if (lstat(path->buf, &st) != 0)
            return 0;
        /* Skills are directories; extension and workflow sources may be one file. */
        return S_ISDIR(st.st_mode) || (kind != PIN_SKILL && S_ISREG(st.st_mode));
    }
    return 0;
}

const char *pin_ref_name(const char *ref, char **src)
{
    if (src)
        *src = NULL;
    if (strncmp(ref, "lib:", 4) == 0) {
        const char *slash = strchr(ref + 4, '/');
        if (slash && slash > ref + 4 && slash[1]) {
            if (src)
                *src = xstrndup(ref + 4, (size_t)(slash - ref - 4));
            return slash + 1;
        }
    }
    const char *colon = strchr(ref, ':');
    if (!colon || colon == ref || !colon[1])
        return ref;
    char *s = xstrndup(ref, (size_t)(colon - ref));
    if (!skill_name_valid(s)) {
        free(s);
        return ref;
    }
    if (src)
        *src = s;
    else
        free(s);
    return colon + 1;
}

/* ref is the reference as written (possibly qualified). */
static int library_lookup(const struct pin_opts *o, enum pin_kind kind, const char *ref,
                          strbuf *path, struct as_err *err)
{
    if (o->library) {
        int r = o->library(o->library_ctx, kind, ref, path, err);
        /* A library source that knows no such kind (extensions, workflows)
         * leaves them to the implicit local source. */
        if (r != 0 || kind == PIN_SKILL || kind == PIN_SERVER)
            return r;
    }
    char *src = NULL;
    if (pin_ref_name(ref, &src) != ref) {
        /* Only the library module reads sources.toml: never guess that a
         * qualified name means the local copy of the bare one. */
        as_err_set(err,
                   "'%s' names library source '%s', and linked sources are not read here "
                   "(only %s/lib)",
                   ref, src, o->home ? o->home : "$AGENTSTACK_HOME");
        free(src);
        return -1;
    }
    return pin_library_default(o->home, kind, ref, path);
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The library source a reference pins, or NULL for a bare one (allocated). */
static char *ref_source(const char *ref)
{
    char *src = NULL;
    if (ref)
        pin_ref_name(ref, &src);
    return src;
}

/* "no skill 'review' in library 'team'". */
static char *not_in_source(const char *kind, const char *ref, const char *name)
{
    char *src = ref_source(ref);
    char *m =
        xasprintf("%s '%s': no %s '%s' in library '%s'", kind, ref, kind, name, src ? src : "?");
    free(src);
    return m;
}

/*
 * The server (or skill) references pin_collect pins, in order, grouped by
 * the bare name each takes: first[j] is the first position with j's name.
 * pin_collect knows every reference before it pins one, and a hostile
 * manifest may name tens of thousands, so asking the collected items one by
 * one (as seen_ref did) was quadratic; sorting makes it O(n log n).
 */
struct ref_plan {
    size_t n;
    const char **refs, **names;
    size_t *first; /* position of the first reference with this name */
    size_t *item;  /* item index in out, for the positions that added one */
    size_t base;   /* items out held before pin_collect (searched linearly) */
};

static int plan_cmp(const void *a, const void *b, void *arg)
{
    const char *const *names = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int r = strcmp(names[x], names[y]);
    return r ? r : x < y ? -1 : x > y;
}

static void plan_init(struct ref_plan *p, const struct manifest *m, bool servers,
                      const strvec *refs, size_t base)
{
    p->n = refs->n;
    p->base = base;
    p->refs = xcalloc(p->n + 1, sizeof *p->refs);
    p->names = xcalloc(p->n + 1, sizeof *p->names);
    p->first = xcalloc(p->n + 1, sizeof *p->first);
    p->item = xcalloc(p->n + 1, sizeof *p->item);
    size_t *ord = xcalloc(p->n + 1, sizeof *ord);
    for (size_t j = 0; j < p->n; j++) {
        const char *ref = refs->v[j];
        bool declared = servers ? manifest_server(m, ref) != NULL : manifest_skill(m, ref) != NULL;
        p->refs[j] = ref;
        p->names[j] = declared ? ref : pin_ref_name(ref, NULL);
        ord[j] = j;
    }
    if (p->n > 1)
        qsort_r(ord, p->n, sizeof *ord, plan_cmp, p->names);
    for (size_t g = 0; g < p->n; g++)
        p->first[ord[g]] = g && strcmp(p->names[ord[g]], p->names[ord[g - 1]]) == 0
                               ? p->first[ord[g - 1]]
                               : ord[g];
    free(ord);
}

static void plan_free(struct ref_plan *p)
{
    free(p->refs);
    free(p->names);
    free(p->first);
    free(p->item);
}

/*
 * One row per bare name: when an item of this kind and name was
 * collected already, returns true — and when it came from another reference
 * (another source, or inline against qualified), marks it failed, since one
 * lock row, one rendered dir and one gateway name cannot hold two bodies.
 * The item is the first with that name: one out held before, else the one
 * the name's first reference added.
 */
static bool seen_ref(pin_items *out, const struct ref_plan *p, size_t j, enum pin_kind kind,
                     const char *name, const char *ref)
{
    struct pin_item *it = NULL;
    for (size_t i = 0; i < p->base && !it; i++)
        if (out->v[i].kind == kind && strcmp(out->v[i].name, name) == 0 && !out->v[i].sub)
            it = &out->v[i];
    if (!it && p->first[j] != j)
        it = &out->v[p->item[p->first[j]]];
    if (!it)
        return false;
    char *a = ref_source(it->ref), *b = ref_source(ref);
    bool same = same_str(a, b);
    free(a);
    free(b);
    if (!same) {
        const char *k = pin_kind_name(kind);
        char *msg = xasprintf("%s '%s' is named twice, as '%s' and as '%s': the lock, the "
                              "CLIs and the gateway hold one '%s' — keep one of them",
                              k, name, it->ref ? it->ref : it->name, ref ? ref : name, name);
        set_state(it, PIN_FAILED, msg);
        free(msg);
    }
    return true;
}

/* ---- skills ------------------------------------------------------------- */

static void hash_skill_dir(struct pin_item *it, const char *dir)
{
    struct as_err err = AS_ERR_INIT;
    struct stat st;
    it->fs_path = xstrdup(dir);
    if (lstat(dir, &st) != 0 && errno == ENOENT) {
        char *m = xasprintf("skill '%s': %s does not exist (nothing to pin)", it->name, dir);
        set_state(it, PIN_UNRESOLVED, m);
        free(m);
        return;
    }
    if (digest_skill_tree(dir, it->checksum, &err) < 0) {
        char *m = xasprintf("skill '%s': %s", it->name, err.msg);
        set_state(it, PIN_FAILED, m);
        free(m);
    }
}

/* Whether --update asks to move this git source off its locked commit. */
static bool wants_update(const struct pin_opts *o, const char *name)
{
    return o->update_all || (o->update && strvec_find(o->update, name) >= 0);
}

/*
 * Resolves a git source to a checkout directory: the lock's
 * commit beats the manifest rev (when the lock row names the same URL)
 * unless --update asks for the manifest rev (else the upstream head). The
 * subpath must be contained in the checkout. Sets it->git, it->rev and
 * returns the directory to hash in dir; on failure sets the item's state.
 */
static bool resolve_git(struct pin_item *it, const struct pin_opts *o, const char *url,
                        const char *mf_rev, const char *subpath, const char *lock_git,
                        const char *lock_rev, strbuf *dir)
{
    it->source = xstrdup("git");
    it->git = xstrdup(url);
    const char *rev = mf_rev;
    bool update = o->fetch && wants_update(o, it->name);
    if (lock_rev && lock_git && strcmp(lock_git, url) == 0 && !update)
        rev = lock_rev;
    struct as_err err = AS_ERR_INIT;
    strbuf commit = SB_INIT, co = SB_INIT;
    int r = o->home ? git_resolve(o->home, url, rev, o->fetch, &commit, &co, &err) : 0;
    bool ok = false;
    if (r < 0) {
        char *m = xasprintf("%s '%s': %s", pin_kind_name(it->kind), it->name, err.msg);
        set_state(it, PIN_UNRESOLVED, m);
        free(m);
    } else if (r == 0) {
        char *m = xasprintf("%s '%s': git source %s%s%s is not cached — pin unverified "
                            "(offline); fetch it with: agentstack install",
                            pin_kind_name(it->kind), it->name, url, rev ? "@" : "", rev ? rev : "");
        set_state(it, PIN_OFFLINE, m);
        free(m);
    } else {
        it->rev = xstrdup(commit.buf);
        if (subpath && subpath[0] && strcmp(subpath, ".") != 0) {
            struct as_err e2 = AS_ERR_INIT;
            strbuf full = SB_INIT;
            if (fs_contain(co.buf, NULL, subpath, MF_CONTAINED, &full, &e2) < 0) {
                char *m =
                    xasprintf("%s '%s': subpath %s", pin_kind_name(it->kind), it->name, e2.msg);
                set_state(it, PIN_FAILED, m);
                free(m);
            } else {
                sb_adds(dir, full.buf);
                ok = true;
            }
            sb_release(&full);
        } else {
            sb_adds(dir, co.buf);
            ok = true;
        }
    }
    sb_release(&commit);
    sb_release(&co);
    return ok;
}

static void pin_git_skill(const struct mf_skill *s, const struct pin_opts *o, struct pin_item *it)
{
    const struct lock_skill *ls = lockfile_skill(o->lock, s->name);
    strbuf dir = SB_INIT;
    if (resolve_git(it, o, s->git, s->rev, s->subpath, ls ? ls->git : NULL, ls ? ls->rev : NULL,
                    &dir))
        hash_skill_dir(it, dir.buf);
    sb_release(&dir);
}

static void pin_skill(const struct manifest *m, const struct pin_opts *o, struct ref_plan *rp,
                      size_t j, pin_items *out)
{
    const char *ref = rp->refs[j];
    const struct mf_skill *s = manifest_skill(m, ref);
    const char *name = s ? ref : pin_ref_name(ref, NULL);
    const char *qual = name != ref ? ref : NULL;
    if (seen_ref(out, rp, j, PIN_SKILL, name, qual))
        return;
    rp->item[j] = out->n;
    struct pin_item *it = add_item(out, PIN_SKILL, name, NULL);
    it->ref = qual ? xstrdup(qual) : NULL;
    if (s && s->source == MF_SOURCE_GIT) {
        pin_git_skill(s, o, it);
        return;
    }
    if (s && s->path) {
        it->source = xstrdup("path");
        it->declared_path = xstrdup(s->path);
        strbuf dir = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (manifest_item_path(m, s->path, NULL, &dir, &err) < 0) {
            char *msg = xasprintf("%s:%u:%u: skill '%s': path %s", s->path_pos.file,
                                  s->path_pos.line, s->path_pos.col, name, err.msg);
            set_state(it, PIN_FAILED, msg);
            free(msg);
        } else {
            hash_skill_dir(it, dir.buf);
        }
        sb_release(&dir);
        return;
    }
    it->library = true;
    it->source = xstrdup("path");
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int r = library_lookup(o, PIN_SKILL, ref, &p, &err);
    if (r == 1) {
        hash_skill_dir(it, p.buf);
    } else {
        char *msg = r < 0 ? xasprintf("skill '%s': %s", ref, err.msg)
                    : qual
                        ? not_in_source("skill", ref, name)
                        : xasprintf("skill '%s' is neither in [skills] nor in the library", name);
        set_state(it, PIN_UNRESOLVED, msg);
        free(msg);
    }
    sb_release(&p);
}

/* ---- servers and their executables --------------------------------------- */

static void pin_server(const struct manifest *m, const struct pin_opts *o, struct ref_plan *rp,
                       size_t j, pin_items *out)
{
    /* A declared [servers] name is taken as written (server names are free-form). */
    const char *ref = rp->refs[j];
    const struct mf_server *s = manifest_server(m, ref);
    const char *name = s ? ref : pin_ref_name(ref, NULL);
    const char *qual = name != ref ? ref : NULL;
    if (seen_ref(out, rp, j, PIN_SERVER, name, qual))
        return;
    rp->item[j] = out->n;
    struct pin_item *it = add_item(out, PIN_SERVER, name, NULL);
    it->ref = qual ? xstrdup(qual) : NULL;
    if (s) {
        it->source = xstrdup("inline");
        digest_inline_server(s->table, it->checksum);
        return;
    }
    it->library = true;
    it->source = xstrdup("library");
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int r = library_lookup(o, PIN_SERVER, ref, &p, &err);
    if (r == 1) {
        it->fs_path = xstrdup(p.buf);
        if (digest_file(p.buf, it->checksum, &err) < 0) {
            char *msg = xasprintf("server '%s': %s", ref, err.msg);
            set_state(it, PIN_FAILED, msg);
            free(msg);
        }
    } else {
        char *msg = r < 0 ? xasprintf("server '%s': %s", ref, err.msg)
                    : qual
                        ? not_in_source("server", ref, name)
                        : xasprintf("server '%s' is neither in [servers] nor in the library", name);
        set_state(it, PIN_UNRESOLVED, msg);
        free(msg);
    }
    sb_release(&p);
}

static void add_failed(pin_items *out, enum pin_kind kind, const char *name, const char *sub,
                       const char *msg)
{
    struct pin_item *it = add_item(out, kind, name, sub);
    set_state(it, PIN_FAILED, msg);
}

/* One path of a server's own code (bundle/codepin.h): a file or a tree. */
static void pin_code_ref(const struct manifest *m, const struct codepin_ref *r, pin_items *out)
{
    const char *sub = codepin_kind_name(r->kind);
    if (have_item(out, PIN_EXECUTABLE, r->rel, sub))
        return;
    if (r->error) {
        add_failed(out, PIN_EXECUTABLE, r->rel, sub, r->error);
        return;
    }
    struct pin_item *it = add_item(out, PIN_EXECUTABLE, r->rel, sub);
    it->fs_path = xasprintf("%s/%s", m->project_root, r->rel);
    struct as_err err = AS_ERR_INIT;
    int rc = r->kind == CODEPIN_TREE ? digest_code_tree(it->fs_path, it->checksum, &err)
                                     : digest_file(it->fs_path, it->checksum, &err);
    if (rc < 0)
        set_state(it, PIN_FAILED, err.msg);
}

static void pin_server_executables(const struct manifest *m, const struct mf_server *s,
                                   pin_items *out)
{
    codepin_refs refs = VEC_INIT;
    codepin_collect(m->project_root, s, &refs, NULL);
    for (size_t i = 0; i < refs.n; i++)
        pin_code_ref(m, &refs.v[i], out);
    codepin_free(&refs);
    for (size_t i = 0; i < s->integrity_roots.n; i++) {
        const char *r = s->integrity_roots.v[i];
        strbuf full = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (fs_contain(m->project_root, NULL, r, MF_CONTAINED, &full, &err) < 0) {
            char *msg = xasprintf("server '%s': integrity root %s", s->name, err.msg);
            if (!have_item(out, PIN_EXECUTABLE, r, "root"))
                add_failed(out, PIN_EXECUTABLE, r, "root", msg);
            free(msg);
            sb_release(&full);
            continue;
        }
        /* project-relative form of the root */
        const char *rel = full.buf + strlen(m->project_root);
        while (*rel == '/')
            rel++;
        if (!have_item(out, PIN_EXECUTABLE, rel, "root")) {
            struct pin_item *it = add_item(out, PIN_EXECUTABLE, rel, "root");
            it->fs_path = xstrdup(full.buf);
            if (digest_integrity_root(full.buf, it->checksum, &err) < 0) {
                char *msg = xasprintf("server '%s': %s", s->name, err.msg);
                set_state(it, PIN_FAILED, msg);
                free(msg);
            }
        }
        sb_release(&full);
    }
}

/* ---- instructions and settings ------------------------------------------ */

static void pin_body(struct pin_item *it, const char *path, const char *what)
{
    struct as_err err = AS_ERR_INIT;
    it->fs_path = xstrdup(path);
    if (digest_file(path, it->checksum, &err) < 0) {
        char *msg = xasprintf("%s '%s' is unreadable: %s", what, it->name, err.msg);
        set_state(it, PIN_FAILED, msg);
        free(msg);
    }
}

static void pin_instructions(const struct manifest *m, const struct pin_opts *o, pin_items *out)
{
    for (size_t i = 0; i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        if (in->inherited)
            continue; /* machine-layer fragments are never pinned */
        struct pin_item *it = add_item(out, PIN_INSTRUCTION, in->name, NULL);
        char *p;
        if (in->path) {
            it->declared_path = xstrdup(in->path);
            p = item_path(m, in, in->path, &in->path_pos, it);
        } else {
            /* A library callback that knows instructions names the body in
             * whichever source holds it; else the implicit local source. */
            it->library = true;
            strbuf lp = SB_INIT;
            struct as_err le = AS_ERR_INIT;
            int r =
                o->library ? o->library(o->library_ctx, PIN_INSTRUCTION, in->name, &lp, &le) : 0;
            p = r == 1 ? sb_detach(&lp, NULL)
                       : xasprintf("%s/lib/instructions/%s/instruction.toml",
                                   o->home ? o->home : "", in->name);
            sb_release(&lp);
            if (r < 0) {
                char *msg = xasprintf("instruction '%s': %s", in->name, le.msg);
                set_state(it, PIN_UNRESOLVED, msg);
                free(msg);
                free(p);
                p = NULL;
            }
        }
        if (p)
            pin_body(it, p, "instruction");
        free(p);
        for (size_t j = 0; j < in->variants.n; j++) {
            const struct mf_variant *v = &in->variants.v[j];
            char idx[24];
            snprintf(idx, sizeof idx, "%zu", j);
            struct pin_item *vi = add_item(out, PIN_VARIANT, in->name, idx);
            vi->declared_path = xstrdup(v->path);
            vi->cli = v->cli ? xstrdup(v->cli) : NULL;
            vi->model = v->model ? xstrdup(v->model) : NULL;
            char *vp = item_path(m, in, v->path, &v->path_pos, vi);
            if (vp)
                pin_body(vi, vp, "instruction variant of");
            free(vp);
        }
    }
}

static void pin_settings(const struct manifest *m, pin_items *out)
{
    for (size_t i = 0; i < m->settings.n; i++) {
        const struct mf_settings *st = &m->settings.v[i];
        for (size_t j = 0; st->table && j < toml_len(st->table); j++) {
            const toml_kv *kv = toml_entry(st->table, j);
            struct pin_item *it = add_item(out, PIN_SETTING, st->adapter, kv->key);
            strbuf c = SB_INIT;
            digest_canonical_json(kv->val, &c);
            sha256_hex(c.buf, c.len, it->checksum);
            it->canon = sb_detach(&c, NULL);
        }
    }
}

/* ---- extensions, workflows, blueprints (strict digests) ------------------ */

/* The strict digest of an extension or workflow source: the integrity-root
 * framing (symlinks and special files are errors, .git is content, a single
 * file is one entry). */
static void hash_strict(struct pin_item *it, const char *path)
{
    struct as_err err = AS_ERR_INIT;
    free(it->fs_path);
    it->fs_path = xstrdup(path);
    if (digest_integrity_root(path, it->checksum, &err) < 0) {
        char *m = xasprintf("%s '%s': %s", pin_kind_name(it->kind), it->name, err.msg);
        set_state(it, PIN_FAILED, m);
        free(m);
    }
}

/* A path source: contained in the manifest dir, then hashed. */
static void pin_contained(const struct manifest *m, struct pin_item *it, const char *rel,
                          bool single_file)
{
    struct as_err err = AS_ERR_INIT;
    strbuf full = SB_INIT;
    it->declared_path = xstrdup(rel);
    if (fs_contain(m->manifest_dir, NULL, rel, MF_CONTAINED, &full, &err) < 0) {
        char *msg = xasprintf("%s '%s': %s", pin_kind_name(it->kind), it->name, err.msg);
        /* A missing source cannot be pinned; traversal and symlinks are hard errors. */
        set_state(it,
                  strstr(err.msg, "traversal") || strstr(err.msg, "symlink") ? PIN_FAILED
                                                                             : PIN_UNRESOLVED,
                  msg);
        free(msg);
    } else if (single_file) {
        it->fs_path = xstrdup(full.buf);
        if (digest_file(full.buf, it->checksum, &err) < 0) {
            char *msg =
                xasprintf("%s of workflow '%s': %s", pin_kind_name(it->kind), it->name, err.msg);
            set_state(it, PIN_FAILED, msg);
            free(msg);
        }
    } else {
        hash_strict(it, full.buf);
    }
    sb_release(&full);
}

static void pin_library_source(const struct pin_opts *o, struct pin_item *it)
{
    it->library = true;
    it->source = xstrdup("library");
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int r = library_lookup(o, it->kind, it->name, &p, &err);
    if (r == 1) {
        hash_strict(it, p.buf);
    } else {
        char *msg = r < 0 ? xasprintf("%s '%s': %s", pin_kind_name(it->kind), it->name, err.msg)
                          : xasprintf("%s '%s' has no source and the library has none of that "
                                      "name",
                                      pin_kind_name(it->kind), it->name);
        set_state(it, PIN_UNRESOLVED, msg);
        free(msg);
    }
    sb_release(&p);
}

static void pin_extensions(const struct manifest *m, const struct pin_opts *o, pin_items *out)
{
    for (size_t i = 0; i < m->extensions.n; i++) {
        const struct mf_extension *e = &m->extensions.v[i];
        struct pin_item *it = add_item(out, PIN_EXTENSION, e->name, NULL);
        it->target = e->target ? xstrdup(e->target) : NULL;
        if (e->source == MF_SOURCE_GIT) {
            const struct lock_extension *le = lockfile_extension(o->lock, e->name);
            strbuf dir = SB_INIT;
            if (resolve_git(it, o, e->git, e->rev, e->subpath, le ? le->git : NULL,
                            le ? le->rev : NULL, &dir))
                hash_strict(it, dir.buf);
            sb_release(&dir);
        } else if (e->source == MF_SOURCE_PATH && e->path) {
            it->source = xstrdup("path");
            pin_contained(m, it, e->path, false);
        } else {
            pin_library_source(o, it);
        }
    }
}

static void pin_workflows(const struct manifest *m, const struct pin_opts *o, pin_items *out)
{
    for (size_t i = 0; i < m->workflows.n; i++) {
        const struct mf_workflow *w = &m->workflows.v[i];
        struct pin_item *it = add_item(out, PIN_WORKFLOW, w->name, NULL);
        for (size_t j = 0; j < w->roles.n; j++)
            if (strvec_find(&it->roles, w->roles.v[j]) < 0)
                strvec_push(&it->roles, w->roles.v[j]);
        strvec_sort(&it->roles);
        if (w->source == MF_SOURCE_GIT) {
            const struct lock_workflow *lw = lockfile_workflow(o->lock, w->name);
            strbuf dir = SB_INIT;
            if (resolve_git(it, o, w->git, w->rev, w->subpath, lw ? lw->git : NULL,
                            lw ? lw->rev : NULL, &dir))
                hash_strict(it, dir.buf);
            sb_release(&dir);
        } else if (w->source == MF_SOURCE_PATH && w->path) {
            it->source = xstrdup("path");
            pin_contained(m, it, w->path, false);
        } else {
            pin_library_source(o, it);
        }
        if (w->blueprint) {
            struct pin_item *bp = add_item(out, PIN_BLUEPRINT, w->name, NULL);
            bp->source = xstrdup("path");
            pin_contained(m, bp, w->blueprint, true);
        }
    }
}

/* ---- decisions -------------------------------------------------------------- */

static void apply_decisions(const struct manifest *m, const struct pin_opts *o, pin_items *out)
{
    pin_decisions own = VEC_INIT;
    const pin_decisions *d = o->decisions;
    if (!d) {
        if (o->no_decisions || !o->home || m->kind != MANIFEST_PROJECT)
            return;
        pin_decisions_load(o->home, m->project_root, &own);
        d = &own;
    }
    for (size_t i = 0; i < out->n; i++) {
        struct pin_item *it = &out->v[i];
        const struct pin_decision_row *row = pin_decision_find(d, it);
        if (!row)
            continue;
        it->decision = row->answer;
        snprintf(it->live_checksum, sizeof it->live_checksum, "%s",
                 it->state == PIN_OK ? it->checksum : "");
        const char *pin = row->pin[0] ? row->pin : pin_locked_checksum(o->lock, it);
        it->live_path = it->fs_path ? xstrdup(it->fs_path) : NULL;
        if (!pin) {
            /* Nothing approved to fall back on: verified as usual, never served. */
            if (row->answer == PIN_DECISION_BLOCK) {
                it->omitted = true;
                free(it->fs_path);
                it->fs_path = NULL;
            }
            continue;
        }
        bool live_is_approved = it->state == PIN_OK && strcmp(it->checksum, pin) == 0;
        snprintf(it->checksum, sizeof it->checksum, "%s", pin);
        it->state = PIN_OK;
        free(it->error);
        it->error = NULL;
        if (row->answer == PIN_DECISION_BLOCK) {
            it->omitted = true;
            free(it->fs_path);
            it->fs_path = NULL;
        } else if (!live_is_approved) {
            /* Serve the approved bytes, re-proved from the store, or nothing. */
            strbuf sp = SB_INIT;
            struct as_err err = AS_ERR_INIT;
            enum store_kind k = it->kind == PIN_SKILL ? STORE_SKILL_TREE : STORE_FILE;
            free(it->fs_path);
            it->fs_path = NULL;
            if (o->home && store_open(o->home, pin, k, &sp, &err) == 1)
                it->fs_path = sb_detach(&sp, NULL);
            else
                it->omitted = true;
            sb_release(&sp);
        }
    }
    pin_decisions_free(&own);
}

/* ---- collect ------------------------------------------------------------ */

static bool toolset_selected(const struct mf_toolset *t, const struct pin_opts *o)
{
    return !o->toolset || strcmp(o->toolset, t->name) == 0;
}

int pin_collect(const struct manifest *m, const struct pin_opts *o, pin_items *out,
                struct as_err *err)
{
    if (o->toolset && !manifest_toolset(m, o->toolset)) {
        as_err_set(err, "no toolset '%s' in %s", o->toolset, m->path);
        as_err_hint(err, "declare [toolsets.%s], or pick one of the manifest's toolsets",
                    o->toolset);
        return -1;
    }
    /* Servers: all inline without toolsets, else the union over (selected) toolsets. */
    size_t base = out->n;
    strvec refs = STRVEC_INIT;
    if (m->toolsets.n == 0) {
        for (size_t i = 0; i < m->servers.n; i++)
            strvec_push(&refs, m->servers.v[i].name);
    } else {
        for (size_t i = 0; i < m->toolsets.n; i++) {
            const struct mf_toolset *t = &m->toolsets.v[i];
            if (!toolset_selected(t, o))
                continue;
            for (size_t j = 0; j < t->servers.n; j++)
                strvec_push(&refs, t->servers.v[j]);
        }
    }
    struct ref_plan plan;
    plan_init(&plan, m, true, &refs, base);
    for (size_t j = 0; j < plan.n; j++)
        pin_server(m, o, &plan, j, out);
    plan_free(&plan);
    strvec_clear(&refs);
    /* Skills: every [skills] entry, plus toolset-referenced library skills. */
    for (size_t i = 0; i < m->skills.n; i++)
        strvec_push(&refs, m->skills.v[i].name);
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        if (!toolset_selected(t, o))
            continue;
        for (size_t j = 0; j < t->skills.n; j++)
            if (strcmp(t->skills.v[j], "*") != 0)
                strvec_push(&refs, t->skills.v[j]);
    }
    plan_init(&plan, m, false, &refs, base);
    for (size_t j = 0; j < plan.n; j++)
        pin_skill(m, o, &plan, j, out);
    plan_free(&plan);
    strvec_clear(&refs);
    /* Executables of every effective inline server. */
    size_t n = out->n;
    for (size_t i = 0; i < n; i++) {
        if (out->v[i].kind != PIN_SERVER || out->v[i].library)
            continue;
        const struct mf_server *s = manifest_server(m, out->v[i].name);
        if (s)
            pin_server_executables(m, s, out);
    }
    pin_instructions(m, o, out);
    pin_settings(m, out);
    pin_extensions(m, o, out);
    pin_workflows(m, o, out);
    apply_decisions(m, o, out);
    return 0;
}
