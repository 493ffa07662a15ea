/*
 * record — the flight recorder of protected runs: one directory per run
 * under $AGENTSTACK_HOME/runs/<id>/ (0700) holding a hash-chained
 * events.jsonl (docs/library.md) and the posture slug; and the readers
 * behind `agentstack report <id>` and `agentstack runs` (docs/sandbox.md).
 *
 * Why: a sandboxed run's decisions (every egress allow and block, with its
 * rule and layer) must be readable afterwards and tamper-evident; a run
 * that cannot be recorded must not start ("refusing to run unobserved").
 *
 * Guarantees:
 *  - Every event is one JSON line, "event" first, then "ts" (Unix seconds),
 *    then the fields, ending with "prev" (the audit chain); appends are
 *    checked: a failed write is an error the caller acts on.
 *  - Run ids are validated before any path is built from them: "r-" ids
 *    and path ids of 1–128 [A-Za-z0-9._-], never "." or "..".
 *  - Readers skip unparsable lines and never fail on a hostile log; text
 *    from the log is sanitized before it reaches a terminal.
 */
#ifndef AS_SANDBOX_RECORD_H
#define AS_SANDBOX_RECORD_H

#include <jansson.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "egress/proxy.h"

struct sbx_rec {
    char *dir;    /* $AGENTSTACK_HOME/runs/<id> */
    char *events; /* <dir>/events.jsonl */
    int failed;   /* an append failed (the proxy then refuses new tunnels) */
};

/* 1 when id is usable as a run directory name. */
int sbx_run_id_valid(const char *id);

/* Creates runs/<id>/ (0700; an existing one is an error), the posture file
 * and the empty events.jsonl (0600). */
int sbx_rec_create(const char *home, const char *run_id, const char *posture, struct sbx_rec *r,
                   struct as_err *err);
/* Appends {"event": name, "ts": now, ...fields}; fields is consumed (may be NULL). */
int sbx_rec_append(struct sbx_rec *r, const char *name, json_t *fields, struct as_err *err);
/* The proxy's record callback (ctx = struct sbx_rec *). */
int sbx_rec_egress(void *ctx, const struct sbx_egress_event *ev);
/* Removes the run directory (a run refused before anything was launched). */
void sbx_rec_remove(struct sbx_rec *r);
void sbx_rec_close(struct sbx_rec *r);

/* Loads a run: events (array, in order), posture slug (or NULL), and the
 * calls.jsonl rows tagged with this run. Returns 0, 1 when there is no such
 * run, -1 + err. */
int sbx_report_load(const char *home, const char *run_id, json_t **events, char **posture,
                    json_t **calls, struct as_err *err);
/* The calls.jsonl rows (calls.jsonl.1, then calls.jsonl) whose string
 * member key equals value: "run" for a run, "execution" for a
 * tools_execute execution (docs/tools-execute.md). Never NULL. */
json_t *sbx_calls_tagged(const char *home, const char *key, const char *value);
/* The human report (docs/sandbox.md, "The flight recorder"); host runs add the
 * "Locked run <cli> · HOST / PROTECTED" block (gates, grant, outcome) or
 * "Host run <cli> · HOST". */
void sbx_report_render(const char *run_id, const char *posture, const json_t *events,
                       const json_t *calls, strbuf *out);
/* {"run", "posture", "events", "calls", "egress"} (calls minus those already
 * in events; egress: sbx_egress_summary, null without egress). */
json_t *sbx_report_json(const char *run_id, const char *posture, json_t *events, json_t *calls);

/* Every run under runs/ (sandboxed and host runs), newest first: [{id,
 * posture, harness, started, exit?, signal?, outcome? (host runs:
 * completed, refused, launch-failed, exited, signaled), duration_ms?,
 * workspace}]. */
json_t *sbx_runs_list(const char *home, struct as_err *err);

/* The exact posture label for a slug ("lockdown" → "LOCKDOWN / ENFORCED ·
 * NO DIRECT ROUTE"), or NULL. */
const char *sbx_posture_label(const char *slug);

#endif
