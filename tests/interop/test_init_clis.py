"""Interop: onboarding against the real coding CLIs (issue 7's proof).

A temporary HOME seeded from tests/fixtures/onboard/home — Claude Code,
Codex, Gemini, OpenCode, Cursor and VS Code configs with duplicates, a
conflicting definition, inline tokens, the gateway bridge and JSONC
comments; Pi's skill folder — plus two servers that really answer inside the
namespace (server-everything over stdio, and over HTTP behind an inline
`Authorization: Bearer` token), and a project `.agentstack/.env` that already
holds one of the inline values. Then, with the real pinned CLIs on PATH:

  agentstack init --yes            (secrets to the real keychain: gnome-keyring
                                    under dbus-run-session; `--secrets file`
                                    when those packages are missing, loudly)
  lock --write, trust --preview, trust . --yes --consented <digest>
  apply --scope global --write     (back into the same user configs)

and checks that init left every source config byte-identical, that no token
reached a file agentstack wrote (manifest, lock, trust and ledger state) —
only the keychain (or the file store) and the native configs, where apply
resolves `${REF}`s by design and where the user had pasted them — that apply
kept every other key and comment of the user's configs, and that
`codex mcp list --json`, `claude mcp list`, `gemini mcp list`,
`opencode mcp list` and `pi mcp list --json` list every imported server, with
the two local ones connected (the HTTP one through the resolved token).

Run:  sh tests/interop/setup_clis.sh && python3 tests/interop/test_init_clis.py
Needs root (for `unshare -n`) and AS_BIN (default build/agentstack).
Skips loudly (exit 77) when the CLIs are not installed.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clislib  # noqa: E402
from clislib import (ANSI, BIN, CACHE, CLIS, EVERYTHING, NODE22, SRC, check,  # noqa: E402
                     codex_servers, done, require_clis, skip_part)

FIX = os.path.join(SRC, "tests", "fixtures", "onboard", "home")
KEYRING_SESSION = os.path.join(SRC, "tests", "keyring_session.sh")
PORT = 38419

GH = "ghp_Fx7Kq2Lm9Rt4Vw8Yz3Bc6Dn1Gh5Jp0Ts2Uv"      # github, Claude + Gemini
CURSOR_GH = "ghp_Other0Token1Held2By3Cursor4Only5xx"  # the conflicting copy: not imported
TL = "sk-live-4f9Qz8Lk2Vb7Nc1Xm6Rt3Wy5"              # tldraw env, Codex
NT = "xoxb-2231-88ab-Zq9Lw"                          # notes env, OpenCode; also in .env
DK = "dk_7Hq2Zp9Wm4"                                 # docs url query, VS Code
WEB = "ghp_Lo0pBack7Interop2Bearer9Tok3nQw"          # web headers, Claude + Gemini
TOKENS = {"GITHUB_TOKEN": GH, "TLDRAW_API_KEY": TL, "NOTES_TOKEN": NT, "API_KEY": DK,
          "WEB_TOKEN": WEB}
IMPORTED = ["github", "filesystem", "tldraw", "notes", "docs", "everything", "web"]
LIVE = ["everything", "web"]          # the ones that answer inside the namespace
CLAUDE_OWN = ["github", "filesystem", "everything", "web", "agentstack"]


def run(argv, env, cwd):
    return clislib.run(argv, env, cwd, timeout=300)


def in_netns(argv, env, cwd):
    return clislib.in_netns_upstream(argv, env, cwd, PORT, timeout=300)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def snapshot(root, skip=()):
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.path.relpath(os.path.join(d, x), root) not in skip]
        for f in files:
            p = os.path.join(d, f)
            if os.path.isfile(p):
                out[os.path.relpath(p, root)] = hashlib.sha256(read(p)).hexdigest()
    return out


def holding(root, needle, skip=()):
    """Files under root whose bytes hold needle (paths relative to root)."""
    hits = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.path.relpath(os.path.join(d, x), root) not in skip]
        for f in files:
            p = os.path.join(d, f)
            if os.path.relpath(p, root) in skip:
                continue
            try:
                if os.path.isfile(p) and needle.encode() in read(p):
                    hits.append(os.path.relpath(p, root))
            except OSError:
                pass
    return sorted(hits)


def seed(home, proj):
    shutil.copytree(FIX, home, dirs_exist_ok=True)
    # Two servers that answer inside the namespace: Claude holds both (the
    # http one with a bearer token pasted inline), Gemini a duplicate of each
    # in its own syntax (httpUrl).
    cj = os.path.join(home, ".claude.json")
    with open(cj) as f:
        claude = json.load(f)
    claude["mcpServers"]["everything"] = {"type": "stdio", "command": NODE22,
                                         "args": [EVERYTHING, "stdio"]}
    claude["mcpServers"]["web"] = {"type": "http", "url": f"http://127.0.0.1:{PORT}/mcp",
                                  "headers": {"Authorization": f"Bearer {WEB}"}}
    with open(cj, "w") as f:
        json.dump(claude, f, indent=2)
        f.write("\n")
    gs = os.path.join(home, ".gemini", "settings.json")
    with open(gs) as f:
        gem = json.load(f)
    gem["mcpServers"]["everything"] = {"command": NODE22, "args": [EVERYTHING, "stdio"]}
    gem["mcpServers"]["web"] = {"httpUrl": f"http://127.0.0.1:{PORT}/mcp",
                               "headers": {"Authorization": f"Bearer {WEB}"}}
    with open(gs, "w") as f:
        json.dump(gem, f, indent=2)
        f.write("\n")
    os.makedirs(os.path.join(proj, ".git"))
    os.makedirs(os.path.join(proj, ".agentstack"))
    # The project's .env already holds the OpenCode token under its name:
    # init must reuse it, not store it again, and apply must resolve it.
    with open(os.path.join(proj, ".agentstack", ".env"), "w") as f:
        f.write(f"# local secrets\nNOTES_TOKEN={NT}\nUNRELATED=1\n")
    os.chmod(os.path.join(proj, ".agentstack", ".env"), 0o600)


def fenced_env(home):
    env = clislib.fenced_env(home, drop=TOKENS)
    # the session bus of the keyring (inner run) stays; its runtime dir too
    if "XDG_RUNTIME_DIR" in os.environ and os.environ.get("AS_KEYRING_INNER"):
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
    return env


def secret_tool(name):
    r = subprocess.run(["secret-tool", "lookup", "service", "agentstack", "account", name],
                       capture_output=True, timeout=60)
    return r.stdout.decode()


def list_clis(env, proj):
    """Each CLI's own list, inside the namespace with the http upstream up."""
    clis = {cli: CLIS[adapter][2] for cli, adapter in (
        ("codex", "codex"), ("claude", "claude-code"), ("gemini", "gemini"),
        ("opencode", "opencode"), ("pi", "pi"))}
    for cli, argv in clis.items():
        lst = in_netns(argv, env, proj)
        out = ANSI.sub("", lst.stdout + lst.stderr)
        if cli == "codex":
            check(lst.returncode == 0, "codex: mcp list --json accepts the config", out)
            servers = codex_servers(lst.stdout)
            missing = [n for n in IMPORTED if n not in servers]
            check(not missing, f"codex: lists every imported server (missing {missing})", out)
            check(EVERYTHING in json.dumps(servers.get("everything", {})),
                  "codex: the stdio server keeps its command", out)
            check(f"127.0.0.1:{PORT}/mcp" in json.dumps(servers.get("web", {})),
                  "codex: the http server keeps its url", out)
            continue
        if cli == "pi":
            try:
                entries = {e["name"]: e for e in json.loads(lst.stdout)["servers"]}
            except (ValueError, KeyError, TypeError):
                entries = {}
            missing = [n for n in IMPORTED if n not in entries]
            check(entries and not missing,
                  f"pi: mcp list --json lists every imported server (missing {missing})", out)
            for name in LIVE:
                st = entries.get(name, {}).get("state")
                check(st == "connected", f"pi: '{name}' connected (state {st!r})", out)
            continue
        # Claude has the gateway bridge connected, so apply serves it live
        # and leaves its file alone: its own servers stay listed.
        want = CLAUDE_OWN if cli == "claude" else IMPORTED
        lines = out.splitlines()
        missing = [n for n in want
                   if not any(re.search(rf"(^|\s|\W){re.escape(n)}\W", ln) for ln in lines)]
        check(not missing, f"{cli}: mcp list shows every imported server (missing {missing})",
              out)
        for name in LIVE:
            line = next((ln for ln in lines if re.search(rf"(^|\W){name}\W", ln)), "")
            ok = "onnected" in line and "ail" not in line and "isconnected" not in line
            check(ok, f"{cli}: '{name}' listed as connected", out)


def scenario(use_keychain):
    root = tempfile.mkdtemp(prefix="as-interop-init-")
    try:
        home = os.path.join(root, "home")
        proj = os.path.join(root, "proj")
        seed(home, proj)
        env = fenced_env(home)
        ah = env["AGENTSTACK_HOME"]
        before = snapshot(home, skip=(".agentstack",))
        dotenv = read(os.path.join(proj, ".agentstack", ".env"))
        claude_seed = read(os.path.join(home, ".claude.json"))

        mode = "keychain" if use_keychain else "file"
        r = run([BIN, "init", "--yes", "--secrets", mode], env, proj)
        out = r.stdout + r.stderr
        check(r.returncode == 0, f"init --yes --secrets {mode}", out)
        for cli in ("Claude Code", "Codex CLI", "Gemini CLI", "OpenCode", "Pi", "Cursor",
                    "VS Code"):
            check(cli in out.split("\n", 1)[0], f"init detects {cli}", out)
        for name in IMPORTED:
            check(f"+ {name} " in out, f"init imports '{name}'", out)
        check("conflict: 'github' in Cursor" in out, "init reports Cursor's differing github",
              out)
        check(snapshot(home, skip=(".agentstack",)) == before,
              "init leaves every source config byte-identical")
        check(read(os.path.join(proj, ".agentstack", ".env")) == dotenv,
              "init leaves the project .env as it was")

        mpath = os.path.join(proj, ".agentstack", "agentstack.toml")
        man = read(mpath).decode() if os.path.exists(mpath) else ""
        for ref in ("GITHUB_TOKEN", "TLDRAW_API_KEY", "NOTES_TOKEN", "API_KEY", "WEB_TOKEN"):
            check("${" + ref + "}" in man, f"the manifest refers to ${{{ref}}}", man)
        check("NOTES_TOKEN_2" not in man, "the .env's equal NOTES_TOKEN is reused", man)
        check(man.count("[servers.github]") == 1 and man.count("[servers.everything]") == 1,
              "duplicates across CLIs become one entry each", man)
        if use_keychain:
            for ref in ("GITHUB_TOKEN", "TLDRAW_API_KEY", "API_KEY", "WEB_TOKEN"):
                check(secret_tool(ref) == TOKENS[ref], f"{ref} is in the real keychain")
            check(secret_tool("NOTES_TOKEN") == "",
                  "NOTES_TOKEN (already in .env) was not stored again")

        # Lock and trust: the manifest round-trips through the reviewers.
        r = run([BIN, "lock", "--write"], env, proj)
        check(r.returncode == 0, "lock --write", r.stdout + r.stderr)
        r = run([BIN, "trust", "--preview"], env, proj)
        try:
            digest = json.loads(r.stdout)["surface_digest"]
        except (ValueError, KeyError):
            digest = ""
        check(digest.startswith("sha256:"), "trust --preview gives the surface digest",
              r.stdout + r.stderr)
        r = run([BIN, "trust", ".", "--yes", "--consented", digest], env, proj)
        check(r.returncode == 0, "trust . --yes --consented <digest>", r.stdout + r.stderr)
        r = run([BIN, "bootstrap"], env, proj)
        check("no missing secrets" in r.stdout, "bootstrap finds every secret",
              r.stdout + r.stderr)

        # Nothing agentstack wrote so far holds a token: the project's files
        # and $AGENTSTACK_HOME (the file store aside, which is where
        # --secrets file puts them, 0600).
        store = {"secrets.env"} if not use_keychain else set()
        for ref, value in TOKENS.items():
            hits = holding(proj, value, skip=(".agentstack/.env",)) + \
                [p for p in holding(ah, value) if p not in store]
            check(not hits, f"{ref}'s value is in no file agentstack wrote", hits)
        check(not holding(proj, CURSOR_GH) and not holding(ah, CURSOR_GH),
              "Cursor's conflicting token was not imported anywhere")
        if not use_keychain:
            sp = os.path.join(ah, "secrets.env")
            check(os.path.exists(sp) and os.stat(sp).st_mode & 0o777 == 0o600,
                  "the file store is 0600")

        # Render back into the same user configs.
        r = run([BIN, "apply", "--scope", "global", "--write"], env, proj)
        check(r.returncode == 0, "apply --scope global --write", r.stdout + r.stderr)
        r2 = run([BIN, "apply", "--scope", "global"], env, proj)
        check(r2.returncode == 0 and "nothing to write — every target in sync" in r2.stdout,
              "a second apply has nothing to write", r2.stdout + r2.stderr)

        check("Claude Code (~/.claude.json)\n  · MCP servers are served live" in r.stdout and
              read(os.path.join(home, ".claude.json")) == claude_seed,
              "claude: the connected gateway serves it live — ~/.claude.json left as it was",
              r.stdout)

        # The user's other keys and comments survive the merge.
        cj = json.loads(read(os.path.join(home, ".claude.json")))
        check(cj.get("numStartups") == 42 and cj.get("tipsHistory") == {
            "x": 0.9402052562189797}, "claude: numStartups and tipsHistory intact")
        check(cj.get("mcpServers", {}).get("agentstack", {}).get("args") ==
              ["mcp", "--auto-project"], "claude: the gateway bridge entry left alone")
        gem = json.loads(read(os.path.join(home, ".gemini", "settings.json")))
        check(gem.get("theme") == "GitHub", "gemini: theme intact")
        cx = read(os.path.join(home, ".codex", "config.toml")).decode()
        check(cx.startswith("# my codex settings\nmodel = \"o3\"\n") and
              '[projects."/work/x"]\ntrust_level = "trusted"' in cx,
              "codex: comment, model and [projects] intact", cx)
        check("LOG_LEVEL" in cx and "startup_timeout_sec = 20" in cx,
              "codex: tldraw's extra keys travel back", cx)
        oc = read(os.path.join(home, ".config", "opencode", "opencode.json")).decode()
        check("// my local notes server" in oc and '"$schema"' in oc,
              "opencode: JSONC comment and $schema intact", oc)
        vs = read(os.path.join(home, ".config", "Code", "User", "mcp.json")).decode()
        check("// VS Code user MCP servers" in vs, "vscode: JSONC comment intact", vs)
        check(os.path.exists(os.path.join(home, ".pi", "agent", "mcp.json")),
              "pi: ~/.pi/agent/mcp.json written")

        # After apply, the token values live only where the user put them or
        # where apply resolves them by design (native configs), and in
        # agentstack's byte-for-byte undo copies of those configs.
        for ref, value in TOKENS.items():
            hits = holding(proj, value, skip=(".agentstack/.env",))
            check(not hits, f"after apply, {ref}'s value is in no project file", hits)
        for name in ("agentstack.toml", "state.json", "trust.json"):
            p = os.path.join(ah, name)
            if os.path.exists(p):
                blob = read(p)
                check(not any(v.encode() in blob for v in TOKENS.values()),
                      f"after apply, $AGENTSTACK_HOME/{name} holds no token")

        list_clis(env, proj)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def reexec_in_keyring_session():
    tmp = tempfile.mkdtemp(prefix="as-keyring-")
    # the keyring's files live in a temp HOME; the CLI cache is named so the
    # inner run still finds it
    env = dict(os.environ, HOME=tmp, AS_KEYRING_INNER="1", AS_INTEROP_CACHE=CACHE)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    try:
        r = subprocess.run(
            ["dbus-run-session", "--", "sh", KEYRING_SESSION, sys.executable, __file__],
            env=env, timeout=1800)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(r.returncode)


def main():
    require_clis()
    if os.environ.get("AS_KEYRING_INNER"):
        scenario(use_keychain=True)
    elif all(shutil.which(b) for b in ("dbus-run-session", "gnome-keyring-daemon",
                                        "secret-tool")):
        reexec_in_keyring_session()
    else:
        skip_part("gnome-keyring, libsecret-tools or dbus missing — the secrets go to the file "
                  "store (--secrets file) instead of a real keychain "
                  "(apt-get install gnome-keyring libsecret-tools dbus)")
        scenario(use_keychain=False)
    done()


if __name__ == "__main__":
    main()
