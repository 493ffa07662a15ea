/*
 * audit — tamper-evident evidence logs.
 *
 * Why: the call audit, trust, load, run and guard logs are the only record
 * of what an agent did through agentstack; a log anyone can silently edit
 * is no evidence. audit/ knows no gateway types: callers hand it JSON
 * objects and plain strings.
 *
 * Guarantees:
 *  - Every appended line is the caller's JSON object, keys in the caller's
 *    order, compact, ending with "prev": the SHA-256 hex of the previous
 *    line's bytes (without its newline); a chain's first line carries 64
 *    zeros. Appends hold flock on the log, so concurrent processes can never
 *    fork the chain; a torn last line is terminated, not extended.
 *  - Rotation (past rotate_bytes, before an append) renames the log to
 *    "<log>.1" under the lock, and the new file's first line links to the
 *    last line of ".1". Files are 0600 (re-tightened on open), the log's
 *    directory 0700.
 *  - Every append also rewrites the log's anchor ("<log>.head", audit/head.h)
 *    under the same locks: the rows of the log and of its ".1", and the
 *    digests of their first and last rows, sealed with the audit key. So
 *    rows cut from either end, a row removed with the chain recomputed, or
 *    an edited last row are found too; what stays undetectable (a rewrite
 *    by someone who can read the key) is in docs/audit.md.
 *  - Fail closed: a log or anchor that is a symlink, a directory or
 *    otherwise not a regular file is never written through or read
 *    (O_NOFOLLOW); the append fails, and the verifier reports the file as
 *    broken. A damaged anchor fails appends until it is removed.
 *  - The verifier reports the first line whose link or shape is broken as
 *    file:line (line 0: the file as a whole). A line edited in place is
 *    found at the next line (the first whose "prev" no longer matches).
 *  - Argument digests are keyed (HMAC-SHA-256, first 12 hex) with a 32-byte
 *    random key created 0600 on first use; an unusable key yields "" and one
 *    warning, never an unkeyed digest. Values are never written.
 */
#ifndef AS_AUDIT_AUDIT_H
#define AS_AUDIT_AUDIT_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"

#define AUD_ROTATE_BYTES ((size_t)5 << 20)
#define AUD_DIGEST_HEX 12
#define AUD_DETAIL_MAX 200
#define AUD_LOCK_TIMEOUT_MS 10000

/* ---- the chain ------------------------------------------------------------ */

struct aud_append_opts {
    size_t rotate_bytes; /* 0 = never rotate (trust.jsonl) */
    int lock_timeout_ms; /* <= 0: AUD_LOCK_TIMEOUT_MS */
};

/* Appends rec (a JSON object without a "prev" key) as one line + "prev".
 * Creates the file 0600 and missing parents 0700. opts may be NULL (no
 * rotation). */
int aud_append(const char *path, const json_t *rec, const struct aud_append_opts *opts,
               struct as_err *err);
/* aud_append for a record this module already encoded: body is one compact
 * JSON object, valid and without a "prev" key (the caller guarantees it). */
int aud_append_encoded(const char *path, const strbuf *body, const struct aud_append_opts *opts,
                       struct as_err *err);

/* 0 when an append to path would find what it needs: the log a regular
 * file at the path (created when absent; never a symlink or a directory),
 * its anchor usable. Cheap while this process's open log is still the one
 * at the path (one lstat). -1 + err otherwise: a writer that must not act
 * unrecorded refuses. */
int aud_append_ready(const char *path, struct as_err *err);

struct aud_break {
    char file[PATH_MAX]; /* the file holding the broken line */
    unsigned line;       /* 1-based line number in that file; 0: the file as a whole */
    char reason[300];
    char note[400]; /* intact, but worth saying (rows that predate an anchor) */
};

/* Verifies path (and path.1 before it, when present). Returns 0 when
 * intact, 1 with *b filled at the first break, -1 + err when a file cannot
 * be read. A missing log is intact. lines (may be NULL) = lines checked. */
int aud_verify(const char *path, struct aud_break *b, size_t *lines, struct as_err *err);

/* Verifies every chained log under home: audit/<name>.jsonl (byte order)
 * and runs/<id>/events.jsonl (byte order of id). Stops at the first break.
 * files (may be NULL) = logs checked. */
int aud_verify_home(const char *home, struct aud_break *b, size_t *files, struct as_err *err);

/* ---- argument digests ------------------------------------------------------ */

/* Loads $home/audit/key, creating it (32 random bytes, 0600, published
 * atomically so racing creators agree) when absent. Accepts 16–64 bytes. */
int aud_key_load(const char *home, unsigned char key[64], size_t *keylen, struct as_err *err);

/* out = first 12 hex of HMAC-SHA-256(key, canonical JSON of args); args
 * NULL means {}. On an unusable key: out = "" and one warning on stderr per
 * process. */
void aud_args_digest(const char *home, const json_t *args, char out[AUD_DIGEST_HEX + 1]);

/* The home a log belongs to, whose audit key keys its anchor:
 * <home>/audit/<name>.jsonl and <home>/runs/<id>/events.jsonl → <home>;
 * any other log → its own directory. */
void aud_log_home(const char *log, strbuf *out);
/* HMAC-SHA-256 (hex) under that home's audit key of
 * "agentstack-audit-head-v1" NUL <the log's last two path components> NUL
 * body: the anchor's seal. -1 + err when the key is unusable. */
int aud_head_mac(const char *log, const char *body, size_t len, char hex[65], struct as_err *err);

/* ---- call rows ------------------------------------------------------------- */

/* Refusal rows that are not calls carry one of these in "tool". */
int aud_is_family_tool(const char *tool);

/* A tools_execute execution's own row (docs/tools-execute.md, "Evidence"):
 * sizes and a digest of the code, never the code, input or output. */
struct aud_execution {
    long long calls;         /* inner calls made */
    long long output_bytes;  /* the program's stdout + stderr */
    long long result_bytes;  /* the serialized result; 0 when there is none */
    const char *code_sha256; /* SHA-256 hex of the program's source */
    const char *limit;       /* the limit that stopped it (timeoutMs, memory, …); omitted
                              * when NULL/"" */
    const char *limits;      /* what bounded its resources: "cgroup-v2", "cgroup-v1" or
                              * "rlimit"; omitted when NULL (it never started) */
};

/* The server and tool an execution's own row names. */
#define AUD_EXEC_SERVER "agentstack"
#define AUD_EXEC_TOOL "tools_execute"
/* 1 when row is an execution's own row (not a brokered call). */
int aud_is_execution_row(const json_t *row);

struct aud_call {
    long long ts;            /* unix seconds; 0 = now */
    const char *run;         /* omitted when NULL/"" */
    const char *execution;   /* a tools_execute inner call: its x-… id; omitted when NULL/"" */
    long pid;                /* 0 = getpid() */
    const char *project;     /* canonical project root; omitted when NULL/"" */
    const char *server;      /* refusal rows: the subject */
    const char *tool;        /* bare tool name, or a family (trust|fence|pin|egress|secret) */
    const char *args_digest; /* "" on family rows */
    const char *outcome;     /* ok | error | denied */
    const char *detail;      /* denied: the rule text; error: its class; egress rows: the
                              * destination (also on an allow); cut to 200 bytes */
    const char *rule;        /* denials by policy: the pattern */
    const char *layer;       /* denials by policy: machine | project */
    long long ms;
    const struct aud_execution *exec; /* an execution's own row; NULL on every other */
    /* The keyed digest of the answer forwarded (resources/read, prompts/get,
     * completion/complete), written after args_digest; omitted when NULL/"". */
    const char *result_digest;
};

/* The row as a JSON object: ts, run?, execution?, pid, project?, server, tool,
 * args_digest, result_digest?, outcome, detail?, ms, rule?, layer?, then for an execution's
 * own row calls, output_bytes, result_bytes, code_sha256, limit?, limits? (prev is
 * added by the appender). detail is omitted on ok rows but egress ones. */
json_t *aud_call_record(const struct aud_call *c);
/* The same row written straight as compact JSON: byte for byte what
 * json_dumps(aud_call_record(c), JSON_COMPACT | JSON_PRESERVE_ORDER) prints
 * (test_calls checks it), without building and dumping a jansson tree on
 * every brokered call. */
void aud_call_encode(const struct aud_call *c, strbuf *out);
/* aud_append_ready for $home/audit/calls.jsonl. */
int aud_call_ready(const char *home, struct as_err *err);
/* Appends to $home/audit/calls.jsonl, rotating past 5 MiB. */
int aud_call_append(const char *home, const struct aud_call *c, struct as_err *err);

/* Successful skill loads: $home/audit/loads.jsonl {ts,name,reason,project?,run?},
 * name cut to 200 bytes, reason to 500. */
int aud_load_append(const char *home, const char *name, const char *reason, const char *project,
                    const char *run, struct as_err *err);

/* Copies s into out, cut to at most max bytes on a UTF-8 boundary, with
 * invalid UTF-8 bytes replaced by '?'. */
void aud_utf8_cut(const char *s, size_t max, strbuf *out);

/* ---- summary ---------------------------------------------------------------- */

/* The `server` of the host guard's deny rows in calls.jsonl: hook
 * refusals, not brokered calls. */
#define AUD_GUARD_SERVER "host-guard"

struct aud_summary {
    size_t calls;  /* brokered call rows (family, host-guard and execution rows excluded) */
    size_t tools;  /* distinct server__tool among them */
    size_t denied; /* call rows carrying a "layer" */
    size_t ok, errors;
    size_t guard_denied; /* host-guard rows (counted apart, not as calls) */
    size_t unreadable;   /* lines that were not JSON objects (skipped) */
    json_t *by_tool;     /* {"server__tool": {"calls": n, "denied": n}}, in first-seen order */
};

/* The one reader of the rotated row logs (calls.jsonl, loads.jsonl): for
 * <home>/audit/<name>.1 then <home>/audit/<name>, fn(ctx, row) for each line
 * that is a JSON object (row is freed after the call); a non-empty line that
 * is not one counts into *unreadable (unless NULL). Never through a symlink
 * and never a non-regular file: what is read is the evidence file. A file
 * that is not there reads as empty. 0, or -1 with err (the first file that
 * cannot be read stops the walk). Callers: aud_calls_summarize,
 * aud_calls_table, `report usage` (loads). */
typedef void (*aud_row_fn)(void *ctx, json_t *row);
int aud_log_each(const char *home, const char *name, aud_row_fn fn, void *ctx, size_t *unreadable,
                 struct as_err *err);

/* Reads calls.jsonl.1 then calls.jsonl; project NULL = every project. */
int aud_calls_summarize(const char *home, const char *project, struct aud_summary *s,
                        struct as_err *err);
void aud_summary_release(struct aud_summary *s);
/* "2 calls · 2 tools · 1 denied by policy — digests, never values" */
void aud_summary_line(const struct aud_summary *s, strbuf *out);

#endif
