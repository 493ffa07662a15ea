/*
 * guard — the host guard (docs/guard.md): a pre-tool-use hook that the
 * coding CLIs call before each tool call, answering allow or deny in each
 * CLI's own dialect.
 *
 * Why: agents run shell commands and edit files directly on the host, not
 * through the gateway. The guard keeps them out of the paths the machine
 * owner and the project deny ([guard] deny, [policy.filesystem] deny), keeps
 * writes inside the workspace, temp dirs and the allowed roots, keeps the
 * machine home (consent, policy, evidence, keys) out of reach, refuses a
 * short list of destructive commands, and refuses any agentstack invocation
 * that changes consent, policy, secrets or the guard. It is cooperative: it
 * protects only CLIs that honour their hook.
 *
 * Guarantees:
 *  - guard_hook never fails and never allows by accident: every internal
 *    problem is a deny with a reason. Failure order: no machine file or
 *    [guard] enabled not true → allow, nothing recorded; unreadable machine
 *    file → deny (machine-config-unreadable); broken machine policy → deny
 *    (machine-policy-unavailable, no snapshot fallback); stdin unreadable,
 *    over 4 MiB, not JSON, nested too deep or not an object → deny
 *    (hook-payload-unreadable); a JSON object of a shape the guard does not
 *    know → allow.
 *  - A shell command is judged only when the guard can read all of it
 *    (sh.h, sh_judge.h): a word it needs that does not resolve, or a
 *    construct it does not model, is denied as unreadable unless a [guard]
 *    allow rule names the command; allow rules never lift deny globs, the
 *    machine home, the write scope, the built-in rules or consent.
 *  - Every deny reason starts with exactly "agentstack guard blocked this: ".
 *  - Every deny appends one hash-chained row to $AGENTSTACK_HOME/audit/
 *    calls.jsonl (server "host-guard", outcome "denied"); payload text only
 *    follows a fixed prefix ("bash: ", "read: ", "write: "), control bytes
 *    are stripped and secret values are redacted by lib sync's detector. A
 *    failed append never turns a deny into an allow.
 *  - Bounded: payload ≤ 4 MiB, JSON depth capped by the parser, shell
 *    nesting ≤ SH_MAX_NEST in one text and GUARD_MAX_SHELL_DEPTH re-read
 *    texts (sh -c, eval …), ≤ 8 shell states, globs ≤ 1,024 matches and
 *    20,000 directory entries, brace expansion ≤ 4,096 words, patch
 *    envelopes ≤ 20 000 lines.
 */
#ifndef AS_GUARD_GUARD_H
#define AS_GUARD_GUARD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "audit/audit.h"
#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "policy/policy.h"

#define GUARD_MAX_PAYLOAD ((size_t)4 << 20)
#define GUARD_REASON_PREFIX "agentstack guard blocked this: "
#define GUARD_SERVER AUD_GUARD_SERVER
#define GUARD_MARKER "agentstack-guard"
#define GUARD_MAX_SHELL_DEPTH 3
#define GUARD_MAX_PATCH_LINES 20000
#define GUARD_TOOL_MAX 200
#define GUARD_SYS_DETAIL_MAX 500

/* ---- protocols ----------------------------------------------------------- */

enum guard_proto {
    GUARD_P_CLAUDE,
    GUARD_P_CODEX,
    GUARD_P_GEMINI,
    GUARD_P_CURSOR,
    GUARD_P_COPILOT,
    GUARD_P_ANTIGRAVITY,
    GUARD_P_WINDSURF,
    GUARD_P_COUNT,
    GUARD_P_SNIFF = GUARD_P_COUNT, /* not given: sniffed from the payload's keys */
};
const char *guard_proto_name(enum guard_proto p);
/* 0 and *out set, or -1 for an unknown name. */
int guard_proto_parse(const char *name, enum guard_proto *out);
/* toolCall → antigravity, tool_info → windsurf, toolArgs → copilot,
 * bare command → cursor, turn_id → codex, hook_event_name "BeforeTool" →
 * gemini, else claude. */
enum guard_proto guard_proto_sniff(const json_t *payload);

/* ---- configuration (the machine file's [guard], the failure order) ------- */

enum guard_state {
    GUARD_OFF, /* no machine file, or [guard] enabled is not true */
    GUARD_ON,
    GUARD_UNREADABLE, /* the machine file cannot be read or parsed */
    GUARD_BLOCKED,    /* it parses but its policy or [guard] is invalid */
};

struct guard_root_map {
    char *prefix; /* [guard] project_roots key, expanded */
    strvec roots;
};

struct guard_config {
    enum guard_state state;
    char *path;                /* the machine file */
    char *cause;               /* UNREADABLE/BLOCKED: file:line:col and what is wrong */
    char *hint;                /* the fix, when known */
    struct pol_layer *machine; /* machine policy + [guard] deny as fs deny globs */
    strvec guard_deny;         /* [guard] deny as written */
    strvec allow_roots;        /* expanded, absolute */
    VEC(struct guard_root_map) project_roots;
    strvec allow; /* [guard] allow: commands the owner lets through unread */
};

/* Loads the machine file. Never fails: problems set state and cause.
 * force_on: judge with the lists even when [guard] is disabled or absent
 * (guard test). */
void guard_config_load(struct guard_config *c, bool force_on);
void guard_config_free(struct guard_config *c);

/* ---- the judging context ------------------------------------------------- */

struct guard_ctx {
    char *home;             /* $HOME (lexical), or NULL */
    char *ash;              /* $AGENTSTACK_HOME (lexical) */
    char *ash_real;         /* canonical, or NULL when it does not exist */
    char *cwd;              /* where the tool runs (lexical, absolute) */
    bool cwd_in_home;       /* cwd resolves into the machine home */
    char *workspace;        /* docs/guard.md */
    char *workspace_real;   /* the workspace, symlinks resolved */
    char *project_manifest; /* the project layer's file, or NULL */
    char *machine_path;
    char *machine_display;  /* machine_path with $HOME shown as ~ */
    strvec roots;           /* write roots, lexical */
    strvec roots_real;      /* canonical forms of the existing ones */
    strvec guard_deny;      /* to name [guard] deny in reasons */
    struct pol_ruleset *rs; /* filesystem deny globs of both layers */
    strvec allow;           /* [guard] allow globs (matched against command text) */
    char *machine_real;     /* the machine file, symlinks resolved, or NULL */
    bool machine_id;        /* machine_dev/ino are set (the file exists) */
    unsigned long long machine_dev, machine_ino;
    unsigned long long self_dev, self_ino; /* this binary (a renamed copy is found by */
    size_t self_size;                      /* its bytes); self_size 0: unknown */
};

/* Builds the context for a tool running in cwd (NULL = process cwd).
 * cfg must be GUARD_ON (or forced). -1 + err when the ruleset cannot be
 * compiled (callers deny). */
int guard_ctx_build(struct guard_ctx *x, const struct guard_config *cfg, const char *cwd,
                    struct as_err *err);
void guard_ctx_free(struct guard_ctx *x);
/* docs/guard.md: nearest ancestor of dir holding .git or .agentstack (a directory
 * whose .agentstack is the machine home does not count), else dir. */
char *guard_find_workspace(const char *dir, const char *ash);
/* Lexically absolute form of path: ~, $HOME, ${HOME} expanded (home may be
 * NULL), joined to base when relative, "." and ".." resolved, "//" folded. */
void guard_lexical(const char *base, const char *home, const char *path, strbuf *out);

/* ---- verdicts ------------------------------------------------------------ */

enum guard_kind {
    GUARD_K_NONE, /* nothing the guard judges */
    GUARD_K_READ,
    GUARD_K_WRITE,
    GUARD_K_WRITE_UNKNOWN, /* a known writer that named no target */
    GUARD_K_SHELL,
};

struct guard_verdict {
    bool deny;
    bool by_rule;   /* a deny glob or built-in rule (counts for the teaching line) */
    strbuf reason;  /* without the prefix */
    strbuf subject; /* the audit "tool" field: "bash: …", "read: …", … */
};
void guard_verdict_init(struct guard_verdict *v);
void guard_verdict_release(struct guard_verdict *v);

/* What a payload asks for. */
struct guard_action {
    enum guard_kind kind;
    char *tool;        /* the tool name as sent, or NULL */
    strvec paths;      /* read or write targets */
    strvec reads;      /* files a writer reads too (a copy's source) */
    strvec globs;      /* file globs (Grep glob/include, Glob pattern, read_many_files) */
    char *glob_base;   /* the directory the globs are relative to, or NULL (cwd) */
    bool glob_content; /* the tool reads the files its globs select */
    char *command;     /* shell text */
    char *cwd;         /* from the payload, or NULL */
    char *cwd_rel;     /* the tool's own working directory (workdir, directory), or NULL */
};
void guard_action_free(struct guard_action *a);

/* Classifies a hook payload (the classification of docs/guard.md). *proto is sniffed when
 * GUARD_P_SNIFF. Returns 0, or -1 + err when the payload is not a JSON
 * object (callers deny: hook-payload-unreadable). */
int guard_payload_classify(const char *data, size_t len, enum guard_proto *proto,
                           struct guard_action *a, struct as_err *err);

/* Judges one action / one shell command / one path. */
void guard_judge(const struct guard_ctx *x, const struct guard_action *a, struct guard_verdict *v);
void guard_judge_shell(const struct guard_ctx *x, const char *cmd, struct guard_verdict *v);
void guard_judge_read(const struct guard_ctx *x, const char *path, struct guard_verdict *v);
void guard_judge_write(const struct guard_ctx *x, const char *path, struct guard_verdict *v);
/* A tool's file glob relative to base (NULL: the cwd): refused when it can
 * select a denied name (content: the tool reads what it selects, so even a
 * match-all glob counts). */
void guard_judge_glob(const struct guard_ctx *x, const char *base, const char *glob, bool content,
                      struct guard_verdict *v);

/* ---- the hook ------------------------------------------------------------ */

struct guard_hook_in {
    const char *data; /* stdin bytes */
    size_t len;
    bool unreadable; /* read error, timeout or over GUARD_MAX_PAYLOAD */
    const char *read_cause;
    const char *protocol; /* --protocol, or NULL (sniff) */
    const char *cwd;      /* process cwd override (tests), or NULL */
};

struct guard_hook_out {
    int exit_code;
    strbuf out; /* stdout */
    strbuf err; /* stderr */
    bool denied;
    bool audited;
};
void guard_hook_out_release(struct guard_hook_out *o);

/* The whole hook: failure order, classification, judging, reply in the
 * protocol's dialect, audit row, teaching line. */
void guard_hook(const struct guard_hook_in *in, struct guard_hook_out *out);

/* Reads fd until EOF into out, at most max bytes (*too_big when more came),
 * giving up after timeout_ms without progress. 0, or -1 with *cause. */
int guard_read_input(int fd, size_t max, int timeout_ms, strbuf *out, bool *too_big,
                     const char **cause);

/* The reply for one protocol (docs/guard.md, Answers). reason is the full text (with prefix). */
void guard_reply(enum guard_proto p, bool deny, const char *reason, struct guard_hook_out *o);

/* ---- evidence ------------------------------------------------------------ */

/* Copies s with each secret value replaced by "[redacted]" — the values the
 * literal-secret detector of `lib sync` locates in free text
 * (lsec_redact) — and control bytes turned into spaces. */
void guard_redact(const char *s, size_t len, strbuf *out);
/* Appends a deny row to <ash>/audit/calls.jsonl. project NULL for system
 * refusals. */
int guard_audit_deny(const char *ash, const char *project, const char *tool, const char *detail,
                     size_t detail_max, struct as_err *err);

/* ---- wiring ------------------------------------------------------------ */

enum guard_wire_shape {
    GUARD_W_CLAUDE,  /* {"hooks":{EVENT:[{"matcher":"*","hooks":[{"type":"command",...}]}]}} */
    GUARD_W_FLAT,    /* {"version":1,"hooks":{EVENT:[{"command":...}]}} (cursor, windsurf) */
    GUARD_W_COPILOT, /* owned file {"version":1,"hooks":{"preToolUse":[{"type":"command",...}]}} */
    GUARD_W_PLUGIN,  /* owned JavaScript/TypeScript plugin file (opencode, pi) */
};

/* "claude", "flat", "copilot", "plugin": 0 and *out set, or -1. The
 * descriptor's guard.shape is checked with it at load. */
int guard_wire_shape_parse(const char *name, enum guard_wire_shape *out);

#define GUARD_WIRE_EVENTS 4

/* Where one CLI's pre-tool hook lives. The CLI's adapter descriptor holds
 * it (its guard block, docs/adapters.md); `agentstack guard` builds one wire
 * per descriptor that has one, and a CLI without one is not protected. */
struct guard_wire {
    const char *name;    /* display name */
    const char *adapter; /* adapter id for detection */
    const char *file;    /* ~-relative path */
    const char *key;     /* top-level object holding events ("hooks"), NULL for owned files */
    const char *events[GUARD_WIRE_EVENTS]; /* NULL after the last */
    enum guard_proto proto;
    enum guard_wire_shape shape;
};

/* The hook command line written into a CLI's config:
 * '<ash>/guard/agentstack-guard' check --protocol <p>. */
void guard_hook_command(const char *ash, enum guard_proto p, strbuf *out);
/* The wrapper script body that execs exe (so hooks keep working when the
 * binary moves only after re-install, and so our entries carry the marker). */
void guard_wrapper_script(const char *exe, strbuf *out);
/* The owned plugin file for a GUARD_W_PLUGIN wire / GUARD_W_COPILOT wire. */
void guard_owned_file(const struct guard_wire *w, const char *ash, strbuf *out);

/* Given the current value of w->key (an object or NULL), returns the new
 * value with our entries added (install) or removed (!install), other
 * entries untouched. NULL when the result is empty (the key can go). */
json_t *guard_wire_edit(const struct guard_wire *w, const json_t *cur, const char *ash,
                        bool install);
/* 1 if cur (the value of w->key) holds one of our entries for every event. */
bool guard_wire_installed(const struct guard_wire *w, const json_t *cur);

#endif
