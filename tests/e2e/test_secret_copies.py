"""Copies of rendered configs under $AGENTSTACK_HOME stay private (docs/adapters.md).

A rendered native config holds resolved secret values by design, and
agentstack keeps byte copies of it: the rolling backup, the undo history
(apply, gateway connect), and the file store the value came from. Under
umask 022 and under umask 0 (set in the child, not inherited by chance):
every file under $AGENTSTACK_HOME whose bytes contain the secret is exactly
0600 and no directory from $AGENTSTACK_HOME down to it is group/other
accessible; a backup of a 0640 config is still 0600; an older backup or
history entry someone loosened is tightened again when agentstack rewrites
or reads it; and restore/undo give the native config back its OWN mode
(0640 here), not the 0600 of our copies, even when the file is gone."""
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

SECRET = "ghp_copiesStayPrivate0123456789abcdef"
ORIGINAL = '[mcp_servers.other]\ncommand = "other-mcp"\n'
NATIVE_MODE = 0o640  # neither our 0600 nor the 0644 default: only a kept mode matches

MANIFEST = """version = 1

[servers.github]
type = "stdio"
command = "gh-mcp"
env = { GH_TOKEN = "${GH_TOKEN}" }
"""
MANIFEST2 = MANIFEST + """
[servers.docs]
type = "stdio"
command = "docs-mcp"
"""


def run(sb, umask, *args, input=None):
    return subprocess.run([BIN, *args], cwd=sb.project, env=H.env(sb), input=input,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: os.umask(umask))


def mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def holders(ah):
    """Every regular file under ah whose bytes contain SECRET."""
    out = []
    for d, _, names in os.walk(ah):
        for n in names:
            p = os.path.join(d, n)
            if stat.S_ISREG(os.lstat(p).st_mode):
                with open(p, "rb") as f:
                    if SECRET.encode() in f.read():
                        out.append(p)
    return sorted(out)


def loose(ah, files):
    """[(path, mode)] of secret holders not exactly 0600, and of directories
    from ah down to them with any group/other bit."""
    bad = []
    for p in files:
        if mode(p) != 0o600:
            bad.append((p, oct(mode(p))))
        d = os.path.dirname(p)
        while True:
            if mode(d) & 0o077:
                bad.append((d, oct(mode(d))))
            if os.path.samefile(d, ah) or len(d) <= len(ah):
                break
            d = os.path.dirname(d)
    return sorted(set(bad))


def loosen(ah):
    """What an older version, a backup tool or a careless chmod leaves."""
    for sub in ("backups", "history"):
        d = os.path.join(ah, sub)
        if os.path.isdir(d):
            os.chmod(d, 0o755)
            for n in os.listdir(d):
                os.chmod(os.path.join(d, n), 0o644)
    led = os.path.join(ah, "state.json")
    if os.path.exists(led):
        os.chmod(led, 0o644)


def scenario(umask):
    tag = "umask %03o:" % umask
    with Sandbox() as sb:
        H.fake_bin(sb, "codex")
        H.write_manifest(sb, MANIFEST)
        s = run(sb, umask, "secret", "set", "GH_TOKEN", "--store", "file", "--stdin",
                input=SECRET + "\n")
        check(s.returncode == 0, f"{tag} the secret is in the file store", s.stdout + s.stderr)
        H.trust(sb, e=H.env(sb))
        cfg = os.path.join(sb.home, ".codex", "config.toml")
        os.makedirs(os.path.dirname(cfg))
        with open(cfg, "w") as f:
            f.write(ORIGINAL)
        os.chmod(cfg, NATIVE_MODE)

        a = run(sb, umask, "apply", "--write", "--scope", "global", "--target", "codex")
        text = H.read(cfg)
        check(a.returncode == 0 and SECRET in text,
              f"{tag} apply renders the resolved value into the native config",
              a.stdout + a.stderr)
        check(mode(cfg) == NATIVE_MODE, f"{tag} the native config keeps its own mode (0640)",
              oct(mode(cfg)))
        after1 = text

        # a loosened copy does not stay loose once agentstack rewrites it
        loosen(sb.ah)
        H.write_manifest(sb, MANIFEST2)
        H.trust(sb, e=H.env(sb))
        a2 = run(sb, umask, "apply", "--write", "--scope", "global", "--target", "codex")
        check(a2.returncode == 0 and "docs-mcp" in H.read(cfg), f"{tag} the second apply writes",
              a2.stdout + a2.stderr)
        after2 = H.read(cfg)
        backups = [os.path.join(sb.ah, "backups", n)
                   for n in os.listdir(os.path.join(sb.ah, "backups"))]
        bak = [p for p in backups if SECRET.encode() in open(p, "rb").read()]
        check(len(bak) == 1 and mode(bak[0]) == 0o600,
              f"{tag} the backup of a 0640 config replacing a 0644 backup is 0600",
              [(p, oct(mode(p))) for p in backups])
        check(mode(os.path.join(sb.ah, "backups")) == 0o700
              and mode(os.path.join(sb.ah, "history")) == 0o700,
              f"{tag} a loosened backups/ and history/ are 0700 again after a write")
        check(mode(os.path.join(sb.ah, "state.json")) == 0o600,
              f"{tag} a loosened ledger is 0600 again after a write",
              oct(mode(os.path.join(sb.ah, "state.json"))))

        c = run(sb, umask, "connect", "codex", "--write")
        check(c.returncode == 0, f"{tag} connect --write registers the gateway",
              c.stdout + c.stderr)
        after3 = H.read(cfg)

        found = holders(sb.ah)
        rel = sorted(os.path.relpath(p, sb.ah).split(os.sep)[0] for p in found)
        check("backups" in rel and rel.count("history") >= 2 and "secrets.env" in rel,
              f"{tag} the walk sees the copies (backup, apply + connect history, store)", rel)
        bad = loose(sb.ah, found)
        check(not bad, f"{tag} every copy holding the secret is 0600 in 0700 dirs", bad)

        # re-tightened on open: a read-only listing fixes loosened history
        loosen(sb.ah)
        ls = run(sb, umask, "restore")
        check(ls.returncode == 0, f"{tag} restore lists", ls.stdout + ls.stderr)
        hist = os.path.join(sb.ah, "history")
        bad = [(n, oct(mode(os.path.join(hist, n)))) for n in os.listdir(hist)
               if mode(os.path.join(hist, n)) != 0o600]
        check(mode(hist) == 0o700 and not bad,
              f"{tag} listing the history re-tightens history/ (0700) and its entries (0600)",
              (oct(mode(hist)), bad))

        # restore puts the native file back with its own mode
        os.remove(cfg)
        r1 = run(sb, umask, "restore", "--last", "--write")
        check(r1.returncode == 0 and os.path.exists(cfg) and H.read(cfg) == after2
              and mode(cfg) == NATIVE_MODE,
              f"{tag} restore --last recreates a deleted config with its own mode 0640",
              r1.stdout + r1.stderr + (oct(mode(cfg)) if os.path.exists(cfg) else " gone"))
        os.chmod(cfg, 0o600)
        r2 = run(sb, umask, "restore", "--last", "--write")
        check(r2.returncode == 0 and H.read(cfg) == after1 and mode(cfg) == NATIVE_MODE,
              f"{tag} restore --last puts back the mode the file had before that write",
              r2.stdout + r2.stderr + oct(mode(cfg)))
        os.remove(cfg)
        r3 = run(sb, umask, "restore", "codex", "--write")
        check(r3.returncode == 0 and os.path.exists(cfg) and H.read(cfg) == after2
              and mode(cfg) == NATIVE_MODE,
              f"{tag} restore <adapter> copies the backup back with the config's mode, not "
              "the backup's 0600",
              r3.stdout + r3.stderr + (oct(mode(cfg)) if os.path.exists(cfg) else " gone"))
        check(after3 != after2, f"{tag} (connect changed the file, so the backup is apply 2's)")
        u = run(sb, umask, "undo", "--to", "1", "--write")
        check(u.returncode == 0 and H.read(cfg) == ORIGINAL and mode(cfg) == NATIVE_MODE,
              f"{tag} undo --to 1 gives back the original bytes and mode",
              u.stdout + u.stderr + oct(mode(cfg)))

        found = holders(sb.ah)
        bad = loose(sb.ah, found)
        check(found and not bad, f"{tag} after restore and undo every copy is still 0600/0700",
              (found, bad))
        temps = [os.path.join(d, n) for d, _, ns in os.walk(sb.ah) for n in ns
                 if "agentstack-tmp" in n]
        check(not temps, f"{tag} no temporary file is left under $AGENTSTACK_HOME", temps)


scenario(0o022)
scenario(0o000)
done()
