"""Interop: after `agentstack connect --write`, each real coding CLI lists our
gateway — and, for those that start their servers while listing (all but
Codex), completes the MCP handshake with `agentstack mcp --auto-project`.

For each pinned CLI (tests/interop/pins.txt): a temporary HOME holding a small
hand-written config, a trusted project declaring one real stdio upstream
(@modelcontextprotocol/server-everything), `connect --target <cli> --write`,
then the CLI's own `mcp list` from the project directory inside a
loopback-only network namespace: `agentstack` must be listed as connected
(Codex: `mcp list --json` accepts the file and shows our command and args).
A second connect must change nothing; `restore --last --write` must return
the config byte for byte.

Run:  sh tests/interop/setup_clis.sh && python3 tests/interop/test_connect_clis.py
Needs root (for `unshare -n`) and AS_BIN (default build/agentstack).
Skips loudly (exit 77) when the CLIs could not be installed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clislib import (ANSI, BIN, EVERYTHING, NODE22, check, codex_servers, done,  # noqa: E402
                     each_cli, in_netns, listed_connected, require_clis, run)

MANIFEST = f"""version = 1
[servers.everything]
type = "stdio"
command = "{NODE22}"
args = ["{EVERYTHING}", "stdio"]
"""


def connect_and_list(adapter, argv, kind, env, proj, cfg):
    cn = run([BIN, "connect", "--target", adapter, "--write"], env, proj)
    check(cn.returncode == 0 and "✓ gateway registered" in cn.stdout,
          f"{adapter}: connect --write", cn.stdout + cn.stderr)
    with open(cfg) as f:
        written = f.read()
    again = run([BIN, "connect", "--target", adapter, "--write"], env, proj)
    with open(cfg) as f:
        check("✓ already connected" in again.stdout and f.read() == written,
              f"{adapter}: a second connect changes nothing", again.stdout)
    lst = in_netns(argv, env, proj)
    out = ANSI.sub("", lst.stdout + lst.stderr)
    if kind == "codex":
        check(lst.returncode == 0, "codex: mcp list --json accepts the config", out)
        gw = json.dumps(codex_servers(lst.stdout).get("agentstack", {}))
        check(os.path.realpath(BIN) in gw and "--auto-project" in gw,
              "codex: lists agentstack with our command and args", out)
    elif kind == "pi":
        check("agentstack" in out and lst.returncode == 0,
              "pi: agentstack listed and connected (exit 0)", out)
    else:
        check(listed_connected(out, "agentstack"), f"{adapter}: agentstack listed as connected",
              out)
    return written


def main():
    require_clis()
    each_cli(MANIFEST, connect_and_list)
    done()


if __name__ == "__main__":
    main()
