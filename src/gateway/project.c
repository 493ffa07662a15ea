/*
 * Which project a connection serves (docs/gateway.md), and whether it may be served
 * right now: discovery, the inotify watch on the consent
 * inputs, the trust verdict, and the surface swaps that follow from it.
 *
 * The verdict is recomputed from fresh bytes (snapshot + trust.json) when
 * inotify reports any event on the manifest, overlay, lock, trust store or
 * machine manifest (files and their directories, so renames are seen), and
 * unconditionally when the last check is 2 s old. There is no stat-based
 * shortcut and no cached digest beyond that window.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/hex.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "gateway/gw_int.h"
#include "trust/trust.h"

#define WATCH_MASK                                                                                 \
    (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE |            \
     IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)

/* ---- discovery ------------------------------------------------------------------ */

/* file://[host]/path → /path, %XX decoded; NULL for anything else. */
static char *file_uri_path(const char *uri)
{
    if (!uri || strncmp(uri, "file://", 7) != 0)
        return NULL;
    const char *p = uri + 7;
    p = strchr(p, '/'); /* the host, if any, is dropped */
    if (!p)
        return NULL;
    strbuf out = SB_INIT;
    for (; *p && *p != '?' && *p != '#'; p++) {
        if (*p == '%' && hex_digit_value(p[1]) >= 0 && hex_digit_value(p[2]) >= 0) {
            char c = (char)(hex_digit_value(p[1]) * 16 + hex_digit_value(p[2]));
            if (c == '\0') {
                sb_release(&out);
                return NULL;
            }
            sb_addc(&out, c);
            p += 2;
        } else {
            sb_addc(&out, *p);
        }
    }
    return sb_detach(&out, NULL);
}

static bool try_walk(struct gw *gw, const char *start, const char *how)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    if (discover_walk(start, &p, &err) == 1 && p.found) {
        gw->proj.paths = p;
        gw->proj.found = true;
        gw->proj.how = how;
        return true;
    }
    bundle_paths_free(&p);
    return false;
}

static void bind_found(struct gw *gw)
{
    struct gw_project *pr = &gw->proj;
    strbuf root = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (fs_realpath(pr->paths.project_root, &root, &err) < 0) {
        sb_reset(&root);
        sb_adds(&root, pr->paths.project_root);
    }
    pr->root = sb_detach(&root, NULL);
    pr->dir = xstrdup(pr->paths.base);
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(pr->root, strlen(pr->root), hex);
    hex[12] = '\0';
    pr->root_sha12 = xstrdup(hex);
}

void gw_project_resolve(struct gw *gw)
{
    struct gw_project *pr = &gw->proj;
    if (pr->resolved)
        return;
    pr->resolved = true;
    pr->gated = gw->o.auto_project && !gw->o.manifest_dir;
    struct as_err err = AS_ERR_INIT;
    if (gw->grant_refused) {
        return; /* control plane only: a refused grant names no project we believe */
    } else if (gw->grant) {
        /* The grant names its project; it must still be the same directory. */
        struct bundle_paths p = {0};
        strbuf root = SB_INIT;
        if (discover_at(gw->grant->manifest_dir, &p, &err) == 0 && p.found &&
            fs_realpath(p.project_root, &root, &err) == 0 &&
            strcmp(root.buf, gw->grant->project_root) == 0) {
            pr->paths = p;
            pr->found = true;
            pr->how = "grant";
        } else {
            bundle_paths_free(&p);
            gw_note("--grant: the project the grant names (%s) is not there any more; serving "
                    "the control plane only",
                    gw->grant->project_root);
        }
        sb_release(&root);
    } else if (gw->o.manifest_dir) {
        struct bundle_paths p = {0};
        if (discover_at(gw->o.manifest_dir, &p, &err) == 0 && p.found) {
            pr->paths = p;
            pr->found = true;
            pr->how = "manifest-dir";
        } else {
            bundle_paths_free(&p);
            gw_note("--manifest-dir %s: no agentstack manifest there; serving the control "
                    "plane only",
                    gw->o.manifest_dir);
        }
    } else if (!gw->o.auto_project) {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd))
            try_walk(gw, cwd, "cwd");
    } else {
        /* Auto: roots (first file:// root only), then the env, then cwd. */
        json_t *r0 = json_array_get(gw->roots_answer, 0);
        char *path = file_uri_path(json_string_value(json_object_get(r0, "uri")));
        if (path && !try_walk(gw, path, "roots"))
            gw_note("the client's first root (%s) holds no agentstack project", path);
        free(path);
        const char *env = getenv("AGENTSTACK_MANIFEST_DIR");
        if (!pr->found && env && *env) {
            struct bundle_paths p = {0};
            if (discover_at(env, &p, &err) == 0 && p.found && !discover_is_machine_home(p.base)) {
                pr->paths = p;
                pr->found = true;
                pr->how = "env";
            } else {
                bundle_paths_free(&p);
            }
        }
        char cwd[PATH_MAX];
        if (!pr->found && getcwd(cwd, sizeof cwd))
            try_walk(gw, cwd, "cwd");
    }
    if (!pr->found) {
        gw_note("no agentstack project found; serving the control plane only");
        return;
    }
    bind_found(gw);
    gw_watch_init(gw);
}

void gw_project_free(struct gw *gw)
{
    struct gw_project *pr = &gw->proj;
    if (pr->found)
        bundle_paths_free(&pr->paths);
    free(pr->root);
    free(pr->dir);
    free(pr->root_sha12);
    if (gw->ino_fd >= 0) {
        mcp_loop_del(gw->loop, gw->ino_fd);
        close(gw->ino_fd);
        gw->ino_fd = -1;
    }
    if (gw->code_fd >= 0) {
        mcp_loop_del(gw->loop, gw->code_fd);
        close(gw->code_fd);
        gw->code_fd = -1;
    }
}

/* ---- the watch -------------------------------------------------------------------- */

/* Watch descriptors: 0..2 project dir + files, 3.. home; kept small. */
struct wd_ent {
    int wd;
    int kind; /* 0 project dir, 1 project file, 2 home dir, 3 trust file, 4 machine file */
};
static struct wd_ent g_wds[16];
static size_t g_nwd;

static void add_watch(struct gw *gw, const char *path, int kind)
{
    int wd = inotify_add_watch(gw->ino_fd, path, WATCH_MASK);
    if (wd < 0)
        return;
    for (size_t i = 0; i < g_nwd; i++)
        if (g_wds[i].wd == wd) {
            g_wds[i].kind = kind;
            return;
        }
    if (g_nwd < sizeof g_wds / sizeof g_wds[0])
        g_wds[g_nwd++] = (struct wd_ent){wd, kind};
}

static void rewatch(struct gw *gw)
{
    if (gw->ino_fd < 0)
        return;
    const struct bundle_paths *p = &gw->proj.paths;
    add_watch(gw, p->manifest_dir, 0);
    add_watch(gw, p->manifest, 1);
    add_watch(gw, p->overlay, 1);
    add_watch(gw, p->lock, 1);
    add_watch(gw, gw->home, 2);
    char *t = xasprintf("%s/trust.json", gw->home);
    add_watch(gw, t, 3);
    free(t);
    char *mm = xasprintf("%s/agentstack.toml", gw->home);
    add_watch(gw, mm, 4);
    free(mm);
}

static void on_inotify(struct mcp_loop *loop, int fd, unsigned ev, void *ctx)
{
    (void)loop;
    (void)fd;
    (void)ev;
    gw_watch_drain(ctx);
}

void gw_watch_init(struct gw *gw)
{
    g_nwd = 0;
    gw->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (gw->ino_fd < 0) {
        gw_note("inotify unavailable (%s); re-checking trust on every request", strerror(errno));
        return;
    }
    strbuf h = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    home_ensure(HOME_ROOT_DIR, &h, &err); /* so the trust store's directory can be watched */
    sb_release(&h);
    rewatch(gw);
    struct as_err e2 = AS_ERR_INIT;
    if (mcp_loop_add(gw->loop, gw->ino_fd, MCP_EV_IN, on_inotify, gw, &e2) < 0)
        gw_note("cannot watch for changes: %s", e2.msg);
    gw->ino_dirty = true;
}

static bool name_is(const char *name, const char *base)
{
    return name && strcmp(name, base) == 0;
}

void gw_watch_drain(struct gw *gw)
{
    if (gw->ino_fd < 0) {
        gw->ino_dirty = true; /* no watch: every request re-checks */
        return;
    }
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(gw->ino_fd, buf, sizeof buf);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            p += sizeof *e + e->len;
            const char *name = e->len ? e->name : NULL;
            if (e->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                gw->ino_dirty = gw->machine_dirty = true;
                continue;
            }
            int kind = -1;
            for (size_t i = 0; i < g_nwd; i++)
                if (g_wds[i].wd == e->wd)
                    kind = g_wds[i].kind;
            switch (kind) {
            case 0:
                if (name_is(name, BUNDLE_MANIFEST_NAME) || name_is(name, BUNDLE_OVERLAY_NAME) ||
                    name_is(name, BUNDLE_LOCK_NAME))
                    gw->ino_dirty = true;
                break;
            case 2:
                if (name_is(name, "trust.json"))
                    gw->ino_dirty = true;
                if (name_is(name, "agentstack.toml"))
                    gw->machine_dirty = true;
                break;
            case 4:
                gw->machine_dirty = true;
                break;
            default:
                gw->ino_dirty = true;
                break;
            }
        }
    }
}

/* ---- trust -------------------------------------------------------------------------- */

void gw_trust_note(struct gw *gw, int state, strbuf *out)
{
    const char *dir = gw->proj.dir ? gw->proj.dir : "(no project)";
    if (!gw->proj.found) {
        sb_adds(out, "No agentstack project is bound to this connection, so no upstream MCP "
                     "servers are proxied.");
    } else if (state == TRUST_CHANGED) {
        sb_addf(out,
                "This project (%s) changed since it was trusted: its manifest, local overlay or "
                "lock differ from the reviewed bytes, so none of its MCP servers are proxied. "
                "A person reviews the change and runs `agentstack trust %s` in a terminal.",
                dir, dir);
    } else if (state == -1) {
        sb_addf(out,
                "The trust state of this project (%s) cannot be read, so none of its MCP "
                "servers are proxied (fail closed). Check its files, then run `agentstack "
                "trust %s` in a terminal.",
                dir, dir);
    } else {
        sb_addf(out,
                "This project (%s) is not trusted for auto mode, so none of its MCP servers "
                "are proxied: nothing was spawned, contacted or resolved. A person reviews it "
                "and runs `agentstack trust %s` in a terminal; nothing over MCP can do that.",
                dir, dir);
    }
}

/* Fresh verdict into gw->last_*; snap (when non-NULL) keeps the bytes. */
static void verdict(struct gw *gw, struct manifest_snapshot *snap)
{
    struct as_err err = AS_ERR_INIT;
    struct trust_status st = {0};
    gw->last_hash = mcp_now_ms();
    if (manifest_snapshot_read(&gw->proj.paths, snap, &err) < 0 || !snap->has_manifest ||
        trust_check_snapshot(&gw->proj.paths, snap, &st, &err) < 0) {
        gw->last_state = -1;
        gw->last_digest[0] = '\0';
        trust_status_release(&st);
        return;
    }
    if (gw->last_state != (int)st.state || strcmp(gw->last_digest, st.digest) != 0)
        gw->gen++; /* the stateless era re-derives its default from these bytes */
    gw->last_state = (int)st.state;
    snprintf(gw->last_digest, sizeof gw->last_digest, "%s", st.digest);
    trust_status_release(&st);
}

int gw_trust_now(struct gw *gw, char digest[CONSENT_DIGEST_LEN + 1], const char **why)
{
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    verdict(gw, &snap);
    manifest_snapshot_release(&snap);
    snprintf(digest, CONSENT_DIGEST_LEN + 1, "%s", gw->last_digest);
    if (gw->last_state == TRUST_TRUSTED)
        return 1;
    *why = gw->last_state == TRUST_CHANGED ? "changed"
           : gw->last_state == -1          ? "unreadable"
                                           : "untrusted";
    return 0;
}

static void swap(struct gw *gw, struct gw_surface *sf)
{
    if (gw->cur)
        gw_surface_unref(gw->cur);
    gw->cur = sf;
    gw->gen++;
    gw_cm_sync(gw);
}

static struct gw_surface *untrusted_surface(struct gw *gw, int state)
{
    strbuf note = SB_INIT;
    gw_trust_note(gw, state, &note);
    struct gw_surface *sf = gw_surface_gated(gw, GW_GATE_UNTRUSTED, note.buf);
    sb_release(&note);
    if (!gw->stderr_said_untrusted) {
        gw->stderr_said_untrusted = true;
        gw_note("%s", sf->note);
    }
    return sf;
}

bool gw_grant_anchored(const struct gw *gw)
{
    return gw->grant && gw->last_state == TRUST_TRUSTED &&
           strcmp(gw->last_digest, gw->grant->consent_digest) == 0;
}

const char *gw_fence_label(const struct gw *gw)
{
    if (gw->lease.active)
        return gw->lease.profile;
    if (gw->grant)
        return gw->grant->toolset ? gw->grant->toolset : gw->grant->run_id;
    return NULL;
}

/* A grant whose project is no longer trusted at the frozen digest serves
 * nothing: no secret is resolved for bytes nobody admitted, and a call to a
 * fenced server says why (with a `trust` row), as a re-gate does. */
static struct gw_surface *grant_regated(struct gw *gw)
{
    struct gw_surface *sf = gw_surface_gated(gw, GW_GATE_REGATED, NULL);
    sf->regate_why = xstrdup(gw->last_state == TRUST_UNTRUSTED ? "revoked"
                             : gw->last_state == -1            ? "unreadable"
                                                               : "changed");
    for (size_t i = 0; i < gw->grant->servers.n; i++)
        strvec_push(&sf->prior, gw->grant->servers.v[i]);
    sf->note = xasprintf("This connection serves the frozen grant of run %s, but the project "
                         "(%s) is no longer trusted at the digest the run was admitted at (%s), "
                         "so none of its MCP servers are proxied.",
                         gw->grant->run_id, gw->proj.dir, sf->regate_why);
    gw_note("%s", sf->note);
    return sf;
}

static struct gw_surface *build_from(struct gw *gw, const struct manifest_snapshot *snap)
{
    struct gw_build_in in = {0};
    if (gw->grant) {
        if (!gw_grant_anchored(gw))
            return grant_regated(gw);
        in.servers = &gw->grant->servers;
        in.ruleset_json = gw->grant->ruleset_json;
        in.trusted = true;
        in.digest = gw->grant->consent_digest;
        in.snap = snap;
        return gw_surface_build(gw, &in);
    }
    in.toolset = gw->lease.active ? gw->lease.profile : NULL;
    /* Every mode fences (docs/gateway.md "One dispatch"): a project that
     * declares toolsets serves none of them until a lease (or its default)
     * selects one — naming the project with --manifest-dir is consent to
     * run it, not a wider surface than the project itself asks for. */
    in.fence = true;
    in.trusted = gw->last_state == TRUST_TRUSTED;
    in.digest = gw->last_digest;
    in.snap = snap;
    return gw_surface_build(gw, &in);
}

void gw_rebuild(struct gw *gw)
{
    if (!gw->proj.found)
        return;
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    verdict(gw, &snap);
    gw->ino_dirty = false;
    if (gw->proj.gated && gw->last_state != TRUST_TRUSTED)
        swap(gw, untrusted_surface(gw, gw->last_state));
    else if (gw->last_state == -1 && !snap.has_manifest)
        swap(gw, gw_surface_gated(gw, GW_GATE_BROKEN,
                                  "The project manifest cannot be read, so none of its MCP "
                                  "servers are proxied."));
    else
        swap(gw, build_from(gw, &snap));
    manifest_snapshot_release(&snap);
    gw_set_dirty(gw);
}

/* A grant whose run's process is gone (killed before it could record its
 * end) serves nothing from now on: a grant never outlives its run. */
static struct gw_surface *grant_ended(struct gw *gw)
{
    struct gw_surface *sf = gw_surface_gated(gw, GW_GATE_REGATED, NULL);
    sf->regate_why = xstrdup("ended");
    for (size_t i = 0; i < gw->grant->servers.n; i++)
        strvec_push(&sf->prior, gw->grant->servers.v[i]);
    sf->note = xasprintf("This connection served the frozen grant of run %s, but the run has "
                         "ended (its process is gone), so none of its MCP servers are proxied. "
                         "Start the run again with `agentstack run <cli> --locked`.",
                         gw->grant->run_id);
    gw_note("%s", sf->note);
    return sf;
}

static bool grant_ended_now(struct gw *gw)
{
    if (gw->cur && gw->cur->gate == GW_GATE_REGATED && gw->cur->regate_why &&
        strcmp(gw->cur->regate_why, "ended") == 0)
        return true;
    if (gw_grant_run_alive(gw->grant))
        return false;
    swap(gw, grant_ended(gw));
    gw_set_dirty(gw);
    return true;
}

void gw_refresh(struct gw *gw, bool modern, bool skip_default)
{
    (void)modern;
    /* Before anything else, every request: the run behind a grant must
     * still be alive (pid and start time, read from /proc). */
    if (gw->grant && grant_ended_now(gw))
        return;
    if (!gw->proj.found) {
        if (!gw->cur) {
            strbuf note = SB_INIT;
            gw_trust_note(gw, 0, &note);
            gw->cur = gw_surface_gated(gw, GW_GATE_NO_PROJECT, note.buf);
            sb_release(&note);
        }
        return;
    }
    gw_watch_drain(gw);
    uint64_t now = mcp_now_ms();
    bool need =
        !gw->cur || gw->ino_dirty || gw->machine_dirty || now - gw->last_hash >= GW_REHASH_MS;
    if (need) {
        bool machine_changed = gw->machine_dirty;
        gw->ino_dirty = gw->machine_dirty = false;
        if (machine_changed) {
            gw->machine_gen++;
            gw->gen++;
        }
        int prev_state = gw->last_state;
        char prev_digest[CONSENT_DIGEST_LEN + 1];
        memcpy(prev_digest, gw->last_digest, sizeof prev_digest);
        struct manifest_snapshot snap;
        manifest_snapshot_init(&snap);
        verdict(gw, &snap);
        rewatch(gw); /* files created since (a first lock) get their own watch */
        struct gw_surface *cur = gw->cur;
        if (gw->proj.gated) {
            if (gw->last_state != TRUST_TRUSTED) {
                if (cur && cur->gate == GW_GATE_OPEN) {
                    /* Trust lost mid-connection: an empty surface that still knows
                     * what it served, so calls to it say why they stopped. */
                    struct gw_surface *sf = gw_surface_gated(gw, GW_GATE_REGATED, NULL);
                    sf->regate_why = xstrdup(gw->last_state == TRUST_UNTRUSTED ? "revoked"
                                             : gw->last_state == -1            ? "unreadable"
                                                                               : "changed");
                    for (size_t i = 0; i < cur->ups.n; i++)
                        strvec_push(&sf->prior, cur->ups.v[i]->name);
                    strbuf note = SB_INIT;
                    gw_trust_note(gw, gw->last_state, &note);
                    sf->note = sb_detach(&note, NULL);
                    gw_note("trust for %s is gone (%s); the live surface is now empty",
                            gw->proj.dir, sf->regate_why);
                    swap(gw, sf);
                    gw_set_dirty(gw);
                } else if (!cur || (cur->gate != GW_GATE_REGATED && prev_state != gw->last_state)) {
                    swap(gw, untrusted_surface(gw, gw->last_state));
                    if (prev_state != -2)
                        gw_set_dirty(gw);
                }
            } else if (!cur || cur->gate != GW_GATE_OPEN || machine_changed ||
                       strcmp(cur->anchor, gw->last_digest) != 0) {
                if (cur && cur->gate != GW_GATE_OPEN)
                    gw_note("%s is trusted; serving its servers", gw->proj.dir);
                swap(gw, build_from(gw, &snap));
                if (cur)
                    gw_set_dirty(gw);
            }
        } else if (gw->grant) {
            /* The ruleset is frozen: a machine edit changes nothing here. A
             * project that regained the frozen digest is served again. */
            if (cur && cur->gate == GW_GATE_REGATED && cur->regate_why &&
                strcmp(cur->regate_why, "ended") == 0) {
                /* the run is gone for good: nothing brings the grant back */
            } else if (!cur || (cur->gate == GW_GATE_REGATED && gw_grant_anchored(gw))) {
                swap(gw, build_from(gw, &snap));
                if (cur)
                    gw_set_dirty(gw);
            }
        } else if (!cur || machine_changed) {
            swap(gw, build_from(gw, &snap));
            if (cur)
                gw_set_dirty(gw);
        }
        (void)prev_digest;
        manifest_snapshot_release(&snap);
    }
    /* The default toolset opens by itself in every mode, on the
     * connection's legacy surface (the stateless era holds no lease: it
     * derives the default again per request, see modern_surface). Never
     * after an explicit close. */
    if (!gw->grant && !modern && !skip_default && !gw->lease.active && !gw->default_decided &&
        !gw->lease_closed && gw->cur && gw->cur->gate == GW_GATE_OPEN)
        gw_open_default(gw);
}

/* The stateless era has no connection to hold a lease: every request
 * re-derives the default toolset from the bytes on disk, so the
 * surface follows a changed default while the legacy lease stays put. */
static struct gw_surface *modern_surface(struct gw *gw)
{
    if (gw->modern && gw->modern_gen == gw->gen)
        return gw->modern;
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = NULL;
    if (manifest_snapshot_read(&gw->proj.paths, &snap, &err) == 0)
        m = manifest_load_snapshot(&gw->proj.paths, &snap, &err);
    const struct mf_toolset *ts = m ? manifest_effective_toolset(m) : NULL;
    const char *sel = ts ? ts->name : NULL;
    bool same = gw->modern && ((!sel && !gw->modern_sel) ||
                               (sel && gw->modern_sel && strcmp(sel, gw->modern_sel) == 0));
    struct gw_surface *cur = gw->cur;
    if (!same || gw->modern_machine_gen != gw->machine_gen ||
        (gw->modern && gw->modern->has_anchor != cur->has_anchor) ||
        (gw->modern && strcmp(gw->modern->anchor, cur->anchor) != 0) || !gw->modern) {
        struct gw_build_in in = {0};
        in.toolset = sel;
        in.fence = true;
        in.trusted = gw->last_state == TRUST_TRUSTED;
        in.digest = gw->last_digest;
        in.snap = &snap;
        struct gw_surface *sf = gw_surface_build(gw, &in);
        sf->modern_default = true;
        if (gw->modern)
            gw_surface_unref(gw->modern);
        gw->modern = sf;
        free(gw->modern_sel);
        gw->modern_sel = sel ? xstrdup(sel) : NULL;
        gw->modern_machine_gen = gw->machine_gen;
        gw_set_dirty(gw);
    }
    gw->modern_gen = gw->gen;
    if (m)
        manifest_free(m);
    manifest_snapshot_release(&snap);
    return gw->modern;
}

struct gw_surface *gw_surface_for(struct gw *gw, bool modern)
{
    if (!gw->cur)
        gw_refresh(gw, modern, true);
    /* Gated or broken: both eras see the same empty surface. A grant is one
     * fixed surface for both. Otherwise, in every mode, the stateless era
     * gets the fenced default of the bytes on disk (it has no lease). */
    if (!modern || gw->grant || gw->cur->gate != GW_GATE_OPEN)
        return gw->cur;
    return modern_surface(gw);
}
