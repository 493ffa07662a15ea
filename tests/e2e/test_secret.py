"""agentstack secret set|get|list|rm (docs/secrets.md).

The keychain half runs against a REAL Secret Service: this script re-runs
itself inside `dbus-run-session` with gnome-keyring-daemon unlocked under a
temporary HOME, and checks with `secret-tool` what the binary stored. It
skips that half loudly when gnome-keyring / libsecret-tools / dbus are not
installed. The no-keychain half removes the session bus from the
environment: set must refuse and name --env-file and --store file, never
fall back silently.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, KEYRING_SESSION, Sandbox, check, done, git, skip_part  # noqa: E402

TOKEN = "ghp_Fx7Kq2Lm9Rt4Vw8Yz3Bc6Dn1Gh5Jp0Ts2Uv"


def have(*bins):
    return all(shutil.which(b) for b in bins)


def reexec_in_keyring_session():
    """Runs this script again inside a private D-Bus session with an
    unlocked gnome-keyring whose files live in a temp HOME."""
    tmp = tempfile.mkdtemp(prefix="as-keyring-")
    env = dict(os.environ, HOME=tmp, AS_KEYRING_INNER="1")
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    try:
        r = subprocess.run(
            ["dbus-run-session", "--", "sh", KEYRING_SESSION, sys.executable, __file__],
            env=env, timeout=600)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(r.returncode)


def secret_tool(name):
    # bytes, so a stored CR/LF is compared as stored (text mode would fold it)
    r = subprocess.run(["secret-tool", "lookup", "service", "agentstack", "account", name],
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode()


def no_bus_env(sb, **extra):
    e = sb.env(**extra)
    e.pop("DBUS_SESSION_BUS_ADDRESS", None)
    e["XDG_RUNTIME_DIR"] = os.path.join(sb.root, "no-runtime-dir")
    return e


def project(sb, refs):
    body = "version = 1\n\n[servers.gh]\ntype = \"http\"\nurl = \"https://x.invalid/mcp\"\n"
    body += "headers = { " + ", ".join(f'H{i} = "${{{r}}}"' for i, r in enumerate(refs)) + " }\n"
    sb.write(".agentstack/agentstack.toml", body)
    # a real repository: "(gitignored)" is printed only when git confirms it
    git("init", "-q", sb.project)


def keychain_half():
    with Sandbox() as sb:
        project(sb, ["GH_PAT", "MISSING_ONE"])
        r = sb.run("secret", "set", "GH_PAT", "--stdin", input=TOKEN + "\n")
        check(r.returncode == 0 and "✓ stored 'GH_PAT' in the OS keychain" in r.stdout,
              "set --stdin stores in the OS keychain", r.stdout + r.stderr)
        rc, out = secret_tool("GH_PAT")
        check(rc == 0 and out == TOKEN, "secret-tool finds exactly the value (newline stripped)",
              repr(out))
        check(TOKEN not in r.stdout + r.stderr, "set never prints the value")

        g = sb.run("secret", "get", "GH_PAT")
        check(g.returncode == 0 and TOKEN not in g.stdout and "keychain" in g.stdout
              and "********" in g.stdout, "get masks the value and names the keychain", g.stdout)
        g = sb.run("secret", "get", "GH_PAT", "--reveal")
        check(g.returncode == 0 and g.stdout == TOKEN + "\n", "get --reveal prints the value",
              g.stdout)

        lst = sb.run("secret", "list")
        check(lst.returncode == 0 and "✓ GH_PAT resolved (keychain)" in lst.stdout,
              "list: ✓ GH_PAT resolved (keychain)", lst.stdout)
        check("✗ MISSING_ONE not found ↳ agentstack secret set MISSING_ONE" in lst.stdout,
              "list: ✗ MISSING_ONE not found ↳ agentstack secret set MISSING_ONE", lst.stdout)
        check(TOKEN not in lst.stdout + lst.stderr, "list never shows a value")
        j = sb.run("secret", "list", "--json")
        d = json.loads(j.stdout)
        names = {s["name"]: s for s in d["secrets"]}
        check(names["GH_PAT"]["source"] == "keychain" and not names["MISSING_ONE"]["resolved"],
              "list --json: names, sources, resolved flags", j.stdout)

        # doctor locates keychain-held secrets by name, never reading a value
        d = sb.run("doctor")
        check("${GH_PAT}" not in d.stdout and "${MISSING_ONE} not found" in d.stdout
              and "looked in the environment, the OS keychain," in d.stdout
              and TOKEN not in d.stdout + d.stderr,
              "doctor: a keychain-held secret is present; the missing one was looked for in "
              "the keychain", d.stdout)
        r = sb.run("secret", "set", "MISSING_ONE", "--store", "file", "--stdin", input="fs-v1\n")
        d = sb.run("doctor")
        check(r.returncode == 0 and "⚠ ${MISSING_ONE} is held in the file store" in d.stdout
              and "agentstack secret set MISSING_ONE && agentstack secret rm MISSING_ONE "
              "--store file" in d.stdout,
              "doctor: a file-store secret with a keychain at hand is a warning with the move",
              d.stdout)

        # env beats the keychain; the keychain is listed as also holding it
        lst = sb.run("secret", "list", env=sb.env(GH_PAT="from-env"))
        check("✓ GH_PAT resolved (env; also in keychain)" in lst.stdout,
              "list names every holder in chain order", lst.stdout)

        ml = "line one\r\nline two"
        r = sb.run("secret", "set", "ML", "--stdin", input=ml)
        rc, out = secret_tool("ML")
        check(r.returncode == 0 and out == ml, "the keychain accepts CR/LF values", repr(out))
        r = subprocess.run([BIN, "secret", "set", "NUL", "--stdin"],
                           input=b"a\x00b", capture_output=True, env=sb.env(), cwd=sb.project,
                           timeout=60)
        check(r.returncode == 1 and b"NUL" in r.stderr and secret_tool("NUL")[0] != 0,
              "a NUL byte is refused before the keychain", r.stderr)

        r = sb.run("secret", "set", "VIA_ARGV", "--value", "argv-value-1")
        check(r.returncode == 0 and "argv" in r.stderr and "warning" in r.stderr,
              "--value works but warns that argv is visible", r.stderr)
        check(secret_tool("VIA_ARGV")[1] == "argv-value-1", "--value stored")

        r = sb.run("secret", "rm", "GH_PAT")
        check(r.returncode == 0 and "removed 'GH_PAT'" in r.stdout, "rm removes", r.stdout)
        check(secret_tool("GH_PAT")[0] != 0, "secret-tool no longer finds it")
        r = sb.run("secret", "rm", "GH_PAT")
        check(r.returncode == 0 and "nothing to remove" in r.stdout, "rm of an absent name is 0",
              r.stdout)
        g = sb.run("secret", "get", "GH_PAT")
        check(g.returncode == 1 and "agentstack secret set GH_PAT" in g.stderr,
              "get of a missing secret exits 1 with the fix", g.stderr)


def no_keychain_half():
    with Sandbox() as sb:
        project(sb, ["T"])
        e = no_bus_env(sb)
        r = sb.run("secret", "set", "T", "--stdin", input="v4lue-1\n", env=e)
        check(r.returncode == 1 and "--env-file" in r.stderr and "--store file" in r.stderr
              and "no Secret Service" in r.stderr,
              "no session bus: set refuses, says why, names --env-file and --store file",
              r.stderr)
        check(not os.path.exists(os.path.join(sb.ah, "secrets.env"))
              and not os.path.exists(os.path.join(sb.project, ".agentstack", ".env")),
              "and writes nothing anywhere (no silent fallback)")

        r = sb.run("secret", "set", "T", "--store", "file", env=e)
        check(r.returncode == 1 and "needs a terminal" in r.stderr
              and "secret set T --value" in r.stderr,
              "no tty, no --stdin: 'needs a terminal' and 'secret set T --value'", r.stderr)

        r = sb.run("secret", "set", "T", "--store", "file", "--stdin", input="file-v1\n", env=e)
        store = os.path.join(sb.ah, "secrets.env")
        check(r.returncode == 0 and "file store" in r.stdout and os.path.exists(store)
              and os.stat(store).st_mode & 0o777 == 0o600,
              "--store file: $AGENTSTACK_HOME/secrets.env, 0600", r.stdout + r.stderr)
        g = sb.run("secret", "get", "T", env=e)
        check(g.returncode == 0 and "(file," in g.stdout and "file-v1" not in g.stdout,
              "get reads the file store (masked)", g.stdout)
        lst = sb.run("secret", "list", env=e)
        check("✓ T resolved (file)" in lst.stdout and "keychain:" in lst.stdout,
              "list: resolved from the file store; says why the keychain is out", lst.stdout)
        d = sb.run("doctor", env=e)
        check("· ${T} is held in the file store " + store in d.stdout
              and "(no keychain answered here)" in d.stdout,
              "doctor flags the file store (a note: no keychain here)", d.stdout)
        os.chmod(store, 0o644)
        d = sb.run("doctor", env=e)
        check("not private to you" in d.stdout and "chmod 600 " + store in d.stdout,
              "doctor: a file store others can read is an error (the chain refuses it)",
              d.stdout)
        os.chmod(store, 0o600)

        r = sb.run("secret", "set", "E1", "--env-file", "--stdin", input="env v 1\n", env=e)
        dotenv = os.path.join(sb.project, ".agentstack", ".env")
        ok = r.returncode == 0 and "(gitignored)" in r.stdout and os.path.exists(dotenv)
        check(ok and os.stat(dotenv).st_mode & 0o777 == 0o600, "--env-file: .agentstack/.env 0600",
              r.stdout + r.stderr)
        check('E1="env v 1"' in open(dotenv).read(), "values with spaces are quoted")
        gi = open(os.path.join(sb.project, ".gitignore")).read()
        check("/.agentstack/.env" in gi and "never commit" in gi,
              "the git project ignores /.agentstack/.env", gi)
        before = open(dotenv).read()
        r = sb.run("secret", "set", "E2", "--env-file", "--stdin", input="a\nE3=forged", env=e)
        check(r.returncode == 1 and "line break" in r.stderr and open(dotenv).read() == before,
              "CR/LF refused for .env; the file is unchanged", r.stderr)
        r = sb.run("secret", "rm", "E1", "--env-file", env=e)
        check(r.returncode == 0 and "E1" not in open(dotenv).read(), "rm --env-file", r.stdout)

        r = sb.run("secret", "frob", env=e)
        check(r.returncode == 2, "unknown subcommand: exit 2")
        r = sb.run("secret", "set", "1BAD", "--stdin", input="x", env=e)
        check(r.returncode == 2, "invalid name: exit 2")


if os.environ.get("AS_KEYRING_INNER"):
    keychain_half()
    no_keychain_half()
    done()
elif have("dbus-run-session", "gnome-keyring-daemon", "secret-tool"):
    reexec_in_keyring_session()
else:
    skip_part("gnome-keyring, libsecret-tools or dbus missing — the real-keychain half of "
              "this test did not run (apt-get install gnome-keyring libsecret-tools dbus)")
    no_keychain_half()
    done()
