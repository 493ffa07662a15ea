"""Exit codes: plain `doctor` exits 1 when it reports an error, as
`doctor --ci` does (0 with none, 0 with no manifest at all: needs_setup),
and docs/exit-codes.md has a row for every visible command and is linked
from docs/commands.md."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

CLEAN = """version = 1

[servers.fs]
type = "stdio"
command = "npx"
"""
MISSING_SECRET = CLEAN + 'env = { T = "${NOPE_EXIT_TOKEN}" }\n'

with Sandbox() as sb:
    # no manifest: needs_setup, not an error
    p = sb.run("doctor")
    check(p.returncode == 0 and "needs_setup" in p.stdout, "no manifest: doctor exits 0",
          p.stdout + p.stderr)

    sb.write(".agentstack/agentstack.toml", MISSING_SECRET)
    plain, ci = sb.run("doctor"), sb.run("doctor", "--ci")
    check("✗ ${NOPE_EXIT_TOKEN} not found" in plain.stdout, "doctor reports the error",
          plain.stdout)
    check(plain.returncode == 1, "plain doctor with an error exits 1",
          "%d\n%s%s" % (plain.returncode, plain.stdout, plain.stderr))
    check("doctor found" in plain.stderr and "error(s)" in plain.stderr,
          "and says so on stderr", plain.stderr)
    check(ci.returncode == 1, "doctor --ci with the error still exits 1", ci.stderr)
    j = sb.run("doctor", "--json")
    check(j.returncode == 1 and json.loads(j.stdout)["errors"] >= 1,
          "doctor --json: the same exit code, the document still printed", j.stdout)

    sb.write(".agentstack/agentstack.toml", CLEAN)
    w = sb.run("lock", "--write")
    check(w.returncode == 0, "lock --write", w.stderr)
    p = sb.run("doctor")
    check(p.returncode == 0 and "0 errors" in p.stdout,
          "no error (untrusted is not one): doctor exits 0", p.stdout + p.stderr)

    # the table covers every visible command
    inv = json.loads(sb.run("help", "--all", "--json").stdout)
    with open(os.path.join(SRC, "docs", "exit-codes.md")) as f:
        table = f.read()
    rows = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            rows |= set(re.findall(r"`([a-z][a-z -]*?)`", first))
    for c in inv["commands"]:
        if not c["hidden"]:
            check(c["name"] in rows, "docs/exit-codes.md has a row for '%s'" % c["name"])
    with open(os.path.join(SRC, "docs", "commands.md")) as f:
        check("(exit-codes.md)" in f.read(), "docs/commands.md links docs/exit-codes.md")

done()
