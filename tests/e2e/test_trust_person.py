"""Consent is a person's act (docs/trust.md): `trust --yes --consented` and
the interactive grant refuse when the process runs inside an agent's
process tree — a coding-agent CLI among its ancestors, or a harness's
marker in the environment — unless the person sets
AGENTSTACK_CONSENT_BY_PERSON=1. Each case is the attack: an agent that
already has the digest from `trust --preview` tries to approve the project
itself."""
import json
import os
import subprocess

from aslib import BIN, Sandbox, check, done

MANIFEST = """version = 1

[servers.api]
type = "http"
url = "https://api.example.com/mcp"
"""


def agent_env(sb, **extra):
    e = sb.env()
    for k in ("AGENTSTACK_CONSENT_BY_PERSON", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT",
              "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "GEMINI_CLI",
              "AGENTSTACK_RUN_ID"):
        e.pop(k, None)
    e.update(extra)
    return e


def trust_store(sb):
    p = os.path.join(sb.ah, "trust.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f).get("trusted", {})


with Sandbox() as sb:
    sb.write(".agentstack/agentstack.toml", MANIFEST)
    r = sb.run("lock", "--write")
    check(r.returncode == 0, "lock --write", r.stdout + r.stderr)
    r = sb.run("trust", ".", "--preview")
    digest = json.loads(r.stdout)["surface_digest"]
    cmd = [BIN, "trust", ".", "--yes", "--consented", digest]

    # 1. a harness ancestor: a program named like Claude Code runs the grant
    fake = os.path.join(sb.root, "bin", "claude")
    os.makedirs(os.path.dirname(fake))
    os.symlink("/bin/sh", fake)
    r = subprocess.run([fake, "-c", '"$@"; rc=$?; exit $rc', "claude", *cmd],
                       cwd=sb.project, env=agent_env(sb), capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 1 and "refusing to trust" in r.stderr and "claude" in r.stderr
          and "person" in r.stderr, "a grant under a claude ancestor is refused", r.stderr)
    check(not trust_store(sb), "nothing was trusted", trust_store(sb))

    # 2. a node-script harness: node …/@openai/codex/bin/codex.js
    script = os.path.join(sb.root, "lib", "node_modules", "@openai", "codex", "bin", "run.sh")
    os.makedirs(os.path.dirname(script))
    with open(script, "w") as f:
        f.write('"$@"; rc=$?; exit $rc\n')
    r = subprocess.run(["/bin/sh", script, *cmd], cwd=sb.project, env=agent_env(sb),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "@openai/codex" in r.stderr,
          "a grant under a codex npm script is refused", r.stderr)

    # 3. a harness's environment marker, with no ancestor at all
    for marker in ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX_NETWORK_DISABLED",
                   "AGENTSTACK_RUN_ID"):
        r = subprocess.run(cmd, cwd=sb.project, env=agent_env(sb, **{marker: "1"}),
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and marker in r.stderr,
              f"a grant with {marker} set is refused", r.stderr)
    check(not trust_store(sb), "still nothing trusted", trust_store(sb))

    # 4. without --yes and without a terminal the refusal text is unchanged
    r = subprocess.run([BIN, "trust", "."], cwd=sb.project, env=agent_env(sb, CLAUDECODE="1"),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    check(r.returncode == 1 and "refusing to trust: stdin is not a terminal" in r.stderr,
          "non-interactive refusal text unchanged", r.stderr)

    # 5. the person's override, and a plain process tree, grant
    r = subprocess.run(cmd, cwd=sb.project,
                       env=agent_env(sb, CLAUDECODE="1", AGENTSTACK_CONSENT_BY_PERSON="1"),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and trust_store(sb), "AGENTSTACK_CONSENT_BY_PERSON=1 grants",
          r.stdout + r.stderr)
    sb.run("trust", "--revoke", ".")
    r = subprocess.run(cmd, cwd=sb.project, env=agent_env(sb), capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0 and trust_store(sb), "no agent in the tree: the grant works (CI)",
          r.stdout + r.stderr)
done()
