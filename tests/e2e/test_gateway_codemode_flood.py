"""Code mode under a flood, written as the attack: 300 connections to the
loopback endpoint that send only a request line and then nothing would fill
its 256 slots without a token; a call with the valid token must still be
answered. Connections that have not shown a token evict their own oldest,
never an authenticated one, and each has a short head deadline. The flood's
connections stay open throughout; no assertion depends on timing."""
import glob
import json
import os
import socket
import sys
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import FAKE, Gateway, grant  # noqa: E402


def project(sb, servers):
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml", "version = 1\n\n" + servers)
    grant(sb)


def stdio(name, *args):
    a = ", ".join(json.dumps(x) for x in ("./fake.py",) + args)
    return f'[servers.{name}]\ntype = "stdio"\ncommand = "python3"\nargs = [{a}]\n'


def endpoints(sb):
    return glob.glob(os.path.join(sb.ah, "gateway", "*", "endpoint.json"))


def connect(url):
    u = urlparse(url)
    return socket.create_connection((u.hostname, u.port), timeout=60), u.path


def post(url, token, obj):
    """(status, body); (0, why) when the endpoint closed on it unanswered."""
    s, path = connect(url)
    body = json.dumps(obj).encode()
    data = b""
    try:
        s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nX-Agentstack-Token: " +
                  token.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        return 0, str(e)
    finally:
        s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    try:
        return status, json.loads(rest)
    except ValueError:
        return status, rest

FLOOD = 300


def flood():
    with Sandbox() as sb:
        project(sb, stdio("t", "--tools", "get_a"))
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            g.request("tools/list")
            with open(endpoints(sb)[0]) as f:
                cfg = json.load(f)
            held = []
            for _ in range(FLOOD):
                s, path = connect(cfg["url"])
                s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\n")  # and then nothing
                held.append(s)
            st, body = post(cfg["url"], cfg["token"], {"name": "t__get_a", "arguments": {}})
            check(st == 200 and "get_a: ok" in json.dumps(body),
                  f"a valid-token call is answered while {FLOOD} tokenless connections hang",
                  (st, body))
            # and again: the flood cannot take the slot back from a second caller
            st, body = post(cfg["url"], cfg["token"], {"name": "t__get_a", "arguments": {}})
            check(st == 200, "a second valid call is answered too", (st, body))
            # an authenticated call in flight is never the one evicted
            s, path = connect(cfg["url"])
            req = json.dumps({"name": "t__get_a", "arguments": {}}).encode()
            s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nX-Agentstack-Token: " +
                      cfg["token"].encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(req))
            for _ in range(64):  # more tokenless newcomers while its body is pending
                t, p2 = connect(cfg["url"])
                t.sendall(b"POST " + p2.encode() + b" HTTP/1.1\r\n")
                held.append(t)
            s.sendall(req)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            check(data.startswith(b"HTTP/1.1 200") and b"get_a: ok" in data,
                  "an authenticated connection waiting for its body survives the flood",
                  data[:200])
            # the oldest tokenless connections were dropped, not held: some of
            # the flood's sockets read EOF (or a reset) without an answer
            dropped = 0
            for s in held[:32]:
                s.setblocking(False)
                try:
                    dropped += s.recv(1) == b""
                except BlockingIOError:
                    pass
                except OSError:
                    dropped += 1
            check(dropped > 0, "tokenless connections are evicted, oldest first", dropped)
            for s in held:
                s.close()
            g.close()


def main():
    flood()
    done()


if __name__ == "__main__":
    main()
