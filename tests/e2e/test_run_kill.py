"""The live-run registry and `agentstack kill` (docs/sandbox.md).

A running host run and a running sandbox run are listed in
$AGENTSTACK_HOME/runs.json (0600) and by `runs --live`; `runs` marks them
LIVE. `kill <id>` stops the whole tree (a background child in the host
run's group too), records each signal as `run_kill` in the run's flight
record, escalates to SIGKILL when SIGTERM is ignored, and the entry is gone
once the run ended. Stale entries — a dead pid, or a live pid whose start
time differs (pid reuse) — are pruned on read and never signalled.

The harness is the fake drop-in adapter of test_run_host.py (copied: that
file runs its tests on import).
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402
import re  # noqa: E402
import types  # noqa: E402

from runlib import ADAPTER, FAKE, HAND, MANIFEST, env, fake_json, run, setup  # noqa: E402,F401


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def events(s, rid):
    with open(os.path.join(s.ah, "runs", rid, "events.jsonl")) as f:
        return [json.loads(x) for x in f]


def trust(s):
    p = run(s, "trust", "--preview")
    d = json.loads(p.stdout)["surface_digest"]
    t = run(s, "trust", "--yes", "--consented", d)
    assert t.returncode == 0, t.stdout + t.stderr


th = types.SimpleNamespace(env=env, run_id=run_id, events=events, fake_json=fake_json,
                           setup=setup, trust=trust, HAND=HAND)


def start(s, *args, ready="READY", **extra):
    p = subprocess.Popen([BIN, "run", *args], cwd=s.project, env=th.env(s, **extra),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    head = ""
    for line in p.stdout:
        head += line
        if line.strip() == ready:
            break
    return p, head


def registry(s):
    p = os.path.join(s.ah, "runs.json")
    if not os.path.exists(p):
        return None, None
    with open(p) as f:
        return json.load(f), os.stat(p).st_mode & 0o777


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_of(pgid):
    out = []
    for q in os.listdir("/proc"):
        try:
            with open(f"/proc/{q}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if q.isdigit() and rest[0] != "Z" and rest[2] == str(pgid):
            out.append(q)
    return out


def host_kill(s):
    p, head = start(s, "fakecli", FAKE_BLOCK="1", FAKE_BG="1")
    rid = th.run_id(head)
    check(rid is not None, "host run: banner names the run id", head)
    reg, mode = registry(s)
    check(reg is not None and rid in reg, "host run: registered in runs.json", reg)
    check(mode == 0o600, "runs.json is 0600", oct(mode or 0))
    e = (reg or {}).get(rid, {})
    check(e.get("harness") == "fakecli" and e.get("display") == "Fake CLI"
          and e.get("cwd") == os.path.realpath(s.project) and isinstance(e.get("pid"), int)
          and e.get("started_unix", 0) > 0, "entry: harness, display, cwd, pid, start", e)
    check("sekrit-value" not in json.dumps(reg), "no secret value in runs.json")
    pgid = os.getpgid(e["pid"]) if alive(e.get("pid", 0)) else None
    check(pgid == e.get("pid"), "the registered pid leads the harness's process group")
    # The fake starts its background child just after READY: wait for it
    # (a condition, not a duration).
    members = []
    for _ in range(2000):
        members = group_of(pgid)
        if len(members) >= 2:
            break
        time.sleep(0.005)
    check(len(members) >= 2, "the group holds the harness and its background child", members)

    r = s.run("runs", "--live", env=th.env(s))
    check(r.returncode == 0 and r.stdout.startswith(rid + "  Fake CLI pid=%d up=" % e["pid"])
          and os.path.realpath(s.project) in r.stdout, "runs --live: the documented line", r.stdout)
    r = s.run("runs", "--live", "--json", env=th.env(s))
    lj = json.loads(r.stdout) if r.returncode == 0 else []
    check([x["id"] for x in lj] == [rid], "runs --live --json: an array of the live run", lj)
    r = s.run("runs", env=th.env(s))
    line = [x for x in r.stdout.splitlines() if x.startswith(rid)]
    check(line and "LIVE pid=%d" % e["pid"] in line[0], "runs marks the live run", r.stdout)
    r = s.run("runs", "--json", env=th.env(s))
    rows = {x["id"]: x for x in json.loads(r.stdout)}
    check(rows.get(rid, {}).get("live") is True, "runs --json: live true", rows.get(rid))

    k = s.run("kill", rid, env=th.env(s))
    check(k.returncode == 0 and "sent SIGTERM" in k.stdout and "stopped" in k.stdout,
          "kill: exit 0, SIGTERM sent, run stopped", (k.returncode, k.stdout, k.stderr))
    # The launcher returning at all means the background child (which holds
    # stdout) died with the group.
    out, err = p.communicate(timeout=60)
    check(p.returncode == 128 + int(signal.SIGTERM), "the killed harness's status comes back",
          (p.returncode, err))
    check(not any(alive(q) for q in members), "every process of the group is gone", members)
    ev = th.events(s, rid)
    kills = [x for x in ev if x["event"] == "run_kill"]
    check([x["signal"] for x in kills] == ["SIGTERM"] and kills[0]["pid"] == e["pid"],
          "the flight record has run_kill SIGTERM", kills)
    last = ev[-1]
    check(last.get("outcome") == "completed" and last.get("signal") == int(signal.SIGTERM),
          "the run's outcome is recorded after the kill", last)
    check(th.fake_json(s) == th.HAND, "the injected config is reverted after a kill")
    reg, _ = registry(s)
    check(rid not in (reg or {}), "the entry is removed at exit", reg)
    r = s.run("runs", "--live", env=th.env(s))
    check(r.stdout.strip() == "No live runs.", "runs --live: No live runs.", r.stdout)
    k = s.run("kill", rid, env=th.env(s))
    check(k.returncode == 1 and "no live run " + rid in k.stderr,
          "kill of a finished run: exit 1, says so", (k.returncode, k.stderr))


def host_kill_escalates(s):
    p, head = start(s, "fakecli", FAKE_BLOCK="1", FAKE_IGNORE_TERM="1")
    rid = th.run_id(head)
    k = s.run("kill", rid, env=th.env(s))
    check(k.returncode == 0 and "sent SIGKILL" in k.stdout,
          "kill of a harness ignoring SIGTERM escalates to SIGKILL", (k.stdout, k.stderr))
    p.communicate(timeout=60)
    check(p.returncode == 128 + int(signal.SIGKILL), "status 137", p.returncode)
    kills = [x["signal"] for x in th.events(s, rid) if x["event"] == "run_kill"]
    check(kills == ["SIGTERM", "SIGKILL"], "both signals recorded, in order", kills)


def force(s):
    p, head = start(s, "fakecli", FAKE_BLOCK="1")
    rid = th.run_id(head)
    k = s.run("kill", rid, "--force", env=th.env(s))
    check(k.returncode == 0 and "SIGTERM" not in k.stdout and "sent SIGKILL" in k.stdout,
          "kill --force: SIGKILL at once", k.stdout)
    p.communicate(timeout=60)
    check(p.returncode == 128 + int(signal.SIGKILL), "--force: status 137", p.returncode)


def stale(s):
    # A pid that is alive but started at another time (pid reuse: this very
    # test process) and a pid that does not exist: both pruned, neither killed.
    me = os.getpid()
    dead = subprocess.Popen(["true"])
    dead.wait()
    fake = {
        "r-00000000aa": {"id": "r-00000000aa", "pid": me, "pid_start": 1, "group": False,
                         "display": "Reused", "cwd": "/", "started_unix": 1},
        "r-00000000bb": {"id": "r-00000000bb", "pid": dead.pid, "pid_start": 1,
                         "group": True, "display": "Dead", "cwd": "/", "started_unix": 1},
    }
    s.write("runs.json", json.dumps(fake), base=s.ah)
    r = s.run("runs", "--live", env=th.env(s))
    check(r.stdout.strip() == "No live runs.", "stale entries are not listed", r.stdout)
    reg, _ = registry(s)
    check(reg == {}, "stale entries are pruned from runs.json on read", reg)
    s.write("runs.json", json.dumps(fake), base=s.ah)
    k = s.run("kill", "r-00000000aa", "--force", env=th.env(s))
    check(k.returncode == 1 and "no live run" in k.stderr,
          "kill of a reused pid's entry: refused, nothing signalled", (k.returncode, k.stderr))
    check(alive(me), "the process that reused the pid is untouched")
    s.write("runs.json", "{not json", base=s.ah)
    r = s.run("runs", "--live", env=th.env(s))
    check(r.returncode == 0 and "No live runs." in r.stdout, "an unparsable runs.json: no crash")
    k = s.run("kill", "../x", env=th.env(s))
    check(k.returncode == 1 and "not a run id" in k.stderr, "a bad id is refused", k.stderr)
    k = s.run("kill", env=th.env(s))
    check(k.returncode == 2, "kill without an id is a usage error", k.returncode)


def sandbox_kill(s):
    p, head = start(s, "--sandbox", "shtest", "--", "-c",
                    "trap '' TERM; sleep 1000 & echo READY; while :; do sleep 0.05; done")
    rid = th.run_id(head)
    reg, _ = registry(s)
    e = (reg or {}).get(rid or "", {})
    check(e.get("posture") == "sandbox" and e.get("group") is False,
          "sandbox run: registered with its init", e)
    k = s.run("kill", rid or "none", env=th.env(s))
    check(k.returncode == 0 and "sent SIGKILL" in k.stdout,
          "kill stops a sandbox run whose harness ignores SIGTERM", (k.stdout, k.stderr))
    out, err = p.communicate(timeout=60)
    check(p.returncode != 0 and "killed by a signal" in err, "the sandbox run reports the kill",
          (p.returncode, err))
    ev = th.events(s, rid) if rid else []
    check([x["signal"] for x in ev if x["event"] == "run_kill"] == ["SIGTERM", "SIGKILL"]
          and ev[-1]["event"] == "sandbox_exited", "recorded: run_kill ×2, then sandbox_exited",
          ev[-3:])
    reg, _ = registry(s)
    check(rid not in (reg or {}), "the sandbox run's entry is removed", reg)


def main():
    with Sandbox() as s:
        th.setup(s)
        r = s.run("lock", "--write", env=th.env(s))
        assert r.returncode == 0, r.stderr
        th.trust(s)
        host_kill(s)
        host_kill_escalates(s)
        force(s)
        stale(s)
        sandbox_kill(s)
    done()


if __name__ == "__main__":
    main()
