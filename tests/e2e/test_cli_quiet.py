"""-q/--quiet, a global option: accepted anywhere on the line (before the
command, after it, among its options); holds back warnings, progress and
the report of what a command changed; keeps errors (on stderr, with the
exit code they have without -q) and the data a command was asked for
(lists, previews, --json documents)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.filesystem]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST)
    lock = os.path.join(sb.project, ".agentstack", "agentstack.lock")

    # errors stay: no project here, same exit code as without -q
    empty = os.path.join(sb.root, "empty")
    os.makedirs(empty)
    loud = H.run(sb, "lock", cwd=empty)
    for args in (("-q", "lock"), ("lock", "--quiet"), ("lock", "-q")):
        p = H.run(sb, *args, cwd=empty)
        check(p.returncode == loud.returncode == 1 and "error:" in p.stderr and p.stdout == "",
              "%s without a project: the error stays, exit 1" % " ".join(args),
              p.stdout + p.stderr)

    # a write: its report held back, the work done
    p = H.run(sb, "lock", "--write", "-q")
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "",
          "lock --write -q: silent", p.stdout + p.stderr)
    check(os.path.exists(lock), "lock --write -q still wrote the lock")
    os.unlink(lock)
    p = H.run(sb, "--quiet", "lock", "--write")
    check(p.returncode == 0 and p.stdout == "" and os.path.exists(lock),
          "--quiet before the command works the same", p.stdout + p.stderr)
    p = H.run(sb, "lock", "--write")
    check("agentstack.lock" in p.stdout, "without -q the report prints", p.stdout)

    # a refusal: the error stays, the report does not
    loud = H.run(sb, "apply", "--write")
    p = H.run(sb, "apply", "-q", "--write")
    check(loud.returncode == p.returncode == 1, "apply --write untrusted: exit 1 either way",
          p.stderr)
    check(p.stdout == "" and "error: refusing to render MCP servers" in p.stderr,
          "apply -q --write: only the error", p.stdout + p.stderr)

    # the data asked for stays: a preview, a list, a JSON document
    p = H.run(sb, "apply", "-q")
    check(p.returncode == 0 and "filesystem" in p.stdout, "apply -q (a preview) still shows it",
          p.stdout)
    d = json.loads(H.run(sb, "-q", "apply", "--json", "--write").stdout)
    check(d["command"] == "apply" and d["ok"] is False, "-q keeps the --json document", d)

    # warnings go: a corrupt trust store warns without -q, not with it
    with open(os.path.join(sb.ah, "trust.json"), "w") as f:
        f.write("{not json")
    loud = H.run(sb, "trust", "--list")
    check("warning:" in loud.stderr, "trust --list warns about the corrupt store", loud.stderr)
    p = H.run(sb, "trust", "--list", "-q")
    check(p.returncode == 0 and "warning:" not in p.stderr and
          p.stdout == loud.stdout and "no trusted projects" in p.stdout,
          "trust --list -q: the list, no warning", p.stdout + p.stderr)

    # -q is in the inventory as a global option
    inv = json.loads(H.run(sb, "help", "--all", "--json").stdout)
    g = {o["long"]: o for o in inv["global_options"]}
    check("--quiet" in g and g["--quiet"].get("short") in ("-q", "q"),
          "--quiet/-q listed with the global options", inv["global_options"])

done()
