"""The egress proxy against real names and a real off-loopback host.

The test builds its own little network and touches nothing else: two
network namespaces it creates (`ip netns add`) joined by a veth pair —
"here" (10.200.0.1), where agentstack runs, and "upstream" (10.200.0.2), a
test host serving HTTP and HTTPS. Inside "here" a private mount namespace
points /etc/resolv.conf at a DNS server this test runs on 127.0.0.1:53 of
that namespace, so the proxy's ordinary getaddrinfo() path resolves the
test's names; no product code has a resolver override a project could set.

Proves, through the real binary:
  - under --lockdown a process that ignores the proxy variables cannot reach
    a non-loopback host that an unconfined process beside it reaches (and
    under --sandbox it can: the label "DIRECT ROUTE OPEN" is honest);
  - names resolving to 10.x, 127.0.0.1, ::1 only, 169.254.169.254 and
    ::ffff:127.0.0.1 are refused by the SSRF guard (CONNECT and plain HTTP),
    while the same name is reachable once AGENTSTACK_ALLOW_LOCAL_TARGETS is
    set (so the refusal was the guard, not a failed lookup);
  - DNS rebinding: a name whose answer changes after the first query is
    looked up exactly once per connection and the answer looked up is the
    one dialled; the sandbox itself cannot query the resolver;
  - a port rule (shtest = ["api.test:443"]): :443 passes policy and a TLS
    tunnel reaches the host, :22 and another host are denied.
Needs root, iproute2, curl and openssl; otherwise it skips (exit 77; a failure under CI=true).
"""
import json
import os
import re
import shutil
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import http.server

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, skip  # noqa: E402

UP = "10.200.0.2"
HERE = "10.200.0.1"

UPSTREAM = r'''
import http.server, os, socketserver, ssl, sys, threading
log, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        tls = isinstance(self.connection, ssl.SSLSocket)
        with lock, open(log, "a") as f:
            f.write("%s %s\n" % ("tls" if tls else "http", self.path))
        body = b"hello-from-netns" + (b"-tls" if tls else b"")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
plain = S(("10.200.0.2", 80), H)
tls = S(("10.200.0.2", 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
for s in (plain, tls):
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("READY", flush=True)
sys.stdin.read()
'''

# ---- outside: build the two namespaces, then re-run this file inside ------


def sh(*a, check_rc=True):
    return subprocess.run(a, capture_output=True, text=True, check=check_rc)


def outside():
    tools = ("ip", "unshare", "curl", "openssl", "getent")
    if os.geteuid() != 0 or not all(shutil.which(t) for t in tools):
        skip("needs root and " + ", ".join(tools) + " (network namespaces)")
    tag = f"ast{os.getpid() % 100000}"
    here, up = tag + "h", tag + "u"
    tmp = tempfile.mkdtemp(prefix="as-e2e-netns-")
    upstream = None
    try:
        sh("ip", "netns", "add", here)
        sh("ip", "netns", "add", up)
        sh("ip", "link", "add", tag + "a", "netns", here, "type", "veth",
           "peer", "name", tag + "b", "netns", up)
        for ns, dev, addr in ((here, tag + "a", HERE), (up, tag + "b", UP)):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
           "-nodes", "-keyout", key, "-out", cert, "-subj", "/CN=api.test", "-addext",
           "subjectAltName=DNS:api.test,DNS:rebind.test,DNS:private.test", "-days", "2")
        with open(os.path.join(tmp, "upstream.py"), "w") as f:
            f.write(UPSTREAM)
        upstream = subprocess.Popen(["ip", "netns", "exec", up, sys.executable, "-B",
                                     os.path.join(tmp, "upstream.py"),
                                     os.path.join(tmp, "upstream.log"), cert, key],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if upstream.stdout.readline().strip() != "READY":
            print("FAIL the test upstream host did not start")
            print("0 passed, 1 failed")
            return 1
        with open(os.path.join(tmp, "resolv.conf"), "w") as f:
            f.write("nameserver 127.0.0.1\noptions timeout:2 attempts:1\n")
        with open(os.path.join(tmp, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost\n")
        script = ('mount --bind "$1/resolv.conf" /etc/resolv.conf && '
                  'mount --bind "$1/hosts" /etc/hosts && shift && exec "$@"')
        r = subprocess.run(["ip", "netns", "exec", here, "unshare", "-m", "--propagation",
                            "private", "sh", "-c", script, "sh", tmp, sys.executable, "-B",
                            os.path.abspath(__file__), "--inside", tmp],
                           timeout=900)
        return r.returncode
    finally:
        if upstream:
            upstream.stdin.close()
            upstream.terminate()
            upstream.wait(timeout=30)
        sh("ip", "netns", "del", here, check_rc=False)
        sh("ip", "netns", "del", up, check_rc=False)
        shutil.rmtree(tmp, ignore_errors=True)


# ---- inside "here": the DNS server, a loopback sink, and the scenarios ----

class Dns:
    """A UDP DNS server for the test's names; counts every query by (name, type)."""

    def __init__(self):
        self.queries = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        threading.Thread(target=self.loop, daemon=True).start()

    def answers(self, name, qtype):
        n_a = sum(1 for q in self.queries if q == (name, 1))
        table = {
            "private.test": {1: ["10.200.0.2"]},
            "api.test": {1: ["10.200.0.2"]},
            "loop4.test": {1: ["127.0.0.1"]},
            "loop6.test": {28: ["::1"]},
            "meta.test": {1: ["169.254.169.254"]},
            "mapped.test": {28: ["::ffff:127.0.0.1"]},
            # public-looking first, loopback on every later lookup
            "rebind.test": {1: ["10.200.0.2"] if n_a <= 1 else ["127.0.0.1"]},
        }
        if name not in table:
            return None
        return table[name].get(qtype, [])

    def loop(self):
        while True:
            data, peer = self.sock.recvfrom(2048)
            if len(data) < 12:
                continue
            i, labels = 12, []
            while i < len(data) and data[i]:
                labels.append(data[i + 1:i + 1 + data[i]].decode(errors="replace").lower())
                i += 1 + data[i]
            i += 1
            if i + 4 > len(data):
                continue
            qtype = struct.unpack(">H", data[i:i + 2])[0]
            name = ".".join(labels)
            with self.lock:
                self.queries.append((name, qtype))
                ans = self.answers(name, qtype)
            question = data[12:i + 4]
            rcode = 3 if ans is None else 0
            ans = ans or []
            out = data[:2] + struct.pack(">HHHHH", 0x8180 | rcode, 1, len(ans), 0, 0) + question
            for a in ans:
                fam = socket.AF_INET6 if ":" in a else socket.AF_INET
                rd = socket.inet_pton(fam, a)
                out += struct.pack(">HHHIH", 0xC00C, qtype, 1, 0, len(rd)) + rd
            self.sock.sendto(out, peer)

    def count(self, name, qtype=1):
        with self.lock:
            return sum(1 for q in self.queries if q == (name, qtype))

    def total(self):
        with self.lock:
            return len(self.queries)


class Sink(http.server.BaseHTTPRequestHandler):
    hits = []

    def do_GET(self):
        Sink.hits.append(self.path)
        body = b"hello-from-loopback"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def egress(s, rid):
    if not rid:
        return []
    with open(os.path.join(s.ah, "runs", rid, "events.jsonl")) as f:
        return [e for e in map(json.loads, f) if e["event"] == "egress"]


def inside(tmp):
    uplog = os.path.join(tmp, "upstream.log")

    def up_hits():
        try:
            with open(uplog) as f:
                return f.read().split("\n")
        except OSError:
            return []

    dns = Dns()
    sink = socketserver.ThreadingTCPServer(("127.0.0.1", 80), Sink)
    sink.daemon_threads = True
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    with Sandbox() as s:
        shutil.copy(os.path.join(tmp, "cert.pem"), os.path.join(s.project, "cert.pem"))

        def run(mode, script, **env):
            r = s.run("run", mode, "shtest", "--", "-c", script, env=s.env(**env), timeout=120)
            return r, run_id(r.stdout)

        def machine(text):
            s.write("agentstack.toml", "version = 1\n" + text, base=s.ah)

        machine('[policy.egress]\n"*" = ["!blocked.invalid"]\n')

        # 1. No direct route under lockdown — to a real off-loopback host.
        c = subprocess.run(["curl", "-sS", "-m", "10", "--noproxy", "*",
                            f"http://{UP}/control"], capture_output=True, text=True)
        check(c.stdout == "hello-from-netns", "control: an unconfined process reaches "
              f"the test host {UP}", c.stdout + c.stderr)
        direct = ("unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy; "
                  f"curl -sS -m 5 http://{UP}/direct-%s || echo BLOCKED")
        r, rid = run("--lockdown", direct % "lockdown")
        check(r.returncode == 0 and "BLOCKED" in r.stdout and "hello-from" not in r.stdout
              and "http /direct-lockdown" not in up_hits(),
              "lockdown: a process ignoring the proxy cannot reach the host", r.stdout + r.stderr)
        check(egress(s, rid) == [], "lockdown: the attempt never reached the proxy either")
        r, rid = run("--sandbox", direct % "sandbox")
        check("hello-from-netns" in r.stdout and "http /direct-sandbox" in up_hits(),
              "--sandbox: the direct route is open, as its label says", r.stdout + r.stderr)

        # 2. Names resolving to non-global addresses: the SSRF guard, by name.
        names = {"private.test": "10.200.0.2", "loop4.test": "127.0.0.1", "loop6.test": "::1",
                 "meta.test": "169.254.169.254", "mapped.test": "::ffff:127.0.0.1"}
        before = len(up_hits())
        script = "; ".join(f"curl -sS -m 10 https://{n}/ssrf" for n in names)
        script += "; curl -sS -m 10 http://private.test/ssrf-plain; true"
        r, rid = run("--lockdown", script)
        eg = egress(s, rid)
        for n, addr in names.items():
            e = [x for x in eg if x["host"] == n and x.get("via") == "connect"]
            check(len(e) == 1 and not e[0]["allowed"]
                  and f"'{n}' resolves only to non-global addresses ({addr})" in e[0]["rule"]
                  and "SSRF guard" in e[0]["rule"],
                  f"a name resolving to {addr} is refused (SSRF guard)", e or eg)
        check(any(x["host"] == "private.test" and x.get("via") == "http" and not x["allowed"]
                  and "SSRF guard" in x["rule"] for x in eg),
              "plain HTTP to a private name is refused the same way", eg)
        check(len(up_hits()) == before, "nothing reached the private host")
        check(r.stderr.count("403") >= 5 or "403" in r.stdout + r.stderr,
              "the harness sees 403 Forbidden", r.stderr)
        rep = s.run("report", rid)
        check(re.search(r"✗ shtest → meta\.test.*SSRF guard", rep.stdout) is not None,
              "report shows the SSRF refusal", rep.stdout)

        # ...and the same name is reachable with the test-only allowance, so
        # the refusal above was the guard, not a failed lookup.
        r, rid = run("--lockdown", "curl -sS -m 10 http://private.test/allowed",
                     AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        check("hello-from-netns" in r.stdout and "http /allowed" in up_hits(),
              "control: with AGENTSTACK_ALLOW_LOCAL_TARGETS the name reaches 10.200.0.2",
              r.stdout + r.stderr)

        # 3. DNS rebinding: resolved once per connection, the answer dialled.
        q0 = dns.count("rebind.test")
        r, rid = run("--lockdown", "curl -sS -m 10 --cacert /workspace/cert.pem "
                                   "https://rebind.test/rebind-1; echo; "
                                   "getent hosts rebind.test || echo NO-DNS-INSIDE",
                     AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        check("hello-from-netns-tls" in r.stdout and "tls /rebind-1" in up_hits()
              and "/rebind-1" not in Sink.hits,
              "rebinding: the tunnel reached the first answer (10.200.0.2)", r.stdout + r.stderr)
        check(dns.count("rebind.test") - q0 == 1,
              "rebinding: the name was looked up exactly once for the connection",
              dns.queries)
        check("NO-DNS-INSIDE" in r.stdout, "the sandbox cannot query the resolver itself",
              r.stdout)
        # The resolver now answers loopback: a new connection is judged on
        # its own single lookup and refused.
        r, rid = run("--lockdown", "curl -sS -m 10 https://rebind.test/rebind-2; true")
        eg = egress(s, rid)
        check(len(eg) == 1 and not eg[0]["allowed"] and "(127.0.0.1)" in eg[0]["rule"]
              and "SSRF guard" in eg[0]["rule"] and "/rebind-2" not in Sink.hits,
              "rebinding: the later loopback answer is refused (SSRF guard)", eg)
        check(dns.count("rebind.test") - q0 == 2, "one lookup per connection", dns.queries)

        # 4. Port rule: shtest = ["api.test:443"].
        machine('[policy.egress]\nshtest = ["api.test:443"]\n')
        r, rid = run("--lockdown", "curl -sS -m 10 --cacert /workspace/cert.pem "
                                   "https://api.test/port-443; echo; "
                                   "curl -sS -m 10 https://api.test:22/; "
                                   "curl -sS -m 10 https://private.test/; true",
                     AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        eg = egress(s, rid)
        check("hello-from-netns-tls" in r.stdout and "tls /port-443" in up_hits(),
              "port rule: api.test:443 passes policy and the TLS tunnel works",
              r.stdout + r.stderr)
        by = {(e["host"], e["port"]): e for e in eg}
        a443, a22, oth = (by.get(("api.test", 443)), by.get(("api.test", 22)),
                          by.get(("private.test", 443)))
        check(a443 and a443["allowed"] and "rule" not in a443,
              "the :443 allow is recorded (no rule: nothing objected)", eg)
        check(a22 and not a22["allowed"] and a22["layer"] == "machine",
              "port rule: api.test:22 is denied by machine policy", eg)
        check(oth and not oth["allowed"], "a host outside the allowlist is denied", eg)
    sink.shutdown()
    done()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        inside(sys.argv[2])
    else:
        sys.exit(outside())
