"""Shared helpers for the bench/*_bench.sh scripts (python3 stdlib only).

Every row of `make bench` is one figure of ours beside a baseline measured
in the same run (docs/performance.md); a row that cannot be measured
says "skipped: <why>" instead of failing the table.
"""
import json
import os
import shutil
import statistics
import subprocess
import time

ROW = "%-34s %12s %12s %10s"


def row(name, ours, base, delta):
    print(ROW % (name[:34], ours, base, delta), flush=True)


def skip(name, why):
    print("%-34s skipped: %s" % (name[:34], why.strip().splitlines()[-1] if why.strip()
                                 else "no reason given"), flush=True)


def env_for(root):
    """A private HOME/AGENTSTACK_HOME under root; the caller's agentstack
    and XDG variables never leak into a measurement."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSTACK_", "XDG_"))}
    e["HOME"] = os.path.join(root, "home")
    e["AGENTSTACK_HOME"] = os.path.join(root, "home", ".agentstack")
    e["NO_COLOR"] = "1"
    os.makedirs(e["HOME"], exist_ok=True)
    return e


def run_ok(cmd, cwd, env, stdin=None):
    """Runs cmd once; returns "" when it exits 0, else why it did not."""
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if r.returncode != 0:
        err = (r.stderr or r.stdout).decode("utf-8", "replace").strip().splitlines()
        return "exit %d: %s" % (r.returncode, err[0] if err else "")
    return ""


ECHO_SERVER = r"""import json, sys
TOOLS = [{"name": "echo", "description": "Echo the message back.",
          "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
         {"name": "secret_read", "description": "Denied by the repo policy.",
          "inputSchema": {"type": "object", "properties": {}}}]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    meth, r = m.get("method"), None
    if meth == "initialize":
        r = {"protocolVersion": m["params"].get("protocolVersion", "2025-11-25"),
             "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}
    elif meth == "tools/list":
        r = {"tools": TOOLS}
    elif meth == "tools/call":
        t = "echo: " + str(m["params"].get("arguments", {}).get("message", ""))
        r = {"content": [{"type": "text", "text": t}], "isError": False}
    out = {"jsonrpc": "2.0", "id": m["id"]}
    if r is None:
        out["error"] = {"code": -32601, "message": "method not found"}
    else:
        out["result"] = r
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""

MANIFEST = """version = 1

[servers.demo]
type = "stdio"
command = "python3"
args = ["./server.py"]

[skills.hello]
path = "skills/hello"

[policy.tools]
demo = ["!secret_read"]
"""


def make_project(root, binpath, env):
    """The small project every per-command row runs in: one stdio server
    (a python echo server written here), one inline skill and a repo
    policy; locked and trusted. Returns (path, why-not or "")."""
    proj = os.path.join(root, "proj")
    os.makedirs(os.path.join(proj, "skills", "hello"))
    with open(os.path.join(proj, "server.py"), "w") as f:
        f.write(ECHO_SERVER)
    with open(os.path.join(proj, "agentstack.toml"), "w") as f:
        f.write(MANIFEST)
    with open(os.path.join(proj, "skills", "hello", "SKILL.md"), "w") as f:
        f.write("---\nname: hello\ndescription: says hello\n---\nSay hello.\n")
    why = run_ok([binpath, "lock", "--write"], proj, env)
    if why:
        return proj, "lock --write: " + why
    r = subprocess.run([binpath, "trust", ".", "--preview"], cwd=proj, env=env,
                       capture_output=True, timeout=60)
    try:
        digest = json.loads(r.stdout)["surface_digest"]
    except (ValueError, KeyError, TypeError):
        return proj, "trust --preview printed no surface_digest"
    why = run_ok([binpath, "trust", ".", "--yes", "--consented", digest], proj, env)
    return proj, ("trust: " + why) if why else ""


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "agentstack-bench", "version": "1"}}}


def _line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def first_reply(cmd, cwd, env):
    """Seconds from spawning cmd to reading the first line answering an
    initialize request; then stdin is closed and the process reaped."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(_line(INIT))
    p.stdin.flush()
    line = p.stdout.readline()
    d = time.perf_counter() - t
    p.stdin.close()
    p.stdout.close()
    p.wait(timeout=30)
    if not line:
        raise RuntimeError("%s closed stdout without a reply" % os.path.basename(cmd[0]))
    return d


def mcp_session(cmd, cwd, env, calls, tool="demo__echo"):
    """initialize, initialized, then `calls` tools/call round trips, each
    reply awaited; returns the last reply line (bytes)."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    last = b""
    try:
        p.stdin.write(_line(INIT))
        p.stdin.flush()
        last = p.stdout.readline()
        p.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for i in range(calls):
            p.stdin.write(_line({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                                 "params": {"name": tool, "arguments": {"message": "hi"}}}))
            p.stdin.flush()
            last = p.stdout.readline()
    finally:
        p.stdin.close()
        p.stdout.close()
        p.wait(timeout=120)
    return last


def interleaved(fns, rounds):
    """Calls each fn once per round, in turn, so every side sees the same
    machine weather; returns the median seconds of each."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for i, f in enumerate(fns):
            times[i].append(f())
    return [statistics.median(t) for t in times]


def timed_run(cmd, cwd, env):
    def f():
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return time.perf_counter() - t
    return f


def hyperfine_pair(hf, base, ours, cwd, env, runs, out):
    """Medians (seconds) of base and ours from one hyperfine invocation
    (no shell: -N), or None when hyperfine failed."""
    import shlex
    cmd = [hf, "-N", "--style", "none", "--warmup", "5", "--runs", str(runs),
           "--export-json", out, shlex.join(base), shlex.join(ours)]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=600)
    if r.returncode != 0:
        return None
    with open(out) as f:
        res = json.load(f)["results"]
    return res[0]["median"], res[1]["median"]


def perf_cpu(cmd, cwd, env, runs=50):
    """Mean CPU seconds (perf stat task-clock) of cmd over runs, or None.
    CPU time barely moves when other jobs share the cores; wall time does."""
    perf = shutil.which("perf")
    if not perf:
        return None
    r = subprocess.run([perf, "stat", "-r", str(runs), "-x", ",", "-e", "task-clock", "--"] + cmd,
                       cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=300)
    for line in r.stderr.decode("utf-8", "replace").splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2].startswith("task-clock") and f[1] == "msec":
            try:
                return float(f[0]) / 1e3
            except ValueError:
                return None
    return None


def callgrind_ir(cmd, cwd, env, out, stdin_fn=None):
    """Instructions executed by cmd (callgrind's total Ir; children are not
    traced). stdin_fn, when given, drives the process: it receives the full
    command line to spawn itself."""
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd
    if stdin_fn:
        stdin_fn(vg)
    else:
        subprocess.run(vg, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300)
    with open(out) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no callgrind totals in " + out)


def fmt_ms(s):
    return "%.2fms" % (s * 1e3)


def fmt_ir(n):
    if abs(n) >= 1e6:
        return "%.2fM" % (n / 1e6)
    if abs(n) < 1e3:
        return "<1k"  # below callgrind's run-to-run jitter for a whole process
    return "%.0fk" % (n / 1e3) if abs(n) >= 1e4 else "%.1fk" % (n / 1e3)
