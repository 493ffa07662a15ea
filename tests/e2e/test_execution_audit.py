"""A tools_execute execution's own audit row, written as the attacks on it
(docs/tools-execute.md, "Evidence"; docs/audit.md).

Every execution that ends leaves one row in the call audit, on the same
chain as its inner calls: how it ended (ok, the error category, the limit
that stopped it), its duration, its inner calls, its output and result
sizes and the SHA-256 of its code — never the code, the input or the
output. `agentstack report x-<id>` shows that summary beside the inner
calls. An ok run, a timeout and two limit kills are checked row by row; an
execution without a call is reported too. The row is evidence: when the
call audit cannot be written, nothing is started, and an answer whose row
could not be appended is withheld.

The runtime is found as test_tools_execute.py finds it (AS_TEST_NODE, the
setup_node.sh cache, `node` on PATH)."""
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, pids_with, skip  # noqa: E402
from mcpclient import Gateway, audit_rows, is_error, text  # noqa: E402
from test_tools_execute import (GUEST_MARK, NODE, category, execute,  # noqa: E402
                                expected_bounds, machine, no_leftovers, project, staged)

CODE_MARK = "CODEMARKERq7"
INPUT_MARK = "INPUTMARKERz3"
OUT_MARK = "STDOUTMARKERk9"
RESULT_MARK = "RESULTMARKERw5"


def own_rows(s):
    return [r for r in audit_rows(s)
            if r.get("server") == "agentstack" and r.get("tool") == "tools_execute"]


def last_own(s):
    rows = own_rows(s)
    return rows[-1] if rows else {}


def audit_text(s):
    with open(os.path.join(s.ah, "audit", "calls.jsonl"), encoding="utf-8") as f:
        return f.read()


def report(s, xid):
    r = s.run("report", xid)
    j = s.run("report", xid, "--json")
    try:
        doc = json.loads(j.stdout)
    except ValueError:
        doc = {}
    return r, doc


def ok_run(s, gw):
    code = ("import { tools, input } from 'agentstack:runtime';\n"
            f"// {CODE_MARK}\n"
            f"console.log('{OUT_MARK}');\n"
            "const a: any = await tools.demo__hello({});\n"
            f"export default {{ said: a.content[0].text, tag: input.tag + '{RESULT_MARK}' }};")
    r = execute(gw, code, input={"tag": INPUT_MARK})
    body = json.loads(text(r)) if r and not is_error(r) else {}
    check(body.get("calls") == 1, "ok run: the program ran and made its call", text(r))
    row = last_own(s)
    inner = [x for x in audit_rows(s) if x.get("tool") == "hello"]
    xid = row.get("execution", "")
    check(xid.startswith("x-") and inner and inner[-1].get("execution") == xid,
          "ok run: one row of its own, naming the x-id its inner call names", row)
    rows = audit_rows(s)
    check(rows and rows[-1] == row, "ok run: the row is written when it ends, after its calls",
          rows[-2:])
    check(row.get("outcome") == "ok" and "detail" not in row and "limit" not in row,
          "ok run: outcome ok, no category or limit", row)
    check(row.get("ms") == body.get("durationMs") and isinstance(row.get("ms"), int),
          "ok run: its duration is the answer's durationMs", (row.get("ms"), body))
    check(row.get("calls") == 1, "ok run: the number of inner calls", row)
    check(row.get("limits") in expected_bounds(),
          "ok run: the row names what bounded it (cgroup-v1 on a root host with cgroup v1)",
          (row.get("limits"), expected_bounds()))
    check(row.get("output_bytes") == body.get("stdoutBytes", -1) + body.get("stderrBytes", -1)
          and row.get("output_bytes", 0) > len(OUT_MARK),
          "ok run: output_bytes = stdout + stderr bytes", (row, body))
    want = len(json.dumps(body.get("result"), separators=(",", ":"), ensure_ascii=False)
               .encode())
    check(row.get("result_bytes") == want, "ok run: result_bytes is the result's size",
          (row.get("result_bytes"), want))
    check(row.get("code_sha256") == hashlib.sha256(code.encode()).hexdigest(),
          "ok run: code_sha256 is the SHA-256 of the code", row)
    check(len(row.get("args_digest", "")) == 12 and row.get("pid") and row.get("project"),
          "ok run: a keyed argument digest, the gateway's pid and the project, like any row",
          row)
    log = audit_text(s)
    leaked = [m for m in (CODE_MARK, INPUT_MARK, OUT_MARK, RESULT_MARK, "reviewed helper")
              if m in log]
    check(not leaked, "ok run: no code, input, output or result value is in the audit", leaked)
    v = s.run("audit", "--verify")
    check(v.returncode == 0 and "intact" in v.stdout,
          "ok run: the row is on the call audit's one chain (audit --verify: intact)",
          v.stdout + v.stderr)
    calls = s.run("audit", "--calls", "--json")
    doc = json.loads(calls.stdout) if calls.returncode == 0 else {}
    check("agentstack__tools_execute" not in doc.get("by_tool", {}),
          "ok run: audit --calls counts the inner calls, not the execution's own row", doc)

    r, doc = report(s, xid)
    out = r.stdout
    check(r.returncode == 0 and f"Outcome   ok · {row.get('ms')}ms · 1 call\n" in out
          and f"Sizes     {row.get('output_bytes')} bytes of output · "
              f"{row.get('result_bytes')} bytes of result" in out
          and f"Code      sha256:{row.get('code_sha256')}" in out
          and "✓ demo__hello  ok" in out,
          "ok run: report x-<id> shows the summary beside the inner call", out + r.stderr)
    sm = doc.get("summary", {})
    check(sm == {"outcome": "ok", "limits": row.get("limits"), "ms": row.get("ms"), "calls": 1,
                 "output_bytes": row.get("output_bytes"),
                 "result_bytes": row.get("result_bytes"),
                 "code_sha256": row.get("code_sha256"), "ts": row.get("ts")}
          and doc.get("count") == 1 and doc.get("calls", [{}])[0].get("tool") == "hello",
          "ok run: report x-<id> --json has the summary and the inner calls", doc)


def no_call_run(s, gw):
    r = execute(gw, "export default 1")
    check(r and not is_error(r), "no call: the program ran", text(r))
    row = last_own(s)
    check(row.get("outcome") == "ok" and row.get("calls") == 0 and row.get("result_bytes") == 1,
          "no call: its own row (0 calls, a 1-byte result)", row)
    rep, doc = report(s, row.get("execution", "x-none"))
    check(rep.returncode == 0 and "Outcome   ok" in rep.stdout and doc.get("count") == 0
          and doc.get("summary", {}).get("calls") == 0,
          "no call: report x-<id> shows it (no inner call)", rep.stdout + rep.stderr)


def timeout_run(s, gw):
    code = f"// {CODE_MARK}\nfor (;;) {{}}\nexport default 1;"
    r = execute(gw, code, limits={"timeoutMs": 1500})
    check(is_error(r) and category(r) == "timeout", "timeout: Error [timeout]", text(r))
    no_leftovers(s, "timeout")
    row = last_own(s)
    check(row.get("outcome") == "error" and row.get("detail") == "timeout"
          and row.get("limit") == "timeoutMs",
          "timeout: the row says timeout, stopped by timeoutMs", row)
    check(1500 <= row.get("ms", 0) < 10000 and row.get("calls") == 0
          and row.get("result_bytes") == 0
          and row.get("code_sha256") == hashlib.sha256(code.encode()).hexdigest(),
          "timeout: its duration (>= the limit), no call, no result, the code's digest", row)
    rep, doc = report(s, row.get("execution", "x-none"))
    check(rep.returncode == 0 and "Outcome   timeout (limit timeoutMs)" in rep.stdout
          and doc.get("summary", {}).get("category") == "timeout"
          and doc.get("summary", {}).get("limit") == "timeoutMs",
          "timeout: report x-<id> shows the category and the limit", rep.stdout)


def limit_runs(s, gw):
    r = execute(gw, "const a: number[][] = [];\n"
                    "for (;;) a.push(new Array(1e6).fill(1.5));\nexport default 1;",
                limits={"timeoutMs": 15000})
    check(is_error(r) and category(r) == "resource-limit", "memory bomb: Error [resource-limit]",
          text(r))
    no_leftovers(s, "memory bomb")
    row = last_own(s)
    check(row.get("outcome") == "error" and row.get("detail") == "resource-limit"
          and row.get("limit") == "memory" and row.get("limits") in expected_bounds(),
          "memory bomb: the row says resource-limit, stopped by memory", row)
    rep, doc = report(s, row.get("execution", "x-none"))
    check("Outcome   resource-limit (limit memory)" in rep.stdout
          and doc.get("summary", {}).get("limit") == "memory",
          "memory bomb: report x-<id> names the limit", rep.stdout)

    r = execute(gw, "process.stdout.write('" + OUT_MARK + "'.repeat(10000));\n"
                    "await new Promise(r => setTimeout(r, 2000));\nexport default 1;",
                limits={"maxOutputBytes": 1024})
    check(is_error(r) and category(r) == "resource-limit", "output flood: Error [resource-limit]",
          text(r))
    no_leftovers(s, "output flood")
    row = last_own(s)
    check(row.get("detail") == "resource-limit" and row.get("limit") == "maxOutputBytes"
          and row.get("output_bytes", 0) > 1024,
          "output flood: stopped by maxOutputBytes, with the bytes it wrote", row)
    check(OUT_MARK not in audit_text(s), "output flood: none of its output is in the audit")


def fail_closed():
    with Sandbox() as s:
        machine(s)
        project(s)
        with Gateway(s) as gw:
            gw.initialize()
            r = execute(gw, "export default 1")
            check(r and not is_error(r), "fail closed: a first execution runs", text(r))
            n = len(own_rows(s))
            # The answer waits for the row: a log that turns unwritable while
            # the program runs withholds the answer.
            calls = os.path.join(s.ah, "audit", "calls.jsonl")
            rid = gw.start("tools/call", {"name": "tools_execute", "arguments": {
                "code": f"await new Promise(r => setTimeout(r, 1500));\n"
                        f"export default '{RESULT_MARK}';",
                "allowTools": ["demo__hello"]}})
            deadline = time.time() + 20
            while not pids_with(GUEST_MARK) and time.time() < deadline:
                time.sleep(0.02)
            os.rename(calls, calls + ".aside")
            os.mkdir(calls)
            rep = gw.wait(rid, 60)
            res = (rep or {}).get("result")
            check(is_error(res) and category(res) == "runtime-unavailable"
                  and "audit row could not be written" in text(res)
                  and RESULT_MARK not in text(res),
                  "fail closed: a run whose row cannot be appended has its answer withheld",
                  text(res))
            no_leftovers(s, "fail closed (withheld)")
            # Its row is not on the chain; nothing else was written instead.
            os.rmdir(calls)
            os.rename(calls + ".aside", calls)
            check(len(own_rows(s)) == n, "fail closed: no row was written for it elsewhere",
                  own_rows(s)[n:])
        # A fresh gateway, and a call audit that cannot be written before the start.
        with Gateway(s) as gw:
            gw.initialize()
            os.rename(calls, calls + ".aside")
            os.mkdir(calls)
            r = execute(gw, "export default 1")
            check(is_error(r) and category(r) == "runtime-unavailable"
                  and "call audit cannot be written" in text(r) and "nothing ran" in text(r),
                  "fail closed: with the call audit unwritable, nothing starts", text(r))
            check(not staged(s) and not pids_with(GUEST_MARK),
                  "fail closed: nothing was staged or run")
            os.rmdir(calls)
            os.rename(calls + ".aside", calls)


def main():
    if not NODE:
        skip("no Node.js >= 22.15 (run tests/e2e/setup_node.sh, or set AS_TEST_NODE)")
    with Sandbox() as s:
        machine(s)
        project(s)
        with Gateway(s) as gw:
            gw.initialize()
            ok_run(s, gw)
            no_call_run(s, gw)
            timeout_run(s, gw)
            limit_runs(s, gw)
    fail_closed()
    done()


if __name__ == "__main__":
    main()
