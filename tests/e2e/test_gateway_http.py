"""`agentstack mcp --listen` (docs/gateway.md, "Serving over HTTP"), written
as the attacks first: no token and a wrong token are 401, a foreign Origin
or Host is 403, an unknown session id is 404, a missing session id 400, a
wrong method 405, an unsupported MCP-Protocol-Version 400; request
smuggling (Transfer-Encoding, two Content-Lengths), an oversized body and a
flood of connections that never finish their heads get nowhere, and the
next valid request is still answered. A non-loopback bind, a token file
other users may read and a symlinked token file are refused before
anything listens. Then the happy path: initialize, tools/list, tools/call
through HTTP with its audit row; the SSE answer mode; the GET stream with
tools/list_changed and its replay by Last-Event-ID; two sessions at once
with separate lease state, one of them stuck on a call that never answers
while the other is served; DELETE ends a session (404 after). No assertion
depends on timing."""
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from httpgw import HttpGateway  # noqa: E402
from mcpclient import FAKE, audit_rows, grant  # noqa: E402

MANIFEST = """version = 1

[servers.ops]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "get_status,stuck", "--hang", "stuck"]

[toolsets.narrow]
servers = []
skills = []

[toolsets.wide]
servers = ["ops"]
skills = []
"""


def project(sb):
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml", MANIFEST)
    grant(sb)


def rpc(rid, method, params=None):
    m = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return m


def call(rid, name, args=None):
    return rpc(rid, "tools/call", {"name": name, "arguments": args or {}})


def text_of(resp):
    return "".join(c.get("text", "") for c in resp["result"]["content"])


def refusals():
    with Sandbox() as sb:
        project(sb)
        # refused before anything listens
        r = sb.run("mcp", "--listen", "0.0.0.0:0", "--token-file", os.path.join(sb.root, "t"))
        check(r.returncode == 1 and "not a loopback address" in r.stderr and
              "--listen-any" in r.stderr, "a non-loopback bind is refused (names --listen-any)",
              r.stderr)
        tf = os.path.join(sb.root, "open.token")
        with open(tf, "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        os.chmod(tf, 0o644)
        r = sb.run("mcp", "--listen", "127.0.0.1:0", "--token-file", tf)
        check(r.returncode == 1 and "refusing the token file" in r.stderr and
              "mode 644" in r.stderr, "a 0644 token file is refused", r.stderr)
        os.chmod(tf, 0o600)
        ln = os.path.join(sb.root, "link.token")
        os.symlink(tf, ln)
        r = sb.run("mcp", "--listen", "127.0.0.1:0", "--token-file", ln)
        check(r.returncode == 1 and "symlink" in r.stderr, "a symlinked token file is refused",
              r.stderr)
        r = sb.run("mcp", "--listen", "127.0.0.1:0")
        check(r.returncode == 2 and "--token-file" in r.stderr,
              "--listen without --token-file is a usage error", r.stderr)
        r = sb.run("mcp", "--listen-any")
        check(r.returncode == 2, "--listen-any alone is a usage error", r.stderr)


def attacks():
    with Sandbox() as sb:
        project(sb)
        with HttpGateway(sb, "--manifest-dir", sb.project) as g:
            st = os.stat(g.token_file).st_mode & 0o777
            check(st == 0o600 and len(g.token) == 64, "the token file is created 0600", oct(st))
            init = rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "x", "version": "1"}})
            s, hd, body = g.post(init, auth=False)
            check(s == 401 and hd.get("www-authenticate", "").startswith("Bearer") and
                  "mcp-session-id" not in hd, "no token → 401, no session", (s, hd))
            s, hd, _ = g.post(init, auth=False,
                              extra={"Authorization": "Bearer " + "0" * 64})
            check(s == 401, "a wrong token of the right length → 401", s)
            s, hd, _ = g.post(init, auth=False, extra={"Authorization": "Bearer " + g.token[:-1]})
            check(s == 401, "a token cut short → 401", s)
            s, hd, _ = g.post(init, auth=False, extra={"Authorization": "Basic " + g.token})
            check(s == 401, "not a Bearer scheme → 401", s)
            st_, _, _ = g.raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              b"Content-Type: application/json\r\n"
                              b"Content-Length: 4000000\r\n\r\n")
            check(st_ == 401, "no token → 401 from the head alone: a body is never waited "
                  "for (nor read) before the token is shown", st_)
            s, hd, _ = g.post(init, extra={"Origin": "http://evil.example"})
            check(s == 403 and "mcp-session-id" not in hd, "a foreign Origin → 403", s)
            s, _, _ = g.post(init, extra={"Origin": "null"})
            check(s == 403, "Origin: null → 403", s)
            s, _, _ = g.post(init, extra={"Origin": "http://localhost.evil.example:80"})
            check(s == 403, "a look-alike of localhost → 403", s)
            s, _, _ = g.post(init, extra={"Host": "evil.example:%d" % g.port})
            check(s == 403, "a rebound Host name → 403 (DNS rebinding)", s)
            s, _, _ = g.post(rpc(2, "tools/list"), sid="0" * 32)
            check(s == 404, "an unknown session id → 404", s)
            s, _, _ = g.post(rpc(2, "tools/list"), sid="not-even-hex")
            check(s == 404, "a malformed session id → 404", s)
            s, _, body = g.post(rpc(2, "tools/list"))
            check(s == 400 and "Mcp-Session-Id" in json.dumps(body),
                  "no session id on a request other than initialize → 400", body)
            s, _, _ = g.request("PUT", b"{}")
            check(s == 405, "PUT → 405", s)
            s, _, _ = g.request("GET")
            check(s == 400, "GET without a session → 400", s)
            st_, sid, _ = g.initialize()
            check(st_ == 200 and sid and len(sid) == 32, "a valid initialize opens a session")
            s, _, _ = g.post(rpc(3, "tools/list"), sid=sid,
                             extra={"MCP-Protocol-Version": "1999-01-01"})
            check(s == 400, "an unsupported MCP-Protocol-Version → 400", s)
            s, _, _ = g.post(rpc(3, "tools/list"), sid=sid, extra={"Content-Type": "text/plain"})
            check(s == 415, "a body that is not application/json → 415", s)
            s, _, _ = g.post(rpc(3, "tools/list"), sid=sid, accept="text/html")
            check(s == 406, "an Accept without JSON or SSE → 406", s)
            s, _, body = g.post([rpc(3, "ping")], sid=sid)
            check(s == 400 and "batches" in json.dumps(body), "a batch → 400", body)
            for raw, code, what in [
                (b'{"jsonrpc":"1.0","id":5,"method":"ping"}', -32600, "not JSON-RPC 2.0"),
                (b'{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}', -32600, "a duplicate key"),
                (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":"\\u0000"}}', -32700,
                 "a NUL escape"),
                (b'{"jsonrpc":"2.0","id":5,', -32700, "cut-off JSON"),
            ]:
                s, _, body = g.post(raw, sid=sid)
                check(s == 400 and isinstance(body, dict) and body["error"]["code"] == code,
                      f"a body the gateway cannot use ({what}) → 400 with its JSON-RPC error, "
                      "never a POST left waiting", (s, body))
            smuggling(g, sid)
            flood(g, sid)
            pipelined(g, sid)
        slowloris(sb)
        capped(sb)


def smuggling(g, sid):
    body = json.dumps(rpc(9, "ping")).encode()
    base = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            "Mcp-Session-Id: %s\r\n" % (g.token, sid)).encode()
    cases = [
        (b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n",
         501, "Transfer-Encoding: chunked → 501, the body is never read as a request"),
        (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(body) + body,
         501, "Content-Length and Transfer-Encoding → 501"),
        (b"Content-Length: %d\r\nContent-Length: 0\r\n\r\n" % len(body) + body,
         400, "two Content-Lengths → 400"),
        (b"Content-Length : %d\r\n\r\n" % len(body) + body, 400,
         "space before the colon → 400"),
        (b"X-A: 1\r\n Content-Length: 5\r\n\r\n", 400, "a folded line → 400"),
        (b"Content-Length: %d\n\n" % len(body) + body, 400, "bare LF line ends → 400"),
        (b"Content-Length: 4194305\r\n\r\n", 413, "a body over 4 MiB → 413, unread"),
        (b"X-Pad: " + b"a" * 17000 + b"\r\n\r\n", 431, "a head over 16 KiB → 431"),
    ]
    for extra, want, what in cases:
        s = g.connect()
        try:
            st, _, _ = g.raw(base + extra, sock=s)
            s.settimeout(10)
            try:
                tail = s.recv(65536)
            except OSError:
                tail = b""
        finally:
            s.close()
        check(st == want and b"HTTP/1.1 200" not in tail, what, (st, tail[:80]))
    # a smuggled second request inside a body is only a body
    inner = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}").encode()
    st, _, b = g.raw(base + b"Content-Length: %d\r\n\r\n" % len(inner) + inner)
    check(st == 400 and "Parse error" in b, "a request inside a body is a malformed body, not a "
          "request", (st, b))
    s, _, body = g.post(rpc(10, "ping"), sid=sid)
    check(s == 200 and body["id"] == 10, "the next valid request is answered", body)


def flood(g, sid):
    held = []
    for _ in range(80):  # beyond the 32 connections that may wait without a token
        s = g.connect()
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        held.append(s)
    try:
        s, _, body = g.post(rpc(11, "ping"), sid=sid)
        check(s == 200 and body["id"] == 11,
              "80 connections that never finish their heads do not keep a valid request out",
              (s, body))
    finally:
        for s in held:
            s.close()


def slowloris(sb):
    """A head dripped one byte at a time never finishes: the connection is
    closed at its request deadline (shortened here) however often bytes
    come, and a valid request on another connection is answered meanwhile."""
    with HttpGateway(sb, "--manifest-dir", sb.project,
                     env=sb.env(AGENTSTACK_HTTP_REQUEST_MS="300")) as g:
        s = g.connect()
        s.settimeout(0.05)
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100000
        closed, sent = False, 0
        try:
            for i in range(len(head)):  # up to ~5000 s of dripping: ends at the deadline
                s.send(head[i:i + 1])
                sent += 1
                try:
                    if s.recv(1) == b"":
                        closed = True
                        break
                except socket.timeout:
                    pass
        except OSError:
            closed = True
        finally:
            s.close()
        check(closed and sent < 16384, "a head dripped byte by byte is cut at its deadline, "
              "not kept alive by every byte", sent)
        st, _, _ = g.initialize()
        check(st == 200, "the server still serves", st)


def capped(sb):
    """32 sessions at most: a 33rd initialize ends the least recently used
    idle one (its id is 404 after), and the others keep working."""
    with HttpGateway(sb, "--manifest-dir", sb.project) as g:
        sids = []
        for _ in range(32):
            st, sid, _ = g.initialize()
            sids.append(sid if st == 200 else None)
        for sid in sids[1:]:
            g.post(rpc(5, "ping"), sid=sid)  # the first is now the least recently used
        st, extra, _ = g.initialize()
        codes = [g.post(rpc(6, "ping"), sid=x)[0] for x in sids]
        check(all(sids) and st == 200 and extra not in sids,
              "32 sessions, then a 33rd initialize still opens one", st)
        check(codes[0] == 404 and set(codes[1:]) == {200},
              "…by ending the least recently used idle session (404), no other", codes)
        check(g.stop() == 0, "SIGTERM with 32 sessions open: exit 0", g.stderr()[-800:])


def pipelined(g, sid, msgs=None, what="three pipelined requests on one connection are "
              "answered in order"):
    msgs = msgs or [rpc(12, "ping"), rpc(13, "ping"), rpc(14, "ping")]
    one = b""
    for m in msgs:
        body = json.dumps(m).encode()
        one += ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/json\r\nAccept: application/json\r\n"
                "Mcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n"
                % (g.token, sid, len(body))).encode() + body
    want = [(200, m["id"]) for m in msgs]
    s = g.connect()
    try:
        s.sendall(one)
        data, got = b"", []
        while len(got) < len(msgs):
            head, sep, rest = data.partition(b"\r\n\r\n")
            n = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]) if sep else -1
            if sep and len(rest) >= n:
                got.append((int(head.split(b" ")[1]), json.loads(rest[:n])["id"]))
                data = rest[n:]
                continue
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    check(got == want, what, got)


def happy():
    with Sandbox() as sb:
        project(sb)
        with HttpGateway(sb, "--manifest-dir", sb.project) as g:
            s, sid, body = g.initialize()
            check(s == 200 and body["result"]["protocolVersion"] == "2025-06-18" and
                  body["result"]["serverInfo"]["name"] == "agentstack",
                  "initialize over HTTP (JSON answer)", body)
            s, hd, body = g.post(rpc(2, "tools/list"), sid=sid)
            names = [t["name"] for t in body["result"]["tools"]]
            check(s == 200 and hd.get("content-type") == "application/json" and
                  "agentstack_lease_open" in names and hd.get("mcp-session-id") == sid,
                  "tools/list answered as application/json", names)
            s, _, body = g.post(call(5, "agentstack_lease_open", {"profile": "wide"}), sid=sid)
            check(s == 200 and not body["result"].get("isError"), "lease_open over HTTP", body)
            pipelined(g, sid, [call(6, "ops__get_status"), rpc(7, "ping"),
                               call(8, "ops__get_status")],
                      "pipelined calls that wait on an upstream are answered in order")
            s, _, body = g.post(call(3, "ops__get_status"), sid=sid)
            check(s == 200 and text_of(body) == "get_status: ok",
                  "tools/call through HTTP reaches the upstream", body)
            rows = [r for r in audit_rows(sb) if r.get("tool") == "get_status"]
            check(len(rows) == 3 and rows[0]["server"] == "ops" and
                  rows[0]["outcome"] == "ok", "the call has its audit row (gw_dispatch)", rows)
            # SSE answer mode
            rd, st, hd = g.open_stream("POST", call(4, "ops__get_status"), sid=sid,
                                       accept="text/event-stream")
            prime = rd.next()
            ans = rd.next()
            end = rd.next()
            rd.close()
            check(st == 200 and hd.get("content-type") == "text/event-stream" and
                  prime[0] and prime[1] == "", "an SSE answer opens with a priming event id",
                  (st, hd, prime))
            check(ans and json.loads(ans[1])["id"] == 4 and
                  text_of(json.loads(ans[1])) == "get_status: ok" and
                  int(ans[0]) > int(prime[0]) and end is None,
                  "…then the response as one event, then the stream ends", (ans, end))
            resume(g, sid)
            streams(g, sid)
            two_sessions(g, sb, sid)
            s, _, _ = g.request("DELETE", sid=sid)
            check(s == 200, "DELETE ends the session", s)
            s, _, _ = g.post(rpc(90, "ping"), sid=sid)
            check(s == 404, "a request to a deleted session → 404", s)
            s, _, _ = g.request("DELETE", sid=sid)
            check(s == 404, "deleting it again → 404", s)
            rc = g.stop()
            check(rc == 0, "SIGTERM stops the server, exit 0", g.stderr())


def resume(g, sid):
    """An SSE answer whose connection drops before the response is resumed
    by a GET with the priming event's id: the response comes there."""
    rd, st, _ = g.open_stream("POST", call(50, "ops__sleep", {"ms": 1500}), sid=sid,
                              accept="text/event-stream")
    prime = rd.next()
    rd.close()  # gone before the answer
    check(st == 200 and prime and prime[1] == "", "an SSE answer is primed", prime)
    rd, st, _ = g.open_stream("GET", sid=sid, accept="text/event-stream",
                              extra={"Last-Event-ID": prime[0]})
    ev = rd.next()
    end = rd.next()
    rd.close()
    got = json.loads(ev[1]) if ev and ev[1] else {}
    check(st == 200 and got.get("id") == 50 and "result" in got and end is None,
          "GET with its Last-Event-ID gets the dropped stream's response, then it ends", ev)
    rows = [r for r in audit_rows(g.sb) if r.get("tool") == "sleep"]
    check(len(rows) == 1 and rows[0]["outcome"] == "ok", "the resumed call's audit row", rows)


def streams(g, sid):
    rd, st, hd = g.open_stream("GET", sid=sid, accept="text/event-stream")
    check(st == 200 and hd.get("content-type") == "text/event-stream", "GET opens the stream")
    queued = []
    prime = rd.next()
    while prime and prime[1]:
        queued.append(json.loads(prime[1])["method"])
        prime = rd.next()
    check(queued == ["notifications/tools/list_changed"],
          "a notification sent while no stream was open comes when the GET stream opens",
          queued)
    check(prime and prime[0], "…then an event id primes the stream", prime)
    s2, _, _ = g.request("GET", sid=sid, accept="text/event-stream")
    check(s2 == 409, "a second GET stream of one session → 409", s2)
    s, _, body = g.post(call(20, "agentstack_lease_open", {"profile": "narrow"}), sid=sid)
    check(s == 200 and not body["result"].get("isError"), "a lease swap over HTTP", body)
    ev = rd.next()
    check(ev and json.loads(ev[1])["method"] == "notifications/tools/list_changed",
          "tools/list_changed arrives on the GET stream", ev)
    rd.close()
    last = ev[0]
    # while no stream is open, the next notification is kept
    s, _, body = g.post(call(21, "agentstack_lease_open", {"profile": "wide"}), sid=sid)
    check(s == 200 and not body["result"].get("isError"), "…and back", body)
    rd, st, _ = g.open_stream("GET", sid=sid, accept="text/event-stream",
                              extra={"Last-Event-ID": last})
    ev = rd.next()
    check(st == 200 and ev and json.loads(ev[1])["method"] ==
          "notifications/tools/list_changed" and int(ev[0]) > int(last),
          "GET with Last-Event-ID replays what followed it", ev)
    rd.close()


def two_sessions(g, sb, sid_a):
    s, sid_b, _ = g.initialize()
    check(s == 200 and sid_b and sid_b != sid_a, "a second session on the same server")
    s, _, _ = g.post(call(30, "agentstack_lease_open", {"profile": "narrow"}), sid=sid_b)
    sa = json.loads(text_of(g.post(call(31, "agentstack_lease_status"), sid=sid_a)[2]))
    sbs = json.loads(text_of(g.post(call(32, "agentstack_lease_status"), sid=sid_b)[2]))
    check(sbs.get("active") is True and sbs.get("profile") == "narrow" and
          sa.get("active") is True and sa.get("profile") == "wide",
          "each session has its own lease", (sa, sbs))
    # session A is stuck on a call that never answers; B is still served
    stuck = {}

    def hang():
        stuck["r"] = g.post(call(33, "ops__stuck"), sid=sid_a)

    t = threading.Thread(target=hang, daemon=True)
    t.start()
    names = []
    for rid in range(40, 43):
        s, _, body = g.post(rpc(rid, "tools/list"), sid=sid_b)
        names.append(s)
    check(names == [200, 200, 200] and "r" not in stuck,
          "a stuck call in one session does not block another's requests", names)
    s, _, _ = g.request("DELETE", sid=sid_b)
    check(s == 200, "DELETE the second session", s)
    rows = [r for r in audit_rows(sb) if r.get("tool") == "stuck"]
    check(len(rows) == 0, "(the stuck call is still in flight)", rows)


if __name__ == "__main__":
    refusals()
    attacks()
    happy()
    done()
