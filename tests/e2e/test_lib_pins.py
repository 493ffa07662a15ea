"""Pinning library items (docs/library.md): items of a LINKED library source, pinned and
verified where they resolve.

A skill and a server live in a folder linked with `lib link` (not in
$AGENTSTACK_HOME/lib) and are named by a toolset: `lock --write` pins them,
`trust --preview` shows them pinned, an edit of the linked skill is drift in
trust and fails `install --locked`. Qualified refs (`team:review`) resolve in
their source only and pin under the bare name; one bare name from two sources
is refused; `lock --upgrade` takes a pack or --all. Every case runs the real
binary with a temporary HOME/AGENTSTACK_HOME.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402


def read(p):
    with open(p) as f:
        return f.read()


def skill(sb, base, rel, desc, body="body\n"):
    sb.write(os.path.join(rel, "SKILL.md"), f"---\ndescription: {desc}\n---\n{body}", base=base)


def manifest(sb, text):
    sb.write(".agentstack/agentstack.toml", "version = 1\n\n" + text)


def lock_text(sb):
    return read(os.path.join(sb.project, ".agentstack", "agentstack.lock"))


def row_checksum(lock, table, name):
    """The checksum of [[table]] name = <name>, or None."""
    for block in lock.split(f"[[{table}]]\n")[1:]:
        block = block.split("\n\n")[0]
        if f'name = "{name}"\n' in block + "\n":
            for line in block.splitlines():
                if line.startswith("checksum = "):
                    return line.split('"')[1]
    return None


def preview(sb):
    r = sb.run("trust", ".", "--preview")
    try:
        return json.loads(r.stdout), r
    except ValueError:
        return None, r


def linked(sb):
    """A linked source 'team' holding skill 'review' and server 'kibana'."""
    team = os.path.join(sb.root, "team")
    skill(sb, team, "skills/review", "team review", "team body\n")
    sb.write("servers/kibana.toml",
             'type = "stdio"\ncommand = "kibana-mcp"\nargs = ["--read-only"]\n', base=team)
    r = sb.run("lib", "link", team, "--write")
    check(r.returncode == 0 and "✓ linked 'team'" in r.stdout, "lib link team",
          r.stdout + r.stderr)
    check(not os.path.exists(os.path.join(sb.ah, "lib", "skills", "review")),
          "the skill is only in the linked source")
    return team


def scenario_linked_pins():
    with Sandbox() as sb:
        team = linked(sb)
        manifest(sb, '[toolsets.backend]\nservers = ["kibana"]\nskills = ["review"]\n')
        r = sb.run("lock")
        check(r.returncode == 0 and "+ skill review" in r.stdout and
              "+ server kibana" in r.stdout and "Dry run" in r.stdout,
              "lock preview resolves the linked source", r.stdout + r.stderr)
        r = sb.run("lock", "--write")
        check(r.returncode == 0 and "✓ pinned 1 skill, 1 server" in r.stdout,
              "lock --write pins the linked skill and server", r.stdout + r.stderr)
        lock = lock_text(sb)
        check(row_checksum(lock, "skill", "review") is not None and
              'name = "kibana"\nsource = "library"' in lock and "path =" not in lock,
              "rows: library skill without a path, library server", lock)

        j, r = preview(sb)
        check(j is not None and j["grantable"] and not j["blockers"], "trust preview: grantable",
              r.stdout + r.stderr)
        skills = {s["name"]: s for s in (j or {}).get("skills", [])}
        servers = {s["name"]: s for s in (j or {}).get("servers", [])}
        check(skills.get("review", {}).get("status") == "[library, pinned]",
              "trust preview: the linked skill is pinned", json.dumps(skills))
        check(servers.get("kibana", {}).get("kind") == "stdio" and
              servers["kibana"].get("target") == "kibana-mcp --read-only",
              "trust preview: the linked server is verified (its definition shown)",
              json.dumps(servers))
        r = sb.run("install", "--locked")
        check(r.returncode == 0 and "✓ review cached" in r.stdout,
              "install --locked: the linked skill matches", r.stdout + r.stderr)

        # a grant, then an edit of the linked source's skill
        sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])
        check(preview(sb)[0]["state"] == "trusted", "granted")
        skill(sb, team, "skills/review", "team review", "team body, edited\n")
        j, r = preview(sb)
        drift = [d for d in (j or {}).get("content_drift", []) if d["name"] == "review"]
        check(j is not None and j["state"] == "drifted" and not j["grantable"] and drift and
              "drifted from agentstack.lock" in drift[0]["reason"],
              "trust preview: an edit in the linked source is drift", r.stdout + r.stderr)
        skills = {s["name"]: s for s in (j or {}).get("skills", [])}
        check(skills.get("review", {}).get("status") == "[library, DRIFTED from lock]",
              "trust preview: the skill is tagged drifted", json.dumps(skills))
        r = sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])
        check(r.returncode == 1 and "cannot trust" in r.stderr and "review" in r.stderr,
              "trust refuses the drifted linked skill", r.stderr)
        r = sb.run("install", "--locked")
        check(r.returncode == 1 and "lockfile is out of date" in r.stderr and
              "review: lockfile out of date" in r.stdout,
              "install --locked fails on drift", r.stdout + r.stderr)
        check(row_checksum(lock_text(sb), "skill", "review") ==
              row_checksum(lock, "skill", "review"), "install --locked wrote nothing")

        # the server definition drifts too
        sb.write("servers/kibana.toml",
                 'type = "stdio"\ncommand = "kibana-mcp"\nargs = ["--write-all"]\n', base=team)
        j, _ = preview(sb)
        servers = {s["name"]: s for s in (j or {}).get("servers", [])}
        blockers = [b for b in (j or {}).get("server_blockers", []) if b["name"] == "kibana"]
        check(servers.get("kibana", {}).get("kind") == "unverified" and blockers and
              "--write-all" not in json.dumps(j),
              "a drifted linked server is unverified, its live definition withheld",
              json.dumps(servers))

        # re-lock takes the new bytes; trust is grantable again
        r = sb.run("lock", "--write")
        check(r.returncode == 0 and "~ skill review" in r.stdout and
              "~ server kibana" in r.stdout, "re-lock re-pins the linked items",
              r.stdout + r.stderr)
        j, _ = preview(sb)
        check(j["grantable"] and not j["blockers"], "grantable after the re-lock")

        # unlinking the source: the pinned names no longer resolve — blocked
        r = sb.run("lib", "unlink", "team", "--write")
        check(r.returncode == 0, "unlink team", r.stderr)
        j, _ = preview(sb)
        check(not j["grantable"] and any(b["name"] == "kibana" for b in j["server_blockers"]),
              "an unlinked source leaves its pins unresolvable (blocked)", json.dumps(j)[:400])
        r = sb.run("install", "--locked")
        check(r.returncode == 1 and "lockfile is out of date" in r.stderr,
              "install --locked fails when a pinned skill no longer resolves",
              r.stdout + r.stderr)


def scenario_qualified():
    with Sandbox() as sb:
        linked(sb)
        # local (first) also holds a 'review': a collision, local wins bare
        skill(sb, sb.ah, "lib/skills/review", "local review", "local body\n")
        r = sb.run("lib", "sources")
        check("review skill  local used · team shadowed ↳ team:review" in r.stdout,
              "the collision is shown", r.stdout)
        manifest(sb, '[toolsets.backend]\nskills = ["review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "lock bare 'review'", r.stdout + r.stderr)
        local_pin = row_checksum(lock_text(sb), "skill", "review")

        manifest(sb, '[toolsets.backend]\nservers = ["team:kibana"]\n'
                 'skills = ["team:review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 0 and "~ skill review" in r.stdout,
              "lock 'team:review': the row moves to team's bytes", r.stdout + r.stderr)
        lock = lock_text(sb)
        team_pin = row_checksum(lock, "skill", "review")
        check(team_pin and team_pin != local_pin and "team:" not in lock and
              row_checksum(lock, "server", "kibana") is not None,
              "qualified refs pin under the bare name, from their source", lock)
        j, r = preview(sb)
        skills = {s["name"]: s for s in (j or {}).get("skills", [])}
        check(j is not None and j["grantable"] and
              skills.get("review", {}).get("pin") == team_pin,
              "trust verifies the qualified skill in its source", r.stdout + r.stderr)
        r = sb.run("install", "--locked")
        check(r.returncode == 0, "install --locked matches the qualified pin",
              r.stdout + r.stderr)

        # lib:<source>/<name> is the same reference
        manifest(sb, '[toolsets.backend]\nservers = ["team:kibana"]\n'
                 'skills = ["lib:team/review"]\n')
        r = sb.run("lock")
        check(r.returncode == 0 and "~ skill" not in r.stdout,
              "lib:team/review pins the same bytes", r.stdout + r.stderr)

        # an edit of the LOCAL copy is not drift for team:review …
        skill(sb, sb.ah, "lib/skills/review", "local review", "local, edited\n")
        j, _ = preview(sb)
        check(j["grantable"], "an edit of the shadowed-by-qualifier copy is not drift")
        # … reordering is not either (the qualifier pins the source) …
        r = sb.run("lib", "reorder", "team", "local", "--write")
        check(r.returncode == 0, "reorder", r.stderr)
        j, _ = preview(sb)
        check(j["grantable"], "reordering does not move a qualified pin")
        # … but a bare name follows the order: now team's body, drift vs local's
        manifest(sb, '[toolsets.backend]\nskills = ["review"]\n')
        sb.run("lock", "--write")
        check(row_checksum(lock_text(sb), "skill", "review") == team_pin,
              "after reorder the bare name resolves to team first")

        # two sources, one bare name: refused, each toolset still lockable alone
        manifest(sb, '[toolsets.a]\nskills = ["review"]\n\n'
                 '[toolsets.b]\nskills = ["local:review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 1 and "refusing to lock" in r.stderr and
              "named twice" in r.stderr and "'local:review'" in r.stderr,
              "one bare name from two sources is refused", r.stderr)
        j, _ = preview(sb)
        check(not j["grantable"] and any("named twice" in b["reason"] for b in j["blockers"]),
              "and blocks trust", json.dumps(j.get("blockers"))[:300])
        r = sb.run("lock", "--toolset", "b")
        check(r.returncode == 0, "lock --toolset b alone works", r.stdout + r.stderr)

        # an unlinked source is an error naming it; nothing is written
        before = lock_text(sb)
        manifest(sb, '[toolsets.a]\nskills = ["ghost:review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 1 and "refusing to lock" in r.stderr and "ghost" in r.stderr,
              "an unknown source refuses the lock", r.stderr)
        check(lock_text(sb) == before, "the refused lock wrote nothing")
        j, _ = preview(sb)
        check(not j["grantable"], "an unknown source blocks trust")


def scenario_broken_sources():
    with Sandbox() as sb:
        linked(sb)
        manifest(sb, '[toolsets.backend]\nskills = ["review"]\n')
        sb.run("lock", "--write")
        before = lock_text(sb)
        with open(os.path.join(sb.ah, "sources.toml"), "a") as f:
            f.write("bogus = \n")
        r = sb.run("lock", "--write")
        check(r.returncode == 1 and "sources.toml" in r.stderr,
              "lock refuses when sources.toml cannot be used", r.stderr)
        check(lock_text(sb) == before, "nothing written")
        r = sb.run("trust", ".", "--preview")
        check(r.returncode == 1 and "sources.toml" in r.stderr,
              "trust fails closed on an unusable sources.toml", r.stderr)
        r = sb.run("install", "--locked")
        check(r.returncode == 1 and "sources.toml" in r.stderr,
              "install fails closed on an unusable sources.toml", r.stderr)


def scenario_upgrade_flags():
    with Sandbox() as sb:
        manifest(sb, '[toolsets.backend]\nskills = []\n')
        r = sb.run("lock", "--upgrade")
        check(r.returncode == 2 and "--all" in r.stderr, "--upgrade needs a pack or --all",
              r.stderr)
        r = sb.run("lock", "--upgrade", "acme", "--all")
        check(r.returncode == 2, "a pack and --all is a usage error", r.stderr)
        r = sb.run("lock", "--yes")
        check(r.returncode == 2 and "--upgrade" in r.stderr, "--yes goes with --upgrade",
              r.stderr)
        r = sb.run("lock", "--upgrade", "acme", "--toolset", "backend")
        check(r.returncode == 2, "--upgrade takes no --toolset", r.stderr)
        r = sb.run("lock", "--upgrade", "acme", "--yes", "--write")
        check(r.returncode == 1 and "[packs.acme]" in r.stderr,
              "an unknown pack is an error naming [packs.acme]", r.stderr)
        r = sb.run("lock", "--upgrade", "--all", "--write")
        check(r.returncode == 0 and "no packs installed" in r.stdout,
              "--all with no packs has nothing to do", r.stdout + r.stderr)


def git(*args, cwd=None):
    e = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "init.defaultBranch=main", *args],
                          cwd=cwd, env=e, capture_output=True, text=True, timeout=60)


def scenario_lock_upgrade():
    """`lock --upgrade acme --yes --write` records v1.1.0."""
    with Sandbox() as sb:
        d = os.path.join(sb.root, "pack")
        sb.write("pack.toml", 'name = "acme"\ndescription = "Docs"\n'
                 '[server]\ntype = "stdio"\ncommand = "acme-mcp"\n'
                 'secret_env = ["ACME_TOKEN"]\n'
                 '[[skill]]\nname = "sql-review"\npath = "skills/sql-review"\n', base=d)
        skill(sb, d, "skills/sql-review", "Review SQL", "v1\n")
        git("init", "-q", cwd=d)
        git("add", "-A", cwd=d)
        git("commit", "-qm", "release", cwd=d)
        git("tag", "v1.0.0", cwd=d)
        manifest(sb, "")
        r = sb.run("add", "from", f"git:file://{d}@v1.0.0", "--write")
        check(r.returncode == 0, "install pack acme v1.0.0", r.stdout + r.stderr)
        skill(sb, d, "skills/sql-review", "Review SQL", "v1.1 body\n")
        git("commit", "-qam", "v1.1", cwd=d)
        git("tag", "v1.1.0", cwd=d)
        mf = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        before = read(mf)
        r = sb.run("lock", "--upgrade", "acme")
        check(r.returncode == 0 and "newer tag 'acme': v1.0.0 -> v1.1.0" in r.stdout and
              "Dry run." in r.stdout and read(mf) == before,
              "lock --upgrade acme previews", r.stdout + r.stderr)
        lock_before = lock_text(sb)
        r = sb.run("lock", "--upgrade", "--all", "--yes", "--write")
        check(r.returncode == 0 and "✓ upgraded pack 'acme'" in r.stdout,
              "lock --upgrade --all --yes --write upgrades", r.stdout + r.stderr)
        check('version = "v1.1.0"' in read(mf) and lock_text(sb) != lock_before,
              "ledger and pins moved")
        r = sb.run("lock", "--upgrade", "acme", "--yes", "--write")
        check(r.returncode == 0 and "already current" in r.stdout, "then already current",
              r.stdout + r.stderr)


scenario_linked_pins()
scenario_qualified()
scenario_lock_upgrade()
scenario_broken_sources()
scenario_upgrade_flags()
done()
