"""Interop: the real GitHub Copilot CLI loads what `agentstack apply` writes,
at both scopes.

The pinned `copilot` (tests/interop/pins.txt) parses MCP configs itself: its
`copilot mcp list --json` prints every server it loaded with the source it
came from, without starting any and without logging in. In a temporary HOME
(a hand-written ~/.copilot/mcp-config.json to merge into) and a trusted
project with one stdio and one http server:

1. `apply --scope global --write` → ~/.copilot/mcp-config.json: both servers
   load as source "user", with the transport, command, args, url, env and the
   "tools" allowlist we wrote (["*"]); the hand-written server is still there.
2. `apply --scope project --write` → <root>/.github/mcp.json: in a folder
   the user trusted in Copilot (its config.json), both servers load as
   source "workspace" — the project file Copilot now reads.
3. `restore --last --write` returns each file as it was.

Run:  sh tests/interop/setup_clis.sh && python3 tests/interop/test_copilot_cli.py
Needs AS_BIN (default build/agentstack). Skips loudly (exit 77) when the CLIs
could not be installed; the CLI runs in a loopback-only namespace when root.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clislib import (BIN, NM, check, done, fenced_env, in_netns, run,  # noqa: E402
                     skip, CACHE)

COPILOT = os.path.join(NM, ".bin", "copilot")
SEED = '{\n  "mcpServers": {\n    "mine": {\n      "type": "local",\n      "command": "my-mcp",\n' \
       '      "tools": ["read_thing"]\n    }\n  }\n}\n'

MANIFEST = """version = 1
[delivery]
render_locally = true
[servers.notes]
type = "stdio"
command = "uvx"
args = ["notes-mcp", "--ro"]
env = { NOTES_TOKEN = "t1" }
[servers.web]
type = "http"
url = "http://127.0.0.1:38419/mcp"
headers = { "X-Api-Key" = "k1" }
"""


def copilot_list(env, proj):
    argv = [COPILOT, "mcp", "list", "--json"]
    p = in_netns(argv, env, proj) if os.geteuid() == 0 and shutil.which("unshare") \
        else run(argv, env, proj)
    try:
        return p, json.loads(p.stdout[p.stdout.index("{"):]).get("mcpServers", {})
    except (ValueError, AttributeError):
        return p, {}


def check_servers(servers, source, out):
    notes, web = servers.get("notes", {}), servers.get("web", {})
    check(notes.get("source") == source and web.get("source") == source,
          f"copilot loads both servers from the {source} file", out)
    check(notes.get("type") == "local" and notes.get("command") == "uvx" and
          notes.get("args") == ["notes-mcp", "--ro"] and notes.get("env") == {"NOTES_TOKEN": "t1"},
          f"{source}: the stdio server as written (type local, command, args, env)", out)
    check(web.get("type") == "http" and web.get("url") == "http://127.0.0.1:38419/mcp" and
          web.get("headers") == {"X-Api-Key": "k1"},
          f"{source}: the http server as written (type http, url, headers)", out)
    check(notes.get("tools") == ["*"] and web.get("tools") == ["*"],
          f"{source}: each entry carries the tools allowlist ['*']", out)


def main():
    if not os.path.exists(os.path.join(CACHE, ".installed")) or not os.path.exists(COPILOT):
        skip(f"the pinned Copilot CLI is not installed in {CACHE} — run "
             "tests/interop/setup_clis.sh (needs the npm registry)")
    root = tempfile.mkdtemp(prefix="as-interop-copilot-")
    try:
        home, proj = os.path.join(root, "home"), os.path.join(root, "proj")
        os.makedirs(os.path.join(proj, ".agentstack"))
        os.makedirs(os.path.join(home, ".copilot"))
        with open(os.path.join(proj, ".agentstack", "agentstack.toml"), "w") as f:
            f.write(MANIFEST)
        cfg = os.path.join(home, ".copilot", "mcp-config.json")
        with open(cfg, "w") as f:
            f.write(SEED)
        env = {k: v for k, v in fenced_env(home).items() if not k.startswith("COPILOT_")}
        prev = run([BIN, "trust", "--preview"], env, proj)
        digest = json.loads(prev.stdout)["surface_digest"]
        run([BIN, "trust", "--yes", "--consented", digest], env, proj)

        # 1. user scope
        ap = run([BIN, "apply", "--scope", "global", "--target", "copilot-cli", "--write"], env,
                 proj)
        check(ap.returncode == 0, "apply --scope global --write (copilot-cli)", ap.stdout + ap.stderr)
        p, servers = copilot_list(env, proj)
        out = p.stdout + p.stderr
        check(p.returncode == 0, "copilot mcp list --json accepts ~/.copilot/mcp-config.json", out)
        check_servers(servers, "user", out)
        mine = servers.get("mine", {})
        check(mine.get("command") == "my-mcp" and mine.get("tools") == ["read_thing"],
              "the hand-written server and its narrower tools list are kept", out)

        # 2. project scope, in a folder trusted in Copilot
        with open(os.path.join(home, ".copilot", "config.json"), "w") as f:
            json.dump({"trusted_folders": [proj]}, f)
        ap = run([BIN, "apply", "--scope", "project", "--target", "copilot-cli", "--write"], env,
                 proj)
        pfile = os.path.join(proj, ".github", "mcp.json")
        check(ap.returncode == 0 and os.path.exists(pfile),
              "apply --scope project --write writes .github/mcp.json", ap.stdout + ap.stderr)
        p, servers = copilot_list(env, proj)
        out = p.stdout + p.stderr
        check(p.returncode == 0, "copilot mcp list --json accepts .github/mcp.json", out)
        check_servers(servers, "workspace", out)

        # 3. undo both writes
        for _ in range(2):
            rs = run([BIN, "restore", "--last", "--write"], env, proj)
            check(rs.returncode == 0, "restore --last --write", rs.stdout + rs.stderr)
        with open(cfg) as f:
            check(f.read() == SEED, "~/.copilot/mcp-config.json is back byte for byte")
        check(not os.path.exists(pfile), "the project file the write created is gone")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
