/*
 * export_doc — a project's reviewed setup as one portable JSON document
 * (docs/formats.md, "Export document"), for `agentstack export` and
 * `agentstack import`.
 *
 * Why: moving a setup to another checkout or machine by copying files by
 * hand loses the lock, the local skills the lock pins, or both. One
 * document carries exactly the files the manifest is made of, each with its
 * digest, so the other side can check every byte before writing any.
 *
 * Guarantees:
 *  - What is carried: the manifest, its lock and lock signature, and the
 *    files of the path skills and instruction files it declares. Never the
 *    local overlay (agentstack.local.toml, the user's own) and never .env,
 *    the keychain or any secret value: a manifest or path skill that holds a
 *    literal secret is refused, not exported.
 *  - Reading is strict: an unknown field, a wrong type, a digest or size
 *    that does not match the bytes, a duplicate path, or a path that is
 *    absolute, holds "..", ".", an empty component, a backslash, a control
 *    character or a ".git" component is refused, naming the file and its
 *    position; nothing is returned half-read.
 *  - A document can only carry what its own manifest declares
 *    (export_doc_check_declared): a file outside the manifest, its lock and
 *    the paths it declares (a CLI's config file, a git hook) is refused.
 */
#ifndef AS_CLI_EXPORT_DOC_H
#define AS_CLI_EXPORT_DOC_H

#include <stdbool.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"

#define EXPORT_DOC_VERSION 1
/* Bounds a document (and so an import) stays within. */
#define EXPORT_DOC_MAX_FILES 10000
#define EXPORT_DOC_MAX_BYTES ((size_t)32 << 20)

struct export_file {
    char *path; /* relative to the project root, '/'-joined */
    strbuf bytes;
    bool executable;
};
typedef VEC(struct export_file) export_files;

struct export_doc {
    char *manifest; /* the manifest's path among files */
    export_files files;
};
void export_doc_free(struct export_doc *d);

/* The document of the project p, whose manifest m was loaded from it. */
int export_doc_collect(const struct bundle_paths *p, const struct manifest *m,
                       struct export_doc *out, struct as_err *err);

/* The JSON text of d (sorted by path, stable), into out. */
void export_doc_write(const struct export_doc *d, strbuf *out);

/* Reads and checks a document; name is for messages. */
int export_doc_read(const char *name, const char *data, size_t len, struct export_doc *out,
                    struct as_err *err);

/* "" when path is one an export may carry, else why not (a static text). */
const char *export_doc_path_problem(const char *path);

/* Every file of d is the manifest, its lock or signature, or lies in a
 * path skill or instruction file that m (d's manifest, loaded for the
 * target) declares; else -1 naming the first file that is not. */
int export_doc_check_declared(const struct export_doc *d, const struct manifest *m,
                              struct as_err *err);

#endif
