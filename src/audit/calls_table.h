/*
 * calls_table — the per-tool table of `agentstack audit --calls`
 * (docs/audit.md, "agentstack audit --calls"), and its --since parser.
 *
 * Why: the one-line summary says how many calls there were; the question
 * after it is which tool was called, refused, failing or slow. The table
 * answers it from the same rows, under the same rules of what counts as a
 * brokered call (audit.h: refusal families, execution rows and host-guard
 * rows are not calls), and for a window of time, one server or one tool.
 *
 * Guarantees:
 *  - Reads calls.jsonl.1 then calls.jsonl, never through a symlink or from
 *    anything but a regular file (as aud_calls_summarize does); a line
 *    that is not a JSON object is skipped and counted in sum.unreadable.
 *  - A filter drops a row before it is counted anywhere, so the summary in
 *    the table (sum) and its rows always agree: sum.calls is the sum of the
 *    rows' calls, sum.tools the number of rows.
 *  - Rows come sorted by server, then tool (byte order), one per
 *    server/tool pair.
 *  - Latency percentiles are over the calls that reached the upstream
 *    (outcome ok or error): a refusal has no latency worth the name and
 *    would pull p50 to 0. Nearest rank: the smallest ms that at least p% of
 *    those calls did not exceed. No such call: timed is 0 and both are -1.
 *  - aud_parse_since accepts only what docs/audit.md lists; anything else
 *    is -1 with a message naming the value and the accepted forms.
 */
#ifndef AS_AUDIT_CALLS_TABLE_H
#define AS_AUDIT_CALLS_TABLE_H

#include <stddef.h>

#include "audit/audit.h"
#include "base/err.h"

struct aud_table_filter {
    const char *project; /* canonical root; NULL = every project */
    long long since;     /* unix seconds: rows with an earlier ts are skipped; 0 = no bound */
    const char *server;  /* exact server name; NULL = any */
    const char *tool;    /* exact tool name; NULL = any */
};

struct aud_tool_row {
    char *server, *tool;
    size_t calls;
    size_t denied;            /* outcome "denied" (a policy or secrets refusal of this call) */
    size_t policy_denied;     /* those carrying a "layer": the summary's "denied by policy" */
    size_t errors;            /* outcome "error" */
    size_t timed;             /* calls with a latency (outcome ok or error) */
    long long p50_ms, p99_ms; /* -1 when timed is 0 */
    long long *ms;            /* internal: the timed calls' ms */
    size_t ms_cap;
};

struct aud_table {
    struct aud_tool_row *rows;
    size_t n, cap;
    struct aud_summary sum; /* the summary of the same filtered rows (by_tool included) */
};

/* Fills t from $home/audit/calls.jsonl(.1) under f (NULL: no filter).
 * -1 + err when a file cannot be read (t is then released). */
int aud_calls_table(const char *home, const struct aud_table_filter *f, struct aud_table *t,
                    struct as_err *err);
void aud_table_release(struct aud_table *t);

/* --since: a duration back from now ("90s", "30m", "1h", "2d", "1w") or
 * an ISO 8601 time ("2026-12-01", "2026-12-01T09:30", "…T09:30:15",
 * each with an optional "Z" or "+HH:MM"/"-HH:MM"; no offset means UTC).
 * *out = unix seconds. */
int aud_parse_since(const char *s, long long now, long long *out, struct as_err *err);

#endif
