"""`session start <toolset>` / `session end` (docs/adapters.md): start
renders the toolset and links its skills; a second start refuses; end puts
every file back byte for byte and every link back as it was."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

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

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    sb.write(".agentstack/skills/sql-review/SKILL.md", "---\ndescription: sql\n---\n")
    H.write_manifest(sb, MANIFEST)
    hand = '{"mcpServers": {"mine": {"command": "m"}}, "x": 1.50}\n'
    mcp = sb.write(".mcp.json", hand)
    H.run(sb, "lock", "--write")

    p = H.run(sb, "session", "start", "backend")
    check(p.returncode == 1 and "refusing to start a session: project at" in p.stderr,
          "untrusted: session start refuses before writing", p.stdout + p.stderr)
    check(H.read(mcp) == hand, "untrusted: nothing changed")
    H.trust(sb)
    before = H.tree(sb.project)

    p = H.run(sb, "session", "start", "backend")
    check(p.returncode == 0 and "✓ session 'backend' started" in p.stdout, "session start",
          p.stdout + p.stderr)
    doc = json.loads(H.read(mcp))
    check(sorted(doc["mcpServers"]) == ["a", "mine"], "the toolset's server is rendered", doc)
    link = os.path.join(sb.project, ".claude", "skills", "sql-review")
    check(os.path.islink(link), "its skill is linked")
    again = H.run(sb, "session", "start", "backend")
    check(again.returncode == 1 and "a session is already active here — end it first" in
          again.stderr, "a second start refuses", again.stdout + again.stderr)
    lst = H.run(sb, "session", "list", "--json")
    js = json.loads(lst.stdout)
    check(len(js) == 1 and js[0]["toolset"] == "backend" and not js[0]["abandoned"],
          "session list --json", js)

    end = H.run(sb, "session", "end")
    check(end.returncode == 0 and "✓ session 'backend' ended — your tools are back to before" in
          end.stdout, "session end", end.stdout + end.stderr)
    check(H.read(mcp) == hand, ".mcp.json is byte-identical to before")
    check(H.tree(sb.project) == before, "the project tree is exactly as before (links, dirs)",
          sorted(set(H.tree(sb.project)) ^ set(before)))
    e2 = H.run(sb, "session", "end")
    check(e2.returncode == 1 and "no active session here" in e2.stderr, "nothing left to end",
          e2.stderr)
    st = H.run(sb, "session", "start", "backend")
    check(st.returncode == 0, "a new session can start after the end", st.stdout + st.stderr)
    H.run(sb, "session", "end", "--all")
    check(H.read(mcp) == hand, "end --all restores too")

done()
