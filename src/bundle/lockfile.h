/*
 * lockfile — agentstack.lock: the model, its reader and its writer
 * (docs/formats.md), pinning from the manifest and
 * verification of every pin against current bytes.
 *
 * Why: the consent digest covers the three files' bytes only; the lock is
 * what binds skills, instructions, executables and library servers to their
 * content, so a body edit is caught even though the manifest did not move.
 *
 * Guarantees:
 *  - Reader: version 2 (version 1 is upgraded in memory; 3 and above are
 *    refused with "upgrade agentstack"); unknown keys ignored; checksums
 *    normalized ("sha256:" prefix and upper case accepted), a malformed one
 *    is an error at file:line:col. Bad input never crashes.
 *  - Writer: the exact layout of docs/formats.md (root scalars, then [[skill]],
 *    [[server]], [[instruction]], [[executable]], [[extension]], [[workflow]],
 *    [[package]], [[setting]], each sorted, a blank line before each header,
 *    optionals omitted). Writing the same model twice gives the same bytes.
 *  - lockfile_save writes nothing when the bytes are unchanged, replaces the
 *    file atomically otherwise, and leaves the old lock on any failure.
 *  - Pinning and verification always hash current bytes (no stat cache).
 */
#ifndef AS_BUNDLE_LOCKFILE_H
#define AS_BUNDLE_LOCKFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/manifest.h"

#define LOCKFILE_VERSION 2
#define LOCKFILE_MAX_BYTES ((size_t)8388608)

struct lock_skill {
    char *name, *source, *path, *git, *rev;
    char checksum[SHA256_HEX_LEN + 1];
    char *license, *origin;
};
struct lock_server {
    char *name, *source; /* inline | library */
    char checksum[SHA256_HEX_LEN + 1];
};
struct lock_variant {
    char *cli, *model, *path;
    char checksum[SHA256_HEX_LEN + 1];
};
struct lock_instruction {
    char *name, *path;
    char checksum[SHA256_HEX_LEN + 1];
    VEC(struct lock_variant) variants;
};
struct lock_executable {
    char *path, *kind; /* file | root */
    char checksum[SHA256_HEX_LEN + 1];
};
struct lock_setting {
    char *target, *key;
    char checksum[SHA256_HEX_LEN + 1];
};
struct lock_extension {
    char *name, *target, *source, *path, *git, *rev; /* source: path | git | library */
    char checksum[SHA256_HEX_LEN + 1];
};
struct lock_workflow {
    char *name;
    strvec roles; /* sorted, unique */
    char *source, *path, *git, *rev;
    char checksum[SHA256_HEX_LEN + 1];
    char *blueprint;                             /* as declared, or NULL */
    char blueprint_checksum[SHA256_HEX_LEN + 1]; /* "" when there is none */
};

struct lockfile {
    int64_t version;       /* as read (1 or 2); written as 2 */
    char *manifest_digest; /* 64 hex, or NULL (unknown) */
    VEC(struct lock_skill) skills;
    VEC(struct lock_server) servers;
    VEC(struct lock_instruction) instructions;
    VEC(struct lock_executable) executables;
    VEC(struct lock_setting) settings;
    VEC(struct lock_extension) extensions;
    VEC(struct lock_workflow) workflows;
    /* [[package]] rows belong to the packs chapter: kept verbatim as parsed
     * so a re-lock never drops them. */
    toml_value *ext_package;
};

struct lockfile *lockfile_new(void);
void lockfile_free(struct lockfile *l);
/* Frees one row's strings (for code that drops rows from a lockfile). */
void lock_skill_free(struct lock_skill *s);
void lock_server_free(struct lock_server *s);
/* Parses lock bytes. NULL + err ("<path>:<line>:<col>: …") on bad input. */
struct lockfile *lockfile_parse(const char *path, const char *data, size_t len, struct as_err *err);
/* Renders the lock layout of docs/formats.md (sorting rows in place first). */
void lockfile_render(struct lockfile *l, strbuf *out);
/* Renders and writes path atomically unless the bytes equal old (when
 * have_old). A symlinked lock is written through only when its target lies
 * inside contain_root. *written = 1 when the file was replaced.
 * The caller holds the $AGENTSTACK_HOME writer lock. */
int lockfile_save(struct lockfile *l, const char *path, const char *contain_root, const char *old,
                  size_t old_len, bool have_old, bool *written, struct as_err *err);

const struct lock_skill *lockfile_skill(const struct lockfile *l, const char *name);
const struct lock_server *lockfile_server(const struct lockfile *l, const char *name);
const struct lock_instruction *lockfile_instruction(const struct lockfile *l, const char *name);
const struct lock_executable *lockfile_executable(const struct lockfile *l, const char *path,
                                                  const char *kind);
const struct lock_setting *lockfile_setting(const struct lockfile *l, const char *target,
                                            const char *key);
const struct lock_extension *lockfile_extension(const struct lockfile *l, const char *name);
const struct lock_workflow *lockfile_workflow(const struct lockfile *l, const char *name);

/* ---- pinning and verification ------------------------------------------- */

enum pin_kind {
    PIN_SKILL,
    PIN_SERVER,
    PIN_INSTRUCTION,
    PIN_VARIANT,
    PIN_EXECUTABLE, /* name = project-relative path; sub = "file" | "root" */
    PIN_SETTING,    /* name = target (adapter); sub = key */
    PIN_EXTENSION,  /* strict digest of the source; target kept in item->target */
    PIN_WORKFLOW,   /* strict digest of the source; roles kept in item->roles */
    PIN_BLUEPRINT,  /* name = the workflow; plain SHA-256 of the blueprint file */
};
const char *pin_kind_name(enum pin_kind k); /* "skill", "server", … */

enum pin_state {
    PIN_OK,         /* current bytes hashed */
    PIN_UNRESOLVED, /* could not be resolved (missing path, unknown library item) */
    PIN_OFFLINE,    /* git source not cached: unavailable offline */
    PIN_FAILED,     /* hard error (symlink, FIFO, traversal, unreadable) */
};

/* A standing answer from a terminal review, kept in trust.json. */
enum pin_decision {
    PIN_DECISION_NONE,
    PIN_DECISION_KEEP,  /* keep the approved bytes: delivery serves the store copy */
    PIN_DECISION_BLOCK, /* never deliver this item */
};

/* One item of the effective surface with its current digest. */
struct pin_item {
    enum pin_kind kind;
    char *name;          /* the bare name: the lock row's key */
    char *ref;           /* the reference as written when it is qualified
                          * ("<source>:<name>", "lib:<source>/<name>"), else NULL */
    char *sub;           /* variant index ("0", "1", …), executable kind, setting key */
    bool library;        /* resolved from the central library */
    char *source;        /* lock row source: path|git|inline|library */
    char *declared_path; /* skill/instruction/variant path as written */
    char *git, *rev;
    char *cli, *model; /* variants */
    char *fs_path;     /* what was hashed, when it is on disk */
    enum pin_state state;
    char *error; /* why, when state != PIN_OK */
    char checksum[SHA256_HEX_LEN + 1];
    char *canon;  /* canonical bytes (settings values), for the store */
    char *target; /* extensions: the adapter id */
    strvec roles; /* workflows: sorted, unique */
    /* Decisions. For a decided item checksum is the decided pin and
     * live_checksum the digest of the live bytes ("" when they could not be
     * hashed); fs_path points at the approved copy in the content store when
     * a keep-pinned item drifted, and is NULL when the item is omitted. */
    enum pin_decision decision;
    bool omitted; /* blocked, or kept while the approved bytes are unavailable */
    char live_checksum[SHA256_HEX_LEN + 1];
    char *live_path; /* the live bytes when fs_path no longer points at them */
};
typedef VEC(struct pin_item) pin_items;
void pin_items_free(pin_items *items);

/* Finds the central library's copy of an item: a server file or a skill dir.
 * name is the reference as written, so it may be qualified ("<source>:<name>"
 * or "lib:<source>/<name>"). Return 1 and set path when found, 0 when not,
 * -1 + err on error (e.g. a qualifier naming no linked source). */
typedef int (*pin_library_fn)(void *ctx, enum pin_kind kind, const char *name, strbuf *path,
                              struct as_err *err);

/* The implicit local library source: <home>/lib/servers/<stem>.toml and
 * <home>/lib/skills/<name>/. Returns 1 with path set when present, else 0.
 * It knows no linked sources: a qualified name is never found here. */
int pin_library_default(const char *home, enum pin_kind kind, const char *name, strbuf *path);

/* The bare name of a toolset reference: "<source>:<name>" and
 * "lib:<source>/<name>", source matching ^[a-z0-9][a-z0-9._-]{0,63}$, name
 * <name> in that one library source; anything else is a bare name. Returns
 * a pointer into ref (ref itself when it is not qualified) and, when src is
 * not NULL, sets *src to the allocated source name (NULL when bare). The
 * same split as the library module's lib_ref_split. */
const char *pin_ref_name(const char *ref, char **src);

/* Standing decisions of one project, as read from trust.json. */
struct pin_decision_row {
    char *kind; /* "skill" | "instruction" */
    char *name;
    char *variant; /* the variant's declared path, for a variant; else NULL */
    enum pin_decision answer;
    char pin[SHA256_HEX_LEN + 1]; /* the approved pin ("" when none was recorded) */
};
typedef VEC(struct pin_decision_row) pin_decisions;
void pin_decisions_free(pin_decisions *d);
/* Reads the decisions recorded for the project whose root is project_root
 * from <home>/trust.json. Missing or unreadable store → none (0). */
int pin_decisions_load(const char *home, const char *project_root, pin_decisions *out);
/* The decision for an item, or NULL. */
const struct pin_decision_row *pin_decision_find(const pin_decisions *d, const struct pin_item *it);

struct pin_opts {
    const char *toolset; /* --toolset N: narrows servers (NULL = all toolsets) */
    const char *home;    /* $AGENTSTACK_HOME, for the library and git caches (NULL: none) */
    /* Library skills and servers resolve through library (the library
     * module's lib_pin_lookup, ctx a struct library *, reads every linked
     * source and qualified refs). NULL: the implicit local source <home>/lib
     * only, where a qualified ref stays unresolved. library is also asked
     * for library instructions (their instruction.toml), extensions and
     * workflows; answering 0 for those leaves them to the local source. */
    pin_library_fn library;
    void *library_ctx;
    const struct lockfile *lock; /* the current lock: its git revs are used for git sources */
    /* Git: with fetch, sources are cloned/fetched and checked out as needed
     * (git.h); without, only commits already checked out resolve (offline).
     * update_all / update (names) re-resolve the manifest rev (else the
     * upstream head) instead of the lock's commit (lock --update). */
    bool fetch;
    bool update_all;
    const strvec *update;
    /* Decisions: NULL loads them from <home>/trust.json for this project
     * unless no_decisions is set (the review needs the raw live pins). */
    const pin_decisions *decisions;
    bool no_decisions;
};

/* Computes every pinnable item of m with current bytes. Library skills
 * and servers named by a qualified ref are keyed by their bare name (the lock
 * row, the rendered dir and the gateway name) with item->ref kept;
 * two references that share a bare name but not a source ("review" and
 * "team:review", or [skills.review] and "team:review") cannot share one row:
 * the item is PIN_FAILED naming both. Hard problems
 * (a traversal or symlinked executable, a symlink or FIFO in a skill, an
 * unreadable instruction, an unknown --toolset) are items with state
 * PIN_FAILED; the caller decides (lock refuses, trust blocks). Standing
 * decisions are applied last: a kept item keeps its approved pin (and points
 * at the approved copy when the live bytes drifted), a blocked item keeps its
 * pin and is omitted, so lock never re-pins either and delivery (which uses
 * fs_path) serves approved bytes or nothing. */
int pin_collect(const struct manifest *m, const struct pin_opts *o, pin_items *out,
                struct as_err *err);

/* Builds the lock a write would produce from fresh items and the old lock
 * (attribution kept; stale skill/server rows kept, other kinds pruned; rows of
 * unresolved/offline items kept from the old lock). stamp = manifest digest to
 * record, or NULL to drop it. */
struct lockfile *pin_build_lock(const pin_items *items, const struct lockfile *old,
                                const char *stamp);

/* Verification status of one item against a lock. */
enum pin_status {
    PIN_MATCHES,
    PIN_UNPINNED,    /* no row */
    PIN_DRIFTED,     /* checksum (or rev) differs */
    PIN_UNAVAILABLE, /* unavailable offline (uncached git) */
    PIN_RESOLVE_FAILED,
};
const char *pin_status_name(enum pin_status s);
/* The lock's checksum for an item, or NULL when it has no row. */
const char *pin_locked_checksum(const struct lockfile *l, const struct pin_item *it);
enum pin_status pin_verify_item(const struct lockfile *l, const struct pin_item *it);
/* One-line description: "skill content drifted from agentstack.lock (locked
 * <12hex>, current <12hex>)", "… is not pinned in agentstack.lock", … */
void pin_describe(const struct lockfile *l, const struct pin_item *it, enum pin_status st,
                  strbuf *out);

/* Deposits the bytes of every OK item in the content store (best-effort):
 * skill trees (git checkouts included), instruction/variant/blueprint
 * bodies, library server files, settings values, small integrity roots.
 * Decided items are skipped (their approved copy is already there). Each
 * failure is appended to warnings. */
void pin_deposit(const pin_items *items, const char *home, strvec *warnings);

/* The decision key of an item: "skill" / "instruction" (variants included),
 * or NULL for kinds that take no decision. */
const char *pin_decision_kind(const struct pin_item *it);

#endif
