/*
 * pack — packs from git (docs/library.md):
 * `add from git:<url>[@<tag>][#<subdir>]`, the strict pack.toml, the
 * install into a project (inline [servers.<pack>], skills copied under the
 * manifest dir, the [packs.<pack>] ledger, pins written at once) and
 * `upgrade <pack>`.
 *
 * Why: a pack is third-party content that becomes a server the gateway
 * runs and skills agents read. It is fetched without prompts or hooks,
 * checked before anything is written, and installed all or nothing.
 *
 * Guarantees:
 *  - `git:owner/repo` means https://github.com/owner/repo; `git:host.tld/…`
 *    means https://host.tld/…; full URLs, `git@…` and absolute paths are
 *    kept as written (tests use local repositories).
 *  - [policy] allowed_sources (project and machine) is checked before any
 *    network ("… — nothing fetched").
 *  - pack.toml: unknown keys are errors (file:line:col); [[hook]] and
 *    [[extension]] refuse the pack; member paths are relative, '..'-free,
 *    symlink-free and must exist; members are content-scanned (hidden
 *    Unicode refuses: "… failed the content scan … — nothing installed");
 *    a literal secret in the server's url or args refuses the pack.
 *  - Secrets only as ${REF}s: stdio `env.E = "${E}"` per secret_env; http
 *    `Authorization = "Bearer ${<PACK>_TOKEN}"`, other headers `${<H>}`.
 *  - Install and upgrade are one transaction: files, manifest and lock are
 *    all written or the previous bytes are restored and created files
 *    removed; nothing half-installed. The manifest is edited in place
 *    (comments and layout kept).
 *  - A pack tag that does not exist, an unreachable URL, a repository with
 *    no version tags: a clear error before anything is written.
 */
#ifndef AS_LIBRARY_PACK_H
#define AS_LIBRARY_PACK_H

#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/discover.h"
#include "library/library.h"

struct lib_pack_ref {
    char *url;    /* what git is given */
    char *tag;    /* NULL = newest version tag */
    char *subdir; /* NULL = the repository root */
};
void lib_pack_ref_free(struct lib_pack_ref *r);
/* Parses what follows "git:". */
int lib_pack_ref_parse(const char *spec, struct lib_pack_ref *out, struct as_err *err);
/* "git:<url>@<tag>[#<subdir>]" */
char *lib_pack_ledger_id(const struct lib_pack_ref *r, const char *tag);

/* Version tags: optional 'v', all-numeric dotted parts. */
bool lib_version_tag(const char *tag);
/* Numeric, part by part; a longer equal prefix is greater. */
int lib_version_cmp(const char *a, const char *b);
/* Greatest version-shaped tag of a remote (`git ls-remote --tags`). */
int lib_pack_newest_tag(const char *url, char **tag, struct as_err *err);

struct lib_pack_member {
    char *name;
    char *path; /* pack-relative */
};
typedef VEC(struct lib_pack_member) lib_pack_members;

struct lib_pack {
    char *name, *description;
    strvec targets;
    bool has_server;
    char *server_type; /* stdio | http */
    char *server_url, *server_command;
    strvec server_args, secret_env, secret_headers;
    lib_pack_members skills, instructions;
    char *root;   /* checkout root holding pack.toml */
    char *tag;    /* as fetched */
    char *commit; /* 40 hex */
};
void lib_pack_free(struct lib_pack *p);
/* Parses and checks <root>/pack.toml and its members (no git). */
int lib_pack_load(const char *root, struct lib_pack *out, struct as_err *err);
/* Fetches url@tag into $home/store/git/<slug>, checks out the tag's commit
 * and loads the pack at the root or #subdir. */
int lib_pack_fetch(const char *home, const struct lib_pack_ref *ref, const char *tag,
                   struct lib_pack *out, struct as_err *err);
/* The [servers.<pack>] table a pack installs (caller frees). */
toml_value *lib_pack_server_table(const struct lib_pack *p);
/* <X> upper-cased, non-alphanumerics as '_'. */
void lib_pack_env_name(const char *s, strbuf *out);

/* Checks [policy] allowed_sources of the project (m may be NULL) and the
 * machine manifest against git:<url> and its scheme-less form. */
int lib_pack_policy_check(const struct manifest *m, const char *url, struct as_err *err);

struct lib_pack_opts {
    const char *toolset; /* add the pack's server to this toolset */
    bool with_instructions;
    bool write;
    bool yes; /* upgrade: approve rewritten house rules */
    FILE *out, *diag;
};

/* `add from git:…`: fetch, check, preview; with write, install and pin.
 * 0 = done (or previewed), -1 + err. */
int lib_pack_add(struct library *lib, const struct bundle_paths *p, const char *spec,
                 const struct lib_pack_opts *o, struct as_err *err);
/* `upgrade <pack>`: re-resolve from the ledger (never downgrade), preview,
 * with write re-install and re-pin. */
int lib_pack_upgrade(struct library *lib, const struct bundle_paths *p, const char *name,
                     const struct lib_pack_opts *o, struct as_err *err);

/* `remove <n>`: a [packs.<n>] ledger wins, else a [servers.<n>] or
 * [skills.<n>] entry. Drops the members' entries and toolset memberships
 * and the ledger; deletes skill dirs only under skills/ and instruction
 * files only with the vendor marker; re-pins (their lock rows go). With
 * write, one transaction: files, manifest and lock, or none of them. */
int lib_pack_remove(struct library *lib, const struct bundle_paths *p, const char *name,
                    const struct lib_pack_opts *o, struct as_err *err);

/* ---- add skill <source> ---------------------- */

/* A skill source: exactly one of path / url. */
struct lib_skill_src {
    char *path;    /* spelled path (./ ../ / ~/ expanded), or NULL */
    char *url;     /* owner/repo → https://github.com/owner/repo; other URLs in full */
    char *rev;     /* #ref or a /tree/<ref>/ URL; NULL = upstream HEAD */
    char *subpath; /* from a /tree/<ref>/<sub> URL */
    char *skill;   /* owner/repo@skill */
};
void lib_skill_src_free(struct lib_skill_src *s);
/* Parses a source; http://, credentials in a URL and shapes that are none
 * of the above are errors. */
int lib_skill_src_parse(const char *spec, struct lib_skill_src *out, struct as_err *err);

struct lib_skill_opts {
    const char *skill, *rev, *subpath, *name, *toolset;
    bool list, allow_flagged, write;
    FILE *out, *diag;
};
/* `add skill <source>`: fetch (git sources into the store, at a commit),
 * pick the skill, check and scan it, preview; with write add [skills.<n>]
 * (git + rev = the commit + subpath, or a path — a folder outside the
 * manifest dir is copied to skills/<n>), join the toolset and pin at once.
 * Files, manifest and lock are all written or none. */
int lib_add_skill(struct library *lib, const struct bundle_paths *p, const char *spec,
                  const struct lib_skill_opts *o, struct as_err *err);

/* Re-pins the project after a write (lock --write semantics, library
 * resolution through lib, manifest stamp dropped as for partial writes).
 * summary gets "N skills, M servers" style text. */
int lib_relock(struct library *lib, const struct bundle_paths *p, strbuf *summary,
               struct as_err *err);

#endif
