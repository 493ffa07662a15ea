/*
 * The manifest text init writes: imported servers inline with where each
 * came from, [toolsets.default] naming them and the imported skills,
 * or a commented starter on a machine with nothing to import.
 */
#include <stdio.h>
#include <string.h>

#include "base/xalloc.h"
#include "onboard/onboard.h"

static void emit_str(const char *s, strbuf *out)
{
    toml_value *v = toml_new_string(s);
    toml_emit_value(v, out);
    toml_free(v);
}

static void emit_map(const char *key, const strvec *k, const strvec *v, strbuf *out)
{
    if (!k->n)
        return;
    sb_addf(out, "%s = { ", key);
    for (size_t i = 0; i < k->n; i++) {
        if (i)
            sb_adds(out, ", ");
        toml_emit_key(k->v[i], out);
        sb_adds(out, " = ");
        emit_str(v->v[i], out);
    }
    sb_adds(out, " }\n");
}

static void emit_list(const char *key, const strvec *v, strbuf *out)
{
    sb_addf(out, "%s = [", key);
    for (size_t i = 0; i < v->n; i++) {
        if (i)
            sb_adds(out, ", ");
        emit_str(v->v[i], out);
    }
    sb_adds(out, "]\n");
}

void onb_server_toml(const struct onb_server *s, strbuf *out)
{
    if (s->origins.n) {
        sb_adds(out, "# from ");
        for (size_t i = 0; i < s->origins.n; i++)
            sb_addf(out, "%s%s", i ? " · " : "", s->origins.v[i]);
        sb_addc(out, '\n');
    }
    sb_adds(out, "[servers.");
    toml_emit_key(s->name, out);
    sb_adds(out, "]\n");
    sb_addf(out, "type = \"%s\"\n", s->http ? "http" : "stdio");
    if (s->http && s->url) {
        sb_adds(out, "url = ");
        emit_str(s->url, out);
        sb_addc(out, '\n');
    }
    if (!s->http && s->command) {
        sb_adds(out, "command = ");
        emit_str(s->command, out);
        sb_addc(out, '\n');
        if (s->args.n)
            emit_list("args", &s->args, out);
    }
    if (s->cwd) {
        sb_adds(out, "cwd = ");
        emit_str(s->cwd, out);
        sb_addc(out, '\n');
    }
    emit_map("headers", &s->hdr_keys, &s->hdr_vals, out);
    emit_map("env", &s->env_keys, &s->env_vals, out);
    if (s->extra && toml_len(s->extra)) {
        sb_adds(out, "extra = ");
        toml_emit_value(s->extra, out);
        sb_addc(out, '\n');
    }
}

void onb_manifest_text(const struct onb_import *im, strbuf *out)
{
    sb_adds(out, "# agentstack manifest — imported by `agentstack init` from the coding CLIs on\n"
                 "# this machine. Review it, commit it; secrets are ${REF}s resolved per machine\n"
                 "# (process env, varlock, OS keychain, .env) and never written here.\n"
                 "version = 1\n");
    for (size_t i = 0; i < im->servers.n; i++) {
        sb_addc(out, '\n');
        onb_server_toml(&im->servers.v[i], out);
    }
    if (im->skills.n) {
        sb_adds(out, "\n# imported skills live in the central library ($AGENTSTACK_HOME/lib):\n");
        for (size_t i = 0; i < im->skills.n; i++) {
            sb_addf(out, "#   %s ← ", im->skills.v[i].name);
            for (size_t k = 0; k < im->skills.v[i].origins.n; k++)
                sb_addf(out, "%s%s", k ? " · " : "", im->skills.v[i].origins.v[k]);
            sb_addc(out, '\n');
        }
    }
    if (im->servers.n || im->skills.n) {
        strvec sv = STRVEC_INIT, sk = STRVEC_INIT;
        for (size_t i = 0; i < im->servers.n; i++)
            strvec_push(&sv, im->servers.v[i].name);
        for (size_t i = 0; i < im->skills.n; i++)
            strvec_push(&sk, im->skills.v[i].name);
        sb_adds(out, "\n[toolsets.default]\n");
        emit_list("servers", &sv, out);
        emit_list("skills", &sk, out);
        strvec_clear(&sv);
        strvec_clear(&sk);
    }
}

void onb_starter_text(strbuf *out)
{
    sb_adds(out, "# agentstack manifest — a starter: `agentstack init` found no coding CLI config\n"
                 "# to import on this machine. Uncomment what this project's agents may load.\n"
                 "# Secrets are ${REF}s, resolved per machine and never written here:\n"
                 "#   agentstack secret set GH_PAT\n"
                 "version = 1\n"
                 "\n"
                 "# An MCP server over stdio (the command runs on this machine):\n"
                 "# [servers.filesystem]\n"
                 "# type = \"stdio\"\n"
                 "# command = \"npx\"\n"
                 "# args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]\n"
                 "\n"
                 "# An MCP server over HTTP:\n"
                 "# [servers.github]\n"
                 "# type = \"http\"\n"
                 "# url = \"https://api.githubcopilot.com/mcp/\"\n"
                 "# headers = { Authorization = \"Bearer ${GH_PAT}\" }\n"
                 "\n"
                 "# A skill: a directory holding SKILL.md (or a name from your central library):\n"
                 "# [skills.sql-review]\n"
                 "# path = \"skills/sql-review\"\n"
                 "\n"
                 "# What to activate together:\n"
                 "# [toolsets.default]\n"
                 "# servers = [\"filesystem\", \"github\"]\n"
                 "# skills = [\"sql-review\"]\n"
                 "\n"
                 "# Which CLIs to render for (absent: every CLI detected on this machine):\n"
                 "# [targets]\n"
                 "# default = [\"claude-code\", \"codex\"]\n");
}
