/* guard wire — the shapes of a CLI's pre-tool hook file (where each
 * lives is in the CLI's adapter descriptor, docs/adapters.md) and the
 * JSON edits that add or remove our entries without touching anyone
 * else's. Our entries are recognized by the marker "agentstack-guard" in
 * their command (the wrapper's file name). */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "guard/guard_int.h"

int guard_wire_shape_parse(const char *name, enum guard_wire_shape *out)
{
    static const char *const names[] = {"claude", "flat", "copilot", "plugin"};
    static const enum guard_wire_shape shapes[] = {GUARD_W_CLAUDE, GUARD_W_FLAT, GUARD_W_COPILOT,
                                                   GUARD_W_PLUGIN};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (name && !strcmp(name, names[i])) {
            *out = shapes[i];
            return 0;
        }
    return -1;
}

void guard_hook_command(const char *ash, enum guard_proto p, strbuf *out)
{
    strbuf w = SB_INIT;
    sb_addf(&w, "%s/guard/%s", ash, GUARD_MARKER);
    sb_add_shquoted(out, w.buf);
    sb_addf(out, " check --protocol %s", guard_proto_name(p));
    sb_release(&w);
}

void guard_wrapper_script(const char *exe, strbuf *out)
{
    sb_adds(out, "#!/bin/sh\n"
                 "# agentstack-guard: written by `agentstack guard install`, removed by\n"
                 "# `agentstack guard uninstall`. The coding CLIs' pre-tool hooks call this.\n"
                 "exec ");
    sb_add_shquoted(out, exe);
    sb_adds(out, " guard \"$@\"\n");
}

static void js_string(const char *s, strbuf *out)
{
    json_t *j = json_string(s);
    json_dump_compact(j, out);
    json_decref(j);
}

void guard_owned_file(const struct guard_wire *w, const char *ash, strbuf *out)
{
    strbuf wrapper = SB_INIT, cmd = SB_INIT;
    sb_addf(&wrapper, "%s/guard/%s", ash, GUARD_MARKER);
    guard_hook_command(ash, w->proto, &cmd);
    if (w->shape == GUARD_W_COPILOT) {
        json_t *entry =
            json_pack("{s:s,s:s,s:i}", "type", "command", "bash", cmd.buf, "timeoutSec", 30);
        json_t *root = json_pack("{s:i,s:{s:[o]}}", "version", 1, "hooks", "preToolUse", entry);
        json_dump_pretty(root, out);
        json_decref(root);
    } else if (!strcmp(w->adapter, "opencode")) {
        sb_adds(out, "// agentstack-guard: written by `agentstack guard install`, removed by\n"
                     "// `agentstack guard uninstall`. Forwards each tool call to the host guard\n"
                     "// as a Claude-style payload; fails open when the guard is not installed.\n"
                     "import { spawnSync } from \"node:child_process\";\n"
                     "import { existsSync } from \"node:fs\";\n\nconst GUARD = ");
        js_string(wrapper.buf, out);
        sb_adds(out, ";\n\nexport const AgentstackGuard = async ({ directory }) => ({\n"
                     "  \"tool.execute.before\": async (input, output) => {\n"
                     "    if (!existsSync(GUARD)) return;\n"
                     "    const payload = JSON.stringify({ tool_name: input.tool, tool_input: "
                     "output.args, cwd: directory });\n"
                     "    const r = spawnSync(GUARD, [\"check\", \"--protocol\", \"claude\"], "
                     "{ input: payload, encoding: \"utf8\" });\n"
                     "    if (r.error) return;\n"
                     "    let out;\n"
                     "    try { out = JSON.parse(r.stdout || \"null\"); } catch { return; }\n"
                     "    const d = out && out.hookSpecificOutput;\n"
                     "    if (d && d.permissionDecision === \"deny\") throw new "
                     "Error(d.permissionDecisionReason);\n"
                     "  },\n});\n");
    } else {
        sb_adds(out, "// agentstack-guard: written by `agentstack guard install`, removed by\n"
                     "// `agentstack guard uninstall`. Forwards each tool call to the host guard\n"
                     "// as a Claude-style payload; fails open when the guard is not installed.\n"
                     "import { spawnSync } from \"node:child_process\";\n"
                     "import { existsSync } from \"node:fs\";\n\nconst GUARD = ");
        js_string(wrapper.buf, out);
        sb_adds(out, ";\n\nexport default function (pi: any) {\n"
                     "  pi.on(\"tool_call\", async (event: any, ctx: any) => {\n"
                     "    if (!existsSync(GUARD)) return undefined;\n"
                     "    const payload = JSON.stringify({ tool_name: event.toolName, tool_input: "
                     "event.input, cwd: ctx?.cwd ?? process.cwd() });\n"
                     "    const r = spawnSync(GUARD, [\"check\", \"--protocol\", \"claude\"], "
                     "{ input: payload, encoding: \"utf8\" });\n"
                     "    if (r.error) return undefined;\n"
                     "    try {\n"
                     "      const d = JSON.parse(r.stdout || \"null\")?.hookSpecificOutput;\n"
                     "      if (d?.permissionDecision === \"deny\") return { block: true, reason: "
                     "d.permissionDecisionReason };\n"
                     "    } catch {}\n"
                     "    return undefined;\n"
                     "  });\n}\n");
    }
    sb_release(&wrapper);
    sb_release(&cmd);
}

/* ---- JSON edits ---------------------------------------------------------- */

static bool ours_cmd(const json_t *h)
{
    const char *c = json_string_value(json_object_get(h, "command"));
    if (!c)
        c = json_string_value(json_object_get(h, "bash"));
    return c && strstr(c, GUARD_MARKER) != NULL;
}

/* An event entry without our hooks, or NULL when nothing of it remains. */
static json_t *strip_entry(const struct guard_wire *w, const json_t *e)
{
    if (w->shape == GUARD_W_FLAT)
        return ours_cmd(e) ? NULL : json_deep_copy(e);
    json_t *hooks = json_object_get(e, "hooks");
    if (!json_is_array(hooks))
        return ours_cmd(e) ? NULL : json_deep_copy(e);
    json_t *copy = json_deep_copy(e);
    json_t *kept = json_array();
    size_t i;
    json_t *h;
    json_array_foreach(hooks, i, h) if (!ours_cmd(h)) json_array_append(kept, h);
    bool had = json_array_size(kept) != json_array_size(hooks);
    if (had && json_array_size(kept) == 0) {
        json_decref(kept);
        json_decref(copy);
        return NULL;
    }
    json_object_set_new(copy, "hooks", kept);
    return copy;
}

static json_t *our_entry(const struct guard_wire *w, const char *ash)
{
    strbuf cmd = SB_INIT;
    guard_hook_command(ash, w->proto, &cmd);
    json_t *e;
    if (w->shape == GUARD_W_FLAT)
        e = json_pack("{s:s}", "command", cmd.buf);
    else
        e = json_pack("{s:s,s:[{s:s,s:s,s:i}]}", "matcher", "*", "hooks", "type", "command",
                      "command", cmd.buf, "timeout", 30);
    sb_release(&cmd);
    return e;
}

json_t *guard_wire_edit(const struct guard_wire *w, const json_t *cur, const char *ash,
                        bool install)
{
    json_t *out = json_is_object(cur) ? json_deep_copy(cur) : json_object();
    for (size_t k = 0; k < GUARD_WIRE_EVENTS && w->events[k]; k++) {
        const char *ev = w->events[k];
        json_t *arr = json_object_get(cur, ev);
        json_t *next = json_array();
        size_t i;
        json_t *e;
        if (json_is_array(arr))
            json_array_foreach(arr, i, e)
            {
                json_t *s = strip_entry(w, e);
                if (s)
                    json_array_append_new(next, s);
            }
        if (install)
            json_array_append_new(next, our_entry(w, ash));
        if (json_array_size(next))
            json_object_set_new(out, ev, next);
        else {
            json_decref(next);
            json_object_del(out, ev);
        }
    }
    if (json_object_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

bool guard_wire_installed(const struct guard_wire *w, const json_t *cur)
{
    if (!json_is_object(cur))
        return false;
    for (size_t k = 0; k < GUARD_WIRE_EVENTS && w->events[k]; k++) {
        json_t *arr = json_object_get(cur, w->events[k]);
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
        {
            if (ours_cmd(e))
                found = true;
            json_t *hooks = json_object_get(e, "hooks");
            size_t j;
            json_t *h;
            json_array_foreach(hooks, j, h) if (ours_cmd(h)) found = true;
        }
        if (!found)
            return false;
    }
    return true;
}
