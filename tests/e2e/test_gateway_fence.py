"""The toolset fence with --manifest-dir (and plain `agentstack mcp`), written
as the attack: a project that fences its servers behind toolsets must not
serve a fenced server before a lease selects it, nor after
agentstack_lease_close, over stdio or through the code-mode endpoint
(docs/gateway.md "One dispatch"; naming the project is consent to run it,
not a wider surface than its toolsets ask for). The default toolset opens by
itself in this mode too, and is not reopened after an explicit close."""
import glob
import json
import os
import socket
import sys
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import FAKE, Gateway, audit_rows, grant, is_error, text  # noqa: E402


def stdio(name, tool):
    return (f'[servers.{name}]\ntype = "stdio"\ncommand = "python3"\n'
            f'args = ["./fake.py", "--tools", "{tool}"]\n\n')


def project(sb, default=None):
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("fake.py", FAKE)
    head = "version = 1\n" + (f'default_toolset = "{default}"\n' if default else "") + "\n"
    sb.write("agentstack.toml", head + stdio("a", "get_a") + stdio("b", "get_b") +
             '[toolsets.ta]\nservers = ["a"]\n\n[toolsets.tb]\nservers = ["b"]\n')
    grant(sb)


def endpoint(sb):
    eps = glob.glob(os.path.join(sb.ah, "gateway", "*", "endpoint.json"))
    if not eps:
        return None
    with open(eps[0]) as f:
        return json.load(f)


def cm_call(cfg, name):
    """Status of a code-mode call (0 when nothing answers)."""
    if not cfg:
        return 0
    u = urlparse(cfg["url"])
    body = json.dumps({"name": name, "arguments": {}}).encode()
    try:
        s = socket.create_connection((u.hostname, u.port), timeout=60)
        s.sendall(b"POST " + u.path.encode() + b" HTTP/1.1\r\nX-Agentstack-Token: " +
                  cfg["token"].encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
    except OSError:
        return 0
    return int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else 0


def fenced(c):
    return is_error(c) and "fences its servers behind toolsets" in text(c)


def served(c, tool):
    return not is_error(c) and text(c) == f"{tool}: ok"


def no_default(mode_args, label):
    with Sandbox() as sb:
        project(sb)
        args = [a if a != "{dir}" else sb.project for a in mode_args]
        with Gateway(sb, *args) as g:
            g.initialize()
            s = text(g.call("tools_search", {"query": "get"}))
            check("b__get_b" not in s and "a__get_a" not in s,
                  f"{label}: nothing is listed before a lease", s)
            c = g.call("b__get_b", {})
            check(fenced(c), f"{label}: b__get_b before any lease is fenced", text(c))
            check(endpoint(sb) is None, f"{label}: no code-mode endpoint before a lease")
            g.call("agentstack_lease_open", {"profile": "tb"})
            c = g.call("b__get_b", {})
            check(served(c, "get_b"), f"{label}: after lease_open tb, b__get_b answers", text(c))
            c = g.call("a__get_a", {})
            check(fenced(c), f"{label}: the lease tb does not serve a", text(c))
            cfg = endpoint(sb)
            check(cm_call(cfg, "b__get_b") == 200, f"{label}: code mode serves the lease", cfg)
            g.call("agentstack_lease_close", {})
            c = g.call("b__get_b", {})
            check(fenced(c), f"{label}: after lease_close, b__get_b is fenced again", text(c))
            c = g.call("a__get_a", {})
            check(fenced(c), f"{label}: after lease_close, a__get_a is fenced", text(c))
            check(cm_call(cfg, "b__get_b") in (0, 401),
                  f"{label}: after lease_close the code-mode door is shut", cfg)
            check(endpoint(sb) is None, f"{label}: no endpoint after lease_close")
            g.close()
        rows = [r for r in audit_rows(sb) if r.get("tool") == "fence"]
        check(len(rows) >= 3 and all(r["outcome"] == "denied" for r in rows),
              f"{label}: every fenced call wrote a fence row", rows)


def with_default():
    with Sandbox() as sb:
        project(sb, default="ta")
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            c = g.call("a__get_a", {})
            check(served(c, "get_a"), "--manifest-dir: the default toolset opens by itself",
                  text(c))
            c = g.call("b__get_b", {})
            check(fenced(c), "--manifest-dir: the default toolset does not serve b", text(c))
            st = g.call("agentstack_lease_status", {})
            check('"ta"' in text(st), "--manifest-dir: lease_status names the default", text(st))
            check(cm_call(endpoint(sb), "b__get_b") in (404, 502),
                  "--manifest-dir: code mode does not reach b through the default")
            g.call("agentstack_lease_close", {})
            c = g.call("a__get_a", {})
            check(fenced(c), "--manifest-dir: closed, the default is not reopened", text(c))
            check(endpoint(sb) is None, "--manifest-dir: no endpoint once closed")
            g.close()


def main():
    no_default(["--manifest-dir", "{dir}"], "--manifest-dir")
    no_default([], "plain mcp")
    with_default()
    done()


if __name__ == "__main__":
    main()
