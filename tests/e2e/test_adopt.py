"""agentstack adopt (docs/adapters.md): a deliberate hand edit in a CLI's native config
comes back into the manifest — preview first, --write edits only the keys
that changed; rendered entries (secrets filled in) read as in sync; two
different edits of one server are a conflict until --target picks one."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """# my project's agents
version = 1

# the docs server
[servers.docs]
type = "http"
url = "https://docs.example.com/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }

[servers.fs]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
targets = ["claude-code", "codex", "cursor"]
"""
DOCS = "dt_9Kq2Lm7Zp4Wx8Rv3"
LIN = "lin_api_Zq8Wm3Lp7Rt2Vx9Kc4Nb6"


def env(sb, **extra):
    e = H.env(sb, DOCS_TOKEN=DOCS, **extra)
    e.pop("NOTES_TOKEN", None)
    e.pop("DOCS_KEY", None)
    e.pop("DBUS_SESSION_BUS_ADDRESS", None)
    e["XDG_RUNTIME_DIR"] = os.path.join(sb.root, "no-runtime")
    return e


with Sandbox() as sb:
    for b in ("claude", "codex", "cursor"):
        H.fake_bin(sb, b)
    H.write_manifest(sb, MANIFEST)
    e = env(sb)
    H.trust(sb, e=e)
    w = H.run(sb, "apply", "--write", e=e)
    check(w.returncode == 0, "apply --write renders the manifest", w.stdout + w.stderr)
    a = H.run(sb, "adopt", e=e)
    check(a.returncode == 0 and "✓ nothing to adopt" in a.stdout,
          "rendered entries (token filled in) read as in sync", a.stdout + a.stderr)

    # hand edits: a new server in .mcp.json (inline token), a changed arg in codex
    mcp = os.path.join(sb.project, ".mcp.json")
    text = open(mcp).read()
    text = text.replace('"mcpServers": {', '"mcpServers": {\n    "linear": {"type": "http", '
                        '"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": '
                        '"Bearer ' + LIN + '"}},', 1)
    open(mcp, "w").write(text)
    codex = os.path.join(sb.project, ".codex", "config.toml")
    ct = open(codex).read()  # read before open(..., "w") truncates it
    open(codex, "w").write(ct.replace('server-filesystem", "."]', 'server-filesystem", "/data"]'))
    natives = {p: open(p).read() for p in (mcp, codex)}
    before = open(os.path.join(sb.project, ".agentstack", "agentstack.toml")).read()

    a = H.run(sb, "adopt", e=e)
    out = a.stdout
    check(a.returncode == 0 and "+ add 'linear'  ← Claude Code (.mcp.json)" in out,
          "preview: + add 'linear' from Claude Code", out + a.stderr)
    check("~ update 'fs'  ← Codex CLI (.codex/config.toml) — hand-edited: args" in out,
          "preview: ~ update 'fs' — hand-edited: args", out)
    check("Bearer ${LINEAR_TOKEN}" in out and LIN not in out,
          "the new server's token is shown as a ${REF}", out)
    check("Dry run." in out and open(os.path.join(sb.project, ".agentstack",
                                                  "agentstack.toml")).read() == before,
          "a preview writes nothing", out)

    a = H.run(sb, "adopt", "--write", e=e)
    check(a.returncode == 1 and "--secrets" in a.stderr and "keychain" in a.stderr,
          "no keychain: --write refuses and names --secrets", a.stderr)
    a = H.run(sb, "adopt", "--write", "--secrets", "env", e=e)
    check(a.returncode == 0 and "✓ adopted 2 servers" in a.stdout, "--write adopts both",
          a.stdout + a.stderr)
    after = open(os.path.join(sb.project, ".agentstack", "agentstack.toml")).read()
    check("# my project's agents" in after and "# the docs server" in after
          and 'targets = ["claude-code", "codex", "cursor"]' in after,
          "comments and untouched keys (targets) are kept", after)
    check('server-filesystem", "/data"]' in after and "[servers.linear]" in after
          and "${LINEAR_TOKEN}" in after and LIN not in after,
          "the edit and the new server are in the manifest, the token as a ref", after)
    dotenv = open(os.path.join(sb.project, ".agentstack", ".env")).read()
    check(f"LINEAR_TOKEN={LIN}" in dotenv and "DOCS_TOKEN" not in dotenv,
          "only the new secret was stored", dotenv)
    check(all(open(p).read() == t for p, t in natives.items()), "adopt never edits native files")

with Sandbox() as sb:
    for b in ("claude", "cursor"):
        H.fake_bin(sb, b)
    H.write_manifest(sb, MANIFEST)
    e = env(sb)
    H.trust(sb, e=e)
    H.run(sb, "apply", "--write", e=e)
    for rel, url in ((".mcp.json", "https://a.example/mcp"),
                     (".cursor/mcp.json", "https://b.example/mcp")):
        p = os.path.join(sb.project, rel)
        t = open(p).read()
        open(p, "w").write(t.replace("https://docs.example.com/mcp", url))
    a = H.run(sb, "adopt", e=e)
    check("! conflict: 'docs' was edited differently in Claude Code (.mcp.json) and Cursor "
          "(.cursor/mcp.json)" in a.stdout and "~ update 'docs'" not in a.stdout,
          "two different edits: a conflict, nothing adopted for it", a.stdout)
    a = H.run(sb, "adopt", "--target", "cursor", e=e)
    check("~ update 'docs'  ← Cursor (.cursor/mcp.json) — hand-edited: url" in a.stdout,
          "--target picks one", a.stdout)
    a = H.run(sb, "adopt", "--target", "cursr", e=e)
    check(a.returncode == 2 and "did you mean 'cursor'" in a.stderr, "unknown --target: exit 2",
          a.stderr)

done()
