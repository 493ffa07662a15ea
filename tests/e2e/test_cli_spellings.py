"""Both spellings of the command line run the same code.

1. `more <command>` and `x <command>` are `<command>`: the same exit code,
   stdout and stderr, for commands with and without subcommands; only the
   word in the command's position is the prefix (`apply more` stays an
   argument of apply). A --json failure behind the prefix is the same JSON
   document.
2. Each pair: `report run <id>` / `report <id>`, `report runs` / `runs`,
   `report calls` / `audit --calls`, `gateway connect` / `connect`,
   `lock --upgrade P` / `upgrade P`, `toolset list` / `use --list` answer
   alike; `--help` of the primary names the other spelling ("Also
   spelled:"), and the other's help says which command it spells.
3. Global options work in every position of the new spellings too
   (`--manifest-dir` before `more`, between `report` and `runs`, after).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

MANIFEST = ('version = 1\n\n[servers.files]\ntype = "stdio"\ncommand = "true"\n\n'
            '[toolsets.main]\nservers = ["files"]\n')


def same(a, b):
    return (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


def show(r):
    return f"rc {r.returncode}\n{r.stdout}{r.stderr}"


with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", MANIFEST)

    # 1. the namespace prefix
    for cmd in (["status"], ["lock"], ["use", "--list"], ["policy", "explain", "files"],
                ["report", "runs"], ["help", "lock"]):
        plain = sb.run(*cmd)
        for prefix in ("more", "x"):
            r = sb.run(prefix, *cmd)
            check(same(r, plain), f"{prefix} {' '.join(cmd)} is {' '.join(cmd)}",
                  show(r) + "\n---\n" + show(plain))
    # a failure under --json is the same JSON document behind the prefix
    empty = os.path.join(sb.root, "no-project")
    os.makedirs(empty)
    for cmd in (["lock", "--json"], ["apply", "--json"], ["install", "--json"]):
        plain = sb.run(*cmd, cwd=empty)
        for prefix in ("more", "x"):
            r = sb.run(prefix, *cmd, cwd=empty)
            check(same(r, plain) and plain.returncode == 1 and
                  '"ok": false' in r.stdout, f"{prefix} {' '.join(cmd)} fails as "
                  f"{' '.join(cmd)} does, as a JSON document", show(r) + "\n---\n" + show(plain))
    r = sb.run("more")
    check(r.returncode == 0 and "agentstack more <command>" in r.stdout and
          "\n  gateway " in r.stdout and "\n  explain " in r.stdout,
          "bare more lists every command, hidden spellings too", r.stdout)
    r = sb.run("more", "nosuch")
    check(r.returncode == 2 and "unknown command 'nosuch'" in r.stderr, "more nosuch: exit 2",
          r.stderr)
    r = sb.run("apply", "more")
    check(r.returncode == 2 and "more" in r.stderr,
          "apply more: 'more' is apply's argument, not the prefix", show(r))

    # 2. the pairs
    pairs = [
        (["report", "run", "r-0000dead"], ["report", "r-0000dead"]),
        (["report", "run", "r-0000dead", "--json"], ["report", "--json", "r-0000dead"]),
        (["report", "runs"], ["runs"]),
        (["report", "runs", "--json"], ["runs", "--json"]),
        (["report", "calls"], ["audit", "--calls"]),
        (["report", "calls", "--all", "--json"], ["audit", "--calls", "--all", "--json"]),
        (["gateway", "connect"], ["connect"]),
        (["gateway", "connect", "--all"], ["connect", "--all"]),
        (["lock", "--upgrade", "nosuchpack"], ["upgrade", "nosuchpack"]),
        (["toolset", "list"], ["use", "--list"]),
        (["toolset", "list", "--json"], ["use", "--list", "--json"]),
    ]
    for a, b in pairs:
        ra, rb = sb.run(*a), sb.run(*b)
        check(same(ra, rb), f"{' '.join(a)} answers as {' '.join(b)}",
              show(ra) + "\n---\n" + show(rb))
    r = sb.run("report", "r-0000dead")
    check(r.returncode == 1 and "No record for run 'r-0000dead'" in r.stderr,
          "an unknown run id exits 1 in both spellings", show(r))

    for primary, other in (("connect", "gateway connect"), ("runs", "report runs"),
                           ("audit", "audit --calls"), ("upgrade", "lock --upgrade <pack>")):
        r = sb.run(primary, "--help")
        want = "report calls" if primary == "audit" else other
        check(r.returncode == 0 and "Also spelled:" in r.stdout and
              f"agentstack {want}" in r.stdout, f"{primary} --help names {want}", r.stdout)
    for spelled, of in ((["gateway", "connect"], "connect"), (["report", "runs"], "runs"),
                        (["report", "calls"], "audit"), (["toolset", "list"], "use"),
                        (["x"], "more")):
        r = sb.run(*spelled, "--help")
        check(r.returncode == 0 and f"Another spelling of: agentstack {of}" in r.stdout,
              f"{' '.join(spelled)} --help says it spells {of}", r.stdout)

    # 3. global options around the new spellings
    elsewhere = os.path.join(sb.root, "elsewhere")
    os.makedirs(elsewhere)
    inside = sb.run("use", "--list")
    for args in (["--manifest-dir", sb.project, "more", "use", "--list"],
                 ["more", "--manifest-dir", sb.project, "use", "--list"],
                 ["more", "use", "--list", "--manifest-dir", sb.project],
                 ["x", "toolset", "--manifest-dir=" + sb.project, "list"],
                 ["toolset", "list", "--manifest-dir", sb.project]):
        r = sb.run(*args, cwd=elsewhere)
        check(r.returncode == 0 and r.stdout == inside.stdout,
              f"{' '.join(args)}: as if run inside the project", show(r))
    r = sb.run("report", "--manifest-dir", sb.project, "runs", cwd=elsewhere)
    check(same(r, sb.run("runs")), "report --manifest-dir DIR runs: the subcommand still found",
          show(r))

done()
