/*
 * internal — pieces the adapters' writers share (apply, lanes, connect, undo).
 *
 * Why: every command that changes a CLI's file must go through the same
 * containment check, the same atomic writer and the same bridge test, or
 * one of them would drift from the others. Not part of the public API:
 * only the adapters module includes this header.
 *
 * Guarantees:
 *  - adp_i_write_file never leaves a partial file: it creates missing
 *    parent directories (recording them so an undo can remove them), takes
 *    a rolling backup of an existing file, writes atomically with the
 *    file's mode and owner kept, and on failure removes the directories it
 *    created. A directory whose owner write bit is clear is refused, even
 *    for root ("<dir> is read-only — not written").
 *  - adp_i_contained refuses, at project scope, a path whose file or any
 *    existing parent resolves outside the project root, with
 *    base/fs.h's one check (fs_contain) and the fix a writer names.
 */
#ifndef AS_ADAPTERS_INTERNAL_H
#define AS_ADAPTERS_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "adapters/adapters.h"
#include "adapters/render.h"
#include "base/err.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/manifest.h"

#define ADP_LOCK_WAIT_MS 10000

/* "~/…" for paths under $HOME, else the path. */
void adp_i_display_path(const char *p, strbuf *out);

/* 0, or -1 + err (with a hint) when path (absolute) or an
 * existing parent resolves outside root: fs_contain in its following mode. */
int adp_i_contained(const char *path, const char *root, struct as_err *err);

/* The directories a write of file would create, outermost first. */
void adp_i_collect_missing_dirs(const char *file, strvec *out);
/* rmdir each of dirs, deepest first (non-empty ones stay). */
void adp_i_remove_created(const strvec *dirs);

struct adp_i_write {
    const char *path;
    const char *data;
    size_t len;
    bool existed;             /* take a rolling backup first */
    mode_t new_mode;          /* for a new file */
    const char *contain_root; /* project scope, or NULL */
    strvec *created_dirs;     /* out: directories created (may be NULL) */
};
/* The one writer of agentstack-owned edits (see the guarantees above). */
int adp_i_write_file(const struct adp_i_write *w, struct as_err *err);

/* The permission bits (0777) of the file at path, following a symlink as
 * the writer does; 0 when it does not exist. History entries record it so a
 * restore puts a file back with its own mode, not the 0600 of our copies. */
unsigned adp_i_file_mode(const char *path);

/* Takes the writer lock ($AGENTSTACK_HOME/.lock, 10 s). On failure err says
 * "another agentstack write is in progress: …". */
int adp_i_take_lock(struct as_lock *lk, struct as_err *err);

/* ---- the gateway bridge (connect's entry) ------------------------------- */

#define ADP_BRIDGE_NAME "agentstack"

/* True for the bridge: an entry named "agentstack", or a command named
 * agentstack whose first argument is "mcp". */
bool adp_i_json_is_bridge(const char *name, const json_t *body, const struct adp_desc *d);
/* The same test for one table of a TOML MCP section. */
bool adp_i_toml_is_bridge(const char *name, const toml_value *body, const struct adp_desc *d);
/* The server names in the MCP section of text (the file at path, in fmt),
 * the bridge left out, into out. 0, or -1 + err when it does not parse. */
/* The ledger entry records a render of the machine manifest (its
 * source_manifest is $AGENTSTACK_HOME/agentstack.toml): those servers are
 * not the gateway's, so no delivery rule takes them out (oneway.c). */
bool adp_i_from_machine_manifest(const json_t *entry);
int adp_i_section_names(const struct adp_desc *d, enum adp_format fmt, const char *path,
                        const char *text, size_t len, strvec *out, struct as_err *err);
/* True when a file holds nothing but an empty server section (and, for
 * TOML, no comment): apply and connect remove such a project file. */
bool adp_i_only_empty_section(const struct adp_desc *d, enum adp_format fmt, const char *path,
                              const strbuf *text);
/* True when `connect` registered the gateway in this CLI's user config. */
bool adp_i_bridge_registered(const struct adp_desc *d);

/* ---- lanes: instructions, settings, hooks -------------------------------- */

struct adp_apply_opts;

enum adp_lane_kind { ADP_LANE_NOTE, ADP_LANE_INSTRUCTIONS, ADP_LANE_SETTINGS, ADP_LANE_HOOKS };

/* One owned edit of one file. Several CLIs may share a lane (project
 * AGENTS.md): it is compiled once from the union of their fragments. */
struct adp_lane {
    enum adp_lane_kind kind;
    char *path;          /* resolved file (NULL for a note) */
    enum adp_format fmt; /* settings/hooks: the file's format */
    const struct adp_desc *first;
    VEC(const struct adp_desc *) owners;
    /* instructions */
    char *content;       /* the compiled region; "" removes it */
    strvec frag_names;   /* union, first-seen order */
    VEC(long) frag_pick; /* parallel: variant index, -1 = base body */
    /* settings / hooks */
    char *key;        /* hooks: the owned root key */
    json_t *jset;     /* JSON: root key → value */
    toml_value *tset; /* TOML: root key → value */
    strvec removes;   /* owned root keys to cut */
    strvec names;     /* recorded in the ledger (setting keys, hook names) */
    /* state */
    strvec lines;       /* ✗ / ⚠ / ↳ lines printed under the lane */
    char *note;         /* ADP_LANE_NOTE text */
    bool blocked;       /* unresolved secret, missing source, drifted pin */
    bool trust_blocked; /* untrusted: only removals are written */
    adp_secrets secrets;
};
typedef VEC(struct adp_lane *) adp_lane_list;

/* Plans every lane of descs at o's scope (read-only). ledger says what we
 * owned before (removals). */
void adp_lanes_plan(const struct adp_apply_opts *o, json_t *ledger,
                    const struct adp_desc *const *descs, size_t n, adp_lane_list *out);
void adp_lanes_free(adp_lane_list *l);
/* Applies one lane to text (the file's bytes). prune_only: just the
 * removals. -1 + err when text is malformed. */
int adp_lane_apply(const struct adp_lane *l, const char *path, const char *text, size_t len,
                   strbuf *out, struct as_err *err);
/* Records the lane in the ledger entry of each owner after a write. */
void adp_lane_record(const struct adp_lane *l, json_t *ledger, const char *project_root);
/* "instructions", "settings", "hooks". */
const char *adp_lane_name(enum adp_lane_kind k);

/* ---- central library items (apply, use) ---------------------------------- */

/* The name a toolset reference takes in a CLI is its bare name:
 * pin_ref_name (bundle/lockfile.h), the one split lock, trust and the
 * validator share. */

/* The library server ref names, resolved through o->library (NULL: the
 * implicit local source under o->home), read once (regular file, no
 * symlink, ≤ 8 MiB) and decoded with the manifest's own checks as a
 * one-server manifest: *out (caller frees) holds it as servers.v[0], named
 * by the bare name. check_pin: those same bytes must hash to the library
 * row of o->lock for ref, else -1 ("not pinned" / "no longer matches
 * agentstack.lock … — not rendered"). -1 + err (with the fix) otherwise
 * when it cannot be found, read or decoded. */
int adp_i_library_server(const struct adp_apply_opts *o, const char *ref, bool check_pin,
                         struct manifest **out, struct as_err *err);

/* The library servers one run selected, each loaded once however many
 * toolsets name it (zero-initialised = empty). */
struct adp_i_libset {
    VEC(struct manifest *) defs; /* one-server manifests */
    strvec refs;                 /* parallel: the reference that named each */
};
/* The server ref names (loaded by adp_i_library_server on first use; the
 * pointer lives until adp_i_libset_free), or NULL + err. */
const struct mf_server *adp_i_libset_get(struct adp_i_libset *set, const struct adp_apply_opts *o,
                                         const char *ref, bool check_pin, struct as_err *err);
/* The reference s was loaded for, or NULL when s is not from the library. */
const char *adp_i_libset_ref(const struct adp_i_libset *set, const struct mf_server *s);
void adp_i_libset_free(struct adp_i_libset *set);

/* Only a delivering run of a project checks library bytes against the lock
 * (a preview without a lock still shows them; the gate refuses the write). */
bool adp_i_check_library_pins(const struct adp_apply_opts *o);

/* `use`: o->toolset's skills as placed (names: bare names, one link each)
 * and where each lives (srcs, parallel; "" = not placed), resolved by
 * pin_collect the way lock and trust resolve them (inline paths, git
 * caches, the library through o->library, standing decisions: a kept skill
 * lives at its approved copy). why (parallel) says why a "" is not placed:
 * ADP_SKILL_BLOCKED for a blocked skill, a reason for a kept skill whose
 * approved copy is gone, "" otherwise. A library skill whose bytes do not
 * match o->lock on a delivering run, or a name given twice, is not placed
 * and says why in notes. */
int adp_i_toolset_skills(const struct adp_apply_opts *o, strvec *names, strvec *srcs, strvec *why,
                         strvec *notes, struct as_err *err);

#endif
