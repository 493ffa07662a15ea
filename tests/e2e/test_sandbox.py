"""agentstack run --sandbox: the confinement itself, through the real binary.

Plan output, identity (never uid 0 inside, no capabilities, no-new-privs,
seccomp), the read-only workspace and the [policy.filesystem] write grant,
.env shadowing, host files invisible, host submounts below a read-only
bind read-only too, the seccomp deny-list (AF_UNIX,
clone3, unshare, mount, TIOCSTI), exit-code and signal propagation, the
whole tree dying with the run, refusals when user namespaces or a fresh
/proc are unavailable, and the same run as an unprivileged user.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, bin_for_other, check, HIDE_EVERY_PROC, done, pids_with, skip_part  # noqa: E402

PLAN_LABEL = "SANDBOX / PROXIED · DIRECT ROUTE OPEN"


def runs_of(s):
    d = os.path.join(s.ah, "runs")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def events(s, rid):
    p = os.path.join(s.ah, "runs", rid, "events.jsonl")
    with open(p) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def machine(s, text):
    s.write("agentstack.toml", "version = 1\n" + text, base=s.ah)


PROBE = r'''
import ctypes, errno, fcntl, os, socket, termios
def t(name, f):
    try:
        f(); print(name, "ALLOWED")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno, e.errno))
t("af_unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
t("socketpair", lambda: socket.socketpair())
libc = ctypes.CDLL(None, use_errno=True)
def sc(name, *a):
    r = libc.syscall(*a)
    print(name, "ALLOWED" if r >= 0 else "refused " + errno.errorcode.get(ctypes.get_errno(), "?"))
sc("unshare", 272, 0x10000000)
sc("clone3", 435, 0, 0)
sc("mount", 165, b"none", b"/tmp", b"tmpfs", 0, 0)
sc("ptrace", 101, 16, 1, 0, 0)
t("tiocsti", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitpid(pid, 0)[1] >> 8)
for name, nr in (("setns", 308), ("keyctl", 250), ("bpf", 321), ("perf_event_open", 298),
                 ("io_uring_setup", 425), ("pivot_root", 155), ("chroot", 161),
                 ("open_tree", 428), ("mount_setattr", 442), ("userfaultfd", 323),
                 ("process_vm_readv", 310), ("init_module", 175)):
    sc(name, nr, 0, 0, 0, 0, 0)
for d in ("/usr", "/etc", "/", "/workspace", "/tmp", "/dev/shm", "/root"):
    try:
        open(os.path.join(d, "probe-w"), "w").close(); print("write", d, "ALLOWED")
    except OSError as e:
        print("write", d, "refused", errno.errorcode.get(e.errno, e.errno))
print("securebits", libc.prctl(27, 0, 0, 0, 0))
# as exec'd (python itself adds LC_CTYPE to os.environ in the C locale)
with open("/proc/self/environ", "rb") as f:
    print("env", " ".join(sorted(e.split(b"=", 1)[0].decode() for e in f.read().split(b"\0") if e)))
'''


def main():
    with Sandbox() as s:
        machine(s, '[policy.egress]\n"*" = ["!blocked.invalid"]\n')

        # --plan: names posture, mounts and the exact command; creates nothing.
        r = s.run("run", "--sandbox", "--plan", "shtest", "--", "-c", "echo 'hi there'")
        check(r.returncode == 0, "--plan exits 0", r.stderr)
        check(PLAN_LABEL in r.stdout, "--plan shows the posture label", r.stdout)
        check("command: /usr/bin/sh -c 'echo '\\''hi there'\\'''" in r.stdout
              or "command: /bin/sh -c 'echo '\\''hi there'\\'''" in r.stdout,
              "--plan shows the exact command", r.stdout)
        check("ro      /workspace ← " + os.path.realpath(s.project) in r.stdout,
              "--plan lists the read-only workspace mount", r.stdout)
        check("host loopback" in r.stdout, "--plan says host loopback stays reachable")
        check(runs_of(s) == [], "--plan creates no run record")

        # A live run: banner, output, record.
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo hi; id -u; pwd")
        check(r.returncode == 0, "a sandbox run exits 0", r.stderr)
        rid = run_id(r.stdout)
        check(rid is not None, "the banner names the run id", r.stdout)
        check("hi\n" in r.stdout and "/workspace\n" in r.stdout, "the harness runs in /workspace")
        uid = r.stdout.split("hi\n", 1)[1].split("\n", 1)[0] if "hi\n" in r.stdout else ""
        check(uid not in ("", "0"), "the harness is never uid 0 inside", uid)
        check("sandbox exited cleanly." in r.stderr, "clean exit is reported", r.stderr)
        ev = events(s, rid) if rid else []
        names = [e["event"] for e in ev]
        check(names[:1] == ["sandbox_started"] and names[-1:] == ["sandbox_exited"],
              "events: sandbox_started … sandbox_exited", names)
        check(ev and ev[-1].get("code") == 0, "sandbox_exited records code 0")
        with open(os.path.join(s.ah, "runs", rid, "posture")) as f:
            check(f.read() == "sandbox", "the posture slug is stored")
        check(all("prev" in e for e in ev), "every event is hash-chained")

        # Capabilities, no-new-privs, seccomp.
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status")
        caps = dict(line.split(":\t") for line in r.stdout.splitlines() if ":\t" in line)
        check(all(caps.get(k) == "0000000000000000" for k in
                  ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")),
              "every capability set is empty (bounding included)", caps)
        check(caps.get("NoNewPrivs") == "1" and caps.get("Seccomp") == "2",
              "no-new-privs and a seccomp filter are on", caps)

        # seccomp deny-list (python3 from /usr/bin is visible inside).
        if os.path.exists("/usr/bin/python3"):
            s.write("probe.py", PROBE)
            r = s.run("run", "--sandbox", "/usr/bin/python3", "--", "probe.py")
            out = r.stdout
            check("af_unix refused EPERM" in out, "socket(AF_UNIX) is refused", out)
            check("socketpair ALLOWED" in out, "socketpair stays allowed", out)
            check("unshare refused EPERM" in out, "unshare is refused", out)
            check("clone3 refused ENOSYS" in out, "clone3 answers ENOSYS", out)
            check("mount refused EPERM" in out, "mount is refused", out)
            check("ptrace refused EPERM" in out, "ptrace is refused", out)
            check("tiocsti refused" in out, "TIOCSTI is refused", out)
            check("fork 7" in out, "plain fork still works (clone without namespace flags)", out)
            for name in ("setns", "keyctl", "bpf", "perf_event_open", "io_uring_setup",
                         "pivot_root", "chroot", "open_tree", "mount_setattr", "userfaultfd",
                         "process_vm_readv", "init_module"):
                check(f"{name} refused EPERM" in out, f"{name} is refused", out)
            for d in ("/usr", "/etc", "/", "/workspace"):
                check(f"write {d} refused" in out, f"writing in {d} is refused", out)
            for d in ("/tmp", "/dev/shm", "/root"):
                check(f"write {d} ALLOWED" in out, f"writing in {d} works", out)
            m = re.search(r"securebits (\d+)", out)
            check(m and int(m.group(1)) & 0xEF == 0xEF,
                  "securebits: NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE set and locked, "
                  "KEEP_CAPS locked", out)
            m = re.search(r"env (.*)", out)
            keys = set(m.group(1).split()) if m else set()
            check(keys and keys <= {"PATH", "HOME", "TERM", "AGENTSTACK_RUN_ID", "HTTPS_PROXY",
                                    "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                                    "no_proxy"} and "AGENTSTACK_HOME" not in keys,
                  "the harness's environment holds only PATH, HOME, TERM, the run id and the "
                  "proxy variables", keys)
        else:
            skip_part("/usr/bin/python3 is missing: the seccomp deny-list, write probes, "
                      "securebits and environment checks did not run (apt-get install python3)")

        # Read-only workspace by default; the write scope grants rw.
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo pwned > /workspace/pwned.txt")
        check(r.returncode != 0, "a write to the read-only workspace fails", r.returncode)
        check("read-only" in r.stdout.lower() + r.stderr.lower(), "the banner/harness says read-only")
        check(not os.path.exists(os.path.join(s.project, "pwned.txt")), "no file reached the host")
        check("error: sandbox exited with code" in r.stderr, "a non-zero exit is reported", r.stderr)
        machine(s, '[policy.egress]\n"*" = ["!blocked.invalid"]\n'
                   '[policy.filesystem]\nwrite = ["./**"]\n')
        os.makedirs(os.path.join(s.project, ".git", "hooks"))
        s.write(".git/config", "[core]\n")
        r = s.run("run", "--sandbox", "shtest", "--", "-c",
                  "echo pwned > /workspace/pwned.txt && echo hook > /workspace/.git/hooks/post-checkout"
                  " ; echo rc=$?")
        check("read-write" in r.stdout, "write = ['./**'] shows read-write", r.stdout)
        p = os.path.join(s.project, "pwned.txt")
        check(os.path.exists(p) and open(p).read() == "pwned\n", "the write reached the workspace")
        check(not os.path.exists(os.path.join(s.project, ".git/hooks/post-checkout")),
              ".git/hooks stays read-only in a writable workspace", r.stdout + r.stderr)
        os.unlink(p)
        machine(s, '[policy.filesystem]\nwrite = ["src/**"]\n')
        r = s.run("run", "--sandbox", "--plan", "shtest", "--", "-c", "true")
        check("read-only" in r.stdout, "write = ['src/**'] rounds down to read-only", r.stdout)
        machine(s, '[policy.egress]\n"*" = ["!blocked.invalid"]\n')

        # Secrets in the project are shadowed by empty files.
        s.write(".env", "API_TOKEN=sekrit\n")
        s.write(".env.local", "OTHER=sekrit2\n")
        s.write(".agentstack/.env.production", "P=sekrit3\n")
        s.write("agentstack.local.toml", "x = 1\n")
        s.write("visible.txt", "hello\n")
        r = s.run("run", "--sandbox", "shtest", "--", "-c",
                  "cat /workspace/.env /workspace/.env.local /workspace/.agentstack/.env.production "
                  "/workspace/agentstack.local.toml; echo END; cat /workspace/visible.txt")
        check("sekrit" not in r.stdout and "END\nhello" in r.stdout,
              ".env*, the overlay and manifest-dir .env files read empty; other files read", r.stdout)

        # The host is not visible: home, /etc/shadow, other dirs.
        s.write("host-secret", "TOPSECRET\n", base=s.home)
        r = s.run("run", "--sandbox", "shtest", "--", "-c",
                  f"cat {s.home}/host-secret /etc/shadow 2>&1; ls /; cat /etc/passwd")
        check("TOPSECRET" not in r.stdout, "the host home is not visible", r.stdout)
        top = set(r.stdout.split())
        check("home" not in top and "opt" not in top and "srv" not in top,
              "only the synthesized root is visible", r.stdout)
        check("root:x:0:0" in r.stdout and "agent:x:" in r.stdout and "$" not in r.stdout,
              "/etc/passwd is synthesized", r.stdout)

        # Exit codes and signals propagate.
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "exit 7")
        check(r.returncode == 7, "exit 7 propagates", r.returncode)
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "kill -TERM $$")
        check(r.returncode == 128 + 15, "a signal propagates as 128+n", r.returncode)
        check("killed by a signal" in r.stderr, "the signal is reported", r.stderr)
        rid = run_id(r.stdout)
        check(rid and events(s, rid)[-1].get("signal") == 15, "sandbox_exited records the signal")
        # Arguments after the command reach the harness verbatim, a second
        # "--" included (sh -c makes it $0).
        r = s.run("run", "--sandbox", "shtest", "--", "-c", 'echo "argv:$0:$*"', "--", "x")
        check(r.returncode == 0 and "argv:--:x\n" in r.stdout,
              "arguments after the command, a second -- included, reach the harness verbatim",
              r.stdout + r.stderr)
        r = s.run("run", "--sandbox", "no-such-command-xyz")
        check(r.returncode == 1 and "nothing was launched" in r.stderr,
              "an unknown command is refused before launch", r.stderr)

        # The PID namespace: init is PID 1, the harness 2; background
        # processes die with the run.
        marker = "31337.5"
        r = s.run("run", "--sandbox", "shtest", "--", "-c",
                  f"sleep {marker} & echo pid=$$; cat /proc/1/status | grep -c Name")
        check("pid=2\n" in r.stdout, "the harness is PID 2 under its own init", r.stdout)
        alive = pids_with(marker)
        check(alive == [], "a background child dies with the run", alive)

        # SIGINT reaches the harness through init; its exit status comes back.
        env = s.env()
        pr = subprocess.Popen([BIN, "run", "--sandbox", "shtest", "--", "-c",
                               "trap 'echo got-int; exit 3' INT; echo ready; "
                               "while :; do sleep 0.05; done"],
                              cwd=s.project, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        for line in pr.stdout:
            if line.strip() == "ready":
                break
        # The terminal's Ctrl-C goes to agentstack's process group only:
        # init must not be in it, or the harness would get SIGINT twice.
        def stat(pid):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()
            except OSError:
                return ["", "", ""]
        kids = [p for p in os.listdir("/proc") if p.isdigit() and stat(p)[1] == str(pr.pid)]
        check(kids and all(stat(k)[2] != stat(pr.pid)[2] for k in kids),
              "sandbox-init is outside agentstack's process group", kids)
        pr.send_signal(signal.SIGINT)
        out, err = pr.communicate(timeout=30)
        check(pr.returncode == 3 and "got-int" in out, "SIGINT is forwarded to the harness",
              (pr.returncode, out, err))
        # A harness that ignores SIGTERM is killed 2 s later, tree and all.
        pr = subprocess.Popen([BIN, "run", "--sandbox", "shtest", "--", "-c",
                               "trap '' TERM; echo ready; while :; do sleep 0.05; done"],
                              cwd=s.project, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        head = ""
        for line in pr.stdout:
            head += line
            if line.strip() == "ready":
                break
        pr.send_signal(signal.SIGTERM)
        out, err = pr.communicate(timeout=30)
        out = head + out
        check(pr.returncode != 0 and "killed by a signal" in err,
              "a harness ignoring SIGTERM is killed after the grace period", (pr.returncode, err))
        rid = run_id(out)
        check(rid and events(s, rid)[-1]["event"] == "sandbox_exited",
              "the killed run still records sandbox_exited")

        # No user namespaces / no fresh /proc: refuse, nothing launched.
        before = runs_of(s)
        r = subprocess.run(["unshare", "-Ur", "sh", "-c",
                            'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh",
                            BIN, "run", "--sandbox", "shtest", "--", "-c", "echo SHOULD-NOT-RUN"],
                           cwd=s.project, env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and "nothing was launched" in r.stderr
              and "SHOULD-NOT-RUN" not in r.stdout and "namespace" in r.stderr,
              "no user namespaces: refused, nothing launched", (r.returncode, r.stderr))
        r = subprocess.run(["unshare", "-Urm", "sh", "-c",
                            HIDE_EVERY_PROC + ' && exec "$@"', "sh",
                            BIN, "run", "--sandbox", "shtest", "--", "-c", "echo SHOULD-NOT-RUN"],
                           cwd=s.project, env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and "nothing was launched" in r.stderr and "/proc" in r.stderr
              and "SHOULD-NOT-RUN" not in r.stdout,
              "no fresh /proc: refused with the reason, nothing launched", (r.returncode, r.stderr))
        check(runs_of(s) == before, "a refused run leaves no record")

        # An unwritable run directory: refuse to run unobserved.
        runs = os.path.join(s.ah, "runs")
        if os.geteuid() != 0:
            os.chmod(runs, 0o500)
            r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo SHOULD-NOT-RUN")
            check(r.returncode == 1 and "unobserved" in r.stderr, "unobserved runs are refused")
            os.chmod(runs, 0o700)
        else:
            shutil.rmtree(runs)
            s.write("runs", "not a dir", base=s.ah)
            r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo SHOULD-NOT-RUN")
            check(r.returncode == 1 and "unobserved" in r.stderr
                  and "SHOULD-NOT-RUN" not in r.stdout, "unobserved runs are refused", r.stderr)
            os.unlink(runs)

        # A host mount below a read-only bind (here a tmpfs on /usr/local/src,
        # in a private mount namespace of this test only) is read-only inside.
        if os.geteuid() == 0 and os.path.isdir("/usr/local/src"):
            r = subprocess.run(
                ["unshare", "-m", "--propagation", "private", "sh", "-c",
                 'mount -t tmpfs none /usr/local/src && touch /usr/local/src/host-ok && '
                 'exec "$@"', "sh", BIN, "run", "--sandbox", "shtest", "--", "-c",
                 "ls /usr/local/src; touch /usr/local/src/x && echo WROTE; "
                 "grep ' /usr/local/src ' /proc/self/mountinfo"],
                cwd=s.project, env=s.env(), capture_output=True, text=True, timeout=60)
            check("host-ok" in r.stdout and "WROTE" not in r.stdout
                  and "Read-only file system" in r.stderr
                  and re.search(r" /usr/local/src ro,nosuid,nodev", r.stdout) is not None,
                  "a submount of a read-only bind is read-only, nosuid, nodev inside",
                  r.stdout + r.stderr)
        elif os.geteuid() != 0:
            skip_part("not root: the read-only host-submount check did not run (it mounts a "
                      "tmpfs in a private mount namespace)")
        else:
            skip_part("no /usr/local/src: the read-only host-submount check did not run")

    # The same as an ordinary user (user namespaces, no root anywhere).
    if os.geteuid() == 0 and shutil.which("setpriv"):
        with Sandbox() as s:
            exe = bin_for_other(s.root)
            for root, dirs, files in os.walk(s.root):
                for n in dirs + files:
                    os.chown(os.path.join(root, n), 65534, 65534)
            os.chown(s.root, 65534, 65534)
            os.chmod(s.root, 0o755)
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                exe, "run", "--lockdown", "shtest", "--", "-c",
                                "id -u; grep CapEff /proc/self/status; echo x > /workspace/f"],
                               cwd=s.project, env=s.env(), capture_output=True, text=True,
                               timeout=60)
            check("65534\n" in r.stdout and "CapEff:\t0000000000000000" in r.stdout,
                  "as an unprivileged user: runs as that uid, no capabilities", r.stdout + r.stderr)
            check(r.returncode != 0 and not os.path.exists(os.path.join(s.project, "f")),
                  "as an unprivileged user: the workspace is read-only", r.returncode)
            rid = run_id(r.stdout)
            check(rid and os.path.exists(os.path.join(s.ah, "runs", rid, "events.jsonl")),
                  "as an unprivileged user: the run is recorded")
    elif os.geteuid() == 0:  # (as an ordinary user, every check above already ran as one)
        skip_part("setpriv is missing (util-linux): the run as an unprivileged user did not run")
    done()


if __name__ == "__main__":
    main()
