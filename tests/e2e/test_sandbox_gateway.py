"""run --sandbox / --lockdown route a trusted bundle's MCP servers through the
gateway running OUTSIDE the sandbox (docs/sandbox.md, docs/gateway.md).

The project is trusted and declares the built-in `agentstack demo-server` as
its stdio server; the machine policy denies `delete_*`. The harness is a
drop-in adapter whose program is a python script: inside the sandbox it reads
the MCP config the run mounted in its home, and speaks MCP over HTTP to the
URL there with the token header. Proven: echo is brokered (the server runs on
the host, never inside); delete_all is denied by the machine rule; a wrong
token is refused (401); the config is read-only inside; the calls are in
calls.jsonl with the run id and in `report`; under --lockdown the face is not
reachable from the host network (it lives in the run's namespace); the
token-bearing config and the mount point are gone after the run; the grant
dies with the run; an untrusted project gets no face and no config."""
import json
import os
import re
import subprocess
import sys
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402
from mcpclient import audit_rows, grant  # noqa: E402

HARNESS = r'''#!/usr/bin/python3
import http.client, json, os, sys
from urllib.parse import urlsplit
out = {}
try:
    print("PROJECTCFG " + json.dumps(open("/workspace/.fake.json").read()), flush=True)
except OSError as e:
    print("PROJECTCFG " + json.dumps(type(e).__name__), flush=True)
path = os.path.expanduser("~/.fake.json")
try:
    cfg = json.load(open(path))
except OSError as e:
    print("NOCONFIG " + type(e).__name__, flush=True)
    sys.exit(0)
entry = cfg["mcpServers"]["agentstack-gateway"]
u = urlsplit(entry["url"])
out["url"] = entry["url"]
def post(body, token):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        h["X-Agentstack-Token"] = token
    c.request("POST", u.path, body=json.dumps(body), headers=h)
    r = c.getresponse()
    data = r.read()
    return r.status, (json.loads(data) if data else None)
tok = entry["headers"]["X-Agentstack-Token"]
n = [0]
def rpc(method, params):
    n[0] += 1
    return post({"jsonrpc": "2.0", "id": n[0], "method": method, "params": params}, tok)
out["init"] = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "fake", "version": "1"}})[1]
out["list"] = rpc("tools/list", {})[1]
out["echo"] = rpc("tools/call", {"name": "demo__echo", "arguments": {"message": "hi-there"}})[1]
out["delete"] = rpc("tools/call", {"name": "demo__delete_all", "arguments": {}})[1]
out["wrong_token"] = post({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}, "0" * 64)[0]
out["no_token"] = post({"jsonrpc": "2.0", "id": 98, "method": "tools/list"}, None)[0]
try:
    open(path, "a").close()
    out["config_writable"] = True
except OSError:
    out["config_writable"] = False
print("RESULT " + json.dumps(out), flush=True)
if os.path.exists("/workspace/.fake-wait"):  # (the run passes no test variable in)
    print("WAITING", flush=True)
    sys.stdin.readline()
'''

ADAPTER = """id: fakecli
display: Fake CLI
detect:
  bin: fakecli
config:
  path: ~/.fake.json
  format: json
project:
  config: .fake.json
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

PROJECT_CFG = '{"mcpServers": {"repo-own": {"command": "sh", "args": ["-c", "evil"]}}}\n'
MACHINE = 'version = 1\n\n[policy.tools]\n"*" = ["!delete_*"]\n'


def manifest():
    return f"""version = 1

[servers.demo]
type = "stdio"
command = {json.dumps(BIN)}
args = ["demo-server"]
"""


def setup(s, trusted=True):
    bindir = os.path.join(s.root, "bin")
    os.makedirs(bindir, exist_ok=True)
    fake = os.path.join(bindir, "fakecli")
    with open(fake, "w") as f:
        f.write(HARNESS)
    os.chmod(fake, 0o755)
    os.makedirs(s.ah, exist_ok=True)
    s.write("adapters/fakecli.yaml", ADAPTER, base=s.ah)
    with open(os.path.join(s.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    s.write("agentstack.toml", manifest())
    s.write(".fake.json", PROJECT_CFG)
    if trusted:
        grant(s)


def env(s, **extra):
    e = s.env(PATH=os.path.join(s.root, "bin") + ":/usr/bin:/bin")
    e.update(extra)
    return e


def listening(tcp_table, port=None):
    """Socket inodes of the LISTEN rows (state 0A) of a /proc/net/tcp[6]
    table, only those on port when given."""
    found = set()
    for line in tcp_table.splitlines()[1:]:
        f = line.split()
        if len(f) <= 9 or f[3] != "0A":
            continue
        if port is None or int(f[1].rsplit(":", 1)[1], 16) == port:
            found.add(f[9])
    return found


def tcp_sockets(pid="self"):
    """(network namespace, inodes of every TCP socket in it, its tcp table)
    of process pid."""
    found, table = set(), ""
    for t in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{t}") as f:
            text_ = f.read()
        table = table or text_
        for line in text_.splitlines()[1:]:
            if len(line.split()) > 9:
                found.add(line.split()[9])
    return os.readlink(f"/proc/{pid}/ns/net"), found, table


def descendants(root):
    """Pids of every process below root."""
    parent = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    parent[p] = f.read().rsplit(")", 1)[1].split()[1]
            except OSError:
                pass
    out, todo = [], [str(root)]
    while todo:
        cur = todo.pop()
        kids = [p for p, pp in parent.items() if pp == cur]
        out += kids
        todo += kids
    return out


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def result(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {}


def project_cfg(s, mode, out):
    seen = None
    for line in out.splitlines():
        if line.startswith("PROJECTCFG "):
            seen = json.loads(line[11:])
    check(seen == "{}\n", f"{mode}: the workspace's project MCP config is covered by {{}}", seen)
    with open(os.path.join(s.project, ".fake.json")) as f:
        check(f.read() == PROJECT_CFG, f"{mode}: the host's project config is untouched")


def text(r):
    try:
        return "".join(c.get("text", "") for c in r["result"]["content"])
    except (KeyError, TypeError):
        return ""


def common(s, mode, r, res):
    rid = run_id(r.stdout)
    project_cfg(s, mode, r.stdout)
    check(r.returncode == 0 and "MCP tool calls routed through the gateway" in r.stdout,
          f"{mode}: the banner says the calls are routed through the gateway",
          r.stdout + r.stderr)
    info = (res.get("init") or {}).get("result", {}).get("serverInfo", {})
    check(info.get("name") == "agentstack-gateway",
          f"{mode}: the harness reaches the gateway's face from inside", r.stdout + r.stderr)
    names = [t["name"] for t in (res.get("list") or {}).get("result", {}).get("tools", [])]
    check("demo__echo" in names and "demo__delete_all" not in names
          and not any(n.startswith("agentstack_") for n in names),
          f"{mode}: tools/list = the policy-allowed proxied tools only", names)
    echo = res.get("echo") or {}
    check(not echo.get("result", {}).get("isError") and "hi-there" in text(echo),
          f"{mode}: demo__echo is brokered by the host-side gateway", echo)
    dl = res.get("delete") or {}
    check(dl.get("result", {}).get("isError") and "!delete_*" in text(dl)
          and "machine policy" in text(dl), f"{mode}: demo__delete_all is denied", dl)
    check(res.get("wrong_token") == 401 and res.get("no_token") == 401,
          f"{mode}: a wrong or missing token is refused (401)", res)
    check(res.get("config_writable") is False, f"{mode}: the injected config is read-only inside",
          res)
    rows = [x for x in audit_rows(s) if x.get("run") == rid]
    outcomes = {(x.get("tool"), x.get("outcome")) for x in rows}
    check(("echo", "ok") in outcomes and ("delete_all", "denied") in outcomes,
          f"{mode}: both calls are in calls.jsonl with the run id", rows)
    rep = s.run("report", rid, env=env(s))
    check(rep.returncode == 0 and "delete_all" in rep.stdout and "echo" in rep.stdout,
          f"{mode}: report shows the brokered calls", rep.stdout + rep.stderr)
    d = os.path.join(s.ah, "runs", rid)
    check(not os.path.exists(os.path.join(d, "gateway-mcp-config")),
          f"{mode}: the token-bearing config is deleted after the run", os.listdir(d))
    home = os.path.join(s.ah, "sandbox-home", "fakecli")
    check(not os.path.exists(os.path.join(home, ".fake.json")),
          f"{mode}: no mount point is left in the sandbox home", os.listdir(home))
    with open(os.path.join(d, "events.jsonl")) as f:
        ev = [json.loads(x) for x in f]
    frozen = [e for e in ev if e["event"] == "grant_frozen"]
    started = [e for e in ev if e["event"] == "sandbox_started"]
    check(len(frozen) == 1 and started and
          started[0].get("gateway", {}).get("grant_digest") == frozen[0]["grant_digest"],
          f"{mode}: the grant is frozen and recorded before the harness starts", ev[:3])
    # The grant dies with the run: a gateway started on it now serves nothing.
    g = subprocess.run([BIN, "mcp", "--grant", os.path.join(d, "grant.json")], input=b"",
                       capture_output=True, env=env(s), cwd=s.project, timeout=60)
    check(b"--grant refused" in g.stderr and b"ended" in g.stderr,
          f"{mode}: the run's grant is refused once the run has ended", g.stderr)
    return rid


class Live:
    """The outcome of a run whose harness waited while the test looked."""
    stdout = stderr = ""
    returncode = None


def live_run(s, mode, while_live):
    """Runs the harness under mode; while it waits (after its calls), calls
    while_live(proc, stdout so far). Returns a Live with the whole run's
    output."""
    s.write(".fake-wait", "")
    proc = subprocess.Popen([BIN, "run", mode, "fakecli"], cwd=s.project, env=env(s),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    waiting = False
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("WAITING"):
            waiting = True
            break
    check(waiting, f"{mode[2:]}: the harness is live and waiting (the next checks run during "
          "the run)", "".join(lines))
    while_live(proc, "".join(lines))
    out, err = proc.communicate(input="\n", timeout=120)
    os.unlink(os.path.join(s.project, ".fake-wait"))
    r = Live()
    r.stdout, r.stderr, r.returncode = "".join(lines) + out, err, proc.returncode
    return r


def face_sockets(proc, head):
    """While a run is live: (its network namespace, or None when it has none
    of its own; the inodes of the face's listening socket there; the inodes
    of every TCP socket in the host's namespace). Read from the host through
    /proc/<pid>/net of the run's processes — never by connecting to a port,
    which another program may own."""
    host_ns, host_socks, host_table = tcp_sockets()
    port = urlsplit(result(head).get("url", "")).port
    if not port:
        return None, set(), host_socks
    for pid in descendants(proc.pid):
        try:
            ns, _, table = tcp_sockets(pid)
        except OSError:
            continue
        # a namespace of its own that holds the listener (a jailed MCP
        # server's own namespace does not)
        if ns != host_ns and listening(table, port):
            return ns, listening(table, port), host_socks
    return None, listening(host_table, port), host_socks


def lockdown_trusted():
    with Sandbox() as s:
        setup(s)
        p = s.run("run", "--lockdown", "--plan", "fakecli", env=env(s))
        check(p.returncode == 0 and "http://egress-proxy:19080/mcp" in p.stdout
              and "routed through the gateway" in p.stdout
              and not os.path.exists(os.path.join(s.ah, "runs")),
              "lockdown --plan names the face and creates nothing", p.stdout + p.stderr)

        def face_in_run_only(proc, head):
            run_ns, face, host_socks = face_sockets(proc, head)
            check(run_ns is not None and face,
                  "lockdown: the face listens in the run's own network namespace", run_ns)
            check(face and not face & host_socks,
                  "lockdown: the host cannot reach the face (its socket is in no host "
                  "namespace)", face)
        r = live_run(s, "--lockdown", face_in_run_only)
        res = result(r.stdout)
        check(res.get("url") == "http://egress-proxy:19080/mcp",
              "lockdown: the config names egress-proxy:19080", res)
        common(s, "lockdown", r, res)


def sandbox_trusted():
    with Sandbox() as s:
        setup(s)

        def face_on_host(proc, head):
            # the control for the lockdown check: the same look finds a
            # host listener when there is one
            run_ns, face, host_socks = face_sockets(proc, head)
            check(run_ns is None and face and face <= host_socks,
                  "sandbox: the face is a host loopback listener, and the lockdown check's "
                  "look finds it", (run_ns, face))
        r = live_run(s, "--sandbox", face_on_host)
        res = result(r.stdout)
        check(re.match(r"http://127\.0\.0\.1:\d+/mcp$", res.get("url", "")) is not None,
              "sandbox: the config names a loopback port", res)
        common(s, "sandbox", r, res)


def untrusted():
    with Sandbox() as s:
        setup(s, trusted=False)
        r = s.run("run", "--lockdown", "fakecli", env=env(s), timeout=120)
        rid = run_id(r.stdout)
        check(r.returncode == 0 and "UNTRUSTED" in r.stdout
              and "routed through the gateway" not in r.stdout,
              "untrusted: runs, says so, routes nothing", r.stdout + r.stderr)
        check("NOCONFIG" in r.stdout, "untrusted: no MCP config in the sandbox home", r.stdout)
        project_cfg(s, "untrusted lockdown", r.stdout)
        d = os.path.join(s.ah, "runs", rid) if rid else s.ah
        check(rid and not os.path.exists(os.path.join(d, "grant.json"))
              and not os.path.exists(os.path.join(d, "gateway.log")),
              "untrusted: no grant frozen, no gateway started", os.listdir(d))
        check(not [x for x in audit_rows(s) if x.get("run") == rid],
              "untrusted: nothing brokered")


def unmappable():
    """An adapter that cannot send the token header: --sandbox runs with the
    servers named as not routed; --lockdown refuses before anything runs."""
    with Sandbox() as s:
        setup(s)
        s.write("adapters/fakecli.yaml", ADAPTER.replace("    headers: headers\n", ""),
                base=s.ah)
        r = s.run("run", "--lockdown", "fakecli", env=env(s), timeout=120)
        check(r.returncode != 0 and "mcp.fields.headers" in r.stderr
              and "refusing to start" in r.stderr and "RESULT" not in r.stdout
              and "NOCONFIG" not in r.stdout,
              "no headers mapping: --lockdown refuses, naming mcp.fields.headers",
              r.stdout + r.stderr)
        r = s.run("run", "--sandbox", "fakecli", env=env(s), timeout=120)
        check(r.returncode == 0 and "not routed" in r.stderr and "mcp.fields.headers" in r.stderr
              and "NOCONFIG" in r.stdout and "routed through the gateway" not in r.stdout,
              "no headers mapping: --sandbox runs, servers not routed, no config",
              r.stdout + r.stderr)


lockdown_trusted()
sandbox_trusted()
unmappable()
untrusted()
done()
