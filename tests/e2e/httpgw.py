"""`agentstack mcp --listen 127.0.0.1:0` for the tests: starts it, reads the
port from its `serving MCP over HTTP at …` note, and speaks raw HTTP/1.1 to
it over loopback (one connection per request unless the caller keeps one).
Nothing here waits on a clock beyond the generous socket timeouts."""
import json
import os
import re
import signal
import socket
import subprocess
import threading

from aslib import BIN

TIMEOUT = 60


class HttpGateway:
    def __init__(self, sb, *args, token_file=None, env=None):
        self.sb = sb
        self.token_file = token_file or os.path.join(sb.root, "http.token")
        self.p = subprocess.Popen(
            [BIN, "mcp", *args, "--listen", "127.0.0.1:0", "--token-file", self.token_file],
            cwd=sb.project, env=env or sb.env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.err = []
        self.port = None
        for raw in self.p.stderr:
            line = raw.decode("utf-8", "replace")
            self.err.append(line)
            m = re.search(r"serving MCP over HTTP at http://127\.0\.0\.1:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.p.wait(timeout=TIMEOUT)
            raise RuntimeError("the gateway did not start: " + "".join(self.err))
        self.t = threading.Thread(target=self._drain, daemon=True)
        self.t.start()
        with open(self.token_file) as f:
            self.token = f.read().strip()

    def _drain(self):
        for raw in self.p.stderr:
            self.err.append(raw.decode("utf-8", "replace"))

    def stderr(self):
        return "".join(self.err)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=TIMEOUT)
        self.t.join(timeout=TIMEOUT)
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *a):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    # ---- raw HTTP ----------------------------------------------------------
    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)

    def headers(self, sid=None, accept="application/json, text/event-stream", auth=True,
                extra=None):
        h = {"Host": "127.0.0.1:%d" % self.port, "Content-Type": "application/json",
             "Accept": accept}
        if auth:
            h["Authorization"] = "Bearer " + self.token
        if sid:
            h["Mcp-Session-Id"] = sid
            h["MCP-Protocol-Version"] = "2025-06-18"
        h.update(extra or {})
        return {k: v for k, v in h.items() if v is not None}

    def raw(self, data, sock=None):
        """Sends bytes, reads one whole answer: (status, headers, body)."""
        s = sock or self.connect()
        try:
            s.sendall(data)
            return read_response(s)
        finally:
            if sock is None:
                s.close()

    def request(self, method, body=None, **kw):
        sock = kw.pop("sock", None)
        h = self.headers(**kw)
        b = b"" if body is None else (body if isinstance(body, bytes)
                                      else json.dumps(body).encode())
        head = "%s /mcp HTTP/1.1\r\n" % method
        for k, v in h.items():
            head += "%s: %s\r\n" % (k, v)
        if body is not None or method == "POST":
            head += "Content-Length: %d\r\n" % len(b)
        return self.raw(head.encode() + b"\r\n" + b, sock=sock)

    def post(self, msg, **kw):
        st, hd, body = self.request("POST", msg, **kw)
        try:
            parsed = json.loads(body) if body and hd.get("content-type") == "application/json" \
                else body
        except ValueError:
            parsed = body
        return st, hd, parsed

    def initialize(self, **kw):
        st, hd, body = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"protocolVersion": "2025-06-18",
                                             "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}}},
                                 **kw)
        sid = hd.get("mcp-session-id")
        if st == 200 and sid:
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid=sid)
        return st, sid, body

    def open_stream(self, method, msg=None, **kw):
        """Sends a request whose answer is an SSE stream: (sock, status, headers)."""
        s = self.connect()
        h = self.headers(**kw)
        b = b"" if msg is None else json.dumps(msg).encode()
        head = "%s /mcp HTTP/1.1\r\n" % method
        for k, v in h.items():
            head += "%s: %s\r\n" % (k, v)
        if msg is not None:
            head += "Content-Length: %d\r\n" % len(b)
        s.sendall(head.encode() + b"\r\n" + b)
        st, hd, rest = read_head(s)
        return SseReader(s, rest), st, hd


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    if not head:
        return 0, {}, b""
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    hd = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hd[k.strip().lower()] = v.strip()
    return status, hd, rest


def read_response(s):
    st, hd, rest = read_head(s)
    if not st:
        return 0, {}, b""
    n = int(hd.get("content-length", "0"))
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return st, hd, rest[:n].decode("utf-8", "replace")


class SseReader:
    """Events of a text/event-stream body: next() → (id, data) or None at its end."""

    def __init__(self, sock, rest):
        self.s = sock
        self.buf = rest

    def next(self):
        while b"\n\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        ev, _, self.buf = self.buf.partition(b"\n\n")
        eid, data = None, []
        for ln in ev.decode("utf-8").split("\n"):
            if ln.startswith("id: "):
                eid = ln[4:]
            elif ln.startswith("data: ") or ln == "data:":
                data.append(ln[6:])
        return eid, "\n".join(data)

    def close(self):
        self.s.close()
