"""Interop: the real Amp CLI (`@sourcegraph/amp`, tests/interop/pins.txt)
loads what agentstack writes, and a connect leaves it one way to each server.

Amp reads its servers from the single key "amp.mcpServers" of
{config}/amp/settings.json (global) and .amp/settings.json (workspace);
`amp mcp list` prints each server it loaded under the file it came from,
without starting any. Amp also asks its account service for servers: in the
loopback-only namespace that lookup fails with a warning and the local files
still list. In a temporary HOME (a hand-written global file to merge into)
and a trusted project with one stdio server:

1. `apply --scope global --write` and `apply --write`: `amp mcp list` shows
   the server under Global and Workspace, with our command, and the
   hand-written server is still there.
2. `connect amp --write`: Amp lists the gateway (`agentstack … mcp
   --auto-project`) and no direct copy of the server in either file (one
   delivery per server, docs/adapters.md, "Where servers go").
3. `undo --to 1 --write` returns every file as it was.

Run:  sh tests/interop/setup_clis.sh && python3 tests/interop/test_amp_cli.py
Needs AS_BIN (default build/agentstack). Skips loudly (exit 77) when the CLIs
could not be installed; Amp runs in a loopback-only namespace when root.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clislib import (ANSI, BIN, NM, CACHE, check, done, fenced_env, in_netns,  # noqa: E402
                     run, skip)

# The platform package ships the binary; the wrapper's .bin link is made by a
# postinstall script npm may not run.
AMP = os.path.join(NM, "@ampcode", "cli-linux-x64", "amp")
SEED = '{\n  // mine\n  "amp.mcpServers": {\n    "mine": {"command": "my-mcp"}\n  }\n}\n'
MANIFEST = """version = 1
[servers.notes]
type = "stdio"
command = "notes-mcp"
args = ["--ro"]
"""


def amp_list(env, proj):
    argv = [AMP, "mcp", "list"]
    p = in_netns(argv, env, proj) if os.geteuid() == 0 and shutil.which("unshare") \
        else run(argv, env, proj)
    return p, ANSI.sub("", p.stdout + p.stderr)


def section(out, title):
    """The lines amp lists under the heading that starts with title."""
    lines, on = [], False
    for ln in out.splitlines():
        if ln and not ln.startswith(" "):
            on = ln.startswith(title)
        elif on and ln.strip():
            lines.append(ln.split())
    return lines


def main():
    if not os.path.exists(os.path.join(CACHE, ".installed")) or not os.path.exists(AMP):
        skip(f"the pinned Amp CLI is not installed in {CACHE} — run tests/interop/setup_clis.sh "
             "(needs the npm registry)")
    root = tempfile.mkdtemp(prefix="as-interop-amp-")
    try:
        home, proj = os.path.join(root, "home"), os.path.join(root, "proj")
        os.makedirs(os.path.join(proj, ".agentstack"))
        gfile = os.path.join(home, ".config", "amp", "settings.json")
        os.makedirs(os.path.dirname(gfile))
        with open(gfile, "w") as f:
            f.write(SEED)
        with open(os.path.join(proj, ".agentstack", "agentstack.toml"), "w") as f:
            f.write(MANIFEST)
        env = fenced_env(home)
        env["PATH"] = os.path.dirname(AMP) + ":" + env["PATH"]  # amp is detected by its bin
        run([BIN, "lock", "--write"], env, proj)
        digest = json.loads(run([BIN, "trust", "--preview"], env, proj).stdout)["surface_digest"]
        run([BIN, "trust", "--yes", "--consented", digest], env, proj)

        g = run([BIN, "apply", "--scope", "global", "--target", "amp", "--write"], env, proj)
        w = run([BIN, "apply", "--target", "amp", "--write"], env, proj)
        check(g.returncode == 0 and w.returncode == 0, "apply at both scopes",
              g.stdout + g.stderr + w.stdout + w.stderr)
        p, out = amp_list(env, proj)
        check(p.returncode == 0, "amp mcp list accepts both files", out)
        glob, work = section(out, "Global"), section(out, "Workspace")
        check(["notes", "command", "notes-mcp", "--ro"] in glob and
              any(r[0] == "mine" for r in glob), "Global: our server beside the hand-written one",
              out)
        check(["notes", "command", "notes-mcp", "--ro"] in work, "Workspace: our server", out)

        c = run([BIN, "connect", "amp", "--write"], env, proj)
        check(c.returncode == 0 and "✓ gateway registered" in c.stdout, "connect amp --write",
              c.stdout + c.stderr)
        p, out = amp_list(env, proj)
        glob, work = section(out, "Global"), section(out, "Workspace")
        gw = next((r for r in glob if r[0] == "agentstack"), [])
        check(gw[2:] == [os.path.realpath(BIN), "mcp", "--auto-project"] or
              (gw[3:] == ["mcp", "--auto-project"] and gw[2].endswith("agentstack")),
              "amp lists the gateway with our command and args", out)
        check(not any(r[0] == "notes" for r in glob + work) and any(r[0] == "mine" for r in glob),
              "after connect: no direct copy of the server in either file, the hand one kept",
              out)

        u = run([BIN, "undo", "--to", "1", "--write"], env, proj)
        with open(gfile) as f:
            back = f.read()
        check(u.returncode == 0 and back == SEED and
              not os.path.exists(os.path.join(proj, ".amp")),
              "undo --to 1 returns every file as it was", u.stdout + u.stderr + back)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    done()


main()
