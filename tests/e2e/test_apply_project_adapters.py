"""The project-scope files of Copilot CLI, Zed and Amp (docs/adapters.md), and
Copilot's tool allowlist through init and apply.

1. `apply --scope project --write` for copilot-cli, zed and amp writes
   .github/mcp.json, .zed/settings.json and .amp/settings.json — each in its
   CLI's own shape (Copilot's "tools": ["*"], Zed's "context_servers", Amp's
   one flat "amp.mcpServers" key, never a nested "amp" object).
2. An existing Zed settings file (JSONC: comments, a trailing comma, other
   settings) keeps every byte outside our section, and restore gives it back.
3. `init` importing a Copilot config: the default tools list (["*"]) is not
   carried as an extra, a narrower one is, and apply then writes the narrower
   list back — importing never widens what a server may expose.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

ZED_SEED = '{\n  // my editor\n  "theme": "One Dark",\n  "vim_mode": true,\n}\n'

with Sandbox() as sb:
    H.write_manifest(sb, H.SPEC_MANIFEST)
    H.trust(sb)
    zed = os.path.join(sb.project, ".zed", "settings.json")
    os.makedirs(os.path.dirname(zed))
    with open(zed, "w") as f:
        f.write(ZED_SEED)
    w = H.run(sb, "apply", "--scope", "project", "--target", "copilot-cli", "--target", "zed",
              "--target", "amp", "--write")
    check(w.returncode == 0, "apply --scope project --write (copilot-cli, zed, amp)",
          w.stdout + w.stderr)
    cp = os.path.join(sb.project, ".github", "mcp.json")
    check(os.path.exists(cp) and H.read(cp) == H.golden("copilot-cli"),
          "copilot-cli: .github/mcp.json is the golden rendering (tools: ['*'] on each entry)",
          H.read(cp) if os.path.exists(cp) else "missing")
    amp = os.path.join(sb.project, ".amp", "settings.json")
    check(os.path.exists(amp) and H.read(amp) == H.golden("amp"),
          "amp: .amp/settings.json is the golden rendering", H.read(amp) if os.path.exists(amp)
          else "missing")
    doc = json.loads(H.read(amp))
    check(list(doc) == ["amp.mcpServers"] and "amp" not in doc,
          "amp: one flat 'amp.mcpServers' key, not a nested object", doc)
    z = H.read(zed)
    check(z.startswith("{\n") and
          z.endswith('  // my editor\n  "theme": "One Dark",\n  "vim_mode": true,\n}\n'),
          "zed: the comment, the trailing comma and the other settings are kept byte for byte "
          "(our section goes right after the opening brace)", z)
    check('"context_servers"' in z and '"command": "uvx"' in z and
          '"url": "https://docs.example.test/mcp"' in z and '"type"' not in z,
          "zed: both servers under context_servers, no transport tag", z)
    check(os.stat(cp).st_mode & 0o777 == 0o600, "a new secret-bearing project file is 0600")
    r = H.run(sb, "restore", "--last", "--write")
    check(r.returncode == 0 and H.read(zed) == ZED_SEED and not os.path.exists(cp)
          and not os.path.exists(amp), "restore: Zed's file byte for byte, created files gone",
          r.stdout + r.stderr)

with Sandbox() as sb:
    os.makedirs(os.path.join(sb.home, ".copilot"))
    with open(os.path.join(sb.home, ".copilot", "mcp-config.json"), "w") as f:
        json.dump({"mcpServers": {
            "wide": {"type": "local", "command": "wide-mcp", "tools": ["*"]},
            "narrow": {"type": "local", "command": "narrow-mcp", "tools": ["read_issue"]}}}, f)
    H.fake_bin(sb, "copilot")
    os.makedirs(os.path.join(sb.project, ".git"))
    r = H.run(sb, "init", "--yes", "--secrets", "skip")
    check(r.returncode == 0, "init imports the Copilot CLI config", r.stdout + r.stderr)
    m = H.read(os.path.join(sb.project, ".agentstack", "agentstack.toml"))
    check("[servers.wide]" in m and "[servers.narrow]" in m, "both servers imported", m)
    wide = m.split("[servers.wide]", 1)[1].split("[servers.", 1)[0]
    check("tools" not in wide, "the default tools list ['*'] is not carried as an extra", m)
    check('tools = ["read_issue"]' in m, "a narrower tools list is kept (extra.copilot-cli)", m)
    H.trust(sb)
    w = H.run(sb, "apply", "--scope", "project", "--target", "copilot-cli", "--write")
    check(w.returncode == 0, "apply --write after init", w.stdout + w.stderr)
    out = json.loads(H.read(os.path.join(sb.project, ".github", "mcp.json")))["mcpServers"]
    check(out.get("wide", {}).get("tools") == ["*"] and
          out.get("narrow", {}).get("tools") == ["read_issue"],
          "apply writes ['*'] by default and the narrower list where one was imported", out)

done()
