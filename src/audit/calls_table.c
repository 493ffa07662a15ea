/*
 * The per-tool table of `audit --calls` — see calls_table.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/calls_table.h"
#include "base/xalloc.h"

static int str_is(const json_t *v, const char *s)
{
    const char *x = json_string_value(v);
    return x && strcmp(x, s) == 0;
}

/* The row for server/tool, added (keeping the table sorted) when new. */
static struct aud_tool_row *row_for(struct aud_table *t, const char *server, const char *tool)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->rows[mid].server, server);
        if (c == 0)
            c = strcmp(t->rows[mid].tool, tool);
        if (c == 0)
            return &t->rows[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->rows = xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    memmove(&t->rows[lo + 1], &t->rows[lo], (t->n - lo) * sizeof *t->rows);
    t->n++;
    struct aud_tool_row *r = &t->rows[lo];
    memset(r, 0, sizeof *r);
    r->server = xstrdup(server);
    r->tool = xstrdup(tool);
    r->p50_ms = r->p99_ms = -1;
    return r;
}

static void add_ms(struct aud_tool_row *r, long long ms)
{
    if (r->timed == r->ms_cap) {
        r->ms_cap = r->ms_cap ? r->ms_cap * 2 : 16;
        r->ms = xrealloc(r->ms, r->ms_cap * sizeof *r->ms);
    }
    r->ms[r->timed++] = ms < 0 ? 0 : ms;
}

/* The by_tool entry of the summary, as aud_calls_summarize keeps it. */
static void count_by_tool(struct aud_summary *s, const char *server, const char *tool, int policy)
{
    size_t n = strlen(server) + strlen(tool) + 3;
    char *name = xmalloc(n);
    snprintf(name, n, "%s__%s", server, tool);
    json_t *e = json_object_get(s->by_tool, name);
    if (!e) {
        e = json_object();
        json_object_set_new(e, "calls", json_integer(0));
        json_object_set_new(e, "denied", json_integer(0));
        json_object_set_new(s->by_tool, name, e);
    }
    json_object_set_new(e, "calls",
                        json_integer(json_integer_value(json_object_get(e, "calls")) + 1));
    if (policy)
        json_object_set_new(e, "denied",
                            json_integer(json_integer_value(json_object_get(e, "denied")) + 1));
    free(name);
}

static int keep(const json_t *row, const struct aud_table_filter *f)
{
    if (!f)
        return 1;
    if (f->project && !str_is(json_object_get(row, "project"), f->project))
        return 0;
    if (f->since) {
        json_t *ts = json_object_get(row, "ts");
        if (!json_is_integer(ts) || json_integer_value(ts) < f->since)
            return 0;
    }
    if (f->server && !str_is(json_object_get(row, "server"), f->server))
        return 0;
    if (f->tool && !str_is(json_object_get(row, "tool"), f->tool))
        return 0;
    return 1;
}

static void count_row(struct aud_table *t, const json_t *row)
{
    const char *server = json_string_value(json_object_get(row, "server"));
    const char *tool = json_string_value(json_object_get(row, "tool"));
    /* what a brokered call is: the rules aud_calls_summarize counts by */
    if (!tool || !server || aud_is_family_tool(tool) || aud_is_execution_row(row))
        return;
    if (strcmp(server, AUD_GUARD_SERVER) == 0) {
        t->sum.guard_denied++;
        return;
    }
    json_t *outcome = json_object_get(row, "outcome");
    int policy = json_object_get(row, "layer") != NULL;
    struct aud_tool_row *r = row_for(t, server, tool);
    r->calls++;
    t->sum.calls++;
    r->policy_denied += (size_t)policy;
    t->sum.denied += (size_t)policy;
    if (str_is(outcome, "denied")) {
        r->denied++;
    } else if (str_is(outcome, "ok") || str_is(outcome, "error")) {
        int error = str_is(outcome, "error");
        r->errors += (size_t)error;
        t->sum.errors += (size_t)error;
        t->sum.ok += (size_t)!error;
        json_t *ms = json_object_get(row, "ms");
        if (json_is_integer(ms))
            add_ms(r, json_integer_value(ms));
    }
    count_by_tool(&t->sum, server, tool, policy);
}

struct table_ctx {
    const struct aud_table_filter *f;
    struct aud_table *t;
};

static void table_row(void *vctx, json_t *row)
{
    struct table_ctx *c = vctx;
    if (keep(row, c->f))
        count_row(c->t, row);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the value at rank ceil(p/100 * n), 1-based. */
static long long percentile(const long long *v, size_t n, unsigned p)
{
    size_t rank = (n * p + 99) / 100;
    return v[rank ? rank - 1 : 0];
}

int aud_calls_table(const char *home, const struct aud_table_filter *f, struct aud_table *t,
                    struct as_err *err)
{
    memset(t, 0, sizeof *t);
    t->sum.by_tool = json_object();
    struct table_ctx c = {f, t};
    int r = aud_log_each(home, "calls.jsonl", table_row, &c, &t->sum.unreadable, err);
    if (r < 0) {
        aud_table_release(t);
        return -1;
    }
    t->sum.tools = t->n;
    for (size_t i = 0; i < t->n; i++) {
        struct aud_tool_row *row = &t->rows[i];
        if (!row->timed)
            continue;
        qsort(row->ms, row->timed, sizeof *row->ms, cmp_ll);
        row->p50_ms = percentile(row->ms, row->timed, 50);
        row->p99_ms = percentile(row->ms, row->timed, 99);
    }
    return 0;
}

void aud_table_release(struct aud_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->rows[i].server);
        free(t->rows[i].tool);
        free(t->rows[i].ms);
    }
    free(t->rows);
    aud_summary_release(&t->sum);
    memset(t, 0, sizeof *t);
}
