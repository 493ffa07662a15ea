"""agentstack init reading a CLI config that holds JSON jansson cannot hold
(\\u0000 in a value or a key, an unpaired surrogate escape, a number out of
range): a ✗ line naming file:line:col, never a silently cut value ("x\\u0000y"
imported as "x") or a section that quietly vanishes."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402

CASES = [
    ("value", '{"mcpServers": {"ok": {"command": "x\\u0000y"}}}\n', "1:35",
     "string contains \\u0000 (NUL), which agentstack refuses"),
    ("key", '{"mcpServers": {\n  "\\u0000": {"command": "a"},\n  "ok": {"command": "b"}}}\n',
     "2:3", "string contains \\u0000 (NUL), which agentstack refuses"),
    ("surrogate", '{"mcpServers": {"ok": {"command": "c", "args": ["\\ud800"]}}}\n', "1:49",
     "string contains an unpaired surrogate escape, which agentstack refuses"),
    ("number", '{"mcpServers": {"ok": {"command": "c", "timeout": 1e400}}}\n', "1:51",
     "number out of range, which agentstack refuses"),
]


def env(sb):
    bindir = os.path.join(sb.root, "bin")  # no real CLI on PATH
    os.makedirs(bindir, exist_ok=True)
    return sb.env(PATH=bindir + ":/usr/bin:/bin")


def main():
    for name, text, where, why in CASES:
        with Sandbox() as sb:
            os.makedirs(os.path.join(sb.project, ".git"))
            path = sb.write(".mcp.json", text)
            r = sb.run("init", "--yes", "--secrets", "skip", env=env(sb))
            out = r.stdout + r.stderr
            want = (f"✗ Claude Code (.mcp.json): {path}:{where}: {why} — its servers were not "
                    "read")
            check(r.returncode == 0 and want in out, f"{name}: a ✗ line names file:line:col",
                  out)
            check("+ ok" not in out, f"{name}: nothing imported from that file", out)
            man = os.path.join(sb.project, ".agentstack", "agentstack.toml")
            body = open(man).read() if os.path.exists(man) else ""
            check(not any(ln.startswith("[servers.") for ln in body.splitlines()), f"{name}: no server written to the manifest", body)
            with open(path) as f:
                check(f.read() == text, f"{name}: the config is left as it was")


if __name__ == "__main__":
    main()
    done()
