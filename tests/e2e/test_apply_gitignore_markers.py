""".gitignore's managed block with markers that do not pair, written as the
attack: a start marker with no end marker (a hand edit, a cut-off write)
followed by the user's own lines. The old second apply deleted every line
from the orphan marker to the new block's end (`.env`, `secrets/`,
`private.key` un-ignored). Now apply never deletes a line agentstack did not
write: an unmatched marker (start without end, end without start, a second
block) is a refusal naming the line and the fix, the file is left byte for
byte, and once the user fixes it the block is managed again."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

START = "# >>> agentstack — generated project artifacts (machine-local) >>>"
END = "# <<< agentstack >>>"
MANIFEST = """version = 1

[servers.fs]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
"""
USER = ".env\nsecrets/\nprivate.key\n"

CASES = {
    "start without end": (f"node_modules/\n{START}\n/.codex/config.toml\n{USER}", 2,
                          "has no end marker"),
    "end without start": (f"node_modules/\n{USER}{END}\n", 5, "no start marker before it"),
    "two blocks": (f"{START}\n/a\n{END}\n{USER}{START}\n/b\n{END}\n", 7,
                   "a second agentstack block marker"),
}

for name, (text, line, why) in CASES.items():
    with Sandbox() as sb:
        H.fake_bin(sb, "codex")
        os.makedirs(os.path.join(sb.project, ".git"))
        H.write_manifest(sb, MANIFEST)
        H.trust(sb)
        gi = os.path.join(sb.project, ".gitignore")
        with open(gi, "w") as f:
            f.write(text)
        for attempt in ("first", "second"):
            r = H.run(sb, "apply", "--write", "--target", "codex")
            out = r.stdout + r.stderr
            check(H.read(gi) == text,
                  f"{name}: the {attempt} apply leaves .gitignore byte for byte", H.read(gi))
            check(r.returncode != 0 and f".gitignore:{line}:" in out and why in out,
                  f"{name}: the {attempt} apply refuses, naming line {line}", out)
            check("apply again" in out, f"{name}: the refusal says how to fix it", out)
        for u in (".env", "secrets/", "private.key"):
            check(u in H.read(gi), f"{name}: the user's '{u}' is still ignored")
        d = H.run(sb, "apply", "--target", "codex")
        check(d.returncode != 0 and why in d.stdout + d.stderr and H.read(gi) == text,
              f"{name}: the dry run says the same and writes nothing", d.stdout + d.stderr)

# After the fix, the block is managed again, the user's lines untouched.
with Sandbox() as sb:
    H.fake_bin(sb, "codex")
    os.makedirs(os.path.join(sb.project, ".git"))
    H.write_manifest(sb, MANIFEST)
    H.trust(sb)
    gi = os.path.join(sb.project, ".gitignore")
    with open(gi, "w") as f:
        f.write(f"node_modules/\n{START}\n/stale\n{END}\n{USER}")
    r = H.run(sb, "apply", "--write", "--target", "codex")
    got = H.read(gi)
    check(r.returncode == 0 and got == f"node_modules/\n{START}\n/.codex/config.toml\n{END}\n{USER}",
          "a paired block is rewritten in place; the lines after it stay", got)
done()
