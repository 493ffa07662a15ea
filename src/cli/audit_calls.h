/*
 * audit_calls — how `agentstack audit --calls` shows its per-tool table
 * (docs/audit.md, "agentstack audit --calls"; the JSON shape in
 * docs/json.md, "audit --calls --json").
 *
 * Why: the table is read by people on a terminal and by scripts; both
 * views are built here from one aud_table, so they cannot disagree.
 *
 * Guarantees:
 *  - server and tool names come from the log (an upstream chose them):
 *    the text view passes them through term_sanitize, so a name cannot
 *    move the cursor or add a line; the JSON view keeps them as data;
 *  - a latency that does not exist (no call reached the upstream) is "-"
 *    in the text and null in the JSON, never 0.
 */
#ifndef AS_CLI_AUDIT_CALLS_H
#define AS_CLI_AUDIT_CALLS_H

#include <stdio.h>

#include <jansson.h>

#include "audit/calls_table.h"

/* The table as aligned columns on f; nothing when it has no rows. */
void audit_table_print(FILE *f, const struct aud_table *t);
/* [{"server","tool","calls","denied","errors","p50_ms","p99_ms"}…], new. */
json_t *audit_table_json(const struct aud_table *t);

#endif
