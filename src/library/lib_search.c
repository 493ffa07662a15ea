/* search — see search.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "bundle/skill_md.h"
#include "library/search.h"

void lib_hits_free(lib_hits *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].name);
        free(h->v[i].description);
        free(h->v[i].source);
    }
    vec_free(h);
}

static char *one_line(const char *s)
{
    if (!s)
        return NULL;
    strbuf b = SB_INIT;
    skill_md_sanitize(s, strlen(s), &b);
    if (!b.len) {
        sb_release(&b);
        return NULL;
    }
    return sb_detach(&b, NULL);
}

static const char *tstr(const toml_value *t, const char *k)
{
    const toml_value *v = t ? toml_get(t, k) : NULL;
    return v && v->type == TOML_STRING ? v->u.str.s : NULL;
}

/* Raw (unsanitized) description of a library item. */
static char *describe(const struct lib_item *it)
{
    struct as_err err = AS_ERR_INIT;
    char *d = NULL;
    if (it->kind == LIB_SKILL) {
        struct skill_md md = {0};
        if (skill_md_read(it->body, &md, &err) == 0 && md.description)
            d = xstrdup(md.description);
        skill_md_free(&md);
        return d;
    }
    const char *file = it->body;
    char *packfile = NULL, *instr = NULL;
    if (it->kind == LIB_PACKAGE)
        file = packfile = xasprintf("%s/pack.toml", it->body);
    else if (it->kind == LIB_INSTRUCTION)
        file = instr = xasprintf("%s/instruction.toml", it->body);
    else if (it->kind == LIB_EXTENSION)
        return NULL;
    toml_value *t = toml_parse_file(file, LIB_MAX_FILE_BYTES, &err);
    free(packfile);
    free(instr);
    if (!t)
        return NULL;
    const char *desc = tstr(t, "description");
    if (desc) {
        d = xstrdup(desc);
    } else if (it->kind == LIB_SERVER) {
        const char *ty = tstr(t, "type"), *u = tstr(t, "url"), *c = tstr(t, "command");
        if (ty && strcmp(ty, "http") == 0 && u)
            d = xasprintf("http: %s", u);
        else if (c)
            d = xasprintf("stdio: %s", c);
    }
    toml_free(t);
    return d;
}

static bool ci_contains(const char *hay, const char *needle)
{
    if (!hay)
        return false;
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return true;
    }
    return n == 0;
}

static bool in_list(const strvec *v, const char *name)
{
    for (size_t i = 0; i < v->n; i++) {
        const char *e = v->v[i];
        char *src = NULL, *bare = NULL;
        bool q = lib_ref_split(e, &src, &bare);
        bool hit = strcmp(q ? bare : e, name) == 0;
        free(src);
        free(bare);
        if (hit)
            return true;
    }
    return false;
}

static bool named_by_project(const struct manifest *m, enum lib_kind k, const char *name)
{
    if (!m)
        return false;
    if (k == LIB_SKILL && manifest_skill(m, name))
        return true;
    if (k == LIB_SERVER && manifest_server(m, name))
        return true;
    if (k == LIB_INSTRUCTION && manifest_instruction(m, name))
        return true;
    for (size_t i = 0; i < m->toolsets.n; i++) {
        const struct mf_toolset *t = &m->toolsets.v[i];
        if ((k == LIB_SKILL && in_list(&t->skills, name)) ||
            (k == LIB_SERVER && in_list(&t->servers, name)) ||
            (k == LIB_PACKAGE && in_list(&t->packages, name)))
            return true;
    }
    return false;
}

static const char *badge(enum lib_kind k)
{
    return k == LIB_PACKAGE ? "pack" : lib_kind_name(k);
}

static int badge_rank(const char *b)
{
    static const char *order[] = {"pack", "skill", "server", "instruction", "extension", "hook"};
    for (int i = 0; i < 6; i++)
        if (strcmp(b, order[i]) == 0)
            return i;
    return 6;
}

static int hit_cmp(const void *a, const void *b)
{
    const struct lib_hit *x = a, *y = b;
    int r = badge_rank(x->badge) - badge_rank(y->badge);
    if (r)
        return r;
    r = strcmp(x->name, y->name);
    if (r)
        return r;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void lib_search(const struct library *lib, const struct manifest *m, const char *query, bool all,
                lib_hits *out)
{
    const char *q = query ? query : "";
    for (size_t si = 0; lib && si < lib->sources.n; si++) {
        const struct lib_source *s = &lib->sources.v[si];
        for (size_t j = 0; j < s->items.n; j++) {
            const struct lib_item *it = &s->items.v[j];
            const struct lib_item *win = NULL;
            struct as_err e = AS_ERR_INIT;
            bool shadowed = lib_resolve(lib, it->kind, it->name, &win, &e) == 1 && win != it;
            if (shadowed && !all)
                continue;
            char *raw = describe(it);
            char *desc = one_line(raw);
            free(raw);
            if (!ci_contains(it->name, q) && !ci_contains(desc, q)) {
                free(desc);
                continue;
            }
            struct lib_hit h = {.badge = badge(it->kind),
                                .name = xstrdup(it->name),
                                .description = desc,
                                .source = xstrdup(s->name),
                                .shadowed = shadowed,
                                .in_manifest =
                                    !shadowed && named_by_project(m, it->kind, it->name)};
            vec_push(out, h);
        }
    }
    const toml_value *packs = m ? toml_get(m->root, "packs") : NULL;
    for (size_t i = 0; packs && packs->type == TOML_TABLE && i < toml_len(packs); i++) {
        const toml_kv *kv = toml_entry(packs, i);
        if (kv->val->type != TOML_TABLE)
            continue;
        char *desc = one_line(tstr(kv->val, "description"));
        if (!ci_contains(kv->key, q) && !ci_contains(desc, q)) {
            free(desc);
            continue;
        }
        const char *src = tstr(kv->val, "source"), *ver = tstr(kv->val, "version");
        char *s1 = one_line(src ? src : ver ? ver : "project");
        struct lib_hit h = {.badge = "pack",
                            .name = one_line(kv->key),
                            .description = desc,
                            .source = s1 ? s1 : xstrdup("project"),
                            .in_manifest = true,
                            .installed_pack = true};
        if (!h.name)
            h.name = xstrdup("?");
        vec_push(out, h);
    }
    for (size_t i = 0; i < out->n; i++)
        out->v[i].seq = i;
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, hit_cmp);
}
