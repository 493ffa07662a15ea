/* ${REF} grammar: see ref.h for the rules; this is a flat byte scan. */
#include "bundle/ref.h"

#include <stdlib.h>
#include <string.h>

static bool name_start(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(unsigned char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

bool ref_name_valid(const char *name)
{
    if (!name || !name_start((unsigned char)name[0]))
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!name_char((unsigned char)*p))
            return false;
    return true;
}

/* If s[i..] starts a valid reference, returns its total length ("${NAME}")
 * and the name's span; else 0. */
static size_t ref_at(const char *s, size_t len, size_t i, size_t *name_off, size_t *name_len)
{
    if (i + 1 >= len || s[i] != '$' || s[i + 1] != '{')
        return 0;
    size_t j = i + 2;
    if (j >= len || !name_start((unsigned char)s[j]))
        return 0;
    while (j < len && name_char((unsigned char)s[j]))
        j++;
    if (j >= len || s[j] != '}')
        return 0;
    *name_off = i + 2;
    *name_len = j - (i + 2);
    return j + 1 - i;
}

void ref_scan(const char *s, size_t len, strvec *out)
{
    size_t i = 0;
    while (i < len) {
        size_t off, n;
        size_t total = ref_at(s, len, i, &off, &n);
        if (total) {
            strvec_push_take(out, xstrndup(s + off, n));
            i += total;
        } else {
            /* An invalid "${…}" is rescanned from its interior: advance one
             * byte at a time, so "${A:-${B}}" still finds B. */
            i++;
        }
    }
}

void ref_collect(const char *s, strvec *out)
{
    if (!s)
        return;
    strvec found = STRVEC_INIT;
    ref_scan(s, strlen(s), &found);
    for (size_t i = 0; i < found.n; i++)
        if (strvec_find(out, found.v[i]) < 0)
            strvec_push(out, found.v[i]);
    strvec_clear(&found);
}

bool ref_has_ref(const char *s)
{
    if (!s)
        return false;
    size_t len = strlen(s);
    for (size_t i = 0; i < len; i++) {
        size_t off, n;
        if (ref_at(s, len, i, &off, &n))
            return true;
    }
    return false;
}

static void collect_toml_strings(const toml_value *v, strvec *out)
{
    if (!v)
        return;
    /* Iterative over arrays/tables would need a stack; extra tables are
     * shallow and already depth-bounded by the parser, so recursion is fine. */
    switch (v->type) {
    case TOML_STRING: {
        strvec found = STRVEC_INIT;
        ref_scan(v->u.str.s, v->u.str.len, &found);
        for (size_t i = 0; i < found.n; i++)
            if (strvec_find(out, found.v[i]) < 0)
                strvec_push(out, found.v[i]);
        strvec_clear(&found);
        break;
    }
    case TOML_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            collect_toml_strings(v->u.arr.items[i], out);
        break;
    case TOML_TABLE:
        for (size_t i = 0; i < v->u.tab.n; i++)
            collect_toml_strings(v->u.tab.kv[i].val, out);
        break;
    default:
        break;
    }
}

void ref_server_refs(const struct mf_server *s, strvec *out)
{
    ref_collect(s->url, out);
    ref_collect(s->command, out);
    for (size_t i = 0; i < s->args.n; i++)
        ref_collect(s->args.v[i], out);
    ref_collect(s->cwd, out);
    for (size_t i = 0; i < s->headers.n; i++)
        ref_collect(s->headers.v[i].value, out);
    for (size_t i = 0; i < s->env.n; i++)
        ref_collect(s->env.v[i].value, out);
    collect_toml_strings(s->extra, out);
}

void ref_manifest_refs(const struct manifest *m, strvec *out)
{
    strvec_clear(out);
    for (size_t i = 0; i < m->servers.n; i++)
        ref_server_refs(&m->servers.v[i], out);
    for (size_t i = 0; i < m->hooks.n; i++) {
        ref_collect(m->hooks.v[i].command, out);
        for (size_t j = 0; j < m->hooks.v[i].args.n; j++)
            ref_collect(m->hooks.v[i].args.v[j], out);
    }
    strvec_sort(out);
}

int ref_expand(const char *s, ref_lookup_fn lookup, void *ctx, strbuf *out, struct as_err *err)
{
    size_t len = strlen(s);
    size_t i = 0, lit = 0;
    while (i < len) {
        size_t off, n;
        size_t total = ref_at(s, len, i, &off, &n);
        if (!total) {
            i++;
            continue;
        }
        sb_add(out, s + lit, i - lit);
        char *name = xstrndup(s + off, n);
        int rc = lookup(ctx, name, out, err);
        free(name);
        if (rc < 0)
            return -1;
        i += total;
        lit = i;
    }
    sb_add(out, s + lit, len - lit);
    return 0;
}

bool ref_url_host_known(const char *url)
{
    if (!url)
        return false;
    const char *p = strstr(url, "://");
    if (!p)
        return false;
    const char *a = p + 3;
    size_t n = strcspn(a, "/?#");
    if (n == 0)
        return false;
    for (size_t i = 0; i + 1 < n; i++)
        if (a[i] == '$' && a[i + 1] == '{')
            return false;
    return true;
}
