/*
 * machine — the one loader of the machine floor, $AGENTSTACK_HOME/agentstack.toml.
 *
 * Every enforcement path (gateway, apply, guard, run) loads the machine
 * layer through pol_machine_load, so they agree on its state: absent is an
 * empty floor; anything broken is BLOCKED and refuses with the file, line,
 * column and fix (no last-known-good snapshot, never a fall back
 * to project-only policy). Root keys are checked here too, because a typo
 * such as [polcy.tools] would otherwise silently drop the whole floor.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "policy/pol_internal.h"

#define MACHINE_MAX_BYTES (8u << 20)

int pol_machine_path(strbuf *out, struct as_err *err)
{
    const char *ah = getenv("AGENTSTACK_HOME");
    if (ah && *ah) {
        sb_addf(out, "%s/agentstack.toml", ah);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home)
        return as_err_set(err, "neither AGENTSTACK_HOME nor HOME is set");
    sb_addf(out, "%s/.agentstack/agentstack.toml", home);
    return 0;
}

/* Copies src into a fixed buffer, cutting it (err.h's contract for long text). */
static void put(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memmove(dst, src, n);
    dst[n] = '\0';
}

static struct pol_layer *blocked(const char *path, enum pol_machine_state *state,
                                 struct as_err *err)
{
    *state = POL_BLOCKED;
    if (!err)
        return NULL;
    if (!err->path[0])
        put(err->path, sizeof err->path, path);
    strbuf sb = SB_INIT;
    sb_addf(&sb, "%s — the machine policy is unusable, refusing to continue", err->msg);
    put(err->msg, sizeof err->msg, sb.buf);
    sb_reset(&sb);
    if (err->hint[0])
        sb_addf(&sb, "%s, then check it with: agentstack policy status", err->hint);
    else if (err->line)
        sb_addf(&sb, "fix %s at line %u, column %u, then check it with: agentstack policy status",
                path, err->line, err->col ? err->col : 1);
    else
        sb_addf(&sb, "fix %s, then check it with: agentstack policy status", path);
    put(err->hint, sizeof err->hint, sb.buf);
    sb_release(&sb);
    return NULL;
}

struct pol_layer *pol_machine_parse(const char *path, const char *data, size_t len,
                                    struct as_err *err)
{
    static const char *const root_keys[] = {
        "version",  "servers",         "skills",    "instructions", "toolsets",
        "profiles", "default_toolset", "settings",  "hooks",        "targets",
        "policy",   "extensions",      "workflows", "packs",        "package_overrides",
        "meta",     "delivery",        "guard",     "experimental", "gateway",
        NULL};
    if (len > MACHINE_MAX_BYTES) {
        as_err_at(err, path, 0, 0, "exceeds the %u-byte limit", MACHINE_MAX_BYTES);
        return NULL;
    }
    toml_value *root = toml_parse(path, data, len, err);
    if (!root)
        return NULL;
    struct pol_layer *l = NULL;
    const toml_kv *ver = toml_get_kv(root, "version");
    if (!ver) {
        as_err_at(err, path, 1, 1, "missing `version = 1`");
        as_err_hint(err, "add `version = 1` as the first line of %s", path);
        goto out;
    }
    if (ver->val->type != TOML_INTEGER || ver->val->u.i != 1) {
        if (ver->val->type == TOML_INTEGER && ver->val->u.i > 1) {
            as_err_at(err, path, ver->val->line, ver->val->col,
                      "version %lld is newer than this agentstack build supports (up to 1)",
                      (long long)ver->val->u.i);
            as_err_hint(err, "upgrade agentstack");
        } else {
            as_err_at(err, path, ver->val->line, ver->val->col, "version must be the integer 1");
            as_err_hint(err, "write `version = 1`");
        }
        goto out;
    }
    for (size_t i = 0; i < toml_len(root); i++) {
        const toml_kv *kv = toml_entry(root, i);
        int ok = 0;
        for (size_t k = 0; root_keys[k]; k++)
            ok |= strcmp(kv->key, root_keys[k]) == 0;
        if (!ok) {
            pol_unknown_key(err, path, kv, "the machine manifest", root_keys);
            goto out;
        }
    }
    l = pol_layer_from_toml(toml_get(root, "policy"), path, POL_MACHINE, err);
out:
    toml_free(root);
    return l;
}

struct pol_layer *pol_machine_load(const char *path, enum pol_machine_state *state,
                                   struct as_err *err)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno == ENOENT) {
            *state = POL_UNCONFIGURED;
            return pol_layer_new(POL_MACHINE, path);
        }
        as_err_errno(err, "cannot read the machine policy %s", path);
        return blocked(path, state, err);
    }
    strbuf text = SB_INIT;
    if (fs_read_file(path, MACHINE_MAX_BYTES, 0, &text, err) < 0) {
        sb_release(&text);
        return blocked(path, state, err);
    }
    struct pol_layer *l = pol_machine_parse(path, text.buf, text.len, err);
    sb_release(&text);
    if (!l)
        return blocked(path, state, err);
    *state = POL_CURRENT;
    return l;
}
