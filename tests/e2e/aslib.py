"""Shared helpers for end-to-end scenarios (python3 stdlib only).

Every scenario runs the real binary with a temporary HOME and
AGENTSTACK_HOME, never the user's, and only loopback addresses.
"""
import hashlib
import hmac
import json
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
# Third-party test data kept in the repository (tests/data/README.md).
DATA = os.environ.get("AS_DATA") or os.path.join(SRC, "tests", "data")
# Run a command with an unlocked gnome-keyring in the current D-Bus session:
# ["dbus-run-session", "--", "sh", KEYRING_SESSION, cmd...] (HOME a temp dir).
KEYRING_SESSION = os.path.join(SRC, "tests", "keyring_session.sh")


def bin_for_other(root):
    """A copy of BIN under root (mode 0755) for a test that runs it as
    another user: the build tree may sit below a 0700 directory (CI clones
    into mktemp -d), where that user could not reach BIN itself."""
    exe = os.path.join(root, "agentstack-bin")
    shutil.copy2(BIN, exe)
    os.chmod(exe, 0o755)
    return exe


# A shell line that, run in `unshare -Urm`, leaves no fully visible procfs
# in that mount namespace, so the kernel refuses every fresh proc mount:
# /proc/sys of each proc mount is covered (not only /proc's: another one,
# a chroot's say, would otherwise let a fresh mount through).
HIDE_EVERY_PROC = (
    "for m in $(awk '{for(i=7;i<=NF;i++) if ($i==\"-\") {if ($(i+1)==\"proc\") print $5; break}}' "
    "/proc/self/mountinfo); do mount -t tmpfs none \"$m/sys\" || exit 1; done")


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

def _rows(path):
    """(rows, first-row digest, last-row digest) of a chained log."""
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except FileNotFoundError:
        return 0, "", ""
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        return 0, "", ""
    return (len(lines), hashlib.sha256(lines[0]).hexdigest(),
            hashlib.sha256(lines[-1]).hexdigest())


def append_chain(path, rows):
    """Appends rows to a chained audit log the way docs/audit.md specifies
    (each row's "prev" is the sha256 of the line before it, the first one
    64 zeros), then seals the anchor: an independent writer, so the binary's
    readers are checked against the documentation, not against themselves."""
    prev = "0" * 64
    if os.path.exists(path):
        with open(path, "rb") as f:
            lines = [l for l in f.read().split(b"\n") if l]
        if lines:
            prev = hashlib.sha256(lines[-1]).hexdigest()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "ab") as f:
        for r in rows:
            r = dict(r)
            r["prev"] = prev
            line = json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()
            f.write(line + b"\n")
            prev = hashlib.sha256(line).hexdigest()
    write_anchor(os.path.dirname(os.path.dirname(path)), path)


def write_anchor(home, log, since=0):
    """Seals log's anchor (<log>.head) as agentstack's writer does after an
    append: for tests that build a chained log by hand (docs/audit.md,
    "The anchor"). The key is home's audit key, created when absent."""
    kdir = os.path.join(home, "audit")
    os.makedirs(kdir, mode=0o700, exist_ok=True)
    kp = os.path.join(kdir, "key")
    if not os.path.exists(kp):
        fd = os.open(kp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32))
        os.close(fd)
    with open(kp, "rb") as f:
        key = f.read()
    rows, first, last = _rows(log)
    orows, ofirst, olast = _rows(log + ".1")
    body = ('{"v":1,"rows":%d,"first":"%s","last":"%s","old_rows":%d,"old_first":"%s",'
            '"old_last":"%s","since":%d' % (rows, first, last, orows, ofirst, olast, since))
    ident = "/".join(log.split("/")[-2:])
    mac = hmac.new(key, b"agentstack-audit-head-v1\0" + ident.encode() + b"\0" +
                   body.encode(), hashlib.sha256).hexdigest()
    rec = body + ',"mac":"%s"}' % mac
    rec = rec + " " * (511 - len(rec)) + "\n"
    fd = os.open(log + ".head", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, rec.encode())
    os.close(fd)


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


# Skips (docs/building.md, "What make check skipped"): a scenario that
# cannot run here exits 77, which ctest counts as skipped (SKIP_RETURN_CODE)
# instead of passed. Under CI=true a skip is a failure unless the scenario
# says CI's machine may lack the prerequisite too: CI installs everything
# the suite needs and runs as root, so a skip there hides a test that never
# ran.
CI = os.environ.get("CI") == "true"
SKIP_EXIT = 77
_skipped = []


def skip(why, even_in_ci=False):
    """The whole scenario cannot run here: one loud line, exit 77 (a failure
    under CI=true unless even_in_ci)."""
    if CI and not even_in_ci:
        print(f"FAIL skipped under CI=true, where it must run: {why}")
        sys.exit(1)
    print(f"SKIP: {why}")
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(SKIP_EXIT)


def skip_part(why, even_in_ci=False):
    """One block of the scenario cannot run here: a loud line now, and done()
    reports the whole scenario as skipped (exit 77) instead of passed, naming
    what did not run. Under CI=true (unless even_in_ci) a failed check."""
    if CI and not even_in_ci:
        check(False, f"skipped under CI=true, where it must run: {why}")
        return
    _skipped.append(why)
    print(f"SKIP (part): {why}")


def shard(items):
    """The part of items this process runs. A scenario whose file has the
    line `CTEST_SHARDS = N` is registered by CMakeLists.txt as N ctest
    entries, <dir>/<name>/1 ... /N, the i-th run with the argument "i/N":
    it takes items i-1, i-1+N, ..., so `ctest -j` runs the parts side by side
    and together they cover every item once (docs/building.md, "How long
    make check takes"). Run by hand without the argument: every item."""
    items = list(items)
    if len(sys.argv) < 2:
        return items
    i, _, n = sys.argv[1].partition("/")
    i, n = int(i), int(n)
    if not 1 <= i <= n:
        raise SystemExit(f"bad shard {sys.argv[1]!r}: want i/N with 1 <= i <= N")
    print(f"shard {i} of {n}: {len(items[i - 1::n])} of {len(items)} items")
    return items[i - 1::n]


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
    """Prints the closing count; exits 1 on any failure (or when nothing was
    checked), 77 when a part was skipped, else 0."""
    print(f"{_passes} passed, {_failures} failed, {len(_skipped)} skipped")
    if _failures or not _passes:
        sys.exit(1)
    if _skipped:
        for why in _skipped:
            print(f"SKIP (part): {why}", file=sys.stderr)
        sys.exit(SKIP_EXIT)
    sys.exit(0)
