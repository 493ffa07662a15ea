/*
 * Decoding the merged TOML tree into struct manifest, strictly: every table
 * lists the keys it accepts, and anything else is an error with a
 * did-you-mean and the position (and file) it was written at.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/xalloc.h"
#include "bundle/manifest_int.h"

struct dec {
    struct manifest *m;
    const struct mf_origin *o;
    struct as_err *err;
};

/* A table being decoded: its value, the file it came from, its dotted name
 * ("" for the root). */
struct tctx {
    const toml_value *tab;
    const char *file;
    const char *name;
};

static __attribute__((format(printf, 7, 8))) int fail(struct dec *d, const char *file,
                                                      unsigned line, unsigned col, const char *fix,
                                                      int recheck, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    as_err_at(d->err, file, line, col, "%s", msg);
    as_err_hint(d->err, "%s%s", fix ? fix : "correct the value", recheck ? MF_RECHECK : "");
    return -1;
}

/* " in [name]" or "" for the root (callers then say "at `key`"). */
static void where(const struct tctx *t, char *buf, size_t n)
{
    if (t->name[0])
        snprintf(buf, n, " in [%s]", t->name);
    else
        buf[0] = '\0';
}

static const char *kv_file(struct dec *d, const struct tctx *t, const toml_kv *kv)
{
    return mf_origin_file(d->o, kv->val, t->file);
}

static struct mf_pos pos_of_kv(struct dec *d, const struct tctx *t, const toml_kv *kv)
{
    struct mf_pos p = {kv_file(d, t, kv), kv->line, kv->col};
    return p;
}

/* Where key was written in t, else where t was. */
static struct mf_pos key_pos(struct dec *d, const struct tctx *t, const char *key)
{
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (kv)
        return pos_of_kv(d, t, kv);
    struct mf_pos p = {t->file, t->tab->line, t->tab->col};
    return p;
}

static bool in_list(const char *k, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(k, list[i]) == 0)
            return true;
    return false;
}

static int keys_allowed(struct dec *d, const struct tctx *t, const char *const *allowed)
{
    for (size_t i = 0; i < toml_len(t->tab); i++) {
        const toml_kv *kv = toml_entry(t->tab, i);
        if (in_list(kv->key, allowed))
            continue;
        char w[600], fix[1024];
        where(t, w, sizeof w);
        const char *near = mf_did_you_mean(kv->key, allowed);
        if (near) {
            snprintf(fix, sizeof fix, "rename `%s` to `%s`", kv->key, near);
        } else {
            strbuf sb = SB_INIT;
            for (size_t j = 0; allowed[j]; j++)
                sb_addf(&sb, "%s%s", j ? ", " : "", allowed[j]);
            snprintf(fix, sizeof fix, "remove `%s`; %s%s%s accepts: %s", kv->key,
                     t->name[0] ? "[" : "", t->name[0] ? t->name : "the top level",
                     t->name[0] ? "]" : "", sb.buf);
            sb_release(&sb);
        }
        if (near)
            return fail(d, kv_file(d, t, kv), kv->line, kv->col, fix, 1,
                        "unknown key `%s`%s (did you mean `%s`?)", kv->key, w, near);
        return fail(d, kv_file(d, t, kv), kv->line, kv->col, fix, 1, "unknown key `%s`%s", kv->key,
                    w);
    }
    return 0;
}

static int type_error(struct dec *d, const struct tctx *t, const toml_kv *kv, const char *want)
{
    char w[600], fix[800];
    where(t, w, sizeof w);
    snprintf(fix, sizeof fix, "make `%s` %s", kv->key, want);
    return fail(d, kv_file(d, t, kv), kv->line, kv->col, fix, 1, "`%s` must be %s (found %s)%s",
                kv->key, want, toml_type_name(kv->val->type), w);
}

static int missing(struct dec *d, const struct tctx *t, const char *key, const char *fix)
{
    char w[600], f[1024];
    where(t, w, sizeof w);
    if (!fix) {
        snprintf(f, sizeof f, "add the required key `%s`%s", key, w);
        fix = f;
    }
    return fail(d, t->file, t->tab->line, t->tab->col, fix, 1, "missing required key `%s`%s", key,
                w);
}

static int opt_str(struct dec *d, const struct tctx *t, const char *key, char **out,
                   struct mf_pos *pos)
{
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (!kv)
        return 0;
    if (kv->val->type != TOML_STRING)
        return type_error(d, t, kv, "a string");
    free(*out);
    *out = xstrdup(kv->val->u.str.s);
    if (pos)
        *pos = pos_of_kv(d, t, kv);
    return 0;
}

static int opt_nonempty_str(struct dec *d, const struct tctx *t, const char *key, char **out)
{
    if (opt_str(d, t, key, out, NULL) < 0)
        return -1;
    if (*out && !**out) {
        const toml_kv *kv = toml_get_kv(t->tab, key);
        char w[600];
        where(t, w, sizeof w);
        return fail(d, kv_file(d, t, kv), kv->line, kv->col, NULL, 1, "`%s` must not be empty%s",
                    key, w);
    }
    return 0;
}

static int opt_strs(struct dec *d, const struct tctx *t, const char *key, strvec *out, bool *set)
{
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (!kv)
        return 0;
    if (kv->val->type != TOML_ARRAY)
        return type_error(d, t, kv, "an array of strings");
    strvec_clear(out);
    for (size_t i = 0; i < toml_len(kv->val); i++) {
        const toml_value *it = toml_at(kv->val, i);
        if (it->type != TOML_STRING) {
            char w[600];
            where(t, w, sizeof w);
            return fail(d, mf_origin_file(d->o, kv->val, t->file), it->line, it->col, NULL, 1,
                        "`%s` must be an array of strings (item %zu is %s)%s", key, i + 1,
                        toml_type_name(it->type), w);
        }
        strvec_push(out, it->u.str.s);
    }
    if (set)
        *set = true;
    return 0;
}

static int opt_bool(struct dec *d, const struct tctx *t, const char *key, bool *out, bool *set)
{
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (!kv)
        return 0;
    if (kv->val->type != TOML_BOOL)
        return type_error(d, t, kv, "true or false");
    *out = kv->val->u.b;
    if (set)
        *set = true;
    return 0;
}

/* Integers ≥ min. */
static int opt_int(struct dec *d, const struct tctx *t, const char *key, int64_t min, int64_t *out,
                   bool *set)
{
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (!kv)
        return 0;
    if (kv->val->type != TOML_INTEGER)
        return type_error(d, t, kv, "an integer");
    if (kv->val->u.i < min) {
        char w[600];
        where(t, w, sizeof w);
        return fail(d, kv_file(d, t, kv), kv->line, kv->col, NULL, 1,
                    "`%s` must be at least %lld (found %lld)%s", key, (long long)min,
                    (long long)kv->val->u.i, w);
    }
    *out = kv->val->u.i;
    if (set)
        *set = true;
    return 0;
}

/* A string → string table (headers, env). */
static int opt_strmap(struct dec *d, const struct tctx *t, const char *key, mf_strmap *out)
{
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (!kv)
        return 0;
    if (kv->val->type != TOML_TABLE)
        return type_error(d, t, kv, "a table of strings");
    char *name = mf_table_name(t->name, key);
    struct tctx sub = {kv->val, kv_file(d, t, kv), name};
    int rc = 0;
    for (size_t i = 0; i < toml_len(kv->val) && rc == 0; i++) {
        const toml_kv *e = toml_entry(kv->val, i);
        if (e->val->type != TOML_STRING) {
            rc = type_error(d, &sub, e, "a string");
            break;
        }
        struct mf_str_entry se = {xstrdup(e->key), xstrdup(e->val->u.str.s), pos_of_kv(d, &sub, e)};
        vec_push(out, se);
    }
    free(name);
    return rc;
}

/* Enters kv as a table (error if it is not one). sub->name is malloc'd. */
static int enter(struct dec *d, const struct tctx *t, const toml_kv *kv, struct tctx *sub,
                 const char *what)
{
    sub->name = NULL;
    if (kv->val->type != TOML_TABLE) {
        char *nm = mf_table_name(t->name, kv->key);
        int rc = fail(d, kv_file(d, t, kv), kv->line, kv->col, NULL, 1,
                      "[%s] must be %s (found %s)", nm, what, toml_type_name(kv->val->type));
        free(nm);
        return rc;
    }
    sub->tab = kv->val;
    sub->file = kv_file(d, t, kv);
    sub->name = mf_table_name(t->name, kv->key);
    return 0;
}

/* Checks that an optional key holds a table and enters it; *found = false if absent. */
static int enter_opt(struct dec *d, const struct tctx *t, const char *key, struct tctx *sub,
                     bool *found)
{
    *found = false;
    sub->name = NULL;
    const toml_kv *kv = toml_get_kv(t->tab, key);
    if (!kv)
        return 0;
    if (enter(d, t, kv, sub, "a table") < 0)
        return -1;
    *found = true;
    return 0;
}

/* ---- per-table decoders -------------------------------------------------- */

static const char *const server_keys[] = {
    "type",    "url",   "command", "args", "cwd",   "integrity_roots",
    "targets", "owner", "headers", "env",  "extra", NULL};

static int dec_server(struct dec *d, const struct tctx *t, struct mf_server *s)
{
    if (keys_allowed(d, t, server_keys) < 0)
        return -1;
    char *type = NULL;
    struct mf_pos tpos;
    if (opt_str(d, t, "type", &type, &tpos) < 0)
        return -1;
    if (!type) {
        char fix[1024];
        snprintf(fix, sizeof fix,
                 "add `type = \"stdio\"` (a local command: also set `command`) or "
                 "`type = \"http\"` (a remote server: also set `url`) to [%s]",
                 t->name);
        return missing(d, t, "type", fix);
    }
    if (strcmp(type, "stdio") == 0) {
        s->type = MF_SERVER_STDIO;
    } else if (strcmp(type, "http") == 0) {
        s->type = MF_SERVER_HTTP;
    } else {
        char w[600];
        where(t, w, sizeof w);
        int rc =
            fail(d, tpos.file, tpos.line, tpos.col, "set `type = \"stdio\"` or `type = \"http\"`",
                 1, "`type` must be \"stdio\" or \"http\" (found \"%s\")%s", type, w);
        free(type);
        return rc;
    }
    free(type);
    if (opt_str(d, t, "url", &s->url, NULL) < 0 ||
        opt_str(d, t, "command", &s->command, NULL) < 0 ||
        opt_strs(d, t, "args", &s->args, NULL) < 0 || opt_str(d, t, "cwd", &s->cwd, NULL) < 0 ||
        opt_strs(d, t, "integrity_roots", &s->integrity_roots, NULL) < 0 ||
        opt_strs(d, t, "targets", &s->targets, &s->targets_set) < 0 ||
        opt_nonempty_str(d, t, "owner", &s->owner) < 0 ||
        opt_strmap(d, t, "headers", &s->headers) < 0 || opt_strmap(d, t, "env", &s->env) < 0)
        return -1;
    if (!s->targets_set)
        strvec_push(&s->targets, "*");
    struct tctx ex;
    bool found;
    if (enter_opt(d, t, "extra", &ex, &found) < 0)
        return -1;
    if (found) {
        int rc = 0;
        for (size_t i = 0; i < toml_len(ex.tab) && rc == 0; i++) {
            struct tctx one;
            rc = enter(d, &ex, toml_entry(ex.tab, i), &one, "a table of native keys");
            free((char *)one.name);
        }
        free((char *)ex.name);
        if (rc < 0)
            return -1;
        s->extra = ex.tab;
    }
    s->table = t->tab;
    return 0;
}

static const char *const skill_keys[] = {"path", "git", "rev", "subpath", NULL};

static int dec_skill(struct dec *d, const struct tctx *t, struct mf_skill *s)
{
    if (keys_allowed(d, t, skill_keys) < 0 || opt_nonempty_str(d, t, "path", &s->path) < 0 ||
        opt_nonempty_str(d, t, "git", &s->git) < 0 || opt_nonempty_str(d, t, "rev", &s->rev) < 0 ||
        opt_nonempty_str(d, t, "subpath", &s->subpath) < 0)
        return -1;
    if (!s->path && !s->git) {
        char fix[1024];
        snprintf(fix, sizeof fix,
                 "set `path = \"./skills/%s\"` or `git = \"…\"` in [%s] — or, to use the "
                 "library's skill of that name, drop the empty block and list it in a toolset",
                 s->name, t->name);
        return fail(d, t->file, t->tab->line, t->tab->col, fix, 1,
                    "[%s] has neither `path` nor `git`", t->name);
    }
    s->source = s->git ? MF_SOURCE_GIT : MF_SOURCE_PATH;
    s->path_pos = key_pos(d, t, "path");
    return 0;
}

static const char *const variant_keys[] = {"cli", "model", "path", NULL};
static const char *const instruction_keys[] = {"path", "targets", "variant", NULL};

static int dec_instruction(struct dec *d, const struct tctx *t, struct mf_instruction *in)
{
    if (keys_allowed(d, t, instruction_keys) < 0 || opt_nonempty_str(d, t, "path", &in->path) < 0 ||
        opt_strs(d, t, "targets", &in->targets, &in->targets_set) < 0)
        return -1;
    if (!in->targets_set)
        strvec_push(&in->targets, "*");
    in->path_pos = key_pos(d, t, "path");
    in->anchor_dir = xstrdup(d->m->manifest_dir);
    const toml_kv *kv = toml_get_kv(t->tab, "variant");
    if (!kv)
        return 0;
    if (kv->val->type != TOML_ARRAY)
        return type_error(d, t, kv, "an array of tables ([[…variant]])");
    const char *vfile = kv_file(d, t, kv);
    for (size_t i = 0; i < toml_len(kv->val); i++) {
        const toml_value *it = toml_at(kv->val, i);
        char *nm = mf_table_name(t->name, "variant");
        if (it->type != TOML_TABLE) {
            int rc = fail(d, vfile, it->line, it->col, NULL, 1,
                          "[[%s]] entries must be tables (item %zu is %s)", nm, i + 1,
                          toml_type_name(it->type));
            free(nm);
            return rc;
        }
        char *full = xasprintf("[%s]", nm); /* shown as [[…]] */
        struct tctx vt = {it, vfile, full};
        struct mf_variant v = {0};
        v.pos.file = vfile;
        v.pos.line = it->line;
        v.pos.col = it->col;
        int rc = keys_allowed(d, &vt, variant_keys);
        if (rc == 0)
            rc = opt_nonempty_str(d, &vt, "cli", &v.cli);
        if (rc == 0)
            rc = opt_nonempty_str(d, &vt, "model", &v.model);
        if (rc == 0)
            rc = opt_nonempty_str(d, &vt, "path", &v.path);
        if (rc == 0 && !v.path)
            rc = missing(d, &vt, "path", NULL);
        if (rc == 0)
            v.path_pos = key_pos(d, &vt, "path");
        free(full);
        free(nm);
        if (rc < 0) {
            free(v.cli);
            free(v.model);
            free(v.path);
            return -1;
        }
        vec_push(&in->variants, v);
    }
    return 0;
}

static const char *const toolset_keys[] = {"servers", "skills", "packages", "harness",
                                           "model",   "effort", NULL};

static int dec_toolset(struct dec *d, const struct tctx *t, struct mf_toolset *ts)
{
    if (keys_allowed(d, t, toolset_keys) < 0 || opt_strs(d, t, "servers", &ts->servers, NULL) < 0 ||
        opt_strs(d, t, "skills", &ts->skills, NULL) < 0 ||
        opt_strs(d, t, "packages", &ts->packages, NULL) < 0 ||
        opt_nonempty_str(d, t, "harness", &ts->harness) < 0 ||
        opt_nonempty_str(d, t, "model", &ts->model) < 0 ||
        opt_nonempty_str(d, t, "effort", &ts->effort) < 0)
        return -1;
    return 0;
}

static const char *const hook_keys[] = {"event",   "command", "matcher", "args",
                                        "timeout", "targets", NULL};

static int dec_hook(struct dec *d, const struct tctx *t, struct mf_hook *h)
{
    if (keys_allowed(d, t, hook_keys) < 0 || opt_nonempty_str(d, t, "event", &h->event) < 0 ||
        opt_nonempty_str(d, t, "command", &h->command) < 0 ||
        opt_str(d, t, "matcher", &h->matcher, NULL) < 0 ||
        opt_strs(d, t, "args", &h->args, NULL) < 0 ||
        opt_int(d, t, "timeout", 1, &h->timeout, &h->has_timeout) < 0 ||
        opt_strs(d, t, "targets", &h->targets, &h->targets_set) < 0)
        return -1;
    if (!h->event || !h->command) {
        char fix[1024];
        snprintf(fix, sizeof fix,
                 "[%s] needs both `event = \"…\"` (e.g. \"PreToolUse\") and "
                 "`command = \"…\"`",
                 t->name);
        return missing(d, t, !h->event ? "event" : "command", fix);
    }
    if (!h->targets_set)
        strvec_push(&h->targets, "*");
    return 0;
}

static const char *const extension_keys[] = {"target",  "path",        "git", "rev",
                                             "subpath", "description", NULL};

static int dec_extension(struct dec *d, const struct tctx *t, struct mf_extension *e)
{
    if (keys_allowed(d, t, extension_keys) < 0 ||
        opt_nonempty_str(d, t, "target", &e->target) < 0 ||
        opt_nonempty_str(d, t, "path", &e->path) < 0 ||
        opt_nonempty_str(d, t, "git", &e->git) < 0 || opt_nonempty_str(d, t, "rev", &e->rev) < 0 ||
        opt_nonempty_str(d, t, "subpath", &e->subpath) < 0 ||
        opt_str(d, t, "description", &e->description, NULL) < 0)
        return -1;
    if (!e->target)
        return missing(d, t, "target", NULL);
    e->source = e->git ? MF_SOURCE_GIT : e->path ? MF_SOURCE_PATH : MF_SOURCE_LIBRARY;
    return 0;
}

static const char *const workflow_keys[] = {
    "path",       "git",         "rev",        "subpath",
    "blueprint",  "roles",       "max_agents", "max_wall_seconds",
    "scheduling", "description", NULL};

static int dec_workflow(struct dec *d, const struct tctx *t, struct mf_workflow *w)
{
    if (keys_allowed(d, t, workflow_keys) < 0 || opt_nonempty_str(d, t, "path", &w->path) < 0 ||
        opt_nonempty_str(d, t, "git", &w->git) < 0 || opt_nonempty_str(d, t, "rev", &w->rev) < 0 ||
        opt_nonempty_str(d, t, "subpath", &w->subpath) < 0 ||
        opt_nonempty_str(d, t, "blueprint", &w->blueprint) < 0 ||
        opt_str(d, t, "description", &w->description, NULL) < 0 ||
        opt_strs(d, t, "roles", &w->roles, NULL) < 0 ||
        opt_int(d, t, "max_agents", 1, &w->max_agents, &w->has_max_agents) < 0 ||
        opt_int(d, t, "max_wall_seconds", 1, &w->max_wall_seconds, &w->has_max_wall_seconds) < 0)
        return -1;
    w->source = w->git ? MF_SOURCE_GIT : w->path ? MF_SOURCE_PATH : MF_SOURCE_LIBRARY;
    struct tctx sc;
    bool found;
    if (enter_opt(d, t, "scheduling", &sc, &found) < 0)
        return -1;
    if (found) {
        int rc = 0;
        for (size_t i = 0; i < toml_len(sc.tab) && rc == 0; i++) {
            struct tctx one;
            rc = enter(d, &sc, toml_entry(sc.tab, i), &one, "a table");
            free((char *)one.name);
        }
        free((char *)sc.name);
        if (rc < 0)
            return -1;
        w->scheduling = sc.tab;
    }
    return 0;
}

/* ---- policy, packs, machine-only tables (kept raw, shape-checked) ------- */

/* A table of name → array of strings ([policy.tools] and friends). */
static int check_list_table(struct dec *d, const struct tctx *t)
{
    for (size_t i = 0; i < toml_len(t->tab); i++) {
        const toml_kv *kv = toml_entry(t->tab, i);
        strvec tmp = STRVEC_INIT;
        int rc = opt_strs(d, t, kv->key, &tmp, NULL);
        strvec_clear(&tmp);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static const char *const policy_keys[] = {"require",   "forbid",  "allowed_sources", "tools",
                                          "egress",    "secrets", "filesystem",      "workflows",
                                          "isolation", NULL};
static const char *const policy_iso_keys[] = {"servers", NULL};
static const char *const policy_fs_keys[] = {"read", "write", "deny", NULL};
static const char *const policy_wf_keys[] = {"max_agents", "max_wall_seconds", "max_concurrent",
                                             "max_resident_result_bytes", NULL};

static int dec_policy(struct dec *d, const struct tctx *t)
{
    if (keys_allowed(d, t, policy_keys) < 0)
        return -1;
    static const char *const lists[] = {"require", "forbid", "allowed_sources"};
    for (size_t i = 0; i < 3; i++) {
        strvec tmp = STRVEC_INIT;
        int rc = opt_strs(d, t, lists[i], &tmp, NULL);
        strvec_clear(&tmp);
        if (rc < 0)
            return -1;
    }
    static const char *const keyed[] = {"tools", "egress", "secrets"};
    for (size_t i = 0; i < 3; i++) {
        struct tctx sub;
        bool found;
        if (enter_opt(d, t, keyed[i], &sub, &found) < 0)
            return -1;
        int rc = found ? check_list_table(d, &sub) : 0;
        free((char *)sub.name);
        if (rc < 0)
            return -1;
    }
    struct tctx sub;
    bool found;
    if (enter_opt(d, t, "filesystem", &sub, &found) < 0)
        return -1;
    if (found) {
        int rc = keys_allowed(d, &sub, policy_fs_keys);
        if (rc == 0)
            rc = check_list_table(d, &sub);
        free((char *)sub.name);
        if (rc < 0)
            return -1;
    }
    if (enter_opt(d, t, "workflows", &sub, &found) < 0)
        return -1;
    if (found) {
        int rc = keys_allowed(d, &sub, policy_wf_keys);
        for (size_t i = 0; rc == 0 && policy_wf_keys[i]; i++) {
            int64_t v;
            rc = opt_int(d, &sub, policy_wf_keys[i], 1, &v, NULL);
        }
        free((char *)sub.name);
        if (rc < 0)
            return -1;
    }
    if (enter_opt(d, t, "isolation", &sub, &found) < 0)
        return -1;
    if (found) {
        char *v = NULL;
        struct mf_pos pos = {0};
        int rc = keys_allowed(d, &sub, policy_iso_keys);
        if (rc == 0)
            rc = opt_str(d, &sub, "servers", &v, &pos);
        if (rc == 0 && v && strcmp(v, "confined") != 0 && strcmp(v, "host") != 0)
            rc = fail(d, pos.file, pos.line, pos.col, NULL, 1,
                      "[policy.isolation] servers must be \"confined\" or \"host\"");
        free(v);
        free((char *)sub.name);
        if (rc < 0)
            return -1;
    }
    d->m->policy = t->tab;
    return 0;
}

static const char *const pack_keys[] = {"version",      "description", "source", "rev",
                                        "targets",      "servers",     "skills", "hooks",
                                        "instructions", NULL};
static const char *const override_keys[] = {"remove", "replace", NULL};

static int dec_pack(struct dec *d, const struct tctx *t)
{
    if (keys_allowed(d, t, pack_keys) < 0)
        return -1;
    static const char *const strs[] = {"version", "description", "source", "rev"};
    for (size_t i = 0; i < 4; i++) {
        char *tmp = NULL;
        int rc = opt_str(d, t, strs[i], &tmp, NULL);
        free(tmp);
        if (rc < 0)
            return -1;
    }
    static const char *const lists[] = {"targets", "servers", "skills", "hooks", "instructions"};
    for (size_t i = 0; i < 5; i++) {
        strvec tmp = STRVEC_INIT;
        int rc = opt_strs(d, t, lists[i], &tmp, NULL);
        strvec_clear(&tmp);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int dec_override(struct dec *d, const struct tctx *t)
{
    if (keys_allowed(d, t, override_keys) < 0)
        return -1;
    strvec tmp = STRVEC_INIT;
    int rc = opt_strs(d, t, "remove", &tmp, NULL);
    strvec_clear(&tmp);
    if (rc < 0)
        return -1;
    struct tctx sub;
    bool found;
    if (enter_opt(d, t, "replace", &sub, &found) < 0)
        return -1;
    free((char *)sub.name);
    return 0;
}

static const char *const meta_keys[] = {"name", "gitignore", NULL};
static const char *const delivery_keys[] = {"render_locally", "harness", NULL};
static const char *const delivery_harness_keys[] = {"render_locally", NULL};
static const char *const targets_keys[] = {"default", NULL};
static const char *const gateway_keys[] = {"env_passthrough", "max_result_bytes", NULL};
static const char *const guard_keys[] = {"enabled",       "allow_roots", "deny",
                                         "project_roots", "allow",       NULL};
static const char *const experimental_keys[] = {"tools_execute", "tools_execute_runtime",
                                                "allowTools", "tools_execute_limits", NULL};
static const char *const limits_keys[] = {"timeout_ms", "max_calls", "max_output_bytes",
                                          "allowTools", NULL};

static int dec_delivery(struct dec *d, const struct tctx *t)
{
    if (keys_allowed(d, t, delivery_keys) < 0 ||
        opt_bool(d, t, "render_locally", &d->m->delivery_render_locally, NULL) < 0)
        return -1;
    struct tctx h;
    bool found;
    if (enter_opt(d, t, "harness", &h, &found) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; found && i < toml_len(h.tab) && rc == 0; i++) {
        const toml_kv *kv = toml_entry(h.tab, i);
        struct tctx one;
        rc = enter(d, &h, kv, &one, "a table");
        if (rc == 0) {
            struct mf_delivery_harness dh = {0};
            dh.adapter = xstrdup(kv->key);
            dh.pos = pos_of_kv(d, &h, kv);
            rc = keys_allowed(d, &one, delivery_harness_keys);
            if (rc == 0)
                rc =
                    opt_bool(d, &one, "render_locally", &dh.render_locally, &dh.has_render_locally);
            vec_push(&d->m->delivery_harness, dh);
        }
        free((char *)one.name);
    }
    free((char *)h.name);
    return rc;
}

static int dec_gateway(struct dec *d, const struct tctx *t)
{
    if (keys_allowed(d, t, gateway_keys) < 0 ||
        opt_strs(d, t, "env_passthrough", &d->m->gateway.env_passthrough, NULL) < 0 ||
        opt_int(d, t, "max_result_bytes", 1, &d->m->gateway.max_result_bytes, NULL) < 0)
        return -1;
    return 0;
}

static int dec_guard(struct dec *d, const struct tctx *t)
{
    struct mf_guard *g = &d->m->guard;
    if (keys_allowed(d, t, guard_keys) < 0 || opt_bool(d, t, "enabled", &g->enabled, NULL) < 0 ||
        opt_strs(d, t, "allow_roots", &g->allow_roots, NULL) < 0 ||
        opt_strs(d, t, "deny", &g->deny, &g->has_deny) < 0 ||
        opt_strs(d, t, "allow", &g->allow, NULL) < 0)
        return -1;
    struct tctx pr;
    bool found;
    if (enter_opt(d, t, "project_roots", &pr, &found) < 0)
        return -1;
    int rc = found ? check_list_table(d, &pr) : 0;
    free((char *)pr.name);
    if (rc < 0)
        return -1;
    if (found)
        g->project_roots = pr.tab;
    g->present = true;
    return 0;
}

/* [experimental] is where features not yet settled live: a key this build
 * does not know is a warning (with the nearest known key), never a refusal,
 * so a machine manifest written for a newer build still loads. Enablement
 * stays off unless `tools_execute = true` itself is read (docs/tools-execute.md). */
static void warn_unknown_keys(struct dec *d, const struct tctx *t, const char *const *allowed)
{
    for (size_t i = 0; i < toml_len(t->tab); i++) {
        const toml_kv *kv = toml_entry(t->tab, i);
        if (in_list(kv->key, allowed))
            continue;
        const char *near = mf_did_you_mean(kv->key, allowed);
        char fix[512];
        if (near)
            snprintf(fix, sizeof fix, "rename `%s` to `%s`", kv->key, near);
        else
            snprintf(fix, sizeof fix, "remove `%s`", kv->key);
        mf_diag_add(&d->m->warnings, MF_WARNING, pos_of_kv(d, t, kv), fix,
                    "unknown key `%s` in [%s] is ignored%s%s%s", kv->key, t->name,
                    near ? " (did you mean `" : "", near ? near : "", near ? "`?)" : "");
    }
}

static int dec_execute_limits(struct dec *d, const struct tctx *lim)
{
    struct mf_experimental *x = &d->m->experimental;
    warn_unknown_keys(d, lim, limits_keys);
    if (opt_int(d, lim, "timeout_ms", 1, &x->timeout_ms, NULL) < 0 ||
        opt_int(d, lim, "max_calls", 1, &x->max_calls, NULL) < 0 ||
        opt_int(d, lim, "max_output_bytes", 1, &x->max_output_bytes, NULL) < 0)
        return -1;
    if (!toml_get(lim->tab, "allowTools"))
        return 0;
    if (x->has_allow_tools) {
        const toml_kv *kv = toml_get_kv(lim->tab, "allowTools");
        return fail(d, kv_file(d, lim, kv), kv->line, kv->col, "keep one `allowTools` list", 1,
                    "`allowTools` is set both in [experimental] and in [%s]", lim->name);
    }
    return opt_strs(d, lim, "allowTools", &x->allow_tools, &x->has_allow_tools);
}

static int dec_experimental(struct dec *d, const struct tctx *t)
{
    struct mf_experimental *x = &d->m->experimental;
    warn_unknown_keys(d, t, experimental_keys);
    if (opt_bool(d, t, "tools_execute", &x->tools_execute, NULL) < 0 ||
        opt_str(d, t, "tools_execute_runtime", &x->runtime, NULL) < 0 ||
        opt_strs(d, t, "allowTools", &x->allow_tools, &x->has_allow_tools) < 0)
        return -1;
    struct tctx lim;
    bool found;
    if (enter_opt(d, t, "tools_execute_limits", &lim, &found) < 0)
        return -1;
    /* Published examples write allowTools after [experimental.tools_execute_limits],
     * which places it in that table: accept it there too. */
    int rc = found ? dec_execute_limits(d, &lim) : 0;
    free((char *)lim.name);
    if (rc < 0)
        return -1;
    x->present = true;
    return 0;
}

/* ---- named maps ----------------------------------------------------------- */

/* Iterates the entries of a named-entry table ([servers.<n>] …), each a table. */
#define FOR_ENTRIES(d, parent, key, what, BODY)                                                    \
    do {                                                                                           \
        struct tctx map_;                                                                          \
        bool found_;                                                                               \
        if (enter_opt((d), (parent), (key), &map_, &found_) < 0)                                   \
            return -1;                                                                             \
        int rc_ = 0;                                                                               \
        for (size_t i_ = 0; found_ && i_ < toml_len(map_.tab) && rc_ == 0; i_++) {                 \
            const toml_kv *ekv = toml_entry(map_.tab, i_);                                         \
            struct tctx et = {0};                                                                  \
            rc_ = enter((d), &map_, ekv, &et, (what));                                             \
            if (rc_ == 0) {                                                                        \
                struct mf_pos epos = {et.file, et.tab->line, et.tab->col};                         \
                (void)epos;                                                                        \
                BODY                                                                               \
            }                                                                                      \
            free((char *)et.name);                                                                 \
        }                                                                                          \
        free((char *)map_.name);                                                                   \
        if (rc_ < 0)                                                                               \
            return -1;                                                                             \
    } while (0)

const char *const manifest_root_keys[] = {
    "version",  "servers",         "skills",    "instructions", "toolsets",
    "profiles", "default_toolset", "settings",  "hooks",        "targets",
    "policy",   "extensions",      "workflows", "packs",        "package_overrides",
    "meta",     "delivery",        "gateway",   "guard",        "experimental",
    NULL};

static bool machine_only(const char *k)
{
    return !strcmp(k, "gateway") || !strcmp(k, "guard") || !strcmp(k, "experimental");
}

static int dec_version(struct dec *d, const struct tctx *root)
{
    struct manifest *m = d->m;
    const toml_kv *kv = toml_get_kv(root->tab, "version");
    if (!kv) {
        char fix[1200];
        snprintf(fix, sizeof fix, "add `version = 1` as the first line of %s", m->path);
        return fail(d, m->path, 0, 0, fix, 1, "missing required key `version`");
    }
    const char *f = kv_file(d, root, kv);
    if (kv->val->type != TOML_INTEGER)
        return fail(d, f, kv->line, kv->col, "write `version = 1`", 1,
                    "`version` must be an integer (found %s)", toml_type_name(kv->val->type));
    int64_t v = kv->val->u.i;
    if (v > MANIFEST_VERSION)
        return fail(d, f, kv->line, kv->col, "install a newer agentstack, then re-run this command",
                    0,
                    "manifest version %lld is newer than this agentstack build supports "
                    "(up to %d); upgrade agentstack",
                    (long long)v, MANIFEST_VERSION);
    if (v < 1)
        return fail(d, f, kv->line, kv->col, "write `version = 1`", 1,
                    "invalid manifest version %lld (this build reads version 1)", (long long)v);
    m->version = v;
    return 0;
}

int mf_decode(struct manifest *m, toml_value *root, const struct mf_origin *o, struct as_err *err)
{
    struct dec dd = {m, o, err}, *d = &dd;
    m->root = root;
    m->meta_gitignore = true;
    m->gateway.max_result_bytes = 1048576;
    struct tctx rt = {root, m->path, ""};

    /* Version first: a newer file's unknown keys should read "upgrade". */
    if (dec_version(d, &rt) < 0)
        return -1;
    if (keys_allowed(d, &rt, manifest_root_keys) < 0)
        return -1;
    if (toml_get(root, "toolsets") && toml_get(root, "profiles")) {
        const toml_kv *kv = toml_get_kv(root, "profiles");
        return fail(d, kv_file(d, &rt, kv), kv->line, kv->col,
                    "move every [profiles.<n>] table to [toolsets.<n>] (they are the same "
                    "table; writers emit toolsets)",
                    1, "both [toolsets] and [profiles] are declared");
    }

    FOR_ENTRIES(d, &rt, "servers", "a table", {
        struct mf_server s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->servers, s);
        rc_ = dec_server(d, &et, &m->servers.v[m->servers.n - 1]);
    });
    FOR_ENTRIES(d, &rt, "skills", "a table", {
        struct mf_skill s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->skills, s);
        rc_ = dec_skill(d, &et, &m->skills.v[m->skills.n - 1]);
    });
    FOR_ENTRIES(d, &rt, "instructions", "a table", {
        struct mf_instruction s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->instructions, s);
        rc_ = dec_instruction(d, &et, &m->instructions.v[m->instructions.n - 1]);
    });
    const char *tskey = toml_get(root, "profiles") ? "profiles" : "toolsets";
    m->toolsets_legacy = strcmp(tskey, "profiles") == 0;
    FOR_ENTRIES(d, &rt, tskey, "a table", {
        struct mf_toolset s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->toolsets, s);
        rc_ = dec_toolset(d, &et, &m->toolsets.v[m->toolsets.n - 1]);
    });
    if (opt_nonempty_str(d, &rt, "default_toolset", &m->default_toolset) < 0)
        return -1;
    if (m->default_toolset) {
        const toml_kv *kv = toml_get_kv(root, "default_toolset");
        m->default_toolset_pos = pos_of_kv(d, &rt, kv);
    }
    FOR_ENTRIES(d, &rt, "settings", "a table of settings", {
        struct mf_settings s = {0};
        s.adapter = xstrdup(ekv->key);
        s.pos = epos;
        s.table = et.tab;
        vec_push(&m->settings, s);
    });
    FOR_ENTRIES(d, &rt, "hooks", "a table", {
        struct mf_hook s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->hooks, s);
        rc_ = dec_hook(d, &et, &m->hooks.v[m->hooks.n - 1]);
    });
    {
        struct tctx tt;
        bool found;
        if (enter_opt(d, &rt, "targets", &tt, &found) < 0)
            return -1;
        int rc = 0;
        if (found) {
            rc = keys_allowed(d, &tt, targets_keys);
            if (rc == 0)
                rc = opt_strs(d, &tt, "default", &m->targets_default, &m->has_targets);
            const toml_kv *kv = rc == 0 ? toml_get_kv(tt.tab, "default") : NULL;
            if (kv)
                m->targets_default_pos = pos_of_kv(d, &tt, kv);
        }
        free((char *)tt.name);
        if (rc < 0)
            return -1;
    }
    {
        struct tctx pt;
        bool found;
        if (enter_opt(d, &rt, "policy", &pt, &found) < 0)
            return -1;
        int rc = found ? dec_policy(d, &pt) : 0;
        free((char *)pt.name);
        if (rc < 0)
            return -1;
    }
    FOR_ENTRIES(d, &rt, "extensions", "a table", {
        struct mf_extension s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->extensions, s);
        rc_ = dec_extension(d, &et, &m->extensions.v[m->extensions.n - 1]);
    });
    FOR_ENTRIES(d, &rt, "workflows", "a table", {
        struct mf_workflow s = {0};
        s.name = xstrdup(ekv->key);
        s.pos = epos;
        vec_push(&m->workflows, s);
        rc_ = dec_workflow(d, &et, &m->workflows.v[m->workflows.n - 1]);
    });
    FOR_ENTRIES(d, &rt, "packs", "a table", { rc_ = dec_pack(d, &et); });
    m->packs = toml_get(root, "packs");
    FOR_ENTRIES(d, &rt, "package_overrides", "a table", { rc_ = dec_override(d, &et); });
    m->package_overrides = toml_get(root, "package_overrides");
    {
        struct tctx mt;
        bool found;
        if (enter_opt(d, &rt, "meta", &mt, &found) < 0)
            return -1;
        int rc = 0;
        if (found) {
            rc = keys_allowed(d, &mt, meta_keys);
            if (rc == 0)
                rc = opt_str(d, &mt, "name", &m->meta_name, NULL);
            if (rc == 0)
                rc = opt_bool(d, &mt, "gitignore", &m->meta_gitignore, NULL);
        }
        free((char *)mt.name);
        if (rc < 0)
            return -1;
    }
    {
        struct tctx dt;
        bool found;
        if (enter_opt(d, &rt, "delivery", &dt, &found) < 0)
            return -1;
        int rc = found ? dec_delivery(d, &dt) : 0;
        free((char *)dt.name);
        if (rc < 0)
            return -1;
    }
    /* Machine-only tables: authority only in the machine manifest. */
    for (size_t i = 0; i < toml_len(root); i++) {
        const toml_kv *kv = toml_entry(root, i);
        if (!machine_only(kv->key))
            continue;
        if (m->kind == MANIFEST_PROJECT) {
            struct mf_pos p = pos_of_kv(d, &rt, kv);
            mf_diag_add(&m->warnings, MF_WARNING, p,
                        "move it to the machine manifest ($AGENTSTACK_HOME/agentstack.toml) "
                        "if it is meant for this machine",
                        "[%s] counts only in the machine manifest; ignored in a project%s", kv->key,
                        strcmp(kv->key, "experimental") == 0
                            ? " (a repository never enables tools_execute)"
                            : "");
            continue;
        }
        struct tctx sub;
        if (enter(d, &rt, kv, &sub, "a table") < 0)
            return -1;
        int rc = !strcmp(kv->key, "gateway") ? dec_gateway(d, &sub)
                 : !strcmp(kv->key, "guard") ? dec_guard(d, &sub)
                                             : dec_experimental(d, &sub);
        free((char *)sub.name);
        if (rc < 0)
            return -1;
    }
    return 0;
}
