"""agentstack self link (docs/onboarding.md):
the running binary is symlinked onto PATH — --prefix, $AGENTSTACK_PREFIX, a
writable /usr/local/bin, else ~/.local/bin — idempotently; a regular file is
replaced only with --force (never the binary itself); it says whether the
directory is on PATH and how to add it. Everything in a temporary HOME."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, skip_part  # noqa: E402

EXE = os.path.realpath(BIN)


def link_line(dest, exe=EXE):
    return f"✓ linked {dest} → {exe}"


with Sandbox() as sb:
    pfx = os.path.join(sb.root, "pfx")
    dest = os.path.join(pfx, "agentstack")
    e = sb.env(PATH="/usr/bin:/bin", SHELL="/bin/bash")

    r = sb.run("self", "link", "--prefix", pfx, env=e)
    check(r.returncode == 0 and link_line(dest) in r.stdout.splitlines(),
          "--prefix: ✓ linked <dest> → <exe>", r.stdout + r.stderr)
    check(os.path.islink(dest) and os.readlink(dest) == EXE, "a symlink to the running binary",
          os.path.islink(dest) and os.readlink(dest))
    check(f"⚠ {pfx} is not on your PATH" in r.stdout
          and f"echo 'export PATH=\"{pfx}:$PATH\"' >> ~/.bashrc" in r.stdout,
          "not on PATH: says so and gives the line to add", r.stdout)

    st = os.lstat(dest)
    r = sb.run("self", "link", "--prefix", pfx, env=dict(e, PATH=pfx + ":/usr/bin:/bin"))
    check(r.returncode == 0 and "(already in place)" in r.stdout
          and os.lstat(dest).st_ino == st.st_ino, "idempotent: the same link is left alone",
          r.stdout + r.stderr)
    check(f"✓ {pfx} is on your PATH" in r.stdout, "on PATH: says so", r.stdout)
    v = subprocess.run(["agentstack", "--version"], env=dict(e, PATH=pfx + ":/usr/bin:/bin"),
                       capture_output=True, text=True)
    check(v.returncode == 0 and v.stdout.startswith("agentstack "),
          "`agentstack --version` runs through the link", v.stdout + v.stderr)

    other = os.path.join(sb.root, "other")
    os.makedirs(other)
    with open(os.path.join(other, "agentstack"), "w") as f:
        f.write("#!/bin/sh\necho old\n")
    os.chmod(os.path.join(other, "agentstack"), 0o755)
    r = sb.run("self", "link", "--prefix", pfx,
               env=dict(e, PATH=f"{other}:{pfx}:/usr/bin:/bin"))
    check(r.returncode == 0 and f"⚠ {other}/agentstack comes first on your PATH" in r.stdout,
          "another agentstack earlier on PATH is named", r.stdout)

    os.unlink(dest)
    with open(dest, "w") as f:
        f.write("a user's own file\n")
    r = sb.run("self", "link", "--prefix", pfx, env=e)
    check(r.returncode == 1 and "is a regular file" in r.stderr and "--force" in r.stderr
          and open(dest).read() == "a user's own file\n",
          "a regular file is refused without --force and left as it was", r.stdout + r.stderr)
    r = sb.run("self", "link", "--prefix", pfx, "--force", env=e)
    check(r.returncode == 0 and os.path.islink(dest) and os.readlink(dest) == EXE
          and "(replaced a regular file)" in r.stdout, "--force replaces it with the link",
          r.stdout + r.stderr)

    os.unlink(dest)
    os.symlink("/bin/true", dest)
    r = sb.run("self", "link", env=dict(e, AGENTSTACK_PREFIX=pfx))
    check(r.returncode == 0 and os.readlink(dest) == EXE and "was → /bin/true" in r.stdout
          and "chosen by: $AGENTSTACK_PREFIX" in r.stdout,
          "$AGENTSTACK_PREFIX; a link elsewhere is re-pointed", r.stdout + r.stderr)
    check(not any(n.startswith(".agentstack-link-") for n in os.listdir(pfx)),
          "no temporary link is left behind", os.listdir(pfx))

    os.unlink(dest)
    os.makedirs(dest)
    r = sb.run("self", "link", "--prefix", pfx, "--force", env=e)
    check(r.returncode == 1 and "neither a file nor a link" in r.stderr and os.path.isdir(dest),
          "a directory in the way is refused even with --force", r.stderr)

    # The binary itself sits in the directory: never replaced by a link to itself.
    own = os.path.join(sb.root, "own")
    os.makedirs(own)
    copy = os.path.join(own, "agentstack")
    shutil.copy2(BIN, copy)
    size = os.path.getsize(copy)
    r = subprocess.run([copy, "self", "link", "--prefix", own, "--force"], env=e,
                       capture_output=True, text=True)
    check(r.returncode == 0 and "is this binary itself" in r.stdout
          and not os.path.islink(copy) and os.path.getsize(copy) == size,
          "linking a binary onto itself does nothing, even with --force", r.stdout + r.stderr)

    r = sb.run("self", env=e)
    check(r.returncode == 2, "self without a subcommand is a usage error", r.stderr)
    r = sb.run("self", "link", "--bogus", env=e)
    check(r.returncode == 2, "an unknown flag is a usage error", r.stderr)

# The default: ~/.local/bin for a user who may not write /usr/local/bin.
with Sandbox() as sb:
    os.chmod(sb.root, 0o755)
    local = os.path.join(sb.home, ".local", "bin")
    argv = None
    exe = EXE
    if os.geteuid() == 0 and shutil.which("setpriv"):
        # As root /usr/local/bin is writable; an ordinary user (nobody) sees
        # the ~/.local/bin fallback. A copy of the binary it may execute.
        exe = os.path.join(sb.root, "agentstack")
        shutil.copy2(BIN, exe)
        os.chmod(exe, 0o755)
        for d, _, fs in os.walk(sb.home):
            for n in [d] + [os.path.join(d, f) for f in fs]:
                os.chown(n, 65534, 65534)
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe]
    elif os.geteuid() != 0 and not os.access("/usr/local/bin", os.W_OK):
        argv = [BIN]
    if argv is None:
        skip_part("default ~/.local/bin: cannot act as a user without /usr/local/bin write "
                  "access here (needs root and setpriv, or an ordinary user)")
    else:
        e = {"HOME": sb.home, "PATH": "/usr/bin:/bin", "SHELL": "/bin/bash", "NO_COLOR": "1"}
        r = subprocess.run(argv + ["self", "link"], env=e, cwd=sb.home, capture_output=True,
                           text=True)
        dest = os.path.join(local, "agentstack")
        check(r.returncode == 0 and link_line(dest, exe) in r.stdout.splitlines()
              and os.readlink(dest) == exe, "no prefix, /usr/local/bin not writable: "
              "~/.local/bin/agentstack, created", r.stdout + r.stderr)
        check("⚠ ~/.local/bin is not on your PATH" in r.stdout
              and "echo 'export PATH=\"$HOME/.local/bin:$PATH\"' >> ~/.bashrc" in r.stdout,
              "says ~/.local/bin is not on PATH and how to add it", r.stdout)
        e["PATH"] = local + ":/usr/bin:/bin"
        e["SHELL"] = "/usr/bin/fish"
        r = subprocess.run(argv + ["self", "link"], env=e, cwd=sb.home, capture_output=True,
                           text=True)
        check(r.returncode == 0 and "(already in place)" in r.stdout
              and "✓ ~/.local/bin is on your PATH" in r.stdout,
              "second run: already in place, on PATH", r.stdout + r.stderr)
        e["PATH"] = "/usr/bin:/bin"
        r = subprocess.run(argv + ["self", "link"], env=e, cwd=sb.home, capture_output=True,
                           text=True)
        check("fish_add_path $HOME/.local/bin" in r.stdout, "fish gets fish_add_path", r.stdout)

done()
