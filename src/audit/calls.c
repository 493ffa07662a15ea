/*
 * Call and load rows (docs/audit.md) and the `audit --calls` summary —
 * see audit.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/utf8.h"
#include "audit/audit.h"
#include "base/json.h"
#include "base/xalloc.h"

static const char *const families[] = {"trust",  "fence",      "pin", "egress",
                                       "secret", "filesystem", NULL};

int aud_is_family_tool(const char *tool)
{
    if (!tool)
        return 0;
    for (size_t i = 0; families[i]; i++)
        if (strcmp(tool, families[i]) == 0)
            return 1;
    return 0;
}

int aud_is_execution_row(const json_t *row)
{
    const char *server = json_string_value(json_object_get(row, "server"));
    const char *tool = json_string_value(json_object_get(row, "tool"));
    return server && tool && strcmp(server, AUD_EXEC_SERVER) == 0 &&
           strcmp(tool, AUD_EXEC_TOOL) == 0 && json_is_string(json_object_get(row, "execution")) &&
           json_is_string(json_object_get(row, "code_sha256"));
}

void aud_utf8_cut(const char *s, size_t max, strbuf *out)
{
    /* Valid runs are copied whole (one sb_add per run, not per character):
     * this runs for every field of every audited call. */
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), used = 0, run = 0;
    for (size_t i = 0; i < n;) {
        unsigned cp;
        size_t k = p[i] < 0x80 ? 1 : utf8_decode(p + i, n - i, &cp);
        size_t take = k ? k : 1;
        if (used + take > max)
            break; /* never split a character */
        if (!k) {
            sb_add(out, p + run, i - run);
            sb_addc(out, '?');
            run = i + 1;
        }
        used += take;
        i += take;
    }
    sb_add(out, p + run, used - run);
}

static void set_str(json_t *o, const char *key, const char *v, size_t max)
{
    strbuf sb = SB_INIT;
    aud_utf8_cut(v ? v : "", max, &sb);
    json_object_set_new(o, key, json_stringn(sb.buf, sb.len));
    sb_release(&sb);
}

/* A call's detail is for refusals and errors; an egress row keeps it on an
 * allow too, since it names the destination that was let through. */
static int keep_detail(const struct aud_call *c)
{
    if (!c->detail || !*c->detail)
        return 0;
    int ok = c->outcome && strcmp(c->outcome, "ok") == 0;
    return !ok || (c->tool && strcmp(c->tool, "egress") == 0);
}

json_t *aud_call_record(const struct aud_call *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "ts", json_integer(c->ts ? c->ts : (long long)time(NULL)));
    if (c->run && *c->run)
        set_str(o, "run", c->run, 128);
    if (c->execution && *c->execution)
        set_str(o, "execution", c->execution, 64);
    json_object_set_new(o, "pid", json_integer(c->pid ? c->pid : (long)getpid()));
    if (c->project && *c->project)
        set_str(o, "project", c->project, 4096);
    set_str(o, "server", c->server, 256);
    set_str(o, "tool", c->tool, 256);
    set_str(o, "args_digest", c->args_digest, AUD_DIGEST_HEX);
    if (c->result_digest && *c->result_digest)
        set_str(o, "result_digest", c->result_digest, AUD_DIGEST_HEX);
    set_str(o, "outcome", c->outcome ? c->outcome : "ok", 16);
    if (keep_detail(c))
        set_str(o, "detail", c->detail, AUD_DETAIL_MAX);
    json_object_set_new(o, "ms", json_integer(c->ms));
    if (c->rule && *c->rule)
        set_str(o, "rule", c->rule, AUD_DETAIL_MAX);
    if (c->layer && *c->layer)
        set_str(o, "layer", c->layer, 32);
    if (c->exec) {
        json_object_set_new(o, "calls", json_integer(c->exec->calls));
        json_object_set_new(o, "output_bytes", json_integer(c->exec->output_bytes));
        json_object_set_new(o, "result_bytes", json_integer(c->exec->result_bytes));
        set_str(o, "code_sha256", c->exec->code_sha256, 64);
        if (c->exec->limit && *c->exec->limit)
            set_str(o, "limit", c->exec->limit, 32);
        if (c->exec->limits && *c->exec->limits)
            set_str(o, "limits", c->exec->limits, 16);
    }
    return o;
}

/* ,"key":"value" with value cut as set_str cuts it and escaped as jansson
 * escapes (the cut leaves valid UTF-8, which jansson keeps as is). */
static void enc_str(strbuf *out, const char *key, const char *v, size_t max)
{
    sb_adds(out, ",\"");
    sb_adds(out, key);
    sb_adds(out, "\":\"");
    /* Most values (names, digests, outcomes) are short printable ASCII:
     * nothing to cut or escape, so they are copied as they are. */
    const char *s = v ? v : "";
    size_t n = 0;
    while (n <= max && s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
        n++;
    if (!s[n] && n <= max) {
        sb_add(out, s, n);
        sb_addc(out, '"');
        return;
    }
    strbuf sb = SB_INIT;
    aud_utf8_cut(s, max, &sb);
    json_escape(sb.buf, sb.len, JSON_ESC_UPPER_HEX, out);
    sb_addc(out, '"');
    sb_release(&sb);
}

/* ,"key":n as jansson prints a json_integer (%lld), without printf. */
static void enc_int(strbuf *out, const char *key, long long v)
{
    char buf[24], *p = buf + sizeof buf;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    sb_adds(out, ",\"");
    sb_adds(out, key);
    sb_adds(out, "\":");
    sb_add(out, p, (size_t)(buf + sizeof buf - p));
}

void aud_call_encode(const struct aud_call *c, strbuf *out)
{
    /* Same keys, order and cuts as aud_call_record. */
    size_t from = out->len;
    enc_int(out, "ts", c->ts ? c->ts : (long long)time(NULL));
    out->buf[from] = '{'; /* the first member's comma opens the object */
    if (c->run && *c->run)
        enc_str(out, "run", c->run, 128);
    if (c->execution && *c->execution)
        enc_str(out, "execution", c->execution, 64);
    enc_int(out, "pid", (long long)(c->pid ? c->pid : (long)getpid()));
    if (c->project && *c->project)
        enc_str(out, "project", c->project, 4096);
    enc_str(out, "server", c->server, 256);
    enc_str(out, "tool", c->tool, 256);
    enc_str(out, "args_digest", c->args_digest, AUD_DIGEST_HEX);
    if (c->result_digest && *c->result_digest)
        enc_str(out, "result_digest", c->result_digest, AUD_DIGEST_HEX);
    enc_str(out, "outcome", c->outcome ? c->outcome : "ok", 16);
    if (keep_detail(c))
        enc_str(out, "detail", c->detail, AUD_DETAIL_MAX);
    enc_int(out, "ms", c->ms);
    if (c->rule && *c->rule)
        enc_str(out, "rule", c->rule, AUD_DETAIL_MAX);
    if (c->layer && *c->layer)
        enc_str(out, "layer", c->layer, 32);
    if (c->exec) {
        enc_int(out, "calls", c->exec->calls);
        enc_int(out, "output_bytes", c->exec->output_bytes);
        enc_int(out, "result_bytes", c->exec->result_bytes);
        enc_str(out, "code_sha256", c->exec->code_sha256, 64);
        if (c->exec->limit && *c->exec->limit)
            enc_str(out, "limit", c->exec->limit, 32);
        if (c->exec->limits && *c->exec->limits)
            enc_str(out, "limits", c->exec->limits, 16);
    }
    sb_addc(out, '}');
}

int aud_call_append(const char *home, const struct aud_call *c, struct as_err *err)
{
    strbuf body;
    sb_init(&body, 512); /* one allocation for a typical row */
    aud_call_encode(c, &body);
    /* Joined by hand: this runs once per brokered call. */
    static const char tail[] = "/audit/calls.jsonl";
    size_t hl = strlen(home);
    char stack[512];
    char *path = hl + sizeof tail <= sizeof stack ? stack : xmalloc(hl + sizeof tail);
    memcpy(path, home, hl);
    memcpy(path + hl, tail, sizeof tail);
    struct aud_append_opts o = {AUD_ROTATE_BYTES, 0};
    int r = aud_append_encoded(path, &body, &o, err);
    if (path != stack)
        free(path);
    sb_release(&body);
    return r;
}

int aud_call_ready(const char *home, struct as_err *err)
{
    /* once per brokered call, like aud_call_append: no allocation */
    static const char tail[] = "/audit/calls.jsonl";
    size_t hl = strlen(home);
    char stack[512];
    char *path = hl + sizeof tail <= sizeof stack ? stack : xmalloc(hl + sizeof tail);
    memcpy(path, home, hl);
    memcpy(path + hl, tail, sizeof tail);
    int r = aud_append_ready(path, err);
    if (path != stack)
        free(path);
    return r;
}

int aud_load_append(const char *home, const char *name, const char *reason, const char *project,
                    const char *run, struct as_err *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "ts", json_integer((long long)time(NULL)));
    set_str(o, "name", name, 200);
    set_str(o, "reason", reason, 500);
    if (project && *project)
        set_str(o, "project", project, 4096);
    if (run && *run)
        set_str(o, "run", run, 128);
    char *path = xasprintf("%s/audit/loads.jsonl", home);
    struct aud_append_opts opts = {AUD_ROTATE_BYTES, 0};
    int r = aud_append(path, o, &opts, err);
    free(path);
    json_decref(o);
    return r;
}

/* ---- summary ---- */

struct summarize_ctx {
    const char *project;
    struct aud_summary *s;
};

static void summarize_row(void *vctx, json_t *row)
{
    struct summarize_ctx *c = vctx;
    struct aud_summary *s = c->s;
    const char *tool = json_string_value(json_object_get(row, "tool"));
    const char *server = json_string_value(json_object_get(row, "server"));
    const char *proj = json_string_value(json_object_get(row, "project"));
    if (!tool || !server || aud_is_family_tool(tool) || aud_is_execution_row(row) ||
        (c->project && (!proj || strcmp(proj, c->project) != 0)))
        return;
    if (strcmp(server, AUD_GUARD_SERVER) == 0) {
        s->guard_denied++; /* a refused hook, never a brokered call */
        return;
    }
    s->calls++;
    int denied = json_object_get(row, "layer") != NULL;
    s->denied += (size_t)denied;
    const char *outcome = json_string_value(json_object_get(row, "outcome"));
    if (outcome && strcmp(outcome, "ok") == 0)
        s->ok++;
    else if (outcome && strcmp(outcome, "error") == 0)
        s->errors++;
    char *name = xasprintf("%s__%s", server, tool);
    json_t *t = json_object_get(s->by_tool, name);
    if (!t) {
        t = json_object();
        json_object_set_new(t, "calls", json_integer(0));
        json_object_set_new(t, "denied", json_integer(0));
        json_object_set_new(s->by_tool, name, t);
        s->tools++;
    }
    json_object_set_new(t, "calls",
                        json_integer(json_integer_value(json_object_get(t, "calls")) + 1));
    if (denied)
        json_object_set_new(t, "denied",
                            json_integer(json_integer_value(json_object_get(t, "denied")) + 1));
    free(name);
}

int aud_calls_summarize(const char *home, const char *project, struct aud_summary *s,
                        struct as_err *err)
{
    memset(s, 0, sizeof *s);
    s->by_tool = json_object();
    struct summarize_ctx c = {project, s};
    int r = aud_log_each(home, "calls.jsonl", summarize_row, &c, &s->unreadable, err);
    return r;
}

void aud_summary_release(struct aud_summary *s)
{
    if (s->by_tool)
        json_decref(s->by_tool);
    s->by_tool = NULL;
}

void aud_summary_line(const struct aud_summary *s, strbuf *out)
{
    sb_addf(out, "%zu call%s · %zu tool%s · %zu denied by policy — digests, never values", s->calls,
            s->calls == 1 ? "" : "s", s->tools, s->tools == 1 ? "" : "s", s->denied);
}
