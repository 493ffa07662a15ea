/*
 * The per-tool table of `audit --calls`, as text and as JSON — see
 * audit_calls.h.
 */
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "cli/audit_calls.h"

/* Display columns of sanitized text: code points (it is UTF-8). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void pad(strbuf *line, const char *s, size_t w)
{
    sb_adds(line, s);
    size_t have = width(s);
    sb_addchars(line, ' ', w > have ? w - have : 0);
}

static void num(char *buf, size_t n, long long v)
{
    if (v < 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%lld", v);
}

void audit_table_print(FILE *f, const struct aud_table *t)
{
    if (!t->n)
        return;
    static const char *const head[] = {"SERVER", "TOOL",   "CALLS", "DENIED",
                                       "ERRORS", "P50 MS", "P99 MS"};
    enum { NCOL = 7 };
    size_t n = t->n + 1;
    char(*cell)[NCOL][32] = xcalloc(n, sizeof *cell);
    strbuf *names = xcalloc(2 * n, sizeof *names);
    for (size_t i = 0; i < 2 * n; i++)
        names[i] = (strbuf)SB_INIT;
    size_t w[NCOL] = {0};
    for (size_t c = 0; c < NCOL; c++)
        w[c] = strlen(head[c]);
    for (size_t i = 0; i < t->n; i++) {
        const struct aud_tool_row *r = &t->rows[i];
        term_sanitize(&names[2 * i], r->server, strlen(r->server));
        term_sanitize(&names[2 * i + 1], r->tool, strlen(r->tool));
        num(cell[i][2], sizeof cell[i][2], (long long)r->calls);
        num(cell[i][3], sizeof cell[i][3], (long long)r->denied);
        num(cell[i][4], sizeof cell[i][4], (long long)r->errors);
        num(cell[i][5], sizeof cell[i][5], r->p50_ms);
        num(cell[i][6], sizeof cell[i][6], r->p99_ms);
        for (size_t k = 0; k < 2; k++)
            if (width(names[2 * i + k].buf) > w[k])
                w[k] = width(names[2 * i + k].buf);
        for (size_t c = 2; c < NCOL; c++)
            if (strlen(cell[i][c]) > w[c])
                w[c] = strlen(cell[i][c]);
    }
    strbuf line = SB_INIT;
    for (size_t i = 0; i <= t->n; i++) {
        sb_reset(&line);
        int header = i == 0;
        size_t k = header ? 0 : i - 1;
        for (size_t c = 0; c < NCOL; c++) {
            const char *s = header ? head[c] : c < 2 ? names[2 * k + c].buf : cell[k][c];
            if (c)
                sb_adds(&line, "  ");
            if (c < 2) {
                pad(&line, s, w[c]);
            } else { /* numbers right-aligned */
                sb_addchars(&line, ' ', w[c] - strlen(s));
                sb_adds(&line, s);
            }
        }
        sb_rtrim(&line);
        fprintf(f, "%s\n", line.buf);
    }
    sb_release(&line);
    for (size_t i = 0; i < 2 * n; i++)
        sb_release(&names[i]);
    free(names);
    free(cell);
}

static json_t *ms_json(long long v)
{
    return v < 0 ? json_null() : json_integer(v);
}

json_t *audit_table_json(const struct aud_table *t)
{
    json_t *a = json_array();
    for (size_t i = 0; i < t->n; i++) {
        const struct aud_tool_row *r = &t->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "server", json_string(r->server));
        json_object_set_new(o, "tool", json_string(r->tool));
        json_object_set_new(o, "calls", json_integer((json_int_t)r->calls));
        json_object_set_new(o, "denied", json_integer((json_int_t)r->denied));
        json_object_set_new(o, "errors", json_integer((json_int_t)r->errors));
        json_object_set_new(o, "p50_ms", ms_json(r->p50_ms));
        json_object_set_new(o, "p99_ms", ms_json(r->p99_ms));
        json_array_append_new(a, o);
    }
    return a;
}
