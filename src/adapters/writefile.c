/* writefile — the shared writer, containment check and bridge test used by
 * apply, lanes, connect and undo (see internal.h for the guarantees). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "adapters/merge.h"
#include "base/fs.h"
#include "base/toml.h"
#include "base/xalloc.h"
#include "bundle/home.h"

void adp_i_display_path(const char *p, strbuf *out)
{
    const char *home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    if (hl > 1 && strncmp(p, home, hl) == 0 && p[hl] == '/')
        sb_addf(out, "~%s", p + hl);
    else
        sb_adds(out, p);
}

int adp_i_take_lock(struct as_lock *lk, struct as_err *err)
{
    strbuf ah = SB_INIT;
    int rc = home_ensure(HOME_ROOT_DIR, &ah, err);
    if (rc == 0)
        rc = lock_acquire(lk, ah.buf, ADP_LOCK_WAIT_MS, err);
    if (rc != 0)
        as_err_prefix(err, "another agentstack write is in progress");
    sb_release(&ah);
    return rc;
}

/* ---- containment ---------------------------------------------------------- */

int adp_i_contained(const char *path, const char *root, struct as_err *err)
{
    strbuf out = SB_INIT;
    int rc = fs_contain(root, NULL, path, FS_CONTAIN_ABSOLUTE, &out, err);
    sb_release(&out);
    if (rc < 0 && !err->hint[0])
        as_err_hint(err, "replace the symlink with a file inside the project, or apply with "
                         "--scope global");
    return rc < 0 ? -1 : 0;
}

/* ---- writing -------------------------------------------------------------- */

void adp_i_collect_missing_dirs(const char *file, strvec *out)
{
    strbuf dir = SB_INIT;
    sb_adds(&dir, file);
    strvec rev = STRVEC_INIT;
    for (;;) {
        char *slash = strrchr(dir.buf, '/');
        if (!slash || slash == dir.buf)
            break;
        sb_setlen(&dir, (size_t)(slash - dir.buf));
        struct stat st;
        if (lstat(dir.buf, &st) == 0)
            break;
        strvec_push(&rev, dir.buf);
    }
    for (size_t i = rev.n; i-- > 0;)
        strvec_push(out, rev.v[i]);
    strvec_clear(&rev);
    sb_release(&dir);
}

void adp_i_remove_created(const strvec *dirs)
{
    for (size_t i = dirs->n; i-- > 0;)
        rmdir(dirs->v[i]);
}

/* The owner's write bit decides for a directory too, even for root: a 0555
 * ~/.codex is someone saying "hands off". */
static int check_dir_writable(const char *path, struct as_err *err)
{
    strbuf anc = SB_INIT;
    sb_adds(&anc, path);
    struct stat dst;
    int rc = 0;
    for (;;) {
        char *slash = strrchr(anc.buf, '/');
        if (!slash || slash == anc.buf)
            break;
        sb_setlen(&anc, (size_t)(slash - anc.buf));
        if (stat(anc.buf, &dst) == 0)
            break;
    }
    if (anc.len && stat(anc.buf, &dst) == 0 && S_ISDIR(dst.st_mode) && !(dst.st_mode & S_IWUSR)) {
        rc = as_err_set(err, "%s is read-only — not written", anc.buf);
        as_err_hint(err, "make it writable (chmod u+w %s) or leave this CLI out with --target",
                    anc.buf);
    }
    sb_release(&anc);
    return rc;
}

int adp_i_write_file(const struct adp_i_write *w, struct as_err *err)
{
    strbuf backup = SB_INIT;
    strvec made = STRVEC_INIT;
    int rc = -1;
    if (adp_backup_path(w->path, &backup, err) != 0 || check_dir_writable(w->path, err) != 0)
        goto out;
    adp_i_collect_missing_dirs(w->path, &made);
    if (made.n) {
        strbuf parent = SB_INIT;
        sb_adds(&parent, w->path);
        sb_setlen(&parent, (size_t)(strrchr(parent.buf, '/') - parent.buf));
        int mrc = fs_mkdirs(parent.buf, 0755, err);
        sb_release(&parent);
        if (mrc != 0) {
            adp_i_remove_created(&made);
            goto out;
        }
    }
    struct fs_write_opts wo = {w->new_mode, FS_SYMLINK_FOLLOW, w->contain_root,
                               w->existed ? backup.buf : NULL};
    if (fs_write_atomic(w->path, w->data, w->len, &wo, err) != 0) {
        adp_i_remove_created(&made);
        goto out;
    }
    if (w->created_dirs)
        for (size_t i = 0; i < made.n; i++)
            strvec_push(w->created_dirs, made.v[i]);
    rc = 0;
out:
    strvec_clear(&made);
    sb_release(&backup);
    return rc;
}

unsigned adp_i_file_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return (unsigned)(st.st_mode & 0777);
}

/* ---- the bridge ----------------------------------------------------------- */

static bool stem_is_agentstack(const char *cmd)
{
    const char *b = strrchr(cmd, '/');
    b = b ? b + 1 : cmd;
    return strcmp(b, "agentstack") == 0;
}

bool adp_i_json_is_bridge(const char *name, const json_t *body, const struct adp_desc *d)
{
    if (strcmp(name, ADP_BRIDGE_NAME) == 0)
        return true;
    json_t *c = json_object_get(body, d->mcp.f_command ? d->mcp.f_command : "command");
    if (json_is_array(c)) {
        const char *c0 = json_string_value(json_array_get(c, 0));
        const char *c1 = json_string_value(json_array_get(c, 1));
        return c0 && c1 && stem_is_agentstack(c0) && strcmp(c1, "mcp") == 0;
    }
    const char *cmd = json_string_value(c);
    const char *a1 = json_string_value(
        json_array_get(json_object_get(body, d->mcp.f_args ? d->mcp.f_args : "args"), 0));
    return cmd && a1 && stem_is_agentstack(cmd) && strcmp(a1, "mcp") == 0;
}

bool adp_i_toml_is_bridge(const char *name, const toml_value *body, const struct adp_desc *d)
{
    if (strcmp(name, ADP_BRIDGE_NAME) == 0)
        return true;
    const toml_value *cmd = toml_get(body, d->mcp.f_command ? d->mcp.f_command : "command");
    const toml_value *args = toml_get(body, d->mcp.f_args ? d->mcp.f_args : "args");
    const toml_value *a0 = args ? toml_at(args, 0) : NULL;
    return cmd && cmd->type == TOML_STRING && stem_is_agentstack(cmd->u.str.s) && a0 &&
           a0->type == TOML_STRING && strcmp(a0->u.str.s, "mcp") == 0;
}

/* True when text may hold the bridge: its name or command spelled out, or
 * an escape sequence (JSON "\u…", TOML "\u…"/"\U…") that could spell it.
 * A file with neither cannot hold it. */
static bool may_hold_bridge(const char *text, size_t len)
{
    if (memmem(text, len, ADP_BRIDGE_NAME, strlen(ADP_BRIDGE_NAME)))
        return true;
    /* Every backslash is looked at (not escape pairs): a false hit only
     * costs a parse, a missed one would hide the bridge. */
    for (const char *p = text, *end = text + len;
         (p = memchr(p, '\\', (size_t)(end - p))) && p + 1 < end; p++)
        if (p[1] == 'u' || p[1] == 'U')
            return true;
    return false;
}

/* Streams the file through a stack buffer with may_hold_bridge, so the
 * common case (a large config that never names agentstack) costs one read
 * and no parse — the full parse of every config was most of a no-op apply.
 * false when it cannot hold the bridge or cannot be read (as before: a file
 * that cannot be read registers nothing). */
static bool file_may_hold_bridge(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > ADP_INPUT_MAX) {
        close(fd);
        return false;
    }
    enum { CHUNK = 64 * 1024, KEEP = sizeof(ADP_BRIDGE_NAME) - 2 };
    char buf[CHUNK + KEEP];
    size_t keep = 0, total = 0;
    bool hit = false;
    for (;;) {
        ssize_t r = read(fd, buf + keep, CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t n = keep + (size_t)r;
        total += (size_t)r;
        if (may_hold_bridge(buf, n)) {
            hit = total <= ADP_INPUT_MAX;
            break;
        }
        /* a match may straddle two chunks: carry the tail over */
        keep = n < KEEP ? n : KEEP;
        memmove(buf, buf + n - keep, keep);
    }
    explicit_bzero(buf, sizeof buf); /* config files hold secret values */
    close(fd);
    return hit;
}

bool adp_i_bridge_registered(const struct adp_desc *d)
{
    if (!d->has_mcp || !d->config_path)
        return false;
    strbuf path = SB_INIT, text = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool found = false;
    if (adp_expand_path(d->config_path, NULL, &path, &e) == 0 && file_may_hold_bridge(path.buf) &&
        fs_read_file(path.buf, ADP_INPUT_MAX, 0, &text, &e) == 0) {
        if (d->config_format == ADP_FMT_TOML) {
            toml_value *root = toml_parse(path.buf, text.buf, text.len, &e);
            const toml_value *sec = toml_get(root, d->mcp.location);
            for (size_t i = 0; sec && sec->type == TOML_TABLE && i < sec->u.tab.n; i++)
                if (adp_i_toml_is_bridge(sec->u.tab.kv[i].key, sec->u.tab.kv[i].val, d))
                    found = true;
            toml_free(root);
        } else {
            json_t *sec = NULL;
            if (adp_json_read(path.buf, text.buf, text.len, d->config_format == ADP_FMT_JSONC,
                              d->mcp.location, &sec, &e) == 0 &&
                json_is_object(sec)) {
                const char *k;
                json_t *v;
                json_object_foreach(sec, k, v) if (adp_i_json_is_bridge(k, v, d)) found = true;
            }
            json_decref(sec);
        }
    }
    sb_release(&path);
    sb_release_secure(&text);
    return found;
}
