"""No secret in a core file, and none in a temp file a killed writer left.

The attacks: `agentstack mcp` killed by SIGQUIT wrote a core holding the
resolved secret; a `*.agentstack-tmp.*` file left by a killed
`apply --write` held a resolved entry and was never removed.

Every agentstack process turns core files off (RLIMIT_CORE 0, soft and hard)
and makes itself undumpable before it can hold a secret. A test cannot
change /proc/sys/kernel/core_pattern, so it checks what decides: the
gateway's /proc/<pid>/limits, and its dumpable flag through the owner of
/proc/<pid>/fd (root's when a process is not dumpable; to tell them apart
as root, the gateway runs as another user). Where the core pattern writes
plain files, SIGQUIT is sent too, next to a control process that does
write a core, so the check can fail.
"""
import json
import os
import resource
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, bin_for_other, check, done, files_holding  # noqa: E402
from mcpclient import FAKE, grant  # noqa: E402

SECRET = "core-dump-secret-7f3a91c2"
AS_ROOT = os.geteuid() == 0
OTHER = 65534  # nobody: the gateway runs as another user when we are root


def chown_tree(root, uid):
    for dp, dns, fns in os.walk(root):
        for n in dns + fns:
            os.lchown(os.path.join(dp, n), uid, uid)
    os.lchown(root, uid, uid)


def as_other():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    if AS_ROOT:
        os.setgid(OTHER)
        os.setgroups([])
        os.setuid(OTHER)


def core_pattern():
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            return f.read().strip()
    except OSError:
        return "|"


def limits_core(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max core file size"):
                return line.split()[4:6]
    return None


with Sandbox() as sb:
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml",
             'version = 1\n[servers.ops]\ntype = "stdio"\ncommand = "python3"\n'
             'args = ["./fake.py", "--tools", "ping"]\nenv = { OPS_TOKEN = "${OPS_TOKEN}" }\n')
    sb.write(".env", "OPS_TOKEN=%s\n" % SECRET)
    grant(sb)
    exe = bin_for_other(sb.root) if AS_ROOT else BIN
    if AS_ROOT:
        chown_tree(sb.root, OTHER)
        os.chmod(sb.root, 0o755)
    env = sb.env()
    work = os.path.join(sb.root, "cwd")
    os.makedirs(work, exist_ok=True)
    if AS_ROOT:
        os.chown(work, OTHER, OTHER)
    g = subprocess.Popen([exe, "mcp", "--manifest-dir", sb.project], cwd=work, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=as_other)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    g.stdin.write((json.dumps(init) + "\n").encode())
    g.stdin.flush()
    first = g.stdout.readline()
    # one brokered call: the gateway now holds the resolved secret
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "ops__ping", "arguments": {}}}
    g.stdin.write((json.dumps(call) + "\n").encode())
    g.stdin.flush()
    second = g.stdout.readline()
    check(b'"id":1' in first.replace(b" ", b"") and b"ping: ok" in second,
          "the gateway is serving (the secret is resolved)", first + second)

    lim = limits_core(g.pid)
    check(lim == ["0", "0"], "RLIMIT_CORE is 0, soft and hard (/proc/<pid>/limits)", lim)
    fd_owner = os.stat(f"/proc/{g.pid}/fd").st_uid
    own = OTHER if AS_ROOT else os.geteuid()
    check(own != 0 and fd_owner == 0,
          "the gateway is not dumpable (/proc/<pid>/fd belongs to root, not to %d)" % own,
          fd_owner)

    pattern = core_pattern()
    plain = not pattern.startswith("|")
    control = None
    if plain:
        # A control process of the same user, the same limits, the same cwd:
        # it leaves a core, so this check could fail.
        control = subprocess.Popen(["/usr/bin/python3", "-c",
                                    "import time,sys; print('up', flush=True); time.sleep(60)"],
                                   cwd=work, stdout=subprocess.PIPE, preexec_fn=as_other)
        control.stdout.readline()
        before = set(os.listdir(work))
        control.send_signal(signal.SIGQUIT)
        control.wait()
        wrote = set(os.listdir(work)) - before
        for n in wrote:
            os.remove(os.path.join(work, n))
    g.send_signal(signal.SIGQUIT)
    g.wait(timeout=30)
    if plain and wrote:
        left = [n for n in os.listdir(work)]
        check(not left, "SIGQUIT: the gateway wrote no core (a control process did: %s)"
              % sorted(wrote), left)
    else:
        print("note: cores are not written as files here (core_pattern %r, control wrote %s); "
              "the limit and dumpable checks above decide" % (pattern, control is not None))
    holders = files_holding(sb.root, SECRET)
    check(all(h.endswith(".env") for h in holders),
          "the secret is in no file but the project's .env", holders)

# A temp file a killed `apply --write` left behind is removed by the next
# write into that directory; only ours, only when its writer is gone.
with Sandbox() as sb:
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("agentstack.toml",
             'version = 1\n[targets]\ndefault = ["claude-code"]\n[servers.ops]\ntype = "stdio"\n'
             'command = "ops-mcp"\nenv = { OPS_TOKEN = "${OPS_TOKEN}" }\n')
    sb.write(".env", "OPS_TOKEN=%s\n" % SECRET)
    grant(sb)
    # a killed writer's leftover: its pid is gone
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    stale = os.path.join(sb.project, ".mcp.json.agentstack-tmp.%d.%s" % (dead.pid, "0a1b2c3d4e5f6a7b"))
    with open(stale, "w") as f:
        f.write('{"mcpServers":{"ops":{"env":{"OPS_TOKEN":"%s"}}}}' % SECRET)
    os.chmod(stale, 0o600)
    # a live writer's temp, and files that only look like ours: all kept
    live = os.path.join(sb.project, ".CLAUDE.md.agentstack-tmp.%d.%s" % (os.getpid(),
                                                                       "ffffffffffffffff"))
    lookalikes = [os.path.join(sb.project, n) for n in (
        "notes.agentstack-tmp.txt", ".x.agentstack-tmp.%d.short" % dead.pid,
        ".y.agentstack-tmp.%d.0A1B2C3D4E5F6A7B" % dead.pid)]
    for p in [live] + lookalikes:
        with open(p, "w") as f:
            f.write("keep\n")
    r = sb.run("apply", "--write")
    check(r.returncode == 0, "apply --write", r.stdout + r.stderr)
    check(not os.path.exists(stale), "the killed writer's temp file is gone")
    check(os.path.exists(live), "a live writer's temp file is kept")
    check(all(os.path.exists(p) for p in lookalikes), "files that only look like ours are kept")
    holders = files_holding(sb.project, SECRET)
    check(set(holders) <= {".env", ".mcp.json"}, "the secret is only where apply wrote it",
          holders)

done()
