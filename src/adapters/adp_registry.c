/* registry — the built-in descriptors plus the user's drop-ins, path
 * expansion and detection. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/suggest.h"
#include "adapters/adapters.h"
#include "base/fs.h"
#include "base/xalloc.h"

#define DROPIN_MAX_FILES 256

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put(struct adp_registry *r, struct adp_desc *d)
{
    for (size_t i = 0; i < r->v.n; i++) {
        if (strcmp(r->v.v[i]->id, d->id) == 0) {
            adp_desc_free(r->v.v[i]);
            r->v.v[i] = d;
            return;
        }
    }
    vec_push(&r->v, d);
}

static void load_dropins(struct adp_registry *r)
{
    const char *ah = getenv("AGENTSTACK_HOME");
    strbuf dir = SB_INIT;
    if (ah && ah[0]) {
        sb_adds(&dir, ah);
    } else {
        const char *home = getenv("HOME");
        if (!home || !home[0])
            return;
        sb_addf(&dir, "%s/.agentstack", home);
    }
    sb_adds(&dir, "/adapters");
    DIR *dh = opendir(dir.buf);
    if (!dh) {
        if (errno != ENOENT && errno != ENOTDIR)
            strvec_pushf(&r->warnings, "cannot read %s: %s — drop-in adapters skipped", dir.buf,
                         strerror(errno));
        sb_release(&dir);
        return;
    }
    strvec names = STRVEC_INIT;
    struct dirent *de;
    while ((de = readdir(dh)) && names.n < DROPIN_MAX_FILES) {
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.' || n < 6 || strcmp(de->d_name + n - 5, ".yaml") != 0)
            continue;
        strvec_push(&names, de->d_name);
    }
    closedir(dh);
    if (names.n)
        qsort(names.v, names.n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        strbuf path = SB_INIT, text = SB_INIT;
        struct as_err e = AS_ERR_INIT;
        sb_addf(&path, "%s/%s", dir.buf, names.v[i]);
        struct adp_desc *d = NULL;
        if (fs_read_file(path.buf, (size_t)1 << 20, 0, &text, &e) == 0)
            d = adp_desc_parse(path.buf, text.buf, text.len, &e);
        if (d) {
            size_t idl = strlen(d->id);
            if (strlen(names.v[i]) != idl + 5 || strncmp(names.v[i], d->id, idl) != 0) {
                as_err_at(&e, path.buf, 0, 0,
                          "id '%s' does not match the file name (expected "
                          "%s.yaml)",
                          d->id, d->id);
                adp_desc_free(d);
                d = NULL;
            }
        }
        if (d) {
            put(r, d);
        } else {
            char buf[4096];
            strvec_pushf(&r->warnings, "skipping adapter drop-in: %s",
                         as_err_str(&e, buf, sizeof buf));
        }
        sb_release(&path);
        sb_release(&text);
    }
    strvec_clear(&names);
    sb_release(&dir);
}

int adp_registry_load(struct adp_registry *r, bool with_dropins, struct as_err *err)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < adp_builtin_count; i++) {
        const struct adp_builtin_src *b = &adp_builtin_yaml[i];
        char where[256];
        snprintf(where, sizeof where, "built-in adapters/%s", b->file);
        struct adp_desc *d = adp_desc_parse(where, b->text, b->len, err);
        if (!d) {
            adp_registry_free(r);
            return -1;
        }
        free(d->source);
        d->source = xstrdup("built-in");
        put(r, d);
    }
    if (with_dropins)
        load_dropins(r);
    return 0;
}

void adp_registry_free(struct adp_registry *r)
{
    for (size_t i = 0; i < r->v.n; i++)
        adp_desc_free(r->v.v[i]);
    vec_free(&r->v);
    strvec_clear(&r->warnings);
}

const struct adp_desc *adp_registry_find(const struct adp_registry *r, const char *id)
{
    for (size_t i = 0; i < r->v.n; i++)
        if (strcmp(r->v.v[i]->id, id) == 0)
            return r->v.v[i];
    return NULL;
}

int adp_registry_check_ids(const struct adp_registry *r, const strvec *ids, struct as_err *err)
{
    for (size_t i = 0; ids && i < ids->n; i++)
        if (!adp_registry_find(r, ids->v[i]))
            return adp_unknown_id_err(r, ids->v[i], err);
    return 0;
}

int adp_unknown_id_err(const struct adp_registry *r, const char *id, struct as_err *err)
{
    const char *best = NULL;
    size_t bd = 3;
    strbuf known = SB_INIT;
    for (size_t i = 0; i < r->v.n; i++) {
        size_t d = suggest_distance(id, r->v.v[i]->id, 2);
        if (d < bd) {
            bd = d;
            best = r->v.v[i]->id;
        }
        sb_addf(&known, "%s%s", i ? ", " : "", r->v.v[i]->id);
    }
    /* Not a typo but a short form ("claude", "copilot"): the first id that
     * starts with it and a dash, in registry order. */
    size_t idlen = strlen(id);
    for (size_t i = 0; !best && idlen >= 2 && i < r->v.n; i++)
        if (strncmp(r->v.v[i]->id, id, idlen) == 0 && r->v.v[i]->id[idlen] == '-')
            best = r->v.v[i]->id;
    if (best)
        as_err_set(err, "unknown CLI '%s' — did you mean '%s'? (known: %s)", id, best, known.buf);
    else
        as_err_set(err, "unknown CLI '%s' (known: %s)", id, known.buf);
    as_err_hint(err, "to add a CLI of your own, write $AGENTSTACK_HOME/adapters/%s.yaml", id);
    sb_release(&known);
    return -1;
}

int adp_expand_path(const char *p, const char *project_root, strbuf *out, struct as_err *err)
{
    sb_reset(out);
    if (strncmp(p, "~/", 2) == 0 || strncmp(p, "{config}/", 9) == 0) {
        const char *home = getenv("HOME");
        if (!home || !home[0])
            return as_err_set(err, "HOME is not set — cannot locate %s", p);
        if (p[0] == '~') {
            sb_addf(out, "%s/%s", home, p + 2);
        } else {
            const char *xdg = getenv("XDG_CONFIG_HOME");
            if (xdg && xdg[0] == '/')
                sb_addf(out, "%s/%s", xdg, p + 9);
            else
                sb_addf(out, "%s/.config/%s", home, p + 9);
        }
        return 0;
    }
    if (p[0] == '/') {
        sb_adds(out, p);
        return 0;
    }
    if (!project_root)
        return as_err_set(err, "%s is project-relative but there is no project", p);
    sb_addf(out, "%s/%s", project_root, p);
    return 0;
}

bool adp_bin_on_path(const char *bin)
{
    const char *path = getenv("PATH");
    if (!path || !bin || !bin[0] || strchr(bin, '/'))
        return false;
    strbuf c = SB_INIT;
    bool found = false;
    const char *s = path;
    for (;;) {
        const char *e = strchr(s, ':');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n > 0) {
            sb_reset(&c);
            sb_add(&c, s, n);
            sb_addf(&c, "/%s", bin);
            struct stat st;
            if (stat(c.buf, &st) == 0 && S_ISREG(st.st_mode) && access(c.buf, X_OK) == 0) {
                found = true;
                break;
            }
        }
        if (!e)
            break;
        s = e + 1;
    }
    sb_release(&c);
    return found;
}

static bool path_exists(const char *p, const char *root)
{
    strbuf x = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool ok = p && adp_expand_path(p, root, &x, &e) == 0 && fs_exists(x.buf);
    sb_release(&x);
    return ok;
}

bool adp_detected(const struct adp_desc *d, const char *project_root)
{
    if (d->detect_bin && adp_bin_on_path(d->detect_bin))
        return true;
    if (path_exists(d->detect_config, NULL) || path_exists(d->config_path, NULL))
        return true;
    return project_root && d->project_config && path_exists(d->project_config, project_root);
}
