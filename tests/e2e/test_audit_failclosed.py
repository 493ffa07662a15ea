"""A brokered call whose audit row cannot be written is refused.

The attack: with `calls.jsonl` replaced by a directory, or by a symlink to
/dev/null, the gateway served calls and wrote no row, and `audit --verify`
said `intact`. Now the call is refused before any upstream I/O (the
upstream is never spawned), the reason is on stderr, the audit files are
opened without following symlinks, and `audit --verify` reports the file as
broken.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import FAKE, Gateway, audit_rows, grant, is_error, text  # noqa: E402


def project(sb, marker):
    os.makedirs(sb.ah, exist_ok=True)
    sb.write("fake.py", FAKE)
    sb.write("agentstack.toml",
             'version = 1\n[servers.ops]\ntype = "stdio"\ncommand = "python3"\n'
             'args = ["./fake.py", "--tools", "ping", "--marker", "%s"]\n' % marker)
    grant(sb)


def broken(sb, label, calls, marker):
    with Gateway(sb, "--auto-project") as g:
        g.initialize()
        c = g.call("ops__ping", {})
        check(is_error(c) and "the call audit cannot be written" in text(c) and
              "nothing ran" in text(c), f"{label}: the call is refused", c)
        c = g.call("ops__ping", {})
        check(is_error(c), f"{label}: and the next one", c)
        g.close()
        err = g.stderr()
    check(not os.path.exists(marker), f"{label}: the upstream was never started (no I/O)")
    check("refusing brokered calls" in err and "calls.jsonl" in err and
          err.count("refusing brokered calls") == 1,
          f"{label}: the reason is on stderr, once", err)
    r = sb.run("audit", "--verify")
    check(r.returncode == 1 and r.stdout.startswith(calls) and "intact" not in r.stdout,
          f"{label}: audit --verify reports the file as broken", r.stdout + r.stderr)


with Sandbox() as sb:
    marker = os.path.join(sb.root, "ops.started")
    project(sb, marker)
    audit = os.path.join(sb.ah, "audit")
    calls = os.path.join(audit, "calls.jsonl")
    os.makedirs(audit, mode=0o700, exist_ok=True)

    os.mkdir(calls)
    broken(sb, "calls.jsonl is a directory", calls, marker)
    os.rmdir(calls)

    os.symlink("/dev/null", calls)
    broken(sb, "calls.jsonl is a symlink to /dev/null", calls, marker)
    target = os.path.join(sb.root, "elsewhere.jsonl")
    os.remove(calls)
    os.symlink(target, calls)
    broken(sb, "calls.jsonl is a symlink elsewhere", calls, marker)
    check(not os.path.exists(target), "nothing was written through the symlink")
    os.remove(calls)

    # The anchor is evidence too: a symlinked anchor refuses the same way.
    os.symlink("/dev/null", calls + ".head")
    broken(sb, "calls.jsonl.head is a symlink", calls + ".head", marker)
    os.remove(calls + ".head")

    # Writable again: the call is brokered and recorded, the chain intact.
    with Gateway(sb, "--auto-project") as g:
        g.initialize()
        c = g.call("ops__ping", {})
        check(not is_error(c) and "ping: ok" in text(c), "a writable audit: the call runs", c)
        # The log is swapped for a directory while the gateway runs.
        shutil.move(calls, calls + ".moved")
        os.mkdir(calls)
        c = g.call("ops__ping", {})
        check(is_error(c) and "the call audit cannot be written" in text(c),
              "swapped while serving: the next call is refused", c)
        g.close()
    os.rmdir(calls)
    shutil.move(calls + ".moved", calls)
    rows = audit_rows(sb)
    check(len(rows) == 1 and rows[0]["tool"] == "ping" and rows[0]["outcome"] == "ok",
          "one call, one row", rows)
    r = sb.run("audit", "--verify")
    check(r.returncode == 0 and r.stdout == "intact\n", "the chain and its anchor verify",
          r.stdout + r.stderr)

done()
