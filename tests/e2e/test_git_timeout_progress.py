"""Every git call honours the git deadline (AGENTSTACK_GIT_TIMEOUT_MS), and
clones and fetches show progress on a terminal only (docs/library.md, "How
git is run").

The attack: a git that hangs — a fake `git` on PATH whose fetch and clone
never return, and a real git talking to a local TCP listener on 127.0.0.1
that accepts and never answers. `add skill` (the skill fetch) and `add from
git:` (the pack clone) must come back with a message naming the timeout and
exit 1, and leave no git behind. Only the message, the exit code and the
processes are asserted, never the time it took.
"""
import os
import pty
import shutil
import socket
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, pids_with  # noqa: E402

REAL_GIT = shutil.which("git")
BASE = 'version = 1\n\n[toolsets.default]\nskills = []\n'
TIMEOUT_MS = "1500"


def fake_git(sb, marker, mode):
    """A `git` first on PATH: init and everything else go to the real git;
    fetch and clone either hang (mode "hang", a sleep carrying marker, so a
    survivor can be found) or write their arguments to a log and a hostile
    progress line to stderr, then fail (mode "talk")."""
    d = os.path.join(sb.root, "fakebin-" + mode)
    os.makedirs(d)
    log = os.path.join(sb.root, "git-args-" + mode)
    if mode == "hang":
        # "; :" keeps the shell (named marker) alive as the sleep's parent
        act = 'exec sh -c "sleep 3600; :" "%s"' % marker
    else:
        act = ('echo "$@" >> "%s"; printf "Receiving objects:  50%%%% (1/2)\\r'
               '\\033[2Jremote: \\033]0;owned\\007hi\\n" >&2; exit 128' % log)
    p = os.path.join(d, "git")
    with open(p, "w") as f:
        f.write('#!/bin/sh\nfor a in "$@"; do case "$a" in fetch|clone) %s;; esac; done\n'
                'exec "%s" "$@"\n' % (act, REAL_GIT))
    os.chmod(p, stat.S_IRWXU)
    return d, log


def env_with(sb, bindir, **extra):
    e = sb.env(AGENTSTACK_GIT_TIMEOUT_MS=TIMEOUT_MS, **extra)
    e["PATH"] = bindir + os.pathsep + e.get("PATH", "/usr/bin:/bin")
    return e


def run_on_tty(args, env, cwd):
    """Runs agentstack with stderr on a pseudo-terminal; (rc, stderr bytes)."""
    m, s = pty.openpty()
    p = subprocess.Popen([BIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=s, env=env, cwd=cwd)
    os.close(s)
    got = b""
    while True:
        try:
            chunk = os.read(m, 4096)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    os.close(m)
    return p.wait(timeout=120), got


if not REAL_GIT:
    from aslib import skip
    skip("git is not installed")

with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", BASE)
    marker = "as-git-hang-%d" % os.getpid()
    bindir, _ = fake_git(sb, marker, "hang")
    env = env_with(sb, bindir)

    # the skill fetch (bundle git): init runs, the fetch hangs
    r = sb.run("add", "skill", "file:///nonexistent/skills.git", "--skill", "x", env=env)
    check(r.returncode == 1 and "git fetch timed out after 1500 ms and was stopped" in r.stderr
          and "AGENTSTACK_GIT_TIMEOUT_MS" in r.stderr,
          "add skill: a hanging fetch is stopped, the message names the timeout, exit 1",
          r.stderr)
    check(pids_with(marker) == [], "add skill: nothing of the hung git is left running",
          pids_with(marker))
    check(not [n for n in os.listdir(os.path.join(sb.ah, "store", "git"))
               if n.startswith(".tmp-")] if os.path.isdir(os.path.join(sb.ah, "store", "git"))
          else True, "add skill: the half-made clone is removed")

    # the pack clone (library git)
    r = sb.run("add", "from", "git:file:///nonexistent/pack.git@v1.0.0", "--write", env=env)
    check(r.returncode == 1 and "git clone timed out after 1500 ms and was stopped" in r.stderr,
          "add from git: a hanging clone is stopped, the message names the timeout, exit 1",
          r.stderr)
    check(pids_with(marker) == [], "add from git: nothing of the hung git is left running",
          pids_with(marker))
    with open(os.path.join(sb.project, ".agentstack", "agentstack.toml")) as f:
        check(f.read() == BASE, "add from git: the manifest is untouched")

# The real git against a listener that accepts and never answers.
with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", BASE)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    held = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                held.append(c)  # accepted, never read from or answered
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    env = sb.env(AGENTSTACK_GIT_TIMEOUT_MS=TIMEOUT_MS)
    r = sb.run("add", "skill", "https://127.0.0.1:%d/skills.git" % port, "--skill", "x", env=env)
    check(r.returncode == 1 and "git fetch timed out after 1500 ms and was stopped" in r.stderr,
          "a silent https remote on 127.0.0.1: stopped at the deadline, exit 1", r.stderr)
    check(len(held) >= 1, "(the listener was reached)", held)
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()

# Progress: --progress and git's stderr on a terminal only, never with -q
# or off a terminal; what git prints is shown without its escape sequences.
with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", BASE)
    bindir, log = fake_git(sb, "unused", "talk")
    env = env_with(sb, bindir)

    def args_logged():
        if not os.path.exists(log):
            return []
        with open(log) as f:
            lines = f.read().splitlines()
        os.remove(log)
        return lines

    for what, cmd in (("add skill", ["add", "skill", "file:///nonexistent/s.git",
                                     "--skill", "x"]),
                      ("add from git", ["add", "from", "git:file:///nonexistent/p.git@v1.0.0"])):
        rc, err = run_on_tty(cmd, env, sb.project)
        a = args_logged()
        check(rc == 1 and len(a) == 1 and "--progress" in a[0].split() and
              "-q" not in a[0].split() and "--quiet" not in a[0].split(),
              what + ": on a terminal git is asked for --progress", a)
        check(b"Receiving objects:  50% (1/2)\r" in err and err.count(b"Receiving objects") == 2,
              what + ": its progress is shown (and quoted again in the error)", err)
        check(b"\x1b" not in err and b"\x07" not in err and b"?[2Jremote: ?]0;owned?hi" in err,
              what + ": escape sequences from git's stderr never reach the terminal", err)

        rc, err = run_on_tty(["-q", *cmd], env, sb.project)
        a = args_logged()
        # git's last line is quoted in the error message (once), never shown as progress
        check(rc == 1 and len(a) == 1 and "--progress" not in a[0].split() and
              err.count(b"Receiving objects") == 1 and b"(1/2)\r" not in err,
              what + ": -q on a terminal: no progress", (a, err))

        r = sb.run(*cmd, env=env)
        a = args_logged()
        check(r.returncode == 1 and len(a) == 1 and "--progress" not in a[0].split() and
              r.stderr.count("Receiving objects") == 1, what + ": off a terminal: no progress",
              (a, r.stderr))

done()
