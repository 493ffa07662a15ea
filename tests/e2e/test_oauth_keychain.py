#!/usr/bin/env python3
"""OAuth tokens in the OS keychain (docs/oauth.md, "What is stored where"):
inside a private D-Bus session with an unlocked gnome-keyring (temp HOME),
`auth login` stores the tokens in the keychain, not the file store; the
gateway reads them from there; `auth logout` deletes the item. Skipped
loudly where gnome-keyring, libsecret-tools or dbus are missing."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aslib import BIN, KEYRING_SESSION, Sandbox, check, done, skip  # noqa: E402
from mcpclient import Gateway, text  # noqa: E402
from test_oauth import Fixture, files_with, login_with_env, project  # noqa: E402


def secret_tool(name):
    r = subprocess.run(["secret-tool", "lookup", "service", "agentstack", "account", name],
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode()


def inner():
    with Sandbox() as sb, Fixture() as fx:
        project(sb, fx)
        e = sb.env()
        check(e.get("DBUS_SESSION_BUS_ADDRESS"), "a session bus is there")
        rc, out, err, _ = login_with_env(sb, e)
        check(rc == 0 and "OS keychain" in out, "login: tokens in the OS keychain", out + err)
        rec = json.load(open(os.path.join(sb.ah, "oauth", "web.json")))
        check(rec["store"] == "keychain", "the record names the keychain", rec)
        secrets = os.path.join(sb.ah, "secrets.env")
        check(not os.path.exists(secrets) or "AGENTSTACK_OAUTH_WEB" not in open(secrets).read(),
              "nothing in the file store")
        st = fx.stats()
        code, value = secret_tool("AGENTSTACK_OAUTH_WEB")
        check(code == 0 and value, "the keychain holds the item")
        for t in st["all_access"] + st["all_refresh"]:
            check(files_with(sb.root, t, None) == [], "the token is in no file under HOME")
        with Gateway(sb, "--auto-project", env=e) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "kc"})
            check(text(c) == "Echo: kc", "gateway: the token read from the keychain", c)
            g.close()
        r = subprocess.run([BIN, "auth", "logout", "web"], cwd=sb.project, env=e,
                           capture_output=True, text=True)
        check(r.returncode == 0, "logout", r.stdout + r.stderr)
        code, value = secret_tool("AGENTSTACK_OAUTH_WEB")
        check(code != 0 or not value, "logout: the keychain item is gone")


def have(*bins):
    return all(shutil.which(b) for b in bins)


if os.environ.get("AS_KEYRING_INNER"):
    inner()
    done()
elif have("dbus-run-session", "gnome-keyring-daemon", "secret-tool"):
    tmp = tempfile.mkdtemp(prefix="as-keyring-")
    env = dict(os.environ, HOME=tmp, AS_KEYRING_INNER="1")
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    try:
        r = subprocess.run(["dbus-run-session", "--", "sh", KEYRING_SESSION, sys.executable,
                            os.path.abspath(__file__)], env=env, timeout=600)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(r.returncode)
else:
    skip("gnome-keyring, libsecret-tools or dbus missing — the keychain store of OAuth tokens "
         "was not tested (apt-get install gnome-keyring libsecret-tools dbus)")
