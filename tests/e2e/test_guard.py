"""Host guard end to end (docs/guard.md): the real
binary as each CLI's hook, payloads in each CLI's format, one host-guard row
per deny, install/uninstall wiring that keeps the user's own entries.

ctest runs it as CTEST_SHARDS entries (e2e/test_guard/1 ... /N,
aslib.shard), side by side under `ctest -j`: the scenarios below are dealt
round the shards, the every-command classification (one hook process per
listed (sub)command, the bulk of the time) in one part per shard; run by
hand it runs everything."""
import json
import os
import subprocess

from aslib import BIN, Sandbox, check, done, shard

CTEST_SHARDS = 3

MACHINE_ON = """version = 1
[guard]
enabled = true
allow_roots = []
deny = [".env", "*.pem"]
"""


def hook(sb, payload, proto=None, cwd=None, env=None):
    args = [BIN, "guard", "check"] + (["--protocol", proto] if proto else [])
    data = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
    if isinstance(data, str):
        data = data.encode()
    return subprocess.run(args, input=data, capture_output=True, timeout=60,
                          cwd=cwd or sb.project, env=env or sb.env())


def denied(r):
    out = r.stdout.decode()
    return ("\"deny\"" in out or "\"block\"" in out or r.returncode == 2)


def rows(sb):
    p = os.path.join(sb.ah, "audit", "calls.jsonl")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(line) for line in f if line.strip()]


def bash(sb, cmd, tool="Bash"):
    return {"session_id": "s1", "cwd": sb.project, "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": {"command": cmd}}


def tool(sb, name, **inp):
    return {"session_id": "s1", "cwd": sb.project, "hook_event_name": "PreToolUse",
            "tool_name": name, "tool_input": inp}


def restricted_folders(layout):
    with Sandbox() as sb:
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write("agentstack.toml", MACHINE_ON, base=sb.ah)
        deny = ('[policy.filesystem]\ndeny = ["secrets/**", "personal-notes/**", '
                '"infra/prod/**"]\n')
        rel = ".agentstack/agentstack.toml" if layout == "nested" else "agentstack.toml"
        sb.write(rel, "version = 1\n" + deny)
        cases = [
            (tool(sb, "Read", file_path="secrets/db.txt"), True),
            (tool(sb, "Write", file_path="personal-notes/a.md", content="x"), True),
            (tool(sb, "Edit", file_path="infra/prod/main.tf", old_string="a",
                  new_string="b"), True),
            (tool(sb, "Write", file_path="/opt/acme/out.txt", content="x"), True),
            (bash(sb, "rm -rf ."), True),
            (tool(sb, "Read", file_path="src/index.ts"), False),
            (tool(sb, "Write", file_path="src/index.ts", content="x"), False),
            (bash(sb, "ls src"), False),
        ]
        n_deny = 0
        for proto in ("claude", "codex"):
            for payload, want in cases:
                r = hook(sb, payload, proto)
                check(denied(r) == want and r.returncode == 0,
                      f"[{layout}/{proto}] {payload['tool_name']} "
                      f"{json.dumps(payload['tool_input'])} → {'deny' if want else 'allow'}",
                      r.stdout.decode() + r.stderr.decode())
                n_deny += want
        got = [x for x in rows(sb) if x["server"] == "host-guard"]
        check(len(got) == n_deny, f"[{layout}] one host-guard row per deny ({n_deny})",
              len(got))
        r = sb.run("guard", "test", "rm", "-rf", "/")
        check(r.returncode == 1 and r.stdout.startswith("DENY  rm -rf /"),
              "guard test rm -rf / exits nonzero", r.stdout)
        r = sb.run("guard", "test", "ls", "-la")
        check(r.returncode == 0 and r.stdout.startswith("ALLOW ls -la"),
              "guard test ls -la exits 0", r.stdout)


def guard_demo():
    with Sandbox() as sb:
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write("agentstack.toml", MACHINE_ON, base=sb.ah)
        for cmd, want in (("rm -rf /opt/acme/data", True), ("git reset --hard HEAD~3", True),
                          ("cat .env", True), ("ls -la", False)):
            r = hook(sb, bash(sb, cmd), "claude")
            check(denied(r) == want, f"guard demo: {cmd} → {'deny' if want else 'allow'}",
                  r.stdout.decode())
            if want:
                reason = json.loads(r.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
                check(reason.startswith("agentstack guard blocked this: "),
                      f"guard demo: reason prefix for {cmd}", reason)
        got = rows(sb)
        check(len(got) == 3 and all(x["server"] == "host-guard" and x["outcome"] == "denied"
                                    and x["args_digest"] == "" and x["ms"] == 0 for x in got),
              "guard demo: three host-guard rows", got)
        check(got[0]["tool"] == "bash: rm -rf /opt/acme/data" and
              got[0]["project"] == sb.project, "guard demo: row names command and project",
              got[0])
        r = sb.run("audit", "--verify")
        if r.returncode != 2:  # the audit verb may be built by another module
            check(r.returncode == 0, "guard rows keep the hash chain intact",
                  r.stdout + r.stderr)


def self_consent():
    with Sandbox() as sb:
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write("agentstack.toml", MACHINE_ON.replace("allow_roots = []",
                                                        'allow_roots = ["/"]'), base=sb.ah)
        for cmd in ("agentstack trust . --yes --consented X", "agentstack more yes",
                    "sudo agentstack trust .", "sh -c 'agentstack yes'",
                    "agentstack init --yes", "python3 -c 'open(\".agentstack/x\")'"):
            r = hook(sb, bash(sb, cmd), "claude")
            check(denied(r), f"self-consent: {cmd} denied", r.stdout.decode())
        for cmd in ("agentstack trust --preview", "agentstack status", "agentstack apply --write"):
            r = hook(sb, bash(sb, cmd), "claude")
            check(not denied(r), f"self-consent: {cmd} allowed", r.stdout.decode())
        r = hook(sb, tool(sb, "Write", file_path=os.path.join(sb.ah, "trust.json"),
                          content="{}"), "claude")
        check(denied(r), "Write of $ASH/trust.json denied even with allow_roots = ['/']",
              r.stdout.decode())


# Verbs that change consent, secrets, policy, keys or the guard: refused
# whatever follows them (the cases below pass no subcommand or flag).
CONSENT_VERBS = {"trust", "yes", "sign"}


def every_command_classified(part=0, parts=1):
    """Every (sub)command the binary lists (help --all --json) has a class:
    run plain by an agent it is judged by meaning, never refused as a verb
    the guard does not know. Only the consent verbs (and guard install /
    uninstall, secret set / rm, auth login / logout) are refused outright;
    uninstall and unrender write what apply --write writes, except that
    deleting the machine home (uninstall --write without --keep-home) is
    refused: it would erase the trust store and the evidence chains."""
    with Sandbox() as sb:
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write("agentstack.toml", MACHINE_ON, base=sb.ah)
        inv = json.loads(subprocess.run([BIN, "help", "--all", "--json"], env=sb.env(),
                                        capture_output=True, timeout=60).stdout)
        lines = []
        for c in inv["commands"]:
            subs = [s["name"] for s in c["subcommands"]] or [c["name"]]
            lines += subs
        check(len(lines) > 50, f"{len(lines)} (sub)commands listed")
        mine = lines[part::parts]
        unknown, wrong = [], []
        for line in mine:
            # the prefix is judged as a namespace: each (sub)command plain, and
            # the consent verbs and a reader behind both spellings of it too
            prefixes = [""]
            if line.split(" ")[0] in CONSENT_VERBS or line in ("status", "uninstall"):
                prefixes += ["more ", "x --manifest-dir . "]
            for prefix in prefixes:
                r = hook(sb, bash(sb, f"agentstack {prefix}{line}"), "claude")
                out = r.stdout.decode()
                if "does not know" in out:
                    unknown.append(prefix + line)
                want_deny = (line.split(" ")[0] in CONSENT_VERBS or
                             line in ("guard install", "guard uninstall", "secret set",
                                      "secret rm", "auth login", "auth logout"))
                if denied(r) != want_deny:
                    wrong.append((prefix + line, out[:160]))
        check(not unknown, f"no listed command is a verb the guard does not know "
                           f"(part {part + 1} of {parts}: {len(mine)} judged)", unknown)
        check(not wrong, "each listed command: refused exactly when it is a consent verb",
              wrong)
        if part:
            return
        for cmd, deny in (("agentstack uninstall --write --keep-home", False),
                          ("agentstack uninstall --scope project --write --keep-home", False),
                          ("agentstack uninstall", False),
                          ("agentstack unrender --write", False),
                          ("agentstack uninstall --write", True),
                          ("agentstack more uninstall --scope all --write", True),
                          ("sh -c 'agentstack x uninstall --write'", True)):
            r = hook(sb, bash(sb, cmd), "claude")
            check(denied(r) == deny, f"{cmd}: {'denied' if deny else 'allowed'}",
                  r.stdout.decode())


def system_refusals():
    with Sandbox() as sb:
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write("agentstack.toml", "version = 1\n[guard\nenabled = true\n", base=sb.ah)
        r = hook(sb, bash(sb, "ls"), "claude")
        check(denied(r) and "machine config unreadable" in r.stdout.decode(),
              "broken machine file → deny", r.stdout.decode())
        check(any(x["tool"] == "system: machine-config-unreadable" and "project" not in x
                  for x in rows(sb)), "row system: machine-config-unreadable without project",
              rows(sb))
        sb.write("agentstack.toml", MACHINE_ON, base=sb.ah)
        big = b'{"tool_name":"Bash","tool_input":{"command":"' + b"a" * (5 << 20) + b'"}}'
        r = hook(sb, big, "claude")
        check(denied(r) and "hook payload unreadable" in r.stdout.decode(),
              "5 MiB stdin → hook payload unreadable", r.stdout[:300])
        for bad in (b"not json", b"[" * 200000, b"\xff\xfe{", b""):
            r = hook(sb, bad, "claude")
            check(denied(r) and "hook payload unreadable" in r.stdout.decode(),
                  f"hostile payload {bad[:12]!r}… → deny with a clear message", r.stdout[:300])
        env = sb.env(AGENTSTACK_GUARD_STDIN_TIMEOUT_MS="100")
        p = subprocess.Popen([BIN, "guard", "check", "--protocol", "claude"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                             cwd=sb.project)
        try:
            out = p.stdout.read()  # the guard gives up on the open pipe and exits
            p.wait(timeout=60)
        finally:
            p.stdin.close()
        check(b"hook payload unreadable" in out, "stdin never closed → deny, no hang", out)
        audit = os.path.join(sb.ah, "audit")
        for f in os.listdir(audit):
            os.unlink(os.path.join(audit, f))
        os.rmdir(audit)
        with open(audit, "w") as f:
            f.write("not a dir")
        r = hook(sb, bash(sb, "cat .env"), "claude")
        check(denied(r), "an unwritable audit dir still denies", r.stdout.decode())


def free_text():
    with Sandbox() as sb:
        os.makedirs(os.path.join(sb.project, ".git"))
        sb.write("agentstack.toml", MACHINE_ON.replace('".env", "*.pem"', '".env*"'),
                 base=sb.ah)
        for cmd, want in (('git commit -m "drop .env handling"', False),
                          ("cat sub/.env.local", True), ("echo x >> .env", True),
                          ("echo $(cat .env)", True)):
            r = hook(sb, bash(sb, cmd), "claude")
            check(denied(r) == want, f"free text: {cmd} → {'deny' if want else 'allow'}",
                  r.stdout.decode())
        for path, want in (("../../../../../../../../../etc/x", True),):
            r = hook(sb, tool(sb, "Write", file_path=path, content="x"), "claude")
            check(denied(r) == want, f"traversal: write {path} denied", r.stdout.decode())
        r = hook(sb, tool(sb, "Read", file_path="sub/../.env"), "claude")
        check(denied(r), "traversal: read sub/../.env denied", r.stdout.decode())


def disabled_allows():
    with Sandbox() as sb:
        r = hook(sb, bash(sb, "rm -rf /"), "claude")
        check(r.returncode == 0 and r.stdout == b"" and not rows(sb),
              "no machine file → allow, nothing recorded", r.stdout)
        r = hook(sb, {"command": "ls", "cwd": sb.project}, "cursor")
        check(json.loads(r.stdout) == {"permission": "allow"}, "cursor allow answers",
              r.stdout)


def install_uninstall():
    with Sandbox() as sb:
        claude = os.path.join(sb.home, ".claude", "settings.json")
        os.makedirs(os.path.dirname(claude))
        mine = ('{\n  // my settings\n  "model": "opus",\n  "hooks": {\n    "PreToolUse": '
                '[{"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"}]}]\n'
                '  }\n}\n')
        with open(claude, "w") as f:
            f.write(mine)
        r = sb.run("guard", "install")
        check(r.returncode == 0 and "Nothing written" in r.stdout and
              not os.path.exists(os.path.join(sb.ah, "agentstack.toml")),
              "guard install previews without --write", r.stdout + r.stderr)
        r = sb.run("guard", "install", "--write")
        check(r.returncode == 0, "guard install --write", r.stdout + r.stderr)
        with open(os.path.join(sb.ah, "agentstack.toml")) as f:
            mf = f.read()
        check("enabled = true" in mf and '".netrc"' in mf and "allow_roots = []" in mf,
              "machine [guard] seeded with the default deny list", mf)
        with open(claude) as f:
            text = f.read()
        check("// my settings" in text and '"model": "opus"' in text and "mine.sh" in text
              and "agentstack-guard' check --protocol claude" in text,
              "Claude settings keep the user's bytes and gain our hook", text)
        wrapper = os.path.join(sb.ah, "guard", "agentstack-guard")
        check(os.access(wrapper, os.X_OK), "wrapper is executable")
        cmd = [wrapper, "check", "--protocol", "claude"]
        p = subprocess.run(cmd, input=json.dumps(bash(sb, "git stash clear")).encode(),
                           capture_output=True, env=sb.env(), cwd=sb.project, timeout=60)
        check(b'"deny"' in p.stdout, "the installed hook command denies", p.stdout + p.stderr)
        r = sb.run("guard", "status")
        # the unprotected CLIs are the descriptors without a guard block, in
        # the registry's order (adapters/*.yaml)
        unprotected = next((ln for ln in r.stdout.splitlines() if ln.startswith("NOT protected: ")),
                           "")
        names = unprotected[len("NOT protected: "):].split(" (")[0].split(", ")
        check("guard: enabled" in r.stdout and "✓ Claude Code / VS Code hook installed"
              in r.stdout and sorted(names) == ["amp", "claude-desktop", "cline", "cline-cli", "junie", "kiro",
                                                "zed"],
              "guard status", r.stdout)
        sb.run("guard", "install", "--write")
        with open(claude) as f:
            check(f.read().count("agentstack-guard") == 1, "install is idempotent")
        with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
            f.write(mf.replace('deny = [', 'deny = ["custom", '))
        sb.run("guard", "install", "--write")
        with open(os.path.join(sb.ah, "agentstack.toml")) as f:
            check('"custom"' in f.read(), "re-install keeps a deny list once written")
        r = sb.run("guard", "uninstall")
        with open(claude) as f:
            text = f.read()
        check(r.returncode == 0 and "agentstack-guard" not in text and "// my settings" in text
              and '"model": "opus"' in text and '"command": "mine.sh"' in text,
              "uninstall removes only our entry (comments, other keys and hooks kept)", text)
        check(not os.path.exists(wrapper), "uninstall removes the wrapper")
        with open(os.path.join(sb.ah, "agentstack.toml")) as f:
            check("enabled = false" in f.read(), "uninstall sets enabled = false")


def dropin_wires():
    """Where a hook goes is the descriptor's guard block: a drop-in wires a CLI
    of its own, and a drop-in that overrides a built-in without a guard block
    does not strand our entry in the built-in's file at uninstall."""
    with Sandbox() as sb:
        claude = os.path.join(sb.home, ".claude", "settings.json")
        os.makedirs(os.path.dirname(claude))
        with open(claude, "w") as f:
            f.write("{}\n")
        drop = os.path.join(sb.ah, "adapters")
        os.makedirs(drop, exist_ok=True)
        mine = os.path.join(sb.home, ".mycli", "hooks.json")
        os.makedirs(os.path.dirname(mine))
        with open(mine, "w") as f:
            f.write("{}\n")
        with open(os.path.join(drop, "mycli.yaml"), "w") as f:
            f.write("id: mycli\ndisplay: My CLI\nguard:\n  file: ~/.mycli/hooks.json\n"
                    "  events: [PreToolUse]\n  protocol: claude\n  shape: claude\n")
        r = sb.run("guard", "install", "--write")
        with open(mine) as f:
            text = f.read()
        check(r.returncode == 0 and "✓ My CLI hook installed in" in r.stdout
              and "agentstack-guard' check --protocol claude" in text,
              "a drop-in's guard block wires its CLI", r.stdout + r.stderr + text)
        with open(claude) as f:
            check("agentstack-guard" in f.read(), "the built-in Claude Code hook is installed")
        with open(os.path.join(drop, "claude-code.yaml"), "w") as f:
            f.write("id: claude-code\ndisplay: Claude Code\n")
        r = sb.run("guard", "status")
        check("Claude Code / VS Code" not in r.stdout and "My CLI hook installed" in r.stdout,
              "an override without a guard block takes the CLI off the guard's list", r.stdout)
        r = sb.run("guard", "uninstall")
        with open(claude) as f:
            ctext = f.read()
        with open(mine) as f:
            mtext = f.read()
        check(r.returncode == 0 and "agentstack-guard" not in ctext
              and "agentstack-guard" not in mtext,
              "uninstall cleans the built-in's file under an override, and the drop-in's",
              r.stdout + ctext + mtext)
        with open(os.path.join(drop, "mycli.yaml"), "w") as f:
            f.write("id: mycli\ndisplay: My CLI\nguard:\n  file: ~/.mycli/hooks.json\n"
                    "  protocol: claude\n  shape: claude\n")
        r = sb.run("guard", "status")
        check("My CLI" not in r.stdout, "a broken guard block wires nothing", r.stdout)
        r = sb.run("adapters", "validate", os.path.join(drop, "mycli.yaml"))
        check(r.returncode != 0 and "mycli.yaml:4:3: guard.events" in r.stderr,
              "a broken guard block is refused with its position", r.stdout + r.stderr)


SCENARIOS = [lambda part=part: every_command_classified(part, CTEST_SHARDS)
             for part in range(CTEST_SHARDS)] + [
    lambda: restricted_folders("nested"), lambda: restricted_folders("legacy"), guard_demo,
    self_consent, system_refusals, free_text, disabled_allows, install_uninstall, dropin_wires]
for scenario in shard(SCENARIOS):
    scenario()
done()
