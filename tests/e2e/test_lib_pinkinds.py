"""lib_pin_lookup for instructions, extensions and workflows (docs/library.md):
`lock --write` pins a library instruction, extension and workflow from the
linked source that holds them — first source wins, a qualified
`<src>:<name>` only in its source, an unknown source is "not linked" — and
the pinned bytes are that source's (an edit there moves the pin, an edit to
a shadowed copy does not). A workflow behind a symlinked folder is refused (named, never pinned).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

MANIFEST = """version = 1

[instructions.house]

[extensions.libext]
target = "pi"

[workflows.review]
roles = ["writer"]
"""


def rows(lock):
    """{(kind, name): checksum} of the lock's rows."""
    out = {}
    for m in re.finditer(r'\[\[(\w+)\]\]\n(.*?)(?=\n\[\[|\Z)', lock, re.S):
        body = m.group(2)
        n = re.search(r'name = "([^"]+)"', body)
        c = re.search(r'checksum = "([0-9a-f]+)"', body)
        if n and c:
            out[(m.group(1), n.group(1))] = c.group(1)
    return out


def fill(sb, base, tag):
    sb.write("instructions/house/instruction.toml", f'body = "house rules {tag}"\n', base=base)
    sb.write("extensions/libext/main.js", f"// {tag}\n", base=base)
    sb.write("workflows/review/flow.md", f"# review {tag}\n", base=base)


def scenario():
    with Sandbox() as sb:
        team = os.path.join(sb.root, "team")
        local = os.path.join(sb.ah, "lib")
        fill(sb, team, "team")
        fill(sb, local, "local")
        r = sb.run("lib", "link", team, "--first", "--write")
        check(r.returncode == 0, "link team first", r.stdout + r.stderr)
        sb.write(".agentstack/agentstack.toml", MANIFEST)
        lpath = os.path.join(sb.project, ".agentstack", "agentstack.lock")
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "lock --write resolves all three", r.stdout + r.stderr)
        first = rows(open(lpath).read())
        check(("instruction", "house") in first and ("extension", "libext") in first and
              ("workflow", "review") in first, "three library rows pinned", str(first))

        # an edit to the shadowed local copy changes nothing
        fill(sb, local, "local-2")
        r = sb.run("lock", "--write")
        check(rows(open(lpath).read()) == first, "the shadowed copies are not what is pinned",
              r.stdout + r.stderr)
        # an edit in team moves every pin
        fill(sb, team, "team-2")
        r = sb.run("lock", "--write")
        second = rows(open(lpath).read())
        check(all(second[k] != first[k] for k in (("instruction", "house"),
                                                    ("extension", "libext"),
                                                    ("workflow", "review"))),
              "team's bytes are the pinned ones", str(second))

        # qualified refs: only in their source; an unknown source is not linked
        sb.write(".agentstack/agentstack.toml",
                 'version = 1\n[toolsets.t]\nskills = ["ghost:review"]\n')
        r = sb.run("lock", "--write")
        check(r.returncode == 1 and "ghost" in r.stderr, "unknown source refused", r.stderr)

        # a team workflow folder that is a symlink refuses instead of falling through
        sb.write(".agentstack/agentstack.toml", MANIFEST)
        wf = os.path.join(team, "workflows")
        os.rename(wf, wf + "-real")
        os.symlink(wf + "-real", wf)
        sb.write("workflows-real/review/flow.md", "# swapped\n", base=team)
        before = rows(open(lpath).read())
        r = sb.run("lock", "--write")
        check("workflow 'review'" in r.stderr and "symlink" in r.stderr,
              "a symlinked workflows/ is refused and named", r.stdout + r.stderr)
        check(rows(open(lpath).read())[("workflow", "review")] ==
              before[("workflow", "review")], "bytes behind the symlink are never pinned")


scenario()
done()
