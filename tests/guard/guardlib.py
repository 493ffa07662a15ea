"""The host guard's test fixture: a temporary HOME with a machine home
whose [guard] is enabled with the default deny list, a workspace with the
files the corpus names (.env, key.pem, secrets/, src/), and the corpus
reader. Shared by test_corpus.py and test_allowed_touch_nothing.py."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from aslib import BIN, SRC  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus.txt")

MACHINE = """version = 1
[guard]
enabled = true
allow_roots = []
deny = [".env", ".env.local", ".env.*.local", ".env.production", ".env.development",
        "id_rsa", "id_ed25519", "id_ecdsa", "*.pem", ".netrc"]
"""
PROJECT = """version = 1
[policy.filesystem]
deny = ["secrets/**"]
"""
DENY_NAMES = (".env", ".env.local", ".env.production", ".env.development", "id_rsa",
              "id_ed25519", "id_ecdsa", ".netrc")


class Fixture:
    """A scratch machine: root/home (HOME), root/home/.agentstack (machine
    home), root/home/proj (the workspace), root/tmp (TMPDIR)."""

    def __init__(self):
        # not under /tmp: /tmp is one of the guard's write roots, and the
        # fixture's home must not be
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="as-guard-", dir="/var/tmp"))
        self.home = os.path.join(self.root, "home")
        self.ash = os.path.join(self.home, ".agentstack")
        self.ws = os.path.join(self.home, "proj")
        self.tmp = os.path.join(self.root, "tmp")
        self.pristine = None
        self.reset()

    def reset(self):
        """The fixture as new. Built once (files, links, `git init`), then
        copied back from a pristine copy kept outside root: root is what a
        confined command may write, the copy is not, and a copy costs no
        git process per command (test_allowed_touch_nothing resets before
        each of its hundreds of commands)."""
        for d in (self.home, self.tmp):
            shutil.rmtree(d, ignore_errors=True)
        if self.pristine:
            shutil.copytree(os.path.join(self.pristine, "home"), self.home, symlinks=True)
            os.makedirs(self.tmp)
            return
        self._build()
        self.pristine = os.path.realpath(tempfile.mkdtemp(prefix="as-guard-pristine-",
                                                          dir="/var/tmp"))
        shutil.copytree(self.home, os.path.join(self.pristine, "home"), symlinks=True)

    def _build(self):
        files = {
            os.path.join(self.ash, "agentstack.toml"): MACHINE,
            os.path.join(self.ash, "trust.json"): '{"trusted": {}}\n',
            os.path.join(self.ash, "keys", "ed25519.key"): "00" * 32 + "\n",
            os.path.join(self.ash, "secrets.env"): "TOKEN=1\n",
            os.path.join(self.ash, "audit", "key"): "k" * 32,
            os.path.join(self.home, ".ssh", "id_rsa"): "PRIVATE\n",
            os.path.join(self.home, ".ssh", "id_ed25519"): "PRIVATE\n",
            os.path.join(self.home, ".netrc"): "machine x password y\n",
            os.path.join(self.home, ".bashrc"): "# rc\n",
            os.path.join(self.ws, ".agentstack", "agentstack.toml"): PROJECT,
            os.path.join(self.ws, ".env"): "SECRET=1\n",
            os.path.join(self.ws, "sub", ".env.local"): "SECRET=2\n",
            os.path.join(self.ws, "key.pem"): "-----BEGIN KEY-----\n",
            os.path.join(self.ws, "secrets", "db.txt"): "pw\n",
            os.path.join(self.ws, "src", "a.c"): "int a;\n",
            os.path.join(self.ws, "src", "b.c"): "int b;\n",
            os.path.join(self.ws, "Makefile"): "all:\n\t@true\ntest:\n\t@true\n",
            os.path.join(self.ws, "README.md"): "readme\n",
            os.path.join(self.ws, "package.json"): '{"name": "p"}\n',
            os.path.join(self.ws, "a.txt"): "a\n",
            os.path.join(self.ws, "list.txt"): "build\n",
        }
        for p, text in files.items():
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        os.makedirs(os.path.join(self.ws, "build"))
        # links a person made before: the guard follows them
        os.symlink(".env", os.path.join(self.ws, "link-env"))
        os.symlink(self.ash, os.path.join(self.ws, "homelink"))
        os.symlink("secrets", os.path.join(self.ws, "slink"))
        os.makedirs(self.tmp)
        subprocess.run(["git", "init", "-q", self.ws], check=True,
                       env=dict(os.environ, HOME=self.home))
        os.chmod(os.path.join(self.ash), 0o700)

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("AGENTSTACK_", "XDG_", "GIT_"))}
        e.update(HOME=self.home, AGENTSTACK_HOME=self.ash, TMPDIR=self.tmp, NO_COLOR="1")
        e.pop("CDPATH", None)
        e.update(extra)
        return e

    def subst(self, text):
        return (text.replace("@HOME@", self.home).replace("@ASH@", self.ash)
                .replace("@WS@", self.ws).replace("@BIN@", os.path.realpath(BIN))
                .replace("@TMP@", self.tmp))

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)
        if self.pristine:
            shutil.rmtree(self.pristine, ignore_errors=True)


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "nt":
            out.append("\n" if s[i + 1] == "n" else "\t")
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def corpus():
    """[(line number, verdict 'DENY'|'ALLOW', kind 'shell'|tool kind, text)]"""
    rows = []
    with open(CORPUS) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            verdict, _, rest = line.partition("\t")
            assert verdict in ("DENY", "ALLOW"), f"corpus.txt:{n}: bad verdict {verdict!r}"
            kind = "shell"
            if rest.startswith("tool:"):
                head, _, rest = rest[5:].partition(" ")
                assert head in ("read", "write", "edit", "grep", "glob"), \
                    f"corpus.txt:{n}: unknown tool kind {head!r}"
                kind = head
            rows.append((n, verdict, kind, unescape(rest)))
    return rows


def hook(fx, payload, proto, cwd=None):
    data = json.dumps(payload).encode()
    return subprocess.run([BIN, "guard", "check", "--protocol", proto], input=data,
                          capture_output=True, timeout=60, cwd=cwd or fx.ws, env=fx.env())


def denied(proto, r):
    """The dialect's deny answer (and a well-formed allow otherwise)."""
    out = r.stdout.decode()
    if proto == "windsurf":
        return r.returncode == 2
    if r.returncode != 0:
        raise AssertionError(f"{proto}: exit {r.returncode}: {r.stderr.decode()}")
    if not out.strip():
        if proto in ("cursor", "copilot"):
            raise AssertionError(f"{proto}: no answer")
        return False
    j = json.loads(out)
    if proto in ("claude", "codex"):
        return j["hookSpecificOutput"]["permissionDecision"] == "deny"
    if proto == "gemini":
        return j.get("decision") == "deny"
    if proto == "cursor":
        return j["permission"] == "deny"
    if proto == "copilot":
        return j["permissionDecision"] == "deny"
    if proto == "antigravity":
        return j.get("decision") == "block"
    raise AssertionError(proto)


def reason(proto, r):
    if proto == "windsurf":
        return r.stderr.decode()
    try:
        j = json.loads(r.stdout)
    except ValueError:
        return r.stdout.decode() + r.stderr.decode()
    for path in (("hookSpecificOutput", "permissionDecisionReason"), ("reason",),
                 ("agent_message",), ("permissionDecisionReason",)):
        x = j
        for k in path:
            x = x.get(k) if isinstance(x, dict) else None
        if x:
            return x
    return r.stdout.decode()


def shell_payload(proto, ws, cmd):
    if proto == "claude":
        return {"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": cmd}}
    if proto == "codex":
        return {"session_id": "s", "turn_id": "t", "cwd": ws, "hook_event_name": "PreToolUse",
                "tool_name": "shell", "tool_input": {"command": ["bash", "-lc", cmd],
                                                     "workdir": ws}}
    if proto == "gemini":
        return {"session_id": "s", "cwd": ws, "hook_event_name": "BeforeTool",
                "tool_name": "run_shell_command", "tool_input": {"command": cmd}}
    if proto == "cursor":
        return {"hook_event_name": "beforeShellExecution", "command": cmd, "cwd": ws}
    if proto == "copilot":
        return {"cwd": ws, "toolName": "bash", "toolArgs": json.dumps({"command": cmd})}
    if proto == "antigravity":
        return {"cwd": ws, "toolCall": {"name": "run_command", "args": {"command": cmd}}}
    if proto == "windsurf":
        return {"agent_action_name": "pre_run_command",
                "tool_info": {"command_line": cmd, "cwd": ws}}
    raise AssertionError(proto)


def tool_payload(proto, ws, kind, arg):
    """The dialect's own tool for a read/write/edit/grep/glob, or None when
    the dialect has none."""
    claude = {"read": ("Read", {"file_path": arg}),
              "write": ("Write", {"file_path": arg, "content": "x"}),
              "edit": ("Edit", {"file_path": arg, "old_string": "a", "new_string": "b"}),
              "grep": ("Grep", {"pattern": "SECRET", "glob": arg, "output_mode": "content"}),
              "glob": ("Glob", {"pattern": arg})}
    if proto == "claude":
        t, i = claude[kind]
        return {"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse",
                "tool_name": t, "tool_input": i}
    if proto == "codex":
        if kind in ("write", "edit"):
            env = f"*** Begin Patch\n*** {'Add' if kind == 'write' else 'Update'} File: {arg}\n" \
                  "+x\n*** End Patch\n"
            return {"turn_id": "t", "cwd": ws, "tool_name": "apply_patch",
                    "tool_input": {"input": env}}
        if kind == "read":
            return {"turn_id": "t", "cwd": ws, "tool_name": "read_file",
                    "tool_input": {"file_path": arg}}
        if kind == "grep":
            return {"turn_id": "t", "cwd": ws, "tool_name": "grep_files",
                    "tool_input": {"pattern": "SECRET", "include": arg}}
        return None
    if proto == "gemini":
        m = {"read": ("read_file", {"absolute_path": arg}),
             "write": ("write_file", {"file_path": arg, "content": "x"}),
             "edit": ("replace", {"file_path": arg, "old_string": "a", "new_string": "b"}),
             "grep": ("search_file_content", {"pattern": "SECRET", "include": arg}),
             "glob": ("glob", {"pattern": arg})}
        t, i = m[kind]
        return {"cwd": ws, "hook_event_name": "BeforeTool", "tool_name": t, "tool_input": i}
    if proto == "cursor":
        if kind == "read":
            return {"hook_event_name": "beforeReadFile", "file_path": arg, "content": "",
                    "cwd": ws}
        return None
    if proto == "copilot":
        m = {"read": ("view", {"path": arg}),
             "write": ("create", {"path": arg, "file_text": "x"}),
             "edit": ("str_replace", {"path": arg, "old_str": "a", "new_str": "b"}),
             "grep": ("grep", {"pattern": "SECRET", "glob": arg}),
             "glob": ("glob", {"pattern": arg})}
        t, i = m[kind]
        return {"cwd": ws, "toolName": t, "toolArgs": json.dumps(i)}
    if proto == "antigravity":
        m = {"read": ("view_file", {"AbsolutePath": arg}),
             "write": ("write_to_file", {"TargetFile": arg, "CodeContent": "x"}),
             "edit": ("replace_file_content", {"TargetFile": arg, "TargetContent": "a",
                                               "ReplacementContent": "b"})}
        if kind not in m:
            return None
        t, i = m[kind]
        return {"cwd": ws, "toolCall": {"name": t, "args": i}}
    if proto == "windsurf":
        if kind == "read":
            return {"agent_action_name": "pre_read_code",
                    "tool_info": {"file_path": arg, "cwd": ws}}
        if kind in ("write", "edit"):
            return {"agent_action_name": "pre_write_code",
                    "tool_info": {"file_path": arg, "edits": [], "cwd": ws}}
        return None
    raise AssertionError(proto)


PROTOCOLS = ("claude", "codex", "gemini", "cursor", "copilot", "antigravity", "windsurf")
