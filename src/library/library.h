/*
 * library — the central library (docs/library.md): folders of
 * reusable skills, server definitions, instructions, hooks, extensions and
 * packages that projects name without copying, read through an ordered list
 * of linked sources like PATH.
 *
 * Why: a profile's `skills = ["sql-review"]` must resolve to one body, the
 * same one `lock --write` pins and the trust gate verifies, and a name held
 * by two sources must never resolve silently.
 *
 * Guarantees:
 *  - Sources: $AGENTSTACK_HOME/sources.toml (`version = 1`, `[[source]]
 *    name, path, note`), machine-local; absent or empty = one implicit
 *    source `local` at $AGENTSTACK_HOME/lib. Read first to last; per
 *    (kind, name) the first holder wins; every other holder is a collision
 *    (lib_collisions), never silent. A qualified `<src>:<name>` or
 *    `lib:<src>/<name>` resolves only in that source; an unknown source is
 *    an error ("no linked library named '<src>'").
 *  - Index: a source's `library.toml` is what resolvers read; a source
 *    without one is read from its layout (skills/<n>/SKILL.md,
 *    servers/<stem>.toml, instructions/<n>/instruction.toml, hooks/<n>.toml,
 *    extensions/<n>/, packages/<n>/pack.toml), so a plain folder works. An
 *    index that cannot be used (unparsable, newer version, unknown keys,
 *    two rows of one kind with the same name) makes that source skipped
 *    with a warning naming the file (and the name), never half-read.
 *  - Bodies stay inside their source: a row's path is relative, '..'-free
 *    and symlink-free at every component (lstat).
 *  - Writes (sources.toml, library.toml, bodies) happen under the one
 *    writer lock ($AGENTSTACK_HOME/.lock) through atomic
 *    replaces; a failure leaves the previous bytes.
 *  - Library functions print nothing and never exit; they fill as_err.
 */
#ifndef AS_LIBRARY_LIBRARY_H
#define AS_LIBRARY_LIBRARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"

#define LIB_SOURCES_VERSION 1
#define LIB_INDEX_VERSION 1
#define LIB_INDEX_NAME "library.toml"
#define LIB_MAX_FILE_BYTES ((size_t)8388608)

enum lib_kind {
    LIB_SKILL,
    LIB_SERVER,
    LIB_INSTRUCTION,
    LIB_HOOK,
    LIB_EXTENSION,
    LIB_PACKAGE,
    LIB_KIND_COUNT
};
/* "skill", "server", … — also the index's [[table]] name. */
const char *lib_kind_name(enum lib_kind k);
/* Parses a kind name; -1 when unknown. */
int lib_kind_parse(const char *s);

/* One item a source holds. Strings owned. */
struct lib_item {
    enum lib_kind kind;
    char *name;
    char *rel;        /* source-relative body path: skills/<n>, servers/<stem>.toml, … */
    char *body;       /* absolute body path (dir for skills/extensions, else the file) */
    char *checksum;   /* as indexed (bare hex), or NULL */
    char *provenance; /* path:<abs> | file:<abs> | manifest:<dir> | git:<url>@<rev>[#sub] */
    char *version;    /* packages */
    toml_value *row;  /* the index row (owned); NULL for a layout-derived item */
    size_t source;    /* index into library.sources */
};
typedef VEC(struct lib_item) lib_items;

struct lib_source {
    char *name;
    char *path;    /* absolute */
    char *note;    /* or NULL */
    bool implicit; /* the unlisted `local` of an empty sources.toml */
    bool exists;   /* the folder is there */
    bool indexed;  /* it has a library.toml */
    char *error;   /* why its index was skipped, or NULL */
    lib_items items;
};

struct library {
    char *home;         /* $AGENTSTACK_HOME */
    char *sources_path; /* $AGENTSTACK_HOME/sources.toml */
    bool materialized;  /* sources.toml lists the sources */
    VEC(struct lib_source) sources;
    strvec warnings; /* skipped sources, one line each */
};

/* Loads sources.toml and every source's index. home NULL = $AGENTSTACK_HOME.
 * NULL + err only when sources.toml itself cannot be used (file:line:col). */
struct library *lib_open(const char *home, struct as_err *err);
void lib_free(struct library *lib);
/* Index of a source by name, or -1. */
long lib_source_find(const struct library *lib, const char *name);

/* ---- references and resolution ------------------------------------------ */

/* Splits "<src>:<name>" or "lib:<src>/<name>". Returns true with *src and
 * *name allocated when the reference is qualified; false for a bare name. */
bool lib_ref_split(const char *ref, char **src, char **name);

/* Resolves a (possibly qualified) reference. 1 + *out when found, 0 when no
 * source holds it, -1 + err when the qualifier names no linked source
 * ("no linked library named '<src>'"). */
int lib_resolve(const struct library *lib, enum lib_kind kind, const char *ref,
                const struct lib_item **out, struct as_err *err);

/* A name held by more than one source: the first is used, the rest shadowed. */
struct lib_collision {
    enum lib_kind kind;
    const char *name;     /* points into the winner's item */
    size_t winner;        /* source index */
    VEC(size_t) shadowed; /* source indexes, in order */
};
typedef VEC(struct lib_collision) lib_collisions;
void lib_find_collisions(const struct library *lib, lib_collisions *out);
void lib_collisions_free(lib_collisions *c);
/* "<name> <kind> <winner> used · <b> shadowed ↳ <b>:<name>" (one line, no newline). */
void lib_collision_format(const struct library *lib, const struct lib_collision *c, strbuf *out);

/* manifest_env.library_has for manifest_validate: ctx is a struct library *. */
bool lib_manifest_has(void *ctx, enum mf_item_kind kind, const char *name);
/* pin_opts.library for pin_collect (a pin_library_fn): ctx is a struct
 * library *. Servers → the definition file; skills → the skill directory;
 * instructions → instructions/<n>/instruction.toml; extensions → the
 * extension directory (or file); workflows (not indexed) → the first
 * source's workflows/<n>. Qualified refs only in their source; a listed
 * item whose body is missing is an error, never a fall through. */
int lib_pin_lookup(void *ctx, enum pin_kind kind, const char *name, strbuf *path,
                   struct as_err *err);

/* ---- names and layout ---------------------------------------------------- */

/* ^[a-z0-9][a-z0-9._-]{0,63}$ — skills, instructions, hooks, extensions,
 * packages and source names. */
bool lib_name_valid(const char *name);
/* Server file stem: the name, or, when it has '/', '\\', NUL, '%' or
 * is "."/"..", each byte outside [A-Za-z0-9_-] as %XX. */
void lib_server_stem(const char *name, strbuf *out);
/* The inverse (NULL when stem is not a valid encoding). */
char *lib_server_unstem(const char *stem);
/* The body path of a new item of kind/name inside a source ("skills/<n>", …). */
void lib_item_rel(enum lib_kind kind, const char *name, strbuf *out);

/* ---- writing ------------------------------------------------------------- */

/* The first source (where new content goes). Never NULL. */
struct lib_source *lib_first(struct library *lib);
/* Rewrites a source's library.toml from its items (rows kept, derived items
 * given rows with fresh checksums), sorted by kind then name. Atomic. */
int lib_index_save(struct library *lib, struct lib_source *src, struct as_err *err);
/* Checksum of an item's body: skill tree digest, or SHA-256 of the file. */
int lib_body_checksum(enum lib_kind kind, const char *body, char hex[65], struct as_err *err);

/* Adds or replaces an item in a source's in-memory index (takes row). */
struct lib_item *lib_source_put(struct lib_source *src, size_t src_index, enum lib_kind kind,
                                const char *name, toml_value *row);
/* Drops an item from a source's in-memory index; true when it was there. */
bool lib_source_drop(struct lib_source *src, enum lib_kind kind, const char *name);
struct lib_item *lib_source_get(struct lib_source *src, enum lib_kind kind, const char *name);

/* sources.toml (atomic, 0600). Materializes the implicit `local`. */
int lib_sources_save(struct library *lib, struct as_err *err);

/* `lib link`: absolutises path; default name = lower-cased folder
 * name; duplicate name or folder refused ("<path> is already linked as
 * '<n>'"); a missing folder is allowed; the first link materializes
 * `local`. Changes lib in memory; lib_sources_save writes it. */
int lib_link(struct library *lib, const char *path, const char *name, bool first, const char *note,
             struct as_err *err);
/* `lib unlink` (folder untouched; the last source refused). */
int lib_unlink(struct library *lib, const char *name, struct as_err *err);
/* `lib reorder` (every name exactly once). */
int lib_reorder(struct library *lib, const char *const *names, size_t n, struct as_err *err);

/* Copies a tree (directories and regular files, modes' executable bits
 * kept; a symlink or special file refuses the copy). dst must not exist;
 * on failure nothing of dst is left. */
int lib_copy_tree(const char *src, const char *dst, struct as_err *err);

/* ---- trash ---------------------------------------------------------------- */

/* Moves an item's body to <source>/.trash/<kind>-<name>-<unixsecs>/ with
 * entry.toml (the dropped row and the body's rel path), drops the row and
 * saves the index. *id = "<kind>-<name>-<secs>" (caller frees). */
int lib_trash_item(struct library *lib, enum lib_kind kind, const char *name, char **id,
                   struct as_err *err);

struct lib_trash_entry {
    char *id;
    size_t source;
    enum lib_kind kind;
    char *name;
    char *dir; /* absolute trash dir */
    int64_t when;
};
typedef VEC(struct lib_trash_entry) lib_trash_entries;
void lib_trash_list(const struct library *lib, lib_trash_entries *out);
void lib_trash_entries_free(lib_trash_entries *t);
/* Restores an entry (a retaken name needs replace). */
int lib_trash_restore(struct library *lib, const char *id, bool replace, struct as_err *err);
/* Purges one entry (id) or all (id NULL). *purged = how many. */
int lib_trash_empty(struct library *lib, const char *id, size_t *purged, struct as_err *err);

#endif
