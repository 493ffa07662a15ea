/* store — the ownership ledger, the undo history and rolling backups
 * (docs/adapters.md). All three hold resolved secrets, so every file is
 * exactly 0600 (an older copy's looser mode does not survive a rewrite) and
 * written atomically, and backups/ and history/ are 0700, re-tightened
 * whenever they are used; callers hold the writer lock. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/home.h"

#define LEDGER_MAX ((size_t)64 << 20)
#define HISTORY_KEEP 40
#define HISTORY_ENTRY_MAX ((size_t)512 << 20)

/* ---- ledger -------------------------------------------------------------- */

int adp_ledger_load(json_t **out, struct as_err *err)
{
    *out = NULL;
    strbuf path = SB_INIT, text = SB_INIT;
    if (home_path(HOME_STATE_JSON, &path, err) != 0) {
        sb_release(&path);
        return -1;
    }
    if (!fs_exists(path.buf)) {
        *out = json_pack("{s:i,s:{}}", "version", 1, "targets");
        sb_release(&path);
        return 0;
    }
    struct as_err terr = AS_ERR_INIT; /* best effort: a read never fails on it */
    (void)fs_tighten_file(path.buf, 0600, &terr);
    int rc = fs_read_file(path.buf, LEDGER_MAX, 1, &text, err);
    json_t *v = NULL;
    if (rc == 0) {
        json_error_t je;
        v = json_loadb(text.buf, text.len, 0, &je);
        if (!v || !json_is_object(v) || !json_is_object(json_object_get(v, "targets"))) {
            if (v)
                as_err_at(err, path.buf, 1, 1, "not an agentstack ownership ledger");
            else
                as_err_at(err, path.buf, (unsigned)je.line, (unsigned)je.column, "%s", je.text);
            as_err_prefix(err, "the ownership ledger is unreadable");
            as_err_hint(err, "move %s aside (agentstack then treats every entry as foreign)",
                        path.buf);
            json_decref(v);
            v = NULL;
            rc = -1;
        }
    }
    *out = v;
    sb_release(&path);
    sb_release(&text);
    return rc;
}

int adp_ledger_save(const json_t *ledger, struct as_err *err)
{
    strbuf path = SB_INIT;
    if (home_ensure(HOME_STATE_JSON, &path, err) != 0) {
        sb_release(&path);
        return -1;
    }
    char *text = json_dumps(ledger, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    strbuf t = SB_INIT;
    sb_adds(&t, text);
    sb_addc(&t, '\n');
    free(text);
    struct fs_write_opts o = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
    int rc = fs_write_exact(path.buf, t.buf, t.len, &o, err);
    sb_release_secure(&t);
    sb_release(&path);
    return rc;
}

json_t *adp_ledger_entry(json_t *ledger, const char *key, bool create)
{
    json_t *targets = json_object_get(ledger, "targets");
    if (!json_is_object(targets)) {
        if (!create)
            return NULL;
        targets = json_object();
        json_object_set_new(ledger, "targets", targets);
    }
    json_t *e = json_object_get(targets, key);
    if (json_is_object(e) || !create)
        return json_is_object(e) ? e : NULL;
    e = json_pack("{s:[],s:[],s:[],s:[],s:n,s:n,s:[],s:n}", "managed_servers", "managed_skills",
                  "managed_settings", "managed_hooks", "last_hash", "source_manifest",
                  "kept_foreign", "active_profile");
    json_object_set_new(targets, key, e);
    return e;
}

struct name_at {
    const char *s;
    size_t i;
};

static int name_at_cmp(const void *a, const void *b)
{
    const struct name_at *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

void adp_ledger_names(const json_t *entry, const char *field, strvec *out)
{
    json_t *a = entry ? json_object_get(entry, field) : NULL;
    size_t i, n = json_array_size(a);
    json_t *v;
    if (out->n || n < 16) {
        json_array_foreach(a, i,
                           v) if (json_is_string(v) && strvec_find(out, json_string_value(v)) < 0)
            strvec_push(out, json_string_value(v));
        return;
    }
    /* A large list (hundreds of servers): first occurrences by sorting, not
     * a quadratic scan, keeping the stored order. */
    struct name_at *at = xcalloc(n, sizeof *at);
    bool *keep = xcalloc(n, sizeof *keep);
    size_t k = 0;
    json_array_foreach(a, i, v) if (json_is_string(v)) at[k++] =
        (struct name_at){json_string_value(v), i};
    qsort(at, k, sizeof *at, name_at_cmp);
    for (size_t j = 0; j < k; j++)
        keep[at[j].i] = j == 0 || strcmp(at[j].s, at[j - 1].s) != 0;
    json_array_foreach(a, i, v) if (keep[i]) strvec_push(out, json_string_value(v));
    free(keep);
    free(at);
}

void adp_ledger_set_names(json_t *entry, const char *field, const strvec *names)
{
    json_t *a = json_array();
    for (size_t i = 0; i < names->n; i++)
        json_array_append_new(a, json_string(names->v[i]));
    json_object_set_new(entry, field, a);
}

char *adp_ledger_key(const char *id, const char *project_root)
{
    if (!project_root)
        return xstrdup(id);
    return xasprintf("%s@project:%s", id, project_root);
}

void adp_fnv1a64_hex(const void *data, size_t len, char out[17])
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ---- backups ------------------------------------------------------------- */

int adp_backup_path(const char *file, strbuf *out, struct as_err *err)
{
    strbuf dir = SB_INIT;
    if (home_path(HOME_BACKUPS_DIR, &dir, err) != 0 || fs_private_dir(dir.buf, err) != 0) {
        sb_release(&dir);
        return -1;
    }
    strbuf name = SB_INIT;
    for (const char *p = file; *p; p++) {
        char c = *p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        sb_addc(&name, ok ? c : '-');
    }
    const char *tail = name.buf;
    if (name.len > 160)
        tail = name.buf + name.len - 160;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(file, strlen(file), hex);
    sb_reset(out);
    sb_addf(out, "%s/%s.%.12s", dir.buf, tail, hex);
    sb_release(&dir);
    sb_release(&name);
    return 0;
}

/* ---- history ------------------------------------------------------------- */

void adp_hist_entry_free(struct adp_hist_entry *e)
{
    if (!e)
        return;
    free(e->id);
    free(e->scope);
    free(e->summary);
    free(e->operation);
    free(e->file);
    json_decref(e->skills);
    strvec_clear(&e->targets);
    for (size_t i = 0; i < e->files.n; i++) {
        struct adp_hist_file *f = &e->files.v[i];
        free(f->path);
        free(f->label);
        sb_release_secure(&f->before);
        strvec_clear(&f->created_dirs);
    }
    vec_free(&e->files);
    free(e);
}

void adp_hist_list_free(adp_hist_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        adp_hist_entry_free(l->v[i]);
    vec_free(l);
}

static bool valid_utf8(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    bool ok = v != NULL;
    json_decref(v);
    return ok;
}

static json_t *entry_json(const struct adp_hist_entry *e)
{
    json_t *files = json_array();
    for (size_t i = 0; i < e->files.n; i++) {
        const struct adp_hist_file *f = &e->files.v[i];
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(f->path));
        if (!f->existed) {
            json_object_set_new(o, "before", json_null());
        } else if (valid_utf8(f->before.buf, f->before.len)) {
            json_object_set_new(o, "before", json_stringn(f->before.buf, f->before.len));
        } else {
            /* Not text: keep the exact bytes as hex so restore is byte-exact. */
            char *hex = xmalloc(f->before.len * 2 + 1);
            hex_encode((const uint8_t *)f->before.buf, f->before.len, hex);
            json_object_set_new(o, "before", json_null());
            json_object_set_new(o, "before_hex", json_string(hex));
            free(hex);
        }
        if (f->existed && f->mode) {
            char m[8];
            snprintf(m, sizeof m, "%04o", f->mode & 0777);
            json_object_set_new(o, "mode", json_string(m));
        }
        json_object_set_new(o, "label", json_string(f->label ? f->label : ""));
        json_t *cd = json_array();
        for (size_t k = 0; k < f->created_dirs.n; k++)
            json_array_append_new(cd, json_string(f->created_dirs.v[k]));
        json_object_set_new(o, "created_dirs", cd);
        json_array_append_new(files, o);
    }
    json_t *targets = json_array();
    for (size_t i = 0; i < e->targets.n; i++)
        json_array_append_new(targets, json_string(e->targets.v[i]));
    json_t *j = json_pack("{s:s,s:I,s:s,s:s,s:o,s:o,s:n,s:s,s:b}", "id", e->id, "time_unix",
                          (json_int_t)e->time_unix, "scope", e->scope ? e->scope : "", "summary",
                          e->summary ? e->summary : "", "targets", targets, "files", files, "batch",
                          "operation", e->operation ? e->operation : "", "undone", e->undone);
    if (j && json_array_size(e->skills))
        json_object_set(j, "skills", e->skills);
    return j;
}

static int write_entry(const struct adp_hist_entry *e, const char *path, struct as_err *err)
{
    json_t *j = entry_json(e);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    struct fs_write_opts o = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
    int rc = fs_write_exact(path, text, strlen(text), &o, err);
    explicit_bzero(text, strlen(text));
    free(text);
    return rc;
}

static int cmp_desc(const void *a, const void *b)
{
    return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* History file names (16 hex + ".json"), newest first. */
static void list_names(const char *dir, strvec *out)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    struct dirent *de;
    while ((de = readdir(dh))) {
        const char *n = de->d_name;
        if (strlen(n) != 21 || strcmp(n + 16, ".json") != 0 || strspn(n, "0123456789abcdef") != 16)
            continue;
        strvec_push(out, n);
    }
    closedir(dh);
    if (out->n)
        qsort(out->v, out->n, sizeof(char *), cmp_desc);
}

int adp_history_record(struct adp_hist_entry *e, struct as_err *err)
{
    strbuf dir = SB_INIT;
    if (home_path(HOME_HISTORY_DIR, &dir, err) != 0 || fs_private_dir(dir.buf, err) != 0) {
        sb_release(&dir);
        return -1;
    }
    strvec names = STRVEC_INIT;
    list_names(dir.buf, &names);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    if (names.n) {
        uint64_t newest = strtoull(names.v[0], NULL, 16);
        if (ns <= newest)
            ns = newest + 1;
    }
    free(e->id);
    e->id = xasprintf("%016llx", (unsigned long long)ns);
    e->time_unix = (int64_t)ts.tv_sec;
    free(e->file);
    e->file = xasprintf("%s/%s.json", dir.buf, e->id);
    int rc = write_entry(e, e->file, err);
    /* Keep the newest 40 (the new one included). */
    for (size_t i = HISTORY_KEEP - 1; rc == 0 && i < names.n; i++) {
        strbuf p = SB_INIT;
        sb_addf(&p, "%s/%s", dir.buf, names.v[i]);
        unlink(p.buf);
        sb_release(&p);
    }
    strvec_clear(&names);
    sb_release(&dir);
    return rc;
}

static struct adp_hist_entry *parse_entry(const char *path, const json_t *j)
{
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "id")) ||
        !json_is_array(json_object_get(j, "files")))
        return NULL;
    struct adp_hist_entry *e = xcalloc(1, sizeof *e);
    e->id = xstrdup(json_string_value(json_object_get(j, "id")));
    e->time_unix = json_integer_value(json_object_get(j, "time_unix"));
    const char *s;
    e->scope = xstrdup((s = json_string_value(json_object_get(j, "scope"))) ? s : "");
    e->summary = xstrdup((s = json_string_value(json_object_get(j, "summary"))) ? s : "");
    e->operation = xstrdup((s = json_string_value(json_object_get(j, "operation"))) ? s : "");
    e->undone = json_is_true(json_object_get(j, "undone"));
    e->file = xstrdup(path);
    if (json_is_array(json_object_get(j, "skills")))
        e->skills = json_incref(json_object_get(j, "skills"));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "targets"), i, v) if (json_is_string(v))
        strvec_push(&e->targets, json_string_value(v));
    json_array_foreach(json_object_get(j, "files"), i, v)
    {
        const char *p = json_string_value(json_object_get(v, "path"));
        if (!p || p[0] != '/') {
            adp_hist_entry_free(e);
            return NULL;
        }
        struct adp_hist_file f = {0};
        f.path = xstrdup(p);
        sb_init(&f.before, 0);
        json_t *b = json_object_get(v, "before");
        const char *hex = json_string_value(json_object_get(v, "before_hex"));
        if (json_is_string(b)) {
            f.existed = true;
            sb_add(&f.before, json_string_value(b), json_string_length(b));
        } else if (hex && strlen(hex) % 2 == 0) {
            f.existed = true;
            size_t n = strlen(hex) / 2;
            sb_grow(&f.before, n);
            if (hex_decode(hex, (uint8_t *)f.before.buf, n) == 0)
                sb_setlen(&f.before, n);
        }
        f.label = xstrdup((s = json_string_value(json_object_get(v, "label"))) ? s : "");
        const char *m = json_string_value(json_object_get(v, "mode"));
        if (f.existed && m && strlen(m) == 4 && strspn(m, "01234567") == 4)
            f.mode = (unsigned)strtoul(m, NULL, 8) & 0777;
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(v, "created_dirs"), k,
                           d) if (json_is_string(d) && json_string_value(d)[0] == '/')
            strvec_push(&f.created_dirs, json_string_value(d));
        vec_push(&e->files, f);
    }
    return e;
}

int adp_history_list(adp_hist_list *out, struct as_err *err)
{
    strbuf dir = SB_INIT;
    if (home_path(HOME_HISTORY_DIR, &dir, err) != 0) {
        sb_release(&dir);
        return -1;
    }
    strvec names = STRVEC_INIT;
    /* Re-tightened on open, best effort: listing never fails on it (a
     * symlinked history/ is refused when the next entry is recorded). */
    struct as_err terr = AS_ERR_INIT;
    if (fs_is_dir(dir.buf))
        (void)fs_private_dir(dir.buf, &terr);
    list_names(dir.buf, &names);
    for (size_t i = 0; i < names.n; i++) {
        strbuf p = SB_INIT, text = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        sb_addf(&p, "%s/%s", dir.buf, names.v[i]);
        (void)fs_tighten_file(p.buf, 0600, &e2);
        if (fs_read_file(p.buf, HISTORY_ENTRY_MAX, 1, &text, &e2) == 0) {
            json_error_t je;
            json_t *j = json_loadb(text.buf, text.len, 0, &je);
            struct adp_hist_entry *e = parse_entry(p.buf, j);
            if (e)
                vec_push(out, e);
            json_decref(j);
        }
        sb_release(&p);
        sb_release_secure(&text);
    }
    strvec_clear(&names);
    sb_release(&dir);
    return 0;
}

int adp_history_mark_undone(struct adp_hist_entry *e, struct as_err *err)
{
    e->undone = true;
    return write_entry(e, e->file, err);
}
