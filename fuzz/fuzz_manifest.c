/*
 * libFuzzer target: a hostile repository's agentstack.toml (and overlay).
 * Loading and validating arbitrary bytes must never crash, leak or hang; a
 * load either returns a complete model or an error.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bundle/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Split at the first 0xFF byte: manifest before, overlay after. */
    const uint8_t *sep = memchr(data, 0xFF, size);
    struct manifest_source src = {0};
    src.kind = MANIFEST_PROJECT;
    src.path = "/fuzz/.agentstack/agentstack.toml";
    src.data = (const char *)data;
    src.len = sep ? (size_t)(sep - data) : size;
    if (sep) {
        src.overlay_path = "/fuzz/.agentstack/agentstack.local.toml";
        src.overlay_data = (const char *)sep + 1;
        src.overlay_len = size - src.len - 1;
    }
    src.manifest_dir = "/fuzz/.agentstack";
    src.project_root = "/fuzz";
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (m) {
        mf_diags diags = VEC_INIT;
        manifest_validate(m, NULL, &diags);
        mf_diags_free(&diags);
        manifest_free(m);
    }
    return 0;
}
