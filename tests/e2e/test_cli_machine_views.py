"""adapters list|show|validate, lease status and self which.

1. adapters list names every built-in (17) and marks a CLI installed when its
   binary is on PATH; --json carries the same; show prints the descriptor;
   validate accepts a good drop-in and refuses a bad one with file:line:col
   (the registry's own parser), writing nothing.
2. lease status derives liveness now, never from the record: a record with
   this test's live pid and its real start time is live; the same pid with
   another start time (a reused pid) and a dead pid are stale.
3. self which: a PATH whose first agentstack is a link to this binary exits
   0 ("this binary"); a dangling link first exits 1 ("broken link").
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402

GOOD = 'id: mycli\ndisplay: My CLI\nconfig:\n  path: "~/.mycli/mcp.json"\n  format: json\n'


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return int(s[s.rindex(")") + 2:].split()[19])


with Sandbox() as sb:
    # 1. adapters
    bindir = os.path.join(sb.root, "bin")
    os.makedirs(bindir)
    fake = os.path.join(bindir, "codex")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(fake, 0o755)
    env = sb.env(PATH=bindir + ":/usr/bin:/bin")
    r = sb.run("adapters", "list", env=env)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) >= 17, "adapters list: every built-in", r.stdout)
    check(any(ln.startswith("✓ codex") and "installed" in ln for ln in lines) and
          any(ln.startswith("· claude-code") for ln in lines),
          "installed only where the binary is on PATH", r.stdout)
    j = json.loads(sb.run("adapters", "list", "--json", env=env).stdout)
    check({a["id"]: a["installed"] for a in j}.get("codex") is True and
          all(a["source"] == "built-in" for a in j), "adapters list --json", j)
    r = sb.run("adapters", "show", "codex")
    check(r.returncode == 0 and "id: codex" in r.stdout, "adapters show codex", r.stdout)
    r = sb.run("adapters", "show", "codx")
    check(r.returncode == 1 and "did you mean 'codex'" in r.stderr, "show: unknown id", r.stderr)
    good = sb.write("mycli.yaml", GOOD, base=sb.root)
    r = sb.run("adapters", "validate", good)
    check(r.returncode == 0 and "adapter 'mycli' (My CLI) is valid" in r.stdout,
          "validate: a good drop-in", r.stdout + r.stderr)
    bad = sb.write("bad.yaml", GOOD + "confg: 1\n", base=sb.root)
    r = sb.run("adapters", "validate", bad)
    check(r.returncode == 1 and f"{bad}:6:1" in r.stderr and "did you mean 'config'" in r.stderr,
          "validate: file:line:col and the suggestion", r.stderr)
    check(not os.path.exists(os.path.join(sb.ah, "adapters")), "validate installs nothing")
    os.makedirs(os.path.join(sb.ah, "adapters"))
    sb.write("adapters/mycli.yaml", GOOD, base=sb.ah)
    r = sb.run("adapters", "list")
    check("mycli" in r.stdout and "(drop-in " in r.stdout, "a drop-in is listed as such",
          r.stdout)
    r = sb.run("adapters", "show", "mycli")
    check(r.returncode == 0 and "display: My CLI" in r.stdout, "show prints a drop-in", r.stdout)

    # 2. lease status
    r = sb.run("lease", "status")
    check(r.returncode == 0 and "No toolset leases" in r.stdout, "no records", r.stdout)
    holder = subprocess.Popen(["sleep", "300"])
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        recs = {
            "a-live": (holder.pid, start_time(holder.pid)),
            "b-reused": (holder.pid, start_time(holder.pid) + 12345),
            "c-dead": (dead.pid, 1),
        }
        for name, (pid, tok) in recs.items():
            sb.write(f"leases/{name}.json", json.dumps({
                "instance": name, "project": sb.project, "toolset": "main", "pid": pid,
                "start_token": tok, "started_unix": 1700000000}), base=sb.ah)
        doc = json.loads(sb.run("lease", "status", "--json").stdout)
        live = {d["instance"]: d["live"] for d in doc["leases"]}
        check(live == {"a-live": True, "b-reused": False, "c-dead": False},
              "live only for the running pid with its own start time", live)
        r = sb.run("lease", "status")
        check("● live " in r.stdout and r.stdout.count("○ stale") == 2,
              "the text view marks live and stale", r.stdout)
    finally:
        holder.kill()
        holder.wait()

    # 3. self which
    good_dir = os.path.join(sb.root, "good")
    broken_dir = os.path.join(sb.root, "broken")
    os.makedirs(good_dir)
    os.makedirs(broken_dir)
    os.symlink(os.path.realpath(BIN), os.path.join(good_dir, "agentstack"))
    os.symlink(os.path.join(sb.root, "gone", "agentstack"), os.path.join(broken_dir, "agentstack"))
    r = sb.run("self", "which", env=sb.env(PATH=good_dir + ":" + broken_dir))
    check(r.returncode == 0 and "(this binary)" in r.stdout and "shadowed:" in r.stdout and
          "broken link" in r.stdout, "self which: this binary first, the broken one shadowed",
          r.stdout + r.stderr)
    r = sb.run("self", "which", env=sb.env(PATH=broken_dir + ":" + good_dir))
    check(r.returncode == 1 and "broken link" in r.stdout.splitlines()[1],
          "self which: a broken link first exits 1", r.stdout)
    r = sb.run("self", "which", env=sb.env(PATH=bindir))
    check(r.returncode == 1 and "no agentstack" in r.stdout, "self which: none on PATH",
          r.stdout)

done()
