"""`agentstack policy` end to end (issue 4; docs/policy.md).

- `policy preset <name>` previews and writes nothing; `--write` replaces only
  the [policy.*] tables of $AGENTSTACK_HOME/agentstack.toml (every byte
  outside them, comments included, stays), and a second --write changes
  nothing.
- A broken machine file fails closed on every path we can reach — policy
  status/explain/test, the gateway's first call, apply, guard check/test,
  doctor, run --plan — each naming file:line:col and the fix.
- `policy explain <server>` rows and `policy test tool|egress|secret|path`
  decisions with the exact refusal text of docs/policy.md.
- A URL-shaped egress pattern in a project manifest is an error at
  file:line:col; an IDNA host pattern is matched in its xn-- form.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BIN, SRC, Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, is_error, text  # noqa: E402

MACHINE_REFUSAL = ' (machine policy — ~/.agentstack/agentstack.toml)'


def machine_path(sb):
    return os.path.join(sb.ah, "agentstack.toml")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def out(r):
    return r.stdout + r.stderr


# ---- presets ---------------------------------------------------------------

HAND_WRITTEN = """# my machine file — hand-written, keep these comments
version = 1   # the only required key

[guard]
enabled = false  # guard comment stays

[policy]
allowed_sources = ["git:github.com/acme/*"]   # not a [policy.*] table: kept

[policy.tools]
"*" = ["!foo_*"]

[instructions.house]
# house rules for every project
path = "house.md"
"""

with Sandbox() as sb:
    mp = machine_path(sb)

    # preview with no machine file: nothing is created
    r = sb.run("policy", "preset", "developer")
    check(r.returncode == 0 and "preview only — nothing written" in r.stdout and
          "[policy.tools]" in r.stdout and not os.path.exists(mp),
          "preset preview (no machine file) writes nothing", out(r))

    # --write with no machine file: the preset file whole, 0600
    r = sb.run("policy", "preset", "ci", "--write")
    with open(os.path.join(SRC, "examples", "policies", "ci.toml"), "rb") as f:
        ci_example = f.read()
    check(r.returncode == 0 and os.path.exists(mp) and read(mp) == ci_example and
          stat.S_IMODE(os.stat(mp).st_mode) == 0o600,
          "preset --write (no machine file) writes examples/policies/ci.toml, mode 0600", out(r))
    r = sb.run("policy", "status")
    check(r.returncode == 0 and "restrictive" in r.stdout, "the written preset reads restrictive",
          out(r))

    # preview against a hand-written file: bytes and mtime unchanged
    sb.write("agentstack.toml", HAND_WRITTEN, base=sb.ah)
    os.chmod(mp, 0o600)
    before, st = read(mp), os.stat(mp)
    r = sb.run("policy", "preset", "developer")
    check(r.returncode == 0 and "preview only" in r.stdout and '-"*" = ["!foo_*"]' in r.stdout
          and read(mp) == before and os.stat(mp).st_mtime_ns == st.st_mtime_ns,
          "preset preview shows the diff and leaves the file byte for byte", out(r))

    # --write replaces only the [policy.*] tables
    r = sb.run("policy", "preset", "developer", "--write")
    after = read(mp).decode()
    head = HAND_WRITTEN[:HAND_WRITTEN.index("[policy.tools]")]
    tail_block = '[instructions.house]\n# house rules for every project\npath = "house.md"\n'
    check(r.returncode == 0 and "wrote preset 'developer'" in r.stdout and
          after.startswith(head) and tail_block in after and "!foo_*" not in after and
          '"!delete_*"' in after and "[policy.egress]" in after and
          "[policy.secrets]" in after and "[policy.filesystem]" in after,
          "--write: bytes before the policy tables identical, [instructions] kept, rules replaced",
          after)
    check("# guard comment stays" in after and "# not a [policy.*] table: kept" in after and
          "# my machine file" in after, "--write keeps every comment outside [policy.*]", after)
    check(stat.S_IMODE(os.stat(mp).st_mode) == 0o600, "--write keeps mode 0600")
    r = sb.run("policy", "status", "--json")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("machine_policy", {}).get("word") == "restrictive",
          "the result loads as a machine file (restrictive)", out(r))

    # idempotent: a second --write writes nothing, bytes identical
    once = read(mp)
    r = sb.run("policy", "preset", "developer", "--write")
    check(r.returncode == 0 and "nothing to write" in r.stdout and read(mp) == once,
          "a second --write is a no-op (byte-identical)", out(r) + read(mp).decode())

    # switching presets drops the tables the new preset does not have
    r = sb.run("policy", "preset", "compatible", "--write")
    after = read(mp).decode()
    check(r.returncode == 0 and after.startswith(head) and tail_block in after and
          "[policy.egress]" not in after and "[policy.secrets]" not in after and
          "[policy.filesystem]" not in after and '"!drop_*"' in after,
          "developer → compatible removes egress/secrets/filesystem, keeps the rest", after)
    once = read(mp)
    r = sb.run("policy", "preset", "compatible", "--write")
    check(r.returncode == 0 and read(mp) == once, "compatible twice: byte-identical")

    # every preset applies and re-applies cleanly over the hand-written file
    for name in ("developer", "compatible", "locked-down", "ci"):
        sb.write("agentstack.toml", HAND_WRITTEN, base=sb.ah)
        r1 = sb.run("policy", "preset", name, "--write")
        first = read(mp)
        r2 = sb.run("policy", "preset", name, "--write")
        check(r1.returncode == 0 and r2.returncode == 0 and read(mp) == first and
              first.decode().startswith(head),
              f"preset {name}: --write then --write is idempotent", out(r1) + out(r2))

    # unknown preset: usage error with a suggestion, nothing written
    before = read(mp)
    r = sb.run("policy", "preset", "lockeddown", "--write")
    check(r.returncode == 2 and "did you mean 'locked-down'" in r.stderr and read(mp) == before,
          "unknown preset: exit 2 with did-you-mean, nothing written", out(r))

    # a machine file broken outside the policy tables: refused, unchanged
    broken = HAND_WRITTEN.replace("enabled = false", "enabled = fals")
    sb.write("agentstack.toml", broken, base=sb.ah)
    r = sb.run("policy", "preset", "developer", "--write")
    check(r.returncode == 1 and re.search(re.escape(mp) + r":5:\d+", r.stderr) and
          read(mp).decode() == broken,
          "preset --write over a broken file: exit 1 at file:line:col, file unchanged", out(r))


# ---- a broken machine file fails closed everywhere -------------

DEMO = os.path.join(SRC, "examples", "demo")
BROKEN = 'version = 1\n[policy.tools]\n"*" = ["!delete_*"\n'  # unclosed array


def demo_project(sb):
    for f in ("agentstack.toml", "server.py"):
        shutil.copy(os.path.join(DEMO, f), os.path.join(sb.project, f))
    os.makedirs(sb.ah, exist_ok=True)
    shutil.copy(os.path.join(DEMO, "machine.toml"), machine_path(sb))
    r = sb.run("lock", "--write")
    check(r.returncode == 0, "demo: lock --write", out(r))
    digest = json.loads(sb.run("trust", ".", "--preview").stdout)["surface_digest"]
    r = sb.run("trust", ".", "--yes", "--consented", digest)
    check(r.returncode == 0, "demo: trusted", out(r))


def names_location_and_fix(text_, mp, loc):
    """The error names file:line:col and, on a following line, the fix."""
    return f"{mp}:{loc}" in text_ and re.search(r"fix " + re.escape(mp), text_) is not None


with Sandbox() as sb:
    demo_project(sb)
    mp = machine_path(sb)
    sb.write("agentstack.toml", BROKEN, base=sb.ah)
    loc = "4:1"  # end of file inside the unclosed array

    for args in (["policy", "status"], ["policy", "explain", "demo"],
                 ["policy", "test", "tool", "demo", "echo"], ["policy", "ruleset"]):
        r = sb.run(*args)
        check(r.returncode == 1 and "refusing to continue" in r.stderr and
              names_location_and_fix(r.stderr, mp, loc),
              f"broken machine file: {' '.join(args)} exits 1 naming file:line:col and the fix",
              out(r))

    # the gateway's first brokered call refuses and says why
    with Gateway(sb, "--auto-project") as g:
        g.initialize()
        c = g.call("demo__echo", {"message": "hi"})
        t = text(c)
        check(is_error(c) and "refusing to continue" in t and names_location_and_fix(t, mp, loc)
              and "nothing ran" in t, "broken machine file: mcp first call refused", t)
        g.close()

    # apply: refuses, and (under ASan) leaks nothing on that error path
    for args in (["apply"], ["apply", "--write"]):
        r = sb.run(*args)
        check(r.returncode == 1 and "refusing to continue" in r.stderr and
              names_location_and_fix(r.stderr, mp, loc),
              f"broken machine file: {' '.join(args)} refuses", out(r))

    # the host guard: a Claude Code hook payload is denied, naming the file
    payload = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse",
                          "tool_name": "Bash", "cwd": sb.project,
                          "tool_input": {"command": "ls"}})
    r = subprocess.run([BIN, "guard", "check", "--protocol", "claude"], cwd=sb.project,
                       env=sb.env(), input=payload, capture_output=True, text=True, timeout=60)
    try:
        hs = json.loads(r.stdout)["hookSpecificOutput"]
    except (ValueError, KeyError):
        hs = {}
    check(hs.get("permissionDecision") == "deny" and
          f"{mp}:{loc}" in hs.get("permissionDecisionReason", ""),
          "broken machine file: guard check denies the tool call naming file:line:col", out(r))
    r = sb.run("guard", "test", "ls")
    check(r.returncode == 1 and r.stdout.startswith("DENY") and
          names_location_and_fix(r.stdout + r.stderr, mp, loc),
          "broken machine file: guard test denies, naming the file and the fix", out(r))

    # doctor (plain and --ci) and run --plan
    r = subprocess.run([BIN, "doctor", "--ci"], cwd=sb.project, env=sb.env(),
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    check(r.returncode == 1 and "refusing to continue" in r.stdout and
          f"{mp}:{loc}" in r.stdout and f"fix {mp} at line 4, column 1" in r.stdout,
          "broken machine file: doctor --ci exits 1 naming file:line:col and the fix", out(r))
    r = sb.run("doctor")
    check("blocked" in r.stdout and f"{mp}:{loc}" in r.stdout,
          "broken machine file: plain doctor reports Machine policy blocked", out(r))
    for mode in ("--sandbox", "--lockdown"):
        r = sb.run("run", mode, "--plan", "/bin/true")
        check(r.returncode == 1 and "refusing to continue" in r.stderr and
              names_location_and_fix(r.stderr, mp, loc) and "nothing was launched" in r.stderr,
              f"broken machine file: run {mode} --plan refuses", out(r))

    # valid TOML, invalid policy: a URL-shaped machine egress entry
    sb.write("agentstack.toml", 'version = 1\n[policy.egress]\n"*" = ["http://evil.example"]\n',
             base=sb.ah)
    r = sb.run("policy", "status")
    check(r.returncode == 1 and f"{mp}:3:8" in r.stderr and "a URL is not a host pattern" in
          r.stderr and "refusing to continue" in r.stderr,
          "machine egress URL pattern: blocked at file:line:col", out(r))
    # an unknown [policy] key is a typo, never an empty firewall
    sb.write("agentstack.toml", 'version = 1\n[policy.tool]\n"*" = ["!delete_*"]\n', base=sb.ah)
    r = sb.run("policy", "test", "tool", "demo", "delete_all")
    check(r.returncode == 1 and f"{mp}:2:" in r.stderr and "did you mean 'tools'" in r.stderr,
          "machine [policy.tool] typo: refused with did-you-mean at file:line", out(r))


# ---- explain and test: the exact refusal text -------------------

PROJECT = """version = 1
[servers.ops]
type = "stdio"
command = "/bin/cat"
env = { TOKEN = "${OPS_TOKEN}" }

[servers.api]
type = "http"
url = "https://api.example.com/mcp"

[policy.tools]
ops = ["get_*", "list_*", "delete_everything", "!secret_read"]

[policy.egress]
api = ["api.example.com:443", "bücher.example"]

[policy.secrets]
"*" = ["!AWS_*"]
"""

MACHINE = """version = 1
[policy.tools]
"*" = ["!delete_*"]
ops = ["!admin_*"]

[policy.egress]
"*" = ["!169.254.169.254", "!metadata.google.internal"]

[policy.secrets]
api = ["!GITHUB_*"]

[policy.filesystem]
deny = [".env*", "~/.aws/credentials"]
"""

with Sandbox() as sb:
    sb.write("agentstack.toml", PROJECT)
    sb.write("agentstack.toml", MACHINE, base=sb.ah)

    r = sb.run("policy", "explain", "ops")
    o = r.stdout
    check(r.returncode == 0 and
          re.search(r"Tool policy +allow only \[get_\*, list_\*, delete_everything\]; "
                    r"deny \[secret_read\]", o) and
          re.search(r"Tool policy \(machine\) +deny \[admin_\*\] — this project cannot loosen "
                    r"it", o) and
          re.search(r'Tool policy \(machine\) +deny \[delete_\*\] \(via "\*"\) — this project '
                    r"cannot loosen it", o) and
          re.search(r'Secret access \(policy\) +deny \[AWS_\*\] \(via "\*"\)', o) and
          re.search(r'Egress \(machine\) +deny \[169\.254\.169\.254, metadata\.google\.internal\]'
                    r' \(via "\*"\) — this project cannot loosen it', o) and
          "Machine policy status" in o and "restrictive" in o,
          "policy explain ops: every layer's rows with the exact phrases", o)
    r = sb.run("policy", "explain", "api")
    check(r.returncode == 0 and
          re.search(r"Egress \(policy\) +allow only \[api\.example\.com:443, "
                    r"xn--bcher-kva\.example\]", r.stdout) and
          re.search(r"Secret access \(machine\) +deny \[GITHUB_\*\] — this project cannot "
                    r"loosen it", r.stdout),
          "policy explain api: Egress (policy) and Secret access (machine)", r.stdout)
    r = sb.run("policy", "explain", "api", "--json")
    j = json.loads(r.stdout)
    check(r.returncode == 0 and
          j["policy"]["egress"] == {"api": ["api.example.com:443", "bücher.example"]} and
          j["policy"]["secrets"] == {"*": ["!AWS_*"]} and j["policy"]["tools"] == {} and
          j["machine"]["tools"] == {"*": ["!delete_*"]},
          "policy explain --json: policy{tools,egress,secrets} per layer", r.stdout)
    r = sb.run("policy", "explain", "ghost")
    check(r.returncode == 0 and 'deny [delete_*] (via "*")' in r.stdout,
          "explain of an undeclared server still shows the \"*\" rules", r.stdout)

    def decide(*args, port=None):
        extra = ["--port", str(port)] if port else []
        return sb.run("policy", "test", *args, *extra)

    cases = [
        (("tool", "ops", "delete_everything"), 1,
         'denied by [policy.tools] rule "!delete_*"' + MACHINE_REFUSAL),
        (("tool", "ops", "DELETE_all"), 1,
         'denied by [policy.tools] rule "!delete_*"' + MACHINE_REFUSAL),
        (("tool", "renamed", "delete_repo"), 1,
         'denied by [policy.tools] rule "!delete_*"' + MACHINE_REFUSAL),
        (("tool", "ops", "admin_reset"), 1,
         'denied by [policy.tools] rule "!admin_*"' + MACHINE_REFUSAL),
        (("tool", "ops", "run_job"), 1,
         "not in the [policy.tools] allowlist (delete_everything, get_*, list_*)"),
        (("tool", "ops", "get_status"), 0, "ALLOW tool ops → get_status"),
        (("egress", "api", "2852039166"), 1,
         'denied by [policy.egress] rule "!169.254.169.254"' + MACHINE_REFUSAL),
        (("egress", "api", "METADATA.Google.Internal."), 1,
         'denied by [policy.egress] rule "!metadata.google.internal"' + MACHINE_REFUSAL),
        (("secret", "ops", "AWS_KEY"), 1, 'denied by [policy.secrets] rule "!AWS_*"'),
        (("secret", "api", "GITHUB_TOKEN"), 1,
         'denied by [policy.secrets] rule "!GITHUB_*"' + MACHINE_REFUSAL),
        (("secret", "ops", "OPS_TOKEN"), 0, "ALLOW secret ops → OPS_TOKEN"),
        (("path", "sub/dir/.env"), 1,
         'denied by [policy.filesystem] deny rule ".env*"' + MACHINE_REFUSAL),
        (("path", os.path.join(sb.home, ".aws", "credentials")), 1, MACHINE_REFUSAL),
        (("path", os.path.join(sb.home, ".aws", "config")), 0, "ALLOW path"),
        (("path", "src/a.rs"), 0, "ALLOW path src/a.rs"),
        (("workspace",), 1, "no [policy.filesystem] write scope covers the workspace "
                            "(sandbox workspace writes are deny-by-default)"),
    ]
    for args, rc, needle in cases:
        r = decide(*args)
        check(r.returncode == rc and needle in r.stdout,
              f"policy test {' '.join(args)} → exit {rc}: {needle}", out(r))
    r = decide("tool", "ops", "secret_read")
    check(r.returncode == 1 and 'denied by [policy.tools] rule "!secret_read"' in r.stdout and
          "machine policy" not in r.stdout,
          "a project-layer denial carries no machine attribution", r.stdout)

    # egress port pins: a query port must equal the pin; no port ignores it
    r = decide("egress", "api", "api.example.com", port=22)
    check(r.returncode == 1 and "not in the [policy.egress] allowlist" in r.stdout,
          "egress api.example.com:22 misses the :443 pin", r.stdout)
    r = decide("egress", "api", "api.example.com", port=443)
    check(r.returncode == 0 and r.stdout.startswith("ALLOW"), "egress api.example.com:443 allowed",
          r.stdout)

    # IDNA: the Unicode pattern is matched in its xn-- form
    r = sb.run("policy", "ruleset")
    check(r.returncode == 0 and "xn--bcher-kva.example" in r.stdout and "bücher" not in r.stdout,
          "IDNA pattern compiles to its xn-- form", r.stdout)
    for host in ("xn--bcher-kva.example", "XN--BCHER-KVA.EXAMPLE."):
        r = decide("egress", "api", host)
        check(r.returncode == 0 and r.stdout.startswith("ALLOW"),
              f"egress {host} matches the IDNA pattern (case, trailing dot)", out(r))
    r = decide("egress", "api", "bücher.example")
    check(r.returncode == 1 and r.stdout.startswith("DENY"),
          "a non-ASCII subject host is refused", r.stdout)
    r = decide("egress", "api", "xn--bcher-kva.example.evil")
    check(r.returncode == 1, "a look-alike suffix does not match", r.stdout)

    # usage errors
    r = sb.run("policy", "test", "tool", "ops")
    check(r.returncode == 2, "policy test with a missing subject: exit 2", out(r))
    r = sb.run("policy", "explian")
    check(r.returncode == 2 and "did you mean 'explain'" in r.stderr,
          "unknown subcommand: exit 2 with did-you-mean", out(r))

    # a URL-shaped egress pattern in the project manifest: error at file:line:col
    proj = os.path.join(sb.project, "agentstack.toml")
    sb.write("agentstack.toml", PROJECT.replace('"bücher.example"', '"https://api.example.com"'))
    for args in (["policy", "explain", "api"], ["policy", "test", "egress", "api", "x.example"],
                 ["policy", "ruleset"]):
        r = sb.run(*args)
        check(r.returncode == 1 and f"{proj}:15:31" in r.stderr and
              "a URL is not a host pattern" in r.stderr and
              'rewrite "https://api.example.com" as host' in r.stderr,
              f"URL-shaped project egress pattern: {' '.join(args)} fails at file:line:col",
              out(r))
    r = subprocess.run([BIN, "doctor", "--ci"], cwd=sb.project, env=sb.env(OPS_TOKEN="x"),
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    check(r.returncode == 1 and f"{proj}:15:31" in r.stdout and "is malformed" in r.stdout,
          "URL-shaped project egress pattern: doctor --ci fails naming file:line:col", out(r))

done()
