"""`lib sync` (docs/library.md): the library travels machine to machine over git, literal
secrets never leave, and `up --library <url> --write` sets up machine B.

Two machines are two HOMEs; the remote is a bare repository on disk (never
the network). Every git call the binary makes is non-interactive.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
# sha256("test"): a literal key as services issue them
HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def git(*args, cwd=None, env=None):
    e = dict(os.environ)
    e.update(GIT_ENV)
    if env:
        e.update(env)
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "init.defaultBranch=main", *args],
                          cwd=cwd, env=e, capture_output=True, text=True, timeout=60)


def remote_files(bare):
    r = git("--git-dir", bare, "ls-tree", "-r", "--name-only", "main")
    return r.stdout if r.returncode == 0 else ""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Machine:
    """A second HOME inside one sandbox."""

    def __init__(self, sb, name):
        self.sb = sb
        self.home = os.path.join(sb.root, name)
        self.ah = os.path.join(self.home, ".agentstack")
        os.makedirs(self.home)

    def env(self, **extra):
        e = self.sb.env(**extra)
        e["HOME"] = self.home
        e["AGENTSTACK_HOME"] = self.ah
        return e

    def run(self, *args, cwd=None, **extra):
        return self.sb.run(*args, cwd=cwd or self.sb.root, env=self.env(**extra))


def scenario_two_machines():
    with Sandbox() as sb:
        bare = os.path.join(sb.root, "library.git")
        git("init", "-q", "--bare", bare)
        a = Machine(sb, "machine-a")
        b = Machine(sb, "machine-b")

        write(os.path.join(sb.root, "src", "sql-review", "SKILL.md"),
              "---\ndescription: Review SQL\n---\nCheck every JOIN.\n")
        r = a.run("lib", "add", os.path.join(sb.root, "src", "sql-review"), "--write")
        check(r.returncode == 0, "A: lib add", r.stderr)
        write(os.path.join(sb.root, "k.toml"),
              'type = "http"\nurl = "https://kibana.example/mcp"\n[headers]\n'
              'Authorization = "Bearer ${KIBANA_TOKEN}"\n')
        r = a.run("lib", "add-server", "kibana", "--file", os.path.join(sb.root, "k.toml"),
                  "--write")
        check(r.returncode == 0, "A: lib add-server with a ${REF} header", r.stderr)
        write(os.path.join(a.ah, "lib", ".trash", "skill-old-1", "entry.toml"), "kind = 1\n")

        # scenario 7: a plain folder is fine until it opts in
        r = a.run("lib", "sync")
        check(r.returncode == 1 and "lib sync --init" in r.stderr,
              "plain folder: lib sync names --init", r.stderr)
        # scenario 4
        r = a.run("lib", "sync", "--init", "--remote", bare)
        check(r.returncode == 0 and "now a git repository" in r.stdout and
              r.stdout.endswith("next: agentstack lib sync\n"), "A: lib sync --init",
              r.stdout + r.stderr)
        r = a.run("lib", "sync")
        check(r.returncode == 0 and "synced" in r.stdout, "A: lib sync pushes",
              r.stdout + r.stderr)
        files = remote_files(bare)
        check("library.toml" in files and "skills/sql-review/SKILL.md" in files and
              "servers/kibana.toml" in files, "the remote holds library.toml and skills/",
              files)
        check(".trash" not in files and "store/" not in files and "sources.toml" not in files,
              "store, .trash and sources.toml never travel", files)
        r = a.run("lib", "sync", "--status")
        check(r.returncode == 0 and "✓ working tree clean" in r.stdout and
              "0 ahead, 0 behind the remote" in r.stdout, "lib sync --status", r.stdout)

        # the project travels through its own repository; here: a copy
        proj_a = os.path.join(sb.root, "proj-a")
        write(os.path.join(proj_a, ".agentstack", "agentstack.toml"),
              'version = 1\n\n[toolsets.backend]\nservers = ["kibana"]\n'
              'skills = ["sql-review"]\n')
        r = a.run("lock", "--write", cwd=proj_a)
        check(r.returncode == 0, "A: lock --write", r.stderr)
        proj_b = os.path.join(sb.root, "proj-b")
        shutil.copytree(proj_a, proj_b)

        # machine B, one command
        r = b.run("up", "--library", bare, cwd=proj_b)
        check(r.returncode == 0 and "New-machine setup plan" in r.stdout and
              "Nothing written. Re-run with --write to apply this plan." in r.stdout and
              not os.path.exists(os.path.join(b.ah, "lib")), "B: up previews", r.stdout)
        r = b.run("up", "--library", bare, "--write", cwd=proj_b)
        out = r.stdout
        check(r.returncode == 0 and "cloned" in out, "B: up --library --write",
              out + r.stderr)
        check("every skill matches agentstack.lock" in out, "B: install --locked passes", out)
        check("${KIBANA_TOKEN} → agentstack secret set KIBANA_TOKEN" in out,
              "B: the missing secret value is named", out)
        check("not trusted yet" in out and "agentstack trust ." in out,
              "B: the trust decision stays per machine", out)
        r = b.run("lib", "list")
        check("sql-review" in r.stdout and "kibana" in r.stdout, "B: same library", r.stdout)
        r = b.run("lock", cwd=proj_b)
        check("no pin changes" in r.stdout, "B: same pins as A", r.stdout + r.stderr)
        r = b.run("up", "--write", cwd=proj_b, KIBANA_TOKEN="x")
        check(r.returncode == 0 and "up to date with origin" in r.stdout and
              "every ${REF} resolves" in r.stdout, "B: up again; the secret set resolves",
              r.stdout + r.stderr)

        # A changes the library; B receives it fast-forward
        write(os.path.join(a.ah, "lib", "skills", "sql-review", "SKILL.md"),
              "---\ndescription: Review SQL v2\n---\n")
        r = a.run("lib", "sync")
        check(r.returncode == 0, "A: sync an edit", r.stderr)
        r = b.run("up", "--write", cwd=proj_b)
        check("pulled from origin" in r.stdout, "B: up pulls the edit", r.stdout + r.stderr)
        r = b.run("lock", cwd=proj_b)
        check("skill sql-review" in r.stdout, "B: the edit moves the pin (re-lock needed)",
              r.stdout)
        # a dirty tree is never overwritten by up
        write(os.path.join(b.ah, "lib", "skills", "sql-review", "local.md"), "mine\n")
        r = b.run("up", "--write", cwd=proj_b)
        check(r.returncode == 1 and "nothing was pulled" in r.stderr, "B: dirty tree refuses",
              r.stderr)


def scenario_refusals():
    with Sandbox() as sb:
        bare = os.path.join(sb.root, "library.git")
        git("init", "-q", "--bare", bare)
        lib = os.path.join(sb.ah, "lib")
        write(os.path.join(lib, "skills", "x", "SKILL.md"), "---\ndescription: x\n---\n")
        r = sb.run("lib", "sync", "--init", "--remote", bare, "--source", "local")
        check(r.returncode == 0 and "next: agentstack lib sync --source local\n" in r.stdout,
              "init with --source: the next step names that source", r.stdout + r.stderr)
        r = sb.run("lib", "sync")
        check(r.returncode == 0, "first push", r.stderr)
        before = git("--git-dir", bare, "rev-parse", "main").stdout

        cases = [
            ('[headers]\nAuthorization = "Bearer sk-1"\n', "Authorization"),
            ('url = "https://h/mcp?api_key=x"\n', "api_key"),
            ('args = ["--token", "x"]\n', "--token"),
            ('url = "https://u:p@h/mcp"\n', "password"),
            ('[env]\nX_CUSTOM = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"\n', "X_CUSTOM"),
            # issue 17: each was synced with exit 0
            ('[headers]\nAuthorization = "Bearer ${X}%s"\n' % HEX64, "Authorization"),
            ('[headers]\nX-Custom = "%s"\n' % HEX64, "X-Custom"),
            ('args = ["--pat", "%s"]\n' % HEX64[:40], "--pat"),
            ('args = ["--pass=hunter2hunter2"]\n', "--pass"),
            ('[env]\nSETTING = "%s"\n' % HEX64, "SETTING"),
            ('url = "https://h/mcp?code=%s"\n' % HEX64, "code"),
            ('url = "https://hooks.example.com/services/%s/x"\n' % HEX64, "url"),
        ]
        for body, key in cases:
            doc = 'type = "http"\n' + ("" if body.startswith("url") else
                                       'url = "https://h/mcp"\n') + body
            if body.startswith("args"):
                doc = 'type = "stdio"\ncommand = "x"\n' + body
            write(os.path.join(lib, "servers", "s.toml"), doc)
            r = sb.run("lib", "sync")
            check(r.returncode == 1 and
                  f"refusing to sync — '{key}' looks like a literal secret" in r.stderr and
                  "refusing to sync — a server definition holds a literal secret" in r.stderr
                  and "make it a ${REF}" in r.stderr and "--allow-secrets" in r.stderr,
                  f"refused: {key}", r.stderr)
            check("sk-1" not in r.stderr and "ghp_" not in r.stderr and ":p@" not in r.stderr
                  and HEX64[:12] not in r.stderr and "hunter2" not in r.stderr,
                  f"the value is never printed ({key})", r.stderr)
        os.remove(os.path.join(lib, "servers", "s.toml"))
        # ... and in a skill's files: prose, shell lines, JSON
        skill = os.path.join(lib, "skills", "x")
        for rel, text, key in [
                ("SKILL.md", "---\ndescription: x\n---\nRun:\n\n    export OPENAI_API_KEY="
                 "abc123def456ghi789jkl012\n", "OPENAI_API_KEY"),
                ("SKILL.md", "---\ndescription: x\n---\ncurl -H 'authorization: bearer "
                 "q9w8e7r6t5y4u3i2o1p0' https://api.example.com\n", "authorization"),
                ("conf/settings.json", '{"service": {"url": "https://h", "token": "abc123"}}\n',
                 "token")]:
            write(os.path.join(skill, rel), text)
            r = sb.run("lib", "sync")
            check(r.returncode == 1 and
                  f"refusing to sync — '{key}' looks like a literal secret" in r.stderr and
                  "a library file holds a literal secret" in r.stderr,
                  f"refused: {key} in skills/x/{rel}", r.stderr)
            check("abc123" not in r.stderr and "q9w8e7" not in r.stderr,
                  f"the value is never printed ({rel})", r.stderr)
            write(os.path.join(skill, "SKILL.md"), "---\ndescription: x\n---\n")
            if rel != "SKILL.md":
                os.remove(os.path.join(skill, rel))
        after = git("--git-dir", bare, "rev-parse", "main").stdout
        check(before == after, "nothing was pushed")

        # ordinary paths, placeholders and refs are no secrets: these sync
        write(os.path.join(lib, "servers", "p.toml"),
              'type = "stdio"\ncommand = "python3"\n'
              'args = ["/home/dev/MyProjects2024/McpServers/run.py", "/tmp/tmp.Xa81bQ/state",'
              ' "--token-file=/run/secrets/token", "--port=8080",'
              ' "550e8400-e29b-41d4-a716-446655440000"]\n'
              '[env]\nPYTHONPATH = "/home/dev/MyProjects2024/McpServers"\n'
              'GITHUB_SHA = "%s"\nAPI_KEY = "${API_KEY}"\n' % HEX64[:40])
        write(os.path.join(skill, "SKILL.md"),
              "---\ndescription: x\n---\nSet it with `agentstack secret set GITHUB_TOKEN`, then\n"
              "    export GITHUB_TOKEN=${GITHUB_TOKEN}\n    export PATH=/home/dev/MyProjects2024"
              "/bin:$PATH\npassword: <your password>\napi_key: YOUR_API_KEY\n"
              "The token expires after one hour; use --token to pass it.\n")
        r = sb.run("lib", "sync")
        check(r.returncode == 0, "benign paths, placeholders and ${REF}s sync", r.stderr)
        os.remove(os.path.join(lib, "servers", "p.toml"))
        before = git("--git-dir", bare, "rev-parse", "main").stdout

        write(os.path.join(lib, "servers", "s.toml"),
              'type = "http"\nurl = "https://h/mcp?api_key=${K}"\n[headers]\n'
              'Authorization = "Bearer ${T}"\n')
        r = sb.run("lib", "sync")
        check(r.returncode == 0, "${REF}s pass", r.stderr)

        write(os.path.join(lib, "servers", "s.toml"),
              'type = "http"\nurl = "https://h/mcp"\n[headers]\nAuthorization = "Bearer sk-1"\n')
        r = sb.run("lib", "sync", "--allow-secrets")
        check(r.returncode == 0 and "servers/s.toml" in remote_files(bare),
              "--allow-secrets overrides", r.stderr)

        # scenario 6: unparsable file; a secret committed then deleted
        write(os.path.join(lib, "servers", "s.toml"), 'type = "http\n')
        r = sb.run("lib", "sync")
        check(r.returncode == 1 and "cannot be parsed" in r.stderr, "unparsable refused",
              r.stderr)
        os.remove(os.path.join(lib, "servers", "s.toml"))
        write(os.path.join(lib, "servers", "t.toml"),
              'type = "stdio"\ncommand = "x"\n[env]\nGITHUB_TOKEN = "abc123"\n')
        git("add", "-A", cwd=lib)
        git("commit", "-qm", "oops", cwd=lib)
        sha = git("rev-parse", "HEAD", cwd=lib).stdout.strip()
        os.remove(os.path.join(lib, "servers", "t.toml"))
        r = sb.run("lib", "sync")
        check(r.returncode == 1 and "still in the outgoing history" in r.stderr and
              f"commit {sha[:8]}" in r.stderr, "history gate names the commit", r.stderr)
        check(git("--git-dir", bare, "rev-parse", "main").stdout != sha,
              "the secret commit was not pushed")


def scenario_up_errors():
    with Sandbox() as sb:
        empty = os.path.join(sb.root, "empty")
        os.makedirs(empty)
        # scenario 8
        r = sb.run("up", "--write", cwd=sb.root)
        check(r.returncode == 0 and "clone a project and run agentstack status in it" in
              r.stdout, "up outside a project", r.stdout + r.stderr)
        r = sb.run("--manifest-dir", empty, "up", "--write", cwd=sb.root)
        check(r.returncode == 1 and "no agentstack manifest in" in r.stderr,
              "up with a named missing project", r.stderr)
        # scenario 9: a failing git URL, then an unreachable origin
        bad = os.path.join(sb.root, "nowhere.git")
        r = sb.run("up", "--library", bad, "--write", cwd=sb.root)
        check(r.returncode == 1 and "git clone failed" in r.stderr and
              not os.listdir(os.path.join(sb.ah, "lib")),
              "a failing URL: git clone failed, nothing left", r.stderr)
        r = sb.run("up", "--library", "ext::sh -c id", "--write", cwd=sb.root)
        check(r.returncode == 1 and "remote helpers" in r.stderr, "ext:: refused", r.stderr)
        bare = os.path.join(sb.root, "lib.git")
        git("init", "-q", "--bare", bare)
        seed = os.path.join(sb.root, "seed")
        write(os.path.join(seed, "skills", "x", "SKILL.md"), "---\ndescription: x\n---\n")
        git("init", "-q", cwd=seed)
        git("add", "-A", cwd=seed)
        git("commit", "-qm", "x", cwd=seed)
        git("push", "-q", bare, "main", cwd=seed)
        r = sb.run("up", "--library", bare, "--write", cwd=sb.root)
        check(r.returncode == 0 and "cloned" in r.stdout, "up clones", r.stdout + r.stderr)
        shutil.rmtree(bare)
        r = sb.run("up", "--write", cwd=sb.root)
        check(r.returncode == 1 and "library pull failed" in r.stderr and bare in r.stderr,
              "unreachable origin: library pull failed + URL", r.stderr)


scenario_two_machines()
scenario_refusals()
scenario_up_errors()
done()
