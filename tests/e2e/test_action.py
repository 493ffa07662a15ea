"""The GitHub Action (action.yml) without GitHub: parse its composite `run:`
steps (stdlib only) and execute exactly those scripts, with the runner's
expressions and $GITHUB_PATH emulated, against fixture projects. The build
branch is skipped through the action's own `binary` input."""
import os
import re
import subprocess
import tempfile

from aslib import BIN, SRC, Sandbox, check, done


def parse_steps(path):
    """Steps as dicts: name, working-directory, env, run (the script)."""
    steps, cur, key = [], None, None
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^    - name: (.*)$", line)
        if m:
            cur = {"name": m.group(1), "env": {}, "run": "", "working-directory": None}
            steps.append(cur)
            key = None
        elif cur is not None and re.match(r"^      env:\s*$", line):
            key = "env"
        elif cur is not None and key == "env" and re.match(r"^        \S", line):
            k, v = line.strip().split(":", 1)
            cur["env"][k] = v.strip()
        elif cur is not None and re.match(r"^      run: \|\s*$", line):
            body = []
            i += 1
            while i < len(lines) and (lines[i].startswith("        ") or not lines[i].strip()):
                body.append(lines[i][8:])
                i += 1
            cur["run"] = "\n".join(body).rstrip() + "\n"
            key = None
            continue
        elif cur is not None and re.match(r"^      [a-z-]+:", line):
            k, v = line.strip().split(":", 1)
            cur[k] = v.strip()
            key = None
        i += 1
    return steps


def expand(text, ctx):
    def sub(m):
        expr = m.group(1).strip()
        if expr not in ctx:
            raise KeyError(f"action.yml uses an expression the test does not know: {expr}")
        return ctx[expr]
    return re.sub(r"\$\{\{(.*?)\}\}", sub, text)


def run_action(sb, workdir, inputs):
    """Runs every step like the runner would; returns (exit code, output) of the
    first failing step or (0, all output)."""
    temp = tempfile.mkdtemp(prefix="runner-", dir=sb.root)
    gh_path = os.path.join(temp, "github_path")
    open(gh_path, "w").close()
    ctx = {"inputs.binary": inputs.get("binary", ""), "inputs.version": "",
           "inputs.working-directory": inputs.get("working-directory", "."),
           "github.action_path": SRC, "github.action_repository": "agentstack/agentstack",
           "runner.temp": temp}
    env = sb.env(RUNNER_TEMP=temp, GITHUB_PATH=gh_path, CI="true")
    env["PATH"] = "/usr/bin:/bin"
    out = ""
    for st in parse_steps(os.path.join(SRC, "action.yml")):
        e = dict(env)
        with open(gh_path) as f:
            extra = [p for p in f.read().split("\n") if p]
        e["PATH"] = ":".join(reversed(extra) if extra else []) + (":" if extra else "") + env["PATH"]
        for k, v in st["env"].items():
            e[k] = expand(v, ctx)
        wd = expand(st["working-directory"], ctx) if st["working-directory"] else "."
        cwd = os.path.join(workdir, wd)
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", expand(st["run"], ctx)],
                           cwd=cwd, env=e, capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL)
        out += f"## {st['name']}\n{r.stdout}{r.stderr}"
        if r.returncode != 0:
            return r.returncode, out, st["name"]
    return 0, out, None


steps = parse_steps(os.path.join(SRC, "action.yml"))
names = [s["name"] for s in steps]
check(names == ["Set up agentstack", "agentstack install --locked", "agentstack doctor --ci"],
      "action.yml has the three documented steps", names)
check(all(s.get("shell") == "bash" for s in steps), "every step runs in bash")

with Sandbox() as sb:
    repo = os.path.join(sb.root, "repo")
    sb.write("app/.agentstack/agentstack.toml",
             'version = 1\n[skills.review]\npath = "skills/review"\n', base=repo)
    sb.write("app/.agentstack/skills/review/SKILL.md",
             "---\ndescription: review code\n---\nReview the diff.\n", base=repo)
    r = subprocess.run([BIN, "lock", "--write"], cwd=os.path.join(repo, "app"), env=sb.env(),
                       capture_output=True, text=True)
    check(r.returncode == 0, "fixture locked", r.stdout + r.stderr)
    rc, out, failed = run_action(sb, repo, {"binary": BIN, "working-directory": "app"})
    check(rc == 0, "the action passes on a clean, untrusted checkout", out)
    check("agentstack " in out and "0 errors" in out, "it ran --version and doctor --ci", out)

    skill = os.path.join(repo, "app", ".agentstack", "skills", "review", "SKILL.md")
    with open(skill, "a") as f:
        f.write("Be brief.\u200d\n")
    rc, out, failed = run_action(sb, repo, {"binary": BIN, "working-directory": "app"})
    check(rc == 1 and failed in ("agentstack install --locked", "agentstack doctor --ci"),
          "a zero-width joiner fails the pipeline", out)

    with open(skill, "w") as f:
        f.write("---\ndescription: review code\n---\nReview the diff, then more.\n")
    rc, out, failed = run_action(sb, repo, {"binary": BIN, "working-directory": "app"})
    check(rc == 1 and ("out of date" in out or "drift" in out),
          "a skill edited after locking fails the pipeline (lock drift)", out)

done()
