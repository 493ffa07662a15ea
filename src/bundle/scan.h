/*
 * scan — content scanning of what a bundle puts into agents' context
 * (docs/ci.md, "Content scanning").
 *
 * Why: skills, instructions and extensions are read by models, not only by
 * people. Text a reviewer cannot see (zero-width characters, bidirectional
 * overrides, Unicode tag characters that spell out hidden instructions) must
 * block delivery, and text that reads like an attack on the agent
 * (prompt-injection phrasing) must at least be shown.
 *
 * Guarantees:
 *  - One forward pass over the bytes per file; the UTF-8 decoder never reads
 *    past the buffer, and the heuristics look at bounded windows, so time is
 *    linear in the input whatever it holds.
 *  - Every finding carries file, 1-based line and column (columns count code
 *    points, as editors do), the code point as U+XXXX when there is one, a
 *    message, a snippet with every invisible character escaped as every
 *    display escapes it (term_sanitize: \u200b, never the raw character),
 *    and the fix.
 *  - High findings: every hidden code point (term_hidden_label: zero-width
 *    characters, bidi marks and controls, tag characters, invisible
 *    operators, fillers, the other default-ignorables), runs of two or more
 *    variation selectors (data smuggled after a visible character), and files
 *    that cannot be verified as text (invalid UTF-8, over 2 MiB): a scanner
 *    that silently skipped them would be bypassed by one stray byte.
 *    Files with a binary extension or a NUL in their first 8 KiB are skipped.
 *  - A U+FEFF at line 1 column 1 is a byte-order mark and is exempt.
 *  - Symlinks are never followed (ingestion refuses them); ".git" is skipped.
 *  - Nothing is written anywhere; scanning never changes a file.
 */
#ifndef AS_BUNDLE_SCAN_H
#define AS_BUNDLE_SCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"

#define SCAN_MAX_FILE_BYTES ((size_t)2 << 20)
#define SCAN_BINARY_PROBE 8192
#define SCAN_MAX_FINDINGS_PER_FILE 50

enum scan_severity { SCAN_HIGH, SCAN_WARN };

struct scan_finding {
    enum scan_severity sev;
    char *item; /* "skill 'review'", "instruction 'house-rules'", … (or NULL) */
    char *file; /* display path (project-relative when inside the project) */
    unsigned line, col;
    uint32_t cp;   /* the offending code point; 0 for heuristics and unscannable files */
    char *message; /* "hidden unicode U+200B (zero-width space)" */
    char *snippet; /* the surrounding text, invisibles escaped (\u200b) */
    char *fix;     /* one line */
};

struct scan_report {
    VEC(struct scan_finding) v;
    size_t high, warn;
    size_t files;   /* files scanned */
    size_t skipped; /* binary files skipped */
    strvec notes;   /* items that could not be scanned, and why (e.g. uncached git skill) */
};

void scan_report_init(struct scan_report *r);
void scan_report_free(struct scan_report *r);
static inline bool scan_report_blocking(const struct scan_report *r)
{
    return r->high > 0;
}

/* Scans one buffer. file is the display path; item may be NULL. */
void scan_buffer(const char *item, const char *file, const char *data, size_t len,
                 struct scan_report *r);
/* Scans one file (nofollow; binary extension → skipped; > 2 MiB → High). */
int scan_file(const char *item, const char *path, const char *display, struct scan_report *r,
              struct as_err *err);
/* Scans every regular file under dir (".git" skipped, symlinks not followed;
 * a symlink or special file is itself a High finding). display_prefix is
 * what the findings' paths start with. */
int scan_tree(const char *item, const char *dir, const char *display_prefix, struct scan_report *r,
              struct as_err *err);

/* Scans everything m delivers into agents' context: every skill (path skills,
 * library skills, cached git skills), every instruction body and variant,
 * every extension source. home ($AGENTSTACK_HOME) may be NULL (no library).
 * Library names resolve through library/library_ctx (a pin_library_fn, e.g.
 * the library module's lib_pin_lookup, so linked sources and qualified
 * `<source>:<name>` refs are scanned where lock pins them); library NULL =
 * the implicit local source <home>/lib only. Items that cannot be located
 * are noted in r->notes, not errors. */
int scan_bundle_lib(const struct manifest *m, const char *home, pin_library_fn library,
                    void *library_ctx, struct scan_report *r, struct as_err *err);
/* scan_bundle_lib without a library callback (the implicit local source). */
int scan_bundle(const struct manifest *m, const char *home, struct scan_report *r,
                struct as_err *err);

/* "file:line:col message — \"snippet\"" (one line, no newline). */
void scan_finding_format(const struct scan_finding *f, strbuf *out);
/* {"severity","item","file","line","col","code_point","message","snippet","fix"}. */
json_t *scan_finding_json(const struct scan_finding *f);
/* [finding…] */
json_t *scan_report_json(const struct scan_report *r);

#endif
