#!/bin/sh
# Confined server start: `agentstack mcp --transparent` started in a trusted
# project whose one stdio server (/usr/bin/python3 ./echo.py) it must spawn before it
# can answer tools/list — timed from the gateway's start to that answer,
# (a) with the server on the host and (b) with [policy.isolation] servers =
# "confined" (the server in a jail of its own: namespaces, the view, the
# verified snapshot of its pinned code, its own egress proxy), in the same
# run. Median of BENCH_CONFINE_N starts each (default 15), alternating, so
# load drift hits both alike. Goal: confined <= 1.5 x host + 5 ms.
# Usage: sh bench/confine_bench.sh <builddir>
set -eu
B=${1:-build}
bin=$(cd "$B" && pwd)/agentstack
here=$(cd "$(dirname "$0")" && pwd)
unshare -Ur true 2>/dev/null || { echo "user namespaces are unavailable here" >&2; exit 77; }
work=$(mktemp -d /tmp/agentstack-confinebench.XXXXXX)
trap 'rm -rf "$work"' EXIT
BIN=$bin WORK=$work N=${BENCH_CONFINE_N:-15} PYTHONPATH=$here python3 - <<'PY'
import json, os, statistics, subprocess, sys, time
from benchlib import ECHO_SERVER, env_for, row, skip

work, binp, n = os.environ["WORK"], os.environ["BIN"], int(os.environ["N"])
proj = os.path.join(work, "proj")
os.makedirs(proj)
open(os.path.join(proj, "echo.py"), "w").write(ECHO_SERVER)
# The system interpreter by its path: a version-manager shim on PATH would
# time the shim, differently inside and outside.
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"
open(os.path.join(proj, "agentstack.toml"), "w").write(
    'version = 1\n\n[servers.bench]\ntype = "stdio"\ncommand = "%s"\n' % PY +
    'args = ["./echo.py"]\n')
env = env_for(work)
def run(*a):
    return subprocess.run([binp, *a], cwd=proj, env=env, capture_output=True, text=True)
if run("lock", "--write").returncode:
    skip("confined server: first tools/list", "lock failed"); sys.exit(0)
d = json.loads(run("trust", ".", "--preview").stdout)["surface_digest"]
if run("trust", ".", "--yes", "--consented", d).returncode:
    skip("confined server: first tools/list", "trust failed"); sys.exit(0)
machine = os.path.join(env["AGENTSTACK_HOME"], "agentstack.toml")

def once():
    t0 = time.perf_counter()
    p = subprocess.Popen([binp, "mcp", "--transparent"], cwd=proj, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}).encode() + b"\n")
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
                  + b"\n")
    p.stdin.flush()
    ok = False
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == 2:
            ok = any(t.get("name") == "bench__echo"
                     for t in m.get("result", {}).get("tools", []))
            break
    dt = time.perf_counter() - t0
    p.stdin.close()
    p.wait(timeout=30)
    return dt if ok else None

host, jail = [], []
for i in range(n):
    for confined, out in ((False, host), (True, jail)):
        if confined:
            open(machine, "w").write('version = 1\n\n[policy.isolation]\nservers = "confined"\n')
        elif os.path.exists(machine):
            os.unlink(machine)
        t = once()
        if t is None:
            skip("confined server: first tools/list",
                 "the %s server did not list its tool" % ("confined" if confined else "host"))
            sys.exit(0)
        out.append(t)
h, c = statistics.median(host) * 1000, statistics.median(jail) * 1000
row("confined server: first tools/list", "%.1f ms" % c, "%.1f ms" % h, "%+.1f ms" % (c - h))
goal = 1.5 * h + 5
print("  confined %.2fx host; goal <= 1.5x + 5 ms = %.1f ms: %s (medians of %d starts each)"
      % (c / h, goal, "met" if c <= goal else "NOT met", n), file=sys.stderr)
PY
