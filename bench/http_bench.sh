#!/bin/sh
# The gateway over HTTP: N sequential echo tools/call through `agentstack mcp
# --listen` (one kept-alive connection, application/json answers, the bearer
# token on every request) vs the same calls through `agentstack mcp` on stdio
# — the baseline — in the same run, to the same stdio echo server, from the
# same Python client loop (HTTP: a bare keep-alive socket client). One row: calls/s each way and HTTP as a share of
# stdio; the median of 3 paired rounds (docs/performance.md).
# Usage:
#   sh bench/http_bench.sh <builddir>      (HTTP_BENCH_N=2000 by default)
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$B" && pwd)/agentstack
n=${HTTP_BENCH_N:-2000}
work=$(mktemp -d /tmp/agentstack-httpbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.agentstack" "$work/proj"

cp "$here/echo_server.py" "$work/proj/echo.py"
cat > "$work/proj/agentstack.toml" <<'TOML'
version = 1

[servers.bench]
type = "stdio"
command = "python3"
args = ["./echo.py"]
TOML

HOME="$work/home" AGENTSTACK_HOME="$work/home/.agentstack" NO_COLOR=1 \
python3 - "$bin" "$work/proj" "$n" "$work" <<'PY'
import json, re, socket, statistics, subprocess, sys, time
bin_, proj, n, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}
CALL = {"name": "bench__echo", "arguments": {"message": "hi"}}


def msg(i, method, params):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def stdio_round():
    p = subprocess.Popen([bin_, "mcp", "--manifest-dir", proj], cwd=proj,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)

    def rpc(i, method, params):
        p.stdin.write((json.dumps(msg(i, method, params)) + "\n").encode())
        p.stdin.flush()
        while True:
            r = json.loads(p.stdout.readline())
            if r.get("id") == i:
                return r
    rpc(1, "initialize", INIT)
    for i in range(50):
        rpc(10 + i, "tools/call", CALL)
    t = time.perf_counter()
    for i in range(n):
        r = rpc(1000 + i, "tools/call", CALL)
    dt = time.perf_counter() - t
    assert r["result"]["content"][0]["text"] == "hi", r
    p.stdin.close()
    p.wait()
    return n / dt


def http_round():
    """A bare keep-alive client on a raw socket (http.client's own parsing
    would cost more than the gateway's): what is measured is the server."""
    tok = work + "/http.token"
    p = subprocess.Popen([bin_, "mcp", "--manifest-dir", proj, "--listen", "127.0.0.1:0",
                          "--token-file", tok], cwd=proj, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port = None
    for line in p.stderr:
        m = re.search(rb"127\.0\.0\.1:(\d+)/mcp", line)
        if m:
            port = int(m.group(1))
            break
    token = open(tok).read().strip()
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    extra = ""
    buf = b""

    def rpc(i, method, params):
        nonlocal buf, extra
        body = json.dumps(msg(i, method, params)).encode()
        s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nAccept: application/json\r\n%s"
                   "Content-Length: %d\r\n\r\n" % (token, extra, len(body))).encode() + body)
        while True:
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                low = head.lower()
                n = int(low.split(b"content-length: ")[1].split(b"\r\n")[0])
                if len(rest) >= n:
                    buf = rest[n:]
                    if not extra:
                        sid = low.split(b"mcp-session-id: ")[1].split(b"\r\n")[0].decode()
                        extra = ("Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                                 % sid)
                    return json.loads(rest[:n])
            buf += s.recv(65536)
    rpc(1, "initialize", INIT)
    for i in range(50):
        rpc(10 + i, "tools/call", CALL)
    t = time.perf_counter()
    for i in range(n):
        r = rpc(1000 + i, "tools/call", CALL)
    dt = time.perf_counter() - t
    assert r["result"]["content"][0]["text"] == "hi", r
    s.close()
    p.terminate()
    p.wait()
    return n / dt


hs, ss = [], []
for _ in range(3):
    ss.append(stdio_round())
    hs.append(http_round())
h, s = statistics.median(hs), statistics.median(ss)
print("%-34s %12s %12s %10s" % ("gateway --listen echo, calls/s (%d)" % n, "%d/s" % h,
                                 "%d/s" % s, "%d%%" % round(100 * h / s)))
sys.stderr.write("  medians of 3 paired rounds; HTTP (one kept-alive connection) %s; "
                 "stdio (baseline) %s\n" % ([int(x) for x in hs], [int(x) for x in ss]))
PY
