"""The first-run transcript (docs/start.md): after init, `apply --write`
renders the server into every CLI the gateway is not connected to, in each
CLI's syntax; Claude Code already had it; the second run is in sync. Also:
the managed .gitignore block, and routing live when `connect` registered
the gateway in a CLI."""
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
"""

CLAUDE_HAD_IT = """{
  "mcpServers": {
    "filesystem": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "."
      ]
    }
  }
}
"""

with Sandbox() as sb:
    for b in ("claude", "codex", "copilot", "gemini", "opencode", "pi"):
        H.fake_bin(sb, b)
    os.makedirs(os.path.join(sb.project, ".git"))
    H.write_manifest(sb, MANIFEST)
    sb.write(".mcp.json", CLAUDE_HAD_IT)
    sb.write(".gitignore", "node_modules/\n")
    H.trust(sb)

    w = H.run(sb, "apply", "--write")
    out = w.stdout
    check(w.returncode == 0, "apply --write exits 0", w.stdout + w.stderr)
    claude = out[out.index("Claude Code"):out.index("Codex CLI")]
    check("✓ up to date" in claude, "Claude Code ✓ up to date (it already had the server)",
          claude)
    codex = out[out.index("Codex CLI"):out.index("GitHub Copilot CLI")]
    check("+ [mcp_servers.filesystem]" in codex and "✓ wrote 1 server" in codex,
          "Codex CLI  + [mcp_servers.filesystem]  ✓ wrote 1 server", codex)
    gem = out[out.index("Gemini CLI"):out.index("OpenCode")]
    check('+     "filesystem": {' in gem and "✓ wrote 1 server" in gem,
          'Gemini CLI  + "filesystem": { … }  ✓ wrote 1 server', gem)
    check("OpenCode (opencode.json)" not in out, "paths are shown in full")
    toml = H.read(os.path.join(sb.project, ".codex", "config.toml"))
    check(toml == '[mcp_servers.filesystem]\ncommand = "npx"\n'
                  'args = ["-y", "@modelcontextprotocol/server-filesystem", "."]\n',
          "codex project file", toml)
    oc = json.loads(H.read(os.path.join(sb.project, "opencode.json")))
    check(oc["mcp"]["filesystem"]["command"] == ["npx", "-y",
                                                 "@modelcontextprotocol/server-filesystem", "."],
          "opencode: its own syntax", oc)
    cpj = json.loads(H.read(os.path.join(sb.project, ".github", "mcp.json")))
    check(cpj["mcpServers"]["filesystem"]["type"] == "local" and
          cpj["mcpServers"]["filesystem"]["tools"] == ["*"],
          "copilot: its project file .github/mcp.json, type local, tools ['*']", cpj)
    gi = H.read(os.path.join(sb.project, ".gitignore"))
    check(gi == "node_modules/\n\n# >>> agentstack — generated project artifacts (machine-local) "
               ">>>\n/.codex/config.toml\n/.gemini/settings.json\n/.github/mcp.json\n/opencode.json\n"
               "# <<< agentstack >>>\n",
          "managed .gitignore block lists only files we wrote (not the hand-made .mcp.json)",
          gi)
    check("✓ .gitignore: managed block updated" in out, ".gitignore update reported", out)

    again = H.run(sb, "apply")
    check(again.returncode == 0 and "✓ nothing to write — every target in sync" in again.stdout,
          "second run: ✓ nothing to write — every target in sync", again.stdout)
    again = H.run(sb, "apply", "--write")
    check("already in sync — nothing to change." in again.stdout, "second --write is a no-op",
          again.stdout)

    # Global scope: copilot and pi get the same server, each in its own syntax.
    g = H.run(sb, "apply", "--scope", "global", "--write")
    check(g.returncode == 0, "global scope apply", g.stdout + g.stderr)
    cp = json.loads(H.read(os.path.join(sb.home, ".copilot", "mcp-config.json")))
    check(cp["mcpServers"]["filesystem"]["type"] == "local", "copilot: type local", cp)
    pi = json.loads(H.read(os.path.join(sb.home, ".pi", "agent", "mcp.json")))
    check(pi["mcpServers"]["filesystem"]["command"] == "npx", "pi: its mcp.json", pi)

# Routing: a CLI where connect registered the gateway gets the
# servers live — apply writes no server config there — unless render_locally.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "codex")
    H.write_manifest(sb, MANIFEST)
    H.trust(sb)
    bridge = ('{"mcpServers": {"agentstack": {"type": "stdio", "command": "/usr/local/bin/'
              'agentstack", "args": ["mcp", "--auto-project"]}}}\n')
    with open(os.path.join(sb.home, ".claude.json"), "w") as f:
        f.write(bridge)
    w = H.run(sb, "apply", "--scope", "global", "--write")
    check("· MCP servers are served live, not written — nothing for `apply` to render here"
          in w.stdout, "connected CLI: served live", w.stdout)
    check(H.read(os.path.join(sb.home, ".claude.json")) == bridge,
          "connected CLI's config untouched")
    check("[mcp_servers.filesystem]" in H.read(os.path.join(sb.home, ".codex", "config.toml")),
          "the other CLI is rendered")
    H.write_manifest(sb, MANIFEST + "\n[delivery]\nrender_locally = true\n")
    H.trust(sb)
    w = H.run(sb, "apply", "--scope", "global", "--write")
    doc = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
    check(sorted(doc["mcpServers"]) == ["agentstack", "filesystem"],
          "render_locally forces rendering next to the bridge", doc)

done()
