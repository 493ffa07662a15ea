"""Interop: the official TypeScript SDK's StreamableHTTPClientTransport
(sdk_session.mjs) connects to `agentstack mcp --listen` (docs/gateway.md,
"Serving over HTTP") in front of the real @modelcontextprotocol/
server-everything, with the bearer token of --token-file.

It initializes, lists the tools (transparent: the policy-allowed upstream
tools beside the control plane), calls `everything__echo` (the answer byte
for byte, one audit row), 8 concurrent calls, a policy denial with the exact
text, and ends the session with the SDK's terminateSession (DELETE), after
which the session id is 404. Two SDK clients run at once and get separate
sessions. A client without the token cannot connect (401). SIGTERM then
stops the gateway with exit 0 and no upstream process left.

Runs inside a loopback-only network namespace with a temporary HOME and
AGENTSTACK_HOME (the helpers of test_gateway_sdk.py). Needs root, AS_BIN and
the interop cache (tests/interop/setup_clis.sh); exits 77 loudly without.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_gateway_sdk as G  # noqa: E402
from aslib import BIN, Sandbox, check, done  # noqa: E402


class Listening:
    def __init__(self, sb, env):
        self.token_file = os.path.join(sb.root, "http.token")
        self.p = subprocess.Popen([os.path.realpath(BIN), "mcp", "--manifest-dir", sb.project,
                                   "--transparent", "--listen", "127.0.0.1:0", "--token-file",
                                   self.token_file],
                                  cwd=sb.project, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.err = []
        self.port = None
        for raw in self.p.stderr:
            line = raw.decode("utf-8", "replace")
            self.err.append(line)
            m = re.search(r"at http://127\.0\.0\.1:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.p.wait(G.WAIT)
            raise RuntimeError("the gateway did not listen: " + "".join(self.err))
        self.t = threading.Thread(target=lambda: self.err.extend(
            r.decode("utf-8", "replace") for r in self.p.stderr), daemon=True)
        self.t.start()
        with open(self.token_file) as f:
            self.token = f.read().strip()
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(G.WAIT)
        self.t.join(G.WAIT)
        return rc


def post_status(port, token, sid):
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
    s = socket.create_connection(("127.0.0.1", port), G.WAIT)
    try:
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                  token.encode() + b"\r\nContent-Type: application/json\r\n"
                  b"Accept: application/json\r\nMcp-Session-Id: " + sid.encode() +
                  b"\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
    finally:
        s.close()
    return int(data.split(b" ")[1]) if data else 0


def main():
    G.need(G.SDK, G.SDK_SESSION)
    G.enter_lonet()
    with Sandbox() as sb:
        G.write_project(sb, "stdio")
        env = G.peer_env(sb)
        gw = Listening(sb, env)
        auth = {"Authorization": "Bearer " + gw.token}
        many = [{"message": f"m{i}"} for i in range(8)]
        rep = G.sdk_session(env, {"url": gw.url, "headers": auth, "terminate": True, "steps": [
            {"op": "list"},
            {"op": "call", "name": "everything__echo", "arguments": {"message": G.ECHO_MSG}},
            {"op": "callMany", "name": "everything__echo", "arguments": many},
            {"op": "call", "name": "everything__get-env"},
            {"op": "ping"},
        ]}, sb.project)
        check("connectError" not in rep, "the SDK's StreamableHTTPClientTransport connects",
              rep.get("connectError"))
        check(rep.get("protocolVersion") == "2025-11-25" and
              (rep.get("serverInfo") or {}).get("name") == "agentstack",
              "initialize over HTTP negotiates the SDK's revision", rep.get("protocolVersion"))
        st = rep.get("steps", [])
        names = [t["name"] for t in ((st[0].get("result") or {}).get("tools", []) if st else [])]
        check("everything__echo" in names and "agentstack_list" in names and
              "everything__get-env" not in names,
              "tools/list: the allowed upstream tools beside the control plane", names)
        echo = st[1].get("result") if len(st) > 1 else None
        check(G.text_of(echo) == "Echo: " + G.ECHO_MSG, "everything__echo, byte for byte", echo)
        got = [G.text_of(r) for r in (st[2].get("result") or [])] if len(st) > 2 else []
        check(got == ["Echo: " + m["message"] for m in many],
              "8 concurrent calls over one HTTP session, each its own answer", got)
        deny = st[3].get("result") if len(st) > 3 else None
        check(G.text_of(deny).startswith(G.DENY_PROJECT) and (deny or {}).get("isError"),
              "a policy denial over HTTP has the stdio text", G.text_of(deny))
        check(len(st) > 4 and "error" not in st[4], "ping", st[4:5])
        rows = [r for r in G.audit_rows(sb) if r.get("tool") == "echo"]
        check(len(rows) == 9 and all(r["outcome"] == "ok" for r in rows),
              "every echo has its audit row", len(rows))
        sid = rep.get("sessionId") or ""
        check(rep.get("terminated") is True and len(sid) == 32,
              "terminateSession (DELETE) ends the session", rep.get("terminated"))
        check(post_status(gw.port, gw.token, sid) == 404, "…and its id is 404 after")

        # two SDK clients at once: separate sessions
        spec = json.dumps({"url": gw.url, "headers": auth, "terminate": True,
                           "steps": [{"op": "call", "name": "everything__echo",
                                      "arguments": {"message": "two"}}]})
        procs = [subprocess.Popen([G.NODE22, G.SDK_SESSION, spec], env=env, cwd=sb.project,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        reps = []
        for p in procs:
            out, _ = p.communicate(timeout=G.WAIT)
            try:
                reps.append(json.loads(out.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                reps.append({"connectError": out[-500:]})
        sids = {r.get("sessionId") for r in reps}
        check(all("connectError" not in r for r in reps) and len(sids) == 2 and
              all(G.text_of(r["steps"][0].get("result")) == "Echo: two" for r in reps),
              "two SDK clients at once get two sessions and their own answers", reps)

        bad = G.sdk_session(env, {"url": gw.url, "steps": [{"op": "list"}]}, sb.project)
        check("Unauthorized" in (bad.get("connectError") or ""),
              "an SDK client without the token cannot connect (401)", bad.get("connectError"))
        rc = gw.stop()
        check(rc == 0, "SIGTERM stops the gateway, exit 0", "".join(gw.err)[-1500:])
        left = G.leftover_upstreams(sb.project)
        check(not left, "no upstream process outlives the gateway", left)
    done()


if __name__ == "__main__":
    main()
