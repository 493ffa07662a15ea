"""`use <toolset> --write` (docs/adapters.md): just the toolset's servers, its
skills linked into each CLI's skills dir, ours pruned on a switch, a user's
real directory never touched, idempotent, gated by trust."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1
default_toolset = "backend"

[servers.a]
type = "stdio"
command = "a-mcp"

[servers.b]
type = "stdio"
command = "b-mcp"

[skills.sql-review]
path = "skills/sql-review"

[skills.notes]
path = "skills/notes"

[toolsets.backend]
servers = ["a"]
skills = ["sql-review"]

[toolsets.docs]
servers = ["b"]
skills = ["notes"]
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "codex")
    os.makedirs(os.path.join(sb.project, ".git"))
    for s in ("sql-review", "notes"):
        sb.write(f".agentstack/skills/{s}/SKILL.md", f"---\ndescription: {s}\n---\n")
    H.write_manifest(sb, MANIFEST)
    H.run(sb, "lock", "--write")

    p = H.run(sb, "use", "--write")
    check(p.returncode == 1 and "refusing to render MCP servers" in p.stdout + p.stderr,
          "untrusted: use --write refuses", p.stdout + p.stderr)
    check("refusing to place skills" in p.stdout, "untrusted: no skills placed", p.stdout)
    check(not os.path.exists(os.path.join(sb.project, ".claude", "skills", "sql-review")),
          "untrusted: no link")
    H.trust(sb)

    lst = H.run(sb, "use", "--list")
    check("backend (default) — 1 server, 1 skill" in lst.stdout, "use --list", lst.stdout)
    lj = json.loads(H.run(sb, "use", "--list", "--json").stdout)
    check([t["name"] for t in lj] == ["backend", "docs"] and lj[0]["default"],
          "use --list --json", lj)

    dry = H.run(sb, "use")
    check(dry.returncode == 0 and "Dry run. Re-run with --write to apply." in dry.stdout,
          "preview ends with the dry-run line", dry.stdout)
    check(not os.path.exists(os.path.join(sb.project, ".mcp.json")), "preview writes nothing")

    w = H.run(sb, "use", "--write")
    check(w.returncode == 0, "use (default toolset) --write", w.stdout + w.stderr)
    src = os.path.realpath(os.path.join(sb.project, ".agentstack", "skills", "sql-review"))
    for d in (".claude/skills", ".agents/skills"):
        link = os.path.join(sb.project, d, "sql-review")
        check(os.path.islink(link) and os.readlink(link) == src, f"{d}/sql-review linked")
    doc = json.loads(H.read(os.path.join(sb.project, ".mcp.json")))
    check(list(doc["mcpServers"]) == ["a"], "only the toolset's servers", doc)
    gi = H.read(os.path.join(sb.project, ".gitignore"))
    check("/.claude/skills/sql-review\n" in gi and "/.agents/skills/sql-review\n" in gi and
          "/.mcp.json\n" in gi and "/.codex/config.toml\n" in gi,
          ".gitignore lists the files and links we placed", gi)

    # A user's own skill directory with the next toolset's skill name.
    real = os.path.join(sb.project, ".claude", "skills", "notes")
    os.makedirs(real)
    with open(os.path.join(real, "SKILL.md"), "w") as f:
        f.write("mine\n")
    w = H.run(sb, "use", "docs", "--write")
    out = w.stdout
    check(w.returncode == 0, "switch to docs", out + w.stderr)
    check("− pruning 'a'" in out and "− unlinking skill 'sql-review'" in out,
          "the previous toolset's server and skill are removed", out)
    check(not os.path.lexists(os.path.join(sb.project, ".claude", "skills", "sql-review")),
          "our old link is gone")
    check("↳ skipping skill 'notes'" in out and "is not ours" in out,
          "a user's real directory is reported, not replaced", out)
    check(H.read(os.path.join(real, "SKILL.md")) == "mine\n" and not os.path.islink(real),
          "the user's directory is untouched")
    check(os.path.islink(os.path.join(sb.project, ".agents", "skills", "notes")),
          "linked where the name was free")
    doc = json.loads(H.read(os.path.join(sb.project, ".mcp.json")))
    check(list(doc["mcpServers"]) == ["b"], "servers switched", doc)
    gi = H.read(os.path.join(sb.project, ".gitignore"))
    check("/.claude/skills/notes" not in gi and "/.agents/skills/notes\n" in gi,
          "the user's directory is never listed in .gitignore", gi)

    again = H.run(sb, "use", "docs", "--write")
    check("✓ servers up to date" in again.stdout and
          "✓ skills up to date" in again.stdout.split("Codex CLI")[1],
          "second run: servers and skills up to date", again.stdout)
    check("2 targets already in sync — nothing to change." in again.stdout,
          "use is idempotent", again.stdout)
    state = json.loads(H.read(os.path.join(sb.ah, "state.json")))
    key = "codex@project:" + sb.project
    check(state["targets"][key]["active_profile"] == "docs" and
          state["targets"][key]["managed_skills"] == ["notes"],
          "the ledger records the active profile and our links", state["targets"].get(key))

done()
