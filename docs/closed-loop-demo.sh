#!/bin/sh
# The closed loop, reproduced: install a vendor's pack from git (its secret
# stays a ${REF}), spread it to every CLI, let the gateway broker one tool and
# refuse the pack's delete_* tool under [policy.tools], read the evidence in
# the call audit, then take the vendor's next release with a previewed,
# re-pinned upgrade.
#
#   sh docs/closed-loop-demo.sh [path/to/agentstack]
#
# Fenced in a temporary HOME and AGENTSTACK_HOME. The vendor's repository is
# a git repository this script creates on disk (a file:// URL), and its MCP
# server is a few lines of python3 over stdio: nothing touches the network.
# Needs git and python3. Exits 1 if any claim fails.
set -eu
. "$(dirname "$0")/demo-lib.sh"
for t in git python3; do
    command -v "$t" >/dev/null 2>&1 || { echo "demo: $t is needed" >&2; exit 2; }
done
export GIT_CONFIG_GLOBAL="$DEMO/gitconfig" GIT_CONFIG_NOSYSTEM=1
git config --global user.email demo@example.invalid
git config --global user.name "Demo vendor"
git config --global init.defaultBranch main

# The vendor's pack: one stdio MCP server (search_docs, delete_index) and a skill.
VENDOR="$DEMO/vendor/pack"
mkdir -p "$VENDOR/skills/sql-review"
cat > "$DEMO/vendor/acme_server.py" <<'PY'
import json, sys
TOOLS = [{"name": "search_docs", "description": "Search the docs.",
          "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
         {"name": "delete_index", "description": "Delete the index.",
          "inputSchema": {"type": "object", "properties": {}}}]
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    rid, meth, p = m.get("id"), m.get("method"), m.get("params") or {}
    if rid is None:
        continue
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": p.get(
            "protocolVersion", "2025-11-25"), "capabilities": {"tools": {}},
            "serverInfo": {"name": "acme", "version": "1"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif meth == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text",
              "text": "did " + p.get("name", "")}], "isError": False}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
PY
cat > "$VENDOR/pack.toml" <<TOML
name = "acme"
description = "Docs MCP + SQL review"
[server]
type = "stdio"
command = "python3"
args = ["$DEMO/vendor/acme_server.py"]
secret_env = ["ACME_TOKEN"]
[[skill]]
name = "sql-review"
path = "skills/sql-review"
TOML
printf -- '---\ndescription: Review SQL\n---\nv1.0 body\n' > "$VENDOR/skills/sql-review/SKILL.md"
(cd "$VENDOR" && git init -q && git add -A && git commit -qm "v1.0.0" && git tag v1.0.0)

# The project: its own firewall refuses every delete_* tool of the pack.
PROJ="$DEMO/proj"
mkdir -p "$PROJ/.agentstack"
cd "$PROJ"
git init -q
printf 'version = 1\n\n[policy.tools]\nacme = ["!delete_*"]\n' > .agentstack/agentstack.toml
# Two CLIs on this machine for the pack to spread to (stand-ins on PATH).
mkdir -p "$DEMO/bin"
for b in claude codex; do printf '#!/bin/sh\nexit 0\n' > "$DEMO/bin/$b"; chmod +x "$DEMO/bin/$b"; done
export PATH="$DEMO/bin:$PATH"

step add from "git:file://$VENDOR@v1.0.0" --write
proves "the pack installs in one step" has "✓ installed pack 'acme' — servers + skills, secrets stay \${REF}s"
proves "its secret is declared as a \${REF}, never as a value" \
    grep -qF 'ACME_TOKEN = "${ACME_TOKEN}"' .agentstack/agentstack.toml
proves "the pins are written at once" grep -q 'name = "acme"' .agentstack/agentstack.lock

# `agentstack trust .` asks on a terminal; the demo records the same consent
# headlessly, for the digest of exactly what `trust --preview` showed.
DIGEST=$("$AS" trust --preview | python3 -c 'import json,sys; print(json.load(sys.stdin)["surface_digest"])')
step trust --yes --consented "$DIGEST"
proves "you review and trust the project as it now stands" [ "$RC" -eq 0 ]

export ACME_TOKEN=demo-token-value
step apply --write
proves "apply spreads the pack to every CLI here" \
    sh -c 'grep -q "\"acme\"" .mcp.json && grep -q "mcp_servers.acme" .codex/config.toml'
proves "the rendered configs never hold an unresolved \${REF}" \
    sh -c '! grep -qF "\${ACME_TOKEN}" .mcp.json .codex/config.toml'

# The agent: a minimal MCP client over stdio to the gateway.
cat > "$DEMO/agent.py" <<'PY'
import json, subprocess, sys
gw = subprocess.Popen([sys.argv[1], "mcp", "--auto-project"], stdin=subprocess.PIPE,
                      stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    gw.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                               "params": params}) + "\n")
    gw.stdin.flush()
    for line in gw.stdout:
        m = json.loads(line)
        if m.get("id") == i:
            return m
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "demo-agent", "version": "1"}})
gw.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
for i, tool in ((2, "acme__search_docs"), (3, "acme__delete_index")):
    r = rpc(i, "tools/call", {"name": tool, "arguments": {"q": "joins"} if i == 2 else {}})
    res = r.get("result") or {}
    txt = " ".join(c.get("text", "") for c in res.get("content", []))
    print(("✗ refused  " if res.get("isError") or "error" in r else "✓ ok       ") +
          tool + "  " + (txt or json.dumps(r.get("error")))[:160])
gw.stdin.close()
gw.wait(timeout=30)
PY
printf '\n$ (an agent calls two of the pack'"'"'s tools through the gateway)\n'
set +e
OUT=$(python3 "$DEMO/agent.py" "$AS" 2>&1)
set -e
printf '%s\n' "$OUT" | sed 's/^/    /'
proves "acme__search_docs is brokered" has "✓ ok       acme__search_docs  did search_docs"
proves "acme__delete_index is refused by the project's [policy.tools] rule" \
    sh -c 'printf "%s\n" "$1" | grep "✗ refused  acme__delete_index" | grep -qF "!delete_*"' _ "$OUT"

step audit --calls
proves "the call audit holds both calls and the denial — digests, never values" \
    has "2 calls · 2 tools · 1 denied by policy — digests, never values"
proves "no secret value reached the audit" \
    sh -c '! grep -rqF demo-token-value "$1/audit"' _ "$AGENTSTACK_HOME"

# The vendor ships v1.1.0.
printf -- '---\ndescription: Review SQL\n---\nv1.1 body\n' > "$VENDOR/skills/sql-review/SKILL.md"
(cd "$VENDOR" && git commit -qam "v1.1.0" && git tag v1.1.0)
step upgrade acme
proves "upgrade previews the new release first" \
    sh -c 'printf "%s\n" "$1" | grep -qF "newer tag '"'"'acme'"'"': v1.0.0 -> v1.1.0" && printf "%s\n" "$1" | grep -qF "Dry run."' _ "$OUT"
step upgrade acme --yes --write
proves "…then re-pins at v1.1.0" has "✓ upgraded pack 'acme' — previewed, re-pinned @v1.1.0"
proves "the new skill body is what is installed" grep -q "v1.1 body" .agentstack/skills/sql-review/SKILL.md

finish
