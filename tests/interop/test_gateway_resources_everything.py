"""Upstream resources and prompts of the real server-everything through the
gateway (docs/gateway.md "Resources, prompts and completions"): its resources
listed under agentstack:// URIs and read back by them, a prompt listed as
everything__<name> and got with an argument, a completion answered, and the
audit rows the reads and gets wrote. A second session subscribes to one of
its resources (docs/gateway.md "Notifications from upstreams"): the
subscription is advertised and audited, the updates server-everything sends
for it arrive under the agentstack:// URI, its log messages arrive with the
server's name as logger, they stop after unsubscribe, and every frame the
gateway sent validates against the negotiated revision's schema.

Runs inside a loopback-only network namespace with a temporary HOME and
AGENTSTACK_HOME; needs root, AS_BIN and the interop cache
(tests/interop/setup_clis.sh); exits 77 loudly without them.
"""
import os
import urllib.parse

from test_gateway_sdk import (AJV, EVERYTHING, NODE22, VALIDATE, Sandbox, check, check_schema,
                              done, enter_lonet, need, peer_env)
from test_gateway_schema import Recorder
from mcpclient import Gateway, audit_rows, grant  # noqa: E402  (tests/e2e is on sys.path)

PROJECT = ('version = 1\n\n[servers.everything]\ntype = "stdio"\n'
           f'command = "{NODE22}"\nargs = ["{EVERYTHING}", "stdio"]\n')


def main():
    need(EVERYTHING, NODE22, AJV, VALIDATE)
    enter_lonet()
    with Sandbox() as sb:
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write("version = 1\n")
        sb.write("agentstack.toml", PROJECT)
        grant(sb)
        with Gateway(sb, "--manifest-dir", sb.project, env=peer_env(sb)) as g:
            init = g.initialize()
            caps = (init or {}).get("result", {}).get("capabilities", {})
            check("resources" in caps and "prompts" in caps,
                  "initialize advertises resources and prompts", caps)
            r = g.request("resources/list", {})
            res = (r or {}).get("result", {}).get("resources") or []
            check(res and all(x["uri"].startswith("agentstack://everything/") and
                              x["name"].startswith("everything__") for x in res),
                  "server-everything's resources are listed under agentstack:// URIs", r)
            if res:
                uri = res[0]["uri"]
                rd = g.request("resources/read", {"uri": uri})
                contents = (rd or {}).get("result", {}).get("contents") or []
                orig = urllib.parse.unquote(uri[len("agentstack://everything/"):])
                check(contents and contents[0]["uri"] == uri and
                      ("text" in contents[0] or "blob" in contents[0]),
                      "resources/read returns its contents under the same URI (" + orig + ")",
                      rd)
            p = g.request("prompts/list", {})
            names = [x["name"] for x in (p or {}).get("result", {}).get("prompts") or []]
            check("everything__simple-prompt" in names and "everything__args-prompt" in names,
                  "its prompts are listed as everything__<name>", names)
            pg = g.request("prompts/get", {"name": "everything__args-prompt",
                                           "arguments": {"city": "Paris"}})
            msgs = (pg or {}).get("result", {}).get("messages") or []
            check(msgs and "Paris" in str(msgs), "prompts/get passes its arguments", pg)
            cc = g.request("completion/complete", {
                "ref": {"type": "ref/prompt", "name": "everything__completable-prompt"},
                "argument": {"name": "department", "value": "E"}})
            check(cc and isinstance(cc.get("result", {}).get("completion", {}).get("values"),
                                    list), "completion/complete is answered", cc)
            check(g.close() == 0, "EOF exits 0", g.stderr()[-800:])
        rows = audit_rows(sb)
        check(any(x.get("tool") == "resource" and x["outcome"] == "ok" and
                  x.get("result_digest") for x in rows), "the read was audited", rows[-3:])
        check(any(x.get("tool") == "prompt:args-prompt" and x["outcome"] == "ok" for x in rows),
              "the prompt was audited", rows[-3:])
    subscribed()
    done()


def subscribed():
    """resources/subscribe through the gateway to the real server: its
    toggle-subscriber-updates tool sends resources/updated for what this
    session subscribed to, at once and then every 5 s."""
    with Sandbox() as sb:
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write("version = 1\n")
        sb.write("agentstack.toml", PROJECT)
        grant(sb)
        env = peer_env(sb)
        frames = os.path.join(sb.root, "frames.jsonl")
        with Recorder(sb, "--manifest-dir", sb.project, env=env) as g:
            init = g.initialize("2025-11-25")
            res_cap = (init or {}).get("result", {}).get("capabilities", {}).get("resources", {})
            check(res_cap.get("subscribe") is True and res_cap.get("listChanged") is True,
                  "subscribe: initialize advertises resources.subscribe and listChanged", init)
            r = g.request("resources/list", {})
            res = (r or {}).get("result", {}).get("resources") or []
            check(res, "subscribe: the resources are listed", r)
            uri = res[0]["uri"] if res else "agentstack://everything/x"
            s = g.request("resources/subscribe", {"uri": uri})
            check(s and s.get("result") == {}, "subscribe: resources/subscribe answers {}", s)
            check(g.wait_for(lambda: any(
                n.get("method") == "notifications/message" and
                n["params"].get("logger") == "everything" and
                "Subscribe" in str(n["params"].get("data")) for n in g.notes)),
                  "subscribe: the server's log message about it arrives, logger = its name",
                  g.notes[-5:])
            t = g.call("everything__toggle-subscriber-updates", {})
            check(t and not t.get("isError"), "subscribe: the updates are switched on", t)

            def updates():
                return [n for n in g.notes if n.get("method") == "notifications/resources/updated"]
            check(g.wait_for(lambda: updates()), "subscribe: resources/updated arrives", g.notes)
            check(updates() and all(n["params"] == {"uri": uri} for n in updates()),
                  "subscribe: …under the agentstack:// URI the client subscribed to", updates())
            u = g.request("resources/unsubscribe", {"uri": uri})
            check(u and u.get("result") == {}, "subscribe: resources/unsubscribe answers {}", u)
            seen = len(updates())
            t = g.call("everything__toggle-subscriber-updates", {})
            check(t and not t.get("isError"), "subscribe: the updates are switched off", t)
            check(g.request("ping") is not None and len(updates()) == seen,
                  "subscribe: no update is forwarded after unsubscribe", updates())
            check(g.close() == 0, "subscribe: EOF exits 0", g.stderr()[-800:])
            g.save(frames)
        rows = [x.get("tool") for x in audit_rows(sb)]
        check("resource:subscribe" in rows and "resource:unsubscribe" in rows,
              "subscribe: both requests were audited", rows)
        check_schema(env, [frames], "subscribe", ["2025-11-25"])


if __name__ == "__main__":
    main()
