/*
 * onboard — turning what a machine already has into a manifest (init,
 * adopt, bootstrap; docs/onboarding.md).
 *
 * Why: nobody starts from a blank page. The 16 CLIs already hold MCP
 * servers (often with tokens pasted inline) and skill folders; init reads
 * them through the adapter descriptors' inverse mapping, merges them into
 * one reviewed manifest and moves every inline secret to a store, so the
 * file that gets committed holds ${REF}s only.
 *
 * Guarantees:
 *  - Reading never writes: the CLIs' configs are opened read-only and left
 *    byte-identical; a malformed one is reported and skipped, never fatal.
 *  - Every imported server says where it came from; the same name defined
 *    differently by two CLIs is a reported conflict (the first definition,
 *    in the adapter table's order, global before project, wins); equal
 *    definitions merge and their extra.<id> keys are unioned.
 *  - The gateway bridge (an entry named "agentstack", or command stem
 *    "agentstack" with first arg "mcp") is never imported; executables
 *    inside a macOS .app bundle are skipped unless asked for.
 *  - Lifting (key-name rules, plus value shapes: ghp_, github_pat_,
 *    sk-, xoxb-, AKIA, JWTs, high entropy) replaces each secret with a
 *    ${REF}; equal values share one ref; a name already holding a different
 *    value in a store, or already used, gets _2, _3. The lifted values live
 *    only in onb_lift entries (wiped on free) and the store they go to.
 *  - The manifest text written is checked by loading and validating it
 *    before anything is stored; a store or write failure after keychain
 *    writes rolls those writes back.
 *  - Secret values go to the project .env only when git will ignore it:
 *    the manifest dir is no symlink, the .env no symlink or special file,
 *    and in a git work tree git itself (hardened, bundle/git.h) says the
 *    path is ignored, or will be once the anchored rule is appended to
 *    <root>/.gitignore (checked before anything is written, verified after
 *    the append). A rule that re-includes it, or a tracked .env, refuses.
 *  - Locating a secret (status surfaces) reads presence only: process env,
 *    keychain attributes, KEY=value names. Never a keychain value, never
 *    varlock.
 */
#ifndef AS_ONBOARD_ONBOARD_H
#define AS_ONBOARD_ONBOARD_H

#include <stdbool.h>
#include <stddef.h>

#include "adapters/adapters.h"
#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"

/* ---- presence-only secret locator ----------------------------------------- */

struct onb_locator {
    bool kc_ok;       /* keychain reachable and listed */
    char kc_why[512]; /* why not (when kc_ok is false and it was asked for) */
    strvec kc_names, file_names, dotenv_names;
    char *file_store; /* $AGENTSTACK_HOME/secrets.env */
    char *dotenv;     /* project .env or NULL */
};
/* with_keychain false: the keychain is not asked at all. */
void onb_locator_init(struct onb_locator *l, const char *project_dotenv, bool with_keychain);
void onb_locator_free(struct onb_locator *l);
/* The first layer holding name in chain order ("env", "keychain", "file",
 * ".env") or NULL; every later holder is appended to also (may be NULL). */
const char *onb_locate(const struct onb_locator *l, const char *name, strvec *also);

/* ---- import ------------------------------------------------------------- */

struct onb_server {
    char *name;
    bool http;
    char *url, *command, *cwd;
    strvec args;
    strvec hdr_keys, hdr_vals; /* parallel, file order */
    strvec env_keys, env_vals;
    toml_value *extra; /* table adapter-id → table, or NULL */
    strvec origins;    /* "Claude Code (~/.claude.json)" */
    strvec origin_ids; /* adapter ids, parallel to origins */
};

struct onb_skill {
    char *name;
    char *src; /* the directory to copy (symlinks resolved) */
    char digest[65];
    strvec origins;
    bool in_library; /* the library already holds these bytes */
};

struct onb_import {
    strvec detected_ids;   /* registry order */
    strvec detected_names; /* display names, parallel */
    VEC(struct onb_server) servers;
    VEC(struct onb_skill) skills;
    strvec notes;     /* skips: "skipping 'x' in <where> — <why>" */
    strvec conflicts; /* "'x' in <where> differs from <first> — kept <first>'s" */
    strvec problems;  /* configs that could not be read */
};

struct onb_import_opts {
    const char *project_root;  /* also read project-scope configs (NULL: global only) */
    bool include_tool_managed; /* import executables inside .app bundles */
    bool skills;               /* scan skill folders */
    const strvec *only;        /* adapter ids to read (NULL or empty: all detected) */
    bool all_adapters;         /* read every adapter's files, detected or not */
    bool skip_global;          /* read only the project-scope files (adopt --scope project) */
    bool skip_project;         /* read only the user-scope files (adopt --scope global) */
    bool no_merge;             /* keep one entry per file (adopt compares each on its own) */
};

int onb_import(const struct adp_registry *r, const struct onb_import_opts *o,
               struct onb_import *out, struct as_err *err);
void onb_import_free(struct onb_import *im);
void onb_server_free(struct onb_server *s);
/* Reads one CLI's MCP servers from a native file's bytes (the inverse of
 * the descriptor's field mapping). where labels origins and notes. */
int onb_read_servers(const struct adp_desc *d, enum adp_format fmt, const char *path,
                     const char *text, size_t len, const char *where, bool include_tool_managed,
                     struct onb_import *out, struct as_err *err);
/* true when d's user-scope config holds the gateway bridge (connect ran). */
bool onb_bridge_registered(const struct adp_desc *d);
/* True for the gateway bridge entry. */
bool onb_is_bridge(const char *name, const char *command, const strvec *args);
/* Undoes the renderers' cwd "wrap" (sh -c "cd '<cwd>' && exec '<cmd>' '<arg>'…",
 * docs/adapters.md): back to command, args and cwd. false when s is not such a wrap. */
bool onb_unwrap_cwd(struct onb_server *s);
/* Converts a manifest server into the import shape (origins empty). */
void onb_server_from_manifest(const struct mf_server *m, struct onb_server *out);
/* true when the two definitions are the same server (extras ignored). */
bool onb_server_same(const struct onb_server *a, const struct onb_server *b);
/* "~/.claude.json" for a path under $HOME, else the path. */
void onb_display_path(const char *path, strbuf *out);
/* path relative to the current directory when it lies below it, else as
 * onb_display_path shows it (what init and adopt name as written). */
void onb_display_rel(const char *path, strbuf *out);

/* ---- lifting -------------------------------------------------------------- */

struct onb_lift {
    char *name;   /* the ${REF} name */
    char *value;  /* the secret (wiped on free) */
    strvec where; /* "github headers.Authorization" */
    bool reused;  /* a store already holds this exact value */
};
typedef VEC(struct onb_lift) onb_lifts;

/* Answers whether a store already holds name: 0 no, 1 with this value,
 * 2 with another value (the name is then not used). */
typedef int (*onb_taken_fn)(void *ctx, const char *name, const char *value);

/* Replaces inline secrets in every server by ${REF}s (in place). Entries
 * already in out (e.g. the manifest's refs with their current values,
 * marked reused) are matched first, so a known value keeps its known name. */
void onb_lift_secrets(struct onb_import *im, onb_taken_fn taken, void *ctx, onb_lifts *out);
void onb_lifts_free(onb_lifts *l);

/* ---- manifest text -------------------------------------------------------- */

/* One [servers.<name>] block (with a "# from …" comment line). */
void onb_server_toml(const struct onb_server *s, strbuf *out);
/* The imported manifest: header comment, version, servers, [toolsets.default]. */
void onb_manifest_text(const struct onb_import *im, strbuf *out);
/* The commented starter manifest for a machine with nothing to import. */
void onb_starter_text(strbuf *out);

/* ---- writing ---------------------------------------------------------------- */

enum onb_dest { ONB_DEST_KEYCHAIN, ONB_DEST_ENV, ONB_DEST_FILE, ONB_DEST_SKIP };
const char *onb_dest_name(enum onb_dest d); /* keychain | env | file | skip */

struct onb_stored {
    strvec kc_created; /* keychain names written by this run (rolled back) */
};
/* Stores every non-reused lift in dest (dotenv: <manifest dir>/.env). */
int onb_store_lifts(const onb_lifts *l, enum onb_dest dest, const char *dotenv,
                    struct onb_stored *st, struct as_err *err);
/* Undoes the keychain writes recorded in st. */
void onb_rollback(struct onb_stored *st);
void onb_stored_free(struct onb_stored *st);

/* The project .env as a secret store (init --secrets env). */
struct onb_dotenv_plan {
    bool in_work_tree; /* the project is inside a git work tree */
    bool ignored;      /* git ignores the .env already */
    bool add_rule;     /* appending rule to <root>/.gitignore makes it ignored (checked) */
    char rule[32];     /* "/.agentstack/.env" or "/.env" */
};
/* Everything checked before a byte is written: -1 + err (and hint) when
 * values must not go to p->env_file (see the guarantees above). */
int onb_dotenv_check(const struct bundle_paths *p, struct onb_dotenv_plan *pl, struct as_err *err);
/* Appends pl->rule to <root>/.gitignore when pl->add_rule, then asks git
 * again; when git still does not ignore the .env, .gitignore is put back
 * and -1 + err. Call before storing any value. */
int onb_dotenv_ignore(const struct bundle_paths *p, const struct onb_dotenv_plan *pl,
                      struct as_err *err);
/* For doctor: 1 when env_file holds values (*values = how many names) and
 * the git work tree holding it (its real path) does not ignore it; why
 * then says which rule decides. 0 when absent, empty, ignored or not in a
 * work tree; -1 + err when git could not tell. */
int onb_dotenv_exposed(const char *env_file, size_t *values, strbuf *why, struct as_err *err);

/* Copies the skills not yet in the library into its first source and
 * saves the index, under the writer lock. */
int onb_write_skills(const struct onb_import *im, size_t *copied, struct as_err *err);

#endif
