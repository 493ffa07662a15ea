"""A dangling symlink as a CLI's config or instruction file (CLAUDE.md,
AGENTS.md, .gemini/settings.json) is refused in the words lock uses for
symlinks — "symlink resolves outside the project (<target>)" or "symlink
does not resolve (it points to <target>…)" — with the path named once (it
used to read "<path>: <path>: No such file or directory"). apply says the
file is not written; diff, which writes nothing, does not. The links are
left as they are. At global scope a dangling link is refused the same way
before anything is written (it used to pass the preview and fail on write).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[instructions.house]
path = "house.md"

[servers.alpha]
type = "stdio"
command = "alpha-mcp"

[targets]
default = ["claude-code", "codex", "gemini"]
"""


def x_lines(out, path):
    return [ln for ln in out.splitlines() if "✗" in ln and path in ln]


def main():
    with Sandbox() as sb:
        e = H.env(sb)
        H.write_manifest(sb, MANIFEST)
        sb.write(".agentstack/house.md", "Be kind.\n")
        p = sb.project
        outside = os.path.join(sb.root, "nowhere", "x.md")
        links = {
            "CLAUDE.md": (outside, "symlink resolves outside the project (%s)" % outside),
            "AGENTS.md": ("gone.md", "symlink does not resolve (it points to gone.md"),
            ".gemini/settings.json": ("../gem.json",
                                      "symlink does not resolve (it points to ../gem.json"),
        }
        os.makedirs(os.path.join(p, ".gemini"))
        for rel, (to, _) in links.items():
            os.symlink(to, os.path.join(p, rel))
        r = H.run(sb, "lock", "--write", e=e)
        check(r.returncode == 0, "lock --write", r.stdout + r.stderr)
        H.trust(sb, e=e)

        for args, writes in ((("apply",), True), (("diff",), False),
                             (("apply", "--write"), True)):
            r = H.run(sb, *args, e=e)
            out = r.stdout + r.stderr
            name = " ".join(args)
            for rel, (to, words) in links.items():
                full = os.path.join(p, rel)
                ln = x_lines(r.stdout, full)
                check(len(ln) == 1 and words in ln[0] and ln[0].count(full) == 1,
                      "%s: %s named once, in lock's words" % (name, rel), out)
                check(ln and ("— not written" in ln[0]) == writes,
                      "%s: %s %s 'not written'" % (name, rel, "says" if writes else "does not say"),
                      out)
                check("No such file or directory" not in out, name + ": no bare ENOENT", out)
                check(os.path.islink(full) and os.readlink(full) == to and
                      not os.path.exists(full), "%s: %s left as it was" % (name, rel))
            if args == ("apply", "--write"):
                check(r.returncode == 1 and not os.path.exists(os.path.join(p, "gem.json"))
                      and not os.path.exists(outside), "apply --write: refused, nothing created",
                      out)

        # global scope: a dangling ~/.gemini/settings.json is refused up front
        gs = os.path.join(sb.home, ".gemini", "settings.json")
        os.makedirs(os.path.dirname(gs))
        missing = os.path.join(sb.root, "dotfiles", "gemini.json")
        os.symlink(missing, gs)
        for args in (("apply", "--scope", "global", "--target", "gemini"),
                     ("apply", "--scope", "global", "--target", "gemini", "--write")):
            r = H.run(sb, *args, e=e)
            ln = x_lines(r.stdout, gs)
            check(len(ln) == 1 and "symlink does not resolve (it points to %s" % missing in ln[0]
                  and ln[0].count(gs) == 1 and "— not written" in ln[0],
                  " ".join(args) + ": the dangling link named once", r.stdout + r.stderr)
            check(os.path.islink(gs) and not os.path.exists(missing),
                  " ".join(args) + ": link left as it was")
    done()


if __name__ == "__main__":
    main()
