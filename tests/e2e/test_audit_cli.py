"""agentstack audit --verify / --calls.

The chain is written here by an independent Python implementation of the
documented format (docs/audit.md), so the binary's verifier is checked
against the documentation, not against itself.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, append_chain, check, done, write_anchor  # noqa: E402

def row(project, server, tool, outcome, layer=None):
    r = {"ts": 1767225600, "pid": 42, "project": project, "server": server, "tool": tool,
         "args_digest": "a41c09e7b2d3", "outcome": outcome}
    if outcome == "denied":
        r["detail"] = 'denied by [policy.tools] rule "!delete_*"'
    r["ms"] = 0
    if layer:
        r["rule"] = "!delete_*"
        r["layer"] = layer
    return r


with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", "")
    root = os.path.realpath(sb.project)
    calls = os.path.join(sb.ah, "audit", "calls.jsonl")
    trust = os.path.join(sb.ah, "audit", "trust.jsonl")

    r = sb.run("audit", "--verify")
    check(r.returncode == 0 and r.stdout == "intact\n",
          "verify with no logs is intact",
          r.stdout + r.stderr)

    guard_row = {"ts": 1767225600, "pid": 43, "project": root, "server": "host-guard",
                 "tool": "bash: cat .env", "args_digest": "", "outcome": "denied",
                 "detail": "a command naming .env was refused", "ms": 0}
    append_chain(calls, [
        row(root, "acme", "search_docs", "ok"),
        row(root, "acme", "delete_index", "denied", "machine"),
        row(root, "acme", "fence", "denied"),
        row("/elsewhere", "other", "get", "ok"),
        guard_row,
        dict(guard_row, tool="read: .env"),
    ])
    append_chain(trust, [{"ts": 1, "action": "grant", "project": root, "digest": "sha256:00"}])

    r = sb.run("audit", "--verify")
    check(r.returncode == 0 and r.stdout == "intact\n", "verify intact", r.stdout + r.stderr)

    r = sb.run("audit", "--calls")
    check(r.returncode == 0 and
          r.stdout.startswith("2 calls · 2 tools · 1 denied by policy — digests, never values\n"
                              "2 commands refused by the host guard\n\nSERVER "),
          "seed summary line for the current project; host-guard refusals apart, "
          "never counted as brokered calls", r.stdout + r.stderr)
    r = sb.run("audit", "--calls", cwd=os.path.join(sb.project, ".agentstack"))
    check(r.stdout.startswith("2 calls · 2 tools · 1 denied"),
          "same project from inside .agentstack/",
          r.stdout + r.stderr)
    r = sb.run("audit", "--calls", "--all")
    check(r.stdout.startswith("3 calls · 3 tools · 1 denied"),
          "--all counts every project",
          r.stdout + r.stderr)
    r = sb.run("audit", "--calls", "--json")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("calls") == 2 and j.get("denied") == 1 and j.get("project") == root and
          j.get("guard_denied") == 2 and
          not any(k.startswith("host-guard") for k in j.get("by_tool", {})),
          "--json",
          r.stdout + r.stderr)
    check("hunter2" not in open(calls).read(), "no argument values in the log")

    # tamper: change a value on line 2 -> line 3 no longer links
    with open(calls) as f:
        lines = f.read().split("\n")
    lines[1] = lines[1].replace('"pid":42', '"pid":43')
    with open(calls, "w") as f:
        f.write("\n".join(lines))
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout == "%s:3\n" % calls,
          "tamper reported as file:line, exit 1",
          r.stdout + r.stderr)
    r = sb.run("audit", "--verify", trust)
    check(r.returncode == 0 and r.stdout == "intact\n", "one log can be named", r.stdout)

    # delete a line
    del lines[0]
    with open(calls, "w") as f:
        f.write("\n".join(lines))
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout == "%s:1\n" % calls,
          "deleted first line reported at line 1",
          r.stdout + r.stderr)

    for args in (["audit"], ["audit", "--verify", "--calls"], ["audit", "--verify", "--json"],
                 ["audit", "--bogus"]):
        r = sb.run(*args)
        check(r.returncode == 2, "usage error: %s" % " ".join(args), r.stderr)


def rechain(path, lines):
    """Rewrites path with every "prev" recomputed: what an editor of the log
    does to hide a removed row from the chain."""
    rows = [json.loads(x) for x in lines if x]
    for r in rows:
        r.pop("prev")
    os.remove(path)
    append_chain(path, rows)


# The chain's ends: its anchor (calls.jsonl.head) records the rows and the
# digests of the first and last, sealed with the audit key.
with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", "")
    root = os.path.realpath(sb.project)
    calls = os.path.join(sb.ah, "audit", "calls.jsonl")
    append_chain(calls, [row(root, "acme", "t%d" % i, "ok") for i in range(5)])
    with open(calls) as f:
        good = f.read()
    with open(calls + ".head") as f:
        good_head = f.read()

    def restore():
        with open(calls, "w") as f:
            f.write(good)
        with open(calls + ".head", "w") as f:
            f.write(good_head)

    r = sb.run("audit", "--verify")
    check(r.returncode == 0 and r.stdout == "intact\n", "anchored log verifies",
          r.stdout + r.stderr)

    # rows cut from the end: the chain alone still links
    with open(calls, "w") as f:
        f.write("".join(good.splitlines(True)[:3]))
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout == "%s:4\n" % calls and
          "rows are missing: the anchor records 5 rows, the file holds 3" in r.stderr,
          "truncation from the end is reported, naming the file", r.stdout + r.stderr)

    # a row deleted and the chain recomputed
    restore()
    lines = good.split("\n")
    rechain(calls, lines[:2] + lines[3:])
    with open(calls + ".head", "w") as f:
        f.write(good_head)  # the anchor as it was
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout.startswith(calls + ":") and
          "the anchor records 5 rows, the file holds 4" in r.stderr,
          "a deleted row with a recomputed chain is reported", r.stdout + r.stderr)

    # ... and the anchor recomputed too, without the audit key: the seal fails
    key = os.path.join(sb.ah, "audit", "key")
    os.rename(key, key + ".real")
    with open(key, "wb") as f:
        f.write(os.urandom(32))
    write_anchor(sb.ah, calls)
    os.rename(key + ".real", key)
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout == calls + ".head\n" and
          "does not carry this home's seal" in r.stderr,
          "an anchor rewritten without the key is reported", r.stdout + r.stderr)

    # rows rewritten in place and rechained, count kept: first/last differ
    restore()
    lines = good.split("\n")
    edited = [lines[0].replace('"t0"', '"tX"')] + lines[1:]
    rechain(calls, edited)
    with open(calls + ".head", "w") as f:
        f.write(good_head)
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout == "%s:1\n" % calls and
          "rows were rewritten since they were anchored" in r.stderr,
          "a recomputed chain of the same length is reported", r.stdout + r.stderr)

    # the anchor removed
    restore()
    os.remove(calls + ".head")
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout == calls + "\n" and "no anchor" in r.stderr,
          "a missing anchor is reported", r.stdout + r.stderr)
    # the log removed, its anchor left
    restore()
    os.remove(calls)
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and "rows are missing" in r.stderr,
          "a removed log whose anchor remains is reported", r.stdout + r.stderr)

    # What the anchor cannot tell (docs/audit.md): someone who can read the
    # audit key and rewrite both files. Asserted so the docs stay true.
    restore()
    lines = good.split("\n")
    rechain(calls, lines[:2] + lines[3:])
    r = sb.run("audit", "--verify")
    check(r.returncode == 0, "a rewrite with the audit key itself is not detectable "
          "(documented)", r.stdout + r.stderr)

done()
