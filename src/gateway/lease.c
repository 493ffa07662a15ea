/*
 * Toolset leases (docs/gateway.md): one toolset for one connection, held in memory.
 * Opening swaps the surface to exactly that toolset; closing returns a
 * toolset-declaring project to the control plane. No native file is written;
 * the only write into the project is lease_freeze's proposal into the
 * manifest, done with the format-preserving TOML editor under the
 * machine writer lock. A non-authoritative record under
 * $AGENTSTACK_HOME/leases/ feeds `agentstack lease status`.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/proc.h"
#include "base/lock.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "gateway/gw_int.h"
#include "gateway/sessions.h"
#include "trust/trust.h"

static json_t *pretty_result(json_t *o /* stolen */, bool is_error)
{
    strbuf t = SB_INIT;
    gw_pretty(o, &t);
    json_decref(o);
    json_t *r = gw_text_result(t.buf, is_error);
    sb_release(&t);
    return r;
}

static json_t *legacy_only(const char *tool)
{
    return gw_error_result("%s is legacy-only: a stateless (2026-07-28) request belongs to no "
                           "connection a lease could live in. Pin the default instead with "
                           "`agentstack toolset default <name> --write`, or launch with a "
                           "pinned toolset (`agentstack run <cli> --toolset <name>`).",
                           tool);
}

/* Field 22 of /proc/self/stat: this process's start time, in clock ticks. */
/* This process's start time (0 when unreadable), recorded with its pid. */
static long long start_token(void)
{
    long long v = proc_start_ticks(0);
    return v < 0 ? 0 : v;
}

static void registry_delete(struct gw_lease *l)
{
    if (l->registry_path) {
        unlink(l->registry_path);
        free(l->registry_path);
        l->registry_path = NULL;
    }
}

/* Writes the lease record; returns NULL or a note saying why it could not. */
static char *registry_write(struct gw *gw)
{
    struct gw_lease *l = &gw->lease;
    strbuf dir = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (home_ensure(HOME_LEASES_DIR, &dir, &err) < 0) {
        sb_release(&dir);
        return xasprintf("the lease record could not be written (%s); `agentstack lease "
                         "status` will not show it",
                         err.msg);
    }
    char *path = xasprintf("%s/%s.json", dir.buf, l->instance);
    json_t *o = json_object();
    json_object_set_new(o, "instance", json_string(l->instance));
    json_object_set_new(o, "project", json_string(gw->proj.root));
    json_object_set_new(o, "toolset", json_string(l->profile));
    json_object_set_new(o, "pid", json_integer((json_int_t)getpid()));
    json_object_set_new(o, "start_token", json_integer(start_token()));
    json_object_set_new(o, "started_unix", json_integer(l->started_unix));
    strbuf t = SB_INIT;
    gw_pretty(o, &t);
    sb_addc(&t, '\n');
    json_decref(o);
    struct fs_write_opts wo = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
    char *note = NULL;
    if (fs_write_atomic(path, t.buf, t.len, &wo, &err) < 0) {
        note = xasprintf("the lease record could not be written (%s); `agentstack lease "
                         "status` will not show it",
                         err.msg);
        free(path);
    } else {
        l->registry_path = path;
    }
    sb_release(&t);
    sb_release(&dir);
    return note;
}

static void loads_clear(struct gw_lease *l)
{
    for (size_t i = 0; i < l->loads.n; i++) {
        free(l->loads.v[i].name);
        free(l->loads.v[i].reason);
    }
    vec_free(&l->loads);
}

void gw_lease_release(struct gw *gw)
{
    struct gw_lease *l = &gw->lease;
    registry_delete(l);
    loads_clear(l);
    free(l->profile);
    l->profile = NULL;
    l->active = false;
}

static bool gated_untrusted(struct gw *gw)
{
    return gw->proj.gated && gw->last_state != TRUST_TRUSTED;
}

/* The manifest this lease decision reads: the surface's, else fresh. */
static struct manifest *load_manifest(struct gw *gw, struct as_err *err)
{
    if (!gw->proj.found) {
        as_err_set(err, "no agentstack project is bound to this connection");
        return NULL;
    }
    return manifest_load(&gw->proj.paths, err);
}

/* Sets the lease (replacing any), rebuilds the surface. -1 + why on refusal. */
static int lease_set(struct gw *gw, const char *profile, char **registry_note, strbuf *why)
{
    struct as_err err = AS_ERR_INIT;
    /* A native session already wrote its toolset into the harness's files
     * here; a lease on top would serve a second, different surface.
     * An unreadable record refuses too: it may hold an active session. */
    strbuf sess = SB_INIT;
    int active = gw_native_session(gw, &sess, &err);
    if (active != 0) {
        if (active > 0) {
            sb_addf(why,
                    "a native session (toolset '%s') is active for this project; end it in a "
                    "terminal with `agentstack session end`, then open the lease",
                    sess.buf);
        } else {
            char buf[2300];
            sb_addf(why,
                    "cannot tell whether a native session is active for this project (%s); "
                    "check it with `agentstack session list` and end any with `agentstack "
                    "session end`",
                    as_err_str(&err, buf, sizeof buf));
        }
        sb_release(&sess);
        return -1;
    }
    sb_release(&sess);
    struct manifest *m = load_manifest(gw, &err);
    if (!m) {
        char buf[2300];
        sb_adds(why, as_err_str(&err, buf, sizeof buf));
        return -1;
    }
    if (!manifest_toolset(m, profile)) {
        sb_addf(why, "no toolset '%s' in manifest", profile);
        if (m->toolsets.n) {
            sb_adds(why, " (toolsets: ");
            for (size_t i = 0; i < m->toolsets.n; i++)
                sb_addf(why, "%s%s", i ? ", " : "", m->toolsets.v[i].name);
            sb_adds(why, ")");
        }
        manifest_free(m);
        return -1;
    }
    manifest_free(m);
    gw_lease_release(gw); /* a replaced lease's loads reset; its record goes */
    struct gw_lease *l = &gw->lease;
    l->active = true;
    l->profile = xstrdup(profile);
    l->started_unix = (long long)time(NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(l->instance, sizeof l->instance, "%x-%llx", (unsigned)getpid(),
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
    char *note = registry_write(gw);
    if (registry_note)
        *registry_note = note;
    else
        free(note);
    gw_rebuild(gw);
    return 0;
}

void gw_open_default(struct gw *gw)
{
    const struct gw_surface *sf = gw->cur;
    if (!sf || !sf->m)
        return;
    gw->default_decided = true;
    const struct mf_toolset *ts = manifest_effective_toolset(sf->m);
    if (!ts)
        return;
    char *name = xstrdup(ts->name);
    strbuf why = SB_INIT;
    if (lease_set(gw, name, NULL, &why) == 0)
        gw_note("opened the default toolset '%s'", name);
    else
        gw_note("the default toolset could not be opened: %s", why.buf);
    sb_release(&why);
    free(name);
}

/* --grant: the run's toolset was frozen before the harness started; nothing
 * over MCP may widen, narrow or rewrite it. */
json_t *gw_grant_fixed(struct gw *gw, const char *tool)
{
    return gw_error_result("%s is refused: this connection serves the frozen grant of run %s "
                           "(%s%s), which no lease, session or manifest edit can change",
                           tool, gw->grant->run_id, gw->grant->toolset ? "toolset " : "",
                           gw->grant->toolset ? gw->grant->toolset : "the whole bundle");
}

json_t *gw_lease_open(struct gw *gw, const json_t *args, bool modern)
{
    if (gw->grant || gw->grant_refused)
        return gw->grant ? gw_grant_fixed(gw, "agentstack_lease_open")
                         : gw_error_result("agentstack_lease_open is refused: this connection "
                                           "was started with a grant that was refused");
    if (modern)
        return legacy_only("agentstack_lease_open");
    const char *profile = json_string_value(json_object_get(args, "profile"));
    if (gated_untrusted(gw)) {
        strbuf subj = SB_INIT;
        gw_one_line(profile && *profile ? profile : "(none)", 100, &subj);
        strbuf what = SB_INIT;
        sb_addf(&what, "tried to open a toolset lease for '%s'", subj.buf);
        json_t *r = gw_trust_refusal(gw, "agentstack_lease_open", what.buf);
        sb_release(&subj);
        sb_release(&what);
        return r;
    }
    if (!profile || !*profile)
        return gw_error_result("`profile` is required");
    char *reg = NULL;
    strbuf why = SB_INIT;
    if (lease_set(gw, profile, &reg, &why) < 0) {
        json_t *r = gw_error_result("%s", why.buf);
        sb_release(&why);
        return r;
    }
    sb_release(&why);
    struct gw_lease *l = &gw->lease;
    const struct gw_surface *sf = gw->cur;
    json_t *o = json_object();
    json_object_set_new(o, "opened", json_string(l->profile));
    json_object_set_new(o, "delivery", json_string("mcp"));
    json_object_set_new(o, "lifetime", json_string("this MCP process"));
    json_object_set_new(o, "native_files_written", json_false());
    json_object_set_new(o, "instance", json_string(l->instance));
    json_object_set_new(o, "registry_note", reg ? json_string(reg) : json_null());
    strbuf note = SB_INIT;
    sb_addf(&note,
            "This connection now serves exactly toolset '%s' (%zu upstream server(s)); "
            "its skills load with agentstack_load. Nothing was written into the "
            "project.",
            l->profile, sf && sf->gate == GW_GATE_OPEN ? sf->ups.n : 0);
    json_object_set_new(o, "note", json_string(note.buf));
    sb_release(&note);
    free(reg);
    return pretty_result(o, false);
}

json_t *gw_lease_status(struct gw *gw)
{
    struct gw_lease *l = &gw->lease;
    json_t *o = json_object();
    if (!l->active && gw->grant) {
        json_object_set_new(o, "active", json_false());
        char *note = xasprintf("no lease: this connection serves the frozen grant of run %s "
                               "(%s%s)",
                               gw->grant->run_id, gw->grant->toolset ? "toolset " : "",
                               gw->grant->toolset ? gw->grant->toolset : "the whole bundle");
        json_object_set_new(o, "note", json_string(note));
        free(note);
        return pretty_result(o, false);
    }
    if (!l->active) {
        json_object_set_new(o, "active", json_false());
        json_object_set_new(o, "note", json_string("no active MCP toolset lease"));
        return pretty_result(o, false);
    }
    json_object_set_new(o, "active", json_true());
    json_object_set_new(o, "profile", json_string(l->profile));
    json_object_set_new(o, "instance", json_string(l->instance));
    json_object_set_new(o, "started_unix", json_integer(l->started_unix));
    json_t *loads = json_array();
    for (size_t i = 0; i < l->loads.n; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "name", json_string(l->loads.v[i].name));
        json_object_set_new(e, "reason", json_string(l->loads.v[i].reason));
        json_object_set_new(e, "ts", json_integer(l->loads.v[i].ts));
        json_array_append_new(loads, e);
    }
    json_object_set_new(o, "loads", loads);
    json_object_set_new(o, "native_files_written", json_false());
    return pretty_result(o, false);
}

json_t *gw_lease_close(struct gw *gw, bool modern)
{
    if (gw->grant)
        return gw_grant_fixed(gw, "agentstack_lease_close");
    if (modern)
        return legacy_only("agentstack_lease_close");
    struct gw_lease *l = &gw->lease;
    if (!l->active)
        return gw_error_result("no active MCP toolset lease");
    json_t *o = json_object();
    json_object_set_new(o, "closed", json_string(l->profile));
    json_t *names = json_array();
    for (size_t i = 0; i < l->loads.n; i++)
        json_array_append_new(names, json_string(l->loads.v[i].name));
    json_object_set_new(o, "loaded_skills", names);
    json_object_set_new(o, "native_restore_needed", json_false());
    gw_lease_release(gw);
    gw->lease_closed = true; /* never reopened by the default after this */
    gw_rebuild(gw);
    return pretty_result(o, false);
}

static toml_value *str_array(const strvec *v)
{
    toml_value *a = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < v->n; i++)
        toml_array_push(a, toml_new_string(v->v[i]));
    return a;
}

json_t *gw_lease_freeze(struct gw *gw, const json_t *args, bool modern)
{
    if (gw->grant || gw->grant_refused)
        return gw->grant ? gw_grant_fixed(gw, "agentstack_lease_freeze")
                         : gw_error_result("agentstack_lease_freeze is refused: this connection "
                                           "was started with a grant that was refused");
    if (modern)
        return legacy_only("agentstack_lease_freeze");
    struct gw_lease *l = &gw->lease;
    if (!l->active)
        return gw_error_result("no active MCP toolset lease to freeze — open one with "
                               "agentstack_lease_open first");
    const char *given = json_string_value(json_object_get(args, "name"));
    char *name = given && *given ? xstrdup(given) : xasprintf("%s-frozen", l->profile);
    json_t *res = NULL;
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = NULL;
    toml_edit *ed = NULL;
    strbuf text = SB_INIT;
    strvec servers = STRVEC_INIT, skills = STRVEC_INIT;
    struct as_lock lk = {-1};
    bool locked = false;
    if (!manifest_toolset_name_ok(name)) {
        strbuf n = SB_INIT;
        gw_one_line(name, 80, &n);
        res = gw_error_result("'%s' is not a usable toolset name ([A-Za-z0-9_.-], 1–64 chars)",
                              n.buf);
        sb_release(&n);
        goto out;
    }
    /* One writer at a time under $AGENTSTACK_HOME, and the bytes edited are
     * the bytes read inside the lock. */
    if (lock_acquire(&lk, gw->home, LOCK_WAIT_MS, &err) < 0) {
        res = gw_error_result("%s", err.msg);
        goto out;
    }
    locked = true;
    m = load_manifest(gw, &err);
    if (!m) {
        char buf[2300];
        res = gw_error_result("%s", as_err_str(&err, buf, sizeof buf));
        goto out;
    }
    if (manifest_toolset(m, name)) {
        res =
            gw_error_result("toolset '%s' already exists in %s — pick another name", name, m->path);
        goto out;
    }
    const struct mf_toolset *ts = manifest_toolset(m, l->profile);
    for (size_t i = 0; ts && i < ts->servers.n; i++)
        strvec_push(&servers, ts->servers.v[i]);
    for (size_t i = 0; i < l->loads.n; i++)
        if (strcmp(l->loads.v[i].name, GW_MANUAL_NAME) != 0 &&
            strvec_find(&skills, l->loads.v[i].name) < 0)
            strvec_push(&skills, l->loads.v[i].name);
    if (!skills.n)
        for (size_t i = 0; ts && i < ts->skills.n; i++)
            strvec_push(&skills, ts->skills.v[i]);
    if (!servers.n && !skills.n) {
        res = gw_error_result("nothing to freeze: toolset '%s' has no servers and no skills "
                              "were loaded",
                              l->profile);
        goto out;
    }
    if (fs_read_file(gw->proj.paths.manifest, MANIFEST_MAX_BYTES, 0, &text, &err) < 0) {
        res = gw_error_result("%s", err.msg);
        goto out;
    }
    ed = toml_edit_open(gw->proj.paths.manifest, text.buf, text.len, &err);
    if (!ed) {
        res = gw_error_result("%s", err.msg);
        goto out;
    }
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "servers", str_array(&servers));
    toml_table_set(tab, "skills", str_array(&skills));
    const char *key = m->toolsets_legacy ? "profiles" : "toolsets";
    const char *path[2] = {key, name};
    int rc = toml_edit_set_table(ed, path, 2, tab, &err);
    toml_free(tab);
    if (rc < 0) {
        res = gw_error_result("%s", err.msg);
        goto out;
    }
    size_t len;
    const char *out_text = toml_edit_text(ed, &len);
    struct fs_write_opts wo = {0644, FS_SYMLINK_FOLLOW, gw->proj.paths.project_root, NULL};
    if (fs_write_atomic(gw->proj.paths.manifest, out_text, len, &wo, &err) < 0) {
        res = gw_error_result("%s", err.msg);
        goto out;
    }
    strbuf msg = SB_INIT;
    sb_addf(&msg,
            "Froze lease '%s' as [%s.%s] in %s (servers: %zu, skills: %zu). The manifest "
            "changed; nothing was applied. Review the change, then run `agentstack lock "
            "--write`",
            l->profile, key, name, gw->proj.paths.manifest, servers.n, skills.n);
    if (gw->proj.gated)
        sb_addf(&msg, " and `agentstack trust %s` so auto mode serves it again", gw->proj.dir);
    sb_adds(&msg, ".");
    res = gw_text_result(msg.buf, false);
    sb_release(&msg);
out:
    if (locked)
        lock_release(&lk);
    if (ed)
        toml_edit_free(ed);
    if (m)
        manifest_free(m);
    sb_release(&text);
    strvec_clear(&servers);
    strvec_clear(&skills);
    free(name);
    return res;
}
