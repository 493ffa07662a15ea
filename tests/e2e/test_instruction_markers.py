"""An instruction body can never carry a managed-region marker line into an
instruction file (docs/adapters.md): a body with a line the region parser would take
for `<!-- agentstack:start -->` or `<!-- agentstack:end -->` (LF, CRLF, a
bare CR at the end, the last line without a newline) is refused, naming the
fragment's file:line, and the instruction file keeps its previous bytes.
Before the fix such a line closed the region early: every apply --write
appended another copy of the text after it, and that text stayed in
CLAUDE.md after the instruction was removed. Lines the parser does not
recognise (indented, trailing blank, quoted inline) are ordinary text, and
applying them twice is a no-op.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

BOTH = """version = 1

[instructions.house]
path = "house.md"

[instructions.evil]
path = "evil.md"

[targets]
default = ["claude-code"]
"""
HOUSE_ONLY = """version = 1

[instructions.house]
path = "house.md"

[targets]
default = ["claude-code"]
"""
START = "<!-- agentstack:start -->"
END = "<!-- agentstack:end -->"

# body, 1-based line of the marker the parser would recognise
HOSTILE = [
    ("Evil A.\n" + END + "\nline B\n", 2, "end marker, LF"),
    ("Evil A.\r\n" + END + "\r\nline B\r\n", 2, "end marker, CRLF"),
    ("Evil A.\n\nline B\n" + END, 4, "end marker as the last line, no newline"),
    ("Evil A.\nline B\n" + END + "\r", 3, "end marker, bare CR at the end"),
    (END + "\nline B\n", 1, "end marker as the first line"),
    ("Evil A.\n" + START + "\nline B\n", 2, "start marker, LF"),
    ("Evil A.\r\n" + START + "\r\nline B\r\n", 2, "start marker, CRLF"),
]
# not marker lines for the parser: plain text, delivered as is
BENIGN = [
    ("Evil A.\n " + END + "\nline B\n", "indented end marker"),
    ("Evil A.\n" + END + " \nline B\n", "end marker with a trailing blank"),
    ("Evil A.\n\t" + START + "\nline B\n", "tab-indented start marker"),
    ("Evil A.\nquote `" + END + "` inline\nline B\n", "end marker quoted inline"),
]


def rb(path):
    with open(path, "rb") as f:
        return f.read()


def wb(path, data):
    with open(path, "wb") as f:
        f.write(data)


def marker_lines(data):
    """Lines of data the region parser would take for a marker."""
    n = 0
    for ln in data.split(b"\n"):
        if ln.endswith(b"\r"):
            ln = ln[:-1]
        n += ln in (START.encode(), END.encode())
    return n


def history(sb):
    return sorted(glob.glob(os.path.join(sb.ah, "history", "*.json")))


def main():
    with Sandbox() as sb:
        e = H.env(sb)
        H.write_manifest(sb, BOTH)
        sb.write(".agentstack/house.md", "Be kind.\n")
        evil = os.path.join(sb.project, ".agentstack", "evil.md")
        wb(evil, b"Be brief.\n")
        claude = os.path.join(sb.project, "CLAUDE.md")
        wb(claude, b"# Mine\n\nhand text\n")
        H.relock(sb, e)
        r = H.run(sb, "apply", "--write", e=e)
        good = rb(claude)
        check(r.returncode == 0 and b"Be kind.\n\nBe brief.\n" + END.encode() in good,
              "benign fragments land in the region", r.stdout + r.stderr + repr(good))

        for body, line, what in HOSTILE:
            wb(evil, body.encode())
            H.relock(sb, e)
            h0 = history(sb)
            r1 = H.run(sb, "apply", "--write", e=e)
            after1 = rb(claude)
            r2 = H.run(sb, "apply", "--write", e=e)
            after2 = rb(claude)
            out = r1.stdout + r1.stderr
            check(after1 == good and after2 == good and history(sb) == h0,
                  what + ": apply --write twice leaves CLAUDE.md byte-identical, nothing recorded",
                  out + repr(after2))
            check(r1.returncode == 1 and "evil.md:%d" % line in out and
                  "managed-region marker" in out and "secret set" not in out,
                  what + ": refused, naming the fragment's file:line", out)
            check(marker_lines(after2) == 2, what + ": one start and one end marker line",
                  repr(after2))
            r = H.run(sb, "diff", e=e)
            check("evil.md:%d" % line in r.stdout and "✓ all targets in sync" not in r.stdout,
                  what + ": diff names the line, not 'in sync'", r.stdout + r.stderr)
            r = H.run(sb, "doctor", e=e)
            check("evil.md:%d is a managed-region marker line" % line in r.stdout,
                  what + ": doctor names the line", r.stdout + r.stderr)
            r = H.run(sb, "instructions", "--write", e=e)
            check(r.returncode == 1 and "evil.md:%d" % line in r.stdout and
                  rb(claude) == good and history(sb) == h0,
                  what + ": instructions --write refuses too", r.stdout + r.stderr)

        # removing the hostile instruction leaves none of its text behind
        wb(evil, HOSTILE[0][0].encode())
        H.relock(sb, e)
        H.run(sb, "apply", "--write", e=e)
        H.write_manifest(sb, HOUSE_ONLY)
        H.relock(sb, e)
        r = H.run(sb, "apply", "--write", e=e)
        c = rb(claude)
        check(r.returncode == 0 and c == b"# Mine\n\nhand text\n\n" + START.encode() +
              b"\nBe kind.\n" + END.encode() + b"\n",
              "instruction removed: no fragment text outside or inside the region",
              r.stdout + r.stderr + repr(c))

        # lines the parser does not recognise are delivered verbatim, idempotently
        H.write_manifest(sb, BOTH)
        for body, what in BENIGN:
            wb(evil, body.encode())
            H.relock(sb, e)
            r1 = H.run(sb, "apply", "--write", e=e)
            after1 = rb(claude)
            h0 = history(sb)
            r2 = H.run(sb, "apply", "--write", e=e)
            check(r1.returncode == 0 and r2.returncode == 0 and rb(claude) == after1 and
                  history(sb) == h0 and body.rstrip("\n").encode() in after1 and
                  marker_lines(after1) == 2,
                  what + ": delivered as text, second apply a no-op",
                  r1.stdout + r1.stderr + r2.stdout + repr(after1))
    done()


if __name__ == "__main__":
    main()
