/* codepin — what of a server's own code the lock pins (see codepin.h). */
#include "bundle/codepin.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/proc.h"
#include "base/strbuf.h"
#include "base/xalloc.h"

const char *codepin_kind_name(enum codepin_kind k)
{
    return k == CODEPIN_TREE ? "tree" : "file";
}

void codepin_free(codepin_refs *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].rel);
        free(r->v[i].error);
    }
    vec_free(r);
}

static void add_ref(codepin_refs *out, const char *rel, enum codepin_kind kind, const char *why,
                    char *error)
{
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i].kind == kind && strcmp(out->v[i].rel, rel) == 0) {
            free(error);
            return;
        }
    struct codepin_ref r = {xstrdup(rel), kind, why, error};
    vec_push(out, r);
}

/* Appends p's components to rel, dropping "." and empty ones; 1 when one
 * of them is "..". */
static int join_norm(strbuf *rel, const char *p)
{
    int dotdot = 0;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            dotdot = 1;
        if (n && !(n == 1 && p[0] == '.')) {
            if (rel->len)
                sb_addc(rel, '/');
            sb_add(rel, p, n);
        }
        p += n + (e ? 1 : 0);
    }
    return dotdot;
}

/* The language family of a file name's extension, or NULL. */
static const char *const *family(const char *name)
{
    static const char *const py[] = {".py", NULL};
    static const char *const js[] = {".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", NULL};
    static const char *const rb[] = {".rb", NULL};
    static const char *const pl[] = {".pl", ".pm", NULL};
    static const char *const sh[] = {".sh", ".bash", NULL};
    static const char *const php[] = {".php", NULL};
    static const char *const lua[] = {".lua", NULL};
    static const char *const *const all[] = {py, js, rb, pl, sh, php, lua};
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name)
        return NULL;
    for (size_t f = 0; f < sizeof all / sizeof all[0]; f++)
        for (size_t i = 0; all[f][i]; i++)
            if (strcmp(dot, all[f][i]) == 0)
                return all[f];
    return NULL;
}

static int in_family(const char *const *fam, const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name)
        return 0;
    for (size_t i = 0; fam[i]; i++)
        if (strcmp(dot, fam[i]) == 0)
            return 1;
    return 0;
}

/* The same-language files beside a root-level script. */
static void siblings(const char *root, const char *server, const char *file, codepin_refs *out)
{
    const char *const *fam = family(file);
    if (!fam)
        return;
    DIR *d = opendir(root);
    if (!d)
        return;
    strvec names = STRVEC_INIT;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.' && strcmp(de->d_name, file) != 0 && in_family(fam, de->d_name))
            strvec_push(&names, de->d_name);
    closedir(d);
    strvec_sort(&names);
    size_t n = 0;
    for (size_t i = 0; i < names.n; i++) {
        char *full = xasprintf("%s/%s", root, names.v[i]);
        struct stat st;
        int ok = lstat(full, &st) == 0;
        free(full);
        if (!ok || S_ISDIR(st.st_mode))
            continue; /* a package directory named like a module is not beside it */
        if (++n > CODEPIN_SIBLINGS_MAX) {
            add_ref(out, file, CODEPIN_FILE, "named by the server",
                    xasprintf("server '%s': more than %d files of its language beside %s at the "
                              "project root; move the server into a directory of its own so "
                              "its code can be pinned",
                              server, CODEPIN_SIBLINGS_MAX, file));
            break;
        }
        if (S_ISLNK(st.st_mode))
            add_ref(out, names.v[i], CODEPIN_FILE, "beside it, same language",
                    xasprintf("server '%s': `%s` beside %s is a symlink; the code a server "
                              "loads must be real files in the project",
                              server, names.v[i], file));
        else
            add_ref(out, names.v[i], CODEPIN_FILE, "beside it, same language",
                    S_ISREG(st.st_mode)
                        ? NULL
                        : xasprintf("server '%s': `%s` is not a regular file", server, names.v[i]));
    }
    strvec_clear(&names);
}

/* One command/argument string as a path under base_rel (see codepin.h). */
static void candidate(const char *root, const struct mf_server *s, const char *base_rel,
                      const char *str, codepin_refs *out, strvec *not_pinned)
{
    if (!str[0] || strstr(str, "${"))
        return;
    size_t rl = strlen(root);
    const char *p = str;
    if (p[0] == '/') {
        if (strncmp(p, root, rl) != 0 || (p[rl] != '/' && p[rl] != '\0')) {
            struct stat st;
            if (not_pinned && stat(p, &st) == 0)
                strvec_pushf(not_pinned, "%s (outside the project)", p);
            return;
        }
        p += rl;
        base_rel = ""; /* an absolute path inside the project: from the root */
    }
    strbuf rel = SB_INIT;
    sb_adds(&rel, base_rel);
    int dotdot = join_norm(&rel, p);
    char *full = xasprintf("%s%s%s", root, rel.len ? "/" : "", rel.buf);
    struct stat st;
    if (dotdot) {
        if (stat(full, &st) == 0)
            add_ref(out, str, CODEPIN_FILE, "named by the server",
                    xasprintf("server '%s': `%s` resolves outside the project (path traversal "
                              "via ..); it cannot be pinned",
                              s->name, str));
        goto done;
    }
    /* The one containment check (base/fs.h): a symlink at any component
     * is an error — what runs must be a real file of the project. */
    int exists = 0;
    if (rel.len) {
        strbuf in = SB_INIT;
        struct as_err cerr = AS_ERR_INIT;
        int c = fs_contain(root, NULL, rel.buf, FS_CONTAIN_NOFOLLOW, &in, &cerr);
        if (c == FS_CONTAIN_E_SYMLINK)
            add_ref(out, rel.buf, CODEPIN_FILE, "named by the server",
                    xasprintf("server '%s': %s; local executables must be real files in the "
                              "project",
                              s->name, cerr.msg));
        else
            exists = c >= 0 && lstat(full, &st) == 0;
        sb_release(&in);
    } else {
        exists = lstat(full, &st) == 0;
    }
    if (!exists || !rel.len) {
        if (exists && !rel.len && not_pinned)
            strvec_pushf(not_pinned,
                         "the project root itself (named as `%s`): too broad to pin as its "
                         "code — name its entry file",
                         str);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        add_ref(out, rel.buf, CODEPIN_TREE, "its directory", NULL);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        add_ref(out, rel.buf, CODEPIN_FILE, "named by the server",
                xasprintf("server '%s': `%s` is not a regular file", s->name, str));
        goto done;
    }
    char *slash = strrchr(rel.buf, '/');
    if (slash) {
        *slash = '\0';
        add_ref(out, rel.buf, CODEPIN_TREE, "its directory", NULL);
    } else {
        add_ref(out, rel.buf, CODEPIN_FILE, "named by the server", NULL);
        siblings(root, s->name, rel.buf, out);
    }
done:
    free(full);
    sb_release(&rel);
}

static int covered_by(const char *tree, const char *rel)
{
    size_t n = strlen(tree);
    return strncmp(tree, rel, n) == 0 && rel[n] == '/';
}

/* A tree covering another pinned path replaces it. */
static void drop_covered(codepin_refs *out)
{
    for (size_t i = 0; i < out->n;) {
        int covered = 0;
        for (size_t k = 0; k < out->n && !covered; k++)
            covered = k != i && out->v[k].kind == CODEPIN_TREE && !out->v[k].error &&
                      !out->v[i].error && covered_by(out->v[k].rel, out->v[i].rel);
        if (covered) {
            free(out->v[i].rel);
            free(out->v[i].error);
            memmove(&out->v[i], &out->v[i + 1], (out->n - i - 1) * sizeof out->v[0]);
            out->n--;
        } else {
            i++;
        }
    }
}

void codepin_collect(const char *root, const struct mf_server *s, codepin_refs *out,
                     strvec *not_pinned)
{
    if (s->type != MF_SERVER_STDIO)
        return;
    strbuf base = SB_INIT;
    if (s->cwd && s->cwd[0]) {
        if (s->cwd[0] == '/' || strstr(s->cwd, "${")) {
            if (not_pinned)
                strvec_pushf(not_pinned, "everything under its cwd %s (outside the project)",
                             s->cwd);
            sb_release(&base);
            return;
        }
        strbuf real = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        if (fs_contain(root, NULL, s->cwd, MF_CONTAINED, &real, &err) < 0) {
            add_ref(out, s->cwd, CODEPIN_FILE, "its cwd",
                    xasprintf("server '%s': cwd %s", s->name, err.msg));
            sb_release(&real);
            sb_release(&base);
            return;
        }
        sb_release(&real);
        join_norm(&base, s->cwd);
    }
    if (s->command) {
        candidate(root, s, base.buf, s->command, out, not_pinned);
        if (not_pinned && s->command[0] && !strchr(s->command, '/') && !strstr(s->command, "${")) {
            strbuf where = SB_INIT;
            if (proc_which(s->command, NULL, &where) == 0)
                strvec_pushf(not_pinned, "%s — found on PATH as %s, outside the project",
                             s->command, where.buf);
            else
                strvec_pushf(not_pinned, "%s — looked up on PATH when it starts", s->command);
            sb_release(&where);
        }
    }
    for (size_t i = 0; i < s->args.n; i++) {
        const char *a = s->args.v[i];
        if (a[0] == '-') {
            const char *eq = strchr(a, '=');
            if (eq)
                candidate(root, s, base.buf, eq + 1, out, not_pinned);
            continue;
        }
        candidate(root, s, base.buf, a, out, not_pinned);
    }
    drop_covered(out);
    if (not_pinned)
        strvec_push(not_pinned, "what it loads from outside the project: its interpreter's own "
                                "libraries, site-packages, global node_modules");
    sb_release(&base);
}
