/*
 * skill_md — SKILL.md frontmatter and skill names (docs/manifest.md).
 *
 * Why: a skill's description is shown to people and injected into agents'
 * context, so it must be bounded, one line, and free of escapes, controls
 * and invisible/bidi characters; skill names become directory names, so
 * they are checked, never rewritten.
 *
 * Guarantees: reads at most SKILL_MD_MAX_BYTES of a regular file (symlinks
 * and FIFOs refused, no hang); parsing never fails on odd text — it finds a
 * description or none.
 */
#ifndef AS_BUNDLE_SKILL_MD_H
#define AS_BUNDLE_SKILL_MD_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"

#define SKILL_MD_MAX_BYTES ((size_t)256 * 1024)
#define SKILL_MAX_DEPTH 64

/* ^[a-z0-9][a-z0-9._-]{0,63}$ */
bool skill_name_valid(const char *name);

/* Parsed frontmatter. Strings owned; NULL when absent. */
struct skill_md {
    bool has_frontmatter;
    char *name;        /* display only: identity is the key/dir name */
    char *description; /* sanitized, one line */
};
void skill_md_free(struct skill_md *s);

/* Parses SKILL.md text (first SKILL_MD_MAX_BYTES considered). Never fails. */
void skill_md_parse(const char *text, size_t len, struct skill_md *out);
/* Reads <dir>/SKILL.md (nofollow, regular file, ≤ 256 KiB: longer files are
 * read up to the cap) and parses it. -1 + err when it is missing or unusable. */
int skill_md_read(const char *dir, struct skill_md *out, struct as_err *err);

/* Sanitizes to one display line: escapes (ESC sequences) and control
 * characters removed, bidi controls and invisible characters (zero-width,
 * BOM, soft hyphen, tags) removed, runs of whitespace collapsed to one
 * space, trimmed; invalid UTF-8 bytes dropped. */
void skill_md_sanitize(const char *s, size_t len, strbuf *out);

/* Checks a skill directory's shape: the root is a real directory (not a
 * symlink) holding SKILL.md; no symlink anywhere ("skill content contains a
 * symlink"), no special files (FIFO, socket, device), depth ≤ 64; ".git"
 * entries at any depth are skipped; hidden files are content. */
int skill_dir_check(const char *dir, struct as_err *err);

#endif
