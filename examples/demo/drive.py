#!/usr/bin/env python3
"""The trust gate, end to end, on this directory's demo project.

    python3 examples/demo/drive.py path/to/agentstack

Runs in a throwaway HOME and AGENTSTACK_HOME (never your real ones):
an untrusted project stays inert, `trust` approves its exact bytes, then one
call is brokered, one is denied by the repo's [policy.tools] and one by your
machine policy, and `agentstack audit --calls` summarises the evidence.
Exits 1 if anything does not happen as shown.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
failures = 0


def say(cmd):
    print("\n$ " + cmd)


def expect(cond, line):
    global failures
    print("  " + line if cond else "  !! unexpected: " + line)
    if not cond:
        failures += 1


class Client:
    """A minimal MCP client over the gateway's stdio."""

    def __init__(self, binary, cwd, env):
        self.p = subprocess.Popen([binary, "mcp", "--auto-project"], cwd=cwd, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "demo", "version": "1"}})
        self.p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def request(self, method, params):
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                       "params": params}) + "\n")
        self.p.stdin.flush()
        for line in self.p.stdout:
            msg = json.loads(line)
            if msg.get("id") == self.n:
                return msg.get("result") or {}
        return {}

    def call(self, name, args=None):
        r = self.request("tools/call", {"name": name, "arguments": args or {}})
        return r.get("content", [{}])[0].get("text", ""), bool(r.get("isError"))

    def close(self):
        self.p.stdin.close()
        err = self.p.stderr.read()
        return self.p.wait(30), err


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip())
        return 2
    binary = os.path.abspath(sys.argv[1])
    root = tempfile.mkdtemp(prefix="agentstack-demo-")
    try:
        home = os.path.join(root, "home")
        ah = os.path.join(home, ".agentstack")
        proj = os.path.join(root, "some-repo")
        os.makedirs(ah)
        os.makedirs(proj)
        for f in ("agentstack.toml", "server.py"):
            shutil.copy(os.path.join(HERE, f), proj)
        shutil.copy(os.path.join(HERE, "machine.toml"), os.path.join(ah, "agentstack.toml"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSTACK_")}
        env.update(HOME=home, AGENTSTACK_HOME=ah, NO_COLOR="1")
        marker = os.path.join(proj, "server-started.marker")

        def run(*args):
            return subprocess.run([binary, *args], cwd=proj, env=env, capture_output=True,
                                  text=True)

        say("cat ~/.agentstack/agentstack.toml   # YOUR machine firewall")
        print("  " + open(os.path.join(ah, "agentstack.toml")).read().strip()
              .split("\n\n", 1)[-1].replace("\n", "\n  "))

        say("agentstack mcp --auto-project        # an agent asks: which project servers can I use?")
        c = Client(binary, proj, env)
        t, _ = c.call("tools_search", {"query": "echo"})
        t2, e2 = c.call("demo__echo", {"message": "hi"})
        c.close()
        expect("not trusted" in t and e2 and "unknown tool" in t2 and not os.path.exists(marker),
               "✗ untrusted — none of its servers are spawned or contacted")

        say("agentstack lock --write")
        r = run("lock", "--write")
        expect(r.returncode == 0, "✓ pinned server demo and ./server.py")
        say("agentstack trust .")
        pre = json.loads(run("trust", ".", "--preview").stdout)
        for s in pre.get("servers", []):
            print("  ▶ %s: runs `%s`   # you see exactly what it would run" %
                  (s["name"], s["target"]))
        r = run("trust", ".", "--yes", "--consented", pre["surface_digest"])
        expect(r.returncode == 0, "✓ trusted at %s…   # editing the manifest re-gates it" %
               pre["surface_digest"][:13])

        say("agentstack mcp --auto-project")
        c = Client(binary, proj, env)
        t, e = c.call("demo__echo", {"message": "hello"})
        expect(not e and t == "echo: hello",
               "agent → demo.echo         ✓ ok       brokered through the gateway, logged")
        t, e = c.call("demo__secret_read")
        expect(e and '"!secret_read"' in t and "machine policy" not in t,
               "agent → demo.secret_read  ✗ denied   repo [policy.tools] firewall")
        t, e = c.call("demo__delete_all")
        expect(e and "machine policy" in t,
               'agent → demo.delete_all   ✗ denied   YOUR machine policy — "*" = ["!delete_*"]')
        c.close()
        print("  every call → ~/.agentstack/audit/calls.jsonl  (tool · outcome · latency)")

        say("agentstack audit --calls")
        r = run("audit", "--calls")
        line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()
        expect(r.returncode == 0 and "denied by policy" in line, line)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n%s" % ("demo ok" if not failures else "demo FAILED (%d)" % failures))
    return 1 if failures else 0


sys.exit(main())
