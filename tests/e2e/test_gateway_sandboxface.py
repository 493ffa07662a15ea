"""The gateway's sandbox face (docs/gateway.md): the HTTP door a confined harness uses
to reach the project's servers through the gateway running outside the
sandbox. The run hands `agentstack mcp --grant` a listening socket and a token
(AGENTSTACK_GATEWAY_FACE_FD/_TOKEN); this test plays the run: it freezes a
grant the way sandbox/sbx_host.c does, starts the gateway with the socket, and
speaks MCP over HTTP. Proven here: the token is required (401), only POST /mcp
(405/404) and ≤ 4 MiB (413); initialize names `agentstack-gateway`; tools/list
carries proxied, policy-filtered tools only (no control plane); tools/call goes
through the one dispatch (frozen machine rule denies, fence refuses, audit row
with the run id); control-plane and unknown names get the fixed refusal; and
without a grant the face is not served at all."""
import hashlib
import http.client
import json
import os
import secrets
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, write_anchor  # noqa: E402
from mcpclient import FAKE, audit_rows, grant, run_process  # noqa: E402

RUN = "r-face-test-1"
MACHINE = 'version = 1\n\n[policy.tools]\n"*" = ["!delete_*"]\n'


def manifest(marker):
    return f"""version = 1

[servers.ops]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "get_status,delete_everything,get_slow", "--hang", "get_slow",
        "--marker", "{marker}"]

[servers.other]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "exfiltrate", "--marker", "{marker}"]

[toolsets.ops]
servers = ["ops"]
"""


def chain(rows):
    out, prev = [], "0" * 64
    for r in rows:
        r = dict(r)
        r["prev"] = prev
        line = json.dumps(r, separators=(",", ":"), ensure_ascii=False)
        out.append(line)
        prev = hashlib.sha256(line.encode()).hexdigest()
    return "".join(line + "\n" for line in out)


def freeze(sb, consent, ruleset):
    d = os.path.join(sb.ah, "runs", RUN)
    os.makedirs(d, mode=0o700, exist_ok=True)
    g = {"version": 1, "kind": "agentstack-run-grant", "run_id": RUN, "harness": "claude",
         "project_root": os.path.realpath(sb.project), "manifest_dir": sb.project,
         "manifest": os.path.join(sb.project, "agentstack.toml"), "consent_digest": consent,
         "toolset": "ops", "fence": {"servers": ["ops"], "skills": []},
         "servers": {}, "ruleset": ruleset, "argv": ["claude"], "binary": "/usr/bin/claude"}
    data = (json.dumps(g, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            + "\n").encode()
    path = os.path.join(d, "grant.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.close(fd)
    rows = [{"event": "attempt_started", "ts": 1, "harness": "claude",
             "posture": "sandbox"},
            {"event": "grant_frozen", "ts": 1,
             "grant_digest": "sha256:" + hashlib.sha256(data).hexdigest(), **run_process()}]
    ev = os.path.join(d, "events.jsonl")
    with open(ev, "w") as f:
        f.write(chain(rows))
    os.chmod(ev, 0o600)
    write_anchor(sb.ah, ev)
    return path


class Face:
    """`agentstack mcp <args>` with a loopback listener handed over like a run does."""

    def __init__(self, sb, *args, token=None):
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.token = token or secrets.token_hex(32)
        env = sb.env(AGENTSTACK_GATEWAY_FACE_FD=str(self.lsock.fileno()),
                     AGENTSTACK_GATEWAY_FACE_TOKEN=self.token, AGENTSTACK_RUN_ID=RUN)
        self.proc = subprocess.Popen([BIN, "mcp", *args], cwd=sb.project, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, pass_fds=(self.lsock.fileno(),))
        # Only the gateway holds the door from here: if it does not serve it, it is closed.
        self.lsock.close()
        self.next = 1

    def post(self, body, token="__default__", path="/mcp", method="POST", raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token == "__default__":
            token = self.token
        if token is not None:
            h["X-Agentstack-Token"] = token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = r.read()
        c.close()
        try:
            return r.status, json.loads(out) if out else None
        except ValueError:
            return r.status, out

    def head_only(self, length):
        """Sends only the headers of a request announcing `length` bytes."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        s.sendall((f"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Agentstack-Token: {self.token}\r\n"
                   f"Content-Length: {length}\r\n\r\n").encode())
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        return int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1 ") else data

    def rpc(self, method, params=None, token="__default__"):
        rid = self.next
        self.next += 1
        return self.post({"jsonrpc": "2.0", "id": rid, "method": method,
                          "params": params or {}}, token=token)

    def call(self, name, args=None):
        st, body = self.rpc("tools/call", {"name": name, "arguments": args or {}})
        return st, body.get("result", body) if isinstance(body, dict) else body

    def close(self):
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err.decode("utf-8", "replace")


def text(r):
    try:
        return "".join(c.get("text", "") for c in r.get("content", []))
    except AttributeError:
        return str(r)


def setup(sb):
    marker = os.path.join(sb.root, "spawned")
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    sb.write("agentstack.toml", manifest(marker))
    sb.write("fake.py", FAKE)
    grant(sb)
    consent = json.loads(sb.run("trust", ".", "--preview").stdout)["surface_digest"]
    ruleset = json.loads(sb.run("policy", "ruleset").stdout)
    return freeze(sb, consent, ruleset)


def served():
    with Sandbox() as sb:
        path = setup(sb)
        f = Face(sb, "--grant", path)
        st, init = f.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "1"}})
        info = (init or {}).get("result", {}).get("serverInfo", {})
        check(st == 200 and info.get("name") == "agentstack-gateway"
              and init["result"].get("protocolVersion") == "2025-06-18",
              "face: initialize answers as agentstack-gateway", init)
        st, _ = f.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        check(st == 202, "face: a notification is accepted (202, stateless)", st)
        st, lst = f.rpc("tools/list")
        names = [t["name"] for t in (lst or {}).get("result", {}).get("tools", [])]
        check(st == 200 and "ops__get_status" in names and "ops__delete_everything" not in names
              and all(n.startswith("ops__") for n in names),
              "face: tools/list = the fence's policy-allowed tools, no control plane", names)
        st, r = f.call("ops__get_status", {"token": "never-logged-7731"})
        check(st == 200 and not r.get("isError") and text(r) == "get_status: ok",
              "face: a proxied tool is brokered", r)
        st, r = f.call("ops__delete_everything")
        check(st == 200 and r.get("isError") and "!delete_*" in text(r)
              and "machine policy" in text(r), "face: the frozen machine rule denies", r)
        st, r = f.call("other__exfiltrate")
        check(r.get("isError") and "exfiltrate: ok" not in text(r),
              "face: a server outside the fence is refused", r)
        for name in ("agentstack_lease_status", "tools_search", "agentstack_lease_open"):
            st, r = f.call(name)
            check(st == 200 and r.get("isError") and text(r) ==
                  f"Error: '{name}' is not a proxied tool for this project",
                  f"face: {name} is not a proxied tool", r)
        st, r = f.rpc("tools/list", token=None)
        check(st == 401, "face: no token → 401", st)
        st, r = f.rpc("tools/list", token=secrets.token_hex(32))
        check(st == 401, "face: a wrong token → 401", st)
        st, r = f.post(None, method="GET")
        check(st == 405, "face: GET → 405 (stateless, no SSE stream)", st)
        st, r = f.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, path="/call")
        check(st == 404, "face: only /mcp is served", st)
        st = f.head_only((4 << 20) + 1)
        check(st == 413, "face: a body over 4 MiB → 413 (before it is read)", st)
        st, r = f.post(None, raw=b"[1,2]")
        check(st == 400, "face: a batch → 400", r)
        st, r = f.rpc("resources/list")
        check(st == 200 and r.get("error", {}).get("code") == -32601,
              "face: other methods → method not found", r)
        # 64 calls in flight (a tool that never answers), then the 65th is refused.
        held = []
        for i in range(64):
            c = socket.create_connection(("127.0.0.1", f.port), timeout=30)
            body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                               "params": {"name": "ops__get_slow", "arguments": {}}}).encode()
            c.sendall((f"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Agentstack-Token: {f.token}\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            held.append(c)
        got = None
        for _ in range(2000):  # until the gateway has read all 64 heads
            st, _ = f.rpc("ping")
            if st == 503:
                got = st
                break
        check(got == 503, "face: past 64 calls in flight → 503", got)
        for c in held:
            c.close()
        rc, err = f.close()
        check(rc == 0, "face: the gateway exits 0 on stdin EOF", err)
        rows = audit_rows(sb)
        mine = [r for r in rows if r.get("tool") in ("get_status", "delete_everything")]
        check(len(mine) == 2 and all(r.get("run_id") == RUN or r.get("run") == RUN
                                     for r in mine)
              and {r.get("outcome") for r in mine} == {"ok", "denied"},
              "face: calls are audited with the run id", mine)
        check("never-logged-7731" not in json.dumps(rows), "face: arguments are not logged")


def not_served_without_grant():
    with Sandbox() as sb:
        setup(sb)
        f = Face(sb, "--manifest-dir", sb.project)
        try:
            st, _ = f.rpc("tools/list")
            ok = False
        except (ConnectionError, OSError):
            ok = True
        rc, err = f.close()
        check(ok and "sandbox face: not served" in err and "--grant" in err,
              "face: without --grant the socket is closed, not served", err)
    with Sandbox() as sb:
        path = setup(sb)
        f = Face(sb, "--grant", path, token="short")
        try:
            f.rpc("tools/list")
            ok = False
        except (ConnectionError, OSError):
            ok = True
        rc, err = f.close()
        check(ok and "64 lowercase hex" in err, "face: a malformed token serves nothing", err)


served()
not_served_without_grant()
done()
