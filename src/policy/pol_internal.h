/*
 * pol_internal — the compiled ruleset's layout, shared by the policy sources
 * and nothing else.
 *
 * Why this layout: decisions sit on the gateway's hot path, so every list is
 * compiled once into a glob set with hash indexes for the common shapes
 * (literal, "prefix*", "*suffix", "*") and a linear tail for the rest; a
 * decision hashes the subject incrementally and never allocates. A server's
 * bucket stores only its own key's rules and consults the "*" bucket too
 * (inherit_any), so N server keys never copy the "*" rules N times.
 */
#ifndef AS_POLICY_POL_INTERNAL_H
#define AS_POLICY_POL_INTERNAL_H

#include <stdint.h>

#include "policy/policy.h"

/* ---- arena: every string a ruleset owns --------------------------------- */

struct pol_arena_chunk;
struct pol_arena {
    struct pol_arena_chunk *head;
};
char *pol_arena_strdup(struct pol_arena *a, const char *s);
void *pol_arena_alloc(struct pol_arena *a, size_t n);
void pol_arena_free(struct pol_arena *a);

/* ---- globs -------------------------------------------------------------- */

struct pol_glob {
    const char *disp; /* canonical rule text without '!' */
    const char *pat;  /* matched text (egress: the host glob) */
    uint32_t len;     /* strlen(pat) */
    uint16_t port;    /* egress pin, 0 = any */
    uint8_t npieces;  /* 0 = literal, else '*'-separated pieces (>= 2) */
    uint8_t malformed;
    uint64_t need; /* byte-pair signature every match must contain (general globs) */
    uint16_t poff[POL_MAX_STARS + 1];
    uint16_t plen[POL_MAX_STARS + 1];
};

/* An input item for building a glob set. */
struct pol_item {
    const char *disp;
    const char *pat;
    uint16_t port;
    uint8_t malformed;
};

struct pol_hidx {
    uint32_t *slot; /* glob id + 1; 0 = empty */
    uint32_t mask;  /* slots - 1, 0 when unused */
    uint16_t *lens; /* distinct key lengths, ascending (prefix/suffix tables) */
    uint32_t nlens;
};

struct pol_globset {
    struct pol_glob *g; /* sorted by disp, deduplicated */
    const char **disps; /* g[i].disp, for rendering allowlists */
    uint32_t n;
    uint8_t nocase;
    int32_t first_malformed; /* -1 when none */
    struct pol_hidx exact, prefix, suffix;
    uint32_t *all; /* ids of "*"-only globs */
    uint32_t nall;
    uint32_t *other; /* ids needing the general matcher */
    uint32_t nother;
};

/* Builds a set from items (copies strings into a). Items need not be sorted.
 * pattern lengths/star counts beyond caps mark a glob malformed. */
void pol_globset_build(struct pol_globset *gs, struct pol_arena *a, const struct pol_item *items,
                       size_t n, int nocase, size_t maxlen);
void pol_globset_release(struct pol_globset *gs);
/* Lowest id matching s (with port rule), or -1. first_only: any match will
 * do (allowlist membership), stops at the first found. */
int32_t pol_globset_find(const struct pol_globset *gs, const char *s, size_t n, unsigned port,
                         int first_only);
/* Compares two sets' display lists (for sorting allowlists). */
int pol_globset_cmp(const struct pol_globset *a, const struct pol_globset *b);
int pol_globset_equal(const struct pol_globset *a, const struct pol_globset *b);

/* ---- the ruleset -------------------------------------------------------- */

struct pol_side {
    struct pol_globset deny;
    struct pol_globset *allow; /* allow_all_of: every bound must be hit */
    uint32_t nallow;
    uint8_t inherit_any; /* also apply the "*" bucket's side */
};

struct pol_bucket {
    const char *server;                  /* NULL for the "*" bucket */
    struct pol_side side[POL_NKEYED][2]; /* [dim][machine/project] */
};

struct pol_ruleset {
    struct pol_arena arena;
    int version;          /* > POL_WIRE_VERSION: deny everything */
    const char *deny_all; /* set: deny everything with this reason */
    struct pol_bucket any;
    struct pol_bucket *servers; /* sorted by name */
    uint32_t nservers;
    uint32_t *srv_slot; /* hash of server names: index + 1 */
    uint32_t srv_mask;
    struct pol_globset fs[3][2]; /* [read/write/deny][machine/project] */
    struct pol_globset gw_only;  /* normalized literal hosts */
    enum pol_by isolation_by;    /* who asked for confined servers, or POL_BY_NONE */
};

void pol_ruleset_index_servers(struct pol_ruleset *rs);
/* The bucket governing server (the "*" bucket for unknown names and "*"). */
const struct pol_bucket *pol_bucket_for(const struct pol_ruleset *rs, const char *server);
void pol_side_release(struct pol_side *s);
struct pol_ruleset *pol_ruleset_alloc(void);

/* ---- grammar (layer.c / pol_host.c) ----------------------------------------- */

/* Validates a keyed entry (without '!') for dim and fills canon/pat/port in
 * the caller's buffers (canon POL_MAX_PATTERN + 1, pat POL_MAX_PATTERN + 1).
 * -1 with *why on error. */
int pol_entry_parse(enum pol_dim dim, const char *entry, char *canon, char *pat, uint16_t *port,
                    const char **why);
/* Filesystem glob check: -1 with *why. */
int pol_fs_glob_check(const char *glob, size_t len, const char **why);
/* Valid subject for tools ([A-Za-z0-9_.-]{1,128}) / secrets ([A-Za-z_][A-Za-z0-9_]*). */
int pol_tool_name_ok(const char *s, size_t n);
int pol_ref_name_ok(const char *s, size_t n);
/* A [policy.tools] subject: a tool name, "prompt:" + a tool-shaped name, or
 * "resource:" + a URI of printable ASCII without spaces (docs/policy.md). */
int pol_tool_subject_ok(const char *s, size_t n);

/* "unknown key '<k>' in <table> — did you mean '<x>'?" at the key's position. */
int pol_unknown_key(struct as_err *err, const char *path, const toml_kv *kv, const char *table,
                    const char *const *known);

/* 64-bit FNV-1a, optionally over ASCII-folded bytes. */
static inline uint64_t pol_fnv_step(uint64_t h, unsigned char c, int nocase)
{
    if (nocase && c >= 'A' && c <= 'Z')
        c = (unsigned char)(c + 32);
    return (h ^ c) * 1099511628211ULL;
}
#define POL_FNV_INIT 14695981039346656037ULL

#endif
