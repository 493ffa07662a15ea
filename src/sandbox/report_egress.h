/*
 * report_egress — the "Egress" and "Timeline" part of `agentstack report
 * <run-id>` (docs/sandbox.md, "The flight recorder").
 *
 * Why: a run's egress log holds one event per request; an agent retrying a
 * blocked host writes hundreds. A person reading the report wants each host
 * once, with how often it was let through and refused and why, and when
 * the traffic happened, not a page per request.
 *
 * Guarantees:
 *  - One line per host ("server → host", then its counts and the rule
 *    that refused it), in the order each host was first seen, whatever
 *    the number of requests to it; its ports, the servers (cli ids) that
 *    asked, its allowed and denied counts and the distinct rules that
 *    refused it are kept (the text shows the first rule and how many
 *    others there were; the JSON all of them).
 *  - The timeline is one line: the run's requests counted in equal time
 *    buckets from the run's start (its first event), the bucket the
 *    smallest of 1s, 5s, 10s, 30s, 1m, 2m, 5m, 10m, 15m, 30m, 1h, 2h, 6h,
 *    12h or whole days that needs at most SBX_TIMELINE_MARKS marks.
 *  - Every string from the log passes through term_sanitize in the text;
 *    a log whose events lack a field or carry the wrong type is shown with
 *    what is there, never a crash (events come from a file).
 */
#ifndef AS_SANDBOX_REPORT_EGRESS_H
#define AS_SANDBOX_REPORT_EGRESS_H

#include <jansson.h>

#include "base/strbuf.h"

#define SBX_TIMELINE_MARKS 40

/* The run's egress, summed up: NULL when it has no egress event, else
 * {"requests","allowed","denied","servers":[…],"hosts":[{"host","ports":[…],
 * "servers":[…],"allowed","denied","rules":[…]}],"timeline":{"start",
 * "bucket_s","requests":[…],"denied":[…]}} (docs/sandbox.md). */
json_t *sbx_egress_summary(const json_t *events);

/* The text of a summary: "  Egress    …" then one line per host, then
 * "  Timeline  …". */
void sbx_egress_render(const json_t *summary, strbuf *out);

#endif
