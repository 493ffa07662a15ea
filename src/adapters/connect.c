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
    char *skip;
    strvec created_dirs;
};

static void ctarget_free(struct ctarget *t)
{
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

static int plan_one(struct ctarget *t, const struct mf_server *bridge, bool disconnect)
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
            t->changed = t->after.len != t->before.len ||
                         memcmp(t->after.buf, t->before.buf, t->after.len) != 0;
    }
    adp_rendered_release(&r);
    return rc2;
}

/* The targets: the CLIs named, else every detected one. CLIs without an MCP
 * config are named and skipped. */
typedef VEC(const struct adp_desc *) cdesc_list;

static int select_clis(const struct adp_registry *r, const struct adp_connect_opts *o,
                       cdesc_list *out, FILE *fp, struct as_err *err)
{
    bool named = o->ids && o->ids->n && !o->all;
    for (size_t i = 0; named && i < o->ids->n; i++)
        if (!adp_registry_find(r, o->ids->v[i]))
            return adp_unknown_id_err(r, o->ids->v[i], err);
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
    } else if (!t->changed) {
        state = o->disconnect ? "not_connected" : "already";
    } else if (o->disconnect) {
        state = t->written ? "disconnected" : "would_disconnect";
    } else {
        state = t->written ? "connected" : "would_connect";
    }
    json_object_set_new(row, "state", json_string(state));
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
    struct ctarget *T = xcalloc(descs.n + 1, sizeof *T);
    struct adp_hist_entry *h = xcalloc(1, sizeof *h);
    size_t n_changed = 0, n_written = 0, n_failed = 0;
    strbuf failed = SB_INIT;
    for (size_t i = 0; i < descs.n; i++) {
        struct ctarget *t = &T[i];
        t->d = descs.v[i];
        sb_init(&t->before, 0);
        sb_init(&t->after, 0);
        if (plan_one(t, &bridge, o->disconnect) != 0) {
            t->failed = true;
        } else if (t->changed) {
            n_changed++;
            if (o->write) {
                struct adp_i_write w = {t->path, t->after.buf, t->after.len,    t->existed,
                                        0600,    NULL,         &t->created_dirs};
                unsigned before_mode = t->existed ? adp_i_file_mode(t->path) : 0;
                if (adp_i_write_file(&w, &t->err) != 0) {
                    t->failed = true;
                } else {
                    t->written = true;
                    n_written++;
                    struct adp_hist_file f = {0};
                    f.path = xstrdup(t->path);
                    f.existed = t->existed;
                    f.mode = before_mode;
                    sb_init(&f.before, 0);
                    sb_add(&f.before, t->before.buf, t->before.len);
                    f.label = xasprintf("%s · gateway", t->d->display);
                    for (size_t k = 0; k < t->created_dirs.n; k++)
                        strvec_push(&f.created_dirs, t->created_dirs.v[k]);
                    vec_push(&h->files, f);
                    strvec_push(&h->targets, t->d->id);
                    json_t *e = adp_ledger_entry(ledger, t->d->id, true);
                    char hash[17];
                    adp_fnv1a64_hex(t->after.buf, t->after.len, hash);
                    json_object_set_new(e, "last_hash", json_string(hash));
                    if (o->disconnect)
                        json_object_del(e, "gateway");
                    else
                        json_object_set_new(e, "gateway", json_string(ADP_BRIDGE_NAME));
                    /* The binary registered, for doctor's check that it is still there. */
                    if (o->disconnect)
                        json_object_del(e, "gateway_command");
                    else
                        json_object_set_new(e, "gateway_command", json_string(cmd.buf));
                }
            }
        }
        if (t->failed) {
            n_failed++;
            sb_addf(&failed, "%s%s", failed.len ? ", " : "", t->d->id);
        }
    }

    for (size_t i = 0; o->report && i < descs.n; i++)
        json_array_append_new(o->report, report_row(&T[i], o));
    for (size_t i = 0; i < descs.n; i++) {
        struct ctarget *t = &T[i];
        strbuf dp = SB_INIT;
        if (t->path)
            adp_i_display_path(t->path, &dp);
        term_fprintf(out, "%s (%s)\n", t->d->display, dp.len ? dp.buf : t->d->config_path);
        sb_release(&dp);
        if (t->failed) {
            char buf[4096];
            term_fprintf(out, "  ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
            if (t->err.hint[0])
                term_fprintf(out, "    ↳ %s\n", t->err.hint);
            continue;
        }
        if (t->skip) {
            term_fprintf(out, "  %s\n", t->skip);
            continue;
        }
        if (!t->changed) {
            term_fprintf(out, "  ✓ %s\n", o->disconnect ? "not connected" : "already connected");
            continue;
        }
        strbuf diff = SB_INIT;
        size_t a, rr;
        adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, NULL, o->color, 8, &diff,
                 &a, &rr);
        fputs(diff.buf, out);
        sb_release(&diff);
        if (o->disconnect)
            term_fprintf(out, "  %s\n",
                         t->written ? "✓ gateway removed"
                                    : "→ would remove the "
                                      "gateway");
        else if (t->written)
            term_fprintf(out, "  ✓ gateway registered (agentstack mcp --auto-project%s)\n",
                         o->transparent ? " --transparent" : "");
        else
            term_fprintf(out, "  → would register the gateway\n");
    }

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
    for (size_t i = 0; i < descs.n; i++)
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
