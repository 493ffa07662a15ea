"""agentstack report x-<id>: one tools_execute execution from the call audit.

The rows are written here as a chained, anchored calls.jsonl by an
independent Python implementation of the documented format (docs/audit.md),
as the gateway writes them for an execution's inner calls
(docs/tools-execute.md, "Evidence").
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, write_anchor  # noqa: E402

ZERO = "0" * 64
XID = "x-0123456789abcdef"
OTHER = "x-fedcba9876543210"


def write_chain(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    prev = ZERO
    with open(path, "wb") as f:
        for r in rows:
            r = dict(r)
            r["prev"] = prev
            line = json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()
            f.write(line + b"\n")
            prev = hashlib.sha256(line).hexdigest()
    write_anchor(os.path.dirname(os.path.dirname(path)), path)


def row(project, tool, outcome, ms, execution=None, detail=None, layer=None):
    r = {"ts": 1767225600, "pid": 42}
    if execution:
        r["execution"] = execution
    r.update({"project": project, "server": "demo", "tool": tool,
              "args_digest": "a41c09e7b2d3", "outcome": outcome})
    if detail:
        r["detail"] = detail
    r["ms"] = ms
    if layer:
        r["rule"] = "!probe"
        r["layer"] = layer
    return r


with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", "")
    root = os.path.realpath(sb.project)
    calls = os.path.join(sb.ah, "audit", "calls.jsonl")
    write_chain(calls, [
        row(root, "hello", "ok", 5),  # a plain brokered call: not the execution's
        row(root, "hello", "ok", 12, XID),
        row(root, "probe", "denied", 0, XID, 'denied by [policy.tools] rule "!probe"', "machine"),
        row(root, "hello", "ok", 7, OTHER),  # another execution's
        row(root, "slow", "error", 30, XID, "timeout"),
    ])

    r = sb.run("report", XID)
    out = r.stdout
    check(r.returncode == 0, "report x-<id> exits 0", out + r.stderr)
    check(out.startswith("Execution " + XID + "\n"), "the report names the execution", out)
    check("3 · 1 ok · 1 denied · 1 error · 42ms in-tool" in out,
          "count, outcome summary and in-tool time cover only this execution's rows", out)
    check("✓ demo__hello  ok  12ms" in out and "✗ demo__probe  denied  0ms" in out
          and "⚠ demo__slow  error  30ms  timeout" in out,
          "each inner call: server, tool, outcome, duration (and why, when not ok)", out)
    check("7ms" not in out and "5ms" not in out,
          "rows of another execution and plain calls are left out", out)
    check(out.index("demo__hello") < out.index("demo__probe") < out.index("demo__slow"),
          "calls in the order they were written", out)
    check("Project   " + root in out, "the project the calls were made in", out)
    check("(no row of the execution's own" in out and "Outcome" not in out,
          "without the execution's own row, the report says it is missing", out)

    r = sb.run("report", XID, "--json")
    check(r.returncode == 0, "report x-<id> --json exits 0", r.stdout + r.stderr)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {}
    check(doc.get("execution") == XID and doc.get("count") == 3
          and doc.get("outcomes") == {"ok": 1, "denied": 1, "error": 1} and doc.get("ms") == 42
          and doc.get("project") == root,
          "JSON: execution, count, outcomes, total ms", r.stdout)
    cs = doc.get("calls") or []
    check([(c.get("server"), c.get("tool"), c.get("outcome"), c.get("ms")) for c in cs]
          == [("demo", "hello", "ok", 12), ("demo", "probe", "denied", 0),
              ("demo", "slow", "error", 30)],
          "JSON: every inner call with server, tool, outcome, ms", cs)
    check(len(cs) == 3 and cs[1].get("layer") == "machine" and cs[1].get("rule") == "!probe"
          and cs[2].get("detail") == "timeout" and "detail" not in cs[0],
          "JSON: a denial keeps its rule and layer, an error its class", cs)

    r = sb.run("report", "x-00000000deadbeef")
    check(r.returncode == 1 and r.stdout == ""
          and "No audit row names execution 'x-00000000deadbeef'" in r.stderr,
          "an unknown x- id exits 1 with a clear message", r.stdout + r.stderr)
    r = sb.run("report", "x-00000000deadbeef", "--json")
    check(r.returncode == 1 and r.stdout == "", "an unknown x- id exits 1 under --json too",
          r.stdout + r.stderr)

    # The execution's own row (docs/audit.md): its summary beside the inner calls,
    # which it is not counted among.
    own = {"ts": 1767225601, "execution": XID, "pid": 42, "project": root,
           "server": "agentstack", "tool": "tools_execute", "args_digest": "5d1e0c2a9b7f",
           "outcome": "error", "detail": "resource-limit", "ms": 1480, "calls": 2,
           "output_bytes": 812, "result_bytes": 0, "code_sha256": "ab" * 32,
           "limit": "memory", "limits": "cgroup-v1"}
    write_chain(calls, [row(root, "hello", "ok", 12, XID), row(root, "slow", "error", 30, XID,
                                                               "timeout"), own])
    r = sb.run("report", XID)
    out = r.stdout
    check(r.returncode == 0 and "Outcome   resource-limit (limit memory) · 1480ms · 2 calls\n"
          in out and "Sizes     812 bytes of output · 0 bytes of result" in out
          and "Bounds    cgroup-v1\n" in out
          and "Code      sha256:" + "ab" * 32 in out
          and "2 · 1 ok · 0 denied · 1 error · 42ms in-tool" in out
          and "no row of the execution's own" not in out,
          "the execution's own row: outcome, limit, duration, sizes, bounds, code digest", out)
    r = sb.run("report", XID, "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    check(doc.get("summary") == {"outcome": "error", "category": "resource-limit",
                                 "limit": "memory", "limits": "cgroup-v1", "ms": 1480,
                                 "calls": 2,
                                 "output_bytes": 812, "result_bytes": 0,
                                 "code_sha256": "ab" * 32, "ts": 1767225601}
          and doc.get("count") == 2 and [c["tool"] for c in doc.get("calls", [])]
          == ["hello", "slow"],
          "JSON: the summary apart from the inner calls", r.stdout)
    write_chain(calls, [own])
    r = sb.run("report", XID, "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    check(doc.get("count") == 0 and doc.get("summary", {}).get("calls") == 2,
          "an execution whose only row is its own is reported", r.stdout + r.stderr)

    # Hostile ids: a path or terminal escape is refused as unknown, never echoed raw.
    r = sb.run("report", "x-../../etc")
    check(r.returncode == 1 and "No audit row names execution" in r.stderr,
          "an x- id with a path is unknown, exit 1", r.stderr)
    r = sb.run("report", "x-\x1b[31mred")
    check(r.returncode == 1 and "\x1b" not in r.stderr, "an id's escape bytes are not echoed",
          repr(r.stderr))

    # A forged row with a terminal escape in its fields is shown sanitized.
    write_chain(calls, [row(root, "evil\x1b]0;pwn\x07", "error", 1, XID, "bad\x1b[2J")])
    r = sb.run("report", XID)
    check(r.returncode == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout,
          "row fields are sanitized for the terminal", repr(r.stdout))

    # Rows that rotated into calls.jsonl.1 still count, before the current log's.
    os.rename(calls, calls + ".1")
    write_chain(calls, [row(root, "hello", "ok", 3, XID)])
    r = sb.run("report", XID, "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    check([c.get("tool") for c in doc.get("calls", [])] == ["evil\x1b]0;pwn\x07", "hello"],
          "the rotated log's rows come first", r.stdout + r.stderr)

done()
