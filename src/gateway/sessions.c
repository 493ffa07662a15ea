/*
 * agentstack_session_list: is a native session (`agentstack session start`)
 * active for this connection's project? See sessions.h for why the other
 * session verbs are not served over MCP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "bundle/discover.h"
#include "gateway/gw_int.h"
#include "gateway/sessions.h"

static json_t *clean(const char *s)
{
    strbuf b = SB_INIT;
    gw_one_line(s ? s : "", 200, &b);
    json_t *r = json_string(b.buf);
    sb_release(&b);
    return r;
}

static json_t *as_text(json_t *o)
{
    strbuf b = SB_INIT;
    gw_pretty(o, &b);
    json_decref(o);
    json_t *r = gw_text_result(b.buf, false);
    sb_release(&b);
    return r;
}

int gw_native_session(struct gw *gw, strbuf *toolset, struct as_err *err)
{
    if (!gw->o.session_list || !gw->proj.found)
        return 0; /* nothing to read, or no project a session could belong to */
    strbuf key = SB_INIT;
    if (discover_project_key(gw->proj.paths.base, &key) < 0) {
        sb_release(&key);
        return as_err_set(err, "cannot name this project's session record");
    }
    strbuf raw = SB_INIT;
    if (gw->o.session_list(&raw, err) != 0) {
        sb_release(&raw);
        sb_release(&key);
        return -1;
    }
    json_error_t je;
    json_t *all = json_loads(raw.buf, 0, &je);
    sb_release(&raw);
    int rc = 0;
    if (!json_is_array(all)) {
        rc = as_err_set(err, "the session list is not a JSON array");
    } else {
        size_t i;
        json_t *v;
        json_array_foreach(all, i, v)
        {
            const char *dir = json_string_value(json_object_get(v, "manifest_dir"));
            if (dir && strcmp(dir, key.buf) == 0) {
                const char *ts = json_string_value(json_object_get(v, "toolset"));
                gw_one_line(ts ? ts : "", 100, toolset);
                rc = 1;
                break;
            }
        }
    }
    json_decref(all);
    sb_release(&key);
    return rc;
}

json_t *gw_t_session_list(struct gw *gw, struct job *j, const json_t *args)
{
    (void)j;
    (void)args;
    if (!gw->o.session_list)
        return gw_error_result("native sessions cannot be read by this gateway; run "
                               "`agentstack session list` in a terminal");
    if (!gw->proj.found)
        return gw_error_result("no agentstack project is bound to this connection, so it has "
                               "no native session; `agentstack session list` shows the machine's");
    strbuf key = SB_INIT;
    if (discover_project_key(gw->proj.paths.base, &key) < 0) {
        sb_release(&key);
        return gw_error_result("cannot name this project's session record");
    }
    strbuf raw = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (gw->o.session_list(&raw, &err) != 0) {
        char buf[2048];
        json_t *r = gw_error_result("cannot read the native sessions: %s",
                                    as_err_str(&err, buf, sizeof buf));
        sb_release(&raw);
        sb_release(&key);
        return r;
    }
    json_error_t je;
    json_t *all = json_loads(raw.buf, 0, &je);
    sb_release(&raw);
    if (!json_is_array(all)) {
        json_decref(all);
        sb_release(&key);
        return gw_error_result("cannot read the native sessions: the list is not a JSON array");
    }
    json_t *mine = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(all, i, v)
    {
        const char *dir = json_string_value(json_object_get(v, "manifest_dir"));
        if (dir && strcmp(dir, key.buf) == 0) {
            mine = v;
            break;
        }
    }
    json_t *o = json_object();
    json_object_set_new(o, "project", clean(gw->proj.dir ? gw->proj.dir : key.buf));
    if (mine) {
        json_t *st = json_object_get(mine, "started_unix");
        json_object_set_new(o, "active", json_true());
        json_object_set_new(o, "toolset",
                            clean(json_string_value(json_object_get(mine, "toolset"))));
        json_object_set_new(o, "started_unix",
                            json_integer(json_is_integer(st) ? json_integer_value(st) : 0));
        json_object_set_new(o, "abandoned",
                            json_boolean(json_is_true(json_object_get(mine, "abandoned"))));
        json_object_set_new(o, "native_files_written", json_true());
        json_object_set_new(o, "note",
                            json_string("A native session wrote this toolset into the harness's "
                                        "own files here. End it (restoring those files byte for "
                                        "byte) in a terminal: agentstack session end"));
    } else {
        json_object_set_new(o, "active", json_false());
        json_object_set_new(o, "note",
                            json_string("No native session is active for this project. A native "
                                        "session writes project files, so it is started and "
                                        "ended only in a terminal (agentstack session start "
                                        "<toolset> / end); this gateway writes none."));
    }
    json_decref(all);
    sb_release(&key);
    return as_text(o);
}
