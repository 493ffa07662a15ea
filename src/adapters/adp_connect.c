/* connect — register the live gateway (`agentstack mcp --auto-project`) as
 * one MCP server in every detected CLI (docs/adapters.md), through the
 * same renderer, merge engines, writer, ledger and history as apply. A CLI
 * holding the bridge then gets its servers live; apply renders for the rest. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "adapters/merge.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"

int adp_self_path(strbuf *out, struct as_err *err)
{
    strbuf self = SB_INIT;
    if (fs_realpath("/proc/self/exe", &self, err) != 0) {
        sb_release(&self);
        return -1;
    }
    /* A PATH entry that resolves to this binary reads better in a config and
     * survives a rebuild into the same place. */
    const char *path = getenv("PATH");
    bool found = false;
    for (const char *p = path; p && *p && !found;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n && p[0] == '/') {
            strbuf cand = SB_INIT, real = SB_INIT;
            struct as_err e = AS_ERR_INIT;
            sb_add(&cand, p, n);
            sb_adds(&cand, "/agentstack");
            if (access(cand.buf, X_OK) == 0 && fs_realpath(cand.buf, &real, &e) == 0 &&
                strcmp(real.buf, self.buf) == 0) {
                sb_add(out, cand.buf, cand.len);
                found = true;
            }
            sb_release(&cand);
            sb_release(&real);
        }
        p += n + (c ? 1 : 0);
    }
    if (!found)
        sb_add(out, self.buf, self.len);
    sb_release(&self);
    return 0;
}

/* Whether path is an executable regular file (symlinks followed). */
static bool runnable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int adp_gateway_binary(strbuf *out, strbuf *warning, struct as_err *err)
{
    strbuf self = SB_INIT;
    if (fs_realpath("/proc/self/exe", &self, err) != 0) {
        sb_release(&self);
        return -1;
    }
    /* 1. What a shell runs as `agentstack`: the first one on PATH. Kept as
     *    the PATH entry (a link `self link` re-points stays valid). */
    strbuf cand = SB_INIT;
    bool found = false;
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p && !found;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n && p[0] == '/') {
            sb_setlen(&cand, 0);
            sb_add(&cand, p, n);
            sb_adds(&cand, "/agentstack");
            found = runnable(cand.buf);
        }
        p += n + (c ? 1 : 0);
    }
    /* 2. Where `self link` puts it, when that directory is not on PATH. */
    const char *prefix = getenv("AGENTSTACK_PREFIX");
    const char *home = getenv("HOME");
    const char *dirs[] = {prefix && prefix[0] == '/' ? prefix : NULL, "/usr/local/bin",
                          home && home[0] == '/' ? home : NULL};
    for (size_t i = 0; !found && i < sizeof dirs / sizeof *dirs; i++) {
        if (!dirs[i])
            continue;
        sb_setlen(&cand, 0);
        sb_addf(&cand, i == 2 ? "%s/.local/bin/agentstack" : "%s/agentstack", dirs[i]);
        found = runnable(cand.buf);
    }
    if (found) {
        strbuf real = SB_INIT;
        struct as_err e = AS_ERR_INIT;
        if (warning && fs_realpath(cand.buf, &real, &e) == 0 && strcmp(real.buf, self.buf) != 0)
            sb_addf(warning,
                    "· registering %s (the installed agentstack), not the binary running now "
                    "(%s)",
                    cand.buf, self.buf);
        sb_release(&real);
        sb_add(out, cand.buf, cand.len);
    } else {
        if (warning)
            sb_addf(warning,
                    "⚠ no agentstack on PATH or where `agentstack self link` puts it: "
                    "registering the running binary %s — a rebuild or clean of that tree "
                    "breaks every CLI ↳ agentstack self link, then: agentstack connect --all "
                    "--write",
                    self.buf);
        sb_add(out, self.buf, self.len);
    }
    sb_release(&cand);
    sb_release(&self);
    return 0;
}

struct ctarget {
    const struct adp_desc *d;
    char *path;
    bool existed;
    strbuf before, after;
    struct as_err err;
    bool failed, changed, written;
    bool bridge_changed; /* the gateway entry itself is added, updated or removed */
    char *skip;
    strvec created_dirs;
    /* One delivery per server (oneway.c): the direct entries we rendered
     * that the gateway now serves, taken out of this file. A project file
     * (root set) gets a plan of its own: only those removals. */
    strvec pruned;
    char *key;  /* the ledger entry whose managed_servers they were */
    char *root; /* project root, or NULL for the CLI's user file */
    bool deleted;
};

static void ctarget_free(struct ctarget *t)
{
    strvec_clear(&t->pruned);
    free(t->key);
    free(t->root);
    free(t->path);
    sb_release_secure(&t->before);
    sb_release_secure(&t->after);
    free(t->skip);
    strvec_clear(&t->created_dirs);
}

/* True when the section holds our entry in the bridge's shape. */
static bool has_our_entry(const struct ctarget *t, const char *text, size_t len)
{
    const struct adp_desc *d = t->d;
    struct as_err e = AS_ERR_INIT;
    bool ours = false;
    if (d->config_format == ADP_FMT_TOML) {
        toml_value *root = toml_parse(t->path, text, len, &e);
        const toml_value *b = toml_get(toml_get(root, d->mcp.location), ADP_BRIDGE_NAME);
        const toml_value *args = b ? toml_get(b, d->mcp.f_args ? d->mcp.f_args : "args") : NULL;
        const toml_value *a0 = args ? toml_at(args, 0) : NULL;
        ours = a0 && a0->type == TOML_STRING && strcmp(a0->u.str.s, "mcp") == 0;
        toml_free(root);
    } else {
        json_t *sec = NULL;
        if (adp_json_read(t->path, text, len, d->config_format == ADP_FMT_JSONC, d->mcp.location,
                          &sec, &e) == 0) {
            json_t *b = json_object_get(sec, ADP_BRIDGE_NAME);
            /* Named agentstack is not enough to remove it: it must look like
             * the gateway (a command whose first argument is mcp). */
            json_t *c = json_object_get(b, d->mcp.f_command ? d->mcp.f_command : "command");
            json_t *a = json_object_get(b, d->mcp.f_args ? d->mcp.f_args : "args");
            const char *a0 = json_is_array(c) ? json_string_value(json_array_get(c, 1))
                                              : json_string_value(json_array_get(a, 0));
            ours = b && a0 && strcmp(a0, "mcp") == 0;
        }
        json_decref(sec);
    }
    return ours;
}

/* Whether the manifest that rendered a ledger entry still wants its
 * direct entries: it renders locally for this CLI, or it no longer loads
 * (then the gateway does not serve it either, so nothing is taken out). */
static bool keeps_direct(const char *key, const json_t *entry, const char *id)
{
    const char *at = strstr(key, "@project:");
    const char *src = json_string_value(json_object_get(entry, "source_manifest"));
    strbuf dir = SB_INIT;
    if (at) {
        sb_adds(&dir, at + strlen("@project:"));
    } else if (src && strrchr(src, '/')) {
        sb_add(&dir, src, (size_t)(strrchr(src, '/') - src));
    } else {
        sb_release(&dir);
        return true;
    }
    struct bundle_paths p = {0};
    struct as_err e = AS_ERR_INIT;
    struct manifest *m = NULL;
    if (discover_at(dir.buf, &p, &e) == 0 && p.found)
        m = manifest_load(&p, &e);
    bool keep = !m || manifest_render_locally(m, id);
    manifest_free(m);
    bundle_paths_free(&p);
    sb_release(&dir);
    return keep;
}

/* The names of entry's managed_servers that text (the file at path) holds. */
static void present_managed(const struct adp_desc *d, enum adp_format fmt, const char *path,
                            const strbuf *text, const json_t *entry, strvec *out)
{
    strvec managed = STRVEC_INIT, have = STRVEC_INIT;
    struct as_err e = AS_ERR_INIT;
    adp_ledger_names(entry, "managed_servers", &managed);
    if (managed.n && adp_i_section_names(d, fmt, path, text->buf, text->len, &have, &e) == 0)
        for (size_t i = 0; i < managed.n; i++)
            if (strvec_find(&have, managed.v[i]) >= 0)
                strvec_push(out, managed.v[i]);
    strvec_clear(&managed);
    strvec_clear(&have);
}

/* t->after without the names in t->pruned, into out. */
static int remove_entries(struct ctarget *t, enum adp_format fmt, strbuf *out)
{
    const char **rm = xcalloc(t->pruned.n + 1, sizeof *rm);
    for (size_t i = 0; i < t->pruned.n; i++)
        rm[i] = t->pruned.v[i];
    int rc;
    if (fmt == ADP_FMT_TOML) {
        rc = adp_toml_merge(t->path, t->after.buf, t->after.len, t->d->mcp.location, NULL, 0, rm,
                            t->pruned.n, out, &t->err);
    } else {
        struct adp_json_edit ed = {fmt == ADP_FMT_JSONC, t->d->mcp.location, NULL, 0, rm,
                                   t->pruned.n};
        rc = adp_json_merge(t->path, t->after.buf, t->after.len, &ed, out, &t->err);
    }
    free(rm);
    return rc;
}

static int plan_one(struct ctarget *t, const struct mf_server *bridge, bool disconnect,
                    const json_t *ledger)
{
    const struct adp_desc *d = t->d;
    strbuf p = SB_INIT;
    if (adp_expand_path(d->config_path, NULL, &p, &t->err) != 0) {
        sb_release(&p);
        return -1;
    }
    t->path = sb_detach(&p, NULL);
    struct stat st;
    if (stat(t->path, &st) == 0) {
        t->existed = true;
        if (!S_ISREG(st.st_mode))
            return as_err_set(&t->err, "%s is not a regular file — not written", t->path);
        if (fs_read_file(t->path, ADP_INPUT_MAX, 0, &t->before, &t->err) != 0)
            return -1;
    } else if (errno != ENOENT) {
        return as_err_errno(&t->err, "%s", t->path);
    }
    struct adp_rendered r;
    struct adp_render_ctx rc = {0};
    enum adp_format fmt = d->config_format;
    enum adp_render_status s = adp_render_server(d, fmt, bridge, &rc, &r, &t->err);
    int rc2 = 0;
    if (s == ADP_RENDER_SKIP) {
        t->skip = xasprintf("↳ skipping — %s", r.reason.buf);
    } else if (s != ADP_RENDER_OK) {
        rc2 = -1;
    } else {
        bool remove = disconnect && has_our_entry(t, t->before.buf, t->before.len);
        const char *rm[1] = {ADP_BRIDGE_NAME};
        if (disconnect && !remove) {
            sb_add(&t->after, t->before.buf, t->before.len);
        } else if (fmt == ADP_FMT_TOML) {
            struct adp_toml_entry u = {ADP_BRIDGE_NAME, r.toml};
            rc2 = adp_toml_merge(t->path, t->before.buf, t->before.len, d->mcp.location, &u,
                                 disconnect ? 0 : 1, rm, disconnect ? 1 : 0, &t->after, &t->err);
        } else {
            struct adp_json_entry u = {ADP_BRIDGE_NAME, r.json};
            struct adp_json_edit ed = {
                fmt == ADP_FMT_JSONC, d->mcp.location, &u, disconnect ? 0 : 1, rm,
                disconnect ? 1 : 0};
            rc2 = adp_json_merge(t->path, t->before.buf, t->before.len, &ed, &t->after, &t->err);
        }
        if (rc2 == 0)
            t->bridge_changed = t->after.len != t->before.len ||
                                memcmp(t->after.buf, t->before.buf, t->after.len) != 0;
        /* Connecting: the direct entries we rendered here go in the same
         * write — unless they came from the machine manifest, whose servers
         * the gateway does not serve. */
        const json_t *entry = json_object_get(json_object_get(ledger, "targets"), d->id);
        t->key = xstrdup(d->id);
        if (rc2 == 0 && !disconnect && entry && !adp_i_from_machine_manifest(entry) &&
            !keeps_direct(d->id, entry, d->id))
            present_managed(d, fmt, t->path, &t->after, entry, &t->pruned);
        if (rc2 == 0 && t->pruned.n) {
            strbuf next = SB_INIT;
            rc2 = remove_entries(t, fmt, &next);
            sb_release_secure(&t->after);
            t->after = next;
        }
        if (rc2 == 0)
            t->changed = t->after.len != t->before.len ||
                         memcmp(t->after.buf, t->before.buf, t->after.len) != 0;
    }
    adp_rendered_release(&r);
    return rc2;
}

/* A plan that only takes out of d's project file at root the direct
 * entries the ledger entry says we rendered there. 1 when there is
 * something to take out, 0 when not, -1 + t->err when the file is bad. */
static int plan_project_prune(struct ctarget *t, const char *key, const json_t *entry,
                              const char *root)
{
    const struct adp_desc *d = t->d;
    strbuf p = SB_INIT;
    if (!d->project_config || adp_expand_path(d->project_config, root, &p, &t->err) != 0) {
        sb_release(&p);
        return 0;
    }
    t->path = sb_detach(&p, NULL);
    t->key = xstrdup(key);
    t->root = xstrdup(root);
    struct stat st;
    if (lstat(t->path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0; /* gone, or not a file we wrote: nothing to take out */
    if (adp_i_contained(t->path, root, &t->err) != 0 ||
        fs_read_file(t->path, ADP_INPUT_MAX, 0, &t->before, &t->err) != 0)
        return -1;
    t->existed = true;
    present_managed(d, d->project_format, t->path, &t->before, entry, &t->pruned);
    if (!t->pruned.n)
        return 0;
    sb_add(&t->after, t->before.buf, t->before.len);
    strbuf next = SB_INIT;
    int rc = remove_entries(t, d->project_format, &next);
    sb_release_secure(&t->after);
    t->after = next;
    if (rc != 0)
        return -1;
    t->changed = true;
    /* As apply does: a project file left holding only the empty section goes. */
    t->deleted = adp_i_only_empty_section(d, d->project_format, t->path, &t->after);
    return 1;
}

/* Our entries in the ledger after t was written. */
static void record_one(struct ctarget *t, json_t *ledger, const struct adp_connect_opts *o,
                       const char *cmd)
{
    json_t *e = adp_ledger_entry(ledger, t->key ? t->key : t->d->id, true);
    char hash[17];
    adp_fnv1a64_hex(t->after.buf, t->after.len, hash);
    json_object_set_new(e, "last_hash", t->deleted ? json_null() : json_string(hash));
    if (t->pruned.n) {
        strvec managed = STRVEC_INIT, left = STRVEC_INIT;
        adp_ledger_names(e, "managed_servers", &managed);
        for (size_t i = 0; i < managed.n; i++)
            if (strvec_find(&t->pruned, managed.v[i]) < 0)
                strvec_push(&left, managed.v[i]);
        adp_ledger_set_names(e, "managed_servers", &left);
        strvec_clear(&managed);
        strvec_clear(&left);
    }
    if (t->root)
        return;
    if (o->disconnect)
        json_object_del(e, "gateway");
    else
        json_object_set_new(e, "gateway", json_string(ADP_BRIDGE_NAME));
    /* The binary registered, for doctor's check that it is still there. */
    if (o->disconnect)
        json_object_del(e, "gateway_command");
    else
        json_object_set_new(e, "gateway_command", json_string(cmd));
}

/* Writes (or, for a project file left empty, removes) t's file, with its
 * undo record and ledger entry. 0, or -1 with t->failed + t->err. */
static int write_one(struct ctarget *t, json_t *ledger, struct adp_hist_entry *h,
                     const struct adp_connect_opts *o, const char *cmd)
{
    unsigned before_mode = t->existed ? adp_i_file_mode(t->path) : 0;
    if (t->deleted) {
        strbuf backup = SB_INIT;
        struct fs_write_opts bo = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
        if (adp_backup_path(t->path, &backup, &t->err) != 0 ||
            fs_write_exact(backup.buf, t->before.buf, t->before.len, &bo, &t->err) != 0 ||
            unlink(t->path) != 0) {
            if (!as_err_isset(&t->err))
                as_err_errno(&t->err, "cannot remove %s", t->path);
            sb_release(&backup);
            t->failed = true;
            return -1;
        }
        sb_release(&backup);
    } else {
        struct adp_i_write w = {t->path, t->after.buf, t->after.len,    t->existed,
                                0600,    t->root,      &t->created_dirs};
        if (adp_i_write_file(&w, &t->err) != 0) {
            t->failed = true;
            return -1;
        }
    }
    t->written = true;
    struct adp_hist_file f = {0};
    f.path = xstrdup(t->path);
    f.existed = t->existed;
    f.mode = before_mode;
    sb_init(&f.before, 0);
    sb_add(&f.before, t->before.buf, t->before.len);
    f.label = xasprintf("%s · %s", t->d->display, t->root ? "direct entries" : "gateway");
    for (size_t k = 0; k < t->created_dirs.n; k++)
        strvec_push(&f.created_dirs, t->created_dirs.v[k]);
    vec_push(&h->files, f);
    strvec_push(&h->targets, t->d->id);
    record_one(t, ledger, o, cmd);
    return 0;
}

/* One CLI's (or project file's) lines. Removed direct entries are named,
 * never shown as a diff: rendered entries may hold resolved secret values. */
static void print_one(const struct ctarget *t, const struct adp_connect_opts *o, FILE *out)
{
    strbuf dp = SB_INIT;
    if (t->path)
        adp_i_display_path(t->path, &dp);
    term_fprintf(out, "%s (%s)\n", t->d->display, dp.len ? dp.buf : t->d->config_path);
    if (t->failed) {
        char buf[4096];
        term_fprintf(out, "  ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
        if (t->err.hint[0])
            term_fprintf(out, "    ↳ %s\n", t->err.hint);
    } else if (t->skip) {
        term_fprintf(out, "  %s\n", t->skip);
    } else if (!t->root && !t->bridge_changed) {
        term_fprintf(out, "  ✓ %s\n", o->disconnect ? "not connected" : "already connected");
    } else if (!t->pruned.n) {
        strbuf diff = SB_INIT;
        size_t a, rr;
        adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, NULL, o->color, 8, &diff,
                 &a, &rr);
        fputs(diff.buf, out);
        sb_release(&diff);
    }
    for (size_t i = 0; !t->failed && i < t->pruned.n; i++)
        term_fprintf(out, "  − %s '%s' (the gateway serves it — one delivery per server)\n",
                     t->written ? "removed" : "would remove", t->pruned.v[i]);
    if (!t->failed && t->root && t->deleted)
        term_fprintf(out, "  − %s empty %s\n", t->written ? "removed" : "would remove", dp.buf);
    sb_release(&dp);
    if (t->failed || t->skip || t->root || !t->bridge_changed)
        return;
    if (o->disconnect)
        term_fprintf(out, "  %s\n",
                     t->written ? "✓ gateway removed" : "→ would remove the gateway");
    else if (t->written)
        term_fprintf(out, "  ✓ gateway registered (agentstack mcp --auto-project%s)\n",
                     o->transparent ? " --transparent" : "");
    else
        term_fprintf(out, "  → would register the gateway\n");
}

/* The targets: the CLIs named, else every detected one. CLIs without an MCP
 * config are named and skipped. */
typedef VEC(const struct adp_desc *) cdesc_list;

static int select_clis(const struct adp_registry *r, const struct adp_connect_opts *o,
                       cdesc_list *out, FILE *fp, struct as_err *err)
{
    bool named = o->ids && o->ids->n && !o->all;
    if (named && adp_registry_check_ids(r, o->ids, err) < 0)
        return -1;
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        if (named ? strvec_find(o->ids, d->id) < 0 : !adp_detected(d, NULL))
            continue;
        if (!d->has_mcp || !d->config_path) {
            term_fprintf(fp, "· %s: no MCP config support — the gateway doesn't apply, skipped\n",
                         d->id);
            continue;
        }
        vec_push(out, d);
    }
    return 0;
}

/* One CLI's outcome for o->report (engine.h). */
static json_t *report_row(const struct ctarget *t, const struct adp_connect_opts *o)
{
    const char *state;
    json_t *row =
        json_pack("{s:s,s:s,s:s?}", "id", t->d->id, "display", t->d->display, "path", t->path);
    if (t->failed) {
        char buf[4096];
        state = "failed";
        json_object_set_new(row, "error", json_string(as_err_str(&t->err, buf, sizeof buf)));
    } else if (t->skip) {
        state = "skipped";
        json_object_set_new(row, "note", json_string(t->skip));
    } else if (t->root) {
        state = t->written ? "pruned" : "would_prune";
    } else if (!t->bridge_changed) {
        state = o->disconnect ? "not_connected" : "already";
    } else if (o->disconnect) {
        state = t->written ? "disconnected" : "would_disconnect";
    } else {
        state = t->written ? "connected" : "would_connect";
    }
    json_object_set_new(row, "state", json_string(state));
    if (t->pruned.n) {
        json_t *names = json_array();
        for (size_t i = 0; i < t->pruned.n; i++)
            json_array_append_new(names, json_string(t->pruned.v[i]));
        json_object_set_new(row, "pruned", names);
    }
    return row;
}

int adp_connect(const struct adp_registry *r, const struct adp_connect_opts *o, struct as_err *err)
{
    FILE *out = o->out ? o->out : stdout;
    cdesc_list descs = VEC_INIT;
    if (select_clis(r, o, &descs, out, err) != 0) {
        vec_free(&descs);
        return 2;
    }
    if (!descs.n) {
        vec_free(&descs);
        as_err_set(err, "no installed harness with MCP support detected");
        as_err_hint(err, "install a coding CLI (claude, codex, gemini, …) or name one: "
                         "agentstack connect <cli> --write");
        return 1;
    }
    strbuf cmd = SB_INIT, which = SB_INIT;
    if (o->command) {
        if (o->command[0] != '/') {
            vec_free(&descs);
            as_err_set(err, "--command must be an absolute path (got '%s')", o->command);
            return 2;
        }
        sb_adds(&cmd, o->command);
    } else if (adp_gateway_binary(&cmd, o->disconnect ? NULL : &which, err) != 0) {
        vec_free(&descs);
        sb_release(&cmd);
        sb_release(&which);
        return 1;
    }
    if (which.len)
        term_fprintf(out, "%s\n", which.buf);
    sb_release(&which);
    struct mf_server bridge = {0};
    bridge.name = (char *)ADP_BRIDGE_NAME;
    bridge.type = MF_SERVER_STDIO;
    bridge.command = cmd.buf;
    strvec_push(&bridge.args, "mcp");
    strvec_push(&bridge.args, "--auto-project");
    if (o->transparent)
        strvec_push(&bridge.args, "--transparent");

    struct as_lock lk = {-1};
    bool locked = false;
    json_t *ledger = NULL;
    int rc = 1;
    if (o->write) {
        if (adp_i_take_lock(&lk, err) != 0)
            goto out_early;
        locked = true;
    }
    if (adp_ledger_load(&ledger, err) != 0)
        goto out_early;
    char *ledger_before = json_dumps(ledger, JSON_SORT_KEYS | JSON_COMPACT);
    json_t *targets = json_object_get(ledger, "targets");
    struct ctarget *T = xcalloc(descs.n + json_object_size(targets) + 1, sizeof *T);
    size_t nT = descs.n;
    struct adp_hist_entry *h = xcalloc(1, sizeof *h);
    size_t n_changed = 0, n_written = 0, n_failed = 0, n_pruned = 0;
    strbuf failed = SB_INIT;
    for (size_t i = 0; i < descs.n; i++) {
        struct ctarget *t = &T[i];
        t->d = descs.v[i];
        sb_init(&t->before, 0);
        sb_init(&t->after, 0);
        if (plan_one(t, &bridge, o->disconnect, ledger) != 0)
            t->failed = true;
        /* The project files of a CLI now connected: the direct entries we
         * rendered there go too (oneway.c). */
        const char *key;
        json_t *e;
        size_t idlen = strlen(t->d->id);
        json_object_foreach(targets, key, e)
        {
            if (t->failed || t->skip || o->disconnect || strncmp(key, t->d->id, idlen) != 0 ||
                strncmp(key + idlen, "@project:", 9) != 0 || keeps_direct(key, e, t->d->id))
                continue;
            struct ctarget *p = &T[nT];
            p->d = t->d;
            sb_init(&p->before, 0);
            sb_init(&p->after, 0);
            int pr = plan_project_prune(p, key, e, key + idlen + 9);
            if (pr == 0) {
                ctarget_free(p);
                memset(p, 0, sizeof *p);
                continue;
            }
            p->failed = pr < 0;
            nT++;
        }
    }
    for (size_t i = 0; i < nT; i++) {
        struct ctarget *t = &T[i];
        if (!t->failed && t->changed) {
            n_changed++;
            n_pruned += t->pruned.n;
            if (o->write && write_one(t, ledger, h, o, cmd.buf) == 0)
                n_written++;
        }
        if (t->failed) {
            n_failed++;
            sb_addf(&failed, "%s%s", failed.len ? ", " : "", t->d->id);
        }
    }

    for (size_t i = 0; o->report && i < nT; i++)
        json_array_append_new(o->report, report_row(&T[i], o));
    for (size_t i = 0; i < nT; i++)
        print_one(&T[i], o, out);

    rc = 0;
    if (o->write && h->files.n) {
        h->scope = xstrdup("global");
        h->operation = xstrdup(o->disconnect ? "gateway disconnect" : "gateway connect");
        h->summary = xasprintf("%s %zu CLI%s", o->disconnect ? "disconnected" : "connected",
                               n_written, n_written == 1 ? "" : "s");
        struct as_err herr = AS_ERR_INIT;
        if (adp_history_record(h, &herr) != 0) {
            char buf[2048];
            term_fprintf(stderr, "warning: the undo history was not recorded: %s\n",
                         as_err_str(&herr, buf, sizeof buf));
        }
    }
    char *ledger_after = json_dumps(ledger, JSON_SORT_KEYS | JSON_COMPACT);
    if (o->write && strcmp(ledger_before, ledger_after) != 0 && adp_ledger_save(ledger, err) != 0)
        rc = 1;
    free(ledger_after);
    free(ledger_before);

    if (n_pruned)
        term_fprintf(out,
                     "%s %zu direct server entr%s the gateway now serves (one delivery per "
                     "server).\n",
                     o->write ? "Removed" : "Would remove", n_pruned, n_pruned == 1 ? "y" : "ies");
    if (o->write && n_written)
        term_fprintf(out,
                     "Updated %zu harness config%s.\nRestart the affected CLIs to load the "
                     "change. undo: agentstack restore --last --write\n",
                     n_written, n_written == 1 ? "" : "s");
    else if (!o->write && n_changed)
        term_fprintf(out, "%zu harness config%s would change. Re-run with --write to apply.\n",
                     n_changed, n_changed == 1 ? "" : "s");
    else if (!n_failed)
        term_fprintf(out, "Nothing to change.\n");
    if (n_failed) {
        as_err_set(err, "write failed on %zu target(s): %s — see ✗ above", n_failed, failed.buf);
        rc = 1;
    }
    sb_release(&failed);
    adp_hist_entry_free(h);
    for (size_t i = 0; i < nT; i++)
        ctarget_free(&T[i]);
    free(T);
out_early:
    json_decref(ledger);
    if (locked)
        lock_release(&lk);
    strvec_clear(&bridge.args);
    sb_release(&cmd);
    vec_free(&descs);
    return rc;
}
