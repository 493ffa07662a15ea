/* consent — see consent.h. */
#include "bundle/consent.h"

#include <string.h>

#include "bundle/manifest.h"

void consent_digest(const struct digest_blob *manifest, const struct digest_blob *overlay,
                    const struct digest_blob *lock, char out[CONSENT_DIGEST_LEN + 1])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, CONSENT_PREFIX, sizeof CONSENT_PREFIX); /* with its NUL */
    digest_frame(&c, manifest);
    digest_frame(&c, overlay);
    digest_frame(&c, lock);
    uint8_t d[SHA256_LEN];
    sha256_final(&c, d);
    memcpy(out, "sha256:", 7);
    hex_encode(d, SHA256_LEN, out + 7);
}

void consent_digest_snapshot(const struct manifest_snapshot *s, char out[CONSENT_DIGEST_LEN + 1])
{
    struct digest_blob m = {s->has_manifest, s->manifest.buf, s->manifest.len};
    struct digest_blob o = {s->has_overlay, s->overlay.buf, s->overlay.len};
    struct digest_blob l = {s->has_lock, s->lock.buf, s->lock.len};
    consent_digest(&m, &o, &l, out);
}
