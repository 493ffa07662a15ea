/* session — clean-at-rest activation (docs/adapters.md): `session start <t>`
 * activates a toolset like `use --write` and records everything needed to
 * put the machine back; `session end` does exactly that. State lives in
 * $AGENTSTACK_HOME/sessions.json (0600), keyed by manifest directory, so a
 * crashed launcher's session is still found and ended by the next command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "base/lock.h"
#include "base/xalloc.h"
#include "bundle/home.h"

#define LOCK_WAIT_MS 10000
#define ABANDONED_SECS (12 * 3600)

static int sessions_load(json_t **out, struct as_err *err)
{
    *out = NULL;
    strbuf path = SB_INIT, text = SB_INIT;
    if (home_path(HOME_SESSIONS_JSON, &path, err) != 0) {
        sb_release(&path);
        return -1;
    }
    int rc = 0;
    struct as_err terr = AS_ERR_INIT; /* re-tightened on open, best effort */
    (void)fs_tighten_file(path.buf, 0600, &terr);
    if (!fs_exists(path.buf)) {
        *out = json_pack("{s:i,s:{}}", "version", 1, "sessions");
    } else if (fs_read_file(path.buf, (size_t)64 << 20, 1, &text, err) != 0) {
        rc = -1;
    } else {
        json_error_t je;
        json_t *v = json_loadb(text.buf, text.len, 0, &je);
        if (!v || !json_is_object(json_object_get(v, "sessions"))) {
            json_decref(v);
            as_err_at(err, path.buf, v ? 1 : (unsigned)je.line, v ? 1 : (unsigned)je.column,
                      "the session record is unreadable");
            as_err_hint(err,
                        "move %s aside; active sessions then have to be undone with "
                        "agentstack restore",
                        path.buf);
            rc = -1;
        } else {
            *out = v;
        }
    }
    sb_release(&path);
    sb_release_secure(&text);
    return rc;
}

static int sessions_save(const json_t *s, struct as_err *err)
{
    strbuf path = SB_INIT;
    if (home_ensure(HOME_SESSIONS_JSON, &path, err) != 0) {
        sb_release(&path);
        return -1;
    }
    char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    struct fs_write_opts o = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
    int rc = fs_write_exact(path.buf, text, strlen(text), &o, err);
    free(text);
    sb_release(&path);
    return rc;
}

static int take_lock(struct as_lock *lk, struct as_err *err)
{
    strbuf ah = SB_INIT;
    int rc = home_ensure(HOME_ROOT_DIR, &ah, err);
    if (rc == 0)
        rc = lock_acquire(lk, ah.buf, LOCK_WAIT_MS, err);
    if (rc != 0)
        as_err_prefix(err, "another agentstack write is in progress");
    sb_release(&ah);
    return rc;
}

static struct adp_hist_entry *find_entry(adp_hist_list *hl, const char *id)
{
    for (size_t i = 0; id && i < hl->n; i++)
        if (strcmp(hl->v[i]->id, id) == 0)
            return hl->v[i];
    return NULL;
}

/* Reverts one session's files, links and ledger entries. 0 or -1. */
static int end_one(const char *dir, json_t *s, adp_hist_list *hl, json_t *ledger, FILE *out,
                   struct as_err *err)
{
    const char *toolset = json_string_value(json_object_get(s, "toolset"));
    const char *hid = json_string_value(json_object_get(s, "history_id"));
    struct adp_hist_entry *e = find_entry(hl, hid);
    fprintf(out, "Ending session '%s' (%s)\n", toolset ? toolset : "?", dir);
    size_t failed = 0;
    if (e && !e->undone)
        failed = adp_history_revert(e, true, out, NULL);
    else if (hid && !e)
        fprintf(out, "  ⚠ its undo record %s is gone — files were left as they are\n", hid);
    adp_undo_skill_links(json_object_get(s, "skills"), out);
    if (failed) {
        as_err_set(err, "session '%s': %zu file%s could not be restored — see ✗ above",
                   toolset ? toolset : "?", failed, failed == 1 ? "" : "s");
        return -1;
    }
    const char *key;
    json_t *prev;
    json_t *targets = json_object_get(ledger, "targets");
    json_object_foreach(json_object_get(s, "ledger_before"), key, prev)
    {
        if (json_is_null(prev))
            json_object_del(targets, key);
        else
            json_object_set(targets, key, prev);
    }
    if (e && !e->undone && adp_history_mark_undone(e, err) != 0)
        return -1;
    fprintf(out, "✓ session '%s' ended — your tools are back to before\n", toolset ? toolset : "?");
    return 0;
}

/* The start time of a process (field 22 of /proc/<pid>/stat), so a
 * recycled pid is never mistaken for a live launcher, and its state (field
 * 3: 'Z' zombie, 'X' dead — a launcher that exited but was not reaped yet is
 * gone all the same). out "" and *state 0 when unknown. */
static void proc_start(pid_t pid, char *out, size_t n, char *state)
{
    out[0] = '\0';
    if (state)
        *state = 0;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *p = strrchr(buf, ')'); /* the comm field may hold spaces and parens */
    if (p && state && p[1] == ' ' && p[2])
        *state = p[2];
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        snprintf(out, n, "%.*s", (int)strcspn(p + 1, " "), p + 1);
}

static int session_start(const struct adp_registry *r, const struct adp_apply_opts *o,
                         const char *manifest_dir, const char *run_id, struct as_err *err);

int adp_session_start(const struct adp_registry *r, const struct adp_apply_opts *o,
                      const char *manifest_dir, struct as_err *err)
{
    return session_start(r, o, manifest_dir, NULL, err);
}

int adp_run_inject(const struct adp_registry *r, const struct adp_apply_opts *o,
                   const char *manifest_dir, const char *run_id, struct as_err *err)
{
    return session_start(r, o, manifest_dir, run_id ? run_id : "", err);
}

int adp_run_revert(const char *manifest_dir, FILE *out, struct as_err *err)
{
    return adp_session_end(manifest_dir, false, out, err);
}

int adp_run_recover(FILE *out, size_t *recovered, struct as_err *err)
{
    if (recovered)
        *recovered = 0;
    json_t *sessions = NULL;
    if (sessions_load(&sessions, err) != 0)
        return -1;
    strvec dead = STRVEC_INIT;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(sessions, "sessions"), k, v)
    {
        json_t *jp = json_object_get(v, "pid");
        if (!json_is_integer(jp))
            continue; /* a `session start`: ended by hand, never behind the user's back */
        pid_t pid = (pid_t)json_integer_value(jp);
        const char *was = json_string_value(json_object_get(v, "pid_start"));
        char now[32], state = 0;
        proc_start(pid, now, sizeof now, &state);
        bool alive = now[0] && state != 'Z' && state != 'X' && (!was || strcmp(was, now) == 0);
        if (!alive)
            strvec_push(&dead, k);
    }
    json_decref(sessions);
    int rc = 0;
    for (size_t i = 0; i < dead.n; i++) {
        fprintf(out, "↩ finishing the revert of a run whose launcher is gone (%s)\n", dead.v[i]);
        if (adp_session_end(dead.v[i], false, out, err) != 0)
            rc = -1;
        else if (recovered)
            (*recovered)++;
    }
    strvec_clear(&dead);
    return rc;
}

static int session_start(const struct adp_registry *r, const struct adp_apply_opts *o,
                         const char *manifest_dir, const char *run_id, struct as_err *err)
{
    if (o->trust_refusal) {
        as_err_set(err, "refusing to start a session: %s", o->trust_refusal);
        return 1;
    }
    struct as_lock lk = {-1};
    if (take_lock(&lk, err) != 0)
        return 1;
    json_t *sessions = NULL, *ledger = NULL, *after = NULL;
    json_t *log = json_array();
    char *hid = NULL;
    int rc = 1;
    if (sessions_load(&sessions, err) != 0 || adp_ledger_load(&ledger, err) != 0)
        goto out;
    if (json_object_get(json_object_get(sessions, "sessions"), manifest_dir)) {
        as_err_set(err, "a session is already active here — end it first: agentstack session "
                        "end");
        goto out;
    }
    struct adp_apply_opts oo = *o;
    oo.write = true;
    oo.use = true;
    oo.caller_holds_lock = true;
    oo.history_id = &hid;
    oo.skills_log = log;
    int arc = adp_apply(r, &oo, err);
    if (adp_ledger_load(&after, err) != 0)
        goto out;
    /* The ledger entries this activation changed, as they were before. */
    json_t *lb = json_object();
    const char *key;
    json_t *v;
    json_t *bt = json_object_get(ledger, "targets");
    json_object_foreach(json_object_get(after, "targets"), key, v)
    {
        json_t *was = json_object_get(bt, key);
        if (!was || !json_equal(was, v))
            json_object_set_new(lb, key, was ? json_deep_copy(was) : json_null());
    }
    json_t *rec = json_pack(
        "{s:s,s:I,s:s,s:o,s:o,s:O}", "toolset", o->toolset ? o->toolset : "", "started_unix",
        (json_int_t)time(NULL), "scope", o->project_scope ? "project" : "global", "history_id",
        hid ? json_string(hid) : json_null(), "ledger_before", lb, "skills", log);
    if (run_id) {
        char st[32];
        proc_start(getpid(), st, sizeof st, NULL);
        json_object_set_new(rec, "run_id", json_string(run_id));
        json_object_set_new(rec, "pid", json_integer((json_int_t)getpid()));
        json_object_set_new(rec, "pid_start", json_string(st));
    }
    if (arc != 0) {
        /* A partial activation is not a session: put back what was done. */
        adp_hist_list hl = VEC_INIT;
        struct as_err e2 = AS_ERR_INIT;
        adp_history_list(&hl, &e2);
        struct as_err e3 = AS_ERR_INIT;
        end_one(manifest_dir, rec, &hl, after, o->out ? o->out : stdout, &e3);
        adp_ledger_save(after, &e3);
        adp_hist_list_free(&hl);
        json_decref(rec);
        if (!as_err_isset(err))
            as_err_set(err, "the session did not start — everything it changed was put back");
        goto out;
    }
    json_object_set_new(json_object_get(sessions, "sessions"), manifest_dir, rec);
    if (sessions_save(sessions, err) != 0)
        goto out;
    fprintf(o->out ? o->out : stdout,
            "✓ session '%s' started — end it with: agentstack "
            "session end\n",
            o->toolset ? o->toolset : "");
    rc = 0;
out:
    free(hid);
    json_decref(log);
    json_decref(sessions);
    json_decref(ledger);
    json_decref(after);
    lock_release(&lk);
    return rc;
}

int adp_session_end(const char *manifest_dir, bool all, FILE *out, struct as_err *err)
{
    struct as_lock lk = {-1};
    if (take_lock(&lk, err) != 0)
        return 1;
    json_t *sessions = NULL, *ledger = NULL;
    adp_hist_list hl = VEC_INIT;
    int rc = 1;
    if (sessions_load(&sessions, err) != 0 || adp_ledger_load(&ledger, err) != 0 ||
        adp_history_list(&hl, err) != 0)
        goto out;
    json_t *map = json_object_get(sessions, "sessions");
    strvec dirs = STRVEC_INIT;
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v) if (all || (manifest_dir && strcmp(k, manifest_dir) == 0))
        strvec_push(&dirs, k);
    if (!dirs.n) {
        as_err_set(err, "no active session %s", all ? "on this machine" : "here");
        as_err_hint(err, "agentstack session list");
        strvec_clear(&dirs);
        goto out;
    }
    rc = 0;
    for (size_t i = 0; i < dirs.n; i++) {
        struct as_err e1 = AS_ERR_INIT;
        if (end_one(dirs.v[i], json_object_get(map, dirs.v[i]), &hl, ledger, out, &e1) != 0) {
            char buf[2048];
            fprintf(stderr, "error: %s\n", as_err_str(&e1, buf, sizeof buf));
            *err = e1;
            rc = 1;
            continue;
        }
        json_object_del(map, dirs.v[i]);
    }
    strvec_clear(&dirs);
    if (adp_ledger_save(ledger, err) != 0 || sessions_save(sessions, err) != 0)
        rc = 1;
out:
    adp_hist_list_free(&hl);
    json_decref(sessions);
    json_decref(ledger);
    lock_release(&lk);
    return rc;
}

int adp_session_list(bool json, FILE *out, struct as_err *err)
{
    json_t *sessions = NULL;
    if (sessions_load(&sessions, err) != 0)
        return 1;
    json_t *map = json_object_get(sessions, "sessions");
    int64_t now = (int64_t)time(NULL);
    if (json) {
        json_t *a = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(map, k, v)
        {
            int64_t st = json_integer_value(json_object_get(v, "started_unix"));
            json_array_append_new(a, json_pack("{s:s,s:O,s:I,s:b}", "manifest_dir", k, "toolset",
                                               json_object_get(v, "toolset"), "started_unix",
                                               (json_int_t)st, "abandoned",
                                               now - st > ABANDONED_SECS));
        }
        char *s = json_dumps(a, JSON_INDENT(2));
        fprintf(out, "%s\n", s);
        free(s);
        json_decref(a);
    } else if (!json_object_size(map)) {
        fprintf(out, "No active sessions.\n");
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(map, k, v)
        {
            int64_t st = json_integer_value(json_object_get(v, "started_unix"));
            int64_t age = now - st;
            fprintf(out, "  %s  toolset '%s'  started %lldm ago%s\n", k,
                    json_string_value(json_object_get(v, "toolset")), (long long)(age / 60),
                    age > ABANDONED_SECS ? "  · looks abandoned (end it: agentstack session "
                                           "end --all)"
                                         : "");
        }
    }
    json_decref(sessions);
    return 0;
}
