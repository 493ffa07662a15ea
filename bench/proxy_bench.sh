#!/bin/sh
# The egress proxy: a 256 MiB download and upload through a CONNECT tunnel vs
# a direct loopback connection and vs two bare relays (splice, copy), the CPU
# each path costs per GiB, tunnel setup latency vs a direct connect, and
# strace -c on the proxy process: how many reads and writes move the bytes
# (the relay copies through a growing buffer per direction).
# Usage: bench/proxy_bench.sh <builddir>   (needs <builddir>/proxy_bench)
set -eu
B=${1:-build}
pb=$(cd "$B" && pwd)/proxy_bench
mib=${PROXY_BENCH_MIB:-256}
setups=${PROXY_BENCH_SETUPS:-500}
skip() { printf '%-34s skipped: %s\n' "$1" "$2"; }
if [ ! -x "$pb" ]; then
    skip "proxy (all rows)" "$B/proxy_bench not built (needs the sandbox module)"
    exit 0
fi
tmp=$(mktemp -d /tmp/as-bench-proxy-XXXXXX)
spid=""
cleanup() {
    exec 3>&- 2>/dev/null || true
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# start_proxy <dir> [wrapper…]: the proxy in its own process, fed by a FIFO
# whose EOF stops it; sets $port.
start_proxy() {
    d=$1
    shift
    mkfifo "$d.in"
    "$@" "$pb" serve "$d" <"$d.in" >"$d.out" 2>"$d.err" &
    spid=$!
    exec 3>"$d.in"
    port=""
    i=0
    while [ $i -lt 100 ] && [ -z "$port" ]; do
        port=$(awk '/^port /{print $2}' "$d.out" 2>/dev/null || true)
        [ -n "$port" ] || sleep 0.05
        i=$((i + 1))
    done
    [ -n "$port" ]
}
stop_proxy() {
    exec 3>&-
    wait "$spid" 2>/dev/null || true
    spid=""
}

if start_proxy "$tmp/run"; then
    if ! PROXY_BENCH_PROXY_PID=$spid timeout 300 "$pb" client "$port" "$mib" "$setups" \
        >"$tmp/rows" 2>"$tmp/client.err"; then
        skip "proxy throughput/setup" "$(tail -n 1 "$tmp/client.err")"
    fi
    stop_proxy
    cat "$tmp/rows"
    # every connection must have been allowed and recorded, or the rows lie
    st=$(grep '^accepted' "$tmp/run.out" || true)
    case "$st" in
    *"denied 0"*) ;;
    *) echo "  warning: proxy counters: ${st:-none} $(tail -n 1 "$tmp/run.err")" ;;
    esac
    n=$(wc -l <"$tmp/run/runs/r-00000bench/events.jsonl" 2>/dev/null || echo 0)
    echo "  (each tunnel above wrote its egress event: $n events in the run's events.jsonl)"
else
    skip "proxy (all rows)" "proxy did not start: $(tail -n 1 "$tmp/run.err")"
fi

# relay evidence: system calls of the proxy process alone while it relays
# 64 MiB each way (smaller: strace slows every call)
if ! command -v strace >/dev/null 2>&1; then
    skip "proxy relay evidence" "strace not installed"
    exit 0
fi
smib=64
if start_proxy "$tmp/st" strace -f -c -o "$tmp/strace.txt"; then
    timeout 120 "$pb" transfer "$port" "$smib" >/dev/null 2>"$tmp/t.err" || true
    stop_proxy
    awk -v mib="$smib" '
        $NF ~ /^(recvfrom|recvmsg|read)$/ { rd += $4; rerr += ($5 ~ /^[0-9]+$/) ? $5 : 0 }
        $NF ~ /^(sendto|sendmsg|write)$/ { wr += $4 }
        $NF == "splice" { sp = $4 }
        $NF == "epoll_ctl" { ctl = $4 }
        END {
            ok = rd - rerr
            if (ok <= 0) { print "  relay evidence: no read by the proxy (strace -c)"; exit }
            # each relayed byte is read once and written once
            printf "  relay evidence (strace -c -f on the proxy, %d MiB each way): " \
                   "%d reads (%d EAGAIN), avg %.0f KiB per read; %d writes; %d epoll_ctl; " \
                   "%d splice\n", mib, rd, rerr, 2 * mib * 1024 / ok, wr, ctl, sp
        }' "$tmp/strace.txt"
else
    skip "proxy relay evidence" "proxy under strace did not start: $(tail -n 1 "$tmp/st.err")"
fi
