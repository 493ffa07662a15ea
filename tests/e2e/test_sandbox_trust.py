"""Sandboxed runs and the trust gate.

An untrusted project can be run under --sandbox/--lockdown, but nothing
from its bundle is honoured: its own [policy.filesystem] write cannot make
the workspace writable, and the banner says UNTRUSTED. Once trusted, the
project's write scope applies, its [policy.egress] narrows egress (project
layer), and under --lockdown its declared HTTP server hosts are refused at
the proxy ("gateway relay"). A changed bundle is CHANGED and again delivers
nothing. Under --lockdown an untrusted bundle's declared servers are neither
named nor fenced and nothing is rendered into the sandbox home. A broken
machine policy refuses every run.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

MANIFEST = """version = 1

[servers.api]
type = "http"
url = "https://mcp.example.com/mcp"

[policy.filesystem]
write = ["./**"]

[policy.egress]
"*" = ["!project-denied.example"]
"""


def run_id(out):
    m = re.search(r"\(run (r-[0-9a-f]{10})\)", out)
    return m.group(1) if m else None


def egress(s, rid):
    with open(os.path.join(s.ah, "runs", rid, "events.jsonl")) as f:
        return [e for e in map(json.loads, f) if e["event"] == "egress"]


def main():
    with Sandbox() as s:
        s.write(".agentstack/agentstack.toml", MANIFEST)

        # Untrusted: runs, says so, and the project's write grant is ignored.
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo pwned > /workspace/p.txt")
        check("UNTRUSTED" in r.stdout, "the banner says UNTRUSTED", r.stdout)
        check("running an unreviewed bundle sandboxed" in r.stderr, "stderr warns", r.stderr)
        check("read-only" in r.stdout and not os.path.exists(os.path.join(s.project, "p.txt")),
              "an untrusted project cannot grant itself a writable workspace", r.stdout)
        check("routed through the gateway" not in r.stdout, "no gateway routing untrusted")

        # Untrusted under --lockdown: the banner says nothing is delivered,
        # and nothing is: no declared server is named or fenced, nothing is
        # rendered into the sandbox home, the project's policy layer is unused.
        r = s.run("run", "--lockdown", "shtest", "--", "-c",
                  "ls -A /root | wc -l; cat /workspace/.agentstack/agentstack.toml >/dev/null "
                  "&& echo can-read-manifest")
        rid = run_id(r.stdout)
        check(r.returncode == 0 and "UNTRUSTED" in r.stdout
              and "nothing from the bundle is delivered" in r.stdout,
              "lockdown, untrusted: the banner says nothing from the bundle is delivered",
              r.stdout + r.stderr)
        check("nothing from it is delivered (no servers, skills or secrets)" in r.stderr
              and "not routed" not in r.stderr and "mcp.example.com" not in r.stderr,
              "lockdown, untrusted: no declared server is named or routed", r.stderr)
        check(r.stdout.splitlines()[-1:] == ["can-read-manifest"] and "\n0\n" in r.stdout,
              "lockdown, untrusted: the sandbox home is empty (nothing rendered into it)",
              r.stdout)
        home = os.path.join(s.ah, "sandbox-home", "shtest")
        check(os.path.isdir(home) and os.listdir(home) == [],
              "lockdown, untrusted: nothing was written for the harness on the host", home)
        with open(os.path.join(s.ah, "runs", rid or "x", "events.jsonl")) as f:
            st = json.loads(f.readline())
        check(st.get("event") == "sandbox_started" and st.get("trust") == "untrusted",
              "lockdown, untrusted: the record says untrusted", st)
        p = s.run("run", "--lockdown", "--plan", "shtest", "--", "-c", "true")
        check("gateway-only host" not in p.stdout and "no servers to route" in p.stdout
              and "read-only" in p.stdout,
              "lockdown, untrusted --plan: no server, no gateway-only host, no write grant",
              p.stdout)

        # Trust it.
        p = s.run("trust", ".", "--preview")
        try:
            digest = json.loads(p.stdout)["surface_digest"]
        except (ValueError, KeyError):
            digest = None
        check(digest is not None, "trust --preview gives the consent digest", p.stdout + p.stderr)
        g = s.run("trust", ".", "--yes", "--consented", digest or "")
        check(g.returncode == 0, "the project is trusted", g.stderr)

        r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo pwned > /workspace/p.txt")
        check("bundle trusted" in r.stdout and "read-write" in r.stdout,
              "trusted: the banner says so and the write scope applies", r.stdout)
        check(os.path.exists(os.path.join(s.project, "p.txt")), "trusted: the write lands")
        os.unlink(os.path.join(s.project, "p.txt"))
        check("not routed" in r.stderr, "declared servers are named as not routed", r.stderr)

        # The project layer narrows egress; under lockdown the declared MCP
        # host is refused directly (gateway relay only).
        r = s.run("run", "--lockdown", "shtest", "--", "-c",
                  "curl -sS -m 5 https://project-denied.example/; "
                  "curl -sS -m 5 https://mcp.example.com/mcp; true")
        rid = run_id(r.stdout)
        eg = egress(s, rid) if rid else []
        check(len(eg) == 2 and eg[0]["layer"] == "project" and not eg[0]["allowed"],
              "the project's egress deny applies (layer project)", eg)
        check(len(eg) == 2 and "gateway relay" in eg[1]["rule"],
              "the declared MCP host is refused under lockdown (gateway relay)", eg)
        r = s.run("run", "--lockdown", "--plan", "shtest", "--", "-c", "true")
        check("gateway-only host (refused direct): mcp.example.com" in r.stdout,
              "--plan lists the gateway-only host", r.stdout)

        # Changed: the bundle is edited after trust.
        s.write(".agentstack/agentstack.toml", MANIFEST + '\n[servers.other]\ntype = "http"\n'
                                                          'url = "https://other.example/mcp"\n')
        r = s.run("run", "--sandbox", "--plan", "shtest", "--", "-c", "true")
        check("CHANGED" in r.stdout and "read-only" in r.stdout,
              "changed: CHANGED, and the write grant no longer applies", r.stdout)

        # A broken machine policy refuses every run.
        s.write("agentstack.toml", "version = 1\n[policy.egress\n", base=s.ah)
        r = s.run("run", "--sandbox", "shtest", "--", "-c", "echo SHOULD-NOT-RUN")
        check(r.returncode == 1 and "nothing was launched" in r.stderr
              and "SHOULD-NOT-RUN" not in r.stdout and "agentstack.toml" in r.stderr,
              "a broken machine policy refuses the run", r.stderr)
    done()


if __name__ == "__main__":
    main()
