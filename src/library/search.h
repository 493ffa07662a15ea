/*
 * search — `agentstack search [query] [--all] [--json]` (docs/library.md): one list
 * of what the central library (every linked source) and the project's
 * installed packs offer, matched by name or description.
 *
 * Why: a name a toolset can use should be findable without knowing which
 * source or pack holds it, and text that came from a repository (a
 * SKILL.md, a pack.toml) must never reach the terminal raw.
 *
 * Guarantees: reads only (no network, no writes); every description is
 * one sanitized line (escapes, controls, bidi and invisible characters
 * removed); results are ordered by kind then name then source order; a
 * shadowed holder is listed only with `all`, marked shadowed.
 */
#ifndef AS_LIBRARY_SEARCH_H
#define AS_LIBRARY_SEARCH_H

#include <stdbool.h>

#include "base/vec.h"
#include "bundle/manifest.h"
#include "library/library.h"

struct lib_hit {
    const char *badge; /* "skill" | "server" | "pack" | "extension" | "hook" | "instruction" */
    char *name;
    char *description;   /* sanitized one line, or NULL */
    char *source;        /* library source name, or a pack's ledger source */
    bool in_manifest;    /* the project names it (entry, toolset, [packs]) */
    bool shadowed;       /* an earlier source holds the same (kind, name) */
    bool installed_pack; /* from the project's [packs] ledger */
    size_t seq;          /* discovery order: ties keep source order */
};
typedef VEC(struct lib_hit) lib_hits;
void lib_hits_free(lib_hits *h);

/* Case-insensitive substring of query in name or description (NULL or ""
 * = everything). m may be NULL (no project). */
void lib_search(const struct library *lib, const struct manifest *m, const char *query, bool all,
                lib_hits *out);

#endif
