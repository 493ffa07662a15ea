/*
 * The control-plane tools that change the project (control_write.h): one
 * gate, one manifest write path, then the re-gate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/lock.h"
#include "base/toml.h"
#include "base/xalloc.h"
#include "bundle/literal_secret.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "gateway/control_write.h"
#include "gateway/gw_int.h"
#include "gateway/sessions.h"
#include "trust/trust.h"

/* ---- the gate ------------------------------------------------------------------------- */

/* NULL when tool may run; else the refusal to return. */
static json_t *write_gate(struct gw *gw, const char *tool, const char *what)
{
    if (gw->grant)
        return gw_grant_fixed(gw, tool);
    if (gw->grant_refused)
        return gw_error_result("%s is refused: this connection was started with a grant that "
                               "was refused",
                               tool);
    if (!gw->proj.found)
        return gw_error_result("%s is refused: no agentstack project is bound to this "
                               "connection (open the agent in a directory with "
                               "agentstack.toml)",
                               tool);
    char digest[CONSENT_DIGEST_LEN + 1];
    const char *why = NULL;
    if (gw_trust_now(gw, digest, &why) != 1)
        return gw_trust_refusal(gw, tool, what);
    return NULL;
}

static bool name_ok(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return n >= 1 && n <= 64;
}

static const char *str_arg(const json_t *args, const char *key)
{
    const char *s = json_string_value(json_object_get(args, key));
    return s && *s ? s : NULL;
}

/* A JSON array of strings, or absent. -1 when present and not that. */
static int str_list(const json_t *args, const char *key, strvec *out)
{
    json_t *a = json_object_get(args, key);
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return -1;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v) || !*json_string_value(v))
            return -1;
        strvec_push(out, json_string_value(v));
    }
    return 0;
}

static toml_value *toml_strs(const strvec *v)
{
    toml_value *a = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < v->n; i++)
        toml_array_push(a, toml_new_string(v->v[i]));
    return a;
}

/* A JSON object of strings as an inline TOML table, or absent. */
static int str_map(const json_t *args, const char *key, toml_value **out)
{
    json_t *o = json_object_get(args, key);
    *out = NULL;
    if (!o || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return -1;
    toml_value *t = toml_new(TOML_TABLE);
    t->is_inline = 1;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (!json_is_string(v) || !*k) {
            toml_free(t);
            return -1;
        }
        toml_table_set(t, k, toml_new_string(json_string_value(v)));
    }
    *out = t;
    return 0;
}

/* ---- the one manifest write ---------------------------------------------------------- */

typedef int (*edit_fn)(toml_edit *ed, const struct manifest *m, const json_t *args, strbuf *done,
                       strbuf *refuse);

/* Runs fn on the project's manifest under the writer lock and writes the
 * result atomically when it still loads. Then the connection is trust-gated
 * from here on, whatever its mode: the new bytes are not what was trusted, so
 * nothing they add is served until a person reviews them. */
static json_t *manifest_write(struct gw *gw, struct job *j, const json_t *args, edit_fn fn)
{
    struct as_err err = AS_ERR_INIT;
    struct as_lock lk = {-1};
    strbuf text = SB_INIT, done = SB_INIT, refuse = SB_INIT;
    struct manifest *m = NULL, *after = NULL;
    toml_edit *ed = NULL;
    json_t *res = NULL;
    bool wrote = false;
    const struct bundle_paths *p = &gw->proj.paths;
    if (lock_acquire(&lk, gw->home, LOCK_WAIT_MS, &err) < 0) {
        res = gw_error_result("%s", err.msg);
        goto out_unlocked;
    }
    if (!(m = manifest_load(p, &err)) ||
        fs_read_file(p->manifest, MANIFEST_MAX_BYTES, 0, &text, &err) < 0 ||
        !(ed = toml_edit_open(p->manifest, text.buf, text.len, &err))) {
        char buf[2300];
        res = gw_error_result("%s", as_err_str(&err, buf, sizeof buf));
        goto out;
    }
    if (fn(ed, m, args, &done, &refuse) < 0) {
        res = gw_error_result("%s", refuse.buf);
        goto out;
    }
    size_t len;
    const char *out_text = toml_edit_text(ed, &len);
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = p->manifest,
                                  .data = out_text,
                                  .len = len,
                                  .manifest_dir = p->manifest_dir,
                                  .project_root = p->project_root};
    after = manifest_load_bytes(&src, &err);
    if (!after) {
        char buf[2300];
        res = gw_error_result("refused: the change would leave %s unloadable (%s); nothing "
                              "was written",
                              p->manifest, as_err_str(&err, buf, sizeof buf));
        goto out;
    }
    struct fs_write_opts wo = {0644, FS_SYMLINK_FOLLOW, p->project_root, NULL};
    if (fs_write_atomic(p->manifest, out_text, len, &wo, &err) < 0) {
        res = gw_error_result("%s", err.msg);
        goto out;
    }
    gw->proj.gated = true; /* re-gated: served again only once trusted again */
    gw->ino_dirty = true;
    wrote = true;
    strbuf msg = SB_INIT, clean = SB_INIT;
    gw_one_line(done.buf, 400, &clean);
    sb_addf(&msg,
            "%s in %s. Nothing was run, fetched or applied, and nothing it adds is served: "
            "the manifest changed, so this project is no longer trusted on this connection. A "
            "person reviews the change and, in a terminal, runs `agentstack lock --write`, "
            "then `agentstack trust %s`.",
            clean.buf, p->manifest, gw->proj.dir);
    res = gw_text_result(msg.buf, false);
    sb_release(&msg);
    sb_release(&clean);
out:
    lock_release(&lk);
out_unlocked:
    if (wrote)
        gw_refresh(gw, j->modern, true);
    if (ed)
        toml_edit_free(ed);
    if (m)
        manifest_free(m);
    if (after)
        manifest_free(after);
    sb_release(&text);
    sb_release(&done);
    sb_release(&refuse);
    return res;
}

/* A literal secret anywhere in the new server table refuses it. */
static int no_literal_secret(const toml_value *server, strbuf *refuse)
{
    lsec_findings f = VEC_INIT;
    lsec_check_server_table(server, &f);
    if (!f.n)
        return 0;
    strbuf k = SB_INIT;
    gw_one_line(f.v[0].key ? f.v[0].key : "?", 80, &k);
    sb_addf(refuse,
            "refused: %s '%s' looks like a literal secret (%s) — write a ${NAME} reference "
            "instead; a person stores the value with `agentstack secret set NAME`. Nothing "
            "was written.",
            f.v[0].where ? f.v[0].where : "a value", k.buf, lsec_why_text(f.v[0].why));
    sb_release(&k);
    lsec_findings_free(&f);
    return -1;
}

static int add_to_toolset(toml_edit *ed, const struct manifest *m, const char *toolset,
                          const char *field, const char *name, strbuf *refuse)
{
    const struct mf_toolset *t = manifest_toolset(m, toolset);
    if (!t) {
        sb_addf(refuse, "no toolset '%s' in the manifest; nothing was written", toolset);
        return -1;
    }
    strvec v = STRVEC_INIT;
    const strvec *cur = strcmp(field, "servers") == 0 ? &t->servers : &t->skills;
    for (size_t i = 0; i < cur->n; i++)
        strvec_push(&v, cur->v[i]);
    if (strvec_find(&v, name) < 0)
        strvec_push(&v, name);
    toml_value *a = toml_strs(&v);
    const char *path[3] = {m->toolsets_legacy ? "profiles" : "toolsets", toolset, field};
    struct as_err err = AS_ERR_INIT;
    int rc = toml_edit_set(ed, path, 3, a, &err);
    toml_free(a);
    strvec_clear(&v);
    if (rc < 0)
        sb_adds(refuse, err.msg);
    return rc;
}

/* ---- agentstack_add_server ------------------------------------------------------------- */

static int edit_add_server(toml_edit *ed, const struct manifest *m, const json_t *args,
                           strbuf *done, strbuf *refuse)
{
    const char *name = str_arg(args, "name"), *url = str_arg(args, "url"),
               *command = str_arg(args, "command"), *transport = str_arg(args, "transport"),
               *profile = str_arg(args, "profile");
    if (manifest_server(m, name)) {
        sb_addf(refuse, "a server named '%s' is already declared; nothing was written", name);
        return -1;
    }
    if (!transport)
        transport = url ? "http" : "stdio";
    bool http = strcmp(transport, "http") == 0;
    if (!http && strcmp(transport, "stdio") != 0) {
        sb_adds(refuse, "`transport` is \"stdio\" or \"http\"");
        return -1;
    }
    if (http ? !url : !command) {
        sb_addf(refuse, "a %s server needs `%s`", transport, http ? "url" : "command");
        return -1;
    }
    strvec sargs = STRVEC_INIT, targets = STRVEC_INIT;
    toml_value *env = NULL, *headers = NULL;
    int rc = -1;
    if (str_list(args, "args", &sargs) < 0 || str_list(args, "targets", &targets) < 0 ||
        str_map(args, "env", &env) < 0 || str_map(args, "headers", &headers) < 0) {
        sb_adds(refuse, "`args` and `targets` are arrays of strings, `env` and `headers` "
                        "objects of strings");
        goto out;
    }
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "type", toml_new_string(transport));
    if (http) {
        toml_table_set(tab, "url", toml_new_string(url));
        if (headers)
            toml_table_set(tab, "headers", toml_clone(headers));
    } else {
        toml_table_set(tab, "command", toml_new_string(command));
        if (sargs.n)
            toml_table_set(tab, "args", toml_strs(&sargs));
        if (env)
            toml_table_set(tab, "env", toml_clone(env));
    }
    if (targets.n)
        toml_table_set(tab, "targets", toml_strs(&targets));
    if (no_literal_secret(tab, refuse) == 0) {
        const char *path[2] = {"servers", name};
        struct as_err err = AS_ERR_INIT;
        rc = toml_edit_set_table(ed, path, 2, tab, &err);
        if (rc < 0)
            sb_adds(refuse, err.msg);
        else if (profile)
            rc = add_to_toolset(ed, m, profile, "servers", name, refuse);
    }
    toml_free(tab);
    if (rc == 0)
        sb_addf(done, "Added [servers.%s] (%s%s%s)", name, transport, profile ? ", toolset " : "",
                profile ? profile : "");
out:
    toml_free(env);
    toml_free(headers);
    strvec_clear(&sargs);
    strvec_clear(&targets);
    return rc;
}

json_t *gw_t_add_server(struct gw *gw, struct job *j, const json_t *args)
{
    const char *name = str_arg(args, "name");
    strbuf what = SB_INIT, n = SB_INIT;
    gw_one_line(name ? name : "(none)", 80, &n);
    sb_addf(&what, "tried to add the server '%s' to the manifest", n.buf);
    sb_release(&n);
    json_t *r = write_gate(gw, "agentstack_add_server", what.buf);
    sb_release(&what);
    if (r)
        return r;
    if (!name_ok(name))
        return gw_error_result("`name` is required: [A-Za-z0-9_.-], 1-64 characters");
    return manifest_write(gw, j, args, edit_add_server);
}

/* ---- agentstack_add_skill -------------------------------------------------------------- */

/* A project-relative path that stays inside (no absolute path, no ".."). */
static bool inside_path(const char *p)
{
    if (!p || !*p || p[0] == '/' || p[0] == '~')
        return false;
    for (const char *s = p; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return false;
        s += n;
        s += strspn(s, "/");
    }
    return true;
}

static int edit_add_skill(toml_edit *ed, const struct manifest *m, const json_t *args, strbuf *done,
                          strbuf *refuse)
{
    const char *name = str_arg(args, "name"), *git = str_arg(args, "git"),
               *rev = str_arg(args, "rev"), *path = str_arg(args, "path"),
               *source = str_arg(args, "source");
    if (source && !git && !path) {
        if (!strncmp(source, "https://", 8) || !strncmp(source, "git:", 4) ||
            !strncmp(source, "git@", 4))
            git = source;
        else
            path = source;
    }
    if (manifest_skill(m, name)) {
        sb_addf(refuse, "a skill named '%s' is already declared; nothing was written", name);
        return -1;
    }
    if (!git && !path) {
        sb_adds(refuse, "give `git` (a repository URL) or `path` (a folder inside the project) "
                        "for the skill; nothing was written");
        return -1;
    }
    if (git && path) {
        sb_adds(refuse, "give `git` or `path`, not both");
        return -1;
    }
    if (path && !inside_path(path)) {
        sb_addf(refuse,
                "`path` must be a folder inside the project (relative, no '..'): '%s' "
                "is not; nothing was written",
                path);
        return -1;
    }
    toml_value *tab = toml_new(TOML_TABLE);
    if (git) {
        toml_table_set(tab, "git", toml_new_string(git));
        if (rev)
            toml_table_set(tab, "rev", toml_new_string(rev));
    } else {
        toml_table_set(tab, "path", toml_new_string(path));
    }
    const char *p[2] = {"skills", name};
    struct as_err err = AS_ERR_INIT;
    int rc = toml_edit_set_table(ed, p, 2, tab, &err);
    toml_free(tab);
    if (rc < 0)
        sb_adds(refuse, err.msg);
    else
        sb_addf(done, "Added [skills.%s] (%s %s; nothing fetched)", name, git ? "git" : "path",
                git ? git : path);
    return rc;
}

json_t *gw_t_add_skill(struct gw *gw, struct job *j, const json_t *args)
{
    const char *name = str_arg(args, "name");
    strbuf what = SB_INIT, n = SB_INIT;
    gw_one_line(name ? name : "(none)", 80, &n);
    sb_addf(&what, "tried to add the skill '%s' to the manifest", n.buf);
    sb_release(&n);
    json_t *r = write_gate(gw, "agentstack_add_skill", what.buf);
    sb_release(&what);
    if (r)
        return r;
    if (!name_ok(name))
        return gw_error_result("`name` is required: [A-Za-z0-9_.-], 1-64 characters");
    return manifest_write(gw, j, args, edit_add_skill);
}

/* ---- agentstack_create_toolset ------------------------------------------------------------ */

static int edit_create_toolset(toml_edit *ed, const struct manifest *m, const json_t *args,
                               strbuf *done, strbuf *refuse)
{
    const char *name = str_arg(args, "name");
    if (manifest_toolset(m, name)) {
        sb_addf(refuse, "toolset '%s' already exists in %s — pick another name", name, m->path);
        return -1;
    }
    strvec servers = STRVEC_INIT, skills = STRVEC_INIT;
    int rc = -1;
    if (str_list(args, "servers", &servers) < 0 || str_list(args, "skills", &skills) < 0) {
        sb_adds(refuse, "`servers` and `skills` are arrays of names");
        goto out;
    }
    for (size_t i = 0; i < servers.n; i++)
        if (!manifest_server(m, servers.v[i]) && !strchr(servers.v[i], ':')) {
            sb_addf(refuse,
                    "no server '%s' in the manifest (a library server is named "
                    "<source>:<name>); nothing was written",
                    servers.v[i]);
            goto out;
        }
    for (size_t i = 0; i < skills.n; i++)
        if (strcmp(skills.v[i], "*") && !manifest_skill(m, skills.v[i]) &&
            !strchr(skills.v[i], ':')) {
            sb_addf(refuse,
                    "no skill '%s' in the manifest (a library skill is named "
                    "<source>:<name>); nothing was written",
                    skills.v[i]);
            goto out;
        }
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "servers", toml_strs(&servers));
    toml_table_set(tab, "skills", toml_strs(&skills));
    const char *path[2] = {m->toolsets_legacy ? "profiles" : "toolsets", name};
    struct as_err err = AS_ERR_INIT;
    rc = toml_edit_set_table(ed, path, 2, tab, &err);
    toml_free(tab);
    if (rc < 0)
        sb_adds(refuse, err.msg);
    else
        sb_addf(done, "Added [%s.%s] (servers: %zu, skills: %zu)",
                m->toolsets_legacy ? "profiles" : "toolsets", name, servers.n, skills.n);
out:
    strvec_clear(&servers);
    strvec_clear(&skills);
    return rc;
}

json_t *gw_t_create_toolset(struct gw *gw, struct job *j, const json_t *args)
{
    const char *name = str_arg(args, "name");
    strbuf what = SB_INIT, n = SB_INIT;
    gw_one_line(name ? name : "(none)", 80, &n);
    sb_addf(&what, "tried to create the toolset '%s' in the manifest", n.buf);
    sb_release(&n);
    json_t *r = write_gate(gw, "agentstack_create_toolset", what.buf);
    sb_release(&what);
    if (r)
        return r;
    if (!name_ok(name))
        return gw_error_result("`name` is required: [A-Za-z0-9_.-], 1-64 characters");
    return manifest_write(gw, j, args, edit_create_toolset);
}

/* ---- native sessions -------------------------------------------------------------------- */

static json_t *session_text(int rc, const strbuf *out, const char *fallback)
{
    strbuf t = SB_INIT;
    gw_clean(out->len ? out->buf : fallback, out->len ? out->len : strlen(fallback), 1, &t);
    json_t *r = gw_text_result(t.buf, rc != 0);
    sb_release(&t);
    return r;
}

json_t *gw_t_session_start(struct gw *gw, struct job *j, const json_t *args)
{
    (void)j;
    const char *profile = str_arg(args, "profile"), *scope = str_arg(args, "scope");
    strbuf what = SB_INIT, n = SB_INIT;
    gw_one_line(profile ? profile : "(none)", 80, &n);
    sb_addf(&what, "tried to start a native session of '%s'", n.buf);
    sb_release(&n);
    json_t *r = write_gate(gw, "agentstack_session_start", what.buf);
    sb_release(&what);
    if (r)
        return r;
    if (!profile)
        return gw_error_result("`profile` is required");
    if (scope && strcmp(scope, "project") && strcmp(scope, "global"))
        return gw_error_result("`scope` is \"project\" or \"global\"");
    if (gw->lease.active)
        return gw_error_result("agentstack_session_start is refused: this connection holds "
                               "the toolset lease '%s'; close it with agentstack_lease_close "
                               "first (a session and a lease would serve two surfaces)",
                               gw->lease.profile);
    if (!gw->o.session_start)
        return gw_error_result("native sessions cannot be started by this gateway; run "
                               "`agentstack session start` in a terminal");
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int rc = gw->o.session_start(gw->proj.paths.manifest_dir, profile, scope, &out, &err);
    if (rc < 0)
        r = gw_error_result("%s", err.msg);
    else
        r = session_text(rc, &out, rc ? "the session was not started" : "session started");
    sb_release(&out);
    return r;
}

json_t *gw_t_session_end(struct gw *gw, struct job *j, const json_t *args)
{
    (void)j;
    (void)args;
    json_t *r = write_gate(gw, "agentstack_session_end", "tried to end the native session");
    if (r)
        return r;
    if (!gw->o.session_end)
        return gw_error_result("native sessions cannot be ended by this gateway; run "
                               "`agentstack session end` in a terminal");
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int rc = gw->o.session_end(gw->proj.paths.manifest_dir, &out, &err);
    if (rc < 0)
        r = gw_error_result("%s", err.msg);
    else
        r = session_text(rc, &out, rc ? "no session was ended" : "session ended");
    sb_release(&out);
    return r;
}

static int edit_freeze(toml_edit *ed, const struct manifest *m, const json_t *args, strbuf *done,
                       strbuf *refuse)
{
    const char *from = json_string_value(json_object_get(args, "__from"));
    const char *name = json_string_value(json_object_get(args, "__name"));
    const struct mf_toolset *t = manifest_toolset(m, from);
    if (!t) {
        sb_addf(refuse, "the session's toolset '%s' is no longer in the manifest", from);
        return -1;
    }
    if (manifest_toolset(m, name)) {
        sb_addf(refuse, "toolset '%s' already exists in %s — pick another name", name, m->path);
        return -1;
    }
    if (!t->servers.n && !t->skills.n) {
        sb_addf(refuse, "nothing to freeze: toolset '%s' has no servers and no skills", from);
        return -1;
    }
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "servers", toml_strs(&t->servers));
    toml_table_set(tab, "skills", toml_strs(&t->skills));
    const char *path[2] = {m->toolsets_legacy ? "profiles" : "toolsets", name};
    struct as_err err = AS_ERR_INIT;
    int rc = toml_edit_set_table(ed, path, 2, tab, &err);
    toml_free(tab);
    if (rc < 0)
        sb_adds(refuse, err.msg);
    else
        sb_addf(done, "Froze the session's toolset '%s' as [%s.%s] (servers: %zu, skills: %zu)",
                from, m->toolsets_legacy ? "profiles" : "toolsets", name, t->servers.n,
                t->skills.n);
    return rc;
}

json_t *gw_t_session_freeze(struct gw *gw, struct job *j, const json_t *args)
{
    json_t *r = write_gate(gw, "agentstack_session_freeze",
                           "tried to freeze the native session into a toolset");
    if (r)
        return r;
    strbuf ts = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int active = gw_native_session(gw, &ts, &err);
    if (active <= 0) {
        sb_release(&ts);
        return active < 0 ? gw_error_result("%s", err.msg)
                          : gw_error_result("no native session is active for this project "
                                            "(`agentstack session start` starts one)");
    }
    const char *given = str_arg(args, "name");
    char *name = given ? xstrdup(given) : xasprintf("%s-frozen", ts.buf);
    if (!name_ok(name)) {
        free(name);
        sb_release(&ts);
        return gw_error_result("`name` must be [A-Za-z0-9_.-], 1-64 characters");
    }
    json_t *a = json_object();
    json_object_set_new(a, "__from", json_string(ts.buf));
    json_object_set_new(a, "__name", json_string(name));
    r = manifest_write(gw, j, a, edit_freeze);
    json_decref(a);
    free(name);
    sb_release(&ts);
    return r;
}
