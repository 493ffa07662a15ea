/*
 * manifest_int — private glue between the manifest loader, decoder and
 * validator (not for use outside src/bundle/manifest*.c).
 */
#ifndef AS_BUNDLE_MANIFEST_INT_H
#define AS_BUNDLE_MANIFEST_INT_H

#include "bundle/manifest.h"

#define MF_RECHECK "\n  then re-check:   agentstack doctor"

/* Overlay origin: the roots of subtrees that came from the overlay, sorted. */
struct mf_origin {
    const toml_value **v;
    size_t n, cap;
    const char *overlay_file;
};
/* file of v: the overlay if v roots an overlay subtree, else inherited. */
const char *mf_origin_file(const struct mf_origin *o, const toml_value *v, const char *inherited);

/* Decodes root (taking it) into m (already holding paths). -1 + err. */
int mf_decode(struct manifest *m, toml_value *root, const struct mf_origin *o, struct as_err *err);

/* Closest candidate within edit distance 2, or NULL. */
const char *mf_did_you_mean(const char *word, const char *const *cands);

void mf_diag_add(mf_diags *d, enum mf_severity sev, struct mf_pos pos, const char *fix,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "servers.x" style table name with keys quoted as TOML needs. */
char *mf_table_name(const char *parent, const char *key);

#endif
