"""report usage: each server's brokered calls and each skill's gateway
loads beside what the setup costs the agent's context up front.

The audit logs are written by the documented format's independent writer
(aslib.append_chain), with rows of this project, of another project (never
counted) and of the host guard (not a server's call)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, append_chain, check, done  # noqa: E402

MANIFEST = """version = 1

[servers.acme]
type = "stdio"
command = "echo"

[servers.idle]
type = "stdio"
command = "echo"

[skills.used]
path = "skills/used"

[skills.never]
path = "skills/never"

[instructions.style]
path = "style.md"
"""


def call(project, server, tool, outcome, layer=None):
    r = {"ts": 1767225600, "pid": 42, "project": project, "server": server, "tool": tool,
         "args_digest": "a41c09e7b2d3", "outcome": outcome, "ms": 1}
    if layer:
        r["rule"] = "!delete_*"
        r["layer"] = layer
    return r


with Sandbox() as sb:
    sb.write("agentstack.toml", MANIFEST)
    sb.write("skills/used/SKILL.md", "---\nname: used\ndescription: twelve bytes\n---\nbody " +
             "x" * 4000 + "\n")
    sb.write("skills/never/SKILL.md", "---\nname: never\ndescription: d\n---\nbody\n")
    sb.write("style.md", "s" * 400)
    root = os.path.realpath(sb.project)
    append_chain(os.path.join(sb.ah, "audit", "calls.jsonl"), [
        call(root, "acme", "search", "ok"),
        call(root, "acme", "search", "ok"),
        call(root, "acme", "delete_all", "denied", "machine"),
        call("/elsewhere", "idle", "get", "ok"),
        call(root, "host-guard", "bash: cat .env", "denied"),
    ])
    append_chain(os.path.join(sb.ah, "audit", "loads.jsonl"), [
        {"ts": 1767225600, "name": "used", "reason": "asked", "project": root},
        {"ts": 1767225601, "name": "used", "reason": "again", "project": root},
        {"ts": 1767225602, "name": "never", "reason": "elsewhere", "project": "/elsewhere"},
    ])

    p = sb.run("report", "usage", "--json")
    check(p.returncode == 0, "report usage --json runs", p.stderr)
    u = json.loads(p.stdout or "{}")
    servers = {s["name"]: s for s in u.get("servers", [])}
    skills = {s["name"]: s for s in u.get("skills", [])}
    check(servers.get("acme") == {"name": "acme", "calls": 3, "denied": 1},
          "acme: 3 calls of this project, 1 denied", servers.get("acme"))
    check(servers.get("idle", {}).get("calls") == 0,
          "another project's call is not counted for this one", servers.get("idle"))
    check(skills.get("used", {}).get("loads") == 2 and skills.get("never", {}).get("loads") == 0,
          "skill loads of this project only", skills)
    # up front a CLI reads the name and description, not the 4 KB body
    check(skills["used"]["context_bytes"] == len("used") + len("twelve bytes") and
          skills["used"]["context_tokens"] == 4,
          "a skill's up-front cost is its name and description", skills["used"])
    ins = u["instructions"][0]
    check(ins["name"] == "style" and ins["context_bytes"] == 400 and
          ins["context_tokens"] == 100, "an instruction file costs its bytes", ins)
    check(u["context_bytes"] == 16 + 6 + 400 and u["project"] == root,
          "the up-front total adds skills and instructions", u.get("context_bytes"))
    check(u["unused"] == ["server idle", "skill never"], "no recorded use, named", u["unused"])

    p = sb.run("report", "usage")
    check(p.returncode == 0 and "No recorded use: server idle, skill never" in p.stdout and
          "server tool listings are not counted" in p.stdout and
          "use outside the gateway is not recorded" in p.stdout,
          "the text view says what it does not count", p.stdout)
    p = sb.run("report", "usage", "extra")
    check(p.returncode == 2, "an argument is a usage error", p.stderr)
    empty = os.path.join(sb.root, "empty")
    os.makedirs(empty)
    p = sb.run("report", "usage", cwd=empty)
    check(p.returncode == 1 and "error:" in p.stderr, "no project: exit 1", p.stderr)

done()
