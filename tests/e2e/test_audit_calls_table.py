"""agentstack audit --calls: the per-tool table (calls, denied, errors, p50
and p99 latency), its filters --since / --server / --tool, and the same
table under --json (docs/audit.md, docs/json.md).

The rows are written by an independent Python writer of the documented
format (docs/audit.md), so what is counted is what the page says a row is.
"""
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, write_anchor  # noqa: E402

NOW = int(time.time())
OLD = NOW - 3 * 86400  # three days ago


def append_chain(path, rows):
    """The documented chain (docs/audit.md): compact JSON, "prev" last, then
    the anchor, as the writer leaves it."""
    prev = "0" * 64
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "ab") as f:
        for r in rows:
            r = dict(r, prev=prev)
            line = json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()
            f.write(line + b"\n")
            prev = hashlib.sha256(line).hexdigest()
    write_anchor(os.path.dirname(os.path.dirname(path)), path)


def row(project, server, tool, outcome, ms, ts=NOW, layer=None):
    r = {"ts": ts, "pid": 42, "project": project, "server": server, "tool": tool,
         "args_digest": "a41c09e7b2d3", "outcome": outcome}
    if outcome != "ok":
        r["detail"] = "upstream-error" if outcome == "error" else "denied by a rule"
    r["ms"] = ms
    if layer:
        r["rule"] = "!x"
        r["layer"] = layer
    return r


def table(stdout):
    """The table's rows after its header, each split in columns."""
    lines = stdout.splitlines()
    at = next((i for i, l in enumerate(lines) if l.startswith("SERVER")), None)
    if at is None:
        return None
    return [l.split() for l in lines[at + 1:] if l.strip()]


with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", "")
    root = os.path.realpath(sb.project)
    calls = os.path.join(sb.ah, "audit", "calls.jsonl")

    rows = []
    # acme/search: 100 calls that returned, 1..100 ms: p50 = 50, p99 = 99
    rows += [row(root, "acme", "search", "ok", ms) for ms in range(1, 101)]
    # two errors (they count as timed calls) and one policy denial
    rows += [row(root, "acme", "write", "error", 700), row(root, "acme", "write", "ok", 300),
             row(root, "acme", "write", "denied", 0, layer="project")]
    # only refused: no latency at all
    rows += [row(root, "ops", "wipe", "denied", 0, layer="machine")]
    # old rows, outside --since 1d
    rows += [row(root, "ops", "status", "ok", 5, ts=OLD)]
    # not calls: a refusal family, an execution's own row, a host-guard row
    rows += [row(root, "acme", "egress", "denied", 0),
             dict(row(root, "agentstack", "tools_execute", "ok", 900),
                  execution="x-0123456789abcdef", calls=1, output_bytes=0, result_bytes=0,
                  code_sha256="0" * 64),
             row(root, "host-guard", "bash: cat .env", "denied", 0)]
    # another project
    rows += [row("/elsewhere", "acme", "search", "ok", 4000)]
    # a name an upstream chose, with an escape sequence in it
    rows += [row(root, "evil", "x\x1b[2Jy", "ok", 1)]
    append_chain(calls, rows)

    r = sb.run("audit", "--calls")
    t = table(r.stdout)
    check(r.returncode == 0 and r.stdout.startswith(
        "106 calls · 5 tools · 2 denied by policy — digests, never values\n"
        "1 command refused by the host guard\n"),
        "the summary line still comes first", r.stdout + r.stderr)
    check(t is not None and r.stdout.splitlines()[3].split() ==
          ["SERVER", "TOOL", "CALLS", "DENIED", "ERRORS", "P50", "MS", "P99", "MS"],
          "a header names the columns", r.stdout)
    by = {(c[0], c[1]): c[2:] for c in (t or [])}
    check(by.get(("acme", "search")) == ["100", "0", "0", "50", "99"],
          "acme search: 100 calls, p50 50 ms, p99 99 ms (nearest rank)", r.stdout)
    check(by.get(("acme", "write")) == ["3", "1", "1", "300", "700"],
          "acme write: 3 calls, 1 denied, 1 error; latency over the calls that ran",
          r.stdout)
    check(by.get(("ops", "wipe")) == ["1", "1", "0", "-", "-"],
          "a tool only ever refused has no latency ('-', not 0)", r.stdout)
    check(by.get(("ops", "status")) == ["1", "0", "0", "5", "5"], "old rows count without --since",
          r.stdout)
    check(t is not None and [k for k in by] == sorted(by),
          "rows sorted by server, then tool", r.stdout)
    check(not any(c[1] in ("egress", "tools_execute") or c[0] == "host-guard" for c in t or []),
          "refusal families, execution rows and host-guard rows are not in the table", r.stdout)
    check("\x1b" not in r.stdout and "x\\u001b[2Jy" in r.stdout,
          "a tool name's escape sequence is shown, never sent to the terminal", r.stdout)
    check(("acme", "search") in by and by[("acme", "search")][0] == "100",
          "another project's calls are not counted", r.stdout)

    r = sb.run("audit", "--calls", "--all")
    by_all = {(c[0], c[1]): c[2:] for c in (table(r.stdout) or [])}
    check(by_all.get(("acme", "search")) == ["101", "0", "0", "51", "100"],
          "--all: every project's calls in the table (101 calls: p99 is rank 100)", r.stdout)

    r = sb.run("audit", "--calls", "--since", "1d")
    by = {(c[0], c[1]): c[2:] for c in (table(r.stdout) or [])}
    check(r.returncode == 0 and ("ops", "status") not in by and ("acme", "search") in by and
          r.stdout.startswith("105 calls · 4 tools · 2 denied by policy"),
          "--since 1d leaves out the rows of three days ago, in the summary too",
          r.stdout + r.stderr)
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(OLD - 60))
    r = sb.run("audit", "--calls", "--since", iso)
    check(r.returncode == 0 and r.stdout.startswith("106 calls"),
          "--since an ISO time before the old rows keeps them", r.stdout + r.stderr)
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+01:00", time.gmtime(OLD + 60 + 3600))
    r = sb.run("audit", "--calls", "--since", iso)
    check(r.returncode == 0 and r.stdout.startswith("105 calls"),
          "--since with an offset is read in that offset", r.stdout + r.stderr)
    day = time.strftime("%Y-%m-%d", time.gmtime(NOW + 2 * 86400))
    r = sb.run("audit", "--calls", "--since", day)
    check(r.returncode == 0 and r.stdout.startswith("0 calls") and "SERVER" not in r.stdout,
          "--since a day still to come: nothing, and no empty table", r.stdout + r.stderr)

    r = sb.run("audit", "--calls", "--server", "acme")
    by = {(c[0], c[1]): c[2:] for c in (table(r.stdout) or [])}
    check(sorted(by) == [("acme", "search"), ("acme", "write")] and
          r.stdout.startswith("103 calls · 2 tools · 1 denied by policy"),
          "--server narrows the table and the summary", r.stdout)
    r = sb.run("audit", "--calls", "--tool", "wipe", "--server", "ops")
    by = {(c[0], c[1]): c[2:] for c in (table(r.stdout) or [])}
    check(sorted(by) == [("ops", "wipe")], "--tool with --server", r.stdout)
    r = sb.run("report", "calls", "--tool", "search", "--since", "2d")
    by = {(c[0], c[1]): c[2:] for c in (table(r.stdout) or [])}
    check(r.returncode == 0 and sorted(by) == [("acme", "search")],
          "report calls takes the same filters", r.stdout + r.stderr)

    # --json: the same table, in the shape docs/json.md documents
    r = sb.run("audit", "--calls", "--json", "--server", "acme")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("schema_version") == 1 and j.get("command") == "audit" and
          j.get("calls") == 103 and j.get("filter") == {"since": None, "server": "acme",
                                                          "tool": None},
          "--json: envelope, filtered counts, the filter echoed", r.stdout + r.stderr)
    check(j.get("table") == [
        {"server": "acme", "tool": "search", "calls": 100, "denied": 0, "errors": 0,
         "p50_ms": 50, "p99_ms": 99},
        {"server": "acme", "tool": "write", "calls": 3, "denied": 1, "errors": 1,
         "p50_ms": 300, "p99_ms": 700}],
        "--json: one object per server/tool, the text table's numbers", r.stdout)
    r = sb.run("audit", "--calls", "--json", "--tool", "wipe")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("table") and j["table"][0]["p50_ms"] is None and j["table"][0]["p99_ms"] is None,
          "--json: no latency is null, never 0", r.stdout)
    r = sb.run("audit", "--calls", "--json", "--since", "1h")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(isinstance(j.get("filter", {}).get("since"), int) and
          abs(j["filter"]["since"] - (NOW - 3600)) < 3600,
          "--json: --since echoed as unix seconds", r.stdout)

    # a bad --since is a usage error (exit 2) that says what is accepted
    for bad in ("yesterday", "1y", "-1h", "2026-13-01", "2026-02-30", "2026-12-01T25:00",
                "2026-12-01T10:00+1", "", "1h ago"):
        r = sb.run("audit", "--calls", "--since", bad)
        check(r.returncode == 2 and ("--since '%s' is neither a duration" % bad) in r.stderr and
              r.stdout == "", "bad --since %r: usage error, exit 2, clear message" % bad,
              r.stdout + r.stderr)
    r = sb.run("audit", "--calls", "--json", "--since", "soon")
    j = json.loads(r.stdout) if r.stdout.startswith("{") else {}
    check(r.returncode == 2 and j.get("ok") is False and j.get("exit_code") == 2 and
          "--since 'soon'" in j.get("errors", [{}])[0].get("message", ""),
          "bad --since under --json: the error document, exit 2", r.stdout + r.stderr)
    r = sb.run("report", "calls", "--since", "soon")
    check(r.returncode == 2 and "agentstack report calls --help" in r.stderr,
          "report calls: the usage error points at its own help", r.stderr)
    r = sb.run("audit", "--verify", "--since", "1h")
    check(r.returncode == 2, "--since goes with --calls only", r.stderr)

done()
