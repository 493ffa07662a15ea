/*
 * consent — the consent digest (docs/formats.md, "Consent digest"): the one
 * value a human approves with `agentstack trust`.
 *
 * "sha256:" + hex(SHA-256("agentstack-trust-digest-v3" NUL || S(manifest) ||
 * S(overlay) || S(lock))), S(x) = 0x01 || u64le(len) || bytes when the file
 * exists, 0x00 when it is absent (so an empty file and no file differ).
 *
 * Guarantees:
 *  - It is computed from a manifest_snapshot (manifest.h): the three files
 *    read once each, raw, bounded, regular files only. Review, preview, grant
 *    and the state check all derive from that one snapshot, so a file
 *    swapped mid-review cannot be approved unseen.
 *  - Nothing is cached: every caller takes a fresh snapshot.
 */
#ifndef AS_BUNDLE_CONSENT_H
#define AS_BUNDLE_CONSENT_H

#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"
#include "bundle/digest.h"

#define CONSENT_PREFIX "agentstack-trust-digest-v3"
#define CONSENT_MAX_BYTES ((size_t)8 << 20)
/* "sha256:" + 64 hex + NUL */
#define CONSENT_DIGEST_LEN (7 + SHA256_HEX_LEN)

struct manifest_snapshot;

/* The digest over three blobs, as "sha256:<hex>". */
void consent_digest(const struct digest_blob *manifest, const struct digest_blob *overlay,
                    const struct digest_blob *lock, char out[CONSENT_DIGEST_LEN + 1]);

/* The digest of a snapshot taken with manifest_snapshot_read (manifest.h):
 * the same bytes the model is decoded from, read once. */
void consent_digest_snapshot(const struct manifest_snapshot *s, char out[CONSENT_DIGEST_LEN + 1]);

#endif
