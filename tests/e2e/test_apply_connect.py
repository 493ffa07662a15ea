"""`agentstack connect --all --write` (also spelled `gateway
connect`): the live gateway registered once in every detected CLI that
speaks MCP, each in its own syntax, through the same merge/ledger/backup
path as apply; idempotent; --target; routing afterwards;
restore puts every file back byte for byte."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, BIN, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SELF = os.path.realpath(BIN)
ARGS = ["mcp", "--auto-project"]

CLAUDE_BEFORE = ('{"numStartups": 12, "tipsHistory": {"x": 0.9402052562189797},\n'
                 ' "mcpServers": {"mine": {"command": "mine-mcp"}}}\n')
CODEX_BEFORE = '# my codex\nmodel = "o4"\n\n[mcp_servers.figma]\nurl = "https://f.test/mcp"\n'

MANIFEST = """version = 1

[servers.filesystem]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
"""

with Sandbox() as sb:
    for b in ("claude", "codex", "gemini", "opencode", "cursor"):
        H.fake_bin(sb, b)
    sb.write(".claude.json", CLAUDE_BEFORE, base=sb.home)
    sb.write(".codex/config.toml", CODEX_BEFORE, base=sb.home)

    p = H.run(sb, "connect", "--all")
    check(p.returncode == 0, "preview exits 0", p.stdout + p.stderr)
    check(p.stdout.count("→ would register the gateway") == 5,
          "preview: every detected MCP CLI would get the gateway", p.stdout)
    check("5 harness configs would change. Re-run with --write to apply." in p.stdout,
          "preview closing line", p.stdout)
    check(not os.path.exists(os.path.join(sb.home, ".gemini")), "preview writes nothing")

    w = H.run(sb, "connect", "--all", "--write")
    check(w.returncode == 0, "connect --all --write exits 0", w.stdout + w.stderr)
    check(w.stdout.count("✓ gateway registered (agentstack mcp --auto-project)") == 5,
          "each CLI: ✓ gateway registered", w.stdout)
    check("Updated 5 harness configs." in w.stdout, "closing line", w.stdout)

    claude_text = H.read(os.path.join(sb.home, ".claude.json"))
    claude = json.loads(claude_text)
    check(claude["mcpServers"]["agentstack"] == {"type": "stdio", "command": SELF,
                                                 "args": ARGS},
          "claude: absolute binary, mcp --auto-project, tagged stdio", claude)
    check(claude_text.startswith('{"numStartups": 12, "tipsHistory": {"x": 0.9402052562189797},')
          and list(claude["mcpServers"]) == ["mine", "agentstack"],
          "claude: bytes outside the section kept, hand entry kept first", claude_text)
    codex = H.read(os.path.join(sb.home, ".codex", "config.toml"))
    check(codex.startswith(CODEX_BEFORE) and
          '[mcp_servers.agentstack]\ncommand = "%s"\nargs = ["mcp", "--auto-project"]\n' % SELF
          in codex, "codex: its own TOML table, comments and figma kept", codex)
    oc = json.loads(H.read(os.path.join(sb.home, ".config", "opencode", "opencode.json")))
    check(oc["mcp"]["agentstack"] == {"type": "local", "command": [SELF] + ARGS},
          "opencode: local + one command array", oc)
    gem = json.loads(H.read(os.path.join(sb.home, ".gemini", "settings.json")))
    check(gem["mcpServers"]["agentstack"] == {"command": SELF, "args": ARGS},
          "gemini: untagged command/args", gem)
    check(oc and "agentstack" in json.loads(H.read(os.path.join(sb.home, ".cursor",
                                                                "mcp.json")))["mcpServers"],
          "cursor registered")
    ledger = json.loads(H.read(os.path.join(sb.ah, "state.json")))
    check(ledger["targets"]["claude-code"]["gateway"] == "agentstack" and
          "agentstack" not in ledger["targets"]["claude-code"].get("managed_servers", []),
          "ledger records the bridge, never as a managed (prunable) server", ledger)
    st = os.stat(os.path.join(sb.home, ".gemini", "settings.json"))
    check(st.st_mode & 0o077 == 0, "a new config is created 0600", oct(st.st_mode))

    snap = H.tree(sb.home, skip=(".agentstack",))
    again = H.run(sb, "connect", "--all", "--write")
    check(again.stdout.count("✓ already connected") == 5 and "Nothing to change." in again.stdout,
          "second connect: ✓ already connected, Nothing to change.", again.stdout)
    check(H.tree(sb.home, skip=(".agentstack",)) == snap, "idempotent: no byte changed")
    alias = H.run(sb, "gateway", "connect", "--all", "--write")
    check(alias.returncode == 0 and "Nothing to change." in alias.stdout,
          "the older spelling gateway connect works too", alias.stdout + alias.stderr)

    # Routing: the connected CLIs get servers live; apply renders
    # for the others only.
    os.remove(os.path.join(sb.root, "bin", "cursor"))
    H.write_manifest(sb, MANIFEST)
    H.trust(sb)
    a = H.run(sb, "apply", "--scope", "global", "--write", "--target", "claude-code",
              "--target", "kiro")
    check(a.returncode == 0, "apply after connect", a.stdout + a.stderr)
    check("· MCP servers are served live, not written — nothing for `apply` to render here"
          in a.stdout, "connected CLI: served live", a.stdout)
    check("filesystem" not in H.read(os.path.join(sb.home, ".claude.json")),
          "nothing rendered into the connected CLI")
    kiro = json.loads(H.read(os.path.join(sb.home, ".kiro", "settings", "mcp.json")))
    check("filesystem" in kiro["mcpServers"], "the unconnected CLI is rendered", kiro)

    # Everything connect wrote comes back byte for byte.
    H.run(sb, "restore", "--last", "--write")  # the apply
    r = H.run(sb, "restore", "--last", "--write")  # the connect
    check(r.returncode == 0, "restore the connect", r.stdout + r.stderr)
    check(H.read(os.path.join(sb.home, ".claude.json")) == CLAUDE_BEFORE and
          H.read(os.path.join(sb.home, ".codex", "config.toml")) == CODEX_BEFORE,
          "restore: claude and codex byte-identical")
    check(not os.path.exists(os.path.join(sb.home, ".gemini")) and
          not os.path.exists(os.path.join(sb.home, ".config", "opencode")),
          "restore: files and dirs connect created are gone")

# --target / named CLIs, a CLI without MCP, nothing detected, a broken file.
with Sandbox() as sb:
    e = H.env(sb)
    p = H.run(sb, "connect", "--all", "--write", e=e)
    check(p.returncode == 1 and "no installed harness with MCP support detected" in p.stderr,
          "nothing detected: exit 1 with the exact phrase", p.stdout + p.stderr)
    sb.write("adapters/shtest.yaml", "id: shtest\ndisplay: Shell test\ndetect:\n  bin: shtest\n",
             base=sb.ah)
    H.fake_bin(sb, "shtest")
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "gemini")
    p = H.run(sb, "connect", "--all", e=e)
    check("· shtest: no MCP config support — the gateway doesn't apply, skipped" in p.stdout,
          "a CLI without MCP is named and skipped", p.stdout)
    p = H.run(sb, "connect", "--target", "gemini", "--write", e=e)
    check(p.returncode == 0 and os.path.exists(os.path.join(sb.home, ".gemini", "settings.json"))
          and not os.path.exists(os.path.join(sb.home, ".claude.json")),
          "--target: only that CLI", p.stdout + p.stderr)
    p = H.run(sb, "connect", "codx", e=e)
    check(p.returncode == 2 and "did you mean 'codex'" in p.stderr, "unknown CLI: did you mean",
          p.stderr)
    sb.write(".claude.json", '{"mcpServers": {,}', base=sb.home)
    p = H.run(sb, "connect", "--all", "--write", e=e)
    check(p.returncode == 1 and "existing config is not valid JSON" in p.stdout and
          H.read(os.path.join(sb.home, ".claude.json")) == '{"mcpServers": {,}',
          "malformed config: that target fails untouched, exit 1", p.stdout + p.stderr)
    check("✓ already connected" in p.stdout, "the other target still handled", p.stdout)
    p = H.run(sb, "connect", "--command", "/opt/as/bin/agentstack", "--transparent", "gemini",
              "--write", e=e)
    gem = json.loads(H.read(os.path.join(sb.home, ".gemini", "settings.json")))
    check(gem["mcpServers"]["agentstack"] == {"command": "/opt/as/bin/agentstack",
                                              "args": ARGS + ["--transparent"]},
          "--command and --transparent", gem)
    p = H.run(sb, "gateway", "disconnect", "gemini", "--write", e=e)
    gem = json.loads(H.read(os.path.join(sb.home, ".gemini", "settings.json")))
    check(p.returncode == 0 and gem["mcpServers"] == {}, "gateway disconnect removes our entry",
          p.stdout + json.dumps(gem))
    p = H.run(sb, "disconnect", e=e)
    check(p.returncode == 2, "retired `disconnect` does not parse", p.stderr)

done()
