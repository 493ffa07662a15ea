"""Shared pieces of the confined-upstream scenarios (python3 stdlib only).

SERVER is a small stdio MCP server written into a test project as
server.py. It imports `helper` from its own directory (the module an agent
would edit) and offers:
  hello             helper.greet()
  plugins           imports every plugins/*.py and returns what run() says
  quit              answers like hello, then exits (the next call respawns it)
  probe {...}       what the process can do from where it runs: read a file,
                    connect to a TCP port, write a marker file, tunnel through
                    HTTPS_PROXY to host:port; plus its HOME, cwd and uid
Every answer is JSON text. A marker written by code the agent placed is the
attack's evidence: written to an absolute host path, it must never appear.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN  # noqa: E402

SERVER = r'''#!/usr/bin/env python3
import glob, importlib.util, json, os, socket, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helper
def probe(a):
    out = {"home": os.environ.get("HOME"), "cwd": os.getcwd(), "uid": os.getuid(),
           "pid": os.getpid(),
           "proxy": bool(os.environ.get("HTTPS_PROXY"))}
    if a.get("read"):
        try:
            out["read"] = open(a["read"]).read()
        except OSError as e:
            out["read"] = "ERR " + type(e).__name__
    if a.get("connect"):
        try:
            socket.create_connection(("127.0.0.1", int(a["connect"])), 3).close()
            out["connect"] = "CONNECTED"
        except OSError as e:
            out["connect"] = "ERR " + type(e).__name__
    if a.get("marker"):
        try:
            with open(a["marker"], "w") as f:
                f.write("written by the server\n")
            out["marker"] = "WROTE"
        except OSError as e:
            out["marker"] = "ERR " + type(e).__name__
    if a.get("tunnel"):
        out["tunnel"] = tunnel(a["tunnel"], a.get("send"))
    return out
def tunnel(target, send):
    from urllib.parse import urlsplit
    import base64
    p = os.environ.get("HTTPS_PROXY")
    if not p:
        return "NO PROXY"
    u = urlsplit(p)
    try:
        s = socket.create_connection((u.hostname, u.port), 5)
    except OSError as e:
        return "ERR " + type(e).__name__
    auth = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n"
               % (target, target, auth)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(4096)
        if not c:
            break
        head += c
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    if send and " 200 " in status:
        s.sendall(send.encode())
        body = b""
        while True:
            c = s.recv(4096)
            if not c:
                break
            body += c
        status += " | " + body.decode("latin-1")
    s.close()
    return status
def plugins():
    out = []
    for f in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "plugins", "*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(f)[:-3], f)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        out.append(m.run())
    return out
def send(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object"}}
         for n in ("hello", "plugins", "probe", "quit")]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    rid, meth, p = m.get("id"), m.get("method"), m.get("params") or {}
    if rid is None:
        continue
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif meth == "tools/call":
        n, a = p.get("name"), p.get("arguments") or {}
        try:
            r = helper.greet() if n in ("hello", "quit") else plugins() if n == "plugins" \
                else probe(a)
        except Exception as e:
            r = "EXC %s: %s" % (type(e).__name__, e)
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text",
              "text": json.dumps(r)}], "isError": False}})
        if n == "quit":
            os._exit(0)
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})
'''

HELPER = 'def greet():\n    return "hello from the reviewed helper"\n'


def evil_module(marker, tag):
    """Python that writes marker (an absolute host path) and says it ran."""
    return (f"def run():\n"
            f"    try:\n"
            f"        open({marker!r}, 'w').write('agent code ran here\\n')\n"
            f"        return {tag!r} + ' wrote'\n"
            f"    except OSError as e:\n"
            f"        return {tag!r} + ' ' + type(e).__name__\n"
            f"greet = run\n")


# The harness: a drop-in adapter whose program is this script. Inside the
# sandbox it reads the gateway entry the run mounted in its home, performs
# the steps given as JSON in argv[1] ({"write": {path: text}, "calls":
# [[tool, args], ...]}), and prints RESULT <json> with every answer.
HARNESS = r'''#!/usr/bin/python3
import http.client, json, os, sys
from urllib.parse import urlsplit
plan = json.loads(sys.argv[1])
out = {"writes": {}, "calls": []}
for path, body in plan.get("write", {}).items():
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            f.write(body)
        os.rename(path + ".tmp", path)
        out["writes"][path] = "ok"
    except OSError as e:
        out["writes"][path] = type(e).__name__
cfg = json.load(open(os.path.expanduser("~/.fake.json")))
entry = cfg["mcpServers"]["agentstack-gateway"]
u = urlsplit(entry["url"])
n = [0]
def rpc(method, params):
    n[0] += 1
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("POST", u.path, body=json.dumps({"jsonrpc": "2.0", "id": n[0], "method": method,
              "params": params}), headers={"Content-Type": "application/json",
              "Accept": "application/json, text/event-stream",
              "X-Agentstack-Token": entry["headers"]["X-Agentstack-Token"]})
    r = c.getresponse()
    return json.loads(r.read() or b"null")
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "fake", "version": "1"}})
for tool, args in plan.get("calls", []):
    r = rpc("tools/call", {"name": tool, "arguments": args})
    res = (r or {}).get("result") or {}
    t = "".join(c.get("text", "") for c in res.get("content", []))
    out["calls"].append({"tool": tool, "error": bool(res.get("isError")), "text": t})
print("RESULT " + json.dumps(out), flush=True)
'''

ADAPTER = """id: fakecli
display: Fake CLI
detect:
  bin: fakecli
config:
  path: ~/.fake.json
  format: json
mcp:
  location: mcpServers
  fields:
    url: url
    headers: headers
    command: command
    args: args
  transport:
    key: type
    http_value: http
    stdio_value: stdio
  secret_mode: literal
"""


def install_harness(s, script=None):
    bindir = os.path.join(s.root, "bin")
    os.makedirs(bindir, exist_ok=True)
    fake = os.path.join(bindir, "fakecli")
    with open(fake, "w") as f:
        f.write(script or HARNESS)
    os.chmod(fake, 0o755)
    s.write("adapters/fakecli.yaml", ADAPTER, base=s.ah)


def env(s, **extra):
    e = s.env(PATH=os.path.join(s.root, "bin") + ":/usr/bin:/bin")
    e.update(extra)
    return e


def run(s, mode, plan, **extra):
    return s.run("run", mode, "fakecli", "--", json.dumps(plan), env=env(s, **extra),
                 timeout=300)


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def result(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {}


def answer(call):
    """A call's JSON answer (the server's), or None when the gateway refused."""
    try:
        return json.loads(call["text"])
    except (ValueError, KeyError, TypeError):
        return None


def server_manifest(name="demo", extra=""):
    return f"""version = 1

[servers.{name}]
type = "stdio"
command = "python3"
args = ["server.py"]
{extra}"""


__all__ = ["BIN", "SERVER", "HELPER", "evil_module", "install_harness", "env", "run", "run_id",
           "result", "answer", "server_manifest"]
