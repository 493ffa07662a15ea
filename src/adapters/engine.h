/*
 * engine — apply and restore: plan, preview, write, record, undo (docs/adapters.md).
 *
 * Why: every command that changes a CLI's config (apply, use, connect,
 * sessions, restore) must go through the same gate, lock, writer, ledger
 * and history, or one of them would eventually damage a file or lose an undo.
 *
 * Guarantees:
 *  - Planning is read-only. A write holds the one writer lock
 *    ($AGENTSTACK_HOME/.lock, 10 s) across plan → write → ledger → history.
 *  - Each target succeeds or fails on its own: a malformed, read-only,
 *    symlinked-out-of-project or otherwise unwritable file fails that target
 *    (file untouched) and the others are still written and recorded.
 *  - Writes go through fs_write_atomic (temp + fsync + rename, mode and owner
 *    kept, rolling backup); new secret-bearing files are created 0600; at
 *    project scope a path (or any parent) resolving outside the project
 *    root is refused before anything is created.
 *  - The ownership ledger ($AGENTSTACK_HOME/state.json, atomic, 0600) lists
 *    what we wrote; pruning removes only names it lists. The undo history
 *    ($AGENTSTACK_HOME/history/, 0600) keeps each file's previous bytes, so
 *    restore puts them back byte for byte (and deletes files we created).
 *  - A run that changes nothing writes nothing: no file, backup, ledger or
 *    history change.
 *  - Unresolved secrets and an untrusted project block the target's writes;
 *    previews never print a resolved secret value.
 */
#ifndef AS_ADAPTERS_ENGINE_H
#define AS_ADAPTERS_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "adapters/adapters.h"
#include "adapters/render.h"
#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/discover.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"

/* ---- ledger ($AGENTSTACK_HOME/state.json) -------------------------------- */

/* Loads the ledger; a missing file gives {"version":1,"targets":{}}. A
 * corrupt one is an error (pruning without it could delete a user's entry). */
int adp_ledger_load(json_t **out, struct as_err *err);
int adp_ledger_save(const json_t *ledger, struct as_err *err);
/* The entry for key, created when create is set (else NULL if absent). */
json_t *adp_ledger_entry(json_t *ledger, const char *key, bool create);
/* Copies a string array field of an entry into out. */
void adp_ledger_names(const json_t *entry, const char *field, strvec *out);
void adp_ledger_set_names(json_t *entry, const char *field, const strvec *names);
/* "<id>" (global) or "<id>@project:<root>". */
char *adp_ledger_key(const char *id, const char *project_root);
/* FNV-1a 64 as 16 lowercase hex. */
void adp_fnv1a64_hex(const void *data, size_t len, char out[17]);

/* ---- history ($AGENTSTACK_HOME/history/<16-hex>.json) ------------------- */

struct adp_hist_file {
    char *path;
    bool existed; /* before != null */
    strbuf before;
    char *label;         /* "Claude Code · servers" */
    strvec created_dirs; /* directories this write created, deepest last */
    unsigned mode;       /* the file's own permission bits before; 0 = not recorded */
};

struct adp_hist_entry {
    char *id; /* 16 hex */
    int64_t time_unix;
    char *scope;
    char *summary;
    char *operation;
    strvec targets;
    VEC(struct adp_hist_file) files;
    bool undone;
    char *file;     /* where it is stored */
    json_t *skills; /* skill link changes this write made (the apply
                     * skills_log shape), undone by a revert; NULL = none */
};

void adp_hist_entry_free(struct adp_hist_entry *e);
/* Writes a new entry (id assigned: epoch ns, strictly increasing) and keeps
 * the newest 40. */
int adp_history_record(struct adp_hist_entry *e, struct as_err *err);
/* Loads every entry, newest first. Unreadable entries are skipped. */
typedef VEC(struct adp_hist_entry *) adp_hist_list;
int adp_history_list(adp_hist_list *out, struct as_err *err);
void adp_hist_list_free(adp_hist_list *l);
int adp_history_mark_undone(struct adp_hist_entry *e, struct as_err *err);
/* Previews (write = false) or restores every file of e byte for byte,
 * deleting files it created and then its created directories once empty;
 * prints one line per file. The caller holds the writer lock. Returns the
 * number of files that failed (0 = all good). */
size_t adp_history_revert(struct adp_hist_entry *e, bool write, FILE *out, size_t *pending);

/* Puts skill links back as a link log records them, newest change first:
 * removes a link we made only while it still points where we pointed it,
 * relinks what we replaced, removes the directories we made once empty. */
void adp_undo_skill_links(const json_t *log, FILE *out);

/* The rolling backup path of a config file. */
int adp_backup_path(const char *file, strbuf *out, struct as_err *err);

/* ---- the managed .gitignore block --------------------------------------- */

#define ADP_GITIGNORE_START "# >>> agentstack — generated project artifacts (machine-local) >>>"
#define ADP_GITIGNORE_END "# <<< agentstack >>>"
/* Replaces the block in text (or appends it after a blank line). */
/* text with the managed block set to entries, into out. -1 + err (line and
 * fix) when the markers do not pair: nothing is rewritten then. */
int adp_gitignore_block(const char *text, size_t len, const strvec *entries, strbuf *out,
                        struct as_err *err);
bool adp_gitignore_has_block(const char *text, size_t len);
/* text without the managed block (and the blank line apply put before it),
 * into out; text unchanged when there is none. -1 + err when the markers do
 * not pair (nothing is rewritten then). */
int adp_gitignore_unblock(const char *text, size_t len, strbuf *out, struct as_err *err);

/* ---- skills (use, sessions) ---------------------------------------------- */

struct adp_skills_req {
    const char *dir;          /* the CLI's skills directory (absolute) */
    const char *contain_root; /* project scope: links are placed only inside it */
    strvec names;             /* the toolset's skills */
    strvec sources;           /* parallel: absolute source directory ("" = unresolved) */
    /* Parallel (may be shorter: missing = ""): why a skill with source "" is
     * not placed. ADP_SKILL_BLOCKED = a standing "block" trust decision (not
     * a failure; a link of ours there is removed); other text is the reason
     * shown instead of "could not be resolved" (a failure). */
    strvec why;
    const strvec *managed; /* names the ledger says we placed here */
};
#define ADP_SKILL_BLOCKED "blocked"
struct adp_skills_plan {
    strvec lines;  /* what will happen, one line each */
    strvec placed; /* names that are ours afterwards */
    strvec link_names, link_srcs, unlink_names;
    strvec link_prev;   /* parallel to link_names: the link it replaces ("" = none) */
    strvec unlink_prev; /* parallel to unlink_names: where the link pointed */
    size_t failed;
};
/* Plans the links (read-only): link what is missing, relink our stale
 * links, unlink ours that left the toolset or were blocked, never touch
 * anything else. */
void adp_skills_plan(const struct adp_skills_req *q, struct adp_skills_plan *p);
int adp_skills_write(const struct adp_skills_req *q, const struct adp_skills_plan *p,
                     struct as_err *err);
bool adp_skills_changes(const struct adp_skills_plan *p);
void adp_skills_plan_free(struct adp_skills_plan *p);

/* ---- diff ---------------------------------------------------------------- */

/* Line diff of a → b, indented two spaces: "- " / "+ " / "  " lines with ≤ 2
 * lines of context, secrets masked. Counts added/removed lines. With
 * max_lines > 0, at most that many changed lines are printed. */
void adp_diff(const char *a, size_t alen, const char *b, size_t blen, const adp_secrets *mask,
              bool color, size_t max_lines, strbuf *out, size_t *added, size_t *removed);

/* ---- trust gate ---------------------------------------------------------- */

/* The one place apply/use ask whether a project may receive its servers:
 * Trusted only when trust.json's digest equals the consent digest
 * of snap and every pin still verifies. Returns 0 and sets *refusal to NULL
 * (trusted) or to the refusal text (malloc'd, e.g. "project at /p is not
 * trusted — review it, then: agentstack trust ."); -1 + err when the check
 * itself fails (callers refuse). */
int adp_trust_gate(const struct bundle_paths *p, const struct manifest_snapshot *snap,
                   const struct manifest *m, char **refusal, struct as_err *err);
/* The same gate with library names verified through lib (trust.h: the
 * library module's hooks, handed in by the CLI), so a linked source or a
 * qualified `<source>:<name>` is checked where lock pinned it. lib NULL =
 * adp_trust_gate: the implicit local source only, where a linked-source
 * item is unresolvable and refuses. */
struct trust_library;
int adp_trust_gate_lib(const struct bundle_paths *p, const struct manifest_snapshot *snap,
                       const struct manifest *m, const struct trust_library *lib, char **refusal,
                       struct as_err *err);

/* ---- secrets at render -------------------------------------------------- */

/* The full chain (env → keychain → file store → project_dotenv) behind the
 * compiled [policy.secrets] of the machine file and (for a project) m. NULL
 * + err when the machine policy is broken (fail closed) or a layer does not
 * compile. Pass adp_resolver_fn / the resolver as adp_apply_opts.resolve /
 * resolve_ctx. untrusted (the trust gate refused the project): no chain is
 * built and nothing is ever looked up — every reference answers a fixed
 * placeholder, which a trust-blocked target never writes. */
struct adp_resolver;
struct adp_resolver *adp_resolver_new(const struct manifest *m, const char *project_dotenv,
                                      bool untrusted, struct as_err *err);
void adp_resolver_free(struct adp_resolver *r);
/* A denied reference fails (-1) with "blocked: server 's' may not read
 * ${NAME} — denied by [policy.secrets] rule …"; else the chain's answer. */
int adp_resolver_fn(void *ctx, const char *name, const char *server, strbuf *out,
                    struct as_err *err);

struct adp_apply_opts;

/* What every rendering command loads before planning. */
struct adp_render_env {
    struct adp_resolver *resolver;
    struct lockfile *lock;    /* the project's lock, or NULL */
    struct manifest *machine; /* the machine manifest when its instructions were inherited */
    strbuf home;              /* $AGENTSTACK_HOME ("" when it cannot be located) */
};
/* p/snap: the project (NULL or !p->found for the machine manifest).
 * global_scope: a project rendering into the user's files inherits the
 * machine layer's [instructions] (m is changed). untrusted: the trust gate
 * refused the project, so its secrets are never looked up (adp_resolver_new). -1 + err when the
 * machine file is broken (fail closed) or policy does not compile; then e holds nothing (no release
 * needed, a release is harmless). */
int adp_render_env_init(struct adp_render_env *e, struct manifest *m, const struct bundle_paths *p,
                        const struct manifest_snapshot *snap, bool global_scope, bool untrusted,
                        struct as_err *err);
/* Sets o's resolve, resolve_ctx, lock and home. */
void adp_render_env_apply(const struct adp_render_env *e, struct adp_apply_opts *o);
void adp_render_env_release(struct adp_render_env *e);

/* ---- the effective servers ----------------------------------------------- */

/* What apply delivers for a manifest without --toolset: its [servers], then
 * every library server a toolset names that [servers] does not declare, read
 * from the library as apply reads them (docs/library.md). For the surfaces
 * that report before a write (bootstrap, doctor, status, secret list), so a
 * ${REF} a library definition needs is seen before apply refuses it. Pins are
 * not checked here: that is lock's and trust's report. */
struct adp_i_libset;
struct adp_effective {
    VEC(const struct mf_server *) servers;
    strvec library_refs; /* parallel to servers: the toolset reference of a
                          * library server, "" for a declared one */
    strvec problems;     /* one line per library reference that could not be
                          * read or decoded (its fix included) */
    struct adp_i_libset *lib;
};
/* home: $AGENTSTACK_HOME (NULL: none); library/library_ctx as in
 * adp_apply_opts. Never fails: what cannot be read is a problem line. */
void adp_effective_servers(const struct manifest *m, const char *home, pin_library_fn library,
                           void *library_ctx, struct adp_effective *out);
/* Every ${REF} the effective servers and the manifest's hooks name, sorted,
 * each once (ref_manifest_refs plus the library servers'). */
void adp_effective_refs(const struct manifest *m, const struct adp_effective *e, strvec *out);
void adp_effective_free(struct adp_effective *e);

/* ---- apply --------------------------------------------------------------- */

struct adp_apply_opts {
    const struct manifest *m;
    const char *manifest_path; /* ledger source_manifest */
    bool project_scope;
    const char *project_root; /* project scope: where project files go */
    const strvec *targets;    /* --target ids (may be empty) */
    const char *toolset;      /* --toolset, or NULL for every server */
    bool write;
    bool allow_unresolved;
    bool prune_foreign;
    bool verbose;
    bool no_gitignore;
    bool color;
    /* NULL: deliver. Otherwise the refusal text, e.g. "project at /p is not
     * trusted — review it, then: agentstack trust ." */
    const char *trust_refusal;
    adp_resolve_fn resolve; /* NULL: the process environment */
    void *resolve_ctx;
    const char *operation; /* history label: "apply", "use 'x'", … */
    /* The project's lock (NULL: none): under --write, an instruction
     * fragment that drifted from its pin refuses to compile. */
    const struct lockfile *lock;
    /* $AGENTSTACK_HOME, for library instruction bodies (NULL: none). */
    const char *home;
    /* The central library, for what a toolset names that [servers] and
     * [skills] do not declare (library servers are rendered, library skills
     * placed by `use`): the resolver lock pins through, handed in by the
     * caller so this module does not depend on src/library (e.g. the
     * library module's lib_pin_lookup). NULL: the implicit local source
     * <home>/lib. A trusted project's library server is rendered only from
     * bytes that match its agentstack.lock row. */
    pin_library_fn library;
    void *library_ctx;
    bool use;               /* `use`: also place the toolset's skills */
    bool diff;              /* `diff`: report managed / foreign / hand-edited, write
                             * nothing, exit 0 */
    bool instructions;      /* `instructions`: compile the instruction files
                             * alone — no servers, settings or hooks */
    bool json;              /* with diff: the report as one JSON document
                             * (schema_version 1, see src/cli/cmd_diff.c) */
    bool caller_holds_lock; /* sessions: the writer lock is already held */
    /* Outputs (may be NULL): the history entry recorded, and every skill link
     * change written ({"dir","name","src","prev"}; src "" = unlinked). */
    char **history_id;
    json_t *skills_log;
    FILE *out;
    /* When set (not with diff), one object per file is appended once the run
     * is decided: the rows of `apply --json` (docs/json.md). */
    json_t *report;
};

/* Runs apply. Returns the exit code (0, 1) and prints the report. Usage
 * errors (unknown --target) return 2 with err set. */
int adp_apply(const struct adp_registry *r, const struct adp_apply_opts *o, struct as_err *err);

/* ---- sessions ($AGENTSTACK_HOME/sessions.json) --------------------------- */

/* session start: refuses an active session for this manifest dir, then
 * activates the toolset like `use --write` under one lock and records what
 * to undo. o->toolset names the toolset. */
int adp_session_start(const struct adp_registry *r, const struct adp_apply_opts *o,
                      const char *manifest_dir, struct as_err *err);
/* session end: reverts the session's files byte for byte, removes the links
 * it placed (restoring ones it replaced) and the ledger entries it changed.
 * manifest_dir NULL with all = every session. */
int adp_session_end(const char *manifest_dir, bool all, FILE *out, struct as_err *err);
int adp_session_list(bool json, FILE *out, struct as_err *err);

/* `run <cli> --profile T`, clean at rest. The sandbox's run
 * calls, in order:
 *   adp_run_recover   before anything: finishes the revert of every earlier
 *                     run whose launcher died (its pid is gone or recycled);
 *   adp_run_inject    after its own gates, before spawning: activates the
 *                     toolset exactly like `session start` (same trust gate,
 *                     lock, history, sessions.json record) and records run_id
 *                     and this process's pid + start time;
 *   adp_run_revert    after the child exits, on SIGINT/SIGTERM/SIGHUP, or on
 *                     a failed launch: `session end` for manifest_dir — files
 *                     byte for byte, links, ledger.
 * inject returns 0, or 1 + err (refused: untrusted, a session already
 * active here, a target failed — then nothing is left behind). A session
 * begun with `session start` has no pid and is never recovered
 * automatically. */
int adp_run_inject(const struct adp_registry *r, const struct adp_apply_opts *o,
                   const char *manifest_dir, const char *run_id, struct as_err *err);
int adp_run_revert(const char *manifest_dir, FILE *out, struct as_err *err);
int adp_run_recover(FILE *out, size_t *recovered, struct as_err *err);

/* ---- connect: the live gateway in every CLI ------------------------------ */

struct adp_connect_opts {
    const strvec *ids; /* CLIs named; empty (or all): every detected CLI */
    bool all;
    bool transparent;    /* register `mcp --auto-project --transparent` */
    const char *command; /* --command PATH (absolute), or NULL: this binary */
    bool write;
    bool disconnect; /* remove our entry instead */
    bool color;
    FILE *out;
    /* When set, one object per CLI is appended: {id, display, path, state,
     * error?, note?}, state one of connected, would_connect, already,
     * disconnected, would_disconnect, not_connected, skipped, failed
     * (the rows of `connect --json`, docs/json.md). */
    json_t *report;
};
/* Registers (or removes) the entry "agentstack" = <binary> mcp --auto-project
 * in each CLI's user MCP file, each in its own syntax, under the writer
 * lock, with backup, history ("gateway connect") and ledger ("gateway").
 * Idempotent. Returns 0, 1 (a target failed; others still written), or 2
 * (unknown CLI id, bad --command). */
int adp_connect(const struct adp_registry *r, const struct adp_connect_opts *o, struct as_err *err);
/* The path connect registers: a $PATH entry resolving to this binary when
 * there is one, else the binary's real path. */
int adp_self_path(strbuf *out, struct as_err *err);
/* The binary connect registers (docs/adapters.md): the first `agentstack` on
 * PATH, else the one `self link` placed ($AGENTSTACK_PREFIX, /usr/local/bin,
 * ~/.local/bin), else the running binary's real path — then warning (when
 * not NULL) says so and how to fix it. Also a note when the installed binary
 * is not the one running. */
int adp_gateway_binary(strbuf *out, strbuf *warning, struct as_err *err);

/* ---- one delivery per server (oneway.c) --------------------------------- */

struct adp_live_dup {
    char *display; /* "Claude Code" */
    char *path;    /* the file holding the direct entry */
    char *name;    /* the server */
    bool global;   /* the CLI's user file (else the project's) */
    bool ours;     /* the ledger says we rendered it there */
};
typedef VEC(struct adp_live_dup) adp_live_dups;
void adp_live_dups_free(adp_live_dups *l);
/* For every CLI that holds the gateway and does not render locally under
 * m: the direct entries, in its user file and (project_root set) its
 * project file, that duplicate a server the gateway serves (a server m
 * declares for that CLI, or one the ledger says we rendered there).
 * Read-only; -1 + err only when the ledger is unreadable. */
int adp_live_duplicates(const struct adp_registry *r, const struct manifest *m,
                        const char *project_root, adp_live_dups *out, struct as_err *err);

/* ---- uninstall / unrender: take back what the ledger lists -------------- */

struct adp_uninstall_opts {
    bool global;              /* the CLIs' user files */
    bool projects;            /* projects' files */
    const char *project_root; /* with projects: only this project (NULL = every one listed) */
    const strvec *targets;    /* only these adapter ids (NULL or empty: every one) */
    /* NULL: every name the ledger lists goes (uninstall). Else only the names
     * this manifest wrote (unrender): entries another manifest wrote, and the
     * names it keeps for them, stay. */
    const char *source_manifest;
    bool disconnect; /* also remove the gateway entry (global) */
    bool gitignore;  /* also remove each project's managed .gitignore block */
    bool write;
    bool verbose;          /* every line of the plan, not only the changes */
    const char *operation; /* history label ("uninstall", "unrender") */
    size_t *n_changed;     /* out (may be NULL): scopes that change (or would) */
    FILE *out;
};
/* Runs adp_apply against a manifest that declares nothing for every scope
 * the ledger lists (so its pruning removes our servers, instruction region,
 * settings, hooks and skill links, and nothing else), adp_connect
 * --disconnect for the gateway entry, then removes the .gitignore block and
 * skills directories our removals emptied. Preview unless write; every
 * write recorded in the undo history. 0, or 1 + err when a file failed (the
 * others are still written). */
int adp_uninstall(const struct adp_registry *r, const struct adp_uninstall_opts *o,
                  struct as_err *err);

/* ---- drift: for doctor and diff ------------------------------------------ */

struct adp_drift {
    char *adapter; /* "claude-code" */
    char *display; /* "Claude Code" */
    char *path;    /* the file */
    char *key;     /* its ledger key */
    bool missing;  /* the file is gone */
    char *line;    /* "<CLI> no longer matches what agentstack last wrote (<path>) ↳ review:
                    * agentstack diff · adopt the on-disk version: agentstack adopt · or
                    * re-render: agentstack apply --write" */
};
typedef VEC(struct adp_drift) adp_drift_list;
/* Every ledger entry with a last_hash whose file now hashes differently (or
 * is gone). Filter: project_root set = that project's entries; else
 * manifest_path set = the global entries that manifest wrote plus the
 * gateway's; both NULL = every entry. *checked (may be NULL) = files
 * compared. Read-only; -1 + err only when the ledger is unreadable. */
int adp_drift_report(const struct adp_registry *r, const char *manifest_path,
                     const char *project_root, adp_drift_list *out, size_t *checked,
                     struct as_err *err);
void adp_drift_list_free(adp_drift_list *l);

/* ---- restore ------------------------------------------------------------- */

struct adp_restore_opts {
    const char *what; /* id prefix, adapter id, or NULL */
    bool last;
    bool list;
    bool write;
    bool json;
    bool color;
    FILE *out;
};
int adp_restore(const struct adp_registry *r, const struct adp_restore_opts *o, struct as_err *err);

/* undo: the same history as a numbered timeline (1 = oldest). to == 0
 * lists it; to = N reverts every write from #N on (newest first, each file
 * back to its bytes before the oldest of them), marks them undone and
 * records the revert as a write of its own ("undo --to N"), so it can be
 * undone too. Returns 0, 1 (a file failed), 2 (no such N). */
struct adp_undo_opts {
    size_t to;
    bool write;
    bool json;
    FILE *out;
};
int adp_undo(const struct adp_undo_opts *o, struct as_err *err);

#endif
