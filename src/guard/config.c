/* guard config — the machine file's [guard] table read in the guard's
 * failure order, and the judging context (workspace, write roots, the
 * compiled filesystem deny globs, this binary's identity); docs/guard.md. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "bundle/manifest.h"
#include "guard/guard.h"

/* ---- paths --------------------------------------------------------------- */

void guard_lexical(const char *base, const char *home, const char *path, strbuf *out)
{
    strbuf in = SB_INIT;
    if (home && (strcmp(path, "~") == 0 || strncmp(path, "~/", 2) == 0))
        sb_addf(&in, "%s%s", home, path + 1);
    else if (home && (strcmp(path, "$HOME") == 0 || strncmp(path, "$HOME/", 6) == 0))
        sb_addf(&in, "%s%s", home, path + 5);
    else if (home && (strcmp(path, "${HOME}") == 0 || strncmp(path, "${HOME}/", 8) == 0))
        sb_addf(&in, "%s%s", home, path + 7);
    else if (path[0] == '/')
        sb_adds(&in, path);
    else
        sb_addf(&in, "%s/%s", base && base[0] ? base : "/", path);
    /* resolve components on a stack of offsets into out */
    sb_reset(out);
    size_t *stack = xmalloc(sizeof(size_t) * (in.len / 2 + 2));
    size_t depth = 0;
    const char *p = in.buf;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 1 && p[0] == '.') {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (depth) {
                depth--;
                sb_setlen(out, stack[depth]);
            }
        } else {
            stack[depth++] = out->len;
            sb_addc(out, '/');
            sb_add(out, p, n);
        }
        p += n;
    }
    if (!out->len)
        sb_addc(out, '/');
    free(stack);
    sb_release(&in);
}

/* 1 when path is dir or below it (component-wise). */
static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *guard_find_workspace(const char *dir, const char *ash)
{
    strbuf cur = SB_INIT, probe = SB_INIT, real = SB_INIT, ash_real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (!ash || fs_realpath(ash, &ash_real, &e) < 0)
        sb_reset(&ash_real);
    sb_adds(&cur, dir);
    char *found = NULL;
    for (int guard = 0; guard < PATH_MAX && !found; guard++) {
        sb_reset(&probe);
        sb_addf(&probe, "%s%s.git", cur.buf, cur.len > 1 ? "/" : "");
        if (fs_exists(probe.buf)) {
            found = xstrdup(cur.buf);
            break;
        }
        sb_reset(&probe);
        sb_addf(&probe, "%s%s.agentstack", cur.buf, cur.len > 1 ? "/" : "");
        if (fs_is_dir(probe.buf)) {
            bool machine = ash && strcmp(probe.buf, ash) == 0;
            if (!machine && ash_real.len && fs_realpath(probe.buf, &real, &e) == 0)
                machine = strcmp(real.buf, ash_real.buf) == 0;
            if (!machine) {
                found = xstrdup(cur.buf);
                break;
            }
        }
        if (cur.len <= 1)
            break;
        char *slash = strrchr(cur.buf, '/');
        sb_setlen(&cur, slash == cur.buf ? 1 : (size_t)(slash - cur.buf));
    }
    if (!found)
        found = xstrdup(dir);
    sb_release(&cur);
    sb_release(&probe);
    sb_release(&real);
    sb_release(&ash_real);
    return found;
}

/* ---- the machine file ---------------------------------------------------- */

static void set_state(struct guard_config *c, enum guard_state s, const struct as_err *e,
                      const char *fallback_hint)
{
    char buf[4096];
    c->state = s;
    free(c->cause);
    free(c->hint);
    c->cause = xstrdup(e ? as_err_str(e, buf, sizeof buf) : "unknown");
    c->hint = xstrdup(e && e->hint[0] ? e->hint : fallback_hint);
}

static bool has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

void guard_config_load(struct guard_config *c, bool force_on)
{
    memset(c, 0, sizeof *c);
    c->state = GUARD_OFF;
    struct as_err err = AS_ERR_INIT;
    strbuf path = SB_INIT, data = SB_INIT;
    if (pol_machine_path(&path, &err) < 0) {
        set_state(c, GUARD_UNREADABLE, &err, "set HOME or AGENTSTACK_HOME");
        goto out;
    }
    c->path = xstrdup(path.buf);
    char hint[1200];
    snprintf(hint, sizeof hint, "fix %s (then check it: agentstack guard status)", c->path);
    struct stat st;
    if (stat(c->path, &st) != 0 && errno == ENOENT) {
        if (lstat(c->path, &st) == 0) { /* a dangling symlink is not "absent" */
            as_err_set(&err, "%s: dangling symlink", c->path);
            set_state(c, GUARD_UNREADABLE, &err, hint);
            goto out;
        }
        if (!force_on)
            goto out;
        c->state = GUARD_ON;
        c->machine = pol_layer_new(POL_MACHINE, c->path);
        goto out;
    }
    if (fs_read_file(c->path, MANIFEST_MAX_BYTES, 0, &data, &err) < 0) {
        set_state(c, GUARD_UNREADABLE, &err, hint);
        goto out;
    }
    toml_value *root = toml_parse(c->path, data.buf, data.len, &err);
    if (!root) {
        set_state(c, GUARD_UNREADABLE, &err, hint);
        goto out;
    }
    const toml_value *g = toml_get(root, "guard");
    const toml_value *en = g && g->type == TOML_TABLE ? toml_get(g, "enabled") : NULL;
    bool off = !g || (g->type == TOML_TABLE && (!en || (en->type == TOML_BOOL && !en->u.b)));
    toml_free(root);
    if (off && !force_on)
        goto out;
    struct manifest_source src = {
        .kind = MANIFEST_MACHINE, .path = c->path, .data = data.buf, .len = data.len};
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m) {
        set_state(c, GUARD_BLOCKED, &err, hint);
        goto out;
    }
    enum pol_machine_state pst;
    c->machine = pol_machine_load(c->path, &pst, &err);
    if (!c->machine) {
        manifest_free(m);
        set_state(c, GUARD_BLOCKED, &err, hint);
        goto out;
    }
    const char *home = getenv("HOME");
    strbuf lx = SB_INIT;
    for (size_t i = 0; i < m->guard.deny.n && c->state != GUARD_BLOCKED; i++) {
        const char *gl = m->guard.deny.v[i];
        strvec_push(&c->guard_deny, gl);
        if (pol_layer_add(c->machine, POL_FS_DENY, NULL, gl, 0, 0, &err) < 0) {
            as_err_prefix(&err, "[guard] deny");
            set_state(c, GUARD_BLOCKED, &err, hint);
        }
    }
    for (size_t i = 0; i < m->guard.allow_roots.n && c->state != GUARD_BLOCKED; i++) {
        const char *r = m->guard.allow_roots.v[i];
        bool rel = r[0] != '/' && r[0] != '~' && strncmp(r, "$HOME", 5) != 0 &&
                   strncmp(r, "${HOME}", 7) != 0;
        if (has_glob(r) || rel || !r[0]) {
            as_err_set(&err,
                       "%s: [guard] allow_roots entry \"%s\" must be an absolute directory "
                       "without glob characters",
                       c->path, r);
            set_state(c, GUARD_BLOCKED, &err, hint);
            break;
        }
        guard_lexical("/", home, r, &lx);
        strvec_push(&c->allow_roots, lx.buf);
    }
    for (size_t i = 0; i < m->guard.allow.n && c->state != GUARD_BLOCKED; i++) {
        const char *a = m->guard.allow.v[i];
        if (!a[0] || strspn(a, "* \t") == strlen(a)) {
            as_err_set(&err,
                       "%s: [guard] allow entry \"%s\" would let every command through unread; "
                       "name the command (\"python3 -c *\")",
                       c->path, a);
            set_state(c, GUARD_BLOCKED, &err, hint);
            break;
        }
        strvec_push(&c->allow, a);
    }
    const toml_value *pr = m->guard.project_roots;
    for (size_t i = 0; pr && i < toml_len(pr) && c->state != GUARD_BLOCKED; i++) {
        const toml_kv *kv = toml_entry(pr, i);
        struct guard_root_map map = {0};
        guard_lexical("/", home, kv->key, &lx);
        map.prefix = xstrdup(lx.buf);
        for (size_t j = 0; kv->val->type == TOML_ARRAY && j < toml_len(kv->val); j++) {
            const toml_value *v = toml_at(kv->val, j);
            if (v->type != TOML_STRING || has_glob(v->u.str.s) || v->u.str.s[0] == '\0')
                continue;
            guard_lexical(map.prefix, home, v->u.str.s, &lx);
            strvec_push(&map.roots, lx.buf);
        }
        vec_push(&c->project_roots, map);
    }
    sb_release(&lx);
    manifest_free(m);
    if (c->state != GUARD_BLOCKED)
        c->state = GUARD_ON;
out:
    sb_release(&path);
    sb_release(&data);
}

void guard_config_free(struct guard_config *c)
{
    free(c->path);
    free(c->cause);
    free(c->hint);
    if (c->machine)
        pol_layer_free(c->machine);
    strvec_clear(&c->guard_deny);
    strvec_clear(&c->allow_roots);
    strvec_clear(&c->allow);
    for (size_t i = 0; i < c->project_roots.n; i++) {
        free(c->project_roots.v[i].prefix);
        strvec_clear(&c->project_roots.v[i].roots);
    }
    vec_free(&c->project_roots);
    memset(c, 0, sizeof *c);
}

/* ---- the context --------------------------------------------------------- */

/* The project layer: only its [policy.filesystem] deny globs count (docs/guard.md);
 * trust is irrelevant and an unreadable file adds nothing. */
static struct pol_layer *project_layer(const char *workspace, char **manifest_out)
{
    static const char *const rel[] = {".agentstack/agentstack.toml", "agentstack.toml"};
    struct pol_layer *l = pol_layer_new(POL_PROJECT, NULL);
    for (size_t i = 0; i < 2; i++) {
        char *p = xasprintf("%s/%s", strcmp(workspace, "/") ? workspace : "", rel[i]);
        struct stat st;
        if (lstat(p, &st) != 0) {
            free(p);
            continue;
        }
        *manifest_out = p;
        strbuf data = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (fs_read_file(p, MANIFEST_MAX_BYTES, 0, &data, &err) == 0) {
            toml_value *root = toml_parse(p, data.buf, data.len, &err);
            const toml_value *deny =
                root ? toml_get_path(root, "policy", "filesystem", "deny", NULL) : NULL;
            for (size_t j = 0; deny && deny->type == TOML_ARRAY && j < toml_len(deny); j++) {
                const toml_value *v = toml_at(deny, j);
                if (v->type == TOML_STRING)
                    (void)pol_layer_add(l, POL_FS_DENY, NULL, v->u.str.s, v->line, v->col, &err);
            }
            toml_free(root);
        }
        sb_release(&data);
        break;
    }
    return l;
}

static void add_root(struct guard_ctx *x, const char *r)
{
    if (!r || r[0] != '/' || strvec_find(&x->roots, r) >= 0)
        return;
    strvec_push(&x->roots, r);
    strbuf real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (fs_canonicalize(r, &real, &e) == 0 && strvec_find(&x->roots_real, real.buf) < 0)
        strvec_push(&x->roots_real, real.buf);
    sb_release(&real);
}

static char *display_home(const char *path, const char *home)
{
    if (home && home[0] && under(path, home) && strcmp(home, "/") != 0)
        return xasprintf("~%s", path + strlen(home));
    return xstrdup(path);
}

int guard_ctx_build(struct guard_ctx *x, const struct guard_config *cfg, const char *cwd,
                    struct as_err *err)
{
    memset(x, 0, sizeof *x);
    strbuf lx = SB_INIT, real = SB_INIT;
    const char *h = getenv("HOME");
    if (h && h[0] == '/') {
        guard_lexical("/", NULL, h, &lx);
        x->home = xstrdup(lx.buf);
    }
    char pcwd[PATH_MAX];
    if (!getcwd(pcwd, sizeof pcwd))
        snprintf(pcwd, sizeof pcwd, "/");
    guard_lexical(pcwd, x->home, cwd && cwd[0] ? cwd : pcwd, &lx);
    x->cwd = xstrdup(lx.buf);
    const char *ah = getenv("AGENTSTACK_HOME");
    if (ah && ah[0])
        guard_lexical(pcwd, x->home, ah, &lx);
    else if (x->home)
        guard_lexical("/", NULL, x->home, &lx), sb_adds(&lx, "/.agentstack");
    else
        sb_reset(&lx), sb_adds(&lx, "/.agentstack");
    x->ash = xstrdup(lx.buf);
    if (fs_canonicalize(x->ash, &real, err) == 0)
        x->ash_real = xstrdup(real.buf);
    as_err_clear(err);
    x->cwd_in_home =
        x->ash_real && fs_canonicalize(x->cwd, &real, err) == 0 &&
        (!strcmp(real.buf, x->ash_real) || (!strncmp(real.buf, x->ash_real, strlen(x->ash_real)) &&
                                            real.buf[strlen(x->ash_real)] == '/'));
    as_err_clear(err);
    x->machine_path = xstrdup(cfg->path ? cfg->path : "~/.agentstack/agentstack.toml");
    x->machine_display = display_home(x->machine_path, x->home);
    x->workspace = guard_find_workspace(x->cwd, x->ash);
    if (fs_canonicalize(x->workspace, &real, err) == 0)
        x->workspace_real = xstrdup(real.buf);
    as_err_clear(err);
    for (size_t i = 0; i < cfg->guard_deny.n; i++)
        strvec_push(&x->guard_deny, cfg->guard_deny.v[i]);
    for (size_t i = 0; i < cfg->allow.n; i++)
        strvec_push(&x->allow, cfg->allow.v[i]);
    struct stat st;
    if (stat(x->machine_path, &st) == 0) {
        x->machine_id = true;
        x->machine_dev = (unsigned long long)st.st_dev;
        x->machine_ino = (unsigned long long)st.st_ino;
        if (fs_canonicalize(x->machine_path, &real, err) == 0)
            x->machine_real = xstrdup(real.buf);
        as_err_clear(err);
    }
    /* this binary, to know a renamed or linked copy of it */
    if (stat("/proc/self/exe", &st) == 0) {
        x->self_dev = (unsigned long long)st.st_dev;
        x->self_ino = (unsigned long long)st.st_ino;
        x->self_size = (size_t)st.st_size;
    }

    add_root(x, x->workspace);
    const char *tmpdir = getenv("TMPDIR");
    if (tmpdir && tmpdir[0] == '/') {
        guard_lexical("/", NULL, tmpdir, &lx);
        add_root(x, lx.buf);
    }
    add_root(x, "/tmp");
    for (size_t i = 0; i < cfg->allow_roots.n; i++)
        add_root(x, cfg->allow_roots.v[i]);
    for (size_t i = 0; i < cfg->project_roots.n; i++)
        if (under(x->workspace, cfg->project_roots.v[i].prefix))
            for (size_t j = 0; j < cfg->project_roots.v[i].roots.n; j++)
                add_root(x, cfg->project_roots.v[i].roots.v[j]);

    struct pol_layer *proj = project_layer(x->workspace, &x->project_manifest);
    x->rs = pol_compile(cfg->machine, proj, x->home, err);
    pol_layer_free(proj);
    sb_release(&lx);
    sb_release(&real);
    if (!x->rs) {
        as_err_prefix(err, "cannot compile the filesystem deny globs");
        return -1;
    }
    return 0;
}

void guard_ctx_free(struct guard_ctx *x)
{
    free(x->home);
    free(x->ash);
    free(x->ash_real);
    free(x->cwd);
    free(x->workspace);
    free(x->workspace_real);
    free(x->project_manifest);
    free(x->machine_path);
    free(x->machine_display);
    free(x->machine_real);
    strvec_clear(&x->allow);
    strvec_clear(&x->roots);
    strvec_clear(&x->roots_real);
    strvec_clear(&x->guard_deny);
    if (x->rs)
        pol_ruleset_free(x->rs);
    memset(x, 0, sizeof *x);
}
