/*
 * trust — the local trust gate (docs/formats.md, docs/trust.md): the trust
 * store, the state check every activation path calls, pin verification,
 * the review (card, blockers, --preview JSON) and trust.jsonl.
 *
 * Why: a repository can declare commands to run, hosts to contact, secrets
 * to read and files to put in every agent's context. Nothing of that is
 * activated until a human approved these exact bytes on this machine.
 *
 * Guarantees:
 *  - State is recomputed from fresh bytes on every call (trust_check): one
 *    read of the manifest, overlay and lock, one read of trust.json, never a
 *    cache, never a stat shortcut. Only Trusted activates.
 *  - Every load-modify-save of trust.json holds the one writer lock (flock on
 *    $AGENTSTACK_HOME/.lock), writes atomically (temp + rename,
 *    0600) and appends its trust.jsonl row inside the lock, after the write.
 *  - trust.jsonl rows are hash-chained: each ends with "prev",
 *    the SHA-256 of the previous line's bytes.
 *  - A missing or corrupt trust.json reads as empty: everything untrusted.
 *  - Pin verification (trust_verify_pins) hashes current bytes every time.
 *  - Library names resolve through the caller's struct trust_library (trust
 *    may not depend on the library module): given the library's hooks, a
 *    linked source or a qualified `<source>:<name>` is verified exactly where
 *    `lock` pinned it; without, only the implicit local source is read and a
 *    name it does not hold is unresolvable — which blocks, never passes.
 */
#ifndef AS_TRUST_TRUST_H
#define AS_TRUST_TRUST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "bundle/consent.h"
#include "bundle/discover.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "bundle/scan.h"

#define TRUST_LOCK_TIMEOUT_MS 10000

enum trust_state {
    TRUST_UNTRUSTED, /* no entry */
    TRUST_TRUSTED,   /* entry digest == current digest */
    TRUST_CHANGED,   /* otherwise (JSON: "drifted") */
};
/* "untrusted" | "trusted" | "drifted" */
const char *trust_state_name(enum trust_state s);

/* ---- the store (trust.json) --------------------------------------------- */

struct trust_store {
    json_t *root; /* {"trusted": {key: entry}} — never NULL after load */
    bool corrupt; /* the file existed but could not be used (read as empty) */
    char *path;
};

/* Loads $AGENTSTACK_HOME/trust.json (absent or corrupt → empty; corrupt sets
 * s->corrupt). Fails only when the home cannot be located. */
int trust_store_load(struct trust_store *s, struct as_err *err);
/* Writes it atomically (0600). The caller holds the writer lock. */
int trust_store_save(const struct trust_store *s, struct as_err *err);
void trust_store_free(struct trust_store *s);
/* The entry for key, or NULL. */
json_t *trust_store_entry(const struct trust_store *s, const char *key);
/* The digest recorded for key, or NULL. */
const char *trust_store_digest(const struct trust_store *s, const char *key);

/* The writer lock on $AGENTSTACK_HOME/.lock (waits up to 10 s). */
int trust_lock(struct as_lock *l, struct as_err *err);

/* Appends one row to audit/trust.jsonl: {"ts", "action", "project", "digest",
 * "prev"}. Best-effort by contract: returns -1 + err, callers warn. */
int trust_log(const char *action, const char *key, const char *digest, struct as_err *err);

/* A preference-shaped rewrite carries trust: when key is
 * recorded with exactly old_digest, record new_digest instead and log
 * "repin". Never creates an entry. Returns 1 when repinned, 0 when the entry
 * is absent or records another digest (nothing written), -1 + err. Takes the
 * writer lock itself unless the caller already holds it (held = true). */
int trust_repin(const char *key, const char *old_digest, const char *new_digest, bool held,
                struct as_err *err);

/* ---- the state check (gateway, run, apply) ------------------------------ */

struct trust_status {
    enum trust_state state;
    char digest[CONSENT_DIGEST_LEN + 1];         /* current */
    char trusted_digest[CONSENT_DIGEST_LEN + 1]; /* recorded; "" when untrusted */
    int64_t trusted_at;
    strbuf key; /* canonical project key */
};
void trust_status_release(struct trust_status *st);

/* "What is this project's trust state right now": reads the three files once
 * and trust.json once. */
int trust_check(const struct bundle_paths *p, struct trust_status *out, struct as_err *err);
/* The same from a snapshot already read (so a caller that also loads the
 * model decides on the same bytes). */
int trust_check_snapshot(const struct bundle_paths *p, const struct manifest_snapshot *snap,
                         struct trust_status *out, struct as_err *err);

/* ---- library resolution ------------------------------------------------- */

/* How library names resolve when pins are verified and the manifest is
 * validated. The CLI fills it with the library module's hooks — pin =
 * lib_pin_lookup, has = lib_manifest_has, ctx = a struct library * from
 * lib_open — so every linked source and qualified ref is read as `lock`
 * reads it. A NULL struct (or NULL fields) = the implicit local source
 * <home>/lib only. */
struct trust_library {
    pin_library_fn pin;
    bool (*has)(void *ctx, enum mf_item_kind kind, const char *name);
    void *ctx;
};

/* ---- pin verification --------------------------------------------------- */

struct trust_pin_result {
    struct pin_item *item; /* points into items */
    enum pin_status status;
    bool blocks;   /* blocks the grant and activation */
    bool advisory; /* shown, does not block (unpinned library skill, offline git) */
    char *message; /* pin_describe text */
};
struct trust_pins {
    pin_items items;
    VEC(struct trust_pin_result) results;
    size_t blocking;
    bool lock_unreadable;
    char *lock_error;
    bool lock_absent;
    struct lockfile *lock; /* the parsed lock, or NULL (absent or unreadable) */
};
/* Verifies every pin of m against current bytes and the lock bytes given
 * (has_lock = false: no lock file). home may be NULL (no library); lib NULL =
 * the implicit local source only. */
int trust_verify_pins_lib(const struct manifest *m, const char *lock_path, const char *lock_data,
                          size_t lock_len, bool has_lock, const char *home,
                          const struct trust_library *lib, struct trust_pins *out,
                          struct as_err *err);
/* trust_verify_pins_lib with lib NULL: for modules that cannot see the
 * library (gateway, sandbox, adapters) until their callers pass its hooks. A
 * project naming linked-source items fails closed here (unresolvable). */
int trust_verify_pins(const struct manifest *m, const char *lock_path, const char *lock_data,
                      size_t lock_len, bool has_lock, const char *home, struct trust_pins *out,
                      struct as_err *err);
void trust_pins_free(struct trust_pins *t);

/* ---- the review (card, blockers, --preview) ----------------------------- */

/* One reviewed item; the surface recorded at consent is a list of these
 * ({kind, name, identity, pin}) so a re-trust can mark what changed. */
struct trust_item {
    char *kind, *name, *identity, *pin; /* pin NULL when there is none */
    char *runs, *contacts;              /* display: command line, url (or NULL) */
    strvec may_read;                    /* secret references */
    char *prior_pin;
    const char *change; /* added|changed|unchanged|drifted */
    char marker[3];     /* "+ ", "~ ", "  " */
    bool drifted;
    char *fix;
    char *tag;    /* card tag, e.g. "[inline, pinned]" (or NULL) */
    json_t *diff; /* skills/instructions/executables: the review diff (docs/formats.md), or NULL */
    /* stdio servers: what of their code the lock pins and what it does not
     * (bundle/codepin.h), and how they run (host, or confined). */
    strvec code_pinned, code_unpinned;
    char *isolation;
};

struct trust_blocker {
    char *kind, *name, *reason, *fix; /* fix may be NULL */
    int group;                        /* 0 server, 1 content drift, 2 surface unpinned */
};

struct trust_review {
    const struct bundle_paths *paths;
    struct manifest_snapshot snap;
    struct manifest *m;
    struct trust_status status;
    struct trust_pins pins;
    bool re_trust;       /* an entry exists for this key */
    bool prior_recorded; /* it recorded a surface */
    VEC(struct trust_item) items;
    VEC(struct trust_item) removed; /* in the prior surface, gone now */
    VEC(struct trust_blocker) blockers;
    VEC(struct trust_item) advisories; /* shown, not blocking */
    strvec secrets;
    char *machine_ceiling; /* machine manifest path when it exists */
    bool lock_first;       /* no lock yet, something pinnable */
    bool content_drift;    /* a pinned body drifted: JSON state "drifted" */
    bool store_corrupt;    /* trust.json was unreadable: everything reads untrusted */
    char *home;
    /* Content scan of everything the project puts into agents' context:
     * shown on the card; High findings refuse the grant unless
     * --allow-flagged. scan_error is set when the scan itself failed. */
    struct scan_report scan;
    char *scan_error;
    /* The prior decisions, as recorded in trust.json. */
    json_t *prior_decisions;
    /* How library names resolved for this review (zeroes: local only); a
     * re-hash after the review (accepting drift) must resolve the same way. */
    struct trust_library lib;
};

/* Reads the snapshot once, loads the model from it, verifies every pin
 * (library names through lib, NULL = the implicit local source only) and
 * compares with the recorded surface. Fails (closed) when the manifest cannot
 * be loaded. Writes nothing anywhere. */
int trust_review_build(const struct bundle_paths *p, const struct trust_library *lib,
                       struct trust_review *r, struct as_err *err);
void trust_review_free(struct trust_review *r);
/* The card and the grouped detail. */
void trust_review_render(const struct trust_review *r, strbuf *out);
/* "cannot trust <base>: …" and one line per blocker. */
void trust_review_blockers(const struct trust_review *r, strbuf *out);
/* The --preview object, keys in a fixed order (docs/trust.md). */
json_t *trust_review_preview(const struct trust_review *r);
/* The surface to record at grant: [{kind, name, identity, pin}]. */
json_t *trust_review_surface(const struct trust_review *r);
/* The content scan section of the card ("" when nothing was found). */
void trust_review_scan(const struct trust_review *r, strbuf *out);

/* ---- drift answers at a terminal ----------------------------------------- */

/* A pin item a reviewer may answer at a terminal: a drifted skill,
 * instruction or variant, or one that already carries a decision. */
bool trust_answerable(const struct trust_pin_result *x);
/* The approved pin of an answerable item (decision pin, else the pin
 * recorded at consent, else the lock pin), or NULL. */
const char *trust_approved_pin(const struct trust_review *r, const struct trust_pin_result *x);
/* The live digest of an item ("" when it cannot be hashed). */
const char *trust_live_pin(const struct pin_item *it);

/* ---- diffs --------------------------------------------------------------- */

#define TRUST_DIFF_LINES 40
/* {status: "unchanged", headline, files: [], capped: false} */
json_t *trust_diff_new(void);
/* Adds the difference between the approved bytes (content store at
 * approved_pin, of that store_kind: a tree, or one file for STORE_FILE) and the live bytes at
 * live_path under the name display. Equal pins add nothing. A missing
 * snapshot makes status "no_snapshot". budget counts the lines still shown. */
int trust_diff_add(json_t *diff, const char *home, int store_kind, const char *approved_pin,
                   const char *current_pin, const char *live_path, const char *display,
                   size_t *budget);
/* Indented text of a diff (nothing when unchanged). */
void trust_diff_render(const json_t *diff, const char *indent, strbuf *out);

/* ---- consent is a person's act ------------------------------------------- */

/* The environment variable a person sets to consent from a process tree
 * that holds an agent (docs/trust.md); the host guard refuses any command
 * that sets it. */
#define TRUST_CONSENT_OVERRIDE "AGENTSTACK_CONSENT_BY_PERSON"

/* Whether this process may be an agent's rather than a person's: an
 * ancestor process is a coding-agent CLI (claude, codex, gemini,
 * cursor-agent, copilot, opencode, …, also as a node script), or an
 * agentstack run / agentstack mcp (an agent's launcher and its gateway),
 * or the environment carries a harness's marker (CLAUDECODE, CODEX_SANDBOX,
 * GEMINI_CLI, AGENTSTACK_RUN_ID). why gets what was found ("claude, pid 42").
 * A process that left the agent's tree (a daemon, cron, ssh to localhost)
 * is not seen: this is a barrier, not a proof of a person. */
bool trust_agent_context(strbuf *why);

#endif
