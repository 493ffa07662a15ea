#!/bin/sh
# Protected runs: `agentstack run --lockdown -- true` beside `unshare -Urnm
# true` (goal: at most 2x) and beside `srt true` from
# @anthropic-ai/sandbox-runtime (pinned in tests/interop/pins.txt; goal: at
# least 50x faster), wall
# (median) and CPU (perf stat task-clock); then the egress proxy of a live
# `run --sandbox`: new tunnels per second and bulk throughput through a
# CONNECT tunnel, each beside the same client talking to the same loopback
# sink directly.
#
# srt: taken from $SRT_BIN, else ~/.cache/agentstack-interop/srt; as root
# (unless BENCH_NO_INSTALL=1) it is installed there with npm, after apt-get
# install bubblewrap socat ripgrep; otherwise its rows say "skipped: <why>".
# Usage: bench/sandbox_bench.sh <builddir>   (a Release build)
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
skip() { printf '%-34s skipped: %s\n' "$1" "$2"; }
if [ ! -x "$bin" ]; then
    skip "sandbox (all rows)" "$bin not built"
    exit 0
fi

SRT_VERSION=$(awk '$1 == "@anthropic-ai/sandbox-runtime" { print $2 }' "$here/../tests/interop/pins.txt")
srt_dir=${HOME:-/root}/.cache/agentstack-interop/srt
srt=${SRT_BIN:-$srt_dir/node_modules/.bin/srt}
srt_why=""
if [ ! -x "$srt" ]; then
    if [ -n "${BENCH_NO_INSTALL:-}" ]; then
        srt_why="srt not installed (BENCH_NO_INSTALL is set)"
    elif [ "$(id -u)" != 0 ]; then
        srt_why="srt not installed and not root (set SRT_BIN)"
    elif ! command -v npm >/dev/null 2>&1; then
        srt_why="npm not found"
    else
        export DEBIAN_FRONTEND=noninteractive
        if ! command -v bwrap >/dev/null 2>&1 || ! command -v socat >/dev/null 2>&1 ||
            ! command -v rg >/dev/null 2>&1; then
            timeout 180 apt-get install -y -qq bubblewrap socat ripgrep >/dev/null 2>&1 ||
                { timeout 180 apt-get update -qq >/dev/null 2>&1 &&
                    timeout 180 apt-get install -y -qq bubblewrap socat ripgrep \
                        >/dev/null 2>&1; } || true
        fi
        mkdir -p "$srt_dir"
        timeout 300 npm install --prefix "$srt_dir" --no-audit --no-fund --silent \
            "@anthropic-ai/sandbox-runtime@$SRT_VERSION" >/dev/null 2>&1 || true
        [ -x "$srt" ] || srt_why="npm install @anthropic-ai/sandbox-runtime@$SRT_VERSION failed"
    fi
fi
if [ -z "$srt_why" ] && ! command -v bwrap >/dev/null 2>&1; then
    srt_why="srt needs bubblewrap (apt-get install bubblewrap socat ripgrep)"
fi

tmp=$(mktemp -d /tmp/as-bench-sandbox-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
PYTHONPATH=$here python3 -B - "$bin" "$tmp" "${SANDBOX_BENCH_RUNS:-40}" "$srt" "$srt_why" \
    "${SANDBOX_BENCH_MIB:-256}" "${SANDBOX_BENCH_TUNNELS:-400}" "$SRT_VERSION" <<'PY'
import base64, json, os, re, shutil, signal, socket, subprocess, sys, time
from benchlib import (env_for, fmt_ms, hyperfine_pair, interleaved, perf_cpu, row, run_ok, skip,
                      timed_run)

binpath, root, runs, srt, srt_why = sys.argv[1:6]
runs, mib, ntun = int(runs), int(sys.argv[6]), int(sys.argv[7])
srt_version = sys.argv[8]
env = env_for(root)
proj = os.path.join(root, "proj")
os.makedirs(proj)
hf = shutil.which("hyperfine")


def ratio(a, b):
    return "%.1fx" % (a / b) if b > 0 else "?"


def pair(name, base, ours, goal):
    why = run_ok(ours, proj, env) or run_ok(base, proj, env)
    if why:
        skip(name, why)
        return None
    res = None
    if hf:
        res = hyperfine_pair(hf, base, ours, proj, env, runs, os.path.join(root, "hf.json"))
    if res is None:
        res = interleaved([timed_run(base, proj, env), timed_run(ours, proj, env)], runs)
    b, o = res
    row(name, fmt_ms(o), fmt_ms(b), ratio(o, b) + goal)
    return res


print("  (start rows: median of %d runs, %s; delta = ours/baseline)"
      % (runs, "hyperfine -N" if hf else "interleaved python loop"), flush=True)
lock = [binpath, "run", "--lockdown", "--", "true"]
sand = [binpath, "run", "--sandbox", "--", "true"]
unsh = ["unshare", "-Urnm", "true"]
res = pair("run --lockdown -- true vs unshare", unsh, lock, " (<=2x)")
pair("run --sandbox -- true vs unshare", unsh, sand, "")
for name, ours, base in (("cpu: run --lockdown vs unshare", lock, unsh),
                         ("cpu: run --sandbox vs unshare", sand, unsh)):
    co, cb = perf_cpu(ours, proj, env), perf_cpu(base, proj, env)
    if co is None or cb is None:
        skip(name, "perf stat task-clock unavailable")
        break
    row(name, fmt_ms(co), fmt_ms(cb), ratio(co, cb))

# srt: no network, writes only to the cwd — its closest counterpart of --lockdown
name = "run --lockdown vs srt %s" % srt_version
if srt_why:
    skip(name, srt_why)
elif res is None:
    skip(name, "run --lockdown did not run")
else:
    cfg = os.path.join(root, "srt-settings.json")
    with open(cfg, "w") as f:
        json.dump({"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []},
                   "network": {"allowedDomains": [], "deniedDomains": []}}, f)
    cmd = [srt, "--settings", cfg, "true"]
    why = run_ok(cmd, proj, env)
    if why:
        skip(name, "srt: " + why)
    else:
        n = max(5, runs // 4)  # srt takes most of a second per start
        # the same harness as the rows above (hyperfine -N) for both sides: a
        # python fork+exec adds ~1 ms to each side, which a ratio charges to
        # the faster command; the python loop is the fallback
        sr = None
        if hf:
            sr = hyperfine_pair(hf, cmd, lock, proj, env, n, os.path.join(root, "hf-srt.json"))
        how = "hyperfine -N"
        if sr is None:
            sr = interleaved([timed_run(cmd, proj, env), timed_run(lock, proj, env)], n)
            how = "interleaved python loop"
        b, o = sr
        row(name, fmt_ms(o), fmt_ms(b), "%.0fx faster (>=50x)" % (b / o))
        print("  (srt row: median of %d runs each, %s)" % (n, how), flush=True)

# ---- the proxy of a live `run --sandbox` --------------------------------------------
SINK = r'''
import socket, sys, threading
blob = bytes(1 << 20)
def serve(c):
    line = b""
    while not line.endswith(b"\n"):
        d = c.recv(1)
        if not d:
            c.close(); return
        line += d
    op, n = line.split()
    n = int(n)
    if op == b"D":
        mv = memoryview(blob)
        while n > 0:
            k = min(n, len(blob)); c.sendall(mv[:k]); n -= k
    else:
        buf = bytearray(1 << 20)
        while n > 0:
            r = c.recv_into(buf, min(n, len(buf)))
            if not r: break
            n -= r
        c.sendall(b"k")
    c.close()
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 0)); l.listen(1024)
print(l.getsockname()[1], flush=True)
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''
sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
sport = int(sink.stdout.readline())
run = subprocess.Popen([binpath, "run", "--sandbox", "shtest", "--", "-c",
                        'echo "PROXY=$HTTPS_PROXY"; exec sleep 600'], cwd=proj,
                       env=dict(env, AGENTSTACK_ALLOW_LOCAL_TARGETS="1"),
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
head = ""
for line in run.stdout:
    head += line
    if line.startswith("PROXY="):
        break
m = re.search(r"PROXY=http://agentstack:([0-9a-f]+)@127\.0\.0\.1:(\d+)", head)
target = "localhost:%d" % sport


def finish():
    run.send_signal(signal.SIGTERM)
    try:
        run.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        run.kill()
    sink.kill()


if not m:
    skip("proxy (tunnel rows)", "the sandboxed run did not start: " + head.strip()[-80:])
    finish()
    sys.exit(0)
token, pport = m.group(1), int(m.group(2))
auth = base64.b64encode(("agentstack:" + token).encode()).decode()
req = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n"
       % (target, target, auth)).encode()


def open_conn(via_proxy):
    if not via_proxy:
        return socket.create_connection(("127.0.0.1", sport), timeout=60)
    c = socket.create_connection(("127.0.0.1", pport), timeout=60)
    c.sendall(req)
    h = b""
    while b"\r\n\r\n" not in h:
        d = c.recv(1)
        if not d:
            raise RuntimeError("proxy closed the tunnel")
        h += d
    if not h.startswith(b"HTTP/1.1 200 "):
        raise RuntimeError("proxy answered " + h.split(b"\r\n")[0].decode())
    return c


def one_tunnel(via_proxy):
    c = open_conn(via_proxy)
    c.sendall(b"D 1\n")
    c.recv(1)
    c.close()


def download(via_proxy, nbytes):
    c = open_conn(via_proxy)
    buf = bytearray(1 << 20)
    t = time.perf_counter()
    c.sendall(b"D %d\n" % nbytes)
    left = nbytes
    while left > 0:
        r = c.recv_into(buf)
        if not r:
            raise RuntimeError("short download")
        left -= r
    dt = time.perf_counter() - t
    c.close()
    return dt


def upload(via_proxy, nbytes):
    c = open_conn(via_proxy)
    blob = memoryview(bytes(1 << 20))
    t = time.perf_counter()
    c.sendall(b"U %d\n" % nbytes)
    left = nbytes
    while left > 0:
        k = min(left, len(blob))
        c.sendall(blob[:k])
        left -= k
    c.recv(1)
    dt = time.perf_counter() - t
    c.close()
    return dt


try:
    # new tunnels per second: CONNECT (name lookup, policy, dial, record) + 1 byte
    rates = []
    for via in (False, True):
        for _ in range(20):
            one_tunnel(via)
        t = time.perf_counter()
        for _ in range(ntun):
            one_tunnel(via)
        rates.append(ntun / (time.perf_counter() - t))
    row("proxy new tunnels/s vs direct", "%.0f/s" % rates[1], "%.0f/s" % rates[0],
        "%.0f%%" % (100 * rates[1] / rates[0]))
    nbytes = mib << 20
    for name, fn in (("download", download), ("upload", upload)):
        fn(True, 8 << 20)
        fn(False, 8 << 20)
        # interleaved, so both paths get the same machine weather
        times = ([], [])
        for _ in range(5):
            for via in (False, True):
                times[via].append(fn(via, nbytes))
        for label, pick in (("tunnel %s %d MiB vs direct" % (name, mib), min),
                            ("  median of 5", lambda t: sorted(t)[len(t) // 2])):
            tp = [mib / pick(t) for t in times]
            row(label, "%.0fMiB/s" % tp[1], "%.0fMiB/s" % tp[0],
                "%.0f%% (>=80%%)" % (100 * tp[1] / tp[0]))
except (OSError, RuntimeError) as e:
    skip("proxy (tunnel rows)", str(e))
finally:
    finish()
print("  (tunnel rows: a live `run --sandbox`'s proxy, one client, target localhost "
      "resolved per tunnel, every tunnel recorded; best and median of 5 interleaved "
      "transfers)", flush=True)
PY
