/* render — see render.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/render.h"
#include "base/xalloc.h"
#include "secrets/secrets.h"

int adp_resolve_env(void *ctx, const char *name, const char *server, strbuf *out,
                    struct as_err *err)
{
    (void)ctx;
    (void)server;
    (void)err;
    const char *v = getenv(name);
    if (!v)
        return 0;
    sb_adds(out, v);
    return 1;
}

void adp_secrets_free(adp_secrets *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        if (s->v[i].value) {
            explicit_bzero(s->v[i].value, strlen(s->v[i].value));
            free(s->v[i].value);
        }
    }
    vec_free(s);
}

void adp_secrets_mask(const adp_secrets *s, const char *text, size_t len, strbuf *out)
{
    struct sec_masked *v = xcalloc(s->n + 1, sizeof *v);
    for (size_t k = 0; k < s->n; k++)
        v[k] = (struct sec_masked){s->v[k].name, s->v[k].value};
    sec_mask(v, s->n, text, len, out);
    free(v);
}

void adp_rendered_release(struct adp_rendered *r)
{
    json_decref(r->json);
    r->json = NULL;
    toml_free(r->toml);
    r->toml = NULL;
    sb_release(&r->reason);
    strvec_clear(&r->missing);
}

bool adp_name_ok(const struct adp_desc *d, const char *name)
{
    if (!name[0])
        return false;
    if (!d->mcp.name_charset)
        return true;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* ---- ${NAME} ------------------------------------------------------------- */

static bool name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* Finds the next reference at or after *i: returns 1 with [*ns, *ne) the
 * name and *i past the '}', or 0 when there is none (and *i = len). *lit_end
 * is where the literal text before the reference ends. */
static int next_ref(const char *s, size_t len, size_t *i, size_t *lit_end, size_t *ns, size_t *ne)
{
    size_t p = *i;
    while (p + 1 < len) {
        if (s[p] == '$' && s[p + 1] == '{') {
            size_t j = p + 2;
            if (j < len && name_start(s[j])) {
                size_t k = j;
                while (k < len && name_char(s[k]))
                    k++;
                if (k < len && s[k] == '}') {
                    *lit_end = p;
                    *ns = j;
                    *ne = k;
                    *i = k + 1;
                    return 1;
                }
            }
            /* Not a reference: its interior is scanned again. */
            p += 2;
            continue;
        }
        p++;
    }
    *lit_end = len;
    *i = len;
    return 0;
}

static void refs_of(const char *s, strvec *out)
{
    if (!s)
        return;
    size_t len = strlen(s), i = 0, le, ns, ne;
    while (next_ref(s, len, &i, &le, &ns, &ne)) {
        char *n = xstrndup(s + ns, ne - ns);
        if (strvec_find(out, n) < 0)
            strvec_push_take(out, n);
        else
            free(n);
    }
}

static void refs_of_toml(const toml_value *v, strvec *out, int depth)
{
    if (!v || depth > TOML_MAX_DEPTH)
        return;
    if (v->type == TOML_STRING)
        refs_of(v->u.str.s, out);
    else if (v->type == TOML_ARRAY)
        for (size_t i = 0; i < v->u.arr.n; i++)
            refs_of_toml(v->u.arr.items[i], out, depth + 1);
    else if (v->type == TOML_TABLE)
        for (size_t i = 0; i < v->u.tab.n; i++)
            refs_of_toml(v->u.tab.kv[i].val, out, depth + 1);
}

void adp_server_refs(const struct mf_server *s, strvec *out)
{
    refs_of(s->url, out);
    refs_of(s->command, out);
    for (size_t i = 0; i < s->args.n; i++)
        refs_of(s->args.v[i], out);
    refs_of(s->cwd, out);
    for (size_t i = 0; i < s->headers.n; i++)
        refs_of(s->headers.v[i].value, out);
    for (size_t i = 0; i < s->env.n; i++)
        refs_of(s->env.v[i].value, out);
    refs_of_toml(s->extra, out, 0);
}

struct rstate {
    struct adp_render_ctx *rc;
    const char *server;
    strvec *missing;
    struct as_err *err;
    bool failed;
};

/* Resolves the references of s into out. Unresolved ones stay verbatim and
 * are recorded (the caller never writes such a result). */
static void resolve(struct rstate *st, const char *s, strbuf *out)
{
    size_t len = strlen(s), i = 0, le, ns, ne, from = 0;
    while (next_ref(s, len, &i, &le, &ns, &ne)) {
        sb_add(out, s + from, le - from);
        from = i;
        char *name = xstrndup(s + ns, ne - ns);
        strbuf val = SB_INIT;
        int r = 0;
        if (!st->failed) {
            adp_resolve_fn fn = st->rc->resolve ? st->rc->resolve : adp_resolve_env;
            r = fn(st->rc->resolve_ctx, name, st->server, &val, st->err);
            if (r < 0)
                st->failed = true;
        }
        if (r == 1 && memchr(val.buf, '\0', val.len)) {
            as_err_set(st->err, "secret %s (server '%s') holds a NUL byte — refused", name,
                       st->server);
            st->failed = true;
            r = -1;
        }
        if (r == 1) {
            sb_add(out, val.buf, val.len);
            if (st->rc->secrets && val.len) {
                bool have = false;
                for (size_t k = 0; k < st->rc->secrets->n && !have; k++)
                    have = strcmp(st->rc->secrets->v[k].name, name) == 0 &&
                           strcmp(st->rc->secrets->v[k].value, val.buf) == 0;
                if (!have) {
                    struct adp_secret sec = {xstrdup(name), xstrdup(val.buf)};
                    vec_push(st->rc->secrets, sec);
                }
            }
        } else {
            sb_add(out, s + le, i - le);
            if (r == 0 && strvec_find(st->missing, name) < 0)
                strvec_push(st->missing, name);
        }
        sb_release_secure(&val);
        free(name);
    }
    sb_add(out, s + from, len - from);
}

static json_t *jstr(struct rstate *st, const char *s)
{
    strbuf b = SB_INIT;
    resolve(st, s, &b);
    json_t *v = json_stringn(b.buf, b.len);
    sb_release_secure(&b);
    if (!v)
        v = json_string("\xef\xbf\xbd"); /* not UTF-8: never silently dropped */
    return v;
}

/* A string we built (command words, tags): never NULL, even if not UTF-8. */
static json_t *jraw(const char *s)
{
    json_t *v = json_string(s);
    return v ? v : json_string("\xef\xbf\xbd");
}

static toml_value *tstr(struct rstate *st, const char *s)
{
    strbuf b = SB_INIT;
    resolve(st, s, &b);
    toml_value *v = toml_new_stringn(b.buf, b.len);
    sb_release_secure(&b);
    return v;
}

static json_t *toml_to_json(struct rstate *st, const toml_value *v, int depth)
{
    if (depth > TOML_MAX_DEPTH)
        return NULL;
    switch (v->type) {
    case TOML_STRING:
        return jstr(st, v->u.str.s);
    case TOML_INTEGER:
        return json_integer((json_int_t)v->u.i);
    case TOML_FLOAT:
        if (isnan(v->u.f) || isinf(v->u.f))
            return NULL;
        return json_real(v->u.f);
    case TOML_BOOL:
        return json_boolean(v->u.b);
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        return json_string(v->u.dt ? v->u.dt : "");
    case TOML_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; i < v->u.arr.n; i++) {
            json_t *x = toml_to_json(st, v->u.arr.items[i], depth + 1);
            if (!x) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, x);
        }
        return a;
    }
    case TOML_TABLE: {
        json_t *o = json_object();
        for (size_t i = 0; i < v->u.tab.n; i++) {
            json_t *x = toml_to_json(st, v->u.tab.kv[i].val, depth + 1);
            if (!x) {
                json_decref(o);
                return NULL;
            }
            json_object_set_new(o, v->u.tab.kv[i].key, x);
        }
        return o;
    }
    }
    return NULL;
}

static toml_value *toml_resolved(struct rstate *st, const toml_value *v, int depth)
{
    if (depth > TOML_MAX_DEPTH)
        return NULL;
    if (v->type == TOML_STRING)
        return tstr(st, v->u.str.s);
    if (v->type == TOML_ARRAY) {
        toml_value *a = toml_new(TOML_ARRAY);
        for (size_t i = 0; i < v->u.arr.n; i++) {
            toml_value *x = toml_resolved(st, v->u.arr.items[i], depth + 1);
            if (!x) {
                toml_free(a);
                return NULL;
            }
            toml_array_push(a, x);
        }
        return a;
    }
    if (v->type == TOML_TABLE) {
        toml_value *t = toml_new(TOML_TABLE);
        for (size_t i = 0; i < v->u.tab.n; i++) {
            toml_value *x = toml_resolved(st, v->u.tab.kv[i].val, depth + 1);
            if (!x) {
                toml_free(t);
                return NULL;
            }
            toml_table_set(t, v->u.tab.kv[i].key, x);
        }
        return t;
    }
    return toml_clone(v);
}

/* The server's cwd, resolved; a relative one joined to the project root when
 * absolute is set (the wrap's cd, and a CLI that resolves a relative cwd
 * against its own process directory). */
static void cwd_resolved(struct rstate *st, const struct mf_server *s, bool absolute, strbuf *cwd)
{
    strbuf raw = SB_INIT;
    resolve(st, s->cwd, &raw);
    if (absolute && raw.buf[0] != '/' && st->rc->project_root && strncmp(s->cwd, "${", 2) != 0)
        sb_addf(cwd, "%s/%s", st->rc->project_root, raw.buf);
    else
        sb_add(cwd, raw.buf, raw.len);
    sb_release_secure(&raw);
}

/* The command line after the cwd wrap or as written. */
static void command_line(struct rstate *st, const struct adp_desc *d, const struct mf_server *s,
                         strbuf *cmd, strvec *args)
{
    strbuf cwd = SB_INIT;
    if (s->cwd && s->cwd[0])
        cwd_resolved(st, s, true, &cwd);
    if (cwd.len && !d->mcp.f_cwd) {
        sb_adds(cmd, "sh");
        strvec_push(args, "-c");
        strbuf script = SB_INIT;
        sb_adds(&script, "cd ");
        sb_add_shquoted(&script, cwd.buf);
        sb_adds(&script, " && exec ");
        strbuf w = SB_INIT;
        resolve(st, s->command, &w);
        sb_add_shquoted(&script, w.buf);
        for (size_t i = 0; i < s->args.n; i++) {
            sb_reset(&w);
            resolve(st, s->args.v[i], &w);
            sb_addc(&script, ' ');
            sb_add_shquoted(&script, w.buf);
        }
        sb_release_secure(&w);
        strvec_push(args, script.buf);
        sb_release_secure(&script);
    } else {
        resolve(st, s->command, cmd);
        for (size_t i = 0; i < s->args.n; i++) {
            strbuf w = SB_INIT;
            resolve(st, s->args.v[i], &w);
            strvec_push(args, w.buf);
            sb_release_secure(&w);
        }
    }
    sb_release_secure(&cwd);
}

static bool cwd_native(const struct adp_desc *d, const struct mf_server *s)
{
    return s->cwd && s->cwd[0] && d->mcp.f_cwd;
}

enum adp_render_status adp_render_server(const struct adp_desc *d, enum adp_format fmt,
                                         const struct mf_server *s, struct adp_render_ctx *rc,
                                         struct adp_rendered *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    sb_init(&out->reason, 0);
    const struct adp_mcp *m = &d->mcp;
    bool http = s->type == MF_SERVER_HTTP;
    if (!d->has_mcp) {
        sb_addf(&out->reason, "%s has no MCP server config", d->display);
        return ADP_RENDER_SKIP;
    }
    if (!adp_name_ok(d, s->name)) {
        sb_addf(&out->reason,
                "%s rejects this server name at startup (letters, digits, '_' "
                "and '-' only) — rename the server in the manifest",
                d->display);
        return ADP_RENDER_SKIP;
    }
    if ((http && !m->f_url) || (!http && !m->f_command)) {
        sb_addf(&out->reason,
                "%s can't represent this server's transport (add it via the "
                "harness's own UI/connector)",
                d->display);
        return ADP_RENDER_SKIP;
    }
    if (!http && !m->f_args && !m->command_array && s->args.n) {
        sb_addf(&out->reason, "%s has no key for command arguments", d->display);
        return ADP_RENDER_SKIP;
    }

    struct rstate st = {rc, s->name, &out->missing, err, false};
    const toml_value *extra = s->extra ? toml_get(s->extra, d->id) : NULL;
    if (extra && extra->type != TOML_TABLE)
        extra = NULL;

    if (fmt == ADP_FMT_TOML) {
        toml_value *t = toml_new(TOML_TABLE);
        if (m->transport_key)
            toml_table_set(t, m->transport_key,
                           toml_new_string(http ? m->transport_http : m->transport_stdio));
        if (http) {
            toml_table_set(t, m->f_url, tstr(&st, s->url ? s->url : ""));
        } else {
            strbuf cmd = SB_INIT;
            strvec args = STRVEC_INIT;
            command_line(&st, d, s, &cmd, &args);
            if (m->command_array) {
                toml_value *a = toml_new(TOML_ARRAY);
                toml_array_push(a, toml_new_string(cmd.buf));
                for (size_t i = 0; i < args.n; i++)
                    toml_array_push(a, toml_new_string(args.v[i]));
                toml_table_set(t, m->f_command, a);
            } else {
                toml_table_set(t, m->f_command, toml_new_string(cmd.buf));
                if (args.n) {
                    toml_value *a = toml_new(TOML_ARRAY);
                    for (size_t i = 0; i < args.n; i++)
                        toml_array_push(a, toml_new_string(args.v[i]));
                    toml_table_set(t, m->f_args, a);
                }
            }
            if (cwd_native(d, s)) {
                strbuf c = SB_INIT;
                cwd_resolved(&st, s, m->cwd_absolute, &c);
                toml_table_set(t, m->f_cwd, toml_new_stringn(c.buf, c.len));
                sb_release_secure(&c);
            }
            sb_release_secure(&cmd);
            strvec_clear(&args);
        }
        if (http && s->headers.n && m->f_headers) {
            toml_value *h = toml_new(TOML_TABLE);
            for (size_t i = 0; i < s->headers.n; i++)
                toml_table_set(h, s->headers.v[i].key, tstr(&st, s->headers.v[i].value));
            toml_table_set(t, m->f_headers, h);
        }
        if (!http && s->env.n && m->f_env) {
            toml_value *e = toml_new(TOML_TABLE);
            for (size_t i = 0; i < s->env.n; i++)
                toml_table_set(e, s->env.v[i].key, tstr(&st, s->env.v[i].value));
            toml_table_set(t, m->f_env, e);
        }
        if (m->f_tools) {
            toml_value *a = toml_new(TOML_ARRAY);
            toml_array_push(a, toml_new_string("*"));
            toml_table_set(t, m->f_tools, a);
        }
        for (size_t i = 0; extra && i < extra->u.tab.n; i++) {
            toml_value *x = toml_resolved(&st, extra->u.tab.kv[i].val, 0);
            if (!x) {
                toml_free(t);
                as_err_set(err, "server '%s': extra.%s.%s nests too deeply", s->name, d->id,
                           extra->u.tab.kv[i].key);
                return ADP_RENDER_ERROR;
            }
            toml_table_set(t, extra->u.tab.kv[i].key, x);
        }
        out->toml = t;
    } else {
        json_t *o = json_object();
        if (m->transport_key)
            json_object_set_new(o, m->transport_key,
                                jraw(http ? m->transport_http : m->transport_stdio));
        if (http) {
            json_object_set_new(o, m->f_url, jstr(&st, s->url ? s->url : ""));
        } else {
            strbuf cmd = SB_INIT;
            strvec args = STRVEC_INIT;
            command_line(&st, d, s, &cmd, &args);
            if (m->command_array) {
                json_t *a = json_array();
                json_array_append_new(a, jraw(cmd.buf));
                for (size_t i = 0; i < args.n; i++)
                    json_array_append_new(a, jraw(args.v[i]));
                json_object_set_new(o, m->f_command, a);
            } else {
                json_object_set_new(o, m->f_command, jraw(cmd.buf));
                if (args.n) {
                    json_t *a = json_array();
                    for (size_t i = 0; i < args.n; i++)
                        json_array_append_new(a, jraw(args.v[i]));
                    json_object_set_new(o, m->f_args, a);
                }
            }
            if (cwd_native(d, s)) {
                strbuf c = SB_INIT;
                cwd_resolved(&st, s, m->cwd_absolute, &c);
                json_object_set_new(o, m->f_cwd, jraw(c.buf));
                sb_release_secure(&c);
            }
            sb_release_secure(&cmd);
            strvec_clear(&args);
        }
        if (http && s->headers.n && m->f_headers) {
            json_t *h = json_object();
            for (size_t i = 0; i < s->headers.n; i++)
                json_object_set_new(h, s->headers.v[i].key, jstr(&st, s->headers.v[i].value));
            json_object_set_new(o, m->f_headers, h);
        }
        if (!http && s->env.n && m->f_env) {
            json_t *e = json_object();
            for (size_t i = 0; i < s->env.n; i++)
                json_object_set_new(e, s->env.v[i].key, jstr(&st, s->env.v[i].value));
            json_object_set_new(o, m->f_env, e);
        }
        if (m->f_tools)
            json_object_set_new(o, m->f_tools, json_pack("[s]", "*"));
        for (size_t i = 0; extra && i < extra->u.tab.n; i++) {
            json_t *x = toml_to_json(&st, extra->u.tab.kv[i].val, 0);
            if (!x) {
                json_decref(o);
                as_err_set(err,
                           "server '%s': extra.%s.%s cannot be written as JSON (nan, inf "
                           "or nested too deeply)",
                           s->name, d->id, extra->u.tab.kv[i].key);
                return ADP_RENDER_ERROR;
            }
            json_object_set_new(o, extra->u.tab.kv[i].key, x);
        }
        out->json = o;
    }
    if (st.failed) {
        adp_rendered_release(out);
        sb_init(&out->reason, 0);
        return ADP_RENDER_ERROR;
    }
    if (out->missing.n) {
        json_decref(out->json);
        out->json = NULL;
        toml_free(out->toml);
        out->toml = NULL;
        return ADP_RENDER_UNRESOLVED;
    }
    return ADP_RENDER_OK;
}

enum adp_render_status adp_render_value(const toml_value *v, enum adp_format fmt, const char *who,
                                        struct adp_render_ctx *rc, struct adp_rendered *out,
                                        struct as_err *err)
{
    memset(out, 0, sizeof *out);
    sb_init(&out->reason, 0);
    struct rstate st = {rc, who, &out->missing, err, false};
    if (fmt == ADP_FMT_TOML) {
        out->toml = toml_resolved(&st, v, 0);
        if (!out->toml && !st.failed) {
            as_err_set(err, "%s nests too deeply", who);
            return ADP_RENDER_ERROR;
        }
    } else {
        out->json = toml_to_json(&st, v, 0);
        if (!out->json && !st.failed) {
            as_err_set(err, "%s cannot be written as JSON (nan, inf or nested too deeply)", who);
            return ADP_RENDER_ERROR;
        }
    }
    if (st.failed) {
        adp_rendered_release(out);
        sb_init(&out->reason, 0);
        return ADP_RENDER_ERROR;
    }
    if (out->missing.n) {
        json_decref(out->json);
        out->json = NULL;
        toml_free(out->toml);
        out->toml = NULL;
        return ADP_RENDER_UNRESOLVED;
    }
    return ADP_RENDER_OK;
}
