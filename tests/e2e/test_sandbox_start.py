"""How a confined run starts (issue 8: the start-up path was reordered for
speed; these are the properties the reordering must keep).

Proves, through the real binary, under --lockdown and --sandbox:
  - the harness is exec'd with default signal dispositions, nothing blocked
    or ignored, in a session of its own, as PID 2 under sandbox-init, with
    no descriptor beyond 0-2 (it is started with CLONE_VM|CLONE_VFORK now);
  - when `run` returns nothing of the sandbox runs any more, although it no
    longer waits for init's own exit: a detached child that ignores every
    catchable signal is gone (init kills and reaps before it reports);
  - an init killed from outside ends the run with "its init was killed"
    (137), and `run` returns only once the kernel has killed the rest;
  - sandbox-init is closed to the harness although both run with one uid:
    its descriptors (the run's output pipe, the mount namespace it holds,
    the control socket) cannot be reopened through /proc/1/fd, nor its
    environment or memory read;
  - the harness runs with the caller's CPU affinity, whole or narrowed
    (sandbox-init is kept off the launcher's CPU until "go" and restores
    it);
  - an exec that fails inside the sandbox is reported with its reason,
    "nothing was launched", exit 1, recorded as launch-failed, and leaves
    no live-run entry;
  - a run refused while the sandbox was being built (here: no fresh /proc)
    leaves neither a run record nor a live-run entry, although both are
    now written while sandbox-init builds the sandbox;
  - the run record (events.jsonl 0600 with sandbox_started and limits, the
    posture file) and the live-run entry exist while the harness runs,
    before it has done anything but print its run id;
  - runs.json is rewritten without creating or deleting a file: it is one
    of two long-lived 0600 bodies (.runs.json.a/.b) swapped by a rename, no
    temp link is left behind, the inodes stay the same across runs, a
    symlink planted at runs.json is replaced (its target untouched), and a
    spare body that is a symlink or a hard link to another file is replaced
    without writing through it.
"""
import ctypes
import json
import os
import re
import signal
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, HIDE_EVERY_PROC, Sandbox, check, done, pids_with, skip  # noqa: E402


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def events(s, rid):
    p = os.path.join(s.ah, "runs", rid, "events.jsonl")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(line) for line in f if line.strip()]


def registry(s):
    try:
        with open(os.path.join(s.ah, "runs.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ignore_some_signals():
    for sig in (signal.SIGALRM, signal.SIGURG, signal.SIGTTOU):
        signal.signal(sig, signal.SIG_IGN)
    # struct kernel_sigaction {handler = SIG_IGN (1), flags, restorer, mask}
    ks = struct.pack("QQQQ", 1, 0, 0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(13, 33, ctypes.c_char_p(ks), None, 8)  # SYS_rt_sigaction


def harness_state(s, mode):
    # The harness reports its own state; sh is PID 2 (init is PID 1).
    script = ("echo PID=$$; grep -E '^Sig(Blk|Ign)' /proc/self/status; "
              "echo SID=$(cut -d' ' -f6 /proc/self/stat); ls /proc/self/fd | tr '\\n' ' '")
    # Launched with signals ignored, as a parent may leave them (nohup,
    # some CI runners): SIG_IGN survives exec, so the harness only starts
    # clean if agentstack puts every disposition back — glibc's reserved
    # real-time signal 33 included, which only the raw system call can set.
    r = subprocess.run([BIN, "run", mode, "shtest", "--", "-c", script], cwd=s.project,
                       env=s.env(), capture_output=True, text=True, timeout=60,
                       preexec_fn=ignore_some_signals)
    out = r.stdout
    check(r.returncode == 0, f"{mode}: the harness runs", (r.returncode, r.stderr))
    check("PID=2" in out, f"{mode}: the harness is PID 2 under sandbox-init", out)
    check(re.search(r"SigBlk:\s+0+\n", out) is not None, f"{mode}: no signal blocked", out)
    check(re.search(r"SigIgn:\s+0+\n", out) is not None, f"{mode}: no signal ignored", out)
    check("SID=2" in out, f"{mode}: the harness leads a session of its own", out)
    fds = out.rsplit("\n", 1)[-1].split()
    # ls itself holds one more descriptor (the directory it lists).
    check(len(fds) <= 4 and {"0", "1", "2"} <= set(fds),
          f"{mode}: only stdin/stdout/stderr are inherited", fds)


def cpu_list(text):
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def affinity(s, mode):
    allowed = sorted(os.sched_getaffinity(0))
    wants = [allowed] + ([[allowed[-1]], allowed[:-1]] if len(allowed) > 1 else [])
    for want in wants:
        r = subprocess.run([BIN, "run", mode, "shtest", "--", "-c",
                            "grep Cpus_allowed_list /proc/self/status"],
                           cwd=s.project, env=s.env(), capture_output=True, text=True,
                           timeout=60, preexec_fn=lambda w=want: os.sched_setaffinity(0, w))
        m = re.search(r"Cpus_allowed_list:\s*(\S+)", r.stdout)
        got = cpu_list(m.group(1)) if m else None
        check(r.returncode == 0 and got == want,
              f"{mode}: the harness has the caller's CPU affinity {want}", (got, r.stderr))


def children_of(pid):
    kids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def init_killed(s):
    marker = "31337.8"
    pr = subprocess.Popen([BIN, "run", "--lockdown", "shtest", "--", "-c",
                           f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & "
                           f"echo started; exec sleep {marker}"],
                          cwd=s.project, env=s.env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    head = pr.stdout.readline()
    while head and "started" not in head:
        head = pr.stdout.readline()
    inits = children_of(pr.pid)
    for pid in inits:
        os.kill(pid, signal.SIGKILL)
    try:
        out, err = pr.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pr.kill()
        out, err = pr.communicate()
    left = pids_with(marker)
    check(len(inits) == 1 and pr.returncode == 137 and "its init was killed" in err and left == [],
          "init killed from outside: exit 137, said so, and nothing of the sandbox is left",
          (inits, pr.returncode, err[-300:], left))


def init_closed(s, mode):
    # Every descriptor init holds, each tried through /proc/1/fd; then its
    # environ and mem. A line per success; "tried N" proves the loop ran.
    script = ("n=0; for f in /proc/1/fd/*; do n=$((n+1)); "
              "(exec 3<\"$f\") 2>/dev/null && echo \"OPENED $f\"; done; echo \"tried $n\"; "
              "for f in environ mem; do (exec 3</proc/1/$f) 2>/dev/null && echo \"OPENED $f\"; "
              "done; true")
    r = subprocess.run([BIN, "run", mode, "shtest", "--", "-c", script], cwd=s.project,
                       env=s.env(), capture_output=True, text=True, timeout=60)
    m = re.search(r"tried (\d+)", r.stdout)
    check(r.returncode == 0 and m and int(m.group(1)) >= 4 and "OPENED" not in r.stdout,
          f"{mode}: the harness cannot open sandbox-init's descriptors, environ or memory",
          (r.returncode, r.stdout[-400:], r.stderr[-300:]))


def nothing_left(s, mode):
    marker = "31337.7"
    script = (f"trap '' HUP INT QUIT TERM USR1 USR2; "
              f"setsid sh -c 'trap \"\" HUP INT QUIT TERM; exec sleep {marker}' </dev/null "
              f">/dev/null 2>&1 & echo started")
    try:
        r = subprocess.run([BIN, "run", mode, "shtest", "--", "-c", script], cwd=s.project,
                           env=s.env(), capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        r = subprocess.CompletedProcess([], -1, "", "run did not return within 60 s")
    alive = pids_with(marker)
    check(r.returncode == 0 and "started" in r.stdout and alive == [],
          f"{mode}: a detached child that ignores signals is gone when run returns",
          (r.returncode, r.stdout, r.stderr[-300:], alive))


def exec_fails(s):
    s.write("h.sh", "#!/nonexistent/interp\n")
    os.chmod(os.path.join(s.project, "h.sh"), 0o755)
    r = s.run("run", "--lockdown", "--", "./h.sh")
    check(r.returncode == 1 and "No such file or directory" in r.stderr
          and "nothing was launched" in r.stderr,
          "an exec failing inside the sandbox is reported, nothing launched", r.stderr)
    rid = run_id(r.stdout)
    ev = events(s, rid) if rid else []
    last = ev[-1] if ev else {}
    check(last.get("event") == "sandbox_exited" and last.get("error") == "launch-failed",
          "the failed launch is recorded", ev)
    check(registry(s) == {}, "no live-run entry is left", registry(s))
    os.unlink(os.path.join(s.project, "h.sh"))


def refused_during_build(s):
    runs = os.path.join(s.ah, "runs")
    before = sorted(os.listdir(runs)) if os.path.isdir(runs) else []
    r = subprocess.run(["unshare", "-Urm", "sh", "-c",
                        HIDE_EVERY_PROC + ' && exec "$@"', "sh",
                        BIN, "run", "--lockdown", "shtest", "--", "-c", "echo SHOULD-NOT-RUN"],
                       cwd=s.project, env=s.env(), capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "nothing was launched" in r.stderr
          and "SHOULD-NOT-RUN" not in r.stdout,
          "a build failure refuses, nothing launched", (r.returncode, r.stderr))
    after = sorted(os.listdir(runs)) if os.path.isdir(runs) else []
    check(after == before, "a run refused during the build leaves no run record",
          (before, after))
    reg = registry(s)
    check(reg in (None, {}), "a run refused during the build leaves no live-run entry", reg)


def record_before_launch(s):
    # While the harness runs (it waits on stdin), its record and its live-run
    # entry already exist: both were written before it was exec'd.
    p = subprocess.Popen([BIN, "run", "--lockdown", "shtest", "--", "-c",
                          "echo RID=$AGENTSTACK_RUN_ID; read x; echo GOT=$x"],
                         cwd=s.project, env=s.env(), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    head = ""
    for line in p.stdout:
        head += line
        if line.startswith("RID="):
            break
    rid = run_id(head)
    check(rid is not None and f"RID={rid}" in head, "the harness knows its run id", head)
    d = os.path.join(s.ah, "runs", rid or "none")
    ev = events(s, rid) if rid else []
    check([e["event"] for e in ev] == ["sandbox_started", "limits"],
          "sandbox_started and limits are recorded before the harness runs",
          [e["event"] for e in ev])
    reg = registry(s) or {}
    check(rid in reg and reg[rid].get("posture") == "lockdown",
          "the run is in the live-run registry while the harness runs", reg)
    out, err = p.communicate("go\n", timeout=60)
    check(p.returncode == 0 and "GOT=go" in out, "the harness then finishes", (out, err))
    ev = events(s, rid) if rid else []
    check(ev and ev[-1]["event"] == "sandbox_exited", "sandbox_exited is recorded last")
    mode = os.stat(os.path.join(d, "events.jsonl")).st_mode & 0o777 if rid else None
    check(mode == 0o600, "events.jsonl is 0600", oct(mode or 0))
    with open(os.path.join(d, "posture")) as f:
        check(f.read() == "lockdown", "the posture file names the mode")
    check(rid not in (registry(s) or {}), "the entry is gone after the run")


def registry_files(s):
    ah = s.ah
    a, b = os.path.join(ah, ".runs.json.a"), os.path.join(ah, ".runs.json.b")
    path = os.path.join(ah, "runs.json")
    inodes = set()
    for _ in range(3):
        r = s.run("run", "--lockdown", "--", "true")
        check(r.returncode == 0, "a lockdown run of true exits 0", r.stderr)
        st = os.lstat(path)
        inodes.add(st.st_ino)
        check(st.st_ino in (os.lstat(a).st_ino, os.lstat(b).st_ino),
              "runs.json is one of the two long-lived bodies")
        check(st.st_mode & 0o777 == 0o600 and (os.lstat(a).st_mode & 0o777) == 0o600
              and (os.lstat(b).st_mode & 0o777) == 0o600, "runs.json and its bodies are 0600")
        check(not os.path.lexists(os.path.join(ah, ".runs.json.swap")), "no swap link is left")
    check(inodes <= {os.lstat(a).st_ino, os.lstat(b).st_ino},
          "no registry write created a file", inodes)
    check(registry(s) == {}, "the registry is empty after the runs", registry(s))

    victim = os.path.join(s.root, "victim")
    with open(victim, "w") as f:
        f.write("VICTIM")
    os.unlink(path)
    os.symlink(victim, path)
    r = s.run("run", "--lockdown", "--", "true")
    check(r.returncode == 0 and "not in the live-run registry" not in r.stderr,
          "a run with runs.json planted as a symlink still registers", r.stderr)
    check(not os.path.islink(path) and open(victim).read() == "VICTIM",
          "the planted symlink is replaced, its target untouched")
    for body in (a, b):
        os.unlink(body)
    os.symlink(victim, a)
    os.link(victim, b)
    for _ in range(2):
        r = s.run("run", "--lockdown", "--", "true")
        check(r.returncode == 0 and "not in the live-run registry" not in r.stderr,
              "planted spare bodies do not stop the registry", r.stderr)
    check(open(victim).read() == "VICTIM" and os.stat(victim).st_nlink == 1,
          "a spare body planted as a symlink or hard link is never written through")
    check(not os.path.islink(a) and registry(s) == {}, "the bodies are ours again", registry(s))


def private_dirs(s):
    # runs/ and sandbox-home/ (and its per-harness dir) loosened by hand are
    # re-tightened; planted as symlinks they refuse the run, nothing written.
    dirs = [os.path.join(s.ah, "runs"), os.path.join(s.ah, "sandbox-home")]
    dirs.append(os.path.join(dirs[1], "shtest"))
    for d in dirs:
        os.chmod(d, 0o755)
    r = s.run("run", "--lockdown", "shtest", "--", "-c", "true")
    modes = [oct(os.stat(d).st_mode & 0o777) for d in dirs]
    check(r.returncode == 0 and modes == ["0o700"] * len(dirs),
          "runs/, sandbox-home/ and sandbox-home/<h>/ are re-tightened to 0700", (r.stderr, modes))
    for d in dirs[:2]:
        elsewhere = os.path.join(s.root, "elsewhere")
        os.mkdir(elsewhere)
        os.rename(d, d + ".real")
        os.symlink(elsewhere, d)
        r = s.run("run", "--lockdown", "--", "echo", "SHOULD-NOT-RUN")
        check(r.returncode == 1 and f"{d}: is a symlink" in r.stderr
              and "SHOULD-NOT-RUN" not in r.stdout and os.listdir(elsewhere) == [],
              f"{os.path.basename(d)}/ as a symlink: refused, nothing written through it",
              (r.returncode, r.stderr, os.listdir(elsewhere)))
        os.unlink(d)
        os.rename(d + ".real", d)
        os.rmdir(elsewhere)


def main():
    if os.geteuid() != 0 and not os.path.exists("/proc/self/ns/user"):
        skip("no user namespaces")
    with Sandbox() as s:
        for mode in ("--lockdown", "--sandbox"):
            harness_state(s, mode)
            affinity(s, mode)
            init_closed(s, mode)
            nothing_left(s, mode)
        init_killed(s)
        exec_fails(s)
        refused_during_build(s)
        record_before_launch(s)
        registry_files(s)
        private_dirs(s)
    done()


if __name__ == "__main__":
    main()
