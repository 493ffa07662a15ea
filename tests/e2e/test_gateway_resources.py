"""Upstream resources, prompts and completions through the gateway
(docs/gateway.md "Resources, prompts and completions", docs/policy.md
"Prompts and resources"): listing with namespaced names and mapped URIs,
pagination, reading, the URI round trip, policy refusals with their reason
and audit row, a project that tries to allow what the machine denies, hostile
URIs refused before any upstream I/O, progress and cancellation forwarded,
logging/setLevel forwarded. No assertion depends on timing."""
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, audit_rows, grant, modern_meta  # noqa: E402

# An upstream that offers resources, prompts, completions and logging, and
# writes what it received to --log. tests/e2e/test_gateway_notify.py drives
# its notifications through its tools: emit (sends the given frames, then
# answers), mutate (replaces its resources, prompts or tools), work (sends
# progress for its own token, a finished call's and a forged one, answers,
# then sends late progress), on_cancel (the given frames are sent when a
# notifications/cancelled arrives), echo. --no-subscribe declares no subscriptions.
RES_FAKE = r'''#!/usr/bin/env python3
import json, sys, threading
a = sys.argv[1:]
log = a[a.index("--log") + 1]
lock = threading.Lock()
def note(s):
    with open(log, "a") as f:
        f.write(s + "\n")
def send(o):
    with lock:
        sys.stdout.write(json.dumps(o) + "\n")
        sys.stdout.flush()
TOOLS = [{"name": n, "description": n + " it", "inputSchema": {"type": "object"}}
         for n in ("emit", "mutate", "work", "echo")]
PROMPTS = [{"name": "review", "description": "Review a file",
            "arguments": [{"name": "file", "required": True}]},
           {"name": "admin_reset", "description": "dangerous"}]
LAST = []
AT_CANCEL = []
PAGES = {None: ([{"uri": "file:///docs/a.txt", "name": "a", "mimeType": "text/plain"},
                 {"uri": "secret://key", "name": "key"}], "p2"),
         "p2": ([{"uri": "file:///docs/b%20c.txt", "name": "b\x1b[31m", "description": "x\u202ey"}],
                None)}
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    rid, meth, p = m.get("id"), m.get("method"), m.get("params") or {}
    if meth == "notifications/cancelled":
        note("cancelled %s" % json.dumps(p.get("requestId")))
        for fr in AT_CANCEL:
            send(dict({"jsonrpc": "2.0"}, **fr))
        continue
    if rid is None:
        continue
    def ok(r):
        send({"jsonrpc": "2.0", "id": rid, "result": r})
    if meth == "server/discover":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})
    elif meth == "initialize":
        res_cap = {"listChanged": True}
        if "--no-subscribe" not in a:
            res_cap["subscribe"] = True
        ok({"protocolVersion": "2025-11-25", "serverInfo": {"name": "res", "version": "1"},
            "capabilities": {"tools": {"listChanged": True}, "resources": res_cap,
                             "prompts": {"listChanged": True}, "completions": {},
                             "logging": {}}})
    elif meth == "tools/list":
        note("tools")
        ok({"tools": TOOLS})
    elif meth in ("resources/subscribe", "resources/unsubscribe"):
        note("%s %s" % (meth.split("/")[1], p.get("uri")))
        ok({})
    elif meth == "tools/call":
        args = p.get("arguments") or {}
        name = p.get("name")
        tok = (p.get("_meta") or {}).get("progressToken")
        note("call %s %s" % (name, json.dumps(tok)))
        if name == "emit":
            for fr in args.get("frames", []):
                send(dict({"jsonrpc": "2.0"}, **fr))
        elif name == "on_cancel":
            AT_CANCEL[:] = args.get("frames", [])
        elif name == "mutate":
            if "resources" in args:
                PAGES[None] = (args["resources"], None)
            if "prompts" in args:
                PROMPTS[:] = args["prompts"]
            if "tools" in args:
                TOOLS[:] = args["tools"]
        elif name == "work":
            for t in LAST + ["forged-token"]:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": t, "progress": 7}})
            if tok is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": tok, "progress": 1, "total": 2,
                                 "message": "half\x1b[2J way"}})
        ok({"content": [{"type": "text", "text": "%s: ok" % name}]})
        if name == "work" and tok is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": tok, "progress": 2, "total": 2}})
            LAST[:] = [tok]
    elif meth == "resources/list":
        note("list")
        if "--hang-list" in a:
            continue
        items, nxt = PAGES.get(p.get("cursor"), ([], None))
        r = {"resources": items}
        if nxt:
            r["nextCursor"] = nxt
        ok(r)
    elif meth == "resources/templates/list":
        ok({"resourceTemplates": [{"uriTemplate": "file:///docs/{name}", "name": "doc"}]})
    elif meth == "resources/read":
        uri = p.get("uri")
        note("read %s %s" % (json.dumps(rid), uri))
        if uri == "hang://x":
            continue
        tok = (p.get("_meta") or {}).get("progressToken")
        if tok is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": "forged", "progress": 9}})
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": tok, "progress": 1, "total": 2}})
        if uri == "missing://x":
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32002, "message": "Resource not found"}})
            continue
        ok({"contents": [{"uri": uri, "mimeType": "text/plain", "text": "content of " + uri}]})
    elif meth == "prompts/list":
        note("prompts")
        ok({"prompts": PROMPTS})
    elif meth == "prompts/get":
        note("prompt %s" % p.get("name"))
        ok({"description": "Review", "messages": [{"role": "user", "content": {
            "type": "text", "text": "review " + (p.get("arguments") or {}).get("file", "")}}]})
    elif meth == "completion/complete":
        ok({"completion": {"values": ["a.txt", "b.txt"], "hasMore": False}})
    elif meth == "logging/setLevel":
        note("level %s" % p.get("level"))
        ok({})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})
'''

MACHINE = 'version = 1\n\n[policy.tools]\n"*" = ["!resource:secret://*", "!prompt:admin_*"]\n'
# The attack: the repository tries to allow everything the machine denies.
PROJECT = ('version = 1\n\n[policy.tools]\nres = ["resource:*", "prompt:*"]\n\n'
           '[servers.res]\ntype = "stdio"\ncommand = "python3"\n'
           'args = ["./res.py", "--log", "LOG"]\n')


def gw_uri(server, uri):
    return "agentstack://%s/%s" % (server, urllib.parse.quote(uri, safe="-._~"))


def wait_log(path, pred):
    """Bounded wait for the fake to have logged a line (not a timing check)."""
    for _ in range(600):
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
            hit = [x for x in lines if pred(x)]
            if hit:
                return hit
        time.sleep(0.1)
    return []


def log_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def err_of(r):
    return (r or {}).get("error") or {}


def main():
    with Sandbox() as sb:
        log = os.path.join(sb.root, "res.log")
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write(MACHINE)
        sb.write("res.py", RES_FAKE)
        sb.write("agentstack.toml", PROJECT.replace("LOG", log))
        grant(sb)
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            init = g.initialize()
            caps = init["result"]["capabilities"]
            check(all(k in caps for k in ("resources", "prompts", "completions")),
                  "initialize advertises resources, prompts and completions", caps)

            # Listing: namespaced names, mapped URIs, denied ones hidden, pages.
            r = g.request("resources/list", {})["result"]
            uris = [x["uri"] for x in r["resources"]]
            a = gw_uri("res", "file:///docs/a.txt")
            check(uris == [a], "resources/list maps the URI and hides a machine-denied one", r)
            check(r["resources"][0]["name"] == "res__a", "names are server__name", r)
            check("nextCursor" in r, "an upstream's further page shows as our nextCursor", r)
            r2 = g.request("resources/list", {"cursor": r["nextCursor"]})["result"]
            b = gw_uri("res", "file:///docs/b%20c.txt")
            check([x["uri"] for x in r2["resources"]] == [b] and "nextCursor" not in r2,
                  "the cursor reaches the upstream's second page, and the last has none", r2)
            check("\x1b" not in json.dumps(r2) and "\u202e" not in r2["resources"][0]
                  .get("description", ""), "listed text passes the hostile-text filter", r2)
            bad = g.request("resources/list", {"cursor": "nope=p2"})
            check(err_of(bad).get("code") == -32602, "a cursor naming no served server: -32602",
                  bad)
            t = g.request("resources/templates/list", {})["result"]
            check(t["resourceTemplates"][0]["uriTemplate"] ==
                  "agentstack://res/file%3A%2F%2F%2Fdocs%2F{name}",
                  "a template keeps its expression, the rest encoded", t)

            # Reading: the round trip.
            rd = g.request("resources/read", {"uri": a})
            c = rd["result"]["contents"][0]
            check(c["uri"] == a and c["text"] == "content of file:///docs/a.txt",
                  "resources/read goes upstream with the original URI and maps it back", rd)
            rd = g.request("resources/read", {"uri": b})
            check(rd["result"]["contents"][0]["text"] == "content of file:///docs/b%20c.txt",
                  "a URI holding a percent-escape round-trips (encoded once more, decoded once)", rd)
            rows = [x for x in audit_rows(sb) if x.get("tool") == "resource"]
            check(len(rows) == 2 and all(x["outcome"] == "ok" and len(x["args_digest"]) == 12
                                         and len(x.get("result_digest", "")) == 12
                                         for x in rows),
                  "each read is audited with argument and content digests", rows)
            calls = open(os.path.join(sb.ah, "audit", "calls.jsonl")).read()
            check("docs/a.txt" not in calls and "content of" not in calls,
                  "the audit holds digests, never the URI or the contents", calls[-600:])
            nf = g.request("resources/read", {"uri": gw_uri("res", "missing://x")})
            check(err_of(nf).get("code") == -32002 and "Resource not found" not in
                  err_of(nf).get("message", ""),
                  "an upstream's not-found keeps its code, not its text", nf)

            # The stateless era reaches the same requests.
            mr = g.request("resources/read", {"uri": a, "_meta": modern_meta()})
            check(mr and mr.get("result", {}).get("resultType") == "complete" and
                  mr["result"]["contents"][0]["uri"] == a, "a stateless read is served", mr)
            ml = g.request("prompts/list", {"_meta": modern_meta()})
            check(ml and [p["name"] for p in ml["result"]["prompts"]] == ["res__review"],
                  "a stateless prompts/list is served", ml)

            # A machine-denied resource: refused with the reason, audited.
            before = len(log_lines(log))
            d = g.request("resources/read", {"uri": gw_uri("res", "secret://key")})
            msg = err_of(d).get("message", "")
            check(err_of(d).get("code") == -32602 and "denied by [policy.tools] rule" in msg and
                  "!resource:secret://*" in msg, "a denied resource is refused with the rule", d)
            row = audit_rows(sb)[-1]
            check(row["tool"] == "resource" and row["outcome"] == "denied" and
                  row.get("layer") == "machine" and row.get("rule") == "!resource:secret://*",
                  "…and audited as a machine denial (the project's allow did not widen it)", row)
            check(len(log_lines(log)) == before, "…and never reached the upstream")

            # Prompts: listing, get, the machine-denied one.
            pl = g.request("prompts/list", {})["result"]["prompts"]
            check([p["name"] for p in pl] == ["res__review"],
                  "prompts/list namespaces and hides a machine-denied prompt", pl)
            pg = g.request("prompts/get", {"name": "res__review", "arguments": {"file": "x.c"}})
            check(pg["result"]["messages"][0]["content"]["text"] == "review x.c",
                  "prompts/get reaches the upstream's prompt", pg)
            pd = g.request("prompts/get", {"name": "res__admin_reset"})
            check(err_of(pd).get("code") == -32602 and
                  "denied by [policy.tools] rule" in err_of(pd).get("message", ""),
                  "a machine-denied prompt is refused although the project allows prompt:*", pd)
            row = audit_rows(sb)[-1]
            check(row["tool"] == "prompt:admin_reset" and row["outcome"] == "denied" and
                  row.get("layer") == "machine", "…and audited", row)
            check(not any(x == "prompt admin_reset" for x in log_lines(log)),
                  "…and never reached the upstream")
            ok = [x for x in audit_rows(sb) if x.get("tool") == "prompt:review"]
            check(len(ok) == 1 and ok[0]["outcome"] == "ok" and ok[0].get("result_digest"),
                  "prompts/get is audited with digests", ok)

            # Completion.
            cc = g.request("completion/complete", {"ref": {"type": "ref/prompt",
                                                           "name": "res__review"},
                                                   "argument": {"name": "file", "value": "a"}})
            check(cc["result"]["completion"]["values"] == ["a.txt", "b.txt"],
                  "completion/complete reaches the upstream", cc)

            cd = g.request("completion/complete", {"ref": {"type": "ref/prompt",
                                                           "name": "res__admin_reset"},
                                                   "argument": {"name": "x", "value": ""}})
            check(err_of(cd).get("code") == -32602 and
                  "denied by [policy.tools] rule" in err_of(cd).get("message", ""),
                  "completing a machine-denied prompt is refused", cd)
            row = audit_rows(sb)[-1]
            check(row["tool"] == "completion" and row["outcome"] == "denied",
                  "…and audited as a completion", row)
            ct = g.request("completion/complete", {
                "ref": {"type": "ref/resource", "uri": "agentstack://res/file%3a"},
                "argument": {"name": "x", "value": ""}})
            check(err_of(ct).get("code") == -32602, "completing a hostile template URI: -32602",
                  ct)

            # Hostile URIs: refused before any upstream I/O.
            before = len(log_lines(log))
            for h in ("agentstack://other/file%3A%2F%2F%2Fx", "agentstack://other/..",
                      "agentstack://res/..%2", "agentstack://res/file%3a%2F%2Fx",
                      "agentstack://res/%G1", "agentstack://res/file:///x",
                      "agentstack://res/%61", "agentstack://res/", "agentstack://res",
                      "agentstack:///x", "file:///etc/passwd", "agentstack://res/a%00b",
                      "agentstack://re$s/a"):
                hr = g.request("resources/read", {"uri": h})
                check(err_of(hr).get("code") == -32602 and "result" not in hr,
                      "hostile URI refused: " + h, hr)
            check(len(log_lines(log)) == before, "no hostile URI reached the upstream",
                  log_lines(log)[before:])

            # Progress: only the token of a request the upstream holds.
            pr = g.request("resources/read", {"uri": a, "_meta": {"progressToken": "tok-1"}})
            check("result" in pr, "a read with a progress token answers", pr)
            prog = [n for n in g.notes if n.get("method") == "notifications/progress"]
            check(len(prog) == 1 and prog[0]["params"]["progressToken"] == "tok-1" and
                  prog[0]["params"]["progress"] == 1,
                  "progress reaches the client under its own token; a forged token does not",
                  prog)

            # logging/setLevel goes to every upstream that declared logging.
            lv = g.request("logging/setLevel", {"level": "debug"})
            check(lv and lv.get("result") == {}, "logging/setLevel answers {}", lv)
            check(wait_log(log, lambda x: x == "level debug"), "…and reaches the upstream")

            # Cancellation reaches the upstream holding the request.
            g.start("resources/read", {"uri": gw_uri("res", "hang://x")}, rid="c1")
            got = wait_log(log, lambda x: x.startswith("read ") and x.endswith(" hang://x"))
            check(got, "the hanging read reached the upstream")
            up_id = got[0].split()[1] if got else "?"
            g.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": "c1", "reason": "user"}})
            check(wait_log(log, lambda x: x == "cancelled " + up_id),
                  "notifications/cancelled reaches the upstream with its own id", log_lines(log))
            check(g.request("ping") is not None and '"c1"' not in g.replies,
                  "a cancelled request gets no reply")
            rows = [x for x in audit_rows(sb) if x.get("detail") == "cancelled"]
            check(len(rows) == 1 and rows[0]["tool"] == "resource",
                  "the cancelled read is audited", rows)
            check(g.close() == 0, "EOF exits 0", g.stderr()[-800:])
    untrusted()
    regated()
    hung_listing()
    fenced()
    done()


def fenced():
    """The toolset fence: before a lease selects the server, its resources
    and prompts are neither listed nor served (a fence row), after it they are."""
    with Sandbox() as sb:
        log = os.path.join(sb.root, "res.log")
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write(MACHINE)
        sb.write("res.py", RES_FAKE)
        sb.write("agentstack.toml", PROJECT.replace("LOG", log) +
                 '\n[toolsets.docs]\nservers = ["res"]\n\n[toolsets.none]\nservers = []\n')
        grant(sb)
        a = gw_uri("res", "file:///docs/a.txt")
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            r = g.request("resources/list", {})
            check(r and r.get("result") == {"resources": []}, "fenced: nothing listed", r)
            r = g.request("resources/read", {"uri": a})
            check(err_of(r).get("code") == -32602 and
                  "fences its servers behind toolsets" in err_of(r).get("message", ""),
                  "fenced: a read is refused by the fence", r)
            r = g.request("prompts/get", {"name": "res__review"})
            check(err_of(r).get("code") == -32602, "fenced: a prompt is refused", r)
            rows = [x for x in audit_rows(sb) if x.get("tool") == "fence"]
            check(len(rows) == 2 and all(x["outcome"] == "denied" for x in rows),
                  "fenced: each refusal wrote a fence row", rows)
            check(not os.path.exists(log), "fenced: the upstream never started")
            g.call("agentstack_lease_open", {"profile": "docs"})
            r = g.request("resources/read", {"uri": a})
            check(r and "result" in r, "fenced: after lease_open docs the read is served", r)
            check(g.close() == 0, "fenced: EOF exits 0")


def hung_listing():
    """EOF while a listing waits for an upstream that never answers: the
    gateway cancels it, frees it and exits 0."""
    with Sandbox() as sb:
        log = os.path.join(sb.root, "res.log")
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write(MACHINE)
        sb.write("res.py", RES_FAKE)
        sb.write("agentstack.toml", PROJECT.replace("LOG", log).replace(
            '"--log"', '"--hang-list", "--log"'))
        grant(sb)
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            g.start("resources/list", {}, rid="hl")
            check(wait_log(log, lambda x: x == "list"), "hung: the listing reached the upstream")
            rc = g.close(timeout=60)
            check(rc == 0, "hung: EOF with a listing in flight exits 0", g.stderr()[-1500:])


def regated():
    """Trust revoked on an open connection: the next read is refused with a
    trust row, like a tool call."""
    with Sandbox() as sb:
        log = os.path.join(sb.root, "res.log")
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write(MACHINE)
        sb.write("res.py", RES_FAKE)
        sb.write("agentstack.toml", PROJECT.replace("LOG", log))
        grant(sb)
        a = gw_uri("res", "file:///docs/a.txt")
        with Gateway(sb, "--auto-project") as g:
            init = g.initialize()
            check("resources" in init["result"]["capabilities"],
                  "trusted auto mode, no roots: resources are advertised", init)
            r = g.request("resources/read", {"uri": a})
            check(r and "result" in r, "trusted auto mode: the read is served", r)
            before = len(audit_rows(sb))
            rv = sb.run("trust", ".", "--revoke")
            check(rv.returncode == 0, "revoke out of band", rv.stderr)
            reads = len([x for x in log_lines(log) if x.startswith("read ")])
            r = g.request("resources/read", {"uri": a})
            msg = err_of(r).get("message", "")
            check(err_of(r).get("code") == -32602 and "already-open connection" in msg,
                  "revoked: the next read is blocked on the open connection", r)
            rows = audit_rows(sb)[before:]
            check(len(rows) == 1 and rows[0]["tool"] == "trust" and
                  rows[0].get("detail") == "revoked", "revoked: one trust row", rows)
            check(len([x for x in log_lines(log) if x.startswith("read ")]) == reads,
                  "revoked: the read never reached the upstream")
            check(g.close() == 0, "revoked: EOF exits 0")


def untrusted():
    """The trust gate: a project never trusted serves no resource or prompt,
    and nothing is spawned to find out."""
    with Sandbox() as sb:
        log = os.path.join(sb.root, "res.log")
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write(MACHINE)
        sb.write("res.py", RES_FAKE)
        sb.write("agentstack.toml", PROJECT.replace("LOG", log))
        with Gateway(sb, "--auto-project") as g:
            init = g.initialize()
            caps = init["result"]["capabilities"]
            check("resources" not in caps and "prompts" not in caps,
                  "untrusted: nothing advertised", caps)
            r = g.request("resources/list", {})
            check(r and r.get("result") == {"resources": []}, "untrusted: no resources", r)
            r = g.request("prompts/list", {})
            check(r and r.get("result") == {"prompts": []}, "untrusted: no prompts", r)
            r = g.request("resources/read", {"uri": gw_uri("res", "file:///docs/a.txt")})
            check(err_of(r).get("code") == -32602, "untrusted: a read is refused", r)
            r = g.request("prompts/get", {"name": "res__review"})
            check(err_of(r).get("code") == -32602, "untrusted: a prompt is refused", r)
            check(g.close() == 0, "untrusted: EOF exits 0")
        check(not os.path.exists(log), "untrusted: the upstream never started")


if __name__ == "__main__":
    main()
