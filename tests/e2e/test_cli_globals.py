"""Global options anywhere, and did-you-mean for mistyped flags, for every
command — generated from the command tables (`agentstack help --all --json`),
so a command added later is covered without editing this file.

1. Every global option (--manifest-dir DIR, --manifest-dir=DIR, -q/--quiet,
   -h/--help) is accepted before the command, between a command and its subcommand,
   and after the (sub)command. The help that ends each line must be exactly
   the (sub)command's own help. DIR starts with '-' on purpose: a parser
   that did not know the option, or did not take its value, would fail
   with "unknown option".
2. --manifest-dir really selects the project in every position: six read-only
   commands run from an empty directory with --manifest-dir PROJECT answer
   exactly as they do inside PROJECT, and differently without it.
3. For every command with options, its first option mistyped is a usage
   error (exit 2) naming the option the parser's own rule picks.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done  # noqa: E402


def run(sb, args, cwd=None):
    return subprocess.run([BIN, *args], cwd=cwd or sb.project, env=sb.env(),
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def leaves(cmds):
    """(path, spec) for every runnable (sub)command: a command without
    subcommands, or each subcommand."""
    out = []
    for c in cmds:
        if c["subcommands"]:
            for s in c["subcommands"]:
                out.append((s["name"].split(" "), s))
        else:
            out.append(([c["name"]], c))
    return out


def distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def expected_suggestion(word, spec, inv):
    """The parser's rule: the closest candidate within distance 2, the first
    one on a tie; candidates are the command's options (long name, then its
    alias, in table order), then the global ones, then --help."""
    cands = []
    for o in spec["options"] + inv["global_options"]:
        if not o["available"]:
            continue
        if o["long"]:
            cands.append(o["long"])
        cands.extend(o["aliases"])
    cands.append("--help")
    best, best_d = None, 3
    for c in cands:
        d = distance(word, c)
        if d < best_d:
            best, best_d = c, d
    return best


with Sandbox() as sb:
    r = run(sb, ["help", "--all", "--json"])
    check(r.returncode == 0, "help --all --json exits 0", r.stderr)
    inv = json.loads(r.stdout)
    globals_ = [o["long"] for o in inv["global_options"]]
    check("--manifest-dir" in globals_, "--manifest-dir is a global option", globals_)
    all_leaves = leaves(inv["commands"])
    check(len(all_leaves) > 50, f"{len(all_leaves)} runnable (sub)commands found")

    # 1. every global option in every position, for every (sub)command:
    # --manifest-dir in all of them at once (its two spellings taking turns,
    # both being the same parse: tests/unit/cli covers each everywhere), and
    # -h/--help in each, since help ends the line where it stands
    odd_dir = "-a-dir-starting-with-a-dash"
    for path, spec in all_leaves:
        name = " ".join(path)
        base = run(sb, path + ["--help"])
        ok = (base.returncode == 0 and not base.stderr and
              base.stdout.startswith("usage: agentstack " + name))
        check(ok, f"{name} --help: its own usage", base.stdout[:200] + base.stderr)
        if not ok:
            continue
        everywhere = ["--manifest-dir", odd_dir] + path[:1]
        if len(path) == 2:
            everywhere += ["--manifest-dir=" + odd_dir] + path[1:]
        everywhere += ["--manifest-dir", odd_dir, "-h"]
        # -q/--quiet in the same positions: help is the data asked for
        quiet = ["-q"] + path[:1]
        if len(path) == 2:
            quiet += ["--quiet"] + path[1:]
        quiet += ["--quiet", "--help"]
        lines = [everywhere, quiet, ["--help"] + path]
        if len(path) == 2:
            lines.append(path[:1] + ["-h"] + path[1:])
        bad = []
        for args in lines:
            r = run(sb, args)
            if r.returncode != 0 or r.stdout != base.stdout or r.stderr:
                bad.append((args, r.returncode, (r.stderr or r.stdout)[:200]))
        check(not bad, f"{name}: global options in {len(lines)} positions", bad)

    # 2. --manifest-dir selects the project, wherever it stands
    sb.write(".agentstack/agentstack.toml",
             'version = 1\n\n[servers.files]\ntype = "stdio"\ncommand = "true"\n\n'
             '[toolsets.main]\nservers = ["files"]\n\n[policy.tools]\nfiles = ["read_*"]\n')
    elsewhere = tempfile.mkdtemp(prefix="as-e2e-elsewhere-", dir=sb.root)
    p = sb.project
    read_only = [["status"], ["lock"], ["doctor"], ["policy", "explain", "files"],
                 ["trust", "--preview"], ["use", "--list"]]
    for cmd in read_only:
        name = " ".join(cmd)
        inside = run(sb, cmd)
        without = run(sb, cmd, cwd=elsewhere)
        check((without.returncode, without.stdout, without.stderr) !=
              (inside.returncode, inside.stdout, inside.stderr),
              f"{name}: from another directory the answer differs (the project matters)",
              without.stdout + without.stderr)
        positions = [["--manifest-dir", p] + cmd, cmd + ["--manifest-dir", p],
                     cmd[:1] + ["--manifest-dir=" + p] + cmd[1:]]
        if len(cmd) > 1:
            positions.append(cmd[:2] + ["--manifest-dir", p] + cmd[2:])
        for args in positions:
            r = run(sb, args, cwd=elsewhere)
            check((r.returncode, r.stdout, r.stderr) ==
                  (inside.returncode, inside.stdout, inside.stderr),
                  f"{' '.join(args)}: as if run inside the project",
                  f"rc {r.returncode} vs {inside.returncode}\n{r.stdout}{r.stderr}\n---\n"
                  f"{inside.stdout}{inside.stderr}")

    # 3. did-you-mean on a mistyped flag, for every command with options
    tried = 0
    for path, spec in all_leaves:
        visible = [o for o in spec["options"] if o["long"] and o["available"]]
        if not visible:
            continue
        flag = visible[0]["long"]
        names = {o["long"] for o in spec["options"]} | {a for o in spec["options"]
                                                         for a in o["aliases"]}
        typo = flag[:-2] + flag[-1] + flag[-2]  # the last two letters swapped
        if typo in names:
            typo = flag[:-1]  # or the last one dropped ("--all")
        if typo in names:
            typo = flag + "x"
        want = expected_suggestion(typo, spec, inv)
        r = run(sb, path + [typo])
        tried += 1
        check(r.returncode == 2 and f"unknown option '{typo}'" in r.stderr and
              (want is None or f"did you mean '{want}'?" in r.stderr) and not r.stdout,
              f"{' '.join(path)} {typo}: exit 2, did you mean '{want}'", r.stdout + r.stderr)
    check(tried > 40, f"mistyped flags tried on {tried} commands")

done()
