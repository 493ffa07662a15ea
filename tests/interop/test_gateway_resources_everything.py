"""Upstream resources and prompts of the real server-everything through the
gateway (docs/gateway.md "Resources, prompts and completions"): its resources
listed under agentstack:// URIs and read back by them, a prompt listed as
everything__<name> and got with an argument, a completion answered, and the
audit rows the reads and gets wrote.

Runs inside a loopback-only network namespace with a temporary HOME and
AGENTSTACK_HOME; needs root, AS_BIN and the interop cache
(tests/interop/setup_clis.sh); exits 77 loudly without them.
"""
import os
import urllib.parse

from test_gateway_sdk import (EVERYTHING, NODE22, Sandbox, check, done, enter_lonet, need,
                              peer_env)
from mcpclient import Gateway, audit_rows, grant  # noqa: E402  (tests/e2e is on sys.path)


def main():
    need(EVERYTHING, NODE22)
    enter_lonet()
    with Sandbox() as sb:
        os.makedirs(sb.ah, exist_ok=True)
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write("version = 1\n")
        sb.write("agentstack.toml", 'version = 1\n\n[servers.everything]\ntype = "stdio"\n'
                 f'command = "{NODE22}"\nargs = ["{EVERYTHING}", "stdio"]\n')
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
    done()


if __name__ == "__main__":
    main()
