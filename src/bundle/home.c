/* $AGENTSTACK_HOME layout (docs/manifest.md) and the raw machine manifest. */
#include "bundle/home.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/manifest.h"

static const struct {
    const char *name;
    bool dir;
} entries[HOME_ENTRY_COUNT] = {
    [HOME_ROOT_DIR] = {"", true},
    [HOME_AUDIT_DIR] = {"audit", true},
    [HOME_STORE_DIR] = {"store", true},
    [HOME_STORE_CONTENT_DIR] = {"store/content", true},
    [HOME_STORE_GIT_DIR] = {"store/git", true},
    [HOME_STORE_CO_DIR] = {"store/co", true},
    [HOME_STAGE_DIR] = {"stage", true},
    [HOME_TRY_DIR] = {"try", true},
    [HOME_LOGS_DIR] = {"logs", true},
    [HOME_RUNS_DIR] = {"runs", true},
    [HOME_GATEWAY_DIR] = {"gateway", true},
    [HOME_KEYS_DIR] = {"keys", true},
    [HOME_BACKUPS_DIR] = {"backups", true},
    [HOME_LIB_DIR] = {"lib", true},
    [HOME_STATE_DIR] = {"state", true},
    [HOME_HISTORY_DIR] = {"history", true},
    [HOME_ADAPTERS_DIR] = {"adapters", true},
    [HOME_LEASES_DIR] = {"leases", true},
    [HOME_GUARD_DIR] = {"guard", true},
    [HOME_SHIMS_DIR] = {"shims", true},
    [HOME_GRANT_DIR] = {"grant", true},
    [HOME_PROXY_DIR] = {"proxy", true},
    [HOME_SANDBOX_HOME_DIR] = {"sandbox-home", true},
    [HOME_TRUST_LOCK_DIR] = {"trust.lock.d", true},
    [HOME_MACHINE_MANIFEST] = {"agentstack.toml", false},
    [HOME_TRUST_JSON] = {"trust.json", false},
    [HOME_LOCK_FILE] = {".lock", false},
    [HOME_AUDIT_KEY] = {"audit/key", false},
    [HOME_TRUST_LOG] = {"audit/trust.jsonl", false},
    [HOME_CALLS_LOG] = {"audit/calls.jsonl", false},
    [HOME_LOADS_LOG] = {"audit/loads.jsonl", false},
    [HOME_SIGN_KEY] = {"keys/ed25519.key", false},
    [HOME_SIGN_PUB] = {"keys/ed25519.pub", false},
    [HOME_SOURCES_TOML] = {"sources.toml", false},
    [HOME_STATE_JSON] = {"state.json", false},
    [HOME_SESSIONS_JSON] = {"sessions.json", false},
    [HOME_RECOGNITION_JSON] = {"recognition.json", false},
    [HOME_SECRETS_ENV] = {"secrets.env", false},
    [HOME_PUBLISHERS] = {"publishers", false},
};

const char *home_entry_name(enum home_entry e)
{
    return (unsigned)e < HOME_ENTRY_COUNT ? entries[e].name : "";
}

bool home_entry_is_dir(enum home_entry e)
{
    return (unsigned)e < HOME_ENTRY_COUNT && entries[e].dir;
}

static void strip_slashes(strbuf *sb)
{
    while (sb->len > 1 && sb->buf[sb->len - 1] == '/')
        sb_setlen(sb, sb->len - 1);
}

int home_dir(strbuf *out, struct as_err *err)
{
    sb_reset(out);
    const char *ah = getenv("AGENTSTACK_HOME");
    if (ah && *ah) {
        if (ah[0] != '/') {
            char *cwd = getcwd(NULL, 0);
            if (!cwd)
                return as_err_errno(err, "AGENTSTACK_HOME is relative and the cwd is unknown");
            sb_addf(out, "%s/%s", cwd, ah);
            free(cwd);
        } else {
            sb_adds(out, ah);
        }
        strip_slashes(out);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
    }
    if (!home || home[0] != '/')
        return as_err_set(err, "cannot locate the machine home: set HOME or AGENTSTACK_HOME");
    sb_adds(out, home);
    strip_slashes(out);
    if (out->len == 1)
        sb_setlen(out, 0);
    sb_adds(out, "/.agentstack");
    return 0;
}

int home_path(enum home_entry e, strbuf *out, struct as_err *err)
{
    if ((unsigned)e >= HOME_ENTRY_COUNT)
        return as_err_set(err, "unknown machine-home entry %d", (int)e);
    if (home_dir(out, err) < 0)
        return -1;
    if (entries[e].name[0])
        sb_addf(out, "/%s", entries[e].name);
    return 0;
}

/* Creates dir and its missing parents 0700, leaving existing ones alone. */
static int mkdirs_private(const char *dir, struct as_err *err)
{
    return fs_mkdirs(dir, HOME_DIR_MODE, err);
}

int home_ensure(enum home_entry e, strbuf *out, struct as_err *err)
{
    if (home_path(e, out, err) < 0)
        return -1;
    if (entries[e].dir)
        return mkdirs_private(out->buf, err);
    char *parent = xstrdup(out->buf);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    int rc = mkdirs_private(parent, err);
    free(parent);
    return rc;
}

int home_ensure_sub(enum home_entry dir, const char *sub, strbuf *out, struct as_err *err)
{
    if (!home_entry_is_dir(dir))
        return as_err_set(err, "%s is not a machine-home directory", home_entry_name(dir));
    if (!sub || !*sub || sub[0] == '/')
        return as_err_set(err, "invalid machine-home sub-path '%s'", sub ? sub : "");
    for (const char *p = sub; *p;) {
        size_t n = strcspn(p, "/");
        if ((n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
            return as_err_set(err, "invalid machine-home sub-path '%s': traversal", sub);
        p += n;
        while (*p == '/')
            p++;
    }
    if (home_path(dir, out, err) < 0)
        return -1;
    sb_addf(out, "/%s", sub);
    return mkdirs_private(out->buf, err);
}

int home_write_file(enum home_entry e, const void *data, size_t len, struct as_err *err)
{
    if ((unsigned)e >= HOME_ENTRY_COUNT || entries[e].dir)
        return as_err_set(err, "%s is not a machine-home file", home_entry_name(e));
    strbuf path = SB_INIT;
    int rc = home_ensure(e, &path, err);
    if (rc == 0) {
        struct fs_write_opts o = {HOME_FILE_MODE, FS_SYMLINK_REFUSE, NULL, NULL};
        rc = fs_write_atomic(path.buf, data, len, &o, err);
    }
    sb_release(&path);
    return rc;
}

toml_value *home_machine_toml(int *absent, struct as_err *err)
{
    *absent = 0;
    strbuf path = SB_INIT, data = SB_INIT;
    toml_value *root = NULL;
    if (home_path(HOME_MACHINE_MANIFEST, &path, err) < 0)
        goto out;
    struct stat st;
    if (lstat(path.buf, &st) < 0 && errno == ENOENT) {
        *absent = 1;
        goto out;
    }
    /* A dotfile manager may symlink the machine file: follow it (user scope). */
    if (fs_read_file(path.buf, MANIFEST_MAX_BYTES, 0, &data, err) < 0) {
        as_err_hint(err,
                    "fix or move aside %s — every path refuses while the machine "
                    "manifest is unreadable",
                    path.buf);
        goto out;
    }
    root = toml_parse(path.buf, data.buf, data.len, err);
    if (!root) {
        as_err_prefix(err, "TOML syntax");
        as_err_hint(err,
                    "fix the TOML syntax in %s — every path refuses while the machine "
                    "manifest is broken",
                    path.buf);
    }
out:
    sb_release(&path);
    sb_release(&data);
    return root;
}
