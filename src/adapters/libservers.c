/* libservers — what a toolset takes from the central library (docs/library.md):
 * server definitions made renderable for apply and use, and the skills
 * `use` places (by their bare name, from the bytes lock pinned).
 *
 * The library itself lives in src/library, which this module may not
 * depend on: the caller hands its resolver in as a pin_library_fn
 * (adp_apply_opts.library), the same hook lock pins through, so apply
 * renders the definition lock pinned. A definition file is read once; the
 * bytes hashed against agentstack.lock are the bytes decoded, so an edit
 * between the trust check and the render is refused, never delivered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "base/toml.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"
#include "bundle/ref.h"

/* The lock row of a library server: lock keys rows by the reference as the
 * toolset wrote it; a row under the bare name is accepted for a qualified
 * reference too, and only a row whose source is the library counts. */
static const struct lock_server *locked_row(const struct lockfile *l, const char *ref)
{
    const struct lock_server *row = lockfile_server(l, ref);
    const char *bare = pin_ref_name(ref, NULL);
    if (!row && bare != ref)
        row = lockfile_server(l, bare);
    return row && row->source && strcmp(row->source, "library") == 0 ? row : NULL;
}

static int check_pinned(const struct adp_apply_opts *o, const char *ref, const char *path,
                        const strbuf *bytes, struct as_err *err)
{
    const struct lock_server *row = o->lock ? locked_row(o->lock, ref) : NULL;
    if (!row) {
        as_err_set(err,
                   "library server '%s' (%s) is not pinned in agentstack.lock — not "
                   "rendered",
                   ref, path);
        as_err_hint(err, "pin it: agentstack lock --write, then: agentstack trust .");
        return -1;
    }
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(bytes->buf, bytes->len, hex);
    if (strcmp(hex, row->checksum) != 0) {
        as_err_set(err,
                   "library server '%s' (%s) no longer matches agentstack.lock (locked "
                   "%.12s, now %.12s) — not rendered",
                   ref, path, row->checksum, hex);
        as_err_hint(err, "review the change, re-pin with agentstack lock --write, then: "
                         "agentstack trust .");
        return -1;
    }
    return 0;
}

/* Decodes a bare definition as the one server of a manifest, so it gets the
 * manifest's own checks (unknown keys, types, url/command) and model. */
static struct manifest *decode(const struct adp_apply_opts *o, const char *ref, const char *path,
                               const strbuf *bytes, struct as_err *err)
{
    toml_value *def = toml_parse(path, bytes->buf, bytes->len, err);
    if (!def) {
        as_err_prefix(err, "library server '%s'", ref);
        return NULL;
    }
    toml_value *root = toml_new(TOML_TABLE);
    toml_table_set(root, "version", toml_new_int(MANIFEST_VERSION));
    toml_value *servers = toml_new(TOML_TABLE);
    toml_table_set(servers, pin_ref_name(ref, NULL), def);
    toml_table_set(root, "servers", servers);
    strbuf text = SB_INIT;
    toml_emit(root, &text);
    toml_free(root);
    struct manifest_source src = {.kind = o->m->kind,
                                  .path = path,
                                  .data = text.buf,
                                  .len = text.len,
                                  .manifest_dir = o->m->manifest_dir,
                                  .project_root = o->m->project_root};
    struct as_err e = AS_ERR_INIT;
    struct manifest *lm = manifest_load_bytes(&src, &e);
    sb_release(&text);
    const char *msg = e.msg, *fix = e.hint;
    mf_diags d = VEC_INIT;
    bool bad = !lm || manifest_validate(lm, NULL, &d) > 0;
    for (size_t i = 0; lm && i < d.n; i++)
        if (d.v[i].sev == MF_ERROR) {
            msg = d.v[i].msg;
            fix = d.v[i].fix;
            break;
        }
    if (bad) {
        /* Positions would name lines of the wrapped text, not of the file,
         * and the wrapper's table is not what the file says. */
        strbuf m2 = SB_INIT, wrap = SB_INIT;
        sb_addf(&wrap, " in [servers.%s]", pin_ref_name(ref, NULL));
        const char *cut = strstr(msg, wrap.buf);
        if (cut) {
            sb_add(&m2, msg, (size_t)(cut - msg));
            sb_adds(&m2, cut + wrap.len);
        } else {
            sb_adds(&m2, msg);
        }
        as_err_set(err, "library server '%s' (%s): %s", ref, path, m2.buf);
        sb_release(&m2);
        sb_release(&wrap);
        if (fix && fix[0])
            as_err_hint(err, "%.*s in %s", (int)strcspn(fix, "\n"), fix, path);
        else
            as_err_hint(err,
                        "fix %s, or replace it: agentstack lib add-server %s --file "
                        "<definition.toml> --replace --write",
                        path, pin_ref_name(ref, NULL));
        manifest_free(lm);
        lm = NULL;
    }
    mf_diags_free(&d);
    return lm;
}

int adp_i_library_server(const struct adp_apply_opts *o, const char *ref, bool check_pin,
                         struct manifest **out, struct as_err *err)
{
    *out = NULL;
    strbuf path = SB_INIT, bytes = SB_INIT;
    int r = o->library ? o->library(o->library_ctx, PIN_SERVER, ref, &path, err)
                       : pin_library_default(o->home, PIN_SERVER, ref, &path);
    if (r < 0) {
        as_err_prefix(err, "server '%s'", ref);
        goto fail;
    }
    if (r == 0) {
        as_err_set(err, "server '%s' is neither in [servers] of %s nor in the central library", ref,
                   o->m->path);
        as_err_hint(err,
                    "declare [servers.%s], add it to the library (agentstack lib add-server "
                    "%s --file <definition.toml> --write), or remove it from the toolset",
                    ref, pin_ref_name(ref, NULL));
        goto fail;
    }
    if (fs_read_file(path.buf, MANIFEST_MAX_BYTES, 1, &bytes, err) != 0) {
        as_err_prefix(err, "library server '%s'", ref);
        goto fail;
    }
    if (check_pin && check_pinned(o, ref, path.buf, &bytes, err) != 0)
        goto fail;
    *out = decode(o, ref, path.buf, &bytes, err);
    if (!*out)
        goto fail;
    sb_release(&path);
    sb_release(&bytes);
    return 0;
fail:
    sb_release(&path);
    sb_release(&bytes);
    return -1;
}

const struct mf_server *adp_i_libset_get(struct adp_i_libset *set, const struct adp_apply_opts *o,
                                         const char *ref, bool check_pin, struct as_err *err)
{
    long at = strvec_find(&set->refs, ref);
    if (at >= 0)
        return &set->defs.v[at]->servers.v[0];
    struct manifest *lm = NULL;
    if (adp_i_library_server(o, ref, check_pin, &lm, err) != 0)
        return NULL;
    vec_push(&set->defs, lm);
    strvec_push(&set->refs, ref);
    return &lm->servers.v[0];
}

const char *adp_i_libset_ref(const struct adp_i_libset *set, const struct mf_server *s)
{
    for (size_t i = 0; i < set->defs.n; i++)
        if (&set->defs.v[i]->servers.v[0] == s)
            return set->refs.v[i];
    return NULL;
}

void adp_i_libset_free(struct adp_i_libset *set)
{
    for (size_t i = 0; i < set->defs.n; i++)
        manifest_free(set->defs.v[i]);
    vec_free(&set->defs);
    strvec_clear(&set->refs);
}

void adp_effective_servers(const struct manifest *m, const char *home, pin_library_fn library,
                           void *library_ctx, struct adp_effective *out)
{
    memset(out, 0, sizeof *out);
    out->lib = xcalloc(1, sizeof *out->lib);
    for (size_t i = 0; i < m->servers.n; i++) {
        vec_push(&out->servers, &m->servers.v[i]);
        strvec_push(&out->library_refs, "");
    }
    struct adp_apply_opts o = {
        .m = m, .home = home, .library = library, .library_ctx = library_ctx};
    strvec failed = STRVEC_INIT; /* each unreadable reference reported once */
    for (size_t i = 0; i < m->toolsets.n; i++)
        for (size_t j = 0; j < m->toolsets.v[i].servers.n; j++) {
            const char *ref = m->toolsets.v[i].servers.v[j];
            if (manifest_server(m, ref) || strvec_find(&out->lib->refs, ref) >= 0 ||
                strvec_find(&failed, ref) >= 0)
                continue;
            struct as_err err = AS_ERR_INIT;
            const struct mf_server *s = adp_i_libset_get(out->lib, &o, ref, false, &err);
            if (!s) {
                char buf[2048];
                strvec_pushf(&out->problems, "toolset '%s': %s", m->toolsets.v[i].name,
                             as_err_str(&err, buf, sizeof buf));
                strvec_push(&failed, ref);
                continue;
            }
            vec_push(&out->servers, s);
            strvec_push(&out->library_refs, ref);
        }
    strvec_clear(&failed);
}

void adp_effective_refs(const struct manifest *m, const struct adp_effective *e, strvec *out)
{
    ref_manifest_refs(m, out);
    for (size_t i = 0; i < e->servers.n; i++)
        if (e->library_refs.v[i][0])
            ref_server_refs(e->servers.v[i], out);
    strvec_sort(out);
}

void adp_effective_free(struct adp_effective *e)
{
    if (e->lib) {
        adp_i_libset_free(e->lib);
        free(e->lib);
    }
    vec_free(&e->servers);
    strvec_clear(&e->library_refs);
    strvec_clear(&e->problems);
    memset(e, 0, sizeof *e);
}

bool adp_i_check_library_pins(const struct adp_apply_opts *o)
{
    return o->m->kind == MANIFEST_PROJECT && !o->trust_refusal && (o->write || o->lock);
}

int adp_i_toolset_skills(const struct adp_apply_opts *o, strvec *names, strvec *srcs, strvec *why,
                         strvec *notes, struct as_err *err)
{
    const struct manifest *m = o->m;
    const struct mf_toolset *ts = o->toolset ? manifest_toolset(m, o->toolset) : NULL;
    if (!ts)
        return 0;
    strvec refs = STRVEC_INIT; /* as the toolset wrote them; parallel to names */
    for (size_t i = 0; i < ts->skills.n; i++) {
        if (strcmp(ts->skills.v[i], "*") == 0) {
            for (size_t k = 0; k < m->skills.n; k++)
                if (strvec_find(&refs, m->skills.v[k].name) < 0)
                    strvec_push(&refs, m->skills.v[k].name);
        } else if (strvec_find(&refs, ts->skills.v[i]) < 0) {
            strvec_push(&refs, ts->skills.v[i]);
        }
    }
    /* A qualified library skill is placed under its own name: one link per
     * name, so two references to one name place neither. */
    for (size_t i = 0; i < refs.n; i++)
        strvec_push(names, pin_ref_name(refs.v[i], NULL));
    if (!names->n) {
        strvec_clear(&refs);
        return 0;
    }
    strbuf home = SB_INIT;
    struct as_err herr = AS_ERR_INIT;
    bool have_home = home_dir(&home, &herr) == 0;
    struct pin_opts po = {.toolset = o->toolset,
                          .home = have_home ? home.buf : NULL,
                          .library = o->library,
                          .library_ctx = o->library_ctx};
    pin_items items = VEC_INIT;
    int rc = pin_collect(m, &po, &items, err);
    bool check = adp_i_check_library_pins(o);
    for (size_t i = 0; rc == 0 && i < names->n; i++) {
        const char *ref = refs.v[i], *name = names->v[i];
        const struct pin_item *it = NULL;
        for (size_t k = 0; k < items.n && !it; k++)
            if (items.v[k].kind == PIN_SKILL && strcmp(items.v[k].name, ref) == 0)
                it = &items.v[k];
        for (size_t k = 0; k < items.n && !it && pin_ref_name(ref, NULL) != ref; k++)
            if (items.v[k].kind == PIN_SKILL && items.v[k].library &&
                strcmp(items.v[k].name, name) == 0)
                it = &items.v[k];
        const char *src = it && it->state == PIN_OK && it->fs_path ? it->fs_path : "";
        const char *reason = "";
        if (it && it->omitted)
            reason = it->decision == PIN_DECISION_BLOCK
                         ? ADP_SKILL_BLOCKED
                         : "kept at its approved version, which is no longer in the content "
                           "store (review it again: agentstack trust .)";
        bool dup = false, first = true;
        for (size_t k = 0; k < names->n; k++)
            if (k != i && strcmp(names->v[k], name) == 0) {
                dup = true;
                first &= k > i;
            }
        if (dup) {
            if (first)
                strvec_pushf(notes,
                             "✗ skill '%s' is named twice in toolset '%s' — neither "
                             "placed",
                             name, ts->name);
            src = "";
            reason = "";
        } else if (src[0] && check && it->library && pin_verify_item(o->lock, it) != PIN_MATCHES) {
            /* The gate verified the lock; placing other bytes would bypass it. */
            strbuf desc = SB_INIT;
            pin_describe(o->lock, it, pin_verify_item(o->lock, it), &desc);
            strvec_pushf(notes,
                         "✗ library skill '%s' not placed: %s — re-pin with "
                         "agentstack lock --write, then: agentstack trust .",
                         ref, desc.buf);
            sb_release(&desc);
            src = "";
        }
        strbuf abs = SB_INIT;
        struct as_err re = AS_ERR_INIT;
        if (src[0] && fs_realpath(src, &abs, &re) == 0)
            strvec_push(srcs, abs.buf);
        else
            strvec_push(srcs, "");
        strvec_push(why, src[0] ? "" : reason);
        sb_release(&abs);
    }
    pin_items_free(&items);
    sb_release(&home);
    strvec_clear(&refs);
    return rc;
}
