/*
 * render — one manifest server in one CLI's native shape (docs/adapters.md).
 *
 * Why: the field mapping lives in descriptors; this is the single place that
 * reads it, so every writer (apply, use, connect, sessions) produces the
 * same bytes for the same server.
 *
 * Guarantees:
 *  - Body keys come in a fixed order (docs/adapters.md): transport tag, url, command, args,
 *    cwd, headers, env, then extra.<adapter-id> keys (a same-named extra
 *    replaces the value in place). Empty fields are omitted.
 *  - ${NAME} references are resolved only here, at the native-config
 *    boundary. An unresolved reference never reaches the output: the render
 *    reports ADP_RENDER_UNRESOLVED with the names, and the caller blocks the
 *    target or (with --allow-unresolved) leaves the entry out.
 *  - A server a CLI cannot hold (a name outside its charset, a transport it
 *    cannot represent) is reported as ADP_RENDER_SKIP with the exact reason.
 *  - Resolved values are collected so previews can mask them back to ${NAME}.
 */
#ifndef AS_ADAPTERS_RENDER_H
#define AS_ADAPTERS_RENDER_H

#include <jansson.h>
#include <stdbool.h>

#include "adapters/adapters.h"
#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"
#include "bundle/manifest.h"

/* Looks up one secret. Returns 1 with the value appended to out, 0 when it
 * is not set, -1 + err when the store failed (the write is blocked either
 * way). server names who asks (for scoped stores and messages). */
typedef int (*adp_resolve_fn)(void *ctx, const char *name, const char *server, strbuf *out,
                              struct as_err *err);

/* The process environment: the only store wired until src/secrets lands. */
int adp_resolve_env(void *ctx, const char *name, const char *server, strbuf *out,
                    struct as_err *err);

struct adp_secret {
    char *name;
    char *value;
};
typedef VEC(struct adp_secret) adp_secrets;
/* Frees and zeroes the values. */
void adp_secrets_free(adp_secrets *s);
/* Replaces every resolved value in text by ${NAME} (sec_mask, secrets.h). */
void adp_secrets_mask(const adp_secrets *s, const char *text, size_t len, strbuf *out);

struct adp_render_ctx {
    adp_resolve_fn resolve; /* NULL: the process environment */
    void *resolve_ctx;
    adp_secrets *secrets;     /* collects resolved values (may be NULL) */
    const char *project_root; /* anchors a relative cwd (may be NULL) */
};

enum adp_render_status {
    ADP_RENDER_OK,
    ADP_RENDER_SKIP,       /* reason set: the text after "skipping '<name>' — " */
    ADP_RENDER_UNRESOLVED, /* missing holds the unresolved names (first seen order) */
    ADP_RENDER_ERROR,      /* err set (store failure, null extra value, …) */
};

struct adp_rendered {
    json_t *json;     /* JSON / JSONC targets */
    toml_value *toml; /* TOML targets */
    strbuf reason;
    strvec missing;
};
void adp_rendered_release(struct adp_rendered *r);

/* Renders server s for d in format fmt (the target file's format). */
enum adp_render_status adp_render_server(const struct adp_desc *d, enum adp_format fmt,
                                         const struct mf_server *s, struct adp_render_ctx *rc,
                                         struct adp_rendered *out, struct as_err *err);

/* Resolves the ${NAME}s of any value (settings, hook fields) for fmt: a
 * jansson value for JSON/JSONC, a TOML value otherwise. who names the item
 * in messages and is what the resolver is told ("settings.codex", "hook
 * 'fmt'"). Same statuses as adp_render_server (never SKIP). */
enum adp_render_status adp_render_value(const toml_value *v, enum adp_format fmt, const char *who,
                                        struct adp_render_ctx *rc, struct adp_rendered *out,
                                        struct as_err *err);

/* True when name passes the descriptor's name charset. */
bool adp_name_ok(const struct adp_desc *d, const char *name);

/* The ${NAME} references in s (url, command, args, cwd, header and env
 * values, extra strings), first seen order, deduplicated. */
void adp_server_refs(const struct mf_server *s, strvec *out);

#endif
