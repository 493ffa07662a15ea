"""Where init may put lifted secret values (red-team findings on init).

(a) A .agentstack symlinked out of the project: init refuses before writing
    anything — no .env in the symlink's target, no file store, no library
    copy, no manifest.
(b) A .env git would not ignore (.agentstack symlinked inside the repo, a
    "!.env" rule, a tracked .env): init refuses to put values there and never
    prints "gitignored" for it; a clean repo gets the rule and git confirms
    it ignores the file; doctor warns about a .env holding values that git
    does not ignore.
Never a keychain: --secrets env|file only, with no session bus.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, files_holding, git, write  # noqa: E402

TOKEN = "ghp_Fx7Kq2Lm9Rt4Vw8Yz3Bc6Dn1Gh5Jp0Ts2Uv"


def seed(sb):
    """A Claude Code config with an inline token, and a project .mcp.json."""
    write(os.path.join(sb.home, ".claude.json"), json.dumps({"mcpServers": {"gh": {
        "command": "npx", "args": ["gh-mcp"], "env": {"GH_PAT_TOKEN": TOKEN}}}}))
    sb.write(".mcp.json", '{"mcpServers":{}}')


def env(sb):
    e = sb.env()
    e.pop("DBUS_SESSION_BUS_ADDRESS", None)
    e["XDG_RUNTIME_DIR"] = os.path.join(sb.root, "no-runtime-dir")
    return e


def git_repo(path):
    r = git("init", "-q", path)
    assert r.returncode == 0, r.stderr


def ignored(repo, rel):
    e = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    return subprocess.run(["git", "-c", "core.excludesFile=/dev/null", "check-ignore", "-q",
                           "--", rel], cwd=repo, env=e).returncode == 0


def untracked(repo):
    return git("status", "--porcelain", "-uall", cwd=repo).stdout


def outside_symlink():
    for store in ("env", "file"):
        with Sandbox() as sb:
            seed(sb)
            out = os.path.join(sb.root, "outside")
            os.makedirs(out)
            os.symlink(out, os.path.join(sb.project, ".agentstack"))
            r = sb.run("init", "--yes", "--secrets", store, env=env(sb))
            check(r.returncode != 0 and "outside the project" in r.stderr
                  and "nothing was written" in r.stderr,
                  f"--secrets {store}: .agentstack -> outside dir refuses", r.stdout + r.stderr)
            check(os.listdir(out) == [], f"--secrets {store}: the outside dir is still empty",
                  os.listdir(out))
            check(not os.path.exists(os.path.join(sb.ah, "secrets.env")),
                  f"--secrets {store}: no file store written")
            check(files_holding(sb.root, TOKEN) == ["home/.claude.json"],
                  f"--secrets {store}: the token is in no file but the CLI's own",
                  files_holding(sb.root, TOKEN))


def inside_symlink():
    with Sandbox() as sb:
        seed(sb)
        git_repo(sb.project)
        os.makedirs(os.path.join(sb.project, "docs"))
        os.symlink("docs", os.path.join(sb.project, ".agentstack"))
        r = sb.run("init", "--yes", "--secrets", "env", env=env(sb))
        check(r.returncode != 0 and "symlink" in r.stderr,
              ".agentstack -> docs (inside the repo): refuses the .env", r.stdout + r.stderr)
        check("gitignored" not in r.stdout, "…and claims nothing is gitignored", r.stdout)
        check(not os.path.exists(os.path.join(sb.project, "docs", ".env"))
              and ".env" not in untracked(sb.project),
              "…no docs/.env, git status shows no .env", untracked(sb.project))
        check(files_holding(sb.project, TOKEN) == [], "…the token is in no project file")
        # keychain/file destinations never touch the project .env: still fine
        r = sb.run("init", "--yes", "--secrets", "file", env=env(sb))
        check(r.returncode == 0 and not os.path.exists(os.path.join(sb.project, "docs", ".env")),
              "--secrets file with an inside symlink still works", r.stdout + r.stderr)


def negated_rule():
    with Sandbox() as sb:
        seed(sb)
        git_repo(sb.project)
        sb.write(".agentstack/.gitignore", "!.env\n")
        r = sb.run("init", "--yes", "--secrets", "env", env=env(sb))
        check(r.returncode != 0 and "would not be ignored by git" in r.stderr
              and "!.env" in r.stderr, "a '!.env' rule: init refuses, naming the rule",
              r.stdout + r.stderr)
        check("gitignored" not in r.stdout, "…and claims nothing is gitignored", r.stdout)
        check(not os.path.exists(os.path.join(sb.project, ".agentstack", ".env"))
              and not os.path.exists(os.path.join(sb.project, ".agentstack", "agentstack.toml"))
              and not os.path.exists(os.path.join(sb.project, ".gitignore")),
              "…nothing written (no .env, no manifest, no .gitignore)",
              sorted(os.listdir(sb.project)))
        r = sb.run("init", "--dry-run", "--secrets", "env", env=env(sb))
        check(r.returncode == 0 and "--yes would refuse" in r.stdout
              and "(gitignored)" not in r.stdout, "--dry-run shows the refusal", r.stdout)


def tracked_env():
    with Sandbox() as sb:
        seed(sb)
        git_repo(sb.project)
        sb.write(".agentstack/.env", "OTHER=1\n")
        git("add", "-f", ".agentstack/.env", cwd=sb.project)
        r = sb.run("init", "--yes", "--secrets", "env", env=env(sb))
        check(r.returncode != 0 and "would not be ignored" in r.stderr,
              "a tracked .agentstack/.env: refuses", r.stdout + r.stderr)
        check(files_holding(sb.project, TOKEN) == [], "…the token is in no project file")


def clean_repo():
    with Sandbox() as sb:
        seed(sb)
        git_repo(sb.project)
        r = sb.run("init", "--yes", "--secrets", "env", env=env(sb))
        check(r.returncode == 0 and "in .agentstack/.env (gitignored)" in r.stdout,
              "a clean repo: stored, said gitignored", r.stdout + r.stderr)
        check(ignored(sb.project, ".agentstack/.env")
              and ".env" not in untracked(sb.project),
              "…and git check-ignore confirms it", untracked(sb.project))
        d = sb.run("doctor", env=env(sb))
        check("git does not ignore" not in d.stdout, "doctor: no warning for an ignored .env",
              d.stdout)

    with Sandbox() as sb:  # the project is a subdirectory of the repository
        seed(sb)
        top = os.path.dirname(sb.project)
        git_repo(top)
        r = sb.run("init", "--yes", "--secrets", "env", env=env(sb))
        check(r.returncode == 0 and "(gitignored)" in r.stdout,
              "a project inside a bigger repo: stored", r.stdout + r.stderr)
        check(ignored(top, "proj/.agentstack/.env")
              and "/.agentstack/.env" in open(os.path.join(sb.project, ".gitignore")).read(),
              "…the rule is in the project's .gitignore and git honours it", untracked(top))

    with Sandbox() as sb:  # no repository at all: stored, but never called gitignored
        seed(sb)
        r = sb.run("init", "--yes", "--secrets", "env", env=env(sb))
        check(r.returncode == 0 and "(gitignored)" not in r.stdout
              and "not in a git work tree" in r.stdout,
              "no git work tree: stored without a gitignored claim", r.stdout + r.stderr)


def doctor_warns():
    manifest = "version = 1\n"
    with Sandbox() as sb:  # a "!.env" rule added after init
        git_repo(sb.project)
        sb.write(".agentstack/agentstack.toml", manifest)
        sb.write(".agentstack/.env", "X_TOKEN=abcdef123456\n")
        sb.write(".agentstack/.gitignore", "!.env\n")
        sb.write(".gitignore", "/.agentstack/.env\n")
        d = sb.run("doctor", env=env(sb))
        check("⚠" in d.stdout and ".agentstack/.env holds 1 secret value and git does not "
              "ignore it" in d.stdout and "!.env" in d.stdout,
              "doctor warns: .env with values, re-included by '!.env'", d.stdout + d.stderr)
        os.unlink(os.path.join(sb.project, ".agentstack", ".gitignore"))
        d = sb.run("doctor", env=env(sb))
        check("git does not ignore" not in d.stdout, "…and not once the rule is gone", d.stdout)

    with Sandbox() as sb:  # .agentstack -> docs inside the repo
        git_repo(sb.project)
        sb.write("docs/agentstack.toml", manifest)
        sb.write("docs/.env", "X_TOKEN=abcdef123456\n")
        sb.write(".gitignore", "/.agentstack/.env\n")
        os.symlink("docs", os.path.join(sb.project, ".agentstack"))
        d = sb.run("doctor", env=env(sb))
        check("git does not ignore" in d.stdout and "docs/.env" in d.stdout,
              "doctor warns: .agentstack -> docs puts the .env at docs/.env, not ignored",
              d.stdout + d.stderr)


def other_writers():
    """secret set --env-file and adopt --secrets env share init's check."""
    manifest = "version = 1\n"
    for layout in ("negated", "symlink"):
        with Sandbox() as sb:
            seed(sb)
            git_repo(sb.project)
            if layout == "negated":
                sb.write(".agentstack/agentstack.toml", manifest)
                sb.write(".agentstack/.gitignore", "!.env\n")
                dotenv = os.path.join(sb.project, ".agentstack", ".env")
            else:
                sb.write("docs/agentstack.toml", manifest)
                os.symlink("docs", os.path.join(sb.project, ".agentstack"))
                dotenv = os.path.join(sb.project, "docs", ".env")
            r = sb.run("secret", "set", "T_TOKEN", "--env-file", "--stdin", input="abcdef123",
                       env=env(sb))
            check(r.returncode == 1 and "gitignored" not in r.stdout
                  and not os.path.exists(dotenv),
                  f"secret set --env-file ({layout}): refuses, no .env", r.stdout + r.stderr)
            sb.write(".mcp.json", json.dumps({"mcpServers": {"gh": {
                "command": "npx", "env": {"GH_PAT_TOKEN": TOKEN}}}}))
            r = sb.run("adopt", "--write", "--secrets", "env", env=env(sb))
            check(r.returncode == 1 and not os.path.exists(dotenv)
                  and files_holding(os.path.dirname(dotenv), TOKEN) == [],
                  f"adopt --secrets env ({layout}): refuses, no .env", r.stdout + r.stderr)


outside_symlink()
inside_symlink()
negated_rule()
tracked_env()
clean_repo()
doctor_warns()
other_writers()
done()
