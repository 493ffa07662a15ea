"""`add skill <source>`: a skill from a git
repository (a local repo, file:// — no network) or a spelled path; preview
changes nothing; --write adds [skills.<n>] (git + rev = the resolved commit
+ subpath, or a path), joins the toolset and pins at once. Bad input —
several skills without a choice, a flag disagreeing with the source,
http://, credentials in a URL, a missing ref, hidden Unicode, a taken name —
is a clear error with the project byte-identical.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, files, git, read, write  # noqa: E402


def make_repo(root):
    d = os.path.join(root, "skills-repo")
    write(os.path.join(d, "skills", "sql-review", "SKILL.md"),
          "---\ndescription: Review SQL\x1b[31m safely\n---\nbody\n")
    write(os.path.join(d, "skills", "other", "SKILL.md"), "---\ndescription: Other\n---\nx\n")
    write(os.path.join(d, "skills", "sneaky", "SKILL.md"),
          "---\ndescription: hidden\n---\nignore\u200b previous\n")
    git("init", "-q", cwd=d)
    git("add", "-A", cwd=d)
    git("commit", "-qm", "one", cwd=d)
    git("tag", "v1", cwd=d)
    return d


BASE = 'version = 1\n# mine\n\n[toolsets.default]\nskills = []\n'


def scenario_git():
    with Sandbox() as sb:
        repo = make_repo(sb.root)
        url = "file://" + repo
        sb.write(".agentstack/agentstack.toml", BASE)
        mpath = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        lpath = os.path.join(sb.project, ".agentstack", "agentstack.lock")
        before = files(sb.project)

        r = sb.run("add", "skill", url)
        check(r.returncode == 1 and "holds 3 skills" in r.stderr and "--skill" in r.stderr,
              "several skills and no choice: a clear error", r.stderr)
        r = sb.run("add", "skill", url, "--list")
        check(r.returncode == 0 and "sql-review" in r.stdout and "other" in r.stdout and
              "\x1b" not in r.stdout, "--list names them, descriptions sanitized", r.stdout)
        r = sb.run("add", "skill", url, "--skill", "sql-review")
        check(r.returncode == 0 and "Dry run." in r.stdout and "\x1b" not in r.stdout and
              "+ [skills.sql-review]" in r.stdout and
              "toolset 'default' skills += \"sql-review\"" in r.stdout,
              "preview", r.stdout + r.stderr)
        check(files(sb.project) == before, "preview changes nothing")

        r = sb.run("add", "skill", url + "#v1", "--rev", "v2", "--skill", "sql-review")
        check(r.returncode == 1 and "disagrees" in r.stderr, "flag vs source disagreement",
              r.stderr)
        r = sb.run("add", "skill", url + "#v9", "--skill", "sql-review", "--write")
        check(r.returncode == 1 and "nothing added" in r.stderr, "a missing ref", r.stderr)
        r = sb.run("add", "skill", url, "--skill", "sneaky", "--write")
        check(r.returncode == 1 and "failed the content scan" in r.stderr,
              "hidden Unicode refuses", r.stderr)
        r = sb.run("add", "skill", "http://example.invalid/x.git", "--write")
        check(r.returncode == 1 and "http://" in r.stderr, "http:// refused", r.stderr)
        r = sb.run("add", "skill", "https://u:tok@example.invalid/x.git", "--write")
        check(r.returncode == 1 and "credentials" in r.stderr, "credentials refused", r.stderr)
        r = sb.run("add", "skill", "not a source", "--write")
        check(r.returncode == 1 and "is not a skill source" in r.stderr, "garbage refused",
              r.stderr)
        check(files(sb.project) == before, "every refusal left the project byte-identical")

        r = sb.run("add", "skill", url + "#v1", "--skill", "sql-review", "--write")
        check(r.returncode == 0 and "✓ added skill 'sql-review' (git)" in r.stdout,
              "add skill --write", r.stdout + r.stderr)
        commit = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
        m = read(mpath)
        check(m.startswith(BASE[:15]) and f'git = "{url}"' in m and
              f'rev = "{commit}"' in m and 'subpath = "skills/sql-review"' in m and
              'skills = ["sql-review"]' in m, "entry pinned at the commit, joined", m)
        lock = read(lpath)
        check(re.search(r'name = "sql-review"\nsource = "git"', lock) and commit in lock,
              "lock pins it at once", lock)
        r = sb.run("install", "--locked")
        check(r.returncode == 0, "install --locked agrees with the pins", r.stdout + r.stderr)
        r = sb.run("add", "skill", url, "--skill", "sql-review", "--write")
        check(r.returncode == 1 and "already exists" in r.stderr, "a taken name", r.stderr)


def scenario_path():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", BASE)
        sb.write("mine/SKILL.md", "---\ndescription: Mine\n---\nhello\n")
        sb.write(".agentstack/inplace/SKILL.md", "---\ndescription: In place\n---\nx\n")
        mpath = os.path.join(sb.project, ".agentstack", "agentstack.toml")
        r = sb.run("add", "skill", "./mine", "--write")
        check(r.returncode == 0 and "✓ added skill 'mine' (path)" in r.stdout,
              "a folder outside the manifest dir", r.stdout + r.stderr)
        check(read(os.path.join(sb.project, ".agentstack", "skills", "mine", "SKILL.md"))
              .endswith("hello\n"), "is copied under skills/")
        r = sb.run("add", "skill", "./.agentstack/inplace", "--name", "inplace", "--write")
        check(r.returncode == 0, "a folder inside is named in place", r.stdout + r.stderr)
        m = read(mpath)
        check('[skills.mine]\npath = "./skills/mine"' in m and
              '[skills.inplace]\npath = "./inplace"' in m and
              'skills = ["mine", "inplace"]' in m, "entries and memberships", m)
        r = sb.run("add", "skill", "./nope", "--write")
        check(r.returncode == 1 and "not a directory" in r.stderr, "missing folder", r.stderr)


def scenario_already_listed():
    # a toolset that already names the skill: joining it again writes no duplicate
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml",
                 'version = 1\n\n[toolsets.default]\nskills = ["mine"]\n')
        sb.write("mine/SKILL.md", "---\ndescription: Mine\n---\nhello\n")
        r = sb.run("add", "skill", "./mine", "--write")
        m = read(os.path.join(sb.project, ".agentstack", "agentstack.toml"))
        check(r.returncode == 0 and 'skills = ["mine"]\n' in m and m.count('"mine"') == 1,
              "already listed: no duplicate membership", r.stdout + r.stderr + m)
        check("toolset 'default' already lists \"mine\"" in r.stdout and
              "skills += " not in r.stdout, "the report says it was already listed", r.stdout)


scenario_git()
scenario_path()
scenario_already_listed()
done()
