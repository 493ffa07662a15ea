"""The man pages (docs/building.md, "Man pages"): `agentstack help --man DIR`
writes agentstack(1) and one page per listed command, from the tables
`help --all --json` shows; every page renders with `groff -man -ww` and
`man --warnings -l` without a warning and documents each visible option of
its command and subcommands; the pages the build wrote are the same bytes."""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BUILD, Sandbox, check, done, skip_part  # noqa: E402

with Sandbox() as sb:
    inv = json.loads(sb.run("help", "--all", "--json").stdout)
    visible = [c for c in inv["commands"] if not c["hidden"]]
    hidden = [c["name"] for c in inv["commands"] if c["hidden"]]
    out = os.path.join(sb.root, "man")
    os.makedirs(out)
    r = sb.run("help", "--man", out)
    check(r.returncode == 0 and not r.stderr, "help --man DIR: exit 0", r.stderr)
    want = {"agentstack.1"} | {f"agentstack-{c['name']}.1" for c in visible}
    have = set(os.listdir(out))
    check(have == want, f"{len(want)} pages: agentstack(1) and one per listed command",
          sorted(have ^ want))
    check(not any(f"agentstack-{h}.1" in have for h in hidden),
          "no page for a hidden command", hidden)

    r = sb.run("help", "--man", os.path.join(sb.root, "nosuch"))
    check(r.returncode == 1 and "cannot write" in r.stderr, "a missing directory: exit 1",
          r.stderr)
    check(not os.path.exists(os.path.join(sb.root, "nosuch")), "and nothing created")
    r = sb.run("help", "--man", out, "lock")
    check(r.returncode == 2, "--man with a command: usage error", r.stderr)

    if not shutil.which("groff"):
        skip_part("groff is not installed (apt-get install groff)")
    else:
        env = dict(sb.env(), LC_ALL="C", MANWIDTH="80")
        quiet = True
        for page in sorted(have):
            p = os.path.join(out, page)
            g = subprocess.run(["groff", "-man", "-ww", "-z", p], env=env,
                               capture_output=True, text=True, timeout=60)
            if g.returncode != 0 or g.stderr:
                quiet = False
                check(False, f"groff -man -ww {page}: no warning", g.stderr)
        check(quiet, "groff -man -ww -z: every page without a warning")

        def text(page):
            return subprocess.run(["groff", "-man", "-Tascii", "-P-cbou",
                                   os.path.join(out, page)], env=env, capture_output=True,
                                  text=True, timeout=60).stdout

        def options(spec):
            opts = {o["long"] for o in spec["options"] if o["long"] and not o["hidden"]}
            for s in spec["subcommands"]:
                if not s["hidden"]:
                    opts |= options(s)
            return opts

        missing = []
        for c in visible:
            t = text(f"agentstack-{c['name']}.1")
            if not re.search(rf"^NAME\n\s+agentstack-{re.escape(c['name'])}\s+-\s", t, re.M):
                missing.append(f"{c['name']}: NAME")
            for o in options(c):
                if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", t):
                    missing.append(f"{c['name']}: {o}")
            for s in c["subcommands"]:
                if not s["hidden"] and s["name"] not in t:
                    missing.append(s["name"])
        check(not missing, "each page names its command, subcommands and visible options",
              missing)
        t = text("agentstack-completions.1")
        check("--complete " not in t and "--complete\n" not in t,
              "a hidden option is in no page")
        t = text("agentstack.1")
        check(all(f"agentstack-{c['name']}(1)" in t for c in visible),
              "agentstack(1) names every command's page")
        check(all(f"agentstack-{h}(1)" not in t for h in hidden),
              "agentstack(1) names no hidden command")

    if not shutil.which("man"):
        skip_part("man is not installed (apt-get install man-db)")
    else:
        env = dict(sb.env(), LC_ALL="C", MANWIDTH="80", MANPAGER="cat", PAGER="cat")
        bad = []
        for page in sorted(have):
            m = subprocess.run(["man", "--warnings", "-l", os.path.join(out, page)], env=env,
                               capture_output=True, text=True, timeout=60)
            if m.returncode != 0 or m.stderr or "NAME" not in m.stdout:
                bad.append((page, m.returncode, m.stderr[:200]))
        check(not bad, "man --warnings -l: every page renders, no warning", bad)

    built = os.path.join(BUILD, "man")
    if os.path.isdir(built):
        same = set(os.listdir(built)) == have and all(
            filecmp.cmp(os.path.join(built, f), os.path.join(out, f), shallow=False)
            for f in have)
        check(same, "the build's man/ holds the same pages, byte for byte")
    else:
        check(False, f"the build wrote its pages to {built}")

done()
