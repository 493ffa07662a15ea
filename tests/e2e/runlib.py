"""The fake harness and project the `run` scenarios share: a drop-in adapter
whose detect.bin is a python script printing its argv, AGENTSTACK_RUN_ID,
cwd, tty state and the injected config (and, on request, talking to the
injected gateway entry), plus helpers to set up and run it."""
import os

from aslib import BIN  # noqa: F401  (re-exported for the scenarios)

FAKE = r'''#!/usr/bin/env python3
import json, os, signal, sys
cfg = os.path.join(os.getcwd(), ".fake.json")
print("ARGV " + json.dumps(sys.argv[1:]))
print("RUNID " + str(os.environ.get("AGENTSTACK_RUN_ID")))
print("CWD " + os.getcwd())
print("TTY %s %s" % (os.isatty(0), os.isatty(1)))
if os.isatty(0):
    print("TTYNAME " + os.ttyname(0))
    print("FG %s" % (os.tcgetpgrp(0) == os.getpgrp()))
print("CONFIG " + (json.dumps(json.load(open(cfg))) if os.path.exists(cfg) else "<none>"))
if os.environ.get("FAKE_MCP") and os.path.exists(cfg):
    # Start the injected entry the way a harness would and ask it two things.
    import subprocess
    e = json.load(open(cfg))["mcpServers"]["agentstack-gateway"]
    g = subprocess.Popen([e["command"]] + e["args"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def rpc(i, method, params):
        g.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        g.stdin.flush()
        while True:
            m = json.loads(g.stdout.readline())
            if m.get("id") == i:
                return m
    rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "fake", "version": "1"}})
    g.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    for i, tool in ((2, "agentstack_lease_status"), (3, "agentstack_list_loadable")):
        r = rpc(i, "tools/call", {"name": tool, "arguments": {}})
        print("MCP %s %s" % (tool, r["result"]["content"][0]["text"].replace("\n", " ")))
    g.stdin.close()
    print("MCPERR " + g.stderr.read().replace("\n", " | "))
    print("MCPRC %d" % g.wait(), flush=True)
if os.environ.get("FAKE_IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("READY", flush=True)
if os.environ.get("FAKE_READ"):
    print("GOT " + sys.stdin.readline().strip(), flush=True)
if os.environ.get("FAKE_BG"):
    import subprocess
    subprocess.Popen(["sleep", "1000"])  # same process group, holds stdout
if os.environ.get("FAKE_STDIN"):
    print("STDIN " + repr(sys.stdin.read()), flush=True)
if os.environ.get("FAKE_BIG"):
    sys.stdout.write("x" * int(os.environ["FAKE_BIG"]))
    sys.stdout.flush()
if os.environ.get("FAKE_BLOCK"):
    signal.pause()
if os.environ.get("FAKE_SIGNAL"):
    os.kill(os.getpid(), int(os.environ["FAKE_SIGNAL"]))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
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
    env: env
  secret_mode: literal
"""

MANIFEST = """version = 1

[servers.a]
type = "stdio"
command = "a-mcp"
env = { TOKEN = "${API_TOKEN}" }

[servers.web]
type = "http"
url = "https://mcp.example.com/mcp"

[skills.s1]
path = "skills/s1"

[skills.s2]
path = "skills/s2"

[toolsets.backend]
servers = ["a"]
skills = ["s1"]

[toolsets.webby]
servers = ["web"]
skills = ["s2"]
"""

HAND = '{"mcpServers": {"mine": {"command": "m"}}, "x": 1.50}\n'


def setup(s):
    bindir = os.path.join(s.root, "bin")
    os.makedirs(bindir, exist_ok=True)
    fake = os.path.join(bindir, "fakecli")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, 0o755)
    s.write("adapters/fakecli.yaml", ADAPTER, base=s.ah)
    s.write(".agentstack/agentstack.toml", MANIFEST)
    s.write(".agentstack/skills/s1/SKILL.md", "---\ndescription: one\n---\nbody one\n")
    s.write(".agentstack/skills/s2/SKILL.md", "---\ndescription: two\n---\nbody two\n")
    s.write(".fake.json", HAND)
    os.makedirs(os.path.join(s.project, "sub"), exist_ok=True)


def env(s, **extra):
    e = s.env(PATH=os.path.join(s.root, "bin") + ":/usr/bin:/bin", API_TOKEN="sekrit-value")
    e.update(extra)
    return e


def run(s, *args, cwd=None, **extra):
    return s.run(*args, cwd=cwd, env=env(s, **extra))


def fake_json(s):
    with open(os.path.join(s.project, ".fake.json")) as f:
        return f.read()
