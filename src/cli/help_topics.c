/*
 * The texts of `agentstack help <topic>` — see help_topics.h. Each is what
 * its page says, shorter: docs/trust.md, docs/policy.md, docs/adapters.md
 * ("Where servers go") and docs/gateway.md.
 */
#include <string.h>

#include "cli/help_topics.h"

static const char trust_text[] =
    "trust — what a grant means\n"
    "\n"
    "A repository's agentstack.toml can ask agents to run commands, contact hosts,\n"
    "read secrets and load skills and instructions. None of it activates until a\n"
    "person on this machine has reviewed the project and approved exactly these\n"
    "bytes: the consent digest of agentstack.toml, agentstack.local.toml and\n"
    "agentstack.lock. Skills, instructions, server code, extensions and workflows\n"
    "are bound to those bytes through the lock's pins.\n"
    "\n"
    "  Untrusted  no grant for this project: nothing activates\n"
    "  Trusted    the recorded digest equals the current one: the only state\n"
    "             that activates\n"
    "  Changed    a byte of the three files changed, or a pinned body drifted:\n"
    "             inert until it is reviewed again\n"
    "\n"
    "Consent is per machine and per checkout (the key is the project's canonical\n"
    "path) and never travels with the repository. Trusted is not confined: trust\n"
    "decides what a project may deliver; `run --sandbox` or `--lockdown` decides\n"
    "what the process can do.\n"
    "\n"
    "  agentstack trust .          review the card, then grant\n"
    "  agentstack trust --list     the projects trusted on this machine\n"
    "  agentstack trust --revoke   take a grant back\n"
    "\n"
    "More: docs/trust.md\n";

static const char policy_text[] =
    "policy — what servers may do\n"
    "\n"
    "Policy says which tools a server may call, which hosts it may reach, which\n"
    "${REF} secrets it may receive, and what a sandboxed run may do with the\n"
    "filesystem. Two layers take part, and every decision must pass both,\n"
    "machine first:\n"
    "\n"
    "  machine  [policy.*] in $AGENTSTACK_HOME/agentstack.toml: yours, a floor no\n"
    "           repository can see around, shadow or loosen\n"
    "  project  [policy.*] in the project's agentstack.toml: it can only narrow\n"
    "           what the machine allows\n"
    "\n"
    "A machine file that does not load (unreadable, not TOML, an unknown key, a\n"
    "[policy] error) blocks every path: agentstack refuses, naming the line and\n"
    "the fix, and never falls back to the project's policy alone. A tool call\n"
    "the policy refuses is recorded in the call audit with its rule and layer\n"
    "(`agentstack audit --calls`).\n"
    "\n"
    "  agentstack policy status            the machine layer's state\n"
    "  agentstack policy explain <server>  each key that governs a server\n"
    "  agentstack policy test tool <server> <tool>\n"
    "                                      one decision, and the rule behind it\n"
    "\n"
    "More: docs/policy.md, docs/enforcement.md\n";

static const char lanes_text[] =
    "lanes — how a project reaches each coding CLI\n"
    "\n"
    "A project's servers and skills reach a CLI by one of two lanes:\n"
    "\n"
    "  live      the gateway (`agentstack mcp`) serves them through one MCP entry:\n"
    "            nothing is written per server, and every call goes through its\n"
    "            one dispatch (fence, trust, policy, secrets) into the call audit.\n"
    "            A CLI is on this lane once `agentstack connect` registered the\n"
    "            gateway in it.\n"
    "  rendered  `agentstack apply --write` writes the servers into the CLI's own\n"
    "            config files, secrets resolved as the file is written; `restore`\n"
    "            undoes it.\n"
    "\n"
    "Instructions, settings and hooks are always rendered, connected or not.\n"
    "[delivery] render_locally = true (or [delivery.harness.<id>]) puts every CLI\n"
    "(or one) on the rendered lane.\n"
    "\n"
    "  agentstack delivery          the lane of each detected CLI, and why\n"
    "  agentstack connect --write   register the gateway: the live lane\n"
    "  agentstack apply --write     write the rendered lane\n"
    "\n"
    "More: docs/adapters.md (\"Where servers go\"), docs/gateway.md\n";

const struct help_topic help_topics[] = {
    {"trust", "what a grant means: reviewed bytes, the three states", trust_text},
    {"policy", "the machine floor and the project layer, and what they decide", policy_text},
    {"lanes", "live through the gateway, or rendered into each CLI's files", lanes_text},
    {NULL, NULL, NULL},
};

const struct help_topic *help_topic_find(const char *name)
{
    for (const struct help_topic *t = help_topics; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}
