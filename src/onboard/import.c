/*
 * Reading the CLIs' own configs back into manifest servers (the inverse of
 * rendering, docs/adapters.md) and their skill folders, merged and de-duplicated; see onboard.h.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/merge.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/home.h"
#include "library/library.h"
#include "onboard/onboard.h"

#define CONFIG_MAX ((size_t)64 << 20)

void onb_server_free(struct onb_server *s)
{
    free(s->name);
    free(s->url);
    free(s->command);
    free(s->cwd);
    strvec_clear(&s->args);
    strvec_clear(&s->hdr_keys);
    /* header and env values may be secrets until lifted */
    for (size_t i = 0; i < s->hdr_vals.n; i++)
        explicit_bzero(s->hdr_vals.v[i], strlen(s->hdr_vals.v[i]));
    strvec_clear(&s->hdr_vals);
    strvec_clear(&s->env_keys);
    for (size_t i = 0; i < s->env_vals.n; i++)
        explicit_bzero(s->env_vals.v[i], strlen(s->env_vals.v[i]));
    strvec_clear(&s->env_vals);
    toml_free(s->extra);
    strvec_clear(&s->origins);
    strvec_clear(&s->origin_ids);
    memset(s, 0, sizeof *s);
}

void onb_import_free(struct onb_import *im)
{
    strvec_clear(&im->detected_ids);
    strvec_clear(&im->detected_names);
    for (size_t i = 0; i < im->servers.n; i++)
        onb_server_free(&im->servers.v[i]);
    vec_free(&im->servers);
    for (size_t i = 0; i < im->skills.n; i++) {
        free(im->skills.v[i].name);
        free(im->skills.v[i].src);
        strvec_clear(&im->skills.v[i].origins);
    }
    vec_free(&im->skills);
    strvec_clear(&im->notes);
    strvec_clear(&im->conflicts);
    strvec_clear(&im->problems);
}

void onb_display_path(const char *path, strbuf *out)
{
    const char *home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    if (hl > 1 && strncmp(path, home, hl) == 0 && path[hl] == '/')
        sb_addf(out, "~%s", path + hl);
    else
        sb_adds(out, path);
}

void onb_display_rel(const char *path, strbuf *out)
{
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) {
        size_t n = strlen(cwd);
        if (strncmp(path, cwd, n) == 0 && path[n] == '/') {
            sb_adds(out, path + n + 1);
            return;
        }
    }
    onb_display_path(path, out);
}

bool onb_is_bridge(const char *name, const char *command, const strvec *args)
{
    if (name && strcmp(name, "agentstack") == 0)
        return true;
    if (!command)
        return false;
    const char *stem = strrchr(command, '/');
    stem = stem ? stem + 1 : command;
    return strcmp(stem, "agentstack") == 0 && args && args->n > 0 && strcmp(args->v[0], "mcp") == 0;
}

static bool strvec_eq(const strvec *a, const strvec *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return false;
    return true;
}

/* Maps equal as sets of key=value pairs. */
static bool map_eq(const strvec *ak, const strvec *av, const strvec *bk, const strvec *bv)
{
    if (ak->n != bk->n)
        return false;
    for (size_t i = 0; i < ak->n; i++) {
        long j = strvec_find(bk, ak->v[i]);
        if (j < 0 || strcmp(av->v[i], bv->v[j]) != 0)
            return false;
    }
    return true;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool onb_server_same(const struct onb_server *a, const struct onb_server *b)
{
    return a->http == b->http && str_eq(a->url, b->url) && str_eq(a->command, b->command) &&
           str_eq(a->cwd, b->cwd) && strvec_eq(&a->args, &b->args) &&
           map_eq(&a->hdr_keys, &a->hdr_vals, &b->hdr_keys, &b->hdr_vals) &&
           map_eq(&a->env_keys, &a->env_vals, &b->env_keys, &b->env_vals);
}

/* ---- the cwd wrap, undone ----------------------------------------------------- */

/* Reads one '...' word (with '\'' for a quote) at *p; NULL when not one. */
static char *sh_word(const char **p)
{
    const char *s = *p;
    if (*s != '\'')
        return NULL;
    strbuf w = SB_INIT;
    s++;
    for (;;) {
        if (!*s) {
            sb_release(&w);
            return NULL;
        }
        if (*s == '\'') {
            if (strncmp(s, "'\\''", 4) == 0) {
                sb_addc(&w, '\'');
                s += 4;
                continue;
            }
            s++;
            break;
        }
        sb_addc(&w, *s++);
    }
    *p = s;
    return sb_detach(&w, NULL);
}

bool onb_unwrap_cwd(struct onb_server *s)
{
    if (s->http || !s->command || strcmp(s->command, "sh") != 0 || s->args.n != 2 ||
        strcmp(s->args.v[0], "-c") != 0 || strncmp(s->args.v[1], "cd ", 3) != 0)
        return false;
    const char *p = s->args.v[1] + 3;
    char *cwd = sh_word(&p);
    if (!cwd || strncmp(p, " && exec ", 9) != 0) {
        free(cwd);
        return false;
    }
    p += 9;
    strvec words = STRVEC_INIT;
    for (;;) {
        char *w = sh_word(&p);
        if (!w) {
            strvec_clear(&words);
            free(cwd);
            return false;
        }
        strvec_push_take(&words, w);
        if (!*p)
            break;
        if (*p != ' ') {
            strvec_clear(&words);
            free(cwd);
            return false;
        }
        p++;
    }
    free(s->command);
    s->command = xstrdup(words.v[0]);
    strvec_clear(&s->args);
    for (size_t i = 1; i < words.n; i++)
        strvec_push(&s->args, words.v[i]);
    free(s->cwd);
    s->cwd = cwd;
    strvec_clear(&words);
    return true;
}

void onb_server_from_manifest(const struct mf_server *m, struct onb_server *out)
{
    memset(out, 0, sizeof *out);
    out->name = xstrdup(m->name);
    out->http = m->type == MF_SERVER_HTTP;
    out->url = m->url && out->http ? xstrdup(m->url) : NULL;
    out->command = m->command && !out->http ? xstrdup(m->command) : NULL;
    out->cwd = m->cwd && !out->http ? xstrdup(m->cwd) : NULL;
    for (size_t i = 0; !out->http && i < m->args.n; i++)
        strvec_push(&out->args, m->args.v[i]);
    for (size_t i = 0; i < m->headers.n; i++) {
        strvec_push(&out->hdr_keys, m->headers.v[i].key);
        strvec_push(&out->hdr_vals, m->headers.v[i].value);
    }
    for (size_t i = 0; i < m->env.n; i++) {
        strvec_push(&out->env_keys, m->env.v[i].key);
        strvec_push(&out->env_vals, m->env.v[i].value);
    }
    out->extra = m->extra ? toml_clone(m->extra) : NULL;
}

/* ---- JSON → TOML for extra.<id> ------------------------------------------ */

static toml_value *toml_from_json(const json_t *j, int depth)
{
    if (depth > 64)
        return NULL;
    switch (json_typeof(j)) {
    case JSON_STRING:
        return toml_new_stringn(json_string_value(j), json_string_length(j));
    case JSON_INTEGER:
        return toml_new_int((int64_t)json_integer_value(j));
    case JSON_REAL:
        return toml_new_float(json_real_value(j));
    case JSON_TRUE:
        return toml_new_bool(true);
    case JSON_FALSE:
        return toml_new_bool(false);
    case JSON_ARRAY: {
        toml_value *a = toml_new(TOML_ARRAY);
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            toml_value *t = toml_from_json(v, depth + 1);
            if (!t) {
                toml_free(a);
                return NULL;
            }
            toml_array_push(a, t);
        }
        return a;
    }
    case JSON_OBJECT: {
        toml_value *t = toml_new(TOML_TABLE);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            toml_value *c = toml_from_json(v, depth + 1);
            if (!c) {
                toml_free(t);
                return NULL;
            }
            toml_table_set(t, k, c);
        }
        return t;
    }
    case JSON_NULL:
        return NULL;
    }
    return NULL;
}

static void extra_set(struct onb_server *s, const char *id, const char *key, toml_value *v)
{
    if (!s->extra)
        s->extra = toml_new(TOML_TABLE);
    toml_value *t = toml_get(s->extra, id);
    if (!t) {
        toml_table_set(s->extra, id, toml_new(TOML_TABLE));
        t = toml_get(s->extra, id);
    }
    toml_table_set(t, key, v);
}

/* ---- one entry ------------------------------------------------------------- */

static void note(struct onb_import *out, const char *name, const char *where, const char *why)
{
    strvec_pushf(&out->notes, "skipping '%s' in %s — %s", name, where, why);
}

static bool is_field(const struct adp_desc *d, const char *k)
{
    const struct adp_mcp *m = &d->mcp;
    const char *f[] = {m->f_url, m->f_headers, m->f_command,    m->f_args,
                       m->f_cwd, m->f_env,     m->transport_key};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (f[i] && strcmp(f[i], k) == 0)
            return true;
    return false;
}

/* The tool allowlist agentstack renders by default (["*"], every tool) is not carried as an
 * extra; any narrower list is, so importing never widens what a server may expose. */
static bool is_default_tools(const struct adp_desc *d, const char *k, const json_t *v)
{
    if (!d->mcp.f_tools || strcmp(d->mcp.f_tools, k) != 0 || !json_is_array(v) ||
        json_array_size(v) != 1)
        return false;
    const json_t *only = json_array_get(v, 0);
    return json_is_string(only) && strcmp(json_string_value(only), "*") == 0;
}

/* Pulls a string map (headers, env) from a JSON object. */
static int json_strmap(const json_t *o, strvec *keys, strvec *vals)
{
    if (!json_is_object(o))
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (json_is_string(v))
            strvec_push(vals, json_string_value(v));
        else if (json_is_integer(v))
            strvec_pushf(vals, "%lld", (long long)json_integer_value(v));
        else if (json_is_boolean(v))
            strvec_push(vals, json_is_true(v) ? "true" : "false");
        else
            return -1;
        strvec_push(keys, k);
    }
    return 0;
}

static int toml_strmap(const toml_value *t, strvec *keys, strvec *vals)
{
    if (!t || t->type != TOML_TABLE)
        return -1;
    for (size_t i = 0; i < toml_len(t); i++) {
        const toml_kv *kv = toml_entry(t, i);
        if (kv->val->type == TOML_STRING && !memchr(kv->val->u.str.s, '\0', kv->val->u.str.len))
            strvec_push(vals, kv->val->u.str.s);
        else if (kv->val->type == TOML_INTEGER)
            strvec_pushf(vals, "%lld", (long long)kv->val->u.i);
        else if (kv->val->type == TOML_BOOL)
            strvec_push(vals, kv->val->u.b ? "true" : "false");
        else
            return -1;
        strvec_push(keys, kv->key);
    }
    return 0;
}

/* Decides the transport and adds the server (or a note). */
static void finish(const struct adp_desc *d, const char *where, const char *tag,
                   bool include_tool_managed, struct onb_server *s, struct onb_import *out)
{
    bool tag_http = tag && d->mcp.transport_http && strcmp(tag, d->mcp.transport_http) == 0;
    if (s->url && (tag_http || !s->command))
        s->http = true;
    else if (s->command)
        s->http = false;
    else {
        note(out, s->name, where, "it has neither a url nor a command");
        onb_server_free(s);
        return;
    }
    if (onb_is_bridge(s->name, s->command, &s->args)) {
        onb_server_free(s); /* the gateway bridge is ours, never imported */
        return;
    }
    if (!s->http && !include_tool_managed && strstr(s->command, ".app/")) {
        note(out, s->name, where,
             "its executable lives inside an application bundle (pass "
             "--include-tool-managed to import it)");
        onb_server_free(s);
        return;
    }
    strvec_push(&s->origins, where);
    strvec_push(&s->origin_ids, d->id);
    vec_push(&out->servers, *s);
    memset(s, 0, sizeof *s);
}

static void read_json_entry(const struct adp_desc *d, const char *name, const json_t *e,
                            const char *where, bool itm, struct onb_import *out)
{
    struct onb_server s = {0};
    s.name = xstrdup(name);
    if (!json_is_object(e)) {
        note(out, name, where, "the entry is not an object");
        onb_server_free(&s);
        return;
    }
    const struct adp_mcp *m = &d->mcp;
    const char *tag = NULL;
    if (m->transport_key && json_is_string(json_object_get(e, m->transport_key)))
        tag = json_string_value(json_object_get(e, m->transport_key));
    /* url: the descriptor's key, else the spellings other CLIs use */
    const char *url_keys[] = {m->f_url, "url", "httpUrl", "serverUrl"};
    const char *url_key = NULL;
    for (size_t i = 0; i < sizeof url_keys / sizeof *url_keys && !s.url; i++)
        if (url_keys[i] && json_is_string(json_object_get(e, url_keys[i]))) {
            s.url = xstrdup(json_string_value(json_object_get(e, url_keys[i])));
            url_key = url_keys[i];
        }
    const char *cmd_key = m->f_command ? m->f_command : "command";
    json_t *cmd = json_object_get(e, cmd_key);
    if (m->command_array && json_is_array(cmd)) {
        size_t i;
        json_t *v;
        json_array_foreach(cmd, i, v)
        {
            if (!json_is_string(v)) {
                note(out, name, where, "its command array holds a non-string");
                onb_server_free(&s);
                return;
            }
            if (i == 0)
                s.command = xstrdup(json_string_value(v));
            else
                strvec_push(&s.args, json_string_value(v));
        }
    } else if (json_is_string(cmd)) {
        s.command = xstrdup(json_string_value(cmd));
    }
    const char *args_key = m->f_args ? m->f_args : "args";
    json_t *args = json_object_get(e, args_key);
    if (!m->command_array && json_is_array(args)) {
        size_t i;
        json_t *v;
        json_array_foreach(args, i, v)
        {
            if (json_is_string(v))
                strvec_push(&s.args, json_string_value(v));
            else {
                note(out, name, where, "its args hold a non-string");
                onb_server_free(&s);
                return;
            }
        }
    }
    if (m->f_cwd && json_is_string(json_object_get(e, m->f_cwd)))
        s.cwd = xstrdup(json_string_value(json_object_get(e, m->f_cwd)));
    const char *hk = m->f_headers ? m->f_headers : "headers";
    if (json_object_get(e, hk) && json_strmap(json_object_get(e, hk), &s.hdr_keys, &s.hdr_vals)) {
        note(out, name, where, "its headers are not a map of strings");
        onb_server_free(&s);
        return;
    }
    const char *ek = m->f_env ? m->f_env : "env";
    if (json_object_get(e, ek) && json_strmap(json_object_get(e, ek), &s.env_keys, &s.env_vals)) {
        note(out, name, where, "its environment is not a map of strings");
        onb_server_free(&s);
        return;
    }
    /* Everything else travels verbatim as extra.<id>.<key>. */
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e, k, v)
    {
        if (is_field(d, k) || is_default_tools(d, k, v) || strcmp(k, hk) == 0 ||
            strcmp(k, ek) == 0 || strcmp(k, cmd_key) == 0 ||
            (!m->command_array && strcmp(k, args_key) == 0) || (url_key && strcmp(k, url_key) == 0))
            continue;
        toml_value *t = toml_from_json(v, 0);
        if (t)
            extra_set(&s, d->id, k, t);
        else
            strvec_pushf(&out->notes, "'%s' in %s: dropped '%s' (null has no TOML form)", name,
                         where, k);
    }
    finish(d, where, tag, itm, &s, out);
}

static void read_toml_entry(const struct adp_desc *d, const char *name, const toml_value *e,
                            const char *where, bool itm, struct onb_import *out)
{
    struct onb_server s = {0};
    s.name = xstrdup(name);
    if (!e || e->type != TOML_TABLE) {
        note(out, name, where, "the entry is not a table");
        onb_server_free(&s);
        return;
    }
    const struct adp_mcp *m = &d->mcp;
    const char *uk = m->f_url ? m->f_url : "url";
    const char *ck = m->f_command ? m->f_command : "command";
    const char *ak = m->f_args ? m->f_args : "args";
    const char *hk = m->f_headers ? m->f_headers : "headers";
    const char *ek = m->f_env ? m->f_env : "env";
    const char *wk = m->f_cwd ? m->f_cwd : "cwd";
    const toml_value *v;
    if ((v = toml_get(e, uk)) && v->type == TOML_STRING)
        s.url = xstrdup(v->u.str.s);
    if ((v = toml_get(e, ck)) && v->type == TOML_STRING)
        s.command = xstrdup(v->u.str.s);
    if ((v = toml_get(e, wk)) && v->type == TOML_STRING)
        s.cwd = xstrdup(v->u.str.s);
    if ((v = toml_get(e, ak)) && v->type == TOML_ARRAY) {
        for (size_t i = 0; i < toml_len(v); i++) {
            const toml_value *a = toml_at(v, i);
            if (a->type != TOML_STRING) {
                note(out, name, where, "its args hold a non-string");
                onb_server_free(&s);
                return;
            }
            strvec_push(&s.args, a->u.str.s);
        }
    }
    if ((v = toml_get(e, hk)) && toml_strmap(v, &s.hdr_keys, &s.hdr_vals)) {
        note(out, name, where, "its headers are not a map of strings");
        onb_server_free(&s);
        return;
    }
    if ((v = toml_get(e, ek)) && toml_strmap(v, &s.env_keys, &s.env_vals)) {
        note(out, name, where, "its environment is not a map of strings");
        onb_server_free(&s);
        return;
    }
    for (size_t i = 0; i < toml_len(e); i++) {
        const toml_kv *kv = toml_entry(e, i);
        const char *k = kv->key;
        if (strcmp(k, uk) == 0 || strcmp(k, ck) == 0 || strcmp(k, ak) == 0 || strcmp(k, hk) == 0 ||
            strcmp(k, ek) == 0 || strcmp(k, wk) == 0 ||
            (m->transport_key && strcmp(k, m->transport_key) == 0))
            continue;
        extra_set(&s, d->id, k, toml_clone(kv->val));
    }
    const char *tag = NULL;
    if (m->transport_key && (v = toml_get(e, m->transport_key)) && v->type == TOML_STRING)
        tag = v->u.str.s;
    finish(d, where, tag, itm, &s, out);
}

int onb_read_servers(const struct adp_desc *d, enum adp_format fmt, const char *path,
                     const char *text, size_t len, const char *where, bool itm,
                     struct onb_import *out, struct as_err *err)
{
    if (!d->has_mcp || !d->mcp.location)
        return 0;
    if (fmt == ADP_FMT_TOML) {
        toml_value *root = toml_parse(path, text, len, err);
        if (!root)
            return -1;
        const toml_value *sec = toml_get(root, d->mcp.location);
        if (sec && sec->type == TOML_TABLE)
            for (size_t i = 0; i < toml_len(sec); i++)
                read_toml_entry(d, toml_entry(sec, i)->key, toml_entry(sec, i)->val, where, itm,
                                out);
        toml_free(root);
        return 0;
    }
    json_t *sec = NULL;
    if (adp_json_read(path, text, len, fmt == ADP_FMT_JSONC, d->mcp.location, &sec, err) < 0)
        return -1;
    if (sec && json_is_object(sec)) {
        const char *k;
        json_t *v;
        json_object_foreach(sec, k, v) read_json_entry(d, k, v, where, itm, out);
    } else if (sec) {
        strvec_pushf(&out->problems, "%s: \"%s\" is not an object — its servers were not read",
                     where, d->mcp.location);
    }
    json_decref(sec);
    return 0;
}

bool onb_bridge_registered(const struct adp_desc *d)
{
    if (!d->has_mcp || !d->mcp.location || !d->config_path)
        return false;
    strbuf path = SB_INIT, text = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    bool found = false;
    if (adp_expand_path(d->config_path, NULL, &path, &err) < 0 || !fs_exists(path.buf) ||
        fs_read_file(path.buf, CONFIG_MAX, 0, &text, &err) < 0)
        goto out;
    /* Read with the bridge filter off: count what onb_read_servers would drop. */
    if (d->config_format == ADP_FMT_TOML) {
        toml_value *root = toml_parse(path.buf, text.buf, text.len, &err);
        const toml_value *sec = root ? toml_get(root, d->mcp.location) : NULL;
        for (size_t i = 0; sec && sec->type == TOML_TABLE && i < toml_len(sec); i++) {
            const toml_kv *kv = toml_entry(sec, i);
            const toml_value *c =
                toml_get(kv->val, d->mcp.f_command ? d->mcp.f_command : "command");
            const toml_value *a = toml_get(kv->val, d->mcp.f_args ? d->mcp.f_args : "args");
            strvec args = STRVEC_INIT;
            if (a && a->type == TOML_ARRAY && toml_len(a) && toml_at(a, 0)->type == TOML_STRING)
                strvec_push(&args, toml_at(a, 0)->u.str.s);
            found |= onb_is_bridge(kv->key, c && c->type == TOML_STRING ? c->u.str.s : NULL, &args);
            strvec_clear(&args);
        }
        toml_free(root);
    } else {
        json_t *sec = NULL;
        if (adp_json_read(path.buf, text.buf, text.len, d->config_format == ADP_FMT_JSONC,
                          d->mcp.location, &sec, &err) == 0 &&
            json_is_object(sec)) {
            const char *k;
            json_t *v;
            json_object_foreach(sec, k, v)
            {
                json_t *c = json_object_get(v, d->mcp.f_command ? d->mcp.f_command : "command");
                strvec args = STRVEC_INIT;
                const char *cmd = NULL;
                if (json_is_array(c)) { /* opencode: [cmd, args…] */
                    cmd = json_string_value(json_array_get(c, 0));
                    if (json_is_string(json_array_get(c, 1)))
                        strvec_push(&args, json_string_value(json_array_get(c, 1)));
                } else {
                    cmd = json_string_value(c);
                    json_t *a = json_object_get(v, d->mcp.f_args ? d->mcp.f_args : "args");
                    if (json_is_string(json_array_get(a, 0)))
                        strvec_push(&args, json_string_value(json_array_get(a, 0)));
                }
                found |= onb_is_bridge(k, cmd, &args);
                strvec_clear(&args);
            }
        }
        json_decref(sec);
    }
out:
    sb_release(&path);
    sb_release_secure(&text);
    return found;
}

/* ---- merging ------------------------------------------------------------- */

/* Folds servers[first_new..] into the ones before them (and each other):
 * equal definitions merge their origins and extras, a differing one is a
 * conflict and dropped. */
static void merge_servers(struct onb_import *out, size_t first_new)
{
    size_t keep = first_new;
    for (size_t i = first_new; i < out->servers.n; i++) {
        struct onb_server *s = &out->servers.v[i];
        struct onb_server *prev = NULL;
        for (size_t j = 0; j < keep; j++)
            if (strcmp(out->servers.v[j].name, s->name) == 0)
                prev = &out->servers.v[j];
        if (!prev) {
            if (keep != i)
                out->servers.v[keep] = *s;
            keep++;
            continue;
        }
        if (onb_server_same(prev, s)) {
            strvec_push(&prev->origins, s->origins.v[0]);
            strvec_push(&prev->origin_ids, s->origin_ids.v[0]);
            for (size_t k = 0; s->extra && k < toml_len(s->extra); k++) {
                const toml_kv *kv = toml_entry(s->extra, k);
                if (!prev->extra)
                    prev->extra = toml_new(TOML_TABLE);
                if (!toml_get(prev->extra, kv->key))
                    toml_table_set(prev->extra, kv->key, toml_clone(kv->val));
            }
        } else {
            strvec_pushf(&out->conflicts, "'%s' in %s differs from %s — kept the first", s->name,
                         s->origins.v[0], prev->origins.v[0]);
        }
        onb_server_free(s);
    }
    out->servers.n = keep;
}

static int read_file_servers(const struct adp_desc *d, const char *raw, enum adp_format fmt,
                             const char *project_root, bool itm, struct onb_import *out)
{
    strbuf path = SB_INIT, where = SB_INIT, text = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int found = 0;
    if (adp_expand_path(raw, project_root, &path, &err) < 0)
        goto out;
    struct stat st;
    if (lstat(path.buf, &st) < 0)
        goto out;
    found = 1;
    sb_addf(&where, "%s (", d->display);
    if (project_root)
        sb_adds(&where, raw); /* project files read best relative to the project */
    else
        onb_display_path(path.buf, &where);
    sb_addc(&where, ')');
    if (fs_read_file(path.buf, CONFIG_MAX, 0, &text, &err) < 0 ||
        onb_read_servers(d, fmt, path.buf, text.buf, text.len, where.buf, itm, out, &err) < 0) {
        char buf[2048];
        strvec_pushf(&out->problems, "%s: %s — its servers were not read", where.buf,
                     as_err_str(&err, buf, sizeof buf));
    }
out:
    sb_release(&path);
    sb_release(&where);
    sb_release_secure(&text);
    return found;
}

/* ---- skills --------------------------------------------------------------- */

static void scan_skills(const char *raw, const char *project_root, const char *display,
                        const char *home, strvec *seen_dirs, struct onb_import *out)
{
    strbuf dir = SB_INIT, canon = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (adp_expand_path(raw, project_root, &dir, &err) < 0 || !fs_is_dir(dir.buf))
        goto out;
    if (fs_realpath(dir.buf, &canon, &err) < 0 || strvec_find(seen_dirs, canon.buf) >= 0)
        goto out;
    strvec_push(seen_dirs, canon.buf);
    DIR *dh = opendir(dir.buf);
    if (!dh)
        goto out;
    strvec names = STRVEC_INIT;
    struct dirent *de;
    while ((de = readdir(dh)))
        if (de->d_name[0] != '.')
            strvec_push(&names, de->d_name);
    closedir(dh);
    strvec_sort(&names);
    for (size_t i = 0; i < names.n; i++) {
        const char *n = names.v[i];
        char *p = xasprintf("%s/%s", dir.buf, n);
        char *md = xasprintf("%s/SKILL.md", p);
        strbuf where = SB_INIT, real = SB_INIT;
        sb_addf(&where, "%s (", display);
        onb_display_path(p, &where);
        sb_addc(&where, ')');
        struct stat st;
        if (stat(md, &st) < 0 || !S_ISREG(st.st_mode) || !fs_is_dir(p))
            goto next;
        if (!lib_name_valid(n)) {
            note(out, n, where.buf, "not a valid skill name ([a-z0-9][a-z0-9._-]{0,63})");
            goto next;
        }
        if (fs_realpath(p, &real, &err) < 0)
            goto next;
        if (home && fs_path_within(home, real.buf))
            goto next; /* a link agentstack placed: already in the library */
        char hex[65];
        if (digest_skill_tree(real.buf, hex, &err) < 0) {
            char buf[2048];
            note(out, n, where.buf, as_err_str(&err, buf, sizeof buf));
            as_err_clear(&err);
            goto next;
        }
        struct onb_skill *prev = NULL;
        for (size_t k = 0; k < out->skills.n; k++)
            if (strcmp(out->skills.v[k].name, n) == 0)
                prev = &out->skills.v[k];
        if (prev) {
            if (strcmp(prev->digest, hex) == 0)
                strvec_push(&prev->origins, where.buf);
            else
                strvec_pushf(&out->conflicts, "skill '%s' in %s differs from %s — kept the first",
                             n, where.buf, prev->origins.v[0]);
            goto next;
        }
        struct onb_skill sk = {0};
        sk.name = xstrdup(n);
        sk.src = xstrdup(real.buf);
        memcpy(sk.digest, hex, sizeof hex);
        strvec_push(&sk.origins, where.buf);
        vec_push(&out->skills, sk);
    next:
        sb_release(&where);
        sb_release(&real);
        free(p);
        free(md);
    }
    strvec_clear(&names);
out:
    sb_release(&dir);
    sb_release(&canon);
}

/* Marks skills the library already holds (same bytes) and reports the
 * ones whose name it holds with other bytes. */
static void check_library(struct onb_import *out)
{
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(NULL, &err);
    if (!lib)
        return;
    for (size_t i = 0; i < out->skills.n; i++) {
        struct onb_skill *s = &out->skills.v[i];
        const struct lib_item *it = NULL;
        if (lib_resolve(lib, LIB_SKILL, s->name, &it, &err) == 1 && it) {
            char hex[65];
            if (it->body && digest_skill_tree(it->body, hex, &err) == 0 &&
                strcmp(hex, s->digest) == 0) {
                s->in_library = true;
            } else {
                strvec_pushf(&out->conflicts,
                             "skill '%s' from %s differs from the library's — kept the "
                             "library's",
                             s->name, s->origins.v[0]);
                s->in_library = true; /* listed, not copied */
            }
        }
        as_err_clear(&err);
    }
    lib_free(lib);
}

int onb_import(const struct adp_registry *r, const struct onb_import_opts *o,
               struct onb_import *out, struct as_err *err)
{
    (void)err;
    strvec seen_dirs = STRVEC_INIT;
    strbuf home = SB_INIT;
    struct as_err herr = AS_ERR_INIT;
    bool have_home = home_dir(&home, &herr) == 0;
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        if (o->only && o->only->n && strvec_find(o->only, d->id) < 0)
            continue;
        if (!o->all_adapters && !adp_detected(d, o->project_root))
            continue;
        strvec_push(&out->detected_ids, d->id);
        strvec_push(&out->detected_names, d->display);
        if (d->has_mcp) {
            size_t first = out->servers.n;
            if (d->config_path && !o->skip_global)
                read_file_servers(d, d->config_path, d->config_format, NULL,
                                  o->include_tool_managed, out);
            if (o->project_root && d->project_config && !o->skip_project)
                read_file_servers(d, d->project_config, d->project_format, o->project_root,
                                  o->include_tool_managed, out);
            for (size_t k = first; k < out->servers.n; k++)
                onb_unwrap_cwd(&out->servers.v[k]);
            if (!o->no_merge)
                merge_servers(out, first);
        }
        if (o->skills) {
            if (d->skills_dir)
                scan_skills(d->skills_dir, NULL, d->display, have_home ? home.buf : NULL,
                            &seen_dirs, out);
            if (o->project_root && d->skills_project_dir)
                scan_skills(d->skills_project_dir, o->project_root, d->display,
                            have_home ? home.buf : NULL, &seen_dirs, out);
        }
    }
    if (o->skills && out->skills.n)
        check_library(out);
    strvec_clear(&seen_dirs);
    sb_release(&home);
    return 0;
}
