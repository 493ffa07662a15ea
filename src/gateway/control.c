/*
 * The control plane (docs/gateway.md): the ordered tool table, tools/list, tools/call
 * routing (exact search names → "__" names to the one dispatch → the table →
 * unknown tool), tools_search and doctor (the read-only project views are in
 * control_ext.c).
 *
 * Only tools that are built are listed. No tool name contains
 * trust|consent|approve|grant and no description offers to grant anything:
 * nothing over MCP can change the trust store. The tools that change the
 * project (add_*, create_toolset, session_*) are in control_write.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "bundle/ref.h"
#include "gateway/control_ext.h"
#include "gateway/control_write.h"
#include "gateway/gw_int.h"
#include "gateway/sessions.h"
#include "secrets/backends.h"
#include "secrets/secrets.h"
#include "trust/trust.h"

/* ---- the table ---------------------------------------------------------------- */

typedef json_t *(*ctl_fn)(struct gw *gw, struct job *j, const json_t *args);

static json_t *t_doctor(struct gw *gw, struct job *j, const json_t *args);
static json_t *t_list_loadable(struct gw *gw, struct job *j, const json_t *args);
static json_t *t_load(struct gw *gw, struct job *j, const json_t *args);
static json_t *t_lease_open(struct gw *gw, struct job *j, const json_t *args);
static json_t *t_lease_status(struct gw *gw, struct job *j, const json_t *args);
static json_t *t_lease_close(struct gw *gw, struct job *j, const json_t *args);
static json_t *t_lease_freeze(struct gw *gw, struct job *j, const json_t *args);

struct ctl_tool {
    const char *name;
    ctl_fn fn; /* NULL: not built, not listed */
    const char *desc;
    const char *schema; /* JSON */
};

static const char *const schema_empty = "{\"type\":\"object\",\"properties\":{}}";

/* In the order docs/gateway.md lists them ("The control plane"). */
static const struct ctl_tool table[] = {
    {"agentstack_search", gw_t_search,
     "Find servers, skills and packs by name or description in this project and in the "
     "central library on this machine (read-only, offline). Returns JSON: project hits and "
     "library hits with kind, name, source and whether the manifest already names them.",
     "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\","
     "\"description\":\"Case-insensitive words to find; empty lists everything.\"}}}"},
    {"tools_search", NULL,
     "Search this project's proxied MCP tools (compact mode keeps their schemas out of "
     "tools/list). Give a query to rank tools by name, server and description, or "
     "entity=\"server__tool:tool\" for one tool's input schema. Call a tool with tools/call "
     "using its full server__tool name.",
     "{\"type\":\"object\",\"properties\":{"
     "\"query\":{\"type\":\"string\",\"description\":\"Words to match; empty lists every "
     "proxied tool.\"},"
     "\"entity\":{\"type\":\"string\",\"description\":\"server__tool:tool — returns that "
     "tool's description and input schema.\"},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Most hits to return "
     "(default 20).\"},"
     "\"maxResponseSize\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Stop adding "
     "hits before the answer exceeds this many bytes.\"}}}"},
    {"tools_bindings", NULL,
     "TypeScript bindings for code mode: a recipe, client.ts (codemode.server.tool(input) for "
     "every proxied tool this connection may call) and a small static shim that POSTs each "
     "call to this gateway's loopback endpoint, where the same policy and audit apply. Writes "
     "nothing; secret-free.",
     NULL},
    {"agentstack_list", gw_t_list,
     "Show this project's manifest as the gateway sees it, as JSON: servers (how each runs, "
     "secrets by name only, whether it is proxied now), skills, toolsets, the default toolset "
     "and the open lease.",
     NULL},
    {"agentstack_doctor", t_doctor,
     "Five-line health check of this connection: harnesses on this machine, servers, skills, "
     "how many referenced secrets resolve here (presence only, never values), and whether "
     "auto mode serves this project (with the command a person runs to change that).",
     NULL},
    {"agentstack_add_from", NULL, NULL, NULL},
    {"agentstack_list_loadable", t_list_loadable, NULL /* built per listing */,
     "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\",\"description\":"
     "\"Case-insensitive words to find in a skill's name or description; empty lists "
     "all.\"}}}"},
    {"agentstack_load", t_load,
     "Load one skill's instructions into your context, on demand. Give its name (see "
     "agentstack_list_loadable) and a short reason; the reason is recorded. The bytes "
     "served are the ones pinned in agentstack.lock.",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":"
     "\"Skill name.\"},\"reason\":{\"type\":\"string\",\"description\":\"Why you need it, in "
     "a sentence.\"}},\"required\":[\"name\",\"reason\"]}"},
    {"agentstack_lease_open", t_lease_open,
     "Narrow this connection to one toolset from the manifest: only its servers are proxied "
     "and only its skills load. Lives in memory for this MCP process; writes no files.",
     "{\"type\":\"object\",\"properties\":{\"profile\":{\"type\":\"string\",\"description\":"
     "\"Toolset name from the manifest.\"}},\"required\":[\"profile\"]}"},
    {"agentstack_lease_status", t_lease_status,
     "Show the open toolset lease of this connection, if any, and the skills loaded under it.",
     NULL},
    {"agentstack_lease_close", t_lease_close,
     "Close this connection's toolset lease. A project that declares toolsets goes back to "
     "the control plane only.",
     NULL},
    {"agentstack_lease_freeze", t_lease_freeze,
     "Propose the open lease as a new toolset in the manifest (its servers and the skills "
     "actually loaded). Writes only the manifest; a person reviews it and re-locks.",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":"
     "\"New toolset name (default <profile>-frozen).\"}}}"},
    {"agentstack_explain", gw_t_explain,
     "Explain one server, server__tool, skill or toolset as JSON: where it is declared, its "
     "pin state in agentstack.lock, and the policy decision with the rule and layer "
     "(machine or project) that made it.",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
     "\"description\":\"A server, server__tool, skill or toolset name.\"}},"
     "\"required\":[\"name\"]}"},
    {"agentstack_diff", gw_t_diff,
     "Show what is pending between the manifest and what agentstack.lock pins (unpinned or "
     "drifted items) and whether the project is trusted, as JSON. Read-only: a person runs "
     "the follow-up commands it names.",
     "{\"type\":\"object\",\"properties\":{\"scope\":{\"type\":\"string\","
     "\"description\":\"all (default), or one kind: servers, skills, instructions, "
     "executables, settings, extensions, workflows, blueprints, variants.\"}}}"},
    {"agentstack_add_skill", gw_t_add_skill,
     "Propose a skill for this project: writes [skills.<name>] (a git repository or a folder "
     "inside the project) into the manifest and nothing else — nothing is fetched. The "
     "manifest change stops this project being served until a person reviews it.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"Skill name.\"},"
     "\"source\":{\"type\":\"string\",\"description\":\"A git URL or a project folder "
     "(instead of git or path).\"},"
     "\"git\":{\"type\":\"string\",\"description\":\"Repository URL.\"},"
     "\"rev\":{\"type\":\"string\",\"description\":\"Branch, tag or commit (git).\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"Folder inside the project, "
     "relative.\"}},\"required\":[\"name\"]}"},
    {"agentstack_create_toolset", gw_t_create_toolset,
     "Propose a toolset: writes [toolsets.<name>] naming servers and skills the manifest "
     "already has, and nothing else. The manifest change stops this project being served "
     "until a person reviews it.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"New toolset name.\"},"
     "\"servers\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"skills\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
     "\"required\":[\"name\"]}"},
    {"agentstack_session_start", gw_t_session_start,
     "Start a native session of one toolset, as `agentstack session start` does: its servers "
     "and skills are written into each CLI's own files and `agentstack_session_end` puts "
     "every file back. Needs a trusted project and no open lease.",
     "{\"type\":\"object\",\"properties\":{"
     "\"profile\":{\"type\":\"string\",\"description\":\"Toolset name from the "
     "manifest.\"},"
     "\"scope\":{\"type\":\"string\",\"enum\":[\"project\",\"global\"]}},"
     "\"required\":[\"profile\"]}"},
    {"agentstack_session_end", gw_t_session_end,
     "End this project's native session: every file, link and ledger entry it changed goes "
     "back to its bytes from before the start.",
     NULL},
    {"agentstack_session_list", gw_t_session_list,
     "Whether a native session (`agentstack session start`, run in a terminal) is active for "
     "this project: toolset, start time. Read-only; sessions are started and ended only in a "
     "terminal because they write project files.",
     schema_empty},
    {"agentstack_session_freeze", gw_t_session_freeze,
     "Propose the active native session's toolset as a new toolset in the manifest (default "
     "<toolset>-frozen). Writes only the manifest; the change stops this project being "
     "served until a person reviews it.",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
     "\"description\":\"New toolset name (default <toolset>-frozen).\"}}}"},
    {"agentstack_add_server", gw_t_add_server,
     "Propose an MCP server for this project: writes [servers.<name>] into the manifest and "
     "nothing else — nothing is run or contacted, ${NAME} references are kept as written and "
     "a literal secret is refused. The manifest change stops this project being served until "
     "a person reviews it.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"Server name.\"},"
     "\"transport\":{\"type\":\"string\",\"enum\":[\"stdio\",\"http\"]},"
     "\"url\":{\"type\":\"string\",\"description\":\"http: the endpoint.\"},"
     "\"command\":{\"type\":\"string\",\"description\":\"stdio: the program.\"},"
     "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
     "\"description\":\"Values as ${NAME} references.\"},"
     "\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
     "\"profile\":{\"type\":\"string\",\"description\":\"Also add it to this "
     "toolset.\"},"
     "\"targets\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
     "\"required\":[\"name\"]}"},
};
#define NTABLE (sizeof table / sizeof table[0])

static const char *const list_loadable_base =
    "List the skills this connection can load with agentstack_load (name, description, "
    "origin, whether pinned and already loaded). Filter with query. Skills are not preloaded: "
    "load one only when the task needs it.";

static bool is_search(const char *n)
{
    return strcmp(n, "tools_search") == 0;
}

/* Answered after discovery, outside the table's synchronous handlers. */
static bool is_async(const char *n)
{
    return is_search(n) || strcmp(n, "tools_bindings") == 0;
}

json_t *gw_control_tools(struct gw *gw, const struct gw_surface *sf)
{
    json_t *tools = json_array();
    for (size_t i = 0; i < NTABLE; i++) {
        const struct ctl_tool *t = &table[i];
        if (!t->fn && !is_async(t->name))
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(t->name));
        if (strcmp(t->name, "agentstack_list_loadable") == 0) {
            strbuf d = SB_INIT;
            sb_adds(&d, list_loadable_base);
            sb_adds(&d, "\n\n");
            gw_loadable_index(gw, sf, &d);
            json_object_set_new(o, "description", json_string(d.buf));
            sb_release(&d);
        } else {
            json_object_set_new(o, "description", json_string(t->desc));
        }
        json_error_t je;
        json_t *schema = json_loads(t->schema ? t->schema : schema_empty, 0, &je);
        json_object_set_new(o, "inputSchema", schema ? schema : json_object());
        json_array_append_new(tools, o);
    }
    json_t *x = gw_execute_tool(gw);
    if (x)
        json_array_append_new(tools, x);
    return tools;
}

/* ---- tools/list ------------------------------------------------------------------- */

static void list_finish(struct gw *gw, struct job *j)
{
    struct gw_surface *sf = j->sf;
    json_t *tools = gw_control_tools(gw, sf);
    if (gw->o.transparent && sf->gate == GW_GATE_OPEN) {
        gw_toolvec v = {0};
        gw_surface_allowed(sf, &v);
        for (size_t i = 0; i < v.n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(v.v[i]->full));
            json_object_set_new(o, "description", json_string(v.v[i]->desc));
            json_object_set_new(o, "inputSchema", json_deep_copy(v.v[i]->schema));
            mcp_tool_for_version(o, v.v[i]->extra, j->modern ? MCP_VERSION_MODERN : gw->negotiated);
            json_array_append_new(tools, o);
        }
        vec_free(&v);
    }
    json_t *r = json_object();
    json_object_set_new(r, "tools", tools);
    if (j->modern) {
        json_object_set_new(r, "ttlMs", json_integer(0));
        json_object_set_new(r, "cacheScope", json_string("private"));
    }
    gw_reply(gw, j, r);
    gw_job_free(j);
}

void gw_tools_list(struct gw *gw, struct job *j)
{
    gw_refresh(gw, j->modern, false);
    j->sf = gw_surface_for(gw, j->modern);
    gw_surface_ref(j->sf);
    if (gw->o.transparent && j->sf->gate == GW_GATE_OPEN)
        gw_surface_discover(j->sf, list_finish, j); /* the first listing pays discovery */
    else
        list_finish(gw, j);
}

/* ---- refusals ------------------------------------------------------------------------ */

json_t *gw_trust_refusal(struct gw *gw, const char *subject, const char *what)
{
    strbuf note = SB_INIT;
    gw_trust_note(gw, gw->last_state, &note);
    json_t *r = gw_error_result("blocked: %s %s — this project is not trusted on this "
                                "machine\nnothing ran · %s",
                                subject, what, note.buf);
    strbuf detail = SB_INIT;
    sb_addf(&detail, "%s: %s", gw->last_state == TRUST_CHANGED ? "changed" : "untrusted", what);
    gw_audit(gw, subject, "trust", "", "denied", detail.buf, NULL, NULL, 0);
    sb_release(&detail);
    sb_release(&note);
    return r;
}

/* ---- tools_search --------------------------------------------------------------------- */

static void search_finish(struct gw *gw, struct job *j)
{
    struct gw_surface *sf = j->sf;
    const char *entity = json_string_value(json_object_get(j->args, "entity"));
    const char *query = json_string_value(json_object_get(j->args, "query"));
    json_t *lim = json_object_get(j->args, "limit");
    long limit =
        json_is_integer(lim) && json_integer_value(lim) > 0 ? (long)json_integer_value(lim) : 20;
    json_t *mrs = json_object_get(j->args, "maxResponseSize");
    long max_size =
        json_is_integer(mrs) && json_integer_value(mrs) > 0 ? (long)json_integer_value(mrs) : 0;
    gw_toolvec v = {0};
    gw_surface_allowed(sf, &v);
    strbuf out = SB_INIT;
    if (entity && *entity) {
        if (!gw_entity_render(v.v, v.n, entity, &out)) {
            strbuf e = SB_INIT;
            gw_one_line(entity, 200, &e);
            sb_addf(&out,
                    "No proxied tool matches entity '%s'. Search with a query to see "
                    "the names.",
                    e.buf);
            sb_release(&e);
        }
    } else {
        gw_search_render(v.v, v.n, query, limit, max_size, &out);
        if (v.n == 0 && sf->fenced && sf->note)
            sb_addf(&out, "\n%s", sf->note);
        else if (v.n == 0 && sf->note)
            sb_addf(&out, "\n%s", sf->note);
    }
    vec_free(&v);
    strbuf late = SB_INIT;
    for (size_t i = 0; i < sf->ups.n; i++)
        if (sf->ups.v[i]->late)
            sb_addf(&late, "%s%s", late.len ? ", " : "", sf->ups.v[i]->name);
    if (late.len)
        sb_addf(&out, "\n(still starting, not searched yet: %s — search again shortly)", late.buf);
    sb_release(&late);
    for (size_t i = 0; i < sf->ups.n; i++)
        if (sf->ups.v[i]->needs_login)
            sb_addf(&out, "\n(needs login, not searched: %s — run `agentstack auth login %s`)",
                    sf->ups.v[i]->name, sf->ups.v[i]->name);
    gw_reply(gw, j, gw_text_result(out.buf, false));
    sb_release(&out);
    gw_job_free(j);
}

static void do_search(struct gw *gw, struct job *j)
{
    struct gw_surface *sf = gw_surface_for(gw, j->modern);
    if (sf->gate != GW_GATE_OPEN) {
        strbuf out = SB_INIT;
        sb_adds(&out, "No proxied tools available. ");
        sb_adds(&out, sf->note ? sf->note : "");
        gw_reply(gw, j, gw_text_result(out.buf, false));
        sb_release(&out);
        gw_job_free(j);
        return;
    }
    j->sf = sf;
    gw_surface_ref(sf);
    gw_surface_discover(sf, search_finish, j);
}

/* ---- tools_bindings ------------------------------------------------------------------- */

static void bindings_finish(struct gw *gw, struct job *j)
{
    gw_toolvec v = {0};
    gw_surface_allowed(j->sf, &v);
    strbuf out = SB_INIT;
    if (v.n == 0) {
        sb_adds(&out, "This project proxies no upstream MCP tools on this connection, so there "
                      "is nothing to bind.");
        if (j->sf->note)
            sb_addf(&out, "\n%s", j->sf->note);
    } else {
        gw_bindings_render(v.v, v.n, j->sf == gw->cur ? gw_cm_path(gw) : NULL, &out);
    }
    vec_free(&v);
    gw_reply(gw, j, gw_text_result(out.buf, false));
    sb_release(&out);
    gw_job_free(j);
}

static void do_bindings(struct gw *gw, struct job *j)
{
    /* Code mode calls arrive on the connection-era surface (the endpoint's). */
    struct gw_surface *sf = gw_surface_for(gw, false);
    if (sf->gate != GW_GATE_OPEN) {
        strbuf out = SB_INIT;
        sb_adds(&out, "No proxied tools available. ");
        sb_adds(&out, sf->note ? sf->note : "");
        gw_reply(gw, j, gw_text_result(out.buf, false));
        sb_release(&out);
        gw_job_free(j);
        return;
    }
    j->sf = sf;
    gw_surface_ref(sf);
    gw_surface_discover(sf, bindings_finish, j);
}

/* ---- tools/call ------------------------------------------------------------------------ */

void gw_tools_call(struct gw *gw, struct job *j)
{
    const char *name = json_string_value(json_object_get(j->params, "name"));
    json_t *args = json_object_get(j->params, "arguments");
    if (!name || (args && !json_is_object(args) && !json_is_null(args))) {
        gw_reply_error(gw, j, MCP_INVALID_PARAMS,
                       "Invalid params: tools/call needs a string \"name\" and an object "
                       "\"arguments\"",
                       NULL);
        gw_job_free(j);
        return;
    }
    j->name = xstrdup(name);
    j->args = json_is_object(args) ? json_incref(args) : json_object();
    bool lease_verb =
        strcmp(name, "agentstack_lease_open") == 0 || strcmp(name, "agentstack_lease_close") == 0;
    gw_refresh(gw, j->modern, lease_verb);
    if (strcmp(name, "tools_execute") == 0) {
        gw_execute(gw, j);
        return;
    }
    if (is_search(name)) {
        do_search(gw, j);
        return;
    }
    if (strcmp(name, "tools_bindings") == 0) {
        do_bindings(gw, j);
        return;
    }
    if (strstr(name, "__")) {
        gw_dispatch(gw, j);
        return;
    }
    for (size_t i = 0; i < NTABLE; i++) {
        if (table[i].fn && strcmp(table[i].name, name) == 0) {
            json_t *r = table[i].fn(gw, j, j->args);
            gw_reply(gw, j, r);
            gw_job_free(j);
            return;
        }
    }
    if (strcmp(name, "agentstack_create_profile") == 0) { /* the unlisted alias */
        json_t *r = gw_t_create_toolset(gw, j, j->args);
        gw_reply(gw, j, r);
        gw_job_free(j);
        return;
    }
    strbuf n = SB_INIT;
    gw_one_line(name, 200, &n);
    gw_reply(gw, j, gw_error_result("unknown tool '%s'", n.buf));
    sb_release(&n);
    gw_job_free(j);
}

/* ---- handlers ------------------------------------------------------------------------- */

/* A fresh model of the project (for answers that need the manifest even when
 * the surface holds none). NULL + err when there is none or it is broken. */
static struct manifest *fresh_manifest(struct gw *gw, struct as_err *err)
{
    if (!gw->proj.found) {
        as_err_set(err, "no agentstack project is bound to this connection");
        return NULL;
    }
    return manifest_load(&gw->proj.paths, err);
}

static const struct manifest *surface_manifest(struct gw *gw, struct manifest **owned,
                                               struct as_err *err)
{
    struct gw_surface *sf = gw->cur;
    *owned = NULL;
    if (sf && sf->m)
        return sf->m;
    *owned = fresh_manifest(gw, err);
    return *owned;
}

static json_t *t_doctor(struct gw *gw, struct job *j, const json_t *args)
{
    (void)args;
    struct gw_surface *sf = gw_surface_for(gw, j->modern);
    strbuf out = SB_INIT;
    int det = 0, known = 0;
    if (gw->o.harness_count && gw->o.harness_count(&det, &known) == 0)
        sb_addf(&out, "Harnesses: %d/%d known coding CLIs detected on this machine\n", det, known);
    else
        sb_adds(&out, "Harnesses: not counted by this gateway (run `agentstack doctor`)\n");
    struct as_err err = AS_ERR_INIT;
    struct manifest *owned = NULL;
    const struct manifest *m = surface_manifest(gw, &owned, &err);
    if (!m) {
        char buf[2300];
        sb_addf(&out, "Servers: none — %s\n", as_err_str(&err, buf, sizeof buf));
        sb_adds(&out, "Skills: none\nSecrets: none referenced\n");
    } else {
        size_t proxied = sf->gate == GW_GATE_OPEN ? sf->ups.n : 0;
        sb_addf(&out, "Servers: %zu declared · %zu proxied now", m->servers.n, proxied);
        if (sf->toolset)
            sb_addf(&out, " (toolset %s)", sf->toolset);
        else if (sf->fenced)
            sb_adds(&out, " (fenced: no lease open)");
        sb_addc(&out, '\n');
        sb_addf(&out, "Skills: %zu declared in the manifest, plus the built-in manual\n",
                m->skills.n);
        strvec refs = STRVEC_INIT;
        ref_manifest_refs(m, &refs);
        bool may_resolve = !gw->proj.gated || gw->last_state == TRUST_TRUSTED;
        if (refs.n == 0) {
            sb_adds(&out, "Secrets: none referenced\n");
        } else if (!may_resolve) {
            sb_addf(&out,
                    "Secrets: %zu referenced — not looked up while this project is not "
                    "trusted\n",
                    refs.n);
        } else {
            /* Presence only: keychain values are never read here;
             * its item names are listed instead. */
            struct sec_chain_opts so = {0};
            so.project_dotenv = gw->proj.paths.env_file;
            so.no_keychain = true;
            struct sec_chain *c = sec_chain_full(&so);
            strvec kc = STRVEC_INIT;
            struct as_err kerr = AS_ERR_INIT;
            bool have_kc = false;
            size_t ok = 0;
            for (size_t i = 0; i < refs.n; i++) {
                if (sec_locate(c, refs.v[i], NULL) == SEC_FOUND) {
                    ok++;
                    continue;
                }
                if (!have_kc) {
                    have_kc = true;
                    sec_keychain_names(&kc, &kerr);
                }
                if (strvec_find(&kc, refs.v[i]) >= 0)
                    ok++;
            }
            strvec_clear(&kc);
            sec_chain_free(c);
            sb_addf(&out, "Secrets: %zu/%zu resolvable (presence only)\n", ok, refs.n);
        }
        strvec_clear(&refs);
    }
    if (owned)
        manifest_free(owned);
    sb_adds(&out, "Trust (auto mode): ");
    if (!gw->proj.found) {
        sb_adds(&out, "no project bound — open the agent in a directory with "
                      "agentstack.toml");
    } else if (gw->last_state == TRUST_TRUSTED) {
        sb_adds(&out, "trusted — nothing to do");
    } else {
        sb_addf(&out, "%s — a person reviews it and runs `agentstack trust %s`",
                gw->last_state == TRUST_CHANGED ? "changed since trusted" : "not trusted",
                gw->proj.dir);
        if (!gw->proj.gated)
            sb_adds(&out, " (this connection names the project explicitly, so it is served)");
    }
    json_t *r = gw_text_result(out.buf, false);
    sb_release(&out);
    return r;
}

static json_t *t_list_loadable(struct gw *gw, struct job *j, const json_t *args)
{
    const char *q = json_string_value(json_object_get(args, "query"));
    bool is_error = false;
    return gw_list_loadable(gw, gw_surface_for(gw, j->modern), q, &is_error);
}

static json_t *t_load(struct gw *gw, struct job *j, const json_t *args)
{
    return gw_load(gw, gw_surface_for(gw, j->modern), args);
}

static json_t *t_lease_open(struct gw *gw, struct job *j, const json_t *args)
{
    return gw_lease_open(gw, args, j->modern);
}

static json_t *t_lease_status(struct gw *gw, struct job *j, const json_t *args)
{
    (void)j;
    (void)args;
    return gw_lease_status(gw);
}

static json_t *t_lease_close(struct gw *gw, struct job *j, const json_t *args)
{
    (void)args;
    return gw_lease_close(gw, j->modern);
}

static json_t *t_lease_freeze(struct gw *gw, struct job *j, const json_t *args)
{
    return gw_lease_freeze(gw, args, j->modern);
}
