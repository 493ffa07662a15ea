/* The flight recorder and its readers (see record.h). */
#include "sandbox/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "sandbox/report_egress.h"

#define EVENTS_MAX ((size_t)64 << 20) /* a report reads at most this much of a log */

int sbx_run_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 128 || !strcmp(id, ".") || !strcmp(id, ".."))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

const char *sbx_posture_label(const char *slug)
{
    if (!slug)
        return NULL;
    if (!strcmp(slug, "lockdown"))
        return "LOCKDOWN / ENFORCED · NO DIRECT ROUTE";
    if (!strcmp(slug, "sandbox"))
        return "SANDBOX / PROXIED · DIRECT ROUTE OPEN";
    if (!strcmp(slug, "host-protected"))
        return "HOST / PROTECTED";
    if (!strcmp(slug, "host"))
        return "HOST / ADVISORY";
    return NULL;
}

int sbx_rec_create(const char *home, const char *run_id, const char *posture, struct sbx_rec *r,
                   struct as_err *err)
{
    memset(r, 0, sizeof *r);
    if (!sbx_run_id_valid(run_id))
        return as_err_set(err, "invalid run id '%s'", run_id);
    char *runs = xasprintf("%s/runs", home);
    /* runs/ is re-tightened to 0700 and never a symlink or someone else's. */
    if (fs_private_dir(runs, err) < 0) {
        free(runs);
        return -1;
    }
    r->dir = xasprintf("%s/%s", runs, run_id);
    free(runs);
    if (mkdir(r->dir, 0700) < 0) {
        as_err_errno(err, "creating the run record %s", r->dir);
        free(r->dir);
        r->dir = NULL;
        return -1;
    }
    r->events = xasprintf("%s/events.jsonl", r->dir);
    char *pf = xasprintf("%s/posture", r->dir);
    int fd = open(pf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    free(pf);
    if (fd < 0) {
        as_err_errno(err, "writing the run's posture");
        return -1;
    }
    size_t n = strlen(posture);
    ssize_t w = write(fd, posture, n);
    close(fd);
    if (w != (ssize_t)n)
        return as_err_set(err, "writing the run's posture: short write");
    /* The (empty) log now, so that the first append, which comes once the
     * sandbox is built and holds up the launch, only opens it (issue 8). */
    fd = open(r->events, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return as_err_errno(err, "creating the run's log");
    close(fd);
    return 0;
}

int sbx_rec_append(struct sbx_rec *r, const char *name, json_t *fields, struct as_err *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string(name));
    json_object_set_new(o, "ts", json_integer((json_int_t)time(NULL)));
    if (fields) {
        const char *k;
        json_t *v;
        json_object_foreach(fields, k, v) json_object_set(o, k, v);
        json_decref(fields);
    }
    int rc = aud_append(r->events, o, NULL, err);
    json_decref(o);
    if (rc < 0)
        r->failed = 1;
    return rc;
}

int sbx_rec_egress(void *ctx, const struct sbx_egress_event *ev)
{
    struct sbx_rec *r = ctx;
    if (r->failed)
        return -1;
    json_t *f = json_object();
    json_object_set_new(f, "server", json_string(ev->identity));
    json_object_set_new(f, "host", json_string(ev->host));
    json_object_set_new(f, "port", json_integer(ev->port));
    json_object_set_new(f, "allowed", json_boolean(ev->v->allowed));
    json_object_set_new(f, "layer", json_string(ev->v->layer));
    if (!ev->v->allowed) {
        json_object_set_new(f, "rule", json_string(ev->v->rule));
        if (ev->v->brief[0])
            json_object_set_new(f, "short", json_string(ev->v->brief));
    }
    json_object_set_new(f, "via", json_string(ev->kind));
    struct as_err err = AS_ERR_INIT;
    if (sbx_rec_append(r, "egress", f, &err) < 0) {
        char b[4096];
        fprintf(stderr, "error: the flight recorder failed (%s); refusing new connections\n",
                as_err_str(&err, b, sizeof b));
        return -1;
    }
    return 0;
}

static int rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                char *c = xasprintf("%s/%s", path, e->d_name);
                rm_tree(c);
                free(c);
            }
            closedir(d);
        }
        return rmdir(path);
    }
    return unlink(path);
}

void sbx_rec_remove(struct sbx_rec *r)
{
    if (r->dir)
        rm_tree(r->dir);
}

void sbx_rec_close(struct sbx_rec *r)
{
    free(r->dir);
    free(r->events);
    memset(r, 0, sizeof *r);
}

/* ---- readers -------------------------------------------------------------------- */

/* Reads JSON objects, one per line, skipping bad lines; with a key, only
 * the objects whose string member key equals value. */
static json_t *read_jsonl(const char *path, const char *key, const char *value)
{
    json_t *arr = json_array();
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return arr;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return arr;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return arr;
    }
    char *line = NULL;
    size_t cap = 0, total = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0 && total < EVENTS_MAX) {
        total += (size_t)n;
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)n, JSON_DISABLE_EOF_CHECK, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            continue;
        }
        if (key) {
            const char *got = json_string_value(json_object_get(o, key));
            if (!got || strcmp(got, value) != 0) {
                json_decref(o);
                continue;
            }
        }
        json_array_append_new(arr, o);
    }
    free(line);
    fclose(f);
    return arr;
}

int sbx_report_load(const char *home, const char *run_id, json_t **events, char **posture,
                    json_t **calls, struct as_err *err)
{
    *events = NULL;
    *posture = NULL;
    *calls = NULL;
    if (!sbx_run_id_valid(run_id))
        return 1;
    char *dir = xasprintf("%s/runs/%s", home, run_id);
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        free(dir);
        return 1;
    }
    char *ev = xasprintf("%s/events.jsonl", dir);
    *events = read_jsonl(ev, NULL, NULL);
    free(ev);
    char *pf = xasprintf("%s/posture", dir);
    int fd = open(pf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    free(pf);
    if (fd >= 0) {
        char b[64];
        ssize_t n = read(fd, b, sizeof b - 1);
        close(fd);
        if (n > 0) {
            b[n] = '\0';
            b[strcspn(b, "\r\n")] = '\0';
            if (sbx_posture_label(b))
                *posture = xstrdup(b);
        }
    }
    free(dir);
    *calls = sbx_calls_tagged(home, "run", run_id);
    (void)err;
    return 0;
}

json_t *sbx_calls_tagged(const char *home, const char *key, const char *value)
{
    json_t *c = json_array();
    char *c1 = xasprintf("%s/audit/calls.jsonl.1", home);
    char *c0 = xasprintf("%s/audit/calls.jsonl", home);
    json_t *a1 = read_jsonl(c1, key, value), *a0 = read_jsonl(c0, key, value);
    json_array_extend(c, a1);
    json_array_extend(c, a0);
    json_decref(a1);
    json_decref(a0);
    free(c1);
    free(c0);
    return c;
}

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void add_clean(strbuf *out, const char *s)
{
    term_sanitize(out, s, strlen(s));
}

static void fmt_ms(long long ms, strbuf *out)
{
    if (ms < 1000)
        sb_addf(out, "%lldms", ms);
    else if (ms < 10000)
        sb_addf(out, "%.1fs", (double)ms / 1000.0);
    else if (ms < 60000)
        sb_addf(out, "%llds", ms / 1000);
    else
        sb_addf(out, "%lldm%02llds", ms / 60000, (ms / 1000) % 60);
}

static const json_t *find_event(const json_t *events, const char *name)
{
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e) if (!strcmp(jstr(e, "event"), name)) return e;
    return NULL;
}

static const char *signame(int sig)
{
    const char *s = sigabbrev_np(sig);
    return s ? s : "?";
}

/* "Locked run <cli> · HOST / PROTECTED" (gates, grant, outcome) or
 * "Host run <cli> · HOST". */
static void render_host(const json_t *events, const json_t *start, const json_t *end, int locked,
                        strbuf *out)
{
    sb_addf(out, "  %s ", locked ? "Locked run" : "Host run");
    add_clean(out, jstr(start, "harness"));
    sb_addf(out, " · %s\n", locked ? "HOST / PROTECTED" : "HOST");
    sb_addf(out, "    %-9s ", "Workspace");
    add_clean(out, jstr(start, "workspace"));
    sb_addc(out, '\n');
    if (jstr(start, "toolset")[0]) {
        sb_addf(out, "    %-9s ", "Toolset");
        add_clean(out, jstr(start, "toolset"));
        sb_addc(out, '\n');
    }
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e)
    {
        if (strcmp(jstr(e, "event"), "gate_decision") != 0)
            continue;
        int ok = json_is_true(json_object_get(e, "passed"));
        sb_addf(out, "    %s ", ok ? "✓" : "✗");
        add_clean(out, jstr(e, "gate"));
        if (!ok || strcmp(jstr(e, "gate"), "trust") == 0) {
            sb_adds(out, "  ");
            add_clean(out, jstr(e, "detail"));
        }
        sb_addc(out, '\n');
    }
    const json_t *g = find_event(events, "grant_frozen");
    if (g) {
        sb_addf(out, "    %-9s ", "Grant");
        add_clean(out, jstr(g, "grant_digest"));
        sb_addc(out, '\n');
    }
    if (end) {
        sb_addf(out, "    %-9s ", "Outcome");
        add_clean(out, jstr(end, "outcome"));
        sb_addc(out, '\n');
    }
}

void sbx_report_render(const char *run_id, const char *posture, const json_t *events,
                       const json_t *calls, strbuf *out)
{
    sb_addf(out, "Run %s\n", run_id);
    const char *label = sbx_posture_label(posture);
    const json_t *start = find_event(events, "sandbox_started");
    const json_t *end = find_event(events, "sandbox_exited");
    sb_addf(out, "  %-9s %s", "Posture", label ? label : "unknown");
    if (start && json_is_true(json_object_get(start, "allow_local_targets")))
        sb_adds(out, " · LOCAL TARGETS ALLOWED (AGENTSTACK_ALLOW_LOCAL_TARGETS, tests only)");
    sb_addc(out, '\n');
    const json_t *hstart = find_event(events, "attempt_started");
    int locked = hstart != NULL;
    if (!hstart)
        hstart = find_event(events, "host_started");
    const json_t *hend = find_event(events, locked ? "locked_outcome" : "host_exited");
    if (hstart)
        render_host(events, hstart, hend, locked, out);
    if (start) {
        sb_addf(out, "  %-9s ", "Sandbox");
        add_clean(out, jstr(start, "image"));
        sb_adds(out, "   workspace ");
        add_clean(out, jstr(start, "workspace"));
        if (json_is_true(json_object_get(start, "workspace_writable")))
            sb_adds(out, " (read-write)");
        sb_addc(out, '\n');
    }
    /* Egress by host, with the timeline (sandbox/report_egress.h): 40
     * blocked requests to one host are one line, not 40. */
    json_t *egress = sbx_egress_summary(events);
    if (egress)
        sbx_egress_render(egress, out);
    else if (!hstart)
        sb_addf(out, "  %-9s (no egress recorded)\n", "Egress");
    json_decref(egress);
    size_t i;
    const json_t *e;
    size_t ncalls = 0;
    long long call_ms = 0;
    json_array_foreach(calls, i, e)
    {
        if (!ncalls)
            sb_adds(out, "  Tool calls\n");
        ncalls++;
        const char *oc = jstr(e, "outcome");
        long long ms = json_integer_value(json_object_get(e, "ms"));
        call_ms += ms;
        sb_addf(out, "    %s ", !strcmp(oc, "ok") ? "✓" : !strcmp(oc, "denied") ? "✗" : "⚠");
        add_clean(out, jstr(e, "server"));
        sb_adds(out, "__");
        add_clean(out, jstr(e, "tool"));
        sb_addf(out, "  %lldms", ms);
        if (strcmp(oc, "ok") != 0 && jstr(e, "detail")[0]) {
            sb_adds(out, "  ");
            add_clean(out, jstr(e, "detail"));
        }
        sb_addc(out, '\n');
    }
    if (hstart) {
        if (hend && json_is_integer(json_object_get(hend, "duration_ms"))) {
            sb_addf(out, "  %-9s ", "Wall time");
            fmt_ms(json_integer_value(json_object_get(hend, "duration_ms")), out);
            sb_adds(out, " host");
            if (ncalls)
                sb_addf(out, "; %zu tool call%s, %lldms in-tool", ncalls, ncalls == 1 ? "" : "s",
                        call_ms);
            sb_addc(out, '\n');
        }
        json_t *code = hend ? json_object_get(hend, locked ? "exit_code" : "code") : NULL;
        json_t *sig = hend ? json_object_get(hend, "signal") : NULL;
        const char *oc = hend ? jstr(hend, "outcome") : "";
        if (json_is_integer(code))
            sb_addf(out, "  %-9s %lld\n", "Exit", (long long)json_integer_value(code));
        else if (json_is_integer(sig))
            sb_addf(out, "  %-9s killed by SIG%s (%lld)\n", "Exit",
                    signame((int)json_integer_value(sig)), 128 + json_integer_value(sig));
        else if (!strcmp(oc, "refused"))
            sb_addf(out, "  %-9s refused before launch (nothing was launched)\n", "Exit");
        else if (!strcmp(oc, "launch-failed"))
            sb_addf(out, "  %-9s the harness could not be launched\n", "Exit");
        else
            sb_addf(out,
                    "  %-9s still running, or its launcher was killed (the next `run` "
                    "reverts what it injected)\n",
                    "Exit");
    } else if (end) {
        sb_addf(out, "  %-9s ", "Wall time");
        fmt_ms(json_integer_value(json_object_get(end, "duration_ms")), out);
        sb_adds(out, " sandbox");
        if (ncalls)
            sb_addf(out, "; %zu tool call%s, %lldms in-tool", ncalls, ncalls == 1 ? "" : "s",
                    call_ms);
        sb_addc(out, '\n');
        json_t *code = json_object_get(end, "code");
        json_t *sig = json_object_get(end, "signal");
        if (json_is_integer(code))
            sb_addf(out, "  %-9s %lld\n", "Exit", (long long)json_integer_value(code));
        else if (json_is_integer(sig))
            sb_addf(out, "  %-9s killed by SIG%s (%lld)\n", "Exit",
                    signame((int)json_integer_value(sig)), 128 + json_integer_value(sig));
        else
            sb_addf(out, "  %-9s unknown (the sandbox's init was killed)\n", "Exit");
    } else if (start) {
        sb_addf(out, "  %-9s still running, or ended without a record\n", "Exit");
    }
}

json_t *sbx_report_json(const char *run_id, const char *posture, json_t *events, json_t *calls)
{
    json_t *o = json_object();
    json_object_set_new(o, "run", json_string(run_id));
    json_object_set_new(o, "posture", posture ? json_string(posture) : json_null());
    json_object_set(o, "events", events);
    json_t *rest = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c)
    {
        size_t j;
        json_t *e;
        int dup = 0;
        json_array_foreach(events, j, e) if (json_equal(e, c)) dup = 1;
        if (!dup)
            json_array_append(rest, c);
    }
    json_object_set_new(o, "calls", rest);
    json_t *egress = sbx_egress_summary(events);
    json_object_set_new(o, "egress", egress ? egress : json_null());
    return o;
}

static int cmp_started(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    long long tx = json_integer_value(json_object_get(x, "started"));
    long long ty = json_integer_value(json_object_get(y, "started"));
    if (tx != ty)
        return tx < ty ? 1 : -1;
    return strcmp(jstr(y, "id"), jstr(x, "id"));
}

json_t *sbx_runs_list(const char *home, struct as_err *err)
{
    (void)err;
    json_t *arr = json_array();
    char *runs = xasprintf("%s/runs", home);
    DIR *d = opendir(runs);
    if (!d) {
        free(runs);
        return arr;
    }
    struct dirent *de;
    json_t **items = NULL;
    size_t n = 0, cap = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !sbx_run_id_valid(de->d_name))
            continue;
        json_t *events, *calls;
        char *posture;
        struct as_err e2 = AS_ERR_INIT;
        if (sbx_report_load(home, de->d_name, &events, &posture, &calls, &e2) != 0)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(de->d_name));
        json_object_set_new(o, "posture", posture ? json_string(posture) : json_null());
        const json_t *s = find_event(events, "sandbox_started");
        if (!s)
            s = json_array_get(events, 0);
        const json_t *x = find_event(events, "sandbox_exited");
        const char *codekey = "code";
        if (!x && (x = find_event(events, "locked_outcome")))
            codekey = "exit_code";
        if (!x)
            x = find_event(events, "host_exited");
        if (x && jstr(x, "outcome")[0])
            json_object_set_new(o, "outcome", json_string(jstr(x, "outcome")));
        json_object_set_new(o, "harness", json_string(s ? jstr(s, "harness") : ""));
        json_object_set_new(o, "started",
                            json_integer(s ? json_integer_value(json_object_get(s, "ts")) : 0));
        json_object_set_new(o, "workspace", json_string(s ? jstr(s, "workspace") : ""));
        if (x) {
            json_t *c = json_object_get(x, codekey), *g = json_object_get(x, "signal");
            if (json_is_integer(c))
                json_object_set(o, "exit", c);
            if (json_is_integer(g))
                json_object_set(o, "signal", g);
            if (json_object_get(x, "duration_ms"))
                json_object_set(o, "duration_ms", json_object_get(x, "duration_ms"));
        }
        size_t egress = 0, denied = 0, i;
        const json_t *e;
        json_array_foreach(events, i, e) if (!strcmp(jstr(e, "event"), "egress"))
        {
            egress++;
            denied += !json_is_true(json_object_get(e, "allowed"));
        }
        json_object_set_new(o, "egress", json_integer((json_int_t)egress));
        json_object_set_new(o, "denied", json_integer((json_int_t)denied));
        json_decref(events);
        json_decref(calls);
        free(posture);
        items = xgrow(items, &cap, n + 1, sizeof *items);
        items[n++] = o;
    }
    closedir(d);
    free(runs);
    qsort(items, n, sizeof *items, cmp_started);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, items[i]);
    free(items);
    return arr;
}
