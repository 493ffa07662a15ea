"""A repository's paths stay inside the project.

The attack: `[instructions.r] path = "../../sec/shadow"` (or an absolute
path) locked, was trusted, and `apply --write` copied a 0600 file of the
user's into CLAUDE.md (0644); a skill `path = "../../sshdir"` was linked
into .claude/skills/. A repository manifest's skill, instruction and
executable paths (and a server's cwd) must resolve inside the project root
after symlinks; lock, trust and apply refuse them naming the path, the rule
and file:line:col. Library items stay allowed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

SECRET = "ssh-private-bytes-4f1c"


def outside(sb):
    """A private file and a directory of the user's, outside the project."""
    sec = os.path.join(sb.root, "sec", "shadow")
    os.makedirs(os.path.dirname(sec))
    with open(sec, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(sec, 0o600)
    sk = os.path.join(sb.root, "sshdir")
    os.makedirs(sk)
    with open(os.path.join(sk, "SKILL.md"), "w") as f:
        f.write("---\ndescription: keys\n---\n" + SECRET + "\n")
    return sec, sk


def refused_everywhere(sb, label, where, rule):
    r = sb.run("lock", "--write")
    out = r.stdout + r.stderr
    check(r.returncode == 1 and where in out and rule in out and
          "must stay inside the project" in out,
          f"{label}: lock refuses, naming {where} and the rule", out)
    check(not os.path.exists(os.path.join(sb.project, "agentstack.lock")),
          f"{label}: no lock was written")
    p = sb.run("trust", "--preview")
    d = json.loads(p.stdout)["surface_digest"] if p.returncode == 0 else "x"
    r = sb.run("trust", ".", "--yes", "--consented", d)
    check(r.returncode == 1 and where in r.stdout + r.stderr,
          f"{label}: trust refuses", r.stdout + r.stderr)
    r = sb.run("apply", "--write")
    check(r.returncode != 0 and where in r.stdout + r.stderr,
          f"{label}: apply --write refuses", r.stdout + r.stderr)
    for dp, _, fs in os.walk(sb.project):
        for f in fs:
            with open(os.path.join(dp, f), errors="replace") as fh:
                check(SECRET not in fh.read(), f"{label}: {f} holds nothing of the file outside")
    check(not os.path.lexists(os.path.join(sb.project, ".claude", "skills", "k")),
          f"{label}: no skill link was placed")


with Sandbox() as sb:
    sec, sk = outside(sb)
    sb.write("agentstack.toml", 'version = 1\n[targets]\ndefault = ["claude-code"]\n'
             '[instructions.r]\npath = "../../sec/shadow"\n')
    refused_everywhere(sb, "instruction ../../sec/shadow", "agentstack.toml:5:1",
                       "'../../sec/shadow' leads out of")

    sb.write("agentstack.toml", 'version = 1\n[targets]\ndefault = ["claude-code"]\n'
             '[instructions.r]\npath = "%s"\n' % sec)
    refused_everywhere(sb, "instruction, absolute", "agentstack.toml:5:1",
                       "is absolute: traversal")

    sb.write("agentstack.toml", 'version = 1\n[targets]\ndefault = ["claude-code"]\n'
             '[skills.k]\npath = "../../sshdir"\n')
    refused_everywhere(sb, "skill ../../sshdir", "agentstack.toml:5:1",
                       "'../../sshdir' leads out of")

    # A symlink inside the project that leads out is the same escape.
    os.symlink(sk, os.path.join(sb.project, "linked"))
    sb.write("agentstack.toml", 'version = 1\n[targets]\ndefault = ["claude-code"]\n'
             '[skills.k]\npath = "linked"\n')
    refused_everywhere(sb, "skill via a symlink out", "agentstack.toml:5:1",
                       "symlink resolves outside the project")
    os.remove(os.path.join(sb.project, "linked"))

    sb.write("agentstack.toml", 'version = 1\n[targets]\ndefault = ["claude-code"]\n'
             '[instructions.r]\npath = "rules.md"\n'
             '[[instructions.r.variant]]\ncli = "claude-code"\npath = "../../sec/shadow"\n')
    sb.write("rules.md", "be kind\n")
    refused_everywhere(sb, "instruction variant", "agentstack.toml:8:1",
                       "'../../sec/shadow' leads out of")

    sb.write("agentstack.toml", 'version = 1\n[servers.s]\ntype = "stdio"\n'
             'command = "python3"\ncwd = "/etc"\n')
    r = sb.run("lock", "--write")
    check(r.returncode == 1 and "agentstack.toml:2:1" in r.stderr and
          "cwd '/etc' is absolute" in r.stderr, "an absolute server cwd is refused", r.stderr)
    sb.write("agentstack.toml", 'version = 1\n[servers.s]\ntype = "stdio"\n'
             'command = "python3"\nargs = ["../../sec/shadow"]\n')
    r = sb.run("lock", "--write")
    check(r.returncode == 1 and "resolves outside the project" in r.stdout + r.stderr,
          "an existing executable via .. is refused", r.stdout + r.stderr)

# Paths that stay inside are fine, from a nested .agentstack/ too, and so is
# the library.
with Sandbox() as sb:
    outside(sb)
    sb.write(".agentstack/agentstack.toml",
             'version = 1\n[targets]\ndefault = ["claude-code"]\n'
             '[skills.notes]\npath = "../skills/notes"\n'
             '[instructions.r]\npath = "../docs/rules.md"\n'
             '[toolsets.default]\nskills = ["notes", "libskill"]\n')
    sb.write("skills/notes/SKILL.md", "---\ndescription: notes\n---\nbody\n")
    sb.write("docs/rules.md", "be kind\n")
    sb.write("skills/libskill/SKILL.md", "---\ndescription: lib\n---\nbody\n",
             base=os.path.join(sb.ah, "lib"))
    r = sb.run("lock", "--write")
    check(r.returncode == 0, "paths inside the project and library skills lock",
          r.stdout + r.stderr)
    p = sb.run("trust", "--preview")
    r = sb.run("trust", ".", "--yes", "--consented", json.loads(p.stdout)["surface_digest"])
    check(r.returncode == 0, "... and are trusted", r.stdout + r.stderr)
    r = sb.run("apply", "--write")
    check(r.returncode == 0, "... and applied", r.stdout + r.stderr)
    claude = os.path.join(sb.project, "CLAUDE.md")
    check(os.path.exists(claude) and "be kind" in open(claude).read(),
          "the instruction inside the project is delivered")

done()
