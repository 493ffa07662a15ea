#!/bin/sh
# Scale: 200 upstream stdio servers × 50 tools each (10,000 tools) behind one
# gateway, every row beside a baseline from the same run:
#   - the first transparent tools/list (upstreams started, initialized and
#     listed, the 10,000 tools policy-filtered and namespaced) vs a client
#     that starts the same 200 servers itself and lists each directly
#     (goal: <= 50 ms for the gateway's listing);
#   - a second tools/list (upstreams up) vs the direct client listing again;
#   - the p50 of an echo call with the 200 × 50 loaded vs the same gateway in
#     front of one server (goal: per-call overhead unchanged within noise);
#   - a resources/read of a 1 MiB text resource through the gateway vs the
#     same read straight from the upstream (MiB/s, median of 20 reads).
# The upstream is bench/many_tools_server (C, starts in about a millisecond),
# so the rows measure listing and routing, not an interpreter's start.
# Usage: sh bench/scale_bench.sh <builddir>   (SCALE_SERVERS, SCALE_TOOLS,
# SCALE_ROUNDS override 200, 50, 5)
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
up=$(cd "$B" && pwd)/many_tools_server
if [ ! -x "$up" ]; then
    echo "scale: $up not built" >&2
    exit 77
fi
tmp=$(mktemp -d /tmp/as-bench-scale-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
PYTHONPATH=$here python3 -B - "$bin" "$up" "$tmp" "${SCALE_SERVERS:-200}" "${SCALE_TOOLS:-50}" \
    "${SCALE_ROUNDS:-5}" <<'PY'
import json, os, selectors, statistics, subprocess, sys, time
from benchlib import env_for, row

binpath, up, root, S, T, rounds = sys.argv[1:4] + [int(x) for x in sys.argv[4:7]]
env = env_for(root)
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}


def frame(i, method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if i is not None:
        m["id"] = i
    if params is not None:
        m["params"] = params
    return (json.dumps(m) + "\n").encode()


def project(name, n, extra=""):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "agentstack.toml"), "w") as f:
        f.write("version = 1\n")
        for k in range(n):
            f.write(f'\n[servers.s{k}]\ntype = "stdio"\ncommand = "{up}"\n'
                    f'args = ["{T}"{extra}]\n')
    return d


MIB = 1 << 20
many, one = project("many", S), project("one", 1)
big = project("big", 1, ', "%d"' % MIB)


class Gateway:
    def __init__(self, d):
        self.p = subprocess.Popen([binpath, "mcp", "--manifest-dir", d, "--transparent"], cwd=d,
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.rpc(0, "initialize", INIT)
        self.p.stdin.write(frame(None, "notifications/initialized"))

    def rpc(self, i, method, params=None):
        self.p.stdin.write(frame(i, method, params))
        self.p.stdin.flush()
        while True:
            ln = self.p.stdout.readline()
            if not ln:
                raise SystemExit("bench: the gateway closed the stream")
            m = json.loads(ln)
            if m.get("id") == i:
                return m

    def close(self):
        self.p.stdin.close()
        self.p.wait(60)


def gateway_lists(d):
    g = Gateway(d)
    t = time.perf_counter()
    r = g.rpc(1, "tools/list", {})
    first = time.perf_counter() - t
    tools = [x["name"] for x in r["result"]["tools"] if "__" in x["name"]]
    t = time.perf_counter()
    g.rpc(2, "tools/list", {})
    again = time.perf_counter() - t
    g.close()
    if len(tools) != S * T:
        raise SystemExit("bench: the gateway listed %d tools, not %d (%.0f ms: upstreams past "
                         "the discovery deadline?)" % (len(tools), S * T, first * 1e3))
    return first, again


def direct_lists():
    """The client does the fan-out itself: starts every server, initializes
    and lists each, all in flight at once (as the gateway does)."""
    t = time.perf_counter()
    ps = [subprocess.Popen([up, str(T)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL) for _ in range(S)]

    def round_trip(msgs, want):
        for p in ps:
            p.stdin.write(msgs)
            p.stdin.flush()
        sel = selectors.DefaultSelector()
        for p in ps:
            sel.register(p.stdout, selectors.EVENT_READ, p)
        left, count = len(ps), 0
        while left:
            for key, _ in sel.select():
                m = json.loads(key.fileobj.readline())
                if m.get("id") == want:
                    count += len(m["result"].get("tools", []))
                    sel.unregister(key.fileobj)
                    left -= 1
        return count

    round_trip(frame(0, "initialize", INIT) + frame(None, "notifications/initialized"), 0)
    n = round_trip(frame(1, "tools/list", {}), 1)
    first = time.perf_counter() - t
    t = time.perf_counter()
    round_trip(frame(2, "tools/list", {}), 2)
    again = time.perf_counter() - t
    for p in ps:
        p.stdin.close()
    for p in ps:
        p.wait(30)
    if n != S * T:
        raise SystemExit("bench: direct listing saw %d tools, not %d" % (n, S * T))
    return first, again


def call_p50(d, server, n=500):
    g = Gateway(d)
    g.rpc(1, "tools/list", {})
    args = {"name": server + "__t0", "arguments": {"message": "hi"}}
    for i in range(50):
        g.rpc(10 + i, "tools/call", args)
    xs = []
    for i in range(n):
        t = time.perf_counter()
        r = g.rpc(100 + i, "tools/call", args)
        xs.append(time.perf_counter() - t)
        if "result" not in r or r["result"].get("isError"):
            raise SystemExit("bench: call failed: %r" % r)
    g.close()
    return statistics.median(xs)


gf, ga, df, da = [], [], [], []
for _ in range(rounds):  # interleaved: gateway, then direct, each round
    a, b = gateway_lists(many)
    gf.append(a), ga.append(b)
    a, b = direct_lists()
    df.append(a), da.append(b)
med = statistics.median
ms = lambda x: "%.2fms" % (x * 1e3)
label = "%dx%d" % (S, T)
row("tools/list %s first vs direct" % label, ms(med(gf)), ms(med(df)), "%.2fx" % (med(gf) / med(df)))
row("tools/list %s again vs direct" % label, ms(med(ga)), ms(med(da)), "%.2fx" % (med(ga) / med(da)))
print("  (medians of %d interleaved rounds; first = start %d upstreams + initialize + list; "
      "goal first listing <= 50 ms: %s at %s)" % (rounds, S, "met" if med(gf) <= 0.050 else
                                                  "NOT met", ms(med(gf))),
      file=sys.stderr, flush=True)
cm, c1 = [], []
for _ in range(3):
    cm.append(call_p50(many, "s%d" % (S - 1)))
    c1.append(call_p50(one, "s0"))
us = lambda x: "%.0fus" % (x * 1e6)
row("echo call p50, %s loaded vs 1" % label, us(med(cm)), us(med(c1)),
    "%+.0fus" % ((med(cm) - med(c1)) * 1e6))
print("  (rounds p50: %s loaded %s, one server %s)" % (label, [us(x) for x in cm],
                                                       [us(x) for x in c1]),
      file=sys.stderr, flush=True)
def read_mib_s(rpc, uri, n=20):
    xs = []
    for i in range(n):
        t = time.perf_counter()
        r = rpc(1000 + i, "resources/read", {"uri": uri})
        xs.append(time.perf_counter() - t)
        text = r.get("result", {}).get("contents", [{}])[0].get("text", "")
        if len(text) != MIB:
            raise SystemExit("bench: resources/read returned %d bytes, not %d: %r"
                             % (len(text), MIB, str(r)[:200]))
    return 1 / statistics.median(xs)


# A 1 MiB resource's answer is a little over the default 1 MiB result cap
# ([gateway] max_result_bytes, docs/gateway.md): the machine raises it.
os.makedirs(env["AGENTSTACK_HOME"], exist_ok=True)
with open(os.path.join(env["AGENTSTACK_HOME"], "agentstack.toml"), "w") as f:
    f.write("version = 1\n\n[gateway]\nmax_result_bytes = %d\n" % (2 * MIB))
g = Gateway(big)
lst = g.rpc(1, "resources/list", {})
uris = [x["uri"] for x in lst.get("result", {}).get("resources", [])]
if len(uris) != 1:
    raise SystemExit("bench: the gateway listed %r, not one resource" % lst)
via = read_mib_s(g.rpc, uris[0])
g.close()
p = subprocess.Popen([up, str(T), str(MIB)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)


def direct_rpc(i, method, params=None):
    p.stdin.write(frame(i, method, params))
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m


direct_rpc(0, "initialize", INIT)
p.stdin.write(frame(None, "notifications/initialized"))
straight = read_mib_s(direct_rpc, "mem://big")
p.stdin.close()
p.wait(30)
row("resources/read 1 MiB vs direct", "%.0fMiB/s" % via, "%.0fMiB/s" % straight,
    "%.2fx" % (via / straight))
PY
