/* pack — pack references, tags, fetch, pack.toml and policy; see pack.h. */
#include "library/pack.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/rand.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/literal_secret.h"
#include "bundle/scan.h"
#include "bundle/skill_md.h"
#include "library/git.h"
#include "library/sync.h"
#include "policy/policy.h"
#include "secrets/secrets.h"

#define PACK_TOML_MAX ((size_t)1 << 20)

void lib_pack_ref_free(struct lib_pack_ref *r)
{
    free(r->url);
    free(r->tag);
    free(r->subdir);
    memset(r, 0, sizeof *r);
}

static bool tag_ok(const char *t)
{
    if (!t[0] || t[0] == '-' || strstr(t, "..") || strlen(t) > 200)
        return false;
    for (const char *p = t; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("._/+-", *p)))
            return false;
    return true;
}

int lib_pack_ref_parse(const char *spec, struct lib_pack_ref *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    if (strncmp(spec, "git:", 4) == 0)
        spec += 4;
    char *s = xstrdup(spec);
    char *hash = strchr(s, '#');
    if (hash) {
        *hash = '\0';
        if (hash[1])
            out->subdir = xstrdup(hash + 1);
    }
    char *at = strrchr(s, '@');
    if (at && at[1] && !strpbrk(at + 1, "/:")) {
        out->tag = xstrdup(at + 1);
        *at = '\0';
    }
    int rc = -1;
    if (!s[0]) {
        as_err_set(err, "git:%s names no repository", spec);
        goto out;
    }
    if (out->tag && !tag_ok(out->tag)) {
        as_err_set(err, "'%s' is not a usable tag name", out->tag);
        goto out;
    }
    if (out->subdir) {
        if (out->subdir[0] == '/' || strstr(out->subdir, "..")) {
            as_err_set(err, "#%s: the subdirectory must be relative and '..'-free", out->subdir);
            goto out;
        }
    }
    if (strstr(s, "://") || strncmp(s, "git@", 4) == 0) {
        out->url = xstrdup(s);
    } else if (s[0] == '/' || strncmp(s, "./", 2) == 0 || strncmp(s, "../", 3) == 0 ||
               strncmp(s, "~/", 2) == 0) {
        strbuf abs = SB_INIT;
        if (strncmp(s, "~/", 2) == 0) {
            const char *h = getenv("HOME");
            sb_addf(&abs, "%s/%s", h ? h : "", s + 2);
            out->url = sb_detach(&abs, NULL);
        } else if (discover_abspath(s, &abs, err) < 0) {
            sb_release(&abs);
            goto out;
        } else {
            out->url = sb_detach(&abs, NULL);
        }
    } else {
        /* owner/repo is GitHub; a first component with a dot is a host */
        size_t first = strcspn(s, "/");
        bool host = memchr(s, '.', first) != NULL;
        out->url = host ? xasprintf("https://%s", s) : xasprintf("https://github.com/%s", s);
    }
    if (lib_git_url_check(out->url, true, err) < 0)
        goto out;
    rc = 0;
out:
    free(s);
    if (rc < 0)
        lib_pack_ref_free(out);
    return rc;
}

char *lib_pack_ledger_id(const struct lib_pack_ref *r, const char *tag)
{
    return xasprintf("git:%s@%s%s%s", r->url, tag, r->subdir ? "#" : "",
                     r->subdir ? r->subdir : "");
}

/* ---- version tags ------------------------------------------------------------------- */

bool lib_version_tag(const char *tag)
{
    const char *p = tag;
    if (*p == 'v' || *p == 'V')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '.') {
            p++;
            if (!isdigit((unsigned char)*p))
                return false;
        }
    }
    return true;
}

/* Compares decimal digit runs without overflow: longer (sans leading
 * zeros) is greater, then byte order. */
static int num_cmp(const char *a, size_t la, const char *b, size_t lb)
{
    while (la > 1 && *a == '0') {
        a++;
        la--;
    }
    while (lb > 1 && *b == '0') {
        b++;
        lb--;
    }
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = memcmp(a, b, la);
    return c < 0 ? -1 : c > 0;
}

int lib_version_cmp(const char *a, const char *b)
{
    if (*a == 'v' || *a == 'V')
        a++;
    if (*b == 'v' || *b == 'V')
        b++;
    for (;;) {
        if (!*a && !*b)
            return 0;
        if (!*a)
            return -1;
        if (!*b)
            return 1;
        size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
        int c = num_cmp(a, la, b, lb);
        if (c)
            return c;
        a += la;
        b += lb;
        if (*a == '.')
            a++;
        if (*b == '.')
            b++;
    }
}

int lib_pack_newest_tag(const char *url, char **tag, struct as_err *err)
{
    *tag = NULL;
    strbuf out = SB_INIT, e = SB_INIT;
    const char *args[] = {"ls-remote", LIB_GIT_UPLOAD_PACK, "--tags", "--refs", url, NULL};
    int st = lib_git(NULL, args, &out, &e, err);
    int rc = -1;
    if (st != 0) {
        if (st > 0) {
            strbuf last = SB_INIT;
            lib_git_last_line(e.buf, &last);
            as_err_set(err, "cannot list the tags of %s: %s", url, last.buf);
            as_err_hint(err, "check the URL and your access to it — nothing was fetched");
            sb_release(&last);
        }
        goto out;
    }
    for (char *line = out.buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *ref = strstr(line, "refs/tags/");
        if (ref) {
            const char *t = ref + 10;
            if (lib_version_tag(t) && (!*tag || lib_version_cmp(t, *tag) > 0)) {
                free(*tag);
                *tag = xstrdup(t);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    if (!*tag) {
        as_err_set(err, "%s has no version tags (vX.Y.Z)", url);
        as_err_hint(err, "pass an explicit git:%s@<tag>", url);
        goto out;
    }
    rc = 0;
out:
    sb_release(&out);
    sb_release(&e);
    return rc;
}

/* ---- pack.toml ------------------------------------------------------------------------ */

void lib_pack_free(struct lib_pack *p)
{
    free(p->name);
    free(p->description);
    strvec_clear(&p->targets);
    free(p->server_type);
    free(p->server_url);
    free(p->server_command);
    strvec_clear(&p->server_args);
    strvec_clear(&p->secret_env);
    strvec_clear(&p->secret_headers);
    lib_pack_members *lists[] = {&p->skills, &p->instructions};
    for (size_t l = 0; l < 2; l++) {
        for (size_t i = 0; i < lists[l]->n; i++) {
            free(lists[l]->v[i].name);
            free(lists[l]->v[i].path);
        }
        vec_free(lists[l]);
    }
    free(p->root);
    free(p->tag);
    free(p->commit);
    memset(p, 0, sizeof *p);
}

static bool in_list(const char *k, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(k, *list) == 0)
            return true;
    return false;
}

static int want_str(const char *file, const toml_kv *kv, char **out, struct as_err *err)
{
    if (kv->val->type != TOML_STRING || strlen(kv->val->u.str.s) != kv->val->u.str.len)
        return as_err_at(err, file, kv->line, kv->col, "`%s` must be a string", kv->key);
    *out = xstrdup(kv->val->u.str.s);
    return 0;
}

static int want_strs(const char *file, const toml_kv *kv, strvec *out, struct as_err *err)
{
    if (kv->val->type != TOML_ARRAY)
        return as_err_at(err, file, kv->line, kv->col, "`%s` must be an array of strings", kv->key);
    for (size_t i = 0; i < toml_len(kv->val); i++) {
        const toml_value *v = toml_at(kv->val, i);
        if (v->type != TOML_STRING || strlen(v->u.str.s) != v->u.str.len)
            return as_err_at(err, file, v->line, v->col, "`%s` must be an array of strings",
                             kv->key);
        strvec_push(out, v->u.str.s);
    }
    return 0;
}

/* A member path: relative, '..'-free, symlink-free, existing. */
static int member_path(const char *root, const char *file, const toml_value *row, const char *what,
                       const char *rel, bool dir, strbuf *full, struct as_err *err)
{
    if (!rel[0] || rel[0] == '/' || strstr(rel, ".."))
        return as_err_at(err, file, row->line, row->col,
                         "%s path '%s' must be relative and '..'-free", what, rel);
    const char *r = rel;
    while (r[0] == '.' && r[1] == '/')
        r += 2;
    if (fs_contain(root, NULL, r, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT, full, err) < 0) {
        as_err_prefix(err, "%s:%u:%u: %s path", file, row->line, row->col, what);
        return -1;
    }
    struct stat st;
    if (lstat(full->buf, &st) != 0)
        return as_err_at(err, file, row->line, row->col, "%s path '%s' does not exist in the pack",
                         what, rel);
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return as_err_at(err, file, row->line, row->col, "%s path '%s' must be a %s", what, rel,
                         dir ? "directory" : "regular file");
    return 0;
}

static int load_members(const char *root, const char *file, const toml_kv *kv, bool skills,
                        lib_pack_members *out, struct as_err *err)
{
    const char *what = skills ? "skill" : "instruction";
    if (kv->val->type != TOML_ARRAY)
        return as_err_at(err, file, kv->line, kv->col, "`%s` must be an array of tables ([[%s]])",
                         kv->key, kv->key);
    for (size_t i = 0; i < toml_len(kv->val); i++) {
        const toml_value *row = toml_at(kv->val, i);
        if (row->type != TOML_TABLE)
            return as_err_at(err, file, row->line, row->col, "[[%s]] entries must be tables",
                             kv->key);
        char *name = NULL, *path = NULL;
        int rc = 0;
        for (size_t j = 0; j < toml_len(row) && rc == 0; j++) {
            const toml_kv *f = toml_entry(row, j);
            if (strcmp(f->key, "name") == 0)
                rc = want_str(file, f, &name, err);
            else if (strcmp(f->key, "path") == 0)
                rc = want_str(file, f, &path, err);
            else
                rc = as_err_at(err, file, f->line, f->col, "unknown key '%s' in [[%s]]", f->key,
                               kv->key);
        }
        if (rc == 0 && (!name || !path))
            rc = as_err_at(err, file, row->line, row->col, "[[%s]] needs `name` and `path`",
                           kv->key);
        if (rc == 0 && !lib_name_valid(name))
            rc = as_err_at(err, file, row->line, row->col,
                           "%s name '%s' is not valid (^[a-z0-9][a-z0-9._-]{0,63}$)", what, name);
        for (size_t k = 0; rc == 0 && k < out->n; k++)
            if (strcmp(out->v[k].name, name) == 0)
                rc = as_err_at(err, file, row->line, row->col, "two [[%s]] named '%s'", kv->key,
                               name);
        strbuf full = SB_INIT;
        if (rc == 0)
            rc = member_path(root, file, row, what, path, skills, &full, err);
        if (rc == 0 && skills && skill_dir_check(full.buf, err) < 0) {
            as_err_prefix(err, "pack skill '%s'", name);
            rc = -1;
        }
        sb_release(&full);
        if (rc < 0) {
            free(name);
            free(path);
            return -1;
        }
        const char *p = path;
        while (p[0] == '.' && p[1] == '/')
            p += 2;
        struct lib_pack_member m = {name, xstrdup(p)};
        free(path);
        vec_push(out, m);
    }
    return 0;
}

static int load_server(const char *file, const toml_kv *kv, struct lib_pack *p, struct as_err *err)
{
    if (kv->val->type != TOML_TABLE)
        return as_err_at(err, file, kv->line, kv->col, "[server] must be a table");
    static const char *const keys[] = {"type",           "url", "command", "args", "secret_env",
                                       "secret_headers", NULL};
    for (size_t i = 0; i < toml_len(kv->val); i++) {
        const toml_kv *f = toml_entry(kv->val, i);
        int rc = 0;
        if (!in_list(f->key, keys))
            rc = as_err_at(err, file, f->line, f->col, "unknown key '%s' in [server]", f->key);
        else if (strcmp(f->key, "type") == 0)
            rc = want_str(file, f, &p->server_type, err);
        else if (strcmp(f->key, "url") == 0)
            rc = want_str(file, f, &p->server_url, err);
        else if (strcmp(f->key, "command") == 0)
            rc = want_str(file, f, &p->server_command, err);
        else if (strcmp(f->key, "args") == 0)
            rc = want_strs(file, f, &p->server_args, err);
        else if (strcmp(f->key, "secret_env") == 0)
            rc = want_strs(file, f, &p->secret_env, err);
        else
            rc = want_strs(file, f, &p->secret_headers, err);
        if (rc < 0)
            return -1;
    }
    p->has_server = true;
    if (!p->server_type)
        return as_err_at(
            err, file, kv->line, kv->col,
            "[server] needs `type` (\"stdio\" with `command`, or \"http\" with `url`)");
    if (strcmp(p->server_type, "stdio") == 0) {
        if (!p->server_command || !p->server_command[0])
            return as_err_at(err, file, kv->line, kv->col, "a stdio [server] needs `command`");
        if (p->server_url || p->secret_headers.n)
            return as_err_at(err, file, kv->line, kv->col,
                             "a stdio [server] takes command, args and secret_env");
    } else if (strcmp(p->server_type, "http") == 0) {
        if (!p->server_url || strncmp(p->server_url, "https://", 8) != 0)
            return as_err_at(err, file, kv->line, kv->col,
                             "an http [server] needs an https:// `url`");
        if (p->server_command || p->server_args.n || p->secret_env.n)
            return as_err_at(err, file, kv->line, kv->col,
                             "an http [server] takes url and secret_headers");
    } else {
        return as_err_at(err, file, kv->line, kv->col,
                         "[server] type must be \"stdio\" or \"http\", not \"%s\"", p->server_type);
    }
    for (size_t i = 0; i < p->secret_env.n; i++)
        if (!sec_name_ok(p->secret_env.v[i]))
            return as_err_at(err, file, kv->line, kv->col,
                             "secret_env '%s' is not an environment variable name",
                             p->secret_env.v[i]);
    for (size_t i = 0; i < p->secret_headers.n; i++)
        if (!p->secret_headers.v[i][0] || strpbrk(p->secret_headers.v[i], " :\r\n"))
            return as_err_at(err, file, kv->line, kv->col, "secret_headers '%s' is not a header",
                             p->secret_headers.v[i]);
    /* A pack may not ship a credential: refs only. */
    lsec_findings f = VEC_INIT;
    if (p->server_url)
        lsec_check_url("url", p->server_url, &f);
    lsec_check_args("args", (const char *const *)p->server_args.v, p->server_args.n, &f);
    if (f.n) {
        as_err_at(err, file, kv->line, kv->col,
                  "pack server holds a literal secret in %s ('%s', %s) — nothing installed",
                  f.v[0].where, f.v[0].key, lsec_why_text(f.v[0].why));
        as_err_hint(err, "a pack names secrets with secret_env / secret_headers; ask the vendor "
                         "to drop the value");
        lsec_findings_free(&f);
        return -1;
    }
    return 0;
}

static int scan_members(const struct lib_pack *p, struct as_err *err)
{
    struct scan_report r;
    scan_report_init(&r);
    int rc = 0;
    for (size_t i = 0; i < p->skills.n && rc == 0; i++) {
        char *dir = xasprintf("%s/%s", p->root, p->skills.v[i].path);
        char *item = xasprintf("skill '%s'", p->skills.v[i].name);
        rc = scan_tree(item, dir, p->skills.v[i].path, &r, err);
        free(dir);
        free(item);
    }
    for (size_t i = 0; i < p->instructions.n && rc == 0; i++) {
        char *f = xasprintf("%s/%s", p->root, p->instructions.v[i].path);
        char *item = xasprintf("instruction '%s'", p->instructions.v[i].name);
        rc = scan_file(item, f, p->instructions.v[i].path, &r, err);
        free(f);
        free(item);
    }
    /* ... and no member may carry a literal secret (the one detector lib
     * sync uses, so nothing installed here is refused later) */
    for (size_t i = 0; i < p->skills.n + p->instructions.n && rc == 0; i++) {
        bool skill = i < p->skills.n;
        const char *rel = skill ? p->skills.v[i].path : p->instructions.v[i - p->skills.n].path;
        const char *nm = skill ? p->skills.v[i].name : p->instructions.v[i - p->skills.n].name;
        char *dir = xasprintf("%s/%s", p->root, rel);
        lib_secret_hits hits = VEC_INIT;
        rc = lib_secret_scan_tree(dir, &hits, err);
        if (rc == 0 && hits.n) {
            as_err_set(err,
                       "pack '%s': %s '%s' holds a literal secret (%s: '%s', %s) — nothing "
                       "installed",
                       p->name, skill ? "skill" : "instruction", nm, hits.v[0].file, hits.v[0].key,
                       lsec_why_text(hits.v[0].why));
            as_err_hint(err, "a pack names secrets as ${REF}s; ask the vendor to drop the "
                             "value");
            rc = -1;
        }
        lib_secret_hits_free(&hits);
        free(dir);
    }
    if (rc == 0 && scan_report_blocking(&r)) {
        for (size_t i = 0; i < r.v.n; i++) {
            if (r.v.v[i].sev != SCAN_HIGH)
                continue;
            strbuf line = SB_INIT;
            scan_finding_format(&r.v.v[i], &line);
            as_err_set(err, "pack '%s' failed the content scan: %s — nothing installed", p->name,
                       line.buf);
            sb_release(&line);
            break;
        }
        as_err_hint(err, "hidden characters in agent-facing text are refused; report it to the "
                         "pack's vendor");
        rc = -1;
    }
    scan_report_free(&r);
    return rc;
}

int lib_pack_load(const char *root, struct lib_pack *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    out->root = xstrdup(root);
    char *file = xasprintf("%s/pack.toml", root);
    toml_value *t = NULL;
    int rc = -1;
    struct stat st;
    if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode)) {
        as_err_set(err, "no pack.toml at the pack root (%s)", root);
        as_err_hint(err, "a pack is a repository (or #subdir) with pack.toml; "
                         "scaffold one with agentstack lib pack-init");
        goto out;
    }
    t = toml_parse_file(file, PACK_TOML_MAX, err);
    if (!t) {
        as_err_prefix(err, "malformed pack.toml");
        goto out;
    }
    for (size_t i = 0; i < toml_len(t); i++) {
        const toml_kv *kv = toml_entry(t, i);
        int r = 0;
        if (strcmp(kv->key, "name") == 0)
            r = want_str(file, kv, &out->name, err);
        else if (strcmp(kv->key, "description") == 0)
            r = want_str(file, kv, &out->description, err);
        else if (strcmp(kv->key, "targets") == 0)
            r = want_strs(file, kv, &out->targets, err);
        else if (strcmp(kv->key, "server") == 0)
            r = 0; /* after the name is known */
        else if (strcmp(kv->key, "skill") == 0)
            r = load_members(root, file, kv, true, &out->skills, err);
        else if (strcmp(kv->key, "instruction") == 0)
            r = load_members(root, file, kv, false, &out->instructions, err);
        else if (strcmp(kv->key, "hook") == 0 || strcmp(kv->key, "extension") == 0)
            r = as_err_at(err, file, kv->line, kv->col,
                          "pack declares [[%s]] — packs may not install hooks or extensions; "
                          "nothing installed",
                          kv->key);
        else
            r = as_err_at(err, file, kv->line, kv->col,
                          "unknown key '%s' in pack.toml (known: name, description, targets, "
                          "server, skill, instruction)",
                          kv->key);
        if (r < 0)
            goto out;
    }
    if (!out->name) {
        as_err_at(err, file, 1, 1, "pack.toml needs `name`");
        goto out;
    }
    if (!lib_name_valid(out->name)) {
        as_err_at(err, file, 1, 1, "pack name '%s' is not valid (^[a-z0-9][a-z0-9._-]{0,63}$)",
                  out->name);
        goto out;
    }
    const toml_kv *srv = toml_get_kv(t, "server");
    if (srv && load_server(file, srv, out, err) < 0)
        goto out;
    if (!out->has_server && !out->skills.n && !out->instructions.n) {
        as_err_at(err, file, 1, 1,
                  "pack '%s' declares nothing ([server], [[skill]] or "
                  "[[instruction]])",
                  out->name);
        goto out;
    }
    if (scan_members(out, err) < 0)
        goto out;
    rc = 0;
out:
    toml_free(t);
    free(file);
    if (rc < 0)
        lib_pack_free(out);
    return rc;
}

/* ---- fetch ---------------------------------------------------------------------------- */

static void slug(const char *url, strbuf *out)
{
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        sb_addc(out, isalnum(*p) ? (char)*p : '-');
}

static int git_fail(int st, const char *what, const char *url, const strbuf *e, struct as_err *err)
{
    if (st > 0) {
        strbuf last = SB_INIT;
        lib_git_last_line(e->buf, &last);
        as_err_set(err, "git %s failed for %s: %s", what, url, last.len ? last.buf : "?");
        as_err_hint(err, "check the URL and your access to it — nothing was installed");
        sb_release(&last);
    }
    return -1;
}

int lib_pack_fetch(const char *home, const struct lib_pack_ref *ref, const char *tag,
                   struct lib_pack *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    if (!tag_ok(tag))
        return as_err_set(err, "'%s' is not a usable tag name", tag);
    strbuf dir = SB_INIT, e = SB_INIT, o = SB_INIT;
    sb_addf(&dir, "%s/store/git/", home);
    slug(ref->url, &dir);
    int rc = -1;
    char *tmp = NULL;
    if (!fs_is_dir(dir.buf)) {
        char *parent = xasprintf("%s/store/git", home);
        int mk = fs_mkdirs(parent, 0700, err);
        free(parent);
        if (mk < 0)
            goto out;
        char rnd[17];
        if (rand_hex(rnd, 8, err) < 0)
            goto out;
        tmp = xasprintf("%s.tmp-%s", dir.buf, rnd);
        const char *args[] = {"clone", "-q", "--no-checkout", LIB_GIT_UPLOAD_PACK, "--", ref->url,
                              tmp,     NULL};
        int st = lib_git_net(NULL, args, NULL, &e, err);
        if (st != 0) {
            struct as_err e2 = AS_ERR_INIT;
            fs_rmtree(tmp, &e2);
            git_fail(st, "clone", ref->url, &e, err);
            goto out;
        }
        if (rename(tmp, dir.buf) != 0) {
            as_err_errno(err, "cannot place the clone at %s", dir.buf);
            struct as_err e2 = AS_ERR_INIT;
            fs_rmtree(tmp, &e2);
            goto out;
        }
    } else {
        const char *seturl[] = {"remote", "set-url", "origin", ref->url, NULL};
        if (lib_git_ok(dir.buf, seturl, NULL, err) < 0)
            goto out;
        const char *fetch[] = {"fetch",  "-q", LIB_GIT_UPLOAD_PACK, "--tags", "--force", "--prune",
                               "origin", NULL};
        int st = lib_git_net(dir.buf, fetch, NULL, &e, err);
        if (st != 0) {
            git_fail(st, "fetch", ref->url, &e, err);
            goto out;
        }
    }
    char *spec = xasprintf("refs/tags/%s^{commit}", tag);
    const char *rp[] = {"rev-parse", "--verify", "-q", spec, NULL};
    sb_reset(&e);
    int st = lib_git(dir.buf, rp, &o, &e, err);
    free(spec);
    if (st != 0) {
        if (st > 0) {
            as_err_set(err, "tag '%s' does not exist in %s — nothing installed", tag, ref->url);
            strbuf tags = SB_INIT;
            const char *tl[] = {"tag", "-l", "--sort=-v:refname", NULL};
            struct as_err e2 = AS_ERR_INIT;
            if (lib_git(dir.buf, tl, &tags, NULL, &e2) == 0 && tags.len) {
                sb_rtrim(&tags);
                for (size_t i = 0; i < tags.len; i++)
                    if (tags.buf[i] == '\n')
                        tags.buf[i] = ' ';
                as_err_hint(err, "tags there: %.300s", tags.buf);
            } else {
                as_err_hint(err, "the repository has no tags; pass one it has, or tag a release");
            }
            sb_release(&tags);
        }
        goto out;
    }
    sb_rtrim(&o);
    char *commit = xstrdup(o.buf);
    const char *co[] = {"checkout", "-q", "--detach", "--force", commit, NULL};
    const char *clean[] = {"clean", "-q", "-ffdx", NULL};
    if (lib_git_ok(dir.buf, co, NULL, err) < 0 || lib_git_ok(dir.buf, clean, NULL, err) < 0) {
        free(commit);
        goto out;
    }
    strbuf root = SB_INIT;
    if (ref->subdir) {
        if (fs_contain(dir.buf, NULL, ref->subdir, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT,
                       &root, err) < 0 ||
            !fs_is_dir(root.buf)) {
            if (!as_err_isset(err))
                as_err_set(err, "#%s is not a directory in %s@%s", ref->subdir, ref->url, tag);
            sb_release(&root);
            free(commit);
            goto out;
        }
    } else {
        sb_adds(&root, dir.buf);
    }
    if (lib_pack_load(root.buf, out, err) < 0) {
        sb_release(&root);
        free(commit);
        goto out;
    }
    sb_release(&root);
    out->tag = xstrdup(tag);
    out->commit = commit;
    rc = 0;
out:
    free(tmp);
    sb_release(&dir);
    sb_release(&e);
    sb_release(&o);
    return rc;
}

/* ---- the installed server ------------------------------------------------------------- */

void lib_pack_env_name(const char *s, strbuf *out)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        sb_addc(out, isalnum(*p) ? (char)toupper(*p) : '_');
}

toml_value *lib_pack_server_table(const struct lib_pack *p)
{
    toml_value *t = toml_new(TOML_TABLE);
    toml_table_set(t, "type", toml_new_string(p->server_type));
    if (strcmp(p->server_type, "stdio") == 0) {
        toml_table_set(t, "command", toml_new_string(p->server_command));
        if (p->server_args.n) {
            toml_value *a = toml_new(TOML_ARRAY);
            for (size_t i = 0; i < p->server_args.n; i++)
                toml_array_push(a, toml_new_string(p->server_args.v[i]));
            toml_table_set(t, "args", a);
        }
        if (p->secret_env.n) {
            toml_value *env = toml_new(TOML_TABLE);
            for (size_t i = 0; i < p->secret_env.n; i++) {
                strbuf n = SB_INIT, v = SB_INIT;
                lib_pack_env_name(p->secret_env.v[i], &n);
                sb_addf(&v, "${%s}", n.buf);
                toml_table_set(env, n.buf, toml_new_string(v.buf));
                sb_release(&n);
                sb_release(&v);
            }
            toml_table_set(t, "env", env);
        }
    } else {
        toml_table_set(t, "url", toml_new_string(p->server_url));
        if (p->secret_headers.n) {
            toml_value *h = toml_new(TOML_TABLE);
            for (size_t i = 0; i < p->secret_headers.n; i++) {
                strbuf v = SB_INIT, n = SB_INIT;
                if (strcasecmp(p->secret_headers.v[i], "authorization") == 0) {
                    lib_pack_env_name(p->name, &n);
                    sb_addf(&v, "Bearer ${%s_TOKEN}", n.buf);
                } else {
                    lib_pack_env_name(p->secret_headers.v[i], &n);
                    sb_addf(&v, "${%s}", n.buf);
                }
                toml_table_set(h, p->secret_headers.v[i], toml_new_string(v.buf));
                sb_release(&v);
                sb_release(&n);
            }
            toml_table_set(t, "headers", h);
        }
    }
    if (p->targets.n) {
        toml_value *a = toml_new(TOML_ARRAY);
        for (size_t i = 0; i < p->targets.n; i++)
            toml_array_push(a, toml_new_string(p->targets.v[i]));
        toml_table_set(t, "targets", a);
    }
    return t;
}

/* ---- policy ----------------------------------------------------------------------------- */

static int check_list(const toml_value *policy, const char *where, const char *url,
                      struct as_err *err)
{
    const toml_value *list = toml_get(policy, "allowed_sources");
    if (!list || list->type != TOML_ARRAY || !toml_len(list))
        return 0;
    char *full = xasprintf("git:%s", url);
    const char *p = strstr(url, "://");
    char *bare = xasprintf("git:%s", p ? p + 3 : url);
    bool ok = false;
    for (size_t i = 0; i < toml_len(list) && !ok; i++) {
        const toml_value *v = toml_at(list, i);
        if (v->type != TOML_STRING)
            continue;
        const char *pat = v->u.str.s;
        size_t pl = strlen(pat);
        ok = pol_glob_match(pat, pl, full, strlen(full), 0) ||
             pol_glob_match(pat, pl, bare, strlen(bare), 0) ||
             pol_glob_match(pat, pl, url, strlen(url), 0);
    }
    if (!ok) {
        as_err_set(err, "source %s is not in %s [policy] allowed_sources — nothing fetched", full,
                   where);
        as_err_hint(err,
                    "add a matching pattern (e.g. \"%s\") to [policy] allowed_sources, or "
                    "install from an allowed source",
                    bare);
    }
    free(full);
    free(bare);
    return ok ? 0 : -1;
}

int lib_pack_policy_check(const struct manifest *m, const char *url, struct as_err *err)
{
    if (m && m->policy && check_list(m->policy, "the project's", url, err) < 0)
        return -1;
    int absent = 0;
    toml_value *mt = home_machine_toml(&absent, err);
    if (!mt && !absent)
        return -1; /* a broken machine manifest fails closed */
    int rc = 0;
    if (mt) {
        const toml_value *pol = toml_get(mt, "policy");
        if (pol && pol->type == TOML_TABLE)
            rc = check_list(pol, "the machine's", url, err);
        toml_free(mt);
    }
    return rc;
}
