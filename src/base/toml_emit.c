/* toml emitter and toml-test tagged JSON — see toml.h. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/toml.h"
#include "base/toml_internal.h"
#include "base/xalloc.h"

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t toml_c_locale(void)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale;
}

void toml_format_float(double f, strbuf *out)
{
    if (isnan(f)) {
        sb_adds(out, "nan");
        return;
    }
    if (isinf(f)) {
        sb_adds(out, f < 0 ? "-inf" : "inf");
        return;
    }
    locale_t cl = toml_c_locale();
    locale_t old = cl ? uselocale(cl) : (locale_t)0;
    char buf[40];
    /* The shortest precision that reads back as the same double. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, f);
        char *e;
        double back = cl ? strtod_l(buf, &e, cl) : strtod(buf, &e);
        if (back == f)
            break;
    }
    if (cl)
        uselocale(old);
    sb_adds(out, buf);
    if (!strpbrk(buf, ".eEn"))
        sb_adds(out, ".0");
}

bool toml_is_bare_key(const char *s, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t need;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (need >= n)
        return 0;
    for (size_t k = 1; k <= need; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3f);
    }
    if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need + 1;
}

/* Shared by TOML basic strings and JSON strings: both escape the same set.
 * Bytes that are not UTF-8 become U+FFFD, since neither format can hold them. */
static void quote(const char *s, size_t n, strbuf *out)
{
    sb_addc(out, '"');
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n) {
            unsigned char c = (unsigned char)s[i];
            if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f || c >= 0x80)
                break;
            i++;
        }
        sb_add(out, s + start, i - start);
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            size_t l = utf8_len((const unsigned char *)s + i, n - i);
            if (l) {
                sb_add(out, s + i, l);
                i += l;
            } else {
                sb_adds(out, "\xef\xbf\xbd");
                i++;
            }
            continue;
        }
        switch (c) {
        case '"':
            sb_adds(out, "\\\"");
            break;
        case '\\':
            sb_adds(out, "\\\\");
            break;
        case '\b':
            sb_adds(out, "\\b");
            break;
        case '\t':
            sb_adds(out, "\\t");
            break;
        case '\n':
            sb_adds(out, "\\n");
            break;
        case '\f':
            sb_adds(out, "\\f");
            break;
        case '\r':
            sb_adds(out, "\\r");
            break;
        default:
            sb_addf(out, "\\u%04X", c);
            break;
        }
        i++;
    }
    sb_addc(out, '"');
}

void toml_quote_basic(const char *s, size_t n, strbuf *out)
{
    quote(s, n, out);
}

void toml_emit_keyn(const char *key, size_t len, strbuf *out)
{
    if (toml_is_bare_key(key, len))
        sb_add(out, key, len);
    else
        quote(key ? key : "", len, out);
}

void toml_emit_key(const char *key, strbuf *out)
{
    toml_emit_keyn(key, key ? strlen(key) : 0, out);
}

void toml_emit_value(const toml_value *v, strbuf *out)
{
    if (!v)
        return;
    switch (v->type) {
    case TOML_STRING:
        quote(v->u.str.s, v->u.str.len, out);
        break;
    case TOML_INTEGER:
        sb_addf(out, "%" PRId64, v->u.i);
        break;
    case TOML_FLOAT:
        toml_format_float(v->u.f, out);
        break;
    case TOML_BOOL:
        sb_adds(out, v->u.b ? "true" : "false");
        break;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        sb_adds(out, v->u.dt ? v->u.dt : "");
        break;
    case TOML_ARRAY:
        sb_addc(out, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                sb_adds(out, ", ");
            toml_emit_value(v->u.arr.items[i], out);
        }
        sb_addc(out, ']');
        break;
    case TOML_TABLE:
        if (!v->u.tab.n) {
            sb_adds(out, "{}");
            break;
        }
        sb_adds(out, "{ ");
        for (size_t i = 0; i < v->u.tab.n; i++) {
            if (i)
                sb_adds(out, ", ");
            toml_emit_keyn(v->u.tab.kv[i].key, v->u.tab.kv[i].keylen, out);
            sb_adds(out, " = ");
            toml_emit_value(v->u.tab.kv[i].val, out);
        }
        sb_adds(out, " }");
        break;
    }
}

/* Tables become [sections]; non-empty arrays made only of tables become
 * [[sections]]; everything else is written inline as key = value. */
static bool is_aot(const toml_value *v)
{
    if (v->type != TOML_ARRAY || !v->u.arr.n)
        return false;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (v->u.arr.items[i]->type != TOML_TABLE)
            return false;
    return true;
}

static bool is_section(const toml_value *v)
{
    return v->type == TOML_TABLE || is_aot(v);
}

static void emit_header(const strbuf *path, bool aot, strbuf *out)
{
    if (out->len)
        sb_addc(out, '\n');
    sb_adds(out, aot ? "[[" : "[");
    sb_add(out, path->buf, path->len);
    sb_adds(out, aot ? "]]\n" : "]\n");
}

enum header_mode { HDR_NONE, HDR_AUTO, HDR_FORCE };

static void emit_body(const toml_value *tab, strbuf *path, enum header_mode hdr, bool aot,
                      strbuf *out)
{
    size_t plain = 0;
    for (size_t i = 0; i < tab->u.tab.n; i++)
        if (!is_section(tab->u.tab.kv[i].val))
            plain++;
    /* A table holding only sub-tables is created by their headers; an empty
     * one (or an array-of-tables entry) needs its own. */
    if (hdr == HDR_FORCE || (hdr == HDR_AUTO && (plain || aot || tab->u.tab.n == 0)))
        emit_header(path, aot, out);
    for (size_t i = 0; i < tab->u.tab.n; i++) {
        const toml_kv *kv = &tab->u.tab.kv[i];
        if (is_section(kv->val))
            continue;
        toml_emit_keyn(kv->key, kv->keylen, out);
        sb_adds(out, " = ");
        toml_emit_value(kv->val, out);
        sb_addc(out, '\n');
    }
    for (size_t i = 0; i < tab->u.tab.n; i++) {
        const toml_kv *kv = &tab->u.tab.kv[i];
        if (!is_section(kv->val))
            continue;
        size_t keep = path->len;
        if (path->len)
            sb_addc(path, '.');
        toml_emit_keyn(kv->key, kv->keylen, path);
        if (kv->val->type == TOML_TABLE) {
            emit_body(kv->val, path, HDR_AUTO, false, out);
        } else {
            for (size_t j = 0; j < kv->val->u.arr.n; j++)
                emit_body(kv->val->u.arr.items[j], path, HDR_AUTO, true, out);
        }
        sb_setlen(path, keep);
    }
}

void toml_emit(const toml_value *root, strbuf *out)
{
    if (!root || root->type != TOML_TABLE)
        return;
    strbuf path = SB_INIT;
    emit_body(root, &path, HDR_NONE, false, out);
    sb_release(&path);
}

void toml_emit_section(const toml_value *tab, const char *const *path, size_t n, bool aot,
                       strbuf *out)
{
    strbuf p = SB_INIT;
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(&p, '.');
        toml_emit_key(path[i], &p);
    }
    emit_body(tab, &p, HDR_FORCE, aot, out);
    sb_release(&p);
}

/* ---- tagged JSON ----------------------------------------------------------- */

static void tagged(const toml_value *v, strbuf *out)
{
    switch (v->type) {
    case TOML_TABLE:
        sb_addc(out, '{');
        for (size_t i = 0; i < v->u.tab.n; i++) {
            if (i)
                sb_addc(out, ',');
            quote(v->u.tab.kv[i].key, v->u.tab.kv[i].keylen, out);
            sb_addc(out, ':');
            tagged(v->u.tab.kv[i].val, out);
        }
        sb_addc(out, '}');
        return;
    case TOML_ARRAY:
        sb_addc(out, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                sb_addc(out, ',');
            tagged(v->u.arr.items[i], out);
        }
        sb_addc(out, ']');
        return;
    default:
        break;
    }
    sb_adds(out, "{\"type\":\"");
    sb_adds(out, toml_type_name(v->type));
    sb_adds(out, "\",\"value\":");
    if (v->type == TOML_STRING) {
        quote(v->u.str.s, v->u.str.len, out);
    } else {
        strbuf t = SB_INIT;
        toml_emit_value(v, &t);
        quote(t.buf, t.len, out);
        sb_release(&t);
    }
    sb_addc(out, '}');
}

void toml_to_tagged_json(const toml_value *root, strbuf *out)
{
    if (root)
        tagged(root, out);
}
