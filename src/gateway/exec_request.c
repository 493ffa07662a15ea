/*
 * The tools_execute request validator (see exec_request.h).
 *
 * Why: one function decides whether a request may go any further, so the
 * gateway stages nothing for a request any rule refuses.
 * Guarantees: exec_request.h; every refusal leaves out empty.
 */
#include "gateway/exec_request.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

static __attribute__((format(printf, 3, 4))) const char *refuse(strbuf *msg, const char *cat,
                                                                const char *fmt, ...)
{
    sb_reset(msg);
    sb_addf(msg, "Error [%s]: ", cat);
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(msg, fmt, ap);
    va_end(ap);
    return cat;
}

static const char *invalid(strbuf *msg, const char *what)
{
    return refuse(msg, "invalid-input", "invalid tools_execute request: %s", what);
}

int gw_exec_machine_limits(int64_t timeout_ms, int64_t max_calls, int64_t max_output_bytes,
                           struct gw_exec_limits *out, strbuf *why)
{
    const struct {
        const char *key;
        int64_t v;
        long long def, ceiling;
        long long *dst;
    } l[] = {
        {"timeout_ms", timeout_ms, GW_EXEC_TIMEOUT_DEFAULT, GW_EXEC_TIMEOUT_CEILING,
         &out->timeout_ms},
        {"max_calls", max_calls, GW_EXEC_CALLS_DEFAULT, GW_EXEC_CALLS_CEILING, &out->max_calls},
        {"max_output_bytes", max_output_bytes, GW_EXEC_OUTPUT_DEFAULT, GW_EXEC_OUTPUT_CEILING,
         &out->max_output_bytes},
    };
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
        if (l[i].v < 0 || l[i].v > l[i].ceiling) {
            sb_addf(why,
                    "[experimental.tools_execute_limits] %s = %lld is outside 1..%lld in the "
                    "machine manifest",
                    l[i].key, (long long)l[i].v, l[i].ceiling);
            return -1;
        }
        *l[i].dst = l[i].v ? (long long)l[i].v : l[i].def;
    }
    return 0;
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

int gw_exec_grant_name_ok(const char *s)
{
    size_t n = strlen(s);
    const char *sep = strstr(s, "__");
    if (n == 0 || n > 257 || !sep || sep == s || !sep[2])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return 0;
    return 1;
}

static const char *parse_limits(const json_t *lim, const struct gw_exec_limits *machine,
                                struct gw_exec_limits *out, strbuf *msg)
{
    *out = *machine;
    if (!lim)
        return NULL;
    if (!json_is_object(lim))
        return invalid(msg, "`limits` must be an object");
    static const char *const keys[] = {"timeoutMs", "maxCalls", "maxOutputBytes"};
    long long *dst[] = {&out->timeout_ms, &out->max_calls, &out->max_output_bytes};
    const long long cap[] = {machine->timeout_ms, machine->max_calls, machine->max_output_bytes};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)lim, k, v)
    {
        size_t i = 0;
        while (i < 3 && strcmp(k, keys[i]) != 0)
            i++;
        if (i == 3)
            return invalid(msg, "`limits` accepts only timeoutMs, maxCalls and maxOutputBytes");
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
            return refuse(msg, "invalid-input",
                          "invalid tools_execute request: `limits.%s` must be a positive integer",
                          keys[i]);
        if (json_integer_value(v) > cap[i])
            return refuse(msg, "invalid-input",
                          "invalid tools_execute request: `limits.%s` may only narrow the "
                          "machine's limit",
                          keys[i]);
        *dst[i] = (long long)json_integer_value(v);
    }
    return NULL;
}

static const char *parse_grants(const json_t *at, gw_exec_lookup_fn lookup, void *ctx, strvec *out,
                                strbuf *msg)
{
    if (!json_is_array(at))
        return invalid(msg, "`allowTools` must be an array of exact server__tool names");
    size_t n = json_array_size(at);
    if (n == 0 || n > GW_EXEC_GRANTS_MAX)
        return invalid(msg, "`allowTools` must name 1 to 100 tools");
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(at, i));
        if (!s)
            return invalid(msg, "every `allowTools` entry must be a string");
        if (strchr(s, '*') || strchr(s, '?'))
            return invalid(msg, "`allowTools` takes exact names; wildcards are not allowed");
        if (!gw_exec_grant_name_ok(s))
            return invalid(msg, "every `allowTools` entry must be an exact server__tool name");
        if (strvec_find(out, s) >= 0)
            return refuse(msg, "invalid-input",
                          "invalid tools_execute request: `allowTools` names %s twice", s);
        switch (lookup(ctx, s)) {
        case GW_EXEC_TOOL_ALLOWED:
            break;
        case GW_EXEC_TOOL_DENIED:
            return refuse(msg, "policy-denied",
                          "allowTools names %s, which policy denies; nothing was run", s);
        default:
            return refuse(msg, "unknown-tool",
                          "allowTools names %s, which this gateway does not serve; nothing "
                          "was run",
                          s);
        }
        strvec_push(out, s);
    }
    return NULL;
}

const char *gw_exec_request_parse(const json_t *args, const struct gw_exec_limits *machine,
                                  gw_exec_lookup_fn lookup, void *ctx, struct gw_exec_request *out,
                                  strbuf *msg)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(args))
        return invalid(msg, "the arguments must be an object");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v)
    {
        if (strcmp(k, "code") != 0 && strcmp(k, "allowTools") != 0 && strcmp(k, "input") != 0 &&
            strcmp(k, "limits") != 0)
            return invalid(msg, "it accepts only code, allowTools, input and limits");
    }
    const json_t *code = json_object_get(args, "code");
    if (!json_is_string(code))
        return invalid(msg, "`code` must be a string holding one TypeScript program");
    size_t clen = json_string_length(code);
    if (clen == 0 || clen > GW_EXEC_SOURCE_MAX)
        return invalid(msg, "`code` must be 1 byte to 256 KiB");
    if (memchr(json_string_value(code), '\0', clen))
        return invalid(msg, "`code` may not contain NUL");
    const char *cat;
    strvec grants = VEC_INIT;
    if ((cat = parse_grants(json_object_get(args, "allowTools"), lookup, ctx, &grants, msg)) ||
        (cat = parse_limits(json_object_get(args, "limits"), machine, &out->limits, msg))) {
        strvec_clear(&grants);
        memset(out, 0, sizeof *out);
        return cat;
    }
    const json_t *input = json_object_get(args, "input");
    char *ij = json_dumps(input ? input : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    if (!ij || strlen(ij) > GW_EXEC_INPUT_MAX) {
        free(ij);
        strvec_clear(&grants);
        memset(out, 0, sizeof *out);
        return invalid(msg, "`input` must be JSON of at most 1 MiB");
    }
    out->code = xstrndup(json_string_value(code), clen);
    out->code_len = clen;
    out->grants = grants;
    out->input_json = ij;
    return NULL;
}

void gw_exec_request_free(struct gw_exec_request *r)
{
    free(r->code);
    free(r->input_json);
    strvec_clear(&r->grants);
    memset(r, 0, sizeof *r);
}
