"""The user's steps: a committed repo, `use backend --write` (renders the
server, links the skill, adds the managed .gitignore block), then
`restore --last --write` — or `undo --to N --write`, N the use's number on
the timeline: the skill link the write created is gone, the .gitignore is
back as it was, and `git status` is clean."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done, git  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.a]
type = "stdio"
command = "a-mcp"

[skills.sql-review]
path = "skills/sql-review"

[toolsets.backend]
servers = ["a"]
skills = ["sql-review"]
"""

for undo in (["restore", "--last", "--write"], ["undo", "--to", "N", "--write"]):
    with Sandbox() as sb:
        H.fake_bin(sb, "claude")
        sb.write(".agentstack/skills/sql-review/SKILL.md", "---\ndescription: sql\n---\n")
        H.write_manifest(sb, MANIFEST)
        ignore = sb.write(".gitignore", "node_modules/\n")
        H.run(sb, "lock", "--write")
        H.trust(sb)
        git("init", "-q", cwd=sb.project)
        git("add", "-A", cwd=sb.project)
        git("commit", "-qm", "start", cwd=sb.project)
        p = H.run(sb, "use", "backend", "--write")
        check(p.returncode == 0, "use backend --write", p.stdout + p.stderr)
        link = os.path.join(sb.project, ".claude", "skills", "sql-review")
        check(os.path.islink(link), "the skill is linked")
        if "N" in undo:
            p = H.run(sb, "undo", "--json")
            check(p.returncode == 0, "undo --json (the timeline)", p.stdout + p.stderr)
            rows = [r for r in json.loads(p.stdout) if r["operation"].startswith("use")]
            check(len(rows) == 1, "the use write is on the timeline", p.stdout)
            undo = [str(rows[0]["n"]) if a == "N" else a for a in undo]
        p = H.run(sb, *undo)
        label = " ".join(undo)
        check(p.returncode == 0, label, p.stdout + p.stderr)
        check(not os.path.lexists(link), label + ": the skill link is removed", p.stdout)
        check(not os.path.exists(os.path.join(sb.project, ".claude")),
              label + ": the directories the write made are gone")
        check(H.read(ignore) == "node_modules/\n", label + ": .gitignore as it was",
              H.read(ignore))
        st = git("status", "--porcelain", cwd=sb.project).stdout
        check(st == "", label + ": git status is clean", st)
done()
