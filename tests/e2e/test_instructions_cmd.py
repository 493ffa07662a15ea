"""agentstack instructions (docs/adapters.md): the manifest's
[instructions] compiled into each CLI's instruction file on their own —
preview per file (`→ would update managed region`), --write (`✓ wrote
managed region`), `✓ up to date` — without touching servers, settings or
hooks; behind the same trust gate and lock pins as apply; undone by
restore --last.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[instructions.style]
path = "style.md"

[[instructions.style.variant]]
cli = "claude-code"
path = "style-claude.md"

[servers.alpha]
type = "stdio"
command = "alpha-mcp"

[settings.codex]
model = "gpt-5"

[targets]
default = ["claude-code", "codex", "cursor"]
"""
CLAUDE_MD = "# My project\n\nHand-written notes.\n"


def main():
    with Sandbox() as sb:
        e = H.env(sb)
        os.makedirs(os.path.join(sb.project, ".git"))
        H.write_manifest(sb, MANIFEST)
        sb.write(".agentstack/style.md", "Use tabs.\n")
        sb.write(".agentstack/style-claude.md", "Claude: use tabs.\n")
        sb.write("CLAUDE.md", CLAUDE_MD)
        claude = os.path.join(sb.project, "CLAUDE.md")
        agents = os.path.join(sb.project, "AGENTS.md")
        skip = (".agentstack",)

        # untrusted: previewed as refused, --write refuses and writes nothing
        before = H.tree(sb.project, skip=skip)
        r = H.run(sb, "instructions", e=e)
        check(r.returncode == 0 and "✗ refusing to render instructions: project at" in r.stdout
              and "✗ --write would refuse" in r.stdout, "untrusted: the preview says it refuses",
              r.stdout + r.stderr)
        r = H.run(sb, "instructions", "--write", e=e)
        check(r.returncode == 1 and "refusing to render instructions" in r.stderr and
              H.tree(sb.project, skip=skip) == before, "untrusted: --write refuses, nothing written",
              r.stdout + r.stderr)

        H.run(sb, "lock", "--write", e=e)
        H.trust(sb, e=e)
        before = H.tree(sb.project, skip=skip)
        r = H.run(sb, "instructions", e=e)
        out = r.stdout
        check(r.returncode == 0 and out.startswith("Scope: project\n") and
              out.count("→ would update managed region") == 2 and
              "2 instruction files would change. Re-run with --write to write." in out,
              "preview: one line per file", out + r.stderr)
        check("Cursor: (instructions not supported by this CLI — 1 fragment not compiled)" in out,
              "a CLI without an instruction file is named", out)
        check(H.tree(sb.project, skip=skip) == before, "the preview writes nothing")

        r = H.run(sb, "instructions", "--write", e=e)
        check(r.returncode == 0 and r.stdout.count("✓ wrote managed region") == 2 and
              "✓ wrote 2 instruction files." in r.stdout, "--write: both files written",
              r.stdout + r.stderr)
        c = H.read(claude)
        check(c.startswith(CLAUDE_MD) and "<!-- agentstack:start -->\nClaude: use tabs.\n" in c,
              "CLAUDE.md: hand text kept, the claude variant in the managed region", c)
        a = H.read(agents) if os.path.exists(agents) else ""
        check("Use tabs.\n" in a and "Claude:" not in a, "AGENTS.md: the base body", a)
        for rel in (".mcp.json", ".codex/config.toml", ".cursor/mcp.json", ".claude"):
            check(not os.path.exists(os.path.join(sb.project, rel)),
                  f"servers and settings untouched: no {rel}")

        r = H.run(sb, "instructions", e=e)
        check(r.returncode == 0 and r.stdout.count("✓ up to date") == 2 and
              "✓ nothing to write — every instruction file up to date" in r.stdout,
              "second run: every file up to date", r.stdout)

        # restore --last undoes exactly the instructions write
        r = H.run(sb, "restore", "--last", "--write", e=e)
        check(r.returncode == 0 and H.read(claude) == CLAUDE_MD and not os.path.exists(agents),
              "restore --last: CLAUDE.md byte for byte, AGENTS.md gone", r.stdout + r.stderr)

        # apply compiles the same bytes: after instructions --write it renders
        # the servers and leaves the instruction files as they are
        H.run(sb, "instructions", "--write", e=e)
        c1, a1 = H.read(claude), H.read(agents)
        r = H.run(sb, "apply", "--write", e=e)
        check(r.returncode == 0 and H.read(claude) == c1 and H.read(agents) == a1 and
              os.path.exists(os.path.join(sb.project, ".codex", "config.toml")),
              "apply --write afterwards: servers rendered, instruction files unchanged",
              r.stdout + r.stderr)

        # a fragment drifted from its pin refuses under --write
        sb.write(".agentstack/style.md", "Use spaces.\n")
        r = H.run(sb, "instructions", "--write", e=e)
        check(r.returncode == 1 and "refusing to" in r.stdout + r.stderr and
              H.read(claude) == c1 and H.read(agents) == a1,
              "a drifted fragment is refused, nothing written", r.stdout + r.stderr)

        # usage
        r = H.run(sb, "instructions", "--prune-foreign", e=e)
        check(r.returncode == 2, "--prune-foreign is a usage error", r.stderr)

    with Sandbox() as sb:
        e = H.env(sb)
        H.write_manifest(sb, 'version = 1\n[targets]\ndefault = ["codex"]\n')
        r = H.run(sb, "instructions", e=e)
        check(r.returncode == 0 and "· no instructions declared" in r.stdout,
              "no [instructions]: says so", r.stdout + r.stderr)
    done()


main()
