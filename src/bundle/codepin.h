/*
 * codepin — which code of a project-local stdio server the lock pins,
 * decided in one place for `lock`, the trust card and the gateway
 * (docs/trust.md "What trust covers").
 *
 * Why: a server runs more than the file its command names — the modules it
 * imports, the directory a `python3 ./srv` argument runs, a
 * `--require=./hook.cjs`. Pinning only the named file let all of that
 * change after trust with no re-gate. Pinning the whole project would
 * re-gate on every edit an agent makes. So the lock pins the server's own
 * code, and says what it does not pin.
 *
 * The rules, for the command and each argument (relative to a contained
 * cwd; `--flag=path` arguments contribute their path; `-r path` is the
 * plain argument after it):
 *  - a file in a subdirectory: that directory, as a tree;
 *  - a directory (not the project root): that directory, as a tree;
 *  - a file at the project root: that file, and the files beside it of the
 *    same language (`.py` beside `.py`; `.js .mjs .cjs .ts .mts .cts`
 *    together; …), at most CODEPIN_SIBLINGS_MAX of them;
 *  - a tree covering another pinned path replaces it.
 * Trees skip .git, .hg, .svn and __pycache__ and are bounded (bundle/digest.h
 * DIGEST_CODE_MAX_*). What a server runs from outside the project — the
 * interpreter its command names, that interpreter's libraries and
 * site-packages, an absolute path or cwd elsewhere — is not pinned, and is
 * named as such.
 *
 * Guarantees: a path reached through "..", a symlink or a special file is
 * an error ref (the lock refuses to pin it, trust blocks on it), never a
 * silent skip; the same server gives the same refs on every call.
 */
#ifndef AS_BUNDLE_CODEPIN_H
#define AS_BUNDLE_CODEPIN_H

#include "base/vec.h"
#include "bundle/manifest.h"

#define CODEPIN_SIBLINGS_MAX 64

enum codepin_kind { CODEPIN_FILE, CODEPIN_TREE };

struct codepin_ref {
    char *rel; /* project-relative, '/'-joined, no "./" (a tree: the directory) */
    enum codepin_kind kind;
    const char *why; /* "named by the server", "its directory", "beside it, same language" */
    char *error;     /* set: this path cannot be pinned (the reason, naming the server) */
};
typedef VEC(struct codepin_ref) codepin_refs;

/* The code of server s (project at root) the lock pins. not_pinned (may be
 * NULL) gets one line per thing it runs that is not pinned. Nothing for
 * HTTP servers. */
void codepin_collect(const char *root, const struct mf_server *s, codepin_refs *out,
                     strvec *not_pinned);
void codepin_free(codepin_refs *r);
/* "file" | "tree": the [[executable]] kind of a ref. */
const char *codepin_kind_name(enum codepin_kind k);

#endif
