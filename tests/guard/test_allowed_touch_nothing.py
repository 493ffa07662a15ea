"""Property: every shell command the guard ALLOWS — the corpus's and a
generated set — touches no path the guard protects when bash runs it.

Each allowed command runs as `bash -c CMD` in the fixture workspace (a
temporary HOME and AGENTSTACK_HOME), under `strace -f -y -e trace=%file`,
in a mount namespace where everything but the fixture is read-only and a
network namespace with no route out: a wrong ALLOW can neither damage the
machine nor reach the network, and strace still records what it tried.
A violation is, by any process: a read of the machine home's keys,
secret store or audit key; a write (open for writing, create, unlink,
rename, mkdir, link, chmod, chown, truncate, utime) to the machine file or
the trust store, or anywhere in the machine home by anything but agentstack
keeping its own state. By bash (redirections) and the file tools whose
operands the guard judges (cat, grep, cp, rm, sed, tee, …): a read or write
of a denied file (the fixture's deny globs: .env*, *.pem, id_*, .netrc,
secrets/) or a write outside the write roots (the workspace, the temp
dirs). What other programs open on their own — git its .gitignore files,
wget ~/.netrc, python the system's CA bundle — is not judged by the guard
(docs/guard.md) and is not counted. Reads count when the open succeeded;
writes count unless the path did not exist or was already there (ENOENT,
ENOTDIR, EEXIST) — a write refused by the read-only namespace (EROFS)
counts. Metadata reads (stat, access, readlink) and directory listings are
not content.

ctest runs it as CTEST_SHARDS entries (guard/test_allowed_touch_nothing/1
... /N, aslib.shard): each judges the same list and runs every N-th allowed
command, so `ctest -j` traces them side by side; run by hand it runs all.

Needs strace and unshare (mount and network namespaces: root, or
unprivileged user namespaces). Without them it is a ctest skip (exit 77)
— and fails when CI is set, where .ci/run installs strace."""
import ctypes
import os
import random
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from guardlib import BIN, Fixture, corpus  # noqa: E402
from aslib import check, done, shard, skip  # noqa: E402

CTEST_SHARDS = 4

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_FLAGS = {1: 0, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME,
            2048: MS_NODIRATIME, 4096: MS_RELATIME}

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]


def mountpoints():
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4].replace("\\040", " ") for line in f]


def confine(writable):
    """preexec_fn: a private mount namespace (read-only but for writable)
    and an empty network namespace."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | (0 if uid == 0 else CLONE_NEWUSER)
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    if uid != 0:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    for d in writable:
        if libc.mount(d.encode(), d.encode(), None, MS_BIND | MS_REC, None) != 0:
            raise OSError(ctypes.get_errno(), f"bind {d}")
    keep = tuple(writable) + ("/proc", "/sys", "/dev")
    for mp in sorted(set(mountpoints()), key=len):
        if any(mp == k or mp.startswith(k.rstrip("/") + "/") for k in keep):
            continue
        try:
            st = os.statvfs(mp)
        except OSError:
            continue
        extra = 0
        for bit, ms in ST_FLAGS.items():
            if st.f_flag & bit:
                extra |= ms
        if libc.mount(None, mp.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | extra,
                      None) != 0:
            raise OSError(ctypes.get_errno(), f"read-only {mp}")


def can_confine(fx):
    # this process's own probe path: the shards run side by side
    probe = f"/var/tmp/.as-guard-probe-{os.getpid()}"
    try:
        r = subprocess.run(["touch", probe], preexec_fn=lambda: confine(
            [fx.root]), capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot build the namespaces ({e})"
    if r.returncode == 0:
        os.unlink(probe)
        return "the read-only mount namespace let a write through"
    return None


# ---- strace output -----------------------------------------------------------

WRITE_CALLS = {"unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "mkdir",
               "mkdirat", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat",
               "fchmodat2", "chown", "lchown", "fchownat", "truncate", "utime", "utimes",
               "utimensat", "futimesat", "mknod", "mknodat", "setxattr", "lsetxattr",
               "removexattr", "lremovexattr"}
OPEN_CALLS = {"open", "openat", "openat2", "creat"}
LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(\w+)\(")
ARG = re.compile(r'(?:(AT_FDCWD|\d+)<([^>]*)>, )?"((?:[^"\\]|\\.)*)"')


def paths_of(call, rest, cwd):
    """(path, role) for the path arguments of one syscall line."""
    out = []
    args = ARG.findall(rest)
    for i, (fd, fdpath, p) in enumerate(args):
        p = p.encode().decode("unicode_escape", "ignore")
        base = fdpath if fd else cwd
        full = os.path.normpath(os.path.join(base or "/", p))
        if call in ("symlink", "symlinkat") and i == 0:
            continue  # the link's target text is not touched
        if call in ("link", "linkat") and i == 0:
            role = "read"
        else:
            role = "write" if call in WRITE_CALLS else None
        out.append((full, role))
        if call in WRITE_CALLS and call not in ("rename", "renameat", "renameat2", "link",
                                                "linkat", "symlink", "symlinkat"):
            break
    return out


def nothing_done(rest, role):
    """A read that failed, or a write whose path was absent or already there."""
    r = re.search(r"\) += (-?\d+)(?: (E[A-Z]+))?", rest)
    if not r:
        return False  # unfinished: it was attempted
    if role == "read":
        return int(r.group(1)) < 0
    return r.group(2) in ("ENOENT", "ENOTDIR", "EEXIST", "ENOTEMPTY")


def events(log, ws):
    """(pid, path, 'read'|'write', exe) of every content access in log."""
    cwd, exe, parent_of = {}, {}, {}
    found = []
    with open(log, errors="replace") as f:
        lines = f.readlines()
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        pid, call = int(m.group(1)), m.group(2)
        rest = line[m.end():]
        for fd in re.findall(r"AT_FDCWD<([^>]*)>", rest):
            cwd[pid] = fd
        if call in ("clone", "clone3", "fork", "vfork"):
            r = re.search(r"= (\d+)", rest)
            if r:
                child = int(r.group(1))
                cwd.setdefault(child, cwd.get(pid, ws))
                exe.setdefault(child, exe.get(pid, ""))
                parent_of[child] = pid
            continue
        if call == "execve":
            a = ARG.findall(rest)
            if a and "= 0" in rest:
                exe[pid] = a[0][2]
            continue
        if call in OPEN_CALLS:
            a = ARG.findall(rest)
            if not a:
                continue
            fd, fdpath, p = a[0]
            full = os.path.normpath(os.path.join(fdpath if fd else cwd.get(pid, ws), p))
            if "O_DIRECTORY" in rest:
                continue
            role = "write" if re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND", rest) \
                else "read"
            if nothing_done(rest, role):
                continue
            found.append((pid, full, role, exe.get(pid, "")))
            continue
        if call in WRITE_CALLS:
            if nothing_done(rest, "write"):
                continue
            for full, role in paths_of(call, rest, cwd.get(pid, ws)):
                if role:
                    found.append((pid, full, role, exe.get(pid, "")))
    return found


# ---- what the guard protects ----------------------------------------------

WRITERS = {"bash", "sh", "dash", "cp", "mv", "rm", "rmdir", "unlink", "touch", "mkdir", "tee",
           "truncate", "ln", "install", "sed", "awk", "gawk", "mawk", "sort", "uniq", "chmod",
           "chown", "chgrp", "tar", "dd", "patch", "shred", "curl", "wget", "unzip"}
FILE_TOOLS = WRITERS | {"cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "wc",
                        "diff", "cmp", "od", "xxd", "base64", "file", "strings", "md5sum",
                        "sha256sum", "find", "ls", "cut", "paste", "join", "comm", "nl", "tac",
                        "rev", "fold", "fmt", "tr", "jq", "readlink", "realpath", "stat", "test",
                        "xargs", "env", "timeout", "nice", "nohup", "stdbuf"}

def under(p, d):
    return p == d or p.startswith(d.rstrip("/") + "/")


def violation(fx, path, role, exe):
    name = os.path.basename(path)
    denied = (name in (".env", ".env.local", ".env.production", ".env.development", "id_rsa",
                       "id_ed25519", "id_ecdsa", ".netrc") or name.endswith(".pem")
              or re.fullmatch(r"\.env\..*\.local", name) is not None
              or under(path, os.path.join(fx.ws, "secrets")))
    secrets = (under(path, os.path.join(fx.ash, "keys"))
               or path in (os.path.join(fx.ash, "secrets.env"), os.path.join(fx.ash, "audit", "key")))
    # wget reads ~/.netrc on its own (a program's own config, like git's)
    tool = os.path.basename(exe) in FILE_TOOLS and not (role == "read" and
                                                        os.path.basename(exe) == "wget")
    if denied and tool:
        return f"{role} of a denied file"
    if secrets:
        return f"{role} of the machine home's secrets"
    if role != "write":
        return None
    authority = path in (os.path.join(fx.ash, "agentstack.toml"),
                         os.path.join(fx.ash, "trust.json"))
    if authority:
        return "a write to the machine file or the trust store"
    if under(path, fx.ash):
        if os.path.basename(exe) == "agentstack" or os.path.realpath(exe or "/") == \
                os.path.realpath(BIN):
            return None  # agentstack's own state (store, history) through an allowed verb
        return "a write in the machine home"
    roots = (fx.ws, fx.tmp, "/tmp", "/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr",
             "/dev/fd", "/proc/self/fd", "/dev/pts")
    # the write scope covers what the command line directs: redirections
    # (bash) and the writers the guard models; what another program writes
    # on its own (a cache, its state) is not judged (docs/guard.md)
    if os.path.basename(exe) in WRITERS and not any(under(path, r) for r in roots):
        return "a write outside the workspace and the temp dirs"
    return None


# ---- the generated set ------------------------------------------------------

PATHS = ["src/a.c", "src/*.c", "src/new.c", "build/out.txt", "build", ".env", ".en?", "key.pem",
         "*.pem", "../proj/src/a.c", "~/x", "~/.agentstack/agentstack.toml", "$HOME/.bashrc",
         "/etc/hosts", "/tmp/as-guard-gen", "secrets/db.txt", "secrets/*", '"$(pwd)/src/b.c"',
         "./*", "{a,b}.txt", "$'src/a.c'", "sub/.env.local", "~/.ssh/id_rsa", "README.md",
         "*", ".*", "src/../.env", "build/../../x", "$TMPDIR/t", "a.txt"]
CMDS = ["cat {p}", "head -n 1 {p}", "wc -l {p}", "ls {p}", "echo x > {p}", "echo x >> {p}",
        "touch {p}", "mkdir -p {p}", "cp {p} {q}", "mv {p} {q}", "rm -f {p}", "rm -rf {p}",
        "grep x {p}", "sed -n 1p {p}", "sed -i s/a/b/ {p}", "tee {p} < /dev/null",
        "ln -s {p} {q}", "find {p} -name '*.c'", "test -f {p} && echo y", "cat < {p}",
        "sort -o {q} {p}", "chmod 644 {p}", "truncate -s 0 {p}", "stat {p}",
        "awk '{{print}}' {p}", "diff {p} {q}", "tar -cf {q} {p}", "install -m 644 {p} {q}"]
DIRS = ["src", "..", "~", "~/.agentstack", "/", "build", "/tmp", "$HOME"]
SEPS = ["; ", " && ", " || ", " | "]


def generated(rng, n):
    out = []
    while len(out) < n:
        def simple():
            return rng.choice(CMDS).format(p=rng.choice(PATHS), q=rng.choice(PATHS))
        shape = rng.randrange(4)
        if shape == 0:
            c = simple()
        elif shape == 1:
            c = simple() + rng.choice(SEPS) + simple()
        elif shape == 2:
            c = f"cd {rng.choice(DIRS)}{rng.choice(['; ', ' && '])}{simple()}"
        else:
            c = f"bash -c {simple()!r}"
        out.append(c)
    return out


def judge(fx, cmds):
    """The guard's verdict on each command (guard test --from)."""
    listing = os.path.join(fx.root, "cmds.txt")
    with open(listing, "w") as f:
        f.write("\n".join(cmds) + "\n")
    r = subprocess.run([BIN, "guard", "test", "--from", listing], capture_output=True,
                       text=True, cwd=fx.ws, env=fx.env(), timeout=600)
    verdicts = [line.startswith("ALLOW ") for line in r.stdout.splitlines()
                if line.startswith(("ALLOW ", "DENY  "))]
    assert len(verdicts) == len(cmds), r.stdout[-500:] + r.stderr[-500:]
    return verdicts


def run_traced(fx, cmd):
    fx.reset()
    log = os.path.join(fx.root, "trace.log")
    env = fx.env(GIT_EDITOR="true", EDITOR="true", PAGER="cat", GIT_PAGER="cat")
    try:
        subprocess.run(["timeout", "-k", "2", "5", "strace", "-f", "-qq", "-y", "-s", "4096",
                        "-e", "trace=%file,%process", "-o", log, "bash", "-c", cmd],
                       cwd=fx.ws, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                       preexec_fn=lambda: confine([fx.root]))
    except subprocess.TimeoutExpired:
        pass
    found = events(log, fx.ws)
    os.unlink(log)
    return found


fx = Fixture()
try:
    missing = [t for t in ("strace", "timeout") if not shutil.which(t)]
    why = f"{', '.join(missing)} not installed" if missing else can_confine(fx)
    if why:
        skip(why)
    else:
        seed = int(os.environ.get("AS_GUARD_SEED", "26"))
        rng = random.Random(seed)
        print(f"seed {seed}")
        shell = [fx.subst(t) for _, v, k, t in corpus() if k == "shell" and v == "ALLOW"]
        gen = generated(rng, 240)
        verdicts = judge(fx, gen)
        allowed = shell + [c for c, ok in zip(gen, verdicts) if ok]
        check(len(allowed) >= 150, f"{len(allowed)} allowed commands to run "
                                   f"({len(shell)} from the corpus, "
                                   f"{len(allowed) - len(shell)} of {len(gen)} generated)")
        bad = []
        mine = shard(allowed)
        for cmd in mine:
            for pid, path, role, exe in run_traced(fx, cmd):
                v = violation(fx, path, role, exe)
                if v:
                    bad.append(f"{cmd!r}: {v}: {path} (pid {pid}, {exe or '?'})")
                    break
        for b in bad:
            print("FAIL " + b)
        check(not bad, f"no allowed command touched a protected path ({len(bad)} of the "
                       f"{len(mine)} run here did)")
finally:
    fx.close()
done()
