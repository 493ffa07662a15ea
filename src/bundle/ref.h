/*
 * ref — the ${NAME} placeholder grammar (docs/manifest.md).
 *
 * Why: secrets are referenced, never written; the reviewer, the renderer
 * and the gateway must agree byte for byte on what counts as a reference.
 *
 * Grammar: "${" NAME "}", NAME = [A-Za-z_][A-Za-z0-9_]*. A byte scan left to
 * right; a "${…}" whose interior is not a NAME is no reference, but its
 * interior is rescanned ("${A:-${B}}" yields B); an unterminated "${" yields
 * nothing. Any bytes (NUL included) are safe input; nothing recurses.
 */
#ifndef AS_BUNDLE_REF_H
#define AS_BUNDLE_REF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/manifest.h"

/* 1 if name is a valid reference name. */
bool ref_name_valid(const char *name);
/* Appends each reference name in s[0..len) in order (duplicates kept). */
void ref_scan(const char *s, size_t len, strvec *out);
/* Appends names from s not yet in out (first-seen order). */
void ref_collect(const char *s, strvec *out);
/* 1 if s contains at least one valid reference. */
bool ref_has_ref(const char *s);

/* A server's references: url, command, args, cwd, header and env values,
 * every string anywhere in extra — first-seen, deduplicated. Appends to out. */
void ref_server_refs(const struct mf_server *s, strvec *out);
/* The manifest's references: every server's, plus hook command/args;
 * sorted byte-wise, deduplicated. out is cleared first. */
void ref_manifest_refs(const struct manifest *m, strvec *out);

/* Resolves every valid reference in s through lookup, appending the result
 * to out; non-reference text is copied verbatim. lookup returns 0 and
 * appends the value, or -1 with err set (the name stays out of any value).
 * Callers holding secrets release out with sb_release_secure. */
typedef int (*ref_lookup_fn)(void *ctx, const char *name, strbuf *out, struct as_err *err);
int ref_expand(const char *s, ref_lookup_fn lookup, void *ctx, strbuf *out, struct as_err *err);

/* 1 if an http(s) URL has a known host: no "${" in its authority. */
bool ref_url_host_known(const char *url);

#endif
