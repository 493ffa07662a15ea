"""agentstack status (docs/onboarding.md): rows, one next action that follows the
project's state (no manifest → init, missing secret → secret set, unpinned
→ lock, untrusted → trust, ready → apply), gateway connection seen from the
CLIs' configs, --json; read-only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = """version = 1

[servers.gh]
type = "http"
url = "https://x.invalid/mcp"
headers = { Authorization = "Bearer ${GH_PAT}" }
"""


def env(sb, **extra):
    e = H.env(sb, **extra)
    e.pop("NOTES_TOKEN", None)
    e.pop("DOCS_KEY", None)
    e.pop("DBUS_SESSION_BUS_ADDRESS", None)
    e["XDG_RUNTIME_DIR"] = os.path.join(sb.root, "no-runtime")
    return e


def nxt(out):
    return [ln for ln in out.splitlines() if ln.startswith("Next: ")]


with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    H.fake_bin(sb, "codex")
    e = env(sb)
    r = H.run(sb, "status", e=e)
    check(r.returncode == 0 and "Claude Code · Codex CLI" in r.stdout
          and nxt(r.stdout) == ["Next: agentstack init · no manifest here — import what your CLIs "
                                "already have"], "no manifest: Next: agentstack init", r.stdout)
    H.write_manifest(sb, MANIFEST)
    r = H.run(sb, "status", e=e)
    check("Secrets    0 resolved · 1 missing (GH_PAT)" in r.stdout
          and "Next: agentstack secret set GH_PAT" in r.stdout, "missing secret → secret set",
          r.stdout)
    e2 = env(sb, GH_PAT="v-123456")
    r = H.run(sb, "status", e=e2)
    check("Status     not locked · untrusted" in r.stdout
          and "Next: agentstack lock --write" in r.stdout, "unpinned → lock --write", r.stdout)
    H.run(sb, "lock", "--write", e=e2)
    r = H.run(sb, "status", e=e2)
    check("Next: agentstack trust ." in r.stdout, "untrusted → trust .", r.stdout)
    H.trust(sb, e=e2)
    before = {p: open(os.path.join(sb.project, ".agentstack", p), "rb").read()
              for p in os.listdir(os.path.join(sb.project, ".agentstack"))}
    r = H.run(sb, "status", e=e2)
    check("Status     locked · trusted" in r.stdout and "Next: agentstack apply ·" in r.stdout
          and "Gateway    not connected" in r.stdout, "ready → apply; gateway not connected",
          r.stdout)
    H.run(sb, "connect", "--all", "--write", e=e2)
    j = json.loads(H.run(sb, "status", "--json", e=e2).stdout)
    check(set(j["gateway_connected"]) == {"Claude Code", "Codex CLI"}
          and j["manifest"]["trust"] == "trusted" and j["manifest"]["locked"]
          and j["project"]["secrets"]["resolved"] == ["GH_PAT"]
          and j["next_action"]["command"] == "agentstack apply",
          "--json: connected CLIs, trust, lock, secret names only, next_action", j)
    check("v-123456" not in json.dumps(j), "no secret value in the JSON")
    after = {p: open(os.path.join(sb.project, ".agentstack", p), "rb").read()
             for p in os.listdir(os.path.join(sb.project, ".agentstack"))}
    check(before == after, "status writes nothing in the project")
    r = H.run(sb, e=e2)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 3
          and lines[0] == f"agentstack · project {sb.project}/.agentstack/agentstack.toml"
                         " · locked · trusted · 2 CLIs"
          and lines[1].startswith("Next: agentstack apply ·") and "agentstack help" in lines[2],
          "bare agentstack: the shortest status — one state line, Next:, where help is",
          r.stdout + r.stderr)

with Sandbox() as sb:
    e = env(sb)
    r = H.run(sb, e=e)
    check(r.returncode == 0 and "agentstack · no manifest here · 0 CLIs" in r.stdout
          and "Next: agentstack init ·" in r.stdout and r.stderr == "",
          "bare agentstack on a clean machine: exit 0, Next: agentstack init", r.stdout + r.stderr)
    r = H.run(sb, "status", "--short", e=e)
    check(r.returncode == 0 and r.stdout == H.run(sb, e=e).stdout,
          "status --short is what bare agentstack prints", r.stdout)

done()
