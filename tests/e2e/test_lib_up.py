"""`up` (docs/library.md): step 2 registers the gateway in each detected
MCP-capable CLI (no CLI → noted and skipped), and `--json` prints one
document {schema_version, command, success, applied, state, failure} on
stdout with the transcript on stderr. Fake CLIs are scripts on a PATH the
test builds; HOME is a temp dir; no network.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, BIN, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

MANIFEST = ('version = 1\n[servers.docs]\ntype = "http"\nurl = "https://docs.example/mcp"\n'
            '[servers.docs.headers]\nAuthorization = "Bearer ${UP_TEST_TOKEN}"\n')
KEYS = {"schema_version", "command", "success", "applied", "state", "failure"}


def doc(r, what):
    try:
        j = json.loads(r.stdout)
    except ValueError:
        check(False, what + ": stdout is one JSON document", r.stdout)
        return {}
    check(set(j) == KEYS and j["schema_version"] == 1 and j["command"] == "up",
          what + ": the documented keys", r.stdout)
    return j


def scenario_gateway_json():
    with Sandbox() as sb:
        for b in ("claude", "codex"):
            H.fake_bin(sb, b)
        H.write_manifest(sb, MANIFEST)
        r = H.run(sb, "lock", "--write")
        check(r.returncode == 0, "lock --write", r.stdout + r.stderr)

        r = H.run(sb, "up", "--json")
        j = doc(r, "preview")
        check(r.returncode == 0 and j.get("success") is True and j.get("applied") is False and
              j["state"]["gateway"] == "planned" and j["state"]["clis_detected"] == 2 and
              j["failure"] is None, "preview: planned, nothing applied", r.stdout)
        check("New-machine setup plan" in r.stderr and "register" in r.stderr,
              "the transcript went to stderr", r.stderr)
        check(not os.path.exists(os.path.join(sb.home, ".claude.json")),
              "the preview registers nothing")

        r = H.run(sb, "up", "--write", "--json")
        j = doc(r, "write")
        check(r.returncode == 0 and j.get("success") is True and j.get("applied") is True and
              j["state"]["gateway"] == "registered", "write: gateway registered",
              r.stdout + r.stderr)
        check(j["state"]["missing_secrets"] == ["UP_TEST_TOKEN"] and
              j["state"]["trusted"] is False and j["state"]["project"] and
              "trust" in (j["state"]["next"] or ""),
              "what stays per machine: the secret, the trust decision", r.stdout)
        claude = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
        entry = claude["mcpServers"]["agentstack"]
        check(entry["command"] == os.path.realpath(BIN) and
              entry["args"] == ["mcp", "--auto-project"], "claude holds the gateway", claude)
        check("[mcp_servers.agentstack]" in H.read(os.path.join(sb.home, ".codex",
                                                                 "config.toml")),
              "codex holds the gateway")

        r = H.run(sb, "up", "--write")
        check(r.returncode == 0 and "connect --all --write" in r.stdout and
              "New-machine setup plan" in r.stdout, "plain up --write: transcript on stdout",
              r.stdout + r.stderr)
        claude2 = json.loads(H.read(os.path.join(sb.home, ".claude.json")))
        check(claude2 == claude, "running up again is idempotent", claude2)


def scenario_no_cli_and_failure():
    with Sandbox() as sb:
        r = H.run(sb, "up", "--write", "--json", cwd=sb.root)
        j = doc(r, "outside a project")
        check(r.returncode == 0 and j.get("success") is True and
              j["state"]["gateway"] == "skipped" and j["state"]["project"] is None and
              j["state"]["next"] == "clone a project and run agentstack status in it",
              "no CLI: gateway skipped, next names a project", r.stdout + r.stderr)
        check("no CLI detected" in r.stderr, "the skip is noted", r.stderr)
        empty = os.path.join(sb.root, "empty")
        os.makedirs(empty)
        r = H.run(sb, "--manifest-dir", empty, "up", "--write", "--json", cwd=sb.root)
        j = doc(r, "missing project")
        check(r.returncode == 1 and j.get("success") is False and j["applied"] is False and
              j["failure"] and "no agentstack manifest" in j["failure"],
              "a named missing project: exit 1, failure set", r.stdout + r.stderr)
        r = H.run(sb, "up", "--library", "ext::sh -c id", "--write", "--json", cwd=sb.root)
        j = doc(r, "bad URL")
        check(r.returncode == 1 and j.get("success") is False and j["failure"],
              "a refused library URL: failure in the document", r.stdout)


scenario_gateway_json()
scenario_no_cli_and_failure()
done()
