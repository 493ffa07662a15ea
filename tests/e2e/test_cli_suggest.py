"""Did-you-mean, from the one option parser and the adapter registry: a
mistyped flag names the closest one (`apply --wirte` -> --write), the start
of exactly one flag names it (`--allow` -> --allow-unresolved), a start too
short to mean one names none; a mistyped or short adapter id given to --target (or to
connect) names the adapter (`claude` -> claude-code). Always exit 2, the
suggestion on stderr, and with --json inside the error document."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.fs]
type = "stdio"
command = "npx"
"""

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.write_manifest(sb, MANIFEST)

    def usage(args, want, what):
        p = H.run(sb, *args)
        check(p.returncode == 2, what + ": exit 2", "%d %s" % (p.returncode, p.stderr))
        if want:
            check(want in p.stderr, what + ": suggests " + want, p.stderr)
        else:
            check("did you mean" not in p.stderr, what + ": no suggestion", p.stderr)
        return p

    usage(["apply", "--wirte"], "did you mean '--write'?", "apply --wirte")
    usage(["lock", "--wrte"], "did you mean '--write'?", "lock --wrte")
    usage(["apply", "--allow"], "did you mean '--allow-unresolved'?", "apply --allow")
    usage(["apply", "--pr"], None, "apply --pr (too short to mean one)")
    usage(["apply", "--target", "claude"], "did you mean 'claude-code'?", "--target claude")
    usage(["apply", "--target", "claud-code"], "did you mean 'claude-code'?",
          "--target claud-code")
    usage(["diff", "--target", "copilot"], "did you mean 'copilot-cli'?", "diff --target copilot")
    usage(["connect", "cursr"], "did you mean 'cursor'?", "connect cursr")
    usage(["apply", "--target", "zzzzzz"], None, "--target zzzzzz")

    p = H.run(sb, "apply", "--json", "--target", "claude")
    d = json.loads(p.stdout)
    check(p.returncode == 2 and d["exit_code"] == 2 and
          any("did you mean 'claude-code'?" in e["message"] for e in d["errors"]),
          "--json: the suggestion is in the error document", p.stdout)

done()
