/*
 * cli — the command table and what every command shares.
 *
 * Each command lives in its own cmd_<name>.c and is listed once in
 * commands.c. Exit codes: 0 success, 1 refused or failed, 2 usage error.
 * Results go to stdout, diagnostics to stderr.
 */
#ifndef AS_CLI_CLI_H
#define AS_CLI_CLI_H

#include <stdbool.h>

#include "adapters/engine.h"
#include "base/err.h"
#include "base/lock.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/parse_options.h"

/* The command table (commands.c): every command's spec, NULL-ended. */
extern const struct cli_spec *const cli_commands[];
const struct cli_spec *cli_find(const char *name);

/* Prints "error: <err>" and, when err->hint is set, the fix on the next line. */
void cli_error(const struct as_err *err);
/* Prints "error: <fmt>" to stderr. */
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --scope global|project, as several commands take it: 0 when not given. */
enum cli_scope { CLI_SCOPE_NONE = 0, CLI_SCOPE_GLOBAL, CLI_SCOPE_PROJECT };
extern const struct cli_choice cli_scope_choices[];
/* "global", "project", or NULL for CLI_SCOPE_NONE. */
const char *cli_scope_name(int scope);

/* --secrets keychain|env|file|skip (init, adopt): an enum onb_dest. */
extern const struct cli_choice cli_secret_dest_choices[];

struct library;
/* The central library with its warnings printed, or NULL (after a warning)
 * when sources.toml cannot be used: then no library name resolves and the
 * command goes on, validation saying which names are unknown. */
struct library *cli_open_library(void);

/* Every ${REF} what apply delivers for m needs: its [servers], its hooks and
 * the library servers its toolsets name (docs/library.md), sorted, once
 * each. lib NULL: the implicit local library source only. */
void cli_needed_refs(const struct manifest *m, struct library *lib, strvec *out);

/* What apply, use and session start render from: the project's manifest (or
 * the machine manifest when there is no project), the adapter registry, the
 * central library, the trust gate's verdict and the render environment.
 * cli_render_init first; the caller discovers r.p (discover_project), then
 * cli_render_load, cli_render_prepare, cli_render_opts; cli_render_release
 * always. Each step prints its own error and returns -1, leaving err set. */
struct cli_render {
    struct bundle_paths p;
    struct manifest_snapshot snap;
    struct manifest *m;
    strbuf machine_path; /* the machine manifest's path when !p.found */
    struct adp_registry reg;
    bool have_reg;
    struct library *lib; /* NULL when the central library cannot be read */
    char *refusal;       /* the trust gate's refusal, or NULL */
    struct adp_render_env renv;
    bool have_renv;
    bool project_scope;
};
void cli_render_init(struct cli_render *r);
/* The manifest of the discovered project, or else the machine manifest (its
 * absence reported as "no project" by discover_require). */
int cli_render_load(struct cli_render *r, struct as_err *err);
/* The registry (its warnings printed), the central library, the manifest
 * validated against both (diagnostics printed; with refuse set, errors stop
 * here: "refusing to <refuse>: …"), the trust gate for a project, and the
 * render environment for scope ("global", "project" or NULL). */
int cli_render_prepare(struct cli_render *r, const char *scope, const char *refuse,
                       struct as_err *err);
/* Fills o's fields that come from r and applies the render environment; the
 * caller sets its own fields first. */
void cli_render_opts(const struct cli_render *r, struct adp_apply_opts *o);
void cli_render_release(struct cli_render *r);

/* The central library a command works on, with the one writer lock taken
 * first when the command writes. Start from {0}. */
struct cli_lib {
    struct library *lib;
    struct as_lock lock;
    bool locked;
};
/* Takes the writer lock when lock is set, then opens the central library.
 * NULL after printing the error, with nothing held. */
struct library *cli_lib_open(struct cli_lib *cl, bool lock);
/* Frees the library and releases the lock; safe after a failed open. */
void cli_lib_close(struct cli_lib *cl);

struct bundle_paths;
/* The project a command works on: discovered from the working directory
 * (or --manifest-dir) and required to exist. -1 after printing why, with p
 * freed (and so safe to free again). */
int cli_project(const struct cli_ctx *ctx, struct bundle_paths *p);
typedef int (*cli_project_fn)(struct library *lib, const struct bundle_paths *p, const void *arg,
                              struct as_err *err);
/* The project (discovered and required), the writer lock and the central
 * library around fn, held for the whole command (add, upgrade, remove), so
 * two edits never race; lib_warnings prints the library's warnings first.
 * Prints fn's error once; EXIT_OK or EXIT_FAIL. */
int cli_with_project(struct cli_ctx *ctx, bool lib_warnings, cli_project_fn fn, const void *arg);

/* `session start [TOOLSET] [--scope S] [--target ID]…` and `session end
 * [--all]` for the project ctx names, as the commands run them (the
 * gateway's session tools call these too). The exit code. */
int cli_session_start(struct cli_ctx *ctx, const char *toolset, const char *scope,
                      const strvec *targets, bool allow_unresolved);
int cli_session_end(struct cli_ctx *ctx, bool all);

/* `use --list [--json]`: the manifest's toolsets and the default. */
int cli_use_list(const struct cli_ctx *ctx, bool json);

int cmd_help(int argc, char **argv, struct cli_ctx *ctx);
int cmd_version(int argc, char **argv, struct cli_ctx *ctx);
int cmd_status(int argc, char **argv, struct cli_ctx *ctx);

#endif
