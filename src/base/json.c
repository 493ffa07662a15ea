/* json — see json.h. The canonical writer is our own: its
 * bytes feed digests, so they must not change with a jansson upgrade. */
#include "base/utf8.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/xalloc.h"

/* ---- canonical form ------------------------------------------------------ */

/* Which bytes json_escape stops at: 1 always, the other bits only under the
 * flag of the same value (JSON_ESC_DEL, JSON_ESC_FIX_UTF8). One load and one
 * test per byte: the audit encoder calls this for every field of every
 * brokered call, and escaped runs are copied whole (one sb_add per run). */
static const unsigned char esc_class[256] = {
    [0 ... 0x1f] = 1,
    ['"'] = 1,
    ['\\'] = 1,
    [0x7f] = JSON_ESC_DEL,
    [0x80 ... 0xff] = JSON_ESC_FIX_UTF8,
};

void json_escape(const char *s, size_t len, unsigned flags, strbuf *out)
{
    const char *hexd = (flags & JSON_ESC_UPPER_HEX) ? "0123456789ABCDEF" : "0123456789abcdef";
    const unsigned mask = 1u | (flags & (JSON_ESC_DEL | JSON_ESC_FIX_UTF8));
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        unsigned k = esc_class[c] & mask;
        if (!k) {
            i++;
            continue;
        }
        if (k == JSON_ESC_FIX_UTF8) {
            unsigned cp;
            size_t n = utf8_decode(p + i, len - i, &cp);
            if (n) {
                i += n;
                continue;
            }
            sb_add(out, s + run, i - run);
            sb_adds(out, "\xEF\xBF\xBD");
            run = ++i;
            continue;
        }
        sb_add(out, s + run, i - run);
        run = ++i;
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
        case '\f':
            sb_adds(out, "\\f");
            break;
        case '\n':
            sb_adds(out, "\\n");
            break;
        case '\r':
            sb_adds(out, "\\r");
            break;
        case '\t':
            sb_adds(out, "\\t");
            break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};
            sb_add(out, u, sizeof u);
        }
        }
    }
    sb_add(out, s + run, len - run);
}

/* Canonical strings escape only what JSON requires; '/' and non-ASCII stay
 * literal. jansson only holds invalid UTF-8 when a caller used a _nocheck
 * constructor; such bytes become U+FFFD so the output is always valid JSON. */
static void canon_string(const char *s, size_t len, strbuf *out)
{
    sb_addc(out, '"');
    json_escape(s, len, JSON_ESC_FIX_UTF8, out);
    sb_addc(out, '"');
}

/* The shortest digit string that reads back as the same double, laid out
 * as ECMAScript's Number-to-string does (fixed notation for exponents -6..20,
 * otherwise d.ddde+N), with ".0" added to an integral value so a real stays a
 * real. Non-finite values cannot be JSON (jansson refuses to build them); a
 * defensive "null" beats undefined output. */
static void canon_real(double d, strbuf *out)
{
    if (!isfinite(d)) {
        sb_adds(out, "null");
        return;
    }
    if (d == 0) {
        sb_adds(out, signbit(d) ? "-0.0" : "0.0");
        return;
    }
    char buf[48];
    int prec;
    for (prec = 1; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    /* buf: [-]D[.DDD]e[+-]XX -> digits and decimal exponent */
    const char *p = buf;
    if (*p == '-') {
        sb_addc(out, '-');
        p++;
    }
    char digits[24];
    int k = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && k < (int)sizeof digits - 1)
            digits[k++] = *p;
    while (k > 1 && digits[k - 1] == '0')
        k--;
    digits[k] = '\0';
    int n = atoi(p + 1) + 1; /* value = 0.DIGITS x 10^n */
    if (k <= n && n <= 21) {
        sb_add(out, digits, (size_t)k);
        sb_addchars(out, '0', (size_t)(n - k));
        sb_adds(out, ".0");
    } else if (0 < n && n <= 21) {
        sb_add(out, digits, (size_t)n);
        sb_addc(out, '.');
        sb_adds(out, digits + n);
    } else if (-6 < n && n <= 0) {
        sb_adds(out, "0.");
        sb_addchars(out, '0', (size_t)-n);
        sb_adds(out, digits);
    } else {
        sb_addc(out, digits[0]);
        if (k > 1) {
            sb_addc(out, '.');
            sb_adds(out, digits + 1);
        }
        sb_addf(out, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
}

struct keyent {
    const char *key;
    size_t len;
    json_t *val;
};

static int key_cmp(const void *a, const void *b)
{
    const struct keyent *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

void json_canonical(const json_t *v, strbuf *out)
{
    if (!v) {
        sb_adds(out, "null");
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(v);
        struct keyent *k = xcalloc(n ? n : 1, sizeof *k);
        size_t i = 0;
        const char *key;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach((json_t *)v, key, klen, val)
        {
            if (i < n)
                k[i++] = (struct keyent){key, klen, val};
        }
        qsort(k, i, sizeof *k, key_cmp);
        sb_addc(out, '{');
        for (size_t j = 0; j < i; j++) {
            if (j)
                sb_addc(out, ',');
            canon_string(k[j].key, k[j].len, out);
            sb_addc(out, ':');
            json_canonical(k[j].val, out);
        }
        sb_addc(out, '}');
        free(k);
        break;
    }
    case JSON_ARRAY:
        sb_addc(out, '[');
        for (size_t j = 0; j < json_array_size(v); j++) {
            if (j)
                sb_addc(out, ',');
            json_canonical(json_array_get(v, j), out);
        }
        sb_addc(out, ']');
        break;
    case JSON_STRING:
        canon_string(json_string_value(v), json_string_length(v), out);
        break;
    case JSON_INTEGER:
        sb_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        canon_real(json_real_value(v), out);
        break;
    case JSON_TRUE:
        sb_adds(out, "true");
        break;
    case JSON_FALSE:
        sb_adds(out, "false");
        break;
    case JSON_NULL:
        sb_adds(out, "null");
        break;
    }
}

/* ---- parsing and dumping ------------------------------------------------- */

json_t *json_parse(const char *path, const char *text, size_t len, struct as_err *err)
{
    json_error_t je;
    /* Duplicate keys are refused: two readers could otherwise disagree on
     * which value counts. */
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        unsigned line = je.line > 0 ? (unsigned)je.line : 0;
        unsigned col = je.column > 0 ? (unsigned)je.column : 0;
        if (!line) /* e.g. empty input: still say which file */
            line = 1;
        size_t at;
        const char *why = json_error_code(&je) == json_error_duplicate_key
                              ? NULL
                              : json_unrepresentable(text, len, &at);
        if (why) {
            /* jansson's own words name its flags ("without JSON_ALLOW_NUL")
             * and point past the value; say what is wrong, where it starts. */
            json_line_col(text, len, at, &line, &col);
            as_err_at(err, path ? path : "<json>", line, col, "%s, which agentstack refuses", why);
        } else {
            as_err_at(err, path ? path : "<json>", line, col, "%s", je.text);
        }
    }
    return v;
}

void json_line_col(const char *s, size_t n, size_t at, unsigned *line, unsigned *col)
{
    unsigned l = 1, c = 1;
    for (size_t k = 0; k < at && k < n; k++) {
        if (s[k] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)s[k] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

json_t *json_load_path(const char *path, size_t max_bytes, struct as_err *err)
{
    strbuf sb = SB_INIT;
    if (fs_read_file(path, max_bytes, 0, &sb, err) != 0)
        return NULL;
    json_t *v = json_parse(path, sb.buf, sb.len, err);
    sb_release(&sb);
    return v;
}

static int dump_cb(const char *buf, size_t size, void *data)
{
    sb_add(data, buf, size);
    return 0;
}

void json_dump_compact(const json_t *v, strbuf *out)
{
    if (v)
        json_dump_callback(v, dump_cb, out, JSON_COMPACT | JSON_ENCODE_ANY);
}

void json_dump_pretty(const json_t *v, strbuf *out)
{
    if (v)
        json_dump_callback(v, dump_cb, out, JSON_INDENT(2) | JSON_ENCODE_ANY);
    sb_addc(out, '\n');
}

/* ---- getters ------------------------------------------------------------- */

const char *json_get_str(const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

long long json_get_int(const json_t *obj, const char *key, long long def)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

int json_get_bool(const json_t *obj, const char *key, int def)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_boolean(v) ? json_is_true(v) : def;
}

/* ---- TOML to JSON -------------------------------------------------------- */

static json_t *str_value(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    return j ? j : json_stringn_nocheck(s, len); /* the TOML parser checked UTF-8 */
}

static json_t *from_toml(const toml_value *v, int depth)
{
    if (!v || depth > TOML_MAX_DEPTH + 1)
        return json_null();
    switch (v->type) {
    case TOML_TABLE: {
        json_t *o = json_object();
        for (size_t i = 0; i < v->u.tab.n; i++) {
            const toml_kv *kv = &v->u.tab.kv[i];
            json_t *c = from_toml(kv->val, depth + 1);
            if (json_object_set_new(o, kv->key, c) != 0)
                json_object_set_new_nocheck(o, kv->key, c);
        }
        return o;
    }
    case TOML_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; i < v->u.arr.n; i++)
            json_array_append_new(a, from_toml(v->u.arr.items[i], depth + 1));
        return a;
    }
    case TOML_STRING:
        return str_value(v->u.str.s, v->u.str.len);
    case TOML_INTEGER:
        return json_integer((json_int_t)v->u.i);
    case TOML_FLOAT:
        /* JSON has no inf/nan: keep TOML's spelling as a string. */
        if (isnan(v->u.f))
            return json_string("nan");
        if (isinf(v->u.f))
            return json_string(v->u.f > 0 ? "inf" : "-inf");
        return json_real(v->u.f);
    case TOML_BOOL:
        return json_boolean(v->u.b);
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        return json_string(v->u.dt ? v->u.dt : "");
    }
    return json_null();
}

json_t *json_from_toml(const toml_value *v)
{
    return from_toml(v, 0);
}
