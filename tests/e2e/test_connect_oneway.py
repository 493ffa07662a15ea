"""One delivery per server: after `apply --write` rendered a project's
servers into Claude Code's `.mcp.json`, `connect --all --write` (the gateway
registered in the CLI) takes those direct entries out in the same undoable
write, `apply` does not put them back while the CLI holds the gateway,
`doctor` is clean, a hand-added direct duplicate is a doctor error naming
it and the fix (and that fix removes it), and undo/restore bring every
earlier file back byte for byte. Fails if a server could reach a connected
CLI both through the gateway and directly (outside policy and audit)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.filesystem]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]

[servers.notes]
type = "stdio"
command = "notes-mcp"
env = { NOTES_TOKEN = "${NOTES_TOKEN}" }
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST)
    H.run(sb, "lock", "--write")
    H.trust(sb)
    mcp = os.path.join(sb.project, ".mcp.json")
    claude = os.path.join(sb.home, ".claude.json")

    a = H.run(sb, "apply", "--write")
    check(a.returncode == 0, "apply --write renders the project", a.stdout + a.stderr)
    rendered = H.read(mcp)
    check(sorted(json.loads(rendered)["mcpServers"]) == ["filesystem", "notes"],
          ".mcp.json holds both servers directly", rendered)

    pre = H.run(sb, "connect", "--all")
    check("would remove 'filesystem' (the gateway serves it — one delivery per server)"
          in pre.stdout and "Would remove 2 direct server entries" in pre.stdout,
          "connect preview names the direct entries it would take out", pre.stdout)
    check(H.read(mcp) == rendered, "the preview writes nothing")
    check("t1" not in pre.stdout, "the preview never shows the resolved secret", pre.stdout)

    c = H.run(sb, "connect", "--all", "--write")
    check(c.returncode == 0, "connect --all --write", c.stdout + c.stderr)
    check("✓ gateway registered (agentstack mcp --auto-project)" in c.stdout and
          "removed 'notes' (the gateway serves it — one delivery per server)" in c.stdout and
          "Removed 2 direct server entries the gateway now serves" in c.stdout,
          "connect says what it took out", c.stdout)
    check("t1" not in c.stdout, "connect never prints the resolved secret", c.stdout)
    check(not os.path.exists(mcp), ".mcp.json held only our entries: it is gone, no direct "
          "entry is left beside the gateway")
    check(list(json.loads(H.read(claude))["mcpServers"]) == ["agentstack"],
          "the CLI holds only the gateway", H.read(claude))
    ledger = json.loads(H.read(os.path.join(sb.ah, "state.json")))
    pkey = [k for k in ledger["targets"] if k.startswith("claude-code@project:")]
    check(pkey and ledger["targets"][pkey[0]].get("managed_servers", []) == [],
          "the ledger no longer lists the removed entries as ours", ledger)

    again = H.run(sb, "apply", "--write")
    check(again.returncode == 0 and not os.path.exists(mcp),
          "apply afterwards does not put them back", again.stdout + again.stderr)
    check("· MCP servers are served live, not written" in again.stdout, "apply: served live",
          again.stdout)
    d = H.run(sb, "doctor")
    check(d.returncode == 0 and "directly beside the gateway" not in d.stdout,
          "doctor is clean", d.stdout + d.stderr)

    # A hand-added direct duplicate of a served server.
    sb.write(".mcp.json", '{"mcpServers": {"filesystem": {"command": "npx"},'
             ' "mine": {"command": "mine-mcp"}}}\n')
    d = H.run(sb, "doctor")
    check(d.returncode != 0, "doctor: a direct duplicate is an error (non-zero exit)",
          d.stdout + d.stderr)
    check("'filesystem'" in d.stdout and "directly beside the gateway" in d.stdout and
          "agentstack apply --write" in d.stdout and "'mine'" not in d.stdout,
          "doctor names the duplicate and the fix, not the unrelated entry", d.stdout)
    j = H.run(sb, "doctor", "--json")
    check('"filesystem"' in j.stdout or "'filesystem'" in j.stdout, "doctor --json carries it",
          j.stdout)
    fix = H.run(sb, "apply", "--write")
    check(fix.returncode == 0, "the fix runs", fix.stdout + fix.stderr)
    left = json.loads(H.read(mcp))["mcpServers"]
    check(list(left) == ["mine"], "the fix takes out the duplicate and keeps the hand entry",
          left)
    check(H.run(sb, "doctor").returncode == 0, "doctor clean after the fix")

    # Undo back to before the connect: the fix and the connect are reverted.
    u = H.run(sb, "undo", "--to", "2", "--write")
    check(u.returncode == 0, "undo --to 2 --write", u.stdout + u.stderr)
    check(H.read(mcp) == rendered, "undo: .mcp.json byte-identical to what apply rendered")
    check(not os.path.exists(claude), "undo: the file connect created is gone")

# A project that renders locally for the CLI keeps its direct entries.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST + "\n[delivery]\nrender_locally = true\n")
    H.run(sb, "lock", "--write")
    H.trust(sb)
    mcp = os.path.join(sb.project, ".mcp.json")
    check(H.run(sb, "apply", "--write").returncode == 0, "apply (render locally)")
    before = H.read(mcp)
    c = H.run(sb, "connect", "--all", "--write")
    check(c.returncode == 0 and H.read(mcp) == before and "direct server entr" not in c.stdout,
          "render_locally: connect leaves the rendered entries", c.stdout + c.stderr)
    check(H.run(sb, "doctor").returncode == 0, "render_locally: no duplicate error")

# The machine manifest's servers in the CLI's user file are not the
# gateway's (it serves a project's): connect must not take them away.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    sb.write("agentstack.toml", 'version = 1\n\n[servers.everywhere]\ntype = "stdio"\n'
             'command = "everywhere-mcp"\n', base=sb.ah)
    claude = os.path.join(sb.home, ".claude.json")
    empty = os.path.join(sb.root, "nowhere")
    os.makedirs(empty)
    g = H.run(sb, "apply", "--scope", "global", "--write", cwd=empty)
    check(g.returncode == 0 and "everywhere" in json.loads(H.read(claude))["mcpServers"],
          "apply --scope global renders the machine manifest's server", g.stdout + g.stderr)
    c = H.run(sb, "connect", "--all", "--write", cwd=empty)
    names = sorted(json.loads(H.read(claude))["mcpServers"])
    check(c.returncode == 0 and names == ["agentstack", "everywhere"],
          "connect keeps the machine manifest's server beside the gateway", c.stdout + names.__repr__())
    again = H.run(sb, "apply", "--scope", "global", "--write", cwd=empty)
    check(sorted(json.loads(H.read(claude))["mcpServers"]) == ["agentstack", "everywhere"],
          "apply --scope global does not prune it either", again.stdout + again.stderr)
    d = H.run(sb, "doctor", cwd=empty)
    check("directly beside the gateway" not in d.stdout, "doctor does not call it a duplicate",
          d.stdout)

# A hand-added entry in the CLI's user file is the user's: apply --scope
# global leaves it (it did not write it), doctor names it as a duplicate and
# says to take it out by hand.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST)
    H.run(sb, "lock", "--write")
    H.trust(sb)
    claude = os.path.join(sb.home, ".claude.json")
    check(H.run(sb, "connect", "--all", "--write").returncode == 0, "connect (hand case)")
    cj = json.loads(H.read(claude))
    cj["mcpServers"]["filesystem"] = {"command": "npx"}
    sb.write(".claude.json", json.dumps(cj, indent=2) + "\n", base=sb.home)
    seeded = H.read(claude)
    g = H.run(sb, "apply", "--scope", "global", "--write")
    check(g.returncode == 0 and H.read(claude) == seeded,
          "apply --scope global leaves a hand-added user-file entry byte for byte",
          g.stdout + g.stderr)
    d = H.run(sb, "doctor")
    check(d.returncode != 0 and "'filesystem'" in d.stdout and
          "directly beside the gateway" in d.stdout and
          "remove 'filesystem' from " + claude in d.stdout and
          "apply --scope global --write" not in d.stdout,
          "doctor: the user-file duplicate is an error whose fix is to remove it by hand",
          d.stdout)

done()
