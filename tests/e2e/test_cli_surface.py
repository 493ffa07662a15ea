"""The command surface (design: "a command appears only when it works"):
`agentstack help` lists commands; each listed command's `--help` exits 0 and
prints its usage; an unknown command gets a did-you-mean and exit 2;
`--version` reads `agentstack X.Y.Z (<7 hex>)`. Each listed
command, run bare in an empty project with no terminal, ends on its own with
0, 1 or 2 — never a signal, never a placeholder."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402


def run(sb, *args, timeout=60):
    return subprocess.run([BIN, *args], cwd=sb.project, env=sb.env(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def listed(help_text):
    """Command names from the `commands:` block of `agentstack help`."""
    names, inside = [], False
    for line in help_text.splitlines():
        if line.strip() == "commands:":
            inside = True
            continue
        if inside:
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s{2,}\S", line)
            if not m:
                break
            names.append(m.group(1))
    return names


with Sandbox() as sb:
    r = run(sb, "help")
    names = listed(r.stdout)
    check(r.returncode == 0 and len(names) >= 10 and "help" in names and "doctor" in names,
          f"help lists the commands ({len(names)})", r.stdout)
    check(len(names) == len(set(names)), "no command is listed twice", names)
    check("tools_execute" not in r.stdout, "unbuilt commands are not listed")

    for name in names:
        for flag in ("--help", "-h"):
            r = run(sb, name, flag)
            first = r.stdout.splitlines()[0] if r.stdout else ""
            check(r.returncode == 0 and first.startswith("usage: agentstack " + name) and
                  not r.stderr.strip(),
                  f"{name} {flag}: exit 0, usage on stdout", r.stdout + r.stderr)
        r = run(sb, "help", name)
        check(r.returncode == 0 and r.stdout.startswith("usage: agentstack " + name),
              f"help {name}: the same usage", r.stdout + r.stderr)

    # each listed command works far enough to answer: bare, in an empty
    # project, without a terminal, it ends by itself with a defined status
    for name in names:
        try:
            r = run(sb, name, timeout=120)
        except subprocess.TimeoutExpired:
            check(False, f"{name} (bare) ends by itself")
            continue
        text = (r.stdout + r.stderr).lower()
        check(r.returncode in (0, 1, 2) and "not implemented" not in text and
              "todo" not in text, f"{name} (bare): exit {r.returncode}, no placeholder",
              r.stdout + r.stderr)

    # unknown commands: a suggestion when one is close, exit 2 either way
    for typo, want in (("lcok", "lock"), ("doctr", "doctor"), ("polcy", "policy"),
                       ("stauts", "status")):
        r = run(sb, typo)
        check(r.returncode == 2 and f"unknown command '{typo}'" in r.stderr and
              f"did you mean '{want}'?" in r.stderr,
              f"unknown command {typo}: exit 2, did you mean '{want}'", r.stderr)
    r = run(sb, "zzzzzzzz")
    check(r.returncode == 2 and "unknown command 'zzzzzzzz'" in r.stderr and
          "agentstack help" in r.stderr, "unknown command far from any: exit 2, names help",
          r.stderr)
    r = run(sb, "--no-such-option")
    check(r.returncode == 2 and "unknown option" in r.stderr, "unknown global option: exit 2",
          r.stderr)
    r = run(sb)
    check(r.returncode in (0, 2) and "agentstack help" in r.stdout + r.stderr,
          "no command: ends at once and points to agentstack help", r.stdout + r.stderr)

    # --version: agentstack <semver> (<short commit>)
    pattern = r"agentstack \d+\.\d+\.\d+ \([0-9a-f]{7}\)"
    for args in (["--version"], ["version"], ["-V"]):
        r = run(sb, *args)
        check(r.returncode == 0 and re.fullmatch(pattern, r.stdout.strip()) is not None,
              f"{' '.join(args)}: '{r.stdout.strip()}' matches {pattern}", r.stdout + r.stderr)

done()
