/*
 * presets — the four machine policy presets, embedded so `agentstack policy
 * preset` works without the source tree. The texts are byte-for-byte the
 * files in examples/policies/ (a unit test compares them), so the shipped
 * examples and the binary can never disagree.
 */
#include <string.h>

#include "base/toml.h"
#include "policy/policy.h"

static const char preset_developer[] =
    "# agentstack machine policy preset: developer\n"
    "# The posture for daily work: no destructive, admin or secret-reading tools,\n"
    "# no cloud-metadata or .local egress, no cloud root keys, and sandboxed runs\n"
    "# may write the workspace. Copy to ~/.agentstack/agentstack.toml, or run\n"
    "#   agentstack policy preset developer --write\n"
    "version = 1\n"
    "\n"
    "[policy.tools]\n"
    "\"*\" = [\n"
    "  \"!delete_*\", \"!destroy_*\", \"!*_admin\", \"!drop_*\",\n"
    "  \"!admin_*\", \"!get_secret*\", \"!read_secret*\", \"!list_secrets\",\n"
    "]\n"
    "\n"
    "[policy.egress]\n"
    "\"*\" = [\"!169.254.169.254\", \"!metadata.google.internal\", \"!*.local\"]\n"
    "\n"
    "[policy.secrets]\n"
    "\"*\" = [\"!AWS_SECRET_*\", \"!*_PRIVATE_KEY\", \"!*_ROOT_*\"]\n"
    "\n"
    "[policy.filesystem]\n"
    "read = [\"./**\"]\n"
    "write = [\"./**\"]\n";

static const char preset_compatible[] =
    "# agentstack machine policy preset: compatible\n"
    "# A migration step: blocks only destructive and admin tools, everything else\n"
    "# stays as it was. Copy to ~/.agentstack/agentstack.toml, or run\n"
    "#   agentstack policy preset compatible --write\n"
    "version = 1\n"
    "\n"
    "[policy.tools]\n"
    "\"*\" = [\"!delete_*\", \"!destroy_*\", \"!*_admin\", \"!drop_*\"]\n";

static const char preset_locked_down[] =
    "# agentstack machine policy preset: locked-down\n"
    "# For confinement: read-only tools, egress to the Anthropic API only, no\n"
    "# secrets, sandboxed runs see the workspace read-only, and every stdio MCP\n"
    "# server runs in a jail of its own. Copy to\n"
    "# ~/.agentstack/agentstack.toml, or run\n"
    "#   agentstack policy preset locked-down --write\n"
    "version = 1\n"
    "\n"
    "[policy.tools]\n"
    "\"*\" = [\"get_*\", \"list_*\", \"read_*\", \"search_*\", \"!*_admin\"]\n"
    "\n"
    "[policy.egress]\n"
    "\"*\" = [\"api.anthropic.com:443\"]\n"
    "\n"
    "[policy.secrets]\n"
    "\"*\" = [\"!*\"]\n"
    "\n"
    "[policy.filesystem]\n"
    "read = [\"./**\"]\n"
    "\n"
    "[policy.isolation]\n"
    "servers = \"confined\"\n";

static const char preset_ci[] =
    "# agentstack machine policy preset: ci\n"
    "# Runner-only: read, build and test tools, egress to the model API and the\n"
    "# package registries over TLS, no secrets, read-only workspace. Copy to\n"
    "# ~/.agentstack/agentstack.toml, or run\n"
    "#   agentstack policy preset ci --write\n"
    "version = 1\n"
    "\n"
    "[policy.tools]\n"
    "\"*\" = [\n"
    "  \"get_*\", \"list_*\", \"read_*\", \"search_*\", \"build_*\", \"test_*\", \"run_tests*\",\n"
    "  \"!delete_*\", \"!destroy_*\", \"!*_admin\",\n"
    "]\n"
    "\n"
    "[policy.egress]\n"
    "\"*\" = [\n"
    "  \"api.anthropic.com:443\",\n"
    "  \"registry.npmjs.org:443\",\n"
    "  \"pypi.org:443\",\n"
    "  \"files.pythonhosted.org:443\",\n"
    "  \"crates.io:443\",\n"
    "  \"static.crates.io:443\",\n"
    "  \"github.com:443\",\n"
    "  \"codeload.github.com:443\",\n"
    "]\n"
    "\n"
    "[policy.secrets]\n"
    "\"*\" = [\"!*\"]\n"
    "\n"
    "[policy.filesystem]\n"
    "read = [\"./**\"]\n";

const struct pol_preset pol_presets[] = {
    {"developer",
     "daily work: no destructive/admin/secret-reading tools, no metadata egress, "
     "workspace writable in the sandbox",
     preset_developer},
    {"compatible", "migration step: blocks only destructive and admin tools", preset_compatible},
    {"locked-down",
     "confinement: read-only tools, Anthropic API egress only, no secrets, confined MCP servers",
     preset_locked_down},
    {"ci", "runners: read/build/test tools, model API + package registries over TLS, no secrets",
     preset_ci},
};
const size_t pol_npresets = sizeof pol_presets / sizeof pol_presets[0];

const struct pol_preset *pol_preset_find(const char *name)
{
    for (size_t i = 0; i < pol_npresets; i++)
        if (strcmp(pol_presets[i].name, name) == 0)
            return &pol_presets[i];
    return NULL;
}

int pol_preset_apply(const struct pol_preset *p, const char *path, const char *old, size_t len,
                     strbuf *out, struct as_err *err)
{
    static const char *const dims[] = {"tools", "egress", "secrets", "filesystem", "isolation"};
    if (!old) {
        sb_adds(out, p->text);
        return 0;
    }
    toml_value *pre = toml_parse(p->name, p->text, strlen(p->text), err);
    if (!pre)
        return -1;
    toml_edit *ed = toml_edit_open(path, old, len, err);
    toml_value *cur = NULL;
    int rc = -1;
    if (!ed) {
        as_err_hint(err, "fix %s first (or move it aside), then rerun the preset", path);
        goto out;
    }
    /* (the editor parsed old, so this parse succeeds) */
    cur = toml_parse(path, old, len, err);
    if (!cur)
        goto out;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        const char *kp[] = {"policy", dims[i]};
        const toml_value *t = toml_get_path(pre, "policy", dims[i], NULL);
        const toml_value *have = toml_get_path(cur, "policy", dims[i], NULL);
        /* a table that already holds the preset's rules is left byte for byte:
         * rewriting it would only reflow it, and applying a preset twice must
         * change nothing */
        if (t ? (have && toml_equal(have, t)) : !have)
            continue;
        if (t ? toml_edit_set_table(ed, kp, 2, t, err) : toml_edit_remove(ed, kp, 2, err))
            goto out;
    }
    size_t n;
    const char *text = toml_edit_text(ed, &n);
    sb_add(out, text, n);
    rc = 0;
out:
    toml_edit_free(ed);
    toml_free(cur);
    toml_free(pre);
    return rc;
}
