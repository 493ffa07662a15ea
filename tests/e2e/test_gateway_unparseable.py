"""Well-formed JSON that jansson cannot hold (\\u0000 in a string or key, an
unpaired surrogate escape, a number out of range, nesting past 2048 levels)
is a message all the same, never a line to drop silently.

Client side: a request carrying such a value gets a -32700 reply with its
id (null when the id itself is unreadable); a notification gets none; a
non-JSON line is still ignored (docs/gateway.md). Upstream side: an answer holding
such a value fails the pending list/call at once with the reason on stderr,
and the server stays usable. The call timeout is set to 10 minutes, so a
failure that waited for it would never arrive: the waits below (which only
stop a hung test) would run out first. No assertion is about speed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, grant, is_error, text  # noqa: E402

WAIT = 30  # seconds: only stops a hung test (the gateway would wait 600)
DEEP = 100000

UPSTREAM = r'''#!/usr/bin/env python3
import json, sys
badlist = sys.argv[1:2] == ["--badlist"]
deeplist = sys.argv[1:2] == ["--deeplist"]
def send(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
def deep(n):
    return '{"a":' * n + '{}' + '}' * n
def ask():
    """Sends the gateway a request it cannot read; returns its answer."""
    send('{"jsonrpc":"2.0","id":"q1","method":"ping","params":{"x":"\\u0000"}}')
    while True:
        got = json.loads(sys.stdin.readline())
        if got.get("id") == "q1":
            return got
for line in iter(sys.stdin.readline, ""):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    rid, meth = m.get("id"), m.get("method")
    if rid is None:
        continue
    i = json.dumps(rid)
    if meth == "server/discover":
        send('{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}' % i)
    elif meth == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "odd", "version": "1"}}}))
    elif meth == "tools/list":
        tools = [{"name": n, "inputSchema": {"type": "object"}}
                 for n in ("ok", "nul", "surr", "huge", "bigint", "deep", "nulkey", "ask")]
        if badlist:
            tools.append({"name": "\u0000nul", "inputSchema": {"type": "object"}})
        body = json.dumps({"tools": tools})
        if deeplist:
            body = body[:-2] + ',{"name":"d","inputSchema":%s}]}' % deep(%DEEP%)
        send('{"jsonrpc":"2.0","id":%s,"result":%s}' % (i, body))
    elif meth == "tools/call":
        n = m["params"]["name"]
        if n == "ask":
            send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [
                {"type": "text", "text": json.dumps(ask(), sort_keys=True)}]}}))
            continue
        res = {"ok": '"fine"', "nul": '"a\\u0000b"', "surr": '"\\ud800"', "huge": '1e400',
               "bigint": '123456789012345678901234567890', "deep": deep(%DEEP%),
               "nulkey": '{"\\u0000":1}'}[n]
        send('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}],'
             '"extra":%s}}' % (i, n, res))
    else:
        send('{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}' % i)
'''.replace("%DEEP%", str(DEEP))


def reply_ok(r, rid, needle):
    """A -32700 error answering rid whose message names the reason."""
    if not r or r.get("id") != rid or "error" not in r:
        return False
    e = r["error"]
    return e.get("code") == -32700 and needle in e.get("message", "")


def client_side():
    with Sandbox() as sb:
        with Gateway(sb) as g:
            check(g.initialize() is not None, "initialize answered")
            head = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":' \
                   '"tools_search","arguments":{"query":%s}}}'
            cases = [
                (11, '"a\\u0000b"', "string contains \\u0000"),
                ('"s-12"', '"\\ud800"', "unpaired surrogate"),
                (13, '1e400', "number out of range"),
                (14, '123456789012345678901234567890', "number out of range"),
                (15, '[' * 3000 + ']' * 3000, "nesting deeper than 2048 levels"),
                (16, '{"\\u0000":1}', "string contains \\u0000"),
            ]
            for rid, val, why in cases:
                g.send_raw(head % (rid, val))
            for rid, val, why in cases:
                want = json.loads(str(rid))
                r = g.wait(want, WAIT)
                check(reply_ok(r, want, why),
                      f"client: id {rid} with {val[:20]} gets -32700 naming '{why}'", r)
            # the reply to a well-formed call still works afterwards
            r = g.request("tools/call", {"name": "tools_search", "arguments": {"query": "x"}},
                          timeout=WAIT)
            check(r is not None and "result" in r, "client: the gateway keeps serving", r)
            # a notification gets no reply; a non-JSON line is still ignored
            g.send_raw('{"jsonrpc":"2.0","method":"notifications/progress",'
                       '"params":{"x":"\\u0000"}}')
            g.send_raw("this is not JSON")
            r = g.request("ping", timeout=WAIT)
            check(r is not None and "result" in r, "client: ping after them answered", r)
            check("null" not in g.replies,
                  "client: no reply to an unreadable notification or a non-JSON line",
                  g.replies.get("null"))
            # the id itself unreadable: the reply carries "id": null
            g.send_raw('{"jsonrpc":"2.0","id":"\\u0000","method":"ping"}')
            r = g.wait(None, WAIT)
            check(reply_ok(r, None, "string contains \\u0000"),
                  "client: an unreadable id → -32700 with id null", r)
            rc = g.close()
            check(rc == 0, "client: clean exit", rc)
            err = g.stderr()
            check("answered an unreadable message from the client: string contains \\u0000"
                  in err and "ignored an unreadable notification" in err,
                  "client: stderr says what was answered and what was ignored", err[-800:])


def first_message():
    with Sandbox() as sb:
        with Gateway(sb) as g:
            g.send_raw('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":1e400}}')
            rc = g.close()
            check(rc == 1 and "(got an unreadable message)" in g.stderr(),
                  "first message unreadable: refused like any invalid first message",
                  (rc, g.stderr()))


def stdio(name, *args):
    a = ", ".join(json.dumps(x) for x in ("./odd.py",) + args)
    return f'[servers.{name}]\ntype = "stdio"\ncommand = "python3"\nargs = [{a}]\n\n'


def upstream_side():
    with Sandbox() as sb:
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write("version = 1\n")
        sb.write("odd.py", UPSTREAM)
        sb.write("agentstack.toml", "version = 1\n\n" + stdio("up") +
                 stdio("nl", "--badlist") + stdio("dl", "--deeplist"))
        grant(sb)
        env = sb.env(AGENTSTACK_CALL_TIMEOUT_MS="600000")
        with Gateway(sb, "--auto-project", "--transparent", env=env) as g:
            g.initialize()
            r = g.request("tools/list", {}, timeout=WAIT)
            names = [t["name"] for t in r["result"]["tools"]] if r and "result" in r else None
            check(names is not None and "up__ok" in names and "up__nul" in names and
                  not any(n.startswith(("nl__", "dl__")) for n in names),
                  "upstream: an unreadable tools/list hides only that server", names)
            c = g.call("up__ok", {}, timeout=WAIT)
            check(c is not None and not is_error(c) and text(c) == "ok",
                  "upstream: a readable answer is forwarded", c)
            for tool in ("nul", "surr", "huge", "bigint", "deep", "nulkey"):
                c = g.call("up__" + tool, {}, timeout=WAIT)
                check(c is not None and is_error(c) and
                      text(c) == "Error: contacting up failed (upstream-error)",
                      f"upstream: an unreadable '{tool}' answer fails the call at once", c)
            c = g.call("up__ok", {}, timeout=WAIT)
            check(c is not None and text(c) == "ok", "upstream: the server is still usable", c)
            c = g.call("up__ask", {}, timeout=WAIT)
            want = {"jsonrpc": "2.0", "id": "q1", "error": {
                "code": -32700, "message": "Parse error: string contains \\u0000 (NUL)"}}
            check(c is not None and not is_error(c) and json.loads(text(c)) == want,
                  "upstream: its unreadable request gets -32700 with its id", c)
            s = g.call("tools_search", {"query": ""}, timeout=WAIT)
            check(s is not None and "still starting" not in text(s),
                  "upstream: search does not call the failed servers 'still starting'",
                  s and text(s)[-300:])
            rc = g.close()
            check(rc == 0, "upstream: clean exit", rc)
            err = g.stderr()
            for line in (
                    "upstream 'nl' could not list its tools: protocol (unreadable message: "
                    "string contains \\u0000 (NUL))",
                    "upstream 'dl' could not list its tools: protocol (unreadable message: "
                    "nesting deeper than 2048 levels)",
                    "upstream 'up': calling nul failed: protocol (unreadable message: string "
                    "contains \\u0000 (NUL))",
                    "upstream 'up': calling surr failed: protocol (unreadable message: string "
                    "contains an unpaired surrogate escape)",
                    "upstream 'up': calling huge failed: protocol (unreadable message: number "
                    "out of range)",
                    "upstream 'up': calling deep failed: protocol (unreadable message: "
                    "nesting deeper than 2048 levels)"):
                check(line in err, "upstream: stderr: " + line[:60], err[-1500:])
            check("in time" not in err, "upstream: no list waited for the deadline", err[-800:])


if __name__ == "__main__":
    client_side()
    first_message()
    upstream_side()
    done()
