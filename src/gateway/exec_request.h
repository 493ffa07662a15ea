/*
 * exec_request — the tools_execute request and its limits, validated before
 * anything is staged (docs/tools-execute.md).
 *
 * Why: the request is written by an agent and names what a confined program
 * may reach. It is checked whole, fail closed, in one pure function the unit
 * tests drive directly; the gateway only supplies the lookup that says
 * whether a name is on its policy-filtered surface.
 *
 * Guarantees:
 *  - Only `code`, `allowTools`, `input` and `limits` (with only `timeoutMs`,
 *    `maxCalls`, `maxOutputBytes`) are accepted; any other member, any wrong
 *    type, an empty or oversize source (256 KiB), an input over 1 MiB
 *    serialized, 0 or more than 100 grants, a duplicate grant, a wildcard
 *    (`*`, `?`) or a name that is not `server__tool` is refused.
 *  - Every grant is looked up: absent from the surface → unknown-tool;
 *    present but denied by policy → policy-denied. Nothing is granted that
 *    the lookup did not call allowed.
 *  - Limits only narrow: a requested limit above the machine's is refused,
 *    zero or negative is refused; unset ones take the machine's.
 *  - The machine's limits default to 15 000 ms / 20 calls / 65 536 bytes and
 *    may not exceed 60 000 / 100 / 262 144 (past a ceiling the feature is
 *    unavailable, never silently clamped).
 *  - Error texts are fixed `Error [<category>]: …` lines; the only request
 *    text they repeat is a tool name that passed the name check.
 */
#ifndef AS_GATEWAY_EXEC_REQUEST_H
#define AS_GATEWAY_EXEC_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "base/vec.h"

#define GW_EXEC_SOURCE_MAX (256u * 1024u)
#define GW_EXEC_INPUT_MAX (1024u * 1024u)
#define GW_EXEC_RESULT_MAX (1024u * 1024u)
#define GW_EXEC_GRANTS_MAX 100

#define GW_EXEC_TIMEOUT_DEFAULT 15000
#define GW_EXEC_TIMEOUT_CEILING 60000
#define GW_EXEC_CALLS_DEFAULT 20
#define GW_EXEC_CALLS_CEILING 100
#define GW_EXEC_OUTPUT_DEFAULT 65536
#define GW_EXEC_OUTPUT_CEILING 262144

#define GW_EXEC_DISABLED "Error: isolated execution is not enabled by machine policy"

struct gw_exec_limits {
    long long timeout_ms, max_calls, max_output_bytes;
};

/* The machine's limits from its manifest values (0 = unset → default).
 * -1 + why when one is past its ceiling or not positive. */
int gw_exec_machine_limits(int64_t timeout_ms, int64_t max_calls, int64_t max_output_bytes,
                           struct gw_exec_limits *out, strbuf *why);

enum gw_exec_lookup {
    GW_EXEC_TOOL_ABSENT = 0,
    GW_EXEC_TOOL_ALLOWED,
    GW_EXEC_TOOL_DENIED,
};
typedef enum gw_exec_lookup (*gw_exec_lookup_fn)(void *ctx, const char *full_name);

struct gw_exec_request {
    char *code;
    size_t code_len;
    strvec grants;    /* exact server__tool names, request order */
    char *input_json; /* serialized input ("null" by default) */
    struct gw_exec_limits limits;
};

/* Validates args. NULL on success (out filled), else the category
 * ("invalid-input", "unknown-tool", "policy-denied") with the whole error
 * text in msg. */
const char *gw_exec_request_parse(const json_t *args, const struct gw_exec_limits *machine,
                                  gw_exec_lookup_fn lookup, void *ctx, struct gw_exec_request *out,
                                  strbuf *msg);
void gw_exec_request_free(struct gw_exec_request *r);

/* True when s is a grantable name: [A-Za-z0-9_.-] on both sides of the
 * first "__", neither side empty, at most 257 bytes, no wildcard. */
int gw_exec_grant_name_ok(const char *s);

#endif
