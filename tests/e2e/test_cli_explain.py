"""explain <name> [--json] and why <name> [--json].

1. explain <server>: the card `# <name> (server)` with origin (file:line),
   source, pin, approval, secrets by name with where each resolves, toolsets,
   and the policy rows of both layers — exactly the rows `policy explain`
   prints for that server (machine deny and project allow both shown).
2. No secret value is ever printed: a resolvable ${REF} whose value is a
   sentinel shows its store, never the value, in text and in JSON.
3. The pin row follows the lock: not pinned → pinned after lock --write →
   drifted after the skill's bytes change.
4. why <name>: the seven rows and `full detail: agentstack explain <name>`;
   --json carries the same rows.
5. An unknown name exits 1 naming agentstack search and agentstack lib list;
   a missing name is a usage error (2).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

SENTINEL = "s3cr3t-VALUE-must-not-print-7f1c"
MANIFEST = ('version = 1\n\n[servers.files]\ntype = "stdio"\ncommand = "true"\n'
            'env = { TOKEN = "${FILES_TOKEN}", OTHER = "${NOT_SET_ANYWHERE}" }\n\n'
            '[skills.notes]\npath = "skills/notes"\n\n'
            '[toolsets.main]\nservers = ["files"]\nskills = ["notes"]\n\n'
            '[policy.tools]\nfiles = ["read_*"]\n')
MACHINE = 'version = 1\n\n[policy.tools]\nfiles = ["!delete_*"]\n'

with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", MANIFEST)
    sb.write(".agentstack/skills/notes/SKILL.md",
             "---\nname: notes\ndescription: take notes\n---\nBody.\n")
    sb.write("agentstack.toml", MACHINE, base=sb.ah)
    env = sb.env(FILES_TOKEN=SENTINEL)

    r = sb.run("explain", "files", env=env)
    out = r.stdout
    check(r.returncode == 0 and out.startswith("# files (server)\n"), "explain: the card title",
          out + r.stderr)
    check(".agentstack/agentstack.toml:3" in out, "origin names file:line", out)
    check("stdio true" in out and "not pinned" in out and "untrusted" in out,
          "source, pin and approval rows", out)
    check("${FILES_TOKEN} (env)" in out and "${NOT_SET_ANYWHERE} (unresolved)" in out,
          "secrets by name with the store that holds each", out)
    check("main" in out, "the toolsets that name it", out)
    pol = sb.run("policy", "explain", "files", env=env)
    rows = [ln for ln in pol.stdout.splitlines()[1:] if "Machine policy status" not in ln]
    check(rows and all(ln in out for ln in rows),
          "explain shows the rows of policy explain (both layers)", pol.stdout + "\n---\n" + out)
    check("(machine)     deny [delete_*]" in out and "allow only [read_*]" in out,
          "the machine deny and the project allow", out)

    j = sb.run("explain", "files", "--json", env=env)
    doc = json.loads(j.stdout)
    check(doc["kind"] == "server" and doc["pin"]["state"] == "not pinned" and
          {s["name"]: s["resolves_from"] for s in doc["secrets"]} ==
          {"FILES_TOKEN": "env", "NOT_SET_ANYWHERE": None}, "explain --json: the same facts", doc)
    for rr in (r, j, sb.run("why", "files", env=env), sb.run("why", "files", "--json", env=env)):
        check(SENTINEL not in rr.stdout + rr.stderr, "no secret value is printed")

    # 3. the pin row follows the lock
    r = sb.run("lock", "--write")
    check(r.returncode == 0, "lock --write", r.stderr)
    r = sb.run("explain", "notes")
    check(r.returncode == 0 and r.stdout.startswith("# notes (skill)") and
          "Pin             pinned — sha256:" in r.stdout, "a pinned skill", r.stdout + r.stderr)
    sb.write(".agentstack/skills/notes/SKILL.md",
             "---\nname: notes\ndescription: take notes\n---\nChanged body.\n")
    r = sb.run("explain", "notes")
    check("Pin             drifted" in r.stdout and "changed since they were pinned" in r.stdout,
          "a changed skill reads drifted, with a safety signal", r.stdout)

    # 4. why
    r = sb.run("why", "files", env=env)
    lines = r.stdout.splitlines()
    labels = [ln.split()[0] for ln in lines[1:8]]
    check(r.returncode == 0 and lines[0] == "files (server)" and
          labels == ["from", "pinned", "approved", "live", "written", "scope", "used"] and
          lines[-1] == "full detail: agentstack explain files", "why: the seven rows", r.stdout)
    check("no CLI has the gateway" in r.stdout and "scope     project" in r.stdout,
          "live says why not; scope is project", r.stdout)
    d = json.loads(sb.run("why", "files", "--json", env=env).stdout)
    check(d["kind"] == "server" and d["scope"] == "project" and
          d["detail"] == "agentstack explain files" and "pinned" in d["pinned"],
          "why --json: the same rows", d)
    r = sb.run("why", "main")
    check(r.returncode == 0 and r.stdout.startswith("main (toolset)"), "why a toolset", r.stdout)

    # 5. unknown and missing names
    for cmd in ("explain", "why"):
        r = sb.run(cmd, "nosuch")
        check(r.returncode == 1 and "agentstack search nosuch" in r.stderr and
              "agentstack lib list" in r.stderr and not r.stdout,
              f"{cmd} nosuch: exit 1, names search and lib list", r.stdout + r.stderr)
        r = sb.run(cmd)
        check(r.returncode == 2, f"{cmd} without a name: usage error", r.stderr)

done()
