/* lockfile_pin — what `lock` pins (§4.2) and how pins are verified (§4.5). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/lockfile.h"
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

/* A path as declared, anchored: absolute stays, relative joins the anchor. */
static char *anchored(const char *anchor, const char *p)
{
    if (p[0] == '/')
        return xstrdup(p);
    return xasprintf("%s/%s", anchor, p);
}

/* ---- library ------------------------------------------------------------ */

/* Library file stem (chapter 06 §1.1): bytes outside [A-Za-z0-9_-] as %XX
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
    if (kind == PIN_SKILL) {
        if (strchr(name, '/') || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
            return 0;
        sb_addf(path, "%s/lib/skills/%s", home, name);
        return lstat(path->buf, &st) == 0 && S_ISDIR(st.st_mode);
    }
    return 0;
}

static int library_lookup(const struct pin_opts *o, enum pin_kind kind, const char *name,
                          strbuf *path, struct as_err *err)
{
    if (o->library)
        return o->library(o->library_ctx, kind, name, path, err);
    (void)err;
    return pin_library_default(o->home, kind, name, path);
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

/* The slug of a git URL: every non-alphanumeric byte becomes '-' (§1.4). */
static void git_slug(const char *url, strbuf *out)
{
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        sb_addc(out, isalnum(*p) ? (char)*p : '-');
}

static void pin_git_skill(const struct mf_skill *s, const struct pin_opts *o, struct pin_item *it)
{
    it->source = xstrdup("git");
    it->git = xstrdup(s->git);
    /* The commit to hash: the lock's resolved rev beats the manifest's. */
    const struct lock_skill *ls = lockfile_skill(o->lock, s->name);
    const char *rev = ls && ls->rev && ls->git && strcmp(ls->git, s->git) == 0 ? ls->rev : s->rev;
    strbuf dir = SB_INIT;
    if (o->home && rev) {
        sb_addf(&dir, "%s/store/co/", o->home);
        git_slug(s->git, &dir);
        sb_addf(&dir, "/%s", rev);
        if (s->subpath && s->subpath[0])
            sb_addf(&dir, "/%s", s->subpath);
    }
    if (!dir.len || !fs_is_dir(dir.buf)) {
        char *m = xasprintf("skill '%s': git source %s%s%s is not cached — pin unverified "
                            "(offline)",
                            s->name, s->git, rev ? "@" : "", rev ? rev : "");
        set_state(it, PIN_OFFLINE, m);
        free(m);
    } else {
        it->rev = xstrdup(rev);
        hash_skill_dir(it, dir.buf);
    }
    sb_release(&dir);
}

static void pin_skill(const struct manifest *m, const struct pin_opts *o, const char *name,
                      pin_items *out)
{
    if (have_item(out, PIN_SKILL, name, NULL))
        return;
    struct pin_item *it = add_item(out, PIN_SKILL, name, NULL);
    const struct mf_skill *s = manifest_skill(m, name);
    if (s && s->source == MF_SOURCE_GIT) {
        pin_git_skill(s, o, it);
        return;
    }
    if (s && s->path) {
        it->source = xstrdup("path");
        it->declared_path = xstrdup(s->path);
        char *dir = anchored(m->manifest_dir, s->path);
        hash_skill_dir(it, dir);
        free(dir);
        return;
    }
    it->library = true;
    it->source = xstrdup("path");
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int r = library_lookup(o, PIN_SKILL, name, &p, &err);
    if (r == 1) {
        hash_skill_dir(it, p.buf);
    } else {
        char *msg = r < 0 ? xasprintf("skill '%s': %s", name, err.msg)
                          : xasprintf("skill '%s' is neither in [skills] nor in the library", name);
        set_state(it, PIN_UNRESOLVED, msg);
        free(msg);
    }
    sb_release(&p);
}

/* ---- servers and their executables --------------------------------------- */

static void pin_server(const struct manifest *m, const struct pin_opts *o, const char *name,
                       pin_items *out)
{
    if (have_item(out, PIN_SERVER, name, NULL))
        return;
    struct pin_item *it = add_item(out, PIN_SERVER, name, NULL);
    const struct mf_server *s = manifest_server(m, name);
    if (s) {
        it->source = xstrdup("inline");
        digest_inline_server(s->table, it->checksum);
        return;
    }
    it->library = true;
    it->source = xstrdup("library");
    strbuf p = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int r = library_lookup(o, PIN_SERVER, name, &p, &err);
    if (r == 1) {
        it->fs_path = xstrdup(p.buf);
        if (digest_file(p.buf, it->checksum, &err) < 0) {
            char *msg = xasprintf("server '%s': %s", name, err.msg);
            set_state(it, PIN_FAILED, msg);
            free(msg);
        }
    } else {
        char *msg = r < 0
                        ? xasprintf("server '%s': %s", name, err.msg)
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

/* One command/args string (§4.2): pinned when it resolves, from anchor_rel
 * under the root, to an existing regular file inside the project. */
static void pin_exec_string(const struct manifest *m, const char *server, const char *cwd_rel,
                            const char *s, pin_items *out)
{
    if (!s[0] || s[0] == '-' || s[0] == '/' || strstr(s, "${"))
        return;
    /* Normalize: drop "." and empty components; note "..". */
    strbuf rel = SB_INIT;
    bool dotdot = false;
    if (cwd_rel && cwd_rel[0])
        sb_adds(&rel, cwd_rel);
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            dotdot = true;
        if (n && !(n == 1 && p[0] == '.')) {
            if (rel.len)
                sb_addc(&rel, '/');
            sb_add(&rel, p, n);
        }
        p += n + (e ? 1 : 0);
    }
    if (!rel.len) {
        sb_release(&rel);
        return;
    }
    char *full = xasprintf("%s/%s", m->project_root, rel.buf);
    struct stat st;
    if (dotdot) {
        /* Only an existing target via ".." is an error; other strings are args. */
        if (stat(full, &st) == 0) {
            char *msg = xasprintf("server '%s': `%s` resolves outside the project "
                                  "(path traversal via ..); it cannot be pinned",
                                  server, s);
            if (!have_item(out, PIN_EXECUTABLE, s, "file"))
                add_failed(out, PIN_EXECUTABLE, s, "file", msg);
            free(msg);
        }
        goto out;
    }
    /* lstat every component from the root: a symlink anywhere is an error. */
    strbuf walk = SB_INIT;
    sb_adds(&walk, m->project_root);
    const char *q = rel.buf;
    bool exists = true;
    while (*q) {
        const char *e = strchr(q, '/');
        size_t n = e ? (size_t)(e - q) : strlen(q);
        sb_addc(&walk, '/');
        sb_add(&walk, q, n);
        if (lstat(walk.buf, &st) != 0) {
            exists = false;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char *msg = xasprintf("server '%s': `%s` goes through a symlink (%s); local "
                                  "executables must be real files in the project",
                                  server, s, walk.buf);
            if (!have_item(out, PIN_EXECUTABLE, rel.buf, "file"))
                add_failed(out, PIN_EXECUTABLE, rel.buf, "file", msg);
            free(msg);
            exists = false;
            break;
        }
        if (e && !S_ISDIR(st.st_mode)) {
            exists = false;
            break;
        }
        q += n + (e ? 1 : 0);
    }
    sb_release(&walk);
    if (!exists || S_ISDIR(st.st_mode))
        goto out;
    if (have_item(out, PIN_EXECUTABLE, rel.buf, "file"))
        goto out;
    struct pin_item *it = add_item(out, PIN_EXECUTABLE, rel.buf, "file");
    it->fs_path = xstrdup(full);
    if (!S_ISREG(st.st_mode)) {
        char *msg = xasprintf("server '%s': `%s` is not a regular file", server, s);
        set_state(it, PIN_FAILED, msg);
        free(msg);
    } else {
        struct as_err err = AS_ERR_INIT;
        if (digest_file(full, it->checksum, &err) < 0)
            set_state(it, PIN_FAILED, err.msg);
    }
out:
    free(full);
    sb_release(&rel);
}

static void pin_server_executables(const struct manifest *m, const struct mf_server *s,
                                   pin_items *out)
{
    if (s->type == MF_SERVER_STDIO) {
        /* A relative cwd must be contained; an absolute or ${REF} one is shown, not pinned. */
        const char *cwd_rel = NULL;
        strbuf cwdp = SB_INIT;
        bool usable = true;
        if (s->cwd && s->cwd[0] && s->cwd[0] != '/' && !strstr(s->cwd, "${")) {
            struct as_err err = AS_ERR_INIT;
            if (manifest_contained_path(m->project_root, s->cwd, &cwdp, &err) < 0) {
                char *msg = xasprintf("server '%s': cwd %s", s->name, err.msg);
                if (!have_item(out, PIN_EXECUTABLE, s->cwd, "file"))
                    add_failed(out, PIN_EXECUTABLE, s->cwd, "file", msg);
                free(msg);
                usable = false;
            } else {
                cwd_rel = s->cwd;
            }
        } else if (s->cwd && s->cwd[0]) {
            usable = false; /* absolute or ${REF} cwd: commands relative to it are not ours */
        }
        if (usable) {
            strbuf norm = SB_INIT;
            if (cwd_rel) {
                /* project-relative, '/'-joined, no "./" */
                const char *p = cwd_rel;
                while (*p) {
                    const char *e = strchr(p, '/');
                    size_t n = e ? (size_t)(e - p) : strlen(p);
                    if (n && !(n == 1 && p[0] == '.')) {
                        if (norm.len)
                            sb_addc(&norm, '/');
                        sb_add(&norm, p, n);
                    }
                    p += n + (e ? 1 : 0);
                }
            }
            if (s->command)
                pin_exec_string(m, s->name, norm.buf, s->command, out);
            for (size_t i = 0; i < s->args.n; i++)
                pin_exec_string(m, s->name, norm.buf, s->args.v[i], out);
            sb_release(&norm);
        }
        sb_release(&cwdp);
    }
    for (size_t i = 0; i < s->integrity_roots.n; i++) {
        const char *r = s->integrity_roots.v[i];
        strbuf full = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (manifest_contained_path(m->project_root, r, &full, &err) < 0) {
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
            continue; /* machine-layer fragments are never pinned (§2.9) */
        const char *anchor = in->anchor_dir ? in->anchor_dir : m->manifest_dir;
        struct pin_item *it = add_item(out, PIN_INSTRUCTION, in->name, NULL);
        char *p;
        if (in->path) {
            it->declared_path = xstrdup(in->path);
            p = anchored(anchor, in->path);
        } else {
            it->library = true;
            p = xasprintf("%s/lib/instructions/%s/instruction.toml", o->home ? o->home : "",
                          in->name);
        }
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
            char *vp = anchored(anchor, v->path);
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
    if (m->toolsets.n == 0) {
        for (size_t i = 0; i < m->servers.n; i++)
            pin_server(m, o, m->servers.v[i].name, out);
    } else {
        for (size_t i = 0; i < m->toolsets.n; i++) {
            const struct mf_toolset *t = &m->toolsets.v[i];
            if (!toolset_selected(t, o))
                continue;
            for (size_t j = 0; j < t->servers.n; j++)
                pin_server(m, o, t->servers.v[j], out);
        }
    }
    /* Skills: every [skills] entry, plus toolset-referenced library skills. */
    for (size_t i = 0; i < m->skills.n; i++)
        pin_skill(m, o, m->skills.v[i].name, out);
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        if (!toolset_selected(t, o))
            continue;
        for (size_t j = 0; j < t->skills.n; j++)
            if (strcmp(t->skills.v[j], "*") != 0)
                pin_skill(m, o, t->skills.v[j], out);
    }
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
    return 0;
}

/* ---- building the lock -------------------------------------------------- */

static char *dupn(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static const struct lock_variant *old_variant(const struct lock_instruction *li,
                                              const struct pin_item *v)
{
    for (size_t i = 0; li && i < li->variants.n; i++) {
        const struct lock_variant *lv = &li->variants.v[i];
        if (strcmp(lv->path, v->declared_path) == 0 &&
            ((!lv->cli && !v->cli) || (lv->cli && v->cli && strcmp(lv->cli, v->cli) == 0)) &&
            ((!lv->model && !v->model) ||
             (lv->model && v->model && strcmp(lv->model, v->model) == 0)))
            return lv;
    }
    return NULL;
}

static void copy_old_skill(struct lockfile *l, const struct lock_skill *s)
{
    struct lock_skill c = {0};
    c.name = xstrdup(s->name);
    c.source = dupn(s->source);
    c.path = dupn(s->path);
    c.git = dupn(s->git);
    c.rev = dupn(s->rev);
    memcpy(c.checksum, s->checksum, sizeof c.checksum);
    c.license = dupn(s->license);
    c.origin = dupn(s->origin);
    vec_push(&l->skills, c);
}

static void add_server_row(struct lockfile *l, const char *name, const char *source,
                           const char *checksum)
{
    struct lock_server s = {0};
    s.name = xstrdup(name);
    s.source = xstrdup(source);
    memcpy(s.checksum, checksum, sizeof s.checksum);
    vec_push(&l->servers, s);
}

struct lockfile *pin_build_lock(const pin_items *items, const struct lockfile *old,
                                const char *stamp)
{
    struct lockfile *l = lockfile_new();
    l->manifest_digest = stamp ? xstrdup(stamp) : NULL;
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        bool ok = it->state == PIN_OK;
        switch (it->kind) {
        case PIN_SKILL: {
            const struct lock_skill *os = lockfile_skill(old, it->name);
            if (!ok) {
                if (os)
                    copy_old_skill(l, os);
                break;
            }
            struct lock_skill s = {0};
            s.name = xstrdup(it->name);
            s.source = xstrdup(it->source ? it->source : "path");
            s.path = it->library ? NULL : dupn(it->declared_path);
            s.git = dupn(it->git);
            s.rev = dupn(it->rev);
            memcpy(s.checksum, it->checksum, sizeof s.checksum);
            /* Re-locks never erase attribution. */
            s.license = os ? dupn(os->license) : NULL;
            s.origin = os ? dupn(os->origin) : NULL;
            vec_push(&l->skills, s);
            break;
        }
        case PIN_SERVER: {
            const struct lock_server *os = lockfile_server(old, it->name);
            if (ok)
                add_server_row(l, it->name, it->source, it->checksum);
            else if (os)
                add_server_row(l, os->name, os->source, os->checksum);
            break;
        }
        case PIN_INSTRUCTION: {
            const struct lock_instruction *oi = lockfile_instruction(old, it->name);
            struct lock_instruction in = {0};
            in.name = xstrdup(it->name);
            in.path = dupn(it->declared_path);
            if (ok)
                memcpy(in.checksum, it->checksum, sizeof in.checksum);
            else if (oi)
                memcpy(in.checksum, oi->checksum, sizeof in.checksum);
            else {
                free(in.name);
                free(in.path);
                break;
            }
            vec_push(&l->instructions, in);
            break;
        }
        case PIN_VARIANT: {
            struct lock_instruction *in = NULL;
            for (size_t j = 0; j < l->instructions.n; j++)
                if (strcmp(l->instructions.v[j].name, it->name) == 0)
                    in = &l->instructions.v[j];
            if (!in)
                break;
            const struct lock_variant *ov = old_variant(lockfile_instruction(old, it->name), it);
            if (!ok && !ov)
                break;
            struct lock_variant v = {0};
            v.cli = dupn(it->cli);
            v.model = dupn(it->model);
            v.path = xstrdup(it->declared_path);
            memcpy(v.checksum, ok ? it->checksum : ov->checksum, sizeof v.checksum);
            vec_push(&in->variants, v);
            break;
        }
        case PIN_EXECUTABLE:
            if (ok) {
                struct lock_executable e = {0};
                e.path = xstrdup(it->name);
                e.kind = xstrdup(it->sub);
                memcpy(e.checksum, it->checksum, sizeof e.checksum);
                vec_push(&l->executables, e);
            }
            break;
        case PIN_SETTING:
            if (ok) {
                struct lock_setting s = {0};
                s.target = xstrdup(it->name);
                s.key = xstrdup(it->sub);
                memcpy(s.checksum, it->checksum, sizeof s.checksum);
                vec_push(&l->settings, s);
            }
            break;
        }
    }
    /* Stale skill and server rows stay (install prunes skills, §4.7). */
    for (size_t i = 0; old && i < old->skills.n; i++)
        if (!lockfile_skill(l, old->skills.v[i].name))
            copy_old_skill(l, &old->skills.v[i]);
    for (size_t i = 0; old && i < old->servers.n; i++)
        if (!lockfile_server(l, old->servers.v[i].name))
            add_server_row(l, old->servers.v[i].name, old->servers.v[i].source,
                           old->servers.v[i].checksum);
    if (old) {
        l->ext_extension = old->ext_extension ? toml_clone(old->ext_extension) : NULL;
        l->ext_workflow = old->ext_workflow ? toml_clone(old->ext_workflow) : NULL;
        l->ext_package = old->ext_package ? toml_clone(old->ext_package) : NULL;
    }
    return l;
}

/* ---- verification ------------------------------------------------------- */

const char *pin_locked_checksum(const struct lockfile *l, const struct pin_item *it)
{
    if (!l)
        return NULL;
    switch (it->kind) {
    case PIN_SKILL: {
        const struct lock_skill *s = lockfile_skill(l, it->name);
        return s ? s->checksum : NULL;
    }
    case PIN_SERVER: {
        const struct lock_server *s = lockfile_server(l, it->name);
        return s ? s->checksum : NULL;
    }
    case PIN_INSTRUCTION: {
        const struct lock_instruction *in = lockfile_instruction(l, it->name);
        return in ? in->checksum : NULL;
    }
    case PIN_VARIANT: {
        const struct lock_variant *v = old_variant(lockfile_instruction(l, it->name), it);
        return v ? v->checksum : NULL;
    }
    case PIN_EXECUTABLE: {
        const struct lock_executable *e = lockfile_executable(l, it->name, it->sub);
        return e ? e->checksum : NULL;
    }
    case PIN_SETTING: {
        const struct lock_setting *s = lockfile_setting(l, it->name, it->sub);
        return s ? s->checksum : NULL;
    }
    }
    return NULL;
}

enum pin_status pin_verify_item(const struct lockfile *l, const struct pin_item *it)
{
    if (it->state == PIN_OFFLINE)
        return PIN_UNAVAILABLE;
    if (it->state != PIN_OK)
        return PIN_RESOLVE_FAILED;
    const char *c = pin_locked_checksum(l, it);
    if (!c)
        return PIN_UNPINNED;
    if (strcmp(c, it->checksum) != 0)
        return PIN_DRIFTED;
    if (it->kind == PIN_SKILL && it->rev) {
        const struct lock_skill *s = lockfile_skill(l, it->name);
        if (!s->rev || strcmp(s->rev, it->rev) != 0)
            return PIN_DRIFTED;
    }
    return PIN_MATCHES;
}

static const char *content_word(enum pin_kind k)
{
    switch (k) {
    case PIN_SKILL:
        return "skill content";
    case PIN_SERVER:
        return "server definition";
    case PIN_INSTRUCTION:
    case PIN_VARIANT:
        return "instruction content";
    case PIN_EXECUTABLE:
        return "executable content";
    case PIN_SETTING:
        return "setting value";
    }
    return "content";
}

void pin_describe(const struct lockfile *l, const struct pin_item *it, enum pin_status st,
                  strbuf *out)
{
    if (it->kind == PIN_SETTING)
        sb_addf(out, "setting %s.%s", it->name, it->sub);
    else if (it->kind == PIN_EXECUTABLE)
        sb_addf(out, "%s '%s'", strcmp(it->sub, "root") == 0 ? "integrity root" : "executable",
                it->name);
    else if (it->kind == PIN_VARIANT)
        sb_addf(out, "instruction '%s' variant %s", it->name, it->declared_path);
    else
        sb_addf(out, "%s%s '%s'", it->library ? "library " : "", pin_kind_name(it->kind), it->name);
    switch (st) {
    case PIN_MATCHES:
        sb_adds(out, ": pinned");
        break;
    case PIN_UNPINNED:
        sb_adds(out, ": not pinned in agentstack.lock");
        break;
    case PIN_DRIFTED: {
        const char *c = pin_locked_checksum(l, it);
        sb_addf(out, ": %s drifted from agentstack.lock (locked %.12s, current %.12s)",
                content_word(it->kind), c ? c : "", it->checksum);
        break;
    }
    case PIN_UNAVAILABLE:
    case PIN_RESOLVE_FAILED:
        sb_addf(out, ": %s", it->error ? it->error : pin_status_name(st));
        break;
    }
}

/* ---- deposits ----------------------------------------------------------- */

static bool plain_name(const char *s)
{
    if (!s[0] || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strncmp(s, ".tmp-", 5) == 0)
        return false;
    for (const char *p = s; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20)
            return false;
    return strlen(s) < 200;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

void pin_deposit(const pin_items *items, const char *home, strvec *warnings)
{
    if (!home)
        return;
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        if (it->state != PIN_OK)
            continue;
        struct as_err err = AS_ERR_INIT;
        int rc = 0;
        switch (it->kind) {
        case PIN_SKILL:
            rc = store_deposit_tree(home, it->fs_path, STORE_SKILL_TREE, it->checksum, NULL, &err);
            break;
        case PIN_INSTRUCTION:
        case PIN_VARIANT:
            rc = store_deposit_file(home, it->fs_path, base_name(it->fs_path), it->checksum, &err);
            break;
        case PIN_SERVER:
            if (it->library && it->fs_path) {
                char *n =
                    plain_name(it->name) ? xasprintf("%s.toml", it->name) : xstrdup("server.toml");
                rc = store_deposit_file(home, it->fs_path, n, it->checksum, &err);
                free(n);
            }
            break;
        case PIN_SETTING: {
            char *n = xasprintf("%s.%s.json", it->name, it->sub);
            if (!plain_name(n)) {
                free(n);
                n = xstrdup("setting.json");
            }
            rc = store_deposit_bytes(home, it->canon, strlen(it->canon), n, it->checksum, &err);
            free(n);
            break;
        }
        case PIN_EXECUTABLE:
            if (strcmp(it->sub, "root") == 0) {
                enum store_kind k = fs_is_dir(it->fs_path) ? STORE_ROOT_TREE : STORE_ROOT_FILE;
                rc = store_deposit_tree(home, it->fs_path, k, it->checksum, NULL, &err);
            }
            break;
        }
        if (rc < 0) {
            strbuf w = SB_INIT;
            sb_addf(&w, "could not keep a copy of %s '%s' in the content store: %s",
                    pin_kind_name(it->kind), it->name, err.msg);
            strvec_push_take(warnings, sb_detach(&w, NULL));
        }
    }
}
