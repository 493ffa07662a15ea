#!/bin/sh
# The egress proxy: a 256 MiB download and upload through a CONNECT tunnel vs
# a direct loopback connection and vs two bare relays (splice, copy), the CPU
# each path costs per GiB, tunnel setup latency vs a direct connect, and
# strace -c on the proxy process: how many reads and writes move the bytes
# (the relay copies through a growing buffer per direction); and the same
# download through tinyproxy, the peer proxy (goal: ours >= 5x its MiB/s).
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
tpid=""
cleanup() {
    exec 3>&- 2>/dev/null || true
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    [ -n "$tpid" ] && kill "$tpid" 2>/dev/null
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

# tinyproxy (Debian's package): the peer CONNECT proxy the download is also
# timed through, started here on loopback with a generated config — Basic
# auth with the same credentials ours checks, every port allowed to CONNECT,
# no logging below errors. As root (unless BENCH_NO_INSTALL=1) a missing
# tinyproxy is installed with apt-get; otherwise its row is skipped.
tp=$(command -v tinyproxy || true)
if [ -z "$tp" ] && [ -z "${BENCH_NO_INSTALL:-}" ] && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 180 apt-get install -y -qq tinyproxy >/dev/null 2>&1 ||
        { timeout 180 apt-get update -qq >/dev/null 2>&1 &&
            timeout 180 apt-get install -y -qq tinyproxy >/dev/null 2>&1; } || true
    tp=$(command -v tinyproxy || true)
fi
tp_why=""
tpport=""
if [ -z "$tp" ]; then
    tp_why="tinyproxy not installed (apt-get install tinyproxy)"
else
    tpport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    {
        if [ "$(id -u)" = 0 ]; then
            printf 'User nobody\nGroup nogroup\n'
        fi
        printf 'Port %s\nListen 127.0.0.1\nTimeout 600\nMaxClients 100\n' "$tpport"
        printf 'LogLevel Error\nAllow 127.0.0.1\nDisableViaHeader Yes\n'
        printf 'BasicAuth agentstack %s\n' \
            0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    } >"$tmp/tinyproxy.conf"
    "$tp" -d -c "$tmp/tinyproxy.conf" >"$tmp/tinyproxy.log" 2>&1 &
    tpid=$!
    i=0
    until python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
        "$tpport" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -ge 100 ] || ! kill -0 "$tpid" 2>/dev/null; then
            tp_why="tinyproxy did not start: $(tail -n 1 "$tmp/tinyproxy.log")"
            break
        fi
        sleep 0.05
    done
    [ -z "$tp_why" ] || tpport=""
fi

if start_proxy "$tmp/run"; then
    if ! PROXY_BENCH_PROXY_PID=$spid PROXY_BENCH_PEER_PORT=$tpport timeout 300 "$pb" client \
        "$port" "$mib" "$setups" >"$tmp/rows" 2>"$tmp/client.err"; then
        skip "proxy throughput/setup" "$(tail -n 1 "$tmp/client.err")"
    fi
    stop_proxy
    cat "$tmp/rows"
    if [ -n "$tp_why" ]; then
        skip "proxy download vs tinyproxy" "$tp_why"
    else
        echo "  (tinyproxy $("$tp" -v 2>&1 | awk '{print $2}'): the same download through it," \
            "interleaved with the rows above; goal: ours >= 5x its MiB/s)"
    fi
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
