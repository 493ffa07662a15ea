"""The landing page's trust-gate demo, end to end (seed 001 "The trust gate").

examples/demo is the project: a stdio server `demo` (`agentstack demo-server`,
built in) with tools echo, secret_read, delete_all; the repo denies secret_read, the
machine policy denies delete_*. Untrusted, the project is inert (the server
touches a marker file when it starts: it must never start). After lock +
trust: echo is brokered, secret_read is denied by the repo, delete_all by the
machine, every call lands in calls.jsonl without argument values, and
`agentstack audit --calls` prints the documented summary line.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, SRC, Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, audit_rows, is_error, text  # noqa: E402

DEMO = os.path.join(SRC, "examples", "demo")
SENTINEL = "argument-value-sentinel-7f3a"


def setup(sb):
    with open(os.path.join(DEMO, "agentstack.toml")) as f:
        m = f.read()
    # As drive.py does: the built-in demo server, this exact binary.
    check('command = "agentstack"' in m and 'args = ["demo-server"]' in m,
          "the demo manifest runs the built-in demo-server", m)
    m = m.replace('command = "agentstack"', "command = " + json.dumps(BIN))
    with open(os.path.join(sb.project, "agentstack.toml"), "w") as f:
        f.write(m)
    os.makedirs(sb.ah, exist_ok=True)
    shutil.copy(os.path.join(DEMO, "machine.toml"), os.path.join(sb.ah, "agentstack.toml"))


def marker(sb):
    return os.path.exists(os.path.join(sb.project, "server-started.marker"))


def untrusted(sb):
    with Gateway(sb, "--auto-project") as g:
        r = g.initialize()
        check(r and r["result"]["protocolVersion"] == "2025-11-25", "initialize answers")
        names = g.tools()
        check(names is not None and not any("__" in n for n in names),
              "untrusted: tools/list is the control plane only", names)
        s = g.call("tools_search", {"query": "echo"})
        check("not trusted" in text(s) and "agentstack trust" in text(s),
              "untrusted: tools_search says not trusted and names the fix", text(s))
        c = g.call("demo__echo", {"message": SENTINEL})
        check(is_error(c) and "unknown tool" in text(c),
              "untrusted: demo__echo is an unknown tool", text(c))
        rc = g.close()
        check(rc == 0, "untrusted: EOF exits 0", rc)
        check("not trusted" in g.stderr(), "untrusted: stderr names the trust state")
    check(not marker(sb), "untrusted: the server was never started")
    check(audit_rows(sb) == [], "untrusted: no audit row for its servers", audit_rows(sb))


def grant(sb):
    r = sb.run("lock", "--write")
    check(r.returncode == 0, "lock --write", r.stderr)
    r = sb.run("trust", ".", "--preview")
    digest = json.loads(r.stdout)["surface_digest"]
    r = sb.run("trust", ".", "--yes", "--consented", digest)
    check(r.returncode == 0 and "trusted" in r.stdout, "trust --yes --consented", r.stderr)


def trusted(sb):
    with Gateway(sb, "--auto-project") as g:
        g.initialize()
        s = g.call("tools_search", {"query": "echo"})
        check("demo__echo" in text(s), "trusted: search finds demo__echo", text(s))
        c = g.call("demo__echo", {"message": SENTINEL})
        check(not is_error(c) and text(c) == "echo: " + SENTINEL,
              "agent → demo.echo ✓ ok (brokered)", c)
        c = g.call("demo__secret_read", {})
        t = text(c)
        check(is_error(c) and 'rule "!secret_read"' in t and "machine policy" not in t,
              "agent → demo.secret_read ✗ denied by the repo [policy.tools]", t)
        c = g.call("demo__delete_all", {"really": SENTINEL})
        t = text(c)
        check(is_error(c) and 'denied by [policy.tools] rule "!delete_*" (machine policy — '
              '~/.agentstack/agentstack.toml)' in t,
              "agent → demo.delete_all ✗ denied by YOUR machine policy", t)
        check(g.close() == 0, "trusted: EOF exits 0")
    check(marker(sb), "trusted: the server was started")


def audit(sb):
    rows = audit_rows(sb)
    calls = [r for r in rows if r["tool"] in ("echo", "secret_read", "delete_all")]
    check(len(calls) == 3, "three call rows", rows)
    by = {r["tool"]: r for r in calls}
    ok = by.get("echo", {})
    check(ok.get("outcome") == "ok" and ok.get("server") == "demo" and "detail" not in ok,
          "echo row: ok", ok)
    sec = by.get("secret_read", {})
    check(sec.get("outcome") == "denied" and sec.get("layer") == "project"
          and sec.get("rule") == "!secret_read", "secret_read row: denied, project layer", sec)
    dele = by.get("delete_all", {})
    check(dele.get("outcome") == "denied" and dele.get("layer") == "machine"
          and "machine policy" in dele.get("detail", ""), "delete_all row: machine layer", dele)
    keys = list(ok.keys())
    check(keys[:4] == ["ts", "pid", "project", "server"] and keys[-1] == "prev",
          "row fields in the documented order, chained", keys)
    check(all(len(r["args_digest"]) == 12 for r in calls), "12-hex argument digests")
    with open(os.path.join(sb.ah, "audit", "calls.jsonl")) as f:
        raw = f.read()
    check(SENTINEL not in raw, "argument values are never logged")
    check(ok.get("project") == os.path.realpath(sb.project), "project = canonical root")
    r = sb.run("audit", "--calls")
    check(r.returncode == 0 and
          "3 calls · 3 tools · 2 denied by policy — digests, never values" in r.stdout,
          "agentstack audit --calls prints the documented summary line", r.stdout + r.stderr)


def drive():
    """examples/demo/drive.py is what `make demo` runs: it must keep passing."""
    import subprocess
    p = subprocess.run([sys.executable, os.path.join(DEMO, "drive.py"), BIN],
                       capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items()
                            if not k.startswith("AGENTSTACK_")})
    check(p.returncode == 0 and "demo ok" in p.stdout, "examples/demo/drive.py passes",
          p.stdout[-2000:] + p.stderr[-2000:])


def main():
    drive()
    with Sandbox() as sb:
        setup(sb)
        untrusted(sb)
        grant(sb)
        trusted(sb)
        audit(sb)
    done()


main()
