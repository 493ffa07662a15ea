"""agentstack report <run-id>: egress grouped by host with allowed/denied
counts, and the one-line timeline (docs/sandbox.md, "The flight recorder").

The run's record is written here in the documented event format, with
chosen timestamps, so the buckets are known without timing anything.
"""
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

T0 = 1767225600
RID = "r-00000000ab"


def write_run(ah, rid, events, posture="lockdown"):
    d = os.path.join(ah, "runs", rid)
    os.makedirs(d, mode=0o700)
    with open(os.path.join(d, "posture"), "w") as f:
        f.write(posture + "\n")
    prev = "0" * 64
    with open(os.path.join(d, "events.jsonl"), "wb") as f:
        for e in events:
            line = json.dumps(dict(e, prev=prev), separators=(",", ":"),
                              ensure_ascii=False).encode()
            f.write(line + b"\n")
            prev = hashlib.sha256(line).hexdigest()


def egress(ts, host, allowed, port=443, server="shtest", short=None):
    e = {"event": "egress", "ts": ts, "server": server, "host": host, "port": port,
         "allowed": allowed, "layer": "default" if allowed else "machine"}
    if not allowed:
        e["rule"] = "denied by [policy.egress] rule \"!%s\" (machine policy)" % host
        e["short"] = short or "denied by rule \"!%s\" (machine policy)" % host
    e["via"] = "connect"
    return e


with Sandbox() as sb:
    ev = [{"event": "sandbox_started", "ts": T0, "image": "host", "workspace": "/w",
           "harness": "shtest", "posture": "lockdown"}]
    ev.append(egress(T0 + 2, "api.example.com", True))
    # an agent retrying a blocked host: 40 requests over its second minute
    ev += [egress(T0 + 60 + i, "blocked.invalid", False) for i in range(40)]
    ev.append(egress(T0 + 250, "api.example.com", True))
    ev.append(egress(T0 + 250, "api.example.com", False, port=8443,
                     short="denied: port 8443 is not allowed"))
    ev.append({"event": "sandbox_exited", "ts": T0 + 300, "code": 0, "duration_ms": 300000})
    write_run(sb.ah, RID, ev)

    r = sb.run("report", RID)
    out = r.stdout
    check(r.returncode == 0, "report prints the run", out + r.stderr)
    check("  Egress    43 requests to 2 hosts · 2 allowed · 41 denied\n" in out,
          "the totals open the Egress block", out)
    lines = [l for l in out.splitlines() if "→ blocked.invalid" in l]
    check(len(lines) == 1 and re.search(
        r'✗ shtest → blocked\.invalid +40 denied  denied by rule "!blocked\.invalid" '
        r'\(machine policy\)$', lines[0]),
        "40 blocked requests to one host: one line, with the count and the rule", out)
    lines = [l for l in out.splitlines() if "→ api.example.com" in l]
    check(len(lines) == 1 and "✗ shtest → api.example.com:443,8443" in lines[0] and
          "2 allowed · 1 denied  denied: port 8443 is not allowed" in lines[0],
          "a host with allowed and denied requests: one line, both counts, its ports", out)
    check(out.index("→ api.example.com") < out.index("→ blocked.invalid"),
          "hosts in the order first seen", out)
    # 250 s of traffic -> 10 s marks: bucket 0 (1 request), 6..9 (40), 25 (2)
    m = re.search(r"  Timeline  \|(.*)\|  10s per mark over 4m20s · peak 10 requests\n", out)
    check(m is not None, "the timeline: one line, its bucket, span and peak", out)
    if m:
        marks = m.group(1)
        check(len(marks) == 26 and marks[0] == "▁" and marks[6:10] == "████" and
              marks[25] == "▂" and marks[1:6].strip() == "" and marks[10:25].strip() == "",
              "the marks: one per 10 s bucket, height against the busiest, blank when none",
              repr(marks))
    check(out.count("\n") < 15, "a compact report (43 requests, under 15 lines)", out)

    r = sb.run("report", RID, "--json")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    eg = j.get("egress") or {}
    check(len(j.get("events", [])) == len(ev), "--json keeps every event", r.stdout[:300])
    check(eg.get("requests") == 43 and eg.get("allowed") == 2 and eg.get("denied") == 41 and
          [h["host"] for h in eg.get("hosts", [])] == ["api.example.com", "blocked.invalid"],
          "--json: egress summed up by host", eg)
    h = (eg.get("hosts") or [{}, {}])[1]
    check(h.get("denied") == 40 and h.get("allowed") == 0 and h.get("ports") == [443] and
          h.get("servers") == ["shtest"] and len(h.get("rules", [])) == 1,
          "--json: a host's counts, ports, servers, rules", h)
    t = eg.get("timeline") or {}
    check(t.get("start") == T0 and t.get("bucket_s") == 10 and len(t.get("requests", [])) == 26
          and sum(t["requests"]) == 43 and sum(t["denied"]) == 41,
          "--json: the timeline's buckets", t)

    # a run with no egress at all
    write_run(sb.ah, "r-00000000ac", [ev[0], ev[-1]])
    r = sb.run("report", "r-00000000ac")
    check(r.returncode == 0 and "Egress    (no egress recorded)" in r.stdout and
          "Timeline" not in r.stdout, "no egress: said so, no timeline", r.stdout)
    r = sb.run("report", "r-00000000ac", "--json")
    check(r.returncode == 0 and json.loads(r.stdout).get("egress", 0) is None,
          "--json: egress null without egress", r.stdout)

    # a hostile host name cannot drive the terminal
    write_run(sb.ah, "r-00000000ad", [ev[0], egress(T0, "evil\x1b[2J.test", False)])
    r = sb.run("report", "r-00000000ad")
    check(r.returncode == 0 and "\x1b" not in r.stdout and "evil\\u001b[2J.test" in r.stdout,
          "a host name's escape sequence is shown, not sent", r.stdout)

done()
