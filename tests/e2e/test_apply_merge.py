"""apply against real-world-shaped user files: only our entries change
(JSONC included), pruning, malformed / read-only / symlinked
targets, secrets, skips,
concurrency and a 10 MB file."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

DOCS_ONLY = """version = 1
[delivery]
render_locally = true
[servers.docs]
type = "http"
url = "https://docs.example.test/mcp"
headers = { "X-Api-Key" = "${DOCS_KEY}" }
"""


def setup(sb, manifest=H.SPEC_MANIFEST, files=None):
    for rel, text in (files or {}).items():
        sb.write(rel, text)
    H.write_manifest(sb, manifest)
    H.trust(sb)


def apply(sb, *args, e=None):
    return H.run(sb, "apply", "--scope", "global", *args, e=e)


# ~/.claude.json is app-owned; only the section value may change.
with Sandbox() as sb:
    setup(sb, DOCS_ONLY)
    cpath = os.path.join(sb.home, ".claude.json")
    pre = '{\n  "numStartups": 12,\n  "tipsHistory": {"x": 0.9402052562189797},\n  "mcpServers": '
    post = ',\n  "projects": {"/p": {"allowedTools": []}}\n}'
    with open(cpath, "w") as f:
        f.write(pre + '{\n    "mine": {"command": "my-mcp", "args": []}\n  }' + post)
    p = apply(sb, "--target", "claude-code", "--write")
    got = H.read(cpath)
    check(p.returncode == 0, "apply onto ~/.claude.json", p.stdout + p.stderr)
    check(got.startswith(pre) and got.endswith(post), "bytes outside the section are identical",
          got)
    check('"mine": {"command": "my-mcp", "args": []},\n    "docs": {' in got,
          "mine keeps its slot and bytes, docs follows", got)
    check("0.9402052562189797" in got, "float spelling kept")

# Comments survive in codex TOML and VS Code / OpenCode JSONC.
with Sandbox() as sb:
    setup(sb, DOCS_ONLY + '[servers.figma]\ntype = "stdio"\ncommand = "npx"\n'
               'args = ["figma-mcp"]\n')
    codex = os.path.join(sb.home, ".codex", "config.toml")
    os.makedirs(os.path.dirname(codex))
    ctext = ('# my codex config\nmodel = "gpt-5"  # pinned\n\n[projects."/p"]\n'
             'trust_level = "trusted"\n\n# figma: design tokens\n[mcp_servers.figma]\n'
             'command = "old"\n\n# [mcp_servers.disabled]\n# command = "x"\n')
    with open(codex, "w") as f:
        f.write(ctext)
    vsc = os.path.join(sb.home, ".config", "Code", "User", "mcp.json")
    os.makedirs(os.path.dirname(vsc))
    vtext = ('// my VS Code servers\n{\n  "servers": {\n    // hand-written\n'
             '    "mine": { "command": "x", }, // keep me\n  },\n  "inputs": [],\n}\n')
    with open(vsc, "w") as f:
        f.write(vtext)
    p = apply(sb, "--target", "codex", "--target", "vscode", "--write")
    check(p.returncode == 0, "apply onto commented codex + JSONC vscode", p.stdout + p.stderr)
    got = H.read(codex)
    head = ctext[:ctext.index("[mcp_servers.figma]")]
    check(got.startswith(head), "codex: everything before figma is byte-identical", got)
    check('[mcp_servers.figma]\ncommand = "npx"\nargs = ["figma-mcp"]\n' in got,
          "codex: figma updated in its place", got)
    check("# [mcp_servers.disabled]\n# command = \"x\"\n" in got, "codex: comments kept", got)
    check("[mcp_servers.docs]" in got and "\n[mcp_servers]\n" not in got,
          "codex: docs added, no bare [mcp_servers] header", got)
    vgot = H.read(vsc)
    check(vgot.startswith('// my VS Code servers\n{\n  "servers": {\n    // hand-written\n'
                          '    "mine": { "command": "x", }, // keep me\n'),
          "vscode: comments and trailing commas kept", vgot)
    check('"docs": {\n      "type": "http"' in vgot and '"inputs": [],\n}\n' in vgot,
          "vscode: docs added, the rest untouched", vgot)
    again = apply(sb, "--target", "codex", "--target", "vscode", "--write")
    check("2 targets already in sync — nothing to change." in again.stdout,
          "commented files: second run is a no-op", again.stdout)

# Dropping a server prunes only it; a hand entry stays.
with Sandbox() as sb:
    setup(sb)
    cpath = os.path.join(sb.home, ".claude.json")
    with open(cpath, "w") as f:
        f.write('{"mcpServers": {"hand": {"command": "h"}}}\n')
    apply(sb, "--target", "claude-code", "--write")
    H.write_manifest(sb, DOCS_ONLY)
    H.trust(sb)
    d = apply(sb, "--target", "claude-code")
    check("− would REMOVE 'notes' from ~/.claude.json (no longer in manifest)" in d.stdout,
          "dry run announces the removal", d.stdout)
    check("REMOVING 1 server entry" in d.stdout, "dry run closing counts removals", d.stdout)
    w = apply(sb, "--target", "claude-code", "--write")
    check("− pruning 'notes' (no longer in manifest)" in w.stdout, "write prunes", w.stdout)
    doc = json.loads(H.read(cpath))
    check(sorted(doc["mcpServers"]) == ["docs", "hand"], "only notes was removed", doc)

# A malformed file fails its target only; the others are written.
with Sandbox() as sb:
    setup(sb)
    bad = '{"mcpServers": {"x": 1,}}\n'
    cpath = os.path.join(sb.home, ".claude.json")
    with open(cpath, "w") as f:
        f.write(bad)
    codex = os.path.join(sb.home, ".codex", "config.toml")
    os.makedirs(os.path.dirname(codex))
    badt = 'model = "m"\n[mcp_servers.a\n'
    with open(codex, "w") as f:
        f.write(badt)
    p = apply(sb, "--target", "claude-code", "--target", "codex", "--target", "cursor",
              "--write")
    out = p.stdout + p.stderr
    check(p.returncode == 1, "malformed targets → exit 1", out)
    check("existing config is not valid JSON" in out and ".claude.json:1:" in out,
          "JSON error names the file and position", out)
    check("existing config is not valid TOML" in out, "TOML error spoken", out)
    check(H.read(cpath) == bad and H.read(codex) == badt, "malformed files byte-identical")
    check(H.read(os.path.join(sb.home, ".cursor/mcp.json")) == H.golden("cursor"),
          "the healthy target was still written")
    check("write failed on 2 target(s): claude-code, codex" in out, "failure summary", out)

# A read-only ~/.codex directory; a 0444 file.
if True:
    with Sandbox() as sb:
        setup(sb)
        os.makedirs(os.path.join(sb.home, ".codex"))
        os.chmod(os.path.join(sb.home, ".codex"), 0o555)
        ro = os.path.join(sb.home, ".cursor", "mcp.json")
        os.makedirs(os.path.dirname(ro))
        with open(ro, "w") as f:
            f.write("{}\n")
        os.chmod(ro, 0o444)
        p = apply(sb, "--target", "claude-code", "--target", "codex", "--target", "cursor",
                  "--write")
        out = p.stdout + p.stderr
        check(p.returncode == 1, "read-only targets → exit 1", out)
        check("is read-only — not written" in out, "0444 file refused with the phrase", out)
        check(H.read(ro) == "{}\n", "0444 file untouched")
        check(H.read(os.path.join(sb.home, ".claude.json")) == H.golden("claude-code"),
              "claude still written")
        check(not os.path.exists(os.path.join(sb.home, ".codex", "config.toml")),
              "codex not written into a read-only dir (even as root)")
        check("write failed on 2 target(s): codex, cursor" in out, "failure summary", out)
        lst = H.run(sb, "restore", "--last")
        check(".claude.json" in lst.stdout and "mcp.json" not in lst.stdout,
              "history records only what was written", lst.stdout)
        os.chmod(os.path.join(sb.home, ".codex"), 0o755)

# Symlinks.
with Sandbox() as sb:
    setup(sb)
    real = os.path.join(sb.root, "dotfiles", "claude.json")
    os.makedirs(os.path.dirname(real))
    with open(real, "w") as f:
        f.write("{}\n")
    link = os.path.join(sb.home, ".claude.json")
    os.symlink(real, link)
    p = apply(sb, "--target", "claude-code", "--write")
    check(p.returncode == 0, "user scope: symlinked config written", p.stdout + p.stderr)
    check(os.path.islink(link) and os.readlink(link) == real, "still a symlink afterwards")
    check(H.read(real) == H.golden("claude-code"), "its target was updated")

    # Project scope: a link leaving the project is refused; one inside is followed.
    outside = os.path.join(sb.root, "outside.json")
    with open(outside, "w") as f:
        f.write("{}\n")
    os.symlink(outside, os.path.join(sb.project, ".mcp.json"))
    inside = os.path.join(sb.project, "cfg", "cursor.json")
    os.makedirs(os.path.dirname(inside))
    with open(inside, "w") as f:
        f.write("{}\n")
    os.makedirs(os.path.join(sb.project, ".cursor"))
    os.symlink(inside, os.path.join(sb.project, ".cursor", "mcp.json"))
    evil_dir = os.path.join(sb.root, "evil")
    os.makedirs(evil_dir)
    os.symlink(evil_dir, os.path.join(sb.project, ".kiro"))
    p = H.run(sb, "apply", "--target", "claude-code", "--target", "cursor", "--target", "kiro",
              "--write")
    out = p.stdout + p.stderr
    check(p.returncode == 1, "project scope: escaping symlinks fail their targets", out)
    check("outside the project" in out, "the refusal says why", out)
    check(H.read(outside) == "{}\n", "the file outside the project is untouched")
    check(os.listdir(evil_dir) == [], "nothing created through a symlinked parent dir")
    check('"docs"' in H.read(inside), "a symlink staying inside the project is followed")

# Unresolved secrets block; --allow-unresolved leaves the entry out.
with Sandbox() as sb:
    setup(sb, H.SPEC_MANIFEST + '[servers.kibana]\ntype = "http"\nurl = "https://k.test"\n'
              'headers = { Authorization = "Bearer ${NOPE_TOKEN}" }\n')
    e = H.env(sb)
    p = apply(sb, "--target", "claude-code", "--target", "cursor", "--write", e=e)
    out = p.stdout + p.stderr
    check(p.returncode == 1, "unresolved secret → exit 1", out)
    check("✗ unresolved secret NOPE_TOKEN (server 'kibana') ↳ agentstack secret set NOPE_TOKEN"
          in out, "the unresolved line", out)
    check("✗ not written — unresolved secrets; set them or pass --allow-unresolved" in out,
          "the not-written line", out)
    check("Wrote 0 of 2 targets; 2 blocked" in out, "blocked summary prefix", out)
    check("error: 2 blocked writes on 2 targets — fix: agentstack secret set NAME (or pass "
          "--allow-unresolved)" in out, "blocked error line", out)
    check(not os.path.exists(os.path.join(sb.home, ".claude.json")), "no file written")
    p = apply(sb, "--target", "claude-code", "--write", "--allow-unresolved", e=e)
    check(p.returncode == 0, "--allow-unresolved writes", p.stdout + p.stderr)
    got = H.read(os.path.join(sb.home, ".claude.json"))
    check("kibana" not in got and "${" not in got and '"docs"' in got,
          "the unresolved entry is left out; no ${NAME} reaches the file", got)
    check("leaving out 'kibana'" in p.stdout, "and it is named", p.stdout)

# Names, transports, cwd.
with Sandbox() as sb:
    setup(sb, """version = 1
[delivery]
render_locally = true
[servers."slash/probe"]
type = "stdio"
command = "echo"
args = ["conformance"]
[servers.w]
type = "stdio"
command = "srv"
cwd = "srv/a b"
""", files={"srv/a b/.keep": ""})
    p = apply(sb, "--target", "codex", "--target", "claude-code", "--target", "kiro",
              "--target", "cursor", "--write")
    check("↳ skipping 'slash/probe' — Codex CLI rejects this server name at startup (letters, "
          "digits, '_' and '-' only) — rename the server in the manifest" in p.stdout,
          "codex skip line, exact", p.stdout)
    check('"slash/probe"' in H.read(os.path.join(sb.home, ".claude.json")),
          "the same name is kept verbatim elsewhere")
    kiro = json.loads(H.read(os.path.join(sb.home, ".kiro/settings/mcp.json")))
    # (a repository's cwd stays inside the project: relative, rendered from its root)
    root = os.path.realpath(sb.project)
    check(kiro["mcpServers"]["w"] == {"command": "sh",
                                      "args": ["-c", "cd '%s/srv/a b' && exec 'srv'" % root]},
          "kiro gets the sh -c wrapper", kiro)
    cur = json.loads(H.read(os.path.join(sb.home, ".cursor/mcp.json")))
    check(cur["mcpServers"]["w"] == {"command": "srv", "cwd": "srv/a b"},
          "cursor gets a native cwd", cur)

# Two concurrent writers end in one complete merge.
with Sandbox() as sb:
    setup(sb)
    e = H.env(sb)
    from aslib import BIN
    procs = [subprocess.Popen([BIN, "apply", "--scope", "global", "--write"], cwd=sb.project,
                              env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [pr.communicate(timeout=120) for pr in procs]
    codes = [pr.returncode for pr in procs]
    check(all(c == 0 for c in codes) or
          any("another agentstack write is in progress" in o[1] for o in outs),
          "concurrent applies serialize (or one names the lock)", outs)
    check(H.read(os.path.join(sb.home, ".claude.json")) == H.golden("claude-code"),
          "the final file is one complete merge")
    try:
        state = json.loads(H.read(os.path.join(sb.ah, "state.json")))
    except ValueError as e:
        state = e
    check(isinstance(state, dict), "state.json parses after the concurrent applies", state)

# A 10 MB ~/.claude.json: unrelated bytes kept.
with Sandbox() as sb:
    setup(sb, DOCS_ONLY)
    cpath = os.path.join(sb.home, ".claude.json")
    parts = ['{\n  "projects": {\n']
    for i in range(220000):
        parts.append(f'    "/p/{i}": {{"history": ["x {i}", 1.50], "n": {i}}},\n')
    parts.append('    "last": {}\n  }\n}\n')
    big = "".join(parts)
    with open(cpath, "w") as f:
        f.write(big)
    p = apply(sb, "--target", "claude-code", "--write")
    got = H.read(cpath)
    check(p.returncode == 0 and len(big) > 10_000_000, "10 MB config applied",
          p.stdout[-300:] + p.stderr)
    check(got.startswith('{\n  "mcpServers": {\n    "docs": {') and got.endswith(big[1:]),
          "section inserted after '{', the 10 MB that follow are identical")

# A changed (re-gated) project delivers nothing new, but prunes still happen.
with Sandbox() as sb:
    setup(sb)
    apply(sb, "--target", "claude-code", "--write")
    H.write_manifest(sb, DOCS_ONLY + '[servers.extra]\ntype = "stdio"\ncommand = "x"\n')
    p = apply(sb, "--target", "claude-code", "--write")
    out = p.stdout + p.stderr
    check(p.returncode == 1, "changed project: exit 1", out)
    check("refusing to render MCP servers: project at" in out and
          "changed since it was trusted" in out, "changed project: refusal spoken", out)
    doc = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
    check(sorted(doc["mcpServers"]) == ["docs"], "notes pruned, extra not delivered", doc)

done()
