/*
 * agentstack diff — each target's files against the manifest: managed,
 * foreign (kept), hand-edited; writes nothing and exits 0 (04 §7). It is
 * apply's plan without the write, so it shares apply's run (cmd_apply.c);
 * this file adds --json, the stable form scripts read:
 *
 *   {schema_version: 1, command: "diff", scope: "project"|"global",
 *    targets: [{id, display, path (absolute, or null), kind ("servers", or
 *               the lanes a file holds: "instructions + settings"),
 *               state: differs|in_sync|hand-edited|failed|skipped,
 *               hand_edited (the file no longer hashes to what we last
 *               wrote — one hash per file, so a property of the target),
 *               entries: [{name, state: managed|foreign}], removed: [name],
 *               added_lines, removed_lines (differs/in_sync/hand-edited),
 *               error (failed), note (skipped)}],
 *    drifted: N, in_sync: bool}
 *
 * managed = rendered from this manifest; foreign = written by another
 * manifest and kept; a user's own entries are not claimed. No diff text:
 * line counts only, so no resolved value can reach a script's log.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "cli/cli.h"

int cmd_diff(int argc, char **argv, struct cli_ctx *ctx);
int cli_apply_run(int argc, char **argv, struct cli_ctx *ctx, bool diff, bool json,
                  bool instructions);

static bool takes_value(const char *s)
{
    return strcmp(s, "--target") == 0 || strcmp(s, "--toolset") == 0 ||
           strcmp(s, "--profile") == 0 || strcmp(s, "--scope") == 0;
}

int cmd_diff(int argc, char **argv, struct cli_ctx *ctx)
{
    /* --json is taken out here so apply's parser, which refuses it, sees
     * only the flags the two commands share; a value of --target and the
     * like is passed through untouched even when it reads "--json". */
    char **rest = xcalloc((size_t)argc + 1, sizeof *rest);
    int n = 0;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--json") == 0) {
            json = true;
            continue;
        }
        rest[n++] = argv[i];
        if (i > 0 && takes_value(argv[i]) && i + 1 < argc)
            rest[n++] = argv[++i];
    }
    rest[n] = NULL;
    int rc = cli_apply_run(n, rest, ctx, true, json, false);
    free(rest);
    return rc;
}
