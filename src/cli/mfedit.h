/*
 * mfedit — the one path by which a command edits the project manifest
 * (toolset, settings, delivery): under the one writer lock, from the bytes
 * read inside it, format-preserving (toml_edit keeps comments and layout),
 * checked to still load as a manifest, then either previewed ("Dry run.")
 * or replaced atomically.
 *
 * Why one path: every such edit re-gates trust (the consent digest covers
 * the manifest's bytes), so each must be exactly the change shown, never a
 * partial write, and never a file the next command cannot load.
 *
 * Guarantees: nothing but the manifest file is written; a change that would
 * leave an invalid manifest is refused with the loader's own error; the
 * preview prints the changed lines (- old, + new) and the footer
 * "Dry run. Nothing written — re-run with --write."; after a write it
 * names the follow-up (lock, then trust) when the project was trusted.
 */
#ifndef AS_CLI_MFEDIT_H
#define AS_CLI_MFEDIT_H

#include <stdbool.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "bundle/manifest.h"
#include "cli/parse_options.h"

/* Makes the change on ed (m is the manifest as loaded from the same bytes)
 * and appends one line saying what it does to summary. -1 + err refuses. */
typedef int (*cli_mfedit_fn)(toml_edit *ed, const struct manifest *m, const void *arg,
                             strbuf *summary, struct as_err *err);

/* Runs fn on the project's manifest (discovered from ctx). EXIT_OK (written,
 * previewed, or nothing to change) or EXIT_FAIL after printing why.
 * carry: NULL, or the one root table whose rewrite is preference-shaped
 * ("delivery"): when the project was trusted and the manifest differs in
 * that table only, trust is carried to the new bytes (logged "repin");
 * any other difference re-gates as usual. */
int cli_manifest_edit(const struct cli_ctx *ctx, bool write, cli_mfedit_fn fn, const void *arg,
                      const char *carry);

/* The same locked, checked, atomic edit for a command that runs lock and
 * trust itself (`yes`): nothing printed, no preview. 1 written, 0 nothing
 * to change, -1 + err refused (nothing written). */
int cli_manifest_edit_now(const struct bundle_paths *p, cli_mfedit_fn fn, const void *arg,
                          struct as_err *err);

/* The path of a table in the manifest: {"toolsets", name} (or "profiles"
 * in a manifest that spells it so). */
const char *cli_toolsets_key(const struct manifest *m);

#endif
