"""The gateway's protocol and framing rules (docs/gateway.md, "Protocol").

Versions: initialize echoes 2024-11-05 … 2025-11-25 and answers anything else
with 2025-11-25 (leases keep working there); a request is stateless
(2026-07-28) only when its _meta says so.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, is_error, modern_meta, payload, text  # noqa: E402

BUILT = ["agentstack_search", "tools_search", "tools_bindings", "agentstack_list",
         "agentstack_doctor", "agentstack_list_loadable", "agentstack_load",
         "agentstack_lease_open", "agentstack_lease_status", "agentstack_lease_close",
         "agentstack_lease_freeze", "agentstack_explain", "agentstack_diff",
         "agentstack_add_skill", "agentstack_create_toolset", "agentstack_session_start",
         "agentstack_session_end", "agentstack_session_list", "agentstack_session_freeze",
         "agentstack_add_server"]
DOC_ORDER = ["agentstack_search", "tools_search", "tools_bindings", "agentstack_list",
              "agentstack_doctor", "agentstack_add_from", "agentstack_list_loadable",
              "agentstack_load", "agentstack_lease_open", "agentstack_lease_status",
              "agentstack_lease_close", "agentstack_lease_freeze", "agentstack_explain",
              "agentstack_diff", "agentstack_add_skill", "agentstack_create_toolset",
              "agentstack_session_start", "agentstack_session_end", "agentstack_session_list",
              "agentstack_session_freeze", "agentstack_add_server"]

MANIFEST = """version = 1

[toolsets.backend]
servers = []
skills = []
"""


def versions(sb):
    for asked, want in (("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"),
                        ("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"),
                        ("1999-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25")):
        with Gateway(sb) as g:
            r = g.initialize(asked)
            res = r["result"] if r else {}
            check(res.get("protocolVersion") == want, f"initialize {asked} → {want}", r)
            if asked == "2025-11-25":
                check(res["capabilities"]["tools"]["listChanged"] is True, "listChanged: true")
                check(res["serverInfo"]["name"] == "agentstack", "serverInfo.name")
                check(isinstance(res.get("instructions"), str) and
                      "agentstack_load" in res["instructions"], "instructions name the loader")
            if asked == "1999-01-01":
                o = g.call("agentstack_lease_open", {"profile": "backend"})
                check(not is_error(o) and payload(o)["opened"] == "backend",
                      "unknown version: the initialize era keeps leases", text(o))
            g.close()


def first_frame(sb):
    for first in ('{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                  '{"jsonrpc":"2.0","method":"notifications/initialized"}',
                  '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":'
                  '{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}'):
        p = subprocess.run([BIN, "mcp"], input=first + "\n", capture_output=True, text=True,
                           cwd=sb.project, env=sb.env(), timeout=60)
        check(p.returncode == 1 and p.stdout == "" and "first message" in p.stderr,
              "first frame %s → exit 1, no reply" % json.loads(first)["method"],
              (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([BIN, "mcp"], input='{"jsonrpc":"2.0","id":7,"method":"ping"}\n',
                       capture_output=True, text=True, cwd=sb.project, env=sb.env(), timeout=60)
    check(p.returncode == 0 and json.loads(p.stdout)["result"] == {},
          "first frame ping → {} and a clean exit", p)


def modern(sb):
    with Gateway(sb) as g:
        d = g.request("server/discover", {"_meta": modern_meta()})
        res = d["result"]
        check(res["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18",
                                           "2025-03-26"], "discover: 4 versions", res)
        check(res["resultType"] == "complete" and res["ttlMs"] == 0 and
              res["cacheScope"] == "private" and
              res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "agentstack",
              "discover: resultType, ttlMs, cacheScope, serverInfo", res)
        lst = g.request("tools/list", {"_meta": modern_meta()})["result"]
        check(lst["ttlMs"] == 0 and lst["cacheScope"] == "private" and
              lst["resultType"] == "complete", "modern tools/list: ttlMs, cacheScope", lst)
        e = g.request("tools/list", {"_meta": modern_meta(caps=False)})
        check(e.get("error", {}).get("code") == -32602 and
              "clientCapabilities" in e["error"]["message"], "no capabilities → -32602", e)
        e = g.request("tools/list", {"_meta": modern_meta("1999-01-01")})
        err = e.get("error", {})
        check(err.get("code") == -32022 and err["data"]["requested"] == "1999-01-01" and
              "2026-07-28" in err["data"]["supported"], "version 1999-01-01 → -32022", e)
        e = g.request("ping", {"_meta": modern_meta()})
        check(e.get("error", {}).get("code") == -32601, "modern ping → -32601", e)
        c = g.call("agentstack_lease_open", {"profile": "backend"}, meta=modern_meta())
        check(is_error(c) and "legacy-only" in text(c), "modern lease_open → legacy-only", c)
        c = g.call("agentstack_lease_status", {}, meta=modern_meta())
        check(not is_error(c) and payload(c)["active"] is False and
              c.get("resultType") == "complete", "lease_status works in the modern era", c)
        check(g.close() == 0, "modern: EOF exits 0")


def framing(sb):
    with Gateway(sb) as g:
        g.initialize()
        g.send_raw("this is not json")
        g.send_raw("")
        g.send_raw("\ufeff" + json.dumps({"jsonrpc": "2.0", "id": "bom", "method": "ping"}))
        r = g.wait("bom")
        check(r and r["result"] == {}, "BOM tolerated; garbage and blank lines ignored", r)
        g.send_raw('{"jsonrpc":"2.0","id":"cr","method":"ping"}\r')
        check(g.wait("cr") is not None, "trailing \\r stripped")
        g.send_raw('{"foo":1}')
        ok = g.wait_for(lambda: "null" in g.replies)
        inv = g.replies.pop("null", None) if ok else None
        check(inv and inv["error"]["code"] == -32600 and inv["id"] is None,
              '{"foo":1} → -32600 with "id": null', inv)
        r = g.request("ping")
        check(r and r["result"] == {}, "ping → {}")
        # Upstream features are served (docs/gateway.md "Resources, prompts and
        # completions"); with no upstream they list nothing.
        r = g.request("prompts/list")
        check(r and r.get("result") == {"prompts": []}, "prompts/list → no prompts", r)
        r = g.request("resources/list", {})
        check(r and r.get("result") == {"resources": []}, "resources/list → no resources", r)
        r = g.request("completion/complete", {})
        check(r and r["error"]["code"] == -32602, "completion/complete without a ref → -32602", r)
        r = g.request("logging/setLevel", {"level": "info"})
        check(r and r.get("result") == {}, "logging/setLevel → {}", r)
        r = g.request("bogus/x", {})
        check(r and r["error"]["code"] == -32601, "bogus/x → -32601")
        names = g.tools()
        check(names == BUILT, "compact list = the built control-plane tools, in order", names)
        check([n for n in DOC_ORDER if n in names] == names, "…in the documented order")
        check(not any("__" in n for n in names), "no control-plane name contains __")
        check(not any(w in n for n in names for w in ("trust", "consent", "approve", "grant")),
              "no tool name offers trust")
        big = '{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"' + \
              "a" * (4 * 1024 * 1024 + 10) + '"}}'
        g.send_raw(big)
        r = g.wait("big")
        check(r and r["error"]["code"] == -32600, "a line over 4 MiB → -32600, its id kept", r)
        r = g.request("ping")
        check(r and r["result"] == {}, "…and the stream stays usable")
        c = g.call("agentstack_trust", {})
        check(is_error(c) and text(c) == "Error: unknown tool 'agentstack_trust'",
              "unknown tool: exact text", c)
        r = g.request("tools/call", {"arguments": {}})
        check(r and r["error"]["code"] == -32602, "tools/call without a name → -32602", r)
        g.close()
        bad = [line for line in g.raw if line.startswith("{") is False]
        check(not bad, "stdout carries whole JSON frames only", bad[:3])


def cancel(sb):
    with Gateway(sb) as g:
        g.initialize()
        rid = g.start("tools/call", {"name": "agentstack_doctor", "arguments": {}})
        g.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": rid + 1000}})
        check(g.wait(rid) is not None, "a cancel for another id does not suppress a reply")
        g.close()


def main():
    with Sandbox() as sb:
        sb.write("agentstack.toml", MANIFEST)
        versions(sb)
        first_frame(sb)
        modern(sb)
        framing(sb)
        cancel(sb)
    done()


main()
