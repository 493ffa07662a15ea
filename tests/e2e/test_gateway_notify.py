"""Upstream notifications through the gateway (docs/gateway.md "Notifications
from upstreams"): resources/subscribe and unsubscribe routed, policy-checked
and audited, resources/updated forwarded only for what this client
subscribed to and may see; list_changed forwarded only when the filtered view
changed; log messages levelled, prefixed, masked and rate-bounded; tools/call
progress under the client's token, only while the call is in flight. Each
claim has its attack: an update for a URI never subscribed or denied, hidden
list changes, a log flood, progress for another call's token.

The fake upstream is test_gateway_resources.py's (its tools make it emit the
frames a test names). No assertion depends on timing: the one bound that
involves time (the log rate) is checked against the elapsed time measured
around the flood, which only overstates what the gateway saw."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, audit_rows, grant, modern_meta, text  # noqa: E402
from test_gateway_resources import (MACHINE, RES_FAKE, err_of, gw_uri,  # noqa: E402
                                    log_lines, wait_log)

SECRET = "SUPERSECRETVALUE123"
PROJECT = ('version = 1\n\n[policy.tools]\n'
           'res = ["resource:*", "prompt:*", "emit", "mutate", "work", "echo", "on_cancel"]\n\n'
           '[servers.res]\ntype = "stdio"\ncommand = "python3"\n'
           'args = ["./res.py", "--log", "LOG", "--token=${SECRETKEY}"EXTRA]\n')
BURST, RATE = 50, 10  # notify.c's GW_LOG_BURST and GW_LOG_RATE


def note(method, params=None):
    f = {"method": method}
    if params is not None:
        f["params"] = params
    return f


def notes_of(g, method):
    return [n for n in g.notes if n.get("method") == method]


def setup(sb, extra=""):
    log = os.path.join(sb.root, "res.log")
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    sb.write("res.py", RES_FAKE)
    sb.write("agentstack.toml", PROJECT.replace("LOG", log).replace("EXTRA", extra))
    grant(sb)
    return log


def emit(g, *frames):
    r = g.call("res__emit", {"frames": list(frames)})
    check(text(r) == "emit: ok", "the fake emitted its frames", r)


def listings(log, what):
    return len([x for x in log_lines(log) if x == what])


def relisted(g, log, what, before):
    """The gateway lists `what` again after a list_changed: wait for the
    fake to have logged that listing, then make one more call to the same
    upstream. The gateway asked for the listing before the call, so the
    fake answers it first, and the gateway has compared the views by the
    time the call returns."""
    for _ in range(600):
        if listings(log, what) > before:
            break
        time.sleep(0.1)
    check(listings(log, what) > before, "the gateway listed %s again" % what)
    check(text(g.call("res__echo", {})) == "echo: ok", "a call after the listing answers")


def subscriptions(g, sb, log):
    a = gw_uri("res", "file:///docs/a.txt")
    b = gw_uri("res", "file:///docs/b%20c.txt")
    r = g.request("resources/subscribe", {"uri": a})
    check(r and r.get("result") == {}, "resources/subscribe answers {}", r)
    check(wait_log(log, lambda x: x == "subscribe file:///docs/a.txt"),
          "…and reaches the upstream with its own URI")
    row = audit_rows(sb)[-1]
    check(row["tool"] == "resource:subscribe" and row["outcome"] == "ok" and
          len(row["args_digest"]) == 12, "…and is audited", row)
    calls = open(os.path.join(sb.ah, "audit", "calls.jsonl")).read()
    check("docs/a.txt" not in calls, "the audit holds the URI's digest, never the URI")

    # The attack: a resource the policy denies cannot be subscribed.
    before = len(log_lines(log))
    d = g.request("resources/subscribe", {"uri": gw_uri("res", "secret://key")})
    check(err_of(d).get("code") == -32602 and
          "denied by [policy.tools] rule" in err_of(d).get("message", ""),
          "subscribing to a denied resource is refused with the rule", d)
    row = audit_rows(sb)[-1]
    check(row["tool"] == "resource:subscribe" and row["outcome"] == "denied" and
          row.get("layer") == "machine", "…and audited as a machine denial", row)
    for h in ("agentstack://other/x", "agentstack://res/file:///x", "file:///docs/a.txt"):
        hr = g.request("resources/subscribe", {"uri": h})
        check(err_of(hr).get("code") == -32602, "a hostile URI cannot be subscribed: " + h, hr)
    check(len(log_lines(log)) == before, "…none of them reached the upstream",
          log_lines(log)[before:])

    # The upstream sends updates: for the subscribed URI, one never
    # subscribed, the denied one, and a malformed one.
    emit(g, note("notifications/resources/updated", {"uri": "file:///docs/a.txt"}),
         note("notifications/resources/updated", {"uri": "file:///docs/b%20c.txt"}),
         note("notifications/resources/updated", {"uri": "secret://key"}),
         note("notifications/resources/updated", {"uri": 7}),
         note("notifications/resources/updated"))
    up = notes_of(g, "notifications/resources/updated")
    check([n["params"] for n in up] == [{"uri": a}],
          "only the subscribed URI's update reaches the client, mapped to agentstack://; one "
          "never subscribed, a denied one and malformed ones are dropped", up)

    r = g.request("resources/subscribe", {"uri": b})
    check(r and r.get("result") == {}, "a second subscription", r)
    u = g.request("resources/unsubscribe", {"uri": a})
    check(u and u.get("result") == {}, "resources/unsubscribe answers {}", u)
    check(wait_log(log, lambda x: x == "unsubscribe file:///docs/a.txt"),
          "…and reaches the upstream")
    check(audit_rows(sb)[-1]["tool"] == "resource:unsubscribe", "…and is audited")
    emit(g, note("notifications/resources/updated", {"uri": "file:///docs/a.txt"}),
         note("notifications/resources/updated", {"uri": "file:///docs/b%20c.txt"}))
    up = notes_of(g, "notifications/resources/updated")
    check([n["params"]["uri"] for n in up] == [a, b],
          "after unsubscribe the URI's updates stop; the other subscription still gets its own",
          up)

    # A bounded number of subscriptions per connection.
    n_ok = 0
    for i in range(300):
        r = g.request("resources/subscribe", {"uri": gw_uri("res", "file:///n/%d" % i)})
        if r and r.get("result") == {}:
            n_ok += 1
        else:
            check(err_of(r).get("code") == -32602 and "unsubscribe" in
                  err_of(r).get("message", ""), "past the cap a subscribe is refused", r)
            break
    check(n_ok == 255, "a connection holds at most 256 subscriptions", n_ok)


def progress(g, log):
    r = g.request("tools/call", {"name": "res__work", "arguments": {},
                                 "_meta": {"progressToken": "tp-1"}})
    check(r and text(r.get("result")) == "work: ok", "a tools/call with a progress token", r)
    sent = [x for x in log_lines(log) if x.startswith("call work ")]
    check(sent and sent[-1] != 'call work "tp-1"' and "agentstack-progress-" in sent[-1],
          "the upstream gets the gateway's token, not the client's", sent)
    check(text(g.call("res__echo", {})) == "echo: ok", "a later call answers")
    prog = notes_of(g, "notifications/progress")
    check([(n["params"]["progressToken"], n["params"]["progress"]) for n in prog] ==
          [("tp-1", 1)], "progress reaches the client under its own token; a forged token and "
          "progress after the answer are dropped", prog)
    check(prog and prog[0]["params"].get("total") == 2 and "\x1b" not in
          prog[0]["params"].get("message", "x\x1b"), "…with its total, the message cleaned", prog)

    # The attack: the upstream replays the token of a call that is over.
    r = g.request("tools/call", {"name": "res__work", "arguments": {},
                                 "_meta": {"progressToken": 42}})
    check(r and "result" in r, "a second call with an integer token", r)
    check(text(g.call("res__echo", {})) == "echo: ok", "a later call answers")
    prog = notes_of(g, "notifications/progress")
    check([(n["params"]["progressToken"], n["params"]["progress"]) for n in prog] ==
          [("tp-1", 1), (42, 1)],
          "progress for the earlier call's token, replayed during another, is dropped", prog)
    r = g.request("tools/call", {"name": "res__work", "arguments": {}})
    check(r and "result" in r, "a call without a token", r)
    check(len(notes_of(g, "notifications/progress")) == 2,
          "…gets no progress, whatever the upstream sends")


def logging(g, log):
    check(g.request("logging/setLevel", {"level": "warning"}).get("result") == {},
          "logging/setLevel answers {}")
    emit(g, note("notifications/message", {"level": "info", "data": "below the level"}),
         note("notifications/message", {"level": "error", "logger": "db\x1b[31m",
                                        "data": {"msg": "token " + SECRET + " \x1b]0;x\x07 ok",
                                                 SECRET: [1, "sec\x1b[0mretless"]}}),
         note("notifications/message", {"level": "shout", "data": "no such level"}))
    msgs = notes_of(g, "notifications/message")
    check(len(msgs) == 1 and msgs[0]["params"]["level"] == "error",
          "a message below the client's level, or at no RFC 5424 level, is dropped", msgs)
    p = msgs[0]["params"] if msgs else {}
    dumped = json.dumps(p, ensure_ascii=False)
    check(p.get("logger") == "res/db", "the logger is prefixed with the server's name", p)
    check(SECRET not in dumped and "${SECRETKEY}" in dumped,
          "a resolved secret is masked in the data, keys included", p)
    check("\x1b" not in dumped and "\x07" not in dumped, "escape sequences are cleaned", p)

    big = "x" * 40000
    emit(g, note("notifications/message", {"level": "emergency", "data": big}))
    last = notes_of(g, "notifications/message")[-1]["params"]
    check(isinstance(last.get("data"), str) and last["data"].endswith("bytes]") and
          len(last["data"]) < 20000, "an oversized message's data is cut, saying so",
          len(json.dumps(last)))

    # The attack: a flood.
    t0 = time.monotonic()
    emit(g, *[note("notifications/message", {"level": "error", "data": "flood %d" % i})
              for i in range(2000)])
    elapsed = time.monotonic() - t0
    got = len([m for m in notes_of(g, "notifications/message")
               if str(m["params"].get("data", "")).startswith("flood ")])
    check(1 <= got <= BURST + RATE * (elapsed + 1),
          "a flood of 2000 log messages is bounded (%d forwarded in %.1f s)" % (got, elapsed))


def list_changes(g, log):
    a = {"uri": "file:///docs/a.txt", "name": "a", "mimeType": "text/plain"}
    key = {"uri": "secret://key", "name": "key"}
    g.call("res__mutate", {"resources": [a, key]})  # one page
    r = g.request("resources/list", {})
    check(r and [x["uri"] for x in r["result"]["resources"]] ==
          [gw_uri("res", "file:///docs/a.txt")], "the client lists resources (its view)", r)
    r = g.request("prompts/list", {})
    check(r and [p["name"] for p in r["result"]["prompts"]] == ["res__review"],
          "…and prompts", r)
    # Compact mode: the proxied tools are what tools_search finds.
    found = text(g.call("tools_search", {"query": "echo"}))
    check("res__echo" in found, "…and tools", found)
    base = {k: len(notes_of(g, "notifications/%s/list_changed" % k))
            for k in ("resources", "prompts", "tools")}

    def changed(kind):
        return len(notes_of(g, "notifications/%s/list_changed" % kind)) - base[kind]

    # The attack: a burst of list_changed without a change.
    before = listings(log, "list")
    for kind, what in (("resources", "list"), ("prompts", "prompts"), ("tools", "tools")):
        n = listings(log, what)
        emit(g, *[note("notifications/%s/list_changed" % kind)] * 20)
        relisted(g, log, what, n)
        check(changed(kind) == 0, "%s: 20 list_changed without a change forward none" % kind,
              notes_of(g, "notifications/%s/list_changed" % kind))
    check(listings(log, "list") - before <= 2,
          "a burst of 20 list_changed costs at most 2 listings (one in flight, one queued)",
          listings(log, "list") - before)

    hidden = {"resources": {"resources": [a, key, {"uri": "secret://other", "name": "o"}]},
              "prompts": {"prompts": [{"name": "review", "description": "Review a file",
                                       "arguments": [{"name": "file", "required": True}]},
                                      {"name": "admin_reset", "description": "dangerous"},
                                      {"name": "admin_wipe"}]},
              "tools": {"tools": [{"name": n, "description": n + " it",
                                   "inputSchema": {"type": "object"}}
                                  for n in ("emit", "mutate", "work", "echo", "drop_db")]}}
    shown = {"resources": {"resources": [a, {"uri": "file:///docs/new.txt", "name": "new"}]},
             "prompts": {"prompts": [{"name": "review", "description": "Review a file",
                                      "arguments": [{"name": "file", "required": True}]},
                                     {"name": "summarize"}]},
             "tools": {"tools": [{"name": n, "description": n + " changed",
                                  "inputSchema": {"type": "object"}}
                                 for n in ("emit", "mutate", "work", "echo")]}}
    for kind, what in (("resources", "list"), ("prompts", "prompts"), ("tools", "tools")):
        g.call("res__mutate", hidden[kind])
        n = listings(log, what)
        emit(g, note("notifications/%s/list_changed" % kind))
        relisted(g, log, what, n)
        check(changed(kind) == 0, "%s: a change the policy hides forwards nothing" % kind,
              notes_of(g, "notifications/%s/list_changed" % kind))
        g.call("res__mutate", shown[kind])
        emit(g, note("notifications/%s/list_changed" % kind))
        check(g.wait_for(lambda: changed(kind) >= 1), "%s: a visible change forwards one "
              "list_changed" % kind)
        check(text(g.call("res__echo", {})) == "echo: ok", "a later call answers")
        check(changed(kind) == 1, "%s: …exactly one" % kind,
              notes_of(g, "notifications/%s/list_changed" % kind))
    r = g.request("prompts/list", {})
    check([p["name"] for p in r["result"]["prompts"]] == ["res__review", "res__summarize"],
          "the client's next prompts/list shows the change", r)
    found = text(g.call("tools_search", {"query": "echo"}))
    check("echo changed" in found, "the client's next tools_search shows the changed tool",
          found)


def main():
    with Sandbox() as sb:
        log = setup(sb)
        with Gateway(sb, "--manifest-dir", sb.project, env=sb.env(SECRETKEY=SECRET)) as g:
            caps = g.initialize()["result"]["capabilities"]
            check(caps.get("resources", {}).get("subscribe") is True and
                  caps["resources"].get("listChanged") is True and
                  caps.get("prompts", {}).get("listChanged") is True,
                  "initialize advertises subscribe and listChanged (the upstream has not "
                  "started, so it may offer them)", caps)
            d = g.request("server/discover", {"_meta": modern_meta()})
            check(d and d["result"]["capabilities"]["resources"].get("subscribe") is True,
                  "…and so does server/discover once the upstream declared them", d)
            subscriptions(g, sb, log)
            progress(g, log)
            logging(g, log)
            list_changes(g, log)
            check(g.close() == 0, "EOF exits 0", g.stderr()[-1500:])
            err = g.stderr()
            check("faster than" in err and SECRET not in err,
                  "the dropped flood is noted on stderr, without the secret", err[-1500:])
    no_subscribe()
    swapped()
    done()


def swapped():
    """The attack: an upstream of a surface the connection no longer serves
    (its lease closed while a read still holds it) keeps talking. Nothing it
    sends reaches the client."""
    with Sandbox() as sb:
        log = setup(sb)
        with open(os.path.join(sb.project, "agentstack.toml"), "a") as f:
            f.write('\n[toolsets.docs]\nservers = ["res"]\n')
        grant(sb)
        a = gw_uri("res", "file:///docs/a.txt")
        with Gateway(sb, "--manifest-dir", sb.project, env=sb.env(SECRETKEY=SECRET)) as g:
            g.initialize()
            g.call("agentstack_lease_open", {"profile": "docs"})
            r = g.request("resources/subscribe", {"uri": a})
            check(r and r.get("result") == {}, "swapped: subscribed under the lease", r)
            r = g.call("res__on_cancel", {"frames": [
                note("notifications/message", {"level": "error", "data": "stale"}),
                note("notifications/resources/updated", {"uri": "file:///docs/a.txt"}),
                note("notifications/resources/list_changed")]})
            check(text(r) == "on_cancel: ok", "swapped: the upstream holds frames", r)
            # Two reads that hang hold the old surface (and its upstream) alive.
            g.start("resources/read", {"uri": gw_uri("res", "hang://x")}, rid="h1")
            g.start("resources/read", {"uri": gw_uri("res", "hang://x")}, rid="h2")
            check(wait_log(log, lambda x: x.startswith("read ") and "h2" not in x and
                           len([y for y in log_lines(log) if y.endswith(" hang://x")]) >= 2),
                  "swapped: both reads reached the upstream")
            g.call("agentstack_lease_close", {})
            g.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": "h2"}})
            check(wait_log(log, lambda x: x.startswith("cancelled ")),
                  "swapped: the cancel reached the old upstream, which sent its frames")
            check(g.wait_for(lambda: "its notifications are dropped" in g.stderr()),
                  "swapped: the gateway saw them and says it dropped them", g.stderr()[-800:])
            check(g.close() == 0, "swapped: EOF exits 0")
            got = [n for n in g.notes if n.get("method") in (
                "notifications/message", "notifications/resources/updated",
                "notifications/resources/list_changed")]
            check(got == [], "swapped: nothing the swapped-out upstream sent reached the "
                  "client", got)


def no_subscribe():
    """An upstream that declares no subscriptions: once it has started,
    subscribe is not advertised."""
    with Sandbox() as sb:
        setup(sb, ', "--no-subscribe"')
        with Gateway(sb, "--manifest-dir", sb.project, env=sb.env(SECRETKEY=SECRET)) as g:
            g.initialize()
            g.request("resources/list", {})
            d = g.request("server/discover", {"_meta": modern_meta()})
            res = d["result"]["capabilities"].get("resources")
            check(res is not None and "subscribe" not in res and res.get("listChanged") is True,
                  "no-subscribe: resources advertised without subscribe", d)
            check(g.close() == 0, "no-subscribe: EOF exits 0")


if __name__ == "__main__":
    main()
