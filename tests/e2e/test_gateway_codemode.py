"""Code mode (docs/gateway.md). tools_bindings
(recipe, client.ts, static shim; secret-free, writes nothing) and the loopback
endpoint: endpoint.json under $AGENTSTACK_HOME/gateway/<id>/ (0600 in 0700),
never in the project; 401 before the body, 413, 503 at 64 in flight, 400,
404, 502 for a refusal (audited), 200 round trip through a real HTTP POST;
the file is gone when the gateway exits. No assertion depends on timing."""
import glob
import json
import os
import select
import socket
import sys
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import FAKE, Gateway, audit_rows, grant, text  # noqa: E402

SECRET = "cm-secret-value-4f1e9a"


def project(sb, servers, machine="version = 1\n"):
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(machine)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml", "version = 1\n\n" + servers)
    grant(sb)


def stdio(name, *args, extra=""):
    a = ", ".join(json.dumps(x) for x in ("./fake.py",) + args)
    return f'[servers.{name}]\ntype = "stdio"\ncommand = "python3"\nargs = [{a}]\n{extra}\n'


def endpoints(sb):
    return glob.glob(os.path.join(sb.ah, "gateway", "*", "endpoint.json"))


def connect(url):
    u = urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=60)
    return s, u.path


def request(url, body, token=None, extra=b"", send_body=True):
    s, path = connect(url)
    head = b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += b"Content-Type: application/json\r\n"
    if token is not None:
        head += b"X-Agentstack-Token: " + token.encode() + b"\r\n"
    head += b"Content-Length: %d\r\n" % len(body) + extra + b"\r\n"
    s.sendall(head + (body if send_body else b""))
    return s


def response(s):
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


def post(url, token, obj):
    return response(request(url, json.dumps(obj).encode(), token))


def round_trip():
    with Sandbox() as sb:
        project(sb, stdio("t", "--tools", "get_a,delete_b,hang", "--hang", "hang",
                          extra='env = { K = "${CM_SECRET}" }'),
                machine='version = 1\n\n[policy.tools]\n"*" = ["!delete_*"]\n')
        env = sb.env(CM_SECRET=SECRET)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            names = [t["name"] for t in g.request("tools/list")["result"]["tools"]]
            check("tools_bindings" in names, "tools_bindings listed once built", names)
            eps = endpoints(sb)
            check(len(eps) == 1, "endpoint.json under $AGENTSTACK_HOME/gateway/<id>/",
                  eps)
            ep = eps[0]
            check(os.stat(ep).st_mode & 0o777 == 0o600, "16: endpoint.json is 0600",
                  oct(os.stat(ep).st_mode))
            check(os.stat(os.path.dirname(ep)).st_mode & 0o777 == 0o700, "16: its dir is 0700")
            check(not os.path.exists(os.path.join(sb.project, "codemode")) and
                  not os.path.exists(os.path.join(sb.project, ".agentstack")),
                  "nothing written into the project")
            with open(ep) as f:
                cfg = json.load(f)
            url, token = cfg["url"], cfg["token"]
            check(urlparse(url).hostname == "127.0.0.1" and len(token) == 64 and
                  all(c in "0123456789abcdef" for c in token),
                  "16: loopback URL, 32-byte hex token", cfg)

            # 401 before the body: the headers alone get the answer.
            s = request(url, b"x" * 100, "0" * 64, send_body=False)
            st, body = response(s)
            check(st == 401, "16: a wrong token is refused with 401 before the body", (st, body))
            st, _ = post(url, None, {"name": "t__get_a", "arguments": {}})
            check(st == 401, "16: no token → 401", st)
            st, _ = post(url, token[:-1] + ("0" if token[-1] != "0" else "1"),
                         {"name": "t__get_a", "arguments": {}})
            check(st == 401, "16: a token off by one character → 401", st)

            big = b"Content-Length: 2097152\r\n"
            s, path = connect(url)
            s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nX-Agentstack-Token: " +
                      token.encode() + b"\r\n" + big + b"\r\n")
            st, _ = response(s)
            check(st == 413, "a body over 1 MiB → 413 (not read)", st)

            st, body = post(url, token, {"name": "t__get_a", "arguments": {}})
            check(st == 200 and body["result"]["content"][0]["text"] == "get_a: ok",
                  "16: a real HTTP POST round trip → 200 {result}", (st, body))
            st, body = post(url, token, {"name": "t__env", "arguments": {}})
            check(st == 200 and json.loads(body["result"]["content"][0]["text"]).get("K") ==
                  SECRET, "code mode reaches the upstream with its resolved secret", st)

            before = len(audit_rows(sb))
            st, body = post(url, token, {"name": "t__delete_b", "arguments": {"x": 1}})
            check(st == 502 and "denied" in body.get("error", ""),
                  "a policy-denied tool → 502 {error}", (st, body))
            rows = audit_rows(sb)[before:]
            check(any(r.get("tool") == "delete_b" and r.get("outcome") == "denied" and
                      r.get("layer") == "machine" for r in rows),
                  "the refusal is audited like tools/call (same dispatch)", rows)
            check(SECRET not in open(os.path.join(sb.ah, "audit", "calls.jsonl")).read(),
                  "no secret value in the audit")

            st, _ = post(url, token, {"name": "nope__x", "arguments": {}})
            check(st == 404, "an unknown server → 404", st)
            st, _ = post(url, token, {"name": "tools_search", "arguments": {}})
            check(st == 404, "control-plane names are not proxied → 404", st)
            st, _ = response(request(url, b"{not json", token))
            check(st == 400, "a malformed body → 400", st)
            st, _ = post(url, token, {"arguments": {}})
            check(st == 400, "no name → 400", st)

            b = text(g.call("tools_bindings", {}))
            check("export const codemode" in b and "\n  t: {\n" in b and
                  "get_a: (input: Record<string, unknown>): Promise<unknown> => "
                  'call("t__get_a", input),' in b,
                  "client.ts maps codemode.S.T(input) → call(\"S__T\", input)", b)
            check("t__delete_b" not in b, "bindings list only policy-allowed tools", b)
            i_env, i_get = b.find('call("t__env"'), b.find('call("t__get_a"')
            check(0 < i_env < i_get, "bindings are sorted", (i_env, i_get))
            check(token not in b and SECRET not in b and ep in b,
                  "16: secret-free bindings (name the file, never the token)", b)
            check("X-Agentstack-Token".lower() in b.lower() and "AGENTSTACK_CODEMODE_ENDPOINT" in b,
                  "the static shim reads the endpoint file", b)
            check(len(endpoints(sb)) == 1, "tools_bindings writes nothing")

            # 64 calls in flight; the next one is refused with 503.
            hung = [request(url, json.dumps({"name": "t__hang", "arguments": {}}).encode(),
                            token) for _ in range(65)]
            ready = []
            while not ready:
                ready, _, _ = select.select(hung, [], [], 60)
                if not ready:
                    break
            st, body = response(ready[0]) if ready else (0, None)
            check(len(ready) == 1 and st == 503, "over 64 in flight → 503", (st, body))
            for s in hung:
                if s is not ready[0]:
                    s.close()
            g.close()
        check(endpoints(sb) == [] and not glob.glob(os.path.join(sb.ah, "gateway", "*")),
              "16: endpoint.json (and its dir) gone on exit")


def no_endpoint_when_empty():
    with Sandbox() as sb:
        # Untrusted: control plane only, so no door.
        os.makedirs(sb.ah, exist_ok=True)
        sb.write("fake.py", FAKE)
        sb.write("agentstack.toml", "version = 1\n\n" + stdio("t", "--tools", "a"))
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.request("tools/list")
            b = text(g.call("tools_bindings", {}))
            check(endpoints(sb) == [], "no endpoint for an untrusted project")
            check("not trusted" in b and "codemode" not in b,
                  "tools_bindings on an untrusted project: the trust note, no bindings", b)
            g.close()
    with Sandbox() as sb:
        project(sb, "")
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.request("tools/list")
            check(endpoints(sb) == [], "no endpoint for a gateway that proxies nothing")
            b = text(g.call("tools_bindings", {}))
            check("nothing to bind" in b, "tools_bindings says there is nothing to bind", b)
            g.close()


def swap():
    with Sandbox() as sb:
        project(sb, stdio("t", "--tools", "get_a") +
                "[toolsets.work]\nservers = [\"t\"]\n\n[toolsets.empty]\nservers = []\n")
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.request("tools/list")
            check(endpoints(sb) == [], "fenced (no lease): nothing proxied, no endpoint")
            g.call("agentstack_lease_open", {"profile": "work"})
            eps = endpoints(sb)
            check(len(eps) == 1, "a lease that proxies a server opens the endpoint", eps)
            with open(eps[0]) as f:
                first = json.load(f)
            st, body = post(first["url"], first["token"], {"name": "t__get_a", "arguments": {}})
            check(st == 200, "the leased server answers through the endpoint", (st, body))
            g.call("agentstack_lease_close", {})
            check(endpoints(sb) == [], "16: endpoint.json deleted on swap (lease closed)")
            try:
                st, _ = post(first["url"], first["token"], {"name": "t__get_a", "arguments": {}})
            except OSError:
                st = "refused"
            check(st in (401, "refused"), "the old door no longer serves", st)
            g.call("agentstack_lease_open", {"profile": "work"})
            eps = endpoints(sb)
            with open(eps[0]) as f:
                second = json.load(f)
            check(second["token"] != first["token"], "a new surface gets a new token")
            st, _ = post(second["url"], first["token"], {"name": "t__get_a", "arguments": {}})
            check(st == 401, "the old token is refused by the new door", st)
            st, _ = post(second["url"], second["token"], {"name": "t__get_a", "arguments": {}})
            check(st == 200, "the new door serves with the new token", st)
            g.call("agentstack_lease_close", {})
            g.call("agentstack_lease_open", {"profile": "empty"})
            check(endpoints(sb) == [], "a lease that proxies nothing has no endpoint")
            g.close()
        check(not glob.glob(os.path.join(sb.ah, "gateway", "*")), "nothing left on exit")


def idle():
    with Sandbox() as sb:
        project(sb, stdio("t", "--tools", "get_a"))
        env = sb.env(AGENTSTACK_CODEMODE_IDLE_MS="50")
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            g.request("tools/list")
            with open(endpoints(sb)[0]) as f:
                cfg = json.load(f)
            s, path = connect(cfg["url"])
            s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\n")  # and then nothing
            got = s.recv(100)  # returns once the gateway drops it (test timeout: 60 s)
            s.close()
            check(got == b"", "a connection that stalls is dropped, not held forever", got)
            g.close()


def private_dir():
    # gateway/ loosened by hand is re-tightened; planted as a symlink the
    # endpoint does not open and nothing is written through the link.
    with Sandbox() as sb:
        project(sb, stdio("t", "--tools", "get_a"))
        gwd = os.path.join(sb.ah, "gateway")
        os.mkdir(gwd)
        os.chmod(gwd, 0o755)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.request("tools/list")
            mode = os.stat(gwd).st_mode & 0o777
            check(len(endpoints(sb)) == 1 and mode == 0o700, "gateway/ is re-tightened to 0700",
                  oct(mode))
            g.close()
        elsewhere = os.path.join(sb.root, "elsewhere")
        os.mkdir(elsewhere)
        os.rmdir(gwd)
        os.symlink(elsewhere, gwd)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.request("tools/list")
            g.close()
        check(f"{gwd}: is a symlink" in g.stderr() and os.listdir(elsewhere) == [],
              "gateway/ as a symlink: no endpoint, named on stderr, nothing written through it",
              (g.stderr(), os.listdir(elsewhere)))


round_trip()
private_dir()
no_endpoint_when_empty()
swap()
idle()
done()
