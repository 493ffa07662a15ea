"""Secrets in rendered files (docs/adapters.md, "The 17 built-in adapters"):
every adapter writes resolved values (`secret_mode: literal`), so the apply
preview names each file that will hold one, by reference and never by
value; a new such file is 0600; a project one is listed in the managed
.gitignore block. `secret_mode: passthrough` is refused when a descriptor
loads (the attack: a drop-in claiming passthrough must not load and render
the value anyway), naming the file and line; no rendered file then holds
the value."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done, files_holding  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

VALUE = "s3cr3t-value-0f-notes"
MANIFEST = """version = 1

[servers.notes]
type = "stdio"
command = "notes-mcp"
env = { NOTES_TOKEN = "${NOTES_TOKEN}" }

[servers.plain]
type = "stdio"
command = "plain-mcp"
targets = ["cursor"]
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "cursor")
    os.makedirs(os.path.join(sb.project, ".git"))
    H.write_manifest(sb, MANIFEST)
    H.run(sb, "lock", "--write")
    H.trust(sb)
    e = H.env(sb, NOTES_TOKEN=VALUE)

    p = H.run(sb, "apply", e=e)
    check(p.returncode == 0, "preview", p.stdout + p.stderr)
    out = p.stdout
    claude = out[out.index("Claude Code"):out.index("Cursor")]
    cursor = out[out.index("Cursor"):]
    check("· will hold the resolved value of ${NOTES_TOKEN} (a new file is created 0600)"
          in claude, "the preview names the Claude file as holding ${NOTES_TOKEN}", out)
    check("will hold the resolved value" in cursor, "cursor's file too (notes targets it)", out)
    check(VALUE not in out + p.stderr, "the preview never prints the value", out)

    w = H.run(sb, "apply", "--write", e=e)
    check(w.returncode == 0, "apply --write", w.stdout + w.stderr)
    check("· holds the resolved value of ${NOTES_TOKEN}" in w.stdout and VALUE not in w.stdout,
          "the write says so too, without the value", w.stdout)
    mcp = os.path.join(sb.project, ".mcp.json")
    check(VALUE in H.read(mcp), "literal: the value is in the rendered file (by design)")
    check(os.stat(mcp).st_mode & 0o777 == 0o600, "the new secret-bearing .mcp.json is 0600",
          oct(os.stat(mcp).st_mode))
    cur = os.path.join(sb.project, ".cursor", "mcp.json")
    check(os.stat(cur).st_mode & 0o777 == 0o600, "the new secret-bearing .cursor/mcp.json is 0600")
    gi = H.read(os.path.join(sb.project, ".gitignore"))
    block = gi[gi.index("# >>> agentstack"):gi.index("# <<< agentstack >>>")]
    check("/.mcp.json\n" in block and "/.cursor/mcp.json\n" in block,
          "every file holding a value is in the managed .gitignore block", gi)

# The attack: a drop-in that asks for passthrough is refused, never loaded.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "ptcli")
    H.write_manifest(sb, MANIFEST)
    H.run(sb, "lock", "--write")
    H.trust(sb)
    e = H.env(sb, NOTES_TOKEN=VALUE)
    sb.write("adapters/ptcli.yaml",
             "id: ptcli\ndisplay: PT\ndetect:\n  bin: ptcli\nconfig:\n  path: ~/.pt/mcp.json\n"
             "project:\n  config: .pt/mcp.json\nmcp:\n  location: mcpServers\n"
             "  secret_mode: passthrough\n", base=sb.ah)
    v = H.run(sb, "adapters", "validate", os.path.join(sb.ah, "adapters", "ptcli.yaml"), e=e)
    check(v.returncode != 0 and "ptcli.yaml:11:16" in v.stdout + v.stderr and
          "passthrough is not supported" in v.stdout + v.stderr,
          "adapters validate: refused, naming file:line:col", v.stdout + v.stderr)
    a = H.run(sb, "apply", "--write", e=e)
    check("passthrough is not supported" in a.stderr, "apply warns the drop-in was skipped",
          a.stdout + a.stderr)
    check(not os.path.exists(os.path.join(sb.project, ".pt")) and
          not os.path.exists(os.path.join(sb.home, ".pt")),
          "nothing is rendered through a descriptor that claims passthrough")
    t = H.run(sb, "apply", "--target", "ptcli", e=e)
    check(t.returncode == 2, "the refused descriptor is not a target", t.stdout + t.stderr)
    held = [f for f in files_holding(sb.project, VALUE) if "/.pt/" in f]
    check(held == [], "the value is in no file of the refused adapter", held)

done()
