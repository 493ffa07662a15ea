/* descriptor — one adapter descriptor from YAML (libyaml's document API).
 *
 * The walk is schema-driven: it only descends into keys the schema knows,
 * so its depth is fixed (≤ 4) whatever the input, and anchors/aliases can
 * only make it visit a known node again, never recurse. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/suggest.h"
#include "adapters/adapters.h"
#include "base/xalloc.h"

#define DESC_MAX_BYTES ((size_t)1 << 20)
#define DESC_MAX_ITEMS 256

struct yctx {
    const char *path;
    yaml_document_t *doc;
    struct as_err *err;
};

const char *adp_format_name(enum adp_format f)
{
    switch (f) {
    case ADP_FMT_JSON:
        return "json";
    case ADP_FMT_JSONC:
        return "jsonc";
    case ADP_FMT_TOML:
        return "toml";
    default:
        return "none";
    }
}

static int node_err(struct yctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int node_err(struct yctx *c, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    unsigned line = n ? (unsigned)n->start_mark.line + 1 : 0;
    unsigned col = n ? (unsigned)n->start_mark.column + 1 : 0;
    return as_err_at(c->err, c->path, line, col, "%s", msg);
}

static const char *closest(const char *w, const char *const *keys)
{
    return suggest_closest(w, keys, SUGGEST_NULL_TERMINATED);
}

static bool is_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(s, "null") == 0 || strcmp(s, "~") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static const char *scalar_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* Checks that n is a mapping whose keys are all scalars in allowed, without
 * duplicates. */
static int check_map(struct yctx *c, const yaml_node_t *n, const char *what,
                     const char *const *allowed)
{
    if (n->type != YAML_MAPPING_NODE)
        return node_err(c, n, "%s must be a mapping", what);
    yaml_node_pair_t *p0 = n->data.mapping.pairs.start;
    size_t np = (size_t)(n->data.mapping.pairs.top - p0);
    if (np > DESC_MAX_ITEMS)
        return node_err(c, n, "%s has more than %d keys", what, DESC_MAX_ITEMS);
    for (size_t i = 0; i < np; i++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p0[i].key);
        if (!k || k->type != YAML_SCALAR_NODE)
            return node_err(c, k ? k : n, "%s: keys must be plain strings", what);
        const char *ks = scalar_text(k);
        if (strlen(ks) != k->data.scalar.length)
            return node_err(c, k, "%s: key contains a NUL byte", what);
        bool ok = false;
        for (size_t a = 0; allowed[a]; a++)
            if (strcmp(allowed[a], ks) == 0)
                ok = true;
        if (!ok) {
            const char *dym = closest(ks, allowed);
            if (dym)
                return node_err(c, k, "unknown key '%s' in %s (did you mean '%s'?)", ks, what, dym);
            return node_err(c, k, "unknown key '%s' in %s", ks, what);
        }
        for (size_t j = 0; j < i; j++) {
            yaml_node_t *k2 = yaml_document_get_node(c->doc, p0[j].key);
            if (strcmp(scalar_text(k2), ks) == 0)
                return node_err(c, k, "duplicate key '%s' in %s", ks, what);
        }
    }
    return 0;
}

static yaml_node_t *get(struct yctx *c, const yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp(scalar_text(k), key) == 0)
            return yaml_document_get_node(c->doc, p->value);
    }
    return NULL;
}

/* A string value (absent/null leaves *out NULL). */
static int get_str(struct yctx *c, const yaml_node_t *map, const char *key, const char *what,
                   char **out)
{
    yaml_node_t *n = get(c, map, key);
    if (is_null(n))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return node_err(c, n, "%s.%s must be a string", what, key);
    if (strlen(scalar_text(n)) != n->data.scalar.length)
        return node_err(c, n, "%s.%s contains a NUL byte", what, key);
    free(*out);
    *out = xstrdup(scalar_text(n));
    return 0;
}

static int get_bool(struct yctx *c, const yaml_node_t *map, const char *key, const char *what,
                    bool *out)
{
    yaml_node_t *n = get(c, map, key);
    if (is_null(n))
        return 0;
    if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        const char *s = scalar_text(n);
        if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0) {
            *out = false;
            return 0;
        }
    }
    return node_err(c, n, "%s.%s must be true or false", what, key);
}

static int get_strlist(struct yctx *c, const yaml_node_t *map, const char *key, const char *what,
                       strvec *out)
{
    yaml_node_t *n = get(c, map, key);
    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return node_err(c, n, "%s.%s must be a list of strings", what, key);
    yaml_node_item_t *it = n->data.sequence.items.start;
    size_t ni = (size_t)(n->data.sequence.items.top - it);
    if (ni > DESC_MAX_ITEMS)
        return node_err(c, n, "%s.%s has more than %d items", what, key, DESC_MAX_ITEMS);
    for (size_t i = 0; i < ni; i++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, it[i]);
        if (!e || e->type != YAML_SCALAR_NODE || strlen(scalar_text(e)) != e->data.scalar.length)
            return node_err(c, e ? e : n, "%s.%s must be a list of strings", what, key);
        strvec_push(out, scalar_text(e));
    }
    return 0;
}

static int get_format(struct yctx *c, const yaml_node_t *map, const char *key, const char *what,
                      enum adp_format *out)
{
    yaml_node_t *n = get(c, map, key);
    if (is_null(n))
        return 0;
    if (n->type == YAML_SCALAR_NODE) {
        const char *s = scalar_text(n);
        if (strcmp(s, "json") == 0)
            *out = ADP_FMT_JSON;
        else if (strcmp(s, "jsonc") == 0)
            *out = ADP_FMT_JSONC;
        else if (strcmp(s, "toml") == 0)
            *out = ADP_FMT_TOML;
        else
            return node_err(c, n, "%s.%s must be json, jsonc or toml (got '%s')", what, key, s);
        return 0;
    }
    return node_err(c, n, "%s.%s must be json, jsonc or toml", what, key);
}

/* A path written for user scope: "~/…", "{config}/…" or absolute, no "..". */
static bool user_path_ok(const char *p)
{
    if (!(strncmp(p, "~/", 2) == 0 || strncmp(p, "{config}/", 9) == 0 || p[0] == '/'))
        return false;
    return strstr(p, "/../") == NULL && !(strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0);
}

/* A project-relative path: relative, no "..", "." or empty components. */
static bool project_path_ok(const char *p)
{
    if (!p[0] || p[0] == '/' || p[0] == '~' || p[0] == '{')
        return false;
    const char *s = p;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        s += n;
        if (*s == '/')
            s++;
    }
    return p[strlen(p) - 1] != '/';
}

static int check_path(struct yctx *c, const yaml_node_t *map, const char *key, const char *what,
                      const char *val, bool project)
{
    if (!val)
        return 0;
    if (project ? project_path_ok(val) : user_path_ok(val))
        return 0;
    return node_err(c, get(c, map, key), "%s.%s: %s", what, key,
                    project ? "a project path must be relative, without '..' or '.' components"
                            : "a user path must start with '~/', '{config}/' or '/' and "
                              "contain no '..'");
}

static bool id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
              ch == '-'))
            return false;
    }
    return true;
}

static int parse_mcp(struct yctx *c, const yaml_node_t *n, struct adp_desc *d)
{
    static const char *const keys[] = {
        "location",     "fields",      "transport",    "headers_as_subtable",  "command_array",
        "cwd_absolute", "secret_mode", "name_charset", "instructions_channel", NULL};
    static const char *const fkeys[] = {"url", "headers", "command", "args",
                                        "cwd", "env",     "tools",   NULL};
    static const char *const tkeys[] = {"key", "http_value", "stdio_value", NULL};
    struct adp_mcp *m = &d->mcp;
    if (check_map(c, n, "mcp", keys))
        return -1;
    if (get_str(c, n, "location", "mcp", &m->location))
        return -1;
    if (!m->location || !m->location[0])
        return node_err(c, n, "mcp.location is required (the key that holds the servers)");
    yaml_node_t *f = get(c, n, "fields");
    if (!is_null(f)) {
        if (check_map(c, f, "mcp.fields", fkeys) || get_str(c, f, "url", "mcp.fields", &m->f_url) ||
            get_str(c, f, "headers", "mcp.fields", &m->f_headers) ||
            get_str(c, f, "command", "mcp.fields", &m->f_command) ||
            get_str(c, f, "args", "mcp.fields", &m->f_args) ||
            get_str(c, f, "cwd", "mcp.fields", &m->f_cwd) ||
            get_str(c, f, "env", "mcp.fields", &m->f_env) ||
            get_str(c, f, "tools", "mcp.fields", &m->f_tools))
            return -1;
    }
    yaml_node_t *t = get(c, n, "transport");
    if (!is_null(t)) {
        if (check_map(c, t, "mcp.transport", tkeys) ||
            get_str(c, t, "key", "mcp.transport", &m->transport_key) ||
            get_str(c, t, "http_value", "mcp.transport", &m->transport_http) ||
            get_str(c, t, "stdio_value", "mcp.transport", &m->transport_stdio))
            return -1;
        if (!m->transport_key || !m->transport_http || !m->transport_stdio)
            return node_err(c, t, "mcp.transport needs key, http_value and stdio_value");
    }
    if (get_bool(c, n, "headers_as_subtable", "mcp", &m->headers_as_subtable) ||
        get_bool(c, n, "command_array", "mcp", &m->command_array) ||
        get_bool(c, n, "cwd_absolute", "mcp", &m->cwd_absolute) ||
        get_str(c, n, "secret_mode", "mcp", &m->secret_mode) ||
        get_str(c, n, "name_charset", "mcp", &m->name_charset) ||
        get_str(c, n, "instructions_channel", "mcp", &m->instructions_channel))
        return -1;
    if (!m->secret_mode)
        m->secret_mode = xstrdup("literal");
    /* literal is the only mode (docs/adapters.md): a `${VAR}` left for the
     * CLI to expand would need each CLI's own syntax and support in every
     * field, and the value in that CLI's environment; a descriptor asking
     * for it is refused rather than silently rendering literals. */
    if (strcmp(m->secret_mode, "passthrough") == 0)
        return node_err(c, get(c, n, "secret_mode"),
                        "mcp.secret_mode: passthrough is not supported — every adapter writes "
                        "resolved values (literal) into 0600 files the managed .gitignore block "
                        "lists; remove the key or set it to literal");
    if (strcmp(m->secret_mode, "literal") != 0)
        return node_err(c, get(c, n, "secret_mode"), "mcp.secret_mode must be literal");
    if (m->name_charset && strcmp(m->name_charset, "ascii-word-dash") != 0)
        return node_err(c, get(c, n, "name_charset"),
                        "mcp.name_charset must be ascii-word-dash (or absent)");
    if (!m->instructions_channel)
        m->instructions_channel = xstrdup("unconfirmed");
    if (strcmp(m->instructions_channel, "confirmed") != 0 &&
        strcmp(m->instructions_channel, "unconfirmed") != 0 &&
        strcmp(m->instructions_channel, "none") != 0)
        return node_err(c, get(c, n, "instructions_channel"),
                        "mcp.instructions_channel must be confirmed, unconfirmed or none");
    if (!m->f_url && !m->f_command)
        return node_err(c, n, "mcp.fields must map at least url or command");
    if (m->command_array && !m->f_command)
        return node_err(c, n, "mcp.command_array needs fields.command");
    if (m->cwd_absolute && !m->f_cwd)
        return node_err(c, n, "mcp.cwd_absolute needs fields.cwd");
    return 0;
}

static int parse_settings_fields(struct yctx *c, const yaml_node_t *n, struct adp_desc *d)
{
    static const char *const keys[] = {"key",   "type", "options", "label",
                                       "group", "help", "default", NULL};
    if (n->type != YAML_SEQUENCE_NODE)
        return node_err(c, n, "settings.fields must be a list");
    yaml_node_item_t *it = n->data.sequence.items.start;
    size_t ni = (size_t)(n->data.sequence.items.top - it);
    if (ni > DESC_MAX_ITEMS)
        return node_err(c, n, "settings.fields has more than %d items", DESC_MAX_ITEMS);
    for (size_t i = 0; i < ni; i++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, it[i]);
        if (!e)
            return node_err(c, n, "settings.fields: bad item");
        struct adp_setting_field sf = {0};
        int rc = check_map(c, e, "settings.fields[]", keys);
        if (!rc)
            rc = get_str(c, e, "key", "settings.fields[]", &sf.key) ||
                 get_str(c, e, "type", "settings.fields[]", &sf.type) ||
                 get_strlist(c, e, "options", "settings.fields[]", &sf.options) ||
                 get_str(c, e, "label", "settings.fields[]", &sf.label) ||
                 get_str(c, e, "group", "settings.fields[]", &sf.group) ||
                 get_str(c, e, "help", "settings.fields[]", &sf.help) ||
                 get_str(c, e, "default", "settings.fields[]", &sf.default_value);
        if (!rc && !sf.key)
            rc = node_err(c, e, "settings.fields[]: key is required");
        if (!rc && !sf.type)
            sf.type = xstrdup("string");
        if (!rc && strcmp(sf.type, "string") && strcmp(sf.type, "enum") &&
            strcmp(sf.type, "bool") && strcmp(sf.type, "number") && strcmp(sf.type, "object"))
            rc = node_err(c, get(c, e, "type"),
                          "settings.fields[]: type must be string, enum, "
                          "bool, number or object");
        vec_push(&d->settings_fields, sf);
        if (rc)
            return -1;
    }
    return 0;
}

/* Each config.path_env item is NAME or NAME=rel: an environment variable
 * name, and a relative path without "..". */
static int check_path_env(struct yctx *c, const yaml_node_t *n, const strvec *v)
{
    for (size_t i = 0; i < v->n; i++) {
        const char *s = v->v[i], *eq = strchr(s, '=');
        size_t nl = eq ? (size_t)(eq - s) : strlen(s);
        bool ok = nl > 0 && !isdigit((unsigned char)s[0]);
        for (size_t j = 0; ok && j < nl; j++)
            ok = isupper((unsigned char)s[j]) || isdigit((unsigned char)s[j]) || s[j] == '_';
        if (ok && eq)
            ok = eq[1] && eq[1] != '/' && !strstr(eq + 1, "..");
        if (!ok)
            return node_err(c, n,
                            "config.path_env items are NAME (the variable holds the file) or "
                            "NAME=relative/path (it holds a directory): got '%s'",
                            s);
    }
    return 0;
}

/* The CLI moves its file when one of these is set: follow the first that
 * holds an absolute path (a relative one would depend on the CLI's own
 * working directory, so it is not followed). */
static void apply_path_env(struct adp_desc *d)
{
    for (size_t i = 0; i < d->config_path_env.n; i++) {
        const char *s = d->config_path_env.v[i], *eq = strchr(s, '=');
        char *name = eq ? xstrndup(s, (size_t)(eq - s)) : xstrdup(s);
        const char *val = getenv(name);
        free(name);
        if (!val || val[0] != '/')
            continue;
        strbuf p = SB_INIT;
        sb_adds(&p, val);
        if (eq) {
            while (p.len > 1 && p.buf[p.len - 1] == '/')
                p.buf[--p.len] = '\0';
            sb_addf(&p, "/%s", eq + 1);
        }
        free(d->config_path);
        d->config_path = sb_detach(&p, NULL);
        return;
    }
}

/* guard: the host guard's hook file for this CLI (docs/adapters.md). The
 * file is in the user's home ("~/..."); a claude or flat shape edits the
 * object under key (default "hooks") for one to four events; a copilot or
 * plugin shape owns its whole file, so it has no key. */
static int parse_guard(struct yctx *c, const yaml_node_t *n, struct adp_desc *d)
{
    static const char *const keys[] = {"file",  "key",          "events", "protocol",
                                       "shape", "also_read_by", NULL};
    char *proto = NULL, *shape = NULL;
    int rc = -1;
    if (check_map(c, n, "guard", keys) || get_str(c, n, "file", "guard", &d->guard_file) ||
        get_str(c, n, "key", "guard", &d->guard_key) ||
        get_strlist(c, n, "events", "guard", &d->guard_events) ||
        get_str(c, n, "protocol", "guard", &proto) || get_str(c, n, "shape", "guard", &shape) ||
        get_strlist(c, n, "also_read_by", "guard", &d->guard_also_read_by) ||
        check_path(c, n, "file", "guard", d->guard_file, false))
        goto out;
    if (!d->guard_file || !proto || !shape) {
        node_err(c, n, "guard needs file, protocol and shape");
        goto out;
    }
    if (strncmp(d->guard_file, "~/", 2) != 0) {
        node_err(c, get(c, n, "file"), "guard.file must start with '~/' (a file in your home)");
        goto out;
    }
    if (guard_proto_parse(proto, &d->guard_proto) < 0) {
        strbuf known = SB_INIT;
        for (int p = 0; p < GUARD_P_COUNT; p++)
            sb_addf(&known, "%s%s", p ? ", " : "", guard_proto_name((enum guard_proto)p));
        node_err(c, get(c, n, "protocol"), "guard.protocol must be one of %s (got '%s')", known.buf,
                 proto);
        sb_release(&known);
        goto out;
    }
    if (guard_wire_shape_parse(shape, &d->guard_shape) < 0) {
        node_err(c, get(c, n, "shape"),
                 "guard.shape must be claude, flat, copilot or plugin (got '%s')", shape);
        goto out;
    }
    bool edits = d->guard_shape == GUARD_W_CLAUDE || d->guard_shape == GUARD_W_FLAT;
    if (!edits && d->guard_key) {
        node_err(c, get(c, n, "key"), "guard.key: a %s shape owns its whole file (no key)", shape);
        goto out;
    }
    if (edits && !d->guard_key)
        d->guard_key = xstrdup("hooks");
    if (edits && d->guard_events.n == 0) {
        node_err(c, n, "guard.events: a %s shape needs the event(s) to hook", shape);
        goto out;
    }
    if (d->guard_events.n > GUARD_WIRE_EVENTS) {
        node_err(c, get(c, n, "events"), "guard.events has more than %d events", GUARD_WIRE_EVENTS);
        goto out;
    }
    for (size_t i = 0; i < d->guard_also_read_by.n; i++)
        if (!id_ok(d->guard_also_read_by.v[i])) {
            node_err(c, get(c, n, "also_read_by"), "guard.also_read_by: '%s' is not an adapter id",
                     d->guard_also_read_by.v[i]);
            goto out;
        }
    d->has_guard = true;
    rc = 0;
out:
    free(proto);
    free(shape);
    return rc;
}

static int parse_root(struct yctx *c, const yaml_node_t *root, struct adp_desc *d)
{
    static const char *const keys[] = {
        "id",           "display", "detect",   "config",     "project",  "mcp",   "skills",
        "instructions", "hooks",   "settings", "extensions", "headless", "guard", NULL};
    static const char *const detect_k[] = {"bin", "config", NULL};
    static const char *const config_k[] = {"path", "format", "path_env", NULL};
    static const char *const project_k[] = {"config", "format", NULL};
    static const char *const skills_k[] = {"dir", "project_dir", "strategy", NULL};
    static const char *const instr_k[] = {"global", "project", NULL};
    static const char *const hooks_k[] = {"format", "global", "project", "key", "shape", NULL};
    static const char *const settings_k[] = {"format",     "global", "project", "model_key",
                                             "effort_key", "fields", NULL};
    static const char *const ext_k[] = {"dir", "project_dir", NULL};
    static const char *const headless_k[] = {"args", "mcp_injection", NULL};
    static const char *const inj_k[] = {"args", NULL};

    if (check_map(c, root, "the descriptor", keys))
        return -1;
    if (get_str(c, root, "id", "descriptor", &d->id) ||
        get_str(c, root, "display", "descriptor", &d->display))
        return -1;
    if (!d->id)
        return node_err(c, root, "the descriptor needs an 'id' (e.g. id: my-cli)");
    if (!id_ok(d->id))
        return node_err(c, get(c, root, "id"), "id '%s' must match ^[a-z0-9][a-z0-9._-]{0,63}$",
                        d->id);
    if (!d->display || !d->display[0])
        return node_err(c, root, "the descriptor needs a 'display' name (e.g. display: My CLI)");

    yaml_node_t *n;
    if (!is_null(n = get(c, root, "detect"))) {
        if (check_map(c, n, "detect", detect_k) || get_str(c, n, "bin", "detect", &d->detect_bin) ||
            get_str(c, n, "config", "detect", &d->detect_config) ||
            check_path(c, n, "config", "detect", d->detect_config, false))
            return -1;
        if (d->detect_bin && (!d->detect_bin[0] || strchr(d->detect_bin, '/')))
            return node_err(c, get(c, n, "bin"), "detect.bin must be a bare program name");
    }
    if (!is_null(n = get(c, root, "config"))) {
        if (check_map(c, n, "config", config_k) ||
            get_str(c, n, "path", "config", &d->config_path) ||
            get_format(c, n, "format", "config", &d->config_format) ||
            check_path(c, n, "path", "config", d->config_path, false) ||
            get_strlist(c, n, "path_env", "config", &d->config_path_env) ||
            check_path_env(c, get(c, n, "path_env"), &d->config_path_env))
            return -1;
        if (!d->config_path)
            return node_err(c, n, "config.path is required");
        apply_path_env(d);
        if (d->config_format == ADP_FMT_NONE)
            d->config_format = ADP_FMT_JSON;
    }
    if (!is_null(n = get(c, root, "project"))) {
        if (check_map(c, n, "project", project_k) ||
            get_str(c, n, "config", "project", &d->project_config) ||
            get_format(c, n, "format", "project", &d->project_format) ||
            check_path(c, n, "config", "project", d->project_config, true))
            return -1;
        if (!d->project_config)
            return node_err(c, n, "project.config is required");
        if (d->project_format == ADP_FMT_NONE)
            d->project_format = d->config_format ? d->config_format : ADP_FMT_JSON;
    }
    if (!is_null(n = get(c, root, "mcp"))) {
        if (parse_mcp(c, n, d))
            return -1;
        d->has_mcp = true;
        if (!d->config_path && !d->project_config)
            return node_err(c, n, "an mcp block needs config.path or project.config");
        if (d->mcp.headers_as_subtable && d->config_format != ADP_FMT_TOML &&
            d->project_format != ADP_FMT_TOML)
            return node_err(c, n, "mcp.headers_as_subtable applies to TOML configs only");
    }
    if (!is_null(n = get(c, root, "skills"))) {
        if (check_map(c, n, "skills", skills_k) || get_str(c, n, "dir", "skills", &d->skills_dir) ||
            get_str(c, n, "project_dir", "skills", &d->skills_project_dir) ||
            get_str(c, n, "strategy", "skills", &d->skills_strategy) ||
            check_path(c, n, "dir", "skills", d->skills_dir, false) ||
            check_path(c, n, "project_dir", "skills", d->skills_project_dir, true))
            return -1;
        if (!d->skills_strategy)
            d->skills_strategy = xstrdup("symlink");
        if (strcmp(d->skills_strategy, "symlink") && strcmp(d->skills_strategy, "copy"))
            return node_err(c, get(c, n, "strategy"), "skills.strategy must be symlink or copy");
    }
    if (!is_null(n = get(c, root, "instructions"))) {
        if (check_map(c, n, "instructions", instr_k) ||
            get_str(c, n, "global", "instructions", &d->instr_global) ||
            get_str(c, n, "project", "instructions", &d->instr_project) ||
            check_path(c, n, "global", "instructions", d->instr_global, false) ||
            check_path(c, n, "project", "instructions", d->instr_project, true))
            return -1;
    }
    if (!is_null(n = get(c, root, "hooks"))) {
        if (check_map(c, n, "hooks", hooks_k) ||
            get_format(c, n, "format", "hooks", &d->hooks_format) ||
            get_str(c, n, "global", "hooks", &d->hooks_global) ||
            get_str(c, n, "project", "hooks", &d->hooks_project) ||
            get_str(c, n, "key", "hooks", &d->hooks_key) ||
            get_str(c, n, "shape", "hooks", &d->hooks_shape) ||
            check_path(c, n, "global", "hooks", d->hooks_global, false) ||
            check_path(c, n, "project", "hooks", d->hooks_project, true))
            return -1;
        if (d->hooks_format == ADP_FMT_NONE)
            d->hooks_format = ADP_FMT_JSON;
        if (!d->hooks_key)
            d->hooks_key = xstrdup("hooks");
        if (!d->hooks_shape)
            d->hooks_shape = xstrdup("claude");
        if (strcmp(d->hooks_shape, "claude") != 0)
            return node_err(c, get(c, n, "shape"), "hooks.shape must be claude");
    }
    if (!is_null(n = get(c, root, "settings"))) {
        if (check_map(c, n, "settings", settings_k) ||
            get_format(c, n, "format", "settings", &d->settings_format) ||
            get_str(c, n, "global", "settings", &d->settings_global) ||
            get_str(c, n, "project", "settings", &d->settings_project) ||
            get_str(c, n, "model_key", "settings", &d->settings_model_key) ||
            get_str(c, n, "effort_key", "settings", &d->settings_effort_key) ||
            check_path(c, n, "global", "settings", d->settings_global, false) ||
            check_path(c, n, "project", "settings", d->settings_project, true))
            return -1;
        if (d->settings_format == ADP_FMT_NONE)
            d->settings_format = ADP_FMT_JSON;
        yaml_node_t *f = get(c, n, "fields");
        if (!is_null(f) && parse_settings_fields(c, f, d))
            return -1;
    }
    if (!is_null(n = get(c, root, "extensions"))) {
        if (check_map(c, n, "extensions", ext_k) ||
            get_str(c, n, "dir", "extensions", &d->ext_dir) ||
            get_str(c, n, "project_dir", "extensions", &d->ext_project_dir) ||
            check_path(c, n, "dir", "extensions", d->ext_dir, false) ||
            check_path(c, n, "project_dir", "extensions", d->ext_project_dir, true))
            return -1;
    }
    if (!is_null(n = get(c, root, "headless"))) {
        if (check_map(c, n, "headless", headless_k) ||
            get_strlist(c, n, "args", "headless", &d->headless_args))
            return -1;
        yaml_node_t *inj = get(c, n, "mcp_injection");
        if (!is_null(inj) &&
            (check_map(c, inj, "headless.mcp_injection", inj_k) ||
             get_strlist(c, inj, "args", "headless.mcp_injection", &d->mcp_injection_args)))
            return -1;
    }
    if (!is_null(n = get(c, root, "guard")) && parse_guard(c, n, d))
        return -1;
    return 0;
}

struct adp_desc *adp_desc_parse(const char *path, const char *text, size_t len, struct as_err *err)
{
    if (len > DESC_MAX_BYTES) {
        as_err_set(err, "%s: exceeds the %zu-byte limit", path, DESC_MAX_BYTES);
        return NULL;
    }
    if (memchr(text, '\0', len)) {
        as_err_set(err, "%s: contains a NUL byte (not a YAML text file)", path);
        return NULL;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        as_err_set(err, "%s: cannot initialize the YAML parser", path);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
        const char *prob = parser.problem ? parser.problem : "invalid YAML";
        yaml_mark_t mk = parser.problem_mark;
        if (parser.context)
            as_err_at(err, path, (unsigned)mk.line + 1, (unsigned)mk.column + 1, "%s %s", prob,
                      parser.context);
        else
            as_err_at(err, path, (unsigned)mk.line + 1, (unsigned)mk.column + 1, "%s", prob);
        yaml_parser_delete(&parser);
        return NULL;
    }
    struct adp_desc *d = xcalloc(1, sizeof *d);
    struct yctx c = {path, &doc, err};
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        rc = as_err_at(err, path, 1, 1, "empty descriptor (needs at least id and display)");
    } else {
        rc = parse_root(&c, root, d);
        if (rc == 0) {
            /* A second document would be silently ignored otherwise. */
            yaml_document_t doc2;
            if (!yaml_parser_load(&parser, &doc2)) {
                yaml_mark_t mk = parser.problem_mark;
                rc = as_err_at(err, path, (unsigned)mk.line + 1, (unsigned)mk.column + 1, "%s",
                               parser.problem ? parser.problem : "invalid YAML");
            } else {
                yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
                if (r2)
                    rc = as_err_at(err, path, (unsigned)r2->start_mark.line + 1,
                                   (unsigned)r2->start_mark.column + 1,
                                   "more than one YAML document in a descriptor");
                yaml_document_delete(&doc2);
            }
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc) {
        adp_desc_free(d);
        return NULL;
    }
    d->source = xstrdup(path);
    return d;
}

void adp_desc_free(struct adp_desc *d)
{
    if (!d)
        return;
    char **strs[] = {&d->id,
                     &d->display,
                     &d->source,
                     &d->detect_bin,
                     &d->detect_config,
                     &d->config_path,
                     &d->project_config,
                     &d->mcp.location,
                     &d->mcp.f_url,
                     &d->mcp.f_headers,
                     &d->mcp.f_command,
                     &d->mcp.f_args,
                     &d->mcp.f_cwd,
                     &d->mcp.f_env,
                     &d->mcp.f_tools,
                     &d->mcp.transport_key,
                     &d->mcp.transport_http,
                     &d->mcp.transport_stdio,
                     &d->mcp.secret_mode,
                     &d->mcp.name_charset,
                     &d->mcp.instructions_channel,
                     &d->skills_dir,
                     &d->skills_project_dir,
                     &d->skills_strategy,
                     &d->instr_global,
                     &d->instr_project,
                     &d->hooks_global,
                     &d->hooks_project,
                     &d->hooks_key,
                     &d->hooks_shape,
                     &d->settings_global,
                     &d->settings_project,
                     &d->settings_model_key,
                     &d->settings_effort_key,
                     &d->ext_dir,
                     &d->ext_project_dir,
                     &d->guard_file,
                     &d->guard_key};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(*strs[i]);
    for (size_t i = 0; i < d->settings_fields.n; i++) {
        struct adp_setting_field *f = &d->settings_fields.v[i];
        free(f->key);
        free(f->type);
        strvec_clear(&f->options);
        free(f->label);
        free(f->group);
        free(f->help);
        free(f->default_value);
    }
    vec_free(&d->settings_fields);
    strvec_clear(&d->headless_args);
    strvec_clear(&d->mcp_injection_args);
    strvec_clear(&d->config_path_env);
    strvec_clear(&d->guard_events);
    strvec_clear(&d->guard_also_read_by);
    free(d);
}
