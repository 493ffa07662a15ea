#!/bin/sh
# Gateway overhead: N sequential echo calls from one client, (a) straight to
# a minimal stdio MCP server and (b) through `agentstack mcp` in front of the
# same server, in the same run. Prints one row: µs per call through the
# gateway, µs per call direct, and the difference (what the gateway adds:
# parse, dispatch with policy, audit append, forward). Then:
#   - Ir per call: callgrind instruction counts of the gateway process for
#     20 and 220 calls, divided by the 200 in between: repeatable where wall
#     time on shared cores is not (skipped without valgrind);
#   - RSS with five upstreams: VmHWM of the gateway once a transparent
#     tools/list has started and listed five stdio servers and each was called
#     (goal <= 10 MB; the children are not counted);
#   - time to the first tools/list answer: process start to the reply of a
#     tools/list sent with initialize (compact mode, so no upstream start is
#     included; goal <= 5 ms), median of 20 starts.
# Usage:
#   sh bench/gateway_bench.sh <builddir>      (GW_BENCH_N=2000 by default)
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
n=${GW_BENCH_N:-2000}
work=$(mktemp -d /tmp/agentstack-gwbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.agentstack" "$work/proj"

cp "$here/echo_server.py" "$work/proj/echo.py"
cat > "$work/proj/agentstack.toml" <<'EOF'
version = 1

[servers.bench]
type = "stdio"
command = "python3"
args = ["./echo.py"]
EOF

mkdir -p "$work/five"
cp "$work/proj/echo.py" "$work/five/echo.py"
{
    echo "version = 1"
    for i in 1 2 3 4 5; do
        printf '\n[servers.up%s]\ntype = "stdio"\ncommand = "python3"\nargs = ["./echo.py"]\n' "$i"
    done
} > "$work/five/agentstack.toml"

HOME="$work/home" AGENTSTACK_HOME="$work/home/.agentstack" NO_COLOR=1 \
python3 - "$bin" "$work/proj" "$n" "$work/five" "$work" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
bin_, proj, n, five, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

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
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}


def line(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return (json.dumps(m) + "\n").encode()


def wait_id(p, i):
    while True:
        ln = p.stdout.readline()
        if not ln:
            raise SystemExit("bench: the gateway closed the stream")
        m = json.loads(ln)
        if m.get("id") == i:
            return m


# ---- Ir per call (callgrind): repeatable where wall time on shared cores is not ----
vg = shutil.which("valgrind")
if not vg:
    print("%-34s %s" % ("gateway Ir per call", "skipped: valgrind not installed"))
else:
    def ir(k):
        out = os.path.join(work, "cg.%d" % k)
        p = subprocess.Popen([vg, "--tool=callgrind", "--callgrind-out-file=" + out, bin_, "mcp",
                              "--manifest-dir", proj], cwd=proj, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdin.write(line(0, "initialize", INIT))
        p.stdin.flush()
        wait_id(p, 0)
        for i in range(1, k + 1):
            p.stdin.write(line(i, "tools/call", {"name": "bench__echo",
                                                 "arguments": {"message": "hello"}}))
            p.stdin.flush()
            r = wait_id(p, i)
            if r.get("result", {}).get("isError"):
                raise SystemExit("bench: call failed under callgrind: %r" % r)
        p.stdin.close()
        p.wait(300)
        with open(out) as f:
            for ln in f:
                if ln.startswith(("summary:", "totals:")):
                    return int(ln.split()[1])
        raise SystemExit("bench: no callgrind total")
    k0, k1 = 20, 220
    per = (ir(k1) - ir(k0)) / (k1 - k0)
    print("%-34s %10.0f Ir" % ("gateway Ir per call (callgrind)", per))

# ---- RSS with five upstreams (goal <= 10 MB; children not counted) ----
p = subprocess.Popen([bin_, "mcp", "--manifest-dir", five, "--transparent"], cwd=five,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
p.stdin.write(line(0, "initialize", INIT))
p.stdin.flush()
wait_id(p, 0)
p.stdin.write(line(1, "tools/list", {}))
p.stdin.flush()
listed = [t["name"] for t in wait_id(p, 1)["result"]["tools"] if "__" in t["name"]]
for k in range(1, 6):
    p.stdin.write(line(1 + k, "tools/call", {"name": "up%d__echo" % k,
                                             "arguments": {"message": "hi"}}))
    p.stdin.flush()
    wait_id(p, 1 + k)
hwm = rss = 0
with open("/proc/%d/status" % p.pid) as f:
    for ln in f:
        if ln.startswith("VmHWM:"):
            hwm = int(ln.split()[1])
        elif ln.startswith("VmRSS:"):
            rss = int(ln.split()[1])
p.stdin.close()
p.wait(30)
if len(listed) != 5:
    raise SystemExit("bench: expected 5 upstream tools listed, got %r" % listed)
print("%-34s %10.1f MB %10.1f MB   (peak, now)" % ("gateway RSS, five upstreams",
                                                   hwm / 1024, rss / 1024))

# ---- time to the first tools/list answer (goal <= 5 ms, no upstream start) ----
times = []
for _ in range(20):
    t = time.perf_counter()
    p = subprocess.Popen([bin_, "mcp", "--manifest-dir", proj], cwd=proj,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(line(0, "initialize", INIT) + line(1, "tools/list", {}))
    p.stdin.flush()
    wait_id(p, 1)
    times.append(time.perf_counter() - t)
    p.stdin.close()
    p.wait(30)
print("%-34s %10.2f ms   (median of 20; min %.2f ms)" % ("first tools/list answer",
                                                      statistics.median(times) * 1e3,
                                                      min(times) * 1e3))
PY
