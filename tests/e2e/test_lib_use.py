"""Central-library items through every delivery and check path besides
`apply` (issue 9; docs/library.md): a project whose toolset names a skill in
$AGENTSTACK_HOME/lib, and a skill and a server in a linked source (qualified
`team:<name>`), validates, pins, passes the trust gate and is delivered by
`use --write` and `session start` (undone by `session end`); `bootstrap`
sees it trusted; `doctor --ci` verifies and scans the linked source's items
where `lock` pinned them (no "not scanned" notes), and flags an edit there.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = ('version = 1\ndefault_toolset = "t"\n\n[toolsets.t]\nservers = ["team:search"]\n'
            'skills = ["sql-review", "team:review"]\n\n[targets]\ndefault = ["claude-code"]\n')


def out(p):
    return p.stdout + p.stderr


def setup(sb):
    """The local skill, the linked source, lock and trust. Returns the team dir."""
    H.fake_bin(sb, "claude")
    os.makedirs(os.path.join(sb.project, ".git"))
    skill = sb.write("sql-review/SKILL.md", "---\ndescription: Review SQL\n---\nbody\n",
                     base=sb.root)
    r = H.run(sb, "lib", "add", os.path.dirname(skill), "--write")
    assert r.returncode == 0, out(r)
    team = os.path.join(sb.root, "team")
    sb.write("skills/review/SKILL.md", "---\ndescription: Team review\n---\nbody\n", base=team)
    sb.write("servers/search.toml", 'type = "stdio"\ncommand = "search-mcp"\n', base=team)
    r = H.run(sb, "lib", "link", team, "--write")
    assert r.returncode == 0, out(r)
    H.write_manifest(sb, MANIFEST)
    r = H.run(sb, "lock", "--write")
    assert r.returncode == 0, out(r)
    H.trust(sb)
    return team


def links(sb):
    d = os.path.join(sb.project, ".claude", "skills")
    return {n: os.path.realpath(os.path.join(d, n))
            for n in (sorted(os.listdir(d)) if os.path.isdir(d) else [])
            if os.path.islink(os.path.join(d, n))}


def mcp(sb):
    p = os.path.join(sb.project, ".mcp.json")
    return json.loads(H.read(p)) if os.path.exists(p) else None


with Sandbox() as sb:
    team = setup(sb)
    local = os.path.realpath(os.path.join(sb.ah, "lib", "skills", "sql-review"))
    teamskill = os.path.realpath(os.path.join(team, "skills", "review"))

    r = H.run(sb, "use", "t")
    check(r.returncode == 0 and "validation error" not in r.stderr and
          "not trusted" not in out(r) and "drifted" not in out(r),
          "use: library names validate and pass the trust gate", out(r))
    r = H.run(sb, "use", "t", "--write")
    check(r.returncode == 0 and links(sb) == {"review": teamskill, "sql-review": local},
          "use --write links the local library skill and the linked source's (bare name)",
          out(r) + json.dumps(links(sb)))
    srv = ((mcp(sb) or {}).get("mcpServers") or {}).get("search", {})
    check(srv.get("command") == "search-mcp",
          "use --write renders the linked source's server under its bare name", mcp(sb))

    r = H.run(sb, "bootstrap", "--json")
    j = json.loads(r.stdout) if r.stdout.startswith("{") else {}
    check(j.get("trusted") is True and j.get("manifest", {}).get("valid") is True and
          j.get("skills_missing") == [] and j.get("apply_would_change") == 0,
          "bootstrap: valid, trusted, nothing missing, the apply preview in sync", r.stdout)

    r = H.run(sb, "doctor", "--ci")
    check(r.returncode == 0 and "not scanned" not in r.stdout and
          "unresolv" not in r.stdout,
          "doctor --ci: the linked source's items verify and are scanned", out(r))
    j = json.loads(H.run(sb, "doctor", "--ci", "--json").stdout)
    repro = [s for s in j["sections"] if s["title"] == "Reproducibility"][0]
    check(any(ln["level"] == "ok" and "pins match" in ln["msg"] for ln in repro["lines"]),
          "doctor: every pin matches, the linked source's included", json.dumps(repro))

    # an edit in the linked source: doctor sees it where lock pinned it
    with open(os.path.join(team, "skills", "review", "SKILL.md"), "w") as f:
        f.write("---\ndescription: Team review\n---\nbe\u200b careful\n")
    r = H.run(sb, "doctor", "--ci")
    check(r.returncode == 1 and "U+200B" in r.stdout and
          "team/skills/review/SKILL.md" in r.stdout,
          "doctor --ci: hidden Unicode in the linked source's skill is flagged", out(r))
    check("review" in r.stdout and "lock drift" in r.stdout,
          "doctor --ci: the linked source's skill drifted from its pin", r.stdout)
    r = H.run(sb, "use", "t", "--write")
    check(r.returncode == 1 and "drifted" in out(r),
          "use --write: the drifted linked-source skill re-gates", out(r))

with Sandbox() as sb:
    team = setup(sb)
    r = H.run(sb, "session", "start", "t")
    check(r.returncode == 0 and set(links(sb)) == {"review", "sql-review"} and
          "search" in ((mcp(sb) or {}).get("mcpServers") or {}),
          "session start: the library skills are linked, the server rendered", out(r))
    r = H.run(sb, "session", "end")
    check(r.returncode == 0 and links(sb) == {} and
          "search" not in ((mcp(sb) or {}).get("mcpServers") or {}),
          "session end: links and server gone", out(r) + json.dumps(links(sb)))

    # a qualified name that no linked source holds: session start refuses it
    H.write_manifest(sb, MANIFEST.replace("team:review", "ghost:review"))
    r = H.run(sb, "session", "start", "t")
    check(r.returncode == 1 and "ghost:review" in r.stderr and
          "validation error" in r.stderr and links(sb) == {},
          "session start: an unresolvable library name is a validation error", out(r))

# A library instruction held by a linked source: lock pins it there and the
# instruction compiler reads the same file (through the library hook).
with Sandbox() as sb:
    team = setup(sb)
    sb.write("instructions/house/instruction.toml", 'body = "Team rule: small PRs."\n',
             base=team)
    H.write_manifest(sb, MANIFEST + '\n[instructions.house]\n')
    r = H.run(sb, "lock", "--write")
    check(r.returncode == 0, "lock --write pins the linked source's instruction", out(r))
    H.trust(sb)
    r = H.run(sb, "apply", "--write")
    md = os.path.join(sb.project, "CLAUDE.md")
    check(r.returncode == 0 and os.path.exists(md) and "Team rule: small PRs." in H.read(md),
          "apply --write compiles the linked source's instruction into CLAUDE.md", out(r))

done()
