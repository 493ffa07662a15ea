#!/bin/sh
# --lockdown, reproduced: a process that really ignores the proxy reaches
# nothing, a denied host is refused at the proxy and recorded, and the one
# allowed route (the egress proxy) works and is recorded too.
#
#   sh docs/lockdown-demo.sh [path/to/agentstack]
#
# Fenced in a temporary HOME and AGENTSTACK_HOME. The "internet" is a small
# HTTP server this script starts on 127.0.0.1: the direct attempt resolves
# example.com to it, so if any direct route existed the attempt would land
# there — and the server's own log is the witness that it did not. Needs
# python3 and curl, and a kernel that allows the run's namespaces (root, or
# unprivileged user namespaces). Exits 1 if any claim fails.
set -eu
. "$(dirname "$0")/demo-lib.sh"
for t in python3 curl; do
    command -v "$t" >/dev/null 2>&1 || { echo "demo: $t is needed" >&2; exit 2; }
done

# The witness: a loopback HTTP server that appends every request path it serves.
HITS="$DEMO/hits.log"
: > "$HITS"
cat > "$DEMO/witness.py" <<'PY'
import http.server, sys
log = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        body = b"hello-from-the-witness"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
PY
python3 "$DEMO/witness.py" "$HITS" > "$DEMO/port" &
DEMO_PIDS=$!
i=0
while [ ! -s "$DEMO/port" ]; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "demo: the witness server did not start" >&2; exit 1; }
    sleep 0.05
done
P=$(cat "$DEMO/port")
witnessed() { grep -qxF -- "$1" "$HITS"; }

mkdir -p "$AGENTSTACK_HOME" "$DEMO/proj"
cd "$DEMO/proj"
cat > "$AGENTSTACK_HOME/agentstack.toml" <<'TOML'
version = 1
# YOUR machine firewall: no repository can loosen it.
[policy.egress]
"*" = ["!blocked.invalid"]
TOML
printf '\n$ cat ~/.agentstack/agentstack.toml\n'
sed 's/^/    /' "$AGENTSTACK_HOME/agentstack.toml"

# Control: from the host, the witness answers — so silence later means something.
printf '\n$ curl --noproxy %s http://127.0.0.1:%s/control   # on the host, no sandbox\n' "'*'" "$P"
set +e
OUT=$(curl -sS -m 5 --noproxy '*' "http://127.0.0.1:$P/control" 2>&1)
set -e
printf '    %s\n' "$OUT"
proves "control: the witness server is reachable directly from the host" witnessed /control

# 1. Ignore the proxy for real: every proxy variable unset AND --noproxy '*'.
DIRECT="unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy ALL_PROXY all_proxy; \
curl --noproxy '*' -sS -m 5 --resolve example.com:$P:127.0.0.1 http://example.com:$P/direct \
|| echo BLOCKED; curl --noproxy '*' -sS -m 5 http://127.0.0.1:$P/direct-loopback || echo BLOCKED"
step run --lockdown shtest -- -c "$DIRECT"
proves "the run is labelled LOCKDOWN / ENFORCED · NO DIRECT ROUTE" has "posture: LOCKDOWN / ENFORCED · NO DIRECT ROUTE"
proves "a process that ignores the proxy gets nothing back" \
    sh -c '[ "$(printf "%s\n" "$1" | grep -c "^BLOCKED$")" -eq 2 ]' _ "$OUT"
proves "…and reached nothing: the witness saw neither direct attempt (by name or by loopback)" \
    sh -c '! grep -q "^/direct" "$1"' _ "$HITS"

# Control: the very same command under --sandbox, whose bridge leaves a direct
# route, does reach the witness — so the silence above is the topology.
step run --sandbox shtest -- -c "$(printf '%s' "$DIRECT" | sed 's#/direct#/sandbox-direct#g')"
proves "control: under --sandbox (direct route open) the same process does reach the witness" \
    witnessed /sandbox-direct

# 2. The proxied request to a denied host is refused at the proxy and recorded.
step run --lockdown shtest -- -c "curl -sS -m 10 https://blocked.invalid/steal || echo REFUSED"
RID=$(printf '%s\n' "$OUT" | sed -n 's/.*(run \(r-[0-9a-f]*\)).*/\1/p' | head -n 1)
proves "the denied host is refused" has "REFUSED"
step report "$RID"
proves "report records it: ✗ shtest → blocked.invalid, denied by the machine rule" \
    has '✗ shtest → blocked.invalid  1 denied  denied by rule "!blocked.invalid" (machine policy)'

# 3. The proxy is the route: an allowed request goes through it and is recorded.
#    (AGENTSTACK_ALLOW_LOCAL_TARGETS lets the proxy reach this loopback witness;
#    without it a name resolving to loopback is refused as SSRF.)
step run --lockdown shtest -- -c "curl -fsS -m 10 http://localhost:$P/ssrf || echo REFUSED"
proves "…a name resolving to loopback is refused by the proxy (no SSRF into this machine)" \
    sh -c 'printf "%s\n" "$1" | grep -qx REFUSED' _ "$OUT"
proves "…and the witness never saw that request" sh -c '! grep -qx /ssrf "$1"' _ "$HITS"
export AGENTSTACK_ALLOW_LOCAL_TARGETS=1
step run --lockdown shtest -- -c "curl -sS -m 10 http://localhost:$P/via-proxy; echo"
RID=$(printf '%s\n' "$OUT" | sed -n 's/.*(run \(r-[0-9a-f]*\)).*/\1/p' | head -n 1)
proves "through the proxy, an allowed request gets its answer" has "hello-from-the-witness"
proves "…and the witness saw it arrive" witnessed /via-proxy
step report "$RID"
proves "report records the proxied request (✓ shtest → localhost)" has "✓ shtest → localhost"

finish
