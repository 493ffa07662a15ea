"""The egress proxy of a real `agentstack run --sandbox`, driven from the host.

The harness prints its HTTPS_PROXY (URL with the per-run token) and waits;
the test then speaks to that proxy directly with raw sockets: an allowed
CONNECT relays bytes to a loopback echo server (local targets allowed for
the test only), a denied host gets 403, missing/wrong tokens get 407, SNI
mismatch / fragmented / truncated ClientHellos are refused, a hello without
SNI passes, plain-HTTP absolute-form requests are forwarded, 1,000
concurrent tunnels plus a slowloris client do not stall another client, past
the connection cap a client gets EOF without a byte and service resumes, and
without the allowance every loopback/private/metadata target is refused
by the SSRF guard. Every decision must appear in the run's record.
"""
import base64
import json
import os
import re
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402


def hello(sni=None, extra=0, fragment=False):
    body = struct.pack(">H", 0x0303) + bytes(range(32)) + b"\x00"
    body += struct.pack(">H", 4) + b"\x13\x01\x13\x02" + b"\x01\x00"
    ext = b""
    if sni:
        name = sni.encode()
        entry = b"\x00" + struct.pack(">H", len(name)) + name
        ext += struct.pack(">HH", 0, len(entry) + 2) + struct.pack(">H", len(entry)) + entry
    ext += struct.pack(">HHBH", 0x2B, 3, 2, 0x0304)
    body += struct.pack(">H", len(ext)) + ext
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    if fragment:
        half = len(hs) // 2
        return (b"\x16\x03\x01" + struct.pack(">H", half) + hs[:half] +
                b"\x16\x03\x01" + struct.pack(">H", len(hs) - half) + hs[half:])
    rec = hs + b"\x00" * extra
    return b"\x16\x03\x01" + struct.pack(">H", len(rec)) + rec


class Echo:
    """A selectors-based echo server that counts every byte it receives."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(4096)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.received = 0
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.lsock, selectors.EVENT_READ)
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            for key, _ in self.sel.select(0.2):
                if key.fileobj is self.lsock:
                    try:
                        c, _ = self.lsock.accept()
                        c.setblocking(True)
                        self.sel.register(c, selectors.EVENT_READ)
                    except OSError:
                        pass
                    continue
                c = key.fileobj
                try:
                    d = c.recv(65536)
                except OSError:
                    d = b""
                if not d:
                    self.sel.unregister(c)
                    c.close()
                    continue
                self.received += len(d)
                c.sendall(d)


def recv_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(1)
        if not d:
            break
        buf += d
    return buf.decode(errors="replace")


def recv_all(s):
    out = b""
    while True:
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            break
        out += d
    return out


class Run:
    """A live `run --sandbox` whose harness prints its proxy URL and waits."""

    def __init__(self, s, **env):
        self.s = s
        self.p = subprocess.Popen([BIN, "run", "--sandbox", "shtest", "--", "-c",
                                   'echo "PROXY=$HTTPS_PROXY"; exec sleep 600'],
                                  cwd=s.project, env=s.env(**env), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.head = ""
        for line in self.p.stdout:
            self.head += line
            if line.startswith("PROXY="):
                break
        m = re.search(r"PROXY=http://agentstack:([0-9a-f]{64})@127\.0\.0\.1:(\d+)", self.head)
        self.token, self.port = (m.group(1), int(m.group(2))) if m else (None, None)
        self.rid = re.search(r"\(run (r-[0-9a-f]{10})\)", self.head).group(1)
        self.auth = "Basic " + base64.b64encode(f"agentstack:{self.token}".encode()).decode()

    def connect(self, target, auth=True, extra_headers=""):
        c = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        h = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if auth is True:
            h += f"Proxy-Authorization: {self.auth}\r\n"
        elif auth:
            h += f"Proxy-Authorization: {auth}\r\n"
        c.sendall((h + extra_headers + "\r\n").encode())
        return c, recv_head(c)

    def end(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=60)
        return self.head + out, err

    def events(self):
        with open(os.path.join(self.s.ah, "runs", self.rid, "events.jsonl")) as f:
            return list(map(json.loads, f))

    def egress(self):
        return [e for e in self.events() if e["event"] == "egress"]


def still_open(sock):
    """True while the peer has neither answered nor closed sock (peeks,
    consumes nothing)."""
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    echo = Echo()
    with Sandbox() as s:
        s.write("agentstack.toml", 'version = 1\n[policy.egress]\n"*" = ["!blocked.invalid"]\n'
                                   'shtest = ["!*:22"]\n', base=s.ah)
        r = Run(s, AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        check(r.token and r.port, "the harness sees HTTPS_PROXY with a per-run token", r.head)
        target = f"localhost:{echo.port}"

        # An allowed CONNECT relays bytes both ways (through splice).
        c, head = r.connect(target)
        check(head.startswith("HTTP/1.1 200 "), "allowed CONNECT: 200", head)
        h = hello("localhost")
        c.sendall(h)
        got = b""
        while len(got) < len(h):
            got += c.recv(65536)
        payload = os.urandom(1 << 20)
        c.sendall(payload)
        back = b""
        while len(back) < len(payload):
            d = c.recv(1 << 20)
            if not d:
                break
            back += d
        check(got == h and back == payload, "bytes are relayed both ways (1 MiB)")
        c.close()

        # Denied host, port rule, token.
        c, head = r.connect("blocked.invalid:443")
        check(head.startswith("HTTP/1.1 403 "), "denied host: 403", head)
        c.close()
        c, head = r.connect("api.example.com:22")
        check(head.startswith("HTTP/1.1 403 "), "port rule: :22 refused", head)
        c.close()
        c, head = r.connect(target, auth=False)
        check(head.startswith("HTTP/1.1 407 ")
              and 'Proxy-Authenticate: Basic realm="agentstack"' in head, "no token: 407", head)
        c.close()
        c, head = r.connect(target, auth="Basic " + base64.b64encode(b"agentstack:wrong").decode())
        check(head.startswith("HTTP/1.1 407 "), "wrong token: 407", head)
        c.close()

        # ClientHello checks: nothing reaches the upstream on a refusal.
        for name, data, shut in (("SNI mismatch", hello("evil.example"), False),
                                 ("fragmented hello", hello("localhost", fragment=True), False),
                                 ("stray trailing byte", hello("localhost", extra=1), False),
                                 ("truncated hello then EOF", hello("localhost")[:40], True)):
            before = echo.received
            c, head = r.connect(target)
            c.sendall(data)
            if shut:
                c.shutdown(socket.SHUT_WR)
            rest = recv_all(c)
            c.close()
            check(head.startswith("HTTP/1.1 200 ") and rest == b"" and echo.received == before,
                  f"{name}: closed, nothing forwarded", (head, rest))
        c, head = r.connect(target)
        h = hello(None)
        c.sendall(h)
        got = b""
        while len(got) < len(h):
            got += c.recv(65536)
        check(got == h, "a complete hello without SNI passes (--sandbox)")
        c.close()

        # Plain HTTP, absolute-form, forwarded with the credentials stripped.
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        hp = srv.getsockname()[1]
        c = socket.create_connection(("127.0.0.1", r.port), timeout=30)
        c.sendall(f"GET http://localhost:{hp}/simple/pkg/ HTTP/1.1\r\nHost: x\r\n"
                  f"Proxy-Authorization: {r.auth}\r\nAccept: */*\r\n\r\n".encode())
        u, _ = srv.accept()
        req = recv_head(u)
        u.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        u.close()
        resp = recv_all(c).decode()
        c.close()
        srv.close()
        check(req.startswith("GET /simple/pkg/ HTTP/1.1\r\n") and "Proxy-Authorization" not in req
              and f"Host: localhost:{hp}" in req, "plain HTTP is forwarded in origin form", req)
        check(resp.endswith("\r\n\r\nok"), "the response comes back", resp)

        # 1,000 concurrent tunnels and a slowloris client do not stall another client.
        tunnels = []
        ok = True
        for i in range(1000):
            c, head = r.connect(target)
            if not head.startswith("HTTP/1.1 200 "):
                ok = False
                break
            c.sendall(hello("localhost"))
            tunnels.append(c)
        check(ok and len(tunnels) == 1000, "1,000 concurrent tunnels are accepted", len(tunnels))
        h = hello("localhost")
        for c in tunnels[::100]:
            got = b""
            while len(got) < len(h):
                got += c.recv(65536)
            ok = ok and got == h
        check(ok, "live tunnels keep relaying")
        # (opened only now: its 15 s head deadline must not run out while the
        # 1,000 tunnels are built, which takes longer than that under load)
        slow = socket.create_connection(("127.0.0.1", r.port))
        slow.sendall(b"C")
        c, head = r.connect(target)
        check(head.startswith("HTTP/1.1 200 "), "another client is served meanwhile", head)
        c.close()
        # Flood: fill the proxy up to its connection cap (the run's `limits`
        # event); the next connection is closed without a byte, and service
        # resumes once a slot frees.
        cap = [e for e in r.events() if e["event"] == "limits"][0]["tunnels"]
        refused_at, got = None, b"x"
        for i in range(cap + 8 - len(tunnels)):
            c = socket.create_connection(("127.0.0.1", r.port), timeout=30)
            c.sendall(f"CONNECT {target} HTTP/1.1\r\nProxy-Authorization: {r.auth}\r\n\r\n"
                      .encode())
            try:
                got = c.recv(64)
            except OSError:
                got = b""
            if not got.startswith(b"HTTP/1.1 200 "):
                c.close()
                # + the slowloris client, unless its head deadline already
                # freed its slot (a loaded machine: then it has its answer)
                refused_at = len(tunnels) + (1 if still_open(slow) else 0)
                break
            c.sendall(hello("localhost"))
            tunnels.append(c)
        check(refused_at is not None and got == b"" and cap - 2 <= refused_at <= cap,
              f"flood: past the cap ({cap}) a connection gets EOF/RST and no byte",
              (cap, refused_at, got))
        tunnels.pop().close()
        served = False
        for attempt in range(200):
            try:
                c, head = r.connect(target)
            except OSError:  # the freed slot may not be back yet: a reset, then retry
                time.sleep(0.01)
                continue
            c.close()
            if head.startswith("HTTP/1.1 200 "):
                served = True
                break
            time.sleep(0.01)
        check(served, "flood: service resumes as a slot frees")
        for c in tunnels:
            c.close()
        # The slowloris client: one byte a second never completes a head; it
        # gets 400 when the 15 s head deadline passes and its slot is freed.
        slow.settimeout(1.5)
        d = b""
        for ch in b"ONNECT localhost:1 HTTP/1.1\r\n":
            try:
                slow.sendall(bytes([ch]))
                d = slow.recv(64)
                if d or d == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        slow.settimeout(30)
        try:
            resp = d + recv_all(slow)
        except OSError:
            resp = b""
        check(resp.startswith(b"HTTP/1.1 400 "), "slowloris: 400 at the head deadline", resp)
        slow.close()

        out, err = r.end()
        eg = r.egress()
        denies = [e for e in eg if not e["allowed"]]
        rules = " | ".join(e.get("rule", "") for e in denies)
        check(any(e["host"] == "blocked.invalid" and e["layer"] == "machine" for e in denies),
              "the denied host is recorded with its layer", rules)
        check(any(e["port"] == 22 for e in denies), "the port denial is recorded")
        check(not any(e["port"] == 1 for e in eg), "the slowloris client left no event")
        check(sum("credentials" in e.get("rule", "") for e in denies) == 2,
              "both 407s are recorded", rules)
        for part in ("does not match CONNECT host 'localhost'", "unverifiable TLS ClientHello",
                     "incomplete TLS ClientHello"):
            check(part in rules, f"recorded: {part}", rules)
        check(sum(1 for e in eg if e["allowed"]) >= 1003, "every allowed tunnel is recorded")
        check(any(e["allowed"] and e.get("via") == "http" for e in eg),
              "the plain-HTTP allow is recorded")

        # Without the allowance, the SSRF guard refuses every local target.
        r = Run(s)
        refused = True
        for t in ("localhost:443", "127.0.0.1:443", "[::1]:443", "169.254.169.254:80",
                  "[::ffff:169.254.169.254]:443", "[2002:a9fe:a9fe::]:443", "10.0.0.1:443",
                  "2130706433:443"):
            c, head = r.connect(t)
            refused = refused and head.startswith("HTTP/1.1 403 ")
            c.close()
        out, err = r.end()
        eg = r.egress()
        check(refused and len(eg) == 8 and all("SSRF guard" in e["rule"] for e in eg),
              "loopback, private, link-local and mapped targets are refused (SSRF guard)",
              [e.get("rule") for e in eg])
    echo.stop = True
    done()


if __name__ == "__main__":
    main()
