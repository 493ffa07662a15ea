#!/usr/bin/env python3
"""The trust gate, end to end, on this directory's demo project.

    python3 examples/demo/drive.py path/to/agentstack

Runs in a throwaway HOME and AGENTSTACK_HOME (never your real ones): an
untrusted project stays inert, `trust` approves its exact bytes, then one call
is brokered, one is denied by the repo's [policy.tools] and one by your machine
policy, and `agentstack audit --calls` summarises the evidence. The upstream is
the binary's own `agentstack demo-server`, so nothing else is needed.

Every line indented under a `$` command is that command's real output (long
texts trimmed to their first line); a line starting `!!` is a check that failed.
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


def show(line):
    print("  " + line)


def expect(cond, what):
    """Silent when it holds; a failed check is printed and counted."""
    global failures
    if not cond:
        failures += 1
        print("  !! unexpected: " + what)


def first_line(t, width=160):
    t = (t or "").strip().split("\n", 1)[0]
    return t if len(t) <= width else t[:width - 1] + "…"


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
        with open(os.path.join(HERE, "agentstack.toml")) as f:
            manifest = f.read()
        # The project runs this very binary's built-in demo server.
        manifest = manifest.replace('command = "agentstack"', "command = " + json.dumps(binary))
        with open(os.path.join(proj, "agentstack.toml"), "w") as f:
            f.write(manifest)
        shutil.copy(os.path.join(HERE, "machine.toml"), os.path.join(ah, "agentstack.toml"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSTACK_")}
        env.update(HOME=home, AGENTSTACK_HOME=ah, NO_COLOR="1")
        marker = os.path.join(proj, "server-started.marker")

        def run(*args):
            return subprocess.run([binary, *args], cwd=proj, env=env, capture_output=True,
                                  text=True)

        say("cat ~/.agentstack/agentstack.toml   # YOUR machine firewall")
        machine = open(os.path.join(ah, "agentstack.toml")).read().strip()
        for line in machine.split("\n\n", 1)[-1].splitlines():
            show(line)

        say("agentstack mcp --auto-project        # an agent asks: which servers can I use?")
        c = Client(binary, proj, env)
        t, _ = c.call("tools_search", {"query": "echo"})
        t2, e2 = c.call("demo__echo", {"message": "hi"})
        c.close()
        show("tools_search → " + first_line(t, 120))
        show("demo__echo   → " + first_line(t2))
        expect("not trusted" in t, "tools_search should say the project is not trusted")
        expect(e2 and "unknown tool" in t2, "demo__echo should be an unknown tool")
        expect(not os.path.exists(marker), "the untrusted project's server must never start")
        show("✗ untrusted: its server was never started (no server-started.marker)")

        say("agentstack lock --write")
        r = run("lock", "--write")
        pinned = [ln for ln in r.stdout.splitlines() if ln.startswith("✓")]
        show(first_line(pinned[-1] if pinned else r.stderr, 200))
        expect(r.returncode == 0 and pinned, "lock --write should pin the project")

        say("agentstack trust .")
        pre = json.loads(run("trust", ".", "--preview").stdout or "{}")
        for s in pre.get("servers", []):
            show("▶ %s: runs `%s`   # you see exactly what it would run" % (s["name"], s["target"]))
        r = run("trust", ".", "--yes", "--consented", pre.get("surface_digest", ""))
        done = [ln for ln in r.stdout.splitlines() if ln.startswith("✓")]
        show(first_line(done[-1] if done else r.stderr, 200))
        expect(r.returncode == 0 and done, "trust should record consent")

        say("agentstack mcp --auto-project")
        c = Client(binary, proj, env)
        t, e = c.call("demo__echo", {"message": "hello"})
        show("agent → demo.echo        %s %s" % ("✗" if e else "✓", first_line(t)))
        expect(not e and t == "echo: hello", "demo.echo should be brokered")
        t, e = c.call("demo__secret_read")
        show("agent → demo.secret_read %s %s" % ("✗" if e else "✓", first_line(t)))
        expect(e and '"!secret_read"' in t and "machine policy" not in t,
               "demo.secret_read should be denied by the repo's [policy.tools]")
        t, e = c.call("demo__delete_all")
        show("agent → demo.delete_all  %s %s" % ("✗" if e else "✓", first_line(t)))
        expect(e and "machine policy" in t, "demo.delete_all should be denied by the machine")
        c.close()

        say("agentstack audit --calls")
        r = run("audit", "--calls")
        # the summary line first, then the per-tool table
        lines = r.stdout.strip().splitlines() if r.stdout.strip() else [r.stderr.strip()]
        summary = lines[0]
        for line in lines:
            show(line) if line else print()
        expect(r.returncode == 0 and "3 calls · 3 tools · 2 denied by policy" in summary,
               "audit --calls should count 3 calls, 2 denied")

        say("grep '\"layer\":\"machine\"' ~/.agentstack/audit/calls.jsonl   # the audit line")
        rows = []
        with open(os.path.join(ah, "audit", "calls.jsonl")) as f:
            rows = [ln.rstrip("\n") for ln in f if '"layer":"machine"' in ln]
        show(rows[-1] if rows else "(none)")
        row = json.loads(rows[-1]) if rows else {}
        expect(row.get("tool") == "delete_all" and row.get("outcome") == "denied" and
               row.get("rule") == "!delete_*", "one machine-policy denial row for delete_all")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n%s" % ("demo ok" if not failures else "demo FAILED (%d)" % failures))
    return 1 if failures else 0


sys.exit(main())
