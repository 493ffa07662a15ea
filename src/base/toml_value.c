/* toml values: building, reading, cloning, comparing — see toml.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/toml.h"
#include "base/toml_internal.h"
#include "base/xalloc.h"

/* ---- key index ----------------------------------------------------------- */

static uint32_t key_hash(const char *s, size_t n)
{
    /* FNV-1a: keys are short and attacker-chosen keys only cost probes, not
     * correctness; tables big enough to matter are bounded by the input cap. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

void toml_index_drop(toml_value *tab)
{
    if (tab->priv_index) {
        free(tab->priv_index->slot);
        free(tab->priv_index);
        tab->priv_index = NULL;
    }
}

static void index_put(struct toml_index *ix, const toml_value *tab, size_t i)
{
    const toml_kv *kv = &tab->u.tab.kv[i];
    uint32_t hv = key_hash(kv->key, kv->keylen);
    size_t m = ix->cap - 1, h = hv & m;
    while (ix->slot[h].idx1)
        h = (h + 1) & m;
    ix->slot[h].idx1 = (uint32_t)(i + 1);
    ix->slot[h].hash = hv;
    ix->n++;
}

static void index_build(toml_value *tab)
{
    toml_index_drop(tab);
    struct toml_index *ix = xcalloc(1, sizeof *ix);
    ix->cap = 16;
    while (ix->cap < tab->u.tab.n * 2 + 2)
        ix->cap *= 2;
    ix->slot = xcalloc(ix->cap, sizeof *ix->slot);
    for (size_t i = 0; i < tab->u.tab.n; i++)
        index_put(ix, tab, i);
    tab->priv_index = ix;
}

size_t toml_find_index(const toml_value *tab, const char *key, size_t len)
{
    if (!tab || tab->type != TOML_TABLE)
        return (size_t)-1;
    size_t n = tab->u.tab.n;
    const toml_kv *kv = tab->u.tab.kv;
    if (n < TOML_INDEX_MIN || n >= UINT32_MAX) {
        for (size_t i = 0; i < n; i++)
            if (kv[i].keylen == len && memcmp(kv[i].key, key, len) == 0)
                return i;
        return (size_t)-1;
    }
    /* The index is a cache: rebuilt whenever it has fallen out of step. */
    toml_value *mt = (toml_value *)tab;
    if (!mt->priv_index || mt->priv_index->n != n)
        index_build(mt);
    struct toml_index *ix = mt->priv_index;
    uint32_t hv = key_hash(key, len);
    size_t m = ix->cap - 1, h = hv & m;
    for (; ix->slot[h].idx1; h = (h + 1) & m) {
        size_t i = ix->slot[h].idx1 - 1;
        if (ix->slot[h].hash == hv && i < n && kv[i].keylen == len &&
            memcmp(kv[i].key, key, len) == 0)
            return i;
    }
    return (size_t)-1;
}

size_t toml_table_append(toml_value *tab, char *key, size_t keylen, toml_value *v, unsigned line,
                         unsigned col)
{
    tab->u.tab.kv = xgrow(tab->u.tab.kv, &tab->u.tab.cap, tab->u.tab.n + 1, sizeof(toml_kv));
    size_t i = tab->u.tab.n++;
    tab->u.tab.kv[i] = (toml_kv){.key = key, .line = line, .col = col, .val = v, .keylen = keylen};
    struct toml_index *ix = tab->priv_index;
    if (ix && ix->n == i && i + 1 < UINT32_MAX) {
        if ((i + 1) * 2 + 2 > ix->cap)
            index_build(tab);
        else
            index_put(ix, tab, i);
    }
    return i;
}

/* ---- free ---------------------------------------------------------------- */

void toml_free(toml_value *v)
{
    if (!v)
        return;
    switch (v->type) {
    case TOML_TABLE:
        for (size_t i = 0; i < v->u.tab.n; i++) {
            free(v->u.tab.kv[i].key);
            toml_free(v->u.tab.kv[i].val);
        }
        free(v->u.tab.kv);
        toml_index_drop(v);
        break;
    case TOML_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            toml_free(v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case TOML_STRING:
        free(v->u.str.s);
        break;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        free(v->u.dt);
        break;
    default:
        break;
    }
    free(v);
}

/* ---- reading ------------------------------------------------------------- */

toml_value *toml_get(const toml_value *tab, const char *key)
{
    const toml_kv *kv = toml_get_kv(tab, key);
    return kv ? kv->val : NULL;
}

const toml_kv *toml_get_kv(const toml_value *tab, const char *key)
{
    if (!key)
        return NULL;
    size_t i = toml_find_index(tab, key, strlen(key));
    return i == (size_t)-1 ? NULL : &tab->u.tab.kv[i];
}

toml_value *toml_get_path(const toml_value *root, ...)
{
    va_list ap;
    va_start(ap, root);
    const toml_value *v = root;
    const char *k;
    while (v && (k = va_arg(ap, const char *)))
        v = toml_get(v, k);
    va_end(ap);
    return (toml_value *)v;
}

size_t toml_len(const toml_value *v)
{
    if (!v)
        return 0;
    if (v->type == TOML_TABLE)
        return v->u.tab.n;
    if (v->type == TOML_ARRAY)
        return v->u.arr.n;
    return 0;
}

const toml_kv *toml_entry(const toml_value *tab, size_t i)
{
    if (!tab || tab->type != TOML_TABLE || i >= tab->u.tab.n)
        return NULL;
    return &tab->u.tab.kv[i];
}

toml_value *toml_at(const toml_value *arr, size_t i)
{
    if (!arr || arr->type != TOML_ARRAY || i >= arr->u.arr.n)
        return NULL;
    return arr->u.arr.items[i];
}

const char *toml_type_name(enum toml_type t)
{
    switch (t) {
    case TOML_TABLE:
        return "table";
    case TOML_ARRAY:
        return "array";
    case TOML_STRING:
        return "string";
    case TOML_INTEGER:
        return "integer";
    case TOML_FLOAT:
        return "float";
    case TOML_BOOL:
        return "bool";
    case TOML_DATETIME:
        return "datetime";
    case TOML_DATETIME_LOCAL:
        return "datetime-local";
    case TOML_DATE_LOCAL:
        return "date-local";
    case TOML_TIME_LOCAL:
        return "time-local";
    }
    return "unknown";
}

/* ---- building ------------------------------------------------------------ */

toml_value *toml_new(enum toml_type t)
{
    toml_value *v = xcalloc(1, sizeof *v);
    v->type = t;
    if (t == TOML_STRING) {
        v->u.str.s = xstrdup("");
    } else if (t >= TOML_DATETIME && t <= TOML_TIME_LOCAL) {
        static const char *const zero[] = {"1970-01-01T00:00:00Z", "1970-01-01T00:00:00",
                                           "1970-01-01", "00:00:00"};
        v->u.dt = xstrdup(zero[t - TOML_DATETIME]);
    }
    return v;
}

toml_value *toml_new_stringn(const char *s, size_t len)
{
    toml_value *v = xcalloc(1, sizeof *v);
    v->type = TOML_STRING;
    v->u.str.s = xmalloc(len + 1);
    if (len)
        memcpy(v->u.str.s, s, len);
    v->u.str.s[len] = '\0';
    v->u.str.len = len;
    return v;
}

toml_value *toml_new_string(const char *s)
{
    return toml_new_stringn(s ? s : "", s ? strlen(s) : 0);
}

toml_value *toml_new_int(int64_t i)
{
    toml_value *v = toml_new(TOML_INTEGER);
    v->u.i = i;
    return v;
}

toml_value *toml_new_float(double f)
{
    toml_value *v = toml_new(TOML_FLOAT);
    v->u.f = f;
    return v;
}

toml_value *toml_new_bool(bool b)
{
    toml_value *v = toml_new(TOML_BOOL);
    v->u.b = b;
    return v;
}

toml_value *toml_new_datetime(enum toml_type t, const char *text)
{
    if (!text)
        return NULL;
    char *norm = NULL;
    const char *why;
    int got = toml_datetime_scan(text, strlen(text), &norm, &why);
    if (got < 0 || (enum toml_type)got != t) {
        free(norm);
        return NULL;
    }
    toml_value *v = xcalloc(1, sizeof *v);
    v->type = t;
    v->u.dt = norm;
    return v;
}

void toml_table_set(toml_value *tab, const char *key, toml_value *v)
{
    if (!tab || tab->type != TOML_TABLE || !key) {
        toml_free(v);
        return;
    }
    size_t i = toml_find_index(tab, key, strlen(key));
    if (i != (size_t)-1) {
        if (tab->u.tab.kv[i].val != v)
            toml_free(tab->u.tab.kv[i].val);
        tab->u.tab.kv[i].val = v;
        return;
    }
    toml_table_append(tab, xstrdup(key), strlen(key), v, 0, 0);
}

int toml_table_remove(toml_value *tab, const char *key)
{
    if (!key)
        return 0;
    size_t i = toml_find_index(tab, key, strlen(key));
    if (i == (size_t)-1)
        return 0;
    toml_kv *kv = tab->u.tab.kv;
    free(kv[i].key);
    toml_free(kv[i].val);
    memmove(kv + i, kv + i + 1, (tab->u.tab.n - i - 1) * sizeof *kv);
    tab->u.tab.n--;
    toml_index_drop(tab); /* indices after i moved; rebuilt on next lookup */
    return 1;
}

void toml_array_push(toml_value *arr, toml_value *v)
{
    if (!arr || arr->type != TOML_ARRAY) {
        toml_free(v);
        return;
    }
    arr->u.arr.items =
        xgrow(arr->u.arr.items, &arr->u.arr.cap, arr->u.arr.n + 1, sizeof(toml_value *));
    arr->u.arr.items[arr->u.arr.n++] = v;
}

toml_value *toml_clone(const toml_value *v)
{
    if (!v)
        return NULL;
    toml_value *c = xmalloc(sizeof *c);
    *c = *v;
    c->priv_index = NULL;
    switch (v->type) {
    case TOML_TABLE:
        c->u.tab.kv = NULL;
        c->u.tab.n = c->u.tab.cap = 0;
        for (size_t i = 0; i < v->u.tab.n; i++) {
            const toml_kv *kv = &v->u.tab.kv[i];
            toml_table_append(c, xmemdup(kv->key, kv->keylen + 1), kv->keylen, toml_clone(kv->val),
                              kv->line, kv->col);
        }
        break;
    case TOML_ARRAY:
        c->u.arr.items = NULL;
        c->u.arr.n = c->u.arr.cap = 0;
        for (size_t i = 0; i < v->u.arr.n; i++)
            toml_array_push(c, toml_clone(v->u.arr.items[i]));
        break;
    case TOML_STRING:
        c->u.str.s = xmalloc(v->u.str.len + 1);
        memcpy(c->u.str.s, v->u.str.s, v->u.str.len + 1);
        break;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        c->u.dt = xstrdup(v->u.dt ? v->u.dt : "");
        break;
    default:
        break;
    }
    return c;
}

bool toml_equal(const toml_value *a, const toml_value *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->type != b->type)
        return false;
    switch (a->type) {
    case TOML_TABLE:
        /* Same keys with equal values; order is presentation, not content. */
        if (a->u.tab.n != b->u.tab.n)
            return false;
        for (size_t i = 0; i < a->u.tab.n; i++) {
            const toml_kv *kv = &a->u.tab.kv[i];
            size_t j = toml_find_index(b, kv->key, kv->keylen);
            if (j == (size_t)-1 || !toml_equal(kv->val, b->u.tab.kv[j].val))
                return false;
        }
        return true;
    case TOML_ARRAY:
        if (a->u.arr.n != b->u.arr.n)
            return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!toml_equal(a->u.arr.items[i], b->u.arr.items[i]))
                return false;
        return true;
    case TOML_STRING:
        return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case TOML_INTEGER:
        return a->u.i == b->u.i;
    case TOML_FLOAT:
        /* By value, but nan equals nan (and keeps 0.0 vs -0.0 apart), so
         * a round trip through text compares equal. */
        if (a->u.f != a->u.f || b->u.f != b->u.f)
            return a->u.f != a->u.f && b->u.f != b->u.f;
        return a->u.f == b->u.f && signbit(a->u.f) == signbit(b->u.f);
    case TOML_BOOL:
        return a->u.b == b->u.b;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        return strcmp(a->u.dt ? a->u.dt : "", b->u.dt ? b->u.dt : "") == 0;
    }
    return false;
}

/* ---- datetimes ----------------------------------------------------------- */

static int digits(const char *s, size_t n, size_t at, size_t count, int *out)
{
    if (at + count > n)
        return -1;
    int v = 0;
    for (size_t i = 0; i < count; i++) {
        char c = s[at + i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return 0;
}

/* Time at s[at..]: HH:MM:SS(.frac)?; returns the end offset or 0 on error. */
static size_t scan_time(const char *s, size_t n, size_t at, const char **why)
{
    int h, m, sec;
    if (digits(s, n, at, 2, &h) || at + 2 >= n || s[at + 2] != ':' || digits(s, n, at + 3, 2, &m)) {
        *why = "malformed time (want HH:MM:SS)";
        return 0;
    }
    if (at + 5 >= n || s[at + 5] != ':' || digits(s, n, at + 6, 2, &sec)) {
        *why = "time needs seconds (HH:MM:SS)";
        return 0;
    }
    if (h > 23 || m > 59 || sec > 60) {
        *why = h > 23   ? "hour out of range"
               : m > 59 ? "minute out of range"
                        : "second out of range";
        return 0;
    }
    size_t i = at + 8;
    if (i < n && s[i] == '.') {
        size_t j = i + 1;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == i + 1) {
            *why = "fractional seconds need digits after '.'";
            return 0;
        }
        i = j;
    }
    return i;
}

int toml_datetime_scan(const char *s, size_t n, char **norm, const char **why)
{
    *norm = NULL;
    *why = "malformed date or time";
    int type;
    size_t end;
    if (n >= 3 && s[2] == ':') {
        end = scan_time(s, n, 0, why);
        if (!end)
            return -1;
        type = TOML_TIME_LOCAL;
    } else {
        int y, mo, d;
        if (digits(s, n, 0, 4, &y) || n < 5 || s[4] != '-' || digits(s, n, 5, 2, &mo) || n < 8 ||
            s[7] != '-' || digits(s, n, 8, 2, &d)) {
            *why = "malformed date (want YYYY-MM-DD)";
            return -1;
        }
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        if (mo < 1 || mo > 12) {
            *why = "month out of range";
            return -1;
        }
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        int dim = mdays[mo - 1] + (mo == 2 && leap);
        if (d < 1 || d > dim) {
            *why = "day out of range for the month";
            return -1;
        }
        end = 10;
        type = TOML_DATE_LOCAL;
        if (n > 10) {
            if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') {
                *why = "unexpected text after date";
                return -1;
            }
            end = scan_time(s, n, 11, why);
            if (!end)
                return -1;
            type = TOML_DATETIME_LOCAL;
            if (end < n) {
                if (s[end] == 'Z' || s[end] == 'z') {
                    end++;
                } else if (s[end] == '+' || s[end] == '-') {
                    int oh, om;
                    if (digits(s, n, end + 1, 2, &oh) || end + 3 >= n || s[end + 3] != ':' ||
                        digits(s, n, end + 4, 2, &om)) {
                        *why = "malformed offset (want Z or +HH:MM)";
                        return -1;
                    }
                    if (oh > 23 || om > 59) {
                        *why = "offset out of range";
                        return -1;
                    }
                    end += 6;
                } else {
                    *why = "unexpected text after time";
                    return -1;
                }
                type = TOML_DATETIME;
            }
        }
    }
    if (end != n) {
        *why = "unexpected text after date or time";
        return -1;
    }
    char *o = xmalloc(n + 1);
    memcpy(o, s, n);
    o[n] = '\0';
    if (n > 10 && type != TOML_TIME_LOCAL)
        o[10] = 'T';
    if (n && o[n - 1] == 'z')
        o[n - 1] = 'Z';
    *norm = o;
    return type;
}
