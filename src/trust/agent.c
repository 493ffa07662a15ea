/* trust agent — is this process an agent's? (see trust_agent_context in
 * trust.h). Walks the parent chain through /proc: each ancestor's comm,
 * executable and first two argv words are compared with the coding-agent
 * CLIs the guard knows, and an ancestor that is this very binary running
 * `run` or `mcp` counts too. Bounded: at most 64 ancestors, 4 KiB of
 * cmdline each. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "trust/trust.h"

static const char *const agent_names[] = {"claude",   "codex", "gemini", "cursor-agent", "copilot",
                                          "opencode", "pi",    "aider",  "goose",        "amp",
                                          "qwen",     "crush", "droid",  "auggie",       NULL};
/* npm packages of agent CLIs started as `node …/<package>/…` */
static const char *const agent_packages[] = {"@anthropic-ai/claude-code",
                                             "@openai/codex",
                                             "@google/gemini-cli",
                                             "opencode-ai",
                                             "@github/copilot",
                                             "@sourcegraph/amp",
                                             "@qwen-code/",
                                             "@charmland/crush",
                                             NULL};
static const char *const agent_env[] = {"CLAUDECODE",
                                        "CLAUDE_CODE_ENTRYPOINT",
                                        "CODEX_SANDBOX",
                                        "CODEX_SANDBOX_NETWORK_DISABLED",
                                        "GEMINI_CLI",
                                        "AGENTSTACK_RUN_ID",
                                        NULL};

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static bool named_agent(const char *name)
{
    char n[256];
    snprintf(n, sizeof n, "%s", name);
    char *dot = strrchr(n, '.');
    if (dot && (!strcmp(dot, ".js") || !strcmp(dot, ".mjs") || !strcmp(dot, ".cjs")))
        *dot = '\0';
    for (size_t i = 0; agent_names[i]; i++)
        if (!strcmp(n, agent_names[i]))
            return true;
    return false;
}

static int read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (int)n;
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_small(path, buf, sizeof buf) < 0)
        return 0;
    const char *p = strstr(buf, "\nPPid:");
    return p ? (pid_t)atoi(p + 6) : 0;
}

bool trust_agent_context(strbuf *why)
{
    for (size_t i = 0; agent_env[i]; i++) {
        const char *v = getenv(agent_env[i]);
        if (v && v[0]) {
            sb_addf(why, "the environment says it is an agent's (%s is set)", agent_env[i]);
            return true;
        }
    }
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = '\0';
    pid_t pid = getppid();
    for (int depth = 0; depth < 64 && pid > 1; depth++) {
        char path[64], comm[256] = "", exe[PATH_MAX] = "", cmd[4096];
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
        if (read_small(path, comm, sizeof comm) > 0)
            comm[strcspn(comm, "\n")] = '\0';
        snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
        ssize_t el = readlink(path, exe, sizeof exe - 1);
        exe[el > 0 ? el : 0] = '\0';
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        int cl = read_small(path, cmd, sizeof cmd);
        const char *argv0 = cl > 0 ? cmd : "";
        const char *argv1 = cl > 0 && (int)strlen(cmd) + 1 < cl ? cmd + strlen(cmd) + 1 : "";
        const char *hit = named_agent(comm)                  ? comm
                          : el > 0 && named_agent(base(exe)) ? base(exe)
                          : named_agent(base(argv0))         ? base(argv0)
                          : named_agent(base(argv1))         ? base(argv1)
                                                             : NULL;
        for (size_t k = 0; !hit && agent_packages[k]; k++)
            if (strstr(argv1, agent_packages[k]))
                hit = agent_packages[k];
        if (!hit && el > 0 && sl > 0 && !strcmp(exe, self)) {
            /* an agentstack ancestor that launches agents or serves them */
            for (const char *a = argv1; cl > 0 && a < cmd + cl; a += strlen(a) + 1)
                if (!strcmp(a, "run") || !strcmp(a, "mcp")) {
                    hit = !strcmp(a, "run") ? "agentstack run" : "agentstack mcp";
                    break;
                }
        }
        if (hit) {
            sb_addf(why, "it runs under %s (pid %d)", hit, (int)pid);
            return true;
        }
        pid = parent_of(pid);
    }
    return false;
}
