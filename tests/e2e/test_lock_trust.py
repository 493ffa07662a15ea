"""Cases 9-29 ([core]): lock, digests, trust gate, sign/verify.

Every case runs the real binary in a Sandbox (temporary HOME and
AGENTSTACK_HOME); stdin is not a terminal unless a pty is used on purpose.
"""
import fcntl
import hashlib
import json
import os
import pty
import select
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402

SKILL_MD = "---\ndescription: demo\n---\n"
BASE = """version = 1

[servers.fs]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { TOKEN = "${GITHUB_TOKEN}" }

[servers.api]
type = "http"
url = "https://api.example.com/mcp"

[skills.notes]
path = "../skills/notes"
"""


def mdir(sb):
    return os.path.join(sb.project, ".agentstack")


def setup(sb, manifest=BASE, skill=True):
    sb.write(".agentstack/agentstack.toml", manifest)
    if skill:
        sb.write("skills/notes/SKILL.md", SKILL_MD)
        sb.write("skills/notes/scripts/run.sh", "echo hi\n")


def lockpath(sb):
    return os.path.join(mdir(sb), "agentstack.lock")


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def preview(sb, *extra):
    r = sb.run("trust", ".", "--preview", *extra)
    try:
        return json.loads(r.stdout), r
    except ValueError:
        return None, r


def grant(sb):
    j, _ = preview(sb)
    return sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])


def snapshot_tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if os.path.islink(p):
                out[p] = "link:" + os.readlink(p)
            else:
                out[p] = hashlib.sha256(read(p, "rb")).hexdigest()
    return out


def trust_log_lines(sb):
    p = os.path.join(sb.ah, "audit", "trust.jsonl")
    return read(p).splitlines() if os.path.exists(p) else []


def chain_ok(lines):
    prev = "0" * 64
    for line in lines:
        if json.loads(line).get("prev") != prev:
            return False
        prev = hashlib.sha256(line.encode()).hexdigest()
    return True


def run_pty(sb, *args):
    """Runs with stdin/stdout on a pty (a terminal that nobody types into)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(sb.project)
        os.execve(BIN, [BIN, *args], sb.env())
    out = b""
    while True:
        r, _, _ = select.select([fd], [], [], 30)
        if not r:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


# ---- 9: lock preview / write / idempotence / nothing pinnable ----------------
with Sandbox() as sb:
    setup(sb)
    r = sb.run("lock")
    check(r.returncode == 0 and "Dry run: nothing was pinned." in r.stdout
          and "→ lock preview:" in r.stdout and "+ skill notes" in r.stdout,
          "9: lock preview shows a diff and the dry-run line", r.stdout + r.stderr)
    check(not os.path.exists(lockpath(sb)), "9: preview writes no lock")
    r = sb.run("lock", "--write")
    check(r.returncode == 0 and "✓ pinned" in r.stdout, "9: lock --write pins", r.stderr)
    first = read(lockpath(sb), "rb")
    check(first.startswith(b"version = 2\nmanifest_digest = \"")
          and b"\n\n[[skill]]\nname = \"notes\"\nsource = \"path\"\n" in first,
          "9: lock layout", first.decode())
    r = grant(sb)
    check(r.returncode == 0, "9: grant after lock", r.stderr)
    st = os.stat(lockpath(sb))
    r = sb.run("lock", "--write")
    check(read(lockpath(sb), "rb") == first and os.stat(lockpath(sb)).st_ino == st.st_ino,
          "9: lock --write twice -> same bytes, file not rewritten")
    j, _ = preview(sb)
    check(j["state"] == "trusted", "9: trust kept after an idempotent re-lock", j["state"])
    r = sb.run("lock")
    check("no pin changes — agentstack.lock already matches this project." in r.stdout,
          "9: preview says no pin changes", r.stdout)
    # moved pins on a Trusted project: warning, Changed
    sb.write("skills/notes/SKILL.md", SKILL_MD + "more\n")
    r = sb.run("lock", "--write")
    check(r.returncode == 0 and "trust is stale" in r.stderr, "9: moved pins warn on Trusted",
          r.stderr)
    j, _ = preview(sb)
    check(j["state"] == "drifted", "9: moved pins leave the project Changed", j["state"])

with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", "version = 1\n")
    r = sb.run("lock", "--write")
    check(r.returncode == 0 and not os.path.exists(lockpath(sb)),
          "9: nothing pinnable -> no lock file", r.stdout + r.stderr)

# ---- 10: digest invariants through the CLI ------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    skill = os.path.join(sb.project, "skills", "notes")
    os.chmod(os.path.join(skill, "scripts", "run.sh"), 0o755)
    os.utime(os.path.join(skill, "SKILL.md"), (1000, 1000))
    os.makedirs(os.path.join(skill, "empty", "dir"))
    sb.write("skills/notes/.git/HEAD", "ref: x\n")
    r = sb.run("lock")
    check("no pin changes" in r.stdout, "10: chmod, touch, empty dirs, .git/ do not drift",
          r.stdout)
    sb.write("skills/notes/.hidden", "x")
    r = sb.run("lock")
    check("~ skill notes" in r.stdout, "10: a new hidden file drifts", r.stdout)
    os.remove(os.path.join(skill, ".hidden"))
    os.rename(os.path.join(skill, "scripts", "run.sh"), os.path.join(skill, "scripts", "go.sh"))
    r = sb.run("lock")
    check("~ skill notes" in r.stdout, "10: a rename drifts", r.stdout)

# ---- 11: same size, same mtime -----------------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    grant(sb)
    p = os.path.join(sb.project, "skills", "notes", "SKILL.md")
    st = os.stat(p)
    with open(p, "r+b") as f:
        f.seek(5)
        f.write(b"X")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    st2 = os.stat(p)
    check(st2.st_size == st.st_size and st2.st_mtime_ns == st.st_mtime_ns,
          "11: size and mtime restored")
    j, _ = preview(sb)
    check(j["state"] == "drifted" and j["grantable"] is False,
          "11: preview drifted, grantable false", json.dumps(j)[:300])
    check(any(b["name"] == "notes" for b in j["content_drift"]), "11: content_drift names it")
    r = sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])
    check(r.returncode == 1 and "cannot trust " in r.stderr and "notes" in r.stderr
          and "skill content drifted from agentstack.lock (locked" in r.stderr,
          "11: trust refuses naming the skill", r.stderr)

# ---- 12: symlink and FIFO in a skill -------------------------------------------
with Sandbox() as sb:
    setup(sb)
    os.symlink("/etc/passwd", os.path.join(sb.project, "skills", "notes", "pw"))
    r = sb.run("lock", "--write")
    check(r.returncode == 1 and "symlink" in r.stderr and "refusing to lock:" in r.stderr
          and not os.path.exists(lockpath(sb)), "12: symlink in a skill fails the lock",
          r.stderr)
    os.remove(os.path.join(sb.project, "skills", "notes", "pw"))
    os.mkfifo(os.path.join(sb.project, "skills", "notes", "pipe"))
    r = sb.run("lock", "--write", timeout=20)
    check(r.returncode == 1 and "FIFO" in r.stderr, "12: a FIFO fails fast", r.stderr)
    j, r = preview(sb)
    check(j is not None and j["grantable"] is False, "12: FIFO skill not grantable", r.stderr)

# ---- 12b: unknown adapter ids block the lock, with file:line:col -------
with Sandbox() as sb:
    setup(sb, skill=False, manifest='version = 1\n\n[servers.a]\ntype = "stdio"\n'
                                    'command = "true"\ntargets = ["nope-cli"]\n\n'
                                    '[targets]\ndefault = ["claude-code", "codx"]\n')
    r = sb.run("lock", "--write")
    mf = os.path.join(mdir(sb), "agentstack.toml")
    check(r.returncode == 1 and not os.path.exists(lockpath(sb)) and
          "%s:3:1: unknown adapter id 'nope-cli' in [servers.a] targets" % mf in r.stderr and
          "%s:9:1: unknown adapter id 'codx' in [targets] default" % mf in r.stderr and
          "did you mean 'codex'?" in r.stderr and "known adapter ids: claude-code," in r.stderr,
          "12b: unknown adapter ids refuse the lock, each at its file:line:col, "
          "naming the known ids", r.stderr)

# ---- 13: traversal, symlinked and absolute commands ------------------------------
with Sandbox() as sb:
    sb.write("../outside/evil.sh", "echo evil\n")
    setup(sb, "version = 1\n[servers.evil]\ntype = \"stdio\"\ncommand = \"../outside/evil.sh\"\n",
          skill=False)
    r = sb.run("lock", "--write")
    check(r.returncode == 1 and "traversal" in r.stderr and not os.path.exists(lockpath(sb)),
          "13: ../ command -> traversal, no lock", r.stderr)
    j, _ = preview(sb)
    check(j["grantable"] is False, "13: traversal not grantable")
    before = snapshot_tree(sb.ah) if os.path.exists(sb.ah) else {}
    r = sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])
    check(r.returncode == 1 and "cannot trust" in r.stderr, "13: consented grant refused",
          r.stderr)
    after = snapshot_tree(sb.ah) if os.path.exists(sb.ah) else {}
    check(not os.path.exists(os.path.join(sb.ah, "trust.json")), "13: nothing trusted",
          str(set(after) - set(before)))

with Sandbox() as sb:
    sb.write("real.sh", "echo hi\n")
    os.symlink("real.sh", os.path.join(sb.project, "link.sh"))
    setup(sb, "version = 1\n[servers.l]\ntype = \"stdio\"\ncommand = \"./link.sh\"\n",
          skill=False)
    r = sb.run("lock", "--write")
    check(r.returncode == 1 and "symlink" in r.stderr, "13: symlinked ./link.sh -> symlink",
          r.stderr)

with Sandbox() as sb:
    sb.write("tool.sh", "echo tool\n")
    setup(sb, "version = 1\n[servers.a]\ntype = \"stdio\"\ncommand = \"/usr/bin/env\"\n"
              "args = [\"-i\", \"tool.sh\", \"${HOME}/x\"]\n", skill=False)
    r = sb.run("lock", "--write")
    lock = read(lockpath(sb))
    check(r.returncode == 0 and "/usr/bin/env" not in lock
          and "[[executable]]\npath = \"tool.sh\"\nkind = \"file\"" in lock,
          "13: absolute command not pinned, project file arg pinned", lock + r.stderr)
    j, _ = preview(sb)
    runs = [i["runs"] for i in j["review"]["items"] if i["kind"] == "server"]
    check(runs == ["/usr/bin/env -i tool.sh ${HOME}/x"], "13: exact command string in runs",
          str(runs))

# ---- 14: integrity roots include .git ---------------------------------------------
with Sandbox() as sb:
    sb.write("tools/run.py", "print(1)\n")
    sb.write("tools/.git/config", "[core]\n")
    setup(sb, "version = 1\n[servers.t]\ntype = \"stdio\"\ncommand = \"python3\"\n"
              "integrity_roots = [\"tools\"]\n", skill=False)
    r = sb.run("lock", "--write")
    check(r.returncode == 0 and "kind = \"root\"" in read(lockpath(sb)),
          "14: integrity root pinned", r.stderr)
    grant(sb)
    sb.write("tools/.git/config", "[core)\n")
    j, _ = preview(sb)
    check(j["grantable"] is False and j["state"] == "drifted",
          "14: one byte in the root's .git/ drifts the pin", json.dumps(j["blockers"]))

# ---- 15: settings canonical form, variants --------------------------------------------
with Sandbox() as sb:
    setup(sb, "version = 1\n[settings.claude-code]\nperm = {b = 1, a = 2}\nlist = [\"x\", \"y\"]\n",
          skill=False)
    sb.run("lock", "--write")
    first = read(lockpath(sb))
    sb.write(".agentstack/agentstack.toml",
             "version = 1\n[settings.claude-code]\nperm = {a = 2, b = 1}\nlist = [\"x\", \"y\"]\n")
    r = sb.run("lock")
    check("~ setting" not in r.stdout and "+ setting" not in r.stdout,
          "15: {b=1,a=2} == {a=2,b=1}", r.stdout)
    sb.write(".agentstack/agentstack.toml",
             "version = 1\n[settings.claude-code]\nperm = {a = 2, b = 1}\nlist = [\"y\", \"x\"]\n")
    r = sb.run("lock")
    check("~ setting claude-code.list" in r.stdout, "15: array order is content", r.stdout)

with Sandbox() as sb:
    sb.write(".agentstack/base.md", "base\n")
    sb.write(".agentstack/codex.md", "codex\n")
    setup(sb, "version = 1\n[instructions.house]\npath = \"base.md\"\n"
              "[[instructions.house.variant]]\ncli = \"codex\"\npath = \"codex.md\"\n",
          skill=False)
    r = sb.run("lock", "--write")
    lock = read(lockpath(sb))
    check(r.returncode == 0 and "[[instruction.variant]]\ncli = \"codex\"\npath = \"codex.md\""
          in lock, "15: unselected variant pinned", lock + r.stderr)
    grant(sb)
    sb.write(".agentstack/codex.md", "codex!\n")
    j, _ = preview(sb)
    check(j["grantable"] is False, "15: variant edit drifts", json.dumps(j["blockers"]))

# ---- 16: manifest stamp ---------------------------------------------------------
with Sandbox() as sb:
    setup(sb, BASE + "\n[toolsets.dev]\nservers = [\"fs\"]\nskills = [\"notes\"]\n")
    sb.run("lock", "--write")
    lock = read(lockpath(sb))
    m = hashlib.sha256(b"agentstack-lock-manifest-stamp-v1\0" + b"\x01"
                       + len(read(os.path.join(mdir(sb), "agentstack.toml"), "rb"))
                       .to_bytes(8, "little")
                       + read(os.path.join(mdir(sb), "agentstack.toml"), "rb") + b"\0")
    check(f'manifest_digest = "{m.hexdigest()}"' in lock, "16: stamp = documented formula")
    sb.run("lock", "--write", "--toolset", "dev")
    lock2 = read(lockpath(sb))
    check("manifest_digest" not in lock2, "16: --toolset drops the stamp", lock2)
    sb.run("lock", "--write")
    check("manifest_digest" in read(lockpath(sb)), "16: lock --write re-stamps")

# ---- 17: install --locked ----------------------------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    lk = read(lockpath(sb))
    st = os.stat(lockpath(sb))
    r = sb.run("install", "--locked")
    check(r.returncode == 0 and read(lockpath(sb)) == lk
          and os.stat(lockpath(sb)).st_mtime_ns == st.st_mtime_ns,
          "17: install --locked on a match -> 0, nothing written", r.stdout + r.stderr)
    sb.write(".agentstack/agentstack.lock",
             lk.replace('path = "../skills/notes"\n', 'path = "../skills/notes"\nlicense = "MIT"\n'))
    r = sb.run("install", "--locked")
    check(r.returncode == 0, "17: license alone is not drift", r.stdout + r.stderr)
    sb.write(".agentstack/agentstack.lock", "\n\n".join(
        x for x in lk.split("\n\n") if 'name = "notes"' not in x))
    before = read(lockpath(sb))
    r = sb.run("install", "--locked")
    check(r.returncode == 1 and "lockfile is out of date" in r.stderr
          and "missing from lockfile" in r.stdout and read(lockpath(sb)) == before,
          "17: missing skill -> lockfile is out of date, exit 1, nothing written",
          r.stdout + r.stderr)
    r = sb.run("install")
    check(r.returncode == 0 and "+ notes locked" in r.stdout
          and 'name = "notes"' in read(lockpath(sb)), "17: install records the pin",
          r.stdout + r.stderr)
    r = sb.run("install", "--locked")
    check(r.returncode == 0, "17: then --locked passes", r.stdout + r.stderr)
    sb.write("skills/notes/SKILL.md", SKILL_MD + "x")
    r = sb.run("install", "--locked")
    check(r.returncode == 1 and "lockfile out of date" in r.stdout, "17: drift -> out of date",
          r.stdout)

# ---- 18: consent digest changes ------------------------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")

    def state():
        return preview(sb)[0]["state"]

    def regrant():
        check(grant(sb).returncode == 0, "18: re-grant")

    grant(sb)
    check(state() == "trusted", "18: trusted after grant")
    p = os.path.join(mdir(sb), "agentstack.toml")
    sb.write(".agentstack/agentstack.toml", read(p) + "# comment\n")
    check(state() == "drifted", "18: a comment edit re-gates")
    regrant()
    sb.write(".agentstack/agentstack.local.toml", "")
    check(state() == "drifted", "18: an empty overlay re-gates")
    os.remove(os.path.join(mdir(sb), "agentstack.local.toml"))
    check(state() == "trusted", "18: removing it restores the approved bytes")
    lk = read(lockpath(sb))
    sb.write(".agentstack/agentstack.lock", "")
    check(state() == "drifted", "18: an empty lock re-gates")
    os.remove(lockpath(sb))
    check(state() == "drifted", "18: a deleted lock re-gates")
    sb.write(".agentstack/agentstack.lock", lk)
    check(state() == "trusted", "18: the same lock bytes are trusted again")
    d0 = preview(sb)[0]["surface_digest"]
    sb.write("skills/notes/scripts/run.sh", "echo ho\n")
    j = preview(sb)[0]
    check(j["surface_digest"] == d0 and j["state"] == "drifted" and not j["grantable"],
          "18: a body edit keeps the digest but is caught as drift")
    sb.write("skills/notes/scripts/run.sh", "echo hi\n")
    moved = os.path.join(sb.root, "work", "moved")
    os.rename(sb.project, moved)
    r = sb.run("trust", moved, "--preview", cwd=sb.root)
    check(json.loads(r.stdout)["state"] == "untrusted", "18: a moved project is untrusted")
    os.rename(moved, sb.project)

# ---- 19/20/21/22: the gate, consented grant, mismatch diagnoses, pure preview -------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    r = sb.run("trust", ".")
    check(r.returncode == 1 and "refusing to trust: stdin is not a terminal" in r.stderr,
          "19: non-terminal trust refused", r.stderr)
    r = sb.run("trust", ".", "--yes")
    check(r.returncode == 1 and "refusing to trust: --yes requires --consented" in r.stderr,
          "19: --yes alone refused", r.stderr)
    rc, out = run_pty(sb, "trust", ".", "--yes")
    check(rc == 1 and "--yes requires --consented" in out, "19: --yes alone refused under a pty",
          out[-300:])
    check(not os.path.exists(os.path.join(sb.ah, "trust.json")), "19: store untouched")

    before = {**snapshot_tree(sb.ah), **snapshot_tree(mdir(sb))}
    j, _ = preview(sb)
    j2, _ = preview(sb)
    after = {**snapshot_tree(sb.ah), **snapshot_tree(mdir(sb))}
    check(before == after, "22: --preview leaves the home, lock and store byte-identical")
    keys = list(j.keys())
    want = ["path", "state", "re_trust", "surface_digest", "servers", "server_blockers",
            "content_drift", "surface_unpinned", "blockers", "grantable", "lock_first", "fix",
            "next_step", "secrets", "skills", "workflows", "extensions", "instructions", "hooks",
            "settings", "policy_requested", "machine_policy_ceiling", "counts", "review",
            "schema_version", "features", "superseded", "scan"]
    check(keys == want, "20: preview keys in the documented order", str(keys))
    d = j["surface_digest"]
    hexd = d[len("sha256:"):]
    for form, what in ((hexd, "NOT changed"), ("sha256:" + d, "doubled"),
                       ("md5:" + hexd, "does not match the current surface")):
        r = sb.run("trust", ".", "--yes", "--consented", form)
        check(r.returncode == 1 and what in r.stderr, f"21: diagnosis for {form[:12]}…",
              r.stderr)
    r = sb.run("trust", ".", "--yes", "--consented", d)
    check(r.returncode == 0 and "trusted at sha256:" in r.stdout, "20: consented grant",
          r.stderr)
    lines = trust_log_lines(sb)
    check(len(lines) == 1 and json.loads(lines[0])["action"] == "grant" and chain_ok(lines),
          "20: one chained grant log line", "\n".join(lines))
    st = os.stat(os.path.join(sb.ah, "trust.json"))
    check(st.st_mode & 0o777 == 0o600, "trust.json is 0600", oct(st.st_mode))
    # 21: edit after preview
    sb.write(".agentstack/agentstack.toml", BASE + "# edit\n")
    tj = read(os.path.join(sb.ah, "trust.json"))
    r = sb.run("trust", ".", "--yes", "--consented", d)
    check(r.returncode == 1 and "consented digest does not match the current surface" in r.stderr
          and read(os.path.join(sb.ah, "trust.json")) == tj,
          "21: edit after preview refused, nothing written", r.stderr)

# ---- 23: inline vs library skills, edited library server -------------------------------
with Sandbox() as sb:
    setup(sb)
    r = sb.run("trust", ".", "--yes", "--consented", preview(sb)[0]["surface_digest"])
    check(r.returncode == 1 and "cannot trust " in r.stderr, "23: unpinned inline skill blocks",
          r.stderr)
with Sandbox() as sb:
    sb.write("lib/skills/libby/SKILL.md", SKILL_MD, base=sb.ah)
    sb.write("lib/servers/libsrv.toml", "type = \"stdio\"\ncommand = \"libcmd\"\n", base=sb.ah)
    setup(sb, "version = 1\n[toolsets.dev]\nservers = [\"libsrv\"]\nskills = [\"libby\"]\n",
          skill=False)
    sb.write(".agentstack/agentstack.lock", "version = 2\n")
    sb.run("lock", "--write", "--toolset", "dev")
    lk = read(lockpath(sb))
    # drop the library skill's row: unpinned library skill is advisory only
    lines = lk.split("\n\n")
    lk2 = "\n\n".join(x for x in lines if "name = \"libby\"" not in x)
    sb.write(".agentstack/agentstack.lock", lk2)
    r = grant(sb)
    check(r.returncode == 0 and "libby" in r.stdout, "23: unpinned library skill -> granted "
          "with advisory", r.stdout + r.stderr)
    sb.write("lib/servers/libsrv.toml", "type = \"stdio\"\ncommand = \"evil\"\n", base=sb.ah)
    j, _ = preview(sb)
    srv = [s for s in j["servers"] if s["name"] == "libsrv"]
    check(srv and srv[0]["kind"] == "unverified" and srv[0]["target"] is None
          and "evil" not in json.dumps(j) and not j["grantable"],
          "23: edited library server refused, unverified, live command absent", json.dumps(srv))

# ---- 24: re-trust markers ------------------------------------------------------------
with Sandbox() as sb:
    setup(sb, BASE + "\n[hooks.lint]\nevent = \"PreToolUse\"\ncommand = \"lint\"\n")
    sb.run("lock", "--write")
    grant(sb)
    j, _ = preview(sb)
    check(all(i["change"] == "unchanged" for i in j["review"]["items"]),
          "24: just after a grant all items are unchanged",
          str([(i["name"], i["change"]) for i in j["review"]["items"]]))
    new = BASE.replace("https://api.example.com/mcp", "https://api2.example.com/mcp") + \
        "\n[servers.extra]\ntype = \"stdio\"\ncommand = \"extra\"\n"
    sb.write(".agentstack/agentstack.toml", new)
    sb.run("lock", "--write")
    r = sb.run("trust", ".")
    check("+ ▶ extra" in r.stdout and "~ → api" in r.stdout and "- hook lint" in r.stdout,
          "24: + new server, ~ changed url, removed hook listed", r.stdout)

# ---- 26: revoke and list ---------------------------------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    grant(sb)
    other = os.path.join(sb.root, "work", "p2")
    os.makedirs(os.path.join(other, ".agentstack"))
    with open(os.path.join(other, ".agentstack", "agentstack.toml"), "w") as f:
        f.write("version = 1\n")
    j = json.loads(sb.run("trust", other, "--preview").stdout)
    sb.run("trust", other, "--yes", "--consented", j["surface_digest"])
    with open(os.path.join(other, ".agentstack", "agentstack.toml"), "a") as f:
        f.write("# changed\n")
    r = sb.run("trust", "--list")
    check(r.returncode == 0 and "✓ " in r.stdout and "· current" in r.stdout
          and "⚠ " in r.stdout and "changed since trusted" in r.stdout,
          "26: --list shows both states", r.stdout)
    r = sb.run("trust", "--revoke")
    check(r.returncode == 0 and "✓ trust revoked for" in r.stdout, "26: revoke", r.stdout)
    tj = json.loads(read(os.path.join(sb.ah, "trust.json")))
    check(os.path.realpath(sb.project) not in tj["trusted"], "26: entry gone")
    r = sb.run("trust", "--revoke")
    check(r.returncode == 0 and "was not trusted; nothing to revoke." in r.stdout,
          "26: revoke again", r.stdout)
    lines = trust_log_lines(sb)
    check([json.loads(x)["action"] for x in lines] == ["grant", "grant", "revoke"]
          and chain_ok(lines), "26: revoke logged, chain intact", "\n".join(lines))
    # a vanished project can still be revoked
    import shutil
    shutil.rmtree(other)
    r = sb.run("trust", other, "--revoke")
    check(r.returncode == 0 and "✓ trust revoked" in r.stdout, "26: revoke a vanished project",
          r.stdout + r.stderr)

# ---- 27: corrupt store, held lock, unwritable audit/ ---------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    grant(sb)
    with open(os.path.join(sb.ah, "trust.json"), "w") as f:
        f.write("{not json")
    j, _ = preview(sb)
    check(j["state"] == "untrusted", "27: corrupt trust.json -> untrusted")
    fd = os.open(os.path.join(sb.ah, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    r = sb.run("trust", ".", "--yes", "--consented", j["surface_digest"], timeout=60)
    check(r.returncode == 1 and ".lock" in r.stderr, "27: a held writer lock fails the grant",
          r.stderr)
    os.close(fd)
    audit = os.path.join(sb.ah, "audit")
    for f in os.listdir(audit):
        os.remove(os.path.join(audit, f))
    os.rmdir(audit)
    with open(audit, "w") as f:  # a file where the directory should be
        f.write("")
    r = sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])
    check(r.returncode == 0 and "trusted at sha256:" in r.stdout and "warning" in r.stderr,
          "27: an unusable audit/ does not block a grant", r.stdout + r.stderr)

# ---- concurrent grants from two processes ----------------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    projs = []
    for n in range(4):
        p = os.path.join(sb.root, "work", f"c{n}")
        os.makedirs(os.path.join(p, ".agentstack"))
        with open(os.path.join(p, ".agentstack", "agentstack.toml"), "w") as f:
            f.write(f"version = 1\n# {n}\n")
        projs.append((p, json.loads(sb.run("trust", p, "--preview").stdout)["surface_digest"]))
    procs = [subprocess.Popen([BIN, "trust", p, "--yes", "--consented", d], env=sb.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for p, d in projs]
    codes = [pr.wait(60) for pr in procs]
    for pr in procs:
        pr.stdout.close()
        pr.stderr.close()
    tj = json.loads(read(os.path.join(sb.ah, "trust.json")))
    lines = trust_log_lines(sb)
    check(codes == [0, 0, 0, 0] and len(tj["trusted"]) == 4 and len(lines) == 4
          and chain_ok(lines), "concurrent trust: every grant kept, chain intact",
          f"{codes} {list(tj['trusted'])} {lines}")

# ---- 29: sign / verify -----------------------------------------------------------------
with Sandbox() as sb:
    setup(sb)
    sb.run("lock", "--write")
    r = sb.run("sign")
    key = [x.split(": ")[1] for x in r.stdout.splitlines() if "public key:" in x]
    check(r.returncode == 0 and "✓ signed" in r.stdout and key, "29: sign", r.stderr)
    k = key[0] if key else ""
    st = os.stat(os.path.join(sb.ah, "keys", "ed25519.key"))
    check(st.st_mode & 0o777 == 0o600, "29: key is 0600")
    r = sb.run("sign", "--print-key-only")
    check(r.stdout == k + "\n", "29: --print-key-only prints only the key", r.stdout)
    sig = read(os.path.join(mdir(sb), "agentstack.lock.sig"))
    check(len(sig) == 128 and "\n" not in sig, "29: 128-hex signature, no newline")
    r = sb.run("verify", "--pubkey", k.upper())
    check(r.returncode == 0 and "✓ agentstack.lock signature is valid for this public key."
          in r.stdout, "29: verify valid", r.stderr)
    pubs = sb.write("pubs.txt", "# team\n" + "ab" * 32 + "\n" + k + "\n")
    r = sb.run("verify", "--publishers", pubs)
    check(r.returncode == 0, "29: verify with a publishers file", r.stderr)
    r = sb.run("verify", "--pubkey", "ab" * 32)
    check(r.returncode == 1 and "signature does NOT match agentstack.lock" in r.stderr,
          "29: another key -> 1", r.stderr)
    r = sb.run("verify", "--pubkey", "xyz")
    check(r.returncode == 1 and "--pubkey is not a 64-hex-char ed25519 public key" in r.stderr,
          "29: a bad key -> 1", r.stderr)
    r = sb.run("verify", "--pubkey", k, "--signature", "00")
    check(r.returncode == 1 and "signature is not 128 hex chars" in r.stderr,
          "29: a bad signature -> 1")
    lk = read(lockpath(sb), "rb")
    with open(lockpath(sb), "wb") as f:
        f.write(lk[:-2] + bytes([lk[-2] ^ 1]) + lk[-1:])
    r = sb.run("verify", "--pubkey", k)
    check(r.returncode == 1 and "does NOT match" in r.stderr, "29: a changed lock byte -> 1")
    os.remove(os.path.join(mdir(sb), "agentstack.lock.sig"))
    r = sb.run("verify", "--pubkey", k)
    check(r.returncode == 1, "29: missing signature -> 1")

# ---- 3: --manifest-dir from any cwd, positional path outranks it ----------------------
with Sandbox() as sb:
    setup(sb)
    r = sb.run("--manifest-dir", sb.project, "lock", "--write", cwd=sb.root)
    check(r.returncode == 0 and os.path.exists(lockpath(sb)), "3: lock --manifest-dir", r.stderr)
    r = sb.run("--manifest-dir", sb.project, "trust", "--preview", cwd=sb.root)
    check(r.returncode == 0 and json.loads(r.stdout)["path"] == os.path.realpath(sb.project),
          "3: trust --preview with --manifest-dir", r.stderr)
    r = sb.run("--manifest-dir", "/nonexistent-x", "trust", sb.project, "--preview", cwd=sb.root)
    check(r.returncode == 0, "3: a positional path outranks --manifest-dir", r.stderr)
    r = sb.run("trust", "--preview", cwd=sb.root)
    check(r.returncode == 1 and "no agentstack manifest at or above" in r.stderr,
          "3: nothing above -> no agentstack manifest at or above", r.stderr)

# ---- 5: lock version 3 is refused and trust fails closed ----------------------------
with Sandbox() as sb:
    setup(sb)
    sb.write(".agentstack/agentstack.lock", "version = 3\n")
    r = sb.run("lock", "--write")
    check(r.returncode == 1 and "upgrade agentstack" in r.stderr
          and read(lockpath(sb)) == "version = 3\n", "5: lock version 3 refused", r.stderr)
    j, _ = preview(sb)
    check(j["grantable"] is False and any(b["kind"] == "lock" for b in j["blockers"]),
          "5: trust fails closed on a version 3 lock", json.dumps(j["blockers"]))

done()
