/* JSON-RPC 2.0 message model — see mcp.h. */
#include <stdbool.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "mcp/mcp.h"

const char *const mcp_versions[] = {"2026-07-28", "2025-11-25", "2025-06-18",
                                    "2025-03-26", "2024-11-05", NULL};

int mcp_version_known(const char *v)
{
    if (!v)
        return 0;
    for (size_t i = 0; mcp_versions[i]; i++)
        if (strcmp(v, mcp_versions[i]) == 0)
            return 1;
    return 0;
}

static int is_date_version(const char *v)
{
    if (!v || strlen(v) != 10)
        return 0;
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7) {
            if (v[i] != '-')
                return 0;
        } else if (v[i] < '0' || v[i] > '9') {
            return 0;
        }
    }
    return 1;
}

int mcp_version_is_modern(const char *v)
{
    /* ISO dates compare correctly as strings once their shape is checked. */
    return is_date_version(v) && strcmp(v, MCP_VERSION_MODERN) >= 0;
}

void mcp_msg_clear(struct mcp_msg *m)
{
    if (m->root)
        json_decref(m->root);
    memset(m, 0, sizeof *m);
}

static int valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id) || json_is_real(id);
}

static json_t *error_reply(const json_t *id, int code, const char *msg)
{
    return mcp_error_new(id, code, msg, NULL);
}

/* Classifies a parsed object; returns MCP_PARSED or MCP_INVALID. */
static enum mcp_parse_status classify(json_t *root, struct mcp_msg *m)
{
    if (!json_is_object(root))
        return MCP_INVALID;
    const char *ver = json_string_value(json_object_get(root, "jsonrpc"));
    if (!ver || strcmp(ver, "2.0") != 0)
        return MCP_INVALID;
    json_t *id = json_object_get(root, "id");
    json_t *method = json_object_get(root, "method");
    json_t *result = json_object_get(root, "result");
    json_t *error = json_object_get(root, "error");
    if (method) {
        if (!json_is_string(method) || result || error)
            return MCP_INVALID;
        json_t *params = json_object_get(root, "params");
        if (params && !json_is_object(params) && !json_is_array(params))
            return MCP_INVALID;
        if (id && !valid_id(id))
            return MCP_INVALID;
        m->kind = id ? MCP_REQUEST : MCP_NOTIFICATION;
        m->id = id;
        m->method = json_string_value(method);
        m->params = params;
        return MCP_PARSED;
    }
    if (!id || (!valid_id(id) && !json_is_null(id)))
        return MCP_INVALID;
    if ((result != NULL) == (error != NULL))
        return MCP_INVALID;
    if (error) {
        if (!json_is_object(error) || !json_is_integer(json_object_get(error, "code")) ||
            !json_is_string(json_object_get(error, "message")))
            return MCP_INVALID;
    } else if (json_is_null(id)) {
        return MCP_INVALID; /* only an error may answer an unidentifiable request */
    }
    m->kind = MCP_RESPONSE;
    m->id = id;
    m->result = result;
    m->error = error;
    return MCP_PARSED;
}

static void trim(const char **data, size_t *len)
{
    const char *d = *data;
    size_t n = *len;
    if (n >= 3 && (unsigned char)d[0] == 0xEF && (unsigned char)d[1] == 0xBB &&
        (unsigned char)d[2] == 0xBF) {
        d += 3;
        n -= 3;
    }
    while (n && (d[n - 1] == '\r' || d[n - 1] == ' ' || d[n - 1] == '\t' || d[n - 1] == '\n'))
        n--;
    *data = d;
    *len = n;
}

#define UNREADABLE_MEMBERS 256

/* mcp_unreadable_read on a line already trimmed: trimming twice would strip
 * a second BOM and call "BOM BOM {…}" JSON. */
static int unreadable_trimmed(const char *data, size_t len, struct mcp_unreadable *u)
{
    memset(u, 0, sizeof *u);
    u->why = json_unrepresentable(data, len, NULL);
    if (!u->why)
        return -1;
    /* The text is well-formed, so the raw walkers read it right. */
    struct mcp_member mm[UNREADABLE_MEMBERS];
    struct mcp_span all = {data, len};
    int n = mcp_raw_members(all, mm, UNREADABLE_MEMBERS);
    struct mcp_span id = {NULL, 0};
    int ids = 0;
    for (int i = 0; i < n; i++) {
        struct mcp_span k = mm[i].key;
        if (k.n == 2 && memcmp(k.p, "id", 2) == 0) {
            id = mm[i].val;
            ids++;
        } else if (k.n == 6 && memcmp(k.p, "method", 6) == 0) {
            u->has_method = 1;
        } else if ((k.n == 6 && memcmp(k.p, "result", 6) == 0) ||
                   (k.n == 5 && memcmp(k.p, "error", 5) == 0)) {
            u->has_answer = 1;
        }
    }
    u->has_id = ids > 0;
    if (ids == 1) {
        json_error_t je;
        json_t *v = json_loadb(id.p, id.n, JSON_DECODE_ANY, &je);
        if (v && valid_id(v))
            u->id = v;
        else if (v)
            json_decref(v);
    }
    return 0;
}

int mcp_unreadable_read(const char *data, size_t len, struct mcp_unreadable *u)
{
    trim(&data, &len);
    return unreadable_trimmed(data, len, u);
}

void mcp_unreadable_clear(struct mcp_unreadable *u)
{
    if (u->id)
        json_decref(u->id);
    memset(u, 0, sizeof *u);
}

enum mcp_parse_status mcp_parse(const char *data, size_t len, struct mcp_msg *m, json_t **reply)
{
    memset(m, 0, sizeof *m);
    if (reply)
        *reply = NULL;
    trim(&data, &len);
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r'))
        i++;
    if (i == len)
        return MCP_BLANK;

    json_error_t je;
    /* Most lines are plain objects the raw validator vouches for; their tree
     * is built directly, without jansson's per-character lexer. Anything it
     * cannot vouch for (malformed, or merely unusual) goes to jansson. */
    json_t *root = mcp_raw_valid(data, len) ? mcp_raw_tree(data, len) : NULL;
    if (!root)
        root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!root) {
        /* Duplicate keys are well-formed JSON but an ambiguous message: two
         * readers could see two different methods. */
        if (json_error_code(&je) == json_error_duplicate_key) {
            if (reply)
                *reply = error_reply(NULL, MCP_INVALID_REQUEST, "Invalid request");
            return MCP_INVALID;
        }
        /* Well-formed JSON jansson cannot hold (\u0000, an unpaired
         * surrogate, a number out of range, deep nesting) is a message all
         * the same: its sender waits for an answer, so it gets one. */
        struct mcp_unreadable u;
        if (unreadable_trimmed(data, len, &u) == 0) {
            bool quiet = (u.has_method && !u.has_id) || (!u.has_method && u.has_answer);
            if (reply && !quiet) {
                strbuf msg = SB_INIT;
                sb_addf(&msg, "Parse error: %s", u.why);
                *reply = error_reply(u.id, MCP_PARSE_ERROR, msg.buf);
                sb_release(&msg);
            }
            mcp_unreadable_clear(&u);
            return MCP_UNREADABLE;
        }
        if (reply)
            *reply = error_reply(NULL, MCP_PARSE_ERROR, "Parse error");
        return MCP_NOT_JSON;
    }
    if (classify(root, m) != MCP_PARSED) {
        if (reply) {
            json_t *id = json_is_object(root) ? json_object_get(root, "id") : NULL;
            *reply = error_reply(valid_id(id) ? id : NULL, MCP_INVALID_REQUEST, "Invalid request");
        }
        json_decref(root);
        memset(m, 0, sizeof *m);
        return MCP_INVALID;
    }
    m->root = root;
    return MCP_PARSED;
}

json_t *mcp_request_new(json_t *id, const char *method, json_t *params)
{
    json_t *o = json_object();
    json_object_set_new(o, "jsonrpc", json_string("2.0"));
    json_object_set_new(o, "id", id);
    json_object_set_new(o, "method", json_string(method));
    if (params)
        json_object_set_new(o, "params", params);
    return o;
}

json_t *mcp_notification_new(const char *method, json_t *params)
{
    json_t *o = json_object();
    json_object_set_new(o, "jsonrpc", json_string("2.0"));
    json_object_set_new(o, "method", json_string(method));
    if (params)
        json_object_set_new(o, "params", params);
    return o;
}

json_t *mcp_result_new(const json_t *id, json_t *result)
{
    json_t *o = json_object();
    json_object_set_new(o, "jsonrpc", json_string("2.0"));
    json_object_set_new(o, "id", id ? json_deep_copy(id) : json_null());
    json_object_set_new(o, "result", result ? result : json_object());
    return o;
}

json_t *mcp_error_new(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *o = json_object();
    json_object_set_new(o, "jsonrpc", json_string("2.0"));
    json_object_set_new(o, "id", id ? json_deep_copy(id) : json_null());
    json_t *e = json_object();
    json_object_set_new(e, "code", json_integer(code));
    json_object_set_new(e, "message", json_string(message ? message : ""));
    if (data)
        json_object_set_new(e, "data", data);
    json_object_set_new(o, "error", e);
    return o;
}

static int dump_cb(const char *buf, size_t size, void *data)
{
    sb_add((strbuf *)data, buf, size);
    return 0;
}

void mcp_dump(const json_t *msg, strbuf *out)
{
    /* Compact output escapes control characters, so a frame never holds a
     * raw newline. */
    json_dump_callback(msg, dump_cb, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
}
