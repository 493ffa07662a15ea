"""tools_execute's file system, written as the attacks on it
(docs/tools-execute.md, "Enforcement matrix").

A program tries to write the root file system — /, /usr, /etc, /app (a new
file and its own staged source), /tmp, the home — and each write is refused;
the one file it may write is the result file. A program that writes past the
4 MiB file-size limit is stopped with Error [resource-limit] naming the
file-size limit, its audit row names the limit, and nothing is left behind.

These go through Node's permission model, the outer layer. The layer beneath
it (the read-only root and binds, the noexec /tmp and /dev/shm, their 16 MiB,
RLIMIT_FSIZE) is attacked by a shell in the same confinement in
tests/unit/sandbox/test_executor.c.

The runtime is found as test_tools_execute.py finds it."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, skip  # noqa: E402
from mcpclient import Gateway, audit_rows, is_error, text  # noqa: E402
from test_tools_execute import NODE, category, execute, machine, no_leftovers, project  # noqa: E402

TARGETS = ["/as-pwn", "/usr/as-pwn", "/usr/bin/as-pwn", "/etc/passwd", "/app/as-pwn",
           "/app/source.ts", "/tmp/as-pwn", "/dev/shm/as-pwn", "/root/as-pwn"]


def own_rows(s):
    return [r for r in audit_rows(s)
            if r.get("server") == "agentstack" and r.get("tool") == "tools_execute"]


def writes_refused(s, gw):
    code = ("import fs from 'node:fs';\n"
            f"const targets: string[] = {json.dumps(TARGETS)};\n"
            "const got: Record<string, string> = {};\n"
            "for (const t of targets) {\n"
            "  try { fs.writeFileSync(t, 'pwned'); got[t] = 'WROTE'; }\n"
            "  catch (e: any) { got[t] = String(e.code); }\n"
            "  try { fs.mkdirSync(t + '.d'); got[t + '.d'] = 'WROTE'; }\n"
            "  catch (e: any) { got[t + '.d'] = String(e.code); }\n"
            "}\n"
            "fs.writeFileSync('/agentstack-result.json', 'null');\n"
            "export default got;")
    r = execute(gw, code)
    body = json.loads(text(r)) if r and not is_error(r) else {}
    got = body.get("result") or {}
    check(len(got) == 2 * len(TARGETS), "root writes: the program ran every attempt", text(r))
    wrote = sorted(t for t, v in got.items() if v == "WROTE")
    check(not wrote, "root writes: no write or mkdir on /, /usr, /etc, /app, /tmp, /dev/shm "
          "or the home succeeded", wrote)
    check(all(v == "ERR_ACCESS_DENIED" for v in got.values()),
          "root writes: each refused by the permission model (ERR_ACCESS_DENIED)", got)
    no_leftovers(s, "root writes")

    r = execute(gw, "import fs from 'node:fs';\n"
                    "fs.writeFileSync('/agentstack-result.json', '{\"x\":1}');\n"
                    "export default { wrote: fs.readFileSync('/app/source.ts', 'utf8').length };")
    body = json.loads(text(r)) if r and not is_error(r) else {}
    check(isinstance((body.get("result") or {}).get("wrote"), int),
          "the result file is writable and /app readable (what the program may do)", text(r))


def file_size_limit(s, gw):
    r = execute(gw, "import fs from 'node:fs';\n"
                    "fs.writeFileSync('/agentstack-result.json', 'x'.repeat(5 * 1024 * 1024));\n"
                    "export default 1;")
    check(is_error(r) and category(r) == "resource-limit" and "file-size" in text(r),
          "file size: writing past 4 MiB is stopped with Error [resource-limit] (file-size)",
          text(r))
    no_leftovers(s, "file size")
    row = own_rows(s)[-1] if own_rows(s) else {}
    check(row.get("detail") == "resource-limit" and row.get("limit") == "fileSize",
          "file size: the execution's row names the fileSize limit", row)

    # A result past the limit, written by the bootstrap itself: the same stop.
    r = execute(gw, "export default 'y'.repeat(5 * 1024 * 1024);")
    check(is_error(r) and category(r) == "resource-limit" and "file-size" in text(r),
          "file size: a result past 4 MiB is stopped the same way", text(r))
    no_leftovers(s, "file size (result)")


def main():
    if not NODE:
        skip("no Node.js >= 22.15 (run tests/e2e/setup_node.sh, or set AS_TEST_NODE)")
    with Sandbox() as s:
        machine(s)
        project(s)
        with Gateway(s) as gw:
            gw.initialize()
            writes_refused(s, gw)
            file_size_limit(s, gw)
    done()


if __name__ == "__main__":
    main()
