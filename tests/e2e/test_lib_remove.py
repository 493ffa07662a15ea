"""`remove <n> [--write]`: a [packs.<n>] ledger wins; the
pack's entries, toolset memberships, its skill directory under skills/ and
vendor-marked house rules go, the lock is re-pinned without their rows;
without --write nothing changes; a hand-written house rule and a skill
outside skills/ stay; a failure (lock cannot be re-pinned) leaves the
project byte-identical. Pack repositories are local git repos; no network.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, files, git, read, write  # noqa: E402


PACK = ('name = "acme"\ndescription = "Docs MCP + SQL review"\n'
        '[server]\ntype = "stdio"\ncommand = "python3"\nargs = ["-V"]\n'
        'secret_env = ["ACME_TOKEN"]\n'
        '[[skill]]\nname = "sql-review"\npath = "skills/sql-review"\n'
        '[[instruction]]\nname = "acme-rules"\npath = "rules.md"\n')


def make_pack(root):
    d = os.path.join(root, "pack")
    write(os.path.join(d, "pack.toml"), PACK)
    write(os.path.join(d, "skills", "sql-review", "SKILL.md"),
          "---\ndescription: Review SQL\n---\nv1\n")
    write(os.path.join(d, "rules.md"), "Be careful.\n")
    git("init", "-q", cwd=d)
    git("add", "-A", cwd=d)
    git("commit", "-qm", "release", cwd=d)
    git("tag", "v1.0.0", cwd=d)
    return d


BASE = ('version = 1\n# keep this comment\n\n[toolsets.default]\nservers = ["mine"]\n'
        'skills = ["own"]\n\n[servers.mine]\ntype = "stdio"\ncommand = "true"\n\n'
        '[skills.own]\npath = "./own"\n')


def scenario_pack():
    with Sandbox() as sb:
        url = "file://" + make_pack(sb.root)
        sb.write(".agentstack/agentstack.toml", BASE)
        sb.write(".agentstack/own/SKILL.md", "---\ndescription: mine\n---\nx\n")
        mpath = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        lpath = os.path.join(sb.project, ".agentstack", "agentstack.lock")
        r = sb.run("add", "from", f"git:{url}@v1.0.0", "--with-instructions", "--write")
        check(r.returncode == 0, "pack installed", r.stdout + r.stderr)
        m = read(mpath)
        check('servers = ["mine", "acme"]' in m and "[packs.acme]" in m,
              "pack joined the default toolset", m)
        lock = read(lpath)
        check("sql-review" in lock and "acme" in lock, "pack pinned", lock)
        skill_dir = os.path.join(sb.project, ".agentstack", "skills", "sql-review")
        rule = os.path.join(sb.project, ".agentstack", "instructions", "acme-rules.md")
        check(os.path.isdir(skill_dir) and os.path.isfile(rule), "pack files in the project")

        before = files(sb.project)
        r = sb.run("remove", "acme")
        check(r.returncode == 0 and "Dry run." in r.stdout and
              "- [servers.acme]" in r.stdout and "- [skills.sql-review]" in r.stdout and
              "deletes skills/sql-review" in r.stdout and "- [packs.acme]" in r.stdout and
              "toolset 'default' servers -= \"acme\"" in r.stdout,
              "preview names every entry, membership and file", r.stdout + r.stderr)
        check(files(sb.project) == before, "preview changes nothing")

        r = sb.run("remove", "acme", "--write")
        check(r.returncode == 0 and "✓ removed pack 'acme'" in r.stdout,
              "remove --write", r.stdout + r.stderr)
        m = read(mpath)
        check(m.startswith("version = 1\n# keep this comment\n"), "comments kept", m)
        check("acme" not in m and "sql-review" not in m and "packs" not in m,
              "entries, ledger and membership gone", m)
        check('servers = ["mine"]' in m and "[servers.mine]" in m and "[skills.own]" in m,
              "the user's own entries stay", m)
        lock = read(lpath)
        check("sql-review" not in lock and "acme" not in lock and "own" in lock,
              "lock rows of the pack dropped, the rest kept", lock)
        check(not os.path.exists(skill_dir) and not os.path.exists(rule),
              "pack skill dir and vendor rule deleted")
        check(os.path.isfile(os.path.join(sb.project, ".agentstack", "own", "SKILL.md")),
              "a skill outside skills/ is never deleted")
        left = [f for f in files(sb.project) if "agentstack-old" in f]
        check(not left, "no aside copies left behind", str(left))

        r = sb.run("remove", "acme", "--write")
        check(r.returncode == 1 and "nothing named 'acme'" in r.stderr,
              "removing it twice is a clear error", r.stderr)
        r = sb.run("remove")
        check(r.returncode == 2, "no name is a usage error", r.stderr)


GHOST = '\n[toolsets.ghost]\nservers = ["no-such-server"]\n'


def scenario_hand_rule_and_failure():
    with Sandbox() as sb:
        url = "file://" + make_pack(sb.root)
        sb.write(".agentstack/agentstack.toml", "version = 1\n")
        mpath = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        r = sb.run("add", "from", f"git:{url}@v1.0.0", "--with-instructions", "--write")
        check(r.returncode == 0, "pack installed", r.stdout + r.stderr)
        rule = os.path.join(sb.project, ".agentstack", "instructions", "acme-rules.md")
        with open(rule, "w") as f:
            f.write("my own rules now\n")
        # A manifest that cannot be re-pinned: a toolset names an unknown server.
        with open(mpath, "a") as f:
            f.write(GHOST)
        before = files(sb.project)
        r = sb.run("remove", "acme", "--write")
        check(r.returncode == 1 and "nothing was removed" in r.stderr,
              "a re-pin failure refuses", r.stdout + r.stderr)
        check(files(sb.project) == before, "and leaves the project byte-identical")
        m = read(mpath).replace(GHOST, "")
        with open(mpath, "w") as f:
            f.write(m)
        r = sb.run("remove", "acme", "--write")
        check(r.returncode == 0 and "kept instructions/acme-rules.md (no vendor marker)"
              in r.stdout, "a hand-edited house rule is kept and named", r.stdout + r.stderr)
        check(read(rule) == "my own rules now\n", "its bytes untouched")
        check("acme-rules" not in read(mpath), "its entry is gone")


def scenario_plain_entry():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml",
                 'version = 1\n[toolsets.a]\nservers = ["x", "y"]\n[toolsets.b]\n'
                 'servers = ["x"]\n[servers.x]\ntype = "stdio"\ncommand = "true"\n[servers.y]\ntype = "stdio"\n'
                 'command = "true"\n')
        mpath = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        r = sb.run("remove", "x", "--write")
        check(r.returncode == 0 and "✓ removed entry 'x'" in r.stdout, "remove a server entry",
              r.stdout + r.stderr)
        m = read(mpath)
        check("[servers.x]" not in m and 'servers = ["y"]' in m and 'servers = []' in m,
              "memberships in every toolset dropped", m)


scenario_pack()
scenario_hand_rule_and_failure()
scenario_plain_entry()
done()
