"""The first-run transcript end to end (docs/onboarding.md):
init → bootstrap → lock/trust → apply --write → apply says
nothing to write → doctor with no errors; and bootstrap's report: read-only,
one Next: line, missing secrets and skills, --json."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

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


def snapshot(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


def next_lines(text):
    return [ln for ln in text.splitlines() if ln.startswith("Next: ")]


def env(sb):
    e = H.env(sb)
    e.pop("NOTES_TOKEN", None)
    e.pop("DOCS_KEY", None)
    return e


def seed_transcript():
    with Sandbox() as sb:
        for b in ("claude", "codex", "copilot", "gemini", "opencode", "pi"):
            H.fake_bin(sb, b)
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write(".mcp.json", CLAUDE_HAD_IT)
        e = env(sb)

        r = H.run(sb, "init", "--yes", e=e)
        check(r.returncode == 0, "init exits 0", r.stdout + r.stderr)
        check("🔍 Detected 6 CLIs: Claude Code · Codex CLI · GitHub Copilot CLI · Gemini CLI · "
              "OpenCode · Pi" in r.stdout, "🔍 Detected 6 CLIs: …", r.stdout)
        check("📥 Imported 1 MCP server from existing configs" in r.stdout,
              "📥 Imported 1 MCP server from existing configs", r.stdout)
        check("✅ Wrote .agentstack/agentstack.toml" in r.stdout,
              "✅ Wrote .agentstack/agentstack.toml", r.stdout)
        check("+ filesystem  ← Claude Code (.mcp.json)" in r.stdout,
              "a project config is shown relative to the project", r.stdout)

        before = snapshot(sb.root)
        b = H.run(sb, "bootstrap", e=e)
        check(b.returncode == 0 and "✓ manifest validates · 6 adapters installed · no missing "
              "secrets" in b.stdout, "bootstrap: ✓ manifest validates · 6 adapters installed · "
              "no missing secrets", b.stdout + b.stderr)
        check(len(next_lines(b.stdout)) == 1 and "Next: agentstack lock --write" in b.stdout,
              "exactly one Next: line (an unpinned project: lock first)", b.stdout)
        check(snapshot(sb.root) == before, "bootstrap writes nothing")

        lk = H.run(sb, "lock", "--write", e=e)
        check(lk.returncode == 0, "lock --write", lk.stdout + lk.stderr)
        b = H.run(sb, "bootstrap", e=e)
        check("Next: agentstack trust ." in b.stdout and len(next_lines(b.stdout)) == 1,
              "untrusted: Next: agentstack trust .", b.stdout)
        H.trust(sb, e=e)
        b = H.run(sb, "bootstrap", e=e)
        check("→ apply would change 4 targets" in b.stdout
              and "Next: agentstack apply --write" in b.stdout,
              "trusted: what apply would change, Next: agentstack apply --write", b.stdout)

        w = H.run(sb, "apply", "--write", e=e)
        out = w.stdout
        check(w.returncode == 0, "apply --write exits 0", out + w.stderr)
        claude = out[out.index("Claude Code"):out.index("Codex CLI")]
        check("✓ up to date" in claude, "Claude Code ✓ up to date (it already had the server)",
              claude)
        codex = out[out.index("Codex CLI"):out.index("GitHub Copilot CLI")]
        check("+ [mcp_servers.filesystem]" in codex and "✓ wrote 1 server" in codex,
              "Codex CLI + [mcp_servers.filesystem] ✓ wrote 1 server", codex)
        a = H.run(sb, "apply", e=e)
        lines = a.stdout.splitlines()
        check(a.returncode == 0 and "✓ nothing to write — every target in sync" in lines,
              "apply: the documented line `✓ nothing to write — every target in sync`", a.stdout)
        would = [ln for ln in lines if ln.startswith("→") or " would " in ln]
        check(not would, "apply: nothing would change — the .gitignore block included", would)
        with open(os.path.join(sb.project, ".gitignore")) as f:
            gi = f.read()
        check("/.codex/config.toml" in gi and "/.mcp.json" not in gi,
              "the managed .gitignore block lists what apply wrote, never the hand-made "
              ".mcp.json it left up to date", gi)
        b = H.run(sb, "bootstrap", e=e)
        check("✓ every target in sync" in b.stdout and "Next: agentstack doctor" in b.stdout,
              "bootstrap after apply: in sync, Next: agentstack doctor", b.stdout)
        j = json.loads(H.run(sb, "bootstrap", "--json", e=e).stdout)
        check(j["state"] == "ready" and j["apply_would_change"] == 0 and j["trusted"]
              and j["next_action"]["command"] == "agentstack doctor",
              "bootstrap --json: ready, next_action", j)
        d = H.run(sb, "doctor", e=e)
        check("0 errors" in d.stdout, "doctor: 0 errors", d.stdout)


def missing_things():
    with Sandbox() as sb:
        H.fake_bin(sb, "claude")
        sb.write(".agentstack/agentstack.toml", """version = 1

[servers.gh]
type = "http"
url = "https://x.invalid/mcp"
headers = { Authorization = "Bearer ${GH_PAT}" }

[toolsets.default]
servers = ["gh"]
skills = ["sql-review"]
""")
        e = env(sb)
        b = H.run(sb, "bootstrap", e=e)
        check("1 missing secret" in b.stdout and "${GH_PAT} missing ↳ agentstack secret set GH_PAT"
              in b.stdout, "a missing secret is named with its fix", b.stdout)
        check("skill 'sql-review' missing" in b.stdout, "a missing library skill is named",
              b.stdout)
        check(len(next_lines(b.stdout)) == 1 and "Next: declare [skills.sql-review]" in b.stdout,
              "the validation error comes first: Next: its fix", b.stdout)
        e2 = dict(e, GH_PAT="x")
        j = json.loads(H.run(sb, "bootstrap", "--json", e=e2).stdout)
        check(j["secrets"]["resolved"] == {"GH_PAT": "env"} and j["skills_missing"] == ["sql-review"]
              and not j["manifest"]["valid"],
              "--json: resolved sources, missing skills, validation", j)
        mp = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        with open(mp) as f:
            text = f.read()
        with open(mp, "w") as f:
            f.write(text.replace('skills = ["sql-review"]\n', ""))
        b = H.run(sb, "bootstrap", e=e)
        check("Next: agentstack secret set GH_PAT" in b.stdout and len(next_lines(b.stdout)) == 1,
              "then: Next: agentstack secret set GH_PAT", b.stdout)
        sb.write(".agentstack/agentstack.toml", "version = 1\n[servers.x]\ntype = 3\n")
        b = H.run(sb, "bootstrap", e=e)
        check(b.returncode == 1 and "agentstack.toml" in b.stderr
              and "Next: fix" in b.stdout, "a broken manifest: the error and one Next: line",
              b.stdout + b.stderr)
    with Sandbox() as sb:
        b = H.run(sb, "bootstrap", e=env(sb))
        check(b.returncode == 1 and "Next: agentstack init" in b.stdout,
              "no manifest: Next: agentstack init", b.stdout + b.stderr)


seed_transcript()
missing_things()
done()
