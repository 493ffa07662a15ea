"""The repository cites no document it does not hold (tools/check_citations.py).

First the check itself, as the attack: a temporary git repository gets one
file per kind of citation (a path beside the checkout, a section label, an
errata label, a spec chapter, a spec file name, the reference version), in a
C comment, a Python string and a doc, and each must be reported with its
file and line; a clean file, an RFC section written out in words, and the
same text under tests/data/ (third-party files) must not be. Then the real
checkout: every tracked file must be clean."""
import os
import subprocess
import sys
import tempfile

from aslib import SRC, check, done

sys.path.insert(0, os.path.join(SRC, "tools"))
import check_citations  # noqa: E402

# Spelled in pieces so that this file itself stays clean.
SECTION = "\u00a7"
PLANTED = {
    "src/a.c": "/* the lock layout (01 " + SECTION + "4.1) */\n",
    "src/b.c": "/* fail closed (err" + "ata 17) */\n",
    "src/c.h": "/* the gates of spec " + "05, in order */\n",
    "tools/d.py": "# see chapter " + "06 for the phrase\n",
    "docs/e.md": "Read ../" + "shared/spec first.\n",
    "docs/f.md": "As 01-manifest-lock-" + "trust.md says.\n",
    "tests/g.py": 'check(ok, "the 0.' + '19 spelling works")\n',
    "docs/h.md": "An error to an unusable request (Err" + "ata 8).\n",
}
CLEAN = {
    "src/ok.c": "/* HTTP header fields (RFC 9110 section 5.5); version 0.190 */\n",
    "docs/ok.md": "See docs/policy.md, \"Refusal text\"; ../other is a sibling.\n",
    "tests/data/upstream/x.json": '{"s": "' + SECTION + '", "n": "err' + 'ata"}\n',
}


def git(root, *args):
    subprocess.run(["git", "-C", root, *args], check=True, capture_output=True)


with tempfile.TemporaryDirectory() as root:
    git(root, "init", "-q")
    for rel, text in {**PLANTED, **CLEAN}.items():
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write("// line one\n" + text)
    git(root, "add", "-A")
    found = check_citations.scan(root)
    for rel in PLANTED:
        check(any(x.startswith(rel + ":2: ") for x in found),
              f"a citation in {rel} is reported at its line", found)
    for rel in CLEAN:
        check(not any(x.startswith(rel + ":") for x in found),
              f"{rel} is not reported", found)
    check(len(found) == len(PLANTED), "one report per planted citation", found)
    r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "check_citations.py"),
                        "--root", root], capture_output=True, text=True)
    check(r.returncode == 1 and "src/a.c:2:" in r.stdout,
          "the command exits 1 and names file:line", (r.returncode, r.stdout, r.stderr))

r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "check_citations.py"),
                    "--root", SRC], capture_output=True, text=True)
check(r.returncode == 0,
      "the checkout cites no document it does not hold", r.stdout + r.stderr)

done()
