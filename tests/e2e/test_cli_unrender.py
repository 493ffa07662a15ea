"""`unrender` (docs/adapters.md, "Uninstall and unrender"): a preview that
changes nothing; --write takes this manifest's rendered servers, instruction
regions and skill links back out of the CLIs' files (project scope by
default, --scope global and --target to narrow), keeps foreign entries,
another manifest's entries, the gateway registration, the manifest and the
home, and `undo` reverses it."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

# One server, skill and instruction rendered by the project, one server by the
# machine manifest (apply_helpers.py).
# Both render locally, so the CLIs hold the rendered servers and the gateway
# at once (without it, connect takes the rendered entries out: one delivery
# per server, test_connect_oneway.py) and uninstall has both to take back.
LOCAL = "\n[delivery]\nrender_locally = true\n"
MANIFEST = H.ONE_OF_EACH_MANIFEST + LOCAL
MACHINE = H.ONE_SERVER_MACHINE + LOCAL

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "codex")
    P = sb.project
    os.makedirs(os.path.join(P, ".git"))
    sb.write(".agentstack/skills/notes/SKILL.md", "---\ndescription: notes\n---\n")
    sb.write(".agentstack/instr/style.md", "Use tabs.\n")
    manifest = H.write_manifest(sb, MANIFEST)
    sb.write(".mcp.json", '{"mcpServers": {"mine": {"command": "mine"}}}\n')
    sb.write("CLAUDE.md", "My own notes.\n")
    sb.write("agentstack.toml", MACHINE, base=sb.ah)
    check(H.run(sb, "lock", "--write").returncode == 0, "lock")
    H.trust(sb)
    check(H.run(sb, "use", "--write").returncode == 0, "use --write")
    # The machine manifest renders g into the user's files; the project renders a there too.
    check(H.run(sb, "apply", "--write", cwd=sb.home).returncode == 0, "machine apply")
    check(H.run(sb, "apply", "--write", "--scope", "global").returncode == 0, "project global")
    check(H.run(sb, "connect", "--write", cwd=sb.home).returncode == 0, "connect")
    codex_user = os.path.join(sb.home, ".codex", "config.toml")
    check('[mcp_servers.a]' in H.read(codex_user) and '[mcp_servers.g]' in H.read(codex_user),
          "both manifests wrote the user's codex file")
    manifest_bytes = H.read(manifest)

    hp = H.run(sb, "help", "--all")
    check("unrender" in hp.stdout, "help --all lists unrender", hp.stdout)

    mcp_before = H.read(os.path.join(P, ".mcp.json"))
    pv = H.run(sb, "unrender")
    check(pv.returncode == 0 and "(scope: project)" in pv.stdout and
          "would REMOVE 'a'" in pv.stdout and "unlinking skill 'notes'" in pv.stdout and
          pv.stdout.rstrip().splitlines()[-1].startswith("Dry run."),
          "preview: project scope, names the removals, Dry run. footer", pv.stdout + pv.stderr)
    check(H.read(os.path.join(P, ".mcp.json")) == mcp_before, "preview writes nothing")

    w = H.run(sb, "unrender", "--write")
    check(w.returncode == 0, "unrender --write", w.stdout + w.stderr)
    check(json.loads(H.read(os.path.join(P, ".mcp.json"))) ==
          {"mcpServers": {"mine": {"command": "mine"}}}, "the project's .mcp.json: ours gone")
    check(H.read(os.path.join(P, "CLAUDE.md")) == "My own notes.\n", "region removed, text kept")
    check(not os.path.lexists(os.path.join(P, ".claude", "skills", "notes")), "skill unlinked")
    check(not os.path.exists(os.path.join(P, "AGENTS.md")) and
          not os.path.exists(os.path.join(P, ".gitignore")), "emptied files pruned")
    check('[mcp_servers.a]' in H.read(codex_user), "project scope leaves the user's files")
    check(H.read(manifest) == manifest_bytes and os.path.isdir(sb.ah),
          "the manifest and the home stay")

    again = H.run(sb, "unrender", "--write")
    check(again.returncode == 0 and "✓ nothing rendered by this manifest is left" in again.stdout,
          "idempotent", again.stdout + again.stderr)

    g = H.run(sb, "unrender", "--scope", "global", "--target", "codex", "--write")
    check(g.returncode == 0, "unrender --scope global --target codex", g.stdout + g.stderr)
    text = H.read(codex_user)
    check('[mcp_servers.a]' not in text, "this manifest's server left the user's codex file", text)
    check('[mcp_servers.g]' in text, "the machine manifest's server stays", text)
    check('[mcp_servers.agentstack]' in text, "the gateway registration stays", text)
    user = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
    check("a" in user["mcpServers"], "--target codex leaves claude alone", user)

    bad = H.run(sb, "unrender", "--target", "codx")
    check(bad.returncode == 2 and "did you mean 'codex'" in bad.stderr,
          "an unknown --target is a usage error", bad.stderr)

    # Undo puts the project back as it was rendered.
    rows = json.loads(H.run(sb, "undo", "--json").stdout)
    rows = rows.get("entries", rows) if isinstance(rows, dict) else rows
    first = min(i + 1 for i, r in enumerate(rows) if r.get("operation") == "unrender")
    u = H.run(sb, "undo", "--to", str(first), "--write")
    check(u.returncode == 0, "undo --to the first unrender", u.stdout + u.stderr)
    check("a" in json.loads(H.read(os.path.join(P, ".mcp.json")))["mcpServers"] and
          "agentstack:start" in H.read(os.path.join(P, "CLAUDE.md")) and
          '[mcp_servers.a]' in H.read(codex_user), "undo restores what unrender removed")
    again = H.run(sb, "unrender")
    check("would REMOVE 'a'" in again.stdout,
          "after the undo the restored entries are ours again", again.stdout)

    # A .gitignore whose block lost its end marker is refused, never cut.
    gi = os.path.join(P, ".gitignore")
    broken = ("node_modules/\n# >>> agentstack — generated project artifacts "
              "(machine-local) >>>\n/.mcp.json\nsecrets/\n")
    with open(gi, "w") as f:
        f.write(broken)
    b = H.run(sb, "unrender", "--write")
    check(b.returncode == 1 and "no end marker" in b.stdout and b.stderr.startswith("error: "),
          "an unpaired marker: exit 1, the line and why", b.stdout + b.stderr)
    check(H.read(gi) == broken, "the user's .gitignore is left byte for byte")

done()
