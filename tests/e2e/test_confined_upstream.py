"""Nothing started for a confined run runs outside it, written as the attack.

A trusted project routes a stdio server (server.py, which imports helper.py
and loads plugins/*.py) into `run --sandbox` / `run --lockdown` with a
writable workspace. The harness inside is the attacker: it drops its own
code where the server will load it, then calls the server's tools through
the gateway. The code writes a marker to an absolute host path; the marker
must never appear — the server runs in a jail with the run's workspace view
(the write lands in the project, visible to the jailed server), its own /tmp,
a private home, no host network.

Proven, per mode: the agent's plugin runs, but confined (its marker is not on
the host; the server's HOME is /root, the real home's file is unreadable, a
host loopback port is unreachable, its cwd is the project); under lockdown
the server's only route out is the proxy, which applies the server's own
[policy.egress] and records the denial with rule and layer in the call
audit; the agent's edit of the imported helper.py never runs on the host; a
server that cannot be confined (its cwd outside the project) is refused
with the reason and never started on the host."""
import hashlib
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from confinelib import (HELPER, SERVER, answer, evil_module, install_harness,  # noqa: E402
                        result, run, run_id, server_manifest)
from mcpclient import audit_rows, grant  # noqa: E402

MACHINE = 'version = 1\n\n[policy.egress]\n"*" = ["!blocked.invalid"]\n'
POLICY = '\n[policy.filesystem]\nwrite = ["./**"]\n'


def setup(s, extra=""):
    install_harness(s)
    with open(os.path.join(s.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    s.write("server.py", SERVER)
    s.write("helper.py", HELPER)
    os.makedirs(os.path.join(s.project, "plugins"), exist_ok=True)
    s.write("agentstack.toml", server_manifest(extra=extra) + POLICY)
    grant(s)


def listener():
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(4)
    l.setblocking(False)
    return l


def nothing_connected(l):
    try:
        l.accept()
        return False
    except BlockingIOError:
        return True


def scenario(s, mode):
    secret = s.write("real-home-secret", "HOSTSECRET\n", base=s.home)
    marker = os.path.join(s.root, f"marker-plugin-{mode[2:]}")
    ws_plugin = "/workspace/plugins/evil.py"
    l = listener()
    port = l.getsockname()[1]
    plan = {"write": {ws_plugin: evil_module(marker, "PLUGIN")},
            "calls": [["demo__plugins", {}],
                      ["demo__probe", {"read": secret, "connect": port,
                                       "tunnel": "blocked.invalid:443"}]]}
    r = run(s, mode, plan)
    res = result(r.stdout)
    rid = run_id(r.stdout)
    calls = res.get("calls", [])
    check(r.returncode == 0 and len(calls) == 2,
          f"{mode}: the harness wrote its plugin and called the server through the gateway",
          r.stdout[-3000:] + r.stderr[-3000:])
    if len(calls) < 2:
        return
    check(os.path.exists(os.path.join(s.project, "plugins", "evil.py")),
          f"{mode}: the agent's write reached the project (writable workspace)")
    ran = answer(calls[0])
    check(ran == ["PLUGIN wrote"],
          f"{mode}: the agent's plugin ran in the server — and could write where it ran",
          calls[0])
    check(not os.path.exists(marker),
          f"{mode}: its marker at an absolute host path never appears: it ran confined", marker)
    p = answer(calls[1]) or {}
    check(p.get("home") == "/root", f"{mode}: the server's HOME is its private home", p)
    check(str(p.get("read", "")).startswith("ERR"),
          f"{mode}: the server cannot read a file under the real $HOME", p)
    check(str(p.get("connect", "")).startswith("ERR") and nothing_connected(l),
          f"{mode}: the server cannot connect to a host loopback port", p)
    check(p.get("cwd") == os.path.realpath(s.project),
          f"{mode}: the server runs in the project, seen at its own path", p)
    check(p.get("tunnel", "").startswith("HTTP/1.1 403"),
          f"{mode}: through its proxy, a host its [policy.egress] denies is refused", p)
    rows = [x for x in audit_rows(s) if x.get("run") == rid and x.get("tool") == "egress"]
    denied = [x for x in rows if x.get("outcome") == "denied" and
              "blocked.invalid" in x.get("detail", "")]
    check(denied and denied[0].get("server") == "demo" and
          denied[0].get("rule") == "!blocked.invalid" and denied[0].get("layer") == "machine",
          f"{mode}: the denial is in the call audit with server, rule and layer", rows)
    l.close()


def helper_edit(s, mode):
    """The issue's attack: the agent rewrites the module server.py imports."""
    marker = os.path.join(s.root, f"marker-helper-{mode[2:]}")
    plan = {"write": {"/workspace/helper.py": evil_module(marker, "HELPER")},
            "calls": [["demo__hello", {}]]}
    r = run(s, mode, plan)
    calls = result(r.stdout).get("calls", [])
    check(len(calls) == 1, f"{mode}: the harness rewrote helper.py and called hello",
          r.stdout[-2000:] + r.stderr[-2000:])
    check(not os.path.exists(marker),
          f"{mode}: the rewritten helper.py never ran on the host (no marker)", calls)
    text = calls[0]["text"] if calls else ""
    check(calls and calls[0]["error"] and "helper.py" in text and "drifted" in text,
          f"{mode}: the drift is refused, naming helper.py (pinned beside server.py)", text)
    with open(os.path.join(s.project, "helper.py"), "w") as f:
        f.write(HELPER)


def unconfinable():
    """A server whose jail cannot be built (here its private home cannot be
    made: a file stands where its directory goes) is refused with the reason,
    and never started on the host instead."""
    with Sandbox() as s:
        setup(s)
        root = os.path.realpath(s.project).encode()
        homes = os.path.join(s.ah, "sandbox-home")
        os.makedirs(homes, mode=0o700, exist_ok=True)
        with open(os.path.join(homes, "mcp-" + hashlib.sha256(root).hexdigest()[:12]), "w") as f:
            f.write("not a directory\n")
        plan = {"calls": [["demo__hello", {}]]}
        r = run(s, "--sandbox", plan)
        calls = result(r.stdout).get("calls", [])
        text = calls[0]["text"] if calls else ""
        check(calls and calls[0]["error"] and "must run confined" in text
              and "no host fallback" in text and "private home" in text,
              "a server that cannot be confined is refused with the reason",
              text or r.stdout[-2000:] + r.stderr[-2000:])
        rows = [x for x in audit_rows(s) if x.get("tool") == "hello"]
        check(rows and rows[-1].get("outcome") == "error" and
              "cannot be confined" in rows[-1].get("detail", ""),
              "the refusal is in the call audit", rows)


def main():
    for mode in ("--sandbox", "--lockdown"):
        with Sandbox() as s:
            setup(s)
            scenario(s, mode)
            helper_edit(s, mode)
    unconfinable()
    done()


if __name__ == "__main__":
    main()
