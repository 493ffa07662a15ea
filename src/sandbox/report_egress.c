/*
 * A run's egress by host, and its timeline — see report_egress.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/term.h"
#include "base/xalloc.h"
#include "sandbox/report_egress.h"

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static long long jint(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

/* An event's time, held to [0, 2^40]: the log is a file, and a hostile
 * "ts" must not overflow the arithmetic of the buckets. */
static long long ts_of(const json_t *e)
{
    long long ts = jint(e, "ts");
    return ts < 0 ? 0 : ts > (1LL << 40) ? (1LL << 40) : ts;
}

static void count(json_t *o, const char *k)
{
    json_object_set_new(o, k, json_integer(jint(o, k) + 1));
}

/* Appends v to the array a unless it holds it already. */
static void add_unique(json_t *a, json_t *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        if (json_equal(x, v)) {
            json_decref(v);
            return;
        }
    }
    json_array_append_new(a, v);
}

static int is_egress(const json_t *e)
{
    return strcmp(jstr(e, "event"), "egress") == 0;
}

/* The run's start: its first event that carries a time. */
static long long run_start(const json_t *events)
{
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e)
    {
        if (json_is_integer(json_object_get(e, "ts")))
            return ts_of(e);
    }
    return 0;
}

static long long bucket_for(long long span)
{
    static const long long sizes[] = {1,   5,   10,   30,   60,   120,   300,
                                      600, 900, 1800, 3600, 7200, 21600, 43200};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (span / sizes[i] < SBX_TIMELINE_MARKS)
            return sizes[i];
    long long days = span / 86400 / SBX_TIMELINE_MARKS + 1;
    return days * 86400;
}

static json_t *timeline(const json_t *events)
{
    long long start = run_start(events), last = start;
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e)
    {
        long long ts = ts_of(e);
        if (is_egress(e) && ts > last)
            last = ts;
    }
    long long bucket = bucket_for(last - start);
    size_t n = (size_t)((last - start) / bucket) + 1;
    json_t *req = json_array(), *den = json_array();
    for (size_t k = 0; k < n; k++) {
        json_array_append_new(req, json_integer(0));
        json_array_append_new(den, json_integer(0));
    }
    json_array_foreach(events, i, e)
    {
        if (!is_egress(e))
            continue;
        long long ts = ts_of(e);
        size_t k = ts < start ? 0 : (size_t)((ts - start) / bucket);
        json_array_set_new(req, k, json_integer(json_integer_value(json_array_get(req, k)) + 1));
        if (!json_is_true(json_object_get(e, "allowed")))
            json_array_set_new(den, k,
                               json_integer(json_integer_value(json_array_get(den, k)) + 1));
    }
    return json_pack("{s:I,s:I,s:o,s:o}", "start", (json_int_t)start, "bucket_s",
                     (json_int_t)bucket, "requests", req, "denied", den);
}

json_t *sbx_egress_summary(const json_t *events)
{
    json_t *hosts = json_array(), *index = json_object(), *servers = json_array();
    size_t i, requests = 0, allowed = 0;
    const json_t *e;
    json_array_foreach(events, i, e)
    {
        if (!is_egress(e))
            continue;
        requests++;
        const char *host = jstr(e, "host");
        json_t *h = json_object_get(index, host);
        if (!h) {
            h = json_pack("{s:s,s:[],s:[],s:i,s:i,s:[]}", "host", host, "ports", "servers",
                          "allowed", 0, "denied", 0, "rules");
            json_object_set(index, host, h);
            json_array_append_new(hosts, h);
        }
        json_t *port = json_object_get(e, "port");
        if (json_is_integer(port))
            add_unique(json_object_get(h, "ports"), json_integer(json_integer_value(port)));
        add_unique(json_object_get(h, "servers"), json_string(jstr(e, "server")));
        add_unique(servers, json_string(jstr(e, "server")));
        if (json_is_true(json_object_get(e, "allowed"))) {
            allowed++;
            count(h, "allowed");
        } else {
            count(h, "denied");
            const char *why = jstr(e, "short")[0] ? jstr(e, "short") : jstr(e, "rule");
            if (why[0])
                add_unique(json_object_get(h, "rules"), json_string(why));
        }
    }
    json_decref(index);
    if (!requests) {
        json_decref(hosts);
        json_decref(servers);
        return NULL;
    }
    return json_pack("{s:I,s:I,s:I,s:o,s:o,s:o}", "requests", (json_int_t)requests, "allowed",
                     (json_int_t)allowed, "denied", (json_int_t)(requests - allowed), "servers",
                     servers, "hosts", hosts, "timeline", timeline(events));
}

/* ---- text ---- */

static void add_clean(strbuf *out, const char *s)
{
    term_sanitize(out, s, strlen(s));
}

static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

/* "45s", "5m", "3m30s", "2h", "1d6h": the largest units, zero parts left out. */
static void fmt_span(long long s, strbuf *out)
{
    static const struct {
        long long n;
        char u;
    } units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
    if (s <= 0) {
        sb_adds(out, "0s");
        return;
    }
    for (size_t i = 0; i < 4; i++)
        if (s >= units[i].n) {
            sb_addf(out, "%lld%c", s / units[i].n, units[i].u);
            s %= units[i].n;
        }
}

/* "host", "host:8443" or "host:443,8443": the port shown unless every
 * request went to the default one (443 tunnelled, 80 plain http). */
static void host_label(const json_t *h, strbuf *out)
{
    add_clean(out, jstr(h, "host"));
    const json_t *ports = json_object_get(h, "ports");
    size_t n = json_array_size(ports);
    if (n == 1) {
        long long p = (long long)json_integer_value(json_array_get(ports, 0));
        if (p == 443 || p == 80 || p <= 0)
            return;
    }
    size_t i;
    const json_t *p;
    json_array_foreach(ports, i, p)
    {
        sb_addf(out, "%c%lld", i ? ',' : ':', (long long)json_integer_value(p));
    }
}

static void servers_label(const json_t *servers, strbuf *out)
{
    size_t i;
    const json_t *s;
    json_array_foreach(servers, i, s)
    {
        if (i)
            sb_adds(out, ", ");
        const char *v = json_string_value(s);
        add_clean(out, v && *v ? v : "?");
    }
}

static void render_timeline(const json_t *t, strbuf *out)
{
    static const char *const marks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    const json_t *req = json_object_get(t, "requests");
    long long bucket = jint(t, "bucket_s"), peak = 0;
    size_t i, n = json_array_size(req);
    const json_t *v;
    json_array_foreach(req, i, v)
    {
        if (json_integer_value(v) > peak)
            peak = json_integer_value(v);
    }
    sb_addf(out, "  %-9s |", "Timeline");
    json_array_foreach(req, i, v)
    {
        long long c = json_integer_value(v);
        if (c <= 0 || peak <= 0)
            sb_addc(out, ' ');
        else
            sb_adds(out, marks[(c * 8 + peak - 1) / peak - 1]);
    }
    sb_adds(out, "|  ");
    fmt_span(bucket, out);
    sb_adds(out, " per mark over ");
    fmt_span(bucket * (long long)n, out);
    sb_addf(out, " · peak %lld request%s\n", peak, peak == 1 ? "" : "s");
}

void sbx_egress_render(const json_t *summary, strbuf *out)
{
    const json_t *hosts = json_object_get(summary, "hosts");
    size_t nh = json_array_size(hosts);
    long long requests = jint(summary, "requests");
    sb_addf(out, "  %-9s %lld request%s to %zu host%s · %lld allowed · %lld denied\n", "Egress",
            requests, requests == 1 ? "" : "s", nh, nh == 1 ? "" : "s", jint(summary, "allowed"),
            jint(summary, "denied"));
    /* "server → host" labels first, to align the counts after them */
    strbuf *labels = xcalloc(nh ? nh : 1, sizeof *labels);
    size_t w = 0, i;
    const json_t *h;
    json_array_foreach(hosts, i, h)
    {
        labels[i] = (strbuf)SB_INIT;
        servers_label(json_object_get(h, "servers"), &labels[i]);
        sb_adds(&labels[i], " → ");
        host_label(h, &labels[i]);
        if (width(labels[i].buf) > w)
            w = width(labels[i].buf);
    }
    json_array_foreach(hosts, i, h)
    {
        long long ok = jint(h, "allowed"), no = jint(h, "denied");
        sb_addf(out, "    %s ", no ? "✗" : "✓");
        sb_adds(out, labels[i].buf);
        sb_addchars(out, ' ', w - width(labels[i].buf) + 2);
        if (ok)
            sb_addf(out, "%lld allowed", ok);
        if (ok && no)
            sb_adds(out, " · ");
        if (no)
            sb_addf(out, "%lld denied", no);
        const json_t *rules = json_object_get(h, "rules");
        if (json_array_size(rules)) {
            sb_adds(out, "  ");
            add_clean(out, json_string_value(json_array_get(rules, 0)));
            size_t more = json_array_size(rules) - 1;
            if (more)
                sb_addf(out, " (+%zu other rule%s)", more, more == 1 ? "" : "s");
        }
        sb_addc(out, '\n');
        sb_release(&labels[i]);
    }
    free(labels);
    render_timeline(json_object_get(summary, "timeline"), out);
}
