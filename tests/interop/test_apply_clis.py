"""Interop: the real coding CLIs read what `agentstack apply` writes.

For each pinned CLI (tests/interop/pins.txt): a temporary HOME holding a small
hand-written config, a trusted project with one stdio and one http server
(both a real upstream, @modelcontextprotocol/server-everything), `apply
--scope global --write`, then the CLI's own `mcp list` inside a
loopback-only network namespace must show both servers (connected, for the
CLIs that start them). `restore --last --write` must return the CLI's config
file byte for byte.

Run:  sh tests/interop/setup_clis.sh && python3 tests/interop/test_apply_clis.py
Needs root (for `unshare -n`) and AS_BIN (default build/agentstack).
Skips loudly (exit 77) when the CLIs could not be installed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clislib import (ANSI, BIN, EVERYTHING, NODE22, check, codex_servers, done,  # noqa: E402
                     each_cli, in_netns_upstream, listed_connected, require_clis, run)

PORT = 38417

MANIFEST = f"""version = 1
[delivery]
render_locally = true
[servers.everything]
type = "stdio"
command = "{NODE22}"
args = ["{EVERYTHING}", "stdio"]
[servers.web]
type = "http"
url = "http://127.0.0.1:{PORT}/mcp"
"""


def apply_and_list(adapter, argv, kind, env, proj, cfg):
    ap = run([BIN, "apply", "--scope", "global", "--target", adapter, "--write"], env, proj)
    check(ap.returncode == 0, f"{adapter}: apply --write", ap.stdout + ap.stderr)
    with open(cfg) as f:
        written = f.read()
    lst = in_netns_upstream(argv, env, proj, PORT)
    out = ANSI.sub("", lst.stdout + lst.stderr)
    if kind == "codex":
        check(lst.returncode == 0, "codex: mcp list --json accepts the config", out)
        servers = codex_servers(lst.stdout)
        ev = json.dumps(servers.get("everything", {}))
        web = json.dumps(servers.get("web", {}))
        check(EVERYTHING in ev and NODE22 in ev, "codex: stdio server with its command", out)
        check(f"127.0.0.1:{PORT}/mcp" in web, "codex: http server with its url", out)
    elif kind == "pi":
        check("everything" in out and "web" in out, "pi: both servers listed", out)
        check(lst.returncode == 0, "pi: every server connected (exit 0)", out)
    else:
        for name in ("everything", "web"):
            check(listed_connected(out, name), f"{adapter}: '{name}' listed as connected", out)
    return written


def main():
    require_clis()
    each_cli(MANIFEST, apply_and_list)
    done()


if __name__ == "__main__":
    main()
