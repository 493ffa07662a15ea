"""The user's steps: a build tree's binary runs `connect --all --write`.

1. With an `agentstack` on PATH (here placed by `self link`), connect
   registers that one, not the build tree's path, so a rebuild or
   `make clean` of the tree leaves every CLI working.
2. With none installed, connect registers the running binary and warns,
   naming `agentstack self link`; once that binary is gone, `doctor` reports
   the registration as an error with the fix."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, BIN, check, done, skip_part  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.a]
type = "stdio"
command = "a-mcp"
"""


def build_copy(sb):
    """A binary in a throwaway build tree, as `make` leaves it."""
    d = os.path.join(sb.root, "checkout", "build")
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, "agentstack")
    shutil.copy2(BIN, exe)
    return exe


def run_with(sb, exe, *args, e=None):
    return subprocess.run([exe, *args], cwd=sb.project, env=e or H.env(sb),
                          capture_output=True, text=True, timeout=120)


def registered(sb):
    with open(os.path.join(sb.home, ".claude.json")) as f:
        return json.load(f)["mcpServers"]["agentstack"]["command"]


# 1. self link, then connect from the build tree: the link is registered.
with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST)
    exe = build_copy(sb)
    bindir = os.path.join(sb.root, "bin")
    e = H.env(sb, AGENTSTACK_PREFIX=bindir)
    p = run_with(sb, exe, "self", "link", "--prefix", bindir, e=e)
    check(p.returncode == 0, "self link --prefix <bin on PATH>", p.stdout + p.stderr)
    link = os.path.join(bindir, "agentstack")
    check(os.path.islink(link), "the link is in place")
    p = run_with(sb, exe, "connect", "--all", "--write", e=e)
    check(p.returncode == 0, "connect --all --write", p.stdout + p.stderr)
    check(registered(sb) == link, "the linked agentstack on PATH is registered, not the build path",
          registered(sb))
    check("⚠ no agentstack on PATH" not in p.stdout, "no warning when one is installed", p.stdout)
    # A rebuild elsewhere: re-point the link; the registration still works.
    other = os.path.join(sb.root, "other-build")
    os.makedirs(other)
    shutil.copy2(BIN, os.path.join(other, "agentstack"))
    os.remove(exe)
    p = run_with(sb, os.path.join(other, "agentstack"), "self", "link", "--prefix", bindir, e=e)
    check(p.returncode == 0, "self link from the new build", p.stdout + p.stderr)
    p = subprocess.run([registered(sb), "version"], capture_output=True, text=True, timeout=60,
                       env=e)
    check(p.returncode == 0, "the registered command still runs after the old build is gone",
          p.stdout + p.stderr)
    p = H.run(sb, "doctor", e=e)
    check("which is gone" not in p.stdout, "doctor: the registration is fine", p.stdout)

# 2. Nothing installed: the running binary, with a warning; doctor flags it once gone.
if os.path.exists("/usr/local/bin/agentstack"):
    skip_part("an agentstack is installed in /usr/local/bin: connect would register it",
              even_in_ci=True)
else:
    with Sandbox() as sb:
        H.fake_bin(sb, "claude")
        H.write_manifest(sb, MANIFEST)
        exe = build_copy(sb)
        e = H.env(sb, AGENTSTACK_PREFIX=os.path.join(sb.root, "nowhere"))
        p = run_with(sb, exe, "connect", "--all", "--write", e=e)
        check(p.returncode == 0, "connect --all --write (nothing installed)", p.stdout + p.stderr)
        check(registered(sb) == os.path.realpath(exe), "the running binary is registered",
              registered(sb))
        check("⚠ no agentstack on PATH" in p.stdout and "agentstack self link" in p.stdout,
              "connect warns and names agentstack self link", p.stdout)
        p = H.run(sb, "doctor", e=e)
        check("which is gone" not in p.stdout, "doctor: fine while the binary exists", p.stdout)
        os.remove(exe)
        p = H.run(sb, "doctor", e=e)
        out = p.stdout + p.stderr
        check(p.returncode == 1, "doctor exits 1 once the registered binary is gone", out)
        check("Claude Code runs the gateway as %s, which is gone" % os.path.realpath(exe) in out,
              "doctor names the CLI and the missing binary", out)
        check("agentstack self link" in out and "agentstack connect --all --write" in out,
              "doctor names the fix", out)
done()
