"""Shared helpers for end-to-end scenarios (python3 stdlib only).

Every scenario runs the real binary with a temporary HOME and
AGENTSTACK_HOME, never the user's, and only loopback addresses.
"""
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("AS_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "agentstack")
BUILD = os.environ.get("AS_BUILD") or os.path.dirname(BIN)
SRC = os.environ.get("AS_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("AS_SHARED") or os.path.join(SRC, "..", "shared")
# Run a command with an unlocked gnome-keyring in the current D-Bus session:
# ["dbus-run-session", "--", "sh", KEYRING_SESSION, cmd...] (HOME a temp dir).
KEYRING_SESSION = os.path.join(SRC, "tests", "keyring_session.sh")


def files_holding(root, needle):
    """Paths (relative to root) of the files under root whose bytes contain
    needle: where a secret value must never be."""
    hits = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                with open(p, "rb") as fh:
                    if needle.encode() in fh.read():
                        hits.append(os.path.relpath(p, root))
            except OSError:
                pass
    return hits

_failures = 0
_passes = 0


class Sandbox:
    """A temporary HOME + AGENTSTACK_HOME + a project dir, removed on exit."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="as-e2e-")
        self.home = os.path.join(self.root, "home")
        self.ah = os.path.join(self.home, ".agentstack")
        self.project = os.path.join(self.root, "work", "proj")
        os.makedirs(self.home)
        os.makedirs(self.project)

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("AGENTSTACK_", "XDG_"))}
        e["HOME"] = self.home
        e["AGENTSTACK_HOME"] = self.ah
        e["NO_COLOR"] = "1"
        # the person running the suite consents to the sandbox projects'
        # grants, even from a terminal inside an agent session (docs/trust.md)
        e["AGENTSTACK_CONSENT_BY_PERSON"] = "1"
        e.update(extra)
        return e

    def write(self, rel, text, base=None):
        p = os.path.join(base or self.project, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def run(self, *args, cwd=None, input=None, env=None, timeout=60):
        return subprocess.run([BIN, *args], cwd=cwd or self.project,
                              input=input, env=env or self.env(),
                              capture_output=True, text=True, timeout=timeout)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        shutil.rmtree(self.root, ignore_errors=True)



def git(*args, cwd=None):
    """git with a fixed identity and no system or user config: scenarios
    build throwaway repositories and must not read the machine's."""
    e = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "init.defaultBranch=main", *args],
                          cwd=cwd, env=e, capture_output=True, text=True, timeout=60)


def write(path, text_):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text_)


def read(path):
    with open(path) as f:
        return f.read()


def files(root):
    """Every file under root, relative path -> text: compared before and
    after a refusal to prove nothing changed."""
    out = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = read(p)
    return out


def pids_with(marker):
    """Pids of the processes whose command line contains marker (str)."""
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(p)
            except OSError:
                pass
    return found


def check(cond, what, detail=""):
    """Records one assertion; prints a line either way."""
    global _failures, _passes
    if cond:
        _passes += 1
        print(f"ok   {what}")
    else:
        _failures += 1
        print(f"FAIL {what}")
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))


def done():
    """Prints the closing count and exits non-zero on any failure."""
    print(f"{_passes} passed, {_failures} failed")
    sys.exit(1 if _failures or not _passes else 0)
