"""The user's steps with a server from the central library: the manifest's
toolset names `github` (declared, ${GH_PAT}) and `kibana` (only in the
library, ${KIBANA_TOKEN}). Before any apply, `bootstrap`, `doctor`, `status`
and `secret list` (text and --json) must each see KIBANA_TOKEN missing and
name `agentstack secret set KIBANA_TOKEN`; bootstrap must not claim "no
missing secrets" while `apply --write` would refuse. Once the secret is set
(`secret set --store file --stdin`) every surface agrees and apply writes."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, SRC, check, done  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "fixtures", "adapters"))
import apply_helpers as H  # noqa: E402

KIBANA = """type = "http"
url = "https://kibana.example/mcp"
headers = { Authorization = "Bearer ${KIBANA_TOKEN}" }
"""

MANIFEST = """version = 1

[servers.github]
type = "http"
url = "https://api.githubcopilot.com/mcp/"
headers = { Authorization = "Bearer ${GH_PAT}" }

[profiles.backend]
servers = ["github", "kibana"]

[targets]
default = ["claude-code"]
"""

FIX = "agentstack secret set KIBANA_TOKEN"

with Sandbox() as sb:
    H.fake_bin(sb, "claude")
    e = H.env(sb, GH_PAT="gh-value-1")
    e.pop("KIBANA_TOKEN", None)
    e.pop("DBUS_SESSION_BUS_ADDRESS", None)  # no keychain: the file store answers
    k = sb.write("k.toml", KIBANA, base=sb.root)
    p = H.run(sb, "lib", "add-server", "kibana", "--file", k, "--write", e=e)
    check(p.returncode == 0, "lib add-server kibana", p.stdout + p.stderr)
    H.write_manifest(sb, MANIFEST)
    p = H.run(sb, "lock", "--write", e=e)
    check(p.returncode == 0, "lock --write pins the library server", p.stdout + p.stderr)
    H.trust(sb, e=e)

    # Before apply: every preflight surface sees the library server's secret.
    p = H.run(sb, "bootstrap", e=e)
    out = p.stdout + p.stderr
    check("no missing secrets" not in out, "bootstrap does not say 'no missing secrets'", out)
    check("KIBANA_TOKEN" in out and FIX in out, "bootstrap names " + FIX, out)
    p = H.run(sb, "bootstrap", "--json", e=e)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        j = {}
    check("KIBANA_TOKEN" in j.get("secrets", {}).get("missing", []),
          "bootstrap --json lists KIBANA_TOKEN as missing", p.stdout)
    check("GH_PAT" in j.get("secrets", {}).get("resolved", {}),
          "bootstrap --json: GH_PAT resolved", p.stdout)

    p = H.run(sb, "doctor", e=e)
    out = p.stdout + p.stderr
    check(p.returncode == 1, "doctor exits 1 (a missing secret is an error)", out)
    check("${KIBANA_TOKEN} not found (library server 'kibana')" in out,
          "doctor: ${KIBANA_TOKEN} not found, naming the library server", out)
    check(FIX in out, "doctor names " + FIX, out)

    p = H.run(sb, "status", e=e)
    out = p.stdout + p.stderr
    check("1 missing (KIBANA_TOKEN)" in out, "status counts KIBANA_TOKEN missing", out)
    check("Next: " + FIX in out, "status: next is " + FIX, out)

    p = H.run(sb, "secret", "list", e=e)
    out = p.stdout + p.stderr
    check("✗ KIBANA_TOKEN not found ↳ " + FIX in out, "secret list: KIBANA_TOKEN not found ↳ fix",
          out)
    p = H.run(sb, "secret", "list", "--json", e=e)
    rows = {r["name"]: r for r in json.loads(p.stdout)["secrets"]} if p.returncode == 0 else {}
    r = rows.get("KIBANA_TOKEN", {})
    check(r.get("referenced") is True and r.get("resolved") is False,
          "secret list --json: KIBANA_TOKEN referenced, not resolved", p.stdout)

    # The same truth apply tells.
    p = H.run(sb, "apply", "--write", e=e)
    out = p.stdout + p.stderr
    check(p.returncode != 0 and "KIBANA_TOKEN" in out,
          "apply --write refuses on KIBANA_TOKEN, as the preflight said", out)

    # The fix each surface named, then everything agrees.
    sp = subprocess.run([H.sb_bin(), "secret", "set", "KIBANA_TOKEN", "--store", "file",
                         "--stdin"], cwd=sb.project, env=e, input="kb-value-1",
                        capture_output=True, text=True, timeout=60)
    check(sp.returncode == 0, "secret set KIBANA_TOKEN --store file --stdin",
          sp.stdout + sp.stderr)
    p = H.run(sb, "bootstrap", e=e)
    check("no missing secrets" in p.stdout, "bootstrap: no missing secrets once it is set",
          p.stdout + p.stderr)
    p = H.run(sb, "secret", "list", e=e)
    check("✓ KIBANA_TOKEN resolved (file" in p.stdout, "secret list: KIBANA_TOKEN resolved (file)",
          p.stdout + p.stderr)
    p = H.run(sb, "doctor", e=e)
    check("KIBANA_TOKEN} not found" not in p.stdout, "doctor: no missing secret now",
          p.stdout + p.stderr)
    p = H.run(sb, "apply", "--write", e=e)
    check(p.returncode == 0, "apply --write writes", p.stdout + p.stderr)
    mcp = os.path.join(sb.project, ".mcp.json")
    servers = json.loads(H.read(mcp)).get("mcpServers", {}) if os.path.exists(mcp) else {}
    check(sorted(servers) == ["github", "kibana"], ".mcp.json holds github and kibana",
          sorted(servers))
done()
