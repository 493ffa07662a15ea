/*
 * libFuzzer target: one line from an MCP client or upstream server. Parsing
 * must never crash or leak; invalid input yields an error reply, never a
 * half-built message.
 *
 * It also checks the raw reader (rawjson.c) against jansson, the judge:
 * whatever mcp_raw_valid vouches for, jansson (duplicates rejected) must
 * accept, and the raw tree, the member spans and the response split must
 * say exactly what jansson's tree says. A disagreement aborts. So does a
 * line json_unrepresentable names a reason for that jansson reads after all.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_raw(const char *s, size_t n)
{
    if (!mcp_raw_valid(s, n))
        return;
    json_error_t je;
    json_t *want = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    if (!want || !json_is_object(want))
        abort(); /* vouched for something jansson refuses */
    json_t *got = mcp_raw_tree(s, n);
    if (!got || !json_equal(want, got))
        abort();
    /* Each member span is its own vouched-for value with the same meaning. */
    struct mcp_member m[MCP_RAW_KEYS];
    struct mcp_span all = {s, n};
    int k = mcp_raw_members(all, m, MCP_RAW_KEYS);
    if (k < 0 || (size_t)k != json_object_size(want))
        abort();
    for (int i = 0; i < k; i++) {
        json_t *v = json_object_getn(want, m[i].key.p, m[i].key.n);
        json_t *x = mcp_raw_tree(m[i].val.p, m[i].val.n);
        if (!v || !x || !json_equal(v, x))
            abort();
        json_decref(x);
    }
    uint64_t id;
    struct mcp_span r;
    if (mcp_raw_response(s, n, &id, &r)) {
        json_t *jid = json_object_get(want, "id");
        json_t *res = json_object_get(want, "result");
        json_t *x = mcp_raw_tree(r.p, r.n);
        if (!json_is_integer(jid) || (uint64_t)json_integer_value(jid) != id ||
            !json_is_object(res) || !x || !json_equal(res, x) || json_object_get(want, "error") ||
            json_object_get(want, "method"))
            abort();
        json_decref(x);
    }
    json_decref(got);
    json_decref(want);
}

/* An unreadable line is one jansson refuses, answered (if at all) with
 * -32700; a line jansson reads is never called unreadable. */
static void check_unreadable(const char *s, size_t n, enum mcp_parse_status st, json_t *reply)
{
    json_error_t je;
    json_t *v = json_loadb(s, n, JSON_DECODE_ANY, &je);
    const char *why = json_unrepresentable(s, n, NULL);
    if (why && v)
        abort();
    json_decref(v);
    if (st != MCP_UNREADABLE)
        return;
    struct mcp_unreadable u;
    if (mcp_unreadable_read(s, n, &u) != 0)
        abort();
    mcp_unreadable_clear(&u);
    if (reply &&
        json_integer_value(json_object_get(json_object_get(reply, "error"), "code")) != -32700)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mcp_msg m = {0};
    json_t *reply = NULL;
    enum mcp_parse_status st = mcp_parse((const char *)data, size, &m, &reply);
    check_unreadable((const char *)data, size, st, reply);
    mcp_msg_clear(&m);
    json_decref(reply);
    check_raw((const char *)data, size);
    return 0;
}
