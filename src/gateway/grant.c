/*
 * The --grant reader (grant.h). Every check fails closed: a grant that does
 * not prove itself serves nothing, and the reason goes to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/consent.h"
#include "gateway/grant.h"
#include "policy/policy.h"
#include "sandbox/registry.h"

/* The run log may carry many events (egress rows); it is read only to find
 * the freeze, so a generous cap keeps a hostile file from costing memory. */
#define EVENTS_MAX_BYTES ((size_t)64 << 20)

void gw_grant_free(struct gw_grant *g)
{
    free(g->path);
    free(g->run_id);
    free(g->digest);
    free(g->project_root);
    free(g->manifest_dir);
    free(g->consent_digest);
    free(g->toolset);
    strvec_clear(&g->servers);
    strvec_clear(&g->skills);
    free(g->ruleset_json);
    free(g->confine_workspace);
    memset(g, 0, sizeof *g);
}

/* Same rule as the flight recorder's run ids (1–128 [A-Za-z0-9._-]). */
static bool run_id_ok(const char *id, size_t n)
{
    if (n == 0 || n > 128 || (n == 1 && id[0] == '.') || (n == 2 && !memcmp(id, "..", 2)))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Reads the file at its canonical path: no symlink at the last component,
 * regular, ours, not writable by others, within the cap. */
static int read_grant(const char *path, strbuf *bytes, struct as_err *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return as_err_errno(err, "cannot open %s", path);
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) < 0)
        as_err_errno(err, "cannot stat %s", path);
    else if (!S_ISREG(st.st_mode))
        as_err_set(err, "%s is not a regular file", path);
    else if (st.st_uid != geteuid())
        as_err_set(err, "%s is not owned by this user", path);
    else if (st.st_mode & 022)
        as_err_set(err, "%s is writable by other users", path);
    else if ((size_t)st.st_size > GW_GRANT_MAX_BYTES)
        as_err_set(err, "%s exceeds the %zu-byte limit", path, GW_GRANT_MAX_BYTES);
    else
        rc = 0;
    while (rc == 0) {
        char buf[65536];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = as_err_errno(err, "cannot read %s", path);
            break;
        }
        if (n == 0)
            break;
        sb_add(bytes, buf, (size_t)n);
        if (bytes->len > GW_GRANT_MAX_BYTES)
            rc = as_err_set(err, "%s exceeds the %zu-byte limit", path, GW_GRANT_MAX_BYTES);
    }
    close(fd);
    return rc;
}

/* The run's events: chain intact, exactly one grant_frozen, not ended. The
 * run's process (pid and start time) comes from grant_frozen. */
static int run_digest(const char *events, const char *run_id, char **digest, pid_t *pid,
                      unsigned long long *pid_start, struct as_err *err)
{
    struct aud_break b;
    struct as_err verr = AS_ERR_INIT;
    int v = aud_verify(events, &b, NULL, &verr);
    if (v < 0)
        return as_err_set(err, "the run log of %s cannot be verified: %s", run_id, verr.msg);
    if (v > 0)
        return as_err_set(err, "the run log of %s is broken at %s:%u (%s)", run_id, b.file, b.line,
                          b.reason);
    strbuf data = SB_INIT;
    struct as_err rerr = AS_ERR_INIT;
    if (fs_read_file(events, EVENTS_MAX_BYTES, 1, &data, &rerr) < 0) {
        sb_release(&data);
        return as_err_set(err, "the run log of %s cannot be read: %s", run_id, rerr.msg);
    }
    size_t frozen = 0;
    bool ended = false;
    *digest = NULL;
    const char *p = data.buf, *end = data.buf + data.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_t *o = json_loadb(p, n, 0, NULL);
        const char *ev = json_get_str(o, "event");
        if (ev && strcmp(ev, "grant_frozen") == 0) {
            frozen++;
            const char *d = json_get_str(o, "grant_digest");
            free(*digest);
            *digest = d ? xstrdup(d) : NULL;
            json_t *jp = json_object_get(o, "pid"), *js = json_object_get(o, "pid_start");
            *pid = json_is_integer(jp) ? (pid_t)json_integer_value(jp) : 0;
            *pid_start = json_is_integer(js) && json_integer_value(js) > 0
                             ? (unsigned long long)json_integer_value(js)
                             : 0;
        } else if (ev && (strcmp(ev, "locked_outcome") == 0 || strcmp(ev, "sandbox_exited") == 0)) {
            ended = true; /* a host run's or a confined run's end */
        }
        json_decref(o);
        p += n + (nl ? 1 : 0);
    }
    sb_release(&data);
    const char *why = NULL;
    if (frozen == 0)
        why = "records no frozen grant";
    else if (frozen > 1)
        why = "records more than one frozen grant";
    else if (!*digest)
        why = "records a frozen grant without its digest";
    else if (ended)
        why = "has ended (a grant does not outlive its run)";
    else if (*pid <= 0 || !*pid_start)
        why = "records no process for the run (a grant is valid only while its run's process "
              "is alive)";
    else if (sbx_proc_start(*pid) != *pid_start)
        why = "has ended: its process is gone (killed before it could record its end; a grant "
              "does not outlive its run)";
    if (why) {
        free(*digest);
        *digest = NULL;
        return as_err_set(err, "run %s %s", run_id, why);
    }
    return 0;
}

static int str_list(const json_t *a, strvec *out)
{
    if (!json_is_array(a))
        return -1;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v))
            return -1;
        strvec_push(out, json_string_value(v));
    }
    return 0;
}

static int decode(json_t *doc, const char *run_id, struct gw_grant *g, struct as_err *err)
{
    if (!json_is_object(doc))
        return as_err_set(err, "the grant is not a JSON object");
    if (json_get_int(doc, "version", -1) != GW_GRANT_VERSION)
        return as_err_set(err, "the grant's version is not %d", GW_GRANT_VERSION);
    const char *kind = json_get_str(doc, "kind");
    if (!kind || strcmp(kind, GW_GRANT_KIND) != 0)
        return as_err_set(err, "the file is not an %s", GW_GRANT_KIND);
    const char *rid = json_get_str(doc, "run_id");
    if (!rid || strcmp(rid, run_id) != 0)
        return as_err_set(err, "the grant names another run than the directory it is in (%s)",
                          run_id);
    const char *root = json_get_str(doc, "project_root");
    const char *mdir = json_get_str(doc, "manifest_dir");
    const char *cd = json_get_str(doc, "consent_digest");
    if (!root || !*root || !mdir || !*mdir)
        return as_err_set(err, "the grant names no project");
    if (!cd || strlen(cd) != CONSENT_DIGEST_LEN)
        return as_err_set(err, "the grant carries no consent digest");
    json_t *ts = json_object_get(doc, "toolset");
    if (ts && !json_is_string(ts) && !json_is_null(ts))
        return as_err_set(err, "the grant's toolset is not a string");
    json_t *fence = json_object_get(doc, "fence");
    if (!json_is_object(fence) || str_list(json_object_get(fence, "servers"), &g->servers) < 0 ||
        str_list(json_object_get(fence, "skills"), &g->skills) < 0)
        return as_err_set(err, "the grant's fence is not {servers, skills} string lists");
    json_t *rs = json_object_get(doc, "ruleset");
    if (!json_is_object(rs))
        return as_err_set(err, "the grant carries no ruleset");
    strbuf w = SB_INIT;
    json_dump_compact(rs, &w);
    struct as_err perr = AS_ERR_INIT;
    struct pol_ruleset *parsed = pol_ruleset_from_json(w.buf, w.len, &perr);
    if (!parsed) {
        sb_release(&w);
        return as_err_set(err, "the grant's ruleset cannot be used: %s", perr.msg);
    }
    pol_ruleset_free(parsed);
    json_t *cf = json_object_get(doc, "confine");
    if (cf) {
        const char *ws = json_get_str(cf, "workspace");
        json_t *wr = json_object_get(cf, "writable"), *ld = json_object_get(cf, "lockdown");
        if (!json_is_object(cf) || !ws || ws[0] != '/' || !json_is_boolean(wr) ||
            !json_is_boolean(ld)) {
            sb_release(&w);
            return as_err_set(err, "the grant's confine member is not {workspace, writable, "
                                   "lockdown}");
        }
        g->confine = true;
        g->confine_workspace = xstrdup(ws);
        g->confine_writable = json_is_true(wr);
        g->confine_lockdown = json_is_true(ld);
    }
    g->ruleset_json = sb_detach(&w, NULL);
    g->project_root = xstrdup(root);
    g->manifest_dir = xstrdup(mdir);
    g->consent_digest = xstrdup(cd);
    g->toolset = json_is_string(ts) ? xstrdup(json_string_value(ts)) : NULL;
    return 0;
}

int gw_grant_open(const char *home, const char *path, struct gw_grant *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    strbuf hp = SB_INIT, gp = SB_INIT, bytes = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    char *events = NULL, *recorded = NULL;
    json_t *doc = NULL;
    int rc = -1;
    if (fs_realpath(home, &hp, &e) < 0) {
        as_err_set(err, "$AGENTSTACK_HOME cannot be resolved: %s", e.msg);
        goto out;
    }
    if (fs_realpath(path, &gp, &e) < 0) {
        as_err_set(err, "%s", e.msg);
        goto out;
    }
    /* <home>/runs/<id>/<file>, nothing deeper, nothing elsewhere. */
    size_t hl = hp.len;
    const char *rest = gp.buf + hl;
    if (gp.len <= hl + 6 || memcmp(gp.buf, hp.buf, hl) != 0 || strncmp(rest, "/runs/", 6) != 0) {
        as_err_set(err, "%s is not inside %s/runs/<id>/", gp.buf, hp.buf);
        goto out;
    }
    const char *id = rest + 6;
    const char *slash = strchr(id, '/');
    if (!slash || strchr(slash + 1, '/') || !slash[1] || !run_id_ok(id, (size_t)(slash - id))) {
        as_err_set(err, "%s is not a file directly inside %s/runs/<id>/", gp.buf, hp.buf);
        goto out;
    }
    out->run_id = xstrndup(id, (size_t)(slash - id));
    const char *env_run = getenv("AGENTSTACK_RUN_ID");
    if (env_run && *env_run && strcmp(env_run, out->run_id) != 0) {
        as_err_set(err, "the grant belongs to run %s, but this process runs under %s", out->run_id,
                   env_run);
        goto out;
    }
    if (read_grant(gp.buf, &bytes, err) < 0)
        goto out;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(bytes.buf, bytes.len, hex);
    out->digest = xasprintf("sha256:%s", hex);
    events = xasprintf("%s/runs/%s/events.jsonl", hp.buf, out->run_id);
    if (run_digest(events, out->run_id, &recorded, &out->run_pid, &out->run_start, err) < 0)
        goto out;
    if (strcmp(recorded, out->digest) != 0) {
        as_err_set(err,
                   "%s does not match the grant_frozen digest run %s recorded (%.19s…, file "
                   "%.19s…)",
                   gp.buf, out->run_id, recorded, out->digest);
        goto out;
    }
    json_error_t je;
    doc = json_loadb(bytes.buf, bytes.len, 0, &je);
    if (!doc) {
        as_err_set(err, "%s:%d:%d: %s", gp.buf, je.line, je.column, je.text);
        goto out;
    }
    if (decode(doc, out->run_id, out, &e) < 0) {
        as_err_set(err, "%s: %s", gp.buf, e.msg);
        goto out;
    }
    out->path = sb_detach(&gp, NULL);
    rc = 0;
out:
    if (rc < 0)
        gw_grant_free(out);
    json_decref(doc);
    free(events);
    free(recorded);
    sb_release(&hp);
    sb_release(&gp);
    sb_release(&bytes);
    return rc;
}

bool gw_grant_run_alive(const struct gw_grant *g)
{
    return g->run_pid > 0 && g->run_start && sbx_proc_start(g->run_pid) == g->run_start;
}
