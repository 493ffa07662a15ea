#!/usr/bin/env python3
"""OAuth for HTTP MCP upstreams (docs/oauth.md), end to end against
tests/fixtures/oauth_server.py on loopback: `auth login` driven without a
browser (the test fetches the printed URL itself and follows the
authorization server's redirect to the login's listener), the gateway
calling a tool on the protected upstream with the stored token, refresh
with rotation, a revoked token reported as "needs login", logout with
revocation; and each hostile answer refused with nothing stored: a wrong
audience, a wrong state, metadata for another resource, an http: issuer,
another issuer, a metadata or token redirect to another origin, an
oversized token answer. The token's value is in no file under HOME but the
secret store, and in no output or log."""
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aslib import BIN, SRC, Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, grant, is_error, text  # noqa: E402

FIXTURE = os.path.join(SRC, "tests", "fixtures", "oauth_server.py")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def fetch(url, data=None):
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    try:
        with OPENER.open(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class Fixture:
    def __init__(self, *flags):
        self.proc = subprocess.Popen([sys.executable, FIXTURE, *flags],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline().split()[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def stats(self):
        return json.loads(fetch(self.base + "/_test/stats")[2])

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.proc.kill()
        self.proc.wait()


def env(sb):
    # the file store, whatever keychain the machine running the suite has
    e = sb.env()
    e.pop("DBUS_SESSION_BUS_ADDRESS", None)
    return e


def project(sb, fx):
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write("version = 1\n")
    sb.write("agentstack.toml", 'version = 1\n\n[servers.web]\ntype = "http"\n'
             'url = "%s/mcp"\n\n[policy.egress]\nweb = ["127.0.0.1"]\n' % fx.base)
    grant(sb)


def login(sb, *extra, follow=True):
    return login_with_env(sb, env(sb), *extra, follow=follow)


def login_with_env(sb, e, *extra, follow=True):
    """Runs `auth login web`; fetches the printed URL and follows its
    redirect to the listener, as a browser would. (rc, stdout, stderr)."""
    p = subprocess.Popen([BIN, "auth", "login", "web", "--timeout", "60", *extra],
                         cwd=sb.project, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out = []
    url = None
    for line in p.stdout:
        out.append(line)
        s = line.strip()
        if s.startswith("http://") and "/authorize?" in s:
            url = s
            break
        if not s and len(out) > 3:
            break
    loc = None
    if url and follow:
        st, h, _ = fetch(url)
        loc = h.get("Location")
        if st == 302 and loc:
            fetch(loc)
    rest, err = p.communicate(timeout=60)
    LAST["redirect"] = loc
    return p.returncode, "".join(out) + rest, err, url


LAST = {}


def status(sb):
    r = subprocess.run([BIN, "auth", "status", "--json"], cwd=sb.project, env=env(sb),
                       capture_output=True, text=True)
    return r, json.loads(r.stdout) if r.returncode == 0 else None


def stored_tokens(sb):
    """The tokens as the file store holds them (base64url JSON)."""
    path = os.path.join(sb.ah, "secrets.env")
    if not os.path.exists(path):
        return None
    for line in open(path):
        if line.startswith("AGENTSTACK_OAUTH_WEB="):
            v = line.split("=", 1)[1].strip()
            return json.loads(base64.urlsafe_b64decode(v + "=" * (-len(v) % 4)))
    return None


def files_with(root, needle, skip):
    hits = []
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            if p == skip or os.path.islink(p):
                continue
            try:
                if needle.encode() in open(p, "rb").read():
                    hits.append(p)
            except OSError:
                pass
    return hits


def happy():
    with Sandbox() as sb, Fixture("--expires", "3600") as fx:
        project(sb, fx)
        rc, out, err, url = login(sb)
        check(rc == 0 and "logged in to 'web'" in out, "login: exit 0 and says so", out + err)
        check(url and "code_challenge_method=S256" in url and "resource=" in url and
              "state=" in url, "login: the URL carries PKCE S256, state and resource", url)
        st = fx.stats()
        check(st["registered"] == 1 and st["authorization_code"] == 1,
              "login: the client registered dynamically and exchanged its code", st)
        check(st["resource_params"] == [fx.base + "/mcp"],
              "login: the resource indicator names the server", st["resource_params"])
        toks = stored_tokens(sb)
        check(toks and toks["access_token"] in st["live_access"],
              "login: the live access token is in the file store", toks)
        check(toks["access_token"] not in out + err and toks["refresh_token"] not in out + err,
              "login: no token in its output")
        try:
            fetch(LAST["redirect"])
            again = "answered"
        except OSError:
            again = "refused"
        check(again == "refused", "login: the listener took one redirect and is gone", again)
        r, s = status(sb)
        row = s and s["servers"][0]
        check(row and row["server"] == "web" and row["logged_in"] and row["scopes"] == "mcp" and
              row["expires_at"], "auth status --json: logged in, scopes, expiry", r.stdout)
        check(toks["access_token"] not in r.stdout and toks["refresh_token"] not in r.stdout,
              "auth status never shows a token", r.stdout)
        with Gateway(sb, "--auto-project", env=env(sb)) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "hi"})
            check(text(c) == "Echo: hi", "gateway: a call on the protected upstream", c)
            g.close()
            seen = "\n".join(g.raw) + g.stderr()
        check(toks["access_token"] not in seen, "gateway: the token never reaches the agent")
        secret = os.path.join(sb.ah, "secrets.env")
        for t in (toks["access_token"], toks["refresh_token"]):
            check(files_with(sb.root, t, None) == [],
                  "the raw token is in no file under HOME", files_with(sb.root, t, None))
        enc = open(secret).read().split("AGENTSTACK_OAUTH_WEB=")[1].split("\n")[0]
        check(files_with(sb.root, enc, secret) == [],
              "the stored value is in no file but the secret store", files_with(sb.root, enc,
                                                                               secret))
        check(oct(os.stat(secret).st_mode & 0o777) == "0o600", "the file store is 0600")
        rec = os.path.join(sb.ah, "oauth", "web.json")
        check(oct(os.stat(rec).st_mode & 0o777) == "0o600", "the login record is 0600")
        # revoked behind our back: the next gateway says a login is needed
        fetch(fx.base + "/_test/revoke-all", b"")
        with Gateway(sb, "--auto-project", env=env(sb)) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": "echo"}))
            check("needs login" in s and "agentstack auth login web" in s,
                  "tools_search: a revoked token says needs login and the command", s)
            lst = json.loads(text(g.call("agentstack_list", {})))
            web = [x for x in lst["servers"] if x["name"] == "web"]
            check(web and web[0].get("needs_login") == "agentstack auth login web",
                  "agentstack_list: the upstream's status says needs login", lst)
            # a login made while this gateway runs is used at its next request
            rc, out, err, _ = login(sb)
            check(rc == 0, "login while a gateway runs", out + err)
            c = g.call("web__echo", {"message": "back"})
            check(text(c) == "Echo: back", "the running gateway uses the new login", c)
            s = text(g.call("tools_search", {"query": "echo"}))
            check("needs login" not in s, "tools_search: no needs-login line after it", s)
            r, st_ = status(sb)
            check(st_ and st_["servers"][0]["logged_in"], "auth status: logged in again",
                  r.stdout)
            fetch(fx.base + "/_test/revoke-all", b"")
            c = g.call("web__echo", {"message": "gone"})
            check(is_error(c), "a call after the revocation fails", c)
            g.close()
        r, s = status(sb)
        row = s and s["servers"][0]
        check(row and not row["logged_in"] and row["fix"] == "agentstack auth login web" and
              "401" in row["reason"], "auth status: needs login after the 401", r.stdout)
        r = subprocess.run([BIN, "status", "--json"], cwd=sb.project, env=env(sb),
                           capture_output=True, text=True)
        j = json.loads(r.stdout)
        check(j["project"]["logins_needed"] == ["web"] and
              j["next_action"]["command"] == "agentstack auth login web",
              "status --json: the login needed, and the command as the next action", r.stdout)
        r = subprocess.run([BIN, "doctor"], cwd=sb.project, env=env(sb),
                           capture_output=True, text=True)
        check("server 'web' needs an OAuth login" in r.stdout and
              "agentstack auth login web" in r.stdout, "doctor: the login needed and its fix",
              r.stdout)
        # login again, then logout revokes at the AS and deletes everything
        rc, out, err, _ = login(sb)
        check(rc == 0, "login again after a revocation", out + err)
        toks = stored_tokens(sb)
        before = fx.stats()["revoked"]
        r = subprocess.run([BIN, "auth", "logout", "web"], cwd=sb.project, env=env(sb),
                           capture_output=True, text=True)
        st = fx.stats()
        check(r.returncode == 0 and "revoked" in r.stdout, "logout: exit 0, says revoked",
              r.stdout + r.stderr)
        check(st["revoked"] == before + 2 and toks["refresh_token"] not in st["live_refresh"],
              "logout: the refresh and access tokens were revoked at the AS", st)
        check(stored_tokens(sb) is None and not os.path.exists(rec),
              "logout: the tokens and the record are gone")


def refresh():
    # 30 s is inside the refresh margin: every use refreshes first
    with Sandbox() as sb, Fixture("--expires", "30") as fx:
        project(sb, fx)
        rc, out, err, _ = login(sb)
        check(rc == 0, "refresh: login", out + err)
        first = stored_tokens(sb)
        with Gateway(sb, "--auto-project", env=env(sb)) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "r"})
            check(text(c) == "Echo: r", "refresh: the call succeeds", c)
            g.close()
        st = fx.stats()
        now = stored_tokens(sb)
        check(st["refresh_token"] >= 1, "refresh: the gateway refreshed before expiry", st)
        check(now["refresh_token"] != first["refresh_token"] and
              now["refresh_token"] in st["live_refresh"] and
              first["refresh_token"] not in st["live_refresh"],
              "refresh: the rotated refresh token replaced the spent one", (first, now))
        with Gateway(sb, "--auto-project", env=env(sb)) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "again"})
            check(text(c) == "Echo: again", "refresh: a later gateway goes on with the rotated "
                  "refresh token", c)
            g.close()
        # two gateways on one login: each refresh spends the token the other
        # holds; the loser takes what the winner stored instead of failing
        with Gateway(sb, "--auto-project", env=env(sb)) as a, \
                Gateway(sb, "--auto-project", env=env(sb)) as b:
            a.initialize()
            b.initialize()
            ok = True
            for i in range(3):
                for g in (a, b):
                    c = g.call("web__echo", {"message": "m%d" % i})
                    ok = ok and text(c) == "Echo: m%d" % i
            check(ok, "refresh: two gateways sharing a login both keep working", fx.stats())
            a.close()
            b.close()
        r, s = status(sb)
        check(s and s["servers"][0]["logged_in"], "refresh: the login is still usable", r.stdout)


def moved():
    """A login is bound to the URL it was made for: after the manifest names
    another URL, the token is not sent there, and a login is asked for."""
    with Sandbox() as sb, Fixture() as fx, Fixture() as other:
        project(sb, fx)
        rc, out, err, _ = login(sb)
        check(rc == 0, "moved: login", out + err)
        toks = stored_tokens(sb)
        sb.write("agentstack.toml", 'version = 1\n\n[servers.web]\ntype = "http"\n'
                 'url = "%s/mcp"\n\n[policy.egress]\nweb = ["127.0.0.1"]\n' % other.base)
        grant(sb)
        with Gateway(sb, "--auto-project", env=env(sb)) as g:
            g.initialize()
            c = g.call("web__echo", {"message": "x"})
            check(is_error(c), "moved: the call fails", c)
            g.close()
        seen = other.stats().get("auth_seen", [])
        check(not any(toks["access_token"] in a for a in seen),
              "moved: the token was never sent to the other URL", seen)
        r, s = status(sb)
        row = s and s["servers"][0]
        check(row and not row["logged_in"] and "another URL" in row["reason"],
              "moved: auth status says the login was for another URL", r.stdout)


def static_header():
    """A server the manifest gives its own Authorization header is not said
    to need an OAuth login when that header is refused."""
    with Sandbox() as sb, Fixture() as fx:
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write("version = 1\n")
        sb.write("agentstack.toml", 'version = 1\n\n[servers.web]\ntype = "http"\n'
                 'url = "%s/mcp"\nheaders = { Authorization = "Bearer ${WEB_TOKEN}" }\n\n'
                 '[policy.egress]\nweb = ["127.0.0.1"]\n' % fx.base)
        grant(sb)
        e = env(sb)
        e["WEB_TOKEN"] = "not-a-live-token"
        with Gateway(sb, "--auto-project", env=e) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": "echo"}))
            check("needs login" not in s, "static header: no needs-login line", s)
            g.close()
        check(not os.path.exists(os.path.join(sb.ah, "oauth", "web.json")),
              "static header: no login record is made")


def refused(flags, what, needle, follow=True):
    with Sandbox() as sb, Fixture(*flags) as fx:
        project(sb, fx)
        rc, out, err, _ = login(sb, follow=follow)
        check(rc == 1 and needle in err, "%s: login refused (%s)" % (what, needle), out + err)
        check(stored_tokens(sb) is None and not os.path.exists(os.path.join(sb.ah, "oauth",
                                                                           "web.json")),
              "%s: nothing stored" % what)
        st = fx.stats()
        for t in st["all_access"] + st["all_refresh"]:
            check(t not in out + err and files_with(sb.root, t, None) == [],
                  "%s: an issued token is nowhere" % what)


def hostile():
    refused(["--jwt-aud", "http://other.example/mcp"], "wrong audience", "audience")
    refused(["--wrong-state"], "wrong state", "state")
    refused(["--bad-resource"], "metadata for another resource", "another resource")
    refused(["--http-issuer"], "http: issuer", "https is required")
    refused(["--issuer-mismatch"], "another issuer", "another issuer")
    refused(["--meta-redirect"], "metadata redirect", "redirects are refused")
    refused(["--token-redirect"], "token redirect", "redirect")
    refused(["--huge-token"], "oversized token answer", "bytes; refused")
    # a JWT whose audience is this server is accepted
    with Sandbox() as sb, Fixture("--jwt-aud", "self") as fx:
        project(sb, fx)
        rc, out, err, _ = login(sb)
        check(rc == 0, "a JWT for this server's audience is accepted", out + err)


def discovery():
    # no resource_metadata in the 401: the well-known location is found
    with Sandbox() as sb, Fixture("--no-www-auth") as fx:
        project(sb, fx)
        rc, out, err, _ = login(sb)
        check(rc == 0, "discovery: the well-known fallback finds the metadata", out + err)
    # no registration offered: a login needs --client-id, and works with it
    with Sandbox() as sb, Fixture("--no-registration") as fx:
        project(sb, fx)
        rc, out, err, _ = login(sb, follow=False)
        check(rc == 1 and "--client-id" in err, "no registration: the login names --client-id",
              out + err)
        rc, out, err, _ = login(sb, "--client-id", "fixed-client")
        check(rc == 0 and fx.stats()["registered"] == 0,
              "no registration: --client-id logs in without registering", out + err)
        rec = json.load(open(os.path.join(sb.ah, "oauth", "web.json")))
        check(rec["client_id"] == "fixed-client", "the record keeps the client id", rec)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    happy()
    refresh()
    discovery()
    moved()
    static_header()
    hostile()
    done()


if __name__ == "__main__":
    main()
