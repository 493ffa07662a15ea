"""`agentstack completions bash|zsh|fish` (docs/building.md, "Shell
completions"): each script loaded by the real shell, a completion run in it
giving the words the command tables (`help --all --json`) say, dynamic
adapter ids and manifest names, and the attack: names a project wrote that
hold a command substitution or a terminal escape are never offered or run."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, Sandbox, check, done, skip_part  # noqa: E402

MANIFEST = """version = 1
default_toolset = "backend"

[servers.alpha]
type = "stdio"
command = "a-mcp"

[servers.beta]
type = "stdio"
command = "b-mcp"

[toolsets.backend]
servers = ["alpha"]

[toolsets.docs]
servers = ["beta"]
"""

# a second project whose names hold what a shell would run or a terminal obey
HOSTILE = """version = 1

[servers.plain]
type = "stdio"
command = "p-mcp"

[servers."$(touch PWNED)"]
type = "stdio"
command = "x-mcp"

[servers."`touch PWNED2`"]
type = "stdio"
command = "y-mcp"

[toolsets."\\u001b]0;owned\\u0007"]
servers = ["plain"]

[toolsets.fine]
servers = ["plain"]
"""


def bindir_env(sb, **extra):
    """The sandbox's env with the binary first on PATH as `agentstack`."""
    d = os.path.join(sb.root, "bin")
    if not os.path.exists(d):
        os.makedirs(d)
        os.symlink(os.path.abspath(BIN), os.path.join(d, "agentstack"))
    e = sb.env(**extra)
    e["PATH"] = d + os.pathsep + e.get("PATH", "")
    return e


def bash_complete(sb, words, cwd, point_words=None):
    """COMPREPLY for COMP_WORDS = words (the last one being completed), as
    bash itself would set them; COMP_LINE is the words joined as typed
    (point_words: how they are joined, default one space)."""
    script = os.path.join(sb.root, "comp.bash")
    with open(script, "w") as f:
        f.write(subprocess.run([BIN, "completions", "bash"], capture_output=True,
                               text=True, env=sb.env()).stdout)
    line = point_words if point_words is not None else " ".join(words)
    arr = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f"source '{script}'\n"
            f"COMP_WORDS=({arr}); COMP_CWORD={len(words) - 1}\n"
            f"COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n"
            "_agentstack\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], cwd=cwd,
                       env=bindir_env(sb), capture_output=True, text=True, timeout=60)
    return [w for w in r.stdout.split("\n") if w], r


with Sandbox() as sb:
    sb.write("agentstack.toml", MANIFEST)
    r = sb.run("help", "--all", "--json")
    inv = json.loads(r.stdout)
    by_name = {}

    def index(spec):
        by_name[spec["name"]] = spec
        for s in spec["subcommands"]:
            index(s)

    for c in inv["commands"]:
        index(c)
    visible = sorted(c["name"] for c in inv["commands"] if not c["hidden"])
    globals_ = {o["long"] for o in inv["global_options"] if not o["hidden"]}

    def visible_opts(name):
        return {o["long"] for o in by_name[name]["options"]
                if o["long"] and not o["hidden"] and o["available"]} | globals_ | {"--help"}

    # ---- the command itself ----
    check("completions" in visible, "completions is a listed command")
    r = sb.run("completions", "--help")
    check(r.returncode == 0 and "bash|zsh|fish" in r.stdout, "completions --help: its usage")
    check("--complete" not in r.stdout, "the scripts' hidden call-back is not in --help")
    check(all(not o["long"] == "--complete" or o["hidden"]
              for o in by_name["completions"]["options"]),
          "the inventory flags --complete hidden")
    r = sb.run("completions", "tcsh")
    check(r.returncode == 2 and "unknown shell 'tcsh'" in r.stderr, "an unknown shell: exit 2",
          r.stderr)
    r = sb.run("completions")
    check(r.returncode == 2 and "which shell" in r.stderr, "no shell: exit 2", r.stderr)

    # ---- bash ----
    if not shutil.which("bash"):
        skip_part("bash is not installed")
    else:
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                            "source <(agentstack completions bash) && complete -p agentstack"],
                           env=bindir_env(sb), capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "-F _agentstack agentstack" in r.stdout,
              "bash: complete -p agentstack names the function", r.stdout + r.stderr)

        got, r = bash_complete(sb, ["agentstack", ""], sb.project)
        check(sorted(got) == visible, "bash: every visible command, no hidden one",
              f"got {sorted(set(got) ^ set(visible))} {r.stderr}")
        got, _ = bash_complete(sb, ["agentstack", "lo"], sb.project)
        check(got == ["lock"], "bash: 'lo' -> lock", got)
        subs = sorted(s["name"].split(" ")[-1] for s in by_name["lib"]["subcommands"]
                      if not s["hidden"])
        got, _ = bash_complete(sb, ["agentstack", "lib", ""], sb.project)
        check(sorted(got) == subs, "bash: lib's subcommands", got)
        got, _ = bash_complete(sb, ["agentstack", "apply", "--"], sb.project)
        check(set(got) == visible_opts("apply"), "bash: apply's options from its table",
              sorted(set(got) ^ visible_opts("apply")))
        got, _ = bash_complete(sb, ["agentstack", "--manifest-dir", sb.project, "session",
                                    "start", "--"], sb.root)
        check(set(got) == visible_opts("session start"),
              "bash: a subcommand's options after a global option and its value", got)
        got, _ = bash_complete(sb, ["agentstack", "apply", "--scope", ""], sb.project)
        check(sorted(got) == ["global", "project"], "bash: --scope's choices", got)
        got, _ = bash_complete(sb, ["agentstack", "apply", "--target", "cl"], sb.project)
        check("claude-code" in got and all(g.startswith("cl") for g in got),
              "bash: --target completes adapter ids", got)
        got, _ = bash_complete(sb, ["agentstack", "use", ""], sb.project)
        check(sorted(got) == ["backend", "docs"], "bash: use's toolsets from the manifest", got)
        got, _ = bash_complete(sb, ["agentstack", "policy", "explain", ""], sb.project)
        check(sorted(got) == ["alpha", "beta"], "bash: policy explain's servers", got)
        got, _ = bash_complete(sb, ["agentstack", "apply", "--toolset", "=", "b"], sb.project,
                               "agentstack apply --toolset=b")
        check(got == ["backend"], "bash: --toolset=b (split at '=' by bash) -> backend", got)
        got, _ = bash_complete(sb, ["agentstack", "--manifest-dir", sb.project, "use", ""],
                               sb.root)
        check(sorted(got) == ["backend", "docs"],
              "bash: --manifest-dir on the line picks the manifest", got)
        got, _ = bash_complete(sb, ["agentstack", "use", ""], sb.root)
        check(got == [], "bash: no manifest, no toolsets (and no error)", got)
        got, _ = bash_complete(sb, ["agentstack", "completions", ""], sb.project)
        check(sorted(got) == ["bash", "fish", "zsh"], "bash: the shells from the usage line", got)
        got, _ = bash_complete(sb, ["agentstack", "help", "li"], sb.project)
        check(got == ["lib"], "bash: help's command argument", got)
        got, _ = bash_complete(sb, ["agentstack", "help", "la"], sb.project)
        check(got == ["lanes"], "bash: help's concepts (help lanes)", got)
        got, _ = bash_complete(sb, ["agentstack", "help", "top"], sb.project)
        check(got == ["topics"], "bash: help topics", got)
        got, _ = bash_complete(sb, ["agentstack", "help", "tr"], sb.project)
        check(got == ["trust"], "bash: a concept named like a command is offered once", got)
        got, _ = bash_complete(sb, ["agentstack", "nosuch", ""], sb.project)
        check(got == [], "bash: an unknown command: nothing", got)

        # the attack: hostile names in a project's manifest
        hostile = os.path.join(sb.root, "hostile")
        os.makedirs(hostile)
        with open(os.path.join(hostile, "agentstack.toml"), "w") as f:
            f.write(HOSTILE)
        got, r = bash_complete(sb, ["agentstack", "policy", "explain", ""], hostile)
        check(got == ["plain"], "hostile: only the plain server name is offered", got)
        got, r = bash_complete(sb, ["agentstack", "use", ""], hostile)
        check(got == ["fine"], "hostile: the toolset named with an escape is dropped", got)
        check("\x1b" not in r.stdout + r.stderr, "hostile: no escape byte reaches the terminal")
        check(not os.path.exists(os.path.join(hostile, "PWNED")) and
              not os.path.exists(os.path.join(hostile, "PWNED2")),
              "hostile: completing ran no command substitution")
        raw = subprocess.run([BIN, "completions", "--complete", "--", "agentstack", "policy",
                              "explain", ""], cwd=hostile, env=sb.env(),
                             capture_output=True, text=True)
        check(raw.stdout.split() == ["plain"], "hostile: the binary itself drops them",
              raw.stdout)

    # ---- zsh ----
    if not shutil.which("zsh"):
        skip_part("zsh is not installed (apt-get install zsh)")
    else:
        fdir = os.path.join(sb.root, "zfunc")
        os.makedirs(fdir)
        with open(os.path.join(fdir, "_agentstack"), "w") as f:
            f.write(sb.run("completions", "zsh").stdout)
        stub = ("compadd() { local a; for a in \"${(P@)${@[-1]}}\"; do print -r -- \"$a\"; "
                "done }\n")

        def zsh(prog, cwd=sb.project):
            return subprocess.run(["zsh", "-f", "-c", prog], cwd=cwd, env=bindir_env(sb),
                                  capture_output=True, text=True, timeout=60)

        r = zsh(f"fpath=({fdir} $fpath); autoload -U compinit; compinit -u -d "
                f"{sb.root}/zcd; print -r -- $_comps[agentstack]")
        check(r.stdout.strip() == "_agentstack",
              "zsh: compinit finds _agentstack on fpath (#compdef)", r.stdout + r.stderr)
        r = zsh(f"fpath=({fdir} $fpath); autoload -U compinit; compinit -u -d {sb.root}/zcd\n"
                f"{stub}words=(agentstack lo); CURRENT=2; PREFIX=lo; _agentstack")
        check(r.stdout.split() == ["lock"], "zsh: the autoloaded function: 'lo' -> lock",
              r.stdout + r.stderr)
        r = zsh(f"autoload -U compinit; compinit -u -d {sb.root}/zcd2\n"
                f"source <(agentstack completions zsh)\nprint -r -- $_comps[agentstack]\n"
                f"{stub}words=(agentstack use ''); CURRENT=3; PREFIX=; _agentstack")
        out = r.stdout.split()
        check(out[:1] == ["_agentstack"] and sorted(out[1:]) == ["backend", "docs"],
              "zsh: sourced after compinit: compdef'd, use's toolsets", r.stdout + r.stderr)
        r = zsh(f"autoload -U compinit; compinit -u -d {sb.root}/zcd3\n"
                f"source <(agentstack completions zsh)\n"
                f"{stub}words=(agentstack apply --toolset=b); CURRENT=3; PREFIX=--toolset=b; "
                "_agentstack")
        check(r.stdout.split() == ["--toolset=backend"], "zsh: --toolset=b", r.stdout + r.stderr)

    # ---- fish ----
    if not shutil.which("fish"):
        skip_part("fish is not installed (apt-get install fish)")
    else:
        fscript = os.path.join(sb.root, "agentstack.fish")
        with open(fscript, "w") as f:
            f.write(sb.run("completions", "fish").stdout)

        def fish(line, cwd=sb.project):
            r = subprocess.run(["fish", "--no-config", "-c",
                                f"source {fscript}; complete -C '{line}'"], cwd=cwd,
                               env=bindir_env(sb), capture_output=True, text=True, timeout=60)
            return [ln.split("\t")[0] for ln in r.stdout.split("\n") if ln], r

        got, r = fish("agentstack lo")
        check(got == ["lock"], "fish: 'lo' -> lock", r.stdout + r.stderr)
        _, r = fish("agentstack lo")
        check("\tpin every" in r.stdout, "fish: with the command's summary", r.stdout)
        got, r = fish("agentstack use ")
        check(sorted(got) == ["backend", "docs"], "fish: use's toolsets", r.stdout + r.stderr)
        got, r = fish("agentstack lib ")
        check(sorted(got) == subs if shutil.which("bash") else bool(got),
              "fish: lib's subcommands", got)

done()
