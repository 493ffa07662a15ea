"""Per-server isolation on the host: `[policy.isolation] servers = "confined"`.

With the machine setting on, the plain gateway (`agentstack mcp`, no run)
starts every stdio server in a jail of its own. Written as the server
misbehaving: it tries to read a file under the real $HOME, connect to a host
loopback port, write into the project, and tunnel out.

Proven: the file is unreadable and HOME is the private home; the loopback
port is unreachable directly; an allowed host is reached through the proxy
only (the sink sees the proxy's connection and answers); a denied host is
refused (403) and recorded in the call audit with rule and layer, the
allowed one with its destination; the project is read-only (no
[policy.filesystem] write). A project may ask for it with the machine
silent; it can never turn the machine's setting off. `policy explain`,
`status` and the trust card say how servers run; the `locked-down` preset
turns it on; a typo in the table is an error naming the file and position.
The same server without the setting runs on the host (the control)."""
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from confinelib import HELPER, SERVER, server_manifest  # noqa: E402
from mcpclient import Gateway, audit_rows, grant, is_error, text  # noqa: E402

ISOLATED = 'version = 1\n\n[policy.isolation]\nservers = "confined"\n'
EGRESS = '\n[policy.egress]\n"*" = ["!blocked.invalid"]\n'


class Sink:
    """A loopback TCP peer standing in for an allowed host."""

    def __init__(self):
        self.l = socket.socket()
        self.l.bind(("127.0.0.1", 0))
        self.l.listen(8)
        self.port = self.l.getsockname()[1]
        self.got = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.l.accept()
            except OSError:
                return
            data = c.recv(100)
            self.got.append(data)
            if data == b"ping":
                c.sendall(b"pong")
            c.close()


def project(s, extra_policy=""):
    s.write("server.py", SERVER)
    s.write("helper.py", HELPER)
    s.write("agentstack.toml", server_manifest() + extra_policy)
    grant(s)


def probe(s, args, env=None):
    with Gateway(s, env=env) as gw:
        gw.initialize()
        r = gw.call("demo__probe", args)
        try:
            return json.loads(text(r)), r
        except ValueError:
            return {}, r


def confined_by_machine():
    with Sandbox() as s:
        os.makedirs(s.ah, exist_ok=True)
        with open(os.path.join(s.ah, "agentstack.toml"), "w") as f:
            f.write(ISOLATED + EGRESS)
        project(s)
        secret = s.write("real-home-secret", "HOSTSECRET\n", base=s.home)
        sink = Sink()
        env = s.env(AGENTSTACK_ALLOW_LOCAL_TARGETS="1")
        marker = os.path.join(os.path.realpath(s.project), "written-by-server")
        p, r = probe(s, {"read": secret, "connect": sink.port, "marker": marker,
                         "tunnel": f"127.0.0.1:{sink.port}", "send": "ping"}, env)
        check(p.get("home") == "/root", "machine: the server runs with a private home", [p, r])
        check(str(p.get("read", "")).startswith("ERR"),
              "machine: it cannot read a file under the real $HOME", p)
        check(str(p.get("connect", "")).startswith("ERR"),
              "machine: it cannot connect to a host loopback port", p)
        check(str(p.get("tunnel", "")).startswith("HTTP/1.1 200") and "pong" in p["tunnel"]
              and sink.got == [b"ping"],
              "machine: it reaches an allowed host only through the proxy", [p, sink.got])
        check(str(p.get("marker", "")).startswith("ERR") and not os.path.exists(marker),
              "machine: the project is read-only to it (no [policy.filesystem] write)", p)
        p2, _ = probe(s, {"tunnel": "blocked.invalid:443"}, env)
        check(str(p2.get("tunnel", "")).startswith("HTTP/1.1 403"),
              "machine: a denied host is refused by its proxy", p2)
        rows = [x for x in audit_rows(s) if x.get("tool") == "egress" and x.get("server") == "demo"]
        denied = [x for x in rows if x.get("outcome") == "denied"]
        allowed = [x for x in rows if x.get("outcome") == "ok"]
        check(denied and denied[0].get("rule") == "!blocked.invalid"
              and denied[0].get("layer") == "machine"
              and "blocked.invalid:443" in denied[0].get("detail", ""),
              "machine: the denial is in the call audit with rule and layer", rows)
        check(allowed and f"127.0.0.1:{sink.port}" in allowed[0].get("detail", ""),
              "machine: the allowed destination is in the call audit too", rows)
        ex = s.run("policy", "explain", "demo")
        check("Isolation" in ex.stdout and "confined" in ex.stdout and "machine policy" in ex.stdout,
              "machine: policy explain shows the server's isolation", ex.stdout)
        st = s.run("status")
        check("Servers    confined" in st.stdout, "machine: status shows it", st.stdout)
        card = s.run("trust", ".")
        check("runs: confined" in card.stdout, "machine: the trust card shows it", card.stdout)
        # A project cannot turn it off.
        s.write("agentstack.toml", server_manifest() + '\n[policy.isolation]\nservers = "host"\n')
        grant(s)
        p3, r3 = probe(s, {}, env)
        check(p3.get("home") == "/root",
              "machine: a project's servers = \"host\" does not turn it off", [p3, r3])


def asked_by_project():
    with Sandbox() as s:
        project(s, '\n[policy.isolation]\nservers = "confined"\n')
        p, r = probe(s, {})
        check(p.get("home") == "/root", "project: a project may ask for it", [p, r])
        ex = s.run("policy", "explain", "demo")
        check("asked for by the project" in ex.stdout, "project: explain says who asked", ex.stdout)


def control_on_the_host():
    with Sandbox() as s:
        project(s)
        p, r = probe(s, {})
        check(p.get("home") == s.home and not is_error(r),
              "control: without the setting the server runs on the host", [p, r])
        ex = s.run("policy", "explain", "demo")
        check("host — stdio servers run as you" in ex.stdout, "control: explain says host",
              ex.stdout)


def preset_and_validator():
    with Sandbox() as s:
        os.makedirs(s.ah, exist_ok=True)
        with open(os.path.join(s.ah, "agentstack.toml"), "w") as f:
            f.write('version = 1\n\n[policy.tools]\n"*" = ["!delete_*"]\n')
        r = s.run("policy", "preset", "locked-down", "--write")
        with open(os.path.join(s.ah, "agentstack.toml")) as f:
            text_ = f.read()
        check(r.returncode == 0 and '[policy.isolation]\nservers = "confined"' in text_,
              "the locked-down preset turns isolation on", r.stdout + r.stderr + text_)
        s.write("agentstack.toml", server_manifest() + '\n[policy.isolation]\nserver = "confined"\n')
        r = s.run("lock", "--write")
        check(r.returncode != 0 and "agentstack.toml:" in r.stderr and "server" in r.stderr
              and "servers" in r.stderr, "a typo in [policy.isolation] is an error with its "
              "position and the key it meant", r.stderr)
        s.write("agentstack.toml", server_manifest() + '\n[policy.isolation]\nservers = "off"\n')
        r = s.run("lock", "--write")
        check(r.returncode != 0 and "\"confined\" or \"host\"" in r.stderr,
              "an unknown value is an error", r.stderr)


def main():
    confined_by_machine()
    asked_by_project()
    control_on_the_host()
    preset_and_validator()
    done()


if __name__ == "__main__":
    main()
