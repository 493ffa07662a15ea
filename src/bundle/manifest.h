/*
 * manifest — agentstack.toml (+ agentstack.local.toml overlay) as a checked
 * C model (docs/manifest.md).
 *
 * Why: every capability a project can load is declared here, so a typo
 * must never silently drop a policy and hostile bytes must never crash or
 * half-load the tool.
 *
 * Guarantees:
 *  - A load returns a complete model or NULL with one error; never a
 *    partial model. Files are read once, ≤ 8 MiB each, regular files only.
 *  - Unknown keys are errors everywhere (root included), with a "did you
 *    mean" (edit distance ≤ 2) and file:line:col. Wrong types and missing
 *    required keys are errors with their fix followed by
 *    "  then re-check:   agentstack doctor". Strings containing NUL are
 *    refused (C consumers would silently truncate them).
 *  - With an overlay, every position names the file the value came from.
 *  - Machine-only tables ([gateway], [guard], [experimental]) are warnings
 *    (m->warnings) and ignored in a project manifest; valid in the machine's.
 *  - Maps keep file order; overlay-only keys append after the base's.
 *  - manifest_validate adds the semantic checks (references, adapters,
 *    names, contained paths on disk) as a list of diagnostics, each with a
 *    fix; load itself never touches the disk beyond the two files.
 *
 * Everything in a struct manifest is owned by it (manifest_free). Strings
 * that are absent are NULL; strvecs that are empty have n == 0 (v may be
 * NULL). Raw toml pointers point into m->root.
 */
#ifndef AS_BUNDLE_MANIFEST_H
#define AS_BUNDLE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/fs.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/discover.h"

#define MANIFEST_MAX_BYTES ((size_t)8388608)
#define MANIFEST_VERSION 1

enum manifest_kind {
    MANIFEST_PROJECT, /* a repository's manifest (+ overlay) */
    MANIFEST_MACHINE, /* $AGENTSTACK_HOME/agentstack.toml */
};

/* Where something was written. file points at m->path or m->overlay_path. */
struct mf_pos {
    const char *file;
    unsigned line, col;
};

/* string → string map entry (headers, env), file order */
struct mf_str_entry {
    char *key;
    char *value;
    struct mf_pos pos;
};
typedef VEC(struct mf_str_entry) mf_strmap;

/* ---- servers ------------------------------------------------------------- */

enum mf_server_type { MF_SERVER_STDIO, MF_SERVER_HTTP };

struct mf_server {
    char *name;
    struct mf_pos pos; /* the [servers.<name>] table */
    enum mf_server_type type;
    char *url;     /* http */
    char *command; /* stdio */
    strvec args;
    char *cwd;
    strvec integrity_roots;
    strvec targets;   /* ["*"] when absent; [] = never rendered directly */
    bool targets_set; /* targets was written */
    char *owner;      /* adapter id */
    mf_strmap headers;
    mf_strmap env;
    const toml_value *extra; /* table: adapter id → table of any values, or NULL */
    const toml_value *table; /* the merged server table */
};

/* ---- skills -------------------------------------------------------------- */

enum mf_source {
    MF_SOURCE_PATH,
    MF_SOURCE_GIT,
    MF_SOURCE_LIBRARY, /* extensions/workflows with neither path nor git */
};

struct mf_skill {
    char *name; /* identity; not yet checked as a skill name (see validate) */
    struct mf_pos pos;
    enum mf_source source;  /* git wins when both are written */
    char *path;             /* anchored at the manifest dir (manifest_item_path) */
    struct mf_pos path_pos; /* where `path` was written (the table's when absent) */
    char *git;
    char *rev;
    char *subpath;
};

/* ---- instructions -------------------------------------------------------- */

struct mf_variant {
    char *cli;   /* adapter id selector, or NULL */
    char *model; /* model selector (compared literally), or NULL */
    char *path;  /* required */
    struct mf_pos pos;
    struct mf_pos path_pos; /* where `path` was written */
};
typedef VEC(struct mf_variant) mf_variants;

struct mf_instruction {
    char *name;
    struct mf_pos pos;
    char *path;             /* NULL = library body instructions/<n>/instruction.toml */
    struct mf_pos path_pos; /* where `path` was written (the table's when absent) */
    strvec targets;         /* ["*"] when absent */
    bool targets_set;
    mf_variants variants; /* file order */
    bool inherited;       /* merged from the machine layer (global scope only, never pinned) */
    char *anchor_dir;     /* relative paths anchor here: manifest dir or machine home */
};

/* ---- toolsets ------------------------------------------------------------ */

struct mf_toolset {
    char *name;
    struct mf_pos pos;
    strvec servers;
    strvec skills; /* "*" = every [skills] entry (never the library) */
    strvec packages;
    char *harness;
    char *model;
    char *effort;
};

/* ---- settings, hooks, extensions, workflows ------------------------------ */

struct mf_settings {
    char *adapter; /* settings.<adapter> */
    struct mf_pos pos;
    const toml_value *table; /* any TOML values; top-level keys are the pin grain */
};

struct mf_hook {
    char *name;
    struct mf_pos pos;
    char *event;   /* required */
    char *command; /* required */
    char *matcher;
    strvec args;
    bool has_timeout;
    int64_t timeout; /* seconds, > 0 */
    strvec targets;  /* ["*"] when absent */
    bool targets_set;
};

struct mf_extension {
    char *name; /* one plain path component; agentstack-guard* reserved */
    struct mf_pos pos;
    char *target; /* one adapter id, never "*" */
    enum mf_source source;
    char *path, *git, *rev, *subpath;
    char *description;
};

struct mf_workflow {
    char *name;
    struct mf_pos pos;
    enum mf_source source;
    char *path, *git, *rev, *subpath;
    char *blueprint;
    char *description;
    strvec roles;
    bool has_max_agents;
    int64_t max_agents;
    bool has_max_wall_seconds;
    int64_t max_wall_seconds;
    const toml_value *scheduling; /* table role → table, or NULL */
};

/* [delivery.harness.<id>] */
struct mf_delivery_harness {
    char *adapter;
    struct mf_pos pos;
    bool has_render_locally;
    bool render_locally;
};

/* ---- machine-only tables (valid only in MANIFEST_MACHINE) ----------------- */

struct mf_gateway {
    strvec env_passthrough;
    int64_t max_result_bytes; /* default 1048576 */
};

struct mf_guard {
    bool present;
    bool enabled;
    strvec allow_roots;
    bool has_deny; /* "only if no deny list was ever written" */
    strvec deny;
    strvec allow;                    /* commands the guard lets through unread (docs/guard.md) */
    const toml_value *project_roots; /* table: root prefix → array of strings, or NULL */
};

struct mf_experimental {
    bool present;
    bool tools_execute;
    strvec allow_tools; /* allowTools, the machine's cap ([experimental] or its limits) */
    bool has_allow_tools;
    int64_t timeout_ms, max_calls, max_output_bytes; /* 0 = not set */
    char *runtime; /* tools_execute_runtime: the Node.js binary, or NULL (`node` on PATH) */
};

/* ---- diagnostics --------------------------------------------------------- */

enum mf_severity { MF_WARNING, MF_ERROR };

struct mf_diag {
    enum mf_severity sev;
    char *msg;         /* "<problem> in [servers.x]" — no location prefix */
    char *fix;         /* one line, or NULL */
    struct mf_pos pos; /* file NULL = no location */
};
typedef VEC(struct mf_diag) mf_diags;

void mf_diags_free(mf_diags *d);
/* "file:line:col: msg" (or "file: msg", when no line is known). */
void mf_diag_message(const struct mf_diag *d, strbuf *out);
/* mf_diag_message, then "\n  <fix>". */
void mf_diag_format(const struct mf_diag *d, strbuf *out);
/* Copies a diagnostic into err: location, msg, hint = fix + the re-check line. */
int mf_diag_to_err(const struct mf_diag *d, struct as_err *err);

/* A key or string of the manifest that holds a character a reviewer cannot
 * see (base/term.h's hidden set) or a control other than tab and newline.
 * Loading keeps going (the value is shown escaped wherever it is shown);
 * the content scan makes each one a blocking finding, so trust refuses. */
struct mf_hidden {
    struct mf_pos pos; /* the value (or key) as written */
    uint32_t cp;       /* the first such code point */
    char *where;       /* dotted path: "servers.s.args[0]" */
    char *value;       /* the string itself (shown only through term_sanitize) */
};

/* ---- the model ----------------------------------------------------------- */

struct mf_index;

struct manifest {
    enum manifest_kind kind;
    char *path;         /* manifest file (absolute as given) */
    char *overlay_path; /* NULL when no overlay was merged */
    char *manifest_dir; /* anchor for skill/instruction/extension/workflow paths */
    char *project_root; /* anchor for cwd, relative command/args, integrity roots */
    toml_value *root;   /* the merged tree (owned) */

    int64_t version;

    VEC(struct mf_server) servers;
    VEC(struct mf_skill) skills;
    VEC(struct mf_instruction) instructions; /* inherited ones first (after inherit) */
    VEC(struct mf_toolset) toolsets;
    bool toolsets_legacy;  /* the table was spelled [profiles] */
    char *default_toolset; /* as written, or NULL */
    struct mf_pos default_toolset_pos;
    VEC(struct mf_settings) settings;
    VEC(struct mf_hook) hooks;
    bool has_targets;
    strvec targets_default; /* [targets] default */
    struct mf_pos targets_default_pos;
    const toml_value *policy; /* raw [policy] (shape-checked), or NULL */
    VEC(struct mf_extension) extensions;
    VEC(struct mf_workflow) workflows;
    const toml_value *packs;             /* raw [packs] (checked), or NULL */
    const toml_value *package_overrides; /* raw [package_overrides] (checked), or NULL */
    char *meta_name;
    bool meta_gitignore; /* default true */
    bool delivery_render_locally;
    VEC(struct mf_delivery_harness) delivery_harness;

    /* machine manifest only (project: left zero/NULL, a warning is recorded) */
    struct mf_gateway gateway;
    struct mf_guard guard;
    struct mf_experimental experimental;

    mf_diags warnings;            /* load-time warnings (ignored machine-only tables) */
    VEC(struct mf_hidden) hidden; /* the first 100, file order */
    size_t hidden_more;           /* past those */
    char *inherited_from;         /* machine manifest path once instructions were inherited */

    /* Private (manifest.c): sorted name indexes behind the lookups below,
     * built by the loaders. NULL, or a vector changed since, means a scan. */
    struct mf_index *index;
};

/* What to load. Data need not be NUL-terminated. */
struct manifest_source {
    enum manifest_kind kind;
    const char *path; /* for messages and positions */
    const char *data;
    size_t len;
    const char *overlay_path; /* NULL: no overlay */
    const char *overlay_data;
    size_t overlay_len;
    const char *manifest_dir; /* NULL: dirname(path) */
    const char *project_root; /* NULL: derived from manifest_dir */
};

/* Decodes and checks one manifest from bytes. NULL + err on any problem. */
struct manifest *manifest_load_bytes(const struct manifest_source *src, struct as_err *err);

/* The three files' bytes, read once (the consent digest and the model must
 * derive from the same snapshot). Absent files have has_* = false. */
struct manifest_snapshot {
    bool has_manifest, has_overlay, has_lock;
    strbuf manifest, overlay, lock;
};
void manifest_snapshot_init(struct manifest_snapshot *s);
void manifest_snapshot_release(struct manifest_snapshot *s);
/* Reads manifest, overlay and lock (each ≤ 8 MiB, regular, layout checked
 * with discover_check_layout). A missing manifest is an error only via
 * manifest_load_snapshot; a missing overlay or lock is not. */
int manifest_snapshot_read(const struct bundle_paths *p, struct manifest_snapshot *s,
                           struct as_err *err);
/* Loads the model from a snapshot ("no agentstack manifest in …" if absent). */
struct manifest *manifest_load_snapshot(const struct bundle_paths *p,
                                        const struct manifest_snapshot *s, struct as_err *err);
/* Reads and loads a project (snapshot read + load; overlay merged if present). */
struct manifest *manifest_load(const struct bundle_paths *p, struct as_err *err);

/* Loads $AGENTSTACK_HOME/agentstack.toml as MANIFEST_MACHINE (no overlay).
 * NULL with *absent = 1 when there is none; NULL + err when it is broken
 * (fail closed: the hint names the file and the fix). */
struct manifest *manifest_load_machine(int *absent, struct as_err *err);

/* Merges the machine layer's [instructions] beneath a project's:
 * project names win, inherited ones come first, anchored at the machine
 * home, marked inherited. machine may be NULL (no-op). */
void manifest_inherit_instructions(struct manifest *m, const struct manifest *machine);

void manifest_free(struct manifest *m);

/* ---- lookups ------------------------------------------------------------- */

/* O(log n) on a loaded manifest: a hostile one may declare tens of
 * thousands of entries and every reference is looked up. Thread-safe for
 * readers (the lookups never write). With duplicate names: the first. */

const struct mf_server *manifest_server(const struct manifest *m, const char *name);
const struct mf_skill *manifest_skill(const struct manifest *m, const char *name);
const struct mf_instruction *manifest_instruction(const struct manifest *m, const char *name);
const struct mf_toolset *manifest_toolset(const struct manifest *m, const char *name);
const struct mf_settings *manifest_settings(const struct manifest *m, const char *adapter);
/* default_toolset if it names a toolset; else the only toolset; else NULL. */
const struct mf_toolset *manifest_effective_toolset(const struct manifest *m);
/* [delivery.harness.<id>] render_locally, else [delivery] render_locally. */
bool manifest_render_locally(const struct manifest *m, const char *adapter);
/* Variant choice: cli+model > cli > model > base; ties → first.
 * Returns NULL for the base body. */
const struct mf_variant *manifest_select_variant(const struct mf_instruction *in, const char *cli,
                                                 const char *model);
/* 1 if a targets list ([] / ["*"] / ids) includes adapter. */
bool manifest_targets_include(const strvec *targets, const char *adapter);

/* ---- semantic validation ------------------------------------------------- */

enum mf_item_kind {
    MF_ITEM_SERVER,
    MF_ITEM_SKILL,
    MF_ITEM_INSTRUCTION,
    MF_ITEM_PACKAGE,
    MF_ITEM_EXTENSION,
    MF_ITEM_WORKFLOW,
};

struct manifest_env {
    /* Known adapter ids (built-in + drop-ins). NULL: adapter ids unchecked. */
    const char *const *adapter_ids;
    size_t n_adapter_ids;
    /* Or, when adapter_ids is NULL: called once, on the first adapter id the
     * manifest names, to fill them in (loading the registry costs more than
     * the rest of a lock); returns false to leave them unchecked. */
    bool (*load_adapter_ids)(void *ctx, const char *const **ids, size_t *n);
    void *adapter_ctx;
    /* Does the central library have this item? NULL: the library is empty. */
    bool (*library_has)(void *ctx, enum mf_item_kind kind, const char *name);
    void *library_ctx;
    /* Check contained paths on disk (lstat every component). */
    bool check_paths;
};

/* Appends every semantic issue to out (errors and warnings, each with a fix);
 * returns the number of errors. Checks: default_toolset names a toolset;
 * http has url, stdio has command; toolset references (server, skill,
 * package) resolve in the manifest or the library; skill names;
 * server header names and values (manifest_header_name_ok / _value_bad);
 * adapter ids; variant selectors; extension/workflow names and targets;
 * contained paths (integrity roots, relative cwd, extension/workflow
 * sources, blueprints) when env->check_paths. env may be NULL. */
size_t manifest_validate(const struct manifest *m, const struct manifest_env *env, mf_diags *out);

/* HTTP header fields (RFC 9110 sections 5.1 and 5.5), which libcurl and the CLIs'
 * configs pass on as written: a name must be a token (1*tchar); a value
 * must hold no control byte but HTAB — a CR or LF would end the line and
 * start a header of the writer's choosing. Bytes >= 0x80 (obs-text) pass.
 * manifest_header_value_bad returns the first forbidden byte, or NULL. */
bool manifest_header_name_ok(const char *name);
const char *manifest_header_value_bad(const char *value);

/* A toolset name as `toolset create`, `session` and the gateway's lease
 * accept it: 1 to 64 of [A-Za-z0-9_.-]. */
bool manifest_toolset_name_ok(const char *s);

/* Where a declared skill, instruction or variant path leads: joined to the
 * manifest dir and, for a repository's manifest (MANIFEST_PROJECT), held
 * inside the project root after symlinks by the one containment check
 * (fs_contain): an absolute path, a ".." that leaves the project and a
 * symlink that points out are refused ("traversal" / "symlink"), so a
 * repository cannot have its review card, CLAUDE.md or skills directory
 * carry a file of the user's from elsewhere. inherited_anchor (machine-
 * layer instructions: the machine home) and the machine manifest's own
 * paths are the user's and are only joined (absolute stays). Library items
 * never come here: they resolve in the library. out = the path to open. */
int manifest_item_path(const struct manifest *m, const char *declared, const char *inherited_anchor,
                       strbuf *out, struct as_err *err);

/* fs_contain's flags for a contained path (integrity roots, relative cwd,
 * local executables, extension/workflow sources, blueprints): relative,
 * '..'-free, not the anchor itself, existing, and no symlink at any
 * component (lstat each); errors name "traversal" or "symlink". */
#define MF_CONTAINED (FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT | FS_CONTAIN_MUST_EXIST)

/* Known key names, for tools that want to list or suggest them. */
extern const char *const manifest_root_keys[];

#endif
